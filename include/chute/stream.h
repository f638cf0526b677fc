/*
 * chute/stream.h - batches for a trainer (lib/stream/, man/chute-batch.5): the
 * order, the stream, mixes, export, and the --shm ring.
 */
#ifndef CHUTE_STREAM_H
#define CHUTE_STREAM_H

#include <signal.h>

#include "chute/common.h"
#include "chute/version.h"

/* ------------------------------------------------------------------ */
/* Order: a keyed permutation of [0, n), computed at any position       */

#define CH_PERM_ROUNDS 6
struct ch_perm {
	uint64_t n, seed, epoch, purpose;
	unsigned half; /* bits in each Feistel half */
	/* what each round's hash owes to its fixed inputs, worked out once
	 * (stream/perm.c) */
	uint64_t round_acc[CH_PERM_ROUNDS], round_lo[CH_PERM_ROUNDS];
};

/* The permutation of [0, n) for (seed, epoch, purpose); purpose keeps
 * independent uses (samples, shards, windows) apart. */
void ch_perm_init(struct ch_perm *p, uint64_t n, uint64_t seed, uint64_t epoch,
		  uint64_t purpose);
/* The element at position i (< n): O(1), no table. */
uint64_t ch_perm_at(const struct ch_perm *p, uint64_t i);

/* ------------------------------------------------------------------ */
/* Stream: batches for a trainer (chute stream, man/chute-batch.5)       */

enum ch_shuffle { CH_SHUFFLE_GLOBAL, CH_SHUFFLE_WINDOW, CH_SHUFFLE_NONE };
struct ch_stream_stats;
enum ch_format { CH_FORMAT_BATCH, CH_FORMAT_JSONL, CH_FORMAT_TAR };

/* Frame flags (man/chute-batch.5). */
#define CH_BATCH_PARTIAL 1u  /* fewer samples than the batch size */
#define CH_BATCH_LAST 2u     /* the rank's last batch of the epoch */

/* Where a sink that copies each frame somewhere (a shared-memory ring)
 * would have it encoded instead, saving the copy.  reserve(size, arg) is
 * called from the writing thread, in batch order, for the frame the sink
 * is called with next: it returns memory for size bytes, which the
 * sink's ch_batch_out.data then points into, or NULL for the stream's
 * own buffer.  reserve_at(size, seq, arg), if not NULL, is what the
 * workers call, side by side and ahead of batch order, each for the
 * frame it encodes: seq is the frame's place among the sink's calls of
 * this ch_stream (0 the first); it returns memory that is free for that
 * frame now, or NULL, never waiting.  The sink knows its memory again
 * by ch_batch_out.data; memory given for a frame the stream then fails
 * to write is not given back.  cold: another CPU copies the frame out of
 * that memory next (a pipe's reader, the memory lent to the pipe), so
 * the samples' bytes are written around this CPU's cache instead of
 * through it. */
struct ch_frame_memory {
	uint8_t *(*reserve)(size_t size, void *arg);
	uint8_t *(*reserve_at)(size_t size, uint64_t seq, void *arg);
	void *arg;
	int cold;
};

struct ch_stream_opts {
	enum ch_shuffle shuffle;
	uint64_t window;   /* shards per window, CH_SHUFFLE_WINDOW */
	uint64_t seed;
	uint64_t epochs;   /* 0: forever */
	uint64_t start_epoch; /* the first epoch, without a resume cursor */
	uint64_t batch_size;
	int drop_last;	   /* train: drop a last partial batch */
	int eval;	   /* no shuffle, every sample once, last batch kept */
	uint64_t rank, world;
	/* CH_AUTO: as measured; workers 0: the calling thread reads */
#define CH_AUTO (-1)
	int workers, prefetch;
	uint64_t cache;	   /* bytes of decoded blocks kept (0: none) */
	uint64_t index_memory; /* bytes of open shards kept (see ch_stream) */
	const char *split; /* stream this split of the manifest; NULL: all */
	/* --transform specs, "FIELD: op | op ..." (man/chute-stream.1),
	 * one per field; they run in the workers */
	const char *const *transforms;
	size_t ntransforms;
	int skip_corrupt;  /* --on-error skip: replace unreadable samples */
	/* --fields "a,b": only these fields of each sample (NULL: all) */
	const char *fields;
	/* --source-field: a mix's samples carry field "source", their
	 * source's number or name (CH_SOURCE_FIELD_*) */
	int source_field;
	enum ch_format format;
	const char *resume; /* a cursor, or NULL */
	volatile sig_atomic_t *cancel;
	/* called from the writing thread about every stats_interval
	 * seconds while the stream runs (NULL: never) */
	void (*on_stats)(const struct ch_stream_stats *st, void *arg);
	void *stats_arg;
	double stats_interval;
	/* NULL, or memory for the next frame (CH_FORMAT_BATCH) when the
	 * writing thread reads the batch itself: see ch_frame_memory */
	const struct ch_frame_memory *frame_memory;
};

