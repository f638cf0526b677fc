/* store/http_multi.c - many HTTP(S) or S3 requests at once through libcurl's
 * multi interface: up to o->jobs transfers in flight on reused
 * connections, driven by one thread per core (at most 4): receiving and
 * writing a fast download costs a core in system time, so one thread
 * would make the downloads as slow as its core.  The threads take jobs
 * from one list, and the first failure stops them all.
 *
 * Each slot carries one job from start to end, retries included: a
 * transient failure parks the slot until its backoff is over (the other
 * slots go on), and a download continues its PATH.part where it stopped. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "common/pool.h"
#include "store/http.h"

enum slot_state { SLOT_FREE, SLOT_WAIT, SLOT_RUN };

struct slot {
	enum slot_state state;
	CURL *h;
	struct ch_req r;
	struct ch_store_job *job;
	struct ch_part part;
	int part_open;
	int fd;		/* put: the file sent */
	int attempts;	/* requests made for this job */
	int continued;	/* this request continued a non-empty .part */
	int refetched;	/* the job was started over from byte 0 once */
	uint64_t due_ms; /* SLOT_WAIT: when to try again */
};

/* What the threads share. */
struct many_shared {
	pthread_mutex_t mu;
	struct ch_store_job *jobs;
	size_t n, next;		  /* jobs, the next one to take */
	int failed;		  /* set once, read by all (atomic) */
	struct ch_error first;	  /* the first failure */
	struct ch_progress prog; /* totals, summed from threads */
	struct ch_store_reporter rep;
	uint64_t *bytes;	  /* per thread */
	size_t *files;
	int nthreads;
};

/* One thread's transfers. */
struct many {
	struct many_shared *sh;
	int index;		  /* the thread's */
	struct ch_store *st;
	enum ch_req_kind kind;
	CURLM *multi;
	struct slot *slots;
	int nslots;
	uint64_t done_bytes;
	size_t done_files;
	int rc;
};

static int failed(const struct many *m)
{
	return __atomic_load_n(&m->sh->failed, __ATOMIC_ACQUIRE);
}

static void fail(struct many *m, const struct ch_error *e)
{
	struct many_shared *sh = m->sh;
	pthread_mutex_lock(&sh->mu);
	if (!sh->failed)
		sh->first = *e;
	__atomic_store_n(&sh->failed, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&sh->mu);
}

/* The next job nobody has taken, or NULL. */
static struct ch_store_job *take_job(struct many *m)
{
	struct many_shared *sh = m->sh;
	struct ch_store_job *job = NULL;
	pthread_mutex_lock(&sh->mu);
	if (sh->next < sh->n && !sh->failed)
		job = &sh->jobs[sh->next++];
	pthread_mutex_unlock(&sh->mu);
	return job;
}

static int jobs_left(struct many *m)
{
	pthread_mutex_lock(&m->sh->mu);
	int left = m->sh->next < m->sh->n;
	pthread_mutex_unlock(&m->sh->mu);
	return left;
}

/* Ends the slot's job; keeps a .part with bytes in it for the next run,
 * and a verified one (even empty) for ch_parts_commit; drops it when
 * told (a full fetch that failed its check). */
static void slot_end(struct many *m, struct slot *s, int drop_part)
{
	if (s->state == SLOT_RUN)
		curl_multi_remove_handle(m->multi, s->h);
	if (s->part_open)
		ch_part_close(&s->part, drop_part ||
			      (s->part.have == 0 && !s->job->verified));
	if (s->fd >= 0)
		close(s->fd);
	ch_req_release(&s->r);
	s->part_open = 0;
	s->fd = -1;
	s->job = NULL;
	s->state = SLOT_FREE;
}

static void slot_done(struct many *m, struct slot *s)
{
	m->done_bytes += m->kind == CH_REQ_HEAD ? 0 : s->job->size;
	m->done_files++;
	slot_end(m, s, 0);
}

static void slot_launch(struct many *m, struct slot *s)
{
	ch_req_arm(&s->r);
	s->continued = s->part_open && s->part.have > 0;
	s->attempts++;
	if (curl_multi_add_handle(m->multi, s->h) != CURLM_OK) {
		struct ch_error e;
		ch_error_set(&e, "cannot start a transfer of %s", s->r.key_url);
		slot_end(m, s, 0);
		fail(m, &e);
		return;
	}
	s->state = SLOT_RUN;
}

