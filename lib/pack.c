/* pack.c - sources -> catalog -> plan -> shards + manifest, atomically. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zdict.h>

#include "pack_plan.h"

/* zstd's default dictionary size, shrunk for small shards: the dictionary
 * is stored in the shard and must pay for itself. */
#define DICT_MAX (112 * 1024)
#define DICT_MIN (4 * 1024)
#define DICT_TRAIN_BUDGET (100 * DICT_MAX)
#define CLS_FIELD "cls"

void ch_pack_opts_init(struct ch_pack_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->shard_bytes = 256ull << 20;
	o->block_size = 0; /* default: see effective_block_size */
	o->level = 3;
	o->jobs = ch_cpu_count();
	o->list_fd = 0;
	o->list_sep = '\n';
}

/* ------------------------------------------------------------------ */
/* Sorting and grouping                                                 */

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

static int check_duplicates(const struct ch_catalog *c, struct ch_error *err)
{
	for (size_t i = 1; i < c->n; i++) {
		const struct ch_entry *a = &c->entries[i - 1];
		const struct ch_entry *b = &c->entries[i];
		if (!strcmp(a->key, b->key) && !strcmp(a->field, b->field))
			return ch_error_set(err, "duplicate sample field "
					    "'%s.%s': from '%s' and from '%s'",
					    a->key, a->field, a->origin,
					    b->origin);
	}
	return 0;
}

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

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* --label-from dir: one class per parent folder name, sorted; each sample
 * gets a "cls" field holding its class index as decimal text. */
static int add_labels(struct ch_catalog *c, char ***classes, size_t *nclasses,
		      struct ch_error *err)
{
	char **names = NULL;
	size_t n = 0, nkeys = 0;
	int rc = -1;
	for (size_t i = 0; i < c->n; i++)
		nkeys += i == 0 || strcmp(c->entries[i - 1].key,
					  c->entries[i].key);
	if (!(names = calloc(nkeys ? nkeys : 1, sizeof(*names))))
		return ch_error_set(err, "out of memory");
	for (size_t i = 0; i < c->n; i++) {
		const char *p;
		size_t len;
		if (i && !strcmp(c->entries[i - 1].key, c->entries[i].key))
			continue;
		if (parent_name(c->entries[i].key, &p, &len) < 0) {
			ch_error_set(err, "--label-from dir: '%s' is not inside "
				     "a class folder", c->entries[i].origin);
			goto out;
		}
		if (!(names[n++] = strndup(p, len))) {
			ch_error_set(err, "out of memory");
			goto out;
		}
	}
	qsort(names, n, sizeof(*names), cmp_str);
	size_t u = 0;
	for (size_t i = 0; i < n; i++) {
		if (u && !strcmp(names[u - 1], names[i])) {
			free(names[i]);
			continue;
		}
		names[u++] = names[i];
	}
	n = u;
	size_t before = c->n;
	for (size_t i = 0; i < before; i++) {
		if (i && !strcmp(c->entries[i - 1].key, c->entries[i].key))
			continue;
		const char *p = NULL;
		size_t len = 0;
		parent_name(c->entries[i].key, &p, &len);
		char *want = strndup(p, len);
		char **hit = want ? bsearch(&want, names, n, sizeof(*names),
					    cmp_str) : NULL;
		free(want);
		char text[24];
		int tl = snprintf(text, sizeof(text), "%zu",
				  hit ? (size_t)(hit - names) : 0);
		struct ch_entry e = {
			.key = c->entries[i].key, .field = CLS_FIELD,
			.origin = "--label-from dir", .size = (uint64_t)tl,
			.seq = c->entries[i].seq, .inline_data = (uint8_t *)text,
		};
		if (!hit) {
			ch_error_set(err, "out of memory");
			goto out;
		}
		if (ch_catalog_add(c, &e, err) < 0)
			goto out;
	}
	*classes = names;
	*nclasses = n;
	names = NULL;
	rc = 0;
out:
	if (names) {
		for (size_t i = 0; i < n; i++)
			free(names[i]);
		free(names);
	}
	return rc;
}

