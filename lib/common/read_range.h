/* common/read_range.h - reading a file by pread(2) (common/read_range.c):
 * n bytes at an offset whole, or a byte range fed to a function a chunk
 * at a time through a reused buffer.  The one read loop of the tree: a
 * shard's header, index, blocks and samples (shard/reader.c), verify's
 * file and block hashes (check/verify.c), the file hash of pull's and
 * push's checks (ch_hash128_file) and of a resumed download
 * (store/part_file.c).
 *
 * Reading is cheaper than mapping where every byte is read once:
 * mapping touches each page of the page cache once, which costs more
 * (page tables, on some VMs ~1.4 us a page) than copying it into a
 * buffer that stays in the core's cache.  One thread reads and hashes: a
 * second thread reading ahead for the hashing one was measured slower
 * (each chunk then crosses between the cores' caches).  Two threads that
 * each read every other chunk and feed their own, in turn, keep each
 * chunk in its reader's cache: ch_read_range_pair. */
#ifndef CH_COMMON_READ_RANGE_H
#define CH_COMMON_READ_RANGE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* Reads n bytes at off into p, retrying short reads and EINTR.  0, or
 * -1 with errno set (0 when the file ended first) and *failed_at, when
 * failed_at is not NULL, the offset the failing read began at. */
int ch_pread_full(int fd, void *p, size_t n, uint64_t off,
		  uint64_t *failed_at);

/* A piece of the range: n bytes at file offset off. */
typedef void ch_piece_fn(const uint8_t *p, uint64_t off, size_t n,
			 void *arg);

/* One thread's buffer, kept from one range to the next ({0} to start;
 * ch_read_buf_release frees it). */
struct ch_read_buf {
	uint8_t *p;
};
void ch_read_buf_release(struct ch_read_buf *b);

/* Feeds [start, end) of fd to fn in order.  0, or -1 with errno set (0
 * when the file ended before end: it shrank while read; ENOMEM when the
 * buffer could not be had).  Stops early, returning 0, when *cancel is
 * set (cancel may be NULL). */
int ch_read_range(int fd, uint64_t start, uint64_t end, ch_piece_fn *fn,
		  void *arg, struct ch_read_buf *buf,
		  const volatile sig_atomic_t *cancel);

/* The same, read by two threads: this one and a helper each read every
 * other chunk into a buffer of its own (buf is this one's) and feed it
 * to fn once the chunk before it has been fed, so fn still sees the
 * range in order, one call at a time, though not always on this thread.
 * Reading one large shard's file hash: 264 MB in 14 ms, 24 ms on one
 * thread (2 cores).  Without a helper thread, ch_read_range. */
int ch_read_range_pair(int fd, uint64_t start, uint64_t end, ch_piece_fn *fn,
		       void *arg, struct ch_read_buf *buf,
		       const volatile sig_atomic_t *cancel);

#endif
