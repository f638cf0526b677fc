/* image/jpeg_huff.h - a faster Huffman decoder for baseline JPEG scans, put in
 * place of libjpeg-turbo's own.
 *
 * Entropy decoding is two thirds of what a training transform spends on
 * a JPEG, and it cannot be skipped: every block up to the crop's last
 * row must be decoded to find where the next one starts.  libjpeg-turbo
 * reads a code, then its value, then extends its sign, refilling its bit
 * buffer a byte at a time; this decoder reads the commonest coefficients
 * (short codes and small values) two at a time in one table lookup, and
 * refills eight bytes at a time where no 0xFF byte is among them.  The
 * lookups' latency is what bounds it.  The blocks no one reads (the rows
 * above the crop, and, with jpegint.h, the MCU columns beside it) need
 * only where they end, not their values: another table reads as many
 * of their symbols a lookup as its bits hold.  It yields the same
 * coefficients as libjpeg, and takes libjpeg's warnings for the same
 * damage (a bad code, data cut short by a marker, a wrong restart marker):
 * image/decode.c's handler makes those errors.
 *
 * libjpeg lets no one supply an entropy decoder, but its decompressor
 * calls the one it has through cinfo->entropy->decode_mcu (jpegint.h,
 * unchanged since libjpeg 6b): jpeg_huff_install sets that pointer once
 * jpeg_start_decompress has built the decompressor.  Only a sequential,
 * Huffman-coded, 8-bit scan holding every component is taken over, the
 * one scan such a file has; any other JPEG keeps libjpeg's decoder. */
#ifndef CH_JPEG_HUFF_H
#define CH_JPEG_HUFF_H

#include <stdint.h>
#include <stdio.h>

#include <jpeglib.h>

#define JH_FAST 10 /* bits a code lookup takes */
#define JH_PAIR 11 /* bits an AC symbols lookup takes */
#define JH_SKIP 13 /* bits a skipped block's lookup takes */

/* One Huffman table: codes of up to JH_FAST bits by lookup, longer ones
 * the canonical way. */
struct jh_table {
	uint16_t fast[1 << JH_FAST];	/* len << 8 | symbol; 0: longer code */
	/* DC: the next difference, see fill_dc in image/jpeg_huff.c.
	 * AC: the next one or two symbols with their values: bits
	 * 0-5 all they take, 6-11 what the first takes, 12-17 the first's
	 * run, 18-24 the step from the first's coefficient to the second's
	 * (0: no second), 32-47 and 48-63 the values; 0: decode slowly */
	uint64_t pair[1 << JH_PAIR];
	/* AC, for blocks no one reads (see skip_block): the next symbols,
	 * values and all, as many as fit, up to an end of block: bits 0-5
	 * all they take, 6-11 lim, the last k they may start at (then
	 * they move it by 64 - lim: onto 64 at most), 13 whether the last
	 * is an end of block (then lim is 63 less their step); 0 (lim 0):
	 * decode slowly */
	uint16_t skip[1 << JH_SKIP];
	int32_t maxcode[17];		/* largest code of each length; -1 */
	int32_t valoff[17];		/* vals index of a length's code 0 */
	uint8_t vals[256];
};

/* A decoder's state: the tables in use and where the scan is. */
struct jpeg_huff {
	struct jh_table dc[4], ac[4];
	JHUFF_TBL dc_src[4], ac_src[4]; /* what each was built from */
	unsigned built;			 /* bit 4 * ac + slot: built */
	const struct jh_table *blk_dc[D_MAX_BLOCKS_IN_MCU];
	const struct jh_table *blk_ac[D_MAX_BLOCKS_IN_MCU];
	int blk_comp[D_MAX_BLOCKS_IN_MCU];
	int last_dc[MAX_COMPS_IN_SCAN];
	/* the bit reader: n bits of acc, from its top bit; the last `fake`
	 * of them are zeros put after a marker or the data's end */
	uint64_t acc;
	int n, fake;
	const uint8_t *p, *end;
	unsigned restarts_to_go;
	int next_restart; /* 0..7: the RSTn marker due next */
	unsigned mcu_col; /* the next MCU's column */
};

/* Takes over ci's entropy decoding if the scan is one this decoder
 * handles; returns 1 if it did, 0 if libjpeg keeps it.  Call after
 * jpeg_start_decompress and before reading the first row; h lives as
 * long as that decompression.  The build for the CPU (BMI2) is used
 * where it runs, unless portable is set (for tests). */
int jpeg_huff_install(struct jpeg_huff *h, j_decompress_ptr ci, int portable);

#endif
