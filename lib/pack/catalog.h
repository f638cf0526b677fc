/* pack/catalog.h - the files a pack reads (entries, grouped into samples
 * by key), which files of a source it takes, and the sources that fill
 * the catalog: folders, lists, archives and URLs.  Private to pack/. */
#ifndef CH_PACK_CATALOG_H
#define CH_PACK_CATALOG_H

#include "common/internal.h"

/* Where an entry's bytes come from. */
enum { CH_FROM_FILE = 0, CH_FROM_SPOOL = 1 };

struct ch_entry {
	char *key;    /* "dir/n01440764_10026" */
	char *field;  /* "jpg" */
	char *origin; /* for messages: "a/b.jpg" or "x.tar:b.jpg" */
	char *path;   /* CH_FROM_FILE: path to open */
	uint64_t size;
	uint64_t spool_offset; /* CH_FROM_SPOOL: offset in the spool file */
	uint64_t seq;	/* order of discovery, for --keep-order */
	int from;
	/* inline data (e.g. a generated cls label); NULL if none */
	uint8_t *inline_data;
};

/* Which files of a source pack takes (pack/source_filter.c). */
#define CH_STRAYS_SHOWN 5
struct ch_source_filter {
	const char *const *exclude; /* globs: never packed */
	size_t nexclude;
	const char *const *include; /* globs: if any, only these are packed */
	size_t ninclude;
	int skip_set;		    /* the output folder, never packed */
	dev_t skip_dev;
	ino_t skip_ino;
	/* files without a KEY.FIELD name: counted, the first few kept */
	uint64_t nstrays;
	char *strays[CH_STRAYS_SHOWN];
};
void ch_source_filter_release(struct ch_source_filter *f);
/* 1 to pack the file (or enter the folder) at rel, 0 to pass over it: a
 * hidden name (unless listed on standard input), an --exclude match, a
 * file no --include matches, or a file with no KEY.FIELD name (kept as
 * a stray under the name origin); -1 on error.  f may be NULL. */
int ch_source_filter_admit(struct ch_source_filter *f, const char *rel,
			   int is_dir, int listed, const char *origin,
			   struct ch_error *err);
/* -1 naming the strays (the first few and a count) if there were any. */
int ch_source_filter_check(const struct ch_source_filter *f,
			   struct ch_error *err);

struct ch_catalog {
	struct ch_source_filter *filter; /* NULL: every file (not owned) */
	struct ch_entry *entries;
	size_t n, cap;
	/* the entries' strings and inline data, packed in large chunks: a
	 * million files cost a million entries, not four million mallocs */
	char **chunks;	 /* every allocation, freed on release */
	size_t nchunks;
	char *chunk;	 /* the one being filled */
	size_t chunk_used;
	int spool_fd;	     /* -1 until an archive is read */
	char *spool_path;    /* for messages only: the file has no name */
	uint64_t spool_size;
	const char *tmp_dir; /* where the spool goes (not owned) */
	char **sources;	     /* as given, for the manifest */
	size_t nsources;
	volatile sig_atomic_t *cancel; /* stops long scans; may be NULL */
	uint64_t added;	     /* entries ever added, spilled ones included */
	/* Called when entries and strings take more than budget bytes: pack
	 * spills them to a sorted run on disk (see pack/entry_sort.h). */
	size_t budget;
	int (*spill)(struct ch_catalog *c, void *arg, struct ch_error *err);
	void *spill_arg;
};

void ch_catalog_init(struct ch_catalog *c, const char *tmp_dir);
void ch_catalog_release(struct ch_catalog *c);
/* Forgets the entries and their strings; keeps sources and spool. */
void ch_catalog_clear(struct ch_catalog *c);
/* Appends an entry; copies its strings and inline data into the catalog
 * (an origin equal to the path is stored once).  Fails with
 * "interrupted" once *cancel is set, so every scan can be stopped. */
int ch_catalog_add(struct ch_catalog *c, const struct ch_entry *e,
		   struct ch_error *err);
/* Splits a relative member path "a/b/c.seg.png" into key "a/b/c" and field
 * "seg.png" (the WebDataset rule: the field starts at the first dot of the
 * last path component).  Refuses absolute paths, "..", empty components,
 * and names without a field; returns -1 with a message naming `origin`. */
int ch_split_key(const char *relpath, char **key, char **field,
		 const char *origin, struct ch_error *err);

/* Sources: each appends entries to the catalog. */
int ch_source_dir_scan(struct ch_catalog *c, const char *root,
		       struct ch_error *err);
/* Reads a list of paths from fd, separated by '\n' or (sep == 0) NUL. */
int ch_source_list_scan(struct ch_catalog *c, int fd, int sep,
			struct ch_error *err);
/* tar, tar.gz, tar.zst, zip... through libarchive, without extracting:
 * member data goes to the catalog's spool file. */
int ch_source_archive_scan(struct ch_catalog *c, const char *path,
			   struct ch_error *err);
/* 1 if path looks like an archive libarchive can read (by its bytes), 0
 * if not, -1 with err set when libarchive cannot be loaded. */
int ch_source_is_archive(const char *path, struct ch_error *err);
/* Sources whose bytes come from a reader (a download): read fills up to
 * n bytes, returns 0 at the end and -1 with err set on failure. */
typedef ssize_t (*ch_source_read_fn)(void *arg, void *buf, size_t n,
				     struct ch_error *err);
/* An archive read front to back from read; name is for messages. */
int ch_source_archive_scan_from(struct ch_catalog *c, const char *name,
				ch_source_read_fn read, void *arg,
				struct ch_error *err);
/* One file, its key and field from relpath ("cat/001.jpg"). */
int ch_source_file_scan_from(struct ch_catalog *c, const char *name,
			     const char *relpath, ch_source_read_fn read,
			     void *arg, struct ch_error *err);
/* 1 if data (the first bytes of a file) starts an archive chute reads,
 * 0 if not, -1 with err set when libarchive cannot be loaded. */
int ch_source_is_archive_data(const void *data, size_t size,
			      struct ch_error *err);
/* http(s):// and s3:// sources of chute pack (pack/source_url.c): 1 if src
 * is one, and the scan of one, fetched while it is read. */
int ch_source_is_url(const char *src);
int ch_source_url_scan(struct ch_catalog *c, const char *url,
			  struct ch_error *err);

#endif
