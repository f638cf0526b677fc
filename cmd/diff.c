/*
 * diff.c - chute diff: two dataset versions compared sample by sample.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "chute/version.h"
#include "chute/remote.h"
#include "cmd.h"

static const char *const diff_usage[] = {
	"diff [--json] [--limit N] A B",
	NULL,
};

struct diff_args {
	const char *refs[2];
	uint64_t limit;
	int json;
};

static const struct cmd_opt diff_opts[] = {
	CMD_HELP_OPT,
	CMD_JSON_OPT(struct diff_args, "one JSON report with every key"),
	CMD_OPT_U64(0, "limit", "N", struct diff_args, limit, 0, UINT32_MAX,
		    "example keys shown per kind (default: 10)"),
	CMD_QUIET_OPT,
	CMD_OPT_END,
};

const struct cmd_spec cmd_diff_spec = {
	.name = "diff",
	.summary = "compare two dataset versions sample by sample",
	.usage = diff_usage,
	.opts = diff_opts,
	.extra = "A, B: dataset folders, manifest files or REMOTE[@TAG|@ID]\n"
		 "(REMOTE: a url or a name from 'chute remote')\n"
		 "exit status: 0 equal, 1 different or damaged data, 2 could "
		 "not compare\n",
	CMD_OPERAND2(struct diff_args, refs[0], refs[1]),
	.too_many = "give two versions, A and B",
	.required = 2,
	.missing = "nothing to compare: give two versions, A and B",
};

/* ------------------------------------------------------------------ */
/* Text                                                                 */

static void put_key(const struct ch_diff_key *k)
{
	cmd_put_text(stdout, k->key, k->len);
}

static void print_examples(const char *what, const struct ch_diff_keys *l,
			   uint64_t limit)
{
	if (!l->n || !limit)
		return;
	printf("  %s:", what);
	for (size_t i = 0; i < l->n && i < limit; i++) {
		putchar(' ');
		put_key(&l->v[i]);
	}
	if (l->n > limit)
		printf(" ... and %zu more", l->n - (size_t)limit);
	putchar('\n');
}

static void print_split(const struct ch_diff_split *s, uint64_t limit)
{
	if (s->in_a != s->in_b) {
		char samples[CMD_COUNT_TEXT];
		cmd_print("split %s: %s (%s)", s->name,
			  s->in_b ? "added" : "removed",
			  cmd_count_text(s->in_b ? s->samples_b : s->samples_a,
					 "sample", "samples", samples));
		putchar('\n');
		return;
	}
	if (!s->added.n && !s->removed.n && !s->changed.n)
		return;
	cmd_print("split %s: %zu added, %zu removed, %zu changed (%" PRIu64
		  " -> %" PRIu64 " samples)", s->name, s->added.n,
		  s->removed.n, s->changed.n, s->samples_a, s->samples_b);
	putchar('\n');
	print_examples("added", &s->added, limit);
	print_examples("removed", &s->removed, limit);
	print_examples("changed", &s->changed, limit);
}

static void print_moves(const struct ch_diff *d, uint64_t limit)
{
	if (!d->nmoved)
		return;
	printf("moved between splits: %zu\n", d->nmoved);
	for (size_t i = 0; i < d->nmoved && i < limit; i++) {
		printf("  ");
		put_key(&d->moved[i].key);
		cmd_print(" (%s -> %s)", d->splits[d->moved[i].from].name,
			  d->splits[d->moved[i].to].name);
		putchar('\n');
	}
	if (d->nmoved > limit)
		printf("  ... and %zu more\n", d->nmoved - (size_t)limit);
}

static void print_names(const char *what, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		cmd_print("schema: %s %s", what, v[i]);
		putchar('\n');
	}
}

static void print_text(const struct ch_diff *d, const struct ch_dataset *a,
		       const struct ch_dataset *b, uint64_t limit)
{
	char na[CMD_COUNT_TEXT], nb[CMD_COUNT_TEXT];

	printf("A %s (%s)\nB %s (%s)\n", a->manifest.id,
	       cmd_count_text(a->manifest.samples, "sample", "samples", na),
	       b->manifest.id,
	       cmd_count_text(b->manifest.samples, "sample", "samples", nb));
	printf("samples: %zu added, %zu removed, %zu changed, %" PRIu64
	       " unchanged\n", d->added.n, d->removed.n, d->changed.n,
	       d->unchanged);
	print_examples("added", &d->added, limit);
	print_examples("removed", &d->removed, limit);
	print_examples("changed", &d->changed, limit);
	for (size_t k = 0; k < d->nsplits; k++)
		print_split(&d->splits[k], limit);
	print_moves(d, limit);
	for (size_t k = 0; k < d->nclasses; k++) {
		const struct ch_diff_class *c = &d->classes[k];
		if (c->added || c->removed || c->changed) {
			cmd_print("class %s: %" PRIu64 " added, %" PRIu64
				  " removed, %" PRIu64 " changed", c->name,
				  c->added, c->removed, c->changed);
			putchar('\n');
		}
	}
	print_names("field added", d->fields_added, d->nfields_added);
	print_names("field removed", d->fields_removed, d->nfields_removed);
	print_names("class added", d->classes_added, d->nclasses_added);
	print_names("class removed", d->classes_removed, d->nclasses_removed);
	printf("%s\n", d->equal ? "equal: same samples, splits and schema" :
				  "different");
}

/* ------------------------------------------------------------------ */
/* JSON                                                                 */

static json_t *key_list(const struct ch_diff_keys *l)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < l->n; i++)
		json_array_append_new(arr, cmd_json_bytes(l->v[i].key,
							  l->v[i].len));
	return arr;
}

static json_t *name_list(const char *const *v, size_t n)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, cmd_json_bytes(v[i], strlen(v[i])));
	return arr;
}

