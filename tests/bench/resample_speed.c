/* resample_speed.c - how long ch_image_resample takes on the sizes the
 * image transforms see: grainy RGB images of 300x300 and 480x360, and
 * random-resized-crop boxes of a 480x400 image, each to 224x224, flipped
 * every other call.  Not a test: a timing harness, built by hand.
 *
 *	resample_speed [-r ROUNDS] [-n CALLS]
 *
 * Prints, per case and per code path the CPU runs (plain C, SSE2, AVX2;
 * then the planar output on the best), the best and the median over
 * ROUNDS rounds (default 15) of CALLS calls each (default 200), in ms
 * per call, and the ratio of the first line's median to each.  The
 * variants alternate within a round, so drift and noise hit them alike.
 *
 * Built against the library:
 *	make build/libchute.a
 *	cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Ilib tests/bench/resample_speed.c \
 *	   build/libchute.a -lm -o /tmp/resample_speed
 *
 * With a baseline (an older image/resample.c, compiled with its public
 * names prefixed by base_), the first line is that one, and the last
 * says how far the outputs are apart (largest and mean difference per
 * byte):
 *	cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Ilib -c OLD/image_resample.c \
 *	   -Dch_image_resample=base_image_resample \
 *	   -Dch_resampler_new=base_resampler_new \
 *	   -Dch_resampler_free=base_resampler_free \
 *	   -Dch_resample_support=base_resample_support -o /tmp/base.o
 *	cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Ilib -DBASELINE \
 *	   tests/bench/resample_speed.c /tmp/base.o build/libchute.a -lm \
 *	   -o /tmp/resample_speed */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "image/image.h"
#include "image/testing.h"

#ifdef BASELINE
struct ch_resampler *base_resampler_new(void);
void base_resampler_free(struct ch_resampler *r);
int base_image_resample(struct ch_resampler *r, const struct ch_image *src,
			double bx, double by, double bw, double bh, int flip,
			struct ch_image *dst, struct ch_error *err);
#endif

#define OUT 224
#define NBOX 64

static uint64_t rng = 88172645463325252ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

/* Gradients with noise: what a grainy photo's pixels look like to the
 * filter (the time does not depend on them, the differences do). */
static struct ch_image grainy(uint32_t w, uint32_t h)
{
	struct ch_image im = {malloc((size_t)w * h * 3), w, h, 3,
			      (size_t)w * 3};

