/*
 * progress.c - the progress line of a long command, on standard error
 * when it is a terminal and -q was not given; nothing at all otherwise.
 *
 *   hashing: 3/8 shards, 1.20 GB/3.10 GB, 450 MB/s, eta 4s
 *
 * The library reports every so many things (a count, not a clock); the
 * line is redrawn at most ten times a second, at once when a phase
 * starts, and wiped before anything else is written to standard error.
 * One line per process: the state is this file's.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "chute/common.h"
#include "cmd.h"

#define REDRAW_S 0.1

static struct {
	pthread_mutex_t lock;
	int quiet;
	const char *phase;  /* of the last report, NULL before the first */
	uint64_t done, bytes; /* of the last report */
	double phase_start; /* ch_now() when the phase was first seen */
	double drawn_at;
	int width;	    /* characters on the line now, 0 if none */
} line = { .lock = PTHREAD_MUTEX_INITIALIZER };

void cmd_set_quiet(int quiet)
{
	line.quiet = quiet;
}

int cmd_quiet(void)
{
	return line.quiet;
}

/* "3/8 shards" or, for bytes, "1.20 GB/3.10 GB"; a total not known yet
 * is left out. */
static int put_count(char *buf, size_t size, const char *unit,
		     uint64_t done, uint64_t total)
{
	char a[CMD_SIZE_TEXT], b[CMD_SIZE_TEXT];
	int bytes = strcmp(unit, "bytes") == 0;
	const char *d = bytes ? cmd_size_text(done, a) : NULL;

	if (!total)
		return bytes ? snprintf(buf, size, "%s", d) :
			       snprintf(buf, size, "%llu %s",
					(unsigned long long)done, unit);
	if (bytes)
		return snprintf(buf, size, "%s/%s", d, cmd_size_text(total, b));
	return snprintf(buf, size, "%llu/%llu %s", (unsigned long long)done,
			(unsigned long long)total, unit);
}

/* The rate and time left: in bytes when the phase counts them (its
 * unit, or bytes beside it), else in its unit. */
static void put_rate(char *buf, size_t size, const struct ch_progress *p,
		     double elapsed)
{
	int unit_bytes = strcmp(p->unit, "bytes") == 0;
	int by_bytes = unit_bytes || p->total_bytes > 0;
	double done = by_bytes && !unit_bytes ? (double)p->bytes : (double)p->done;
	double total = by_bytes && !unit_bytes ? (double)p->total_bytes :
						 (double)p->total;
	double rate = elapsed > 0 ? done / elapsed : 0;
	char r[CMD_SIZE_TEXT], eta[CMD_SIZE_TEXT];

	/* "?" until there is a rate to tell the time left from */
	cmd_duration_text(rate > 0 && total >= done ? (total - done) / rate : -1,
			  eta);
	if (by_bytes)
		snprintf(buf, size, "%s/s, eta %s",
			 cmd_size_text((uint64_t)rate, r), eta);
	else
		snprintf(buf, size, "%.0f %s/s, eta %s", rate, p->unit, eta);
}

static void draw(const struct ch_progress *p, double now)
{
	char count[64], bytes[48] = "", rate[48];
	char a[CMD_SIZE_TEXT], b[CMD_SIZE_TEXT];
	int n;

	put_count(count, sizeof count, p->unit, p->done, p->total);
	if (p->total_bytes && strcmp(p->unit, "bytes") != 0)
		snprintf(bytes, sizeof bytes, ", %s/%s",
			 cmd_size_text(p->bytes, a),
			 cmd_size_text(p->total_bytes, b));
	put_rate(rate, sizeof rate, p, now - line.phase_start);
	n = fprintf(stderr, "\r%s: %s%s, %s", p->phase, count, bytes, rate);
	n -= 1; /* the \r */
	if (n < line.width) /* wipe what the longer line before left */
		fprintf(stderr, "%*s", line.width - n, "");
	if (n > line.width)
		line.width = n;
	fflush(stderr);
	line.drawn_at = now;
}

/* A ch_progress_fn.  A thread finding the line busy skips this report
 * rather than wait: another comes soon. */
static void on_progress(const struct ch_progress *p, void *arg)
{
	(void)arg;
	if (!p->phase || !p->unit || pthread_mutex_trylock(&line.lock) != 0)
		return;
	double now = ch_now();
	/* a phase named as the last one but counting from lower down is the
	 * same step over again (verify of a second dataset) */
	int new_phase = !line.phase || strcmp(line.phase, p->phase) != 0 ||
			p->done < line.done || p->bytes < line.bytes;
	if (new_phase)
		line.phase_start = now;
	line.phase = p->phase;
	line.done = p->done;
	line.bytes = p->bytes;
	if (new_phase || now - line.drawn_at >= REDRAW_S)
		draw(p, now);
	pthread_mutex_unlock(&line.lock);
}

ch_progress_fn cmd_progress(void)
{
	if (line.quiet || !isatty(STDERR_FILENO))
		return NULL;
	return on_progress;
}

void cmd_progress_clear(void)
{
	pthread_mutex_lock(&line.lock);
	if (line.width > 0) {
		fprintf(stderr, "\r%*s\r", line.width, "");
		fflush(stderr);
	}
	line.width = 0;
	pthread_mutex_unlock(&line.lock);
}
