/* image/resample.c - antialiased bilinear resampling of 8-bit images: the
 * filter of Pillow's Image.resize(size, BILINEAR, box), in 16-bit fixed
 * point.
 *
 * Separable: a horizontal pass over only the source rows the vertical
 * pass will read, into 8-bit rows (rounded there, as Pillow does), then a
 * vertical pass.  The weights are Pillow's, in double precision, rounded
 * to int16 with as many fractional bits as the largest leaves room for
 * (14 when enlarging, up to 22 for wide windows), summing to exactly 1.
 * pmaddwd then multiplies 8 pixels by 8 weights and adds them in pairs:
 * two taps of a pixel's three channels in the horizontal pass, two rows
 * of 4 bytes in the vertical one.  Windows of 2 taps (enlarging) take
 * b + (o - b) * k, rounded by pmulhrsw, in the AVX2 passes: the vertical
 * one, and the horizontal one into planes, from the row's pixels dealt
 * into planes first.
 *
 * Three paths: plain C, SSE2 (the x86-64 baseline) and AVX2 (picked at
 * run time where the CPU has it).  Every sum is exact in 32 bits (255
 * times weights summing to 2^22 at most), so the order of the additions
 * does not matter and all three give the same bytes, on every machine
 * and at every thread count.  The weights come out the same doubles
 * everywhere as long as a * b + c is rounded twice, as the Makefile's
 * build does (GCC in ISO C mode never fuses it into an FMA).  Against
 * Pillow's 22-bit weights a byte moves by 1 now and then (3 bytes in
 * 1000 on photos). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CH_RESAMPLE_SCALAR)
#define HAVE_SSE2 1
#define HAVE_AVX2 1
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2")))
/* Unaligned loads and stores, 16 and 32 bytes, of what p points at. */
#define LD16(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define ST16(p, v) _mm_storeu_si128((__m128i *)(void *)(p), (v))
#define LD32(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define ST32(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
#else
#define HAVE_SSE2 0
#define HAVE_AVX2 0
#endif
#define INLINE static inline __attribute__((always_inline))

#include "image/image.h"
#include "image/testing.h"

/* The weights' fractional bits: at most 22, so that 255 << 22 plus the
 * rounding half stays below 2^31; fewer where the largest weight, plus
 * the 1 its rounding may add, would not fit an int16. */
#define BITS_MAX 22
#define WEIGHT_MAX 32767

/* A buffer that only grows (its contents are not kept when it does). */
struct buf {
	void *p;
	size_t cap;
};

/* The taps of one axis.  Every output pixel reads the same number of
 * source pixels, n (zero weights pad the windows that need fewer): tap
 * loops of one trip count.  Output i reads from first[i] on with weights
 * k[i * n ...], which sum to 1 << bits; off[i] is 3 * (first[i] - lo),
 * where an RGB window starts in the pixels read, [lo, hi) (padded to a
 * multiple of 4 with the last).  The SIMD paths also keep the weights as
 * they load them: `pairs` (SSE2, and the vertical AVX2 pass) and `slots`
 * (the horizontal AVX2 pass), see pair_up and slot_up; and where every
 * window has 2 taps (enlarging), `two`, see two_up. */
struct axis {
	struct buf mem, pairs, slots, two, gather;
	int32_t *first, *off;
	int16_t *k, *mul; /* mul, and base: in two */
	uint8_t *base;
	uint32_t size;
	int32_t n, bits, lo, hi, np, nq;
	int gathered; /* the RGB windows are in `gather` (gather_up) */
	int again;    /* its key had been met before (see struct kept) */
	struct key {
		float f0, f1;
		uint32_t size, out;
		int mirror, layout;
	} key; /* what it was planned for: not again for the same */
};

/* Plans kept for keys that come back.  Eval resizes every image of one
 * size the same way, and a dataset of a few dozen sizes (the README's
 * demo images: 82) planned each image anew: 4% of a demo eval epoch.  A
 * plan is kept only once its key has been met before (`met`: hashes of
 * the keys planned, by slot), so that random crops, every key new, go
 * on using the one axis and its warm buffers; and only a plan of at most
 * KEPT_BYTES, so that the table holds KEPT_PLANS * KEPT_BYTES at most.
 * Kept plans change places with the axis by value: no copy. */
#define KEPT_PLANS 128
#define KEPT_BYTES ((size_t)32 << 10)
#define MET_KEYS 1024

struct kept {
	struct axis plan[KEPT_PLANS];
	uint64_t used[KEPT_PLANS]; /* when last taken; 0: empty */
	uint64_t clock;
	uint32_t met[MET_KEYS];
};

struct ch_resampler {
	struct axis h, v;
	struct kept *hk, *vk; /* NULL: plan every key (no memory for it) */
	uint64_t planned;     /* axes planned (not taken from hk, vk) */
	struct buf w;	 /* the weights in doubles while planning */
	struct buf win;	 /* their windows, and the rounded weights */
	struct buf tmp;	 /* the rows of the horizontal pass */
	struct buf wide; /* a source row, widened (SSE2) or copied (AVX2) */
	enum ch_resample_isa isa;
	int general; /* plan by the general loops only (tests) */
};

static enum ch_resample_isa best_isa(void)
{
#if HAVE_AVX2
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		return CH_RESAMPLE_AVX2;
#endif
	return HAVE_SSE2 ? CH_RESAMPLE_SSE2 : CH_RESAMPLE_PLAIN;
}

struct ch_resampler *ch_resampler_new(void)
{
	struct ch_resampler *r = calloc(1, sizeof(struct ch_resampler));

	if (r) {
		r->isa = best_isa();
		r->hk = calloc(1, sizeof(*r->hk));
		r->vk = calloc(1, sizeof(*r->vk));
	}
	return r;
}

enum ch_resample_isa ch_resampler_limit(struct ch_resampler *r,
					enum ch_resample_isa most)
{
	enum ch_resample_isa best = best_isa();

	r->isa = most < best ? most : best;
	return r->isa;
}

static void axis_release(struct axis *a)
{
	free(a->mem.p);
	free(a->pairs.p);
	free(a->slots.p);
	free(a->two.p);
	free(a->gather.p);
}

static void kept_free(struct kept *k)
{
	for (size_t i = 0; k && i < KEPT_PLANS; i++)
		axis_release(&k->plan[i]);
	free(k);
}

/* Forgets every kept plan (their memory stays, for the next). */
static void kept_forget(struct kept *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < KEPT_PLANS; i++) {
		k->plan[i].key.out = 0;
		k->used[i] = 0;
	}
	memset(k->met, 0, sizeof(k->met));
}

void ch_resampler_plan_counts(const struct ch_resampler *r,
			      uint64_t *planned, size_t *kept)
{
	*planned = r->planned;
	*kept = 0;
	for (size_t i = 0; i < KEPT_PLANS; i++)
		*kept += (r->hk && r->hk->used[i]) + (r->vk && r->vk->used[i]);
}

void ch_resampler_plan_general(struct ch_resampler *r, int general)
{
	r->general = general;
	r->h.key.out = r->v.key.out = 0; /* plan again */
	kept_forget(r->hk);
	kept_forget(r->vk);
}

void ch_resampler_free(struct ch_resampler *r)
{
	if (!r)
		return;
	axis_release(&r->h);
	axis_release(&r->v);
	kept_free(r->hk);
	kept_free(r->vk);
	free(r->w.p);
	free(r->win.p);
	free(r->tmp.p);
	free(r->wide.p);
	free(r);
}

