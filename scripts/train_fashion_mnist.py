#!/usr/bin/python3
"""train_fashion_mnist.py - train a small model on batches from chute stream.

An example trainer, and the test of chute stream's promise that a training
run can stop anywhere and resume exactly.  It starts

    chute stream TRAIN --epochs E --seed S --batch-size B [--resume CURSOR]

itself, reads its frames with chute_batch.py (next to this script), trains
an MLP (784-256-128-10, dropout) with Adam on one CPU thread, and after
each epoch evaluates on every sample of TEST once:

    chute stream TEST --mode eval --batch-size 1000

printing "epoch E: eval accuracy X.XX %" (epochs numbered from 0, as in
chute's cursors).  At the end it prints "final weights sha256 HEX", a hash
of the parameters, so that runs can be compared.

With --shm NAME the batches come through shared-memory rings (chute stream
--shm NAME.train and NAME.eval) instead of pipes: the same frames, read in
place (chute_batch.shm_frames), the same weights.

With --device cuda (the default when torch sees a GPU) the model trains on
the GPU.  Frames from a ring are then copied straight from the ring: the
ring is registered with CUDA as pinned memory (ShmRing.pin, through
cudaHostRegister), each batch is copied with .to("cuda",
non_blocking=True), and the copy is waited for before the frame's slot is
handed back.  On a machine without CUDA everything stays on the CPU.

The datasets come from scripts/fashion_mnist.py and chute pack: samples with
an "img" field of 784 bytes (28 x 28 uint8) and a "cls" field (the label as
decimal text).

Reproducible: the same arguments give the same weights, bit for bit.  The
seed sets both chute's shuffle and torch's initialisation and dropout; torch
runs on one thread with deterministic algorithms.

Checkpoints (--checkpoint FILE) hold the model, the optimizer, torch's RNG
state, the counters and the cursor of the last batch trained on.  They are
written every --checkpoint-every batches and at the end, atomically (FILE.tmp
then a rename), and after each one the line "checkpoint after CURSOR" is
printed.  --resume-from FILE restores all of it and restarts chute stream
with --resume CURSOR: the run goes on with the very batch that followed, and
ends with the weights an uninterrupted run has.

Exit status: 0 done, 1 chute stream failed or sent data that is not
Fashion-MNIST, 2 usage error or a checkpoint that cannot be read or written.
"""

import argparse
import hashlib
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import debian_python  # noqa: E402  (found next to this script)

debian_python.require("numpy", "torch")
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

import chute_batch  # noqa: E402

PROG = "train_fashion_mnist.py"
PIXELS = 28 * 28
CLASSES = 10
CHECKPOINT_VERSION = 1


class Failure(Exception):
    """An error for the user; status 1 (data) or 2 (usage, files)."""

    def __init__(self, msg, status=1):
        super().__init__(msg)
        self.status = status


def make_model():
    return nn.Sequential(
        nn.Linear(PIXELS, 256), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(256, 128), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(128, CLASSES))


# ----------------------------------------------------------------- batches

