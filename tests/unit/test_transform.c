/* test_transform.c - the --transform pipelines: parsing, random numbers,
 * random-resized-crop boxes, the planned geometry, arrays (raw bytes
 * among them) and dtypes.
 *
 *	test_transform                      runs the tests (TAP)
 *	test_transform boxes W H N SEED [scale=A,B] [ratio=A,B]
 *	                                    prints N random-resized-crop
 *	                                    boxes "left top width height",
 *	                                    drawn as chute stream draws them
 *	                                    (tests/ref/transforms_ref.py
 *	                                    compares them with torchvision)
 */
#include <math.h>
#include <stdlib.h>

#include "transform/transform.h"
#include "transform/testing.h"
#include "unit.h"

static struct ch_transforms *parse1(const char *spec, int eval,
				    struct ch_error *err)
{
	struct ch_transforms *t = NULL;
	const char *specs[] = { spec };
	if (ch_transforms_parse(specs, 1, eval, &t, err) < 0)
		return NULL;
	return t;
}

static void specs_parse(void)
{
	struct ch_error err = { 0 };
	struct ch_transforms *t = parse1(
		" jpg : decode | random-resized-crop 224 scale=0.5,1 "
		"ratio=3/4,4/3 | flip 0.25 | normalize imagenet | layout chw "
		"| dtype f16", 0, &err);
	if (!CHECK(t)) {
		unit_note("%s", err.msg);
		return;
	}
	const struct ch_pipeline *p = ch_transforms_find(t, "jpg");
	if (!CHECK(p) || !CHECK_EQ_U64(p->nops, 6))
		return;
	CHECK(p->ops[1].kind == CH_OP_RRC && p->ops[1].w == 224 &&
	      p->ops[1].h == 224 && p->ops[1].scale[0] == 0.5);
	CHECK(fabs(p->ops[1].ratio[0] - 0.75) < 1e-12);
	CHECK(p->ops[2].p == 0.25);
	CHECK(p->ops[3].nchan == 3 && p->ops[3].std[2] == 0.225f);
	CHECK(p->ops[4].chw == 1 && p->ops[5].dtype == CH_DTYPE_F16);
	CHECK(!ch_transforms_find(t, "png"));
	ch_transforms_free(t);
}

static void bad_specs_are_refused(void)
{
	static const char *const bad[] = {
		"jpg decode",			  /* no colon */
		": decode",			  /* no field */
		"jpg: resize 256",		  /* before decode */
		"jpg: decode | blur",		  /* no such op */
		"jpg: decode | resize 0",	  /* size */
		"jpg: decode | resize 12x",	  /* size */
		"jpg: decode | flip 2",		  /* probability */
		"jpg: decode | normalize 1,2 3",  /* counts differ */
		"jpg: decode | layout chw | resize 8", /* geometry after */
		"jpg: decode | decode",		  /* twice */
		"jpg: decode || flip",		  /* empty op */
		"jpg:",				  /* nothing */
		"cls: int | flip",		  /* an image op on a label */
		"x: npy 3x",			  /* shape */
		"x: npy | pad",			  /* pad needs N */
		"jpg: decode | random-resized-crop 224 scale=1,0.5",
		"jpg: decode | dtype i64",
		"x: bytes",			  /* no dtype */
		"x: bytes u16",			  /* no such dtype */
		"x: bytes u8 0",		  /* an empty shape */
		"x: bytes u8 28x0",
		"x: bytes u8 28x",
		"x: bytes u8 1x1x1x1x1",	  /* 5 dimensions */
		"x: bytes u8 28 28",
		"x: bytes i64 2305843009213693952", /* 2^64 bytes */
		"x: npy | bytes u8",		  /* not first */
		"x: bytes u8 | resize 8",	  /* not an image */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct ch_error err = { 0 };
		struct ch_transforms *t = parse1(bad[i], 0, &err);
		if (!CHECK(!t))
			unit_note("accepted: %s", bad[i]);
		/* the spec quoted, the setting named for cmd/ to show */
		else if (!CHECK(strstr(err.msg, bad[i]) && err.setting &&
				!strcmp(err.setting, "transform")))
			unit_note("%s", err.msg);
		ch_transforms_free(t);
	}
	struct ch_error err = { 0 };
	const char *two[] = { "a: int", "a: npy" };
	struct ch_transforms *t = NULL;
	CHECK(ch_transforms_parse(two, 2, 0, &t, &err) < 0);
	CHECK(strstr(err.msg, "two transforms"));
	CHECK(err.setting && !strcmp(err.setting, "transform"));
}

