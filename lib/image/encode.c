/* image/encode.c - 8-bit RGB pixels into a JPEG (TurboJPEG) or a PNG
 * (libpng), in memory: the thumbnails of chute check --html and the
 * contact sheet of chute preview.  Both are deterministic: the same
 * pixels and settings give the same bytes. */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>
#include <turbojpeg.h>

#include "image/image.h"

int ch_image_jpeg_encode(const struct ch_image *img, int quality,
			 struct ch_buf *out, struct ch_error *err)
{
	tjhandle tj = tjInitCompress();
	unsigned char *jpg = NULL;
	unsigned long size = 0;
	int rc = -1;
	if (!tj)
		return ch_error_nomem(err);
	if (img->c != 3 && img->c != 1) {
		ch_error_set(err, "cannot encode %u channels as JPEG", img->c);
		goto out;
	}
	if (tjCompress2(tj, img->px, (int)img->w, (int)img->stride, (int)img->h,
			img->c == 3 ? TJPF_RGB : TJPF_GRAY, &jpg, &size,
			img->c == 3 ? TJSAMP_420 : TJSAMP_GRAY, quality,
			TJFLAG_ACCURATEDCT) < 0) {
		ch_error_set(err, "cannot encode JPEG: %s", tjGetErrorStr2(tj));
		goto out;
	}
	rc = ch_buf_append(out, jpg, size, err);
out:
	tjFree(jpg);
	tjDestroy(tj);
	return rc;
}

/* libpng's callbacks: bytes into a ch_buf, errors by longjmp. */
struct png_out {
	struct ch_buf *buf;
	struct ch_error *err;
	int failed;
};

static void png_put(png_structp png, png_bytep data, size_t n)
{
	struct png_out *o = png_get_io_ptr(png);
	if (!o->failed && ch_buf_append(o->buf, data, n, o->err) < 0)
		o->failed = 1;
	if (o->failed)
		png_error(png, "out of memory");
}

static void png_flush_none(png_structp png)
{
	(void)png;
}

static void png_fail(png_structp png, png_const_charp msg)
{
	struct png_out *o = png_get_error_ptr(png);
	if (!o->failed)
		ch_error_set(o->err, "cannot encode PNG: %s", msg);
	o->failed = 1;
	png_longjmp(png, 1);
}

static void png_warn(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;
}

/* Everything libpng may jump out of, in one helper (see decode.c). */
static void png_rows(png_structp png, png_infop info,
		     const struct ch_image *img)
{
	png_set_IHDR(png, info, img->w, img->h, 8,
		     img->c == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY,
		     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
		     PNG_FILTER_TYPE_DEFAULT);
	png_set_compression_level(png, 6);
	png_write_info(png, info);
	for (uint32_t y = 0; y < img->h; y++)
		png_write_row(png, img->px + y * img->stride);
	png_write_end(png, info);
}

int ch_image_png_encode(const struct ch_image *img, struct ch_buf *out,
			struct ch_error *err)
{
	struct png_out o = { out, err, 0 };
	png_infop info = NULL;
	if (img->c != 3 && img->c != 1)
		return ch_error_set(err, "cannot encode %u channels as PNG",
				    img->c);
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &o,
						  png_fail, png_warn);
	if (!png || !(info = png_create_info_struct(png))) {
		png_destroy_write_struct(&png, NULL);
		return ch_error_nomem(err);
	}
	if (setjmp(png_jmpbuf(png)) == 0) {
		png_set_write_fn(png, &o, png_put, png_flush_none);
		png_rows(png, info, img);
	}
	png_destroy_write_struct(&png, &info);
	return o.failed ? -1 : 0;
}
