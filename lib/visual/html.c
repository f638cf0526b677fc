/* visual/html.c - writing an HTML page into a buffer: markup, escaped
 * text and base64 for data: URIs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "visual/html.h"

static void add(struct html *h, const void *p, size_t n)
{
	if (!h->failed && ch_buf_append(&h->b, p, n, h->err) < 0)
		h->failed = 1;
}

void html_put(struct html *h, const char *fmt, ...)
{
	char *s;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		if (!h->failed)
			ch_error_nomem(h->err);
		h->failed = 1;
		return;
	}
	add(h, s, (size_t)n);
	free(s);
}

void html_text(struct html *h, const char *s, size_t len)
{
	const uint8_t *p = (const uint8_t *)s;
	uint32_t cp;
	for (size_t i = 0; i < len;) {
		size_t n = ch_utf8_len(p + i, len - i, &cp);
		if (n == 0 || cp < 0x20 || cp == 0x7f ||
		    (cp >= 0x80 && cp < 0xa0)) {
			html_put(h, "\\x%02x", p[i]);
			i++;
		} else if (cp == '<' || cp == '>' || cp == '&' || cp == '"') {
			html_put(h, "%s", cp == '<' ? "&lt;" : cp == '>' ? "&gt;" :
				 cp == '&' ? "&amp;" : "&quot;");
			i++;
		} else {
			add(h, p + i, n);
			i += n;
		}
	}
}

void html_str(struct html *h, const char *s)
{
	if (s)
		html_text(h, s, strlen(s));
}

void html_base64(struct html *h, const uint8_t *data, size_t size)
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "abcdefghijklmnopqrstuvwxyz0123456789+/";
	char quad[4];
	for (size_t i = 0; i < size; i += 3) {
		uint32_t v = (uint32_t)data[i] << 16;
		if (i + 1 < size)
			v |= (uint32_t)data[i + 1] << 8;
		if (i + 2 < size)
			v |= data[i + 2];
		quad[0] = abc[v >> 18 & 63];
		quad[1] = abc[v >> 12 & 63];
		quad[2] = i + 1 < size ? abc[v >> 6 & 63] : '=';
		quad[3] = i + 2 < size ? abc[v & 63] : '=';
		add(h, quad, 4);
	}
}
