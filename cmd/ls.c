/*
 * ls.c - chute ls: one line per sample, in dataset order.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "chute/version.h"
#include "cmd.h"

static const char *const ls_usage[] = {
	"ls [--json] [--split NAME] DATASET|SHARD",
	NULL,
};

struct ls_args {
	const char *path, *split;
	int json;
};

static const struct cmd_opt ls_opts[] = {
	CMD_HELP_OPT,
	CMD_JSON_OPT(struct ls_args, "one JSON object per sample and line"),
	CMD_QUIET_OPT,
	CMD_OPT_TEXT(0, "split", "NAME", struct ls_args, split,
		     "only the samples of split NAME"),
	CMD_OPT_END,
};

const struct cmd_spec cmd_ls_spec = {
	.name = "ls",
	.summary = "list the samples of a dataset or shard",
	.usage = ls_usage,
	.opts = ls_opts,
	.extra = "each line: KEY, a tab, then FIELD:SIZE for each field\n",
	CMD_OPERAND1(struct ls_args, path),
	.too_many = "give one dataset or shard",
	.required = 1,
	.missing = "nothing to list: name a dataset or shard",
};

/* Millions of short lines: one big buffer instead of a write per line.
 * From the heap, not a static array: every command's LeakSanitizer exit
 * scan would fault in the megabyte of a static one (256 pages) untouched. */
enum { OUT_BUFFER = 1 << 20 };

static void print_text(const struct ch_shard *sh, uint64_t i,
		       const struct ch_sample_info *info)
{
	struct ch_field_info f;

	cmd_put_text(stdout, info->key, info->key_len);
	for (uint32_t k = 0; k < info->nfields; k++) {
		ch_shard_field(sh, i, k, &f);
		putchar(k ? ' ' : '\t');
		cmd_put(stdout, f.name);
		printf(":%" PRIu64, f.size);
	}
	putchar('\n');
}

static int print_json(const struct ch_shard *sh, uint64_t i,
		      const struct ch_sample_info *info, const char *shard,
		      uint64_t number)
{
	json_t *o = json_object(), *fields = json_object();
	struct ch_field_info f;
	char hash[17];
	int rc;

	snprintf(hash, sizeof hash, "%016" PRIx64, info->hash);
	json_object_set_new(o, "key", cmd_json_bytes(info->key, info->key_len));
	json_object_set_new(o, "shard", cmd_json_bytes(shard, strlen(shard)));
	json_object_set_new(o, "sample", json_integer((json_int_t)number));
	json_object_set_new(o, "hash", json_string(hash));
	for (uint32_t k = 0; k < info->nfields; k++) {
		ch_shard_field(sh, i, k, &f);
		json_object_set_new(fields, f.name,
				    json_integer((json_int_t)f.size));
	}
	json_object_set_new(o, "fields", fields);
	rc = cmd_json_print(o, stdout);
	json_decref(o);
	return rc;
}

/* Returns 0, 1 when stdout is gone (a quiet end), or -1 on error. */
static int list_shard(struct ch_dataset *ds, size_t s, int json,
		      struct ch_error *err)
{
	const struct ch_manifest_shard *ms = &ds->manifest.shards[s];
	struct ch_shard *sh;
	struct ch_sample_info info;
	int rc = ch_dataset_shard(ds, s, &sh, err);

	if (rc < 0)
		return rc;
	for (uint64_t i = 0; i < ch_shard_sample_count(sh); i++) {
		ch_shard_sample(sh, i, &info);
		if (json)
			print_json(sh, i, &info, ms->path,
				   ms->first_sample + i);
		else
			print_text(sh, i, &info);
		if (ferror(stdout))
			goto write_error;
	}
	return 0;
write_error:
	if (errno == EPIPE)
		return 1;
	ch_error_errno(err, errno, "cannot write to standard output");
	return -1;
}

/* The samples of one split, in dataset order: its file lists their
 * numbers ascending, so shards come one after the other. */
static int list_split(struct ch_dataset *ds, const char *name, int json,
		      struct ch_error *err)
{
	uint64_t *ids = NULL, n = 0;
	struct ch_sample_info info;
	int rc = 0;

	if ((rc = ch_split_load(ds, name, &ids, &n, err)) < 0)
		return rc;
	for (uint64_t k = 0; k < n && rc == 0; k++) {
		struct ch_shard *sh;
		size_t s;
		uint64_t i;

		if ((rc = ch_dataset_locate(ds, ids[k], &s, &i, err)) < 0 ||
		    (rc = ch_dataset_shard(ds, s, &sh, err)) < 0)
			break;
		ch_shard_sample(sh, i, &info);
		if (json)
			print_json(sh, i, &info, ds->manifest.shards[s].path,
				   ids[k]);
		else
			print_text(sh, i, &info);
		if (ferror(stdout))
			rc = errno == EPIPE ? 1 : ch_error_errno(err, errno,
					"cannot write to standard output");
	}
	free(ids);
	return rc;
}

static int parse_args(int argc, char **argv, const char **path, int *json,
		      const char **split)
{
	struct ls_args a = {0};
	int status = cmd_parse_args(&cmd_ls_spec, argc, argv, &a);
	*path = a.path;
	*json = a.json;
	*split = a.split;
	return status;
}

int cmd_ls(int argc, char **argv)
{
	struct ch_dataset ds;
	struct ch_error err = {0};
	const char *path = NULL, *split = NULL;
	int json = 0, status, rc = 0;

	status = parse_args(argc, argv, &path, &json, &split);
	if (status != 0)
		return cmd_parsed_status(status);
	memset(&ds, 0, sizeof ds);
	if (ch_dataset_open(&ds, path, &err) < 0)
		return cmd_fail(&err);
	/* stdout holds it until exit; without it, stdout's own buffer */
	char *out_buffer = malloc(OUT_BUFFER);
	if (out_buffer)
		setvbuf(stdout, out_buffer, _IOFBF, OUT_BUFFER);
	if (split)
		rc = list_split(&ds, split, json, &err);
	for (size_t s = 0; !split && s < ds.manifest.nshards && rc == 0; s++)
		rc = list_shard(&ds, s, json, &err);
	if (rc == 0 && fflush(stdout) == EOF)
		rc = errno == EPIPE ? 1 : ch_error_errno(&err, errno,
				"cannot write to standard output");
	ch_dataset_release(&ds);
	return rc < 0 ? cmd_fail(&err) : 0;
}
