#!/usr/bin/env python3
"""transforms_ref.py - chute stream's image and label transforms against
torchvision and PIL (run by tests/cli/transform_ref.bats).

    transforms_ref.py data DIR      make the test data in DIR (once)
    transforms_ref.py CHECK DIR     run one check on it, print figures
    transforms_ref.py boxes         random-resized-crop box distributions

CHECKs:
  resize     'decode | resize 256 | center-crop 224' (--mode eval) and
             friends against torchvision Resize + CenterCrop on the PIL
             image: mean |difference| of each image <= 2/255
  resize-small  the same for shrinking by 2 to 10 (resize 128, 64x48),
             where JPEG's DCT scaling may be used
  exact      decode, center-crop and 'flip 1' against PIL, byte for byte;
             'flip' (p 0.5) flips about half, eval never; -w 1 = -w 2
  normalize  'normalize imagenet | layout chw' and 'dtype f32|f16' against
             ToTensor() + Normalize(): float32 equality, else <= 1 ulp
  int        'cls: int' against the cls text and the class folders
  boxes      `tests/test_transform boxes` (beside the chute binary) against
             RandomResizedCrop.get_params, 4000 draws each: two-sample
             Kolmogorov-Smirnov (alpha 0.001) on area fraction, log aspect,
             centre x and y; the fallback rate within a binomial tolerance

The data: DIR/jpg, 40 images of scripts/make-images (seed 1, 4 classes)
and 6 odd JPEGs (gray, 4:4:4, 4:2:2, progressive, CMYK, a small one to
upscale), packed --label-from dir as DIR/ds-jpg; DIR/png, 5 PNGs
(RGB, gray, palette, RGBA, gray+alpha) as DIR/ds-png; DIR/cls, hand-written
labels as DIR/ds-cls.  Keys are the paths under DIR/jpg (DIR/png) without
the extension.

The chute binary is $CHUTE_BIN (default: chute on $PATH).  Exit status 0
all checks passed, 1 one failed (each failure is printed), 2 usage or the
data or a command could not be made.
"""

import glob
import io
import math
import os
import shlex
import shutil
import subprocess
import sys

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import chute_batch  # noqa: E402

CHUTE = os.environ.get("CHUTE_BIN") or shutil.which("chute") or "chute"
PYTHON = os.environ.get("PYTHON") or sys.executable
MAX_MAD = 2.0   # levels: the mean |difference| allowed per image, /255
ALPHA = 0.001   # the significance of the distribution tests
DRAWS = 4000
IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


class Fatal(Exception):
    """Something the checks need could not be made or run: exit 2."""


class Checks:
    """Collects PASS/FAIL lines; fails() at the end."""

    def __init__(self):
        self.failed = []

    def info(self, msg):
        print("  " + msg)

    def check(self, ok, msg):
        print(("ok    " if ok else "FAIL  ") + msg)
        if not ok:
            self.failed.append(msg)

    def exit_status(self):
        if self.failed:
            print("%d check(s) failed" % len(self.failed))
            return 1
        return 0


# --- the data -------------------------------------------------------------

def run(cmd, **kw):
    """Runs cmd; its stdout (bytes).  A failure is Fatal, with its stderr."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       **kw)
    if p.returncode != 0:
        raise Fatal("%s: exit status %d: %s" % (
            " ".join(shlex.quote(c) for c in cmd), p.returncode,
            p.stderr.decode(errors="replace").strip()))
    return p.stdout


def seeded_pixels(seed, w, h):
    """A smooth gradient with grain, so that a shifted crop shows."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    base = np.stack([x * 255 / w, y * 255 / h, (x + y) * 127 / (w + h)], 2)
    px = base + rng.normal(0, 12, (h, w, 3))
    return np.clip(px + 0.5, 0, 255).astype(np.uint8)


