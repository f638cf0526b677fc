/* transform/parse.c - the --transform specs (man/chute-stream.1):
 *
 *   FIELD: op [arg ...] | op [arg ...] | ...
 *
 * Each op is checked against the kind of value it receives, so that a
 * pipeline that cannot run (a crop before decode, a resize after
 * normalize) is refused before the stream starts, not at the first
 * sample. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transform/transform.h"

#define MAX_ARGS 8

/* What a pipeline holds between two ops, as far as parsing can tell. */
enum stage { BYTES, IMAGE, PIXELS, ARRAY };

struct op_text {
	const char *spec;
	char *name;
	char *arg[MAX_ARGS];
	int nargs;
};

static int bad(struct ch_error *err, const struct op_text *t,
	       const char *why)
{
	ch_error_usage(err, "'%s': %s%s%s", t->spec, t->name ? t->name : "",
		       t->name ? ": " : "", why);
	return ch_error_setting(err, "transform");
}

static int parse_uint(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (!isdigit((unsigned char)*s) || *end || v == 0 || v > 65535)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* "N" (h = 0: the shorter side, or a square for crops) or "WxH". */
static int parse_size(const char *s, uint32_t *w, uint32_t *h)
{
	char buf[64];
	const char *x = strchr(s, 'x');
	*h = 0;
	if (!x)
		return parse_uint(s, w);
	if ((size_t)(x - s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, (size_t)(x - s));
	buf[x - s] = 0;
	return parse_uint(buf, w) < 0 || parse_uint(x + 1, h) < 0 ? -1 : 0;
}

/* A number, or a fraction "3/4". */
static int parse_num(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s)
		return -1;
	if (*end == '/') {
		const char *d = end + 1;
		double den = strtod(d, &end);
		if (end == d || den == 0)
			return -1;
		v /= den;
	}
	if (*end || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

/* "a,b,c": up to max numbers. */
static int parse_list(const char *s, double *v, int max)
{
	char buf[256];
	int n = 0;
	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	for (char *save, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == max || parse_num(tok, &v[n]) < 0)
			return -1;
		n++;
	}
	return n;
}

/* key=a,b for random-resized-crop's scale and ratio. */
static int parse_pair(const char *s, const char *key, double out[2])
{
	size_t k = strlen(key);
	if (strncmp(s, key, k) || s[k] != '=')
		return 0;
	double v[2];
	if (parse_list(s + k + 1, v, 2) != 2 || v[0] <= 0 || v[1] < v[0])
		return -1;
	out[0] = v[0];
	out[1] = v[1];
	return 1;
}

static int parse_rrc(const struct op_text *t, struct ch_op *op,
		     struct ch_error *err)
{
	op->scale[0] = 0.08;
	op->scale[1] = 1.0;
	op->ratio[0] = 3.0 / 4.0;
	op->ratio[1] = 4.0 / 3.0;
	if (t->nargs < 1 || parse_size(t->arg[0], &op->w, &op->h) < 0)
		return bad(err, t, "needs a size: N or WxH");
	for (int i = 1; i < t->nargs; i++) {
		int s = parse_pair(t->arg[i], "scale", op->scale);
		int r = s ? 0 : parse_pair(t->arg[i], "ratio", op->ratio);
		if (s < 0 || r < 0 || (!s && !r))
			return bad(err, t, "takes scale=A,B and ratio=A,B "
				   "(0 < A <= B)");
	}
	if (!op->h)
		op->h = op->w;
	return 0;
}

static int parse_normalize(const struct op_text *t, struct ch_op *op,
			   struct ch_error *err)
{
	static const float im_mean[] = { 0.485f, 0.456f, 0.406f };
	static const float im_std[] = { 0.229f, 0.224f, 0.225f };
	double m[4], s[4];
	if (t->nargs == 1 && !strcmp(t->arg[0], "imagenet")) {
		op->nchan = 3;
		memcpy(op->mean, im_mean, sizeof(im_mean));
		memcpy(op->std, im_std, sizeof(im_std));
		return 0;
	}
	int nm = t->nargs == 2 ? parse_list(t->arg[0], m, 4) : -1;
	int ns = t->nargs == 2 ? parse_list(t->arg[1], s, 4) : -1;
	if (nm < 1 || nm != ns)
		return bad(err, t, "takes MEAN STD (one value per channel, "
			   "comma-separated) or imagenet");
	op->nchan = (uint32_t)nm;
	for (int i = 0; i < nm; i++) {
		if (s[i] <= 0)
			return bad(err, t, "a standard deviation must be > 0");
		op->mean[i] = (float)m[i];
		op->std[i] = (float)s[i];
	}
	return 0;
}

static int parse_shape(const char *s, struct ch_field_type *t)
{
	char buf[128];
	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	t->ndim = 0;
	for (char *rest = buf, *tok; (tok = strsep(&rest, "x"));) {
		char *end;
		unsigned long long v = strtoull(tok, &end, 10);
		if (t->ndim == 4 || !isdigit((unsigned char)*tok) || *end)
			return -1;
		t->shape[t->ndim++] = v;
	}
	return t->ndim ? 0 : -1;
}

static int parse_dtype(const char *s, uint32_t *out)
{
	for (uint32_t d = CH_DTYPE_U8; d <= CH_DTYPE_F32; d++)
		if (!strcmp(s, ch_dtype_name(d))) {
			*out = d;
			return 0;
		}
	return -1;
}

/* bytes DTYPE [SHAPE]: dimensions of at least 1, whose bytes a uint64_t
 * holds (so that the size check cannot overflow). */
static int parse_bytes(const struct op_text *t, struct ch_op *op,
		       struct ch_error *err)
{
	if (t->nargs < 1 || t->nargs > 2)
		return bad(err, t, "takes DTYPE [SHAPE], such as u8 28x28");
	if (parse_dtype(t->arg[0], &op->dtype) < 0)
		return bad(err, t, "the dtype is u8, i64, f16 or f32");
	if (t->nargs == 1)
		return 0;
	uint64_t bytes = ch_dtype_size(op->dtype);
	int ok = parse_shape(t->arg[1], &op->want) == 0;
	for (uint32_t d = 0; ok && d < op->want.ndim; d++) {
		uint64_t n = op->want.shape[d];
		ok = n && n <= UINT64_MAX / bytes;
		bytes *= ok ? n : 1;
	}
	return ok ? 0 : bad(err, t, "the shape is 1 to 4 sizes of at least "
			    "1 joined by x, such as 784 or 28x28");
}

/* The args of ops whose args are simple. */
static int parse_simple(const struct op_text *t, struct ch_op *op,
			struct ch_error *err)
{
	const char *a = t->nargs ? t->arg[0] : NULL;
	switch (op->kind) {
	case CH_OP_DECODE:
		op->n = 3;
		if (a && (t->nargs > 1 || (strcmp(a, "rgb") && strcmp(a, "gray"))))
			return bad(err, t, "takes rgb or gray");
		if (a && !strcmp(a, "gray"))
			op->n = 1;
		return 0;
	case CH_OP_RESIZE:
	case CH_OP_CENTER_CROP:
		if (t->nargs != 1 || parse_size(a, &op->w, &op->h) < 0)
			return bad(err, t, "needs a size: N or WxH "
				   "(1 to 65535)");
		if (op->kind == CH_OP_CENTER_CROP && !op->h)
			op->h = op->w;
		return 0;
	case CH_OP_FLIP:
		op->p = 0.5;
		if (t->nargs > 1 || (a && (parse_num(a, &op->p) < 0 ||
					   op->p < 0 || op->p > 1)))
			return bad(err, t, "takes a probability from 0 to 1");
		return 0;
	case CH_OP_LAYOUT:
		if (t->nargs != 1 || (strcmp(a, "hwc") && strcmp(a, "chw")))
			return bad(err, t, "takes hwc or chw");
		op->chw = !strcmp(a, "chw");
		return 0;
	case CH_OP_DTYPE:
		if (t->nargs != 1 || parse_dtype(a, &op->dtype) < 0 ||
		    op->dtype == CH_DTYPE_I64)
			return bad(err, t, "takes u8, f16 or f32");
		return 0;
	case CH_OP_INT:
		return t->nargs ? bad(err, t, "takes no arguments") : 0;
	case CH_OP_NPY:
		if (t->nargs > 1 || (a && parse_shape(a, &op->want) < 0))
			return bad(err, t, "takes an optional shape such as "
				   "3x32 (at most 4 dimensions)");
		return 0;
	case CH_OP_RANDOM_CROP:
		if (t->nargs != 1 || parse_size(a, &op->w, &op->h) < 0)
			return bad(err, t, "takes N or WxH (1 to 65535)");
		op->n = op->w;
		return 0;
	case CH_OP_PAD:
		if (t->nargs < 1 || parse_uint(a, &op->n) < 0 ||
		    t->nargs > 2 ||
		    (t->nargs == 2 && parse_num(t->arg[1], &op->value) < 0))
			return bad(err, t, "takes N [VALUE]");
		return 0;
	default:
		return 0;
	}
}

static const struct op_entry {
	const char *name;
	enum ch_op_kind kind;
	enum stage in;	/* what the op takes (PIXELS: IMAGE too) */
	int arrays;	/* it takes an ARRAY too */
} op_table[] = {
	{ "decode", CH_OP_DECODE, BYTES, 0 },
	{ "resize", CH_OP_RESIZE, IMAGE, 0 },
	{ "center-crop", CH_OP_CENTER_CROP, IMAGE, 1 },
	{ "random-resized-crop", CH_OP_RRC, IMAGE, 0 },
	{ "flip", CH_OP_FLIP, IMAGE, 1 },
	{ "normalize", CH_OP_NORMALIZE, PIXELS, 0 },
	{ "layout", CH_OP_LAYOUT, PIXELS, 0 },
	{ "dtype", CH_OP_DTYPE, PIXELS, 1 },
	{ "int", CH_OP_INT, BYTES, 0 },
	{ "npy", CH_OP_NPY, BYTES, 0 },
	{ "bytes", CH_OP_BYTES, BYTES, 0 },
	{ "random-crop", CH_OP_RANDOM_CROP, ARRAY, 0 },
	{ "pad", CH_OP_PAD, ARRAY, 0 },
};
#define NOPS (sizeof(op_table) / sizeof(op_table[0]))

/* What a pipeline holds between two ops, as far as parsing can tell: the
 * stage, and an array's type where the spec says it (known: its
 * dimensions; sized: its lengths too). */
struct held {
	enum stage at;
	int known, sized;
	struct ch_field_type t;
};

/* Why an op cannot take what the pipeline holds. */
static const char *misplaced(enum stage in, enum stage at)
{
	if (at == BYTES)
		return "needs a decoded value: start with decode, int, npy or "
		       "bytes";
	if (in == BYTES)
		return "must come first";
	if (in == IMAGE && at == ARRAY)
		return "needs an image (from decode); of the geometric ops, "
		       "arrays take flip, center-crop, random-crop and pad";
	if (in == IMAGE)
		return "needs an image, before normalize, layout and dtype";
	if (in == ARRAY)
		return "takes an array (from bytes, npy or int), not an image: "
		       "images take center-crop and random-resized-crop";
	return "needs an image";
}

/* Checks that the op can take what the pipeline holds; advances it. */
static int check_stage(const struct op_text *t, const struct op_entry *e,
		       enum stage *at, struct ch_error *err)
{
	int ok = *at == e->in || (e->in == PIXELS && *at == IMAGE) ||
		 (e->arrays && *at == ARRAY);
	if (!ok)
		return bad(err, t, misplaced(e->in, *at));
	if (e->kind == CH_OP_DECODE)
		*at = IMAGE;
	else if (e->in == BYTES)
		*at = ARRAY;
	else if (e->in == PIXELS && *at == IMAGE)
		*at = PIXELS;
	return 0;
}

/* The array an op leaves, where the spec tells: an op that cannot take
 * the array it gets is refused here, before any sample is read. */
static int track_array(const struct op_text *text, const struct ch_op *op,
		       struct held *h, struct ch_error *err)
{
	struct ch_field_type *t = &h->t;
	switch (op->kind) {
	case CH_OP_INT:
		*t = (struct ch_field_type){ .dtype = CH_DTYPE_I64 };
		h->known = h->sized = 1;
		return 0;
	case CH_OP_BYTES:
	case CH_OP_NPY:
		*t = op->want;
		t->dtype = op->kind == CH_OP_BYTES ? op->dtype : 0;
		h->known = h->sized = t->ndim != 0;
		if (op->kind == CH_OP_BYTES && !t->ndim)
			*t = (struct ch_field_type){ .dtype = op->dtype,
						     .ndim = 1 };
		h->known |= op->kind == CH_OP_BYTES;
		return 0;
	case CH_OP_DTYPE:
		t->dtype = op->dtype;
		return 0;
	default:
		if (h->at != ARRAY || !h->known ||
		    ch_array_geometry_type(op, t, h->sized, err) == 0)
			return 0;
	}
	int hint = t->ndim == 1 && op->kind != CH_OP_PAD &&
		   op->kind != CH_OP_RANDOM_CROP;
	char why[sizeof(err->msg)];
	snprintf(why, sizeof(why), "%.900s%s", err->msg,
		 hint ? ": give bytes or npy the array's shape, such as 28x28"
		      : "");
	return bad(err, text, why);
}

/* Splits one op's text into name and args, in place. */
static int split_op(char *text, struct op_text *t)
{
	char *save;
	t->name = strtok_r(text, " \t\n", &save);
	t->nargs = 0;
	for (char *a; (a = strtok_r(NULL, " \t\n", &save));) {
		if (t->nargs == MAX_ARGS)
			return -1;
		t->arg[t->nargs++] = a;
	}
	return t->name ? 0 : -1;
}

/* "no such op", and the closest one. */
static int no_such_op(const struct op_text *t, struct ch_error *err)
{
	const char *names[NOPS];
	for (size_t k = 0; k < NOPS; k++)
		names[k] = op_table[k].name;
	const char *near = ch_closest(t->name, names, NOPS);
	char why[256];
	if (near) {
		snprintf(why, sizeof(why), "no such op; did you mean '%s'?",
			 near);
		return bad(err, t, why);
	}
	size_t used = (size_t)snprintf(why, sizeof(why), "no such op (ops:");
	for (size_t k = 0; k < NOPS && used < sizeof(why); k++)
		used += (size_t)snprintf(why + used, sizeof(why) - used,
					 "%s %s", k ? "," : "", names[k]);
	if (used < sizeof(why))
		snprintf(why + used, sizeof(why) - used, ")");
	return bad(err, t, why);
}

static int parse_args(const struct op_text *t, struct ch_op *op,
		      struct ch_error *err)
{
	if (op->kind == CH_OP_RRC)
		return parse_rrc(t, op, err);
	if (op->kind == CH_OP_NORMALIZE)
		return parse_normalize(t, op, err);
	if (op->kind == CH_OP_BYTES)
		return parse_bytes(t, op, err);
	return parse_simple(t, op, err);
}

static int parse_op(const char *spec, char *text, struct ch_op *op,
		    struct held *h, struct ch_error *err)
{
	struct op_text t = { .spec = spec };
	if (split_op(text, &t) < 0)
		return bad(err, &t, "an empty op or too many arguments");
	size_t k = 0;
	while (k < NOPS && strcmp(op_table[k].name, t.name))
		k++;
	if (k == NOPS)
		return no_such_op(&t, err);
	memset(op, 0, sizeof(*op));
	op->kind = op_table[k].kind;
	if (check_stage(&t, &op_table[k], &h->at, err) < 0 ||
	    parse_args(&t, op, err) < 0)
		return -1;
	return track_array(&t, op, h, err);
}

static int parse_one(const char *spec, int eval, struct ch_pipeline *p,
		     struct ch_error *err)
{
	const char *colon = strchr(spec, ':');
	struct op_text whole = { .spec = spec };
	if (!colon)
		return bad(err, &whole, "expected FIELD: op | op ...");
	const char *a = spec, *b = colon;
	while (a < b && isspace((unsigned char)*a))
		a++;
	while (b > a && isspace((unsigned char)b[-1]))
		b--;
	if (a == b)
		return bad(err, &whole, "no field name before ':'");
	p->field = strndup(a, (size_t)(b - a));
	char *ops = strdup(colon + 1);
	size_t cap = 1;
	for (const char *c = colon + 1; *c; c++)
		cap += *c == '|';
	p->ops = calloc(cap, sizeof(*p->ops));
	p->eval = eval;
	if (!p->field || !ops || !p->ops) {
		free(ops);
		return ch_error_nomem(err);
	}
	struct held h = { .at = BYTES };
	int rc = 0;
	char *rest = ops, *piece;
	while (rc == 0 && (piece = strsep(&rest, "|")))
		rc = parse_op(spec, piece, &p->ops[p->nops++], &h, err);
	if (rc == 0 && (p->nops == 0 || h.at == BYTES))
		rc = bad(err, &whole, "no op, or an op that needs '|' "
			 "around it");
	free(ops);
	return rc;
}

int ch_transforms_parse(const char *const *specs, size_t n, int eval,
			struct ch_transforms **out, struct ch_error *err)
{
	struct ch_transforms *t = calloc(1, sizeof(*t));
	if (!t || !(t->p = calloc(n ? n : 1, sizeof(*t->p)))) {
		free(t);
		return ch_error_nomem(err);
	}
	for (size_t i = 0; i < n; i++) {
		t->n++;
		if (parse_one(specs[i], eval, &t->p[i], err) < 0)
			goto fail;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(t->p[j].field, t->p[i].field)) {
				ch_error_usage(err, "two transforms "
					       "for field '%s'",
					       t->p[i].field);
				ch_error_setting(err, "transform");
				goto fail;
			}
	}
	*out = t;
	return 0;
fail:
	ch_transforms_free(t);
	return -1;
}

void ch_transforms_free(struct ch_transforms *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		free(t->p[i].field);
		free(t->p[i].ops);
	}
	free(t->p);
	free(t);
}

