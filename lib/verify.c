/* verify.c - checking a dataset against its manifest and its own hashes:
 * every byte of every shard is read once (file XXH3-128 and block XXH3-64
 * in the same pass); --deep also decodes blocks and rehashes samples. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>


#include "internal.h"
#include "xxh.h"

#define WINDOW (32u << 20) /* a multiple of the page size */
#define DEEP_BLOCKS_PER_TASK 16

struct vshard {
	char *path;	 /* full path */
	const char *rel; /* as in the manifest */
	struct ch_shard *sh;
	int usable; /* opened and its size matched */
};

struct vtask {
	size_t shard;
	int deep;		  /* 0: file pass; 1: decode blocks */
	uint32_t first, nblocks; /* for deep tasks */
};

struct verifier {
	const struct ch_verify_opts *o;
	struct ch_dataset ds;
	struct vshard *shards;
	size_t nshards;
	struct vtask *tasks;
	size_t ntasks, next;
	pthread_mutex_t lock;
	struct ch_verify_result *res;
};

static void report(struct verifier *v, enum ch_problem_kind kind,
		   const char *shard, int64_t block, const char *key,
		   int64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

static void report(struct verifier *v, enum ch_problem_kind kind,
		   const char *shard, int64_t block, const char *key,
		   int64_t offset, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct ch_problem p = { kind, shard, block, key, offset, msg };
	pthread_mutex_lock(&v->lock);
	v->res->problems++;
	if (v->o->on_problem)
		v->o->on_problem(&p, v->o->arg);
	pthread_mutex_unlock(&v->lock);
}

static int cancelled(const struct verifier *v)
{
	return v->o->cancel && *v->o->cancel;
}

/* Where the file pass is in the block list. */
struct block_walk {
	uint32_t b, nblocks;
	uint64_t start, end; /* current block's byte range */
	XXH3_state_t state;
};

static void walk_enter(struct block_walk *w, const struct ch_shard *sh)
{
	struct ch_block_stat st;
	if (w->b < w->nblocks) {
		ch_shard_block(sh, w->b, &st);
		w->start = st.offset;
		w->end = st.offset + st.stored_size;
		XXH3_64bits_reset(&w->state);
	}
}

/* Feeds bytes [off, off+n) of the file to the block hashes. */
static void walk_feed(struct verifier *v, struct vshard *vs,
		      struct block_walk *w, const uint8_t *p, uint64_t off,
		      size_t n)
{
	uint64_t end = off + n;
	while (w->b < w->nblocks && w->start < end) {
		uint64_t a = off > w->start ? off : w->start;
		uint64_t z = end < w->end ? end : w->end;
		if (a < z)
			XXH3_64bits_update(&w->state, p + (a - off), z - a);
		if (z < w->end)
			return; /* block continues in the next chunk */
		struct ch_block_stat st;
		ch_shard_block(vs->sh, w->b, &st);
		if (XXH3_64bits_digest(&w->state) != st.hash)
			report(v, CH_PROBLEM_BLOCK, vs->rel, w->b, NULL,
			       (int64_t)st.offset, "checksum mismatch in "
			       "block %u", w->b);
		w->b++;
		walk_enter(w, vs->sh);
	}
}

/* Hashes one window of the file: the file hash and the block hashes take
 * turns over pieces small enough to stay in cache. */
static void hash_window(struct verifier *v, struct vshard *vs,
			struct block_walk *w, XXH3_state_t *file,
			const uint8_t *p, uint64_t off, size_t n)
{
	enum { PIECE = 256 * 1024 };
	for (size_t at = 0; at < n; at += PIECE) {
		size_t k = n - at < PIECE ? n - at : PIECE;
		XXH3_128bits_update(file, p + at, k);
		if (vs->sh)
			walk_feed(v, vs, w, p + at, off + at, k);
	}
}

/* Reads the file once through mmap windows (no copy; resident memory
 * bounded by the window, not the shard). */
static void file_pass(struct verifier *v, size_t s)
{
	struct vshard *vs = &v->shards[s];
	const struct ch_manifest_shard *ms = &v->ds.manifest.shards[s];
	XXH3_state_t file;
	struct block_walk w = { 0 };
	struct stat st;
	uint64_t off = 0;
	int fd = open(vs->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		report(v, CH_PROBLEM_MISSING, vs->rel, -1, NULL, -1,
		       "cannot open: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	XXH3_128bits_reset(&file);
	if (vs->sh) {
		w.nblocks = ch_shard_block_count(vs->sh);
		walk_enter(&w, vs->sh);
	}
	uint64_t size = (uint64_t)st.st_size;
	while (off < size && !cancelled(v)) {
		size_t n = size - off < WINDOW ? (size_t)(size - off) : WINDOW;
		void *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_POPULATE,
			       fd, (off_t)off);
		if (p == MAP_FAILED) {
			report(v, CH_PROBLEM_STRUCTURE, vs->rel, -1, NULL,
			       (int64_t)off, "cannot map: %s", strerror(errno));
			close(fd);
			return;
		}
		hash_window(v, vs, &w, &file, p, off, n);
		munmap(p, n);
		off += n;
	}
	close(fd);
	pthread_mutex_lock(&v->lock);
	v->res->bytes += off;
	v->res->blocks += w.b;
	pthread_mutex_unlock(&v->lock);
	XXH128_hash_t h = XXH3_128bits_digest(&file);
	struct ch_hash128 got = { h.high64, h.low64 };
	if (!v->ds.lone_shard && !cancelled(v) &&
	    (got.high != ms->hash.high || got.low != ms->hash.low)) {
		char a[33], b[33];
		ch_hash128_hex(got, a);
		ch_hash128_hex(ms->hash, b);
		report(v, CH_PROBLEM_FILE_HASH, vs->rel, -1, NULL, -1,
		       "file hash %s differs from the manifest's %s", a, b);
	}
}

static void deep_pass(struct verifier *v, const struct vtask *t,
		      struct ch_block_reader *r)
{
	struct vshard *vs = &v->shards[t->shard];
	uint64_t n = ch_shard_sample_count(vs->sh);
	for (uint32_t b = t->first; b < t->first + t->nblocks; b++) {
		const uint8_t *data;
		size_t size;
		struct ch_error err;
		struct ch_block_stat st;
		if (cancelled(v))
			return;
		ch_shard_block(vs->sh, b, &st);
		if (ch_block_read(r, vs->sh, b, &data, &size, &err) < 0) {
			report(v, CH_PROBLEM_BLOCK, vs->rel, b, NULL,
			       (int64_t)st.offset, "%s", err.msg);
			continue;
		}
		/* samples of a block are consecutive: find the first */
		uint64_t lo = 0, hi = n;
		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2;
			struct ch_sample_info si;
			ch_shard_sample(vs->sh, mid, &si);
			if (si.block < b)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (uint64_t i = lo; i < n; i++) {
			struct ch_sample_info si;
			ch_shard_sample(vs->sh, i, &si);
			if (si.block != b)
				break;
			if (ch_sample_hash(vs->sh, i, data + si.offset) != si.hash)
				report(v, CH_PROBLEM_SAMPLE, vs->rel, b, NULL,
				       (int64_t)st.offset, "content hash "
				       "mismatch in sample '%.*s'",
				       (int)si.key_len, si.key);
		}
	}
}

static void *worker(void *arg)
{
	struct verifier *v = arg;
	struct ch_block_reader *r = ch_block_reader_new();
	for (;;) {
		pthread_mutex_lock(&v->lock);
		size_t i = v->next < v->ntasks ? v->next++ : SIZE_MAX;
		pthread_mutex_unlock(&v->lock);
		if (i == SIZE_MAX || cancelled(v))
			break;
		if (!r) {
			report(v, CH_PROBLEM_STRUCTURE, NULL, -1, NULL, -1,
			       "out of memory");
			continue;
		}
		if (v->tasks[i].deep)
			deep_pass(v, &v->tasks[i], r);
		else
			file_pass(v, v->tasks[i].shard);
	}
	ch_block_reader_free(r);
	return NULL;
}

/* Shard files in shards/ that the manifest does not list. */
static void find_unexpected(struct verifier *v)
{
	char *dir = ch_path_join(v->ds.root, "shards");
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n < 4 || strcmp(de->d_name + n - 4, ".chs"))
			continue;
		int listed = 0;
		for (size_t s = 0; s < v->nshards && !listed; s++) {
			const char *rel = v->shards[s].rel;
			listed = !strncmp(rel, "shards/", 7) &&
				 !strcmp(rel + 7, de->d_name);
		}
		if (!listed) {
			char rel[512];
			snprintf(rel, sizeof(rel), "shards/%s", de->d_name);
			report(v, CH_PROBLEM_UNEXPECTED, rel, -1, NULL, -1,
			       "shard not listed in the manifest");
		}
	}
	if (d)
		closedir(d);
	free(dir);
}

