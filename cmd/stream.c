/*
 * stream.c - chute stream: shuffled, batched samples for a trainer, on
 * standard output or in a file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chute/stream.h"
#include "chute/remote.h"
#include "cmd.h"
#include "pipe_pages.h"
#include "stream.h"
#include "stream_opts.h"

static const char *const stream_usage[] = {
	"stream [OPTIONS] DATASET",
	"stream [OPTIONS] DATASET... --mix 'DATASET=WEIGHT,...'",
	NULL,
};


/* Every option of chute stream, from stream_rows.h. */
const struct cmd_spec cmd_stream_spec = {
	.name = "stream",
	.summary = "stream shuffled batches of a dataset to a trainer",
	.usage = stream_usage,
	.opts = stream_cmd_opts,
	.operand = stream_add_dataset,
	.taken = stream_option_taken,
	.extra = "DATASET is a dataset folder, a manifest, one shard, or a\n"
		 "remote REMOTE[@TAG|@ID] (see chute-remote(7)).  With\n"
		 "--mix, several DATASETs (DATASET:SPLIT for a split) are\n"
		 "mixed in one stream in those proportions.  Frames\n"
		 "are specified in chute-batch(5); each carries a cursor for\n"
		 "--resume.  With --replay RUN, the dataset and the options\n"
		 "that shape the stream come from the run record RUN.\n"
		 "\n"
		 "Transform ops (see chute-stream(1)): decode [rgb|gray],\n"
		 "resize N|WxH, center-crop N|WxH, random-resized-crop N\n"
		 "[scale=A,B] [ratio=A,B], flip [P], normalize MEAN STD|imagenet,\n"
		 "layout hwc|chw, dtype u8|f16|f32, int, npy [SHAPE],\n"
		 "bytes u8|i64|f16|f32 [SHAPE], random-crop N|WxH, pad N [VALUE].\n"
		 "flip, center-crop, random-crop and pad take H x W (x C)\n"
		 "arrays too.\n"
		 "Examples:\n"
		 "  --transform 'jpg: decode | random-resized-crop 224 | flip'\n"
		 "  --transform 'img: bytes u8 28x28 | pad 4 | random-crop 28 | flip'\n",
};

struct sink {
	int fd;
	const char *path; /* -o FILE, or NULL: standard output */
	char *tmp;	  /* where FILE is written until the end, or NULL */
	struct pipe_pages *pages; /* into a pipe, or NULL */
};

/* What the run record and the checks after parsing need to know of
 * option o, which was given. */
void stream_option_taken(void *args, const struct cmd_opt *o)
{
	struct stream_args *a = args;
	int opt = stream_option_named(o->name);
	a->rank_set |= opt == CH_STREAM_OPT_RANK;
	a->world_set |= opt == CH_STREAM_OPT_WORLD_SIZE;
	a->start_epoch_set |= opt == CH_STREAM_OPT_START_EPOCH;
	a->resume_set |= opt == CH_STREAM_OPT_RESUME;
	record_note_option(&a->rec, opt);
}

/* torchrun sets RANK and WORLD_SIZE; options win over them. */
static int ranks_from_env(struct stream_args *a, struct ch_error *err)
{
	const char *r = getenv("RANK"), *w = getenv("WORLD_SIZE");
	union stream_value v;
	if (!a->rank_set && r && *r) {
		if (stream_parse_value(CH_STREAM_OPT_RANK, "RANK", r, &v,
				       err) < 0)
			return -1;
		a->o.rank = v.u64;
	}
	if (!a->world_set && w && *w) {
		if (stream_parse_value(CH_STREAM_OPT_WORLD_SIZE, "WORLD_SIZE",
				       w, &v, err) < 0)
			return -1;
		a->o.world = v.u64;
	}
	if (a->o.rank >= a->o.world)
		return ch_error_usage(err, "rank %llu is not below the world "
				      "size %llu",
				      (unsigned long long)a->o.rank,
				      (unsigned long long)a->o.world);
	return 0;
}

