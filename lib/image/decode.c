/* image/decode.c - JPEG (libjpeg-turbo's libjpeg API) and PNG (libpng)
 * into 8-bit gray or RGB pixels, one region at a time.
 *
 * A decoder is one worker's: a libjpeg decompressor, made afresh for
 * each image (a decode after the probe of the same bytes takes up the
 * header the probe read), and pixel and row buffers that only ever
 * grow.
 * Both libraries report errors by longjmp: each entry point below sets
 * its jump with setjmp and does its work in helpers, so that nothing
 * but the decoder (on the heap) is read after a jump. */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>

#include "image/image.h"
#include "image/jpeg_huff.h"
#include "image/testing.h"

#define MAX_SIDE 65535
/* The most pixels an image may have: 128 Mpixels, 384 MB as RGB. */
#define MAX_PIXELS (128 << 20)

/* libjpeg's error manager, with where to jump and what to fill. */
struct jpeg_fail {
	struct jpeg_error_mgr pub;
	jmp_buf jmp;
	struct ch_error *err;
	const uint8_t *data;
	size_t size;
};

/* A buffer that only grows (its contents are not kept when it does). */
struct buf {
	void *p;
	size_t cap;
};

struct ch_image_decoder {
	struct jpeg_decompress_struct jpeg;
	struct jpeg_fail jfail;
	/* PNG: libpng cannot reset a png_struct, so one per image */
	png_structp png;
	png_infop png_info;
	struct ch_error *png_err;
	const uint8_t *png_data;
	size_t png_size, png_pos;
	/* grown as needed, never shrunk */
	struct buf px;	 /* what ch_image_decode returns */
	struct buf aux;	 /* rows to convert or to drop */
	struct buf rows; /* row pointers */
	struct jpeg_huff huff; /* the entropy decoder, for the scans it takes */
	enum ch_entropy entropy; /* who decodes a baseline scan */
	/* A probe leaves its JPEG's header read in jpeg (the decompressor
	 * is not reset), for a decode of the same bytes to take up: at data,
	 * size bytes, whose first `hdr` (what jpeg_read_header consumed)
	 * are kept in a copy to compare. */
	int held;
	const uint8_t *held_data;
	size_t held_size;
	struct buf hdr;
	size_t hdr_len;
};

/* The longest header a probe keeps (a JPEG with a large EXIF block is
 * read again, not copied). */
#define HELD_MAX 4096

/* ------------------------------------------------------------------ */
/* Shared                                                              */

static int reserve(struct buf *b, size_t n)
{
	void *q;

	if (n <= b->cap)
		return 0;
	q = malloc(n);
	if (!q)
		return -1;
	free(b->p);
	b->p = q;
	b->cap = n;
	return 0;
}

static int out_of_memory(const char *what, size_t n, struct ch_error *err)
{
	return ch_error_errno(err, ENOMEM, "cannot decode %s: %zu bytes of "
				      "buffers", what, n);
}

static enum ch_image_kind sniff(const uint8_t *data, size_t size)
{
	static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G',
					   '\r', '\n', 0x1a, '\n'};

	if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff)
		return CH_IMAGE_JPEG;
	if (size >= 8 && memcmp(data, png_sig, 8) == 0)
		return CH_IMAGE_PNG;
	return 0;
}

static int not_an_image(const uint8_t *data, size_t size,
			struct ch_error *err)
{
	char hex[16];
	size_t n = size < 4 ? size : 4;

	if (size == 0)
		return ch_error_set(err, "not a JPEG or PNG image (0 bytes)");
	for (size_t i = 0; i < n; i++)
		snprintf(hex + 3 * i, sizeof(hex) - 3 * i, "%02x ", data[i]);
	hex[3 * n - 1] = '\0';
	return ch_error_set(err, "not a JPEG or PNG image (starts with %zu "
				 "bytes %s)", n, hex);
}

static int check_size(const char *what, uint64_t w, uint64_t h,
		      struct ch_error *err)
{
	if (w == 0 || h == 0 || w > MAX_SIDE || h > MAX_SIDE)
		return ch_error_set(err,
				    "unsupported %s image: %llux%llu pixels "
				    "(sides go from 1 to %d)",
				    what, (unsigned long long)w,
				    (unsigned long long)h, MAX_SIDE);
	/* a header is a few bytes: without a cap, a corrupt or hostile one
	 * would have a worker allocate gigabytes (Pillow refuses such
	 * "decompression bombs" too) */
	if (w * h > MAX_PIXELS)
		return ch_error_set(err,
				    "%s image of %llux%llu pixels is larger "
				    "than chute decodes (%d Mpixels)", what,
				    (unsigned long long)w,
				    (unsigned long long)h, MAX_PIXELS >> 20);
	return 0;
}

