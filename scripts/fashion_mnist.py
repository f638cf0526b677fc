#!/usr/bin/python3
"""fashion_mnist.py - Fashion-MNIST as two WebDataset tars for chute pack.

Reads the gzipped IDX files of Debian's dataset-fashion-mnist package and
writes OUTDIR/train.tar and OUTDIR/test.tar, one sample per image:

    train/000123.img    784 bytes, the 28 x 28 pixels, row-major, uint8
    train/000123.cls    the label, 0-9, as decimal text

(test samples are test/NNNNNN).  The tars are deterministic: members sorted
by name, mtime 0, owner 0, mode 0644, ustar; the same files give the same
bytes.  Then:

    chute pack OUTDIR/train.tar -o OUTDIR/train
    chute pack OUTDIR/test.tar -o OUTDIR/test

Usage: fashion_mnist.py OUTDIR [--limit-train N] [--limit-test N]
                        [--source DIR]

--limit-* keep the first N samples of a split (small datasets for tests).
Exit status: 0 done, 1 an IDX file is corrupt (bad magic, dimensions or
size, labels out of range), 2 usage error or a file that cannot be read or
written.  Python 3 standard library only.
"""

import argparse
import gzip
import io
import os
import struct
import sys
import tarfile
import zlib

SOURCE = "/usr/share/datasets/fashion-mnist"
SPLITS = (("train", "train"), ("test", "t10k"))  # our name, the files' prefix
IMAGES_MAGIC, LABELS_MAGIC = 0x803, 0x801
ROWS = COLS = 28
CLASSES = 10
PROG = "fashion_mnist.py"


class DataError(Exception):
    """A file read but not valid IDX of the expected kind (exit 1)."""


class IOFailure(Exception):
    """A file that cannot be read or written (exit 2)."""


def read_gzip(path):
    """The decompressed bytes of path."""
    try:
        with gzip.open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise IOFailure("cannot read '%s': no such file (install Debian's "
                        "dataset-fashion-mnist, or give --source DIR)" % path)
    except OSError as e:
        # gzip.BadGzipFile is an OSError too: a file that is there but not
        # gzip is corrupt data, not an I/O problem.
        if isinstance(e, gzip.BadGzipFile) or e.errno is None:
            raise DataError("'%s' is not a valid gzip file: %s" % (path, e))
        raise IOFailure("cannot read '%s': %s" % (path, e.strerror or e))
    except (EOFError, zlib.error) as e:
        raise DataError("'%s' is a truncated or corrupt gzip file: %s"
                        % (path, e or "unexpected end of data"))


def parse_idx(path, data, magic, dims):
    """Checks an IDX header (magic, then one u32 per dimension, big-endian)
    and the size that follows; returns (count, payload as memoryview)."""
    head = 4 * (1 + len(dims))
    if len(data) < head:
        raise DataError("'%s': %d bytes, too short for an IDX header of %d "
                        "(offset 0)" % (path, len(data), head))
    got = struct.unpack_from(">%dI" % (1 + len(dims)), data)
    if got[0] != magic:
        raise DataError("'%s': magic 0x%08x, expected 0x%08x (offset 0)"
                        % (path, got[0], magic))
    count = got[1]
    for i, (want, have) in enumerate(zip(dims[1:], got[2:])):
        if want != have:
            raise DataError("'%s': dimension %d is %d, expected %d (offset %d)"
                            % (path, i + 1, have, want, 8 + 4 * i))
    item = 1
    for d in dims[1:]:
        item *= d
    if len(data) - head != count * item:
        raise DataError("'%s': %d bytes after the header, expected %d for "
                        "%d items of %d bytes (offset %d)"
                        % (path, len(data) - head, count * item, count, item,
                           head))
    return count, memoryview(data)[head:]


def load_split(source, prefix):
    """(images as one memoryview of count*784 bytes, labels, count)."""
    ipath = os.path.join(source, prefix + "-images-idx3-ubyte.gz")
    lpath = os.path.join(source, prefix + "-labels-idx1-ubyte.gz")
    n_img, images = parse_idx(ipath, read_gzip(ipath), IMAGES_MAGIC,
                              (None, ROWS, COLS))
    n_lab, labels = parse_idx(lpath, read_gzip(lpath), LABELS_MAGIC, (None,))
    if n_img != n_lab:
        raise DataError("'%s' has %d images but '%s' %d labels"
                        % (ipath, n_img, lpath, n_lab))
    for i, label in enumerate(labels):
        if label >= CLASSES:
            raise DataError("'%s': label %d of item %d is not 0-%d "
                            "(offset %d)" % (lpath, label, i, CLASSES - 1,
                                             8 + i))
    return images, labels, n_img


def member(name, payload):
    """A ustar header that depends on nothing but name and size."""
    info = tarfile.TarInfo(name)
    info.size = len(payload)
    info.mtime = 0
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_tar(path, split, images, labels, count):
    """Writes the samples to path.tmp, then renames it over path, so that
    an interrupted run leaves no half-written archive behind."""
    size = ROWS * COLS
    entries = []
    for i in range(count):
        key = "%s/%06d" % (split, i)
        entries.append((key + ".cls", b"%d" % labels[i]))
        entries.append((key + ".img", images[i * size:(i + 1) * size]))
    entries.sort(key=lambda e: e[0])
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            with tarfile.open(fileobj=f, mode="w",
                              format=tarfile.USTAR_FORMAT) as tar:
                for name, payload in entries:
                    tar.addfile(member(name, payload), io.BytesIO(payload))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise IOFailure("cannot write '%s': %s" % (path, e.strerror or e))


def limit(value):
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1, not %d" % n)
    return n


def main():
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Write Fashion-MNIST as OUTDIR/train.tar and "
                    "OUTDIR/test.tar (samples KEY.img, KEY.cls) for "
                    "chute pack.")
    ap.add_argument("outdir", help="folder for train.tar and test.tar "
                                   "(created if missing)")
    ap.add_argument("--limit-train", type=limit, metavar="N",
                    help="keep the first N training samples")
    ap.add_argument("--limit-test", type=limit, metavar="N",
                    help="keep the first N test samples")
    ap.add_argument("--source", default=SOURCE, metavar="DIR",
                    help="folder of the IDX files (default %s)" % SOURCE)
    args = ap.parse_args()
    limits = {"train": args.limit_train, "test": args.limit_test}
    try:
        try:
            os.makedirs(args.outdir, exist_ok=True)
        except OSError as e:
            raise IOFailure("cannot create '%s': %s"
                            % (args.outdir, e.strerror or e))
        # both splits checked before anything is written
        loaded = [(split,) + load_split(args.source, prefix)
                  for split, prefix in SPLITS]
        for split, images, labels, count in loaded:
            if limits[split] is not None:
                count = min(count, limits[split])
            path = os.path.join(args.outdir, split + ".tar")
            write_tar(path, split, images, labels, count)
            print("%s: %d samples" % (path, count))
    except DataError as e:
        sys.stderr.write("%s: %s\n" % (PROG, e))
        return 1
    except IOFailure as e:
        sys.stderr.write("%s: %s\n" % (PROG, e))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
