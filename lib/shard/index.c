/* shard/index.c - reading a shard's index: whole, or a page at a time. */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/bytes.h"
#include "common/internal.h"
#include "shard/format.h"
#include "shard/index.h"

#define ENTRY(ix, p) ((ix)->table + CHS_PAGE_TABLE_HEADER + \
		      (size_t)(p) * CHS_PAGE_ENTRY_SIZE)

static int read_at(const struct shard_index *ix, void *buf, uint64_t n,
		   uint64_t off, struct ch_error *err)
{
	return ix->read(ix->read_arg, buf, (size_t)n, ix->at + off, err);
}

/* Codec 0 or 1: the stored index is the raw one, or one zstd frame. */
static int open_single(struct shard_index *ix,
		       const struct shard_index_loc *loc, struct ch_error *err)
{
	uint8_t *stored = malloc(loc->stored_size ? loc->stored_size : 1);
	int rc;
	if (!stored)
		return ch_error_set(err, "out of memory reading the index of "
				    "'%s'", ix->path);
	if ((rc = read_at(ix, stored, loc->stored_size, 0, err)) < 0)
		goto fail;
	if (ch_hash64(stored, loc->stored_size) != loc->hash) {
		rc = ch_error_data(err, "index checksum mismatch ('%s', byte "
				   "%llu)", ix->path,
				   (unsigned long long)ix->at);
		goto fail;
	}
	if (loc->codec == CHS_INDEX_RAW) {
		ix->raw = stored;
		return 0;
	}
	if (!(ix->raw = malloc(loc->raw_size ? loc->raw_size : 1))) {
		rc = ch_error_set(err, "out of memory reading the index of "
				  "'%s'", ix->path);
		goto fail;
	}
	size_t n = ZSTD_decompress(ix->raw, loc->raw_size, stored,
				   loc->stored_size);
	if (ZSTD_isError(n) || n != loc->raw_size) {
		rc = ch_error_data(err, "cannot decode the index ('%s', byte "
				   "%llu): %s", ix->path,
				   (unsigned long long)ix->at,
				   ZSTD_isError(n) ? ZSTD_getErrorName(n)
						   : "wrong size");
		goto fail;
	}
	free(stored);
	return 0;
fail:
	free(stored);
	return rc;
}

/* n bytes at offset off of the stored index: from ix->stored when it is
 * held, else read. */
static int stored_bytes(const struct shard_index *ix, void *buf, uint64_t n,
			uint64_t off, struct ch_error *err)
{
	if (!ix->stored)
		return read_at(ix, buf, n, off, err);
	memcpy(buf, ix->stored + off, n);
	return 0;
}

/* The page table: checked against the footer's hash, and to tile the
 * stored index exactly. */
static int read_table(struct shard_index *ix,
		      const struct shard_index_loc *loc, struct ch_error *err)
{
	uint8_t h[CHS_PAGE_TABLE_HEADER];
	int rc;
	if (loc->stored_size < CHS_PAGE_TABLE_HEADER)
		goto bad;
	if ((rc = stored_bytes(ix, h, sizeof(h), 0, err)) < 0)
		return rc;
	uint32_t ps = ix->page_size = ld32(h);
	ix->npages = ld32(h + 4);
	uint64_t size = CHS_PAGE_TABLE_HEADER +
			(uint64_t)ix->npages * CHS_PAGE_ENTRY_SIZE;
	if (ps < CHS_PAGE_MIN || ps > CHS_PAGE_MAX || (ps & (ps - 1)) ||
	    ix->npages != (ix->raw_size + ps - 1) / ps ||
	    size > loc->stored_size)
		goto bad;
	if (!(ix->table = malloc(size)) ||
	    !(ix->frame_at = malloc(((size_t)ix->npages + 1) *
				    sizeof(*ix->frame_at))))
		return ch_error_nomem(err);
	if ((rc = stored_bytes(ix, ix->table, size, 0, err)) < 0)
		return rc;
	if (ch_hash64(ix->table, size) != loc->hash)
		return ch_error_data(err, "index checksum mismatch ('%s', byte "
				     "%llu)", ix->path,
				     (unsigned long long)ix->at);
	uint64_t at = size;
	for (uint32_t p = 0; p < ix->npages; p++) {
		ix->frame_at[p] = at;
		at += ld32(ENTRY(ix, p));
		if (ld32(ENTRY(ix, p) + 4))
			goto bad;
	}
	ix->frame_at[ix->npages] = at;
	if (at != loc->stored_size)
		goto bad;
	return 0;
bad:
	return ch_error_data(err, "bad index page table ('%s', byte %llu)",
			     ix->path, (unsigned long long)ix->at);
}

