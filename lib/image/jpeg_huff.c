/* image/jpeg_huff.c - baseline JPEG entropy decoding (ITU T.81 F.2.2), in place
 * of libjpeg-turbo's: see image/jpeg_huff.h for why and when.
 *
 * The bit reader keeps up to 64 bits, the next one at the top.  Where the
 * next 8 bytes hold no 0xFF (so no stuffed byte and no marker), a refill
 * is one load; otherwise bytes come one at a time, 0xFF 0x00 standing for
 * 0xFF.  At a marker or the data's end, zeros come instead (`fake`
 * counts them): decoding into them is libjpeg's "premature end of data
 * segment", checked once per MCU. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>
#if defined(__has_include) && !defined(CH_NO_JPEGINT)
#if __has_include(<jpegint.h>)
#include <jpegint.h>
#define HAVE_JPEGINT_H 1
#endif
#endif
#ifndef HAVE_JPEGINT_H
/* Debian installs libjpeg-turbo's jpegint.h, upstream does not: the two
 * structs used here, as libjpeg 6b laid them out and libjpeg-turbo (ABI
 * 6.2) keeps them. */
struct jpeg_entropy_decoder {
	void (*start_pass)(j_decompress_ptr cinfo);
	boolean (*decode_mcu)(j_decompress_ptr cinfo, JBLOCKROW *MCU_data);
	boolean insufficient_data;
};
struct jpeg_input_controller {
	int (*consume_input)(j_decompress_ptr cinfo);
	void (*reset_input_controller)(j_decompress_ptr cinfo);
	void (*start_input_pass)(j_decompress_ptr cinfo);
	void (*finish_input_pass)(j_decompress_ptr cinfo);
	boolean has_multiple_scans;
	boolean eoi_reached;
};
#endif

#include "image/jpeg_huff.h"

/* The hot helpers are inlined into each variant of decode_mcu, so that
 * the BMI2 one is BMI2 throughout (see decode_mcu_bmi2). */
#define HOT static inline __attribute__((always_inline))

/* Zigzag to natural order, and 63 more entries past the block's end:
 * a run in corrupt data that goes past it puts its coefficient at 63, as
 * libjpeg's table (jutils.c) does, and an end of block, a run of 63 with
 * the value 0 (see fill_single), writes 0 there, which it already is:
 * coefficient 63 is the last one, so nothing has been put there yet. */
static const uint8_t natural[64 + 63] = {
	0,  1,	8,  16, 9,  2,	3,  10, 17, 24, 32, 25, 18, 11, 4,  5,
	12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6,	7,  14, 21, 28,
	35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
	58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
};

/* ------------------------------------------------------------------ */
/* Tables                                                              */

/* The value a coefficient's s extra bits stand for (F.2.2.1). */
HOT int extend(uint32_t v, int s)
{
	return v < (1u << (s - 1)) ? (int)v - (1 << s) + 1 : (int)v;
}

/* single[i], for the JH_PAIR bits i, when they begin with an AC symbol
 * and all of its value: used bits | run << 8 | value << 16 (used is 1 at
 * least, so 0 stands for "not here").  An end of block is a run of 63
 * with the value 0: past the block's end, onto coefficient 63, which is
 * 0 (the last one, nothing has been put there yet); sixteen zeros are a
 * run of 15 with the value 0, put on a zero likewise.  An EOBn (run
 * 1-14, no value), which libjpeg also takes for an end of block, is left
 * to the slow path. */
static void fill_single(uint32_t *single, uint32_t code, int len, int rs)
{
	int run = rs >> 4, s = rs & 15;
	uint32_t first = code << (JH_PAIR - len), n = 1u << (JH_PAIR - len);

	if ((s == 0 && run != 0 && run != 15) || len + s > JH_PAIR)
		return;
	if (s == 0 && run == 0)
		run = 63;
	for (uint32_t i = first; i < first + n; i++) {
		uint32_t v = s ? (i >> (JH_PAIR - len - s)) & ((1u << s) - 1)
			       : 0;
		uint16_t value = (uint16_t)(int16_t)(s ? extend(v, s) : 0);

		single[i] = (uint32_t)value << 16 | (uint32_t)run << 8 |
			    (uint32_t)(len + s);
	}
}

/* For a DC table, pair[i] is the difference the JH_PAIR bits i begin
 * with, code and value, when all of it is there: used bits | the
 * difference << 32; 0: decode slowly. */