/* Opens one shard (header, footer, index) and checks what the manifest
 * says of it that needs no full read. */
static void open_shard(struct verifier *v, size_t s)
{
	struct vshard *vs = &v->shards[s];
	const struct ch_manifest_shard *ms = &v->ds.manifest.shards[s];
	struct ch_error err;
	struct stat st;
	vs->rel = ms->path;
	if (!(vs->path = ch_dataset_shard_path(&v->ds, s)))
		return;
	if (stat(vs->path, &st) < 0) {
		report(v, CH_PROBLEM_MISSING, vs->rel, -1, NULL, -1,
		       "missing: %s", strerror(errno));
		return;
	}
	if (!v->ds.lone_shard && (uint64_t)st.st_size != ms->bytes)
		report(v, CH_PROBLEM_SIZE, vs->rel, -1, NULL, -1,
		       "size %llu differs from the manifest's %llu",
		       (unsigned long long)st.st_size,
		       (unsigned long long)ms->bytes);
	if (v->ds.lone_shard) {
		vs->sh = v->ds.shards[0];
		v->ds.shards[0] = NULL;
	} else if (ch_shard_open(&vs->sh, vs->path, &err) < 0) {
		report(v, CH_PROBLEM_STRUCTURE, vs->rel, -1, NULL, -1, "%s",
		       err.msg);
	}
	vs->usable = 1;
	if (vs->sh && !v->ds.lone_shard &&
	    ch_shard_sample_count(vs->sh) != ms->samples)
		report(v, CH_PROBLEM_COUNT, vs->rel, -1, NULL, -1,
		       "holds %llu samples, the manifest says %llu",
		       (unsigned long long)ch_shard_sample_count(vs->sh),
		       (unsigned long long)ms->samples);
	if (vs->sh)
		v->res->samples += ch_shard_sample_count(vs->sh);
}

