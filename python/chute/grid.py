"""chute.grid - a batch drawn as a contact sheet, for people to look at.

    import chute
    for batch in chute.Stream("ds", batch_size=64, transforms=[
            "jpg: decode | random-resized-crop 96 | flip"]):
        sheet = chute.grid(batch)        # numpy uint8, height x width x 3
        PIL.Image.fromarray(sheet).save("grid.png")
        break

The same picture, pixel for pixel, as `chute preview` draws for the same
options and cursor (lib/visual/sheet.c): a grid of tiles, each a sample's
picture over its key and class.  The picture is the first u8 image array
of the batch (H x W, H x W x C or C x H x W with C 1 or 3; float32
arrays are stretched from their minimum to their maximum), blown up by a
whole factor below 64 pixels.  JPEG and PNG fields as files are not
decoded here: stream them with a decode transform, or use chute preview.
Needs numpy.
"""

import math

__all__ = ["grid"]

PAD, MIN_SIDE, MIN_WIDTH = 4, 64, 72
FONT_W, FONT_H = 6, 9
BACKGROUND, KEY_RGB, CLASS_RGB = (32, 32, 32), (255, 255, 255), (255, 210, 90)

# ASCII 32..126, five columns a glyph (bit 0 the top row), as
# lib/visual/font.c has them.
_FONT = bytes.fromhex(
    "000000000000005f00000007000700147f147f14242a7f2a1223130864623649562050"
    "0008070300001c2241000041221c002a1c7f1c2a08083e080800807030000808080808"
    "000060600020100804023e5149453e00427f400072494949462141494d331814127f10"
    "27454545393c4a49493141211109073649494936464949291e00001400000040340000"
    "00081422411414141414004122140802015909063e415d594e7c1211127c7f49494936"
    "3e414141227f4141413e7f494949417f090909013e414151737f0808087f00417f4100"
    "2040413f017f081422417f404040407f021c027f7f0408107f3e4141413e7f09090906"
    "3e4151215e7f09192946264949493203017f01033f4040403f1f2040201f3f4038403f"
    "631408146303047804036159494d43007f4141410204081020004141417f0402010204"
    "4040404040000307080020545478407f284444383844444428384444287f3854545418"
    "00087e090218a4a49c787f0804047800447d40002040403d007f1028440000417f4000"
    "7c047804787c080404783844444438fc1824241818242418fc7c080404084854545424"
    "04043f44243c4040207c1c2040201c3c4030403c44281028444c9090907c4464544c44"
    "0008364100000077000000413608000201020402")
_IMAGE_EXT = ("jpg", "jpeg", "png")


def _picture_shape(a):
    """(h, w, c, chw) of an array column (samples first), or None."""
    import numpy as np
    if a.dtype not in (np.uint8, np.float32):
        return None
    s = a.shape[1:]
    if len(s) == 2:
        h, w, c, chw = s[0], s[1], 1, False
    elif len(s) == 3 and s[2] in (1, 3):
        h, w, c, chw = s[0], s[1], s[2], False
    elif len(s) == 3 and s[0] in (1, 3):
        h, w, c, chw = s[1], s[2], s[0], True
    else:
        return None
    return (h, w, c, chw) if 0 < h <= 8192 and 0 < w <= 8192 else None


def _as_numpy(v):
    """A torch tensor's numpy array (chute.Stream with torch); else v."""
    return v.numpy() if type(v).__module__.startswith("torch") else v


def _is_array(v):
    return hasattr(v, "dtype") and hasattr(v, "shape")


def _choose_picture(fields, want):
    def named_image(name):
        return name.rsplit(".", 1)[-1].lower() in _IMAGE_EXT
    if want is not None:
        if want not in fields:
            raise ValueError("no field %r in the batch" % want)
        order = [want]
    else:
        import numpy as np
        arrays = [k for k, v in fields.items() if _is_array(v)
                  and _picture_shape(v) is not None]
        order = ([k for k in arrays if fields[k].dtype == np.uint8] +
                 arrays + [k for k, v in fields.items()
                           if not _is_array(v) and named_image(k)])
        if not order:
            raise ValueError("no picture in the batch: no u8 or f32 image "
                             "array, no jpg, jpeg or png field")
    v = fields[order[0]]
    if not _is_array(v):
        raise ValueError("field %r holds files: chute.grid draws arrays; "
                         "stream it with a decode transform, or use chute "
                         "preview" % order[0])
    if _picture_shape(v) is None:
        raise ValueError("field %r holds no picture: not an u8 or f32 "
                         "array of H x W (x C) or C x H x W" % order[0])
    return order[0]


