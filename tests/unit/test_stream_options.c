/* test_stream_options.c - the tables of chute stream's options against
 * what they stand for: the library's (chute/stream_options.h: the
 * options hash of cursors, the defaults of ch_stream_opts_init) and
 * cmd/'s (cmd/stream_rows.h: the types, help lines and run record
 * positions), which name the same members of struct ch_stream_opts. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "chute.h"
#include "chute/stream_options.h"
#include "stream/plan.h"
#include "unit.h"
#include "../../cmd/stream_rows.h"

enum { T_U64, T_SIZE, T_SIZE0, T_THREADS, T_NAME, T_SET, T_CLEAR, T_TEXT,
       T_LIST, T_HELP, T_QUIET };

/* Cursors saved by every chute so far carry these: the hash is frozen. */
static void the_options_hash_is_what_it_was(void)
{
	static const char *const t[] = { "cls: int", "jpg: decode | flip" };
	struct ch_stream_opts o;
	ch_stream_opts_init(&o);
	CHECK_EQ_U64(ch_stream_options_hash(&o), 0x231c1fc8);
	o.shuffle = CH_SHUFFLE_WINDOW;
	o.window = 7;
	o.seed = 99;
	o.batch_size = 32;
	o.drop_last = 1;
	CHECK_EQ_U64(ch_stream_options_hash(&o), 0xaa3a48b6);
	o.split = "train";
	o.transforms = t;
	o.ntransforms = 2;
	CHECK_EQ_U64(ch_stream_options_hash(&o), 0x3747959c);
	o.eval = 1;
	CHECK_EQ_U64(ch_stream_options_hash(&o), 0x0c66d817);
}

/* The library's rows, by member: name, offset, whether hashed. */
struct lib_row {
	const char *name;
	size_t field;
	int hashed;
};
#define LIB_ROW(NAME, FIELD, DEFAULT, HASH)                                  \
	{ NAME, offsetof(struct ch_stream_opts, FIELD), CH_SO_HASHED(HASH) },
static const struct lib_row lib_rows[] = { CH_STREAM_OPTIONS(LIB_ROW) };

static const struct lib_row *lib_row(const char *name)
{
	for (size_t i = 0; i < UNIT_COUNT(lib_rows); i++)
		if (strcmp(lib_rows[i].name, name) == 0)
			return &lib_rows[i];
	return NULL;
}

/* Every LIB row of cmd/'s table names a member of the library's table
 * (--no-drop-last: --drop-last's), and every row of the library's is a
 * LIB row there. */
#define CMD_LIB_NAME(ID, SHORT, NAME, ARG, TYPE, LIMITS, OWNER, FIELD,      \
		     BENCH, RECORD, HELP)                                    \
	CMD_LIB_NAME_##OWNER(NAME, FIELD)
#define CMD_LIB_NAME_CMD(NAME, FIELD)
#define CMD_LIB_NAME_LIB(NAME, FIELD)                                      \
	{ NAME, offsetof(struct ch_stream_opts, FIELD), 0 },

static void the_two_tables_name_the_same_members(void)
{
	static const struct lib_row cmd_rows[] = {
		STREAM_OPTIONS(CMD_LIB_NAME)
	};
	for (size_t i = 0; i < UNIT_COUNT(cmd_rows); i++) {
		const struct lib_row *l = lib_row(cmd_rows[i].name);
		if (strcmp(cmd_rows[i].name, "no-drop-last") == 0)
			l = lib_row("drop-last");
		if (!CHECK(l && l->field == cmd_rows[i].field))
			unit_note("--%s", cmd_rows[i].name);
	}
	for (size_t i = 0; i < UNIT_COUNT(lib_rows); i++) {
		size_t k = 0;
		while (k < UNIT_COUNT(cmd_rows) &&
		       strcmp(cmd_rows[k].name, lib_rows[i].name) != 0)
			k++;
		if (!CHECK(k < UNIT_COUNT(cmd_rows)))
			unit_note("--%s", lib_rows[i].name);
	}
}

/* Another value of a member of struct ch_stream_opts; 0 for --no-drop-last,
 * which is --drop-last's member the other way. */
static const char *const one_transform[] = { "cls: int" };
#define CHANGE_U64(o, f) ((o).f += 1, 1)
#define CHANGE_SIZE(o, f) ((o).f += 1, 1)
#define CHANGE_SIZE0(o, f) ((o).f += 1, 1)
#define CHANGE_THREADS(o, f) ((o).f = 3, 1)
#define CHANGE_NAME(o, f) ((o).f = !(o).f, 1)
#define CHANGE_SET(o, f) ((o).f = !(o).f, 1)
#define CHANGE_CLEAR(o, f) 0
#define CHANGE_TEXT(o, f) ((o).f = "x", 1)
#define CHANGE_LIST(o, f) ((o).f = one_transform, (o).ntransforms = 1, 1)

