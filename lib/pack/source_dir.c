/* pack/source_dir.c - entries from a folder tree or from a list of paths. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pack/catalog.h"

static int add_file(struct ch_catalog *c, const char *path, const char *rel,
		    const struct stat *st, struct ch_error *err)
{
	struct ch_entry e = { 0 };
	int rc;
	if (!S_ISREG(st->st_mode))
		return ch_error_set(err, "not a regular file: '%s'", path);
	if (ch_split_key(rel, &e.key, &e.field, path, err) < 0)
		return -1;
	e.origin = (char *)path;
	e.path = (char *)path;
	e.size = (uint64_t)st->st_size;
	e.seq = c->added;
	e.from = CH_FROM_FILE;
	rc = ch_catalog_add(c, &e, err);
	free(e.key);
	free(e.field);
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists a folder's names, sorted so that discovery order is stable. */
static int list_names(const char *dir, char ***names, size_t *n,
		      struct ch_error *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return ch_error_errno(err, errno, "cannot open folder '%s'",
				      dir);
	char **v = NULL;
	size_t len = 0, cap = 0;
	struct dirent *de;
	int rc = 0;
	errno = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.') /* ".", "..", hidden files */
			continue;
		if (len == cap) {
			cap = cap ? cap * 2 : 64;
			char **nv = realloc(v, cap * sizeof(*nv));
			if (!nv) {
				rc = ch_error_nomem(err);
				break;
			}
			v = nv;
		}
		if (!(v[len] = strdup(de->d_name))) {
			rc = ch_error_nomem(err);
			break;
		}
		len++;
	}
	if (rc == 0 && errno)
		rc = ch_error_errno(err, errno, "cannot read folder '%s'", dir);
	closedir(d);
	if (rc < 0) {
		for (size_t i = 0; i < len; i++)
			free(v[i]);
		free(v);
		return -1;
	}
	if (len)
		qsort(v, len, sizeof(*v), cmp_names);
	*names = v;
	*n = len;
	return 0;
}

static int scan(struct ch_catalog *c, const char *dir, size_t root_len,
		struct ch_error *err);

/* The output folder inside a source is passed over: packing into
 * photos/ds must not pack photos/ds's previous version too; nor another
 * chute dataset (manifest.json beside shards/), whose shards would
 * become samples. */
static int is_dataset(const struct ch_catalog *c, const char *path,
		      const struct stat *st)
{
	const struct ch_source_filter *f = c->filter;
	if (!f)
		return 0;
	if (f->skip_set && st->st_dev == f->skip_dev &&
	    st->st_ino == f->skip_ino)
		return 1;
	char *man = ch_path_join(path, "manifest.json");
	char *shards = ch_path_join(path, "shards");
	struct stat sst;
	int yes = man && shards && access(man, F_OK) == 0 &&
		  stat(shards, &sst) == 0 && S_ISDIR(sst.st_mode);
	free(man);
	free(shards);
	return yes;
}

static int scan_entry(struct ch_catalog *c, const char *path, size_t root_len,
		      const struct stat *st, struct ch_error *err)
{
	const char *rel = path + root_len;
	while (*rel == '/')
		rel++;
	int is_dir = S_ISDIR(st->st_mode);
	if (is_dir && is_dataset(c, path, st))
		return 0;
	int rc = ch_source_filter_admit(c->filter, rel, is_dir, 0, path, err);
	if (rc <= 0)
		return rc;
	return is_dir ? scan(c, path, root_len, err)
		      : add_file(c, path, rel, st, err);
}

static int scan(struct ch_catalog *c, const char *dir, size_t root_len,
		struct ch_error *err)
{
	char **names = NULL;
	size_t n = 0;
	int rc = 0;
	/* stat names relative to the folder: one path lookup, not one per
	 * component, which counts with a million files */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return ch_error_errno(err, errno, "cannot open folder '%s'", dir);
	if (list_names(dir, &names, &n, err) < 0) {
		close(dfd);
		return -1;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		char *path = ch_path_join(dir, names[i]);
		struct stat st;
		if (!path) {
			rc = ch_error_nomem(err);
		} else if (fstatat(dfd, names[i], &st, 0) < 0) {
			rc = ch_error_errno(err, errno, "cannot read '%s'", path);
		} else {
			rc = scan_entry(c, path, root_len, &st, err);
		}
		free(path);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	close(dfd);
	return rc;
}

int ch_source_dir_scan(struct ch_catalog *c, const char *root,
		       struct ch_error *err)
{
	struct stat st;
	if (stat(root, &st) < 0)
		return ch_error_errno(err, errno, "cannot read '%s'", root);
	if (!S_ISDIR(st.st_mode))
		return ch_error_set(err, "not a folder: '%s'", root);
	uint64_t before = c->added;
	if (scan(c, root, strlen(root), err) < 0)
		return -1;
	if (c->added == before && !(c->filter && c->filter->nstrays)) {
		int filtered = c->filter && (c->filter->nexclude ||
					     c->filter->ninclude);
		ch_error_set(err, "no files to pack in '%s'%s", root,
			     filtered ? " after the exclude and include "
					"patterns" : "");
		return filtered ? ch_error_remedy(err, "exclude include") : -1;
	}
	return 0;
}

static int add_listed(struct ch_catalog *c, char *path, struct ch_error *err)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return ch_error_errno(err, errno, "cannot read '%s' (listed "
				      "on standard input)", path);
	const char *rel = path;
	for (;;) {
		if (rel[0] == '/')
			rel++;
		else if (rel[0] == '.' && rel[1] == '/')
			rel += 2;
		else
			break;
	}
	int rc = ch_source_filter_admit(c->filter, rel, 0, 1, path, err);
	return rc <= 0 ? rc : add_file(c, path, rel, &st, err);
}

int ch_source_list_scan(struct ch_catalog *c, int fd, int sep,
			struct ch_error *err)
{
	struct ch_buf b = { 0 };
	int rc = -1;
	size_t start = 0;
	uint64_t before = c->added;
	for (;;) {
		if (ch_buf_reserve(&b, b.len + 65536, err) < 0)
			goto out;
		ssize_t n = read(fd, b.data + b.len, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ch_error_errno(err, errno, "cannot read standard input");
			goto out;
		}
		int eof = n == 0;
		b.len += (size_t)n;
		/* handle every complete name; keep the rest for next read */
		for (size_t i = start; i < b.len || (eof && start < b.len); i++) {
			if (i < b.len && b.data[i] != (uint8_t)sep)
				continue;
			if (i == b.len && ch_buf_append(&b, "", 1, err) < 0)
				goto out;
			b.data[i] = '\0';
			if (i > start && add_listed(c, (char *)b.data + start,
						    err) < 0)
				goto out;
			start = i + 1;
		}
		if (eof)
			break;
		memmove(b.data, b.data + start, b.len - start);
		b.len -= start;
		start = 0;
	}
	if (c->added == before) {
		ch_error_set(err, "no paths on standard input");
		goto out;
	}
	rc = 0;
out:
	ch_buf_release(&b);
	return rc;
}
