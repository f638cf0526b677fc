"""chute.Dataset - random access to a local chute dataset, without chute.

    import chute
    ds = chute.Dataset("ds", split="train")   # a folder, or its manifest.json
    len(ds)                                   # samples in the split
    s = ds[0]                                 # a chute.Sample
    s.key, s.fields["jpg"], s.index           # str, bytes, int
    ds.get("n01440764/n01440764_10026")       # by key; KeyError if absent
    "some/key" in ds, ds.keys(), ds.fields, ds.classes, ds.id

A Dataset reads the manifest (man chute-manifest(5)) and the shards
(man chute-shard(5)) itself, with the standard library, python3-zstandard
and python3-xxhash: no chute binary, no numpy, no torch.  It is a
map-style dataset (__getitem__ and __len__) for torch.utils.data.DataLoader
with any sampler; it pickles without its open files and caches, and opens
its shards again lazily in each worker process (also after a fork).

Memory stays bounded: a shard is opened when a sample in it is first
read, and only the parts of its index that are needed are decoded (a page
at a time in a format 1.1 shard); the decoded blocks of the last reads are
kept in a least-recently-used cache of cache_bytes (256 MiB by default,
whatever the dataset's size), with the samples already read from them;
open shards are kept within max_open files and index_bytes of decoded
index, least recently used released first.  Each DataLoader worker has
its own caches.

Speed: a sample read again from a cached block costs a dictionary look-up
and a slice per field, a few microseconds: a DataLoader with a
RandomSampler over Fashion-MNIST (47 MB) runs about as fast as one over
numpy arrays in memory (scripts/bench-dataset.sh).  When the dataset fits
the cache (cache_need: its decoded size, the manifest's "bytes", and
about 600 bytes a sample), decoding a block also checks and prepares
every sample in it at once, which makes the first pass faster too (the
garbage collector paused meanwhile: those objects hold no cycles).
Random reads over a dataset that does not fit decode a block for most
reads (a millisecond each for 1 MiB blocks): chute.CacheWarning says so,
once, naming the cache_bytes= that would hold it.  chute.collate() makes
a DataLoader's collate_fn that stacks fixed-size fields into arrays.

Checks, with verify=True (the default): at open, the manifest's rules
(counts, first samples, sizes, paths, splits) and each shard file's size
against the manifest (one stat(2) each); when a shard is first read, its
header, footer, index and page hashes and the index's bounds, and that it
is the file its manifest entry names: its sample count, its seal (a
manifest of format version 2) and its field names (in the schema); each
block's hash each time it is read and decoded; each sample's content hash
the first time it is returned from a decoded block (bytes that passed both
cannot change while the block stays cached; a block decoded again has its
samples checked again).  A failure raises chute.DataError whose message
names the file and the byte offset (and the sample's key when known); its
attributes path, offset and key say the same.  Not checked: a shard's
whole-file XXH3-128 and the manifest's id (chute verify checks them;
chute.manifest_id(ds.manifest) computes the id, to compare with ds.id).
verify=False skips the hashes, not the bounds.

A path that does not exist, or a folder without manifest.json, raises
chute.dataset.NotFoundError: both a chute.Error and a FileNotFoundError.
A shard or split file that the manifest lists but that is missing or of
another size raises chute.DataError.
"""

import array
import bisect
import collections
from collections.abc import Iterator
import gc
import json
import os
import re
import struct
import sys
import warnings

from .errors import (CacheWarning, DataError, Error, MissingDependency,
                     NotFoundError)
from . import shard as _shard
from .shard import MAGIC, Shard

__all__ = ["CacheWarning", "DEFAULT_CACHE_BYTES", "Dataset", "NotFoundError",
           "Sample", "manifest_id"]

# Decoded blocks a Dataset keeps by default: enough for a dataset of a few
# hundred MB (Fashion-MNIST is 47 MB) to be read at random from memory
# after its first pass.  Each DataLoader worker has a cache of its own.
DEFAULT_CACHE_BYTES = 256 << 20
# What a remembered sample costs beside its block's bytes (tuples, its
# fields' bounds, its key and number, a dict slot: tracemalloc measured
# about 570 bytes for two fields and a 12-byte key), so that cache_bytes
# bounds them too; plus its key's length.
_RECORD_BYTES = 400
_FIELD_RECORD_BYTES = 80
# The cache thrashes when, once full, it decodes this many times the
# bytes of the samples it returns (a sequential pass decodes each block
# once: about 1x); judged after _THRASH_READS reads.
_THRASH_FACTOR = 8
_THRASH_READS = 256

