/* transform/random.c - the random numbers of augmentations: a
 * counter-based stream per (seed, epoch, sample, op), so that a sample's
 * crop and flip depend on nothing but those four, whichever worker runs
 * it; and the random-resized-crop box drawn from it. */
#include <math.h>

#include "transform/transform.h"
#include "common/xxh.h"


void ch_rng_init(struct ch_rng *r, uint64_t seed, uint64_t epoch,
		 uint64_t sample, uint64_t op)
{
	uint64_t key[4] = { seed, epoch, sample, op };
	r->s = XXH3_64bits(key, sizeof(key));
}

/* splitmix64: a good 64-bit output from a counter. */
static uint64_t next(struct ch_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double ch_rng_uniform(struct ch_rng *r)
{
	return (double)(next(r) >> 11) * 0x1.0p-53;
}

uint64_t ch_rng_int(struct ch_rng *r, uint64_t lo, uint64_t hi)
{
	unsigned __int128 m = (unsigned __int128)next(r) * (hi - lo + 1);
	return lo + (uint64_t)(m >> 64);
}

static uint32_t round_even(double x)
{
	return (uint32_t)rint(x); /* like Python's round(): halves to even */
}

void ch_rrc_box(struct ch_rng *r, uint32_t w, uint32_t h,
		const double scale[2], const double ratio[2], uint32_t box[4])
{
	double area = (double)w * h;
	double lr0 = log(ratio[0]), lr1 = log(ratio[1]);
	for (int attempt = 0; attempt < 10; attempt++) {
		double target = area * (scale[0] + (scale[1] - scale[0]) *
						       ch_rng_uniform(r));
		double aspect = exp(lr0 + (lr1 - lr0) * ch_rng_uniform(r));
		uint32_t cw = round_even(sqrt(target * aspect));
		uint32_t ch = round_even(sqrt(target / aspect));
		if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
			uint32_t top = (uint32_t)ch_rng_int(r, 0, h - ch);
			uint32_t left = (uint32_t)ch_rng_int(r, 0, w - cw);
			box[0] = left, box[1] = top, box[2] = cw, box[3] = ch;
			return;
		}
	}
	/* ten misses: the largest centred box within the ratios */
	double in_ratio = (double)w / h;
	uint32_t cw = w, ch = h;
	if (in_ratio < ratio[0])
		ch = round_even(w / ratio[0]);
	else if (in_ratio > ratio[1])
		cw = round_even(h * ratio[1]);
	box[0] = (w - cw) / 2;
	box[1] = (h - ch) / 2;
	box[2] = cw;
	box[3] = ch;
}
