/* stream/tune.c - what --workers auto and --prefetch auto choose, from
 * stage times measured while the stream runs.  Pure arithmetic: the
 * stream measures, this decides, tests check the decisions. */
#include <math.h>

#include "stream/plan.h"

/* Workers: enough that together they prepare batches faster than the
 * consumer takes them, with a quarter to spare; all of them when the
 * consumer takes no measurable time.  Prefetch: a slot for each worker,
 * and enough ready batches to feed the consumer while the slowest batch
 * seen is being prepared. */
void ch_stream_tune(const struct ch_tune_input *in, int *workers,
		    int *prefetch)
{
	int w = in->threads;
	if (in->consume_mean_s > 0 && in->work_mean_s > 0) {
		double need = ceil(1.25 * in->work_mean_s / in->consume_mean_s);
		if (need < w)
			w = need < 1 ? 1 : (int)need;
	}
	double interval = in->work_mean_s / w; /* a batch ready this often */
	if (in->consume_mean_s > interval)
		interval = in->consume_mean_s;
	double cover = interval > 0 ? ceil(in->work_max_s / interval) : 0;
	int p = cover > w ? (cover > in->max_prefetch ? in->max_prefetch
						     : (int)cover)
			  : w;
	if (p < 2)
		p = 2;
	if (p > in->max_prefetch)
		p = in->max_prefetch;
	*workers = w;
	*prefetch = p;
}

/* A hand-off from a worker to the writer costs about a tenth of a
 * millisecond of CPU on 2 shared cores (measured: 12 epochs of 28x28
 * images took twice the CPU with one worker as with the writer reading);
 * a batch that costs under ten times that is cheaper read where it is
 * written. */
#define CHEAP_BATCH_S 1e-3


int ch_workers_reopen(const struct ch_workers_probe *p, double work_mean_s,
		      int called_for)
{
	if (p->cap > 0 || p->trying || work_mean_s < CHEAP_BATCH_S)
		return p->cap;
	return called_for > 1 ? called_for : 1;
}

/* Periods between tries; a try that did not stay waits twice as long, up
 * to 64.  The first try is made in the first period without decoding: a
 * short stream ends in a few periods. */
#define PROBE_EVERY 2
#define PROBE_EVERY_MAX 64
/* How much a try must keep (one worker fewer) or gain (one more). */
#define PROBE_KEEP 0.97
#define PROBE_GAIN 1.05

void ch_workers_probe_init(struct ch_workers_probe *p, int threads)
{
	*p = (struct ch_workers_probe){
		.cap = threads, .next = -1, .wait = 1, .every = PROBE_EVERY,
	};
}

/* Whether cap + dir workers is a count there can be; 0 is the writer
 * reading alone. */
static int in_range(const struct ch_workers_probe *p, int dir, int threads)
{
	return p->cap + dir >= 0 && p->cap + dir <= threads;
}

/* Ends the try that ran in the last period: kept, or undone. */
static void end_try(struct ch_workers_probe *p, double rate, int threads)
{
	int fewer = p->trying < 0;
	int keep = fewer ? rate >= PROBE_KEEP * p->before
			 : rate >= PROBE_GAIN * p->before;
	if (keep && in_range(p, p->trying, threads)) {
		p->every = PROBE_EVERY;
		p->next = p->trying; /* the same way again */
	} else if (keep) {
		/* at the end of the range: going back is the only try left,
		 * and the one just kept says it will not pay soon */
		p->every = PROBE_EVERY_MAX / 4;
		p->next = -p->trying;
	} else {
		p->cap -= p->trying;
		p->every = p->every * 2 > PROBE_EVERY_MAX ? PROBE_EVERY_MAX
							  : p->every * 2;
		p->next = -p->trying;
	}
	p->trying = 0;
	p->wait = p->every;
}

/* Cheap batches start with none and try one worker only after
 * PROBE_EVERY_MAX / 4 periods: a try that does not stay costs a period at
 * the slower count, and on few cores it rarely stays. */
void ch_workers_probe_start(struct ch_workers_probe *p, double work_s,
			    int threads)
{
	if (work_s >= CHEAP_BATCH_S || threads == 0) {
		p->cap = threads;
		return;
	}
	p->cap = 0;
	p->next = 1;
	p->every = p->wait = PROBE_EVERY_MAX / 4;
}

int ch_workers_probe_step(struct ch_workers_probe *p, double rate,
			  int decoding, int threads, int called_for)
{
	if (p->trying) {
		if (decoding) /* not comparable: undo, try later */
			rate = 0;
		end_try(p, rate, threads);
		return p->cap;
	}
	if (decoding || rate <= 0 || --p->wait > 0)
		return p->cap;
	/* a try is one fewer than run, not than the cap: below the cap, one
	 * fewer than the cap would change nothing */
	if (called_for >= 0 && called_for < p->cap)
		p->cap = called_for;
	int dir = in_range(p, p->next, threads) ? p->next : -p->next;
	if (!in_range(p, dir, threads)) {
		p->wait = p->every; /* no thread: nothing to try */
		return p->cap;
	}
	p->trying = dir;
	p->before = rate;
	p->cap += dir;
	return p->cap;
}
