/* remote/ref.c - a dataset version named on the command line: a folder, a
 * manifest file, or REMOTE[@TAG|@ID]. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chute/store.h"
#include "chute/version.h"
#include "chute/remote.h"
#include "common/internal.h"
#include "remote/cache.h"
#include "remote/names.h"
#include "remote/url.h"

/* An http remote's query (a token), which REMOTE@TAG?QUERY puts after
 * the version and which stays with the remote; NULL for others (a
 * folder's '?' is its path's). */
static const char *url_query(const char *text)
{
	if (strncmp(text, "http", 4) != 0 || !strstr(text, "://"))
		return NULL;
	return strchr(strstr(text, "://") + 3, '?');
}

/* Where the version starts in REMOTE[@TAG|@ID][?QUERY]: the last '@'
 * after the last '/' and before the query (user@host stays put), or
 * NULL. */
static const char *version_at(const char *text)
{
	const char *query = url_query(text);
	size_t end = query ? (size_t)(query - text) : strlen(text);
	const char *slash = memrchr(text, '/', end);
	const char *from = slash ? slash : text;
	return memrchr(from, '@', (size_t)(text + end - from));
}

/* REMOTE[@TAG|@ID], REMOTE a store url. */
static int parse_url(const char *text, struct ch_ref *ref,
		     struct ch_error *err)
{
	memset(ref, 0, sizeof(*ref));
	if (!(ref->text = strdup(text)))
		goto oom;
	if (!ch_ref_is_remote(text)) {
		if (!(ref->path = strdup(text)))
			goto oom;
		return 0;
	}
	const char *query = url_query(text);
	size_t end = query ? (size_t)(query - text) : strlen(text);
	const char *at = version_at(text);
	size_t n = at ? (size_t)(at - text) : end;
	if (asprintf(&ref->remote, "%.*s%s", (int)n, text,
		     query ? query : "") < 0) {
		ref->remote = NULL;
		goto oom;
	}
	if (!(ref->at = at ? strndup(at + 1, end - n - 1) : strdup("latest")))
		goto oom;
	if (!*ref->at) {
		ch_ref_release(ref);
		return ch_error_usage(err, "'%s': nothing after '@' (give a "
				      "tag or a version id)", text);
	}
	return 0;
oom:
	ch_ref_release(ref);
	return ch_error_nomem(err);
}

/* Parses as text, or as the url a remote name in text stands for. */
static int parse_named(const char *text, const char *dataset_dir,
		       struct ch_ref *ref, struct ch_error *err)
{
	char *url;
	memset(ref, 0, sizeof(*ref));
	if (ch_ref_name_url(text, dataset_dir, &url, err) < 0)
		return -1;
	int rc = parse_url(url ? url : text, ref, err);
	if (rc == 0 && url) {
		free(ref->text); /* messages say what was typed */
		if (!(ref->text = strdup(text))) {
			ch_ref_release(ref);
			rc = ch_error_nomem(err);
		}
	}
	free(url);
	return rc;
}

int ch_ref_parse(const char *text, struct ch_ref *ref, struct ch_error *err)
{
	int rc = ch_remote_may_be_name(text)
			 ? parse_named(text, NULL, ref, err)
			 : parse_url(text, ref, err);
	if (rc == 0 && ref->remote && ch_remote_there(ref->remote, err) < 0) {
		ch_ref_release(ref);
		return -1;
	}
	return rc;
}

/* store (a url, maybe with a query) with the version typed after a
 * remote's name, "@TAG[?QUERY]" or NULL, as one REMOTE@TAG?QUERY: the
 * queries joined by '&'. */
