/* shard/block_cache.c - decoded blocks shared by the threads of a stream.  A
 * global shuffle reads samples of compressed blocks in random order: with
 * no cache each sample costs a whole block's decoding; with one, each
 * block is decoded once while it stays in the cache.  Bounded by bytes;
 * least recently used blocks go first; a pinned block stays.  A raw block
 * of a mapped shard is not copied: its entry points into the mapping and
 * counts its size against the bound like a decoded one. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "chute/shard.h"
#include "common/internal.h"

#define BUCKETS 8192

struct entry {
	int loading; /* a thread is decoding it: wait, do not decode too */
	const struct ch_shard *sh;
	uint64_t serial; /* the shard's: its address may be reused */
	uint32_t block;
	const uint8_t *data;
	struct ch_slab *slab; /* data's; NULL when data is in a mapping */
	size_t in_file;	      /* bytes of data in a mapping */
	int pins;
	struct entry *hnext;	  /* bucket chain */
	struct entry *newer, *older; /* LRU list */
};

struct ch_block_cache {
	pthread_mutex_t lock;
	pthread_cond_t loaded;
	size_t capacity;
	struct ch_slabs *slabs; /* the blocks' memory; what it maps and
				   in_file are held to capacity */
	size_t in_file;		/* bytes of the entries in mappings */
	struct entry *buckets[BUCKETS];
	struct entry *newest, *oldest;
	uint64_t hits, misses;
};

struct ch_block_cache *ch_block_cache_new(size_t capacity)
{
	struct ch_block_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->capacity = capacity;
	if (!(c->slabs = ch_slabs_new())) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->loaded, NULL);
	return c;
}

void ch_block_cache_free(struct ch_block_cache *c)
{
	if (!c)
		return;
	for (struct entry *e = c->newest, *next; e; e = next) {
		next = e->older;
		ch_slab_release(c->slabs, e->slab);
		free(e);
	}
	ch_slabs_free(c->slabs);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->loaded);
	free(c);
}

static size_t bucket(const struct ch_shard *sh, uint32_t b)
{
	return ((uintptr_t)sh / 64 * 31 + b) % BUCKETS;
}

static void unlink_lru(struct ch_block_cache *c, struct entry *e)
{
	if (e->newer)
		e->newer->older = e->older;
	else
		c->newest = e->older;
	if (e->older)
		e->older->newer = e->newer;
	else
		c->oldest = e->newer;
	e->newer = e->older = NULL;
}

static void push_newest(struct ch_block_cache *c, struct entry *e)
{
	e->older = c->newest;
	e->newer = NULL;
	if (c->newest)
		c->newest->newer = e;
	c->newest = e;
	if (!c->oldest)
		c->oldest = e;
}

static struct entry *find(struct ch_block_cache *c, const struct ch_shard *sh,
			  uint32_t b)
{
	for (struct entry *e = c->buckets[bucket(sh, b)]; e; e = e->hnext)
		if (e->sh == sh && e->block == b &&
		    e->serial == ch_shard_serial(sh))
			return e;
	return NULL;
}

static void drop(struct ch_block_cache *c, struct entry *e)
{
	struct entry **p = &c->buckets[bucket(e->sh, e->block)];
	while (*p != e)
		p = &(*p)->hnext;
	*p = e->hnext;
	unlink_lru(c, e);
	ch_slab_release(c->slabs, e->slab);
	c->in_file -= e->in_file;
	free(e);
}

static size_t held(const struct ch_block_cache *c)
{
	return ch_slabs_mapped(c->slabs) + c->in_file;
}

static void evict(struct ch_block_cache *c)
{
	struct entry *e = c->oldest;
	while (e && held(c) > c->capacity) {
		struct entry *newer = e->newer;
		if (!e->pins)
			drop(c, e);
		e = newer;
	}
}

void ch_block_cache_forget(struct ch_block_cache *c, const struct ch_shard *sh)
{
	pthread_mutex_lock(&c->lock);
	for (struct entry *e = c->oldest, *newer; e; e = newer) {
		newer = e->newer;
		if (e->sh == sh && !e->pins)
			drop(c, e);
	}
	pthread_mutex_unlock(&c->lock);
}

/* Pins the entry of block b, waiting while another thread decodes it;
 * with none, enters a pinned placeholder that the caller fills
 * (*mine = 1).  Called and returns with the lock held. */