/* A .part that holds the whole object already: check it, or start over
 * once when it does not match.  Returns 1 when the job is finished. */
static int finish_part(struct many *m, struct slot *s)
{
	struct ch_error e;
	int rc = ch_part_finish(&s->part, &e);
	if (rc == 0) {
		slot_done(m, s);
		return 1;
	}
	if (rc == 1 && s->continued && !s->refetched) {
		s->refetched = 1;
		if (ch_part_restart(&s->part, &e) == 0)
			return 0;
	}
	slot_end(m, s, rc == 1);
	fail(m, &e);
	return 1;
}

static int open_source(struct slot *s, struct ch_error *err)
{
	struct stat sb;
	s->fd = open(s->job->path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0 || fstat(s->fd, &sb) < 0)
		return ch_error_errno(err, errno, "cannot open '%s'",
				      s->job->path);
	s->job->size = (uint64_t)sb.st_size;
	s->r.src_fd = s->fd;
	s->r.src_size = s->job->size;
	return 0;
}

static void slot_start(struct many *m, struct slot *s,
		       struct ch_store_job *job)
{
	struct ch_error e;
	s->job = job;
	s->attempts = s->refetched = s->continued = 0;
	s->fd = -1;
	if (ch_req_init(&s->r, m->st, s->h, m->kind, job->key, &e) < 0)
		goto fail;
	if (m->kind == CH_REQ_PUT && open_source(s, &e) < 0)
		goto fail;
	if (m->kind == CH_REQ_GET) {
		if (ch_part_open(&s->part, job, s->r.key_url, 1, &e) < 0)
			goto fail;
		s->part_open = 1;
		s->r.part = &s->part;
		job->resumed = 0;
		if (job->size > 0 && s->part.have == job->size) {
			/* all there from an earlier run: nothing to ask */
			job->resumed = 1;
			s->continued = 1;
			if (finish_part(m, s))
				return;
		}
	}
	slot_launch(m, s);
	return;
fail:
	slot_end(m, s, 0);
	fail(m, &e);
}

static void done_get(struct many *m, struct slot *s, enum ch_req_outcome o,
		     CURLcode c)
{
	struct ch_error e;
	if (o == CH_REQ_OK) {
		/* resumed: the server sent only the rest (206); a server that
		 * ignores Range sends all of it (200), the .part started over */
		s->job->resumed = s->r.from_range && s->r.status == 206;
		if (!finish_part(m, s))
			slot_launch(m, s);
		return;
	}
	/* a continuation past the end: the .part was no prefix of it */
	if (o == CH_REQ_FATAL && s->r.status == 416 && s->continued &&
	    !s->refetched) {
		s->refetched = 1;
		if (ch_part_restart(&s->part, &e) == 0) {
			slot_launch(m, s);
			return;
		}
		slot_end(m, s, 0);
		fail(m, &e);
		return;
	}
	ch_req_error(&s->r, c, s->attempts, &e);
	if (o == CH_REQ_MISSING) /* the job's hash names it: missing data */
		e.kind = CH_ERR_DATA;
	slot_end(m, s, 0);
	fail(m, &e);
}

static void slot_finished(struct many *m, struct slot *s, CURLcode c)
{
	curl_multi_remove_handle(m->multi, s->h);
	s->state = SLOT_WAIT;
	enum ch_req_outcome o = ch_req_outcome(&s->r, c);
	if (o == CH_REQ_RETRY && s->attempts <= m->st->opts.retries) {
		s->due_ms = ch_store_now_ms() +
			    (uint64_t)ch_store_backoff_ms(m->st, s->attempts);
		return;
	}
	struct ch_error e;
	if (m->kind == CH_REQ_GET) {
		done_get(m, s, o, c);
	} else if (m->kind == CH_REQ_HEAD &&
		   (o == CH_REQ_OK || o == CH_REQ_MISSING)) {
		curl_off_t len = -1;
		curl_easy_getinfo(s->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T,
				  &len);
		s->job->exists = o == CH_REQ_OK;
		s->job->remote_size = o == CH_REQ_OK && len > 0
					      ? (uint64_t)len
					      : 0;
		slot_done(m, s);
	} else if (o == CH_REQ_OK) {
		slot_done(m, s);
	} else {
		if (m->kind == CH_REQ_HEAD)
			ch_req_explain(&s->r);
		ch_req_error(&s->r, c, s->attempts, &e);
		slot_end(m, s, 0);
		fail(m, &e);
	}
}

