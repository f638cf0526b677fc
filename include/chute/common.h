/*
 * chute/common.h - what every module shares (lib/common/): the version,
 * errors, hashes, buffers, progress, the vocabulary of verification and
 * small utilities.  chute.h includes it with every other module's header.
 *
 * Conventions: functions that can fail return 0 on success and -1 on
 * failure, filling a caller-owned struct ch_error with a message that says
 * what went wrong, why, and where (file, offset), and with the kind of
 * failure: CH_ERR_DATA when the data failed a check (a bad magic, header,
 * footer or index, a truncated file, a checksum or hash mismatch, a block
 * that does not decode), CH_ERR_USAGE, CH_ERR_IO, CH_ERR_MEMORY or
 * CH_ERR_INTERRUPTED otherwise.  The kind travels with the struct (copied
 * between threads, passed up through layers); cmd/ turns it into the exit
 * status in one place (1 for data, 2 for usage, I/O and memory, 128 + the
 * signal when interrupted).  The library never prints and never exits.
 * Objects are created by *_open / *_init and released by the matching
 * *_close / *_release / *_free; whoever created one owns it.
 */
#ifndef CHUTE_COMMON_H
#define CHUTE_COMMON_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>
#include <stdint.h>
#include <stdio.h>

/* The version: the one place it lives (README.md, "Releasing"). */
#define CH_VERSION "0.2.0"

/* ------------------------------------------------------------------ */
/* Errors                                                              */

/* What kind of failure an error is: what the caller can do about it. */
enum ch_error_kind {
	CH_ERR_IO,	    /* the system or the environment: a file, the
			       network, permissions, a full disk */
	CH_ERR_USAGE,	    /* the caller asked for something invalid:
			       options, arguments, names, specs */
	CH_ERR_DATA,	    /* the data failed a check: corrupt, truncated,
			       not what the manifest says */
	CH_ERR_MEMORY,	    /* out of memory, or a resource limit */
	CH_ERR_INTERRUPTED, /* stopped by a signal (a cancel flag) */
};

struct ch_error {
	char msg[1024];
	enum ch_error_kind kind; /* 0, CH_ERR_IO, in a zeroed struct */
	/* The caller's settings the failure concerns, or NULL: keys of
	 * static storage, each the name of a setting as chute's long
	 * option spells it ("seed", "index-memory"; several apart by a
	 * space).  setting: the one whose value is wrong; remedy: the one
	 * whose change would let the call through.  The message says what
	 * is wrong in the library's terms; the front end that reports it
	 * names the setting in its own (chute: "--seed: ...", "... (see
	 * --force)").  Every ch_error_* below clears both. */
	const char *setting, *remedy;
};

/* Formats a message into err (if not NULL), kind CH_ERR_IO (the most
 * common), and returns -1, so that `return ch_error_set(err, "...")` reads
 * naturally. */