def _tiles(a, scale):
    """The column a as RGB uint8, samples first, blown up by scale."""
    import numpy as np
    h, w, c, chw = _picture_shape(a)
    a = a.reshape((len(a), c, h, w) if chw else (len(a), h, w, c))
    if chw:
        a = a.transpose(0, 2, 3, 1)
    if a.dtype == np.float32:
        f = a.astype(np.float64)
        lo = f.reshape(len(f), -1).min(axis=1)[:, None, None, None]
        hi = f.reshape(len(f), -1).max(axis=1)[:, None, None, None]
        span = np.where(hi > lo, hi - lo, 1.0)
        q = np.floor((f - lo) * 255.0 / span + 0.5)
        a = np.where(hi > lo, q, 0).astype(np.uint8)
    if c == 1:
        a = np.repeat(a, 3, axis=3)
    return a.repeat(scale, axis=1).repeat(scale, axis=2)


def _text(sheet, x, y, data, rgb):
    h, w = sheet.shape[:2]
    for ch in data:
        g = _FONT[5 * ((ch if 32 <= ch <= 126 else 63) - 32):][:5]
        for col in range(5):
            for row in range(8):
                if g[col] >> row & 1 and 0 <= x + col < w and 0 <= y + row < h:
                    sheet[y + row, x + col] = rgb
        x += FONT_W


def _label(fields, name, i):
    v = fields[name]
    if _is_array(v):
        text = str(int(v[i])).encode()
    else:
        text = bytes(v[i]).split(b"\0", 1)[0].rstrip(b" \t\r\n")
    return (name.encode("utf-8", "surrogateescape") + b" " + text)[:255]


def grid(batch, image=None, label=None, columns=None):
    """The batch (a chute.Stream batch, or a chute frame) as a contact
    sheet: a numpy uint8 array of height x width x 3.  image: the field
    drawn (default: the first u8 image array, else float32); label: the
    class shown under each key (default cls, when there is one);
    columns: tiles a row (default: a square grid)."""
    import numpy as np
    fields = {k: _as_numpy(v) for k, v in batch.fields.items()}
    keys = [k.encode("utf-8", "surrogateescape") if isinstance(k, str)
            else bytes(k) for k in batch.keys]
    n = len(keys)
    if n == 0:
        raise ValueError("the batch holds no sample")
    pic = _choose_picture(fields, image)
    if label is None:
        label = "cls" if "cls" in fields else None
    elif label not in fields:
        raise ValueError("no field %r in the batch" % label)
    h, w = _picture_shape(fields[pic])[:2]
    m = max(h, w)
    scale = -(-MIN_SIDE // m) if m < MIN_SIDE else 1
    iw, ih = w * scale, h * scale
    cols = min(columns or math.isqrt(n - 1) + 1, n)
    rows = -(-n // cols)
    cw, ch = max(iw, MIN_WIDTH), ih + 2 + 2 * FONT_H
    sheet = np.empty((PAD + rows * (ch + PAD), PAD + cols * (cw + PAD), 3),
                     np.uint8)
    sheet[:] = BACKGROUND
    tiles, per = _tiles(fields[pic], scale), cw // FONT_W
    for i in range(n):
        x = PAD + (i % cols) * (cw + PAD)
        y = PAD + (i // cols) * (ch + PAD)
        ix = x + (cw - iw) // 2
        sheet[y:y + ih, ix:ix + iw] = tiles[i]
        _text(sheet, x, y + ih + 2, keys[i][:per], KEY_RGB)
        if label is not None:
            _text(sheet, x, y + ih + 2 + FONT_H,
                  _label(fields, label, i)[:per], CLASS_RGB)
    return sheet
