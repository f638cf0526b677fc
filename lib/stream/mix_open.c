/* stream/mix_open.c - a mix opened as one dataset (see stream/mix.c): a
 * manifest of the sources' shards in turn, its files asked of the source
 * each shard comes from, and its id a hash of what makes the sequence. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/mix.h"

static void release_source(struct ch_dataset *ds)
{
	if (ds)
		ch_dataset_release(ds);
	free(ds);
}

static void mix_free(struct ch_mix *mix)
{
	if (!mix)
		return;
	for (size_t i = 0; i < mix->n; i++) {
		if (mix->views)
			ch_split_view_release(&mix->views[i]);
		release_source(mix->src[i].ds);
		if (mix->numbers)
			free(mix->numbers[i]);
	}
	for (size_t i = 0; i < mix->ncommon; i++)
		free(mix->common[i]);
	free(mix->common);
	free(mix->numbers);
	free(mix->views);
	free(mix->m);
	free(mix->count);
	free(mix->offset);
	free(mix->first_shard);
	free(mix->src);
	free(mix);
}

/* ------------------------------------------------------------------ */
/* The dataset's files, from the sources'                               */

/* The source and its own shard of the mix's shard k. */
static size_t shard_source(const struct ch_mix *mix, size_t k, size_t *local)
{
	size_t i = 0;
	while (i + 1 < mix->n && mix->first_shard[i + 1] <= k)
		i++;
	*local = k - mix->first_shard[i];
	return i;
}

/* The mix's shard named rel (the mix's manifest's path), or -1. */
static long shard_named(const struct ch_mix *mix, const struct ch_dataset *ds,
			const char *rel)
{
	const struct ch_manifest *m = &ds->manifest;
	for (size_t k = 0; k < m->nshards; k++)
		if (m->shards[k].path == rel || !strcmp(m->shards[k].path, rel))
			return (long)k;
	(void)mix;
	return -1;
}

struct mix_arg {
	struct ch_mix *mix;
	const struct ch_dataset *ds; /* the mix's own */
};

static int mix_local(void *arg, const char *rel, uint64_t bytes,
		     struct ch_hash128 hash, char **path, struct ch_error *err)
{
	struct mix_arg *a = arg;
	long k = shard_named(a->mix, a->ds, rel);
	size_t local;
	if (k < 0)
		return ch_error_set(err, "'%s' is not a shard of the mix", rel);
	size_t i = shard_source(a->mix, (size_t)k, &local);
	const struct ch_dataset *src = a->mix->src[i].ds;
	return ch_dataset_file(src, src->manifest.shards[local].path, bytes,
			       hash, path, err);
}

static void mix_done(void *arg, const char *rel, struct ch_hash128 hash)
{
	struct mix_arg *a = arg;
	long k = shard_named(a->mix, a->ds, rel);
	size_t local;
	if (k < 0)
		return;
	size_t i = shard_source(a->mix, (size_t)k, &local);
	const struct ch_dataset *src = a->mix->src[i].ds;
	ch_dataset_file_done(src, src->manifest.shards[local].path, hash);
}

/* Each source hears of its own shards, in the order given. */
static void mix_plan(void *arg, const size_t *order, size_t n, size_t ahead)
{
	struct mix_arg *a = arg;
	size_t *mine = order ? malloc((n ? n : 1) * sizeof(*mine)) : NULL;
	for (size_t i = 0; i < a->mix->n; i++) {
		const struct ch_dataset *src = a->mix->src[i].ds;
		size_t m = 0, local;
		if (!mine) { /* random reads (or no memory: only a hint) */
			ch_dataset_plan(src, NULL, src->manifest.nshards, 0);
			continue;
		}
		for (size_t k = 0; k < n; k++)
			if (shard_source(a->mix, order[k], &local) == i)
				mine[m++] = local;
		ch_dataset_plan(src, mine, m, ahead);
	}
	free(mine);
}

