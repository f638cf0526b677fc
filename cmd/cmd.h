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

#include "chute/remote.h"

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

struct ch_error;

/* How an option's argument is read, and into what member of the
 * command's arguments (struct cmd_opt's at). */
enum cmd_type {
	CMD_FLAG,    /* int: 1 */
	CMD_CLEAR,   /* int: 0 (--no-drop-last) */
	CMD_INT,     /* int: a whole number from min to max */
	CMD_U64,     /* uint64_t: a whole number from min to max */
	CMD_SIZE,    /* uint64_t: a size above 0 (K, M, G suffixes) */
	CMD_SIZE0,   /* uint64_t: the same, or 0 */
	CMD_THREADS, /* int: N from min to max, or auto (CH_AUTO) */
	CMD_TEXT,    /* const char *: the argument as given */
	CMD_NAME,    /* int: the index of the argument in names */
	CMD_LIST,    /* const char *[max]: each one, in order, the count in
		      * the size_t at count; max 0: a const char ** to
		      * room for argc of them */
	CMD_CALL,    /* parse(arg, args, err) reads it */
	CMD_SHOW_HELP, /* --help: prints the help; cmd_parse returns CMD_HELP */
	CMD_SET_QUIET, /* -q: cmd_set_quiet(1) */
};

/* One option: its names, the line of --help, and where its value goes.
 * The same row parses the option and prints its help, so the two
 * cannot differ; tests/cli/docs.bats holds the man pages to them. */
struct cmd_opt {
	int letter;	   /* the short option, or 0 */
	const char *name;  /* long name without "--" */
	const char *arg;   /* argument placeholder ("DIR"), NULL if none */
	const char *help;  /* one line, lowercase */
	enum cmd_type type;
	size_t at;	   /* offsetof its member in the command's args */
	size_t count;	   /* CMD_LIST: offsetof the size_t count */
	uint64_t min, max; /* CMD_INT, CMD_U64, CMD_THREADS; CMD_LIST: max */
	const char *const *names; /* CMD_NAME, NULL-terminated */
	/* CMD_CALL: reads arg into args; 0, or -1 with err set */
	int (*parse)(const char *arg, void *args, struct ch_error *err);
};

/* The rows of a table, by type: T the command's args struct, m the
 * member the value goes to. */
#define CMD_OPT_FLAG(l, name, T, m, help)                                   \
	{ (l), (name), NULL, (help), CMD_FLAG, offsetof(T, m), 0, 0, 0, NULL,\
	  NULL }
#define CMD_OPT_TEXT(l, name, arg, T, m, help)                              \
	{ (l), (name), (arg), (help), CMD_TEXT, offsetof(T, m), 0, 0, 0,    \
	  NULL, NULL }
#define CMD_OPT_INT(l, name, arg, T, m, min, max, help)                     \
	{ (l), (name), (arg), (help), CMD_INT, offsetof(T, m), 0, (min),     \
	  (max), NULL, NULL }
#define CMD_OPT_U64(l, name, arg, T, m, min, max, help)                     \
	{ (l), (name), (arg), (help), CMD_U64, offsetof(T, m), 0, (min),     \
	  (max), NULL, NULL }
#define CMD_OPT_SIZE(l, name, arg, T, m, help)                              \
	{ (l), (name), (arg), (help), CMD_SIZE, offsetof(T, m), 0, 0, 0,    \
	  NULL, NULL }
#define CMD_OPT_LIST(l, name, arg, T, m, n, max, help)                      \
	{ (l), (name), (arg), (help), CMD_LIST, offsetof(T, m),              \
	  offsetof(T, n), 0, (max), NULL, NULL }
#define CMD_OPT_CALL(l, name, arg, fn, help)                                \
	{ (l), (name), (arg), (help), CMD_CALL, 0, 0, 0, 0, NULL, (fn) }

/* The options every command takes, declared here once: --help, -q and
 * --json (into T's member json, with the command's words for it). */
#define CMD_HELP_OPT                                                        \
	{ 'h', "help", NULL, "show this help and exit", CMD_SHOW_HELP, 0, 0, 0,   \
	  0, NULL, NULL }
#define CMD_QUIET_OPT                                                       \
	{ 'q', "quiet", NULL, "no progress line on standard error",          \
	  CMD_SET_QUIET, 0, 0, 0, 0, NULL, NULL }
#define CMD_JSON_OPT(T, help) CMD_OPT_FLAG(0, "json", T, json, help)
#define CMD_OPT_END                                                         \
	{ 0, NULL, NULL, NULL, CMD_FLAG, 0, 0, 0, 0, NULL, NULL }

