/* version/changes.c - what a dataset version changed against another, in
 * short phrases ("+120 samples", "field cls removed", "split val added"):
 * `chute log` lists them, `chute pack` says them when it replaces a
 * dataset and names what a replacement would lose. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chute/version.h"
#include "common/internal.h"


static int has_shard(const struct ch_manifest *m, struct ch_hash128 h)
{
	for (size_t i = 0; i < m->nshards; i++)
		if (m->shards[i].hash.high == h.high &&
		    m->shards[i].hash.low == h.low)
			return 1;
	return 0;
}

static const struct ch_manifest_split *find_split(const struct ch_manifest *m,
						  const char *name)
{
	for (size_t i = 0; i < m->nsplits; i++)
		if (strcmp(m->splits[i].name, name) == 0)
			return &m->splits[i];
	return NULL;
}

static int has_string(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return 1;
	return 0;
}

static int has_field(const struct ch_manifest *m, const char *name)
{
	for (size_t i = 0; i < m->nfields; i++)
		if (strcmp(m->fields[i].name, name) == 0)
			return 1;
	return 0;
}

/* Where the phrases go. */
struct changes {
	ch_change_fn fn;
	void *arg;
	int n;
};

static void add(struct changes *changes, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add(struct changes *changes, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	changes->fn(changes->arg, buf);
	changes->n++;
}

/* "split val/train added": the names of a's splits that pass `keep`. */
static void split_phrase(struct changes *changes, const struct ch_manifest *a,
			 const struct ch_manifest *b, int changed,
			 const char *what)
{
	char names[400] = "";
	size_t used = 0;

	for (size_t i = 0; i < a->nsplits; i++) {
		const struct ch_manifest_split *o = find_split(b, a->splits[i].name);
		int hit = changed ? o && (o->hash.high != a->splits[i].hash.high ||
					  o->hash.low != a->splits[i].hash.low)
				  : !o;
		if (hit && used < sizeof names)
			used += (size_t)snprintf(names + used, sizeof names - used,
						 "%s%s", used ? "/" : "",
						 a->splits[i].name);
	}
	if (used)
		add(changes, "split %s %s", names, what);
}

/* "+2/-1 shards", "+1 shard", "-3 shards" */
static void count_phrase(struct changes *changes, uint64_t plus, uint64_t minus,
			 const char *one, const char *many)
{
	if (plus && minus)
		add(changes, "+%" PRIu64 "/-%" PRIu64 " %s", plus, minus, many);
	else if (plus || minus)
		add(changes, "%c%" PRIu64 " %s", plus ? '+' : '-',
		    plus ? plus : minus, ch_plural(plus + minus, one, many));
}

static void field_phrases(struct changes *changes, const struct ch_manifest *v,
			  const struct ch_manifest *p)
{
	for (size_t i = 0; i < v->nfields; i++)
		if (!has_field(p, v->fields[i].name))
			add(changes, "field %s added", v->fields[i].name);
	for (size_t i = 0; i < p->nfields; i++)
		if (!has_field(v, p->fields[i].name))
			add(changes, "field %s removed", p->fields[i].name);
}

static int same_options(const struct ch_manifest_options *a,
			const struct ch_manifest_options *b)
{
	return a->shard_bytes == b->shard_bytes &&
	       a->shard_samples == b->shard_samples &&
	       a->block_size == b->block_size && a->level == b->level &&
	       a->dict == b->dict && a->keep_order == b->keep_order &&
	       !a->label_from == !b->label_from;
}

void ch_version_changes(const struct ch_manifest *v,
			const struct ch_manifest *p, ch_change_fn fn, void *arg)
{
	struct changes changes = { fn, arg, 0 }, *c = &changes;
	uint64_t new_shards = 0, gone_shards = 0, plus = 0, minus = 0;

	if (!p) {
		add(c, "first version");
		return;
	}
	if (v->samples > p->samples)
		count_phrase(c, v->samples - p->samples, 0, "sample", "samples");
	else
		count_phrase(c, 0, p->samples - v->samples, "sample", "samples");
	for (size_t i = 0; i < v->nshards; i++)
		new_shards += !has_shard(p, v->shards[i].hash);
	for (size_t i = 0; i < p->nshards; i++)
		gone_shards += !has_shard(v, p->shards[i].hash);
	count_phrase(c, new_shards, gone_shards, "shard", "shards");
	split_phrase(c, v, p, 0, "added");
	split_phrase(c, p, v, 0, "removed");
	split_phrase(c, v, p, 1, "changed");
	field_phrases(c, v, p);
	for (size_t i = 0; i < v->nclasses; i++)
		plus += !has_string(p->classes, p->nclasses, v->classes[i]);
	for (size_t i = 0; i < p->nclasses; i++)
		minus += !has_string(v->classes, v->nclasses, p->classes[i]);
	count_phrase(c, plus, minus, "class", "classes");
	if (!same_options(&v->options, &p->options))
		add(c, "pack options changed");
	if (strcmp(v->name, p->name) != 0)
		add(c, "renamed from %s", p->name);
	if (!c->n)
		add(c, "same content");
}


/* Appends "what" to buf (a list of what would be lost). */
static void loss(char *buf, size_t size, size_t *used, const char *what)
{
	if (*used < size)
		*used += (size_t)snprintf(buf + *used, size - *used, "%s%s",
					  *used ? ", " : "", what);
}

int ch_version_losses(const struct ch_manifest *old,
		      const struct ch_manifest *v, char *buf, size_t size)
{
	size_t used = 0;
	char what[300];
	buf[0] = '\0';
	for (size_t i = 0; i < old->nfields; i++)
		if (!has_field(v, old->fields[i].name)) {
			snprintf(what, sizeof(what), "field %s",
				 old->fields[i].name);
			loss(buf, size, &used, what);
		}
	if (old->nclasses && !v->nclasses) {
		snprintf(what, sizeof(what), "the labels (%zu %s)",
			 old->nclasses,
			 ch_plural(old->nclasses, "class", "classes"));
		loss(buf, size, &used, what);
	}
	for (size_t i = 0; i < old->nsplits; i++)
		if (!find_split(v, old->splits[i].name)) {
			snprintf(what, sizeof(what), "split %s",
				 old->splits[i].name);
			loss(buf, size, &used, what);
		}
	return used > 0;
}
