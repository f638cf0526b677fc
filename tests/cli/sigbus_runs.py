"""sigbus_runs.py - many short `chute stream` runs whose input changes
under them at a random moment (tests/cli/sigbus.bats, issue 38).

    sigbus_runs.py shards pipe|shm N DS SMALLER SEED
        N runs of `chute stream -e 0 DS`, each with DS's first shard
        overwritten (as cp does: truncated, then written) by the shard
        SMALLER or truncated to a random smaller size, at a random moment
        from 0 to 30 ms after the first frame came (mid-stream, however
        slow the build); restored before the next run.
    sigbus_runs.py ring N SEED
        N runs of `chute stream -e 0 --shm` into a consumer that reads
        frames and, at a random moment, truncates the ring to 0, 4096 or
        half its size (in turn) and stops touching it.

Each run must end on its own (10 s) with exit 1 or 2, never a signal,
with a message naming the file (the shard's name, or ring 'NAME') on
stderr, and no /dev/shm/chute-* segment of the run left.  Prints one
line of figures; exits 1 with the first bad run's story."""

import mmap
import os
import random
import shutil
import struct
import subprocess
import sys
import threading
import time

CHUTE = os.environ.get("CHUTE_BIN", "chute")
SHM = "/dev/shm/chute-"


def fail(msg):
    print("sigbus_runs: " + msg, file=sys.stderr)
    sys.exit(1)


class Drain(threading.Thread):
    """Reads chute's standard output to its end; started is set at the
    first bytes."""

    def __init__(self, pipe):
        super().__init__(daemon=True)
        self.pipe, self.started = pipe, threading.Event()

    def run(self):
        while self.pipe.read1(1 << 16):
            self.started.set()
        self.started.set()


class Consumer(threading.Thread):
    """Frees every READY slot of the ring (no futex: chute looks again
    every 5 ms), never unlinks it; with truncate, ftruncates it to that
    size after `after` seconds of reading and stops touching it."""

    def __init__(self, seg, truncate=None, after=0.0):
        super().__init__(daemon=True)
        self.seg, self.truncate, self.after = seg, truncate, after
        self.stop, self.frames, self.size = False, 0, 0
        self.started = threading.Event()  # the first frame came

    def run(self):
        fd, m = None, None
        while not self.stop:
            try:
                fd = os.open(self.seg, os.O_RDWR)
                if os.fstat(fd).st_size >= 4096 and \
                        os.pread(fd, 4, 0) == b"CHR1":
                    break
                os.close(fd)
                fd = None
            except FileNotFoundError:
                pass
            time.sleep(0.001)
        if fd is None:
            return
        self.size = os.fstat(fd).st_size
        m = mmap.mmap(fd, self.size)
        nslots = struct.unpack_from("<I", m, 8)[0]
        start, i = time.monotonic(), 0
        while not self.stop:
            if self.truncate is not None and \
                    time.monotonic() - start >= self.after:
                size = self.size // 2 if self.truncate == "half" \
                    else int(self.truncate)
                os.ftruncate(fd, size)
                break  # its pages are gone for us too
            at = 512 + 64 * i
            state = struct.unpack_from("<I", m, at)[0]
            if state == 1:
                struct.pack_into("<I", m, at, 0)
                self.frames += 1
                self.started.set()
                i = (i + 1) % nslots
            elif state in (2, 3):
                break
            else:
                time.sleep(0.0002)
        os.close(fd)  # m stays mapped: touching it now could SIGBUS us


def finish(proc, story):
    """chute's exit status and stderr (its stdout is someone else's)."""
    try:
        rc = proc.wait(timeout=10)  # its one line fits the pipe
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        fail("%s: chute did not end within 10 s" % story)
    return rc, proc.stderr.read().decode("utf-8", "replace")


def check(rc, err, story, name, seg=None):
    if rc < 0 or rc >= 128:
        fail("%s: chute died of a signal (%d): %r" % (story, rc, err))
    if rc not in (1, 2):
        fail("%s: chute exited %d, not 1 or 2: %r" % (story, rc, err))
    if name not in err:
        fail("%s: exit %d, but stderr does not name %s: %r"
             % (story, rc, name, err))
    if seg and os.path.exists(seg):
        fail("%s: exit %d, but %s was left: %r" % (story, rc, seg, err))


def shards(how, n, ds, smaller, seed):
    rnd = random.Random(seed)
    shard = os.path.join(ds, "shards", sorted(os.listdir(
        os.path.join(ds, "shards")))[0])
    pristine = open(shard, "rb").read()
    other = open(smaller, "rb").read()
    assert len(other) < len(pristine)
    counts, faults = {}, 0
    for run in range(n):
        with open(shard, "wb") as f:  # whole again, same inode
            f.write(pristine)
        overwrite = run % 2 == 0
        delay = rnd.uniform(0, 0.03)
        ring = "sigbus-%d-%d" % (os.getpid(), run)
        argv = [CHUTE, "stream", "-q", "-b", "8", "-e", "0", ds]
        argv += ["--shm", ring] if how == "shm" else []
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        reader = Consumer(SHM + ring) if how == "shm" else Drain(proc.stdout)
        reader.start()
        reader.started.wait(10)
        time.sleep(delay)
        if overwrite:
            with open(shard, "wb") as f:  # what cp does
                f.write(other)
            what = "overwritten"
        else:
            size = rnd.randrange(0, len(pristine) - 4096)
            os.truncate(shard, size)
            what = "truncated to %d" % size
        story = "%s run %d (%s after %.0f ms)" % (how, run, what,
                                                  delay * 1e3)
        rc, err = finish(proc, story)
        reader.stop = True
        reader.join()
        check(rc, err, story, os.path.basename(shard),
              SHM + ring if how == "shm" else None)
        counts[rc] = counts.get(rc, 0) + 1
        faults += "changed while it was read" in err
        if os.environ.get("SIGBUS_RUNS_SHOW"):
            print(story, rc, err.strip())
    with open(shard, "wb") as f:
        f.write(pristine)
    print("%s: %d runs, exit status %s, 0 signals, %d SIGBUS caught" % (
        how, n, ", ".join("%d: %d runs" % kv for kv in sorted(counts.items())),
        faults))


def rings(n, ds, seed):
    rnd = random.Random(seed)
    counts, faults = {}, 0
    for run in range(n):
        ring = "sigbus-%d-%d" % (os.getpid(), run)
        size = ("0", "4096", "half")[run % 3]
        delay = rnd.uniform(0, 0.03)
        consumer = Consumer(SHM + ring, size, delay)
        proc = subprocess.Popen(
            [CHUTE, "stream", "-q", "-b", "8", "-e", "0", "--shm", ring, ds],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        consumer.start()
        story = "ring run %d (truncated to %s after %.0f ms)" % (
            run, size, delay * 1e3)
        rc, err = finish(proc, story)
        consumer.stop = True
        consumer.join()
        check(rc, err, story, "ring '%s'" % ring, SHM + ring)
        counts[rc] = counts.get(rc, 0) + 1
        faults += "truncated while chute wrote it" in err
        if os.environ.get("SIGBUS_RUNS_SHOW"):
            print(story, rc, err.strip())
    print("ring: %d runs, exit status %s, 0 signals, %d SIGBUS caught" % (
        n, ", ".join("%d: %d runs" % kv for kv in sorted(counts.items())),
        faults))


def main():
    if sys.argv[1] == "shards":
        shards(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5],
               int(sys.argv[6]))
    elif sys.argv[1] == "ring":
        rings(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    else:
        fail("usage: sigbus_runs.py shards|ring ...")


main()
