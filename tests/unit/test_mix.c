/* test_mix.c - the sequence of a mixed epoch (stream/mix.c): weights as
 * written, the epoch's counts, and a position reached by a seek (a resume,
 * a rank far off) the same as one reached by stepping. */
#include <stdlib.h>
#include <string.h>

#include "chute.h"
#include "stream/mix.h"
#include "unit.h"

static void weights_read_as_written(void)
{
	uint64_t w = 0;
	char text[32];
	CHECK(ch_weight_parse("0.7", &w) == 0 && w == 700000);
	CHECK(ch_weight_parse("3", &w) == 0 && w == 3000000);
	CHECK(ch_weight_parse("0.000001", &w) == 0 && w == 1);
	CHECK(ch_weight_parse("0.0000001", &w) < 0);
	CHECK(ch_weight_parse("-1", &w) < 0);
	CHECK(ch_weight_parse("1e3", &w) < 0);
	CHECK(ch_weight_parse(".5", &w) < 0);
	CHECK(ch_weight_parse("5.", &w) < 0);
	CHECK(ch_weight_parse("", &w) < 0);
	ch_weight_text(700000, text);
	CHECK_STR(text, "0.7");
	ch_weight_text(12000000, text);
	CHECK_STR(text, "12");
	ch_weight_text(1, text);
	CHECK_STR(text, "0.000001");
}

/* A mix of three unsplit sources of n[i] samples, no shuffle. */
struct fake {
	struct ch_mix mix;
	struct ch_mix_source src[3];
	struct ch_manifest man[3];
	const struct ch_manifest *m[3];
	struct ch_split_view views[3];
	uint64_t count[3], offset[3];
};

static void fake_init(struct fake *f, const uint64_t n[3], const uint64_t w[3],
		      enum ch_mix_epoch epoch, uint64_t total)
{
	memset(f, 0, sizeof(*f));
	for (int i = 0; i < 3; i++) {
		f->man[i].samples = n[i];
		f->m[i] = &f->man[i];
		f->src[i].weight = w[i];
		f->offset[i] = i ? f->offset[i - 1] + n[i - 1] : 0;
	}
	f->mix = (struct ch_mix){
		.src = f->src, .n = 3, .epoch = epoch, .epoch_total = total,
		.views = f->views, .m = f->m, .count = f->count,
		.offset = f->offset,
	};
}

static void the_counts_follow_the_epoch_rule(void)
{
	struct fake f;
	fake_init(&f, (const uint64_t[]){ 10, 5, 100 },
		  (const uint64_t[]){ 700000, 300000, 1000000 },
		  CH_MIX_SHORTEST, 0);
	CHECK(ch_mix_plan_counts(&f.mix, NULL) == 0);
	/* a runs out first: 10 / 0.7 < 5 / 0.3 < 100 / 1 */
	CHECK_EQ_U64(f.count[0], 10);
	CHECK_EQ_U64(f.count[1], 4);  /* 4.29 */
	CHECK_EQ_U64(f.count[2], 14); /* 14.29 */
	fake_init(&f, (const uint64_t[]){ 10, 5, 100 },
		  (const uint64_t[]){ 1000000, 1000000, 1000000 },
		  CH_MIX_TOTAL, 100);
	CHECK(ch_mix_plan_counts(&f.mix, NULL) == 0);
	CHECK_EQ_U64(f.count[0], 34); /* the first gets the remainder */
	CHECK_EQ_U64(f.count[1], 33);
	CHECK_EQ_U64(f.count[2], 33);
	CHECK_EQ_U64(f.mix.total, 100);
}

/* Every position reached at random (seeks, backwards and far) gives the
 * sample the walk stepping through them gives. */
static void a_seek_lands_where_stepping_does(void)
{
	struct fake f;
	struct ch_stream_opts o;
	struct ch_mix_walk step, jump;
	ch_stream_opts_init(&o);
	o.shuffle = CH_SHUFFLE_NONE;
	fake_init(&f, (const uint64_t[]){ 3000, 7001, 50 },
		  (const uint64_t[]){ 500000, 1700000, 30000 },
		  CH_MIX_TOTAL, 20011);
	CHECK(ch_mix_plan_counts(&f.mix, NULL) == 0);
	uint64_t n = f.mix.total, *seq = calloc(n, sizeof(*seq));
	uint64_t drawn[3] = { 0 };
	CHECK(seq && ch_mix_walk_init(&step, &f.mix, &o, NULL) == 0 &&
	      ch_mix_walk_init(&jump, &f.mix, &o, NULL) == 0);
	for (uint64_t t = 0; seq && t < n; t++) {
		CHECK(ch_mix_walk_at(&step, 1, t, &seq[t], NULL) == 0);
		drawn[ch_mix_source_of(&f.mix, seq[t])]++;
	}
	for (int i = 0; i < 3; i++)
		CHECK_EQ_U64(drawn[i], f.count[i]);
	uint64_t x = 12345, bad = 0;
	for (int k = 0; seq && k < 2000; k++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t t = (x >> 33) % n, id = 0;
		CHECK(ch_mix_walk_at(&jump, 1, t, &id, NULL) == 0);
		bad += id != seq[t];
	}
	CHECK_EQ_U64(bad, 0);
	ch_mix_walk_release(&step);
	ch_mix_walk_release(&jump);
	free(seq);
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(weights_read_as_written),
		UNIT(the_counts_follow_the_epoch_rule),
		UNIT(a_seek_lands_where_stepping_does),
	};
	return unit_run(tests, UNIT_COUNT(tests));
}
