/*
 * bench.c - chute bench: a stream into nothing, and the busy time of each
 * of its stages.
 */
#include <stdio.h>
#include <string.h>

#include "chute/stream.h"
#include "cmd.h"
#include "stream.h"
#include "stream_opts.h"

static const char *const bench_usage[] = {
	"bench [OPTIONS] DATASET",
	NULL,
};

/* The options that shape and feed the stream: those the table of
 * stream_rows.h marks BENCH; the datasets and what is taken as chute
 * stream's. */
const struct cmd_spec cmd_bench_spec = {
	.name = "bench",
	.summary = "measure where the time of a stream goes",
	.usage = bench_usage,
	.opts = bench_cmd_opts,
	.operand = stream_add_dataset,
	.taken = stream_option_taken,
	.extra = "Streams DATASET into nothing with the stream options given\n"
		 "and prints the busy time of each stage and the one that\n"
		 "limits throughput.\n",
};

/* Below this, thread starts and first reads outweigh the steady state
 * that the shares are meant to show: no stage is named. */
#define BENCH_MIN_S 0.1
#define BENCH_MIN_BATCHES 10

/* "1.18 s", or for a short run "0.713 ms" rather than "0.00 s". */
static const char *duration(double t, char buf[32])
{
	if (t >= 0.995)
		snprintf(buf, 32, "%.2f s", t);
	else
		snprintf(buf, 32, "%.3g ms", t * 1e3);
	return buf;
}

/* The stage that limits throughput: the writer waits on the workers when
 * they are the bottleneck; among them, reading (with decompression) or
 * encoding takes the larger share of their time. */
static const char *limit_of(const struct ch_stream_stats *st,
			    const struct ch_fetch_stats *f, double capacity)
{
	double busy = st->read_s + st->encode_s;
	if (st->workers > 0 && busy / capacity < 0.5)
		return "the writer (one thread)";
	if (stream_is_remote(f) && f->wait_s > st->read_s / 2)
		return "fetching from the remote (a warm cache, or --shuffle "
		       "window with more --window)";
	return st->read_s >= st->encode_s
		       ? "read + decompress (add workers or cache)"
		       : "encode (add workers)";
}

static void print_bench(const struct ch_stream_stats *st,
			const struct ch_fetch_stats *f)
{
	double t = st->elapsed_s > 0 ? st->elapsed_s : 1e-9;
	/* with no workers the writer reads: one thread's time */
	double capacity = t * (st->workers > 0 ? st->workers : 1);
	char batches[CMD_COUNT_TEXT], samples[CMD_COUNT_TEXT];
	char size[CMD_SIZE_TEXT], took[32];
	printf("chute bench: %s, %s, %s in %s\n%-22s %10s %9s\n",
	       cmd_count_text(st->batches, "batch", "batches", batches),
	       cmd_count_text(st->samples, "sample", "samples", samples),
	       cmd_size_text(st->bytes, size), duration(t, took), "stage",
	       "busy s", "of time");
	printf("%-22s %10.3f %8.0f %%\n", "read + decompress", st->read_s,
	       100 * st->read_s / capacity);
	if (st->decode_s + st->resample_s + st->convert_s > 0) {
		printf("%-22s %10.3f %8.0f %%\n", "  transform: decode",
		       st->decode_s, 100 * st->decode_s / capacity);
		printf("%-22s %10.3f %8.0f %%\n", "  transform: resize",
		       st->resample_s, 100 * st->resample_s / capacity);
		printf("%-22s %10.3f %8.0f %%\n", "  transform: other",
		       st->convert_s, 100 * st->convert_s / capacity);
	}
	if (stream_is_remote(f))
		printf("%-22s %10.3f %8.0f %%\n", "  fetch from remote",
		       f->wait_s, 100 * f->wait_s / capacity);
	printf("%-22s %10.3f %8.0f %%\n", "encode", st->encode_s,
	       100 * st->encode_s / capacity);
	printf("%-22s %10.3f %8.0f %%\n", "writer waiting", st->wait_workers_s,
	       100 * st->wait_workers_s / t);
	printf("throughput: %.0f samples/s, %.1f MB/s with %d %s, "
	       "prefetch %d\n", (double)st->samples / t,
	       (double)st->bytes / 1e6 / t, st->workers,
	       cmd_plural((uint64_t)st->workers, "worker", "workers"),
	       st->prefetch);
	if (t < BENCH_MIN_S || st->batches < BENCH_MIN_BATCHES)
		printf("limiting stage: not measured: %s in %s is too short to "
		       "tell (%.1f s and %d batches at least): stream more "
		       "epochs (-e N) or a larger dataset\n",
		       batches, took, BENCH_MIN_S, BENCH_MIN_BATCHES);
	else
		printf("limiting stage: %s\n", limit_of(st, f, capacity));
}

int cmd_bench(int argc, char **argv)
{
	struct stream_args a;
	struct ch_stream_stats st;
	struct ch_fetch_stats fetch;
	stream_args_init(&a, 1);
	int status = stream_parse_args(&a, &cmd_bench_spec, argc, argv);
	if (status != 0) {
		status = cmd_parsed_status(status);
	} else {
		status = stream_run(&a, &st, &fetch);
		if (status == 0)
			print_bench(&st, &fetch);
	}
	stream_args_release(&a);
	return status;
}