static int check_req(const struct ch_decode_req *req, uint32_t w,
		     uint32_t h, struct ch_error *err)
{
	if (req->channels != 1 && req->channels != 3)
		return ch_error_set(err,
				    "cannot decode: %u channels asked (1 or 3)",
				    req->channels);
	if (req->denom != 1 && req->denom != 2 && req->denom != 4 &&
	    req->denom != 8)
		return ch_error_set(err,
				    "cannot decode: scale 1/%u asked (1, 2, 4 "
				    "or 8)", req->denom);
	if (req->w == 0 || req->h == 0 ||
	    (uint64_t)req->x + req->w > w || (uint64_t)req->y + req->h > h)
		return ch_error_set(err, "cannot decode: region %ux%u at "
				    "(%u, %u) is not inside the %ux%u image",
				    req->w, req->h, req->x, req->y, w, h);
	return 0;
}

/* PIL's luma (ITU-R 601-2 weights in 16-bit fixed point, rounded): the
 * same bytes as Image.convert('L'). */
static inline uint8_t luma(const uint8_t *p)
{
	return (uint8_t)((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 +
			  0x8000) >> 16);
}

static void rgb_to_gray(const uint8_t *restrict s, uint8_t *restrict d,
			uint32_t w)
{
	for (uint32_t x = 0; x < w; x++)
		d[x] = luma(s + 3 * x);
}

/* ------------------------------------------------------------------ */
/* JPEG                                                                */

static size_t jpeg_offset(j_common_ptr ci, const struct jpeg_fail *f)
{
	j_decompress_ptr di = (j_decompress_ptr)ci;
	uintptr_t at, lo = (uintptr_t)f->data;

	if (!ci->is_decompressor || !di->src || !f->data)
		return 0;
	at = (uintptr_t)di->src->next_input_byte;
	/* past the end, jpeg_mem_src reads a fake EOI of its own */
	return at >= lo && at <= lo + f->size ? at - lo : f->size;
}

static void jpeg_on_error(j_common_ptr ci)
{
	struct jpeg_fail *f = (struct jpeg_fail *)ci->err;
	char msg[JMSG_LENGTH_MAX];

	ci->err->format_message(ci, msg);
	/* "Premature end..." reads better lowercase after a colon */
	if (msg[0] >= 'A' && msg[0] <= 'Z' && msg[1] >= 'a' && msg[1] <= 'z')
		msg[0] = (char)(msg[0] - 'A' + 'a');
	ch_error_set(f->err, "cannot decode JPEG: %s (at byte %zu of %zu)",
		     msg, jpeg_offset(ci, f), f->size);
	longjmp(f->jmp, 1);
}

/* Warnings (level -1) are corrupt or missing data that libjpeg would
 * paper over with grey: errors here.  Two are not: an unknown JFIF
 * version is only a header curiosity, and stray bytes before a marker
 * (common in ImageNet's files) lose no pixel; trace messages (level >= 0)
 * are ignored. */
static void jpeg_on_message(j_common_ptr ci, int level)
{
	int harmless = ci->err->msg_code == JWRN_JFIF_MAJOR ||
		       ci->err->msg_code == JWRN_EXTRANEOUS_DATA;
	if (level < 0 && !harmless)
		jpeg_on_error(ci);
}

/* jpeg_create_decompress reports running out of memory by longjmp. */
static int jpeg_init(struct ch_image_decoder *d)
{
	d->jpeg.err = jpeg_std_error(&d->jfail.pub);
	d->jfail.pub.error_exit = jpeg_on_error;
	d->jfail.pub.emit_message = jpeg_on_message;
	if (setjmp(d->jfail.jmp))
		return -1;
	jpeg_create_decompress(&d->jpeg);
	return 0;
}

struct ch_image_decoder *ch_image_decoder_new(void)
{
	struct ch_image_decoder *d = calloc(1, sizeof(*d));

	if (d && jpeg_init(d) < 0) {
		free(d);
		return NULL;
	}
	return d;
}

void ch_image_decoder_set_entropy(struct ch_image_decoder *d,
				  enum ch_entropy who)
{
	d->entropy = who;
}