int ch_error_set(struct ch_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Like ch_error_set, with ": strerror(errnum)" appended; kind CH_ERR_IO,
 * or CH_ERR_MEMORY for ENOMEM. */
int ch_error_errno(struct ch_error *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Like ch_error_set, each with its kind: data that failed a check
 * (corrupt, or not what the manifest says), a request of the caller's
 * that is invalid, a run stopped by its cancel flag, memory that ran
 * out. */
int ch_error_data(struct ch_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int ch_error_usage(struct ch_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int ch_error_interrupted(struct ch_error *err);	/* "interrupted" */
int ch_error_nomem(struct ch_error *err);	/* "out of memory" */

/* Name the setting err is about, or the one that would remedy it (the
 * keys of struct ch_error), on an error just filled; return -1:
 *	ch_error_usage(err, "%" PRIu64 " is above 2^63-1", seed);
 *	return ch_error_setting(err, "seed"); */
int ch_error_setting(struct ch_error *err, const char *key);
int ch_error_remedy(struct ch_error *err, const char *key);

/* ------------------------------------------------------------------ */
/* Hashes (XXH3)                                                        */

struct ch_hash128 {
	uint64_t high, low;
};

/* XXH3-64 of a buffer, seed 0. */
uint64_t ch_hash64(const void *data, size_t size);

/* XXH3-128 of a buffer, seed 0. */
struct ch_hash128 ch_hash128(const void *data, size_t size);

/* Writes the canonical (big-endian) 32-digit lowercase hex form, the one
 * `xxhsum -H2` prints, into out (33 bytes with the NUL). */
void ch_hash128_hex(struct ch_hash128 h, char out[33]);

/* Parses 32 hex digits; returns -1 on anything else. */
int ch_hash128_parse(const char *hex, struct ch_hash128 *out);

/* XXH3-128 of a whole file, read with large preads. */
int ch_hash128_file(const char *path, struct ch_hash128 *out,
		    uint64_t *size_out, struct ch_error *err);

/* ------------------------------------------------------------------ */
/* Growable byte buffer                                                 */

struct ch_buf {
	uint8_t *data;
	size_t len, cap;
};

int ch_buf_reserve(struct ch_buf *b, size_t cap, struct ch_error *err);
int ch_buf_append(struct ch_buf *b, const void *p, size_t n,
		  struct ch_error *err);
void ch_buf_release(struct ch_buf *b);

/* ------------------------------------------------------------------ */
/* Progress of long work                                                */

/* What a long call has done so far, for a progress display.  The call
 * goes through phases ("hashing", then "uploading"); in each, `done` of
 * `total` things counted in `unit` ("files", "shards", "samples",
 * "bytes") are done, and bytes of total_bytes of the data (0 and 0 when
 * the phase does not count bytes).  A total of 0 is not known yet.  The
 * strings are static. */
struct ch_progress {
	const char *phase, *unit;
	uint64_t done, total;
	uint64_t bytes, total_bytes;
};
/* Called from one thread at a time (not always the caller's), when a
 * phase starts, then every so many things done (a count, never a clock
 * read per sample), and once more when the phase ends: it must be quick
 * and must not call back into the library. */
typedef void (*ch_progress_fn)(const struct ch_progress *p, void *arg);

/* ------------------------------------------------------------------ */
/* Verification's vocabulary: what ch_verify (chute/check.h) and      */
/* ch_remote_verify (chute/remote.h) take and report, and what        */
/* common/problem.c does for both                                     */

enum ch_problem_kind {
	CH_PROBLEM_MANIFEST,	/* manifest id or content */
	CH_PROBLEM_MISSING,	/* shard listed but absent */
	CH_PROBLEM_UNEXPECTED,	/* .chs file present but not listed */
	CH_PROBLEM_SIZE,	/* file size differs from the manifest */
	CH_PROBLEM_FILE_HASH,	/* XXH3-128 differs from the manifest */
	CH_PROBLEM_STRUCTURE,	/* header, footer or index unreadable */
	CH_PROBLEM_BLOCK,	/* block hash or decoding */
	CH_PROBLEM_SAMPLE,	/* sample content hash (--deep) */
	CH_PROBLEM_COUNT,	/* sample counts disagree */
};

struct ch_problem {
	enum ch_problem_kind kind;
	const char *shard; /* path relative to the dataset, or NULL */
	int64_t block;	   /* -1 if not about a block */
	const char *key;   /* NULL if not about a sample */
	int64_t offset;	   /* byte offset in the shard, -1 if unknown */
	const char *message;
};

typedef void (*ch_problem_fn)(const struct ch_problem *p, void *arg);

struct ch_verify_opts {
	int deep;
	int jobs;
	/* parts > 0: verify part `part` (0 to parts - 1) of `parts` only:
	 * the shards whose index in the manifest is part modulo parts, and
	 * in part 0 the checks of the manifest, the split files and shards/
	 * as a whole, so that the parts together check everything once */
	uint64_t part, parts;
	ch_problem_fn on_problem; /* called from one thread at a time */
	void *arg;
	volatile sig_atomic_t *cancel;
	/* phases "hashing" (files) then "checking blocks" (blocks, the
	 * shards whose hash did not match, or all with deep); may be NULL */
	ch_progress_fn progress;
	void *progress_arg;
};

struct ch_verify_result {
	uint64_t shards, blocks, samples, bytes, problems;
};

/* ------------------------------------------------------------------ */
/* Small utilities shared by cmd/ and lib/                              */

/* Parses "123", "64K", "1.5M", "2G" (powers of 1024) into bytes. */
int ch_parse_size(const char *s, uint64_t *out);
/* Writes data under a temporary name beside path, fsyncs, renames it
 * into place and syncs the folder: readers see the old file or the new
 * one, never a part of either. */
int ch_write_file_atomic(const char *path, const char *data, size_t len,
			 struct ch_error *err);
/* Whether ch_write_file_atomic can replace path, as far as can be told
 * without writing: its folder exists and may be written in, and path is
 * no folder.  For options checked before a long run starts.  Returns 0,
 * or -1 with the reason alone in err (the caller names the path):
 * strerror's words, followed by " (its folder)" when the folder is at
 * fault. */
int ch_check_file_atomic(const char *path, struct ch_error *err);
/* Length of the well-formed UTF-8 sequence at p (overlong forms,
 * surrogates and code points past U+10FFFF refused), 0 if there is none;
 * the code point goes to *cp. */
size_t ch_utf8_len(const uint8_t *p, size_t left, uint32_t *cp);
/* The closest of names[0..n) to word within a Damerau distance of 2
 * (and less than word's length), for "did you mean"; NULL when none is
 * that close.  Words of more than 64 bytes match nothing. */
const char *ch_closest(const char *word, const char *const *names, size_t n);
/* Number of online CPUs, at least 1. */
int ch_cpu_count(void);
/* Seconds on the monotonic clock (CLOCK_MONOTONIC), for durations. */
double ch_now(void);
/* s[0..len) made safe for a terminal, as text output shows keys, field
 * names and paths: the backslash and every byte that is not printable
 * text (below 0x20, 0x7f, the C1 controls U+0080..U+009F, the bidi
 * controls U+061C, U+200E, U+200F, U+202A..U+202E and U+2066..U+2069,
 * anything not well-formed UTF-8) written C-style: \\, \n, \t, \r,
 * else \xHH a byte.
 * Writes at most size bytes with a NUL (like snprintf) and returns the
 * length of the whole escaped text. */
size_t ch_escape(char *out, size_t size, const char *s, size_t len);
/* text with the secrets of every URL in it shown as ***: what messages,
 * outputs and records show of a URL.  A password ("ci:***@h/x"), a
 * lone user name, which may be a token ("***@h/x"), and every value of
 * a query ("?X-Amz-Signature=***&token=***").  A URL runs to a blank
 * (or to the quote that opened it); its user part to the last '@' with
 * a '/' after it, whatever it holds (chute-remote(7), SECRETS); where a
 * '?' comes before that '@' all after "://" is ***.  Returns a
 * new string (caller frees), NULL when out of memory. */
char *ch_url_redact(const char *text);

/* n zeroed bytes, like calloc; from 2 MiB up on huge pages where the
 * kernel has them (common/pages.c), each touched a fault per 2 MiB instead
 * of 512, untouched ones unbacked.  Freed with ch_zeroed_free, same n. */
void *ch_zeroed_alloc(size_t n);
void ch_zeroed_free(void *p, size_t n);

#endif
