/* transform/run.c - running a field's pipeline over one sample: the pixel
 * ops (normalize, layout) and the loop that hands the value from op to op
 * (random numbers: transform/random.c). */
#include <stdlib.h>
#include <string.h>

#include "transform/transform.h"

/* ------------------------------------------------------------------ */
/* The worker's state                                                   */

int ch_transformer_init(struct ch_transformer *tr, struct ch_error *err)
{
	memset(tr, 0, sizeof(*tr));
	tr->dec = ch_image_decoder_new();
	tr->rs = ch_resampler_new();
	if (!tr->dec || !tr->rs) {
		ch_transformer_release(tr);
		return ch_error_nomem(err);
	}
	return 0;
}

void ch_transformer_release(struct ch_transformer *tr)
{
	ch_image_decoder_free(tr->dec);
	ch_resampler_free(tr->rs);
	ch_buf_release(&tr->a);
	ch_buf_release(&tr->b);
	memset(tr, 0, sizeof(*tr));
}

/* ------------------------------------------------------------------ */
/* Pixel ops                                                            */

static int image_dims(const struct ch_field_type *t, int chw, uint64_t *h,
		      uint64_t *w, uint64_t *c)
{
	if (t->ndim != 3)
		return -1;
	*c = chw ? t->shape[0] : t->shape[2];
	*h = chw ? t->shape[1] : t->shape[0];
	*w = chw ? t->shape[2] : t->shape[1];
	return 0;
}

/* (x / 255 - mean) / std in float, as torchvision's ToTensor and
 * Normalize compute it, so that the floats come out the same. */
static int normalize(const struct ch_op *op, int chw, const struct ch_buf *in,
		     struct ch_field_type *t, struct ch_buf *out,
		     struct ch_error *err)
{
	uint64_t h, w, c;
	if (t->dtype != CH_DTYPE_U8 || image_dims(t, chw, &h, &w, &c) < 0)
		return ch_error_set(err, "normalize: needs a u8 image");
	if (c != op->nchan && op->nchan != 1)
		return ch_error_set(err, "normalize: %u values for an image of "
				    "%llu %s", op->nchan, (unsigned long long)c,
				    ch_plural(c, "channel", "channels"));
	size_t n = (size_t)(h * w * c);
	out->len = 0;
	if (ch_buf_reserve(out, n * 4, err) < 0)
		return -1;
	float *dst = (float *)(void *)out->data;
	for (uint64_t k = 0; k < c; k++) {
		float mean = op->mean[op->nchan == 1 ? 0 : k];
		float sd = op->std[op->nchan == 1 ? 0 : k];
		float lut[256];
		for (int v = 0; v < 256; v++)
			lut[v] = ((float)v / 255.0f - mean) / sd;
		if (chw) {
			const uint8_t *src = in->data + k * h * w;
			float *d = dst + k * h * w;
			for (size_t i = 0; i < h * w; i++)
				d[i] = lut[src[i]];
		} else {
			for (size_t i = (size_t)k; i < n; i += (size_t)c)
				dst[i] = lut[in->data[i]];
		}
	}
	out->len = n * 4;
	t->dtype = CH_DTYPE_F32;
	return 0;
}

/* Pixels to planes (or back), one channel at a time: the loops the
 * usual u8 images take, without a call per byte. */
static void transpose_u8(const uint8_t *restrict src, uint8_t *restrict dst,
			 int to_chw, size_t n, size_t c)
{
	for (size_t k = 0; k < c; k++) {
		if (to_chw)
			for (size_t p = 0; p < n; p++)
				dst[k * n + p] = src[p * c + k];
		else
			for (size_t p = 0; p < n; p++)
				dst[p * c + k] = src[k * n + p];
	}
}

