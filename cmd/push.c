/*
 * push.c - chute push: send a dataset version to a remote.
 */
#include <stdio.h>
#include <stdlib.h>

#include "chute/store.h"
#include "chute/remote.h"
#include "cmd.h"

static const char *const push_usage[] = {
	"push [OPTIONS] DATASET [REMOTE]",
	NULL,
};

struct push_args {
	const char *dataset, *remote;
	const char *tags[16];
	size_t ntags;
	int json;
	struct ch_store_opts store;
	struct ch_push_opts push;
};

static int take_retries(const char *arg, void *args, struct ch_error *err)
{
	return cmd_retries_value(arg, &((struct push_args *)args)->store, err);
}

#define T struct push_args
static const struct cmd_opt push_opts[] = {
	CMD_HELP_OPT,
	CMD_OPT_INT('j', "jobs", "N", T, push.xfer.jobs, 1, 256,
		    "uploads at once (default 8)"),
	CMD_JSON_OPT(T, "print what was sent as one JSON object"),
	CMD_QUIET_OPT,
	CMD_RETRIES_OPT(take_retries),
	CMD_OPT_LIST('t', "tag", "NAME", T, tags, ntags, 16,
		     "also point tag NAME at the version (repeatable)"),
	CMD_OPT_END,
};
#undef T

const struct cmd_spec cmd_push_spec = {
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
	CMD_OPERAND2(struct push_args, dataset, remote),
	.too_many = "give a dataset and a remote",
	.required = 1,
	.missing = "give a dataset to push (and a remote, or have a default "
		   "one)",
	.also = &cmd_remote_spec, /* the default remote */
};

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
	int status = cmd_parse_args(&cmd_push_spec, argc, argv, &a);
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
