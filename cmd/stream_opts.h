/*
 * stream_opts.h - the options of chute stream and chute bench as the
 * command sees them, made from their one declaration in stream_rows.h:
 * the option tables that cmd_parse reads and --help prints, reading an
 * argument into a value, and the values of struct ch_stream_opts by
 * option (for the run record).
 */
#ifndef CHUTE_STREAM_OPTS_H
#define CHUTE_STREAM_OPTS_H

#include <stdint.h>

#include "chute/stream.h"
#include "chute/stream_options.h"
#include "cmd.h"
#include "stream_rows.h"

enum stream_type {
	STREAM_U64, STREAM_SIZE, STREAM_SIZE0, STREAM_THREADS, STREAM_NAME,
	STREAM_SET, STREAM_CLEAR, STREAM_TEXT, STREAM_LIST, STREAM_HELP,
	STREAM_QUIET,
};

/* What the run record needs of a row; see stream_rows.h for the
 * columns. */
struct stream_option {
	const char *name;
	enum stream_type type;
	uint64_t min, max;	  /* STREAM_U64 */
	const char *const *names; /* STREAM_NAME, NULL-terminated */
	int lib;		  /* a member of struct ch_stream_opts */
	size_t field;		  /* its offset there (lib) */
	int record_at;		  /* position in the run record, or -1 */
	const char *record_key;	  /* and its key there */
};

extern const struct stream_option stream_options[CH_STREAM_OPT_COUNT];

/* The option tables of chute stream (every row, in the order of the
 * enum) and of chute bench (the rows marked BENCH), into struct
 * stream_args; each ends with {0}. */
extern const struct cmd_opt stream_cmd_opts[CH_STREAM_OPT_COUNT + 1];
extern const struct cmd_opt bench_cmd_opts[];

/* The option named name ("batch-size"), or -1. */
int stream_option_named(const char *name);

/* One option's value: u64 (U64, SIZE, SIZE0), i (THREADS, NAME, SET,
 * CLEAR), text (TEXT; LIST as read), or list (LIST in
 * struct ch_stream_opts, whose count is beside it). */
union stream_value {
	uint64_t u64;
	int i;
	const char *text;
	const char *const *list;
};

/* Reads arg, the argument of option opt (none for a flag), into *v;
 * fills err and returns -1 when it is out of bounds or unknown.  what
 * names it in the message ("--rank", "RANK"). */
int stream_parse_value(int opt, const char *what, const char *arg,
		       union stream_value *v, struct ch_error *err);

/* Option opt's member of o (a LIB option; --transform's count is the
 * caller's). */
void stream_option_set(struct ch_stream_opts *o, int opt,
		       const union stream_value *v);
union stream_value stream_option_get(const struct ch_stream_opts *o,
				     int opt);

/* The option the run record keeps at position at, or -1. */
int stream_option_recorded(int at);

/* 1 if option opt shapes the stream: the run record keeps its member of
 * struct ch_stream_opts. */
int stream_option_shapes(int opt);

/* The name of value v of a NAME option ("jsonl" for --format 1). */
const char *stream_option_name(int opt, int v);

/* Adds --transform spec to *list (n of them, the caller frees the list)
 * and points o's transforms at it; 0, or -1 with err set. */
int stream_add_transform(struct ch_stream_opts *o, const char ***list,
			 size_t *n, const char *spec, struct ch_error *err);

#endif
