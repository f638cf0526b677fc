/* test_image.c - the image kernels: JPEG and PNG decoding (whole and by
 * region), the Pillow-compatible resampler, and their errors.
 *
 * Images are made here: JPEGs with TurboJPEG's compressor, PNGs with
 * libpng's writer, from seeded gradients with noise.  TurboJPEG's own
 * decoder is the reference for JPEG pixels; a slow double-precision
 * resampler of the same filter is the reference for resampling. */
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>
#include <turbojpeg.h>

#include "image/image.h"
#include "image/testing.h"
#include "unit.h"

/* ------------------------------------------------------------------ */
/* Making images                                                       */

static uint64_t rng_state;

static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}

static uint32_t rnd_below(uint32_t n)
{
	return rnd() % n;
}

/* Gradients in different directions per channel, with noise. */
static uint8_t *pattern(uint32_t w, uint32_t h, uint32_t c, uint64_t seed)
{
	uint8_t *px = malloc((size_t)w * h * c);

	rng_state = seed * 2654435761u + 1;
	for (size_t j = 0; j < (size_t)w * h * c; j++) {
		uint32_t x = (uint32_t)(j / c % w), y = (uint32_t)(j / c / w);
		uint32_t i = (uint32_t)(j % c);
		int v = (int)(i == 0 ? x * 255 / w : i == 1 ? y * 255 / h
					     : (x + y) * 127 / (w + h));

		v += (int)rnd_below(41) - 20;
		px[j] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
	}
	return px;
}

struct blob {
	uint8_t *p;
	size_t n;
};

/* A JPEG of px (pixel format pf, TurboJPEG's) in a malloc'd blob. */
static struct blob jpeg_of(const uint8_t *px, uint32_t w, uint32_t h, int pf,
			   int subsamp, int flags)
{
	tjhandle tj = tjInitCompress();
	unsigned char *buf = NULL;
	unsigned long n = 0;
	struct blob b = {NULL, 0};

	if (tj && tjCompress2(tj, px, (int)w, 0, (int)h, pf, &buf, &n, subsamp,
			      90, flags) == 0) {
		b.p = malloc(n);
		memcpy(b.p, buf, n);
		b.n = n;
	}
	tjFree(buf);
	if (tj)
		tjDestroy(tj);
	return b;
}

/* TurboJPEG's decode of the whole image at 1/denom. */
static uint8_t *tj_decode(struct blob b, uint32_t denom, int pf, uint32_t *w,
			  uint32_t *h)
{
	tjhandle tj = tjInitDecompress();
	int iw, ih, ss, cs;
	uint8_t *px = NULL;

	if (tj && tjDecompressHeader3(tj, b.p, b.n, &iw, &ih, &ss, &cs) == 0) {
		*w = ((uint32_t)iw + denom - 1) / denom;
		*h = ((uint32_t)ih + denom - 1) / denom;
		px = malloc((size_t)*w * *h * tjPixelSize[pf]);
		if (tjDecompress2(tj, b.p, b.n, px, (int)*w, 0, (int)*h, pf,
				  0) != 0) {
			free(px);
			px = NULL;
		}
	}
	if (tj)
		tjDestroy(tj);
	return px;
}

static void on_write(png_structp png, png_bytep data, size_t n)
{
	struct blob *b = png_get_io_ptr(png);

	b->p = realloc(b->p, b->n + n);
	memcpy(b->p + b->n, data, n);
	b->n += n;
}

static void on_flush(png_structp png)
{
	(void)png;
}

struct png_spec {
	int color, depth, interlace;
	const png_color *palette;
	int colors;
	const uint8_t *trns;
	int ntrns;
};

/* A PNG of rows (packed as libpng wants them: 16-bit samples big-endian). */
static struct blob png_of(const uint8_t *rows, uint32_t w, uint32_t h,
			  size_t rowbytes, const struct png_spec *s)
{
	struct blob b = {NULL, 0};
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL,
						  NULL, NULL);
	png_infop info = png_create_info_struct(png);
	png_bytep *rp = malloc(h * sizeof(png_bytep));

	if (setjmp(png_jmpbuf(png))) {
		free(b.p);
		b.p = NULL;
		b.n = 0;
		goto done;
	}
	for (uint32_t y = 0; y < h; y++)
		rp[y] = (png_bytep)rows + y * rowbytes;
	png_set_write_fn(png, &b, on_write, on_flush);
	png_set_IHDR(png, info, w, h, s->depth, s->color, s->interlace,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	if (s->palette)
		png_set_PLTE(png, info, s->palette, s->colors);
	if (s->trns)
		png_set_tRNS(png, info, s->trns, s->ntrns, NULL);
	png_write_info(png, info);
	png_write_image(png, rp);
	png_write_end(png, info);
done:
	png_destroy_write_struct(&png, &info);
	free(rp);
	return b;
}

/* The largest difference between a decoded region and the same pixels of
 * a whole reference image (w wide, c channels). */
static int max_diff(const struct ch_decoded *o, const uint8_t *ref,
		    uint32_t w, uint32_t c)
{
	int m = 0;

	for (uint32_t y = 0; y < o->img.h; y++)
		for (size_t i = 0; i < (size_t)o->img.w * c; i++) {
			int a = o->img.px[y * o->img.stride + i];
			int b = ref[((size_t)(o->y0 + y) * w + o->x0) * c + i];
			int d = abs(a - b);

			m = d > m ? d : m;
		}
	return m;
}

/* ------------------------------------------------------------------ */
/* Probing                                                             */

static void probe_reads_sizes_and_kinds(void)
{
	struct ch_image_decoder *d = ch_image_decoder_new();
	uint8_t *px = pattern(333, 251, 3, 1);
	struct blob j = jpeg_of(px, 333, 251, TJPF_RGB, TJSAMP_420, 0);
	struct png_spec rgb = {.color = PNG_COLOR_TYPE_RGB, .depth = 8};
	struct blob p = png_of(px, 77, 33, 77 * 3, &rgb);
	struct ch_image_info info;
	struct ch_error err;

	if (!CHECK(ch_image_probe(d, j.p, j.n, &info, &err) == 0))
		unit_note("%s", err.msg);
	CHECK(info.kind == CH_IMAGE_JPEG && info.w == 333 && info.h == 251);
	if (!CHECK(ch_image_probe(d, p.p, p.n, &info, &err) == 0))
		unit_note("%s", err.msg);
	CHECK(info.kind == CH_IMAGE_PNG && info.w == 77 && info.h == 33);
	/* a height of 0 in IHDR */
	memset(p.p + 20, 0, 4);
	CHECK(ch_image_probe(d, p.p, p.n, &info, &err) < 0);
	CHECK(strstr(err.msg, "77x0") != NULL);
	CHECK(ch_image_probe(d, (const uint8_t *)"GIF89a", 6, &info, &err) < 0);
	CHECK_STR(err.msg, "not a JPEG or PNG image (starts with 4 bytes 47 49 "
			   "46 38)");
	CHECK(ch_image_probe(d, (const uint8_t *)"", 0, &info, &err) < 0);
	CHECK_STR(err.msg, "not a JPEG or PNG image (0 bytes)");
	/* a JPEG signature and nothing valid after it */
	CHECK(ch_image_probe(d, (const uint8_t *)"\xff\xd8\xff\x00xyz", 7,
			     &info, &err) < 0);
	CHECK(strncmp(err.msg, "cannot decode JPEG: ", 20) == 0);
	CHECK(ch_image_decode(d, (const uint8_t *)"\xff\xd8\xff\x00xyz", 7,
			      &(struct ch_decode_req){3, 0, 0, 1, 1, 1},
			      &(struct ch_decoded){0}, &err) < 0);
	CHECK(strncmp(err.msg, "cannot decode JPEG: ", 20) == 0);
	free(px);
	free(j.p);
	free(p.p);
	ch_image_decoder_free(d);
}

/* ------------------------------------------------------------------ */
/* JPEG                                                                */

struct jcase {
	uint32_t w, h;
	int gray, subsamp, flags;
};

static const struct jcase jcases[] = {
	{333, 251, 0, TJSAMP_420, 0},
	{333, 251, 0, TJSAMP_444, 0},
	{250, 187, 0, TJSAMP_422, 0},
	{201, 95, 0, TJSAMP_420, TJFLAG_PROGRESSIVE},
	{17, 9, 0, TJSAMP_420, 0},
	{141, 77, 1, TJSAMP_GRAY, 0},
};

