/*
 * version/history.c - a dataset folder's past versions and its stat cache
 * (chute/version.h).
 *
 * Both live in DIR/.chute, which chute pack carries across a repack.
 * Versions are manifests named by their id, so saving one twice is
 * saving it once.  The stat cache is a text file, one record a line:
 *
 *     chute-stat 1
 *     SIZE MTIME_NS INODE XXH3_128 PATH
 *
 * PATH last, so that it may hold spaces; a path holding a newline is
 * simply never recorded (its file is hashed every time).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chute/version.h"
#include "common/internal.h"

#define STAT_HEADER "chute-stat 1\n"
/* A record is under 100 bytes plus its path: a million shards fit. */
#define STAT_MAX_SIZE ((size_t)1 << 28)

static int is_version_id(const char *id)
{
	size_t n = strspn(id, "0123456789abcdef");

	return n == 32 && id[32] == '\0';
}

/* DIR/.chute/NAME, or DIR/.chute when name is NULL. */
static char *chute_path(const char *dir, const char *name)
{
	char *p = NULL;

	if (asprintf(&p, "%s%s.chute%s%s", dir,
		     dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/",
		     name ? "/" : "", name ? name : "") < 0)
		return NULL;
	return p;
}

/* ------------------------------------------------------------------ */
/* Versions                                                             */

int ch_history_save(const char *dataset_dir, struct ch_manifest *m,
		    struct ch_error *err)
{
	char *vdir = chute_path(dataset_dir, "versions"), *path = NULL;
	int rc = -1;

	if (!vdir) {
		ch_error_nomem(err);
		goto out;
	}
	if (ch_manifest_compute_id(m, err) < 0 || ch_mkdir_p(vdir, err) < 0)
		goto out;
	if (asprintf(&path, "%s/%s.json", vdir, m->id) < 0) {
		path = NULL;
		ch_error_nomem(err);
		goto out;
	}
	/* the name is the hash of the content: present means same bytes */
	rc = access(path, F_OK) == 0 ? 0 : ch_manifest_write(m, path, err);
out:
	free(path);
	free(vdir);
	return rc;
}

int ch_history_set_parent(const char *dataset_dir,
			  const struct ch_manifest *current,
			  struct ch_manifest *m, struct ch_error *err)
{
	struct ch_manifest known = { 0 };
	struct ch_error ignored;
	const char *parent = NULL;
	int has_current = current && current->id[0];
	free(m->parent);
	m->parent = NULL;
	if (ch_manifest_compute_id(m, err) < 0)
		return -1;
	if (has_current && strcmp(m->id, current->id) == 0)
		parent = current->parent;
	else if (dataset_dir &&
		 ch_history_load(dataset_dir, m->id, &known, &ignored) == 0)
		parent = known.parent;
	else if (has_current)
		parent = current->id;
	int rc = 0;
	if (parent && !(m->parent = strdup(parent)))
		rc = ch_error_nomem(err);
	ch_manifest_release(&known);
	return rc;
}

int ch_history_load(const char *dataset_dir, const char *id,
		    struct ch_manifest *m, struct ch_error *err)
{
	char *vdir = chute_path(dataset_dir, "versions"), *path = NULL;
	int rc = -1;

	memset(m, 0, sizeof(*m));
	if (!is_version_id(id)) {
		ch_error_set(err, "'%s' is not a version id (32 lowercase "
			     "hexadecimal digits)", id);
		goto out;
	}
	if (!vdir || asprintf(&path, "%s/%s.json", vdir, id) < 0) {
		path = NULL;
		ch_error_nomem(err);
		goto out;
	}
	if (access(path, F_OK) < 0 && errno == ENOENT) {
		ch_error_set(err, "version %s is not in the history of '%s'",
			     id, dataset_dir);
		rc = 1;
		goto out;
	}
	if (ch_manifest_read(m, path, err) < 0)
		goto out;
	if (!m->id_ok || strcmp(m->id, id) != 0) {
		ch_manifest_release(m);
		ch_error_data(err, "'%s' does not hold version %s: its content "
			      "has another id (edited?)", path, id);
		goto out;
	}
	rc = 0;
out:
	free(path);
	free(vdir);
	return rc;
}

