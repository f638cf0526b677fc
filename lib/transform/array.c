/* transform/array.c - labels and arrays: int, npy, bytes, random-crop,
 * pad and the dtype conversions. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "transform/transform.h"
#include "transform/testing.h"

size_t ch_dtype_size(uint32_t dtype)
{
	static const size_t size[] = { 1, 1, 8, 2, 4 };
	return dtype < 5 ? size[dtype] : 0;
}

static uint64_t count_of(const struct ch_field_type *t)
{
	uint64_t n = 1;
	for (uint32_t d = 0; d < t->ndim; d++)
		n *= t->shape[d];
	return n;
}

static int int_value(long long v, struct ch_buf *out,
		     struct ch_field_type *t, struct ch_error *err)
{
	int64_t le = (int64_t)v; /* little-endian hosts only (see Makefile) */
	*t = (struct ch_field_type){ .dtype = CH_DTYPE_I64, .ndim = 0 };
	return ch_buf_append(out, &le, 8, err);
}

/* isspace in the C locale, without a call a byte */
static int blank(uint8_t c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Up to 18 digits after an optional sign, the usual label: its value in
 * *v without strtoll's copy and locale (18 digits cannot overflow). */
static int plain_int(const uint8_t *p, size_t n, long long *v)
{
	int neg = n && p[0] == '-';
	size_t i = n && (p[0] == '-' || p[0] == '+');
	if (i == n || n - i > 18)
		return 0;
	long long x = 0;
	for (; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return 0;
		x = x * 10 + (p[i] - '0');
	}
	*v = neg ? -x : x;
	return 1;
}

int ch_array_int(const uint8_t *in, size_t size, struct ch_buf *out,
		 struct ch_field_type *t, struct ch_error *err)
{
	out->len = 0;
	return ch_array_int_append(in, size, out, t, err);
}

int ch_array_int_append(const uint8_t *in, size_t size, struct ch_buf *out,
			struct ch_field_type *t, struct ch_error *err)
{
	char text[32];
	size_t a = 0, b = size;
	long long v;
	while (a < b && blank(in[a]))
		a++;
	while (b > a && blank(in[b - 1]))
		b--;
	if (a == b || b - a >= sizeof(text))
		return ch_error_set(err, "not an integer label (%zu bytes)",
				    size);
	if (plain_int(in + a, b - a, &v))
		return int_value(v, out, t, err);
	memcpy(text, in + a, b - a);
	text[b - a] = 0;
	char *end;
	errno = 0;
	v = strtoll(text, &end, 10);
	if (*end || errno || !(isdigit((unsigned char)text[0]) ||
			       ((text[0] == '-' || text[0] == '+') &&
				isdigit((unsigned char)text[1]))))
		return ch_error_set(err, "not an integer label: '%.24s'", text);
	return int_value(v, out, t, err);
}

/* ------------------------------------------------------------------ */
/* .npy (format versions 1 to 3): the header is a Python dict literal   */

struct npy_descr {
	const char *descr;
	uint32_t dtype;	 /* what it becomes */
	size_t size;	 /* bytes of one item in the file */
	int kind;	 /* 'u', 'i', 'f': how to convert */
};

static const struct npy_descr npy_types[] = {
	{ "|u1", CH_DTYPE_U8, 1, 'u' }, { "<u1", CH_DTYPE_U8, 1, 'u' },
	{ "|b1", CH_DTYPE_U8, 1, 'u' }, { "|i1", CH_DTYPE_I64, 1, 'i' },
	{ "<i2", CH_DTYPE_I64, 2, 'i' }, { "<u2", CH_DTYPE_I64, 2, 'u' },
	{ "<i4", CH_DTYPE_I64, 4, 'i' }, { "<u4", CH_DTYPE_I64, 4, 'u' },
	{ "<i8", CH_DTYPE_I64, 8, 'i' }, { "<f2", CH_DTYPE_F16, 2, 'f' },
	{ "<f4", CH_DTYPE_F32, 4, 'f' }, { "<f8", CH_DTYPE_F32, 8, 'f' },
};

/* The value of 'key' in the header dict, as a pointer to its text. */
static const char *dict_value(const char *h, const char *key)
{
	const char *p = strstr(h, key);
	if (!p)
		return NULL;
	p += strlen(key);
	while (*p == ' ')
		p++;
	if (*p != ':')
		return NULL;
	p++;
	while (*p == ' ')
		p++;
	return p;
}

static int npy_shape(const char *p, struct ch_field_type *t)
{
	if (!p || *p != '(')
		return -1;
	p++;
	t->ndim = 0;
	for (;;) {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == ')')
			return 0;
		char *end;
		unsigned long long v = strtoull(p, &end, 10);
		if (end == p || t->ndim == 4)
			return -1;
		t->shape[t->ndim++] = v;
		p = end;
		if (*p == 'L')
			p++;
	}
}