static struct blob jcase_jpeg(const struct jcase *jc, uint64_t seed)
{
	uint8_t *px = pattern(jc->w, jc->h, jc->gray ? 1 : 3, seed);
	int pf = jc->gray ? TJPF_GRAY : TJPF_RGB;
	struct blob b = jpeg_of(px, jc->w, jc->h, pf, jc->subsamp, jc->flags);

	free(px);
	return b;
}

static int tj_format(uint32_t channels)
{
	return channels == 3 ? TJPF_RGB : TJPF_GRAY;
}

/* The whole image with ch channels, against TurboJPEG's decode. */
static void whole_equals_turbojpeg(struct ch_image_decoder *d, size_t i,
				   uint32_t ch)
{
	const struct jcase *jc = &jcases[i];
	struct blob b = jcase_jpeg(jc, i);
	struct ch_decode_req req = {ch, 0, 0, jc->w, jc->h, 1};
	struct ch_decoded o;
	struct ch_error err;
	uint32_t w, h;
	uint8_t *ref = tj_decode(b, 1, tj_format(ch), &w, &h);

	if (!CHECK(ch_image_decode(d, b.p, b.n, &req, &o, &err) == 0)) {
		unit_note("case %zu: %s", i, err.msg);
	} else {
		CHECK(o.x0 == 0 && o.y0 == 0 && o.img.w == w &&
		      o.img.h == h && o.img.c == ch);
		if (!CHECK(max_diff(&o, ref, w, ch) == 0))
			unit_note("case %zu, %u channels", i, ch);
	}
	free(ref);
	free(b.p);
}

static void jpeg_whole_decode_equals_turbojpeg(void)
{
	struct ch_image_decoder *d = ch_image_decoder_new();

	for (size_t i = 0; i < UNIT_COUNT(jcases); i++) {
		whole_equals_turbojpeg(d, i, 1);
		whole_equals_turbojpeg(d, i, 3);
	}
	ch_image_decoder_free(d);
}

/* On one axis: the decoded [at, at + n) of a `size`-pixel image at 1/dn
 * holds the requested [x, x + w) of the full-size image. */
static int covers(uint32_t at, uint32_t n, uint32_t x, uint32_t w,
		  uint32_t dn, uint32_t size)
{
	return at <= x / dn && at + n <= size &&
	       ((at + n) * dn >= x + w || at + n == size);
}

/* One region at one scale against TurboJPEG's whole decode at that scale;
 * returns the largest difference, or -1 if the region is wrong. */
static int region_diff(struct ch_image_decoder *d, struct blob b,
		       const struct ch_decode_req *req, const uint8_t *ref,
		       uint32_t rw, uint32_t rh)
{
	struct ch_decoded o;
	struct ch_error err;
	uint32_t dn = req->denom;

	if (ch_image_decode(d, b.p, b.n, req, &o, &err) < 0) {
		unit_note("%s", err.msg);
		return -1;
	}
	/* the decoded block holds the requested pixels, scaled */
	if (o.denom != dn || o.sw != rw || o.sh != rh ||
	    !covers(o.x0, o.img.w, req->x, req->w, dn, rw) ||
	    !covers(o.y0, o.img.h, req->y, req->h, dn, rh)) {
		unit_note("region %ux%u at (%u, %u) 1/%u gave %ux%u at "
			  "(%u, %u)", req->w, req->h, req->x, req->y, dn,
			  o.img.w, o.img.h, o.x0, o.y0);
		return -1;
	}
	return max_diff(&o, ref, rw, req->channels);
}

/* Regions (edges included) at 1/1 to 1/8 give the very pixels of a whole
 * decode at that scale, exactly: rows after jpeg_skip_scanlines are exact,
 * and the crop's outer columns, where fancy upsampling of subsampled
 * chroma differs (by up to 14 before the decoder left them out), are not
 * returned. */
/* A random region of a w x h image: some large, some small, some at the
 * right or bottom edge. */
static struct ch_decode_req random_region(int k, uint32_t w, uint32_t h,
					  uint32_t ch, uint32_t dn)
{
	struct ch_decode_req req = {ch, 0, 0, 0, 0, dn};

	req.w = 1 + rnd_below(k < 20 ? w : w / 3 + 1);
	req.h = 1 + rnd_below(k < 20 ? h : h / 3 + 1);
	req.x = k % 4 == 1 ? w - req.w : rnd_below(w - req.w + 1);
	req.y = k % 4 == 2 ? h - req.h : rnd_below(h - req.h + 1);
	return req;
}

/* 60 regions of case i at 1/dn; the largest difference, -1 if wrong. */
static int regions_at_scale(struct ch_image_decoder *d, size_t i,
			    uint32_t dn)
{
	const struct jcase *jc = &jcases[i];
	struct blob b = jcase_jpeg(jc, i);
	uint32_t ch = jc->gray || dn == 4 ? 1 : 3, rw, rh;
	uint8_t *ref = tj_decode(b, dn, tj_format(ch), &rw, &rh);
	int worst = 0;

	for (int k = 0; k < 60 && worst >= 0; k++) {
		struct ch_decode_req req;
		int m;

		req = random_region(k, jc->w, jc->h, ch, dn);
		m = region_diff(d, b, &req, ref, rw, rh);

		worst = m < 0 || m > worst ? m : worst;
	}
	free(ref);
	free(b.p);
	return worst;
}

static void jpeg_regions_equal_whole_decode_at_every_scale(void)
{
	struct ch_image_decoder *d = ch_image_decoder_new();

	rng_state = 99;
	for (size_t i = 0; i < UNIT_COUNT(jcases); i++)
		for (uint32_t dn = 1; dn <= 8; dn *= 2) {
			int worst = regions_at_scale(d, i, dn);

			if (!CHECK(worst == 0))
				unit_note("case %zu at 1/%u: largest "
					  "difference %d", i, dn, worst);
		}
	ch_image_decoder_free(d);
}

static int decode_all(struct ch_image_decoder *d, struct blob b, uint32_t ch,
		      struct ch_decoded *o, struct ch_error *err)
{
	struct ch_image_info info;
	struct ch_decode_req req = {ch, 0, 0, 0, 0, 1};

	if (ch_image_probe(d, b.p, b.n, &info, err) < 0)
		return -1;
	req.w = info.w;
	req.h = info.h;
	return ch_image_decode(d, b.p, b.n, &req, o, err);
}

static void jpeg_corruption_is_an_error(void)
{
	struct ch_image_decoder *d = ch_image_decoder_new();
	struct blob b = jcase_jpeg(&jcases[0], 7);
	struct blob half = {b.p, b.n / 2};
	struct ch_decode_req top = {3, 0, 0, 333, 16, 1};
	struct ch_decoded o;
	struct ch_error err;

	CHECK(decode_all(d, half, 3, &o, &err) < 0);
	if (!CHECK(strstr(err.msg, "premature end of JPEG file") != NULL))
		unit_note("%s", err.msg);
	/* the rows above the cut decode: nothing below the region is read */
	if (!CHECK(ch_image_decode(d, half.p, half.n, &top, &o, &err) == 0))
		unit_note("%s", err.msg);
	/* an EOI marker in the middle of the scan */
	b.p[b.n / 2] = 0xff;
	b.p[b.n / 2 + 1] = 0xd9;
	CHECK(decode_all(d, b, 3, &o, &err) < 0);
	if (!CHECK(strstr(err.msg, "corrupt JPEG data") != NULL))
		unit_note("%s", err.msg);
	/* the decoder is still good for the next image */
	free(b.p);
	b = jcase_jpeg(&jcases[0], 7);
	if (!CHECK(decode_all(d, b, 3, &o, &err) == 0))
		unit_note("%s", err.msg);
	free(b.p);
	ch_image_decoder_free(d);
}

/* b without its DQT segments, in a malloc'd blob. */
static struct blob without_dqt(struct blob b)
{
	struct blob o = {malloc(b.n), 0};
	size_t i = 2;

