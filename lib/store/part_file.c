/* store/part_file.c - a download's PATH.part: hashed while it is written,
 * checked against the expected size and XXH3-128, then, when the batch of
 * transfers is over, synced and renamed into place, so that a file under
 * its final name is always verified and on disk. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/internal.h"
#include "store/backend.h"

enum { WRITEBACK = 4 << 20 };

static int make_parent(const char *path, struct ch_error *err)
{
	const char *slash = strrchr(path, '/');
	if (!slash || slash == path)
		return 0;
	char *dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return ch_error_nomem(err);
	int rc = ch_mkdir_p(dir, err);
	free(dir);
	return rc;
}

/* Hashes the first p->have bytes already in the .part. */
static int hash_existing(struct ch_part *p, struct ch_error *err)
{
	uint64_t done;
	if (ch_hash128_update_fd(p->xs, p->fd, p->have, &done) < 0)
		return ch_error_errno(err, errno ? errno : EIO, "cannot read "
				      "'%s' at byte %llu", p->part_path,
				      (unsigned long long)done);
	return 0;
}

int ch_part_open(struct ch_part *p, struct ch_store_job *job,
		 const char *what, int resume, struct ch_error *err)
{
	memset(p, 0, sizeof(*p));
	p->fd = -1;
	p->job = job;
	p->what = what;
	size_t n = strlen(job->path);
	p->part_path = malloc(n + 6);
	p->xs = XXH3_createState();
	if (!p->part_path || !p->xs) {
		ch_error_nomem(err);
		goto fail;
	}
	memcpy(p->part_path, job->path, n);
	memcpy(p->part_path + n, ".part", 6);
	if (make_parent(job->path, err) < 0)
		goto fail;
	p->fd = open(p->part_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (p->fd < 0) {
		ch_error_errno(err, errno, "cannot open '%s'", p->part_path);
		goto fail;
	}
	struct stat sb;
	if (fstat(p->fd, &sb) < 0) {
		ch_error_errno(err, errno, "cannot stat '%s'", p->part_path);
		goto fail;
	}
	XXH3_128bits_reset(p->xs);
	/* more than the object holds cannot be a prefix of it */
	if (resume && (uint64_t)sb.st_size <= job->size) {
		p->have = (uint64_t)sb.st_size;
		if (hash_existing(p, err) < 0)
			goto fail;
	} else if (ch_part_restart(p, err) < 0) {
		goto fail;
	}
	if (lseek(p->fd, (off_t)p->have, SEEK_SET) < 0) {
		ch_error_errno(err, errno, "cannot seek in '%s'", p->part_path);
		goto fail;
	}
	return 0;
fail:
	ch_part_close(p, 0);
	return -1;
}

int ch_part_restart(struct ch_part *p, struct ch_error *err)
{
	if (ftruncate(p->fd, 0) < 0 || lseek(p->fd, 0, SEEK_SET) < 0)
		return ch_error_errno(err, errno, "cannot empty '%s'",
				      p->part_path);
	XXH3_128bits_reset(p->xs);
	p->have = 0;
	p->unsynced = 0;
	p->overflow = 0;
	return 0;
}

int ch_part_write(struct ch_part *p, const void *data, size_t n,
		  struct ch_error *err)
{
	if (p->have + n > p->job->size) {
		/* keep nothing past the expected size; the check will fail */
		p->overflow = 1;
		n = (size_t)(p->job->size - p->have);
	}
	XXH3_128bits_update(p->xs, data, n);
	const uint8_t *b = data;
	uint64_t start = p->have;
	while (n > 0) {
		ssize_t k = write(p->fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return ch_error_errno(err, errno,
					      "cannot write '%s' at byte %llu",
					      p->part_path,
					      (unsigned long long)p->have);
		b += k;
		n -= (size_t)k;
		p->have += (uint64_t)k;
	}
	/* start writing back now, so that the fsync before the rename finds
	 * little left to do: on this disk it otherwise doubles the time of a
	 * download */
	p->unsynced += p->have - start;
	if (p->unsynced >= WRITEBACK) {
		sync_file_range(p->fd, (off_t)(p->have - p->unsynced),
				(off_t)p->unsynced, SYNC_FILE_RANGE_WRITE);
		p->unsynced = 0;
	}
	return 0;
}

int ch_part_finish(struct ch_part *p, struct ch_error *err)
{
	struct ch_store_job *job = p->job;
	if (p->overflow || p->have != job->size) {
		ch_error_data(err,
			      "size mismatch for '%s' (%s): expected %llu %s,"
			      " got %s%llu",
			      job->key, p->what, (unsigned long long)job->size,
			      ch_plural(job->size, "byte", "bytes"),
			      p->overflow ? "more than " : "",
			      (unsigned long long)p->have);
		return 1;
	}
	XXH128_hash_t h = XXH3_128bits_digest(p->xs);
	struct ch_hash128 got = { h.high64, h.low64 };
	if (got.high != job->hash.high || got.low != job->hash.low) {
		char want_hex[33], got_hex[33];
		ch_hash128_hex(job->hash, want_hex);
		ch_hash128_hex(got, got_hex);
		ch_error_data(err,
			      "hash mismatch for '%s' (%s): expected %s, "
			      "got %s", job->key, p->what, want_hex, got_hex);
		return 1;
	}
	job->verified = 1;
	return 0;
}

static char *part_of(const char *path)
{
	char *p = NULL;
	return asprintf(&p, "%s.part", path) < 0 ? NULL : p;
}

/* syncfs for the file system of path, unless done for it already. */
static int sync_fs_of(const char *path, dev_t *done, size_t *ndone,
		      struct ch_error *err)
{
	struct stat sb;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
	if (fd < 0 || fstat(fd, &sb) < 0)
		rc = ch_error_errno(err, errno, "cannot open '%s'", path);
	else {
		for (size_t i = 0; i < *ndone; i++)
			if (done[i] == sb.st_dev)
				goto out;
		if (syncfs(fd) < 0)
			rc = ch_error_errno(err, errno, "cannot sync '%s'", path);
		else if (*ndone < 8)
			done[(*ndone)++] = sb.st_dev;
	}
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

/* fsyncs path's folder unless it is last_dir (consecutive jobs mostly
 * share one); last_dir is updated, the caller frees it. */
static int sync_folder_of(const char *path, char **last_dir,
			  struct ch_error *err)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
	if (!dir)
		return ch_error_nomem(err);
	if (*last_dir && strcmp(*last_dir, dir) == 0) {
		free(dir);
		return 0;
	}
	free(*last_dir);
	*last_dir = dir;
	return ch_fsync_dir(*dir ? dir : "/", err);
}

int ch_parts_commit(struct ch_store_job *jobs, size_t n,
		    struct ch_error *err)
{
	dev_t synced[8];
	size_t nsynced = 0;
	char *last_dir = NULL;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		char *part = jobs[i].verified ? part_of(jobs[i].path) : NULL;
		if (jobs[i].verified && !part)
			rc = ch_error_nomem(err);
		else if (part)
			rc = sync_fs_of(part, synced, &nsynced, err);
		free(part);
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		char *part = jobs[i].verified ? part_of(jobs[i].path) : NULL;
		if (!part)
			continue;
		if (rename(part, jobs[i].path) < 0)
			rc = ch_error_errno(err, errno, "cannot rename '%s' to "
					    "'%s'", part, jobs[i].path);
		else
			jobs[i].verified = 0; /* named now */
		free(part);
	}
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = sync_folder_of(jobs[i].path, &last_dir, err);
	free(last_dir);
	return rc;
}

void ch_part_close(struct ch_part *p, int drop)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	if (drop && p->part_path)
		unlink(p->part_path);
	free(p->part_path);
	p->part_path = NULL;
	XXH3_freeState(p->xs);
	p->xs = NULL;
}