void ch_image_decoder_free(struct ch_image_decoder *d)
{
	if (!d)
		return;
	jpeg_destroy_decompress(&d->jpeg);
	free(d->px.p);
	free(d->aux.p);
	free(d->rows.p);
	free(d->hdr.p);
	free(d);
}

/* Adobe's CMYK JPEGs store inverted inks (the Adobe marker says so);
 * then PIL's CMYK to RGB (no colour management): R = (1 - C)(1 - K). */
static void cmyk_row(const uint8_t *restrict s, uint8_t *restrict d,
		     uint32_t w, uint32_t channels, int inverted)
{
	for (uint32_t x = 0; x < w; x++, s += 4) {
		int inv = inverted ? 255 : 0;
		int nk = 255 - (s[3] ^ inv), t;
		uint8_t rgb[3];

		for (int i = 0; i < 3; i++) {
			t = (s[i] ^ inv) * nk + 128;
			rgb[i] = (uint8_t)(nk - (((t >> 8) + t) >> 8));
		}
		if (channels == 3)
			memcpy(d + 3 * x, rgb, 3);
		else
			d[x] = luma(rgb);
	}
}

/* The region's rows, read: straight into px, or through aux for CMYK. */
static int jpeg_rows(struct ch_image_decoder *d, struct ch_decoded *out,
		     int cmyk, struct ch_error *err)
{
	j_decompress_ptr ci = &d->jpeg;
	struct ch_image *im = &out->img;
	size_t row = (size_t)im->w * ci->output_components;
	uint32_t done = 0;
	uint8_t **rows;

	if (cmyk && reserve(&d->aux, row) < 0)
		return out_of_memory("JPEG", row, err);
	if (reserve(&d->rows, im->h * sizeof(uint8_t *)) < 0)
		return out_of_memory("JPEG", im->h * sizeof(uint8_t *), err);
	rows = d->rows.p;
	for (uint32_t y = 0; y < im->h; y++)
		rows[y] = cmyk ? d->aux.p : im->px + y * im->stride;
	while (done < im->h) {
		JDIMENSION n = jpeg_read_scanlines(ci, rows + done,
						   cmyk ? 1 : im->h - done);

		if (n == 0)
			return ch_error_set(err, "cannot decode JPEG: no row "
					    "came at row %u", out->y0 + done);
		if (cmyk)
			cmyk_row(d->aux.p, im->px + done * im->stride, im->w,
				 im->c, ci->saw_Adobe_marker);
		done += n;
	}
	return 0;
}

static uint32_t div_up(uint64_t a, uint32_t b)
{
	return (uint32_t)((a + b - 1) / b);
}

/* After jpeg_read_header: decodes req's region (may longjmp). */
static int jpeg_region(struct ch_image_decoder *d,
		       const struct ch_decode_req *req,
		       struct ch_decoded *out, struct ch_error *err)
{
	j_decompress_ptr ci = &d->jpeg;
	int cmyk = ci->jpeg_color_space == JCS_CMYK ||
		   ci->jpeg_color_space == JCS_YCCK;
	uint32_t dn = req->denom, y1, cut_left, cut_right;
	JDIMENSION x0, w;
	size_t n;

