/*
 * split.c - chute split: deterministic train / val / test splits.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chute/version.h"
#include "cmd.h"

static const char *const split_usage[] = {
	"split DATASET --val F [--test F] [--seed S] [--group REGEX] [--json]",
	NULL,
};

struct split_args {
	const char *path;
	int json, have_val;
	long val, test; /* in units of 0.0001 */
	struct ch_split_opts o;
};

/* "0.05", ".05", "0" or "0.1250": a fraction below 1 with at most four
 * significant digits after the point, as a count of 0.0001. */
static int parse_fraction(const char *opt, const char *s, long *units,
			  struct ch_error *err)
{
	const char *p = s;
	long v = 0;
	int digits = 0, any = 0;

	if (*p == '0') {
		p++;
		any = 1;
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, any = 1) {
			if (digits < 4)
				v = v * 10 + (*p - '0');
			else if (*p != '0')
				break;
			digits++;
		}
	}
	if (!any || *p != '\0')
		return ch_error_usage(err, "invalid value '%s' for %s: expected "
				      "a fraction below 1 with at most 4 digits "
				      "after the point (such as 0.05)", s, opt);
	for (; digits < 4; digits++)
		v *= 10;
	*units = v;
	return 0;
}

static int take_test(const char *arg, void *args, struct ch_error *err)
{
	struct split_args *a = args;
	return parse_fraction("--test", arg, &a->test, err);
}

static int take_val(const char *arg, void *args, struct ch_error *err)
{
	struct split_args *a = args;
	a->have_val = 1;
	return parse_fraction("--val", arg, &a->val, err);
}

static int check_shares(void *args, struct ch_error *err)
{
	struct split_args *a = args;
	if (!a->have_val)
		return ch_error_usage(err, "no --val given: say which share of "
				      "the samples goes to val (0 for none)");
	if (a->val + a->test >= 10000)
		return ch_error_usage(err, "--val and --test add up to 1 or "
				      "more: nothing would be left for train");
	a->o.val = (double)a->val / 10000;
	a->o.test = (double)a->test / 10000;
	return 0;
}

/* --seed's range is the manifest's (ch_split checks it too, for the
 * callers of the library). */
static const struct cmd_opt split_opts[] = {
	CMD_OPT_TEXT(0, "group", "REGEX", struct split_args, o.group,
		     "samples with the same first group stay together"),
	CMD_HELP_OPT,
	CMD_JSON_OPT(struct split_args, "print the summary as one JSON object"),
	CMD_QUIET_OPT,
	CMD_OPT_U64(0, "seed", "S", struct split_args, o.seed, 0, INT64_MAX,
		    "seed of the assignment (default 0)"),
	CMD_OPT_CALL(0, "test", "F", take_test,
		     "share of the samples for test (default 0)"),
	CMD_OPT_CALL(0, "val", "F", take_val,
		     "share of the samples for val (required)"),
	CMD_OPT_END,
};

const struct cmd_spec cmd_split_spec = {
	.name = "split",
	.summary = "make deterministic train, val and test splits",
	.usage = split_usage,
	.opts = split_opts,
	.extra = "F is a fraction below 1 with at most 4 digits after the "
		 "point (0.05); train\ngets the rest.  exit status: 0 done, 1 "
		 "the data failed a check, 2 usage or\nI/O error\n",
	CMD_OPERAND1(struct split_args, path),
	.too_many = "give one dataset",
	.required = 1,
	.missing = "nothing to split: name a dataset",
	.check = check_shares,
};

/* ------------------------------------------------------------------ */
/* The summary                                                          */

static double share(uint64_t n, uint64_t total)
{
	return total ? (double)n / (double)total : 0.0;
}