void ch_stream_opts_init(struct ch_stream_opts *o);

/* One batch as handed to the sink: its encoded bytes (a frame, JSON
 * lines, or tar members) and where it stands. */
struct ch_batch_out {
	const uint8_t *data;
	size_t size;
	uint64_t epoch, batch, samples;
	uint32_t flags;
	const char *cursor; /* resume after this batch with it */
};

/* Called by ch_stream in batch order from one thread.  Returns 0 to go
 * on, 1 to stop quietly (the reader went away), -1 on error. */
typedef int (*ch_batch_sink)(const struct ch_batch_out *b, void *arg,
			     struct ch_error *err);

struct ch_stream_stats {
	uint64_t batches, samples, bytes;
	double read_s, encode_s;     /* busy time summed over workers */
	double wait_workers_s;	     /* the writer waited for a batch */
	double wait_sink_s;	     /* the sink (the consumer) took */
	double elapsed_s;
	int workers, prefetch;	     /* as chosen (auto: the latest choice) */
	double tune_work_s;	     /* auto: a worker's time a batch, */
	double tune_consume_s;	     /* the consumer's, when it chose */
	uint64_t cache_hits, cache_misses;
	uint64_t read_alone;	     /* samples read by themselves, each
					checked by its own hash: raw ones
					of 16 KiB and more, a remote's */
	uint64_t shard_opens;	     /* shards opened, reopenings counted */
	uint64_t index_peak;	     /* most bytes of open shards at once */
	uint64_t skipped;	     /* corrupt samples replaced or dropped */
	double decode_s, resample_s, convert_s; /* transforms, summed over
						   workers: decoding images,
						   cropping and resizing,
						   the other ops */
};

/* What an epoch of a stream holds, for a trainer's steps per epoch. */
struct ch_stream_count {
	char id[33];	      /* the dataset version's id */
	uint64_t samples;     /* of the dataset, or of the split */
	uint64_t batches;     /* a full epoch's, for this rank */
	uint64_t epoch;	      /* where the stream starts (resume, start_epoch) */
	uint64_t batches_left; /* of that epoch: batches, or fewer on a resume */
};

/* Fills *out for the dataset and options without streaming: the
 * options, split and cursor are checked as ch_stream checks them. */
int ch_stream_count(const struct ch_dataset *ds,
		    const struct ch_stream_opts *o, struct ch_stream_count *out,
		    struct ch_error *err);

/* ------------------------------------------------------------------ */
/* Mixing datasets into one stream (stream/mix.c, chute-stream(1) MIXING) */

enum { CH_SOURCE_FIELD_NONE, CH_SOURCE_FIELD_INDEX, CH_SOURCE_FIELD_NAME };
enum { CH_MIX_MAX = 32 };	  /* sources in one mix */
#define CH_WEIGHT_UNIT 1000000 /* weights are counted in millionths */

/* How long an epoch of a mix is (--mix-epoch). */
enum ch_mix_epoch {
	CH_MIX_SHORTEST, /* until a source would repeat: none repeats */
	CH_MIX_SOURCE,	 /* one pass of a source; the others as they come */
	CH_MIX_TOTAL,	 /* this many samples */
};

struct ch_mix_source {
	const char *name;      /* as given: its key in --mix */
	/* opened, in memory of its own (malloc: a dataset does not move,
	 * a remote's points into itself); ch_mix_open takes it */
	struct ch_dataset *ds;
	const char *split;     /* a split of it, or NULL: all of it */
	uint64_t weight;       /* in millionths, above 0 */
};

struct ch_mix_spec {
	struct ch_mix_source *sources;
	size_t n;
	enum ch_mix_epoch epoch;
	uint64_t epoch_total;  /* CH_MIX_TOTAL */
	size_t epoch_source;   /* CH_MIX_SOURCE */
};

/* A weight as written ("0.7", "3", at most 6 decimals) in millionths;
 * -1 when it is not one (a sign, a letter, a seventh decimal). */
int ch_weight_parse(const char *text, uint64_t *out);
/* The shortest decimal text of a weight in millionths ("0.7"). */
void ch_weight_text(uint64_t weight, char out[32]);

/* Opens the mix of spec as one dataset ds to give ch_stream: its sample
 * order is the mix's (see chute-stream(1), MIXING), its id the mix's (a
 * hash of the sources' ids, splits and weights and of the epoch rule).
 * Takes the sources' datasets, which ch_dataset_release(ds) releases
 * and frees, also when it fails. */
int ch_mix_open(struct ch_dataset *ds, const struct ch_mix_spec *spec,
		struct ch_error *err);
/* What a mix holds, by source: id, split, weight, samples (of the split)
 * and the samples an epoch takes from it.  n: 0 for a dataset that is not
 * a mix. */
struct ch_mix_info {
	const char *name, *id, *split;
	uint64_t weight, samples, per_epoch;
	const struct ch_dataset *ds;
};
size_t ch_mix_sources(const struct ch_dataset *ds);
void ch_mix_source_info(const struct ch_dataset *ds, size_t i,
			struct ch_mix_info *out);
