/* check/check.c - chute check: the driver.  Opens the dataset, loads its
 * splits, opens the shards and scans their samples in parallel (tasks on
 * common/pool.c, as verify does), then runs the rules that need the whole
 * picture: duplicates and leakage over a table sorted by content hash,
 * near-duplicates, the eval split, labels, size outliers. */
#include <stdlib.h>
#include <string.h>

#include "check/internal.h"
#include "common/pool.h"

#define TASK_SAMPLES 16384 /* samples per scan task, rounded up to a block */

/* ------------------------------------------------------------------ */
/* The pool                                                             */

static void open_task(struct checker *c, size_t s)
{
	struct ch_error err;
	if (ch_dataset_open_shard(&c->ds, s, 0, &c->sh[s], &err) == 0) {
		ch_totals_add_shard_locked(&c->totals, &c->lock, &c->tallied,
					   c->sh[s]);
		return;
	}
	c->sh[s] = NULL;
	struct check_hit h = { .sample = c->first[s], .shard_only = 1,
			       .shard = c->ds.manifest.shards[s].path,
			       .other = -1, .message = err.msg };
	check_note(c, CH_RULE_READABLE, &h);
}

/* What a worker keeps from one scan task to the next. */
struct scan_worker {
	struct ch_block_reader *r;
	struct check_decoder d;
};

struct scan_pool {
	struct checker *c;
	struct scan_worker *workers; /* one per thread of the pool */
};

static int run_task(void *arg, size_t i, int worker, struct ch_error *err)
{
	struct scan_pool *p = arg;
	struct checker *c = p->c;
	struct scan_worker *w = &p->workers[worker];
	if (c->phase_open) {
		open_task(c, c->tasks[i].shard);
		return 0;
	}
	if (!w->r && !(w->r = ch_block_reader_new()))
		return ch_error_nomem(err);
	check_scan(c, &c->tasks[i], w->r, &w->d);
	if (c->progress.fn) {
		pthread_mutex_lock(&c->lock);
		ch_counter_add(&c->progress, c->tasks[i].end - c->tasks[i].begin,
			       0);
		pthread_mutex_unlock(&c->lock);
	}
	return 0;
}

static int run_pool(struct checker *c, struct ch_error *err)
{
	int jobs = c->o->jobs > 0 ? c->o->jobs : ch_cpu_count();
	struct scan_pool p = { c, calloc((size_t)jobs, sizeof(*p.workers)) };
	if (!p.workers)
		return ch_error_nomem(err);
	int rc = ch_pool_run(jobs, c->ntasks, run_task, &p, c->o->cancel, err);
	for (int i = 0; i < jobs; i++) {
		check_decoder_release(&p.workers[i].d);
		ch_block_reader_free(p.workers[i].r);
	}
	free(p.workers);
	return rc;
}

static int add_task(struct checker *c, struct check_task t, size_t *cap,
		    struct ch_error *err)
{
	if (c->ntasks == *cap) {
		size_t n = *cap ? *cap * 2 : 64;
		struct check_task *nt = realloc(c->tasks, n * sizeof(*nt));
		if (!nt)
			return ch_error_nomem(err);
		c->tasks = nt;
		*cap = n;
	}
	c->tasks[c->ntasks++] = t;
	return 0;
}

/* The first sample stored after the block holding sample i: tasks end
 * on block boundaries so that no block is decoded twice. */