#define PERTURB(ID, SHORT, NAME, ARG, TYPE, LIMITS, OWNER, FIELD, BENCH,    \
		RECORD, HELP)                                                \
	PERTURB_##OWNER(NAME, TYPE, FIELD)
#define PERTURB_CMD(NAME, TYPE, FIELD)
#define PERTURB_LIB(NAME, TYPE, FIELD)                                     \
	{                                                                    \
		struct ch_stream_opts o = base;                              \
		const struct lib_row *l = lib_row(NAME);                     \
		if (l && CHANGE_##TYPE(o, FIELD) &&                          \
		    !CHECK((ch_stream_options_hash(&o) != h) == l->hashed))  \
			unit_note("--%s", NAME);                             \
	}

/* An option marked HASHED changes the hash, any other leaves it; in
 * window mode and train, where each of them counts. */
static void the_hashed_options_are_those_of_the_hash(void)
{
	struct ch_stream_opts base;
	ch_stream_opts_init(&base);
	base.shuffle = CH_SHUFFLE_WINDOW;
	uint32_t h = ch_stream_options_hash(&base);
	STREAM_OPTIONS(PERTURB)
}

static void a_refused_cursor_names_the_hashed_options(void)
{
	CHECK_STR(ch_stream_options_hashed(),
		  "batch-size drop-last fields mode seed shuffle source-field "
		  "split transform window");
}

/* "256M" for 256 << 20. */
static void size_text(char *out, size_t size, uint64_t v)
{
	static const char units[] = "KMG";
	int u = -1;
	while (u < 2 && v && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	snprintf(out, size, "%llu%.*s", (unsigned long long)v, u >= 0 ? 1 : 0,
		 u >= 0 ? &units[u] : "");
}

static void help_states(const char *name, int type, uint64_t value,
			const char *const *names, const char *help)
{
	char text[32], a[48], b[48];
	if (type == T_NAME) {
		snprintf(a, sizeof a, "%s (default)", names[value]);
		if (!CHECK(strstr(help, a)))
			unit_note("--%s: \"%s\" says nothing of %s", name, help,
				  a);
		return;
	}
	if (type == T_SIZE || type == T_SIZE0)
		size_text(text, sizeof text, value);
	else
		snprintf(text, sizeof text, "%llu", (unsigned long long)value);
	snprintf(a, sizeof a, "default %s)", text);
	snprintf(b, sizeof b, "else %s)", text);
	if (!CHECK(strstr(help, a) || strstr(help, b)))
		unit_note("--%s: \"%s\" does not say %s", name, help, text);
}

#define HELP_DEFAULT(ID, SHORT, NAME, ARG, TYPE, LIMITS, OWNER, FIELD,      \
		     BENCH, RECORD, HELP)                                    \
	HELP_DEFAULT_##OWNER(NAME, T_##TYPE, FIELD, STREAM_NAMES(LIMITS), HELP)
#define HELP_DEFAULT_CMD(NAME, TYPE, FIELD, NAMES, HELP)
#define HELP_DEFAULT_LIB(NAME, TYPE, FIELD, NAMES, HELP)                   \
	if (TYPE <= T_SIZE0 || TYPE == T_NAME)                               \
		help_states(NAME, TYPE, (uint64_t)o.FIELD, NAMES, HELP);

/* What ch_stream_opts_init stores is what --help says. */
static void the_defaults_are_those_of_the_help(void)
{
	struct ch_stream_opts o;
	ch_stream_opts_init(&o);
	STREAM_OPTIONS(HELP_DEFAULT)
}

#define RECORD_AT(ID, SHORT, NAME, ARG, TYPE, LIMITS, OWNER, FIELD, BENCH,  \
		  RECORD, HELP)                                              \
	STREAM_RECORD_AT(RECORD),

static void record_positions_are_each_taken_once(void)
{
	static const int at[] = { STREAM_OPTIONS(RECORD_AT) };
	int seen[CH_STREAM_RECORD_KEYS] = {0};
	for (size_t i = 0; i < UNIT_COUNT(at); i++) {
		if (at[i] < 0)
			continue;
		if (CHECK(at[i] < CH_STREAM_RECORD_KEYS))
			seen[at[i]]++;
	}
	for (int k = 0; k < CH_STREAM_RECORD_KEYS; k++)
		if (!CHECK(seen[k] == 1))
			unit_note("position %d: %d options", k, seen[k]);
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(the_options_hash_is_what_it_was),
		UNIT(the_two_tables_name_the_same_members),
		UNIT(the_hashed_options_are_those_of_the_hash),
		UNIT(a_refused_cursor_names_the_hashed_options),
		UNIT(the_defaults_are_those_of_the_help),
		UNIT(record_positions_are_each_taken_once),
	};
	return unit_run(tests, UNIT_COUNT(tests));
}