_MAX_INT = (1 << 63) - 1
_HASH = re.compile(r"\A[0-9a-f]{32}\Z")
_SPLIT_NAME = re.compile(r"\A[a-z0-9_-]{1,32}\Z")
# chute-manifest(5), SHARD PATHS: never outside shards/, never a control byte
_SHARD_PATH = re.compile(r"\Ashards/[^/\x00-\x1f\x7f]+\.chs\Z")
_MANIFEST_MAX = 1 << 30


class Sample(collections.namedtuple("Sample", "key fields index number")):
    """One sample of a Dataset, as ds[i] returns it.

    key     the sample's key (str; bytes that are not UTF-8 are kept as
            surrogate escapes, as os.fsdecode does)
    fields  dict: field name (str) -> the field's bytes, in name order
    index   its position in the Dataset: ds[s.index] == s
    number  its dataset-wide sample number (the manifest's first_sample
            counts them; equal to index without a split)

    s["jpg"] is short for s.fields["jpg"].  A named tuple: it pickles,
    and torch's default collate turns a batch of them into one Sample of
    a tuple (keys), a dict of lists (fields) and tensors (index, number)
    when every sample of the batch has the same fields.
    """

    __slots__ = ()

    def __getitem__(self, item):
        """s["jpg"] is s.fields["jpg"]; s[0] is s.key (a tuple's item)."""
        if isinstance(item, str):
            return self.fields[item]
        return tuple.__getitem__(self, item)

    def __repr__(self):
        """Short: the key, the position and each field's size, never the
        bytes (a batch of images would fill the screen)."""
        fields = self.fields
        names = ", ".join(map(str, fields)) if isinstance(fields, dict) \
            else type(fields).__name__
        if not isinstance(self.key, str):
            # torch's default collate made one Sample of a batch of them
            return "<chute.Sample batch of %d: %s>" % (
                len(self.key), names or "no fields")
        return "<chute.Sample %r index %s: %s>" % (
            self.key, self.index, ", ".join(
                "%s %s" % (name, _length(data))
                for name, data in fields.items()) or "no fields")


def _length(data):
    try:
        return "%d B" % len(data)
    except TypeError:
        return type(data).__name__


# A Sample without namedtuple's __new__ (a Python function): the hot path
# builds one per read.
_new_sample = tuple.__new__


def _key_bytes(key):
    if isinstance(key, str):
        return key.encode("utf-8", "surrogateescape")
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key)
    raise TypeError("a sample key is a str or bytes, not %s"
                    % type(key).__name__)


def _text(b):
    return b.decode("utf-8", "surrogateescape")


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError("duplicate key %r" % k)
        out[k] = v
    return out


_LOCATIONS = ("name", "parent", "chute_version", "sources")


def manifest_id(m: dict) -> str:
    """The id a manifest (a parsed dict) should carry, by THE ID rules of
    chute-manifest(5): XXH3-128 of its canonical JSON without "id"; from
    format_version 2 also without where and by what it was written (name,
    parent, chute_version, sources, shard and split file paths).  Compare
    it with m["id"] to tell a manifest edited by hand.  Needs xxhash."""
    if _shard.xxhash is None:
        raise Error("chute.manifest_id needs python3-xxhash")
    doc = {k: v for k, v in m.items() if k != "id"}
    if m.get("format_version") != 1:
        for k in _LOCATIONS:
            doc.pop(k, None)
        doc["shards"] = [{k: v for k, v in s.items() if k != "path"}
                         for s in doc.get("shards", [])]
        splits = doc.get("splits")
        if isinstance(splits, dict) and isinstance(splits.get("sets"), dict):
            splits = dict(splits)
            splits["sets"] = {n: {k: v for k, v in s.items() if k != "path"}
                              for n, s in splits["sets"].items()}
            doc["splits"] = splits
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, allow_nan=False)
    # the man page's control escapes: \u001F, upper case hexadecimal
    text = re.sub(r'(?<!\\)((?:\\\\)*)\\u00([0-9a-f]{2})',
                  lambda g: g.group(1) + "\\u00" + g.group(2).upper(), text)
    return _shard.xxhash.xxh3_128_hexdigest(text.encode("utf-8"))


def _has_nul(v) -> bool:
    """Whether a parsed JSON value holds U+0000 in a string or a key."""
    if isinstance(v, str):
        return "\0" in v
    if isinstance(v, dict):
        return any(_has_nul(k) or _has_nul(x) for k, x in v.items())
    if isinstance(v, list):
        return any(_has_nul(x) for x in v)
    return False


