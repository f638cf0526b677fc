/* common/hash.c - XXH3-64 and XXH3-128, and the hex form xxhsum prints. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#include "common/bytes.h"
#include "common/xxh.h"
#include "common/internal.h"
#include "common/read_range.h"

uint64_t ch_hash64(const void *data, size_t size)
{
	return XXH3_64bits(data, size);
}

struct ch_hash128 ch_hash128(const void *data, size_t size)
{
	XXH128_hash_t h = XXH3_128bits(data, size);
	return (struct ch_hash128){ h.high64, h.low64 };
}

void ch_hash128_hex(struct ch_hash128 h, char out[33])
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < 16; i++) {
		uint64_t word = i < 8 ? h.high : h.low;
		unsigned byte = (unsigned)(word >> (56 - 8 * (i % 8))) & 0xff;
		out[2 * i] = digits[byte >> 4];
		out[2 * i + 1] = digits[byte & 15];
	}
	out[32] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int ch_hash128_parse(const char *hex, struct ch_hash128 *out)
{
	uint64_t w[2] = { 0, 0 };
	for (int i = 0; i < 32; i++) {
		int v = hexval(hex[i]);
		if (v < 0)
			return -1;
		w[i / 16] = w[i / 16] << 4 | (uint64_t)v;
	}
	if (hex[32] != '\0')
		return -1;
	out->high = w[0];
	out->low = w[1];
	return 0;
}

/* The bytes fed so far (done: how many). */
struct fd_hash {
	XXH3_state_t *st;
	uint64_t done;
};

static void hash_piece(const uint8_t *p, uint64_t off, size_t n, void *arg)
{
	struct fd_hash *h = arg;
	XXH3_128bits_update(h->st, p, n);
	h->done = off + n;
}

/* By pread into a 256 KiB buffer, not 1 MiB by read(2): a chunk still
 * in the core's cache when hashed. */
int ch_hash128_update_fd(XXH3_state_t *st, int fd, uint64_t size,
			 uint64_t *done)
{
	struct ch_read_buf buf = { 0 };
	struct fd_hash h = { st, 0 };
	int rc = ch_read_range(fd, 0, size, hash_piece, &h, &buf, NULL);
	int saved = errno;
	ch_read_buf_release(&buf);
	errno = saved;
	*done = h.done;
	return rc;
}

/* Why reading path stopped at byte at (errno from ch_read_range). */
static void read_failed(const char *path, uint64_t at, struct ch_error *err)
{
	if (errno == ENOMEM)
		ch_error_set(err, "out of memory hashing '%s'", path);
	else if (errno)
		ch_error_errno(err, errno, "cannot read '%s' at byte %llu", path,
			       (unsigned long long)at);
	else
		ch_error_set(err, "'%s' ended at byte %llu while read: it shrank",
			     path, (unsigned long long)at);
}

int ch_hash128_file(const char *path, struct ch_hash128 *out,
		    uint64_t *size_out, struct ch_error *err)
{
	XXH3_state_t st;
	struct stat sb;
	uint64_t size = 0;
	int fd = ch_open_regular(path, err);
	if (fd < 0)
		return -1;
	XXH3_128bits_reset(&st);
	if (fstat(fd, &sb) < 0 ||
	    ch_hash128_update_fd(&st, fd, (uint64_t)sb.st_size, &size) < 0) {
		read_failed(path, size, err);
		close(fd);
		return -1;
	}
	close(fd);
	XXH128_hash_t d = XXH3_128bits_digest(&st);
	*out = (struct ch_hash128){ d.high64, d.low64 };
	if (size_out)
		*size_out = size;
	return 0;
}

_Static_assert(sizeof(XXH3_state_t) <= sizeof(((struct ch_content_hash *)0)
					       ->inline_state),
	       "XXH3 state does not fit in struct ch_content_hash");

void ch_content_hash_init(struct ch_content_hash *h)
{
	h->state = h->inline_state;
	XXH3_64bits_reset(h->state);
}

void ch_content_hash_field(struct ch_content_hash *h, const char *name,
			   const uint8_t *data, uint64_t size)
{
	uint8_t le[8];
	st64(le, size);
	XXH3_64bits_update(h->state, name, strlen(name) + 1);
	XXH3_64bits_update(h->state, le, 8);
	XXH3_64bits_update(h->state, data, (size_t)size);
}

uint64_t ch_content_hash_final(struct ch_content_hash *h)
{
	return XXH3_64bits_digest(h->state);
}
