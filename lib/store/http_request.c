/* store/http_request.c - one HTTP request of an HTTP(S) or S3 store:
 * setting it up, where its body goes and what it sends, telling a
 * transient failure from a final one and saying what went wrong.  The
 * single calls (store/http.c) and the parallel ones (store/http_multi.c)
 * both run their requests through it. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/http.h"

enum { BUFFER_SIZE = 256 * 1024 };


/* st->base + '/' + key, percent-encoding what is not plain in a path,
 * then '?' and st->query as it is (a signature must reach the server
 * byte for byte). */
static char *key_to_url(const struct ch_store *st, const char *key)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t nb = strlen(st->base);
	size_t nq = st->query ? strlen(st->query) + 1 : 0;
	char *u = malloc(nb + 3 * strlen(key) + nq + 2);
	if (!u)
		return NULL;
	memcpy(u, st->base, nb);
	char *o = u + nb;
	*o++ = '/';
	for (const unsigned char *k = (const unsigned char *)key; *k; k++) {
		if ((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
		    (*k >= '0' && *k <= '9') || strchr("-._~/", *k)) {
			*o++ = (char)*k;
		} else {
			*o++ = '%';
			*o++ = hex[*k >> 4];
			*o++ = hex[*k & 15];
		}
	}
	if (st->query) {
		*o++ = '?';
		memcpy(o, st->query, nq - 1);
		o += nq - 1;
	}
	*o = '\0';
	return u;
}

static int is_2xx(long s)
{
	return s >= 200 && s < 300;
}

/* A 2xx body, to the sink the request has. */
static int sink_write(struct ch_req *r, const char *p, size_t n)
{
	if (r->part) {
		/* asked for the rest, got all of it: start the file over */
		if (r->from_range && r->status == 200) {
			r->from_range = 0;
			if (ch_part_restart(r->part, &r->sink_err) < 0)
				return -1;
		}
		return ch_part_write(r->part, p, n, &r->sink_err);
	}
	if (r->dst) {
		if (r->status == 200 && r->skip > 0) { /* Range ignored */
			size_t drop = r->skip < n ? (size_t)r->skip : n;
			r->skip -= drop;
			p += drop;
			n -= drop;
		}
		size_t take = n < r->len - r->got ? n : r->len - r->got;
		memcpy(r->dst + r->got, p, take);
		r->got += take;
		if (take < n) {
			if (r->status == 200) {
				r->range_done = 1; /* the rest is not wanted */
				return -1;
			}
			return ch_error_set(&r->sink_err,
					    "%s sent more than the %zu bytes "
					    "asked for at offset %llu",
					    r->key_url, r->len,
					    (unsigned long long)r->off);
		}
		return 0;
	}
	if (r->buf) {
		if (r->buf->len + n > r->max)
			return ch_error_set(&r->sink_err,
					    "%s is larger than %zu bytes",
					    r->key_url, r->max);
		return ch_buf_append(r->buf, p, n, &r->sink_err);
	}
	return 0;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *arg)
{
	struct ch_req *r = arg;
	size_t n = size * nmemb;
	if (r->status == 0)
		curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &r->status);
	if (!is_2xx(r->status)) {
		/* an error answer: keep its start, to say why */
		size_t room = sizeof(r->body) - 1 - r->body_len;
		size_t take = n < room ? n : room;
		memcpy(r->body + r->body_len, p, take);
		r->body_len += take;
		r->body[r->body_len] = '\0';
		return n;
	}
	if (sink_write(r, p, n) < 0) {
		if (!r->range_done)
			r->sink_failed = 1;
		return 0;
	}
	return n;
}

static size_t on_read(char *p, size_t size, size_t nmemb, void *arg)
{
	struct ch_req *r = arg;
	size_t want = size * nmemb;
	uint64_t left = r->src_size - r->src_pos;
	if (want > left)
		want = (size_t)left;
	if (want == 0)
		return 0;
	if (r->src) {
		memcpy(p, r->src + r->src_pos, want);
		r->src_pos += want;
		return want;
	}
	ssize_t k;
	do
		k = pread(r->src_fd, p, want, (off_t)r->src_pos);
	while (k < 0 && errno == EINTR);
	if (k <= 0) {
		ch_error_errno(&r->sink_err, k < 0 ? errno : EIO,
			       "cannot read the file to upload to %s at byte "
			       "%llu",
			       r->key_url, (unsigned long long)r->src_pos);
		r->sink_failed = 1;
		return CURL_READFUNC_ABORT;
	}
	r->src_pos += (uint64_t)k;
	return (size_t)k;
}

