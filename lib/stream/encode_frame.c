/* stream/encode_frame.c - one batch as a self-describing frame
 * (man/chute-batch.5): a 64-byte header, the cursor, a field table, then
 * each field's data aligned to 64 bytes so that a reader maps arrays without
 * copying.
 *
 *   header  0 "CHB1"  4 u32 flags  8 u64 frame_size  16 u64 epoch
 *          24 u64 batch  32 u32 nsamples  36 u32 nfields
 *          40 u32 cursor_size  44 u32 table_size  48 u64 data_offset
 *          56 u64 reserved (0)
 *   cursor at 64; field table at align8(64 + cursor_size); entries:
 *           0 u32 entry_size  4 u32 dtype  8 u32 ndim  12 u32 name_size
 *          16 u64 shape[4]  48 u64 offsets_at  56 u64 data_at
 *          64 u64 data_size  72 name, zero-padded to entry_size
 *   dtype 0 (bytes): offsets_at holds nsamples + 1 u64 offsets into the
 *   bytes at data_at.  Dtypes 1-4 (transformed fields): one array of
 *   nsamples values of the same shape at data_at, offsets_at 0.  The
 *   first field is "__key__", the sample keys.
 */
#include <stdlib.h>
#include <string.h>

#include "stream/encode.h"
#include "common/bytes.h"
#include "transform/transform.h"
#include "common/internal.h"

#define ALIGN(x, a) (((x) + (a) - 1) / (a) * (a))
#define HEADER 64
#define ENTRY_FIXED 72
#define KEY_FIELD "__key__"

/* Samples of one shard share its name strings: comparing pointers first
 * keeps strcmp off the per-sample path. */
static int same_name(const char *a, const char *b)
{
	return a == b || !strcmp(a, b);
}

static int same_names(const struct ch_batch_sample *a,
		      const struct ch_batch_sample *b)
{
	if (a->nfields != b->nfields)
		return 0;
	for (uint32_t f = 0; f < a->nfields; f++)
		if (!same_name(a->names[f], b->names[f]))
			return 0;
	return 1;
}

/* The union of the batch's field names, in name order (batches are
 * usually uniform: a short list, merged linearly). */
static int field_names(const struct ch_batch *b, const char ***names,
		       size_t *n, struct ch_error *err)
{
	const char **v = NULL;
	size_t len = 0, cap = 0;
	for (size_t i = 0; i < b->nsamples; i++) {
		const struct ch_batch_sample *s = &b->samples[i];
		if (i && same_names(s, &b->samples[i - 1]))
			continue; /* the usual case: nothing new */
		for (uint32_t f = 0; f < s->nfields; f++) {
			size_t at = 0;
			while (at < len && strcmp(v[at], s->names[f]) < 0)
				at++;
			if (at < len && !strcmp(v[at], s->names[f]))
				continue;
			if (len == cap) {
				cap = cap ? cap * 2 : 8;
				const char **nv = realloc(v, cap * sizeof(*v));
				if (!nv) {
					free(v);
					return ch_error_nomem(err);
				}
				v = nv;
			}
			memmove(v + at + 1, v + at, (len - at) * sizeof(*v));
			v[at] = s->names[f];
			len++;
		}
	}
	*names = v;
	*n = len;
	return 0;
}

/* Bytes of one value of a fixed-shape type. */
static uint64_t value_bytes(const struct ch_field_type *t)
{
	uint64_t n = ch_dtype_size(t->dtype);
	for (uint32_t d = 0; d < t->ndim; d++)
		n *= t->shape[d];
	return n;
}

static int same_type(const struct ch_field_type *a,
		     const struct ch_field_type *b)
{
	if (a->dtype != b->dtype || a->ndim != b->ndim)
		return 0;
	for (uint32_t d = 0; d < a->ndim; d++)
		if (a->shape[d] != b->shape[d])
			return 0;
	return 1;
}

