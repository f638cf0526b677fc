/* visual/sheet.c - the contact sheet of chute preview: one batch as a
 * grid of tiles, each a sample's picture over its key and class.
 *
 * python/chute/grid.py draws the same sheet from a chute.Stream batch,
 * pixel for pixel, for the array fields: what is laid out where, and
 * every constant below, must stay the same in both. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "chute/transform.h"
#include "chute/visual.h"
#include "visual/internal.h"

#define PAD 4	      /* between tiles and around them */
#define MIN_SIDE 64   /* smaller pictures are blown up by a whole factor */
#define MIN_WIDTH 72  /* a tile holds at least 12 characters a line */
#define BOX 128	      /* JPEG and PNG fields are fit into this square */
#define MAX_PIXELS (64u << 20)

static const uint8_t background[3] = {32, 32, 32};
static const uint8_t key_rgb[3] = {255, 255, 255};
static const uint8_t class_rgb[3] = {255, 210, 90};
static const uint8_t broken_rgb[3] = {96, 24, 24};

/* The picture field as the sheet reads it. */
struct picture {
	const struct frame_field *f;
	uint32_t w, h, c; /* an array's */
	int chw;	  /* channels first */
	uint32_t scale;	  /* blown up by */
};

struct sheet {
	struct frame fr;
	struct picture pic;
	const struct frame_field *label;
	uint32_t cols, rows, cw, ch, iw, ih; /* tile and picture areas */
	struct ch_image img;
	struct thumb_maker t;
};

/* An array a picture can be made of: H x W, H x W x C or C x H x W with
 * C 1 or 3, u8 or f32.  1 when f is one (its geometry in p). */
static int array_picture(const struct frame_field *f, struct picture *p)
{
	const uint64_t *s = f->shape;
	if (f->dtype != CH_DTYPE_U8 && f->dtype != CH_DTYPE_F32)
		return 0;
	p->chw = 0;
	if (f->ndim == 2) {
		p->h = (uint32_t)s[0], p->w = (uint32_t)s[1], p->c = 1;
	} else if (f->ndim == 3 && (s[2] == 1 || s[2] == 3)) {
		p->h = (uint32_t)s[0], p->w = (uint32_t)s[1], p->c = (uint32_t)s[2];
	} else if (f->ndim == 3 && (s[0] == 1 || s[0] == 3)) {
		p->c = (uint32_t)s[0], p->h = (uint32_t)s[1], p->w = (uint32_t)s[2];
		p->chw = 1;
	} else {
		return 0;
	}
	return p->w > 0 && p->h > 0 && p->w <= 8192 && p->h <= 8192;
}

static int name_is_image(const struct frame_field *f)
{
	char name[256];
	if (f->name_len >= sizeof(name))
		return 0;
	memcpy(name, f->name, f->name_len);
	name[f->name_len] = 0;
	return visual_is_image(name);
}

static int choose_picture(struct sheet *s, const char *want,
			  struct ch_error *err)
{
	for (int pass = 0; pass < 3; pass++) {
		for (uint32_t i = 1; i < s->fr.nfields; i++) {
			const struct frame_field *f = &s->fr.f[i];
			int array = array_picture(f, &s->pic);
			int bytes = f->dtype == CH_DTYPE_BYTES && name_is_image(f);
			if (want ? !frame_field_is(f, want) :
			    !(pass == 0 ? array && f->dtype == CH_DTYPE_U8 :
			      pass == 1 ? array : bytes))
				continue;
			if (!array && !bytes)
				return ch_error_usage(err, "field '%s' holds "
					"no picture: it is not an u8 or f32 "
					"array of H x W (x C) or C x H x W, nor "
					"a jpg, jpeg or png field", want);
			s->pic.f = f;
			return 0;
		}
		if (want)
			return ch_error_usage(err, "no field '%s' in the batch",
					      want);
	}
	ch_error_usage(err, "no picture in the batch: no u8 or f32 image "
		       "array, no jpg, jpeg or png field: name the field to "
		       "draw");
	return ch_error_remedy(err, "field");
}

static int choose_label(struct sheet *s, const char *want,
			struct ch_error *err)
{
	const char *name = want ? want : "cls";
	for (uint32_t i = 1; i < s->fr.nfields; i++) {
		const struct frame_field *f = &s->fr.f[i];
		if (!frame_field_is(f, name))
			continue;
		if (f->ndim != 0 || f->dtype == CH_DTYPE_F16 ||
		    f->dtype == CH_DTYPE_F32)
			return ch_error_usage(err, "field '%s' holds no class: "
					      "not an integer nor text", name);
		s->label = f;
		return 0;
	}
	return want ? ch_error_usage(err, "no field '%s' in the batch", want)
		    : 0;
}

