/*
 * chute/shm_ring.h - the producer side of the shared-memory ring of
 * `chute stream --shm NAME` (chute-batch(5), SHARED-MEMORY RING; the
 * layout is in chute_shm.h, which consumers include).
 *
 * One thread puts frames, in order; the ring is removed from /dev/shm by
 * ch_shm_ring_free on every path, and a consumer that dies is noticed
 * within CHUTE_SHM_WAIT_MS of chute waiting on it (and at every put).
 */
#ifndef CH_SHM_RING_H
#define CH_SHM_RING_H

#include <signal.h>
#include <stdint.h>

#include "chute.h"

struct ch_shm_ring;

struct ch_shm_ring_opts {
	const char *name;	/* NAME: the segment is /dev/shm/chute-NAME */
	uint32_t slots;		/* 1 to CHUTE_SHM_MAX_SLOTS */
	uint64_t slot_size;	/* bytes, rounded up to CHUTE_SHM_ALIGN */
	int pin;		/* mlock the ring */
	volatile sig_atomic_t *cancel; /* stops waits: "interrupted" */
};

/* 0 if name can name a ring, else -1 with the rule in err. */
int ch_shm_ring_check_name(const char *name, struct ch_error *err);

/* Creates the segment (O_EXCL; one left by a chute that died is
 * replaced), checks /dev/shm has room, reserves its pages (no SIGBUS
 * later), locks it with pin, and publishes the header. */
int ch_shm_ring_create(struct ch_shm_ring **out,
		       const struct ch_shm_ring_opts *o, struct ch_error *err);

uint64_t ch_shm_ring_slot_size(const struct ch_shm_ring *r);

/* Copies one frame into the next slot, waiting for the consumer to free
 * it.  Returns 0, 1 when the consumer closed the ring (stop quietly), or
 * -1: the frame is larger than a slot, the consumer died, or *cancel. */
int ch_shm_ring_put(struct ch_shm_ring *r, const void *frame, size_t size,
		    struct ch_error *err);
/* The same in two steps, for a frame written in place: the next slot,
 * once free (as put waits, and with its returns), then its first size
 * bytes published as the next frame. */
int ch_shm_ring_reserve(struct ch_shm_ring *r, size_t size, uint8_t **slot,
			struct ch_error *err);
void ch_shm_ring_commit(struct ch_shm_ring *r, size_t size);

/* Marks the end of the stream and waits until the consumer has read it
 * all and closed the ring (or died: -1, or *cancel: -1). */
int ch_shm_ring_finish(struct ch_shm_ring *r, struct ch_error *err);

/* Marks the stream failed with msg; the consumer raises it after the
 * frames already in the ring.  Does not wait. */
void ch_shm_ring_fail(struct ch_shm_ring *r, const char *msg);

/* Removes the segment from /dev/shm and unmaps it.  NULL is fine. */
void ch_shm_ring_free(struct ch_shm_ring *r);

#endif
