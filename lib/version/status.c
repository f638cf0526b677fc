/*
 * version/status.c - a dataset folder against its manifest (chute status).
 *
 * Each file the manifest names is stat'ed; the stat cache (chute/version.h)
 * vouches for those whose size, mtime and inode are what it recorded with
 * the hash the manifest wants, and the others are hashed.  Then shards/
 * and splits/ are walked for files the manifest does not name.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chute/version.h"
#include "common/counter.h"
#include "common/internal.h"

struct status_run {
	const struct ch_status_opts *o;
	struct ch_status_result *res;
	const char *root;
	struct ch_statcache cache;
	const char **named; /* the manifest's paths, sorted */
	size_t nnamed;
	size_t cap;	    /* of res->items */
	struct ch_counter progress;
};

static int cancelled(const struct status_run *r)
{
	return r->o->cancel && *r->o->cancel;
}

/* Takes why (may be NULL). */
static int add_item(struct status_run *r, enum ch_status_kind kind,
		    const char *path, char *why, struct ch_error *err)
{
	struct ch_status_result *res = r->res;
	struct ch_status_item *it;

	if (res->nitems == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		struct ch_status_item *v = realloc(res->items,
						   cap * sizeof(*v));
		if (!v) {
			free(why);
			return ch_error_nomem(err);
		}
		res->items = v;
		r->cap = cap;
	}
	it = &res->items[res->nitems];
	it->kind = kind;
	it->why = why;
	it->path = strdup(path);
	if (!it->path) {
		free(why);
		return ch_error_nomem(err);
	}
	res->nitems++;
	return 0;
}

static char *format(const char *fmt, uint64_t a, uint64_t b)
{
	char *s = NULL;

	if (asprintf(&s, fmt, a, b) < 0)
		return NULL;
	return s;
}

