/* remote/cache.c - verified local copies of remote files, least recently
 * used first out; see remote/cache.h.
 *
 * The folder is listed once, at open; from then on the cache keeps its
 * own account of the files it holds, and when each was last used, so
 * that a fetch does not list the folder again.  Files that another
 * process adds meanwhile are not counted: the limit is this process's. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/internal.h"
#include "chute/remote.h"
#include "remote/cache.h"

enum { PREFETCH_JOBS = 8 };

struct entry {
	char *key;	/* "cas/ab/ab...ef.chs" */
	uint64_t bytes;
	uint64_t used;	/* the cache's clock when last used */
	unsigned pins;	/* handed out by get, not yet given back */
};

struct ch_remote_cache {
	struct ch_store *st;
	char *dir;
	uint64_t max_bytes, total, clock;
	pthread_mutex_t lock;
	pthread_cond_t changed;	 /* a fetch ended, or the queue moved */
	struct entry *files;	 /* what the folder holds */
	size_t nfiles, files_cap;
	char **busy;		 /* keys being fetched now */
	size_t nbusy, busy_cap;
	struct ch_cache_file *queue; /* prefetch list; paths owned */
	size_t nqueue, qpos;
	pthread_t thread;
	int started, stop;
	struct ch_cache_stats stats;
};

/* The folder used when none is given: $XDG_CACHE_HOME/chute, else
 * $HOME/.cache/chute.  Caller frees. */
static char *ch_remote_cache_default_dir(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char *p = NULL;
	if (xdg && *xdg)
		return ch_path_join(xdg, "chute");
	if (asprintf(&p, "%s/.cache/chute", home && *home ? home : "/tmp") < 0)
		return NULL;
	return p;
}

/* ------------------------------------------------------------------ */
/* Bookkeeping, under the lock                                          */

static int push_ptr(char ***v, size_t *n, size_t *cap, char *p)
{
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 8;
		char **nv = realloc(*v, nc * sizeof(*nv));
		if (!nv)
			return -1;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = p;
	return 0;
}

static int is_busy(const struct ch_remote_cache *c, const char *key)
{
	for (size_t i = 0; i < c->nbusy; i++)
		if (strcmp(c->busy[i], key) == 0)
			return 1;
	return 0;
}

static void drop_busy(struct ch_remote_cache *c, const char *key)
{
	for (size_t i = 0; i < c->nbusy; i++)
		if (strcmp(c->busy[i], key) == 0) {
			c->busy[i] = c->busy[--c->nbusy];
			return;
		}
}

static struct entry *find_file(struct ch_remote_cache *c, const char *key)
{
	for (size_t i = 0; i < c->nfiles; i++)
		if (strcmp(c->files[i].key, key) == 0)
			return &c->files[i];
	return NULL;
}

/* One more reader holds key; called with the lock, key counted in. */
static void pin(struct ch_remote_cache *c, const char *key)
{
	struct entry *e = find_file(c, key);
	if (e)
		e->pins++;
}

/* Counts key in (or marks it used when it is in already). */
static int add_file(struct ch_remote_cache *c, const char *key, uint64_t bytes,
		    uint64_t used)
{
	struct entry *e = find_file(c, key);
	if (e) {
		e->used = used;
		return 0;
	}
	if (c->nfiles == c->files_cap) {
		size_t nc = c->files_cap ? 2 * c->files_cap : 64;
		struct entry *nv = realloc(c->files, nc * sizeof(*nv));
		if (!nv)
			return -1;
		c->files = nv;
		c->files_cap = nc;
	}
	if (!(key = strdup(key)))
		return -1;
	c->files[c->nfiles++] = (struct entry){(char *)key, bytes, used, 0};
	c->total += bytes;
	return 0;
}

/* Removes least recently used files until the folder fits; keep, files
 * handed out and not given back, and files being fetched stay. */
static void evict(struct ch_remote_cache *c, const char *keep)
{
	while (c->total > c->max_bytes) {
		struct entry *lru = NULL;
		for (size_t i = 0; i < c->nfiles; i++) {
			struct entry *e = &c->files[i];
			if (strcmp(e->key, keep) != 0 && !e->pins &&
			    !is_busy(c, e->key) && (!lru || e->used < lru->used))
				lru = e;
		}
		if (!lru)
			return;
		char *path = ch_path_join(c->dir, lru->key);
		if (path)
			unlink(path); /* gone already is fine too */
		free(path);
		c->total -= lru->bytes;
		c->stats.evicted_bytes += lru->bytes;
		free(lru->key);
		*lru = c->files[--c->nfiles];
	}
}

/* ------------------------------------------------------------------ */
/* Opening: what the folder holds, oldest first                         */

