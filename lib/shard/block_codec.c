/* shard/block_codec.c - choosing and applying a block's codec. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "chute/shard.h"

/* A block is stored raw unless compression saves at least this share. */
#define MIN_SAVING_PERCENT 3
/* Order-0 entropy (bits per byte) above which a block is not even tried:
 * JPEG, PNG, zstd and gzip data sit at 7.95 and more, text below 6. */
#define ENTROPY_SKIP 7.9
#define PROBE_CHUNKS 16
#define PROBE_CHUNK 4096

struct ch_block_encoder {
	ZSTD_CCtx *cctx;
	ZSTD_CDict *cdict;
	int level;
	struct ch_buf out;
};

struct ch_block_encoder *ch_block_encoder_new(int level, const void *dict,
					      size_t dict_size)
{
	struct ch_block_encoder *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->level = level;
	e->cctx = ZSTD_createCCtx();
	if (dict && dict_size)
		e->cdict = ZSTD_createCDict(dict, dict_size, level);
	if (!e->cctx || (dict && dict_size && !e->cdict)) {
		ch_block_encoder_free(e);
		return NULL;
	}
	ZSTD_CCtx_setParameter(e->cctx, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(e->cctx, ZSTD_c_contentSizeFlag, 1);
	ZSTD_CCtx_setParameter(e->cctx, ZSTD_c_checksumFlag, 0);
	if (e->cdict)
		ZSTD_CCtx_refCDict(e->cctx, e->cdict);
	return e;
}

void ch_block_encoder_free(struct ch_block_encoder *e)
{
	if (!e)
		return;
	ZSTD_freeCCtx(e->cctx);
	ZSTD_freeCDict(e->cdict);
	ch_buf_release(&e->out);
	free(e);
}

/* Estimates order-0 entropy from a few chunks spread over the block. */
static double probe_entropy(const uint8_t *p, size_t n)
{
	uint32_t hist[256] = { 0 };
	size_t seen = 0;
	if (n <= PROBE_CHUNKS * PROBE_CHUNK) {
		for (size_t i = 0; i < n; i++)
			hist[p[i]]++;
		seen = n;
	} else {
		size_t stride = n / PROBE_CHUNKS;
		for (size_t c = 0; c < PROBE_CHUNKS; c++) {
			const uint8_t *q = p + c * stride;
			for (size_t i = 0; i < PROBE_CHUNK; i++)
				hist[q[i]]++;
		}
		seen = PROBE_CHUNKS * PROBE_CHUNK;
	}
	if (seen == 0)
		return 0;
	double h = 0;
	for (int i = 0; i < 256; i++) {
		if (!hist[i])
			continue;
		double f = (double)hist[i] / (double)seen;
		h -= f * log2(f);
	}
	return h;
}

int ch_block_encode(struct ch_block_encoder *e, const uint8_t *raw,
		    size_t raw_size, const uint8_t **stored,
		    size_t *stored_size, uint32_t *codec,
		    struct ch_error *err)
{
	*stored = raw;
	*stored_size = raw_size;
	*codec = CH_CODEC_RAW;
	if (e->level == 0)
		return 0; /* asked to store blocks raw */
	/* Tiny blocks: the probe would be noise; just try. */
	if (raw_size >= 4096 && !e->cdict &&
	    probe_entropy(raw, raw_size) > ENTROPY_SKIP)
		return 0;
	size_t bound = ZSTD_compressBound(raw_size);
	if (ch_buf_reserve(&e->out, bound, err) < 0)
		return -1;
	size_t n = ZSTD_compress2(e->cctx, e->out.data, bound, raw, raw_size);
	if (ZSTD_isError(n))
		return ch_error_set(err, "zstd compression failed: %s",
				    ZSTD_getErrorName(n));
	if (n + raw_size * MIN_SAVING_PERCENT / 100 >= raw_size)
		return 0;
	*stored = e->out.data;
	*stored_size = n;
	*codec = e->cdict ? CH_CODEC_ZSTD_DICT : CH_CODEC_ZSTD;
	return 0;
}
