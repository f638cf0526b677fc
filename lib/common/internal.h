/* common/internal.h - helpers shared inside lib/, not part of the public
 * API. */
#ifndef CH_COMMON_INTERNAL_H
#define CH_COMMON_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>

#include "chute/common.h"

/* Named below, declared by the modules that own them. */
struct ch_shard;  /* chute/shard.h */
struct ch_totals; /* chute/version.h */

/* The sample content hash (see ch_sample_hash in chute/shard.h), fed one field at
 * a time, in name order. */
struct ch_content_hash {
	void *state; /* XXH3_state_t, owned */
	uint8_t inline_state[576] __attribute__((aligned(64)));
};
void ch_content_hash_init(struct ch_content_hash *h);
void ch_content_hash_field(struct ch_content_hash *h, const char *name,
			   const uint8_t *data, uint64_t size);
uint64_t ch_content_hash_final(struct ch_content_hash *h);

/* The id of a shard streamed on its own, without a manifest: XXH3-128 of
 * its header and footer, which hold the checksums of its dictionary and
 * its index (and the index those of every block and sample), so that it
 * names the shard's content without reading all of it. */
int ch_shard_content_id(const struct ch_shard *sh, char id[33],
			struct ch_error *err);

/* Tells an open shard from a later one at the same address. */
uint64_t ch_shard_serial(const struct ch_shard *sh);

/* A dataset named by its folder or its manifest file: the manifest's
 * path and the folder that holds it (callers free; NULL: no memory). */
char *ch_manifest_path(const char *path);
char *ch_dataset_dir(const char *path);

/* ch_totals_add_shard (version/totals.c) for workers that share t: the
 * shard counted outside lock, added under it, and *tallied (guarded by
 * lock) one more.  Out of memory, the shard is left out and *tallied
 * says so: the totals are then not compared. */
void ch_totals_add_shard_locked(struct ch_totals *t, pthread_mutex_t *lock,
				size_t *tallied, const struct ch_shard *sh);
/* A verify problem whose message fmt and ap make (common/problem.c):
 * counted in *count and handed to on_problem(arg) (may be NULL), both
 * under lock, so that the callback comes from one thread at a time. */
void ch_problem_vreport(struct ch_problem *p, pthread_mutex_t *lock,
			uint64_t *count, ch_problem_fn on_problem, void *arg,
			const char *fmt, va_list ap);
/* -1 (err set) when o asks for a part that is not one of its parts. */
int ch_verify_part_check(const struct ch_verify_opts *o, struct ch_error *err);

/* Messages: one when n is 1, else many ("1 field is", "2 fields are"),
 * so that a count and its word agree. */
const char *ch_plural(uint64_t n, const char *one, const char *many);

/* *n bytes, rounded up to whole 2 MiB pages (*n says how many), on
 * 2 MiB-aligned memory advised onto huge pages, that free() takes back;
 * NULL without memory (common/pages.c). */
void *ch_huge_alloc(size_t *n);

/* memcpy for bytes another CPU reads next (common/copy.c): from 64
 * bytes up into 16-byte aligned memory, with non-temporal stores where
 * the CPU has them, which write whole lines without first fetching them
 * (from the reader's cache).  ch_copy_cold_done after a run of copies
 * and before they are handed over: it orders those stores before the
 * stores that follow. */
void ch_copy_cold(void *dst, const void *src, size_t n);
void ch_copy_cold_done(void);

/* Allocations cut from 2 MiB slabs on huge pages (common/pages.c), for
 * buffers of about 1 MiB kept for a while (decoded blocks): where fresh
 * pages cost a fault each, one fault per 2 MiB instead of 512.  A slab is
 * unmapped when its last allocation is released; ch_slabs_mapped counts
 * the bytes of those still mapped, what the allocations really cost.
 * Thread-safe.  Every allocation is released before ch_slabs_free. */
