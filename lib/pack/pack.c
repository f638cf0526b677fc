/* pack/pack.c - sources -> catalog -> plan -> shards + manifest, atomically. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pack/entry_sort.h"
#include "chute/store.h"
#include "chute/version.h"
#include "pack/output.h"
#include "pack/plan.h"

/* Bytes of file list (entries and their names) held in memory before a
 * sorted run is spilled to disk: about half a million files.  Spilling
 * costs little (measured: a million files, 2 runs, under 5 % more
 * time). */
#define MEMORY_DEFAULT (64u << 20)
#define MEMORY_MIN (1u << 20)

uint64_t ch_part_of(const char *key, size_t key_len, uint64_t parts)
{
	return parts ? ch_hash64(key, key_len) % parts : 0;
}

/* Whether the sample with this key is one pack writes: all of them, or
 * those of the part --part asked for. */
static int in_part(const struct ch_pack_opts *o, const char *key)
{
	return !o->parts || ch_part_of(key, strlen(key), o->parts) == o->part;
}

void ch_pack_opts_init(struct ch_pack_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->shard_bytes = 256ull << 20;
	o->shard_samples = CH_SHARD_SAMPLES_DEFAULT;
	o->block_size = 0; /* default: see BLOCK_DEFAULT */
	o->memory = MEMORY_DEFAULT;
	o->max_sample_size = CH_MAX_SAMPLE_DEFAULT;
	o->level = 3;
	o->jobs = ch_cpu_count();
	o->list_fd = 0;
	o->list_sep = '\n';
}

/* ------------------------------------------------------------------ */
/* Order                                                                */

static int cmp_entry(const void *a, const void *b)
{
	const struct ch_entry *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	if (c == 0)
		c = strcmp(x->field, y->field);
	if (c == 0)
		c = x->seq < y->seq ? -1 : x->seq > y->seq;
	return c;
}

/* --keep-order: after prepare_keep_order, seq is the discovery number of
 * the sample's first file, so samples keep their order and a sample's
 * fields stay together, in name order. */
static int cmp_keep_order(const void *a, const void *b)
{
	const struct ch_entry *x = a, *y = b;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return cmp_entry(a, b);
}

static void prepare_keep_order(struct ch_catalog *c)
{
	qsort(c->entries, c->n, sizeof(*c->entries), cmp_entry);
	for (size_t i = 0, j; i < c->n; i = j) {
		uint64_t first = c->entries[i].seq;
		for (j = i; j < c->n && !strcmp(c->entries[j].key,
						 c->entries[i].key); j++)
			if (c->entries[j].seq < first)
				first = c->entries[j].seq;
		for (size_t k = i; k < j; k++)
			c->entries[k].seq = first;
	}
}

/* ------------------------------------------------------------------ */
/* Pass 1: survey the sorted entries                                    */

/* The parent folder of a key: "train/cat/001" -> "cat". */
static int parent_name(const char *key, const char **name, size_t *len)
{
	const char *slash = strrchr(key, '/');
	if (!slash)
		return -1;
	const char *start = slash;
	while (start > key && start[-1] != '/')
		start--;
	*name = start;
	*len = (size_t)(slash - start);
	return 0;
}

/* A sorted set of class names (few: one per folder name). */
struct classes {
	char **v;
	size_t n, cap;
};

static ssize_t class_find(const struct classes *cl, const char *p, size_t len,
			  size_t *at)
{
	size_t lo = 0, hi = cl->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strncmp(cl->v[mid], p, len);
		if (c == 0 && cl->v[mid][len] != '\0')
			c = 1;
		if (c == 0)
			return (ssize_t)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return -1;
}