int stream_add_dataset(void *args, const char *name, struct ch_error *err)
{
	struct stream_args *a = args;
	const char **v = realloc(a->datasets, (a->ndatasets + 1) *
						  sizeof(*v));
	if (!v)
		return ch_error_nomem(err);
	a->datasets = v;
	v[a->ndatasets++] = name;
	a->dataset = v[0];
	return 0;
}

/* Several datasets: a mix, with --mix saying in what proportions. */
static int parse_mix(struct stream_args *a, struct ch_error *err)
{
	if (a->rec.replay && (a->mix.text || a->mix.epoch))
		return ch_error_usage(err, "--mix%s cannot go with --replay: "
				      "the mix comes from '%s'",
				      a->mix.text ? "" : "-epoch",
				      a->rec.replay);
	if (a->ndatasets > 1 && !a->mix.text)
		return ch_error_usage(err, "%zu datasets given ('%s', '%s'%s): "
				      "to mix them, say in what proportions "
				      "with --mix '%s=W,...'", a->ndatasets,
				      a->datasets[0], a->datasets[1],
				      a->ndatasets > 2 ? ", ..." : "",
				      a->datasets[0]);
	if (a->mix.epoch && !a->mix.text)
		return ch_error_usage(err, "--mix-epoch goes with --mix");
	if (!a->mix.text || a->ndatasets == 0)
		return 0;
	return stream_mix_parse(&a->mix, a->datasets, a->ndatasets, err);
}

int stream_parse_args(struct stream_args *a, const struct cmd_spec *spec,
		      int argc, char **argv)
{
	struct ch_error err;
	int status, replay;
	a->rec.argc = argc;
	a->rec.argv = argv;
	status = cmd_parse_args(spec, argc, argv, a);
	if (status != 0)
		return status;
	if (parse_mix(a, &err) < 0)
		return cmd_fail(&err);
	if (a->start_epoch_set && a->resume_set) {
		ch_error_usage(&err, "--start-epoch and --resume both say "
			       "where to begin: a cursor knows its epoch; "
			       "give one");
		return cmd_fail(&err);
	}
	if ((replay = record_parsed(&a->rec, &a->o, &a->dataset, &err)) < 0)
		return cmd_fail(&err);
	if (a->o.epochs && a->o.start_epoch >= a->o.epochs) {
		ch_error_usage(&err, "--start-epoch %llu is not below --epochs "
			       "%llu (epochs count from 0: --epochs is where "
			       "the stream ends)",
			       (unsigned long long)a->o.start_epoch,
			       (unsigned long long)a->o.epochs);
		return cmd_fail(&err);
	}
	a->rank_set |= replay; /* the record's rank and world size, */
	a->world_set |= replay; /* not the environment's */
	if (!a->dataset) {
		ch_error_usage(&err, "no dataset given");
		return cmd_fail(&err);
	}
	return ranks_from_env(a, &err) < 0 ? cmd_fail(&err) : 0;
}

/* ------------------------------------------------------------------ */

static int to_sink(const struct ch_batch_out *b, void *arg,
		   struct ch_error *err)
{
	struct sink *s = arg;
	if (s->fd < 0) /* chute bench: the bytes go nowhere */
		return 0;
	if ((s->pages ? pipe_pages_write(s->pages, b->data, b->size)
		      : cmd_write_all(s->fd, b->data, b->size)) < 0) {
		if (errno == EPIPE)
			return 1; /* the reader is gone: a normal end */
		return s->path ? ch_error_errno(err, errno, "cannot write '%s'",
						s->tmp ? s->tmp : s->path)
			       : ch_error_errno(err, errno,
						"cannot write the stream");
	}
	return 0;
}

/* --state FILE: in front of the sink that takes the batches (a file or
 * the --shm ring), FILE replaced with the cursor of each batch taken. */
struct state_sink {
	const char *path;
	ch_batch_sink inner;
	void *inner_arg;
};

