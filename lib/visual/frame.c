/* visual/frame.c - one CHB1 frame (man/chute-batch.5) read back into its
 * fields, every offset checked against the frame's size, for the
 * contact sheet. */
#include <stdlib.h>
#include <string.h>

#include "chute/transform.h"
#include "common/bytes.h"
#include "visual/internal.h"

/* Whether [at, at + n) lies inside a frame of size bytes. */
static int inside(uint64_t at, uint64_t n, size_t size)
{
	return at <= size && n <= size - at;
}

uint32_t frame_item_size(uint32_t dtype)
{
	static const uint32_t size[] = { 0, 1, 8, 2, 4 };
	return dtype <= CH_DTYPE_F32 ? size[dtype] : 0;
}

static uint64_t items(const struct frame_field *f)
{
	uint64_t n = 1;
	for (uint32_t d = 0; d < f->ndim; d++)
		n *= f->shape[d];
	return n;
}

static int entry(const uint8_t *fr, size_t size, uint64_t at,
		 uint32_t nsamples, struct frame_field *f,
		 struct ch_error *err)
{
	if (!inside(at, 72, size))
		return ch_error_data(err, "not a batch frame: its field table "
				     "runs past its end");
	const uint8_t *e = fr + at;
	f->dtype = ld32(e + 4);
	f->ndim = ld32(e + 8);
	f->name_len = ld32(e + 12);
	for (int d = 0; d < 4; d++)
		f->shape[d] = ld64(e + 16 + 8 * d);
	uint64_t offsets_at = ld64(e + 48), data_at = ld64(e + 56);
	f->size = ld64(e + 64);
	if (!inside(at + 72, f->name_len, size) || f->ndim > 4 ||
	    f->dtype > CH_DTYPE_F32 || !inside(data_at, f->size, size))
		return ch_error_data(err, "not a batch frame: a bad field "
				     "entry at byte %llu", (unsigned long long)at);
	f->name = (const char *)e + 72;
	f->data = fr + data_at;
	f->offsets = NULL;
	if (f->dtype == CH_DTYPE_BYTES) {
		if (!inside(offsets_at, 8 * ((uint64_t)nsamples + 1), size) ||
		    ld64(fr + offsets_at + 8 * (uint64_t)nsamples) != f->size)
			return ch_error_data(err, "not a batch frame: bad "
					     "offsets of a field");
		f->offsets = fr + offsets_at;
	} else if (items(f) * frame_item_size(f->dtype) * nsamples != f->size) {
		return ch_error_data(err, "not a batch frame: a field's size "
				     "is not its shape's");
	}
	f->entry_size = ld32(e);
	return 0;
}

int frame_read(const uint8_t *fr, size_t size, struct frame *out,
	       struct ch_error *err)
{
	memset(out, 0, sizeof(*out));
	if (size < 64 || memcmp(fr, "CHB1", 4) || ld64(fr + 8) != size)
		return ch_error_data(err, "not a batch frame (CHB1) of %zu "
				     "bytes", size);
	out->nsamples = ld32(fr + 32);
	out->nfields = ld32(fr + 36);
	uint64_t at = (64 + (uint64_t)ld32(fr + 40) + 7) & ~(uint64_t)7;
	if (out->nfields == 0 || out->nfields > (1u << 16))
		return ch_error_data(err, "not a batch frame: %u fields",
				     out->nfields);
	out->f = calloc(out->nfields, sizeof(*out->f));
	if (!out->f)
		return ch_error_nomem(err);
	for (uint32_t i = 0; i < out->nfields; i++) {
		if (entry(fr, size, at, out->nsamples, &out->f[i], err) < 0)
			return -1;
		if (out->f[i].entry_size < 72)
			return ch_error_data(err, "not a batch frame: an entry "
					     "of %u bytes", out->f[i].entry_size);
		at += out->f[i].entry_size;
	}
	return 0;
}

void frame_release(struct frame *f)
{
	free(f->f);
	memset(f, 0, sizeof(*f));
}

void frame_value(const struct frame_field *f, uint32_t i,
		 const uint8_t **data, size_t *size)
{
	uint64_t a = ld64(f->offsets + 8 * (uint64_t)i);
	uint64_t b = ld64(f->offsets + 8 * ((uint64_t)i + 1));
	if (a > b || b > f->size)
		a = b = 0; /* offsets that go back: an empty value */
	*data = f->data + a;
	*size = b - a;
}

int frame_field_is(const struct frame_field *f, const char *name)
{
	return strlen(name) == f->name_len &&
	       memcmp(f->name, name, f->name_len) == 0;
}
