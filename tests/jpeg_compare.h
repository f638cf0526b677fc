/* jpeg_compare.h - one image decoded by chute's entropy decoder and by
 * libjpeg-turbo's, and whether the two agree: shared by
 * tests/unit/test_jpeg_huff.c and tests/fuzz/fuzz_jpeg.c, so that both
 * hold the decoders to the same rule.
 *
 * Where libjpeg-turbo is not self-consistent, chute goes with the
 * stricter reading, and these differences are let pass:
 *  - libjpeg-turbo's fast path decodes a bit string that is no code as a
 *    zero (its slow path warns, as chute does: "bad Huffman code");
 *  - it reads up to 7 bytes ahead of what it decodes, so that data cut
 *    short just after a region's last row fails there ("premature end
 *    of JPEG file"), where chute decodes the region;
 *  - it reads 0xFF 0xFF 0x00 in a scan as a data 0xFF from a file, as
 *    chute does, but not from memory (its fast path takes the second
 *    0xFF for a marker and loses a byte), which is how ch_image_decode
 *    feeds it. */
#ifndef CH_TESTS_JPEG_COMPARE_H
#define CH_TESTS_JPEG_COMPARE_H

#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "image/testing.h"

/* One decode's outcome: the pixels (malloc'd, rows packed) or the
 * error. */
struct jpeg_outcome {
	int rc;
	uint8_t *px;
	size_t n;
	struct ch_error err;
};

static inline struct jpeg_outcome
jpeg_outcome_of(struct ch_image_decoder *d, const uint8_t *data, size_t size,
		const struct ch_decode_req *req, enum ch_entropy who)
{
	struct jpeg_outcome o = {0};
	struct ch_decoded dec;

	ch_image_decoder_set_entropy(d, who);
	o.rc = ch_image_decode(d, data, size, req, &dec, &o.err);
	if (o.rc == 0) {
		size_t row = (size_t)dec.img.w * dec.img.c;

		o.n = row * dec.img.h;
		o.px = malloc(o.n ? o.n : 1);
		if (!o.px)
			abort();
		for (uint32_t y = 0; y < dec.img.h; y++)
			memcpy(o.px + y * row, dec.img.px + y * dec.img.stride,
			       row);
	}
	return o;
}

static inline int jpeg_has_ff_ff(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (p[i] == 0xff && p[i + 1] == 0xff)
			return 1;
	return 0;
}

/* chute's outcome a and libjpeg's l on data: the same verdict and
 * pixels, but for the differences above. */
static inline int jpeg_decoders_agree(const struct jpeg_outcome *a,
				      const struct jpeg_outcome *l,
				      const uint8_t *data, size_t size)
{
	if (a->rc == 0 && l->rc == 0)
		return (a->n == l->n && memcmp(a->px, l->px, a->n) == 0) ||
		       jpeg_has_ff_ff(data, size);
	if (a->rc == 0)
		return strstr(l->err.msg, "premature end of JPEG file") != NULL;
	if (l->rc == 0)
		return strstr(a->err.msg, "bad Huffman code") != NULL;
	return 1;
}

/* chute's two builds (for the CPU, portable): the very same verdict,
 * message and pixels. */
static inline int jpeg_builds_agree(const struct jpeg_outcome *a,
				    const struct jpeg_outcome *p)
{
	return a->rc == p->rc &&
	       (a->rc ? strcmp(a->err.msg, p->err.msg) == 0
		      : a->n == p->n && memcmp(a->px, p->px, a->n) == 0);
}

#endif
