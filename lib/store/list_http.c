/* store/list_http.c - listing and deleting objects of an HTTP(S) or S3
 * store.  S3 lists with ListObjectsV2 (pages of up to 1000 keys, followed
 * by their continuation tokens); HTTP has no listing in the protocol, so
 * an http(s) remote is listed through nginx's JSON index (`autoindex on;
 * autoindex_format json;`), one GET a folder.  Deleting is a DELETE. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "store/http.h"

enum { PAGE_MAX = 64 << 20, MAX_DEPTH = 32 };

#define HOW_TO_LIST                                                         \
	"an http remote is listed through nginx's 'autoindex on; "          \
	"autoindex_format json;' (chute-remote(7))"

/* GETs url (not a key: a listing) into out.  Returns 0, 1 for a 404
 * (err set), -1 on failure. */
static int get_url(struct ch_store *st, const char *url, struct ch_buf *out,
		   struct ch_error *err)
{
	struct ch_req r;
	CURL *h = ch_curl_handle_take(st);
	int rc = -1;
	if (ch_req_init(&r, st, h, CH_REQ_GET, "", err) < 0)
		goto out;
	free(r.url);
	free(r.key_url);
	r.url = strdup(url);
	r.key_url = ch_url_redact(url);
	if (!r.url || !r.key_url) {
		ch_error_nomem(err);
		goto out;
	}
	curl_easy_setopt(h, CURLOPT_URL, r.url);
	r.buf = out;
	r.max = PAGE_MAX;
	enum ch_req_outcome o = ch_req_run(&r, err);
	rc = o == CH_REQ_OK ? 0 : o == CH_REQ_MISSING ? 1 : -1;
	if (rc == 0 && ch_buf_append(out, "", 1, err) < 0) /* a C string */
		rc = -1;
out:
	ch_req_release(&r);
	ch_curl_handle_give(st, h);
	return rc;
}

/* s percent-encoded for a query string: all but A-Z a-z 0-9 - . _ ~, the
 * form Signature V4 signs. */
static char *query_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *q = malloc(3 * strlen(s) + 1), *o = q;
	if (!q)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p)) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return q;
}

/* ------------------------------------------------------------------ */
/* S3: ListObjectsV2                                                    */

/* The text of the first <tag>...</tag> in [p, end), or NULL. */
static const char *xml_text(const char *p, const char *end, const char *tag,
			    size_t *len)
{
	char open[32], close[32];
	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	const char *a = strstr(p, open);
	if (!a || a >= end)
		return NULL;
	a += strlen(open);
	const char *b = strstr(a, close);
	if (!b || b > end)
		return NULL;
	*len = (size_t)(b - a);
	return a;
}

/* XML's five entities decoded, in place; returns the new length. */
static size_t xml_unescape(char *s, size_t n)
{
	static const struct { const char *ent; char c; } ents[] = {
		{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'},
		{"&quot;", '"'}, {"&apos;", '\''},
	};
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		size_t k = 0, nents = sizeof(ents) / sizeof(*ents);
		while (k < nents && strncmp(s + i, ents[k].ent,
					    strlen(ents[k].ent)) != 0)
			k++;
		if (s[i] == '&' && k < nents) {
			s[o++] = ents[k].c;
			i += strlen(ents[k].ent);
		} else {
			s[o++] = s[i++];
		}
	}
	return o;
}

