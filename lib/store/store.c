/* store/store.c - opening a store from its URL (the backend chosen by its
 * scheme), checking keys, and the calls handed to the backend.  What the
 * backends share among themselves is store/transfer.c's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/aws_config.h"
#include "store/backend.h"
#include "store/testing.h"

static char *dup_trimmed(const char *s)
{
	size_t n = strlen(s);
	while (n > 1 && s[n - 1] == '/')
		n--;
	return strndup(s, n);
}

static int has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* s3://BUCKET[/PREFIX] with the credentials, the region and the endpoint
 * found as the AWS CLI finds them (store/aws_config.c). */
static int parse_s3(struct ch_store *st, struct ch_error *err)
{
	const char *rest = st->url + strlen("s3://");
	const char *slash = strchr(rest, '/');
	size_t blen = slash ? (size_t)(slash - rest) : strlen(rest);
	const char *prefix = slash ? slash + 1 : "";
	if (blen == 0)
		return ch_error_set(err, "no bucket in '%s' (s3://BUCKET/PREFIX)",
				    st->url);
	struct ch_aws aws;
	if (ch_aws_load(&aws, st->url, err) < 0)
		return -1;
	st->s3_key_id = aws.key_id;
	st->s3_secret = aws.secret;
	st->s3_token = aws.token;
	st->s3_region = aws.region;
	st->s3_cred_source = aws.cred_source;
	const char *region = aws.region;
	st->s3_bucket = strndup(rest, blen);
	if (!st->s3_bucket) {
		free(aws.endpoint);
		return ch_error_nomem(err);
	}

	/* An endpoint (s3rver, MinIO, ...) gets path-style URLs; AWS itself
	 * virtual-hosted ones, except for dotted bucket names, which would
	 * not match its certificate. */
	int has_endpoint = aws.endpoint != NULL;
	char *ep = has_endpoint ? dup_trimmed(aws.endpoint) : NULL;
	free(aws.endpoint);
	size_t cap = (ep ? strlen(ep) : strlen(region) + 64) + blen +
		     strlen(prefix) + 8;
	st->base = malloc(cap);
	if (!st->base || (has_endpoint && !ep)) {
		free(ep);
		return ch_error_nomem(err);
	}
	if (ep)
		snprintf(st->base, cap, "%s/%.*s", ep, (int)blen, rest);
	else if (memchr(rest, '.', blen))
		snprintf(st->base, cap, "https://s3.%s.amazonaws.com/%.*s",
			 region, (int)blen, rest);
	else
		snprintf(st->base, cap, "https://%.*s.s3.%s.amazonaws.com",
			 (int)blen, rest, region);
	if (*prefix) {
		size_t n = strlen(st->base);
		snprintf(st->base + n, cap - n, "/%s", prefix);
		/* st->url has no trailing '/', so neither has the prefix */
	}
	free(ep);
	return 0;
}

static int is_http(const char *url)
{
	return has_prefix(url, "http://") || has_prefix(url, "https://");
}

/* An http(s) URL's query ("?X-Amz-Signature=..." of a pre-signed URL, a
 * token) goes with every request as it is; the '/' trimmed from the end
 * is the path's.  st->url becomes PATH?QUERY again. */
static int split_query(struct ch_store *st, struct ch_error *err)
{
	char *q = strchr(strstr(st->url, "://") + 3, '?');
	if (!q)
		return (st->base = strdup(st->url)) ? 0 : ch_error_nomem(err);
	*q = '\0';
	st->base = dup_trimmed(st->url);
	st->query = q[1] ? strdup(q + 1) : NULL;
	char *url = NULL;
	if (!st->base || (q[1] && !st->query) ||
	    asprintf(&url, "%s%s%s", st->base, q[1] ? "?" : "", q + 1) < 0)
		return ch_error_nomem(err);
	free(st->url);
	st->url = url;
	return 0;
}

