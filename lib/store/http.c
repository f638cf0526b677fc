/* store/http.c - HTTP(S) and S3 stores through libcurl: opening one, its
 * idle handles, and the single calls (stat, get, range, put), each one
 * request (store/http_request.c) retried in place.
 *
 * S3 requests are signed by libcurl (CURLOPT_AWS_SIGV4), which since 7.86
 * signs every x-amz-* header it is given and takes the payload hash from
 * x-amz-content-sha256 when that header is there.  It does not add the
 * header itself, and S3 requires it, so every request carries
 * "x-amz-content-sha256: UNSIGNED-PAYLOAD". */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/http.h"

static struct curl_slist *add_header(struct curl_slist *list, const char *h,
				     int *failed)
{
	struct curl_slist *l = curl_slist_append(list, h);
	if (!l)
		*failed = 1;
	return l ? l : list;
}

static int s3_setup(struct ch_store *st, struct curl_store *cs,
		    struct ch_error *err)
{
	size_t n = strlen(st->s3_key_id) + strlen(st->s3_secret) + 2;
	cs->userpwd = malloc(n);
	n = strlen(st->s3_region) + 16;
	cs->sigv4 = malloc(n);
	if (!cs->userpwd || !cs->sigv4)
		return ch_error_nomem(err);
	sprintf(cs->userpwd, "%s:%s", st->s3_key_id, st->s3_secret);
	snprintf(cs->sigv4, n, "aws:amz:%s:s3", st->s3_region);
	int failed = 0;
	cs->headers = add_header(cs->headers,
				 "x-amz-content-sha256: UNSIGNED-PAYLOAD",
				 &failed);
	if (st->s3_token) {
		size_t tn = strlen(st->s3_token) + 32;
		char *h = malloc(tn);
		if (!h)
			return ch_error_nomem(err);
		snprintf(h, tn, "x-amz-security-token: %s", st->s3_token);
		cs->headers = add_header(cs->headers, h, &failed);
		free(h);
	}
	return failed ? ch_error_nomem(err) : 0;
}

static void curl_close(struct ch_store *st)
{
	struct curl_store *cs = st->impl;
	for (int i = 0; i < cs->nidle; i++)
		curl_easy_cleanup(cs->idle[i]);
	curl_slist_free_all(cs->headers);
	free(cs->userpwd);
	free(cs->sigv4);
	pthread_mutex_destroy(&cs->mu);
	free(cs);
	st->impl = NULL;
	curl_global_cleanup();
}

int ch_store_curl_open(struct ch_store *st, struct ch_error *err)
{
	if (ch_curl_load(err) < 0)
		return -1;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return ch_error_set(err, "cannot start libcurl");
	struct curl_store *cs = calloc(1, sizeof(*cs));
	if (!cs) {
		curl_global_cleanup();
		return ch_error_nomem(err);
	}
	pthread_mutex_init(&cs->mu, NULL);
	st->impl = cs; /* from here on, curl_close releases it all */
	int failed = 0;
	/* no "Expect: 100-continue" round trip before each upload */
	cs->headers = add_header(cs->headers, "Expect:", &failed);
	if (failed)
		return ch_error_nomem(err);
	if (st->kind == CH_STORE_S3)
		return s3_setup(st, cs, err);
	return 0;
}

CURL *ch_curl_handle_take(struct ch_store *st)
{
	struct curl_store *cs = st->impl;
	CURL *h = NULL;
	pthread_mutex_lock(&cs->mu);
	if (cs->nidle > 0)
		h = cs->idle[--cs->nidle];
	pthread_mutex_unlock(&cs->mu);
	return h ? h : curl_easy_init();
}

