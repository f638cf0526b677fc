/* common/archive_shim.c - libarchive, loaded when an archive is first
 * read.
 *
 * Linking libarchive pulls in libxml2, ICU, libstdc++, nettle, acl and
 * the compressors, and the dynamic loader's work on them doubled the
 * start of every chute command (12.7 ms of CPU instead of 5.7), though
 * only pack's archive sources use it (chute export writes its tars itself,
 * stream/encode_tar.c).  So chute does not link it: these functions, with
 * libarchive's own names and prototypes, forward to the real ones, found
 * with dlopen/dlsym the first time an archive is read (ch_archive_load),
 * as store/curl_shim.c does for libcurl.
 *
 * The table of functions is process-wide state: written once, under
 * pthread_once, and only read afterwards. */
#include <archive.h>
#include <archive_entry.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "common/internal.h"

/* Every function chute calls, once: the table's fields and what load
 * looks up are made from this list. */
#define ARCHIVE_FUNCTIONS(X)                                                \
	X(archive_error_string)                                             \
	X(archive_set_error)                                                \
	X(archive_read_new)                                                 \
	X(archive_read_support_filter_all)                                  \
	X(archive_read_support_format_7zip)                                 \
	X(archive_read_support_format_cpio)                                 \
	X(archive_read_support_format_tar)                                  \
	X(archive_read_support_format_zip)                                  \
	X(archive_read_open)                                                \
	X(archive_read_open_filename)                                       \
	X(archive_read_open_memory)                                         \
	X(archive_read_next_header)                                         \
	X(archive_read_data)                                                \
	X(archive_read_free)                                                \
	X(archive_entry_pathname)                                           \
	X(archive_entry_pathname_utf8)                                      \
	X(archive_entry_filetype)                                           \
	X(archive_entry_hardlink)                                           \
	X(archive_entry_symlink)

/* A pointer of the function's own type, checked against archive.h. */
#define FIELD(name) __typeof__(name) *name;
static struct {
	ARCHIVE_FUNCTIONS(FIELD)
} api;
#undef FIELD

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *load_error; /* NULL when every symbol was found */

#define FIND(name)                                                          \
	if (!(*(void **)&api.name = dlsym(lib, #name))) {                   \
		load_error = "a libarchive without " #name;                 \
		return;                                                     \
	}

static void load(void)
{
	void *lib = dlopen("libarchive.so.13", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		load_error = "libarchive.so.13 could not be loaded (install "
			     "libarchive13, or libarchive-dev to build)";
		return;
	}
	ARCHIVE_FUNCTIONS(FIND)
	/* the library stays loaded: a reader may be open to the end */
}
#undef FIND

int ch_archive_load(const char *use, struct ch_error *err)
{
	pthread_once(&once, load);
	if (load_error)
		return ch_error_set(err, "cannot %s: %s", use, load_error);
	return 0;
}

/* Errors */
const char *archive_error_string(struct archive *a)
{
	return api.archive_error_string(a);
}

/* Formatted here, so the real one is given a plain "%s". */
void archive_set_error(struct archive *a, int e, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	api.archive_set_error(a, e, "%s", msg);
}

/* Reading */
struct archive *archive_read_new(void) { return api.archive_read_new(); }

int archive_read_support_filter_all(struct archive *a)
{
	return api.archive_read_support_filter_all(a);
}

int archive_read_support_format_7zip(struct archive *a)
{
	return api.archive_read_support_format_7zip(a);
}

int archive_read_support_format_cpio(struct archive *a)
{
	return api.archive_read_support_format_cpio(a);
}

int archive_read_support_format_tar(struct archive *a)
{
	return api.archive_read_support_format_tar(a);
}

int archive_read_support_format_zip(struct archive *a)
{
	return api.archive_read_support_format_zip(a);
}

int archive_read_open(struct archive *a, void *data,
		      archive_open_callback *open, archive_read_callback *read,
		      archive_close_callback *close)
{
	return api.archive_read_open(a, data, open, read, close);
}

int archive_read_open_filename(struct archive *a, const char *path,
			       size_t block)
{
	return api.archive_read_open_filename(a, path, block);
}

int archive_read_open_memory(struct archive *a, const void *buf, size_t n)
{
	return api.archive_read_open_memory(a, buf, n);
}

int archive_read_next_header(struct archive *a, struct archive_entry **ae)
{
	return api.archive_read_next_header(a, ae);
}

la_ssize_t archive_read_data(struct archive *a, void *buf, size_t n)
{
	return api.archive_read_data(a, buf, n);
}

int archive_read_free(struct archive *a) { return api.archive_read_free(a); }

/* Entries */
const char *archive_entry_pathname(struct archive_entry *ae)
{
	return api.archive_entry_pathname(ae);
}

const char *archive_entry_pathname_utf8(struct archive_entry *ae)
{
	return api.archive_entry_pathname_utf8(ae);
}

__LA_MODE_T archive_entry_filetype(struct archive_entry *ae)
{
	return api.archive_entry_filetype(ae);
}

const char *archive_entry_hardlink(struct archive_entry *ae)
{
	return api.archive_entry_hardlink(ae);
}

const char *archive_entry_symlink(struct archive_entry *ae)
{
	return api.archive_entry_symlink(ae);
}
