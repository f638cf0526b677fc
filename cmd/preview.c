/*
 * preview.c - chute preview: one batch of a stream, as the trainer would
 * get it, drawn as a contact sheet (a PNG) to look at before a long run.
 */
#include <stdlib.h>
#include <string.h>

#include "chute/stream.h"
#include "chute/remote.h"
#include "chute/visual.h"
#include "cmd.h"
#include "stream_opts.h"

static const char *const preview_usage[] = {
	"preview [OPTIONS] DATASET -o FILE.png",
	NULL,
};

struct preview_args {
	struct ch_stream_opts o;
	struct ch_sheet_opts sheet;
	const char *dataset, *output;
	const char **transforms;
	size_t ntransforms;
};

static int take_columns(const char *arg, void *args, struct ch_error *err)
{
	int cols;
	if (cmd_int_value("--columns", arg, 1, 1024, &cols, err) < 0)
		return -1;
	((struct preview_args *)args)->sheet.columns = (uint32_t)cols;
	return 0;
}

static int take_transform(const char *arg, void *args, struct ch_error *err)
{
	struct preview_args *a = args;
	return stream_add_transform(&a->o, &a->transforms, &a->ntransforms,
				    arg, err);
}

static int take_dataset(void *args, const char *arg, struct ch_error *err)
{
	struct preview_args *a = args;
	if (a->dataset)
		return ch_error_usage(err, "one dataset at a time: '%s' and "
				      "'%s'", a->dataset, arg);
	a->dataset = arg;
	return 0;
}

static int check_output(void *args, struct ch_error *err)
{
	struct preview_args *a = args;
	if (!a->dataset)
		return ch_error_usage(err, "no dataset given");
	if (!a->output)
		return ch_error_usage(err, "no output given: -o FILE.png");
	return 0;
}

/* The options of chute stream that choose the batch, with their help
 * lines; preview's own beside them, all sorted by name. */
#define T struct preview_args
static const struct cmd_opt own[] = {
	CMD_OPT_CALL(0, "columns", "N", take_columns,
		     "tiles a row (default: a square grid)"),
	CMD_OPT_TEXT(0, "field", "NAME", T, sheet.image,
		     "the field drawn (default: the first image)"),
	CMD_OPT_TEXT(0, "label", "NAME", T, sheet.label,
		     "the class under each key (default cls)"),
	CMD_OPT_TEXT('o', "output", "FILE", T, output,
		     "write the PNG to FILE (required)"),
};
#undef T
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

const struct cmd_spec cmd_preview_spec = {
	.name = "preview",
	.summary = "draw one batch of a stream as a contact sheet",
	.usage = preview_usage,
	.opts = preview_opts,
	.extra = "the first batch the stream would give (after --resume's "
		 "cursor: the next\none), each sample's picture over its key "
		 "and class.  prints the batch's\ncursor: --resume with it "
		 "draws the next batch.\nexit status: 0 done, 1 the data "
		 "failed a check, 2 usage or I/O error\n",
	.operand = take_dataset,
	.check = check_output,
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct cmd_opt *)a)->name,
		      ((const struct cmd_opt *)b)->name);
}

/* chute stream's row of opt, its value into preview's args, with
 * preview's words where they differ. */
static struct cmd_opt reworded(int opt)
{
	const struct stream_option *d = &stream_options[opt];
	struct cmd_opt o = stream_cmd_opts[opt];
	if (d->lib)
		o.at = offsetof(struct preview_args, o) + d->field;
	if (opt == CH_STREAM_OPT_TRANSFORM)
		o.parse = take_transform;
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

/* Before main: the table is whole wherever it is read. */
__attribute__((constructor)) static void make_opts(void)
{
	size_t n = 0;
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		preview_opts[n++] = own[i];
	for (size_t i = 0; i < sizeof(from_stream) / sizeof(*from_stream);
	     i++)
		preview_opts[n++] = reworded(from_stream[i]);
	qsort(preview_opts, n, sizeof(*preview_opts), by_name);
	preview_opts[n] = (struct cmd_opt)CMD_OPT_END;
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
	struct ch_error err = {0};
	int status = cmd_parse_args(&cmd_preview_spec, argc, argv, &a);
	if (status != 0)
		status = cmd_parsed_status(status);
	else if (run(&a, &err) < 0)
		status = cmd_fail(&err);
	free(a.transforms);
	return status;
}
