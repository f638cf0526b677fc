/*
 * stream_opts.c - the options of chute stream and chute bench, expanded
 * from the table of include/chute/stream_options.h: one row of
 * struct stream_option each, how an argument is read by its type, and the
 * members of struct ch_stream_opts set and got by option.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "stream_opts.h"

#define DESCRIBE(ID, SHORT, NAME, ARG, TYPE, LIMITS, OWNER, FIELD, DEFAULT, \
		 HASH, BENCH, RECORD, HELP)                                   \
	[CH_STREAM_OPT_##ID] = {                                              \
		.id = (SHORT) ? (SHORT) : CMD_LONG_ONLY + CH_STREAM_OPT_##ID, \
		.name = NAME, .arg = ARG, .help = HELP,                       \
		.bench_help = CH_SO_BENCH(BENCH),                             \
		.type = STREAM_##TYPE,                                        \
		.min = CH_SO_MIN(LIMITS), .max = CH_SO_MAX(LIMITS),           \
		.names = CH_SO_NAMES(LIMITS),                                 \
		.lib = IS_LIB_##OWNER, .field = OFFSET_##OWNER(FIELD),        \
		.record_at = CH_SO_RECORD_AT(RECORD),                         \
		.record_key = CH_SO_RECORD_KEY(RECORD),                       \
	},
#define IS_LIB_LIB 1
#define IS_LIB_CMD 0
#define OFFSET_LIB(field) offsetof(struct ch_stream_opts, field)
#define OFFSET_CMD(field) 0

const struct stream_option stream_options[CH_STREAM_OPT_COUNT] = {
	CH_STREAM_OPTIONS(DESCRIBE)
};

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

#define SET(ID, SHORT, NAME, ARG, TYPE, LIMITS, OWNER, FIELD, ...)         \
	SET_##OWNER(ID, TYPE, FIELD)
#define SET_LIB(ID, TYPE, FIELD)                                              \
	case CH_STREAM_OPT_##ID: o->FIELD = v->MEMBER_##TYPE; break;
#define SET_CMD(ID, TYPE, FIELD)

void stream_option_set(struct ch_stream_opts *o, int opt,
		       const union stream_value *v)
{
	switch (opt) {
	CH_STREAM_OPTIONS(SET)
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
	CH_STREAM_OPTIONS(GET)
	}
	return v;
}

void stream_cmd_opts(struct cmd_opt *out, int bench)
{
	size_t n = 0;
	for (size_t i = 0; i < CH_STREAM_OPT_COUNT; i++) {
		const struct stream_option *d = &stream_options[i];
		const char *help = bench ? d->bench_help : d->help;
		if (!help)
			continue;
		out[n++] = (struct cmd_opt){ d->id, d->name, d->arg,
					     *help ? help : d->help };
	}
	out[n] = (struct cmd_opt){ 0, NULL, NULL, NULL };
}

int stream_option_of(int id)
{
	for (int i = 0; i < CH_STREAM_OPT_COUNT; i++)
		if (stream_options[i].id == id)
			return i;
	return -1;
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

static int pick(const char *opt, const char *s, const char *const *names,
		int *out)
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
		cmd_error("invalid value '%s' for %s; did you mean '%s'?", s,
			  opt, near);
	else
		cmd_error("invalid value '%s' for %s: expected one of %s", s,
			  opt, list);
	return -1;
}

static int parse_threads(const char *opt, const char *s, int min, int max,
			 int *out)
{
	if (strcmp(s, "auto") == 0) {
		*out = CH_AUTO;
		return 0;
	}
	return cmd_parse_int(opt, s, min, max, out);
}

int stream_parse_value(int opt, const char *what, const char *arg,
		       union stream_value *v)
{
	const struct stream_option *d = &stream_options[opt];
	char dashed[64];
	if (!what) {
		snprintf(dashed, sizeof dashed, "--%s", d->name);
		what = dashed;
	}
	switch (d->type) {
	case STREAM_U64:
		return cmd_parse_u64(what, arg, d->min, d->max, &v->u64);
	case STREAM_SIZE0:
		if (strcmp(arg, "0") == 0) {
			v->u64 = 0;
			return 0;
		}
		return cmd_parse_size(what, arg, &v->u64);
	case STREAM_SIZE:
		return cmd_parse_size(what, arg, &v->u64);
	case STREAM_THREADS:
		return parse_threads(what, arg, (int)d->min, (int)d->max,
				     &v->i);
	case STREAM_NAME:
		return pick(what, arg, d->names, &v->i);
	case STREAM_SET:
	case STREAM_CLEAR:
		v->i = d->type == STREAM_SET;
		return 0;
	case STREAM_TEXT:
	case STREAM_LIST:
		v->text = arg;
		return 0;
	case STREAM_HELP:
		break;
	}
	return 0;
}

int stream_add_transform(struct ch_stream_opts *o, const char ***list,
			 size_t *n, const char *spec)
{
	const char **v = realloc(*list, (*n + 1) * sizeof(*v));
	if (!v)
		return cmd_error("out of memory");
	*list = v;
	v[(*n)++] = spec;
	o->transforms = v;
	o->ntransforms = *n;
	return 0;
}