struct found {
	char *key;
	uint64_t bytes;
	struct timespec mtime;
};

static int older(const void *a, const void *b)
{
	const struct found *x = a, *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* Appends the finished files of cas/SUB to *f. */
static void list_sub(const char *dir, const char *sub, struct found **f,
		     size_t *n, size_t *cap)
{
	char *d = NULL;
	DIR *dd;
	struct dirent *de;
	if (asprintf(&d, "%s/cas/%s", dir, sub) < 0 || !(dd = opendir(d))) {
		free(d);
		return;
	}
	while ((de = readdir(dd))) {
		struct stat st;
		char *key = NULL, *path;
		if (de->d_name[0] == '.' || strstr(de->d_name, ".part") ||
		    strstr(de->d_name, ".lock") ||
		    asprintf(&key, "cas/%s/%s", sub, de->d_name) < 0)
			continue;
		path = ch_path_join(dir, key);
		int ok = path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
		free(path);
		if (ok && *n == *cap) {
			size_t nc = *cap ? 2 * *cap : 64;
			struct found *nf = realloc(*f, nc * sizeof(*nf));
			if (nf) {
				*f = nf;
				*cap = nc;
			}
			ok = nf != NULL; /* a file left out is only not counted */
		}
		if (!ok) {
			free(key);
			continue;
		}
		(*f)[(*n)++] = (struct found){key, (uint64_t)st.st_size,
					      st.st_mtim};
	}
	closedir(dd);
	free(d);
}

static void scan(struct ch_remote_cache *c)
{
	char *cas = ch_path_join(c->dir, "cas");
	DIR *top = cas ? opendir(cas) : NULL;
	struct dirent *de;
	struct found *f = NULL;
	size_t n = 0, cap = 0;
	while (top && (de = readdir(top)))
		if (de->d_name[0] != '.')
			list_sub(c->dir, de->d_name, &f, &n, &cap);
	if (top)
		closedir(top);
	free(cas);
	if (f)
		qsort(f, n, sizeof(*f), older);
	for (size_t i = 0; i < n; i++) {
		add_file(c, f[i].key, f[i].bytes, ++c->clock);
		free(f[i].key);
	}
	free(f);
}

int ch_remote_cache_open(struct ch_remote_cache **out, struct ch_store *st,
			const char *dir, uint64_t max_bytes,
			struct ch_error *err)
{
	struct ch_remote_cache *c = calloc(1, sizeof(*c));
	char *cas = NULL;
	if (!c || !(c->dir = dir ? strdup(dir) : ch_remote_cache_default_dir()) ||
	    !(cas = ch_path_join(c->dir, "cas"))) {
		if (c)
			free(c->dir);
		free(c);
		return ch_error_nomem(err);
	}
	int rc = ch_mkdir_p(cas, err);
	free(cas);
	if (rc < 0) {
		free(c->dir);
		free(c);
		return -1;
	}
	c->st = st;
	c->max_bytes = max_bytes;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->changed, NULL);
	scan(c);
	*out = c;
	return 0;
}

static void clear_queue(struct ch_remote_cache *c)
{
	for (size_t i = 0; i < c->nqueue; i++)
		free((char *)c->queue[i].path);
	free(c->queue);
	c->queue = NULL;
	c->nqueue = c->qpos = 0;
}

void ch_remote_cache_free(struct ch_remote_cache *c)
{
	if (!c)
		return;
	if (c->started) {
		pthread_mutex_lock(&c->lock);
		c->stop = 1;
		pthread_cond_broadcast(&c->changed);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
	}
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->changed);
	clear_queue(c);
	for (size_t i = 0; i < c->nfiles; i++)
		free(c->files[i].key);
	free(c->files);
	free(c->busy);
	free(c->dir);
	free(c);
}

/* ------------------------------------------------------------------ */
/* Fetching                                                              */

static int mkdir_parent(const char *path, struct ch_error *err)
{
	char *d = strdup(path), *slash = d ? strrchr(d, '/') : NULL;
	int rc = -1;
	if (!slash)
		ch_error_nomem(err);
	else if (*slash = '\0', ch_mkdir_p(d, err) == 0)
		rc = 0;
	free(d);
	return rc;
}

/* Where the copy of a file lives: *key is its name in the remote and
 * the cache ("cas/ab/ab...ef.chs"); both NULL when out of memory. */
static char *object_path(const struct ch_remote_cache *c, const char *rel,
			 struct ch_hash128 hash, char **key)
{
	char *path = NULL;
	*key = ch_remote_cas_key(hash, rel);
	if (*key && !(path = ch_path_join(c->dir, *key))) {
		free(*key);
		*key = NULL;
	}
	return path;
}

