/*
 * stream_opts.h - every option of chute stream, declared once, and what
 * chute bench and chute preview take of them.
 *
 * The table below is what chute stream's and chute bench's option tables
 * (the rows cmd_parse reads and --help prints), chute preview's share of
 * them, the run record (--record, --replay) and the unit test of the
 * defaults are made from: an option is added, bounded or renamed here
 * and nowhere else.  The library's part (the defaults of struct
 * ch_stream_opts, the options hash of cursors) is
 * include/chute/stream_options.h, by member.
 *
 * STREAM_OPTIONS(X) calls X once per option, in the order of
 * `chute stream --help` and of man/chute-stream.1:
 *
 *   X(ID, SHORT, NAME, ARG, TYPE, LIMITS, OWNER, FIELD, BENCH, RECORD,
 *     HELP)
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
 *              HELP     --help; QUIET: -q
 *   LIMITS   RANGE(MIN, MAX) for U64 and THREADS, NAMES("a", "b", ...)
 *            for NAME, else _
 *   OWNER    LIB: FIELD is a member of struct ch_stream_opts; CMD: of
 *            struct stream_args (stream.h), the command's own
 *   BENCH    BENCH when chute bench takes the option too,
 *            BENCH_HELP("...") when it does with another help line, else _
 *   RECORD   RECORD(POSITION, "KEY") when the run record keeps the value,
 *            as "options"."KEY" in that position; else _.  An option
 *            whose FIELD a recorded option holds shapes the stream too
 *            (--no-drop-last): --replay refuses both.
 *   HELP     its line in --help
 *
 * The capitalised words of the columns are pasted onto prefixes by the
 * code that expands the table (STREAM_...), never expanded on their own.
 * This header holds macros only: tests/unit includes it.
 */
#ifndef CHUTE_STREAM_OPTS_ROWS_H
#define CHUTE_STREAM_OPTS_ROWS_H

