/*
 * opts.c - option parsing, --help and error messages for the subcommands.
 *
 * getopt_long does the scanning; everything it would print itself is
 * printed here instead (opterr = 0), in our own words and with a
 * suggestion of the closest option, so that each error is one line.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "chute/stream.h"
#include "chute/version.h"
#include "cmd.h"

#define HELP_COLUMN 26
#define MAX_WORD 64
/* The most options a command has (stream's 36 and a few). */
#define CMD_MAX_OPTS 64

static const char *current_name;

void cmd_set_name(const char *name)
{
	current_name = name;
}

const char *cmd_name(void)
{
	return current_name;
}

/* ------------------------------------------------------------------ */
/* The settings a failure concerns, as options                          */

/* The spec cmd_parse read last: the running command's. */
static const struct cmd_spec *current_spec;

static int has_option(const struct cmd_spec *spec, const char *key,
		      size_t len)
{
	for (const struct cmd_opt *o = spec ? spec->opts : NULL; o && o->name;
	     o++)
		if (strlen(o->name) == len && strncmp(o->name, key, len) == 0)
			return 1;
	return 0;
}

/* The spec whose table has option key: the running command's, else the
 * one its spec names as `also`; NULL if neither. */
static const struct cmd_spec *option_owner(const char *key, size_t len)
{
	const struct cmd_spec *spec = current_spec;

	if (has_option(spec, key, len))
		return spec;
	if (spec && has_option(spec->also, key, len))
		return spec->also;
	return NULL;
}

/* The usage line of spec that shows option key, or NULL. */
static const char *usage_showing(const struct cmd_spec *spec,
				 const char *key, size_t len)
{
	char opt[MAX_WORD + 3];

	snprintf(opt, sizeof opt, "--%.*s", (int)len, key);
	for (size_t i = 0; spec->usage[i]; i++) {
		const char *at = strstr(spec->usage[i], opt);
		char next = at ? at[strlen(opt)] : '\0';
		if (at && next != '-' && !islower((unsigned char)next))
			return spec->usage[i];
	}
	return NULL;
}

/* keys ("exclude include", struct ch_error's) as the options that set
 * them, from the tables: "--exclude, --include" when the running
 * command has them; when the command its spec names as `also` has
 * them, that command's usage line that shows the first ("chute remote
 * add [--default] NAME URL"), or "chute pack --level"; keys neither has
 * are left out. */
static void options_text(const char *keys, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t len; *keys && used < size; keys += len + !!keys[len]) {
		len = strcspn(keys, " ");
		const struct cmd_spec *in = option_owner(keys, len);
		if (!in)
			continue;
		int other = !used && in != current_spec; /* named first */
		const char *line = other ? usage_showing(in, keys, len) : NULL;
		if (line) {
			snprintf(buf, size, "chute %s", line);
			return;
		}
		int n = snprintf(buf + used, size - used, "%s%s%s%s--%.*s",
				 used ? ", " : "", other ? "chute " : "",
				 other ? in->name : "", other ? " " : "",
				 (int)len, keys);
		used += n > 0 ? (size_t)n : 0;
	}
}

void cmd_name_settings(struct ch_error *err)
{
	char setting[160] = "", remedy[160] = "", msg[sizeof err->msg];

	if (err->setting)
		options_text(err->setting, setting, sizeof setting);
	if (err->remedy)
		options_text(err->remedy, remedy, sizeof remedy);
	err->setting = err->remedy = NULL;
	if (!err->msg[0] || (!setting[0] && !remedy[0]))
		return;
	/* cut short when too long, as ch_error_set cuts */
	if (snprintf(msg, sizeof msg, "%s%s%s%s%s%s", setting,
		     setting[0] ? ": " : "", err->msg, remedy[0] ? " (" : "",
		     remedy, remedy[0] ? ")" : "") < 0)
		return;
	memcpy(err->msg, msg, sizeof msg);
}

