#!/usr/bin/python3
"""chs_read.py - an independent reader of chute shards, format version 1.

Written from man/chute-shard.5 alone, never from lib/: it exists to prove
that the page is a complete specification and that what chute writes
matches it.  Python standard library, Debian's python3-zstandard, and
python3-xxhash when present (without it checksums are not verified, and a
note says so on stderr).

  chs_read.py SHARD                    KEY<TAB>FIELD:SIZE ... per sample
  chs_read.py SHARD --dump OUTDIR      every field to OUTDIR/KEY.FIELD
  chs_read.py SHARD --cat KEY FIELD    one field's bytes to stdout
  chs_read.py SHARD --info             header, footer and block table
  chs_read.py SHARD --hash             XXH3-128 of the file (xxhsum -H2)

Before any output the whole shard is checked: every item of VALIDATION,
every block (hash, codec, size) and every sample's content hash, plus the
layout the page says a writer produces.  Exit 0 if all is well, 1 with a
message naming the file and offset on any problem, 2 on a usage error.
"""

import argparse
import io
import mmap
import os
import struct
import sys

try:
    import debian_python  # next to this file when run or imported from scripts/
    debian_python.require("zstandard")
except ModuleNotFoundError:
    pass
import zstandard  # noqa: E402

try:
    import xxhash
except ImportError:  # checksums cannot be verified without it
    xxhash = None

PROG = "chs_read.py"
MAGIC = b"\x89CHS\r\n\x1a\n"
FOOTER_MAGIC = b"CHSFOOT1"
HEADER_SIZE = FOOTER_SIZE = INDEX_HEADER_SIZE = 64
BLOCK_ENTRY, SAMPLE_ENTRY, FIELD_ENTRY = 40, 32, 16
PAGE_TABLE_HEADER, PAGE_ENTRY = 8, 16
ZDICT_MAGIC = b"\x37\xa4\x30\xec"
U64_MAX = (1 << 64) - 1


class ShardError(Exception):
    """A problem with the shard; str() is the whole message."""


def xxh64(data):
    return xxhash.xxh3_64_intdigest(data)