	memcpy(o.p, b.p, 2); /* SOI */
	o.n = 2;
	while (i + 4 <= b.n && b.p[i] == 0xff && b.p[i + 1] != 0xda) {
		size_t len = 2 + ((size_t)b.p[i + 2] << 8 | b.p[i + 3]);

		if (b.p[i + 1] != 0xdb) {
			memcpy(o.p + o.n, b.p + i, len);
			o.n += len;
		}
		i += len;
	}
	memcpy(o.p + o.n, b.p + i, b.n - i); /* the scan and EOI */
	o.n += b.n - i;
	return o;
}

/* libjpeg keeps an image's tables for the next one: a JPEG without its
 * own must be refused whatever the decoder decoded before, or a sample's
 * pixels would depend on which worker took it. */
static void jpeg_tables_do_not_carry_over(void)
{
	struct ch_image_decoder *d = ch_image_decoder_new();
	struct blob b = jcase_jpeg(&jcases[0], 3);
	struct blob bare = without_dqt(b);
	struct ch_decoded o;
	struct ch_error err;

	CHECK(bare.n < b.n);
	if (!CHECK(decode_all(d, b, 3, &o, &err) == 0))
		unit_note("%s", err.msg);
	CHECK(decode_all(d, bare, 3, &o, &err) < 0);
	if (!CHECK(strstr(err.msg, "quantization table 0x00 was not "
				"defined") != NULL))
		unit_note("%s", err.msg);
	free(bare.p);
	free(b.p);
	ch_image_decoder_free(d);
}

/* Where b's first quantization table's first value is, or 0. */
static size_t first_dqt_value(struct blob b)
{
	size_t i = 2;

	while (i + 5 < b.n && b.p[i] == 0xff && b.p[i + 1] != 0xda) {
		if (b.p[i + 1] == 0xdb)
			return i + 5;
		i += 2 + ((size_t)b.p[i + 2] << 8 | b.p[i + 3]);
	}
	return 0;
}

/* A decode of the bytes a probe just read takes up the header it read:
 * the pixels of a fresh decoder's decode; and where the header changed
 * in place in between (a quantization table here), the new header's. */
static void probed_header_is_reused_only_for_the_same_bytes(void)
{
	struct ch_image_decoder *d = ch_image_decoder_new();
	struct ch_image_decoder *fresh = ch_image_decoder_new();
	struct blob b = jcase_jpeg(&jcases[0], 5);
	size_t q = first_dqt_value(b), n;
	struct ch_image_info info;
	struct ch_decode_req req = {3, 0, 0, 0, 0, 1};
	struct ch_decoded o, f;
	struct ch_error err;
	uint8_t *before;

	CHECK(q > 0);
	CHECK(ch_image_probe(d, b.p, b.n, &info, &err) == 0);
	req.w = info.w;
	req.h = info.h;
	CHECK(ch_image_decode(d, b.p, b.n, &req, &o, &err) == 0);
	CHECK(ch_image_decode(fresh, b.p, b.n, &req, &f, &err) == 0);
	n = o.img.stride * o.img.h;
	CHECK(f.img.stride * f.img.h == n && memcmp(o.img.px, f.img.px, n) == 0);
	before = malloc(n);
	memcpy(before, o.img.px, n);
	CHECK(ch_image_probe(d, b.p, b.n, &info, &err) == 0);
	b.p[q] = (uint8_t)(b.p[q] + 9);
	CHECK(ch_image_decode(d, b.p, b.n, &req, &o, &err) == 0);
	CHECK(ch_image_decode(fresh, b.p, b.n, &req, &f, &err) == 0);
	CHECK(memcmp(o.img.px, f.img.px, n) == 0);
	CHECK(memcmp(o.img.px, before, n) != 0);
	free(before);
	free(b.p);
	ch_image_decoder_free(d);
	ch_image_decoder_free(fresh);
}

/* PIL's CMYK to RGB of what Adobe stores: 255 - ink. */
static void cmyk_expect(const uint8_t *s, uint8_t *rgb)
{
	int nk = s[3];

	for (int i = 0; i < 3; i++) {
		int t = (255 - s[i]) * nk + 128;
		rgb[i] = (uint8_t)(nk - (((t >> 8) + t) >> 8));
	}
}

static void cmyk_jpeg_converts_like_pil(void)
{
	struct ch_image_decoder *d = ch_image_decoder_new();
	uint8_t *px = pattern(64, 48, 4, 3), *ref, rgb[3];
	struct blob b;
	struct ch_decoded o;
	struct ch_error err;
	uint32_t w, h;
	int worst = 0;

	for (size_t i = 0; i < 16 * 48; i++) /* a flat red band on top */
		memcpy(px + i * 4, "\xff\x00\x00\xff", 4);
	b = jpeg_of(px, 64, 48, TJPF_CMYK, TJSAMP_444, 0);
	ref = tj_decode(b, 1, TJPF_CMYK, &w, &h);
	if (!CHECK(decode_all(d, b, 3, &o, &err) == 0)) {
		unit_note("%s", err.msg);
		goto done;
	}
	for (size_t i = 0; i < (size_t)w * h; i++) {
		cmyk_expect(ref + 4 * i, rgb);
		for (int k = 0; k < 3; k++)
			if (abs(rgb[k] - o.img.px[3 * i + k]) > worst)
				worst = abs(rgb[k] - o.img.px[3 * i + k]);
	}
	CHECK(worst == 0);
	CHECK(o.img.px[0] > 250 && o.img.px[1] < 5 && o.img.px[2] < 5);
done:
	free(px);
	free(ref);
	free(b.p);
	ch_image_decoder_free(d);
}

/* ------------------------------------------------------------------ */
/* PNG                                                                 */

/* Decodes b's rows [y, y + h) with ch channels and compares them with
 * expect (the whole image, w * ch bytes a row). */
static void png_check(struct ch_image_decoder *d, struct blob b, uint32_t ch,
		      uint32_t y, uint32_t h, const uint8_t *expect,
		      uint32_t w, const char *what)
{
	struct ch_decode_req req = {ch, 0, y, w, h, 1};
	struct ch_decoded o;
	struct ch_error err;

	if (!CHECK(ch_image_decode(d, b.p, b.n, &req, &o, &err) == 0)) {
		unit_note("%s: %s", what, err.msg);
		return;
	}
	if (!CHECK(o.x0 == 0 && o.y0 <= y && o.img.w == w &&
		   o.y0 + o.img.h >= y + h && o.img.c == ch) ||
	    !CHECK(max_diff(&o, expect, w, ch) == 0))
		unit_note("%s, %u channels, rows %u + %u", what, ch, y, h);
}

/* PNG has no DCT scaling: any denom asked decodes at full size. */
static void png_scale_is_one(struct ch_image_decoder *d, struct blob b,
			     uint32_t w, uint32_t h)
{
	struct ch_decode_req req = {3, 2, 4, w - 2, h - 4, 4};
	struct ch_decoded o;
	struct ch_error err;

	if (!CHECK(ch_image_decode(d, b.p, b.n, &req, &o, &err) == 0))
		return;
	CHECK(o.denom == 1 && o.sw == w && o.sh == h && o.x0 == 0 &&
	      o.y0 == 4 && o.img.w == w && o.img.h == h - 4);
}

