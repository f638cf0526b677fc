/* store/folder.c - a store in a local folder (a path or file:///PATH).
 * Objects are written to a temporary file in their folder, synced and
 * renamed, so that a reader sees all of an object or none of it. The
 * *_many calls run on a small pool of threads; downloads go through
 * PATH.part and its checks like HTTP's (store/part_file.c). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/internal.h"
#include "common/pool.h"
#include "common/read_range.h"
#include "store/backend.h"

enum { CHUNK = 1 << 20 };

char *ch_store_file_path(const struct ch_store *st, const char *key)
{
	return ch_path_join(st->base, key);
}

int ch_store_file_open(struct ch_store *st, struct ch_error *err)
{
	(void)st;
	(void)err;
	return 0;
}

static void file_close(struct ch_store *st)
{
	(void)st;
}

static int file_stat(struct ch_store *st, const char *key, uint64_t *size,
		     struct ch_error *err)
{
	char *path = ch_store_file_path(st, key);
	if (!path)
		return ch_error_nomem(err);
	struct stat sb;
	int rc = 1;
	if (stat(path, &sb) < 0) {
		rc = errno == ENOENT || errno == ENOTDIR
			     ? 0
			     : ch_error_errno(err, errno, "cannot stat '%s'",
					      path);
	} else if (!S_ISREG(sb.st_mode)) {
		rc = ch_error_set(err, "'%s' is not a file", path);
	} else if (size) {
		*size = (uint64_t)sb.st_size;
	}
	free(path);
	return rc;
}

/* Opens key for reading: 1 with err set when it does not exist. */
static int open_object(const char *path, int *fd, struct ch_error *err)
{
	*fd = ch_open_regular(path, err);
	if (*fd >= 0)
		return 0;
	if (errno == ENOENT || errno == ENOTDIR) {
		ch_error_set(err, "no such object: %s", path);
		return 1;
	}
	return -1;
}

/* Reads exactly len bytes at off; a short read is an error. */
static int read_at(int fd, const char *path, uint64_t off, size_t len,
		   uint8_t *dst, struct ch_error *err)
{
	uint64_t at;
	if (ch_pread_full(fd, dst, len, off, &at) == 0)
		return 0;
	if (errno)
		return ch_error_errno(err, errno, "cannot read '%s' at byte %llu",
				      path, (unsigned long long)at);
	return ch_error_set(err, "'%s' ends at byte %llu, before %zu bytes at "
			    "offset %llu", path, (unsigned long long)at, len,
			    (unsigned long long)off);
}

static int file_get(struct ch_store *st, const char *key, size_t max,
		    struct ch_buf *out, struct ch_error *err)
{
	char *path = ch_store_file_path(st, key);
	if (!path)
		return ch_error_nomem(err);
	int fd = -1;
	int rc = open_object(path, &fd, err);
	if (rc != 0)
		goto out;
	rc = -1;
	struct stat sb;
	if (fstat(fd, &sb) < 0) {
		ch_error_errno(err, errno, "cannot stat '%s'", path);
		goto out;
	}
	if ((uint64_t)sb.st_size > max) {
		ch_error_set(err, "'%s' is larger than %zu bytes", path, max);
		goto out;
	}
	size_t size = (size_t)sb.st_size;
	out->len = 0;
	if (ch_buf_reserve(out, size ? size : 1, err) < 0 ||
	    read_at(fd, path, 0, size, out->data, err) < 0)
		goto out;
	out->len = size;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(path);
	return rc;
}

