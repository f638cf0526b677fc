/* image_resample.c - antialiased bilinear resampling of 8-bit images, with
 * the semantics of Pillow's Image.resize(size, BILINEAR, box).
 *
 * Separable: a horizontal pass over only the source rows the vertical
 * pass will read, into 8-bit rows (rounded there, as Pillow does), then a
 * vertical pass.  Weights are computed in double precision exactly as
 * Pillow computes them and rounded to 22-bit fixed point, so the output is
 * the same bytes as Pillow's for the same box, on every machine and at
 * every thread count.  (That needs a * b + c rounded twice, as the
 * Makefile's build does: GCC in ISO C mode never fuses it into an FMA.
 * For a target with FMA, clang or GCC's GNU C mode would fuse some, and
 * move a byte by 1 now and then.) */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"

/* Fractional bits of the weights: 8 bits of pixel and 2 of headroom left
 * in an int32 (Pillow's choice; the sums below cannot overflow). */
#define PREC 22
#define HALF (1 << (PREC - 1))

/* The vertical pass splits each weight k into k >> 11 and k & 2047: 16-bit
 * factors, whose products with a pixel SSE2 computes 8 at a time (a full
 * 32-bit multiply it lacks), summed apart and joined at the end, which
 * gives exactly the sum of pixel * k.  The low sums stay below 2^31 up to
 * 4096 taps; beyond (shrinking 2000-fold) a plain loop takes over. */
#define SPLIT 11
#define SPLIT_TAPS_MAX 4096

/* Bytes per step of the vertical pass: its sums stay in registers and the
 * constant trip count lets -O2 vectorise it. */
#define VCHUNK 16

/* A buffer that only grows (its contents are not kept when it does). */
struct buf {
	void *p;
	size_t cap;
};

/* The taps of one axis, in one allocation.  Every output pixel reads the
 * same number of source pixels, n (zero weights pad the windows that need
 * fewer): tap loops of one trip count, which unroll and never mispredict.
 * Output i reads from first[i] on with weights k[i * ksize ...]. */
struct axis {
	struct buf mem;
	int32_t *first, *count, *k;
	uint32_t ksize, size;
	int32_t n;
};

struct ch_resampler {
	struct axis h, v;
	struct buf w;	/* one pixel's weights before rounding */
	struct buf tmp; /* the rows of the horizontal pass */
};

struct ch_resampler *ch_resampler_new(void)
{
	return calloc(1, sizeof(struct ch_resampler));
}

void ch_resampler_free(struct ch_resampler *r)
{
	if (!r)
		return;
	free(r->h.mem.p);
	free(r->v.mem.p);
	free(r->w.p);
	free(r->tmp.p);
	free(r);
}

static int reserve(struct buf *b, size_t n)
{
	void *q;

	if (n <= b->cap)
		return 0;
	q = malloc(n);
	if (!q)
		return -1;
	free(b->p);
	b->p = q;
	b->cap = n;
	return 0;
}

static double triangle(double x)
{
	if (x < 0.0)
		x = -x;
	return x < 1.0 ? 1.0 - x : 0.0;
}

/* The weights of the output pixel centred at `center`, normalised to sum
 * 1: Pillow's operations in Pillow's order, so the same doubles.  Returns
 * how many, from source pixel *first on. */
static int32_t weigh(double center, double support, double filterscale,
		     uint32_t size, double *w, int32_t *first)
{
	double ss = 1.0 / filterscale, sum = 0.0;
	int32_t lo = (int32_t)(center - support + 0.5);
	int32_t hi = (int32_t)(center + support + 0.5);
	int32_t n;

	if (lo < 0)
		lo = 0;
	if (hi > (int32_t)size)
		hi = (int32_t)size;
	n = hi > lo ? hi - lo : 0;
	for (int32_t i = 0; i < n; i++) {
		w[i] = triangle((i + lo - center + 0.5) * ss);
		sum += w[i];
	}
	if (sum != 0.0)
		for (int32_t i = 0; i < n; i++)
			w[i] /= sum;
	*first = lo;
	return n;
}

