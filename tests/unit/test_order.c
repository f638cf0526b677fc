/* test_order.c - the keyed permutation and the cut between ranks. */
#include <stdlib.h>
#include <string.h>

#include "chute.h"
#include "common/xxh.h"
#include "stream/plan.h"
#include "unit.h"

static int is_permutation(uint64_t n, uint64_t seed, uint64_t epoch)
{
	struct ch_perm p;
	uint8_t *seen = calloc(n ? n : 1, 1);
	int ok = 1;
	ch_perm_init(&p, n, seed, epoch, 1);
	for (uint64_t i = 0; i < n && ok; i++) {
		uint64_t x = ch_perm_at(&p, i);
		ok = x < n && !seen[x];
		if (ok)
			seen[x] = 1;
	}
	free(seen);
	return ok;
}

/* The permutation as first written, hashing each round's 40 bytes with
 * libxxhash: stream/perm.c hashes only the part that changes, and every
 * cursor and saved order depends on its giving the same values. */
static uint64_t reference_at(uint64_t n, uint64_t seed, uint64_t epoch,
			     uint64_t purpose, uint64_t i)
{
	unsigned bits = 0, half;
	while (bits < 64 && (1ull << bits) < n)
		bits++;
	half = (bits + 1) / 2 ? (bits + 1) / 2 : 1;
	uint64_t mask = (1ull << half) - 1, x = i;
	if (n <= 1)
		return 0;
	do {
		uint64_t l = x >> half, r = x & mask;
		for (uint64_t round = 0; round < 6; round++) {
			uint64_t in[5] = { seed, epoch, purpose, round, r };
			uint64_t f = XXH3_64bits(in, sizeof(in)) & mask;
			uint64_t t = r;
			r = l ^ f;
			l = t;
		}
		x = l << half | r;
	} while (x >= n);
	return x;
}

static void rounds_match_plain_xxh3(void)
{
	static const uint64_t sizes[] = { 2, 3, 17, 1000, 60000, 65536,
					  1000003, 1ull << 40, UINT64_MAX };
	static const uint64_t keys[] = { 0, 1, 7, 0x9e3779b97f4a7c15ull,
					 UINT64_MAX };
	for (size_t a = 0; a < UNIT_COUNT(sizes); a++)
		for (size_t k = 0; k < UNIT_COUNT(keys); k++) {
			struct ch_perm p;
			uint64_t seed = keys[k], epoch = keys[(k + 1) % 5];
			uint64_t purpose = k % 3;
			ch_perm_init(&p, sizes[a], seed, epoch, purpose);
			int same = 1;
			for (uint64_t i = 0; i < 300 && i < sizes[a]; i++)
				same &= ch_perm_at(&p, i) ==
					reference_at(sizes[a], seed, epoch,
						     purpose, i);
			if (!CHECK(same))
				unit_note("n %llu, key %zu",
					  (unsigned long long)sizes[a], k);
		}
	/* and the values themselves, so that the reference cannot drift */
	struct ch_perm p;
	ch_perm_init(&p, 60000, 0, 0, 1);
	CHECK_EQ_U64(ch_perm_at(&p, 0), 35819);
	CHECK_EQ_U64(ch_perm_at(&p, 59999), 16007);
	ch_perm_init(&p, 1000003, 5, 2, 0);
	CHECK_EQ_U64(ch_perm_at(&p, 123456), 103804);
}

static void every_size_gives_a_permutation(void)
{
	for (uint64_t n = 0; n <= 1100; n++)
		if (!CHECK(is_permutation(n, 7, n % 3)))
			unit_note("n = %llu", (unsigned long long)n);
	CHECK(is_permutation(1000003, 1, 0));
}

static void seed_and_epoch_change_the_order(void)
{
	struct ch_perm a, b, c;
	int same_seed = 1, same_epoch = 1, moved = 0;
	ch_perm_init(&a, 1000, 1, 0, 1);
	ch_perm_init(&b, 1000, 2, 0, 1);
	ch_perm_init(&c, 1000, 1, 1, 1);
	for (uint64_t i = 0; i < 1000; i++) {
		same_seed &= ch_perm_at(&a, i) == ch_perm_at(&b, i);
		same_epoch &= ch_perm_at(&a, i) == ch_perm_at(&c, i);
		moved += ch_perm_at(&a, i) != i;
	}
	CHECK(!same_seed);
	CHECK(!same_epoch);
	CHECK(moved > 950); /* a shuffle leaves few in place (~1 expected) */
}

