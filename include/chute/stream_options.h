/*
 * chute/stream_options.h - every option of chute stream, declared once.
 *
 * The table below is what chute stream's parser and --help, chute bench's
 * subset, the run record (--record, --replay), ch_stream_opts_init's
 * defaults and the message of a refused cursor are all made from: an
 * option is added, bounded or renamed here and nowhere else.
 *
 * CH_STREAM_OPTIONS(X) calls X once per option, in the order of
 * `chute stream --help` and of man/chute-stream.1:
 *
 *   X(ID, SHORT, NAME, ARG, TYPE, LIMITS, OWNER, FIELD, DEFAULT, HASH,
 *     BENCH, RECORD, HELP)
 *
 *   ID       the option as a C name: CH_STREAM_OPT_<ID>
 *   SHORT    its letter, or 0
 *   NAME     its long name without "--"
 *   ARG      the placeholder of its argument, NULL for a flag
 *   TYPE     how its argument is read:
 *              U64      a whole number within LIMITS
 *              SIZE     a size above 0 (K, M, G suffixes); SIZE0: or 0
 *              THREADS  N within LIMITS, or auto (stored as CH_AUTO, chute.h)
 *              NAME     one of LIMITS' names, stored as its index
 *              SET      a flag that stores 1; CLEAR: 0 (--no-drop-last)
 *              TEXT     the argument as given; LIST: each one, in order
 *              HELP     --help
 *   LIMITS   RANGE(MIN, MAX) for U64, NAMES("a", "b", ...) for NAME, else _
 *   OWNER    LIB: FIELD is a member of struct ch_stream_opts; CMD: the
 *            command keeps the value itself (FIELD is _)
 *   DEFAULT  what ch_stream_opts_init stores in FIELD (LIB); the help
 *            line says the same in words
 *   HASH     HASHED when the option enters the options hash of every
 *            cursor (lib/stream/order.c), so that a cursor made with
 *            another value is refused; else _
 *   BENCH    BENCH when chute bench takes the option too,
 *            BENCH_HELP("...") when it does with another help line, else _
 *   RECORD   RECORD(POSITION, "KEY") when the run record keeps the value,
 *            as "options"."KEY" in that position; else _.  An option
 *            whose FIELD a recorded option holds shapes the stream too
 *            (--no-drop-last): --replay refuses both.
 *   HELP     its line in --help
 *
 * The capitalised words of the columns are pasted onto prefixes by the
 * code that expands the table (CH_SO_...), never expanded on their own.
 */
#ifndef CHUTE_STREAM_OPTIONS_H
#define CHUTE_STREAM_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

