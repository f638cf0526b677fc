/* shard/reader.c - opening a shard (header, footer, index: checked, never
 * trusted) and reading its blocks and samples. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "chute/shard.h"
#include "common/bytes.h"
#include "common/internal.h"
#include "common/read_range.h"
#include "shard/format.h"
#include "shard/index.h"

/* An index may not expand more than this from its stored size: bounds the
 * memory a hostile footer can make us allocate. */
#define MAX_INDEX_RATIO 64
#define MAX_DICT_SIZE (16u << 20)
#define MAX_BLOCK_RAW CH_MAX_SAMPLE_LIMIT

struct ch_shard {
	char *path;
	int fd;
	uint64_t file_size;
	uint64_t nsamples, nfields;
	uint32_t nblocks, nnames;
	struct shard_index ix; /* decoded index, owned; a lazy one fills in
				  as samples are prepared */
	uint64_t index_memory, keys_size;
	unsigned flags;	   /* CH_SHARD_LAZY */
	int all_checked;   /* every sample and key has been checked */
	atomic_uchar *checked; /* lazy: a bit per sample prepared */
	const uint8_t *blocks, *samples, *fields, *order, *keys;
	const char **names; /* pointers into the index */
	uint32_t *name_rank; /* position of each name id in byte order */
	uint8_t *dict;
	size_t dict_size;
	/* the file, mapped read-only when it is local and has raw blocks:
	 * those are read from the page cache, not copied */
	const uint8_t *map;
	size_t map_size;
	uint64_t serial; /* tells this open shard from a later one that
			    reuses its address (readers and caches key on it) */
	struct ch_byte_source src; /* read_at NULL: the file fd */
	/* header then footer: the hashes of everything else, so their
	 * hash (the seal) stands for the whole file */
	uint8_t ends[CHS_HEADER_SIZE + CHS_FOOTER_SIZE];
};

static int pread_all(int fd, void *buf, size_t n, uint64_t off,
		     const char *path, struct ch_error *err)
{
	if (ch_pread_full(fd, buf, n, off, &off) == 0)
		return 0;
	if (errno)
		return ch_error_errno(err, errno, "cannot read '%s' at byte %llu",
				      path, (unsigned long long)off);
	return ch_error_data(err, "unexpected end of '%s' at byte %llu", path,
			     (unsigned long long)off);
}

/* n bytes at off, from the file or the byte source. */
static int shard_read(const struct ch_shard *sh, void *buf, size_t n,
		      uint64_t off, struct ch_error *err)
{
	if (!sh->src.read_at)
		return pread_all(sh->fd, buf, n, off, sh->path, err);
	if (off > sh->src.size || n > sh->src.size - off)
		return ch_error_data(err, "unexpected end of '%s' at byte %llu",
				     sh->path, (unsigned long long)off);
	return sh->src.read_at(sh->src.arg, buf, n, off, err);
}

static int read_header(struct ch_shard *sh, uint64_t *dict_hash,
		       struct ch_error *err)
{
	uint8_t h[CHS_HEADER_SIZE];
	int rc = shard_read(sh, h, sizeof(h), 0, err);
	if (rc < 0)
		return rc;
	if (memcmp(h, CHS_MAGIC, 8) != 0)
		return ch_error_data(err, "not a chute shard: bad magic ('%s', "
				     "byte 0)", sh->path);
	if (ld64(h + 56) != ch_hash64(h, 56))
		return ch_error_data(err, "header checksum mismatch ('%s', "
				     "byte 0)", sh->path);
	if (ld16(h + 8) != CHS_MAJOR)
		return ch_error_data(err, "unsupported shard version %u.%u "
				     "('%s', byte 8)", ld16(h + 8),
				     ld16(h + 10), sh->path);
	uint32_t flags = ld32(h + 12);
	uint64_t dict_size = ld64(h + 16);
	if ((flags & ~CHS_FLAG_DICT) || !(flags & CHS_FLAG_DICT) != !dict_size ||
	    (!dict_size && ld64(h + 24)))
		return ch_error_data(err, "bad header flags 0x%x ('%s', byte "
				     "12)", flags, sh->path);
	for (int i = 32; i < 56; i++)
		if (h[i])
			return ch_error_data(err, "reserved header byte is not "
					     "zero ('%s', byte %d)", sh->path,
					     i);
	if (dict_size > MAX_DICT_SIZE)
		return ch_error_data(err, "dictionary too large ('%s', byte 16)",
				     sh->path);
	sh->dict_size = (size_t)dict_size;
	*dict_hash = ld64(h + 24);
	memcpy(sh->ends, h, sizeof(h));
	return 0;
}

static int read_dict(struct ch_shard *sh, uint64_t dict_hash,
		     struct ch_error *err)
{
	if (!sh->dict_size)
		return 0;
	if (CHS_HEADER_SIZE + sh->dict_size > sh->file_size)
		return ch_error_data(err, "dictionary runs past the end of '%s'",
				     sh->path);
	if (!(sh->dict = malloc(sh->dict_size)))
		return ch_error_nomem(err);
	int rc = shard_read(sh, sh->dict, sh->dict_size, CHS_HEADER_SIZE, err);
	if (rc < 0)
		return rc;
	if (ch_hash64(sh->dict, sh->dict_size) != dict_hash)
		return ch_error_data(err, "dictionary checksum mismatch ('%s', "
				     "byte %d)", sh->path, CHS_HEADER_SIZE);
	return 0;
}

struct footer {
	uint64_t index_offset, index_stored, index_raw, index_hash, nsamples;
	uint32_t nblocks, index_codec;
};