static int mix_ranged(void *arg, size_t s, struct ch_byte_source *bs,
		      struct ch_error *err)
{
	struct mix_arg *a = arg;
	size_t local, i = shard_source(a->mix, s, &local);
	const struct ch_dataset *src = a->mix->src[i].ds;
	if (!src->source || !src->source->ranged)
		return 0;
	return src->source->ranged(src->source_arg, local, bs, err);
}

static void mix_stats(void *arg, struct ch_fetch_stats *out)
{
	struct mix_arg *a = arg;
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < a->mix->n; i++) {
		struct ch_fetch_stats f;
		ch_dataset_fetch_stats(a->mix->src[i].ds, &f);
		out->files += f.files;
		out->file_bytes += f.file_bytes;
		out->cache_hits += f.cache_hits;
		out->ranges += f.ranges;
		out->range_bytes += f.range_bytes;
		out->wait_s += f.wait_s;
	}
}

static void mix_release(void *arg)
{
	struct mix_arg *a = arg;
	mix_free(a->mix);
	free(a);
}

static const struct ch_dataset_source mix_ops = {
	.local = mix_local, .plan = mix_plan, .release = mix_release,
	.ranged = mix_ranged, .stats = mix_stats, .done = mix_done,
};

const struct ch_mix *ch_mix_of(const struct ch_dataset *ds)
{
	if (ds->source != &mix_ops)
		return NULL;
	return ((const struct mix_arg *)ds->source_arg)->mix;
}

/* ------------------------------------------------------------------ */
/* Schemas                                                              */

/* Source i's field names: its manifest's, or a lone shard's own. */
static size_t field_count(const struct ch_dataset *ds)
{
	if (ds->lone_shard && ds->shards[0])
		return ch_shard_name_count(ds->shards[0]);
	return ds->manifest.nfields;
}

static const char *field_name(const struct ch_dataset *ds, size_t f)
{
	if (ds->lone_shard && ds->shards[0])
		return ch_shard_name(ds->shards[0], (uint32_t)f);
	return ds->manifest.fields[f].name;
}

