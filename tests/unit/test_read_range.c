/* test_read_range.c - common/read_range.c, the one pread(2) loop: a range
 * arrives whole and in order across the 256 KiB reads, whatever its ends,
 * read by one thread or by two in turn; a file shorter than asked says
 * so (errno 0) and where. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/read_range.h"
#include "unit.h"

#define SIZE (600u << 10) /* three reads of 256 KiB, the last short */

static uint8_t byte_at(uint64_t off) { return (uint8_t)(off * 131 + off / 7); }

/* A temporary file of SIZE bytes, unlinked at once: an open fd. */
static int temp_file(void)
{
	char path[] = "/tmp/chute-read-range-XXXXXX";
	int fd = mkstemp(path);
	uint8_t *p = malloc(SIZE);
	if (fd < 0 || !p) {
		free(p);
		return -1;
	}
	unlink(path);
	for (uint64_t i = 0; i < SIZE; i++)
		p[i] = byte_at(i);
	int ok = write(fd, p, SIZE) == (ssize_t)SIZE;
	free(p);
	if (!ok) {
		close(fd);
		return -1;
	}
	return fd;
}

/* What the pieces fed so far held: where the next one must begin, and
 * how many bytes differed from the file's. */
struct seen {
	uint64_t next;
	uint64_t wrong;
	pthread_t by[2]; /* the threads that fed pieces, the first two */
	int nby;
};

static void piece(const uint8_t *p, uint64_t off, size_t n, void *arg)
{
	struct seen *s = arg;
	pthread_t self = pthread_self();
	s->wrong += off != s->next;
	for (size_t i = 0; i < n; i++)
		s->wrong += p[i] != byte_at(off + i);
	s->next = off + n;
	if (s->nby == 0 || (s->nby == 1 && !pthread_equal(s->by[0], self)))
		s->by[s->nby++] = self;
}

static void ranges_arrive_whole_and_in_order(void)
{
	static const uint64_t ends[][2] = {
		{ 0, SIZE }, { 1, 262144 }, { 262143, 262145 },
		{ 262144, 524288 }, { 100, 100 }, { SIZE - 1, SIZE },
	};
	struct ch_read_buf buf = { 0 };
	int fd = temp_file();
	if (!CHECK(fd >= 0))
		return;
	for (size_t k = 0; k < UNIT_COUNT(ends); k++) {
		struct seen s = { .next = ends[k][0] }, t = { .next = ends[k][0] };
		CHECK(ch_read_range(fd, ends[k][0], ends[k][1], piece, &s, &buf,
				    NULL) == 0);
		CHECK_EQ_U64(s.next, ends[k][1]);
		CHECK_EQ_U64(s.wrong, 0);
		CHECK(ch_read_range_pair(fd, ends[k][0], ends[k][1], piece, &t,
					 &buf, NULL) == 0);
		CHECK_EQ_U64(t.next, ends[k][1]);
		CHECK_EQ_U64(t.wrong, 0);
		/* two threads took turns where there were 2 reads or more */
		uint64_t n = ends[k][1] - ends[k][0];
		CHECK_EQ_U64(t.nby, n > 262144 ? 2 : n > 0);
	}
	ch_read_buf_release(&buf);
	close(fd);
}

static void a_short_file_says_where_it_ended(void)
{
	struct ch_read_buf buf = { 0 };
	struct seen s = { .next = 0 };
	uint8_t small[16];
	uint64_t at = 0;
	int fd = temp_file();
	if (!CHECK(fd >= 0))
		return;
	errno = EBADF;
	CHECK(ch_read_range(fd, 0, SIZE + 1, piece, &s, &buf, NULL) == -1);
	CHECK_EQ_U64(errno, 0);
	CHECK_EQ_U64(s.wrong, 0);
	/* two readers: the pieces before the end, in order, then the end */
	struct seen t = { .next = 0 };
	errno = EBADF;
	CHECK(ch_read_range_pair(fd, 0, SIZE + 1, piece, &t, &buf, NULL) == -1);
	CHECK_EQ_U64(errno, 0);
	CHECK_EQ_U64(t.wrong, 0);
	CHECK_EQ_U64(t.next, 2 * 262144); /* the third read found the end */
	CHECK(ch_pread_full(fd, small, sizeof(small), SIZE - 4, &at) == -1);
	CHECK_EQ_U64(errno, 0);
	CHECK_EQ_U64(at, SIZE); /* the read that found the end began there */
	CHECK(ch_pread_full(fd, small, sizeof(small), SIZE - 16, &at) == 0);
	CHECK_EQ_U64(small[15], byte_at(SIZE - 1));
	ch_read_buf_release(&buf);
	close(fd);
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(ranges_arrive_whole_and_in_order),
		UNIT(a_short_file_says_where_it_ended),
	};
	return unit_run(tests, UNIT_COUNT(tests));
}
