/* check/internal.h - what the modules of chute check share: the checker
 * (the state of one run), the field-type validators and the perceptual
 * hash.  Not part of the public API. */
#ifndef CH_CHECK_INTERNAL_H
#define CH_CHECK_INTERNAL_H

#include <pthread.h>

#include "chute/version.h"
#include "chute/check.h"
#include "common/counter.h"
#include "common/internal.h"

/* ------------------------------------------------------------------ */
/* Field types (check/types.c)                                          */

enum check_type { TYPE_NONE, TYPE_JPEG, TYPE_PNG, TYPE_CLS, TYPE_JSON,
		  TYPE_NPY };

/* The type a field's name says: its last dot-separated part ("jpg",
 * "seg.png"), TYPE_NONE for names check does not know. */
enum check_type check_type_of(const char *field);

/* Per-thread decoding state: a TurboJPEG handle and a scratch buffer for
 * decoded pixels, reused from one image to the next. */
struct check_decoder {
	void *tj; /* tjhandle of the last JPEG, or NULL */
	uint8_t *pixels;
	size_t cap;
};
void check_decoder_release(struct check_decoder *d);
/* A new TurboJPEG handle in d->tj for the next image: libjpeg keeps the
 * tables of one image for the next, so that a JPEG without its own would
 * decode or not by what its thread decoded before; -1 when none can be
 * made. */
int check_decoder_fresh_jpeg(struct check_decoder *d);
/* Room for n bytes of pixels in d->pixels; -1 when out of memory. */
int check_decoder_room(struct check_decoder *d, size_t n);

/* Checks that data holds what type says; on failure returns -1 with why
 * (one line).  For TYPE_CLS, *cls gets the value (or -1 when invalid);
 * nclasses 0 means any value >= 0 is a class. */
int check_type_valid(struct check_decoder *d, enum check_type type,
		     const uint8_t *data, size_t size, uint64_t nclasses,
		     int64_t *cls, char *why, size_t why_size);

/* ------------------------------------------------------------------ */
/* Perceptual hash (check/phash.c)                                      */

/* dHash of a JPEG or PNG: decoded small (TurboJPEG scaling), grayscale,
 * averaged down to 9x8, one bit per pair of neighbours in a row.  -1
 * when the image cannot be decoded. */
int check_phash(struct check_decoder *d, enum check_type type,
		const uint8_t *data, size_t size, uint64_t *out);

/* ------------------------------------------------------------------ */
/* The checker                                                          */

#define SPLIT_NOINPUT 0xfdu /* a sample of label fields alone */
#define SPLIT_NONE 0xfeu    /* a sample in no split (or no splits) */
#define SPLIT_ABSENT 0xffu  /* a sample whose shard or block did not read */
#define SPLIT_MAX 250u	    /* splits a check can tell apart */

/* One sample for the duplicate, leakage and label tables: 32 bytes.
 * Its identity is its inputs: every field but the label fields, hashed
 * as the index hashes a sample (the index's hash itself when the sample
 * has no label field). */
struct check_rec {
	uint64_t hash, size; /* of the inputs */
	uint64_t tag;	     /* split << 56 | dataset-wide sample number */
	uint64_t label;	     /* hash of the label fields; 0: none */
};

/* A problem found, before it is resolved to keys and paths (which is
 * done only for those kept as examples). */
struct check_hit {
	uint64_t sample;     /* dataset-wide number, the examples' order */
	int shard_only;	     /* about the shard of sample, not the sample */
	const char *shard;   /* shard_only: its path, if sample is unknown */
	const char *field;   /* or NULL */
	const char *message; /* or NULL */
	uint64_t size, median;
	int64_t other;	     /* sample number it matches, or -1 */
	int distance;
};

struct checker {
	const struct ch_check_opts *o;
	struct ch_check_report *rep;
	struct ch_dataset ds;
	int labels_only;	/* a baseline: count classes, nothing else */
	int run[CH_RULE_COUNT]; /* the rules that run */
	size_t nshards;
	struct ch_shard **sh;	/* NULL where a shard did not open */
	uint64_t *first;	/* first sample number of each shard */
	uint64_t total;		/* samples of all shards, per the manifest */
	uint8_t *split_of;	/* per sample; NULL: no splits */
	int train;		/* split id of "train", or -1 */
	struct check_rec *recs; /* per sample; NULL unless hash rules run */
	uint64_t **sizes;	/* [manifest field][sample]; NULL: no outliers */
	uint8_t *required;	/* per manifest field: required */
	uint8_t *is_label;	/* per manifest field: a label field */
	int has_label_fields;	/* the manifest lists one */
	size_t nreq, nreq_known; /* required; of those, in the manifest */
	int64_t *cls;		/* per sample; NULL without a cls field */
	uint64_t *phash;	/* per sample; NULL without near-duplicates */
	uint8_t *phash_ok;
	uint64_t typed_fields, blocks_read, samples_hashed, bad_blocks;
	uint64_t unexamined[CH_RULE_COUNT]; /* samples each rule missed */
	struct check_task {
		size_t shard;
		uint64_t begin, end; /* samples */
	} *tasks;
	size_t ntasks;
	int phase_open; /* tasks open shards rather than scan samples */
	pthread_mutex_t lock;
	struct ch_counter progress; /* the scan's samples; guarded by lock */
	size_t worst[CH_RULE_COUNT]; /* the example last in order, when full */
	/* the shards' fields summed as they open (guarded by lock), for
	 * the manifest's schema once every shard did */
	struct ch_totals totals;
	size_t tallied;
	uint64_t bad_totals; /* readable's problems that are totals */
};

/* Records a problem of rule (count, and an example if among the first by
 * sample number).  Thread-safe. */
void check_note(struct checker *c, int rule, const struct check_hit *h);
/* Sorts each rule's examples by sample number. */
void check_sort_examples(struct ch_check_report *rep);
/* The status of a rule that ran, from its count and level. */
void check_settle(struct checker *c, int rule, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Scans samples [t->begin, t->end) of a shard (check/scan.c). */
void check_scan(struct checker *c, const struct check_task *t,
		struct ch_block_reader *r, struct check_decoder *d);

/* Rules run once the scan is done (check/dups.c, check/stats.c). */
int check_hash_rules(struct checker *c, struct ch_error *err);
void check_near_duplicates(struct checker *c);
int check_size_outliers(struct checker *c, struct ch_error *err);
int check_labels(struct checker *c, struct ch_error *err);
int check_labels_drift(struct checker *c, const struct ch_check_labels *base,
		       struct ch_error *err);

#endif
