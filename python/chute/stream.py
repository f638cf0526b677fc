"""chute.Stream - batches of `chute stream`, in a Python training loop.

    stream = chute.Stream("fm/train", batch_size=256, seed=1, epochs=2,
                          transforms={"img": "bytes u8 28x28", "cls": "int"})
    for batch in stream:
        x = torch.from_numpy(batch["img"])      # (256, 28, 28) uint8
        y = torch.from_numpy(batch["cls"])      # (256,) int64
        ...
        torch.save({"model": ..., "data": stream.state_dict()}, "ckpt.pt")

A Stream is the recipe of a stream, not a running one: each iteration
starts `chute stream` (a pipe, or a shared-memory ring with shm=True),
reads its frames (chute.frames) and stops and reaps it when the loop ends,
breaks, raises, or is garbage collected.  A failure of chute never ends
an epoch quietly: it raises StreamError with chute's message and exit
status, and so does a stream that ends without its last batch.

The batches are a pure function of the dataset and the options that
shape them (batch size, transforms, shuffle, seed, split, mode, rank,
world size, drop_last): whatever `workers`, `shm` or the machine's speed,
the same bytes.  state_dict() holds the cursor of the last batch handed
out; a new Stream with the same options and load_state_dict() of it goes
on with exactly the next batch.
"""

import collections
import hashlib
import json
import os
import signal
import subprocess
import threading
import weakref

from . import frames as _frames
from .errors import StateError, StreamError
from .frames import FrameError

try:  # a torch IterableDataset when torch is there; plain numpy without
    import torch
    import torch.utils.data as _torch_data
    _Base = _torch_data.IterableDataset
except ImportError:
    torch = _torch_data = None
    _Base = object

STATE_FORMAT = "chute-stream-state"
STATE_VERSION = 1
STDERR_KEEP = 64 * 1024  # the last bytes of chute's stderr kept for errors
_ring_names = iter(range(1 << 62))


class Batch:
    """One batch: `keys` (the samples' keys, str), `fields` (name -> numpy
    array for fixed types, or a sequence of memoryviews for bytes; torch
    tensors with as_torch), `epoch`, `batch` (its number in the epoch),
    `cursor` (chute stream --resume CURSOR goes on after it), `nsamples`,
    `partial` (fewer samples than the batch size), `last` (the last batch
    of this rank's epoch).  batch["img"] is batch.fields["img"].

    With shm=True the arrays are views of the ring: they hold until the
    next batch is asked for.  Copy what must live longer."""

    __slots__ = ("fields", "epoch", "batch", "cursor", "nsamples",
                 "partial", "last", "_frame")

    def __init__(self, frame, as_torch):
        self._frame = frame
        self.epoch, self.batch = frame.epoch, frame.batch
        self.cursor, self.nsamples = frame.cursor, frame.nsamples
        self.partial, self.last = frame.partial, frame.last
        if as_torch:
            self.fields = {k: torch.from_numpy(v) if hasattr(v, "dtype") else v
                           for k, v in frame.fields.items()}
        else:
            self.fields = frame.fields

    @property
    def keys(self):
        return self._frame.keys

    def __getitem__(self, name):
        return self.fields[name]

    def __contains__(self, name):
        return name in self.fields

    def __len__(self):
        return self.nsamples

    def to_dict(self):
        """The fields, plus __key__, epoch, batch and cursor, as one dict."""
        d = dict(self.fields)
        d.update(__key__=self.keys, epoch=self.epoch, batch=self.batch,
                 cursor=self.cursor)
        return d

    def __repr__(self):
        return ("Batch(epoch=%d, batch=%d, nsamples=%d, fields=%s, cursor=%r)"
                % (self.epoch, self.batch, self.nsamples,
                   ",".join(self.fields), self.cursor))


def _dist_rank_world():
    """(rank, world size) of torch.distributed when it is initialised,
    else of $RANK and $WORLD_SIZE (what torchrun sets), else (0, 1)."""
    if torch is not None:
        dist = getattr(torch, "distributed", None)
        if dist is not None and dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    try:
        return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    except ValueError as e:
        raise StreamError("$RANK or $WORLD_SIZE is not a number: %s" % e)


def _cursor_epoch(cursor):
    """The epoch of a cursor (ch1.ID.OPTIONS.EPOCH.BATCH.SAMPLES), or -1."""
    try:
        return int(cursor.split(".")[3])
    except (IndexError, ValueError):
        return -1