/* 1 if a finished copy of f is at path. */
static int on_disk(const char *path, uint64_t bytes)
{
	struct stat st;
	return stat(path, &st) == 0 && (uint64_t)st.st_size == bytes;
}

/* The ranks of one machine may share the folder: a lock file beside an
 * object makes one process fetch it while the others wait (or, when
 * prefetching, skip it).  Returns the locked fd, or -1. */
static int lock_object(const char *path, int wait, struct ch_error *err)
{
	char *lock = NULL;
	int fd = -1;
	if (mkdir_parent(path, err) < 0)
		return -1;
	if (asprintf(&lock, "%s.lock", path) < 0) {
		ch_error_nomem(err);
		return -1;
	}
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) < 0) {
		if (wait || errno != EWOULDBLOCK)
			ch_error_errno(err, errno, "cannot lock '%s'", lock);
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	free(lock);
	return fd;
}

/* Fetches those of the n jobs (n <= PREFETCH_JOBS, keys marked busy by
 * the caller, objects locked) that are not on disk, in parallel, and
 * accounts for all of them.  Called without the lock. */
static int fetch_jobs(struct ch_remote_cache *c, struct ch_store_job *jobs,
		      size_t n, const char *keep, struct ch_error *err)
{
	struct ch_store_job todo[PREFETCH_JOBS];
	size_t nt = 0;
	for (size_t i = 0; i < n; i++)
		if (!on_disk(jobs[i].path, jobs[i].size))
			todo[nt++] = jobs[i];
	struct ch_transfer_opts o = {.jobs = (int)nt};
	int rc = nt ? ch_store_get_many(c->st, todo, nt, &o, err) : 0;
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < nt; i++)
		if (on_disk(todo[i].path, todo[i].size)) {
			c->stats.misses++;
			c->stats.fetched_bytes += todo[i].size;
		}
	for (size_t i = 0; i < n; i++) {
		if (on_disk(jobs[i].path, jobs[i].size))
			add_file(c, jobs[i].key, jobs[i].size, ++c->clock);
		drop_busy(c, jobs[i].key);
	}
	if (*keep && rc == 0)
		pin(c, keep); /* handed out by get: see ch_remote_cache_put */
	evict(c, keep);
	pthread_cond_broadcast(&c->changed);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int ch_remote_cache_get(struct ch_remote_cache *c, const struct ch_cache_file *f,
		       char **local, struct ch_error *err)
{
	char *key, *path = object_path(c, f->path, f->hash, &key);
	int rc = -1, mine = 0;
	if (!path)
		return ch_error_nomem(err);
	pthread_mutex_lock(&c->lock);
	while (is_busy(c, key))
		pthread_cond_wait(&c->changed, &c->lock);
	if (on_disk(path, f->bytes)) {
		add_file(c, key, f->bytes, ++c->clock);
		pin(c, key);
		c->stats.hits++;
		rc = 0;
	} else if (push_ptr(&c->busy, &c->nbusy, &c->busy_cap, key) < 0) {
		ch_error_nomem(err);
	} else {
		mine = 1;
	}
	pthread_mutex_unlock(&c->lock);
	if (mine) {
		struct ch_store_job job = {.key = key, .path = path,
					   .size = f->bytes, .hash = f->hash};
		int fd = lock_object(path, 1, err);
		if (fd >= 0) {
			rc = fetch_jobs(c, &job, 1, key, err);
			close(fd);
		} else {
			pthread_mutex_lock(&c->lock);
			drop_busy(c, key);
			pthread_cond_broadcast(&c->changed);
			pthread_mutex_unlock(&c->lock);
		}
	}
	free(key);
	if (rc < 0) {
		free(path);
		return -1;
	}
	*local = path;
	return 0;
}

void ch_remote_cache_put(struct ch_remote_cache *c, const char *rel,
			struct ch_hash128 hash)
{
	char *key = ch_remote_cas_key(hash, rel);
	if (!key)
		return;
	pthread_mutex_lock(&c->lock);
	struct entry *e = find_file(c, key);
	if (e && e->pins)
		e->pins--;
	pthread_mutex_unlock(&c->lock);
	free(key);
}

int ch_remote_cache_has(struct ch_remote_cache *c, const char *rel,
		       uint64_t bytes, struct ch_hash128 hash)
{
	char *key, *path = object_path(c, rel, hash, &key);
	int yes = path && on_disk(path, bytes); /* the disk, not the list:
						   another process may add */
	free(key);
	free(path);
	return yes;
}

/* ------------------------------------------------------------------ */
/* Prefetching: the queued files that are missing, several at a time    */

