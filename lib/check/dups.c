/* check/dups.c - samples that are the same: duplicates within a split,
 * leakage from train into the other splits and the same inputs under
 * other labels, over one table of (inputs' hash, size, split, sample
 * number, labels' hash) sorted so that samples of the same inputs sit
 * together; and near-duplicate images by perceptual hash. */
#include <stdlib.h>
#include <string.h>

#include "check/internal.h"

static int cmp_rec(const void *a, const void *b)
{
	const struct check_rec *x = a, *y = b;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return x->tag < y->tag ? -1 : x->tag > y->tag;
}

/* Sorts recs by cmp_rec in place: first by the top byte of the hash
 * (a permutation in place, one pass), then each of the 256 runs by qsort,
 * whose copy of what it sorts (glibc's merge sort) is then a 256th of the
 * table rather than all of it, the hashes being uniform. */
static void sort_recs(struct check_rec *r, size_t n)
{
	size_t start[257] = { 0 }, next[256];
	for (size_t i = 0; i < n; i++)
		start[(r[i].hash >> 56) + 1]++;
	for (unsigned b = 0; b < 256; b++) {
		start[b + 1] += start[b];
		next[b] = start[b];
	}
	for (unsigned b = 0; b < 256; b++) {
		while (next[b] < start[b + 1]) {
			/* carry each record to its run until one is for b */
			struct check_rec x = r[next[b]];
			unsigned to = (unsigned)(x.hash >> 56);
			while (to != b) {
				struct check_rec y = r[next[to]];
				r[next[to]++] = x;
				x = y;
				to = (unsigned)(x.hash >> 56);
			}
			r[next[b]++] = x;
		}
	}
	for (unsigned b = 0; b < 256; b++)
		if (start[b + 1] - start[b] > 1)
			qsort(r + start[b], start[b + 1] - start[b], sizeof(*r),
			      cmp_rec);
}

static unsigned split_of(const struct check_rec *r)
{
	return (unsigned)(r->tag >> 56);
}

static uint64_t number_of(const struct check_rec *r)
{
	return r->tag & (((uint64_t)1 << 56) - 1);
}

/* A group of identical samples, split by split and then by number: each
 * one after the first of its split is a duplicate of that first one. */
static void group_duplicates(struct checker *c, const struct check_rec *g,
			     size_t n)
{
	size_t first = 0;
	for (size_t i = 1; i < n; i++) {
		if (split_of(&g[i]) != split_of(&g[first])) {
			first = i;
			continue;
		}
		struct check_hit h = { .sample = number_of(&g[i]),
				       .other = (int64_t)number_of(&g[first]) };
		check_note(c, CH_RULE_DUPLICATES, &h);
	}
}

/* Every sample of another split in a group that holds a train sample. */
static void group_leakage(struct checker *c, const struct check_rec *g,
			  size_t n, uint64_t *per_split)
{
	size_t t = 0;
	while (t < n && split_of(&g[t]) != (unsigned)c->train)
		t++;
	if (t == n)
		return;
	for (size_t i = 0; i < n; i++) {
		unsigned s = split_of(&g[i]);
		if (s == (unsigned)c->train || s >= c->ds.manifest.nsplits)
			continue;
		struct check_hit h = { .sample = number_of(&g[i]),
				       .other = (int64_t)number_of(&g[t]) };
		check_note(c, CH_RULE_LEAKAGE, &h);
		per_split[s]++;
	}
}

/* Every labelled sample of a group whose labels differ from those of the
 * group's first labelled sample (by number), which it is reported with. */
static void group_conflicts(struct checker *c, const struct check_rec *g,
			    size_t n)
{
	const struct check_rec *first = NULL;
	for (size_t i = 0; i < n; i++)
		if (g[i].label && (!first || number_of(&g[i]) < number_of(first)))
			first = &g[i];
	for (size_t i = 0; first && i < n; i++) {
		if (!g[i].label || g[i].label == first->label)
			continue;
		struct check_hit h = { .sample = number_of(&g[i]),
				       .other = (int64_t)number_of(first) };
		check_note(c, CH_RULE_CONFLICTING_LABELS, &h);
	}
}