static int class_add(struct classes *cl, const char *key, const char *origin,
		     struct ch_error *err)
{
	const char *p;
	size_t len, at;
	if (parent_name(key, &p, &len) < 0) {
		ch_error_set(err, "labels from folders: '%s' is not inside a "
			     "class folder", origin);
		return ch_error_setting(err, "label-from");
	}
	if (class_find(cl, p, len, &at) >= 0)
		return 0;
	if (cl->n == cl->cap) {
		size_t cap = cl->cap ? cl->cap * 2 : 16;
		char **v = realloc(cl->v, cap * sizeof(*v));
		if (!v)
			return ch_error_nomem(err);
		cl->v = v;
		cl->cap = cap;
	}
	char *name = strndup(p, len);
	if (!name)
		return ch_error_nomem(err);
	memmove(cl->v + at + 1, cl->v + at, (cl->n - at) * sizeof(*cl->v));
	cl->v[at] = name;
	cl->n++;
	return 0;
}

/* Copies of the previous entry's names: stream entries last one call. */
struct previous {
	struct ch_buf key, field, origin;
};

static int remember(struct previous *pv, const struct ch_entry *e,
		    struct ch_error *err)
{
	pv->key.len = pv->field.len = pv->origin.len = 0;
	return ch_buf_append(&pv->key, e->key, strlen(e->key) + 1, err) ||
			       ch_buf_append(&pv->field, e->field,
					     strlen(e->field) + 1, err) ||
			       ch_buf_append(&pv->origin, e->origin,
					     strlen(e->origin) + 1, err)
		       ? -1
		       : 0;
}

struct survey {
	uint64_t files, bytes, samples;
	uint64_t sample_bytes; /* of the sample being surveyed */
	struct classes classes;
};

