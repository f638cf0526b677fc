/* pack/shard_plan.c - one shard from the catalog of its entries (sorted, a
 * sample's fields adjacent and in name order): samples, blocks, an
 * optional dictionary, then the parallel encoder and the writer. */
#include <stdlib.h>
#include <string.h>
#include <zdict.h>

#include "pack/plan.h"

/* zstd's default dictionary size, shrunk for small shards: the dictionary
 * is stored in the shard and must pay for itself. */
#define DICT_MAX (112 * 1024)
#define DICT_MIN (4 * 1024)
#define DICT_TRAIN_BUDGET (100 * DICT_MAX)

static int group_samples(const struct ch_catalog *c, struct pack_plan *pl,
			 struct ch_error *err)
{
	pl->samples = calloc(c->n ? c->n : 1, sizeof(*pl->samples));
	if (!pl->samples)
		return ch_error_nomem(err);
	for (size_t i = 0; i < c->n; i++) {
		const struct ch_entry *e = &c->entries[i];
		if (i == 0 || strcmp(c->entries[i - 1].key, e->key))
			pl->samples[pl->nsamples++] =
				(struct plan_sample){ .first = i };
		struct plan_sample *s = &pl->samples[pl->nsamples - 1];
		if (s->nfields == 65535)
			return ch_error_set(err, "sample '%s' has more than "
					    "65535 fields", e->key);
		s->nfields++;
		s->size += e->size;
	}
	return 0;
}

/* Cuts the shard's samples into blocks by raw bytes: only sizes decide,
 * so the layout is the same whatever the number of jobs. */
static int plan_blocks(struct pack_plan *pl, uint64_t block_size,
		       struct ch_error *err)
{
	pl->blocks = calloc(pl->nsamples ? pl->nsamples : 1,
			    sizeof(*pl->blocks));
	if (!pl->blocks)
		return ch_error_nomem(err);
	struct plan_block *bl = NULL;
	for (size_t i = 0; i < pl->nsamples; i++) {
		uint64_t size = pl->samples[i].size;
		if (!bl || bl->size + size > block_size) {
			bl = &pl->blocks[pl->nblocks++];
			*bl = (struct plan_block){ .first_sample = i };
		}
		bl->nsamples++;
		bl->size += size;
		pl->bytes += size;
	}
	return 0;
}

static void plan_release(struct pack_plan *pl)
{
	free(pl->samples);
	free(pl->blocks);
}

/* Trains a zstd dictionary on samples spread evenly over the shard (at
 * most DICT_TRAIN_BUDGET bytes).  When zstd finds nothing worth a
 * dictionary, the shard simply has none: still deterministic. */
static int train_dict(const struct ch_catalog *cat, const struct pack_plan *pl,
		      struct ch_buf *dict, struct ch_error *err)
{
	struct ch_buf data = { 0 };
	size_t *sizes = calloc(pl->nsamples ? pl->nsamples : 1, sizeof(*sizes));
	size_t n = 0, step = 1;
	int rc = -1;
	dict->len = 0;
	if (!sizes)
		return ch_error_nomem(err);
	size_t dict_size = pl->bytes / 64 > DICT_MAX ? DICT_MAX
			   : pl->bytes / 64 < DICT_MIN ? DICT_MIN
						       : (size_t)(pl->bytes / 64);
	if (pl->bytes > DICT_TRAIN_BUDGET)
		step = (size_t)(pl->bytes / DICT_TRAIN_BUDGET) + 1;
	for (size_t i = 0; i < pl->nsamples; i += step) {
		const struct plan_sample *s = &pl->samples[i];
		if (s->size > dict_size || data.len + s->size > DICT_TRAIN_BUDGET)
			continue;
		if (ch_buf_reserve(&data, data.len + s->size + 1, err) < 0 ||
		    ch_read_sample(cat, s, data.data + data.len, err) < 0)
			goto out;
		data.len += s->size;
		sizes[n++] = (size_t)s->size;
	}
	if (n >= 8 && ch_buf_reserve(dict, dict_size, err) < 0)
		goto out;
	if (n >= 8) {
		size_t k = ZDICT_trainFromBuffer(dict->data, dict_size, data.data,
						 sizes, (unsigned)n);
		dict->len = ZDICT_isError(k) ? 0 : k;
	}
	rc = 0;
out:
	free(sizes);
	ch_buf_release(&data);
	return rc;
}

int ch_pack_write_shard(const struct ch_catalog *cat,
			const struct ch_pack_opts *o, const char *path,
			struct ch_progress *counters,
			struct ch_shard_summary *sum, struct ch_error *err)
{
	struct pack_plan pl = { 0 };
	struct ch_buf dict = { 0 };
	struct ch_shard_writer *w = NULL;
	int rc = -1;
	if (group_samples(cat, &pl, err) < 0 ||
	    plan_blocks(&pl, o->block_size, err) < 0 ||
	    (o->dict && train_dict(cat, &pl, &dict, err) < 0) ||
	    ch_shard_writer_open(&w, path, dict.data, dict.len, err) < 0)
		goto out;
	struct encode_job job = {
		.cat = cat, .plan = &pl, .writer = w,
		.level = o->level, .jobs = o->jobs,
		.dict = dict.len ? dict.data : NULL, .dict_size = dict.len,
		.cancel = o->cancel, .progress = o->progress,
		.progress_arg = o->progress_arg, .counters = counters,
	};
	if (ch_encode_shard(&job, err) < 0 ||
	    ch_shard_writer_finish(w, sum, err) < 0)
		goto out;
	rc = 0;
out:
	ch_shard_writer_free(w);
	ch_buf_release(&dict);
	plan_release(&pl);
	return rc;
}