static int to_state(const struct ch_batch_out *b, void *arg,
		    struct ch_error *err)
{
	struct state_sink *s = arg;
	int rc = s->inner(b, s->inner_arg, err);
	if (rc != 0 || !b->cursor)
		return rc;
	char line[1280]; /* a mix's cursor names its sources */
	int n = snprintf(line, sizeof line, "%s\n", b->cursor);
	return ch_write_file_atomic(s->path, line, (size_t)n, err);
}

/* Share of the writer's waiting spent waiting on the workers: high means
 * the trainer was starved (input-bound). */
static double input_share(const struct ch_stream_stats *st)
{
	double waited = st->wait_workers_s + st->wait_sink_s;
	return waited > 0 ? 100 * st->wait_workers_s / waited : 0;
}

static json_t *stats_json(const struct ch_stream_stats *st)
{
	double t = st->elapsed_s > 0 ? st->elapsed_s : 1e-9;
	return json_pack(
		"{s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:i, s:i, s:f, s:f, s:f,"
		" s:f, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f}",
		"batches", (json_int_t)st->batches,
		"samples", (json_int_t)st->samples,
		"bytes", (json_int_t)st->bytes,
		"seconds", st->elapsed_s,
		"batches_per_s", (double)st->batches / t,
		"samples_per_s", (double)st->samples / t,
		"mb_per_s", (double)st->bytes / 1e6 / t,
		"workers", st->workers, "prefetch", st->prefetch,
		"read_busy_s", st->read_s, "encode_busy_s", st->encode_s,
		"wait_workers_s", st->wait_workers_s,
		"wait_consumer_s", st->wait_sink_s,
		"input_bound_percent", input_share(st),
		"cache_hits", (json_int_t)st->cache_hits,
		"cache_misses", (json_int_t)st->cache_misses,
		"read_alone", (json_int_t)st->read_alone,
		"shard_opens", (json_int_t)st->shard_opens,
		"index_peak_bytes", (json_int_t)st->index_peak,
		"skipped", (json_int_t)st->skipped,
		"auto_batch_work_s", st->tune_work_s,
		"auto_batch_consume_s", st->tune_consume_s);
}

static json_t *stats_doc(const struct ch_stream_stats *st)
{
	json_t *doc = stats_json(st);
	if (doc && json_object_update_new(doc, json_pack(
			   "{s:f, s:f, s:f}",
			   "transform_decode_s", st->decode_s,
			   "transform_resize_s", st->resample_s,
			   "transform_other_s", st->convert_s)) < 0) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

/* A remote dataset's fetches; nothing for a local one. */
int stream_is_remote(const struct ch_fetch_stats *f)
{
	return f && f->files + f->cache_hits + f->ranges > 0;
}

/* fetch: the remote's figures at the end, NULL for the periodic ones. */
/* Replaces --stats-json FILE; a failure is said once, and makes the exit
 * status 2 (the stream goes on: the statistics are not the data). */
static void write_stats_json(struct stream_args *a,
			     const struct ch_stream_stats *st,
			     const struct ch_fetch_stats *fetch)
{
	json_t *doc = stats_doc(st);
	if (doc && stream_is_remote(fetch))
		json_object_set_new(doc, "remote", json_pack(
			"{s:I, s:I, s:I, s:I, s:I, s:f}",
			"files", (json_int_t)fetch->files,
			"file_bytes", (json_int_t)fetch->file_bytes,
			"cache_hits", (json_int_t)fetch->cache_hits,
			"ranges", (json_int_t)fetch->ranges,
			"range_bytes", (json_int_t)fetch->range_bytes,
			"wait_s", fetch->wait_s));
	char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER)
			 : NULL;
	struct ch_error err;
	int rc = -1;
	if (text) {
		size_t n = strlen(text);
		text[n] = '\n'; /* its NUL byte becomes the newline */
		rc = ch_write_file_atomic(a->stats_json, text, n + 1, &err);
	} else {
		ch_error_set(&err, "out of memory");
	}
	if (rc < 0 && !a->stats_json_failed) {
		cmd_prefix_error(&err, "cannot write --stats-json '%s'",
				 a->stats_json);
		cmd_fail(&err);
		cmd_reported(&a->stats_json_err, err.kind);
	}
	a->stats_json_failed |= rc < 0;
	free(text);
	json_decref(doc);
}

