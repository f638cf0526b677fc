"""chute.frames - read the batch frames of `chute stream` (man chute-batch(5)).

Each frame is read into one buffer (a numpy uint8 array, filled by
readinto: no copy after that) and its fields are numpy views or
memoryviews of it, so a batch costs one read whatever its size.  A
buffer nothing refers to any more (no field, view or tensor of its frame
is left) is filled again by a later frame of its size, so its memory is
not zeroed again by the kernel for each batch.  Reading a pipe, frames()
first marks it as read by read(2) (its owner's execute bit, man
chute-batch(5)): chute then lends the pipe its frames' pages instead of
copying each frame into it.  Every frame is checked (magic, sizes,
bounds, offsets) before it is handed out, but for the order of its keys'
offsets, checked when the keys are first read (most trainers never read
them); a truncated or corrupt stream raises FrameError (a
chute.DataError and a ValueError) with the byte offset in the stream.

    from chute.frames import frames
    for fr in frames(proc.stdout):
        fr.keys            # list of str (UTF-8, surrogateescape)
        fr.fields["jpg"]   # sequence of memoryviews, one per sample
        fr.fields["cls"]   # numpy array, shape (nsamples,)
        fr.cursor          # give it to chute stream --resume
"""

import math
import os
import stat
import struct
import sys
from collections.abc import Sequence

import numpy as np

from .errors import FrameError


MAGIC = b"CHB1"
HEADER = struct.Struct("<4sIQQQIIIIQQ")
ENTRY = struct.Struct("<IIII4QQQQ")
HEADER_SIZE = 64
ENTRY_FIXED = 72
ALIGN = 64
KEY_FIELD = "__key__"
FLAG_PARTIAL, FLAG_LAST = 1, 2
DTYPES = {1: np.dtype("u1"), 2: np.dtype("<i8"), 3: np.dtype("<f2"),
          4: np.dtype("<f4")}
MAX_FRAME = 1 << 36  # refuse to allocate more for one frame (64 GiB)


class BytesColumn(Sequence):
    """The values of a variable-length field, one memoryview per sample,
    made when asked for: a consumer that reads the whole column through
    Frame.columns pays nothing per sample."""

    __slots__ = ("_mv", "_offsets")

    def __init__(self, mv, offsets):
        self._mv, self._offsets = mv, offsets

    def __len__(self):
        return len(self._offsets) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return self._mv[int(self._offsets[i]):int(self._offsets[i + 1])]

    def __iter__(self):
        bounds = self._offsets.tolist()
        mv = self._mv
        for a, b in zip(bounds, bounds[1:]):
            yield mv[a:b]

    def __eq__(self, other):
        return list(self) == list(other)

    def __repr__(self):
        return "BytesColumn(%d values)" % len(self)


class Frame:
    """One batch: its header, cursor, keys and fields, views of .buffer.

    fields maps each field name to a list of memoryviews (variable-length
    bytes; bytes(v) copies one) or to a numpy array (fixed dtypes); columns
    maps each variable-length field to (values, offsets): all its bytes as
    one uint8 array and the nsamples + 1 offsets into them, for consumers
    that hand a whole column to native code."""

    __slots__ = ("offset", "buffer", "flags", "epoch", "batch", "nsamples",
                 "cursor", "fields", "columns", "_key_field", "_keys",
                 "_release")

    @property
    def keys(self):
        """The samples' keys, list of str (decoded on first use)."""
        if self._keys is None:
            self._keys = [bytes(k).decode("utf-8", "surrogateescape")
                          for k in _bytes_field(*self._key_field)[2]]
        return self._keys

    @property
    def partial(self):
        """Fewer samples than the batch size."""
        return bool(self.flags & FLAG_PARTIAL)

    @property
    def last(self):
        """The last batch of this rank's epoch."""
        return bool(self.flags & FLAG_LAST)

    @property
    def size(self):
        return len(self.buffer)

    def release(self):
        """Hands the frame's slot back to chute (frames of shm_frames):
        its arrays must not be used after.  Frames read from a pipe own
        their buffer: for them this does nothing."""
        release = getattr(self, "_release", None)
        if release is not None:
            self._release = None
            release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __repr__(self):
        return ("Frame(epoch=%d, batch=%d, nsamples=%d, flags=%d, cursor=%r)"
                % (self.epoch, self.batch, self.nsamples, self.flags,
                   self.cursor))


def _align(x, a):
    return (x + a - 1) // a * a


def _read_exact(f, view):
    """Fills view from f (pipes return short reads); returns bytes read."""
    got = 0
    while got < len(view):
        n = f.readinto(view[got:])
        if not n:
            break
        got += n
    return got


class _Checker:
    """Bounds checks of one frame, raising with the offset in the stream."""

    def __init__(self, start, size):
        self.start, self.size = start, size

    def fail(self, at, what):
        raise FrameError("%s at byte %d (frame at byte %d)"
                         % (what, self.start + at, self.start))

    def span(self, at, length, lo, what):
        if at < lo or length < 0 or at + length > self.size:
            self.fail(at, "%s: %d bytes at %d outside the frame's %d..%d"
                      % (what, length, at, lo, self.size))


