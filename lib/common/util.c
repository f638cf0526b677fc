/* common/util.c - byte buffers, size parsing, CPU count. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/internal.h"

/* From 1 MiB up (a batch's samples, a frame), a buffer is whole 2 MiB
 * pages (ch_huge_alloc): on this project's virtual machines each 4 KiB
 * page touched for the first time is a ~15 us trap (3.8 ms a MB), a
 * 2 MiB page 0.07 to 1.6 ms a MB.  The memory stays free()'s, as callers
 * that take b->data expect: what realloc would do is done by hand, the
 * bytes up to len copied. */
#define BIG_BUF ((size_t)1 << 20)

static uint8_t *big_alloc(struct ch_buf *b, size_t *cap)
{
	uint8_t *p = ch_huge_alloc(cap);
	if (p && b->len)
		memcpy(p, b->data, b->len);
	if (p)
		free(b->data);
	return p;
}

int ch_buf_reserve(struct ch_buf *b, size_t cap, struct ch_error *err)
{
	if (cap <= b->cap)
		return 0;
	size_t ncap = b->cap ? b->cap : 4096;
	while (ncap < cap)
		ncap = ncap > SIZE_MAX / 2 ? cap : ncap * 2;
	uint8_t *p = ncap >= BIG_BUF ? big_alloc(b, &ncap)
				     : realloc(b->data, ncap);
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

/* The bidirectional controls: marks and embeddings, overrides and
 * isolates that reorder the text around them on a terminal, so that a
 * key holding U+202E shows another key's name. */
static int is_bidi_control(uint32_t cp)
{
	return cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

/* Whether the byte sequence at p (left bytes) prints as itself: printable
 * ASCII but the backslash, or a well-formed UTF-8 sequence past the C1
 * controls that is not a bidi control.  Returns its length, 0 when it
 * must be escaped. */
static size_t plain_len(const uint8_t *p, size_t left)
{
	uint32_t cp;
	if (p[0] >= 0x20 && p[0] < 0x7f && p[0] != '\\')
		return 1;
	size_t n = p[0] >= 0x80 ? ch_utf8_len(p, left, &cp) : 0;
	return n && cp >= 0xa0 && !is_bidi_control(cp) ? n : 0;
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

/* Where the URL whose "://" is at sep ends: at a blank or the end of
 * text; when a quote opens it ('http://...'), at that quote's last
 * match before the blank, which closes it whatever the URL holds. */
static const char *url_end(const char *text, const char *sep)
{
	const char *host = sep + 3, *s = sep;
	const char *end = host + strcspn(host, " \t\r\n");
	while (s > text && (isalnum((unsigned char)s[-1]) || s[-1] == '+' ||
			    s[-1] == '.' || s[-1] == '-'))
		s--;
	if (s > text && (s[-1] == '\'' || s[-1] == '"')) {
		const char *q = memrchr(host, s[-1], (size_t)(end - host));
		if (q)
			end = q;
	}
	return end;
}

const char *ch_url_userinfo_end(const char *host, const char *end)
{
	if (host >= end || *host == '/') /* file:///PATH: no host at all */
		return NULL;
	const char *slash = memrchr(host, '/', (size_t)(end - host));
	const char *lim = slash ? slash : end;
	return memrchr(host, '@', (size_t)(lim - host));
}

/* Appends the query [q, end) with every value shown as ***: "k=v" as
 * "k=***", a bare "v" as "***".  A last value already shown as ***
 * and followed by punctuation ends the URL there: the message goes on
 * ("...=***: HTTP 403" shown again keeps its colon). */
static int put_query(struct ch_buf *b, const char *q, const char *end,
		     const char **stop)
{
	*stop = end;
	while (q < end) {
		const char *amp = memchr(q, '&', (size_t)(end - q));
		const char *next = amp ? amp : end;
		const char *eq = memchr(q, '=', (size_t)(next - q));
		const char *v = eq ? eq + 1 : q;
		if (ch_buf_append(b, q, (size_t)(v - q), NULL) < 0)
			return -1;
		if (next > q && ch_buf_append(b, "***", 3, NULL) < 0)
			return -1;
		if (!amp && next - v > 3 && !strncmp(v, "***", 3) &&
		    strchr(":;,)", v[3])) {
			*stop = v + 3;
			return 0;
		}
		if (amp && ch_buf_append(b, "&", 1, NULL) < 0)
			return -1;
		q = amp ? amp + 1 : end;
	}
	return 0;
}

/* Appends the URL [host, end) (past its "://") with its user
 * information and its query values shown as ***; *stop: where the text
 * goes on as it is. */
static int put_url(struct ch_buf *b, const char *host, const char *end,
		   const char **stop)
{
	const char *at = ch_url_userinfo_end(host, end);
	const char *q = memchr(host, '?', (size_t)(end - host));
	*stop = end;
	if (*host == '/') /* file:///PATH: a path, no secret */
		return ch_buf_append(b, host, (size_t)(end - host), NULL);
	if (at && q && q < at) /* which '?' or '@' is the secret's? */
		return ch_buf_append(b, "***", 3, NULL);
	if (at) {
		const char *colon = memchr(host, ':', (size_t)(at - host));
		/* a user with a password shows the user; a lone one may
		 * be a token */
		size_t user = colon ? (size_t)(colon + 1 - host) : 0;
		if (ch_buf_append(b, host, user, NULL) < 0 ||
		    ch_buf_append(b, "***", 3, NULL) < 0)
			return -1;
		host = at;
	}
	if (!q)
		return ch_buf_append(b, host, (size_t)(end - host), NULL);
	return ch_buf_append(b, host, (size_t)(q + 1 - host), NULL) < 0
		       ? -1
		       : put_query(b, q + 1, end, stop);
}

char *ch_url_redact(const char *text)
{
	struct ch_buf b = {0};
	const char *p = text, *sep, *stop;
	while ((sep = strstr(p, "://"))) {
		/* file://: a path, with no user or query to hide */
		int file = sep - p >= 4 && !strncmp(sep - 4, "file", 4);
		if (ch_buf_append(&b, p, (size_t)(sep + 3 - p), NULL) < 0 ||
		    (!file && put_url(&b, sep + 3, url_end(text, sep),
				      &stop) < 0))
			goto oom;
		p = file ? sep + 3 : stop;
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
