/*
 * chute/shard.h - the shard file (lib/shard/, format: man/chute-shard.5):
 * its checked reader, the block cache, the writer and block codec.
 */
#ifndef CHUTE_SHARD_H
#define CHUTE_SHARD_H

#include "chute/common.h"

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

/* The most raw bytes a block may hold (chute-shard(5)), and so the
 * largest sample a shard can hold: a sample lies in one block. */
#define CH_MAX_SAMPLE_LIMIT (1ull << 34)

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

#endif
