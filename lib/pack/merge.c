/*
 * pack/merge.c - parts packed apart (chute pack --part I/N) into one
 * dataset, in two steps.  The plan (ch_merge_plan) checks the parts
 * against each other and makes the merged manifest; the place step puts
 * the shards where the manifest says: for a folder (ch_merge), linked or
 * copied into a new folder, in part order, swapped into place as pack
 * does; on a remote (remote/merge.c) nothing moves, since the objects
 * are named by their content.
 *
 * The checks read manifests and shard indexes only, never a block: all N
 * parts, each once, of one N; the same options, sources, classes and
 * chute version; and every key in the part ch_part_of names for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chute/pack.h"
#include "common/counter.h"
#include "pack/output.h"

struct part {
	const char *path; /* as given */
	struct ch_dataset *ds;
};

static const struct ch_manifest *man(const struct part *p)
{
	return &p->ds->manifest;
}

static int cancelled(volatile sig_atomic_t *cancel, struct ch_error *err)
{
	if (cancel && *cancel)
		return ch_error_interrupted(err);
	return 0;
}

/* What makes a dataset a part that merge takes, wherever it is. */
static int check_part(const struct part *p, struct ch_error *err)
{
	if (!man(p)->id_ok)
		return ch_error_data(err, "'%s': its manifest's id does not "
				     "match its content (edited?)", p->path);
	if (!man(p)->options.parts) {
		ch_error_set(err, "'%s' is not a part: it was packed whole",
			     p->path);
		return ch_error_remedy(err, "part");
	}
	if (man(p)->nsplits)
		return ch_error_set(err, "'%s' has splits: merge the parts as "
				    "pack wrote them, and split the merged "
				    "dataset", p->path);
	return 0;
}

static int cmp_part(const void *a, const void *b)
{
	const struct part *x = a, *y = b;
	uint64_t i = man(x)->options.part, j = man(y)->options.part;
	if (i != j)
		return i < j ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* ------------------------------------------------------------------ */
/* The parts against each other                                         */

/* N the same everywhere, then 0..N-1 each exactly once. */
static int check_numbering(const struct part *p, size_t n,
			   struct ch_error *err)
{
	uint64_t parts = man(&p[0])->options.parts;
	for (size_t i = 1; i < n; i++)
		if (man(&p[i])->options.parts != parts)
			return ch_error_set(err, "'%s' is part %llu of %llu but "
				"'%s' is part %llu of %llu: parts of different "
				"counts", p[0].path,
				(unsigned long long)man(&p[0])->options.part,
				(unsigned long long)parts, p[i].path,
				(unsigned long long)man(&p[i])->options.part,
				(unsigned long long)man(&p[i])->options.parts);
	for (size_t i = 1; i < n; i++)
		if (man(&p[i])->options.part == man(&p[i - 1])->options.part)
			return ch_error_set(err, "'%s' and '%s' are both part "
				"%llu of %llu", p[i - 1].path, p[i].path,
				(unsigned long long)man(&p[i])->options.part,
				(unsigned long long)parts);
	if (n == parts)
		return 0;
	/* sorted, distinct, below parts, fewer than parts: one is missing */
	uint64_t missing = 0;
	while (missing < n && man(&p[missing])->options.part == missing)
		missing++;
	char given[600] = "";
	size_t used = 0;
	for (size_t i = 0; i < n && used < sizeof(given); i++)
		used += (size_t)snprintf(given + used, sizeof(given) - used,
					 "%s'%s'", i ? ", " : "", p[i].path);
	return ch_error_set(err, "part %llu of %llu is missing: %zu of %llu "
			    "parts given (%s)", (unsigned long long)missing,
			    (unsigned long long)parts, n,
			    (unsigned long long)parts, given);
}

static int same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static int same_strings(char *const *a, size_t na, char *const *b, size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]))
			return 0;
	return 1;
}

/* A pack option: its words in a message, its setting's key. */
struct option_name {
	const char *what, *key;
};