/* Starts new jobs and retries that are due; returns the milliseconds
 * until the next retry (at most 100) and whether anything is left. */
static int fill(struct many *m, long *wait_ms)
{
	uint64_t now = ch_store_now_ms();
	int busy = 0;
	*wait_ms = 100;
	struct ch_store_job *job;
	for (int i = 0; i < m->nslots && !failed(m); i++) {
		struct slot *s = &m->slots[i];
		if (s->state == SLOT_FREE && (job = take_job(m)))
			slot_start(m, s, job);
		else if (s->state == SLOT_WAIT && s->due_ms <= now)
			slot_launch(m, s);
		if (s->state == SLOT_WAIT && s->due_ms > now &&
		    (long)(s->due_ms - now) < *wait_ms)
			*wait_ms = (long)(s->due_ms - now);
		busy |= s->state != SLOT_FREE;
	}
	return busy || (!failed(m) && jobs_left(m));
}

static void report(struct many *m, int force)
{
	uint64_t bytes = m->done_bytes;
	for (int i = 0; i < m->nslots; i++) {
		struct slot *s = &m->slots[i];
		if (s->state == SLOT_FREE)
			continue;
		bytes += s->part_open ? s->part.have : s->r.src_pos;
	}
	struct many_shared *sh = m->sh;
	pthread_mutex_lock(&sh->mu);
	sh->bytes[m->index] = bytes;
	sh->files[m->index] = m->done_files;
	sh->prog.bytes = 0;
	sh->prog.done = 0;
	for (int t = 0; t < sh->nthreads; t++) {
		sh->prog.bytes += sh->bytes[t];
		sh->prog.done += sh->files[t];
	}
	ch_store_report(&sh->rep, &sh->prog, force);
	pthread_mutex_unlock(&sh->mu);
}

static int loop(struct many *m)
{
	long wait_ms;
	while (fill(m, &wait_ms) && !failed(m)) {
		int running = 0;
		if (curl_multi_perform(m->multi, &running) != CURLM_OK) {
			struct ch_error e;
			ch_error_set(&e, "libcurl's multi interface failed");
			fail(m, &e);
			break;
		}
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m->multi, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct ch_req *r = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
					  (char **)&r);
			CURLcode c = msg->data.result;
			slot_finished(m, (struct slot *)((char *)r -
					offsetof(struct slot, r)), c);
		}
		report(m, 0);
		if (!failed(m) && fill(m, &wait_ms))
			curl_multi_poll(m->multi, NULL, 0, (int)wait_ms, NULL);
	}
	return failed(m) ? -1 : 0;
}

/* Sets up one thread's slots (nslots of them) and multi handle. */
static int many_init(struct many *m, struct many_shared *sh, int index,
		     struct ch_store *st, enum ch_req_kind kind, int nslots,
		     struct ch_error *err)
{
	memset(m, 0, sizeof(*m));
	m->sh = sh;
	m->index = index;
	m->st = st;
	m->kind = kind;
	m->nslots = nslots;
	m->slots = calloc((size_t)nslots, sizeof(*m->slots));
	m->multi = curl_multi_init();
	if (!m->slots || !m->multi)
		return ch_error_nomem(err);
	for (int i = 0; i < m->nslots; i++) {
		m->slots[i].fd = -1;
		if (!(m->slots[i].h = curl_easy_init()))
			return ch_error_nomem(err);
	}
	return 0;
}

static void many_release(struct many *m)
{
	for (int i = 0; m->slots && i < m->nslots; i++) {
		if (m->slots[i].state != SLOT_FREE)
			slot_end(m, &m->slots[i], 0);
		if (m->slots[i].h)
			curl_easy_cleanup(m->slots[i].h);
	}
	if (m->multi)
		curl_multi_cleanup(m->multi);
	free(m->slots);
}