/* "2 workers, prefetch 4", or what auto chose and from what. */
static void print_pool(const struct ch_stream_opts *o,
		       const struct ch_stream_stats *st)
{
	int none = st->workers == 0, pool_auto = o->workers == CH_AUTO;
	const char *how = pool_auto ? (none ? " (auto; the writer reads)"
					    : " (auto)")
				    : (none ? " (the writer reads)" : "");
	fprintf(stderr, "stream: %d %s%s, prefetch %d%s", st->workers,
		cmd_plural((uint64_t)st->workers, "worker", "workers"), how,
		st->prefetch, o->prefetch == CH_AUTO ? " (auto)" : "");
	if ((o->workers == CH_AUTO || o->prefetch == CH_AUTO) &&
	    st->tune_work_s > 0)
		fprintf(stderr, ": a batch took a worker %.2f ms, the consumer "
				"%.2f ms", st->tune_work_s * 1e3,
			st->tune_consume_s * 1e3);
	fputc('\n', stderr);
}

static void print_stats(const struct ch_stream_opts *o,
			const struct ch_stream_stats *st, int final)
{
	double t = st->elapsed_s > 0 ? st->elapsed_s : 1e-9;
	cmd_progress_clear(); /* the figures on lines of their own */
	char batches[CMD_COUNT_TEXT], samples[CMD_COUNT_TEXT];
	char size[CMD_SIZE_TEXT];
	fprintf(stderr,
		"stream: %s, %s, %s in %.2f s: "
		"%.1f batches/s, %.0f samples/s, %.1f MB/s\n",
		cmd_count_text(st->batches, "batch", "batches", batches),
		cmd_count_text(st->samples, "sample", "samples", samples),
		cmd_size_text(st->bytes, size), t, (double)st->batches / t,
		(double)st->samples / t, (double)st->bytes / 1e6 / t);
	if (!final)
		return;
	print_pool(o, st);
	fprintf(stderr,
		"stream: busy reading %.2f s, encoding %.2f s (summed over "
		"workers)\n"
		"stream: block cache: %llu hits, %llu misses; %llu %s read "
		"alone; %llu shard opens, index memory peak %.1f MB\n"
		"stream: the writer waited %.2f s on the workers and %.2f s on "
		"the consumer\n",
		st->read_s, st->encode_s,
		(unsigned long long)st->cache_hits,
		(unsigned long long)st->cache_misses,
		(unsigned long long)st->read_alone,
		st->read_alone == 1 ? "sample" : "samples",
		(unsigned long long)st->shard_opens,
		(double)st->index_peak / 1e6, st->wait_workers_s,
		st->wait_sink_s);
	if (o->ntransforms)
		fprintf(stderr, "stream: transforms: decoding %.2f s, cropping "
				"and resizing %.2f s, other ops %.2f s (part of "
				"reading)\n", st->decode_s, st->resample_s,
			st->convert_s);
	double input = input_share(st);
	if (input >= 50)
		fprintf(stderr, "stream: input-bound: the consumer waited on "
				"chute %.0f %% of the time\n", input);
	else
		fprintf(stderr, "stream: consumer-bound: chute waited on the "
				"consumer %.0f %% of the time\n", 100 - input);
}

/* How the frames went into a pipe (--stats): lent, or copied and why. */
static void print_pipe(const struct pipe_pages *p)
{
	if (p->off)
		return;
	fprintf(stderr, "stream: pipe: %llu of %llu frames lent to its reader "
			"(%s)\n", (unsigned long long)p->frames_lent,
		(unsigned long long)p->frames,
		p->asked    ? "--vmsplice"
		: p->marked ? "the reader marked the pipe"
			    : "not marked by its reader: copied");
}

static void on_stats(const struct ch_stream_stats *st, void *arg)
{
	struct stream_args *a = arg;
	if (a->stats)
		print_stats(&a->o, st, 0);
	if (a->stats_json)
		write_stats_json(a, st, NULL);
}

