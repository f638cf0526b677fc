/* check/read_range.h - a byte range of a file fed to a function a chunk
 * at a time, read by pread(2) into a reused buffer (check/read_range.c).
 * verify reads every byte of a shard once; reading is cheaper than
 * mapping here: mapping touches each page of the page cache once, which
 * costs more (page tables, on some VMs ~1.4 us a page) than copying it
 * into a buffer that stays in the core's cache.  One thread reads and
 * hashes: a second thread reading ahead for the hashing one was measured
 * slower (each chunk then crosses between the cores' caches). */
#ifndef CH_CHECK_READ_RANGE_H
#define CH_CHECK_READ_RANGE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

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
 * when the file ended before end: it shrank while read).  Stops early,
 * returning 0, when *cancel is set (cancel may be NULL). */
int ch_read_range(int fd, uint64_t start, uint64_t end, ch_piece_fn *fn,
		  void *arg, struct ch_read_buf *buf,
		  const volatile sig_atomic_t *cancel);

#endif
