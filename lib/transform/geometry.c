/* transform/geometry.c - the geometric image ops, planned before any pixel
 * is decoded.
 *
 * decode only reads the header.  resize, center-crop, random-resized-crop
 * and flip then move a box over the full-size image and set the size it
 * will be resampled to; the pixels are made once, when an op needs them
 * (or at the end): the decoder decodes only the box (plus the filter's
 * margin), at the smallest DCT scale that still leaves the resampler
 * some shrinking to do, and one resampling pass maps it to the output.
 * Resampling a box of the source is what resizing the whole image and
 * cropping the result would give, pixel for pixel: output pixel x of a
 * resize has its centre at (x + 0.5) * scale in the source either way. */
#include <math.h>
#include <string.h>

#include "transform/transform.h"

/* Python's round() of x / 2 for an integer x: halves go to even. */
static int64_t half_round_even(int64_t x)
{
	int64_t q = x >= 0 ? x / 2 : -((-x + 1) / 2);
	if (x % 2 != 0 && q % 2 != 0)
		q++;
	return q;
}

/* Crops [left, left + w) x [top, top + h) of the current (virtual)
 * image: a smaller box, the same scale.  A flipped image's left is
 * counted from the right. */
static void crop(struct ch_geom *g, double left, double top, uint32_t w,
		 uint32_t h)
{
	double sx = g->bw / g->vw, sy = g->bh / g->vh;
	if (g->flip)
		left = g->vw - left - w;
	g->bx += left * sx;
	g->by += top * sy;
	g->bw = w * sx;
	g->bh = h * sy;
	g->vw = w;
	g->vh = h;
}

/* torchvision's Resize(N): the shorter side to N, the longer truncated. */
static void resize(struct ch_geom *g, uint32_t w, uint32_t h)
{
	if (h) {
		g->vw = w;
		g->vh = h;
	} else if (g->vw <= g->vh) {
		g->vh = (uint32_t)((uint64_t)w * g->vh / g->vw);
		g->vw = w;
	} else {
		g->vw = (uint32_t)((uint64_t)w * g->vw / g->vh);
		g->vh = w;
	}
	if (!g->vw)
		g->vw = 1;
	if (!g->vh)
		g->vh = 1;
}

static int center_crop(struct ch_geom *g, uint32_t w, uint32_t h,
		       struct ch_error *err)
{
	if (w > g->vw || h > g->vh)
		return ch_error_set(err, "center-crop %ux%u of a %ux%u image: "
				    "the image is smaller (resize first)",
				    w, h, g->vw, g->vh);
	crop(g, (double)half_round_even((int64_t)g->vw - w),
	     (double)half_round_even((int64_t)g->vh - h), w, h);
	return 0;
}

int ch_image_geometry(struct ch_geom *g, const struct ch_op *op,
		      const struct ch_transform_key *k, uint64_t index,
		      int eval, struct ch_error *err)
{
	struct ch_rng rng;
	ch_rng_init(&rng, k->seed, k->epoch, k->sample, index);
	switch (op->kind) {
	case CH_OP_RESIZE:
		resize(g, op->w, op->h);
		return 0;
	case CH_OP_CENTER_CROP:
		return center_crop(g, op->w, op->h, err);
	case CH_OP_RRC:
		if (eval) { /* the usual eval recipe: 256/224 then a centre */
			resize(g, (uint32_t)lrint(op->w * 256.0 / 224.0),
			       (uint32_t)(op->h != op->w
						  ? lrint(op->h * 256.0 / 224.0)
						  : 0));
			return center_crop(g, op->w, op->h, err);
		} else {
			uint32_t box[4];
			ch_rrc_box(&rng, g->vw, g->vh, op->scale, op->ratio,
				   box);
			crop(g, box[0], box[1], box[2], box[3]);
			g->vw = op->w;
			g->vh = op->h;
		}
		return 0;
	case CH_OP_FLIP:
		if (!eval && ch_rng_uniform(&rng) < op->p)
			g->flip = !g->flip;
		return 0;
	default:
		return ch_error_set(err, "not a geometric op");
	}
}

/* The DCT scale (JPEG only): the largest 1/d that leaves the resampler
 * at least DCT_LEFT of shrinking on both axes.  A scaled IDCT keeps more
 * of the high frequencies than the antialiasing filter would; with 1.5x
 * left to the filter, outputs stay within 1.4/255 (mean) of a full decode
 * and resize even on grainy photos, where scaling right down to the
 * output size strays past 2/255 (tests/ref/transforms_ref.py). */
