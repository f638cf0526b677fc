/* remote/push_pull.c - the remote layout (cas/, versions/, tags/) and the
 * push and pull that move a dataset version through it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chute/version.h"
#include "chute/remote.h"
#include "common/counter.h"
#include "common/internal.h"
#include "remote/lease.h"
#include "remote/publish.h"

enum { TAG_MAX = 128, MANIFEST_MAX = 256 << 20, TAGS_SHOWN = 10 };

char *ch_remote_cas_key(struct ch_hash128 hash, const char *path)
{
	char hex[33], *key;
	const char *base = strrchr(path, '/');
	const char *ext = strrchr(base ? base : path, '.');
	ch_hash128_hex(hash, hex);
	if (asprintf(&key, "cas/%.2s/%s%s", hex, hex, ext ? ext : "") < 0)
		return NULL;
	return key;
}

static int is_id(const char *s);

int ch_remote_tag_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > TAG_MAX || name[0] == '.' || is_id(name))
		return 0; /* an id-like tag could never be reached */
	return strspn(name, "abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

static int is_id(const char *s)
{
	return strlen(s) == 32 && strspn(s, "0123456789abcdef") == 32;
}

/* Appends to out (cap bytes) as much of s as fits. */
static void append(char *out, size_t cap, const char *s)
{
	size_t n = strlen(out);
	snprintf(out + n, cap - n, "%s", s);
}

/* What to say after "no tag 'x' on URL": "; its tags: a, b, latest" (the
 * first TAGS_SHOWN, then how many more), ": it has no tags", or nothing
 * when the remote cannot be listed. */
static void tags_hint(struct ch_store *st, char *out, size_t cap)
{
	struct ch_store_list l;
	struct ch_error e = {0};
	size_t n = 0;
	char more[48];
	out[0] = '\0';
	if (ch_store_list(st, "tags", &l, &e) < 0)
		return;
	for (size_t i = 0; i < l.n; i++) {
		const char *name = l.objects[i].key + strlen("tags/");
		if (!ch_remote_tag_ok(name))
			continue; /* not a tag chute wrote */
		if (n < TAGS_SHOWN) {
			append(out, cap, n ? ", " : "; its tags: ");
			append(out, cap, name);
		}
		n++;
	}
	if (n == 0)
		snprintf(out, cap, ": it has no tags (nothing was pushed "
			 "there?)");
	else if (n > TAGS_SHOWN) {
		snprintf(more, sizeof(more), " and %zu more (chute tags)",
			 n - TAGS_SHOWN);
		append(out, cap, more);
	}
	ch_store_list_release(&l);
}

int ch_remote_resolve(struct ch_store *st, const char *at, char id[33],
		      struct ch_error *err)
{
	struct ch_buf b = {0};
	int rc;
	if (is_id(at)) {
		memcpy(id, at, 33);
		return 0;
	}
	if (!ch_remote_tag_ok(at))
		return ch_error_usage(err, "'%s' is neither a version id (32 "
				      "hex digits) nor a tag name", at);
	char key[TAG_MAX + 8];
	snprintf(key, sizeof(key), "tags/%s", at);
	rc = ch_store_get(st, key, 4096, &b, err);
	if (rc == 1) {
		char hint[TAGS_SHOWN * (TAG_MAX + 2) + 96];
		tags_hint(st, hint, sizeof(hint));
		ch_error_set(err, "no tag '%s' on %s%s", at, ch_store_url(st),
			     hint);
		rc = 1;
		goto out;
	}
	if (rc < 0)
		goto out;
	size_t n = 0;
	while (n < b.len && b.data[n] != '\n' && b.data[n] != '\r')
		n++;
	if (n != 32 || b.len > 34) {
		rc = ch_error_set(err, "tag '%s' on %s does not hold a version "
				  "id", at, ch_store_url(st));
		goto out;
	}
	memcpy(id, b.data, 32);
	id[32] = '\0';
	if (!is_id(id))
		rc = ch_error_set(err, "tag '%s' on %s does not hold a version "
				  "id", at, ch_store_url(st));
out:
	ch_buf_release(&b);
	return rc;
}

int ch_remote_get_version(struct ch_store *st, const char *id,
			  struct ch_manifest *m, struct ch_buf *raw,
			  struct ch_error *err)
{
	char key[48];
	int rc;
	snprintf(key, sizeof(key), "versions/%s.json", id);
	rc = ch_store_get(st, key, MANIFEST_MAX, raw, err);
	if (rc == 1)
		ch_error_set(err, "no version %s on %s", id, ch_store_url(st));
	if (rc != 0)
		return rc;
	return ch_remote_parse_version(st, id, raw, m, err);
}

int ch_remote_parse_version(struct ch_store *st, const char *id,
			    const struct ch_buf *raw, struct ch_manifest *m,
			    struct ch_error *err)
{
	char key[48];
	snprintf(key, sizeof(key), "versions/%s.json", id);
	char *url = ch_store_key_url(st, key);
	int rc = ch_manifest_parse(m, (const char *)raw->data, raw->len,
				   url ? url : key, err);
	if (rc == 0 && (!m->id_ok || strcmp(m->id, id) != 0)) {
		ch_error_data(err, "%s: its content does not hash to %s: the "
			      "remote copy is damaged", url ? url : key, id);
		ch_manifest_release(m);
		rc = -1;
	}
	free(url);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The files of a version: its shards and split files.                  */

struct vfile {
	const char *path;	/* relative, from the manifest */
	uint64_t bytes;
	struct ch_hash128 hash;
};

static struct vfile *version_files(const struct ch_manifest *m, size_t *n,
				   struct ch_error *err)
{
	struct vfile *f = calloc(m->nshards + m->nsplits + 1, sizeof(*f));
	if (!f) {
		ch_error_nomem(err);
		return NULL;
	}
	for (size_t i = 0; i < m->nshards; i++)
		f[i] = (struct vfile){m->shards[i].path, m->shards[i].bytes,
				      m->shards[i].hash};
	for (size_t i = 0; i < m->nsplits; i++)
		f[m->nshards + i] = (struct vfile){
			m->splits[i].path, m->splits[i].bytes,
			m->splits[i].hash};
	*n = m->nshards + m->nsplits;
	return f;
}

static void free_jobs(struct ch_store_job *jobs, size_t n)
{
	if (!jobs)
		return;
	for (size_t i = 0; i < n; i++) {
		free((char *)jobs[i].key);
		free((char *)jobs[i].path);
	}
	free(jobs);
}

/* One job per file: key in the remote, path under base. */
static struct ch_store_job *make_jobs(const struct vfile *f, size_t n,
				      const char *base, struct ch_error *err)
{
	struct ch_store_job *jobs = calloc(n + 1, sizeof(*jobs));
	if (!jobs)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		jobs[i].key = ch_remote_cas_key(f[i].hash, f[i].path);
		jobs[i].path = ch_path_join(base, f[i].path);
		jobs[i].size = f[i].bytes;
		jobs[i].hash = f[i].hash;
		if (!jobs[i].key || !jobs[i].path) {
			free_jobs(jobs, n);
			goto oom;
		}
	}
	return jobs;
oom:
	ch_error_nomem(err);
	return NULL;
}

static int hash_equal(struct ch_hash128 a, struct ch_hash128 b)
{
	return a.high == b.high && a.low == b.low;
}

/* 1 if the file at path has this size and hash, 0 if not or absent.
 * rec, when not NULL, is the stat cache's record of the file: a file it
 * vouches for is not read again. */
static int file_matches(const char *path, uint64_t bytes,
			struct ch_hash128 want, const struct ch_stat_record *rec)
{
	struct stat st;
	struct ch_hash128 h;
	struct ch_error e = {0};
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != bytes)
		return 0;
	if (rec && ch_statcache_matches(rec, &st))
		return hash_equal(rec->hash, want);
	return ch_hash128_file(path, &h, NULL, &e) == 0 && hash_equal(h, want);
}