static int has_field(const struct ch_dataset *ds, const char *name)
{
	for (size_t f = 0; f < field_count(ds); f++)
		if (!strcmp(field_name(ds, f), name))
			return 1;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The fields of every source (the mix's manifest lists them all, which
 * the shards are checked against), and those all sources have. */
static int merge_fields(struct ch_mix *mix, struct ch_manifest *m,
			struct ch_error *err)
{
	size_t cap = 0;
	for (size_t i = 0; i < mix->n; i++)
		cap += field_count(mix->src[i].ds);
	m->fields = calloc(cap ? cap : 1, sizeof(*m->fields));
	mix->common = calloc(cap ? cap : 1, sizeof(*mix->common));
	if (!m->fields || !mix->common)
		return ch_error_nomem(err);
	for (size_t i = 0; i < mix->n; i++)
		for (size_t f = 0; f < field_count(mix->src[i].ds); f++) {
			const char *name = field_name(mix->src[i].ds, f);
			size_t k = 0;
			while (k < m->nfields && strcmp(m->fields[k].name, name))
				k++;
			if (k < m->nfields)
				continue;
			if (!(m->fields[m->nfields].name = strdup(name)))
				return ch_error_nomem(err);
			m->nfields++;
			int all = 1;
			for (size_t s = 0; s < mix->n; s++)
				all &= has_field(mix->src[s].ds, name);
			if (all && !(mix->common[mix->ncommon++] = strdup(name)))
				return ch_error_nomem(err);
		}
	qsort(m->fields, m->nfields, sizeof(*m->fields), cmp_str);
	qsort(mix->common, mix->ncommon, sizeof(*mix->common), cmp_str);
	return 0;
}

/* A source of the mix that lacks field name, or NULL. */
static const char *lacking(const struct ch_mix *mix, const char *name)
{
	for (size_t i = 0; i < mix->n; i++)
		if (!has_field(mix->src[i].ds, name))
			return mix->src[i].name;
	return NULL;
}

static const char *having(const struct ch_mix *mix, const char *name)
{
	for (size_t i = 0; i < mix->n; i++)
		if (has_field(mix->src[i].ds, name))
			return mix->src[i].name;
	return NULL;
}

static int check_source_field(const struct ch_dataset *ds,
			      const struct ch_mix *mix,
			      const struct ch_stream_opts *o,
			      struct ch_error *err)
{
	if (!o->source_field)
		return 0;
	if (!mix) {
		ch_error_usage(err, "a sample's source is named in a mix "
			       "only: give several datasets and their "
			       "proportions");
		ch_error_setting(err, "source-field");
		return ch_error_remedy(err, "mix");
	}
	const char *has = having(mix, "source");
	if (has)
		return ch_error_usage(err, "'%s' has a field 'source' of its "
				      "own, which the source field would hide",
				      has);
	(void)ds;
	return 0;
}

/* Without --fields: a mix's sources must agree on their fields. */
static int check_common(const struct ch_dataset *ds, const struct ch_mix *mix,
			struct ch_error *err)
{
	const struct ch_manifest *m = &ds->manifest;
	for (size_t f = 0; mix && f < m->nfields; f++) {
		const char *name = m->fields[f].name, *no = lacking(mix, name);
		if (no) {
			ch_error_usage(err, "field '%s' is in '%s' but not in "
				       "'%s': pick fields every source has",
				       name, having(mix, name), no);
			return ch_error_remedy(err, "fields");
		}
	}
	return 0;
}

/* Splits "a,b" into out's names (the text copied after the array),
 * each checked against the schema(s). */
static size_t split_fields(const struct ch_dataset *ds,
			   const struct ch_mix *mix, const char *text,
			   struct ch_manifest_field *out, char *names,
			   struct ch_error *err)
{
	size_t n = 0;
	strcpy(names, text);
	for (char *save = NULL, *f = strtok_r(names, ",", &save); f;
	     f = strtok_r(NULL, ",", &save)) {
		for (size_t k = 0; k < n; k++)
			if (!strcmp(out[k].name, f))
				return ch_error_usage(err, "field '%s' "
						      "chosen twice", f),
				       ch_error_setting(err, "fields"), 0;
		const char *no = mix ? lacking(mix, f)
				     : has_field(ds, f) ? NULL : "the dataset";
		if (no)
			return ch_error_usage(err, "fields chosen: '%s' has "
					      "no field '%s'", no, f),
			       ch_error_setting(err, "fields"), 0;
		out[n++].name = f;
	}
	if (!n) {
		ch_error_usage(err, "fields chosen '%s': none named", text);
		ch_error_setting(err, "fields");
	}
	return n;
}

static int cmp_field(const void *a, const void *b)
{
	return strcmp(((const struct ch_manifest_field *)a)->name,
		      ((const struct ch_manifest_field *)b)->name);
}

int ch_stream_fields(const struct ch_dataset *ds,
		     const struct ch_stream_opts *o,
		     struct ch_manifest_field **out, size_t *n, int *filter,
		     struct ch_error *err)
{
	const struct ch_mix *mix = ch_mix_of(ds);
	const struct ch_manifest *m = &ds->manifest;
	size_t cap = (o->fields ? strlen(o->fields) / 2 + 1 : m->nfields) + 1;
	size_t text = o->fields ? strlen(o->fields) + 1 : 0;
	struct ch_manifest_field *f;
	*out = NULL;
	*n = 0;
	*filter = o->fields != NULL;
	if (check_source_field(ds, mix, o, err) < 0 ||
	    (!o->fields && check_common(ds, mix, err) < 0))
		return -1;
	if (!(f = calloc(1, cap * sizeof(*f) + text + sizeof("source"))))
		return ch_error_nomem(err);
	char *names = (char *)(f + cap);
	if (o->fields && !(*n = split_fields(ds, mix, o->fields, f, names,
					     err))) {
		free(f);
		return -1;
	}
	for (size_t k = 0; !o->fields && k < m->nfields; k++)
		f[(*n)++].name = m->fields[k].name;
	if (o->source_field)
		f[(*n)++].name = strcpy(names + text, "source");
	qsort(f, *n, sizeof(*f), cmp_field);
	*out = f;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The mix's manifest                                                   */

static int add_shards(struct ch_mix *mix, struct ch_manifest *m,
		      struct ch_error *err)
{
	size_t ns = 0;
	for (size_t i = 0; i < mix->n; i++)
		ns += mix->src[i].ds->manifest.nshards;
	if (!(m->shards = calloc(ns ? ns : 1, sizeof(*m->shards))))
		return ch_error_nomem(err);
	for (size_t i = 0; i < mix->n; i++) {
		const struct ch_manifest *sm = &mix->src[i].ds->manifest;
		mix->offset[i] = m->samples;
		mix->first_shard[i] = m->nshards;
		for (size_t k = 0; k < sm->nshards; k++) {
			struct ch_manifest_shard *s = &m->shards[m->nshards];
			*s = sm->shards[k];
			s->first_sample += mix->offset[i];
			if (asprintf(&s->path, "%s/%s", mix->src[i].name,
				     sm->shards[k].path) < 0) {
				s->path = NULL;
				return ch_error_nomem(err);
			}
			m->nshards++;
		}
		m->samples += sm->samples;
		m->bytes += sm->bytes;
		m->shard_bytes += sm->shard_bytes;
	}
	return 0;
}

static const char *epoch_rule(const struct ch_mix *mix, char out[32])
{
	if (mix->epoch == CH_MIX_TOTAL)
		snprintf(out, 32, "%llu", (unsigned long long)mix->epoch_total);
	else
		snprintf(out, 32, "%s", mix->epoch == CH_MIX_SHORTEST
						? "shortest"
						: mix->src[mix->epoch_source].name);
	return out;
}

/* The id: XXH3-128 of "chute-mix 1", each source's "ID SPLIT WEIGHT"
 * and the epoch rule (a source by its number), a line each. */
static int mix_id(const struct ch_mix *mix, char out[33], struct ch_error *err)
{
	struct ch_buf b = { 0 };
	char line[160];
	int rc = ch_buf_append(&b, "chute-mix 1\n", 12, err);
	for (size_t i = 0; rc == 0 && i < mix->n; i++) {
		int k = snprintf(line, sizeof line, "%s %s %llu\n",
				 mix->src[i].ds->manifest.id,
				 mix->src[i].split ? mix->src[i].split : "-",
				 (unsigned long long)mix->src[i].weight);
		rc = ch_buf_append(&b, line, (size_t)k, err);
	}
	if (rc == 0) {
		int k = mix->epoch == CH_MIX_TOTAL
				? snprintf(line, sizeof line, "total %llu\n",
					   (unsigned long long)mix->epoch_total)
			: mix->epoch == CH_MIX_SOURCE
				? snprintf(line, sizeof line, "source %zu\n",
					   mix->epoch_source)
				: snprintf(line, sizeof line, "shortest\n");
		rc = ch_buf_append(&b, line, (size_t)k, err);
	}
	if (rc == 0)
		ch_hash128_hex(ch_hash128(b.data, b.len), out);
	ch_buf_release(&b);
	return rc;
}

/* Each source's samples: its split's view, or all of it. */
static int open_views(struct ch_mix *mix, struct ch_error *err)
{
	for (size_t i = 0; i < mix->n; i++) {
		struct ch_mix_source *s = &mix->src[i];
		mix->m[i] = &s->ds->manifest;
		if (s->split) {
			if (ch_split_view_init(&mix->views[i], s->ds, s->split,
					       err) < 0) {
				size_t n = strlen(err->msg);
				snprintf(err->msg + n, sizeof(err->msg) - n,
					 " (source '%s')", s->name);
				return -1;
			}
			mix->m[i] = &mix->views[i].view;
		}
		if (mix->m[i]->samples == 0)
			return ch_error_usage(err, "source '%s' has no samples",
					      s->name);
		if (asprintf(&mix->numbers[i], "%zu", i) < 0) {
			mix->numbers[i] = NULL;
			return ch_error_nomem(err);
		}
	}
	return 0;
}

static struct ch_mix *mix_new(const struct ch_mix_spec *spec)
{
	struct ch_mix *mix = calloc(1, sizeof(*mix));
	size_t n = spec->n;
	if (!mix) {
		for (size_t i = 0; i < n; i++)
			release_source(spec->sources[i].ds);
		return NULL;
	}
	mix->src = calloc(n, sizeof(*mix->src));
	if (mix->src) {
		memcpy(mix->src, spec->sources, n * sizeof(*mix->src));
		mix->n = n; /* the datasets are the mix's from here on */
		for (size_t i = 0; i < n; i++)
			spec->sources[i].ds = NULL;
	}
	mix->epoch = spec->epoch;
	mix->epoch_total = spec->epoch_total;
	mix->epoch_source = spec->epoch_source;
	mix->views = calloc(n, sizeof(*mix->views));
	mix->m = calloc(n, sizeof(*mix->m));
	mix->count = calloc(n, sizeof(*mix->count));
	mix->offset = calloc(n, sizeof(*mix->offset));
	mix->first_shard = calloc(n, sizeof(*mix->first_shard));
	mix->numbers = calloc(n, sizeof(*mix->numbers));
	if (!mix->src || !mix->views || !mix->m || !mix->count ||
	    !mix->offset || !mix->first_shard || !mix->numbers) {
		if (!mix->src) /* the sources are still the spec's: release */
			for (size_t i = 0; i < n; i++)
				release_source(spec->sources[i].ds);
		mix_free(mix);
		return NULL;
	}
	return mix;
}

int ch_mix_open(struct ch_dataset *ds, const struct ch_mix_spec *spec,
		struct ch_error *err)
{
	struct mix_arg *a = calloc(1, sizeof(*a));
	memset(ds, 0, sizeof(*ds));
	if (!a) {
		for (size_t i = 0; i < spec->n; i++)
			release_source(spec->sources[i].ds);
		return ch_error_nomem(err);
	}
	if (!(a->mix = mix_new(spec))) { /* it released the sources */
		free(a);
		return ch_error_nomem(err);
	}
	struct ch_mix *mix = a->mix;
	a->ds = ds;
	ds->source = &mix_ops;
	ds->source_arg = a;
	struct ch_manifest *m = &ds->manifest;
	if (open_views(mix, err) < 0 || ch_mix_plan_counts(mix, err) < 0 ||
	    add_shards(mix, m, err) < 0 || merge_fields(mix, m, err) < 0 ||
	    mix_id(mix, m->id, err) < 0)
		goto fail;
	if (!(m->name = strdup("mix")) ||
	    !(ds->root = strdup(mix->src[0].ds->root ? mix->src[0].ds->root
						     : ".")) ||
	    !(ds->shards = calloc(m->nshards ? m->nshards : 1,
				  sizeof(*ds->shards)))) {
		ch_error_nomem(err);
		goto fail;
	}
	return 0;
fail:
	ch_dataset_release(ds);
	return -1;
}

/* ------------------------------------------------------------------ */
/* What a mix holds                                                      */

size_t ch_mix_sources(const struct ch_dataset *ds)
{
	const struct ch_mix *mix = ch_mix_of(ds);
	return mix ? mix->n : 0;
}

void ch_mix_source_info(const struct ch_dataset *ds, size_t i,
			struct ch_mix_info *out)
{
	const struct ch_mix *mix = ch_mix_of(ds);
	const struct ch_mix_source *s = &mix->src[i];
	*out = (struct ch_mix_info){
		.name = s->name, .id = s->ds->manifest.id, .split = s->split,
		.weight = s->weight, .samples = mix->m[i]->samples,
		.per_epoch = mix->count[i], .ds = s->ds,
	};
}

const char *ch_mix_epoch_text(const struct ch_dataset *ds, char out[32])
{
	return epoch_rule(ch_mix_of(ds), out);
}
