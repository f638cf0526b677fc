/*
 * stream_opts.c - the options of chute stream and chute bench, expanded
 * from the table of stream_rows.h: their option tables (the rows
 * cmd_parse reads), one row of struct stream_option each for the run
 * record, how an argument is read by its type, and the members of
 * struct ch_stream_opts set and got by option.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "stream.h"
#include "stream_opts.h"

#define DESCRIBE(ID, SHORT, NAME, ARG, TYPE, LIMITS, OWNER, FIELD, BENCH, \
		 RECORD, HELP)                                             \
	[CH_STREAM_OPT_##ID] = {                                           \
		.name = NAME, .type = STREAM_##TYPE,                       \
		.min = STREAM_MIN(LIMITS), .max = STREAM_MAX(LIMITS),      \
		.names = STREAM_NAMES(LIMITS),                             \
		.lib = IS_LIB_##OWNER, .field = OFFSET_##OWNER(FIELD),     \
		.record_at = STREAM_RECORD_AT(RECORD),                     \
		.record_key = STREAM_RECORD_KEY(RECORD),                   \
	},
#define IS_LIB_LIB 1
#define IS_LIB_CMD 0
#define OFFSET_LIB(field) offsetof(struct ch_stream_opts, field)
#define OFFSET_CMD(field) 0

const struct stream_option stream_options[CH_STREAM_OPT_COUNT] = {
	STREAM_OPTIONS(DESCRIBE)
};

/* ------------------------------------------------------------------ */
/* The option tables                                                    */

/* --transform, repeatable: into the list of struct stream_args. */
static int take_transform(const char *arg, void *args, struct ch_error *err)
{
	struct stream_args *a = args;
	return stream_add_transform(&a->o, &a->transforms, &a->ntransforms,
				    arg, err);
}

/* How cmd_parse reads each TYPE (a LIST by a function of its own), and
 * where the value goes: a LIB option's member of the args' struct
 * ch_stream_opts, a CMD option's of struct stream_args itself (none for
 * --help and -q). */
#define CMD_TYPE_U64 CMD_U64, NULL
#define CMD_TYPE_SIZE CMD_SIZE, NULL
#define CMD_TYPE_SIZE0 CMD_SIZE0, NULL
#define CMD_TYPE_THREADS CMD_THREADS, NULL
#define CMD_TYPE_NAME CMD_NAME, NULL
#define CMD_TYPE_SET CMD_FLAG, NULL
#define CMD_TYPE_CLEAR CMD_CLEAR, NULL
#define CMD_TYPE_TEXT CMD_TEXT, NULL
#define CMD_TYPE_LIST CMD_CALL, take_transform
#define CMD_TYPE_HELP CMD_SHOW_HELP, NULL
#define CMD_TYPE_QUIET CMD_SET_QUIET, NULL
#define AT_LIB(TYPE, field) offsetof(struct stream_args, o.field)
#define AT_CMD(TYPE, field) AT_CMD_##TYPE(field)
#define AT_CMD_SET(field) offsetof(struct stream_args, field)
#define AT_CMD_TEXT(field) offsetof(struct stream_args, field)
#define AT_CMD_SIZE(field) offsetof(struct stream_args, field)
#define AT_CMD_U64(field) offsetof(struct stream_args, field)
#define AT_CMD_HELP(field) 0
#define AT_CMD_QUIET(field) 0

#define ROW(SHORT, NAME, ARG, TYPE, LIMITS, OWNER, FIELD, HELP)            \
	ROW_(SHORT, NAME, ARG, HELP, CMD_TYPE_##TYPE, AT_##OWNER(TYPE, FIELD), \
	     LIMITS)
#define ROW_(...) ROW__(__VA_ARGS__)
#define ROW__(SHORT, NAME, ARG, HELP, CTYPE, PARSE, AT, LIMITS)            \
	{ (SHORT), NAME, ARG, HELP, CTYPE, AT, 0, STREAM_MIN(LIMITS),        \
	  STREAM_MAX(LIMITS), STREAM_NAMES(LIMITS), PARSE },

#define STREAM_ROW(ID, SHORT, NAME, ARG, TYPE, LIMITS, OWNER, FIELD, BENCH, \
		   RECORD, HELP)                                             \
	ROW(SHORT, NAME, ARG, TYPE, LIMITS, OWNER, FIELD, HELP)

const struct cmd_opt stream_cmd_opts[CH_STREAM_OPT_COUNT + 1] = {
	STREAM_OPTIONS(STREAM_ROW) CMD_OPT_END
};

/* chute bench's rows: those marked BENCH, with HELP, or BENCH_HELP's
 * line instead.  BENCH_IF(BENCH) keeps what follows or drops it. */
