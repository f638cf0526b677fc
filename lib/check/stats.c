/* check/stats.c - rules over distributions: class counts per split and
 * their drift from a baseline version, and fields far over their median
 * size. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check/internal.h"

/* ------------------------------------------------------------------ */
/* Size outliers                                                        */

static void swap64(uint64_t *a, uint64_t *b)
{
	uint64_t t = *a;
	*a = *b;
	*b = t;
}

/* The k-th smallest of v[0..n) (v is reordered): quickselect with a
 * three-way partition, linear on average even when most sizes are equal
 * (as they are in a dataset of fixed-size records). */
static uint64_t select_kth(uint64_t *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n;
	for (;;) {
		uint64_t pivot = v[lo + (hi - lo) / 2];
		size_t lt = lo, i = lo, gt = hi;
		while (i < gt) {
			if (v[i] < pivot)
				swap64(&v[lt++], &v[i++]);
			else if (v[i] > pivot)
				swap64(&v[i], &v[--gt]);
			else
				i++;
		}
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			return pivot;
	}
}

static void field_outliers(struct checker *c, size_t k, uint64_t *tmp)
{
	const uint64_t *sizes = c->sizes[k];
	size_t n = 0;
	for (uint64_t i = 0; i < c->total; i++)
		if (sizes[i] != UINT64_MAX)
			tmp[n++] = sizes[i];
	if (n == 0)
		return;
	uint64_t median = select_kth(tmp, n, n / 2);
	double limit = c->o->factor * (double)(median ? median : 1);
	for (uint64_t i = 0; i < c->total; i++) {
		if (sizes[i] == UINT64_MAX || (double)sizes[i] <= limit)
			continue;
		struct check_hit h = { .sample = i, .other = -1,
				       .field = c->ds.manifest.fields[k].name,
				       .size = sizes[i], .median = median };
		check_note(c, CH_RULE_SIZE_OUTLIERS, &h);
	}
}