/* Duplicates (adjacent in sort order), class names, totals. */
static int survey(struct ch_sorted_entries *st, const struct ch_pack_opts *o,
		  struct survey *sv, struct ch_error *err)
{
	struct previous pv = { 0 };
	const struct ch_entry *e;
	int rc = -1, got;
	while ((got = ch_sorted_next(st, &e, err)) == 1) {
		int same_key = sv->files && !strcmp((char *)pv.key.data, e->key);
		if (same_key && !strcmp((char *)pv.field.data, e->field)) {
			ch_error_set(err, "duplicate sample field '%s.%s': from "
				     "'%s' and from '%s'", e->key, e->field,
				     (char *)pv.origin.data, e->origin);
			goto out;
		}
		/* every sample is checked and its class counted, whatever
		 * part it is in: each part fails where a whole pack would,
		 * and all parts number the classes alike */
		sv->sample_bytes = (same_key ? sv->sample_bytes : 0) + e->size;
		if (sv->sample_bytes > o->max_sample_size) {
			ch_error_set(err, "sample '%s' is over the size "
				     "limit of %llu bytes with '%s' (%llu "
				     "bytes)", e->key,
				     (unsigned long long)o->max_sample_size,
				     e->origin, (unsigned long long)e->size);
			ch_error_setting(err, "max-sample-size");
			goto out;
		}
		int counted = in_part(o, e->key);
		if (!same_key) {
			sv->samples += counted;
			if (o->label_from &&
			    class_add(&sv->classes, e->key, e->origin, err) < 0)
				goto out;
		}
		sv->files += counted;
		sv->bytes += counted ? e->size : 0;
		if (remember(&pv, e, err) < 0)
			goto out;
		if (o->cancel && *o->cancel) {
			ch_error_interrupted(err);
			goto out;
		}
	}
	rc = got;
out:
	ch_buf_release(&pv.key);
	ch_buf_release(&pv.field);
	ch_buf_release(&pv.origin);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Pass 2: cut the stream into shards and write them                    */

struct builder {
	const struct ch_pack_opts *o;
	const char *tmp, *name;
	const struct classes *classes;
	int spool_fd;
	struct ch_catalog cat;	/* entries of the shard being filled */
	size_t sample_start;	/* where the current sample begins in cat */
	uint64_t samples, bytes;	/* in cat, finished samples only */
	uint64_t first_sample;
	struct ch_progress counters;
	struct ch_manifest *m;
};

static void builder_init(struct builder *b, struct ch_catalog *main_cat)
{
	ch_catalog_init(&b->cat, main_cat->tmp_dir);
	b->cat.spool_fd = main_cat->spool_fd; /* borrowed */
	b->spool_fd = main_cat->spool_fd;
}

static void builder_release(struct builder *b)
{
	b->cat.spool_fd = -1;
	ch_catalog_release(&b->cat);
}

static int cmp_field_name(const void *a, const void *b)
{
	return strcmp(((const struct ch_manifest_field *)a)->name,
		      ((const struct ch_manifest_field *)b)->name);
}

/* Schema: per field name, how many samples have it and their bytes. */
static int add_schema(struct ch_manifest *m, const struct ch_catalog *c,
		      size_t n, struct ch_error *err)
{
	for (size_t i = 0; i < n; i++) {
		const struct ch_entry *e = &c->entries[i];
		size_t f = 0;
		while (f < m->nfields && strcmp(m->fields[f].name, e->field))
			f++;
		if (f == m->nfields) {
			void *v = realloc(m->fields, (f + 1) * sizeof(*m->fields));
			if (!v)
				return ch_error_nomem(err);
			m->fields = v;
			m->fields[f] = (struct ch_manifest_field){
				.name = strdup(e->field) };
			m->nfields++;
			if (!m->fields[f].name)
				return ch_error_nomem(err);
			qsort(m->fields, m->nfields, sizeof(*m->fields),
			      cmp_field_name);
			f = 0;
			while (strcmp(m->fields[f].name, e->field))
				f++;
		}
		m->fields[f].count++;
		m->fields[f].bytes += e->size;
		m->bytes += e->size;
	}
	return 0;
}

char *ch_pack_shard_name(const char *name, size_t i)
{
	char *s = NULL;
	if (asprintf(&s, "shards/%s-%06zu.chs", name, i) < 0)
		return NULL;
	return s;
}

/* Writes the first n entries of the builder's catalog as the next shard
 * and keeps the rest (the sample that did not fit) for the one after. */
static int flush_shard(struct builder *b, size_t n, uint64_t samples,
		       struct ch_error *err)
{
	struct ch_manifest *m = b->m;
	struct ch_catalog next;
	struct ch_shard_summary sum;
	int rc = -1;
	char *path = NULL;
	void *v = realloc(m->shards, (m->nshards + 1) * sizeof(*m->shards));
	if (!v)
		return ch_error_nomem(err);
	m->shards = v;
	struct ch_manifest_shard *ms = &m->shards[m->nshards];
	memset(ms, 0, sizeof(*ms));
	m->nshards++;
	ch_catalog_init(&next, b->cat.tmp_dir);
	next.spool_fd = b->spool_fd;
	for (size_t i = n; i < b->cat.n; i++)
		if (ch_catalog_add(&next, &b->cat.entries[i], err) < 0)
			goto out;
	b->cat.n = n;
	if (!(ms->path = ch_pack_shard_name(b->name, m->nshards - 1)) ||
	    !(path = ch_path_join(b->tmp, ms->path))) {
		ch_error_nomem(err);
		goto out;
	}
	if (ch_pack_write_shard(&b->cat, b->o, path, &b->counters, &sum,
				err) < 0 ||
	    add_schema(m, &b->cat, n, err) < 0)
		goto out;
	ms->bytes = sum.bytes;
	ms->hash = sum.hash;
	ms->seal = sum.seal;
	ms->has_seal = 1;
	ms->samples = sum.samples;
	ms->first_sample = b->first_sample;
	m->shard_bytes += sum.bytes;
	m->samples += sum.samples;
	b->first_sample += sum.samples;
	b->samples -= samples;
	rc = 0;
out:
	free(path);
	b->cat.spool_fd = -1;
	ch_catalog_release(&b->cat);
	b->cat = next; /* on error, released by builder_release */
	b->cat.spool_fd = b->spool_fd;
	return rc;
}

static int cmp_field_entry(const void *a, const void *b)
{
	return strcmp(((const struct ch_entry *)a)->field,
		      ((const struct ch_entry *)b)->field);
}

/* The current sample (entries sample_start .. n-1) is complete: label
 * it, put its fields in name order, and start a new shard first if it
 * would not fit in this one. */
static int finish_sample(struct builder *b, struct ch_error *err)
{
	struct ch_catalog *c = &b->cat;
	size_t start = b->sample_start;
	if (start == c->n)
		return 0;
	if (b->o->label_from) {
		const struct ch_entry *first = &c->entries[start];
		const char *p = NULL;
		size_t len = 0, at;
		parent_name(first->key, &p, &len);
		ssize_t idx = class_find(b->classes, p, len, &at);
		char text[24];
		int tl = snprintf(text, sizeof(text), "%zd", idx);
		struct ch_entry e = {
			.key = first->key, .field = "cls",
			.origin = "labels from folders", .size = (uint64_t)tl,
			.seq = first->seq, .inline_data = (uint8_t *)text,
		};
		if (ch_catalog_add(c, &e, err) < 0)
			return -1;
	}
	qsort(c->entries + start, c->n - start, sizeof(*c->entries),
	      cmp_field_entry);
	uint64_t size = 0;
	for (size_t i = start; i < c->n; i++) {
		if (i > start && !strcmp(c->entries[i - 1].field,
					 c->entries[i].field))
			return ch_error_set(err, "duplicate sample field "
					    "'%s.%s': from '%s' and from '%s'",
					    c->entries[i].key,
					    c->entries[i].field,
					    c->entries[i - 1].origin,
					    c->entries[i].origin);
		size += c->entries[i].size;
	}
	const struct ch_pack_opts *o = b->o;
	if (b->samples && ((o->shard_bytes && b->bytes + size > o->shard_bytes) ||
			   (o->shard_samples && b->samples == o->shard_samples))) {
		if (flush_shard(b, start, b->samples, err) < 0)
			return -1;
		b->bytes = 0;
	}
	b->samples++;
	b->bytes += size;
	b->sample_start = b->cat.n;
	return 0;
}

static int build(struct ch_sorted_entries *st, struct builder *b,
		 struct ch_error *err)
{
	const struct ch_entry *e;
	int got;
	while ((got = ch_sorted_next(st, &e, err)) == 1) {
		if (!in_part(b->o, e->key))
			continue;
		if (b->sample_start < b->cat.n &&
		    strcmp(b->cat.entries[b->sample_start].key, e->key) &&
		    finish_sample(b, err) < 0)
			return -1;
		if (ch_catalog_add(&b->cat, e, err) < 0)
			return -1;
	}
	if (got < 0 || finish_sample(b, err) < 0)
		return -1;
	if (b->samples && flush_shard(b, b->cat.n, b->samples, err) < 0)
		return -1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Sources, the temporary folder, and the final swap                    */

static int scan_sources(struct ch_catalog *c, const char *const *sources,
			size_t n, const struct ch_pack_opts *o,
			struct ch_error *err)
{
	if (!(c->sources = calloc(n ? n : 1, sizeof(*c->sources))))
		return ch_error_nomem(err);
	for (size_t i = 0; i < n; i++) {
		const char *src = sources[i];
		struct stat st;
		int rc;
		/* a URL's password never reaches the manifest */
		if (!(c->sources[c->nsources++] = ch_url_redact(src)))
			return ch_error_nomem(err);
		if (!strcmp(src, "-"))
			rc = ch_source_list_scan(c, o->list_fd, o->list_sep, err);
		else if (ch_source_is_url(src))
			rc = ch_source_url_scan(c, src, err);
		else if (stat(src, &st) < 0)
			rc = ch_error_errno(err, errno, "cannot read '%s'", src);
		else if (S_ISDIR(st.st_mode))
			rc = ch_source_dir_scan(c, src, err);
		else if ((rc = ch_source_is_archive(src, err)) > 0)
			rc = ch_source_archive_scan(c, src, err);
		else if (rc == 0)
			rc = ch_error_set(err, "'%s' is neither a folder nor an "
					  "archive chute can read", src);
		if (rc < 0)
			return -1;
		if (o->cancel && *o->cancel)
			return ch_error_interrupted(err);
	}
	if (ch_source_filter_check(c->filter, err) < 0)
		return -1;
	if (c->added == 0)
		return ch_error_set(err, "no input files");
	return 0;
}

static int is_empty_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int empty = d != NULL;
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = 0;
	if (d)
		closedir(d);
	return empty;
}

/* An existing output folder is replaced only if it is a chute dataset (or
 * empty): pack must never wipe out unrelated data by a typo. */
int ch_pack_check_replaceable(const char *dir, int *exists,
			      struct ch_error *err)
{
	struct stat st;
	*exists = 0;
	if (lstat(dir, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return ch_error_errno(err, errno, "cannot check '%s'", dir);
	}
	if (!S_ISDIR(st.st_mode))
		return ch_error_set(err, "'%s' exists and is not a folder", dir);
	*exists = 1;
	char *man = ch_path_join(dir, "manifest.json");
	int is_dataset = man && access(man, F_OK) == 0;
	free(man);
	if (is_dataset || is_empty_dir(dir))
		return 0;
	return ch_error_set(err, "'%s' exists and is not a chute dataset: "
			    "refusing to replace it", dir);
}

/* Claims the temporary folder beside out_dir, OUT_PARENT/.OUT.tmp-PID,
 * removing those of runs that died; a run still writing out_dir makes
 * this one fail rather than race it to the rename. */
int ch_pack_claim_temp(const char *out_dir, struct ch_temp *t,
		       struct ch_error *err)
{
	char *a = strdup(out_dir), *b = strdup(out_dir), *live = NULL;
	int rc = -1;
	if (!a || !b) {
		ch_error_nomem(err);
		goto out;
	}
	const char *parent = dirname(a), *name = basename(b);
	/* the output's parent folder is created like export's output is */
	if (ch_mkdir_p(parent, err) < 0 ||
	    ch_temp_create(t, parent, name, 1, err) < 0)
		goto out;
	if (ch_temp_sweep(parent, name, t->path, &live, err) < 0)
		goto out;
	if (live) {
		ch_error_set(err, "another chute pack is writing '%s' (its "
			     "temporary '%s' is locked)", out_dir, live);
		goto out;
	}
	rc = 0;
out:
	if (rc < 0)
		ch_temp_release(t, 1);
	free(live);
	free(a);
	free(b);
	return rc;
}

int ch_pack_swap_into_place(const char *tmp, const char *out, int exists,
			    struct ch_error *err)
{
	if (!exists) {
		if (rename(tmp, out) < 0)
			return ch_error_errno(err, errno, "cannot rename '%s' "
					      "to '%s'", tmp, out);
	} else {
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, out, RENAME_EXCHANGE) < 0)
			return ch_error_errno(err, errno, "cannot replace '%s'",
					      out);
		ch_rm_rf(tmp); /* the old dataset, now under tmp */
	}
	char *parent = strdup(out);
	int rc = parent ? ch_fsync_dir(dirname(parent), err) : 0;
	free(parent);
	return rc;
}

