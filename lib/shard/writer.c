/* shard/writer.c - writing a shard: header, dictionary, blocks, index,
 * footer (layout in shard/format.h and man/chute-shard.5). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_literalCompressionMode */
#include <zstd.h>


#include "chute/shard.h"
#include "common/bytes.h"
#include "common/xxh.h"
#include "shard/format.h"

#define MAX_NAMES 65535

struct ch_shard_writer {
	char *path;
	int fd;
	int finished;
	uint64_t offset; /* bytes written so far */
	XXH3_state_t *file_hash;
	struct ch_buf blocks, samples, fields, keys;
	char **names;
	uint32_t nnames;
	uint64_t nsamples, nfields;
	uint32_t nblocks;
	uint8_t ends[CHS_HEADER_SIZE + CHS_FOOTER_SIZE]; /* for the seal */
};

static int write_all(struct ch_shard_writer *w, const void *p, size_t n,
		     struct ch_error *err)
{
	const uint8_t *q = p;
	XXH3_128bits_update(w->file_hash, p, n);
	while (n) {
		ssize_t k = write(w->fd, q, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return ch_error_errno(err, errno,
					      "cannot write '%s' at byte %llu",
					      w->path,
					      (unsigned long long)w->offset);
		q += k;
		n -= (size_t)k;
		w->offset += (uint64_t)k;
	}
	return 0;
}

int ch_shard_writer_open(struct ch_shard_writer **out, const char *path,
			 const void *dict, size_t dict_size,
			 struct ch_error *err)
{
	struct ch_shard_writer *w = calloc(1, sizeof(*w));
	if (w)
		w->fd = -1;
	if (!w || !(w->path = strdup(path)) ||
	    !(w->file_hash = XXH3_createState())) {
		ch_shard_writer_free(w);
		return ch_error_nomem(err);
	}
	XXH3_128bits_reset(w->file_hash);
	w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		ch_error_errno(err, errno, "cannot create '%s'", path);
		w->finished = 1; /* not ours to unlink */
		ch_shard_writer_free(w);
		return -1;
	}
	uint8_t h[CHS_HEADER_SIZE] = { 0 };
	memcpy(h, CHS_MAGIC, 8);
	st16(h + 8, CHS_MAJOR);
	st16(h + 10, CHS_MINOR);
	st32(h + 12, dict_size ? CHS_FLAG_DICT : 0);
	st64(h + 16, dict_size);
	st64(h + 24, dict_size ? ch_hash64(dict, dict_size) : 0);
	st64(h + 56, ch_hash64(h, 56));
	memcpy(w->ends, h, sizeof(h));
	if (write_all(w, h, sizeof(h), err) < 0 ||
	    (dict_size && write_all(w, dict, dict_size, err) < 0)) {
		ch_shard_writer_free(w);
		return -1;
	}
	*out = w;
	return 0;
}

static int name_id(struct ch_shard_writer *w, const char *name, uint32_t *id,
		   struct ch_error *err)
{
	for (uint32_t i = 0; i < w->nnames; i++) {
		if (strcmp(w->names[i], name) == 0) {
			*id = i;
			return 0;
		}
	}
	if (w->nnames == MAX_NAMES)
		return ch_error_set(err, "more than %d field names in '%s'",
				    MAX_NAMES, w->path);
	char **v = realloc(w->names, (w->nnames + 1) * sizeof(*v));
	if (!v)
		return ch_error_nomem(err);
	w->names = v;
	if (!(v[w->nnames] = strdup(name)))
		return ch_error_nomem(err);
	*id = w->nnames++;
	return 0;
}

static int add_sample(struct ch_shard_writer *w, const struct ch_sample_desc *s,
		      uint32_t block, struct ch_error *err)
{
	if (s->key_len > 0xffff || s->nfields > 0xffff)
		return ch_error_set(err, "key or field count too large in '%.*s'",
				    (int)(s->key_len > 200 ? 200 : s->key_len),
				    s->key);
	if (w->keys.len + s->key_len > UINT32_MAX ||
	    w->nfields + s->nfields > UINT32_MAX || w->nsamples >= UINT32_MAX)
		return ch_error_set(err, "shard '%s' is too large: make "
				    "smaller shards", w->path),
		       ch_error_remedy(err, "shard-size");
	uint8_t e[CHS_SAMPLE_ENTRY_SIZE] = { 0 };
	st64(e, s->hash);
	st64(e + 8, s->offset);
	st32(e + 16, block);
	st32(e + 20, (uint32_t)w->keys.len);
	st16(e + 24, (uint16_t)s->key_len);
	st16(e + 26, (uint16_t)s->nfields);
	st32(e + 28, (uint32_t)w->nfields);
	if (ch_buf_append(&w->samples, e, sizeof(e), err) < 0 ||
	    ch_buf_append(&w->keys, s->key, s->key_len, err) < 0)
		return -1;
	for (uint32_t f = 0; f < s->nfields; f++) {
		uint8_t fe[CHS_FIELD_ENTRY_SIZE] = { 0 };
		uint32_t id = 0;
		if (name_id(w, s->fields[f].name, &id, err) < 0)
			return -1;
		st64(fe, s->fields[f].size);
		st32(fe + 8, id);
		if (ch_buf_append(&w->fields, fe, sizeof(fe), err) < 0)
			return -1;
	}
	w->nsamples++;
	w->nfields += s->nfields;
	return 0;
}

