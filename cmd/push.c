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

enum { OPT_JSON = CMD_LONG_ONLY };

static const char *const push_usage[] = {
	"push [OPTIONS] DATASET [REMOTE]",
	NULL,
};

static const struct cmd_opt push_opts[] = {
	CMD_HELP_OPT,
	{'j', "jobs", "N", "uploads at once (default 8)"},
	{OPT_JSON, "json", NULL, "print what was sent as one JSON object"},
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
		 "the tags\n('latest' too, unless DATASET is a part of "
		 "chute pack --part);\nsee chute-remote(7)\n",
};

struct push_args {
	const char *dataset, *remote;
	const char *tags[16];
	size_t ntags;
	int json;
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
		case OPT_JSON:
			a->json = 1;
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

/* The store's url in both: its password hidden. */
static void print_text(const struct push_args *a,
		       const struct ch_push_report *r, const char *url)
{
	char files[CMD_COUNT_TEXT], manifests[CMD_COUNT_TEXT];
	char sent[CMD_SIZE_TEXT], total[CMD_SIZE_TEXT];

	printf("pushed %s to %s: %zu of %s sent (%s of %s), %s; ",
	       r->id, url, r->uploaded,
	       cmd_count_text(r->files, "file", "files", files),
	       cmd_size_text(r->uploaded_bytes, sent),
	       cmd_size_text(r->bytes, total),
	       cmd_count_text(r->versions_uploaded, "manifest", "manifests",
			      manifests));
	if (!r->latest && !a->ntags) {
		printf("no tag (a part leaves latest alone)\n");
		return;
	}
	printf("tags %s", r->latest ? "latest" : a->tags[0]);
	for (size_t i = !r->latest; i < a->ntags; i++)
		printf(", %s", a->tags[i]);
	printf("\n");
}

static void print_json(const struct push_args *a,
		       const struct ch_push_report *r, const char *url,
		       double seconds)
{
	json_t *doc = cmd_json_version(r->id, r->parent);

	json_object_set_new(doc, "dataset", cmd_json_text(a->dataset));
	json_object_set_new(doc, "remote", cmd_json_text(url));
	json_object_set_new(doc, "samples", cmd_json_count(r->samples));
	json_object_set_new(doc, "shards", cmd_json_count(r->shards));
	json_object_set_new(doc, "files", cmd_json_count(r->files));
	json_object_set_new(doc, "uploaded", cmd_json_count(r->uploaded));
	json_object_set_new(doc, "present",
			    cmd_json_count(r->files - r->uploaded));
	json_object_set_new(doc, "bytes", cmd_json_count(r->bytes));
	json_object_set_new(doc, "uploaded_bytes",
			    cmd_json_count(r->uploaded_bytes));
	json_object_set_new(doc, "manifests",
			    cmd_json_count(r->versions_uploaded));
	json_object_set_new(doc, "tags",
			    cmd_json_tags(a->tags, a->ntags, r->latest));
	json_object_set_new(doc, "seconds", cmd_json_seconds(seconds));
	cmd_json_emit(doc);
}

int cmd_push(int argc, char **argv)
{
	struct push_args a = {0};
	struct ch_error err = {0};
	struct ch_push_report r;
	struct cmd_transfer t;
	struct ch_store *st;
	int status = parse_args(&a, argc, argv);
	if (status != 0)
		return cmd_parsed_status(status);
	a.push.tags = a.tags;
	a.push.ntags = a.ntags;
	a.push.point = cmd_test_point;
	if (cmd_open_remote(a.remote, a.dataset, CH_REMOTE_WRITE, &a.store,
			    &st, &err) < 0)
		return cmd_fail(&err);
	cmd_transfer_begin(&t, &a.push.xfer);
	status = ch_remote_push(a.dataset, st, &a.push, &r, &err);
	cmd_transfer_end(&t);
	if (status < 0) {
		ch_store_close(st);
		return cmd_fail(&err);
	}
	if (a.json)
		print_json(&a, &r, ch_store_url(st), cmd_transfer_seconds(&t));
	else
		print_text(&a, &r, ch_store_url(st));
	ch_store_close(st);
	return 0;
}