def _parse_header(head, start):
    (magic, flags, size, epoch, batch, nsamples, nfields, cursor_size,
     table_size, data_offset, reserved) = HEADER.unpack(head)
    if magic != MAGIC:
        raise FrameError("bad magic %r at byte %d (expected %r)"
                         % (bytes(magic), start, MAGIC))
    chk = _Checker(start, size)
    if size % ALIGN or size < HEADER_SIZE or size > MAX_FRAME:
        chk.fail(8, "bad frame_size %d" % size)
    if flags & ~(FLAG_PARTIAL | FLAG_LAST) or reserved:
        chk.fail(4, "unknown flags 0x%x or reserved 0x%x" % (flags, reserved))
    table_at = _align(HEADER_SIZE + cursor_size, 8)
    if nfields < 1 or data_offset % ALIGN or \
            not table_at + table_size <= data_offset <= size:
        chk.fail(36, "bad layout: nfields %d, cursor %d, table %d bytes, "
                 "data at %d, frame %d bytes" % (nfields, cursor_size,
                                                 table_size, data_offset,
                                                 size))
    return size, flags, epoch, batch, nsamples, nfields, cursor_size, \
        table_at, table_size, data_offset


def _bytes_spans(chk, n, name, offsets_at, data_at, data_size, lo):
    if offsets_at % ALIGN or data_at % ALIGN:
        chk.fail(offsets_at, "field %r not aligned to %d bytes" % (name, ALIGN))
    chk.span(offsets_at, 8 * (n + 1), lo, "offsets of field %r" % name)
    chk.span(data_at, data_size, lo, "data of field %r" % name)


def _bytes_field(buf, chk, n, name, offsets_at, data_at, data_size, lo):
    """A variable-length field: (values, offsets, list of memoryviews)."""
    _bytes_spans(chk, n, name, offsets_at, data_at, data_size, lo)
    offsets = np.frombuffer(buf, "<u8", n + 1, offsets_at)
    # the ufunc's own .any(): np.any's dispatch costs more than the test
    if offsets[0] != 0 or offsets[-1] != data_size or \
            (n and (offsets[1:] < offsets[:-1]).any()):
        chk.fail(offsets_at, "offsets of field %r are not 0..%d ascending"
                 % (name, data_size))
    values = np.frombuffer(buf, np.uint8, data_size, data_at)
    mv = memoryview(buf)[data_at:data_at + data_size]
    return values, offsets, BytesColumn(mv, offsets)


def _fixed_field(buf, chk, n, name, dtype, shape, data_at, data_size, lo):
    """A fixed-shape field: a numpy view of shape (n, *shape)."""
    dt = DTYPES[dtype]
    count = n * math.prod(shape)
    if data_at % ALIGN or data_size != count * dt.itemsize:
        chk.fail(data_at, "field %r: %d bytes at %d, expected %d aligned"
                 % (name, data_size, data_at, count * dt.itemsize))
    chk.span(data_at, data_size, lo, "data of field %r" % name)
    return np.frombuffer(buf, dt, count, data_at).reshape((n,) + shape)


def _parse_fields(fr, buf, chk, nfields, table_at, table_size, data_offset):
    at, end = table_at, table_at + table_size
    n = fr.nsamples
    fr.fields, fr.columns = {}, {}
    for i in range(nfields):
        if at + ENTRY_FIXED > end:
            chk.fail(at, "field table ends inside entry %d" % i)
        (esize, dtype, ndim, nsize, s0, s1, s2, s3, offsets_at, data_at,
         data_size) = ENTRY.unpack_from(buf, at)
        if esize % 8 or esize < ENTRY_FIXED + nsize or at + esize > end:
            chk.fail(at, "bad field entry %d (size %d, name %d bytes)"
                     % (i, esize, nsize))
        name = bytes(buf[at + ENTRY_FIXED:at + ENTRY_FIXED + nsize]).decode(
            "utf-8", "surrogateescape")
        if name in fr.fields or (i == 0) != (name == KEY_FIELD):
            chk.fail(at, "field %d: %r out of place or repeated" % (i, name))
        if dtype == 0 and i == 0 and not ndim:
            # bounds now, the rest when the keys are read
            _bytes_spans(chk, n, name, offsets_at, data_at, data_size,
                         data_offset)
            fr._key_field = (buf, chk, n, name, offsets_at, data_at,
                             data_size, data_offset)
        elif dtype == 0:
            if ndim:
                chk.fail(at, "field %r: bytes with ndim %d" % (name, ndim))
            values, offsets, items = _bytes_field(
                buf, chk, n, name, offsets_at, data_at, data_size, data_offset)
            fr.columns[name] = (values, offsets)
            fr.fields[name] = items
        elif dtype in DTYPES and 0 <= ndim <= 4 and i > 0:
            shape = (s0, s1, s2, s3)[:ndim]
            fr.fields[name] = _fixed_field(buf, chk, n, name, dtype, shape,
                                           data_at, data_size, data_offset)
        else:
            chk.fail(at + 4, "field %r: unknown dtype %d, ndim %d"
                     % (name, dtype, ndim))
        at += esize
    if at != end:
        chk.fail(at, "field table has %d bytes after its %d entries"
                 % (end - at, nfields))
    fr._keys = None