static void fill_dc(struct jh_table *t, uint32_t code, int len, int sym)
{
	int s = sym & 15;
	uint32_t first = code << (JH_PAIR - len), n = 1u << (JH_PAIR - len);

	if (len + s > JH_PAIR)
		return;
	for (uint32_t i = first; i < first + n; i++) {
		uint32_t v = s ? (i >> (JH_PAIR - len - s)) & ((1u << s) - 1)
			       : 0;
		uint16_t diff = (uint16_t)(int16_t)(s ? extend(v, s) : 0);

		t->pair[i] = (uint64_t)diff << 32 | (uint64_t)(len + s);
	}
}

/* pair[i], for the JH_PAIR bits i: one AC symbol and, where it fits and
 * the first is not an end of block, the next one too (see image/jpeg_huff.h
 * for the fields).  A pair halves the lookups, whose latency is what
 * bounds entropy decoding.  The second symbol is looked up in single
 * with zeros for the bits past i, and taken only if it ends before them:
 * then they do not matter. */
static void fill_pairs(struct jh_table *t, const uint32_t *single)
{
	const uint32_t all = 1u << JH_PAIR;

	for (uint32_t i = 0; i < all; i++) {
		uint32_t e1 = single[i], e2;
		uint32_t u1 = e1 & 31, r1 = (e1 >> 8) & 63, tot = u1;
		uint32_t step2 = 0, v1 = e1 >> 16, v2 = v1;

		t->pair[i] = 0;
		if (!e1)
			continue;
		if (r1 != 63 && u1 < JH_PAIR) {
			e2 = single[(i << u1) & (all - 1)];
			if (e2 && (e2 & 31) <= JH_PAIR - u1) {
				step2 = 1 + ((e2 >> 8) & 63);
				tot += e2 & 31;
				v2 = e2 >> 16;
			}
		}
		t->pair[i] = (uint64_t)tot | (uint64_t)u1 << 6 |
			     (uint64_t)r1 << 12 | (uint64_t)step2 << 18 |
			     (uint64_t)v1 << 32 | (uint64_t)v2 << 48;
	}
}

/* The entries for r bits (see fill_skip) that begin with the code of
 * len bits for sym (its run and size). */
static void skip_code(uint16_t *out, uint32_t r, uint32_t code, uint32_t len,
		      int sym, const uint16_t *seq)
{
	uint32_t run = (uint32_t)sym >> 4, s = sym & 15, used = len + s;
	uint32_t step = run + 1, after;
	const uint16_t *rest;

	if (used > r || (s == 0 && run != 0 && run != 15))
		return; /* too long, or an EOBn: decoded slowly */
	out += code << (r - len);
	after = 1u << (r - used);
	rest = seq + after;
	/* it, then the entry of the bits after it if k can take that too
	 * (lim - step is still a k in the block): their lim is the rest's
	 * less its step */
	for (uint32_t j = 0; j < after; j++) {
		uint32_t e = rest[j];

		if (s == 0 && run == 0) /* an end of block ends them */
			out[j] = (uint16_t)(used | (63u | 128u) << 6);
		else if (((e >> 6) & 63) > step)
			out[j] = (uint16_t)(e + used - (step << 6));
		else
			out[j] = (uint16_t)(used | (64 - step) << 6);
	}
	/* the same whatever its value's bits */
	for (uint32_t v = 1; v < 1u << s; v++)
		memcpy(out + v * after, out, after * sizeof(*out));
}

/* skip[i]: as many AC symbols as the JH_SKIP bits i hold whole, up to an
 * end of block (see image/jpeg_huff.h for the fields).  seq + 2^r holds
 * the same for r bits, r < JH_SKIP, built from fewer: for each symbol,
 * its entries are it, then the entry of the bits after it, computed
 * once and copied for each value its bits may hold.  Images with tables
 * of their own build theirs each time: this stays a few stores an
 * entry. */
static void fill_skip(struct jh_table *t, const JHUFF_TBL *ht)
{
	uint16_t seq[1 << JH_SKIP];

	seq[1] = 0; /* r = 0: nothing */
	for (uint32_t r = 1; r <= JH_SKIP; r++) {
		uint16_t *out = r < JH_SKIP ? seq + (1u << r) : t->skip;
		uint32_t code = 0;
		int count = 0;

		memset(out, 0, sizeof(*out) << r);
		for (uint32_t len = 1; len <= r; len++, code <<= 1)
			for (int i = 0; i < ht->bits[len]; i++, code++)
				skip_code(out, r, code, len,
					  ht->huffval[count++], seq);
	}
}

