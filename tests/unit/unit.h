/*
 * unit.h - a tiny TAP harness for the unit tests of lib/.
 *
 *	static void round_trip(void)
 *	{
 *		CHECK(1 + 1 == 2);
 *		if (!CHECK_EQ_U64(f(), 3))
 *			return;		// what follows would be meaningless
 *		CHECK_STR(name, "ds");
 *	}
 *
 *	int main(void)
 *	{
 *		static const struct unit_test tests[] = {
 *			UNIT(round_trip),
 *		};
 *		return unit_run(tests, UNIT_COUNT(tests));
 *	}
 *
 * A test is a function and runs to its end; each failed check is listed
 * under the test's `not ok` line with the expression, file and line.
 * Checks are expressions worth 1 when they pass, so a test that cannot go
 * on stops itself with a visible return.  unit_note() adds a line (an
 * error message, say) to the current test's diagnostics, shown if it
 * fails.  The program exits 1 if any test failed.
 */
#ifndef UNIT_H
#define UNIT_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct unit_test {
	const char *name;
	void (*fn)(void);
};

#define UNIT(fn) { #fn, fn }
#define UNIT_COUNT(a) (sizeof(a) / sizeof((a)[0]))

#define CHECK(cond) unit_check(!!(cond), #cond, __FILE__, __LINE__)
#define CHECK_EQ_U64(a, b) \
	unit_check_u64((uint64_t)(a), (uint64_t)(b), #a, #b, __FILE__, __LINE__)
#define CHECK_STR(a, b) unit_check_str((a), (b), #a, #b, __FILE__, __LINE__)

/* Diagnostics of the running test, printed after its result line. */
static char unit_diag[8192];
static size_t unit_diag_len;
static int unit_failed;

static inline void unit_vadd(const char *fmt, va_list ap)
{
	size_t room = sizeof(unit_diag) - unit_diag_len;
	int n = vsnprintf(unit_diag + unit_diag_len, room, fmt, ap);

	if (n > 0)
		unit_diag_len += (size_t)n < room ? (size_t)n : room - 1;
}

static inline __attribute__((format(printf, 1, 2))) void
unit_add(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	unit_vadd(fmt, ap);
	va_end(ap);
}

/* One diagnostic line for the current test. */
static inline __attribute__((format(printf, 1, 2))) void
unit_note(const char *fmt, ...)
{
	va_list ap;

	unit_add("#   ");
	va_start(ap, fmt);
	unit_vadd(fmt, ap);
	va_end(ap);
	unit_add("\n");
}

/* Records a failure as "FILE:LINE: failed: WHAT" and returns 0. */
static inline __attribute__((format(printf, 3, 4))) int
unit_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	unit_failed = 1;
	unit_add("#   %s:%d: failed: ", file, line);
	va_start(ap, fmt);
	unit_vadd(fmt, ap);
	va_end(ap);
	unit_add("\n");
	return 0;
}

static inline int unit_check(int ok, const char *expr, const char *file,
			     int line)
{
	return ok ? 1 : unit_fail(file, line, "%s", expr);
}

static inline int unit_check_u64(uint64_t a, uint64_t b, const char *ea,
				 const char *eb, const char *file, int line)
{
	if (a == b)
		return 1;
	return unit_fail(file, line, "%s == %s: %" PRIu64 " != %" PRIu64, ea,
			 eb, a, b);
}

/* Equal strings; NULL equals only NULL. */
static inline int unit_check_str(const char *a, const char *b, const char *ea,
				 const char *eb, const char *file, int line)
{
	if (a == b || (a && b && strcmp(a, b) == 0))
		return 1;
	return unit_fail(file, line, "%s equals %s: %s%s%s != %s%s%s", ea, eb,
			 a ? "\"" : "", a ? a : "NULL", a ? "\"" : "",
			 b ? "\"" : "", b ? b : "NULL", b ? "\"" : "");
}

/* Runs every test in order, printing TAP; returns the exit status. */
static inline int unit_run(const struct unit_test *tests, size_t n)
{
	int failures = 0;

	printf("1..%zu\n", n);
	for (size_t i = 0; i < n; i++) {
		unit_diag_len = 0;
		unit_diag[0] = '\0';
		unit_failed = 0;
		tests[i].fn();
		printf("%s %zu - %s\n", unit_failed ? "not ok" : "ok", i + 1,
		       tests[i].name);
		if (unit_failed)
			fputs(unit_diag, stdout);
		fflush(stdout);
		failures += unit_failed;
	}
	if (failures)
		printf("# %d of %zu tests failed\n", failures, n);
	return failures ? 1 : 0;
}

#endif