void cmd_put_text(FILE *out, const char *s, size_t len)
{
	enum { CHUNK = 1000 }; /* escapes to at most 4 bytes a byte */
	char buf[4 * CHUNK + 1];
	for (size_t i = 0, n; i < len; i += n) {
		n = len - i < CHUNK ? len - i : CHUNK;
		/* a chunk ends between UTF-8 sequences, not inside one */
		for (int back = 0; n < len - i && back < 3 &&
				   ((unsigned char)s[i + n] & 0xc0) == 0x80;
		     back++)
			n--;
		fwrite(buf, 1, ch_escape(buf, sizeof buf, s + i, n), out);
	}
}

void cmd_put(FILE *out, const char *s)
{
	cmd_put_text(out, s, strlen(s));
}

void cmd_print(const char *fmt, ...)
{
	char *text = NULL;
	va_list ap;

	va_start(ap, fmt);
	int n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n >= 0)
		cmd_put_text(stdout, text, (size_t)n);
	free(text);
}

/* ------------------------------------------------------------------ */
/* --help                                                               */

static void print_option(const struct cmd_opt *o, FILE *out)
{
	char left[128];
	int n;

	if (o->letter)
		n = snprintf(left, sizeof left, "  -%c, --%s", o->letter,
			     o->name);
	else
		n = snprintf(left, sizeof left, "      --%s", o->name);
	if (o->arg && n >= 0 && (size_t)n < sizeof left)
		snprintf(left + n, sizeof left - (size_t)n, " %s", o->arg);
	if (strlen(left) + 2 > HELP_COLUMN)
		fprintf(out, "%s\n%*s%s\n", left, HELP_COLUMN, "", o->help);
	else
		fprintf(out, "%-*s%s\n", HELP_COLUMN, left, o->help);
}

/* Prints spec's --help on out. */
static void cmd_usage(const struct cmd_spec *spec, FILE *out)
{
	for (size_t i = 0; spec->usage[i]; i++)
		fprintf(out, "%s chute %s\n", i ? "   or:" : "usage:",
			spec->usage[i]);
	fprintf(out, "\n%s\n\noptions:\n", spec->summary);
	for (const struct cmd_opt *o = spec->opts; o->name; o++)
		print_option(o, out);
	if (spec->extra)
		fprintf(out, "\n%s", spec->extra);
}

/* ------------------------------------------------------------------ */
/* Values                                                               */

int cmd_int_value(const char *opt, const char *s, long min, long max,
		  int *out, struct ch_error *err)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno || v < min || v > max)
		return ch_error_usage(err, "invalid value '%s' for %s: expected "
				      "a whole number from %ld to %ld", s, opt,
				      min, max);
	*out = (int)v;
	return 0;
}

int cmd_u64_value(const char *opt, const char *s, uint64_t min, uint64_t max,
		  uint64_t *out, struct ch_error *err)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || errno || v < min ||
	    v > max)
		return ch_error_usage(err, "invalid value '%s' for %s: expected "
				      "a whole number from %llu to %llu", s,
				      opt, (unsigned long long)min,
				      (unsigned long long)max);
	*out = v;
	return 0;
}

int cmd_size_value(const char *opt, const char *s, uint64_t *out,
		   struct ch_error *err)
{
	if (ch_parse_size(s, out) < 0 || *out == 0)
		return ch_error_usage(err, "invalid size '%s' for %s: expected "
				      "a number above 0 with an optional K, M "
				      "or G suffix", s, opt);
	return 0;
}

/* One of names, by its index; a near miss is suggested. */
static int name_value(const char *opt, const char *s,
		      const char *const *names, int *out,
		      struct ch_error *err)
{
	size_t n = 0;
	while (names[n])
		n++;
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0) {
			*out = (int)i;
			return 0;
		}
	const char *near = ch_closest(s, names, n);
	char list[64] = "";
	for (size_t i = 0; i < n; i++)
		snprintf(list + strlen(list), sizeof list - strlen(list),
			 "%s%s", i ? ", " : "", names[i]);
	if (near)
		return ch_error_usage(err, "invalid value '%s' for %s; did you "
				      "mean '%s'?", s, opt, near);
	return ch_error_usage(err, "invalid value '%s' for %s: expected one "
			      "of %s", s, opt, list);
}

