/*
 * chute/version.h - dataset versions (lib/version/): manifests, datasets, the
 * totals shards hold, what changed between versions, splits, a
 * folder's history and stat cache, its status, and diffs.
 */
#ifndef CHUTE_VERSION_H
#define CHUTE_VERSION_H

#include <sys/stat.h>

#include "chute/common.h"
#include "chute/shard.h"

/* ------------------------------------------------------------------ */
/* Manifest (format: man/chute-manifest.5)                             */

struct ch_manifest_shard {
	char *path; /* relative to the dataset folder: "shards/NAME-000000.chs" */
	uint64_t bytes;
	struct ch_hash128 hash; /* XXH3-128 of the file */
	uint64_t samples;
	uint64_t first_sample; /* dataset-wide number of its first sample */
	struct ch_hash128 seal; /* ch_shard_seal, when has_seal */
	int has_seal; /* 0 in a manifest of format version 1 */
};

struct ch_manifest_field {
	char *name;
	uint64_t count; /* samples that have it */
	uint64_t bytes; /* total raw bytes */
};

struct ch_manifest_options {
	uint64_t shard_bytes;	/* 0 = no byte limit */
	uint64_t shard_samples; /* 0 = no sample limit */
	uint64_t block_size;
	int level;
	int dict; /* 1 if --dict */
	int keep_order;
	char *label_from; /* "dir" or NULL */
	/* A part of a dataset (chute pack --part): part `part` of `parts`,
	 * the samples whose key ch_part_of puts there; parts 0: a whole
	 * dataset.  "part" in the manifest's options. */
	uint64_t part, parts;
};

/* A named subset of the samples ("train", "val", "test"): its sample
 * numbers, ascending, are stored in a split file beside the manifest (see
 * chute-manifest(5), SPLIT FILES). */
struct ch_manifest_split {
	char *name;
	char *path; /* relative to the dataset folder: "splits/val-HEX16.ids" */
	uint64_t samples;  /* sample numbers in the file */
	uint64_t bytes;	   /* file size: 8 x samples */
	struct ch_hash128 hash; /* XXH3-128 of the file */
	double fraction;   /* share asked for when it was made (train: rest) */
};

/* How `chute split` assigned samples: recorded so that a later split of a
 * grown dataset keeps every existing sample where it was. */
struct ch_manifest_split_rule {
	uint64_t seed;
	char *group; /* POSIX extended regex whose first group names a
			sample's group, or NULL: each key is its own group */
};

struct ch_manifest {
	char id[33];	/* 32 hex digits: XXH3-128 of the canonical content */
	char *name;
	char *parent;	/* id of the parent version, or NULL */
	char *chute_version;
	uint64_t samples;
	uint64_t bytes;	       /* raw bytes of all fields */
	uint64_t shard_bytes;  /* bytes of all shard files */
	struct ch_manifest_shard *shards;
	size_t nshards;
	struct ch_manifest_field *fields; /* sorted by name */
	size_t nfields;
	char **classes; /* classes[i] is the name of class i, sorted */
	size_t nclasses;
	char **sources;
	size_t nsources;
	struct ch_manifest_options options;
	struct ch_manifest_split *splits; /* sorted by name; none: nsplits 0 */
	size_t nsplits;
	struct ch_manifest_split_rule split_rule; /* meaningful if nsplits */
	int id_ok; /* set by ch_manifest_read: 1 if "id" matches the content */
	/* as read (1 or 2), kept when the manifest is written again so that
	 * its id stays; 0 for a new version, written in the current format */
	int format_version;
};

/* Whether name may name a dataset: not empty, without '/' or a control
 * character (below 0x20, 0x7f), since it is in every shard's file name
 * (shards/NAME-NNNNNN.chs).  The one rule of pack -n, merge -n and a
 * manifest read (a pulled one too).  0, or -1 with err saying why. */
int ch_dataset_name_check(const char *name, struct ch_error *err);
/* Computes m->id from the content (everything but "id"). */
int ch_manifest_compute_id(struct ch_manifest *m, struct ch_error *err);
/* Serialises m (computing its id first) to path through a temporary file
 * and rename: a reader never sees a partial manifest. */
