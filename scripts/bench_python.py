#!/usr/bin/python3
"""bench_python.py - one side of scripts/bench-python.sh, in its own process.

    bench_python.py SIDE DATA [--epochs E] [--chute PATH] [--workers W]

W: the DataLoader's workers (default 0), or chute.Stream's (default auto).

Prints one line: SAMPLES FIRST_EPOCH_S STEADY_SAMPLES STEADY_S LOAD_S, where
FIRST_EPOCH_S runs from before the loader is made (after the imports) to
the end of its first epoch, STEADY_* cover the epochs after the first, and
LOAD_S is what the in-memory sides spent loading their arrays (np.load)
before that, which a trainer's start-up also pays (torchvision's
FashionMNIST reads its files when it is made); 0 for the chute sides,
which read the dataset within their first epoch.
Every side hands the consumer the same thing and the consumer does the
same: torch.from_numpy of the batch's images and labels (or nothing more
when the loader already gives tensors), so that the loader's own cost is
what the figures show.

Fashion-MNIST sides (DATA: a folder with train/, a packed dataset (zstd
level 3), train-raw/, the same packed with --level 0, and
train-{images,labels}.npy, the same 60,000 samples as arrays):
  gather      numpy in process: a shuffled permutation, images[idx] and
              labels[idx] per batch (the ceiling)
  dataloader  torch DataLoader over a per-sample Dataset of the arrays,
              batch 256, shuffle, --workers W
  stream      chute.Stream(train, transforms img: bytes u8 28x28, cls: int)
  stream-shm  the same with shm=True
  stream-raw, stream-shm-raw  the same two over train-raw/
  batch-py    `chute stream` of the raw fields read by scripts/chute_batch.py
              (what the trainer used before the package)

Image sides (DATA: a folder of JPEGs in class folders, and DATA.ds, packed),
training transform decode, RandomResizedCrop(224), flip, CHW uint8:
  img-stream      chute.Stream, workers W
  img-dataloader  DataLoader(ImageFolder, PIL, torchvision), W workers
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import debian_python  # noqa: E402

debian_python.require("numpy", "torch")
debian_python.use_repo_package()
import numpy as np  # noqa: E402
import torch  # noqa: E402

import chute  # noqa: E402

BATCH = 256
IMG_BATCH = 64
FM_TRANSFORMS = {"img": "bytes u8 28x28", "cls": "int"}
IMG_TRANSFORMS = {"jpg": "decode | random-resized-crop 224 | flip | layout chw",
                  "cls": "int"}


def measure(make, epochs):
    """make() -> an iterable of one epoch of (x, y) tensors; timed."""
    t0 = time.perf_counter()
    epoch = make()
    n = 0
    first = None
    steady = 0
    for e in range(epochs):
        for x, y in epoch(e):
            n += len(y)
            if e:
                steady += len(y)
        if first is None:
            first = time.perf_counter() - t0
            t1 = time.perf_counter()
    t2 = time.perf_counter()
    return n, first, steady, t2 - t1


LOAD_S = [0.0]


def fm_arrays(data):
    t0 = time.perf_counter()
    arrays = (np.load(os.path.join(data, "train-images.npy")),
              np.load(os.path.join(data, "train-labels.npy")))
    LOAD_S[0] += time.perf_counter() - t0
    return arrays


def gather(a):
    images, labels = fm_arrays(a.data)

    def make():
        def epoch(e):
            rng = np.random.default_rng(e)
            order = rng.permutation(len(labels))
            for i in range(0, len(order), BATCH):
                idx = order[i:i + BATCH]
                yield torch.from_numpy(images[idx]), torch.from_numpy(labels[idx])
        return epoch
    return make


def dataloader(a):
    from torch.utils.data import DataLoader, Dataset
    images, labels = fm_arrays(a.data)
    workers = int(a.workers or 0)

    class Arrays(Dataset):
        def __len__(self):
            return len(labels)

        def __getitem__(self, i):
            return torch.from_numpy(images[i]), int(labels[i])

    def make():
        loader = DataLoader(Arrays(), batch_size=BATCH, shuffle=True,
                            num_workers=workers,
                            persistent_workers=workers > 0)
        return lambda e: loader
    return make


def stream(a, shm=False, packed="train"):
    def make():
        s = chute.Stream(os.path.join(a.data, packed), batch_size=BATCH,
                         epochs=a.epochs, transforms=FM_TRANSFORMS, chute=a.chute,
                         shm=shm, seed=1, workers=a.workers or "auto")
        it = iter(s)

        def epoch(e):
            for b in it:
                yield torch.from_numpy(b["img"]), torch.from_numpy(b["cls"])
                if b.last:
                    return
        return epoch
    return make


def batch_py(a):
    import subprocess
    import chute_batch

    def make():
        proc = subprocess.Popen([a.chute, "stream", "-b", str(BATCH), "-e",
                                 str(a.epochs), "--seed", "1",
                                 os.path.join(a.data, "train")],
                                stdout=subprocess.PIPE, bufsize=0)
        frames = chute_batch.frames(proc.stdout)

        def epoch(e):
            for fr in frames:
                values, _ = fr.columns["img"]
                labels = np.array([int(bytes(c)) for c in fr.fields["cls"]])
                yield torch.from_numpy(values.reshape(-1, 28, 28)), \
                    torch.from_numpy(labels)
                if fr.last:
                    return
        return epoch
    return make


def img_stream(a):
    def make():
        s = chute.Stream(a.data + ".ds", batch_size=IMG_BATCH, epochs=a.epochs,
                         transforms=IMG_TRANSFORMS, chute=a.chute,
                         workers=a.workers or "auto", seed=1)
        it = iter(s)

        def epoch(e):
            for b in it:
                yield torch.from_numpy(b["jpg"]), torch.from_numpy(b["cls"])
                if b.last:
                    return
        return epoch
    return make


def img_dataloader(a):
    import torchvision.transforms as T
    from torch.utils.data import DataLoader
    from torchvision.datasets import ImageFolder
    workers = int(a.workers or 0)

    def to_chw(im):
        return torch.from_numpy(np.array(im, dtype=np.uint8)).permute(2, 0, 1)

    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), to_chw])

    def make():
        loader = DataLoader(ImageFolder(a.data, transform=tf), batch_size=IMG_BATCH,
                            shuffle=True, num_workers=workers,
                            persistent_workers=workers > 0)
        return lambda e: loader
    return make


SIDES = {"gather": gather, "dataloader": dataloader, "stream": stream,
         "stream-shm": lambda a: stream(a, shm=True),
         "stream-raw": lambda a: stream(a, packed="train-raw"),
         "stream-shm-raw": lambda a: stream(a, shm=True, packed="train-raw"),
         "batch-py": batch_py,
         "img-stream": img_stream, "img-dataloader": img_dataloader}


def main():
    ap = argparse.ArgumentParser(prog="bench_python.py")
    ap.add_argument("side", choices=sorted(SIDES))
    ap.add_argument("data")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--chute", default="chute")
    # DataLoader workers (default 0), or chute's (default "auto")
    ap.add_argument("--workers")
    a = ap.parse_args()
    torch.set_num_threads(1)
    make = SIDES[a.side](a)
    n, first, steady, steady_s = measure(make, a.epochs)
    print(n, "%.4f" % first, steady, "%.4f" % steady_s, "%.4f" % LOAD_S[0])


if __name__ == "__main__":
    main()
