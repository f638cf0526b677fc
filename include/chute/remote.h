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
/* The bytes of versions/ID.json (raw, already fetched from st) parsed
 * and checked as ch_remote_get_version does; -1 (err set) when they do
 * not parse or do not hash to id. */
int ch_remote_parse_version(struct ch_store *st, const char *id,
			    const struct ch_buf *raw, struct ch_manifest *m,
			    struct ch_error *err);

/* Verifies version at (a tag or an id) of the remote st where it lies,
 * as ch_verify (chute.h) a folder: the manifest must hash to its id (a
 * missing tag or version is an error; a damaged manifest a problem);
 * every shard object of the part is opened by range requests (header,
 * footer, index) and streamed once through its XXH3-128, and when that
 * differs from the manifest's its blocks are read again to name the bad
 * ones; split files are fetched whole and hashed.  A problem's shard is
 * the object's url (NULL: the manifest), its message names the file as
 * the manifest does.  Nothing is written locally; o->deep is not read
 * (decoding every block means pulling the version).  Returns 0 when the
 * check ran (problems counted in res), -1 when it could not. */
int ch_remote_verify(struct ch_store *st, const char *at,
		     const struct ch_verify_opts *o,
		     struct ch_verify_result *res, struct ch_error *err);

/* Called, when not NULL, at named points of a push or a gc ("push:
 * after-objects", "gc:after-plan", ...; man/chute-remote.7): a test
 * stops a command there to run another one in between. */
typedef void (*ch_point_fn)(void *arg, const char *name);

struct ch_push_opts {
	const char *const *tags; /* besides "latest", set unless the
				  * version is a part (chute pack --part) */
	size_t ntags;
	struct ch_transfer_opts xfer;
	ch_point_fn point;	 /* at "push:after-objects",
				  * "push:after-manifest",
				  * "push:waiting-for-gc" (a gc's lease seen),
				  * "push:after-check" (before the tags) */
	void *point_arg;
};

struct ch_push_report {
	char id[33];
	char parent[33];	   /* the version's parent; "" for none */
	uint64_t samples;	   /* the version's */
	size_t shards;
	size_t files, uploaded;	   /* files of the version; those sent */
	uint64_t bytes, uploaded_bytes;
	size_t versions_uploaded;  /* the manifest and ancestors sent */
	size_t resent;		   /* files sent again after the manifest: a
				    * gc removed them meanwhile (counted in
				    * uploaded too) */
	int waited_for_gc;	   /* a gc's lease held the tags back */
	int latest;		   /* "latest" was moved: 0 for a part */
};

/* Pushes the dataset folder (or manifest) at path: its files the remote
 * lacks, its manifest and its ancestors'; then, once no gc holds its
 * lease (gc/lease), checks that the manifest and every file are on the
 * remote, sending again what a gc removed meanwhile; then the tags
 * (latest too unless the version is a part: r->latest says). */
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
	ch_progress_fn progress; /* phase "checking" (the parts' shard
				  * indexes, read by range requests) */
	void *progress_arg;
};

struct ch_remote_merge_report {
	char id[33];
	size_t parts, shards;
	uint64_t samples, bytes;
	char replaced[33]; /* what tags/latest named before; "" for none */
	char changes[512]; /* what changed against it, ", "-separated */
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

/* ------------------------------------------------------------------ */
/* What a remote holds, and collecting what no version kept needs
 * (remote/inventory.c, remote/gc.c)                                     */

struct ch_remote_tag {
	char *name;
	char id[33];
	int missing;		 /* its version's manifest is not there */
};

struct ch_remote_version {
	char id[33];
	int64_t mtime;		 /* versions/ID.json's, on the remote: when
				  * it was last pushed */
	uint64_t manifest_bytes; /* versions/ID.json's size */
	uint64_t samples, bytes; /* bytes: its shard and split files */
	size_t files;
	char **keys;		 /* the cas/ keys of its files, sorted */
	size_t nkeys;
	size_t ntags;		 /* tags that name it */
};

struct ch_remote_inventory {
	struct ch_remote_tag *tags;	    /* sorted by name */
	size_t ntags;
	struct ch_remote_version *versions; /* newest first, then by id */
	size_t nversions;
};

/* Lists tags/ and versions/ and reads every tag and manifest (each
 * manifest checked against its id: a damaged one is an error naming it).
 * Objects that are not chute's (other names) are left out. */
int ch_remote_inventory(struct ch_store *st, struct ch_remote_inventory *inv,
			struct ch_error *err);
void ch_remote_inventory_release(struct ch_remote_inventory *inv);
/* The version of inv with this id, or NULL. */
const struct ch_remote_version *
ch_remote_inventory_find(const struct ch_remote_inventory *inv,
			 const char *id);

struct ch_gc_opts {
	const char *const *keep; /* tags or ids kept besides every tag */
	size_t nkeep;
	const char *const *drop; /* tags removed, their versions no longer
				  * kept for them */
	size_t ndrop;
	int64_t grace_s;	 /* objects written less than this long ago
				  * stay, and the versions they hold */
	int64_t now;		 /* seconds since 1970; 0: the clock's */
	int yes;		 /* delete; otherwise only report */
	ch_point_fn point;	 /* with yes, at "gc:after-lease",
				  * "gc:after-plan", "gc:after-delete" */
	void *point_arg;
};

struct ch_gc_report {
	char (*kept)[33];	     /* versions kept, newest first */
	size_t nkept;
	struct ch_store_list removed; /* versions/ then cas/ objects */
	uint64_t removed_bytes;
	size_t fresh;		     /* objects no kept version names, left
				      * for the grace period */
	uint64_t fresh_bytes;
	size_t referenced;	     /* cas/ objects kept versions name */
	uint64_t referenced_bytes;
};

/* Collects the objects of the remote that no kept version needs.  Kept:
 * every version a tag names (but those of o->drop), those o->keep names,
 * and those whose manifest was written within the grace period; with
 * them, every cas/ object their manifests name.  Removed: the manifests
 * in versions/ of the other versions, and the cas/ objects no kept
 * version names, unless written within the grace period.  Nothing else
 * is touched (tags but o->drop, objects not named as chute names them).
 * A tag naming a version whose manifest is missing, or a damaged
 * manifest, stops it before anything is removed.  With o->yes, the
 * dropped tags are deleted first, then the manifests, then the cas/
 * objects, so that no tag or manifest ever names a missing object; and
 * gc holds the lease gc/lease from before it lists anything to after its
 * last removal, which a push honours before it moves its tags (another
 * gc's lease that has not expired is an error, nothing removed). */
int ch_remote_gc(struct ch_store *st, const struct ch_gc_opts *o,
		 struct ch_gc_report *r, struct ch_error *err);
void ch_gc_report_release(struct ch_gc_report *r);

#endif
