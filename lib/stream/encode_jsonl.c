/* stream/encode_jsonl.c - one batch as JSON lines (chute stream --format
 * jsonl):
 *
 *   {"key":K,"epoch":E,"batch":B,"fields":{"name":size,...},"text":{...}}
 *
 * one object per sample, keys in that order, compact, fields in the
 * sample's (name) order.  "text" holds the fields a person can read: at
 * most 256 bytes of valid UTF-8 with no control character but tab and
 * newline, never a transformed field (its bytes are numbers).  Written
 * by hand rather than with jansson because keys and field names are file
 * names, which need not be UTF-8: a byte that is not part of a well-formed
 * UTF-8 sequence is written as the escape \uDCXX (XX its value), the lone
 * surrogate Python's "surrogateescape" decodes it to, so that the original
 * bytes can be recovered and never collide with a real character.  Same
 * batch, same bytes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "stream/encode.h"

#define TEXT_MAX 256

/* An output buffer that remembers its first failure, so that the many
 * small appends below are checked once, at the end. */
struct jw {
	struct ch_buf *out;
	struct ch_error *err;
	int failed;
};

static void put(struct jw *w, const void *p, size_t n)
{
	if (!w->failed && ch_buf_append(w->out, p, n, w->err) < 0)
		w->failed = 1;
}

static void puts_lit(struct jw *w, const char *s)
{
	put(w, s, strlen(s));
}

static void put_u64(struct jw *w, uint64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRIu64, v);
	put(w, num, (size_t)n);
}

/* Unicode category Cc: C0 controls, DEL and C1 controls. */
static int is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

/* 1 if the field is short, readable text that belongs in "text". */
static int is_text(const uint8_t *p, uint64_t size)
{
	uint32_t cp;

	if (size > TEXT_MAX)
		return 0;
	for (size_t i = 0; i < size;) {
		size_t n = ch_utf8_len(p + i, size - i, &cp);
		if (!n || (is_control(cp) && cp != '\t' && cp != '\n'))
			return 0;
		i += n;
	}
	return 1;
}

/* One byte that cannot go into a JSON string as is: a short escape where
 * JSON has one, \u00XX for other C0 controls, \uDCXX for a byte that is
 * not part of well-formed UTF-8. */
static void put_escape(struct jw *w, uint8_t c, int invalid)
{
	static const char hex[] = "0123456789abcdef";
	char esc[6] = { '\\', 'u', invalid ? 'd' : '0', invalid ? 'c' : '0',
			hex[c >> 4], hex[c & 15] };
	const char *two = NULL;

	if (!invalid) {
		switch (c) {
		case '"': two = "\\\""; break;
		case '\\': two = "\\\\"; break;
		case '\n': two = "\\n"; break;
		case '\t': two = "\\t"; break;
		case '\r': two = "\\r"; break;
		case '\b': two = "\\b"; break;
		case '\f': two = "\\f"; break;
		default: break;
		}
	}
	if (two)
		put(w, two, 2);
	else
		put(w, esc, sizeof(esc));
}

/* A JSON string: well-formed UTF-8 as is (DEL and C1 controls included:
 * JSON allows them raw), everything else through put_escape.  Runs of
 * plain bytes are copied at once. */
static void put_string(struct jw *w, const uint8_t *p, size_t len)
{
	size_t run = 0; /* plain bytes before p + i, not yet written */
	uint32_t cp;

	put(w, "\"", 1);
	for (size_t i = 0; i < len;) {
		size_t n = ch_utf8_len(p + i, len - i, &cp);
		if (n && cp >= 0x20 && cp != '"' && cp != '\\') {
			i += n;
			run += n;
			continue;
		}
		if (run)
			put(w, p + i - run, run);
		run = 0;
		put_escape(w, p[i], n == 0);
		i++;
	}
	if (run)
		put(w, p + len - run, run);
	put(w, "\"", 1);
}

static void put_cstring(struct jw *w, const char *s)
{
	put_string(w, (const uint8_t *)s, strlen(s));
}

static void put_sample(struct jw *w, const struct ch_batch *b,
		       const struct ch_batch_sample *s)
{
	int first = 1;

	puts_lit(w, "{\"key\":");
	put_string(w, (const uint8_t *)s->key, s->key_len);
	puts_lit(w, ",\"epoch\":");
	put_u64(w, b->epoch);
	puts_lit(w, ",\"batch\":");
	put_u64(w, b->batch);
	puts_lit(w, ",\"fields\":{");
	for (uint32_t f = 0; f < s->nfields; f++) {
		if (f)
			put(w, ",", 1);
		put_cstring(w, s->names[f]);
		put(w, ":", 1);
		put_u64(w, s->sizes[f]);
	}
	puts_lit(w, "},\"text\":{");
	for (uint32_t f = 0; f < s->nfields; f++) {
		if ((s->types && s->types[f].dtype) ||
		    !is_text(s->data[f], s->sizes[f]))
			continue; /* transformed: numbers, not text */
		if (!first)
			put(w, ",", 1);
		first = 0;
		put_cstring(w, s->names[f]);
		put(w, ":", 1);
		put_string(w, s->data[f], s->sizes[f]);
	}
	puts_lit(w, "}}\n");
}

int ch_encode_jsonl(const struct ch_batch *b, struct ch_buf *out,
		    struct ch_error *err)
{
	struct jw w = { out, err, 0 };

	out->len = 0;
	for (size_t i = 0; i < b->nsamples && !w.failed; i++)
		put_sample(&w, b, &b->samples[i]);
	return w.failed ? -1 : 0;
}