/* ------------------------------------------------------------------ */
/* Push                                                                  */

/* A file about to be uploaded is hashed first: a damaged local shard
 * must not land in the remote under the hash of a good one. */
static int check_local(const struct ch_store_job *j, const char *rel,
		       struct ch_error *err)
{
	struct ch_hash128 h;
	uint64_t size;
	char want[33], got[33];
	if (ch_hash128_file(j->path, &h, &size, err) < 0)
		return ch_error_if_missing(err, j->path);
	if (size == j->size && hash_equal(h, j->hash))
		return 0;
	ch_hash128_hex(j->hash, want);
	ch_hash128_hex(h, got);
	return ch_error_data(err, "%s does not match the manifest (%llu %s, "
			     "xxh3_128 %s; the manifest says %llu %s, %s): "
			     "not pushed; run chute verify", rel,
			     (unsigned long long)size,
			     ch_plural(size, "byte", "bytes"), got,
			     (unsigned long long)j->size,
			     ch_plural(j->size, "byte", "bytes"), want);
}

static int remote_has(const struct ch_store_job *j, const struct vfile *f)
{
	return j->exists && j->remote_size == f->bytes;
}

/* Uploads the files the remote lacks (hashed first); returns how many it
 * sent. */
static int push_files(struct ch_store *st, const struct vfile *f, size_t n,
		      const char *root, const struct ch_transfer_opts *xo,
		      struct ch_push_report *r, struct ch_error *err)
{
	struct ch_store_job *jobs = make_jobs(f, n, root, err), *todo = NULL;
	struct ch_counter hashing;
	size_t ntodo = 0, nsend = 0;
	int rc = -1;
	if (!jobs)
		return -1;
	ch_counter_init(&hashing, xo->progress, xo->progress_arg);
	if (ch_store_stat_many(st, jobs, n, xo, err) < 0)
		goto out;
	if (!(todo = calloc(n + 1, sizeof(*todo)))) {
		ch_error_nomem(err);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		r->bytes += f[i].bytes;
		if (!remote_has(&jobs[i], &f[i])) {
			r->uploaded_bytes += f[i].bytes;
			nsend++;
		}
	}
	if (nsend) /* a total of 0 would read "not known" */
		ch_counter_phase(&hashing, "hashing", "files", nsend,
				 r->uploaded_bytes);
	for (size_t i = 0; i < n; i++) {
		if (remote_has(&jobs[i], &f[i]))
			continue;
		if (check_local(&jobs[i], f[i].path, err) < 0)
			goto out;
		todo[ntodo++] = jobs[i];
		ch_counter_add(&hashing, 1, f[i].bytes);
	}
	ch_counter_end(&hashing);
	if (ntodo && ch_store_put_many(st, todo, ntodo, xo, err) < 0)
		goto out;
	r->uploaded = ntodo;
	rc = 0;
out:
	free(todo); /* shares its strings with jobs */
	free_jobs(jobs, n);
	return rc;
}

