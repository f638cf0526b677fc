/* common/archive_shim.c - libarchive, loaded when an archive is first read
 * or written.
 *
 * Linking libarchive pulls in libxml2, ICU, libstdc++, nettle, acl and
 * the compressors, and the dynamic loader's work on them doubled the
 * start of every chute command (12.7 ms of CPU instead of 5.7), though
 * only pack's archive sources and export use it.  So chute does not link
 * it: these functions, with libarchive's own names and prototypes,
 * forward to the real ones, found with dlopen/dlsym the first time an
 * archive is read or written (ch_archive_load), as store/curl_shim.c does
 * for libcurl.
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
	X(archive_errno)                                                    \
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
	X(archive_write_new)                                                \
	X(archive_write_set_format_pax_restricted)                          \
	X(archive_write_add_filter_none)                                    \
	X(archive_write_open_fd)                                            \
	X(archive_write_header)                                             \
	X(archive_write_data)                                               \
	X(archive_write_close)                                              \
	X(archive_write_free)                                               \
	X(archive_entry_new)                                                \
	X(archive_entry_free)                                               \
	X(archive_entry_clear)                                              \
	X(archive_entry_pathname)                                           \
	X(archive_entry_pathname_utf8)                                      \
	X(archive_entry_filetype)                                           \
	X(archive_entry_hardlink)                                           \
	X(archive_entry_symlink)                                            \
	X(archive_entry_set_pathname)                                       \
	X(archive_entry_set_filetype)                                       \
	X(archive_entry_set_perm)                                           \
	X(archive_entry_set_size)                                           \
	X(archive_entry_set_mtime)                                          \
	X(archive_entry_set_uid)                                            \
	X(archive_entry_set_gid)

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
int archive_errno(struct archive *a) { return api.archive_errno(a); }

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

/* Writing */
struct archive *archive_write_new(void) { return api.archive_write_new(); }

int archive_write_set_format_pax_restricted(struct archive *a)
{
	return api.archive_write_set_format_pax_restricted(a);
}

int archive_write_add_filter_none(struct archive *a)
{
	return api.archive_write_add_filter_none(a);
}

int archive_write_open_fd(struct archive *a, int fd)
{
	return api.archive_write_open_fd(a, fd);
}

int archive_write_header(struct archive *a, struct archive_entry *ae)
{
	return api.archive_write_header(a, ae);
}

la_ssize_t archive_write_data(struct archive *a, const void *buf, size_t n)
{
	return api.archive_write_data(a, buf, n);
}

int archive_write_close(struct archive *a)
{
	return api.archive_write_close(a);
}

int archive_write_free(struct archive *a) { return api.archive_write_free(a); }

/* Entries */
struct archive_entry *archive_entry_new(void)
{
	return api.archive_entry_new();
}

void archive_entry_free(struct archive_entry *ae)
{
	api.archive_entry_free(ae);
}

struct archive_entry *archive_entry_clear(struct archive_entry *ae)
{
	return api.archive_entry_clear(ae);
}

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

void archive_entry_set_pathname(struct archive_entry *ae, const char *p)
{
	api.archive_entry_set_pathname(ae, p);
}

void archive_entry_set_filetype(struct archive_entry *ae, unsigned int t)
{
	api.archive_entry_set_filetype(ae, t);
}

void archive_entry_set_perm(struct archive_entry *ae, __LA_MODE_T m)
{
	api.archive_entry_set_perm(ae, m);
}

void archive_entry_set_size(struct archive_entry *ae, la_int64_t n)
{
	api.archive_entry_set_size(ae, n);
}

void archive_entry_set_mtime(struct archive_entry *ae, time_t s, long ns)
{
	api.archive_entry_set_mtime(ae, s, ns);
}

void archive_entry_set_uid(struct archive_entry *ae, la_int64_t id)
{
	api.archive_entry_set_uid(ae, id);
}

void archive_entry_set_gid(struct archive_entry *ae, la_int64_t id)
{
	api.archive_entry_set_gid(ae, id);
}