int ch_manifest_write(struct ch_manifest *m, const char *path,
		      struct ch_error *err);
/* The bytes ch_manifest_write would write (id computed first); *text is
 * the caller's to free. */
int ch_manifest_format(struct ch_manifest *m, char **text, size_t *len,
		       struct ch_error *err);
/* Parses and validates; errors name the line and column.  Text that is
 * not JSON or breaks a rule of chute-manifest(5) is CH_ERR_DATA (a
 * damaged manifest); a file that cannot be read, CH_ERR_IO. */
int ch_manifest_read(struct ch_manifest *m, const char *path,
		     struct ch_error *err);
int ch_manifest_parse(struct ch_manifest *m, const char *text, size_t len,
		      const char *origin, struct ch_error *err);
void ch_manifest_release(struct ch_manifest *m);

/* ------------------------------------------------------------------ */
/* Datasets: a folder with manifest.json, a manifest file, or one shard  */

/* What a remote dataset fetched (all zero for a local one). */
struct ch_fetch_stats {
	uint64_t files, file_bytes;   /* whole files fetched into the cache */
	uint64_t cache_hits;	      /* files the cache had already */
	uint64_t ranges, range_bytes; /* range requests (global shuffle) */
	double wait_s;		      /* readers waiting on them, summed */
};

/* Where the files of a dataset that is not a local folder come from (a
 * remote, through a local cache: see remote/ref.c).  local() gives the local
 * path of a file of the manifest, fetching it first when needed; plan()
 * says in which order shards will be wanted, so that they can be fetched
 * ahead; release() frees arg. */
struct ch_dataset_source {
	int (*local)(void *arg, const char *rel, uint64_t bytes,
		     struct ch_hash128 hash, char **path, struct ch_error *err);
	void (*plan)(void *arg, const size_t *order, size_t n, size_t ahead);
	void (*release)(void *arg);
	/* 1 with *src filled when shard s is better read by ranges than
	 * fetched whole (random access: plan() got no order); else 0. */
	int (*ranged)(void *arg, size_t s, struct ch_byte_source *src,
		      struct ch_error *err);
	void (*stats)(void *arg, struct ch_fetch_stats *out);
	/* the file local() gave is open (or no longer wanted): it may go */
	void (*done)(void *arg, const char *rel, struct ch_hash128 hash);
};

struct ch_dataset {
	char *root;		  /* folder holding manifest and shards/ */
	struct ch_manifest manifest; /* synthesised for a lone shard */
	int lone_shard;		  /* 1 if opened from a .chs path */
	struct ch_shard **shards; /* opened lazily by ch_dataset_shard */
	const struct ch_dataset_source *source; /* NULL: files under root */
	void *source_arg;
};

/* Opens a dataset folder, a manifest file or a lone shard.  A path that
 * does not exist, or a folder without a manifest, is CH_ERR_IO (no such
 * dataset); a manifest or lone shard that is there but damaged,
 * CH_ERR_DATA. */
int ch_dataset_open(struct ch_dataset *ds, const char *path,
		    struct ch_error *err);
/* Whether ch_dataset_open takes the file at path for a lone shard: its
 * name ends in .chs (whatever its bytes), or it starts with the shard
 * magic.  0 for a folder or a missing file. */
int ch_dataset_is_lone_shard(const char *path);
/* ch_dataset_open for what needs a dataset folder (check, split, status,
 * push refuse a lone shard): a shard given to it is the caller's mistake,
 * CH_ERR_USAGE, and one that does not even open is refused as a shard,
 * not reported as damaged. */
int ch_dataset_open_folder(struct ch_dataset *ds, const char *path,
			   struct ch_error *err);