static int put_text(struct ch_store *st, const char *key, const char *text,
		    struct ch_error *err)
{
	return ch_store_put(st, key, text, strlen(text), err);
}

int ch_remote_check_tags(const char *const *tags, size_t ntags,
			 struct ch_error *err)
{
	for (size_t i = 0; i < ntags; i++)
		if (!ch_remote_tag_ok(tags[i]))
			return ch_error_usage(err, "'%s' is not a valid tag "
					      "name (1-128 of A-Z a-z 0-9 . _ "
					      "-, not starting with '.')",
					      tags[i]);
	return 0;
}

int ch_remote_put_version(struct ch_store *st, const char *id,
			  const char *text, size_t len, struct ch_error *err)
{
	char key[48];
	snprintf(key, sizeof(key), "versions/%s.json", id);
	return ch_store_put(st, key, text, len, err);
}

int ch_remote_put_tags(struct ch_store *st, const char *id,
		       const char *const *tags, size_t ntags, int latest,
		       struct ch_error *err)
{
	char key[TAG_MAX + 8], line[34];
	snprintf(line, sizeof(line), "%s\n", id);
	for (size_t i = 0; i < ntags + (latest != 0); i++) {
		snprintf(key, sizeof(key), "tags/%s",
			 i < ntags ? tags[i] : "latest");
		if (put_text(st, key, line, err) < 0)
			return -1;
	}
	return 0;
}

/* The manifests of the version's ancestors that the folder remembers
 * and the remote lacks, so that `chute log` works on the remote too. */
