/* stream.c - batches for a trainer: a sequential planner decides each
 * batch's samples (stream_order.c), workers read and encode batches in
 * parallel, and the calling thread hands them to the sink in order.  The
 * bytes depend on the plan only, never on which worker did what. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stream_plan.h"
#include "xxh.h"

#define CURSOR_MAX 96
#define SKIP_MAX 64

void ch_stream_opts_init(struct ch_stream_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->shuffle = CH_SHUFFLE_GLOBAL;
	o->window = 4;
	o->epochs = 1;
	o->batch_size = 256;
	o->world = 1;
	o->cache = 256u << 20;
	o->stats_interval = 5;
}

/* ------------------------------------------------------------------ */
/* Planner: the next batch's samples, in stream order                   */

struct planner {
	const struct ch_manifest *m;
	const struct ch_stream_opts *o;
	struct ch_order ord;
	uint32_t opt_hash;
	uint64_t epoch, start, base; /* segment: first position, batch no. */
	uint64_t b, nbatches, count; /* within the segment */
	int done;
};

static int enter_segment(struct planner *p, uint64_t epoch, uint64_t start,
			 uint64_t base, struct ch_error *err)
{
	const struct ch_stream_opts *o = p->o;
	ch_order_release(&p->ord);
	p->epoch = epoch;
	p->start = start;
	p->base = base;
	p->b = 0;
	p->count = ch_segment_count(p->m->samples, start, o->world, o->rank,
				    o->eval);
	p->nbatches = ch_segment_batches(p->m->samples, start, o->world,
					 o->batch_size, o->eval, o->drop_last);
	p->done = o->epochs && epoch >= o->epochs;
	return p->done ? 0 : ch_order_init(&p->ord, p->m, o, epoch, err);
}

struct plan {
	uint64_t epoch, batch, n;
	uint32_t flags;
	uint64_t *ids; /* n sample numbers, manifest order */
	char cursor[CURSOR_MAX];
};

/* Fills the next batch; returns 1, or 0 when the stream is over. */
static int plan_next(struct planner *p, struct plan *out, const char *id,
		     struct ch_error *err)
{
	const struct ch_stream_opts *o = p->o;
	while (!p->done && p->b == p->nbatches)
		if (enter_segment(p, p->epoch + 1, 0, 0, err) < 0)
			return -1;
	if (p->done)
		return 0;
	uint64_t bs = o->batch_size, first = p->b * bs;
	uint64_t last = first + bs < p->count ? first + bs : p->count;
	out->epoch = p->epoch;
	out->batch = p->base + p->b;
	out->n = last > first ? last - first : 0;
	for (uint64_t k = first; k < last; k++)
		out->ids[k - first] = ch_order_at(&p->ord, p->start + o->rank +
							     k * o->world);
	out->flags = (out->n < bs ? CH_BATCH_PARTIAL : 0) |
		     (p->b + 1 == p->nbatches ? CH_BATCH_LAST : 0);
	/* positions consumed by all ranks once this batch is done */
	uint64_t n = p->m->samples, taken = (p->b + 1) * bs;
	uint64_t pos = o->eval ? (p->start + taken * o->world < n
					  ? p->start + taken * o->world : n)
			       : p->start + (taken < p->count ? taken : p->count) *
						    o->world;
	ch_cursor_format(out->cursor, sizeof(out->cursor), id, p->opt_hash,
			 p->epoch, out->batch, pos);
	p->b++;
	return 1;
}

static int planner_init(struct planner *p, const struct ch_dataset *ds,
			const struct ch_stream_opts *o, struct ch_error *err)
{
	const struct ch_manifest *m = &ds->manifest;
	memset(p, 0, sizeof(*p));
	p->m = m;
	p->o = o;
	p->opt_hash = ch_stream_options_hash(o);
	if (ch_segment_batches(m->samples, 0, o->world, o->batch_size, o->eval,
			       o->drop_last) == 0)
		return ch_error_set(err, "%llu samples make no batch for %llu "
				    "ranks with batches of %llu",
				    (unsigned long long)m->samples,
				    (unsigned long long)o->world,
				    (unsigned long long)o->batch_size);
	if (!o->resume)
		return enter_segment(p, 0, 0, 0, err);
	struct ch_cursor c;
	if (ch_cursor_parse(o->resume, &c, err) < 0)
		return -1;
	if (strncmp(c.id, m->id, 16) != 0)
		return ch_error_set(err, "cursor '%s' is from another dataset "
				    "(id %s..., this one is %.16s...)",
				    o->resume, c.id, m->id);
	if (c.opt_hash != p->opt_hash)
		return ch_error_set(err, "cursor '%s' was made with other stream "
				    "options (shuffle, window, seed, batch "
				    "size, drop-last or mode differ)",
				    o->resume);
	if (c.pos > m->samples)
		return ch_error_set(err, "cursor '%s' is past the end of the "
				    "epoch", o->resume);
	return enter_segment(p, c.epoch, c.pos, c.batch + 1, err);
}