/* Rounds one pixel's weights to fixed point into its slot, dropping the
 * zero taps at either end (Pillow keeps them; adding 0 changes nothing,
 * and bilinear weights are never negative). */
static void store(struct axis *a, uint32_t slot, const double *w, int32_t n,
		  int32_t first)
{
	int32_t *k = a->k + (size_t)slot * a->ksize;
	int32_t lo = 0, m = 0;

	for (int32_t i = 0; i < n; i++)
		k[i] = (int32_t)(0.5 + w[i] * (1 << PREC));
	while (lo < n && k[lo] == 0)
		lo++;
	while (n > lo && k[n - 1] == 0)
		n--;
	for (int32_t i = lo; i < n; i++)
		k[m++] = k[i];
	a->first[slot] = first + lo;
	a->count[slot] = m;
}

/* Widens every window to the longest, a->n taps, keeping it inside the
 * axis: a window at the far edge starts earlier, its weights move right
 * in the slot (ksize >= n has room) and zeros fill the rest. */
static void pad(struct axis *a, uint32_t out)
{
	a->n = 0;
	for (uint32_t i = 0; i < out; i++)
		a->n = a->count[i] > a->n ? a->count[i] : a->n;
	for (uint32_t i = 0; i < out; i++) {
		int32_t *k = a->k + (size_t)i * a->ksize;
		int32_t start = a->first[i], shift = 0;

		if (start + a->n > (int32_t)a->size) {
			start = (int32_t)a->size - a->n;
			shift = a->first[i] - start;
			memmove(k + shift, k, a->count[i] * sizeof(int32_t));
		}
		memset(k, 0, shift * sizeof(int32_t));
		memset(k + shift + a->count[i], 0,
		       (a->n - shift - a->count[i]) * sizeof(int32_t));
		a->first[i] = start;
		a->count[i] = a->n;
	}
}

/* Plans the taps that map [f0, f1) of a `size`-pixel axis onto `out`
 * pixels; with mirror, output i goes to slot out - 1 - i, which is how
 * flipping costs nothing.  The edges come as floats because Pillow takes
 * the box as C floats: rounding them the same way keeps the bytes equal
 * to Pillow's. */
static int plan(struct ch_resampler *r, struct axis *a, uint32_t size,
		float f0, float f1, uint32_t out, int mirror)
{
	double scale = (double)(f1 - f0) / out;
	double filterscale = scale < 1.0 ? 1.0 : scale;
	double support = filterscale; /* the triangle reaches 1 */
	uint32_t ksize = (uint32_t)ceil(support) * 2 + 1;

	if (reserve(&r->w, ksize * sizeof(double)) < 0 ||
	    reserve(&a->mem, (size_t)out * (ksize + 2) * sizeof(int32_t)) < 0)
		return -1;
	a->ksize = ksize;
	a->size = size;
	a->first = a->mem.p;
	a->count = a->first + out;
	a->k = a->first + 2 * (size_t)out;
	for (uint32_t i = 0; i < out; i++) {
		int32_t first, n;
		double center = f0 + (i + 0.5) * scale;

		n = weigh(center, support, filterscale, size, r->w.p, &first);
		store(a, mirror ? out - 1 - i : i, r->w.p, n, first);
	}
	pad(a, out);
	return 0;
}

/* A sum of n taps (HALF included) as a byte.  The weights are never
 * negative and, each rounded by at most 1/2, sum to at most 2^22 + n/2:
 * with pixels up to 255 the sum stays below 256 << PREC while n is below
 * 16448, and needs no clamping.  Wider windows clamp. */
#define EXACT_TAPS_MAX 16384

static inline uint8_t to8(int32_t v, int32_t n)
{
	v >>= PREC;
	if (n > EXACT_TAPS_MAX && v > 255)
		v = 255;
	return (uint8_t)v;
}