	for (size_t i = 0; i < (size_t)w * h * 3; i++) {
		uint32_t x = (uint32_t)(i / 3 % w), y = (uint32_t)(i / 3 / w);
		uint32_t k = (uint32_t)(i % 3);
		int v = (int)(k == 0   ? x * 255 / w
			      : k == 1 ? y * 255 / h
				       : (x + y) * 127 / (w + h)) +
			(int)(rnd() % 81) - 40;

		im.px[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
	}
	return im;
}

struct box {
	double x, y, w, h;
};

struct bench_case {
	const char *name;
	struct ch_image src;
	struct box box[NBOX];
	int nbox;
};

/* torchvision's RandomResizedCrop boxes (scale 0.08-1, ratio 3/4-4/3),
 * rejection sampled, in whole pixels as the transform gives them. */
static void rrc_boxes(struct bench_case *c)
{
	uint32_t w = c->src.w, h = c->src.h;

	for (c->nbox = 0; c->nbox < NBOX;) {
		double area = w * h * (0.08 + 0.92 * (rnd() % 10000) / 1e4);
		double ar = 0.75 + (4.0 / 3 - 0.75) * (rnd() % 10000) / 1e4;
		uint32_t bw = (uint32_t)sqrt(area * ar);
		uint32_t bh = (uint32_t)sqrt(area / ar);

		if (bw < 1 || bh < 1 || bw > w || bh > h)
			continue;
		c->box[c->nbox++] = (struct box){rnd() % (w - bw + 1),
						 rnd() % (h - bh + 1), bw, bh};
	}
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

typedef int resample_fn(struct ch_resampler *, const struct ch_image *,
			double, double, double, double, int,
			struct ch_image *, struct ch_error *);

/* Planar output, in ch_image_resample's signature. */
static int planar(struct ch_resampler *r, const struct ch_image *src,
		  double bx, double by, double bw, double bh, int flip,
		  struct ch_image *dst, struct ch_error *err)
{
	struct ch_image d = {dst->px, dst->w, dst->h, dst->c, dst->w};

	return ch_image_resample_planar(r, src, bx, by, bw, bh, flip, &d,
					(size_t)dst->w * dst->h, err);
}

/* ms per call over n calls; exits on an error. */
static double time_calls(resample_fn *fn, struct ch_resampler *r,
			 const struct bench_case *c, int n, uint8_t *out)
{
	struct ch_image dst = {out, OUT, OUT, 3, OUT * 3};
	struct ch_error err;
	double t0 = now();

	for (int i = 0; i < n; i++) {
		const struct box *b = &c->box[i % c->nbox];

		if (fn(r, &c->src, b->x, b->y, b->w, b->h, i & 1, &dst,
		       &err) < 0) {
			fprintf(stderr, "resample_speed: %s\n", err.msg);
			exit(2);
		}
	}
	return (now() - t0) * 1e3 / n;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#ifdef BASELINE
/* Largest and mean byte difference, new against baseline, over every box
 * of the case, flipped and not. */
static void compare(struct ch_resampler *r, struct ch_resampler *b,
		    const struct bench_case *c)
{
	static uint8_t x[OUT * OUT * 3], y[OUT * OUT * 3];
	struct ch_image dx = {x, OUT, OUT, 3, OUT * 3};
	struct ch_image dy = {y, OUT, OUT, 3, OUT * 3};
	struct ch_error err;
	double sum = 0;
	int worst = 0;

	for (int i = 0; i < 2 * c->nbox; i++) {
		const struct box *bx = &c->box[i / 2];

		if (ch_image_resample(r, &c->src, bx->x, bx->y, bx->w, bx->h,
				      i & 1, &dx, &err) < 0 ||
		    base_image_resample(b, &c->src, bx->x, bx->y, bx->w, bx->h,
					i & 1, &dy, &err) < 0) {
			fprintf(stderr, "resample_speed: %s\n", err.msg);
			exit(2);
		}
		for (size_t j = 0; j < sizeof(x); j++) {
			int d = abs(x[j] - y[j]);

			worst = d > worst ? d : worst;
			sum += d;
		}
	}
	printf("  against the baseline: largest difference %d, mean %.4f\n",
	       worst, sum / (2.0 * c->nbox * sizeof(x)));
}
#endif

#define MAX_ROUNDS 101
#define MAX_VARIANTS 6

/* What is timed: a function, and a resampler limited to one path. */
struct variant {
	const char *name;
	resample_fn *fn;
	struct ch_resampler *r;
	double t[MAX_ROUNDS];
};

/* The baseline first if there is one, then every path this CPU runs,
 * then the planar output on the best. */
static int variants(struct variant *v)
{
	static const char *const names[] = {"plain C", "SSE2", "AVX2"};
	int n = 0;

#ifdef BASELINE
	v[n++] = (struct variant){"baseline", base_image_resample,
				  base_resampler_new(), {0}};
#endif
	for (int isa = CH_RESAMPLE_PLAIN; isa <= CH_RESAMPLE_AVX2; isa++) {
		struct ch_resampler *r = ch_resampler_new();

		if ((int)ch_resampler_limit(r, (enum ch_resample_isa)isa) !=
		    isa) {
			ch_resampler_free(r);
			break;
		}
		v[n++] = (struct variant){names[isa], ch_image_resample, r,
					  {0}};
	}
	v[n++] = (struct variant){"CHW, best", planar, ch_resampler_new(),
				  {0}};
	return n;
}

static void run_case(const struct bench_case *c, int rounds, int n)
{
	static uint8_t out[OUT * OUT * 3];
	static struct variant v[MAX_VARIANTS];
	int nv = variants(v);
	double ref;

	printf("%s (%ux%u source, %d boxes, to %dx%d)\n", c->name, c->src.w,
	       c->src.h, c->nbox, OUT, OUT);
	for (int i = 0; i < nv; i++) /* warm: buffers grown, caches */
		time_calls(v[i].fn, v[i].r, c, n / 4 + 1, out);
	for (int k = 0; k < rounds; k++) /* alternating, against drift */
		for (int i = 0; i < nv; i++)
			v[i].t[k] = time_calls(v[i].fn, v[i].r, c, n, out);
	for (int i = 0; i < nv; i++)
		qsort(v[i].t, rounds, sizeof(double), by_value);
	ref = v[0].t[rounds / 2];
	for (int i = 0; i < nv; i++)
		printf("  %-10s best %.4f ms  median %.4f ms  %5.2fx\n",
		       v[i].name, v[i].t[0], v[i].t[rounds / 2],
		       ref / v[i].t[rounds / 2]);
#ifdef BASELINE
	compare(v[nv - 1].r, v[0].r, c);
	base_resampler_free(v[0].r);
	v[0].r = NULL;
#endif
	for (int i = 0; i < nv; i++)
		ch_resampler_free(v[i].r);
}

int main(int argc, char **argv)
{
	struct bench_case cases[3] = {
		{"300x300 whole", grainy(300, 300), {{0, 0, 300, 300}}, 1},
		{"480x360 whole", grainy(480, 360), {{0, 0, 480, 360}}, 1},
		{"random-resized-crop", grainy(480, 400), {{0, 0, 0, 0}}, 0},
	};
	int rounds = 15, n = 200, opt;

	while ((opt = getopt(argc, argv, "r:n:")) != -1) {
		if (opt == 'r')
			rounds = atoi(optarg);
		else if (opt == 'n')
			n = atoi(optarg);
		else
			goto usage;
	}
	if (optind != argc || rounds < 1 || rounds > MAX_ROUNDS || n < 1)
		goto usage;
	rrc_boxes(&cases[2]);
	for (int i = 0; i < 3; i++) {
		run_case(&cases[i], rounds, n);
		free(cases[i].src.px);
	}
	return 0;
usage:
	fprintf(stderr, "usage: resample_speed [-r ROUNDS] [-n CALLS]\n");
	return 2;
}