def decode(fr, what, device="cpu"):
    """(images as float tensor (n, 784) in [0, 1], labels as int64 tensor),
    on device.

    Every image has 784 bytes, so the "img" column, all the images back to
    back in the frame's buffer, is already an (n, 784) uint8 array: a view,
    no copy until the conversion to float (on the CPU), or until the
    non-blocking copy to the GPU (a DMA transfer from a pinned ring)."""
    n = fr.nsamples
    for name in ("img", "cls"):
        if name not in fr.columns:
            raise Failure("%s: batch %d of epoch %d has no field %r (fields: "
                          "%s)" % (what, fr.batch, fr.epoch, name,
                                   ", ".join(sorted(fr.columns)) or "none"))
    values, offsets = fr.columns["img"]
    sizes = np.diff(offsets)
    bad = np.flatnonzero(sizes != PIXELS)
    if bad.size:
        i = int(bad[0])
        raise Failure("%s: sample '%s' (batch %d of epoch %d) has %d bytes "
                      "of img, expected %d" % (what, fr.keys[i], fr.batch,
                                               fr.epoch, sizes[i], PIXELS))
    images = torch.from_numpy(values.reshape(n, PIXELS))
    if device != "cpu":
        images = images.to(device, non_blocking=True)
    images = images.float().div_(255)
    labels = []
    for key, text in zip(fr.keys, fr.fields["cls"]):
        try:
            label = int(bytes(text).decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            label = -1
        if not 0 <= label < CLASSES:
            raise Failure("%s: sample '%s' has cls %r, not a label 0-%d"
                          % (what, key, bytes(text)[:20], CLASSES - 1))
        labels.append(label)
    return images, torch.tensor(labels, dtype=torch.int64).to(device)


class Stream:
    """A `chute stream` child process and the frames it writes, through a
    pipe or, with shm (a ring name), through shared memory (frames are
    views of the ring, each released when the next is asked for).

    Iterate for the frames; close() stops chute (closing the pipe or the
    ring ends it quietly) and raises if it failed."""

    def __init__(self, chute, dataset, options, what, shm=None,
                 device="cpu"):
        self.what, self.shm, self.frames = what, shm, None
        self.device = device
        cmd = [chute, "stream"] + options + [dataset]
        if shm:
            cmd[2:2] = ["--shm", shm]
        try:
            self.proc = subprocess.Popen(
                cmd, stdout=subprocess.DEVNULL if shm else subprocess.PIPE)
        except OSError as e:
            raise Failure("cannot run '%s': %s" % (chute, e.strerror or e), 2)

    def __iter__(self):
        proc = self.proc
        if self.shm:
            self.frames = self._ring(proc)
        else:
            self.frames = chute_batch.frames(proc.stdout)
        try:
            yield from self.frames
        except (ValueError, chute_batch.ShmError) as e:
            self.close(check=False)
            raise Failure("%s: bad frame from chute stream: %s"
                          % (self.what, e))
        self.close()

    def _ring(self, proc):
        """The ring's frames; on a GPU, from pinned memory, each copy done
        before its slot goes back."""
        ring = chute_batch.ShmRing(self.shm,
                                   alive=lambda: proc.poll() is None)
        try:
            pinned = self.device != "cpu" and ring.pin(torch)
            for fr in ring:
                yield fr
                if pinned:  # the non-blocking copies read the slot
                    torch.cuda.current_stream().synchronize()
                fr.release()
        finally:
            ring.close()

    def close(self, check=True):
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        if self.frames is not None:
            self.frames.close()  # a ring closed early stops chute
        if proc.stdout:
            proc.stdout.close()
        status = proc.wait()
        if check and status != 0:
            raise Failure("%s: chute stream exited with status %d"
                          % (self.what, status))


# ------------------------------------------------------------ checkpoints

def save_checkpoint(path, state):
    """torch.save to path.tmp, synced, then renamed over path: a reader
    (or a resume after a crash) sees the old checkpoint or the new one."""
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        raise Failure("cannot write checkpoint '%s': %s"
                      % (path, e.strerror or e), 2)


def load_checkpoint(path):
    try:
        state = torch.load(path)
    except OSError as e:
        raise Failure("cannot read checkpoint '%s': %s"
                      % (path, e.strerror or e), 2)
    except Exception as e:  # torch raises many kinds on a corrupt file
        raise Failure("'%s' is not a checkpoint of %s: %s"
                      % (path, PROG, e), 2)
    if not isinstance(state, dict) or \
            state.get("version") != CHECKPOINT_VERSION:
        raise Failure("'%s' is not a checkpoint of %s (version %d)"
                      % (path, PROG, CHECKPOINT_VERSION), 2)
    return state


class Trainer:
    """The model, the optimizer and the counters a checkpoint holds."""

    def __init__(self, args):
        self.args = args
        torch.manual_seed(args.seed)
        self.device = args.device
        self.model = make_model().to(self.device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=args.lr)
        self.loss_fn = nn.CrossEntropyLoss()
        self.steps = 0            # batches trained on, all epochs
        self.cursor = None        # of the last of them
        self.epoch_loss = 0.0     # summed over the samples of this epoch
        self.epoch_samples = 0
        self.log = None
        self.saved = None         # cursor of the last checkpoint written

    def state(self):
        return {
            "version": CHECKPOINT_VERSION,
            "model": self.model.state_dict(),
            "optimizer": self.opt.state_dict(),
            "rng": torch.get_rng_state(),
            "steps": self.steps,
            "cursor": self.cursor,
            "epoch_loss": self.epoch_loss,
            "epoch_samples": self.epoch_samples,
            "seed": self.args.seed,
            "batch_size": self.args.batch_size,
        }

    def restore(self, state, path):
        args = self.args
        for name in ("seed", "batch_size"):
            if state[name] != getattr(args, name):
                raise Failure("checkpoint '%s' was made with --%s %s, not %s"
                              % (path, name.replace("_", "-"), state[name],
                                 getattr(args, name)), 2)
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["rng"])
        self.steps = state["steps"]
        self.cursor = state["cursor"]
        self.epoch_loss = state["epoch_loss"]
        self.epoch_samples = state["epoch_samples"]
        if self.args.checkpoint and os.path.abspath(self.args.checkpoint) \
                == os.path.abspath(path):
            self.saved = self.cursor  # already there: no need to rewrite it

    def checkpoint(self):
        if self.args.checkpoint and self.cursor not in (None, self.saved):
            save_checkpoint(self.args.checkpoint, self.state())
            self.saved = self.cursor
            print("checkpoint after %s" % self.cursor, flush=True)

    # ------------------------------------------------------------ training

    def step(self, fr):
        images, labels = decode(fr, "train", self.device)
        self.model.train()
        self.opt.zero_grad()
        loss = self.loss_fn(self.model(images), labels)
        loss.backward()
        self.opt.step()
        self.steps += 1
        self.cursor = fr.cursor
        self.epoch_loss += loss.item() * fr.nsamples
        self.epoch_samples += fr.nsamples
        if self.log:
            self.log.write(fr.cursor + "\n")
            self.log.flush()

    def end_epoch(self, epoch):
        loss = self.epoch_loss / max(self.epoch_samples, 1)
        print("epoch %d: train loss %.4f over %d samples"
              % (epoch, loss, self.epoch_samples), flush=True)
        self.epoch_loss, self.epoch_samples = 0.0, 0
        self.evaluate(epoch)

    def evaluate(self, epoch):
        args = self.args
        stream = Stream(args.chute, args.test,
                        ["--mode", "eval", "--batch-size",
                         str(args.eval_batch_size)], "eval",
                        args.shm and args.shm + ".eval", self.device)
        correct = total = 0
        self.model.eval()
        try:
            with torch.no_grad():
                for fr in stream:
                    if fr.nsamples == 0:
                        continue
                    images, labels = decode(fr, "eval", self.device)
                    pred = self.model(images).argmax(dim=1)
                    correct += int((pred == labels).sum())
                    total += fr.nsamples
        finally:
            stream.close(check=False)
        if total == 0:
            raise Failure("eval: no samples in '%s'" % args.test)
        print("epoch %d: eval accuracy %.2f %%"
              % (epoch, 100.0 * correct / total), flush=True)

    def train(self):
        args = self.args
        options = ["--epochs", str(args.epochs), "--seed", str(args.seed),
                   "--batch-size", str(args.batch_size)]
        if self.cursor is not None:
            options += ["--resume", self.cursor]
        stream = Stream(args.chute, args.train, options, "train",
                        args.shm and args.shm + ".train", self.device)
        try:
            for fr in stream:
                if fr.nsamples:
                    self.step(fr)
                # after the evaluation, so that a checkpoint of an epoch's
                # last batch never needs one on resume
                if fr.last:
                    self.end_epoch(fr.epoch)
                if fr.nsamples and args.checkpoint_every and \
                        self.steps % args.checkpoint_every == 0:
                    self.checkpoint()
                if args.sleep:
                    time.sleep(args.sleep)
        finally:
            stream.close(check=False)
        self.checkpoint()

    def weights_sha256(self):
        h = hashlib.sha256()
        for p in self.model.parameters():
            h.update(p.detach().cpu().contiguous().numpy().tobytes())
        return h.hexdigest()