/* The most operands a command puts in members of its own (cmd_spec's
 * operands). */
#define CMD_MAX_OPERANDS 3

/* Every subcommand describes itself once; --help, `chute help`, `chute
 * help CMD` and the parser all read the same spec, so they cannot drift
 * apart. */
struct cmd_spec {
	const char *name;	   /* "pack" */
	const char *summary;	   /* one line, as in `chute help` */
	const char *const *usage;  /* synopsis lines without "chute " */
	const struct cmd_opt *opts; /* sorted by name, ends with {0} */
	const char *extra;	   /* text after the options, or NULL */
	/* The operands, in order, into these members (const char *) ... */
	size_t operands[CMD_MAX_OPERANDS];
	size_t noperands;
	const char *too_many; /* "too many arguments: TOO_MANY", or NULL */
	size_t required;      /* fewer operands than this: ... */
	const char *missing;  /* ... this message */
	/* ... or each one given to operand (0, or -1 with err set). */
	int (*operand)(void *args, const char *arg, struct ch_error *err);
	/* After the last argument: what is missing or does not go
	 * together (0, or -1 with err set); NULL: nothing to check. */
	int (*check)(void *args, struct ch_error *err);
	/* Called after each option is taken (chute stream's run record). */
	void (*taken)(void *args, const struct cmd_opt *o);
	/* Another command whose options this one's failures may name: a
	 * setting a lib error is about (struct ch_error) that this table
	 * lacks is that command's ("chute pack --level": merge's parts
	 * were packed with different ones).  NULL: none. */
	const struct cmd_spec *also;
};

/* The operand members of a spec: CMD_OPERANDS(T, first, second). */
#define CMD_OPERAND1(T, a) .operands = { offsetof(T, a) }, .noperands = 1
#define CMD_OPERAND2(T, a, b)                                               \
	.operands = { offsetof(T, a), offsetof(T, b) }, .noperands = 2
#define CMD_OPERAND3(T, a, b, c)                                            \
	.operands = { offsetof(T, a), offsetof(T, b), offsetof(T, c) },      \
	.noperands = 3

/* The command table (commands.c): a command's name, entry point and
 * spec, whose summary `chute help` prints. */
struct cmd_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const struct cmd_spec *spec;
};
/* The command called name, or NULL. */
const struct cmd_command *cmd_find(const char *name);
/* `chute help`: the usage and every command with its summary. */
void cmd_print_commands(FILE *out);
/* Says that name is no command, suggesting the closest; EXIT_USAGE. */
int cmd_unknown_command(const char *name);
int cmd_help(int argc, char **argv);

/* The spec of each command, for the command table. */
extern const struct cmd_spec cmd_bench_spec, cmd_cat_spec, cmd_check_spec,
	cmd_diff_spec, cmd_export_spec, cmd_gc_spec, cmd_help_spec,
	cmd_log_spec, cmd_ls_spec, cmd_manifest_spec, cmd_merge_spec,
	cmd_pack_spec, cmd_preview_spec, cmd_pull_spec, cmd_push_spec,
	cmd_remote_spec, cmd_split_spec, cmd_status_spec, cmd_stream_spec,
	cmd_tags_spec, cmd_verify_spec;

enum cmd_parsed {
	CMD_GO,	  /* the arguments are in args: run */
	CMD_HELP, /* --help was printed: exit 0 */
	CMD_FAIL, /* err says what is wrong (kind CH_ERR_USAGE) */
};

/* Parses argv (argv[0] is the command name) into args by spec's table:
 * options and operands may be mixed, "--" ends the options, an option
 * may be abbreviated to a prefix of one.  Errors name the option and
 * suggest the closest one. */
enum cmd_parsed cmd_parse(const struct cmd_spec *spec, int argc, char **argv,
			  void *args, struct ch_error *err);
/* cmd_parse for a command's parse_args: 0 to go on, -1 after --help, or
 * the exit status after printing the error. */
int cmd_parse_args(const struct cmd_spec *spec, int argc, char **argv,
		   void *args);

/* Reads arg, the argument of option o, into field as o's type says
 * (CMD_INT to CMD_NAME); what names it in the message ("--rank",
 * "RANK").  0, or -1 with err set. */
int cmd_opt_value(const struct cmd_opt *o, const char *what, const char *arg,
		  void *field, struct ch_error *err);

/* ------------------------------------------------------------------ */
/* Reporting                                                            */