/* Where each field of the frame is in each sample: slot[i * nfields + f]
 * is field f's number among sample i's fields, or ABSENT.  Worked out by
 * name once a batch, and only for samples whose names differ from the
 * sample before's: the per-sample lookups below are then an index. */
#define ABSENT UINT32_MAX

static int field_slots(const struct ch_batch *b, const char **names,
		       size_t n, uint32_t **out, struct ch_error *err)
{
	uint32_t *slot = malloc((b->nsamples * n + 1) * sizeof(*slot));
	if (!slot)
		return ch_error_nomem(err);
	for (size_t i = 0; i < b->nsamples; i++) {
		const struct ch_batch_sample *s = &b->samples[i];
		uint32_t *row = slot + i * n;
		if (i && same_names(s, &b->samples[i - 1])) {
			memcpy(row, row - n, n * sizeof(*row));
			continue;
		}
		for (size_t f = 0; f < n; f++) {
			uint32_t k = 0;
			while (k < s->nfields && !same_name(s->names[k], names[f]))
				k++;
			row[f] = k < s->nfields ? k : ABSENT;
		}
	}
	*out = slot;
	return 0;
}

/* A field of the frame: its label, and slot's column for it (NULL: the
 * key). */
struct column {
	const char *label;
	const uint32_t *slot;
	size_t stride;
};

#define INLINE static inline __attribute__((always_inline))

/* Field c of sample i: its bytes, or NULL and size 0 if absent.  *dest is
 * where to store the field's frame offset if its data is to be copied in
 * later, else NULL; *type its fixed type, or NULL for bytes.  Inlined:
 * called a few times a sample, it was a sixth of the encoder's work. */
INLINE const uint8_t *field_at(const struct ch_batch *b, size_t i,
			       const struct column *c, uint64_t *size,
			       uint64_t **dest,
			       const struct ch_field_type **type)
{
	const struct ch_batch_sample *s = &b->samples[i];
	*dest = NULL;
	*type = NULL;
	if (!c->slot) {
		*size = s->key_len;
		return (const uint8_t *)s->key;
	}
	uint32_t f = c->slot[i * c->stride];
	if (f == ABSENT) {
		*size = 0;
		return NULL;
	}
	*size = s->sizes[f];
	if (s->dest && (!s->late || s->late[f]))
		*dest = &s->dest[f];
	if (s->types && s->types[f].dtype)
		*type = &s->types[f];
	return s->data ? s->data[f] : NULL;
}

INLINE const uint8_t *field_of(const struct ch_batch *b, size_t i,
			       const struct column *c, uint64_t *size,
			       uint64_t **dest)
{
	const struct ch_field_type *type;
	return field_at(b, i, c, size, dest, &type);
}

/* "480x640x3", "12 items", or what the value is when the dtypes differ
 * too. */
static void shape_text(const struct ch_field_type *t, int dtype, char *s,
		       size_t n)
{
	if (dtype) {
		ch_value_text(t, s, n);
		return;
	}
	int k = snprintf(s, n, "%s", t->ndim ? "" : "a scalar");
	for (uint32_t d = 0; d < t->ndim && k >= 0 && (size_t)k < n; d++)
		k += snprintf(s + k, n - (size_t)k, "%s%llu", d ? "x" : "",
			      (unsigned long long)t->shape[d]);
	if (t->ndim == 1 && k >= 0 && (size_t)k < n)
		snprintf(s + k, n - (size_t)k, " items");
}

static int key_len(const struct ch_batch_sample *s)
{
	return (int)(s->key_len > 200 ? 200 : s->key_len);
}

/* Sample s's field has another type than the batch's first sample's:
 * both shapes, and how to make them one. */
