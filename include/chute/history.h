/*
 * chute/history.h - what a dataset folder remembers about itself.
 *
 * DIR/.chute/versions/ID.json: every manifest chute wrote into the folder,
 * in the bytes chute writes (chute-manifest(5)), so that `chute log` can
 * walk a dataset's parents.
 *
 * DIR/.chute/stat: the stat cache.  One line a file the manifest names
 * (shards and split files): size, mtime in nanoseconds, inode and the
 * XXH3-128 the file had when chute last hashed or wrote it.  A file whose
 * size, mtime and inode still match its record is taken to still have that
 * hash, which makes `chute status` cost a stat a file instead of a read.
 * Like git's index it trusts mtimes: a change that keeps size, mtime and
 * inode (a deliberate `touch -d` after an edit in place) needs --hash
 * (chute/status.h).
 */
#ifndef CH_HISTORY_H
#define CH_HISTORY_H

#include <sys/stat.h>

#include "chute.h"

/* ------------------------------------------------------------------ */
/* Local history                                                        */

/* Saves m (its id computed first) as DIR/.chute/versions/ID.json,
 * through a temporary file; a version already there is left as it is
 * (same id, same content; the first name and sources stay). */
int ch_history_save(const char *dataset_dir, struct ch_manifest *m,
		    struct ch_error *err);
/* Reads version id (32 hex digits) of the folder's history into m and
 * checks that its content has that id.  Returns 0, 1 when the folder has
 * no such version (err says so), -1 on any other failure. */
/* Computes new version m's id and sets its parent.  A version is its
 * content: one that comes back to content the dataset has had (the
 * current version, or one in dataset_dir's history) is that version
 * again, with the parent it had, so that the history never loops; any
 * other descends from current (NULL or no id: a first version). */
int ch_history_set_parent(const char *dataset_dir,
			  const struct ch_manifest *current,
			  struct ch_manifest *m, struct ch_error *err);
int ch_history_load(const char *dataset_dir, const char *id,
		    struct ch_manifest *m, struct ch_error *err);

/* Gives to_dir the .chute of from_dir (a folder about to replace it):
 * its files hard-linked (copied where links fail), the stat cache left
 * out since it describes from_dir's files.  Nothing to carry is fine. */
int ch_history_carry(const char *from_dir, const char *to_dir,
		     struct ch_error *err);


/* ------------------------------------------------------------------ */
/* Stat cache                                                           */

struct ch_stat_record {
	char *path; /* relative to the dataset folder, as in the manifest */
	uint64_t size, ino;
	int64_t mtime_ns;
	struct ch_hash128 hash;
};

struct ch_statcache {
	struct ch_stat_record *v; /* sorted by path */
	size_t n, cap;
	int dirty; /* changed since loaded */
};

/* Reads DIR/.chute/stat.  A missing or unreadable cache is an empty one
 * (it is only a cache): this never fails but for memory. */
int ch_statcache_load(const char *dataset_dir, struct ch_statcache *c,
		      struct ch_error *err);
const struct ch_stat_record *ch_statcache_find(const struct ch_statcache *c,
					       const char *path);
/* 1 if st matches rec: same size, mtime (ns) and inode. */
int ch_statcache_matches(const struct ch_stat_record *rec,
			 const struct stat *st);
/* Records (or replaces) path with st and hash. */
int ch_statcache_put(struct ch_statcache *c, const char *path,
		     const struct stat *st, struct ch_hash128 hash,
		     struct ch_error *err);
void ch_statcache_drop(struct ch_statcache *c, const char *path);
/* Writes DIR/.chute/stat atomically (temporary file and rename). */
int ch_statcache_save(const char *dataset_dir, const struct ch_statcache *c,
		      struct ch_error *err);
void ch_statcache_release(struct ch_statcache *c);

/* Which files of a manifest ch_statcache_record_files vouches for. */
enum { CH_STAT_SHARDS = 1, CH_STAT_SPLITS = 2 };

/* Stats every file of m that `what` names and records it with m's hash
 * for it: the caller vouches that it was just verified or written.  The
 * records of m's other files are kept when they exist; records of files
 * m does not name are dropped.  Saved atomically. */
int ch_statcache_record_files(const char *dataset_dir,
			      const struct ch_manifest *m, int what,
			      struct ch_error *err);
/* ch_statcache_record_files for shards and split files. */
int ch_statcache_record(const char *dataset_dir, const struct ch_manifest *m,
			struct ch_error *err);

#endif
