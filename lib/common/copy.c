/* common/copy.c - copies of bytes that another CPU reads next.  A plain
 * copy fetches each line it writes into this CPU's cache first; when the
 * reader is another CPU (a pipe's reader copying a frame chute lent it),
 * those lines were last in the reader's cache, and the fetches cost more
 * than the copy.  Non-temporal stores write the lines whole, around the
 * cache, with no fetch. */
#include <stdint.h>
#include <string.h>

#include "common/internal.h"

#if defined(__SSE2__)
#include <emmintrin.h>

void ch_copy_cold(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	if ((uintptr_t)d % 16 || n < 64) {
		memcpy(d, s, n); /* a part of a line: the cache is as good */
		return;
	}
	size_t i = 0;
	for (; i + 64 <= n; i += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)(s + i));
		__m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32));
		__m128i e = _mm_loadu_si128((const __m128i *)(s + i + 48));
		_mm_stream_si128((__m128i *)(d + i), a);
		_mm_stream_si128((__m128i *)(d + i + 16), b);
		_mm_stream_si128((__m128i *)(d + i + 32), c);
		_mm_stream_si128((__m128i *)(d + i + 48), e);
	}
	for (; i + 16 <= n; i += 16)
		_mm_stream_si128((__m128i *)(d + i),
				 _mm_loadu_si128((const __m128i *)(s + i)));
	memcpy(d + i, s + i, n - i);
}

void ch_copy_cold_done(void)
{
	_mm_sfence();
}

#else

void ch_copy_cold(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}

void ch_copy_cold_done(void)
{
}

#endif