static void rng_is_keyed_and_uniform(void)
{
	struct ch_rng a, b;
	ch_rng_init(&a, 1, 2, 3, 4);
	ch_rng_init(&b, 1, 2, 3, 4);
	for (int i = 0; i < 100; i++)
		CHECK(ch_rng_uniform(&a) == ch_rng_uniform(&b));
	ch_rng_init(&b, 1, 2, 3, 5);
	CHECK(ch_rng_uniform(&a) != ch_rng_uniform(&b));
	double sum = 0;
	uint64_t hist[6] = { 0 };
	for (int i = 0; i < 60000; i++) {
		double u = ch_rng_uniform(&a);
		CHECK(u >= 0 && u < 1);
		sum += u;
		hist[ch_rng_int(&a, 0, 5)]++;
	}
	CHECK(fabs(sum / 60000 - 0.5) < 0.01);
	for (int k = 0; k < 6; k++)
		CHECK(hist[k] > 9500 && hist[k] < 10500);
}

static void rrc_boxes_fit_and_follow_the_ranges(void)
{
	const double scale[2] = { 0.08, 1 }, ratio[2] = { 0.75, 4.0 / 3 };
	struct ch_rng r;
	ch_rng_init(&r, 7, 0, 0, 0);
	double area = 0;
	for (int i = 0; i < 5000; i++) {
		uint32_t b[4];
		ch_rrc_box(&r, 500, 375, scale, ratio, b);
		if (!CHECK(b[2] > 0 && b[3] > 0 && b[0] + b[2] <= 500 &&
			   b[1] + b[3] <= 375))
			return;
		area += (double)b[2] * b[3] / (500.0 * 375);
	}
	/* the mean of the area share drawn from U(0.08, 1) is 0.54, but
	 * large boxes of extreme ratios do not fit and are drawn again:
	 * torchvision's boxes average 0.435 of a 500x375 image */
	area /= 5000;
	CHECK(area > 0.41 && area < 0.46);
	/* a thin image misses ten times often: the centred fallback */
	uint32_t b[4];
	int fallback = 0;
	for (int i = 0; i < 200; i++) {
		ch_rrc_box(&r, 1000, 20, scale, ratio, b);
		fallback += b[2] == 27 && b[3] == 20 && b[0] == 486;
	}
	CHECK(fallback > 100);
}

static void int_labels(void)
{
	struct ch_buf out = { 0 };
	struct ch_field_type t;
	struct ch_error err = { 0 };
	int64_t v;
	CHECK(ch_array_int((const uint8_t *)" 42\n", 4, &out, &t, &err) == 0);
	memcpy(&v, out.data, 8);
	CHECK(v == 42 && t.dtype == CH_DTYPE_I64 && t.ndim == 0);
	CHECK(ch_array_int((const uint8_t *)"-7", 2, &out, &t, &err) == 0);
	memcpy(&v, out.data, 8);
	CHECK(v == -7);
	CHECK(ch_array_int((const uint8_t *)"4x", 2, &out, &t, &err) < 0);
	CHECK(ch_array_int((const uint8_t *)"", 0, &out, &t, &err) < 0);
	CHECK(ch_array_int((const uint8_t *)"99999999999999999999", 20, &out,
			   &t, &err) < 0);
	/* either side of the 18 digits parsed without strtoll */
	static const struct { const char *text; int ok; int64_t v; } cases[] = {
		{ "+5", 1, 5 }, { "007", 1, 7 }, { "-0", 1, 0 },
		{ "123456789012345678", 1, 123456789012345678 },
		{ "-999999999999999999", 1, -999999999999999999 },
		{ "9223372036854775807", 1, INT64_MAX },
		{ "-9223372036854775808", 1, INT64_MIN },
		{ "9223372036854775808", 0, 0 }, { "-", 0, 0 }, { "+", 0, 0 },
		{ "--5", 0, 0 }, { "0x10", 0, 0 }, { "1 2", 0, 0 },
		{ "+-1", 0, 0 }, { "\xd9\xa3", 0, 0 },
	};
	for (size_t i = 0; i < UNIT_COUNT(cases); i++) {
		const char *text = cases[i].text;
		int rc = ch_array_int((const uint8_t *)text, strlen(text), &out,
				      &t, &err);
		if (!CHECK((rc == 0) == cases[i].ok))
			unit_note("'%s'", text);
		if (rc == 0) {
			memcpy(&v, out.data, 8);
			CHECK(v == cases[i].v && out.len == 8);
		}
	}
	ch_buf_release(&out);
}