/* The first pack option that differs between a and b, or NULL. */
static const struct option_name *
option_difference(const struct ch_manifest_options *a,
		  const struct ch_manifest_options *b)
{
	static const struct option_name names[] = {
		{"shard sizes", "shard-size"},	 {"block sizes", "block-size"},
		{"compression levels", "level"}, {"dictionary choices", "dict"},
		{"sample orders", "keep-order"}, {"label sources", "label-from"},
	};
	const int differs[] = {
		a->shard_bytes != b->shard_bytes ||
			a->shard_samples != b->shard_samples,
		a->block_size != b->block_size,
		a->level != b->level,
		a->dict != b->dict,
		a->keep_order != b->keep_order,
		!same_str(a->label_from, b->label_from),
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (differs[i])
			return &names[i];
	return NULL;
}

/* What a part shares with the first: packed the same way, of the same
 * sources, by the same chute. */
static int check_alike(const struct part *first, const struct part *p,
		       struct ch_error *err)
{
	const struct ch_manifest *a = man(first), *b = man(p);
	const struct option_name *option =
		option_difference(&a->options, &b->options);
	if (option) {
		ch_error_set(err, "'%s' and '%s' were packed with different "
			     "%s", first->path, p->path, option->what);
		return ch_error_remedy(err, option->key);
	}
	if (!same_str(a->chute_version, b->chute_version) ||
	    a->format_version != b->format_version)
		return ch_error_set(err, "'%s' and '%s' were packed by "
				    "different chute versions (%s, manifest "
				    "format %d; %s, format %d)", first->path,
				    p->path, a->chute_version, a->format_version,
				    b->chute_version, b->format_version);
	if (!same_strings(a->sources, a->nsources, b->sources, b->nsources))
		return ch_error_set(err, "'%s' and '%s' were packed from "
				    "different sources", first->path, p->path);
	if (!same_strings(a->classes, a->nclasses, b->classes, b->nclasses))
		return ch_error_set(err, "'%s' and '%s' have different "
				    "classes", first->path, p->path);
	return 0;
}

/* A shard's error names its path in the manifest, which says where it
 * is for a folder only: a version on a remote is named as given.  The
 * error keeps its kind.  Returns -1. */
static int name_remote_part(const struct part *p, struct ch_error *err)
{
	if (err && p->ds->source) {
		char msg[sizeof(err->msg)];
		memcpy(msg, err->msg, sizeof(msg));
		int n = snprintf(err->msg, sizeof(err->msg), "'%s': ", p->path);
		if (n > 0 && (size_t)n < sizeof(err->msg))
			snprintf(err->msg + n, sizeof(err->msg) - (size_t)n,
				 "%s", msg);
	}
	return -1;
}

/* Every key of every shard of p is one ch_part_of puts in p: then no
 * key is in two parts.  Reads the shards' indexes, which opening checks
 * (and the seal, size and count against the manifest), no block; their
 * fields are summed into t, for the schema. */
static int check_keys(const struct part *p, volatile sig_atomic_t *cancel,
		      struct ch_counter *c, struct ch_totals *t,
		      struct ch_error *err)
{
	const struct ch_manifest *m = man(p);
	for (size_t s = 0; s < m->nshards; s++) {
		struct ch_shard *sh;
		int rc = ch_dataset_open_shard(p->ds, s, 0, &sh, err);
		if (rc < 0)
			return name_remote_part(p, err);
		rc = ch_totals_add_shard(t, sh, err);
		uint64_t n = ch_shard_sample_count(sh);
		for (uint64_t i = 0; i < n && rc == 0; i++) {
			struct ch_sample_info si;
			ch_shard_sample(sh, i, &si);
			uint64_t in = ch_part_of(si.key, si.key_len,
						 m->options.parts);
			if (in != m->options.part)
				rc = ch_error_set(err, "'%s' (part %llu of "
					"%llu) holds key '%.*s', which is in "
					"part %llu: parts overlap", p->path,
					(unsigned long long)m->options.part,
					(unsigned long long)m->options.parts,
					(int)si.key_len, si.key,
					(unsigned long long)in);
		}
		ch_shard_close(sh);
		if (rc < 0 || cancelled(cancel, err) < 0)
			return -1;
		ch_counter_add(c, 1, 0);
	}
	return 0;
}

/* The part's shards, keys and totals: a part whose schema its shards do
 * not bear out (a shard taken out of its manifest, a count edited) would
 * make a merged dataset whose totals are wrong. */
static int check_shards(const struct part *p, volatile sig_atomic_t *cancel,
			struct ch_counter *c, struct ch_error *err)
{
	struct ch_totals t = { 0 };
	int rc = check_keys(p, cancel, c, &t, err);
	if (rc == 0)
		rc = ch_totals_check(man(p), &t, p->path, err);
	ch_totals_release(&t);
	return rc;
}

static int check_parts(const struct part *p, size_t n,
		       volatile sig_atomic_t *cancel, struct ch_counter *c,
		       struct ch_error *err)
{
	uint64_t shards = 0;
	for (size_t i = 0; i < n; i++)
		if (check_part(&p[i], err) < 0)
			return -1;
	if (check_numbering(p, n, err) < 0)
		return -1;
	for (size_t i = 1; i < n; i++)
		if (check_alike(&p[0], &p[i], err) < 0)
			return -1;
	for (size_t i = 0; i < n; i++)
		shards += man(&p[i])->nshards;
	ch_counter_phase(c, "checking", "shards", shards, 0);
	for (size_t i = 0; i < n; i++) {
		int rc = check_shards(&p[i], cancel, c, err);
		if (rc < 0)
			return rc;
	}
	ch_counter_end(c);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The merged manifest                                                  */

static char **copy_strings(char *const *v, size_t n)
{
	char **out = calloc(n ? n : 1, sizeof(*out));
	for (size_t i = 0; out && i < n; i++)
		if (!(out[i] = strdup(v[i]))) {
			while (i--)
				free(out[i]);
			free(out);
			return NULL;
		}
	return out;
}

static int cmp_field(const void *a, const void *b)
{
	return strcmp(((const struct ch_manifest_field *)a)->name,
		      ((const struct ch_manifest_field *)b)->name);
}

/* The schema: each field's counts and bytes summed over the parts. */
static int add_fields(struct ch_manifest *m, const struct ch_manifest *part,
		      struct ch_error *err)
{
	for (size_t i = 0; i < part->nfields; i++) {
		const struct ch_manifest_field *f = &part->fields[i];
		struct ch_manifest_field *have = NULL;
		if (m->nfields) /* no fields yet: no array to search */
			have = bsearch(f, m->fields, m->nfields,
				       sizeof(*m->fields), cmp_field);
		if (!have) {
			void *v = realloc(m->fields,
					  (m->nfields + 1) * sizeof(*m->fields));
			if (!v)
				return ch_error_nomem(err);
			m->fields = v;
			have = &m->fields[m->nfields];
			*have = (struct ch_manifest_field){
				.name = strdup(f->name) };
			if (!have->name)
				return ch_error_nomem(err);
			m->nfields++;
		}
		have->count += f->count;
		have->bytes += f->bytes;
		qsort(m->fields, m->nfields, sizeof(*m->fields), cmp_field);
	}
	return 0;
}

/* Everything but the shards: the first part's options (without "part"),
 * sources and classes, which all parts share, and the sums. */
static int fill_manifest(struct ch_manifest *m, const struct part *p,
			 size_t n, const char *name, struct ch_error *err)
{
	const struct ch_manifest *first = man(&p[0]);
	m->name = strdup(name);
	m->chute_version = strdup(first->chute_version);
	m->sources = copy_strings(first->sources, first->nsources);
	m->nsources = first->nsources;
	m->classes = copy_strings(first->classes, first->nclasses);
	m->nclasses = first->nclasses;
	m->options = first->options;
	m->options.part = m->options.parts = 0;
	m->options.label_from = first->options.label_from
					? strdup(first->options.label_from)
					: NULL;
	if (!m->name || !m->chute_version || !m->sources || !m->classes ||
	    (first->options.label_from && !m->options.label_from))
		return ch_error_nomem(err);
	for (size_t i = 0; i < n; i++) {
		const struct ch_manifest *pm = man(&p[i]);
		m->samples += pm->samples;
		m->bytes += pm->bytes;
		if (add_fields(m, pm, err) < 0)
			return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The shards: linked, or copied across file systems                     */

static int copy_file(const char *from, const char *to, struct ch_error *err)
{
	int in = ch_open_regular(from, err), out = -1, rc = -1;
	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0) {
		ch_error_errno(err, errno, "cannot create '%s'", to);
		goto out;
	}
	for (;;) {
		ssize_t got = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			ch_error_errno(err, errno, "cannot copy '%s' to '%s'",
				       from, to);
			goto out;
		}
		if (got == 0)
			break;
	}
	if (fsync(out) < 0) {
		ch_error_errno(err, errno, "cannot write '%s'", to);
		goto out;
	}
	rc = 0;
out:
	if (out >= 0)
		close(out);
	close(in);
	return rc;
}

/* A shard's bytes are never rewritten: the file itself, by a second
 * name, or its bytes copied as they are. */
static int place_shard(const char *from, const char *to, int *linked,
		       struct ch_error *err)
{
	if (link(from, to) == 0)
		return 0;
	if (errno != EXDEV && errno != EPERM && errno != EMLINK &&
	    errno != ENOTSUP)
		return ch_error_errno(err, errno, "cannot link '%s' to '%s'",
				      from, to);
	*linked = 0;
	return copy_file(from, to, err);
}

/* The merged manifest's shards: part by part, shard by shard, each
 * entry the part's own (size, hash, seal) renamed in the dataset's
 * sequence. */
static int list_shards(struct ch_manifest *m, const struct part *p, size_t n,
		       struct ch_error *err)
{
	size_t total = 0;
	uint64_t first_sample = 0;
	for (size_t i = 0; i < n; i++)
		total += man(&p[i])->nshards;
	if (!(m->shards = calloc(total ? total : 1, sizeof(*m->shards))))
		return ch_error_nomem(err);
	for (size_t i = 0; i < n; i++) {
		const struct ch_manifest *pm = man(&p[i]);
		for (size_t s = 0; s < pm->nshards; s++) {
			struct ch_manifest_shard *ms = &m->shards[m->nshards];
			*ms = pm->shards[s];
			ms->first_sample = first_sample;
			ms->path = ch_pack_shard_name(m->name, m->nshards);
			if (!ms->path)
				return ch_error_nomem(err);
			m->nshards++;
			first_sample += ms->samples;
			m->shard_bytes += ms->bytes;
		}
	}
	return 0;
}

int ch_merge_plan(struct ch_merge_part *parts, size_t n, const char *name,
		  volatile sig_atomic_t *cancel, ch_progress_fn progress,
		  void *progress_arg, struct ch_manifest *m,
		  struct ch_error *err)
{
	struct part *p = calloc(n ? n : 1, sizeof(*p));
	struct ch_counter c;
	int rc = -1;

	ch_counter_init(&c, progress, progress_arg);
	if (!p)
		return ch_error_nomem(err);
	if (n == 0) {
		ch_error_set(err, "no parts to merge");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		p[i] = (struct part){parts[i].name, parts[i].ds};
	qsort(p, n, sizeof(*p), cmp_part);
	if ((rc = check_parts(p, n, cancel, &c, err)) < 0)
		goto out;
	rc = -1;
	if (fill_manifest(m, p, n, name, err) < 0 ||
	    list_shards(m, p, n, err) < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		parts[i] = (struct ch_merge_part){p[i].path, p[i].ds};
	rc = 0;
out:
	free(p);
	return rc;
}

/* Part by part, shard by shard, as list_shards named them. */
static int place_shards(const char *tmp, const struct ch_manifest *m,
			const struct ch_merge_part *p, size_t n,
			const struct ch_merge_opts *o, int *linked,
			struct ch_error *err)
{
	struct ch_counter c;
	size_t k = 0;

	ch_counter_init(&c, o->progress, o->progress_arg);
	ch_counter_phase(&c, "placing", "shards", m->nshards, m->shard_bytes);
	for (size_t i = 0; i < n; i++) {
		for (size_t s = 0; s < p[i].ds->manifest.nshards; s++, k++) {
			char *from = ch_dataset_shard_path(p[i].ds, s);
			char *to = ch_path_join(tmp, m->shards[k].path);
			int rc = from && to ? place_shard(from, to, linked, err)
					    : ch_error_nomem(err);
			free(from);
			free(to);
			if (rc < 0 || cancelled(o->cancel, err) < 0)
				return -1;
			ch_counter_add(&c, 1, m->shards[k].bytes);
		}
	}
	ch_counter_end(&c);
	return 0;
}

/* ------------------------------------------------------------------ */

/* Writes the merged dataset in tmp: shards, manifest, history. */
static int merge_into(const char *tmp, const struct ch_merge_part *p,
		      size_t n, const struct ch_merge_opts *o,
		      struct ch_manifest *m, struct ch_manifest *old,
		      int *linked, struct ch_error *err)
{
	char *shards = ch_path_join(tmp, "shards");
	int rc = -1;
	if (!shards || mkdir(shards, 0755) < 0) {
		ch_error_errno(err, errno, "cannot create '%s'",
			       shards ? shards : tmp);
		goto out;
	}
	if (place_shards(tmp, m, p, n, o, linked, err) < 0 ||
	    ch_fsync_dir(shards, err) < 0 ||
	    ch_pack_refuse_losses("merge", o->force, o->out_dir, old, m,
				  err) < 0 ||
	    ch_pack_write_version(tmp, o->out_dir, m, old, err) < 0 ||
	    cancelled(o->cancel, err) < 0)
		goto out;
	rc = 0;
out:
	free(shards);
	return rc;
}

/* Folders only: a part elsewhere is merged where it is (remote/merge.c). */
static int open_parts(struct ch_merge_part *p, struct ch_dataset *ds,
		      const char *const *paths, size_t n, size_t *opened,
		      struct ch_error *err)
{
	for (size_t i = 0; i < n; i++) {
		struct part one = {paths[i], &ds[i]};
		int rc = ch_dataset_open(&ds[i], paths[i], err);
		if (rc < 0)
			return rc;
		(*opened)++;
		p[i] = (struct ch_merge_part){paths[i], &ds[i]};
		if (ds[i].lone_shard || ds[i].source)
			return ch_error_set(err, "'%s' is not a dataset folder: "
					    "merge takes the folders of the "
					    "parts pack wrote", paths[i]);
		if (check_part(&one, err) < 0)
			return -1;
	}
	return 0;
}

int ch_merge(const char *const *paths, size_t n,
	     const struct ch_merge_opts *o, struct ch_merge_result *res,
	     struct ch_error *err)
{
	struct ch_manifest m = { 0 }, old = { 0 };
	struct ch_temp claim = { .fd = -1 };
	struct ch_merge_part *p = calloc(n ? n : 1, sizeof(*p));
	struct ch_dataset *ds = calloc(n ? n : 1, sizeof(*ds));
	char *name_owned = NULL;
	const char *name = o->name ? o->name : ch_pack_default_name(o->out_dir,
								    &name_owned);
	size_t opened = 0;
	int exists, linked = 1, rc = -1;
	if (!p || !ds) {
		ch_error_nomem(err);
		goto out;
	}
	if ((rc = open_parts(p, ds, paths, n, &opened, err)) < 0 ||
	    (rc = ch_merge_plan(p, n, name, o->cancel, o->progress,
				o->progress_arg, &m, err)) < 0)
		goto out;
	rc = -1;
	if (ch_pack_check_replaceable(o->out_dir, &exists, err) < 0 ||
	    ch_pack_claim_temp(o->out_dir, &claim, err) < 0)
		goto out;
	ch_pack_read_previous(o->out_dir, exists, &old);
	if (merge_into(claim.path, p, n, o, &m, &old, &linked, err) < 0 ||
	    ch_pack_check_replaceable(o->out_dir, &exists, err) < 0 ||
	    ch_pack_swap_into_place(claim.path, o->out_dir, exists, err) < 0)
		goto out;
	memcpy(res->old_id, old.id, sizeof(res->old_id));
	ch_pack_changes(&m, &old, res->changes);
	memcpy(res->id, m.id, sizeof(res->id));
	snprintf(res->parent, sizeof(res->parent), "%s",
		 m.parent ? m.parent : "");
	res->samples = m.samples;
	res->bytes = m.bytes;
	res->shard_bytes = m.shard_bytes;
	res->shards = m.nshards;
	res->parts = n;
	res->linked = linked;
	rc = 0;
out:
	ch_manifest_release(&m);
	ch_manifest_release(&old);
	ch_temp_release(&claim, rc < 0);
	for (size_t i = 0; i < opened; i++)
		ch_dataset_release(&ds[i]);
	free(ds);
	free(p);
	free(name_owned);
	return rc;
}
