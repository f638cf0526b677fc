/* common/pool.c - lib/'s one pool of worker threads (see common/pool.h):
 * verify, check, pack and the stores run their tasks on it. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "common/pool.h"

static int is_set(const volatile sig_atomic_t *cancel)
{
	return cancel && *cancel;
}

/* ------------------------------------------------------------------ */
/* Tasks in any order                                                   */

struct run {
	ch_pool_task *task;
	void *arg;
	const volatile sig_atomic_t *cancel;
	pthread_mutex_t mu;
	pthread_cond_t ended; /* a task or a worker ended */
	size_t ntasks, next;
	int stop;	      /* hand out no more */
	int live;	      /* workers on threads of their own, running */
	size_t failed_at;     /* the lowest failed task, SIZE_MAX: none */
	struct ch_error failure;
};

struct worker {
	struct run *r;
	int index;
};

static void work(struct run *r, int index)
{
	pthread_mutex_lock(&r->mu);
	while (!r->stop && r->next < r->ntasks) {
		if (is_set(r->cancel)) {
			r->stop = 1;
			break;
		}
		size_t i = r->next++;
		pthread_mutex_unlock(&r->mu);
		struct ch_error e = { 0 };
		int rc = r->task(r->arg, i, index, &e);
		pthread_mutex_lock(&r->mu);
		if (rc < 0 && i < r->failed_at) {
			r->failed_at = i;
			r->failure = e;
		}
		if (rc < 0)
			r->stop = 1;
		pthread_cond_broadcast(&r->ended);
	}
	pthread_mutex_unlock(&r->mu);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	work(w->r, w->index);
	pthread_mutex_lock(&w->r->mu);
	w->r->live--;
	pthread_cond_broadcast(&w->r->ended);
	pthread_mutex_unlock(&w->r->mu);
	return NULL;
}

static int verdict(struct run *r, struct ch_error *err)
{
	if (r->failed_at != SIZE_MAX) {
		*err = r->failure;
		return -1;
	}
	if (is_set(r->cancel))
		return ch_error_interrupted(err);
	return 0;
}

/* Waits up to ms milliseconds for a task or a worker to end. */
static void wait_ended(struct run *r, int ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&r->ended, &r->mu, &ts);
}

/* Runs the tasks on threads workers; the caller's thread is worker 0
 * unless watch is given. */
static int run_pool(int threads, size_t ntasks, ch_pool_task *task,
		    void *arg, const volatile sig_atomic_t *cancel,
		    void (*watch)(void *arg), int every_ms,
		    struct ch_error *err)
{
	struct run r = { .task = task, .arg = arg, .cancel = cancel,
			 .ntasks = ntasks, .failed_at = SIZE_MAX };
	size_t want = threads < 1 ? 1 : (size_t)threads;
	int n = (int)(want < ntasks ? want : ntasks ? ntasks : 1);
	int first = watch ? 0 : 1; /* the first on a thread of its own */
	pthread_t *tid = calloc((size_t)n, sizeof(*tid));
	struct worker *ws = calloc((size_t)n, sizeof(*ws));
	int started = first;
	pthread_condattr_t ca;
	if (!tid || !ws) {
		free(tid);
		free(ws);
		return ch_error_nomem(err);
	}
	pthread_mutex_init(&r.mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r.ended, &ca);
	pthread_condattr_destroy(&ca);
	for (; started < n; started++) {
		ws[started] = (struct worker){ &r, started };
		pthread_mutex_lock(&r.mu);
		r.live++;
		pthread_mutex_unlock(&r.mu);
		if (pthread_create(&tid[started], NULL, worker_main,
				   &ws[started]) != 0) {
			pthread_mutex_lock(&r.mu);
			r.live--;
			pthread_mutex_unlock(&r.mu);
			break;
		}
	}
	if (!watch || started == 0) {
		/* no thread of its own could start: the caller works */
		work(&r, 0);
	} else {
		pthread_mutex_lock(&r.mu);
		while (r.live > 0) {
			pthread_mutex_unlock(&r.mu);
			watch(arg);
			pthread_mutex_lock(&r.mu);
			if (r.live > 0)
				wait_ended(&r, every_ms);
		}
		pthread_mutex_unlock(&r.mu);
	}
	for (int i = first; i < started; i++)
		pthread_join(tid[i], NULL);
	int rc = verdict(&r, err);
	pthread_cond_destroy(&r.ended);
	pthread_mutex_destroy(&r.mu);
	free(tid);
	free(ws);
	return rc;
}

int ch_pool_run(int threads, size_t ntasks, ch_pool_task *task, void *arg,
		const volatile sig_atomic_t *cancel, struct ch_error *err)
{
	return run_pool(threads, ntasks, task, arg, cancel, NULL, 0, err);
}