/* The grid's geometry; columns 0: the smallest c with c * c >= n. */
static int layout(struct sheet *s, uint32_t columns, struct ch_error *err)
{
	uint32_t n = s->fr.nsamples;
	struct picture *p = &s->pic;
	if (p->f->dtype == CH_DTYPE_BYTES) {
		s->iw = s->ih = BOX;
	} else {
		uint32_t m = p->w > p->h ? p->w : p->h;
		p->scale = m < MIN_SIDE ? (MIN_SIDE + m - 1) / m : 1;
		s->iw = p->w * p->scale, s->ih = p->h * p->scale;
	}
	s->cols = columns;
	if (!s->cols)
		while ((uint64_t)s->cols * s->cols < n)
			s->cols++;
	s->cols = s->cols < n ? s->cols : n;
	s->rows = (n + s->cols - 1) / s->cols;
	s->cw = s->iw > MIN_WIDTH ? s->iw : MIN_WIDTH;
	s->ch = s->ih + 2 + 2 * FONT_H;
	uint64_t w = PAD + (uint64_t)s->cols * (s->cw + PAD);
	uint64_t h = PAD + (uint64_t)s->rows * (s->ch + PAD);
	if (w * h > MAX_PIXELS)
		return ch_error_usage(err, "a sheet of %llu x %llu pixels is "
				      "too big: fewer samples (-b) or columns",
				      (unsigned long long)w,
				      (unsigned long long)h);
	s->img = (struct ch_image){ .w = (uint32_t)w, .h = (uint32_t)h, .c = 3,
				    .stride = (size_t)w * 3 };
	s->img.px = malloc(s->img.stride * h);
	if (!s->img.px)
		return ch_error_nomem(err);
	for (size_t i = 0; i < w * h; i++)
		memcpy(s->img.px + 3 * i, background, 3);
	return 0;
}

/* Item j of sample i of the picture array, as 0..255: u8 as it is, f32
 * stretched from the sample's minimum (0) to its maximum (255). */
static uint8_t item(const struct picture *p, const uint8_t *base, size_t j,
		    double lo, double hi)
{
	float v;
	if (p->f->dtype == CH_DTYPE_U8)
		return base[j];
	memcpy(&v, base + 4 * j, 4);
	if (!(hi > lo))
		return 0;
	return (uint8_t)floor(((double)v - lo) * 255.0 / (hi - lo) + 0.5);
}

static void float_range(const struct picture *p, const uint8_t *base,
			size_t n, double *lo, double *hi)
{
	float v;
	*lo = *hi = 0;
	for (size_t j = 0; j < n; j++) {
		memcpy(&v, base + 4 * j, 4);
		if (j == 0 || v < *lo)
			*lo = v;
		if (j == 0 || v > *hi)
			*hi = v;
	}
	(void)p;
}

static void draw_array(struct sheet *s, uint32_t i, int x0, int y0)
{
	const struct picture *p = &s->pic;
	size_t n = (size_t)p->w * p->h * p->c;
	const uint8_t *base = p->f->data + n * i * frame_item_size(p->f->dtype);
	double lo = 0, hi = 0;
	uint8_t rgb[3];
	if (p->f->dtype == CH_DTYPE_F32)
		float_range(p, base, n, &lo, &hi);
	for (uint32_t y = 0; y < s->ih; y++) {
		for (uint32_t x = 0; x < s->iw; x++) {
			size_t u = x / p->scale, v = y / p->scale;
			for (uint32_t k = 0; k < 3; k++) {
				uint32_t c = p->c == 1 ? 0 : k;
				size_t j = p->chw ? (c * p->h + v) * p->w + u :
						    (v * p->w + u) * p->c + c;
				rgb[k] = item(p, base, j, lo, hi);
			}
			font_dot(&s->img, x0 + (int)x, y0 + (int)y, rgb);
		}
	}
}