/* HWC to CHW (or back), any item size. */
static int relayout(int to_chw, const struct ch_buf *in,
		    struct ch_field_type *t, struct ch_buf *out,
		    struct ch_error *err)
{
	uint64_t h, w, c;
	if (image_dims(t, !to_chw, &h, &w, &c) < 0)
		return ch_error_set(err, "layout: needs an image");
	size_t item = ch_dtype_size(t->dtype), n = (size_t)(h * w);
	out->len = 0;
	if (ch_buf_reserve(out, n * c * item, err) < 0)
		return -1;
	if (item == 1)
		transpose_u8(in->data, out->data, to_chw, n, (size_t)c);
	else
		for (size_t p = 0; p < n; p++)
			for (size_t k = 0; k < c; k++) {
				size_t hwc = (p * c + k) * item;
				size_t chw = (k * n + p) * item;
				memcpy(out->data + (to_chw ? chw : hwc),
				       in->data + (to_chw ? hwc : chw), item);
			}
	out->len = n * c * item;
	uint64_t s[3] = { to_chw ? c : h, to_chw ? h : w, to_chw ? w : c };
	memcpy(t->shape, s, sizeof(s));
	return 0;
}

/* ------------------------------------------------------------------ */
/* The loop                                                             */

struct run {
	struct ch_transformer *tr;
	struct ch_buf *cur, *spare; /* the value, and where the next goes */
	struct ch_buf *out;	    /* where the last op's value goes */
	int in_out;		    /* it is there already */
	struct ch_field_type t;
	int chw;
};

static void swap(struct run *r)
{
	struct ch_buf *b = r->cur;
	r->cur = r->spare;
	r->spare = b;
}

static int value_op(struct run *r, const struct ch_pipeline *p, size_t i,
		    const struct ch_transform_key *k, struct ch_error *err)
{
	const struct ch_op *op = &p->ops[i];
	struct ch_rng rng;
	int rc;
	switch (op->kind) {
	case CH_OP_NORMALIZE:
		rc = normalize(op, r->chw, r->cur, &r->t, r->spare, err);
		break;
	case CH_OP_LAYOUT:
		if (op->chw == r->chw)
			return 0;
		rc = relayout(op->chw, r->cur, &r->t, r->spare, err);
		r->chw = op->chw;
		break;
	case CH_OP_DTYPE:
		rc = ch_value_convert(r->cur, &r->t, op->dtype, r->spare, err);
		break;
	case CH_OP_FLIP:
	case CH_OP_CENTER_CROP:
	case CH_OP_RANDOM_CROP:
	case CH_OP_PAD:
		ch_rng_init(&rng, k->seed, k->epoch, k->sample, i);
		rc = ch_array_geometry(op, r->cur, &r->t, &rng, p->eval,
				       r->spare, err);
		if (rc <= 0)
			return rc; /* an error, or the value as it is */
		rc = 0;
		break;
	default:
		return ch_error_set(err, "op out of place");
	}
	if (rc == 0)
		swap(r);
	return rc;
}

static const char *op_name(enum ch_op_kind k)
{
	static const char *const names[] = {
		"decode", "resize", "center-crop", "random-resized-crop",
		"flip", "normalize", "layout", "dtype", "int", "npy",
		"random-crop", "pad", "bytes" };
	return names[k];
}

/* An image's geometry: the header, then the geometric ops; *next is the
 * first op left, with a `layout chw` straight after taken (*chw: the
 * resampler writes the planes).  Returns the op that failed, or -1. */
static int plan_image(struct ch_transformer *tr, const struct ch_pipeline *p,
		      const struct ch_transform_key *k, const uint8_t *in,
		      size_t size, struct ch_geom *g, size_t *next, int *chw,
		      struct ch_error *err)
{
	size_t i = 1;
	if (ch_image_start(tr, g, p->ops[0].n, in, size, err) < 0)
		return 0;
	for (; i < p->nops && p->ops[i].kind <= CH_OP_FLIP; i++)
		if (ch_image_geometry(g, &p->ops[i], k, i, p->eval, err) < 0)
			return (int)i;
	*chw = i < p->nops && p->ops[i].kind == CH_OP_LAYOUT && p->ops[i].chw;
	*next = i + (size_t)*chw;
	return -1;
}