/* ------------------------------------------------------------------ */
/* Workers: read the planned samples, encode the batch                  */

struct job {
	int state; /* FREE, PLANNED (a worker owns it), READY */
	uint64_t skipped;
	uint64_t seq;
	struct plan plan;
	struct ch_buf raw, out;
	struct ch_batch_sample *samples;
	const char **names;
	uint64_t *sizes;
	const uint8_t **data;
	size_t fields_cap;
	int failed, data_error;
	struct ch_error err;
};

enum { FREE, PLANNED, READY };

struct streamer {
	struct ch_dataset *ds;
	const struct ch_stream_opts *o;
	struct planner planner;
	pthread_mutex_t lock;
	pthread_mutex_t *open_locks; /* one a shard: shards open in parallel */
	pthread_cond_t changed;
	struct job *jobs;
	size_t njobs;
	uint64_t next_seq;  /* next batch to plan */
	uint64_t end_seq;   /* batches in the stream, once known */
	uint64_t next_write;
	int stop, planned_all;
	struct ch_block_cache *cache;
	struct ch_error plan_err;
	int plan_failed;
	double read_s, encode_s;
};

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int grow_fields(struct job *j, size_t need, struct ch_error *err)
{
	if (need <= j->fields_cap)
		return 0;
	size_t cap = j->fields_cap ? j->fields_cap : 64;
	while (cap < need)
		cap *= 2;
	const char **names = realloc(j->names, cap * sizeof(*names));
	if (names)
		j->names = names;
	uint64_t *sizes = realloc(j->sizes, cap * sizeof(*sizes));
	if (sizes)
		j->sizes = sizes;
	const uint8_t **data = realloc(j->data, cap * sizeof(*data));
	if (data)
		j->data = data;
	if (!names || !sizes || !data)
		return ch_error_set(err, "out of memory");
	j->fields_cap = cap;
	return 0;
}

/* The shard holding sample id, opened on first use (by one thread).  Each
 * worker remembers the shards it has seen, so the per-shard lock is taken
 * once a shard, not once a sample. */
static int shard_of(struct streamer *s, struct ch_shard **seen, uint64_t id,
		    struct ch_shard **sh, uint64_t *local, struct ch_error *err)
{
	size_t k;
	if (ch_dataset_locate(s->ds, id, &k, local, err) < 0)
		return -1;
	if (seen[k]) {
		*sh = seen[k];
		return 0;
	}
	pthread_mutex_lock(&s->open_locks[k]);
	int rc = ch_dataset_shard(s->ds, k, sh, err);
	pthread_mutex_unlock(&s->open_locks[k]);
	if (rc == 0)
		seen[k] = *sh;
	return rc;
}

/* --on-error skip in training: a corrupt sample's place goes to another
 * sample drawn by a keyed hash of (seed, epoch, batch, slot, attempt):
 * the same replacement whatever the workers. */
static uint64_t replacement(const struct streamer *s, const struct plan *p,
			    uint64_t slot, uint64_t attempt)
{
	uint64_t in[5] = { s->o->seed, p->epoch, p->batch, slot, attempt };
	return XXH3_64bits(in, sizeof(in)) % s->ds->manifest.samples;
}

/* A sample's bytes: through the shared cache when its block is
 * compressed (decoded once for all the samples it holds), else read
 * alone. */
static int fetch(struct streamer *s, struct ch_block_reader *r,
		 const struct ch_shard *sh, uint64_t local,
		 const struct ch_sample_info *si, const uint8_t **data,
		 void **pin, struct ch_error *err)
{
	struct ch_block_stat st;
	ch_shard_block(sh, si->block, &st);
	if (!s->cache || st.codec == CH_CODEC_RAW)
		return ch_sample_fetch(r, sh, local, data, err);
	const uint8_t *block;
	if (ch_block_cache_get(s->cache, r, sh, si->block, &block, pin, err) < 0)
		return -1;
	*data = block + si->offset;
	return 0;
}

