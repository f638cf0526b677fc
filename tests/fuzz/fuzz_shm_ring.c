/*
 * fuzz_shm_ring.c - libFuzzer target for the producer of `chute stream
 * --shm` (lib/stream/shm_ring.c) against a hostile consumer.
 *
 * The target is chute and its consumer at once: it makes a ring, maps it
 * as a consumer does (writable), and plays the input as a list of moves:
 * the consumer writes a word anywhere in the header or the slot
 * descriptors, or chute puts a frame, finishes or fails.  Whatever the
 * consumer writes, chute must refuse with a message or carry on, never
 * touch memory outside the ring, and remove the ring at the end.  Waits
 * never block: the cancel flag is set, so a wait that would sleep returns
 * "interrupted" instead.  Built and run by scripts/run-fuzz.sh.
 *
 * Input: byte 0 picks the slot count (1 to 4); then moves of 4 bytes,
 * OP AT VALUE: OP % 4 is 0 a write of the u32 VALUE (bytes 2 and 3,
 * repeated, or byte 2 alone when OP & 4: small states and counts) at
 * 4 * AT of the descriptors, 1 a put of a frame of VALUE bytes, 2 finish,
 * 3 fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "chute_shm.h"
#include "chute/stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { SLOT_SIZE = 4096 };

static void check_refusal(const struct ch_error *err)
{
	/* a refusal always says why */
	if (err->msg[0] == '\0' || !memchr(err->msg, '\0', sizeof err->msg))
		abort();
}

/* The consumer's view: the header and the slot descriptors. */
static uint8_t *map_as_consumer(const char *path, size_t len)
{
	int fd = shm_open(path, O_RDWR, 0);
	if (fd < 0)
		abort();
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		abort();
	return p;
}

static uint32_t move_value(const uint8_t *m)
{
	if (m[0] & 4)
		return m[2];
	return (uint32_t)m[2] | (uint32_t)m[3] << 8 | (uint32_t)m[2] << 16 |
	       (uint32_t)m[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[SLOT_SIZE];
	static volatile sig_atomic_t cancel = 1;
	char name[64], path[80];
	struct ch_shm_ring *r;
	struct ch_error err = {{0}};
	if (size < 1)
		return 0;
	snprintf(name, sizeof name, "fuzz-%ld", (long)getpid());
	snprintf(path, sizeof path, "/%s%s", CHUTE_SHM_PREFIX, name);
	struct ch_shm_ring_opts o = {
		.name = name, .slots = 1u + data[0] % 4u,
		.slot_size = SLOT_SIZE, .cancel = &cancel,
	};
	if (ch_shm_ring_create(&r, &o, &err) < 0) {
		check_refusal(&err);
		return 0; /* no room in /dev/shm: nothing to fuzz */
	}
	size_t len = CHUTE_SHM_SLOTS_AT + 64u * o.slots, words = len / 4;
	uint8_t *view = map_as_consumer(path, len);
	int over = 0;
	for (size_t at = 1; at + 4 <= size && !over; at += 4) {
		const uint8_t *m = data + at;
		int rc = 0;
		switch (m[0] % 4) {
		case 0: {
			uint32_t v = move_value(m);
			memcpy(view + 4u * (m[1] % words), &v, 4);
			break;
		}
		case 1:
			rc = ch_shm_ring_put(r, frame,
					     (size_t)(move_value(m) % (SLOT_SIZE + 8)),
					     &err);
			break;
		case 2:
			rc = ch_shm_ring_finish(r, &err);
			over = 1;
			break;
		default:
			ch_shm_ring_fail(r, "fuzz");
			over = 1;
		}
		if (rc < 0) {
			check_refusal(&err);
			ch_shm_ring_fail(r, err.msg);
			over = 1;
		}
		over |= rc > 0; /* the consumer closed the ring */
	}
	munmap(view, len);
	ch_shm_ring_free(r);
	/* the ring is gone from /dev/shm on every path */
	int fd = shm_open(path, O_RDONLY, 0);
	if (fd >= 0 || errno != ENOENT)
		abort();
	return 0;
}
