/*
 * gc.c - chute gc: remove from a remote the objects no kept version
 * needs.  Every tagged version is kept; a dry run unless --yes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chute/store.h"
#include "chute/remote.h"
#include "cmd.h"

enum {
	MAX_NAMES = 64,
	DEFAULT_GRACE_S = 3600,
};

static const char *const gc_usage[] = {
	"gc [OPTIONS] [REMOTE]",
	NULL,
};

struct gc_args {
	const char *remote;
	const char *keep[MAX_NAMES], *drop[MAX_NAMES];
	int json;
	struct ch_gc_opts gc;
};

/* "90", "90s", "30m", "1h", "7d" in seconds. */
static int parse_duration(const char *arg, void *args, struct ch_error *err)
{
	const char *s = arg;
	char *end;
	unsigned long long n = strtoull(s, &end, 10);
	static const char units[] = "smhd";
	static const int64_t secs[] = {1, 60, 3600, 86400};
	const char *u = *end ? strchr(units, *end) : units;
	if (end == s || *s == '-' || !u || (*end && end[1]) ||
	    n > (unsigned long long)INT64_MAX / secs[u - units])
		return ch_error_usage(err, "--grace '%s': not a duration (90s, "
				      "30m, 1h, 7d; 0 for none)", s);
	((struct gc_args *)args)->gc.grace_s = (int64_t)n * secs[u - units];
	return 0;
}

static int finish(void *args, struct ch_error *err)
{
	struct gc_args *a = args;
	(void)err;
	a->gc.keep = a->keep;
	a->gc.drop = a->drop;
	a->gc.point = cmd_test_point;
	return 0;
}

#define T struct gc_args
static const struct cmd_opt gc_opts[] = {
	CMD_OPT_LIST(0, "drop-tag", "NAME", T, drop, gc.ndrop, MAX_NAMES,
		     "remove tag NAME; its version goes unless kept otherwise"),
	CMD_OPT_CALL(0, "grace", "DURATION", parse_duration,
		     "keep objects written less than DURATION ago (default "
		     "1h)"),
	CMD_HELP_OPT,
	CMD_JSON_OPT(T, "one JSON document on standard output"),
	CMD_OPT_LIST('k', "keep", "REF", T, keep, gc.nkeep, MAX_NAMES,
		     "also keep version REF, a tag or an id (repeatable)"),
	CMD_QUIET_OPT,
	CMD_OPT_FLAG('y', "yes", T, gc.yes,
		     "remove; without it, only say what would go"),
	CMD_OPT_END,
};
#undef T

const struct cmd_spec cmd_gc_spec = {
	.name = "gc",
	.summary = "remove from a remote what no kept version needs",
	.usage = gc_usage,
	.opts = gc_opts,
	.extra = "REMOTE: a folder, a url or a name from 'chute remote' "
		 "(none: the default\nremote); keeps every tagged version; "
		 "see chute-gc(1)\n",
	CMD_OPERAND1(struct gc_args, remote),
	.too_many = "give one remote",
	.check = finish,
	.also = &cmd_remote_spec, /* the default remote */
};

/* Returns 0, -1 after --help, or EXIT_USAGE. */
static int parse_args(struct gc_args *a, int argc, char **argv)
{
	a->gc.grace_s = DEFAULT_GRACE_S;
	return cmd_parse_args(&cmd_gc_spec, argc, argv, a);
}

static json_t *strings_json(const char *const *s, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(s[i]));
	return a;
}

static json_t *report_json(const struct gc_args *a,
			   const struct ch_gc_report *r, const char *url)
{
	json_t *kept = json_array(), *removed = json_array();
	for (size_t i = 0; i < r->nkept; i++)
		json_array_append_new(kept, json_string(r->kept[i]));
	for (size_t i = 0; i < r->removed.n; i++)
		json_array_append_new(
			removed,
			json_pack("{s:s, s:I}", "key", r->removed.objects[i].key,
				  "bytes",
				  (json_int_t)r->removed.objects[i].size));
	return json_pack("{s:s, s:b, s:I, s:o, s:o, s:o, s:I, s:I, s:I, s:I, "
			 "s:I, s:I}",
			 "remote", url, "dry_run", !a->gc.yes, "grace_s",
			 (json_int_t)a->gc.grace_s, "dropped_tags",
			 strings_json(a->drop, a->gc.ndrop), "kept_versions",
			 kept, "removed", removed, "removed_objects",
			 (json_int_t)r->removed.n, "removed_bytes",
			 (json_int_t)r->removed_bytes, "referenced_objects",
			 (json_int_t)r->referenced, "referenced_bytes",
			 (json_int_t)r->referenced_bytes, "fresh_objects",
			 (json_int_t)r->fresh, "fresh_bytes",
			 (json_int_t)r->fresh_bytes);
}

static void print_report(const struct gc_args *a,
			 const struct ch_gc_report *r, const char *url)
{
	char size[CMD_SIZE_TEXT];
	const char *verb = a->gc.yes ? "removed" : "would remove";
	for (size_t i = 0; i < a->gc.ndrop; i++) {
		cmd_print("%s tag %s", a->gc.yes ? "dropped" : "would drop",
			  a->drop[i]);
		putchar('\n');
	}
	for (size_t i = 0; i < r->removed.n; i++) {
		cmd_print("%s %s (%s)", verb, r->removed.objects[i].key,
			  cmd_size_text(r->removed.objects[i].size, size));
		putchar('\n');
	}
	cmd_print("%s %zu %s, %s, from %s%s", verb, r->removed.n,
		  cmd_plural(r->removed.n, "object", "objects"),
		  cmd_size_text(r->removed_bytes, size), url,
		  a->gc.yes || !r->removed.n ? "" : " (a dry run: --yes removes)");
	putchar('\n');
	cmd_print("kept %zu %s and the %zu %s they name, %s",
		  r->nkept, cmd_plural(r->nkept, "version", "versions"),
		  r->referenced, cmd_plural(r->referenced, "object", "objects"),
		  cmd_size_text(r->referenced_bytes, size));
	if (r->fresh)
		cmd_print("; %zu newer %s, %s, left for the grace period",
			  r->fresh, cmd_plural(r->fresh, "object", "objects"),
			  cmd_size_text(r->fresh_bytes, size));
	putchar('\n');
}

int cmd_gc(int argc, char **argv)
{
	struct gc_args a = {0};
	struct ch_error err = {0};
	struct ch_gc_report r;
	struct ch_store *st;
	int status = parse_args(&a, argc, argv);
	if (status != 0)
		return cmd_parsed_status(status);
	if (cmd_open_remote(a.remote, NULL, CH_REMOTE_READ, NULL, &st,
			    &err) < 0)
		return cmd_fail(&err);
	if (ch_remote_gc(st, &a.gc, &r, &err) < 0) {
		ch_store_close(st);
		return cmd_fail(&err);
	}
	if (a.json) {
		json_t *doc = report_json(&a, &r, ch_store_url(st));
		cmd_json_print(doc, stdout);
		json_decref(doc);
	} else {
		print_report(&a, &r, ch_store_url(st));
	}
	ch_gc_report_release(&r);
	ch_store_close(st);
	return 0;
}
