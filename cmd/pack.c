/*
 * pack.c - chute pack: files, lists and archives into shards + manifest.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chute/pack.h"
#include "cmd.h"

static const char *const pack_usage[] = {
	"pack [OPTIONS] SRC... -o DIR",
	NULL,
};

/* ------------------------------------------------------------------ */
/* Options                                                              */

struct pack_args {
	struct ch_pack_opts o;
	const char **sources;
	size_t nsources, stdin_lists;
	const char **exclude, **include; /* argc long each */
	size_t nexclude, ninclude;
	const char *part;  /* --part as given, or NULL */
	uint64_t parts;	   /* --parts, 0 if not given */
	int null_sep, json;
};

/* "256M" is bytes (and the default sample cap), "10000s" is samples. */
static int parse_shard_size(const char *s, void *args, struct ch_error *err)
{
	struct ch_pack_opts *o = &((struct pack_args *)args)->o;
	size_t len = strlen(s);
	char *end;

	if (len > 1 && s[len - 1] == 's') {
		errno = 0;
		unsigned long long v = strtoull(s, &end, 10);
		if (s[0] >= '0' && s[0] <= '9' && end == s + len - 1 &&
		    !errno && v > 0) {
			o->shard_samples = v;
			o->shard_bytes = 0;
			return 0;
		}
		return ch_error_usage(err, "invalid value '%s' for --shard-size: "
				      "expected a sample count above 0 before "
				      "the s", s);
	}
	o->shard_samples = CH_SHARD_SAMPLES_DEFAULT;
	return cmd_size_value("--shard-size", s, &o->shard_bytes, err);
}

static int take_label_from(const char *arg, void *args,
			   struct ch_error *err)
{
	if (strcmp(arg, "dir") != 0)
		return ch_error_usage(err, "invalid value '%s' for --label-from: "
				      "expected 'dir'", arg);
	((struct pack_args *)args)->o.label_from = "dir";
	return 0;
}

static int take_source(void *args, const char *arg, struct ch_error *err)
{
	struct pack_args *a = args;
	(void)err;
	a->sources[a->nsources++] = arg;
	if (strcmp(arg, "-") == 0)
		a->stdin_lists++;
	return 0;
}

static int check_sources(void *args, struct ch_error *err)
{
	struct pack_args *a = args;
	if (!a->o.out_dir)
		return ch_error_usage(err, "no output folder given: use -o DIR");
	if (a->stdin_lists > 1)
		return ch_error_usage(err, "standard input (-) given more than "
				      "once");
	if (a->null_sep && !a->stdin_lists)
		return ch_error_usage(err, "--null applies to a list on stdin, "
				      "and no - was given");
	return 0;
}

