/* pack/encode.c - reading, hashing and compressing the blocks of a shard in
 * parallel, writing them in order (common/pool.c's ordered results).
 * Memory: 2 x jobs slots, each holding one block's raw bytes and its
 * compressed copy. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/pool.h"
#include "pack/plan.h"

struct slot {
	struct ch_buf raw;
	struct ch_block_encoder *enc;
	struct ch_encoded_block out;
	struct ch_sample_desc *descs;
	struct ch_field_desc *fields;
	size_t descs_cap, fields_cap;
};

struct encoder {
	const struct encode_job *job;
	struct slot *slots; /* block b in slots[b % nslots] */
	size_t nslots;
};

static int read_range(int fd, uint8_t *out, uint64_t size, uint64_t off,
		      const char *origin, struct ch_error *err)
{
	while (size) {
		ssize_t k = off == UINT64_MAX ? read(fd, out, size)
					      : pread(fd, out, size, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return ch_error_errno(err, errno, "cannot read '%s'",
					      origin);
		if (k == 0)
			return ch_error_set(err, "'%s' shrank while being "
					    "packed", origin);
		out += k;
		size -= (uint64_t)k;
		if (off != UINT64_MAX)
			off += (uint64_t)k;
	}
	return 0;
}

static int read_entry(const struct ch_catalog *cat, const struct ch_entry *e,
		      uint8_t *out, struct ch_error *err)
{
	if (e->inline_data) {
		memcpy(out, e->inline_data, e->size);
		return 0;
	}
	if (e->from == CH_FROM_SPOOL)
		return read_range(cat->spool_fd, out, e->size, e->spool_offset,
				  e->origin, err);
	int fd = ch_open_regular(e->path, err);
	if (fd < 0)
		return -1;
	int rc = read_range(fd, out, e->size, UINT64_MAX, e->origin, err);
	if (rc == 0) {
		uint8_t extra;
		ssize_t k = read(fd, &extra, 1);
		if (k > 0)
			rc = ch_error_set(err, "'%s' grew while being packed",
					  e->origin);
	}
	close(fd);
	return rc;
}

int ch_read_sample(const struct ch_catalog *cat, const struct plan_sample *s,
		   uint8_t *out, struct ch_error *err)
{
	for (uint32_t f = 0; f < s->nfields; f++) {
		const struct ch_entry *e = &cat->entries[s->first + f];
		if (read_entry(cat, e, out, err) < 0)
			return -1;
		out += e->size;
	}
	return 0;
}

static int grow(void **v, size_t *cap, size_t need, size_t each,
		struct ch_error *err)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 64;
	while (n < need)
		n *= 2;
	void *p = realloc(*v, n * each);
	if (!p)
		return ch_error_nomem(err);
	*v = p;
	*cap = n;
	return 0;
}

/* Fills a slot with block b: raw bytes, sample descriptions, encoding. */
static int fill_slot(const struct encode_job *job, struct slot *sl, size_t b,
		     struct ch_error *err)
{
	const struct plan_block *pb = &job->plan->blocks[b];
	const struct ch_catalog *cat = job->cat;
	size_t nfields = 0;
	for (size_t i = 0; i < pb->nsamples; i++)
		nfields += job->plan->samples[pb->first_sample + i].nfields;
	if (ch_buf_reserve(&sl->raw, pb->size ? pb->size : 1, err) < 0 ||
	    grow((void **)&sl->descs, &sl->descs_cap, pb->nsamples,
		 sizeof(*sl->descs), err) < 0 ||
	    grow((void **)&sl->fields, &sl->fields_cap, nfields,
		 sizeof(*sl->fields), err) < 0)
		return -1;
	uint64_t off = 0;
	struct ch_field_desc *fd = sl->fields;
	for (size_t i = 0; i < pb->nsamples; i++) {
		const struct plan_sample *s =
			&job->plan->samples[pb->first_sample + i];
		const struct ch_entry *e0 = &cat->entries[s->first];
		uint8_t *data = sl->raw.data + off;
		if (ch_read_sample(cat, s, data, err) < 0)
			return -1;
		struct ch_content_hash h;
		ch_content_hash_init(&h);
		for (uint32_t f = 0; f < s->nfields; f++) {
			const struct ch_entry *e = &e0[f];
			fd[f] = (struct ch_field_desc){ e->field, e->size };
			ch_content_hash_field(&h, e->field, data, e->size);
			data += e->size;
		}
		sl->descs[i] = (struct ch_sample_desc){
			.key = e0->key, .key_len = strlen(e0->key),
			.hash = ch_content_hash_final(&h), .offset = off,
			.nfields = s->nfields, .fields = fd,
		};
		fd += s->nfields;
		off += s->size;
	}
	const uint8_t *stored;
	size_t stored_size;
	uint32_t codec;
	if (ch_block_encode(sl->enc, sl->raw.data, (size_t)pb->size, &stored,
			    &stored_size, &codec, err) < 0)
		return -1;
	sl->out = (struct ch_encoded_block){
		.stored = stored, .stored_size = stored_size,
		.raw_size = pb->size, .codec = codec,
		.nsamples = pb->nsamples, .samples = sl->descs,
	};
	return 0;
}

/* On a worker of the pool: block b into its slot. */
static int make_block(void *arg, size_t b, size_t slot, struct ch_error *err)
{
	struct encoder *e = arg;
	return fill_slot(e->job, &e->slots[slot], b, err);
}

static void release_slots(struct encoder *e)
{
	for (size_t i = 0; i < e->nslots; i++) {
		struct slot *sl = &e->slots[i];
		ch_buf_release(&sl->raw);
		ch_block_encoder_free(sl->enc);
		free(sl->descs);
		free(sl->fields);
	}
	free(e->slots);
}

/* Waits for the next block, writes it, frees its slot. */
static int write_next(struct encoder *e, struct ch_ordered *q,
		      struct ch_error *err)
{
	const struct encode_job *job = e->job;
	size_t slot;
	if (ch_ordered_next(q, &slot, err) < 0)
		return -1;
	struct slot *sl = &e->slots[slot];
	if (ch_shard_writer_add(job->writer, &sl->out, err) < 0)
		return -1;
	job->counters->done += sl->out.nsamples;
	job->counters->bytes += sl->out.raw_size;
	if (job->progress)
		job->progress(job->counters, job->progress_arg);
	ch_ordered_release(q);
	return 0;
}

int ch_encode_shard(const struct encode_job *job, struct ch_error *err)
{
	struct encoder e = { .job = job };
	int jobs = job->jobs < 1 ? 1 : job->jobs;
	struct ch_ordered *q = NULL;
	int rc = -1;
	e.nslots = 2 * (size_t)jobs;
	e.slots = calloc(e.nslots, sizeof(*e.slots));
	if (!e.slots) {
		ch_error_nomem(err);
		goto out;
	}
	for (size_t i = 0; i < e.nslots; i++) {
		e.slots[i].enc = ch_block_encoder_new(job->level, job->dict,
						      job->dict_size);
		if (!e.slots[i].enc) {
			ch_error_set(err, "cannot create a zstd encoder");
			goto out;
		}
	}
	if (ch_ordered_start(&q, jobs, job->plan->nblocks, e.nslots,
			     make_block, &e, job->cancel, err) < 0)
		goto out;
	for (size_t t = 0; t < job->plan->nblocks; t++)
		if (write_next(&e, q, err) < 0)
			goto out;
	rc = 0;
out:
	ch_ordered_stop(q);
	if (e.slots)
		release_slots(&e);
	return rc;
}
