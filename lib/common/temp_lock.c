/* common/temp_lock.c - temporaries beside their final name, locked while used.
 *
 * chute writes an output under DIR/.NAME.tmp-PID and renames it into
 * place.  The temporary is flock()ed for as long as its writer lives, and
 * the kernel drops the lock when the process ends, however it ends (kill
 * -9 included).  So a temporary nobody holds is a dead run's leftover,
 * whatever the PID in its name says (PIDs come back: every container's
 * first process is PID 1), and the next run writing the same NAME removes
 * it before it makes its own; a locked one belongs to a live run and is
 * left alone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/internal.h"

/* Whether entry is ".NAME.tmp-DIGITS". */
static int is_temp_of(const char *entry, const char *name)
{
	size_t n = strlen(name);
	if (entry[0] != '.' || strncmp(entry + 1, name, n) ||
	    strncmp(entry + 1 + n, ".tmp-", 5))
		return 0;
	const char *digits = entry + n + 6;
	if (!*digits)
		return 0;
	for (; *digits; digits++)
		if (*digits < '0' || *digits > '9')
			return 0;
	return 1;
}

/* Removes entry if no live run holds its lock; 1 if one does. */
static int sweep_one(int dfd, const char *entry)
{
	/* O_NOFOLLOW: a link is not ours to follow; O_NONBLOCK: nor may a
	 * FIFO of that name block us */
	int fd = openat(dfd, entry, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
					   O_CLOEXEC);
	if (fd < 0)
		return 0; /* gone already, or not ours to judge */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int held = errno == EWOULDBLOCK;
		close(fd);
		return held;
	}
	ch_rm_at(dfd, entry); /* under the lock: no run can claim it now */
	close(fd);
	return 0;
}

int ch_temp_sweep(const char *dir, const char *name, const char *keep,
		  char **live, struct ch_error *err)
{
	if (live)
		*live = NULL;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		if (errno == ENOENT)
			return 0;
		return ch_error_errno(err, errno, "cannot open folder '%s'",
				      dir);
	}
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return ch_error_errno(err, errno, "cannot open folder '%s'",
				      dir);
	}
	const char *keep_name = keep ? strrchr(keep, '/') : NULL;
	keep_name = keep_name ? keep_name + 1 : keep;
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d))) {
		if (!is_temp_of(de->d_name, name) ||
		    (keep_name && !strcmp(de->d_name, keep_name)))
			continue;
		if (sweep_one(dirfd(d), de->d_name) && live && !*live &&
		    !(*live = ch_path_join(dir, de->d_name)))
			rc = ch_error_nomem(err);
	}
	closedir(d);
	return rc;
}

/* Locks t's fresh temporary and checks that its name is still ours: a
 * sweeper that got the lock first may have removed it. */
static int lock_fresh(struct ch_temp *t, struct ch_error *err)
{
	struct stat mine, named;
	if (flock(t->fd, LOCK_EX | LOCK_NB) < 0)
		return ch_error_errno(err, errno, "cannot lock '%s'", t->path);
	if (fstat(t->fd, &mine) < 0)
		return ch_error_errno(err, errno, "cannot stat '%s'", t->path);
	if (lstat(t->path, &named) < 0 || named.st_ino != mine.st_ino ||
	    named.st_dev != mine.st_dev)
		return ch_error_set(err, "'%s' was removed by another run",
				    t->path);
	return 0;
}

int ch_temp_create(struct ch_temp *t, const char *dir, const char *name,
		   int folder, struct ch_error *err)
{
	t->fd = -1;
	t->path = NULL;
	if (ch_temp_sweep(dir, name, NULL, NULL, err) < 0)
		return -1;
	size_t n = strlen(dir);
	if (asprintf(&t->path, "%s%s.%s.tmp-%ld", dir,
		     n && dir[n - 1] == '/' ? "" : "/", name,
		     (long)getpid()) < 0) {
		t->path = NULL;
		return ch_error_nomem(err);
	}
	if (folder) {
		if (mkdir(t->path, 0755) == 0)
			t->fd = open(t->path, O_RDONLY | O_DIRECTORY |
						      O_NOFOLLOW | O_CLOEXEC);
	} else {
		t->fd = open(t->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
					      O_CLOEXEC, 0644);
	}
	int e = errno;
	if (t->fd < 0)
		ch_error_errno(err, e, "cannot create '%s'%s", t->path,
			       e == EEXIST ? " (a live run holds it)" : "");
	if (t->fd < 0 || lock_fresh(t, err) < 0) {
		/* not ours to remove: a live run's, or a sweeper's now */
		if (t->fd >= 0)
			close(t->fd);
		t->fd = -1;
		free(t->path);
		t->path = NULL;
		return -1;
	}
	return 0;
}

void ch_temp_release(struct ch_temp *t, int drop)
{
	if (drop && t->path)
		ch_rm_rf(t->path); /* still locked: no sweeper races us */
	if (t->fd >= 0)
		close(t->fd);
	free(t->path);
	t->path = NULL;
	t->fd = -1;
}
