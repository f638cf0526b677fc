/* stream/shard_table.c - the shards a stream holds open, within a memory
 * budget.  An open shard is mostly its decoded index (64 bytes a sample or
 * so), so holding every shard of a big dataset open would make memory grow
 * with the dataset.  A batch pins the shards its samples live in; unpinned
 * shards stay open, since reopening one means decoding its index again,
 * until the open shards pass the budget: then the least recently used
 * unpinned ones are closed.  Threads open different shards side by side. */
#include <pthread.h>
#include <stdlib.h>

#include "stream/plan.h"

struct slot {
	struct ch_shard *sh;
	unsigned pins;
	int opening;	  /* a thread is opening it, outside the lock */
	uint64_t stamp;	  /* when it was last pinned */
	size_t bytes;
};

struct ch_shard_table {
	const struct ch_dataset *ds;
	struct ch_block_cache *cache; /* forgets a shard's blocks at close */
	size_t budget, used, peak;
	uint64_t scattered_batch;
	uint64_t clock, opens;
	pthread_mutex_t lock;
	pthread_cond_t opened;
	struct slot *slots;
};

int ch_shard_table_new(struct ch_shard_table **out,
		       const struct ch_dataset *ds, size_t budget,
		       uint64_t scattered_batch, struct ch_block_cache *cache,
		       struct ch_error *err)
{
	size_t n = ds->manifest.nshards;
	struct ch_shard_table *t = calloc(1, sizeof(*t));
	if (!t || !(t->slots = calloc(n ? n : 1, sizeof(*t->slots)))) {
		free(t);
		return ch_error_nomem(err);
	}
	t->ds = ds;
	t->cache = cache;
	t->budget = budget;
	t->scattered_batch = scattered_batch;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->opened, NULL);
	*out = t;
	return 0;
}

static void close_slot(struct ch_shard_table *t, struct slot *sl)
{
	if (t->cache)
		ch_block_cache_forget(t->cache, sl->sh);
	ch_shard_close(sl->sh);
	sl->sh = NULL;
	t->used -= sl->bytes;
	sl->bytes = 0;
}

void ch_shard_table_free(struct ch_shard_table *t)
{
	if (!t)
		return;
	for (size_t k = 0; k < t->ds->manifest.nshards; k++)
		if (t->slots[k].sh)
			close_slot(t, &t->slots[k]);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->opened);
	free(t->slots);
	free(t);
}

/* Closes least recently used unpinned shards until the open ones fit. */
static void shrink(struct ch_shard_table *t)
{
	while (t->used > t->budget) {
		struct slot *lru = NULL;
		for (size_t k = 0; k < t->ds->manifest.nshards; k++) {
			struct slot *sl = &t->slots[k];
			if (sl->sh && !sl->pins && (!lru || sl->stamp < lru->stamp))
				lru = sl;
		}
		if (!lru)
			return; /* all pinned: over budget until some unpin */
		close_slot(t, lru);
	}
}

/* A shuffle's batches read samples all over shard k: when its index has
 * at most 16 pages a sample of shard k in a batch (its share of the
 * dataset), its first 16 batches decode most of it anyway (1 - 1/e of its
 * pages at the least), a page at a time, and check each entry where it
 * lies, a cache miss or more a sample.  One pass in order at open costs
 * less: Fashion-MNIST, 60,000 samples in 587 pages, level 0, a first
 * epoch 7 to 9 ms shorter, of 80.  A bigger index, in pages, would hold
 * up the first batch for pages it does not need yet. */
static int whole_index(const struct ch_shard_table *t, size_t k,
		       const struct ch_shard *sh)
{
	const struct ch_manifest *m = &t->ds->manifest;
	if (!t->scattered_batch || !m->samples)
		return 0;
	double per_batch = (double)t->scattered_batch *
			   (double)m->shards[k].samples / (double)m->samples;
	return ch_shard_index_pages(sh) <= 16 * per_batch;
}

/* Opens slot k for the caller, who holds the lock and gets it back.
 * What a whole index's pass cannot decode or check is left as lazily: a
 * damaged page is reported, or skipped, by the samples that need it. */
static int open_slot(struct ch_shard_table *t, size_t k, struct ch_error *err)
{
	struct slot *sl = &t->slots[k];
	struct ch_shard *sh = NULL;
	sl->opening = 1;
	pthread_mutex_unlock(&t->lock);
	int rc = ch_dataset_open_shard(t->ds, k, CH_SHARD_LAZY, &sh, err);
	if (rc == 0 && whole_index(t, k, sh)) {
		struct ch_error later; /* met again by the sample that needs it */
		(void)ch_shard_load_index(sh, &later);
	}
	pthread_mutex_lock(&t->lock);
	sl->opening = 0;
	pthread_cond_broadcast(&t->opened);
	if (rc < 0)
		return rc;
	sl->sh = sh;
	sl->bytes = ch_shard_memory(sh);
	t->used += sl->bytes;
	t->opens++;
	if (t->used > t->peak)
		t->peak = t->used;
	return 0;
}

int ch_shard_table_pin(struct ch_shard_table *t, size_t k, int wait,
		       struct ch_shard **out, struct ch_error *err)
{
	struct slot *sl = &t->slots[k];
	int rc = 1;
	pthread_mutex_lock(&t->lock);
	while (!sl->sh) {
		if (!sl->opening) {
			int got = open_slot(t, k, err);
			if (got < 0)
				rc = got;
			break;
		}
		if (!wait) {
			rc = 0;
			break;
		}
		pthread_cond_wait(&t->opened, &t->lock);
	}
	if (rc == 1) {
		sl->pins++;
		sl->stamp = ++t->clock;
		*out = sl->sh;
		shrink(t);
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

void ch_shard_table_unpin(struct ch_shard_table *t, size_t k)
{
	pthread_mutex_lock(&t->lock);
	t->slots[k].pins--;
	shrink(t);
	pthread_mutex_unlock(&t->lock);
}

void ch_shard_table_stats(struct ch_shard_table *t, uint64_t *opens,
			  uint64_t *peak_bytes)
{
	pthread_mutex_lock(&t->lock);
	*opens = t->opens;
	*peak_bytes = t->peak;
	pthread_mutex_unlock(&t->lock);
}
