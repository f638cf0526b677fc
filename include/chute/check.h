/*
 * chute/check.h - verify and check (lib/check/): a dataset checked against its
 * manifest, and validated before training.
 */
#ifndef CHUTE_CHECK_H
#define CHUTE_CHECK_H

#include <signal.h>

#include "chute/common.h"

/* ------------------------------------------------------------------ */
/* verify                                                             */

/* Verifies a dataset folder, a manifest, or one shard.  Returns 0 when
 * the check ran (problems are counted in res), -1 when it could not run. */
int ch_verify(const char *path, const struct ch_verify_opts *o,
	      struct ch_verify_result *res, struct ch_error *err);

/* ------------------------------------------------------------------ */
/* Check: validating a dataset before training (chute check)            */

/* The rules, in the order they are run and reported; ids are stable
 * (chute-check(1)). */
enum ch_check_rule {
	CH_RULE_READABLE,	 /* shards open, indexes valid, counts agree,
				  * blocks read match their hashes */
	CH_RULE_REQUIRED,	 /* every sample has the required fields */
	CH_RULE_EMPTY,		 /* no field of 0 bytes */
	CH_RULE_TYPES,		 /* jpg/jpeg/png decode, cls, json, npy hold */
	CH_RULE_DUPLICATES,	 /* samples of the same inputs in a split */
	CH_RULE_LEAKAGE,	 /* train samples identical to others' */
	CH_RULE_CONFLICTING_LABELS, /* the same inputs, other labels */
	CH_RULE_NEAR_DUPLICATES, /* near-identical train and eval images */
	CH_RULE_EVAL_SPLIT,	 /* a held-out split exists */
	CH_RULE_LABELS,		 /* class counts; drift from a baseline */
	CH_RULE_SIZE_OUTLIERS,	 /* fields far over their median size */
	CH_RULE_CORRUPTION,	 /* block and sample hashes (deep) */
	CH_RULE_COUNT
};

enum ch_check_level { CH_LEVEL_OFF, CH_LEVEL_WARN, CH_LEVEL_FAIL };
enum ch_check_status { CH_STATUS_OFF, CH_STATUS_PASS, CH_STATUS_WARN,
		       CH_STATUS_FAIL };

/* "readable", "required-fields", ...; NULL past the last rule. */
const char *ch_check_rule_name(int rule);

struct ch_check_opts {
	enum ch_check_level level[CH_RULE_COUNT]; /* what a problem means */
	char **required;  /* required field names (owned), or NULL: every
			   * field more than half the samples have */
	size_t nrequired;
	char **label_fields; /* fields that hold labels besides cls (owned):
			      * left out of a sample's inputs */
	size_t nlabel_fields;
	int deep;	     /* run corruption: decode and hash everything */
	int near_duplicates; /* run near-duplicates (decodes images) */
	int distance;	     /* near-duplicates: Hamming distance, 0..64 */
	double drift;	     /* labels: largest proportion change allowed */
	double factor;	     /* size-outliers: times the median */
	const char *baseline; /* labels: an earlier version, or NULL */
	int allow_no_eval;   /* eval-split warns instead of failing */
	size_t examples;     /* examples kept per rule */
	int jobs;	     /* threads; 0: all cores */
	volatile sig_atomic_t *cancel;
	ch_progress_fn progress; /* phases "scanning", then each pass that
				  * reads blocks; may be NULL */
	void *progress_arg;
};

/* The defaults of chute-check(1); the rules run at their default levels. */
void ch_check_opts_init(struct ch_check_opts *o);
/* Frees what ch_check_opts_init and ch_check_rules_read allocated. */
void ch_check_opts_release(struct ch_check_opts *o);
/* Applies a rules file (JSON: "required", "examples", "rules") to o; an
 * unknown key, rule, level or a bad parameter fails naming the file and
 * the key. */
int ch_check_rules_read(struct ch_check_opts *o, const char *path,
			struct ch_error *err);

/* One sample (or shard) a rule is about.  Strings are owned. */
struct ch_check_ref {
	char *key;	   /* NULL when about a whole shard or split file */
	char *shard;	   /* path in the manifest, or NULL */
	char *split;	   /* its split's name, or NULL */
};

struct ch_check_example {
	uint64_t sample;       /* dataset-wide number: examples are sorted */
	struct ch_check_ref at;
	char *field;	       /* field concerned, or NULL */
	char *message;	       /* what is wrong with it, or NULL */
	uint64_t size, median; /* size-outliers: bytes, the field's median */
	int has_other;	       /* duplicates, leakage, near-duplicates: */
	struct ch_check_ref other; /* the sample it matches */
	uint64_t other_sample; /* and its dataset-wide number */
	int distance;	       /* near-duplicates: Hamming distance */
	uint64_t value;	       /* labels: the class value that drifted */
	double share, baseline_share; /* labels: its proportions */
};

struct ch_check_rule_result {
	enum ch_check_status status; /* OFF: not run */
	uint64_t count;		     /* problems found */
	uint64_t unexamined;	     /* samples the rule could not look at (a
				      * shard or block that does not read):
				      * not 0 fails the rule at its level */
	char *message;		     /* one line, always set when run */
	struct ch_check_example *examples; /* the first (by sample number) */
	size_t nexamples;
};

/* Samples per class value (the cls field's decimal integer), for the
 * whole dataset (groups[0], "all") and each split. */
struct ch_check_labels {
	uint64_t *values; /* distinct class values, ascending */
	size_t nvalues;
	struct ch_check_label_group {
		char *name;	 /* "all", or a split's name */
		uint64_t *counts; /* nvalues counts */
		uint64_t total;	 /* samples with a valid class */
	} *groups;
	size_t ngroups;
};

struct ch_check_report {
	char id[33];
	char *name;
	uint64_t samples;
	size_t shards;
	struct ch_check_rule_result rules[CH_RULE_COUNT];
	int has_labels; /* labels is meaningful: the dataset has cls */
	struct ch_check_labels labels;
	unsigned passed, warned, failed;
};

/* Runs the rules of o over the dataset at path (a folder or manifest).
 * Returns 0 when the check ran, whatever it found (see the statuses);
 * -1 when it could not: no such dataset, a lone shard (no manifest), an
 * unreadable baseline, out of memory, interrupted.  Hash rules read the
 * indexes, and the blocks of samples with label fields (their inputs are
 * hashed without them); typed fields, cls and --deep read blocks.
 * Memory: about 32 bytes a sample, 8 more per field (median sizes) and
 * per sample with cls or near-duplicates. */
int ch_check(const char *path, const struct ch_check_opts *o,
	     struct ch_check_report *rep, struct ch_error *err);
void ch_check_report_release(struct ch_check_report *rep);

#endif