int ch_shard_writer_add(struct ch_shard_writer *w,
			const struct ch_encoded_block *blk,
			struct ch_error *err)
{
	uint8_t e[CHS_BLOCK_ENTRY_SIZE] = { 0 };
	st64(e, w->offset);
	st64(e + 8, blk->stored_size);
	st64(e + 16, blk->raw_size);
	st64(e + 24, ch_hash64(blk->stored, blk->stored_size));
	st32(e + 32, blk->codec);
	if (w->nblocks == UINT32_MAX)
		return ch_error_set(err, "too many blocks in '%s'", w->path);
	if (ch_buf_append(&w->blocks, e, sizeof(e), err) < 0)
		return -1;
	for (size_t i = 0; i < blk->nsamples; i++)
		if (add_sample(w, &blk->samples[i], w->nblocks, err) < 0)
			return -1;
	w->nblocks++;
	return write_all(w, blk->stored, blk->stored_size, err);
}

/* Sorting sample numbers by key needs the key table: qsort_r's context. */
struct key_ctx {
	const uint8_t *samples;
	const uint8_t *keys;
};

static int cmp_keys(const void *a, const void *b, void *arg)
{
	const struct key_ctx *c = arg;
	const uint8_t *ea = c->samples + (size_t)ld32(a) * CHS_SAMPLE_ENTRY_SIZE;
	const uint8_t *eb = c->samples + (size_t)ld32(b) * CHS_SAMPLE_ENTRY_SIZE;
	size_t la = ld16(ea + 24), lb = ld16(eb + 24);
	int r = memcmp(c->keys + ld32(ea + 20), c->keys + ld32(eb + 20),
		       la < lb ? la : lb);
	if (r)
		return r;
	if (la != lb)
		return la < lb ? -1 : 1;
	/* equal keys cannot happen in a pack; keep the sort stable anyway */
	return ld32(a) < ld32(b) ? -1 : ld32(a) > ld32(b);
}

static int build_index(struct ch_shard_writer *w, struct ch_buf *idx,
		       struct ch_error *err)
{
	size_t names_size = 0;
	for (uint32_t i = 0; i < w->nnames; i++)
		names_size += strlen(w->names[i]) + 1;
	uint8_t h[CHS_INDEX_HEADER_SIZE] = { 0 };
	st64(h, w->nsamples);
	st64(h + 8, w->nfields);
	st32(h + 16, w->nblocks);
	st32(h + 20, w->nnames);
	st64(h + 24, names_size);
	st64(h + 32, w->keys.len);
	if (ch_buf_append(idx, h, sizeof(h), err) < 0 ||
	    ch_buf_append(idx, w->blocks.data, w->blocks.len, err) < 0 ||
	    ch_buf_append(idx, w->samples.data, w->samples.len, err) < 0 ||
	    ch_buf_append(idx, w->fields.data, w->fields.len, err) < 0 ||
	    ch_buf_reserve(idx, idx->len + 4 * w->nsamples, err) < 0)
		return -1;
	uint8_t *order = idx->data + idx->len;
	for (uint64_t i = 0; i < w->nsamples; i++)
		st32(order + 4 * i, (uint32_t)i);
	struct key_ctx kc = { w->samples.data, w->keys.data };
	qsort_r(order, w->nsamples, 4, cmp_keys, &kc);
	idx->len += 4 * w->nsamples;
	for (uint32_t i = 0; i < w->nnames; i++)
		if (ch_buf_append(idx, w->names[i], strlen(w->names[i]) + 1,
				  err) < 0)
			return -1;
	return ch_buf_append(idx, w->keys.data, w->keys.len, err);
}

/* An index is stored in pages of this many raw bytes, each its own zstd
 * frame, so that a reader can decode just the pages it needs: a sample's
 * entry, fields and key are three pages.  Smaller pages cost ratio, and
 * past 16 KiB a random batch decodes more than it needs. */
#define INDEX_PAGE (8u << 10)

/* Every stream decodes the index pages of the samples it reads, and a
 * global shuffle's first batch waits for a few pages of every shard.
 * An index's literals are mostly content hashes, which entropy coding
 * cannot shrink: left raw, the index takes about 18 % more bytes and
 * decodes about 1.8x faster.  A libzstd without the parameter compresses
 * them as usual.  Returns the stored size, or 0 on error; *table is the
 * page table's size. */