static int cmp_sample_seq(const void *a, const void *b, void *arg)
{
	const struct ch_catalog *c = arg;
	const struct plan_sample *x = a, *y = b;
	uint64_t sx = UINT64_MAX, sy = UINT64_MAX;
	for (uint32_t f = 0; f < x->nfields; f++)
		if (c->entries[x->first + f].seq < sx)
			sx = c->entries[x->first + f].seq;
	for (uint32_t f = 0; f < y->nfields; f++)
		if (c->entries[y->first + f].seq < sy)
			sy = c->entries[y->first + f].seq;
	return sx < sy ? -1 : sx > sy;
}

static int group_samples(const struct ch_catalog *c, struct pack_plan *pl,
			 int keep_order, struct ch_error *err)
{
	pl->samples = calloc(c->n ? c->n : 1, sizeof(*pl->samples));
	if (!pl->samples)
		return ch_error_set(err, "out of memory");
	for (size_t i = 0; i < c->n; i++) {
		const struct ch_entry *e = &c->entries[i];
		if (i == 0 || strcmp(c->entries[i - 1].key, e->key))
			pl->samples[pl->nsamples++] =
				(struct plan_sample){ .first = i };
		struct plan_sample *s = &pl->samples[pl->nsamples - 1];
		if (s->nfields == 65535)
			return ch_error_set(err, "sample '%s' has more than "
					    "65535 fields", e->key);
		s->nfields++;
		s->size += e->size;
	}
	if (keep_order)
		qsort_r(pl->samples, pl->nsamples, sizeof(*pl->samples),
			cmp_sample_seq, (void *)c);
	return 0;
}

/* Cuts samples into shards (by raw bytes and/or count) and shards into
 * blocks (by raw bytes): only sizes decide, so the plan is the same
 * whatever the number of jobs. */
static int plan_layout(struct pack_plan *pl, const struct ch_pack_opts *o,
		       struct ch_error *err)
{
	pl->shards = calloc(pl->nsamples, sizeof(*pl->shards));
	pl->blocks = calloc(pl->nsamples, sizeof(*pl->blocks));
	if (!pl->shards || !pl->blocks)
		return ch_error_set(err, "out of memory");
	struct plan_shard *sh = NULL;
	struct plan_block *bl = NULL;
	for (size_t i = 0; i < pl->nsamples; i++) {
		uint64_t size = pl->samples[i].size;
		if (!sh || (o->shard_bytes && sh->bytes + size > o->shard_bytes) ||
		    (o->shard_samples && sh->nsamples == o->shard_samples)) {
			sh = &pl->shards[pl->nshards++];
			*sh = (struct plan_shard){ .first_sample = i,
						   .first_block = pl->nblocks };
			bl = NULL;
		}
		if (!bl || bl->size + size > o->block_size) {
			bl = &pl->blocks[pl->nblocks++];
			*bl = (struct plan_block){ .first_sample = i };
			sh->nblocks++;
		}
		bl->nsamples++;
		bl->size += size;
		sh->nsamples++;
		sh->bytes += size;
	}
	return 0;
}

static void plan_release(struct pack_plan *pl)
{
	free(pl->samples);
	free(pl->shards);
	free(pl->blocks);
}

/* ------------------------------------------------------------------ */
/* Dictionary                                                           */

/* Trains a zstd dictionary on samples spread evenly over the shard (at
 * most DICT_TRAIN_BUDGET bytes).  When zstd finds nothing worth a
 * dictionary, the shard simply has none: still deterministic. */
