#!/usr/bin/python3
"""bench_epoch.py - one side of scripts/bench-epoch.sh, in its own process.

    bench_epoch.py start
    bench_epoch.py decode SHARD...
    bench_epoch.py stream DATASET --chute PATH [--shm] [--epochs E]

start    imports what a stream side imports (numpy, chute) and prints the
         wall clock (time.time()) then: the shell, which noted the clock
         before starting the process, takes the difference.
decode   reads every block of the shards into memory, then decodes them
         all (zstd, as chute does, without the hash check) once on one
         thread and once spread over every core (a thread a core; zstd
         lets go of the GIL), and once more over every core keeping each
         block's output in fresh memory, as a stream's cache does (the
         kernel zeroes each new page); prints RAW_BYTES BLOCKS
         ONE_THREAD_S ALL_CORES_S ALL_CORES_KEPT_S.
stream   chute.Stream(DATASET, batch_size 256, shuffled, seed 1, E epochs
         in one pass, img: bytes u8 28x28, cls: int) through a pipe (or
         the shared-memory ring with --shm); the consumer takes each
         batch's arrays as numpy arrays (np.asarray: no copy), the least a
         trainer does.  Prints SAMPLES and the wall clock at the last
         batch of each epoch.

Exit status 0, or 2 when a side cannot run (a chute that fails raises
chute.StreamError).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import debian_python  # noqa: E402

debian_python.require("numpy")
debian_python.use_repo_package()
import numpy as np  # noqa: E402

import chute  # noqa: E402

BATCH = 256
TRANSFORMS = {"img": "bytes u8 28x28", "cls": "int"}


def start(a):
    print("%.6f" % time.time())


def decode(a):
    from concurrent.futures import ThreadPoolExecutor

    from chute.shard import Shard
    import zstandard
    frames = []
    for path in a.rest:
        s = Shard(path, verify=False)
        for offset, stored, raw, _hash, codec in s.blocks:
            if codec != 1:
                sys.exit("bench_epoch.py: %s: block codec %d, not plain zstd "
                         "(pack without -l 0 and --dict)" % (path, codec))
            frames.append((s.read(offset, stored), raw))
        s.close()
    raw_bytes = sum(raw for _, raw in frames)
    cores = os.cpu_count() or 1

    def run(k, step, keep=None):
        d = zstandard.ZstdDecompressor()
        for data, raw in frames[k::step]:
            out = d.decompress(data, max_output_size=raw)
            if keep is not None:
                keep.append(out)

    def all_cores(keep=None):
        with ThreadPoolExecutor(cores) as pool:
            t0 = time.perf_counter()
            list(pool.map(lambda k: run(k, cores, keep), range(cores)))
            return time.perf_counter() - t0

    t0 = time.perf_counter()
    run(0, 1)
    one = time.perf_counter() - t0
    reused = all_cores()
    kept = all_cores([])  # last: what it keeps is never given back
    print(raw_bytes, len(frames), "%.6f %.6f %.6f" % (one, reused, kept))


def stream(a):
    s = chute.Stream(a.dataset, batch_size=BATCH, epochs=a.epochs, seed=1,
                     transforms=TRANSFORMS, chute=a.chute, shm=a.shm)
    n, ends = 0, []
    for b in s:
        x, y = np.asarray(b["img"]), np.asarray(b["cls"])
        n += len(y)
        del x
        if b.last:
            ends.append(time.time())
    print(n, " ".join("%.6f" % t for t in ends))


def main():
    import argparse
    p = argparse.ArgumentParser(prog="bench_epoch.py")
    p.add_argument("side", choices=("start", "decode", "stream"))
    p.add_argument("rest", nargs="*")
    p.add_argument("--chute")
    p.add_argument("--shm", action="store_true")
    p.add_argument("--epochs", type=int, default=3)
    a = p.parse_args()
    if a.side == "stream":
        if len(a.rest) != 1 or not a.chute:
            p.error("stream takes one DATASET and --chute")
        a.dataset = a.rest[0]
    {"start": start, "decode": decode, "stream": stream}[a.side](a)


if __name__ == "__main__":
    main()
