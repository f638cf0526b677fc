/*
 * shm_ring.c - the producer side of `chute stream --shm`: frames copied
 * into a ring of slots in POSIX shared memory (chute-batch(5), SHARED-
 * MEMORY RING).  The layout and the futex primitives come from
 * chute_shm.h, the consumers' header, so the two sides cannot drift.
 *
 * Every wait is a futex wait with a timeout of CHUTE_SHM_WAIT_MS, after
 * which the producer checks the consumer is alive and *cancel is clear:
 * nothing spins, and a dead consumer is noticed within a wait.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "chute_shm.h"
#include "shm_ring.h"

#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

struct ch_shm_ring {
	char name[CHUTE_SHM_NAME_MAX + 1];
	char path[sizeof CHUTE_SHM_PREFIX + CHUTE_SHM_NAME_MAX + 1]; /* "/chute-NAME" */
	int fd;
	uint8_t *map;
	size_t size;
	struct chute_shm_header *h;
	struct chute_shm_slot *slots;
	uint64_t seq;		/* next frame */
	uint32_t consumer;	/* its pid once it claimed the ring, else 0 */
	int consumer_fd;	/* pidfd of the consumer, or -1 */
	volatile sig_atomic_t *cancel;
};

int ch_shm_ring_check_name(const char *name, struct ch_error *err)
{
	if (chute_shm_check_name(name) == 0)
		return 0;
	return ch_error_set(err, "invalid ring name '%.200s': 1 to %d of the "
			    "characters A-Z a-z 0-9 . _ -, not starting "
			    "with a dot", name, CHUTE_SHM_NAME_MAX);
}

uint64_t ch_shm_ring_slot_size(const struct ch_shm_ring *r)
{
	return r->h->slot_size;
}

/* ------------------------------------------------------------------ */
/* Creation                                                             */

static int check_room(const struct ch_shm_ring *r, uint64_t size,
		      struct ch_error *err)
{
	struct statvfs vfs;
	if (statvfs(CHUTE_SHM_DIR, &vfs) < 0)
		return ch_error_errno(err, errno, "cannot look at %s",
				      CHUTE_SHM_DIR);
	uint64_t room = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	if (room >= size)
		return 0;
	return ch_error_set(err, "not enough room in %s for ring '%s': it "
			    "needs %.1f MB, %.1f MB are free (fewer --slots "
			    "or a smaller --slot-size)", CHUTE_SHM_DIR, r->name,
			    (double)size / 1e6, (double)room / 1e6);
}

/* A segment of that name exists: 1 if it was left by a chute stream that
 * died (and was removed), 0 if it is in use. */
static int remove_stale(const struct ch_shm_ring *r, uint32_t *owner)
{
	struct chute_shm_header h;
	int fd = shm_open(r->path, O_RDONLY | O_CLOEXEC, 0);
	memset(&h, 0, sizeof h);
	if (fd < 0)
		return errno == ENOENT; /* gone meanwhile: try again */
	ssize_t n = pread(fd, &h, sizeof h, 0);
	close(fd);
	*owner = h.producer_pid;
	if (n != (ssize_t)sizeof h || h.producer_pid == 0 ||
	    chute_shm_alive(h.producer_pid, -1))
		return 0;
	return shm_unlink(r->path) == 0 || errno == ENOENT;
}

static int open_segment(struct ch_shm_ring *r, struct ch_error *err)
{
	for (int tries = 0; tries < 2; tries++) {
		r->fd = shm_open(r->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
				 0600);
		if (r->fd >= 0)
			return 0;
		if (errno != EEXIST)
			break;
		uint32_t owner = 0;
		if (!remove_stale(r, &owner))
			return ch_error_set(err, "ring '%s' (%s%s) is in use by "
					    "chute stream pid %u: choose "
					    "another --shm name", r->name,
					    CHUTE_SHM_DIR, r->path, owner);
	}
	return ch_error_errno(err, errno, "cannot create ring '%s' in %s",
			      r->name, CHUTE_SHM_DIR);
}