def _transform_specs(transforms):
    """["FIELD: OP | OP", ...] from a dict {field: "op | op"} or a list."""
    if not transforms:
        return []
    if isinstance(transforms, str):
        return [transforms]
    if isinstance(transforms, dict):
        return ["%s: %s" % (f, ops if isinstance(ops, str) else " | ".join(ops))
                for f, ops in transforms.items()]
    return list(transforms)


class _Stderr:
    """Drains chute's stderr in a thread (a full pipe would stop chute),
    keeping the last STDERR_KEEP bytes for the error message."""

    def __init__(self, pipe):
        self._pipe, self._chunks, self._size = pipe, collections.deque(), 0
        self._thread = threading.Thread(target=self._drain, daemon=True,
                                        name="chute-stderr")
        self._thread.start()

    def _drain(self):
        while True:
            try:
                b = self._pipe.read(8192)
            except (OSError, ValueError):
                return
            if not b:
                return
            self._chunks.append(b)
            self._size += len(b)
            while self._size - len(self._chunks[0]) >= STDERR_KEEP:
                self._size -= len(self._chunks.popleft())

    def text(self, timeout=5.0):
        self._thread.join(timeout)
        return b"".join(self._chunks)[-STDERR_KEEP:].decode("utf-8", "replace")


def _widen_pipe(fd, size=1 << 20):
    """A 1 MiB pipe instead of 64 KiB: a frame of a few hundred KB then
    crosses in one or two reads (chute asks the same of its end)."""
    try:
        import fcntl
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
    except OSError:
        pass  # over /proc/sys/fs/pipe-max-size: the default will do


