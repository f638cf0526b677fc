/* stream/read.c - one batch's samples, read by a worker thread.  The
 * samples are read grouped by shard, one shard pinned at a time, and
 * everything the encoder needs (keys and bytes) is copied out of it, so
 * a worker never holds more than one shard's index, whatever the shuffle
 * spreads a batch over.  Field names are interned once for the stream:
 * they outlive the shards they came from. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "stream/mix.h"
#include "common/xxh.h"

#define SKIP_MAX 64
#define NAME_CACHE 16

/* ------------------------------------------------------------------ */
/* Field names, interned                                                 */

struct ch_name_table {
	pthread_mutex_t lock;
	char **names;
	size_t n;
};

struct ch_name_table *ch_name_table_new(void)
{
	struct ch_name_table *t = calloc(1, sizeof(*t));
	if (t)
		pthread_mutex_init(&t->lock, NULL);
	return t;
}

void ch_name_table_free(struct ch_name_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->names[i]);
	free(t->names);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static const char *intern(struct ch_name_table *t, const char *name)
{
	const char *found = NULL;
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n && !found; i++)
		if (!strcmp(t->names[i], name))
			found = t->names[i];
	if (!found) {
		char **v = realloc(t->names, (t->n + 1) * sizeof(*v));
		char *copy = strdup(name);
		if (v)
			t->names = v;
		if (v && copy)
			found = t->names[t->n++] = copy;
		else
			free(copy);
	}
	pthread_mutex_unlock(&t->lock);
	return found;
}

int ch_stream_shared_fields(struct ch_stream_shared *sh,
			    const struct ch_manifest_field *f, size_t n,
			    int filter, struct ch_error *err)
{
	if (sh->source_field &&
	    !(sh->source_name = intern(sh->names, "source")))
		return ch_error_nomem(err);
	if (!filter)
		return 0;
	if (!(sh->keep = calloc(n ? n : 1, sizeof(*sh->keep))))
		return ch_error_nomem(err);
	for (size_t i = 0; i < n; i++)
		if (!(sh->keep[sh->nkeep++] = intern(sh->names, f[i].name)))
			return ch_error_nomem(err);
	return 0;
}

/* ------------------------------------------------------------------ */
/* A worker's reader                                                    */

struct ch_batch_reader {
	const struct ch_stream_shared *sh;
	int index; /* the worker's number: where it starts in a batch */
	struct ch_block_reader *blocks;
	/* names of the shard pinned now, mapped to interned ones */
	const char *seen[NAME_CACHE], *interned[NAME_CACHE];
	int nseen;
	struct ch_transformer tr; /* with --transform */
	const char **tx_field;	  /* each pipeline's field, interned */
	uint32_t *warm; /* the blocks a group needs (warm_group) */
	size_t warm_cap;
};

/* The transforms' field names as the samples' names are held: a pointer
 * compared, not a string, for each field of each sample. */
static int intern_tx_fields(struct ch_batch_reader *r, struct ch_error *err)
{
	const struct ch_transforms *tx = r->sh->tx;
	r->tx_field = calloc(tx->n ? tx->n : 1, sizeof(*r->tx_field));
	if (!r->tx_field)
		return ch_error_nomem(err);
	for (size_t t = 0; t < tx->n; t++)
		if (!(r->tx_field[t] = intern(r->sh->names, tx->p[t].field)))
			return ch_error_nomem(err);
	return 0;
}

int ch_batch_reader_new(struct ch_batch_reader **out,
			const struct ch_stream_shared *sh, int index,
			struct ch_error *err)
{
	struct ch_batch_reader *r = calloc(1, sizeof(*r));
	if (!r || !(r->blocks = ch_block_reader_new())) {
		free(r);
		return ch_error_nomem(err);
	}
	r->sh = sh;
	r->index = index;
	if (sh->tx && (ch_transformer_init(&r->tr, err) < 0 ||
		       intern_tx_fields(r, err) < 0)) {
		ch_batch_reader_free(r);
		return -1;
	}
	*out = r;
	return 0;
}

void ch_batch_reader_times(const struct ch_batch_reader *r, double t[3])
{
	t[0] = r->tr.decode_s;
	t[1] = r->tr.resample_s;
	t[2] = r->tr.convert_s;
}

double ch_batch_reader_load_seconds(const struct ch_batch_reader *r)
{
	return ch_block_reader_load_seconds(r->blocks);
}

void ch_batch_reader_free(struct ch_batch_reader *r)
{
	if (!r)
		return;
	ch_block_reader_free(r->blocks);
	free(r->warm);
	free(r->tx_field);
	if (r->sh && r->sh->tx)
		ch_transformer_release(&r->tr);
	free(r);
}

