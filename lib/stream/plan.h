/* stream/plan.h - order and cursors for ch_stream (stream/order.c). */
#ifndef CH_STREAM_PLAN_H
#define CH_STREAM_PLAN_H

#include "chute/stream_options.h"
#include "common/internal.h"
#include "stream/encode.h"
#include "transform/transform.h"

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

/* The shards a stream holds open (stream/shard_table.c): pinned while a batch
 * reads them, closed least recently used first past budget bytes.
 * scattered_batch: the batch size of an order that reads each shard's
 * samples scattered (a shuffle), whose shards' indexes may then be
 * decoded and checked whole when they open (see open_slot); 0 for one
 * that reads them in order, each sample's index pages and entry read
 * when the sample first is. */
struct ch_shard_table;
int ch_shard_table_new(struct ch_shard_table **out,
		       const struct ch_dataset *ds, size_t budget,
		       uint64_t scattered_batch, struct ch_block_cache *cache,
		       struct ch_error *err);
void ch_shard_table_free(struct ch_shard_table *t);
/* Pins shard k, opening it if no thread has it open.  Returns 1 when
 * pinned; 0 (wait = 0 only) when another thread is opening it right now;
 * -1 on error. */
int ch_shard_table_pin(struct ch_shard_table *t, size_t k, int wait,
		       struct ch_shard **out, struct ch_error *err);
void ch_shard_table_unpin(struct ch_shard_table *t, size_t k);
void ch_shard_table_stats(struct ch_shard_table *t, uint64_t *opens,
			  uint64_t *peak_bytes);

/* One split of a dataset as a manifest of its own (stream/split_view.c):
 * positions 0..n-1 of view are the split's samples, ids[i] their sample
 * numbers in the dataset.  8 bytes a sample of the split. */
struct ch_split_view {
	struct ch_manifest view; /* shallow copy but for shards and samples */
	struct ch_manifest_shard *shards;
	uint64_t *ids, n;
};
/* -1 on error: CH_ERR_DATA when the split is in the manifest but its file
 * is bad. */
int ch_split_view_init(struct ch_split_view *v, const struct ch_dataset *ds,
		       const char *name, struct ch_error *err);
void ch_split_view_release(struct ch_split_view *v);

/* One batch as planned: its samples in stream order. */
/* a mix's cursor names each of its sources (up to CH_MIX_MAX) */
#define CH_CURSOR_MAX 1152
struct ch_batch_plan {
	uint64_t epoch, batch, n;
	uint32_t flags;
	uint64_t *ids; /* n sample numbers, manifest order */
	char cursor[CH_CURSOR_MAX];
};

/* Reading a batch's samples (stream/read.c).  What the workers share: */
struct ch_name_table;
struct ch_name_table *ch_name_table_new(void);
void ch_name_table_free(struct ch_name_table *t);

struct ch_stream_shared {
	struct ch_dataset *ds;
	struct ch_shard_table *shards;
	struct ch_block_cache *cache;	 /* NULL: none */
	/* samples read alone, not through the cache (see through_cache in
	 * stream/read.c), counted by the readers with atomic adds */
	uint64_t *alone;
	struct ch_name_table *names;	 /* field names, interned */
	const uint64_t *split_ids;	 /* the samples streamed: NULL, all */
	uint64_t nsamples;		 /* how many */
	uint64_t seed;
	int eval, skip_corrupt, nworkers;
	int defer; /* leave samples of cached blocks for ch_batch_fill */
	/* make the images that ch_transform_late takes in ch_batch_fill,
	 * straight into the frame (not with skip_corrupt: a sample that
	 * fails there can no longer be replaced) */
	int late;
	const struct ch_transforms *tx;	 /* --transform; NULL: none */
	const struct ch_mix *mix;	 /* the samples' sources; NULL */
	const char **keep; /* --fields, interned; NULL: every field */
	size_t nkeep;
	const char *source_name; /* "source", interned, with */
	int source_field;	 /* --source-field */
};
/* Interns what ch_stream_fields gave into sh (keep: with filter). */
int ch_stream_shared_fields(struct ch_stream_shared *sh,
			    const struct ch_manifest_field *f, size_t n,
			    int filter, struct ch_error *err);

/* A batch's copied keys and bytes, and the sample table the encoders
 * take; reused from batch to batch. */
struct ch_read_slot;
struct ch_batch_data {
	struct ch_buf raw;
	struct ch_batch_sample *samples;
	const char **names;
	uint64_t *sizes;
	const uint8_t **data;
	uint64_t *src, *dest; /* deferred fields: offset in the sample, in
				 the frame (set by ch_encode_frame_in);
				 late ones: src is the size of the bytes
				 their value is made from */
	size_t nfields, fields_cap;
	int deferred; /* some samples wait for ch_batch_fill */
	struct ch_read_slot *slots;
	uint32_t *order, *order2;   /* slots by place, and for sorting: */
	uint64_t *keys, *keys2;
	uint64_t cap, nslots;
	struct ch_buf xraw;	     /* transformed fields' values */
	struct ch_field_type *types; /* with transforms: each field's */
	uint8_t *in_xraw;	     /* its value is in xraw, not raw */
	uint32_t *late;	/* made by ch_batch_fill: its pipeline + 1; or 0 */
	uint64_t nlate, epoch;
	uint64_t skipped; /* corrupt samples met (--on-error skip) */
};
void ch_batch_data_release(struct ch_batch_data *b);