void ch_dataset_release(struct ch_dataset *ds);
/* Full path of shard s ("ROOT/shards/x.chs"); caller frees. */
char *ch_dataset_shard_path(const struct ch_dataset *ds, size_t s);
/* A readable local path of a file named by the manifest (rel, as in it),
 * fetched first when the dataset comes from a remote; caller frees.  The
 * file stays there until ch_dataset_file_done: call it once the file is
 * open or read (a cache may remove files that are not in use). */
int ch_dataset_file(const struct ch_dataset *ds, const char *rel,
		    uint64_t bytes, struct ch_hash128 hash, char **path,
		    struct ch_error *err);
void ch_dataset_file_done(const struct ch_dataset *ds, const char *rel,
			  struct ch_hash128 hash);
/* Says in which order shards will be read, `ahead` of them at a time: a
 * remote dataset fetches them ahead of the reader.  order NULL: reads
 * will be random (a global shuffle), a remote dataset reads blocks by
 * range requests instead.  No-op locally. */
void ch_dataset_plan(const struct ch_dataset *ds, const size_t *order,
		     size_t n, size_t ahead);
void ch_dataset_fetch_stats(const struct ch_dataset *ds,
			    struct ch_fetch_stats *out);
/* ch_shard_open_memory for shard s, wherever it lives. */
int ch_dataset_shard_memory(const struct ch_dataset *ds, size_t s,
			    uint64_t *bytes, struct ch_error *err);
/* Shard s, opened on first use and kept open until the dataset is
 * released. */
int ch_dataset_shard(struct ch_dataset *ds, size_t s, struct ch_shard **out,
		     struct ch_error *err);
/* Shard s opened afresh (flags: CH_SHARD_LAZY or 0) and checked against
 * the manifest; the caller closes it.  For callers that bound how many
 * shards stay open. */
int ch_dataset_open_shard(const struct ch_dataset *ds, size_t s,
			  unsigned flags, struct ch_shard **out,
			  struct ch_error *err);
/* Whether sh is the file shard s of the manifest names: its size, sample
 * count and seal (a manifest of version 1 has none) are the entry's, and
 * its fields are in the schema.  A mismatch is a data error (CH_ERR_DATA)
 * that names the shard and what differs.  ch_dataset_open_shard and
 * ch_dataset_shard call it. */
int ch_dataset_check_shard(const struct ch_dataset *ds, size_t s,
			   const struct ch_shard *sh, struct ch_error *err);
/* What shards hold, summed from their indexes (no block read), to hold
 * against the totals a manifest states: each field's sample count and
 * raw bytes (chute-manifest(5), KEYS: schema).  Zeroed to start. */
struct ch_totals {
	struct ch_manifest_field *fields; /* sorted by name */
	size_t nfields;
};
/* Adds shard sh, opened whole (ch_shard_field_totals). */
int ch_totals_add_shard(struct ch_totals *t, const struct ch_shard *sh,
			struct ch_error *err);
void ch_totals_release(struct ch_totals *t);
/* Calls fn with a message ("the manifest's schema.fields.cls.count is
 * 150, the shards hold 200") for each total of m that t, the totals of
 * all of m's shards, does not match, a field the shards hold and the
 * schema lacks included (unlisted set: a caller that reported those
 * shard by shard may skip them); returns how many. */
typedef void (*ch_totals_fn)(const char *message, int unlisted, void *arg);
size_t ch_totals_compare(const struct ch_manifest *m,
			 const struct ch_totals *t, ch_totals_fn fn, void *arg);
/* 0 when they all match, else a data error (CH_ERR_DATA) naming origin
 * and the first total that differs. */
int ch_totals_check(const struct ch_manifest *m, const struct ch_totals *t,
		    const char *origin, struct ch_error *err);
/* A field name sh holds that m's schema lacks (the first), or NULL. */
const char *ch_dataset_unlisted_field(const struct ch_manifest *m,
				      const struct ch_shard *sh);
/* Finds a sample by key over all shards (binary search in each). */
int ch_dataset_find(struct ch_dataset *ds, const char *key, size_t *shard,
		    uint64_t *sample, struct ch_error *err);
/* Finds dataset-wide sample number n. */
int ch_dataset_locate(struct ch_dataset *ds, uint64_t n, size_t *shard,
		      uint64_t *sample, struct ch_error *err);

