#!/usr/bin/env python3
"""Seeded sample-data generator for chute's tests, demo and benchmarks.

Same arguments, same bytes: every file's content depends only on the seed
and the sample's number, never on time, order of work or the machine (the
images: nor on anything but PIL's libjpeg).  The standard library, and
PIL (Debian's python3-pil) for images.

  gen-data.py images DIR --count N --size BYTES --classes K --seed S [--with-cls]
      DIR/cNN/imgNNNNNNN.jpg: real JPEGs (quality 90) of seeded RGB noise,
      which decode and barely compress, sizes BYTES +-20 % (never under
      the ~700 bytes of a JPEG's headers and one 8x8 block), sample i in
      class i mod K (ImageFolder layout, for `chute pack --label-from
      dir`).  --with-cls also writes KEY.cls holding the class index as
      text.
  gen-data.py text DIR --count N --seed S
      DIR/NNNN/txtNNNNNNN.txt (an English-like sentence, 50-400 chars) and
      .cls (0-9 as text); 500 samples (1000 files) per folder.
  gen-data.py mixed DIR --seed S
      a small fixture of 20 samples for tests: 1-3 fields each (jpg, txt,
      cls, json, seg.png), nested folders, dotted field names.
"""

import argparse
import io
import json
import math
import os
import random
import sys
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import debian_python  # noqa: E402  (found next to this script)

JPEG_SOI = b"\xff\xd8\xff\xe0"
TEXT_PER_DIR = 500  # samples per folder: two files each

WORDS = (
    "the a an of to and in on for with from by at as is was are were be "
    "data model train batch shard block index sample field label image text "
    "river mountain forest city morning evening light shadow window garden "
    "quick brown fox lazy dog jumps over under around through across beyond "
    "small large quiet loud bright dark early late simple careful patient "
    "reads writes packs checks streams sorts counts measures builds tests "
    "because while after before until although whenever therefore however "
    "engineer student teacher farmer painter sailor doctor writer runner "
    "table chair paper stone glass water bread music story question answer"
).split()


def class_name(c, k):
    """c03 for class 3: zero-padded so sorted names keep class order."""
    return "c%0*d" % (max(2, len(str(k - 1))), c)