/* "2026-12-01T10:00:00.000Z" as seconds since 1970, or 0. */
static int64_t iso_time(const char *s)
{
	struct tm tm = {0};
	if (sscanf(s, "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon,
		   &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm);
}

/* The part of a ListObjectsV2 answer between <Contents> and its end. */
static int s3_object(const char *p, const char *end, size_t skip,
		     struct ch_store_list *out, struct ch_error *err)
{
	size_t klen, slen, tlen;
	const char *key = xml_text(p, end, "Key", &klen);
	const char *size = xml_text(p, end, "Size", &slen);
	const char *time = xml_text(p, end, "LastModified", &tlen);
	if (!key || !size || !time)
		return ch_error_set(err, "a ListObjectsV2 answer without Key, "
				    "Size or LastModified");
	char *k = strndup(key, klen);
	if (!k)
		return ch_error_nomem(err);
	klen = xml_unescape(k, klen);
	int rc = 0;
	if (klen > skip) /* not the prefix's own "folder" object */
		rc = ch_store_list_add(out, k + skip, klen - skip,
				       strtoull(size, NULL, 10),
				       iso_time(time), err);
	free(k);
	return rc;
}

/* One page: its objects to out, its continuation token (malloc'd) to
 * *next, NULL after the last page. */
static int s3_page(const char *xml, size_t skip, struct ch_store_list *out,
		   char **next, struct ch_error *err)
{
	const char *end = xml + strlen(xml), *p = xml;
	size_t len;
	*next = NULL;
	if (!strstr(xml, "<ListBucketResult"))
		return ch_error_set(err, "the answer to ListObjectsV2 is not a "
				    "ListBucketResult");
	while ((p = strstr(p, "<Contents>"))) {
		const char *stop = strstr(p, "</Contents>");
		if (!stop)
			stop = end;
		if (s3_object(p, stop, skip, out, err) < 0)
			return -1;
		p = stop;
	}
	const char *trunc = xml_text(xml, end, "IsTruncated", &len);
	if (!trunc || strncmp(trunc, "true", 4) != 0)
		return 0;
	const char *tok = xml_text(xml, end, "NextContinuationToken", &len);
	if (!tok || !len)
		return ch_error_set(err, "a truncated ListObjectsV2 answer "
				    "without NextContinuationToken");
	*next = strndup(tok, len);
	if (*next)
		xml_unescape(*next, strlen(*next));
	return *next ? 0 : ch_error_nomem(err);
}

/* The store's prefix inside its bucket (from s3://BUCKET/PREFIX), "" when
 * none. */
static const char *s3_prefix(const struct ch_store *st)
{
	const char *slash = strchr(st->url + strlen("s3://"), '/');
	return slash ? slash + 1 : "";
}

static int s3_list(struct ch_store *st, const char *prefix,
		   struct ch_store_list *out, struct ch_error *err)
{
	const char *pre = s3_prefix(st);
	size_t blen = strlen(st->base) - (*pre ? strlen(pre) + 1 : 0);
	char *full = NULL, *esc = NULL, *token = NULL, *url = NULL;
	struct ch_buf page = {0};
	int rc = -1;
	/* keys in the bucket: PRE/PREFIX/..., and what to cut off them */
	if (asprintf(&full, "%s%s%s%s", pre, *pre ? "/" : "", prefix,
		     *prefix ? "/" : "") < 0 ||
	    !(esc = query_escape(full))) {
		ch_error_nomem(err);
		goto out;
	}
	size_t skip = strlen(pre) + (*pre ? 1 : 0);
	do {
		char *tok = token ? query_escape(token) : NULL;
		free(url);
		/* parameters in the sorted order Signature V4 signs them */
		if ((token && !tok) ||
		    asprintf(&url, "%.*s/?%s%s%slist-type=2&prefix=%s",
			     (int)blen, st->base, tok ? "continuation-token=" : "",
			     tok ? tok : "", tok ? "&" : "", esc) < 0) {
			url = NULL;
			free(tok);
			ch_error_nomem(err);
			goto out;
		}
		free(tok);
		free(token);
		token = NULL;
		page.len = 0;
		int got = get_url(st, url, &page, err);
		if (got != 0)
			goto out; /* even a 404: the bucket is missing */
		if (s3_page((const char *)page.data, skip, out, &token,
			    err) < 0)
			goto out;
	} while (token);
	rc = 0;
out:
	free(full);
	free(esc);
	free(token);
	free(url);
	ch_buf_release(&page);
	return rc;
}

/* ------------------------------------------------------------------ */
/* HTTP: nginx's autoindex_format json                                  */

/* "Wed, 01 Dec 2026 10:00:00 GMT" as seconds since 1970, or 0. */
static int64_t http_time(const char *s)
{
	struct tm tm = {0};
	const char *end = s ? strptime(s, "%a, %d %b %Y %H:%M:%S", &tm) : NULL;
	return end ? (int64_t)timegm(&tm) : 0;
}

static int http_walk(struct ch_store *st, const char *key, int depth,
		     struct ch_store_list *out, struct ch_error *err);

/* One entry of a folder's index: a file to out, a folder walked. */
static int http_entry(struct ch_store *st, const char *key, json_t *e,
		      int depth, struct ch_store_list *out,
		      struct ch_error *err)
{
	const char *name = json_string_value(json_object_get(e, "name"));
	const char *type = json_string_value(json_object_get(e, "type"));
	if (!name || !type || !*name || strchr(name, '/'))
		return ch_error_set(err, "an index entry without a name or "
				    "type under %s/%s", st->url, key);
	if (name[0] == '.')
		return 0; /* as a folder store: nothing chute wrote */
	char *k = NULL;
	if (asprintf(&k, "%s%s%s", key, *key ? "/" : "", name) < 0)
		return ch_error_nomem(err);
	int rc = 0;
	if (!strcmp(type, "directory"))
		rc = http_walk(st, k, depth + 1, out, err);
	else if (!strcmp(type, "file"))
		rc = ch_store_list_add(
			out, k, strlen(k),
			(uint64_t)json_integer_value(json_object_get(e, "size")),
			http_time(json_string_value(json_object_get(e, "mtime"))),
			err);
	free(k);
	return rc;
}

static int http_walk(struct ch_store *st, const char *key, int depth,
		     struct ch_store_list *out, struct ch_error *err)
{
	struct ch_buf page = {0};
	struct ch_error why;
	json_t *index = NULL;
	char *url = NULL, *shown = NULL;
	int rc = -1;
	if (depth > MAX_DEPTH) {
		ch_error_set(err, "%s/%s is nested deeper than %d folders: not "
			     "a remote's layout", st->url, key, MAX_DEPTH);
		goto out;
	}
	if (asprintf(&url, "%s/%s%s%s%s", st->base, key, *key ? "/" : "",
		     st->query ? "?" : "", st->query ? st->query : "") < 0) {
		url = NULL;
		ch_error_nomem(err);
		goto out;
	}
	rc = get_url(st, url, &page, err);
	if (rc == 1) /* no such folder: nothing under it */
		rc = 0;
	if (rc < 0) {
		why = *err;
		ch_error_set(err, "cannot list %s (%s); %s", st->url, why.msg,
			     HOW_TO_LIST);
	}
	if (rc != 0 || !page.len)
		goto out;
	index = json_loads((const char *)page.data, 0, NULL);
	rc = -1;
	if (!json_is_array(index)) {
		shown = ch_url_redact(url);
		ch_error_set(err, "cannot list %s: the server did not answer "
			     "with a JSON index; %s",
			     shown ? shown : st->url, HOW_TO_LIST);
		goto out;
	}
	for (size_t i = 0; i < json_array_size(index); i++)
		if (http_entry(st, key, json_array_get(index, i), depth, out,
			       err) < 0)
			goto out;
	rc = 0;
out:
	json_decref(index);
	free(url);
	free(shown);
	ch_buf_release(&page);
	return rc;
}

int ch_store_curl_list(struct ch_store *st, const char *prefix,
		       struct ch_store_list *out, struct ch_error *err)
{
	if (st->kind == CH_STORE_S3)
		return s3_list(st, prefix, out, err);
	return http_walk(st, prefix, 0, out, err);
}

int ch_store_curl_delete(struct ch_store *st, const char *key,
			 struct ch_error *err)
{
	struct ch_req r;
	CURL *h = ch_curl_handle_take(st);
	int rc = -1;
	if (ch_req_init(&r, st, h, CH_REQ_DELETE, key, err) < 0)
		goto out;
	enum ch_req_outcome o = ch_req_run(&r, err);
	rc = o == CH_REQ_OK || o == CH_REQ_MISSING ? 0 : -1;
out:
	ch_req_release(&r);
	ch_curl_handle_give(st, h);
	return rc;
}