static int other_shape(const struct ch_batch *b, const char *name,
		       const struct ch_batch_sample *s,
		       const struct ch_field_type *t,
		       const struct ch_batch_sample *first,
		       const struct ch_field_type *want, struct ch_error *err)
{
	if (!t)
		return ch_error_set(err, "field '%s' of sample '%.*s' is "
				    "missing or bytes, as the batch's first "
				    "sample's is not", name, key_len(s),
				    s->key);
	const struct ch_pipeline *p = ch_transforms_find(b->tx, name);
	char got[128], had[128], hint[160];
	int dtype = t->dtype != want->dtype;
	shape_text(t, dtype, got, sizeof(got));
	shape_text(want, dtype, had, sizeof(had));
	ch_pipeline_shape_hint(p, want->ndim, hint, sizeof(hint));
	return ch_error_set(err, "field '%s': sample '%.*s' %s %s, the "
			    "batch's first (sample '%.*s') %s: %s", name,
			    key_len(s), s->key, ch_pipeline_shape_verb(p), got,
			    key_len(first), first->key, had, hint);
}

/* The type of field c in the batch: NULL for bytes; a fixed type only if
 * every sample has the field with that type, else an error that names the
 * first sample that does not. */
static int batch_type(const struct ch_batch *b, const struct column *c,
		      const struct ch_field_type **out, struct ch_error *err)
{
	const struct ch_field_type *want = NULL, *t;
	uint64_t size, *dest;
	size_t first = 0;
	*out = NULL;
	for (; first < b->nsamples; first++) {
		if (field_at(b, first, c, &size, &dest, &t) || size || dest) {
			want = t; /* the first sample that has it decides */
			break;
		}
	}
	if (!want)
		return 0;
	if (want->ndim > 4 || want->dtype > CH_DTYPE_F32)
		return ch_error_set(err, "field '%s': bad type", c->label);
	uint64_t one = value_bytes(want);
	for (size_t i = 0; i < b->nsamples; i++) {
		field_at(b, i, c, &size, &dest, &t);
		if (!t || !same_type(t, want) || size != one)
			return other_shape(b, c->label, &b->samples[i],
					   t && same_type(t, want) ? NULL : t,
					   &b->samples[first], want, err);
	}
	*out = want;
	return 0;
}

static uint64_t field_bytes(const struct ch_batch *b, const struct column *c)
{
	uint64_t total = 0, size, *dest;
	for (size_t i = 0; i < b->nsamples; i++) {
		field_of(b, i, c, &size, &dest);
		total += size;
	}
	return total;
}

/* memcpy, or ch_copy_cold into memory another CPU reads next. */
static void copy_value(int cold, uint8_t *to, const uint8_t *from, size_t n)
{
	if (cold)
		ch_copy_cold(to, from, n);
	else
		memcpy(to, from, n);
}

/* Writes one variable-length field: its table entry and its data. */
static void put_field(const struct ch_batch *b, const struct column *c,
		      int cold, uint8_t *frame, uint64_t entry_at,
		      uint64_t *data_at)
{
	const char *label = c->label;
	size_t nlen = strlen(label);
	uint8_t *e = frame + entry_at;
	uint64_t offsets_at = *data_at;
	uint64_t bytes_at = ALIGN(offsets_at + 8 * (b->nsamples + 1), 64);
	uint64_t off = 0, size, *dest;
	st32(e, (uint32_t)ALIGN(ENTRY_FIXED + nlen, 8));
	st32(e + 12, (uint32_t)nlen);
	st64(e + 48, offsets_at);
	st64(e + 56, bytes_at);
	memcpy(e + ENTRY_FIXED, label, nlen);
	uint64_t offsets_end = offsets_at + 8 * (b->nsamples + 1);
	memset(frame + offsets_end, 0, bytes_at - offsets_end);
	for (size_t i = 0; i < b->nsamples; i++) {
		const uint8_t *p = field_of(b, i, c, &size, &dest);
		st64(frame + offsets_at + 8 * i, off);
		if (dest)
			*dest = bytes_at + off;
		else if (size)
			copy_value(cold, frame + bytes_at + off, p, size);
		off += size;
	}
	st64(frame + offsets_at + 8 * b->nsamples, off);
	st64(e + 64, off);
	/* only the padding is zeroed: the rest is written once */
	*data_at = ALIGN(bytes_at + off, 64);
	memset(frame + bytes_at + off, 0, *data_at - (bytes_at + off));
}

