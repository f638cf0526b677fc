/* transform/transform.h - chute stream --transform: per-field pipelines of
 * ops that decode and augment samples in the worker threads
 * (transform/parse.c, transform/run.c, transform/geometry.c,
 * transform/array.c).
 *
 * A pipeline is parsed once and shared, read-only, by every worker; each
 * worker runs it with its own ch_transformer (decoder, resampler and
 * scratch buffers).  Randomness is a function of (seed, epoch, sample
 * number, op index) alone, so the output does not depend on which worker
 * ran a sample, or when. */
#ifndef CH_TRANSFORM_H
#define CH_TRANSFORM_H

#include "chute/transform.h"
#include "chute/version.h"
#include "image/image.h"

enum ch_op_kind {
	CH_OP_DECODE, CH_OP_RESIZE, CH_OP_CENTER_CROP, CH_OP_RRC, CH_OP_FLIP,
	CH_OP_NORMALIZE, CH_OP_LAYOUT, CH_OP_DTYPE, CH_OP_INT, CH_OP_NPY,
	CH_OP_RANDOM_CROP, CH_OP_PAD, CH_OP_BYTES
};

struct ch_op {
	enum ch_op_kind kind;
	uint32_t w, h;	    /* resize, crops: size (h 0: shorter side w;
			       random-crop: N as w) */
	uint32_t n;	    /* channels (decode), items (random-crop of 1-D,
			       pad: to n items of 1-D, n on each side else) */
	double scale[2], ratio[2]; /* random-resized-crop */
	double p;	    /* flip */
	float mean[4], std[4];	/* normalize, nchan values */
	uint32_t nchan;
	int chw;	    /* layout */
	uint32_t dtype;	    /* dtype, bytes */
	double value;	    /* pad */
	struct ch_field_type want; /* npy, bytes: shape (ndim 0: any, 1-D) */
};

struct ch_pipeline {
	char *field;
	struct ch_op *ops;
	size_t nops;
	int eval;
};

struct ch_transforms {
	struct ch_pipeline *p;
	size_t n;
};

/* Parses the --transform specs; eval turns random ops into their
 * deterministic counterparts.  Errors name the spec and the op. */
int ch_transforms_parse(const char *const *specs, size_t n, int eval,
			struct ch_transforms **out, struct ch_error *err);
void ch_transforms_free(struct ch_transforms *t);
/* A usage error when a pipeline names a field that is not among the
 * dataset's (its manifest's schema), listing them and suggesting the
 * closest; nothing is checked when n is 0 (no schema). */
int ch_transforms_check_fields(const struct ch_transforms *t,
			       const struct ch_manifest_field *fields,
			       size_t n, struct ch_error *err);
const struct ch_pipeline *ch_transforms_find(const struct ch_transforms *t,
					     const char *field);

/* The random numbers of one op of one sample. */
struct ch_rng {
	uint64_t s;
};
void ch_rng_init(struct ch_rng *r, uint64_t seed, uint64_t epoch,
		 uint64_t sample, uint64_t op);
double ch_rng_uniform(struct ch_rng *r); /* [0, 1), 53 bits */
/* Uniform in [lo, hi] (inclusive), like Python's randint. */
uint64_t ch_rng_int(struct ch_rng *r, uint64_t lo, uint64_t hi);

/* torchvision's RandomResizedCrop.get_params for a w x h image: the box
 * (left, top, width, height) in pixels. */
void ch_rrc_box(struct ch_rng *r, uint32_t w, uint32_t h,
		const double scale[2], const double ratio[2], uint32_t box[4]);

/* A worker's state for running pipelines. */
struct ch_transformer {
	struct ch_image_decoder *dec;
	struct ch_resampler *rs;
	struct ch_buf a, b;   /* the value between ops, ping-ponged */
	double decode_s, resample_s, convert_s;
	double pass_t0, pass_image_s; /* ch_transformer_pass_begin's */
};
int ch_transformer_init(struct ch_transformer *tr, struct ch_error *err);
void ch_transformer_release(struct ch_transformer *tr);

/* Around the runs of a batch: its time less decoding and resampling goes
 * to convert_s.  Two clock reads a batch, not two a sample: for a field
 * of a few bytes, reading the clock cost more than the op. */
void ch_transformer_pass_begin(struct ch_transformer *tr);
void ch_transformer_pass_end(struct ch_transformer *tr);

/* Which sample a run is for: the keys of its random numbers. */
struct ch_transform_key {
	uint64_t seed, epoch, sample;
};

/* Runs p over one field's bytes; the value's bytes are appended to out
 * and its type set.  Errors say which op failed and why (the caller adds
 * the sample's key and shard). */
int ch_transform_run(struct ch_transformer *tr, const struct ch_pipeline *p,
		     const struct ch_transform_key *k, const uint8_t *in,
		     size_t size, struct ch_buf *out,
		     struct ch_field_type *type, struct ch_error *err);
/* Values made late, straight into their place in a frame: an image
 * whose pipeline ends with its geometric ops (and a layout), whose type
 * the header gives before any pixel is decoded.  ch_transform_late reads
 * the header and plans the ops: 1 and *type when the value can be made
 * late (and its size in *bytes), 0 when p must run now (ch_transform_run), -1 on an error (the
 * header's or a geometric op's, ch_transform_run's message).
 * ch_transform_run_at then makes it, for the same key and bytes, into
 * px, which has room for its `bytes`. */
int ch_transform_late(struct ch_transformer *tr, const struct ch_pipeline *p,
		      const struct ch_transform_key *k, const uint8_t *in,
		      size_t size, struct ch_field_type *type, size_t *bytes,
		      struct ch_error *err);
