/*
 * export.c - chute export: one WebDataset tar per shard.
 */
#include <string.h>

#include "chute.h"
#include "cmd.h"

enum { OPT_FORMAT = CMD_LONG_ONLY };

static const char *const export_usage[] = {
	"export [--format tar] DATASET -o OUTDIR",
	NULL,
};

static const struct cmd_opt export_opts[] = {
	{OPT_FORMAT, "format", "FORMAT", "output format: tar (the default)"},
	CMD_HELP_OPT,
	{'o', "output", "OUTDIR", "folder for the exported files"},
	CMD_QUIET_OPT,
	{0, NULL, NULL, NULL},
};

static const struct cmd_spec export_spec = {
	.name = "export",
	.summary = "write a dataset as WebDataset tar files",
	.usage = export_usage,
	.opts = export_opts,
	.extra = "each shard NAME-000000.chs becomes OUTDIR/NAME-000000.tar\n",
};

static int parse_args(int argc, char **argv, const char **path,
		      struct ch_export_opts *o)
{
	struct cmd_parser p;
	int c;

	cmd_parser_init(&p, &export_spec, argc, argv);
	while ((c = cmd_next(&p)) != CMD_END) {
		switch (c) {
		case CMD_HELP:
			return -1;
		case CMD_BAD:
			return EXIT_USAGE;
		case 'o':
			o->out_dir = p.arg;
			break;
		case OPT_FORMAT:
			if (strcmp(p.arg, "tar") != 0)
				return cmd_error("unsupported format '%s' for "
						 "--format: expected 'tar'",
						 p.arg);
			o->format = p.arg;
			break;
		case CMD_POSITIONAL:
			if (*path)
				return cmd_error("too many arguments: give one "
						 "dataset");
			*path = p.arg;
			break;
		}
	}
	if (!*path)
		return cmd_error("nothing to export: name a dataset");
	if (!o->out_dir)
		return cmd_error("no output folder given: use -o OUTDIR");
	return 0;
}

int cmd_export(int argc, char **argv)
{
	struct ch_export_opts o = {.format = "tar"};
	struct ch_dataset ds;
	struct ch_error err = {0};
	const char *path = NULL;
	size_t written = 0;
	int status;

	status = parse_args(argc, argv, &path, &o);
	if (status != 0)
		return status < 0 ? 0 : status;
	memset(&ds, 0, sizeof ds);
	if (ch_dataset_open(&ds, path, &err) < 0)
		return cmd_fail(&err);
	o.cancel = cmd_catch_signals();
	o.progress = cmd_progress();
	int rc = ch_export(&ds, &o, &written, &err);
	cmd_progress_clear();
	if (rc < 0)
		status = cmd_fail(&err);
	else
		printf("exported %zu shards into %s\n", written, o.out_dir);
	ch_dataset_release(&ds);
	return status;
}