/* Copies the batch's samples into j->raw; names and keys point into the
 * shards' indexes, which stay open for the whole stream. */
static int read_batch(struct streamer *s, struct job *j,
		      struct ch_block_reader *r, struct ch_shard **seen)
{
	struct ch_error *err = &j->err;
	size_t nf = 0;
	j->raw.len = 0;
	void *v = realloc(j->samples, (j->plan.n ? j->plan.n : 1) *
					      sizeof(*j->samples));
	if (!v)
		return ch_error_set(err, "out of memory");
	j->samples = v;
	for (uint64_t i = 0; i < j->plan.n; i++) {
		struct ch_shard *sh;
		struct ch_sample_info si;
		const uint8_t *data;
		uint64_t local;
		if (shard_of(s, seen, j->plan.ids[i], &sh, &local, err) < 0)
			return -1;
		ch_shard_sample(sh, local, &si);
		if (grow_fields(j, nf + si.nfields, err) < 0)
			return -1;
		void *pin = NULL;
		int got = fetch(s, r, sh, local, &si, &data, &pin, err);
		if (got < 0 && s->o->skip_corrupt) {
			j->skipped++;
			if (s->o->eval) { /* every sample once: just drop it */
				j->plan.n--;
				j->plan.flags |= CH_BATCH_PARTIAL;
				memmove(j->plan.ids + i, j->plan.ids + i + 1,
					(j->plan.n - i) * sizeof(*j->plan.ids));
			} else {
				j->plan.ids[i] = replacement(s, &j->plan, i,
							     j->skipped);
			}
			i--; /* read the slot again */
			if (j->skipped > SKIP_MAX)
				return ch_error_set(err, "more than %d corrupt "
						    "samples in one batch: "
						    "giving up", SKIP_MAX);
			continue;
		}
		if (got < 0) {
			j->data_error = 1;
			size_t n = strlen(err->msg);
			snprintf(err->msg + n, sizeof(err->msg) - n,
				 " (sample '%.*s')",
				 (int)(si.key_len > 200 ? 200 : si.key_len),
				 si.key);
			return -1;
		}
		for (uint32_t f = 0; f < si.nfields; f++) {
			struct ch_field_info fi;
			ch_shard_field(sh, local, f, &fi);
			j->names[nf + f] = fi.name;
			j->sizes[nf + f] = fi.size;
			/* an offset for now: raw may move as it grows */
			j->data[nf + f] = (const uint8_t *)(uintptr_t)
						  (j->raw.len + fi.offset);
		}
		int copied = ch_buf_append(&j->raw, data, si.size, err);
		if (pin)
			ch_block_cache_unpin(s->cache, pin);
		if (copied < 0)
			return -1;
		j->samples[i] = (struct ch_batch_sample){
			.key = si.key, .key_len = si.key_len,
			.nfields = si.nfields,
			.names = (const char *const *)(j->names + nf),
			.sizes = j->sizes + nf,
			.data = (const uint8_t *const *)(j->data + nf),
		};
		nf += si.nfields;
	}
	for (size_t f = 0; f < nf; f++)
		j->data[f] = j->raw.data + (uintptr_t)j->data[f];
	for (uint64_t i = 0, at = 0; i < j->plan.n; i++) {
		/* names/sizes/data may have moved when they grew */
		j->samples[i].names = (const char *const *)(j->names + at);
		j->samples[i].sizes = j->sizes + at;
		j->samples[i].data = (const uint8_t *const *)(j->data + at);
		at += j->samples[i].nfields;
	}
	return 0;
}

static int encode_batch(struct streamer *s, struct job *j)
{
	struct ch_batch b = {
		.epoch = j->plan.epoch, .batch = j->plan.batch,
		.flags = j->plan.flags, .cursor = j->plan.cursor,
		.nsamples = (size_t)j->plan.n, .samples = j->samples,
	};
	switch (s->o->format) {
	case CH_FORMAT_JSONL:
		return ch_encode_jsonl(&b, &j->out, &j->err);
	case CH_FORMAT_TAR:
		return ch_encode_tar(&b, &j->out, &j->err);
	default:
		return ch_encode_frame(&b, &j->out, &j->err);
	}
}

