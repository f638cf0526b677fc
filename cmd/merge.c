/*
 * merge.c - chute merge: the parts chute pack --part I/N wrote, on as
 * many machines, into one dataset: a folder, or a version on the remote
 * the workers pushed their parts to (only a manifest is written there).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "chute/store.h"
#include "chute/pack.h"
#include "chute/remote.h"
#include "cmd.h"

static const char *const merge_usage[] = {
	"merge [OPTIONS] PART... -o DIR|REMOTE",
	NULL,
};

struct merge_args {
	struct ch_merge_opts o;
	const char **parts; /* argc long */
	size_t nparts;
	const char *tags[16];
	size_t ntags;
	int json;
	double start; /* ch_now() */
	char *url;    /* -o NAME's */
};

/* -o NAME, a remote some config defines: the merge is on it, and its url
 * stands for it from here on (kept in a->url). */
static int remote_output(struct merge_args *a, struct ch_error *err)
{
	int named = ch_remote_is_name(a->o.out_dir, NULL, err);
	if (named == 1 && ch_remote_arg(a->o.out_dir, NULL, CH_REMOTE_READ,
					&a->url, err) == 0)
		a->o.out_dir = a->url;
	return named < 0 || (named == 1 && !a->url) ? -1 : 0;
}

static int take_part(void *args, const char *arg, struct ch_error *err)
{
	struct merge_args *a = args;
	(void)err;
	a->parts[a->nparts++] = arg;
	return 0;
}

static int check_output(void *args, struct ch_error *err)
{
	struct merge_args *a = args;
	if (!a->o.out_dir)
		return ch_error_usage(err, "no output folder given: use -o DIR");
	if (remote_output(a, err) != 0)
		return -1;
	if (a->ntags && !ch_ref_is_remote(a->o.out_dir))
		return ch_error_usage(err, "--tag is for a merge on a remote "
				      "(-o REMOTE)");
	for (size_t i = 0; !ch_ref_is_remote(a->o.out_dir) && i < a->nparts;
	     i++)
		if (ch_ref_is_remote(a->parts[i]))
			return ch_error_usage(err, "'%s' is on a remote: merge "
					      "there (-o REMOTE), or pull the "
					      "parts first", a->parts[i]);
	return 0;
}

#define T struct merge_args
static const struct cmd_opt merge_opts[] = {
	CMD_OPT_FLAG(0, "force", T, o.force,
		     "replace a dataset even if its fields, labels or splits "
		     "are lost"),
	CMD_HELP_OPT,
	CMD_JSON_OPT(T, "print what was written as one JSON object"),
	CMD_OPT_TEXT('n', "name", "NAME", T, o.name,
		     "dataset and shard name (default: DIR's name)"),
	CMD_OPT_TEXT('o', "output", "DIR", T, o.out_dir,
		     "dataset folder to create or replace, or the remote the "
		     "parts are on (a url or a name)"),
	CMD_QUIET_OPT,
	CMD_OPT_LIST('t', "tag", "NAME", T, tags, ntags, 16,
		     "on a remote: also point tag NAME at the version "
		     "(repeatable)"),
	CMD_OPT_END,
};
#undef T

const struct cmd_spec cmd_merge_spec = {
	.name = "merge",
	.summary = "merge the parts of a dataset packed apart into one",
	.usage = merge_usage,
	.opts = merge_opts,
	.extra = "PART is a dataset folder written by chute pack --part I/N.\n"
		 "All N parts must be given, each once, packed with the same\n"
		 "options from the same sources; their shards are linked (or\n"
		 "copied), never re-encoded, in part order whatever the order\n"
		 "given.\n"
		 "On a remote, each PART is REMOTE@TAG (a version chute push "
		 "put there)\nand -o is that REMOTE: only the manifest and "
		 "the tags are written;\nsee chute-scale(7)\n",
	.operand = take_part,
	.required = 1,
	.missing = "no part given: name the folders chute pack --part wrote",
	.check = check_output,
	.also = &cmd_pack_spec, /* how the parts were packed */
};

/* "merged 4 parts: 10000 samples (47.1 MB) in 8 shards, id ID" */
static void print_merged(size_t parts, uint64_t samples, uint64_t bytes,
			 size_t shards, const char *id)
{
	char p[CMD_COUNT_TEXT], n[CMD_COUNT_TEXT], s[CMD_COUNT_TEXT];
	char size[CMD_SIZE_TEXT];

	printf("merged %s: %s (%s) in %s, id %s\n",
	       cmd_count_text(parts, "part", "parts", p),
	       cmd_count_text(samples, "sample", "samples", n),
	       cmd_size_text(bytes, size),
	       cmd_count_text(shards, "shard", "shards", s), id);
}

/* The keys a merge's JSON report has wherever it was written; the
 * caller adds where: "dataset" (a folder) or "remote" (never -o as
 * given, which may hold a password). */