static const struct npy_descr *npy_descr(const char *p)
{
	if (!p || (*p != '\'' && *p != '"'))
		return NULL;
	for (size_t i = 0; i < sizeof(npy_types) / sizeof(*npy_types); i++) {
		size_t n = strlen(npy_types[i].descr);
		if (!strncmp(p + 1, npy_types[i].descr, n) && p[1 + n] == p[0])
			return &npy_types[i];
		/* a bare "u1" is numpy's spelling too */
		if (npy_types[i].descr[0] == '|' &&
		    !strncmp(p + 1, npy_types[i].descr + 1, n - 1) &&
		    p[n] == p[0])
			return &npy_types[i];
	}
	return NULL;
}

/* One item of the file, little-endian, to the output type. */
static void npy_item(const struct npy_descr *d, const uint8_t *src,
		     uint8_t *dst)
{
	if (d->size == ch_dtype_size(d->dtype)) {
		memcpy(dst, src, d->size);
		return;
	}
	if (d->kind == 'f') { /* f8 -> f32 */
		double v;
		memcpy(&v, src, 8);
		float f = (float)v;
		memcpy(dst, &f, 4);
		return;
	}
	uint64_t u = 0;
	memcpy(&u, src, d->size);
	int64_t v = (int64_t)u;
	if (d->kind == 'i' && d->size < 8 && (u >> (d->size * 8 - 1)) & 1)
		v = (int64_t)(u | (~0ull << (d->size * 8))); /* sign */
	memcpy(dst, &v, 8);
}

static int npy_header(const uint8_t *in, size_t size, char *h, size_t hsize,
		      size_t *data_at, struct ch_error *err)
{
	if (size < 10 || memcmp(in, "\x93NUMPY", 6))
		return ch_error_set(err, "not a .npy file");
	size_t len, at;
	if (in[6] == 1) {
		len = in[8] | (size_t)in[9] << 8;
		at = 10;
	} else if ((in[6] == 2 || in[6] == 3) && size >= 12) {
		len = in[8] | (size_t)in[9] << 8 | (size_t)in[10] << 16 |
		      (size_t)in[11] << 24;
		at = 12;
	} else {
		return ch_error_set(err, ".npy format version %u not known",
				    in[6]);
	}
	if (len > size - at || len >= hsize)
		return ch_error_set(err, ".npy header past the end or too long");
	memcpy(h, in + at, len);
	h[len] = 0;
	*data_at = at + len;
	return 0;
}

int ch_array_npy(const struct ch_op *op, const uint8_t *in, size_t size,
		 struct ch_buf *out, struct ch_field_type *t,
		 struct ch_error *err)
{
	char h[4096];
	size_t at = 0;
	if (npy_header(in, size, h, sizeof(h), &at, err) < 0)
		return -1;
	const struct npy_descr *d = npy_descr(dict_value(h, "'descr'"));
	const char *fo = dict_value(h, "'fortran_order'");
	memset(t, 0, sizeof(*t));
	if (!d)
		return ch_error_set(err, ".npy dtype not supported (%.40s): "
				    "u1, b1, i1-i8, u2, u4, f2, f4, f8, "
				    "little-endian", h);
	if (!fo || strncmp(fo, "False", 5))
		return ch_error_set(err, ".npy in Fortran order");
	if (npy_shape(dict_value(h, "'shape'"), t) < 0)
		return ch_error_set(err, ".npy shape not understood or more "
				    "than 4 dimensions");
	t->dtype = d->dtype;
	uint64_t n = count_of(t);
	if (n > (size - at) / d->size || n * d->size != size - at)
		return ch_error_set(err, ".npy holds %zu bytes of data for "
				    "%llu items of %zu bytes", size - at,
				    (unsigned long long)n, d->size);
	if (op->want.ndim) {
		int same = op->want.ndim == t->ndim;
		for (uint32_t i = 0; same && i < t->ndim; i++)
			same = op->want.shape[i] == t->shape[i];
		if (!same)
			return ch_error_set(err, "shape %llux... (%u dims) is "
					    "not the declared one",
					    (unsigned long long)
						    (t->ndim ? t->shape[0] : 0),
					    t->ndim);
	}
	size_t item = ch_dtype_size(t->dtype);
	out->len = 0;
	if (ch_buf_reserve(out, n * item, err) < 0)
		return -1;
	for (uint64_t i = 0; i < n; i++)
		npy_item(d, in + at + i * d->size, out->data + i * item);
	out->len = n * item;
	return 0;
}

