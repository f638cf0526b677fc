/* check/report.c - what a check found: counts per rule, and as examples
 * the first problems by sample number, so that the report is the same
 * whatever order the threads found them in.  Keys and paths are copied
 * only for the problems kept. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "check/internal.h"

/* The shard holding dataset-wide sample n. */
static size_t check_shard_of(const struct checker *c, uint64_t n)
{
	size_t lo = 0, hi = c->nshards;
	while (hi - lo > 1) { /* the last shard whose first sample <= n */
		size_t mid = lo + (hi - lo) / 2;
		if (c->first[mid] <= n)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Key, shard and split of sample n (or just the shard). */
static void fill_ref(const struct checker *c, struct ch_check_ref *ref,
		     uint64_t n, const char *shard)
{
	const struct ch_manifest *m = &c->ds.manifest;
	struct ch_sample_info si;
	if (shard) {
		ref->shard = strdup(shard);
		return;
	}
	size_t s = check_shard_of(c, n);
	ref->shard = strdup(m->shards[s].path);
	if (c->sh[s] && n - c->first[s] < ch_shard_sample_count(c->sh[s])) {
		ch_shard_sample(c->sh[s], n - c->first[s], &si);
		ref->key = strndup(si.key, si.key_len);
	}
	if (c->split_of && n < c->total && c->split_of[n] < m->nsplits)
		ref->split = strdup(m->splits[c->split_of[n]].name);
}

static void fill(const struct checker *c, struct ch_check_example *ex,
		 const struct check_hit *h)
{
	memset(ex, 0, sizeof(*ex));
	ex->sample = h->sample;
	fill_ref(c, &ex->at, h->sample, h->shard_only ?
		 (h->shard ? h->shard : c->ds.manifest.shards[
			check_shard_of(c, h->sample)].path) : NULL);
	ex->field = dup_or_null(h->field);
	ex->message = dup_or_null(h->message);
	ex->size = h->size;
	ex->median = h->median;
	ex->distance = h->distance;
	if (h->other >= 0) {
		ex->has_other = 1;
		ex->other_sample = (uint64_t)h->other;
		fill_ref(c, &ex->other, (uint64_t)h->other, NULL);
	}
}

static void ref_release(struct ch_check_ref *r)
{
	free(r->key);
	free(r->shard);
	free(r->split);
}

static void example_release(struct ch_check_example *ex)
{
	ref_release(&ex->at);
	ref_release(&ex->other);
	free(ex->field);
	free(ex->message);
}

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

/* Order of examples: sample number, then field, then message. */
static int cmp_key(uint64_t sample, const char *field, const char *message,
		   const struct ch_check_example *ex)
{
	if (sample != ex->sample)
		return sample < ex->sample ? -1 : 1;
	int d = cmp_str(field, ex->field);
	return d ? d : cmp_str(message, ex->message);
}

static int cmp_example(const void *a, const void *b)
{
	const struct ch_check_example *x = a;
	return cmp_key(x->sample, x->field, x->message, b);
}

static size_t find_worst(const struct ch_check_rule_result *r)
{
	size_t w = 0;
	for (size_t i = 1; i < r->nexamples; i++)
		if (cmp_example(&r->examples[i], &r->examples[w]) > 0)
			w = i;
	return w;
}

void check_note(struct checker *c, int rule, const struct check_hit *h)
{
	struct ch_check_rule_result *r = &c->rep->rules[rule];
	size_t max = c->o->examples, slot;
	pthread_mutex_lock(&c->lock);
	r->count++;
	if (max == 0 || (!r->examples &&
			 !(r->examples = calloc(max, sizeof(*r->examples)))))
		goto out;
	if (r->nexamples < max) {
		slot = r->nexamples++;
	} else {
		slot = c->worst[rule];
		if (cmp_key(h->sample, h->field, h->message,
			    &r->examples[slot]) >= 0)
			goto out;
		example_release(&r->examples[slot]);
	}
	fill(c, &r->examples[slot], h);
	if (r->nexamples == max)
		c->worst[rule] = find_worst(r);
out:
	pthread_mutex_unlock(&c->lock);
}

/* "...; 50 samples could not be examined": a rule that did not see
 * every sample does not pass as if it had. */
static void say_unexamined(struct ch_check_rule_result *r)
{
	char *more;
	if (!r->unexamined || !r->message)
		return;
	if (asprintf(&more, "%s; %llu %s not be examined", r->message,
		     (unsigned long long)r->unexamined,
		     ch_plural(r->unexamined, "sample could",
				  "samples could")) < 0)
		return;
	free(r->message);
	r->message = more;
}

void check_settle(struct checker *c, int rule, const char *fmt, ...)
{
	struct ch_check_rule_result *r = &c->rep->rules[rule];
	va_list ap;
	free(r->message);
	va_start(ap, fmt);
	if (vasprintf(&r->message, fmt, ap) < 0)
		r->message = NULL;
	va_end(ap);
	r->unexamined = c->unexamined[rule];
	say_unexamined(r);
	if (r->count == 0 && r->unexamined == 0)
		r->status = CH_STATUS_PASS;
	else
		r->status = c->o->level[rule] == CH_LEVEL_WARN ?
			    CH_STATUS_WARN : CH_STATUS_FAIL;
}

void check_sort_examples(struct ch_check_report *rep)
{
	for (int r = 0; r < CH_RULE_COUNT; r++)
		if (rep->rules[r].nexamples > 1)
			qsort(rep->rules[r].examples, rep->rules[r].nexamples,
			      sizeof(*rep->rules[r].examples), cmp_example);
}

/* The label counts a report holds (check/stats.c fills them). */
static void check_labels_release(struct ch_check_labels *l)
{
	for (size_t g = 0; g < l->ngroups; g++) {
		free(l->groups[g].name);
		free(l->groups[g].counts);
	}
	free(l->groups);
	free(l->values);
	memset(l, 0, sizeof(*l));
}

void ch_check_report_release(struct ch_check_report *rep)
{
	for (int r = 0; r < CH_RULE_COUNT; r++) {
		struct ch_check_rule_result *rr = &rep->rules[r];
		for (size_t i = 0; i < rr->nexamples; i++)
			example_release(&rr->examples[i]);
		free(rr->examples);
		free(rr->message);
	}
	check_labels_release(&rep->labels);
	free(rep->name);
	memset(rep, 0, sizeof(*rep));
}
