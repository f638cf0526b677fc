/*
 * chute/store.h - objects in a remote: a folder, an HTTP(S) server (GET, HEAD,
 * PUT; WebDAV servers such as nginx's) or an S3 bucket (Signature V4).
 *
 * An object is named by a key relative to the remote's root, such as
 * "cas/ab/ab12...ef.chs" or "tags/latest"; keys use '/' and never start
 * with '/' or hold "..".  What the keys mean (the remote layout) is
 * remote/push_pull.c's business, not the store's: a store only moves bytes.
 *
 * Every function returns 0 on success and -1 with err filled: what failed,
 * which object (its URL), the HTTP status, and what to check (credentials
 * for 403, the URL for 404).  Nothing is printed.
 */
#ifndef CH_STORE_H
#define CH_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "chute/common.h"

enum ch_store_kind { CH_STORE_DIR, CH_STORE_HTTP, CH_STORE_S3 };

/* How the store behaves on a bad network.  Zeroed fields take defaults. */
struct ch_store_opts {
	int retries;	     /* attempts after the first on timeouts,
				connection errors and 5xx (default
				$CHUTE_RETRIES, else 5; -1: none) */
	int backoff_ms;	     /* first wait, doubled each retry (default 250) */
	int connect_timeout_s; /* default 10 */
	int stall_timeout_s; /* a transfer below 1 byte/s this long is a
				timeout (default 30) */
};

struct ch_store;

/* Opens url: a folder path, file:///PATH, http(s)://HOST[:PORT]/PREFIX,
 * or s3://BUCKET[/PREFIX].  S3 finds its credentials, region and
 * endpoint as the AWS CLI does (chute-remote(7), "S3 credentials and
 * configuration"): credentials from AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, else the profile
 * (AWS_PROFILE, else "default") in the credentials file
 * (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials), else in the
 * config file (AWS_CONFIG_FILE, else ~/.aws/config), else a container
 * endpoint (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI, fetched
 * here); the region from AWS_REGION, AWS_DEFAULT_REGION, the profile,
 * else us-east-1; the endpoint from AWS_ENDPOINT_URL_S3,
 * AWS_ENDPOINT_URL, the profile's services section, its endpoint_url,
 * else https://s3.REGION.amazonaws.com (with an endpoint, path-style
 * URLs).  No credentials anywhere (the message lists where it looked), a
 * profile AWS_PROFILE names that is in neither file, a file that does
 * not parse (file and line) are errors here, not at the first request;
 * the last two are CH_ERR_USAGE.  A folder that does not exist is
 * created by the first put. */
int ch_store_open(struct ch_store **out, const char *url,
		  const struct ch_store_opts *opts, struct ch_error *err);
void ch_store_close(struct ch_store *st);
/* The url as given, without a trailing '/'. */
const char *ch_store_url(const struct ch_store *st);
/* Where key lives, for messages: "http://h/p/tags/x", "/srv/r/tags/x". */
char *ch_store_key_url(const struct ch_store *st, const char *key);

/* Whether key exists (1) or not (0); *size gets its size when it does
 * (size may be NULL).  -1: the question could not be answered. */
int ch_store_stat(struct ch_store *st, const char *key, uint64_t *size,
		  struct ch_error *err);
/* The whole object, at most max bytes (more is an error).  Returns 1
 * with err set ("no such object: URL") when it does not exist, so that a
 * caller can tell "missing" from "failed". */
int ch_store_get(struct ch_store *st, const char *key, size_t max,
		 struct ch_buf *out, struct ch_error *err);
/* Exactly len bytes at offset off (an HTTP Range request).  A short
 * object is an error. */
int ch_store_get_range(struct ch_store *st, const char *key, uint64_t off,
		       size_t len, void *dst, struct ch_error *err);
/* Uploads; a folder store writes a temporary file and renames it, so a
 * reader never sees part of an object.  Replaces an existing object. */
int ch_store_put(struct ch_store *st, const char *key, const void *data,
		 size_t size, struct ch_error *err);

/* ------------------------------------------------------------------ */
/* Listing and deleting (store/list.c, store/list_http.c)                */

struct ch_store_object {
	char *key;	/* relative to the store's root, as the other calls
			 * take it */
	uint64_t size;
	int64_t mtime;	/* last written, seconds since 1970 (UTC), as the
			 * server says: file mtime, S3 LastModified */
};

struct ch_store_list {
	struct ch_store_object *objects; /* sorted by key (strcmp) */
	size_t n, cap;
};

