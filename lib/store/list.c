/* store/list.c - listing and deleting objects: the list every backend
 * fills, and a folder's own listing (a walk of its files) and deletion
 * (unlink).  HTTP's and S3's are store/list_http.c's. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/internal.h"
#include "store/backend.h"

enum { MAX_DEPTH = 32 };

int ch_store_list_add(struct ch_store_list *l, const char *key, size_t len,
		      uint64_t size, int64_t mtime, struct ch_error *err)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct ch_store_object *o =
			realloc(l->objects, cap * sizeof(*o));
		if (!o)
			return ch_error_nomem(err);
		l->objects = o;
		l->cap = cap;
	}
	char *k = strndup(key, len);
	if (!k)
		return ch_error_nomem(err);
	l->objects[l->n++] = (struct ch_store_object){k, size, mtime};
	return 0;
}

static int by_key(const void *a, const void *b)
{
	const struct ch_store_object *x = a, *y = b;
	return strcmp(x->key, y->key);
}

void ch_store_list_sort(struct ch_store_list *l)
{
	if (l->n > 1)
		qsort(l->objects, l->n, sizeof(*l->objects), by_key);
}

void ch_store_list_release(struct ch_store_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->objects[i].key);
	free(l->objects);
	memset(l, 0, sizeof(*l));
}

/* ------------------------------------------------------------------ */
/* A folder                                                             */

/* Adds the files under path (whose key is key) to out, depth-first. */
static int walk(const char *path, const char *key, int depth,
		struct ch_store_list *out, struct ch_error *err)
{
	if (depth > MAX_DEPTH)
		return ch_error_set(err, "'%s' is nested deeper than %d "
				    "folders: not a remote's layout",
				    path, MAX_DEPTH);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT || errno == ENOTDIR
			       ? 0
			       : ch_error_errno(err, errno,
						"cannot list '%s'", path);
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (errno = 0, e = readdir(d))) {
		/* temporaries of a put, .part files, "." and ".." */
		if (e->d_name[0] == '.')
			continue;
		char *p = ch_path_join(path, e->d_name);
		char *k = *key ? ch_path_join(key, e->d_name)
			       : strdup(e->d_name);
		struct stat sb;
		if (!p || !k)
			rc = ch_error_nomem(err);
		/* a symbolic link is what it points to, as a read of the key
		 * finds it (a tag linked to another is a tag); one pointing
		 * nowhere is no object */
		else if (stat(p, &sb) < 0)
			rc = errno == ENOENT ? 0 /* removed meanwhile */
					     : ch_error_errno(err, errno,
							      "cannot stat "
							      "'%s'", p);
		else if (S_ISDIR(sb.st_mode))
			rc = walk(p, k, depth + 1, out, err);
		else if (S_ISREG(sb.st_mode))
			rc = ch_store_list_add(out, k, strlen(k),
					       (uint64_t)sb.st_size,
					       (int64_t)sb.st_mtime, err);
		free(p);
		free(k);
	}
	if (rc == 0 && errno)
		rc = ch_error_errno(err, errno, "cannot list '%s'", path);
	closedir(d);
	return rc;
}

int ch_store_file_list(struct ch_store *st, const char *prefix,
		       struct ch_store_list *out, struct ch_error *err)
{
	char *path = *prefix ? ch_path_join(st->base, prefix)
			     : strdup(st->base);
	if (!path)
		return ch_error_nomem(err);
	int rc = walk(path, prefix, 0, out, err);
	free(path);
	return rc;
}

int ch_store_file_delete(struct ch_store *st, const char *key,
			 struct ch_error *err)
{
	char *path = ch_path_join(st->base, key);
	if (!path)
		return ch_error_nomem(err);
	int rc = 0;
	if (unlink(path) < 0 && errno != ENOENT)
		rc = ch_error_errno(err, errno, "cannot remove '%s'", path);
	free(path);
	return rc;
}