static int copy_file(int from_dir, int to_dir, const char *name,
		     struct ch_error *err)
{
	int in = openat(from_dir, name, O_RDONLY | O_CLOEXEC), out = -1;
	char buf[1 << 16];
	ssize_t n = 0;
	int rc = -1;

	if (in >= 0)
		out = openat(to_dir, name, O_WRONLY | O_CREAT | O_EXCL |
						   O_CLOEXEC, 0644);
	while (out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			break;
	if (in >= 0 && out >= 0 && n == 0 && fsync(out) == 0)
		rc = 0;
	else
		ch_error_errno(err, errno, "cannot copy '%s' of the history",
			       name);
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) < 0)
		rc = ch_error_errno(err, errno, "cannot copy '%s'", name);
	return rc;
}

/* Links (or copies) every file under from into to, folders made; at the
 * top, not the stat cache (its inodes change) nor a pull's downloads
 * (they belong to the version being replaced). */
static int carry_tree(int from, int to, int top, struct ch_error *err)
{
	DIR *d = fdopendir(dup(from));
	struct dirent *de;
	int rc = 0;

	if (!d)
		return ch_error_errno(err, errno, "cannot list the history");
	while (rc == 0 && (de = readdir(d))) {
		struct stat st;
		int sub_from, sub_to;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (top && (!strcmp(de->d_name, "stat") ||
			     !strcmp(de->d_name, "pull"))) ||
		    fstatat(from, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(st.st_mode)) {
			if (linkat(from, de->d_name, to, de->d_name, 0) < 0)
				rc = copy_file(from, to, de->d_name, err);
			continue;
		}
		if (!S_ISDIR(st.st_mode))
			continue;
		if (mkdirat(to, de->d_name, 0755) < 0 && errno != EEXIST) {
			rc = ch_error_errno(err, errno, "cannot create '%s'",
					    de->d_name);
			continue;
		}
		sub_from = openat(from, de->d_name, O_RDONLY | O_DIRECTORY);
		sub_to = openat(to, de->d_name, O_RDONLY | O_DIRECTORY);
		if (sub_from < 0 || sub_to < 0)
			rc = ch_error_errno(err, errno, "cannot open '%s'",
					    de->d_name);
		else
			rc = carry_tree(sub_from, sub_to, 0, err);
		if (sub_from >= 0)
			close(sub_from);
		if (sub_to >= 0)
			close(sub_to);
	}
	closedir(d);
	return rc;
}

int ch_history_carry(const char *from_dir, const char *to_dir,
		     struct ch_error *err)
{
	char *from = chute_path(from_dir, NULL), *to = chute_path(to_dir, NULL);
	int fd_from = -1, fd_to = -1, rc = -1;

	if (!from || !to) {
		ch_error_nomem(err);
		goto out;
	}
	fd_from = open(from, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd_from < 0) {
		rc = errno == ENOENT ? 0 : ch_error_errno(err, errno,
				"cannot open '%s'", from);
		goto out;
	}
	if (ch_mkdir_p(to, err) < 0)
		goto out;
	fd_to = open(to, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd_to < 0)
		ch_error_errno(err, errno, "cannot open '%s'", to);
	else
		rc = carry_tree(fd_from, fd_to, 1, err);
out:
	if (fd_from >= 0)
		close(fd_from);
	if (fd_to >= 0)
		close(fd_to);
	free(from);
	free(to);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Stat cache                                                           */

static int cmp_record(const void *a, const void *b)
{
	const struct ch_stat_record *x = a, *y = b;

	return strcmp(x->path, y->path);
}

static int64_t mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static int grow(struct ch_statcache *c, struct ch_error *err)
{
	size_t cap = c->cap ? 2 * c->cap : 64;
	struct ch_stat_record *v;

	if (c->n < c->cap)
		return 0;
	v = realloc(c->v, cap * sizeof(*v));
	if (!v)
		return ch_error_nomem(err);
	c->v = v;
	c->cap = cap;
	return 0;
}

void ch_statcache_release(struct ch_statcache *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].path);
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/* One "SIZE MTIME INODE HASH PATH" line (NUL-terminated); -1 when it is
 * not one, which makes the whole cache worthless. */