/* The epoch rule as --mix-epoch takes it back ("shortest", "1000", or a
 * source's name). */
const char *ch_mix_epoch_text(const struct ch_dataset *ds, char out[32]);

/* Streams batches of the dataset to sink until the epochs are done, the
 * sink says stop (returns 1: ch_stream then returns 0), or *cancel is
 * set.  Output bytes depend only on the dataset and the options that
 * shape the stream, never on workers, prefetch, cache or index memory.
 * Memory: prefetch + workers batches in flight, the block cache, and open
 * shards within index_memory (plus those that batches being read pin). */
int ch_stream(struct ch_dataset *ds, const struct ch_stream_opts *o,
	      ch_batch_sink sink, void *sink_arg, struct ch_stream_stats *st,
	      struct ch_error *err);

/* ------------------------------------------------------------------ */
/* export                                                               */

struct ch_export_opts {
	const char *out_dir;
	const char *format; /* "tar" */
	volatile sig_atomic_t *cancel;
	ch_progress_fn progress; /* phase "writing", samples; may be NULL */
	void *progress_arg;
};

/* What an export wrote, so far when it failed. */
struct ch_export_result {
	size_t files;	  /* tar files renamed into place */
	uint64_t samples; /* samples in them */
	uint64_t bytes;	  /* their size */
};

/* Writes one WebDataset tar per shard (NAME-000000.tar, members KEY.FIELD
 * in sample order, deterministic headers), each under a temporary name
 * renamed into place when complete. */
int ch_export(struct ch_dataset *ds, const struct ch_export_opts *o,
	      struct ch_export_result *res, struct ch_error *err);

/* ------------------------------------------------------------------ */
/* The shared-memory ring, producer side (stream/shm_ring.c)          */

/*
 * The producer side of the shared-memory ring of `chute stream --shm
 * NAME` (chute-batch(5), SHARED-MEMORY RING; the layout is in
 * chute_shm.h, which consumers include).
 *
 * One thread puts frames, in order; the ring is removed from /dev/shm by
 * ch_shm_ring_free on every path, and a consumer that dies is noticed
 * within CHUTE_SHM_WAIT_MS of chute waiting on it (and at every put).
 */

struct ch_shm_ring;

struct ch_shm_ring_opts {
	const char *name;	/* NAME: the segment is /dev/shm/chute-NAME */
	uint32_t slots;		/* 1 to CHUTE_SHM_MAX_SLOTS */
	uint64_t slot_size;	/* bytes, rounded up to CHUTE_SHM_ALIGN */
	int pin;		/* mlock the ring */
	volatile sig_atomic_t *cancel; /* stops waits: "interrupted" */
};

/* 0 if name can name a ring, else -1 with the rule in err. */
int ch_shm_ring_check_name(const char *name, struct ch_error *err);

/* Creates the segment (O_EXCL; one left by a chute that died is
 * replaced), checks /dev/shm has room, reserves its pages (no SIGBUS
 * later), locks it with pin, and publishes the header. */
int ch_shm_ring_create(struct ch_shm_ring **out,
		       const struct ch_shm_ring_opts *o, struct ch_error *err);

uint64_t ch_shm_ring_slot_size(const struct ch_shm_ring *r);

/* Copies one frame into the next slot (unless it was written there, by
 * ch_shm_ring_slot_for), waiting for the consumer to free it.  Returns
 * 0, 1 when the consumer closed the ring (stop quietly), or -1: the
 * frame is larger than a slot, the consumer died, or *cancel. */
int ch_shm_ring_put(struct ch_shm_ring *r, const void *frame, size_t size,
		    struct ch_error *err);
/* The same in two steps, for a frame written in place: the next slot,
 * once free (as put waits, and with its returns), then its first size
 * bytes published as the next frame. */
int ch_shm_ring_reserve(struct ch_shm_ring *r, size_t size, uint8_t **slot,
			struct ch_error *err);
void ch_shm_ring_commit(struct ch_shm_ring *r, size_t size);
/* The slot of frame seq, from any thread, if it is free for that frame
 * now (the frame nslots before it published and read), else NULL; never
 * waits.  A frame written there is put without a copy. */
uint8_t *ch_shm_ring_slot_for(struct ch_shm_ring *r, uint64_t seq,
			      size_t size);

/* Marks the end of the stream and waits until the consumer has read it
 * all and closed the ring (or died: -1, or *cancel: -1). */
int ch_shm_ring_finish(struct ch_shm_ring *r, struct ch_error *err);

/* Marks the stream failed with msg; the consumer raises it after the
 * frames already in the ring.  Does not wait. */
void ch_shm_ring_fail(struct ch_shm_ring *r, const char *msg);

/* Removes the segment from /dev/shm and unmaps it.  NULL is fine. */
void ch_shm_ring_free(struct ch_shm_ring *r);

#endif