/* Grows b to n bytes, zeroed (malloc's 16-byte alignment is kept). */
static int reserve(struct buf *b, size_t n)
{
	void *q;

	if (n <= b->cap)
		return 0;
	q = calloc(1, n);
	if (!q)
		return -1;
	free(b->p);
	b->p = q;
	b->cap = n;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Weights                                                             */

INLINE double triangle(double x)
{
	if (x < 0.0)
		x = -x;
	return x < 1.0 ? 1.0 - x : 0.0;
}

/* The planning loops below take the most taps a window may have, K, as
 * an argument that plan makes a constant for enlarging (3: the triangle
 * reaches 1 either side), so that they unroll into straight code; their
 * operations are the same either way, so are the weights. */

/* The weights of the output pixel centred at `center`, normalised to sum
 * 1: Pillow's operations in Pillow's order, so the same doubles (ss is
 * 1 / filterscale), *wmax raised to the largest.  Returns how many, from
 * source pixel *first on: at most K. */
INLINE int32_t weigh(double center, double support, double ss,
		     uint32_t size, int32_t K, double *w, int32_t *first,
		     double *wmax)
{
	double sum = 0.0;
	int32_t lo = (int32_t)(center - support + 0.5);
	int32_t hi = (int32_t)(center + support + 0.5);
	int32_t n;

	if (lo < 0)
		lo = 0;
	if (hi > (int32_t)size)
		hi = (int32_t)size;
	n = hi > lo ? hi - lo : 0;
#pragma GCC unroll 4
	for (int32_t i = 0; i < K && i < n; i++) {
		w[i] = triangle((i + lo - center + 0.5) * ss);
		sum += w[i];
	}
	if (sum != 0.0)
#pragma GCC unroll 4
		for (int32_t i = 0; i < K && i < n; i++)
			w[i] /= sum;
#pragma GCC unroll 4
	for (int32_t i = 0; i < K && i < n; i++)
		*wmax = w[i] > *wmax ? w[i] : *wmax;
	*first = lo;
	return n;
}

/* The most fractional bits the largest weight leaves room for. */
static int32_t bits_for(double wmax)
{
	int32_t bits = BITS_MAX;

	while (bits > 1 && wmax * (1 << bits) + 1 > WEIGHT_MAX)
		bits--;
	return bits;
}

/* Rounds n weights summing to 1 into integers summing to exactly
 * 1 << bits: each is the difference of two rounded running sums, so it
 * is within 1 of its exact value and never negative, and a flat image
 * stays flat.  Then drops the zero taps at either end (*first moves);
 * returns how many are left. */
INLINE int32_t quantize(const double *w, int32_t n, int32_t bits, int32_t K,
			int32_t *k, int32_t *first)
{
	int32_t one = 1 << bits, prev = 0, lo = 0, m = 0;
	double run = 0.0;

#pragma GCC unroll 4
	for (int32_t i = 0; i < K && i < n; i++) {
		int32_t at;

		run += w[i];
		at = i == n - 1 ? one : (int32_t)(run * one + 0.5);
		at = at > one ? one : at;
		k[i] = at - prev;
		prev = at;
	}
	while (lo < n && k[lo] == 0)
		lo++;
	while (n > lo && k[n - 1] == 0)
		n--;
	if (lo == 0)
		return n;
	for (int32_t i = lo; i < K && i < n; i++)
		k[m++] = k[i];
	*first += lo;
	return m;
}

/* The weights of every output into the scratch buffers, in their slots
 * (with mirror, output i goes to slot out - 1 - i, which is how flipping
 * costs nothing), K apart; returns the largest weight. */
INLINE double weigh_all(struct ch_resampler *r, uint32_t size, float f0,
			double scale, uint32_t out, int mirror, int32_t K)
{
	double filterscale = scale < 1.0 ? 1.0 : scale, wmax = 0.0;
	double ss = 1.0 / filterscale;
	int32_t *first = r->win.p, *count = first + out;

	for (uint32_t i = 0; i < out; i++) {
		uint32_t slot = mirror ? out - 1 - i : i;
		double center = f0 + (i + 0.5) * scale;
		double *w = (double *)r->w.p + (size_t)slot * K;

		count[slot] = weigh(center, filterscale, ss, size, K, w,
				    &first[slot], &wmax);
	}
	return wmax;
}

/* Rounds every output's weights (quantize) in place; returns the most
 * taps a window keeps. */
INLINE int32_t quantize_all(struct ch_resampler *r, uint32_t out,
			    int32_t bits, int32_t K)
{
	int32_t *first = r->win.p, *count = first + out, *k = count + out;
	int32_t n = 1;

	for (uint32_t i = 0; i < out; i++) {
		const double *w = (const double *)r->w.p + (size_t)i * K;

		count[i] = quantize(w, count[i], bits, K, k + (size_t)i * K,
				    &first[i]);
		n = count[i] > n ? count[i] : n;
	}
	return n;
}

/* Copies the rounded windows (K apart) into a's rows of N = a->n taps,
 * widened to the longest and kept inside the axis: a window at the far
 * edge starts earlier, its weights moved right, and zeros fill the rest
 * (each tap written once: rows are a few taps, a memset call a row
 * costs more).  Then the pixels read, [lo, hi), and where each window
 * starts in them.  N is a constant in the callers of the usual sizes. */
INLINE void pad(struct axis *a, const struct ch_resampler *r, int32_t K,
		uint32_t out, int32_t N)
{
	const int32_t *first = r->win.p, *count = first + out;
	const int32_t *k = count + out;
	int32_t lo = INT32_MAX, hi = 0;

	for (uint32_t i = 0; i < out; i++) {
		int16_t *row = a->k + (size_t)i * N;
		const int32_t *ki = k + (size_t)i * K;
		int32_t start = first[i], shift;

		if (start + N > (int32_t)a->size)
			start = (int32_t)a->size - N;
		shift = first[i] - start;
#pragma GCC unroll 4
		for (int32_t t = 0; t < N; t++)
			row[t] = (int16_t)(t >= shift && t - shift < count[i]
						   ? ki[t - shift]
						   : 0);
		a->first[i] = start;
		lo = start < lo ? start : lo;
		hi = start + N > hi ? start + N : hi;
	}
	a->lo = lo;
	a->hi = hi;
}

/* Where each RGB window starts in the pixels read (for the horizontal
 * SSE2 pass and the AVX2 one by slots), 4 outputs at a time. */
static void offsets(struct axis *a, uint32_t out)
{
	for (uint32_t i = 0; i < (out + 3) / 4 * 4; i++)
		a->off[i] = 3 * (a->first[i < out ? i : out - 1] - a->lo);
}

static void pad_n(struct axis *a, const struct ch_resampler *r, int32_t K,
		  uint32_t out)
{
	switch (r->general ? 0 : a->n) {
	case 1: pad(a, r, K, out, 1); return;
	case 2: pad(a, r, K, out, 2); return;
	case 3: pad(a, r, K, out, 3); return;
	}
	pad(a, r, K, out, a->n);
}

/* Output i's weights for SSE2: pairs[i * np + j] holds taps 2j and
 * 2j + 1 as two int16, 4 times over (np = (n + 1) / 2; an odd last tap
 * is paired with 0). */
static int pair_up(struct axis *a, uint32_t out)
{
	int16_t *v;

	a->np = (a->n + 1) / 2;
	if (reserve(&a->pairs, (size_t)out * a->np * 16) < 0)
		return -1;
	v = a->pairs.p;
	for (uint32_t i = 0; i < out; i++) {
		const int16_t *k = a->k + (size_t)i * a->n;

		for (int32_t j = 0; j < a->np; j++, v += 8)
			for (int l = 0; l < 8; l += 2) {
				v[l] = k[2 * j];
				v[l + 1] = 2 * j + 1 < a->n ? k[2 * j + 1] : 0;
			}
	}
	return 0;
}

/* Output weights for the horizontal AVX2 pass (see hrow3_avx2), which
 * takes RGB windows 5 taps (15 bytes) a load and spreads each load into
 * 3 slots, taps (0, 1), (2, 3) and (4, none): nq slots in all.  A slot's
 * weights are [ka kb ka kb ka kb 0 0], for 2 pixels side by side (a
 * 256-bit register): pixels 4b and 4b + 2, then 4b + 1 and 4b + 3, per
 * block b of 4 (those past the end weigh 0). */
static inline void slot(const struct axis *a, uint32_t x, uint32_t out,
			int32_t ta, int32_t tb, int16_t *v)
{
	int16_t ka = 0, kb = 0;

	if (x < out) {
		const int16_t *k = a->k + (size_t)x * a->n;

		ka = ta < a->n ? k[ta] : 0;
		kb = tb < a->n ? k[tb] : 0;
	}
	for (int l = 0; l < 6; l += 2) {
		v[l] = ka;
		v[l + 1] = kb;
	}
	v[6] = v[7] = 0;
}

static int slot_up(struct axis *a, uint32_t out)
{
	int32_t ng = (a->n + 4) / 5, rest = a->n - 5 * (ng - 1);
	uint32_t nb = (out + 3) / 4;
	int16_t *v;

	a->nq = 3 * (ng - 1) + (rest + 1) / 2;
	if (reserve(&a->slots, (size_t)nb * 2 * a->nq * 32) < 0)
		return -1;
	v = a->slots.p;
	for (uint32_t x = 0; x < nb * 4; x += 4)
		for (uint32_t odd = 0; odd < 2; odd++)
			for (int32_t q = 0; q < a->nq; q++, v += 16) {
				int32_t ta = 5 * (q / 3) + 2 * (q % 3);
				int32_t tb = q % 3 < 2 ? ta + 1 : a->n;

				slot(a, x + odd, out, ta, tb, v);
				slot(a, x + odd + 2, out, ta, tb, v + 8);
			}
	return 0;
}

/* Output i's 2 taps, for the vertical AVX2 pass (see vchunk2_avx2): the
 * tap of the larger weight (0 or 1) in base[i], the smaller weight,
 * shifted up to 15 fractional bits, in mul[i].  2 taps sum to 1 << bits
 * with bits <= 15 (bits_for leaves 15 at most where the larger is 1/2 or
 * more), so the smaller shifted is 1 << 14 at most. */
static int two_taps(const struct axis *a)
{
	return a->n == 2 && a->bits <= 15;
}

static int two_up(struct axis *a, uint32_t out)
{
	if (!two_taps(a))
		return 0;
	if (reserve(&a->two, (size_t)out * 3 + 2) < 0)
		return -1;
	a->base = a->two.p;
	a->mul = (int16_t *)(void *)(a->base + (out + 1) / 2 * 2);
	for (uint32_t i = 0; i < out; i++) {
		const int16_t *k = a->k + (size_t)i * 2;
		int b = k[1] > k[0];

		a->base[i] = (uint8_t)b;
		a->mul[i] = (int16_t)(k[1 - b] << (15 - a->bits));
	}
	return 0;
}

/* The 2-tap windows of the horizontal AVX2 pass into planes (see
 * hrow3_two_avx2), 16 outputs a group: group g covers outputs from
 * x = min(16 g, out - 16) on, in two halves of 8 that each read 16
 * bytes of a plane, from at[2 g] and at[2 g + 1] (pixels from lo on).
 * A group's 64 bytes of byte shuffles pick, per half, output i's
 * pixel of the larger weight (b) as a 16-bit word, then that of the
 * smaller (o); its 16 multipliers are the smaller weights shifted up to
 * 15 fractional bits (as two_up's).  Only where every window has 2 taps
 * (two_taps), out is 16 or more and every half's windows lie within 16
 * pixels (enlarging, or nearly): returns 1 if built, 0 if not, -1
 * without memory. */
struct group {
	int32_t at[2];
	int8_t pick[64];
	int16_t mul[16];
};

static int gather_up(struct axis *a, uint32_t out)
{
	uint32_t ng = (out + 15) / 16;
	struct group *g;

	if (!two_taps(a) || out < 16)
		return 0;
	if (reserve(&a->gather, ng * sizeof(struct group)) < 0)
		return -1;
	g = a->gather.p;
	for (uint32_t j = 0; j < ng; j++, g++) {
		uint32_t x0 = 16 * j < out - 16 ? 16 * j : out - 16;

		for (uint32_t h = 0; h < 2; h++) {
			const int32_t *f = a->first + x0 + 8 * h;
			int32_t at = f[0], end = f[0];

			for (uint32_t i = 1; i < 8; i++) {
				at = f[i] < at ? f[i] : at;
				end = f[i] > end ? f[i] : end;
			}
			if (end + 1 - at > 15)
				return 0;
			g->at[h] = at - a->lo;
			for (uint32_t i = 0; i < 8; i++) {
				uint32_t x = x0 + 8 * h + i;
				const int16_t *k = a->k + (size_t)x * 2;
				int b = k[1] > k[0];
				int8_t *p = g->pick + 16 * h + 2 * i;

				p[0] = (int8_t)(a->first[x] - at + b);
				p[32] = (int8_t)(a->first[x] - at + 1 - b);
				p[1] = p[33] = -1;
				g->mul[8 * h + i] =
					(int16_t)(k[1 - b] << (15 - a->bits));
			}
		}
	}
	return 1;
}

/* How a pass loads its weights: k alone (plain C), pairs, slots; TWO
 * for the vertical AVX2 pass over rows of 32 bytes or more, which takes
 * windows of 2 taps in `two` (vpass2_avx2), the others in pairs; GATHER
 * for the horizontal AVX2 pass into planes, which takes windows of 2
 * taps in `gather` where they fit it (gather_up), the others in slots. */
enum layout { KEYS, PAIRS, SLOTS, TWO, GATHER };

static int same_key(const struct key *a, const struct key *b)
{
	return a->f0 == b->f0 && a->f1 == b->f1 && a->size == b->size &&
	       a->out == b->out && a->mirror == b->mirror &&
	       a->layout == b->layout;
}

static void swap_axes(struct axis *a, struct axis *b)
{
	struct axis t = *a;
	*a = *b;
	*b = t;
}

/* The kept plan for key into a, a's plan kept in its place: 1 if there
 * was one. */
static int take_kept(struct kept *k, struct axis *a, const struct key *key)
{
	for (size_t i = 0; k && i < KEPT_PLANS; i++) {
		if (k->used[i] && same_key(&k->plan[i].key, key)) {
			swap_axes(a, &k->plan[i]);
			k->used[i] = k->plan[i].key.out ? ++k->clock : 0;
			return 1;
		}
	}
	return 0;
}

static size_t axis_bytes(const struct axis *a)
{
	return a->mem.cap + a->pairs.cap + a->slots.cap + a->two.cap +
	       a->gather.cap;
}

/* Before a is planned again: its plan into the table, in an empty slot
 * or the one used longest ago, whose memory a then plans in; if its key
 * had come back and it is small enough. */
static void keep(struct kept *k, struct axis *a)
{
	if (!k || !a->key.out || !a->again || axis_bytes(a) > KEPT_BYTES)
		return;
	size_t at = 0;
	for (size_t i = 0; i < KEPT_PLANS && k->used[at]; i++)
		if (k->used[i] < k->used[at])
			at = i;
	swap_axes(a, &k->plan[at]);
	k->used[at] = ++k->clock;
}

/* Whether key was planned before (or another of its hash, rarely: then
 * a plan is kept that will not come back, which only costs a slot). */
static int met_before(struct kept *k, const struct key *key)
{
	if (!k)
		return 0;
	uint32_t bits[6];
	memcpy(&bits[0], &key->f0, 4);
	memcpy(&bits[1], &key->f1, 4);
	bits[2] = key->size;
	bits[3] = key->out;
	bits[4] = (uint32_t)key->mirror;
	bits[5] = (uint32_t)key->layout;
	uint64_t h = ch_hash64(bits, sizeof(bits));
	uint32_t *slot = &k->met[h % MET_KEYS], tag = (uint32_t)(h >> 32) | 1;
	int met = *slot == tag;
	*slot = tag;
	return met;
}

/* Plans the taps that map [f0, f1) of a `size`-pixel axis onto `out`
 * pixels, mirrored or not, with the weights laid out for the pass.  The
 * edges come as floats because Pillow takes the box as C floats:
 * rounding them the same way gives Pillow's weights. */
static int plan(struct ch_resampler *r, struct axis *a, struct kept *k,
		uint32_t size, float f0, float f1, uint32_t out, int mirror,
		enum layout layout)
{
	double scale = (double)(f1 - f0) / out;
	double support = scale < 1.0 ? 1.0 : scale; /* the triangle reaches 1 */
	uint32_t ksize = (uint32_t)ceil(support) * 2 + 1;
	struct key key = {f0, f1, size, out, mirror, (int)layout};
	size_t nout4 = (out + 3) / 4 * 4;
	double wmax;

	if (same_key(&key, &a->key) || take_kept(k, a, &key))
		return 0;
	keep(k, a);
	a->again = met_before(k, &key);
	r->planned++;
	a->key.out = 0; /* nothing planned, until the end */
	if (reserve(&r->w, (size_t)out * ksize * sizeof(double)) < 0 ||
	    reserve(&r->win, (size_t)out * (ksize + 2) * sizeof(int32_t)) < 0)
		return -1;
	if (ksize == 3 && !r->general) {
		wmax = weigh_all(r, size, f0, scale, out, mirror, 3);
		a->bits = bits_for(wmax);
		a->n = quantize_all(r, out, a->bits, 3);
	} else {
		wmax = weigh_all(r, size, f0, scale, out, mirror,
				 (int32_t)ksize);
		a->bits = bits_for(wmax);
		a->n = quantize_all(r, out, a->bits, (int32_t)ksize);
	}
	if (reserve(&a->mem, (out + nout4) * sizeof(int32_t) +
				     (size_t)out * a->n * sizeof(int16_t)) < 0)
		return -1;
	a->size = size;
	a->first = a->mem.p;
	a->off = a->first + out;
	a->k = (int16_t *)(a->off + nout4);
	pad_n(a, r, (int32_t)ksize, out);
	if ((layout == PAIRS && pair_up(a, out) < 0) ||
	    (layout == TWO && !two_taps(a) && pair_up(a, out) < 0) ||
	    (layout == TWO && two_up(a, out) < 0) ||
	    (layout == SLOTS && slot_up(a, out) < 0))
		return -1;
	a->gathered = layout == GATHER ? gather_up(a, out) : 0;
	if (a->gathered < 0 || (layout == GATHER && !a->gathered &&
				slot_up(a, out) < 0))
		return -1;
	if (layout == PAIRS || layout == SLOTS ||
	    (layout == GATHER && !a->gathered))
		offsets(a, out);
	a->key = key;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Where the bytes go                                                  */

/* An image being written, interleaved (HWC) or planar (CHW): channel k
 * of pixel (x, y) at px[y * stride + k * chan + x * step], chan 1 and
 * step c when interleaved, chan a plane's size and step 1 when planar. */
struct target {
	uint8_t *px;
	size_t stride, chan, step;
	uint32_t w, h, c;
};

/* One row of a target: channel k of pixel x at d[k][x * step]. */
struct row_out {
	uint8_t *d[3];
	size_t step;
};

static struct row_out row_of(const struct target *t, uint32_t y)
{
	struct row_out o = {{NULL, NULL, NULL}, t->step};

	for (uint32_t k = 0; k < t->c; k++)
		o.d[k] = t->px + (size_t)y * t->stride + k * t->chan;
	return o;
}

/* Pixel x's bytes, R G B from the low byte up. */
static inline void put3(const struct row_out *o, uint32_t x, uint32_t v)
{
	size_t i = x * o->step;

	o->d[0][i] = (uint8_t)v;
	o->d[1][i] = (uint8_t)(v >> 8);
	o->d[2][i] = (uint8_t)(v >> 16);
}

/* ------------------------------------------------------------------ */
/* The horizontal pass                                                 */

/* One row in plain C: the reference the SIMD paths match.  The tap
 * count is an argument that the callers make a constant, so that the tap
 * loop unrolls. */
INLINE void hrow1_c(const uint8_t *restrict s, const struct axis *a,
		    const struct row_out *o, uint32_t out, int32_t n)
{
	int32_t half = 1 << (a->bits - 1);

	for (uint32_t x = 0; x < out; x++) {
		const uint8_t *p = s + a->first[x];
		const int16_t *k = a->k + (size_t)x * n;
		int32_t v = half;

#pragma GCC unroll 8
		for (int32_t t = 0; t < n; t++)
			v += p[t] * k[t];
		o->d[0][x * o->step] = (uint8_t)(v >> a->bits);
	}
}

INLINE void hrow3_c(const uint8_t *restrict s, const struct axis *a,
		    const struct row_out *o, uint32_t out, int32_t n)
{
	int32_t half = 1 << (a->bits - 1);

	for (uint32_t x = 0; x < out; x++) {
		const uint8_t *p = s + (size_t)a->first[x] * 3;
		const int16_t *k = a->k + (size_t)x * n;
		int32_t r = half, g = half, b = half;

#pragma GCC unroll 8
		for (int32_t t = 0; t < n; t++) {
			r += p[3 * t] * k[t];
			g += p[3 * t + 1] * k[t];
			b += p[3 * t + 2] * k[t];
		}
		put3(o, x, (uint32_t)(r >> a->bits) |
				   (uint32_t)(g >> a->bits) << 8 |
				   (uint32_t)(b >> a->bits) << 16);
	}
}

/* The common windows (2 to 6 taps: from enlarging to shrinking 3-fold)
 * get their own unrolled copies. */
static void hrow_plain(const uint8_t *s, const struct axis *a, uint32_t c,
		       const struct row_out *o, uint32_t out)
{
	if (c == 1) {
		switch (a->n) {
		case 2: hrow1_c(s, a, o, out, 2); return;
		case 3: hrow1_c(s, a, o, out, 3); return;
		case 4: hrow1_c(s, a, o, out, 4); return;
		case 5: hrow1_c(s, a, o, out, 5); return;
		case 6: hrow1_c(s, a, o, out, 6); return;
		}
		hrow1_c(s, a, o, out, a->n);
		return;
	}
	switch (a->n) {
	case 2: hrow3_c(s, a, o, out, 2); return;
	case 3: hrow3_c(s, a, o, out, 3); return;
	case 4: hrow3_c(s, a, o, out, 4); return;
	case 5: hrow3_c(s, a, o, out, 5); return;
	case 6: hrow3_c(s, a, o, out, 6); return;
	}
	hrow3_c(s, a, o, out, a->n);
}

/* The SIMD passes read the pixels [a->lo, a->hi) of a source row, and
 * some bytes past a window, which only ever meet zero weights: SLACK
 * more after hi (in words for SSE2, in bytes for AVX2). */
#define SLACK 16

static size_t wide_bytes(const struct axis *a)
{
	/* and room for 3 planes of the pixels and 16 bytes (hrow3_two_avx2) */
	return (3 * (size_t)(a->hi - a->lo) + SLACK) * sizeof(uint16_t) + 48;
}

#if HAVE_SSE2
/* The SSE2 pass widens the pixels read to 16 bits first, once a row. */
static void widen(const uint8_t *s, uint16_t *w, size_t n)
{
	const __m128i z = _mm_setzero_si128();
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m128i v = LD16(s + i);

		ST16(w + i, _mm_unpacklo_epi8(v, z));
		ST16(w + i + 8, _mm_unpackhi_epi8(v, z));
	}
	for (; i < n; i++)
		w[i] = s[i];
}

/* A pixel's three sums, [R, G, B, -], rounding half included: per tap
 * pair, the words of taps 2j and 2j + 1 interleaved (R R G G B B ..)
 * and multiplied by the pair's weights. */
INLINE __m128i hpix3(const uint16_t *p, const __m128i *kv, int32_t np,
		     __m128i acc)
{
#pragma GCC unroll 4
	for (int32_t j = 0; j < np; j++, p += 6) {
		__m128i ab = _mm_unpacklo_epi16(LD16(p), LD16(p + 3));

		acc = _mm_add_epi32(acc, _mm_madd_epi16(ab, kv[j]));
	}
	return acc;
}

/* The sums of pixels x and x + 1 as bytes: [R, G, B, -] twice. */
static inline uint64_t bytes3x2(__m128i v0, __m128i v1, __m128i sh)
{
	__m128i w = _mm_packs_epi32(_mm_sra_epi32(v0, sh),
				    _mm_sra_epi32(v1, sh));

	return (uint64_t)_mm_cvtsi128_si64(_mm_packus_epi16(w, w));
}

/* Pixels x and x + 1 (as bytes3x2 gives them) into a row of `out`:
 * interleaved, 8 bytes at once while the row has room for the 2 that
 * pixel x + 2 overwrites next; planar, 2 bytes a plane. */
static inline void put3x2(const struct row_out *o, uint32_t x, uint32_t out,
			  uint64_t b)
{
	if (o->step == 1) {
		uint16_t r = (uint16_t)((b & 0xff) | (b >> 24 & 0xff00));
		uint16_t g = (uint16_t)((b >> 8 & 0xff) | (b >> 32 & 0xff00));
		uint16_t bl = (uint16_t)((b >> 16 & 0xff) | (b >> 40 & 0xff00));

		memcpy(o->d[0] + x, &r, 2);
		memcpy(o->d[1] + x, &g, 2);
		memcpy(o->d[2] + x, &bl, 2);
	} else if (x + 3 <= out) {
		uint64_t v = (b & 0xffffff) | (b >> 8 & 0xffffff000000);

		memcpy(o->d[0] + 3 * (size_t)x, &v, 8);
	} else {
		put3(o, x, (uint32_t)b);
		put3(o, x + 1, (uint32_t)(b >> 32));
	}
}

/* One RGB row from its widened pixels w, two output pixels a step; np a
 * constant in the callers. */
INLINE void hrow3_sse2_n(const uint16_t *w, const struct axis *a,
			 const struct row_out *o, uint32_t out, int32_t np)
{
	__m128i half = _mm_set1_epi32(1 << (a->bits - 1));
	__m128i sh = _mm_cvtsi32_si128(a->bits);
	const __m128i *kv = a->pairs.p;
	uint32_t x = 0;

	for (; x + 2 <= out; x += 2, kv += 2 * np)
		put3x2(o, x, out,
		       bytes3x2(hpix3(w + a->off[x], kv, np, half),
				hpix3(w + a->off[x + 1], kv + np, np, half),
				sh));
	if (x < out) {
		__m128i v = hpix3(w + a->off[x], kv, np, half);

		put3(o, x, (uint32_t)bytes3x2(v, v, sh));
	}
}

static void hrow3_sse2(const uint8_t *s, uint16_t *w, const struct axis *a,
		       const struct row_out *o, uint32_t out)
{
	widen(s + 3 * (size_t)a->lo, w, 3 * (size_t)(a->hi - a->lo));
	switch (a->np) {
	case 1: hrow3_sse2_n(w, a, o, out, 1); return;
	case 2: hrow3_sse2_n(w, a, o, out, 2); return;
	case 3: hrow3_sse2_n(w, a, o, out, 3); return;
	}
	hrow3_sse2_n(w, a, o, out, a->np);
}
#endif

#if HAVE_AVX2
/* Byte shuffles that spread 15 bytes of RGB (5 taps) into the words of
 * 3 slots: taps (0, 1), (2, 3) and (4, none) as R R G G B B 0 0. */
static const int8_t spread[3][16] = {
	{0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1},
	{6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1},
	{12, -1, -1, -1, 13, -1, -1, -1, 14, -1, -1, -1, -1, -1, -1, -1},
};

/* The sums of two pixels side by side, windows at p0 and p1: per 5 taps
 * one 16-byte load each, spread into slots and multiplied by their
 * weights (slot_up's layout). */
INLINE AVX2 __m256i hpix3x2(const uint8_t *p0, const uint8_t *p1,
			    const __m256i *kq, int32_t nq,
			    const __m256i *mask, __m256i acc)
{
	__m256i v = _mm256_setzero_si256();

#pragma GCC unroll 6
	for (int32_t q = 0; q < nq; q++) {
		__m256i words;

		if (q % 3 == 0)
			v = _mm256_inserti128_si256(
				_mm256_castsi128_si256(LD16(p0 + 5 * q)),
				LD16(p1 + 5 * q), 1);
		words = _mm256_shuffle_epi8(v, mask[q % 3]);
		acc = _mm256_add_epi32(acc,
				       _mm256_madd_epi16(words, LD32(kq + q)));
	}
	return acc;
}

/* Byte shuffles of 4 pixels, [R G B -] each, into R G B R G B ... and
 * into R R R R G G G G B B B B. */
static const int8_t to_rgb[16] = {0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14,
				  -1, -1, -1, -1};
static const int8_t to_planes[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10,
				     14, -1, -1, -1, -1};

/* 4 pixels from x on, of which `live` are in the row. */
INLINE AVX2 void put3x4(const struct row_out *o, uint32_t x, uint32_t live,
			uint32_t out, __m128i b)
{
	uint8_t v[16];

	if (live == 4 && o->step == 3 && x + 6 <= out) {
		b = _mm_shuffle_epi8(b, LD16(to_rgb));
		ST16(o->d[0] + 3 * (size_t)x, b);
	} else if (live == 4 && o->step == 1) {
		b = _mm_shuffle_epi8(b, LD16(to_planes));
		ST16(v, b);
		memcpy(o->d[0] + x, v, 4);
		memcpy(o->d[1] + x, v + 4, 4);
		memcpy(o->d[2] + x, v + 8, 4);
	} else {
		ST16(v, b);
		for (uint32_t i = 0; i < live; i++)
			put3(o, x + i, (uint32_t)v[4 * i] |
					       (uint32_t)v[4 * i + 1] << 8 |
					       (uint32_t)v[4 * i + 2] << 16);
	}
}

/* One RGB row from its pixels [lo, hi) at s, 4 output pixels a step: two
 * 256-bit sums, of pixels x and x + 2 and of x + 1 and x + 3, which
 * packing puts in order.  The 16-byte stores write 4 bytes past the
 * pixels, which the next step overwrites. */
INLINE AVX2 __m128i hpix3x4(const uint8_t *s, const int32_t *off,
			     const __m256i *kq, int32_t nq,
			     const __m256i *mask, __m256i half, __m128i sh)
{
	__m256i ev = hpix3x2(s + off[0], s + off[2], kq, nq, mask, half);
	__m256i od = hpix3x2(s + off[1], s + off[3], kq + nq, nq, mask, half);
	__m256i w = _mm256_packs_epi32(_mm256_sra_epi32(ev, sh),
				       _mm256_sra_epi32(od, sh));

	w = _mm256_permute4x64_epi64(_mm256_packus_epi16(w, w), 0x08);
	return _mm256_castsi256_si128(w);
}

/* The steps of 4 whole pixels first, planar (4 bytes a plane) or
 * interleaved (16 bytes, while the row has room for the 4 past the
 * pixels), with the row's pointers in registers; the rest by put3x4. */
INLINE AVX2 void hrow3_avx2_n(const uint8_t *s, const struct axis *a,
			      const struct row_out *o, uint32_t out,
			      int32_t nq)
{
	__m256i half = _mm256_set1_epi32(1 << (a->bits - 1));
	__m128i sh = _mm_cvtsi32_si128(a->bits);
	__m256i mask[3];
	const __m256i *kq = a->slots.p;
	const int32_t *off = a->off;
	uint8_t *d0 = o->d[0], *d1 = o->d[1], *d2 = o->d[2];
	uint32_t x = 0;

	for (int i = 0; i < 3; i++)
		mask[i] = _mm256_broadcastsi128_si256(
			LD16(spread[i]));
	if (o->step == 1) {
		__m128i planes = LD16(to_planes);

		for (; x + 4 <= out; x += 4, kq += 2 * nq, off += 4) {
			__m128i b = _mm_shuffle_epi8(
				hpix3x4(s, off, kq, nq, mask, half, sh),
				planes);
			uint32_t r = (uint32_t)_mm_cvtsi128_si32(b);
			uint32_t g = (uint32_t)_mm_extract_epi32(b, 1);
			uint32_t bl = (uint32_t)_mm_extract_epi32(b, 2);

			memcpy(d0 + x, &r, 4);
			memcpy(d1 + x, &g, 4);
			memcpy(d2 + x, &bl, 4);
		}
	} else {
		__m128i rgb = LD16(to_rgb);

		for (; x + 6 <= out; x += 4, kq += 2 * nq, off += 4)
			ST16(d0 + 3 * (size_t)x,
			     _mm_shuffle_epi8(
				     hpix3x4(s, off, kq, nq, mask, half, sh),
				     rgb));
	}
	for (; x < out; x += 4, kq += 2 * nq, off += 4)
		put3x4(o, x, out - x < 4 ? out - x : 4, out,
		       hpix3x4(s, off, kq, nq, mask, half, sh));
}

/* Reads whole 16 bytes at most 13 past the last window's end: straight
 * from the row where the source has them (lim bytes from the row's
 * start), else from a copy in c. */
static AVX2 void hrow3_avx2(const uint8_t *s, size_t lim, uint8_t *c,
			    const struct axis *a, const struct row_out *o,
			    uint32_t out)
{
	size_t n = 3 * (size_t)(a->hi - a->lo);

	s += 3 * (size_t)a->lo;
	if (3 * (size_t)a->lo + n + SLACK > lim) {
		memcpy(c, s, n);
		s = c;
	}
	switch (a->nq) {
	case 1: hrow3_avx2_n(s, a, o, out, 1); return;
	case 2: hrow3_avx2_n(s, a, o, out, 2); return;
	case 3: hrow3_avx2_n(s, a, o, out, 3); return;
	}
	hrow3_avx2_n(s, a, o, out, a->nq);
}
#endif

#if HAVE_AVX2
/* Byte shuffles that take the R, G or B bytes of 16 RGB pixels (48
 * bytes) from their first, second or third 16 bytes, in place. */
static const int8_t deal[3][3][16] = {
	{{0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1},
	 {-1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14, -1, -1, -1, -1, -1},
	 {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 4, 7, 10, 13}},
	{{1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1},
	 {-1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1},
	 {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14}},
	{{2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1},
	 {-1, -1, -1, -1, -1, 1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1},
	 {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15}},
};

/* 16 RGB pixels from s into 16 bytes of each plane, pl apart. */
INLINE AVX2 void deal16(const uint8_t *s, uint8_t *d, size_t pl)
{
	__m128i v[3] = {LD16(s), LD16(s + 16), LD16(s + 32)};

#pragma GCC unroll 3
	for (int k = 0; k < 3; k++)
		ST16(d + k * pl,
		     _mm_or_si128(
			     _mm_or_si128(
				     _mm_shuffle_epi8(v[0], LD16(deal[k][0])),
				     _mm_shuffle_epi8(v[1], LD16(deal[k][1]))),
			     _mm_shuffle_epi8(v[2], LD16(deal[k][2]))));
}

/* n RGB pixels from s into planes, pl bytes apart, at d: 16 at a time,
 * the last 16 overlapping those before (only the row's bytes read). */
static AVX2 void deal_row(const uint8_t *s, uint8_t *d, size_t pl, size_t n)
{
	size_t i = 0;

	if (n < 16) {
		for (; i < n; i++)
			for (int k = 0; k < 3; k++)
				d[k * pl + i] = s[3 * i + k];
		return;
	}
	for (; i + 16 <= n; i += 16)
		deal16(s + 3 * i, d + i, pl);
	if (i < n)
		deal16(s + 3 * (n - 16), d + n - 16, pl);
}

/* One RGB row of 2-tap windows into planes, 16 outputs a step (the last
 * step overlapping the one before), a plane at a time: per half of 8
 * outputs, 16 bytes of the plane, shuffled into the 16-bit pixels b and
 * o of each window (gather_up), and b + (o - b) * k / 2^bits rounded by
 * pmulhrsw, the pair's weighted sum exactly, as in vchunk2_avx2. */
static AVX2 void hrow3_two_avx2(const uint8_t *s, uint8_t *c,
				const struct axis *a, const struct row_out *o,
				uint32_t out)
{
	size_t n = (size_t)(a->hi - a->lo), pl = n + 16;
	const struct group *g0 = a->gather.p;
	uint32_t ng = (out + 15) / 16;

	deal_row(s + 3 * (size_t)a->lo, c, pl, n);
	for (int k = 0; k < 3; k++) {
		const uint8_t *p = c + k * pl;
		const struct group *g = g0;

		for (uint32_t j = 0; j < ng; j++, g++) {
			uint32_t x = 16 * j < out - 16 ? 16 * j : out - 16;
			__m256i v = _mm256_inserti128_si256(
				_mm256_castsi128_si256(LD16(p + g->at[0])),
				LD16(p + g->at[1]), 1);
			__m256i b = _mm256_shuffle_epi8(v, LD32(g->pick));
			__m256i q = _mm256_shuffle_epi8(v, LD32(g->pick + 32));

			b = _mm256_add_epi16(
				b, _mm256_mulhrs_epi16(_mm256_sub_epi16(q, b),
						       LD32(g->mul)));
			b = _mm256_permute4x64_epi64(
				_mm256_packus_epi16(b, b), 0x08);
			ST16(o->d[k] + x, _mm256_castsi256_si128(b));
		}
	}
}
#endif

/* Rows [y0, y1) of src, resampled horizontally, into rows 0... of t. */
static void hpass(struct ch_resampler *r, const struct ch_image *src,
		  uint32_t y0, uint32_t y1, const struct axis *a,
		  const struct target *t)
{
	for (uint32_t y = y0; y < y1; y++) {
		const uint8_t *s = src->px + (size_t)y * src->stride;
		struct row_out o = row_of(t, y - y0);

#if HAVE_AVX2
		if (src->c == 3 && r->isa == CH_RESAMPLE_AVX2 && a->gathered) {
			hrow3_two_avx2(s, r->wide.p, a, &o, t->w);
			continue;
		}
		if (src->c == 3 && r->isa == CH_RESAMPLE_AVX2) {
			size_t lim = (size_t)(src->h - 1 - y) * src->stride +
				     (size_t)src->w * 3;

			hrow3_avx2(s, lim, r->wide.p, a, &o, t->w);
			continue;
		}
#endif
#if HAVE_SSE2
		if (src->c == 3 && r->isa >= CH_RESAMPLE_SSE2) {
			hrow3_sse2(s, r->wide.p, a, &o, t->w);
			continue;
		}
#endif
		(void)r;
		hrow_plain(s, a, src->c, &o, t->w);
	}
}

/* ------------------------------------------------------------------ */
/* The vertical pass                                                   */

/* Bytes of one output row at a time, in plain C: sums kept in
 * registers, and a constant trip count that -O2 vectorises. */
#define VCHUNK 16

INLINE void vchunk_c(const uint8_t *s, size_t stride, const int16_t *k,
		     int32_t n, int32_t bits, uint8_t *restrict d, size_t m)
{
	int32_t acc[VCHUNK];

	for (size_t j = 0; j < m; j++)
		acc[j] = 1 << (bits - 1);
	for (int32_t t = 0; t < n; t++) {
		const uint8_t *restrict row = s + (size_t)t * stride;
		int32_t kt = k[t];

		for (size_t j = 0; j < m; j++)
			acc[j] += row[j] * kt;
	}
	for (size_t j = 0; j < m; j++)
		d[j] = (uint8_t)(acc[j] >> bits);
}

/* len bytes of output row y: the weighted sum of a->n rows from top on,
 * stride apart. */
static void vrow_plain(const uint8_t *top, size_t stride,
		       const struct axis *a, uint32_t y, uint8_t *d,
		       size_t len)
{
	const int16_t *k = a->k + (size_t)y * a->n;
	size_t j = 0;

	for (; j + VCHUNK <= len; j += VCHUNK)
		vchunk_c(top + j, stride, k, a->n, a->bits, d + j, VCHUNK);
	if (j < len)
		vchunk_c(top + j, stride, k, a->n, a->bits, d + j, len - j);
}

#if HAVE_SSE2
/* 16 bytes of an output row: per pair of rows, their bytes interleaved
 * and multiplied by the pair's weights, 4 sums at a time.  An odd last
 * row is paired with itself, at weight 0. */
INLINE void vchunk_sse2(const uint8_t *top, size_t stride, int32_t n,
			const __m128i *kv, int32_t np, __m128i half,
			__m128i sh, uint8_t *d)
{
	const __m128i z = _mm_setzero_si128();
	__m128i s0 = half, s1 = half, s2 = half, s3 = half;

	for (int32_t j = 0; j < np; j++) {
		const uint8_t *r0 = top + (size_t)(2 * j) * stride;
		const uint8_t *r1 = 2 * j + 1 < n ? r0 + stride : r0;
		__m128i p = LD16(r0);
		__m128i q = LD16(r1);
		__m128i lo = _mm_unpacklo_epi8(p, q);
		__m128i hi = _mm_unpackhi_epi8(p, q);
		__m128i k = _mm_load_si128(kv + j);

		s0 = _mm_add_epi32(s0,
				   _mm_madd_epi16(_mm_unpacklo_epi8(lo, z), k));
		s1 = _mm_add_epi32(s1,
				   _mm_madd_epi16(_mm_unpackhi_epi8(lo, z), k));
		s2 = _mm_add_epi32(s2,
				   _mm_madd_epi16(_mm_unpacklo_epi8(hi, z), k));
		s3 = _mm_add_epi32(s3,
				   _mm_madd_epi16(_mm_unpackhi_epi8(hi, z), k));
	}
	s0 = _mm_packs_epi32(_mm_sra_epi32(s0, sh), _mm_sra_epi32(s1, sh));
	s2 = _mm_packs_epi32(_mm_sra_epi32(s2, sh), _mm_sra_epi32(s3, sh));
	ST16(d, _mm_packus_epi16(s0, s2));
}

/* The row in 16-byte steps, the last one overlapping the one before
 * (the same bytes again); rows under 16 bytes in plain C. */
INLINE void vrow_sse2_n(const uint8_t *top, size_t stride,
			const struct axis *a, uint32_t y, uint8_t *d,
			size_t len, int32_t np)
{
	const __m128i *kv = (const __m128i *)a->pairs.p + (size_t)y * np;
	__m128i half = _mm_set1_epi32(1 << (a->bits - 1));
	__m128i sh = _mm_cvtsi32_si128(a->bits);
	size_t j = 0;

	if (len < 16) {
		vrow_plain(top, stride, a, y, d, len);
		return;
	}
	for (; j + 16 <= len; j += 16)
		vchunk_sse2(top + j, stride, a->n, kv, np, half, sh, d + j);
	if (j < len)
		vchunk_sse2(top + len - 16, stride, a->n, kv, np, half, sh,
			    d + len - 16);
}

static void vrow_sse2(const uint8_t *top, size_t stride,
		      const struct axis *a, uint32_t y, uint8_t *d,
		      size_t len)
{
	switch (a->np) {
	case 1: vrow_sse2_n(top, stride, a, y, d, len, 1); return;
	case 2: vrow_sse2_n(top, stride, a, y, d, len, 2); return;
	case 3: vrow_sse2_n(top, stride, a, y, d, len, 3); return;
	}
	vrow_sse2_n(top, stride, a, y, d, len, a->np);
}
#endif

#if HAVE_AVX2
/* vchunk_sse2 on 32 bytes: the unpacks and packs work within 128-bit
 * lanes, so the bytes come out in order. */
INLINE AVX2 void vchunk_avx2(const uint8_t *top, size_t stride, int32_t n,
			     const __m128i *kv, int32_t np, __m256i half,
			     __m128i sh, uint8_t *d)
{
	const __m256i z = _mm256_setzero_si256();
	__m256i s0 = half, s1 = half, s2 = half, s3 = half;

	for (int32_t j = 0; j < np; j++) {
		const uint8_t *r0 = top + (size_t)(2 * j) * stride;
		const uint8_t *r1 = 2 * j + 1 < n ? r0 + stride : r0;
		__m256i p = LD32(r0);
		__m256i q = LD32(r1);
		__m256i lo = _mm256_unpacklo_epi8(p, q);
		__m256i hi = _mm256_unpackhi_epi8(p, q);
		__m256i k = _mm256_broadcastsi128_si256(_mm_load_si128(kv + j));

		s0 = _mm256_add_epi32(
			s0, _mm256_madd_epi16(_mm256_unpacklo_epi8(lo, z), k));
		s1 = _mm256_add_epi32(
			s1, _mm256_madd_epi16(_mm256_unpackhi_epi8(lo, z), k));
		s2 = _mm256_add_epi32(
			s2, _mm256_madd_epi16(_mm256_unpacklo_epi8(hi, z), k));
		s3 = _mm256_add_epi32(
			s3, _mm256_madd_epi16(_mm256_unpackhi_epi8(hi, z), k));
	}
	s0 = _mm256_packs_epi32(_mm256_sra_epi32(s0, sh),
				_mm256_sra_epi32(s1, sh));
	s2 = _mm256_packs_epi32(_mm256_sra_epi32(s2, sh),
				_mm256_sra_epi32(s3, sh));
	ST32(d, _mm256_packus_epi16(s0, s2));
}

/* The row in 32-byte steps, the last overlapping; shorter rows by SSE2. */
INLINE AVX2 void vrow_avx2_n(const uint8_t *top, size_t stride,
			     const struct axis *a, uint32_t y, uint8_t *d,
			     size_t len, int32_t np)
{
	const __m128i *kv = (const __m128i *)a->pairs.p + (size_t)y * np;
	__m256i half = _mm256_set1_epi32(1 << (a->bits - 1));
	__m128i sh = _mm_cvtsi32_si128(a->bits);
	size_t j = 0;

	if (len < 32) {
		vrow_sse2(top, stride, a, y, d, len);
		return;
	}
	for (; j + 32 <= len; j += 32)
		vchunk_avx2(top + j, stride, a->n, kv, np, half, sh, d + j);
	if (j < len)
		vchunk_avx2(top + len - 32, stride, a->n, kv, np, half, sh,
			    d + len - 32);
}

/* 32 bytes of an output row of 2 taps, rows b (the larger weight) and
 * o: b + (o - b) * k / 2^bits, rounded, is the pair's weighted sum
 * exactly (the weights sum to 2^bits), and pmulhrsw gives the product's
 * rounded (x + 2^14) >> 15 in 16 bits, the weight shifted to 15 bits:
 * the bytes of vchunk_avx2, in half the work. */
INLINE AVX2 void vchunk2_avx2(const uint8_t *b, const uint8_t *o, __m256i k,
			      uint8_t *d)
{
	const __m256i z = _mm256_setzero_si256();
	__m256i p = LD32(b), q = LD32(o);
	__m256i plo = _mm256_unpacklo_epi8(p, z);
	__m256i phi = _mm256_unpackhi_epi8(p, z);
	__m256i qlo = _mm256_unpacklo_epi8(q, z);
	__m256i qhi = _mm256_unpackhi_epi8(q, z);

	plo = _mm256_add_epi16(
		plo, _mm256_mulhrs_epi16(_mm256_sub_epi16(qlo, plo), k));
	phi = _mm256_add_epi16(
		phi, _mm256_mulhrs_epi16(_mm256_sub_epi16(qhi, phi), k));
	ST32(d, _mm256_packus_epi16(plo, phi));
}

/* The vertical pass (vpass) where every window has 2 taps (two_taps) and
 * rows are 32 bytes or more: per output row, its two source rows and
 * weight once for the row's nseg segments (planes). */
static AVX2 void vpass2_avx2(const uint8_t *s, size_t stride, size_t sseg,
			     uint32_t base, const struct axis *a,
			     const struct target *t, uint32_t nseg,
			     size_t len)
{
	for (uint32_t y = 0; y < t->h; y++) {
		const uint8_t *top = s + (size_t)(a->first[y] - base) * stride;
		const uint8_t *b = top + a->base[y] * stride;
		const uint8_t *o = top + (1 - a->base[y]) * stride;
		uint8_t *d = t->px + (size_t)y * t->stride;
		__m256i k = _mm256_set1_epi16(a->mul[y]);

		for (uint32_t i = 0; i < nseg; i++) {
			size_t at = i * sseg, j = 0;
			uint8_t *di = d + i * t->chan;

			for (; j + 32 <= len; j += 32)
				vchunk2_avx2(b + at + j, o + at + j, k, di + j);
			if (j < len)
				vchunk2_avx2(b + at + len - 32, o + at + len - 32,
					     k, di + len - 32);
		}
	}
}

static AVX2 void vrow_avx2(const uint8_t *top, size_t stride,
			   const struct axis *a, uint32_t y, uint8_t *d,
			   size_t len)
{
	switch (a->np) {
	case 1: vrow_avx2_n(top, stride, a, y, d, len, 1); return;
	case 2: vrow_avx2_n(top, stride, a, y, d, len, 2); return;
	case 3: vrow_avx2_n(top, stride, a, y, d, len, 3); return;
	}
	vrow_avx2_n(top, stride, a, y, d, len, a->np);
}
#endif

static void vrow(enum ch_resample_isa isa, const uint8_t *top,
		 size_t stride, const struct axis *a, uint32_t y, uint8_t *d,
		 size_t len)
{
#if HAVE_AVX2
	if (isa == CH_RESAMPLE_AVX2) {
		vrow_avx2(top, stride, a, y, d, len);
		return;
	}
#endif
#if HAVE_SSE2
	if (isa >= CH_RESAMPLE_SSE2) {
		vrow_sse2(top, stride, a, y, d, len);
		return;
	}
#endif
	(void)isa;
	vrow_plain(top, stride, a, y, d, len);
}

/* The vertical pass into t: row i of s is source row base + i, and a
 * planar t takes its planes' rows from segments sseg bytes apart. */
static void vpass(enum ch_resample_isa isa, const uint8_t *s, size_t stride,
		  size_t sseg, uint32_t base, const struct axis *a,
		  const struct target *t)
{
	uint32_t nseg = t->step == 1 ? t->c : 1;
	size_t len = t->step == 1 ? t->w : (size_t)t->w * t->c;

#if HAVE_AVX2
	if (isa == CH_RESAMPLE_AVX2 && len >= 32 && two_taps(a)) {
		vpass2_avx2(s, stride, sseg, base, a, t, nseg, len);
		return;
	}
#endif
	for (uint32_t y = 0; y < t->h; y++) {
		const uint8_t *top = s + (size_t)(a->first[y] - base) * stride;

		for (uint32_t j = 0; j < nseg; j++)
			vrow(isa, top + j * sseg, stride, a, y,
			     t->px + (size_t)y * t->stride + j * t->chan, len);
	}
}

/* ------------------------------------------------------------------ */
/* The whole                                                           */

/* An axis that maps pixels one to one: each output pixel is a source
 * pixel (the weights come out 1 and 0 there too). */
static int identity(float f0, float f1, uint32_t out)
{
	return f0 == floorf(f0) && f1 - f0 == (float)out;
}

/* Rows [y0, y0 + t->h) of src from column x0, copied (interleaved). */
static void copy_rows(const struct ch_image *src, uint32_t x0, uint32_t y0,
		      const struct target *t)
{
	size_t n = (size_t)t->w * t->c;

	for (uint32_t y = 0; y < t->h; y++)
		memcpy(t->px + (size_t)y * t->stride,
		       src->px + (size_t)(y0 + y) * src->stride +
			       (size_t)x0 * src->c,
		       n);
}

/* Plans both axes (those that need it) for src into t. */
static int plan_both(struct ch_resampler *r, const struct ch_image *src,
		     const float *f, int flip, const struct target *t,
		     int hcopy, int vcopy)
{
	size_t len = t->step == 1 ? t->w : (size_t)t->w * t->c; /* vpass's */
	enum layout pairs = r->isa >= CH_RESAMPLE_SSE2 ? PAIRS : KEYS;
	enum layout v = r->isa == CH_RESAMPLE_AVX2 && len >= 32 ? TWO : pairs;
	enum layout h = src->c != 3		     ? KEYS
			: r->isa != CH_RESAMPLE_AVX2 ? pairs
			: t->step == 1		     ? GATHER
						     : SLOTS;

	if (!hcopy &&
	    (plan(r, &r->h, r->hk, src->w, f[0], f[2], t->w, flip, h) < 0 ||
	     reserve(&r->wide, wide_bytes(&r->h)) < 0))
		return -1;
	if (!vcopy && plan(r, &r->v, r->vk, src->h, f[1], f[3], t->h, 0, v) < 0)
		return -1;
	return 0;
}

/* Resamples box f (x0, y0, x1, y1) of src into t, checked.  A planar
 * target always takes the horizontal pass (a copy is an interleaved
 * one), the identity's single tap of weight 1 where nothing moves. */
static int resample(struct ch_resampler *r, const struct ch_image *src,
		    const float *f, int flip, const struct target *t)
{
	int planar = t->step == 1 && t->c > 1;
	int hcopy = !planar && !flip && identity(f[0], f[2], t->w);
	int vcopy = identity(f[1], f[3], t->h);
	size_t m = (size_t)t->w * t->c;
	struct target tmp = {NULL, m, planar ? t->w : 1, planar ? 1 : t->c,
			     t->w, 0, t->c};

	if (plan_both(r, src, f, flip, t, hcopy, vcopy) < 0)
		return -1;
	if (vcopy && hcopy) {
		copy_rows(src, (uint32_t)f[0], (uint32_t)f[1], t);
	} else if (vcopy) {
		hpass(r, src, (uint32_t)f[1], (uint32_t)f[1] + t->h, &r->h, t);
	} else if (hcopy) {
		vpass(r->isa, src->px + (size_t)f[0] * src->c, src->stride, 0,
		      0, &r->v, t);
	} else {
		tmp.h = (uint32_t)(r->v.hi - r->v.lo);
		if (reserve(&r->tmp, tmp.h * m) < 0)
			return -1;
		tmp.px = r->tmp.p;
		hpass(r, src, (uint32_t)r->v.lo, (uint32_t)r->v.hi, &r->h,
		      &tmp);
		vpass(r->isa, tmp.px, m, tmp.chan, (uint32_t)r->v.lo, &r->v,
		      t);
	}
	return 0;
}

/* px_bytes: what a pixel takes in a row (c interleaved, 1 planar). */
static int check_image(const struct ch_image *im, const char *which,
		       uint32_t px_bytes, struct ch_error *err)
{
	if (!im->px || im->w == 0 || im->h == 0 || im->w > 65535 ||
	    im->h > 65535 || (im->c != 1 && im->c != 3) ||
	    im->stride < (size_t)im->w * px_bytes)
		return ch_error_set(err,
				    "cannot resample: bad %s image (%ux%u, %u "
				    "channels, stride %zu): sizes go from 1 to "
				    "65535, channels are 1 or 3",
				    which, im->w, im->h, im->c, im->stride);
	return 0;
}

/* The checks both layouts share; Pillow's on the box, on the float edges
 * actually used (a box that ends at src's edge to within float rounding
 * is inside). */
static int check(const struct ch_image *src, const struct ch_image *dst,
		 uint32_t dst_px_bytes, const float *f, double bw, double bh,
		 struct ch_error *err)
{
	if (check_image(src, "source", src->c, err) < 0 ||
	    check_image(dst, "target", dst_px_bytes, err) < 0)
		return -1;
	if (dst->c != src->c)
		return ch_error_set(err,
				    "cannot resample: %u channels into %u",
				    src->c, dst->c);
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

static int oom(struct ch_error *err, const struct ch_image *src,
	       const struct ch_image *dst)
{
	return ch_error_errno(err, ENOMEM, "cannot resample %ux%u to %ux%u",
			      src->w, src->h, dst->w, dst->h);
}

int ch_image_resample(struct ch_resampler *r, const struct ch_image *src,
		      double bx, double by, double bw, double bh, int flip,
		      struct ch_image *dst, struct ch_error *err)
{
	float f[4] = {(float)bx, (float)by, (float)(bx + bw),
		      (float)(by + bh)};
	struct target t = {dst->px, dst->stride, 1,	 dst->c,
			   dst->w,  dst->h,	 dst->c};

	if (check(src, dst, dst->c, f, bw, bh, err) < 0)
		return -1;
	if (resample(r, src, f, flip, &t) < 0)
		return oom(err, src, dst);
	return 0;
}

int ch_image_resample_planar(struct ch_resampler *r,
			     const struct ch_image *src, double bx, double by,
			     double bw, double bh, int flip,
			     const struct ch_image *dst, size_t plane,
			     struct ch_error *err)
{
	float f[4] = {(float)bx, (float)by, (float)(bx + bw),
		      (float)(by + bh)};
	struct target t = {dst->px, dst->stride, plane, 1,
			   dst->w,  dst->h,	 dst->c};

	if (check(src, dst, 1, f, bw, bh, err) < 0)
		return -1;
	if (dst->c > 1 &&
	    plane < (size_t)(dst->h - 1) * dst->stride + dst->w)
		return ch_error_set(err,
				    "cannot resample: planes %zu bytes apart "
				    "overlap (%u rows of %zu bytes)",
				    plane, dst->h, dst->stride);
	if (resample(r, src, f, flip, &t) < 0)
		return oom(err, src, dst);
	return 0;
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
