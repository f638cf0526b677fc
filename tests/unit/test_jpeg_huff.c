/* test_jpeg_huff.c - chute's JPEG entropy decoder (lib/image/jpeg_huff.c)
 * against libjpeg's own, through ch_image_decode: the same pixels from
 * every kind of baseline scan, and the same verdict on damaged ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "../jpeg_compare.h"
#include "image/image.h"
#include "unit.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint32_t rnd(void)
{
	rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
	return (uint32_t)(rng_state >> 33);
}

struct blob {
	uint8_t *p;
	size_t n;
};

/* How a test JPEG is made: libjpeg's encoder with these settings. */
struct spec {
	uint32_t w, h;
	int comps;	     /* 1 or 3 */
	int hs, vs;	     /* the luma's sampling factors (chroma 1x1) */
	unsigned restart;    /* MCUs per restart interval, 0: none */
	int optimize;	     /* image-specific Huffman tables */
	int quality;
	int noise;	     /* random pixels (long codes, big values) */
};

static uint8_t *pixels(const struct spec *s)
{
	size_t n = (size_t)s->w * s->h * s->comps;
	uint8_t *px = malloc(n);

	for (size_t i = 0; i < n; i++) {
		size_t x = i / s->comps % s->w, y = i / s->comps / s->w;

		px[i] = s->noise ? (uint8_t)rnd()
				 : (uint8_t)(x * 3 + y * 2 + (i % s->comps) * 60 +
					     (((x / 7) ^ (y / 5)) & 1) * 40);
	}
	return px;
}

static struct blob encode(const struct spec *s)
{
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr jerr;
	unsigned char *buf = NULL;
	unsigned long n = 0;
	uint8_t *px = pixels(s);
	struct blob b;

