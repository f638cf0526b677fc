/* stream_plan.h - order and cursors for ch_stream (stream_order.c). */
#ifndef CH_STREAM_PLAN_H
#define CH_STREAM_PLAN_H

#include "internal.h"

/* The sequence of one epoch. */
struct ch_order {
	const struct ch_manifest *m;
	uint64_t n, seed, epoch, window;
	enum ch_shuffle mode;
	struct ch_perm perm;	 /* global */
	size_t *shard_order;	 /* window: shards in permuted order */
	uint64_t *group_start;	 /* window: first position of each group */
	size_t ngroups;
};

int ch_order_init(struct ch_order *ord, const struct ch_manifest *m,
		  const struct ch_stream_opts *o, uint64_t epoch,
		  struct ch_error *err);
void ch_order_release(struct ch_order *ord);
uint64_t ch_order_at(const struct ch_order *ord, uint64_t i);

uint64_t ch_segment_count(uint64_t n, uint64_t c, uint64_t w, uint64_t r,
			  int eval);
uint64_t ch_segment_batches(uint64_t n, uint64_t c, uint64_t w, uint64_t b,
			    int eval, int drop_last);

struct ch_cursor {
	char id[17];
	uint32_t opt_hash;
	uint64_t epoch, batch, pos;
};

uint32_t ch_stream_options_hash(const struct ch_stream_opts *o);
void ch_cursor_format(char *out, size_t size, const char *dataset_id,
		      uint32_t opt_hash, uint64_t epoch, uint64_t batch,
		      uint64_t pos);
int ch_cursor_parse(const char *s, struct ch_cursor *c, struct ch_error *err);

#endif