static void set_common(struct ch_req *r)
{
	struct ch_store *st = r->st;
	struct curl_store *cs = st->impl;
	CURL *h = r->h;
	curl_easy_setopt(h, CURLOPT_URL, r->url);
	curl_easy_setopt(h, CURLOPT_PRIVATE, r);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, r->curl_msg);
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, (long)BUFFER_SIZE);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT,
			 (long)st->opts.connect_timeout_s);
	/* below 1 byte/s for stall_timeout_s seconds: a timeout, retried */
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
			 (long)st->opts.stall_timeout_s);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, cs->headers);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "chute/" CH_VERSION);
	/* a password may come from ~/.netrc rather than the URL, which is
	 * shown in messages and records (with its password hidden) */
	if (st->kind == CH_STORE_HTTP)
		curl_easy_setopt(h, CURLOPT_NETRC, (long)CURL_NETRC_OPTIONAL);
	if (st->kind == CH_STORE_S3) {
		curl_easy_setopt(h, CURLOPT_USERPWD, cs->userpwd);
		curl_easy_setopt(h, CURLOPT_AWS_SIGV4, cs->sigv4);
	}
}

int ch_req_init(struct ch_req *r, struct ch_store *st, CURL *h,
		enum ch_req_kind kind, const char *key, struct ch_error *err)
{
	memset(r, 0, sizeof(*r));
	r->st = st;
	r->h = h;
	r->kind = kind;
	r->key = key;
	r->src_fd = -1;
	r->url = key_to_url(st, key);
	r->key_url = ch_store_object_url(st, key);
	if (!h || !r->url || !r->key_url) {
		ch_req_release(r);
		return ch_error_nomem(err);
	}
	curl_easy_reset(h);
	set_common(r);
	if (kind == CH_REQ_HEAD) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (kind == CH_REQ_PUT) {
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, r);
	} else if (kind == CH_REQ_DELETE) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
	}
	return 0;
}

void ch_req_release(struct ch_req *r)
{
	free(r->url);
	free(r->key_url);
	r->url = r->key_url = NULL;
}

void ch_req_arm(struct ch_req *r)
{
	r->status = 0;
	r->body_len = 0;
	r->body[0] = '\0';
	r->curl_msg[0] = '\0';
	r->sink_failed = 0;
	r->range_done = 0;
	const char *range = NULL;
	if (r->kind == CH_REQ_PUT) {
		r->src_pos = 0;
		curl_easy_setopt(r->h, CURLOPT_INFILESIZE_LARGE,
				 (curl_off_t)r->src_size);
	} else if (r->part) {
		r->from_range = r->part->have > 0;
		if (r->from_range) {
			snprintf(r->range, sizeof(r->range), "%llu-",
				 (unsigned long long)r->part->have);
			range = r->range;
		}
	} else if (r->dst) {
		r->got = 0;
		r->skip = r->off;
		snprintf(r->range, sizeof(r->range), "%llu-%llu",
			 (unsigned long long)r->off,
			 (unsigned long long)(r->off + r->len - 1));
		range = r->range;
	} else if (r->buf) {
		r->buf->len = 0;
	}
	if (r->kind != CH_REQ_PUT)
		curl_easy_setopt(r->h, CURLOPT_RANGE, range);
}

static int transient_curl(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return 1;
	default:
		return 0;
	}
}

enum ch_req_outcome ch_req_outcome(struct ch_req *r, CURLcode c)
{
	if (r->sink_failed)
		return CH_REQ_FATAL;
	if (c == CURLE_WRITE_ERROR && r->range_done)
		c = CURLE_OK;
	if (c != CURLE_OK)
		return transient_curl(c) ? CH_REQ_RETRY : CH_REQ_FATAL;
	curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &r->status);
	long s = r->status;
	if (is_2xx(s))
		return CH_REQ_OK;
	if (s == 404 && !strstr(r->body, "<Code>NoSuchBucket</Code>"))
		return CH_REQ_MISSING;
	/* 501 Not Implemented: the method, asked again, stays unknown */
	if (s == 408 || s == 429 || (s >= 500 && s != 501))
		return CH_REQ_RETRY;
	return CH_REQ_FATAL;
}