static uint64_t block_end(const struct ch_shard *sh, uint64_t i)
{
	struct ch_sample_info si;
	uint64_t lo = i, hi = ch_shard_sample_count(sh);
	ch_shard_sample(sh, i, &si);
	uint32_t b = si.block;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		ch_shard_sample(sh, mid, &si);
		if (si.block <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int plan(struct checker *c, int open_phase, struct ch_error *err)
{
	size_t cap = 0;
	c->ntasks = 0;
	c->phase_open = open_phase;
	for (size_t s = 0; s < c->nshards; s++) {
		if (open_phase) {
			if (add_task(c, (struct check_task){ s, 0, 0 }, &cap,
				     err) < 0)
				return -1;
			continue;
		}
		uint64_t n = c->sh[s] ? ch_shard_sample_count(c->sh[s]) : 0;
		for (uint64_t i = 0; i < n;) {
			uint64_t end = n - i > TASK_SAMPLES ? i + TASK_SAMPLES : n;
			if (end < n)
				end = block_end(c->sh[s], end - 1);
			if (add_task(c, (struct check_task){ s, i, end }, &cap,
				     err) < 0)
				return -1;
			i = end;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Setting up                                                           */

static int which_rules(struct checker *c)
{
	for (int r = 0; r < CH_RULE_COUNT; r++)
		c->run[r] = c->labels_only ? r == CH_RULE_READABLE ||
					     r == CH_RULE_LABELS :
					     c->o->level[r] != CH_LEVEL_OFF;
	c->run[CH_RULE_NEAR_DUPLICATES] &= c->o->near_duplicates != 0;
	c->run[CH_RULE_CORRUPTION] &= c->o->deep != 0;
	return 0;
}

static int open_dataset(struct checker *c, const char *path,
			struct ch_error *err)
{
	if (ch_dataset_open_folder(&c->ds, path, err) < 0)
		return -1;
	const struct ch_manifest *m = &c->ds.manifest;
	if (c->ds.lone_shard)
		return ch_error_usage(err, "'%s' has no manifest: check needs "
				      "a dataset folder or its manifest.json",
				      path);
	if (m->nsplits > SPLIT_MAX)
		return ch_error_set(err, "'%s' has %zu splits; check tells at "
				    "most %u apart", path, m->nsplits,
				    SPLIT_MAX);
	c->nshards = m->nshards;
	c->sh = calloc(c->nshards + 1, sizeof(*c->sh));
	c->first = calloc(c->nshards + 1, sizeof(*c->first));
	if (!c->sh || !c->first)
		return ch_error_nomem(err);
	for (size_t s = 0; s < c->nshards; s++)
		c->first[s + 1] = c->first[s] + m->shards[s].samples;
	c->total = c->first[c->nshards];
	c->train = -1;
	for (size_t i = 0; i < m->nsplits; i++)
		if (strcmp(m->splits[i].name, "train") == 0)
			c->train = (int)i;
	return 0;
}

/* Split ids per sample; a split file that will not load is the readable
 * rule failing, and its samples count as in no split. */
static int load_splits(struct checker *c, struct ch_error *err)
{
	const struct ch_manifest *m = &c->ds.manifest;
	if (m->nsplits == 0)
		return 0;
	if (!(c->split_of = malloc(c->total ? c->total : 1)))
		return ch_error_nomem(err);
	memset(c->split_of, SPLIT_NONE, c->total);
	for (size_t i = 0; i < m->nsplits; i++) {
		uint64_t *ids = NULL, n = 0;
		struct ch_error e;
		if (ch_split_load(&c->ds, m->splits[i].name, &ids, &n, &e) < 0) {
			struct check_hit h = { .sample = c->total + i,
					       .shard_only = 1, .other = -1,
					       .shard = m->splits[i].path,
					       .message = e.msg };
			check_note(c, CH_RULE_READABLE, &h);
			continue;
		}
		for (uint64_t k = 0; k < n; k++)
			if (ids[k] < c->total)
				c->split_of[ids[k]] = (uint8_t)i;
		free(ids);
	}
	return 0;
}

/* Sample counts: the manifest's total against its shards'. */
static void check_counts(struct checker *c)
{
	const struct ch_manifest *m = &c->ds.manifest;
	char msg[160];
	if (m->samples == c->total)
		return;
	snprintf(msg, sizeof(msg), "the shards hold %llu %s, the "
		 "manifest's total is %llu", (unsigned long long)c->total,
		 ch_plural(c->total, "sample", "samples"),
		 (unsigned long long)m->samples);
	struct check_hit h = { .sample = c->total + m->nsplits,
			       .shard_only = 1, .shard = "manifest.json",
			       .other = -1, .message = msg };
	check_note(c, CH_RULE_READABLE, &h);
}

static void note_total(const char *message, int unlisted, void *arg)
{
	struct checker *c = arg;
	(void)unlisted;
	struct check_hit h = { .sample = c->total + c->ds.manifest.nsplits,
			       .shard_only = 1, .shard = "manifest.json",
			       .other = -1, .message = message };
	c->bad_totals++; /* one thread: after the pool */
	check_note(c, CH_RULE_READABLE, &h);
}

/* The schema's totals against the shards', when every shard opened (one
 * that did not is the readable rule failing already). */
static void check_totals(struct checker *c)
{
	if (c->tallied == c->nshards)
		ch_totals_compare(&c->ds.manifest, &c->totals, note_total, c);
}

static void *alloc_filled(size_t n, size_t size, int byte)
{
	void *p = malloc(n ? n * size : 1);
	if (p)
		memset(p, byte, n * size);
	return p;
}

/* The required fields: the rules file's, else those more than half of
 * the samples have. */
static int pick_required(struct checker *c, struct ch_error *err)
{
	const struct ch_manifest *m = &c->ds.manifest;
	if (!(c->required = calloc(m->nfields + 1, 1)))
		return ch_error_nomem(err);
	for (size_t k = 0; k < m->nfields; k++) {
		int want = 0;
		for (size_t j = 0; c->o->required && j < c->o->nrequired; j++)
			want |= strcmp(c->o->required[j], m->fields[k].name) == 0;
		if (!c->o->required)
			want = m->fields[k].count > m->samples / 2;
		c->required[k] = (uint8_t)want;
		c->nreq += (size_t)want;
	}
	if (c->o->required)
		c->nreq = c->o->nrequired;
	return 0;
}

static int has_manifest_field(const struct ch_manifest *m, const char *name)
{
	for (size_t k = 0; k < m->nfields; k++)
		if (strcmp(m->fields[k].name, name) == 0)
			return 1;
	return 0;
}

/* The label fields: cls and the rules file's label-fields. */
static int pick_labels(struct checker *c, struct ch_error *err)
{
	const struct ch_manifest *m = &c->ds.manifest;
	if (!(c->is_label = calloc(m->nfields + 1, 1)))
		return ch_error_nomem(err);
	for (size_t k = 0; k < m->nfields; k++) {
		const char *name = m->fields[k].name;
		int label = strcmp(name, "cls") == 0;
		for (size_t j = 0; j < c->o->nlabel_fields; j++)
			label |= strcmp(c->o->label_fields[j], name) == 0;
		c->is_label[k] = (uint8_t)label;
		c->has_label_fields |= label;
	}
	return 0;
}

static int alloc_tables(struct checker *c, struct ch_error *err)
{
	const struct ch_manifest *m = &c->ds.manifest;
	uint64_t n = c->total;
	int ok = 1;
	if (pick_labels(c, err) < 0)
		return -1;
	if (c->run[CH_RULE_DUPLICATES] || c->run[CH_RULE_LEAKAGE] ||
	    c->run[CH_RULE_CONFLICTING_LABELS])
		ok &= !!(c->recs = alloc_filled(n, sizeof(*c->recs), 0xff));
	if (c->run[CH_RULE_SIZE_OUTLIERS] && m->nfields) {
		ok &= !!(c->sizes = calloc(m->nfields, sizeof(*c->sizes)));
		for (size_t k = 0; ok && k < m->nfields; k++)
			ok &= !!(c->sizes[k] = alloc_filled(n, 8, 0xff));
	}
	if (c->run[CH_RULE_LABELS] && has_manifest_field(m, "cls"))
		ok &= !!(c->cls = alloc_filled(n, sizeof(*c->cls), 0xff));
	if (c->run[CH_RULE_NEAR_DUPLICATES] && c->split_of && c->train >= 0) {
		ok &= !!(c->phash = alloc_filled(n, 8, 0));
		ok &= !!(c->phash_ok = alloc_filled(n, 1, 0));
	}
	if (!ok)
		return ch_error_set(err, "out of memory for the tables of %llu "
				    "samples", (unsigned long long)n);
	if (c->run[CH_RULE_REQUIRED])
		return pick_required(c, err);
	return 0;
}

/* The samples of shards that did not open: their records say so rather
 * than hold garbage, and the rules that look at samples count them as
 * not examined (the hash rules count their records). */
static void mark_absent(struct checker *c)
{
	static const int per_sample[] = {
		CH_RULE_REQUIRED, CH_RULE_EMPTY, CH_RULE_TYPES,
		CH_RULE_SIZE_OUTLIERS, CH_RULE_CORRUPTION,
	};
	for (size_t s = 0; s < c->nshards; s++) {
		uint64_t lost = c->first[s + 1] - c->first[s];
		if (c->sh[s])
			continue;
		for (uint64_t n = c->first[s]; c->recs && n < c->first[s + 1];
		     n++)
			c->recs[n].tag = (uint64_t)SPLIT_ABSENT << 56 | n;
		for (size_t r = 0; r < sizeof(per_sample) / sizeof(int); r++)
			c->unexamined[per_sample[r]] += lost;
		c->unexamined[CH_RULE_LABELS] += c->cls ? lost : 0;
		c->unexamined[CH_RULE_NEAR_DUPLICATES] += c->phash ? lost : 0;
	}
}

static void free_checker(struct checker *c)
{
	for (size_t s = 0; c->sh && s < c->nshards; s++)
		ch_shard_close(c->sh[s]);
	for (size_t k = 0; c->sizes && k < c->ds.manifest.nfields; k++)
		free(c->sizes[k]);
	free(c->sizes);
	free(c->sh);
	free(c->first);
	free(c->split_of);
	free(c->recs);
	free(c->required);
	free(c->is_label);
	free(c->cls);
	free(c->phash);
	free(c->phash_ok);
	free(c->tasks);
	ch_dataset_release(&c->ds);
	ch_totals_release(&c->totals);
	pthread_mutex_destroy(&c->lock);
}

/* Opens, loads and scans: everything that reads the dataset. */
static int collect(struct checker *c, const char *path, struct ch_error *err)
{
	struct ch_check_report *rep = c->rep;
	which_rules(c);
	if (open_dataset(c, path, err) < 0)
		return -1;
	snprintf(rep->id, sizeof(rep->id), "%s", c->ds.manifest.id);
	rep->name = c->ds.manifest.name ? strdup(c->ds.manifest.name) : NULL;
	rep->samples = c->ds.manifest.samples;
	rep->shards = c->nshards;
	check_counts(c);
	if (load_splits(c, err) < 0 || alloc_tables(c, err) < 0 ||
	    plan(c, 1, err) < 0 || run_pool(c, err) < 0)
		return -1;
	mark_absent(c);
	check_totals(c);
	if (plan(c, 0, err) < 0)
		return -1;
	uint64_t samples = 0;
	for (size_t i = 0; i < c->ntasks; i++)
		samples += c->tasks[i].end - c->tasks[i].begin;
	ch_counter_phase(&c->progress, "checking", "samples", samples, 0);
	int rc = run_pool(c, err);
	ch_counter_end(&c->progress);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The rules settled after the scan                                     */

/* "cls, jpg": the required fields, for messages. */
static void required_names(const struct checker *c, char *buf, size_t size)
{
	const struct ch_check_opts *o = c->o;
	const struct ch_manifest *m = &c->ds.manifest;
	size_t used = 0, k = 0, n = o->required ? o->nrequired : m->nfields;
	buf[0] = '\0';
	for (size_t j = 0; j < n && used < size; j++) {
		if (!o->required && !c->required[j])
			continue;
		int w = snprintf(buf + used, size - used, "%s%s", k++ ? ", " :
				 "", o->required ? o->required[j] :
				 m->fields[j].name);
		used += w > 0 ? (size_t)w : 0;
	}
}

/* "2 shards or split files and 1 block cannot be read" */
static void settle_readable(struct checker *c)
{
	unsigned long long blocks = c->bad_blocks, totals = c->bad_totals;
	unsigned long long files = c->rep->rules[CH_RULE_READABLE].count -
				   blocks - totals;
	char msg[192];
	int used = 0;
	if (!files && !blocks && !totals) {
		check_settle(c, CH_RULE_READABLE, "%zu %s, %llu %s",
			     c->nshards, ch_plural(c->nshards, "shard",
						   "shards"),
			     (unsigned long long)c->total,
			     ch_plural(c->total, "sample", "samples"));
		return;
	}
	if (files)
		used = snprintf(msg, sizeof(msg), "%llu %s", files,
				ch_plural(files, "shard or split file",
					     "shards or split files"));
	if (blocks)
		used += snprintf(msg + used, sizeof(msg) - (size_t)used,
				 "%s%llu %s", files ? " and " : "", blocks,
				 ch_plural(blocks, "block", "blocks"));
	if (files || blocks)
		used += snprintf(msg + used, sizeof(msg) - (size_t)used,
				 " cannot be read%s", totals ? "; " : "");
	if (totals)
		snprintf(msg + used, sizeof(msg) - (size_t)used, "%llu %s of "
			 "the manifest %s the shards'", totals,
			 ch_plural(totals, "total", "totals"),
			 ch_plural(totals, "differs from", "differ from"));
	check_settle(c, CH_RULE_READABLE, "%s", msg);
}

static void settle_index_rules(struct checker *c)
{
	const struct ch_check_rule_result *r = c->rep->rules;
	unsigned long long bad;
	char names[256];
	if (c->run[CH_RULE_READABLE])
		settle_readable(c);
	bad = r[CH_RULE_REQUIRED].count;
	if (c->run[CH_RULE_REQUIRED])
		required_names(c, names, sizeof(names));
	if (c->run[CH_RULE_REQUIRED] && c->nreq == 0)
		check_settle(c, CH_RULE_REQUIRED, "no field is required");
	else if (c->run[CH_RULE_REQUIRED] && bad)
		check_settle(c, CH_RULE_REQUIRED, "%llu %s a required field "
			     "(%s)", bad, ch_plural(bad, "sample lacks",
						       "samples lack"), names);
	else if (c->run[CH_RULE_REQUIRED])
		check_settle(c, CH_RULE_REQUIRED, "every sample has %s", names);
	bad = r[CH_RULE_EMPTY].count;
	if (c->run[CH_RULE_EMPTY] && bad)
		check_settle(c, CH_RULE_EMPTY, "%llu %s empty", bad,
			     ch_plural(bad, "field is", "fields are"));
	else if (c->run[CH_RULE_EMPTY])
		check_settle(c, CH_RULE_EMPTY, "no field is empty");
}

static void settle_read_rules(struct checker *c)
{
	const struct ch_check_rule_result *r = c->rep->rules;
	unsigned long long bad = r[CH_RULE_TYPES].count;
	if (c->run[CH_RULE_TYPES] && bad)
		check_settle(c, CH_RULE_TYPES, "%llu %s what %s name says",
			     bad, ch_plural(bad, "field does not hold",
					       "fields do not hold"),
			     ch_plural(bad, "its", "their"));
	else if (c->run[CH_RULE_TYPES] && c->typed_fields)
		check_settle(c, CH_RULE_TYPES, "%llu %s checked",
			     (unsigned long long)c->typed_fields,
			     ch_plural(c->typed_fields, "field", "fields"));
	else if (c->run[CH_RULE_TYPES])
		check_settle(c, CH_RULE_TYPES, "no field of a checked type "
			     "(jpg, jpeg, png, cls, json, npy)");
	bad = r[CH_RULE_CORRUPTION].count;
	if (c->run[CH_RULE_CORRUPTION] && bad)
		check_settle(c, CH_RULE_CORRUPTION, "%llu %s not match %s hash",
			     bad, ch_plural(bad, "block or sample does",
					       "blocks or samples do"),
			     ch_plural(bad, "its", "their"));
	else if (c->run[CH_RULE_CORRUPTION])
		check_settle(c, CH_RULE_CORRUPTION, "%llu %s and %llu %s "
			     "match their hashes",
			     (unsigned long long)c->blocks_read,
			     ch_plural(c->blocks_read, "block", "blocks"),
			     (unsigned long long)c->samples_hashed,
			     ch_plural(c->samples_hashed, "sample",
				       "samples"));
}

/* A non-empty split that holds samples out of training. */
static void check_eval_split(struct checker *c)
{
	static const char *const names[] = { "val", "valid", "validation",
					     "test", "eval" };
	const struct ch_manifest *m = &c->ds.manifest;
	char held[256] = "";
	size_t used = 0;
	if (!c->run[CH_RULE_EVAL_SPLIT])
		return;
	for (size_t i = 0; i < m->nsplits && used < sizeof(held); i++) {
		int eval = 0;
		for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			eval |= strcmp(m->splits[i].name, names[k]) == 0;
		if (!eval || m->splits[i].samples == 0)
			continue;
		int w = snprintf(held + used, sizeof(held) - used,
				 "%s%s holds %llu %s", used ? ", " : "",
				 m->splits[i].name,
				 (unsigned long long)m->splits[i].samples,
				 ch_plural(m->splits[i].samples, "sample",
					   "samples"));
		used += w > 0 ? (size_t)w : 0;
	}
	if (used) {
		check_settle(c, CH_RULE_EVAL_SPLIT, "%s", held);
		return;
	}
	c->rep->rules[CH_RULE_EVAL_SPLIT].count = 1;
	check_settle(c, CH_RULE_EVAL_SPLIT, "no val, valid, validation, test "
		     "or eval split: hold some samples out in one");
	if (c->o->allow_no_eval)
		c->rep->rules[CH_RULE_EVAL_SPLIT].status = CH_STATUS_WARN;
}

static void tally(struct ch_check_report *rep)
{
	rep->passed = rep->warned = rep->failed = 0;
	for (int r = 0; r < CH_RULE_COUNT; r++) {
		enum ch_check_status s = rep->rules[r].status;
		rep->passed += s == CH_STATUS_PASS;
		rep->warned += s == CH_STATUS_WARN;
		rep->failed += s == CH_STATUS_FAIL;
	}
}

/* The class counts of the baseline version, for labels to compare. */
static int read_baseline(const struct ch_check_opts *o,
			 struct ch_check_report *base, struct ch_error *err)
{
	struct checker b = { .o = o, .rep = base, .labels_only = 1 };
	int rc = -1;
	memset(base, 0, sizeof(*base));
	pthread_mutex_init(&b.lock, NULL);
	if (collect(&b, o->baseline, err) < 0 || check_labels(&b, err) < 0) {
		char why[sizeof(err->msg)];
		snprintf(why, sizeof(why), "%s", err->msg);
		ch_error_set(err, "baseline: %s", why);
		goto out;
	}
	const struct ch_check_rule_result *r = &base->rules[CH_RULE_READABLE];
	if (r->count) {
		ch_error_set(err, "baseline '%s': %s", o->baseline,
			     r->nexamples && r->examples[0].message ?
			     r->examples[0].message : "a shard cannot be read");
		goto out;
	}
	rc = 0;
out:
	free_checker(&b);
	return rc;
}

static int post_rules(struct checker *c, struct ch_error *err)
{
	struct ch_check_report base;
	int rc = -1;
	memset(&base, 0, sizeof(base));
	settle_index_rules(c);
	settle_read_rules(c);
	if (check_hash_rules(c, err) < 0)
		return -1;
	check_near_duplicates(c);
	check_eval_split(c);
	if (check_labels(c, err) < 0)
		return -1;
	if (c->run[CH_RULE_LABELS] && c->o->baseline &&
	    (read_baseline(c->o, &base, err) < 0 ||
	     check_labels_drift(c, base.has_labels ? &base.labels : NULL,
				err) < 0))
		goto out;
	if (check_size_outliers(c, err) < 0)
		goto out;
	tally(c->rep);
	rc = 0;
out:
	ch_check_report_release(&base);
	return rc;
}

int ch_check(const char *path, const struct ch_check_opts *o,
	     struct ch_check_report *rep, struct ch_error *err)
{
	struct checker c = { .o = o, .rep = rep };
	int rc = -1;
	memset(rep, 0, sizeof(*rep));
	pthread_mutex_init(&c.lock, NULL);
	ch_counter_init(&c.progress, o->progress, o->progress_arg);
	if (collect(&c, path, err) < 0 || post_rules(&c, err) < 0)
		goto out;
	check_sort_examples(rep);
	rc = 0;
out:
	free_checker(&c);
	if (rc < 0)
		ch_check_report_release(rep);
	return rc;
}