def odd_jpegs(d):
    """JPEGs beside make-images' ones, in the class folders: the decoder's
    other paths."""
    rgb = Image.fromarray(seeded_pixels(1, 411, 299))
    rgb.convert("L").save(os.path.join(d, "class_0", "gray.jpg"), quality=90)
    rgb.save(os.path.join(d, "class_1", "s444.jpg"), quality=90,
             subsampling=0)
    rgb.save(os.path.join(d, "class_1", "s422.jpg"), quality=90,
             subsampling=1)
    rgb.save(os.path.join(d, "class_2", "progressive.jpg"), quality=90,
             progressive=True)
    Image.fromarray(seeded_pixels(2, 150, 170)).save(
        os.path.join(d, "class_2", "small.jpg"), quality=90)
    rgb.convert("CMYK").save(os.path.join(d, "class_3", "cmyk.jpg"),
                             quality=90)


def pngs(d):
    os.makedirs(d)
    px = seeded_pixels(3, 300, 200)
    Image.fromarray(px).save(os.path.join(d, "rgb.png"))
    Image.fromarray(seeded_pixels(4, 233, 311)).convert("L").save(
        os.path.join(d, "gray.png"))
    Image.fromarray(px).quantize(200).save(os.path.join(d, "palette.png"))
    rgba = Image.fromarray(px).convert("RGBA")
    rgba.putalpha(Image.fromarray(px[:, :, 0]))
    rgba.save(os.path.join(d, "rgba.png"))
    la = Image.fromarray(seeded_pixels(5, 260, 180)).convert("LA")
    la.save(os.path.join(d, "gray_alpha.png"))


def cls_files(d):
    """Labels as a person writes them: with or without a newline, big,
    negative."""
    os.makedirs(d)
    labels = {"a": "7\n", "b": "7", "c": "0\n", "d": "123456789012\n",
              "e": "-1\n", "f": "42"}
    for k, text in labels.items():
        with open(os.path.join(d, k + ".cls"), "w") as f:
            f.write(text)
        with open(os.path.join(d, k + ".txt"), "w") as f:
            f.write("sample %s\n" % k)


def make_data(out):
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    jpg = os.path.join(out, "jpg")
    run([PYTHON, os.path.join(REPO, "scripts", "make-images"), jpg, "40",
         "--seed", "1", "--classes", "4", "--jobs", "2"])
    odd_jpegs(jpg)
    pngs(os.path.join(out, "png"))
    cls_files(os.path.join(out, "cls"))
    run([CHUTE, "pack", "-q", "--label-from", "dir", jpg, "-o",
         os.path.join(out, "ds-jpg")])
    run([CHUTE, "pack", "-q", os.path.join(out, "png"), "-o",
         os.path.join(out, "ds-png")])
    run([CHUTE, "pack", "-q", os.path.join(out, "cls"), "-o",
         os.path.join(out, "ds-cls")])
    with open(os.path.join(out, "ok"), "w") as f:
        f.write("ok\n")
    print("data in %s: %d JPEGs, %d PNGs" % (
        out, len(sources(out, "jpg")), len(sources(out, "png"))))


def sources(data, kind):
    """{key: path} of the files of DIR/jpg or DIR/png."""
    root = os.path.join(data, kind)
    out = {}
    for p in sorted(glob.glob(os.path.join(root, "**", "*." + kind),
                              recursive=True)):
        out[os.path.splitext(os.path.relpath(p, root))[0]] = p
    return out


# --- chute stream ---------------------------------------------------------

def stream(ds, transforms, mode="eval", batch=8, extra=()):
    """Runs chute stream; returns ({key: {field: value}}, the bytes).
    Values of fixed dtypes are numpy arrays, of dtype 0 bytes."""
    cmd = [CHUTE, "stream", ds, "--mode", mode, "--shuffle", "none",
           "-b", str(batch)] + list(extra)
    for t in transforms:
        cmd += ["--transform", t]
    raw = run(cmd)
    samples = {}
    try:
        for fr in chute_batch.frames(io.BytesIO(raw)):
            for i, key in enumerate(fr.keys):
                if key in samples:
                    raise Fatal("%s: key %r twice" % (" ".join(cmd), key))
                samples[key] = {
                    name: col[i] if isinstance(col, np.ndarray)
                    else bytes(col[i]) for name, col in fr.fields.items()}
    except ValueError as e:
        raise Fatal("%s: bad frames: %s" % (" ".join(cmd), e))
    return samples, raw


