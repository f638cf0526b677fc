/*
 * chute_shm.h - read the batch frames of `chute stream --shm NAME` from C
 * or C++, straight out of the shared-memory ring: no copy, no library.
 *
 * Header-only (static inline), Linux, C99 or C++11, GCC or Clang;
 * include it first, or define _GNU_SOURCE, under a strict -std=c99.  The
 * ring's layout and protocol are specified in chute-batch(5), section
 * SHARED-MEMORY RING; lib/stream/shm_ring.c (the producer) takes its layout
 * from this file.
 *
 *	struct chute_shm r;
 *	struct chute_shm_frame f;
 *	int rc;
 *	if (chute_shm_open(&r, "train", 60000) < 0)
 *		die(r.error);			// no ring within 60 s, ...
 *	while ((rc = chute_shm_next(&r, &f)) > 0) {
 *		use(f.data, f.size);		// one CHB1 frame, in the ring
 *		chute_shm_release(&r, &f);	// its slot goes back to chute
 *	}
 *	if (rc < 0)
 *		die(r.error);			// chute failed or died
 *	chute_shm_close(&r);
 *
 * chute_shm_open: waits up to timeout_ms for chute to create the ring,
 *   maps it and claims it (one consumer per ring: a second one is refused
 *   with a message naming the first).  Returns 0, or -1 with r.error set
 *   (r needs no close then).
 * chute_shm_next: the next frame, in stream order: returns 1 (f filled),
 *   0 at the end of the stream, -1 when chute failed (its message), died
 *   or the ring is corrupt.  f.data stays valid until f is released; a
 *   consumer may hold up to nslots frames at once and release them in any
 *   order, but chute fills slots in order, so a held frame stalls it once
 *   the ring comes round to its slot.  Waiting uses futexes with a
 *   timeout (CHUTE_SHM_WAIT_MS) to check that chute is alive: no busy
 *   loop.
 * chute_shm_release: hands the frame's slot back to chute.
 * chute_shm_close: detaches; frames not released are given up.  Closing
 *   before the end tells chute to stop (it exits with status 0, as when
 *   a pipe's reader closes it).  Call it on every path after a successful
 *   open.
 * chute_shm_pin_range: the mapping's address and size, for
 *   cudaHostRegister and the like.
 */
#ifndef CHUTE_SHM_H
#define CHUTE_SHM_H

/* POSIX and Linux calls (shm_open, flock, syscall): strict -std=c99 hides
 * them unless this comes before the first system header. */
#if !defined(_GNU_SOURCE) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Layout (chute-batch(5), SHARED-MEMORY RING)                          */

#define CHUTE_SHM_MAGIC "CHR1"
#define CHUTE_SHM_VERSION 1u
#define CHUTE_SHM_DIR "/dev/shm"
#define CHUTE_SHM_PREFIX "chute-"  /* NAME's segment: /dev/shm/chute-NAME */
#define CHUTE_SHM_NAME_MAX 200     /* [A-Za-z0-9._-], not starting with . */
#define CHUTE_SHM_SLOTS_AT 512	   /* slot descriptors after the header */
#define CHUTE_SHM_ALIGN 4096	   /* data_offset and slot_size multiples */
#define CHUTE_SHM_MAX_SLOTS 1024
#define CHUTE_SHM_WAIT_MS 200	   /* futex timeout between liveness checks */
#define CHUTE_SHM_PINNED 1u	   /* header flag: chute mlock()ed the ring */
#define CHUTE_SHM_WAITS 2u	   /* header flag: chute keeps producer_waits */
#define CHUTE_SHM_CONSUMER_WAITS 1u /* consumer_flags: keeps consumer_waits */
/* How long chute sleeps at most when it waits for a slot, before it looks
 * again: a consumer that frees a slot without a store-load fence (Python)
 * may, rarely, not see that chute was about to wait, and not wake it. */
#define CHUTE_SHM_RECHECK_MS 5

/* Slot states: the producer moves FREE to READY, END or ERROR; the
 * consumer moves READY to FREE. */
enum { CHUTE_SHM_FREE = 0, CHUTE_SHM_READY = 1, CHUTE_SHM_END = 2,
       CHUTE_SHM_ERROR = 3 };
/* Ring status, set by the producer before it marks slots END or ERROR. */
enum { CHUTE_SHM_RUNNING = 0, CHUTE_SHM_ENDED = 1, CHUTE_SHM_FAILED = 2 };

