/*
 * fuzz_jpeg.c - libFuzzer target for chute's JPEG entropy decoder
 * (lib/image/jpeg_huff.c) against libjpeg's own: any bytes, decoded whole and
 * in a region, by both.  Neither may crash (the sanitizers watch), a
 * refusal says why, and where both decode, the pixels are the same.
 *
 * libjpeg-turbo is not self-consistent in three places where chute takes
 * the stricter reading (tests/jpeg_compare.h says which): a bit string
 * that is no Huffman code, data that ends within the bytes libjpeg reads
 * ahead, and 0xFF 0xFF 0x00 in a scan.  Those differences are let pass;
 * any other is a trap.
 *
 * chute's decoder is also run in its portable build (no BMI2), which
 * must give exactly what the default build gives.
 *
 * Input: one byte choosing the region (and gray or RGB), then the JPEG.
 * Build and run: scripts/run-fuzz.sh.  Seeds: small JPEGs of every
 * sampling, with and without restart intervals and optimized tables.
 */
#include <stdlib.h>
#include <string.h>

#include "../jpeg_compare.h"
#include "image/image.h"

static void compare(struct ch_image_decoder *d, const uint8_t *data,
		    size_t size, const struct ch_decode_req *req)
{
	struct jpeg_outcome a = jpeg_outcome_of(d, data, size, req,
						CH_ENTROPY_CHUTE);
	struct jpeg_outcome p = jpeg_outcome_of(d, data, size, req,
						CH_ENTROPY_CHUTE_PORTABLE);
	struct jpeg_outcome l = jpeg_outcome_of(d, data, size, req,
						CH_ENTROPY_LIBJPEG);

	if ((a.rc && !a.err.msg[0]) || (l.rc && !l.err.msg[0]))
		__builtin_trap(); /* a refusal says why */
	if (!jpeg_builds_agree(&a, &p) ||
	    !jpeg_decoders_agree(&a, &l, data, size))
		__builtin_trap();
	free(a.px);
	free(p.px);
	free(l.px);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ch_image_decoder *d;
	struct ch_image_info info;
	struct ch_error err;
	uint8_t how;

	if (!d && !(d = ch_image_decoder_new()))
		abort();
	if (size < 1)
		return 0;
	how = data[0];
	data++;
	size--;
	if (ch_image_probe(d, data, size, &info, &err) < 0 ||
	    info.kind != CH_IMAGE_JPEG || (uint64_t)info.w * info.h > 1 << 22)
		return 0;
	struct ch_decode_req req = {how & 1 ? 1 : 3, 0, 0, info.w, info.h, 1};
	compare(d, data, size, &req);
	/* a region: rows above it entropy-decoded only, rows below not */
	req.x = (uint32_t)((uint64_t)info.w * ((how >> 1) & 3) / 4);
	req.y = (uint32_t)((uint64_t)info.h * ((how >> 3) & 3) / 4);
	req.w = info.w - req.x;
	req.h = (info.h - req.y + 1) / 2;
	req.denom = 1u << ((how >> 5) & 3);
	compare(d, data, size, &req);
	return 0;
}
