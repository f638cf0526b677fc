/* test_pool.c - lib/'s worker pool: every task once, the lowest failure's
 * error whatever the thread count, cancel, and results taken in order. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/pool.h"
#include "unit.h"

enum { NTASKS = 1000 };

struct counts {
	int ran[NTASKS];
	int threads; /* workers are numbered below this */
	int bad_worker;
	size_t fail_from; /* tasks at or past this fail, odd ones only */
	volatile sig_atomic_t *cancel;
	size_t cancel_at;
};

static int count_task(void *arg, size_t i, int worker, struct ch_error *err)
{
	struct counts *c = arg;
	__atomic_fetch_add(&c->ran[i], 1, __ATOMIC_RELAXED);
	if (worker < 0 || worker >= c->threads)
		c->bad_worker = 1;
	if (c->cancel && i == c->cancel_at)
		*c->cancel = 1;
	if (i >= c->fail_from && i % 2) {
		usleep((useconds_t)(NTASKS - i)); /* later ones fail first */
		return ch_error_set(err, "task %zu failed", i);
	}
	return 0;
}

static void every_task_runs_once(void)
{
	static const int threads[] = { 1, 2, 8 };
	for (size_t t = 0; t < sizeof(threads) / sizeof(*threads); t++) {
		struct counts *c = calloc(1, sizeof(*c));
		struct ch_error err;
		c->threads = threads[t];
		c->fail_from = SIZE_MAX;
		CHECK(ch_pool_run(threads[t], NTASKS, count_task, c, NULL,
				  &err) == 0);
		for (size_t i = 0; i < NTASKS; i++)
			if (!CHECK(c->ran[i] == 1))
				unit_note("%d threads: task %zu ran %d times",
					  threads[t], i, c->ran[i]);
		CHECK(!c->bad_worker);
		free(c);
	}
}

static void the_lowest_failure_is_returned(void)
{
	static const int threads[] = { 1, 2, 8 };
	for (size_t t = 0; t < sizeof(threads) / sizeof(*threads); t++) {
		struct counts *c = calloc(1, sizeof(*c));
		struct ch_error err = { 0 };
		c->threads = threads[t];
		c->fail_from = 500;
		CHECK(ch_pool_run(threads[t], NTASKS, count_task, c, NULL,
				  &err) == -1);
		if (!CHECK_STR(err.msg, "task 501 failed"))
			unit_note("%d threads", threads[t]);
		for (size_t i = 0; i <= 501; i++)
			CHECK(c->ran[i] == 1);
		free(c);
	}
}

static void cancel_stops_it(void)
{
	static const int threads[] = { 1, 2, 8 };
	for (size_t t = 0; t < sizeof(threads) / sizeof(*threads); t++) {
		struct counts *c = calloc(1, sizeof(*c));
		volatile sig_atomic_t cancel = 0;
		struct ch_error err = { 0 };
		size_t ran = 0;
		c->threads = threads[t];
		c->fail_from = SIZE_MAX;
		c->cancel = &cancel;
		c->cancel_at = 10;
		CHECK(ch_pool_run(threads[t], NTASKS, count_task, c, &cancel,
				  &err) == -1);
		CHECK_STR(err.msg, "interrupted");
		for (size_t i = 0; i < NTASKS; i++)
			ran += (size_t)c->ran[i];
		/* at most one more task per other worker once it is set */
		if (!CHECK(ran <= 11 + (size_t)threads[t]))
			unit_note("%d threads: %zu tasks ran", threads[t], ran);
		free(c);
	}
}

static int zero_tasks(void *arg, size_t i, int worker, struct ch_error *err)
{
	(void)arg, (void)i, (void)worker;
	return ch_error_set(err, "never");
}

static void no_tasks_is_fine(void)
{
	struct ch_error err;
	CHECK(ch_pool_run(4, 0, zero_tasks, NULL, NULL, &err) == 0);
}

struct watched {
	struct counts c;
	int watched; /* how often: timing, not checked */
};

static void watch(void *arg)
{
	((struct watched *)arg)->watched++;
}

static int watched_task(void *arg, size_t i, int worker, struct ch_error *err)
{
	return count_task(&((struct watched *)arg)->c, i, worker, err);
}

static void watched_runs_every_task(void)
{
	struct watched *w = calloc(1, sizeof(*w));
	struct ch_error err;
	w->c.threads = 3;
	w->c.fail_from = SIZE_MAX;
	CHECK(ch_pool_run_watched(3, NTASKS, watched_task, w, NULL, watch, 5,
				  &err) == 0);
	for (size_t i = 0; i < NTASKS; i++)
		CHECK(w->c.ran[i] == 1);
	CHECK(!w->c.bad_worker);
	free(w);
}

struct squares {
	uint64_t slot[4];
	size_t fail_at;
};

static int make_square(void *arg, size_t i, size_t slot, struct ch_error *err)
{
	struct squares *s = arg;
	if (i == s->fail_at)
		return ch_error_set(err, "square %zu failed", i);
	s->slot[slot] = (uint64_t)i * i;
	return 0;
}

static void ordered_results_come_in_order(void)
{
	for (int threads = 1; threads <= 8; threads *= 2) {
		struct squares s = { .fail_at = 700 };
		struct ch_ordered *o;
		struct ch_error err = { 0 };
		size_t i = 0, slot;
		if (!CHECK(ch_ordered_start(&o, threads, NTASKS, 4, make_square,
					    &s, NULL, &err) == 0))
			return;
		for (; ch_ordered_next(o, &slot, &err) == 0; i++) {
			if (!CHECK_EQ_U64(s.slot[slot], (uint64_t)i * i))
				break;
			ch_ordered_release(o);
		}
		CHECK_EQ_U64(i, 700);
		CHECK_STR(err.msg, "square 700 failed");
		ch_ordered_stop(o);
	}
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(every_task_runs_once),
		UNIT(the_lowest_failure_is_returned),
		UNIT(cancel_stops_it),
		UNIT(no_tasks_is_fine),
		UNIT(watched_runs_every_task),
		UNIT(ordered_results_come_in_order),
	};
	return unit_run(tests, UNIT_COUNT(tests));
}
