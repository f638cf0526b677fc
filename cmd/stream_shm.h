/*
 * stream_shm.h - chute stream --shm: batch frames into a shared-memory
 * ring instead of a pipe (chute-batch(5), SHARED-MEMORY RING).
 */
#ifndef CHUTE_STREAM_SHM_H
#define CHUTE_STREAM_SHM_H

#include <signal.h>
#include <stdint.h>

#include "chute/stream.h"

struct ch_shm_ring;

/* Zeroed means no --shm. */
struct shm_sink {
	const char *name;	/* --shm NAME; NULL: write to a file */
	uint64_t slots;		/* --slots; 0: 4 */
	uint64_t slot_size;	/* --slot-size; 0: from the first frame */
	int pin;		/* --pin */
	volatile sig_atomic_t *cancel;
	struct ch_shm_ring *ring; /* made at the first frame */
	uint8_t *reserved;	  /* the slot the next frame is in, or NULL */
	struct ch_frame_memory memory; /* shm_sink_reserve, for ch_stream */
};

/* Options that cannot go with --shm: -1 with err filled (a usage
 * error), else 0. */
int shm_sink_check(const struct shm_sink *s, const char *output,
		   enum ch_format format, struct ch_error *err);

/* The next slot, once free, for a frame of size bytes encoded in place
 * (ch_frame_memory): NULL before the ring is made (at the first frame),
 * for a frame larger than a slot, or when the wait failed (the sink's
 * call then says why). */
uint8_t *shm_sink_reserve(size_t size, void *arg);
/* The slot of frame seq for a worker to encode it in, if it is free for
 * that frame now; NULL when it is not (the frame is then copied).  Frame
 * 0's call makes the ring, sized from it; the others before then get
 * NULL.  Any thread; never waits. */
uint8_t *shm_sink_reserve_at(size_t size, uint64_t seq, void *arg);

/* A ch_batch_sink: arg is the struct shm_sink.  A frame already in its
 * slot (shm_sink_reserve, shm_sink_reserve_at) is published, not copied. */
int shm_sink_put(const struct ch_batch_out *b, void *arg,
		 struct ch_error *err);

/* Ends the ring after ch_stream: when status is 0, marks the end and
 * waits for the consumer to read it (a stream of no batch still gets a
 * ring that says so); else marks it failed with msg.  Removes the ring
 * from /dev/shm on every path.  Returns the exit status. */
int shm_sink_end(struct shm_sink *s, int status, const char *msg);

#endif
