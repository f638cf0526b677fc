#!/usr/bin/python3
"""chute_batch.py - read the batch frames of `chute stream` (man chute-batch.5).

Python 3 standard library and numpy.  Each frame is read into one buffer (a
numpy uint8 array, filled by readinto: no copy after that) and its fields
are numpy views or memoryviews of it, so a batch costs one allocation and
one read whatever its size.

    import chute_batch
    for fr in chute_batch.frames(sys.stdin.buffer):
        fr.keys            # list of str (UTF-8, surrogateescape)
        fr.fields["jpg"]   # sequence of memoryviews, one per sample
        fr.cursor          # give it to chute stream --resume

Fields of a fixed dtype (u8, i64, f16, f32) are numpy arrays of shape
(nsamples, *shape).  Every frame is checked (magic, sizes, bounds, offsets)
before it is handed out; a truncated or corrupt stream raises ValueError
with the byte offset in the stream.

As a command:

    chute stream DATASET | chute_batch.py [FILE]     one line per frame:
                                 EPOCH BATCH NSAMPLES FLAGS CURSOR
    chute stream DATASET | chute_batch.py --shapes   the same, then each
                                 field's type and shape: jpg=u8(64,3,224,224)
    chute stream DATASET | chute_batch.py --check    validate only
    chute_batch.py --shm NAME [--check]              the same, from the
                                 ring of chute stream --shm NAME

Zero copy from shared memory (chute stream --shm NAME, chute-batch(5)
SHARED-MEMORY RING): shm_frames(NAME) yields the same Frame objects, their
arrays numpy views straight over the ring's slots.  A frame's slot goes
back to chute by fr.release(), at the end of a `with fr:` block, or at the
latest when the next frame is asked for; its arrays must not be used after
that (copy what you keep: np.array(x), bytes(v), torch's .clone()).

    for fr in chute_batch.shm_frames("train"):
        with fr:
            x = torch.from_numpy(fr.fields["img"])   # a view of the slot
            x = x.to("cuda", non_blocking=True)      # see ShmRing.pin

Exit status: 0 the stream is valid, 1 it is not (the message names the byte
offset), 2 usage error.
"""

import argparse
import ctypes
import fcntl
import functools
import mmap
import os
import platform
import re
import select
import struct
import sys
import time

from collections.abc import Sequence

try:
    import debian_python  # next to this file when run or imported from scripts/
    debian_python.require("numpy")
except ModuleNotFoundError:
    pass
import numpy as np  # noqa: E402

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
                 "cursor", "fields", "columns", "_key_column", "_keys",
                 "_release")

    @property
    def keys(self):
        """The samples' keys, list of str (decoded on first use)."""
        if self._keys is None:
            self._keys = [bytes(k).decode("utf-8", "surrogateescape")
                          for k in self._key_column]
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
        raise ValueError("%s at byte %d (frame at byte %d)"
                         % (what, self.start + at, self.start))

    def span(self, at, length, lo, what):
        if at < lo or length < 0 or at + length > self.size:
            self.fail(at, "%s: %d bytes at %d outside the frame's %d..%d"
                      % (what, length, at, lo, self.size))