static int train_dict(const struct ch_catalog *cat, const struct pack_plan *pl,
		      const struct plan_shard *sh, struct ch_buf *dict,
		      struct ch_error *err)
{
	struct ch_buf data = { 0 };
	size_t *sizes = calloc(sh->nsamples, sizeof(*sizes));
	size_t n = 0, step = 1;
	int rc = -1;
	dict->len = 0;
	if (!sizes)
		return ch_error_set(err, "out of memory");
	size_t dict_size = sh->bytes / 64 > DICT_MAX ? DICT_MAX
			   : sh->bytes / 64 < DICT_MIN ? DICT_MIN
						       : (size_t)(sh->bytes / 64);
	if (sh->bytes > DICT_TRAIN_BUDGET)
		step = (size_t)(sh->bytes / DICT_TRAIN_BUDGET) + 1;
	for (size_t i = 0; i < sh->nsamples; i += step) {
		const struct plan_sample *s = &pl->samples[sh->first_sample + i];
		if (s->size > dict_size || data.len + s->size > DICT_TRAIN_BUDGET)
			continue;
		if (ch_buf_reserve(&data, data.len + s->size + 1, err) < 0 ||
		    ch_read_sample(cat, s, data.data + data.len, err) < 0)
			goto out;
		data.len += s->size;
		sizes[n++] = (size_t)s->size;
	}
	if (n >= 8 && ch_buf_reserve(dict, dict_size, err) < 0)
		goto out;
	if (n >= 8) {
		size_t k = ZDICT_trainFromBuffer(dict->data, dict_size, data.data,
						 sizes, (unsigned)n);
		dict->len = ZDICT_isError(k) ? 0 : k;
	}
	rc = 0;
out:
	free(sizes);
	ch_buf_release(&data);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Writing                                                              */

static char *shard_name(const char *name, size_t i)
{
	char *s = NULL;
	if (asprintf(&s, "shards/%s-%06zu.chs", name, i) < 0)
		return NULL;
	return s;
}

static int write_shards(const struct ch_catalog *cat, const struct pack_plan *pl,
			const struct ch_pack_opts *o, const char *tmp,
			const char *name, struct ch_manifest *m,
			struct ch_error *err)
{
	struct ch_progress counters = { 0, 0, pl->nsamples, 0 };
	struct ch_buf dict = { 0 };
	int rc = -1;
	for (size_t i = 0; i < pl->nsamples; i++)
		counters.total_bytes += pl->samples[i].size;
	m->shards = calloc(pl->nshards, sizeof(*m->shards));
	if (!m->shards)
		return ch_error_set(err, "out of memory");
	for (size_t s = 0; s < pl->nshards; s++) {
		const struct plan_shard *sh = &pl->shards[s];
		struct ch_manifest_shard *ms = &m->shards[m->nshards++];
		struct ch_shard_writer *w = NULL;
		struct ch_shard_summary sum;
		char *path = NULL;
		if (!(ms->path = shard_name(name, s)) ||
		    !(path = ch_path_join(tmp, ms->path))) {
			ch_error_set(err, "out of memory");
			goto out;
		}
		if ((o->dict && train_dict(cat, pl, sh, &dict, err) < 0) ||
		    ch_shard_writer_open(&w, path, dict.data, dict.len, err) < 0) {
			free(path);
			goto out;
		}
		struct encode_job job = {
			.cat = cat, .plan = pl, .shard = sh, .writer = w,
			.level = o->level, .jobs = o->jobs,
			.dict = dict.len ? dict.data : NULL,
			.dict_size = dict.len, .cancel = o->cancel,
			.progress = o->progress, .progress_arg = o->progress_arg,
			.counters = &counters,
		};
		int ok = ch_encode_shard(&job, err) == 0 &&
			 ch_shard_writer_finish(w, &sum, err) == 0;
		ch_shard_writer_free(w);
		free(path);
		if (!ok)
			goto out;
		ms->bytes = sum.bytes;
		ms->hash = sum.hash;
		ms->samples = sum.samples;
		ms->first_sample = sh->first_sample;
		m->shard_bytes += sum.bytes;
	}
	rc = 0;
out:
	ch_buf_release(&dict);
	return rc;
}

static int cmp_field_name(const void *a, const void *b)
{
	return strcmp(((const struct ch_manifest_field *)a)->name,
		      ((const struct ch_manifest_field *)b)->name);
}

/* Schema: per field name, how many samples have it and their bytes. */
static int build_schema(const struct ch_catalog *c, struct ch_manifest *m,
			struct ch_error *err)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct ch_entry *e = &c->entries[i];
		size_t f = 0;
		while (f < m->nfields && strcmp(m->fields[f].name, e->field))
			f++;
		if (f == m->nfields) {
			void *v = realloc(m->fields, (f + 1) * sizeof(*m->fields));
			if (!v)
				return ch_error_set(err, "out of memory");
			m->fields = v;
			m->fields[f] = (struct ch_manifest_field){
				.name = strdup(e->field) };
			m->nfields++;
			if (!m->fields[f].name)
				return ch_error_set(err, "out of memory");
		}
		m->fields[f].count++;
		m->fields[f].bytes += e->size;
		m->bytes += e->size;
	}
	qsort(m->fields, m->nfields, sizeof(*m->fields), cmp_field_name);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Sources, the temporary folder, and the final swap                    */