/* clang-format off */
#define STREAM_OPTIONS(X)                                                    \
	X(BATCH_SIZE, 'b', "batch-size", "N", U64, RANGE(1, 1u << 24),       \
	  LIB, batch_size, BENCH, RECORD(4, "batch_size"),                   \
	  "samples per batch (default 256)")                                 \
	X(CACHE, 'c', "cache", "SIZE", SIZE0, _,                             \
	  LIB, cache, BENCH, _,                                              \
	  "decoded blocks kept in memory (default 256M)")                    \
	X(PRINT_COUNT, 0, "count", NULL, SET, _,                             \
	  CMD, count, _, _,                                                  \
	  "print an epoch's samples and batches as JSON and exit")           \
	X(DROP_LAST, 0, "drop-last", NULL, SET, _,                           \
	  LIB, drop_last, _, RECORD(5, "drop_last"),                         \
	  "drop the last partial batch of each epoch (train)")               \
	X(EPOCHS, 'e', "epochs", "N", U64, RANGE(0, UINT64_MAX),             \
	  LIB, epochs, BENCH_HELP("epochs to stream (default 1)"),           \
	  RECORD(7, "epochs"),                                               \
	  "epochs to stream, 0 for ever (default 1)")                        \
	X(FIELDS, 0, "fields", "A,B,...", TEXT, _,                           \
	  LIB, fields, _, RECORD(14, "fields"),                              \
	  "stream only these fields of each sample")                         \
	X(FORCE, 0, "force", NULL, SET, _,                                   \
	  CMD, force, _, _,                                                  \
	  "write batch or tar frames even to a terminal")                    \
	X(FORMAT, 'f', "format", "FORMAT", NAME,                             \
	  NAMES("batch", "jsonl", "tar"),                                    \
	  LIB, format, BENCH, RECORD(11, "format"),                          \
	  "batch (default), jsonl or tar")                                   \
	X(HELP, 'h', "help", NULL, HELP, _,                                  \
	  CMD, _, BENCH, _,                                                  \
	  "show this help and exit")                                         \
	X(INDEX_MEMORY, 0, "index-memory", "SIZE", SIZE, _,                  \
	  LIB, index_memory, BENCH, _,                                       \
	  "open shard indexes kept in memory (default 256M)")                \
	X(MIX, 0, "mix", "'A=W,B=W,...'", TEXT, _,                           \
	  CMD, mix.text, _, _,                                               \
	  "mix the DATASETs in these proportions (see MIXING)")              \
	X(MIX_EPOCH, 0, "mix-epoch", "shortest|N|A", TEXT, _,                \
	  CMD, mix.epoch, _, _,                                              \
	  "a mix's epoch: shortest (default), N samples, a pass of A")       \
	X(MODE, 0, "mode", "MODE", NAME, NAMES("train", "eval"),             \
	  LIB, eval, BENCH, RECORD(6, "mode"),                               \
	  "train (default) or eval")                                         \
	X(NO_DROP_LAST, 0, "no-drop-last", NULL, CLEAR, _,                   \
	  LIB, drop_last, _, _,                                              \
	  "keep the last partial batch, flagged (default)")                  \
	X(OUTPUT, 'o', "output", "FILE", TEXT, _,                            \
	  CMD, output, _, _,                                                 \
	  "write to FILE instead of standard output")                        \
	X(ON_ERROR, 0, "on-error", "WHAT", NAME, NAMES("fail", "skip"),      \
	  LIB, skip_corrupt, _, RECORD(12, "on_error"),                      \
	  "fail (default) or skip corrupt samples")                          \
	X(PIN, 0, "pin", NULL, SET, _,                                       \
	  CMD, shm.pin, _, _,                                                \
	  "lock the --shm ring in memory (mlock)")                           \
	X(PREFETCH, 'p', "prefetch", "N|auto", THREADS, RANGE(1, 1024),      \
	  LIB, prefetch, BENCH, _,                                           \
	  "batches prepared ahead (default auto: as measured)")              \
	X(QUIET, 'q', "quiet", NULL, QUIET, _,                               \
	  CMD, _, BENCH_HELP("no progress line on standard error"), _,       \
	  "no progress line (drawn with -o FILE on a terminal)")             \
	X(RANK, 0, "rank", "R", U64, RANGE(0, 1u << 20),                     \
	  LIB, rank, _, RECORD(8, "rank"),                                   \
	  "this rank (default: $RANK, else 0)")                              \
	X(RECORD, 0, "record", "RUN", TEXT, _,                               \
	  CMD, rec.record, _, _,                                             \
	  "keep a run record in RUN: data, options, last cursor")            \
	X(REMOTE_CACHE, 0, "remote-cache", "DIR", TEXT, _,                   \
	  CMD, remote_cache, BENCH, _,                                       \
	  "verified shards of remote datasets (default ~/.cache/chute)")     \
	X(REMOTE_CACHE_SIZE, 0, "remote-cache-size", "SIZE", SIZE, _,        \
	  CMD, remote_cache_size, BENCH, _,                                  \
	  "most bytes the remote cache keeps (default 10G)")                 \
	X(REPLAY, 0, "replay", "RUN", TEXT, _,                               \
	  CMD, rec.replay, _, _,                                             \
	  "stream the data and options of run record RUN again")             \
	X(RESUME, 0, "resume", "CURSOR|last", TEXT, _,                       \
	  LIB, resume, _, _,                                                 \
	  "continue after the batch of CURSOR (last: of --replay)")          \
	X(SEED, 0, "seed", "S", U64, RANGE(0, UINT64_MAX),                   \
	  LIB, seed, BENCH, RECORD(3, "seed"),                               \
	  "shuffle seed (default 0)")                                        \
	X(SHM, 0, "shm", "NAME", TEXT, _,                                    \
	  CMD, shm.name, _, _,                                               \
	  "frames into shared-memory ring /dev/shm/chute-NAME")              \
	X(SHUFFLE, 0, "shuffle", "MODE", NAME,                               \
	  NAMES("global", "window", "none"),                                 \
	  LIB, shuffle, BENCH, RECORD(1, "shuffle"),                         \
	  "global (default), window or none")                                \
	X(SLOT_SIZE, 0, "slot-size", "SIZE", SIZE, _,                        \
	  CMD, shm.slot_size, _, _,                                          \
	  "bytes per --shm slot (default: first frame + 25 %)")              \
	X(SLOTS, 0, "slots", "K", U64, RANGE(1, 1024),                       \
	  CMD, shm.slots, _, _,                                              \
	  "slots in the --shm ring (default 4)")                             \
	X(SOURCE_FIELD, 0, "source-field", "WHAT", NAME,                     \
	  NAMES("none", "index", "name"),                                    \
	  LIB, source_field, _, RECORD(15, "source_field"),                  \
	  "none (default), index or name: a mix's field 'source'")           \
	X(SPLIT, 0, "split", "NAME", TEXT, _,                                \
	  LIB, split, BENCH, RECORD(0, "split"),                             \
	  "stream one split of the manifest (chute split)")                  \
	X(START_EPOCH, 0, "start-epoch", "E", U64, RANGE(0, UINT64_MAX),     \
	  LIB, start_epoch, _, RECORD(13, "start_epoch"),                    \
	  "first epoch, without --resume (default 0)")                       \
	X(STATE, 0, "state", "FILE", TEXT, _,                                \
	  CMD, state, _, _,                                                  \
	  "replace FILE with the cursor of each batch written")              \
	X(STATS, 0, "stats", NULL, SET, _,                                   \
	  CMD, stats, _, _,                                                  \
	  "print where the time goes, every 5 s and at exit")                \
	X(STATS_JSON, 0, "stats-json", "FILE", TEXT, _,                      \
	  CMD, stats_json, _, _,                                             \
	  "replace FILE with the statistics as JSON, every 5 s")             \
	X(TRANSFORM, 0, "transform", "'FIELD: OP | ...'", LIST, _,           \
	  LIB, transforms, BENCH, RECORD(10, "transforms"),                  \
	  "decode and augment FIELD in the workers (repeatable)")            \
	X(VMSPLICE, 0, "vmsplice", NULL, SET, _,                             \
	  CMD, vmsplice, _, _,                                               \
	  "lend frames' pages to the pipe, marked by its reader or not")       \
	X(WORKERS, 'w', "workers", "N|auto", THREADS, RANGE(0, 1024),        \
	  LIB, workers, BENCH, _,                                            \
	  "reader threads (0: the writer reads; default auto)")              \
	X(WINDOW, 0, "window", "N", U64, RANGE(1, 1u << 20),                 \
	  LIB, window, BENCH, RECORD(2, "window"),                           \
	  "shards per window (default 4)")                                   \
	X(WORLD_SIZE, 0, "world-size", "W", U64, RANGE(1, 1u << 20),         \
	  LIB, world, _, RECORD(9, "world_size"),                            \
	  "number of ranks (default: $WORLD_SIZE, else 1)")