/* --part I/N and --parts N: N at most CMD_MAX_PARTS */
#define T struct pack_args
static const struct cmd_opt pack_opts[] = {
	CMD_OPT_SIZE('b', "block-size", "SIZE", T, o.block_size,
		     "raw bytes per block (default 1M; 16K with --dict)"),
	CMD_OPT_FLAG(0, "dict", T, o.dict, "train a zstd dictionary per shard"),
	CMD_OPT_LIST(0, "exclude", "GLOB", T, exclude, nexclude, 0,
		     "leave out files and folders GLOB matches (repeatable)"),
	CMD_OPT_FLAG(0, "force", T, o.force,
		     "replace a dataset even if its fields, labels or splits "
		     "are lost"),
	CMD_HELP_OPT,
	CMD_OPT_LIST(0, "include", "GLOB", T, include, ninclude, 0,
		     "pack only files GLOB matches (repeatable)"),
	CMD_OPT_INT('j', "jobs", "N", T, o.jobs, 1, 1024,
		    "parallel workers (default: all cores)"),
	CMD_JSON_OPT(T, "print what was written as one JSON object"),
	CMD_OPT_FLAG(0, "keep-order", T, o.keep_order,
		     "keep input order instead of sorting by key"),
	CMD_OPT_CALL(0, "label-from", "dir", take_label_from,
		     "add a cls field: index of the parent folder"),
	CMD_OPT_INT('l', "level", "N", T, o.level, 0, 19,
		    "zstd level, 1 to 19, or 0: raw (default 3)"),
	CMD_OPT_SIZE(0, "max-sample-size", "SIZE", T, o.max_sample_size,
		     "refuse larger samples, at most 16G (default 1G)"),
	CMD_OPT_SIZE('m', "memory", "SIZE", T, o.memory,
		     "file list held in memory before spilling (default 64M)"),
	CMD_OPT_TEXT('n', "name", "NAME", T, o.name,
		     "dataset and shard name (default: DIR's name)"),
	CMD_OPT_FLAG('0', "null", T, null_sep,
		     "the list on stdin is NUL-separated"),
	CMD_OPT_TEXT('o', "output", "DIR", T, o.out_dir,
		     "dataset folder to create or replace"),
	CMD_OPT_TEXT(0, "part", "I/N", T, part,
		     "pack part I of N, I from 0 (default: from Slurm)"),
	CMD_OPT_U64(0, "parts", "N", T, parts, 1, CMD_MAX_PARTS,
		    "N parts, I from $JOB_COMPLETION_INDEX"),
	CMD_QUIET_OPT,
	CMD_OPT_CALL('s', "shard-size", "SIZE", parse_shard_size,
		     "bytes per shard (default 256M), or samples: 10000s"),
	CMD_OPT_END,
};
#undef T

const struct cmd_spec cmd_pack_spec = {
	.name = "pack",
	.summary = "pack files into compressed, checksummed shards",
	.usage = pack_usage,
	.opts = pack_opts,
	.extra = "SRC is a folder (files KEY.FIELD, searched recursively), an\n"
		 "archive (tar, tar.gz, tar.zst, zip), the http(s):// or s3://\n"
		 "URL of an archive or a file (read while it downloads), or -\n"
		 "for a list of file paths on standard input.  SIZE takes K, M\n"
		 "and G suffixes.  Hidden files and folders (.name) and the\n"
		 "output folder are never packed.  A GLOB without / matches a\n"
		 "file's or a folder's name, one with / the path from the\n"
		 "source's top.  A part holds the samples whose key's XXH3-64\n"
		 "is I modulo N; chute merge makes one dataset of the N parts.\n",
	.operand = take_source,
	.required = 1,
	.missing = "no source given: name a folder, an archive or - for a "
		   "list on stdin",
	.check = check_sources,
};

/* ------------------------------------------------------------------ */
/* Parts: --part I/N, or the index a scheduler gives each task          */

/* A Slurm array whose ids are not first, first+1, ... (--array=0-15:2,
 * --array=0,3,9) would pack parts that overlap or leave samples out
 * (ID - MIN is no part's index): refused before anything is read. */
static int check_slurm_dense(struct ch_error *err)
{
	const char *step = getenv("SLURM_ARRAY_TASK_STEP");
	const char *min = getenv("SLURM_ARRAY_TASK_MIN");
	const char *max = getenv("SLURM_ARRAY_TASK_MAX");
	const char *count = getenv("SLURM_ARRAY_TASK_COUNT");
	uint64_t lo, hi, n;

	if (step && *step && strcmp(step, "1") != 0)
		return ch_error_usage(err, "a Slurm array with a step "
				      "(SLURM_ARRAY_TASK_STEP=%s) leaves parts "
				      "without a task: use --array=FIRST-LAST "
				      "with no step, or give --part I/N", step);
	if (!min || !*min || !max || !*max || !count || !*count)
		return 0;
	if (cmd_u64_value("SLURM_ARRAY_TASK_MIN", min, 0, UINT32_MAX, &lo,
			  err) < 0 ||
	    cmd_u64_value("SLURM_ARRAY_TASK_MAX", max, lo, UINT32_MAX, &hi,
			  err) < 0 ||
	    cmd_u64_value("SLURM_ARRAY_TASK_COUNT", count, 1, UINT32_MAX, &n,
			  err) < 0)
		return -1;
	if (hi - lo + 1 != n)
		return ch_error_usage(err, "a Slurm array with gaps (%llu "
				      "tasks from %llu to %llu) leaves parts "
				      "without a task: use "
				      "--array=FIRST-LAST, or give --part I/N",
				      (unsigned long long)n,
				      (unsigned long long)lo,
				      (unsigned long long)hi);
	return 0;
}