/* ------------------------------------------------------------------ */
/* bytes: a raw field of known size                                     */

/* "u8 28x28", as the spec said it. */
static void type_text(const struct ch_field_type *t, char *s, size_t n)
{
	int k = snprintf(s, n, "%s", ch_dtype_name(t->dtype));
	for (uint32_t d = 0; d < t->ndim && k > 0 && (size_t)k < n; d++)
		k += snprintf(s + k, n - (size_t)k, "%c%llu", d ? 'x' : ' ',
			      (unsigned long long)t->shape[d]);
}

int ch_array_bytes(const struct ch_op *op, size_t size,
		   struct ch_field_type *t, struct ch_error *err)
{
	size_t item = ch_dtype_size(op->dtype);
	*t = op->want;
	t->dtype = op->dtype;
	if (!t->ndim) {
		if (size % item)
			return ch_error_set(err, "has %zu bytes; %s needs a "
					    "multiple of %zu", size,
					    ch_dtype_name(t->dtype), item);
		t->ndim = 1;
		t->shape[0] = size / item;
		return 0;
	}
	uint64_t need = count_of(t) * item; /* the parser saw it fits */
	if (size != need) {
		char what[128];
		type_text(t, what, sizeof(what));
		return ch_error_set(err, "has %zu bytes; %s needs %llu", size,
				    what, (unsigned long long)need);
	}
	return 0;
}

/* What a value is, for messages: "a scalar (i64)", "a 1-D array of 784
 * u8" ("a 1-D u8 array" when shape[0] is 0: not known), "a 28x28 u8
 * array", "a 2x2x2x2 (4-D) f32 array"; no dtype when it is 0 (not
 * known). */
void ch_value_text(const struct ch_field_type *t, char *s, size_t n)
{
	char dt[8] = "";
	if (t->dtype)
		snprintf(dt, sizeof(dt), " %s", ch_dtype_name(t->dtype));
	unsigned long long x[4];
	for (uint32_t i = 0; i < 4; i++)
		x[i] = (unsigned long long)t->shape[i];
	if (t->ndim == 0)
		snprintf(s, n, "a scalar%s%s%s", *dt ? " (" : "",
			 *dt ? dt + 1 : "", *dt ? ")" : "");
	else if (t->ndim == 1 && x[0])
		snprintf(s, n, "a 1-D array of %llu%s", x[0], dt);
	else if (t->ndim == 1)
		snprintf(s, n, "a 1-D%s array", dt);
	else if (t->ndim == 2)
		snprintf(s, n, "a %llux%llu%s array", x[0], x[1], dt);
	else if (t->ndim == 3)
		snprintf(s, n, "a %llux%llux%llu%s array", x[0], x[1], x[2],
			 dt);
	else
		snprintf(s, n, "a %llux%llux%llux%llu (4-D)%s array", x[0],
			 x[1], x[2], x[3], dt);
}

/* ------------------------------------------------------------------ */
/* 1-D arrays                                                           */

int ch_array_window(const struct ch_buf *in, struct ch_field_type *t,
		    uint64_t start, uint64_t n, struct ch_buf *out,
		    struct ch_error *err)
{
	if (t->ndim != 1)
		return ch_error_set(err, "needs a 1-D array, not %u-D", t->ndim);
	if (t->shape[0] < n)
		return ch_error_set(err, "array of %llu items is shorter than "
				    "%llu (pad first)",
				    (unsigned long long)t->shape[0],
				    (unsigned long long)n);
	size_t item = ch_dtype_size(t->dtype);
	out->len = 0;
	if (ch_buf_append(out, in->data + start * item, n * item, err) < 0)
		return -1;
	t->shape[0] = n;
	return 0;
}

