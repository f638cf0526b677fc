/* common/counter.h - a long call's progress reports (common/counter.c):
 * counts what a phase has done and calls the caller's ch_progress_fn
 * every so many things, so that counting a sample costs an add and a
 * compare, never a clock read.
 *
 * Not locked: a phase counted from several threads is counted under the
 * caller's own lock, which also makes the calls come from one thread at
 * a time, as ch_progress_fn promises. */
#ifndef CH_COMMON_COUNTER_H
#define CH_COMMON_COUNTER_H

#include "chute/common.h"

struct ch_counter {
	ch_progress_fn fn; /* NULL: count nothing, call nothing */
	void *arg;
	struct ch_progress p;
	uint64_t every, every_bytes; /* things, bytes between two calls */
	uint64_t next, next_bytes;   /* p.done, p.bytes at the next call */
};

/* A counter reporting to fn(arg) (fn may be NULL). */
void ch_counter_init(struct ch_counter *c, ch_progress_fn fn, void *arg);
/* Starts a phase of total things counted in unit (0: not known) and
 * total_bytes bytes (0: not counted), and reports it. */
void ch_counter_phase(struct ch_counter *c, const char *phase,
		      const char *unit, uint64_t total, uint64_t total_bytes);
/* n more things done, bytes more bytes; reports every c->every things
 * or c->every_bytes bytes (a thing may take long: a file being hashed
 * reports its bytes as they go). */
static inline void ch_counter_add(struct ch_counter *c, uint64_t n,
				  uint64_t bytes)
{
	if (!c->fn)
		return;
	c->p.done += n;
	c->p.bytes += bytes;
	if (c->p.done >= c->next || c->p.bytes >= c->next_bytes) {
		c->next = c->p.done + c->every;
		c->next_bytes = c->p.bytes + c->every_bytes;
		c->fn(&c->p, c->arg);
	}
}
/* The phase is over: reports its last numbers. */
void ch_counter_end(struct ch_counter *c);

#endif
