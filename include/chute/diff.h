/*
 * chute/diff.h - two dataset versions compared sample by sample (chute diff).
 *
 * Samples are matched by key (keys are unique in a dataset) and compared
 * by the content hash each shard's index holds (ch_sample_hash), so no
 * block is read but for the cls fields of datasets with classes.  A shard
 * whose XXH3-128 is the same in both versions holds the same samples: it
 * is read once (its index, from the first version) and its cls fields not
 * at all, since its samples are unchanged.
 *
 * Memory: about 40 bytes a sample of each version, plus the open shards'
 * indexes (the keys point into them).
 */
#ifndef CH_DIFF_H
#define CH_DIFF_H

#include "chute.h"

/* A key inside an open shard's index (not NUL-terminated). */
struct ch_diff_key {
	const char *key;
	size_t len;
};

struct ch_diff_keys {
	struct ch_diff_key *v; /* sorted by key */
	size_t n, cap;
};

/* One split name of either version. */
struct ch_diff_split {
	const char *name;
	int in_a, in_b;
	uint64_t samples_a, samples_b;
	/* keys that joined it, left it, or changed content inside it */
	struct ch_diff_keys added, removed, changed;
};

/* A sample in both versions, in split `from` in A and `to` in B. */
struct ch_diff_move {
	struct ch_diff_key key;
	size_t from, to; /* indexes into splits */
};

/* One class name of either version: samples of the class (as the version
 * that has the sample says) added, removed, changed. */
struct ch_diff_class {
	const char *name;
	int in_a, in_b;
	uint64_t added, removed, changed;
};

struct ch_diff_opts {
	volatile sig_atomic_t *cancel;
	ch_progress_fn progress; /* phase "comparing", samples; may be NULL */
	void *progress_arg;
};

struct ch_diff {
	struct ch_diff_keys added, removed, changed;
	uint64_t unchanged;
	struct ch_diff_split *splits; /* sorted by name */
	size_t nsplits;
	struct ch_diff_move *moved;   /* sorted by key */
	size_t nmoved, moved_cap;
	struct ch_diff_class *classes; /* sorted by name; none when neither
					* version has classes */
	size_t nclasses;
	/* schema: names only in B (added) or only in A (removed) */
	const char **fields_added, **fields_removed;
	size_t nfields_added, nfields_removed;
	const char **classes_added, **classes_removed;
	size_t nclasses_added, nclasses_removed;
	uint64_t shards_shared; /* B's shards with the hash of one of A's */
	int equal;		/* nothing above differs */
};

/* Compares version a with version b (both opened, shards readable).
 * Every key and name in d points into a or b: release d before them. */
int ch_diff(struct ch_dataset *a, struct ch_dataset *b,
	    const struct ch_diff_opts *o, struct ch_diff *d,
	    struct ch_error *err);
void ch_diff_release(struct ch_diff *d);

#endif
