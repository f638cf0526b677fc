/*
 * remote/cache.h - a local folder of verified copies of remote files
 * (shards and split files), for streaming and diffing straight from a
 * remote.  Files are kept under DIR/cas/XX/HASH.EXT, the remote's own
 * names; a file under its final name has been checked against its
 * XXH3-128.  The folder holds at most max_bytes: least recently used
 * files are removed first (a removed file that a reader still holds open
 * stays readable until it closes it).  Thread-safe; one fetch per file
 * however many threads ask for it.
 */
#ifndef CH_REMOTE_CACHE_H
#define CH_REMOTE_CACHE_H

#include "chute/store.h"
#include "chute/version.h"

struct ch_remote_cache;

/* st stays the caller's and must outlive the cache. */
int ch_remote_cache_open(struct ch_remote_cache **out, struct ch_store *st,
			const char *dir, uint64_t max_bytes,
			struct ch_error *err);
void ch_remote_cache_free(struct ch_remote_cache *c);

struct ch_cache_file {
	const char *path; /* as in the manifest: gives the extension */
	uint64_t bytes;
	struct ch_hash128 hash;
};

/* Local path of a verified copy of f (caller frees), fetched now when
 * the cache lacks it.  The file is not evicted until ch_remote_cache_put
 * gives it back (once it is open: an open file survives its removal). */
int ch_remote_cache_get(struct ch_remote_cache *c, const struct ch_cache_file *f,
		       char **local, struct ch_error *err);
void ch_remote_cache_put(struct ch_remote_cache *c, const char *rel,
			struct ch_hash128 hash);
/* 1 if the cache holds a copy of the file (rel gives its extension). */
int ch_remote_cache_has(struct ch_remote_cache *c, const char *rel,
		       uint64_t bytes, struct ch_hash128 hash);
/* Fetches files in the background, in this order, one at a time,
 * replacing any earlier list.  Errors are left for get to meet. */
int ch_remote_cache_prefetch(struct ch_remote_cache *c,
			    const struct ch_cache_file *files, size_t n,
			    struct ch_error *err);
/* The manifest of version id, kept as DIR/versions/ID.json, so that
 * REMOTE@ID opens without the remote once its files are cached (a tag
 * is always asked of the remote: tags move).  Returns 1 when the cache
 * has no good copy. */
int ch_remote_cache_load_version(struct ch_remote_cache *c, const char *id,
				struct ch_manifest *m, struct ch_error *err);
/* Keeps raw, the manifest text of version id (checked by the caller). */
int ch_remote_cache_save_version(struct ch_remote_cache *c, const char *id,
				const struct ch_buf *raw,
				struct ch_error *err);

struct ch_cache_stats {
	uint64_t hits, misses, fetched_bytes, evicted_bytes;
};
void ch_remote_cache_stats(struct ch_remote_cache *c, struct ch_cache_stats *s);

#endif
