/* version/totals.c - the totals a manifest states against what its
 * shards hold.  A manifest's per-shard sizes and sample counts are bound
 * to the files (dataset.c, verify), and its dataset-wide samples,
 * shard_bytes and bytes must add up from those and from the schema
 * (the manifest_*.c files refuse one that does not); what is left is the schema
 * itself: how many samples have each field and its raw bytes, which only
 * the shards' indexes can tell (chute-manifest(5), KEYS). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chute/version.h"
#include "common/internal.h"

/* The field named name in t, added with no samples if absent. */
static struct ch_manifest_field *field(struct ch_totals *t, const char *name,
				       struct ch_error *err)
{
	size_t lo = 0, hi = t->nfields;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(t->fields[mid].name, name);
		if (c == 0)
			return &t->fields[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	struct ch_manifest_field *v = realloc(t->fields, (t->nfields + 1) *
						       sizeof(*v));
	if (!v) {
		ch_error_nomem(err);
		return NULL;
	}
	t->fields = v;
	memmove(&v[lo + 1], &v[lo], (t->nfields - lo) * sizeof(*v));
	v[lo] = (struct ch_manifest_field){ .name = strdup(name) };
	t->nfields++;
	if (!v[lo].name) {
		memmove(&v[lo], &v[lo + 1], (--t->nfields - lo) * sizeof(*v));
		ch_error_nomem(err);
		return NULL;
	}
	return &v[lo];
}

static int add_field(struct ch_totals *t, const char *name, uint64_t count,
		     uint64_t bytes, struct ch_error *err)
{
	struct ch_manifest_field *f = field(t, name, err);
	if (!f)
		return -1;
	f->count += count;
	f->bytes += bytes;
	return 0;
}

int ch_totals_add_shard(struct ch_totals *t, const struct ch_shard *sh,
			struct ch_error *err)
{
	uint32_t n = ch_shard_name_count(sh);
	uint64_t *count = calloc(n ? n : 1, sizeof(*count));
	uint64_t *bytes = calloc(n ? n : 1, sizeof(*bytes));
	int rc = 0;
	if (!count || !bytes)
		rc = ch_error_nomem(err);
	if (rc == 0)
		ch_shard_field_totals(sh, count, bytes);
	for (uint32_t id = 0; rc == 0 && id < n; id++)
		if (count[id])
			rc = add_field(t, ch_shard_name(sh, id), count[id],
				       bytes[id], err);
	free(count);
	free(bytes);
	return rc;
}

static int ch_totals_add(struct ch_totals *t, const struct ch_totals *more,
			 struct ch_error *err);

void ch_totals_add_shard_locked(struct ch_totals *t, pthread_mutex_t *lock,
				size_t *tallied, const struct ch_shard *sh)
{
	struct ch_totals mine = { 0 };
	struct ch_error err;
	if (ch_totals_add_shard(&mine, sh, &err) == 0) {
		pthread_mutex_lock(lock);
		if (ch_totals_add(t, &mine, &err) == 0)
			(*tallied)++;
		pthread_mutex_unlock(lock);
	}
	ch_totals_release(&mine);
}

/* Adds the totals of other shards (a worker's, say). */
static int ch_totals_add(struct ch_totals *t, const struct ch_totals *more,
			 struct ch_error *err)
{
	for (size_t i = 0; i < more->nfields; i++)
		if (add_field(t, more->fields[i].name, more->fields[i].count,
			      more->fields[i].bytes, err) < 0)
			return -1;
	return 0;
}

void ch_totals_release(struct ch_totals *t)
{
	for (size_t i = 0; i < t->nfields; i++)
		free(t->fields[i].name);
	free(t->fields);
	memset(t, 0, sizeof(*t));
}

/* A total the manifest states that the shards' does not match: 1, else
 * 0. */
static size_t differ(const char *name, const char *what, uint64_t stated,
		     uint64_t actual, ch_totals_fn fn, void *arg)
{
	char msg[512];
	if (stated == actual)
		return 0;
	snprintf(msg, sizeof(msg), "the manifest's schema.fields.%s.%s is "
		 "%llu, the shards hold %llu", name, what,
		 (unsigned long long)stated, (unsigned long long)actual);
	fn(msg, 0, arg);
	return 1;
}

static size_t unlisted(const struct ch_manifest_field *f, ch_totals_fn fn,
		       void *arg)
{
	char msg[512];
	snprintf(msg, sizeof(msg), "the manifest's schema.fields has no %s, "
		 "which %llu %s of the shards %s (%llu bytes)", f->name,
		 (unsigned long long)f->count,
		 ch_plural(f->count, "sample", "samples"),
		 ch_plural(f->count, "has", "have"),
		 (unsigned long long)f->bytes);
	fn(msg, 1, arg);
	return 1;
}

/* Both lists are sorted by name: one walk down the two.  A field of the
 * schema that no shard holds is held by 0 samples in 0 bytes. */
size_t ch_totals_compare(const struct ch_manifest *m,
			 const struct ch_totals *t, ch_totals_fn fn, void *arg)
{
	static const struct ch_manifest_field none = { 0 };
	size_t i = 0, k = 0, n = 0;
	while (i < m->nfields || k < t->nfields) {
		const struct ch_manifest_field *a = i < m->nfields ?
						    &m->fields[i] : &none;
		const struct ch_manifest_field *b = k < t->nfields ?
						    &t->fields[k] : &none;
		int c = i == m->nfields ? 1 : k == t->nfields ? -1 :
			strcmp(a->name, b->name);
		if (c > 0) {
			n += unlisted(b, fn, arg);
			k++;
			continue;
		}
		if (c < 0)
			b = &none;
		n += differ(a->name, "count", a->count, b->count, fn, arg);
		n += differ(a->name, "bytes", a->bytes, b->bytes, fn, arg);
		i++;
		k += c == 0;
	}
	return n;
}

static void first_only(const char *msg, int unlisted, void *arg)
{
	(void)unlisted;
	char *first = arg;
	if (!first[0])
		snprintf(first, 512, "%s", msg);
}

int ch_totals_check(const struct ch_manifest *m, const struct ch_totals *t,
		    const char *origin, struct ch_error *err)
{
	char first[512] = "";
	size_t n = ch_totals_compare(m, t, first_only, first);
	if (n == 0)
		return 0;
	return ch_error_data(err, "'%s': %s%s (edited?)", origin, first,
			     n > 1 ? ", and more totals differ" : "");
}
