/*
 * units.c - numbers as people read them in text output: sizes with a
 * unit, durations, and words that agree with their count.  JSON output
 * keeps exact numbers; only text goes through here.
 */
#include <stdio.h>

#include "cmd.h"

const char *cmd_size_text(uint64_t bytes, char buf[CMD_SIZE_TEXT])
{
	/* SI units, as disks and network rates are sold: 1 MB = 10^6 B */
	static const char *const units[] = {"kB", "MB", "GB", "TB", "PB",
					    "EB"};
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 1000) {
		snprintf(buf, CMD_SIZE_TEXT, "%u B", (unsigned)bytes);
		return buf;
	}
	v /= 1000;
	while (v >= 999.95 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1000;
		u++;
	}
	/* three significant digits: "4.71 MB", "47.1 MB", "471 MB" */
	if (v < 9.995)
		snprintf(buf, CMD_SIZE_TEXT, "%.2f %s", v, units[u]);
	else if (v < 99.95)
		snprintf(buf, CMD_SIZE_TEXT, "%.1f %s", v, units[u]);
	else
		snprintf(buf, CMD_SIZE_TEXT, "%.0f %s", v, units[u]);
	return buf;
}

const char *cmd_duration_text(double seconds, char buf[CMD_SIZE_TEXT])
{
	if (!(seconds >= 0)) /* also NaN: an ETA not known yet */
		snprintf(buf, CMD_SIZE_TEXT, "?");
	else if (seconds < 60)
		snprintf(buf, CMD_SIZE_TEXT, "%.0fs", seconds);
	else if (seconds < 3600)
		snprintf(buf, CMD_SIZE_TEXT, "%um%02us",
			 (unsigned)(seconds / 60), (unsigned)seconds % 60);
	else
		snprintf(buf, CMD_SIZE_TEXT, "%uh%02um",
			 (unsigned)(seconds / 3600),
			 (unsigned)(seconds / 60) % 60);
	return buf;
}

const char *cmd_plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

const char *cmd_count_text(uint64_t n, const char *one, const char *many,
			   char buf[CMD_COUNT_TEXT])
{
	snprintf(buf, CMD_COUNT_TEXT, "%llu %s", (unsigned long long)n,
		 cmd_plural(n, one, many));
	return buf;
}
