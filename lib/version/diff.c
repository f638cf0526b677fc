/*
 * version/diff.c - two dataset versions compared sample by sample
 * (chute/version.h).
 *
 * Each version becomes one record a sample (key, content hash, split,
 * class), sorted by key; one merge of the two sorted arrays then finds
 * what was added, removed, changed or moved.  Split and class names are
 * mapped to one list of names for both versions first, so that records
 * compare by index.
 */
#include <stdlib.h>
#include <string.h>

#include "chute/version.h"
#include "common/counter.h"

struct rec {
	const char *key;
	size_t len;
	uint64_t hash;
	int32_t split; /* index into d->splits, -1: in none */
	int32_t cls;   /* index into d->classes, -1: none known */
};

struct side {
	struct ch_dataset *ds;
	struct rec *recs; /* by sample number, then sorted by key */
	int32_t *cls_map; /* the version's class i -> d->classes index */
	size_t *shared;	  /* B: A's shard with the same hash, or SIZE_MAX;
			   * A: whether a shard of B shares it (0/1) */
};

struct differ {
	const struct ch_diff_opts *o;
	struct ch_diff *d;
	struct side a, b;
	struct ch_block_reader *reader;
	struct ch_counter progress; /* "scanning" both versions' samples */
};

static int cancelled(const struct differ *df)
{
	return df->o && df->o->cancel && *df->o->cancel;
}

/* ------------------------------------------------------------------ */
/* Names of both versions                                               */

