/* check/verify.c - checking a dataset against its manifest and its own hashes:
 * every byte of every shard is read once (file XXH3-128 and block XXH3-64
 * in the same pass); --deep also decodes blocks and rehashes samples. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#include "chute/version.h"
#include "chute/check.h"
#include "common/counter.h"
#include "common/internal.h"
#include "common/pool.h"
#include "common/xxh.h"
#include "common/read_range.h"

#define TASK_BYTES (64u << 20) /* stored bytes per block task */
#define DEEP_BLOCKS_PER_TASK 16

struct vshard {
	char *path;	 /* full path */
	const char *rel; /* as in the manifest */
	struct ch_shard *sh;
	int usable;  /* present: worth hashing */
	int file_ok; /* its XXH3-128 matched the manifest's */
};

/* Work is cut into tasks of similar size so that jobs stay busy: first
 * opening every shard, then a whole-file hash per shard and block hashes
 * (or --deep decoding) per range of blocks. */
enum task_kind { TASK_OPEN, TASK_FILE, TASK_BLOCKS, TASK_DEEP, TASK_TALLY };

struct vtask {
	enum task_kind kind;
	size_t shard;
	uint32_t first, count; /* blocks, for TASK_BLOCKS and TASK_DEEP */
	uint64_t cost;	       /* rough nanoseconds, to start long ones first */
};

struct verifier {
	const struct ch_verify_opts *o;
	struct ch_dataset ds;
	struct vshard *shards;
	size_t nshards;
	struct vtask *tasks;
	size_t ntasks;
	pthread_mutex_t lock;
	struct ch_verify_result *res;
	/* --deep: each worker's block reader, made on its first block */
	struct ch_block_reader **readers;
	int nreaders;
	/* each worker's read buffer, kept from task to task */
	struct ch_read_buf *bufs;
	/* fewer file hashes than workers: each read by two threads in turn
	 * (ch_read_range_pair), one large shard not left to one core */
	int pair_files;
	struct ch_counter progress; /* guarded by lock */
	/* the schema's totals as the shards' indexes have them: shards
	 * that are the ones their entries name, summed (guarded by lock),
	 * held against the manifest when that is all of them */
	struct ch_totals totals;
	size_t tallied;
};