def _parse_header(head, start):
    (magic, flags, size, epoch, batch, nsamples, nfields, cursor_size,
     table_size, data_offset, reserved) = HEADER.unpack(head)
    if magic != MAGIC:
        raise ValueError("bad magic %r at byte %d (expected %r)"
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


def _bytes_field(buf, chk, n, name, offsets_at, data_at, data_size, lo):
    """A variable-length field: (values, offsets, list of memoryviews)."""
    if offsets_at % ALIGN or data_at % ALIGN:
        chk.fail(offsets_at, "field %r not aligned to %d bytes" % (name, ALIGN))
    chk.span(offsets_at, 8 * (n + 1), lo, "offsets of field %r" % name)
    chk.span(data_at, data_size, lo, "data of field %r" % name)
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
    count = n * int(np.prod(shape, dtype=np.uint64))
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
        if dtype == 0:
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
    fr._key_column = fr.fields.pop(KEY_FIELD)
    fr._keys = None
    fr.columns.pop(KEY_FIELD)


def frames(f, start=0):
    """Yields the frames of binary file object f until its end.

    start is the byte offset of f's first byte in the stream, for messages.
    Raises ValueError naming the byte offset if the stream is truncated or
    a frame is malformed."""
    offset = start
    head = bytearray(HEADER_SIZE)
    while True:
        got = _read_exact(f, memoryview(head))
        if got == 0:
            return
        if got < HEADER_SIZE:
            raise ValueError("truncated frame header at byte %d: %d of %d "
                             "bytes" % (offset, got, HEADER_SIZE))
        (size, flags, epoch, batch, nsamples, nfields, cursor_size, table_at,
         table_size, data_offset) = _parse_header(head, offset)
        # np.empty, not bytearray: no pass to zero it, and a corrupt size
        # costs address space, not memory, until the read comes up short.
        buf = np.empty(size, np.uint8)
        view = memoryview(buf)
        view[:HEADER_SIZE] = head
        got = _read_exact(f, view[HEADER_SIZE:])
        if got < size - HEADER_SIZE:
            raise ValueError("truncated frame at byte %d: %d of %d bytes "
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
        yield fr
        offset += size


# ------------------------------------------------------------ shared memory

SHM_DIR = "/dev/shm"
SHM_PREFIX = "chute-"
SHM_MAGIC = b"CHR1"
SHM_VERSION = 1
SHM_HEADER = struct.Struct("<4sIIIQQIIIIQQ")  # the first 64 of 512 bytes
SHM_SLOTS_AT = 512
SHM_SLOT = struct.Struct("<IIQQ")  # state, reserved, seq, size (of 64)
SHM_MAX_SLOTS = 1024
SHM_FREE, SHM_READY, SHM_END, SHM_ERROR = 0, 1, 2, 3
SHM_RUNNING, SHM_ENDED, SHM_FAILED = 0, 1, 2
SHM_PINNED = 1
SHM_WAIT_S = 0.2  # futex timeout between checks that chute is alive
_SHM_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}\Z")
# header words (u32 index): producer_pid 8, consumer_pid 9, status 10,
# closed 11
_W_PRODUCER, _W_CONSUMER, _W_STATUS, _W_CLOSED = 8, 9, 10, 11
_FUTEX_WAIT, _FUTEX_WAKE, _FUTEX_WAKE_OP = 0, 1, 5
_SYS_FUTEX = {"x86_64": 202, "aarch64": 98, "arm64": 98, "ppc64le": 221,
              "s390x": 238, "riscv64": 98}


class ShmError(RuntimeError):
    """chute stream failed or died, the ring is taken or corrupt."""


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Futex:
    """futex(2) on words of the shared mapping, through ctypes (the GIL is
    released while a wait sleeps)."""

    def __init__(self):
        nr = _SYS_FUTEX.get(platform.machine())
        if nr is None:
            raise ShmError("no futex syscall number known for %s"
                           % platform.machine())
        self._nr = nr
        self._syscall = ctypes.CDLL(None, use_errno=True).syscall
        self._syscall.restype = ctypes.c_long
        self._wait_ts = _Timespec(0, int(SHM_WAIT_S * 1e9))

    def wait(self, addr, value):
        """Sleeps while the word at addr is value, SHM_WAIT_S at most."""
        self._syscall(ctypes.c_long(self._nr), ctypes.c_void_p(addr),
                      ctypes.c_long(_FUTEX_WAIT), ctypes.c_long(value),
                      ctypes.byref(self._wait_ts), ctypes.c_void_p(0),
                      ctypes.c_long(0))

    def wake(self, addr):
        self._syscall(ctypes.c_long(self._nr), ctypes.c_void_p(addr),
                      ctypes.c_long(_FUTEX_WAKE), ctypes.c_long(1),
                      ctypes.c_void_p(0), ctypes.c_void_p(0),
                      ctypes.c_long(0))

    def set_zero_and_wake(self, addr):
        """Stores 0 at addr and wakes a waiter, in the kernel, atomically
        and after every earlier read of ours (FUTEX_WAKE_OP, op SET 0):
        the release store Python cannot make by itself."""
        self._syscall(ctypes.c_long(self._nr), ctypes.c_void_p(addr),
                      ctypes.c_long(_FUTEX_WAKE_OP), ctypes.c_long(1),
                      ctypes.c_void_p(0), ctypes.c_void_p(addr),
                      ctypes.c_long(0))


def _alive(pid, pidfd):
    """Whether process pid still runs (a zombie does not)."""
    if pidfd is not None:
        return not select.select([pidfd], [], [], 0)[0]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
        return stat[stat.rindex(b")") + 2:][:1] not in (b"Z", b"X")
    except (OSError, ValueError):
        return True


class ShmRing:
    """The consumer of one ring of `chute stream --shm NAME`.

    Opening waits up to timeout seconds for chute to make the ring (and
    stops waiting early when alive(), if given, returns False), then claims
    it: one consumer per ring.  Iterating yields Frames whose arrays are
    views of the ring (see shm_frames).  close() (or leaving a `with`
    block) detaches; closing before the end tells chute to stop, which it
    does with status 0.

    buffer is the whole mapping as a uint8 array, address and nbytes its
    place in memory: what cudaHostRegister needs to make it pinned memory
    (see pin())."""

    def __init__(self, name, timeout=60.0, alive=None):
        if not isinstance(name, str) or not _SHM_NAME.match(name):
            raise ValueError("invalid ring name %r: 1 to 200 of A-Z a-z 0-9"
                             " . _ -, not starting with a dot" % (name,))
        self.name = name
        self.path = os.path.join(SHM_DIR, SHM_PREFIX + name)
        self._fd = self._pidfd = self._mm = None
        self.buffer = None
        self._seq = 0
        self._pinned_by = None
        self._futex = _Futex()
        try:
            self._open(timeout, alive)
            self._claim()
        except BaseException:
            self.close()
            raise

    # -- opening

    def _try_map(self):
        """Maps the ring if chute has published it; False if not yet."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            with open(fd, "rb", buffering=0, closefd=False) as f:
                head = f.read(SHM_SLOTS_AT)
            if len(head) < SHM_SLOTS_AT or head[:4] != SHM_MAGIC:
                os.close(fd)
                return False  # chute is still making it
            (_, version, nslots, flags, slot_size, data_offset, _, _, _, _,
             _, _) = SHM_HEADER.unpack_from(head)
            if version != SHM_VERSION or not 0 < nslots <= SHM_MAX_SLOTS \
                    or not slot_size \
                    or data_offset < SHM_SLOTS_AT + 64 * nslots:
                raise ShmError("ring %r has version %d or a bad layout"
                               % (self.name, version))
            size = data_offset + nslots * slot_size
            if os.fstat(fd).st_size < size:
                raise ShmError("ring %r is shorter than its header says"
                               % self.name)
            self._mm = mmap.mmap(fd, size, mmap.MAP_SHARED |
                                 getattr(mmap, "MAP_POPULATE", 0),
                                 mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self.nslots, self.slot_size = nslots, slot_size
        self.data_offset, self.nbytes = data_offset, size
        self.pinned = bool(flags & SHM_PINNED)
        return True

    def _open(self, timeout, alive):
        deadline = time.monotonic() + timeout
        while not self._try_map():
            if alive is not None and not alive():
                raise ShmError("chute stream ended before making ring %r"
                               % self.name)
            if time.monotonic() >= deadline:
                raise ShmError("no ring %r after %g s (is chute stream "
                               "--shm %s running?)" % (self.name, timeout,
                                                        self.name))
            time.sleep(0.05)
        self.buffer = np.frombuffer(self._mm, np.uint8)
        self.address = self.buffer.ctypes.data
        self._words = np.frombuffer(self._mm, "<u4",
                                    (SHM_SLOTS_AT + 64 * self.nslots) // 4)

    def _claim(self):
        """An exclusive lock on the segment, then our pid in the header:
        a second consumer, or a later one, is refused."""
        words = self._words
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            taken = int(words[_W_CONSUMER])
        except BlockingIOError:
            taken = int(words[_W_CONSUMER]) or -1
        if taken:
            raise ShmError("ring %r already has a consumer (pid %d): one "
                           "consumer per ring" % (self.name, taken))
        words[_W_CONSUMER] = os.getpid()
        self.producer = int(words[_W_PRODUCER])
        try:
            self._pidfd = os.pidfd_open(self.producer)
        except (AttributeError, OSError):
            self._pidfd = None  # old kernel, or chute already gone

    # -- frames

    def _slot_word(self, i):
        return (SHM_SLOTS_AT + 64 * i) // 4

    def _wait_ready(self, i):
        """READY, or None at the end of the stream; raises on failure."""
        words, k = self._words, self._slot_word(i)
        addr = self.address + 4 * k
        while True:
            state, status = int(words[k]), int(words[_W_STATUS])
            if state == SHM_READY:
                return state
            if state == SHM_END or (state == SHM_FREE and
                                    status == SHM_ENDED):
                self._done()
                return None
            if state == SHM_ERROR or status == SHM_FAILED:
                msg = bytes(self._mm[64:320]).split(b"\0", 1)[0]
                raise ShmError("chute stream failed: %s"
                               % msg.decode("utf-8", "replace"))
            if state != SHM_FREE:
                raise ShmError("ring %r: bad slot state %d"
                               % (self.name, state))
            if not _alive(self.producer, self._pidfd):
                self._remove_stale()
                raise ShmError("ring %r: chute stream (pid %d) died before "
                               "the end of the stream"
                               % (self.name, self.producer))
            self._futex.wait(addr, SHM_FREE)

    def next_frame(self):
        """The next Frame (release it when done), or None at the end."""
        i = self._seq % self.nslots
        if self._wait_ready(i) is None:
            return None
        at = SHM_SLOTS_AT + 64 * i
        _, _, seq, size = SHM_SLOT.unpack_from(self._mm, at)
        start = self.data_offset + i * self.slot_size
        if seq != self._seq or not HEADER_SIZE <= size <= self.slot_size:
            raise ShmError("ring %r: slot %d holds frame %d of %d bytes, "
                           "expected frame %d" % (self.name, i, seq, size,
                                                  self._seq))
        buf = self.buffer[start:start + size]
        try:
            fr = _frame_of(buf, self._seq)
        except BaseException:
            self._release_slot(i)
            raise
        fr._release = functools.partial(self._release_slot, i)
        self._seq += 1
        return fr

    def __iter__(self):
        while True:
            fr = self.next_frame()
            if fr is None:
                return
            try:
                yield fr
            finally:
                fr.release()  # at the latest when the next is asked for

    def _release_slot(self, i):
        if self._mm is not None and not self._mm.closed:
            self._futex.set_zero_and_wake(self.address +
                                          4 * self._slot_word(i))

    # -- the end

    def _done(self):
        """Tells chute we are done with the ring (read it all, or stop)."""
        if self._words is not None and not int(self._words[_W_CLOSED]):
            self._words[_W_CLOSED] = 1
            self._futex.wake(self.address + 4 * _W_CLOSED)

    def _remove_stale(self):
        """chute died: remove its segment if it is still the one mapped."""
        try:
            a, b = os.fstat(self._fd), os.stat(self.path)
            if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino):
                os.unlink(self.path)
        except OSError:
            pass

    def pin(self, torch):
        """Registers the ring with CUDA as pinned memory (cudaHostRegister
        through torch.cuda.cudart()), so that copies of its arrays to the
        GPU with non_blocking=True are DMA transfers.  Returns False, doing
        nothing, without CUDA.  Wait for such a copy (an event's
        synchronize()) before releasing the frame."""
        if not torch.cuda.is_available():
            return False
        rt = torch.cuda.cudart()
        rc = rt.cudaHostRegister(self.address, self.nbytes, 0)
        if int(rc) != 0:
            raise ShmError("cudaHostRegister of ring %r failed: %s"
                           % (self.name, rc))
        self._pinned_by = rt
        return True

    def close(self):
        if self._mm is not None and self._fd is not None and \
                getattr(self, "_words", None) is not None and \
                int(self._words[_W_CONSUMER]) == os.getpid():
            self._done()
            words = self._words
            for i in range(self.nslots):  # give back what was not read
                if int(words[self._slot_word(i)]) == SHM_READY:
                    self._release_slot(i)
        if self._pinned_by is not None:
            self._pinned_by.cudaHostUnregister(self.address)
            self._pinned_by = None
        self._words = self.buffer = None
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:
                pass  # frames still in use: the mapping goes with them
            self._mm = None
        for fd in (self._fd, self._pidfd):
            if fd is not None:
                os.close(fd)
        self._fd = self._pidfd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _frame_of(buf, seq):
    """A Frame over buf, a frame-sized view of a slot."""
    (size, flags, epoch, batch, nsamples, nfields, cursor_size, table_at,
     table_size, data_offset) = _parse_header(bytes(buf[:HEADER_SIZE]), 0)
    chk = _Checker(0, size)
    if size != len(buf):
        chk.fail(8, "frame %d: frame_size %d, the slot says %d"
                 % (seq, size, len(buf)))
    fr = Frame()
    fr.offset, fr.buffer, fr.flags = 0, buf, flags
    fr.epoch, fr.batch, fr.nsamples = epoch, batch, nsamples
    try:
        fr.cursor = bytes(buf[HEADER_SIZE:HEADER_SIZE + cursor_size]) \
            .decode("ascii")
    except UnicodeDecodeError:
        chk.fail(HEADER_SIZE, "cursor is not ASCII")
    _parse_fields(fr, buf, chk, nfields, table_at, table_size, data_offset)
    return fr


def shm_frames(name, timeout=60.0, alive=None):
    """Yields the frames of ring NAME (chute stream --shm NAME) as Frames
    whose arrays are views of the ring, until the end of the stream.

    Waits up to timeout seconds for the ring to appear (alive: see
    ShmRing).  Each frame is released (its slot handed back to chute) by
    fr.release(), by leaving `with fr:`, or when the next frame is asked
    for.  Stopping early (break, or closing the generator) tells chute to
    stop.  Raises ShmError when chute fails (its message) or dies, and
    ValueError for a malformed frame."""
    ring = ShmRing(name, timeout, alive)
    try:
        yield from ring
    finally:
        ring.close()


DTYPE_NAMES = {np.dtype(np.uint8): "u8", np.dtype(np.int64): "i64",
               np.dtype(np.float16): "f16", np.dtype(np.float32): "f32"}


def shape_of(field):
    """u8(64,3,224,224) for an array, bytes[64] for raw samples."""
    if isinstance(field, np.ndarray):
        return "%s(%s)" % (DTYPE_NAMES.get(field.dtype, str(field.dtype)),
                           ",".join(str(n) for n in field.shape))
    return "bytes[%d]" % len(field)


def main():
    ap = argparse.ArgumentParser(
        prog="chute_batch.py",
        description="Read the batch frames of chute stream (chute-batch(5)).")
    ap.add_argument("file", nargs="?", default="-",
                    help="frames to read (default: standard input)")
    ap.add_argument("--check", action="store_true",
                    help="validate only; print nothing unless it fails")
    ap.add_argument("--shm", metavar="NAME",
                    help="read the ring of chute stream --shm NAME instead")
    ap.add_argument("--timeout", type=float, default=60.0, metavar="S",
                    help="--shm: seconds to wait for the ring (default 60)")
    ap.add_argument("--limit", type=int, metavar="N",
                    help="stop after N frames (--shm: chute then stops)")
    ap.add_argument("--shapes", action="store_true",
                    help="also print each field's type and shape "
                         "(jpg=u8(64,3,224,224); bytes[64] for raw fields)")
    ap.add_argument("--copy-to", metavar="FILE",
                    help="also write the frames' bytes to FILE, as a pipe "
                         "carries them")
    args = ap.parse_args()
    if args.shm and args.file != "-":
        ap.error("a FILE or --shm NAME, not both")
    out = sys.stdout
    copy = open(args.copy_to, "wb") if args.copy_to else None
    try:
        if args.shm:
            stream = shm_frames(args.shm, args.timeout)
        else:
            stream = frames(sys.stdin.buffer if args.file == "-"
                            else open(args.file, "rb"))
        for n, fr in enumerate(stream):
            if args.limit is not None and n >= args.limit:
                stream.close()
                break
            if copy:
                copy.write(fr.buffer)
            if not args.check:
                out.write("%d %d %d %d %s%s\n" % (
                    fr.epoch, fr.batch, fr.nsamples, fr.flags, fr.cursor,
                    "".join(" %s=%s" % (k, shape_of(v)) for k, v in
                            fr.fields.items()) if args.shapes else ""))
        out.flush()
        if copy:
            copy.close()
    except (ValueError, ShmError) as e:
        sys.stderr.write("chute_batch.py: %s\n" % e)
        return 1
    except BrokenPipeError:
        # The reader went away (head): stop quietly, like chute does, and
        # keep Python from failing again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return 0

if __name__ == "__main__":
    sys.exit(main())