static int cmp_name(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The sorted union of two sorted name lists, each name once; in_a/in_b
 * say where each comes from.  *out is the caller's. */
static int union_names(const char **a, size_t na, const char **b, size_t nb,
		       const char ***out, int **in_a, int **in_b, size_t *n)
{
	size_t i = 0, j = 0, k = 0, cap = na + nb + 1;

	*out = malloc(cap * sizeof(**out));
	*in_a = calloc(cap, sizeof(**in_a));
	*in_b = calloc(cap, sizeof(**in_b));
	if (!*out || !*in_a || !*in_b)
		return -1;
	while (i < na || j < nb) {
		int c = i == na ? 1 : j == nb ? -1 : strcmp(a[i], b[j]);

		(*out)[k] = c <= 0 ? a[i] : b[j];
		(*in_a)[k] = c <= 0;
		(*in_b)[k] = c >= 0;
		i += c <= 0;
		j += c >= 0;
		k++;
	}
	*n = k;
	return 0;
}

/* Names only in one of two sorted lists: a list of pointers into them. */
static int only_in(const char **x, size_t nx, const char **y, size_t ny,
		   const char ***out, size_t *n)
{
	*n = 0;
	*out = malloc((nx + 1) * sizeof(**out));
	if (!*out)
		return -1;
	for (size_t i = 0; i < nx; i++)
		if (!ny || !bsearch(&x[i], y, ny, sizeof(*y), cmp_name))
			(*out)[(*n)++] = x[i];
	return 0;
}

/* Borrowed, sorted copies of a manifest's name lists. */
static const char **split_names(const struct ch_manifest *m)
{
	const char **v = malloc((m->nsplits + 1) * sizeof(*v));

	for (size_t i = 0; v && i < m->nsplits; i++)
		v[i] = m->splits[i].name;
	return v;
}

static const char **field_names(const struct ch_manifest *m)
{
	const char **v = malloc((m->nfields + 1) * sizeof(*v));

	for (size_t i = 0; v && i < m->nfields; i++)
		v[i] = m->fields[i].name;
	return v;
}

static int diff_splits(struct differ *df, struct ch_error *err)
{
	const struct ch_manifest *ma = &df->a.ds->manifest;
	const struct ch_manifest *mb = &df->b.ds->manifest;
	const char **na = split_names(ma), **nb = split_names(mb), **u = NULL;
	int *in_a = NULL, *in_b = NULL, rc = -1;
	size_t n = 0;

	if (!na || !nb || union_names(na, ma->nsplits, nb, mb->nsplits, &u,
				      &in_a, &in_b, &n) < 0 ||
	    !(df->d->splits = calloc(n + 1, sizeof(*df->d->splits)))) {
		ch_error_nomem(err);
		goto out;
	}
	df->d->nsplits = n;
	for (size_t k = 0; k < n; k++) {
		struct ch_diff_split *s = &df->d->splits[k];

		s->name = u[k];
		s->in_a = in_a[k];
		s->in_b = in_b[k];
	}
	rc = 0;
out:
	free(na);
	free(nb);
	free(u);
	free(in_a);
	free(in_b);
	return rc;
}

/* The class lists (sorted in a manifest) united, and each version's class
 * numbers mapped to the united list. */
static int diff_classes(struct differ *df, struct ch_error *err)
{
	const struct ch_manifest *ma = &df->a.ds->manifest;
	const struct ch_manifest *mb = &df->b.ds->manifest;
	struct ch_diff *d = df->d;
	const char **u = NULL;
	int *in_a = NULL, *in_b = NULL, rc = -1;
	size_t n = 0;

	if (union_names((const char **)ma->classes, ma->nclasses,
			(const char **)mb->classes, mb->nclasses, &u, &in_a,
			&in_b, &n) < 0 ||
	    !(d->classes = calloc(n + 1, sizeof(*d->classes))) ||
	    !(df->a.cls_map = calloc(ma->nclasses + 1, sizeof(int32_t))) ||
	    !(df->b.cls_map = calloc(mb->nclasses + 1, sizeof(int32_t)))) {
		ch_error_nomem(err);
		goto out;
	}
	d->nclasses = n;
	for (size_t k = 0, i = 0, j = 0; k < n; k++) {
		d->classes[k] = (struct ch_diff_class){
			.name = u[k], .in_a = in_a[k], .in_b = in_b[k] };
		if (in_a[k])
			df->a.cls_map[i++] = (int32_t)k;
		if (in_b[k])
			df->b.cls_map[j++] = (int32_t)k;
	}
	if (only_in((const char **)mb->classes, mb->nclasses,
		    (const char **)ma->classes, ma->nclasses,
		    &d->classes_added, &d->nclasses_added) < 0 ||
	    only_in((const char **)ma->classes, ma->nclasses,
		    (const char **)mb->classes, mb->nclasses,
		    &d->classes_removed, &d->nclasses_removed) < 0) {
		ch_error_nomem(err);
		goto out;
	}
	rc = 0;
out:
	free(u);
	free(in_a);
	free(in_b);
	return rc;
}

static int diff_fields(struct differ *df, struct ch_error *err)
{
	const struct ch_manifest *ma = &df->a.ds->manifest;
	const struct ch_manifest *mb = &df->b.ds->manifest;
	const char **fa = field_names(ma), **fb = field_names(mb);
	int rc = 0;

	if (!fa || !fb ||
	    only_in(fb, mb->nfields, fa, ma->nfields, &df->d->fields_added,
		    &df->d->nfields_added) < 0 ||
	    only_in(fa, ma->nfields, fb, mb->nfields, &df->d->fields_removed,
		    &df->d->nfields_removed) < 0)
		rc = ch_error_nomem(err);
	free(fa);
	free(fb);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Records                                                              */

static int cmp_hash(const struct ch_hash128 *x, const struct ch_hash128 *y)
{
	if (x->high != y->high)
		return x->high < y->high ? -1 : 1;
	return x->low < y->low ? -1 : x->low > y->low;
}

/* A shard of A in the order find_shared searches: hash, sample count,
 * then number, so that the first match is the first of A's shards. */
struct shard_key {
	struct ch_hash128 hash;
	uint64_t samples;
	size_t i;
};

static int cmp_shard_key(const void *a, const void *b)
{
	const struct shard_key *x = a, *y = b;
	int c = cmp_hash(&x->hash, &y->hash);
	if (c)
		return c;
	if (x->samples != y->samples)
		return x->samples < y->samples ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/* The first of A's shards with y's file hash and sample count, or
 * SIZE_MAX: binary search in keys, sorted. */
static size_t find_key(const struct shard_key *keys, size_t n,
		       const struct ch_manifest_shard *y)
{
	struct shard_key want = { y->hash, y->samples, 0 };
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cmp_shard_key(&keys[mid], &want) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && cmp_hash(&keys[lo].hash, &y->hash) == 0 &&
	    keys[lo].samples == y->samples)
		return keys[lo].i;
	return SIZE_MAX;
}

/* For each shard of B, the first shard of A with the same file hash and
 * sample count: A's shards sorted once, B's found by binary search, so
 * n log n for manifests of any size. */
static int find_shared(struct differ *df, struct ch_error *err)
{
	const struct ch_manifest *ma = &df->a.ds->manifest;
	const struct ch_manifest *mb = &df->b.ds->manifest;
	struct shard_key *keys = malloc((ma->nshards + 1) * sizeof(*keys));

	df->a.shared = calloc(ma->nshards + 1, sizeof(size_t));
	df->b.shared = calloc(mb->nshards + 1, sizeof(size_t));
	if (!df->a.shared || !df->b.shared || !keys) {
		free(keys);
		return ch_error_nomem(err);
	}
	for (size_t i = 0; i < ma->nshards; i++)
		keys[i] = (struct shard_key){ ma->shards[i].hash,
					      ma->shards[i].samples, i };
	qsort(keys, ma->nshards, sizeof(*keys), cmp_shard_key);
	for (size_t j = 0; j < mb->nshards; j++) {
		size_t i = find_key(keys, ma->nshards, &mb->shards[j]);
		df->b.shared[j] = i;
		if (i != SIZE_MAX) {
			df->a.shared[i] = 1;
			df->d->shards_shared++;
		}
	}
	free(keys);
	return 0;
}

/* The class of sample i from its cls field (decimal text), or -1; a
 * read that fails sets *failed to its return. */
static int32_t class_of(struct differ *df, struct side *s,
			const struct ch_shard *sh, uint64_t i, uint32_t nfields,
			struct ch_error *err, int *failed)
{
	size_t ncls = s->ds->manifest.nclasses;
	struct ch_field_info f;
	const uint8_t *data;
	uint64_t v = 0;

	for (uint32_t k = 0; k < nfields; k++) {
		ch_shard_field(sh, i, k, &f);
		if (strcmp(f.name, "cls") != 0)
			continue;
		if (f.size == 0 || f.size > 19)
			return -1;
		int rc = ch_sample_read(df->reader, sh, i, &data, err);
		if (rc < 0) {
			*failed = rc;
			return -1;
		}
		for (uint64_t c = 0; c < f.size; c++) {
			uint8_t ch = data[f.offset + c];
			if (ch < '0' || ch > '9')
				return -1;
			v = v * 10 + (ch - '0');
		}
		return v < ncls ? s->cls_map[v] : -1;
	}
	return -1;
}

static int load_shard(struct differ *df, struct side *s, size_t k,
		      int want_cls, struct ch_error *err)
{
	const struct ch_manifest_shard *ms = &s->ds->manifest.shards[k];
	struct ch_shard *sh;
	struct ch_sample_info info;
	int failed = ch_dataset_shard(s->ds, k, &sh, err);

	if (failed < 0)
		return failed;
	for (uint64_t i = 0; i < ms->samples && !failed; i++) {
		struct rec *r = &s->recs[ms->first_sample + i];

		ch_shard_sample(sh, i, &info);
		*r = (struct rec){ info.key, info.key_len, info.hash, -1, -1 };
		if (want_cls)
			r->cls = class_of(df, s, sh, i, info.nfields, err,
					  &failed);
		ch_counter_add(&df->progress, 1, 0);
	}
	return failed;
}

/* A's records; a shard B shares needs no classes (its samples are
 * unchanged). */
static int load_a(struct differ *df, struct ch_error *err)
{
	const struct ch_manifest *m = &df->a.ds->manifest;

	for (size_t k = 0; k < m->nshards; k++) {
		if (cancelled(df))
			return ch_error_interrupted(err);
		int rc = load_shard(df, &df->a, k,
				    m->nclasses && !df->a.shared[k], err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* B's records; those of a shared shard are A's, its file never read. */
static int load_b(struct differ *df, struct ch_error *err)
{
	const struct ch_manifest *ma = &df->a.ds->manifest;
	const struct ch_manifest *m = &df->b.ds->manifest;

	for (size_t k = 0; k < m->nshards; k++) {
		size_t from = df->b.shared[k];

		if (cancelled(df))
			return ch_error_interrupted(err);
		if (from == SIZE_MAX) {
			int rc = load_shard(df, &df->b, k, m->nclasses != 0,
					    err);
			if (rc < 0)
				return rc;
			continue;
		}
		memcpy(&df->b.recs[m->shards[k].first_sample],
		       &df->a.recs[ma->shards[from].first_sample],
		       m->shards[k].samples * sizeof(struct rec));
		ch_counter_add(&df->progress, m->shards[k].samples, 0);
	}
	return 0;
}

/* Marks each sample of s with the united index of its split. */
static int mark_splits(struct differ *df, struct side *s, int is_a,
		       struct ch_error *err)
{
	const struct ch_manifest *m = &s->ds->manifest;

	for (size_t k = 0; k < df->d->nsplits; k++) {
		struct ch_diff_split *sp = &df->d->splits[k];
		uint64_t *ids = NULL, n = 0;

		if (!(is_a ? sp->in_a : sp->in_b))
			continue;
		if (ch_split_load(s->ds, sp->name, &ids, &n, err) < 0)
			return -1;
		for (uint64_t i = 0; i < n; i++)
			if (ids[i] < m->samples)
				s->recs[ids[i]].split = (int32_t)k;
		*(is_a ? &sp->samples_a : &sp->samples_b) = n;
		free(ids);
	}
	return 0;
}

static int cmp_rec(const void *x, const void *y)
{
	const struct rec *a = x, *b = y;
	int c = memcmp(a->key, b->key, a->len < b->len ? a->len : b->len);

	if (c == 0 && a->len != b->len)
		c = a->len < b->len ? -1 : 1;
	if (c == 0 && a->hash != b->hash)
		c = a->hash < b->hash ? -1 : 1;
	return c;
}

static int alloc_recs(struct side *s, struct ch_error *err)
{
	uint64_t n = s->ds->manifest.samples;

	s->recs = malloc((n ? n : 1) * sizeof(*s->recs));
	if (!s->recs)
		return ch_error_set(err, "out of memory: %llu samples",
				    (unsigned long long)n);
	return 0;
}

/* Both versions' records, sorted by key.  B copies A's records of the
 * shards they share by sample number: A is sorted only after that. */
static int load(struct differ *df, struct ch_error *err)
{
	int rc;
	ch_counter_phase(&df->progress, "scanning", "samples",
			 df->a.ds->manifest.samples +
				 df->b.ds->manifest.samples, 0);
	if ((rc = alloc_recs(&df->a, err)) < 0 ||
	    (rc = alloc_recs(&df->b, err)) < 0 ||
	    (rc = load_a(df, err)) < 0 || (rc = load_b(df, err)) < 0 ||
	    (rc = mark_splits(df, &df->a, 1, err)) < 0 ||
	    (rc = mark_splits(df, &df->b, 0, err)) < 0)
		return rc;
	ch_counter_end(&df->progress);
	qsort(df->a.recs, df->a.ds->manifest.samples, sizeof(struct rec),
	      cmp_rec);
	qsort(df->b.recs, df->b.ds->manifest.samples, sizeof(struct rec),
	      cmp_rec);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The merge                                                            */

static int push(struct ch_diff_keys *l, const struct rec *r,
		struct ch_error *err)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct ch_diff_key *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return ch_error_nomem(err);
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct ch_diff_key){ r->key, r->len };
	return 0;
}

static int push_move(struct ch_diff *d, const struct rec *a,
		     const struct rec *b, struct ch_error *err)
{
	if (d->nmoved == d->moved_cap) {
		size_t cap = d->moved_cap ? 2 * d->moved_cap : 64;
		struct ch_diff_move *v = realloc(d->moved, cap * sizeof(*v));
		if (!v)
			return ch_error_nomem(err);
		d->moved = v;
		d->moved_cap = cap;
	}
	d->moved[d->nmoved++] = (struct ch_diff_move){
		{ b->key, b->len }, (size_t)a->split, (size_t)b->split };
	return 0;
}

static int only_a(struct ch_diff *d, const struct rec *a,
		  struct ch_error *err)
{
	if (a->cls >= 0)
		d->classes[a->cls].removed++;
	if (push(&d->removed, a, err) < 0)
		return -1;
	return a->split < 0 ? 0 : push(&d->splits[a->split].removed, a, err);
}

static int only_b(struct ch_diff *d, const struct rec *b,
		  struct ch_error *err)
{
	if (b->cls >= 0)
		d->classes[b->cls].added++;
	if (push(&d->added, b, err) < 0)
		return -1;
	return b->split < 0 ? 0 : push(&d->splits[b->split].added, b, err);
}

static int in_both(struct ch_diff *d, const struct rec *a, const struct rec *b,
		   struct ch_error *err)
{
	int changed = a->hash != b->hash;

	if (!changed)
		d->unchanged++;
	else if (push(&d->changed, b, err) < 0)
		return -1;
	if (changed && (b->cls >= 0 || a->cls >= 0))
		d->classes[b->cls >= 0 ? b->cls : a->cls].changed++;
	if (a->split == b->split)
		return changed && a->split >= 0 ?
			       push(&d->splits[a->split].changed, b, err) : 0;
	if (a->split >= 0 && push(&d->splits[a->split].removed, a, err) < 0)
		return -1;
	if (b->split >= 0 && push(&d->splits[b->split].added, b, err) < 0)
		return -1;
	return a->split >= 0 && b->split >= 0 ? push_move(d, a, b, err) : 0;
}

static int merge(struct differ *df, struct ch_error *err)
{
	const struct rec *a = df->a.recs, *b = df->b.recs;
	uint64_t na = df->a.ds->manifest.samples;
	uint64_t nb = df->b.ds->manifest.samples, i = 0, j = 0;
	int rc = 0;

	while (rc == 0 && (i < na || j < nb)) {
		int c = i == na ? 1 : j == nb ? -1 : 0;

		if (c == 0) {
			c = memcmp(a[i].key, b[j].key,
				   a[i].len < b[j].len ? a[i].len : b[j].len);
			if (c == 0 && a[i].len != b[j].len)
				c = a[i].len < b[j].len ? -1 : 1;
		}
		if (c < 0)
			rc = only_a(df->d, &a[i++], err);
		else if (c > 0)
			rc = only_b(df->d, &b[j++], err);
		else
			rc = in_both(df->d, &a[i++], &b[j++], err);
	}
	return rc;
}

static int is_equal(const struct ch_diff *d)
{
	if (d->added.n || d->removed.n || d->changed.n || d->nmoved ||
	    d->nfields_added || d->nfields_removed || d->nclasses_added ||
	    d->nclasses_removed)
		return 0;
	for (size_t k = 0; k < d->nsplits; k++) {
		const struct ch_diff_split *s = &d->splits[k];
		if (s->in_a != s->in_b || s->added.n || s->removed.n ||
		    s->changed.n)
			return 0;
	}
	return 1;
}

int ch_diff(struct ch_dataset *a, struct ch_dataset *b,
	    const struct ch_diff_opts *o, struct ch_diff *d,
	    struct ch_error *err)
{
	struct differ df = { .o = o, .d = d, .a = { .ds = a },
			     .b = { .ds = b } };
	int rc = -1;

	memset(d, 0, sizeof(*d));
	ch_counter_init(&df.progress, o ? o->progress : NULL,
			o ? o->progress_arg : NULL);
	if ((a->manifest.nclasses || b->manifest.nclasses) &&
	    !(df.reader = ch_block_reader_new())) {
		ch_error_nomem(err);
		goto out;
	}
	if ((rc = diff_splits(&df, err)) < 0 ||
	    (rc = diff_classes(&df, err)) < 0 ||
	    (rc = diff_fields(&df, err)) < 0 ||
	    (rc = find_shared(&df, err)) < 0 || (rc = load(&df, err)) < 0 ||
	    (rc = merge(&df, err)) < 0)
		goto out;
	d->equal = is_equal(d);
	rc = 0;
out:
	if (rc < 0)
		ch_diff_release(d);
	free(df.a.recs);
	free(df.b.recs);
	free(df.a.cls_map);
	free(df.b.cls_map);
	free(df.a.shared);
	free(df.b.shared);
	ch_block_reader_free(df.reader);
	return rc;
}

void ch_diff_release(struct ch_diff *d)
{
	free(d->added.v);
	free(d->removed.v);
	free(d->changed.v);
	for (size_t k = 0; k < d->nsplits; k++) {
		free(d->splits[k].added.v);
		free(d->splits[k].removed.v);
		free(d->splits[k].changed.v);
	}
	free(d->splits);
	free(d->moved);
	free(d->classes);
	free(d->fields_added);
	free(d->fields_removed);
	free(d->classes_added);
	free(d->classes_removed);
	memset(d, 0, sizeof(*d));
}
