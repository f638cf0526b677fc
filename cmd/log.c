/*
 * log.c - chute log: a dataset's versions, newest first, through their
 * parents, each with what changed since its parent.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "chute.h"
#include "cmd.h"
#include "ref.h"

enum { OPT_JSON = CMD_LONG_ONLY };

static const char *const log_usage[] = {
	"log [--json] REF",
	NULL,
};

static const struct cmd_opt log_opts[] = {
	CMD_HELP_OPT,
	{OPT_JSON, "json", NULL, "one JSON document on standard output"},
	{0, NULL, NULL, NULL},
};

static const struct cmd_spec log_spec = {
	.name = "log",
	.summary = "show the versions a dataset version comes from",
	.usage = log_usage,
	.opts = log_opts,
	.extra = "REF: a dataset folder, a manifest file, or "
		 "REMOTE[@TAG|@ID]\n",
};

static int take(struct cmd_parser *p, int c, void *ctx)
{
	(void)p;
	if (c == OPT_JSON)
		*(int *)ctx = 1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* What changed: short phrases                                          */

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

static void add(json_t *changes, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add(json_t *changes, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	json_array_append_new(changes, cmd_json_bytes(buf, strlen(buf)));
}

/* "split val/train added": the names of a's splits that pass `keep`. */
static void split_phrase(json_t *changes, const struct ch_manifest *a,
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

static void count_phrase(json_t *changes, uint64_t plus, uint64_t minus,
			 const char *what)
{
	if (plus && minus)
		add(changes, "+%" PRIu64 "/-%" PRIu64 " %s", plus, minus, what);
	else if (plus || minus)
		add(changes, "%c%" PRIu64 " %s", plus ? '+' : '-',
		    plus ? plus : minus, what);
}

static void field_phrases(json_t *changes, const struct ch_manifest *v,
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

/* Version v against its parent p. */
static json_t *changes_of(const struct ch_manifest *v,
			  const struct ch_manifest *p)
{
	json_t *c = json_array();
	uint64_t new_shards = 0, gone_shards = 0, plus = 0, minus = 0;

	if (!p) {
		add(c, "first version");
		return c;
	}
	if (v->samples != p->samples)
		add(c, "%c%" PRIu64 " samples", v->samples > p->samples ? '+' : '-',
		    v->samples > p->samples ? v->samples - p->samples :
					      p->samples - v->samples);
	for (size_t i = 0; i < v->nshards; i++)
		new_shards += !has_shard(p, v->shards[i].hash);
	for (size_t i = 0; i < p->nshards; i++)
		gone_shards += !has_shard(v, p->shards[i].hash);
	count_phrase(c, new_shards, gone_shards, "shards");
	split_phrase(c, v, p, 0, "added");
	split_phrase(c, p, v, 0, "removed");
	split_phrase(c, v, p, 1, "changed");
	field_phrases(c, v, p);
	for (size_t i = 0; i < v->nclasses; i++)
		plus += !has_string(p->classes, p->nclasses, v->classes[i]);
	for (size_t i = 0; i < p->nclasses; i++)
		minus += !has_string(v->classes, v->nclasses, p->classes[i]);
	count_phrase(c, plus, minus, "classes");
	if (!same_options(&v->options, &p->options))
		add(c, "pack options changed");
	if (strcmp(v->name, p->name) != 0)
		add(c, "renamed from %s", p->name);
	if (!json_array_size(c))
		add(c, "same content");
	return c;
}

/* ------------------------------------------------------------------ */
/* Output                                                               */

static json_t *entry(const struct ch_manifest *v, const struct ch_manifest *p)
{
	json_t *o = json_object(), *splits = json_object();

	for (size_t i = 0; i < v->nsplits; i++)
		json_object_set_new(splits, v->splits[i].name,
				    json_integer((json_int_t)v->splits[i].samples));
	json_object_set_new(o, "id", json_string(v->id));
	json_object_set_new(o, "parent", v->parent ? json_string(v->parent) :
						     json_null());
	json_object_set_new(o, "samples", json_integer((json_int_t)v->samples));
	json_object_set_new(o, "shards", json_integer((json_int_t)v->nshards));
	json_object_set_new(o, "splits", splits);
	json_object_set_new(o, "changes", changes_of(v, p));
	return o;
}

static void print_entry(json_t *o, const struct ch_manifest *v)
{
	json_t *changes = json_object_get(o, "changes");

	printf("%s  %" PRIu64 " samples, %zu shard%s, ", v->id, v->samples,
	       v->nshards, v->nshards == 1 ? "" : "s");
	if (!v->nsplits)
		printf("no splits");
	for (size_t i = 0; i < v->nsplits; i++)
		printf("%s%s", i ? "/" : "splits ", v->splits[i].name);
	for (size_t i = 0; i < json_array_size(changes); i++)
		printf("%s%s", i ? ", " : ": ",
		       json_string_value(json_array_get(changes, i)));
	putchar('\n');
	fflush(stdout);
}

/* Walks from m through its parents; takes m.  Returns 0, or EXIT_USAGE
 * when a stored parent could not be read. */
static int walk(const struct ch_ref *ref, struct ch_manifest *m, int json)
{
	struct ch_manifest parent;
	struct ch_error err = {0};
	json_t *versions = json_array(), *doc = json_object();
	const char *continues = NULL;
	char missing[33] = "";
	int rc = 0, found;

	for (;;) {
		memset(&parent, 0, sizeof parent);
		found = m->parent ? ch_ref_load_version(ref, m->parent, &parent,
							&err) : 1;
		if (found < 0) {
			rc = cmd_error("%s", err.msg);
			break;
		}
		json_t *o = entry(m, found == 0 ? &parent : NULL);
		if (found == 1 && m->parent) {
			json_array_set_new(json_object_get(o, "changes"), 0,
					   json_string("parent not stored here"));
			snprintf(missing, sizeof missing, "%s", m->parent);
			continues = missing;
		}
		if (!json)
			print_entry(o, m);
		json_array_append_new(versions, o);
		ch_manifest_release(m);
		if (found != 0)
			break;
		*m = parent;
	}
	ch_manifest_release(m);
	if (continues && !json)
		printf("history continues at %s (not stored here)\n", continues);
	json_object_set_new(doc, "versions", versions);
	json_object_set_new(doc, "continues_at", continues ?
					  json_string(continues) : json_null());
	if (json && rc == 0)
		cmd_json_print(doc, stdout);
	json_decref(doc);
	return rc;
}

int cmd_log(int argc, char **argv)
{
	struct ch_error err = {0};
	struct ch_manifest m;
	struct ch_ref ref;
	const char *text = NULL;
	int json = 0, status;

	status = cmd_parse_dataset_args(&log_spec, argc, argv, take, &json,
					&text, "no history to show");
	if (status != 0)
		return status < 0 ? 0 : status;
	if (ch_ref_parse(text, &ref, &err) < 0)
		return cmd_error("%s", err.msg);
	memset(&m, 0, sizeof m);
	if (ch_ref_load(&ref, &m, &err) < 0) {
		ch_ref_release(&ref);
		return cmd_error("%s", err.msg);
	}
	status = walk(&ref, &m, json);
	ch_ref_release(&ref);
	return status;
}