static int file_get_range(struct ch_store *st, const char *key, uint64_t off,
			  size_t len, void *dst, struct ch_error *err)
{
	char *path = ch_store_file_path(st, key);
	if (!path)
		return ch_error_nomem(err);
	int fd = -1;
	int rc = open_object(path, &fd, err);
	if (rc == 0)
		rc = read_at(fd, path, off, len, dst, err);
	if (fd >= 0)
		close(fd);
	free(path);
	return rc < 0 || rc == 1 ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* Writing: FOLDER/.NAME.tmp-PID (locked while written: common/temp_lock.c),
 * synced, renamed over FOLDER/NAME. */

struct tmp_file {
	char *path, *dir;
	struct ch_temp tmp;
};

static void tmp_release(struct tmp_file *t, int drop)
{
	ch_temp_release(&t->tmp, drop);
	free(t->path);
	free(t->dir);
	t->path = t->dir = NULL;
}

static int tmp_create(struct tmp_file *t, struct ch_store *st,
		      const char *key, struct ch_error *err)
{
	memset(t, 0, sizeof(*t));
	t->tmp.fd = -1;
	t->path = ch_store_file_path(st, key);
	if (!t->path)
		return ch_error_nomem(err);
	const char *slash = strrchr(t->path, '/');
	const char *name = slash ? slash + 1 : t->path;
	size_t dlen = slash ? (size_t)(slash - t->path) : 0;
	t->dir = dlen ? strndup(t->path, dlen) : strdup(slash ? "/" : ".");
	if (!t->dir)
		return ch_error_nomem(err);
	if (ch_mkdir_p(t->dir, err) < 0 ||
	    ch_temp_create(&t->tmp, t->dir, name, 0, err) < 0)
		return -1;
	return 0;
}

static int write_all(int fd, const char *path, const uint8_t *p, size_t n,
		     uint64_t at, struct ch_error *err)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return ch_error_errno(err, errno,
					      "cannot write '%s' at byte %llu",
					      path, (unsigned long long)at);
		p += k;
		n -= (size_t)k;
		at += (uint64_t)k;
	}
	return 0;
}

static int tmp_commit(struct tmp_file *t, struct ch_error *err)
{
	if (fsync(t->tmp.fd) < 0)
		return ch_error_errno(err, errno, "cannot sync '%s'",
				      t->tmp.path);
	if (rename(t->tmp.path, t->path) < 0)
		return ch_error_errno(err, errno, "cannot rename '%s' to '%s'",
				      t->tmp.path, t->path);
	ch_temp_release(&t->tmp, 0); /* renamed before it is unlocked */
	/* the rename itself must last, or a tag could outlive its data */
	return ch_fsync_dir(t->dir, err);
}

static int file_put(struct ch_store *st, const char *key, const void *data,
		    size_t size, struct ch_error *err)
{
	struct tmp_file t;
	int rc = -1;
	if (tmp_create(&t, st, key, err) < 0 ||
	    write_all(t.tmp.fd, t.tmp.path, data, size, 0, err) < 0 ||
	    tmp_commit(&t, err) < 0)
		goto out;
	rc = 0;
out:
	tmp_release(&t, rc < 0);
	return rc;
}

/* Feeds src from byte off to its end to sink, a chunk at a time. */
static int copy_fd(int src, const char *src_path, uint64_t off, int (*sink)(
			   void *arg, const uint8_t *p, size_t n,
			   struct ch_error *err),
		   void *arg, struct ch_error *err)
{
	uint8_t *buf = malloc(CHUNK);
	if (!buf)
		return ch_error_nomem(err);
	int rc = 0;
	for (;;) {
		ssize_t n = pread(src, buf, CHUNK, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = ch_error_errno(err, errno,
					    "cannot read '%s' at byte %llu",
					    src_path, (unsigned long long)off);
			break;
		}
		if (n == 0)
			break;
		if (sink(arg, buf, (size_t)n, err) < 0) {
			rc = -1;
			break;
		}
		off += (uint64_t)n;
	}
	free(buf);
	return rc;
}

struct fd_sink {
	int fd;
	const char *path;
	uint64_t at;
	uint64_t *counter;
	pthread_mutex_t *mu;
};

static void count_bytes(uint64_t *counter, pthread_mutex_t *mu, size_t n)
{
	if (!counter)
		return;
	if (mu)
		pthread_mutex_lock(mu);
	*counter += n;
	if (mu)
		pthread_mutex_unlock(mu);
}