	c.err = jpeg_std_error(&jerr);
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, &buf, &n);
	c.image_width = s->w;
	c.image_height = s->h;
	c.input_components = s->comps;
	c.in_color_space = s->comps == 3 ? JCS_RGB : JCS_GRAYSCALE;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, s->quality, TRUE);
	c.optimize_coding = s->optimize ? TRUE : FALSE;
	c.restart_interval = s->restart;
	c.comp_info[0].h_samp_factor = s->hs;
	c.comp_info[0].v_samp_factor = s->vs;
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < c.image_height) {
		JSAMPROW row = px + (size_t)c.next_scanline * s->w * s->comps;

		jpeg_write_scanlines(&c, &row, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	free(px);
	b.p = malloc(n);
	memcpy(b.p, buf, n);
	b.n = n;
	free(buf);
	return b;
}

static struct jpeg_outcome decode(struct ch_image_decoder *d, struct blob b,
				  const struct ch_decode_req *req,
				  enum ch_entropy who)
{
	return jpeg_outcome_of(d, b.p, b.n, req, who);
}

/* Both decoders on req agree (tests/jpeg_compare.h says how), and
 * chute's two builds give the very same. */
static int same(struct ch_image_decoder *d, struct blob b,
		const struct ch_decode_req *req, const char *what)
{
	struct jpeg_outcome a = decode(d, b, req, CH_ENTROPY_CHUTE);
	struct jpeg_outcome p = decode(d, b, req, CH_ENTROPY_CHUTE_PORTABLE);
	struct jpeg_outcome l = decode(d, b, req, CH_ENTROPY_LIBJPEG);
	int ok = jpeg_decoders_agree(&a, &l, b.p, b.n);

	if (!ok)
		unit_note("%s, region %ux%u at (%u, %u) 1/%u: chute %s, "
			  "libjpeg %s", what, req->w, req->h, req->x, req->y,
			  req->denom, a.rc ? a.err.msg : "decodes",
			  l.rc ? l.err.msg : "decodes");
	if (!jpeg_builds_agree(&a, &p)) {
		unit_note("%s: chute's two builds differ", what);
		ok = 0;
	}
	free(a.px);
	free(p.px);
	free(l.px);
	return ok;
}

static struct ch_decode_req whole(const struct spec *s, uint32_t channels)
{
	return (struct ch_decode_req){channels, 0, 0, s->w, s->h, 1};
}

/* Every sampling, restart interval, table kind and content, whole and
 * in regions (the rows above a region are entropy-decoded only). */
static void baseline_scans_decode_like_libjpeg(void)
{
	static const int sampling[][3] = {
		{1, 2, 2}, {3, 2, 1}, {3, 1, 2}, {3, 1, 1}, {3, 2, 2}, {3, 4, 1},
	};
	static const unsigned restarts[] = {0, 1, 3, 50};
	struct ch_image_decoder *d = ch_image_decoder_new();
	int bad = 0;

	for (size_t i = 0; i < UNIT_COUNT(sampling); i++)
		for (size_t r = 0; r < UNIT_COUNT(restarts); r++)
			for (int k = 0; k < 4; k++) {
				struct spec s = {
					k & 1 ? 333 : 61, k & 1 ? 251 : 43,
					sampling[i][0], sampling[i][1],
					sampling[i][2], restarts[r], k & 2,
					k == 2 ? 100 : 90, k >= 2};
				struct blob b = encode(&s);
				char what[128];

				snprintf(what, sizeof(what),
					 "%ux%u, %d comps %dx%d, restart %u, "
					 "optimize %d, noise %d",
					 s.w, s.h, s.comps, s.hs, s.vs,
					 s.restart, s.optimize, s.noise);
				for (uint32_t ch = 1; ch <= 3; ch += 2) {
					struct ch_decode_req q = whole(&s, ch);

					bad += !same(d, b, &q, what);
					q.x = rnd() % (s.w / 2);
					q.y = rnd() % (s.h / 2);
					q.w = 1 + rnd() % (s.w - q.x);
					q.h = 1 + rnd() % (s.h - q.y);
					q.denom = 1u << (rnd() % 3);
					bad += !same(d, b, &q, what);
				}
				free(b.p);
			}
	CHECK(bad == 0);
	ch_image_decoder_free(d);
}

/* The offset of the first scan's data: after the SOS segment. */
static size_t scan_start(struct blob b)
{
	for (size_t i = 2; i + 3 < b.n; i++)
		if (b.p[i] == 0xff && b.p[i + 1] == 0xda)
			return i + 2 + ((size_t)b.p[i + 2] << 8 | b.p[i + 3]);
	return b.n;
}

/* One random kind of damage inside the scan of b (a copy). */
static struct blob damage(struct blob b, size_t from)
{
	struct blob m = {malloc(b.n + 2), b.n};
	size_t at = from + rnd() % (b.n - 2 - from);

	memcpy(m.p, b.p, b.n);
	switch (rnd() % 6) {
	case 0: /* a bit */
		m.p[at] ^= (uint8_t)(1u << (rnd() % 8));
		break;
	case 1: /* a byte */
		m.p[at] = (uint8_t)rnd();
		break;
	case 2: /* a marker, a restart marker or a stuffed 0xFF */
		m.p[at] = 0xff;
		m.p[at + 1] = (uint8_t)(rnd() % 3 == 0 ? 0xd0 + rnd() % 8
				       : rnd() % 2 ? 0 : rnd());
		break;
	case 3: /* cut short */
		m.n = at;
		break;
	case 4: /* bytes lost */
		memmove(m.p + at, m.p + at + 2, b.n - at - 2);
		m.n -= 2;
		break;
	default: /* bytes added */
		memmove(m.p + at + 2, m.p + at, b.n - at);
		m.p[at] = (uint8_t)rnd();
		m.p[at + 1] = (uint8_t)rnd();
		m.n += 2;
		break;
	}
	return m;
}

/* Damaged scans: refused by both decoders, or read the same by both.
 * Some must be refused, or the damage would test nothing. */
static void damaged_scans_are_judged_like_libjpeg(void)
{
	static const struct spec bases[] = {
		{96, 64, 3, 2, 2, 0, 0, 90, 0},
		{96, 64, 3, 2, 2, 2, 1, 90, 1},
		{80, 40, 1, 1, 1, 5, 0, 75, 0},
		{64, 48, 3, 2, 1, 1, 1, 95, 0},
	};
	struct ch_image_decoder *d = ch_image_decoder_new();
	int bad = 0, refused = 0;

	for (size_t i = 0; i < UNIT_COUNT(bases); i++) {
		struct blob b = encode(&bases[i]);
		size_t from = scan_start(b);

		for (int t = 0; t < 400; t++) {
			struct blob m = damage(b, from);
			struct ch_decode_req q = whole(&bases[i], 3);
			struct jpeg_outcome o = decode(d, m, &q, CH_ENTROPY_CHUTE);
			char what[64];

			refused += o.rc != 0;
			free(o.px);
			snprintf(what, sizeof(what), "base %zu, damage %d", i,
				 t);
			bad += !same(d, m, &q, what);
			q.h = 1 + rnd() % bases[i].h; /* rows above a cut */
			bad += !same(d, m, &q, what);
			free(m.p);
		}
		free(b.p);
	}
	CHECK(bad == 0);
	CHECK(refused > 200);
	ch_image_decoder_free(d);
}

static int refused_with(struct ch_image_decoder *d, struct blob b,
			const struct spec *s, const char *msg)
{
	struct ch_decode_req q = whole(s, 3);
	struct jpeg_outcome o = decode(d, b, &q, CH_ENTROPY_CHUTE);
	int ok = o.rc != 0 && strstr(o.err.msg, msg) != NULL;

	if (!ok)
		unit_note("expected \"%s\", got: %s", msg,
			  o.rc ? o.err.msg : "no error");
	free(o.px);
	return ok;
}

/* What each kind of damage is called. */
static void damage_is_named(void)
{
	struct spec s = {64, 64, 3, 2, 2, 4, 0, 90, 0};
	struct ch_image_decoder *d = ch_image_decoder_new();
	struct blob b = encode(&s);
	size_t from = scan_start(b), rst = from;
	uint8_t keep[4];

	while (!(b.p[rst] == 0xff && b.p[rst + 1] == 0xd0))
		rst++;
	b.p[rst + 1] = 0xd3; /* RST3 where RST0 is due */
	CHECK(refused_with(d, b, &s, "found marker 0xd3 instead of RST0"));
	b.p[rst + 1] = 0xd0;
	memcpy(keep, b.p + from, 4);
	memcpy(b.p + from, "\xff\x00\xff\x00", 4); /* 16 ones: no code */
	CHECK(refused_with(d, b, &s, "bad Huffman code"));
	memcpy(b.p + from, keep, 4);
	CHECK(refused_with(d, (struct blob){b.p, from + 40}, &s,
			   "premature end of JPEG file"));
	b.p[from + 30] = 0xff;
	b.p[from + 31] = 0xd9;
	CHECK(refused_with(d, b, &s, "premature end of data segment"));
	free(b.p);
	ch_image_decoder_free(d);
}

/* A decoder keeps built tables for the next image only if its tables
 * are the same: optimized tables differ from image to image. */
static void tables_follow_each_image(void)
{
	struct spec a = {120, 80, 3, 2, 2, 0, 1, 90, 1};
	struct spec b = {120, 80, 3, 2, 2, 0, 0, 90, 0};
	struct spec c = {120, 80, 3, 2, 2, 0, 1, 60, 0};
	const struct spec *order[] = {&a, &b, &c, &a, &c, &b};
	struct ch_image_decoder *d = ch_image_decoder_new();
	int bad = 0;

	for (size_t i = 0; i < UNIT_COUNT(order); i++) {
		struct blob j;
		struct ch_decode_req q = whole(order[i], 3);

		rng_state = 1; /* a: the same pixels each time */
		j = encode(order[i]);
		bad += !same(d, j, &q, "in turn");
		free(j.p);
	}
	CHECK(bad == 0);
	ch_image_decoder_free(d);
}

/* Whether chute's decode of the region req of b is the same region of
 * w, its decode of the whole image (width pixels a row): the crop
 * leaves the rows above it and the MCU columns beside it to be skipped,
 * and a coefficient lost or left over there would show in the rows and
 * columns read after. */
static int region_of_whole(struct ch_image_decoder *d, struct blob b,
			   const struct ch_decode_req *req,
			   const struct jpeg_outcome *w, uint32_t width)
{
	struct ch_decoded dec;
	struct ch_error err;
	size_t row;

	ch_image_decoder_set_entropy(d, CH_ENTROPY_CHUTE);
	if (w->rc || ch_image_decode(d, b.p, b.n, req, &dec, &err) < 0)
		return 0;
	row = (size_t)dec.img.w * dec.img.c;
	for (uint32_t y = 0; y < dec.img.h; y++)
		if (memcmp(dec.img.px + y * dec.img.stride,
			   w->px + ((size_t)(dec.y0 + y) * width + dec.x0) *
					   dec.img.c,
			   row) != 0)
			return 0;
	return 1;
}

/* Regions at every MCU column and row offset: the same pixels as
 * libjpeg's decode of the region, and as the whole image's (chute's),
 * with restart markers, with tables of the image's own, and with noise
 * (long codes, blocks that end on coefficient 63 without an end of
 * block). */
static void skipped_blocks_leave_regions_as_whole(void)
{
	static const struct spec specs[] = {
		{200, 120, 3, 2, 2, 0, 0, 90, 0},
		{200, 120, 3, 2, 2, 3, 1, 90, 1},
		{200, 120, 3, 2, 1, 7, 1, 95, 0},
		{200, 120, 3, 1, 1, 0, 0, 100, 1},
		{200, 120, 1, 1, 1, 5, 1, 90, 1},
	};
	struct ch_image_decoder *d = ch_image_decoder_new();
	int bad = 0, tried = 0;

	for (size_t i = 0; i < UNIT_COUNT(specs); i++) {
		const struct spec *s = &specs[i];
		struct blob b = encode(s);
		struct ch_decode_req q = whole(s, 3);
		struct jpeg_outcome w = decode(d, b, &q, CH_ENTROPY_CHUTE);
		char what[32];

		snprintf(what, sizeof(what), "spec %zu", i);
		for (q.y = 0; q.y < s->h; q.y += 13)
			for (q.x = 0; q.x < s->w; q.x += 21, tried++) {
				q.w = 1 + (q.x * 7 + q.y) % (s->w - q.x);
				q.h = 1 + (q.y * 5 + q.x) % (s->h - q.y);
				if (!region_of_whole(d, b, &q, &w, s->w)) {
					unit_note("%s: region %ux%u at (%u, %u) "
						  "is not the whole's", what,
						  q.w, q.h, q.x, q.y);
					bad++;
				}
				bad += !same(d, b, &q, what);
			}
		free(w.px);
		free(b.p);
	}
	CHECK(bad == 0);
	CHECK(tried > 200);
	ch_image_decoder_free(d);
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(baseline_scans_decode_like_libjpeg),
		UNIT(damaged_scans_are_judged_like_libjpeg),
		UNIT(damage_is_named),
		UNIT(tables_follow_each_image),
		UNIT(skipped_blocks_leave_regions_as_whole),
	};
	return unit_run(tests, UNIT_COUNT(tests));
}
