/* visual/internal.h - what the pictures of chute share: the bitmap font
 * (font.c), images fit into a box (thumb.c).  Not public. */
#ifndef CH_VISUAL_INTERNAL_H
#define CH_VISUAL_INTERNAL_H

#include <string.h>

#include "common/internal.h"
#include "image/image.h"

/* ------------------------------------------------------------------ */
/* Font (visual/font.c)                                                 */

#define FONT_W 6 /* a glyph's advance: 5 columns and a space */
#define FONT_H 9 /* a line: 8 rows and a space */

/* Sets pixel (x, y) of img (c 3) to rgb when it is inside. */
static inline void font_dot(struct ch_image *img, int x, int y,
			    const uint8_t rgb[3])
{
	if (x < 0 || y < 0 || (uint32_t)x >= img->w || (uint32_t)y >= img->h)
		return;
	memcpy(img->px + (size_t)y * img->stride + (size_t)x * 3, rgb, 3);
}

/* Draws s[0..len) at (x, y), its top left; bytes outside ASCII 32..126
 * as '?'; what falls outside img is cut. */
void font_text(struct ch_image *img, int x, int y, const char *s,
	       size_t len, const uint8_t rgb[3]);

/* ------------------------------------------------------------------ */
/* Images fit into a box (visual/thumb.c)                               */

struct thumb_maker {
	struct ch_image_decoder *dec;
	struct ch_resampler *rs;
	struct ch_image img; /* the last image made; px owned */
	size_t cap;
};

int thumb_init(struct thumb_maker *t, struct ch_error *err);
void thumb_release(struct thumb_maker *t);
/* The JPEG or PNG in data, decoded and shrunk (never enlarged) to fit a
 * box x box square, aspect kept, as RGB in t->img (valid until the next
 * call); -1 with why when it does not decode. */
int thumb_fit(struct thumb_maker *t, const uint8_t *data, size_t size,
	      uint32_t box, struct ch_error *err);

/* Whether a field's name says it holds a JPEG or a PNG: its last
 * dot-separated part is jpg, jpeg or png. */
int visual_is_image(const char *field);

/* ------------------------------------------------------------------ */
/* A batch frame read back (visual/frame.c, man/chute-batch.5)          */

struct frame_field {
	const char *name; /* not NUL-terminated */
	uint32_t name_len, entry_size, dtype, ndim;
	uint64_t shape[4];
	const uint8_t *offsets; /* dtype bytes: nsamples + 1 u64; or NULL */
	const uint8_t *data;
	uint64_t size;
};

struct frame {
	uint32_t nsamples, nfields;
	struct frame_field *f; /* f[0] is __key__ */
};

/* Reads the frame's header and field table, every region checked to lie
 * inside it; a data error says what is wrong. */
int frame_read(const uint8_t *fr, size_t size, struct frame *out,
	       struct ch_error *err);
void frame_release(struct frame *f);
/* Sample i's value of a bytes field. */
void frame_value(const struct frame_field *f, uint32_t i,
		 const uint8_t **data, size_t *size);
/* Bytes of one item of a fixed dtype (chute-batch(5)); 0: none. */
uint32_t frame_item_size(uint32_t dtype);
int frame_field_is(const struct frame_field *f, const char *name);

#endif
