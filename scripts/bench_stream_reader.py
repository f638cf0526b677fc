#!/usr/bin/python3
"""bench_stream_reader.py - the Python side of scripts/bench-stream.sh.

Builds the benchmark's data sets as tar files and plays the consumers whose
speed bench-stream.sh compares:

  fmnist-tar IDXDIR OUT.tar      Fashion-MNIST's train set from its gzipped
                                 IDX files: KEY.img (784 raw bytes), KEY.cls
                                 (the class as a decimal digit)
  tiny-tar OUT.tar --count N     N samples of one KEY.txt of 20-60 bytes,
                                 seeded: same N, same bytes
  read [--image-size 784]        reads chute stream's frames from stdin with
                                 chute_batch.py and touches every batch as a
                                 trainer would; prints the samples read, and
                                 the samples and seconds after the first
                                 batch (the steady state)
  dataloader IDXDIR --workers W  a PyTorch DataLoader over the IDX arrays,
                                 one sample per __getitem__, shuffled
  gather IDXDIR                  numpy: a permutation, then one fancy-index
                                 gather per batch (the in-process ceiling)

dataloader and gather load the arrays first (untimed), then run epochs
until --seconds have passed, --runs times, and print "SAMPLES SECONDS" of
the median run.  Every consumer touches a batch the same way (touch()), so
the figures differ only in how the batch got there.
"""

import argparse
import gzip
import io
import os
import random
import struct
import subprocess
import sys
import tarfile
import time

try:
    import debian_python  # next to this file when run or imported from scripts/
    debian_python.require("numpy")
except ModuleNotFoundError:
    pass
import numpy as np  # noqa: E402

IMAGE_MAGIC, LABEL_MAGIC = 0x803, 0x801
BATCH = 256


# --- data -------------------------------------------------------------------

