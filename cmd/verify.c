/*
 * verify.c - chute verify: check a dataset's or shards' hashes.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "chute/remote.h"
#include "chute/check.h"
#include "cmd.h"

static const char *const verify_usage[] = {
	"verify [OPTIONS] DATASET|SHARD|REMOTE[@TAG|@ID]...",
	NULL,
};

struct verify_args {
	struct ch_verify_opts o;
	const char **paths; /* room for argc */
	size_t npaths;
	int json;
};

static int take_path(void *args, const char *arg, struct ch_error *err)
{
	struct verify_args *a = args;
	(void)err;
	a->paths[a->npaths++] = arg;
	return 0;
}

/* --part I/N: N at most CMD_MAX_PARTS (as chute pack's) */
static int take_part(const char *arg, void *args, struct ch_error *err)
{
	struct verify_args *a = args;
	return cmd_part_value(arg, 0, &a->o.part, &a->o.parts, err);
}

static const struct cmd_opt verify_opts[] = {
	CMD_OPT_FLAG('d', "deep", struct verify_args, o.deep,
		     "also decode every block and hash every sample"),
	CMD_HELP_OPT,
	CMD_OPT_INT('j', "jobs", "N", struct verify_args, o.jobs, 1, 1024,
		    "parallel workers (default: all cores)"),
	CMD_JSON_OPT(struct verify_args, "one JSON report on standard output"),
	CMD_OPT_CALL(0, "part", "I/N", take_part,
		     "only part I of N, I from 0: shards I, I+N, ..."),
	CMD_QUIET_OPT,
	CMD_OPT_END,
};

const struct cmd_spec cmd_verify_spec = {
	.name = "verify",
	.summary = "check the hashes of a dataset or shards",
	.usage = verify_usage,
	.opts = verify_opts,
	.extra = "REMOTE[@TAG|@ID]: a version checked where it lies, nothing "
		 "written locally\n(see chute-remote(7))\n"
		 "exit status: 0 all good, 1 problems found, 2 could not "
		 "check\n",
	.operand = take_path,
	.required = 1,
	.missing = "nothing to verify: name a dataset or shard",
};

/* Indexed by enum ch_problem_kind. */
static const char *const kind_names[] = {
	"manifest", "missing", "unexpected", "size", "file_hash",
	"structure", "block", "sample", "count",
};

struct verify_run {
	const char *arg;  /* the DATASET|SHARD being checked */
	int arg_is_dir;
	int remote;	  /* a remote version: problems name its objects */
	json_t *problems; /* --json: the report's array, else NULL */
	/* hashes of the paths of the shards with problems, a shard's
	 * problems in a row kept once: counted once sorted */
	uint64_t *bad;
	size_t nbad, cap;
};

/* Where a problem is: the shard's path as the user can open it. */
static char *problem_path(const struct verify_run *v, const char *shard)
{
	const char *slash = strrchr(v->arg, '/');
	size_t dir_len;
	char *out;

	if (!shard || v->remote)
		return strdup(shard ? shard : v->arg);
	if (v->arg_is_dir)
		dir_len = strlen(v->arg);
	else if (strlen(v->arg) > 4 &&
		 strcmp(v->arg + strlen(v->arg) - 4, ".chs") == 0)
		return strdup(v->arg); /* a lone shard */
	else
		dir_len = slash ? (size_t)(slash - v->arg) : 0;
	while (dir_len > 1 && v->arg[dir_len - 1] == '/')
		dir_len--;
	if (dir_len == 0)
		return strdup(shard);
	if (asprintf(&out, "%.*s/%s", (int)dir_len, v->arg, shard) < 0)
		return NULL;
	return out;
}

static void print_problem(const struct ch_problem *p, const char *path)
{
	cmd_print("%s:", path);
	if (p->block >= 0)
		printf(" block %" PRId64, p->block);
	if (p->offset >= 0)
		printf(" at byte %" PRId64, p->offset);
	if (p->block >= 0 || p->offset >= 0)
		putchar(':');
	if (p->key)
		cmd_print(" sample '%s':", p->key);
	cmd_print(" %s", p->message);
	putchar('\n');
	fflush(stdout); /* problems show up as they are found */
}

