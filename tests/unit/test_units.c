/*
 * test_units.c - numbers in text output: cmd_size_text,
 * cmd_duration_text, cmd_plural and cmd_count_text (cmd/units.c, compiled in here: the
 * unit tests link lib/ only).
 */
#include "../../cmd/units.c"
#include "unit.h"

static int size_is(uint64_t bytes, const char *want)
{
	char buf[CMD_SIZE_TEXT];
	return CHECK_STR(cmd_size_text(bytes, buf), want);
}

/* Three significant digits, SI units, and no "1000 kB" at a boundary. */
static void sizes(void)
{
	size_is(0, "0 B");
	size_is(999, "999 B");
	size_is(1000, "1.00 kB");
	size_is(47100000, "47.1 MB");
	size_is(4710000, "4.71 MB");
	size_is(471000000, "471 MB");
	size_is(999999, "1.00 MB");
	size_is(1200000000, "1.20 GB");
	size_is(UINT64_MAX, "18.4 EB");
}

static void durations(void)
{
	char buf[CMD_SIZE_TEXT];
	CHECK_STR(cmd_duration_text(42.4, buf), "42s");
	CHECK_STR(cmd_duration_text(187, buf), "3m07s");
	CHECK_STR(cmd_duration_text(7500, buf), "2h05m");
	CHECK_STR(cmd_duration_text(-1, buf), "?");
}

static void plurals(void)
{
	CHECK_STR(cmd_plural(1, "shard", "shards"), "shard");
	CHECK_STR(cmd_plural(0, "shard", "shards"), "shards");
	CHECK_STR(cmd_plural(2, "problem", "problems"), "problems");
}

/* The count and its word; the largest count still fits the buffer. */
static void counts(void)
{
	char buf[CMD_COUNT_TEXT];
	CHECK_STR(cmd_count_text(1, "manifest", "manifests", buf), "1 manifest");
	CHECK_STR(cmd_count_text(0, "shard", "shards", buf), "0 shards");
	CHECK_STR(cmd_count_text(12, "sample", "samples", buf), "12 samples");
	CHECK_STR(cmd_count_text(UINT64_MAX, "split file", "split files", buf),
		  "18446744073709551615 split files");
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(sizes),
		UNIT(durations),
		UNIT(plurals),
		UNIT(counts),
	};
	return unit_run(tests, UNIT_COUNT(tests));
}
