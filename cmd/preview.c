/*
 * preview.c - chute preview: one batch of a stream, as the trainer would
 * get it, drawn as a contact sheet (a PNG) to look at before a long run.
 */
#include <stdlib.h>
#include <string.h>

#include "chute.h"
#include "chute/ref.h"
#include "chute/visual.h"
#include "cmd.h"
#include "stream_opts.h"

enum {
	OPT_COLUMNS = CMD_LONG_ONLY + CH_STREAM_OPT_COUNT,
	OPT_FIELD,
	OPT_LABEL,
};

static const char *const preview_usage[] = {
	"preview [OPTIONS] DATASET -o FILE.png",
	NULL,
};

/* The options of chute stream that choose the batch, with their help
 * lines; preview's own beside them, all sorted by name. */
static const struct cmd_opt own[] = {
	{OPT_COLUMNS, "columns", "N", "tiles a row (default: a square grid)"},
	{OPT_FIELD, "field", "NAME",
	 "the field drawn (default: the first image)"},
	{OPT_LABEL, "label", "NAME", "the class under each key (default cls)"},
	{'o', "output", "FILE", "write the PNG to FILE (required)"},
};
static const int from_stream[] = {
	CH_STREAM_OPT_BATCH_SIZE, CH_STREAM_OPT_HELP, CH_STREAM_OPT_MODE,
	CH_STREAM_OPT_ON_ERROR, CH_STREAM_OPT_QUIET, CH_STREAM_OPT_RESUME,
	CH_STREAM_OPT_SEED,
	CH_STREAM_OPT_SHUFFLE, CH_STREAM_OPT_SPLIT, CH_STREAM_OPT_START_EPOCH,
	CH_STREAM_OPT_TRANSFORM,
};
#define NOPTS (sizeof(own) / sizeof(own[0]) + \
	       sizeof(from_stream) / sizeof(from_stream[0]))

static struct cmd_opt preview_opts[NOPTS + 1];

static const struct cmd_spec preview_spec = {
	.name = "preview",
	.summary = "draw one batch of a stream as a contact sheet",
	.usage = preview_usage,
	.opts = preview_opts,
	.extra = "the first batch the stream would give (after --resume's "
		 "cursor: the next\none), each sample's picture over its key "
		 "and class.  prints the batch's\ncursor: --resume with it "
		 "draws the next batch.\nexit status: 0 done, 1 the data "
		 "failed a check, 2 usage or I/O error\n",
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct cmd_opt *)a)->name,
		      ((const struct cmd_opt *)b)->name);
}

/* Where preview's words differ from chute stream's. */
static struct cmd_opt reworded(const struct stream_option *d, int opt)
{
	struct cmd_opt o = { d->id, d->name, d->arg, d->help };
	if (opt == CH_STREAM_OPT_BATCH_SIZE)
		o.help = "samples per batch (default 64)";
	if (opt == CH_STREAM_OPT_QUIET)
		o.help = "print no cursor (errors still go to stderr)";
	if (opt == CH_STREAM_OPT_RESUME) {
		o.arg = "CURSOR";
		o.help = "draw the batch after the one of CURSOR";
	}
	return o;
}

static void make_opts(void)
{
	size_t n = 0;
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		preview_opts[n++] = own[i];
	for (size_t i = 0; i < sizeof(from_stream) / sizeof(*from_stream);
	     i++)
		preview_opts[n++] = reworded(&stream_options[from_stream[i]],
					     from_stream[i]);
	qsort(preview_opts, n, sizeof(*preview_opts), by_name);
	preview_opts[n] = (struct cmd_opt){ 0, NULL, NULL, NULL };
}

struct preview_args {
	struct ch_stream_opts o;
	struct ch_sheet_opts sheet;
	const char *dataset, *output;
	const char **transforms;
	size_t ntransforms;
};

static int add_transform(struct preview_args *a, const char *spec)
{
	return stream_add_transform(&a->o, &a->transforms, &a->ntransforms,
				    spec);
}