const char *ch_pack_default_name(const char *out_dir, char **owned)
{
	char *copy = strdup(out_dir);
	*owned = copy;
	if (!copy)
		return "dataset";
	size_t n = strlen(copy);
	while (n > 1 && copy[n - 1] == '/')
		copy[--n] = '\0';
	return basename(copy);
}

static int fill_manifest(struct ch_manifest *m, const struct ch_catalog *c,
			 const char *name, const struct ch_pack_opts *o,
			 struct ch_error *err)
{
	m->name = strdup(name);
	m->chute_version = strdup(CH_VERSION);
	m->sources = c->sources; /* borrowed; given back before release */
	m->nsources = c->nsources;
	m->options = (struct ch_manifest_options){
		.shard_bytes = o->shard_bytes, .shard_samples = o->shard_samples,
		.block_size = o->block_size, .level = o->level, .dict = o->dict,
		.keep_order = o->keep_order,
		.label_from = o->label_from ? strdup(o->label_from) : NULL,
		.part = o->part, .parts = o->parts,
	};
	if (!m->name || !m->chute_version ||
	    (o->label_from && !m->options.label_from))
		return ch_error_nomem(err);
	return 0;
}

static int spill(struct ch_catalog *c, void *arg, struct ch_error *err)
{
	return ch_runs_spill(arg, c, cmp_entry, err);
}

