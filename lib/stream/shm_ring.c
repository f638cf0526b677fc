/*
 * stream/shm_ring.c - the producer side of `chute stream --shm`: frames copied
 * into a ring of slots in POSIX shared memory (chute-batch(5), SHARED-
 * MEMORY RING).  The layout and the futex primitives come from
 * chute_shm.h, the consumers' header, so the two sides cannot drift.
 *
 * Every wait is a futex wait with a timeout (CHUTE_SHM_RECHECK_MS), after
 * which the producer checks the consumer is alive and *cancel is clear:
 * nothing spins, and a dead consumer is noticed within a wait.  Neither
 * side wakes the other unless it said it waits (producer_waits,
 * consumer_waits): a wake is a system call, and a frame needed two.
 *
 * The consumer maps the ring writable, so nothing chute reads back from it
 * is trusted: the layout comes from chute's own copy (struct ch_shm_ring),
 * and what the consumer may write (its pid, closed, slot states) is
 * checked before use.  A consumer that writes anything else ends its own
 * stream with an error, never chute's memory.
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
#include "chute/stream.h"

#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

struct ch_shm_ring {
	char name[CHUTE_SHM_NAME_MAX + 1];
	char path[sizeof CHUTE_SHM_PREFIX + CHUTE_SHM_NAME_MAX + 1]; /* "/chute-NAME" */
	int fd;
	uint8_t *map;
	size_t size;
	struct chute_shm_header *h;
	struct chute_shm_slot *slots;
	/* what chute published, kept here: the consumer can rewrite the
	 * header, chute never reads its layout back */
	struct chute_shm_header published;
	uint64_t seq;		/* next frame */
	uint32_t consumer;	/* its pid once it claimed the ring, else 0 */
	int consumer_waits;	/* it keeps consumer_waits: wake it only then */
	int consumer_fd;	/* pidfd of the consumer, or -1 */
	volatile sig_atomic_t *cancel;
};

int ch_shm_ring_check_name(const char *name, struct ch_error *err)
{
	if (chute_shm_check_name(name) == 0)
		return 0;
	return ch_error_usage(err, "invalid ring name '%.200s': 1 to %d of the "
			      "characters A-Z a-z 0-9 . _ -, not starting "
			      "with a dot", name, CHUTE_SHM_NAME_MAX);
}

uint64_t ch_shm_ring_slot_size(const struct ch_shm_ring *r)
{
	return r->published.slot_size;
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
	ch_error_set(err, "not enough room in %s for ring '%s': it needs %.1f "
		     "MB, %.1f MB are free: fewer slots or smaller ones",
		     CHUTE_SHM_DIR, r->name, (double)size / 1e6,
		     (double)room / 1e6);
	return ch_error_remedy(err, "slots slot-size");
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
		if (!remove_stale(r, &owner)) {
			ch_error_set(err, "ring '%s' (%s%s) is in use by chute "
				     "stream pid %u: choose another ring name",
				     r->name, CHUTE_SHM_DIR, r->path, owner);
			return ch_error_remedy(err, "shm");
		}
	}
	return ch_error_errno(err, errno, "cannot create ring '%s' in %s",
			      r->name, CHUTE_SHM_DIR);
}

static int pin(struct ch_shm_ring *r, struct ch_error *err)
{
	if (mlock(r->map, r->size) == 0) {
		r->published.flags |= CHUTE_SHM_PINNED;
		return 0;
	}
	int e = errno;
	struct rlimit rl;
	if ((e == ENOMEM || e == EPERM) && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < r->size)
		ch_error_set(err, "cannot lock ring '%s' in memory: its %.1f "
			     "MB exceed RLIMIT_MEMLOCK (%llu KB; raise it with "
			     "ulimit -l or limits.conf, or give chute "
			     "CAP_IPC_LOCK)", r->name, (double)r->size / 1e6,
			     (unsigned long long)rl.rlim_cur / 1024);
	else
		ch_error_errno(err, e, "cannot lock ring '%s' in memory",
			       r->name);
	return ch_error_setting(err, "pin");
}

