/* cmd/pipe_pages.c - the frames of a stream into a pipe: each frame is
 * encoded (through ch_frame_memory, by the worker that reads its batch)
 * or copied into one of a pool of page-aligned buffers, which vmsplice(2)
 * lends to the pipe when its reader is known to read: the reader copies
 * the bytes out of our memory, and the copy that write(2) makes into the
 * pipe's own pages is saved (on 2 cores, Fashion-MNIST batches reach a
 * Python reader 1.6x as fast; 224x224 demo images 1.2x).  Otherwise
 * write(2) copies the frame out of its buffer, which is free again at
 * once: the pool is still worth having, its pages faulted in while the
 * reader starts up (a frame of 224x224 images is 9.6 MB of fresh memory,
 * ~1.4 ms a MB on a virtual machine whose host has taken back the pages
 * a process freed).
 *
 * The pipe holds references to lent pages, not copies, so a buffer is
 * written again only once the pipe's reader has read every byte of it:
 * FIONREAD says how many bytes the pipe still holds, so of what was sent
 * all but those were read.  No buffer free: the frame is written with
 * write(2) instead, never waited for.  That holds for a reader that
 * reads; one that splices the pipe on (tee(1)-like, pv(1)) takes the
 * references with it.  Hence pages are lent only with --vmsplice, or to
 * an anonymous pipe whose reader has marked it by setting its owner's
 * execute bit (fchmod(2)), as chute.frames does: a splicing tool
 * between chute and such a reader has a pipe of its own, unmarked. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipe_pages.h"
#include "cmd.h"

struct pipe_page_slot {
	/* mapped (never heap memory, which would be used again while the
	 * pipe may still hold its pages), on huge pages from 2 MiB up */
	uint8_t *data;
	size_t cap;
	uint64_t end; /* the stream offset just past its last frame */
	int lent;     /* reserved for a frame not yet written */
};

/* Slots are made as they are wanted: the frames in the pipe and those
 * the workers encode ahead, each in its own; past MAX_SLOTS a frame is
 * encoded in the stream's memory and copied. */
#define MAX_SLOTS 64

/* Whether fd is an anonymous pipe (pipe(2), a shell's |), not a FIFO
 * in a folder, whose mode bits are the file's own, set by anyone. */
static int anonymous_pipe(int fd)
{
	char path[64], target[16];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(path, target, sizeof(target));
	return n >= 5 && memcmp(target, "pipe:", 5) == 0;
}

void pipe_pages_init(struct pipe_pages *p, int fd, int asked)
{
	struct stat st;
	memset(p, 0, sizeof(*p));
	p->fd = fd;
	p->off = fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode);
	p->asked = asked;
	p->markable = !p->off && anonymous_pipe(fd);
	pthread_mutex_init(&p->lock, NULL);
}

/* Whether slot s's bytes have all been read out of the pipe.  Holding
 * the lock.  A write(2) in progress may have put more in the pipe than
 * sent says yet: the difference then says less than was read, or
 * nothing. */
static int read_out(struct pipe_pages *p, const struct pipe_page_slot *s)
{
	int queued;
	if (s->end <= p->consumed)
		return 1;
	if (ioctl(p->fd, FIONREAD, &queued) < 0 || queued < 0 ||
	    (uint64_t)queued > p->sent)
		return 0;
	if (p->sent - (uint64_t)queued > p->consumed)
		p->consumed = p->sent - (uint64_t)queued;
	return s->end <= p->consumed;
}

/* A slot's memory: on huge pages from 2 MiB up (ch_zeroed_alloc, whose
 * smaller buffers are heap memory, hence mmap below): a frame of 224x224
 * images touches each slot's memory first, a fault a page, and 4 KiB
 * pages cost ~200 ms of a 0.7 s epoch of the demo images (2 cores, a
 * virtual machine whose page-table updates trap). */
#define HUGE_PAGE ((size_t)2 << 20)