static int join_version(const char *store, const char *at, char **full)
{
	const char *sq = url_query(store);
	const char *tq = at ? strchr(at, '?') : NULL;
	int nstore = (int)(sq ? (size_t)(sq - store) : strlen(store));
	int ntag = (int)(at ? (tq ? (size_t)(tq - at) : strlen(at)) : 0);
	if (asprintf(full, "%.*s%.*s%s%s%s", nstore, store, ntag,
		     at ? at : "", sq ? sq : "", sq && tq ? "&" : "",
		     tq ? tq + (sq != NULL) : "") < 0) {
		*full = NULL;
		return -1;
	}
	return 0;
}

/* The remote part resolved as every command's REMOTE is (ch_remote_arg),
 * the version after it parsed as any reference's. */
int ch_ref_parse_remote(const char *text, const char *dataset_dir,
			struct ch_ref *ref, struct ch_error *err)
{
	const char *at = text ? version_at(text) : NULL;
	char *remote = NULL, *url = NULL, *store = NULL, *full = NULL;
	int rc = -1;
	memset(ref, 0, sizeof(*ref));
	if (text && !(remote = strndup(text, at ? (size_t)(at - text)
						: strlen(text))))
		return ch_error_nomem(err);
	if (remote && !*remote)
		ch_error_usage(err, "'%s': no remote before '@'", text);
	else if (ch_remote_arg(remote, dataset_dir, CH_REMOTE_READ, &url,
			       err) == 0) {
		if (!(store = ch_remote_store_url(url)) ||
		    join_version(store, at, &full) < 0) {
			full = NULL;
			ch_error_nomem(err);
		}
		else
			rc = parse_url(full, ref, err);
	}
	if (rc == 0 && text) { /* messages say what was typed */
		free(ref->text);
		if (!(ref->text = strdup(text))) {
			ch_ref_release(ref);
			rc = ch_error_nomem(err);
		}
	}
	free(remote);
	free(url);
	free(store);
	free(full);
	return rc;
}

void ch_ref_release(struct ch_ref *ref)
{
	free(ref->text);
	free(ref->remote);
	free(ref->at);
	free(ref->path);
	memset(ref, 0, sizeof(*ref));
}

static int remote_version(const struct ch_ref *ref, const char *id,
			  struct ch_manifest *m, struct ch_error *err)
{
	struct ch_store *st;
	struct ch_buf raw = {0};
	char resolved[33];
	int rc;
	if (ch_store_open(&st, ref->remote, NULL, err) < 0)
		return -1;
	rc = id ? 0 : ch_remote_resolve(st, ref->at, resolved, err);
	if (rc == 0)
		rc = ch_remote_get_version(st, id ? id : resolved, m, &raw,
					   err);
	ch_buf_release(&raw);
	ch_store_close(st);
	return rc;
}

int ch_ref_load(const struct ch_ref *ref, struct ch_manifest *m,
		struct ch_error *err)
{
	if (ref->remote)
		return remote_version(ref, NULL, m, err) == 0 ? 0 : -1;
	char *man = ch_manifest_path(ref->path);
	if (!man)
		return ch_error_nomem(err);
	int rc = ch_manifest_read(m, man, err);
	free(man);
	return rc;
}

int ch_ref_load_version(const struct ch_ref *ref, const char *id,
			struct ch_manifest *m, struct ch_error *err)
{
	if (ref->remote)
		return remote_version(ref, id, m, err);
	char *dir = ch_dataset_dir(ref->path);
	if (!dir)
		return ch_error_nomem(err);
	int rc = ch_history_load(dir, id, m, err);
	free(dir);
	return rc;
}

/* ------------------------------------------------------------------ */
/* A remote dataset: its files come through the shard cache.            */

struct remote_source {
	struct ch_store *st;
	struct ch_remote_cache *cache;
	const struct ch_manifest *m; /* the dataset's */
	pthread_mutex_t lock;	     /* guards order and random */
	size_t *order, n, ahead;
	int random;		     /* reads go all over: use ranges */
	uint64_t wait_ns, ranges, range_bytes; /* atomic: from all readers */
};