static int push_ancestors(struct ch_store *st, const char *root,
			  const char *parent, struct ch_push_report *r,
			  struct ch_error *err)
{
	char id[33] = "", key[48];
	if (parent)
		snprintf(id, sizeof(id), "%s", parent);
	for (int guard = 0; id[0] && guard < 100000; guard++) {
		struct ch_manifest a = {0};
		struct ch_error e = {0};
		char *text = NULL;
		size_t len;
		int rc, there;
		snprintf(key, sizeof(key), "versions/%s.json", id);
		if ((there = ch_store_stat(st, key, NULL, err)) < 0)
			return -1;
		if (there || ch_history_load(root, id, &a, &e) != 0)
			return 0; /* the rest is there already, or unknown */
		rc = ch_manifest_format(&a, &text, &len, err);
		if (rc == 0)
			rc = ch_store_put(st, key, text, len, err);
		free(text);
		r->versions_uploaded += rc == 0;
		snprintf(id, sizeof(id), "%s", a.parent ? a.parent : "");
		ch_manifest_release(&a);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static void at_point(const struct ch_push_opts *o, const char *name)
{
	if (o->point)
		o->point(o->point_arg, name);
}

/* After the manifest, before the tags: waits while a gc holds its lease,
 * then asks again for the manifest and every file, and sends what is not
 * there (a gc that listed the versions before the manifest landed may
 * have removed an object this push found and did not send, or sent long
 * enough ago to be past the grace period). */
static int settle(struct ch_store *st, const struct vfile *f, size_t n,
		  const char *root, const char *id, const char *text,
		  size_t len, const struct ch_push_opts *o,
		  struct ch_push_report *r, struct ch_error *err)
{
	struct ch_store_job *jobs = NULL, *todo = NULL;
	size_t ntodo = 0;
	char key[48];
	int rc = -1, there;
	if (ch_lease_wait(st, "push:waiting-for-gc", o->point, o->point_arg,
			  &r->waited_for_gc, err) < 0)
		return -1;
	snprintf(key, sizeof(key), "versions/%s.json", id);
	if ((there = ch_store_stat(st, key, NULL, err)) < 0)
		return -1;
	if (!there && ch_remote_put_version(st, id, text, len, err) < 0)
		return -1;
	if (!(jobs = make_jobs(f, n, root, err)))
		return -1;
	if (!(todo = calloc(n + 1, sizeof(*todo)))) {
		ch_error_nomem(err);
		goto out;
	}
	if (ch_store_stat_many(st, jobs, n, &o->xfer, err) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (remote_has(&jobs[i], &f[i]))
			continue;
		if (check_local(&jobs[i], f[i].path, err) < 0)
			goto out;
		todo[ntodo++] = jobs[i];
		r->uploaded_bytes += f[i].bytes;
	}
	if (ntodo && ch_store_put_many(st, todo, ntodo, &o->xfer, err) < 0)
		goto out;
	r->resent = ntodo;
	r->uploaded += ntodo;
	rc = 0;
out:
	free(todo); /* shares its strings with jobs */
	free_jobs(jobs, n);
	return rc;
}

int ch_remote_push(const char *path, struct ch_store *st,
		   const struct ch_push_opts *o, struct ch_push_report *r,
		   struct ch_error *err)
{
	struct ch_dataset ds;
	struct vfile *f = NULL;
	char *man = NULL, *text = NULL;
	size_t n = 0, len;
	int rc = -1;
	memset(r, 0, sizeof(*r));
	if (ch_remote_check_tags(o->tags, o->ntags, err) < 0)
		return -1;
	if (ch_dataset_open_folder(&ds, path, err) < 0)
		return -1;
	const struct ch_manifest *m = &ds.manifest;
	if (ds.lone_shard) {
		ch_error_usage(err, "'%s' is a shard, not a dataset: push the "
			       "folder that holds its manifest", path);
		goto out;
	}
	if (!m->id_ok) {
		ch_error_data(err, "the manifest of '%s' does not hash to its "
			      "id (edited by hand?): run chute verify", path);
		goto out;
	}
	memcpy(r->id, m->id, 33);
	/* a part is not the dataset: latest waits for the merge */
	r->latest = m->options.parts == 0;
	snprintf(r->parent, sizeof(r->parent), "%s",
		 m->parent ? m->parent : "");
	r->samples = m->samples;
	r->shards = m->nshards;
	if (!(f = version_files(m, &n, err)))
		goto out;
	r->files = n;
	/* data first, then the manifest, then the tags that name it */
	if (!(man = ch_manifest_path(path)) ||
	    ch_read_file(man, MANIFEST_MAX, &text, &len, err) < 0)
		goto out;
	if (push_files(st, f, n, ds.root, &o->xfer, r, err) < 0)
		goto out;
	at_point(o, "push:after-objects");
	if (ch_remote_put_version(st, m->id, text, len, err) < 0)
		goto out;
	r->versions_uploaded = 1;
	if (push_ancestors(st, ds.root, m->parent, r, err) < 0)
		goto out;
	at_point(o, "push:after-manifest");
	/* a gc may have run since the files were asked for */
	if (settle(st, f, n, ds.root, m->id, text, len, o, r, err) < 0)
		goto out;
	at_point(o, "push:after-check");
	if (ch_remote_put_tags(st, m->id, o->tags, o->ntags, r->latest,
			       err) < 0)
		goto out;
	rc = 0;
out:
	free(text);
	free(man);
	free(f);
	ch_dataset_release(&ds);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Pull                                                                  */

/* Where a file waits, verified, until every file of the version is in:
 * DIR/.chute/pull/HASH.EXT. */
static char *staging_path(const char *dir, const struct vfile *f)
{
	char *key = ch_remote_cas_key(f->hash, f->path), *p = NULL;
	if (key && asprintf(&p, "%s/.chute/pull/%s", dir, key + 7) < 0)
		p = NULL;
	free(key);
	return p;
}

static int mkdir_for(const char *path, struct ch_error *err)
{
	char *d = strdup(path), *slash = d ? strrchr(d, '/') : NULL;
	int rc = 0;
	if (!d)
		return ch_error_nomem(err);
	if (slash) {
		*slash = '\0';
		rc = ch_mkdir_p(d, err);
	}
	free(d);
	return rc;
}

/* The earlier file of the version with the same content and name
 * extension, or i itself: one download serves both (place_files links them). */
static size_t earlier_twin(const struct vfile *f, size_t i)
{
	const char *ext = strrchr(f[i].path, '.');
	for (size_t j = 0; j < i; j++) {
		const char *e = strrchr(f[j].path, '.');
		if (hash_equal(f[j].hash, f[i].hash) &&
		    strcmp(e ? e : "", ext ? ext : "") == 0)
			return j;
	}
	return i;
}

/* Fills jobs with the files neither in place nor staged; *nt counts them. */
static int plan_pull(const char *dir, const struct vfile *f, size_t n,
		     struct ch_store_job *jobs, size_t *nt,
		     const struct ch_transfer_opts *o,
		     struct ch_pull_report *r, struct ch_error *err)
{
	struct ch_statcache sc = {0};
	struct ch_counter checking;
	uint64_t total_bytes = 0;
	*nt = 0;
	if (ch_statcache_load(dir, &sc, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		total_bytes += f[i].bytes;
	ch_counter_init(&checking, o->progress, o->progress_arg);
	ch_counter_phase(&checking, "checking", "files", n, total_bytes);
	for (size_t i = 0; i < n; i++) {
		char *final = ch_path_join(dir, f[i].path);
		char *stage = staging_path(dir, &f[i]);
		if (!final || !stage) {
			free(final);
			free(stage);
			ch_statcache_release(&sc);
			return ch_error_nomem(err);
		}
		r->bytes += f[i].bytes;
		int here = file_matches(final, f[i].bytes, f[i].hash,
					ch_statcache_find(&sc, f[i].path)) ||
			   earlier_twin(f, i) < i ||
			   file_matches(stage, f[i].bytes, f[i].hash, NULL);
		free(final);
		ch_counter_add(&checking, 1, f[i].bytes);
		if (here) {
			r->present++;
			free(stage);
			continue;
		}
		struct ch_store_job *j = &jobs[(*nt)++];
		j->key = ch_remote_cas_key(f[i].hash, f[i].path);
		j->path = stage;
		j->size = f[i].bytes;
		j->hash = f[i].hash;
		if (!j->key) {
			ch_statcache_release(&sc);
			return ch_error_nomem(err);
		}
		r->downloaded_bytes += f[i].bytes;
	}
	ch_counter_end(&checking);
	ch_statcache_release(&sc);
	return 0;
}

/* Gives f[i] its final name: the staged download, or a link to its
 * twin's; a file already in place stays. */
static int place_one(const char *dir, const struct vfile *f, size_t i,
		     const char *stage, const char *final,
		     struct ch_error *err)
{
	char *twin;
	int rc = 0;
	if (access(stage, F_OK) == 0) {
		if (mkdir_for(final, err) < 0)
			return -1;
		if (rename(stage, final) < 0)
			return ch_error_errno(err, errno, "cannot rename '%s' to "
					      "'%s'", stage, final);
		return 0;
	}
	size_t t = earlier_twin(f, i);
	if (t == i)
		return 0; /* it was in place already */
	if (!(twin = ch_path_join(dir, f[t].path)))
		return ch_error_nomem(err);
	if (!file_matches(final, f[i].bytes, f[i].hash, NULL)) {
		unlink(final);
		if (mkdir_for(final, err) < 0)
			rc = -1;
		else if (link(twin, final) < 0)
			rc = ch_error_errno(err, errno, "cannot link '%s' to "
					    "'%s'", final, twin);
	}
	free(twin);
	return rc;
}

/* Moves every staged file to its place. */
static int place_files(const char *dir, const struct vfile *f, size_t n,
		       struct ch_error *err)
{
	for (size_t i = 0; i < n; i++) {
		char *final = ch_path_join(dir, f[i].path);
		char *stage = staging_path(dir, &f[i]);
		int rc = 0;
		if (!final || !stage)
			rc = ch_error_nomem(err);
		else
			rc = place_one(dir, f, i, stage, final, err);
		free(final);
		free(stage);
		if (rc < 0)
			return -1;
	}
	return 0;
}

int ch_remote_pull(struct ch_store *st, const char *at, const char *dir,
		   const struct ch_transfer_opts *o, struct ch_pull_report *r,
		   struct ch_error *err)
{
	struct ch_manifest m = {0};
	struct ch_buf raw = {0};
	struct ch_store_job *jobs = NULL;
	struct vfile *f = NULL;
	char *stage_dir = NULL, *man = NULL;
	size_t n = 0, nt = 0;
	int rc;
	memset(r, 0, sizeof(*r));
	if ((rc = ch_remote_resolve(st, at, r->id, err)) != 0 ||
	    (rc = ch_remote_get_version(st, r->id, &m, &raw, err)) != 0)
		goto out;
	rc = -1;
	snprintf(r->parent, sizeof(r->parent), "%s", m.parent ? m.parent : "");
	r->samples = m.samples;
	r->shards = m.nshards;
	if (!(f = version_files(&m, &n, err)))
		goto out;
	r->files = n;
	if (!(stage_dir = ch_path_join(dir, ".chute/pull")) ||
	    !(man = ch_path_join(dir, "manifest.json")) ||
	    !(jobs = calloc(n + 1, sizeof(*jobs)))) {
		ch_error_nomem(err);
		goto out;
	}
	if (ch_mkdir_p(stage_dir, err) < 0 ||
	    plan_pull(dir, f, n, jobs, &nt, o, r, err) < 0)
		goto out;
	if (nt && ch_store_get_many(st, jobs, nt, o, err) < 0)
		goto out;
	r->downloaded = nt;
	for (size_t i = 0; i < nt; i++)
		r->resumed += jobs[i].resumed != 0;
	if (place_files(dir, f, n, err) < 0 || ch_fsync_dir(dir, err) < 0 ||
	    ch_write_file_atomic(man, (const char *)raw.data, raw.len, err) < 0 ||
	    ch_history_save(dir, &m, err) < 0 ||
	    ch_statcache_record(dir, &m, err) < 0)
		goto out;
	rmdir(stage_dir); /* empty now; harmless if not */
	rc = 0;
out:
	free_jobs(jobs, nt);
	free(f);
	free(stage_dir);
	free(man);
	ch_buf_release(&raw);
	ch_manifest_release(&m);
	return rc;
}
