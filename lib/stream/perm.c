/* stream/perm.c - which sample comes at each position of an epoch: a keyed
 * pseudorandom permutation (a Feistel network over [0, n), cycle-walked),
 * so position -> sample is computed in O(1) with no state: no table of n
 * entries, and resuming at any position costs nothing. */
#include <string.h>

#include "chute/stream.h"
/* XXH3 compiled in here, not called through libxxhash: the round function
 * below takes XXH3 apart (its mid-size path) to hash only what changes. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#define ROUNDS CH_PERM_ROUNDS

/* Counter-based randomness: the round function is XXH3-64 of the 40 bytes
 * (seed, epoch, purpose, round, value), never a shared generator state.
 * For 17-128 bytes XXH3 sums one 128-bit multiply (folded) per 16-byte
 * piece of the input, each piece xored with its own part of the secret:
 * for 40 bytes the pieces at 16 (purpose, round), 8 (epoch, purpose),
 * 0 (seed, epoch) and 24 (round, value), then an avalanche.  Only the last
 * piece holds the value: ch_perm_init sums the others for each round, and
 * a round costs one multiply and the avalanche.  tests/unit/test_order.c
 * checks the permutations against the plain XXH3_64bits call. */
#define KEY_BYTES 40

static uint64_t piece(uint64_t a, uint64_t b, size_t secret_at)
{
	uint64_t in[2] = { a, b };
	return XXH3_mix16B((const xxh_u8 *)in, XXH3_kSecret + secret_at, 0);
}

/* A word as XXH3 reads it from the key's bytes (the key is hashed as the
 * machine stores it). */
static uint64_t as_read(uint64_t v)
{
	return XXH_readLE64(&v);
}

void ch_perm_init(struct ch_perm *p, uint64_t n, uint64_t seed, uint64_t epoch,
		  uint64_t purpose)
{
	memset(p, 0, sizeof(*p));
	p->n = n;
	p->seed = seed;
	p->epoch = epoch;
	p->purpose = purpose;
	/* half-width h: the domain 2^(2h) is the smallest even power of two
	 * >= n, so cycle-walking needs < 4 steps on average */
	unsigned bits = 0;
	while (bits < 64 && (1ull << bits) < n)
		bits++;
	p->half = (bits + 1) / 2;
	if (p->half == 0)
		p->half = 1;
	uint64_t fixed = KEY_BYTES * XXH_PRIME64_1 +
			 piece(epoch, purpose, 48) + piece(seed, epoch, 0);
	for (uint64_t i = 0; i < ROUNDS; i++) {
		p->round_acc[i] = fixed + piece(purpose, i, 32);
		p->round_lo[i] = as_read(i) ^ XXH_readLE64(XXH3_kSecret + 16);
	}
}

/* XXH3-64 of (seed, epoch, purpose, round, value). */
static uint64_t keyed(const struct ch_perm *p, uint64_t round, uint64_t value)
{
	uint64_t hi = as_read(value) ^ XXH_readLE64(XXH3_kSecret + 24);
	return XXH3_avalanche(p->round_acc[round] +
			      XXH3_mul128_fold64(p->round_lo[round], hi));
}

static uint64_t feistel(const struct ch_perm *p, uint64_t x)
{
	uint64_t mask = (1ull << p->half) - 1;
	uint64_t l = x >> p->half, r = x & mask;
	for (uint64_t i = 0; i < ROUNDS; i++) {
		uint64_t f = keyed(p, i, r) & mask;
		uint64_t t = r;
		r = l ^ f;
		l = t;
	}
	return l << p->half | r;
}

uint64_t ch_perm_at(const struct ch_perm *p, uint64_t i)
{
	if (p->n <= 1)
		return 0;
	uint64_t x = i;
	do /* the result is in [0, n): walk the cycle until it is */
		x = feistel(p, x);
	while (x >= p->n);
	return x;
}
