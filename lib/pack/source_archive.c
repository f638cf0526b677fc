/*
 * pack/source_archive.c - archives (tar, tar.gz, tar.zst, zip, ...) as a pack
 * source, read through libarchive without extracting anything.
 *
 * Member data is copied into the catalog's spool file, an unlinked
 * temporary file, so that the packer can later read every member at random
 * like a plain file while the archive itself is read once, front to back
 * (a compressed tar cannot be read any other way).
 */
#include "pack/catalog.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <locale.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Member data is copied through a buffer of this size: bounded memory
 * whatever the size of a member. */
#define COPY_CHUNK (1u << 20)

/* Everything one scan needs, so that helpers take one argument. */
struct scan {
	struct ch_catalog *cat;
	const char *path; /* the archive */
	struct archive *ar;
	uint8_t *buf;	  /* COPY_CHUNK bytes */
	char *member;	  /* current member name, for messages */
	uint64_t done;	  /* bytes of it read so far, for messages */
};

/* A reader that detects the compression and the container by content,
 * never by file name.  NULL with err set: libarchive could not be loaded,
 * or no memory. */
static struct archive *reader_new(struct ch_error *err)
{
	struct archive *ar;

	if (ch_archive_load("read tar/zip archives", err) < 0)
		return NULL;
	if (!(ar = archive_read_new())) {
		ch_error_nomem(err);
		return NULL;
	}
	archive_read_support_filter_all(ar);
	archive_read_support_format_tar(ar);
	archive_read_support_format_zip(ar);
	archive_read_support_format_7zip(ar);
	archive_read_support_format_cpio(ar);
	return ar;
}

int ch_source_is_archive(const char *path, struct ch_error *err)
{
	struct archive *ar = NULL;
	struct archive_entry *ae;
	struct stat st;
	int r, yes = 0;

	/* A folder or a device is never an archive source. */
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	ar = reader_new(err);
	if (!ar)
		return -1;
	if (archive_read_open_filename(ar, path, 64 * 1024) != ARCHIVE_OK)
		goto done;
	/* The format is only known once the first header has been read; an
	 * empty tar (end marker only) reads as EOF and is still a tar. */
	r = archive_read_next_header(ar, &ae);
	yes = r == ARCHIVE_OK || r == ARCHIVE_WARN || r == ARCHIVE_EOF;
done:
	archive_read_free(ar);
	return yes;
}

/* A named spool file, unlinked at once: for file systems without
 * O_TMPFILE.  Returns the descriptor, *name the (gone) name. */
static int spool_named(const char *dir, char **name, struct ch_error *err)
{
	int fd;

	if (asprintf(name, "%s/.chute-spool-XXXXXX", dir) < 0) {
		*name = NULL;
		return ch_error_set(err, "cannot create a spool file in '%s': "
					 "out of memory", dir);
	}
	fd = mkostemp(*name, O_CLOEXEC);
	if (fd < 0)
		return ch_error_errno(err, errno,
				      "cannot create a spool file in '%s'",
				      dir);
	unlink(*name);
	return fd;
}

/* Creates the spool file in the catalog's temporary folder: an anonymous
 * O_TMPFILE where the file system supports it, otherwise a named file
 * unlinked at once.  Either way nothing is left behind after a crash.
 * An O_TMPFILE has no name: spool_path then names its folder, which
 * messages show and which unlink() can never remove. */
static int spool_create(struct ch_catalog *cat, struct ch_error *err)
{
	const char *dir = cat->tmp_dir;
	char *name = NULL;
	int fd;

	if (!dir)
		dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0) {
		name = strdup(dir);
	} else if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL) {
		fd = spool_named(dir, &name, err);
	} else {
		ch_error_errno(err, errno, "cannot create a spool file in '%s'",
			       dir);
	}
	if (fd < 0 || !name) {
		if (fd >= 0)
			ch_error_set(err, "cannot create a spool file in "
					  "'%s': out of memory", dir);
		goto fail;
	}
	cat->spool_fd = fd;
	cat->spool_path = name;
	cat->spool_size = 0;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	free(name);
	return -1;
}

/* Writes all of buf at the spool's end.  pwrite at the recorded size, not
 * write at the file position: the packer may read the spool meanwhile. */
static int spool_append(struct scan *s, const uint8_t *buf, size_t n,
			uint64_t at, struct ch_error *err)
{
	struct ch_catalog *cat = s->cat;

	while (n > 0) {
		ssize_t w = pwrite(cat->spool_fd, buf, n, (off_t)at);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return ch_error_errno(
				err, w < 0 ? errno : ENOSPC,
				"cannot copy '%s:%s' to the spool (%s, "
				"offset %llu)",
				s->path, s->member, cat->spool_path,
				(unsigned long long)at);
		buf += w;
		n -= (size_t)w;
		at += (uint64_t)w;
	}
	return 0;
}

