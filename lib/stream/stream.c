/* stream/stream.c - batches for a trainer: a sequential planner decides each
 * batch's samples (stream/order.c), workers read and encode batches in
 * parallel, and the calling thread hands them to the sink in order.  The
 * bytes depend on the plan only, never on which worker did what. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "stream/mix.h"
#include "common/xxh.h"


/* The defaults of the options, from their table (chute/stream_options.h). */
#define DEFAULT(NAME, FIELD, VALUE, HASH) o->FIELD = (VALUE);

void ch_stream_opts_init(struct ch_stream_opts *o)
{
	memset(o, 0, sizeof(*o));
	CH_STREAM_OPTIONS(DEFAULT)
	o->stats_interval = 5;
}

/* ------------------------------------------------------------------ */
/* Planner: the next batch's samples, in stream order                   */

struct planner {
	const struct ch_dataset *ds;
	const struct ch_manifest *m; /* the dataset's, or a split's view */
	const uint64_t *split_ids;   /* position in the split -> sample */
	const struct ch_stream_opts *o;
	struct ch_order ord;
	const struct ch_mix *mix;    /* a mix's sequence instead of ord */
	struct ch_mix_walk walk;
	uint64_t n;		     /* positions in an epoch */
	char tail[CH_CURSOR_MAX];    /* a mix's sources, for its cursors */
	uint32_t opt_hash;
	uint64_t epoch, start, base; /* segment: first position, batch no. */
	uint64_t b, nbatches, count; /* within the segment */
	int done;
	int hint; /* tell a remote dataset the shard order (not to count) */
};

/* A remote dataset fetches shards ahead of the reader: a window ahead
 * in window mode, the next two in dataset order without shuffling; a
 * global shuffle reads blocks all over, by range requests. */
static void tell_shard_order(struct planner *p)
{
	size_t n = p->m->nshards, *seq;
	if (!p->ds->source)
		return;
	if (p->ord.shard_order) {
		ch_dataset_plan(p->ds, p->ord.shard_order, n, p->ord.window + 1);
		return;
	}
	if (p->o->shuffle == CH_SHUFFLE_GLOBAL && !p->o->eval) {
		ch_dataset_plan(p->ds, NULL, n, 0); /* random reads */
		return;
	}
	if (!(seq = malloc((n ? n : 1) * sizeof(*seq))))
		return; /* only a hint */
	for (size_t k = 0; k < n; k++)
		seq[k] = k;
	ch_dataset_plan(p->ds, seq, n, 2);
	free(seq);
}

static int enter_segment(struct planner *p, uint64_t epoch, uint64_t start,
			 uint64_t base, struct ch_error *err)
{
	const struct ch_stream_opts *o = p->o;
	ch_order_release(&p->ord);
	p->epoch = epoch;
	p->start = start;
	p->base = base;
	p->b = 0;
	p->count = ch_segment_count(p->n, start, o->world, o->rank, o->eval);
	p->nbatches = ch_segment_batches(p->n, start, o->world, o->batch_size,
					 o->eval, o->drop_last);
	p->done = o->epochs && epoch >= o->epochs;
	if (p->done ||
	    (!p->mix && ch_order_init(&p->ord, p->m, o, epoch, err) < 0))
		return p->done ? 0 : -1;
	if (p->hint)
		tell_shard_order(p);
	return 0;
}

/* Fills the next batch; returns 1, or 0 when the stream is over. */
static int plan_next(struct planner *p, struct ch_batch_plan *out,
		     const char *id, struct ch_error *err)
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
	for (uint64_t k = first; k < last; k++) {
		uint64_t t = p->start + o->rank + k * o->world, at;
		if (p->mix) {
			if (ch_mix_walk_at(&p->walk, p->epoch, t,
					   &out->ids[k - first], err) < 0)
				return -1;
			continue;
		}
		at = ch_order_at(&p->ord, t);
		out->ids[k - first] = p->split_ids ? p->split_ids[at] : at;
	}
	out->flags = (out->n < bs ? CH_BATCH_PARTIAL : 0) |
		     (p->b + 1 == p->nbatches ? CH_BATCH_LAST : 0);
	/* positions consumed by all ranks once this batch is done */
	uint64_t n = p->n, taken = (p->b + 1) * bs;
	uint64_t pos = o->eval ? (p->start + taken * o->world < n
					  ? p->start + taken * o->world : n)
			       : p->start + (taken < p->count ? taken : p->count) *
						    o->world;
	ch_cursor_format(out->cursor, sizeof(out->cursor), id, p->opt_hash,
			 p->epoch, out->batch, pos);
	if (p->tail[0]) {
		size_t len = strlen(out->cursor);
		snprintf(out->cursor + len, sizeof(out->cursor) - len, "%s",
			 p->tail);
	}
	p->b++;
	return 1;
}

