/* common/atomic_file.c - whole files replaced at once: written under a
 * temporary beside the final name (common/temp_lock.c), synced, renamed
 * into place. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/internal.h"

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The folder holding path ("dir/" or "."), or NULL: no memory. */
static char *parent_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
}

/* Makes a rename in the folder holding path durable. */
static int sync_parent(const char *path, struct ch_error *err)
{
	char *dir = parent_of(path);
	if (!dir)
		return ch_error_nomem(err);
	int rc = ch_fsync_dir(dir, err);
	free(dir);
	return rc;
}

int ch_check_file_atomic(const char *path, struct ch_error *err)
{
	struct stat st;
	char *dir = parent_of(path);
	int rc = 0;
	if (!dir)
		return ch_error_nomem(err);
	if (stat(dir, &st) < 0 || access(dir, W_OK | X_OK) < 0)
		rc = ch_error_set(err, "%s (its folder)", strerror(errno));
	else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		rc = ch_error_set(err, "%s", strerror(EISDIR));
	free(dir);
	return rc;
}

/* Writes data under a temporary name beside path, then renames it into
 * place: a reader sees the old manifest or the new one, never a part. */
int ch_write_file_atomic(const char *path, const char *data, size_t len,
			 struct ch_error *err)
{
	struct ch_temp t = { .fd = -1 };
	const char *slash = strrchr(path, '/');
	char *dir = parent_of(path);
	int ret = -1, drop = 1;

	if (!dir) {
		ch_error_nomem(err);
		goto out;
	}
	if (ch_temp_create(&t, dir, slash ? slash + 1 : path, 0, err) < 0)
		goto out;
	if (write_all(t.fd, data, len) < 0 || fsync(t.fd) < 0) {
		ch_error_errno(err, errno, "cannot write '%s'", t.path);
		goto out;
	}
	/* renamed before it is closed: closing unlocks it */
	if (rename(t.path, path) < 0) {
		ch_error_errno(err, errno, "cannot rename '%s' to '%s'", t.path,
			       path);
		goto out;
	}
	drop = 0;
	ret = sync_parent(path, err);
out:
	ch_temp_release(&t, drop);
	free(dir);
	return ret;
}
