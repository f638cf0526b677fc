#!/usr/bin/env python3
"""arrays_ref.py - numpy's answer for chute stream's array ops.

    arrays_ref.py STREAM SRC SEED MODE SPEC...

STREAM is a `chute stream -o` output (batch format); SRC the folder its
dataset was packed from (SRC/KEY.FIELD files: sample number = the key's
place in sorted order); SEED and MODE (train or eval) the stream's; each
SPEC one --transform of the form

    FIELD: bytes DTYPE SHAPE | OP ...   OP: pad N [VALUE], random-crop N|WxH,
                                            center-crop N|WxH, flip [P],
                                            dtype f32

The ops are computed with numpy on each sample's raw bytes, the random
ones drawing from a copy of chute's counter-based generator (XXH3-64 of
the little-endian u64s seed, epoch, sample, op index; then splitmix64), as
torchvision's RandomCrop(padding=N) and RandomHorizontalFlip would with
those draws.  Prints one line per field, "FIELD: N samples equal" when
every value equals chute's, with the crop offsets and flips seen; exits 1
at the first sample that differs.  Needs numpy and xxhash.
"""
import os
import struct
import sys

import numpy as np
import xxhash

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "scripts"))
import chute_batch  # noqa: E402

M64 = (1 << 64) - 1
DTYPES = {"u8": np.uint8, "i64": np.int64, "f16": np.float16,
          "f32": np.float32}


class Rng:
    """chute's ch_rng (lib/transform/random.c)."""

    def __init__(self, seed, epoch, sample, op):
        key = struct.pack("<4Q", seed, epoch, sample, op)
        self.s = xxhash.xxh3_64_intdigest(key)

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next() >> 11) * 2.0 ** -53

    def int(self, lo, hi):
        return lo + ((self.next() * (hi - lo + 1)) >> 64)


def size(text):
    """N or WxH, as (h, w)."""
    if "x" in text:
        w, h = text.split("x")
        return int(h), int(w)
    return int(text), int(text)


def parse(spec):
    field, ops = spec.split(":", 1)
    ops = [op.split() for op in ops.split("|")]
    assert ops[0][0] == "bytes", spec
    return field.strip(), ops


def centre(have, want):
    return int(round((have - want) / 2))  # torchvision's CenterCrop


def apply(ops, raw, seed, epoch, sample, mode, seen):
    a = np.frombuffer(raw, DTYPES[ops[0][1]]).reshape(
        [int(n) for n in ops[0][2].split("x")])
    for i, (name, *args) in enumerate(ops[1:], 1):
        rng = Rng(seed, epoch, sample, i)
        if name == "pad":
            n = int(args[0])
            value = float(args[1]) if len(args) > 1 else 0
            width = [(n, n), (n, n)] + [(0, 0)] * (a.ndim - 2)
            a = np.pad(a, width, constant_values=a.dtype.type(value))
        elif name in ("random-crop", "center-crop"):
            h, w = size(args[0])
            top, left = centre(a.shape[0], h), centre(a.shape[1], w)
            if name == "random-crop" and mode == "train":
                top = rng.int(0, a.shape[0] - h)
                left = rng.int(0, a.shape[1] - w)
                seen["offsets"].add((top, left))
            a = a[top:top + h, left:left + w]
        elif name == "flip":
            p = float(args[0]) if args else 0.5
            flip = mode == "train" and rng.uniform() < p
            seen["flips"] += flip
            a = a[:, ::-1] if flip else a
        elif name == "dtype":
            assert args == ["f32"] and a.dtype == np.uint8
            a = a.astype(np.float32) / np.float32(255)
        else:
            raise SystemExit("arrays_ref.py: op %s not known" % name)
    return a


def main(argv):
    stream, src, seed, mode = argv[1], argv[2], int(argv[3]), argv[4]
    specs = [parse(s) for s in argv[5:]]
    # the key is the path below src without the extension (src's own
    # path may hold dots: a mktemp folder's name)
    keys = sorted({os.path.join(d, f.split(".")[0])[len(src) + 1:]
                   for d, _, fs in os.walk(src) for f in fs})
    number = {k: i for i, k in enumerate(keys)}
    for field, ops in specs:
        seen = {"offsets": set(), "flips": 0}
        n = 0
        for fr in chute_batch.frames(open(stream, "rb")):
            got = fr.fields[field]
            for key, value in zip(fr.keys, got):
                raw = open("%s/%s.%s" % (src, key, field), "rb").read()
                want = apply(ops, raw, seed, fr.epoch, number[key], mode,
                             seen)
                if value.shape != want.shape or value.dtype != want.dtype \
                        or value.tobytes() != want.tobytes():
                    print("%s: sample %s epoch %d: chute %s %s, numpy %s %s"
                          % (field, key, fr.epoch, value.dtype, value.shape,
                             want.dtype, want.shape))
                    return 1
                n += 1
        offsets = sorted(seen["offsets"])
        print("%s: %d samples equal; %d crop offsets (top %s-%s, left "
              "%s-%s); %d flips" % (
                  field, n, len(offsets),
                  min((o[0] for o in offsets), default="-"),
                  max((o[0] for o in offsets), default="-"),
                  min((o[1] for o in offsets), default="-"),
                  max((o[1] for o in offsets), default="-"), seen["flips"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