/* The header from chute's copy, the magic last: a consumer that maps the
 * segment before it is ready sees no magic and waits. */
static void publish(struct ch_shm_ring *r, const struct ch_shm_ring_opts *o,
		    uint64_t slot_size, uint64_t data_offset)
{
	struct chute_shm_header *own = &r->published, *h = r->h;
	uint32_t magic;
	own->version = CHUTE_SHM_VERSION;
	own->flags |= CHUTE_SHM_WAITS;
	own->nslots = o->slots;
	own->slot_size = slot_size;
	own->data_offset = data_offset;
	own->producer_pid = (uint32_t)getpid();
	h->version = own->version;
	h->nslots = own->nslots;
	h->flags = own->flags;
	h->slot_size = own->slot_size;
	h->data_offset = own->data_offset;
	h->producer_pid = own->producer_pid;
	r->slots = (struct chute_shm_slot *)(r->map + CHUTE_SHM_SLOTS_AT);
	memcpy(&magic, CHUTE_SHM_MAGIC, 4);
	memcpy(own->magic, &magic, 4);
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
		return ch_error_nomem(err);
	r->fd = r->consumer_fd = -1;
	r->map = MAP_FAILED;
	r->cancel = o->cancel;
	if (ch_shm_ring_check_name(o->name, err) < 0)
		goto fail;
	snprintf(r->name, sizeof r->name, "%s", o->name);
	snprintf(r->path, sizeof r->path, "/%s%s", CHUTE_SHM_PREFIX, o->name);
	if (o->slots < 1 || o->slots > CHUTE_SHM_MAX_SLOTS || !slot_size) {
		ch_error_usage(err, "a ring has 1 to %d slots of at least 1 "
			       "byte", CHUTE_SHM_MAX_SLOTS);
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

/* The header fields only chute writes, by name, at their offsets. */
static const struct {
	const char *name;
	size_t at, size;
} producer_fields[] = {
#define FIELD(f) { #f, offsetof(struct chute_shm_header, f),                \
		   sizeof(((struct chute_shm_header *)0)->f) }
	FIELD(magic), FIELD(version), FIELD(nslots), FIELD(flags),
	FIELD(slot_size), FIELD(data_offset), FIELD(producer_pid),
#undef FIELD
};

/* 0 if the consumer left the header chute published as it was: a
 * consumer that rewrites it reads a ring that is not chute's. */
static int check_header(const struct ch_shm_ring *r, struct ch_error *err)
{
	const uint8_t *now = (const uint8_t *)r->h;
	const uint8_t *was = (const uint8_t *)&r->published;
	for (size_t i = 0; i < sizeof producer_fields / sizeof *producer_fields;
	     i++) {
		size_t at = producer_fields[i].at;
		if (memcmp(now + at, was + at, producer_fields[i].size))
			return ch_error_set(err, "the consumer of ring '%s' "
					    "overwrote its header (%s, byte "
					    "%zu): the stream stops", r->name,
					    producer_fields[i].name, at);
	}
	return 0;
}

/* The segment's size now, or 0 when it cannot be known. */
static uint64_t segment_size(const struct ch_shm_ring *r)
{
	struct stat st;
	if (fstat(r->fd, &st) < 0 || st.st_size < 0)
		return 0;
	return (uint64_t)st.st_size;
}

/* 0 while the segment is as large as chute made it: a consumer that
 * truncates it takes pages chute writes (a SIGBUS, which cmd/ turns into
 * an error, when it does so between this look and the write). */
static int check_size(const struct ch_shm_ring *r, struct ch_error *err)
{
	uint64_t now = segment_size(r);
	if (now >= r->size)
		return 0;
	return ch_error_set(err, "the consumer of ring '%s' truncated it to "
			    "%llu bytes (of %llu): the stream stops", r->name,
			    (unsigned long long)now,
			    (unsigned long long)r->size);
}

/* The pid a consumer claimed the ring with, if it can be one: kill()
 * takes 0 and negative numbers as process groups, and chute is not its
 * own consumer. */
static int check_consumer_pid(const struct ch_shm_ring *r, uint32_t pid,
			      struct ch_error *err)
{
	if (pid <= (uint32_t)INT32_MAX && pid != (uint32_t)getpid())
		return 0;
	return ch_error_set(err, "the consumer of ring '%s' wrote %u as its "
			    "pid (byte %zu), which is not a consumer's process "
			    "id", r->name, pid,
			    offsetof(struct chute_shm_header, consumer_pid));
}

/* 0 while the consumer leaves the header and the size alone; notes its
 * claim.  Called before chute reads any word the consumer writes
 * (closed, a slot's state): random bytes over the header are a broken
 * ring, never a consumer that closed it. */
static int check_claim(struct ch_shm_ring *r, struct ch_error *err)
{
	if (check_header(r, err) < 0 || check_size(r, err) < 0)
		return -1;
	if (!r->consumer) {
		uint32_t pid = chute_shm_load(&r->h->consumer_pid);
		if (!pid)
			return 0;
		if (check_consumer_pid(r, pid, err) < 0)
			return -1;
		r->consumer = pid;
		r->consumer_fd = chute_shm_pidfd(r->consumer);
		/* stored before the pid */
		r->consumer_waits = chute_shm_load(&r->h->consumer_flags) &
				    CHUTE_SHM_CONSUMER_WAITS;
	}
	return 0;
}

/* 0 while the consumer, if one has claimed the ring, lives. */
static int check_alive(const struct ch_shm_ring *r, struct ch_error *err)
{
	if (!r->consumer || chute_shm_alive(r->consumer, r->consumer_fd))
		return 0;
	return ch_error_set(err, "the consumer of ring '%s' (pid %u) died "
			    "before the end of the stream", r->name,
			    r->consumer);
}

static int check_cancel(const struct ch_shm_ring *r, struct ch_error *err)
{
	if (r->cancel && *r->cancel)
		return ch_error_interrupted(err);
	return 0;
}

/* Waits for slot i to be free: 0, 1 when the consumer closed the ring,
 * -1 on error.  chute left the slot ready (or never used it): the
 * consumer may only free it. */
static int wait_free(struct ch_shm_ring *r, uint32_t i, struct ch_error *err)
{
	struct chute_shm_slot *s = &r->slots[i];
	int timed_out = 0;
	for (;;) {
		/* the magic and layout first: closed counts in chute's ring */
		if (check_claim(r, err) < 0)
			return -1;
		uint32_t state = chute_shm_load(&s->state);
		/* closed is set before the consumer frees its slots */
		if (chute_shm_load(&r->h->closed))
			return 1;
		if (state == CHUTE_SHM_FREE)
			return 0;
		if (state != CHUTE_SHM_READY)
			return ch_error_set(err, "the consumer of ring '%s' "
					    "wrote state %u into slot %u (byte "
					    "%llu), which only chute sets: the "
					    "stream stops", r->name, state, i,
					    (unsigned long long)
					    (CHUTE_SHM_SLOTS_AT + 64ull * i));
		/* a wait that ran out asks whether the consumer lives */
		if (check_cancel(r, err) < 0 ||
		    (timed_out && check_alive(r, err) < 0))
			return -1;
		/* "I wait" before the last look: a consumer that frees the
		 * slot after it looks at producer_waits wakes us */
		chute_shm_store_sc(&r->h->producer_waits, 1);
		timed_out = chute_shm_load_sc(&s->state) == state &&
			    chute_shm_wait(&s->state, state,
					   CHUTE_SHM_RECHECK_MS);
		chute_shm_store(&r->h->producer_waits, 0);
	}
}

int ch_shm_ring_reserve(struct ch_shm_ring *r, size_t size, uint8_t **slot,
			struct ch_error *err)
{
	const struct chute_shm_header *own = &r->published;
	uint32_t i = (uint32_t)(r->seq % own->nslots);
	if (size > own->slot_size) {
		ch_error_usage(err, "a frame of %zu bytes does not fit the "
			       "slots of ring '%s' (%llu bytes): give larger "
			       "slots", size, r->name,
			       (unsigned long long)own->slot_size);
		return ch_error_remedy(err, "slot-size");
	}
	int rc = wait_free(r, i, err);
	if (rc != 0)
		return rc;
	*slot = r->map + own->data_offset + (uint64_t)i * own->slot_size;
	return 0;
}

void ch_shm_ring_commit(struct ch_shm_ring *r, size_t size)
{
	struct chute_shm_slot *s = &r->slots[r->seq % r->published.nslots];
	s->seq = r->seq;
	s->size = size;
	chute_shm_store_sc(&s->state, CHUTE_SHM_READY);
	/* a consumer that keeps consumer_waits is woken only when it waits */
	if (!r->consumer_waits || chute_shm_load_sc(&r->h->consumer_waits))
		chute_shm_wake(&s->state);
	/* seq is read by ch_shm_ring_slot_for on other threads */
	uint64_t next = r->seq + 1;
	__atomic_store_n(&r->seq, next, __ATOMIC_RELEASE);
	__atomic_store_n(&r->h->frames, next, __ATOMIC_RELEASE);
}

uint8_t *ch_shm_ring_slot_for(struct ch_shm_ring *r, uint64_t seq,
			      size_t size)
{
	const struct chute_shm_header *own = &r->published;
	uint64_t next = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
	/* frame seq - nslots published: its READY came before, so FREE now
	 * says the consumer has read it */
	if (size > own->slot_size || seq < next || seq - next >= own->nslots)
		return NULL;
	uint32_t i = (uint32_t)(seq % own->nslots);
	if (chute_shm_load(&r->slots[i].state) != CHUTE_SHM_FREE)
		return NULL;
	return r->map + own->data_offset + (uint64_t)i * own->slot_size;
}

int ch_shm_ring_put(struct ch_shm_ring *r, const void *frame, size_t size,
		    struct ch_error *err)
{
	uint8_t *slot;
	int rc = ch_shm_ring_reserve(r, size, &slot, err);
	if (rc != 0)
		return rc;
	if (slot != frame) /* else written there (ch_shm_ring_slot_for) */
		memcpy(slot, frame, size);
	ch_shm_ring_commit(r, size);
	return 0;
}

/* The status first, then every free slot marked: a consumer waiting on a
 * slot wakes (its word changed), and one that frees a slot later finds
 * the status when it comes round to it. */
static void end_with(struct ch_shm_ring *r, uint32_t status, uint32_t mark)
{
	chute_shm_store(&r->h->status, status);
	for (uint32_t i = 0; i < r->published.nslots; i++) {
		uint32_t want = CHUTE_SHM_FREE;
		if (__atomic_compare_exchange_n(&r->slots[i].state, &want, mark,
						0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			chute_shm_wake(&r->slots[i].state);
	}
}

int ch_shm_ring_finish(struct ch_shm_ring *r, struct ch_error *err)
{
	if (check_claim(r, err) < 0)
		return -1;
	end_with(r, CHUTE_SHM_ENDED, CHUTE_SHM_END);
	for (;;) {
		/* as in wait_free: a broken header is not a close */
		if (check_claim(r, err) < 0)
			return -1;
		if (chute_shm_load(&r->h->closed))
			return 0;
		if (check_cancel(r, err) < 0 || check_alive(r, err) < 0)
			return -1;
		chute_shm_wait(&r->h->closed, 0, CHUTE_SHM_WAIT_MS);
	}
}

void ch_shm_ring_fail(struct ch_shm_ring *r, const char *msg)
{
	/* a truncated ring has no room for the news (a SIGBUS) */
	if (segment_size(r) < r->size)
		return;
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
