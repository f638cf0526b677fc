/*
 * log.c - chute log: a dataset's versions, newest first, through their
 * parents, each with what changed since its parent.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "chute/remote.h"
#include "cmd.h"

static const char *const log_usage[] = {
	"log [--json] REF",
	NULL,
};

struct log_args {
	const char *ref;
	int json;
};

static const struct cmd_opt log_opts[] = {
	CMD_HELP_OPT,
	CMD_JSON_OPT(struct log_args, "one JSON document on standard output"),
	CMD_QUIET_OPT,
	CMD_OPT_END,
};

const struct cmd_spec cmd_log_spec = {
	.name = "log",
	.summary = "show the versions a dataset version comes from",
	.usage = log_usage,
	.opts = log_opts,
	.extra = "REF: a dataset folder, a manifest file, or "
		 "REMOTE[@TAG|@ID]\n(REMOTE: a url or a name from 'chute remote')\n",
	CMD_OPERAND1(struct log_args, ref),
	.too_many = "give one dataset",
	.required = 1,
	.missing = "no history to show: name a dataset",
};

/* ------------------------------------------------------------------ */
/* What changed: short phrases                                          */

static void add_change(void *arg, const char *phrase)
{
	json_array_append_new(arg, cmd_json_bytes(phrase, strlen(phrase)));
}

/* Version v against its parent p. */
static json_t *changes_of(const struct ch_manifest *v,
			  const struct ch_manifest *p)
{
	json_t *c = json_array();
	ch_version_changes(v, p, add_change, c);
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

	char samples[CMD_COUNT_TEXT], shards[CMD_COUNT_TEXT];

	printf("%s  %s, %s, ", v->id,
	       cmd_count_text(v->samples, "sample", "samples", samples),
	       cmd_count_text(v->nshards, "shard", "shards", shards));
	if (!v->nsplits)
		printf("no splits");
	for (size_t i = 0; i < v->nsplits; i++)
		printf("%s%s", i ? "/" : "splits ", v->splits[i].name);
	for (size_t i = 0; i < json_array_size(changes); i++)
		cmd_print("%s%s", i ? ", " : ": ",
			  json_string_value(json_array_get(changes, i)));
	putchar('\n');
	fflush(stdout);
}

/* Walks from m through its parents; takes m.  Returns 0, or -1 with err
 * filled when a stored parent could not be read. */
static int walk(const struct ch_ref *ref, struct ch_manifest *m, int json,
		struct ch_error *err)
{
	struct ch_manifest parent;
	json_t *versions = json_array(), *doc = json_object();
	const char *continues = NULL;
	char missing[33] = "";
	int rc = 0, found;

	/* a history edited by hand, or written before ids named content,
	 * may loop: each version is shown once */
	char (*seen)[33] = NULL;
	size_t nseen = 0;
	for (;;) {
		char (*more)[33] = realloc(seen, (nseen + 1) * sizeof(*seen));
		if (!more) {
			rc = ch_error_nomem(err);
			break;
		}
		seen = more;
		memcpy(seen[nseen++], m->id, sizeof(*seen));
		int loops = 0;
		for (size_t i = 0; m->parent && i < nseen; i++)
			loops |= strcmp(seen[i], m->parent) == 0;
		memset(&parent, 0, sizeof parent);
		found = m->parent && !loops
				? ch_ref_load_version(ref, m->parent, &parent,
						      err)
				: 1;
		if (found < 0) {
			rc = -1;
			break;
		}
		json_t *o = entry(m, found == 0 ? &parent : NULL);
		if (found == 1 && m->parent && !loops) {
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
	free(seen);
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
	struct log_args a = {0};

	status = cmd_parse_args(&cmd_log_spec, argc, argv, &a);
	if (status != 0)
		return cmd_parsed_status(status);
	text = a.ref;
	json = a.json;
	if (ch_ref_parse(text, &ref, &err) < 0)
		return cmd_fail(&err);
	memset(&m, 0, sizeof m);
	if (ch_ref_load(&ref, &m, &err) < 0) {
		ch_ref_release(&ref);
		return cmd_fail(&err);
	}
	status = walk(&ref, &m, json, &err) < 0 ? cmd_fail(&err) : 0;
	ch_ref_release(&ref);
	return status;
}
