/*
 * stream_record.h - chute stream --record and --replay: a JSON run record
 * that names the data of a stream (its id and where it came from), every
 * option that shapes the stream, and the cursor of the last batch written
 * (chute-stream(1), RUN RECORDS).
 */
#ifndef CHUTE_STREAM_RECORD_H
#define CHUTE_STREAM_RECORD_H

#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "chute/stream.h"
#include "cmd.h"
#include "stream_mix.h"

/* Zeroed means neither --record nor --replay. */
struct stream_record {
	const char *record;  /* --record FILE */
	const char *replay;  /* --replay FILE */
	const char *shaping; /* first option given that shapes the stream */
	int argc;	     /* the command line, for the record */
	char **argv;
	/* --replay: the record read, which owns the strings that the
	 * options point to, and what it says to open and expect */
	json_t *replayed;
	const char **transforms;
	char *source;
	char want_id[33];
	struct stream_mix *mix; /* the stream's; a replayed mix goes here */
	/* --record: the document and what it last said */
	json_t *doc;
	ch_batch_sink inner; /* the sink each batch goes to first */
	void *inner_arg;
	char cursor[1280];   /* of the last batch written; "" before one */
	uint64_t batches;
	int stopped;	     /* the consumer went away */
	double saved; /* when the record was last written (ch_now()) */
};

/* Remembers option opt (enum ch_stream_option) if it shapes the stream,
 * so that --replay can refuse it. */
void record_note_option(struct stream_record *r, int opt);

/* After the command line: loads --replay's record into o and *dataset
 * (refusing a dataset or a shaping option also given) and resolves
 * "--resume last".  Returns 1 when replaying, 0 when not, or -1 with
 * err filled. */
int record_parsed(struct stream_record *r, struct ch_stream_opts *o,
		  const char **dataset, struct ch_error *err);

/* Once the dataset is open, before the first batch: checks a replayed
 * dataset's id against the record's (data that failed a check when they
 * differ) and writes the record with no cursor yet.  dataset is the
 * reference the dataset was opened by (chute/remote.h): a path, or
 * REMOTE[@TAG|@ID].  Returns 0, or -1 with err filled. */
int record_begin(struct stream_record *r, const struct ch_dataset *ds,
		 const char *dataset, const struct ch_stream_opts *o,
		 struct ch_error *err);

/* With --record, puts record_sink in front of *sink (which it calls
 * first), and r as its argument. */
void record_wrap(struct stream_record *r, ch_batch_sink *sink, void **arg);

/* Writes the record a last time with the outcome of the stream (status:
 * the exit status so far).  Returns status; when it was 0 and the record
 * cannot be written, the status of that failure, reported. */
int record_end(struct stream_record *r, int status);

void record_release(struct stream_record *r);

/* *ref set to "URL@ID" (malloc'd) for a recorded remote url, its
 * hidden secrets dropped (a password then comes from ~/.netrc); -1 when
 * out of memory. */
int record_remote_ref(const char *remote, const char *id, char **ref);

#endif
