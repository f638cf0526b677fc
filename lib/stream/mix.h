/* stream/mix.h - several datasets as one stream (stream/mix.c): the mix,
 * opened as a dataset whose shards are its sources' shards in turn, and
 * the walk that gives the sample at each position of a mixed epoch. */
#ifndef CH_STREAM_MIX_H
#define CH_STREAM_MIX_H

#include "stream/plan.h"

struct ch_mix {
	struct ch_mix_source *src;
	size_t n;
	enum ch_mix_epoch epoch;
	uint64_t epoch_total;
	size_t epoch_source;
	struct ch_split_view *views;	 /* ids NULL: no split */
	const struct ch_manifest **m;	 /* each source's view or manifest */
	uint64_t *count;	/* samples an epoch takes from each source */
	uint64_t *offset;	/* its first sample in the mix's numbering */
	size_t *first_shard;	/* its first shard in the mix's manifest */
	char **numbers;		/* "0", "1", ...: --source-field index */
	uint64_t total;		/* samples in an epoch: the counts' sum */
	char **common;		/* fields every source has, sorted */
	size_t ncommon;
};

/* The mix a dataset opened by ch_mix_open stands for; NULL for another. */
const struct ch_mix *ch_mix_of(const struct ch_dataset *ds);
/* The source of sample number id (the mix's numbering). */
size_t ch_mix_source_of(const struct ch_mix *mix, uint64_t id);

/* Where a planner is in a mixed epoch: t positions drawn, d[i] of them
 * from source i; and each source's order for the pass it is in. */
struct ch_mix_walk {
	const struct ch_mix *mix;
	const struct ch_stream_opts *o;
	uint64_t t, *d;
	struct ch_mix_pass {
		int live;
		uint64_t pass;
		struct ch_order ord;
	} *pass;
};
int ch_mix_walk_init(struct ch_mix_walk *w, const struct ch_mix *mix,
		     const struct ch_stream_opts *o, struct ch_error *err);
void ch_mix_walk_release(struct ch_mix_walk *w);
/* The sample (mix numbering) at position t of epoch `epoch`. */
int ch_mix_walk_at(struct ch_mix_walk *w, uint64_t epoch, uint64_t t,
		   uint64_t *id, struct ch_error *err);

/* Fills mix->count and mix->total from the epoch rule (stream/mix.c). */
int ch_mix_plan_counts(struct ch_mix *mix, struct ch_error *err);

/* The fields a stream's samples carry: --fields, else with a mix those
 * every source has (a field only some have is refused), else the
 * manifest's; then "source" with --source-field.  *out is one allocation
 * (the names within it), the caller's to free; *filter: fields beyond
 * them are to be dropped (--fields).  Checks --fields against the
 * schema(s), and --source-field. */
int ch_stream_fields(const struct ch_dataset *ds,
		     const struct ch_stream_opts *o,
		     struct ch_manifest_field **out, size_t *n, int *filter,
		     struct ch_error *err);

#endif