static int scan_sources(struct ch_catalog *c, const char *const *sources,
			size_t n, const struct ch_pack_opts *o,
			struct ch_error *err)
{
	if (!(c->sources = calloc(n ? n : 1, sizeof(*c->sources))))
		return ch_error_set(err, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const char *src = sources[i];
		struct stat st;
		int rc;
		if (!(c->sources[c->nsources++] = strdup(src)))
			return ch_error_set(err, "out of memory");
		if (!strcmp(src, "-"))
			rc = ch_source_list_scan(c, o->list_fd, o->list_sep, err);
		else if (stat(src, &st) < 0)
			rc = ch_error_errno(err, errno, "cannot read '%s'", src);
		else if (S_ISDIR(st.st_mode))
			rc = ch_source_dir_scan(c, src, err);
		else if (ch_source_is_archive(src))
			rc = ch_source_archive_scan(c, src, err);
		else
			rc = ch_error_set(err, "'%s' is neither a folder nor an "
					  "archive chute can read", src);
		if (rc < 0)
			return -1;
		if (o->cancel && *o->cancel)
			return ch_error_set(err, "interrupted");
	}
	if (c->n == 0)
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
static int check_replaceable(const char *dir, int *exists,
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

static char *temp_dir_for(const char *out_dir)
{
	char *a = strdup(out_dir), *b = strdup(out_dir), *t = NULL;
	if (a && b &&
	    asprintf(&t, "%s/.%s.tmp-%ld", dirname(a), basename(b),
		     (long)getpid()) < 0)
		t = NULL;
	free(a);
	free(b);
	return t;
}

static int swap_into_place(const char *tmp, const char *out, int exists,
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

static const char *default_name(const char *out_dir, char **owned)
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
			 const struct pack_plan *pl, const char *name,
			 const struct ch_pack_opts *o, struct ch_error *err)
{
	m->name = strdup(name);
	m->chute_version = strdup(CH_VERSION);
	m->samples = pl->nsamples;
	m->sources = c->sources; /* borrowed; given back before release */
	m->nsources = c->nsources;
	m->options = (struct ch_manifest_options){
		.shard_bytes = o->shard_bytes, .shard_samples = o->shard_samples,
		.block_size = o->block_size, .level = o->level, .dict = o->dict,
		.keep_order = o->keep_order,
		.label_from = o->label_from ? strdup(o->label_from) : NULL,
	};
	if (!m->name || !m->chute_version)
		return ch_error_set(err, "out of memory");
	return build_schema(c, m, err);
}

static int pack_into(const char *tmp, const char *const *sources,
		     size_t nsources, const struct ch_pack_opts *o,
		     struct ch_manifest *m, struct ch_catalog *cat,
		     struct ch_error *err)
{
	struct pack_plan pl = { 0 };
	char *name_owned = NULL;
	const char *name = o->name ? o->name : default_name(o->out_dir,
							    &name_owned);
	int rc = -1;
	char *shards = ch_path_join(tmp, "shards");
	char *man = ch_path_join(tmp, "manifest.json");
	if (!shards || !man || mkdir(shards, 0755) < 0) {
		ch_error_errno(err, errno, "cannot create '%s'",
			       shards ? shards : tmp);
		goto out;
	}
	if (scan_sources(cat, sources, nsources, o, err) < 0)
		goto out;
	qsort(cat->entries, cat->n, sizeof(*cat->entries), cmp_entry);
	if (check_duplicates(cat, err) < 0)
		goto out;
	if (o->label_from) {
		if (add_labels(cat, &m->classes, &m->nclasses, err) < 0)
			goto out;
		qsort(cat->entries, cat->n, sizeof(*cat->entries), cmp_entry);
		if (check_duplicates(cat, err) < 0)
			goto out;
	}
	if (group_samples(cat, &pl, o->keep_order, err) < 0 ||
	    plan_layout(&pl, o, err) < 0 ||
	    fill_manifest(m, cat, &pl, name, o, err) < 0 ||
	    write_shards(cat, &pl, o, tmp, name, m, err) < 0 ||
	    ch_fsync_dir(shards, err) < 0 ||
	    ch_manifest_write(m, man, err) < 0 || ch_fsync_dir(tmp, err) < 0)
		goto out;
	if (o->cancel && *o->cancel) {
		ch_error_set(err, "interrupted");
		goto out;
	}
	rc = 0;
out:
	plan_release(&pl);
	free(name_owned);
	free(shards);
	free(man);
	return rc;
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
	struct ch_manifest m = { 0 };
	struct ch_pack_opts eff = *opts;
	const struct ch_pack_opts *o = &eff;
	int exists, rc = -1;
	if (!eff.block_size)
		eff.block_size = eff.dict ? BLOCK_DEFAULT_DICT : BLOCK_DEFAULT;
	if (eff.level < 1 || eff.level > 19)
		return ch_error_set(err, "compression level %d is outside 1..19",
				    eff.level);
	if (check_replaceable(o->out_dir, &exists, err) < 0)
		return -1;
	char *tmp = temp_dir_for(o->out_dir);
	if (!tmp)
		return ch_error_set(err, "out of memory");
	/* the output's parent folder is created like export's output is */
	char *parent = strdup(tmp);
	int made = parent ? ch_mkdir_p(dirname(parent), err) == 0
			  : ch_error_set(err, "out of memory") == 0;
	free(parent);
	if (!made) {
		free(tmp);
		return -1;
	}
	if (mkdir(tmp, 0755) < 0) {
		ch_error_errno(err, errno, "cannot create '%s'", tmp);
		free(tmp);
		return -1;
	}
	ch_catalog_init(&cat, tmp);
	cat.cancel = o->cancel;
	if (pack_into(tmp, sources, nsources, o, &m, &cat, err) < 0 ||
	    check_replaceable(o->out_dir, &exists, err) < 0 ||
	    swap_into_place(tmp, o->out_dir, exists, err) < 0)
		goto out;
	res->samples = m.samples;
	res->bytes = m.bytes;
	res->shard_bytes = m.shard_bytes;
	res->shards = m.nshards;
	memcpy(res->id, m.id, sizeof(res->id));
	rc = 0;
out:
	if (rc < 0)
		ch_rm_rf(tmp);
	m.sources = NULL; /* owned by the catalog */
	m.nsources = 0;
	ch_manifest_release(&m);
	ch_catalog_release(&cat);
	free(tmp);
	return rc;
}