int cmd_opt_value(const struct cmd_opt *o, const char *what, const char *arg,
		  void *field, struct ch_error *err)
{
	switch (o->type) {
	case CMD_INT:
		return cmd_int_value(what, arg, (long)o->min, (long)o->max,
				     field, err);
	case CMD_U64:
		return cmd_u64_value(what, arg, o->min, o->max, field, err);
	case CMD_SIZE0:
		if (strcmp(arg, "0") == 0) {
			*(uint64_t *)field = 0;
			return 0;
		}
		return cmd_size_value(what, arg, field, err);
	case CMD_SIZE:
		return cmd_size_value(what, arg, field, err);
	case CMD_THREADS:
		if (strcmp(arg, "auto") == 0) {
			*(int *)field = CH_AUTO;
			return 0;
		}
		return cmd_int_value(what, arg, (long)o->min, (long)o->max,
				     field, err);
	case CMD_NAME:
		return name_value(what, arg, o->names, field, err);
	case CMD_TEXT:
		*(const char **)field = arg;
		return 0;
	default:
		return 0;
	}
}

/* Appends arg to o's list in args: an array of o->max, or (max 0) the
 * room for argc a pointer points to. */
static int list_add(const struct cmd_opt *o, const char *arg, void *args,
		    struct ch_error *err)
{
	void *field = (char *)args + o->at;
	size_t *n = (size_t *)((char *)args + o->count);
	const char **v = o->max ? field : *(const char ***)field;

	if (o->max && *n == o->max)
		return ch_error_usage(err, "too many --%s options (at most "
				      "%llu)", o->name,
				      (unsigned long long)o->max);
	v[(*n)++] = arg;
	return 0;
}

/* Option o with its argument (NULL for a flag) into args. */
static int take(const struct cmd_opt *o, const char *arg, void *args,
		struct ch_error *err)
{
	void *field = (char *)args + o->at;
	char dashed[80];

	snprintf(dashed, sizeof dashed, "--%s", o->name);
	switch (o->type) {
	case CMD_FLAG:
	case CMD_CLEAR:
		*(int *)field = o->type == CMD_FLAG;
		return 0;
	case CMD_LIST:
		return list_add(o, arg, args, err);
	case CMD_CALL:
		return o->parse(arg, args, err);
	case CMD_SET_QUIET:
		cmd_set_quiet(1);
		return 0;
	default:
		return cmd_opt_value(o, dashed, arg, field, err);
	}
}

/* ------------------------------------------------------------------ */
/* Parsing                                                              */

/* Long options come back from getopt_long as LONG + their row. */
enum { LONG = 256 };

struct parser {
	const struct cmd_spec *spec;
	int argc;
	char **argv;
	struct option longopts[CMD_MAX_OPTS + 1];
	char shortopts[3 * CMD_MAX_OPTS + 3];
};

static void parser_init(struct parser *p, const struct cmd_spec *spec,
			int argc, char **argv)
{
	size_t n = 0, s = 0;

	memset(p, 0, sizeof *p);
	p->spec = spec;
	p->argc = argc;
	p->argv = argv;
	/* "-": operands come back in order, whatever POSIXLY_CORRECT says;
	 * ":": a missing argument is told apart from an unknown option */
	p->shortopts[s++] = '-';
	p->shortopts[s++] = ':';
	for (const struct cmd_opt *o = spec->opts; o->name && n < CMD_MAX_OPTS;
	     o++, n++) {
		p->longopts[n] = (struct option){
			o->name, o->arg ? required_argument : no_argument,
			NULL, LONG + (int)n};
		if (!o->letter)
			continue;
		p->shortopts[s++] = (char)o->letter;
		if (o->arg)
			p->shortopts[s++] = ':';
	}
	opterr = 0;
	optind = 0; /* full reinitialisation in glibc */
}

