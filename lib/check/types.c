/* check/types.c - does a field hold what its name says?  jpg/jpeg and png
 * are decoded whole (TurboJPEG, libpng's simplified API), cls is a class
 * number, json parses (jansson), npy has a header that matches its size. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <png.h>
#include <turbojpeg.h>

#include "check/internal.h"

/* Images larger than this many decoded bytes are refused rather than
 * decoded: a header that claims 100000x100000 is a problem in itself. */
#define MAX_PIXEL_BYTES ((size_t)1 << 30)

static int why_set(char *why, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int why_set(char *why, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
	return -1;
}

enum check_type check_type_of(const char *field)
{
	static const struct {
		const char *ext;
		enum check_type type;
	} types[] = {
		{ "cls", TYPE_CLS }, { "jpeg", TYPE_JPEG }, { "jpg", TYPE_JPEG },
		{ "json", TYPE_JSON }, { "npy", TYPE_NPY }, { "png", TYPE_PNG },
	};
	const char *dot = strrchr(field, '.');
	const char *ext = dot ? dot + 1 : field;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(ext, types[i].ext) == 0)
			return types[i].type;
	return TYPE_NONE;
}

void check_decoder_release(struct check_decoder *d)
{
	if (d->tj)
		tjDestroy(d->tj);
	free(d->pixels);
	memset(d, 0, sizeof(*d));
}

int check_decoder_room(struct check_decoder *d, size_t n)
{
	if (n <= d->cap)
		return 0;
	uint8_t *p = realloc(d->pixels, n);
	if (!p)
		return -1;
	d->pixels = p;
	d->cap = n;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Images                                                               */

int check_decoder_fresh_jpeg(struct check_decoder *d)
{
	if (d->tj)
		tjDestroy(d->tj);
	d->tj = tjInitDecompress();
	return d->tj ? 0 : -1;
}

static int jpeg_failed(struct check_decoder *d, char *why, size_t why_size,
		       const char *what)
{
	return why_set(why, why_size, "%s: %s", what, tjGetErrorStr2(d->tj));
}

static int check_jpeg(struct check_decoder *d, const uint8_t *data,
		      size_t size, char *why, size_t why_size)
{
	/* a stream that ends before its frame header (SOI and garbage, a
	 * tables-only stream) "succeeds" without setting the size: it is
	 * read as 0x0, never as whatever the stack held */
	int w = 0, h = 0, sub = 0, space = 0;
	if (check_decoder_fresh_jpeg(d) < 0)
		return why_set(why, why_size, "cannot start TurboJPEG");
	/* TurboJPEG takes a non-const buffer but does not write to it */
	unsigned char *in = (unsigned char *)(uintptr_t)data;
	if (tjDecompressHeader3(d->tj, in, size, &w, &h, &sub, &space) < 0)
		return jpeg_failed(d, why, why_size, "not a JPEG");
	if (w == 0 && h == 0)
		return why_set(why, why_size, "not a JPEG: no image before the "
			       "end of the data");
	if (w <= 0 || h <= 0)
		return why_set(why, why_size, "JPEG header gives a size of "
			       "%dx%d", w, h);
	size_t need = (size_t)w * (size_t)h * 3;
	if (need > MAX_PIXEL_BYTES)
		return why_set(why, why_size, "JPEG of %dx%d is too large to "
			       "decode", w, h);
	if (check_decoder_room(d, need ? need : 1) < 0)
		return why_set(why, why_size, "out of memory decoding a JPEG");
	/* a warning (a truncated file, bad Huffman data) fails too: the
	 * image decodes, but not as it was meant to */
	if (tjDecompress2(d->tj, in, size, d->pixels, w, 0, h, TJPF_RGB, 0) < 0)
		return jpeg_failed(d, why, why_size, "corrupt JPEG");
	return 0;
}

static int check_png(struct check_decoder *d, const uint8_t *data,
		     size_t size, char *why, size_t why_size)
{
	png_image img;
	int rc = -1;
	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&img, data, size)) {
		why_set(why, why_size, "not a PNG: %s", img.message);
		goto out;
	}
	img.format = PNG_FORMAT_RGBA;
	size_t need = PNG_IMAGE_SIZE(img);
	if (need > MAX_PIXEL_BYTES) {
		why_set(why, why_size, "PNG of %ux%u is too large to decode",
			img.width, img.height);
		goto out;
	}
	if (check_decoder_room(d, need ? need : 1) < 0) {
		why_set(why, why_size, "out of memory decoding a PNG");
		goto out;
	}
	if (!png_image_finish_read(&img, NULL, d->pixels, 0, NULL)) {
		why_set(why, why_size, "corrupt PNG: %s", img.message);
		goto out;
	}
	rc = 0;
out:
	png_image_free(&img);
	return rc;
}

/* ------------------------------------------------------------------ */
/* cls and json                                                         */

/* Bytes shown in a message on one line: trailing white space dropped,
 * anything but printable ASCII as '?', at most out_size - 1 of them. */
