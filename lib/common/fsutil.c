/* common/fsutil.c - folders and whole files. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/internal.h"

char *ch_path_join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int slash = la && a[la - 1] != '/';
	char *p = malloc(la + lb + 2);
	if (!p)
		return NULL;
	memcpy(p, a, la);
	if (slash)
		p[la] = '/';
	memcpy(p + la + slash, b, lb + 1);
	return p;
}

int ch_mkdir_p(const char *path, struct ch_error *err)
{
	char *p = strdup(path);
	if (!p)
		return ch_error_nomem(err);
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			int e = errno;
			free(p);
			return ch_error_errno(err, e, "cannot create folder '%s'",
					      path);
		}
		*s = c;
		if (c == '\0')
			break;
	}
	free(p);
	return 0;
}

int ch_rm_at(int dirfd, const char *name)
{
	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					     O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (ch_rm_at(fd, de->d_name) < 0)
			rc = -1;
	}
	closedir(d);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rc = -1;
	return rc;
}

int ch_rm_rf(const char *path)
{
	return ch_rm_at(AT_FDCWD, path);
}

int ch_fsync_dir(const char *path, struct ch_error *err)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return ch_error_errno(err, errno, "cannot open folder '%s'",
				      path);
	int rc = fsync(fd);
	int e = errno;
	close(fd);
	if (rc < 0 && e != EINVAL)
		return ch_error_errno(err, e, "cannot sync folder '%s'", path);
	return 0;
}

static const char *file_kind(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISDIR(mode))
		return "a folder";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	return "a special file";
}

/* O_NONBLOCK: opening a FIFO with no writer would otherwise wait for one
 * for ever, signals or not. */
int ch_open_regular(const char *path, struct ch_error *err)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), e = 0;
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		e = errno;
		ch_error_errno(err, e, "cannot open '%s'", path);
	} else if (!S_ISREG(st.st_mode)) {
		e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		ch_error_set(err, "cannot open '%s': it is %s, not a regular "
			     "file", path, file_kind(st.st_mode));
	} else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		e = errno;
		ch_error_errno(err, e, "cannot open '%s'", path);
	}
	if (!e)
		return fd;
	if (fd >= 0)
		close(fd);
	errno = e;
	return -1;
}

int ch_read_file(const char *path, size_t max, char **data, size_t *len,
		 struct ch_error *err)
{
	int fd = ch_open_regular(path, err);
	if (fd < 0)
		return -1;
	struct ch_buf b = { 0 };
	int rc = -1;
	for (;;) {
		if (ch_buf_reserve(&b, b.len + 65536, err) < 0)
			goto out;
		ssize_t n = read(fd, b.data + b.len, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ch_error_errno(err, errno, "cannot read '%s'", path);
			goto out;
		}
		if (n == 0)
			break;
		b.len += (size_t)n;
		if (b.len > max) {
			ch_error_set(err, "'%s' is larger than %zu bytes", path,
				     max);
			goto out;
		}
	}
	if (ch_buf_append(&b, "", 1, err) < 0)
		goto out;
	*data = (char *)b.data;
	*len = b.len - 1;
	b.data = NULL;
	rc = 0;
out:
	close(fd);
	ch_buf_release(&b);
	return rc;
}

/* An empty file cannot be mapped, one over max must be refused with
 * ch_read_file's message, and a file system may refuse to map: those are
 * read. */
int ch_file_text_open(struct ch_file_text *t, const char *path, size_t max,
		      struct ch_error *err)
{
	int fd = ch_open_regular(path, err);
	struct stat st;
	void *p = MAP_FAILED;
	char *data;

	memset(t, 0, sizeof(*t));
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && st.st_size > 0 &&
	    (uint64_t)st.st_size <= max)
		p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd,
			 0);
	close(fd);
	if (p != MAP_FAILED) {
		t->data = p;
		t->len = (size_t)st.st_size;
		t->mapped = 1;
		return 0;
	}
	if (ch_read_file(path, max, &data, &t->len, err) < 0)
		return -1;
	t->data = data;
	return 0;
}

void ch_file_text_drop(struct ch_file_text *t, size_t upto, size_t chunk)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t end = upto / page * page;

	if (!t->mapped || end < t->dropped + chunk || end <= t->dropped)
		return;
	/* advice only: a kernel that will not keeps the pages */
	(void)madvise((char *)t->data + t->dropped, end - t->dropped,
		      MADV_DONTNEED);
	t->dropped = end;
}

void ch_file_text_close(struct ch_file_text *t)
{
	if (t->mapped)
		munmap((void *)t->data, t->len);
	else
		free((void *)t->data);
	memset(t, 0, sizeof(*t));
}