static void print_fetch(const struct ch_fetch_stats *f)
{
	char files[CMD_COUNT_TEXT], ranges[CMD_COUNT_TEXT];
	char file_size[CMD_SIZE_TEXT], range_size[CMD_SIZE_TEXT];

	if (!stream_is_remote(f))
		return;
	fprintf(stderr, "stream: remote: %s fetched (%s), %llu found in the "
			"cache, %s (%s); readers waited %.2f s on them "
			"(summed)\n",
		cmd_count_text(f->files, "file", "files", files),
		cmd_size_text(f->file_bytes, file_size),
		(unsigned long long)f->cache_hits,
		cmd_count_text(f->ranges, "range request", "range requests",
			       ranges),
		cmd_size_text(f->range_bytes, range_size), f->wait_s);
}

/* -o FILE goes to a temporary beside FILE, renamed into place when the
 * stream succeeds: a stream that fails (a full disk, a corrupt sample, a
 * signal) leaves FILE as it was.  A device or a FIFO is written in place.
 * Returns the fd, or -1 with err filled. */
static int open_output(struct sink *s, const char *path,
		       struct ch_error *err)
{
	struct stat st;
	if (!path) {
#ifdef F_SETPIPE_SZ
		/* a 1 MiB pipe moves batches ~3x faster than the default */
		fcntl(STDOUT_FILENO, F_SETPIPE_SZ, 1 << 20);
#endif
		return STDOUT_FILENO;
	}
	s->path = path;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
		if (fd < 0)
			ch_error_errno(err, errno, "cannot open '%s'", path);
		return fd;
	}
	if (asprintf(&s->tmp, "%s.tmp-%ld", path, (long)getpid()) < 0) {
		s->tmp = NULL;
		return ch_error_nomem(err);
	}
	int fd = open(s->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		ch_error_errno(err, errno, "cannot create '%s'", s->tmp);
		free(s->tmp);
		s->tmp = NULL; /* not ours to remove */
	}
	return fd;
}

/* Closes -o FILE: renamed into place if status is 0, else removed.
 * Returns status, or the status of the failure (reported) when FILE
 * cannot be written. */
static int close_output(struct sink *s, int status)
{
	struct ch_error err;
	int failed = s->tmp && status == 0 && fsync(s->fd) < 0, rc = 0;
	if ((close(s->fd) < 0 || failed) && status == 0)
		rc = ch_error_errno(&err, errno, "cannot write '%s'",
				    s->tmp ? s->tmp : s->path);
	if (s->tmp && status == 0 && rc == 0 && rename(s->tmp, s->path) < 0)
		rc = ch_error_errno(&err, errno, "cannot rename '%s' to '%s'",
				    s->tmp, s->path);
	if (rc < 0)
		status = cmd_fail(&err);
	if (s->tmp && status != 0)
		unlink(s->tmp);
	free(s->tmp);
	s->tmp = NULL;
	return status;
}

/* A local dataset, or a remote one through the remote cache; or the
 * mix of several. */
static int open_dataset(const struct stream_args *a, struct ch_dataset *ds,
			struct ch_error *err)
{
	struct ch_ref ref;
	if (a->mix.n)
		return stream_mix_open(&a->mix, a->remote_cache,
				       a->remote_cache_size, ds, err);
	if (ch_ref_parse(a->dataset, &ref, err) < 0)
		return -1;
	int rc = ch_ref_open_dataset(&ref, a->remote_cache,
				    a->remote_cache_size, ds, err);
	ch_ref_release(&ref);
	return rc;
}

/* A file an option replaces as the stream goes (ch_write_file_atomic)
 * that could not be written is refused before the first batch, not
 * after it. */
static int check_replaceable(const char *opt, const char *path,
			     struct ch_error *err)
{
	if (!path || ch_check_file_atomic(path, err) == 0)
		return 0;
	return cmd_prefix_error(err, "cannot write %s '%s'", opt, path);
}

/* The progress line of a stream into -o FILE (or of chute bench), on a
 * terminal: no consumer writes there, as a trainer reading standard
 * output would.  Counted in batches, out of the run's when the epochs
 * are counted. */