/* One row, horizontally; the tap count is an argument that the callers
 * below make a constant, so that the tap loop unrolls. */
static inline void hrow1(const uint8_t *restrict s, uint8_t *restrict d,
			 const struct axis *a, uint32_t out, int32_t n)
{
	for (uint32_t x = 0; x < out; x++) {
		const uint8_t *p = s + a->first[x];
		const int32_t *k = a->k + (size_t)x * a->ksize;
		int32_t v = HALF;

#pragma GCC unroll 8
		for (int32_t t = 0; t < n; t++)
			v += p[t] * k[t];
		d[x] = to8(v, n);
	}
}

static inline void hrow3(const uint8_t *restrict s, uint8_t *restrict d,
			 const struct axis *a, uint32_t out, int32_t n)
{
	for (uint32_t x = 0; x < out; x++) {
		const uint8_t *p = s + (size_t)a->first[x] * 3;
		const int32_t *k = a->k + (size_t)x * a->ksize;
		int32_t r = HALF, g = HALF, b = HALF;

#pragma GCC unroll 8
		for (int32_t t = 0; t < n; t++) {
			r += p[3 * t] * k[t];
			g += p[3 * t + 1] * k[t];
			b += p[3 * t + 2] * k[t];
		}
		d[3 * x] = to8(r, n);
		d[3 * x + 1] = to8(g, n);
		d[3 * x + 2] = to8(b, n);
	}
}

/* The common windows (2 to 6 taps: from enlarging to shrinking 3-fold)
 * get their own unrolled copies. */
static void hrow(const uint8_t *s, uint8_t *d, const struct axis *a,
		 uint32_t out, uint32_t c)
{
	if (c == 1) {
		switch (a->n) {
		case 2: hrow1(s, d, a, out, 2); return;
		case 3: hrow1(s, d, a, out, 3); return;
		case 4: hrow1(s, d, a, out, 4); return;
		case 5: hrow1(s, d, a, out, 5); return;
		case 6: hrow1(s, d, a, out, 6); return;
		}
		hrow1(s, d, a, out, a->n);
		return;
	}
	switch (a->n) {
	case 2: hrow3(s, d, a, out, 2); return;
	case 3: hrow3(s, d, a, out, 3); return;
	case 4: hrow3(s, d, a, out, 4); return;
	case 5: hrow3(s, d, a, out, 5); return;
	case 6: hrow3(s, d, a, out, 6); return;
	}
	hrow3(s, d, a, out, a->n);
}

/* Rows [y0, y1) of src, resampled horizontally, into rows of d. */
static void hpass(const struct ch_image *src, uint32_t y0, uint32_t y1,
		  const struct axis *a, uint32_t out, uint8_t *d,
		  size_t dstride)
{
	for (uint32_t y = y0; y < y1; y++) {
		const uint8_t *s = src->px + (size_t)y * src->stride;
		uint8_t *row = d + (size_t)(y - y0) * dstride;

		hrow(s, row, a, out, src->c);
	}
}

/* m bytes (at most VCHUNK) of one output row: the weighted sum of n rows
 * from s on, stride apart, with the weights split (see SPLIT). */
static inline __attribute__((always_inline)) void
vchunk(const uint8_t *s, size_t stride, const int32_t *k, int32_t n,
       uint8_t *restrict d, size_t m)
{
	int32_t hi[VCHUNK], lo[VCHUNK];

	for (size_t j = 0; j < m; j++) {
		hi[j] = 0;
		lo[j] = HALF;
	}
#pragma GCC unroll 8
	for (int32_t t = 0; t < n; t++) {
		const uint8_t *restrict row = s + (size_t)t * stride;
		int16_t kh = (int16_t)(k[t] >> SPLIT);
		int16_t kl = (int16_t)(k[t] & ((1 << SPLIT) - 1));

		for (size_t j = 0; j < m; j++) {
			int16_t p = row[j];

			hi[j] += p * kh;
			lo[j] += p * kl;
		}
	}
	for (size_t j = 0; j < m; j++) {
		uint32_t v = ((uint32_t)hi[j] << SPLIT) + (uint32_t)lo[j];

		d[j] = (uint8_t)(v >> PREC);
	}
}