/* Nanoseconds since t0 (a ch_now()). */
static uint64_t ns_since(double t0)
{
	return (uint64_t)((ch_now() - t0) * 1e9);
}

static struct ch_cache_file shard_file(const struct ch_manifest *m, size_t k)
{
	return (struct ch_cache_file){m->shards[k].path, m->shards[k].bytes,
				      m->shards[k].hash};
}

/* Queues the `ahead` shards that follow position p of the order. */
static void prefetch_after(struct remote_source *rs, size_t p)
{
	struct ch_cache_file f[64];
	struct ch_error e = {0};
	size_t k = 0;
	for (size_t i = p; i < rs->n && k < rs->ahead && k < 64; i++)
		f[k++] = shard_file(rs->m, rs->order[i]);
	if (k)
		ch_remote_cache_prefetch(rs->cache, f, k, &e);
}

static int source_local(void *arg, const char *rel, uint64_t bytes,
			struct ch_hash128 hash, char **path,
			struct ch_error *err)
{
	struct remote_source *rs = arg;
	struct ch_cache_file f = {rel, bytes, hash};
	pthread_mutex_lock(&rs->lock);
	for (size_t i = 0; i < rs->n; i++)
		if (rs->m->shards[rs->order[i]].path == rel) {
			prefetch_after(rs, i + 1);
			break;
		}
	pthread_mutex_unlock(&rs->lock);
	double t0 = ch_now();
	int rc = ch_remote_cache_get(rs->cache, &f, path, err);
	__atomic_fetch_add(&rs->wait_ns, ns_since(t0), __ATOMIC_RELAXED);
	return rc;
}

static void source_plan(void *arg, const size_t *order, size_t n,
			size_t ahead)
{
	struct remote_source *rs = arg;
	size_t *copy = NULL;
	if (order && !(copy = malloc((n ? n : 1) * sizeof(*copy))))
		return; /* a hint only */
	if (order)
		memcpy(copy, order, n * sizeof(*copy));
	pthread_mutex_lock(&rs->lock);
	free(rs->order);
	rs->order = copy;
	rs->n = order ? n : 0;
	rs->ahead = ahead;
	rs->random = !order;
	prefetch_after(rs, 0);
	pthread_mutex_unlock(&rs->lock);
}

/* A shard read by range requests, straight from the remote. */
struct range_reader {
	struct remote_source *rs;
	char *key;
};

static int range_read(void *arg, void *buf, size_t n, uint64_t off,
		      struct ch_error *err)
{
	struct range_reader *rr = arg;
	struct remote_source *rs = rr->rs;
	double t0 = ch_now();
	int rc = ch_store_get_range(rs->st, rr->key, off, n, buf, err);
	struct ch_error e;
	if (rc < 0 && err && err->kind == CH_ERR_IO &&
	    ch_store_stat(rs->st, rr->key, NULL, &e) == 0)
		err->kind = CH_ERR_DATA; /* the manifest names it: missing */
	__atomic_fetch_add(&rs->wait_ns, ns_since(t0), __ATOMIC_RELAXED);
	__atomic_fetch_add(&rs->ranges, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&rs->range_bytes, n, __ATOMIC_RELAXED);
	return rc;
}

static void range_release(void *arg)
{
	struct range_reader *rr = arg;
	free(rr->key);
	free(rr);
}

static int source_ranged(void *arg, size_t s, struct ch_byte_source *src,
			 struct ch_error *err)
{
	struct remote_source *rs = arg;
	const struct ch_manifest_shard *ms = &rs->m->shards[s];
	struct range_reader *rr;
	int random;
	pthread_mutex_lock(&rs->lock);
	random = rs->random;
	pthread_mutex_unlock(&rs->lock);
	if (!random || ch_remote_cache_has(rs->cache, ms->path, ms->bytes,
					  ms->hash))
		return 0; /* a whole copy is better when there is one */
	if (!(rr = calloc(1, sizeof(*rr))) ||
	    !(rr->key = ch_remote_cas_key(ms->hash, ms->path))) {
		free(rr);
		return ch_error_nomem(err);
	}
	rr->rs = rs;
	*src = (struct ch_byte_source){range_read, range_release, rr,
				       ms->bytes};
	return 1;
}

