/* store/http.h - one HTTP request of an HTTP(S) or S3 store
 * (store/http_request.c), shared by the single calls (store/http.c) and
 * the parallel ones (store/http_multi.c). */
#ifndef CH_STORE_HTTP_H
#define CH_STORE_HTTP_H

#include <curl/curl.h>

#include "store/backend.h"

/* Loads libcurl (store/curl_shim.c) on first use; an error says what to
 * install when it is missing. */
int ch_curl_load(struct ch_error *err);

enum { IDLE_HANDLES = 8 };

/* A store's libcurl state (st->impl), set up by store/http.c. */
struct curl_store {
	char *userpwd;	 /* S3: KEY:SECRET */
	char *sigv4;	 /* S3: aws:amz:REGION:s3 */
	struct curl_slist *headers;
	pthread_mutex_t mu; /* guards idle */
	CURL *idle[IDLE_HANDLES];
	int nidle;
};

enum ch_req_kind { CH_REQ_HEAD, CH_REQ_GET, CH_REQ_PUT, CH_REQ_DELETE };

/* What a finished attempt means. */
enum ch_req_outcome {
	CH_REQ_OK,	/* 2xx */
	CH_REQ_MISSING, /* 404 */
	CH_REQ_RETRY,	/* timeout, refused connection, 5xx but 501: try
			 * again */
	CH_REQ_FATAL,	/* anything else: stop */
};

struct ch_req {
	struct ch_store *st;
	CURL *h;
	enum ch_req_kind kind;
	const char *key;
	char *url;	/* the request's URL (owned) */
	char *key_url;	/* the object as users name it, for messages */

	/* Where a GET's body goes: one of buf, dst or part. */
	struct ch_buf *buf;
	size_t max;	  /* buf: at most this many bytes */
	uint8_t *dst;	  /* a range of off, len bytes */
	uint64_t off;
	size_t len, got;
	uint64_t skip;	  /* a 200 to a range request: bytes to drop */
	struct ch_part *part;
	int from_range;	  /* part: asked for the bytes after part->have */

	/* What a PUT sends: src, or the file src_fd. */
	const uint8_t *src;
	int src_fd;
	uint64_t src_size, src_pos;

	/* What came back. */
	long status;
	char body[2048];  /* the body of an error answer, NUL-terminated */
	size_t body_len;
	char curl_msg[CURL_ERROR_SIZE];
	int sink_failed;  /* writing what came failed: sink_err says why */
	struct ch_error sink_err;
	int range_done;	  /* dst is full: the transfer was stopped */
	char range[48];
};

CURL *ch_curl_handle_take(struct ch_store *st);
void ch_curl_handle_give(struct ch_store *st, CURL *h);

/* Sets up r and its handle h (reset first) for kind on key; the sinks
 * and sources are the caller's to fill before ch_req_arm. */
int ch_req_init(struct ch_req *r, struct ch_store *st, CURL *h,
		enum ch_req_kind kind, const char *key, struct ch_error *err);
void ch_req_release(struct ch_req *r);
/* Before each attempt: clears what came back, rewinds the upload and
 * sets the Range header from the sink. */
void ch_req_arm(struct ch_req *r);
enum ch_req_outcome ch_req_outcome(struct ch_req *r, CURLcode c);
/* The message for a failed request, after attempts tries. */
void ch_req_error(struct ch_req *r, CURLcode c, int attempts,
		  struct ch_error *err);
/* Runs r until it succeeds, fails for good or runs out of retries
 * (store/http.c); on anything but CH_REQ_OK err says why. */
enum ch_req_outcome ch_req_run(struct ch_req *r, struct ch_error *err);
/* A HEAD has no body to say why S3 refused it: asks again with a GET of
 * one byte to learn the error code. */
void ch_req_explain(struct ch_req *r);

/* The parallel calls (store/http_multi.c). */
int ch_store_curl_stat_many(struct ch_store *st, struct ch_store_job *jobs,
			    size_t n, const struct ch_transfer_opts *o,
			    struct ch_error *err);
int ch_store_curl_get_many(struct ch_store *st, struct ch_store_job *jobs,
			   size_t n, const struct ch_transfer_opts *o,
			   struct ch_error *err);
int ch_store_curl_put_many(struct ch_store *st, struct ch_store_job *jobs,
			   size_t n, const struct ch_transfer_opts *o,
			   struct ch_error *err);

#endif
