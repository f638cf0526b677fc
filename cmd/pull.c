/*
 * pull.c - chute pull: fetch a dataset version from a remote.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chute.h"
#include "cmd.h"
#include "chute/ref.h"
#include "chute/remote.h"
#include "chute/store.h"

static const char *const pull_usage[] = {
	"pull [OPTIONS] REMOTE[@TAG|@ID] DIR",
	NULL,
};

static const struct cmd_opt pull_opts[] = {
	CMD_HELP_OPT,
	{'j', "jobs", "N", "downloads at once (default 8)"},
	CMD_QUIET_OPT,
	CMD_RETRIES_OPT,
	{0, NULL, NULL, NULL},
};

static const struct cmd_spec pull_spec = {
	.name = "pull",
	.summary = "fetch a dataset version from a remote",
	.usage = pull_usage,
	.opts = pull_opts,
	.extra = "REMOTE: a folder, a url or a name from 'chute remote'; "
		 "without @TAG or @ID\nthe tag 'latest'; every file is "
		 "verified before it\ntakes its name, the manifest comes "
		 "last; an interrupted pull continues\nwhere it stopped; "
		 "see chute-remote(7)\n",
};

struct pull_args {
	const char *ref, *dir;
	struct ch_store_opts store;
	struct ch_transfer_opts xfer;
};

static int parse_args(struct pull_args *a, int argc, char **argv)
{
	struct cmd_parser p;
	int c;
	cmd_parser_init(&p, &pull_spec, argc, argv);
	while ((c = cmd_next(&p)) != CMD_END) {
		switch (c) {
		case CMD_HELP:
			return -1;
		case CMD_BAD:
			return EXIT_USAGE;
		case 'j':
		case CMD_OPT_RETRIES:
			if (cmd_transfer_option(c, p.arg, &a->store,
						&a->xfer) < 0)
				return EXIT_USAGE;
			break;
		case CMD_POSITIONAL:
			if (!a->ref)
				a->ref = p.arg;
			else if (!a->dir)
				a->dir = p.arg;
			else
				return cmd_error("too many arguments: give a "
						 "remote and a folder");
			break;
		}
	}
	if (!a->dir)
		return cmd_error("give a remote and the folder to pull into");
	return 0;
}

int cmd_pull(int argc, char **argv)
{
	struct pull_args a = {0};
	struct ch_error err = {0};
	struct ch_pull_report r;
	struct cmd_transfer t;
	struct ch_store *st;
	struct ch_ref ref;
	int status = parse_args(&a, argc, argv);
	if (status != 0)
		return status < 0 ? 0 : status;
	/* a folder as a plain path, a url, or a remote name */
	if (ch_ref_parse_remote(a.ref, a.dir, &ref, &err) < 0)
		return cmd_fail(&err);
	if (ch_store_open(&st, ref.remote, &a.store, &err) < 0) {
		ch_ref_release(&ref);
		return cmd_fail(&err);
	}
	cmd_transfer_begin(&t, &a.xfer);
	status = ch_remote_pull(st, ref.at, a.dir, &a.xfer, &r, &err);
	cmd_transfer_end(&t);
	ch_store_close(st);
	ch_ref_release(&ref);
	if (status != 0)
		return cmd_fail(&err);
	printf("pulled %s into %s: %zu files, %zu downloaded (%.1f MB, %zu "
	       "resumed), %zu already there\n", r.id, a.dir, r.files,
	       r.downloaded, (double)r.downloaded_bytes / 1e6, r.resumed,
	       r.present);
	return 0;
}