static struct entry *claim(struct ch_block_cache *c, struct ch_block_reader *r,
			   const struct ch_shard *sh, uint32_t b, int *mine)
{
	struct entry *e;
	double t0 = 0;
	while ((e = find(c, sh, b)) && e->loading) {
		if (t0 == 0)
			t0 = ch_now();
		pthread_cond_wait(&c->loaded, &c->lock);
	}
	if (t0 != 0) /* another thread's load: a cost paid once too */
		ch_block_reader_add_load_seconds(r, ch_now() - t0);
	*mine = !e;
	if (e) {
		e->pins++;
		unlink_lru(c, e);
		push_newest(c, e);
		c->hits++;
		return e;
	}
	c->misses++;
	if (!(e = calloc(1, sizeof(*e))))
		return NULL;
	e->sh = sh;
	e->serial = ch_shard_serial(sh);
	e->block = b;
	e->loading = 1;
	e->pins = 1;
	size_t k = bucket(sh, b);
	e->hnext = c->buckets[k];
	c->buckets[k] = e;
	push_newest(c, e);
	return e;
}

/* Decodes block b into a slab, or checks it in the shard's mapping
 * (*in_file: its size, then). */
static int load_data(struct ch_block_cache *c, struct ch_block_reader *r,
		     const struct ch_shard *sh, uint32_t b,
		     const uint8_t **data, struct ch_slab **slab,
		     size_t *in_file, struct ch_error *err)
{
	struct ch_block_stat st;
	if (b >= ch_shard_block_count(sh))
		return ch_error_data(err, "no block %u in '%s'", b,
				     ch_shard_path(sh));
	ch_shard_block(sh, b, &st);
	if (ch_shard_block_mapped(sh, b)) {
		*in_file = (size_t)st.raw_size;
		return ch_block_map(sh, b, data, err);
	}
	uint8_t *dst = ch_slab_alloc(c->slabs, st.raw_size, slab);
	if (!dst)
		return ch_error_set(err, "out of memory (%llu bytes)",
				    (unsigned long long)st.raw_size);
	int rc = ch_block_read_into(r, sh, b, dst, err);
	if (rc < 0) {
		ch_slab_release(c->slabs, *slab);
		*slab = NULL;
		return rc;
	}
	*data = dst;
	return 0;
}

/* Fills the placeholder e (outside the lock). */
static int load(struct ch_block_cache *c, struct ch_block_reader *r,
		const struct ch_shard *sh, struct entry *e,
		struct ch_error *err)
{
	struct ch_slab *slab = NULL;
	const uint8_t *data = NULL;
	size_t in_file = 0;
	double t0 = ch_now();
	int rc = load_data(c, r, sh, e->block, &data, &slab, &in_file, err);
	ch_block_reader_add_load_seconds(r, ch_now() - t0);
	pthread_mutex_lock(&c->lock);
	e->loading = 0;
	if (rc == 0) {
		e->data = data;
		e->slab = slab;
		e->in_file = in_file;
		c->in_file += in_file;
	} else {
		drop(c, e); /* waiters find nothing and try themselves */
	}
	pthread_cond_broadcast(&c->loaded);
	if (rc == 0)
		evict(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int ch_block_cache_get(struct ch_block_cache *c, struct ch_block_reader *r,
		       const struct ch_shard *sh, uint32_t b,
		       const uint8_t **data, void **pin, struct ch_error *err)
{
	int mine;
	pthread_mutex_lock(&c->lock);
	struct entry *e = claim(c, r, sh, b, &mine);
	pthread_mutex_unlock(&c->lock);
	if (!e)
		return ch_error_nomem(err);
	int rc;
	if (mine && (rc = load(c, r, sh, e, err)) < 0)
		return rc;
	*data = e->data;
	*pin = e;
	return 0;
}

/* Decodes block b unless it is cached or another thread is decoding it:
 * threads that need the same blocks warm different ones side by side
 * instead of queueing on each in turn.  0 when the block is cached or
 * being decoded, 1 when it is not cached and the budget is spent, -1 on
 * error. */
int ch_block_cache_warm(struct ch_block_cache *c, struct ch_block_reader *r,
			const struct ch_shard *sh, uint32_t b, size_t budget,
			struct ch_error *err)
{
	int mine = 0;
	struct entry *e = NULL;
	pthread_mutex_lock(&c->lock);
	int present = find(c, sh, b) != NULL;
	int full = held(c) >= budget;
	if (!present && !full)
		e = claim(c, r, sh, b, &mine);
	pthread_mutex_unlock(&c->lock);
	if (present || full)
		return present ? 0 : 1;
	if (!e)
		return ch_error_nomem(err);
	int rc = load(c, r, sh, e, err);
	if (rc == 0)
		ch_block_cache_unpin(c, e);
	return rc;
}

size_t ch_block_cache_capacity(const struct ch_block_cache *c)
{
	return c->capacity;
}

void ch_block_cache_unpin(struct ch_block_cache *c, void *pin)
{
	struct entry *e = pin;
	pthread_mutex_lock(&c->lock);
	e->pins--;
	evict(c);
	pthread_mutex_unlock(&c->lock);
}

void ch_block_cache_stats(struct ch_block_cache *c, uint64_t *hits,
			  uint64_t *misses)
{
	pthread_mutex_lock(&c->lock);
	*hits = c->hits;
	*misses = c->misses;
	pthread_mutex_unlock(&c->lock);
}
