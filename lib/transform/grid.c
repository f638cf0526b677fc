/* transform/grid.c - the geometric ops on arrays: flip, center-crop,
 * random-crop and pad on an array of H x W or H x W x C items (what
 * `bytes u8 28x28` makes), with an image's semantics: flip mirrors left
 * to right (the W axis), crops keep a window of rows and columns, pad
 * adds a border; and random-crop and pad on 1-D arrays (transform/array.c).
 * Any dtype: the C items of one position move together, as bytes. */
#include <string.h>

#include "transform/transform.h"

/* An array as rows of positions: px bytes a position. */
struct grid {
	size_t h, w, px;
};

static const char *const takes_grid =
	"takes an image or an H x W or H x W x C array";
static const char *const takes_array =
	"takes a 1-D, H x W or H x W x C array";

/* An error saying what the op takes and what it got. */
static int cannot_take(const struct ch_field_type *t, const char *takes,
		       struct ch_error *err)
{
	char got[96];
	ch_value_text(t, got, sizeof(got));
	return ch_error_set(err, "%s, not %s", takes, got);
}

static void grid_of(const struct ch_field_type *t, struct grid *g)
{
	g->h = (size_t)t->shape[0];
	g->w = (size_t)t->shape[1];
	g->px = ch_dtype_size(t->dtype) * (t->ndim == 3 ? t->shape[2] : 1);
}

static int is_grid(const struct ch_field_type *t)
{
	return t->ndim == 2 || t->ndim == 3;
}

/* The window of rows [top, top + to->shape[0]) and columns [left, left
 * + to->shape[1]) of an array of type t. */
static int window(const struct ch_buf *in, const struct ch_field_type *t,
		  uint64_t top, uint64_t left, const struct ch_field_type *to,
		  struct ch_buf *out, struct ch_error *err)
{
	struct grid g;
	grid_of(t, &g);
	size_t h = (size_t)to->shape[0], row = (size_t)to->shape[1] * g.px;
	out->len = 0;
	if (ch_buf_reserve(out, h * row, err) < 0)
		return -1;
	for (size_t y = 0; y < h; y++)
		memcpy(out->data + y * row,
		       in->data + ((top + y) * g.w + left) * g.px, row);
	out->len = h * row;
	return 0;
}

/* An error unless a window w wide and h high fits in t. */
static int fits(const struct ch_field_type *t, uint64_t w, uint64_t h,
		struct ch_error *err)
{
	if (w <= t->shape[1] && h <= t->shape[0])
		return 0;
	char got[96], size[64];
	unsigned long long x = w, y = h;
	ch_value_text(t, got, sizeof(got));
	if (w == h)
		snprintf(size, sizeof(size), "%llux%llu window", x, y);
	else
		snprintf(size, sizeof(size), "window %llu wide and %llu high",
			 x, y);
	return ch_error_set(err, "a %s does not fit in %s (pad first)", size,
			    got);
}

static int flip(const struct ch_buf *in, const struct ch_field_type *t,
		struct ch_buf *out, struct ch_error *err)
{
	struct grid g;
	grid_of(t, &g);
	out->len = 0;
	if (ch_buf_reserve(out, g.h * g.w * g.px, err) < 0)
		return -1;
	for (size_t y = 0; y < g.h; y++) {
		const uint8_t *src = in->data + y * g.w * g.px;
		uint8_t *dst = out->data + y * g.w * g.px;
		for (size_t x = 0; x < g.w; x++)
			memcpy(dst + x * g.px, src + (g.w - 1 - x) * g.px,
			       g.px);
	}
	out->len = g.h * g.w * g.px;
	return 0;
}

/* n positions of value on every side of an array of type t. */
static int pad(const struct ch_buf *in, const struct ch_field_type *t,
	       uint64_t n, double value, struct ch_buf *out,
	       struct ch_error *err)
{
	struct grid g;
	grid_of(t, &g);
	size_t item = ch_dtype_size(t->dtype), w = g.w + 2 * (size_t)n;
	size_t bytes = (g.h + 2 * (size_t)n) * w * g.px;
	out->len = 0;
	if (ch_buf_reserve(out, bytes, err) < 0)
		return -1;
	ch_store_value(t->dtype, value, out->data);
	for (size_t at = item; at < bytes; at += item)
		memcpy(out->data + at, out->data, item);
	for (size_t y = 0; y < g.h; y++)
		memcpy(out->data + ((y + n) * w + n) * g.px,
		       in->data + y * g.w * g.px, g.w * g.px);
	out->len = bytes;
	return 0;
}

