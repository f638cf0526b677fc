/* stream/mix.c - several datasets in one stream, in stated proportions
 * (chute-stream(1), MIXING, states the rule this file follows).
 *
 * An epoch of a mix takes count[i] samples from source i.  Its j-th draw
 * of source i (j < count[i]) sits at time (2j + 1) / (2 count[i]) of the
 * epoch; the epoch's sequence is every draw in order of time, a tie going
 * to the source given first.  Draw j of source i in epoch e is the g-th
 * the stream takes from it, g = e count[i] + j: sample g mod n[i] of the
 * order a single stream of that source (same seed and shuffle) has in
 * its epoch g / n[i].  Every position maps to a sample in closed form, so
 * the cut between ranks, cursors and elastic resume of stream/order.c
 * work on a mix unchanged.
 *
 * The mix is opened as a dataset whose shards are the sources' shards in
 * turn (sample numbers offset by source), whose files come from each
 * source's own dataset: the readers, shard table and block cache never
 * know it is a mix. */
#include <stdlib.h>
#include <string.h>

#include "stream/mix.h"

typedef unsigned __int128 u128;

/* ------------------------------------------------------------------ */
/* Weights                                                              */

int ch_weight_parse(const char *text, uint64_t *out)
{
	uint64_t whole = 0, frac = 0, scale = CH_WEIGHT_UNIT;
	const char *c = text;
	if (*c < '0' || *c > '9')
		return -1;
	for (; *c >= '0' && *c <= '9'; c++) {
		if (whole > (UINT64_MAX / CH_WEIGHT_UNIT - 9) / 10)
			return -1;
		whole = whole * 10 + (uint64_t)(*c - '0');
	}
	if (*c == '.') {
		if (c[1] < '0' || c[1] > '9')
			return -1;
		for (c++; *c >= '0' && *c <= '9'; c++) {
			if (scale == 1)
				return -1; /* a seventh decimal */
			scale /= 10;
			frac += (uint64_t)(*c - '0') * scale;
		}
	}
	if (*c)
		return -1;
	*out = whole * CH_WEIGHT_UNIT + frac;
	return 0;
}

void ch_weight_text(uint64_t weight, char out[32])
{
	int n = snprintf(out, 32, "%llu.%06llu",
			 (unsigned long long)(weight / CH_WEIGHT_UNIT),
			 (unsigned long long)(weight % CH_WEIGHT_UNIT));
	while (n > 0 && out[n - 1] == '0')
		out[--n] = '\0';
	if (n > 0 && out[n - 1] == '.')
		out[--n] = '\0';
}

/* ------------------------------------------------------------------ */
/* An epoch's counts                                                    */

/* Largest remainders: count[i] = floor(total w[i] / W), and the samples
 * left one each to the largest remainders, the first source on a tie. */
static void counts_of_total(struct ch_mix *mix)
{
	uint64_t sum = 0, given = 0;
	for (size_t i = 0; i < mix->n; i++)
		sum += mix->src[i].weight;
	for (size_t i = 0; i < mix->n; i++) {
		u128 p = (u128)mix->epoch_total * mix->src[i].weight;
		mix->count[i] = (uint64_t)(p / sum);
		given += mix->count[i];
	}
	for (; given < mix->epoch_total; given++) {
		size_t best = mix->n;
		uint64_t best_r = 0;
		for (size_t i = 0; i < mix->n; i++) {
			u128 p = (u128)mix->epoch_total * mix->src[i].weight;
			uint64_t r = (uint64_t)(p % sum);
			/* a remainder taken once is spent */
			if (mix->count[i] > (uint64_t)(p / sum))
				continue;
			if (best == mix->n || r > best_r) {
				best = i;
				best_r = r;
			}
		}
		mix->count[best]++;
	}
}

/* One pass of source s: count[i] = n[s] w[i] / w[s], rounded half up. */
static void counts_of_source(struct ch_mix *mix, size_t s)
{
	uint64_t ns = mix->m[s]->samples, ws = mix->src[s].weight;
	for (size_t i = 0; i < mix->n; i++)
		mix->count[i] = i == s ? ns
				       : (uint64_t)(((u128)2 * ns *
							     mix->src[i].weight +
						     ws) / (2 * (u128)ws));
}

/* The source that runs out first: least n[i] / w[i], the first on a tie. */
static size_t shortest(const struct ch_mix *mix)
{
	size_t s = 0;
	for (size_t i = 1; i < mix->n; i++)
		if ((u128)mix->m[i]->samples * mix->src[s].weight <
		    (u128)mix->m[s]->samples * mix->src[i].weight)
			s = i;
	return s;
}

int ch_mix_plan_counts(struct ch_mix *mix, struct ch_error *err)
{
	if (mix->epoch == CH_MIX_TOTAL)
		counts_of_total(mix);
	else
		counts_of_source(mix, mix->epoch == CH_MIX_SOURCE
					      ? mix->epoch_source
					      : shortest(mix));
	mix->total = 0;
	for (size_t i = 0; i < mix->n; i++) {
		if (mix->count[i] > UINT64_MAX / 4 - mix->total)
			return ch_error_usage(err, "an epoch of this mix is too "
					      "long");
		mix->total += mix->count[i];
	}
	if (mix->total == 0)
		return ch_error_usage(err, "an epoch of this mix holds no "
				      "sample");
	return 0;
}