static void *map_slot(size_t cap)
{
	if (cap >= HUGE_PAGE)
		return ch_zeroed_alloc(cap);
	void *m = mmap(NULL, cap, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

static void unmap_slot(struct pipe_page_slot *s)
{
	if (s->cap >= HUGE_PAGE)
		ch_zeroed_free(s->data, s->cap);
	else if (s->data)
		munmap(s->data, s->cap);
}

/* Gives slot s n bytes or more; -1 if it cannot.  Its old memory goes:
 * it was read out.  From 2 MiB up, whole huge pages: a 9.6 MB frame's
 * last 1.6 MB on small pages was 400 faults a slot, most of the faults
 * of a demo eval epoch. */
static int fit_slot(struct pipe_page_slot *s, size_t n)
{
	if (s->cap >= n)
		return 0;
	size_t round = n >= HUGE_PAGE ? HUGE_PAGE : 65536;
	size_t cap = (n + round - 1) / round * round;
	uint8_t *m = map_slot(cap);
	if (!m)
		return -1;
	unmap_slot(s);
	s->data = m;
	s->cap = cap;
	return 0;
}

/* How often an unmarked pipe's mode is looked at: an fstat(2) is ~1 us
 * on a virtual machine, and small frames go at tens of thousands a
 * second; a reader marks its pipe once, as it starts. */
#define MARK_CHECK_S 1e-3

/* Whether the next frame is lent: --vmsplice, or the reader has marked
 * the pipe (once seen, for good: a frame already lent cannot be taken
 * back).  Holding the lock. */
static int lending(struct pipe_pages *p)
{
	struct stat st;
	if (p->off)
		return 0;
	if (p->asked || p->marked)
		return 1;
	if (!p->markable)
		return 0;
	double now = ch_now();
	if (now < p->next_check)
		return 0;
	p->next_check = now + MARK_CHECK_S;
	if (fstat(p->fd, &st) == 0 && (st.st_mode & S_IXUSR))
		p->marked = 1;
	return p->marked;
}

/* Lends a read-out slot of n bytes or more, a new one if none is free;
 * NULL if there is none (or no pipe).  Holding the lock.  The slot used
 * longest ago first: read out soonest, and its pages the warm ones. */
static struct pipe_page_slot *lend_slot(struct pipe_pages *p, size_t n)
{
	struct pipe_page_slot *s = NULL;
	if (p->off)
		return NULL;
	if (!p->slots && !(p->slots = calloc(MAX_SLOTS, sizeof(*p->slots))))
		return NULL;
	for (size_t i = 0; i < p->nslots && !s; i++) {
		struct pipe_page_slot *t = &p->slots[(p->next + i) % p->nslots];
		if (!t->lent && read_out(p, t))
			s = t;
	}
	if (!s && p->nslots < MAX_SLOTS)
		s = &p->slots[p->nslots++];
	if (!s || fit_slot(s, n) < 0)
		return NULL;
	p->next = (size_t)(s - p->slots + 1) % p->nslots;
	s->lent = 1;
	return s;
}

/* Lends n bytes to the pipe, sent counting each part as it goes in: the
 * workers, reserving meanwhile, measure what was read by it. */
static int splice_all(struct pipe_pages *p, const uint8_t *data, size_t n)
{
	while (n > 0) {
		struct iovec iov = { (void *)data, n };
		ssize_t k = vmsplice(p->fd, &iov, 1, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		pthread_mutex_lock(&p->lock);
		p->sent += (uint64_t)k;
		pthread_mutex_unlock(&p->lock);
		data += k;
		n -= (size_t)k;
	}
	return 0;
}

uint8_t *pipe_pages_reserve(size_t n, void *arg)
{
	struct pipe_pages *p = arg;
	pthread_mutex_lock(&p->lock);
	struct pipe_page_slot *s = lend_slot(p, n);
	pthread_mutex_unlock(&p->lock);
	return s ? s->data : NULL;
}

uint8_t *pipe_pages_reserve_at(size_t n, uint64_t seq, void *arg)
{
	(void)seq; /* a pool: any free slot will do */
	return pipe_pages_reserve(n, arg);
}

/* The lent slot that holds data, or NULL.  Holding the lock. */
static struct pipe_page_slot *slot_of(struct pipe_pages *p,
				      const uint8_t *data, size_t n)
{
	for (size_t i = 0; i < p->nslots; i++)
		if (p->slots[i].lent && p->slots[i].data == data &&
		    n <= p->slots[i].cap)
			return &p->slots[i];
	return NULL;
}

int pipe_pages_write(struct pipe_pages *p, const uint8_t *data, size_t n)
{
	pthread_mutex_lock(&p->lock);
	struct pipe_page_slot *s = slot_of(p, data, n);
	int lend = lending(p), copy = !s;
	if (copy && lend) /* not encoded in place */
		s = lend_slot(p, n);
	if (s) /* only this thread writes: sent holds till then */
		s->end = lend ? p->sent + n : 0;
	pthread_mutex_unlock(&p->lock);
	int rc, written = 0; /* by write(2), not yet in sent */
	if (!s || !lend) {
		rc = cmd_write_all(p->fd, data, n);
		written = 1;
	} else {
		if (copy)
			memcpy(s->data, data, n);
		rc = splice_all(p, s->data, n);
		if (rc < 0 && (errno == EINVAL || errno == EBADF) &&
		    p->sent == 0) {
			/* not a pipe after all: nothing was sent */
			pthread_mutex_lock(&p->lock);
			p->off = 1;
			s->end = 0;
			pthread_mutex_unlock(&p->lock);
			rc = cmd_write_all(p->fd, s->data, n);
			written = 1;
		}
	}
	pthread_mutex_lock(&p->lock);
	if (s)
		s->lent = 0;
	if (rc == 0 && written)
		p->sent += n;
	if (rc == 0) {
		p->frames++;
		p->frames_lent += !written;
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}

void pipe_pages_release(struct pipe_pages *p)
{
	/* unmapped, the pages the pipe still holds stay its own */
	for (size_t i = 0; i < p->nslots; i++)
		unmap_slot(&p->slots[i]);
	free(p->slots);
	p->slots = NULL;
	p->nslots = 0;
	pthread_mutex_destroy(&p->lock);
}