static json_t *int_or_null(int64_t v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

static json_t *str_or_null(const char *s)
{
	return s ? cmd_json_bytes(s, strlen(s)) : json_null();
}

static void add_problem(json_t *list, const struct ch_problem *p,
			const char *path)
{
	json_t *o = json_object();
	size_t k = (size_t)p->kind;

	json_object_set_new(o, "kind", json_string(
		k < sizeof kind_names / sizeof *kind_names ? kind_names[k] :
							     "other"));
	json_object_set_new(o, "path", str_or_null(path));
	json_object_set_new(o, "shard", str_or_null(p->shard));
	json_object_set_new(o, "block", int_or_null(p->block));
	json_object_set_new(o, "key", str_or_null(p->key));
	json_object_set_new(o, "offset", int_or_null(p->offset));
	json_object_set_new(o, "message", str_or_null(p->message));
	json_array_append_new(list, o);
}

/* Counts the shard for "FAILED: P problems in S shards": a list of path
 * hashes, sorted and counted at the end, so that a dataset with a
 * million bad shards costs 8 bytes a shard and n log n, not n^2 string
 * compares.  (A collision would only make the count one short.) */
static void remember_shard(struct verify_run *v, const char *path)
{
	uint64_t h = ch_hash64(path, strlen(path));

	if (v->nbad && v->bad[v->nbad - 1] == h)
		return;
	if (v->nbad == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 16;
		uint64_t *bad = realloc(v->bad, cap * sizeof *bad);
		if (!bad)
			return; /* the count is a courtesy, not worth failing */
		v->bad = bad;
		v->cap = cap;
	}
	v->bad[v->nbad++] = h;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static size_t count_bad_shards(struct verify_run *v)
{
	size_t n = 0;

	if (v->nbad)
		qsort(v->bad, v->nbad, sizeof *v->bad, cmp_u64);
	for (size_t i = 0; i < v->nbad; i++)
		n += i == 0 || v->bad[i] != v->bad[i - 1];
	return n;
}

static void on_problem(const struct ch_problem *p, void *arg)
{
	struct verify_run *v = arg;
	char *path = problem_path(v, p->shard);

	if (v->problems) {
		add_problem(v->problems, p, path ? path : v->arg);
	} else {
		cmd_progress_clear(); /* the problem on a line of its own */
		print_problem(p, path ? path : v->arg);
	}
	if (p->shard && path)
		remember_shard(v, path);
	free(path);
}

/* ------------------------------------------------------------------ */

struct verify_totals {
	struct ch_verify_result sum;
	size_t ran, failed;
	json_t *errors;
};

/* A remote version where it lies, or a local folder, manifest or
 * shard. */
static int check(const char *path, const struct ch_verify_opts *o,
		 struct verify_run *v, struct ch_verify_result *res,
		 struct ch_error *err)
{
	struct ch_store *st;
	struct ch_ref ref;
	v->remote = 0;
	if (ch_ref_parse(path, &ref, err) < 0)
		return -1;
	if (!ref.remote) {
		ch_ref_release(&ref);
		return ch_verify(path, o, res, err);
	}
	v->remote = 1;
	int rc = o->deep ? ch_error_usage(err, "--deep decodes every block: "
					  "pull '%s' and verify the folder",
					  path)
			 : ch_store_open(&st, ref.remote, NULL, err);
	if (rc == 0) {
		rc = ch_remote_verify(st, ref.at, o, res, err);
		ch_store_close(st);
	}
	ch_ref_release(&ref);
	return rc;
}

/* Returns 0 when the check ran, else the exit status of why it could
 * not. */
static int verify_one(const char *path, struct ch_verify_opts *o,
		      struct verify_run *v, struct verify_totals *t)
{
	struct ch_verify_result res;
	struct ch_error err = {0};
	struct stat st;

	v->arg = path;
	v->arg_is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
	memset(&res, 0, sizeof res);
	int rc = check(path, o, v, &res, &err);
	cmd_progress_clear();
	if (rc < 0) {
		int status = cmd_fail(&err);
		if (t->errors)
			json_array_append_new(t->errors,
					      str_or_null(err.msg));
		t->failed++;
		return status;
	}
	t->ran++;
	t->sum.shards += res.shards;
	t->sum.blocks += res.blocks;
	t->sum.samples += res.samples;
	t->sum.bytes += res.bytes;
	t->sum.problems += res.problems;
	return 0;
}

static void print_summary(const struct verify_totals *t, size_t bad_shards)
{
	const struct ch_verify_result *s = &t->sum;
	char a[CMD_COUNT_TEXT], b[CMD_COUNT_TEXT], c[CMD_COUNT_TEXT];
	char size[CMD_SIZE_TEXT];

	if (t->ran == 0)
		return; /* the errors on stderr say it all */
	if (s->problems == 0 && t->failed == 0) {
		printf("ok: %s, %s, %s, %s\n",
		       cmd_count_text(s->shards, "shard", "shards", a),
		       cmd_count_text(s->blocks, "block", "blocks", b),
		       cmd_count_text(s->samples, "sample", "samples", c),
		       cmd_size_text(s->bytes, size));
		return;
	}
	printf("FAILED: %s in %s",
	       cmd_count_text(s->problems, "problem", "problems", a),
	       cmd_count_text(bad_shards, "shard", "shards", b));
	if (t->failed)
		printf("; %zu could not be checked", t->failed);
	putchar('\n');
}

static void print_report(const struct verify_totals *t, json_t *problems)
{
	const struct ch_verify_result *s = &t->sum;
	json_t *doc = json_object();

	json_object_set_new(doc, "ok", json_boolean(s->problems == 0 &&
						    t->failed == 0));
	json_object_set_new(doc, "shards", json_integer((json_int_t)s->shards));
	json_object_set_new(doc, "blocks", json_integer((json_int_t)s->blocks));
	json_object_set_new(doc, "samples",
			    json_integer((json_int_t)s->samples));
	json_object_set_new(doc, "bytes", json_integer((json_int_t)s->bytes));
	json_object_set(doc, "problems", problems);
	json_object_set(doc, "errors", t->errors);
	cmd_json_print(doc, stdout);
	json_decref(doc);
}

static int parse_args(int argc, char **argv, struct ch_verify_opts *o,
		      const char **paths, size_t *npaths, int *json)
{
	struct verify_args a = {.o = *o, .paths = paths};
	int status = cmd_parse_args(&cmd_verify_spec, argc, argv, &a);
	*o = a.o;
	*npaths = a.npaths;
	*json = a.json;
	return status;
}

/* Both reported already: a path that could not be checked, whatever
 * the reason, makes it a failure to check (as an I/O error), and wins
 * over the problems found in the others. */
static int exit_status(const struct verify_totals *t)
{
	if (t->failed)
		return cmd_fail_reported(CH_ERR_IO);
	return t->sum.problems ? cmd_fail_reported(CH_ERR_DATA) : 0;
}

int cmd_verify(int argc, char **argv)
{
	struct ch_verify_opts o = {.jobs = ch_cpu_count()};
	struct verify_totals t;
	struct verify_run v = {0};
	const char **paths = calloc((size_t)argc + 1, sizeof *paths);
	size_t npaths = 0;
	int json = 0, status;

	memset(&t, 0, sizeof t);
	if (!paths) {
		struct ch_error err;
		ch_error_nomem(&err);
		return cmd_fail(&err);
	}
	status = parse_args(argc, argv, &o, paths, &npaths, &json);
	if (status != 0) {
		status = cmd_parsed_status(status);
		goto done;
	}
	if (json) {
		v.problems = json_array();
		t.errors = json_array();
	}
	o.on_problem = on_problem;
	o.arg = &v;
	o.cancel = cmd_catch_signals();
	o.progress = cmd_progress();
	for (size_t i = 0; i < npaths; i++) {
		status = verify_one(paths[i], &o, &v, &t);
		if (status > 128) /* stopped by a signal */
			goto done;
	}
	if (json)
		print_report(&t, v.problems);
	else
		print_summary(&t, count_bad_shards(&v));
	status = exit_status(&t);
done:
	json_decref(v.problems);
	json_decref(t.errors);
	free(v.bad);
	free(paths);
	return status;
}
