/*
 * check.c - chute check: validate a dataset before training.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "chute/visual.h"
#include "cmd.h"

static const char *const check_usage[] = {
	"check [OPTIONS] DATASET",
	NULL,
};

struct check_args {
	const char *path, *rules, *baseline, *html;
	int json, deep, near, allow_no_eval, jobs;
	int distance, examples; /* -1: not given */
	double drift;		/* < 0: not given */
};

/* A share of the samples, 0 to 1. */
static int parse_share(const char *opt, const char *s, double *out,
		       struct ch_error *err)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (!*s || *end || errno || !(v >= 0 && v <= 1))
		return ch_error_usage(err, "invalid value '%s' for %s: expected "
				      "a number from 0 to 1", s, opt);
	*out = v;
	return 0;
}

static int take_drift(const char *arg, void *args, struct ch_error *err)
{
	return parse_share("--drift", arg, &((struct check_args *)args)->drift,
			   err);
}

#define T struct check_args
static const struct cmd_opt check_opts[] = {
	CMD_OPT_FLAG(0, "allow-no-eval", T, allow_no_eval,
		     "a missing eval split warns instead of failing"),
	CMD_OPT_TEXT(0, "baseline", "REF", T, baseline,
		     "compare class proportions with an earlier version"),
	CMD_OPT_FLAG('d', "deep", T, deep,
		     "also decode every block and hash every sample"),
	CMD_OPT_INT(0, "distance", "N", T, distance, 0, 64,
		    "near-duplicate Hamming distance, 0 to 64 (default 4)"),
	CMD_OPT_CALL(0, "drift", "F", take_drift,
		     "labels: largest class share change allowed (default "
		     "0.05)"),
	CMD_OPT_INT(0, "examples", "N", T, examples, 0, 1000,
		    "example keys per rule, 0 to 1000 (default 5)"),
	CMD_HELP_OPT,
	CMD_OPT_TEXT(0, "html", "FILE", T, html,
		     "also write the report as one self-contained HTML page"),
	CMD_OPT_INT('j', "jobs", "N", T, jobs, 1, 1024,
		    "parallel threads (default: all cores)"),
	CMD_JSON_OPT(T, "one JSON report on standard output"),
	CMD_OPT_FLAG(0, "near-duplicates", T, near,
		     "also look for near-identical images across splits"),
	CMD_QUIET_OPT,
	CMD_OPT_TEXT(0, "rules", "FILE", T, rules,
		     "levels, thresholds, required and label fields from a "
		     "JSON file"),
	CMD_OPT_END,
};
#undef T

const struct cmd_spec cmd_check_spec = {
	.name = "check",
	.summary = "validate a dataset before training",
	.usage = check_usage,
	.opts = check_opts,
	.extra = "rules: readable, required-fields, empty, field-types, "
		 "duplicates, leakage,\nconflicting-labels, near-duplicates, "
		 "eval-split, labels, size-outliers,\ncorruption.  the rules "
		 "that failed are printed first.  exit status:\n0 no rule "
		 "failed, 1 a rule failed, 2 usage or I/O error\n",
	CMD_OPERAND1(struct check_args, path),
	.too_many = "give one dataset",
	.required = 1,
	.missing = "nothing to check: name a dataset",
};

/* The rules file first, then the command line, which wins. */
static int make_opts(const struct check_args *a, struct ch_check_opts *o,
		     struct ch_error *err)
{
	ch_check_opts_init(o);
	if (a->rules && ch_check_rules_read(o, a->rules, err) < 0)
		return -1;
	o->deep |= a->deep; /* a rules file may have asked for them */
	o->near_duplicates |= a->near;
	o->allow_no_eval = a->allow_no_eval;
	o->baseline = a->baseline;
	o->jobs = a->jobs;
	if (a->distance >= 0)
		o->distance = a->distance;
	if (a->drift >= 0)
		o->drift = a->drift;
	if (a->examples >= 0)
		o->examples = (size_t)a->examples;
	o->cancel = cmd_catch_signals();
	o->progress = cmd_progress();
	return 0;
}

/* ------------------------------------------------------------------ */
/* Text                                                                 */

static const char *status_word(enum ch_check_status s)
{
	return s == CH_STATUS_FAIL ? "FAIL" : s == CH_STATUS_WARN ? "WARN" :
								    "PASS";
}

/* "val s0042 (shards/ds-000001.chs)" */
static void print_ref(const struct ch_check_ref *r)
{
	if (r->split)
		cmd_print("%s ", r->split);
	cmd_print("%s (%s)", r->key ? r->key : "?", r->shard ? r->shard : "?");
}