static void *worker(void *arg)
{
	struct streamer *s = arg;
	struct ch_block_reader *r = ch_block_reader_new();
	size_t nshards = s->ds->manifest.nshards;
	struct ch_shard **seen = calloc(nshards ? nshards : 1, sizeof(*seen));
	pthread_mutex_lock(&s->lock);
	while (!s->stop && !s->planned_all) {
		struct job *j = &s->jobs[s->next_seq % s->njobs];
		if (j->state != FREE) {
			pthread_cond_wait(&s->changed, &s->lock);
			continue;
		}
		int got = s->o->cancel && *s->o->cancel
				  ? 0
				  : plan_next(&s->planner, &j->plan,
					      s->ds->manifest.id, &s->plan_err);
		if (got <= 0) {
			s->planned_all = 1;
			s->plan_failed = got < 0;
			s->end_seq = s->next_seq;
			pthread_cond_broadcast(&s->changed);
			break;
		}
		j->state = PLANNED;
		j->seq = s->next_seq++;
		pthread_mutex_unlock(&s->lock);
		double t0 = now();
		j->failed = j->data_error = 0;
		j->skipped = 0;
		int rc = r && seen ? read_batch(s, j, r, seen)
				   : ch_error_set(&j->err, "out of memory");
		double t1 = now();
		if (rc == 0 && (rc = encode_batch(s, j)) < 0)
			j->data_error = 1; /* the data will not fit the format */
		double t2 = now();
		pthread_mutex_lock(&s->lock);
		s->read_s += t1 - t0;
		s->encode_s += t2 - t1;
		j->failed = rc < 0;
		j->state = READY;
		pthread_cond_broadcast(&s->changed);
	}
	pthread_mutex_unlock(&s->lock);
	ch_block_reader_free(r);
	free(seen);
	return NULL;
}

/* Waits for batch seq; returns it, or NULL at the end of the stream. */
static struct job *wait_ready(struct streamer *s, uint64_t seq,
			      struct ch_stream_stats *st)
{
	struct job *j = &s->jobs[seq % s->njobs];
	double t0 = now();
	pthread_mutex_lock(&s->lock);
	while (!(j->state == READY && j->seq == seq) &&
	       !(s->planned_all && seq >= s->end_seq))
		pthread_cond_wait(&s->changed, &s->lock);
	int end = !(j->state == READY && j->seq == seq);
	pthread_mutex_unlock(&s->lock);
	st->wait_workers_s += now() - t0;
	return end ? NULL : j;
}

static void release_job(struct streamer *s, struct job *j, uint64_t seq)
{
	pthread_mutex_lock(&s->lock);
	j->state = FREE;
	s->next_write = seq + 1;
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
}

/* Stage times so far, for a report while the stream runs. */
static void report_stats(struct streamer *s, struct ch_stream_stats *st,
			 double start)
{
	pthread_mutex_lock(&s->lock);
	st->read_s = s->read_s;
	st->encode_s = s->encode_s;
	pthread_mutex_unlock(&s->lock);
	if (s->cache)
		ch_block_cache_stats(s->cache, &st->cache_hits,
				     &st->cache_misses);
	st->elapsed_s = now() - start;
	s->o->on_stats(st, s->o->stats_arg);
}

/* Hands batches to the sink in order; 1 if the sink stopped the stream. */
static int write_batches(struct streamer *s, ch_batch_sink sink, void *arg,
			 struct ch_stream_stats *st, struct ch_error *err)
{
	double start = now(), last = start;
	for (uint64_t seq = 0;; seq++) {
		struct job *j = wait_ready(s, seq, st);
		if (!j)
			break;
		if (j->failed) {
			*err = j->err;
			st->data_error = j->data_error;
			return -1;
		}
		if (s->o->cancel && *s->o->cancel)
			return ch_error_set(err, "interrupted");
		struct ch_batch_out out = {
			.data = j->out.data, .size = j->out.len,
			.epoch = j->plan.epoch, .batch = j->plan.batch,
			.samples = j->plan.n, .flags = j->plan.flags,
			.cursor = j->plan.cursor,
		};
		double t0 = now();
		int rc = sink(&out, arg, err);
		st->wait_sink_s += now() - t0;
		if (rc != 0)
			return rc;
		st->batches++;
		st->skipped += j->skipped;
		st->samples += j->plan.n;
		st->bytes += j->out.len;
		release_job(s, j, seq);
		if (s->o->on_stats && now() - last >= s->o->stats_interval) {
			report_stats(s, st, start);
			last = now();
		}
	}
	if (s->plan_failed) {
		*err = s->plan_err;
		return -1;
	}
	return 0;
}

