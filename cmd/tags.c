/*
 * tags.c - chute tags: the tags and versions of a remote, with when each
 * version was pushed, its samples and its size.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "chute/store.h"
#include "chute/remote.h"
#include "cmd.h"

static const char *const tags_usage[] = {
	"tags [--json] [REMOTE]",
	NULL,
};

struct tags_args {
	const char *remote;
	int json;
};

static const struct cmd_opt tags_opts[] = {
	CMD_HELP_OPT,
	CMD_JSON_OPT(struct tags_args, "one JSON document on standard output"),
	CMD_QUIET_OPT,
	CMD_OPT_END,
};

const struct cmd_spec cmd_tags_spec = {
	.name = "tags",
	.summary = "list the tags and versions of a remote",
	.usage = tags_usage,
	.opts = tags_opts,
	.extra = "REMOTE: a folder, file://PATH, http(s)://HOST/PATH, "
		 "s3://BUCKET/PREFIX\nor a name from 'chute remote' "
		 "(none: the default remote)\n",
	CMD_OPERAND1(struct tags_args, remote),
	.too_many = "give one remote",
	.also = &cmd_remote_spec, /* the default remote */
};

/* Returns 0, -1 after --help, or EXIT_USAGE. */
static int parse_args(int argc, char **argv, const char **remote, int *json)
{
	struct tags_args a = {0};
	int status = cmd_parse_args(&cmd_tags_spec, argc, argv, &a);
	*remote = a.remote;
	*json = a.json;
	return status;
}

/* "2026-12-02T05:17:33Z" (iso) or "2026-12-02 05:17 UTC". */
static const char *date_text(int64_t t, int iso, char buf[32])
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(buf, 32, iso ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%d %H:%M UTC",
		 &tm);
	return buf;
}

static json_t *version_json(const struct ch_remote_version *v)
{
	char date[32];
	return json_pack("{s:s, s:s, s:I, s:I, s:I}", "id", v->id, "pushed",
			 date_text(v->mtime, 1, date), "samples",
			 (json_int_t)v->samples, "bytes", (json_int_t)v->bytes,
			 "files", (json_int_t)v->files);
}

static json_t *inventory_json(const struct ch_remote_inventory *inv,
			      const char *url)
{
	json_t *tags = json_array(), *versions = json_array();
	for (size_t i = 0; i < inv->ntags; i++) {
		const struct ch_remote_tag *t = &inv->tags[i];
		const struct ch_remote_version *v =
			ch_remote_inventory_find(inv, t->id);
		json_t *o = v ? version_json(v)
			      : json_pack("{s:s, s:b}", "id", t->id, "missing",
					  1);
		json_object_set_new(o, "name", json_string(t->name));
		json_array_append_new(tags, o);
	}
	for (size_t i = 0; i < inv->nversions; i++) {
		const struct ch_remote_version *v = &inv->versions[i];
		json_t *o = version_json(v), *names = json_array();
		for (size_t k = 0; k < inv->ntags; k++)
			if (!strcmp(inv->tags[k].id, v->id))
				json_array_append_new(
					names, json_string(inv->tags[k].name));
		json_object_set_new(o, "tags", names);
		json_array_append_new(versions, o);
	}
	return json_pack("{s:s, s:o, s:o}", "remote", url, "tags", tags,
			 "versions", versions);
}

static void print_row(int width, const char *name, const char *id,
		      const struct ch_remote_version *v)
{
	char date[32], size[CMD_SIZE_TEXT];
	printf("%-*s  %s  ", width, name, id);
	if (!v) {
		printf("(its manifest is missing from the remote)\n");
		return;
	}
	printf("%s  %" PRIu64 " %s, %s\n", date_text(v->mtime, 0, date),
	       v->samples, cmd_plural(v->samples, "sample", "samples"),
	       cmd_size_text(v->bytes, size));
}

/* A line a tag, sorted by name, then a line a version no tag names. */
static void print_text(const struct ch_remote_inventory *inv, const char *url)
{
	static const char untagged[] = "(untagged)";
	int width = (int)strlen(untagged);
	for (size_t i = 0; i < inv->ntags; i++)
		if ((int)strlen(inv->tags[i].name) > width)
			width = (int)strlen(inv->tags[i].name);
	if (!inv->ntags && !inv->nversions)
		cmd_print("%s holds no versions", url);
	if (!inv->ntags && !inv->nversions)
		putchar('\n');
	for (size_t i = 0; i < inv->ntags; i++)
		print_row(width, inv->tags[i].name, inv->tags[i].id,
			  ch_remote_inventory_find(inv, inv->tags[i].id));
	for (size_t i = 0; i < inv->nversions; i++)
		if (!inv->versions[i].ntags)
			print_row(width, untagged, inv->versions[i].id,
				  &inv->versions[i]);
}

int cmd_tags(int argc, char **argv)
{
	struct ch_error err = {0};
	struct ch_remote_inventory inv;
	struct ch_store *st;
	const char *remote = NULL;
	int json = 0;
	int status = parse_args(argc, argv, &remote, &json);
	if (status != 0)
		return cmd_parsed_status(status);
	if (cmd_open_remote(remote, NULL, CH_REMOTE_READ, NULL, &st, &err) < 0)
		return cmd_fail(&err);
	if (ch_remote_inventory(st, &inv, &err) < 0) {
		ch_store_close(st);
		return cmd_fail(&err);
	}
	if (json) {
		json_t *doc = inventory_json(&inv, ch_store_url(st));
		cmd_json_print(doc, stdout);
		json_decref(doc);
	} else {
		print_text(&inv, ch_store_url(st));
	}
	ch_remote_inventory_release(&inv);
	ch_store_close(st);
	return 0;
}