class _Manifest:
    """Reads and checks a manifest.json; errors name the key."""

    def __init__(self, path):
        self.path = path

    def fail(self, where, what):
        e = DataError("%s: %s (%s)" % (where, what, self.path))
        e.path, e.offset, e.key = self.path, None, None
        raise e

    def load(self):
        try:
            with open(self.path, "rb") as f:
                data = f.read(_MANIFEST_MAX + 1)
        except FileNotFoundError:
            raise NotFoundError("no chute dataset at '%s': no such file"
                                % self.path, self.path) from None
        if len(data) > _MANIFEST_MAX:
            self.fail("manifest", "larger than 1 GiB")
        try:
            m = json.loads(data.decode("utf-8"),
                           object_pairs_hook=_no_duplicates,
                           parse_constant=_refuse_constant)
        except UnicodeDecodeError as e:
            self.fail("manifest", "not UTF-8 (byte %d)" % e.start)
        except json.JSONDecodeError as e:
            e2 = DataError("invalid JSON: %s (%s:%d:%d)" % (
                e.msg, self.path, e.lineno, e.colno))
            e2.path, e2.offset, e2.key = self.path, e.pos, None
            raise e2 from None
        except ValueError as e:
            self.fail("manifest", str(e))
        if _has_nul(m):
            # as chute refuses it (chute-manifest(5), Encoding)
            e2 = DataError("U+0000 in a string is not allowed (%s)"
                           % self.path)
            e2.path, e2.offset, e2.key = self.path, None, None
            raise e2
        self.check(m)
        return m

    def need(self, obj, key, kind, where=""):
        name = where + key
        if key not in obj:
            self.fail(name, "missing")
        v = obj[key]
        if kind == "int":
            if type(v) is not int or not 0 <= v <= _MAX_INT:
                self.fail(name, "expected a non-negative integer")
        elif kind == "hash":
            if not isinstance(v, str) or not _HASH.match(v):
                self.fail(name, "expected 32 lowercase hexadecimal digits")
        elif kind == "name":
            if not isinstance(v, str) or not v:
                self.fail(name, "expected a string, not empty")
        elif not isinstance(v, kind):
            self.fail(name, "expected %s" % {
                dict: "an object", list: "an array", str: "a string"}.get(
                    kind, kind.__name__))
        return v

    def check(self, m):
        if not isinstance(m, dict):
            self.fail("manifest", "expected a JSON object")
        if m.get("format") != "chute-manifest":
            self.fail("format", "expected \"chute-manifest\"")
        v = m.get("format_version")
        if v not in (1, 2) or type(v) is not int:
            self.fail("format_version", "unsupported version %s (this reader"
                      " reads versions 1 and 2)" % json.dumps(v))
        self.need(m, "id", "hash")
        self.need(m, "name", "name")
        total = self.need(m, "samples", "int")
        self.need(m, "bytes", "int")
        shard_bytes = self.need(m, "shard_bytes", "int")
        shards = self.need(m, "shards", list)
        paths = set()
        at = size = 0
        for i, s in enumerate(shards):
            w = "shards[%d]" % i
            if not isinstance(s, dict):
                self.fail(w, "expected an object")
            path = self.need(s, "path", str, w + ".")
            if not _SHARD_PATH.match(path):
                self.fail(w + ".path", "%r is not shards/NAME.chs (NAME a "
                          "file name: no '/', no control character)" % path)
            if path in paths:
                self.fail(w + ".path", "'%s' listed twice" % path)
            paths.add(path)
            size += self.need(s, "bytes", "int", w + ".")
            self.need(s, "xxh3_128", "hash", w + ".")
            if v > 1:
                self.need(s, "seal", "hash", w + ".")
            elif "seal" in s:
                self.fail(w + ".seal", "not in a manifest of version 1")
            n = self.need(s, "samples", "int", w + ".")
            first = self.need(s, "first_sample", "int", w + ".")
            if first != at:
                self.fail(w + ".first_sample", "expected %d, where the "
                          "previous shard ends" % at if i else
                          "expected 0")
            at += n
        if at != total:
            self.fail("samples", "%d, but the shards hold %d" % (total, at))
        if size != shard_bytes:
            self.fail("shard_bytes", "%d, but the shards have %d bytes"
                      % (shard_bytes, size))
        schema = self.need(m, "schema", dict)
        fields = self.need(schema, "fields", dict, "schema.")
        for name, f in fields.items():
            w = "schema.fields.%s" % name
            if not name or not isinstance(f, dict):
                self.fail(w, "expected an object named by a field")
            if self.need(f, "count", "int", w + ".") > total:
                self.fail(w + ".count", "more than the %d samples" % total)
            self.need(f, "bytes", "int", w + ".")
        classes = self.need(m, "classes", list)
        if any(not isinstance(c, str) or not c for c in classes) or \
                any(a.encode() >= b.encode()
                    for a, b in zip(classes, classes[1:])):
            self.fail("classes", "expected strings, not empty, sorted and "
                      "unique")
        splits = self.need(m, "splits", dict)
        if splits:
            sets = self.need(splits, "sets", dict, "splits.")
            if not sets:
                self.fail("splits.sets", "expected at least one split")
            n = 0
            for name, sp in sets.items():
                w = "splits.sets.%s" % name
                if not _SPLIT_NAME.match(name) or not isinstance(sp, dict):
                    self.fail(w, "expected a split name of 1 to 32 of a-z, "
                              "0-9, _ and -, mapped to an object")
                path = self.need(sp, "path", str, w + ".")
                self.check_path(w + ".path", path)
                count = self.need(sp, "samples", "int", w + ".")
                if self.need(sp, "bytes", "int", w + ".") != 8 * count:
                    self.fail(w + ".bytes", "expected 8 bytes a sample")
                self.need(sp, "hash", "hash", w + ".")
                n += count
            if n != total:
                self.fail("splits.sets", "the splits hold %d samples, the "
                          "dataset %d" % (n, total))

    def check_path(self, where, path):
        parts = path.split("/")
        if not path or path.startswith("/") or \
                any(p in ("", ".", "..") for p in parts) or "\0" in path:
            self.fail(where, "'%s' is not a relative path inside the "
                      "dataset's folder" % path)


