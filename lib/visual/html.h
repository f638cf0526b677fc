/* visual/html.h - text into an HTML page being written (visual/html.c):
 * a buffer that remembers its first error, so that a page is written
 * call after call and checked once at the end. */
#ifndef CH_VISUAL_HTML_H
#define CH_VISUAL_HTML_H

#include "common/internal.h"

struct html {
	struct ch_buf b;
	struct ch_error *err;
	int failed;
};

/* Appends fmt's text as it is (markup). */
void html_put(struct html *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Appends s[0..len) as text: <, >, &, " escaped; a byte that is not
 * UTF-8, or a control byte, as \xNN. */
void html_text(struct html *h, const char *s, size_t len);
void html_str(struct html *h, const char *s); /* NULL: nothing */
/* Appends data in base64 (RFC 4648, padded). */
void html_base64(struct html *h, const uint8_t *data, size_t size);

#endif