	if (check_req(req, ci->image_width, ci->image_height, err) < 0)
		return -1;
	/* one channel from a colour JPEG is its own luma, Y: libjpeg then
	 * skips the chroma's IDCT, upsampling and colour conversion.  PIL's
	 * convert('L') recomputes it from the rounded RGB (differences of
	 * up to 12, 0.3 on average, measured on a photo) */
	ci->out_color_space = cmyk		  ? JCS_CMYK
			      : req->channels == 3 ? JCS_RGB
						   : JCS_GRAYSCALE;
	ci->scale_num = 1;
	ci->scale_denom = dn;
	jpeg_start_decompress(ci);
	if (d->entropy != CH_ENTROPY_LIBJPEG)
		jpeg_huff_install(&d->huff, ci,
				  d->entropy == CH_ENTROPY_CHUTE_PORTABLE);
	if (ci->output_components != (cmyk ? 4 : (int)req->channels))
		return ch_error_set(err, "cannot decode JPEG: %d components "
				    "out", ci->output_components);
	out->denom = dn;
	out->sw = ci->output_width;
	out->sh = ci->output_height;
	/* the scaled pixels covering the region, and one more column each
	 * side: crop rounds out to whole iMCUs, but fancy upsampling of
	 * subsampled chroma replicates it at the crop's edges, so the
	 * crop's outer columns differ from a whole decode (by up to 14
	 * measured): decoded, then left out */
	x0 = req->x / dn;
	x0 = x0 > 0 ? x0 - 1 : 0;
	w = div_up((uint64_t)req->x + req->w, dn) + 1;
	w = (w < out->sw ? w : out->sw) - x0;
	out->y0 = req->y / dn;
	y1 = div_up((uint64_t)req->y + req->h, dn);
	y1 = y1 < out->sh ? y1 : out->sh;
	if (w < ci->output_width)
		jpeg_crop_scanline(ci, &x0, &w);
	cut_left = x0 > 0;
	cut_right = x0 + w < out->sw;
	out->img = (struct ch_image){.w = w, .h = y1 - out->y0,
				     .c = req->channels,
				     .stride = (size_t)w * req->channels};
	n = out->img.stride * out->img.h;
	if (reserve(&d->px, n) < 0)
		return out_of_memory("JPEG", n, err);
	out->img.px = d->px.p;
	if (out->y0 > 0 && jpeg_skip_scanlines(ci, out->y0) != out->y0)
		return ch_error_set(err, "cannot decode JPEG: cannot skip to "
				    "row %u", out->y0);
	if (jpeg_rows(d, out, cmyk, err) < 0)
		return -1;
	out->x0 = x0 + cut_left;
	out->img.px += cut_left * out->img.c;
	out->img.w -= cut_left + cut_right;
	return 0;
}

/* After a probe's jpeg_read_header: keeps the decompressor as it is and
 * a copy of the header for the decode that usually follows (1), unless
 * the header is long (0). */
static int hold_header(struct ch_image_decoder *d)
{
	size_t n = (size_t)(d->jpeg.src->next_input_byte - d->jfail.data);

	if (n > HELD_MAX || n > d->jfail.size || reserve(&d->hdr, n) < 0)
		return 0;
	memcpy(d->hdr.p, d->jfail.data, n);
	d->hdr_len = n;
	d->held_data = d->jfail.data;
	d->held_size = d->jfail.size;
	d->held = 1;
	return 1;
}

/* Whether the header held is that of these bytes: read again, it would
 * give the same decompressor (a new one reads only those bytes). */
static int header_held(const struct ch_image_decoder *d, const uint8_t *data,
		       size_t size)
{
	return d->held && data == d->held_data && size == d->held_size &&
	       memcmp(data, d->hdr.p, d->hdr_len) == 0;
}

/* After the header: the image's size, then its region if req is set;
 * the decompressor is reset for the next image, or held after a probe
 * (may longjmp). */
static int jpeg_steps(struct ch_image_decoder *d,
		      const struct ch_decode_req *req, struct ch_decoded *out,
		      struct ch_image_info *info, struct ch_error *err)
{
	int rc = 0;

	if (check_size("JPEG", d->jpeg.image_width, d->jpeg.image_height,
		       err) < 0) {
		rc = -1;
	} else if (info) {
		*info = (struct ch_image_info){CH_IMAGE_JPEG,
					       d->jpeg.image_width,
					       d->jpeg.image_height};
		if (hold_header(d))
			return 0;
	} else {
		rc = jpeg_region(d, req, out, err);
	}
	jpeg_abort_decompress(&d->jpeg);
	return rc;
}

/* After the jump is set: reads the header, unless the one held is
 * taken up (may longjmp). */
static int jpeg_go(struct ch_image_decoder *d, const uint8_t *data,
		   size_t size, const struct ch_decode_req *req,
		   struct ch_decoded *out, struct ch_image_info *info,
		   struct ch_error *err)
{
	if (!d->held) {
		jpeg_mem_src(&d->jpeg, data, (unsigned long)size);
		jpeg_read_header(&d->jpeg, TRUE);
	}
	d->held = 0;
	return jpeg_steps(d, req, out, info, err);
}

static int jpeg_run(struct ch_image_decoder *d, const uint8_t *data,
		    size_t size, const struct ch_decode_req *req,
		    struct ch_decoded *out, struct ch_image_info *info,
		    struct ch_error *err)
{
	/* a decode right after the probe of the same bytes starts from the
	 * header the probe read (a microsecond less an image) */
	d->held = !info && header_held(d, data, size);
	/* otherwise a new decompressor: libjpeg keeps the quantization and
	 * Huffman tables of one image for the next (for abbreviated
	 * streams), and a JPEG lacking its own would decode with whatever
	 * this worker decoded before, so that its pixels would depend on
	 * --workers.  A new decompressor costs a quarter of a microsecond. */
	if (!d->held) {
		jpeg_destroy_decompress(&d->jpeg);
		if (jpeg_init(d) < 0)
			return ch_error_errno(err, ENOMEM, "cannot decode JPEG: "
					      "no memory for a decompressor");
	}
	d->jfail.err = err;
	d->jfail.data = data;
	d->jfail.size = size;
	if (setjmp(d->jfail.jmp)) {
		d->held = 0;
		jpeg_abort_decompress(&d->jpeg);
		return -1;
	}
	return jpeg_go(d, data, size, req, out, info, err);
}

