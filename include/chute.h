/*
 * chute.h - the public API of libchute, all of it: one header per module
 * of lib/ (lib/README.md), each of which may be included on its own.
 * The conventions every function keeps (errors, ownership) are in
 * chute/common.h.
 *
 *   chute/common.h     the version, errors, hashes, buffers, progress,
 *                      verification's vocabulary, small utilities
 *   chute/shard.h      the shard file: reader, block cache, writer
 *   chute/store.h      bytes in a folder, over HTTP(S) or S3
 *   chute/transform.h  typed fields (dtypes)
 *   chute/version.h    manifests, datasets, splits, history, status, diff
 *   chute/stream.h     the order, streams, mixes, export, the --shm ring
 *   chute/pack.h       pack and merge
 *   chute/remote.h     push, pull, references, named remotes
 *   chute/check.h      verify and check
 *   chute/visual.h     check's HTML report, contact sheets
 *
 * chute/stream_options.h, the table of chute stream's options, and
 * chute_shm.h, the consumer side of the --shm ring, are included apart.
 */
#ifndef CHUTE_H
#define CHUTE_H

#include "chute/common.h"
#include "chute/shard.h"
#include "chute/store.h"
#include "chute/transform.h"
#include "chute/version.h"
#include "chute/stream.h"
#include "chute/pack.h"
#include "chute/remote.h"
#include "chute/check.h"
#include "chute/visual.h"

#endif
