/*
 * stream_mix.h - chute stream DATASET... --mix: the sources and weights
 * of a mix from the command line or a run record, opened as one dataset
 * (chute-stream(1), MIXING).
 */
#ifndef CHUTE_STREAM_MIX_H
#define CHUTE_STREAM_MIX_H

#include <jansson.h>

#include "chute/version.h"

struct stream_mix_source {
	const char *name;  /* as given: its key in --mix */
	char *ref;	   /* the dataset to open: name less ":SPLIT" */
	char *split;	   /* or NULL */
	uint64_t weight;   /* millionths */
	const char *want_id; /* --replay: the record's id of it */
};

struct stream_mix {
	const char *text;  /* --mix */
	const char *epoch; /* --mix-epoch, or NULL: shortest */
	struct stream_mix_source *src;
	size_t n;
};

/* Checks --mix against the datasets given (names[n]) and fills m:
 * every dataset a weight above 0, none twice.  Returns 0, or -1 with err
 * filled (a usage error). */
int stream_mix_parse(struct stream_mix *m, const char *const *names,
		     size_t n, struct ch_error *err);

/* --replay: the mix of a record's "dataset" object (its "mix" array,
 * "mix_epoch"); path names the record in messages.  Returns 0, or -1
 * with err filled. */
int stream_mix_from_record(struct stream_mix *m, json_t *dataset,
			   const char *path, struct ch_error *err);

/* Opens the sources and the mix as ds.  cache_dir, cache_bytes: the
 * remote cache's, for remote sources. */
int stream_mix_open(const struct stream_mix *m, const char *cache_dir,
		    uint64_t cache_bytes, struct ch_dataset *ds,
		    struct ch_error *err);

/* A replayed mix's sources against the record's ids: -1 with err (data
 * that failed a check) naming the first that changed, else 0. */
int stream_mix_check(const struct stream_mix *m, const struct ch_dataset *ds,
		     const char *record, struct ch_error *err);

/* The record's "dataset" object of an open mix. */
json_t *stream_mix_json(const struct ch_dataset *ds,
			json_t *(*source_json)(const struct ch_dataset *,
					       const char *));

void stream_mix_release(struct stream_mix *m);

#endif