/* Scan (spilling sorted runs past the memory budget), survey the sorted
 * entries, then cut them into shards and write those. */
static int pack_entries(const char *tmp, const char *name,
			const struct ch_pack_opts *o, struct ch_manifest *m,
			struct ch_catalog *cat, struct ch_runs *runs,
			struct ch_error *err)
{
	struct ch_sorted_entries *st = NULL;
	struct survey sv = { 0 };
	struct builder b = { .o = o, .tmp = tmp, .name = name, .m = m,
			     .classes = &sv.classes };
	int rc = -1;
	if (o->keep_order)
		prepare_keep_order(cat);
	else if (runs->n && ch_runs_spill(runs, cat, cmp_entry, err) < 0)
		return -1;
	if (ch_sorted_open(&st, cat, runs,
			   o->keep_order ? cmp_keep_order : cmp_entry, err) < 0)
		return -1;
	if (survey(st, o, &sv, err) < 0 || ch_sorted_rewind(st, err) < 0)
		goto out;
	b.counters = (struct ch_progress){ .phase = "writing",
		.unit = "samples", .total = sv.samples,
		.total_bytes = sv.bytes };
	if (o->progress)
		o->progress(&b.counters, o->progress_arg);
	builder_init(&b, cat);
	int built = build(st, &b, err);
	builder_release(&b);
	if (built < 0)
		goto out;
	m->classes = sv.classes.v;
	m->nclasses = sv.classes.n;
	sv.classes.v = NULL;
	sv.classes.n = 0;
	rc = 0;
out:
	for (size_t i = 0; i < sv.classes.n; i++)
		free(sv.classes.v[i]);
	free(sv.classes.v);
	ch_sorted_free(st);
	return rc;
}

