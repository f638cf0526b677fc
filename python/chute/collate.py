"""chute.collate - a DataLoader's collate_fn for chute.Dataset samples.

    import chute
    from torch.utils.data import DataLoader, RandomSampler
    ds = chute.Dataset("fashion-mnist/train")
    to_batch = chute.collate({"img": "bytes u8 28x28", "cls": "int"},
                             as_torch=True)
    for b in DataLoader(ds, batch_size=256, sampler=RandomSampler(ds),
                        collate_fn=to_batch):
        images, labels = b["img"], b["cls"]   # (256, 28, 28) u8, (256,) i64

collate(fields, *, as_torch=False) returns a callable that turns a list
of chute.Sample into a dict: each field named in `fields` becomes one
array of the batch, stacked in sample order; fields not named are left
out.  The field specs are spelled as chute stream's transforms
(man chute-stream(1)), so that chute.Stream and chute.Dataset give the
same batches:

    "bytes T [SHAPE]"  a raw field of fixed size (T: u8, i64, f16 or f32,
                       items little-endian; SHAPE such as 784 or 28x28)
                       -> an array (batch, *SHAPE) of that dtype: the
                       fields' bytes joined once, no per-sample array
    ("u8", (28, 28))   the same, as a tuple
    "int"              a text label such as b"7\\n" -> an int64 (batch,)
    "raw"              the fields' bytes, as a list (no numpy)

A field of another size, a label that is no integer or a sample without
the field raises ValueError naming the field and the sample's key.  With
as_torch=True the arrays are torch tensors (torch.from_numpy: no copy).
The callable pickles, for DataLoader workers.  Needs numpy (and torch
with as_torch).
"""

import math
from collections.abc import Callable

import numpy as np

__all__ = ["collate"]

# chute stream's item types (little-endian, as the shard stores them)
_DTYPES = {"u8": np.dtype("u1"), "i64": np.dtype("<i8"),
           "f16": np.dtype("<f2"), "f32": np.dtype("<f4")}


def collate(fields: "dict", *, as_torch: bool = False) -> "Callable[[list], dict]":
    """A collate_fn that stacks the named fields of a list of Samples:
    see the module's documentation for `fields`."""
    return Collate(fields, as_torch=as_torch)


class Collate:
    """The callable collate() returns; fields holds the parsed specs,
    name -> ("int",) | ("raw",) | ("bytes", dtype, shape)."""

    def __init__(self, fields, *, as_torch=False):
        if not isinstance(fields, dict) or not fields:
            raise ValueError("collate: fields is a dict of field name -> "
                             "spec, not %r" % (fields,))
        if as_torch:  # fail now, not in the first batch
            try:
                import torch  # noqa: F401
            except ImportError as e:
                from .errors import MissingDependency
                raise MissingDependency("collate(as_torch=True) needs torch "
                                        "(Debian: python3-torch)", "torch") from e
        self.fields = {name: _parse(name, spec)
                       for name, spec in fields.items()}
        self.as_torch = bool(as_torch)

    def __call__(self, samples):
        out = {}
        for name, spec in self.fields.items():
            data = _column(samples, name)
            if spec[0] == "raw":
                out[name] = data
                continue
            if spec[0] == "int":
                array = _ints(samples, name, data)
            else:
                array = _stack(samples, name, data, spec[1], spec[2])
            if self.as_torch:
                import torch
                array = torch.from_numpy(array)
            out[name] = array
        return out

    def __repr__(self):
        return "chute.collate(%r%s)" % (
            {n: _spelling(s) for n, s in self.fields.items()},
            ", as_torch=True" if self.as_torch else "")


def _parse(name, spec):
    """A spec as ("int",), ("raw",) or ("bytes", dtype, shape)."""
    if isinstance(spec, tuple) and len(spec) == 2:
        kind, shape = spec
        if isinstance(shape, int):
            shape = (shape,)
        return _bytes_spec(name, kind, tuple(shape))
    words = spec.split() if isinstance(spec, str) else []
    if words in (["int"], ["raw"]):
        return (words[0],)
    if words and words[0] == "bytes" and len(words) in (2, 3):
        shape = ()
        if len(words) == 3:
            try:
                shape = tuple(int(d) for d in words[2].split("x"))
            except ValueError:
                shape = None
        return _bytes_spec(name, words[1], shape)
    raise ValueError("collate: field '%s': %r is not \"int\", \"raw\", "
                     "\"bytes T [SHAPE]\" or (T, SHAPE)" % (name, spec))


def _bytes_spec(name, kind, shape):
    dtype = _DTYPES.get(kind)
    if dtype is None:
        raise ValueError("collate: field '%s': item type %r is not one of "
                         "%s" % (name, kind, ", ".join(_DTYPES)))
    if shape is None or not 0 <= len(shape) <= 4 or \
            any(type(d) is not int or d < 1 for d in shape):
        raise ValueError("collate: field '%s': a shape is 1 to 4 sizes of "
                         "at least 1 (such as 28x28), not %r" % (name, shape))
    return ("bytes", dtype, shape)


def _spelling(spec):
    if spec[0] != "bytes":
        return spec[0]
    kind = next(k for k, d in _DTYPES.items() if d == spec[1])
    return "bytes %s%s" % (kind, " " + "x".join(map(str, spec[2]))
                           if spec[2] else "")


def _column(samples, name):
    """The field `name` of every sample, a list of bytes."""
    try:
        return [s.fields[name] for s in samples]
    except KeyError:
        key = next(s.key for s in samples if name not in s.fields)
        raise ValueError("collate: sample '%s' has no field '%s'"
                         % (key, name)) from None


def _stack(samples, name, data, dtype, shape):
    """One array (batch, *shape) from the fields' bytes, joined once."""
    size = math.prod(shape) * dtype.itemsize if shape else \
        len(data[0]) if data else 0
    # a bytearray: torch.from_numpy wants an array it may write to
    joined = bytearray().join(data)
    if len(joined) != size * len(data) or size % dtype.itemsize:
        _wrong_size(samples, name, data, dtype, shape, size)
    rows = (len(data),) + (shape or (size // dtype.itemsize,))
    return np.frombuffer(joined, dtype=dtype).reshape(rows)


def _wrong_size(samples, name, data, dtype, shape, size):
    """Raises ValueError naming the first sample of a wrong size."""
    s = next((s for s, d in zip(samples, data) if len(d) != size),
             samples[0])
    if shape:
        need = "%s %s needs %d" % (_kind(dtype), "x".join(map(str, shape)),
                                   size)
    else:
        need = "%s needs a multiple of %d, the same in every sample of a " \
               "batch (%d in the first)" % (_kind(dtype), dtype.itemsize,
                                             size)
    raise ValueError("collate: field '%s': has %d bytes; %s (sample '%s')"
                     % (name, len(s.fields[name]), need, s.key))


def _kind(dtype):
    return next(k for k, d in _DTYPES.items() if d == dtype)


def _ints(samples, name, data):
    """int64 labels from their text (b"7", b"7\\n", b"-1")."""
    try:
        return np.array([int(d) for d in data], dtype=np.int64)
    except (ValueError, OverflowError):
        for s, d in zip(samples, data):
            try:
                np.int64(int(d))
            except (ValueError, OverflowError):
                raise ValueError("collate: field '%s': %r is not an int64 "
                                 "(sample '%s')" % (name, bytes(d[:40]),
                                                    s.key)) from None
        raise
