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
from collections.abc import Iterator
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import weakref

from . import frames as _frames
from .errors import MissingDependency, StateError, StreamError
from .frames import FrameError

STATE_FORMAT = "chute-stream-state"
STATE_VERSION = 2
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
            torch = _loaded("torch")
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

    def to_dict(self) -> dict:
        """The fields, plus __key__, epoch, batch and cursor, as one dict."""
        d = dict(self.fields)
        d.update(__key__=self.keys, epoch=self.epoch, batch=self.batch,
                 cursor=self.cursor)
        return d

    def __repr__(self):
        return ("Batch(epoch=%d, batch=%d, nsamples=%d, fields=%s, cursor=%r)"
                % (self.epoch, self.batch, self.nsamples,
                   ",".join(self.fields), self.cursor))


def _loaded(name):
    """Module `name` when the program has imported it, else None.  This
    module never imports torch on its own: importing it takes seconds (5
    on a busy 2-core machine), more than a small dataset's first epoch,
    and a numpy or JAX trainer would pay it for nothing.  A program that
    uses torch has imported it already."""
    return sys.modules.get(name)


def _torch_if(wanted):
    """torch, imported, if wanted and installed; else None."""
    if not wanted:
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch


def _need_torch(what):
    """torch, imported for an option that asks for it."""
    torch = _torch_if(True)
    if torch is None:
        raise MissingDependency("%s needs torch (Debian: python3-torch)"
                                % what, "torch")
    return torch


def _dist_rank_world():
    """(rank, world size) of torch.distributed when it is initialised,
    else of $RANK and $WORLD_SIZE (what torchrun sets), else (0, 1)."""
    torch = _loaded("torch")
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


# chute stream's options that never change the batches (chute-stream(1)),
# and how many arguments each takes: extra_args of these do not bind a
# state to them (a node's own cache folder, more prefetch).
_NOT_SHAPING = {"--cache": 1, "-c": 1, "--index-memory": 1, "--prefetch": 1,
                "-p": 1, "--remote-cache": 1, "--remote-cache-size": 1,
                "--state": 1, "--stats-json": 1, "--slots": 1,
                "--slot-size": 1, "--stats": 0, "--quiet": 0, "-q": 0,
                "--pin": 0}


def _shaping_args(args):
    """args without the options that do not shape the stream."""
    out, skip = [], 0
    for a in args:
        if skip:
            skip -= 1
        elif a.split("=", 1)[0] in _NOT_SHAPING:
            skip = 0 if "=" in a else _NOT_SHAPING[a]
        else:
            out.append(a)
    return out


def _weight_text(w):
    """A weight as chute reads it: at most 6 decimals."""
    if isinstance(w, float):
        text = ("%.6f" % w).rstrip("0").rstrip(".")
        return text or "0"
    return str(w)


def _mix_text(mix):
    """--mix's 'A=W,B=W' from {A: W, B: W}."""
    if not isinstance(mix, dict) or not mix:
        raise ValueError("mix is {dataset: weight, ...}, not %r" % (mix,))
    return ",".join("%s=%s" % (os.fspath(k), _weight_text(v))
                    for k, v in mix.items())


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


def _cannot_run(binary, e):
    """The exception for a chute that could not be started: a missing or
    not executable binary is a MissingDependency that says how to get one."""
    from ._binary import FIXES
    if isinstance(e, (FileNotFoundError, PermissionError)):
        return MissingDependency("cannot run the chute binary %r: %s; %s" % (
            binary, e.strerror or e, FIXES), "chute")
    return StreamError("cannot run %r: %s" % (binary, e.strerror or e))


def _synced(ring, torch):
    """The ring's frames, each slot handed back only after the GPU copies
    made from it (non-blocking, on the current CUDA stream) are done."""
    for fr in ring:
        yield fr
        torch.cuda.current_stream().synchronize()


# Stream's arguments that are chute stream's options, by their long name
# (tests/test_stream_options.py holds names and defaults to chute's own
# table, `chute stream --help`), and those that are the package's alone.
CLI_OPTIONS = {"batch_size": "batch-size", "transforms": "transform",
               "shuffle": "shuffle", "seed": "seed", "epochs": "epochs",
               "split": "split", "mode": "mode", "drop_last": "drop-last",
               "rank": "rank", "world_size": "world-size",
               "workers": "workers", "shm": "shm", "resume": "resume",
               "record": "record", "mix": "mix", "mix_epoch": "mix-epoch",
               "fields": "fields", "source_field": "source-field"}
