/*
 * transfer.c - what push and pull share: a progress line on a terminal
 * and the options that tune transfers.
 */
#include <stdio.h>
#include <unistd.h>

#include "cmd.h"
#include "chute/remote.h"

void cmd_transfer_progress(const struct ch_store_progress *p, void *arg)
{
	struct cmd_transfer *t = arg;
	double s = ch_now() - t->start;
	if (!t->tty)
		return;
	fprintf(stderr, "\rchute %s: %zu/%zu files, %.1f/%.1f MB, %.1f MB/s ",
		cmd_name(), p->files, p->total_files, (double)p->bytes / 1e6,
		(double)p->total_bytes / 1e6,
		s > 0 ? (double)p->bytes / 1e6 / s : 0.0);
	t->shown = 1;
}

int cmd_transfer_option(int c, const char *arg, struct ch_store_opts *so,
			struct ch_transfer_opts *xo)
{
	if (c == 'j')
		return cmd_parse_int("--jobs", arg, 1, 256, &xo->jobs) < 0 ? -1
									    : 1;
	if (c != CMD_OPT_RETRIES)
		return 0;
	if (cmd_parse_int("--retries", arg, 0, 100, &so->retries) < 0)
		return -1;
	if (so->retries == 0)
		so->retries = -1; /* in ch_store_opts, 0 means the default */
	return 1;
}

void cmd_transfer_begin(struct cmd_transfer *t, struct ch_transfer_opts *o)
{
	t->tty = isatty(STDERR_FILENO);
	t->start = ch_now();
	t->shown = 0;
	o->progress = cmd_transfer_progress;
	o->progress_arg = t;
}

void cmd_transfer_end(struct cmd_transfer *t)
{
	if (t->shown)
		fputs("\n", stderr);
	t->shown = 0;
}

double cmd_transfer_seconds(const struct cmd_transfer *t)
{
	return ch_now() - t->start;
}
