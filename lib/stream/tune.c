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