static int take(struct preview_args *a, int c, const char *arg)
{
	union stream_value v;
	int cols, opt;
	switch (c) {
	case OPT_COLUMNS:
		if (cmd_parse_int("--columns", arg, 1, 1024, &cols) < 0)
			return -1;
		a->sheet.columns = (uint32_t)cols;
		return 0;
	case OPT_FIELD: a->sheet.image = arg; return 0;
	case OPT_LABEL: a->sheet.label = arg; return 0;
	case 'o': a->output = arg; return 0;
	}
	opt = stream_option_of(c);
	if (opt < 0 || stream_parse_value(opt, NULL, arg, &v) < 0)
		return -1;
	if (opt == CH_STREAM_OPT_TRANSFORM)
		return add_transform(a, v.text);
	stream_option_set(&a->o, opt, &v);
	return 0;
}

/* Returns 0 to go on, -1 after --help, or the exit status. */
static int parse_args(struct preview_args *a, int argc, char **argv)
{
	struct cmd_parser p;
	int c;
	cmd_parser_init(&p, &preview_spec, argc, argv);
	while ((c = cmd_next(&p)) != CMD_END) {
		if (c == CMD_HELP)
			return -1;
		if (c == CMD_BAD)
			return EXIT_USAGE;
		if (c != CMD_POSITIONAL) {
			if (take(a, c, p.arg) != 0)
				return EXIT_USAGE;
			continue;
		}
		if (a->dataset)
			return cmd_error("one dataset at a time: '%s' and '%s'",
					 a->dataset, p.arg);
		a->dataset = p.arg;
	}
	if (!a->dataset)
		return cmd_error("no dataset given");
	if (!a->output)
		return cmd_error("no output given: -o FILE.png");
	return 0;
}

/* The first batch's sheet, then stop the stream. */
struct first {
	const struct ch_sheet_opts *o;
	struct ch_buf png;
	char *cursor;
	int done;
};

static int draw(const struct ch_batch_out *b, void *arg, struct ch_error *err)
{
	struct first *f = arg;
	if (ch_sheet_png(b->data, b->size, f->o, &f->png, err) < 0)
		return -1;
	f->cursor = strdup(b->cursor);
	f->done = 1;
	return 1;
}

static int run(struct preview_args *a, struct ch_error *err)
{
	struct ch_dataset ds;
	struct ch_ref ref;
	struct first f = { .o = &a->sheet };
	struct ch_stream_stats st;
	int rc;
	if (ch_check_file_atomic(a->output, err) < 0)
		return cmd_prefix_error(err, "cannot write '%s'", a->output);
	if (ch_ref_parse(a->dataset, &ref, err) < 0)
		return -1;
	rc = ch_ref_open_dataset(&ref, NULL, 0, &ds, err);
	ch_ref_release(&ref);
	if (rc < 0)
		return -1;
	a->o.cancel = cmd_catch_signals();
	rc = ch_stream(&ds, &a->o, draw, &f, &st, err);
	if (rc == 0 && !f.done)
		rc = ch_error_usage(err, "the stream holds no batch");
	else if (rc == 0 &&
		 ch_write_file_atomic(a->output, (const char *)f.png.data,
				      f.png.len, err) < 0)
		rc = cmd_prefix_error(err, "cannot write '%s'", a->output);
	else if (rc == 0 && !cmd_quiet())
		printf("%s\n", f.cursor ? f.cursor : "");
	ch_buf_release(&f.png);
	free(f.cursor);
	ch_dataset_release(&ds);
	return rc;
}

int cmd_preview(int argc, char **argv)
{
	struct preview_args a = {0};
	ch_stream_opts_init(&a.o);
	a.o.batch_size = 64;
	make_opts();
	struct ch_error err = {0};
	int status = parse_args(&a, argc, argv);
	if (status != 0)
		status = cmd_parsed_status(status);
	else if (run(&a, &err) < 0)
		status = cmd_fail(&err);
	free(a.transforms);
	return status;
}