/* random-crop and pad of a 1-D array: its type, with the messages of
 * ch_array_window and ch_array_pad. */
static int line_type(const struct ch_op *op, struct ch_field_type *t,
		     int sized, struct ch_error *err)
{
	unsigned long long len = t->shape[0], n = op->n;
	if (op->kind == CH_OP_RANDOM_CROP && op->h)
		return ch_error_set(err, "takes N, not WxH, on a 1-D array");
	if (sized && op->kind == CH_OP_PAD && len > n)
		return ch_error_set(err, "array of %llu items is longer than "
				    "%llu (random-crop first)", len, n);
	if (sized && op->kind == CH_OP_RANDOM_CROP && len < n)
		return ch_error_set(err, "array of %llu items is shorter than "
				    "%llu (pad first)", len, n);
	t->shape[0] = n;
	return 0;
}

int ch_array_geometry_type(const struct ch_op *op, struct ch_field_type *t,
			   int sized, struct ch_error *err)
{
	int any = op->kind == CH_OP_RANDOM_CROP || op->kind == CH_OP_PAD;
	uint64_t w = op->w, h = op->h ? op->h : op->w;
	if (t->ndim == 1 && any)
		return line_type(op, t, sized, err);
	if (!is_grid(t))
		return cannot_take(t, any ? takes_array : takes_grid, err);
	switch (op->kind) {
	case CH_OP_CENTER_CROP:
	case CH_OP_RANDOM_CROP:
		if (sized && fits(t, w, h, err) < 0)
			return -1;
		t->shape[0] = h;
		t->shape[1] = w;
		return 0;
	case CH_OP_PAD:
		t->shape[0] += 2 * (uint64_t)op->n;
		t->shape[1] += 2 * (uint64_t)op->n;
		return 0;
	default:
		return 0;
	}
}

/* random-crop and pad of a 1-D array, as they always were. */
static int line_op(const struct ch_op *op, const struct ch_buf *in,
		   struct ch_field_type *t, struct ch_rng *rng, int eval,
		   struct ch_buf *out, struct ch_error *err)
{
	if (op->kind == CH_OP_PAD)
		return ch_array_pad(in, t, op->n, op->value, out, err);
	uint64_t start = 0;
	if (t->shape[0] > op->n && !eval)
		start = ch_rng_int(rng, 0, t->shape[0] - op->n);
	return ch_array_window(in, t, start, op->n, out, err);
}

/* The offset of a centred window, as torchvision's CenterCrop places it
 * (Python's round() of the difference / 2: halves go to even). */
static uint64_t centre(uint64_t have, uint64_t want)
{
	uint64_t x = have - want, q = x / 2;
	return x % 2 && q % 2 ? q + 1 : q;
}

int ch_array_geometry(const struct ch_op *op, const struct ch_buf *in,
		      struct ch_field_type *t, struct ch_rng *rng, int eval,
		      struct ch_buf *out, struct ch_error *err)
{
	struct ch_field_type was = *t;
	if (ch_array_geometry_type(op, t, 1, err) < 0)
		return -1;
	if (was.ndim == 1) {
		*t = was;
		return line_op(op, in, t, rng, eval, out, err) < 0 ? -1 : 1;
	}
	uint64_t top = centre(was.shape[0], t->shape[0]);
	uint64_t left = centre(was.shape[1], t->shape[1]);
	int rc;
	switch (op->kind) {
	case CH_OP_FLIP:
		if (eval || ch_rng_uniform(rng) >= op->p)
			return 0; /* the value as it is */
		rc = flip(in, t, out, err);
		break;
	case CH_OP_PAD:
		rc = pad(in, &was, op->n, op->value, out, err);
		break;
	case CH_OP_RANDOM_CROP:
		/* top, then left, as torchvision's RandomCrop draws them;
		 * eval: the centred window */
		if (!eval) {
			top = ch_rng_int(rng, 0, was.shape[0] - t->shape[0]);
			left = ch_rng_int(rng, 0, was.shape[1] - t->shape[1]);
		}
		/* fall through */
	default:
		rc = window(in, &was, top, left, t, out, err);
	}
	return rc < 0 ? -1 : 1;
}