/* "cls, img": the names, as many as fit in size. */
static void list_names(const struct ch_manifest_field *fields, size_t n,
		       char *out, size_t size)
{
	size_t at = 0;
	out[0] = 0;
	for (size_t i = 0; i < n && at < size; i++) {
		int k = snprintf(out + at, size - at, "%s%s", i ? ", " : "",
				 fields[i].name);
		if (k < 0 || (size_t)k >= size - at) {
			snprintf(out + at, size - at, ", ...");
			break;
		}
		at += (size_t)k;
	}
}

/* A transform for a field the dataset does not have: the fields it has,
 * and the closest. */
static int no_field(const char *field, const struct ch_manifest_field *fields,
		    size_t n, struct ch_error *err)
{
	char list[400], near[160] = "";
	const char *names[64] = { 0 };
	size_t nn = n < 64 ? n : 64;
	list_names(fields, n, list, sizeof(list) - 8);
	for (size_t i = 0; i < nn; i++)
		names[i] = fields[i].name;
	const char *best = ch_closest(field, names, nn);
	size_t len = strlen(field);
	for (size_t i = 0; !best && i < n; i++) /* "x" for "x.npy" */
		if (!strncmp(fields[i].name, field, len) &&
		    fields[i].name[len] == '.')
			best = fields[i].name;
	if (best)
		snprintf(near, sizeof(near), "; did you mean '%.120s'?", best);
	ch_error_usage(err, "no field '%.200s' in the dataset (fields: %s)%s",
		       field, list, near);
	return ch_error_setting(err, "transform");
}

int ch_transforms_check_fields(const struct ch_transforms *t,
			       const struct ch_manifest_field *fields,
			       size_t n, struct ch_error *err)
{
	for (size_t i = 0; t && n && i < t->n; i++) {
		size_t k = 0;
		while (k < n && strcmp(fields[k].name, t->p[i].field))
			k++;
		if (k == n)
			return no_field(t->p[i].field, fields, n, err);
	}
	return 0;
}

const struct ch_pipeline *ch_transforms_find(const struct ch_transforms *t,
					     const char *field)
{
	for (size_t i = 0; t && i < t->n; i++)
		if (!strcmp(t->p[i].field, field))
			return &t->p[i];
	return NULL;
}
