/*
 * stream_opts.h - the options of chute stream and chute bench as the
 * command sees them, made from their one declaration in
 * include/chute/stream_options.h: the tables that parse them and print
 * --help, reading an argument into a value, and the values of
 * struct ch_stream_opts by option (for the run record).
 */
#ifndef CHUTE_STREAM_OPTS_H
#define CHUTE_STREAM_OPTS_H

#include <stdint.h>

#include "chute/stream.h"
#include "chute/stream_options.h"
#include "cmd.h"

enum stream_type {
	STREAM_U64, STREAM_SIZE, STREAM_SIZE0, STREAM_THREADS, STREAM_NAME,
	STREAM_SET, STREAM_CLEAR, STREAM_TEXT, STREAM_LIST, STREAM_HELP,
};

/* One row of the table; see chute/stream_options.h for the columns. */
struct stream_option {
	int id;			  /* the parser's: SHORT, or CMD_LONG_ONLY+n */
	const char *name, *arg, *help;
	const char *bench_help;	  /* NULL: not chute bench's; "": help */
	enum stream_type type;
	uint64_t min, max;	  /* STREAM_U64 */
	const char *const *names; /* STREAM_NAME, NULL-terminated */
	int lib;		  /* a member of struct ch_stream_opts */
	size_t field;		  /* its offset there (lib) */
	int record_at;		  /* position in the run record, or -1 */
	const char *record_key;	  /* and its key there */
};

extern const struct stream_option stream_options[CH_STREAM_OPT_COUNT];

/* One option's value: u64 (U64, SIZE, SIZE0), i (THREADS, NAME, SET,
 * CLEAR), text (TEXT; LIST as read), or list (LIST in
 * struct ch_stream_opts, whose count is beside it). */
union stream_value {
	uint64_t u64;
	int i;
	const char *text;
	const char *const *list;
};

/* Fills out (CH_STREAM_OPT_COUNT + 1 entries) with the options of chute
 * stream, or of chute bench, ending with {0}. */
void stream_cmd_opts(struct cmd_opt *out, int bench);

/* The option whose parser id is id (a struct cmd_opt's), or -1. */
int stream_option_of(int id);

/* Reads arg, the argument of option opt (none for a flag), into *v;
 * says why and returns -1 when it is out of bounds or unknown.  what
 * names it in the message ("--rank", "RANK"). */
int stream_parse_value(int opt, const char *what, const char *arg,
		       union stream_value *v);

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
 * and points o's transforms at it; says why and returns EXIT_USAGE when
 * out of memory. */
int stream_add_transform(struct ch_stream_opts *o, const char ***list,
			 size_t *n, const char *spec);

#endif