def image_of(sample, field, channels):
    """The HWC u8 image of a sample, (H, W) for one channel."""
    a = sample[field]
    if not isinstance(a, np.ndarray) or a.dtype != np.uint8:
        raise Fatal("field %s is %s, not a u8 array" % (
            field, type(a).__name__ if not isinstance(a, np.ndarray)
            else a.dtype))
    if channels == 1 and a.ndim == 3 and a.shape[2] == 1:
        return a[:, :, 0]
    return a


def pil_rgb(path):
    """The image as torchvision's ImageFolder loads it."""
    with Image.open(path) as im:
        return im.convert("RGB")


def pil_gray(path):
    """torchvision Grayscale on the loaded RGB image."""
    import torchvision.transforms as T
    return T.Grayscale()(pil_rgb(path))


# --- resize ---------------------------------------------------------------

def mad_check(ck, what, got, want):
    """got, want: {key: array}.  Mean |difference| per image."""
    mads, worst = [], (0, "")
    for key, ref in want.items():
        if key not in got:
            ck.check(False, "%s: no sample %r in the stream" % (what, key))
            return
        g = got[key]
        if g.shape != ref.shape:
            ck.check(False, "%s: %r is %s, torchvision %s" % (
                what, key, g.shape, ref.shape))
            return
        d = np.abs(g.astype(np.int16) - ref.astype(np.int16))
        mads.append(d.mean())
        worst = max(worst, (int(d.max()), key))
    mads = np.array(mads)
    ck.check(mads.max() <= MAX_MAD,
             "%s, %d images: mean |diff| per image max %.3f/255, mean "
             "%.3f/255 (limit %g/255); largest pixel diff %d%s" % (
                 what, len(mads), mads.max(), mads.mean(), MAX_MAD,
                 worst[0], " (%s)" % worst[1] if worst[0] else ""))


def resize_case(ck, data, kind, chain, ref, gray=False):
    """'decode [gray] | CHAIN' in --mode eval against the torchvision
    transforms ref on the PIL image."""
    import torchvision.transforms as T
    srcs = sources(data, kind)
    decode = "decode gray" if gray else "decode"
    samples, _ = stream(os.path.join(data, "ds-" + kind),
                        ["%s: %s | %s" % (kind, decode, chain)])
    got = {k: image_of(s, kind, 1 if gray else 3) for k, s in samples.items()}
    load = pil_gray if gray else pil_rgb
    want = {k: np.asarray(T.Compose(ref)(load(p))) for k, p in srcs.items()}
    mad_check(ck, "%s '%s | %s'" % (kind.upper(), decode, chain), got, want)


def check_resize(data):
    import torchvision.transforms as T
    ck = Checks()
    for kind in ("jpg", "png"):
        resize_case(ck, data, kind, "resize 256 | center-crop 224",
                    [T.Resize(256), T.CenterCrop(224)])
    # WxH is width x height; torchvision's sizes are (height, width)
    resize_case(ck, data, "jpg", "resize 320x200", [T.Resize((200, 320))])
    resize_case(ck, data, "jpg", "resize 700x680", [T.Resize((680, 700))])
    resize_case(ck, data, "jpg", "resize 150x520", [T.Resize((520, 150))])
    resize_case(ck, data, "png", "resize 97x131", [T.Resize((131, 97))])
    # eval random-resized-crop N: resize N*256/224, centre crop N
    resize_case(ck, data, "jpg", "random-resized-crop 224",
                [T.Resize(256), T.CenterCrop(224)])
    for kind in ("jpg", "png"):
        resize_case(ck, data, kind, "resize 256 | center-crop 224",
                    [T.Resize(256), T.CenterCrop(224)], gray=True)
    return ck.exit_status()