static int pin(struct ch_shm_ring *r, struct ch_error *err)
{
	if (mlock(r->map, r->size) == 0) {
		r->h->flags |= CHUTE_SHM_PINNED;
		return 0;
	}
	int e = errno;
	struct rlimit rl;
	if ((e == ENOMEM || e == EPERM) && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < r->size)
		return ch_error_set(err, "cannot lock ring '%s' in memory "
				    "(--pin): its %.1f MB exceed RLIMIT_MEMLOCK"
				    " (%llu KB; raise it with ulimit -l or "
				    "limits.conf, or give chute CAP_IPC_LOCK)",
				    r->name, (double)r->size / 1e6,
				    (unsigned long long)rl.rlim_cur / 1024);
	return ch_error_errno(err, e, "cannot lock ring '%s' in memory (--pin)",
			      r->name);
}

/* The header, the magic last: a consumer that maps the segment before it
 * is ready sees no magic and waits. */
static void publish(struct ch_shm_ring *r, const struct ch_shm_ring_opts *o,
		    uint64_t slot_size, uint64_t data_offset)
{
	struct chute_shm_header *h = r->h;
	uint32_t magic;
	h->version = CHUTE_SHM_VERSION;
	h->nslots = o->slots;
	h->slot_size = slot_size;
	h->data_offset = data_offset;
	r->slots = (struct chute_shm_slot *)(r->map + CHUTE_SHM_SLOTS_AT);
	memcpy(&magic, CHUTE_SHM_MAGIC, 4);
	chute_shm_store((uint32_t *)h->magic, magic);
}

int ch_shm_ring_create(struct ch_shm_ring **out,
		       const struct ch_shm_ring_opts *o, struct ch_error *err)
{
	struct ch_shm_ring *r = calloc(1, sizeof *r);
	uint64_t slot_size = ALIGN_UP(o->slot_size, CHUTE_SHM_ALIGN);
	uint64_t data_offset = ALIGN_UP(CHUTE_SHM_SLOTS_AT + 64ull * o->slots,
					CHUTE_SHM_ALIGN);
	uint64_t size = data_offset + slot_size * o->slots;
	*out = NULL;
	if (!r)
		return ch_error_set(err, "out of memory");
	r->fd = r->consumer_fd = -1;
	r->map = MAP_FAILED;
	r->cancel = o->cancel;
	if (ch_shm_ring_check_name(o->name, err) < 0)
		goto fail;
	snprintf(r->name, sizeof r->name, "%s", o->name);
	snprintf(r->path, sizeof r->path, "/%s%s", CHUTE_SHM_PREFIX, o->name);
	if (o->slots < 1 || o->slots > CHUTE_SHM_MAX_SLOTS || !slot_size) {
		ch_error_set(err, "a ring has 1 to %d slots of at least 1 byte",
			     CHUTE_SHM_MAX_SLOTS);
		goto fail;
	}
	if (check_room(r, size, err) < 0 || open_segment(r, err) < 0)
		goto fail;
	/* our pid first, so that a chute that finds the name taken can
	 * tell a live ring from one whose producer died */
	uint32_t pid = (uint32_t)getpid();
	if (pwrite(r->fd, &pid, 4, offsetof(struct chute_shm_header,
					    producer_pid)) != 4) {
		ch_error_errno(err, errno, "cannot write ring '%s'", r->name);
		goto fail;
	}
	/* tmpfs allocates on write: reserve now, so that a full /dev/shm
	 * is an error here and not a SIGBUS in the middle of a frame */
	int e = posix_fallocate(r->fd, 0, (off_t)size);
	if (e) {
		ch_error_errno(err, e, "cannot reserve %.1f MB in %s for ring "
			       "'%s'", (double)size / 1e6, CHUTE_SHM_DIR,
			       r->name);
		goto fail;
	}
	r->size = (size_t)size;
	r->map = mmap(NULL, r->size, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_POPULATE, r->fd, 0);
	if (r->map == MAP_FAILED) {
		ch_error_errno(err, errno, "cannot map ring '%s'", r->name);
		goto fail;
	}
	r->h = (struct chute_shm_header *)r->map;
	if (o->pin && pin(r, err) < 0)
		goto fail;
	publish(r, o, slot_size, data_offset);
	*out = r;
	return 0;
fail:
	ch_shm_ring_free(r);
	return -1;
}

/* ------------------------------------------------------------------ */
/* Frames                                                               */