/* A mix's cursors end with ".ID8:WEIGHT" a source. */
static void mix_tail(struct planner *p, const struct ch_dataset *ds)
{
	size_t len = 0;
	for (size_t i = 0; i < ch_mix_sources(ds); i++) {
		struct ch_mix_info mi;
		ch_mix_source_info(ds, i, &mi);
		int k = snprintf(p->tail + len, sizeof(p->tail) - len,
				 ".%.8s:%llu", mi.id,
				 (unsigned long long)mi.weight);
		len += k > 0 ? (size_t)k : 0;
	}
}

/* A cursor against the mix's sources, the first that differs named. */
static int check_mix_cursor(const struct planner *p,
			    const struct ch_dataset *ds,
			    const struct ch_cursor *c, const char *text,
			    struct ch_error *err)
{
	size_t n = ch_mix_sources(ds), had = 0;
	const char *at = c->mix;
	for (; at && *at; had++)
		at += strcspn(at, ".") + (at[strcspn(at, ".")] == '.');
	if (!c->mix && n)
		return ch_error_usage(err, "cursor '%s' is from a stream of one "
				      "dataset; this one mixes %zu", text, n);
	if (!n)
		return ch_error_usage(err, "cursor '%s' is from a mix of %zu "
				      "sources; this stream is of one dataset",
				      text, had);
	if (had != n)
		return ch_error_usage(err, "cursor '%s' is from a mix of %zu "
				      "sources; this one has %zu", text, had,
				      n);
	at = c->mix;
	for (size_t i = 0; i < n; i++) {
		struct ch_mix_info mi;
		char was[32], now[32];
		ch_mix_source_info(ds, i, &mi);
		uint64_t w = strtoull(at + 9, NULL, 10);
		ch_weight_text(w, was);
		ch_weight_text(mi.weight, now);
		if (strncmp(at, mi.id, 8) != 0)
			return ch_error_usage(err, "cursor '%s' is from another "
					      "mix: its source %zu was id "
					      "%.8s..., '%s' is id %.8s...",
					      text, i + 1, at, mi.name, mi.id);
		if (w != mi.weight)
			return ch_error_usage(err, "cursor '%s' is from another "
					      "mix: source %zu ('%s') had "
					      "weight %s, now %s", text, i + 1,
					      mi.name, was, now);
		at += strcspn(at, ".") + 1;
	}
	if (strncmp(c->id, p->m->id, 16) != 0)
		return ch_error_usage(err, "cursor '%s' is from another mix of "
				      "these sources (another split or "
				      "mix epoch)", text);
	return 0;
}

static int planner_init(struct planner *p, const struct ch_dataset *ds,
			const struct ch_split_view *split,
			const struct ch_stream_opts *o, int hint,
			struct ch_error *err)
{
	const struct ch_manifest *m = split->ids ? &split->view : &ds->manifest;
	memset(p, 0, sizeof(*p));
	p->hint = hint;
	p->ds = ds;
	p->m = m;
	p->split_ids = split->ids;
	p->o = o;
	p->opt_hash = ch_stream_options_hash(o);
	p->mix = ch_mix_of(ds);
	if (p->mix && o->split) {
		ch_error_usage(err, "one split for several datasets: name "
			       "each source's split as DATASET:SPLIT");
		return ch_error_setting(err, "split");
	}
	p->n = p->mix ? p->mix->total : m->samples;
	if (p->mix) {
		mix_tail(p, ds);
		if (ch_mix_walk_init(&p->walk, p->mix, o, err) < 0)
			return -1;
	}
	if (ch_segment_batches(p->n, 0, o->world, o->batch_size, o->eval,
			       o->drop_last) == 0)
		return ch_error_usage(err, "%llu %s no batch for %llu %s "
				      "with batches of %llu",
				      (unsigned long long)p->n,
				      ch_plural(p->n, "sample makes",
						"samples make"),
				      (unsigned long long)o->world,
				      ch_plural(o->world, "rank", "ranks"),
				      (unsigned long long)o->batch_size);
	if (!o->resume)
		return enter_segment(p, o->start_epoch, 0, 0, err);
	struct ch_cursor c;
	if (ch_cursor_parse(o->resume, &c, err) < 0)
		return -1;
	if ((p->mix || c.mix) &&
	    check_mix_cursor(p, ds, &c, o->resume, err) < 0)
		return -1;
	if (strncmp(c.id, m->id, 16) != 0)
		return ch_error_usage(err, "cursor '%s' is from another "
				      "dataset (id %s..., this one is "
				      "%.16s...)", o->resume, c.id, m->id);
	if (c.opt_hash != p->opt_hash) {
		ch_error_usage(err, "cursor '%s' was made with other stream "
			       "options", o->resume);
		return ch_error_remedy(err, ch_stream_options_hashed());
	}
	if (c.pos > p->n)
		return ch_error_usage(err, "cursor '%s' is past the end of the "
				      "epoch", o->resume);
	return enter_segment(p, c.epoch, c.pos, c.batch + 1, err);
}