def check_resize_small(data):
    """Shrinking by 2 or more, where a decoder may use JPEG's DCT scaling
    (1/2, 1/4, 1/8) before resampling: the same limit."""
    import torchvision.transforms as T
    ck = Checks()
    resize_case(ck, data, "jpg", "resize 128 | center-crop 112",
                [T.Resize(128), T.CenterCrop(112)])
    resize_case(ck, data, "jpg", "resize 64x48", [T.Resize((48, 64))])
    return ck.exit_status()


# --- exact ops ------------------------------------------------------------

def exact_check(ck, what, got, want):
    bad = []
    for key, ref in want.items():
        g = got.get(key)
        if g is None or g.shape != ref.shape or not np.array_equal(g, ref):
            bad.append((key, None if g is None else g.shape, ref.shape,
                        -1 if g is None or g.shape != ref.shape else
                        int(np.abs(g.astype(np.int16) - ref).max())))
    detail = ""
    if bad:
        k, gs, rs, m = bad[0]
        detail = ": %d differ, first %r (chute %s, reference %s, max diff " \
                 "%d)" % (len(bad), k, gs, rs, m)
    ck.check(not bad, "%s, %d images byte for byte%s" % (
        what, len(want), detail))


def stream_images(data, kind, chain, mode="eval", extra=(), gray=False):
    samples, raw = stream(os.path.join(data, "ds-" + kind),
                          ["%s: %s" % (kind, chain)], mode=mode, batch=1,
                          extra=extra)
    return {k: image_of(s, kind, 1 if gray else 3)
            for k, s in samples.items()}, raw


def check_exact(data):
    import torchvision.transforms as T
    ck = Checks()
    for kind in ("jpg", "png"):
        srcs = sources(data, kind)
        ref = {k: np.asarray(pil_rgb(p)) for k, p in srcs.items()}
        dec, _ = stream_images(data, kind, "decode")
        exact_check(ck, "%s 'decode' = PIL convert('RGB')" % kind.upper(),
                    dec, ref)
        got, _ = stream_images(data, kind, "decode | flip 1", mode="train")
        exact_check(ck, "%s 'decode | flip 1' = numpy flip of 'decode'"
                    % kind.upper(), got,
                    {k: v[:, ::-1] for k, v in dec.items()})
        flipped = {k: np.asarray(pil_rgb(p).transpose(Image.FLIP_LEFT_RIGHT))
                   for k, p in srcs.items()}
        exact_check(ck, "%s 'decode | flip 1' = PIL FLIP_LEFT_RIGHT"
                    % kind.upper(), got, flipped)
        for crop, size in (("150", (150, 150)), ("145x99", (99, 145))):
            got, _ = stream_images(data, kind, "decode | center-crop " + crop)
            want = {k: np.asarray(T.CenterCrop(size)(pil_rgb(p)))
                    for k, p in srcs.items()}
            exact_check(ck, "%s 'decode | center-crop %s' = CenterCrop%s"
                        % (kind.upper(), crop, size), got, want)
        gray_ref = {k: np.asarray(pil_gray(p)) for k, p in srcs.items()}
        got, _ = stream_images(data, kind, "decode gray", gray=True)
        if kind == "png":
            exact_check(ck, "PNG 'decode gray' = Grayscale()", got, gray_ref)
        else:
            mad_check(ck, "JPG 'decode gray' ~ Grayscale() (libjpeg's Y)",
                      got, gray_ref)
    check_random_flip(ck, data)
    return ck.exit_status()