def _human(n):
    """n bytes, as 512 B, 3.1 KiB, 45.0 MiB, 1.2 GiB."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return "%d B" % n if unit == "B" else "%.1f %s" % (n, unit)
        n /= 1024


def _round_up_mib(n):
    return -(-n // (1 << 20)) << 20


def _refuse_constant(name):
    raise ValueError("%s is not a JSON number" % name)


# the content hash of man chute-shard(5) puts a field's name, a NUL and
# its size (u64 little-endian) before its bytes
_U64 = struct.Struct("<Q")
_Layout = collections.namedtuple("_Layout", "names sizes heads cost")

_ShardInfo = collections.namedtuple("_ShardInfo",
                                    "path name bytes samples first seal")


class Dataset:
    """A local chute dataset, read sample by sample.

    Dataset(path, *, split=None, verify=True, cache_bytes=256 MiB,
            index_bytes=256 MiB, max_open=64)

    path         a dataset folder (holding manifest.json and shards/), its
                 manifest.json (or another manifest file: shard paths are
                 relative to its folder), or a lone .chs shard (no
                 manifest: no id, no classes, no splits).
    split        the name of a split of the manifest (chute split makes
                 them: train, val, test): the Dataset then holds the
                 samples of that split alone, in dataset order.  An
                 unknown name raises chute.Error listing the splits there
                 are.
    verify       check hashes (see the module's documentation); needs
                 python3-xxhash.
    cache_bytes  bytes of decoded blocks kept, least recently used
                 dropped first (default DEFAULT_CACHE_BYTES, 256 MiB,
                 whatever the dataset's size; each DataLoader worker has
                 its own); 0 keeps none (at least the block being read is
                 decoded, whatever its size).  With each cached block go
                 the samples already read from it, checked, counted in
                 cache_bytes: reading one again costs a few microseconds.
                 A dataset that fits (cache_need: its decoded size, the
                 manifest's "bytes", and about 600 bytes a sample) is
                 read at random at memory speed; one that does not,
                 read at random, decodes a block for most reads:
                 chute.CacheWarning says so, once, when the cache, once
                 full, decodes more than 8 times the bytes it returns.
                 Raise cache_bytes then, or read in dataset order
                 (chute.Stream shuffles without this cost).
    index_bytes  bytes of decoded shard indexes kept, least recently
                 used shard released first.
    max_open     shard files kept open at most.

    A Dataset is not safe to share between threads (each thread can have
    its own); worker processes are fine, each with its own copy.

    Raises NotFoundError (a chute.Error and a FileNotFoundError) when
    there is no dataset at path, chute.DataError when the manifest, a
    split file or a shard's size fails a check, chute.Error for a bad
    split name, OSError when a file cannot be read.

    Attributes: path (as given), root (the folder shard paths are relative
    to), manifest (the parsed manifest, a dict; {} for a lone shard), id
    (the manifest's id, or None), name, split, fields, classes,
    decoded_bytes (the bytes of every sample's fields, what the blocks
    decode to; the whole dataset's, also with split), cache_need (what
    the cache takes to hold every sample: decoded_bytes and about 600
    bytes a sample), cache_bytes.
    """

    def __init__(self, path: "str | os.PathLike[str]", *,
                 split: "str | None" = None, verify: bool = True,
                 cache_bytes: int = DEFAULT_CACHE_BYTES,
                 index_bytes: int = 256 << 20, max_open: int = 64) -> None:
        if verify and _shard.xxhash is None:
            raise MissingDependency(
                "chute.Dataset(verify=True) needs xxhash (Debian: "
                "python3-xxhash; pip: chute[dataset]), or verify=False",
                "xxhash")
        for what, v, least in (("cache_bytes", cache_bytes, 0),
                               ("index_bytes", index_bytes, 0),
                               ("max_open", max_open, 1)):
            if not isinstance(v, int) or v < least:
                raise ValueError("%s must be an integer >= %d, not %r"
                                 % (what, least, v))
        self.path = os.fspath(path)
        if isinstance(self.path, bytes):
            self.path = os.fsdecode(self.path)
        self.split = split
        self.verify = verify
        self.cache_bytes = cache_bytes
        self.index_bytes = index_bytes
        self.max_open = max_open
        self._ids = None
        self._open_path()
        self._starts = [s.first for s in self._shards]
        if split is not None:
            self._ids = self._load_split(split)
        self._len = (len(self._ids) if self._ids is not None
                     else self._total)
        # what an average read returns, to tell a thrashing cache
        self._sample_bytes = max(1, self.decoded_bytes // max(1, self._total))
        # what holding every sample in the cache takes: the blocks, and
        # each sample remembered with them (a 32-byte key, say)
        self.cache_need = self.decoded_bytes + self._total * (
            _RECORD_BYTES + _FIELD_RECORD_BYTES * max(1, len(self.fields))
            + 32)
        self._runtime()

    # -- opening ---------------------------------------------------------

    def _check_binding(self, r, info):
        """The shard file is the one its manifest entry names: its seal
        (format version 2) and its fields (the schema's)."""
        if info.seal is not None and _shard.xxhash is not None and \
                r.seal() != info.seal:
            r.close()
            r.fail(0, "not the shard the manifest names: its seal is %s, "
                   "the manifest says %s (run chute verify)"
                   % (r.seal(), info.seal))
        if self.manifest:
            listed = self.manifest["schema"]["fields"]
            for n in r.names:
                if _text(n) not in listed:
                    r.close()
                    r.fail(None, "holds field '%s', which the manifest's "
                           "schema does not list (run chute verify)"
                           % _text(n))

    def _open_path(self):
        p = self.path
        if os.path.isdir(p):
            self.root = p
            mpath = os.path.join(p, "manifest.json")
            if not os.path.exists(mpath):
                raise NotFoundError("'%s' is not a chute dataset: it has no "
                                    "manifest.json" % p, mpath)
        elif os.path.exists(p):
            with open(p, "rb") as f:
                head = f.read(len(MAGIC))
            # a .chs file is a shard whatever its bytes, as for chute ls
            if head == MAGIC or p.endswith(".chs"):
                self._open_lone_shard(p)
                return
            mpath = p
            self.root = os.path.dirname(p) or "."
        else:
            raise NotFoundError("no chute dataset at '%s': no such file or "
                                "folder" % p, p)
        self.manifest_path = mpath
        m = self.manifest = _Manifest(mpath).load()
        self.id, self.name = m["id"], m["name"]
        self.fields = sorted(m["schema"]["fields"], key=str.encode)
        self.classes = list(m["classes"])
        self._total = m["samples"]
        self.decoded_bytes = m["bytes"]
        self._shards = []
        for i, s in enumerate(m["shards"]):
            full = os.path.join(self.root, *s["path"].split("/"))
            self._shards.append(_ShardInfo(full, full, s["bytes"],
                                           s["samples"], s["first_sample"],
                                           s.get("seal")))
            try:
                size = os.stat(full).st_size
            except FileNotFoundError:
                self._fail(full, "missing: shards[%d] of %s lists it"
                           % (i, mpath))
            if size != s["bytes"]:
                self._fail(full, "%d bytes, the manifest says %d: run chute "
                           "verify" % (size, s["bytes"]))

    def _open_lone_shard(self, p):
        sh = Shard(p, verify=self.verify)
        try:
            self.root = os.path.dirname(p) or "."
            self.manifest_path = None
            self.manifest = {}
            self.id = None
            self.name = os.path.basename(p)
            self.fields = sorted(_text(n) for n in sh.names)
            self.classes = []
            self._total = sh.sample_count
            self.decoded_bytes = sum(b[2] for b in sh.blocks)
            self._shards = [_ShardInfo(p, p, sh.size, sh.sample_count, 0,
                                       None)]
        finally:
            sh.close()

    @staticmethod
    def _fail(path, what, offset=None):
        e = DataError("'%s': %s" % (path, what))
        e.path, e.offset, e.key = path, offset, None
        raise e

    def _load_split(self, name):
        sets = self.manifest.get("splits", {}).get("sets", {})
        where = self.path
        if name not in sets:
            if not sets:
                raise Error("'%s' has no splits: %s" % (
                    where, "make them with chute split" if self.manifest
                    else "a lone shard has no manifest to record them"))
            raise Error("'%s' has no split '%s'; its splits: %s"
                        % (where, name, ", ".join(sorted(sets))))
        sp = sets[name]
        path = os.path.join(self.root, *sp["path"].split("/"))
        try:
            with open(path, "rb") as f:
                data = f.read(sp["bytes"] + 1)
        except FileNotFoundError:
            self._fail(path, "missing: split '%s' of %s lists it"
                       % (name, self.manifest_path))
        if len(data) != sp["bytes"]:
            self._fail(path, "%s bytes, the manifest says %d: run chute "
                       "verify" % ("more" if len(data) > sp["bytes"]
                                   else len(data), sp["bytes"]))
        if self.verify:
            got = _shard.xxhash.xxh3_128_hexdigest(data)
            if got != sp["hash"]:
                self._fail(path, "does not match the manifest's hash: run "
                           "chute verify")
        ids = array.array("Q")
        ids.frombytes(data)
        if sys.byteorder != "little":
            ids.byteswap()
        prev = -1
        for i, v in enumerate(ids):
            if v <= prev or v >= self._total:
                self._fail(path, "sample number %d is %s" % (
                    v, "past the dataset's end" if v >= self._total
                    else "not above the previous one"), 8 * i)
            prev = v
        return ids

    # -- state that is not pickled -----------------------------------------

    _RUNTIME = ("_pid", "_readers", "_open", "_blocks", "_block_bytes",
                "_records", "_names", "_reads", "_full_at", "_decoded",
                "_warned")

    def _runtime(self):
        self._pid = os.getpid()
        self._readers = {}                        # shard -> Shard
        self._open = collections.OrderedDict()    # shard -> Shard, LRU
        # (shard, block) -> [raw bytes, numbers of its remembered samples,
        # bytes counted against cache_bytes], least recently used first
        self._blocks = collections.OrderedDict()
        self._block_bytes = 0
        # sample number -> (key, block's cache key, raw, field names,
        # bounds: where each field starts in raw, then where the last
        # ends): a sample checked once against its cached block, forgotten
        # with the block.  Only strings, ints and tuples, which the garbage
        # collector stops tracking: slices would be tracked for good, and
        # walked by every full collection (half the first pass's time).
        self._records = {}
        self._names = {}         # field names (bytes) -> the same as str
        self._reads = 0          # samples read, for the thrash warning
        self._full_at = None     # _reads when the cache first dropped a block
        self._decoded = 0        # bytes decoded since then
        self._warned = False

    def __getstate__(self):
        state = self.__dict__.copy()
        for k in self._RUNTIME:
            state.pop(k, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._runtime()

    def close(self):
        """Closes the shard files and drops the caches.  The Dataset can
        still be read: it opens what it needs again."""
        for r in self._readers.values():
            r.close()
        self._runtime()

    def __enter__(self):
        """with chute.Dataset(path) as ds: ... closes ds at the end."""
        return self

    def __exit__(self, *exc):
        """Closes the Dataset (see close)."""
        self.close()
        return False

    def _reader(self, s):
        if self._pid != os.getpid():
            # forked (a DataLoader worker): the parent's descriptors and
            # caches are the parent's
            for r in self._readers.values():
                r.close()
            self._runtime()
        r = self._readers.get(s)
        info = self._shards[s]
        if r is None:
            r = Shard(info.path, verify=self.verify, name=info.name)
            if r.size != info.bytes:
                r.close()
                r.fail(None, "%d bytes, the manifest says %d: run chute "
                       "verify" % (r.size, info.bytes))
            if r.sample_count != info.samples:
                r.close()
                r.fail(r.size - 32, "the shard holds %d samples, the "
                       "manifest says %d" % (r.sample_count, info.samples))
            self._check_binding(r, info)
            self._readers[s] = r
        self._open[s] = r
        self._open.move_to_end(s)
        return r

    def _trim(self, keep):
        """Releases the least recently used shards beyond max_open or
        index_bytes, never `keep`."""
        opened = self._open
        while len(opened) > 1:
            if len(opened) <= self.max_open and \
                    sum(r.index_memory for r in opened.values()) <= \
                    self.index_bytes:
                return
            s = next(iter(opened))
            if s == keep:
                opened.move_to_end(s)
                s = next(iter(opened))
            opened.pop(s).release()

    def _block(self, s, r, b, key):
        k = (s, b)
        cached = self._blocks.get(k)
        if cached is not None:
            self._blocks.move_to_end(k)
            return cached[0]
        raw = r.block(b, key)
        self._blocks[k] = [raw, [], len(raw)]
        self._block_bytes += len(raw)
        self._evict()
        if self._full_at is not None:
            self._decoded += len(raw)
            self._check_thrash()
        return raw

    def _evict(self):
        """Drops the least recently used blocks, and the samples
        remembered with them, until the cache fits cache_bytes."""
        records = self._records
        while self._block_bytes > self.cache_bytes and self._blocks:
            _, (_, numbers, cost) = self._blocks.popitem(last=False)
            self._block_bytes -= cost
            for number in numbers:
                del records[number]
            if self._full_at is None:
                self._full_at = self._reads

    def _remember(self, number, s, e, raw, key):
        """Keeps sample `number` (its Entry e, checked, in block raw) for
        the next reads, while its block stays cached."""
        k = (s, e.block)
        cached = self._blocks.get(k)
        if cached is None or cached[0] is not raw or number in self._records:
            return  # its block dropped at once (a cache too small), or
            # remembered already (ds.get reads past the records)
        at = e.offset
        bounds = [at]
        for _, size in e.fields:
            at += size
            bounds.append(at)
        names = self._field_names(tuple(name for name, _ in e.fields))
        self._records[number] = (key, k, raw, names, tuple(bounds))
        cost = _RECORD_BYTES + _FIELD_RECORD_BYTES * len(names) + len(key)
        cached[1].append(number)
        cached[2] += cost
        self._block_bytes += cost
        self._evict()

    def _check_thrash(self):
        """Warns once when the full cache decodes much more than the reads
        return: random reads over a dataset larger than cache_bytes."""
        reads = self._reads - self._full_at
        if self._warned or reads < _THRASH_READS or \
                self._decoded <= _THRASH_FACTOR * reads * self._sample_bytes \
                or self.cache_need <= self.cache_bytes:
            return
        self._warned = True
        warnings.warn(
            "chute.Dataset(%r): its cache thrashes: %d reads decoded %s of "
            "blocks for about %s of samples, as the dataset (%s decoded, %s "
            "in the cache) does not fit cache_bytes=%d; pass cache_bytes=%d "
            "(or more) to keep it in memory"
            % (self.path, reads, _human(self._decoded),
               _human(reads * self._sample_bytes), _human(self.decoded_bytes),
               _human(self.cache_need), self.cache_bytes,
               _round_up_mib(self.cache_need * 11 // 10)),
            CacheWarning, stacklevel=5)

    def _locate(self, number):
        s = bisect.bisect_right(self._starts, number) - 1
        return s, number - self._starts[s]

    def _sample(self, index, number):
        """The Sample read from its shard: the entry and the content hash
        checked, then remembered with its cached block, so that the next
        read of it (__getitem__) is a dictionary look-up and a slice per
        field."""
        s, local = self._locate(number)
        r = self._reader(s)
        e = r.entry(local)
        decoding = (s, e.block) not in self._blocks
        raw = self._block(s, r, e.block, e.key)
        fields = r.sample_fields(e, raw)
        r.check_sample(local, e, fields)
        key = _text(e.key)
        self._remember(number, s, e, raw, key)
        if decoding and self.cache_need <= self.cache_bytes:
            self._remember_block(s, r, e.block, local, raw)
        self._trim(s)
        return Sample(key, {_text(n): d for n, d in fields}, index, number)

    def _remember_block(self, s, r, b, local, raw):
        """Remembers every sample of block b (just decoded) at once, each
        checked as a read checks it, in one loop: a dataset that fits
        the cache is read at random several times faster in its first
        pass than sample by sample.  Not when it does not fit: the block would likely be dropped before
        most of them are read.  A sample that fails a check, or whose
        entry lies in an index page that fails one, is passed over:
        reading it raises."""
        k = (s, b)
        cached = self._blocks.get(k)
        if cached is None or cached[0] is not raw:
            return  # dropped at once: a cache smaller than the block
        paused = gc.isenabled()
        if paused:
            # Thousands of tuples that live on: each collection they
            # trigger would walk every object of the program (torch's
            # too) again.  They hold no cycles; one collection after the
            # loop stops tracking them at once.
            gc.disable()
        try:
            self._remember_entries(s, r, b, local, raw, cached)
        finally:
            if paused:
                gc.enable()

    def _remember_entries(self, s, r, b, local, raw, cached):
        """_remember_block's work, cached being the block's cache entry."""
        k = (s, b)
        try:
            entries = r.block_entries(b, local)
        except DataError:
            # a damaged index page that this read does not need: reading
            # a sample it holds raises
            return
        first, records, numbers = self._starts[s], self._records, cached[1]
        view = memoryview(raw)  # slices to hash, not copies
        layouts = {}  # Entry.fields -> its _Layout, shared by most samples
        cost = 0
        verify, hash64 = r.verify, _shard.xxhash and \
            _shard.xxhash.xxh3_64_intdigest
        for j, e in entries:
            number = first + j
            if number in records:
                continue
            lay = layouts.get(e.fields)
            if lay is None:
                lay = layouts[e.fields] = self._layout(e.fields)
            at = e.offset
            bounds, parts = [at], []
            for size, head in zip(lay.sizes, lay.heads):
                end = at + size
                parts += (head, view[at:end])
                bounds.append(end)
                at = end
            if verify and hash64(b"".join(parts)) != e.hash:
                continue
            key = e.key.decode("utf-8", "surrogateescape")
            records[number] = (key, k, raw, lay.names, tuple(bounds))
            numbers.append(number)
            cost += lay.cost + len(key)
        cached[2] += cost
        self._block_bytes += cost
        self._evict()

    def _layout(self, fields):
        """What the samples of one field layout ((name, size), ...) share:
        the names (str), the sizes, what the content hash puts before each
        field, the cost in the cache."""
        names = self._field_names(tuple(name for name, _ in fields))
        return _Layout(names, tuple(size for _, size in fields),
                       tuple(name + b"\0" + _U64.pack(size)
                             for name, size in fields),
                       _RECORD_BYTES + _FIELD_RECORD_BYTES * len(names))

    def _field_names(self, names):
        """A sample's field names (bytes) as one tuple of str, shared by
        every sample with the same fields."""
        text = self._names.get(names)
        if text is None:
            text = self._names[names] = tuple(sys.intern(_text(n))
                                              for n in names)
        return text

    # -- the sequence ----------------------------------------------------

    def __len__(self) -> int:
        """The number of samples (of the split, with split)."""
        return self._len

    def __getitem__(self, i: "int | slice") -> "Sample | list[Sample]":
        """ds[i]: the Sample at position i (negative counts from the end);
        IndexError outside.  ds[a:b:c]: a list of Samples.

        A sample already read from a block still cached is built from
        what was kept with the block (where its fields lie), its checks
        done when it was first read from that decoded block: the hot
        path of random access, a few microseconds."""
        if type(i) is not int or not 0 <= i < self._len:
            if isinstance(i, slice):
                return [self[j] for j in range(*i.indices(self._len))]
            i = self._position(i)
        number = i if self._ids is None else self._ids[i]
        self._reads += 1
        record = self._records.get(number)
        if record is None:
            return self._sample(i, number)
        key, k, raw, names, bounds = record
        self._blocks.move_to_end(k)
        return _new_sample(Sample, (key, dict(zip(names, map(
            raw.__getitem__, map(slice, bounds, bounds[1:])))), i, number))

    def _position(self, i):
        """i as a position from 0, or TypeError or IndexError."""
        try:
            i = i.__index__()
        except AttributeError:
            raise TypeError("Dataset indices must be integers or slices, "
                            "not %s" % type(i).__name__) from None
        n = self._len
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("sample index %d out of range (%d samples)"
                             % (i if i >= 0 else i - n, n))
        return i

    def __iter__(self) -> "Iterator[Sample]":
        """The samples in dataset order (the split's, with split)."""
        for i in range(self._len):
            yield self[i]

    def _number_to_index(self, number):
        if self._ids is None:
            return number
        j = bisect.bisect_left(self._ids, number)
        if j < len(self._ids) and self._ids[j] == number:
            return j
        return None

    def _find(self, key):
        kb = _key_bytes(key)
        for s in range(len(self._shards)):
            if not self._shards[s].samples:
                continue
            r = self._reader(s)
            local = r.find(kb)
            self._trim(s)
            if local >= 0:
                number = self._starts[s] + local
                index = self._number_to_index(number)
                if index is not None:
                    return index, number
        return None

    def get(self, key: "str | bytes") -> "Sample":
        """The Sample whose key is `key` (str, or bytes as stored); raises
        KeyError when the Dataset (the split, with split) has none.  It
        searches each shard's key order table in turn: the first search
        in a shard reads and checks its whole index."""
        found = self._find(key)
        if found is None:
            raise KeyError(key)
        return self._sample(*found)

    def __contains__(self, key):
        """key in ds: whether get(key) finds a sample."""
        if not isinstance(key, (str, bytes, bytearray, memoryview)):
            return False
        return self._find(key) is not None

    def index(self, key: "str | bytes") -> int:
        """The position of the sample whose key is `key`, as ds[i] takes
        it; KeyError when absent."""
        found = self._find(key)
        if found is None:
            raise KeyError(key)
        return found[0]

    def keys(self) -> "list[str]":
        """The keys (str) of every sample, in dataset order: a list.  It
        reads the index entries, not the blocks."""
        out = []
        for i in range(self._len):
            number = self._ids[i] if self._ids is not None else i
            s, local = self._locate(number)
            r = self._reader(s)
            out.append(_text(r.key(local)))
            self._trim(s)
        return out

    def __repr__(self):
        return "<chute.Dataset %r%s: %d samples%s>" % (
            self.path, " split %r" % self.split if self.split else "",
            self._len, ", id %s" % self.id if self.id else "")
