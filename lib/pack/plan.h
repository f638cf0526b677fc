/* pack/plan.h - how one shard's catalog entries group into samples and
 * blocks; shared by pack/shard_plan.c (planning) and pack/encode.c (parallel
 * work). */
#ifndef CH_PACK_PLAN_H
#define CH_PACK_PLAN_H

#include <pthread.h>

#include "chute/pack.h"
#include "pack/catalog.h"

struct plan_sample {
	size_t first;	  /* index of its first entry in the catalog */
	uint32_t nfields; /* entries first .. first + nfields - 1 */
	uint64_t size;
};

struct plan_block {
	size_t first_sample, nsamples;
	uint64_t size;
};

struct pack_plan {
	struct plan_sample *samples;
	size_t nsamples;
	uint64_t bytes; /* raw bytes of all samples */
	struct plan_block *blocks;
	size_t nblocks;
};

/* Encodes the blocks of one shard on `jobs` threads and hands them to the
 * writer in order.  dict may be NULL. */
struct encode_job {
	const struct ch_catalog *cat;
	const struct pack_plan *plan;
	struct ch_shard_writer *writer;
	int level, jobs;
	const void *dict;
	size_t dict_size;
	volatile sig_atomic_t *cancel;
	ch_progress_fn progress;
	void *progress_arg;
	struct ch_progress *counters;
};

int ch_encode_shard(const struct encode_job *job, struct ch_error *err);

/* Writes the shard at path from the catalog of its entries: sorted, each
 * sample's fields adjacent and in name order. */
int ch_pack_write_shard(const struct ch_catalog *cat,
			const struct ch_pack_opts *o, const char *path,
			struct ch_progress *counters,
			struct ch_shard_summary *sum, struct ch_error *err);

/* Reads the bytes of a sample (all its entries, in order) into out. */
int ch_read_sample(const struct ch_catalog *cat, const struct plan_sample *s,
		   uint8_t *out, struct ch_error *err);

#endif
