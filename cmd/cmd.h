/*
 * cmd.h - what the subcommands share: the command entry points, the option
 * tables that drive both parsing and --help, and the small helpers that
 * report errors the same way everywhere.
 *
 * A subcommand is one file cmd/<name>.c exporting cmd_<name>(argc, argv),
 * where argv[0] is the command name ("pack").  It returns the process exit
 * status: 0 success, 1 the data failed a check, 2 usage or I/O error, or
 * 128 + signal number when interrupted; for a failed lib call,
 * cmd_exit_status says which from the error's kind.
 */
#ifndef CHUTE_CMD_H
#define CHUTE_CMD_H

#include <getopt.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "chute/config.h"

enum { EXIT_CHECK = 1, EXIT_USAGE = 2 };

int cmd_bench(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_log(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_manifest(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_pack(int argc, char **argv);
int cmd_preview(int argc, char **argv);
int cmd_pull(int argc, char **argv);
int cmd_push(int argc, char **argv);
int cmd_remote(int argc, char **argv);
int cmd_split(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_stream(int argc, char **argv);
int cmd_tags(int argc, char **argv);
int cmd_verify(int argc, char **argv);

/* ------------------------------------------------------------------ */
/* Option tables                                                        */

/* Ids returned by cmd_next besides the option ids themselves.  Options
 * without a short letter use ids from CMD_LONG_ONLY up. */
enum {
	CMD_END = -1,	     /* no more arguments */
	CMD_POSITIONAL = -2, /* p->arg holds an operand */
	CMD_HELP = -3,	     /* --help was printed: exit 0 */
	CMD_BAD = -4,	     /* an error was printed: exit 2 */
	CMD_LONG_ONLY = 256,
	CMD_OPT_HELP = 'h',
};

struct cmd_opt {
	int id;		   /* the short letter, or CMD_LONG_ONLY + n */
	const char *name;  /* long name without "--" */
	const char *arg;   /* argument placeholder ("DIR"), NULL if none */
	const char *help;  /* one line, lowercase */
};

/* Every subcommand describes itself once; --help, `chute help CMD` and
 * the parser all read the same table, so they cannot drift apart. */
struct cmd_spec {
	const char *name;	   /* "pack" */
	const char *summary;	   /* one line, as in `chute help` */
	const char *const *usage;  /* synopsis lines without "chute " */
	const struct cmd_opt *opts; /* sorted by name, ends with {0} */
	const char *extra;	   /* text after the options, or NULL */
};

#define CMD_HELP_OPT { CMD_OPT_HELP, "help", NULL, "show this help and exit" }

/* The most options a command has (stream's table and its own); the
 * parser sees no more, so stream.c asserts its count fits. */
#define CMD_MAX_OPTS 64

struct cmd_parser {
	const struct cmd_spec *spec;
	int argc;
	char **argv;
	const char *arg; /* option argument or operand */
	int finished;	 /* getopt is done; operands left from optind */
	struct option longopts[CMD_MAX_OPTS + 1];
	char shortopts[3 * CMD_MAX_OPTS + 3];
};

/* Parses argv (argv[0] is the command name) one step at a time: returns
 * an option id with its argument in p->arg, CMD_POSITIONAL, CMD_END,
 * CMD_HELP or CMD_BAD.  Operands and options may be mixed; "--" ends the
 * options.  Errors name the option and suggest the closest one. */
void cmd_parser_init(struct cmd_parser *p, const struct cmd_spec *spec,
		     int argc, char **argv);
int cmd_next(struct cmd_parser *p);

/* The whole command line of a command that takes options and one
 * dataset: take(p, c, ctx) handles option c (returns < 0 when its
 * argument is bad, having said why); the dataset goes to *path; `what`
 * says what a missing one means ("nothing to check").  Returns 0, -1 after
 * --help, or EXIT_USAGE. */
int cmd_parse_dataset_args(const struct cmd_spec *spec, int argc, char **argv,
			   int (*take)(struct cmd_parser *p, int c, void *ctx),
			   void *ctx, const char **path, const char *what);

/* ------------------------------------------------------------------ */
/* Reporting                                                            */

/* Sets the name used in messages ("pack" gives "chute pack: ..."). */
void cmd_set_name(const char *name);
const char *cmd_name(void);

/* Prints "chute CMD: MESSAGE" on stderr and returns EXIT_USAGE.  The
 * message goes through ch_url_redact and ch_escape: no URL password and
 * no raw control byte ever reaches the terminal. */
int cmd_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The one path a failure takes out of a command: the body fills a struct
 * ch_error (a lib call does, or ch_error_usage, ch_error_set,
 * ch_error_errno, ch_error_data, ch_error_nomem of chute.h for cmd/'s own
 * failures) and returns -1; the command then returns cmd_fail(&err), which
 * prints err's message like cmd_error and returns cmd_exit_status(err).
 * An empty message was reported already (verify's list of problems):
 * cmd_fail prints nothing. */
struct ch_error;
int cmd_fail(const struct ch_error *err);
/* Puts "PREFIX: " (printf-style) in front of err's message, its kind
 * kept: where cmd/ says which file or option a lib error is about.
 * Returns -1. */
int cmd_prefix_error(struct ch_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Marks err as a failure of kind `kind` that was reported already (a
 * report listed the problems): no message of its own.  Returns -1. */
int cmd_reported(struct ch_error *err, enum ch_error_kind kind);
/* The exit status of such a failure: cmd_fail of a struct ch_error that
 * cmd_reported marked. */
int cmd_fail_reported(enum ch_error_kind kind);
/* The exit status of a command line that parsed to something else than
 * GO: 0 after --help (parsed < 0), else that of a usage error (its
 * message printed by the parser). */
int cmd_parsed_status(int parsed);
/* Text output of a key, field name, path or message: s escaped by
 * ch_escape (cmd_put: a NUL-terminated s). */
void cmd_put_text(FILE *out, const char *s, size_t len);
void cmd_put(FILE *out, const char *s);
/* printf to stdout with the whole text escaped (so fmt holds no '\n':
 * the caller ends the line). */
void cmd_print(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parses a whole number in [min, max] given to option `opt`; reports and
 * returns -1 on anything else. */
int cmd_parse_int(const char *opt, const char *s, long min, long max,
		  int *out);
/* Parses a size (K, M, G suffixes) > 0 given to option `opt`. */
int cmd_parse_size(const char *opt, const char *s, uint64_t *out);
/* Parses a whole number in [min, max]; prints the error itself. */
int cmd_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max,
		  uint64_t *out);
/* The most parts a dataset is packed or verified in (--part, --parts). */
#define CMD_MAX_PARTS (1u << 20)
/* Parses --part's "I/N" (part I, from 0 to N-1, of N parts), or "none"
 * (*parts 0) when none_ok; prints the error itself. */
int cmd_parse_part(const char *s, int none_ok, uint64_t *part,
		   uint64_t *parts);

/* The default dataset name (pack, merge): the last component of dir,
 * in *out (the caller frees).  Returns 0, or -1 with err filled. */
int cmd_default_name(const char *dir, char **out, struct ch_error *err);
/* 0 if name can name shard files (no '/', no control byte), else -1
 * with err filled (a usage error). */
int cmd_check_name(const char *name, struct ch_error *err);


/* ------------------------------------------------------------------ */
/* Numbers in text output (units.c); JSON keeps exact numbers            */

enum { CMD_SIZE_TEXT = 16 };
/* bytes with an SI unit and three significant digits: "512 B",
 * "4.71 MB", "47.1 MB", "1.20 GB".  Returns buf. */
const char *cmd_size_text(uint64_t bytes, char buf[CMD_SIZE_TEXT]);
/* "42s", "3m07s", "2h05m"; "?" for a negative or NaN time (not known). */
const char *cmd_duration_text(double seconds, char buf[CMD_SIZE_TEXT]);
/* one when n is 1, else many: "%zu %s", n, cmd_plural(n, "shard", "shards") */
const char *cmd_plural(uint64_t n, const char *one, const char *many);
enum { CMD_COUNT_TEXT = 48 };
/* n and the word that agrees with it: "1 shard", "3 shards", "0 shards".
 * Returns buf. */
const char *cmd_count_text(uint64_t n, const char *one, const char *many,
			   char buf[CMD_COUNT_TEXT]);

/* ------------------------------------------------------------------ */
/* Signals and output                                                   */

/* Installs SIGINT and SIGTERM handlers that store the signal number in
 * the returned flag (a second signal kills as usual; a signal ignored on
 * entry stays ignored). */
volatile sig_atomic_t *cmd_catch_signals(void);
/* Installs the SIGBUS handler of cmd/fault.c: a file truncated under one
 * of chute's mappings (a shard overwritten or truncated while it is read,
 * the --shm ring truncated by its consumer) ends chute with one line on
 * stderr naming the file, exit 1 (2 for the ring), and the ring removed,
 * instead of a death by signal.  main() calls it for every command. */
void cmd_catch_faults(void);
/* Names the --shm ring that cmd_catch_faults' handler removes (NULL: no
 * ring any more). */
void cmd_fault_ring(const char *name);
/* The exit status of a failure: 128 + the signal once one was caught
 * (whatever failed on the way out: the run was stopped), else by err's
 * kind: EXIT_CHECK for data that failed a check, EXIT_USAGE for the rest
 * (usage, I/O, memory).  The one place a kind becomes a status. */
int cmd_exit_status(const struct ch_error *err);
/* cmd_exit_status without the signal: the status of a failure of kind
 * `kind` (fault.c's SIGBUS handler, which reports and exits itself). */
int cmd_kind_status(enum ch_error_kind kind);

/* Writes all of buf to fd, retrying short writes.  Returns 0, or -1 with
 * errno set (EPIPE when the reader went away). */
int cmd_write_all(int fd, const void *buf, size_t len);
/* Whether len bytes read as text on a terminal: well-formed UTF-8 with
 * no control character but tab, newline and carriage return. */
int cmd_is_text(const void *buf, size_t len);
/* Binary output is refused on a terminal, as zstd and gzip refuse it:
 * when standard output is one and force (--force) is not set, fills err
 * with "not writing WHAT to a terminal; HOW" and returns -1; else 0. */
int cmd_binary_to_terminal(int force, const char *what, const char *how,
			   struct ch_error *err);

/* A JSON string from bytes that may not be UTF-8: invalid sequences
 * become U+FFFD.  Returns a new reference, or NULL when out of memory. */
json_t *cmd_json_bytes(const char *s, size_t len);

/* Prints one compact JSON document and a newline to out. */
int cmd_json_print(json_t *doc, FILE *out);

/* Values of the JSON reports of the commands that write (pack, merge,
 * push, pull, export, split): a version id, null when empty; a count; a
 * path or url that may not be UTF-8; seconds to the millisecond. */
json_t *cmd_json_id(const char *id);
json_t *cmd_json_count(uint64_t n);
json_t *cmd_json_text(const char *s);
json_t *cmd_json_seconds(double seconds);
/* The tags a push or a remote merge set: "latest" if latest, then
 * tags[0..n). */
json_t *cmd_json_tags(const char *const *tags, size_t n, int latest);
/* The report's opening keys: "id" and "parent" (null for none). */
json_t *cmd_json_version(const char *id, const char *parent);
/* What replacing out_dir's version did (pack, merge): "replaced" (the
 * old id or null), "unchanged" and "changes" (null for a first version),
 * the JSON side of cmd_print_replaced. */
void cmd_json_add_replaced(json_t *doc, const char *old_id, const char *id,
			   const char *changes);
/* Prints doc on stdout as cmd_json_print does, reals to 15 digits, and
 * frees it. */
void cmd_json_emit(json_t *doc);

/* The line pack and merge print after the first when out_dir held a
 * version (old_id not empty): "DIR: unchanged", or "replaced DIR: OLD
 * -> NEW (CHANGES)". */
void cmd_print_replaced(const char *dir, const char *old_id, const char *id,
			const char *changes);

/* ------------------------------------------------------------------ */
/* The progress line (progress.c) and -q                                */

/* -q, --quiet: every command takes it; cmd_next handles it itself. */
#define CMD_QUIET_OPT                                                       \
	{ 'q', "quiet", NULL, "no progress line on standard error" }
void cmd_set_quiet(int quiet);
int cmd_quiet(void);

struct ch_progress;
/* The ch_progress_fn to give a long lib call (its arg unused): it draws
 * "PHASE: DONE/TOTAL UNIT, BYTES, RATE, eta TIME" on stderr, at most ten
 * times a second; NULL, so that the library counts nothing, when stderr
 * is not a terminal or -q was given. */
void (*cmd_progress(void))(const struct ch_progress *p, void *arg);
/* Wipes the line, if one is drawn: before any other text on stderr
 * (cmd_error does it) and when the long call is over. */
void cmd_progress_clear(void);

/* ------------------------------------------------------------------ */
/* Remotes and transfers (push, pull, tags, gc)                                               */

struct ch_transfer_opts;
struct cmd_transfer {
	double start;
};
/* --jobs and --retries, the options push and pull share. */
enum { CMD_OPT_RETRIES = CMD_LONG_ONLY + 64 };
#define CMD_RETRIES_OPT                                                     \
	{ CMD_OPT_RETRIES, "retries", "N",                                  \
	  "retries with backoff (default $CHUTE_RETRIES, else 5)" }
struct ch_store_opts;
struct ch_store;
/* 1 if option c was --jobs (-j) or --retries and its value is good, 0 if
 * it was another option, -1 (an error printed) for a bad value. */
int cmd_transfer_option(int c, const char *arg, struct ch_store_opts *so,
			struct ch_transfer_opts *xo);
/* Starts the clock and the progress line of a transfer. */
void cmd_transfer_begin(struct cmd_transfer *t, struct ch_transfer_opts *o);
void cmd_transfer_end(struct cmd_transfer *t);
double cmd_transfer_seconds(const struct cmd_transfer *t);
/* Opens the store a REMOTE argument names (text NULL: the default
 * remote), resolved by ch_remote_arg (chute/config.h); 0, or -1 with err
 * filled. */
int cmd_open_remote(const char *text, const char *dataset_dir,
		    enum ch_remote_use use, const struct ch_store_opts *opts,
		    struct ch_store **st, struct ch_error *err);

/* A ch_point_fn for tests (test_point.c): stops at the points
 * CHUTE_TEST_PAUSE lists, creating CHUTE_TEST_DIR/POINT and waiting for
 * CHUTE_TEST_DIR/POINT.go. */
void cmd_test_point(void *arg, const char *name);

#endif