static void print_text(const struct ch_split_result *r)
{
	const struct ch_manifest *m = &r->manifest;
	char samples[CMD_COUNT_TEXT], splits[CMD_COUNT_TEXT];

	for (size_t i = 0; i < m->nsplits; i++) {
		const struct ch_manifest_split *sp = &m->splits[i];
		const struct ch_split_tally *t = &r->tallies[i];

		printf("%s\t%" PRIu64 "\t%.2f%%", sp->name, sp->samples,
		       100.0 * share(sp->samples, m->samples));
		for (size_t c = 0; t->classes && c < m->nclasses; c++) {
			putchar(c ? ' ' : '\t');
			cmd_put(stdout, m->classes[c]);
			printf(":%" PRIu64, t->classes[c]);
		}
		if (t->classes && t->unlabelled)
			printf(" (%" PRIu64 " without a class)", t->unlabelled);
		putchar('\n');
	}
	printf("split %s into %s, id %s\n",
	       cmd_count_text(m->samples, "sample", "samples", samples),
	       cmd_count_text(m->nsplits, "split", "splits", splits), m->id);
}

static json_t *classes_json(const struct ch_manifest *m,
			    const struct ch_split_tally *t)
{
	json_t *o;

	if (!t->classes)
		return json_null();
	o = json_object();
	for (size_t c = 0; c < m->nclasses; c++)
		json_object_set_new(o, m->classes[c],
				    json_integer((json_int_t)t->classes[c]));
	return o;
}

static json_t *split_json(const struct ch_manifest *m, size_t i,
			  const struct ch_split_tally *t)
{
	const struct ch_manifest_split *sp = &m->splits[i];
	json_t *o = json_object();

	json_object_set_new(o, "path", json_string(sp->path));
	json_object_set_new(o, "samples", json_integer((json_int_t)sp->samples));
	json_object_set_new(o, "share", json_real(share(sp->samples,
							m->samples)));
	json_object_set_new(o, "fraction", json_real(sp->fraction));
	json_object_set_new(o, "classes", classes_json(m, t));
	json_object_set_new(o, "unlabelled", t->classes ?
			    json_integer((json_int_t)t->unlabelled) :
			    json_null());
	return o;
}

/* 15 significant digits, so that a share of 0.05 reads "0.05". */
static int print_json(const struct ch_split_result *r, const char *path,
		      double seconds)
{
	const struct ch_manifest *m = &r->manifest;
	json_t *doc = json_object(), *splits = json_object();
	const char *group = m->split_rule.group;
	int rc;

	for (size_t i = 0; i < m->nsplits; i++)
		json_object_set_new(splits, m->splits[i].name,
				    split_json(m, i, &r->tallies[i]));
	json_object_set_new(doc, "id", json_string(m->id));
	json_object_set_new(doc, "parent", cmd_json_id(m->parent));
	json_object_set_new(doc, "replaced", cmd_json_id(r->replaced));
	json_object_set_new(doc, "dataset", cmd_json_text(path));
	json_object_set_new(doc, "samples", json_integer((json_int_t)m->samples));
	json_object_set_new(doc, "seed",
			    json_integer((json_int_t)m->split_rule.seed));
	json_object_set_new(doc, "group", group ? cmd_json_bytes(group,
							strlen(group)) :
						  json_null());
	json_object_set_new(doc, "splits", splits);
	json_object_set_new(doc, "seconds", cmd_json_seconds(seconds));
	rc = json_dumpf(doc, stdout, JSON_COMPACT | JSON_REAL_PRECISION(15));
	if (rc == 0 && putchar('\n') == EOF)
		rc = -1;
	json_decref(doc);
	return rc;
}

int cmd_split(int argc, char **argv)
{
	struct split_args a = {0};
	struct ch_split_result res;
	struct ch_error err = {0};
	double start = ch_now();
	int status;

	status = cmd_parse_args(&cmd_split_spec, argc, argv, &a);
	if (status != 0)
		return cmd_parsed_status(status);
	a.o.cancel = cmd_catch_signals();
	a.o.progress = cmd_progress();
	int rc = ch_split(a.path, &a.o, &res, &err);
	cmd_progress_clear();
	if (rc < 0)
		return cmd_fail(&err);
	if (a.json)
		print_json(&res, a.path, ch_now() - start);
	else
		print_text(&res);
	ch_split_result_release(&res);
	return 0;
}
