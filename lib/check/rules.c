/* check/rules.c - the rules of chute check by name, their defaults, and
 * the rules file that changes them (chute-check(1), RULES FILE). */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "check/internal.h"

static const char *const rule_names[CH_RULE_COUNT] = {
	"readable", "required-fields", "empty", "field-types", "duplicates",
	"leakage", "conflicting-labels", "near-duplicates", "eval-split",
	"labels", "size-outliers", "corruption",
};

const char *ch_check_rule_name(int rule)
{
	return rule >= 0 && rule < CH_RULE_COUNT ? rule_names[rule] : NULL;
}

/* The rule named name, or -1. */
static int ch_check_rule_find(const char *name)
{
	for (int i = 0; i < CH_RULE_COUNT; i++)
		if (strcmp(rule_names[i], name) == 0)
			return i;
	return -1;
}

void ch_check_opts_init(struct ch_check_opts *o)
{
	memset(o, 0, sizeof(*o));
	for (int i = 0; i < CH_RULE_COUNT; i++)
		o->level[i] = CH_LEVEL_FAIL;
	o->level[CH_RULE_SIZE_OUTLIERS] = CH_LEVEL_WARN;
	o->distance = 4;
	o->drift = 0.05;
	o->factor = 10;
	o->examples = 5;
}

static void free_names(char ***names, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		free((*names)[i]);
	free(*names);
	*names = NULL;
	*n = 0;
}

void ch_check_opts_release(struct ch_check_opts *o)
{
	free_names(&o->required, &o->nrequired);
	free_names(&o->label_fields, &o->nlabel_fields);
}

/* ------------------------------------------------------------------ */
/* The rules file                                                       */

struct rules_file {
	const char *path;
	struct ch_check_opts *o;
	struct ch_error *err;
};

static int bad(struct rules_file *f, const char *key, const char *expected)
{
	return ch_error_usage(f->err, "'%s': key '%s': expected %s", f->path,
			      key, expected);
}

/* Like bad, with the value found: "..., not \"maybe\"". */
static int bad_value(struct rules_file *f, const char *key, json_t *v,
		     const char *expected)
{
	char *got = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	ch_error_usage(f->err, "'%s': key '%s': expected %s, not %.100s",
		       f->path, key, expected, got ? got : "this");
	free(got);
	return -1;
}

static int parse_level(struct rules_file *f, const char *key, json_t *v,
		       enum ch_check_level *out)
{
	static const char *const names[] = { "off", "warn", "fail" };
	const char *s = json_string_value(v);
	for (int i = 0; s && i < 3; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum ch_check_level)i;
			return 0;
		}
	}
	return bad_value(f, key, v, "\"fail\", \"warn\" or \"off\"");
}

/* A number in [min, max] (an integer where whole is set). */
static int parse_number(struct rules_file *f, const char *key, json_t *v,
			double min, double max, int whole, double *out)
{
	char what[128];
	double x = json_number_value(v);
	if (!json_is_number(v) || (whole && !json_is_integer(v)) || x < min ||
	    x > max) {
		snprintf(what, sizeof(what), "%s from %g to %g",
			 whole ? "a whole number" : "a number", min, max);
		return bad_value(f, key, v, what);
	}
	*out = x;
	return 0;
}

/* A rule's parameter: the name it has in the file, and where it goes. */
static int parse_param(struct rules_file *f, int rule, const char *name,
		       const char *key, json_t *v)
{
	double x;
	if (rule == CH_RULE_LABELS && strcmp(name, "drift") == 0) {
		if (parse_number(f, key, v, 0, 1, 0, &x) < 0)
			return -1;
		f->o->drift = x;
	} else if (rule == CH_RULE_SIZE_OUTLIERS && strcmp(name, "factor") == 0) {
		if (parse_number(f, key, v, 1, 1e12, 0, &x) < 0)
			return -1;
		f->o->factor = x;
	} else if (rule == CH_RULE_NEAR_DUPLICATES &&
		   strcmp(name, "distance") == 0) {
		if (parse_number(f, key, v, 0, 64, 1, &x) < 0)
			return -1;
		f->o->distance = (int)x;
	} else {
		static const char *const params[CH_RULE_COUNT] = {
			[CH_RULE_LABELS] = "\"level\" or \"drift\"",
			[CH_RULE_SIZE_OUTLIERS] = "\"level\" or \"factor\"",
			[CH_RULE_NEAR_DUPLICATES] = "\"level\" or \"distance\"",
		};
		return bad(f, key, params[rule] ? params[rule] : "\"level\"");
	}
	return 0;
}

