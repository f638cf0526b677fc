/*
 * stream.h - what chute bench shares with chute stream: the command line
 * of a stream and running it (stream.c).
 */
#ifndef CHUTE_CMD_STREAM_H
#define CHUTE_CMD_STREAM_H

#include <stdint.h>

#include "cmd.h"
#include "stream_mix.h"
#include "stream_record.h"
#include "stream_shm.h"

struct stream_args {
	struct ch_stream_opts o;
	const char *dataset, *output, *state, *stats_json;
	int stats, rank_set, world_set;
	int vmsplice; /* --vmsplice: frames' pages lent to the pipe */
	int stats_json_failed; /* said once; the exit status is 2 */
	struct ch_error stats_json_err; /* its kind, the message said */
	int bench; /* chute bench: no output, a table at the end */
	int count; /* --count: an epoch's figures as JSON, no stream */
	int force; /* --force: binary frames even to a terminal */
	int start_epoch_set, resume_set; /* given on the command line */
	struct shm_sink shm; /* --shm and its options */
	const char **transforms; /* --transform, in order */
	size_t ntransforms;
	struct stream_record rec; /* --record, --replay */
	const char *remote_cache;
	uint64_t remote_cache_size;
	const char **datasets; /* as given: several make a mix */
	size_t ndatasets;
	struct stream_mix mix; /* --mix, --mix-epoch */
};

/* The options' defaults; bench: for chute bench. */
void stream_args_init(struct stream_args *a, int bench);
void stream_args_release(struct stream_args *a);

/* The spec's operand and taken of chute stream and chute bench: a
 * dataset (several make a mix), and what an option given changes
 * besides its value (the run record's note of it, *_set). */
int stream_add_dataset(void *args, const char *name, struct ch_error *err);
void stream_option_taken(void *args, const struct cmd_opt *o);

/* The command line of spec's command into a.  Returns 0 to go on, -1
 * after --help, or the exit status. */
int stream_parse_args(struct stream_args *a, const struct cmd_spec *spec,
		      int argc, char **argv);

/* Streams as a says; st and fetch get the figures of the stream (when
 * it ran).  Returns the exit status, having said what went wrong. */
int stream_run(struct stream_args *a, struct ch_stream_stats *st,
	       struct ch_fetch_stats *fetch);

/* Whether fetch holds a remote dataset's figures. */
int stream_is_remote(const struct ch_fetch_stats *fetch);

#endif
