#!/usr/bin/python3
"""chs_read.py - an independent reader of chute shards, format version 1.

Written from man/chute-shard.5 alone, never from lib/: it exists to prove
that the page is a complete specification and that what chute writes
matches it.  The reader is python/chute/shard.py, which chute.Dataset
reads with too; this script is its command line.  Python standard
library, Debian's python3-zstandard, and
python3-xxhash when present (without it checksums are not verified, and a
note says so on stderr).

  chs_read.py SHARD                    KEY<TAB>FIELD:SIZE ... per sample
  chs_read.py SHARD --dump OUTDIR      every field to OUTDIR/KEY.FIELD
  chs_read.py SHARD --cat KEY FIELD    one field's bytes to stdout
  chs_read.py SHARD --info             header, footer and block table
  chs_read.py SHARD --hash             XXH3-128 of the file (xxhsum -H2)
  chs_read.py SHARD --seal             XXH3-128 of header and footer
  chs_read.py SHARD --manifest M ...   also check SHARD is the file M's
                                       entry for it names (chute-manifest(5))

Before any output the whole shard is checked (with --manifest, also its
size, sample count, seal and field names against the manifest's entry
whose path leads to it): every item of VALIDATION,
every block (hash, codec, size) and every sample's content hash, plus the
layout the page says a writer produces.  Exit 0 if all is well, 1 with a
message naming the file and offset on any problem, 2 on a usage error.
"""

import argparse
import os
import sys
import types

try:
    import debian_python  # next to this file when run or imported from scripts/
    debian_python.require("zstandard")
except ModuleNotFoundError:
    pass
# The reader itself is the chute package's (python/chute/shard.py), also
# written from the page alone.  It is imported without the package's
# __init__, which imports numpy for chute.Stream: this script needs only
# zstandard (and xxhash).
_PKG = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                    "python", "chute")
if "chute" not in sys.modules:
    _pkg = types.ModuleType("chute")
    _pkg.__path__ = [_PKG]
    sys.modules["chute"] = _pkg
from chute.errors import Error  # noqa: E402
from chute.shard import CODECS, INDEX_CODECS, Shard, ShardError  # noqa: E402
from chute import shard as _shard  # noqa: E402

xxhash = _shard.xxhash  # None when python3-xxhash is missing

PROG = "chs_read.py"


# -- commands ---------------------------------------------------------------

def cmd_list(sh, out):
    for key, _, _, _, fields in sh.samples:
        out.write(key + b"\t" + b" ".join(
            n + b":" + str(s).encode() for n, s in fields) + b"\n")


def safe_path(outdir, key, name):
    parts = key.split(b"/")
    if key.startswith(b"/") or any(p in (b"", b".", b"..") for p in parts):
        raise ShardError("key %r would escape %s" % (key, outdir))
    return os.path.join(os.fsencode(outdir), key + b"." + name)


def cmd_dump(sh, outdir):
    cache = {}
    for i, (key, _, b, _, _) in enumerate(sh.samples):
        if b not in cache:
            cache = {b: sh.block(b)}
        for name, data in sh.sample_fields(i, cache[b]):
            path = safe_path(outdir, key, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)


def cmd_cat(sh, key, field, out):
    i = sh.find(key)
    if i < 0:
        raise ShardError("no sample with key %r (%s)" % (key, sh.path))
    for name, data in sh.sample_fields(i, sh.block(sh.samples[i][2])):
        if name == field:
            out.write(data)
            return
    raise ShardError("sample %r has no field %r (%s)" % (key, field,
                                                          sh.path))


def cmd_info(sh, out):
    lines = ["version %d.%d" % (sh.major, sh.minor),
             "file_size %d" % sh.size,
             "flags %d" % sh.flags,
             "dict_size %d" % sh.dict_size,
             "samples %d" % sh.sample_count,
             "blocks %d" % sh.block_count,
             "field_entries %d" % sh.field_entry_count,
             "names %s" % b",".join(sh.names).decode(errors="replace"),
             "index %d %d %d %s" % (sh.index_offset, sh.index_stored_size,
                                    sh.index_raw_size,
                                    INDEX_CODECS[sh.index_codec]),
             "key_order_identity %d" % (list(sh.key_order()) ==
                                        list(range(sh.sample_count)))]
    for b, (offset, stored, raw, _, codec) in enumerate(sh.blocks):
        lines.append("block %d %d %d %d %s" % (b, offset, stored, raw,
                                               CODECS[codec]))
    out.write(("\n".join(lines) + "\n").encode())