static void report(struct verifier *v, enum ch_problem_kind kind,
		   const char *shard, int64_t block, const char *key,
		   int64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

static void report(struct verifier *v, enum ch_problem_kind kind,
		   const char *shard, int64_t block, const char *key,
		   int64_t offset, const char *fmt, ...)
{
	struct ch_problem p = { kind, shard, block, key, offset, NULL };
	va_list ap;
	va_start(ap, fmt);
	ch_problem_vreport(&p, &v->lock, &v->res->problems, v->o->on_problem,
			   v->o->arg, fmt, ap);
	va_end(ap);
}

/* n more shards or blocks done, bytes more hashed. */
static void count(struct verifier *v, uint64_t n, uint64_t bytes)
{
	if (!v->progress.fn)
		return;
	pthread_mutex_lock(&v->lock);
	ch_counter_add(&v->progress, n, bytes);
	pthread_mutex_unlock(&v->lock);
}

/* Whether shard s is one of the part verified (every shard without
 * --part); the dataset-wide checks go with shard 0's part. */
static int in_part(const struct ch_verify_opts *o, size_t s)
{
	return o->parts == 0 || (uint64_t)s % o->parts == o->part;
}

static int cancelled(struct verifier *v)
{
	return v->o->cancel && *v->o->cancel;
}

/* The first sample stored in block b (samples of a block are
 * consecutive), or the sample count if the block holds none. */
static uint64_t first_sample_of(const struct ch_shard *sh, uint32_t b)
{
	uint64_t lo = 0, hi = ch_shard_sample_count(sh);
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		struct ch_sample_info si;
		ch_shard_sample(sh, mid, &si);
		if (si.block < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void report_block(struct verifier *v, struct vshard *vs, uint32_t b,
			 const char *what)
{
	struct ch_block_stat st;
	struct ch_sample_info si = { 0 };
	char key[256] = "";
	ch_shard_block(vs->sh, b, &st);
	uint64_t i = first_sample_of(vs->sh, b);
	if (i < ch_shard_sample_count(vs->sh)) {
		ch_shard_sample(vs->sh, i, &si);
		snprintf(key, sizeof(key), "%.*s",
			 (int)(si.key_len > 200 ? 200 : si.key_len), si.key);
	}
	report(v, CH_PROBLEM_BLOCK, vs->rel, b, key[0] ? key : NULL,
	       (int64_t)st.offset, "%s in block %u (first sample '%s')", what,
	       b, key);
}

struct file_walk {
	struct verifier *v;
	XXH3_state_t state;
};

static void feed_file(const uint8_t *p, uint64_t off, size_t n, void *arg)
{
	struct file_walk *w = arg;
	(void)off;
	XXH3_128bits_update(&w->state, p, n);
	count(w->v, 0, n); /* a chunk at a time: a shard can be large */
}

/* Block hashes over a range of blocks: where each one starts and ends. */
struct block_walk {
	struct verifier *v;
	struct vshard *vs;
	uint32_t b, end_block;
	uint64_t start, end; /* current block's byte range */
	XXH3_state_t state;
};

static void walk_enter(struct block_walk *w)
{
	struct ch_block_stat st;
	if (w->b >= w->end_block)
		return;
	ch_shard_block(w->vs->sh, w->b, &st);
	w->start = st.offset;
	w->end = st.offset + st.stored_size;
	XXH3_64bits_reset(&w->state);
}

static void walk_feed(const uint8_t *p, uint64_t off, size_t n, void *arg)
{
	struct block_walk *w = arg;
	uint64_t end = off + n;
	while (w->b < w->end_block && w->start < end) {
		uint64_t a = off > w->start ? off : w->start;
		uint64_t z = end < w->end ? end : w->end;
		if (a < z)
			XXH3_64bits_update(&w->state, p + (a - off), z - a);
		if (z < w->end)
			return; /* the block goes on in the next window */
		struct ch_block_stat st;
		ch_shard_block(w->vs->sh, w->b, &st);
		if (XXH3_64bits_digest(&w->state) != st.hash)
			report_block(w->v, w->vs, w->b, "checksum mismatch");
		w->b++;
		walk_enter(w);
	}
}

static int open_fd(struct verifier *v, struct vshard *vs)
{
	struct ch_error err;
	int fd = ch_open_regular(vs->path, &err);
	if (fd < 0)
		report(v, CH_PROBLEM_MISSING, vs->rel, -1, NULL, -1, "%s",
		       err.msg);
	return fd;
}

/* Why a range could not be read: errno, or the end of the file when
 * errno is 0. */
static const char *read_failure(void)
{
	return errno ? strerror(errno) : "the file ended early (it shrank "
					 "while read)";
}

/* XXH3-128 of the whole file against the manifest. */
static void file_task(struct verifier *v, const struct vtask *t,
		      int worker)
{
	struct vshard *vs = &v->shards[t->shard];
	const struct ch_manifest_shard *ms = &v->ds.manifest.shards[t->shard];
	struct file_walk file = { .v = v };
	struct stat st;
	int fd = open_fd(v, vs);
	if (fd < 0)
		return;
	XXH3_128bits_reset(&file.state);
	if (fstat(fd, &st) < 0 ||
	    (v->pair_files ? ch_read_range_pair : ch_read_range)(
		    fd, 0, (uint64_t)st.st_size, feed_file, &file,
		    &v->bufs[worker], v->o->cancel) < 0) {
		report(v, CH_PROBLEM_STRUCTURE, vs->rel, -1, NULL, -1,
		       "cannot read: %s", read_failure());
		close(fd);
		return;
	}
	close(fd);
	pthread_mutex_lock(&v->lock);
	v->res->bytes += (uint64_t)st.st_size;
	ch_counter_add(&v->progress, 1, 0);
	pthread_mutex_unlock(&v->lock);
	XXH128_hash_t h = XXH3_128bits_digest(&file.state);
	struct ch_hash128 got = { h.high64, h.low64 };
	if (v->ds.lone_shard || cancelled(v))
		return;
	if (got.high == ms->hash.high && got.low == ms->hash.low) {
		vs->file_ok = 1;
		return;
	}
	char a[33], b[33];
	ch_hash128_hex(got, a);
	ch_hash128_hex(ms->hash, b);
	report(v, CH_PROBLEM_FILE_HASH, vs->rel, -1, NULL, -1,
	       "file hash %s differs from the manifest's %s", a, b);
}

/* XXH3-64 of each stored block in [first, first + count). */
static void blocks_task(struct verifier *v, const struct vtask *t,
			int worker)
{
	struct vshard *vs = &v->shards[t->shard];
	struct block_walk w = { .v = v, .vs = vs, .b = t->first,
				.end_block = t->first + t->count };
	struct ch_block_stat a, z;
	int fd = open_fd(v, vs);
	if (fd < 0)
		return;
	ch_shard_block(vs->sh, t->first, &a);
	ch_shard_block(vs->sh, t->first + t->count - 1, &z);
	walk_enter(&w);
	if (ch_read_range(fd, a.offset, z.offset + z.stored_size, walk_feed,
			  &w, &v->bufs[worker], v->o->cancel) < 0)
		report(v, CH_PROBLEM_STRUCTURE, vs->rel, -1, NULL,
		       (int64_t)a.offset, "cannot read: %s", read_failure());
	close(fd);
}

/* --deep: decode each block (checking its hash) and rehash its samples.
 * A resource error (memory) fails the task: no verdict on the data, exit
 * 2. */
static int deep_task(struct verifier *v, const struct vtask *t,
		     struct ch_block_reader *r, struct ch_error *fail)
{
	struct vshard *vs = &v->shards[t->shard];
	uint64_t n = ch_shard_sample_count(vs->sh);
	for (uint32_t b = t->first; b < t->first + t->count; b++) {
		const uint8_t *data;
		size_t size;
		struct ch_error err;
		if (cancelled(v))
			return 0;
		if (ch_block_reader_reserve(r, vs->sh, b, fail) < 0)
			return -1;
		if (ch_block_read(r, vs->sh, b, &data, &size, &err) < 0) {
			report_block(v, vs, b, "cannot read or decode");
			continue;
		}
		for (uint64_t i = first_sample_of(vs->sh, b); i < n; i++) {
			struct ch_sample_info si;
			ch_shard_sample(vs->sh, i, &si);
			if (si.block != b)
				break;
			if (ch_sample_hash(vs->sh, i, data + si.offset) != si.hash)
				report(v, CH_PROBLEM_SAMPLE, vs->rel, b, NULL, -1,
				       "content hash mismatch in sample "
				       "'%.*s'", (int)si.key_len, si.key);
		}
	}
	return 0;
}

static void open_shard(struct verifier *v, size_t s);
static void tally_task(struct verifier *v, size_t s);

/* Task i of the phase, on the pool's worker number worker. */
static int run_task(void *arg, size_t i, int worker, struct ch_error *err)
{
	struct verifier *v = arg;
	const struct vtask *t = &v->tasks[i];
	struct ch_block_reader **r = &v->readers[worker];
	int rc = 0;
	switch (t->kind) {
	case TASK_OPEN: open_shard(v, t->shard); return 0;
	case TASK_TALLY: tally_task(v, t->shard); return 0;
	case TASK_FILE: file_task(v, t, worker); return 0;
	case TASK_BLOCKS: blocks_task(v, t, worker); break;
	case TASK_DEEP:
		if (!*r)
			*r = ch_block_reader_new();
		if (*r)
			rc = deep_task(v, t, *r, err);
		else
			report(v, CH_PROBLEM_STRUCTURE, NULL, -1, NULL, -1,
			       "out of memory");
		break;
	}
	count(v, t->count, 0);
	return rc;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Shard files in shards/ that the manifest does not list: its names in
 * shards/, sorted, looked up by binary search. */
static void find_unexpected(struct verifier *v)
{
	char *dir = ch_path_join(v->ds.root, "shards");
	const char **listed = malloc((v->nshards + 1) * sizeof(*listed));
	DIR *d = dir && listed ? opendir(dir) : NULL;
	struct dirent *de;
	size_t n = 0;
	for (size_t s = 0; d && s < v->nshards; s++)
		if (!strncmp(v->shards[s].rel, "shards/", 7))
			listed[n++] = v->shards[s].rel + 7;
	if (d)
		qsort(listed, n, sizeof(*listed), cmp_name);
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);
		const char *name = de->d_name;
		if (len < 4 || strcmp(de->d_name + len - 4, ".chs") ||
		    bsearch(&name, listed, n, sizeof(*listed), cmp_name))
			continue;
		char rel[512];
		snprintf(rel, sizeof(rel), "shards/%s", de->d_name);
		report(v, CH_PROBLEM_UNEXPECTED, rel, -1, NULL, -1,
		       "shard not listed in the manifest");
	}
	if (d)
		closedir(d);
	free(listed);
	free(dir);
}

/* A FIFO or a device where a file of the dataset should be is no
 * corruption of the data but the caller's error (exit 2), found before
 * anything opens it: opening a FIFO waits for a writer. */
static int refuse_special(const char *path, const struct stat *st,
			  struct ch_error *err)
{
	if (S_ISREG(st->st_mode))
		return 0;
	return ch_error_set(err, "cannot verify '%s': it is not a regular "
			    "file", path);
}

static int refuse_special_manifest(const char *path, struct ch_error *err)
{
	char *man = ch_manifest_path(path);
	struct stat st;
	int rc = 0;
	if (!man)
		return ch_error_nomem(err);
	if (stat(man, &st) == 0)
		rc = refuse_special(man, &st, err);
	free(man);
	return rc;
}

/* Finds one shard file and checks its size: cheap, done up front so that
 * the open and hash tasks of a missing shard never run. */
static int locate_shard(struct verifier *v, size_t s, struct ch_error *err)
{
	struct vshard *vs = &v->shards[s];
	const struct ch_manifest_shard *ms = &v->ds.manifest.shards[s];
	struct stat st;
	if (!(vs->path = ch_dataset_shard_path(&v->ds, s)))
		return 0;
	if (stat(vs->path, &st) < 0) {
		report(v, CH_PROBLEM_MISSING, vs->rel, -1, NULL, -1,
		       "missing: %s", strerror(errno));
		free(vs->path); /* nothing will open it */
		vs->path = NULL;
		return 0;
	}
	if (refuse_special(vs->path, &st, err) < 0)
		return -1;
	if (!v->ds.lone_shard && (uint64_t)st.st_size != ms->bytes)
		report(v, CH_PROBLEM_SIZE, vs->rel, -1, NULL, -1,
		       "size %llu differs from the manifest's %llu",
		       (unsigned long long)st.st_size,
		       (unsigned long long)ms->bytes);
	vs->usable = 1;
	return 0;
}

/* Whether sh is the shard entry s names (size, samples, seal): only then
 * do its fields count towards the schema's totals, which would
 * otherwise repeat what was reported of the shard itself. */
static int is_entry(const struct verifier *v, size_t s,
		    const struct ch_shard *sh)
{
	const struct ch_manifest_shard *ms = &v->ds.manifest.shards[s];
	struct ch_hash128 seal = ch_shard_seal(sh);
	return ch_shard_file_size(sh) == ms->bytes &&
	       ch_shard_sample_count(sh) == ms->samples &&
	       (!ms->has_seal || (seal.high == ms->seal.high &&
				  seal.low == ms->seal.low));
}

/* Adds shard s's fields to the totals, for part 0 (which checks them). */
static void tally(struct verifier *v, size_t s, const struct ch_shard *sh)
{
	if (!v->ds.lone_shard && in_part(v->o, 0) && is_entry(v, s, sh))
		ch_totals_add_shard_locked(&v->totals, &v->lock, &v->tallied,
					   sh);
}

/* Opens one shard: header, footer and index, with their hashes and every
 * rule of chute-shard(5); then the counts the manifest gives. */
static void open_shard(struct verifier *v, size_t s)
{
	struct vshard *vs = &v->shards[s];
	const struct ch_manifest_shard *ms = &v->ds.manifest.shards[s];
	struct ch_error err;
	if (v->ds.lone_shard) {
		vs->sh = v->ds.shards[0];
		v->ds.shards[0] = NULL;
	} else if (ch_shard_open(&vs->sh, vs->path, &err) < 0) {
		report(v, CH_PROBLEM_STRUCTURE, vs->rel, -1, NULL, -1, "%s",
		       err.msg);
		return;
	}
	if (!v->ds.lone_shard && ch_shard_sample_count(vs->sh) != ms->samples)
		report(v, CH_PROBLEM_COUNT, vs->rel, -1, NULL, -1,
		       "holds %llu %s, the manifest says %llu",
		       (unsigned long long)ch_shard_sample_count(vs->sh),
		       ch_plural(ch_shard_sample_count(vs->sh), "sample",
				 "samples"),
		       (unsigned long long)ms->samples);
	struct ch_hash128 seal = ch_shard_seal(vs->sh);
	if (!v->ds.lone_shard && ms->has_seal &&
	    (seal.high != ms->seal.high || seal.low != ms->seal.low)) {
		char a[33], b[33];
		ch_hash128_hex(seal, a);
		ch_hash128_hex(ms->seal, b);
		report(v, CH_PROBLEM_FILE_HASH, vs->rel, -1, NULL, -1,
		       "seal %s differs from the manifest's %s", a, b);
	}
	const char *field = v->ds.lone_shard ? NULL :
			    ch_dataset_unlisted_field(&v->ds.manifest, vs->sh);
	if (field) /* ls, cat and stream refuse to read such a shard */
		report(v, CH_PROBLEM_MANIFEST, vs->rel, -1, NULL, -1,
		       "holds field '%s', which the manifest's schema does "
		       "not list", field);
	pthread_mutex_lock(&v->lock);
	v->res->samples += ch_shard_sample_count(vs->sh);
	v->res->blocks += ch_shard_block_count(vs->sh);
	pthread_mutex_unlock(&v->lock);
	tally(v, s, vs->sh);
}

/* Part 0 of --part: a shard of another part, opened for its index alone
 * (its own part checks the rest and reports what fails). */
static void tally_task(struct verifier *v, size_t s)
{
	char *path = ch_dataset_shard_path(&v->ds, s);
	struct ch_shard *sh = NULL;
	struct ch_error err;
	if (path && ch_shard_open(&sh, path, &err) == 0)
		tally(v, s, sh);
	ch_shard_close(sh);
	free(path);
}

static int add_task(struct verifier *v, struct vtask t, size_t *cap,
		    struct ch_error *err)
{
	if (v->ntasks == *cap) {
		size_t n = *cap ? *cap * 2 : 64;
		struct vtask *nt = realloc(v->tasks, n * sizeof(*nt));
		if (!nt)
			return ch_error_nomem(err);
		v->tasks = nt;
		*cap = n;
	}
	v->tasks[v->ntasks++] = t;
	return 0;
}

/* Ranges of consecutive blocks of about TASK_BYTES stored bytes each (or
 * DEEP_BLOCKS_PER_TASK blocks to decode). */
static int add_block_tasks(struct verifier *v, size_t s, size_t *cap,
			   struct ch_error *err)
{
	const struct ch_shard *sh = v->shards[s].sh;
	uint32_t nb = ch_shard_block_count(sh), first = 0;
	uint64_t bytes = 0;
	enum task_kind kind = v->o->deep ? TASK_DEEP : TASK_BLOCKS;
	for (uint32_t b = 0; b < nb; b++) {
		struct ch_block_stat st;
		ch_shard_block(sh, b, &st);
		bytes += st.stored_size;
		uint32_t count = b + 1 - first;
		if (b + 1 < nb && (v->o->deep ? count < DEEP_BLOCKS_PER_TASK
					       : bytes < TASK_BYTES))
			continue;
		struct vtask t = { kind, s, first, count, bytes };
		if (add_task(v, t, cap, err) < 0)
			return -1;
		first = b + 1;
		bytes = 0;
	}
	return 0;
}

/* Phases: open every shard and hash every file (independent tasks, run
 * side by side); then hash blocks where the file hash cannot vouch for
 * them (--deep: the file hashes move to this phase, beside the blocks,
 * each worker reading its own; one large shard then keeps every core
 * busy instead of one hashing while the others wait).  A file whose
 * XXH3-128 matches the
 * manifest holds exactly the bytes the writer hashed, blocks and index
 * included, so its block hashes hold too and rehashing them would only
 * double the work; they are rehashed to locate the damage when the file
 * hash differs, for a lone shard (no manifest), and with --deep (which
 * decodes every block anyway). */
enum phase { PHASE_FILES, PHASE_BLOCKS };

/* Longest first, so that no long task starts last (the order of reports
 * is not part of the output's contract; the set of problems is). */
static int cmp_cost(const void *a, const void *b)
{
	const struct vtask *x = a, *y = b;
	if (x->cost != y->cost)
		return x->cost > y->cost ? -1 : 1;
	if (x->shard != y->shard)
		return x->shard < y->shard ? -1 : 1;
	return x->kind < y->kind ? -1 : x->kind > y->kind;
}

/* Files: shards and their bytes; blocks: blocks, and with --deep a
 * shard's file hash as one (a phase with nothing to count, such as
 * --deep's opening of the shards, shows nothing). */
static void start_phase(struct verifier *v, enum phase phase)
{
	uint64_t n = 0, bytes = 0;
	for (size_t i = 0; i < v->ntasks; i++) {
		const struct vtask *t = &v->tasks[i];
		if (t->kind == TASK_FILE) {
			n++;
			if (phase == PHASE_FILES)
				bytes += v->ds.manifest.shards[t->shard].bytes;
		} else {
			n += t->count;
		}
	}
	ch_counter_end(&v->progress);
	if (n)
		ch_counter_phase(&v->progress, phase == PHASE_FILES ?
				 "hashing" : "checking blocks",
				 phase == PHASE_FILES ? "shards" : "blocks",
				 n, bytes);
}

static int plan_tasks(struct verifier *v, enum phase phase,
		      struct ch_error *err)
{
	size_t cap = 0;
	free(v->tasks);
	v->tasks = NULL;
	v->ntasks = 0;
	for (size_t s = 0; s < v->nshards; s++) {
		const struct vshard *vs = &v->shards[s];
		int rc = 0;
		const struct ch_manifest_shard *ms = &v->ds.manifest.shards[s];
		/* measured here: ~200 ns a sample to decode and check an
		 * index, ~7 GB/s to hash */
		struct vtask open = { TASK_OPEN, s, 0, 0, ms->samples * 200 };
		struct vtask file = { TASK_FILE, s, 0, 0, ms->bytes / 7 };
		struct vtask tally = { TASK_TALLY, s, 0, 0, open.cost };
		/* --deep decodes every block whatever the file hash says:
		 * the file hash runs on one worker beside the blocks */
		enum phase file_phase = v->o->deep ? PHASE_BLOCKS : PHASE_FILES;
		if (phase == PHASE_FILES && vs->usable)
			rc = add_task(v, open, &cap, err);
		else if (phase == PHASE_FILES && !in_part(v->o, s) &&
			 in_part(v->o, 0) && !v->ds.lone_shard)
			rc = add_task(v, tally, &cap, err);
		if (rc == 0 && phase == file_phase && vs->usable)
			rc = add_task(v, file, &cap, err);
		if (rc == 0 && phase == PHASE_BLOCKS && vs->sh &&
		    (v->o->deep || !vs->file_ok))
			rc = add_block_tasks(v, s, &cap, err);
		if (rc < 0)
			return -1;
	}
	if (v->ntasks)
		qsort(v->tasks, v->ntasks, sizeof(*v->tasks), cmp_cost);
	size_t files = 0;
	for (size_t i = 0; i < v->ntasks; i++)
		files += v->tasks[i].kind == TASK_FILE;
	/* --deep hashes files beside its blocks: every worker is busy */
	v->pair_files = !v->o->deep && files < (size_t)v->nreaders;
	start_phase(v, phase);
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
		       "shards hold %llu %s, the manifest's total is %llu",
		       (unsigned long long)expect,
		       ch_plural(expect, "sample", "samples"),
		       (unsigned long long)m->samples);
}

/* A field the schema lacks was reported by each shard that holds it. */
static void on_total(const char *message, int unlisted, void *arg)
{
	if (unlisted)
		return;
	report(arg, CH_PROBLEM_COUNT, NULL, -1, NULL, -1, "%s", message);
}

/* The schema's totals against the shards', once every shard was counted
 * (a shard missing, unreadable or not the one its entry names is
 * reported as such, and leaves the totals unknown). */
static void check_totals(struct verifier *v)
{
	if (v->ds.lone_shard || !in_part(v->o, 0) || cancelled(v) ||
	    v->tallied < v->nshards)
		return;
	ch_totals_compare(&v->ds.manifest, &v->totals, on_total, v);
}

/* ------------------------------------------------------------------ */
/* Split files (chute-manifest(5), SPLIT FILES): small, checked here in
 * one thread before the shards. */

/* The file's bytes if it is there with the recorded size; NULL after
 * reporting why not. */
static uint8_t *read_split(struct verifier *v,
			   const struct ch_manifest_split *sp)
{
	char *path = ch_path_join(v->ds.root, sp->path), *data = NULL;
	struct ch_error err;
	struct stat st;
	size_t len;

	if (!path)
		report(v, CH_PROBLEM_STRUCTURE, sp->path, -1, NULL, -1,
		       "out of memory");
	else if (stat(path, &st) < 0)
		report(v, CH_PROBLEM_MISSING, sp->path, -1, NULL, -1,
		       "missing: %s", strerror(errno));
	else if ((uint64_t)st.st_size != sp->bytes)
		report(v, CH_PROBLEM_SIZE, sp->path, -1, NULL, -1,
		       "size %llu differs from the manifest's %llu",
		       (unsigned long long)st.st_size,
		       (unsigned long long)sp->bytes);
	else if (ch_read_file(path, (size_t)sp->bytes, &data, &len, &err) < 0)
		report(v, CH_PROBLEM_STRUCTURE, sp->path, -1, NULL, -1, "%s",
		       err.msg);
	free(path);
	return (uint8_t *)data;
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t x = 0;
	for (int i = 7; i >= 0; i--)
		x = x << 8 | p[i];
	return x;
}

/* Sample numbers ascending and in range, each marked in seen; returns -1
 * (reported) at the first one out of order. */
static int mark_split(struct verifier *v, const struct ch_manifest_split *sp,
		      const uint8_t *data, uint8_t *seen)
{
	uint64_t n = v->ds.manifest.samples, prev = 0, twice = 0, first = 0;
	for (uint64_t i = 0; i < sp->samples; i++) {
		uint64_t x = get_le64(data + 8 * i);
		if (x >= n || (i > 0 && x <= prev)) {
			report(v, CH_PROBLEM_STRUCTURE, sp->path, -1, NULL,
			       (int64_t)(8 * i), "sample number %llu is %s",
			       (unsigned long long)x, x >= n ?
			       "past the dataset's last sample" :
			       "not above the previous one");
			return -1;
		}
		if (seen[x / 8] & (1u << (x % 8)) && twice++ == 0)
			first = x;
		seen[x / 8] |= (uint8_t)(1u << (x % 8));
		prev = x;
	}
	if (twice)
		report(v, CH_PROBLEM_COUNT, sp->path, -1, NULL, -1,
		       "%llu %s also in another split (the first: #%llu)",
		       (unsigned long long)twice,
		       ch_plural(twice, "sample is", "samples are"),
		       (unsigned long long)first);
	return 0;
}

/* Present, the recorded size and hash, ascending, within the dataset;
 * returns -1 when the file cannot count towards coverage. */
static int check_split_file(struct verifier *v,
			    const struct ch_manifest_split *sp, uint8_t *seen)
{
	uint8_t *data = read_split(v, sp);
	if (!data)
		return -1;
	struct ch_hash128 h = ch_hash128(data, sp->bytes);
	if (h.high != sp->hash.high || h.low != sp->hash.low) {
		char a[33], b[33];
		ch_hash128_hex(h, a);
		ch_hash128_hex(sp->hash, b);
		report(v, CH_PROBLEM_FILE_HASH, sp->path, -1, NULL, -1,
		       "file hash %s differs from the manifest's %s", a, b);
	}
	int rc = mark_split(v, sp, data, seen);
	free(data);
	return rc;
}

/* The splits together hold every sample once (overlaps are reported per
 * file); coverage is only worth checking when every file was readable. */
static void check_splits(struct verifier *v)
{
	const struct ch_manifest *m = &v->ds.manifest;
	if (v->ds.lone_shard || m->nsplits == 0)
		return;
	uint8_t *seen = calloc((size_t)(m->samples / 8 + 1), 1);
	int usable = 1;
	if (!seen) {
		report(v, CH_PROBLEM_STRUCTURE, NULL, -1, NULL, -1,
		       "out of memory checking the split files");
		return;
	}
	for (size_t i = 0; i < m->nsplits; i++)
		if (check_split_file(v, &m->splits[i], seen) < 0)
			usable = 0;
	uint64_t left = 0, first = 0;
	for (uint64_t x = 0; usable && x < m->samples; x++)
		if (!(seen[x / 8] & (1u << (x % 8))) && left++ == 0)
			first = x;
	if (left)
		report(v, CH_PROBLEM_COUNT, NULL, -1, NULL, -1,
		       "%llu %s in no split (the first: #%llu)",
		       (unsigned long long)left,
		       ch_plural(left, "sample is", "samples are"),
		       (unsigned long long)first);
	free(seen);
}

/* A manifest or lone shard that does not open: one problem, the lone
 * shard's (a problem of its structure) or the manifest's. */
static void report_unopened(struct verifier *v, const char *path,
			    const struct ch_error *err)
{
	const char *slash = strrchr(path, '/');
	if (!ch_dataset_is_lone_shard(path)) {
		report(v, CH_PROBLEM_MANIFEST, NULL, -1, NULL, -1, "%s",
		       err->msg);
		return;
	}
	/* named as ch_dataset_open names it: its file name */
	report(v, CH_PROBLEM_STRUCTURE, slash ? slash + 1 : path, -1, NULL,
	       -1, "%s", err->msg);
}

int ch_verify(const char *path, const struct ch_verify_opts *o,
	      struct ch_verify_result *res, struct ch_error *err)
{
	struct verifier v = { .o = o, .res = res };
	int rc = -1;
	memset(res, 0, sizeof(*res));
	ch_counter_init(&v.progress, o->progress, o->progress_arg);
	pthread_mutex_init(&v.lock, NULL);
	if (ch_verify_part_check(o, err) < 0)
		goto out;
	if (access(path, R_OK) < 0) {
		ch_error_errno(err, errno, "cannot open '%s'", path);
		goto out;
	}
	if (refuse_special_manifest(path, err) < 0)
		goto out;
	if (ch_dataset_open(&v.ds, path, err) < 0) {
		if (err->kind != CH_ERR_DATA)
			goto out; /* no such dataset: nothing to check */
		/* the manifest or lone shard is there but damaged: the
		 * data failed the check (a lone shard: a file with a
		 * problem) */
		report_unopened(&v, path, err);
		rc = 0;
		goto out;
	}
	v.nshards = v.ds.manifest.nshards;
	if (!(v.shards = calloc(v.nshards ? v.nshards : 1, sizeof(*v.shards)))) {
		ch_error_nomem(err);
		goto out;
	}
	for (size_t s = 0; s < v.nshards; s++)
		v.shards[s].rel = v.ds.manifest.shards[s].path;
	if (in_part(o, 0)) {
		check_manifest(&v);
		check_splits(&v);
		if (!v.ds.lone_shard)
			find_unexpected(&v);
	}
	int jobs = o->jobs > 0 ? o->jobs : ch_cpu_count();
	v.nreaders = jobs;
	if (!(v.readers = calloc((size_t)jobs, sizeof(*v.readers))) ||
	    !(v.bufs = calloc((size_t)jobs, sizeof(*v.bufs)))) {
		ch_error_nomem(err);
		goto out;
	}
	for (size_t s = 0; s < v.nshards; s++) {
		if (!in_part(o, s))
			continue; /* neither opened nor hashed: not usable */
		res->shards++;
		if (locate_shard(&v, s, err) < 0)
			goto out;
	}
	for (enum phase p = PHASE_FILES; p <= PHASE_BLOCKS; p++)
		if (plan_tasks(&v, p, err) < 0 ||
		    ch_pool_run(jobs, v.ntasks, run_task, &v, o->cancel,
				err) < 0)
			goto out;
	ch_counter_end(&v.progress);
	check_totals(&v);
	if (cancelled(&v)) {
		ch_error_interrupted(err);
		goto out;
	}
	rc = 0;
out:
	for (size_t s = 0; s < v.nshards; s++) {
		free(v.shards[s].path);
		ch_shard_close(v.shards[s].sh);
	}
	for (int i = 0; v.readers && i < v.nreaders; i++)
		ch_block_reader_free(v.readers[i]);
	free(v.readers);
	for (int i = 0; v.bufs && i < v.nreaders; i++)
		ch_read_buf_release(&v.bufs[i]);
	free(v.bufs);
	free(v.shards);
	free(v.tasks);
	ch_dataset_release(&v.ds);
	ch_totals_release(&v.totals);
	pthread_mutex_destroy(&v.lock);
	return rc;
}