int check_size_outliers(struct checker *c, struct ch_error *err)
{
	uint64_t bad;
	if (!c->run[CH_RULE_SIZE_OUTLIERS])
		return 0;
	if (c->sizes) {
		uint64_t *tmp = malloc(c->total * sizeof(*tmp) + 1);
		if (!tmp)
			return ch_error_nomem(err);
		for (size_t k = 0; k < c->ds.manifest.nfields; k++)
			field_outliers(c, k, tmp);
		free(tmp);
	}
	bad = c->rep->rules[CH_RULE_SIZE_OUTLIERS].count;
	if (bad)
		check_settle(c, CH_RULE_SIZE_OUTLIERS, "%llu %s a field over "
			     "%gx its median size", (unsigned long long)bad,
			     ch_plural(bad, "sample has", "samples have"),
			     c->o->factor);
	else
		check_settle(c, CH_RULE_SIZE_OUTLIERS, "no field is over %gx "
			     "its median size", c->o->factor);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Labels                                                               */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The class values: the manifest's classes, else those the data has. */
static int label_values(struct checker *c, struct ch_check_labels *l)
{
	uint64_t nclasses = c->ds.manifest.nclasses, n = 0;
	if (!(l->values = malloc((nclasses ? nclasses : c->total) * 8 + 1)))
		return -1;
	if (nclasses) {
		for (uint64_t v = 0; v < nclasses; v++)
			l->values[v] = v;
		l->nvalues = nclasses;
		return 0;
	}
	for (uint64_t i = 0; i < c->total; i++)
		if (c->cls[i] >= 0)
			l->values[n++] = (uint64_t)c->cls[i];
	qsort(l->values, n, sizeof(*l->values), cmp_u64);
	for (uint64_t i = 0; i < n; i++)
		if (l->nvalues == 0 || l->values[l->nvalues - 1] != l->values[i])
			l->values[l->nvalues++] = l->values[i];
	return 0;
}

static size_t value_index(const struct ch_check_labels *l, uint64_t v)
{
	size_t lo = 0, hi = l->nvalues;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->values[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int label_groups(struct checker *c, struct ch_check_labels *l)
{
	const struct ch_manifest *m = &c->ds.manifest;
	l->ngroups = 1 + m->nsplits;
	if (!(l->groups = calloc(l->ngroups, sizeof(*l->groups))))
		return -1;
	for (size_t g = 0; g < l->ngroups; g++) {
		l->groups[g].name = strdup(g ? m->splits[g - 1].name : "all");
		l->groups[g].counts = calloc(l->nvalues + 1, 8);
		if (!l->groups[g].name || !l->groups[g].counts)
			return -1;
	}
	for (uint64_t i = 0; i < c->total; i++) {
		if (c->cls[i] < 0)
			continue;
		size_t v = value_index(l, (uint64_t)c->cls[i]);
		unsigned s = c->split_of ? c->split_of[i] : SPLIT_NONE;
		l->groups[0].counts[v]++;
		l->groups[0].total++;
		if (s < m->nsplits) {
			l->groups[1 + s].counts[v]++;
			l->groups[1 + s].total++;
		}
	}
	return 0;
}

int check_labels(struct checker *c, struct ch_error *err)
{
	struct ch_check_labels *l = &c->rep->labels;
	if (!c->run[CH_RULE_LABELS])
		return 0;
	if (!c->cls) {
		check_settle(c, CH_RULE_LABELS, "no cls field: nothing to "
			     "count");
		return 0;
	}
	c->rep->has_labels = 1;
	if (label_values(c, l) < 0 || label_groups(c, l) < 0)
		return ch_error_set(err, "out of memory counting classes");
	check_settle(c, CH_RULE_LABELS, "%zu %s, %llu labelled %s",
		     l->nvalues, ch_plural(l->nvalues, "class", "classes"),
		     (unsigned long long)l->groups[0].total,
		     ch_plural(l->groups[0].total, "sample", "samples"));
	return 0;
}

/* ------------------------------------------------------------------ */
/* Drift from a baseline                                                */

static double share_of(const struct ch_check_label_group *g,
		       const struct ch_check_labels *l, uint64_t v)
{
	size_t i = value_index(l, v);
	if (g->total == 0 || i >= l->nvalues || l->values[i] != v)
		return 0;
	return (double)g->counts[i] / (double)g->total;
}

/* The baseline's group to compare group g with: the same split when
 * both have splits, else the whole baseline. */
static const struct ch_check_label_group *
base_group(const struct ch_check_labels *cur, size_t g,
	   const struct ch_check_labels *base)
{
	for (size_t b = 1; g > 0 && b < base->ngroups; b++)
		if (strcmp(base->groups[b].name, cur->groups[g].name) == 0)
			return &base->groups[b];
	return &base->groups[0];
}

static void note_drift(struct checker *c, const char *group, uint64_t value,
		       double now, double then)
{
	struct ch_check_rule_result *r = &c->rep->rules[CH_RULE_LABELS];
	struct ch_check_example *ex;
	if (r->nexamples >= c->o->examples || (!r->examples &&
	    !(r->examples = calloc(c->o->examples, sizeof(*ex))))) {
		r->count++;
		return;
	}
	ex = &r->examples[r->nexamples];
	memset(ex, 0, sizeof(*ex));
	ex->sample = r->count++;
	ex->at.split = strdup(group);
	ex->value = value;
	ex->share = now;
	ex->baseline_share = then;
	r->nexamples++;
}

/* Every class value of either side, in one group. */
static void compare_group(struct checker *c, size_t g,
			  const struct ch_check_labels *base)
{
	const struct ch_check_labels *cur = &c->rep->labels;
	const struct ch_check_label_group *now = &cur->groups[g];
	const struct ch_check_label_group *then = base_group(cur, g, base);
	size_t i = 0, j = 0;
	if (now->total == 0 || then->total == 0)
		return;
	while (i < cur->nvalues || j < base->nvalues) {
		uint64_t v = j >= base->nvalues ||
			     (i < cur->nvalues && cur->values[i] <= base->values[j]) ?
			     cur->values[i] : base->values[j];
		double a = share_of(now, cur, v), b = share_of(then, base, v);
		if (fabs(a - b) > c->o->drift)
			note_drift(c, now->name, v, a, b);
		i += i < cur->nvalues && cur->values[i] == v;
		j += j < base->nvalues && base->values[j] == v;
	}
}

int check_labels_drift(struct checker *c, const struct ch_check_labels *base,
		       struct ch_error *err)
{
	const struct ch_check_labels *cur = &c->rep->labels;
	(void)err;
	if (!c->rep->has_labels)
		return 0;
	if (!base) {
		check_settle(c, CH_RULE_LABELS, "%zu %s; the baseline has "
			     "no cls field: nothing to compare", cur->nvalues,
			     ch_plural(cur->nvalues, "class", "classes"));
		return 0;
	}
	for (size_t g = cur->ngroups > 1 ? 1 : 0; g < cur->ngroups; g++)
		compare_group(c, g, base);
	if (c->rep->rules[CH_RULE_LABELS].count)
		check_settle(c, CH_RULE_LABELS, "%llu class %s more than %g "
			     "from the baseline", (unsigned long long)
			     c->rep->rules[CH_RULE_LABELS].count,
			     ch_plural(c->rep->rules[CH_RULE_LABELS].count,
					  "proportion moved",
					  "proportions moved"), c->o->drift);
	else
		check_settle(c, CH_RULE_LABELS, "%zu %s; no proportion "
			     "moved more than %g from the baseline",
			     cur->nvalues, ch_plural(cur->nvalues, "class",
						     "classes"), c->o->drift);
	return 0;
}
