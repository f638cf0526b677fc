/*
 * transfer.c - what push and pull share: the options that tune transfers
 * and the progress line (progress.c) while they run.
 */
#include <stdio.h>

#include "cmd.h"
#include "chute/remote.h"

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
	t->start = ch_now();
	o->progress = cmd_progress();
	o->progress_arg = NULL;
}

void cmd_transfer_end(struct cmd_transfer *t)
{
	(void)t;
	cmd_progress_clear();
}

double cmd_transfer_seconds(const struct cmd_transfer *t)
{
	return ch_now() - t->start;
}