static int read_footer(struct ch_shard *sh, struct footer *ft,
		       struct ch_error *err)
{
	uint8_t f[CHS_FOOTER_SIZE];
	uint64_t at = sh->file_size - CHS_FOOTER_SIZE;
	int rc = shard_read(sh, f, sizeof(f), at, err);
	if (rc < 0)
		return rc;
	if (memcmp(f + 56, CHS_FOOTER_MAGIC, 8) != 0)
		return ch_error_data(err, "bad footer magic: truncated or not a "
				     "shard ('%s', byte %llu)", sh->path,
				     (unsigned long long)(at + 56));
	if (ld64(f + 48) != ch_hash64(f, 48))
		return ch_error_data(err, "footer checksum mismatch ('%s', byte "
				     "%llu)", sh->path, (unsigned long long)at);
	memcpy(sh->ends + CHS_HEADER_SIZE, f, sizeof(f));
	ft->index_offset = ld64(f);
	ft->index_stored = ld64(f + 8);
	ft->index_raw = ld64(f + 16);
	ft->index_hash = ld64(f + 24);
	ft->nsamples = ld64(f + 32);
	ft->nblocks = ld32(f + 40);
	ft->index_codec = ld32(f + 44);
	uint64_t data_start = CHS_HEADER_SIZE + sh->dict_size;
	if (ft->index_offset < data_start || ft->index_stored > at ||
	    ft->index_offset != at - ft->index_stored)
		return ch_error_data(err, "index bounds are inconsistent with "
				     "the file size ('%s', byte %llu)",
				     sh->path, (unsigned long long)at);
	if (ft->index_codec > CHS_INDEX_PAGED ||
	    ft->index_raw / MAX_INDEX_RATIO > ft->index_stored + 65536 ||
	    (ft->index_codec == CHS_INDEX_RAW &&
	     ft->index_raw != ft->index_stored))
		return ch_error_data(err, "bad index codec or size ('%s', byte "
				     "%llu)", sh->path,
				     (unsigned long long)(at + 16));
	return 0;
}

static int read_for_index(const void *arg, void *buf, size_t n,
			  uint64_t off, struct ch_error *err)
{
	return shard_read(arg, buf, n, off, err);
}

static struct shard_index_loc index_loc(const struct footer *ft)
{
	return (struct shard_index_loc){ ft->index_offset, ft->index_stored,
					 ft->index_raw, ft->index_hash,
					 ft->index_codec };
}

/* A lazy shard from a remote gets its stored index in one request, not a
 * request per page. */
static int load_index(struct ch_shard *sh, const struct footer *ft,
		      struct ch_error *err)
{
	enum shard_index_mode mode = INDEX_WHOLE;
	if (sh->flags & CH_SHARD_LAZY)
		mode = sh->src.read_at ? INDEX_LAZY_HELD : INDEX_LAZY_READ;
	struct shard_index_loc loc = index_loc(ft);
	sh->index_memory = shard_index_memory(&loc, mode == INDEX_LAZY_HELD);
	return shard_index_open(&sh->ix, &loc, mode, read_for_index, sh,
				sh->path, err);
}

/* Multiplies and adds with overflow checks: sizes come from the file. */
static int add_size(uint64_t *acc, uint64_t count, uint64_t each)
{
	uint64_t prod;
	if (__builtin_mul_overflow(count, each, &prod) ||
	    __builtin_add_overflow(*acc, prod, acc))
		return -1;
	return 0;
}

/* Field names within a sample must increase in byte order: comparing
 * precomputed ranks keeps that check off strcmp for every field. */
static int rank_names(struct ch_shard *sh, struct ch_error *err)
{
	sh->name_rank = calloc(sh->nnames ? sh->nnames : 1,
			       sizeof(*sh->name_rank));
	if (!sh->name_rank)
		return ch_error_nomem(err);
	for (uint32_t i = 0; i < sh->nnames; i++)
		for (uint32_t k = 0; k < sh->nnames; k++)
			sh->name_rank[i] +=
				strcmp(sh->names[k], sh->names[i]) < 0;
	return 0;
}

static int map_sections(struct ch_shard *sh, const struct footer *ft,
			struct ch_error *err)
{
	const uint8_t *h = sh->ix.raw;
	if (ft->index_raw < CHS_INDEX_HEADER_SIZE)
		return ch_error_data(err, "index too short ('%s')", sh->path);
	int rc = shard_index_need(&sh->ix, 0, CHS_INDEX_HEADER_SIZE, err);
	if (rc < 0)
		return rc;
	sh->nsamples = ld64(h);
	sh->nfields = ld64(h + 8);
	sh->nblocks = ld32(h + 16);
	sh->nnames = ld32(h + 20);
	uint64_t names_size = ld64(h + 24), keys_size = ld64(h + 32);
	uint64_t total = CHS_INDEX_HEADER_SIZE;
	for (int i = 40; i < CHS_INDEX_HEADER_SIZE; i++)
		if (h[i])
			return ch_error_data(err, "reserved index header byte "
					     "%d is not zero ('%s')", i,
					     sh->path);
	if (sh->nsamples != ft->nsamples || sh->nblocks != ft->nblocks ||
	    sh->nsamples > UINT32_MAX || sh->nfields > UINT32_MAX ||
	    keys_size > UINT32_MAX ||
	    add_size(&total, sh->nblocks, CHS_BLOCK_ENTRY_SIZE) ||
	    add_size(&total, sh->nsamples, CHS_SAMPLE_ENTRY_SIZE + 4) ||
	    add_size(&total, sh->nfields, CHS_FIELD_ENTRY_SIZE) ||
	    add_size(&total, 1, names_size) || add_size(&total, 1, keys_size) ||
	    total != ft->index_raw)
		return ch_error_data(err, "index sections do not add up ('%s', "
				     "index byte 0)", sh->path);
	sh->blocks = h + CHS_INDEX_HEADER_SIZE;
	sh->samples = sh->blocks + (size_t)sh->nblocks * CHS_BLOCK_ENTRY_SIZE;
	sh->fields = sh->samples + sh->nsamples * CHS_SAMPLE_ENTRY_SIZE;
	sh->order = sh->fields + sh->nfields * CHS_FIELD_ENTRY_SIZE;
	const uint8_t *names = sh->order + 4 * sh->nsamples;
	sh->keys = names + names_size;
	sh->keys_size = keys_size;
	if (sh->nnames > names_size)
		return ch_error_data(err, "bad name table ('%s')", sh->path);
	if ((rc = shard_index_need(&sh->ix, CHS_INDEX_HEADER_SIZE,
				   (uint64_t)sh->nblocks * CHS_BLOCK_ENTRY_SIZE,
				   err)) < 0 ||
	    (rc = shard_index_need(&sh->ix, (uint64_t)(names - h), names_size,
				   err)) < 0)
		return rc;
	sh->names = calloc(sh->nnames ? sh->nnames : 1, sizeof(*sh->names));
	if (!sh->names)
		return ch_error_nomem(err);
	size_t at = 0;
	for (uint32_t i = 0; i < sh->nnames; i++) {
		const uint8_t *z = memchr(names + at, 0, names_size - at);
		if (!z || z == names + at)
			return ch_error_data(err, "bad name table ('%s', name "
					     "%u)", sh->path, i);
		sh->names[i] = (const char *)names + at;
		at = (size_t)(z - names) + 1;
		for (uint32_t k = 0; k < i; k++)
			if (!strcmp(sh->names[k], sh->names[i]))
				return ch_error_data(err, "field name '%s' "
						     "appears twice in the "
						     "name table ('%s')",
						     sh->names[i], sh->path);
	}
	if (at != names_size)
		return ch_error_data(err, "bad name table size ('%s')",
				     sh->path);
	return rank_names(sh, err);
}

