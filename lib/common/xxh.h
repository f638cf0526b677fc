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

#endif