def cmd_hash(sh, out):
    if xxhash is None:
        raise ShardError("--hash needs python3-xxhash")
    h = xxhash.xxh3_128()
    with open(sh.path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    out.write(("%s\n" % h.hexdigest()).encode())


def cmd_seal(sh, out):
    if xxhash is None:
        raise ShardError("--seal needs python3-xxhash")
    out.write(("%s\n" % sh.seal()).encode())


def check_binding(sh, manifest_path):
    """The manifest entry whose path leads to sh must describe it: size,
    sample count, seal (format version 2) and field names."""
    import json
    with open(manifest_path, "rb") as f:
        m = json.loads(f.read())
    root = os.path.dirname(os.path.abspath(manifest_path))
    here = os.path.realpath(sh.path)
    for i, e in enumerate(m.get("shards", [])):
        if os.path.realpath(os.path.join(root, e["path"])) == here:
            break
    else:
        raise ShardError("%s lists no shard at %s" % (manifest_path,
                                                      sh.path))
    w = "%s's shards[%d]" % (manifest_path, i)
    got = [("size", sh.size, e["bytes"]),
           ("sample count", sh.sample_count, e["samples"])]
    if "seal" in e and xxhash is not None:
        got.append(("seal", sh.seal(), e["seal"]))
    for what, has, says in got:
        if has != says:
            raise ShardError("%s is not the shard %s names: it has %s %s, "
                             "the manifest says %s" % (sh.path, w, what,
                                                       has, says))
    listed = m.get("schema", {}).get("fields", {})
    for n in sh.names:
        if n.decode(errors="surrogateescape") not in listed:
            raise ShardError("%s holds field '%s', which %s's schema does "
                             "not list" % (sh.path, n.decode(
                                 errors="replace"), manifest_path))


def main(argv):
    p = argparse.ArgumentParser(prog=PROG, description="Read a chute shard "
                                "(format v1) without libchute.")
    p.add_argument("shard", help="a .chs file; without an option, list "
                   "its samples as KEY<TAB>FIELD:SIZE ...")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--dump", metavar="OUTDIR",
                   help="write every field to OUTDIR/KEY.FIELD")
    g.add_argument("--cat", nargs=2, metavar=("KEY", "FIELD"),
                   help="write one field's bytes to stdout")
    g.add_argument("--info", action="store_true",
                   help="print header, footer and block table")
    g.add_argument("--hash", action="store_true",
                   help="print the XXH3-128 of the file (xxhsum -H2)")
    g.add_argument("--seal", action="store_true",
                   help="print the XXH3-128 of header and footer")
    p.add_argument("--manifest", metavar="MANIFEST",
                   help="check that the shard is the file the manifest's "
                   "entry for it names")
    a = p.parse_args(argv)
    if xxhash is None:
        print("%s: note: python3-xxhash is missing; checksums not verified"
              % PROG, file=sys.stderr)
    out = sys.stdout.buffer
    try:
        # everything checked at open, the writer's layout too
        sh = Shard(a.shard, verify=xxhash is not None, lazy=False,
                   layout=True)
        sh.samples = sh.entries()
        sh.check_all()
        if a.manifest:
            check_binding(sh, a.manifest)
        if a.dump:
            cmd_dump(sh, a.dump)
        elif a.cat:
            cmd_cat(sh, os.fsencode(a.cat[0]), os.fsencode(a.cat[1]), out)
        elif a.info:
            cmd_info(sh, out)
        elif a.hash:
            cmd_hash(sh, out)
        elif a.seal:
            cmd_seal(sh, out)
        else:
            cmd_list(sh, out)
        out.flush()
    except Error as e:  # ShardError (chute.DataError) and the like
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 1
    except OSError as e:
        print("%s: %s: %s" % (PROG, e.filename or a.shard, e.strerror),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