def read_idx(path, magic):
    """The uint8 array of one gzipped IDX file (big-endian u32 header)."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    got, = struct.unpack_from(">I", raw, 0)
    if got != magic:
        sys.exit("bench_stream_reader: %s: magic 0x%x, expected 0x%x"
                 % (path, got, magic))
    ndim = magic & 0xff
    dims = struct.unpack_from(">%dI" % ndim, raw, 4)
    data = np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        sys.exit("bench_stream_reader: %s: %d bytes of data for shape %s"
                 % (path, data.size, dims))
    return data.reshape(dims)


def load_fmnist(idx_dir):
    """(images (n, 784) uint8, labels (n,) uint8) of the train set."""
    images = read_idx(os.path.join(idx_dir, "train-images-idx3-ubyte.gz"),
                      IMAGE_MAGIC)
    labels = read_idx(os.path.join(idx_dir, "train-labels-idx1-ubyte.gz"),
                      LABEL_MAGIC)
    if len(images) != len(labels):
        sys.exit("bench_stream_reader: %d images but %d labels"
                 % (len(images), len(labels)))
    # Copies: writable arrays, as torch.from_numpy wants them.
    return images.reshape(len(images), -1).copy(), labels.copy()


def add_member(tar, name, data):
    # Fixed metadata, so the same data gives the same tar.
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 0
    tar.addfile(info, io.BytesIO(data))


def fmnist_tar(a):
    images, labels = load_fmnist(a.idx_dir)
    with tarfile.open(a.out, "w", format=tarfile.USTAR_FORMAT) as tar:
        for i, (img, cls) in enumerate(zip(images, labels)):
            key = "train/%05d" % i
            add_member(tar, key + ".img", img.tobytes())
            add_member(tar, key + ".cls", b"%d" % cls)


def tiny_tar(a):
    rng = random.Random("tiny:%d" % a.seed)
    # 32 characters, so that random bytes map onto them evenly.
    letters = bytes(range(ord("a"), ord("z") + 1)) + b"     ."
    table = letters * (256 // len(letters))
    with tarfile.open(a.out, "w", format=tarfile.USTAR_FORMAT) as tar:
        for i in range(a.count):
            text = rng.randbytes(rng.randint(20, 60)).translate(table)
            add_member(tar, "%04d/%07d.txt" % (i // 10000, i), text)


# --- consumers --------------------------------------------------------------

def touch(images, labels):
    """What every consumer does with a batch: reads every pixel, makes the
    labels int64.  Returns a checksum so that nothing is optimised away."""
    return int(images.sum(dtype=np.uint64)) + int(labels.astype(np.int64)[-1])


def cls_labels(values, offsets, n):
    """The labels of a batch from its cls column (decimal text)."""
    if offsets[-1] == n:  # one digit each: no Python loop
        return values.astype(np.int64) - ord("0")
    return np.array([int(bytes(values[a:b]))
                     for a, b in zip(offsets[:-1], offsets[1:])], np.int64)


def read_frames(a):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import chute_batch
    samples, first, t_first = 0, 0, None
    for fr in chute_batch.frames(sys.stdin.buffer):
        n = fr.nsamples
        values, offsets = fr.columns["img"]
        if offsets[-1] != n * a.image_size:
            sys.exit("bench_stream_reader: batch %d.%d: img column of %d "
                     "bytes, not %d x %d" % (fr.epoch, fr.batch, offsets[-1],
                                             n, a.image_size))
        images = values.reshape(n, a.image_size)  # a view, no copy
        labels = cls_labels(*fr.columns["cls"], n)
        touch(images, labels)
        samples += n
        if t_first is None:  # the steady state starts after the first batch
            first, t_first = samples, time.perf_counter()
    t = time.perf_counter() - t_first if t_first is not None else 0.0
    print(samples, samples - first, "%.6f" % t)


def timed_runs(a, epoch):
    """Runs epoch() (which returns its samples) until a.seconds have passed,
    a.runs times after one warm-up epoch; prints the median run."""
    epoch()
    results = []
    for _ in range(a.runs):
        samples, t0 = 0, time.perf_counter()
        while True:
            samples += epoch()
            t = time.perf_counter() - t0
            if t >= a.seconds:
                break
        results.append((samples / t, samples, t))
    results.sort()
    _, samples, t = results[len(results) // 2]
    print(samples, "%.6f" % t)


def dataloader(a):
    import torch
    from torch.utils.data import DataLoader, Dataset
    images, labels = load_fmnist(a.idx_dir)

    class Arrays(Dataset):
        """The map-style Dataset of a tutorial: one sample per call."""

        def __len__(self):
            return len(images)

        def __getitem__(self, i):
            return (torch.from_numpy(images[i]),
                    torch.tensor(labels[i], dtype=torch.int64))

    loader = DataLoader(Arrays(), batch_size=BATCH, shuffle=True,
                        num_workers=a.workers,
                        persistent_workers=a.workers > 0)

    def epoch():
        n = 0
        for x, y in loader:
            touch(x.numpy(), y.numpy())
            n += len(x)
        return n

    timed_runs(a, epoch)


def gather(a):
    images, labels = load_fmnist(a.idx_dir)
    rng = np.random.default_rng(0)

    def epoch():
        perm = rng.permutation(len(images))
        for i in range(0, len(perm), BATCH):
            idx = perm[i:i + BATCH]
            touch(images[idx], labels[idx])
        return len(perm)

    timed_runs(a, epoch)


def first_byte(a):
    """Starts a.command and prints the milliseconds until its first bytes
    arrive: a pipe's reader sees the first batch then, however long the
    writer takes to stop afterwards."""
    t0 = time.perf_counter()
    p = subprocess.Popen(a.command, stdout=subprocess.PIPE)
    got = p.stdout.read(64)
    t = time.perf_counter() - t0
    p.kill()
    p.wait()
    if len(got) < 64:
        sys.exit("bench_stream_reader: %s wrote %d bytes" % (a.command[0],
                                                            len(got)))
    print("%.1f" % (t * 1e3))


def main():
    ap = argparse.ArgumentParser(prog="bench_stream_reader.py",
                                 description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("fmnist-tar")
    p.add_argument("idx_dir")
    p.add_argument("out")
    p.set_defaults(run=fmnist_tar)
    p = sub.add_parser("tiny-tar")
    p.add_argument("out")
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(run=tiny_tar)
    p = sub.add_parser("read")
    p.add_argument("--image-size", type=int, default=784)
    p.set_defaults(run=read_frames)
    p = sub.add_parser("first-byte")
    p.add_argument("command", nargs=argparse.REMAINDER)
    p.set_defaults(run=first_byte)
    for name, run in (("dataloader", dataloader), ("gather", gather)):
        p = sub.add_parser(name)
        p.add_argument("idx_dir")
        p.add_argument("--seconds", type=float, default=1.0)
        p.add_argument("--runs", type=int, default=3)
        if name == "dataloader":
            p.add_argument("--workers", type=int, default=0)
        p.set_defaults(run=run)
    a = ap.parse_args()
    a.run(a)


if __name__ == "__main__":
    main()