struct progress_sink {
	ch_progress_fn draw;
	struct ch_progress p;
	ch_batch_sink inner;
	void *inner_arg;
};

static int to_progress(const struct ch_batch_out *b, void *arg,
		       struct ch_error *err)
{
	struct progress_sink *s = arg;
	int rc = s->inner(b, s->inner_arg, err);
	if (rc == 0) {
		s->p.done++;
		s->draw(&s->p, NULL);
	}
	return rc;
}

/* Puts s in front of *put when a line is to be drawn. */
static void progress_wrap(const struct stream_args *a,
			  const struct ch_dataset *ds, int out_fd,
			  struct progress_sink *s, ch_batch_sink *put,
			  void **put_arg)
{
	struct ch_stream_count c;
	struct ch_error err = {0};
	uint64_t e = a->o.epochs;
	s->draw = (a->output || a->bench) && !a->shm.name && !isatty(out_fd)
			  ? cmd_progress()
			  : NULL;
	if (!s->draw)
		return;
	s->p = (struct ch_progress){ .phase = "streaming", .unit = "batches" };
	if (e && ch_stream_count(ds, &a->o, &c, &err) == 0 && e > c.epoch)
		s->p.total = c.batches_left + c.batches * (e - c.epoch - 1);
	s->inner = *put;
	s->inner_arg = *put_arg;
	*put = to_progress;
	*put_arg = s;
	s->draw(&s->p, NULL); /* at once, before the first batch */
}

/* --count: one JSON line, what an epoch of these options holds. */
static int print_count(const struct stream_args *a, struct ch_error *err)
{
	struct ch_dataset ds;
	struct ch_stream_count c;
	if (a->output || a->shm.name || a->state || a->rec.record ||
	    a->stats_json)
		return ch_error_usage(err, "--count prints one line and "
				      "streams nothing: it takes no -o, "
				      "--shm, --state, --record or "
				      "--stats-json");
	if (open_dataset(a, &ds, err) < 0)
		return -1;
	int rc = ch_stream_count(&ds, &a->o, &c, err);
	ch_dataset_release(&ds);
	if (rc < 0)
		return -1;
	printf("{\"id\":\"%s\",\"samples\":%llu,\"batches\":%llu,"
	       "\"epoch\":%llu,\"batches_left\":%llu}\n", c.id,
	       (unsigned long long)c.samples, (unsigned long long)c.batches,
	       (unsigned long long)c.epoch,
	       (unsigned long long)c.batches_left);
	return fflush(stdout) == 0 ? 0 : ch_error_errno(err, errno,
							"cannot write");
}

/* What the options ask that cannot be done, refused before the dataset
 * is opened. */
static int check_run(const struct stream_args *a, struct ch_error *err)
{
	if (check_replaceable("--state", a->state, err) < 0 ||
	    check_replaceable("--stats-json", a->stats_json, err) < 0 ||
	    check_replaceable("--record", a->rec.record, err) < 0 ||
	    shm_sink_check(&a->shm, a->output, a->o.format, err) < 0)
		return -1;
	/* jsonl is text; batch and tar frames would garble a terminal */
	if (!a->bench && !a->output && !a->shm.name &&
	    a->o.format != CH_FORMAT_JSONL &&
	    cmd_binary_to_terminal(a->force, a->o.format == CH_FORMAT_TAR
						   ? "a binary tar stream"
						   : "binary frames",
				   "pipe it, or -o FILE", err) < 0)
		return -1;
	if (a->vmsplice && a->shm.name)
		return ch_error_usage(err, "--vmsplice lends pages to a pipe; "
				      "--shm writes into shared memory: one or "
				      "the other");
	return 0;
}