def check_random_flip(ck, data):
    """'flip' flips each sample with p 0.5, the same whatever --workers;
    --mode eval never flips."""
    chain = "decode | center-crop 150 | flip"
    plain, _ = stream_images(data, "jpg", "decode | center-crop 150")
    one, raw1 = stream_images(data, "jpg", chain, mode="train",
                              extra=["--seed", "5", "-w", "1"])
    _, raw2 = stream_images(data, "jpg", chain, mode="train",
                            extra=["--seed", "5", "-w", "2"])
    ck.check(raw1 == raw2, "'flip': the same bytes with -w 1 and -w 2")
    n = flips = 0
    for k, p in plain.items():
        n += 1
        if np.array_equal(one[k], p[:, ::-1]):
            flips += 1
        elif not np.array_equal(one[k], p):
            ck.check(False, "'flip': %r is neither the image nor its "
                     "mirror" % k)
    z = 3.29 * math.sqrt(n * 0.25)  # two-sided, alpha 0.001
    ck.check(abs(flips - n / 2) <= z, "'flip' (p 0.5, train) flipped %d of "
             "%d (allowed %.0f..%.0f)" % (flips, n, n / 2 - z, n / 2 + z))
    ev, _ = stream_images(data, "jpg", chain, mode="eval")
    exact_check(ck, "'flip' in --mode eval flips nothing", ev, plain)


# --- normalize and dtype --------------------------------------------------