/* ------------------------------------------------------------------ */
/* What one version changed against another (version/changes.c)       */

/* What version v changed against p (NULL: a first version), one short
 * phrase at a time ("+120 samples", "field cls removed"); "same content"
 * when nothing did. */
typedef void (*ch_change_fn)(void *arg, const char *phrase);
void ch_version_changes(const struct ch_manifest *v,
			const struct ch_manifest *p, ch_change_fn fn, void *arg);
/* 1 and a list in buf ("field cls, the labels (10 classes), split val")
 * when v lacks fields, labels or splits that old has; else 0. */
int ch_version_losses(const struct ch_manifest *old,
		      const struct ch_manifest *v, char *buf, size_t size);

/* ------------------------------------------------------------------ */
/* Splits: train / val / test subsets (chute split, chute-manifest(5))   */

struct ch_split_opts {
	/* shares of the samples, multiples of 0.0001 in [0, 1) with
	 * val + test < 1; train gets the rest; a share of 0 gives no split */
	double val, test;
	uint64_t seed;	   /* at most 2^63-1 */
	const char *group; /* POSIX extended regex whose first group names
			    * a sample's group; NULL: each key is its own */
	volatile sig_atomic_t *cancel;
	ch_progress_fn progress; /* phase "assigning", samples; may be NULL */
	void *progress_arg;
};

/* What one split got: samples per class, when the dataset has classes. */
struct ch_split_tally {
	uint64_t *classes;   /* manifest.nclasses counts, NULL without */
	uint64_t unlabelled; /* with classes: samples without a valid cls */
};

struct ch_split_result {
	struct ch_manifest manifest;	/* the new version, as written */
	struct ch_split_tally *tallies; /* one per manifest.splits[i] */
	/* the version split and replaced: the new one's parent, except
	 * when the split brings back an earlier version, which keeps its
	 * own (chute-manifest(5), THE ID) */
	char replaced[33];
};

/* Assigns every sample of the dataset at path (a folder or its manifest
 * file) to test, val or train by a hash of its key (or group) and the
 * seed, writes the split files and then a new manifest whose parent is
 * the old one's id (or, for content the dataset had before, that
 * version's parent).  Split files are named by their content and written
 * under temporary names first; stale ones are removed only once the new
 * manifest is in place, so a failure or interruption leaves the old
 * version whole.  Reads the shards' indexes, and with classes also the
 * blocks (for the cls fields). */
int ch_split(const char *path, const struct ch_split_opts *o,
	     struct ch_split_result *res, struct ch_error *err);
void ch_split_result_release(struct ch_split_result *res);

/* The sample numbers (dataset-wide, ascending) of split `name` of an
 * open dataset, read from its split file and checked against the
 * manifest: size, XXH3-128, order and range.  *ids is the caller's to
 * free.  A split file that is missing or fails a check is CH_ERR_DATA
 * (the manifest names it); a split the manifest lacks, CH_ERR_USAGE. */
int ch_split_load(const struct ch_dataset *ds, const char *name,
		  uint64_t **ids, uint64_t *count, struct ch_error *err);

/* ------------------------------------------------------------------ */
/* Local history (version/history.c)                                  */

/*
 * What a dataset folder remembers about itself.
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
 * (ch_status, below).
 */

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

/* ------------------------------------------------------------------ */
/* Status (version/status.c)                                          */

/*
 * A dataset folder compared with its manifest (chute status,
 * chute-status(1)): files missing, modified or unexpected, read through
 * the stat cache (above).
 */

enum ch_status_kind {
	CH_WS_MISSING,	  /* named by the manifest, not there */
	CH_WS_MODIFIED,	  /* there, with another size or content */
	CH_WS_UNEXPECTED, /* under shards/ or splits/, not named */
	CH_WS_MANIFEST,	  /* the manifest's id does not match its content */
};

struct ch_status_item {
	enum ch_status_kind kind;
	char *path; /* relative to the dataset folder */
	char *why;  /* "size 12, the manifest says 10", "partial download" */
};

