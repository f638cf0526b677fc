/* cmd/pipe_pages.h - frames into an output pipe from a pool of buffers,
 * handed to it as pages (vmsplice(2)) where its reader reads them, copied
 * into it (write(2)) where it might not. */
#ifndef CHUTE_CMD_PIPE_PAGES_H
#define CHUTE_CMD_PIPE_PAGES_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct pipe_page_slot;

struct pipe_pages {
	int fd;
	int off;	     /* not a pipe, or vmsplice refused: write(2) */
	int asked;	     /* --vmsplice: lend the pages whoever reads */
	int markable;	     /* an anonymous pipe, its reader may mark it */
	int marked;	     /* its reader has marked it: lend the pages */
	double next_check;   /* when to look for the mark next (ch_now) */
	uint64_t frames, frames_lent; /* written so far, of them lent */
	uint64_t sent;	     /* bytes into the pipe so far */
	uint64_t consumed;   /* of them, read out, as last asked */
	struct pipe_page_slot *slots; /* room for all it may make */
	size_t nslots, next;
	/* reserve is called by the stream's workers too: the slots, sent
	 * and consumed are shared */
	pthread_mutex_t lock;
};

/* Frames into fd from a pool of buffers when fd is a pipe; lent to it by
 * vmsplice(2) if asked, or once its reader has marked it (u+x). */
void pipe_pages_init(struct pipe_pages *p, int fd, int asked);
/* Writes n bytes; 0, or -1 with errno set (EPIPE: the reader is gone).
 * Bytes already in the buffer pipe_pages_reserve gave are not copied. */
int pipe_pages_write(struct pipe_pages *p, const uint8_t *data, size_t n);
/* A buffer for n bytes of a frame written later, whose reader has read
 * it out; NULL when there is none (or no pipe): the frame is then copied.
 * A ch_frame_memory's reserve (arg: p), called from any thread; the
 * buffer stays lent until pipe_pages_write is given it. */
uint8_t *pipe_pages_reserve(size_t n, void *arg);
/* The same, its ch_frame_memory's reserve_at. */
uint8_t *pipe_pages_reserve_at(size_t n, uint64_t seq, void *arg);
void pipe_pages_release(struct pipe_pages *p);

#endif
