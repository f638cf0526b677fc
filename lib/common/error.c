/* common/error.c - filling a caller-owned struct ch_error. */
#include <stdarg.h>
#include <string.h>

#include "chute.h"

static void set(struct ch_error *err, int data, const char *fmt, va_list ap)
{
	if (!err)
		return;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	err->data = data;
}

int ch_error_set(struct ch_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	set(err, 0, fmt, ap);
	va_end(ap);
	return -1;
}

/* The data's fault: said twice, by the return value (for callers that
 * pass it up) and in err (for those that keep only err). */
int ch_error_data(struct ch_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	set(err, 1, fmt, ap);
	va_end(ap);
	return CH_DATA_ERROR;
}

int ch_error_errno(struct ch_error *err, int errnum, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		err->data = 0;
		if (n >= 0 && (size_t)n < sizeof(err->msg))
			snprintf(err->msg + n, sizeof(err->msg) - (size_t)n,
				 ": %s", strerror(errnum));
	}
	return -1;
}