#define DCT_LEFT 1.5

static uint32_t pick_denom(const struct ch_geom *g)
{
	if (g->info.kind != CH_IMAGE_JPEG)
		return 1;
	for (uint32_t d = 8; d > 1; d /= 2)
		if (g->bw / d >= DCT_LEFT * g->vw &&
		    g->bh / d >= DCT_LEFT * g->vh)
			return d;
	return 1;
}

/* The region to decode, full-size pixels: the box at scale 1/d plus the
 * filter's reach, rounded out to whole scaled pixels, in the image. */
static void region(const struct ch_geom *g, uint32_t d, struct ch_decode_req *r)
{
	double sw = ceil((double)g->info.w / d), sh = ceil((double)g->info.h / d);
	double mx = ch_resample_support(g->bw / d, g->vw);
	double my = ch_resample_support(g->bh / d, g->vh);
	double x0 = fmax(0, floor(g->bx / d - mx));
	double y0 = fmax(0, floor(g->by / d - my));
	double x1 = fmin(sw, ceil((g->bx + g->bw) / d + mx));
	double y1 = fmin(sh, ceil((g->by + g->bh) / d + my));
	r->denom = d;
	r->x = (uint32_t)x0 * d;
	r->y = (uint32_t)y0 * d;
	r->w = (uint32_t)fmin(g->info.w, x1 * d) - r->x;
	r->h = (uint32_t)fmin(g->info.h, y1 * d) - r->y;
}

/* The type of the u8 image g describes, HWC or CHW. */
void ch_image_type(const struct ch_geom *g, int chw, struct ch_field_type *t)
{
	*t = (struct ch_field_type){ .dtype = CH_DTYPE_U8, .ndim = 3,
				     .shape = { g->vh, g->vw, g->c } };
	if (chw)
		*t = (struct ch_field_type){ .dtype = CH_DTYPE_U8, .ndim = 3,
					     .shape = { g->c, g->vh, g->vw } };
}

int ch_image_realize_at(struct ch_transformer *tr, const struct ch_geom *g,
			int chw, const uint8_t *in, size_t size, uint8_t *px,
			struct ch_error *err)
{
	struct ch_decode_req req = { .channels = g->c };
	struct ch_decoded dec;
	uint32_t d = pick_denom(g);
	region(g, d, &req);
	double t0 = ch_now();
	if (ch_image_decode(tr->dec, in, size, &req, &dec, err) < 0)
		return -1;
	double t1 = ch_now();
	struct ch_image dst = { .px = px, .w = g->vw, .h = g->vh, .c = g->c,
				.stride = (size_t)g->vw * (chw ? 1 : g->c) };
	double s = dec.denom, bx = g->bx / s - dec.x0, by = g->by / s - dec.y0;
	int rc = chw ? ch_image_resample_planar(tr->rs, &dec.img, bx, by,
						g->bw / s, g->bh / s, g->flip,
						&dst, (size_t)g->vw * g->vh,
						err)
		     : ch_image_resample(tr->rs, &dec.img, bx, by, g->bw / s,
					 g->bh / s, g->flip, &dst, err);
	tr->decode_s += t1 - t0;
	tr->resample_s += ch_now() - t1;
	return rc;
}

/* Decodes and resamples: the u8 HWC image g describes, into out. */
int ch_image_realize(struct ch_transformer *tr, const struct ch_geom *g,
		     int chw, const uint8_t *in, size_t size,
		     struct ch_buf *out, struct ch_field_type *t,
		     struct ch_error *err)
{
	size_t bytes = (size_t)g->vw * g->vh * g->c;
	if (ch_buf_reserve(out, out->len + bytes, err) < 0 ||
	    ch_image_realize_at(tr, g, chw, in, size, out->data + out->len,
				err) < 0)
		return -1;
	out->len += bytes;
	ch_image_type(g, chw, t);
	return 0;
}

/* Reads the header: the geometry of the whole image. */
int ch_image_start(struct ch_transformer *tr, struct ch_geom *g, uint32_t c,
		   const uint8_t *in, size_t size, struct ch_error *err)
{
	double t0 = ch_now();
	memset(g, 0, sizeof(*g));
	if (ch_image_probe(tr->dec, in, size, &g->info, err) < 0)
		return -1;
	g->c = c;
	g->bw = g->vw = g->info.w;
	g->bh = g->vh = g->info.h;
	tr->decode_s += ch_now() - t0;
	return 0;
}