/* Writes one fixed-shape field: its entry and the batch's values as one
 * array. */
static void put_fixed(const struct ch_batch *b, const struct column *c,
		      const struct ch_field_type *t, int cold, uint8_t *frame,
		      uint64_t entry_at, uint64_t *data_at)
{
	const char *name = c->label;
	size_t nlen = strlen(name);
	uint8_t *e = frame + entry_at;
	uint64_t one = value_bytes(t), at = *data_at, size, *dest;
	st32(e, (uint32_t)ALIGN(ENTRY_FIXED + nlen, 8));
	st32(e + 4, t->dtype);
	st32(e + 8, t->ndim);
	st32(e + 12, (uint32_t)nlen);
	for (uint32_t d = 0; d < t->ndim; d++)
		st64(e + 16 + 8 * d, t->shape[d]);
	st64(e + 56, at);
	st64(e + 64, one * b->nsamples);
	memcpy(e + ENTRY_FIXED, name, nlen);
	for (size_t i = 0; i < b->nsamples; i++) {
		const uint8_t *p = field_of(b, i, c, &size, &dest);
		if (dest)
			*dest = at + i * one;
		else
			copy_value(cold, frame + at + i * one, p, one);
	}
	uint64_t end = at + one * b->nsamples;
	*data_at = ALIGN(end, 64);
	memset(frame + end, 0, *data_at - end);
}

static uint64_t region_bytes(const struct ch_batch *b, const struct column *c,
			     const struct ch_field_type *t)
{
	if (t)
		return ALIGN(value_bytes(t) * b->nsamples, 64);
	return ALIGN(8 * (b->nsamples + 1), 64) +
	       ALIGN(field_bytes(b, c), 64);
}

/* Whether every sample has the first one's fields (the usual batch), in
 * strict name order and none named KEY_FIELD: then field f of the frame
 * is field f of each sample. */
static int uniform(const struct ch_batch *b)
{
	if (b->nsamples == 0)
		return 0;
	const struct ch_batch_sample *s = &b->samples[0];
	for (uint32_t f = 0; f < s->nfields; f++)
		if (!strcmp(s->names[f], KEY_FIELD) ||
		    (f && strcmp(s->names[f - 1], s->names[f]) >= 0))
			return 0; /* refused, or not in order: said below */
	for (size_t i = 1; i < b->nsamples; i++)
		if (b->samples[i].names != s->names &&
		    !same_names(&b->samples[i], s))
			return 0;
	return 1;
}

/* Columns of a uniform batch: one row of slots for every sample (stride
 * 0), no lookup by name. */
static int uniform_columns(const struct ch_batch *b, struct column **out,
			   size_t *ncolumns, uint32_t **slot,
			   struct ch_error *err)
{
	const struct ch_batch_sample *s = &b->samples[0];
	size_t n = s->nfields;
	struct column *c = calloc(n + 1, sizeof(*c));
	uint32_t *row = malloc((n + 1) * sizeof(*row));
	if (!c || !row) {
		free(c);
		free(row);
		return ch_error_nomem(err);
	}
	c[0].label = KEY_FIELD;
	for (size_t f = 0; f < n; f++) {
		row[f] = (uint32_t)f;
		c[f + 1] = (struct column){ s->names[f], row + f, 0 };
	}
	*out = c;
	*ncolumns = n + 1;
	*slot = row;
	return 0;
}