/* The task's index from the environment: if k8s_too, Kubernetes'
 * Indexed Job (JOB_COMPLETION_INDEX, which says no count: --parts does),
 * else a Slurm array's task id counted from the array's first
 * (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN), the array contiguous.
 * Returns 1 with *index set, 0 if neither is there, -1 with err filled
 * if bad. */
static int index_from_env(int k8s_too, uint64_t *index, struct ch_error *err)
{
	const char *k8s = getenv("JOB_COMPLETION_INDEX");
	const char *id = getenv("SLURM_ARRAY_TASK_ID");
	const char *min = getenv("SLURM_ARRAY_TASK_MIN");
	uint64_t first = 0;

	if (k8s_too && k8s && *k8s)
		return cmd_u64_value("JOB_COMPLETION_INDEX", k8s, 0,
				     CMD_MAX_PARTS - 1, index, err) < 0 ? -1
									: 1;
	if (!id || !*id)
		return 0;
	if (check_slurm_dense(err) < 0)
		return -1;
	if (cmd_u64_value("SLURM_ARRAY_TASK_ID", id, 0, UINT32_MAX, index,
			  err) < 0 ||
	    (min && *min && cmd_u64_value("SLURM_ARRAY_TASK_MIN", min, 0,
					  *index, &first, err) < 0))
		return -1;
	*index -= first;
	return 1;
}

/* --part wins; then --parts N with the index from the environment; then
 * a Slurm array, whole (SLURM_ARRAY_TASK_COUNT parts).  Else the whole
 * dataset. */
static int resolve_part(struct pack_args *a, struct ch_error *err)
{
	const char *count = getenv("SLURM_ARRAY_TASK_COUNT");
	uint64_t index = 0, n = a->parts;
	int found;

	if (a->part && a->parts)
		return ch_error_usage(err, "give either --part I/N or --parts "
				      "N, not both");
	if (a->part)
		return cmd_part_value(a->part, 1, &a->o.part, &a->o.parts,
				      err);
	if (!a->parts && !(count && *count && getenv("SLURM_ARRAY_TASK_ID")))
		return 0;
	found = index_from_env(a->parts != 0, &index, err);
	if (found < 0)
		return -1;
	if (!found)
		return ch_error_usage(err, "--parts %llu needs the index of "
				      "the part: set $JOB_COMPLETION_INDEX, "
				      "or give --part I/N",
				      (unsigned long long)n);
	if (!n && cmd_u64_value("SLURM_ARRAY_TASK_COUNT", count, 1,
				CMD_MAX_PARTS, &n, err) < 0)
		return -1;
	if (index >= n)
		return ch_error_usage(err, "part %llu of %llu: parts are "
				      "numbered from 0 to %llu",
				      (unsigned long long)index,
				      (unsigned long long)n,
				      (unsigned long long)n - 1);
	a->o.part = index;
	a->o.parts = n;
	return 0;
}

/* Returns 0 to go on, -1 after --help, or the exit status. */
static int parse_args(struct pack_args *a, int argc, char **argv)
{
	struct ch_error err = {0};
	int status = cmd_parse_args(&cmd_pack_spec, argc, argv, a);

	if (status != 0)
		return status;
	return resolve_part(a, &err) < 0 ? cmd_fail(&err) : 0;
}

/* ------------------------------------------------------------------ */
/* What was written                                                     */