/* ------------------------------------------------------------------ */
/* The sequence: position <-> (source, draw)                            */

/* Draws of source k before draw j of source i: those of earlier time,
 * and of the same time when k is given first. */
static uint64_t before(const uint64_t *c, size_t k, size_t i, uint64_t j)
{
	if (k == i)
		return j;
	if (!c[k])
		return 0;
	u128 a = (u128)(2 * j + 1) * c[k], m = k < i ? a / c[i]
						    : (a - 1) / c[i];
	u128 odd = (m + 1) / 2; /* odd numbers 2j'+1 <= m */
	return odd < c[k] ? (uint64_t)odd : c[k];
}

static uint64_t rank_of(const struct ch_mix *mix, size_t i, uint64_t j)
{
	uint64_t r = 0;
	for (size_t k = 0; k < mix->n; k++)
		r += before(mix->count, k, i, j);
	return r;
}

/* d[k]: draws of each source among the first t positions. */
static void seek(const struct ch_mix *mix, uint64_t t, uint64_t *d)
{
	const uint64_t *c = mix->count;
	if (t >= mix->total) {
		memcpy(d, c, mix->n * sizeof(*d));
		return;
	}
	for (size_t i = 0; i < mix->n; i++) {
		uint64_t lo = 0, hi = c[i]; /* last j with rank <= t */
		if (!c[i] || rank_of(mix, i, 0) > t)
			continue;
		while (hi - lo > 1) {
			uint64_t mid = lo + (hi - lo) / 2;
			if (rank_of(mix, i, mid) <= t)
				lo = mid;
			else
				hi = mid;
		}
		if (rank_of(mix, i, lo) != t)
			continue;
		for (size_t k = 0; k < mix->n; k++)
			d[k] = before(c, k, i, lo);
		return;
	}
}

/* The source of the draw after d: earliest time, the first on a tie. */
static size_t next_source(const struct ch_mix *mix, const uint64_t *d)
{
	const uint64_t *c = mix->count;
	size_t best = mix->n;
	for (size_t k = 0; k < mix->n; k++) {
		if (d[k] >= c[k])
			continue;
		if (best == mix->n ||
		    (u128)(2 * d[k] + 1) * c[best] <
			    (u128)(2 * d[best] + 1) * c[k])
			best = k;
	}
	return best;
}

int ch_mix_walk_init(struct ch_mix_walk *w, const struct ch_mix *mix,
		     const struct ch_stream_opts *o, struct ch_error *err)
{
	memset(w, 0, sizeof(*w));
	w->mix = mix;
	w->o = o;
	w->d = calloc(mix->n, sizeof(*w->d));
	w->pass = calloc(mix->n, sizeof(*w->pass));
	if (!w->d || !w->pass) {
		ch_mix_walk_release(w);
		return ch_error_nomem(err);
	}
	return 0;
}

void ch_mix_walk_release(struct ch_mix_walk *w)
{
	for (size_t i = 0; w->pass && i < w->mix->n; i++)
		ch_order_release(&w->pass[i].ord);
	free(w->pass);
	free(w->d);
	memset(w, 0, sizeof(*w));
}

/* Stepping is O(sources) a position; a seek O(sources^2 log n): ranks
 * far apart (a large world size) seek. */
#define STEP_MAX 4096

int ch_mix_walk_at(struct ch_mix_walk *w, uint64_t epoch, uint64_t t,
		   uint64_t *id, struct ch_error *err)
{
	const struct ch_mix *mix = w->mix;
	if (t < w->t || t - w->t > STEP_MAX) {
		seek(mix, t, w->d);
		w->t = t;
	}
	for (; w->t < t; w->t++)
		w->d[next_source(mix, w->d)]++;
	size_t i = next_source(mix, w->d);
	uint64_t n = mix->m[i]->samples;
	u128 g = (u128)epoch * mix->count[i] + w->d[i];
	uint64_t pass = (uint64_t)(g / n), q = (uint64_t)(g % n);
	struct ch_mix_pass *p = &w->pass[i];
	if (!p->live || p->pass != pass) {
		ch_order_release(&p->ord);
		p->live = 0;
		if (ch_order_init(&p->ord, mix->m[i], w->o, pass, err) < 0)
			return -1;
		p->live = 1;
		p->pass = pass;
	}
	uint64_t at = ch_order_at(&p->ord, q);
	*id = mix->offset[i] + (mix->views[i].ids ? mix->views[i].ids[at]
						  : at);
	return 0;
}

size_t ch_mix_source_of(const struct ch_mix *mix, uint64_t id)
{
	size_t i = 0;
	while (i + 1 < mix->n && mix->offset[i + 1] <= id)
		i++;
	return i;
}
