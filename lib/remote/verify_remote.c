/* remote/verify_remote.c - chute verify REMOTE@TAG: a version checked where
 * it lies.  Its manifest must hash to its id; each shard object is opened
 * by range requests (header, footer and index, every rule of
 * chute-shard(5)) and streamed once through XXH3-128 against the
 * manifest; split files are fetched whole (they are small).  Nothing is
 * written locally: no cache, no temporary file. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chute/remote.h"
#include "common/counter.h"
#include "common/internal.h"
#include "common/pool.h"
#include "common/xxh.h"

enum { AHEAD = 4, CHUNK = 4 << 20, READ = 1 << 20 };

struct rverify {
	const struct ch_verify_opts *o;
	struct ch_store *st;
	struct ch_manifest m;
	size_t *todo; /* the shards of this part */
	size_t ntodo;
	pthread_mutex_t lock;
	struct ch_verify_result *res;
	struct ch_counter progress; /* guarded by lock */
};

/* A problem with object key (NULL: with the version as a whole), named by
 * its url; what the manifest calls it goes in the message. */
__attribute__((format(printf, 7, 8))) static void
problem(struct rverify *v, enum ch_problem_kind kind, const char *key,
	int64_t block, const char *sample, int64_t offset, const char *fmt,
	...)
{
	char *url = key ? ch_store_key_url(v->st, key) : NULL;
	struct ch_problem p = {kind, url ? url : key, block, sample, offset,
			       NULL};
	va_list ap;
	va_start(ap, fmt);
	ch_problem_vreport(&p, &v->lock, &v->res->problems, v->o->on_problem,
			   v->o->arg, fmt, ap);
	va_end(ap);
	free(url);
}

/* An error that is the data's (a shard that does not parse; e names it
 * as the manifest does) is a problem to report; any other (a request
 * that failed for good) stops the run. */
static int data_or_fail(struct rverify *v, const char *key,
			const struct ch_error *e, struct ch_error *err)
{
	if (e->kind != CH_ERR_DATA) {
		*err = *e;
		return -1;
	}
	problem(v, CH_PROBLEM_STRUCTURE, key, -1, NULL, -1, "%s", e->msg);
	return 0;
}

/* A shard object read by range requests, for ch_shard_open_source. */
struct ranged {
	struct ch_store *st;
	const char *key;
};

static int ranged_read(void *arg, void *buf, size_t n, uint64_t off,
		       struct ch_error *err)
{
	const struct ranged *r = arg;
	return ch_store_get_range(r->st, r->key, off, n, buf, err);
}

static void ranged_release(void *arg)
{
	(void)arg; /* on the caller's stack */
}

/* The whole object once, front to back: its XXH3-128. */
static int stream_hash(struct rverify *v, const char *key, uint64_t size,
		       struct ch_hash128 *out, struct ch_error *err)
{
	struct ch_store_stream *in;
	XXH3_state_t state;
	uint8_t *buf = malloc(READ);
	ssize_t n = 0;
	if (!buf)
		return ch_error_nomem(err);
	if (ch_store_stream_open(&in, v->st, key, size, AHEAD, CHUNK, err) < 0) {
		free(buf);
		return -1;
	}
	XXH3_128bits_reset(&state);
	while (!(v->o->cancel && *v->o->cancel) &&
	       (n = ch_store_stream_read(in, buf, READ, err)) > 0) {
		XXH3_128bits_update(&state, buf, (size_t)n);
		pthread_mutex_lock(&v->lock);
		v->res->bytes += (uint64_t)n;
		ch_counter_add(&v->progress, 0, (uint64_t)n);
		pthread_mutex_unlock(&v->lock);
	}
	ch_store_stream_close(in);
	free(buf);
	XXH128_hash_t h = XXH3_128bits_digest(&state);
	*out = (struct ch_hash128){h.high64, h.low64};
	return n < 0 ? -1 : 0;
}

/* The first key stored in block b, for the message. */
static void block_key(const struct ch_shard *sh, uint32_t b, char *out,
		      size_t size)
{
	struct ch_sample_info si;
	out[0] = '\0';
	for (uint64_t i = 0; i < ch_shard_sample_count(sh); i++) {
		ch_shard_sample(sh, i, &si);
		if (si.block == b) {
			ch_escape(out, size, si.key, si.key_len);
			return;
		}
	}
}