int stream_run(struct stream_args *a, struct ch_stream_stats *st,
	       struct ch_fetch_stats *fetch)
{
	struct ch_dataset ds;
	struct ch_error err = {0};
	struct sink sink = {0};
	struct pipe_pages pages;
	ch_batch_sink put = a->shm.name ? shm_sink_put : to_sink;
	void *put_arg = a->shm.name ? (void *)&a->shm : &sink;
	struct state_sink state = { a->state, put, put_arg };
	struct progress_sink progress;
	int status = 0;
	if (a->count)
		return print_count(a, &err) < 0 ? cmd_fail(&err) : 0;
	if (check_run(a, &err) < 0 || open_dataset(a, &ds, &err) < 0)
		return cmd_fail(&err);
	sink.fd = -1;
	if (record_begin(&a->rec, &ds, a->dataset, &a->o, &err) < 0 ||
	    (!a->bench &&
	     (sink.fd = open_output(&sink, a->output, &err)) < 0)) {
		ch_dataset_release(&ds);
		return record_end(&a->rec, cmd_fail(&err));
	}
	/* cold: the pipe's reader copies each frame out, on its own CPU.
	 * Frames into a pipe come from its pool whether lent or not */
	struct ch_frame_memory lend = { pipe_pages_reserve,
					pipe_pages_reserve_at, &pages, 1 };
	if (sink.fd >= 0 && !a->shm.name) {
		pipe_pages_init(&pages, sink.fd, a->vmsplice);
		if (pages.off) { /* a file, a terminal: as without */
			pipe_pages_release(&pages);
		} else {
			sink.pages = &pages;
			a->o.frame_memory = &lend; /* frames made in its buffers */
		}
	}
	a->o.cancel = cmd_catch_signals();
	if (a->stats || a->stats_json) {
		a->o.on_stats = on_stats;
		a->o.stats_arg = a;
	}
	a->shm.cancel = a->o.cancel;
	if (a->shm.name) {
		/* warm: the trainer reads the ring where chute wrote it */
		a->shm.memory = (struct ch_frame_memory){
			shm_sink_reserve, shm_sink_reserve_at, &a->shm, 0
		};
		a->o.frame_memory = &a->shm.memory;
	}
	if (a->state) {
		put = to_state;
		put_arg = &state;
	}
	record_wrap(&a->rec, &put, &put_arg);
	progress_wrap(a, &ds, sink.fd, &progress, &put, &put_arg);
	if (ch_stream(&ds, &a->o, put, put_arg, st, &err) < 0)
		status = cmd_fail(&err);
	cmd_progress_clear();
	if (a->shm.name)
		status = shm_sink_end(&a->shm, status, err.msg);
	if (a->stats) {
		print_stats(&a->o, st, 1);
		if (sink.pages)
			print_pipe(sink.pages);
	}
	ch_dataset_fetch_stats(&ds, fetch);
	if (a->stats)
		print_fetch(fetch);
	if (a->stats_json)
		write_stats_json(a, st, fetch);
	if (st->skipped)
		fprintf(stderr, "chute stream: skipped %llu corrupt %s\n",
			(unsigned long long)st->skipped,
			cmd_plural(st->skipped, "sample", "samples"));
	if (sink.pages)
		pipe_pages_release(sink.pages);
	if (a->output)
		status = close_output(&sink, status);
	/* the stream itself went through: FILE is in place */
	if (a->stats_json_failed && status == 0)
		status = cmd_fail(&a->stats_json_err);
	ch_dataset_release(&ds);
	return record_end(&a->rec, status);
}

void stream_args_init(struct stream_args *a, int bench)
{
	memset(a, 0, sizeof(*a));
	ch_stream_opts_init(&a->o);
	a->bench = bench;
	a->rec.mix = &a->mix;
}

void stream_args_release(struct stream_args *a)
{
	free(a->transforms);
	a->transforms = NULL;
	free(a->datasets);
	a->datasets = NULL;
	stream_mix_release(&a->mix);
	record_release(&a->rec);
}

int cmd_stream(int argc, char **argv)
{
	struct stream_args a;
	struct ch_stream_stats st;
	struct ch_fetch_stats fetch;
	stream_args_init(&a, 0);
	int status = stream_parse_args(&a, &cmd_stream_spec, argc, argv);
	if (status != 0)
		status = cmd_parsed_status(status);
	else
		status = stream_run(&a, &st, &fetch);
	stream_args_release(&a);
	return status;
}
