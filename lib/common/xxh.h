/* common/xxh.h - XXH3 through libxxhash, with its run-time dispatch to AVX2 or
 * AVX-512 on x86-64: hashing runs twice as fast as the SSE2 baseline a
 * plain build gets, and verify must keep up with the page cache. */
#ifndef CH_COMMON_XXH_H
#define CH_COMMON_XXH_H

#define XXH_STATIC_LINKING_ONLY
#if defined(__x86_64__) || defined(__i386__)
#include <xxh_x86dispatch.h>
#else
#include <xxhash.h>
#endif

#include <stdint.h>

/* Feeds the first size bytes of fd to st (XXH3-128), read by pread into
 * a buffer of its own (common/read_range.c).  0, or -1 with errno set
 * (0: the file ended first) and *done the bytes fed. */
int ch_hash128_update_fd(XXH3_state_t *st, int fd, uint64_t size,
			 uint64_t *done);

#endif