/* The same sum with 32-bit products, for windows of over SPLIT_TAPS_MAX
 * taps, where the split sums could overflow. */
static void vwide(const uint8_t *s, size_t stride, const int32_t *k,
		  int32_t n, uint8_t *restrict d, size_t m)
{
	for (size_t j = 0; j < m; j++) {
		int32_t v = HALF;

		for (int32_t t = 0; t < n; t++)
			v += s[(size_t)t * stride + j] * k[t];
		d[j] = to8(v, n);
	}
}

/* One output row of m bytes; n is a constant in the callers below, so
 * that the tap loop unrolls and its weights stay in registers. */
static inline __attribute__((always_inline)) void
vrow(const uint8_t *top, size_t stride, const int32_t *k, int32_t n,
     uint8_t *restrict d, size_t m)
{
	size_t j = 0;

	for (; j + VCHUNK <= m; j += VCHUNK)
		vchunk(top + j, stride, k, n, d + j, VCHUNK);
	if (j < m)
		vchunk(top + j, stride, k, n, d + j, m - j);
}

/* The vertical pass over m bytes a row: row i of s is source row
 * `base + i`. */
static void vpass(const uint8_t *s, size_t stride, uint32_t base,
		  const struct axis *a, const struct ch_image *dst, size_t m)
{
	for (uint32_t y = 0; y < dst->h; y++) {
		const uint8_t *top = s + (size_t)(a->first[y] - base) * stride;
		const int32_t *k = a->k + (size_t)y * a->ksize;
		uint8_t *d = dst->px + (size_t)y * dst->stride;

		switch (a->n) {
		case 2: vrow(top, stride, k, 2, d, m); continue;
		case 3: vrow(top, stride, k, 3, d, m); continue;
		case 4: vrow(top, stride, k, 4, d, m); continue;
		case 5: vrow(top, stride, k, 5, d, m); continue;
		case 6: vrow(top, stride, k, 6, d, m); continue;
		}
		if (a->n > SPLIT_TAPS_MAX)
			vwide(top, stride, k, a->n, d, m);
		else
			vrow(top, stride, k, a->n, d, m);
	}
}

/* The source rows the vertical taps read: [*y0, *y1). */
static void rows_read(const struct axis *a, uint32_t out, uint32_t *y0,
		      uint32_t *y1)
{
	int32_t lo = INT32_MAX, hi = 0;

	for (uint32_t i = 0; i < out; i++) {
		if (a->count[i] == 0)
			continue;
		if (a->first[i] < lo)
			lo = a->first[i];
		if (a->first[i] + a->count[i] > hi)
			hi = a->first[i] + a->count[i];
	}
	*y0 = lo < hi ? (uint32_t)lo : 0;
	*y1 = lo < hi ? (uint32_t)hi : 0;
}

/* An axis that maps pixels one to one: each output pixel is a source
 * pixel (Pillow's weights come out 1 and 0 there too). */
static int identity(float f0, float f1, uint32_t out)
{
	return f0 == floorf(f0) && f1 - f0 == (float)out;
}

/* Rows [y0, y0 + dst->h) of src from column x0, copied. */
static void copy_rows(const struct ch_image *src, uint32_t x0, uint32_t y0,
		      const struct ch_image *dst)
{
	size_t n = (size_t)dst->w * dst->c;

	for (uint32_t y = 0; y < dst->h; y++)
		memcpy(dst->px + (size_t)y * dst->stride,
		       src->px + (size_t)(y0 + y) * src->stride +
			       (size_t)x0 * src->c,
		       n);
}

