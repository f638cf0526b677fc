/* store/backend.h - what store/store.c shares with its backends
 * (store/folder.c, store/http.c, store/http_multi.c), what the backends
 * share (store/transfer.c) and the .part files (store/part_file.c). */
#ifndef CH_STORE_BACKEND_H
#define CH_STORE_BACKEND_H

#include "chute/store.h"
#include "common/xxh.h"

/* One backend: a table chosen by the URL's scheme in ch_store_open. */
struct ch_store_ops {
	int (*stat)(struct ch_store *st, const char *key, uint64_t *size,
		    struct ch_error *err);
	int (*get)(struct ch_store *st, const char *key, size_t max,
		   struct ch_buf *out, struct ch_error *err);
	int (*get_range)(struct ch_store *st, const char *key, uint64_t off,
			 size_t len, void *dst, struct ch_error *err);
	int (*put)(struct ch_store *st, const char *key, const void *data,
		   size_t size, struct ch_error *err);
	int (*put_file)(struct ch_store *st, const char *key,
			const char *path, struct ch_error *err);
	int (*stat_many)(struct ch_store *st, struct ch_store_job *jobs,
			 size_t n, const struct ch_transfer_opts *o,
			 struct ch_error *err);
	int (*get_many)(struct ch_store *st, struct ch_store_job *jobs,
			size_t n, const struct ch_transfer_opts *o,
			struct ch_error *err);
	int (*put_many)(struct ch_store *st, struct ch_store_job *jobs,
			size_t n, const struct ch_transfer_opts *o,
			struct ch_error *err);
	void (*close)(struct ch_store *st);
};

struct ch_store {
	enum ch_store_kind kind;
	char *url;  /* as given, without a trailing '/' */
	/* Where keys are appended after a '/': the folder for CH_STORE_DIR,
	 * the URL prefix (scheme, host, bucket, prefix) otherwise. */
	char *base;
	/* HTTP(S): the URL's query without its '?' (a pre-signed URL's
	 * signature, a token), sent verbatim with every request; NULL when
	 * it has none.  st->url shows it with its values hidden. */
	char *query;
	struct ch_store_opts opts; /* defaults filled in */
	const struct ch_store_ops *ops;
	void *impl; /* the backend's own state */
	/* S3 only (NULL otherwise). */
	char *s3_bucket, *s3_region, *s3_key_id, *s3_secret, *s3_token;
	char *s3_cred_source; /* NULL: the environment; else which profile
				 or endpoint, for a 403's hint */
};

extern const struct ch_store_ops ch_store_file_ops;
extern const struct ch_store_ops ch_store_curl_ops;

/* Backends' open: fill st->impl from st->base and the S3 fields. */
int ch_store_file_open(struct ch_store *st, struct ch_error *err);
int ch_store_curl_open(struct ch_store *st, struct ch_error *err);

/* Listing and deleting: a folder's (store/list.c), HTTP's and S3's
 * (store/list_http.c), chosen by the store's kind in store/store.c. */
int ch_store_file_list(struct ch_store *st, const char *prefix,
		       struct ch_store_list *out, struct ch_error *err);
int ch_store_file_delete(struct ch_store *st, const char *key,
			 struct ch_error *err);
int ch_store_curl_list(struct ch_store *st, const char *prefix,
		       struct ch_store_list *out, struct ch_error *err);
int ch_store_curl_delete(struct ch_store *st, const char *key,
			 struct ch_error *err);
void ch_store_list_sort(struct ch_store_list *l);

/* The folder path of key in a CH_STORE_DIR store (malloc'd). */
char *ch_store_file_path(const struct ch_store *st, const char *key);

/* An HTTP(S) or S3 store's object as users name it: URL/KEY, or
 * URL/KEY?QUERY with the query's values hidden (malloc'd);
 * ch_store_key_url is this or a folder path. */
char *ch_store_object_url(const struct ch_store *st, const char *key);

/* Retries: milliseconds to wait before retry number n (1, 2, ...):
 * backoff_ms doubled each time, capped at 30 s. */
long ch_store_backoff_ms(const struct ch_store *st, int n);
void ch_store_sleep_ms(long ms);
uint64_t ch_store_now_ms(void);

/* Progress: calls o->progress at most every 100 ms, or now when force,
 * with the phase given (unit "files"). */
struct ch_store_reporter {
	const struct ch_transfer_opts *o;
	uint64_t last_ms;
	const char *phase;
};
void ch_store_report(struct ch_store_reporter *r,
		     const struct ch_progress *p, int force);
int ch_store_jobs(const struct ch_transfer_opts *o);

/* ------------------------------------------------------------------ */
/* PATH.part: the download of one job, hashed as it is written.  */

struct ch_part {
	struct ch_store_job *job;
	const char *what; /* the object, for messages (its URL) */
	char *part_path;
	int fd;
	XXH3_state_t *xs;
	uint64_t have;	  /* bytes in the .part, all hashed */
	uint64_t unsynced; /* written since the last writeback started */
	int overflow;	  /* the object is longer than job->size */
};

/* Opens PATH.part, creating PATH's folder.  With resume, bytes already
 * there (no more than job->size) are hashed and kept (p->have says how
 * many); otherwise the file is emptied.  */
int ch_part_open(struct ch_part *p, struct ch_store_job *job,
		 const char *what, int resume, struct ch_error *err);
/* Empties the .part to fetch again from byte 0. */
int ch_part_restart(struct ch_part *p, struct ch_error *err);
int ch_part_write(struct ch_part *p, const void *data, size_t n,
		  struct ch_error *err);
/* Checks size and hash; on a match marks the job verified (0), for
 * ch_parts_commit to name.  On a mismatch returns 1 with err naming the
 * object and both hashes, the .part left in place for the caller to
 * restart or drop. */
int ch_part_finish(struct ch_part *p, struct ch_error *err);
/* Makes the verified .part files of jobs durable (one syncfs a file
 * system) and renames them to their paths, then syncs their folders. */
int ch_parts_commit(struct ch_store_job *jobs, size_t n,
		    struct ch_error *err);
/* Closes the file; removes the .part when drop. */
void ch_part_close(struct ch_part *p, int drop);

#endif