static void print_text(const struct pack_args *a,
		       const struct ch_pack_result *res)
{
	char samples[CMD_COUNT_TEXT], shards[CMD_COUNT_TEXT];
	char size[CMD_SIZE_TEXT];

	if (a->o.parts)
		printf("part %" PRIu64 " of %" PRIu64 ": ", a->o.part,
		       a->o.parts);
	printf("packed %s (%s) into %s, id %s\n",
	       cmd_count_text(res->samples, "sample", "samples", samples),
	       cmd_size_text(res->bytes, size),
	       cmd_count_text(res->shards, "shard", "shards", shards), res->id);
	cmd_print_replaced(a->o.out_dir, res->old_id, res->id, res->changes);
}

static void print_json(const struct pack_args *a,
		       const struct ch_pack_result *res, double seconds)
{
	json_t *doc = cmd_json_version(res->id, res->parent);

	json_object_set_new(doc, "dataset", cmd_json_text(a->o.out_dir));
	json_object_set_new(doc, "name", cmd_json_text(a->o.name));
	json_object_set_new(doc, "part", a->o.parts ? cmd_json_count(a->o.part)
						    : json_null());
	json_object_set_new(doc, "parts", a->o.parts ? cmd_json_count(a->o.parts)
						     : json_null());
	json_object_set_new(doc, "samples", cmd_json_count(res->samples));
	json_object_set_new(doc, "bytes", cmd_json_count(res->bytes));
	json_object_set_new(doc, "shards", cmd_json_count(res->shards));
	json_object_set_new(doc, "shard_bytes",
			    cmd_json_count(res->shard_bytes));
	cmd_json_add_replaced(doc, res->old_id, res->id, res->changes);
	json_object_set_new(doc, "seconds", cmd_json_seconds(seconds));
	cmd_json_emit(doc);
}

/* name: where the default name goes (the caller frees it). */
static int run_pack(struct pack_args *a, char **name, struct ch_error *err)
{
	struct ch_pack_result res;
	double start = ch_now();
	int rc;

	if (!a->o.name) {
		if (cmd_default_name(a->o.out_dir, name, err) < 0)
			return -1;
		a->o.name = *name;
	}
	a->o.nexclude = a->nexclude;
	a->o.ninclude = a->ninclude;
	if (cmd_check_name(a->o.name, err) < 0)
		return -1;
	a->o.progress = cmd_progress();
	a->o.list_fd = STDIN_FILENO;
	a->o.list_sep = a->null_sep ? 0 : '\n';
	a->o.cancel = cmd_catch_signals();
	memset(&res, 0, sizeof res);
	rc = ch_pack(a->sources, a->nsources, &a->o, &res, err);
	cmd_progress_clear();
	if (rc < 0)
		return -1;
	if (a->json)
		print_json(a, &res, ch_now() - start);
	else
		print_text(a, &res);
	return 0;
}

int cmd_pack(int argc, char **argv)
{
	struct pack_args a;
	struct ch_error err = {0};
	char *name = NULL;
	int status = 0, rc = 0;

	memset(&a, 0, sizeof a);
	ch_pack_opts_init(&a.o);
	a.sources = calloc((size_t)argc + 1, sizeof *a.sources);
	a.exclude = calloc((size_t)argc + 1, sizeof *a.exclude);
	a.include = calloc((size_t)argc + 1, sizeof *a.include);
	if (!a.sources || !a.exclude || !a.include) {
		rc = ch_error_nomem(&err);
	} else {
		a.o.exclude = a.exclude;
		a.o.include = a.include;
		status = parse_args(&a, argc, argv);
		if (status == 0)
			rc = run_pack(&a, &name, &err);
	}
	free(name);
	free(a.sources);
	free(a.exclude);
	free(a.include);
	if (status != 0)
		return cmd_parsed_status(status);
	return rc < 0 ? cmd_fail(&err) : 0;
}
