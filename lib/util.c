/* util.c - byte buffers, size parsing, CPU count. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chute.h"

int ch_buf_reserve(struct ch_buf *b, size_t cap, struct ch_error *err)
{
	if (cap <= b->cap)
		return 0;
	size_t ncap = b->cap ? b->cap : 4096;
	while (ncap < cap)
		ncap = ncap > SIZE_MAX / 2 ? cap : ncap * 2;
	uint8_t *p = realloc(b->data, ncap);
	if (!p)
		return ch_error_set(err, "out of memory (%zu bytes)", ncap);
	b->data = p;
	b->cap = ncap;
	return 0;
}

int ch_buf_append(struct ch_buf *b, const void *p, size_t n,
		  struct ch_error *err)
{
	if (ch_buf_reserve(b, b->len + n, err) < 0)
		return -1;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

void ch_buf_release(struct ch_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int ch_parse_size(const char *s, uint64_t *out)
{
	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	char *end;
	double v = strtod(s, &end);
	if (errno || end == s)
		return -1;
	uint64_t mult = 1;
	switch (toupper((unsigned char)*end)) {
	case 'K': mult = 1ull << 10; end++; break;
	case 'M': mult = 1ull << 20; end++; break;
	case 'G': mult = 1ull << 30; end++; break;
	case 'T': mult = 1ull << 40; end++; break;
	default: break;
	}
	if (mult > 1 && (*end == 'i' || *end == 'I'))
		end++;
	if (mult > 1 && (*end == 'b' || *end == 'B'))
		end++;
	if (*end != '\0')
		return -1;
	double bytes = v * (double)mult;
	if (bytes < 0 || bytes >= 18446744073709551615.0)
		return -1;
	*out = (uint64_t)bytes;
	return 0;
}

int ch_cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : (int)n;
}

/* Length of the well-formed UTF-8 sequence at p (overlong forms,
 * surrogates and code points past U+10FFFF refused), 0 if there is none;
 * the code point goes to *cp. */
size_t ch_utf8_len(const uint8_t *p, size_t left, uint32_t *cp)
{
	uint32_t c = p[0], min;
	size_t n;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, c &= 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, c &= 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, c &= 0x07, min = 0x10000;
	else
		return 0;
	if (n > left)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}