static const char *printable(const uint8_t *data, size_t size, char *out,
			     size_t out_size)
{
	while (size > 0 && (data[size - 1] == ' ' || data[size - 1] == '\n' ||
			    data[size - 1] == '\r' || data[size - 1] == '\t'))
		size--;
	if (size > out_size - 1)
		size = out_size - 1;
	for (size_t i = 0; i < size; i++)
		out[i] = data[i] >= 0x20 && data[i] < 0x7f ? (char)data[i] : '?';
	out[size] = '\0';
	return out;
}

static int not_integer(const uint8_t *data, size_t size, char *why,
		       size_t why_size)
{
	char shown[19];
	return why_set(why, why_size, "cls '%s' is not a decimal integer",
		       printable(data, size, shown, sizeof(shown)));
}

/* A decimal integer, digits only, as chute pack --label-from writes and
 * chute split and stream read. */
static int check_cls(const uint8_t *data, size_t size, uint64_t nclasses,
		     int64_t *cls, char *why, size_t why_size)
{
	uint64_t v = 0;
	*cls = -1;
	if (size == 0 || size > 18)
		return why_set(why, why_size, "cls of %zu %s is not a "
			       "class number", size,
			       ch_plural(size, "byte", "bytes"));
	for (size_t i = 0; i < size; i++) {
		if (data[i] < '0' || data[i] > '9')
			return not_integer(data, size, why, why_size);
		v = v * 10 + (uint64_t)(data[i] - '0');
	}
	if (nclasses && v >= nclasses)
		return why_set(why, why_size, "cls %llu is out of range: the "
			       "dataset has %llu %s",
			       (unsigned long long)v,
			       (unsigned long long)nclasses,
			       ch_plural(nclasses, "class", "classes"));
	*cls = (int64_t)v;
	return 0;
}

static int check_json(const uint8_t *data, size_t size, char *why,
		      size_t why_size)
{
	json_error_t e;
	json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY, &e);
	if (!v)
		return why_set(why, why_size, "invalid JSON: %s (line %d, "
			       "column %d)", e.text, e.line, e.column);
	json_decref(v);
	return 0;
}

/* ------------------------------------------------------------------ */
/* npy: "\x93NUMPY", version, header length, then a Python dict literal
 * {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }           */

struct npy {
	const char *p, *end;
	int64_t itemsize; /* -1: not known (structured, object) */
	uint64_t count;	  /* product of the shape */
	int have_descr, have_order, have_shape;
};

static void npy_space(struct npy *n)
{
	while (n->p < n->end && (*n->p == ' ' || *n->p == '\t' ||
				 *n->p == '\n' || *n->p == '\r'))
		n->p++;
}

static int npy_char(struct npy *n, char c)
{
	npy_space(n);
	if (n->p >= n->end || *n->p != c)
		return -1;
	n->p++;
	return 0;
}

/* A quoted string; its contents in [*s, *s + *len). */
static int npy_string(struct npy *n, const char **s, size_t *len)
{
	npy_space(n);
	if (n->p >= n->end || (*n->p != '\'' && *n->p != '"'))
		return -1;
	char q = *n->p++;
	*s = n->p;
	while (n->p < n->end && *n->p != q)
		n->p++;
	if (n->p >= n->end)
		return -1;
	*len = (size_t)(n->p - *s);
	n->p++;
	return 0;
}

/* '<f4', '|u1', '<U10', '<M8[ns]': the size of one element. */
static int npy_itemsize(const char *s, size_t len, int64_t *out)
{
	size_t i = 0;
	uint64_t v = 0;
	if (i < len && strchr("<>|=", s[i]))
		i++;
	if (i >= len || !strchr("biufcmMSUVO?", s[i]))
		return -1;
	char kind = s[i++];
	if (kind == 'O') {
		*out = -1; /* pickled objects: any size */
		return 0;
	}
	if (kind == '?' && i == len) {
		*out = 1;
		return 0;
	}
	if (i >= len || s[i] < '0' || s[i] > '9')
		return -1;
	for (; i < len && s[i] >= '0' && s[i] <= '9' && v < (1u << 30); i++)
		v = v * 10 + (uint64_t)(s[i] - '0');
	if (i < len && s[i] != '[')
		return -1;
	*out = (int64_t)(kind == 'U' ? v * 4 : v);
	return 0;
}

static int npy_descr(struct npy *n)
{
	const char *s;
	size_t len;
	npy_space(n);
	if (n->p < n->end && *n->p == '[') {
		/* a structured dtype: its layout is not checked */
		int depth = 0;
		for (; n->p < n->end; n->p++) {
			depth += *n->p == '[' ? 1 : *n->p == ']' ? -1 : 0;
			if (depth == 0)
				break;
		}
		if (n->p >= n->end)
			return -1;
		n->p++;
		n->itemsize = -1;
		return 0;
	}
	if (npy_string(n, &s, &len) < 0)
		return -1;
	return npy_itemsize(s, len, &n->itemsize);
}