/* A .npy file of version 1 with the given header dict and data. */
static size_t make_npy(uint8_t *buf, const char *dict, const void *data,
		       size_t size)
{
	size_t len = strlen(dict);
	size_t total = (10 + len + 1 + 63) / 64 * 64;
	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (uint8_t)(total - 10);
	buf[9] = (uint8_t)((total - 10) >> 8);
	memset(buf + 10, ' ', total - 10);
	memcpy(buf + 10, dict, len);
	buf[total - 1] = '\n';
	memcpy(buf + total, data, size);
	return total + size;
}

static void npy_arrays(void)
{
	uint8_t file[512];
	struct ch_buf out = { 0 };
	struct ch_field_type t;
	struct ch_error err = { 0 };
	struct ch_op op = { .kind = CH_OP_NPY };
	float f[6] = { 0, 1, 2, 3, 4, 5 };
	size_t n = make_npy(file, "{'descr': '<f4', 'fortran_order': False, "
			    "'shape': (2, 3), }", f, sizeof(f));
	if (!CHECK(ch_array_npy(&op, file, n, &out, &t, &err) == 0)) {
		unit_note("%s", err.msg);
		return;
	}
	CHECK(t.dtype == CH_DTYPE_F32 && t.ndim == 2 && t.shape[0] == 2 &&
	      t.shape[1] == 3 && out.len == 24 && !memcmp(out.data, f, 24));
	op.want = (struct ch_field_type){ .ndim = 2, .shape = { 3, 2 } };
	CHECK(ch_array_npy(&op, file, n, &out, &t, &err) < 0);
	CHECK(ch_array_npy(&op, file, n - 1, &out, &t, &err) < 0);
	/* int32 tokens become int64, sign and all */
	int32_t tok[3] = { 5, -1, 70000 };
	op.want.ndim = 0;
	n = make_npy(file, "{'descr': '<i4', 'fortran_order': False, "
		     "'shape': (3,), }", tok, sizeof(tok));
	CHECK(ch_array_npy(&op, file, n, &out, &t, &err) == 0);
	int64_t w[3];
	memcpy(w, out.data, 24);
	CHECK(t.dtype == CH_DTYPE_I64 && w[0] == 5 && w[1] == -1 &&
	      w[2] == 70000);
	/* a window of 2, then padded back to 4 */
	struct ch_buf win = { 0 }, pad = { 0 };
	CHECK(ch_array_window(&out, &t, 1, 2, &win, &err) == 0);
	CHECK_EQ_U64(t.shape[0], 2);
	CHECK(ch_array_pad(&win, &t, 4, 9, &pad, &err) == 0);
	int64_t p[4];
	memcpy(p, pad.data, 32);
	CHECK(p[0] == -1 && p[1] == 70000 && p[2] == 9 && p[3] == 9 &&
	      t.shape[0] == 4);
	CHECK(ch_array_window(&pad, &t, 0, 5, &win, &err) < 0);
	n = make_npy(file, "{'descr': '>f4', 'fortran_order': False, "
		     "'shape': (1,), }", f, 4);
	CHECK(ch_array_npy(&op, file, n, &out, &t, &err) < 0);
	CHECK(ch_array_npy(&op, (const uint8_t *)"hello", 5, &out, &t,
			   &err) < 0);
	ch_buf_release(&out);
	ch_buf_release(&win);
	ch_buf_release(&pad);
}