static uint8_t pil_luma(const uint8_t *p)
{
	return (uint8_t)((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >>
			 16);
}

/* The expected gray and RGB of an RGB image. */
static void rgb_views(const uint8_t *rgb, size_t n, uint8_t *gray)
{
	for (size_t i = 0; i < n; i++)
		gray[i] = pil_luma(rgb + 3 * i);
}

static void png_check_both(struct ch_image_decoder *d, struct blob b,
			   const uint8_t *rgb, const uint8_t *gray, uint32_t w,
			   uint32_t h, const char *what)
{
	png_check(d, b, 3, 0, h, rgb, w, what);
	png_check(d, b, 1, 0, h, gray, w, what);
	png_check(d, b, 3, h / 3, h / 2, rgb, w, what);
	png_check(d, b, 1, h - 1, 1, gray, w, what);
}

static void png_color_variants_decode_like_pil(void)
{
	enum { W = 45, H = 31, N = W * H };
	struct ch_image_decoder *d = ch_image_decoder_new();
	uint8_t *rgb = pattern(W, H, 3, 5), *src = malloc(N * 8);
	uint8_t gray[N];
	struct png_spec s = {.color = PNG_COLOR_TYPE_RGB, .depth = 8};
	struct blob b;

	rgb_views(rgb, N, gray);
	for (int il = 0; il <= 1; il++) {
		s.interlace = il ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE;
		s.color = PNG_COLOR_TYPE_RGB;
		s.depth = 8;
		b = png_of(rgb, W, H, W * 3, &s);
		png_check_both(d, b, rgb, gray, W, H, il ? "RGB adam7" : "RGB");
		png_scale_is_one(d, b, W, H);
		free(b.p);
		/* RGBA: alpha dropped, not composited */
		for (size_t i = 0; i < N; i++) {
			memcpy(src + 4 * i, rgb + 3 * i, 3);
			src[4 * i + 3] = (uint8_t)i;
		}
		s.color = PNG_COLOR_TYPE_RGB_ALPHA;
		b = png_of(src, W, H, W * 4, &s);
		png_check_both(d, b, rgb, gray, W, H, "RGBA");
		free(b.p);
		/* 16 bits: the high byte */
		for (size_t i = 0; i < N * 3; i++) {
			src[2 * i] = rgb[i];
			src[2 * i + 1] = (uint8_t)(255 - rgb[i]);
		}
		s.color = PNG_COLOR_TYPE_RGB;
		s.depth = 16;
		b = png_of(src, W, H, W * 6, &s);
		png_check_both(d, b, rgb, gray, W, H, "RGB 16");
		free(b.p);
	}
	free(rgb);
	free(src);
	ch_image_decoder_free(d);
}

static void png_gray_variants_decode_like_pil(void)
{
	enum { W = 45, H = 31, N = W * H };
	struct ch_image_decoder *d = ch_image_decoder_new();
	uint8_t *g = pattern(W, H, 1, 6), *src = malloc(N * 2), rgb[N * 3];
	struct png_spec s = {.color = PNG_COLOR_TYPE_GRAY, .depth = 8};
	uint8_t trns[2] = {0, 40};
	struct blob b;

	for (size_t i = 0; i < N * 3; i++)
		rgb[i] = g[i / 3];
	for (int il = 0; il <= 1; il++) {
		s.interlace = il ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE;
		s.color = PNG_COLOR_TYPE_GRAY;
		s.depth = 8;
		s.trns = trns; /* a transparent grey: ignored */
		s.ntrns = 1;
		b = png_of(g, W, H, W, &s);
		png_check_both(d, b, rgb, g, W, H, il ? "gray adam7" : "gray");
		free(b.p);
		s.trns = NULL;
		for (size_t i = 0; i < N; i++) {
			src[2 * i] = g[i];
			src[2 * i + 1] = (uint8_t)(i * 7);
		}
		s.color = PNG_COLOR_TYPE_GRAY_ALPHA;
		b = png_of(src, W, H, W * 2, &s);
		png_check_both(d, b, rgb, g, W, H, "gray + alpha");
		free(b.p);
		s.color = PNG_COLOR_TYPE_GRAY; /* same bytes: 16-bit gray */
		s.depth = 16;
		b = png_of(src, W, H, W * 2, &s);
		png_check_both(d, b, rgb, g, W, H, "gray 16");
		free(b.p);
	}
	free(g);
	free(src);
	ch_image_decoder_free(d);
}

static void png_palettes_and_low_depths_expand(void)
{
	enum { W = 45, H = 31, N = W * H };
	struct ch_image_decoder *d = ch_image_decoder_new();
	png_color pal[16];
	uint8_t idx[N], packed[H * ((W + 1) / 2)], rgb[N * 3], gray[N];
	uint8_t trns[16];
	struct png_spec s = {PNG_COLOR_TYPE_PALETTE, 8, PNG_INTERLACE_NONE,
			     pal, 16, trns, 16};
	struct blob b;

	rng_state = 17;
	for (int i = 0; i < 16; i++) {
		pal[i].red = (uint8_t)rnd();
		pal[i].green = (uint8_t)rnd();
		pal[i].blue = (uint8_t)rnd();
		trns[i] = (uint8_t)(i * 16);
	}
	memset(packed, 0, sizeof(packed));
	for (size_t i = 0; i < N; i++) {
		idx[i] = (uint8_t)rnd_below(16);
		memcpy(rgb + 3 * i, &pal[idx[i]], 3);
		packed[i / W * ((W + 1) / 2) + i % W / 2] |=
			(uint8_t)(idx[i] << (i % W % 2 ? 0 : 4));
	}
	rgb_views(rgb, N, gray);
	b = png_of(idx, W, H, W, &s);
	png_check_both(d, b, rgb, gray, W, H, "palette");
	free(b.p);
	s.depth = 4;
	s.interlace = PNG_INTERLACE_ADAM7;
	b = png_of(packed, W, H, (W + 1) / 2, &s);
	png_check_both(d, b, rgb, gray, W, H, "palette 4-bit adam7");
	free(b.p);
	/* 4-bit gray: 0..15 scaled to 0..255 */
	s = (struct png_spec){.color = PNG_COLOR_TYPE_GRAY, .depth = 4};
	for (size_t i = 0; i < N; i++)
		gray[i] = (uint8_t)(idx[i] * 17);
	for (size_t i = 0; i < N * 3; i++)
		rgb[i] = gray[i / 3];
	b = png_of(packed, W, H, (W + 1) / 2, &s);
	png_check_both(d, b, rgb, gray, W, H, "gray 4-bit");
	free(b.p);
	ch_image_decoder_free(d);
}

static void png_corruption_is_an_error(void)
{
	enum { W = 64, H = 40 };
	struct ch_image_decoder *d = ch_image_decoder_new();
	uint8_t *rgb = pattern(W, H, 3, 8);
	struct png_spec s = {.color = PNG_COLOR_TYPE_RGB, .depth = 8};
	struct blob b = png_of(rgb, W, H, W * 3, &s);
	struct blob half = {b.p, b.n / 2};
	struct ch_decoded o;
	struct ch_error err;

	CHECK(decode_all(d, half, 3, &o, &err) < 0);
	if (!CHECK(strncmp(err.msg, "cannot decode PNG: truncated PNG (at "
				    "byte ", 37) == 0))
		unit_note("%s", err.msg);
	b.p[b.n / 2] ^= 0x55; /* inside IDAT */
	CHECK(decode_all(d, b, 3, &o, &err) < 0);
	if (!CHECK(strncmp(err.msg, "cannot decode PNG: IDAT: ", 25) == 0))
		unit_note("%s", err.msg);
	b.p[b.n / 2] ^= 0x55;
	if (!CHECK(decode_all(d, b, 3, &o, &err) == 0))
		unit_note("%s", err.msg);
	/* a region outside the image */
	struct ch_decode_req req = {3, 10, 10, W, 1, 1};
	CHECK(ch_image_decode(d, b.p, b.n, &req, &o, &err) < 0);
	CHECK_STR(err.msg, "cannot decode: region 64x1 at (10, 10) is not "
			   "inside the 64x40 image");
	free(rgb);
	free(b.p);
	ch_image_decoder_free(d);
}

/* ------------------------------------------------------------------ */
/* Resampling                                                          */

/* The same filter in doubles, without the intermediate rounding: the
 * box edges as floats (as Pillow and the resampler take them), weights
 * on the triangle widened by the shrink factor, cut at the image's edges
 * and normalised.  Output i reads n[i] pixels from lo[i], weights
 * wt[i * kmax ...]. */
struct ref_axis {
	double *wt;
	int32_t *lo, *n;
	uint32_t kmax;
};

static struct ref_axis ref_axis(uint32_t size, double b0, double bsize,
				uint32_t out)
{
	double f0 = (float)b0, f1 = (float)(b0 + bsize);
	double scale = (f1 - f0) / out, fs = scale < 1 ? 1 : scale;
	struct ref_axis a = {NULL, malloc(4 * out), malloc(4 * out),
			     (uint32_t)(2 * ceil(fs) + 3)};

	a.wt = malloc(sizeof(double) * out * a.kmax);
	for (uint32_t i = 0; i < out; i++) {
		double center = f0 + (i + 0.5) * scale, sum = 0;
		double *w = a.wt + (size_t)i * a.kmax;
		int32_t j = (int32_t)fmax(0, floor(center - fs + 0.5)), m = 0;

		a.lo[i] = j;
		for (; j < (int32_t)size && j < center + fs + 0.5; j++, m++) {
			double x = fabs((j + 0.5 - center) / fs);

			w[m] = x < 1 ? 1 - x : 0;
			sum += w[m];
		}
		for (int32_t t = 0; t < m; t++)
			w[t] /= sum;
		a.n[i] = m;
	}
	return a;
}

static void ref_axis_free(struct ref_axis *a)
{
	free(a->wt);
	free(a->lo);
	free(a->n);
}

/* Output pixel (x, y), channel k, in doubles; with twice, rounded after
 * each pass as Pillow does (the bytes Pillow's 22-bit weights give, but
 * for a tie now and then). */
static double ref_pixel(const struct ch_image *s, const struct ref_axis *ax,
			const struct ref_axis *ay, uint32_t x, uint32_t y,
			uint32_t k, int twice)
{
	const double *wx = ax->wt + (size_t)x * ax->kmax;
	const double *wy = ay->wt + (size_t)y * ay->kmax;
	double v = 0;

	for (int32_t j = 0; j < ay->n[y]; j++) {
		size_t at = (size_t)(ay->lo[y] + j) * s->stride;
		const uint8_t *row = s->px + at;
		double h = 0;

		for (int32_t i = 0; i < ax->n[x]; i++)
			h += wx[i] * row[(size_t)(ax->lo[x] + i) * s->c + k];
		v += wy[j] * (twice ? floor(fmin(h, 255) + 0.5) : h);
	}
	return twice ? floor(fmin(v, 255) + 0.5) : v;
}

/* How far the resampler is from the references: the largest difference
 * from the exact value, and the largest and the total from Pillow's
 * bytes, over n bytes. */
struct ref_gap {
	double exact, twice_sum;
	int twice;
	size_t n;
};

static void ref_diff(struct ch_resampler *r, const struct ch_image *s,
		     double bx, double by, double bw, double bh, uint32_t ow,
		     uint32_t oh, struct ref_gap *g)
{
	size_t stride = (size_t)ow * s->c + 7; /* a stride wider than a row */
	struct ch_image d = {malloc(stride * oh), ow, oh, s->c, stride};
	struct ref_axis ax = ref_axis(s->w, bx, bw, ow);
	struct ref_axis ay = ref_axis(s->h, by, bh, oh);
	struct ch_error err;

	if (ch_image_resample(r, s, bx, by, bw, bh, 0, &d, &err) < 0) {
		unit_note("%s", err.msg);
		g->exact = 1e9;
		oh = 0;
	}
	for (size_t i = 0; i < (size_t)ow * oh * s->c; i++) {
		uint32_t k = (uint32_t)(i % s->c), x = (uint32_t)(i / s->c % ow);
		uint32_t y = (uint32_t)(i / s->c / ow);
		int px = d.px[y * stride + x * s->c + k];
		double e = fabs(px - ref_pixel(s, &ax, &ay, x, y, k, 0));
		int t = abs(px - (int)ref_pixel(s, &ax, &ay, x, y, k, 1));

		g->exact = e > g->exact ? e : g->exact;
		g->twice = t > g->twice ? t : g->twice;
		g->twice_sum += t;
		g->n++;
	}
	ref_axis_free(&ax);
	ref_axis_free(&ay);
	free(d.px);
}

static struct ch_image image_of(uint32_t w, uint32_t h, uint32_t c,
				uint64_t seed)
{
	return (struct ch_image){pattern(w, h, c, seed), w, h, c,
				 (size_t)w * c};
}

/* Within 1 of the exact value (the resampler rounds twice, after each
 * pass, as Pillow does) and of Pillow's bytes (its 14- to 22-bit weights
 * move a rounding now and then). */
static void near_reference(struct ch_resampler *r, const struct ch_image *s,
			   double bx, double by, double bw, double bh,
			   uint32_t ow, uint32_t oh, struct ref_gap *all)
{
	struct ref_gap g = {0, 0, 0, 0};

	ref_diff(r, s, bx, by, bw, bh, ow, oh, &g);
	if (!CHECK(g.exact < 1.0 + 1e-9 && g.twice <= 1))
		unit_note("box %gx%g at (%g, %g) -> %ux%u, %u channels: %g "
			  "from exact, %d from Pillow",
			  bw, bh, bx, by, ow, oh, s->c, g.exact, g.twice);
	all->twice_sum += g.twice_sum;
	all->n += g.n;
}

/* Random boxes of a 500 x 375 image, random sizes, edges included. */
static void random_boxes(struct ch_resampler *r, const struct ch_image *s,
			 struct ref_gap *all)
{
	rng_state = 5;
	for (int k = 0; k < 40; k++) {
		double bw = 1 + rnd_below(4990) / 10.0;
		double bh = 1 + rnd_below(3740) / 10.0;
		double bx = (500 - bw) * rnd_below(1000) / 1000;
		double by = (375 - bh) * rnd_below(1000) / 1000;

		near_reference(r, s, k % 3 ? bx : 0, k % 5 ? by : 375 - bh, bw,
			       bh, 1 + rnd_below(300), 1 + rnd_below(300),
			       all);
	}
}

/* Within 1 of both references everywhere, and Pillow's bytes but for 1
 * in 100. */
static void resample_matches_double_reference(void)
{
	struct ch_resampler *r = ch_resampler_new();
	struct ref_gap all = {0, 0, 0, 0};

	for (uint32_t c = 1; c <= 3; c += 2) {
		struct ch_image s = image_of(500, 375, c, c);
		struct ch_image wide = image_of(30000, 3, c, 9);
		struct ch_image tall = image_of(3, 30000, c, 10);

		/* shrink by 2.5 and enlarge by 1.7, fractional boxes */
		near_reference(r, &s, 10.3, 7.6, 250.0, 200.0, 100, 80, &all);
		near_reference(r, &s, 101.25, 33.5, 68.0, 51.0, 116, 87, &all);
		random_boxes(r, &s, &all);
		/* 10000-fold shrinks: windows of thousands of taps, whose
		 * weights take 22 bits */
		near_reference(r, &wide, 0.5, 0, 29999.0, 3, 3, 2, &all);
		near_reference(r, &tall, 0, 7.25, 3, 29990.5, 2, 3, &all);
		free(s.px);
		free(wide.px);
		free(tall.px);
	}
	if (!CHECK(all.twice_sum < 0.01 * all.n))
		unit_note("mean difference from Pillow's bytes %g",
			  all.twice_sum / all.n);
	ch_resampler_free(r);
}

static int same_pixels(const struct ch_image *a, const uint8_t *b,
		       size_t bstride)
{
	for (uint32_t y = 0; y < a->h; y++)
		if (memcmp(a->px + y * a->stride, b + y * bstride,
			   (size_t)a->w * a->c) != 0)
			return 0;
	return 1;
}

static int mirrored(const struct ch_image *a, const struct ch_image *b)
{
	size_t c = a->c;

	for (uint32_t y = 0; y < a->h; y++)
		for (uint32_t x = 0; x < a->w; x++)
			if (memcmp(a->px + y * a->stride + x * c,
				   b->px + y * b->stride + (a->w - 1 - x) * c,
				   c) != 0)
				return 0;
	return 1;
}

static void identity_copies_and_flip_mirrors(void)
{
	struct ch_resampler *r = ch_resampler_new();
	struct ch_image s = image_of(120, 90, 3, 2);
	uint8_t buf[64 * 48 * 3], flip[64 * 48 * 3];
	struct ch_image d = {buf, 64, 48, 3, 64 * 3};
	struct ch_image f = {flip, 64, 48, 3, 64 * 3};
	struct ch_error err;

	/* an integer box of the output's size: a copy */
	CHECK(ch_image_resample(r, &s, 13, 21, 64, 48, 0, &d, &err) == 0);
	CHECK(same_pixels(&d, s.px + 21 * s.stride + 13 * 3, s.stride));
	/* and mirrored, through the resampling path */
	CHECK(ch_image_resample(r, &s, 13, 21, 64, 48, 1, &f, &err) == 0);
	CHECK(mirrored(&d, &f));
	/* a real resampling, flipped: the mirror image, byte for byte */
	CHECK(ch_image_resample(r, &s, 3.7, 1.2, 101.9, 80.3, 0, &d, &err) ==
	      0);
	CHECK(ch_image_resample(r, &s, 3.7, 1.2, 101.9, 80.3, 1, &f, &err) ==
	      0);
	CHECK(mirrored(&d, &f));
	/* whole-image identity; gray */
	free(s.px);
	s = image_of(64, 48, 1, 3);
	d.c = 1;
	d.stride = 64;
	CHECK(ch_image_resample(r, &s, 0, 0, 64, 48, 0, &d, &err) == 0);
	CHECK(same_pixels(&d, s.px, s.stride));
	free(s.px);
	ch_resampler_free(r);
}

/* The box plus margin m on every side, clamped to s, as an image of its
 * own (s's pixels, not copied); *x0, *y0 is its corner in s. */
static struct ch_image cut(const struct ch_image *s, double bx, double by,
			   double bw, double bh, double mx, double my,
			   double *x0, double *y0)
{
	double x1 = fmin(s->w, ceil(bx + bw + mx));
	double y1 = fmin(s->h, ceil(by + bh + my));

	*x0 = fmax(0, floor(bx - mx));
	*y0 = fmax(0, floor(by - my));
	return (struct ch_image){
		s->px + (size_t)*y0 * s->stride + (size_t)*x0 * s->c,
		(uint32_t)(x1 - *x0), (uint32_t)(y1 - *y0), s->c, s->stride};
}

/* Bytes that differ by more than tol between resampling the box in s and
 * in the box cut out with ch_resample_support's margin. */
static int cut_differs(struct ch_resampler *r, const struct ch_image *s,
		       double bx, double by, double bw, double bh,
		       uint32_t ow, uint32_t oh, int tol)
{
	uint8_t a[90 * 70 * 3], b[90 * 70 * 3];
	struct ch_image da = {a, ow, oh, 3, ow * 3};
	struct ch_image db = {b, ow, oh, 3, ow * 3};
	struct ch_error err;
	double x0, y0;
	struct ch_image c = cut(s, bx, by, bw, bh, ch_resample_support(bw, ow),
				ch_resample_support(bh, oh), &x0, &y0);
	int n = 0;

	if (ch_image_resample(r, s, bx, by, bw, bh, 0, &da, &err) < 0 ||
	    ch_image_resample(r, &c, bx - x0, by - y0, bw, bh, 0, &db,
			      &err) < 0)
		return ow * oh * 3;
	for (size_t i = 0; i < (size_t)ow * oh * 3; i++)
		n += abs(a[i] - b[i]) > tol;
	return n;
}

/* Cutting the source to the box plus ch_resample_support on every side
 * changes nothing: the margin is enough.  Box edges in 1/64ths are the
 * same floats in both images: the same bytes.  Other edges round to
 * float differently once shifted (Pillow takes floats), which moves a
 * weight by an ulp and, now and then, a byte by 1. */
static void support_margin_is_enough(void)
{
	struct ch_resampler *r = ch_resampler_new();
	struct ch_image s = image_of(300, 200, 3, 4);
	int exact = 0, near = 0;

	rng_state = 11;
	for (int k = 0; k < 400; k++) {
		double bw = 1 + rnd_below(239 * 64) / 64.0;
		double bh = 1 + rnd_below(159 * 64) / 64.0;
		double bx = floor((300 - bw) * rnd_below(1024) / 16) / 64;
		double by = floor((200 - bh) * rnd_below(1024) / 16) / 64;
		uint32_t ow = 1 + rnd_below(90), oh = 1 + rnd_below(70);

		if (k % 2)
			near += cut_differs(r, &s, bx + 1e-3, by + 1e-3,
					    bw - 2e-3, bh - 2e-3, ow, oh, 1);
		else
			exact += cut_differs(r, &s, bx, by, bw, bh, ow, oh, 0);
	}
	if (!CHECK(exact == 0 && near == 0))
		unit_note("%d and %d bytes differ", exact, near);
	free(s.px);
	ch_resampler_free(r);
}

static void bad_boxes_are_errors(void)
{
	struct ch_resampler *r = ch_resampler_new();
	struct ch_image s = image_of(50, 40, 3, 1);
	uint8_t buf[10 * 10 * 3];
	struct ch_image d = {buf, 10, 10, 3, 30};
	struct ch_error err;

	CHECK(ch_image_resample(r, &s, -0.5, 0, 10, 10, 0, &d, &err) < 0);
	CHECK(strstr(err.msg, "not inside the 50x40 image") != NULL);
	CHECK(ch_image_resample(r, &s, 45, 0, 10, 10, 0, &d, &err) < 0);
	CHECK(ch_image_resample(r, &s, 0, 0, 0, 10, 0, &d, &err) < 0);
	CHECK(ch_image_resample(r, &s, 0, 0, NAN, 10, 0, &d, &err) < 0);
	/* the box reaching the edge exactly, computed in doubles */
	CHECK(ch_image_resample(r, &s, 0.1, 0.3, 50 - 0.1, 40 - 0.3, 0, &d,
				&err) == 0);
	d.c = 1;
	CHECK(ch_image_resample(r, &s, 0, 0, 10, 10, 0, &d, &err) < 0);
	CHECK_STR(err.msg, "cannot resample: 3 channels into 1");
	free(s.px);
	ch_resampler_free(r);
}

/* ------------------------------------------------------------------ */
/* The resampler's paths, and its planar output                        */

/* A random case: a source that ends where its buffer does (ASan sees a
 * read past it), now and then with rows further apart than they need;
 * a box (some in whole pixels, some whole rows), an output size (some a
 * copy's, some tiny: windows of hundreds of taps) and a flip. */
struct rcase {
	struct ch_image src;
	double bx, by, bw, bh;
	uint32_t ow, oh;
	int flip;
};

static struct rcase random_case(int k)
{
	uint32_t c = k % 4 ? 3 : 1, w = 1 + rnd_below(k % 5 ? 400 : 30);
	uint32_t h = 1 + rnd_below(k % 7 ? 300 : 30);
	size_t stride = (size_t)w * c + (k % 3 == 0 ? rnd_below(9) : 0);
	size_t size = stride * (h - 1) + (size_t)w * c;
	struct rcase rc = {{malloc(size), w, h, c, stride}, 0, 0, 0, 0,
			   0, 0, k % 2};

	for (size_t i = 0; i < size; i++)
		rc.src.px[i] = (uint8_t)rnd();
	rc.bw = w * (1 + rnd_below(1000)) / 1000.0;
	rc.bh = h * (1 + rnd_below(1000)) / 1000.0;
	rc.bx = (w - rc.bw) * rnd_below(1001) / 1000.0;
	rc.by = (h - rc.bh) * rnd_below(1001) / 1000.0;
	if (k % 3 == 1) {
		rc.bw = ceil(rc.bw);
		rc.bh = ceil(rc.bh);
		rc.bx = floor(w - rc.bw) * rnd_below(1001) / 1000;
		rc.by = floor(h - rc.bh) * rnd_below(1001) / 1000;
		rc.bx = floor(rc.bx);
		rc.by = floor(rc.by);
	}
	rc.ow = 1 + rnd_below(k % 3 ? 260 : 24);
	rc.oh = 1 + rnd_below(k % 3 ? 260 : 24);
	if (k % 6 == 4)
		rc.ow = (uint32_t)rc.bw;
	if (k % 5 == 4)
		rc.oh = (uint32_t)rc.bh;
	rc.ow += rc.ow == 0;
	rc.oh += rc.oh == 0;
	return rc;
}

/* The case on path isa, interleaved (rows exactly as long as they need)
 * into a new buffer, or NULL. */
static uint8_t *run_hwc(struct ch_resampler *r, const struct rcase *rc)
{
	size_t n = (size_t)rc->ow * rc->oh * rc->src.c;
	struct ch_image d = {malloc(n), rc->ow, rc->oh, rc->src.c,
			     (size_t)rc->ow * rc->src.c};
	struct ch_error err;

	if (ch_image_resample(r, &rc->src, rc->bx, rc->by, rc->bw, rc->bh,
			      rc->flip, &d, &err) < 0) {
		unit_note("%s", err.msg);
		free(d.px);
		return NULL;
	}
	return d.px;
}

/* The case planar, rows pad bytes apart beyond the width and planes
 * gap bytes beyond the rows; 1 if it is hwc rearranged. */
static int planar_matches(struct ch_resampler *r, const struct rcase *rc,
			  const uint8_t *hwc, uint32_t pad, uint32_t gap)
{
	uint32_t w = rc->ow, h = rc->oh, c = rc->src.c;
	size_t stride = w + pad, plane = stride * (h - 1) + w + gap;
	struct ch_image d = {malloc(plane * (c - 1) + stride * (h - 1) + w),
			     w, h, c, stride};
	struct ch_error err;
	int same = 1;

	if (ch_image_resample_planar(r, &rc->src, rc->bx, rc->by, rc->bw,
				     rc->bh, rc->flip, &d, plane, &err) < 0) {
		unit_note("%s", err.msg);
		same = 0;
	}
	for (uint32_t y = 0; y < h && same; y++)
		for (uint32_t x = 0; x < w; x++)
			for (uint32_t k = 0; k < c; k++)
				same &= d.px[k * plane + y * stride + x] ==
					hwc[((size_t)y * w + x) * c + k];
	free(d.px);
	return same;
}

static const char *case_name(const struct rcase *rc)
{
	static char s[200];

	snprintf(s, sizeof(s), "%ux%u, %u channels, box %gx%g at (%g, %g) "
		 "to %ux%u%s", rc->src.w, rc->src.h, rc->src.c, rc->bw,
		 rc->bh, rc->bx, rc->by, rc->ow, rc->oh,
		 rc->flip ? ", flipped" : "");
	return s;
}

/* A resampler on every path this CPU runs, plain C first, into r;
 * returns how many. */
static int open_paths(struct ch_resampler *r[3])
{
	int paths = 0;

	for (int isa = CH_RESAMPLE_PLAIN; isa <= CH_RESAMPLE_AVX2; isa++) {
		r[paths] = ch_resampler_new();
		if ((int)ch_resampler_limit(r[paths],
					    (enum ch_resample_isa)isa) == isa)
			paths++;
		else
			ch_resampler_free(r[paths]);
	}
	return paths;
}

static void close_paths(struct ch_resampler *r[3], int paths)
{
	for (int i = 0; i < paths; i++)
		ch_resampler_free(r[i]);
}

/* Every path this CPU runs (SSE2 and AVX2 here on x86-64) gives the
 * plain C path's bytes, and the planar output the same bytes
 * rearranged, on every path. */
static void paths_and_layouts_give_the_same_bytes(void)
{
	struct ch_resampler *r[3];
	int paths = open_paths(r), bad = 0;

	CHECK(paths >= 1);
	rng_state = 17;
	for (int k = 0; k < 300 && bad < 3; k++) {
		struct rcase rc = random_case(k);
		uint8_t *ref = run_hwc(r[0], &rc);
		size_t n = (size_t)rc.ow * rc.oh * rc.src.c;

		for (int i = 0; i < paths && ref; i++) {
			uint8_t *got = i ? run_hwc(r[i], &rc) : ref;
			int ok = got && memcmp(got, ref, n) == 0 &&
				 planar_matches(r[i], &rc, ref, k % 3, k % 5);

			if (!CHECK(ok)) {
				unit_note("path %d: %s", i, case_name(&rc));
				bad++;
			}
			if (got != ref)
				free(got);
		}
		CHECK(ref != NULL);
		free(ref);
		free(rc.src.px);
	}
	for (int i = 0; i < paths; i++)
		ch_resampler_free(r[i]);
}

/* An identity box, planar: the source's bytes, rearranged. */
static void planar_identity_copies(void)
{
	struct ch_resampler *r = ch_resampler_new();
	struct ch_image s = image_of(120, 90, 3, 2);
	uint8_t buf[3 * 64 * 48];
	struct ch_image d = {buf, 64, 48, 3, 64};
	struct ch_error err;
	int same = 1;

	CHECK(ch_image_resample_planar(r, &s, 13, 21, 64, 48, 0, &d, 64 * 48,
				       &err) == 0);
	for (uint32_t y = 0; y < 48; y++) {
		const uint8_t *row = s.px + (21 + y) * s.stride + 13 * 3;

		for (uint32_t x = 0; x < 64; x++)
			for (uint32_t k = 0; k < 3; k++)
				same &= buf[k * 64 * 48 + y * 64 + x] ==
					row[x * 3 + k];
	}
	CHECK(same);
	free(s.px);
	ch_resampler_free(r);
}

/* Enlarging rows 2 taps at a time: pairs of bytes (a, b), every a with
 * 32 b, against the weights of 4 source rows to 2 ... 24, 61, 137 and 300
 * rows: the source's rows 0 and 1 hold a, rows 2 and 3 b, and the box
 * from row 1 to 3 (no window cut short: 15 fractional bits) or from row
 * 0 to 4 (some windows of 1 tap: 14).  Every path gives the plain C
 * path's bytes. */
static void two_tap_rows_give_the_same_bytes(void)
{
	static const struct { double by, bh; } box[2] = {{1, 2}, {0, 4}};
	static const uint32_t big[3] = {61, 137, 300};
	struct ch_resampler *r[3];
	enum { W = 8192 };
	struct ch_image s = {malloc(4 * W), W, 4, 1, W};
	uint8_t *want = malloc(300 * W), *got = malloc(300 * W);
	struct ch_error err;
	int paths = open_paths(r), bad = 0;

	for (uint32_t x = 0; x < W; x++) {
		s.px[x] = s.px[W + x] = (uint8_t)(x >> 5);
		s.px[2 * W + x] = s.px[3 * W + x] = (uint8_t)(x * 37);
	}
	for (int i = 0; i < 2 * 26 && bad < 3; i++) {
		uint32_t j = (uint32_t)i % 26, oh = j < 23 ? 2 + j : big[j - 23];
		double by = box[i / 26].by, bh = box[i / 26].bh;
		struct ch_image d = {want, W, oh, 1, W};

		CHECK(ch_image_resample(r[0], &s, 0, by, W, bh, 0, &d, &err) ==
		      0);
		d.px = got;
		for (int p = 1; p < paths; p++) {
			CHECK(ch_image_resample(r[p], &s, 0, by, W, bh, 0, &d,
						&err) == 0);
			if (!CHECK(memcmp(got, want, (size_t)oh * W) == 0)) {
				unit_note("path %d, box %d, %u rows", p, i / 26,
					  oh);
				bad++;
			}
		}
	}
	for (int i = 0; i < paths; i++)
		ch_resampler_free(r[i]);
	free(s.px);
	free(want);
	free(got);
}

/* Enlarging RGB columns 2 taps at a time into planes: the pixels of
 * columns 0 and 1 hold bytes a, those of columns 2 and 3 bytes b, every
 * a with 32 b (a row's 3 channels, 3 pairs), against the weights of 4
 * source columns to 16 ... 39, 61, 137 and 300, from column 1 to 3 (15
 * fractional bits) or 0 to 4 (14), mirrored or not.  Every path gives
 * the plain C path's bytes. */
static void two_tap_columns_give_the_same_bytes(void)
{
	static const struct { double bx, bw; } box[2] = {{1, 2}, {0, 4}};
	static const uint32_t big[3] = {61, 137, 300};
	enum { H = 8192 / 3 + 1 };
	struct ch_resampler *r[3];
	struct ch_image s = {malloc(12 * H), 4, H, 3, 12};
	uint8_t *want = malloc(3 * 300 * H), *got = malloc(3 * 300 * H);
	struct ch_error err;
	int paths = open_paths(r), bad = 0;

	for (uint32_t y = 0; y < H; y++)
		for (uint32_t k = 0; k < 3; k++) {
			uint32_t x = 3 * y + k;
			uint8_t *row = s.px + 12 * y + k;

			row[0] = row[3] = (uint8_t)(x >> 5);
			row[6] = row[9] = (uint8_t)(x * 37);
		}
	for (int i = 0; i < 4 * 27 && bad < 3; i++) {
		uint32_t j = (uint32_t)i % 27, ow = j < 24 ? 16 + j : big[j - 24];
		double bx = box[i / 27 % 2].bx, bw = box[i / 27 % 2].bw;
		int flip = i / 54;
		struct ch_image d = {want, ow, H, 3, ow};
		size_t plane = (size_t)ow * H;

		CHECK(ch_image_resample_planar(r[0], &s, bx, 0, bw, H, flip, &d,
					       plane, &err) == 0);
		d.px = got;
		for (int p = 1; p < paths; p++) {
			CHECK(ch_image_resample_planar(r[p], &s, bx, 0, bw, H,
						       flip, &d, plane,
						       &err) == 0);
			if (!CHECK(memcmp(got, want, 3 * plane) == 0)) {
				unit_note("path %d, box %d, %u columns%s", p,
					  i / 27 % 2, ow,
					  flip ? ", flipped" : "");
				bad++;
			}
		}
	}
	close_paths(r, paths);
	free(want);
	free(got);
	free(s.px);
}

/* Enlarging windows (3 taps at most) are planned by loops unrolled for
 * them, and the vertical AVX2 pass then keeps only the weights of 2-tap
 * windows: on every path, the bytes of the general loops' plans,
 * interleaved and planar, flipped or not, at the edges and inside. */
static void unrolled_plans_give_the_same_bytes(void)
{
	struct ch_resampler *r[3], *g[3];
	int paths = open_paths(r), bad = 0;

	CHECK(open_paths(g) == paths);
	for (int i = 0; i < paths; i++)
		ch_resampler_plan_general(g[i], 1);
	rng_state = 29;
	for (int k = 0; k < 200 && bad < 3; k++) {
		struct rcase rc = random_case(k);

		rc.ow = (uint32_t)ceil(rc.bw) + rnd_below(k % 4 ? 300 : 3);
		rc.oh = (uint32_t)ceil(rc.bh) + rnd_below(k % 4 ? 300 : 3);
		for (int i = 0; i < paths; i++) {
			uint8_t *want = run_hwc(g[i], &rc);
			uint8_t *got = run_hwc(r[i], &rc);
			size_t n = (size_t)rc.ow * rc.oh * rc.src.c;
			int ok = want && got && memcmp(got, want, n) == 0 &&
				 planar_matches(r[i], &rc, want, k % 3, k % 5);

			if (!CHECK(ok)) {
				unit_note("path %d: %s", i, case_name(&rc));
				bad++;
			}
			free(want);
			free(got);
		}
		free(rc.src.px);
	}
	close_paths(r, paths);
	close_paths(g, paths);
}

/* The resampler plans an axis once for a run of the same box and size:
 * boxes A, B, A, flipped A, B give what fresh resamplers give. */
static void plans_are_reused_only_for_the_same_box(void)
{
	static const double box[5][4] = {{3.5, 2, 100, 80},
					 {3.5, 2, 100, 81},
					 {3.5, 2, 100, 80},
					 {3.5, 2, 100, 80},
					 {3.25, 2, 100, 81}};
	struct ch_resampler *r = ch_resampler_new();
	struct ch_image s = image_of(120, 90, 3, 6);
	uint8_t a[50 * 40 * 3], b[50 * 40 * 3];
	struct ch_image da = {a, 50, 40, 3, 150}, db = {b, 50, 40, 3, 150};
	struct ch_error err;

	for (int i = 0; i < 5; i++) {
		struct ch_resampler *fresh = ch_resampler_new();
		const double *x = box[i];

		CHECK(ch_image_resample(r, &s, x[0], x[1], x[2], x[3], i == 3,
					&da, &err) == 0);
		CHECK(ch_image_resample(fresh, &s, x[0], x[1], x[2], x[3],
					i == 3, &db, &err) == 0);
		if (!CHECK(memcmp(a, b, sizeof(a)) == 0))
			unit_note("box %d", i);
		ch_resampler_free(fresh);
	}
	free(s.px);
	ch_resampler_free(r);
}

/* Eval resizes every image of one size alike: the plans of boxes that
 * come back are kept, and taken again, with the bytes of a fresh
 * resampler's.  Boxes met once each (random crops) keep nothing. */
static void plans_of_boxes_that_come_back_are_kept(void)
{
	struct ch_resampler *r = ch_resampler_new();
	struct ch_image s = image_of(120, 90, 3, 7);
	uint8_t a[56 * 44 * 3], b[56 * 44 * 3];
	struct ch_image da = {a, 56, 44, 3, 168}, db = {b, 56, 44, 3, 168};
	struct ch_error err;
	uint64_t planned;
	size_t kept;

	for (int round = 0; round < 4; round++)
		for (int i = 0; i < 20; i++) {
			struct ch_resampler *fresh = ch_resampler_new();
			double x = 1 + i * 0.75, w = 100 - i * 1.5;

			CHECK(ch_image_resample(r, &s, x, 2, w, 80 - i, i % 2,
						&da, &err) == 0);
			CHECK(ch_image_resample(fresh, &s, x, 2, w, 80 - i,
						i % 2, &db, &err) == 0);
			if (!CHECK(memcmp(a, b, sizeof(a)) == 0))
				unit_note("round %d, box %d", round, i);
			ch_resampler_free(fresh);
		}
	ch_resampler_plan_counts(r, &planned, &kept);
	/* twice each axis of each box (met, then kept), not 4 times */
	CHECK_EQ_U64(planned, 2 * 2 * 20);
	CHECK_EQ_U64(kept, 2 * 20 - 2); /* 2 in use, in the resampler */
	ch_resampler_free(r);

	r = ch_resampler_new();
	for (int i = 0; i < 100; i++)
		CHECK(ch_image_resample(r, &s, 1 + i * 0.125, 2, 90,
					60 + i * 0.25, 0, &da, &err) == 0);
	ch_resampler_plan_counts(r, &planned, &kept);
	CHECK_EQ_U64(planned, 2 * 100);
	CHECK_EQ_U64(kept, 0);
	free(s.px);
	ch_resampler_free(r);
}

static void planar_bad_layouts_are_errors(void)
{
	struct ch_resampler *r = ch_resampler_new();
	struct ch_image s = image_of(50, 40, 3, 1);
	uint8_t buf[3 * 10 * 10];
	struct ch_image d = {buf, 10, 10, 3, 10};
	struct ch_error err;

	CHECK(ch_image_resample_planar(r, &s, 0, 0, 20, 20, 0, &d, 99,
				       &err) < 0);
	CHECK_STR(err.msg, "cannot resample: planes 99 bytes apart overlap "
			   "(10 rows of 10 bytes)");
	d.stride = 9;
	CHECK(ch_image_resample_planar(r, &s, 0, 0, 20, 20, 0, &d, 100,
				       &err) < 0);
	CHECK(strstr(err.msg, "bad target image (10x10, 3 channels, stride "
			      "9)") != NULL);
	/* one channel: no second plane to overlap */
	free(s.px);
	s = image_of(50, 40, 1, 1);
	d.c = 1;
	d.stride = 10;
	CHECK(ch_image_resample_planar(r, &s, 0, 0, 20, 20, 0, &d, 0,
				       &err) == 0);
	free(s.px);
	ch_resampler_free(r);
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(probe_reads_sizes_and_kinds),
		UNIT(jpeg_whole_decode_equals_turbojpeg),
		UNIT(jpeg_regions_equal_whole_decode_at_every_scale),
		UNIT(jpeg_corruption_is_an_error),
		UNIT(jpeg_tables_do_not_carry_over),
		UNIT(probed_header_is_reused_only_for_the_same_bytes),
		UNIT(cmyk_jpeg_converts_like_pil),
		UNIT(png_color_variants_decode_like_pil),
		UNIT(png_gray_variants_decode_like_pil),
		UNIT(png_palettes_and_low_depths_expand),
		UNIT(png_corruption_is_an_error),
		UNIT(resample_matches_double_reference),
		UNIT(identity_copies_and_flip_mirrors),
		UNIT(support_margin_is_enough),
		UNIT(bad_boxes_are_errors),
		UNIT(paths_and_layouts_give_the_same_bytes),
		UNIT(planar_identity_copies),
		UNIT(two_tap_rows_give_the_same_bytes),
		UNIT(two_tap_columns_give_the_same_bytes),
		UNIT(unrolled_plans_give_the_same_bytes),
		UNIT(plans_are_reused_only_for_the_same_box),
		UNIT(plans_of_boxes_that_come_back_are_kept),
		UNIT(planar_bad_layouts_are_errors),
	};
	return unit_run(tests, UNIT_COUNT(tests));
}