static int check_blocks(struct ch_shard *sh, const struct footer *ft,
			struct ch_error *err)
{
	uint64_t expect = CHS_HEADER_SIZE + sh->dict_size;
	for (uint32_t b = 0; b < sh->nblocks; b++) {
		struct ch_block_stat st;
		ch_shard_block(sh, b, &st);
		if (st.offset != expect || st.stored_size > ft->index_offset ||
		    st.offset > ft->index_offset - st.stored_size)
			return ch_error_data(err, "block %u is out of place "
					     "('%s', byte %llu)", b, sh->path,
					     (unsigned long long)st.offset);
		if (st.codec > CH_CODEC_ZSTD_DICT ||
		    (st.codec == CH_CODEC_ZSTD_DICT && !sh->dict_size) ||
		    (st.codec == CH_CODEC_RAW && st.raw_size != st.stored_size) ||
		    (st.stored_size == 0 && st.codec != CH_CODEC_RAW) ||
		    ld32(sh->blocks + (size_t)b * CHS_BLOCK_ENTRY_SIZE + 36))
			return ch_error_data(err, "block %u has a bad codec or "
					     "size ('%s')", b, sh->path);
		/* checked before anything is allocated for the block */
		if (st.raw_size > MAX_BLOCK_RAW)
			return ch_error_data(err, "block %u declares %llu bytes "
					     "decoded, more than a block may "
					     "hold (%llu) ('%s')", b,
					     (unsigned long long)st.raw_size,
					     MAX_BLOCK_RAW, sh->path);
		expect += st.stored_size;
	}
	if (expect != ft->index_offset)
		return ch_error_data(err, "blocks do not end where the index "
				     "starts ('%s', byte %llu)", sh->path,
				     (unsigned long long)expect);
	return 0;
}

/* The entry of sample i points inside the index and its block. */
static int check_sample(const struct ch_shard *sh, uint64_t i,
			struct ch_error *err)
{
	const uint8_t *e = sh->samples + i * CHS_SAMPLE_ENTRY_SIZE;
	uint32_t block = ld32(e + 16), first = ld32(e + 28);
	uint16_t nf = ld16(e + 26);
	uint64_t offset = ld64(e + 8), size = 0;
	if (block >= sh->nblocks || nf == 0 || ld16(e + 24) == 0 ||
	    (uint64_t)first + nf > sh->nfields)
		return ch_error_data(err, "sample %llu points outside the index "
				     "('%s')", (unsigned long long)i, sh->path);
	for (uint16_t f = 0; f < nf; f++) {
		const uint8_t *fe = sh->fields +
				    (uint64_t)(first + f) * CHS_FIELD_ENTRY_SIZE;
		if (ld32(fe + 8) >= sh->nnames || ld32(fe + 12) ||
		    add_size(&size, 1, ld64(fe)) ||
		    (f > 0 && sh->name_rank[ld32(fe - 8)] >=
				      sh->name_rank[ld32(fe + 8)]))
			return ch_error_data(err, "sample %llu has a bad field "
					     "('%s')", (unsigned long long)i,
					     sh->path);
	}
	struct ch_block_stat st;
	ch_shard_block(sh, block, &st);
	if (offset > st.raw_size || size > st.raw_size - offset)
		return ch_error_data(err, "sample %llu runs past its block "
				     "('%s', block %u)", (unsigned long long)i,
				     sh->path, block);
	return 0;
}

static int check_key(const struct ch_shard *sh, uint64_t i,
		     struct ch_error *err)
{
	const uint8_t *e = sh->samples + i * CHS_SAMPLE_ENTRY_SIZE;
	if ((uint64_t)ld32(e + 20) + ld16(e + 24) > sh->keys_size ||
	    memchr(sh->keys + ld32(e + 20), 0, ld16(e + 24)))
		return ch_error_data(err, "sample %llu has a key outside the "
				     "key table or with a NUL byte ('%s')",
				     (unsigned long long)i, sh->path);
	return 0;
}