struct ch_status_opts {
	int rehash; /* hash every file, whatever the stat cache says */
	volatile sig_atomic_t *cancel;
	ch_progress_fn progress; /* phase "checking", files; may be NULL */
	void *progress_arg;
};

struct ch_status_result {
	char id[33];
	struct ch_status_item *items; /* manifest order, then unexpected
				       * ones sorted by path */
	size_t nitems;
	uint64_t shards, split_files; /* named by the manifest */
	uint64_t hashed;	      /* files read and hashed */
	int cache_saved;	      /* refreshed records written */
};

/* Compares the dataset folder (or the folder of a manifest file) with its
 * manifest: a file the stat cache vouches for is taken as clean, any
 * other one is hashed, and its record refreshed when it matches (saving
 * the cache is best effort: a read-only folder still gets a status).
 * Returns 0 when the comparison ran (nitems 0: clean), -1 when it could
 * not (no manifest, an unreadable folder). */
int ch_status(const char *path, const struct ch_status_opts *o,
	      struct ch_status_result *res, struct ch_error *err);
void ch_status_result_release(struct ch_status_result *res);

/* ------------------------------------------------------------------ */
/* Diff (version/diff.c)                                              */

/*
 * Two dataset versions compared sample by sample (chute diff).
 *
 * Samples are matched by key (keys are unique in a dataset) and compared
 * by the content hash each shard's index holds (ch_sample_hash), so no
 * block is read but for the cls fields of datasets with classes.  A shard
 * whose XXH3-128 is the same in both versions holds the same samples: it
 * is read once (its index, from the first version) and its cls fields not
 * at all, since its samples are unchanged.
 *
 * Memory: about 40 bytes a sample of each version, plus the open shards'
 * indexes (the keys point into them).
 */

/* A key inside an open shard's index (not NUL-terminated). */
struct ch_diff_key {
	const char *key;
	size_t len;
};

struct ch_diff_keys {
	struct ch_diff_key *v; /* sorted by key */
	size_t n, cap;
};

/* One split name of either version. */
struct ch_diff_split {
	const char *name;
	int in_a, in_b;
	uint64_t samples_a, samples_b;
	/* keys that joined it, left it, or changed content inside it */
	struct ch_diff_keys added, removed, changed;
};

/* A sample in both versions, in split `from` in A and `to` in B. */
struct ch_diff_move {
	struct ch_diff_key key;
	size_t from, to; /* indexes into splits */
};

/* One class name of either version: samples of the class (as the version
 * that has the sample says) added, removed, changed. */
struct ch_diff_class {
	const char *name;
	int in_a, in_b;
	uint64_t added, removed, changed;
};

struct ch_diff_opts {
	volatile sig_atomic_t *cancel;
	ch_progress_fn progress; /* phase "comparing", samples; may be NULL */
	void *progress_arg;
};

struct ch_diff {
	struct ch_diff_keys added, removed, changed;
	uint64_t unchanged;
	struct ch_diff_split *splits; /* sorted by name */
	size_t nsplits;
	struct ch_diff_move *moved;   /* sorted by key */
	size_t nmoved, moved_cap;
	struct ch_diff_class *classes; /* sorted by name; none when neither
					* version has classes */
	size_t nclasses;
	/* schema: names only in B (added) or only in A (removed) */
	const char **fields_added, **fields_removed;
	size_t nfields_added, nfields_removed;
	const char **classes_added, **classes_removed;
	size_t nclasses_added, nclasses_removed;
	uint64_t shards_shared; /* B's shards with the hash of one of A's */
	int equal;		/* nothing above differs */
};

/* Compares version a with version b (both opened, shards readable).
 * Every key and name in d points into a or b: release d before them. */
int ch_diff(struct ch_dataset *a, struct ch_dataset *b,
	    const struct ch_diff_opts *o, struct ch_diff *d,
	    struct ch_error *err);
void ch_diff_release(struct ch_diff *d);

#endif
