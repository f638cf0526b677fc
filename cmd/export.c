/*
 * export.c - chute export: one WebDataset tar per shard.
 */
#include <string.h>

#include "chute/stream.h"
#include "cmd.h"

static const char *const export_usage[] = {
	"export [--format tar] [--json] DATASET -o OUTDIR",
	NULL,
};

struct export_args {
	const char *path;
	struct ch_export_opts o;
	int json;
};

static int take_format(const char *arg, void *args, struct ch_error *err)
{
	if (strcmp(arg, "tar") != 0)
		return ch_error_usage(err, "unsupported format '%s' for "
				      "--format: expected 'tar'", arg);
	((struct export_args *)args)->o.format = arg;
	return 0;
}

static int check_output(void *args, struct ch_error *err)
{
	if (!((struct export_args *)args)->o.out_dir)
		return ch_error_usage(err, "no output folder given: use -o "
				      "OUTDIR");
	return 0;
}

static const struct cmd_opt export_opts[] = {
	CMD_OPT_CALL(0, "format", "FORMAT", take_format,
		     "output format: tar (the default)"),
	CMD_HELP_OPT,
	CMD_JSON_OPT(struct export_args,
		     "print what was written as one JSON object"),
	CMD_OPT_TEXT('o', "output", "OUTDIR", struct export_args, o.out_dir,
		     "folder for the exported files"),
	CMD_QUIET_OPT,
	CMD_OPT_END,
};

const struct cmd_spec cmd_export_spec = {
	.name = "export",
	.summary = "write a dataset as WebDataset tar files",
	.usage = export_usage,
	.opts = export_opts,
	.extra = "each shard NAME-000000.chs becomes OUTDIR/NAME-000000.tar\n",
	CMD_OPERAND1(struct export_args, path),
	.too_many = "give one dataset",
	.required = 1,
	.missing = "nothing to export: name a dataset",
	.check = check_output,
};

static int parse_args(int argc, char **argv, const char **path,
		      struct ch_export_opts *o, int *json)
{
	struct export_args a = {.o = *o};
	int status = cmd_parse_args(&cmd_export_spec, argc, argv, &a);
	*path = a.path;
	*o = a.o;
	*json = a.json;
	return status;
}

static void print_text(const struct ch_export_result *r, const char *out_dir)
{
	char files[CMD_COUNT_TEXT], samples[CMD_COUNT_TEXT];
	char size[CMD_SIZE_TEXT];

	printf("exported %s (%s, %s) into ",
	       cmd_count_text(r->files, "shard", "shards", files),
	       cmd_count_text(r->samples, "sample", "samples", samples),
	       cmd_size_text(r->bytes, size));
	cmd_put(stdout, out_dir);
	putchar('\n');
}

static void print_json(const struct ch_dataset *ds, const char *path,
		       const struct ch_export_opts *o,
		       const struct ch_export_result *r, double seconds)
{
	json_t *doc = cmd_json_version(ds->manifest.id, ds->manifest.parent);

	json_object_set_new(doc, "dataset", cmd_json_text(path));
	json_object_set_new(doc, "output", cmd_json_text(o->out_dir));
	json_object_set_new(doc, "format", json_string(o->format));
	json_object_set_new(doc, "files", cmd_json_count(r->files));
	json_object_set_new(doc, "samples", cmd_json_count(r->samples));
	json_object_set_new(doc, "bytes", cmd_json_count(r->bytes));
	json_object_set_new(doc, "seconds", cmd_json_seconds(seconds));
	cmd_json_emit(doc);
}

int cmd_export(int argc, char **argv)
{
	struct ch_export_opts o = {.format = "tar"};
	struct ch_export_result r;
	struct ch_dataset ds;
	struct ch_error err = {0};
	const char *path = NULL;
	double start = ch_now();
	int status, json = 0;

	status = parse_args(argc, argv, &path, &o, &json);
	if (status != 0)
		return cmd_parsed_status(status);
	memset(&ds, 0, sizeof ds);
	if (ch_dataset_open(&ds, path, &err) < 0)
		return cmd_fail(&err);
	o.cancel = cmd_catch_signals();
	o.progress = cmd_progress();
	int rc = ch_export(&ds, &o, &r, &err);
	cmd_progress_clear();
	if (rc < 0)
		status = cmd_fail(&err);
	else if (json)
		print_json(&ds, path, &o, &r, ch_now() - start);
	else
		print_text(&r, o.out_dir);
	ch_dataset_release(&ds);
	return status;
}