/* clang-format on */

#define STREAM_ENUM(ID, ...) CH_STREAM_OPT_##ID,
enum ch_stream_option { STREAM_OPTIONS(STREAM_ENUM) CH_STREAM_OPT_COUNT };
#undef STREAM_ENUM

/* The run record's "options" keys: RECORD positions 0 to this - 1. */
#define CH_STREAM_RECORD_KEYS 16

/* The columns, taken apart by the code that expands the table.  A
 * column's word is pasted onto a prefix here, so X passes it on as
 * written: STREAM_MIN(LIMITS) is 1 for RANGE(1, 16), 0 for _. */
#define STREAM_MIN(limits) STREAM_MIN_##limits
#define STREAM_MIN_RANGE(min, max) (min)
#define STREAM_MIN_NAMES(...) 0
#define STREAM_MIN__ 0
#define STREAM_MAX(limits) STREAM_MAX_##limits
#define STREAM_MAX_RANGE(min, max) (max)
#define STREAM_MAX_NAMES(...) 0
#define STREAM_MAX__ 0
/* a NULL-terminated array of the names, or NULL */
#define STREAM_NAMES(limits) STREAM_NAMES_##limits
#define STREAM_NAMES_RANGE(min, max) NULL
#define STREAM_NAMES_NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define STREAM_NAMES__ NULL
/* the record's position for the option and its key: -1 and NULL when
 * the record does not keep it */
#define STREAM_RECORD_AT(record) STREAM_RECORD_AT_##record
#define STREAM_RECORD_AT_RECORD(at, key) (at)
#define STREAM_RECORD_AT__ (-1)
#define STREAM_RECORD_KEY(record) STREAM_RECORD_KEY_##record
#define STREAM_RECORD_KEY_RECORD(at, key) (key)
#define STREAM_RECORD_KEY__ NULL

#endif
