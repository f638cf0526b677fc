/* image/testing.h - switches of image/ that only tests and benchmarks
 * use (tests/unit, tests/bench): which code decodes a JPEG's scan, which
 * code path resamples.  The product always takes the defaults. */
#ifndef CH_IMAGE_TESTING_H
#define CH_IMAGE_TESTING_H

#include "image/image.h"

/* Who entropy-decodes a baseline JPEG's scan: chute's own decoder
 * (image/jpeg_huff.h), which yields libjpeg's coefficients faster, built for
 * the CPU (the default) or portable, or libjpeg itself.  For tests and
 * comparisons. */
enum ch_entropy {
	CH_ENTROPY_CHUTE,
	CH_ENTROPY_CHUTE_PORTABLE,
	CH_ENTROPY_LIBJPEG,
};
void ch_image_decoder_set_entropy(struct ch_image_decoder *d,
				  enum ch_entropy who);

/* The resampler's code paths, slowest first.  All give the same bytes
 * (integer sums, exact in any order); ch_resampler_new takes the fastest
 * this CPU runs (AVX2 where it has it: checked at run time). */
enum ch_resample_isa {
	CH_RESAMPLE_PLAIN, /* plain C: other CPUs, and the reference */
	CH_RESAMPLE_SSE2,  /* the x86-64 baseline */
	CH_RESAMPLE_AVX2
};

/* For tests and benchmarks: makes r take `most`, or the CPU's best path
 * where that one is slower.  Returns the path r now takes. */
enum ch_resample_isa ch_resampler_limit(struct ch_resampler *r,
					enum ch_resample_isa most);

/* For tests: makes r plan enlarging windows by the loops of any size,
 * not by their copies unrolled for 3 taps (the same weights either
 * way, which a test checks), when general is set. */
void ch_resampler_plan_general(struct ch_resampler *r, int general);

/* For tests: how many axes r has planned, and how many plans it keeps
 * for keys that came back (image/resample.c, struct kept). */
void ch_resampler_plan_counts(const struct ch_resampler *r,
			      uint64_t *planned, size_t *kept);

#endif