/* Checks and decodes page p from its stored bytes; the caller holds the
 * lock (or is alone). */
static int decode_page(struct shard_index *ix, uint32_t p, const uint8_t *src,
		       struct ch_error *err)
{
	uint64_t at = ix->frame_at[p], n = ix->frame_at[p + 1] - at;
	if (ch_hash64(src, n) != ld64(ENTRY(ix, p) + 8))
		return ch_error_data(err, "index page %u checksum mismatch "
				     "('%s', byte %llu)", p, ix->path,
				     (unsigned long long)(ix->at + at));
	if (!ix->dctx && !(ix->dctx = ZSTD_createDCtx()))
		return ch_error_nomem(err);
	uint64_t off = (uint64_t)p * ix->page_size;
	uint64_t len = ix->raw_size - off < ix->page_size ? ix->raw_size - off
							  : ix->page_size;
	size_t got = ZSTD_decompressDCtx(ix->dctx, ix->raw + off, len, src, n);
	if (ZSTD_isError(got) || got != len)
		return ch_error_data(err, "cannot decode index page %u ('%s', "
				     "byte %llu): %s", p, ix->path,
				     (unsigned long long)(ix->at + at),
				     ZSTD_isError(got) ? ZSTD_getErrorName(got)
						       : "wrong size");
	atomic_store_explicit(&ix->ready[p], 1, memory_order_release);
	if (atomic_fetch_sub_explicit(&ix->missing, 1,
				      memory_order_acq_rel) == 1) {
		/* every page is in: nothing will be read again */
		free(ix->stored);
		ix->stored = NULL;
		ch_buf_release(&ix->frame);
		ZSTD_freeDCtx(ix->dctx);
		ix->dctx = NULL;
	}
	return 0;
}

/* Stored bytes read from the file at once: page p's, and those of the
 * pages not yet decoded that follow it up to this much in all.  A read
 * costs more than a few frames' bytes (a global shuffle's first batch
 * needs nearly every page), and a reader going through a shard in order
 * needs the next pages next. */
#define READ_AHEAD 65536

/* Decodes page p, from memory or the file, and from the file the missing
 * pages that follow it in the same read; under the lock. */
static int load_page(struct shard_index *ix, uint32_t p, struct ch_error *err)
{
	uint64_t at = ix->frame_at[p];
	if (ix->stored)
		return decode_page(ix, p, ix->stored + at, err);
	uint32_t last = p;
	while (last + 1 < ix->npages &&
	       !atomic_load_explicit(&ix->ready[last + 1],
				     memory_order_relaxed) &&
	       ix->frame_at[last + 2] - at <= READ_AHEAD)
		last++;
	uint64_t span = ix->frame_at[last + 1] - at;
	int rc;
	if ((rc = ch_buf_reserve(&ix->frame, span ? span : 1, err)) < 0 ||
	    (rc = read_at(ix, ix->frame.data, span, at, err)) < 0)
		return rc;
	/* p's error is the caller's; a page after it that does not check is
	 * left undecoded, for the read that needs it to report */
	const uint8_t *frames = ix->frame.data;
	if ((rc = decode_page(ix, p, frames, err)) < 0)
		return rc;
	for (uint32_t q = p + 1; q <= last && ix->frame.data; q++) {
		struct ch_error ignored;
		(void)decode_page(ix, q, frames + (ix->frame_at[q] - at),
				  &ignored);
	}
	return 0;
}