def ulps(a, b):
    """|a - b| in units in the last place (float32)."""
    def ordered(x):
        i = np.ascontiguousarray(x, np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(ordered(a) - ordered(b))


def float_check(ck, what, got, want, dtype):
    """Equality, else within 1 ulp of dtype: says which."""
    worst, unequal, total = 0, 0, 0
    for key, ref in want.items():
        g = got.get(key)
        if g is None or g.dtype != dtype or g.shape != ref.shape:
            ck.check(False, "%s: %r is %s, reference %s %s" % (
                what, key, None if g is None else (g.dtype, g.shape),
                dtype, ref.shape))
            return
        if dtype == np.float16:
            u = np.abs(g.view(np.int16).astype(np.int32) -
                       ref.view(np.int16).astype(np.int32))
        else:
            u = ulps(g, ref)
        worst = max(worst, int(u.max()))
        unequal += int((u > 0).sum())
        total += u.size
    if worst == 0:
        ck.check(True, "%s, %d images: equal (%d values)" % (
            what, len(want), total))
    else:
        ck.check(worst <= 1, "%s, %d images: within %d ulp, %d of %d values "
                 "differ" % (what, len(want), worst, unequal, total))


def check_normalize(data):
    import torchvision.transforms as T
    ck = Checks()
    mean, std = IMAGENET
    explicit = "normalize %s %s" % (",".join(map(str, mean)),
                                    ",".join(map(str, std)))
    for kind in ("jpg", "png"):
        srcs = sources(data, kind)
        norm = T.Compose([T.ToTensor(), T.Normalize(mean, std)])
        want = {k: norm(pil_rgb(p)).numpy() for k, p in srcs.items()}
        got, _ = stream(os.path.join(data, "ds-" + kind), [
            kind + ": decode | normalize imagenet | layout chw"], batch=1)
        float_check(ck, "%s 'normalize imagenet | layout chw' vs ToTensor()"
                    "+Normalize()" % kind.upper(),
                    {k: s[kind] for k, s in got.items()}, want, np.float32)
        # the same values (the cursors differ: they hash the specs)
        got2, _ = stream(os.path.join(data, "ds-" + kind), [
            kind + ": decode | " + explicit + " | layout chw"], batch=1)
        same = got.keys() == got2.keys() and all(
            np.array_equal(got[k][kind], got2[k][kind]) for k in got)
        ck.check(same, "%s '%s' = 'normalize imagenet', the same values"
                 % (kind.upper(), explicit))
        tensor = {k: T.ToTensor()(pil_rgb(p)) for k, p in srcs.items()}
        for name, dt, conv in (("f32", np.float32, lambda t: t),
                               ("f16", np.float16, lambda t: t.half())):
            got, _ = stream(os.path.join(data, "ds-" + kind), [
                kind + ": decode | layout chw | dtype " + name], batch=1)
            float_check(ck, "%s 'layout chw | dtype %s' vs ToTensor()%s" % (
                kind.upper(), name, ".half()" if name == "f16" else ""),
                {k: s[kind] for k, s in got.items()},
                {k: conv(t).numpy() for k, t in tensor.items()}, dt)
    return ck.exit_status()


# --- int ------------------------------------------------------------------

def check_int(data):
    ck = Checks()
    ds = os.path.join(data, "ds-jpg")
    raw, _ = stream(ds, [], batch=16)
    got, _ = stream(ds, ["cls: int"], batch=16)
    names = sorted(os.listdir(os.path.join(data, "jpg")))
    bad = []
    for key, s in got.items():
        v = np.asarray(s["cls"])  # a numpy scalar, one of the (B,) array
        text = raw[key]["cls"]
        want = names.index(key.split("/")[0])
        if not (v.dtype == np.int64 and v.shape == () and
                int(v) == int(text) == want):
            bad.append((key, v, text, want))
    ck.check(not bad and len(got) == len(raw), "'cls: int' on %d samples "
             "of --label-from dir: i64 scalars equal to the cls text and "
             "the class folder's index%s" % (
                 len(got), "" if not bad else "; first bad %r" % (bad[0],)))
    frame = next(chute_batch.frames(io.BytesIO(
        run([CHUTE, "stream", ds, "--mode", "eval", "-b", "16",
             "--transform", "cls: int"]))))
    ck.check(frame.fields["cls"].shape == (frame.nsamples,),
             "'cls: int': numpy shape of a batch's labels is %s, batch of %d"
             % (frame.fields["cls"].shape, frame.nsamples))
    got, _ = stream(os.path.join(data, "ds-cls"), ["cls: int"], batch=8)
    want = {"a": 7, "b": 7, "c": 0, "d": 123456789012, "e": -1, "f": 42}
    seen = {k: int(s["cls"]) for k, s in got.items()}
    ck.check(seen == want, "'cls: int' on hand-written labels ('7\\n', '7', "
             "big, negative): %s" % seen)
    return ck.exit_status()


# --- random-resized-crop boxes --------------------------------------------

def ks(a, b):
    """Two-sample Kolmogorov-Smirnov: (D, critical D at ALPHA)."""
    a, b = np.sort(a), np.sort(b)
    x = np.concatenate([a, b])
    fa = np.searchsorted(a, x, side="right") / len(a)
    fb = np.searchsorted(b, x, side="right") / len(b)
    d = float(np.abs(fa - fb).max())
    n, m = len(a), len(b)
    crit = math.sqrt(-math.log(ALPHA / 2) / 2) * math.sqrt((n + m) / (n * m))
    return d, crit


def torch_boxes(w, h, n, seed, scale, ratio):
    """(left, top, width, height) rows drawn by torchvision."""
    import torch
    import torchvision.transforms as T
    torch.manual_seed(seed)
    img = Image.new("L", (w, h))
    rows = []
    for _ in range(n):
        i, j, bh, bw = T.RandomResizedCrop.get_params(img, scale, ratio)
        rows.append((j, i, bw, bh))
    return np.array(rows, dtype=np.float64)


def fallback_box(w, h, ratio):
    """torchvision's box when 10 draws failed."""
    in_ratio = w / h
    if in_ratio < min(ratio):
        bw, bh = w, int(round(w / min(ratio)))
    elif in_ratio > max(ratio):
        bw, bh = int(round(h * max(ratio))), h
    else:
        bw, bh = w, h
    return ((w - bw) // 2, (h - bh) // 2, bw, bh)


def chute_boxes(tool, w, h, n, seed, opts):
    out = run([tool, "boxes", str(w), str(h), str(n), str(seed)] + opts)
    rows = [ln.split() for ln in out.decode().splitlines() if ln.strip()]
    try:
        a = np.array(rows, dtype=np.float64)
    except ValueError:
        raise Fatal("%s boxes: not 4 numbers a line: %r" % (tool, rows[:3]))
    if a.shape != (n, 4):
        raise Fatal("%s boxes: %s numbers, expected %d lines of 4" % (
            tool, a.shape, n))
    return a


def box_case(ck, tool, w, h, seed, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3),
             opts=()):
    what = "%dx%d%s" % (w, h, "".join(" " + o for o in opts))
    c = chute_boxes(tool, w, h, DRAWS, seed, list(opts))
    t = torch_boxes(w, h, DRAWS, seed, scale, ratio)
    left, top, bw, bh = c.T
    inside = (bw > 0) & (bh > 0) & (left >= 0) & (top >= 0) & \
        (left + bw <= w) & (top + bh <= h) & (c == np.round(c)).all(1)
    ck.check(inside.all(), "boxes %s: all inside the image, whole pixels "
             "(%d are not)" % (what, (~inside).sum()))

    def stats(r):
        return {"area fraction": r[:, 2] * r[:, 3] / (w * h),
                "log aspect": np.log(r[:, 2] / r[:, 3]),
                "centre x": (r[:, 0] + r[:, 2] / 2) / w,
                "centre y": (r[:, 1] + r[:, 3] / 2) / h}
    sc, st = stats(c), stats(t)
    for name in sc:
        d, crit = ks(sc[name], st[name])
        ck.check(d <= crit, "boxes %s, %s: KS D = %.4f (critical %.4f at "
                 "alpha %g; chute mean %.4f, torchvision %.4f)" % (
                     what, name, d, crit, ALPHA, sc[name].mean(),
                     st[name].mean()))
    fb = np.array(fallback_box(w, h, ratio), dtype=np.float64)
    pc = float((c == fb).all(1).mean())
    pt = float((t == fb).all(1).mean())
    pool = (pc + pt) / 2
    tol = 3.29 * math.sqrt(pool * (1 - pool) * 2 / DRAWS) + 1 / DRAWS
    ck.check(abs(pc - pt) <= tol, "boxes %s, fallback %s: rate %.4f, "
             "torchvision %.4f (tolerance %.4f)" % (
                 what, tuple(int(v) for v in fb), pc, pt, tol))


def check_boxes(tool):
    ck = Checks()
    if not os.access(tool, os.X_OK):
        raise Fatal("%s is missing (make %s)" % (tool, os.path.relpath(
            tool, REPO)))
    box_case(ck, tool, 500, 375, 1)
    box_case(ck, tool, 375, 500, 2)
    box_case(ck, tool, 1000, 120, 3)
    box_case(ck, tool, 640, 480, 4, (0.25, 0.75), (0.5, 2.0),
             ["scale=0.25,0.75", "ratio=0.5,2"])
    return ck.exit_status()


def main(argv):
    usage = "usage: transforms_ref.py data|resize|resize-small|exact|" \
            "normalize|int DIR | boxes [TEST_TRANSFORM]"
    if len(argv) < 2:
        print(usage, file=sys.stderr)
        return 2
    cmd = argv[1]
    try:
        if cmd == "boxes" and len(argv) <= 3:
            tool = argv[2] if len(argv) == 3 else os.path.join(
                os.path.dirname(shutil.which(CHUTE) or CHUTE), "tests",
                "test_transform")
            return check_boxes(tool)
        if len(argv) != 3:
            print(usage, file=sys.stderr)
            return 2
        checks = {"data": make_data, "resize": check_resize,
                  "resize-small": check_resize_small,
                  "exact": check_exact, "normalize": check_normalize,
                  "int": check_int}
        if cmd not in checks:
            print(usage, file=sys.stderr)
            return 2
        return checks[cmd](argv[2]) or 0
    except Fatal as e:
        print("transforms_ref.py %s: %s" % (cmd, e), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