/* Ranks from any segment start: disjoint, covering, equal counts. */
static void ranks_cover_the_segment(void)
{
	for (uint64_t n = 1; n < 60; n++)
		for (uint64_t w = 1; w <= 5; w++)
			for (uint64_t c = 0; c <= n; c += 7) {
				uint64_t train = 0, eval = 0;
				for (uint64_t r = 0; r < w; r++) {
					uint64_t k = ch_segment_count(n, c, w, r, 0);
					CHECK_EQ_U64(k, (n - c) / w);
					train += k;
					eval += ch_segment_count(n, c, w, r, 1);
				}
				CHECK_EQ_U64(eval, n - c);
				CHECK(n - c - train < w);
			}
}

static void eval_batches_are_the_same_for_every_rank(void)
{
	/* 10 samples, 3 ranks (4, 3, 3 samples), batches of 3: every rank
	 * makes ceil(4 / 3) = 2 batches, the short ranks end with a
	 * partial one */
	CHECK_EQ_U64(ch_segment_batches(10, 0, 3, 3, 1, 0), 2);
	CHECK_EQ_U64(ch_segment_batches(10, 0, 3, 3, 0, 0), 1);
	CHECK_EQ_U64(ch_segment_batches(10, 0, 3, 3, 0, 1), 1);
	CHECK_EQ_U64(ch_segment_batches(10, 0, 3, 2, 0, 1), 1);
	CHECK_EQ_U64(ch_segment_batches(10, 0, 3, 2, 0, 0), 2);
}

static void cursors_round_trip(void)
{
	struct ch_cursor c;
	struct ch_error err;
	char s[96];
	ch_cursor_format(s, sizeof(s), "0123456789abcdef0123456789abcdef",
			 0xdeadbeef, 3, 17, 4096);
	CHECK_STR(s, "ch1.0123456789abcdef.deadbeef.3.17.4096");
	CHECK(ch_cursor_parse(s, &c, &err) == 0);
	CHECK_STR(c.id, "0123456789abcdef");
	CHECK_EQ_U64(c.opt_hash, 0xdeadbeef);
	CHECK_EQ_U64(c.epoch, 3);
	CHECK_EQ_U64(c.batch, 17);
	CHECK_EQ_U64(c.pos, 4096);
	CHECK(ch_cursor_parse("ch1.0123.deadbeef.3.17.4096", &c, &err) < 0);
	CHECK(ch_cursor_parse("ch1.0123456789abcdef.deadbeef.3.17.4096x", &c,
			      &err) < 0);
	CHECK(ch_cursor_parse("", &c, &err) < 0);
}

static void tune(double work, double work_max, double consume, int *w, int *p)
{
	struct ch_tune_input in = {
		.threads = 8, .max_prefetch = 32, .work_mean_s = work,
		.work_max_s = work_max, .consume_mean_s = consume,
	};
	ch_stream_tune(&in, w, p);
}

static void auto_pool_follows_the_stage_times(void)
{
	int w, p;
	/* a consumer that takes no time: every thread; 8 threads make a
	 * batch every 0.5 ms, the slowest took 5 ms: 10 batches cover it */
	tune(0.004, 0.005, 0, &w, &p);
	CHECK(w == 8 && p == 10);
	tune(0.004, 0.004, 0, &w, &p);
	CHECK(w == 8 && p == 8);
	/* a batch costs a worker 4 ms, the consumer 2 ms: 2 would just keep
	 * up, 3 keep up with room to spare */
	tune(0.004, 0.005, 0.002, &w, &p);
	CHECK(w == 3);
	CHECK(p >= w);
	/* a slow consumer needs one worker, prefetch at least 2 */
	tune(0.001, 0.001, 0.050, &w, &p);
	CHECK(w == 1 && p == 2);
	/* a batch 40x slower than usual now and then: enough ready batches
	 * to feed the consumer meanwhile, up to the cap */
	tune(0.001, 0.040, 0.002, &w, &p);
	CHECK(w == 1 && p == 20);
	tune(0.001, 1.0, 0.002, &w, &p);
	CHECK(p == 32);
	/* a worker slower than the consumer with all threads: all threads */
	tune(0.100, 0.100, 0.001, &w, &p);
	CHECK(w == 8);
}