static int open_paged(struct shard_index *ix, const struct shard_index_loc *loc,
		      enum shard_index_mode mode, struct ch_error *err)
{
	/* all of it in one read (one request to a remote), unless pages are
	 * to be read one by one */
	int rc;
	if (mode != INDEX_LAZY_READ) {
		if (!(ix->stored = malloc(loc->stored_size ? loc->stored_size
							   : 1)))
			return ch_error_set(err, "out of memory reading the "
					    "index of '%s'", ix->path);
		if ((rc = read_at(ix, ix->stored, loc->stored_size, 0,
				  err)) < 0)
			return rc;
	}
	if ((rc = read_table(ix, loc, err)) < 0)
		return rc;
	/* zeroed and untouched: pages of a lazy index not decoded cost no
	 * memory, and a large one faults on huge pages */
	ix->raw_zeroed = 1;
	if (!(ix->raw = ch_zeroed_alloc(ix->raw_size)) ||
	    !(ix->ready = calloc(ix->npages ? ix->npages : 1,
				 sizeof(*ix->ready))))
		return ch_error_set(err, "out of memory reading the index of "
				    "'%s'", ix->path);
	atomic_init(&ix->missing, ix->npages);
	if (mode != INDEX_WHOLE)
		return 0;
	for (uint32_t p = 0; p < ix->npages; p++)
		if ((rc = decode_page(ix, p, ix->stored + ix->frame_at[p],
				      err)) < 0)
			return rc;
	return 0;
}

int shard_index_open(struct shard_index *ix, const struct shard_index_loc *loc,
		     enum shard_index_mode mode, shard_read_fn read,
		     const void *read_arg, const char *path,
		     struct ch_error *err)
{
	memset(ix, 0, sizeof(*ix));
	ix->raw_size = loc->raw_size;
	ix->read = read;
	ix->read_arg = read_arg;
	ix->path = path;
	ix->at = loc->offset;
	atomic_init(&ix->missing, 0);
	if (pthread_mutex_init(&ix->lock, NULL) != 0)
		return ch_error_set(err, "cannot create a lock");
	if (loc->codec != CHS_INDEX_PAGED)
		return open_single(ix, loc, err);
	return open_paged(ix, loc, mode, err);
}

int shard_index_need_slow(struct shard_index *ix, uint64_t off, uint64_t len,
			  struct ch_error *err)
{
	if (len == 0)
		return 0;
	uint32_t first = (uint32_t)(off / ix->page_size);
	uint32_t last = (uint32_t)((off + len - 1) / ix->page_size);
	int rc = 0;
	for (uint32_t p = first; p <= last && rc == 0; p++) {
		if (atomic_load_explicit(&ix->ready[p], memory_order_acquire))
			continue;
		pthread_mutex_lock(&ix->lock);
		if (!atomic_load_explicit(&ix->ready[p], memory_order_relaxed))
			rc = load_page(ix, p, err);
		pthread_mutex_unlock(&ix->lock);
	}
	return rc;
}

uint64_t shard_index_memory(const struct shard_index_loc *loc, int held)
{
	if (loc->codec != CHS_INDEX_PAGED)
		return loc->raw_size;
	/* raw, per page a table entry, an offset and a flag, and the frames
	 * held or the one being read (a frame of chute's is under 64 KiB) */
	uint64_t pages = loc->raw_size / CHS_PAGE_MIN + 1;
	uint64_t frames = loc->stored_size;
	if (!held && frames > 65536)
		frames = 65536;
	return loc->raw_size + pages * 25 + frames;
}

void shard_index_free(struct shard_index *ix)
{
	pthread_mutex_destroy(&ix->lock);
	if (ix->raw_zeroed)
		ch_zeroed_free(ix->raw, ix->raw_size);
	else
		free(ix->raw);
	free(ix->table);
	free(ix->frame_at);
	free(ix->stored);
	free(ix->ready);
	ch_buf_release(&ix->frame);
	ZSTD_freeDCtx(ix->dctx);
	memset(ix, 0, sizeof(*ix));
}