static int check_samples(struct ch_shard *sh, struct ch_error *err)
{
	for (uint64_t i = 0; i < sh->nsamples; i++)
		if (check_sample(sh, i, err) < 0 || check_key(sh, i, err) < 0)
			return -1; /* they only check */
	return 0;
}

/* That the key order table is a sorted permutation: binary search
 * depends on it. */
static int check_key_order(struct ch_shard *sh, struct ch_error *err)
{
	int rc = -1;
	uint8_t *seen = calloc(sh->nsamples ? sh->nsamples : 1, 1);
	if (!seen)
		return ch_error_nomem(err);
	for (uint64_t i = 0; i < sh->nsamples; i++) {
		uint32_t s = ld32(sh->order + 4 * i);
		if (s >= sh->nsamples || seen[s]) {
			rc = ch_error_data(err, "key order table is not a "
					   "permutation ('%s', entry %llu)",
					   sh->path,
					   (unsigned long long)i);
			goto out;
		}
		seen[s] = 1;
		if (i == 0)
			continue;
		const uint8_t *ea = sh->samples + (uint64_t)ld32(sh->order +
					4 * (i - 1)) * CHS_SAMPLE_ENTRY_SIZE;
		const uint8_t *eb = sh->samples +
				    (uint64_t)s * CHS_SAMPLE_ENTRY_SIZE;
		size_t la = ld16(ea + 24), lb = ld16(eb + 24);
		int c = memcmp(sh->keys + ld32(ea + 20), sh->keys + ld32(eb + 20),
			       la < lb ? la : lb);
		if (c > 0 || (c == 0 && la >= lb)) {
			rc = ch_error_data(err, "keys are not sorted or not "
					   "unique ('%s', entry %llu)", sh->path,
					   (unsigned long long)i);
			goto out;
		}
	}
	rc = 0;
out:
	free(seen);
	return rc;
}

/* Nanoseconds since boot: a shard reopened at the address of a closed
 * one was opened later, so the pair (address, serial) is never reused.
 * Never 0, which readers take for "none". */
static uint64_t open_serial(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec + 1;
}

uint64_t ch_shard_serial(const struct ch_shard *sh) { return sh->serial; }

/* The memory estimate of an opened sh (fd or source set, size known). */
static int estimate_memory(struct ch_shard *sh, uint64_t *bytes,
			   struct ch_error *err)
{
	struct footer ft;
	uint64_t dict_hash;
	if (sh->file_size < CHS_HEADER_SIZE + CHS_FOOTER_SIZE)
		return ch_error_data(err, "not a chute shard: only %llu %s "
				     "('%s')", (unsigned long long)sh->file_size,
				     ch_plural(sh->file_size, "byte", "bytes"),
				     sh->path);
	int rc;
	if ((rc = read_header(sh, &dict_hash, err)) < 0 ||
	    (rc = read_footer(sh, &ft, err)) < 0)
		return rc;
	struct shard_index_loc loc = index_loc(&ft);
	/* a shard from a byte source is opened holding its stored index */
	*bytes = sizeof(*sh) + sh->dict_size + ft.nsamples / 8 + 1 +
		 shard_index_memory(&loc, sh->src.read_at != NULL);
	return 0;
}

int ch_shard_open_memory(const char *path, uint64_t *bytes,
			 struct ch_error *err)
{
	struct ch_shard sh = { .path = (char *)path };
	struct stat st;
	int rc = -1;
	sh.fd = ch_open_regular(path, err);
	if (sh.fd < 0)
		return -1;
	if (fstat(sh.fd, &st) < 0)
		ch_error_errno(err, errno, "cannot stat '%s'", path);
	else
		sh.file_size = (uint64_t)st.st_size,
		rc = estimate_memory(&sh, bytes, err);
	close(sh.fd);
	return rc;
}

int ch_shard_open_memory_source(const char *name,
				const struct ch_byte_source *src,
				uint64_t *bytes, struct ch_error *err)
{
	struct ch_shard sh = { .path = (char *)name, .fd = -1, .src = *src,
			       .file_size = src->size };
	return estimate_memory(&sh, bytes, err);
}

/* Checks every entry of an index that is all in; a lazy one's samples
 * are checked one at a time by ch_shard_prepare. */
static int check_index(struct ch_shard *sh, struct ch_error *err)
{
	if (atomic_load(&sh->ix.missing))
		return 0;
	int rc;
	if ((rc = check_samples(sh, err)) < 0 ||
	    (rc = check_key_order(sh, err)) < 0)
		return rc;
	sh->all_checked = 1;
	return 0;
}

/* Maps a local shard that has raw blocks, so that they can be read in
 * place (ch_block_map).  Shards are replaced by renaming, never rewritten,
 * so the mapping keeps the file it was made of.  Without it (mmap
 * failing, a byte source) raw blocks are read like the others.  A shard
 * truncated or copied over in place while mapped raises SIGBUS at the
 * next touch of a lost page; lib/ keeps no registry of its mappings for
 * that: the chute command finds the file in /proc/self/maps and exits
 * with an error naming it (cmd/fault.c). */
static void map_raw_blocks(struct ch_shard *sh)
{
	int raw = 0;
	for (uint32_t b = 0; b < sh->nblocks && !raw; b++) {
		struct ch_block_stat st;
		ch_shard_block(sh, b, &st);
		raw = st.codec == CH_CODEC_RAW && st.stored_size > 0;
	}
	if (!raw || sh->fd < 0 || sh->file_size > SIZE_MAX)
		return;
	void *p = mmap(NULL, (size_t)sh->file_size, PROT_READ, MAP_SHARED,
		       sh->fd, 0);
	if (p == MAP_FAILED)
		return;
	sh->map = p;
	sh->map_size = (size_t)sh->file_size;
}