static int npy_bool(struct npy *n)
{
	npy_space(n);
	size_t left = (size_t)(n->end - n->p);
	if (left >= 4 && memcmp(n->p, "True", 4) == 0)
		n->p += 4;
	else if (left >= 5 && memcmp(n->p, "False", 5) == 0)
		n->p += 5;
	else
		return -1;
	return 0;
}

/* (3, 4), (5,), (): the product of the dimensions. */
static int npy_shape(struct npy *n)
{
	n->count = 1;
	if (npy_char(n, '(') < 0)
		return -1;
	for (;;) {
		npy_space(n);
		if (n->p < n->end && *n->p == ')') {
			n->p++;
			return 0;
		}
		uint64_t v = 0;
		const char *start = n->p;
		while (n->p < n->end && *n->p >= '0' && *n->p <= '9') {
			if (v > UINT64_MAX / 10)
				return -1;
			v = v * 10 + (uint64_t)(*n->p++ - '0');
		}
		if (n->p == start)
			return -1;
		if (v && n->count > UINT64_MAX / v)
			return -1;
		n->count *= v;
		npy_space(n);
		if (n->p < n->end && *n->p == ',')
			n->p++;
	}
}

static int npy_entry(struct npy *n)
{
	const char *key;
	size_t len;
	if (npy_string(n, &key, &len) < 0 || npy_char(n, ':') < 0)
		return -1;
	if (len == 5 && memcmp(key, "descr", 5) == 0 && !n->have_descr++)
		return npy_descr(n);
	if (len == 13 && memcmp(key, "fortran_order", 13) == 0 &&
	    !n->have_order++)
		return npy_bool(n);
	if (len == 5 && memcmp(key, "shape", 5) == 0 && !n->have_shape++)
		return npy_shape(n);
	return -1;
}

static int npy_dict(struct npy *n)
{
	if (npy_char(n, '{') < 0)
		return -1;
	for (;;) {
		npy_space(n);
		if (n->p < n->end && *n->p == '}')
			break;
		if (npy_entry(n) < 0)
			return -1;
		npy_space(n);
		if (n->p < n->end && *n->p == ',')
			n->p++;
		else if (n->p >= n->end || *n->p != '}')
			return -1;
	}
	n->p++;
	npy_space(n);
	return n->p == n->end && n->have_descr && n->have_order &&
	       n->have_shape ? 0 : -1;
}

static int check_npy(const uint8_t *data, size_t size, char *why,
		     size_t why_size)
{
	if (size < 10 || memcmp(data, "\x93NUMPY", 6) != 0)
		return why_set(why, why_size, "not an npy file: no \\x93NUMPY "
			       "magic");
	int major = data[6];
	if (major < 1 || major > 3 || data[7] != 0)
		return why_set(why, why_size, "npy version %d.%d is not 1.0, "
			       "2.0 or 3.0", major, data[7]);
	size_t at = major == 1 ? 10 : 12;
	uint64_t hlen = data[8] | (uint64_t)data[9] << 8;
	if (major > 1 && size >= 12)
		hlen |= (uint64_t)data[10] << 16 | (uint64_t)data[11] << 24;
	if (size < at || hlen > size - at)
		return why_set(why, why_size, "npy header of %llu bytes runs "
			       "past the field's %zu", (unsigned long long)hlen,
			       size);
	struct npy n = { (const char *)data + at,
			 (const char *)data + at + hlen, 0, 1, 0, 0, 0 };
	char shown[121];
	if (npy_dict(&n) < 0)
		return why_set(why, why_size, "invalid npy header '%s'",
			       printable(data + at, hlen, shown, sizeof(shown)));
	uint64_t body = size - at - hlen, item = (uint64_t)n.itemsize;
	if (n.itemsize < 0)
		return 0; /* nothing to measure the data against */
	if (item && n.count > UINT64_MAX / item)
		return why_set(why, why_size, "npy shape is too large");
	if (n.count * item != body)
		return why_set(why, why_size, "npy shape and dtype make %llu "
			       "x %llu bytes, the data is %llu",
			       (unsigned long long)n.count,
			       (unsigned long long)item,
			       (unsigned long long)body);
	return 0;
}

int check_type_valid(struct check_decoder *d, enum check_type type,
		     const uint8_t *data, size_t size, uint64_t nclasses,
		     int64_t *cls, char *why, size_t why_size)
{
	switch (type) {
	case TYPE_JPEG: return check_jpeg(d, data, size, why, why_size);
	case TYPE_PNG: return check_png(d, data, size, why, why_size);
	case TYPE_CLS:
		return check_cls(data, size, nclasses, cls, why, why_size);
	case TYPE_JSON: return check_json(data, size, why, why_size);
	case TYPE_NPY: return check_npy(data, size, why, why_size);
	case TYPE_NONE: break;
	}
	return 0;
}