static void source_release(void *arg)
{
	struct remote_source *rs = arg;
	ch_remote_cache_free(rs->cache); /* joins its prefetch thread */
	ch_store_close(rs->st);
	pthread_mutex_destroy(&rs->lock);
	free(rs->order);
	free(rs);
}

static void source_stats(void *arg, struct ch_fetch_stats *out)
{
	struct remote_source *rs = arg;
	struct ch_cache_stats cs;
	ch_remote_cache_stats(rs->cache, &cs);
	out->files = cs.misses;
	out->file_bytes = cs.fetched_bytes;
	out->cache_hits = cs.hits;
	out->ranges = __atomic_load_n(&rs->ranges, __ATOMIC_RELAXED);
	out->range_bytes = __atomic_load_n(&rs->range_bytes, __ATOMIC_RELAXED);
	out->wait_s = (double)__atomic_load_n(&rs->wait_ns, __ATOMIC_RELAXED) /
		      1e9;
}

static void source_done(void *arg, const char *rel, struct ch_hash128 hash)
{
	struct remote_source *rs = arg;
	ch_remote_cache_put(rs->cache, rel, hash);
}

static const struct ch_dataset_source remote_files = {
	source_local, source_plan, source_release, source_ranged, source_stats,
	source_done,
};

static int open_remote(const struct ch_ref *ref, const char *cache_dir,
		       uint64_t cache_bytes, struct ch_dataset *ds,
		       struct ch_error *err)
{
	struct remote_source *rs = calloc(1, sizeof(*rs));
	struct ch_buf raw = {0};
	char id[33];
	memset(ds, 0, sizeof(*ds));
	if (!rs)
		return ch_error_nomem(err);
	pthread_mutex_init(&rs->lock, NULL);
	rs->m = &ds->manifest;
	ds->source = &remote_files;
	ds->source_arg = rs;
	if (ch_store_open(&rs->st, ref->remote, NULL, err) < 0 ||
	    ch_remote_cache_open(&rs->cache, rs->st, cache_dir,
				cache_bytes ? cache_bytes
					    : (uint64_t)CH_CACHE_DEFAULT_GB << 30,
				err) < 0)
		goto fail;
	/* an id names the same bytes forever: the cache's copy will do */
	if (ch_remote_resolve(rs->st, ref->at, id, err) != 0)
		goto fail;
	int cached = strcmp(id, ref->at) == 0
			     ? ch_remote_cache_load_version(rs->cache, id,
							   &ds->manifest, err)
			     : 1;
	if (cached < 0)
		goto fail;
	if (cached == 1 &&
	    (ch_remote_get_version(rs->st, id, &ds->manifest, &raw, err) != 0 ||
	     ch_remote_cache_save_version(rs->cache, id, &raw, err) < 0))
		goto fail;
	ds->root = strdup(ref->remote);
	ds->shards = calloc(ds->manifest.nshards + 1, sizeof(*ds->shards));
	if (!ds->root || !ds->shards) {
		ch_error_nomem(err);
		goto fail;
	}
	ch_buf_release(&raw);
	return 0;
fail:
	ch_buf_release(&raw);
	ch_dataset_release(ds); /* releases rs too */
	return -1;
}

int ch_ref_open_dataset(const struct ch_ref *ref, const char *cache_dir,
			uint64_t cache_bytes, struct ch_dataset *ds,
			struct ch_error *err)
{
	if (!ref->remote)
		return ch_dataset_open(ds, ref->path, err);
	return open_remote(ref, cache_dir, cache_bytes, ds, err);
}