static void auto_workers_try_one_fewer_and_one_more(void)
{
	struct ch_workers_probe p;
	ch_workers_probe_init(&p, 4);
	/* no try while blocks are decoded: more workers help there */
	CHECK(ch_workers_probe_step(&p, 100, 1, 4, 4) == 4);
	CHECK(ch_workers_probe_step(&p, 100, 1, 4, 4) == 4);
	/* the first period without decoding tries one fewer */
	CHECK(ch_workers_probe_step(&p, 100, 0, 4, 4) == 3);
	/* as fast (within 3 %): it stays, and the next try goes lower */
	CHECK(ch_workers_probe_step(&p, 98, 0, 4, 4) == 3);
	CHECK(ch_workers_probe_step(&p, 98, 0, 4, 4) == 3);
	CHECK(ch_workers_probe_step(&p, 98, 0, 4, 4) == 2);
	/* slower: undone, and the wait doubles (4 periods) */
	CHECK(ch_workers_probe_step(&p, 80, 0, 4, 4) == 3);
	for (int i = 0; i < 3; i++)
		CHECK(ch_workers_probe_step(&p, 98, 0, 4, 4) == 3);
	/* the try after an undone one goes the other way: one more, kept
	 * only when 5 % faster */
	CHECK(ch_workers_probe_step(&p, 98, 0, 4, 4) == 4);
	CHECK(ch_workers_probe_step(&p, 100, 0, 4, 4) == 3);
	for (int i = 0; i < 7; i++)
		CHECK(ch_workers_probe_step(&p, 98, 0, 4, 4) == 3);
	CHECK(ch_workers_probe_step(&p, 98, 0, 4, 4) == 2);
	/* decoding during a try undoes it: the periods do not compare */
	CHECK(ch_workers_probe_step(&p, 500, 1, 4, 4) == 3);
	/* no thread to run (never auto's): nothing to try, ever */
	ch_workers_probe_init(&p, 0);
	for (int i = 0; i < 200; i++)
		CHECK(ch_workers_probe_step(&p, 100 + i, 0, 0, 0) == 0);
	/* from two workers the tries go down to none (the writer reads the
	 * batches itself), then up, less and less often */
	ch_workers_probe_init(&p, 2);
	CHECK(ch_workers_probe_step(&p, 100, 0, 2, 2) == 1);
	CHECK(ch_workers_probe_step(&p, 100, 0, 2, 2) == 1);
	CHECK(ch_workers_probe_step(&p, 100, 0, 2, 2) == 1);
	CHECK(ch_workers_probe_step(&p, 100, 0, 2, 2) == 0);
	CHECK(ch_workers_probe_step(&p, 100, 0, 2, 2) == 0);
	int tries = 0;
	for (int i = 0; i < 300; i++)
		if (ch_workers_probe_step(&p, 100, 0, 2, 2) == 1)
			tries++;
	CHECK(tries >= 4 && tries <= 8);
	/* the stage times call for one worker of four: the first try is
	 * none, not three */
	ch_workers_probe_init(&p, 4);
	CHECK(ch_workers_probe_step(&p, 100, 1, 4, 1) == 4);
	CHECK(ch_workers_probe_step(&p, 100, 0, 4, 1) == 0);
	CHECK(ch_workers_probe_step(&p, 100, 0, 4, 1) == 0);
}

static void auto_workers_start_from_the_first_batches(void)
{
	struct ch_workers_probe p;
	/* JPEGs: tens of milliseconds a batch; every thread */
	ch_workers_probe_init(&p, 2);
	ch_workers_probe_start(&p, 0.040, 2);
	CHECK(p.cap == 2);
	ch_workers_probe_init(&p, 16);
	ch_workers_probe_start(&p, 0.001, 16);
	CHECK(p.cap == 16);
	/* 28x28 images: a fifth of a millisecond a batch once the blocks
	 * are loaded; the writer reads them, no worker, and one is tried
	 * only after 16 periods */
	ch_workers_probe_init(&p, 2);
	ch_workers_probe_start(&p, 0.0002, 2);
	CHECK(p.cap == 0);
	for (int i = 0; i < 15; i++)
		CHECK(ch_workers_probe_step(&p, 100, 0, 2, 2) == 0);
	CHECK(ch_workers_probe_step(&p, 100, 0, 2, 2) == 1);
	CHECK(ch_workers_probe_step(&p, 60, 0, 2, 2) == 0);
	/* at none, reads grown dear bring back what the stage times call
	 * for, at least one */
	CHECK(ch_workers_reopen(&p, 0.0002, 2) == 0);
	CHECK(ch_workers_reopen(&p, 0.005, 2) == 2);
	CHECK(ch_workers_reopen(&p, 0.005, 0) == 1);
	/* not while a try runs, nor above none: the probe decides there */
	p.trying = 1;
	CHECK(ch_workers_reopen(&p, 0.005, 2) == 0);
	p.trying = 0;
	p.cap = 1;
	CHECK(ch_workers_reopen(&p, 0.005, 2) == 1);
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(rounds_match_plain_xxh3),
		UNIT(every_size_gives_a_permutation),
		UNIT(seed_and_epoch_change_the_order),
		UNIT(ranks_cover_the_segment),
		UNIT(eval_batches_are_the_same_for_every_rank),
		UNIT(cursors_round_trip),
		UNIT(auto_pool_follows_the_stage_times),
		UNIT(auto_workers_try_one_fewer_and_one_more),
		UNIT(auto_workers_start_from_the_first_batches),
	};
	return unit_run(tests, UNIT_COUNT(tests));
}