int ch_transform_run_at(struct ch_transformer *tr, const struct ch_pipeline *p,
			const struct ch_transform_key *k, const uint8_t *in,
			size_t size, uint8_t *px, size_t bytes,
			struct ch_error *err);
/* 1 when p's value is the field's bytes as they are (a lone `bytes` op):
 * *type is set and nothing needs running or copying; 0 when p must run;
 * -1 when the bytes do not fit, with ch_transform_run's message. */
int ch_transform_as_is(const struct ch_pipeline *p, size_t size,
		       struct ch_field_type *type, struct ch_error *err);

/* For the error of a batch whose samples' values differ in shape (p:
 * the field's pipeline, NULL for none): how a value comes from the
 * field ("decodes to", "becomes", "is"), and the fix, for a value of
 * ndim dimensions, such as "add '| resize 256 | center-crop 224' or
 * random-resized-crop to give every sample one shape". */
const char *ch_pipeline_shape_verb(const struct ch_pipeline *p);
void ch_pipeline_shape_hint(const struct ch_pipeline *p, uint32_t ndim,
			    char *out, size_t n);

/* Images (transform/geometry.c): an image not yet decoded is the box of
 * the source it will come from and the size that box becomes. */
struct ch_geom {
	struct ch_image_info info;
	uint32_t c;
	double bx, by, bw, bh; /* full-size source pixels */
	uint32_t vw, vh;       /* the size the box becomes */
	int flip;
};
/* Reads the header: the whole image, c channels. */
int ch_image_start(struct ch_transformer *tr, struct ch_geom *g, uint32_t c,
		   const uint8_t *in, size_t size, struct ch_error *err);
/* Applies resize, center-crop, random-resized-crop or flip (op number
 * index of the pipeline) to the plan. */
int ch_image_geometry(struct ch_geom *g, const struct ch_op *op,
		      const struct ch_transform_key *k, uint64_t index,
		      int eval, struct ch_error *err);
/* Decodes what the plan needs and resamples it: u8, HWC (or CHW with
 * chw: the resampler writes planes, no transpose after), appended to
 * out. */
int ch_image_realize(struct ch_transformer *tr, const struct ch_geom *g,
		     int chw, const uint8_t *in, size_t size,
		     struct ch_buf *out, struct ch_field_type *t,
		     struct ch_error *err);
/* The same into px, which has room for the g->vw * g->vh * g->c bytes;
 * ch_image_type gives their type. */
int ch_image_realize_at(struct ch_transformer *tr, const struct ch_geom *g,
			int chw, const uint8_t *in, size_t size, uint8_t *px,
			struct ch_error *err);
void ch_image_type(const struct ch_geom *g, int chw, struct ch_field_type *t);

/* Array ops (transform/array.c), from the bytes in `in` to out. */
int ch_array_int(const uint8_t *in, size_t size, struct ch_buf *out,
		 struct ch_field_type *t, struct ch_error *err);
/* The same appended to out, which keeps what it holds. */
int ch_array_int_append(const uint8_t *in, size_t size, struct ch_buf *out,
			struct ch_field_type *t, struct ch_error *err);
int ch_array_npy(const struct ch_op *op, const uint8_t *in, size_t size,
		 struct ch_buf *out, struct ch_field_type *t,
		 struct ch_error *err);
/* bytes: the type that a field of size bytes has as op's array (the
 * bytes themselves are the array's, little-endian: nothing to convert),
 * or an error when size does not fit it. */
int ch_array_bytes(const struct ch_op *op, size_t size,
		   struct ch_field_type *t, struct ch_error *err);
/* random-crop (start: the first item kept) and pad, on 1-D arrays. */
int ch_array_window(const struct ch_buf *in, struct ch_field_type *t,
		    uint64_t start, uint64_t n, struct ch_buf *out,
		    struct ch_error *err);
int ch_array_pad(const struct ch_buf *in, struct ch_field_type *t,
		 uint64_t n, double value, struct ch_buf *out,
		 struct ch_error *err);
/* flip, center-crop, random-crop or pad of an array: H x W (x C) for
 * all four (as on an image: flip mirrors the W axis, pad adds op->n
 * items of op->value on every side), 1-D for random-crop and pad (pad to
 * op->n items).  rng: the op's random numbers.  Returns 1 with the value
 * in out, 0 when the value stays as it is (a flip not drawn), -1 with an
 * error saying what the op takes and what it got. */
int ch_array_geometry(const struct ch_op *op, const struct ch_buf *in,
		      struct ch_field_type *t, struct ch_rng *rng, int eval,
		      struct ch_buf *out, struct ch_error *err);
/* The type ch_array_geometry makes of t, or its error, before any data:
 * sized 0 when only t's dimensions are known (a length from the spec may
 * then be 0), so that sizes are not checked. */
int ch_array_geometry_type(const struct ch_op *op, struct ch_field_type *t,
			   int sized, struct ch_error *err);
/* One item of value v, converted to dtype (u8 clamped to [0, 255]). */
void ch_store_value(uint32_t dtype, double v, uint8_t *dst);
/* What a value is, for messages: "a 1-D array of 784 u8", "a 28x28 u8
 * array"; a 1-D array's length 0 reads as not known. */
void ch_value_text(const struct ch_field_type *t, char *s, size_t n);
/* dtype: u8 -> f16/f32 scales to [0, 1]; f32 -> f16; i64 -> f32. */
int ch_value_convert(const struct ch_buf *in, struct ch_field_type *t,
		     uint32_t dtype, struct ch_buf *out, struct ch_error *err);
/* "u8", "i64", "f16", "f32" (chute-batch(5)); "bytes" for 0. */
const char *ch_dtype_name(uint32_t dtype);
#endif