HUGE_PAGE = 1 << 21


def _empty(size):
    """An uninitialised buffer of size bytes.  From 4 MiB up, numpy
    advises an array onto huge pages; the buffer is then cut from one
    2 MiB-aligned and a whole number of them, so that huge pages back
    all of it: each 4 KiB page touched first costs a fault, ~15 us on
    virtual machines whose page tables trap (a 224x224 batch of 64 on
    small pages: 6 ms more, every buffer)."""
    # np.empty, not bytearray: no pass to zero it, and a corrupt size
    # costs address space, not memory, until the read comes up short.
    if size < 4 << 20:
        return np.empty(size, np.uint8)
    whole = np.empty(-(-size // HUGE_PAGE) * HUGE_PAGE + HUGE_PAGE, np.uint8)
    at = -whole.__array_interface__["data"][0] % HUGE_PAGE
    return whole[at:at + size]


class _Spare:
    """The buffers of the last few frames, filled again once nothing
    refers to them but this: memory already faulted in, where a new one
    costs the kernel a fresh zeroed page for every 4 KiB read into it."""

    KEEP = 4

    def __init__(self):
        self.lent = []

    def take(self, size):
        for i in range(len(self.lent)):
            b = self.lent[i]
            # b: the list's, b's and getrefcount's own; the array b was
            # cut from (views of b are views of it): b's and the call's
            if b.nbytes == size and sys.getrefcount(b) == 3 and (
                    b.base is None or sys.getrefcount(b.base) == 2):
                del self.lent[i]
                return b
        return _empty(size)

    def lend(self, buf):
        self.lent.append(buf)
        if len(self.lent) > self.KEEP:
            del self.lent[0]


def _mark_read(f):
    """Marks f, when it is an anonymous pipe, as read with read(2), never
    spliced on: chute stream then lends it its frames' pages, which a
    splicing reader would carry away and see rewritten.  A FIFO in a
    folder is left alone (its mode is the file's), as is anything not a
    file."""
    try:
        fd = f.fileno()
        if os.readlink("/proc/self/fd/%d" % fd).startswith("pipe:"):
            mode = stat.S_IMODE(os.fstat(fd).st_mode)
            os.fchmod(fd, mode | stat.S_IXUSR)
    except (OSError, AttributeError, ValueError):
        pass  # io.UnsupportedOperation is an OSError and a ValueError


def frames(f, start=0):
    """Yields the frames of binary file object f until its end.

    start is the byte offset of f's first byte in the stream, for messages.
    Raises ValueError naming the byte offset if the stream is truncated or
    a frame is malformed."""
    offset = start
    head = bytearray(HEADER_SIZE)
    spare = _Spare()
    _mark_read(f)
    while True:
        got = _read_exact(f, memoryview(head))
        if got == 0:
            return
        if got < HEADER_SIZE:
            raise FrameError("truncated frame header at byte %d: %d of %d "
                             "bytes" % (offset, got, HEADER_SIZE))
        (size, flags, epoch, batch, nsamples, nfields, cursor_size, table_at,
         table_size, data_offset) = _parse_header(head, offset)
        buf = spare.take(size)
        view = memoryview(buf)
        view[:HEADER_SIZE] = head
        got = _read_exact(f, view[HEADER_SIZE:])
        if got < size - HEADER_SIZE:
            raise FrameError("truncated frame at byte %d: %d of %d bytes "
                             "(frame at byte %d)" % (offset + HEADER_SIZE + got,
                                                     HEADER_SIZE + got, size,
                                                     offset))
        fr = Frame()
        fr.offset, fr.buffer, fr.flags = offset, buf, flags
        fr.epoch, fr.batch, fr.nsamples = epoch, batch, nsamples
        chk = _Checker(offset, size)
        try:
            fr.cursor = bytes(buf[HEADER_SIZE:HEADER_SIZE + cursor_size]) \
                .decode("ascii")
        except UnicodeDecodeError:
            chk.fail(HEADER_SIZE, "cursor is not ASCII")
        _parse_fields(fr, buf, chk, nfields, table_at, table_size,
                      data_offset)
        spare.lend(buf)
        del buf, view
        yield fr
        del fr
        offset += size




DTYPE_NAMES = {np.dtype(np.uint8): "u8", np.dtype(np.int64): "i64",
               np.dtype(np.float16): "f16", np.dtype(np.float32): "f32"}


def shape_of(field):
    """u8(64,3,224,224) for an array, bytes[64] for raw samples."""
    if isinstance(field, np.ndarray):
        return "%s(%s)" % (DTYPE_NAMES.get(field.dtype, str(field.dtype)),
                           ",".join(str(n) for n in field.shape))
    return "bytes[%d]" % len(field)
