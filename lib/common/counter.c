/* common/counter.c - progress reports counted, not timed (common/counter.h). */
#include <string.h>

#include "common/counter.h"

/* Calls in a phase of known size: the display redraws ten times a second
 * at most, so a few thousand calls are plenty for any length of phase. */
enum { CALLS_PER_PHASE = 4096, EVERY_UNKNOWN = 1024 };
#define EVERY_UNKNOWN_BYTES (64u << 20)

void ch_counter_init(struct ch_counter *c, ch_progress_fn fn, void *arg)
{
	memset(c, 0, sizeof(*c));
	c->fn = fn;
	c->arg = arg;
}

void ch_counter_phase(struct ch_counter *c, const char *phase,
		      const char *unit, uint64_t total, uint64_t total_bytes)
{
	if (!c->fn)
		return;
	c->p = (struct ch_progress){ .phase = phase, .unit = unit,
				     .total = total,
				     .total_bytes = total_bytes };
	c->every = total ? total / CALLS_PER_PHASE : EVERY_UNKNOWN;
	if (c->every == 0)
		c->every = 1;
	c->every_bytes = total_bytes ? total_bytes / CALLS_PER_PHASE
				     : EVERY_UNKNOWN_BYTES;
	if (c->every_bytes == 0)
		c->every_bytes = 1;
	c->next = c->every;
	c->next_bytes = c->every_bytes;
	c->fn(&c->p, c->arg);
}

void ch_counter_end(struct ch_counter *c)
{
	if (c->fn && c->p.phase)
		c->fn(&c->p, c->arg);
}
