/* stream/order.c - which samples make batch b of rank r: the epoch's
 * sequence (shuffled globally, by windows of shards, or not at all), cut
 * between ranks by position, and the cursor that says where a stream is.
 *
 * A stream position is (epoch, c): c sequence positions of the epoch are
 * consumed, by all ranks together.  From a segment start c, rank r takes
 * positions c + r, c + r + W, ...: which rank gets a sample depends only on
 * the sequence and W, and a resume at c with another W covers the rest of
 * the epoch exactly once. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/plan.h"
#include "common/xxh.h"

enum { PURPOSE_SAMPLES = 1, PURPOSE_SHARDS = 2, PURPOSE_WINDOW = 3 };

void ch_order_release(struct ch_order *ord)
{
	free(ord->shard_order);
	free(ord->group_start);
	memset(ord, 0, sizeof(*ord));
}

/* Window mode: shards in a permuted order, cut into groups of `window`
 * shards; positions run through the groups in turn, shuffled within. */
static int plan_windows(struct ch_order *ord, const struct ch_manifest *m,
			struct ch_error *err)
{
	size_t ns = m->nshards, ng = (ns + ord->window - 1) / ord->window;
	struct ch_perm sp;
	ord->shard_order = calloc(ns ? ns : 1, sizeof(*ord->shard_order));
	ord->group_start = calloc(ng + 1, sizeof(*ord->group_start));
	if (!ord->shard_order || !ord->group_start)
		return ch_error_nomem(err);
	ch_perm_init(&sp, ns, ord->seed, ord->epoch, PURPOSE_SHARDS);
	for (size_t i = 0; i < ns; i++)
		ord->shard_order[i] = (size_t)ch_perm_at(&sp, i);
	ord->ngroups = ng;
	for (size_t g = 0; g < ng; g++) {
		uint64_t size = 0;
		for (size_t k = g * ord->window;
		     k < (g + 1) * ord->window && k < ns; k++)
			size += m->shards[ord->shard_order[k]].samples;
		ord->group_start[g + 1] = ord->group_start[g] + size;
	}
	return 0;
}

int ch_order_init(struct ch_order *ord, const struct ch_manifest *m,
		  const struct ch_stream_opts *o, uint64_t epoch,
		  struct ch_error *err)
{
	memset(ord, 0, sizeof(*ord));
	ord->m = m;
	ord->n = m->samples;
	ord->seed = o->seed;
	ord->epoch = epoch;
	ord->mode = o->eval ? CH_SHUFFLE_NONE : o->shuffle;
	ord->window = o->window ? o->window : 1;
	if (ord->mode == CH_SHUFFLE_GLOBAL)
		ch_perm_init(&ord->perm, ord->n, o->seed, epoch, PURPOSE_SAMPLES);
	if (ord->mode == CH_SHUFFLE_WINDOW)
		return plan_windows(ord, m, err);
	return 0;
}

/* Sample number (manifest order) at position i of the epoch. */
uint64_t ch_order_at(const struct ch_order *ord, uint64_t i)
{
	if (ord->mode == CH_SHUFFLE_NONE)
		return i;
	if (ord->mode == CH_SHUFFLE_GLOBAL)
		return ch_perm_at(&ord->perm, i);
	size_t lo = 0, hi = ord->ngroups; /* group holding position i */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (ord->group_start[mid] <= i)
			lo = mid;
		else
			hi = mid;
	}
	uint64_t size = ord->group_start[lo + 1] - ord->group_start[lo];
	struct ch_perm gp;
	ch_perm_init(&gp, size, ord->seed, ord->epoch,
		     PURPOSE_WINDOW + 16 * (uint64_t)lo);
	uint64_t j = ch_perm_at(&gp, i - ord->group_start[lo]);
	for (size_t k = lo * ord->window;; k++) { /* j-th sample of the group */
		const struct ch_manifest_shard *s =
			&ord->m->shards[ord->shard_order[k]];
		if (j < s->samples)
			return s->first_sample + j;
		j -= s->samples;
	}
}

/* ------------------------------------------------------------------ */
/* Segments and batches                                                 */

/* Positions rank r takes from segment start c: every rank the same
 * number in training (the last (n - c) mod W are left for the next
 * epoch's shuffle); in eval every position once. */
uint64_t ch_segment_count(uint64_t n, uint64_t c, uint64_t w, uint64_t r,
			  int eval)
{
	if (c >= n)
		return 0;
	uint64_t left = n - c;
	if (!eval)
		return left / w;
	return left / w + (r < left % w);
}

uint64_t ch_segment_batches(uint64_t n, uint64_t c, uint64_t w, uint64_t b,
			    int eval, int drop_last)
{
	if (eval) /* the rank with the most samples decides, for all */
		return (ch_segment_count(n, c, w, 0, 1) + b - 1) / b;
	uint64_t k = ch_segment_count(n, c, w, 0, 0);
	return drop_last ? k / b : (k + b - 1) / b;
}