/* The output's history goes with it (.chute/versions, the old version
 * included), the new version is added and the stat cache made: all in
 * the temporary folder, swapped in with the rest. */
static int keep_history(const char *tmp, const char *out_dir,
			struct ch_manifest *m, struct ch_manifest *old,
			struct ch_error *err)
{
	if (ch_history_carry(out_dir, tmp, err) < 0 ||
	    (old->id[0] && ch_history_save(tmp, old, err) < 0))
		return -1;
	return ch_history_save(tmp, m, err);
}

int ch_pack_write_version(const char *tmp, const char *out_dir,
			  struct ch_manifest *m, struct ch_manifest *old,
			  struct ch_error *err)
{
	char *man = ch_path_join(tmp, "manifest.json");
	int rc = -1;
	if (!man)
		return ch_error_nomem(err);
	if (ch_history_set_parent(out_dir, old, m, err) == 0 &&
	    keep_history(tmp, out_dir, m, old, err) == 0 &&
	    ch_manifest_write(m, man, err) == 0 &&
	    ch_statcache_record(tmp, m, err) == 0)
		rc = ch_fsync_dir(tmp, err);
	free(man);
	return rc;
}

static int pack_into(const char *tmp, const char *const *sources,
		     size_t nsources, const struct ch_pack_opts *o,
		     struct ch_manifest *m, struct ch_manifest *old,
		     struct ch_catalog *cat, struct ch_error *err)
{
	struct ch_runs runs = { .tmp_dir = tmp };
	char *name_owned = NULL;
	const char *name = o->name ? o->name : ch_pack_default_name(o->out_dir,
							    &name_owned);
	int rc = -1;
	char *shards = ch_path_join(tmp, "shards");
	if (!shards || mkdir(shards, 0755) < 0) {
		ch_error_errno(err, errno, "cannot create '%s'",
			       shards ? shards : tmp);
		goto out;
	}
	if (!o->keep_order) {
		cat->budget = (size_t)(o->memory < MEMORY_MIN ? MEMORY_MIN
							      : o->memory);
		cat->spill = spill;
		cat->spill_arg = &runs;
	}
	if (scan_sources(cat, sources, nsources, o, err) < 0 ||
	    fill_manifest(m, cat, name, o, err) < 0 ||
	    pack_entries(tmp, name, o, m, cat, &runs, err) < 0 ||
	    ch_fsync_dir(shards, err) < 0 ||
	    ch_pack_write_version(tmp, o->out_dir, m, old, err) < 0)
		goto out;
	if (o->cancel && *o->cancel) {
		ch_error_interrupted(err);
		goto out;
	}
	rc = 0;
out:
	ch_runs_release(&runs);
	free(name_owned);
	free(shards);
	return rc;
}