static int fd_sink_write(void *arg, const uint8_t *p, size_t n,
			 struct ch_error *err)
{
	struct fd_sink *s = arg;
	if (write_all(s->fd, s->path, p, n, s->at, err) < 0)
		return -1;
	s->at += n;
	count_bytes(s->counter, s->mu, n);
	return 0;
}

/* put_file, counting the bytes copied; fills *size_out. */
static int put_file_counted(struct ch_store *st, const char *key,
			    const char *path, uint64_t *size_out,
			    uint64_t *counter, pthread_mutex_t *mu,
			    struct ch_error *err)
{
	struct tmp_file t;
	int rc = -1;
	int src = open(path, O_RDONLY | O_CLOEXEC);
	if (src < 0)
		return ch_error_errno(err, errno, "cannot open '%s'", path);
	if (tmp_create(&t, st, key, err) < 0)
		goto out;
	struct fd_sink s = { t.tmp.fd, t.tmp.path, 0, counter, mu };
	if (copy_fd(src, path, 0, fd_sink_write, &s, err) < 0 ||
	    tmp_commit(&t, err) < 0)
		goto out;
	if (size_out)
		*size_out = s.at;
	rc = 0;
out:
	close(src);
	tmp_release(&t, rc < 0);
	return rc;
}

static int file_put_file(struct ch_store *st, const char *key,
			 const char *path, struct ch_error *err)
{
	return put_file_counted(st, key, path, NULL, NULL, NULL, err);
}

/* ------------------------------------------------------------------ */
/* The jobs, on common/pool.c's threads.  Progress is reported from the
 * caller's thread only. */

struct pool;
typedef int (*job_fn)(struct pool *pl, struct ch_store_job *job,
		      struct ch_error *err);

struct pool {
	struct ch_store *st;
	struct ch_store_job *jobs;
	job_fn fn;
	pthread_mutex_t mu; /* guards prog */
	struct ch_progress prog;
	struct ch_store_reporter rep;
};

static int pool_task(void *arg, size_t i, int worker, struct ch_error *err)
{
	struct pool *pl = arg;
	(void)worker;
	int rc = pl->fn(pl, &pl->jobs[i], err);
	pthread_mutex_lock(&pl->mu);
	pl->prog.done++;
	pthread_mutex_unlock(&pl->mu);
	return rc;
}

static void pool_watch(void *arg)
{
	struct pool *pl = arg;
	pthread_mutex_lock(&pl->mu);
	struct ch_progress p = pl->prog;
	pthread_mutex_unlock(&pl->mu);
	ch_store_report(&pl->rep, &p, 0);
}

static int pool_run(struct ch_store *st, struct ch_store_job *jobs, size_t n,
		    const struct ch_transfer_opts *o, job_fn fn,
		    const char *phase, uint64_t total_bytes,
		    struct ch_error *err)
{
	struct pool pl = { .st = st, .jobs = jobs, .fn = fn,
			   .rep = { o, 0, phase } };
	struct ch_error e;
	pl.prog.total = n;
	pl.prog.total_bytes = total_bytes;
	ch_store_report(&pl.rep, &pl.prog, 1);
	pthread_mutex_init(&pl.mu, NULL);
	int rc = ch_pool_run_watched(ch_store_jobs(o), n, pool_task, &pl, NULL,
				     pool_watch, 100, &e);
	if (rc == 0)
		ch_store_report(&pl.rep, &pl.prog, 1);
	pthread_mutex_destroy(&pl.mu);
	if (rc < 0 && err)
		*err = e;
	return rc;
}

static int stat_job(struct pool *pl, struct ch_store_job *job,
		    struct ch_error *err)
{
	int rc = file_stat(pl->st, job->key, &job->remote_size, err);
	if (rc < 0)
		return -1;
	job->exists = rc;
	if (!rc)
		job->remote_size = 0;
	return 0;
}

