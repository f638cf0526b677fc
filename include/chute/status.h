/*
 * chute/status.h - a dataset folder compared with its manifest (chute
 * status, chute-status(1)): files missing, modified or unexpected, read
 * through the stat cache of chute/history.h.
 */
#ifndef CH_STATUS_H
#define CH_STATUS_H

#include "chute.h"

enum ch_status_kind {
	CH_WS_MISSING,	  /* named by the manifest, not there */
	CH_WS_MODIFIED,	  /* there, with another size or content */
	CH_WS_UNEXPECTED, /* under shards/ or splits/, not named */
	CH_WS_MANIFEST,	  /* the manifest's id does not match its content */
};

struct ch_status_item {
	enum ch_status_kind kind;
	char *path; /* relative to the dataset folder */
	char *why;  /* "size 12, the manifest says 10", "partial download" */
};

struct ch_status_opts {
	int rehash; /* hash every file, whatever the stat cache says */
	volatile sig_atomic_t *cancel;
	ch_progress_fn progress; /* phase "checking", files; may be NULL */
	void *progress_arg;
};

struct ch_status_result {
	char id[33];
	struct ch_status_item *items; /* manifest order, then unexpected
				       * ones sorted by path */
	size_t nitems;
	uint64_t shards, split_files; /* named by the manifest */
	uint64_t hashed;	      /* files read and hashed */
	int cache_saved;	      /* refreshed records written */
};

/* Compares the dataset folder (or the folder of a manifest file) with its
 * manifest: a file the stat cache vouches for is taken as clean, any
 * other one is hashed, and its record refreshed when it matches (saving
 * the cache is best effort: a read-only folder still gets a status).
 * Returns 0 when the comparison ran (nitems 0: clean), -1 when it could
 * not (no manifest, an unreadable folder). */
int ch_status(const char *path, const struct ch_status_opts *o,
	      struct ch_status_result *res, struct ch_error *err);
void ch_status_result_release(struct ch_status_result *res);

#endif