/* The frame's fields: the key, then the batch's fields in name order. */
static int frame_columns(const struct ch_batch *b, struct column **out,
			 size_t *ncolumns, uint32_t **slot,
			 struct ch_error *err)
{
	const char **names = NULL;
	size_t n = 0;
	*slot = NULL;
	if (uniform(b))
		return uniform_columns(b, out, ncolumns, slot, err);
	if (field_names(b, &names, &n, err) < 0)
		return -1;
	for (size_t f = 0; f < n; f++)
		if (!strcmp(names[f], KEY_FIELD)) {
			free(names);
			return ch_error_set(err, "a field named '%s' cannot go "
					    "into a frame: the name holds the "
					    "keys", KEY_FIELD);
		}
	struct column *c = calloc(n + 1, sizeof(*c));
	if (!c || field_slots(b, names, n, slot, err) < 0) {
		free(c);
		free(names);
		return c ? -1 : ch_error_nomem(err);
	}
	c[0].label = KEY_FIELD;
	for (size_t f = 0; f < n; f++)
		c[f + 1] = (struct column){ names[f], *slot + f, n };
	free(names);
	*out = c;
	*ncolumns = n + 1;
	return 0;
}

static int encode(const struct ch_batch *b, const struct column *c, size_t n,
		  const struct ch_field_type **types, struct ch_buf *out,
		  const struct ch_frame_memory *mem, uint8_t **frame,
		  size_t *frame_size, struct ch_error *err)
{
	size_t cursor = b->cursor ? strlen(b->cursor) : 0;
	uint64_t table_at = ALIGN(HEADER + cursor, 8), table = 0;
	uint64_t data = 0;
	for (size_t f = 0; f < n; f++) {
		if (f && batch_type(b, &c[f], &types[f], err) < 0)
			return -1;
		table += ALIGN(ENTRY_FIXED + strlen(c[f].label), 8);
		data += region_bytes(b, &c[f], types[f]);
	}
	if (b->nsamples > UINT32_MAX || n > UINT32_MAX ||
	    cursor > UINT32_MAX || table > UINT32_MAX)
		return ch_error_set(err, "batch too large for a frame");
	uint64_t data_offset = ALIGN(table_at + table, 64);
	uint64_t size = data_offset + data;
	uint8_t *fr = mem && mem->reserve ? mem->reserve(size, mem->arg) : NULL;
	int cold = fr && mem->cold;
	out->len = 0;
	if (!fr && ch_buf_reserve(out, size, err) < 0)
		return -1;
	if (!fr) {
		fr = out->data;
		out->len = size;
	}
	memset(fr, 0, data_offset); /* padding included: same bytes always */
	memcpy(fr, "CHB1", 4);
	st32(fr + 4, b->flags);
	st64(fr + 8, size);
	st64(fr + 16, b->epoch);
	st64(fr + 24, b->batch);
	st32(fr + 32, (uint32_t)b->nsamples);
	st32(fr + 36, (uint32_t)n);
	st32(fr + 40, (uint32_t)cursor);
	st32(fr + 44, (uint32_t)table);
	st64(fr + 48, data_offset);
	if (cursor)
		memcpy(fr + HEADER, b->cursor, cursor);
	uint64_t entry = table_at, at = data_offset;
	for (size_t f = 0; f < n; f++) {
		if (types[f])
			put_fixed(b, &c[f], types[f], cold, fr, entry, &at);
		else
			put_field(b, &c[f], cold, fr, entry, &at);
		entry += ALIGN(ENTRY_FIXED + strlen(c[f].label), 8);
	}
	if (cold)
		ch_copy_cold_done();
	*frame = fr;
	*frame_size = (size_t)size;
	return 0;
}

int ch_encode_frame_in(const struct ch_batch *b, struct ch_buf *out,
		       const struct ch_frame_memory *mem, uint8_t **frame,
		       size_t *size, struct ch_error *err)
{
	struct column *c = NULL;
	uint32_t *slot = NULL;
	size_t n = 0;
	if (frame_columns(b, &c, &n, &slot, err) < 0)
		return -1;
	const struct ch_field_type **types = calloc(n, sizeof(*types));
	int rc = types ? encode(b, c, n, types, out, mem, frame, size, err)
		       : ch_error_nomem(err);
	free(types);
	free(slot);
	free(c);
	return rc;
}