/* The version the output folder holds, which becomes the parent; none
 * (id empty) when there is none, or one whose id does not match its
 * content (edited by hand: no version of ours). */
void ch_pack_read_previous(const char *out_dir, int exists,
			   struct ch_manifest *old)
{
	struct ch_error ignored;
	char *man = exists ? ch_path_join(out_dir, "manifest.json") : NULL;

	if (man && access(man, F_OK) == 0 &&
	    ch_manifest_read(old, man, &ignored) == 0 && !old->id_ok)
		ch_manifest_release(old);
	free(man);
}

/* A replacement that loses fields, labels or splits of the version it
 * replaces is refused without --force: a repack of a labelled, split
 * dataset must not quietly give an unlabelled one.  v is the new version,
 * or what is already known of it before the scan. */
int ch_pack_refuse_losses(const char *verb, int force, const char *out_dir,
			  const struct ch_manifest *old,
			  const struct ch_manifest *v, struct ch_error *err)
{
	char lost[600];
	if (force || !old->id[0] ||
	    !ch_version_losses(old, v, lost, sizeof(lost)))
		return 0;
	ch_error_set(err, "refusing to replace '%s' (version %.12s): the new "
		     "version would lose %s; force the %s to replace it "
		     "anyway", out_dir, old->id, lost, verb);
	return ch_error_remedy(err, "force");
}

/* Before the scan: pack writes no splits, and labels only with
 * --label-from. */
static int refuse_known_losses(const struct ch_pack_opts *o,
			       const struct ch_manifest *old,
			       struct ch_error *err)
{
	struct ch_manifest known = { .fields = old->fields,
				     .nfields = old->nfields,
				     .nclasses = o->label_from ? old->nclasses
							       : 0 };
	return ch_pack_refuse_losses("pack", o->force, o->out_dir, old, &known,
				     err);
}

static void add_change(void *arg, const char *phrase)
{
	char *changes = arg;
	size_t used = strlen(changes);
	snprintf(changes + used, CH_CHANGES_SIZE - used, "%s%s",
		 used ? ", " : "", phrase);
}

void ch_pack_changes(const struct ch_manifest *v,
		     const struct ch_manifest *old,
		     char changes[CH_CHANGES_SIZE])
{
	changes[0] = '\0';
	if (old->id[0])
		ch_version_changes(v, old, add_change, changes);
}

/* The output folder, if it exists, is never packed into itself. */
static void skip_output(struct ch_source_filter *f, const char *out_dir)
{
	struct stat st;
	if (stat(out_dir, &st) == 0 && S_ISDIR(st.st_mode)) {
		f->skip_set = 1;
		f->skip_dev = st.st_dev;
		f->skip_ino = st.st_ino;
	}
}

