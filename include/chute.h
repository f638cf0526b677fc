/*
 * chute.h - the public API of libchute.
 *
 * Conventions: functions that can fail return 0 on success and -1 on
 * failure, filling a caller-owned struct ch_error with a message that says
 * what went wrong, why, and where (file, offset), and with the kind of
 * failure: CH_ERR_DATA when the data failed a check (a bad magic, header,
 * footer or index, a truncated file, a checksum or hash mismatch, a block
 * that does not decode), CH_ERR_USAGE, CH_ERR_IO, CH_ERR_MEMORY or
 * CH_ERR_INTERRUPTED otherwise.  The kind travels with the struct (copied
 * between threads, passed up through layers); cmd/ turns it into the exit
 * status in one place (1 for data, 2 for usage, I/O and memory, 128 + the
 * signal when interrupted).  The library never prints and never exits.
 * Objects are created by *_open / *_init and released by the matching
 * *_close / *_release / *_free; whoever created one owns it.
 */
#ifndef CHUTE_H
#define CHUTE_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>
#include <stdint.h>
#include <stdio.h>

/* The version: the one place it lives (README.md, "Releasing"). */
#define CH_VERSION "0.2.0"

/* ------------------------------------------------------------------ */
/* Errors                                                              */

/* What kind of failure an error is: what the caller can do about it. */
enum ch_error_kind {
	CH_ERR_IO,	    /* the system or the environment: a file, the
			       network, permissions, a full disk */
	CH_ERR_USAGE,	    /* the caller asked for something invalid:
			       options, arguments, names, specs */
	CH_ERR_DATA,	    /* the data failed a check: corrupt, truncated,
			       not what the manifest says */
	CH_ERR_MEMORY,	    /* out of memory, or a resource limit */
	CH_ERR_INTERRUPTED, /* stopped by a signal (a cancel flag) */
};

struct ch_error {
	char msg[1024];
	enum ch_error_kind kind; /* 0, CH_ERR_IO, in a zeroed struct */
};

/* Formats a message into err (if not NULL), kind CH_ERR_IO (the most
 * common), and returns -1, so that `return ch_error_set(err, "...")` reads
 * naturally. */
