/*
 * push.c - chute push: send a dataset version to a remote.
 */
#include <stdio.h>
#include <stdlib.h>

#include "chute.h"
#include "cmd.h"
#include "chute/config.h"
#include "chute/remote.h"
#include "chute/store.h"

static const char *const push_usage[] = {
	"push [OPTIONS] DATASET [REMOTE]",
	NULL,
};

static const struct cmd_opt push_opts[] = {
	CMD_HELP_OPT,
	{'j', "jobs", "N", "uploads at once (default 8)"},
	CMD_QUIET_OPT,
	CMD_RETRIES_OPT,
	{'t', "tag", "NAME", "also point tag NAME at the version (repeatable)"},
	{0, NULL, NULL, NULL},
};

static const struct cmd_spec push_spec = {
	.name = "push",
	.summary = "send a dataset version to a remote",
	.usage = push_usage,
	.opts = push_opts,
	.extra = "REMOTE: a folder, file://PATH, http(s)://HOST/PATH, "
		 "s3://BUCKET/PREFIX\nor a name from 'chute remote' "
		 "(none: the default remote)\n"
		 "uploads the files the remote lacks, then the manifest, then "
		 "the tags\n(always 'latest'); see chute-remote(7)\n",
};

struct push_args {
	const char *dataset, *remote;
	const char *tags[16];
	size_t ntags;
	struct ch_store_opts store;
	struct ch_push_opts push;
};

static int parse_args(struct push_args *a, int argc, char **argv)
{
	struct cmd_parser p;
	int c;
	cmd_parser_init(&p, &push_spec, argc, argv);
	while ((c = cmd_next(&p)) != CMD_END) {
		switch (c) {
		case CMD_HELP:
			return -1;
		case CMD_BAD:
			return EXIT_USAGE;
		case 'j':
		case CMD_OPT_RETRIES:
			if (cmd_transfer_option(c, p.arg, &a->store,
						&a->push.xfer) < 0)
				return EXIT_USAGE;
			break;
		case 't':
			if (a->ntags == sizeof(a->tags) / sizeof(*a->tags))
				return cmd_error("too many --tag options");
			a->tags[a->ntags++] = p.arg;
			break;
		case CMD_POSITIONAL:
			if (!a->dataset)
				a->dataset = p.arg;
			else if (!a->remote)
				a->remote = p.arg;
			else
				return cmd_error("too many arguments: give a "
						 "dataset and a remote");
			break;
		}
	}
	if (!a->dataset)
		return cmd_error("give a dataset to push (and a remote, or "
				 "have a default one)");
	return 0;
}

int cmd_push(int argc, char **argv)
{
	struct push_args a = {0};
	struct ch_error err = {0};
	struct ch_push_report r;
	struct cmd_transfer t;
	struct ch_store *st;
	char *url;
	int status = parse_args(&a, argc, argv);
	if (status != 0)
		return status < 0 ? 0 : status;
	a.push.tags = a.tags;
	a.push.ntags = a.ntags;
	if (ch_remote_arg(a.remote, a.dataset, &url, &err) < 0)
		return cmd_fail(&err);
	status = ch_store_open(&st, url, &a.store, &err);
	free(url);
	if (status < 0)
		return cmd_fail(&err);
	cmd_transfer_begin(&t, &a.push.xfer);
	status = ch_remote_push(a.dataset, st, &a.push, &r, &err);
	cmd_transfer_end(&t);
	if (status < 0) {
		ch_store_close(st);
		return cmd_fail(&err);
	}
	/* the store's url: its password hidden */
	printf("pushed %s to %s: %zu of %zu files sent (%.1f of %.1f MB), "
	       "%zu manifests; tags latest", r.id, ch_store_url(st),
	       r.uploaded, r.files, (double)r.uploaded_bytes / 1e6,
	       (double)r.bytes / 1e6, r.versions_uploaded);
	for (size_t i = 0; i < a.ntags; i++)
		printf(", %s", a.tags[i]);
	printf("\n");
	ch_store_close(st);
	return 0;
}