void ch_req_explain(struct ch_req *r)
{
	if (r->kind != CH_REQ_HEAD || r->st->kind != CH_STORE_S3 ||
	    r->body_len > 0 || is_2xx(r->status) || r->status == 404)
		return;
	long status = r->status;
	curl_easy_setopt(r->h, CURLOPT_NOBODY, 0L);
	curl_easy_setopt(r->h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(r->h, CURLOPT_RANGE, "0-0");
	r->kind = CH_REQ_GET;
	r->status = 0;
	/* a body with 2xx goes nowhere: no sink is set */
	if (curl_easy_perform(r->h) != CURLE_OK || is_2xx(r->status))
		r->body_len = 0;
	r->kind = CH_REQ_HEAD;
	r->status = status;
}

/* The text between <tag> and </tag> in an S3 error body, or "". */
static void xml_field(const char *body, const char *tag, char *out,
		      size_t cap)
{
	char open[32], close[32];
	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	out[0] = '\0';
	const char *a = strstr(body, open);
	const char *b = a ? strstr(a, close) : NULL;
	if (!b)
		return;
	a += strlen(open);
	size_t n = (size_t)(b - a) < cap - 1 ? (size_t)(b - a) : cap - 1;
	memcpy(out, a, n);
	out[n] = '\0';
}

/* Which setting an S3 error code points at: a variable, or the profile
 * or endpoint the credentials came from. */
static const char *s3_hint(const struct ch_store *st, const char *code)
{
	if (st->s3_cred_source)
		return st->s3_cred_source;
	if (!strcmp(code, "InvalidAccessKeyId"))
		return "AWS_ACCESS_KEY_ID";
	if (!strcmp(code, "SignatureDoesNotMatch"))
		return "AWS_SECRET_ACCESS_KEY";
	if (!strcmp(code, "InvalidToken") || !strcmp(code, "ExpiredToken") ||
	    !strcmp(code, "TokenRefreshRequired"))
		return "AWS_SESSION_TOKEN";
	return "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN";
}

static const char *verb(enum ch_req_kind k)
{
	static const char *const verbs[] = {"HEAD", "GET", "PUT", "DELETE"};
	return verbs[k];
}

static void status_error(struct ch_req *r, const char *tail,
			 struct ch_error *err)
{
	char code[64], msg[256], why[400] = "";
	xml_field(r->body, "Code", code, sizeof(code));
	xml_field(r->body, "Message", msg, sizeof(msg));
	if (*code)
		snprintf(why, sizeof(why), ", %s%s%s", code, *msg ? ": " : "",
			 msg);
	long s = r->status;
	int s3 = r->st->kind == CH_STORE_S3;
	if ((s == 401 || s == 403) && s3)
		ch_error_set(err,
			     "access denied (%ld%s) for %s: check the "
			     "credentials (%s)%s",
			     s, why, r->key_url, s3_hint(r->st, code), tail);
	else if (s == 401 || s == 403)
		ch_error_set(err,
			     "access denied (%ld) for %s: check the server's "
			     "access rules%s%s",
			     s, r->key_url,
			     s == 401 ? " and the user and password in the URL"
				      : "",
			     tail);
	else if (s == 404 && !strcmp(code, "NoSuchBucket"))
		ch_error_set(err,
			     "no such bucket '%s' (404%s) for %s: check the "
			     "URL and AWS_ENDPOINT_URL",
			     r->st->s3_bucket, why, r->key_url);
	else if (s == 404)
		ch_error_set(err, "no such object: %s", r->key_url);
	else if ((s == 405 || s == 501) &&
		 (r->kind == CH_REQ_PUT || r->kind == CH_REQ_DELETE))
		ch_error_set(err, "cannot %s %s: HTTP %ld: the server does not "
			     "accept %s (no WebDAV?)", verb(r->kind), r->key_url,
			     s, verb(r->kind));
	else if (s3 && (!strcmp(code, "AuthorizationHeaderMalformed") ||
			!strcmp(code, "PermanentRedirect")))
		ch_error_set(err, "cannot %s %s: HTTP %ld%s: check AWS_REGION",
			     verb(r->kind), r->key_url, s, why);
	else
		ch_error_set(err, "cannot %s %s: HTTP %ld%s%s", verb(r->kind),
			     r->key_url, s, why, tail);
}

void ch_req_error(struct ch_req *r, CURLcode c, int attempts,
		  struct ch_error *err)
{
	char tail[48] = "";
	if (attempts > 1)
		snprintf(tail, sizeof(tail), " (after %d attempts)", attempts);
	if (r->sink_failed) {
		if (err)
			*err = r->sink_err;
	} else if (c != CURLE_OK && !(c == CURLE_WRITE_ERROR && r->range_done)) {
		ch_error_set(err, "cannot %s %s: %s%s", verb(r->kind),
			     r->key_url,
			     r->curl_msg[0] ? r->curl_msg : curl_easy_strerror(c),
			     tail);
	} else {
		status_error(r, tail, err);
	}
}