/* Reads and checks what ch_shard_open promises; sh has its size. */
static int load_shard(struct ch_shard *sh, struct ch_error *err)
{
	struct footer ft = { 0 };
	uint64_t dict_hash = 0;
	sh->serial = open_serial();
	if (sh->file_size < CHS_HEADER_SIZE + CHS_FOOTER_SIZE)
		return ch_error_data(err, "not a chute shard: only %llu %s "
				     "('%s')", (unsigned long long)sh->file_size,
				     ch_plural(sh->file_size, "byte", "bytes"),
				     sh->path);
	int rc;
	if ((rc = read_header(sh, &dict_hash, err)) < 0 ||
	    (rc = read_dict(sh, dict_hash, err)) < 0 ||
	    (rc = read_footer(sh, &ft, err)) < 0 ||
	    (rc = load_index(sh, &ft, err)) < 0 ||
	    (rc = map_sections(sh, &ft, err)) < 0 ||
	    (rc = check_blocks(sh, &ft, err)) < 0 ||
	    (rc = check_index(sh, err)) < 0)
		return rc;
	/* a lazy shard's samples are checked as they are prepared */
	if (!sh->all_checked &&
	    !(sh->checked = calloc(sh->nsamples / 8 + 1, 1)))
		return ch_error_nomem(err);
	return 0;
}

int ch_shard_open_flags(struct ch_shard **out, const char *path,
			const struct ch_byte_source *src, unsigned flags,
			struct ch_error *err)
{
	struct ch_shard *sh = calloc(1, sizeof(*sh));
	if (!sh || !(sh->path = strdup(path))) {
		free(sh);
		if (src && src->release)
			src->release(src->arg);
		return ch_error_nomem(err);
	}
	int rc = -1;
	sh->flags = flags;
	sh->fd = -1;
	if (src) {
		sh->src = *src;
		sh->file_size = src->size;
	} else {
		struct stat st;
		sh->fd = ch_open_regular(path, err);
		if (sh->fd < 0)
			goto fail;
		if (fstat(sh->fd, &st) < 0) {
			ch_error_errno(err, errno, "cannot stat '%s'", path);
			goto fail;
		}
		sh->file_size = (uint64_t)st.st_size;
	}
	if ((rc = load_shard(sh, err)) < 0)
		goto fail;
	map_raw_blocks(sh);
	*out = sh;
	return 0;
fail:
	ch_shard_close(sh);
	return rc;
}

int ch_shard_open(struct ch_shard **out, const char *path,
		  struct ch_error *err)
{
	return ch_shard_open_flags(out, path, NULL, 0, err);
}

int ch_shard_open_source(struct ch_shard **out, const char *name,
			 const struct ch_byte_source *src,
			 struct ch_error *err)
{
	return ch_shard_open_flags(out, name, src, 0, err);
}

/* Decodes what sample i's entry points to: its fields and its key. */
static int need_sample(const struct ch_shard *sh, uint64_t i,
		       struct ch_error *err)
{
	struct shard_index *ix = (struct shard_index *)&sh->ix;
	uint64_t base = (uint64_t)(sh->samples - ix->raw);
	int rc = shard_index_need(ix, base + i * CHS_SAMPLE_ENTRY_SIZE,
				  CHS_SAMPLE_ENTRY_SIZE, err);
	if (rc < 0)
		return rc;
	const uint8_t *e = sh->samples + i * CHS_SAMPLE_ENTRY_SIZE;
	uint64_t first = ld32(e + 28), nf = ld16(e + 26);
	uint64_t key = ld32(e + 20), key_len = ld16(e + 24);
	if (first + nf <= sh->nfields &&
	    (rc = shard_index_need(ix, (uint64_t)(sh->fields - ix->raw) +
					       first * CHS_FIELD_ENTRY_SIZE,
				   nf * CHS_FIELD_ENTRY_SIZE, err)) < 0)
		return rc;
	if (key + key_len <= sh->keys_size &&
	    (rc = shard_index_need(ix, (uint64_t)(sh->keys - ix->raw) + key,
				   key_len, err)) < 0)
		return rc;
	return 0;
}

/* Sample i's pages are in and its entry checked: once so, it stays so. */
static int is_checked(const struct ch_shard *sh, uint64_t i)
{
	return sh->all_checked ||
	       (atomic_load_explicit(&sh->checked[i / 8],
				     memory_order_acquire) &
		(1u << (i % 8)));
}

int ch_shard_prepare(const struct ch_shard *sh, uint64_t i,
		     struct ch_error *err)
{
	if (i >= sh->nsamples)
		return ch_error_set(err, "no sample %llu in '%s'",
				    (unsigned long long)i, sh->path);
	if (is_checked(sh, i))
		return 0;
	int rc;
	if ((rc = need_sample(sh, i, err)) < 0 ||
	    (rc = check_sample(sh, i, err)) < 0 ||
	    (rc = check_key(sh, i, err)) < 0)
		return rc;
	atomic_fetch_or_explicit(&sh->checked[i / 8],
				 (unsigned char)(1u << (i % 8)),
				 memory_order_release);
	return 0;
}

int ch_shard_load_index(struct ch_shard *sh, struct ch_error *err)
{
	if (sh->all_checked)
		return 0;
	int rc = shard_index_need(&sh->ix, 0, sh->ix.raw_size, err);
	if (rc < 0)
		return rc;
	return check_index(sh, err);
}

uint32_t ch_shard_index_pages(const struct ch_shard *sh)
{
	return sh->ix.npages ? sh->ix.npages : 1;
}

