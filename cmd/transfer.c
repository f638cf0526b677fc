/*
 * transfer.c - what the commands on a remote share: the remote opened
 * from its argument, the options that tune transfers and the progress
 * line (progress.c) while they run.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "chute/remote.h"

int cmd_open_remote(const char *text, const char *dataset_dir,
		    enum ch_remote_use use, const struct ch_store_opts *opts,
		    struct ch_store **st, struct ch_error *err)
{
	char *url;
	if (ch_remote_arg(text, dataset_dir, use, &url, err) < 0)
		return -1;
	int rc = ch_store_open(st, url, opts, err);
	free(url);
	return rc;
}

int cmd_retries_value(const char *arg, struct ch_store_opts *so,
		      struct ch_error *err)
{
	if (cmd_int_value("--retries", arg, 0, 100, &so->retries, err) < 0)
		return -1;
	if (so->retries == 0)
		so->retries = -1; /* in ch_store_opts, 0 means the default */
	return 0;
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