struct batch {
	struct ch_store_job jobs[PREFETCH_JOBS];
	int fds[PREFETCH_JOBS];
	size_t n;
};

/* Takes up to PREFETCH_JOBS missing, unclaimed files off the queue and
 * marks them busy; called with the lock held. */
static void take_batch(struct ch_remote_cache *c, struct batch *b)
{
	b->n = 0;
	while (c->qpos < c->nqueue && b->n < PREFETCH_JOBS) {
		const struct ch_cache_file *f = &c->queue[c->qpos++];
		char *key, *path = object_path(c, f->path, f->hash, &key);
		if (!path || is_busy(c, key) || on_disk(path, f->bytes) ||
		    push_ptr(&c->busy, &c->nbusy, &c->busy_cap, key) < 0) {
			free(key);
			free(path);
			continue;
		}
		b->jobs[b->n++] = (struct ch_store_job){
			.key = key, .path = path, .size = f->bytes,
			.hash = f->hash};
	}
}

static void run_batch(struct ch_remote_cache *c, struct batch *b)
{
	struct ch_store_job mine[PREFETCH_JOBS];
	struct ch_error e = {0};
	size_t n = 0;
	for (size_t i = 0; i < b->n; i++)
		if ((b->fds[i] = lock_object(b->jobs[i].path, 0, &e)) >= 0)
			mine[n++] = b->jobs[i];
	fetch_jobs(c, mine, n, "", &e); /* a failure is met again by get */
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < b->n; i++) {
		if (b->fds[i] >= 0)
			close(b->fds[i]);
		drop_busy(c, b->jobs[i].key); /* those not fetched */
		free((char *)b->jobs[i].key);
		free((char *)b->jobs[i].path);
	}
	pthread_cond_broadcast(&c->changed);
	pthread_mutex_unlock(&c->lock);
}

static void *prefetcher(void *arg)
{
	struct ch_remote_cache *c = arg;
	struct batch b;
	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (!c->stop && c->qpos >= c->nqueue)
			pthread_cond_wait(&c->changed, &c->lock);
		if (c->stop)
			break;
		take_batch(c, &b);
		pthread_mutex_unlock(&c->lock);
		run_batch(c, &b);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int ch_remote_cache_prefetch(struct ch_remote_cache *c,
			    const struct ch_cache_file *files, size_t n,
			    struct ch_error *err)
{
	struct ch_cache_file *q = calloc(n + 1, sizeof(*q));
	int rc = 0;
	if (!q)
		return ch_error_nomem(err);
	for (size_t i = 0; i < n; i++) {
		q[i] = files[i];
		if (!(q[i].path = strdup(files[i].path))) {
			while (i--)
				free((char *)q[i].path);
			free(q);
			return ch_error_nomem(err);
		}
	}
	pthread_mutex_lock(&c->lock);
	clear_queue(c);
	c->queue = q;
	c->nqueue = n;
	if (!c->started) {
		if (pthread_create(&c->thread, NULL, prefetcher, c) == 0)
			c->started = 1;
		else
			rc = ch_error_set(err, "cannot start a prefetch thread");
	}
	pthread_cond_broadcast(&c->changed);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static char *version_path(const struct ch_remote_cache *c, const char *id)
{
	char *p = NULL;
	return asprintf(&p, "%s/versions/%s.json", c->dir, id) < 0 ? NULL : p;
}

int ch_remote_cache_load_version(struct ch_remote_cache *c, const char *id,
				struct ch_manifest *m, struct ch_error *err)
{
	char *path = version_path(c, id);
	struct ch_error ignored;
	int rc = 1;
	if (!path)
		return ch_error_nomem(err);
	if (access(path, F_OK) == 0 &&
	    ch_manifest_read(m, path, &ignored) == 0) {
		if (m->id_ok && strcmp(m->id, id) == 0)
			rc = 0;
		else /* damaged: the remote's copy will replace it */
			ch_manifest_release(m);
	}
	free(path);
	return rc;
}

int ch_remote_cache_save_version(struct ch_remote_cache *c, const char *id,
				const struct ch_buf *raw,
				struct ch_error *err)
{
	char *path = version_path(c, id);
	int rc = -1;
	if (!path)
		return ch_error_nomem(err);
	if (mkdir_parent(path, err) == 0)
		rc = ch_write_file_atomic(path, (const char *)raw->data,
					  raw->len, err);
	free(path);
	return rc;
}

void ch_remote_cache_stats(struct ch_remote_cache *c, struct ch_cache_stats *s)
{
	pthread_mutex_lock(&c->lock);
	*s = c->stats;
	pthread_mutex_unlock(&c->lock);
}