/* Runs ops [from, nops) of an image: geometry first, pixels when an op
 * needs them.  Returns the op that failed, or -1 when none did. */
static int run_image(struct run *r, const struct ch_pipeline *p,
		     const struct ch_transform_key *k, const uint8_t *in,
		     size_t size, struct ch_error *err)
{
	struct ch_geom g;
	size_t i;
	int chw, failed = plan_image(r->tr, p, k, in, size, &g, &i, &chw, err);
	if (failed >= 0)
		return failed;
	/* nothing after: the pixels go straight where the caller wants them */
	r->in_out = i == p->nops;
	if (!r->in_out)
		r->cur->len = 0;
	if (ch_image_realize(r->tr, &g, chw, in, size,
			     r->in_out ? r->out : r->cur, &r->t, err) < 0)
		return 0;
	r->chw = chw;
	for (; i < p->nops; i++)
		if (value_op(r, p, i, k, err) < 0)
			return (int)i;
	return -1;
}

/* The op that makes an array of the field's bytes.  bytes copies them
 * once: straight where the caller wants them when no op follows. */
static int first_array_op(struct run *r, const struct ch_pipeline *p,
			  const uint8_t *in, size_t size, struct ch_error *err)
{
	const struct ch_op *op = &p->ops[0];
	if (op->kind == CH_OP_INT && p->nops == 1) {
		r->in_out = 1; /* a label alone: straight into out */
		return ch_array_int_append(in, size, r->out, &r->t, err);
	}
	if (op->kind == CH_OP_INT)
		return ch_array_int(in, size, r->cur, &r->t, err);
	if (op->kind == CH_OP_NPY)
		return ch_array_npy(op, in, size, r->cur, &r->t, err);
	if (ch_array_bytes(op, size, &r->t, err) < 0)
		return -1;
	r->in_out = p->nops == 1;
	r->cur->len = 0;
	return ch_buf_append(r->in_out ? r->out : r->cur, in, size, err);
}

static int run_array(struct run *r, const struct ch_pipeline *p,
		     const struct ch_transform_key *k, const uint8_t *in,
		     size_t size, struct ch_error *err)
{
	if (first_array_op(r, p, in, size, err) < 0)
		return 0;
	for (size_t i = 1; i < p->nops; i++)
		if (value_op(r, p, i, k, err) < 0)
			return (int)i;
	return -1;
}

void ch_transformer_pass_begin(struct ch_transformer *tr)
{
	tr->pass_t0 = ch_now();
	tr->pass_image_s = tr->decode_s + tr->resample_s;
}

void ch_transformer_pass_end(struct ch_transformer *tr)
{
	double image = tr->decode_s + tr->resample_s - tr->pass_image_s;
	double other = ch_now() - tr->pass_t0 - image;
	tr->convert_s += other > 0 ? other : 0;
}

/* Names the field and op in err's message. */
static int op_failed(const struct ch_pipeline *p, int failed,
		     struct ch_error *err)
{
	char why[sizeof(err->msg)];
	snprintf(why, sizeof(why), "%s", err->msg);
	return ch_error_set(err, "field '%s': %s: %s", p->field,
			    op_name(p->ops[failed].kind), why);
}

int ch_transform_as_is(const struct ch_pipeline *p, size_t size,
		       struct ch_field_type *type, struct ch_error *err)
{
	if (p->nops != 1 || p->ops[0].kind != CH_OP_BYTES)
		return 0;
	if (ch_array_bytes(&p->ops[0], size, type, err) < 0)
		return op_failed(p, 0, err);
	return 1;
}

int ch_transform_run(struct ch_transformer *tr, const struct ch_pipeline *p,
		     const struct ch_transform_key *k, const uint8_t *in,
		     size_t size, struct ch_buf *out,
		     struct ch_field_type *type, struct ch_error *err)
{
	struct run r = { .tr = tr, .cur = &tr->a, .spare = &tr->b,
			 .out = out };
	size_t at = out->len;
	int failed = p->ops[0].kind == CH_OP_DECODE
			     ? run_image(&r, p, k, in, size, err)
			     : run_array(&r, p, k, in, size, err);
	if (failed >= 0) {
		out->len = at;
		return op_failed(p, failed, err);
	}
	*type = r.t;
	if (r.in_out)
		return 0;
	return ch_buf_append(out, r.cur->data, r.cur->len, err);
}