int ch_pool_run_watched(int threads, size_t ntasks, ch_pool_task *task,
			void *arg, const volatile sig_atomic_t *cancel,
			void (*watch)(void *arg), int every_ms,
			struct ch_error *err)
{
	return run_pool(threads, ntasks, task, arg, cancel, watch, every_ms,
			err);
}

/* ------------------------------------------------------------------ */
/* Results made in parallel, taken in order                             */

struct result {
	int ready;    /* made, not yet released */
	int failed;
	size_t index; /* which result the slot holds */
	struct ch_error err;
};

struct ch_ordered {
	ch_ordered_make *make;
	void *arg;
	const volatile sig_atomic_t *cancel;
	pthread_mutex_t mu;
	pthread_cond_t changed;
	size_t ntasks, window;
	size_t next_make; /* the next result to hand to a worker */
	size_t next_take; /* the next result the caller waits for */
	int stop;
	struct result *results; /* result i in results[i % window] */
	pthread_t *threads;
	int nthreads;
};

/* Makes result i into its slot; the caller holds no lock. */
static void make_one(struct ch_ordered *o, size_t i, struct result *out)
{
	struct ch_error e = { 0 };
	int rc = -1;
	if (is_set(o->cancel))
		ch_error_interrupted(&e);
	else
		rc = o->make(o->arg, i, i % o->window, &e);
	pthread_mutex_lock(&o->mu);
	out->index = i;
	out->failed = rc < 0;
	out->err = e;
	out->ready = 1;
	pthread_cond_broadcast(&o->changed);
	pthread_mutex_unlock(&o->mu);
}

static void *maker(void *arg)
{
	struct ch_ordered *o = arg;
	pthread_mutex_lock(&o->mu);
	while (!o->stop && o->next_make < o->ntasks) {
		size_t i = o->next_make;
		/* the slot is free once the caller released its last use */
		if (i >= o->next_take + o->window) {
			pthread_cond_wait(&o->changed, &o->mu);
			continue;
		}
		o->next_make++;
		pthread_mutex_unlock(&o->mu);
		make_one(o, i, &o->results[i % o->window]);
		pthread_mutex_lock(&o->mu);
	}
	pthread_mutex_unlock(&o->mu);
	return NULL;
}

int ch_ordered_start(struct ch_ordered **out, int threads, size_t ntasks,
		     size_t window, ch_ordered_make *make, void *arg,
		     const volatile sig_atomic_t *cancel,
		     struct ch_error *err)
{
	struct ch_ordered *o = calloc(1, sizeof(*o));
	int n = threads < 1 ? 1 : threads;
	if (o) {
		o->window = window ? window : 1;
		o->results = calloc(o->window, sizeof(*o->results));
		o->threads = calloc((size_t)n, sizeof(*o->threads));
	}
	if (!o || !o->results || !o->threads) {
		if (o) {
			free(o->results);
			free(o->threads);
		}
		free(o);
		return ch_error_nomem(err);
	}
	o->make = make;
	o->arg = arg;
	o->cancel = cancel;
	o->ntasks = ntasks;
	pthread_mutex_init(&o->mu, NULL);
	pthread_cond_init(&o->changed, NULL);
	for (; o->nthreads < n; o->nthreads++)
		if (pthread_create(&o->threads[o->nthreads], NULL, maker,
				   o) != 0)
			break;
	*out = o;
	return 0;
}

int ch_ordered_next(struct ch_ordered *o, size_t *slot, struct ch_error *err)
{
	size_t i = o->next_take;
	struct result *res = &o->results[i % o->window];
	if (o->nthreads == 0 && !res->ready) {
		/* no worker could start: made here, in turn */
		o->next_make = i + 1;
		make_one(o, i, res);
	}
	pthread_mutex_lock(&o->mu);
	while (!(res->ready && res->index == i))
		pthread_cond_wait(&o->changed, &o->mu);
	pthread_mutex_unlock(&o->mu);
	if (res->failed) {
		*err = res->err;
		return -1;
	}
	*slot = i % o->window;
	return 0;
}

void ch_ordered_release(struct ch_ordered *o)
{
	pthread_mutex_lock(&o->mu);
	o->results[o->next_take % o->window].ready = 0;
	o->next_take++;
	pthread_cond_broadcast(&o->changed);
	pthread_mutex_unlock(&o->mu);
}

void ch_ordered_stop(struct ch_ordered *o)
{
	if (!o)
		return;
	pthread_mutex_lock(&o->mu);
	o->stop = 1;
	pthread_cond_broadcast(&o->changed);
	pthread_mutex_unlock(&o->mu);
	for (int i = 0; i < o->nthreads; i++)
		pthread_join(o->threads[i], NULL);
	pthread_cond_destroy(&o->changed);
	pthread_mutex_destroy(&o->mu);
	free(o->results);
	free(o->threads);
	free(o);
}