/* The file hash differs: which blocks, each read again by range. */
static int find_bad_blocks(struct rverify *v, const char *key,
			   const char *rel, const struct ch_shard *sh,
			   uint64_t size, struct ch_error *err)
{
	struct ch_buf b = {0};
	for (uint32_t i = 0; i < ch_shard_block_count(sh); i++) {
		struct ch_block_stat bs;
		char first[256];
		ch_shard_block(sh, i, &bs);
		if (bs.offset + bs.stored_size > size)
			break; /* past a short object: its size is reported */
		b.len = 0;
		if (ch_buf_reserve(&b, (size_t)bs.stored_size, err) < 0 ||
		    ch_store_get_range(v->st, key, bs.offset,
				       (size_t)bs.stored_size, b.data,
				       err) < 0) {
			ch_buf_release(&b);
			return -1;
		}
		if (ch_hash64(b.data, (size_t)bs.stored_size) == bs.hash)
			continue;
		block_key(sh, i, first, sizeof(first));
		problem(v, CH_PROBLEM_BLOCK, key, i, first[0] ? first : NULL,
			(int64_t)bs.offset, "checksum mismatch in block %u of %s",
			i, rel);
	}
	ch_buf_release(&b);
	return 0;
}

/* The counts and the seal the manifest gives for the shard. */
static void check_counts(struct rverify *v, const char *key,
			 const struct ch_manifest_shard *ms,
			 const struct ch_shard *sh)
{
	uint64_t n = ch_shard_sample_count(sh);
	struct ch_hash128 seal = ch_shard_seal(sh);
	char a[33], b[33];
	if (n != ms->samples)
		problem(v, CH_PROBLEM_COUNT, key, -1, NULL, -1,
			"%s holds %llu %s, the manifest says %llu", ms->path,
			(unsigned long long)n,
			ch_plural(n, "sample", "samples"),
			(unsigned long long)ms->samples);
	if (ms->has_seal &&
	    (seal.high != ms->seal.high || seal.low != ms->seal.low)) {
		ch_hash128_hex(seal, a);
		ch_hash128_hex(ms->seal, b);
		problem(v, CH_PROBLEM_FILE_HASH, key, -1, NULL, -1,
			"seal %s differs from the manifest's %s (%s)", a, b,
			ms->path);
	}
	pthread_mutex_lock(&v->lock);
	v->res->samples += n;
	v->res->blocks += ch_shard_block_count(sh);
	pthread_mutex_unlock(&v->lock);
}

/* Whether key is there with the manifest's size; 0 after reporting what
 * is not, -1 when the remote could not say. */
static int object_there(struct rverify *v, const char *key, const char *rel,
			uint64_t bytes, uint64_t *size, struct ch_error *err)
{
	int there = ch_store_stat(v->st, key, size, err);
	if (there == 0)
		problem(v, CH_PROBLEM_MISSING, key, -1, NULL, -1,
			"missing from the remote (%s)", rel);
	else if (there == 1 && *size != bytes)
		problem(v, CH_PROBLEM_SIZE, key, -1, NULL, -1,
			"size %llu differs from the manifest's %llu (%s)",
			(unsigned long long)*size, (unsigned long long)bytes,
			rel);
	return there;
}

static void hash_differs(struct rverify *v, const char *key, const char *rel,
			 struct ch_hash128 got, struct ch_hash128 want)
{
	char a[33], b[33];
	ch_hash128_hex(got, a);
	ch_hash128_hex(want, b);
	problem(v, CH_PROBLEM_FILE_HASH, key, -1, NULL, -1,
		"file hash %s differs from the manifest's %s (%s)", a, b, rel);
}

static int verify_shard(struct rverify *v, const struct ch_manifest_shard *ms,
			const char *key, struct ch_error *err)
{
	struct ranged r = {v->st, key};
	struct ch_shard *sh = NULL;
	struct ch_hash128 got;
	struct ch_error e = {0};
	uint64_t size = 0;
	int rc = object_there(v, key, ms->path, ms->bytes, &size, err);
	if (rc <= 0)
		return rc;
	struct ch_byte_source src = {ranged_read, ranged_release, &r, size};
	if (ch_shard_open_source(&sh, ms->path, &src, &e) < 0 &&
	    data_or_fail(v, key, &e, err) < 0)
		return -1;
	if (sh)
		check_counts(v, key, ms, sh);
	rc = stream_hash(v, key, size, &got, err);
	if (rc == 0 && (got.high != ms->hash.high || got.low != ms->hash.low)) {
		hash_differs(v, key, ms->path, got, ms->hash);
		if (sh)
			rc = find_bad_blocks(v, key, ms->path, sh, size, err);
	}
	ch_shard_close(sh);
	return rc;
}