static int file_stat_many(struct ch_store *st, struct ch_store_job *jobs,
			  size_t n, const struct ch_transfer_opts *o,
			  struct ch_error *err)
{
	return pool_run(st, jobs, n, o, stat_job, "checking remote", 0, err);
}

struct part_sink {
	struct ch_part *part;
	struct pool *pl;
};

static int part_sink_write(void *arg, const uint8_t *p, size_t n,
			   struct ch_error *err)
{
	struct part_sink *s = arg;
	if (ch_part_write(s->part, p, n, err) < 0)
		return -1;
	count_bytes(&s->pl->prog.bytes, &s->pl->mu, n);
	return 0;
}

/* One try: continue (or start) PATH.part from the object.  Returns 0 when
 * verified and renamed, 1 on a mismatch, -1 on an error.  A .part that
 * failed the check after a full fetch is removed: it can only mislead. */
static int get_try(struct pool *pl, struct ch_store_job *job,
		   const char *path, int resume, int *continued,
		   struct ch_error *err)
{
	struct ch_part part;
	int fd = -1;
	if (ch_part_open(&part, job, path, resume, err) < 0)
		return -1;
	*continued = part.have > 0;
	count_bytes(&pl->prog.bytes, &pl->mu, part.have);
	int rc = open_object(path, &fd, err);
	if (rc == 1) /* the job's hash names it: missing data */
		err->kind = CH_ERR_DATA;
	if (rc == 0) {
		struct part_sink s = { &part, pl };
		rc = copy_fd(fd, path, part.have, part_sink_write, &s, err);
	}
	if (rc == 0)
		rc = ch_part_finish(&part, err);
	else
		rc = -1;
	if (fd >= 0)
		close(fd);
	if (rc != 0) { /* those bytes will not count: fetched again or not */
		pthread_mutex_lock(&pl->mu);
		pl->prog.bytes -= part.have;
		pthread_mutex_unlock(&pl->mu);
	}
	ch_part_close(&part, (rc == 1 && !*continued) ||
				     (rc < 0 && part.have == 0));
	return rc;
}

static int get_job(struct pool *pl, struct ch_store_job *job,
		   struct ch_error *err)
{
	char *path = ch_store_file_path(pl->st, job->key);
	if (!path)
		return ch_error_nomem(err);
	int continued = 0;
	int rc = get_try(pl, job, path, 1, &continued, err);
	if (rc == 1 && continued) /* a bad prefix: once more from 0 */
		rc = get_try(pl, job, path, 0, &continued, err);
	job->resumed = continued; /* the .part kept, not started over */
	free(path);
	return rc == 0 ? 0 : -1;
}

static int file_get_many(struct ch_store *st, struct ch_store_job *jobs,
			 size_t n, const struct ch_transfer_opts *o,
			 struct ch_error *err)
{
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += jobs[i].size;
	return pool_run(st, jobs, n, o, get_job, "downloading", total,
			err);
}

static int put_job(struct pool *pl, struct ch_store_job *job,
		   struct ch_error *err)
{
	return put_file_counted(pl->st, job->key, job->path, &job->size,
				&pl->prog.bytes, &pl->mu, err);
}

static int file_put_many(struct ch_store *st, struct ch_store_job *jobs,
			 size_t n, const struct ch_transfer_opts *o,
			 struct ch_error *err)
{
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		struct stat sb;
		if (stat(jobs[i].path, &sb) == 0)
			total += (uint64_t)sb.st_size;
	}
	return pool_run(st, jobs, n, o, put_job, "uploading", total, err);
}

const struct ch_store_ops ch_store_file_ops = {
	.stat = file_stat,
	.get = file_get,
	.get_range = file_get_range,
	.put = file_put,
	.put_file = file_put_file,
	.stat_many = file_stat_many,
	.get_many = file_get_many,
	.put_many = file_put_many,
	.close = file_close,
};
