/*
 * pull.c - chute pull: fetch a dataset version from a remote.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chute/store.h"
#include "chute/remote.h"
#include "cmd.h"

static const char *const pull_usage[] = {
	"pull [OPTIONS] [REMOTE[@TAG|@ID]] DIR",
	NULL,
};

struct pull_args {
	const char *ref, *dir;
	int json;
	struct ch_store_opts store;
	struct ch_transfer_opts xfer;
};

/* A lone operand is the folder, pulled from the default remote: one that
 * reads as a remote instead (a url, NAME@..., a name some config
 * defines) is a folder forgotten, not a folder to make. */
static int lone_dir(const char *dir, struct ch_error *err)
{
	int remote = ch_ref_is_remote(dir) ||
		     (!strchr(dir, '/') && strchr(dir, '@') &&
		      access(dir, F_OK) != 0);
	if (!remote && (remote = ch_remote_is_name(dir, NULL, err)) < 0)
		return -1;
	if (remote)
		return ch_error_usage(err, "'%s' is a remote: give the folder "
				      "to pull into after it", dir);
	return 0;
}

static int check_dir(void *args, struct ch_error *err)
{
	struct pull_args *a = args;
	if (!a->dir) {
		a->dir = a->ref;
		a->ref = NULL;
		return lone_dir(a->dir, err);
	}
	return 0;
}

static int take_retries(const char *arg, void *args, struct ch_error *err)
{
	return cmd_retries_value(arg, &((struct pull_args *)args)->store, err);
}

#define T struct pull_args
static const struct cmd_opt pull_opts[] = {
	CMD_HELP_OPT,
	CMD_OPT_INT('j', "jobs", "N", T, xfer.jobs, 1, 256,
		    "downloads at once (default 8)"),
	CMD_JSON_OPT(T, "print what was fetched as one JSON object"),
	CMD_QUIET_OPT,
	CMD_RETRIES_OPT(take_retries),
	CMD_OPT_END,
};
#undef T

const struct cmd_spec cmd_pull_spec = {
	.name = "pull",
	.summary = "fetch a dataset version from a remote",
	.usage = pull_usage,
	.opts = pull_opts,
	.extra = "REMOTE: a folder, a url or a name from 'chute remote' "
		 "(none: the default\nremote); without @TAG or @ID the tag "
		 "'latest'; every file is verified\nbefore it takes its "
		 "name, the manifest comes last; an interrupted pull\n"
		 "continues where it stopped; see chute-remote(7)\n",
	CMD_OPERAND2(struct pull_args, ref, dir),
	.too_many = "give a remote and a folder",
	.required = 1,
	.missing = "give a remote and the folder to pull into",
	.check = check_dir,
	.also = &cmd_remote_spec, /* the default remote */
};

static void print_text(const struct pull_args *a,
		       const struct ch_pull_report *r)
{
	char files[CMD_COUNT_TEXT], size[CMD_SIZE_TEXT];

	printf("pulled %s into ", r->id);
	cmd_put(stdout, a->dir);
	printf(": %s, %zu downloaded (%s, %zu resumed), %zu already there\n",
	       cmd_count_text(r->files, "file", "files", files), r->downloaded,
	       cmd_size_text(r->downloaded_bytes, size), r->resumed,
	       r->present);
}

/* url: the store's, its password hidden. */
static void print_json(const struct pull_args *a,
		       const struct ch_pull_report *r, const char *url,
		       const char *at, double seconds)
{
	json_t *doc = cmd_json_version(r->id, r->parent);

	json_object_set_new(doc, "dataset", cmd_json_text(a->dir));
	json_object_set_new(doc, "remote", cmd_json_text(url));
	json_object_set_new(doc, "at", cmd_json_text(at));
	json_object_set_new(doc, "samples", cmd_json_count(r->samples));
	json_object_set_new(doc, "shards", cmd_json_count(r->shards));
	json_object_set_new(doc, "files", cmd_json_count(r->files));
	json_object_set_new(doc, "downloaded", cmd_json_count(r->downloaded));
	json_object_set_new(doc, "resumed", cmd_json_count(r->resumed));
	json_object_set_new(doc, "present", cmd_json_count(r->present));
	json_object_set_new(doc, "bytes", cmd_json_count(r->bytes));
	json_object_set_new(doc, "downloaded_bytes",
			    cmd_json_count(r->downloaded_bytes));
	json_object_set_new(doc, "seconds", cmd_json_seconds(seconds));
	cmd_json_emit(doc);
}

int cmd_pull(int argc, char **argv)
{
	struct pull_args a = {0};
	struct ch_error err = {0};
	struct ch_pull_report r;
	struct cmd_transfer t;
	struct ch_store *st;
	struct ch_ref ref;
	int status = cmd_parse_args(&cmd_pull_spec, argc, argv, &a);
	if (status != 0)
		return cmd_parsed_status(status);
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
	if (status == 0 && a.json)
		print_json(&a, &r, ch_store_url(st), ref.at,
			   cmd_transfer_seconds(&t));
	else if (status == 0)
		print_text(&a, &r);
	ch_store_close(st);
	ch_ref_release(&ref);
	return status != 0 ? cmd_fail(&err) : 0;
}