static void print_example(int rule, const struct ch_check_example *ex)
{
	const struct ch_check_ref *at = &ex->at;

	fputs("  ", stdout);
	if (ex->has_other) {
		print_ref(at);
		fputs(rule == CH_RULE_NEAR_DUPLICATES ? " ~ " : " = ", stdout);
		print_ref(&ex->other);
		if (rule == CH_RULE_NEAR_DUPLICATES)
			cmd_print(" (distance %d)", ex->distance);
	} else if (rule == CH_RULE_LABELS) {
		cmd_print("%s class %" PRIu64 ": %.4f, baseline %.4f", at->split,
			  ex->value, ex->share, ex->baseline_share);
	} else if (rule == CH_RULE_SIZE_OUTLIERS) {
		char size[CMD_SIZE_TEXT], median[CMD_SIZE_TEXT];
		cmd_print("%s.%s %s (median %s) (%s)", at->key, ex->field,
			  cmd_size_text(ex->size, size),
			  cmd_size_text(ex->median, median), at->shard);
	} else if (!at->key) {
		cmd_print("%s: %s", at->shard, ex->message ? ex->message : "");
	} else {
		cmd_print("%s%s%s", at->key, ex->field ? "." : "",
			  ex->field ? ex->field : "");
		if (ex->message)
			cmd_print(": %s", ex->message);
		cmd_print(" (%s)", at->shard);
	}
	putchar('\n');
}

/* What the report adds to a rule's message: for a missing eval split,
 * the command line that makes one (the library names no command's
 * options).  NULL: nothing. */
static const char *rule_advice(int r, const struct ch_check_rule_result *rr)
{
	if (r == CH_RULE_EVAL_SPLIT && rr->status != CH_STATUS_PASS)
		return "chute split --val 0.05";
	return NULL;
}

/* The rules that failed, then those that warned, then those that
 * passed, each in the rules' order: a CI log shows what failed first. */
static void print_text(const struct ch_check_report *rep)
{
	static const enum ch_check_status order[] = {
		CH_STATUS_FAIL, CH_STATUS_WARN, CH_STATUS_PASS,
	};
	for (int k = 0; k < 3; k++) {
		for (int r = 0; r < CH_RULE_COUNT; r++) {
			const struct ch_check_rule_result *rr = &rep->rules[r];
			if (rr->status != order[k])
				continue;
			cmd_print("%s %s: %s", status_word(rr->status),
				  ch_check_rule_name(r),
				  rr->message ? rr->message : "");
			if (rule_advice(r, rr))
				cmd_print(" (%s)", rule_advice(r, rr));
			putchar('\n');
			for (size_t i = 0; i < rr->nexamples; i++)
				print_example(r, &rr->examples[i]);
		}
	}
	char rules[CMD_COUNT_TEXT];
	printf("check: %s, %u passed, %u warned, %u failed\n",
	       cmd_count_text(rep->passed + rep->warned + rep->failed, "rule",
			      "rules", rules),
	       rep->passed, rep->warned, rep->failed);
}

/* ------------------------------------------------------------------ */
/* JSON                                                                 */

static json_t *str_or_null(const char *s)
{
	return s ? cmd_json_bytes(s, strlen(s)) : json_null();
}

static json_t *ref_json(const struct ch_check_ref *r, json_t *o)
{
	json_object_set_new(o, "key", str_or_null(r->key));
	json_object_set_new(o, "shard", str_or_null(r->shard));
	json_object_set_new(o, "split", str_or_null(r->split));
	return o;
}

static json_t *example_json(int rule, const struct ch_check_example *ex)
{
	json_t *o = ref_json(&ex->at, json_object());
	char value[24];

	if (ex->field)
		json_object_set_new(o, "field", str_or_null(ex->field));
	if (ex->message)
		json_object_set_new(o, "message", str_or_null(ex->message));
	if (rule == CH_RULE_SIZE_OUTLIERS) {
		json_object_set_new(o, "size", json_integer((json_int_t)ex->size));
		json_object_set_new(o, "median",
				    json_integer((json_int_t)ex->median));
	}
	if (rule == CH_RULE_LABELS) {
		snprintf(value, sizeof value, "%" PRIu64, ex->value);
		json_object_set_new(o, "class", json_string(value));
		json_object_set_new(o, "share", json_real(ex->share));
		json_object_set_new(o, "baseline",
				    json_real(ex->baseline_share));
	}
	if (ex->has_other)
		json_object_set_new(o, "other", ref_json(&ex->other,
							 json_object()));
	if (rule == CH_RULE_NEAR_DUPLICATES)
		json_object_set_new(o, "distance", json_integer(ex->distance));
	return o;
}

static const char *status_name(enum ch_check_status s)
{
	return s == CH_STATUS_FAIL ? "fail" : s == CH_STATUS_WARN ? "warn" :
								    "pass";
}

