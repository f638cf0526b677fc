/*
 * pull.c - chute pull: fetch a dataset version from a remote.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chute.h"
#include "cmd.h"
#include "chute/config.h"
#include "chute/ref.h"
#include "chute/remote.h"
#include "chute/store.h"

enum { OPT_JSON = CMD_LONG_ONLY };

static const char *const pull_usage[] = {
	"pull [OPTIONS] [REMOTE[@TAG|@ID]] DIR",
	NULL,
};

static const struct cmd_opt pull_opts[] = {
	CMD_HELP_OPT,
	{'j', "jobs", "N", "downloads at once (default 8)"},
	{OPT_JSON, "json", NULL, "print what was fetched as one JSON object"},
	CMD_QUIET_OPT,
	CMD_RETRIES_OPT,
	{0, NULL, NULL, NULL},
};

static const struct cmd_spec pull_spec = {
	.name = "pull",
	.summary = "fetch a dataset version from a remote",
	.usage = pull_usage,
	.opts = pull_opts,
	.extra = "REMOTE: a folder, a url or a name from 'chute remote' "
		 "(none: the default\nremote); without @TAG or @ID the tag "
		 "'latest'; every file is verified\nbefore it takes its "
		 "name, the manifest comes last; an interrupted pull\n"
		 "continues where it stopped; see chute-remote(7)\n",
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

static int parse_args(struct pull_args *a, int argc, char **argv)
{
	struct cmd_parser p;
	struct ch_error err;
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
		case OPT_JSON:
			a->json = 1;
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
	if (!a->ref)
		return cmd_error("give a remote and the folder to pull into");
	if (!a->dir) {
		a->dir = a->ref;
		a->ref = NULL;
		return lone_dir(a->dir, &err) < 0 ? cmd_fail(&err) : 0;
	}
	return 0;
}

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
	int status = parse_args(&a, argc, argv);
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