struct ch_slab;
struct ch_slabs;
struct ch_slabs *ch_slabs_new(void);
void *ch_slab_alloc(struct ch_slabs *s, size_t n, struct ch_slab **from);
void ch_slab_release(struct ch_slabs *s, struct ch_slab *from);
size_t ch_slabs_mapped(struct ch_slabs *s);
void ch_slabs_free(struct ch_slabs *s);

/* Loads libarchive (common/archive_shim.c), which chute does not link:
 * called before the first archive_* call.  use says what needs it, for
 * the message ("read tar/zip archives"). */
int ch_archive_load(const char *use, struct ch_error *err);

/* URLs (common/util.c).  The '@' that ends the user information of the
 * URL [host, end) (host just past its "://"), or NULL when it has none.
 * A password may hold '@', '/', '#' or '?' unencoded, so the user part
 * runs to the last '@' that a '/' follows: an '@' after the last '/' is
 * chute's REMOTE@TAG, unless the URL has no '/' at all.  An '@' in a
 * path ("/pkg@1.0/x") reads as user information too: shown as ***,
 * never a secret shown.  A path (file:///...) has no user part. */
const char *ch_url_userinfo_end(const char *host, const char *end);

/* Files and folders. */
int ch_mkdir_p(const char *path, struct ch_error *err);
int ch_rm_rf(const char *path);
/* Removes name in folder dirfd, a folder with all it holds. */
int ch_rm_at(int dirfd, const char *name);
int ch_fsync_dir(const char *path, struct ch_error *err);
char *ch_path_join(const char *a, const char *b);
/* Reads a whole file (at most max bytes) into a NUL-terminated buffer. */
int ch_read_file(const char *path, size_t max, char **data, size_t *len,
		 struct ch_error *err);
/* A whole file's text (at most max bytes) that can be given back a page
 * at a time as a reader goes: mapped (PROT_READ, MAP_PRIVATE) where the
 * file can be, so that ch_file_text_drop returns the pages behind the
 * reader (touched again, they are read again from the page cache), else
 * read as ch_read_file reads it (NUL-terminated; a mapped text is not),
 * with the messages ch_read_file gives.  A file truncated while mapped
 * raises SIGBUS in a reader of its lost pages, as any mapping does (the
 * chute command turns it into an error naming the file: cmd/fault.c). */
struct ch_file_text {
	const char *data;
	size_t len;
	size_t dropped; /* data[0, dropped) given back: 0 to read again */
	int mapped;
};
int ch_file_text_open(struct ch_file_text *t, const char *path, size_t max,
		      struct ch_error *err);
/* Gives back the whole pages of a mapped text below offset upto, once
 * there are at least chunk bytes of them (one call a chunk, not a page). */
void ch_file_text_drop(struct ch_file_text *t, size_t upto, size_t chunk);
void ch_file_text_close(struct ch_file_text *t);
/* Opens path read-only if it is a regular file, and refuses anything
 * else (a FIFO, a device) without blocking in open(); errno is kept. */
int ch_open_regular(const char *path, struct ch_error *err);
/* After a failed open or read of path, a file a manifest names: when it
 * is not there, err becomes CH_ERR_DATA (missing data that should be
 * there, exit 1) instead of an I/O error.  Returns -1. */
int ch_error_if_missing(struct ch_error *err, const char *path);

/* A temporary DIR/.NAME.tmp-PID, locked (flock) while fd is open, so that
 * a run killed with -9 leaves it unlocked and the next run writing NAME
 * removes it (common/temp_lock.c). */
struct ch_temp {
	char *path;
	int fd; /* holds the lock: the file, open read-write, or the folder */
};
/* Removes the unlocked temporaries of NAME in dir, except keep (a path),
 * and returns the first locked one in *live (owned; NULL if none) when
 * live is not NULL. */
int ch_temp_sweep(const char *dir, const char *name, const char *keep,
		  char **live, struct ch_error *err);
/* Sweeps, then creates and locks a temporary file (a folder if folder). */
int ch_temp_create(struct ch_temp *t, const char *dir, const char *name,
		   int folder, struct ch_error *err);
/* Removes the temporary if drop (still under its lock), then unlocks. */
void ch_temp_release(struct ch_temp *t, int drop);

#endif