static int plan_tasks(struct verifier *v, struct ch_error *err)
{
	size_t cap = v->nshards;
	for (size_t s = 0; s < v->nshards; s++)
		if (v->o->deep && v->shards[s].sh)
			cap += ch_shard_block_count(v->shards[s].sh) /
				       DEEP_BLOCKS_PER_TASK + 1;
	if (!(v->tasks = calloc(cap ? cap : 1, sizeof(*v->tasks))))
		return ch_error_set(err, "out of memory");
	for (size_t s = 0; s < v->nshards; s++) {
		if (!v->shards[s].usable)
			continue;
		v->tasks[v->ntasks++] = (struct vtask){ .shard = s };
		uint32_t nb = v->shards[s].sh && v->o->deep
				      ? ch_shard_block_count(v->shards[s].sh)
				      : 0;
		for (uint32_t b = 0; b < nb; b += DEEP_BLOCKS_PER_TASK)
			v->tasks[v->ntasks++] = (struct vtask){
				.shard = s, .deep = 1, .first = b,
				.nblocks = nb - b < DEEP_BLOCKS_PER_TASK
						   ? nb - b : DEEP_BLOCKS_PER_TASK,
			};
	}
	return 0;
}

static void check_manifest(struct verifier *v)
{
	const struct ch_manifest *m = &v->ds.manifest;
	uint64_t expect = 0;
	if (v->ds.lone_shard)
		return;
	if (!m->id_ok)
		report(v, CH_PROBLEM_MANIFEST, NULL, -1, NULL, -1,
		       "manifest id %s does not match its content: the "
		       "manifest was edited", m->id);
	for (size_t s = 0; s < m->nshards; s++) {
		if (m->shards[s].first_sample != expect)
			report(v, CH_PROBLEM_MANIFEST, m->shards[s].path, -1,
			       NULL, -1, "first_sample %llu, expected %llu",
			       (unsigned long long)m->shards[s].first_sample,
			       (unsigned long long)expect);
		expect += m->shards[s].samples;
	}
	if (expect != m->samples)
		report(v, CH_PROBLEM_COUNT, NULL, -1, NULL, -1,
		       "shards hold %llu samples, the manifest's total is %llu",
		       (unsigned long long)expect,
		       (unsigned long long)m->samples);
}

static int run_workers(struct verifier *v, int jobs, struct ch_error *err)
{
	pthread_t *t = calloc((size_t)jobs, sizeof(*t));
	int started = 0;
	if (!t)
		return ch_error_set(err, "out of memory");
	for (; started < jobs; started++)
		if (pthread_create(&t[started], NULL, worker, v) != 0)
			break;
	if (started == 0)
		worker(v);
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
	return 0;
}

int ch_verify(const char *path, const struct ch_verify_opts *o,
	      struct ch_verify_result *res, struct ch_error *err)
{
	struct verifier v = { .o = o, .res = res };
	int rc = -1;
	memset(res, 0, sizeof(*res));
	pthread_mutex_init(&v.lock, NULL);
	if (ch_dataset_open(&v.ds, path, err) < 0)
		goto out;
	v.nshards = v.ds.manifest.nshards;
	if (!(v.shards = calloc(v.nshards ? v.nshards : 1, sizeof(*v.shards)))) {
		ch_error_set(err, "out of memory");
		goto out;
	}
	check_manifest(&v);
	for (size_t s = 0; s < v.nshards && !cancelled(&v); s++)
		open_shard(&v, s);
	res->shards = v.nshards;
	if (!v.ds.lone_shard)
		find_unexpected(&v);
	int jobs = o->jobs > 0 ? o->jobs : ch_cpu_count();
	if (plan_tasks(&v, err) < 0 || run_workers(&v, jobs, err) < 0)
		goto out;
	if (cancelled(&v)) {
		ch_error_set(err, "interrupted");
		goto out;
	}
	rc = 0;
out:
	for (size_t s = 0; s < v.nshards; s++) {
		free(v.shards[s].path);
		ch_shard_close(v.shards[s].sh);
	}
	free(v.shards);
	free(v.tasks);
	ch_dataset_release(&v.ds);
	pthread_mutex_destroy(&v.lock);
	return rc;
}