/* A pipeline run over one field, as a worker runs it. */
static int run1(const char *spec, const void *in, size_t size,
		struct ch_buf *out, struct ch_field_type *t,
		struct ch_error *err)
{
	struct ch_transformer tr;
	struct ch_transform_key k = { 1, 0, 0 };
	struct ch_transforms *tx = parse1(spec, 0, err);
	int rc = tx ? ch_transformer_init(&tr, err) : -1;
	if (rc == 0) {
		out->len = 0;
		rc = ch_transform_run(&tr, &tx->p[0], &k, in, size, out, t,
				      err);
		ch_transformer_release(&tr);
	}
	ch_transforms_free(tx);
	return rc;
}

static void raw_bytes(void)
{
	struct ch_buf out = { 0 };
	struct ch_field_type t;
	struct ch_error err = { 0 };
	uint8_t img[784];
	for (size_t i = 0; i < sizeof(img); i++)
		img[i] = (uint8_t)(i * 7);
	if (!CHECK(run1("img: bytes u8 28x28", img, 784, &out, &t, &err) == 0))
		unit_note("%s", err.msg);
	CHECK(t.dtype == CH_DTYPE_U8 && t.ndim == 2 && t.shape[0] == 28 &&
	      t.shape[1] == 28);
	CHECK(out.len == 784 && !memcmp(out.data, img, 784));
	/* no shape: 1-D, items little-endian */
	CHECK(run1("img: bytes i64", img, 784, &out, &t, &err) == 0);
	int64_t v;
	memcpy(&v, img + 8, 8);
	CHECK(t.dtype == CH_DTYPE_I64 && t.ndim == 1 && t.shape[0] == 98 &&
	      out.len == 784 && !memcmp(out.data + 8, &v, 8));
	/* then dtype: u8 to [0, 1] floats */
	CHECK(run1("img: bytes u8 784 | dtype f32", img, 784, &out, &t,
		   &err) == 0);
	float f;
	memcpy(&f, out.data + 4 * 3, 4);
	CHECK(t.dtype == CH_DTYPE_F32 && t.ndim == 1 && out.len == 784 * 4 &&
	      f == 21.0f / 255.0f);
	/* sizes that do not fit: the message says which and what */
	CHECK(run1("img: bytes u8 28x28", img, 783, &out, &t, &err) < 0);
	CHECK_STR(err.msg, "field 'img': bytes: has 783 bytes; u8 28x28 "
		  "needs 784");
	CHECK(out.len == 0);
	CHECK(run1("img: bytes f16 3x2", img, 13, &out, &t, &err) < 0);
	CHECK_STR(err.msg, "field 'img': bytes: has 13 bytes; f16 3x2 needs "
		  "12");
	CHECK(run1("img: bytes f32", img, 783, &out, &t, &err) < 0);
	CHECK_STR(err.msg, "field 'img': bytes: has 783 bytes; f32 needs a "
		  "multiple of 4");
	/* an empty field is an empty array */
	CHECK(run1("img: bytes f32", img, 0, &out, &t, &err) == 0);
	CHECK(t.ndim == 1 && t.shape[0] == 0 && out.len == 0);
	ch_buf_release(&out);
}

static void half_floats(void)
{
	CHECK_EQ_U64(ch_f32_to_f16(0.0f), 0);
	CHECK_EQ_U64(ch_f32_to_f16(1.0f), 0x3c00);
	CHECK_EQ_U64(ch_f32_to_f16(-2.0f), 0xc000);
	CHECK_EQ_U64(ch_f32_to_f16(65504.0f), 0x7bff);
	CHECK_EQ_U64(ch_f32_to_f16(1e6f), 0x7c00);
	CHECK_EQ_U64(ch_f32_to_f16(1.0f / 3), 0x3555);
	CHECK_EQ_U64(ch_f32_to_f16(5.9604645e-8f), 0x0001); /* subnormal */
	CHECK_EQ_U64(ch_f32_to_f16(1.0009765625f), 0x3c01);
	/* halfway between 1 and 1 + 2^-10 rounds to even: 1 */
	CHECK_EQ_U64(ch_f32_to_f16(1.00048828125f), 0x3c00);
}

/* The planned box of resize 256 | center-crop 224 on 500x375: the crop
 * of the resized image, mapped back to the source. */