static size_t compress_index(const struct ch_buf *idx, struct ch_buf *z,
			     size_t *table, const char *path,
			     struct ch_error *err)
{
	uint32_t npages = (uint32_t)((idx->len + INDEX_PAGE - 1) / INDEX_PAGE);
	size_t at = *table = CHS_PAGE_TABLE_HEADER + CHS_PAGE_ENTRY_SIZE *
							(size_t)npages;
	size_t bound = at + (size_t)npages * ZSTD_compressBound(INDEX_PAGE);
	ZSTD_CCtx *c = ZSTD_createCCtx();
	if (!c || ch_buf_reserve(z, bound, err) < 0) {
		ZSTD_freeCCtx(c);
		if (!c)
			ch_error_nomem(err);
		return 0;
	}
	ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 3);
	(void)ZSTD_CCtx_setParameter(c, ZSTD_c_literalCompressionMode,
				     ZSTD_ps_disable);
	st32(z->data, INDEX_PAGE);
	st32(z->data + 4, npages);
	for (uint32_t p = 0; p < npages; p++) {
		size_t off = (size_t)p * INDEX_PAGE;
		size_t len = idx->len - off < INDEX_PAGE ? idx->len - off
							 : INDEX_PAGE;
		size_t n = ZSTD_compress2(c, z->data + at, bound - at,
					  idx->data + off, len);
		if (ZSTD_isError(n)) {
			ZSTD_freeCCtx(c);
			ch_error_set(err, "cannot compress the index of '%s': "
				     "%s", path, ZSTD_getErrorName(n));
			return 0;
		}
		uint8_t *e = z->data + CHS_PAGE_TABLE_HEADER +
			     CHS_PAGE_ENTRY_SIZE * (size_t)p;
		st32(e, (uint32_t)n);
		st32(e + 4, 0);
		st64(e + 8, ch_hash64(z->data + at, n));
		at += n;
	}
	ZSTD_freeCCtx(c);
	return at;
}

int ch_shard_writer_finish(struct ch_shard_writer *w,
			   struct ch_shard_summary *out, struct ch_error *err)
{
	int rc = -1;
	struct ch_buf idx = { 0 }, z = { 0 };
	if (build_index(w, &idx, err) < 0)
		goto out;
	size_t table;
	size_t zn = compress_index(&idx, &z, &table, w->path, err);
	if (!zn)
		goto out;
	int packed = zn < idx.len;
	const uint8_t *stored = packed ? z.data : idx.data;
	size_t stored_size = packed ? zn : idx.len;
	/* a paged index's frames are vouched for by the page table */
	size_t hashed = packed ? table : stored_size;
	uint8_t f[CHS_FOOTER_SIZE] = { 0 };
	st64(f, w->offset);
	st64(f + 8, stored_size);
	st64(f + 16, idx.len);
	st64(f + 24, ch_hash64(stored, hashed));
	st64(f + 32, w->nsamples);
	st32(f + 40, w->nblocks);
	st32(f + 44, packed ? CHS_INDEX_PAGED : CHS_INDEX_RAW);
	st64(f + 48, ch_hash64(f, 48));
	memcpy(f + 56, CHS_FOOTER_MAGIC, 8);
	memcpy(w->ends + CHS_HEADER_SIZE, f, sizeof(f));
	if (write_all(w, stored, stored_size, err) < 0 ||
	    write_all(w, f, sizeof(f), err) < 0)
		goto out;
	if (fsync(w->fd) < 0) {
		ch_error_errno(err, errno, "cannot sync '%s'", w->path);
		goto out;
	}
	if (close(w->fd) < 0) {
		w->fd = -1;
		ch_error_errno(err, errno, "cannot close '%s'", w->path);
		goto out;
	}
	w->fd = -1;
	XXH128_hash_t hh = XXH3_128bits_digest(w->file_hash);
	out->bytes = w->offset;
	out->hash = (struct ch_hash128){ hh.high64, hh.low64 };
	out->seal = ch_hash128(w->ends, sizeof(w->ends));
	out->samples = w->nsamples;
	out->blocks = w->nblocks;
	w->finished = 1;
	rc = 0;
out:
	ch_buf_release(&idx);
	ch_buf_release(&z);
	return rc;
}

void ch_shard_writer_free(struct ch_shard_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (!w->finished && w->path)
		unlink(w->path);
	free(w->path);
	XXH3_freeState(w->file_hash);
	ch_buf_release(&w->blocks);
	ch_buf_release(&w->samples);
	ch_buf_release(&w->fields);
	ch_buf_release(&w->keys);
	for (uint32_t i = 0; i < w->nnames; i++)
		free(w->names[i]);
	free(w->names);
	free(w);
}