static int check_image(const struct ch_image *im, const char *which,
		       struct ch_error *err)
{
	if (!im->px || im->w == 0 || im->h == 0 || im->w > 65535 ||
	    im->h > 65535 || (im->c != 1 && im->c != 3) ||
	    im->stride < (size_t)im->w * im->c)
		return ch_error_set(err,
				    "cannot resample: bad %s image (%ux%u, %u "
				    "channels, stride %zu): sizes go from 1 to "
				    "65535, channels are 1 or 3",
				    which, im->w, im->h, im->c, im->stride);
	return 0;
}

/* Pillow's checks on the box, on the float edges actually used (a box
 * that ends at src's edge to within float rounding is inside). */
static int check_box(const struct ch_image *src, const float *f,
		     double bw, double bh, struct ch_error *err)
{
	if (!(bw > 0 && bh > 0 && f[0] >= 0 && f[1] >= 0 &&
	      f[2] <= (float)src->w && f[3] <= (float)src->h && f[2] > f[0] &&
	      f[3] > f[1]))
		return ch_error_set(err,
				    "cannot resample: box %gx%g at (%g, %g) is "
				    "empty or not inside the %ux%u image",
				    bw, bh, (double)f[0], (double)f[1], src->w,
				    src->h);
	return 0;
}

int ch_image_resample(struct ch_resampler *r, const struct ch_image *src,
		      double bx, double by, double bw, double bh, int flip,
		      struct ch_image *dst, struct ch_error *err)
{
	float f[4] = {(float)bx, (float)by, (float)(bx + bw),
		      (float)(by + bh)};
	size_t n = (size_t)dst->w * dst->c;
	uint32_t y0, y1;
	int hcopy, vcopy;

	if (check_image(src, "source", err) < 0 ||
	    check_image(dst, "target", err) < 0)
		return -1;
	if (dst->c != src->c)
		return ch_error_set(err,
				    "cannot resample: %u channels into %u",
				    src->c, dst->c);
	if (check_box(src, f, bw, bh, err) < 0)
		return -1;
	hcopy = !flip && identity(f[0], f[2], dst->w);
	vcopy = identity(f[1], f[3], dst->h);
	if ((!hcopy && plan(r, &r->h, src->w, f[0], f[2], dst->w, flip) < 0) ||
	    (!vcopy && plan(r, &r->v, src->h, f[1], f[3], dst->h, 0) < 0))
		goto oom;
	if (vcopy && hcopy) {
		copy_rows(src, (uint32_t)f[0], (uint32_t)f[1], dst);
	} else if (vcopy) {
		hpass(src, (uint32_t)f[1], (uint32_t)f[1] + dst->h, &r->h,
		      dst->w, dst->px, dst->stride);
	} else if (hcopy) {
		vpass(src->px + (size_t)f[0] * src->c, src->stride, 0, &r->v,
		      dst, n);
	} else {
		rows_read(&r->v, dst->h, &y0, &y1);
		if (reserve(&r->tmp, (size_t)(y1 - y0) * n) < 0)
			goto oom;
		hpass(src, y0, y1, &r->h, dst->w, r->tmp.p, n);
		vpass(r->tmp.p, n, y0, &r->v, dst, n);
	}
	return 0;
oom:
	return ch_error_errno(err, ENOMEM, "cannot resample %ux%u to %ux%u",
			      src->w, src->h, dst->w, dst->h);
}

/* A source pixel i has weight only if its centre i + 0.5 lies within the
 * filter's support (max(scale, 1)) of an output centre, and the outer
 * centres lie scale / 2 inside the box: so the reach beyond the box is
 * below support + 1/2 - scale/2.  0.01 more covers the rounding of the
 * box edges to float (at most 1/512 pixel below 65536). */
double ch_resample_support(double in, uint32_t out)
{
	double scale = in / (out ? out : 1);
	double support = scale < 1.0 ? 1.0 : scale;

	return support + 0.5 - 0.5 * scale + 0.01;
}