static int parse_record(char *line, struct ch_stat_record *r)
{
	char hex[33];
	int at = 0;

	if (sscanf(line, "%" SCNu64 " %" SCNd64 " %" SCNu64 " %32s %n",
		   &r->size, &r->mtime_ns, &r->ino, hex, &at) != 4 || !at ||
	    ch_hash128_parse(hex, &r->hash) < 0 || line[at] == '\0')
		return -1;
	r->path = strdup(line + at);
	return r->path ? 0 : -1;
}

static int parse_cache(char *text, struct ch_statcache *c,
		       struct ch_error *err)
{
	char *line, *next;

	if (strncmp(text, STAT_HEADER, strlen(STAT_HEADER)) != 0)
		return -1;
	for (line = text + strlen(STAT_HEADER); *line; line = next) {
		next = strchr(line, '\n');
		if (!next)
			return -1; /* a cut last line: a torn write */
		*next++ = '\0';
		if (grow(c, err) < 0 || parse_record(line, &c->v[c->n]) < 0)
			return -1;
		c->n++;
	}
	if (c->n)
		qsort(c->v, c->n, sizeof(*c->v), cmp_record);
	return 0;
}

int ch_statcache_load(const char *dataset_dir, struct ch_statcache *c,
		      struct ch_error *err)
{
	char *path = chute_path(dataset_dir, "stat"), *text = NULL;
	struct ch_error ignored;
	size_t len;

	memset(c, 0, sizeof(*c));
	if (!path)
		return ch_error_nomem(err);
	if (ch_read_file(path, STAT_MAX_SIZE, &text, &len, &ignored) == 0 &&
	    parse_cache(text, c, &ignored) < 0)
		ch_statcache_release(c); /* only a cache: start afresh */
	free(text);
	free(path);
	return 0;
}

const struct ch_stat_record *ch_statcache_find(const struct ch_statcache *c,
					       const char *path)
{
	struct ch_stat_record key = { .path = (char *)path };

	if (!c->n)
		return NULL;
	return bsearch(&key, c->v, c->n, sizeof(*c->v), cmp_record);
}

int ch_statcache_matches(const struct ch_stat_record *rec,
			 const struct stat *st)
{
	return rec->size == (uint64_t)st->st_size &&
	       rec->ino == (uint64_t)st->st_ino && rec->mtime_ns == mtime_ns(st);
}

static void fill_record(struct ch_stat_record *r, const struct stat *st,
			struct ch_hash128 hash)
{
	r->size = (uint64_t)st->st_size;
	r->ino = (uint64_t)st->st_ino;
	r->mtime_ns = mtime_ns(st);
	r->hash = hash;
}

int ch_statcache_put(struct ch_statcache *c, const char *path,
		     const struct stat *st, struct ch_hash128 hash,
		     struct ch_error *err)
{
	struct ch_stat_record *r = (struct ch_stat_record *)
		ch_statcache_find(c, path);
	size_t at = 0;

	if (strchr(path, '\n'))
		return 0; /* cannot be a line of the cache: never cached */
	c->dirty = 1;
	if (r) {
		fill_record(r, st, hash);
		return 0;
	}
	if (grow(c, err) < 0)
		return -1;
	/* records mostly come in path order: the insertion is at the end */
	at = c->n;
	while (at > 0 && strcmp(c->v[at - 1].path, path) > 0)
		at--;
	memmove(&c->v[at + 1], &c->v[at], (c->n - at) * sizeof(*c->v));
	c->v[at].path = strdup(path);
	if (!c->v[at].path) {
		memmove(&c->v[at], &c->v[at + 1], (c->n - at) * sizeof(*c->v));
		return ch_error_nomem(err);
	}
	fill_record(&c->v[at], st, hash);
	c->n++;
	return 0;
}