class Shard:
    """A validated shard held in memory (mmap)."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            self.size = os.fstat(f.fileno()).st_size
            if self.size == 0:
                self.fail(0, "file too small: 0 bytes, at least 192 needed")
            self.data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self.dctx_plain = zstandard.ZstdDecompressor()
        self.dctx_dict = None
        self.read_header()
        self.read_footer()
        self.read_index()
        self.read_dictionary()

    # -- helpers ---------------------------------------------------------

    def fail(self, offset, what):
        where = "" if offset is None else ", offset %d" % offset
        raise ShardError("%s (%s%s)" % (what, self.path, where))

    def check_hash(self, offset, data, expected, what):
        if xxhash is None:
            return
        got = xxh64(data)
        if got != expected:
            self.fail(offset, "%s mismatch: stored %016x, computed %016x"
                      % (what, expected, got))

    def decode_zstd(self, stored, raw_size, dctx, offset, what):
        """One zstd frame, nothing around it, exactly raw_size bytes."""
        try:
            fcs = zstandard.frame_content_size(stored)
            if fcs >= 0 and fcs != raw_size:
                self.fail(offset, "%s: zstd frame records %d bytes, index "
                          "says %d" % (what, fcs, raw_size))
            # The stream reader stops at the end of the first frame, so
            # reading raw_size + 1 bounds what a hostile frame can produce.
            reader = dctx.stream_reader(io.BytesIO(stored),
                                        read_across_frames=False)
            out = reader.read(raw_size + 1)
            if len(out) != raw_size:
                self.fail(offset, "%s: decodes to %s bytes, expected %d"
                          % (what, "more" if len(out) > raw_size
                             else len(out), raw_size))
            # Now that the first frame is known to be small, decode again to
            # learn how much input it used: nothing may follow it.
            obj = dctx.decompressobj()
            obj.decompress(stored)
            if not obj.eof:
                self.fail(offset, "%s: zstd frame is truncated" % what)
            if obj.unused_data:
                self.fail(offset, "%s: %d bytes after the zstd frame"
                          % (what, len(obj.unused_data)))
        except zstandard.ZstdError as e:
            self.fail(offset, "%s: zstd: %s" % (what, e))
        return out

    # -- header, footer, index -------------------------------------------

    def read_header(self):
        if self.size < 3 * 64:
            self.fail(0, "file too small: %d bytes, at least 192 needed"
                      % self.size)
        h = self.data[0:HEADER_SIZE]
        if h[0:8] != MAGIC:
            self.fail(0, "bad magic: not a chute shard")
        major, minor, flags, dict_size, dict_hash = \
            struct.unpack_from("<HHIQQ", h, 8)
        if major != 1:
            self.fail(8, "unsupported format version %d.%d (need 1.x)"
                      % (major, minor))
        header_hash, = struct.unpack_from("<Q", h, 56)
        self.check_hash(56, h[0:56], header_hash, "header hash")
        if flags & ~1:
            self.fail(12, "unknown flags 0x%08x" % flags)
        if bool(flags & 1) != (dict_size > 0):
            self.fail(12, "dictionary flag %d but dict_size %d"
                      % (flags & 1, dict_size))
        if any(h[32:56]):
            self.fail(32, "reserved header bytes are not zero")
        if dict_size == 0 and dict_hash != 0:
            self.fail(24, "dict_hash %016x without a dictionary" % dict_hash)
        self.major, self.minor, self.flags = major, minor, flags
        self.dict_size, self.dict_hash = dict_size, dict_hash
        self.header_hash = header_hash

    def read_footer(self):
        base = self.size - FOOTER_SIZE
        f = self.data[base:]
        if f[56:64] != FOOTER_MAGIC:
            self.fail(base + 56, "bad footer magic %r" % bytes(f[56:64]))
        (self.index_offset, self.index_stored_size, self.index_raw_size,
         self.index_hash, self.sample_count, self.block_count,
         self.index_codec, footer_hash) = struct.unpack_from("<QQQQQIIQ", f)
        self.check_hash(base + 48, f[0:48], footer_hash, "footer hash")
        if self.index_offset < HEADER_SIZE + self.dict_size:
            self.fail(base, "index_offset %d is before the end of the "
                      "dictionary (%d)" % (self.index_offset,
                                           HEADER_SIZE + self.dict_size))
        end = self.index_offset + self.index_stored_size + FOOTER_SIZE
        if end != self.size:
            self.fail(base, "index_offset %d + index_stored_size %d + 64 = "
                      "%d, but the file has %d bytes"
                      % (self.index_offset, self.index_stored_size, end,
                         self.size))
        if self.index_codec not in (0, 1, 2):
            self.fail(base + 44, "unknown index codec %d" % self.index_codec)
        if self.index_codec == 0 and \
                self.index_stored_size != self.index_raw_size:
            self.fail(base + 16, "raw index: stored size %d != raw size %d"
                      % (self.index_stored_size, self.index_raw_size))

    def read_paged_index(self, stored):
        """Codec 2: a page table, then one zstd frame per page."""
        off = self.index_offset
        if len(stored) < PAGE_TABLE_HEADER:
            self.fail(off, "paged index shorter than its page table")
        page_size, count = struct.unpack_from("<II", stored, 0)
        if page_size < 4096 or page_size > 1 << 20 or \
                page_size & (page_size - 1):
            self.fail(off, "index page size %d is not a power of two from "
                      "4096 to 1048576" % page_size)
        if count != -(-self.index_raw_size // page_size):
            self.fail(off + 4, "%d index pages cannot hold %d bytes of %d"
                      % (count, self.index_raw_size, page_size))
        table = PAGE_TABLE_HEADER + PAGE_ENTRY * count
        if table > len(stored):
            self.fail(off + 4, "index page table runs past the index")
        self.check_hash(self.size - 40, stored[:table], self.index_hash,
                        "index hash (of the page table)")
        pages, at = [], table
        for p in range(count):
            e = PAGE_TABLE_HEADER + PAGE_ENTRY * p
            size, reserved, h = struct.unpack_from("<IIQ", stored, e)
            if reserved:
                self.fail(off + e + 4, "index page %d: reserved bytes are "
                          "not zero" % p)
            if at + size > len(stored):
                self.fail(off + e, "index page %d runs past the index" % p)
            frame = stored[at:at + size]
            self.check_hash(off + e + 8, frame, h, "index page %d hash" % p)
            raw = min(page_size, self.index_raw_size - p * page_size)
            pages.append(self.decode_zstd(frame, raw, self.dctx_plain,
                                          off + at, "index page %d" % p))
            at += size
        if at != len(stored):
            self.fail(off + at, "%d bytes after the last index page"
                      % (len(stored) - at))
        self.index_page_size = page_size
        return b"".join(pages)

    def read_index(self):
        off = self.index_offset
        stored = self.data[off:off + self.index_stored_size]
        if self.index_codec != 2:
            self.check_hash(self.size - 40, stored, self.index_hash,
                            "index hash")
        if self.index_codec == 0:
            ix = bytes(stored)
        else:
            # the section sizes bound the index by the file size anyway;
            # refuse absurd raw sizes before allocating them
            if self.index_raw_size > 64 * len(stored) + (1 << 20):
                self.fail(self.size - 48, "index raw size %d is implausible "
                          "for %d stored bytes" % (self.index_raw_size,
                                                   len(stored)))
            if self.index_codec == 2:
                ix = self.read_paged_index(stored)
            else:
                ix = self.decode_zstd(stored, self.index_raw_size,
                                      self.dctx_plain, off, "index")
        self.ix = ix
        self.parse_index_header()
        self.parse_blocks()
        self.parse_names()
        self.parse_samples()
        self.parse_key_order()

    def ixfail(self, ix_offset, what):
        """An error inside the decoded index: name both offsets."""
        raise ShardError("%s (%s, index offset %d, index at file offset %d)"
                         % (what, self.path, ix_offset, self.index_offset))

    def parse_index_header(self):
        ix = self.ix
        if len(ix) < INDEX_HEADER_SIZE:
            self.ixfail(0, "index too small: %d bytes" % len(ix))
        (n, self.field_entry_count, nblocks, self.name_count,
         self.names_size, self.keys_size) = struct.unpack_from("<QQIIQQ", ix)
        if n != self.sample_count:
            self.ixfail(0, "index sample_count %d != footer's %d"
                        % (n, self.sample_count))
        if nblocks != self.block_count:
            self.ixfail(16, "index block_count %d != footer's %d"
                        % (nblocks, self.block_count))
        if any(ix[40:64]):
            self.ixfail(40, "reserved index header bytes are not zero")
        # where each section starts, named as on the page
        self.ST = INDEX_HEADER_SIZE + BLOCK_ENTRY * self.block_count
        self.FE = self.ST + SAMPLE_ENTRY * self.sample_count
        self.KO = self.FE + FIELD_ENTRY * self.field_entry_count
        self.NT = self.KO + 4 * self.sample_count
        self.KT = self.NT + self.names_size
        total = self.KT + self.keys_size
        if total > U64_MAX or total != len(ix):
            self.ixfail(0, "index sections add up to %d bytes, index_raw_size"
                        " is %d" % (total, len(ix)))

    def parse_blocks(self):
        self.blocks = []
        expect = HEADER_SIZE + self.dict_size
        for b in range(self.block_count):
            e = INDEX_HEADER_SIZE + BLOCK_ENTRY * b
            offset, stored, raw, h, codec, reserved = \
                struct.unpack_from("<QQQQII", self.ix, e)
            what = "block %d" % b
            if offset != expect:
                self.ixfail(e, "%s starts at %d, expected %d (blocks are back"
                            " to back)" % (what, offset, expect))
            if stored == 0 and (codec != 0 or raw != 0):
                self.ixfail(e + 8, "%s: 0 stored bytes for %d raw bytes "
                            "with codec %d" % (what, raw, codec))
            if codec not in (0, 1, 2) or (codec == 2 and not self.dict_size):
                self.ixfail(e + 32, "%s has codec %d%s" % (
                    what, codec, " without a dictionary" if codec == 2
                    else ""))
            if codec == 0 and stored != raw:
                self.ixfail(e + 8, "%s is raw but stored %d != raw %d"
                            % (what, stored, raw))
            if reserved:
                self.ixfail(e + 36, "%s reserved field is %d"
                            % (what, reserved))
            self.blocks.append((offset, stored, raw, h, codec))
            expect = offset + stored
        if expect != self.index_offset:
            self.fail(expect, "blocks end at %d but the index starts at %d"
                      % (expect, self.index_offset))

    def parse_names(self):
        table = self.ix[self.NT:self.KT]
        if self.name_count == 0:
            if table:
                self.ixfail(self.NT, "name table has %d bytes but no names"
                            % len(table))
            self.names = []
            return
        if not table or table[-1] != 0:
            self.ixfail(self.KT - 1, "name table does not end with NUL")
        names = table[:-1].split(b"\0")
        if len(names) != self.name_count:
            self.ixfail(self.NT, "name table holds %d names, name_count is %d"
                        % (len(names), self.name_count))
        if any(not n for n in names):
            self.ixfail(self.NT, "empty field name in the name table")
        if len(set(names)) != len(names):
            self.ixfail(self.NT, "duplicate field name in the name table")
        self.names = names

    def parse_samples(self):
        self.samples = []
        prev_block, prev_end = 0, 0  # writer layout: samples tile blocks
        next_field, next_key = 0, 0
        for i in range(self.sample_count):
            e = self.ST + SAMPLE_ENTRY * i
            h, offset, block, key_offset, key_len, nfields, first = \
                struct.unpack_from("<QQIIHHI", self.ix, e)
            what = "sample %d" % i
            if block >= self.block_count:
                self.ixfail(e + 16, "%s: block %d of %d"
                            % (what, block, self.block_count))
            if key_len == 0 or key_offset + key_len > self.keys_size:
                self.ixfail(e + 20, "%s: key %d+%d outside the key table (%d"
                            " bytes)" % (what, key_offset, key_len,
                                         self.keys_size))
            if nfields == 0 or first + nfields > self.field_entry_count:
                self.ixfail(e + 26, "%s: fields %d+%d outside the %d entries"
                            % (what, first, nfields,
                               self.field_entry_count))
            key = self.ix[self.KT + key_offset:self.KT + key_offset + key_len]
            if 0 in key:
                self.ixfail(self.KT + key_offset, "%s: key holds a NUL byte"
                            % what)
            fields = self.parse_fields(i, first, nfields)
            total = sum(size for _, size in fields)
            raw = self.blocks[block][2]
            if offset + total > raw:
                self.ixfail(e + 8, "%s: %d+%d bytes outside block %d (%d "
                            "bytes)" % (what, offset, total, block, raw))
            # The layout the page says a writer produces (a reader could do
            # without it; checking it here finds writers that drift).
            if block != prev_block:
                if block != prev_block + 1 or \
                        prev_end != self.blocks[prev_block][2]:
                    self.ixfail(e + 16, "layout: %s starts block %d but block"
                                " %d holds %d of %d bytes" % (
                                    what, block, prev_block, prev_end,
                                    self.blocks[prev_block][2]))
                prev_block, prev_end = block, 0
            if offset != prev_end or first != next_field or \
                    key_offset != next_key:
                self.ixfail(e, "layout: %s at data %d field %d key %d, "
                            "expected %d, %d, %d" % (
                                what, offset, first, key_offset, prev_end,
                                next_field, next_key))
            prev_end = offset + total
            next_field, next_key = first + nfields, key_offset + key_len
            self.samples.append((bytes(key), h, block, offset, fields))
        self.check_layout_end(prev_block, prev_end, next_field, next_key)

    def check_layout_end(self, last_block, last_end, nfields, keys):
        if self.block_count and (last_block != self.block_count - 1 or
                                 last_end != self.blocks[last_block][2]):
            self.ixfail(self.ST, "layout: samples end in block %d at %d, "
                        "blocks end in %d at %d" % (
                            last_block, last_end, self.block_count - 1,
                            self.blocks[-1][2]))
        if nfields != self.field_entry_count or keys != self.keys_size:
            self.ixfail(0, "layout: samples use %d field entries and %d key "
                        "bytes; the index has %d and %d" % (
                            nfields, keys, self.field_entry_count,
                            self.keys_size))

    def parse_fields(self, i, first, nfields):
        fields = []
        for f in range(first, first + nfields):
            e = self.FE + FIELD_ENTRY * f
            size, name_id, reserved = struct.unpack_from("<QII", self.ix, e)
            if name_id >= self.name_count:
                self.ixfail(e + 8, "sample %d: name id %d of %d"
                            % (i, name_id, self.name_count))
            if reserved:
                self.ixfail(e + 12, "sample %d: reserved field entry bytes "
                            "are not zero" % i)
            name = self.names[name_id]
            if fields and not fields[-1][0] < name:
                self.ixfail(e + 8, "sample %d: field %r after %r (not in "
                            "name order)" % (i, name, fields[-1][0]))
            fields.append((name, size))
        return fields

    def parse_key_order(self):
        seen = bytearray(self.sample_count)
        self.order = struct.unpack_from("<%dI" % self.sample_count, self.ix,
                                        self.KO)
        prev = None
        for j, s in enumerate(self.order):
            if s >= self.sample_count or seen[s]:
                self.ixfail(self.KO + 4 * j, "key order entry %d is %d: out of"
                            " range or repeated" % (j, s))
            seen[s] = 1
            key = self.samples[s][0]
            # bytes compare as unsigned, shorter first on a common prefix
            if prev is not None and not prev < key:
                self.ixfail(self.KO + 4 * j, "key order: %r not after %r"
                            % (key, prev))
            prev = key

    def read_dictionary(self):
        if not self.dict_size:
            return
        d = self.data[HEADER_SIZE:HEADER_SIZE + self.dict_size]
        self.check_hash(24, d, self.dict_hash, "dictionary hash")
        if d[0:4] != ZDICT_MAGIC:
            self.fail(HEADER_SIZE, "dictionary does not start with the zstd "
                      "dictionary magic")
        try:
            zd = zstandard.ZstdCompressionDict(bytes(d))
            self.dctx_dict = zstandard.ZstdDecompressor(dict_data=zd)
        except zstandard.ZstdError as e:
            self.fail(HEADER_SIZE, "zstd cannot load the dictionary: %s" % e)

    # -- access ----------------------------------------------------------

    def block(self, b):
        offset, stored, raw, h, codec = self.blocks[b]
        data = self.data[offset:offset + stored]
        self.check_hash(offset, data, h, "block %d hash" % b)
        if codec == 0:
            return data
        dctx = self.dctx_dict if codec == 2 else self.dctx_plain
        return self.decode_zstd(data, raw, dctx, offset, "block %d" % b)

    def find(self, key):
        """Binary search over the key order table, as the page says."""
        lo, hi = 0, self.sample_count
        while lo < hi:
            mid = lo + (hi - lo) // 2
            s = self.order[mid]
            k = self.samples[s][0]
            if k == key:
                return s
            if k < key:
                lo = mid + 1
            else:
                hi = mid
        return -1

    def sample_fields(self, i, raw):
        """[(name, bytes)] of sample i, given its block's raw data."""
        _, _, _, offset, fields = self.samples[i]
        out = []
        for name, size in fields:
            out.append((name, raw[offset:offset + size]))
            offset += size
        return out

    def content_hash(self, fields):
        h = xxhash.xxh3_64()
        for name, data in fields:
            h.update(name + b"\0" + struct.pack("<Q", len(data)))
            h.update(data)
        return h.intdigest()

    def check_all(self):
        """Every block and every sample's content hash."""
        by_block = {}
        for i, s in enumerate(self.samples):
            by_block.setdefault(s[2], []).append(i)
        for b in range(self.block_count):
            raw = self.block(b)
            if xxhash is None:
                continue
            for i in by_block.get(b, []):
                got = self.content_hash(self.sample_fields(i, raw))
                if got != self.samples[i][1]:
                    self.ixfail(self.ST + SAMPLE_ENTRY * i, "sample %d (%r): "
                                "content hash stored %016x, computed %016x"
                                % (i, self.samples[i][0], self.samples[i][1],
                                   got))


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
    codecs = ("raw", "zstd", "zstd-dict")
    index_codecs = ("raw", "zstd", "paged")
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
                                    index_codecs[sh.index_codec]),
             "key_order_identity %d" % (list(sh.order) ==
                                        list(range(sh.sample_count)))]
    for b, (offset, stored, raw, _, codec) in enumerate(sh.blocks):
        lines.append("block %d %d %d %d %s" % (b, offset, stored, raw,
                                               codecs[codec]))
    out.write(("\n".join(lines) + "\n").encode())


def cmd_hash(sh, out):
    if xxhash is None:
        raise ShardError("--hash needs python3-xxhash")
    out.write(("%s\n" % xxhash.xxh3_128_hexdigest(sh.data)).encode())


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
    a = p.parse_args(argv)
    if xxhash is None:
        print("%s: note: python3-xxhash is missing; checksums not verified"
              % PROG, file=sys.stderr)
    out = sys.stdout.buffer
    try:
        sh = Shard(a.shard)
        sh.check_all()
        if a.dump:
            cmd_dump(sh, a.dump)
        elif a.cat:
            cmd_cat(sh, os.fsencode(a.cat[0]), os.fsencode(a.cat[1]), out)
        elif a.info:
            cmd_info(sh, out)
        elif a.hash:
            cmd_hash(sh, out)
        else:
            cmd_list(sh, out)
        out.flush()
    except ShardError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 1
    except OSError as e:
        print("%s: %s: %s" % (PROG, e.filename or a.shard, e.strerror),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