/* One per worker thread; index says where in a batch it starts.  The
 * writer's own, CH_READS_ALONE, reads only while no worker is at work:
 * from a batch's start, warming no block ahead of the others. */
#define CH_READS_ALONE (-1)
struct ch_batch_reader;
int ch_batch_reader_new(struct ch_batch_reader **out,
			const struct ch_stream_shared *sh, int index,
			struct ch_error *err);
void ch_batch_reader_free(struct ch_batch_reader *r);
/* Seconds its reads spent loading blocks, or waiting for another
 * reader's (ch_block_reader_load_seconds). */
double ch_batch_reader_load_seconds(const struct ch_batch_reader *r);
/* Seconds the reader's transforms spent decoding images, resampling
 * them, and in the other ops. */
void ch_batch_reader_times(const struct ch_batch_reader *r, double t[3]);
/* Reads p's samples into b.  Corrupt samples, with skip_corrupt, are
 * replaced (train) or dropped (eval: p->n shrinks, the batch is flagged
 * partial); b->samples then holds p->n samples in stream order. */
int ch_batch_read(struct ch_batch_reader *r, struct ch_batch_plan *p,
		  struct ch_batch_data *b, struct ch_error *err);
/* With defer, samples of compressed blocks are checked but not copied by
 * ch_batch_read (their b->samples have dest set); once ch_encode_frame_in
 * has laid out the frame, this copies their bytes from the cached blocks
 * straight into it: one copy a sample instead of two.  With late, the
 * images whose type their header gives are only planned by ch_batch_read
 * (dest and late set); this decodes and resamples them straight into the
 * frame: no copy at all, and no buffer between. */
int ch_batch_fill(struct ch_batch_reader *r, struct ch_batch_data *b,
		  uint8_t *frame, struct ch_error *err);

/* --workers auto, --prefetch auto (stream/tune.c). */
struct ch_tune_input {
	int threads;	   /* worker threads there are */
	int max_prefetch;  /* job slots beyond one a thread */
	double work_mean_s; /* a worker's time for one batch, mean */
	double work_max_s;  /* and the slowest lately */
	double consume_mean_s; /* the consumer's time for one batch */
};
void ch_stream_tune(const struct ch_tune_input *in, int *workers,
		    int *prefetch);

/* --workers auto also asks the stream itself, because stage times cannot
 * see what the threads cost each other: workers that contend for memory
 * and for the cores, with each other and with a trainer on the same
 * machine.  Now and then a period runs with one worker fewer (or, the
 * next time, one more), which stays when batches came as fast (or 5 %
 * faster); each try that does not stay doubles the wait before the next
 * one.  Tries are made only while every block comes from the cache: as
 * long as blocks are being decoded, more workers help. */
struct ch_workers_probe {
	int cap;	/* most workers auto may run */
	int trying;	/* -1 or +1 while a period runs at a tried cap */
	int next;	/* the direction of the next try */
	double before;	/* batches a second before the try */
	int wait, every; /* periods until the next try, and between tries */
};
void ch_workers_probe_init(struct ch_workers_probe *p, int threads);
/* Sets the cap auto starts with once the writer has read its first
 * batches alone, the cheapest in work_s beyond loading blocks (a cost
 * paid once): none when that is cheap, where a hand-off would cost more
 * than the thread saves; else threads. */
void ch_workers_probe_start(struct ch_workers_probe *p, double work_s,
			    int threads);
/* The cap after a period whose batches took work_mean_s each: at none
 * and not trying, reads grown dear (blocks decoded again, say) bring
 * back the workers the stage times call for. */
int ch_workers_reopen(const struct ch_workers_probe *p, double work_mean_s,
		      int called_for);
/* After a period that gave `rate` batches a second, `decoding` when
 * blocks were decoded in it, while the stage times call for called_for
 * workers (fewer than the cap: a try starts from there): returns the cap
 * for the next period. */
int ch_workers_probe_step(struct ch_workers_probe *p, double rate,
			  int decoding, int threads, int called_for);

struct ch_cursor {
	char id[17];
	uint32_t opt_hash;
	uint64_t epoch, batch, pos;
	/* a mix's: ".ID8:WEIGHT" a source after pos, without the first dot
	 * (within the text parsed); NULL for one dataset's */
	const char *mix;
};

uint32_t ch_stream_options_hash(const struct ch_stream_opts *o);
/* "a b c": the keys of the settings that enter the hash (struct
 * ch_error's), for an error about a cursor made with other ones. */
const char *ch_stream_options_hashed(void);
void ch_cursor_format(char *out, size_t size, const char *dataset_id,
		      uint32_t opt_hash, uint64_t epoch, uint64_t batch,
		      uint64_t pos);
int ch_cursor_parse(const char *s, struct ch_cursor *c, struct ch_error *err);

#endif