static void geometry_maps_crops_to_the_source(void)
{
	struct ch_geom g = { .info = { CH_IMAGE_JPEG, 500, 375 }, .c = 3,
			     .bw = 500, .bh = 375, .vw = 500, .vh = 375 };
	struct ch_transform_key k = { 0, 0, 0 };
	struct ch_error err = { 0 };
	struct ch_op resize = { .kind = CH_OP_RESIZE, .w = 256 };
	struct ch_op crop = { .kind = CH_OP_CENTER_CROP, .w = 224, .h = 224 };
	CHECK(ch_image_geometry(&g, &resize, &k, 1, 0, &err) == 0);
	CHECK(g.vw == 341 && g.vh == 256); /* int(256 * 500 / 375) */
	CHECK(ch_image_geometry(&g, &crop, &k, 2, 0, &err) == 0);
	CHECK(g.vw == 224 && g.vh == 224);
	/* left = round((341 - 224) / 2) = round(58.5) = 58 (to even) */
	CHECK(fabs(g.bx - 58 * 500.0 / 341) < 1e-9);
	CHECK(fabs(g.by - 16 * 375.0 / 256) < 1e-9);
	CHECK(fabs(g.bw - 224 * 500.0 / 341) < 1e-9);
	struct ch_op big = { .kind = CH_OP_CENTER_CROP, .w = 300, .h = 300 };
	CHECK(ch_image_geometry(&g, &big, &k, 3, 0, &err) < 0);
	/* eval: random-resized-crop 224 is resize 256 + center-crop 224 */
	struct ch_geom e = { .info = { CH_IMAGE_JPEG, 500, 375 }, .c = 3,
			     .bw = 500, .bh = 375, .vw = 500, .vh = 375 };
	struct ch_op rrc = { .kind = CH_OP_RRC, .w = 224, .h = 224 };
	CHECK(ch_image_geometry(&e, &rrc, &k, 1, 1, &err) == 0);
	CHECK(e.vw == 224 && fabs(e.bx - g.bx) < 1e-9 &&
	      fabs(e.bh - g.bh) < 1e-9);
}