/* The row of getopt's answer c: a letter, or LONG + the row. */
static const struct cmd_opt *find_opt(const struct cmd_spec *spec, int c)
{
	if (c >= LONG)
		return &spec->opts[c - LONG];
	for (const struct cmd_opt *o = spec->opts; c && o->name; o++)
		if (o->letter == c)
			return o;
	return NULL;
}

/* How the user wrote the option: "--output" or "-o". */
static void spelled(const struct parser *p, const struct cmd_opt *o,
		    char *buf, size_t size)
{
	const char *typed = optind > 0 && optind <= p->argc ?
				    p->argv[optind - 1] : "";

	if (strncmp(typed, "--", 2) == 0 || !o->letter)
		snprintf(buf, size, "--%s", o->name);
	else
		snprintf(buf, size, "-%c", o->letter);
}

static int missing_argument(struct parser *p, struct ch_error *err)
{
	const struct cmd_opt *o = find_opt(p->spec, optopt);
	char name[80];

	if (!o)
		return ch_error_usage(err, "an option needs a value");
	spelled(p, o, name, sizeof name);
	return ch_error_usage(err, "option '%s' needs a value (%s)", name,
			      o->arg);
}

static int unknown_long(struct parser *p, struct ch_error *err)
{
	const char *names[CMD_MAX_OPTS], *match[2] = {NULL, NULL};
	const char *typed = p->argv[optind - 1] + 2;
	char word[MAX_WORD + 1];
	size_t n = 0, prefixed = 0, len = strcspn(typed, "=");

	snprintf(word, sizeof word, "%.*s", (int)len, typed);
	for (const struct cmd_opt *o = p->spec->opts; o->name; o++) {
		names[n++] = o->name;
		if (strncmp(o->name, word, strlen(word)) == 0 && prefixed < 2)
			match[prefixed++] = o->name;
	}
	if (prefixed == 2)
		return ch_error_usage(err, "option '--%s' is ambiguous; could "
				      "be '--%s' or '--%s'", word, match[0],
				      match[1]);
	const char *near = ch_closest(word, names, n);
	if (near)
		return ch_error_usage(err, "unknown option '--%s'; did you "
				      "mean '--%s'?", word, near);
	return ch_error_usage(err, "unknown option '--%s'; see 'chute %s "
			      "--help'", word, p->spec->name);
}

static int bad_option(struct parser *p, struct ch_error *err)
{
	const struct cmd_opt *o = optopt ? find_opt(p->spec, optopt) : NULL;

	if (o)
		return ch_error_usage(err, "option '--%s' takes no value",
				      o->name);
	if (optopt == 0 && optind > 0 &&
	    strncmp(p->argv[optind - 1], "--", 2) == 0)
		return unknown_long(p, err);
	if (optopt > 0 && optopt < LONG)
		return ch_error_usage(err, "unknown option '-%c'; see 'chute %s "
				      "--help'", optopt, p->spec->name);
	return ch_error_usage(err, "unknown option; see 'chute %s --help'",
			      p->spec->name);
}

/* An operand, into the next of spec's members or to its operand(). */
static int operand(const struct cmd_spec *spec, const char *arg, void *args,
		   size_t *n, struct ch_error *err)
{
	if (spec->operand) {
		if (spec->operand(args, arg, err) < 0)
			return -1;
		++*n;
		return 0;
	}
	if (*n == spec->noperands)
		return ch_error_usage(err, "too many arguments%s%s",
				      spec->too_many ? ": " : "",
				      spec->too_many ? spec->too_many : "");
	*(const char **)((char *)args + spec->operands[(*n)++]) = arg;
	return 0;
}

/* One step: 1 for more, 0 at the end, -1 with err set; *help after
 * --help was printed. */
static int step(struct parser *p, void *args, size_t *n, int *help,
		struct ch_error *err)
{
	const struct cmd_spec *spec = p->spec;
	int c = getopt_long(p->argc, p->argv, p->shortopts, p->longopts,
			    NULL);
	const struct cmd_opt *o;