/* Task i of the pool: thread i's loop over the shared jobs. */
static int many_task(void *arg, size_t i, int worker, struct ch_error *err)
{
	struct many *m = &((struct many *)arg)[i];
	(void)worker;
	m->rc = loop(m);
	report(m, 0); /* its final numbers, for the total */
	if (m->rc < 0) {
		pthread_mutex_lock(&m->sh->mu);
		*err = m->sh->first;
		pthread_mutex_unlock(&m->sh->mu);
	}
	return m->rc;
}

/* Threads: one per core, at most 4, and no more than slots. */
static int thread_count(int nslots)
{
	int cores = get_nprocs();
	int t = cores < 4 ? cores : 4;
	return t < 1 ? 1 : t > nslots ? nslots : t;
}

/* Runs the nt loops on common/pool.c, the caller's thread one of them; a
 * thread that cannot start leaves its loop to run after another, when
 * the jobs are taken. */
static int run_threads(struct many *ms, int nt, struct ch_error *err)
{
	struct ch_error e;
	if (ch_pool_run(nt, (size_t)nt, many_task, ms, NULL, &e) == 0)
		return 0;
	if (err)
		*err = e;
	return -1;
}

static int run_many(struct ch_store *st, enum ch_req_kind kind,
		    struct ch_store_job *jobs, size_t n,
		    const struct ch_transfer_opts *o, struct ch_error *err)
{
	struct many_shared sh = { .jobs = jobs, .n = n };
	struct many ms[4];
	size_t want = (size_t)ch_store_jobs(o);
	int nslots = (int)(want < n ? want : n), nt = thread_count(nslots);
	int rc = -1, made = 0;
	sh.rep.o = o;
	sh.rep.phase = kind == CH_REQ_HEAD ? "checking remote" :
		       kind == CH_REQ_GET ? "downloading" : "uploading";
	sh.prog.total = n;
	for (size_t i = 0; kind != CH_REQ_HEAD && i < n; i++) {
		struct stat sb;
		if (kind == CH_REQ_GET)
			sh.prog.total_bytes += jobs[i].size;
		else if (stat(jobs[i].path, &sb) == 0)
			sh.prog.total_bytes += (uint64_t)sb.st_size;
	}
	pthread_mutex_init(&sh.mu, NULL);
	sh.nthreads = nt;
	sh.bytes = calloc((size_t)nt, sizeof(*sh.bytes));
	sh.files = calloc((size_t)nt, sizeof(*sh.files));
	if (!sh.bytes || !sh.files) {
		ch_error_nomem(err);
		goto out;
	}
	for (; made < nt; made++) /* slots dealt out as evenly as can be */
		if (many_init(&ms[made], &sh, made, st, kind,
			      nslots / nt + (made < nslots % nt), err) < 0) {
			made++;
			goto out;
		}
	ch_store_report(&sh.rep, &sh.prog, 1);
	rc = run_threads(ms, nt, err);
	if (rc == 0)
		report(&ms[0], 1);
out:
	for (int t = 0; t < made; t++)
		many_release(&ms[t]);
	free(sh.bytes);
	free(sh.files);
	pthread_mutex_destroy(&sh.mu);
	return rc;
}

int ch_store_curl_stat_many(struct ch_store *st, struct ch_store_job *jobs,
			    size_t n, const struct ch_transfer_opts *o,
			    struct ch_error *err)
{
	return run_many(st, CH_REQ_HEAD, jobs, n, o, err);
}

int ch_store_curl_get_many(struct ch_store *st, struct ch_store_job *jobs,
			   size_t n, const struct ch_transfer_opts *o,
			   struct ch_error *err)
{
	return run_many(st, CH_REQ_GET, jobs, n, o, err);
}

int ch_store_curl_put_many(struct ch_store *st, struct ch_store_job *jobs,
			   size_t n, const struct ch_transfer_opts *o,
			   struct ch_error *err)
{
	return run_many(st, CH_REQ_PUT, jobs, n, o, err);
}
