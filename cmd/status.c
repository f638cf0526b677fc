/*
 * status.c - chute status: a dataset folder against its manifest.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "chute/version.h"
#include "cmd.h"

static const char *const status_usage[] = {
	"status [--hash] [--json] DATASET",
	NULL,
};

struct status_args {
	struct ch_status_opts o;
	const char *path;
	int json;
};

static const struct cmd_opt status_opts[] = {
	CMD_OPT_FLAG(0, "hash", struct status_args, o.rehash,
		     "hash every file, whatever the stat cache says"),
	CMD_HELP_OPT,
	CMD_JSON_OPT(struct status_args, "one JSON report on standard output"),
	CMD_QUIET_OPT,
	CMD_OPT_END,
};

const struct cmd_spec cmd_status_spec = {
	.name = "status",
	.summary = "compare a dataset folder with its manifest",
	.usage = status_usage,
	.opts = status_opts,
	.extra = "exit status: 0 clean, 1 not clean, 2 could not check\n",
	CMD_OPERAND1(struct status_args, path),
	.too_many = "give one dataset",
	.required = 1,
	.missing = "nothing to compare: name a dataset",
};

/* Indexed by enum ch_status_kind. */
static const char *const kind_names[] = {
	"missing", "modified", "unexpected", "manifest",
};

static void count_kinds(const struct ch_status_result *r, uint64_t n[4])
{
	memset(n, 0, 4 * sizeof(*n));
	for (size_t i = 0; i < r->nitems; i++)
		n[r->items[i].kind]++;
}

static void print_text(const struct ch_status_result *r)
{
	char shards[CMD_COUNT_TEXT], split_files[CMD_COUNT_TEXT];
	uint64_t n[4];

	for (size_t i = 0; i < r->nitems; i++) {
		const struct ch_status_item *it = &r->items[i];
		cmd_print("%s %s", kind_names[it->kind], it->path);
		if (it->why)
			cmd_print(" (%s)", it->why);
		putchar('\n');
	}
	count_kinds(r, n);
	if (!r->nitems)
		printf("clean: ");
	else
		printf("not clean: %" PRIu64 " missing, %" PRIu64 " modified, %"
		       PRIu64 " unexpected%s; ", n[CH_WS_MISSING],
		       n[CH_WS_MODIFIED], n[CH_WS_UNEXPECTED],
		       n[CH_WS_MANIFEST] ? ", manifest edited" : "");
	printf("%s, %s, %" PRIu64 " hashed, version %s\n",
	       cmd_count_text(r->shards, "shard", "shards", shards),
	       cmd_count_text(r->split_files, "split file", "split files",
			      split_files), r->hashed, r->id);
}

static json_t *str_or_null(const char *s)
{
	return s ? cmd_json_bytes(s, strlen(s)) : json_null();
}

static void print_json(const struct ch_status_result *r)
{
	json_t *doc = json_object(), *items = json_array();

	for (size_t i = 0; i < r->nitems; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "kind",
				    json_string(kind_names[r->items[i].kind]));
		json_object_set_new(o, "path", str_or_null(r->items[i].path));
		json_object_set_new(o, "why", str_or_null(r->items[i].why));
		json_array_append_new(items, o);
	}
	json_object_set_new(doc, "clean", json_boolean(r->nitems == 0));
	json_object_set_new(doc, "id", json_string(r->id));
	json_object_set_new(doc, "shards", json_integer((json_int_t)r->shards));
	json_object_set_new(doc, "split_files",
			    json_integer((json_int_t)r->split_files));
	json_object_set_new(doc, "hashed", json_integer((json_int_t)r->hashed));
	json_object_set_new(doc, "problems", items);
	cmd_json_print(doc, stdout);
	json_decref(doc);
}

int cmd_status(int argc, char **argv)
{
	struct status_args a = {0};
	struct ch_status_result r;
	struct ch_error err = {0};
	const char *path = NULL;
	int status;

	status = cmd_parse_args(&cmd_status_spec, argc, argv, &a);
	if (status != 0)
		return cmd_parsed_status(status);
	path = a.path;
	a.o.cancel = cmd_catch_signals();
	a.o.progress = cmd_progress();
	int rc = ch_status(path, &a.o, &r, &err);
	cmd_progress_clear();
	if (rc < 0) {
		if (cmd_exit_status(&err) > 128) /* a signal says it all */
			cmd_reported(&err, err.kind);
		return cmd_fail(&err);
	}
	if (a.json)
		print_json(&r);
	else
		print_text(&r);
	/* the items printed are the report */
	status = r.nitems ? cmd_fail_reported(CH_ERR_DATA) : 0;
	ch_status_result_release(&r);
	return status;
}
