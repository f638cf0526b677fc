/* shard/index.h - reading a shard's index: whole, or a page at a time.
 *
 * A paged index (codec 2, see shard/format.h) is a table of pages, each a
 * small zstd frame with its own checksum.  Opened lazily, a page is read,
 * checked and decoded the first time a reader asks for bytes in it, so a
 * stream that needs a few samples from each of many shards never touches
 * the rest: a global shuffle's first batch waits on the pages that hold
 * its samples, not on every index in the dataset. */
#ifndef CH_SHARD_INDEX_H
#define CH_SHARD_INDEX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "chute/common.h"

/* n bytes at offset off of the shard file. */
typedef int (*shard_read_fn)(const void *arg, void *buf, size_t n,
			     uint64_t off, struct ch_error *err);

/* Where the footer says the index is, and what it holds. */
struct shard_index_loc {
	uint64_t offset, stored_size, raw_size, hash;
	uint32_t codec;
};

enum shard_index_mode {
	INDEX_WHOLE,	 /* decode (and check) everything at open */
	INDEX_LAZY_READ, /* read pages from the file when first needed */
	INDEX_LAZY_HELD, /* read the stored index at open (one request to a
			    remote), decode pages when first needed */
};

struct shard_index {
	uint8_t *raw; /* raw_size bytes; pages not yet decoded hold zeros */
	uint64_t raw_size;
	int raw_zeroed; /* raw is from ch_zeroed_alloc (paged), else malloc */
	/* the rest is for paged indexes */
	uint32_t page_size, npages;
	uint8_t *table;	    /* the page table, as stored */
	uint64_t *frame_at; /* npages + 1 offsets from the index's start */
	uint8_t *stored;    /* INDEX_LAZY_HELD: the stored index */
	atomic_uchar *ready;  /* per page: decoded */
	atomic_uint missing;  /* pages not yet decoded; 0 = all in */
	pthread_mutex_t lock; /* held while decoding: guards what follows */
	void *dctx;	      /* ZSTD_DCtx */
	struct ch_buf frame;  /* pages' stored bytes, read from the file */
	shard_read_fn read;
	const void *read_arg;
	const char *path; /* for messages, owned by the shard */
	uint64_t at;	  /* the index's byte offset in the shard */
};

/* Reads, checks and decodes the index at loc (its hash already vouched
 * for by the footer's), all of it or, for a paged index in a lazy mode,
 * just its page table. */
int shard_index_open(struct shard_index *ix, const struct shard_index_loc *loc,
		     enum shard_index_mode mode, shard_read_fn read,
		     const void *read_arg, const char *path,
		     struct ch_error *err);

/* Decodes the pages that hold raw[off, off + len) if not done already.
 * Safe from several threads at once.  The caller checks off + len is
 * within raw_size. */
int shard_index_need_slow(struct shard_index *ix, uint64_t off, uint64_t len,
			  struct ch_error *err);
static inline int shard_index_need(struct shard_index *ix, uint64_t off,
				   uint64_t len, struct ch_error *err)
{
	if (atomic_load_explicit(&ix->missing, memory_order_acquire) == 0)
		return 0;
	return shard_index_need_slow(ix, off, len, err);
}

/* At most the bytes an open index holds; held: opened INDEX_LAZY_HELD. */
uint64_t shard_index_memory(const struct shard_index_loc *loc, int held);

void shard_index_free(struct shard_index *ix);

#endif