/* A box that says why the picture is missing, its words cut in lines. */
static void draw_broken(struct sheet *s, const char *why, int x0, int y0)
{
	size_t per = s->iw / FONT_W, len = strlen(why);
	for (uint32_t y = 0; y < s->ih; y++)
		for (uint32_t x = 0; x < s->iw; x++)
			font_dot(&s->img, x0 + (int)x, y0 + (int)y, broken_rgb);
	for (size_t at = 0, line = 0; at < len && (line + 1) * FONT_H <= s->ih;
	     at += per, line++)
		font_text(&s->img, x0 + 2, y0 + 2 + (int)(line * FONT_H),
			  why + at, len - at < per ? len - at : per, key_rgb);
}

static void draw_bytes(struct sheet *s, uint32_t i, int x0, int y0)
{
	struct ch_error err = {0};
	const uint8_t *data;
	size_t size;
	frame_value(s->pic.f, i, &data, &size);
	if (size == 0) {
		draw_broken(s, "empty", x0, y0);
		return;
	}
	if (thumb_fit(&s->t, data, size, BOX, &err) < 0) {
		draw_broken(s, err.msg, x0, y0);
		return;
	}
	const struct ch_image *t = &s->t.img;
	x0 += (int)(BOX - t->w) / 2, y0 += (int)(BOX - t->h) / 2;
	for (uint32_t y = 0; y < t->h; y++)
		for (uint32_t x = 0; x < t->w; x++)
			font_dot(&s->img, x0 + (int)x, y0 + (int)y,
				 t->px + y * t->stride + 3 * x);
}

/* "cls 3": the label field's name and sample i's value. */
static void label_text(const struct sheet *s, uint32_t i, char *out,
		       size_t cap)
{
	const struct frame_field *f = s->label;
	int n = snprintf(out, cap, "%.*s ", (int)f->name_len, f->name);
	if (n < 0 || (size_t)n >= cap)
		return;
	if (f->dtype == CH_DTYPE_I64) {
		int64_t v;
		memcpy(&v, f->data + 8 * (size_t)i, 8);
		snprintf(out + n, cap - (size_t)n, "%lld", (long long)v);
	} else if (f->dtype == CH_DTYPE_U8) {
		snprintf(out + n, cap - (size_t)n, "%u", f->data[i]);
	} else {
		const uint8_t *d;
		size_t len;
		frame_value(f, i, &d, &len);
		while (len && (d[len - 1] == ' ' || d[len - 1] == '\t' ||
			       d[len - 1] == '\r' || d[len - 1] == '\n'))
			len--;
		snprintf(out + n, cap - (size_t)n, "%.*s",
			 (int)(len < cap ? len : cap), (const char *)d);
	}
}

static void draw_tile(struct sheet *s, uint32_t i)
{
	int x = PAD + (int)((i % s->cols) * (s->cw + PAD));
	int y = PAD + (int)((i / s->cols) * (s->ch + PAD));
	size_t per = s->cw / FONT_W, len;
	const uint8_t *key;
	char label[256];
	if (s->pic.f->dtype == CH_DTYPE_BYTES)
		draw_bytes(s, i, x + (int)(s->cw - s->iw) / 2, y);
	else
		draw_array(s, i, x + (int)(s->cw - s->iw) / 2, y);
	frame_value(&s->fr.f[0], i, &key, &len);
	font_text(&s->img, x, y + (int)s->ih + 2, (const char *)key,
		  len < per ? len : per, key_rgb);
	if (!s->label)
		return;
	label[0] = 0;
	label_text(s, i, label, sizeof(label));
	len = strlen(label);
	font_text(&s->img, x, y + (int)s->ih + 2 + FONT_H, label,
		  len < per ? len : per, class_rgb);
}

int ch_sheet_png(const uint8_t *frame, size_t size,
		 const struct ch_sheet_opts *o, struct ch_buf *out,
		 struct ch_error *err)
{
	struct sheet s = {0};
	int rc = -1;
	if (frame_read(frame, size, &s.fr, err) < 0)
		goto out;
	if (s.fr.nsamples == 0) {
		ch_error_usage(err, "the batch holds no sample");
		goto out;
	}
	if (choose_picture(&s, o->image, err) < 0 ||
	    choose_label(&s, o->label, err) < 0 ||
	    layout(&s, o->columns, err) < 0 || thumb_init(&s.t, err) < 0)
		goto out;
	for (uint32_t i = 0; i < s.fr.nsamples; i++)
		draw_tile(&s, i);
	rc = ch_image_png_encode(&s.img, out, err);
out:
	thumb_release(&s.t);
	free(s.img.px);
	frame_release(&s.fr);
	return rc;
}