/* Sets the name used in messages ("pack" gives "chute pack: ..."). */
void cmd_set_name(const char *name);
const char *cmd_name(void);

/* The one path a failure takes out of a command: the body fills a struct
 * ch_error (a lib call does, or ch_error_usage, ch_error_set,
 * ch_error_errno, ch_error_data, ch_error_nomem of chute.h for cmd/'s own
 * failures) and returns -1; the command then returns cmd_fail(&err), which
 * names in err's message the options its settings are (cmd_name_settings),
 * prints "chute CMD: MESSAGE" on stderr and returns cmd_exit_status(err).
 * The message goes through ch_url_redact and ch_escape: no URL password
 * and no raw control byte ever reaches the terminal.  An empty message
 * was reported already (verify's list of problems): cmd_fail prints
 * nothing. */
struct ch_error;
int cmd_fail(struct ch_error *err);
/* Names in err's message the options that set the settings it concerns
 * (struct ch_error's setting and remedy, looked up in the running
 * command's table, then in its spec's `also`): "--seed: MESSAGE",
 * "MESSAGE (--force)", "MESSAGE (chute pack --part)"; clears them. */
void cmd_name_settings(struct ch_error *err);
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

/* Reads a whole number in [min, max] given to option `opt` (0), or sets
 * err (-1). */
int cmd_int_value(const char *opt, const char *s, long min, long max,
		  int *out, struct ch_error *err);
/* Reads a size (K, M, G suffixes) > 0 given to option `opt`. */
int cmd_size_value(const char *opt, const char *s, uint64_t *out,
		   struct ch_error *err);
/* Reads a whole number in [min, max] given to opt (an option or an
 * environment variable) into a uint64_t (0), or sets err (-1). */
int cmd_u64_value(const char *opt, const char *s, uint64_t min, uint64_t max,
		  uint64_t *out, struct ch_error *err);
/* The most parts a dataset is packed or verified in (--part, --parts). */
#define CMD_MAX_PARTS (1u << 20)
/* Reads --part's "I/N" (part I, from 0 to N-1, of N parts), or "none"
 * (*parts 0) when none_ok; 0, or -1 with err set. */
int cmd_part_value(const char *s, int none_ok, uint64_t *part,
		   uint64_t *parts, struct ch_error *err);

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

/* -q, --quiet (CMD_QUIET_OPT): every command takes it. */
void cmd_set_quiet(int quiet);
int cmd_quiet(void);

struct ch_progress;
/* The ch_progress_fn to give a long lib call (its arg unused): it draws
 * "PHASE: DONE/TOTAL UNIT, BYTES, RATE, eta TIME" on stderr, at most ten
 * times a second; NULL, so that the library counts nothing, when stderr
 * is not a terminal or -q was given. */
void (*cmd_progress(void))(const struct ch_progress *p, void *arg);
/* Wipes the line, if one is drawn: before any other text on stderr
 * (cmd_fail does it) and when the long call is over. */
void cmd_progress_clear(void);

/* ------------------------------------------------------------------ */
/* Remotes and transfers (push, pull, tags, gc)                                               */

struct ch_transfer_opts;
struct cmd_transfer {
	double start;
};
struct ch_store_opts;
struct ch_store;
/* --retries, which push and pull share: fn stores the value with
 * cmd_retries_value. */
#define CMD_RETRIES_OPT(fn)                                                 \
	CMD_OPT_CALL(0, "retries", "N", (fn),                               \
		     "retries with backoff (default $CHUTE_RETRIES, else 5)")
/* --retries N into so (0, or -1 with err set). */
int cmd_retries_value(const char *arg, struct ch_store_opts *so,
		      struct ch_error *err);
/* Starts the clock and the progress line of a transfer. */
void cmd_transfer_begin(struct cmd_transfer *t, struct ch_transfer_opts *o);
void cmd_transfer_end(struct cmd_transfer *t);
double cmd_transfer_seconds(const struct cmd_transfer *t);
/* Opens the store a REMOTE argument names (text NULL: the default
 * remote), resolved by ch_remote_arg (chute/remote.h); 0, or -1 with err
 * filled. */
int cmd_open_remote(const char *text, const char *dataset_dir,
		    enum ch_remote_use use, const struct ch_store_opts *opts,
		    struct ch_store **st, struct ch_error *err);

/* A ch_point_fn for tests (test_point.c): stops at the points
 * CHUTE_TEST_PAUSE lists, creating CHUTE_TEST_DIR/POINT and waiting for
 * CHUTE_TEST_DIR/POINT.go. */
void cmd_test_point(void *arg, const char *name);

#endif