/* ------------------------------------------------------------------ */
/* Cursors: "ch1.ID16.OPT8.EPOCH.BATCH.POS"                             */

/* The transform specs, whitespace aside, and the seed they draw from. */
static uint64_t transforms_hash(const struct ch_stream_opts *o)
{
	XXH3_state_t *st = XXH3_createState();
	if (!st)
		return 0;
	XXH3_64bits_reset_withSeed(st, o->seed);
	for (size_t i = 0; i < o->ntransforms; i++) {
		for (const char *c = o->transforms[i]; *c; c++)
			if (!isspace((unsigned char)*c))
				XXH3_64bits_update(st, c, 1);
		XXH3_64bits_update(st, "\n", 1);
	}
	uint64_t h = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return h;
}

/* The options of this hash are those the table of
 * include/chute/stream_options.h marks HASHED (tests/unit/test_order.c
 * holds one against the other).  Its layout is frozen: every cursor ever
 * saved carries it. */
uint32_t ch_stream_options_hash(const struct ch_stream_opts *o)
{
	/* the options that shape the sequence of samples, and only where
	 * they do (no seed without shuffling, no window outside window
	 * mode); not rank, world size, workers, prefetch or format */
	enum ch_shuffle mode = o->eval ? CH_SHUFFLE_NONE : o->shuffle;
	uint64_t v[6] = { (uint64_t)mode,
			  mode == CH_SHUFFLE_WINDOW ? o->window : 0,
			  mode == CH_SHUFFLE_NONE ? 0 : o->seed, o->batch_size,
			  (uint64_t)(o->drop_last && !o->eval),
			  (uint64_t)o->eval };
	uint64_t h = XXH3_64bits(v, sizeof(v));
	if (o->split) /* a split is another sequence; none keeps old cursors */
		h ^= XXH3_64bits(o->split, strlen(o->split)) | 1;
	if (o->ntransforms) /* transforms change the bytes: and their seed */
		h ^= transforms_hash(o) | 1;
	/* so do the fields kept and a mix's source field */
	if (o->fields)
		h ^= XXH3_64bits_withSeed(o->fields, strlen(o->fields), 1) | 1;
	if (o->source_field) {
		uint64_t sf = (uint64_t)o->source_field;
		h ^= XXH3_64bits_withSeed(&sf, sizeof(sf), 2) | 1;
	}
	return (uint32_t)h;
}

#define HASHED_NAME(NAME, FIELD, DEFAULT, HASH) CH_SO_HASHED_NAME_##HASH(NAME)
#define CH_SO_HASHED_NAME_HASHED(name) " " name
#define CH_SO_HASHED_NAME__(name)

const char *ch_stream_options_hashed(void)
{
	/* one literal, of static storage; past its leading space */
	return &(CH_STREAM_OPTIONS(HASHED_NAME))[1];
}

void ch_cursor_format(char *out, size_t size, const char *dataset_id,
		      uint32_t opt_hash, uint64_t epoch, uint64_t batch,
		      uint64_t pos)
{
	snprintf(out, size, "ch1.%.16s.%08" PRIx32 ".%" PRIu64 ".%" PRIu64
		 ".%" PRIu64, dataset_id, opt_hash, epoch, batch, pos);
}

/* A mix's part: ID8:WEIGHT items, dot-separated. */
static int mix_part_ok(const char *s)
{
	while (*s) {
		size_t h = strspn(s, "0123456789abcdef");
		if (h != 8 || s[8] != ':' || s[9] < '0' || s[9] > '9')
			return 0;
		s += 9 + strspn(s + 9, "0123456789");
		if (*s == '.' && s[1])
			s++;
		else if (*s)
			return 0;
	}
	return 1;
}

int ch_cursor_parse(const char *s, struct ch_cursor *c, struct ch_error *err)
{
	unsigned long long e, b, p;
	unsigned h;
	int used = -1;
	memset(c, 0, sizeof(*c));
	if (sscanf(s, "ch1.%16[0-9a-f].%8x.%llu.%llu.%llu%n", c->id, &h, &e,
		   &b, &p, &used) != 5 || used < 0 || strlen(c->id) != 16 ||
	    (s[used] && (s[used] != '.' || !s[used + 1] ||
			 !mix_part_ok(s + used + 1))))
		return ch_error_usage(err, "'%s' is not a chute cursor "
				      "(expected "
				      "ch1.ID.OPTIONS.EPOCH.BATCH.POSITION)",
				      s);
	c->opt_hash = h;
	c->epoch = e;
	c->batch = b;
	c->pos = p;
	c->mix = s[used] ? s + used + 1 : NULL;
	return 0;
}