void ch_store_value(uint32_t dtype, double v, uint8_t *dst)
{
	switch (dtype) {
	case CH_DTYPE_U8: {
		double c = v < 0 ? 0 : v > 255 ? 255 : v;
		*dst = (uint8_t)c;
		break;
	}
	case CH_DTYPE_I64: {
		int64_t i = (int64_t)v;
		memcpy(dst, &i, 8);
		break;
	}
	case CH_DTYPE_F16: {
		uint16_t h = ch_f32_to_f16((float)v);
		memcpy(dst, &h, 2);
		break;
	}
	default: {
		float f = (float)v;
		memcpy(dst, &f, 4);
	}
	}
}

int ch_array_pad(const struct ch_buf *in, struct ch_field_type *t,
		 uint64_t n, double value, struct ch_buf *out,
		 struct ch_error *err)
{
	if (t->ndim != 1)
		return ch_error_set(err, "needs a 1-D array, not %u-D", t->ndim);
	if (t->shape[0] > n)
		return ch_error_set(err, "array of %llu items is longer than "
				    "%llu (random-crop first)",
				    (unsigned long long)t->shape[0],
				    (unsigned long long)n);
	size_t item = ch_dtype_size(t->dtype), have = (size_t)t->shape[0];
	out->len = 0;
	if (ch_buf_reserve(out, n * item, err) < 0)
		return -1;
	if (have) /* an empty array may have no buffer at all */
		memcpy(out->data, in->data, have * item);
	for (size_t i = have; i < n; i++)
		ch_store_value(t->dtype, value, out->data + i * item);
	out->len = n * item;
	t->shape[0] = n;
	return 0;
}

/* ------------------------------------------------------------------ */
/* dtype                                                                */

/* IEEE binary32 to binary16, rounding to nearest even (as numpy). */
uint16_t ch_f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000, e = (x >> 23) & 0xff;
	uint32_t m = x & 0x7fffff;
	if (e == 0xff) /* inf, nan (kept quiet) */
		return (uint16_t)(sign | 0x7c00 | (m ? 0x200 | (m >> 13) : 0));
	int32_t he = (int32_t)e - 127 + 15;
	if (he >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (he <= 0) { /* subnormal or zero */
		if (he < -10)
			return (uint16_t)sign;
		m |= 0x800000;
		uint32_t shift = (uint32_t)(14 - he);
		uint32_t h = m >> shift, rest = m & ((1u << shift) - 1);
		uint32_t half = 1u << (shift - 1);
		if (rest > half || (rest == half && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t h = (uint32_t)he << 10 | m >> 13, rest = m & 0x1fff;
	if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
		h++; /* may carry into the exponent: still right */
	return (uint16_t)(sign | h);
}

const char *ch_dtype_name(uint32_t dtype)
{
	static const char *const names[] = { "bytes", "u8", "i64", "f16",
					     "f32" };
	return dtype < 5 ? names[dtype] : "?";
}

static double load(uint32_t dtype, const uint8_t *p)
{
	switch (dtype) {
	case CH_DTYPE_U8:
		return *p;
	case CH_DTYPE_I64: {
		int64_t v;
		memcpy(&v, p, 8);
		return (double)v;
	}
	default: {
		float v;
		memcpy(&v, p, 4);
		return v;
	}
	}
}

int ch_value_convert(const struct ch_buf *in, struct ch_field_type *t,
		     uint32_t dtype, struct ch_buf *out, struct ch_error *err)
{
	if (t->dtype == dtype)
		return ch_buf_append((out->len = 0, out), in->data, in->len,
				     err);
	if (dtype == CH_DTYPE_U8 || t->dtype == CH_DTYPE_F16)
		return ch_error_set(err, "cannot convert %s to %s",
				    t->dtype == CH_DTYPE_F16 ? "f16" : "floats",
				    dtype == CH_DTYPE_U8 ? "u8" : "f32");
	size_t n = (size_t)count_of(t), item = ch_dtype_size(t->dtype);
	size_t to = ch_dtype_size(dtype);
	/* u8 pixels become [0, 1], as ToTensor and ConvertImageDtype do */
	float lut[256];
	for (int v = 0; v < 256; v++)
		lut[v] = (float)v / 255.0f;
	out->len = 0;
	if (ch_buf_reserve(out, n * to, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *src = in->data + i * item;
		float v = t->dtype == CH_DTYPE_U8 ? lut[*src]
						  : (float)load(t->dtype, src);
		if (dtype == CH_DTYPE_F16) {
			uint16_t h = ch_f32_to_f16(v);
			memcpy(out->data + i * 2, &h, 2);
		} else {
			memcpy(out->data + i * 4, &v, 4);
		}
	}
	out->len = n * to;
	t->dtype = dtype;
	return 0;
}