static int same_stat(const struct stat *a, const struct stat *b)
{
	return a->st_size == b->st_size && a->st_ino == b->st_ino &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Hashes a file whose stat the cache could not vouch for; records it when
 * it holds what the manifest says and did not change while read. */
static int rehash(struct status_run *r, const char *rel, const char *full,
		  const struct stat *st, struct ch_hash128 want,
		  struct ch_error *err)
{
	struct ch_hash128 h;
	struct stat after;
	uint64_t size;

	if (ch_hash128_file(full, &h, &size, err) < 0)
		return -1;
	r->res->hashed++;
	if (h.high != want.high || h.low != want.low) {
		ch_statcache_drop(&r->cache, rel);
		return add_item(r, CH_WS_MODIFIED, rel,
				strdup("content differs from the manifest's "
				       "hash"), err);
	}
	if (stat(full, &after) == 0 && same_stat(st, &after))
		return ch_statcache_put(&r->cache, rel, st, h, err);
	return 0;
}

static int check_file(struct status_run *r, const char *rel, uint64_t bytes,
		      struct ch_hash128 want, struct ch_error *err)
{
	const struct ch_stat_record *rec;
	char *full = ch_path_join(r->root, rel);
	struct stat st;
	int rc = -1;

	if (!full)
		return ch_error_nomem(err);
	if (stat(full, &st) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			rc = add_item(r, CH_WS_MISSING, rel, NULL, err);
		else
			ch_error_errno(err, errno, "cannot check '%s'", full);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = add_item(r, CH_WS_MODIFIED, rel,
			      strdup("not a regular file"), err);
		goto out;
	}
	if ((uint64_t)st.st_size != bytes) {
		ch_statcache_drop(&r->cache, rel);
		rc = add_item(r, CH_WS_MODIFIED, rel,
			      format("size %" PRIu64 ", the manifest says %"
				     PRIu64, (uint64_t)st.st_size, bytes),
			      err);
		goto out;
	}
	rec = ch_statcache_find(&r->cache, rel);
	if (!r->o->rehash && rec && ch_statcache_matches(rec, &st) &&
	    rec->hash.high == want.high && rec->hash.low == want.low)
		rc = 0; /* the fast path: vouched for by the cache */
	else
		rc = rehash(r, rel, full, &st, want, err);
out:
	free(full);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int is_named(const struct status_run *r, const char *rel)
{
	return r->nnamed && bsearch(&rel, r->named, r->nnamed,
				    sizeof(*r->named), cmp_str) != NULL;
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && strcmp(s + n - t, tail) == 0;
}

/* Every non-folder under ROOT/rel that the manifest does not name. */
static int walk(struct status_run *r, const char *rel, struct ch_error *err)
{
	char *full = ch_path_join(r->root, rel);
	DIR *d = full ? opendir(full) : NULL;
	struct dirent *de;
	int rc = 0;

	if (!d) {
		if (full && errno != ENOENT && errno != ENOTDIR)
			rc = ch_error_errno(err, errno, "cannot list '%s'",
					    full);
		else if (!full)
			rc = ch_error_nomem(err);
		free(full);
		return rc;
	}
	while (rc == 0 && (de = readdir(d))) {
		struct stat st;
		char *child;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		child = ch_path_join(rel, de->d_name);
		if (!child) {
			rc = ch_error_nomem(err);
			break;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
			    0 && S_ISDIR(st.st_mode))
			rc = walk(r, child, err);
		else if (!is_named(r, child))
			rc = add_item(r, CH_WS_UNEXPECTED, child,
				      ends_with(child, ".part") ?
					      strdup("partial download") :
					      NULL, err);
		free(child);
	}
	closedir(d);
	free(full);
	return rc;
}

static int cmp_item_path(const void *a, const void *b)
{
	const struct ch_status_item *x = a, *y = b;

	return strcmp(x->path, y->path);
}

static int list_named(struct status_run *r, const struct ch_manifest *m,
		      struct ch_error *err)
{
	r->named = malloc((m->nshards + m->nsplits + 1) * sizeof(*r->named));
	if (!r->named)
		return ch_error_nomem(err);
	for (size_t i = 0; i < m->nshards; i++)
		r->named[r->nnamed++] = m->shards[i].path;
	for (size_t i = 0; i < m->nsplits; i++)
		r->named[r->nnamed++] = m->splits[i].path;
	qsort(r->named, r->nnamed, sizeof(*r->named), cmp_str);
	return 0;
}

static int compare(struct status_run *r, const struct ch_dataset *ds,
		   const char *manifest_name, struct ch_error *err)
{
	const struct ch_manifest *m = &ds->manifest;
	size_t first_unexpected;

	if (!m->id_ok && add_item(r, CH_WS_MANIFEST, manifest_name,
				  strdup("its id does not match its content "
					 "(edited?)"), err) < 0)
		return -1;
	uint64_t bytes = 0;
	for (size_t i = 0; i < m->nshards; i++)
		bytes += m->shards[i].bytes;
	for (size_t i = 0; i < m->nsplits; i++)
		bytes += m->splits[i].bytes;
	ch_counter_phase(&r->progress, "checking", "files",
			 m->nshards + m->nsplits, bytes);
	for (size_t i = 0; i < m->nshards && !cancelled(r); i++) {
		if (check_file(r, m->shards[i].path, m->shards[i].bytes,
			       m->shards[i].hash, err) < 0)
			return -1;
		ch_counter_add(&r->progress, 1, m->shards[i].bytes);
	}
	for (size_t i = 0; i < m->nsplits && !cancelled(r); i++) {
		if (check_file(r, m->splits[i].path, m->splits[i].bytes,
			       m->splits[i].hash, err) < 0)
			return -1;
		ch_counter_add(&r->progress, 1, m->splits[i].bytes);
	}
	ch_counter_end(&r->progress);
	if (cancelled(r))
		return ch_error_interrupted(err);
	first_unexpected = r->res->nitems;
	if (list_named(r, m, err) < 0 || walk(r, "shards", err) < 0 ||
	    walk(r, "splits", err) < 0)
		return -1;
	if (r->res->nitems > first_unexpected)
		qsort(r->res->items + first_unexpected,
		      r->res->nitems - first_unexpected,
		      sizeof(*r->res->items), cmp_item_path);
	return 0;
}

/* "manifest.json", or the manifest file's own name. */
static char *manifest_name(const char *path)
{
	struct stat st;
	char *copy, *name;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return strdup("manifest.json");
	copy = strdup(path);
	name = copy ? strdup(basename(copy)) : NULL;
	free(copy);
	return name;
}

int ch_status(const char *path, const struct ch_status_opts *o,
	      struct ch_status_result *res, struct ch_error *err)
{
	struct status_run r = { .o = o, .res = res };
	struct ch_dataset ds;
	char *name = NULL;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	ch_counter_init(&r.progress, o->progress, o->progress_arg);
	if (ch_dataset_open_folder(&ds, path, err) < 0)
		return -1;
	if (ds.lone_shard) {
		ch_error_usage(err, "'%s' is a lone shard: status compares a "
			       "dataset folder with its manifest", path);
		goto out;
	}
	r.root = ds.root;
	memcpy(res->id, ds.manifest.id, sizeof(res->id));
	res->shards = ds.manifest.nshards;
	res->split_files = ds.manifest.nsplits;
	if (!(name = manifest_name(path))) {
		ch_error_nomem(err);
		goto out;
	}
	if (ch_statcache_load(ds.root, &r.cache, err) < 0 ||
	    compare(&r, &ds, name, err) < 0)
		goto out;
	if (r.cache.dirty) {
		struct ch_error ignored; /* a read-only folder: no cache */
		res->cache_saved = ch_statcache_save(ds.root, &r.cache,
						     &ignored) == 0;
	}
	rc = 0;
out:
	if (rc < 0)
		ch_status_result_release(res);
	free(name);
	free(r.named);
	ch_statcache_release(&r.cache);
	ch_dataset_release(&ds);
	return rc;
}

void ch_status_result_release(struct ch_status_result *res)
{
	for (size_t i = 0; i < res->nitems; i++) {
		free(res->items[i].path);
		free(res->items[i].why);
	}
	free(res->items);
	memset(res, 0, sizeof(*res));
}