def _stop(proc, timeout=5.0):
    """Stops chute if it still runs and reaps it: SIGTERM (chute then
    removes its ring and temporary files), SIGKILL after timeout."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        except ProcessLookupError:
            proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            try:
                pipe.close()
            except OSError:
                pass


def _synced(ring):
    """The ring's frames, each slot handed back only after the GPU copies
    made from it (non-blocking, on the current CUDA stream) are done."""
    for fr in ring:
        yield fr
        torch.cuda.current_stream().synchronize()


class Stream(_Base):
    """Batches of `chute stream DATASET`, as an iterable.

    dataset      a dataset folder, a manifest, a shard or REMOTE[@TAG|@ID]
    batch_size   samples per batch (-b)
    transforms   {"jpg": "decode | random-resized-crop 224 | flip"} or a
                 list of "FIELD: OPS" (--transform; chute-stream(1))
    shuffle      "global", "window" or "none"
    seed         the shuffle and augmentation seed
    epochs       epochs to stream; 0 for ever
    split        a split of the manifest ("train", "val"), or None for all
    mode         "train", or "eval": in order, no random augmentation
    drop_last    True drops each epoch's partial last batch, False keeps
                 it, None leaves chute's default (keep)
    rank, world_size
                 this rank and the number of ranks; None takes them from
                 torch.distributed when it is initialised, else from
                 $RANK and $WORLD_SIZE, else 0 and 1
    workers      chute's reader threads, "auto", or 0: chute's writer
                 reads each batch itself (the least CPU, for a trainer
                 that needs the other cores and cheap transforms; auto
                 does so when the first batches are that cheap)
    shm          True: frames through a shared-memory ring instead of a
                 pipe (arrays are views of the ring: see Batch)
    resume       a cursor or a state_dict() to go on after
    chute        the chute binary
    as_torch     fixed-type fields as torch tensors (torch.from_numpy:
                 no copy) instead of numpy arrays
    record       keep a run record in this file (--record): the dataset
                 id, every option that shapes the stream, the last cursor;
                 log it with the model (MLflow, W&B) to name the data
    extra_args   more options for chute stream, as a list
    shm_timeout  seconds to wait for chute to make its ring
    pin_memory   with shm and a CUDA GPU: the ring is registered as pinned
                 memory, so that .to("cuda", non_blocking=True) of a
                 batch's arrays is a DMA copy; the copy is waited for
                 before the batch's slot goes back to chute

    Iterating starts chute; the loop gets Batch objects.  Raises
    StreamError when chute fails (its message, exit status and stderr),
    when its stream ends without the batch flagged last, or when its
    frames are malformed; chute is stopped and reaped on break,
    exceptions, KeyboardInterrupt and garbage collection.

    With torch, a Stream is a torch.utils.data.IterableDataset: give it to
    DataLoader(stream, batch_size=None, num_workers=0) (chute batches and
    runs its own worker threads).  DataLoader workers (num_workers > 0)
    would each stream the same data: that is refused with a StreamError."""

    def __init__(self, dataset, *, batch_size, transforms=None,
                 shuffle="global", seed=0, epochs=1, split=None, mode="train",
                 drop_last=None, rank=None, world_size=None, workers="auto",
                 shm=False, resume=None, chute="chute", as_torch=False,
                 extra_args=(), shm_timeout=60.0, pin_memory=False,
                 record=None):
        if int(batch_size) < 1:
            raise ValueError("batch_size must be at least 1, not %r" % batch_size)
        if as_torch and torch is None:
            raise StreamError("as_torch=True needs torch (Debian: python3-torch)")
        if mode not in ("train", "eval"):
            raise ValueError("mode is 'train' or 'eval', not %r" % (mode,))
        if shuffle not in ("global", "window", "none"):
            raise ValueError("shuffle is 'global', 'window' or 'none', not %r"
                             % (shuffle,))
        self.dataset = os.fspath(dataset)
        self.batch_size, self.seed, self.epochs = int(batch_size), int(seed), int(epochs)
        self.transforms = _transform_specs(transforms)
        self.shuffle, self.split, self.mode = shuffle, split, mode
        self.drop_last, self.workers, self.shm = drop_last, workers, bool(shm)
        self.chute, self.as_torch = chute, bool(as_torch)
        self.extra_args, self.shm_timeout = list(extra_args), shm_timeout
        self.pin_memory = bool(pin_memory)
        self.record = None if record is None else os.fspath(record)
        if rank is None or world_size is None:
            r, w = _dist_rank_world()
            rank = r if rank is None else rank
            world_size = w if world_size is None else world_size
        self.rank, self.world_size = int(rank), int(world_size)
        if not 0 <= self.rank < self.world_size:
            raise ValueError("rank %d is not in 0..%d" % (self.rank, self.world_size - 1))
        self._cursor = None   # of the last batch handed out
        self._at_end = False  # it was the last batch of its epoch
        self._procs = weakref.WeakSet()
        if isinstance(resume, dict):
            self.load_state_dict(resume)
        elif resume is not None:
            self._cursor = str(resume)
            self._at_end = None  # a bare cursor: unknown

    # -- what identifies the stream

    def _shape_options(self):
        """The options that decide the batches (not workers, shm, chute)."""
        return {"dataset": self.dataset, "batch_size": self.batch_size,
                "transforms": self.transforms, "shuffle": self.shuffle,
                "seed": self.seed, "split": self.split, "mode": self.mode,
                "drop_last": self.drop_last, "rank": self.rank,
                "world_size": self.world_size, "extra_args": self.extra_args}

    def options_hash(self):
        """SHA-256 of the options that decide the batches, hex."""
        text = json.dumps(self._shape_options(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def argv(self):
        """The chute stream command line of the next iteration."""
        a = [self.chute, "stream", "-b", str(self.batch_size),
             "--seed", str(self.seed), "-e", str(self.epochs),
             "--shuffle", self.shuffle, "--mode", self.mode,
             "--rank", str(self.rank), "--world-size", str(self.world_size),
             "-w", str(self.workers)]
        if self.split is not None:
            a += ["--split", self.split]
        if self.drop_last is not None:
            a.append("--drop-last" if self.drop_last else "--no-drop-last")
        for t in self.transforms:
            a += ["--transform", t]
        if self._cursor is not None:
            a += ["--resume", self._cursor]
        if self.record is not None:
            a += ["--record", self.record]
        # "--": a dataset named -x is not an option
        return a + self.extra_args + ["--", self.dataset]

    # -- checkpoints

    def state_dict(self):
        """What a checkpoint keeps: the cursor of the last batch handed out
        (None before the first) and what a stream must match to go on
        from it: the dataset id of the cursor and the options hash."""
        return {"format": STATE_FORMAT, "version": STATE_VERSION,
                "cursor": self._cursor, "end_of_epoch": self._at_end,
                "dataset_id": self._cursor.split(".")[1] if self._cursor else None,
                "dataset": self.dataset, "options_hash": self.options_hash(),
                "options": self._shape_options()}

    def load_state_dict(self, state):
        """Goes on after the batch of state (from state_dict()) at the next
        iteration.  Raises StateError when state is not a chute stream
        state or was made with other options; a cursor of another dataset
        version is refused by chute when the stream starts (StreamError)."""
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise StateError("not a chute.Stream state_dict (no format %r)"
                             % STATE_FORMAT)
        if state.get("version") != STATE_VERSION:
            raise StateError("chute.Stream state version %r; this chute reads %d"
                             % (state.get("version"), STATE_VERSION))
        if state.get("options_hash") != self.options_hash():
            theirs, ours = state.get("options") or {}, self._shape_options()
            diff = sorted(k for k in set(theirs) | set(ours)
                          if theirs.get(k) != ours.get(k))
            raise StateError("the state was made by a stream with other options "
                             "(%s): %s" % (", ".join(diff) or "unknown",
                                           "; ".join("%s %r, now %r" % (
                                               k, theirs.get(k), ours.get(k))
                                               for k in diff)))
        cursor = state.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise StateError("the state's cursor is %r, not a string" % (cursor,))
        self._cursor = cursor
        self._at_end = state.get("end_of_epoch")

    # -- iterating

    def _check_worker(self):
        if _torch_data is None:
            return
        info = _torch_data.get_worker_info()
        if info is not None and info.num_workers > 1:
            raise StreamError(
                "chute.Stream in a DataLoader with num_workers=%d: each worker "
                "would stream the same batches.  Use DataLoader(stream, "
                "batch_size=None, num_workers=0): chute batches, and reads and "
                "decodes in its own threads (workers=)" % info.num_workers)

    def __iter__(self):
        self._check_worker()
        return self._run()

    def _start(self, argv):
        try:
            # with shm, stdout carries nothing: chute lets it go once the
            # ring exists, which is what ShmRing waits for
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, bufsize=0)
        except OSError as e:
            raise StreamError("cannot run %r: %s" % (self.chute, e.strerror or e))
        self._procs.add(proc)
        if not self.shm:
            _widen_pipe(proc.stdout.fileno())
        return proc

    def _failure(self, proc, err, why):
        """The StreamError for a stream that failed: chute's status and
        stderr when it failed, else why."""
        try:
            status = proc.wait(10 if proc.poll() is None else None)
        except subprocess.TimeoutExpired:
            status = None
        text = err.text()
        last = text.strip().splitlines()[-1] if text.strip() else ""
        if status and status < 0:
            msg = "chute stream was killed by signal %d%s" % (
                -status, ": %s" % last if last else "")
        elif status:
            msg = "chute stream failed (exit %d): %s" % (status, last or why)
        else:
            msg = "%s%s" % (why, " (chute: %s)" % last if last else "")
        return StreamError(msg, status, text)

    def _run(self):
        argv = self.argv()
        ring = name = None
        if self.shm:
            name = "py-%d-%d-%s" % (os.getpid(), next(_ring_names),
                                    os.urandom(4).hex())
            argv[2:2] = ["--shm", name]
        else:  # frames() reads (copies) the pipe: chute may lend pages
            argv[2:2] = ["--vmsplice"]
        proc = self._start(argv)
        err = _Stderr(proc.stderr)
        last = None
        # resumed after the last batch: chute has nothing more to write
        nothing_left = self._cursor is not None and self._at_end is not False \
            and _cursor_epoch(self._cursor) >= self.epochs - 1
        try:
            try:
                if self.shm:
                    from .shm import ShmRing
                    ring = ShmRing(name, self.shm_timeout,
                                   alive=lambda: proc.poll() is None,
                                   made=proc.stdout)
                    pinned = self.pin_memory and torch is not None \
                        and ring.pin(torch)
                    source = _synced(ring) if pinned else iter(ring)
                else:
                    source = _frames.frames(proc.stdout)
                for fr in source:
                    batch = Batch(fr, self.as_torch)
                    last = fr
                    self._cursor, self._at_end = fr.cursor, fr.last
                    yield batch
            except (FrameError, StreamError) as e:
                raise self._failure(proc, err, str(e)) from e
            status = proc.wait()
            if status != 0:
                raise self._failure(proc, err, "chute stream failed")
            if self.epochs and (not last.last if last is not None
                                else not nothing_left):
                raise self._failure(
                    proc, err, "chute stream ended without its last batch "
                    "(after %s)" % (last.cursor if last else "no batch"))
        finally:
            if ring is not None:
                ring.close()
            _stop(proc)
            if name is not None:  # chute removes it; not when killed
                from .shm import ring_path
                try:
                    os.unlink(ring_path(name))
                except OSError:
                    pass

    def __getstate__(self):  # a DataLoader worker started by spawn
        state = self.__dict__.copy()
        state["_procs"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._procs = weakref.WeakSet()

    def close(self):
        """Stops and reaps every chute this Stream started that still runs."""
        for proc in list(self._procs):
            _stop(proc)

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