/* Sets the kind, st->base and st->ops from st->url. */
static int parse_url(struct ch_store *st, struct ch_error *err)
{
	const char *u = st->url;
	if (is_http(u)) {
		st->kind = CH_STORE_HTTP;
		st->ops = &ch_store_curl_ops;
		return split_query(st, err);
	} else if (has_prefix(u, "s3://")) {
		st->kind = CH_STORE_S3;
		st->ops = &ch_store_curl_ops;
		return parse_s3(st, err);
	} else if (has_prefix(u, "file://")) {
		const char *p = u + strlen("file://");
		if (has_prefix(p, "localhost/"))
			p += strlen("localhost");
		if (*p != '/')
			return ch_error_set(err,
					    "'%s' is not a file:///PATH URL", u);
		st->kind = CH_STORE_DIR;
		st->ops = &ch_store_file_ops;
		st->base = strdup(p);
	} else if (strstr(u, "://")) {
		return ch_error_set(err,
				    "unknown kind of remote '%s' (a folder, "
				    "file://, http://, https:// or s3://)",
				    u);
	} else {
		st->kind = CH_STORE_DIR;
		st->ops = &ch_store_file_ops;
		st->base = strdup(u);
	}
	return st->base ? 0 : ch_error_nomem(err);
}

enum { MAX_RETRIES = 100 };

/* The retries a caller left to the default: $CHUTE_RETRIES (0 to 100),
 * else 5; -1 for none, as in ch_store_opts. */
static int default_retries(int *retries, struct ch_error *err)
{
	const char *v = getenv("CHUTE_RETRIES");
	char *end;
	*retries = 5;
	if (!v || !*v)
		return 0;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (*v < '0' || *v > '9' || *end || errno || n > MAX_RETRIES)
		return ch_error_set(err,
				    "invalid value '%s' for CHUTE_RETRIES: "
				    "expected a whole number from 0 to %d",
				    v, MAX_RETRIES);
	*retries = n ? (int)n : -1;
	return 0;
}

static int fill_defaults(struct ch_store_opts *o, struct ch_error *err)
{
	if (o->retries == 0 && default_retries(&o->retries, err) < 0)
		return -1;
	if (o->retries < 0) /* asked for none */
		o->retries = 0;
	if (o->backoff_ms <= 0)
		o->backoff_ms = 250;
	if (o->connect_timeout_s <= 0)
		o->connect_timeout_s = 10;
	if (o->stall_timeout_s <= 0)
		o->stall_timeout_s = 30;
	return 0;
}

/* st->url is for messages, st->base and st->query (already set) for
 * requests. */
static int hide_password(struct ch_store *st, struct ch_error *err)
{
	char *shown = ch_url_redact(st->url);
	if (!shown)
		return ch_error_nomem(err);
	free(st->url);
	st->url = shown;
	return 0;
}

int ch_store_open(struct ch_store **out, const char *url,
		  const struct ch_store_opts *opts, struct ch_error *err)
{
	*out = NULL;
	if (!url || !*url)
		return ch_error_set(err, "empty remote URL");
	struct ch_store *st = calloc(1, sizeof(*st));
	if (!st)
		return ch_error_nomem(err);
	if (opts)
		st->opts = *opts;
	if (fill_defaults(&st->opts, err) < 0)
		goto fail;
	/* a query keeps its last '/': it is trimmed from the path */
	st->url = is_http(url) && strchr(url, '?') ? strdup(url)
						    : dup_trimmed(url);
	if (!st->url) {
		ch_error_nomem(err);
		goto fail;
	}
	if (parse_url(st, err) < 0 || hide_password(st, err) < 0)
		goto fail;
	int rc = st->kind == CH_STORE_DIR ? ch_store_file_open(st, err)
					  : ch_store_curl_open(st, err);
	if (rc < 0)
		goto fail;
	*out = st;
	return 0;
fail:
	ch_store_close(st);
	return -1;
}

void ch_store_close(struct ch_store *st)
{
	if (!st)
		return;
	if (st->impl && st->ops)
		st->ops->close(st);
	free(st->url);
	free(st->base);
	free(st->query);
	free(st->s3_bucket);
	free(st->s3_region);
	free(st->s3_key_id);
	free(st->s3_secret);
	free(st->s3_token);
	free(st->s3_cred_source);
	free(st);
}

const char *ch_store_url(const struct ch_store *st)
{
	return st->url;
}

char *ch_store_key_url(const struct ch_store *st, const char *key)
{
	if (st->kind == CH_STORE_DIR)
		return ch_store_file_path(st, key);
	return ch_store_object_url(st, key);
}

/* Keys are relative, '/'-separated, without empty, "." or ".." segments
 * (a key must never reach outside the remote's root) and without control
 * characters. */
