/*
 * chute/remote.h - what a remote holds and how datasets move to and from it
 * (the layout is man/chute-remote.7):
 *
 *   cas/XX/HASH.EXT   shard and split files by their XXH3-128 (XX: the
 *                     hash's first two digits; EXT: .chs or .ids)
 *   versions/ID.json  manifests by version id
 *   tags/NAME         a tag: one line holding a version id
 *
 * Versions share every file they have in common.  Push uploads files,
 * then the manifest, then tags, so a tag never names data that is not
 * there; pull verifies every file before it takes its final name.
 */
#ifndef CH_REMOTE_H
#define CH_REMOTE_H

#include "chute.h"
#include "chute/store.h"

/* "cas/ab/ab12...ef.chs" for a file of a manifest (EXT from its path). */
char *ch_remote_cas_key(struct ch_hash128 hash, const char *path);
/* 1 if name is a valid tag: 1-128 of [A-Za-z0-9._-], not starting '.'. */
int ch_remote_tag_ok(const char *name);
/* The version id that at (a tag, or a 32-digit id) names. */
int ch_remote_resolve(struct ch_store *st, const char *at, char id[33],
		      struct ch_error *err);
/* versions/ID.json, parsed and checked: its content must hash to id.
 * Returns 1 (err set) when the remote has no such version. */
int ch_remote_get_version(struct ch_store *st, const char *id,
			  struct ch_manifest *m, struct ch_buf *raw,
			  struct ch_error *err);

struct ch_push_opts {
	const char *const *tags; /* besides "latest", which is always set */
	size_t ntags;
	struct ch_transfer_opts xfer;
};

struct ch_push_report {
	char id[33];
	char parent[33];	   /* the version's parent; "" for none */
	uint64_t samples;	   /* the version's */
	size_t shards;
	size_t files, uploaded;	   /* files of the version; those sent */
	uint64_t bytes, uploaded_bytes;
	size_t versions_uploaded;  /* the manifest and ancestors sent */
};

/* Pushes the dataset folder (or manifest) at path. */
int ch_remote_push(const char *path, struct ch_store *st,
		   const struct ch_push_opts *o, struct ch_push_report *r,
		   struct ch_error *err);

struct ch_remote_merge_opts {
	const char *remote;	 /* the store's url as given: every part
				  * must be a version on it */
	const char *name;	 /* the merged dataset's (and its shards') */
	const char *const *tags; /* besides "latest", which is always set */
	size_t ntags;
	const char *cache_dir;	 /* for the parts' manifests (NULL: as
				  * ch_ref_open_dataset) */
	volatile sig_atomic_t *cancel;
};

struct ch_remote_merge_report {
	char id[33];
	size_t parts, shards;
	uint64_t samples, bytes;
};

/* Merges parts (REMOTE@TAG or REMOTE@ID references, all on o->remote,
 * which st is) where they are: checked as ch_merge checks folders, from
 * their manifests and their shards' indexes (range requests, no block),
 * the merged manifest is written as versions/ID.json and the tags set,
 * as push does; nothing is written when a check fails.  No cas/ object
 * is sent, fetched or copied: the parts' objects are the merged
 * version's.  The id is the one ch_merge gives the same parts in a new
 * folder under the same name. */
int ch_remote_merge(struct ch_store *st, const char *const *parts,
		    size_t nparts, const struct ch_remote_merge_opts *o,
		    struct ch_remote_merge_report *r, struct ch_error *err);

struct ch_pull_report {
	char id[33];
	char parent[33];	/* the version's parent; "" for none */
	uint64_t samples;	/* the version's */
	size_t shards;
	size_t files, downloaded, present, resumed;
	uint64_t bytes, downloaded_bytes;
};

/* Pulls version `at` (tag or id) into folder dir: files are fetched into
 * dir/.chute/pull/, verified, then renamed into place; the manifest is
 * written last, so an interrupted pull leaves dir's old version intact
 * and the next pull continues where this one stopped. */
int ch_remote_pull(struct ch_store *st, const char *at, const char *dir,
		   const struct ch_transfer_opts *o, struct ch_pull_report *r,
		   struct ch_error *err);

#endif
