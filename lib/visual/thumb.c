/* visual/thumb.c - a JPEG or PNG decoded small: at the coarsest DCT
 * scale that still covers the box, then resampled (image/) to fit it. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "visual/internal.h"

int thumb_init(struct thumb_maker *t, struct ch_error *err)
{
	memset(t, 0, sizeof(*t));
	t->dec = ch_image_decoder_new();
	t->rs = ch_resampler_new();
	if (!t->dec || !t->rs) {
		thumb_release(t);
		return ch_error_nomem(err);
	}
	return 0;
}

void thumb_release(struct thumb_maker *t)
{
	ch_image_decoder_free(t->dec);
	ch_resampler_free(t->rs);
	free(t->img.px);
	memset(t, 0, sizeof(*t));
}

int visual_is_image(const char *field)
{
	const char *dot = strrchr(field, '.');
	const char *ext = dot ? dot + 1 : field;
	return !strcasecmp(ext, "jpg") || !strcasecmp(ext, "jpeg") ||
	       !strcasecmp(ext, "png");
}

/* The size of a w x h image fit into box (never enlarged). */
static void fit(uint32_t w, uint32_t h, uint32_t box, uint32_t *tw,
		uint32_t *th)
{
	uint32_t m = w > h ? w : h;
	*tw = w, *th = h;
	if (m <= box)
		return;
	*tw = (uint32_t)(((uint64_t)w * box + m / 2) / m);
	*th = (uint32_t)(((uint64_t)h * box + m / 2) / m);
	*tw += *tw == 0;
	*th += *th == 0;
}

int thumb_fit(struct thumb_maker *t, const uint8_t *data, size_t size,
	      uint32_t box, struct ch_error *err)
{
	struct ch_image_info info;
	struct ch_decoded d;
	uint32_t denom = 1, tw, th;
	if (ch_image_probe(t->dec, data, size, &info, err) < 0)
		return -1;
	uint32_t m = info.w > info.h ? info.w : info.h;
	while (info.kind == CH_IMAGE_JPEG && denom < 8 && m / (denom * 2) >= box)
		denom *= 2;
	struct ch_decode_req req = { 3, 0, 0, info.w, info.h, denom };
	if (ch_image_decode(t->dec, data, size, &req, &d, err) < 0)
		return -1;
	fit(info.w, info.h, box, &tw, &th);
	size_t need = (size_t)tw * th * 3;
	if (need > t->cap) {
		uint8_t *px = realloc(t->img.px, need);
		if (!px)
			return ch_error_nomem(err);
		t->img.px = px;
		t->cap = need;
	}
	t->img.w = tw, t->img.h = th, t->img.c = 3, t->img.stride = tw * 3;
	return ch_image_resample(t->rs, &d.img, -(double)d.x0, -(double)d.y0,
				 d.sw, d.sh, 0, &t->img, err);
}