/* ------------------------------------------------------------------ */
/* PNG                                                                 */

static void png_on_error(png_structp png, png_const_charp msg)
{
	struct ch_image_decoder *d = png_get_error_ptr(png);

	ch_error_set(d->png_err, "cannot decode PNG: %s (at byte %zu of %zu)",
		     msg, d->png_pos, d->png_size);
	png_longjmp(png, 1);
}

/* Ancillary trouble (a bad gamma, an unknown chunk): pixels are fine. */
static void png_on_warning(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;
}

static void png_read_mem(png_structp png, png_bytep buf, size_t n)
{
	struct ch_image_decoder *d = png_get_io_ptr(png);

	if (n > d->png_size - d->png_pos)
		png_error(png, "truncated PNG");
	memcpy(buf, d->png_data + d->png_pos, n);
	d->png_pos += n;
}

/* Asks libpng for 8-bit gray or RGB, as PIL's convert('RGB') would give:
 * 16 bits cut to their high byte, palettes expanded, alpha and tRNS
 * dropped (not composited).  Returns the channels libpng will give. */
static uint32_t png_setup(png_structp png, png_infop info,
			  uint32_t channels)
{
	int depth = png_get_bit_depth(png, info);
	int color = png_get_color_type(png, info);

	if (depth == 16)
		png_set_strip_16(png);
	if (color == PNG_COLOR_TYPE_PALETTE)
		png_set_palette_to_rgb(png);
	if (color == PNG_COLOR_TYPE_GRAY && depth < 8)
		png_set_expand_gray_1_2_4_to_8(png);
	png_set_strip_alpha(png);
	if (!(color & PNG_COLOR_MASK_COLOR) && channels == 3)
		png_set_gray_to_rgb(png);
	return color & PNG_COLOR_MASK_COLOR ? 3 : channels;
}

/* Interlaced: the whole image, then the region's rows. */
static int png_whole(struct ch_image_decoder *d, struct ch_decoded *out,
		     uint32_t got, uint32_t sh, struct ch_error *err)
{
	struct ch_image *im = &out->img;
	size_t row = (size_t)im->w * got, n = row * sh;
	uint8_t *all, **rows;

	if (got != im->c && reserve(&d->aux, n) < 0)
		return out_of_memory("PNG", n, err);
	if (reserve(&d->rows, sh * sizeof(uint8_t *)) < 0)
		return out_of_memory("PNG", sh * sizeof(uint8_t *), err);
	all = got != im->c ? d->aux.p : d->px.p;
	rows = d->rows.p;
	for (uint32_t y = 0; y < sh; y++)
		rows[y] = all + y * row;
	png_read_image(d->png, rows);
	if (got == im->c) {
		im->px = all + out->y0 * im->stride;
		return 0;
	}
	for (uint32_t y = 0; y < im->h; y++)
		rgb_to_gray(rows[out->y0 + y], im->px + y * im->stride, im->w);
	return 0;
}

/* Not interlaced: row by row, dropping the rows above the region and
 * stopping after its last. */
static int png_rows(struct ch_image_decoder *d, struct ch_decoded *out,
		    uint32_t got, struct ch_error *err)
{
	struct ch_image *im = &out->img;
	size_t row = (size_t)im->w * got;

	if (reserve(&d->aux, row) < 0)
		return out_of_memory("PNG", row, err);
	for (uint32_t y = 0; y < out->y0; y++)
		png_read_row(d->png, d->aux.p, NULL);
	for (uint32_t y = 0; y < im->h; y++) {
		uint8_t *dst = im->px + (size_t)y * im->stride;

		png_read_row(d->png, got == im->c ? dst : d->aux.p, NULL);
		if (got != im->c)
			rgb_to_gray(d->aux.p, dst, im->w);
	}
	return 0;
}

/* Decodes req's region of the PNG being read (may longjmp).  Columns are
 * not cut: x0 is 0 and rows are whole. */