/* Builds t from a DHT table that libjpeg has already checked (its
 * start_pass refuses bogus ones); the checks here only keep t's arrays
 * in bounds whatever the table says. */
static int build(struct jh_table *t, const JHUFF_TBL *ht, int ac)
{
	uint32_t single[1 << JH_PAIR];
	int32_t code = 0, count = 0;

	memset(t->fast, 0, sizeof(t->fast));
	if (ac)
		memset(single, 0, sizeof(single));
	else
		memset(t->pair, 0, sizeof(t->pair));
	for (int len = 1; len <= 16; len++) {
		int n = ht->bits[len];

		t->valoff[len] = count - code;
		if (count + n > 256)
			return -1;
		for (int i = 0; i < n; i++, code++, count++) {
			uint8_t sym = ht->huffval[count];

			t->vals[count] = sym;
			if (len <= JH_FAST) {
				uint32_t first = (uint32_t)code << (JH_FAST - len);

				for (uint32_t j = 0; j < 1u << (JH_FAST - len); j++)
					t->fast[first + j] =
						(uint16_t)(len << 8 | sym);
			}
			if (ac && len <= JH_PAIR)
				fill_single(single, (uint32_t)code, len, sym);
			else if (len <= JH_PAIR)
				fill_dc(t, (uint32_t)code, len, sym);
		}
		t->maxcode[len] = n ? code - 1 : -1;
		if (code >= 1 << len) /* libjpeg's own test of a table */
			return -1;
		code <<= 1;
	}
	if (ac) {
		fill_pairs(t, single);
		fill_skip(t, ht);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Reading bits                                                        */

/* The reader, in locals while an MCU is decoded. */
struct bits {
	uint64_t acc;
	int n, fake;
	const uint8_t *p, *end;
};

/* A byte at a time, from the first 0xFF on; zeros at a marker.  The
 * reader goes in and out by value, so that the callers' copy can stay
 * in registers. */
static struct bits refill_slow(struct bits bv)
{
	struct bits *b = &bv;

	/* a fast refill left the next bytes' raw bits below the n valid
	 * ones (see refill); this path ORs destuffed bytes there */
	b->acc &= b->n ? ~(uint64_t)0 << (64 - b->n) : 0;
	while (b->n <= 56) {
		const uint8_t *q = b->p;
		uint8_t c;

		if (q >= b->end)
			break;
		c = *q++;
		if (c == 0xff) { /* 0xFF (0xFF)* 0x00 is a data 0xFF */
			while (q < b->end && *q == 0xff)
				q++;
			if (q >= b->end || *q != 0)
				break; /* a marker: p stays on it */
			q++;
		}
		b->acc |= (uint64_t)c << (56 - b->n);
		b->n += 8;
		b->p = q;
	}
	if (b->n <= 56) {
		b->fake += 64 - b->n;
		b->n = 64;
	}
	return bv;
}

/* At least REFILLED bits in acc (32 are enough for a code and its
 * value): the fast path tops up whole bytes to 56..63, the slow one to
 * 57..64. */
#define REFILLED 56
HOT void refill(struct bits *b)
{
	if (b->end - b->p >= 8) {
		uint64_t w, x;

		memcpy(&w, b->p, 8);
		x = ~w; /* a 0xFF byte of w is a zero byte of x */
		if (!((x - 0x0101010101010101u) & ~x & 0x8080808080808080u)) {
			int bytes = (63 - b->n) >> 3;

			/* the bits past the bytes taken are the next bytes'
			 * own: ORed again, the same, by the next refill */
			b->acc |= __builtin_bswap64(w) >> b->n;
			b->p += bytes;
			b->n += bytes << 3;
			return;
		}
	}
	*b = refill_slow(*b);
}

HOT uint32_t take(struct bits *b, int k)
{
	uint32_t v = (uint32_t)(b->acc >> (64 - k));

	b->acc <<= k;
	b->n -= k;
	return v;
}

static void warn(j_decompress_ptr ci, const uint8_t *p, const uint8_t *end,
		 int code)
{
	ci->src->next_input_byte = p;
	ci->src->bytes_in_buffer = (size_t)(end - p);
	WARNMS(ci, code); /* image/decode.c's handler does not return */
}

/* A code longer than JH_FAST bits at the top of acc: its length << 8 |
 * its symbol, canonically (F.2.2.3); 0 if no code of 16 bits or fewer
 * is there. */
static uint32_t decode_long(const struct jh_table *t, uint64_t acc)
{
	uint32_t top = (uint32_t)(acc >> 48);

	for (int len = JH_FAST + 1; len <= 16; len++) {
		int32_t code = (int32_t)(top >> (16 - len));

		if (code <= t->maxcode[len])
			return (uint32_t)len << 8 |
			       t->vals[(t->valoff[len] + code) & 255];
	}
	return 0;
}

HOT int decode(j_decompress_ptr ci, struct bits *b, const struct jh_table *t)
{
	uint32_t e = t->fast[b->acc >> (64 - JH_FAST)];

	if (!e) {
		e = decode_long(t, b->acc);
		if (!e)
			warn(ci, b->p, b->end, JWRN_HUFF_BAD_CODE);
	}
	b->acc <<= e >> 8;
	b->n -= (int)(e >> 8);
	return (int)(e & 255);
}

/* A block's DC difference (F.2.2.1), added to *last_dc. */
HOT void decode_dc(j_decompress_ptr ci, struct bits *b,
		   const struct jh_table *dc, int *last_dc)
{
	uint64_t e;
	int s, diff;

	if (b->n < 32)
		refill(b);
	e = dc->pair[b->acc >> (64 - JH_PAIR)];
	if (e) { /* the code and its value at once */
		diff = (int16_t)(uint16_t)(e >> 32);
		b->acc <<= e & 63;
		b->n -= (int)(e & 63);
	} else {
		s = decode(ci, b, dc) & 15;
		diff = s ? extend(take(b, s), s) : 0;
	}
	/* libjpeg's guard too: past int is corrupt data */
	if ((*last_dc >= 0 && diff > INT_MAX - *last_dc) ||
	    (*last_dc < 0 && diff < INT_MIN - *last_dc))
		ERREXIT(ci, JERR_BAD_DCT_COEF);
	*last_dc += diff;
}

/* How many table lookups one refill feeds: a pair entry takes at most
 * JH_PAIR bits, a skip entry at most JH_SKIP.  The AC loops refill once
 * per that many lookups, whatever acc holds, instead of testing the bit
 * count before each: that test goes one way or the other with the data
 * and was mispredicted often enough to cost about a fifth of the time. */
#define PAIRS_PER_REFILL (REFILLED / JH_PAIR)
#define SKIPS_PER_REFILL (REFILLED / JH_SKIP)
_Static_assert(PAIRS_PER_REFILL >= 1 && SKIPS_PER_REFILL >= 1,
	       "a refill feeds at least one lookup");

/* One block: the DC difference and the AC coefficients (F.2.2.1-2),
 * into blk.  k is where the next coefficient goes. */
HOT void decode_block(j_decompress_ptr ci, struct bits *b,
		      const struct jh_table *dc, const struct jh_table *ac,
		      int *last_dc, JCOEF *blk)
{
	uint64_t e;
	int rs, r, s, k = 1;

	decode_dc(ci, b, dc, last_dc);
	blk[0] = (JCOEF)*last_dc;
	while (k < 64) {
		refill(b);
		/* one or two symbols, values and all, a lookup */
		for (int i = 0; i < PAIRS_PER_REFILL; i++) {
			e = ac->pair[b->acc >> (64 - JH_PAIR)];
			if (!e)
				goto slow;
			k += (e >> 12) & 63;
			blk[natural[k]] = (JCOEF)(int16_t)(uint16_t)(e >> 32);
			if (k >= 63 && ((e >> 18) & 127)) {
				/* the block ends at the first: the rest of
				 * the bits are the next block's */
				b->acc <<= (e >> 6) & 63;
				b->n -= (int)((e >> 6) & 63);
				return;
			}
			k += (e >> 18) & 127;
			blk[natural[k]] = (JCOEF)(int16_t)(uint16_t)(e >> 48);
			b->acc <<= e & 63;
			b->n -= (int)(e & 63);
			if (++k >= 64)
				return;
		}
		continue;
slow: /* a long code, or a symbol whose value the lookup does not hold */
		if (b->n < 32)
			refill(b);
		rs = decode(ci, b, ac);
		r = rs >> 4;
		s = rs & 15;
		if (s) {
			k += r;
			blk[natural[k]] = (JCOEF)extend(take(b, s), s);
			k++;
		} else if (r == 15) {
			k += 16; /* sixteen zeros */
		} else {
			return; /* end of block */
		}
	}
}

/* A block no one reads (a row above the region, a column beside it):
 * its DC difference still counts, and its AC symbols must be read to
 * find the next block, but not their values.  k is where the next
 * coefficient would go: a lookup takes as many symbols as its bits hold
 * where they all fall inside the block. */
HOT void skip_block(j_decompress_ptr ci, struct bits *b,
		    const struct jh_table *dc, const struct jh_table *ac,
		    int *last_dc)
{
	uint32_t e;
	int rs, r, s, after, k = 1;

	decode_dc(ci, b, dc, last_dc);
	while (k < 64) {
		refill(b);
		for (int i = 0; i < SKIPS_PER_REFILL; i++) {
			e = ac->skip[b->acc >> (64 - JH_SKIP)];
			/* k after them, if k <= lim: 2..64, or 130..192
			 * with an end of block; else 65..127 or 193..255.
			 * Bit 6 of after - 65 tells which, and an entry 0
			 * is lim 0 */
			after = k + (int)((e >> 6) ^ 63) + 1;
			if (!((after - 65) & 64))
				goto slow;
			b->acc <<= e & 63;
			b->n -= (int)(e & 63);
			k = after;
			if (k >= 64)
				return;
		}
		continue;
slow:
		if (b->n < 32)
			refill(b);
		rs = decode(ci, b, ac);
		r = rs >> 4;
		s = rs & 15;
		if (s) {
			take(b, s);
			k += r + 1;
		} else if (r == 15) {
			k += 16; /* sixteen zeros */
		} else {
			return; /* end of block */
		}
	}
}

/* ------------------------------------------------------------------ */
/* Restarts and MCUs                                                   */

/* At a restart interval's end (F.2.2.5, B.2.1): the rest of the byte is
 * padding, then RSTn must come.  Bytes before it that are not a marker
 * are skipped, as libjpeg skips them (with a warning that
 * image/decode.c lets pass); another marker is libjpeg's "found marker
 * instead of RSTn". */
static struct bits restart(j_decompress_ptr ci, struct jpeg_huff *h,
			   struct bits bv)
{
	struct bits *b = &bv;
	const uint8_t *q = b->p;
	int c = -1;

	while (q < b->end) {
		if (*q++ != 0xff)
			continue;
		while (q < b->end && *q == 0xff)
			q++;
		if (q < b->end && *q != 0) {
			c = *q++;
			break;
		}
	}
	b->p = q;
	if (c < 0) /* libjpeg asks for more bytes, and there are none */
		warn(ci, b->p, b->end, JWRN_JPEG_EOF);
	if (c != JPEG_RST0 + h->next_restart) {
		ci->err->msg_parm.i[0] = c;
		ci->err->msg_parm.i[1] = h->next_restart;
		warn(ci, b->p, b->end, JWRN_MUST_RESYNC);
	}
	b->acc = 0;
	b->n = b->fake = 0;
	memset(h->last_dc, 0, sizeof(h->last_dc));
	h->restarts_to_go = ci->restart_interval;
	h->next_restart = (h->next_restart + 1) & 7;
	return bv;
}

/* Whether no one reads the next MCU's coefficients, and onto the next.
 * libjpeg asks for the MCUs of a row left to right, every one of them,
 * passing none for rows it skips (jpeg_skip_scanlines), and inverse
 * transforms only the MCU columns of the crop, first_iMCU_col to
 * last_iMCU_col (jpeg_crop_scanline; jdcoefct.c's decompress_onepass):
 * those are the whole row unless a crop is asked for. */
static int skipped(j_decompress_ptr ci, struct jpeg_huff *h, JBLOCKROW *mcu)
{
	unsigned col = h->mcu_col;

	h->mcu_col = col + 1 < ci->MCUs_per_row ? col + 1 : 0;
#ifdef HAVE_JPEGINT_H
	if (col < ci->master->first_iMCU_col || col > ci->master->last_iMCU_col)
		return 1;
#endif
	return !mcu;
}

HOT boolean decode_mcu_with(j_decompress_ptr ci, JBLOCKROW *mcu)
{
	struct jpeg_huff *h = ci->client_data;
	struct bits b = {h->acc, h->n, h->fake, h->p, h->end};

	if (ci->restart_interval) {
		if (h->restarts_to_go == 0)
			b = restart(ci, h, b);
		h->restarts_to_go--;
	}
	if (skipped(ci, h, mcu))
		for (int i = 0; i < ci->blocks_in_MCU; i++)
			skip_block(ci, &b, h->blk_dc[i], h->blk_ac[i],
				   &h->last_dc[h->blk_comp[i]]);
	else
		for (int i = 0; i < ci->blocks_in_MCU; i++)
			decode_block(ci, &b, h->blk_dc[i], h->blk_ac[i],
				     &h->last_dc[h->blk_comp[i]], mcu[i][0]);
	if (b.n < b.fake) /* decoded from zeros past a marker or the end */
		warn(ci, b.p, b.end,
		     b.p < b.end ? JWRN_HIT_MARKER : JWRN_JPEG_EOF);
	h->acc = b.acc;
	h->n = b.n;
	h->fake = b.fake;
	h->p = b.p;
	return TRUE;
}

static boolean decode_mcu(j_decompress_ptr ci, JBLOCKROW *mcu)
{
	return decode_mcu_with(ci, mcu);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_BMI2 1
/* The same, where the CPU has BMI2: a shift by a register's count is then
 * one instruction (shlx) instead of three, and every symbol's lookup
 * waits on the shift before it; about 1.2x as fast. */
__attribute__((target("bmi2"))) static boolean
decode_mcu_bmi2(j_decompress_ptr ci, JBLOCKROW *mcu)
{
	return decode_mcu_with(ci, mcu);
}
#else
#define HAVE_BMI2 0
#endif

/* ------------------------------------------------------------------ */
/* Taking over                                                         */

/* Whether libjpeg is about to read the one sequential Huffman scan of an
 * 8-bit image, from memory, with no row read yet. */
static int ours(j_decompress_ptr ci)
{
	return !ci->progressive_mode && !ci->arith_code &&
	       ci->data_precision == 8 && !ci->buffered_image &&
	       ci->comps_in_scan == ci->num_components &&
	       ci->blocks_in_MCU <= D_MAX_BLOCKS_IN_MCU && ci->Ss == 0 &&
	       ci->Se == DCTSIZE2 - 1 && ci->Ah == 0 && ci->Al == 0 &&
	       ci->unread_marker == 0 && ci->entropy && ci->src &&
	       ci->inputctl && !ci->inputctl->has_multiple_scans &&
	       ci->output_scanline == 0;
}

/* Table slot `no` of one class, built from ht unless it already was
 * from the same table (an image's tables are usually the last one's). */
static struct jh_table *table(struct jpeg_huff *h, int ac, int no,
			      const JHUFF_TBL *ht)
{
	struct jh_table *t = ac ? &h->ac[no] : &h->dc[no];
	JHUFF_TBL *src = ac ? &h->ac_src[no] : &h->dc_src[no];
	unsigned bit = 1u << (ac * 4 + no);

	if ((h->built & bit) && memcmp(src->bits, ht->bits, sizeof(ht->bits)) == 0 &&
	    memcmp(src->huffval, ht->huffval, sizeof(ht->huffval)) == 0)
		return t;
	h->built &= ~bit;
	if (build(t, ht, ac) < 0)
		return NULL;
	memcpy(src->bits, ht->bits, sizeof(ht->bits));
	memcpy(src->huffval, ht->huffval, sizeof(ht->huffval));
	h->built |= bit;
	return t;
}

int jpeg_huff_install(struct jpeg_huff *h, j_decompress_ptr ci, int portable)
{
	if (!ours(ci))
		return 0;
	for (int i = 0; i < ci->blocks_in_MCU; i++) {
		int c = ci->MCU_membership[i];
		const jpeg_component_info *comp = ci->cur_comp_info[c];
		int dn = comp->dc_tbl_no & 3, an = comp->ac_tbl_no & 3;
		const JHUFF_TBL *dt = ci->dc_huff_tbl_ptrs[dn];
		const JHUFF_TBL *at = ci->ac_huff_tbl_ptrs[an];

		/* libjpeg refuses a missing or bogus table before this */
		if (!dt || !at || !(h->blk_dc[i] = table(h, 0, dn, dt)) ||
		    !(h->blk_ac[i] = table(h, 1, an, at)))
			return 0;
		h->blk_comp[i] = c;
	}
	memset(h->last_dc, 0, sizeof(h->last_dc));
	h->acc = 0;
	h->n = h->fake = 0;
	h->p = ci->src->next_input_byte;
	h->end = h->p + ci->src->bytes_in_buffer;
	h->restarts_to_go = ci->restart_interval;
	h->next_restart = 0;
	h->mcu_col = 0;
	ci->client_data = h;
	ci->entropy->decode_mcu = decode_mcu;
	(void)portable;
#if HAVE_BMI2
	if (!portable && __builtin_cpu_supports("bmi2"))
		ci->entropy->decode_mcu = decode_mcu_bmi2;
#endif
	return 1;
}
