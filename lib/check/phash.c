/* check/phash.c - a 64-bit perceptual hash (dHash) of an image, for
 * near-duplicates: the image decoded small and gray, averaged down to 9x8
 * cells, and one bit per cell telling whether it is darker than its right
 * neighbour.  Re-encoding, resizing and mild noise move few bits; a
 * different picture moves about half of them. */
#include <string.h>

#include <png.h>
#include <turbojpeg.h>

#include "check/internal.h"

#define HASH_W 9
#define HASH_H 8
#define MAX_PIXELS ((size_t)1 << 28)

/* Sum of the pixels of gray image g (w x h) in [x0, x1) x [y0, y1). */
static uint64_t area_sum(const uint8_t *g, size_t w, size_t x0, size_t x1,
			 size_t y0, size_t y1)
{
	uint64_t sum = 0;
	for (size_t y = y0; y < y1; y++)
		for (size_t x = x0; x < x1; x++)
			sum += g[y * w + x];
	return sum;
}

/* Cell i of n over a side of len pixels: at least one pixel, so images
 * smaller than the grid repeat pixels rather than leave cells empty. */
static void cell(size_t i, size_t n, size_t len, size_t *a, size_t *b)
{
	*a = i * len / n;
	*b = (i + 1) * len / n;
	if (*b <= *a)
		*b = *a + 1;
	if (*b > len) {
		*b = len;
		*a = len - 1;
	}
}

static uint64_t dhash(const uint8_t *g, size_t w, size_t h)
{
	uint32_t grid[HASH_H][HASH_W];
	uint64_t bits = 0;
	for (size_t cy = 0; cy < HASH_H; cy++) {
		size_t y0, y1;
		cell(cy, HASH_H, h, &y0, &y1);
		for (size_t cx = 0; cx < HASH_W; cx++) {
			size_t x0, x1;
			cell(cx, HASH_W, w, &x0, &x1);
			uint64_t n = (uint64_t)(x1 - x0) * (y1 - y0);
			/* 8 bits of fraction keep near-equal cells apart */
			grid[cy][cx] = (uint32_t)((area_sum(g, w, x0, x1, y0,
							    y1) << 8) / n);
		}
	}
	for (size_t cy = 0; cy < HASH_H; cy++)
		for (size_t cx = 0; cx + 1 < HASH_W; cx++)
			bits = bits << 1 |
			       (grid[cy][cx] < grid[cy][cx + 1] ? 1u : 0u);
	return bits;
}

/* The smallest DCT scaling that keeps the image at least as large as the
 * grid: decoding at 1/8 skips most of the work. */
static tjscalingfactor pick_scale(int w, int h)
{
	int n = 0;
	tjscalingfactor *sf = tjGetScalingFactors(&n), best = { 1, 1 };
	long best_area = (long)w * h;
	for (int i = 0; sf && i < n; i++) {
		int sw = TJSCALED(w, sf[i]), sh = TJSCALED(h, sf[i]);
		if (sw >= HASH_W && sh >= HASH_H && (long)sw * sh < best_area) {
			best = sf[i];
			best_area = (long)sw * sh;
		}
	}
	return best;
}

static int phash_jpeg(struct check_decoder *d, const uint8_t *data,
		      size_t size, uint64_t *out)
{
	int w = 0, h = 0, sub = 0, space = 0; /* see check_jpeg */
	unsigned char *in = (unsigned char *)(uintptr_t)data;
	if (check_decoder_fresh_jpeg(d) < 0 ||
	    tjDecompressHeader3(d->tj, in, size, &w, &h, &sub, &space) < 0 ||
	    w <= 0 || h <= 0)
		return -1;
	tjscalingfactor sf = pick_scale(w, h);
	int sw = TJSCALED(w, sf), sh = TJSCALED(h, sf);
	if ((size_t)sw * (size_t)sh > MAX_PIXELS ||
	    check_decoder_room(d, (size_t)sw * (size_t)sh) < 0)
		return -1;
	if (tjDecompress2(d->tj, in, size, d->pixels, sw, 0, sh, TJPF_GRAY,
			  0) < 0 && tjGetErrorCode(d->tj) != TJERR_WARNING)
		return -1;
	*out = dhash(d->pixels, (size_t)sw, (size_t)sh);
	return 0;
}

static int phash_png(struct check_decoder *d, const uint8_t *data,
		     size_t size, uint64_t *out)
{
	png_image img;
	int rc = -1;
	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&img, data, size))
		goto done;
	img.format = PNG_FORMAT_GRAY;
	size_t need = PNG_IMAGE_SIZE(img);
	if (img.width == 0 || img.height == 0 || need > MAX_PIXELS ||
	    check_decoder_room(d, need) < 0 ||
	    !png_image_finish_read(&img, NULL, d->pixels, 0, NULL))
		goto done;
	*out = dhash(d->pixels, img.width, img.height);
	rc = 0;
done:
	png_image_free(&img);
	return rc;
}

int check_phash(struct check_decoder *d, enum check_type type,
		const uint8_t *data, size_t size, uint64_t *out)
{
	if (type == TYPE_JPEG)
		return phash_jpeg(d, data, size, out);
	if (type == TYPE_PNG)
		return phash_png(d, data, size, out);
	return -1;
}