static int check_key(const char *key, struct ch_error *err)
{
	if (!key || !*key)
		return ch_error_set(err, "empty object key");
	if (key[0] == '/')
		return ch_error_set(err, "object key '%s' starts with '/'", key);
	const char *seg = key;
	for (const char *p = key;; p++) {
		if (*p && (unsigned char)*p < 0x20)
			return ch_error_set(err,
					    "object key '%s' holds a control "
					    "character",
					    key);
		if (*p && *p != '/')
			continue;
		size_t len = (size_t)(p - seg);
		if (len == 0)
			return ch_error_set(err,
					    "object key '%s' has an empty "
					    "segment",
					    key);
		if ((len == 1 && seg[0] == '.') ||
		    (len == 2 && seg[0] == '.' && seg[1] == '.'))
			return ch_error_set(err,
					    "object key '%s' holds '.' or '..'",
					    key);
		if (!*p)
			return 0;
		seg = p + 1;
	}
}

static int check_jobs(const struct ch_store_job *jobs, size_t n,
		      int need_path, struct ch_error *err)
{
	for (size_t i = 0; i < n; i++) {
		if (check_key(jobs[i].key, err) < 0)
			return -1;
		if (need_path && (!jobs[i].path || !*jobs[i].path))
			return ch_error_set(err, "no local path for object '%s'",
					    jobs[i].key);
	}
	return 0;
}

int ch_store_stat(struct ch_store *st, const char *key, uint64_t *size,
		  struct ch_error *err)
{
	if (check_key(key, err) < 0)
		return -1;
	return st->ops->stat(st, key, size, err);
}

int ch_store_get(struct ch_store *st, const char *key, size_t max,
		 struct ch_buf *out, struct ch_error *err)
{
	if (check_key(key, err) < 0)
		return -1;
	return st->ops->get(st, key, max, out, err);
}

int ch_store_get_range(struct ch_store *st, const char *key, uint64_t off,
		       size_t len, void *dst, struct ch_error *err)
{
	if (check_key(key, err) < 0)
		return -1;
	if (len == 0)
		return 0;
	return st->ops->get_range(st, key, off, len, dst, err);
}

int ch_store_put(struct ch_store *st, const char *key, const void *data,
		 size_t size, struct ch_error *err)
{
	if (check_key(key, err) < 0)
		return -1;
	return st->ops->put(st, key, data, size, err);
}

int ch_store_put_file(struct ch_store *st, const char *key,
		      const char *path, struct ch_error *err)
{
	if (check_key(key, err) < 0)
		return -1;
	return st->ops->put_file(st, key, path, err);
}

int ch_store_stat_many(struct ch_store *st, struct ch_store_job *jobs,
		       size_t n, const struct ch_transfer_opts *o,
		       struct ch_error *err)
{
	if (check_jobs(jobs, n, 0, err) < 0)
		return -1;
	return n ? st->ops->stat_many(st, jobs, n, o, err) : 0;
}

int ch_store_get_many(struct ch_store *st, struct ch_store_job *jobs,
		      size_t n, const struct ch_transfer_opts *o,
		      struct ch_error *err)
{
	if (check_jobs(jobs, n, 1, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		jobs[i].resumed = 0;
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		jobs[i].verified = 0;
	/* what was verified is named even when another transfer failed:
	 * a rerun need not fetch it again */
	struct ch_error later;
	int rc = st->ops->get_many(st, jobs, n, o, err);
	if (ch_parts_commit(jobs, n, rc < 0 ? &later : err) < 0)
		rc = -1;
	return rc;
}

int ch_store_put_many(struct ch_store *st, struct ch_store_job *jobs,
		      size_t n, const struct ch_transfer_opts *o,
		      struct ch_error *err)
{
	if (check_jobs(jobs, n, 1, err) < 0)
		return -1;
	return n ? st->ops->put_many(st, jobs, n, o, err) : 0;
}

int ch_store_list(struct ch_store *st, const char *prefix,
		  struct ch_store_list *out, struct ch_error *err)
{
	memset(out, 0, sizeof(*out));
	if (*prefix && check_key(prefix, err) < 0)
		return -1;
	int rc = st->kind == CH_STORE_DIR
			 ? ch_store_file_list(st, prefix, out, err)
			 : ch_store_curl_list(st, prefix, out, err);
	if (rc < 0) {
		ch_store_list_release(out);
		return -1;
	}
	ch_store_list_sort(out);
	return 0;
}

int ch_store_delete(struct ch_store *st, const char *key,
		    struct ch_error *err)
{
	if (check_key(key, err) < 0)
		return -1;
	return st->kind == CH_STORE_DIR ? ch_store_file_delete(st, key, err)
					: ch_store_curl_delete(st, key, err);
}