/* "3 samples of val and 2 of test": how many of each split leaked. */
static void leak_message(struct checker *c, const uint64_t *per_split)
{
	const struct ch_manifest *m = &c->ds.manifest;
	char msg[512];
	size_t used = 0, k = 0, n = 0;
	for (size_t s = 0; s < m->nsplits; s++)
		n += per_split[s] != 0;
	for (size_t s = 0; s < m->nsplits && used < sizeof(msg); s++) {
		if (!per_split[s])
			continue;
		int w = snprintf(msg + used, sizeof(msg) - used, "%s%llu%s of "
				 "%s", k == 0 ? "" : k + 1 == n ? " and " : ", ",
				 (unsigned long long)per_split[s],
				 k ? "" : per_split[s] == 1 ? " sample" :
				 " samples", m->splits[s].name);
		used += w > 0 ? (size_t)w : 0;
		k++;
	}
	check_settle(c, CH_RULE_LEAKAGE, "%s %s the inputs of samples of "
		     "train", msg, c->rep->rules[CH_RULE_LEAKAGE].count == 1 ?
		     "has" : "have");
}

static void settle_conflicts(struct checker *c)
{
	uint64_t bad = c->rep->rules[CH_RULE_CONFLICTING_LABELS].count;
	if (!c->run[CH_RULE_CONFLICTING_LABELS])
		return;
	if (!c->has_label_fields)
		check_settle(c, CH_RULE_CONFLICTING_LABELS, "no cls or label "
			     "field: nothing to compare");
	else if (bad)
		check_settle(c, CH_RULE_CONFLICTING_LABELS, "%llu %s the "
			     "inputs of an earlier sample with other labels",
			     (unsigned long long)bad,
			     ch_plural(bad, "sample has", "samples have"));
	else
		check_settle(c, CH_RULE_CONFLICTING_LABELS, "no two samples "
			     "with the same inputs have different labels");
}

static void settle_hash_rules(struct checker *c, const uint64_t *per_split)
{
	int splits = c->split_of != NULL;
	uint64_t dups = c->rep->rules[CH_RULE_DUPLICATES].count;
	if (c->run[CH_RULE_DUPLICATES] && dups)
		check_settle(c, CH_RULE_DUPLICATES, "%llu %s the inputs of an "
			     "earlier sample of %s %s",
			     (unsigned long long)dups,
			     ch_plural(dups, "sample has", "samples have"),
			     ch_plural(dups, "its", "their"),
			     splits ? "split" : "dataset");
	else if (c->run[CH_RULE_DUPLICATES])
		check_settle(c, CH_RULE_DUPLICATES, "no two samples of %s have "
			     "the same inputs", splits ? "a split" :
			     "the dataset");
	if (!c->run[CH_RULE_LEAKAGE])
		return;
	if (!splits)
		check_settle(c, CH_RULE_LEAKAGE, "no splits: nothing to "
			     "compare");
	else if (c->train < 0)
		check_settle(c, CH_RULE_LEAKAGE, "no train split: nothing to "
			     "compare");
	else if (c->rep->rules[CH_RULE_LEAKAGE].count)
		leak_message(c, per_split);
	else
		check_settle(c, CH_RULE_LEAKAGE, "no sample of another split "
			     "has the inputs of one of train");
}