void ch_statcache_drop(struct ch_statcache *c, const char *path)
{
	struct ch_stat_record *r = (struct ch_stat_record *)
		ch_statcache_find(c, path);
	size_t at;

	if (!r)
		return;
	at = (size_t)(r - c->v);
	free(r->path);
	memmove(r, r + 1, (c->n - at - 1) * sizeof(*r));
	c->n--;
	c->dirty = 1;
}

int ch_statcache_save(const char *dataset_dir, const struct ch_statcache *c,
		      struct ch_error *err)
{
	char *dir = chute_path(dataset_dir, NULL);
	char *path = chute_path(dataset_dir, "stat");
	struct ch_buf b = { 0 };
	int rc = -1;

	if (!dir || !path) {
		ch_error_nomem(err);
		goto out;
	}
	if (ch_mkdir_p(dir, err) < 0 ||
	    ch_buf_append(&b, STAT_HEADER, strlen(STAT_HEADER), err) < 0)
		goto out;
	for (size_t i = 0; i < c->n; i++) {
		const struct ch_stat_record *r = &c->v[i];
		char line[160], hex[33];
		int n;

		ch_hash128_hex(r->hash, hex);
		n = snprintf(line, sizeof(line), "%" PRIu64 " %" PRId64
			     " %" PRIu64 " %s ", r->size, r->mtime_ns, r->ino,
			     hex);
		if (ch_buf_append(&b, line, (size_t)n, err) < 0 ||
		    ch_buf_append(&b, r->path, strlen(r->path), err) < 0 ||
		    ch_buf_append(&b, "\n", 1, err) < 0)
			goto out;
	}
	rc = ch_write_file_atomic(path, (const char *)b.data, b.len, err);
out:
	ch_buf_release(&b);
	free(path);
	free(dir);
	return rc;
}

/* Into `fresh`: path with its current stat (vouched) or its old record. */
static int record_one(const char *dir, const struct ch_statcache *old,
		      struct ch_statcache *fresh, const char *rel,
		      struct ch_hash128 hash, int vouch, struct ch_error *err)
{
	const struct ch_stat_record *r = ch_statcache_find(old, rel);
	char *full;
	struct stat st;
	int rc;

	if (!vouch) {
		if (!r || memcmp(&r->hash, &hash, sizeof(hash)) != 0)
			return 0; /* a record of other content is no use */
		st = (struct stat){ .st_size = (off_t)r->size,
				    .st_ino = (ino_t)r->ino };
		st.st_mtim.tv_sec = r->mtime_ns / 1000000000;
		st.st_mtim.tv_nsec = r->mtime_ns % 1000000000;
		return ch_statcache_put(fresh, rel, &st, hash, err);
	}
	full = ch_path_join(dir, rel);
	if (!full)
		return ch_error_nomem(err);
	rc = stat(full, &st);
	if (rc < 0)
		ch_error_errno(err, errno, "cannot record '%s' in the stat "
			       "cache", full);
	free(full);
	return rc < 0 ? -1 : ch_statcache_put(fresh, rel, &st, hash, err);
}

int ch_statcache_record_files(const char *dataset_dir,
			      const struct ch_manifest *m, int what,
			      struct ch_error *err)
{
	struct ch_statcache old, fresh = { 0 };
	int rc = -1;

	if (ch_statcache_load(dataset_dir, &old, err) < 0)
		return -1;
	for (size_t i = 0; i < m->nshards; i++)
		if (record_one(dataset_dir, &old, &fresh, m->shards[i].path,
			       m->shards[i].hash, what & CH_STAT_SHARDS,
			       err) < 0)
			goto out;
	for (size_t i = 0; i < m->nsplits; i++)
		if (record_one(dataset_dir, &old, &fresh, m->splits[i].path,
			       m->splits[i].hash, what & CH_STAT_SPLITS,
			       err) < 0)
			goto out;
	rc = ch_statcache_save(dataset_dir, &fresh, err);
out:
	ch_statcache_release(&old);
	ch_statcache_release(&fresh);
	return rc;
}

int ch_statcache_record(const char *dataset_dir, const struct ch_manifest *m,
			struct ch_error *err)
{
	return ch_statcache_record_files(dataset_dir, m,
					 CH_STAT_SHARDS | CH_STAT_SPLITS, err);
}
