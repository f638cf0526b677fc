"""chute - feed a trainer from chute datasets.

    import chute
    for batch in chute.Stream("ds", batch_size=256, split="train"):
        images = batch["jpg"]          # numpy arrays, or torch with as_torch
    ds = chute.Dataset("ds")           # random access, any sampler
    ds[0].fields["jpg"]                # bytes
    chute.grid(batch)                  # a contact sheet, numpy uint8

Stream runs `chute stream` (man chute-stream(1)) and reads its frames
(man chute-batch(5)); it needs numpy, and uses torch when it is there.
Dataset reads shards directly (man chute-shard(5)); it needs zstandard
(and xxhash to check hashes), not numpy.  Each is imported when first
used, so that one works without the other's modules.
"""

from .errors import (CacheWarning, DataError, Error, FrameError,
                     MissingDependency, NotFoundError, ShmError, StateError,
                     StreamError)

# = CH_VERSION (include/chute/common.h); tests/cli/docs.bats holds them together
__version__ = "0.2.0"
__all__ = ["Batch", "CacheWarning", "DataError", "Dataset", "Error",
           "FrameError", "MissingDependency", "NotFoundError", "Sample",
           "ShmError", "StateError", "Stream", "StreamError", "__version__",
           "collate", "grid", "manifest_id"]

_LAZY = {"Stream": "stream", "Batch": "stream",
         "Dataset": "dataset", "Sample": "dataset",
         "manifest_id": "dataset",
         "collate": "collate", "grid": "grid"}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError("module 'chute' has no attribute %r" % name)
    import importlib
    value = getattr(importlib.import_module("." + module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