/* Every object under the folder key prefix ("cas", "tags"; "" for the
 * whole store), at any depth, into out (which it empties first).  A
 * prefix with no objects is an empty list, not an error.  A folder
 * follows symbolic links as a read does (one pointing nowhere is left
 * out) and skips names starting with '.' (the temporaries of a put in
 * progress and .part files).  S3 uses ListObjectsV2, a page of 1000 keys a request.
 * HTTP has no listing of its own: an http(s) remote is listed through
 * nginx's JSON index (`autoindex on; autoindex_format json;`); any other
 * answer is an error saying so. */
int ch_store_list(struct ch_store *st, const char *prefix,
		  struct ch_store_list *out, struct ch_error *err);
void ch_store_list_release(struct ch_store_list *l);
/* Appends an object (its key: len bytes, copied) to l. */
int ch_store_list_add(struct ch_store_list *l, const char *key, size_t len,
		      uint64_t size, int64_t mtime, struct ch_error *err);
/* Removes key (unlink; HTTP and S3 DELETE).  An object already gone is
 * not an error. */
int ch_store_delete(struct ch_store *st, const char *key,
		    struct ch_error *err);

/* ------------------------------------------------------------------ */
/* Many objects at once, in parallel (libcurl's multi interface for
 * HTTP and S3; a pool of threads for folders).                          */

struct ch_store_job {
	const char *key;
	const char *path;	/* get: destination; put: source file */
	uint64_t size;		/* get: expected size; put: filled in */
	struct ch_hash128 hash; /* get: expected XXH3-128 of the object */
	/* out */
	int exists;		/* stat_many: 1 if the object exists */
	uint64_t remote_size;	/* stat_many: its size when it exists */
	int resumed;		/* get_many: a PATH.part was continued, only
				 * the rest fetched (HTTP: a 206), not
				 * started over */
	int verified;		/* get_many: checked, waiting for its name */
};

struct ch_transfer_opts {
	int jobs;		    /* transfers at once (default 8) */
	/* may be NULL; called at most every 100 ms, and when a call starts
	 * and ends, with the phase "checking remote" (stat_many),
	 * "downloading" (get_many) or "uploading" (put_many), unit "files" */
	ch_progress_fn progress;
	void *progress_arg;
};

/* Fills exists / remote_size of every job (HEAD requests in parallel). */
int ch_store_stat_many(struct ch_store *st, struct ch_store_job *jobs,
		       size_t n, const struct ch_transfer_opts *o,
		       struct ch_error *err);
/* Downloads every job's object to job->path.  Bytes go to PATH.part; a
 * PATH.part left by an interrupted run is continued with a Range request
 * (objects are content-addressed, so what is there is a prefix of what
 * is wanted; a continuation that fails the hash check is fetched again
 * from the start, once).  The finished file's size and XXH3-128 are
 * checked against the job before it is renamed to PATH: a file under its
 * final name is always verified.  The renames wait until the transfers
 * are over and one syncfs has made every verified file durable (a fsync
 * per file would stall the other transfers behind each).  A mismatch is an error naming the
 * object, the expected and the actual hash.  A job names its object by
 * hash, so one that is missing or does not match is CH_ERR_DATA (exit 1),
 * not an I/O error.  Transient failures
 * (timeouts, refused connections, 5xx) are retried with backoff; a 4xx is
 * an error at once.  On error the other transfers are stopped, their
 * .part files kept for the next run; err describes the first failure. */
int ch_store_get_many(struct ch_store *st, struct ch_store_job *jobs,
		      size_t n, const struct ch_transfer_opts *o,
		      struct ch_error *err);
/* Uploads every job's file (retrying like get_many); fills job->size. */
int ch_store_put_many(struct ch_store *st, struct ch_store_job *jobs,
		      size_t n, const struct ch_transfer_opts *o,
		      struct ch_error *err);

/* ------------------------------------------------------------------ */
/* One object read front to back while it arrives                       */

struct ch_store_stream;
/* size: the object's (ch_store_stat); ahead range requests of chunk
 * bytes (0: 4 MiB) are kept in flight by as many threads.  st must
 * outlive the stream. */
int ch_store_stream_open(struct ch_store_stream **out, struct ch_store *st,
			 const char *key, uint64_t size, int ahead,
			 size_t chunk, struct ch_error *err);
/* Up to n bytes; fewer only at the end (0 there); -1 with err set when
 * a request failed for good. */
ssize_t ch_store_stream_read(struct ch_store_stream *s, void *buf, size_t n,
			     struct ch_error *err);
void ch_store_stream_close(struct ch_store_stream *s);

#endif