static void layout_and_dtype(void)
{
	struct ch_buf in = { 0 }, out = { 0 };
	struct ch_error err = { 0 };
	uint8_t px[12] = { 0, 255, 51, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	ch_buf_append(&in, px, sizeof(px), &err);
	struct ch_field_type t = { .dtype = CH_DTYPE_U8, .ndim = 3,
				   .shape = { 2, 2, 3 } };
	CHECK(ch_value_convert(&in, &t, CH_DTYPE_F32, &out, &err) == 0);
	float f[12];
	memcpy(f, out.data, sizeof(f));
	CHECK(f[0] == 0 && f[1] == 1 && f[2] == 0.2f && t.dtype == CH_DTYPE_F32);
	CHECK(ch_value_convert(&out, &t, CH_DTYPE_U8, &in, &err) < 0);
	ch_buf_release(&in);
	ch_buf_release(&out);
}

static int print_boxes(int argc, char **argv)
{
	double scale[2] = { 0.08, 1 }, ratio[2] = { 3.0 / 4, 4.0 / 3 };
	if (argc < 6)
		return 2;
	uint32_t w = (uint32_t)atoi(argv[2]), h = (uint32_t)atoi(argv[3]);
	long n = atol(argv[4]);
	uint64_t seed = strtoull(argv[5], NULL, 10);
	for (int i = 6; i < argc; i++)
		if (sscanf(argv[i], "scale=%lf,%lf", &scale[0], &scale[1]) != 2 &&
		    sscanf(argv[i], "ratio=%lf,%lf", &ratio[0], &ratio[1]) != 2)
			return 2;
	for (long i = 0; i < n; i++) {
		struct ch_rng r;
		uint32_t b[4];
		/* sample i of epoch 0, op 1: as in 'decode | random-...' */
		ch_rng_init(&r, seed, 0, (uint64_t)i, 1);
		ch_rrc_box(&r, w, h, scale, ratio, b);
		printf("%u %u %u %u\n", b[0], b[1], b[2], b[3]);
	}
	return 0;
}

/* A 120x90 JPEG of a gradient and noise. */
static int test_jpeg(struct ch_buf *jpg, struct ch_error *err)
{
	static uint8_t px[120 * 90 * 3];
	uint32_t seed = 7;
	for (size_t i = 0; i < sizeof(px); i++) {
		seed = seed * 1103515245u + 12345u;
		px[i] = (uint8_t)((i % 360) / 2 + (seed >> 27));
	}
	struct ch_image im = { px, 120, 90, 3, 360 };
	return ch_image_jpeg_encode(&im, 90, jpg, err);
}

/* Made late, straight into a buffer, a value has the bytes and type that
 * ch_transform_run gives it; pipelines with pixel ops after the geometry
 * are not made late; a buffer of another size is refused, and a JPEG
 * whose pixels are cut short fails in the late run, named as a run's. */
static void late_values_equal_a_run(void)
{
	static const char *const specs[] = {
		"jpg: decode | random-resized-crop 32 | flip | layout chw",
		"jpg: decode | resize 40 | center-crop 32",
		"jpg: decode | random-resized-crop 24 | normalize imagenet",
	};
	struct ch_buf jpg = { 0 }, out = { 0 };
	struct ch_error err = { 0 };
	struct ch_transformer tr;
	if (!CHECK(test_jpeg(&jpg, &err) == 0 &&
		   ch_transformer_init(&tr, &err) == 0)) {
		unit_note("%s", err.msg);
		return;
	}
	/* the header and a few bytes of the scan: no row decodes whole */
	size_t cut = 2;
	while (cut + 1 < jpg.len &&
	       !(jpg.data[cut] == 0xff && jpg.data[cut + 1] == 0xda))
		cut++;
	cut += 24;
	uint8_t *px = malloc(3 * 40 * 40);
	for (size_t s = 0; s < 3 && px; s++) {
		struct ch_transforms *tx = parse1(specs[s], 0, &err);
		for (uint64_t i = 0; tx && i < 8; i++) {
			struct ch_transform_key k = { 1, 2, i };
			struct ch_field_type t, lt;
			size_t bytes = 0;
			out.len = 0;
			int late = ch_transform_late(&tr, &tx->p[0], &k, jpg.data,
						     jpg.len, &lt, &bytes, &err);
			CHECK(late == (s < 2));
			CHECK(ch_transform_run(&tr, &tx->p[0], &k, jpg.data,
					       jpg.len, &out, &t, &err) == 0);
			if (late != 1)
				continue;
			CHECK(bytes == out.len && !memcmp(&t, &lt, sizeof(t)));
			memset(px, 0, bytes);
			CHECK(ch_transform_run_at(&tr, &tx->p[0], &k, jpg.data,
						  jpg.len, px, bytes, &err) == 0);
			CHECK(!memcmp(px, out.data, bytes));
			CHECK(ch_transform_run_at(&tr, &tx->p[0], &k, jpg.data,
						  jpg.len, px, bytes - 1,
						  &err) < 0);
			/* the header whole, the pixels cut short */
			CHECK(ch_transform_late(&tr, &tx->p[0], &k, jpg.data,
						cut, &lt, &bytes, &err) == 1);
			CHECK(ch_transform_run_at(&tr, &tx->p[0], &k, jpg.data,
						  cut, px, bytes,
						  &err) < 0 &&
			      strstr(err.msg, "field 'jpg': decode: cannot "
					      "decode JPEG"));
		}
		ch_transforms_free(tx);
	}
	free(px);
	ch_transformer_release(&tr);
	ch_buf_release(&jpg);
	ch_buf_release(&out);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "boxes"))
		return print_boxes(argc, argv);
	static const struct unit_test tests[] = {
		UNIT(specs_parse),
		UNIT(bad_specs_are_refused),
		UNIT(rng_is_keyed_and_uniform),
		UNIT(rrc_boxes_fit_and_follow_the_ranges),
		UNIT(int_labels),
		UNIT(npy_arrays),
		UNIT(raw_bytes),
		UNIT(half_floats),
		UNIT(geometry_maps_crops_to_the_source),
		UNIT(layout_and_dtype),
		UNIT(late_values_equal_a_run),
	};
	return unit_run(tests, UNIT_COUNT(tests));
}