	switch (c) {
	case -1:
		return 0;
	case 1:
		return operand(spec, optarg, args, n, err) < 0 ? -1 : 1;
	case '?':
		return bad_option(p, err);
	case ':':
		return missing_argument(p, err);
	}
	o = find_opt(spec, c);
	if (o->type == CMD_SHOW_HELP) {
		cmd_usage(spec, stdout);
		*help = 1;
		return 0;
	}
	if (take(o, optarg, args, err) < 0)
		return -1;
	if (spec->taken)
		spec->taken(args, o);
	return 1;
}

enum cmd_parsed cmd_parse(const struct cmd_spec *spec, int argc, char **argv,
			  void *args, struct ch_error *err)
{
	struct parser p;
	size_t n = 0, rows = 0;
	int rc, help = 0;

	while (spec->opts[rows].name)
		rows++;
	if (rows > CMD_MAX_OPTS) /* a table grown past the parser: a bug */
		return ch_error_set(err, "%zu options, more than the %d the "
				    "parser takes", rows, CMD_MAX_OPTS),
		       CMD_FAIL;
	current_spec = spec;
	parser_init(&p, spec, argc, argv);
	while ((rc = step(&p, args, &n, &help, err)) > 0)
		;
	if (rc < 0)
		return CMD_FAIL;
	if (help)
		return CMD_HELP;
	/* what follows "--" */
	while (optind < argc)
		if (operand(spec, argv[optind++], args, &n, err) < 0)
			return CMD_FAIL;
	if (n < spec->required)
		return ch_error_usage(err, "%s", spec->missing), CMD_FAIL;
	if (spec->check && spec->check(args, err) < 0)
		return CMD_FAIL;
	return CMD_GO;
}


/* The default name: the last component of DIR. */
int cmd_default_name(const char *dir, char **out, struct ch_error *err)
{
	size_t len = strlen(dir);
	const char *base;

	while (len > 1 && dir[len - 1] == '/')
		len--;
	base = memrchr(dir, '/', len);
	base = base ? base + 1 : dir;
	len -= (size_t)(base - dir);
	if (len == 0 || (len == 1 && base[0] == '.') ||
	    (len == 2 && base[0] == '.' && base[1] == '.'))
		return ch_error_usage(err, "cannot name the dataset after "
				      "'%s': give a name with --name", dir);
	*out = strndup(base, len);
	return *out ? 0 : ch_error_nomem(err);
}

/* The name is in every shard's file name, shards/NAME-NNNNNN.chs
 * (chute-manifest(5), SHARD PATHS): ch_dataset_name_check's rule, the
 * one a manifest read keeps too. */
int cmd_check_name(const char *name, struct ch_error *err)
{
	struct ch_error why;
	if (ch_dataset_name_check(name, &why) == 0)
		return 0;
	return ch_error_usage(err, "%s%s", why.msg,
			      *name ? " (give another with --name)" : "");
}

int cmd_part_value(const char *s, int none_ok, uint64_t *part,
		   uint64_t *parts, struct ch_error *err)
{
	unsigned long long i, n;
	int used = -1;

	if (none_ok && strcmp(s, "none") == 0) {
		*part = *parts = 0;
		return 0;
	}
	if (s[0] >= '0' && s[0] <= '9' &&
	    sscanf(s, "%llu/%llu%n", &i, &n, &used) == 2 &&
	    (size_t)used == strlen(s) && strchr(s, '/')[1] >= '0' &&
	    strchr(s, '/')[1] <= '9' && n >= 1 && n <= CMD_MAX_PARTS &&
	    i < n) {
		*part = i;
		*parts = n;
		return 0;
	}
	return ch_error_usage(err, "invalid value '%s' for --part: expected "
			      "I/N, part I from 0 to N-1 of N parts (N from 1 "
			      "to %u)%s", s, CMD_MAX_PARTS,
			      none_ok ? ", or none" : "");
}