# -------------------------------------------------------------------- main

def positive(value):
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1, not %d" % n)
    return n


def parse_args():
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Train a small model on Fashion-MNIST streamed by chute "
                    "stream; evaluate after each epoch.")
    ap.add_argument("train", help="the training dataset (chute pack output)")
    ap.add_argument("test", help="the evaluation dataset")
    ap.add_argument("-b", "--batch-size", type=positive, default=64,
                    metavar="B", help="training batch size (default 64)")
    ap.add_argument("--chute", default="chute", metavar="PATH",
                    help="the chute binary (default: chute on PATH)")
    ap.add_argument("--checkpoint", metavar="FILE",
                    help="write checkpoints to FILE")
    ap.add_argument("--checkpoint-every", type=positive, metavar="K",
                    help="a checkpoint every K batches (and at the end)")
    ap.add_argument("-e", "--epochs", type=positive, default=2, metavar="E",
                    help="epochs to train (default 2)")
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"),
                    default="auto",
                    help="where to train (default auto: cuda when torch "
                         "sees a GPU, else cpu)")
    ap.add_argument("--eval-batch-size", type=positive, default=1000,
                    metavar="B", help="evaluation batch size (default 1000)")
    ap.add_argument("--log-cursors", metavar="FILE",
                    help="write the cursor of every batch trained on to "
                         "FILE, one a line (FILE is truncated)")
    ap.add_argument("--lr", type=float, default=1e-3,
                    help="Adam's learning rate (default 0.001)")
    ap.add_argument("--resume-from", metavar="FILE",
                    help="restore a checkpoint and continue after its batch")
    ap.add_argument("--seed", type=int, default=0, metavar="S",
                    help="seed of the shuffle and of torch (default 0)")
    ap.add_argument("--shm", metavar="NAME",
                    help="read batches from shared-memory rings NAME.train "
                         "and NAME.eval (chute stream --shm) instead of "
                         "pipes; the same batches, the same weights")
    ap.add_argument("--sleep", type=float, default=0.0, metavar="SECONDS",
                    help="pause after each batch (for tests that interrupt "
                         "a run)")
    args = ap.parse_args()
    if args.checkpoint_every and not args.checkpoint:
        ap.error("--checkpoint-every needs --checkpoint FILE")
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    elif args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: torch sees no CUDA GPU")
    return args


def run(args):
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    trainer = Trainer(args)
    if args.resume_from:
        trainer.restore(load_checkpoint(args.resume_from), args.resume_from)
        print("resuming after %s" % (trainer.cursor or "nothing"),
              flush=True)
    if args.log_cursors:
        try:
            trainer.log = open(args.log_cursors, "w")
        except OSError as e:
            raise Failure("cannot write '%s': %s"
                          % (args.log_cursors, e.strerror or e), 2)
    start, steps = time.monotonic(), trainer.steps
    try:
        trainer.train()
    finally:
        if trainer.log:
            trainer.log.close()
    print("trained %d batches in %.1f s" % (trainer.steps - steps,
                                           time.monotonic() - start))
    print("final weights sha256 %s" % trainer.weights_sha256(), flush=True)


def main():
    args = parse_args()
    try:
        run(args)
    except Failure as e:
        sys.stdout.flush()
        sys.stderr.write("%s: %s\n" % (PROG, e))
        return e.status
    return 0


if __name__ == "__main__":
    sys.exit(main())