static const char *name_of(struct ch_batch_reader *r, const char *name)
{
	for (int i = 0; i < r->nseen; i++)
		if (r->seen[i] == name)
			return r->interned[i];
	const char *v = intern(r->sh->names, name);
	if (v && r->nseen < NAME_CACHE) {
		r->seen[r->nseen] = name;
		r->interned[r->nseen++] = v;
	}
	return v;
}

/* ------------------------------------------------------------------ */
/* Batch buffers                                                        */

enum { TODO, DONE, FAILED, DROPPED };

struct ch_read_slot {
	size_t shard;
	uint64_t local;
	uint32_t block;	     /* deferred: where its bytes are */
	uint64_t offset;
	int deferred;
	int late;	     /* some of its values are made by ch_batch_fill */
	uint64_t id;	     /* late: the sample, its transforms' key */
	uint64_t key_at;     /* offset of the key in raw */
	size_t key_len;
	size_t first;	     /* its first field in names/sizes/data */
	uint32_t nfields;
	uint32_t attempts;   /* replacements drawn for this slot */
	size_t source;	     /* a mix's: the source it comes from */
	int state;
	int transformed;     /* its fields have been through --transform */
};

void ch_batch_data_release(struct ch_batch_data *b)
{
	ch_buf_release(&b->raw);
	ch_buf_release(&b->xraw);
	free(b->types);
	free(b->in_xraw);
	free(b->late);
	free(b->samples);
	free(b->names);
	free(b->sizes);
	free(b->data);
	free(b->src);
	free(b->dest);
	free(b->slots);
	free(b->order);
	free(b->order2);
	free(b->keys);
	free(b->keys2);
	memset(b, 0, sizeof(*b));
}

/* Resizes array p to n elements; on failure leaves it and clears ok. */
#define RESIZE(p, n, ok)                                                  \
	do {                                                              \
		void *v_ = realloc((p), (n) * sizeof(*(p)));              \
		if (v_)                                                   \
			(p) = v_;                                         \
		else                                                      \
			(ok) = 0;                                         \
	} while (0)

static int grow_batch(struct ch_batch_data *b, uint64_t n, struct ch_error *err)
{
	int ok = 1;
	if (n <= b->cap)
		return 0;
	RESIZE(b->samples, n, ok);
	RESIZE(b->slots, n, ok);
	RESIZE(b->order, n, ok);
	RESIZE(b->order2, n, ok);
	RESIZE(b->keys, n, ok);
	RESIZE(b->keys2, n, ok);
	if (!ok)
		return ch_error_nomem(err);
	b->cap = n;
	return 0;
}