/* clang-format off */
#define CH_STREAM_OPTIONS(X)                                                 \
	X(BATCH_SIZE, 'b', "batch-size", "N", U64, RANGE(1, 1u << 24),       \
	  LIB, batch_size, 256, HASHED, BENCH, RECORD(4, "batch_size"),      \
	  "samples per batch (default 256)")                                 \
	X(CACHE, 'c', "cache", "SIZE", SIZE0, _,                             \
	  LIB, cache, 256u << 20, _, BENCH, _,                               \
	  "decoded blocks kept in memory (default 256M)")                    \
	X(PRINT_COUNT, 0, "count", NULL, SET, _,                             \
	  CMD, _, 0, _, _, _,                                                \
	  "print an epoch's samples and batches as JSON and exit")           \
	X(DROP_LAST, 0, "drop-last", NULL, SET, _,                           \
	  LIB, drop_last, 0, HASHED, _, RECORD(5, "drop_last"),              \
	  "drop the last partial batch of each epoch (train)")               \
	X(EPOCHS, 'e', "epochs", "N", U64, RANGE(0, UINT64_MAX),             \
	  LIB, epochs, 1, _, BENCH_HELP("epochs to stream (default 1)"),     \
	  RECORD(7, "epochs"),                                               \
	  "epochs to stream, 0 for ever (default 1)")                        \
	X(FIELDS, 0, "fields", "A,B,...", TEXT, _,                           \
	  LIB, fields, 0, HASHED, _, RECORD(14, "fields"),                   \
	  "stream only these fields of each sample")                         \
	X(FORCE, 0, "force", NULL, SET, _,                                   \
	  CMD, _, 0, _, _, _,                                                \
	  "write batch or tar frames even to a terminal")                    \
	X(FORMAT, 'f', "format", "FORMAT", NAME,                             \
	  NAMES("batch", "jsonl", "tar"),                                    \
	  LIB, format, CH_FORMAT_BATCH, _, BENCH, RECORD(11, "format"),      \
	  "batch (default), jsonl or tar")                                   \
	X(HELP, 'h', "help", NULL, HELP, _,                                  \
	  CMD, _, 0, _, BENCH, _,                                            \
	  "show this help and exit")                                         \
	X(INDEX_MEMORY, 0, "index-memory", "SIZE", SIZE, _,                  \
	  LIB, index_memory, 256u << 20, _, BENCH, _,                        \
	  "open shard indexes kept in memory (default 256M)")                \
	X(MIX, 0, "mix", "'A=W,B=W,...'", TEXT, _,                           \
	  CMD, _, 0, _, _, _,                                                \
	  "mix the DATASETs in these proportions (see MIXING)")              \
	X(MIX_EPOCH, 0, "mix-epoch", "shortest|N|A", TEXT, _,                \
	  CMD, _, 0, _, _, _,                                                \
	  "a mix's epoch: shortest (default), N samples, a pass of A")       \
	X(MODE, 0, "mode", "MODE", NAME, NAMES("train", "eval"),             \
	  LIB, eval, 0, HASHED, BENCH, RECORD(6, "mode"),                    \
	  "train (default) or eval")                                         \
	X(NO_DROP_LAST, 0, "no-drop-last", NULL, CLEAR, _,                   \
	  LIB, drop_last, 0, _, _, _,                                        \
	  "keep the last partial batch, flagged (default)")                  \
	X(OUTPUT, 'o', "output", "FILE", TEXT, _,                            \
	  CMD, _, 0, _, _, _,                                                \
	  "write to FILE instead of standard output")                        \
	X(ON_ERROR, 0, "on-error", "WHAT", NAME, NAMES("fail", "skip"),      \
	  LIB, skip_corrupt, 0, _, _, RECORD(12, "on_error"),                \
	  "fail (default) or skip corrupt samples")                          \
	X(PIN, 0, "pin", NULL, SET, _,                                       \
	  CMD, _, 0, _, _, _,                                                \
	  "lock the --shm ring in memory (mlock)")                           \
	X(PREFETCH, 'p', "prefetch", "N|auto", THREADS, RANGE(1, 1024),      \
	  LIB, prefetch, CH_AUTO, _, BENCH, _,                               \
	  "batches prepared ahead (default auto: as measured)")              \
	X(QUIET, 'q', "quiet", NULL, SET, _,                                 \
	  CMD, _, 0, _, BENCH_HELP("no progress line on standard error"), _, \
	  "no progress line (drawn with -o FILE on a terminal)")             \
	X(RANK, 0, "rank", "R", U64, RANGE(0, 1u << 20),                     \
	  LIB, rank, 0, _, _, RECORD(8, "rank"),                             \
	  "this rank (default: $RANK, else 0)")                              \
	X(RECORD, 0, "record", "RUN", TEXT, _,                               \
	  CMD, _, 0, _, _, _,                                                \
	  "keep a run record in RUN: data, options, last cursor")            \
	X(REMOTE_CACHE, 0, "remote-cache", "DIR", TEXT, _,                   \
	  CMD, _, 0, _, BENCH, _,                                            \
	  "verified shards of remote datasets (default ~/.cache/chute)")     \
	X(REMOTE_CACHE_SIZE, 0, "remote-cache-size", "SIZE", SIZE, _,        \
	  CMD, _, 0, _, BENCH, _,                                            \
	  "most bytes the remote cache keeps (default 10G)")                 \
	X(REPLAY, 0, "replay", "RUN", TEXT, _,                               \
	  CMD, _, 0, _, _, _,                                                \
	  "stream the data and options of run record RUN again")             \
	X(RESUME, 0, "resume", "CURSOR|last", TEXT, _,                       \
	  LIB, resume, 0, _, _, _,                                           \
	  "continue after the batch of CURSOR (last: of --replay)")          \
	X(SEED, 0, "seed", "S", U64, RANGE(0, UINT64_MAX),                   \
	  LIB, seed, 0, HASHED, BENCH, RECORD(3, "seed"),                    \
	  "shuffle seed (default 0)")                                        \
	X(SHM, 0, "shm", "NAME", TEXT, _,                                    \
	  CMD, _, 0, _, _, _,                                                \
	  "frames into shared-memory ring /dev/shm/chute-NAME")              \
	X(SHUFFLE, 0, "shuffle", "MODE", NAME,                               \
	  NAMES("global", "window", "none"),                                 \
	  LIB, shuffle, CH_SHUFFLE_GLOBAL, HASHED, BENCH,                    \
	  RECORD(1, "shuffle"),                                              \
	  "global (default), window or none")                                \
	X(SLOT_SIZE, 0, "slot-size", "SIZE", SIZE, _,                        \
	  CMD, _, 0, _, _, _,                                                \
	  "bytes per --shm slot (default: first frame + 25 %)")              \
	X(SLOTS, 0, "slots", "K", U64, RANGE(1, 1024),                       \
	  CMD, _, 0, _, _, _,                                                \
	  "slots in the --shm ring (default 4)")                             \
	X(SOURCE_FIELD, 0, "source-field", "WHAT", NAME,                     \
	  NAMES("none", "index", "name"),                                    \
	  LIB, source_field, CH_SOURCE_FIELD_NONE, HASHED, _,                \
	  RECORD(15, "source_field"),                                        \
	  "none (default), index or name: a mix's field 'source'")           \
	X(SPLIT, 0, "split", "NAME", TEXT, _,                                \
	  LIB, split, 0, HASHED, BENCH, RECORD(0, "split"),                  \
	  "stream one split of the manifest (chute split)")                  \
	X(START_EPOCH, 0, "start-epoch", "E", U64, RANGE(0, UINT64_MAX),     \
	  LIB, start_epoch, 0, _, _, RECORD(13, "start_epoch"),              \
	  "first epoch, without --resume (default 0)")                       \
	X(STATE, 0, "state", "FILE", TEXT, _,                                \
	  CMD, _, 0, _, _, _,                                                \
	  "replace FILE with the cursor of each batch written")              \
	X(STATS, 0, "stats", NULL, SET, _,                                   \
	  CMD, _, 0, _, _, _,                                                \
	  "print where the time goes, every 5 s and at exit")                \
	X(STATS_JSON, 0, "stats-json", "FILE", TEXT, _,                      \
	  CMD, _, 0, _, _, _,                                                \
	  "replace FILE with the statistics as JSON, every 5 s")             \
	X(TRANSFORM, 0, "transform", "'FIELD: OP | ...'", LIST, _,           \
	  LIB, transforms, 0, HASHED, BENCH, RECORD(10, "transforms"),       \
	  "decode and augment FIELD in the workers (repeatable)")            \
	X(VMSPLICE, 0, "vmsplice", NULL, SET, _,                             \
	  CMD, _, 0, _, _, _,                                                \
	  "lend frames' pages to the output pipe (a reader that reads it)")  \
	X(WORKERS, 'w', "workers", "N|auto", THREADS, RANGE(0, 1024),        \
	  LIB, workers, CH_AUTO, _, BENCH, _,                                \
	  "reader threads (0: the writer reads; default auto)")              \
	X(WINDOW, 0, "window", "N", U64, RANGE(1, 1u << 20),                 \
	  LIB, window, 4, HASHED, BENCH, RECORD(2, "window"),                \
	  "shards per window (default 4)")                                   \
	X(WORLD_SIZE, 0, "world-size", "W", U64, RANGE(1, 1u << 20),         \
	  LIB, world, 1, _, _, RECORD(9, "world_size"),                      \
	  "number of ranks (default: $WORLD_SIZE, else 1)")