struct chute_shm_header {	/* 512 bytes at offset 0 */
	char magic[4];		/*   0 "CHR1", written last */
	uint32_t version;	/*   4 1 */
	uint32_t nslots;	/*   8 slots in the ring */
	uint32_t flags;		/*  12 CHUTE_SHM_PINNED */
	uint64_t slot_size;	/*  16 bytes per slot */
	uint64_t data_offset;	/*  24 where slot 0's bytes begin */
	uint32_t producer_pid;	/*  32 chute stream */
	uint32_t consumer_pid;	/*  36 0 until a consumer claims the ring */
	uint32_t status;	/*  40 RUNNING, ENDED, FAILED */
	uint32_t closed;	/*  44 futex: 1 once the consumer is done */
	uint64_t frames;	/*  48 frames published so far */
	uint32_t producer_waits; /* 56 1 while chute waits for a free slot */
	uint32_t consumer_waits; /* 60 1 while the consumer waits for a frame */
	char error[256];	/*  64 FAILED: why, NUL-terminated */
	uint32_t consumer_flags; /* 320 CHUTE_SHM_CONSUMER_WAITS, at the claim */
	uint8_t pad[188];	/* 324 0 */
};

struct chute_shm_slot {		/* 64 bytes each, from offset 512 */
	uint32_t state;		/*  0 futex: FREE, READY, END, ERROR */
	uint32_t reserved;	/*  4 0 */
	uint64_t seq;		/*  8 READY: frame number, from 0 */
	uint64_t size;		/* 16 READY: the frame's bytes */
	uint8_t pad[40];	/* 24 0 */
};

typedef char chute_shm_header_is_512_[
	sizeof(struct chute_shm_header) == 512 ? 1 : -1];
typedef char chute_shm_slot_is_64_[sizeof(struct chute_shm_slot) == 64 ? 1
								       : -1];

/* ------------------------------------------------------------------ */
/* Primitives the producer shares                                       */