static json_t *rule_json(int r, const struct ch_check_rule_result *rr)
{
	json_t *o = json_object(), *ex = json_array();

	json_object_set_new(o, "rule", json_string(ch_check_rule_name(r)));
	json_object_set_new(o, "status", json_string(status_name(rr->status)));
	json_object_set_new(o, "count", json_integer((json_int_t)rr->count));
	json_object_set_new(o, "unexamined",
			    json_integer((json_int_t)rr->unexamined));
	if (rr->message && rule_advice(r, rr))
		json_object_set_new(o, "message",
				    json_sprintf("%s (%s)", rr->message,
						 rule_advice(r, rr)));
	else
		json_object_set_new(o, "message", str_or_null(rr->message));
	for (size_t i = 0; i < rr->nexamples; i++)
		json_array_append_new(ex, example_json(r, &rr->examples[i]));
	json_object_set_new(o, "examples", ex);
	return o;
}

static json_t *labels_json(const struct ch_check_report *rep)
{
	const struct ch_check_labels *l = &rep->labels;
	json_t *o;
	char value[24];

	if (!rep->has_labels)
		return json_null();
	o = json_object();
	for (size_t g = 0; g < l->ngroups; g++) {
		json_t *counts = json_object();
		for (size_t v = 0; v < l->nvalues; v++) {
			snprintf(value, sizeof value, "%" PRIu64, l->values[v]);
			json_object_set_new(counts, value, json_integer(
				(json_int_t)l->groups[g].counts[v]));
		}
		json_object_set_new(o, l->groups[g].name, counts);
	}
	return o;
}

static int print_json(const struct ch_check_report *rep)
{
	json_t *doc = json_object(), *rules = json_array();
	int rc;

	for (int r = 0; r < CH_RULE_COUNT; r++)
		if (rep->rules[r].status != CH_STATUS_OFF)
			json_array_append_new(rules, rule_json(r, &rep->rules[r]));
	json_object_set_new(doc, "dataset", json_string(rep->id));
	json_object_set_new(doc, "name", str_or_null(rep->name));
	json_object_set_new(doc, "samples", json_integer((json_int_t)rep->samples));
	json_object_set_new(doc, "shards", json_integer((json_int_t)rep->shards));
	json_object_set_new(doc, "rules", rules);
	json_object_set_new(doc, "labels", labels_json(rep));
	json_object_set_new(doc, "passed", json_integer(rep->passed));
	json_object_set_new(doc, "warned", json_integer(rep->warned));
	json_object_set_new(doc, "failed", json_integer(rep->failed));
	rc = json_dumpf(doc, stdout, JSON_COMPACT | JSON_REAL_PRECISION(15));
	if (rc == 0 && putchar('\n') == EOF)
		rc = -1;
	json_decref(doc);
	return rc;
}

/* --html FILE: the page, replacing FILE at once (nothing partial). */
static int write_html(const struct check_args *a,
		      const struct ch_check_report *rep, struct ch_error *err)
{
	struct ch_buf page = {0};
	int rc = ch_check_html(a->path, rep, 0, &page, err);
	if (rc == 0)
		rc = ch_write_file_atomic(a->html, (const char *)page.data,
					  page.len, err);
	ch_buf_release(&page);
	return rc < 0 ? cmd_prefix_error(err, "cannot write the report '%s'",
					 a->html)
		      : 0;
}

/* A report file that cannot be written is refused before the check. */
static int html_writable(const char *path, struct ch_error *err)
{
	if (!path || ch_check_file_atomic(path, err) == 0)
		return 0;
	return cmd_prefix_error(err, "cannot write the report '%s'", path);
}

int cmd_check(int argc, char **argv)
{
	struct check_args a = {.distance = -1, .examples = -1, .drift = -1};
	struct ch_check_opts o;
	struct ch_check_report rep;
	struct ch_error err = {0};
	int status;

	status = cmd_parse_args(&cmd_check_spec, argc, argv, &a);
	if (status != 0)
		return cmd_parsed_status(status);
	if (html_writable(a.html, &err) < 0)
		return cmd_fail(&err);
	if (make_opts(&a, &o, &err) < 0) {
		ch_check_opts_release(&o);
		return cmd_fail(&err);
	}
	int rc = ch_check(a.path, &o, &rep, &err);
	cmd_progress_clear();
	if (rc < 0) {
		ch_check_opts_release(&o);
		return cmd_fail(&err);
	}
	if (a.json)
		print_json(&rep);
	else
		print_text(&rep);
	/* the report lists what failed */
	rc = rep.failed ? cmd_reported(&err, CH_ERR_DATA) : 0;
	if (a.html && write_html(&a, &rep, &err) < 0)
		rc = -1; /* the report file's failure wins */
	status = rc < 0 ? cmd_fail(&err) : 0;
	ch_check_report_release(&rep);
	ch_check_opts_release(&o);
	return status;
}