/* 0 while the consumer (if one has claimed the ring) lives. */
static int check_consumer(struct ch_shm_ring *r, struct ch_error *err)
{
	if (!r->consumer) {
		r->consumer = chute_shm_load(&r->h->consumer_pid);
		if (!r->consumer)
			return 0;
		r->consumer_fd = chute_shm_pidfd(r->consumer);
	}
	if (chute_shm_alive(r->consumer, r->consumer_fd))
		return 0;
	return ch_error_set(err, "the consumer of ring '%s' (pid %u) died "
			    "before the end of the stream", r->name,
			    r->consumer);
}

static int check_cancel(const struct ch_shm_ring *r, struct ch_error *err)
{
	if (r->cancel && *r->cancel)
		return ch_error_set(err, "interrupted");
	return 0;
}

/* Waits for slot s to be free: 0, 1 when the consumer closed the ring,
 * -1 on error. */
static int wait_free(struct ch_shm_ring *r, struct chute_shm_slot *s,
		     struct ch_error *err)
{
	for (;;) {
		uint32_t state = chute_shm_load(&s->state);
		/* closed is set before the consumer frees its slots */
		if (chute_shm_load(&r->h->closed))
			return 1;
		if (state == CHUTE_SHM_FREE)
			return 0;
		if (check_cancel(r, err) < 0 || check_consumer(r, err) < 0)
			return -1;
		chute_shm_wait(&s->state, state, CHUTE_SHM_WAIT_MS);
	}
}

int ch_shm_ring_put(struct ch_shm_ring *r, const void *frame, size_t size,
		    struct ch_error *err)
{
	struct chute_shm_header *h = r->h;
	uint32_t i = (uint32_t)(r->seq % h->nslots);
	struct chute_shm_slot *s = &r->slots[i];
	if (size > h->slot_size)
		return ch_error_set(err, "a frame of %zu bytes does not fit the "
				    "slots of ring '%s' (%llu bytes): give a "
				    "larger --slot-size", size, r->name,
				    (unsigned long long)h->slot_size);
	if (check_consumer(r, err) < 0)
		return -1;
	int rc = wait_free(r, s, err);
	if (rc != 0)
		return rc;
	memcpy(r->map + h->data_offset + (uint64_t)i * h->slot_size, frame,
	       size);
	s->seq = r->seq;
	s->size = size;
	chute_shm_store(&s->state, CHUTE_SHM_READY);
	chute_shm_wake(&s->state);
	__atomic_store_n(&h->frames, ++r->seq, __ATOMIC_RELEASE);
	return 0;
}

/* The status first, then every free slot marked: a consumer waiting on a
 * slot wakes (its word changed), and one that frees a slot later finds
 * the status when it comes round to it. */
static void end_with(struct ch_shm_ring *r, uint32_t status, uint32_t mark)
{
	chute_shm_store(&r->h->status, status);
	for (uint32_t i = 0; i < r->h->nslots; i++) {
		uint32_t want = CHUTE_SHM_FREE;
		if (__atomic_compare_exchange_n(&r->slots[i].state, &want, mark,
						0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			chute_shm_wake(&r->slots[i].state);
	}
}

int ch_shm_ring_finish(struct ch_shm_ring *r, struct ch_error *err)
{
	end_with(r, CHUTE_SHM_ENDED, CHUTE_SHM_END);
	while (!chute_shm_load(&r->h->closed)) {
		if (check_cancel(r, err) < 0 || check_consumer(r, err) < 0)
			return -1;
		chute_shm_wait(&r->h->closed, 0, CHUTE_SHM_WAIT_MS);
	}
	return 0;
}

void ch_shm_ring_fail(struct ch_shm_ring *r, const char *msg)
{
	snprintf(r->h->error, sizeof r->h->error, "%s", msg);
	end_with(r, CHUTE_SHM_FAILED, CHUTE_SHM_ERROR);
}

void ch_shm_ring_free(struct ch_shm_ring *r)
{
	if (!r)
		return;
	if (r->fd >= 0) {
		shm_unlink(r->path); /* the consumer keeps its mapping */
		close(r->fd);
	}
	if (r->map != MAP_FAILED)
		munmap(r->map, r->size);
	if (r->consumer_fd >= 0)
		close(r->consumer_fd);
	free(r);
}
