/* common/error.c - filling a caller-owned struct ch_error. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include "common/internal.h"

static void set(struct ch_error *err, enum ch_error_kind kind,
		const char *fmt, va_list ap)
{
	if (!err)
		return;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	err->kind = kind;
	err->setting = err->remedy = NULL; /* a reused error's are stale */
}

int ch_error_set(struct ch_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	set(err, CH_ERR_IO, fmt, ap);
	va_end(ap);
	return -1;
}

int ch_error_data(struct ch_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	set(err, CH_ERR_DATA, fmt, ap);
	va_end(ap);
	return -1;
}

int ch_error_usage(struct ch_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	set(err, CH_ERR_USAGE, fmt, ap);
	va_end(ap);
	return -1;
}

int ch_error_interrupted(struct ch_error *err)
{
	if (err) {
		snprintf(err->msg, sizeof(err->msg), "interrupted");
		err->kind = CH_ERR_INTERRUPTED;
		err->setting = err->remedy = NULL;
	}
	return -1;
}

int ch_error_nomem(struct ch_error *err)
{
	if (err) {
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		err->kind = CH_ERR_MEMORY;
		err->setting = err->remedy = NULL;
	}
	return -1;
}

int ch_error_setting(struct ch_error *err, const char *key)
{
	if (err)
		err->setting = key;
	return -1;
}

int ch_error_remedy(struct ch_error *err, const char *key)
{
	if (err)
		err->remedy = key;
	return -1;
}

int ch_error_errno(struct ch_error *err, int errnum, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		set(err, errnum == ENOMEM ? CH_ERR_MEMORY : CH_ERR_IO, fmt, ap);
		va_end(ap);
		size_t n = strlen(err->msg);
		if (n + 1 < sizeof(err->msg))
			snprintf(err->msg + n, sizeof(err->msg) - n, ": %s",
				 strerror(errnum));
	}
	return -1;
}

int ch_error_if_missing(struct ch_error *err, const char *path)
{
	struct stat st;
	if (err && err->kind == CH_ERR_IO && stat(path, &st) < 0 &&
	    (errno == ENOENT || errno == ENOTDIR))
		err->kind = CH_ERR_DATA;
	return -1;
}