/* Idle handles keep their connections open for the next call. */
void ch_curl_handle_give(struct ch_store *st, CURL *h)
{
	struct curl_store *cs = st->impl;
	if (!h)
		return;
	pthread_mutex_lock(&cs->mu);
	if (cs->nidle < IDLE_HANDLES) {
		cs->idle[cs->nidle++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&cs->mu);
	if (h)
		curl_easy_cleanup(h);
}

/* ------------------------------------------------------------------ */
/* Single calls, retried in place. */

enum ch_req_outcome ch_req_run(struct ch_req *r, struct ch_error *err)
{
	for (int attempt = 1;; attempt++) {
		ch_req_arm(r);
		CURLcode c = curl_easy_perform(r->h);
		enum ch_req_outcome o = ch_req_outcome(r, c);
		if (o == CH_REQ_RETRY && attempt <= r->st->opts.retries) {
			ch_store_sleep_ms(ch_store_backoff_ms(r->st, attempt));
			continue;
		}
		if (o == CH_REQ_FATAL && r->kind == CH_REQ_HEAD)
			ch_req_explain(r);
		if (o != CH_REQ_OK)
			ch_req_error(r, c, attempt, err);
		return o;
	}
}

static int curl_stat(struct ch_store *st, const char *key, uint64_t *size,
		     struct ch_error *err)
{
	struct ch_req r;
	CURL *h = ch_curl_handle_take(st);
	int rc = -1;
	if (ch_req_init(&r, st, h, CH_REQ_HEAD, key, err) < 0)
		goto out;
	enum ch_req_outcome o = ch_req_run(&r, err);
	if (o == CH_REQ_MISSING) {
		rc = 0;
	} else if (o == CH_REQ_OK) {
		curl_off_t len = -1;
		curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len);
		if (len < 0) {
			ch_error_set(err, "HEAD %s gave no Content-Length",
				     r.key_url);
			goto out;
		}
		if (size)
			*size = (uint64_t)len;
		rc = 1;
	}
out:
	ch_req_release(&r);
	ch_curl_handle_give(st, h);
	return rc;
}

static int curl_get(struct ch_store *st, const char *key, size_t max,
		    struct ch_buf *out, struct ch_error *err)
{
	struct ch_req r;
	CURL *h = ch_curl_handle_take(st);
	int rc = -1;
	if (ch_req_init(&r, st, h, CH_REQ_GET, key, err) < 0)
		goto out;
	r.buf = out;
	r.max = max;
	enum ch_req_outcome o = ch_req_run(&r, err);
	rc = o == CH_REQ_OK ? 0 : o == CH_REQ_MISSING ? 1 : -1;
out:
	ch_req_release(&r);
	ch_curl_handle_give(st, h);
	return rc;
}

static int curl_get_range(struct ch_store *st, const char *key, uint64_t off,
			  size_t len, void *dst, struct ch_error *err)
{
	struct ch_req r;
	CURL *h = ch_curl_handle_take(st);
	int rc = -1;
	if (ch_req_init(&r, st, h, CH_REQ_GET, key, err) < 0)
		goto out;
	r.dst = dst;
	r.off = off;
	r.len = len;
	if (ch_req_run(&r, err) != CH_REQ_OK)
		goto out;
	if (r.got != len || (r.status == 200 && r.skip > 0)) {
		ch_error_set(err,
			     "%s is too short: %zu bytes at offset %llu asked "
			     "for, %zu came",
			     r.key_url, len, (unsigned long long)off, r.got);
		goto out;
	}
	rc = 0;
out:
	ch_req_release(&r);
	ch_curl_handle_give(st, h);
	return rc;
}

static int put_req(struct ch_store *st, const char *key, const void *data,
		   int fd, uint64_t size, struct ch_error *err)
{
	struct ch_req r;
	CURL *h = ch_curl_handle_take(st);
	int rc = -1;
	if (ch_req_init(&r, st, h, CH_REQ_PUT, key, err) < 0)
		goto out;
	r.src = data;
	r.src_fd = fd;
	r.src_size = size;
	rc = ch_req_run(&r, err) == CH_REQ_OK ? 0 : -1;
out:
	ch_req_release(&r);
	ch_curl_handle_give(st, h);
	return rc;
}

static int curl_put(struct ch_store *st, const char *key, const void *data,
		    size_t size, struct ch_error *err)
{
	/* a NULL src would read from src_fd */
	return put_req(st, key, data ? data : "", -1, size, err);
}

static int curl_put_file(struct ch_store *st, const char *key,
			 const char *path, struct ch_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ch_error_errno(err, errno, "cannot open '%s'", path);
	struct stat sb;
	int rc = fstat(fd, &sb) < 0
			 ? ch_error_errno(err, errno, "cannot stat '%s'", path)
			 : put_req(st, key, NULL, fd, (uint64_t)sb.st_size, err);
	close(fd);
	return rc;
}

const struct ch_store_ops ch_store_curl_ops = {
	.stat = curl_stat,
	.get = curl_get,
	.get_range = curl_get_range,
	.put = curl_put,
	.put_file = curl_put_file,
	.stat_many = ch_store_curl_stat_many,
	.get_many = ch_store_curl_get_many,
	.put_many = ch_store_curl_put_many,
	.close = curl_close,
};