static int grow_fields(struct ch_batch_data *b, size_t need,
		       struct ch_error *err)
{
	int ok = 1;
	if (need <= b->fields_cap)
		return 0;
	size_t cap = b->fields_cap ? b->fields_cap : 64;
	while (cap < need)
		cap *= 2;
	RESIZE(b->names, cap, ok);
	RESIZE(b->sizes, cap, ok);
	RESIZE(b->data, cap, ok);
	RESIZE(b->src, cap, ok);
	RESIZE(b->dest, cap, ok);
	RESIZE(b->types, cap, ok);
	RESIZE(b->in_xraw, cap, ok);
	RESIZE(b->late, cap, ok);
	if (!ok)
		return ch_error_nomem(err);
	b->fields_cap = cap;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Reading                                                              */

/* A decoded block kept pinned from one sample to the next of the same
 * block (samples are read in block order), so the shared cache's lock is
 * taken once a run, not twice a sample. */
struct held_block {
	uint32_t block;
	const uint8_t *data;
	void *pin;
};

/* The blocks a group's read holds: the one being copied from, and the
 * one AHEAD samples further on, pinned early so that its bytes can be
 * asked for before they are copied (see look_ahead). */
struct held_pair {
	struct held_block now, next;
};

static void drop_block(struct ch_batch_reader *r, struct held_block *h)
{
	if (h->pin)
		ch_block_cache_unpin(r->sh->cache, h->pin);
	h->pin = NULL;
	h->data = NULL;
}

static void drop_pair(struct ch_batch_reader *r, struct held_pair *h)
{
	drop_block(r, &h->now);
	drop_block(r, &h->next);
}

static int holds(const struct held_block *h, uint32_t block)
{
	return h->data && h->block == block;
}

/* Pins block (decoding it unless the shared cache has it) in h. */
static int hold_block(struct ch_batch_reader *r, const struct ch_shard *sh,
		      uint32_t block, struct held_block *h,
		      struct ch_error *err)
{
	if (holds(h, block))
		return 0;
	drop_block(r, h);
	int rc = ch_block_cache_get(r->sh->cache, r->blocks, sh, block,
				    &h->data, &h->pin, err);
	if (rc < 0)
		return rc;
	h->block = block;
	return 0;
}

/* A sample this large in a raw block is read alone, even where the block
 * is mapped.  Through the map, each of the block's pages costs a first
 * touch when the block's hash is checked: on this project's VMs, whose
 * page tables the host shadows, about 0.5 ms a MB against 0.2 ms a MB
 * for a read's copy, which the sample's own hash then checks in cache,
 * plus a system call, about 2 us.  Measured with `chute stream` to
 * /dev/null, 64 MB of raw samples, CPU time, median of 9: 2 KB samples
 * 87 ms mapped against 152 ms read alone, in order; 16 KB 61 against 54,
 * shuffled 72 against 60; 64 KB 55 against 51, shuffled 58 against 52.
 * A shuffled stream's first batch also no longer waits for the hash of
 * every block it touches. */
#define READ_ALONE_MIN (16 * 1024)

/* Whether sample si's bytes come through the shared cache, held with its
 * block: a compressed block's (decoded once for all the samples it
 * holds) and a mapped raw block's small ones (the block's hash checked
 * once); a raw block's other samples are read alone, each checked by
 * its own hash. */
static int through_cache(const struct ch_batch_reader *r,
			 const struct ch_shard *sh,
			 const struct ch_sample_info *si)
{
	struct ch_block_stat st;
	if (!r->sh->cache)
		return 0;
	ch_shard_block(sh, si->block, &st);
	return st.codec != CH_CODEC_RAW ||
	       (si->size < READ_ALONE_MIN &&
		ch_shard_block_mapped(sh, si->block));
}

/* The bytes of a block that comes through the cache are held in h; those
 * of other raw blocks are read alone.  *cached: the bytes are in a block
 * of the cache, which h holds. */
static int fetch(struct ch_batch_reader *r, const struct ch_shard *sh,
		 uint64_t local, const struct ch_sample_info *si,
		 struct held_pair *h, const uint8_t **data, int *cached,
		 struct ch_error *err)
{
	*cached = 1;
	if (holds(&h->next, si->block)) {
		drop_block(r, &h->now);
		h->now = h->next;
		h->next = (struct held_block){ 0 };
	} else if (!holds(&h->now, si->block)) {
		if (!through_cache(r, sh, si)) {
			*cached = 0;
			__atomic_add_fetch(r->sh->alone, 1, __ATOMIC_RELAXED);
			return ch_sample_fetch(r->blocks, sh, local, data, err);
		}
		int rc = hold_block(r, sh, si->block, &h->now, err);
		if (rc < 0 && err->kind == CH_ERR_DATA &&
		    ch_shard_block_mapped(sh, si->block)) {
			/* a raw block that fails its hash: each of its samples
			 * is judged by its own, as when it is not mapped */
			*cached = 0;
			return ch_sample_fetch(r->blocks, sh, local, data, err);
		}
		if (rc < 0)
			return rc;
	}
	*data = h->now.data + si->offset;
	return 0;
}

/* How many samples ahead of the one being copied the next ones' bytes
 * are asked for (their keys and field entries twice as far, their index
 * entries three times): a global shuffle's samples are scattered over
 * blocks far larger than the CPU's caches, and a sample waited for miss
 * by miss cost more than all the rest of its reading. */
#define AHEAD 4

/* Asks for the key and bytes of a sample about to be read, pinning its
 * block when it is not held yet.  A hint: when anything is amiss (an
 * entry that does not check, a sample read alone) it does nothing, and
 * the sample's read reports what is wrong.  1 when *si holds the sample's
 * entry, checked, which its read then takes instead of reading it again. */
static int look_ahead(struct ch_batch_reader *r, const struct ch_shard *sh,
		      uint64_t local, struct held_pair *h,
		      struct ch_sample_info *si)
{
	struct ch_error ignored;
	if (ch_shard_prepare(sh, local, &ignored) < 0)
		return 0;
	ch_shard_sample(sh, local, si);
	__builtin_prefetch(si->key);
	const struct held_block *in = holds(&h->now, si->block) ? &h->now
				      : &h->next;
	if (!holds(in, si->block)) {
		if (!through_cache(r, sh, si) ||
		    hold_block(r, sh, si->block, &h->next, &ignored) < 0)
			return 1;
	}
	for (uint64_t at = 0; at < si->size && at < 4096; at += 64)
		__builtin_prefetch(in->data + si->offset + at);
	return 1;
}

static int kept(const struct ch_stream_shared *sh, const char *name)
{
	for (size_t k = 0; k < sh->nkeep; k++)
		if (sh->keep[k] == name)
			return 1;
	return 0;
}

static void move_field(struct ch_batch_data *b, size_t to, size_t from)
{
	b->names[to] = b->names[from];
	b->sizes[to] = b->sizes[from];
	b->src[to] = b->src[from];
	b->data[to] = b->data[from];
	b->types[to] = b->types[from];
	b->in_xraw[to] = b->in_xraw[from];
	b->late[to] = b->late[from];
}

/* The last sample read, its fields narrowed to --fields, and its mix
 * source's number or name added as field "source", in name order. */
static int shape_fields(const struct ch_stream_shared *sh,
			struct ch_batch_data *b, struct ch_read_slot *sl,
			struct ch_error *err)
{
	size_t out = sl->first;
	for (size_t x = sl->first; sh->keep && x < b->nfields; x++)
		if (kept(sh, b->names[x]))
			move_field(b, out++, x);
	if (sh->keep)
		b->nfields = out;
	sl->nfields = (uint32_t)(b->nfields - sl->first);
	if (!sh->source_field)
		return 0;
	const char *v = sh->source_field == CH_SOURCE_FIELD_NAME
				? sh->mix->src[sl->source].name
				: sh->mix->numbers[sl->source];
	uint64_t at = b->raw.len;
	if (grow_fields(b, b->nfields + 1, err) < 0 ||
	    ch_buf_append(&b->raw, v, strlen(v), err) < 0)
		return -1;
	size_t p = b->nfields;
	while (p > sl->first && strcmp(b->names[p - 1], "source") > 0) {
		move_field(b, p, p - 1);
		p--;
	}
	b->names[p] = sh->source_name;
	b->sizes[p] = strlen(v);
	b->src[p] = 0;
	b->data[p] = (const uint8_t *)(uintptr_t)at;
	b->types[p] = (struct ch_field_type){ 0 };
	b->in_xraw[p] = 0;
	b->late[p] = 0;
	b->nfields++;
	sl->nfields++;
	return 0;
}

/* Copies one sample's key and bytes into b; 1 if it is corrupt and
 * corrupt samples are skipped.  known: its entry, checked, when
 * look_ahead read it; else NULL. */
static int read_one(struct ch_batch_reader *r, struct ch_batch_data *b,
		    const struct ch_shard *sh, struct ch_read_slot *sl,
		    const struct ch_sample_info *known, struct held_pair *h,
		    struct ch_error *err)
{
	struct ch_sample_info si;
	const uint8_t *data;
	int cached, got;
	if (known) {
		si = *known;
	} else if ((got = ch_shard_prepare(sh, sl->local, err)) < 0) {
		if (r->sh->skip_corrupt)
			return 1;
		return -1;
	} else {
		ch_shard_sample(sh, sl->local, &si);
	}
	if ((got = fetch(r, sh, sl->local, &si, h, &data, &cached, err)) < 0) {
		if (r->sh->skip_corrupt)
			return 1;
		size_t n = strlen(err->msg);
		if (!strstr(err->msg, "in sample '")) /* not named yet */
			snprintf(err->msg + n, sizeof(err->msg) - n,
				 " (sample '%.*s')",
				 (int)(si.key_len > 200 ? 200 : si.key_len),
				 si.key);
		return -1;
	}
	int rc = grow_fields(b, b->nfields + si.nfields, err);
	sl->key_at = b->raw.len;
	sl->key_len = si.key_len;
	sl->first = b->nfields;
	sl->nfields = si.nfields;
	sl->deferred = r->sh->defer && cached;
	sl->block = si.block;
	sl->offset = si.offset;
	b->deferred |= sl->deferred;
	if (rc == 0)
		rc = ch_buf_append(&b->raw, si.key, si.key_len, err);
	uint64_t at = b->raw.len;
	if (rc == 0 && !sl->deferred)
		rc = ch_buf_append(&b->raw, data, si.size, err);
	for (uint32_t f = 0; rc == 0 && f < si.nfields; f++) {
		struct ch_field_info fi;
		ch_shard_field(sh, sl->local, f, &fi);
		size_t k = b->nfields++;
		if (!(b->names[k] = name_of(r, fi.name)))
			rc = ch_error_nomem(err);
		b->sizes[k] = fi.size;
		b->src[k] = fi.offset;
		b->types[k] = (struct ch_field_type){ 0 };
		b->in_xraw[k] = 0;
		b->late[k] = 0;
		/* an offset for now: raw may move as it grows */
		b->data[k] = (const uint8_t *)(uintptr_t)(at + fi.offset);
	}
	if (rc == 0 && (r->sh->keep || r->sh->source_field))
		rc = shape_fields(r->sh, b, sl, err);
	return rc;
}

/* The cached block of slot order[i] of a group, or UINT32_MAX when it
 * has none (a sample read alone, or an index region not readable: the
 * read that follows reports that). */
static uint32_t slot_block(const struct ch_batch_reader *r,
			   struct ch_batch_data *b, const struct ch_shard *sh,
			   size_t i)
{
	struct ch_error ignored;
	struct ch_sample_info si;
	uint64_t local = b->slots[b->order[i]].local;
	if (ch_shard_prepare(sh, local, &ignored) < 0)
		return UINT32_MAX;
	ch_shard_sample(sh, local, &si);
	return through_cache(r, sh, &si) ? si.block : UINT32_MAX;
}

/* Decodes the blocks a group needs before reading its samples, this
 * worker starting at its share of them (index / nworkers of the way in)
 * and passing over those another worker is decoding.  The first batches
 * of a global shuffle need nearly every block of a shard; read in block
 * order, the workers would queue on each block in turn.  Up to half the
 * cache, so that what it decodes stays for the reads.  Errors are left to
 * the reads, which know what to do with them. */
static void warm_group(struct ch_batch_reader *r, struct ch_batch_data *b,
		       const struct ch_shard *sh, size_t from, size_t to)
{
	struct ch_block_cache *c = r->sh->cache;
	if (!c || r->sh->nworkers < 2 || r->index == CH_READS_ALONE)
		return;
	if (r->warm_cap < to - from) {
		uint32_t *w = realloc(r->warm, (to - from) * sizeof(*w));
		if (!w)
			return; /* only slower */
		r->warm = w;
		r->warm_cap = to - from;
	}
	size_t n = 0;
	for (size_t i = from; i < to; i++) {
		uint32_t blk = slot_block(r, b, sh, i);
		if (blk != UINT32_MAX && (n == 0 || r->warm[n - 1] != blk))
			r->warm[n++] = blk;
	}
	size_t start = n * (size_t)r->index / (size_t)r->sh->nworkers;
	size_t budget = ch_block_cache_capacity(c) / 2;
	for (size_t k = 0; k < n; k++) {
		struct ch_error ignored;
		if (ch_block_cache_warm(c, r->blocks, sh, r->warm[(start + k) % n],
					budget, &ignored) == 1)
			return;
	}
}

/* Reads the TODO slots of one shard (order[from, to)); returns 0 when
 * done, 1 when another worker is opening the shard and wait is 0. */
static int read_group(struct ch_batch_reader *r, struct ch_batch_data *b,
		      size_t from, size_t to, int wait, struct ch_error *err)
{
	size_t k = b->slots[b->order[from]].shard;
	struct ch_shard *sh;
	int rc = ch_shard_table_pin(r->sh->shards, k, wait, &sh, err);
	if (rc <= 0)
		return rc < 0 ? -1 : 1;
	warm_group(r, b, sh, from, to);
	struct held_pair held = { 0 };
	/* the entries look_ahead read, AHEAD + 1 apart in a ring */
	struct ch_sample_info ahead[AHEAD + 1];
	int known[AHEAD + 1] = { 0 };
	r->nseen = 0; /* name pointers are the pinned shard's */
	for (size_t i = from; i < to && rc >= 0; i++) {
		struct ch_read_slot *sl = &b->slots[b->order[i]];
		for (int step = 0; step < 2; step++) {
			size_t j = i + (size_t)(3 - step) * AHEAD;
			if (j < to)
				ch_shard_prefetch(sh, b->slots[b->order[j]].local,
						  step);
		}
		size_t at = (i - from) % (AHEAD + 1);
		const struct ch_sample_info *si = known[at] ? &ahead[at] : NULL;
		if (i + AHEAD < to) {
			size_t next = (i - from + AHEAD) % (AHEAD + 1);
			known[next] = look_ahead(
				r, sh, b->slots[b->order[i + AHEAD]].local,
				&held, &ahead[next]);
		}
		rc = read_one(r, b, sh, sl, si, &held, err);
		known[at] = 0;
		if (rc == 1) {
			sl->state = FAILED;
			sl->attempts++;
			b->skipped++;
			rc = 0;
		} else if (rc == 0) {
			sl->state = DONE;
		}
	}
	drop_pair(r, &held);
	ch_shard_table_unpin(r->sh->shards, k);
	return rc < 0 ? -1 : 0;
}

/* Sorts order[0, n) by (shard, sample): a radix sort of the 64-bit key
 * shard << 32 | sample, a byte at a time, skipping the bytes that are the
 * same in every key (all but one or two in a batch): a few passes over a
 * few hundred slots, no comparisons, no allocation. */
static void sort_by_place(struct ch_batch_data *b, size_t n)
{
	uint64_t *key = b->keys, *key2 = b->keys2;
	uint32_t *ord = b->order, *ord2 = b->order2;
	uint64_t differ = 0; /* the bits that are not the same in every key */
	for (size_t i = 0; i < n; i++) {
		const struct ch_read_slot *sl = &b->slots[ord[i]];
		key[i] = (uint64_t)sl->shard << 32 | sl->local;
		differ |= key[i] ^ key[0];
	}
	for (unsigned shift = 0; n > 1 && shift < 64; shift += 8) {
		if (!((differ >> shift) & 255))
			continue; /* the same byte everywhere */
		size_t count[257] = { 0 };
		for (size_t i = 0; i < n; i++)
			count[((key[i] >> shift) & 255) + 1]++;
		for (int d = 0; d < 256; d++)
			count[d + 1] += count[d];
		for (size_t i = 0; i < n; i++) {
			size_t at = count[(key[i] >> shift) & 255]++;
			key2[at] = key[i];
			ord2[at] = ord[i];
		}
		uint64_t *tk = key; key = key2; key2 = tk;
		uint32_t *to = ord; ord = ord2; ord2 = to;
	}
	if (ord != b->order)
		memcpy(b->order, ord, n * sizeof(*ord));
}

/* One pass over the TODO slots, by shard.  Workers start at different
 * shards and pass over one that another worker is opening, so the first
 * batches of a stream open their shards side by side, not in a queue. */
static int read_pass(struct ch_batch_reader *r, struct ch_batch_data *b,
		     uint64_t n, struct ch_error *err)
{
	size_t m = 0, ngroups = 0;
	for (uint32_t i = 0; i < n; i++)
		if (b->slots[i].state == TODO)
			b->order[m++] = i;
	sort_by_place(b, m);
	size_t *starts = malloc((m + 1) * sizeof(*starts));
	if (!starts)
		return ch_error_nomem(err);
	for (size_t i = 0; i < m; i++)
		if (i == 0 || b->slots[b->order[i]].shard !=
				      b->slots[b->order[i - 1]].shard)
			starts[ngroups++] = i;
	starts[ngroups] = m;
	size_t first = r->index == CH_READS_ALONE
			       ? 0
			       : ngroups * (size_t)r->index /
					 (size_t)r->sh->nworkers;
	int rc = 0;
	for (int wait = 0; wait <= 1 && rc >= 0; wait++)
		for (size_t g = 0; g < ngroups && rc >= 0; g++) {
			size_t at = (first + g) % ngroups;
			if (b->slots[b->order[starts[at]]].state == TODO)
				rc = read_group(r, b, starts[at],
						starts[at + 1], wait, err);
		}
	free(starts);
	return rc < 0 ? -1 : 0;
}

/* --on-error skip in training: a corrupt sample's place goes to another
 * sample drawn by a keyed hash of (seed, epoch, batch, slot, attempt):
 * the same replacement whatever the workers. */
static uint64_t replacement(const struct ch_stream_shared *sh,
			    const struct ch_batch_plan *p, uint64_t slot,
			    uint64_t attempt)
{
	uint64_t in[5] = { sh->seed, p->epoch, p->batch, slot, attempt };
	uint64_t h = XXH3_64bits(in, sizeof(in));
	if (sh->mix) { /* one of the same source's samples */
		const struct ch_mix *mix = sh->mix;
		size_t i = ch_mix_source_of(mix, p->ids[slot]);
		uint64_t pos = h % mix->m[i]->samples;
		return mix->offset[i] + (mix->views[i].ids
						 ? mix->views[i].ids[pos] : pos);
	}
	uint64_t pos = h % sh->nsamples;
	return sh->split_ids ? sh->split_ids[pos] : pos;
}

/* Failed slots: dropped in eval (every sample once), else refilled. */
static int refill(const struct ch_stream_shared *sh, struct ch_batch_plan *p,
		  struct ch_batch_data *b, struct ch_error *err)
{
	int again = 0;
	for (uint64_t i = 0; i < p->n; i++) {
		struct ch_read_slot *sl = &b->slots[i];
		if (sl->state != FAILED)
			continue;
		if (b->skipped > SKIP_MAX)
			return ch_error_data(err, "more than %d corrupt "
					     "samples in one batch: giving up",
					     SKIP_MAX);
		if (sh->eval) {
			sl->state = DROPPED;
			continue;
		}
		p->ids[i] = replacement(sh, p, i, sl->attempts);
		if (ch_dataset_locate(sh->ds, p->ids[i], &sl->shard, &sl->local,
				      err) < 0)
			return -1;
		sl->source = sh->mix ? ch_mix_source_of(sh->mix, p->ids[i]) : 0;
		sl->state = TODO;
		sl->transformed = 0;
		again = 1;
	}
	return again;
}

/* ------------------------------------------------------------------ */
/* Transforms                                                           */

static void name_sample(const struct ch_stream_shared *sh,
			const struct ch_batch_data *b,
			const struct ch_read_slot *sl, struct ch_error *err)
{
	size_t n = strlen(err->msg);
	snprintf(err->msg + n, sizeof(err->msg) - n, " (sample '%.*s', %s)",
		 (int)(sl->key_len > 200 ? 200 : sl->key_len),
		 (const char *)b->raw.data + sl->key_at,
		 sh->ds->manifest.shards[sl->shard].path);
}

/* Runs each pipeline over its field of one read sample; the values go to
 * xraw, and the field's entry then points there (an offset, like raw's). */
static int transform_slot(struct ch_batch_reader *r,
			  const struct ch_batch_plan *p,
			  struct ch_batch_data *b, struct ch_read_slot *sl,
			  uint64_t id, struct ch_error *err)
{
	const struct ch_transforms *tx = r->sh->tx;
	struct ch_transform_key k = { r->sh->seed, p->epoch, id };
	for (size_t t = 0; t < tx->n; t++) {
		const struct ch_pipeline *pipe = &tx->p[t];
		size_t x = sl->first, end = sl->first + sl->nfields;
		while (x < end && b->names[x] != r->tx_field[t])
			x++;
		if (x == end)
			return ch_error_set(err, "field '%s': missing, and a "
					    "transform needs it", pipe->field);
		int as_is = ch_transform_as_is(pipe, b->sizes[x], &b->types[x],
					       err);
		if (as_is < 0)
			return -1;
		if (as_is)
			continue; /* the bytes stay in raw: one copy fewer */
		const uint8_t *in = b->raw.data + (uintptr_t)b->data[x];
		size_t bytes = 0;
		int late = r->sh->late ? ch_transform_late(&r->tr, pipe, &k, in,
							   b->sizes[x],
							   &b->types[x], &bytes,
							   err)
				       : 0;
		if (late < 0)
			return -1;
		if (late) { /* the bytes stay in raw, for ch_batch_fill */
			b->src[x] = b->sizes[x];
			b->sizes[x] = bytes;
			b->late[x] = (uint32_t)t + 1;
			sl->late = 1;
			sl->id = id;
			b->nlate++;
			continue;
		}
		size_t at = b->xraw.len;
		if (ch_transform_run(&r->tr, pipe, &k, in, b->sizes[x],
				     &b->xraw, &b->types[x], err) < 0)
			return -1;
		b->data[x] = (const uint8_t *)(uintptr_t)at;
		b->sizes[x] = b->xraw.len - at;
		b->in_xraw[x] = 1;
	}
	return 0;
}

/* Transforms the samples read since the last pass.  A sample that does
 * not transform (a corrupt image) is a failed read: skipped and replaced
 * like one with --on-error skip, else the batch's error. */
static int transform_pass(struct ch_batch_reader *r,
			  const struct ch_batch_plan *p,
			  struct ch_batch_data *b, struct ch_error *err)
{
	int rc = 0;
	ch_transformer_pass_begin(&r->tr);
	for (uint64_t i = 0; i < p->n && rc == 0; i++) {
		struct ch_read_slot *sl = &b->slots[i];
		if (sl->state != DONE || sl->transformed)
			continue;
		sl->transformed = 1;
		if (transform_slot(r, p, b, sl, p->ids[i], err) == 0)
			continue;
		if (!r->sh->skip_corrupt) {
			name_sample(r->sh, b, sl, err);
			err->kind = CH_ERR_DATA; /* a sample the op cannot take */
			rc = -1;
			continue;
		}
		sl->state = FAILED;
		sl->attempts++;
		b->skipped++;
	}
	ch_transformer_pass_end(&r->tr);
	return rc;
}

/* Points the samples at the copied keys and bytes, in batch order. */
static void assemble(struct ch_batch_plan *p, struct ch_batch_data *b,
		     int typed)
{
	for (size_t f = 0; f < b->nfields; f++)
		b->data[f] = (typed && b->in_xraw[f] ? b->xraw.data
						     : b->raw.data) +
			     (uintptr_t)b->data[f];
	uint64_t kept = 0;
	for (uint64_t i = 0; i < p->n; i++) {
		const struct ch_read_slot *sl = &b->slots[i];
		if (sl->state != DONE)
			continue; /* dropped */
		p->ids[kept] = p->ids[i];
		b->samples[kept++] = (struct ch_batch_sample){
			.key = (const char *)b->raw.data + sl->key_at,
			.key_len = sl->key_len,
			.nfields = sl->nfields,
			.names = (const char *const *)(b->names + sl->first),
			.sizes = b->sizes + sl->first,
			.data = sl->deferred ? NULL
					     : (const uint8_t *const *)(b->data +
									sl->first),
			.dest = sl->deferred || sl->late ? b->dest + sl->first
							 : NULL,
			.late = sl->late ? b->late + sl->first : NULL,
			.types = typed ? b->types + sl->first : NULL,
		};
	}
	if (kept < p->n)
		p->flags |= CH_BATCH_PARTIAL;
	p->n = kept;
}

int ch_batch_read(struct ch_batch_reader *r, struct ch_batch_plan *p,
		  struct ch_batch_data *b, struct ch_error *err)
{
	const struct ch_stream_shared *sh = r->sh;
	b->raw.len = 0;
	b->xraw.len = 0;
	b->nfields = 0;
	b->deferred = 0;
	b->nlate = 0;
	b->epoch = p->epoch;
	b->skipped = 0;
	if (grow_batch(b, p->n ? p->n : 1, err) < 0)
		return -1;
	b->nslots = p->n;
	for (uint64_t i = 0; i < p->n; i++) {
		struct ch_read_slot *sl = &b->slots[i];
		memset(sl, 0, sizeof(*sl));
		if (ch_dataset_locate(sh->ds, p->ids[i], &sl->shard, &sl->local,
				      err) < 0)
			return -1;
		sl->source = sh->mix ? ch_mix_source_of(sh->mix, p->ids[i]) : 0;
	}
	int again = 1;
	while (again > 0) {
		if (read_pass(r, b, p->n, err) < 0)
			return -1;
		if (sh->tx && transform_pass(r, p, b, err) < 0)
			return -1;
		if ((again = refill(sh, p, b, err)) < 0)
			return -1;
	}
	assemble(p, b, sh->tx != NULL);
	return 0;
}

/* Makes the late values straight into the frame, from the field bytes
 * they were planned from (b->data[x], b->src[x] of them).  The sample's
 * transforms already read its header: what fails now is its pixels,
 * named as transform_pass names them. */
static int make_late(struct ch_batch_reader *r, struct ch_batch_data *b,
		     uint8_t *frame, struct ch_error *err)
{
	const struct ch_transforms *tx = r->sh->tx;
	int rc = 0;
	ch_transformer_pass_begin(&r->tr);
	for (uint32_t i = 0; i < b->nslots && rc == 0; i++) {
		const struct ch_read_slot *sl = &b->slots[i];
		struct ch_transform_key k = { r->sh->seed, b->epoch, sl->id };
		if (!sl->late || sl->state != DONE)
			continue;
		for (size_t x = sl->first;
		     rc == 0 && x < sl->first + sl->nfields; x++)
			if (b->late[x])
				rc = ch_transform_run_at(
					&r->tr, &tx->p[b->late[x] - 1], &k,
					b->data[x], b->src[x],
					frame + b->dest[x], b->sizes[x], err);
		if (rc < 0) {
			name_sample(r->sh, b, sl, err);
			err->kind = CH_ERR_DATA;
		}
	}
	ch_transformer_pass_end(&r->tr);
	return rc;
}

/* Copies the deferred samples' bytes into the frame, shard by shard in
 * block order, like the reads that checked them.  Their blocks are
 * usually still cached; one that is not is decoded (and checked) again. */
int ch_batch_fill(struct ch_batch_reader *r, struct ch_batch_data *b,
		  uint8_t *frame, struct ch_error *err)
{
	size_t m = 0;
	if (b->nlate && make_late(r, b, frame, err) < 0)
		return -1;
	if (!b->deferred)
		return 0;
	for (uint32_t i = 0; i < b->nslots; i++)
		if (b->slots[i].deferred && b->slots[i].state == DONE)
			b->order[m++] = i;
	sort_by_place(b, m);
	int rc = 0;
	for (size_t i = 0; i < m && rc == 0;) {
		size_t k = b->slots[b->order[i]].shard;
		struct ch_shard *sh;
		struct held_block held = { 0 };
		int pinned = ch_shard_table_pin(r->sh->shards, k, 1, &sh, err);
		if (pinned < 0)
			return pinned;
		for (; i < m && rc == 0 && b->slots[b->order[i]].shard == k; i++) {
			const struct ch_read_slot *sl = &b->slots[b->order[i]];
			rc = hold_block(r, sh, sl->block, &held, err);
			for (uint32_t f = 0; rc == 0 && f < sl->nfields; f++) {
				size_t x = sl->first + f;
				memcpy(frame + b->dest[x],
				       held.data + sl->offset + b->src[x],
				       b->sizes[x]);
			}
		}
		drop_block(r, &held);
		ch_shard_table_unpin(r->sh->shards, k);
	}
	return rc;
}