/* Reads the current member's data (a ch_source_read_fn over s->ar). */
static ssize_t member_read(void *arg, void *buf, size_t n,
			   struct ch_error *err)
{
	struct scan *s = arg;
	la_ssize_t k = archive_read_data(s->ar, buf, n);
	if (k < 0)
		return ch_error_set(err,
				    "cannot read member '%s' of '%s' at byte "
				    "%llu of the member: %s",
				    s->member, s->path,
				    (unsigned long long)s->done,
				    archive_error_string(s->ar));
	s->done += (uint64_t)k;
	return (ssize_t)k;
}

/* One file: key and field from relpath, its bytes from read to the
 * spool's end, an entry into the catalog.  The spool's size only grows
 * once the file is complete. */
static int spool_entry(struct scan *s, const char *relpath, const char *origin,
		       ch_source_read_fn read, void *arg, struct ch_error *err)
{
	struct ch_catalog *cat = s->cat;
	struct ch_entry e = {0};
	uint64_t at;
	int rc = -1;
	if (ch_split_key(relpath, &e.key, &e.field, origin, err) < 0)
		return -1;
	if (cat->spool_fd < 0 && spool_create(cat, err) < 0)
		goto out;
	e.spool_offset = at = cat->spool_size;
	for (;;) {
		ssize_t n = read(arg, s->buf, COPY_CHUNK, err);
		if (n < 0)
			goto out;
		if (n == 0)
			break;
		if (spool_append(s, s->buf, (size_t)n, at, err) < 0)
			goto out;
		at += (uint64_t)n;
	}
	e.size = at - e.spool_offset;
	e.origin = (char *)origin;
	e.seq = cat->added;
	e.from = CH_FROM_SPOOL;
	if (ch_catalog_add(cat, &e, err) < 0)
		goto out;
	cat->spool_size += e.size;
	rc = 0;
out:
	free(e.key);
	free(e.field);
	return rc;
}

/* The member's path as packed: without leading "./" (tar -C dir .),
 * though "./" itself, the top folder, keeps its name for messages. */
static const char *member_name(struct archive_entry *ae)
{
	const char *p = archive_entry_pathname(ae);

	if (!p)
		p = archive_entry_pathname_utf8(ae);
	while (p && p[0] == '.' && p[1] == '/' && p[2] != '\0')
		p += 2;
	return p;
}

/* Directories are skipped (return 1); links and special files refused:
 * a link could point outside the archive, and a device has no bytes. */
static int member_kind(struct scan *s, struct archive_entry *ae,
		       struct ch_error *err)
{
	mode_t type = archive_entry_filetype(ae);

	if (type == AE_IFDIR)
		return 1;
	if (archive_entry_hardlink(ae))
		return ch_error_set(err,
				    "cannot pack member '%s' of '%s': it is "
				    "a hard link (to '%s'); only regular "
				    "files are packed",
				    s->member, s->path,
				    archive_entry_hardlink(ae));
	if (type == AE_IFLNK)
		return ch_error_set(err,
				    "cannot pack member '%s' of '%s': it is "
				    "a symbolic link (to '%s'); only regular "
				    "files are packed",
				    s->member, s->path,
				    archive_entry_symlink(ae)
					    ? archive_entry_symlink(ae)
					    : "?");
	if (type != AE_IFREG)
		return ch_error_set(err,
				    "cannot pack member '%s' of '%s': not a "
				    "regular file",
				    s->member, s->path);
	return 0;
}

/* One regular member: key and field from its name, data into the spool,
 * an entry into the catalog. */
static int add_member(struct scan *s, struct ch_error *err)
{
	char *origin = NULL;
	if (asprintf(&origin, "%s:%s", s->path, s->member) < 0)
		return ch_error_set(err, "cannot read '%s': out of memory",
				    s->path);
	s->done = 0;
	int rc = spool_entry(s, s->member, origin, member_read, s, err);
	free(origin);
	return rc;
}

/* Reads the next header; returns 1 at the end, 0 with s->member set, -1 on
 * a corrupt or truncated archive. */
static int next_member(struct scan *s, struct archive_entry **ae,
		       struct ch_error *err)
{
	const char *name;
	int r = archive_read_next_header(s->ar, ae);

	if (r == ARCHIVE_EOF)
		return 1;
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
		if (s->member)
			return ch_error_set(err,
					    "cannot read archive '%s' after "
					    "member '%s': %s",
					    s->path, s->member,
					    archive_error_string(s->ar));
		return ch_error_set(err, "cannot read archive '%s': %s",
				    s->path, archive_error_string(s->ar));
	}
	name = member_name(*ae);
	if (!name)
		return ch_error_set(err,
				    "cannot read archive '%s': a member name "
				    "cannot be decoded (after '%s')",
				    s->path, s->member ? s->member : "start");
	free(s->member);
	s->member = strdup(name);
	if (!s->member)
		return ch_error_set(err, "cannot read '%s': out of memory",
				    s->path);
	return 0;
}

/* Where a streamed archive's bytes come from (ch_source_archive_scan_from). */
struct feed {
	ch_source_read_fn read;
	void *arg;
	uint8_t *buf;
	struct ch_error err; /* the reader's, when it failed */
	int failed;
};