/* 1 MiB blocks compress well and cost little to decode; with a dictionary
 * (small samples, fast random access) 16 KiB blocks are the point of it. */
#define BLOCK_DEFAULT (1u << 20)
#define BLOCK_DEFAULT_DICT (16u << 10)

int ch_pack(const char *const *sources, size_t nsources,
	    const struct ch_pack_opts *opts, struct ch_pack_result *res,
	    struct ch_error *err)
{
	struct ch_catalog cat;
	struct ch_manifest m = { 0 }, old = { 0 };
	struct ch_pack_opts eff = *opts;
	const struct ch_pack_opts *o = &eff;
	int exists, rc = -1;
	if (!eff.block_size)
		eff.block_size = eff.dict ? BLOCK_DEFAULT_DICT : BLOCK_DEFAULT;
	if (eff.level < 0 || eff.level > 19) {
		ch_error_usage(err, "compression level %d is outside 0..19",
			       eff.level);
		return ch_error_setting(err, "level");
	}
	if (eff.level == 0 && eff.dict) {
		ch_error_usage(err, "a dictionary needs compression: level 0 "
			       "stores blocks raw");
		return ch_error_setting(err, "dict");
	}
	if (eff.max_sample_size > CH_MAX_SAMPLE_LIMIT) {
		ch_error_usage(err, "the sample size limit is over %llu "
			       "bytes, the most a shard's block may hold",
			       CH_MAX_SAMPLE_LIMIT);
		return ch_error_setting(err, "max-sample-size");
	}
	if (eff.parts && eff.part >= eff.parts)
		return ch_error_usage(err, "part %llu of %llu: parts are "
				      "numbered from 0 to %llu",
				      (unsigned long long)eff.part,
				      (unsigned long long)eff.parts,
				      (unsigned long long)eff.parts - 1);
	if (ch_pack_check_replaceable(o->out_dir, &exists, err) < 0)
		return -1;
	struct ch_temp claim = { .fd = -1 };
	if (ch_pack_claim_temp(o->out_dir, &claim, err) < 0)
		return -1;
	const char *tmp = claim.path;
	struct ch_source_filter filter = {
		.exclude = o->exclude, .nexclude = o->nexclude,
		.include = o->include, .ninclude = o->ninclude,
	};
	skip_output(&filter, o->out_dir);
	ch_catalog_init(&cat, tmp);
	cat.cancel = o->cancel;
	cat.filter = &filter;
	ch_pack_read_previous(o->out_dir, exists, &old);
	if (refuse_known_losses(o, &old, err) < 0 ||
	    pack_into(tmp, sources, nsources, o, &m, &old, &cat, err) < 0 ||
	    ch_pack_refuse_losses("pack", o->force, o->out_dir, &old, &m,
				  err) < 0 ||
	    ch_pack_check_replaceable(o->out_dir, &exists, err) < 0 ||
	    ch_pack_swap_into_place(tmp, o->out_dir, exists, err) < 0)
		goto out;
	if (old.id[0])
		memcpy(res->old_id, old.id, sizeof(res->old_id));
	ch_pack_changes(&m, &old, res->changes);
	res->samples = m.samples;
	res->bytes = m.bytes;
	res->shard_bytes = m.shard_bytes;
	res->shards = m.nshards;
	memcpy(res->id, m.id, sizeof(res->id));
	snprintf(res->parent, sizeof(res->parent), "%s",
		 m.parent ? m.parent : "");
	rc = 0;
out:
	m.sources = NULL; /* owned by the catalog */
	m.nsources = 0;
	ch_manifest_release(&m);
	ch_manifest_release(&old);
	ch_catalog_release(&cat);
	ch_source_filter_release(&filter);
	ch_temp_release(&claim, rc < 0);
	return rc;
}