#define BENCH_ROW(ID, SHORT, NAME, ARG, TYPE, LIMITS, OWNER, FIELD, BENCH, \
		  RECORD, HELP)                                             \
	BENCH_IF(BENCH)(ROW(SHORT, NAME, ARG, TYPE, LIMITS, OWNER, FIELD,   \
			    BENCH_LINE(BENCH, HELP)))
#define BENCH_IF(bench) BENCH_IF_##bench
#define BENCH_IF_BENCH BENCH_KEEP
#define BENCH_IF_BENCH_HELP(help) BENCH_KEEP
#define BENCH_IF__ BENCH_DROP
#define BENCH_KEEP(...) __VA_ARGS__
#define BENCH_DROP(...)
#define BENCH_LINE(bench, help) BENCH_LINE_##bench(help)
#define BENCH_LINE_BENCH(help) help
#define BENCH_LINE_BENCH_HELP(line) line BENCH_DROP
#define BENCH_LINE__(help) help

const struct cmd_opt bench_cmd_opts[] = {
	STREAM_OPTIONS(BENCH_ROW) CMD_OPT_END
};

int stream_option_named(const char *name)
{
	for (int i = 0; i < CH_STREAM_OPT_COUNT; i++)
		if (strcmp(stream_options[i].name, name) == 0)
			return i;
	return -1;
}

/* The member of union stream_value that holds a value of each type. */
#define MEMBER_U64 u64
#define MEMBER_SIZE u64
#define MEMBER_SIZE0 u64
#define MEMBER_THREADS i
#define MEMBER_NAME i
#define MEMBER_SET i
#define MEMBER_CLEAR i
#define MEMBER_TEXT text
#define MEMBER_LIST list
#define MEMBER_HELP i
#define MEMBER_QUIET i

#define SET(ID, SHORT, NAME, ARG, TYPE, LIMITS, OWNER, FIELD, ...)          \
	SET_##OWNER(ID, TYPE, FIELD)
#define SET_LIB(ID, TYPE, FIELD)                                              \
	case CH_STREAM_OPT_##ID: o->FIELD = v->MEMBER_##TYPE; break;
#define SET_CMD(ID, TYPE, FIELD)

void stream_option_set(struct ch_stream_opts *o, int opt,
		       const union stream_value *v)
{
	switch (opt) {
	STREAM_OPTIONS(SET)
	}
}

#define GET(ID, SHORT, NAME, ARG, TYPE, LIMITS, OWNER, FIELD, ...)         \
	GET_##OWNER(ID, TYPE, FIELD)
#define GET_LIB(ID, TYPE, FIELD)                                              \
	case CH_STREAM_OPT_##ID: v.MEMBER_##TYPE = o->FIELD; break;
#define GET_CMD(ID, TYPE, FIELD)

union stream_value stream_option_get(const struct ch_stream_opts *o, int opt)
{
	union stream_value v = {0};
	switch (opt) {
	STREAM_OPTIONS(GET)
	}
	return v;
}

int stream_option_recorded(int at)
{
	for (int i = 0; i < CH_STREAM_OPT_COUNT; i++)
		if (stream_options[i].record_at == at)
			return i;
	return -1;
}

int stream_option_shapes(int opt)
{
	const struct stream_option *d = &stream_options[opt];
	for (int i = 0; d->lib && i < CH_STREAM_OPT_COUNT; i++)
		if (stream_options[i].record_at >= 0 && stream_options[i].lib &&
		    stream_options[i].field == d->field)
			return 1;
	return 0;
}

const char *stream_option_name(int opt, int v)
{
	const char *const *names = stream_options[opt].names;
	for (int i = 0; names && names[i]; i++)
		if (i == v)
			return names[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Reading an argument                                                  */

int stream_parse_value(int opt, const char *what, const char *arg,
		       union stream_value *v, struct ch_error *err)
{
	const struct cmd_opt *o = &stream_cmd_opts[opt];
	char dashed[64];
	if (!what) {
		snprintf(dashed, sizeof dashed, "--%s", o->name);
		what = dashed;
	}
	switch (o->type) {
	case CMD_FLAG:
	case CMD_CLEAR:
		v->i = o->type == CMD_FLAG;
		return 0;
	case CMD_CALL: /* --transform: one of the list */
		v->text = arg;
		return 0;
	default:
		/* the union's members start where it does */
		return cmd_opt_value(o, what, arg, v, err);
	}
}

int stream_add_transform(struct ch_stream_opts *o, const char ***list,
			 size_t *n, const char *spec, struct ch_error *err)
{
	const char **v = realloc(*list, (*n + 1) * sizeof(*v));
	if (!v)
		return ch_error_set(err, "out of memory");
	*list = v;
	v[(*n)++] = spec;
	o->transforms = v;
	o->ntransforms = *n;
	return 0;
}
