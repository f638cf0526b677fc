"""chute.shm - the consumer of a shared-memory ring of `chute stream --shm`.

The ring (man chute-batch(5), SHARED-MEMORY RING) is a segment in /dev/shm
of slots that chute fills with frames; this side reads them in place (the
arrays are views of the ring) and hands each slot back.  futex(2) through
ctypes waits for a slot without spinning.
"""

import ctypes
import fcntl
import functools
import mmap
import os
import platform
import re
import select
import struct
import time

import numpy as np

from .errors import ShmError
from .frames import HEADER_SIZE, Frame, _Checker, _parse_fields, _parse_header

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
SHM_PINNED, SHM_WAITS = 1, 2  # header flags
SHM_CONSUMER_WAITS = 1  # consumer_flags: we keep consumer_waits
SHM_WAIT_S = 0.2  # futex timeout between checks that chute is alive
# Stores to the ring are plain stores, which only x86's memory order makes
# release stores; elsewhere a slot is freed by the kernel (FUTEX_WAKE_OP).
_PLAIN_RELEASE = platform.machine() in ("x86_64", "AMD64", "i386", "i686")
_SHM_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}\Z")
# header words (u32 index): producer_pid 8, consumer_pid 9, status 10,
# closed 11, producer_waits 14, consumer_waits 15, consumer_flags 80
_W_PRODUCER, _W_CONSUMER, _W_STATUS, _W_CLOSED = 8, 9, 10, 11
_W_PRODUCER_WAITS, _W_CONSUMER_WAITS, _W_CONSUMER_FLAGS = 14, 15, 80
_ETIMEDOUT = 110
_FUTEX_WAIT, _FUTEX_WAKE, _FUTEX_WAKE_OP = 0, 1, 5
_SYS_FUTEX = {"x86_64": 202, "aarch64": 98, "arm64": 98, "ppc64le": 221,
              "s390x": 238, "riscv64": 98}


def ring_path(name):
    """The file of ring NAME: /dev/shm/chute-NAME."""
    return os.path.join(SHM_DIR, SHM_PREFIX + name)


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
        """Sleeps while the word at addr is value, SHM_WAIT_S at most;
        True when the time ran out."""
        rc = self._syscall(ctypes.c_long(self._nr), ctypes.c_void_p(addr),
                           ctypes.c_long(_FUTEX_WAIT), ctypes.c_long(value),
                           ctypes.byref(self._wait_ts), ctypes.c_void_p(0),
                           ctypes.c_long(0))
        return rc < 0 and ctypes.get_errno() == _ETIMEDOUT

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
    it: one consumer per ring.  made, if given, is the read end of a pipe
    that is chute's standard output: chute closes it once the ring exists
    (or exits), which wakes the wait at once instead of at its next look.
    Iterating yields Frames whose arrays are views of the ring (see
    shm_frames).  close() (or leaving a `with`
    block) detaches; closing before the end tells chute to stop, which it
    does with status 0.

    buffer is the whole mapping as a uint8 array, address and nbytes its
    place in memory: what cudaHostRegister needs to make it pinned memory
    (see pin())."""

    def __init__(self, name, timeout=60.0, alive=None, made=None):
        if not isinstance(name, str) or not _SHM_NAME.match(name):
            raise ValueError("invalid ring name %r: 1 to 200 of A-Z a-z 0-9"
                             " . _ -, not starting with a dot" % (name,))
        self.name = name
        self.path = ring_path(name)
        self._fd = self._pidfd = self._mm = None
        self.buffer = None
        self._seq = 0
        self._pinned_by = None
        self._futex = _Futex()
        try:
            self._open(timeout, alive, made)
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
        # chute says when it waits: free a slot without a system call
        self._lazy_release = bool(flags & SHM_WAITS) and _PLAIN_RELEASE
        return True

    def _open(self, timeout, alive, made):
        start = time.monotonic()
        deadline = start + timeout
        # every 2 ms for a second, then up to every 50 ms: chute makes the
        # ring with its first batch, and a loop started with chute must
        # not sleep past it.  With made, every 50 ms (a chute from before
        # it let its standard output go), woken when the pipe ends.
        pause = 0.05 if made is not None else 0.002
        while not self._try_map():
            if alive is not None and not alive():
                raise ShmError("chute stream ended before making ring %r"
                               % self.name)
            if time.monotonic() >= deadline:
                raise ShmError("no ring %r after %g s (is chute stream "
                               "--shm %s running?)" % (self.name, timeout,
                                                        self.name))
            if made is not None:
                if select.select([made], [], [], pause)[0] and \
                        not made.read(65536):
                    made = None  # ended: the ring, or chute's end, is there
                    pause = 0.002
                continue
            time.sleep(pause)
            if time.monotonic() - start >= 1.0:
                pause = min(2 * pause, 0.05)
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
        self.producer = int(words[_W_PRODUCER])
        # kill() and pidfd_open() read 0 and numbers past a pid_t as
        # something else than a process, or refuse them
        if not 0 < self.producer < 2 ** 31:
            raise ShmError("ring %r: its header names pid %d as chute "
                           "stream, which is no process id"
                           % (self.name, self.producer))
        # before the pid: chute reads our flags once it sees a consumer
        words[_W_CONSUMER_FLAGS] = SHM_CONSUMER_WAITS
        words[_W_CONSUMER] = os.getpid()
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
        timed_out = False
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
            # a wait that ran out asks whether chute still lives
            if timed_out and not _alive(self.producer, self._pidfd):
                self._remove_stale()
                raise ShmError("ring %r: chute stream (pid %d) died before "
                               "the end of the stream"
                               % (self.name, self.producer))
            # "I wait" before the last look: chute stores the state, then
            # looks at consumer_waits (the kernel's futex wait orders our
            # store before its own look at the state)
            words[_W_CONSUMER_WAITS] = 1
            timed_out = int(words[k]) == SHM_FREE and \
                self._futex.wait(addr, SHM_FREE)
            words[_W_CONSUMER_WAITS] = 0

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
        if self._mm is None or self._mm.closed:
            return
        k = self._slot_word(i)
        if not self._lazy_release:
            self._futex.set_zero_and_wake(self.address + 4 * k)
            return
        # no fence between the store and the load: chute, which may miss
        # the store when it is about to wait, looks again every 5 ms
        self._words[k] = SHM_FREE
        if int(self._words[_W_PRODUCER_WAITS]):
            self._futex.wake(self.address + 4 * k)

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


