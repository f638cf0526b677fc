/*
 * chute/pack.h - sources into shards and a manifest (lib/pack/): chute pack and
 * chute merge.
 */
#ifndef CHUTE_PACK_H
#define CHUTE_PACK_H

#include <signal.h>

#include "chute/common.h"
#include "chute/version.h"

/* ------------------------------------------------------------------ */
/* pack                                                                 */

struct ch_pack_opts {
	const char *out_dir;
	const char *name;	/* shard name prefix and manifest name */
	/* A shard ends at shard_bytes raw bytes or shard_samples samples,
	 * the first reached.  The sample cap bounds a shard's index, which
	 * is what a stream holds in memory for each shard it has open. */
#define CH_SHARD_SAMPLES_DEFAULT 65536
	uint64_t shard_bytes;	/* raw bytes per shard (0: no limit) */
	uint64_t shard_samples; /* samples per shard (0: no limit) */
	uint64_t block_size;	/* 0: 1 MiB, or 16 KiB with dict */
	int level;
	int jobs;
	int dict;		/* train a zstd dictionary per shard */
	int keep_order;		/* do not sort by key (holds the whole file
				 * list in memory: no spilling) */
	uint64_t memory;	/* bytes of file list held before spilling
				 * sorted runs to disk */
	/* A sample (all its fields) is held whole by pack, and by every
	 * reader that decodes its block: larger ones are refused (at most
	 * CH_MAX_SAMPLE_LIMIT, chute/shard.h). */
#define CH_MAX_SAMPLE_DEFAULT (1ull << 30)
	uint64_t max_sample_size;
	const char *label_from; /* NULL or "dir" */
	const char *const *exclude; /* --exclude globs */
	size_t nexclude;
	const char *const *include; /* --include globs */
	size_t ninclude;
	int force;		/* replace a dataset even if fields, labels
				 * or splits would be lost */
	/* Pack only part `part` (0-based) of `parts` (0: all): the samples
	 * whose key ch_part_of assigns to it. */
	uint64_t part, parts;
	int list_fd;		/* for source "-" */
	int list_sep;		/* '\n' or 0 */
	volatile sig_atomic_t *cancel; /* set asynchronously to stop */
	ch_progress_fn progress;
	void *progress_arg;
};

struct ch_pack_result {
	uint64_t samples, bytes, shard_bytes;
	size_t shards;
	char id[33];
	char parent[33];   /* the new version's parent; "" for none */
	char old_id[33];   /* the version replaced; "" for none */
	char changes[512]; /* what changed against it, ", "-separated */
};

void ch_pack_opts_init(struct ch_pack_opts *o);
/* The part, of `parts`, that holds the sample with this key: XXH3-64
 * (seed 0) of the key's bytes modulo parts (chute-pack(1), PARTS). */
uint64_t ch_part_of(const char *key, size_t key_len, uint64_t parts);
/* Packs the sources into o->out_dir atomically: everything is written in a
 * temporary folder beside it and swapped into place at the end; on failure
 * or cancellation nothing under out_dir changes. */
int ch_pack(const char *const *sources, size_t nsources,
	    const struct ch_pack_opts *o, struct ch_pack_result *res,
	    struct ch_error *err);

/* ------------------------------------------------------------------ */
/* merge: parts packed apart into one dataset                           */

struct ch_merge_opts {
	const char *out_dir;
	const char *name;	/* shard name prefix and manifest name (NULL:
				 * out_dir's last component) */
	int force;		/* replace a dataset even if fields, labels
				 * or splits are lost */
	volatile sig_atomic_t *cancel;
	ch_progress_fn progress; /* phases "checking" (shards' indexes),
				  * "placing" (shards, bytes); may be NULL */
	void *progress_arg;
};

struct ch_merge_result {
	uint64_t samples, bytes, shard_bytes;
	size_t shards, parts;
	int linked;	   /* 1: shards hard-linked, 0: some copied */
	char id[33];
	char parent[33];   /* the new version's parent; "" for none */
	char old_id[33];   /* the version replaced; "" for none */
	char changes[512]; /* what changed against it, ", "-separated */
};

/* Merges the parts (dataset folders packed with --part I/N) into
 * o->out_dir: all N parts, each once, packed with the same options,
 * sources and chute version, each holding only keys of its own part.
 * Their shards go in part order, hard-linked (copied across file
 * systems, never re-encoded) and renamed in the dataset's sequence,
 * under one manifest; the order of parts[] does not matter.  Written
 * aside and swapped into place as ch_pack does: on failure nothing
 * under out_dir changes. */
int ch_merge(const char *const *parts, size_t nparts,
	     const struct ch_merge_opts *o, struct ch_merge_result *res,
	     struct ch_error *err);

/* A part as the plan of a merge sees it: a dataset opened by the caller,
 * wherever it lives (a folder, or a version on a remote), and the name
 * the user gave it, which messages use. */
struct ch_merge_part {
	const char *name;
	struct ch_dataset *ds;
};

/* The plan of a merge, shared by ch_merge and a merge on a remote: checks
 * the parts as ch_merge says (reading manifests and shard indexes, never
 * a block) and fills m with the merged manifest: shards in part order
 * under "shards/NAME-NNNNNN.chs", each with its part's size and hash; no
 * parent, id not yet computed.  Sorts parts[] into part order.
 * progress (may be NULL) sees the phase "checking", in shards. */
int ch_merge_plan(struct ch_merge_part *parts, size_t nparts,
		  const char *name, volatile sig_atomic_t *cancel,
		  ch_progress_fn progress, void *progress_arg,
		  struct ch_manifest *m, struct ch_error *err);

#endif