/* A level other than off for an opt-in rule asks for it, as its option
 * does. */
static int ask_opt_in(struct ch_check_opts *o, int rule)
{
	int on = o->level[rule] != CH_LEVEL_OFF;
	if (rule == CH_RULE_NEAR_DUPLICATES)
		o->near_duplicates = on;
	if (rule == CH_RULE_CORRUPTION)
		o->deep = on;
	return 0;
}

static int parse_rule(struct rules_file *f, const char *name, json_t *v)
{
	char key[256], sub[320];
	int rule = ch_check_rule_find(name);
	snprintf(key, sizeof(key), "rules.%s", name);
	if (rule < 0)
		return bad(f, key, "a rule: readable, required-fields, empty, "
			   "field-types, duplicates, leakage, conflicting-labels, "
			   "near-duplicates, eval-split, labels, size-outliers "
			   "or corruption");
	if (json_is_string(v))
		return parse_level(f, key, v, &f->o->level[rule]) < 0 ? -1 :
		       ask_opt_in(f->o, rule);
	if (!json_is_object(v))
		return bad(f, key, "a level string or an object");
	const char *pname;
	json_t *pv;
	json_object_foreach(v, pname, pv) {
		snprintf(sub, sizeof(sub), "%s.%s", key, pname);
		int rc = strcmp(pname, "level") == 0 ?
			 parse_level(f, sub, pv, &f->o->level[rule]) :
			 parse_param(f, rule, pname, sub, pv);
		if (rc < 0)
			return -1;
	}
	return ask_opt_in(f->o, rule);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "required", "label-fields": field names, sorted. */
static int parse_names(struct rules_file *f, const char *key, json_t *v,
		       char ***names, size_t *count)
{
	size_t i, n = json_array_size(v);
	json_t *item;
	if (!json_is_array(v))
		return bad(f, key, "an array of field names");
	free_names(names, count);
	if (!(*names = calloc(n ? n : 1, sizeof(char *))))
		return ch_error_nomem(f->err);
	json_array_foreach(v, i, item) {
		const char *s = json_string_value(item);
		if (!s || !*s)
			return bad(f, key, "an array of field names");
		if (!((*names)[(*count)++] = strdup(s)))
			return ch_error_nomem(f->err);
	}
	qsort(*names, n, sizeof(char *), cmp_str);
	return 0;
}

static int parse_top(struct rules_file *f, const char *key, json_t *v)
{
	double x;
	if (strcmp(key, "required") == 0)
		return parse_names(f, key, v, &f->o->required,
				   &f->o->nrequired);
	if (strcmp(key, "label-fields") == 0)
		return parse_names(f, key, v, &f->o->label_fields,
				   &f->o->nlabel_fields);
	if (strcmp(key, "examples") == 0) {
		if (parse_number(f, key, v, 0, 1000, 1, &x) < 0)
			return -1;
		f->o->examples = (size_t)x;
		return 0;
	}
	if (strcmp(key, "rules") == 0) {
		const char *name;
		json_t *rv;
		if (!json_is_object(v))
			return bad(f, key, "an object of rules");
		json_object_foreach(v, name, rv)
			if (parse_rule(f, name, rv) < 0)
				return -1;
		return 0;
	}
	return bad(f, key, "one of \"required\", \"label-fields\", "
		   "\"examples\", \"rules\"");
}

int ch_check_rules_read(struct ch_check_opts *o, const char *path,
			struct ch_error *err)
{
	struct rules_file f = { path, o, err };
	json_error_t je;
	const char *key;
	json_t *v, *doc = json_load_file(path, 0, &je);
	int rc = -1;
	if (!doc)
		return ch_error_usage(err, "'%s': %s (line %d, column %d)",
				      path, je.text, je.line, je.column);
	if (!json_is_object(doc)) {
		ch_error_usage(err, "'%s': expected a JSON object", path);
		goto out;
	}
	json_object_foreach(doc, key, v)
		if (parse_top(&f, key, v) < 0)
			goto out;
	rc = 0;
out:
	json_decref(doc);
	return rc;
}
