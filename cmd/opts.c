/*
 * opts.c - option parsing, --help and error messages for the subcommands.
 *
 * getopt_long does the scanning; everything it would print itself is
 * printed here instead (opterr = 0), in our own words and with a
 * suggestion of the closest option, so that each error is one line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "chute.h"
#include "cmd.h"

#define HELP_COLUMN 26
#define MAX_WORD 64

static const char *current_name;

void cmd_set_name(const char *name)
{
	current_name = name;
}

const char *cmd_name(void)
{
	return current_name;
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

int cmd_error(const char *fmt, ...)
{
	char *msg = NULL, *shown = NULL;
	va_list ap;

	cmd_progress_clear(); /* the message starts on a line of its own */
	fflush(stdout);
	if (current_name)
		fprintf(stderr, "chute %s: ", current_name);
	else
		fputs("chute: ", stderr);
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	shown = msg ? ch_url_redact(msg) : NULL;
	cmd_put(stderr, shown ? shown : "out of memory");
	fputc('\n', stderr);
	free(msg);
	free(shown);
	return EXIT_USAGE;
}


/* ------------------------------------------------------------------ */
/* --help                                                               */

static void print_option(const struct cmd_opt *o, FILE *out)
{
	char left[128];
	int n;

	if (o->id < CMD_LONG_ONLY)
		n = snprintf(left, sizeof left, "  -%c, --%s", o->id, o->name);
	else
		n = snprintf(left, sizeof left, "      --%s", o->name);
	if (o->arg && n >= 0 && (size_t)n < sizeof left)
		snprintf(left + n, sizeof left - (size_t)n, " %s", o->arg);
	if (strlen(left) + 2 > HELP_COLUMN)
		fprintf(out, "%s\n%*s%s\n", left, HELP_COLUMN, "", o->help);
	else
		fprintf(out, "%-*s%s\n", HELP_COLUMN, left, o->help);
}

/* Prints the usage lines, summary and option list. */
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
/* Parsing                                                              */

void cmd_parser_init(struct cmd_parser *p, const struct cmd_spec *spec,
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
			NULL, o->id};
		if (o->id >= CMD_LONG_ONLY)
			continue;
		p->shortopts[s++] = (char)o->id;
		if (o->arg)
			p->shortopts[s++] = ':';
	}
	opterr = 0;
	optind = 0; /* full reinitialisation in glibc */
}

static const struct cmd_opt *find_opt(const struct cmd_spec *spec, int id)
{
	for (const struct cmd_opt *o = spec->opts; o->name; o++)
		if (o->id == id)
			return o;
	return NULL;
}

/* How the user wrote the option: "--output" or "-o". */
static void spelled(const struct cmd_parser *p, const struct cmd_opt *o,
		    char *buf, size_t size)
{
	const char *typed = optind > 0 && optind <= p->argc ?
				    p->argv[optind - 1] : "";

	if (strncmp(typed, "--", 2) == 0 || o->id >= CMD_LONG_ONLY)
		snprintf(buf, size, "--%s", o->name);
	else
		snprintf(buf, size, "-%c", o->id);
}

static int missing_argument(struct cmd_parser *p)
{
	const struct cmd_opt *o = find_opt(p->spec, optopt);
	char name[80];

	if (!o) {
		cmd_error("an option needs a value");
		return CMD_BAD;
	}
	spelled(p, o, name, sizeof name);
	cmd_error("option '%s' needs a value (%s)", name, o->arg);
	return CMD_BAD;
}

static int unknown_long(struct cmd_parser *p)
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
	if (prefixed == 2) {
		cmd_error("option '--%s' is ambiguous; could be '--%s' or "
			  "'--%s'", word, match[0], match[1]);
		return CMD_BAD;
	}
	const char *near = ch_closest(word, names, n);
	if (near)
		cmd_error("unknown option '--%s'; did you mean '--%s'?", word,
			  near);
	else
		cmd_error("unknown option '--%s'; see 'chute %s --help'", word,
			  p->spec->name);
	return CMD_BAD;
}

static int bad_option(struct cmd_parser *p)
{
	const struct cmd_opt *o = optopt ? find_opt(p->spec, optopt) : NULL;

	if (o) {
		cmd_error("option '--%s' takes no value", o->name);
		return CMD_BAD;
	}
	if (optopt == 0 && optind > 0 &&
	    strncmp(p->argv[optind - 1], "--", 2) == 0)
		return unknown_long(p);
	if (optopt > 0 && optopt < CMD_LONG_ONLY)
		cmd_error("unknown option '-%c'; see 'chute %s --help'",
			  optopt, p->spec->name);
	else
		cmd_error("unknown option; see 'chute %s --help'",
			  p->spec->name);
	return CMD_BAD;
}

int cmd_next(struct cmd_parser *p)
{
	while (!p->finished) {
		int c = getopt_long(p->argc, p->argv, p->shortopts,
				    p->longopts, NULL);
		p->arg = optarg;
		switch (c) {
		case -1:
			p->finished = 1;
			break;
		case 1:
			return CMD_POSITIONAL;
		case '?':
			return bad_option(p);
		case ':':
			return missing_argument(p);
		case CMD_OPT_HELP:
			cmd_usage(p->spec, stdout);
			return CMD_HELP;
		case 'q': /* every command's, so handled here */
			cmd_set_quiet(1);
			continue;
		default:
			return c;
		}
	}
	/* what follows "--" */
	if (optind < p->argc) {
		p->arg = p->argv[optind++];
		return CMD_POSITIONAL;
	}
	return CMD_END;
}

/* ------------------------------------------------------------------ */
/* Values                                                               */

int cmd_parse_int(const char *opt, const char *s, long min, long max,
		  int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno || v < min || v > max) {
		cmd_error("invalid value '%s' for %s: expected a whole number "
			  "from %ld to %ld", s, opt, min, max);
		return -1;
	}
	*out = (int)v;
	return 0;
}

int cmd_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max,
		  uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || errno || v < min ||
	    v > max) {
		cmd_error("invalid value '%s' for %s: expected a whole number "
			  "from %llu to %llu", s, opt, (unsigned long long)min,
			  (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 0;
}

int cmd_parse_size(const char *opt, const char *s, uint64_t *out)
{
	if (ch_parse_size(s, out) < 0 || *out == 0) {
		cmd_error("invalid size '%s' for %s: expected a number above "
			  "0 with an optional K, M or G suffix", s, opt);
		return -1;
	}
	return 0;
}

int cmd_parse_dataset_args(const struct cmd_spec *spec, int argc, char **argv,
			   int (*take)(struct cmd_parser *p, int c, void *ctx),
			   void *ctx, const char **path, const char *what)
{
	struct cmd_parser p;
	int c;
	cmd_parser_init(&p, spec, argc, argv);
	while ((c = cmd_next(&p)) != CMD_END) {
		if (c == CMD_HELP)
			return -1;
		if (c == CMD_BAD)
			return EXIT_USAGE;
		if (c == CMD_POSITIONAL) {
			if (*path)
				return cmd_error("too many arguments: give one "
						 "dataset");
			*path = p.arg;
		} else if (take(&p, c, ctx) < 0) {
			return EXIT_USAGE;
		}
	}
	if (!*path)
		return cmd_error("%s: name a dataset", what);
	return 0;
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

int cmd_parse_part(const char *s, int none_ok, uint64_t *part,
		   uint64_t *parts)
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
	return cmd_error("invalid value '%s' for --part: expected I/N, part I "
			 "from 0 to N-1 of N parts (N from 1 to %u)%s", s,
			 CMD_MAX_PARTS, none_ok ? ", or none" : "");
}
