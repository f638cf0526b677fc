/* pack/source_url.c - http(s):// and s3:// URLs as chute pack sources: a
 * file, or an archive (a WebDataset tar shard, say) unpacked while it
 * downloads, through the store layer: several range requests in flight
 * ahead of the reader, each retried like any other, and no local copy
 * but the catalog's spool of member data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pack/catalog.h"
#include "chute/store.h"

enum { PROBE_BYTES = 64 << 10, AHEAD = 4, CHUNK = 4 << 20 };

int ch_source_is_url(const char *src)
{
	return !strncmp(src, "http://", 7) || !strncmp(src, "https://", 8) ||
	       !strncmp(src, "s3://", 5);
}

static ssize_t stream_read(void *arg, void *buf, size_t n,
			   struct ch_error *err)
{
	return ch_store_stream_read(arg, buf, n, err);
}

/* Is the object an archive?  Decided by its first bytes, as for files. */
static int probe(struct ch_store *st, const char *key, uint64_t size,
		 int *archive, struct ch_error *err)
{
	size_t n = size < PROBE_BYTES ? (size_t)size : PROBE_BYTES;
	uint8_t *head = malloc(n ? n : 1);
	int rc = -1;
	if (!head)
		return ch_error_nomem(err);
	if (ch_store_get_range(st, key, 0, n, head, err) == 0) {
		*archive = n > 0 ? ch_source_is_archive_data(head, n, err) : 0;
		rc = *archive < 0 ? -1 : 0;
	}
	free(head);
	return rc;
}

/* Splits url into the store's url and the object's key (its last part).
 * An http(s) URL's query (a pre-signed URL's signature) stays with the
 * store, which sends it with the request: the key is the file's name. */
static int split_url(const char *url, char **base, char **key,
		     struct ch_error *err)
{
	const char *host = strstr(url, "://") + 3;
	const char *q = strncmp(url, "s3://", 5) ? strchr(host, '?') : NULL;
	size_t end = q ? (size_t)(q - url) : strlen(url);
	const char *slash = memrchr(host, '/', (size_t)(url + end - host));
	if (!slash || slash + 1 == url + end) {
		char *shown = ch_url_redact(url);
		ch_error_set(err, "'%s' names no file: give the URL of a file "
			     "or an archive", shown ? shown : "the URL");
		free(shown);
		return -1;
	}
	if (asprintf(base, "%.*s%s", (int)(slash - url), url, q ? q : "") < 0)
		*base = NULL;
	*key = strndup(slash + 1, (size_t)(url + end - slash - 1));
	if (!*base || !*key) {
		free(*base);
		free(*key);
		*base = *key = NULL;
		return ch_error_nomem(err);
	}
	return 0;
}

int ch_source_url_scan(struct ch_catalog *c, const char *url,
			  struct ch_error *err)
{
	struct ch_store *st = NULL;
	struct ch_store_stream *in = NULL;
	char *base = NULL, *key = NULL, *name = NULL;
	uint64_t size = 0;
	int archive = 0, rc = -1, there;
	if (split_url(url, &base, &key, err) < 0)
		return -1;
	if (ch_store_open(&st, base, NULL, err) < 0)
		goto out;
	if (!(name = ch_store_key_url(st, key))) {
		ch_error_nomem(err);
		goto out;
	}
	if ((there = ch_store_stat(st, key, &size, err)) <= 0) {
		if (there == 0)
			ch_error_set(err, "no such object: %s", name);
		goto out;
	}
	if (probe(st, key, size, &archive, err) < 0 ||
	    ch_store_stream_open(&in, st, key, size, AHEAD, CHUNK, err) < 0)
		goto out;
	rc = archive ? ch_source_archive_scan_from(c, name, stream_read, in,
						   err)
		     : ch_source_file_scan_from(c, name, key, stream_read, in,
						err);
out:
	ch_store_stream_close(in);
	ch_store_close(st);
	free(name);
	free(base);
	free(key);
	return rc;
}