static la_ssize_t feed_read(struct archive *ar, void *arg, const void **out)
{
	struct feed *f = arg;
	ssize_t n = f->read(f->arg, f->buf, COPY_CHUNK, &f->err);
	if (n < 0) {
		f->failed = 1;
		archive_set_error(ar, EIO, "%s", f->err.msg);
		return -1;
	}
	*out = f->buf;
	return n;
}

/* Member names are read as UTF-8 whatever the process's locale: a zip
 * with the UTF-8 flag (Python, Java, 7-Zip) or a pax header gives its
 * names in UTF-8, and libarchive converts them to the calling thread's
 * charset, which in the C locale cannot hold a non-ASCII name.  The
 * locale is the thread's own (uselocale), so nothing else changes. */
struct utf8_names {
	locale_t utf8, before;
};

static void utf8_names_begin(struct utf8_names *u)
{
	u->utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	u->before = u->utf8 ? uselocale(u->utf8) : (locale_t)0;
}

static void utf8_names_end(struct utf8_names *u)
{
	if (!u->utf8)
		return;
	uselocale(u->before);
	freelocale(u->utf8);
}

/* Reads every member of the opened s->ar into the catalog. */
static int scan_members(struct scan *s, struct ch_error *err)
{
	struct archive_entry *ae;
	int r;
	while ((r = next_member(s, &ae, err)) == 0) {
		char *origin = NULL;
		if (asprintf(&origin, "%s:%s", s->path, s->member) < 0)
			return ch_error_nomem(err);
		r = ch_source_filter_admit(
			s->cat->filter, s->member,
			archive_entry_filetype(ae) == AE_IFDIR, 0, origin, err);
		free(origin);
		if (r < 0)
			return -1;
		if (r == 0)
			continue;
		r = member_kind(s, ae, err);
		if (r < 0)
			return -1;
		if (r == 0 && add_member(s, err) < 0)
			return -1;
	}
	return r < 0 ? -1 : 0;
}

int ch_source_archive_scan_from(struct ch_catalog *cat, const char *name,
				ch_source_read_fn read, void *arg,
				struct ch_error *err)
{
	struct scan s = {.cat = cat, .path = name};
	struct feed f = {.read = read, .arg = arg};
	struct utf8_names u;
	int rc = -1;
	utf8_names_begin(&u);
	s.buf = malloc(COPY_CHUNK);
	f.buf = malloc(COPY_CHUNK);
	if (!s.buf || !f.buf) {
		ch_error_set(err, "cannot read '%s': out of memory", name);
		goto out;
	}
	if (!(s.ar = reader_new(err)))
		goto out;
	if (archive_read_open(s.ar, &f, NULL, feed_read, NULL) != ARCHIVE_OK) {
		ch_error_set(err, "cannot open archive '%s': %s", name,
			     archive_error_string(s.ar));
		goto out;
	}
	rc = scan_members(&s, err);
out:
	if (rc < 0 && f.failed) /* the download's own words are clearer */
		*err = f.err;
	if (s.ar)
		archive_read_free(s.ar);
	free(s.member);
	free(s.buf);
	free(f.buf);
	utf8_names_end(&u);
	return rc;
}

int ch_source_is_archive_data(const void *data, size_t size,
			       struct ch_error *err)
{
	struct archive *ar = reader_new(err);
	struct archive_entry *ae;
	int yes = 0;
	if (!ar)
		return -1;
	if (archive_read_open_memory(ar, data, size) == ARCHIVE_OK) {
		int r = archive_read_next_header(ar, &ae);
		/* a prefix of a longer archive may end mid-member: only the
		 * first header matters */
		yes = r == ARCHIVE_OK || r == ARCHIVE_WARN;
	}
	archive_read_free(ar);
	return yes;
}

int ch_source_file_scan_from(struct ch_catalog *cat, const char *name,
			     const char *relpath, ch_source_read_fn read,
			     void *arg, struct ch_error *err)
{
	struct scan s = {.cat = cat, .path = name, .member = (char *)relpath};
	if (!(s.buf = malloc(COPY_CHUNK)))
		return ch_error_set(err, "cannot read '%s': out of memory",
				    name);
	int rc = spool_entry(&s, relpath, name, read, arg, err);
	free(s.buf);
	return rc;
}

int ch_source_archive_scan(struct ch_catalog *cat, const char *path,
			   struct ch_error *err)
{
	struct scan s = {.cat = cat, .path = path};
	struct utf8_names u;
	int rc = -1;

	utf8_names_begin(&u);
	if (!(s.buf = malloc(COPY_CHUNK))) {
		ch_error_set(err, "cannot read '%s': out of memory", path);
		goto out;
	}
	if (!(s.ar = reader_new(err)))
		goto out;
	if (archive_read_open_filename(s.ar, path, 64 * 1024) != ARCHIVE_OK) {
		ch_error_set(err, "cannot open archive '%s': %s", path,
			     archive_error_string(s.ar));
		goto out;
	}
	rc = scan_members(&s, err);
out:
	if (s.ar)
		archive_read_free(s.ar);
	free(s.member);
	free(s.buf);
	utf8_names_end(&u);
	return rc;
}
