"""chute.shard - read one chute shard (.chs) as man chute-shard(5) says.

    from chute.shard import Shard
    sh = Shard("ds/shards/ds-000000.chs")
    e = sh.entry(0)                    # key, hash, block, offset, fields
    raw = sh.block(e.block)            # the block's raw data, checked
    dict(sh.sample_fields(e, raw))     # {b"jpg": b"...", ...}
    sh.find(b"n01440764/n01440764_10026")   # sample number, or -1

A Shard is written from the manual page alone, never from chute's C
library, and needs the standard library, python3-zstandard, and
python3-xxhash to check checksums.  It reads the file with pread(2): it
holds one file descriptor (opened again when needed after release()),
never the whole file.

Opening reads the header, the footer and the index's page table (items 1
to 7 and 17 to 20 of VALIDATION), then the index header, the block table
and the name table (items 9 to 11).  With lazy=True (the default) the
rest of the index is read when needed: a page of a paged index (format
1.1, index_codec 2) is read, checked (items 21, 22) and decoded the first
time a byte in it is needed; a sample's entry is checked (items 12, 13,
15) the first time it is used; the key order table (item 14) before the
first search by key; the dictionary (item 16) before the first block that
needs it.  An index stored whole (format 1.0, index_codec 0 or 1) is
decoded whole at open.  With lazy=False everything is read and checked at
open, as chute ls does; layout=True adds the checks of the layout the
page says a writer produces (scripts/chs_read.py uses them to find writers
that drift).

Every failure raises chute.DataError (also available here as ShardError)
whose message ends with the file and the byte offset, "(PATH, offset N)",
or, for a fault inside the decoded index, "(PATH, index offset N, index at
file offset M)".  The exception also carries them as attributes: path,
offset (a file offset, or None) and key (the key of the sample being read,
a str, when known, else None).  With verify=False no checksum is computed (the
header, footer, index, page and block hashes, and the samples' content
hashes), but every bound is still checked, so no input can make a read
go out of bounds.
"""

import collections
import io
import os
import struct

try:
    import zstandard
except ImportError as e:
    from .errors import MissingDependency
    raise MissingDependency("chute.Dataset and chute.shard need zstandard "
                            "(Debian: python3-zstandard; pip: "
                            "chute[dataset])", "zstandard") from e

try:
    import xxhash
except ImportError:  # checksums cannot be verified without it
    xxhash = None

from .errors import DataError, Error

__all__ = ["Entry", "Shard", "ShardError", "content_hash"]

MAGIC = b"\x89CHS\r\n\x1a\n"
FOOTER_MAGIC = b"CHSFOOT1"
HEADER_SIZE = FOOTER_SIZE = INDEX_HEADER_SIZE = 64
BLOCK_ENTRY, SAMPLE_ENTRY, FIELD_ENTRY = 40, 32, 16
PAGE_TABLE_HEADER, PAGE_ENTRY = 8, 16
ZDICT_MAGIC = b"\x37\xa4\x30\xec"
U64_MAX = (1 << 64) - 1
CODECS = ("raw", "zstd", "zstd-dict")
INDEX_CODECS = ("raw", "zstd", "paged")

ShardError = DataError

_SAMPLE = struct.Struct("<QQIIHHI")
_KEY_REF = struct.Struct("<IH")       # key_offset, key_len at entry + 20
_FIELD = struct.Struct("<QII")
_BLOCK = struct.Struct("<QQQQII")
_PAGE = struct.Struct("<IIQ")
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_JOIN_MOST = 1 << 16   # content_hash copies samples up to this size


class Entry(collections.namedtuple("Entry",
                                   "key hash block offset fields")):
    """A sample's entry in the index, once checked: its key (bytes), its
    content hash (int), the block holding it, where its data start in the
    block's raw data, and its fields, a tuple of (name, size) in name
    order, names as bytes."""

    __slots__ = ()

    @property
    def size(self):
        """Bytes of all the sample's fields together."""
        return sum(size for _, size in self.fields)