static inline uint32_t chute_shm_load(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void chute_shm_store(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* The words a side sets before it sleeps and the slot states the other
 * side changes: each side stores one and then loads the other, an order
 * that only sequential consistency keeps (so that one of the two always
 * sees the other: no wake is lost). */
static inline uint32_t chute_shm_load_sc(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static inline void chute_shm_store_sc(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

/* Sleeps while *p == v, at most ms milliseconds (a signal or a wake ends
 * it sooner); 1 when the time ran out.  The futex is shared (not
 * FUTEX_PRIVATE): two processes. */
static inline int chute_shm_wait(uint32_t *p, uint32_t v, long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	return syscall(SYS_futex, p, FUTEX_WAIT, v, &ts, NULL, 0) < 0 &&
	       errno == ETIMEDOUT;
}

static inline void chute_shm_wake(uint32_t *p)
{
	syscall(SYS_futex, p, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* A pidfd for pid (Linux 5.3), or -1: then liveness falls back to
 * kill(pid, 0) and /proc, which also tell a zombie from a live process. */
static inline int chute_shm_pidfd(uint32_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#else
	(void)pid;
	return -1;
#endif
}

static inline int chute_shm_alive(uint32_t pid, int pidfd)
{
	if (pidfd >= 0) {
		/* a signal (the SIGINT that stops chute) is not a death */
		struct pollfd p = { pidfd, POLLIN, 0 };
		int n;
		do
			n = poll(&p, 1, 0);
		while (n < 0 && errno == EINTR);
		if (n >= 0)
			return n == 0; /* readable once it exited */
	}
	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		return 0;
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/%u/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 1; /* no /proc: trust kill() */
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *s = strrchr(buf, ')'); /* "pid (comm) S ..." */
	return !(s && (s[2] == 'Z' || s[2] == 'X'));
}

/* 0 if name is a valid ring name. */
static inline int chute_shm_check_name(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > CHUTE_SHM_NAME_MAX || name[0] == '.')
		return -1;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Consumer                                                             */

struct chute_shm {
	int fd, pidfd;
	uint8_t *map;
	size_t size;
	struct chute_shm_header *h;
	struct chute_shm_slot *slots;
	uint64_t seq;		/* next frame */
	char name[CHUTE_SHM_NAME_MAX + 1];
	char error[400];	/* why the last call failed */
};

struct chute_shm_frame {
	const uint8_t *data;	/* CHB1 frame, chute-batch(5) */
	uint64_t size, seq;
	uint32_t slot;
};

static inline int chute_shm_fail_(struct chute_shm *r, const char *fmt,
				  const char *a, unsigned long b)
{
	snprintf(r->error, sizeof r->error, fmt, a, b);
	return -1;
}

static inline void chute_shm_sleep_ms_(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };
	nanosleep(&ts, NULL);
}

/* Opens and maps an initialised ring: 1 done, 0 not there yet, -1 error. */
static inline int chute_shm_map_(struct chute_shm *r)
{
	char path[sizeof CHUTE_SHM_PREFIX + CHUTE_SHM_NAME_MAX + 1];
	struct stat st;
	snprintf(path, sizeof path, "/%s%s", CHUTE_SHM_PREFIX, r->name);
	r->fd = shm_open(path, O_RDWR | O_CLOEXEC, 0);
	if (r->fd < 0)
		return errno == ENOENT ? 0
		       : chute_shm_fail_(r, "cannot open ring '%s': errno %lu",
					 r->name, (unsigned long)errno);
	if (fstat(r->fd, &st) < 0 || st.st_size < CHUTE_SHM_SLOTS_AT)
		goto not_yet; /* chute is still making it */
	r->map = (uint8_t *)mmap(NULL, CHUTE_SHM_SLOTS_AT, PROT_READ,
				 MAP_SHARED, r->fd, 0);
	if (r->map == MAP_FAILED)
		goto not_yet;
	{
		struct chute_shm_header *h = (struct chute_shm_header *)r->map;
		uint32_t magic;
		memcpy(&magic, CHUTE_SHM_MAGIC, 4);
		if (chute_shm_load((const uint32_t *)h->magic) != magic) {
			munmap(r->map, CHUTE_SHM_SLOTS_AT);
			goto not_yet;
		}
		if (h->version != CHUTE_SHM_VERSION || !h->nslots ||
		    h->nslots > CHUTE_SHM_MAX_SLOTS || !h->slot_size ||
		    h->data_offset < CHUTE_SHM_SLOTS_AT + 64ull * h->nslots) {
			munmap(r->map, CHUTE_SHM_SLOTS_AT);
			close(r->fd);
			return chute_shm_fail_(r, "ring '%s' has version %lu or "
					       "a bad layout", r->name,
					       h->version);
		}
		r->size = (size_t)(h->data_offset + h->nslots * h->slot_size);
		munmap(r->map, CHUTE_SHM_SLOTS_AT);
	}
	if ((uint64_t)st.st_size < r->size) {
		close(r->fd);
		return chute_shm_fail_(r, "ring '%s' is shorter than its "
				       "header says (%lu bytes)", r->name,
				       (unsigned long)st.st_size);
	}
	r->map = (uint8_t *)mmap(NULL, r->size, PROT_READ | PROT_WRITE,
				 MAP_SHARED, r->fd, 0);
	if (r->map == MAP_FAILED) {
		close(r->fd);
		return chute_shm_fail_(r, "cannot map ring '%s': errno %lu",
				       r->name, (unsigned long)errno);
	}
	r->h = (struct chute_shm_header *)r->map;
	r->slots = (struct chute_shm_slot *)(r->map + CHUTE_SHM_SLOTS_AT);
	return 1;
not_yet:
	close(r->fd);
	return 0;
}

/* One consumer per ring: an exclusive lock on the segment, then our pid
 * in the header (a ring is read once: a later consumer is refused). */
static inline int chute_shm_claim_(struct chute_shm *r)
{
	uint32_t *owner = &r->h->consumer_pid;
	if (flock(r->fd, LOCK_EX | LOCK_NB) < 0 || chute_shm_load(owner)) {
		uint32_t pid = chute_shm_load(owner);
		return chute_shm_fail_(r, "ring '%s' already has a consumer "
				       "(pid %lu): one consumer per ring",
				       r->name, (unsigned long)pid);
	}
	/* before the pid: chute reads our flags once it sees a consumer */
	chute_shm_store(&r->h->consumer_flags, CHUTE_SHM_CONSUMER_WAITS);
	chute_shm_store(owner, (uint32_t)getpid());
	r->pidfd = chute_shm_pidfd(r->h->producer_pid);
	return 0;
}

static inline int chute_shm_open(struct chute_shm *r, const char *name,
				 long timeout_ms)
{
	memset(r, 0, sizeof *r);
	r->fd = r->pidfd = -1;
	if (chute_shm_check_name(name) < 0) {
		snprintf(r->error, sizeof r->error, "invalid ring name '%.*s': "
			 "1 to %d of A-Z a-z 0-9 . _ -, not starting with .",
			 CHUTE_SHM_NAME_MAX, name, CHUTE_SHM_NAME_MAX);
		return -1;
	}
	snprintf(r->name, sizeof r->name, "%s", name);
	/* chute makes the ring with its first batch: looked for every 2 ms
	 * for a second, then every 4, 8 ... up to 50, so that a consumer
	 * started with chute does not sleep past its first batch */
	for (long waited = 0, pause = 2;; waited += pause) {
		int got = chute_shm_map_(r);
		if (got < 0)
			return -1;
		if (got > 0)
			break;
		if (waited >= timeout_ms)
			return chute_shm_fail_(r, "no ring '%s' after %lu ms "
					       "(is chute stream --shm running?)",
					       name, (unsigned long)timeout_ms);
		if (waited >= 1000)
			pause = pause < 25 ? pause * 2 : 50;
		chute_shm_sleep_ms_(pause);
	}
	if (chute_shm_claim_(r) < 0) {
		munmap(r->map, r->size);
		close(r->fd);
		return -1;
	}
	return 0;
}

/* The producer died: remove its segment if it is still the one we map. */
static inline void chute_shm_remove_stale_(struct chute_shm *r)
{
	char path[sizeof CHUTE_SHM_DIR + sizeof CHUTE_SHM_PREFIX +
		  CHUTE_SHM_NAME_MAX + 2];
	struct stat a, b;
	snprintf(path, sizeof path, "%s/%s%s", CHUTE_SHM_DIR,
		 CHUTE_SHM_PREFIX, r->name);
	if (fstat(r->fd, &a) == 0 && stat(path, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		unlink(path);
}

static inline void chute_shm_done_(struct chute_shm *r)
{
	if (!chute_shm_load(&r->h->closed)) {
		chute_shm_store(&r->h->closed, 1);
		chute_shm_wake(&r->h->closed);
	}
}

static inline int chute_shm_next(struct chute_shm *r,
				 struct chute_shm_frame *f)
{
	struct chute_shm_header *h = r->h;
	uint32_t i = (uint32_t)(r->seq % h->nslots);
	struct chute_shm_slot *s = &r->slots[i];
	int timed_out = 0;
	for (;;) {
		uint32_t state = chute_shm_load(&s->state);
		uint32_t status = chute_shm_load(&h->status);
		if (state == CHUTE_SHM_READY)
			break;
		if (state == CHUTE_SHM_END ||
		    (state == CHUTE_SHM_FREE && status == CHUTE_SHM_ENDED)) {
			chute_shm_done_(r);
			return 0;
		}
		if (state == CHUTE_SHM_ERROR || status == CHUTE_SHM_FAILED) {
			snprintf(r->error, sizeof r->error,
				 "chute stream failed: %.255s", h->error);
			return -1;
		}
		if (state != CHUTE_SHM_FREE)
			return chute_shm_fail_(r, "ring '%s': bad slot state "
					       "%lu", r->name, state);
		/* a wait that ran out asks whether chute still lives */
		if (timed_out && !chute_shm_alive(h->producer_pid, r->pidfd)) {
			chute_shm_remove_stale_(r);
			return chute_shm_fail_(r, "ring '%s': chute stream (pid "
					       "%lu) died before the end of the "
					       "stream", r->name,
					       h->producer_pid);
		}
		/* "I wait" before the last look: chute, which stores the
		 * state before it looks at consumer_waits, wakes us */
		chute_shm_store_sc(&h->consumer_waits, 1);
		timed_out = chute_shm_load_sc(&s->state) == CHUTE_SHM_FREE &&
			    chute_shm_wait(&s->state, CHUTE_SHM_FREE,
					   CHUTE_SHM_WAIT_MS);
		chute_shm_store(&h->consumer_waits, 0);
	}
	if (s->seq != r->seq || s->size > h->slot_size || s->size < 64)
		return chute_shm_fail_(r, "ring '%s': slot holds a frame of "
				       "%lu bytes out of order", r->name,
				       (unsigned long)s->size);
	f->data = r->map + h->data_offset + (uint64_t)i * h->slot_size;
	f->size = s->size;
	f->seq = r->seq++;
	f->slot = i;
	return 1;
}

static inline void chute_shm_release(struct chute_shm *r,
				     const struct chute_shm_frame *f)
{
	struct chute_shm_slot *s = &r->slots[f->slot];
	chute_shm_store_sc(&s->state, CHUTE_SHM_FREE);
	/* a wake costs a system call: only when chute waits, if it says */
	if (!(r->h->flags & CHUTE_SHM_WAITS) ||
	    chute_shm_load_sc(&r->h->producer_waits))
		chute_shm_wake(&s->state);
}

static inline void chute_shm_pin_range(const struct chute_shm *r,
				       void **addr, size_t *size)
{
	*addr = r->map;
	*size = r->size;
}

static inline void chute_shm_close(struct chute_shm *r)
{
	if (!r->map)
		return;
	chute_shm_done_(r);
	/* give back what was not read, so that chute sees the close now */
	for (uint32_t i = 0; i < r->h->nslots; i++) {
		uint32_t want = CHUTE_SHM_READY;
		if (__atomic_compare_exchange_n(&r->slots[i].state, &want,
						CHUTE_SHM_FREE, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			chute_shm_wake(&r->slots[i].state);
	}
	munmap(r->map, r->size);
	close(r->fd);
	if (r->pidfd >= 0)
		close(r->pidfd);
	r->map = NULL;
}

#endif
