#!/usr/bin/python3
"""bench_dataset.py - one side of scripts/bench-dataset.sh, in its own process.

    bench_dataset.py SIDE DATA [--epochs E]

Random access through torch's DataLoader, as a trainer with a map-style
dataset does it: DataLoader(ds, batch_size=256, num_workers=0,
sampler=RandomSampler(ds), collate_fn=...), E epochs (default 3).

DATA is a folder with train/ (Fashion-MNIST packed by chute pack, the
defaults) and train-{images,labels}.npy (the same 60,000 samples as
arrays).  Sides:

  arrays   a per-sample torch Dataset over the numpy arrays, loaded into
           memory before the clock starts: __getitem__ returns
           (images[i], labels[i]); torch's default collate (the baseline)
  dataset  chute.Dataset(DATA/train) with its default options, collate_fn
           chute.collate({"img": "bytes u8 28x28", "cls": "int"},
           as_torch=True)

Both loaders hand out torch tensors; the consumer does nothing more than
count the batch's labels.  Prints one line: SAMPLES FIRST_EPOCH_S
STEADY_SAMPLES STEADY_S, where FIRST_EPOCH_S runs from making the dataset
(after the imports and, for arrays, np.load) to the end of its first epoch
(chute.Dataset decodes its blocks in it) and STEADY_* cover the epochs
after the first.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import debian_python  # noqa: E402

debian_python.require("numpy", "torch", "zstandard", "xxhash")
debian_python.use_repo_package()
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset, RandomSampler  # noqa: E402

import chute  # noqa: E402

BATCH = 256


class Arrays(Dataset):
    """The baseline: one sample per __getitem__, from arrays in memory."""

    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]


def arrays(data):
    images = np.load(os.path.join(data, "train-images.npy"))
    labels = np.load(os.path.join(data, "train-labels.npy"))
    return lambda: (Arrays(images, labels), None)


def dataset(data):
    to_batch = chute.collate({"img": "bytes u8 28x28", "cls": "int"},
                             as_torch=True)
    return lambda: (chute.Dataset(os.path.join(data, "train")), to_batch)


def measure(make, epochs):
    """Times make()'s dataset through a DataLoader: (samples, first
    epoch s, steady samples, steady s)."""
    t0 = time.perf_counter()
    ds, collate_fn = make()
    kw = {} if collate_fn is None else {"collate_fn": collate_fn}
    loader = DataLoader(ds, batch_size=BATCH, num_workers=0,
                        sampler=RandomSampler(ds), **kw)
    n = steady = 0
    for e in range(epochs):
        for batch in loader:
            labels = batch["cls"] if isinstance(batch, dict) else batch[1]
            n += len(labels)
            if e:
                steady += len(labels)
        if e == 0:
            t1 = time.perf_counter()
    return n, t1 - t0, steady, time.perf_counter() - t1


SIDES = {"arrays": arrays, "dataset": dataset}


def main():
    ap = argparse.ArgumentParser(prog="bench_dataset.py")
    ap.add_argument("side", choices=sorted(SIDES))
    ap.add_argument("data")
    ap.add_argument("--epochs", type=int, default=3)
    a = ap.parse_args()
    if a.epochs < 2:
        ap.error("--epochs must be 2 or more (the first is timed apart)")
    torch.set_num_threads(1)
    torch.manual_seed(1)
    n, first, steady, steady_s = measure(SIDES[a.side](a.data), a.epochs)
    print(n, "%.4f" % first, steady, "%.4f" % steady_s)


if __name__ == "__main__":
    main()