def content_hash(fields):
    """The sample content hash of man chute-shard(5): XXH3-64 over, for
    each (name, data) of `fields` in name order, the name, a NUL byte, the
    size as a u64 little-endian, and the data."""
    parts, size = [], 0
    for name, data in fields:
        parts += (name, b"\0", _U64.pack(len(data)), data)
        size += len(data)
    if size <= _JOIN_MOST:
        # one call over the joined parts: cheaper than an update per
        # part for the small samples a Dataset reads by the thousand
        return xxhash.xxh3_64_intdigest(b"".join(parts))
    h = xxhash.xxh3_64()
    for part in parts:
        h.update(part)
    return h.intdigest()


def _error(message, path, offset=None, key=None):
    e = DataError(message)
    e.path, e.offset, e.key = path, offset, key
    return e


class Shard:
    """One shard file, opened and checked as man chute-shard(5) says.

    Shard(path, *, verify=True, lazy=True, layout=False, name=None)

    path is the .chs file; name, when given, is how messages name it
    (default: path).  verify=False skips the checksums (needed when
    python3-xxhash is missing); lazy and layout are described in the
    module's documentation.  Raises chute.DataError for a file that is no
    valid shard, OSError when it cannot be read.

    Attributes once open: size (bytes of the file), major, minor, flags,
    dict_size, sample_count, block_count, field_entry_count, name_count,
    names (the field names, bytes, in id order), blocks (per block:
    offset, stored_size, raw_size, hash, codec), index_offset,
    index_stored_size, index_raw_size, index_codec, index_page_size (None
    unless paged).  A Shard is not safe to share between threads; it
    holds a file descriptor until close() or release().
    """

    def __init__(self, path, *, verify=True, lazy=True, layout=False,
                 name=None):
        if verify and xxhash is None:
            raise Error("checking a shard's checksums needs python3-xxhash "
                        "(apt-get install python3-xxhash), or verify=False")
        self.path = os.fspath(path)
        self.name = self.path if name is None else name
        self.verify = verify
        self.lazy = lazy
        self._index = None       # the decoded index, when held whole
        self._pages = {}         # page number -> decoded page (codec 2)
        self._page_bytes = 0
        self._order = None       # key order table, once checked
        self._dctx_dict = None
        self._dctx = zstandard.ZstdDecompressor()
        self.index_page_size = None
        self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC",
                                                            0))
        try:
            self.size = os.fstat(self._fd).st_size
            self._read_header()
            self._read_footer()
            self._read_index()
            self._checked = bytearray(self.sample_count)
            if not lazy:
                self.check_index(layout=layout)
                self.key_order()
                self._dictionary(None)
        except BaseException:
            self.close()
            raise

    # -- errors ----------------------------------------------------------

    def seal(self):
        """XXH3-128 of header and footer, as 32 hex digits: what a
        manifest of format version 2 records to bind the shard to its
        entry (chute-manifest(5)).  Needs python3-xxhash."""
        return xxhash.xxh3_128_hexdigest(self._header + self._footer)

    def fail(self, offset, what, key=None):
        """Raises chute.DataError: what, then "(file, offset N)"."""
        where = "" if offset is None else ", offset %d" % offset
        if key is not None:
            if isinstance(key, bytes):
                key = key.decode("utf-8", "surrogateescape")
            where += ", sample %r" % key
        raise _error("%s (%s%s)" % (what, self.name, where), self.name,
                     offset, key)

    def ixfail(self, ix_offset, what):
        """Raises chute.DataError for a fault inside the decoded index,
        naming both the index offset and the index's file offset."""
        e = _error("%s (%s, index offset %d, index at file offset %d)"
                   % (what, self.name, ix_offset, self.index_offset),
                   self.name, self.index_offset)
        e.index_offset = ix_offset
        raise e

    def check_hash(self, offset, data, expected, what, key=None):
        """Fails unless XXH3-64(data) is `expected` (with verify only)."""
        if not self.verify:
            return
        got = xxhash.xxh3_64_intdigest(data)
        if got != expected:
            self.fail(offset, "%s mismatch: stored %016x, computed %016x"
                      % (what, expected, got), key)

    # -- file access -----------------------------------------------------

    def _fileno(self):
        if self._fd is None:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            size = os.fstat(fd).st_size
            if size != self.size:
                os.close(fd)
                self.fail(None, "the file has %d bytes, it had %d when "
                          "opened: it changed" % (size, self.size))
            self._fd = fd
        return self._fd

    def read(self, offset, n):
        """n bytes of the file at offset (bytes)."""
        fd = self._fileno()
        data = os.pread(fd, n, offset)
        if len(data) < n:
            parts, got = [data], len(data)
            while got < n:
                more = os.pread(fd, n - got, offset + got)
                if not more:
                    self.fail(offset + got, "the file ends while reading %d "
                              "bytes at %d: it changed since it was opened"
                              % (n, offset))
                parts.append(more)
                got += len(more)
            data = b"".join(parts)
        return data

    def close(self):
        """Closes the file and drops what was decoded.  A later read
        opens the file again."""
        self.release()

    def release(self):
        """Drops the decoded index pages (or the whole decoded index of a
        1.0 shard) and closes the file descriptor, keeping what opening
        parsed (header, footer, page table, block table, names) and which
        entries were checked: the memory of index_memory goes back, and
        the next read decodes again what it needs."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
        self._pages = {}
        self._page_bytes = 0
        if self.lazy:  # lazy=False keeps its whole index
            self._index = None

    def __del__(self):
        fd = getattr(self, "_fd", None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    @property
    def index_memory(self):
        """Bytes of decoded index held now."""
        return self._page_bytes + (len(self._index) if self._index is not None
                                   else 0)

    # -- zstd ------------------------------------------------------------

    def decode_zstd(self, stored, raw_size, dctx, offset, what, key=None):
        """One zstd frame, nothing around it, exactly raw_size bytes."""
        try:
            fcs = zstandard.frame_content_size(stored)
        except zstandard.ZstdError as e:
            self.fail(offset, "%s: zstd: %s" % (what, e), key)
        if fcs >= 0 and fcs != raw_size:
            self.fail(offset, "%s: zstd frame records %d bytes, index says %d"
                      % (what, fcs, raw_size), key)
        try:
            if fcs == raw_size:
                # zstd refuses a frame that decodes to more than its header
                # records: one pass is bounded
                obj = dctx.decompressobj()
                out = obj.decompress(stored)
                if len(out) != raw_size:
                    self.fail(offset, "%s: decodes to %s bytes, expected %d"
                              % (what, "more" if len(out) > raw_size
                                 else len(out), raw_size), key)
                eof, unused = obj.eof, len(obj.unused_data)
            else:
                # The stream reader stops at the end of the first frame,
                # so reading raw_size + 1 bounds what a hostile frame can
                # produce.
                reader = dctx.stream_reader(io.BytesIO(stored),
                                            read_across_frames=False)
                out = reader.read(raw_size + 1)
                if len(out) != raw_size:
                    self.fail(offset, "%s: decodes to %s bytes, expected %d"
                              % (what, "more" if len(out) > raw_size
                                 else len(out), raw_size), key)
                # Now that the first frame is known to be small, decode
                # again to learn how much input it used.
                obj = dctx.decompressobj()
                obj.decompress(stored)
                eof, unused = obj.eof, len(obj.unused_data)
        except zstandard.ZstdError as e:
            self.fail(offset, "%s: zstd: %s" % (what, e), key)
        if not eof:
            self.fail(offset, "%s: zstd frame is truncated" % what, key)
        if unused:
            self.fail(offset, "%s: %d bytes after the zstd frame"
                      % (what, unused), key)
        return out

    # -- header, footer --------------------------------------------------

    def _read_header(self):
        if self.size < 3 * 64:
            self.fail(0, "file too small: %d bytes, at least 192 needed"
                      % self.size)
        h = self.read(0, HEADER_SIZE)
        if h[0:8] != MAGIC:
            self.fail(0, "bad magic: not a chute shard")
        major, minor, flags, dict_size, dict_hash = \
            struct.unpack_from("<HHIQQ", h, 8)
        if major != 1:
            self.fail(8, "unsupported format version %d.%d (need 1.x)"
                      % (major, minor))
        header_hash, = _U64.unpack_from(h, 56)
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
        self._header = bytes(h)

    def _read_footer(self):
        base = self.size - FOOTER_SIZE
        f = self.read(base, FOOTER_SIZE)
        if f[56:64] != FOOTER_MAGIC:
            self.fail(base + 56, "bad footer magic %r" % bytes(f[56:64]))
        (self.index_offset, self.index_stored_size, self.index_raw_size,
         self.index_hash, self.sample_count, self.block_count,
         self.index_codec, footer_hash) = struct.unpack_from("<QQQQQIIQ", f)
        self.check_hash(base + 48, f[0:48], footer_hash, "footer hash")
        self._footer = bytes(f)
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

    # -- the index -------------------------------------------------------

    def _read_index(self):
        if self.index_codec != 0:
            # the section sizes bound the index by the file size anyway;
            # refuse absurd raw sizes before allocating them
            if self.index_raw_size > 64 * self.index_stored_size + (1 << 20):
                self.fail(self.size - 48, "index raw size %d is implausible "
                          "for %d stored bytes" % (self.index_raw_size,
                                                   self.index_stored_size))
        if self.index_codec == 2:
            self._read_page_table()
            if not self.lazy:
                self._index = b"".join(self._page(p)
                                       for p in range(len(self._frames)))
                self._pages, self._page_bytes = {}, 0
        else:
            self._index = self._whole_index()
        self._parse_index_header()
        self._parse_blocks()
        self._parse_names()

    def _whole_index(self):
        """Codec 0 or 1: the stored index, checked and decoded."""
        off = self.index_offset
        stored = self.read(off, self.index_stored_size)
        self.check_hash(self.size - 40, stored, self.index_hash,
                        "index hash")
        if self.index_codec == 0:
            return stored
        return self.decode_zstd(stored, self.index_raw_size, self._dctx, off,
                                "index")

    def _read_page_table(self):
        """Codec 2: the page table (items 17-20); frames come later."""
        off, stored = self.index_offset, self.index_stored_size
        if stored < PAGE_TABLE_HEADER:
            self.fail(off, "paged index shorter than its page table")
        head = self.read(off, PAGE_TABLE_HEADER)
        page_size, count = struct.unpack_from("<II", head, 0)
        if page_size < 4096 or page_size > 1 << 20 or \
                page_size & (page_size - 1):
            self.fail(off, "index page size %d is not a power of two from "
                      "4096 to 1048576" % page_size)
        if count != -(-self.index_raw_size // page_size):
            self.fail(off + 4, "%d index pages cannot hold %d bytes of %d"
                      % (count, self.index_raw_size, page_size))
        table = PAGE_TABLE_HEADER + PAGE_ENTRY * count
        if table > stored:
            self.fail(off + 4, "index page table runs past the index")
        entries = self.read(off + PAGE_TABLE_HEADER, table - PAGE_TABLE_HEADER)
        self.check_hash(self.size - 40, head + entries, self.index_hash,
                        "index hash (of the page table)")
        frames, at = [], table
        for p, (size, reserved, h) in enumerate(_PAGE.iter_unpack(entries)):
            e = PAGE_TABLE_HEADER + PAGE_ENTRY * p
            if reserved:
                self.fail(off + e + 4, "index page %d: reserved bytes are "
                          "not zero" % p)
            if at + size > stored:
                self.fail(off + e, "index page %d runs past the index" % p)
            frames.append((at, size, h))
            at += size
        if at != stored:
            self.fail(off + at, "%d bytes after the last index page"
                      % (stored - at))
        self.index_page_size = page_size
        self._frames = frames

    def _page(self, p):
        """Page p of a paged index, read, checked and decoded once."""
        page = self._pages.get(p)
        if page is None:
            at, size, h = self._frames[p]
            off = self.index_offset
            frame = self.read(off + at, size)
            self.check_hash(off + PAGE_TABLE_HEADER + PAGE_ENTRY * p + 8,
                            frame, h, "index page %d hash" % p)
            ps = self.index_page_size
            raw = min(ps, self.index_raw_size - p * ps)
            page = self.decode_zstd(frame, raw, self._dctx, off + at,
                                    "index page %d" % p)
            self._pages[p] = page
            self._page_bytes += len(page)
        return page

    def ix(self, offset, n):
        """n bytes of the decoded index at `offset` (bytes), reading and
        checking the pages that hold them first.  The caller has checked
        that they lie inside the index."""
        if n <= 0:
            return b""
        if self._index is None:
            if self.index_codec != 2:
                self._index = self._whole_index()
            else:
                ps = self.index_page_size
                p, q = offset // ps, (offset + n - 1) // ps
                if p >= q:
                    at = offset - p * ps
                    return self._page(p)[at:at + n]
                data = b"".join(self._page(k) for k in range(p, q + 1))
                at = offset - p * ps
                return data[at:at + n]
        return self._index[offset:offset + n]

    def _parse_index_header(self):
        if self.index_raw_size < INDEX_HEADER_SIZE:
            self.ixfail(0, "index too small: %d bytes" % self.index_raw_size)
        head = self.ix(0, INDEX_HEADER_SIZE)
        (n, self.field_entry_count, nblocks, self.name_count,
         self.names_size, self.keys_size) = struct.unpack_from("<QQIIQQ",
                                                               head)
        if n != self.sample_count:
            self.ixfail(0, "index sample_count %d != footer's %d"
                        % (n, self.sample_count))
        if nblocks != self.block_count:
            self.ixfail(16, "index block_count %d != footer's %d"
                        % (nblocks, self.block_count))
        if any(head[40:64]):
            self.ixfail(40, "reserved index header bytes are not zero")
        # where each section starts, named as on the page
        self.ST = INDEX_HEADER_SIZE + BLOCK_ENTRY * self.block_count
        self.FE = self.ST + SAMPLE_ENTRY * self.sample_count
        self.KO = self.FE + FIELD_ENTRY * self.field_entry_count
        self.NT = self.KO + 4 * self.sample_count
        self.KT = self.NT + self.names_size
        total = self.KT + self.keys_size
        if total > U64_MAX or total != self.index_raw_size:
            self.ixfail(0, "index sections add up to %d bytes, index_raw_size"
                        " is %d" % (total, self.index_raw_size))

    def _parse_blocks(self):
        self.blocks = []
        expect = HEADER_SIZE + self.dict_size
        table = self.ix(INDEX_HEADER_SIZE, BLOCK_ENTRY * self.block_count)
        for b, (offset, stored, raw, h, codec, reserved) in \
                enumerate(_BLOCK.iter_unpack(table)):
            e = INDEX_HEADER_SIZE + BLOCK_ENTRY * b
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

    def _parse_names(self):
        table = self.ix(self.NT, self.names_size)
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

    # -- samples ---------------------------------------------------------

    def entry(self, i):
        """The Entry of sample i (0 <= i < sample_count), checked the
        first time it is read (items 12, 13 and 15)."""
        if not 0 <= i < self.sample_count:
            raise IndexError("sample %d of a shard of %d (%s)"
                             % (i, self.sample_count, self.name))
        row = _SAMPLE.unpack(self.ix(self.ST + SAMPLE_ENTRY * i,
                                     SAMPLE_ENTRY))
        ent, fault = self._entry(i, row)
        if fault is not None:
            self.ixfail(*fault)
        return ent

    def _entry(self, i, row, tables=None):
        """(Entry, None) for sample i whose sample table row (unpacked)
        is `row`, checked (items 12, 13, 15) unless it was before; (None,
        (index offset, what is wrong)) when a check fails, so that a
        caller reading many entries can pass over a bad one.  tables,
        when given, is (keys, key base, field rows, field base): spans
        of the key table and the field table (unpacked) read once for
        many entries, which must hold this entry's once it is checked."""
        h, offset, block, key_offset, key_len, nfields, first = row
        e = self.ST + SAMPLE_ENTRY * i
        check = not self._checked[i]
        what = "sample %d" % i if check else None
        if check:
            if block >= self.block_count:
                return None, (e + 16, "%s: block %d of %d"
                              % (what, block, self.block_count))
            if key_len == 0 or key_offset + key_len > self.keys_size:
                return None, (e + 20, "%s: key %d+%d outside the key table "
                              "(%d bytes)" % (what, key_offset, key_len,
                                              self.keys_size))
            if nfields == 0 or first + nfields > self.field_entry_count:
                return None, (e + 26, "%s: fields %d+%d outside the %d "
                              "entries" % (what, first, nfields,
                                           self.field_entry_count))
        if tables is None:
            key = self.ix(self.KT + key_offset, key_len)
            field_rows = _FIELD.iter_unpack(self.ix(
                self.FE + FIELD_ENTRY * first, FIELD_ENTRY * nfields))
        else:
            keys, key_base, all_rows, field_base = tables
            at = key_offset - key_base
            key = keys[at:at + key_len]
            at = first - field_base
            field_rows = all_rows[at:at + nfields]
        if check and 0 in key:
            return None, (self.KT + key_offset, "%s: key holds a NUL byte"
                          % what)
        names = self.names
        if not check:
            fields = tuple((names[name_id], size) for size, name_id, _ in
                           field_rows)
            return Entry(key, h, block, offset, fields), None
        fields = []
        for f, (size, name_id, reserved) in enumerate(field_rows, first):
            fe = self.FE + FIELD_ENTRY * f
            if name_id >= self.name_count:
                return None, (fe + 8, "sample %d: name id %d of %d"
                              % (i, name_id, self.name_count))
            if reserved:
                return None, (fe + 12, "sample %d: reserved field entry "
                              "bytes are not zero" % i)
            name = names[name_id]
            if fields and not fields[-1][0] < name:
                return None, (fe + 8, "sample %d: field %r after %r (not in"
                              " name order)" % (i, name, fields[-1][0]))
            fields.append((name, size))
        total = sum(size for _, size in fields)
        raw = self.blocks[block][2]
        if offset + total > raw:
            return None, (e + 8, "%s: %d+%d bytes outside block %d (%d "
                          "bytes)" % (what, offset, total, block, raw))
        self._checked[i] = 1
        return Entry(key, h, block, offset, tuple(fields)), None

    def _block_of(self, i):
        """The block number sample i's row names, unchecked."""
        return _U32.unpack(self.ix(self.ST + SAMPLE_ENTRY * i + 16, 4))[0]

    def block_entries(self, b, near):
        """[(i, Entry)] of the samples around sample `near` that block b
        holds, each checked as entry() checks it; a sample whose entry
        fails a check is left out (entry(i) raises for it).  A writer
        puts samples in blocks in order (the page's layout), so the run
        is found by two binary searches over the rows' block numbers; a
        shard laid out otherwise gives fewer samples, never wrong ones."""
        lo, hi = 0, near
        while lo < hi:              # the first sample of a block >= b
            mid = (lo + hi) // 2
            if self._block_of(mid) < b:
                lo = mid + 1
            else:
                hi = mid
        first, lo, hi = lo, near + 1, self.sample_count
        while lo < hi:              # the first sample of a block > b
            mid = (lo + hi) // 2
            if self._block_of(mid) <= b:
                lo = mid + 1
            else:
                hi = mid
        rows = [(i, row) for i, row in enumerate(_SAMPLE.iter_unpack(
            self.ix(self.ST + SAMPLE_ENTRY * first,
                    SAMPLE_ENTRY * (lo - first))), first) if row[2] == b]
        tables = self._tables([row for _, row in rows])
        out = []
        for i, row in rows:
            ent, fault = self._entry(i, row, tables)
            if fault is None:
                out.append((i, ent))
        return out

    def _tables(self, rows):
        """The spans of the key and field tables that sample table rows
        use, read at once: (keys, key base, field rows, field base) as
        _entry takes them; None (read entry by entry) unless the spans
        lie in the tables and are compact, as a writer lays them out."""
        if not rows:
            return None
        key_lo = min(r[3] for r in rows)
        key_hi = max(r[3] + r[4] for r in rows)
        field_lo = min(r[6] for r in rows)
        field_hi = max(r[6] + r[5] for r in rows)
        if key_hi > self.keys_size or field_hi > self.field_entry_count or \
                key_hi - key_lo > 2 * sum(r[4] for r in rows) or \
                field_hi - field_lo > 2 * sum(r[5] for r in rows):
            return None
        keys = self.ix(self.KT + key_lo, key_hi - key_lo)
        field_rows = list(_FIELD.iter_unpack(self.ix(
            self.FE + FIELD_ENTRY * field_lo,
            FIELD_ENTRY * (field_hi - field_lo))))
        return keys, key_lo, field_rows, field_lo

    def entries(self):
        """Every sample's Entry, in sample order (a list)."""
        return [self.entry(i) for i in range(self.sample_count)]

    def key(self, i):
        """The key of sample i (bytes), its bounds checked (items 12 and
        15 for the key alone)."""
        e = self.ST + SAMPLE_ENTRY * i
        key_offset, key_len = _KEY_REF.unpack(self.ix(e + 20, 6))
        if not self._checked[i]:
            if key_len == 0 or key_offset + key_len > self.keys_size:
                self.ixfail(e + 20, "sample %d: key %d+%d outside the key "
                            "table (%d bytes)" % (i, key_offset, key_len,
                                                  self.keys_size))
            key = self.ix(self.KT + key_offset, key_len)
            if 0 in key:
                self.ixfail(self.KT + key_offset, "sample %d: key holds a "
                            "NUL byte" % i)
            return key
        return self.ix(self.KT + key_offset, key_len)

    def check_index(self, layout=False):
        """Reads every sample's entry (items 12, 13 and 15); with layout,
        also checks the layout the page says a writer produces (a reader
        could do without it; checking it finds writers that drift)."""
        prev_block, prev_end = 0, 0  # writer layout: samples tile blocks
        next_field, next_key = 0, 0
        for i in range(self.sample_count):
            ent = self.entry(i)
            if not layout:
                continue
            e = self.ST + SAMPLE_ENTRY * i
            what = "sample %d" % i
            block, offset = ent.block, ent.offset
            _, _, _, key_offset, key_len, nfields, first = \
                _SAMPLE.unpack(self.ix(e, SAMPLE_ENTRY))
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
            prev_end = offset + ent.size
            next_field, next_key = first + nfields, key_offset + key_len
        if not layout:
            return
        if self.block_count and (prev_block != self.block_count - 1 or
                                 prev_end != self.blocks[prev_block][2]):
            self.ixfail(self.ST, "layout: samples end in block %d at %d, "
                        "blocks end in %d at %d" % (
                            prev_block, prev_end, self.block_count - 1,
                            self.blocks[-1][2]))
        if next_field != self.field_entry_count or \
                next_key != self.keys_size:
            self.ixfail(0, "layout: samples use %d field entries and %d key "
                        "bytes; the index has %d and %d" % (
                            next_field, next_key, self.field_entry_count,
                            self.keys_size))

    def key_order(self):
        """The key order table (a tuple of sample numbers sorted by key),
        checked the first time (item 14): it reads every key."""
        if self._order is None:
            n = self.sample_count
            order = struct.unpack("<%dI" % n, self.ix(self.KO, 4 * n))
            seen = bytearray(n)
            prev = None
            for j, s in enumerate(order):
                if s >= n or seen[s]:
                    self.ixfail(self.KO + 4 * j, "key order entry %d is %d: "
                                "out of range or repeated" % (j, s))
                seen[s] = 1
                key = self.key(s)
                # bytes compare as unsigned, shorter first on a prefix
                if prev is not None and not prev < key:
                    self.ixfail(self.KO + 4 * j, "key order: %r not after %r"
                                % (key, prev))
                prev = key
            self._order = order
        return self._order

    def find(self, key):
        """The number of the sample whose key is `key` (bytes), or -1:
        binary search over the key order table, as the page says."""
        order = self.key_order()
        lo, hi = 0, self.sample_count
        while lo < hi:
            mid = lo + (hi - lo) // 2
            s = order[mid]
            k = self.key(s)
            if k == key:
                return s
            if k < key:
                lo = mid + 1
            else:
                hi = mid
        return -1

    # -- blocks ----------------------------------------------------------

    def _dictionary(self, block, key=None):
        """The decompressor with the dictionary, read and checked (item
        16) the first time; a failure is about `block` when given."""
        if self._dctx_dict is None and self.dict_size:
            pre = "" if block is None else "block %d: " % block
            d = self.read(HEADER_SIZE, self.dict_size)
            self.check_hash(24, d, self.dict_hash, pre + "dictionary hash",
                            key)
            if d[0:4] != ZDICT_MAGIC:
                self.fail(HEADER_SIZE, pre + "dictionary does not start with"
                          " the zstd dictionary magic", key)
            try:
                zd = zstandard.ZstdCompressionDict(d)
                self._dctx_dict = zstandard.ZstdDecompressor(dict_data=zd)
            except zstandard.ZstdError as e:
                self.fail(HEADER_SIZE, "%szstd cannot load the dictionary: %s"
                          % (pre, e), key)
        return self._dctx_dict

    def block(self, b, key=None):
        """The raw data of block b (bytes): read, its hash checked,
        decoded into exactly raw_size bytes.  key (bytes), when given, is
        the sample being read, named in a failure."""
        offset, stored, raw, h, codec = self.blocks[b]
        data = self.read(offset, stored)
        self.check_hash(offset, data, h, "block %d hash" % b, key)
        if codec == 0:
            return data
        dctx = self._dictionary(b, key) if codec == 2 else self._dctx
        return self.decode_zstd(data, raw, dctx, offset, "block %d" % b, key)

    def sample_fields(self, entry, raw):
        """[(name, bytes)] of a sample, given its Entry (or its number)
        and its block's raw data."""
        if isinstance(entry, int):
            entry = self.entry(entry)
        offset = entry.offset
        out = []
        for name, size in entry.fields:
            out.append((name, raw[offset:offset + size]))
            offset += size
        return out

    def check_sample(self, i, entry, fields):
        """Fails unless `fields` ((name, bytes) of sample i) hash to the
        entry's content hash (with verify only).  The offset named is the
        file offset of the block holding the sample."""
        if not self.verify:
            return
        got = content_hash(fields)
        if got != entry.hash:
            self.fail(self.blocks[entry.block][0], "sample %d: content hash "
                      "stored %016x, computed %016x (block %d)"
                      % (i, entry.hash, got, entry.block), entry.key)

    def check_all(self):
        """Reads every block and checks every sample's content hash (the
        message names the sample's entry in the index)."""
        by_block = {}
        ents = self.entries()
        for i, ent in enumerate(ents):
            by_block.setdefault(ent.block, []).append(i)
        for b in range(self.block_count):
            raw = self.block(b)
            if not self.verify:
                continue
            for i in by_block.get(b, []):
                got = content_hash(self.sample_fields(ents[i], raw))
                if got != ents[i].hash:
                    self.ixfail(self.ST + SAMPLE_ENTRY * i, "sample %d (%r): "
                                "content hash stored %016x, computed %016x"
                                % (i, ents[i].key, ents[i].hash, got))

