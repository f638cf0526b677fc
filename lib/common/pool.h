/* common/pool.h - lib/'s one pool of worker threads (common/pool.c).
 *
 * ch_pool_run runs tasks 0..n-1, each once, on up to `threads` threads,
 * the caller's being one of them.  Tasks are handed out in order; the
 * first failure (or the cancel flag) stops the handing out, the tasks
 * already running finish, and the error returned is the lowest-numbered
 * failed task's: every task below a failed one was handed out before it,
 * so the message does not depend on the thread count or the timing.
 * Workers are numbered 0..threads-1 (0 is the caller's thread), for state
 * a worker keeps from task to task (a block reader, a decoder) in an
 * array of `threads` the caller owns.
 *
 * ch_ordered_* is the ordered variant: results made in parallel, taken
 * in order (pack writes its blocks so; a download is read so), with at
 * most `window` results made or in use at once, result i in slot
 * i % window of the caller's own array. */
#ifndef CH_COMMON_POOL_H
#define CH_COMMON_POOL_H

#include <signal.h>
#include <stddef.h>

#include "chute/common.h"

/* Returns 0, or -1 with err set (the struct is passed on whole). */
typedef int ch_pool_task(void *arg, size_t i, int worker,
			 struct ch_error *err);

/* 0 when every task ran and none failed; -1 with the lowest-numbered
 * failure's error, or "interrupted" when *cancel was set (cancel may be
 * NULL).  threads < 1 means one; there are never more than ntasks. */
int ch_pool_run(int threads, size_t ntasks, ch_pool_task *task, void *arg,
		const volatile sig_atomic_t *cancel, struct ch_error *err);

/* As ch_pool_run, but the caller's thread takes no task: it calls
 * watch(arg) as each task ends and at least every every_ms milliseconds
 * until all have (progress reported from one thread); workers 0..threads-1
 * are all threads of their own. */
int ch_pool_run_watched(int threads, size_t ntasks, ch_pool_task *task,
			void *arg, const volatile sig_atomic_t *cancel,
			void (*watch)(void *arg), int every_ms,
			struct ch_error *err);

/* Makes result i into slot i % window, on a worker thread. */
typedef int ch_ordered_make(void *arg, size_t i, size_t slot,
			    struct ch_error *err);

struct ch_ordered;

/* Starts `threads` workers making results 0..ntasks-1.  A set *cancel
 * makes each result not yet begun fail with "interrupted". */
int ch_ordered_start(struct ch_ordered **out, int threads, size_t ntasks,
		     size_t window, ch_ordered_make *make, void *arg,
		     const volatile sig_atomic_t *cancel,
		     struct ch_error *err);
/* Waits for the next result in order: its slot, or -1 with the error of
 * making it (again on every call after). */
int ch_ordered_next(struct ch_ordered *o, size_t *slot, struct ch_error *err);
/* The caller is done with the slot ch_ordered_next gave: a later result
 * may go there. */
void ch_ordered_release(struct ch_ordered *o);
/* Stops the workers (the results not taken are dropped) and frees o. */
void ch_ordered_stop(struct ch_ordered *o);

#endif