int check_hash_rules(struct checker *c, struct ch_error *err)
{
	uint64_t per_split[SPLIT_MAX + 1] = { 0 };
	size_t n = 0;
	if (!c->recs)
		return 0;
	uint64_t absent = 0;
	int leaks = c->split_of && c->train >= 0;
	(void)err;
	/* the samples of shards and blocks that did not read drop out and
	 * are counted; those of label fields alone have nothing to compare */
	for (uint64_t i = 0; i < c->total; i++) {
		unsigned s = split_of(&c->recs[i]);
		absent += s == SPLIT_ABSENT;
		if (s != SPLIT_ABSENT && s != SPLIT_NOINPUT)
			c->recs[n++] = c->recs[i];
	}
	c->unexamined[CH_RULE_DUPLICATES] += absent;
	c->unexamined[CH_RULE_LEAKAGE] += leaks ? absent : 0;
	c->unexamined[CH_RULE_CONFLICTING_LABELS] +=
		c->has_label_fields ? absent : 0;
	sort_recs(c->recs, n);
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a + 1; b < n && c->recs[b].hash == c->recs[a].hash &&
				c->recs[b].size == c->recs[a].size; b++)
			;
		if (b - a < 2)
			continue;
		if (c->run[CH_RULE_DUPLICATES])
			group_duplicates(c, c->recs + a, b - a);
		if (c->run[CH_RULE_LEAKAGE] && leaks)
			group_leakage(c, c->recs + a, b - a, per_split);
		if (c->run[CH_RULE_CONFLICTING_LABELS])
			group_conflicts(c, c->recs + a, b - a);
	}
	settle_hash_rules(c, per_split);
	settle_conflicts(c);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Near-duplicates                                                      */

/* The train image closest to hash h (the lowest number on a tie), or -1
 * when none is within the distance. */
static int64_t closest_train(const struct checker *c, const uint64_t *train,
			     size_t ntrain, uint64_t h, int *distance)
{
	int64_t best = -1;
	int best_d = c->o->distance + 1;
	for (size_t t = 0; t < ntrain; t++) {
		int d = __builtin_popcountll(c->phash[train[t]] ^ h);
		if (d < best_d) {
			best_d = d;
			best = (int64_t)train[t];
		}
	}
	*distance = best_d;
	return best;
}

static void settle_near(struct checker *c, size_t ntrain)
{
	uint64_t bad = c->rep->rules[CH_RULE_NEAR_DUPLICATES].count;
	if (!c->split_of)
		check_settle(c, CH_RULE_NEAR_DUPLICATES, "no splits: nothing "
			     "to compare");
	else if (c->train < 0)
		check_settle(c, CH_RULE_NEAR_DUPLICATES, "no train split: "
			     "nothing to compare");
	else if (ntrain == 0)
		check_settle(c, CH_RULE_NEAR_DUPLICATES, "no train images: "
			     "nothing to compare");
	else if (bad)
		check_settle(c, CH_RULE_NEAR_DUPLICATES, "%llu %s within "
			     "distance %d of a train image",
			     (unsigned long long)bad, ch_plural(bad,
			     "image of another split is",
			     "images of other splits are"), c->o->distance);
	else
		check_settle(c, CH_RULE_NEAR_DUPLICATES, "no image of another "
			     "split is within distance %d of a train image",
			     c->o->distance);
}

/* Every image out of train against every train image: 64-bit XOR and
 * popcount, about a nanosecond a pair. */
void check_near_duplicates(struct checker *c)
{
	uint64_t *train = NULL;
	size_t ntrain = 0;
	if (!c->run[CH_RULE_NEAR_DUPLICATES])
		return;
	if (c->phash && (train = malloc(c->total * sizeof(*train) + 1)))
		for (uint64_t n = 0; n < c->total; n++)
			if (c->phash_ok[n] && c->split_of[n] == c->train)
				train[ntrain++] = n;
	for (uint64_t n = 0; ntrain && n < c->total; n++) {
		int d;
		unsigned s = c->split_of[n];
		if (!c->phash_ok[n] || s == (unsigned)c->train ||
		    s >= c->ds.manifest.nsplits)
			continue;
		int64_t t = closest_train(c, train, ntrain, c->phash[n], &d);
		if (t < 0)
			continue;
		struct check_hit h = { .sample = n, .other = t, .distance = d };
		check_note(c, CH_RULE_NEAR_DUPLICATES, &h);
	}
	free(train);
	settle_near(c, ntrain);
}
