/* stream/perm.c - which sample comes at each position of an epoch: a keyed
 * pseudorandom permutation (a Feistel network over [0, n), cycle-walked),
 * so position -> sample is computed in O(1) with no state: no table of n
 * entries, and resuming at any position costs nothing. */
#include <string.h>

#include "chute.h"
#include "common/xxh.h"

#define ROUNDS 6

/* Counter-based randomness: a hash of (seed, epoch, purpose, round,
 * value), never a shared generator state. */
static uint64_t keyed(uint64_t seed, uint64_t epoch, uint64_t purpose,
		      uint64_t round, uint64_t value)
{
	uint64_t in[5] = { seed, epoch, purpose, round, value };
	return XXH3_64bits(in, sizeof(in));
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
}

static uint64_t feistel(const struct ch_perm *p, uint64_t x)
{
	uint64_t mask = (1ull << p->half) - 1;
	uint64_t l = x >> p->half, r = x & mask;
	for (uint64_t i = 0; i < ROUNDS; i++) {
		uint64_t f = keyed(p->seed, p->epoch, p->purpose, i, r) & mask;
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