void ch_shard_close(struct ch_shard *sh)
{
	if (!sh)
		return;
	if (sh->fd >= 0)
		close(sh->fd);
	if (sh->map)
		munmap((void *)sh->map, sh->map_size);
	if (sh->src.release)
		sh->src.release(sh->src.arg);
	free(sh->path);
	shard_index_free(&sh->ix);
	free(sh->checked);
	free(sh->names);
	free(sh->name_rank);
	free(sh->dict);
	free(sh);
}

const char *ch_shard_path(const struct ch_shard *sh) { return sh->path; }
int ch_shard_content_id(const struct ch_shard *sh, char id[33],
			struct ch_error *err)
{
	uint8_t ends[CHS_HEADER_SIZE + CHS_FOOTER_SIZE];
	if (shard_read(sh, ends, CHS_HEADER_SIZE, 0, err) < 0 ||
	    shard_read(sh, ends + CHS_HEADER_SIZE, CHS_FOOTER_SIZE,
		       sh->file_size - CHS_FOOTER_SIZE, err) < 0)
		return -1;
	ch_hash128_hex(ch_hash128(ends, sizeof(ends)), id);
	return 0;
}

uint64_t ch_shard_file_size(const struct ch_shard *sh) { return sh->file_size; }
uint64_t ch_shard_sample_count(const struct ch_shard *sh) { return sh->nsamples; }
struct ch_hash128 ch_shard_seal(const struct ch_shard *sh)
{
	return ch_hash128(sh->ends, sizeof(sh->ends));
}
uint32_t ch_shard_name_count(const struct ch_shard *sh) { return sh->nnames; }
const char *ch_shard_name(const struct ch_shard *sh, uint32_t id)
{
	return id < sh->nnames ? sh->names[id] : NULL;
}
uint32_t ch_shard_block_count(const struct ch_shard *sh) { return sh->nblocks; }

size_t ch_shard_memory(const struct ch_shard *sh)
{
	return sizeof(*sh) + sh->index_memory + sh->dict_size +
	       (sh->checked ? sh->nsamples / 8 + 1 : 0) +
	       sh->nnames * (sizeof(*sh->names) + sizeof(*sh->name_rank));
}

void ch_shard_sample(const struct ch_shard *sh, uint64_t i,
		     struct ch_sample_info *out)
{
	const uint8_t *e = sh->samples + i * CHS_SAMPLE_ENTRY_SIZE;
	out->hash = ld64(e);
	out->offset = ld64(e + 8);
	out->block = ld32(e + 16);
	out->key = (const char *)sh->keys + ld32(e + 20);
	out->key_len = ld16(e + 24);
	out->nfields = ld16(e + 26);
	out->size = 0;
	const uint8_t *fe = sh->fields +
			    (uint64_t)ld32(e + 28) * CHS_FIELD_ENTRY_SIZE;
	for (uint32_t f = 0; f < out->nfields; f++)
		out->size += ld64(fe + (size_t)f * CHS_FIELD_ENTRY_SIZE);
}

void ch_shard_prefetch(const struct ch_shard *sh, uint64_t i, int step)
{
	if (i >= sh->nsamples)
		return;
	const uint8_t *e = sh->samples + i * CHS_SAMPLE_ENTRY_SIZE;
	if (step == 0) {
		__builtin_prefetch(e);
		return;
	}
	/* the entry's offsets are trusted only once it is checked */
	if (!is_checked(sh, i))
		return;
	__builtin_prefetch(sh->keys + ld32(e + 20));
	__builtin_prefetch(sh->fields +
			   (uint64_t)ld32(e + 28) * CHS_FIELD_ENTRY_SIZE);
}

void ch_shard_field(const struct ch_shard *sh, uint64_t i, uint32_t f,
		    struct ch_field_info *out)
{
	const uint8_t *e = sh->samples + i * CHS_SAMPLE_ENTRY_SIZE;
	const uint8_t *fe = sh->fields +
			    (uint64_t)ld32(e + 28) * CHS_FIELD_ENTRY_SIZE;
	out->offset = 0;
	for (uint32_t k = 0; k < f; k++)
		out->offset += ld64(fe + (size_t)k * CHS_FIELD_ENTRY_SIZE);
	fe += (size_t)f * CHS_FIELD_ENTRY_SIZE;
	out->size = ld64(fe);
	out->name = sh->names[ld32(fe + 8)];
}

void ch_shard_field_totals(const struct ch_shard *sh, uint64_t *count,
			   uint64_t *bytes)
{
	memset(count, 0, sh->nnames * sizeof(*count));
	memset(bytes, 0, sh->nnames * sizeof(*bytes));
	for (uint64_t i = 0; i < sh->nsamples; i++) {
		const uint8_t *e = sh->samples + i * CHS_SAMPLE_ENTRY_SIZE;
		const uint8_t *fe = sh->fields +
				    (uint64_t)ld32(e + 28) * CHS_FIELD_ENTRY_SIZE;
		for (uint32_t f = 0; f < ld16(e + 26); f++) {
			uint32_t id = ld32(fe + (size_t)f * CHS_FIELD_ENTRY_SIZE
					   + 8);
			count[id]++;
			bytes[id] += ld64(fe + (size_t)f * CHS_FIELD_ENTRY_SIZE);
		}
	}
}

