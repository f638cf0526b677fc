/*
 * chute/stream_options.h - the options of struct ch_stream_opts that the
 * library itself reads its table for: their defaults
 * (ch_stream_opts_init) and the options hash of every cursor.
 *
 * How each is spelled, parsed, helped and recorded on the command line is
 * cmd/'s (cmd/stream_opts.h, whose rows name the same members; the unit
 * test tests/unit/test_stream_options.c holds the two tables together).
 *
 * CH_STREAM_OPTIONS(X) calls X once per member, in the order of
 * `chute stream --help`:
 *
 *   X(NAME, FIELD, DEFAULT, HASH)
 *
 *   NAME     the option's long name without "--"
 *   FIELD    its member of struct ch_stream_opts
 *   DEFAULT  what ch_stream_opts_init stores there
 *   HASH     HASHED when the option enters the options hash of every
 *            cursor (lib/stream/order.c), so that a cursor made with
 *            another value is refused; else _
 */
#ifndef CHUTE_STREAM_OPTIONS_H
#define CHUTE_STREAM_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

/* clang-format off */
#define CH_STREAM_OPTIONS(X)                                                 \
	X("batch-size", batch_size, 256, HASHED)                             \
	X("cache", cache, 256u << 20, _)                                     \
	X("drop-last", drop_last, 0, HASHED)                                 \
	X("epochs", epochs, 1, _)                                            \
	X("fields", fields, 0, HASHED)                                       \
	X("format", format, CH_FORMAT_BATCH, _)                              \
	X("index-memory", index_memory, 256u << 20, _)                       \
	X("mode", eval, 0, HASHED)                                           \
	X("on-error", skip_corrupt, 0, _)                                    \
	X("prefetch", prefetch, CH_AUTO, _)                                  \
	X("rank", rank, 0, _)                                                \
	X("resume", resume, 0, _)                                            \
	X("seed", seed, 0, HASHED)                                           \
	X("shuffle", shuffle, CH_SHUFFLE_GLOBAL, HASHED)                     \
	X("source-field", source_field, CH_SOURCE_FIELD_NONE, HASHED)        \
	X("split", split, 0, HASHED)                                         \
	X("start-epoch", start_epoch, 0, _)                                  \
	X("transform", transforms, 0, HASHED)                                \
	X("workers", workers, CH_AUTO, _)                                    \
	X("window", window, 4, HASHED)                                       \
	X("world-size", world, 1, _)
/* clang-format on */

/* 1 for HASHED, else 0 (the HASH column's word pasted on a prefix) */
#define CH_SO_HASHED(hash) CH_SO_HASHED_##hash
#define CH_SO_HASHED_HASHED 1
#define CH_SO_HASHED__ 0

#endif