/* clang-format on */

#define CH_SO_ENUM(ID, ...) CH_STREAM_OPT_##ID,
enum ch_stream_option { CH_STREAM_OPTIONS(CH_SO_ENUM) CH_STREAM_OPT_COUNT };
#undef CH_SO_ENUM

/* The run record's "options" keys: RECORD positions 0 to this - 1. */
#define CH_STREAM_RECORD_KEYS 16

/* The columns, taken apart by the code that expands the table.  A
 * column's word is pasted onto a prefix here, so X passes it on as
 * written: CH_SO_MIN(LIMITS) is 1 for RANGE(1, 16), 0 for _. */
#define CH_SO_MIN(limits) CH_SO_MIN_##limits
#define CH_SO_MIN_RANGE(min, max) (min)
#define CH_SO_MIN_NAMES(...) 0
#define CH_SO_MIN__ 0
#define CH_SO_MAX(limits) CH_SO_MAX_##limits
#define CH_SO_MAX_RANGE(min, max) (max)
#define CH_SO_MAX_NAMES(...) 0
#define CH_SO_MAX__ 0
/* a NULL-terminated array of the names, or NULL */
#define CH_SO_NAMES(limits) CH_SO_NAMES_##limits
#define CH_SO_NAMES_RANGE(min, max) NULL
#define CH_SO_NAMES_NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define CH_SO_NAMES__ NULL
/* 1 for HASHED, else 0 */
#define CH_SO_HASHED(hash) CH_SO_HASHED_##hash
#define CH_SO_HASHED_HASHED 1
#define CH_SO_HASHED__ 0
/* chute bench's help line for the option: NULL when it does not take
 * it, "" when the line is HELP */
#define CH_SO_BENCH(bench) CH_SO_BENCH_##bench
#define CH_SO_BENCH_BENCH ""
#define CH_SO_BENCH_BENCH_HELP(help) (help)
#define CH_SO_BENCH__ NULL
/* the record's position for the option and its key: -1 and NULL when
 * the record does not keep it */
#define CH_SO_RECORD_AT(record) CH_SO_RECORD_AT_##record
#define CH_SO_RECORD_AT_RECORD(at, key) (at)
#define CH_SO_RECORD_AT__ (-1)
#define CH_SO_RECORD_KEY(record) CH_SO_RECORD_KEY_##record
#define CH_SO_RECORD_KEY_RECORD(at, key) (key)
#define CH_SO_RECORD_KEY__ NULL

#endif