static void planner_release(struct planner *p)
{
	ch_order_release(&p->ord);
	if (p->mix)
		ch_mix_walk_release(&p->walk);
}

int ch_stream_count(const struct ch_dataset *ds,
		    const struct ch_stream_opts *o, struct ch_stream_count *out,
		    struct ch_error *err)
{
	struct ch_split_view split = {0};
	struct planner p;
	int rc = -1;
	memset(out, 0, sizeof(*out));
	memset(&p, 0, sizeof(p));
	if (o->batch_size == 0 || o->world == 0 || o->rank >= o->world)
		return ch_error_usage(err, "bad batch size, rank or world "
				      "size");
	if (o->split && ch_split_view_init(&split, ds, o->split, err) < 0)
		return -1;
	if (planner_init(&p, ds, &split, o, 0, err) == 0) {
		snprintf(out->id, sizeof(out->id), "%s", p.m->id);
		out->samples = p.n;
		out->batches = ch_segment_batches(p.n, 0, o->world,
						  o->batch_size, o->eval,
						  o->drop_last);
		out->epoch = p.epoch;
		out->batches_left = p.done ? 0 : p.nbatches - p.b;
		rc = 0;
	}
	planner_release(&p);
	ch_split_view_release(&split);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Workers: read the planned samples, encode the batch                  */

/* --workers auto / --prefetch auto: batch times measured since the last
 * decision (workers' under the lock, the consumer's by the writer). */
struct tuning {
	int workers, prefetch; /* 1: auto */
	int max_prefetch;
	uint64_t batches;
	double work_s, work_max_s, consume_s, since;
	struct ch_workers_probe probe;
	uint64_t misses; /* the block cache's, at the last decision */
	/* auto workers: the first batches written, and the least any of
	 * them cost beyond loading blocks */
	int judged;
	double first_min_s;
};

/* A batch's read samples and its encoded bytes: hundreds of KB each,
 * lent to a job while it is planned or ready. */
struct job_bufs {
	struct ch_batch_data data;
	struct ch_buf out;
};

struct job {
	int state; /* FREE, PLANNED (a worker owns it), READY */
	uint64_t seq;
	struct ch_batch_plan plan;
	struct job_bufs *bufs; /* while not FREE */
	uint8_t *frame;	       /* its encoded bytes: in bufs->out, or in */
	size_t frame_size;     /* the memory of o->frame_memory */
	double reserve_s;      /* waiting there for the consumer */
	double beyond_s;       /* reading and encoding, less loading blocks */
	int failed;
	struct ch_error err; /* its kind says whose fault */
	/* the sink's reserve_at for this job's frame: arg is the job */
	const struct ch_frame_memory *sink_memory;
	struct ch_frame_memory memory;
};

enum { FREE, PLANNED, READY };

struct streamer {
	struct ch_dataset *ds;
	const struct ch_stream_opts *o;
	struct planner planner;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	/* workers beyond workers_active wait here, woken only when that
	 * changes or the stream ends: on 2 cores, an idle worker woken by
	 * every batch's broadcast cost more than the worker it stood for */
	pthread_cond_t parked;
	struct ch_stream_shared shared;
	uint64_t alone; /* shared.alone points here */
	struct ch_split_view split;
	struct job *jobs;
	size_t njobs;
	/* one set of buffers a job, lent last in first out: the batches in
	 * flight use the same few, warm in the caches and already backed,
	 * not every job's in turn (fresh memory is a fault a page) */
	struct job_bufs *bufs, **spare;
	size_t nspare;
	uint64_t next_seq;  /* next batch to plan */
	uint64_t end_seq;   /* batches in the stream, once known */
	uint64_t next_write;
	int stop, planned_all;
	struct ch_block_cache *cache;
	struct ch_error plan_err;
	int plan_failed;
	double read_s, encode_s;
	/* how much of the pool runs: all of it unless auto says less; with
	 * none, the writer reads each batch itself, with its own reader */
	int threads, workers_active, busy;
	struct ch_batch_reader *own;
	/* o->frame_memory, timed: its waits are the consumer's time */
	struct ch_frame_memory timed_memory;
	double reserve_s;
	size_t slots_active;
	struct tuning tune;
};

static uint8_t *timed_reserve(size_t size, void *arg)
{
	struct streamer *s = arg;
	double t0 = ch_now();
	uint8_t *p = s->o->frame_memory->reserve(size, s->o->frame_memory->arg);
	s->reserve_s += ch_now() - t0;
	return p;
}

static uint8_t *job_reserve(size_t size, void *arg)
{
	struct job *j = arg;
	return j->sink_memory->reserve_at(size, j->seq, j->sink_memory->arg);
}

/* The sink's memory job j is encoded in, if any: the writer's own batch,
 * timed (it may wait there for the consumer); a worker's where the sink
 * has memory for frames ahead. */
static const struct ch_frame_memory *frame_memory(struct streamer *s,
						  struct job *j, int in_place)
{
	const struct ch_frame_memory *m = s->o->frame_memory;
	if (!m)
		return NULL;
	if (in_place)
		return &s->timed_memory;
	if (!m->reserve_at)
		return NULL;
	j->sink_memory = m;
	j->memory = (struct ch_frame_memory){ job_reserve, NULL, j, m->cold };
	return &j->memory;
}

/* Encodes job j; in_place: the next batch to write, read by the writer,
 * which may then go straight into the sink's memory. */
static int encode_batch(struct streamer *s, struct job *j, int in_place)
{
	struct ch_batch b = {
		.tx = s->shared.tx, .epoch = j->plan.epoch, .batch = j->plan.batch,
		.flags = j->plan.flags, .cursor = j->plan.cursor,
		.nsamples = (size_t)j->plan.n, .samples = j->bufs->data.samples,
	};
	struct ch_buf *out = &j->bufs->out;
	int rc;
	switch (s->o->format) {
	case CH_FORMAT_JSONL:
		rc = ch_encode_jsonl(&b, out, &j->err);
		break;
	case CH_FORMAT_TAR:
		rc = ch_encode_tar(&b, out, &j->err);
		break;
	default:
		return ch_encode_frame_in(&b, out, frame_memory(s, j, in_place),
					  &j->frame, &j->frame_size, &j->err);
	}
	j->frame = out->data;
	j->frame_size = out->len;
	return rc;
}

struct worker {
	int index;
	struct streamer *s;
	struct ch_batch_reader *reader;
};

/* Plans the next batch into its job, under the lock; NULL when the stream
 * is planned (or stopped), and then every thread is told. */
static struct job *plan_job(struct streamer *s)
{
	struct job *j = &s->jobs[s->next_seq % s->njobs];
	int got = s->o->cancel && *s->o->cancel
			  ? 0
			  : plan_next(&s->planner, &j->plan, s->ds->manifest.id,
				      &s->plan_err);
	if (got <= 0) {
		s->planned_all = 1;
		s->plan_failed = got < 0;
		s->end_seq = s->next_seq;
		pthread_cond_broadcast(&s->changed);
		pthread_cond_broadcast(&s->parked);
		return NULL;
	}
	j->state = PLANNED;
	j->seq = s->next_seq++;
	j->bufs = s->spare[--s->nspare]; /* a job not FREE holds a set */
	s->busy++;
	return j;
}

/* Reads and encodes a planned job with reader r, outside the lock; takes
 * the lock again to hand it over, and returns holding it. */
static void run_job(struct streamer *s, struct ch_batch_reader *r,
		    struct job *j)
{
	/* the writer's alone: others do not touch reserve_s */
	double t0 = ch_now(), reserved = r == s->own ? s->reserve_s : 0;
	double loaded = ch_batch_reader_load_seconds(r);
	struct job_bufs *b = j->bufs;
	int rc = ch_batch_read(r, &j->plan, &b->data, &j->err);
	double t1 = ch_now();
	if (rc == 0 && (rc = encode_batch(s, j, r == s->own)) < 0)
		j->err.kind = CH_ERR_DATA; /* it will not fit the format */
	double t_fill = ch_now();
	if (rc == 0)
		rc = ch_batch_fill(r, &b->data, j->frame, &j->err);
	/* images made late, straight into the frame: reading, as before */
	double late = b->data.nlate ? ch_now() - t_fill : 0;
	j->reserve_s = r == s->own ? s->reserve_s - reserved : 0;
	double t2 = ch_now() - j->reserve_s;
	j->beyond_s = t2 - t0 - (ch_batch_reader_load_seconds(r) - loaded);
	pthread_mutex_lock(&s->lock);
	s->busy--;
	s->read_s += t1 - t0 + late;
	s->encode_s += t2 - t1 - late;
	s->tune.batches++;
	s->tune.work_s += t2 - t0;
	if (t2 - t0 > s->tune.work_max_s)
		s->tune.work_max_s = t2 - t0;
	j->failed = rc < 0;
	j->state = READY;
	pthread_cond_broadcast(&s->changed);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct streamer *s = w->s;
	pthread_mutex_lock(&s->lock);
	while (!s->stop && !s->planned_all) {
		if (w->index >= s->workers_active) {
			pthread_cond_wait(&s->parked, &s->lock);
			continue;
		}
		struct job *j = &s->jobs[s->next_seq % s->njobs];
		if (j->state != FREE || s->busy >= s->workers_active ||
		    s->next_seq - s->next_write >= s->slots_active) {
			pthread_cond_wait(&s->changed, &s->lock);
			continue;
		}
		if (!(j = plan_job(s)))
			break;
		pthread_mutex_unlock(&s->lock);
		run_job(s, w->reader, j);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* With no worker at work, the writer reads batch seq itself once the
 * workers' batches before it are written: no hand-off between threads,
 * which on a machine the consumer shares can cost more than the worker
 * saves. */
static void work_inline(struct streamer *s, uint64_t seq)
{
	pthread_mutex_lock(&s->lock);
	struct job *j = NULL;
	if (s->workers_active == 0 && s->next_seq == seq && !s->stop &&
	    !s->planned_all && (j = plan_job(s))) {
		pthread_mutex_unlock(&s->lock);
		run_job(s, s->own, j);
	}
	pthread_mutex_unlock(&s->lock);
}

/* Waits for batch seq; returns it, or NULL at the end of the stream. */
static struct job *wait_ready(struct streamer *s, uint64_t seq,
			      struct ch_stream_stats *st)
{
	struct job *j = &s->jobs[seq % s->njobs];
	double t0 = ch_now();
	pthread_mutex_lock(&s->lock);
	while (!(j->state == READY && j->seq == seq) &&
	       !(s->planned_all && seq >= s->end_seq))
		pthread_cond_wait(&s->changed, &s->lock);
	int end = !(j->state == READY && j->seq == seq);
	pthread_mutex_unlock(&s->lock);
	st->wait_workers_s += ch_now() - t0;
	return end ? NULL : j;
}

static void release_job(struct streamer *s, struct job *j, uint64_t seq)
{
	pthread_mutex_lock(&s->lock);
	j->state = FREE;
	s->spare[s->nspare++] = j->bufs;
	j->bufs = NULL;
	s->next_write = seq + 1;
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
}

/* Whether blocks were decoded (or mapped) since the last decision; with
 * no cache, every read decodes. */
static int decoded_since(struct streamer *s)
{
	uint64_t hits, misses;
	if (!s->cache)
		return 1;
	ch_block_cache_stats(s->cache, &hits, &misses);
	int decoded = misses != s->tune.misses;
	s->tune.misses = misses;
	return decoded;
}

/* Auto workers all work for the first JUDGED batches (their blocks
 * decoded side by side), which then decide: the cheapest, beyond loading
 * blocks, cheap, and none works any more (the writer reads).  The first
 * batches also decode the pages of a lazy index that they touch first:
 * 28x28 images at level 0 took 42, 42, 3.9, 3.5 ms, then 0.2 to 0.4 (two
 * workers).  The first period is then timed afresh.  Called with the
 * lock held. */
#define JUDGED 8

static void judge_first(struct streamer *s, struct ch_stream_stats *st,
			double beyond_s, double at)
{
	struct tuning *t = &s->tune;
	if (t->judged == 0 || beyond_s < t->first_min_s)
		t->first_min_s = beyond_s;
	if (++t->judged < JUDGED)
		return;
	ch_workers_probe_start(&t->probe, t->first_min_s, s->threads);
	s->workers_active = st->workers = t->probe.cap;
	s->slots_active = (size_t)s->workers_active + (size_t)st->prefetch;
	t->batches = 0;
	t->work_s = t->work_max_s = t->consume_s = 0;
	t->since = at;
	pthread_cond_broadcast(&s->changed);
	pthread_cond_broadcast(&s->parked);
}

/* Every 8 batches and a tenth of a second at least, auto settings follow
 * the stage times measured since the last decision, and auto workers what
 * the stream measures when it tries one fewer or one more. */
static void retune(struct streamer *s, struct ch_stream_stats *st,
		   double sink_s, double beyond_s)
{
	struct tuning *t = &s->tune;
	if (!t->workers && !t->prefetch)
		return; /* nothing is auto: no lock on the writer's path */
	double at = ch_now();
	t->consume_s += sink_s;
	pthread_mutex_lock(&s->lock);
	if (t->workers && t->judged < JUDGED) {
		judge_first(s, st, beyond_s, at);
	} else if (t->batches >= 8 && at - t->since >= 0.1) {
		struct ch_tune_input in = {
			.threads = s->threads, .max_prefetch = t->max_prefetch,
			.work_mean_s = t->work_s / (double)t->batches,
			.work_max_s = t->work_max_s,
			.consume_mean_s = t->consume_s / (double)t->batches,
		};
		int w, p;
		ch_stream_tune(&in, &w, &p);
		if (t->workers) {
			t->probe.cap = ch_workers_reopen(&t->probe,
							 in.work_mean_s, w);
			int cap = ch_workers_probe_step(
				&t->probe, (double)t->batches / (at - t->since),
				decoded_since(s), s->threads, w);
			s->workers_active = st->workers = w < cap ? w : cap;
		}
		if (t->prefetch)
			st->prefetch = p;
		s->slots_active = (size_t)s->workers_active + (size_t)st->prefetch;
		st->tune_work_s = in.work_mean_s;
		st->tune_consume_s = in.consume_mean_s;
		t->batches = 0;
		t->work_s = t->work_max_s = t->consume_s = 0;
		t->since = at;
		pthread_cond_broadcast(&s->changed);
		pthread_cond_broadcast(&s->parked);
	}
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
	ch_shard_table_stats(s->shared.shards, &st->shard_opens,
			     &st->index_peak);
	st->read_alone = __atomic_load_n(&s->alone, __ATOMIC_RELAXED);
	st->elapsed_s = ch_now() - start;
	s->o->on_stats(st, s->o->stats_arg);
}

/* Hands batches to the sink in order; 1 if the sink stopped the stream. */
static int write_batches(struct streamer *s, ch_batch_sink sink, void *arg,
			 struct ch_stream_stats *st, struct ch_error *err)
{
	double start = ch_now(), last = start;
	for (uint64_t seq = 0;; seq++) {
		if (s->own)
			work_inline(s, seq);
		struct job *j = wait_ready(s, seq, st);
		if (!j)
			break;
		if (j->failed) {
			*err = j->err;
			return -1;
		}
		if (s->o->cancel && *s->o->cancel)
			return ch_error_interrupted(err);
		struct ch_batch_out out = {
			.data = j->frame, .size = j->frame_size,
			.epoch = j->plan.epoch, .batch = j->plan.batch,
			.samples = j->plan.n, .flags = j->plan.flags,
			.cursor = j->plan.cursor,
		};
		double t0 = ch_now();
		int rc = sink(&out, arg, err);
		double sink_s = ch_now() - t0 + j->reserve_s;
		st->wait_sink_s += sink_s;
		if (rc != 0)
			return rc;
		st->batches++;
		st->skipped += j->bufs->data.skipped;
		st->samples += j->plan.n;
		st->bytes += j->frame_size;
		double beyond_s = j->beyond_s;
		release_job(s, j, seq);
		retune(s, st, sink_s, beyond_s);
		if (s->o->on_stats && ch_now() - last >= s->o->stats_interval) {
			report_stats(s, st, start);
			last = ch_now();
		}
	}
	if (s->plan_failed) {
		*err = s->plan_err;
		return -1;
	}
	return 0;
}

/* A global shuffle touches nearly every shard in every batch: if their
 * indexes do not fit in index_memory together, each batch would reopen
 * shards, hundreds of times slower.  Refuse up front, saying what fits. */
static int check_index_memory(const struct ch_dataset *ds,
			      const struct ch_stream_opts *o,
			      struct ch_error *err)
{
	uint64_t total = 0;
	if (o->shuffle != CH_SHUFFLE_GLOBAL || o->eval)
		return 0;
	for (size_t k = 0; k < ds->manifest.nshards; k++) {
		uint64_t bytes = 0;
		int rc = ch_dataset_shard_memory(ds, k, &bytes, err);
		if (rc < 0)
			return rc;
		total += bytes;
	}
	if (total <= o->index_memory)
		return 0;
	ch_error_set(err, "a global shuffle keeps every shard's index open: "
		     "%.1fM for this dataset, more than the index memory "
		     "allowed (%.1fM); allow more, or shuffle by window, which holds "
		     "only a window's shards", (double)total / 1048576,
		     (double)o->index_memory / 1048576);
	return ch_error_remedy(err, "index-memory shuffle");
}

/* Threads and job slots: what was asked for, or for auto the most that
 * tuning may use; it starts with all of them, for the first batches. */
static void size_pool(struct streamer *s, const struct ch_stream_opts *o,
		      struct ch_stream_stats *st)
{
	s->threads = o->workers == CH_AUTO ? ch_cpu_count() : o->workers;
	s->tune.workers = o->workers == CH_AUTO;
	s->tune.prefetch = o->prefetch == CH_AUTO;
	s->tune.max_prefetch = 4 * s->threads < 8 ? 8 : 4 * s->threads;
	s->tune.since = ch_now();
	ch_workers_probe_init(&s->tune.probe, s->threads);
	st->workers = s->workers_active = s->threads;
	st->prefetch = o->prefetch > 0 ? o->prefetch
		       : s->threads > 1 ? 2 * s->threads : 2;
	s->njobs = (size_t)s->threads +
		   (size_t)(o->prefetch > 0 ? o->prefetch : s->tune.max_prefetch);
	s->slots_active = (size_t)s->threads + (size_t)st->prefetch;
}

static void free_jobs(struct streamer *s)
{
	for (size_t i = 0; s->jobs && i < s->njobs; i++)
		free(s->jobs[i].plan.ids);
	for (size_t i = 0; s->bufs && i < s->njobs; i++) {
		ch_batch_data_release(&s->bufs[i].data);
		ch_buf_release(&s->bufs[i].out);
	}
	free(s->jobs);
	free(s->bufs);
	free(s->spare);
}

int ch_stream(struct ch_dataset *ds, const struct ch_stream_opts *o,
	      ch_batch_sink sink, void *sink_arg, struct ch_stream_stats *st,
	      struct ch_error *err)
{
	struct streamer s = { .ds = ds, .o = o };
	pthread_t *threads = NULL;
	struct worker *ws = NULL;
	struct ch_transforms *tx = NULL;
	struct ch_manifest_field *fields = NULL;
	size_t nfields = 0;
	int workers, started = 0, rc = -1, filter = 0;
	double t0 = ch_now();
	memset(st, 0, sizeof(*st));
	if (o->batch_size == 0 || o->world == 0 || o->rank >= o->world)
		return ch_error_usage(err, "bad batch size, rank or world "
				      "size");
	size_pool(&s, o, st);
	workers = s.threads;
	s.timed_memory = (struct ch_frame_memory){
		timed_reserve, NULL, &s, o->frame_memory && o->frame_memory->cold
	};
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.changed, NULL);
	pthread_cond_init(&s.parked, NULL);
	if (o->split) {
		if (ch_split_view_init(&s.split, ds, o->split, err) < 0)
			goto out;
	}
	/* the planner first: it tells a remote dataset how it will be read */
	if (planner_init(&s.planner, ds, &s.split, o, 1, err) < 0)
		goto out;
	if (check_index_memory(ds, o, err) < 0)
		goto out;
	if (ch_stream_fields(ds, o, &fields, &nfields, &filter, err) < 0)
		goto out;
	if (o->ntransforms &&
	    (ch_transforms_parse(o->transforms, o->ntransforms, o->eval,
				 &tx, err) < 0 ||
	     ch_transforms_check_fields(tx, fields, nfields, err) < 0))
		goto out;
	if (o->cache && !(s.cache = ch_block_cache_new((size_t)o->cache))) {
		ch_error_nomem(err);
		goto out;
	}
	s.shared = (struct ch_stream_shared){
		.ds = ds, .cache = s.cache, .alone = &s.alone,
		.seed = o->seed, .eval = o->eval,
		.split_ids = s.split.ids,
		.nsamples = s.split.ids ? s.split.n : ds->manifest.samples,
		.skip_corrupt = o->skip_corrupt,
		.nworkers = workers ? workers : 1,
		/* a source field is not in the blocks to copy from */
		.defer = o->format == CH_FORMAT_BATCH && !tx &&
			 !o->source_field,
		.late = o->format == CH_FORMAT_BATCH && tx && !o->skip_corrupt,
		.tx = tx, .mix = ch_mix_of(ds),
		.source_field = o->source_field,
	};
	/* a shuffled order reads each shard's samples scattered */
	int scattered = !o->eval && o->shuffle != CH_SHUFFLE_NONE;
	if (ch_shard_table_new(&s.shared.shards, ds, (size_t)o->index_memory,
			       scattered ? o->batch_size : 0, s.cache,
			       err) < 0)
		goto out;
	if (!(s.shared.names = ch_name_table_new())) {
		ch_error_nomem(err);
		goto out;
	}
	if (ch_stream_shared_fields(&s.shared, fields, nfields, filter,
				    err) < 0)
		goto out;
	s.jobs = calloc(s.njobs, sizeof(*s.jobs));
	s.bufs = calloc(s.njobs, sizeof(*s.bufs));
	s.spare = calloc(s.njobs, sizeof(*s.spare));
	for (size_t i = 0; s.spare && s.bufs && i < s.njobs; i++)
		s.spare[s.nspare++] = &s.bufs[s.njobs - 1 - i];
	threads = calloc((size_t)workers + 1, sizeof(*threads));
	ws = calloc((size_t)workers + 1, sizeof(*ws));
	if (!s.jobs || !s.bufs || !s.spare || !threads || !ws) {
		ch_error_nomem(err);
		goto out;
	}
	for (size_t i = 0; i < s.njobs; i++)
		if (!(s.jobs[i].plan.ids = calloc(o->batch_size,
						  sizeof(uint64_t)))) {
			ch_error_set(err, "out of memory for batches of %llu",
				     (unsigned long long)o->batch_size);
			goto out;
		}
	/* the writer's reader, for when no worker is at work */
	if ((workers == 0 || s.tune.workers) &&
	    ch_batch_reader_new(&s.own, &s.shared, CH_READS_ALONE, err) < 0)
		goto out;
	for (int i = 0; i < workers; i++) {
		ws[i].s = &s;
		ws[i].index = i;
		if (ch_batch_reader_new(&ws[i].reader, &s.shared, i, err) < 0)
			goto out;
	}
	for (; started < workers; started++)
		if (pthread_create(&threads[started], NULL, work,
				   &ws[started]) != 0) {
			ch_error_set(err, "cannot start worker threads");
			goto out;
		}
	rc = write_batches(&s, sink, sink_arg, st, err);
	if (rc == 0 && o->cancel && *o->cancel)
		rc = ch_error_interrupted(err);
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
	pthread_cond_broadcast(&s.parked);
	pthread_mutex_unlock(&s.lock);
	for (int i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	for (int i = 0; ws && i <= workers; i++) {
		struct ch_batch_reader *r = i < workers ? ws[i].reader : s.own;
		double t[3] = { 0 };
		if (r)
			ch_batch_reader_times(r, t);
		st->decode_s += t[0];
		st->resample_s += t[1];
		st->convert_s += t[2];
		ch_batch_reader_free(r);
	}
	ch_transforms_free(tx);
	free(ws);
	free(threads);
	free_jobs(&s);
	if (s.cache)
		ch_block_cache_stats(s.cache, &st->cache_hits,
				     &st->cache_misses);
	if (s.shared.shards)
		ch_shard_table_stats(s.shared.shards, &st->shard_opens,
				     &st->index_peak);
	st->read_alone = s.alone; /* the workers are joined */
	/* the shard table before the cache it makes forget closed shards */
	ch_shard_table_free(s.shared.shards);
	ch_name_table_free(s.shared.names);
	free(s.shared.keep);
	free(fields);
	ch_block_cache_free(s.cache);
	planner_release(&s.planner);
	ch_split_view_release(&s.split);
	pthread_mutex_destroy(&s.lock);
	pthread_cond_destroy(&s.changed);
	pthread_cond_destroy(&s.parked);
	st->read_s = s.read_s;
	st->encode_s = s.encode_s;
	st->elapsed_s = ch_now() - t0;
	return rc < 0 ? -1 : 0;
}