PYTHON_ONLY = ("dataset", "chute", "as_torch", "extra_args", "shm_timeout",
               "pin_memory")


class Stream:
    """Batches of `chute stream DATASET`, as an iterable: each pass (each
    `for`, each iter()) streams the next epoch.

    dataset      a dataset folder, a manifest, a shard or REMOTE[@TAG|@ID];
                 or a list of them (DATASET:SPLIT for a split) to mix
    mix          with a list: {dataset: weight} for each (--mix), the
                 proportions of the mix (chute-stream(1), MIXING)
    mix_epoch    a mix's epoch: "shortest" (until a source would repeat),
                 a number of samples, or a dataset of the list (one pass)
    fields       only these fields of each sample (a list; --fields)
    source_field "none", or "index" / "name": a mix's samples carry
                 field "source", their dataset's number or name
    batch_size   samples per batch (-b; default 256, as chute's)
    transforms   {"jpg": "decode | random-resized-crop 224 | flip"} or a
                 list of "FIELD: OPS" (--transform; chute-stream(1))
    shuffle      "global", "window" or "none"
    seed         the shuffle and augmentation seed
    epochs       None (the default): one epoch a pass, pass k streaming
                 epoch k, as many passes as the loop makes; E: the stream
                 is E epochs in all (epochs 0 to E-1), the first pass
                 streaming them all (a later pass, or a resumed one, goes
                 on where the last stopped, and one started after epoch
                 E-1 raises StreamError); 0: one pass for ever
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
    chute        the chute binary: a path, or a name on PATH; None finds
                 it (chute._binary.find_chute)
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

    The passes continue one deterministic sequence: the batches of pass k
    are those of `chute stream --epochs K` after its first k epochs, and
    a pass left early (break) is continued by the next one.  set_epoch(e)
    starts the next pass at epoch e, as DistributedSampler.set_epoch does.
    len(stream) is the number of batches a pass yields from an epoch's
    start, for this rank (drop_last and the world size counted).

    Iterating starts chute; the loop gets Batch objects.  Raises
    StreamError when chute fails (its message, exit status and stderr),
    when its stream ends without the batch flagged last, when its frames
    are malformed, or when a pass starts while another is still open;
    chute is stopped and reaped on break, exceptions, KeyboardInterrupt
    and garbage collection.

    A Stream made once torch is imported is a torch IterableDataset:
    give it to DataLoader(stream, batch_size=None, num_workers=0) (chute
    batches and runs its own worker threads).  DataLoader workers
    (num_workers > 0) would each stream the same data: that is refused
    with a StreamError.  The package imports torch only for an option
    that needs it (as_torch, pin_memory): a numpy or JAX trainer does
    not wait seconds for it."""

    def __new__(cls, *args, **kwargs):
        if cls is Stream and _loaded("torch.utils.data") is not None:
            cls = _torch_stream()
        return super().__new__(cls)

    def __init__(self, dataset: "str | os.PathLike[str] | list[str]", *,
                 batch_size: int = 256,
                 transforms: "dict[str, str] | list[str] | str | None" = None,
                 shuffle: str = "global", seed: int = 0,
                 epochs: "int | None" = None, split: "str | None" = None,
                 mode: str = "train", drop_last: "bool | None" = None,
                 rank: "int | None" = None, world_size: "int | None" = None,
                 workers: "int | str" = "auto", shm: bool = False,
                 resume: "str | dict | None" = None,
                 chute: "str | None" = None, as_torch: bool = False,
                 extra_args: "list[str] | tuple[str, ...]" = (),
                 shm_timeout: float = 60.0, pin_memory: bool = False,
                 record: "str | os.PathLike[str] | None" = None,
                 mix: "dict[str, float] | None" = None,
                 mix_epoch: "str | int" = "shortest",
                 fields: "list[str] | None" = None,
                 source_field: str = "none") -> None:
        if int(batch_size) < 1:
            raise ValueError("batch_size must be at least 1, not %r" % batch_size)
        if epochs is not None and int(epochs) < 0:
            raise ValueError("epochs is None (one a pass), 0 (for ever) or "
                             "a count, not %r" % (epochs,))
        if as_torch:
            _need_torch("as_torch=True")
        if mode not in ("train", "eval"):
            raise ValueError("mode is 'train' or 'eval', not %r" % (mode,))
        if shuffle not in ("global", "window", "none"):
            raise ValueError("shuffle is 'global', 'window' or 'none', not %r"
                             % (shuffle,))
        if isinstance(dataset, (list, tuple)):
            self.datasets = [os.fspath(d) for d in dataset]
            if mix is None:
                raise ValueError("a list of datasets is a mix: give mix="
                                 "{dataset: weight, ...}")
        else:
            self.datasets = [os.fspath(dataset)]
        self.dataset = self.datasets[0] if len(self.datasets) == 1 \
            else ",".join(self.datasets)
        self.mix = None if mix is None else _mix_text(mix)
        self.mix_epoch = str(mix_epoch)
        self.fields = None if fields is None else ",".join(fields)
        if source_field not in ("none", "index", "name"):
            raise ValueError("source_field is 'none', 'index' or 'name', "
                             "not %r" % (source_field,))
        self.source_field = source_field
        self.batch_size, self.seed = int(batch_size), int(seed)
        self.epochs = None if epochs is None else int(epochs)
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
        self._epoch = 0       # where a pass starts when there is no cursor
        self._open = False    # a pass is under way
        self._counted = None  # chute stream --count, once asked
        self._procs = weakref.WeakSet()
        if isinstance(resume, dict):
            self.load_state_dict(resume)
        elif resume is not None:
            self._cursor = str(resume)
            self._at_end = None  # a bare cursor: unknown

    # -- what identifies the stream

    def _shape_options(self):
        """The options that decide the batches of every rank: not the
        dataset's spelling (its id decides), not the rank or the world size
        (a cursor resumes on any: chute-stream(1), elastic), not workers,
        shm or the binary."""
        return {"batch_size": self.batch_size,
                "transforms": self.transforms, "shuffle": self.shuffle,
                "seed": self.seed, "split": self.split, "mode": self.mode,
                "drop_last": self.drop_last,
                "extra_args": _shaping_args(self.extra_args),
                **({"mix": self.mix, "mix_epoch": self.mix_epoch}
                   if self.mix is not None else {}),
                **({"fields": self.fields} if self.fields else {}),
                **({"source_field": self.source_field}
                   if self.source_field != "none" else {})}

    def options_hash(self) -> str:
        """SHA-256 of the options that decide the batches, hex."""
        text = json.dumps(self._shape_options(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def _binary(self):
        from ._binary import find_chute
        return find_chute(self.chute)

    def _shape_argv(self):
        a = ["--batch-size", str(self.batch_size), "--seed", str(self.seed),
             "--shuffle", self.shuffle, "--mode", self.mode,
             "--rank", str(self.rank), "--world-size", str(self.world_size)]
        if self.split is not None:
            a += ["--split", self.split]
        if self.drop_last is not None:
            a.append("--drop-last" if self.drop_last else "--no-drop-last")
        for t in self.transforms:
            a += ["--transform", t]
        if self.mix is not None:
            a += ["--mix", self.mix, "--mix-epoch", self.mix_epoch]
        if self.fields is not None:
            a += ["--fields", self.fields]
        if self.source_field != "none":
            a += ["--source-field", self.source_field]
        return a

    def _count(self, resume=None):
        """chute stream --count for these options (and a cursor): the
        dataset's id, its samples, the batches of an epoch, and those left
        in the cursor's epoch.  Reads a remote's manifest, no shard."""
        argv = [self._binary(), "stream", "--count"] + self._shape_argv() \
            + self.extra_args
        if resume is not None:
            argv += ["--resume", resume, "--epochs", "0"]
        try:
            out = subprocess.run(argv + ["--"] + self.datasets,
                                 stdin=subprocess.DEVNULL,
                                 capture_output=True, timeout=600)
        except OSError as e:
            raise _cannot_run(argv[0], e)
        if out.returncode != 0:
            last = out.stderr.decode("utf-8", "replace").strip().splitlines()
            raise StreamError("chute stream failed (exit %d): %s" % (
                out.returncode, last[-1] if last else "no message"),
                out.returncode, out.stderr.decode("utf-8", "replace"))
        try:
            return json.loads(out.stdout)
        except ValueError:
            raise StreamError("%r stream --count printed no count (%r): is it "
                              "a chute older than this package?" % (
                                  argv[0], out.stdout[:80]))

    def _info(self):
        if self._counted is None:
            self._counted = self._count()
        return self._counted

    @property
    def dataset_id(self) -> str:
        """The id of the dataset version streamed (chute-manifest(5))."""
        return self._info()["id"]

    @property
    def batches_per_epoch(self) -> int:
        """Batches of one epoch for this rank (drop_last, world size)."""
        return self._info()["batches"]

    def __len__(self) -> int:
        """Batches a pass yields from an epoch's start: one epoch's, or
        with epochs=E all E epochs'.  A resumed pass yields fewer.  For a
        remote dataset it reads the remote's manifest (once)."""
        if self.epochs == 0:
            raise TypeError("a Stream with epochs=0 streams for ever: it "
                            "has no len()")
        return self.batches_per_epoch * (self.epochs or 1)

    # -- where the next pass starts

    def _cursor_ends_epoch(self):
        if self._at_end is None:  # a bare cursor: ask chute
            self._at_end = self._count(self._cursor)["batches_left"] == 0
        return self._at_end

    @property
    def epoch(self) -> int:
        """The epoch the next pass starts in (or goes on with)."""
        if self._cursor is None:
            return self._epoch
        e = _cursor_epoch(self._cursor)
        return e + 1 if self._cursor_ends_epoch() else e

    def set_epoch(self, epoch: int) -> None:
        """The next pass streams epoch `epoch` from its start, as
        DistributedSampler.set_epoch: call it before each pass, or not at
        all.  A stream already in that epoch (resumed mid-epoch from a
        state_dict) keeps its place."""
        epoch = int(epoch)
        if epoch < 0 or (self.epochs and epoch >= self.epochs):
            raise ValueError("epoch %d is not in 0..%s" % (
                epoch, self.epochs - 1 if self.epochs else "(no end)"))
        if self._open:
            raise StreamError("set_epoch(%d) while a pass of this Stream is "
                              "open: end or break that loop first" % epoch)
        if self.epoch != epoch:
            self._cursor, self._at_end, self._epoch = None, False, epoch

    def _where(self):
        """(the options that start the next pass where it starts, the epoch
        it ends with + 1: chute's --epochs)."""
        start = self.epoch
        if self.epochs is None:
            end = start + 1
        else:
            end = self.epochs
            if end and start >= end:
                raise StreamError(
                    "all %d epochs of this Stream were streamed (its last "
                    "batch is %s): make it with epochs=None for one epoch "
                    "a pass, or call set_epoch(e) to stream epoch e again"
                    % (end, self._cursor))
        if self._cursor is not None:
            return ["--resume", self._cursor], end
        return (["--start-epoch", str(start)] if start else []), end

    def argv(self) -> "list[str]":
        """The chute stream command line of the next pass."""
        where, end = self._where()
        a = [self._binary(), "stream"] + self._shape_argv()
        a += ["--epochs", str(end), "--workers", str(self.workers)] + where
        if self.record is not None:
            a += ["--record", self.record]
        # "--": a dataset named -x is not an option
        return a + self.extra_args + ["--"] + self.datasets

    # -- checkpoints

    def state_dict(self) -> dict:
        """What a checkpoint keeps: the cursor of the last batch handed out
        (None before the first), the epoch a pass starts at without one,
        and what a stream must match to go on from it: the dataset's id
        (its content, however its path is spelled) and the options hash.
        Plain str, int and bool values: JSON, pickle and torch.save keep it."""
        return {"format": STATE_FORMAT, "version": STATE_VERSION,
                "cursor": self._cursor, "end_of_epoch": self._at_end,
                "epoch": self._epoch, "dataset_id": self.dataset_id,
                "dataset": self.dataset, "options_hash": self.options_hash(),
                "options": self._shape_options()}

    def load_state_dict(self, state: dict) -> None:
        """Goes on after the batch of state (from state_dict()) at the next
        pass.  The dataset is matched by its id, not its path: a copy, a
        pull or another spelling of the same version resumes.  Raises
        StateError when state is not a chute stream state, was made with
        other options or from another version of the data (naming both
        ids)."""
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise StateError("not a chute.Stream state_dict (no format %r)"
                             % STATE_FORMAT)
        version = state.get("version")
        if version not in (1, STATE_VERSION):
            raise StateError("chute.Stream state version %r; this chute reads "
                             "1 and %d" % (version, STATE_VERSION))
        self._check_options(state, version)
        cursor = state.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise StateError("the state's cursor is %r, not a string" % (cursor,))
        self._check_dataset(state, cursor)
        self._cursor = cursor
        self._at_end = state.get("end_of_epoch")
        self._epoch = int(state.get("epoch") or 0)

    def _check_options(self, state, version):
        ours = self._shape_options()
        theirs = dict(state.get("options") or {})
        if version == STATE_VERSION and state.get("options_hash") == self.options_hash():
            return
        if version == 1:  # hashed with the path, rank and world size
            theirs = {k: v for k, v in theirs.items() if k in ours}
            if theirs == ours:
                return
        diff = sorted(k for k in set(theirs) | set(ours)
                      if theirs.get(k) != ours.get(k))
        raise StateError("the state was made by a stream with other options "
                         "(%s): %s" % (", ".join(diff) or "unknown", "; ".join(
                             "%s %r, now %r" % (k, theirs.get(k), ours.get(k))
                             for k in diff)))

    def _check_dataset(self, state, cursor):
        theirs = state.get("dataset_id") or (cursor.split(".")[1] if cursor else None)
        if not theirs:
            return
        ours = self.dataset_id
        n = min(len(theirs), len(ours))
        if theirs[:n] != ours[:n]:
            raise StateError(
                "the state is of dataset version %s (%r); %r is version %s: "
                "resume on the data the state was made with (chute pull "
                "REMOTE@%s), or start this one afresh" % (
                    theirs, state.get("dataset"), self.dataset, ours, theirs))

    # -- iterating

    def _check_worker(self):
        torch_data = _loaded("torch.utils.data")
        if torch_data is None:  # not in a DataLoader's worker, then
            return
        info = torch_data.get_worker_info()
        if info is not None and info.num_workers > 1:
            raise StreamError(
                "chute.Stream in a DataLoader with num_workers=%d: each worker "
                "would stream the same batches.  Use DataLoader(stream, "
                "batch_size=None, num_workers=0): chute batches, and reads and "
                "decodes in its own threads (workers=)" % info.num_workers)

    def __iter__(self) -> "Iterator[Batch]":
        self._check_worker()
        return self._run()

    def __getitem__(self, index):
        # what a DataLoader calls on a Stream it does not see as iterable
        raise TypeError(
            "a chute.Stream is iterated, not indexed; a torch DataLoader "
            "takes it as an IterableDataset when it is made after torch is "
            "imported (import torch before making the Stream)")

    def _start(self, argv):
        try:
            # with shm, stdout carries nothing: chute lets it go once the
            # ring exists, which is what ShmRing waits for
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, bufsize=0)
        except OSError as e:
            raise _cannot_run(argv[0], e)
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
        if self._open:
            raise StreamError(
                "a pass of this Stream is already open (a loop over it has "
                "not ended): end or break that loop first, or make a second "
                "Stream for a second stream at once")
        self._open = True
        try:
            yield from self._pass()
        finally:
            self._open = False

    def _pass(self):
        argv = self.argv()
        ring = name = None
        if self.shm:
            name = "py-%d-%d-%s" % (os.getpid(), next(_ring_names),
                                    os.urandom(4).hex())
            argv[2:2] = ["--shm", name]
        else:  # frames() reads (copies) the pipe: chute may lend pages
            argv[2:2] = ["--vmsplice"]
        resumed = self._cursor is not None
        proc = self._start(argv)
        err = _Stderr(proc.stderr)
        last = None
        try:
            try:
                if self.shm:
                    from .shm import ShmRing
                    ring = ShmRing(name, self.shm_timeout,
                                   alive=lambda: proc.poll() is None,
                                   made=proc.stdout)
                    torch = _torch_if(self.pin_memory)
                    pinned = torch is not None and ring.pin(torch)
                    source = _synced(ring, torch) if pinned else iter(ring)
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
            # a resumed pass may find its epoch done (another world size)
            if self.epochs != 0 and (not last.last if last is not None
                                     else not resumed):
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
        self._open = False  # a copy has no pass of its own open yet

    def close(self) -> None:
        """Stops and reaps every chute this Stream started that still runs."""
        for proc in list(self._procs):
            _stop(proc)

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


_TORCH_STREAM = []  # the class below, made once torch is there


def _torch_stream():
    """Stream as a torch IterableDataset (what Stream() makes once torch
    is imported), made the first time it is asked for.  Pickles by the
    name _TorchStream (a DataLoader worker started by spawn)."""
    if not _TORCH_STREAM:
        import torch.utils.data as torch_data
        cls = type("Stream", (Stream, torch_data.IterableDataset),
                   {"__doc__": Stream.__doc__, "__module__": __name__,
                    "__qualname__": "_TorchStream"})
        _TORCH_STREAM.append(cls)
    return _TORCH_STREAM[0]


def __getattr__(name):
    if name == "_TorchStream":  # unpickling, maybe before any Stream()
        return _torch_stream()
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