static json_t *version(const struct ch_dataset *ds)
{
	json_t *o = json_object();

	json_object_set_new(o, "id", json_string(ds->manifest.id));
	json_object_set_new(o, "samples",
			    json_integer((json_int_t)ds->manifest.samples));
	return o;
}

static json_t *splits_json(const struct ch_diff *d)
{
	json_t *o = json_object();

	for (size_t k = 0; k < d->nsplits; k++) {
		const struct ch_diff_split *s = &d->splits[k];
		json_t *x = json_object();
		json_object_set_new(x, "in_a", json_boolean(s->in_a));
		json_object_set_new(x, "in_b", json_boolean(s->in_b));
		json_object_set_new(x, "samples_a",
				    json_integer((json_int_t)s->samples_a));
		json_object_set_new(x, "samples_b",
				    json_integer((json_int_t)s->samples_b));
		json_object_set_new(x, "added", key_list(&s->added));
		json_object_set_new(x, "removed", key_list(&s->removed));
		json_object_set_new(x, "changed", key_list(&s->changed));
		json_object_set_new(o, s->name, x);
	}
	return o;
}

static json_t *moves_json(const struct ch_diff *d)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < d->nmoved; i++) {
		const struct ch_diff_move *m = &d->moved[i];
		json_t *x = json_object();
		json_object_set_new(x, "key", cmd_json_bytes(m->key.key,
							     m->key.len));
		json_object_set_new(x, "from", json_string(d->splits[m->from].name));
		json_object_set_new(x, "to", json_string(d->splits[m->to].name));
		json_array_append_new(arr, x);
	}
	return arr;
}

static json_t *classes_json(const struct ch_diff *d)
{
	json_t *o = json_object();

	for (size_t k = 0; k < d->nclasses; k++) {
		const struct ch_diff_class *c = &d->classes[k];
		json_t *x = json_object();
		json_object_set_new(x, "added", json_integer((json_int_t)c->added));
		json_object_set_new(x, "removed",
				    json_integer((json_int_t)c->removed));
		json_object_set_new(x, "changed",
				    json_integer((json_int_t)c->changed));
		json_object_set_new(o, c->name, x);
	}
	return o;
}

static json_t *schema_json(const struct ch_diff *d)
{
	json_t *o = json_object();

	json_object_set_new(o, "fields_added",
			    name_list(d->fields_added, d->nfields_added));
	json_object_set_new(o, "fields_removed",
			    name_list(d->fields_removed, d->nfields_removed));
	json_object_set_new(o, "classes_added",
			    name_list(d->classes_added, d->nclasses_added));
	json_object_set_new(o, "classes_removed",
			    name_list(d->classes_removed, d->nclasses_removed));
	return o;
}

static void print_json(const struct ch_diff *d, const struct ch_dataset *a,
		       const struct ch_dataset *b)
{
	json_t *doc = json_object();

	json_object_set_new(doc, "equal", json_boolean(d->equal));
	json_object_set_new(doc, "a", version(a));
	json_object_set_new(doc, "b", version(b));
	json_object_set_new(doc, "added", key_list(&d->added));
	json_object_set_new(doc, "removed", key_list(&d->removed));
	json_object_set_new(doc, "changed", key_list(&d->changed));
	json_object_set_new(doc, "unchanged", json_integer((json_int_t)d->unchanged));
	json_object_set_new(doc, "splits", splits_json(d));
	json_object_set_new(doc, "moved", moves_json(d));
	json_object_set_new(doc, "classes", classes_json(d));
	json_object_set_new(doc, "schema", schema_json(d));
	json_object_set_new(doc, "shards_shared",
			    json_integer((json_int_t)d->shards_shared));
	cmd_json_print(doc, stdout);
	json_decref(doc);
}

/* ------------------------------------------------------------------ */

static int open_version(const char *text, struct ch_dataset *ds,
			struct ch_error *err)
{
	struct ch_ref ref;
	int rc;

	if (ch_ref_parse(text, &ref, err) < 0)
		return -1;
	rc = ch_ref_open_dataset(&ref, NULL, 0, ds, err);
	ch_ref_release(&ref);
	if (rc == 0 && ds->lone_shard) {
		ch_dataset_release(ds);
		return ch_error_usage(err, "'%s' is a lone shard: give a "
				      "dataset folder or manifest", text);
	}
	return rc;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_args a = { .limit = 10 };
	struct ch_dataset ds[2];
	struct ch_diff d;
	struct ch_diff_opts o = { 0 };
	struct ch_error err = {0};
	int status, opened = 0;

	status = cmd_parse_args(&cmd_diff_spec, argc, argv, &a);
	if (status != 0)
		return cmd_parsed_status(status);
	memset(ds, 0, sizeof ds);
	o.cancel = cmd_catch_signals();
	o.progress = cmd_progress();
	for (; opened < 2; opened++)
		if (open_version(a.refs[opened], &ds[opened], &err) < 0)
			break;
	int rc = opened < 2 ? -1 : ch_diff(&ds[0], &ds[1], &o, &d, &err);
	cmd_progress_clear();
	if (rc < 0) {
		if (cmd_exit_status(&err) > 128) /* a signal says it all */
			cmd_reported(&err, err.kind);
		status = cmd_fail(&err);
		goto out;
	}
	if (a.json)
		print_json(&d, &ds[0], &ds[1]);
	else
		print_text(&d, &ds[0], &ds[1], a.limit);
	/* the differences printed are the report */
	status = d.equal ? 0 : cmd_fail_reported(CH_ERR_DATA);
	ch_diff_release(&d);
out:
	while (opened-- > 0)
		ch_dataset_release(&ds[opened]);
	return status;
}