int ch_transform_late(struct ch_transformer *tr, const struct ch_pipeline *p,
		      const struct ch_transform_key *k, const uint8_t *in,
		      size_t size, struct ch_field_type *type, size_t *bytes,
		      struct ch_error *err)
{
	struct ch_geom g;
	size_t next;
	int chw, failed;
	if (p->ops[0].kind != CH_OP_DECODE)
		return 0;
	failed = plan_image(tr, p, k, in, size, &g, &next, &chw, err);
	if (failed >= 0)
		return op_failed(p, failed, err);
	if (next != p->nops)
		return 0; /* ops on the pixels follow: they need a buffer */
	ch_image_type(&g, chw, type);
	*bytes = (size_t)g.vw * g.vh * g.c;
	return 1;
}

int ch_transform_run_at(struct ch_transformer *tr, const struct ch_pipeline *p,
			const struct ch_transform_key *k, const uint8_t *in,
			size_t size, uint8_t *px, size_t bytes,
			struct ch_error *err)
{
	struct ch_geom g;
	size_t next;
	int chw, failed = plan_image(tr, p, k, in, size, &g, &next, &chw, err);
	if (failed >= 0)
		return op_failed(p, failed, err);
	/* the same bytes twice: never, but not a write past the value */
	if (next != p->nops || (size_t)g.vw * g.vh * g.c != bytes)
		return ch_error_set(err, "field '%s': the image's size changed "
				    "between its two reads", p->field);
	if (ch_image_realize_at(tr, &g, chw, in, size, px, err) < 0)
		return op_failed(p, 0, err);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Samples of another shape                                             */

/* The op of p of kind k, or NULL. */
static const struct ch_op *find_op(const struct ch_pipeline *p,
				   enum ch_op_kind k)
{
	for (size_t i = 0; i < p->nops; i++)
		if (p->ops[i].kind == k)
			return &p->ops[i];
	return NULL;
}

static int sized_op(const struct ch_pipeline *p)
{
	return find_op(p, CH_OP_CENTER_CROP) || find_op(p, CH_OP_RRC) ||
	       find_op(p, CH_OP_RANDOM_CROP);
}

const char *ch_pipeline_shape_verb(const struct ch_pipeline *p)
{
	if (!p)
		return "is";
	if (sized_op(p) || find_op(p, CH_OP_RESIZE) || find_op(p, CH_OP_PAD))
		return "becomes";
	return p->ops[0].kind == CH_OP_DECODE ? "decodes to" : "is";
}

void ch_pipeline_shape_hint(const struct ch_pipeline *p, uint32_t ndim,
			    char *out, size_t n)
{
	const struct ch_op *rs = p ? find_op(p, CH_OP_RESIZE) : NULL;
	if (p && p->ops[0].kind == CH_OP_DECODE && rs && !rs->h &&
	    !sized_op(p))
		snprintf(out, n, "add '| center-crop %u' after 'resize %u' "
			 "(or resize WxH) to give every sample one shape",
			 rs->w, rs->w);
	else if (p && p->ops[0].kind == CH_OP_DECODE)
		snprintf(out, n, "add '| resize 256 | center-crop 224' or "
			 "random-resized-crop to give every sample one shape");
	else if (ndim == 1)
		snprintf(out, n, "add '| pad N | random-crop N' to give every "
			 "sample N items");
	else if (ndim == 2 || ndim == 3)
		snprintf(out, n, "add '| pad P | center-crop N' (or "
			 "random-crop N) to give every sample one shape");
	else
		snprintf(out, n, "give every sample one shape (npy SHAPE "
			 "names the samples of another)");
}