int ch_error_set(struct ch_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Like ch_error_set, with ": strerror(errnum)" appended; kind CH_ERR_IO,
 * or CH_ERR_MEMORY for ENOMEM. */
int ch_error_errno(struct ch_error *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Like ch_error_set, each with its kind: data that failed a check
 * (corrupt, or not what the manifest says), a request of the caller's
 * that is invalid, a run stopped by its cancel flag, memory that ran
 * out. */
int ch_error_data(struct ch_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int ch_error_usage(struct ch_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int ch_error_interrupted(struct ch_error *err);	/* "interrupted" */
int ch_error_nomem(struct ch_error *err);	/* "out of memory" */

/* ------------------------------------------------------------------ */
/* Hashes (XXH3)                                                        */

struct ch_hash128 {
	uint64_t high, low;
};

/* XXH3-64 of a buffer, seed 0. */
uint64_t ch_hash64(const void *data, size_t size);

/* XXH3-128 of a buffer, seed 0. */
struct ch_hash128 ch_hash128(const void *data, size_t size);

/* Writes the canonical (big-endian) 32-digit lowercase hex form, the one
 * `xxhsum -H2` prints, into out (33 bytes with the NUL). */
void ch_hash128_hex(struct ch_hash128 h, char out[33]);

/* Parses 32 hex digits; returns -1 on anything else. */
int ch_hash128_parse(const char *hex, struct ch_hash128 *out);

/* XXH3-128 of a whole file, read with large preads. */
int ch_hash128_file(const char *path, struct ch_hash128 *out,
		    uint64_t *size_out, struct ch_error *err);

/* ------------------------------------------------------------------ */
/* Growable byte buffer                                                 */

struct ch_buf {
	uint8_t *data;
	size_t len, cap;
};

int ch_buf_reserve(struct ch_buf *b, size_t cap, struct ch_error *err);
int ch_buf_append(struct ch_buf *b, const void *p, size_t n,
		  struct ch_error *err);
void ch_buf_release(struct ch_buf *b);

/* ------------------------------------------------------------------ */
/* Shard reader (format: man/chute-shard.5)                             */

struct ch_shard; /* opaque; immutable after open, safe to share between
		  * threads that each use their own ch_block_reader */

/* Opens a shard: reads and checks header, footer and index (their hashes,
 * bounds and internal consistency).  Does not read any block. */
int ch_shard_open(struct ch_shard **out, const char *path,
		  struct ch_error *err);
void ch_shard_close(struct ch_shard *sh);

const char *ch_shard_path(const struct ch_shard *sh);
uint64_t ch_shard_file_size(const struct ch_shard *sh);
uint64_t ch_shard_sample_count(const struct ch_shard *sh);
/* XXH3-128 of the shard's header and footer (its first and last 64
 * bytes): they hold the hashes that vouch for the rest, so the seal tells
 * one shard from another at the cost of an open (chute-manifest(5)). */
struct ch_hash128 ch_shard_seal(const struct ch_shard *sh);
/* The field names of the shard's name table, in id order. */
uint32_t ch_shard_name_count(const struct ch_shard *sh);
const char *ch_shard_name(const struct ch_shard *sh, uint32_t id);
uint32_t ch_shard_block_count(const struct ch_shard *sh);
/* Bytes an open shard holds in memory: its decoded index, mostly. */
size_t ch_shard_memory(const struct ch_shard *sh);
/* About what ch_shard_memory would say once the shard is open, from its
 * header and footer alone. */
int ch_shard_open_memory(const char *path, uint64_t *bytes,
			 struct ch_error *err);

/* A shard that is not a local file: its bytes come from read_at (a range
 * request to a remote), exactly n bytes at off.  Reads are checked as
 * ever; a block or sample whose checksum fails is read once more before
 * it is an error, since a network copy can go bad where a file would not.
 * read_at is called from several threads at once.  ch_shard_close calls
 * release(arg). */
struct ch_byte_source {
	int (*read_at)(void *arg, void *buf, size_t n, uint64_t off,
		       struct ch_error *err);
	void (*release)(void *arg);
	void *arg;
	uint64_t size;
};
/* name is what messages call the shard; src is copied. */
int ch_shard_open_source(struct ch_shard **out, const char *name,
			 const struct ch_byte_source *src,
			 struct ch_error *err);
int ch_shard_open_memory_source(const char *name,
				const struct ch_byte_source *src,
				uint64_t *bytes, struct ch_error *err);

/* CH_SHARD_LAZY: decode a paged index (shard format 1.1) a page at a time,
 * as samples are first asked for, and check each sample's entry when it
 * is prepared rather than every entry at open.  What a stream wants: its
 * first batch waits only on the pages that hold its samples.  A lazy
 * shard's samples must pass ch_shard_prepare before ch_shard_sample and
 * ch_shard_field see them, and ch_shard_load_index before ch_shard_find. */
#define CH_SHARD_LAZY 1u
/* Opens path, or src when not NULL (its name is path). */
int ch_shard_open_flags(struct ch_shard **out, const char *path,
			const struct ch_byte_source *src, unsigned flags,
			struct ch_error *err);
/* Makes sample i of a lazy shard readable: decodes the index pages that
 * hold its entry, fields and key, and checks them.  Thread-safe; cheap
 * once done, and a no-op on a shard opened whole. */
int ch_shard_prepare(const struct ch_shard *sh, uint64_t i,
		     struct ch_error *err);
/* Decodes and checks all of a lazy shard's index (key order included).
 * Not to be called while other threads read sh. */
int ch_shard_load_index(struct ch_shard *sh, struct ch_error *err);
/* The pages of a paged index (format 1.1); 1 for an index stored whole. */
uint32_t ch_shard_index_pages(const struct ch_shard *sh);

struct ch_sample_info {
	const char *key; /* not NUL-terminated: use key_len */
	size_t key_len;
	uint64_t hash;	 /* XXH3-64 of the sample's content */
	uint32_t block;	 /* block holding the sample */
	uint64_t offset; /* offset of its first field in the block's data */
	uint64_t size;	 /* all fields together */
	uint32_t nfields;
};

struct ch_field_info {
	const char *name; /* NUL-terminated */
	uint64_t size;
	uint64_t offset; /* within the sample */
};

/* O(1): the i-th sample of the shard (0-based). */
void ch_shard_sample(const struct ch_shard *sh, uint64_t i,
		     struct ch_sample_info *out);
/* Field f (0-based, < nfields) of sample i, fields in name order. */
void ch_shard_field(const struct ch_shard *sh, uint64_t i, uint32_t f,
		    struct ch_field_info *out);
/* Per field name id (< ch_shard_name_count): how many samples have the
 * field (count[id]) and its raw bytes over them (bytes[id]), from the
 * index alone, no block read.  The shard is opened whole (not
 * CH_SHARD_LAZY), or its index loaded. */
void ch_shard_field_totals(const struct ch_shard *sh, uint64_t *count,
			   uint64_t *bytes);
/* Asks the CPU for what reading sample i will touch, without waiting for
 * it, so that a reader that knows which samples come next overlaps their
 * cache misses: step 0 its index entry, step 1 (some samples later, the
 * entry in cache) its key and field entries, once its entry is checked.
 * A hint: any i is harmless. */
void ch_shard_prefetch(const struct ch_shard *sh, uint64_t i, int step);
/* Binary search by key; returns the sample number or -1. */
int64_t ch_shard_find(const struct ch_shard *sh, const char *key,
		      size_t key_len);

struct ch_block_stat {
	uint64_t offset, stored_size, raw_size, hash;
	uint32_t codec; /* CH_CODEC_* */
};
void ch_shard_block(const struct ch_shard *sh, uint32_t b,
		    struct ch_block_stat *out);

/* Per-thread state for reading blocks: zstd context, buffers, and the last
 * block decoded (so reading the fields of one sample, or consecutive
 * samples of one block, decodes it once). */
struct ch_block_reader;
struct ch_block_reader *ch_block_reader_new(void);
void ch_block_reader_free(struct ch_block_reader *r);
/* Seconds r's calls to a block cache spent loading blocks (decoding, or
 * mapping and checking) or waiting for another thread loading one: a
 * cost paid once a block while it stays cached.  The cache adds them. */
double ch_block_reader_load_seconds(const struct ch_block_reader *r);
void ch_block_reader_add_load_seconds(struct ch_block_reader *r, double s);

/* Makes room in r for block b (its stored and decoded bytes), so that
 * reading it needs no more memory: fails only when memory runs out,
 * which is no fault of the data. */
int ch_block_reader_reserve(struct ch_block_reader *r,
			    const struct ch_shard *sh, uint32_t b,
			    struct ch_error *err);

/* Like ch_block_read, into dst, which holds the block's raw_size bytes
 * (ch_shard_block): no copy for a caller that keeps blocks (a cache). */
int ch_block_read_into(struct ch_block_reader *r, const struct ch_shard *sh,
		       uint32_t b, uint8_t *dst, struct ch_error *err);
/* Reads block b (checking its stored hash) and returns its decoded bytes,
 * valid until the next call with the same reader. */
int ch_block_read(struct ch_block_reader *r, const struct ch_shard *sh,
		  uint32_t b, const uint8_t **data, size_t *size,
		  struct ch_error *err);

/* Returns the bytes of sample i (all fields, in field order), valid until
 * the next call with the same reader. */
int ch_sample_read(struct ch_block_reader *r, const struct ch_shard *sh,
		   uint64_t i, const uint8_t **data, struct ch_error *err);

/* Like ch_sample_read, but from a raw (uncompressed) block it reads only
 * the sample's bytes and checks them against the sample's content hash
 * instead of reading and hashing the whole block: random access without
 * read amplification.  Compressed blocks are decoded whole. */
int ch_sample_fetch(struct ch_block_reader *r, const struct ch_shard *sh,
		    uint64_t i, const uint8_t **data, struct ch_error *err);

/* Whether raw block b can be read in place from the shard's mapping of
 * its file (a local shard's raw blocks), and then its bytes: checked
 * against the block's hash at each call, valid while the shard is open.
 * No copy and no fresh memory: what the page cache holds is used as it
 * is, once its hash is right. */
int ch_shard_block_mapped(const struct ch_shard *sh, uint32_t b);
int ch_block_map(const struct ch_shard *sh, uint32_t b, const uint8_t **data,
		 struct ch_error *err);

/* Decoded blocks shared between threads, least recently used first out,
 * at most `capacity` bytes beyond the blocks pinned at the moment. */
struct ch_block_cache;
struct ch_block_cache *ch_block_cache_new(size_t capacity);
void ch_block_cache_free(struct ch_block_cache *c);
/* Block b decoded (read with r on a miss, hash checked), pinned until
 * ch_block_cache_unpin(c, *pin). */
int ch_block_cache_get(struct ch_block_cache *c, struct ch_block_reader *r,
		       const struct ch_shard *sh, uint32_t b,
		       const uint8_t **data, void **pin, struct ch_error *err);
void ch_block_cache_unpin(struct ch_block_cache *c, void *pin);
/* Decodes block b into the cache, unpinned, unless it is there or being
 * decoded, or the cache already holds `budget` bytes (returns 1). */
int ch_block_cache_warm(struct ch_block_cache *c, struct ch_block_reader *r,
			const struct ch_shard *sh, uint32_t b, size_t budget,
			struct ch_error *err);
size_t ch_block_cache_capacity(const struct ch_block_cache *c);
/* Drops the blocks of a shard about to be closed: entries are keyed by
 * the shard's address, which a later shard may reuse.  None may be
 * pinned. */
void ch_block_cache_forget(struct ch_block_cache *c, const struct ch_shard *sh);
void ch_block_cache_stats(struct ch_block_cache *c, uint64_t *hits,
			  uint64_t *misses);

/* Hash of a sample's content as stored in the index: XXH3-64 over, for
 * each field in name order, the name, one NUL byte, the size as u64
 * little-endian, then the bytes. */
uint64_t ch_sample_hash(const struct ch_shard *sh, uint64_t i,
			const uint8_t *data);

/* ------------------------------------------------------------------ */
/* Shard writer                                                         */

enum { CH_CODEC_RAW = 0, CH_CODEC_ZSTD = 1, CH_CODEC_ZSTD_DICT = 2 };

struct ch_shard_writer;

/* One field of a sample handed to the writer. */
struct ch_field_desc {
	const char *name;
	uint64_t size;
};

/* One sample inside an encoded block. */
struct ch_sample_desc {
	const char *key;
	size_t key_len;
	uint64_t hash;
	uint64_t offset; /* in the block's raw data */
	uint32_t nfields;
	const struct ch_field_desc *fields; /* name order */
};

/* A block ready to be written: its stored bytes and the samples inside. */
struct ch_encoded_block {
	const uint8_t *stored;
	uint64_t stored_size, raw_size;
	uint32_t codec;
	size_t nsamples;
	const struct ch_sample_desc *samples;
};

/* Creates the file at path (O_EXCL), writes the header.  A dictionary, if
 * any, is written right after it. */
int ch_shard_writer_open(struct ch_shard_writer **out, const char *path,
			 const void *dict, size_t dict_size,
			 struct ch_error *err);
int ch_shard_writer_add(struct ch_shard_writer *w,
			const struct ch_encoded_block *blk,
			struct ch_error *err);

struct ch_shard_summary {
	uint64_t bytes;		/* file size */
	struct ch_hash128 hash; /* XXH3-128 of the whole file */
	struct ch_hash128 seal; /* XXH3-128 of header and footer */
	uint64_t samples;
	uint32_t blocks;
};
/* Writes index and footer, fsyncs and closes the file. */
int ch_shard_writer_finish(struct ch_shard_writer *w,
			   struct ch_shard_summary *out, struct ch_error *err);
/* Frees; if not finished, also unlinks the partial file. */
void ch_shard_writer_free(struct ch_shard_writer *w);

/* Block encoding: zstd at `level` (with an optional dictionary), or raw
 * at level 0 or when compression would save less than 3 % (cheap entropy
 * probe first, so incompressible data such as JPEG is not compressed for
 * nothing). */
struct ch_block_encoder;
struct ch_block_encoder *ch_block_encoder_new(int level, const void *dict,
					      size_t dict_size);
void ch_block_encoder_free(struct ch_block_encoder *e);
/* On success *stored points at either raw (codec RAW) or the encoder's own
 * buffer, valid until the next call. */
int ch_block_encode(struct ch_block_encoder *e, const uint8_t *raw,
		    size_t raw_size, const uint8_t **stored,
		    size_t *stored_size, uint32_t *codec,
		    struct ch_error *err);

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
/* Progress of long work                                                */

/* What a long call has done so far, for a progress display.  The call
 * goes through phases ("hashing", then "uploading"); in each, `done` of
 * `total` things counted in `unit` ("files", "shards", "samples",
 * "bytes") are done, and bytes of total_bytes of the data (0 and 0 when
 * the phase does not count bytes).  A total of 0 is not known yet.  The
 * strings are static. */
struct ch_progress {
	const char *phase, *unit;
	uint64_t done, total;
	uint64_t bytes, total_bytes;
};
/* Called from one thread at a time (not always the caller's), when a
 * phase starts, then every so many things done (a count, never a clock
 * read per sample), and once more when the phase ends: it must be quick
 * and must not call back into the library. */
typedef void (*ch_progress_fn)(const struct ch_progress *p, void *arg);

/* ------------------------------------------------------------------ */
/* pack                                                                 */

struct ch_pack_opts {
	const char *out_dir;
	const char *name;	/* shard name prefix and manifest name */
	/* A shard ends at shard_bytes raw bytes or shard_samples samples,
	 * the first reached.  The sample cap bounds a shard's index, which
	 * is what a stream holds in memory for each shard it has open. */
#define CH_SHARD_SAMPLES_DEFAULT 65536
	uint64_t shard_bytes;	/* raw bytes per shard (0: no limit) */
	uint64_t shard_samples; /* samples per shard (0: no limit) */
	uint64_t block_size;	/* 0: 1 MiB, or 16 KiB with dict */
	int level;
	int jobs;
	int dict;		/* train a zstd dictionary per shard */
	int keep_order;		/* do not sort by key (holds the whole file
				 * list in memory: no spilling) */
	uint64_t memory;	/* bytes of file list held before spilling
				 * sorted runs to disk */
	/* A sample (all its fields) is held whole by pack, and by every
	 * reader that decodes its block: larger ones are refused. */
#define CH_MAX_SAMPLE_DEFAULT (1ull << 30)
#define CH_MAX_SAMPLE_LIMIT (1ull << 34) /* a block, chute-shard(5) */
	uint64_t max_sample_size;
	const char *label_from; /* NULL or "dir" */
	const char *const *exclude; /* --exclude globs */
	size_t nexclude;
	const char *const *include; /* --include globs */
	size_t ninclude;
	int force;		/* replace a dataset even if fields, labels
				 * or splits would be lost */
	/* Pack only part `part` (0-based) of `parts` (0: all): the samples
	 * whose key ch_part_of assigns to it. */
	uint64_t part, parts;
	int list_fd;		/* for source "-" */
	int list_sep;		/* '\n' or 0 */
	volatile sig_atomic_t *cancel; /* set asynchronously to stop */
	ch_progress_fn progress;
	void *progress_arg;
};

struct ch_pack_result {
	uint64_t samples, bytes, shard_bytes;
	size_t shards;
	char id[33];
	char parent[33];   /* the new version's parent; "" for none */
	char old_id[33];   /* the version replaced; "" for none */
	char changes[512]; /* what changed against it, ", "-separated */
};

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

void ch_pack_opts_init(struct ch_pack_opts *o);
/* The part, of `parts`, that holds the sample with this key: XXH3-64
 * (seed 0) of the key's bytes modulo parts (chute-pack(1), PARTS). */
uint64_t ch_part_of(const char *key, size_t key_len, uint64_t parts);
/* Packs the sources into o->out_dir atomically: everything is written in a
 * temporary folder beside it and swapped into place at the end; on failure
 * or cancellation nothing under out_dir changes. */
int ch_pack(const char *const *sources, size_t nsources,
	    const struct ch_pack_opts *o, struct ch_pack_result *res,
	    struct ch_error *err);

/* ------------------------------------------------------------------ */
/* merge: parts packed apart into one dataset                           */

struct ch_merge_opts {
	const char *out_dir;
	const char *name;	/* shard name prefix and manifest name (NULL:
				 * out_dir's last component) */
	int force;		/* replace a dataset even if fields, labels
				 * or splits are lost */
	volatile sig_atomic_t *cancel;
	ch_progress_fn progress; /* phases "checking" (shards' indexes),
				  * "placing" (shards, bytes); may be NULL */
	void *progress_arg;
};

struct ch_merge_result {
	uint64_t samples, bytes, shard_bytes;
	size_t shards, parts;
	int linked;	   /* 1: shards hard-linked, 0: some copied */
	char id[33];
	char parent[33];   /* the new version's parent; "" for none */
	char old_id[33];   /* the version replaced; "" for none */
	char changes[512]; /* what changed against it, ", "-separated */
};

/* Merges the parts (dataset folders packed with --part I/N) into
 * o->out_dir: all N parts, each once, packed with the same options,
 * sources and chute version, each holding only keys of its own part.
 * Their shards go in part order, hard-linked (copied across file
 * systems, never re-encoded) and renamed in the dataset's sequence,
 * under one manifest; the order of parts[] does not matter.  Written
 * aside and swapped into place as ch_pack does: on failure nothing
 * under out_dir changes. */
int ch_merge(const char *const *parts, size_t nparts,
	     const struct ch_merge_opts *o, struct ch_merge_result *res,
	     struct ch_error *err);

/* A part as the plan of a merge sees it: a dataset opened by the caller,
 * wherever it lives (a folder, or a version on a remote), and the name
 * the user gave it, which messages use. */
struct ch_merge_part {
	const char *name;
	struct ch_dataset *ds;
};

/* The plan of a merge, shared by ch_merge and a merge on a remote: checks
 * the parts as ch_merge says (reading manifests and shard indexes, never
 * a block) and fills m with the merged manifest: shards in part order
 * under "shards/NAME-NNNNNN.chs", each with its part's size and hash; no
 * parent, id not yet computed.  Sorts parts[] into part order.
 * progress (may be NULL) sees the phase "checking", in shards. */
int ch_merge_plan(struct ch_merge_part *parts, size_t nparts,
		  const char *name, volatile sig_atomic_t *cancel,
		  ch_progress_fn progress, void *progress_arg,
		  struct ch_manifest *m, struct ch_error *err);

/* ------------------------------------------------------------------ */
/* verify                                                               */

enum ch_problem_kind {
	CH_PROBLEM_MANIFEST,	/* manifest id or content */
	CH_PROBLEM_MISSING,	/* shard listed but absent */
	CH_PROBLEM_UNEXPECTED,	/* .chs file present but not listed */
	CH_PROBLEM_SIZE,	/* file size differs from the manifest */
	CH_PROBLEM_FILE_HASH,	/* XXH3-128 differs from the manifest */
	CH_PROBLEM_STRUCTURE,	/* header, footer or index unreadable */
	CH_PROBLEM_BLOCK,	/* block hash or decoding */
	CH_PROBLEM_SAMPLE,	/* sample content hash (--deep) */
	CH_PROBLEM_COUNT,	/* sample counts disagree */
};

struct ch_problem {
	enum ch_problem_kind kind;
	const char *shard; /* path relative to the dataset, or NULL */
	int64_t block;	   /* -1 if not about a block */
	const char *key;   /* NULL if not about a sample */
	int64_t offset;	   /* byte offset in the shard, -1 if unknown */
	const char *message;
};

typedef void (*ch_problem_fn)(const struct ch_problem *p, void *arg);

struct ch_verify_opts {
	int deep;
	int jobs;
	/* parts > 0: verify part `part` (0 to parts - 1) of `parts` only:
	 * the shards whose index in the manifest is part modulo parts, and
	 * in part 0 the checks of the manifest, the split files and shards/
	 * as a whole, so that the parts together check everything once */
	uint64_t part, parts;
	ch_problem_fn on_problem; /* called from one thread at a time */
	void *arg;
	volatile sig_atomic_t *cancel;
	/* phases "hashing" (files) then "checking blocks" (blocks, the
	 * shards whose hash did not match, or all with deep); may be NULL */
	ch_progress_fn progress;
	void *progress_arg;
};

struct ch_verify_result {
	uint64_t shards, blocks, samples, bytes, problems;
};

/* Verifies a dataset folder, a manifest, or one shard.  Returns 0 when
 * the check ran (problems are counted in res), -1 when it could not run. */
int ch_verify(const char *path, const struct ch_verify_opts *o,
	      struct ch_verify_result *res, struct ch_error *err);

/* ------------------------------------------------------------------ */
/* export                                                               */

struct ch_export_opts {
	const char *out_dir;
	const char *format; /* "tar" */
	volatile sig_atomic_t *cancel;
	ch_progress_fn progress; /* phase "writing", samples; may be NULL */
	void *progress_arg;
};

/* What an export wrote, so far when it failed. */
struct ch_export_result {
	size_t files;	  /* tar files renamed into place */
	uint64_t samples; /* samples in them */
	uint64_t bytes;	  /* their size */
};

/* Writes one WebDataset tar per shard (NAME-000000.tar, members KEY.FIELD
 * in sample order, deterministic headers), each under a temporary name
 * renamed into place when complete. */
int ch_export(struct ch_dataset *ds, const struct ch_export_opts *o,
	      struct ch_export_result *res, struct ch_error *err);

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
/* Check: validating a dataset before training (chute check)            */

/* The rules, in the order they are run and reported; ids are stable
 * (chute-check(1)). */
enum ch_check_rule {
	CH_RULE_READABLE,	 /* shards open, indexes valid, counts agree,
				  * blocks read match their hashes */
	CH_RULE_REQUIRED,	 /* every sample has the required fields */
	CH_RULE_EMPTY,		 /* no field of 0 bytes */
	CH_RULE_TYPES,		 /* jpg/jpeg/png decode, cls, json, npy hold */
	CH_RULE_DUPLICATES,	 /* samples of the same inputs in a split */
	CH_RULE_LEAKAGE,	 /* train samples identical to others' */
	CH_RULE_CONFLICTING_LABELS, /* the same inputs, other labels */
	CH_RULE_NEAR_DUPLICATES, /* near-identical train and eval images */
	CH_RULE_EVAL_SPLIT,	 /* a held-out split exists */
	CH_RULE_LABELS,		 /* class counts; drift from a baseline */
	CH_RULE_SIZE_OUTLIERS,	 /* fields far over their median size */
	CH_RULE_CORRUPTION,	 /* block and sample hashes (deep) */
	CH_RULE_COUNT
};

enum ch_check_level { CH_LEVEL_OFF, CH_LEVEL_WARN, CH_LEVEL_FAIL };
enum ch_check_status { CH_STATUS_OFF, CH_STATUS_PASS, CH_STATUS_WARN,
		       CH_STATUS_FAIL };

/* "readable", "required-fields", ...; NULL past the last rule. */
const char *ch_check_rule_name(int rule);

struct ch_check_opts {
	enum ch_check_level level[CH_RULE_COUNT]; /* what a problem means */
	char **required;  /* required field names (owned), or NULL: every
			   * field more than half the samples have */
	size_t nrequired;
	char **label_fields; /* fields that hold labels besides cls (owned):
			      * left out of a sample's inputs */
	size_t nlabel_fields;
	int deep;	     /* run corruption: decode and hash everything */
	int near_duplicates; /* run near-duplicates (decodes images) */
	int distance;	     /* near-duplicates: Hamming distance, 0..64 */
	double drift;	     /* labels: largest proportion change allowed */
	double factor;	     /* size-outliers: times the median */
	const char *baseline; /* labels: an earlier version, or NULL */
	int allow_no_eval;   /* eval-split warns instead of failing */
	size_t examples;     /* examples kept per rule */
	int jobs;	     /* threads; 0: all cores */
	volatile sig_atomic_t *cancel;
	ch_progress_fn progress; /* phases "scanning", then each pass that
				  * reads blocks; may be NULL */
	void *progress_arg;
};

/* The defaults of chute-check(1); the rules run at their default levels. */
void ch_check_opts_init(struct ch_check_opts *o);
/* Frees what ch_check_opts_init and ch_check_rules_read allocated. */
void ch_check_opts_release(struct ch_check_opts *o);
/* Applies a rules file (JSON: "required", "examples", "rules") to o; an
 * unknown key, rule, level or a bad parameter fails naming the file and
 * the key. */
int ch_check_rules_read(struct ch_check_opts *o, const char *path,
			struct ch_error *err);

/* One sample (or shard) a rule is about.  Strings are owned. */
struct ch_check_ref {
	char *key;	   /* NULL when about a whole shard or split file */
	char *shard;	   /* path in the manifest, or NULL */
	char *split;	   /* its split's name, or NULL */
};

struct ch_check_example {
	uint64_t sample;       /* dataset-wide number: examples are sorted */
	struct ch_check_ref at;
	char *field;	       /* field concerned, or NULL */
	char *message;	       /* what is wrong with it, or NULL */
	uint64_t size, median; /* size-outliers: bytes, the field's median */
	int has_other;	       /* duplicates, leakage, near-duplicates: */
	struct ch_check_ref other; /* the sample it matches */
	uint64_t other_sample; /* and its dataset-wide number */
	int distance;	       /* near-duplicates: Hamming distance */
	uint64_t value;	       /* labels: the class value that drifted */
	double share, baseline_share; /* labels: its proportions */
};

struct ch_check_rule_result {
	enum ch_check_status status; /* OFF: not run */
	uint64_t count;		     /* problems found */
	uint64_t unexamined;	     /* samples the rule could not look at (a
				      * shard or block that does not read):
				      * not 0 fails the rule at its level */
	char *message;		     /* one line, always set when run */
	struct ch_check_example *examples; /* the first (by sample number) */
	size_t nexamples;
};

/* Samples per class value (the cls field's decimal integer), for the
 * whole dataset (groups[0], "all") and each split. */
struct ch_check_labels {
	uint64_t *values; /* distinct class values, ascending */
	size_t nvalues;
	struct ch_check_label_group {
		char *name;	 /* "all", or a split's name */
		uint64_t *counts; /* nvalues counts */
		uint64_t total;	 /* samples with a valid class */
	} *groups;
	size_t ngroups;
};

struct ch_check_report {
	char id[33];
	char *name;
	uint64_t samples;
	size_t shards;
	struct ch_check_rule_result rules[CH_RULE_COUNT];
	int has_labels; /* labels is meaningful: the dataset has cls */
	struct ch_check_labels labels;
	unsigned passed, warned, failed;
};

/* Runs the rules of o over the dataset at path (a folder or manifest).
 * Returns 0 when the check ran, whatever it found (see the statuses);
 * -1 when it could not: no such dataset, a lone shard (no manifest), an
 * unreadable baseline, out of memory, interrupted.  Hash rules read the
 * indexes, and the blocks of samples with label fields (their inputs are
 * hashed without them); typed fields, cls and --deep read blocks.
 * Memory: about 32 bytes a sample, 8 more per field (median sizes) and
 * per sample with cls or near-duplicates. */
int ch_check(const char *path, const struct ch_check_opts *o,
	     struct ch_check_report *rep, struct ch_error *err);
void ch_check_report_release(struct ch_check_report *rep);

/* ------------------------------------------------------------------ */
/* Order: a keyed permutation of [0, n), computed at any position       */

#define CH_PERM_ROUNDS 6
struct ch_perm {
	uint64_t n, seed, epoch, purpose;
	unsigned half; /* bits in each Feistel half */
	/* what each round's hash owes to its fixed inputs, worked out once
	 * (stream/perm.c) */
	uint64_t round_acc[CH_PERM_ROUNDS], round_lo[CH_PERM_ROUNDS];
};

/* The permutation of [0, n) for (seed, epoch, purpose); purpose keeps
 * independent uses (samples, shards, windows) apart. */
void ch_perm_init(struct ch_perm *p, uint64_t n, uint64_t seed, uint64_t epoch,
		  uint64_t purpose);
/* The element at position i (< n): O(1), no table. */
uint64_t ch_perm_at(const struct ch_perm *p, uint64_t i);

/* ------------------------------------------------------------------ */
/* Stream: batches for a trainer (chute stream, man/chute-batch.5)       */

enum ch_shuffle { CH_SHUFFLE_GLOBAL, CH_SHUFFLE_WINDOW, CH_SHUFFLE_NONE };
struct ch_stream_stats;
enum ch_format { CH_FORMAT_BATCH, CH_FORMAT_JSONL, CH_FORMAT_TAR };

/* Frame flags (man/chute-batch.5). */
#define CH_BATCH_PARTIAL 1u  /* fewer samples than the batch size */
#define CH_BATCH_LAST 2u     /* the rank's last batch of the epoch */

/* Where a sink that copies each frame somewhere (a shared-memory ring)
 * would have it encoded instead, saving the copy.  reserve(size, arg) is
 * called from the writing thread, in batch order, for the frame the sink
 * is called with next: it returns memory for size bytes, which the
 * sink's ch_batch_out.data then points into, or NULL for the stream's
 * own buffer (as always with workers at work, which encode side by
 * side).  cold: another CPU copies the frame out of that memory next (a
 * pipe's reader, the memory lent to the pipe), so the samples' bytes are
 * written around this CPU's cache instead of through it. */
struct ch_frame_memory {
	uint8_t *(*reserve)(size_t size, void *arg);
	void *arg;
	int cold;
};

struct ch_stream_opts {
	enum ch_shuffle shuffle;
	uint64_t window;   /* shards per window, CH_SHUFFLE_WINDOW */
	uint64_t seed;
	uint64_t epochs;   /* 0: forever */
	uint64_t start_epoch; /* the first epoch, without a resume cursor */
	uint64_t batch_size;
	int drop_last;	   /* train: drop a last partial batch */
	int eval;	   /* no shuffle, every sample once, last batch kept */
	uint64_t rank, world;
	/* CH_AUTO: as measured; workers 0: the calling thread reads */
#define CH_AUTO (-1)
	int workers, prefetch;
	uint64_t cache;	   /* bytes of decoded blocks kept (0: none) */
	uint64_t index_memory; /* bytes of open shards kept (see ch_stream) */
	const char *split; /* stream this split of the manifest; NULL: all */
	/* --transform specs, "FIELD: op | op ..." (man/chute-stream.1),
	 * one per field; they run in the workers */
	const char *const *transforms;
	size_t ntransforms;
	int skip_corrupt;  /* --on-error skip: replace unreadable samples */
	/* --fields "a,b": only these fields of each sample (NULL: all) */
	const char *fields;
	/* --source-field: a mix's samples carry field "source", their
	 * source's number or name (CH_SOURCE_FIELD_*) */
	int source_field;
	enum ch_format format;
	const char *resume; /* a cursor, or NULL */
	volatile sig_atomic_t *cancel;
	/* called from the writing thread about every stats_interval
	 * seconds while the stream runs (NULL: never) */
	void (*on_stats)(const struct ch_stream_stats *st, void *arg);
	void *stats_arg;
	double stats_interval;
	/* NULL, or memory for the next frame (CH_FORMAT_BATCH) when the
	 * writing thread reads the batch itself: see ch_frame_memory */
	const struct ch_frame_memory *frame_memory;
};

void ch_stream_opts_init(struct ch_stream_opts *o);

/* One batch as handed to the sink: its encoded bytes (a frame, JSON
 * lines, or tar members) and where it stands. */
struct ch_batch_out {
	const uint8_t *data;
	size_t size;
	uint64_t epoch, batch, samples;
	uint32_t flags;
	const char *cursor; /* resume after this batch with it */
};

/* Called by ch_stream in batch order from one thread.  Returns 0 to go
 * on, 1 to stop quietly (the reader went away), -1 on error. */
typedef int (*ch_batch_sink)(const struct ch_batch_out *b, void *arg,
			     struct ch_error *err);

struct ch_stream_stats {
	uint64_t batches, samples, bytes;
	double read_s, encode_s;     /* busy time summed over workers */
	double wait_workers_s;	     /* the writer waited for a batch */
	double wait_sink_s;	     /* the sink (the consumer) took */
	double elapsed_s;
	int workers, prefetch;	     /* as chosen (auto: the latest choice) */
	double tune_work_s;	     /* auto: a worker's time a batch, */
	double tune_consume_s;	     /* the consumer's, when it chose */
	uint64_t cache_hits, cache_misses;
	uint64_t shard_opens;	     /* shards opened, reopenings counted */
	uint64_t index_peak;	     /* most bytes of open shards at once */
	uint64_t skipped;	     /* corrupt samples replaced or dropped */
	double decode_s, resample_s, convert_s; /* transforms, summed over
						   workers: decoding images,
						   cropping and resizing,
						   the other ops */
};

/* What an epoch of a stream holds, for a trainer's steps per epoch. */
struct ch_stream_count {
	char id[33];	      /* the dataset version's id */
	uint64_t samples;     /* of the dataset, or of the split */
	uint64_t batches;     /* a full epoch's, for this rank */
	uint64_t epoch;	      /* where the stream starts (resume, start_epoch) */
	uint64_t batches_left; /* of that epoch: batches, or fewer on a resume */
};

/* Fills *out for the dataset and options without streaming: the
 * options, split and cursor are checked as ch_stream checks them. */
int ch_stream_count(const struct ch_dataset *ds,
		    const struct ch_stream_opts *o, struct ch_stream_count *out,
		    struct ch_error *err);

/* ------------------------------------------------------------------ */
/* Mixing datasets into one stream (stream/mix.c, chute-stream(1) MIXING) */

enum { CH_SOURCE_FIELD_NONE, CH_SOURCE_FIELD_INDEX, CH_SOURCE_FIELD_NAME };
enum { CH_MIX_MAX = 32 };	  /* sources in one mix */
#define CH_WEIGHT_UNIT 1000000 /* weights are counted in millionths */

/* How long an epoch of a mix is (--mix-epoch). */
enum ch_mix_epoch {
	CH_MIX_SHORTEST, /* until a source would repeat: none repeats */
	CH_MIX_SOURCE,	 /* one pass of a source; the others as they come */
	CH_MIX_TOTAL,	 /* this many samples */
};

struct ch_mix_source {
	const char *name;      /* as given: its key in --mix */
	/* opened, in memory of its own (malloc: a dataset does not move,
	 * a remote's points into itself); ch_mix_open takes it */
	struct ch_dataset *ds;
	const char *split;     /* a split of it, or NULL: all of it */
	uint64_t weight;       /* in millionths, above 0 */
};

struct ch_mix_spec {
	struct ch_mix_source *sources;
	size_t n;
	enum ch_mix_epoch epoch;
	uint64_t epoch_total;  /* CH_MIX_TOTAL */
	size_t epoch_source;   /* CH_MIX_SOURCE */
};

/* A weight as written ("0.7", "3", at most 6 decimals) in millionths;
 * -1 when it is not one (a sign, a letter, a seventh decimal). */
int ch_weight_parse(const char *text, uint64_t *out);
/* The shortest decimal text of a weight in millionths ("0.7"). */
void ch_weight_text(uint64_t weight, char out[32]);

/* Opens the mix of spec as one dataset ds to give ch_stream: its sample
 * order is the mix's (see chute-stream(1), MIXING), its id the mix's (a
 * hash of the sources' ids, splits and weights and of the epoch rule).
 * Takes the sources' datasets, which ch_dataset_release(ds) releases
 * and frees, also when it fails. */
int ch_mix_open(struct ch_dataset *ds, const struct ch_mix_spec *spec,
		struct ch_error *err);
/* What a mix holds, by source: id, split, weight, samples (of the split)
 * and the samples an epoch takes from it.  n: 0 for a dataset that is not
 * a mix. */
struct ch_mix_info {
	const char *name, *id, *split;
	uint64_t weight, samples, per_epoch;
	const struct ch_dataset *ds;
};
size_t ch_mix_sources(const struct ch_dataset *ds);
void ch_mix_source_info(const struct ch_dataset *ds, size_t i,
			struct ch_mix_info *out);
/* The epoch rule as --mix-epoch takes it back ("shortest", "1000", or a
 * source's name). */
const char *ch_mix_epoch_text(const struct ch_dataset *ds, char out[32]);

/* Streams batches of the dataset to sink until the epochs are done, the
 * sink says stop (returns 1: ch_stream then returns 0), or *cancel is
 * set.  Output bytes depend only on the dataset and the options that
 * shape the stream, never on workers, prefetch, cache or index memory.
 * Memory: prefetch + workers batches in flight, the block cache, and open
 * shards within index_memory (plus those that batches being read pin). */
int ch_stream(struct ch_dataset *ds, const struct ch_stream_opts *o,
	      ch_batch_sink sink, void *sink_arg, struct ch_stream_stats *st,
	      struct ch_error *err);

/* A fixed-shape field's values (man/chute-batch.5): dtype 1 u8, 2 i64,
 * 3 f16, 4 f32; 0 is variable-length bytes.  ndim 0 is a scalar. */
enum ch_dtype { CH_DTYPE_BYTES, CH_DTYPE_U8, CH_DTYPE_I64, CH_DTYPE_F16,
		CH_DTYPE_F32 };
struct ch_field_type {
	uint32_t dtype, ndim;
	uint64_t shape[4];
};
size_t ch_dtype_size(uint32_t dtype);

/* ------------------------------------------------------------------ */
/* Small utilities shared by cmd/ and lib/                              */

/* Parses "123", "64K", "1.5M", "2G" (powers of 1024) into bytes. */
int ch_parse_size(const char *s, uint64_t *out);
/* Writes data under a temporary name beside path, fsyncs, renames it
 * into place and syncs the folder: readers see the old file or the new
 * one, never a part of either. */
int ch_write_file_atomic(const char *path, const char *data, size_t len,
			 struct ch_error *err);
/* Whether ch_write_file_atomic can replace path, as far as can be told
 * without writing: its folder exists and may be written in, and path is
 * no folder.  For options checked before a long run starts.  Returns 0,
 * or -1 with the reason alone in err (the caller names the path):
 * strerror's words, followed by " (its folder)" when the folder is at
 * fault. */
int ch_check_file_atomic(const char *path, struct ch_error *err);
/* Length of the well-formed UTF-8 sequence at p (overlong forms,
 * surrogates and code points past U+10FFFF refused), 0 if there is none;
 * the code point goes to *cp. */
size_t ch_utf8_len(const uint8_t *p, size_t left, uint32_t *cp);
/* The closest of names[0..n) to word within a Damerau distance of 2
 * (and less than word's length), for "did you mean"; NULL when none is
 * that close.  Words of more than 64 bytes match nothing. */
const char *ch_closest(const char *word, const char *const *names, size_t n);
/* Number of online CPUs, at least 1. */
int ch_cpu_count(void);
/* Seconds on the monotonic clock (CLOCK_MONOTONIC), for durations. */
double ch_now(void);
/* s[0..len) made safe for a terminal, as text output shows keys, field
 * names and paths: the backslash and every byte that is not printable
 * text (below 0x20, 0x7f, the C1 controls U+0080..U+009F, the bidi
 * controls U+061C, U+200E, U+200F, U+202A..U+202E and U+2066..U+2069,
 * anything not well-formed UTF-8) written C-style: \\, \n, \t, \r,
 * else \xHH a byte.
 * Writes at most size bytes with a NUL (like snprintf) and returns the
 * length of the whole escaped text. */
size_t ch_escape(char *out, size_t size, const char *s, size_t len);
/* text with the secrets of every URL in it shown as ***: what messages,
 * outputs and records show of a URL.  A password ("ci:***@h/x"), a
 * lone user name, which may be a token ("***@h/x"), and every value of
 * a query ("?X-Amz-Signature=***&token=***").  A URL runs to a blank
 * (or to the quote that opened it); its user part to the last '@' with
 * a '/' after it, whatever it holds (chute-remote(7), SECRETS); where a
 * '?' comes before that '@' all after "://" is ***.  Returns a
 * new string (caller frees), NULL when out of memory. */
char *ch_url_redact(const char *text);

#endif