static int png_region(struct ch_image_decoder *d,
		      const struct ch_decode_req *req,
		      struct ch_decoded *out, struct ch_error *err)
{
	png_structp png = d->png;
	png_infop info = d->png_info;
	uint32_t w, h, got;
	int passes;
	size_t n;

	png_read_info(png, info);
	w = png_get_image_width(png, info);
	h = png_get_image_height(png, info);
	if (check_size("PNG", w, h, err) < 0 || check_req(req, w, h, err) < 0)
		return -1;
	got = png_setup(png, info, req->channels);
	passes = png_set_interlace_handling(png);
	png_read_update_info(png, info);
	if (png_get_channels(png, info) != got ||
	    png_get_rowbytes(png, info) != (size_t)w * got)
		return ch_error_set(err, "cannot decode PNG: %d channels of "
				    "%zu bytes a row out",
				    png_get_channels(png, info),
				    png_get_rowbytes(png, info));
	*out = (struct ch_decoded){.denom = 1, .y0 = req->y, .sw = w, .sh = h};
	out->img = (struct ch_image){.w = w, .h = req->h, .c = req->channels,
				     .stride = (size_t)w * req->channels};
	n = out->img.stride * (passes > 1 && got == req->channels ? h : req->h);
	if (reserve(&d->px, n) < 0)
		return out_of_memory("PNG", n, err);
	out->img.px = d->px.p;
	if (passes > 1)
		return png_whole(d, out, got, h, err);
	return png_rows(d, out, got, err);
}

static int png_run(struct ch_image_decoder *d, const uint8_t *data,
		   size_t size, const struct ch_decode_req *req,
		   struct ch_decoded *out, struct ch_error *err)
{
	int rc;

	d->png_err = err;
	d->png_data = data;
	d->png_size = size;
	d->png_pos = 0;
	d->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, d, png_on_error,
				       png_on_warning);
	if (d->png)
		d->png_info = png_create_info_struct(d->png);
	if (!d->png || !d->png_info) {
		png_destroy_read_struct(&d->png, NULL, NULL);
		return ch_error_errno(err, ENOMEM, "cannot decode PNG");
	}
	if (setjmp(png_jmpbuf(d->png))) {
		png_destroy_read_struct(&d->png, &d->png_info, NULL);
		return -1;
	}
	png_set_read_fn(d->png, d, png_read_mem);
	rc = png_region(d, req, out, err);
	png_destroy_read_struct(&d->png, &d->png_info, NULL);
	return rc;
}

/* The IHDR chunk follows the signature: length 13, "IHDR", width and
 * height big-endian. */
static int png_probe(const uint8_t *data, size_t size,
		     struct ch_image_info *info, struct ch_error *err)
{
	const uint8_t *p = data + 8;
	uint32_t w, h;

	if (size < 8 + 8 + 13 || memcmp(p, "\0\0\0\x0dIHDR", 8) != 0)
		return ch_error_set(err, "cannot decode PNG: no IHDR chunk "
				    "first (%zu bytes)", size);
	w = (uint32_t)p[8] << 24 | (uint32_t)p[9] << 16 | p[10] << 8 | p[11];
	h = (uint32_t)p[12] << 24 | (uint32_t)p[13] << 16 | p[14] << 8 | p[15];
	if (check_size("PNG", w, h, err) < 0)
		return -1;
	*info = (struct ch_image_info){CH_IMAGE_PNG, w, h};
	return 0;
}

/* ------------------------------------------------------------------ */
/* Entry points                                                        */

int ch_image_probe(struct ch_image_decoder *d, const uint8_t *data,
		   size_t size, struct ch_image_info *info,
		   struct ch_error *err)
{
	switch (sniff(data, size)) {
	case CH_IMAGE_JPEG:
		return jpeg_run(d, data, size, NULL, NULL, info, err);
	case CH_IMAGE_PNG:
		return png_probe(data, size, info, err);
	}
	return not_an_image(data, size, err);
}

int ch_image_decode(struct ch_image_decoder *d, const uint8_t *data,
		    size_t size, const struct ch_decode_req *req,
		    struct ch_decoded *out, struct ch_error *err)
{
	switch (sniff(data, size)) {
	case CH_IMAGE_JPEG:
		return jpeg_run(d, data, size, req, out, NULL, err);
	case CH_IMAGE_PNG:
		return png_run(d, data, size, req, out, err);
	}
	return not_an_image(data, size, err);
}
