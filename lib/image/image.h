/* image/image.h - decoding and resampling 8-bit images for the transforms
 * (image/decode.c: JPEG through libjpeg-turbo, PNG through libpng;
 * image/resample.c: antialiased bilinear resampling).
 *
 * Both keep per-thread state (decoder structures, coefficient tables,
 * row buffers) that a worker creates once and reuses for every sample:
 * no allocation on the per-image path once the buffers have grown. */
#ifndef CH_IMAGE_H
#define CH_IMAGE_H

#include "common/internal.h"

enum ch_image_kind { CH_IMAGE_JPEG = 1, CH_IMAGE_PNG = 2 };

/* Interleaved 8-bit pixels: h rows of w * c bytes, stride bytes apart;
 * c is 1 (gray) or 3 (RGB). */
struct ch_image {
	uint8_t *px;
	uint32_t w, h, c;
	size_t stride;
};

/* What the header alone says. */
struct ch_image_info {
	enum ch_image_kind kind;
	uint32_t w, h;
};

/* What to decode: a region of the full-size image, at 1/denom scale. */
struct ch_decode_req {
	uint32_t channels;   /* 1: gray, 3: RGB (gray images are expanded) */
	uint32_t x, y, w, h; /* full-size pixels; inside the image, w, h > 0 */
	uint32_t denom;	     /* 1, 2, 4, 8: JPEG's DCT scaling; PNG: 1 */
};

/* What was decoded.  Pixel (u, v) of img is pixel (x0 + u, y0 + v) of the
 * image at 1/denom scale, whose pixel (X, Y) covers full-size pixels
 * [X * denom, (X + 1) * denom) and likewise in Y.  The decoded region
 * contains the requested one (scaled) and may be larger: JPEG rounds
 * it out to whole blocks. */
struct ch_decoded {
	struct ch_image img; /* pixels owned by the decoder */
	uint32_t denom;	     /* as used: PNG always 1 */
	uint32_t x0, y0;
	uint32_t sw, sh;     /* the whole image at that scale */
};

struct ch_image_decoder;
struct ch_image_decoder *ch_image_decoder_new(void);
void ch_image_decoder_free(struct ch_image_decoder *d);

/* Reads the header of a JPEG or PNG (recognised by its signature).
 * Anything else, or a header that does not parse, is an error saying
 * what the bytes are not.  A JPEG's header stays read in d: a
 * ch_image_decode of the same bytes next does not read it again. */
int ch_image_probe(struct ch_image_decoder *d, const uint8_t *data,
		   size_t size, struct ch_image_info *info,
		   struct ch_error *err);

/* Decodes req's region.  Rows below the region are not decoded (the
 * decoder stops after the region's last row); for a JPEG, the columns
 * outside it skip the inverse DCT and colour conversion
 * (jpeg_crop_scanline, jpeg_skip_scanlines).  Corrupt or truncated data
 * within what is decoded is an error, not a grey patch: libjpeg's
 * warnings count as errors.  out->img stays valid until the next call. */
int ch_image_decode(struct ch_image_decoder *d, const uint8_t *data,
		    size_t size, const struct ch_decode_req *req,
		    struct ch_decoded *out, struct ch_error *err);

struct ch_resampler;
struct ch_resampler *ch_resampler_new(void);
void ch_resampler_free(struct ch_resampler *r);

/* Resamples the box [bx, bx + bw) x [by, by + bh) of src (src's pixel
 * coordinates, fractional allowed, bw, bh > 0) into dst, which the caller
 * allocates (dst->w, dst->h, dst->stride, dst->px set; dst->c == src->c).
 * Separable triangle filter (bilinear), widened by the shrink factor when
 * shrinking so that every source pixel counts (antialiasing), as
 * Pillow's Image.resize(size, BILINEAR, box): output pixel x has its
 * centre at bx + (x + 0.5) * bw / dst->w, and the filter is cut at src's
 * edges (and renormalised), not at the box's.  Pillow's bytes but for 1
 * in a few hundred, off by 1 (16-bit weights where Pillow's have 22
 * bits); the same bytes on every CPU.  With flip, dst comes out mirrored
 * left to right. */
int ch_image_resample(struct ch_resampler *r, const struct ch_image *src,
		      double bx, double by, double bw, double bh, int flip,
		      struct ch_image *dst, struct ch_error *err);

/* ch_image_resample into planes (CHW): channel k of output pixel (x, y)
 * at dst->px[k * plane + y * dst->stride + x], with dst->stride the
 * distance between rows of a plane (at least dst->w) and plane the
 * distance between planes (they must not overlap; unused when dst->c
 * is 1).  The same bytes as ch_image_resample's, rearranged, and no
 * slower: the passes write planes directly. */
int ch_image_resample_planar(struct ch_resampler *r,
			     const struct ch_image *src, double bx, double by,
			     double bw, double bh, int flip,
			     const struct ch_image *dst, size_t plane,
			     struct ch_error *err);

/* The widest reach of the filter beyond a box, in source pixels, when
 * resampling a box of size `in` to `out` pixels: decode this much margin
 * around a box (clamped to the image) and the result is what resampling
 * the whole image would give. */
double ch_resample_support(double in, uint32_t out);

/* img (c 1 or 3) as a JPEG of quality 1..100 (4:2:0), appended to out
 * (image/encode.c).  The same pixels give the same bytes. */
int ch_image_jpeg_encode(const struct ch_image *img, int quality,
			 struct ch_buf *out, struct ch_error *err);
/* img (c 1 or 3) as a PNG, appended to out; deterministic too. */
int ch_image_png_encode(const struct ch_image *img, struct ch_buf *out,
			struct ch_error *err);

#endif
