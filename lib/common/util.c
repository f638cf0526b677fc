/* common/util.c - byte buffers, size parsing, CPU count. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

const char *ch_plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

double ch_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
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

/* Whether the byte sequence at p (left bytes) prints as itself: printable
 * ASCII but the backslash, or a well-formed UTF-8 sequence past the C1
 * controls.  Returns its length, 0 when it must be escaped. */
static size_t plain_len(const uint8_t *p, size_t left)
{
	uint32_t cp;
	if (p[0] >= 0x20 && p[0] < 0x7f && p[0] != '\\')
		return 1;
	size_t n = p[0] >= 0x80 ? ch_utf8_len(p, left, &cp) : 0;
	return n && cp >= 0xa0 ? n : 0;
}

static void put_bytes(char *out, size_t size, size_t *at, const char *s,
		      size_t n)
{
	if (*at < size) {
		size_t room = size - *at - 1;
		memcpy(out + *at, s, n < room ? n : room);
	}
	*at += n;
}

size_t ch_escape(char *out, size_t size, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *p = (const uint8_t *)s;
	size_t at = 0;
	for (size_t i = 0; i < len;) {
		size_t n = plain_len(p + i, len - i);
		char esc[4] = {'\\', 'x', hex[p[i] >> 4], hex[p[i] & 15]};
		if (n) {
			put_bytes(out, size, &at, s + i, n);
			i += n;
			continue;
		}
		switch (p[i]) {
		case '\\': esc[1] = '\\'; break;
		case '\n': esc[1] = 'n'; break;
		case '\t': esc[1] = 't'; break;
		case '\r': esc[1] = 'r'; break;
		default: break;
		}
		put_bytes(out, size, &at, esc, esc[1] == 'x' ? 4 : 2);
		i++;
	}
	if (size)
		out[at < size ? at : size - 1] = '\0';
	return at;
}

/* The password of the URL whose "://" is at sep: [*from, *to) when there
 * is one.  The host part ends at '/', '?', '#' or a space, its user part
 * at the last '@' before that (a password may hold '@'), the user name
 * at the first ':'. */
static int url_password(const char *sep, const char **from, const char **to)
{
	const char *host = sep + 3;
	size_t n = strcspn(host, "/?# \t\n");
	const char *at = NULL;
	for (size_t i = 0; i < n; i++)
		if (host[i] == '@')
			at = host + i;
	const char *colon = at ? memchr(host, ':', (size_t)(at - host)) : NULL;
	if (!colon)
		return 0;
	*from = colon + 1;
	*to = at;
	return 1;
}

char *ch_url_redact(const char *text)
{
	struct ch_buf b = {0};
	const char *p = text, *sep, *from, *to;
	while ((sep = strstr(p, "://"))) {
		if (!url_password(sep, &from, &to)) {
			if (ch_buf_append(&b, p, (size_t)(sep + 3 - p), NULL) < 0)
				goto oom;
			p = sep + 3;
			continue;
		}
		if (ch_buf_append(&b, p, (size_t)(from - p), NULL) < 0 ||
		    ch_buf_append(&b, "***", 3, NULL) < 0)
			goto oom;
		p = to;
	}
	if (ch_buf_append(&b, p, strlen(p) + 1, NULL) < 0)
		goto oom;
	return (char *)b.data;
oom:
	ch_buf_release(&b);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* "did you mean"                                                       */

#define CLOSEST_MAX 64

static size_t min3(size_t a, size_t b, size_t c)
{
	size_t m = a < b ? a : b;
	return m < c ? m : c;
}

/* Optimal string alignment distance: insertions, deletions,
 * substitutions and transpositions of neighbours each cost one. */
static size_t damerau(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t rows[3][CLOSEST_MAX + 1];
	size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];

	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			cur[j] = min3(prev[j] + 1, cur[j - 1] + 1,
				      prev[j - 1] + cost);
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < cur[j])
				cur[j] = prev2[j - 2] + 1;
		}
		size_t *t = prev2;
		prev2 = prev;
		prev = cur;
		cur = t;
	}
	return prev[lb];
}

const char *ch_closest(const char *word, const char *const *names, size_t n)
{
	const char *best = NULL;
	size_t best_d = 3, len = strlen(word);

	if (len == 0 || len > CLOSEST_MAX)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (strlen(names[i]) > CLOSEST_MAX)
			continue;
		size_t d = damerau(word, names[i]);
		/* "x" is two edits from "ls" but resembles nothing */
		if (d < best_d && d < len) {
			best = names[i];
			best_d = d;
		}
	}
	return best;
}
