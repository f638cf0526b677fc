/* cmd/pipe_pages.c - --vmsplice: each frame is encoded (through
 * ch_frame_memory) or copied into one of a ring of page-aligned
 * buffers, whose pages vmsplice(2) then lends to the
 * output pipe: the reader copies them out of our memory, and the copy
 * that write(2) makes into the pipe's own pages is saved (on 2 cores,
 * Fashion-MNIST batches reach a Python reader 1.6x as fast).
 *
 * The pipe holds references to the pages, not copies, so a buffer is
 * written again only once the pipe's reader has read every byte of it:
 * FIONREAD says how many bytes the pipe still holds, so of what was sent
 * all but those were read.  No buffer free: the frame is written with
 * write(2) instead, never waited for.  That holds for a reader that
 * reads; one that splices the pipe on (tee(1)-like) takes the references
 * with it, hence an option, which chute.Stream sets for its own reader. */
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "pipe_pages.h"
#include "cmd.h"

struct pipe_page_slot {
	uint8_t *data; /* mapped: freed memory is never reused in flight */
	size_t cap;
	uint64_t end; /* the stream offset just past its last frame */
};

#define MIN_SLOTS 3
#define MAX_SLOTS 64

void pipe_pages_init(struct pipe_pages *p, int fd)
{
	struct stat st;
	memset(p, 0, sizeof(*p));
	p->fd = fd;
	p->off = fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode);
}

/* Slots enough that the pipe, full, holds less than all of them but
 * one: a frame then finds its slot read out unless the reader lags. */
static int make_slots(struct pipe_pages *p, size_t frame)
{
	long pipe = -1;
#ifdef F_GETPIPE_SZ
	pipe = fcntl(p->fd, F_GETPIPE_SZ);
#endif
	size_t n = pipe > 0 && frame ? 2 * (size_t)pipe / frame + 2 : MIN_SLOTS;
	n = n < MIN_SLOTS ? MIN_SLOTS : n > MAX_SLOTS ? MAX_SLOTS : n;
	if (!(p->slots = calloc(n, sizeof(*p->slots))))
		return -1;
	p->nslots = n;
	return 0;
}

/* Whether slot s's bytes have all been read out of the pipe. */
static int read_out(struct pipe_pages *p, const struct pipe_page_slot *s)
{
	int queued;
	if (s->end <= p->consumed)
		return 1;
	if (ioctl(p->fd, FIONREAD, &queued) < 0 || queued < 0)
		return 0;
	p->consumed = p->sent - (uint64_t)queued;
	return s->end <= p->consumed;
}

/* A slot of n bytes or more whose bytes were read out; NULL if none. */
static struct pipe_page_slot *free_slot(struct pipe_pages *p, size_t n)
{
	struct pipe_page_slot *s = &p->slots[p->next];
	if (!read_out(p, s))
		return NULL;
	if (s->cap < n) {
		size_t cap = (n + 65535) & ~(size_t)65535;
		void *m = mmap(NULL, cap, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		if (s->data)
			munmap(s->data, s->cap);
		s->data = m;
		s->cap = cap;
	}
	p->next = (p->next + 1) % p->nslots;
	return s;
}

static int splice_all(struct pipe_pages *p, const uint8_t *data, size_t n)
{
	while (n > 0) {
		struct iovec iov = { (void *)data, n };
		ssize_t k = vmsplice(p->fd, &iov, 1, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		data += k;
		n -= (size_t)k;
	}
	return 0;
}

/* A free slot of n bytes, the ring made first if need be. */
static struct pipe_page_slot *take_slot(struct pipe_pages *p, size_t n)
{
	if (!p->off && !p->slots && make_slots(p, n) < 0)
		p->off = 1;
	return p->off ? NULL : free_slot(p, n);
}

uint8_t *pipe_pages_reserve(size_t n, void *arg)
{
	struct pipe_pages *p = arg;
	p->reserved = take_slot(p, n);
	return p->reserved ? p->reserved->data : NULL;
}

int pipe_pages_write(struct pipe_pages *p, const uint8_t *data, size_t n)
{
	struct pipe_page_slot *s = p->reserved;
	p->reserved = NULL;
	if (!s || data != s->data || n > s->cap) { /* not encoded in place */
		if (!(s = take_slot(p, n))) {
			if (cmd_write_all(p->fd, data, n) < 0)
				return -1;
			p->sent += n;
			return 0;
		}
		memcpy(s->data, data, n);
	}
	s->end = p->sent + n;
	int rc = splice_all(p, s->data, n);
	if (rc < 0 && (errno == EINVAL || errno == EBADF) && p->sent == 0) {
		p->off = 1; /* not a pipe after all: nothing was sent */
		s->end = 0;
		return pipe_pages_write(p, data, n);
	}
	p->sent += n;
	return rc;
}

void pipe_pages_release(struct pipe_pages *p)
{
	/* unmapped, the pages the pipe still holds stay its own */
	for (size_t i = 0; i < p->nslots; i++)
		if (p->slots[i].data)
			munmap(p->slots[i].data, p->slots[i].cap);
	free(p->slots);
	p->slots = NULL;
	p->nslots = 0;
}
