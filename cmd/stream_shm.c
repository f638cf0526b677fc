/*
 * stream_shm.c - the sink of chute stream --shm: each frame goes into the
 * next slot of a ring in /dev/shm (lib/stream/shm_ring.c), made when the first
 * frame comes so that its slots fit the stream's frames.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "chute/stream.h"
#include "cmd.h"
#include "stream_opts.h"
#include "stream_shm.h"

#define MIN_SLOT (64u << 10)

int shm_sink_check(const struct shm_sink *s, const char *output,
		   enum ch_format format, struct ch_error *err)
{
	if (!s->name) {
		if (s->pin || s->slot_size || s->slots)
			return ch_error_usage(err, "--slots, --slot-size and "
					      "--pin go with --shm NAME");
		return 0;
	}
	if (ch_shm_ring_check_name(s->name, err) < 0)
		return cmd_prefix_error(err, "--shm");
	if (output)
		return ch_error_usage(err, "--shm and --output: the batches go "
				      "to one place");
	if (format != CH_FORMAT_BATCH)
		return ch_error_usage(err, "--shm carries batch frames: "
				      "--format %s cannot go with it",
				      stream_option_name(CH_STREAM_OPT_FORMAT,
							 (int)format));
	return 0;
}

/* With --shm nothing goes to standard output: chute lets it go once the
 * ring exists, so that a consumer that gave it a pipe sees the pipe end
 * then and opens the ring at once, where one without looks for it every
 * few milliseconds (chute.Stream).  /dev/null takes its place: a later
 * open must not become descriptor 1. */
static void let_stdout_go(void)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null < 0)
		return; /* the consumer looks for the ring, as without */
	dup2(null, STDOUT_FILENO);
	close(null);
}

/* Without --slot-size, slots hold the first frame with a quarter (and
 * 64K) to spare: frames of one stream differ by their keys, cursors and
 * variable-length fields. */
static int make_ring(struct shm_sink *s, uint64_t first,
		     struct ch_error *err)
{
	struct ch_shm_ring_opts o = {
		.name = s->name, .slots = s->slots ? (uint32_t)s->slots : 4,
		.slot_size = s->slot_size ? s->slot_size
					  : first + first / 4 + MIN_SLOT,
		.pin = s->pin, .cancel = s->cancel,
	};
	struct ch_shm_ring *ring;
	if (ch_shm_ring_create(&ring, &o, err) < 0)
		return -1;
	/* the workers look for it (shm_sink_reserve_at) */
	__atomic_store_n(&s->ring, ring, __ATOMIC_RELEASE);
	cmd_fault_ring(s->name); /* removed on a SIGBUS too */
	let_stdout_go();
	return 0;
}

int shm_sink_put(const struct ch_batch_out *b, void *arg,
		 struct ch_error *err)
{
	struct shm_sink *s = arg;
	if (!s->ring && make_ring(s, b->size, err) < 0)
		return -1;
	uint64_t room = ch_shm_ring_slot_size(s->ring);
	if (b->size > room)
		return ch_error_set(err, "batch %llu of epoch %llu is %zu bytes, "
				    "more than a slot of ring '%s' (%llu bytes"
				    "%s): give a larger --slot-size",
				    (unsigned long long)b->batch,
				    (unsigned long long)b->epoch, b->size,
				    s->name, (unsigned long long)room,
				    s->slot_size ? ""
						 : ", sized from the first batch");
	/* encoded in its slot by the writer (reserved) or by a worker
	 * (shm_sink_reserve_at: the slot that reserving finds), else copied */
	uint8_t *reserved = s->reserved;
	s->reserved = NULL;
	if (reserved && b->data == reserved) {
		ch_shm_ring_commit(s->ring, b->size);
		return 0;
	}
	return ch_shm_ring_put(s->ring, b->data, b->size, err);
}

uint8_t *shm_sink_reserve_at(size_t size, uint64_t seq, void *arg)
{
	struct shm_sink *s = arg;
	struct ch_shm_ring *ring = __atomic_load_n(&s->ring, __ATOMIC_ACQUIRE);
	/* The first frame's worker makes the ring once it knows the size,
	 * before it decodes the images into slot 0: the ring's pages and
	 * the consumer's mapping of them are made meanwhile (48 MB for
	 * 224x224 batches of 64: ~25 ms of a first batch's ~100).  The other
	 * frames come after it, and the sink is first called after it; a
	 * ring that cannot be made is made again there, and the error told. */
	if (!ring && seq == 0) {
		struct ch_error ignored;
		if (make_ring(s, size, &ignored) == 0)
			ring = s->ring;
	}
	return ring ? ch_shm_ring_slot_for(ring, seq, size) : NULL;
}

uint8_t *shm_sink_reserve(size_t size, void *arg)
{
	struct shm_sink *s = arg;
	struct ch_error ignored; /* the sink's call says it again */
	uint8_t *slot = NULL;
	if (s->ring && ch_shm_ring_reserve(s->ring, size, &slot, &ignored) != 0)
		slot = NULL;
	return s->reserved = slot;
}

int shm_sink_end(struct shm_sink *s, int status, const char *msg)
{
	struct ch_error err = {0};
	if (status != 0) {
		if (s->ring)
			ch_shm_ring_fail(s->ring, msg);
	} else if ((!s->ring && make_ring(s, 0, &err) < 0) ||
		   ch_shm_ring_finish(s->ring, &err) < 0) {
		status = cmd_fail(&err);
		if (s->ring)
			ch_shm_ring_fail(s->ring, err.msg);
	}
	ch_shm_ring_free(s->ring);
	s->ring = NULL;
	cmd_fault_ring(NULL);
	return status;
}