static int shard_task(void *arg, size_t i, int worker, struct ch_error *err)
{
	struct rverify *v = arg;
	const struct ch_manifest_shard *ms = &v->m.shards[v->todo[i]];
	char *key = ch_remote_cas_key(ms->hash, ms->path);
	(void)worker;
	if (!key)
		return ch_error_nomem(err);
	int rc = verify_shard(v, ms, key, err);
	free(key);
	pthread_mutex_lock(&v->lock);
	ch_counter_add(&v->progress, 1, 0);
	pthread_mutex_unlock(&v->lock);
	return rc;
}

/* Split files: small, fetched whole, their size and hash. */
static int verify_splits(struct rverify *v, struct ch_error *err)
{
	for (size_t i = 0; i < v->m.nsplits; i++) {
		const struct ch_manifest_split *sp = &v->m.splits[i];
		char *key = ch_remote_cas_key(sp->hash, sp->path);
		struct ch_buf b = {0};
		uint64_t size;
		int rc = key ? object_there(v, key, sp->path, sp->bytes,
					    &size, err)
			     : ch_error_nomem(err);
		if (rc == 1 && size == sp->bytes &&
		    (rc = ch_store_get(v->st, key, (size_t)size, &b, err)) == 0) {
			struct ch_hash128 h = ch_hash128(b.data, b.len);
			if (h.high != sp->hash.high || h.low != sp->hash.low)
				hash_differs(v, key, sp->path, h, sp->hash);
		}
		ch_buf_release(&b);
		free(key);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* versions/ID.json: fetched (a missing one is an error, exit 2) and
 * parsed; one that does not hash to ID is a problem.  Returns 1 when the
 * manifest is usable. */
static int load_manifest(struct rverify *v, const char *at,
			 struct ch_error *err)
{
	struct ch_buf raw = {0};
	struct ch_error e = {0};
	char id[33], key[48];
	int rc = ch_remote_resolve(v->st, at, id, err);
	if (rc != 0)
		return -1;
	snprintf(key, sizeof(key), "versions/%s.json", id);
	if ((rc = ch_store_get(v->st, key, 64u << 20, &raw, err)) == 1)
		ch_error_set(err, "no version %s on %s", id,
			     ch_store_url(v->st));
	if (rc != 0) {
		ch_buf_release(&raw);
		return -1;
	}
	rc = ch_remote_parse_version(v->st, id, &raw, &v->m, &e) == 0;
	if (!rc) /* e names the object */
		problem(v, CH_PROBLEM_MANIFEST, NULL, -1, NULL, -1, "%s", e.msg);
	ch_buf_release(&raw);
	return rc;
}

/* The shards of part o->part of o->parts (all without --part). */
static int plan(struct rverify *v, struct ch_error *err)
{
	const struct ch_verify_opts *o = v->o;
	uint64_t bytes = 0;
	if (!(v->todo = calloc(v->m.nshards + 1, sizeof(*v->todo))))
		return ch_error_nomem(err);
	for (size_t s = 0; s < v->m.nshards; s++)
		if (o->parts == 0 || (uint64_t)s % o->parts == o->part) {
			v->todo[v->ntodo++] = s;
			bytes += v->m.shards[s].bytes;
		}
	v->res->shards = v->ntodo;
	ch_counter_phase(&v->progress, "hashing", "shards", v->ntodo, bytes);
	return 0;
}

int ch_remote_verify(struct ch_store *st, const char *at,
		     const struct ch_verify_opts *o,
		     struct ch_verify_result *res, struct ch_error *err)
{
	struct rverify v = {.o = o, .st = st, .res = res};
	int rc = -1, usable;
	memset(res, 0, sizeof(*res));
	ch_counter_init(&v.progress, o->progress, o->progress_arg);
	pthread_mutex_init(&v.lock, NULL);
	if (ch_verify_part_check(o, err) < 0)
		goto out;
	if ((usable = load_manifest(&v, at, err)) < 0)
		goto out;
	rc = 0;
	if (!usable)
		goto out; /* the problem is reported: nothing to go by */
	if (((o->parts == 0 || o->part == 0) && verify_splits(&v, err) < 0) ||
	    plan(&v, err) < 0 ||
	    ch_pool_run(o->jobs > 0 ? o->jobs : ch_cpu_count(), v.ntodo,
			shard_task, &v, o->cancel, err) < 0)
		rc = -1;
	ch_counter_end(&v.progress);
	ch_manifest_release(&v.m);
out:
	free(v.todo);
	pthread_mutex_destroy(&v.lock);
	return rc;
}