static void auto_sizes(const struct ch_stream_opts *o, int *workers,
		       int *prefetch)
{
	*workers = o->workers > 0 ? o->workers : ch_cpu_count();
	*prefetch = o->prefetch > 0 ? o->prefetch : 2 * *workers;
}

static void free_jobs(struct streamer *s)
{
	for (size_t i = 0; s->jobs && i < s->njobs; i++) {
		struct job *j = &s->jobs[i];
		free(j->plan.ids);
		ch_buf_release(&j->raw);
		ch_buf_release(&j->out);
		free(j->samples);
		free(j->names);
		free(j->sizes);
		free(j->data);
	}
	free(s->jobs);
}

int ch_stream(struct ch_dataset *ds, const struct ch_stream_opts *o,
	      ch_batch_sink sink, void *sink_arg, struct ch_stream_stats *st,
	      struct ch_error *err)
{
	struct streamer s = { .ds = ds, .o = o };
	pthread_t *threads = NULL;
	int workers, prefetch, started = 0, rc = -1;
	double t0 = now();
	memset(st, 0, sizeof(*st));
	if (o->batch_size == 0 || o->world == 0 || o->rank >= o->world)
		return ch_error_set(err, "bad batch size, rank or world size");
	auto_sizes(o, &workers, &prefetch);
	st->workers = workers;
	st->prefetch = prefetch;
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.changed, NULL);
	size_t nshards = ds->manifest.nshards;
	s.open_locks = calloc(nshards ? nshards : 1, sizeof(*s.open_locks));
	if (!s.open_locks) {
		pthread_mutex_destroy(&s.lock);
		pthread_cond_destroy(&s.changed);
		return ch_error_set(err, "out of memory");
	}
	for (size_t k = 0; k < nshards; k++)
		pthread_mutex_init(&s.open_locks[k], NULL);
	if (planner_init(&s.planner, ds, o, err) < 0)
		goto out;
	if (o->cache && !(s.cache = ch_block_cache_new((size_t)o->cache))) {
		ch_error_set(err, "out of memory");
		goto out;
	}
	s.njobs = (size_t)workers + (size_t)prefetch;
	s.jobs = calloc(s.njobs, sizeof(*s.jobs));
	threads = calloc((size_t)workers, sizeof(*threads));
	if (!s.jobs || !threads) {
		ch_error_set(err, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < s.njobs; i++)
		if (!(s.jobs[i].plan.ids = calloc(o->batch_size,
						  sizeof(uint64_t)))) {
			ch_error_set(err, "out of memory for batches of %llu",
				     (unsigned long long)o->batch_size);
			goto out;
		}
	for (; started < workers; started++)
		if (pthread_create(&threads[started], NULL, worker, &s) != 0) {
			ch_error_set(err, "cannot start worker threads");
			goto out;
		}
	rc = write_batches(&s, sink, sink_arg, st, err);
	if (rc == 0 && o->cancel && *o->cancel)
		rc = ch_error_set(err, "interrupted");
	if (rc == 0 && o->format == CH_FORMAT_TAR) {
		struct ch_buf end = { 0 };
		rc = ch_tar_end(&end, err);
		struct ch_batch_out out = { .data = end.data, .size = end.len };
		if (rc == 0)
			rc = sink(&out, sink_arg, err);
		ch_buf_release(&end);
	}
out:
	pthread_mutex_lock(&s.lock);
	s.stop = 1;
	pthread_cond_broadcast(&s.changed);
	pthread_mutex_unlock(&s.lock);
	for (int i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	free(threads);
	free_jobs(&s);
	if (s.cache)
		ch_block_cache_stats(s.cache, &st->cache_hits,
				     &st->cache_misses);
	ch_block_cache_free(s.cache);
	ch_order_release(&s.planner.ord);
	pthread_mutex_destroy(&s.lock);
	for (size_t k = 0; k < nshards; k++)
		pthread_mutex_destroy(&s.open_locks[k]);
	free(s.open_locks);
	pthread_cond_destroy(&s.changed);
	st->read_s = s.read_s;
	st->encode_s = s.encode_s;
	st->elapsed_s = now() - t0;
	return rc < 0 ? -1 : 0;
}