class NoiseJpeg:
    """JPEGs of seeded RGB noise, sized to a byte target.

    A noise JPEG's size is close to linear in its pixel count: two probe
    encodes give the line, and an image of N bytes gets the 4:3 frame of
    the pixel count that the line says."""

    QUALITY = 90

    def __init__(self):
        debian_python.require("PIL", program="gen-data.py images")
        from PIL import Image
        self.Image = Image
        small, big = (16, 12), (160, 120)
        a, b = (len(self.encode(random.Random("probe"), *wh)) for wh in (small, big))
        self.per_pixel = (b - a) / (big[0] * big[1] - small[0] * small[1])
        self.fixed = a - self.per_pixel * small[0] * small[1]

    def encode(self, rng, w, h):
        im = self.Image.frombytes("RGB", (w, h), rng.randbytes(w * h * 3))
        out = io.BytesIO()
        im.save(out, "JPEG", quality=self.QUALITY)
        return out.getvalue()

    def sample(self, seed, i, size):
        """Image i: depends on (seed, i, size) alone."""
        rng = random.Random("image:%d:%d" % (seed, i))
        n = size + rng.randint(-size // 5, size // 5)
        pixels = max(64.0, (n - self.fixed) / self.per_pixel)
        w = max(8, round(math.sqrt(pixels * 4 / 3)))
        h = max(8, round(pixels / w))
        return self.encode(rng, w, h)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return len(data)


def gen_images(a):
    if a.classes < 1 or a.count < 0 or a.size < 1:
        sys.exit("gen-data images: need --classes >= 1, --count >= 0, --size >= 1")
    jpeg = NoiseJpeg()
    dirs = [os.path.join(a.dir, class_name(c, a.classes)) for c in range(a.classes)]
    for d in dirs:
        os.makedirs(d, exist_ok=True)
    total = 0
    for i in range(a.count):
        c = i % a.classes
        base = os.path.join(dirs[c], "img%07d" % i)
        total += write(base + ".jpg", jpeg.sample(a.seed, i, a.size))
        if a.with_cls:
            total += write(base + ".cls", b"%d" % c)
    return a.count, total


def sentence(rng):
    """One capitalised sentence of 50-400 characters from WORDS."""
    target = rng.randint(50, 400)
    words, length = [], -1
    while length < target:
        w = rng.choice(WORDS)
        words.append(w)
        length += len(w) + 1
    s = " ".join(words)[: target - 1].rstrip()
    return s[0].upper() + s[1:] + "."


def text_chunk(job):
    """Writes folder d's samples; runs in a worker process."""
    root, seed, d, first, last = job
    folder = os.path.join(root, "%04d" % d)
    os.makedirs(folder, exist_ok=True)
    rng = random.Random("text:%d:%d" % (seed, d))
    total = 0
    for i in range(first, last):
        base = os.path.join(folder, "txt%07d" % i)
        total += write(base + ".txt", sentence(rng).encode())
        total += write(base + ".cls", b"%d" % rng.randrange(10))
    return total


def gen_text(a):
    if a.count < 0:
        sys.exit("gen-data text: need --count >= 0")
    jobs = [(a.dir, a.seed, d, s, min(s + TEXT_PER_DIR, a.count))
            for d, s in enumerate(range(0, a.count, TEXT_PER_DIR))]
    os.makedirs(a.dir, exist_ok=True)
    if len(jobs) < 4:
        return a.count, sum(map(text_chunk, jobs))
    # File creation dominates: spread folders over processes.  Each folder
    # has its own seed, so the bytes do not depend on who writes them.
    with ProcessPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as ex:
        return a.count, sum(ex.map(text_chunk, jobs, chunksize=4))


def mixed_fields(rng, i):
    """The fields of fixture sample i: a fixed pattern plus seeded bytes."""
    pattern = [
        ("jpg", "cls"), ("txt",), ("jpg", "json", "cls"), ("txt", "cls"),
        ("jpg", "seg.png"), ("json",), ("txt", "json"),
    ][i % 7]
    out = {}
    for f in pattern:
        if f in ("jpg", "seg.png"):
            head = JPEG_SOI if f == "jpg" else b"\x89PNG\r\n\x1a\n"
            out[f] = head + rng.randbytes(rng.randint(100, 5000))
        elif f == "txt":
            out[f] = sentence(rng).encode()
        elif f == "cls":
            out[f] = b"%d" % rng.randrange(10)
        else:
            doc = {"id": i, "tags": rng.sample(WORDS, 3), "score": rng.randrange(1000) / 10}
            out[f] = json.dumps(doc, sort_keys=True).encode() + b"\n"
    return out


def gen_mixed(a):
    rng = random.Random("mixed:%d" % a.seed)
    folders = ["", "a", "a/b", "c"]
    total = 0
    for i in range(20):
        folder = os.path.join(a.dir, folders[i % len(folders)])
        os.makedirs(folder, exist_ok=True)
        for field, data in mixed_fields(rng, i).items():
            total += write(os.path.join(folder, "s%03d.%s" % (i, field)), data)
    return 20, total


def main(argv):
    p = argparse.ArgumentParser(
        prog="gen-data.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 2)[2])
    sub = p.add_subparsers(dest="cmd", required=True)
    im = sub.add_parser("images", help="ImageFolder-like JPEGs of noise")
    im.add_argument("--count", type=int, default=100)
    im.add_argument("--size", type=int, default=110_000, help="mean bytes per file")
    im.add_argument("--classes", type=int, default=4)
    im.add_argument("--with-cls", action="store_true", help="also write KEY.cls")
    tx = sub.add_parser("text", help="small text samples with a cls field")
    tx.add_argument("--count", type=int, default=1000)
    mx = sub.add_parser("mixed", help="small fixture with varied fields")
    for s in (im, tx, mx):
        s.add_argument("dir", metavar="DIR")
        s.add_argument("--seed", type=int, default=1)
        s.add_argument("-q", "--quiet", action="store_true", help="no summary line on stderr")
    a = p.parse_args(argv)
    gen = {"images": gen_images, "text": gen_text, "mixed": gen_mixed}[a.cmd]
    samples, nbytes = gen(a)
    if not a.quiet:
        print("gen-data %s: %d samples, %d bytes in %s" % (a.cmd, samples, nbytes, a.dir),
              file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