static json_t *merged_json(const struct merge_args *a, const char *id,
			   const char *parent, size_t parts, uint64_t samples,
			   uint64_t bytes, size_t shards)
{
	json_t *doc = cmd_json_version(id, parent);

	json_object_set_new(doc, "name", cmd_json_text(a->o.name));
	json_object_set_new(doc, "parts", cmd_json_count(parts));
	json_object_set_new(doc, "samples", cmd_json_count(samples));
	json_object_set_new(doc, "bytes", cmd_json_count(bytes));
	json_object_set_new(doc, "shards", cmd_json_count(shards));
	return doc;
}

/* url: the store's, its password hidden.  A merge starts a history:
 * no parent. */
static void print_remote_json(const struct merge_args *a,
			      const struct ch_remote_merge_report *r,
			      const char *url)
{
	json_t *doc = merged_json(a, r->id, "", r->parts, r->samples,
				  r->bytes, r->shards);

	json_object_set_new(doc, "remote", cmd_json_text(url));
	json_object_set_new(doc, "tags", cmd_json_tags(a->tags, a->ntags, 1));
	cmd_json_add_replaced(doc, r->replaced, r->id, r->changes);
	json_object_set_new(doc, "seconds",
			    cmd_json_seconds(ch_now() - a->start));
	cmd_json_emit(doc);
}

static void print_remote_text(const struct merge_args *a,
			      const struct ch_remote_merge_report *r,
			      const char *url)
{
	print_merged(r->parts, r->samples, r->bytes, r->shards, r->id);
	printf("wrote version %s to %s, no file sent; tags latest", r->id,
	       url);
	for (size_t i = 0; i < a->ntags; i++)
		printf(", %s", a->tags[i]);
	printf("\n");
}

/* The parts are versions on the remote -o names: one manifest and the
 * tags are written, nothing else moves. */
static int run_remote_merge(struct merge_args *a, struct ch_error *err)
{
	struct ch_remote_merge_opts o = {
		.remote = a->o.out_dir, .name = a->o.name, .tags = a->tags,
		.ntags = a->ntags, .cancel = cmd_catch_signals(),
		.progress = cmd_progress(),
	};
	struct ch_remote_merge_report r;
	struct ch_store *st;

	if (ch_store_open(&st, a->o.out_dir, NULL, err) < 0)
		return -1;
	int rc = ch_remote_merge(st, a->parts, a->nparts, &o, &r, err);
	cmd_progress_clear();
	if (rc < 0) {
		ch_store_close(st);
		return -1;
	}
	if (a->json)
		print_remote_json(a, &r, ch_store_url(st));
	else
		print_remote_text(a, &r, ch_store_url(st));
	ch_store_close(st);
	return 0;
}

static int run_merge(struct merge_args *a, struct ch_error *err)
{
	struct ch_merge_result res;
	int rc;

	memset(&res, 0, sizeof res);
	a->o.cancel = cmd_catch_signals();
	a->o.progress = cmd_progress();
	rc = ch_merge(a->parts, a->nparts, &a->o, &res, err);
	cmd_progress_clear();
	if (rc < 0)
		return -1;
	if (a->json) {
		json_t *doc = merged_json(a, res.id, res.parent, res.parts,
					  res.samples, res.bytes, res.shards);
		json_object_set_new(doc, "dataset",
				    cmd_json_text(a->o.out_dir));
		json_object_set_new(doc, "shard_bytes",
				    cmd_json_count(res.shard_bytes));
		json_object_set_new(doc, "linked", json_boolean(res.linked));
		cmd_json_add_replaced(doc, res.old_id, res.id, res.changes);
		json_object_set_new(doc, "seconds",
				    cmd_json_seconds(ch_now() - a->start));
		cmd_json_emit(doc);
		return 0;
	}
	print_merged(res.parts, res.samples, res.bytes, res.shards, res.id);
	cmd_print_replaced(a->o.out_dir, res.old_id, res.id, res.changes);
	return 0;
}

int cmd_merge(int argc, char **argv)
{
	struct merge_args a;
	struct ch_error err = {0};
	char *name = NULL;
	int status, rc = 0;

	memset(&a, 0, sizeof a);
	a.start = ch_now();
	a.parts = calloc((size_t)argc + 1, sizeof *a.parts);
	if (!a.parts) {
		ch_error_nomem(&err);
		return cmd_fail(&err);
	}
	status = cmd_parse_args(&cmd_merge_spec, argc, argv, &a);
	if (status == 0 && !a.o.name) {
		rc = cmd_default_name(a.o.out_dir, &name, &err);
		a.o.name = name;
	}
	if (status == 0 && rc == 0)
		rc = cmd_check_name(a.o.name, &err);
	if (status == 0 && rc == 0)
		rc = ch_ref_is_remote(a.o.out_dir) ? run_remote_merge(&a, &err)
						   : run_merge(&a, &err);
	free(name);
	free(a.url);
	free(a.parts);
	if (status != 0)
		return cmd_parsed_status(status);
	return rc < 0 ? cmd_fail(&err) : 0;
}