int64_t ch_shard_find(const struct ch_shard *sh, const char *key,
		      size_t key_len)
{
	uint64_t lo = 0, hi = sh->nsamples;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		uint32_t s = ld32(sh->order + 4 * mid);
		struct ch_sample_info si;
		ch_shard_sample(sh, s, &si);
		size_t n = si.key_len < key_len ? si.key_len : key_len;
		int c = memcmp(si.key, key, n);
		if (c == 0 && si.key_len != key_len)
			c = si.key_len < key_len ? -1 : 1;
		if (c == 0)
			return s;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

void ch_shard_block(const struct ch_shard *sh, uint32_t b,
		    struct ch_block_stat *out)
{
	const uint8_t *e = sh->blocks + (size_t)b * CHS_BLOCK_ENTRY_SIZE;
	out->offset = ld64(e);
	out->stored_size = ld64(e + 8);
	out->raw_size = ld64(e + 16);
	out->hash = ld64(e + 24);
	out->codec = ld32(e + 32);
}

/* ------------------------------------------------------------------ */

struct ch_block_reader {
	ZSTD_DCtx *dctx;
	ZSTD_DDict *ddict;
	/* the shard of the dictionary and of the last block decoded, by
	 * address and serial */
	const struct ch_shard *ddict_shard, *cached_shard;
	uint64_t ddict_serial, cached_serial;
	struct ch_buf stored, raw, sample;
	uint32_t cached_block;
	const uint8_t *cached_data;
	size_t cached_size;
	double load_s; /* see ch_block_reader_load_seconds */
};

double ch_block_reader_load_seconds(const struct ch_block_reader *r)
{
	return r->load_s;
}

void ch_block_reader_add_load_seconds(struct ch_block_reader *r, double s)
{
	r->load_s += s;
}

static int same_shard(const struct ch_shard *a, uint64_t serial,
		      const struct ch_shard *b)
{
	return a == b && serial == b->serial;
}

struct ch_block_reader *ch_block_reader_new(void)
{
	struct ch_block_reader *r = calloc(1, sizeof(*r));
	if (r && !(r->dctx = ZSTD_createDCtx())) {
		free(r);
		return NULL;
	}
	return r;
}

void ch_block_reader_free(struct ch_block_reader *r)
{
	if (!r)
		return;
	ZSTD_freeDCtx(r->dctx);
	ZSTD_freeDDict(r->ddict);
	ch_buf_release(&r->stored);
	ch_buf_release(&r->raw);
	ch_buf_release(&r->sample);
	free(r);
}

/* Decodes the stored block in r->stored into dst (raw_size bytes). */
static int decode_block(struct ch_block_reader *r, const struct ch_shard *sh,
			uint32_t b, const struct ch_block_stat *st,
			uint8_t *dst, struct ch_error *err)
{
	size_t n;
	if (st->codec == CH_CODEC_ZSTD_DICT) {
		if (!same_shard(r->ddict_shard, r->ddict_serial, sh)) {
			ZSTD_freeDDict(r->ddict);
			r->ddict = ZSTD_createDDict(sh->dict, sh->dict_size);
			r->ddict_shard = r->ddict ? sh : NULL;
			r->ddict_serial = sh->serial;
			if (!r->ddict)
				return ch_error_data(err, "bad dictionary in "
						     "'%s'", sh->path);
		}
		n = ZSTD_decompress_usingDDict(r->dctx, dst, st->raw_size,
					       r->stored.data, st->stored_size,
					       r->ddict);
	} else {
		n = ZSTD_decompressDCtx(r->dctx, dst, st->raw_size,
					r->stored.data, st->stored_size);
	}
	if (ZSTD_isError(n) || n != st->raw_size)
		return ch_error_data(err, "cannot decode block %u ('%s', byte "
				     "%llu): %s", b, sh->path,
				     (unsigned long long)st->offset,
				     ZSTD_isError(n) ? ZSTD_getErrorName(n)
				     : "wrong size");
	return 0;
}

/* Reads a block; from a byte source, a copy that fails its checksum is
 * read once more (the caller checks the result). */
static int read_checked(const struct ch_shard *sh, uint8_t *buf, size_t n,
			uint64_t off, uint64_t hash, struct ch_error *err)
{
	int rc = shard_read(sh, buf, n, off, err);
	if (rc < 0)
		return rc;
	if (!sh->src.read_at || ch_hash64(buf, n) == hash)
		return 0;
	return shard_read(sh, buf, n, off, err);
}

/* Block b's stored bytes, checked, in r->stored. */
static int read_stored(struct ch_block_reader *r, const struct ch_shard *sh,
		       uint32_t b, struct ch_block_stat *st,
		       struct ch_error *err)
{
	if (b >= sh->nblocks)
		return ch_error_set(err, "no block %u in '%s'", b, sh->path);
	ch_shard_block(sh, b, st);
	int rc;
	if ((rc = ch_buf_reserve(&r->stored,
				 st->stored_size ? st->stored_size : 1,
				 err)) < 0 ||
	    (rc = read_checked(sh, r->stored.data, st->stored_size,
			       st->offset, st->hash, err)) < 0)
		return rc;
	if (ch_hash64(r->stored.data, st->stored_size) != st->hash)
		return ch_error_data(err, "checksum mismatch in block %u ('%s', "
				     "byte %llu)%s", b, sh->path,
				     (unsigned long long)st->offset,
				     sh->src.read_at ? ", read twice" : "");
	return 0;
}

int ch_block_reader_reserve(struct ch_block_reader *r,
			    const struct ch_shard *sh, uint32_t b,
			    struct ch_error *err)
{
	struct ch_block_stat st;
	if (b >= sh->nblocks)
		return ch_error_set(err, "no block %u in '%s'", b, sh->path);
	ch_shard_block(sh, b, &st);
	struct ch_error oom;
	if (ch_buf_reserve(&r->stored, st.stored_size ? st.stored_size : 1,
			   &oom) < 0 ||
	    (st.codec != CH_CODEC_RAW &&
	     ch_buf_reserve(&r->raw, st.raw_size ? st.raw_size : 1, &oom) < 0))
		return ch_error_set(err, "out of memory for block %u of '%s' "
				    "(%llu bytes decoded)", b, sh->path,
				    (unsigned long long)st.raw_size);
	return 0;
}

int ch_block_read(struct ch_block_reader *r, const struct ch_shard *sh,
		  uint32_t b, const uint8_t **data, size_t *size,
		  struct ch_error *err)
{
	if (same_shard(r->cached_shard, r->cached_serial, sh) &&
	    r->cached_block == b) {
		*data = r->cached_data;
		*size = r->cached_size;
		return 0;
	}
	r->cached_shard = NULL;
	struct ch_block_stat st;
	if (ch_block_reader_reserve(r, sh, b, err) < 0)
		return -1;
	int rc = read_stored(r, sh, b, &st, err);
	if (rc < 0)
		return rc;
	if (st.codec == CH_CODEC_RAW) {
		r->cached_data = r->stored.data;
	} else {
		if ((rc = ch_buf_reserve(&r->raw, st.raw_size ? st.raw_size : 1,
					 err)) < 0 ||
		    (rc = decode_block(r, sh, b, &st, r->raw.data, err)) < 0)
			return rc;
		r->cached_data = r->raw.data;
	}
	r->cached_size = st.raw_size;
	r->cached_shard = sh;
	r->cached_serial = sh->serial;
	r->cached_block = b;
	*data = r->cached_data;
	*size = r->cached_size;
	return 0;
}

int ch_block_read_into(struct ch_block_reader *r, const struct ch_shard *sh,
		       uint32_t b, uint8_t *dst, struct ch_error *err)
{
	struct ch_block_stat st;
	int rc = read_stored(r, sh, b, &st, err);
	if (rc < 0)
		return rc;
	if (st.codec == CH_CODEC_RAW)
		memcpy(dst, r->stored.data, st.raw_size);
	else if ((rc = decode_block(r, sh, b, &st, dst, err)) < 0)
		return rc;
	return 0;
}

int ch_shard_block_mapped(const struct ch_shard *sh, uint32_t b)
{
	return sh->map && b < sh->nblocks &&
	       ld32(sh->blocks + (size_t)b * CHS_BLOCK_ENTRY_SIZE + 32) ==
		       CH_CODEC_RAW;
}

int ch_block_map(const struct ch_shard *sh, uint32_t b, const uint8_t **data,
		 struct ch_error *err)
{
	struct ch_block_stat st;
	if (!ch_shard_block_mapped(sh, b))
		return ch_error_set(err, "block %u of '%s' is not mapped", b,
				    sh->path);
	ch_shard_block(sh, b, &st);
	const uint8_t *p = sh->map + st.offset;
#ifdef MADV_POPULATE_READ
	/* one call maps the block's pages instead of a fault per few */
	uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095;
	madvise((void *)lo, (uintptr_t)p + st.stored_size - lo,
		MADV_POPULATE_READ);
#endif
	if (ch_hash64(p, st.stored_size) != st.hash)
		return ch_error_data(err, "checksum mismatch in block %u ('%s', "
				     "byte %llu)", b, sh->path,
				     (unsigned long long)st.offset);
	*data = p;
	return 0;
}

int ch_sample_read(struct ch_block_reader *r, const struct ch_shard *sh,
		   uint64_t i, const uint8_t **data, struct ch_error *err)
{
	int rc = ch_shard_prepare(sh, i, err);
	if (rc < 0)
		return rc;
	struct ch_sample_info si;
	const uint8_t *block;
	size_t size;
	ch_shard_sample(sh, i, &si);
	if ((rc = ch_block_read(r, sh, si.block, &block, &size, err)) < 0)
		return rc;
	*data = block + si.offset;
	return 0;
}

uint64_t ch_sample_hash(const struct ch_shard *sh, uint64_t i,
			const uint8_t *data)
{
	struct ch_sample_info si;
	ch_shard_sample(sh, i, &si);
	const uint8_t *fe = sh->fields +
		(uint64_t)ld32(sh->samples + i * CHS_SAMPLE_ENTRY_SIZE + 28) *
		CHS_FIELD_ENTRY_SIZE;
	struct ch_content_hash ch;
	ch_content_hash_init(&ch);
	for (uint32_t f = 0; f < si.nfields; f++, fe += CHS_FIELD_ENTRY_SIZE) {
		uint64_t size = ld64(fe);
		ch_content_hash_field(&ch, sh->names[ld32(fe + 8)], data, size);
		data += size;
	}
	return ch_content_hash_final(&ch);
}

int ch_sample_fetch(struct ch_block_reader *r, const struct ch_shard *sh,
		    uint64_t i, const uint8_t **data, struct ch_error *err)
{
	struct ch_sample_info si;
	struct ch_block_stat st;
	int rc = ch_shard_prepare(sh, i, err);
	if (rc < 0)
		return rc;
	ch_shard_sample(sh, i, &si);
	ch_shard_block(sh, si.block, &st);
	if (st.codec != CH_CODEC_RAW ||
	    (same_shard(r->cached_shard, r->cached_serial, sh) &&
	     r->cached_block == si.block))
		return ch_sample_read(r, sh, i, data, err);
	/* a raw block: read just the sample, vouched for by its own hash */
	uint64_t at = st.offset + si.offset;
	if ((rc = ch_buf_reserve(&r->sample, si.size ? si.size : 1, err)) < 0 ||
	    (rc = shard_read(sh, r->sample.data, si.size, at, err)) < 0)
		return rc;
	if (sh->src.read_at && ch_sample_hash(sh, i, r->sample.data) != si.hash &&
	    (rc = shard_read(sh, r->sample.data, si.size, at, err)) < 0)
		return rc; /* a network copy gets a second chance */
	if (ch_sample_hash(sh, i, r->sample.data) != si.hash)
		return ch_error_data(err, "content hash mismatch in sample "
				     "'%.*s' of block %u ('%s', byte %llu)",
				     (int)(si.key_len > 200 ? 200 : si.key_len),
				     si.key, si.block, sh->path,
				     (unsigned long long)at);
	*data = r->sample.data;
	return 0;
}
