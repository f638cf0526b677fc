#!/usr/bin/python3
"""train_fashion_mnist.py - train a small model on batches from chute stream.

An example trainer, and the test of chute stream's promise that a training
run can stop anywhere and resume exactly.  It reads its batches through the
chute Python package (python/chute: make install, or found beside this
script's folder):

    chute.Stream(TRAIN, batch_size=B, seed=S, epochs=E,
                 transforms={"img": "bytes u8 784", "cls": "int"})

which runs `chute stream` and hands out the images as one (B, 784) uint8
array and the labels as int64, trains an MLP (784-256-128-10, dropout) with
Adam on one CPU thread, and after each epoch evaluates on every sample of
TEST once (mode="eval", batch size 1000):

printing "epoch E: eval accuracy X.XX %" (epochs numbered from 0, as in
chute's cursors).  At the end it prints "final weights sha256 HEX", a hash
of the parameters, so that runs can be compared.

With --shm the batches come through shared-memory rings (chute stream
--shm) instead of pipes: the same frames, read in place, the same weights.

With --device cuda (the default when torch sees a GPU) the model trains on
the GPU.  Frames from a ring are then copied straight from the ring: the
ring is registered with CUDA as pinned memory (Stream(pin_memory=True),
through cudaHostRegister), each batch is copied with .to("cuda",
non_blocking=True), and the copy is waited for before the frame's slot is
handed back.  On a machine without CUDA everything stays on the CPU.

The datasets come from scripts/fashion_mnist.py and chute pack: samples with
an "img" field of 784 bytes (28 x 28 uint8) and a "cls" field (the label as
decimal text).  A sample of another size, or a label that is not a number,
stops chute stream with a message naming the sample.

Reproducible: the same arguments give the same weights, bit for bit.  The
seed sets both chute's shuffle and torch's initialisation and dropout; torch
runs on one thread with deterministic algorithms.

Checkpoints (--checkpoint FILE) hold the model, the optimizer, torch's RNG
state, the counters and the stream's state_dict() (the cursor of the last
batch trained on, and what a stream must match to resume from it).  They are
written every --checkpoint-every batches and at the end, atomically (FILE.tmp
then a rename), and after each one the line "checkpoint after CURSOR" is
printed.  --resume-from FILE restores all of it (Stream.load_state_dict):
the run goes on with the very batch that followed, and ends with the
weights an uninterrupted run has.

Exit status: 0 done, 1 chute stream failed or sent data that is not
Fashion-MNIST, 2 usage error or a checkpoint that cannot be read or written.
"""

import argparse
import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import debian_python  # noqa: E402  (found next to this script)

debian_python.require("numpy", "torch")
debian_python.use_repo_package()
import torch  # noqa: E402
from torch import nn  # noqa: E402

import chute  # noqa: E402

PROG = "train_fashion_mnist.py"
PIXELS = 28 * 28
CLASSES = 10
CHECKPOINT_VERSION = 2
# each image as 784 bytes of one (n, 784) array, each label as an int64
TRANSFORMS = {"img": "bytes u8 %d" % PIXELS, "cls": "int"}


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

def tensors(batch, what, device="cpu"):
    """(images as float tensor (n, 784) in [0, 1], labels as int64 tensor),
    on device.  chute has made them arrays ("bytes u8 784", "int"): the
    images are a view of the frame until the conversion to float (on the
    CPU), or until the non-blocking copy to the GPU (a DMA transfer from
    a pinned ring)."""
    for name in ("img", "cls"):
        if name not in batch:
            raise Failure("%s: batch %d of epoch %d has no field %r (fields: "
                          "%s)" % (what, batch.batch, batch.epoch, name,
                                   ", ".join(sorted(batch.fields)) or "none"))
    images, labels = batch["img"], batch["cls"]
    bad = ((labels < 0) | (labels >= CLASSES)).nonzero()
    if len(bad):
        i = int(bad[0])
        raise Failure("%s: sample '%s' has cls %d, not a label 0-%d"
                      % (what, batch.keys[i], int(labels[i]), CLASSES - 1))
    if device != "cpu":
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
    return images.float().div_(255), labels


def stream(args, dataset, what, **options):
    """The batches of dataset as chute.Stream hands them out; chute's
    failures become a Failure naming what was streamed."""
    try:
        return chute.Stream(dataset, transforms=TRANSFORMS, chute=args.chute,
                            shm=args.shm, as_torch=True,
                            pin_memory=args.device != "cpu", **options)
    except chute.Error as e:
        raise Failure("%s: %s" % (what, e))


def batches(s, what):
    try:
        yield from s
    except chute.MissingDependency as e:
        raise Failure("%s: %s" % (what, e), 2)
    except chute.StreamError as e:
        raise Failure("%s: %s" % (what, e), 2 if e.status == 2 else 1)


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
        self.stream_state = None  # the train stream's state_dict() after it
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
            "stream": self.stream_state,
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
        self.stream_state = state["stream"]
        self.cursor = self.stream_state["cursor"]
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

    def step(self, fr, state):
        images, labels = tensors(fr, "train", self.device)
        self.model.train()
        self.opt.zero_grad()
        loss = self.loss_fn(self.model(images), labels)
        loss.backward()
        self.opt.step()
        self.steps += 1
        self.cursor = fr.cursor
        self.stream_state = state
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
        correct = total = 0
        self.model.eval()
        evaluation = stream(args, args.test, "eval", mode="eval",
                            batch_size=args.eval_batch_size)
        with torch.no_grad():
            for fr in batches(evaluation, "eval"):
                if fr.nsamples == 0:
                    continue
                images, labels = tensors(fr, "eval", self.device)
                pred = self.model(images).argmax(dim=1)
                correct += int((pred == labels).sum())
                total += fr.nsamples
        if total == 0:
            raise Failure("eval: no samples in '%s'" % args.test)
        print("epoch %d: eval accuracy %.2f %%"
              % (epoch, 100.0 * correct / total), flush=True)

    def train(self):
        args = self.args
        train = stream(args, args.train, "train", batch_size=args.batch_size,
                       seed=args.seed, epochs=args.epochs)
        if self.stream_state is not None:
            try:
                train.load_state_dict(self.stream_state)
            except chute.StateError as e:
                raise Failure("checkpoint '%s': %s" % (args.resume_from, e), 2)
        # a checkpoint of the last batch: the run is done, nothing to train
        done = train.epoch >= args.epochs
        for fr in () if done else batches(train, "train"):
            if fr.nsamples:
                self.step(fr, train.state_dict())
            # after the evaluation, so that a checkpoint of an epoch's
            # last batch never needs one on resume
            if fr.last:
                self.end_epoch(fr.epoch)
            if fr.nsamples and args.checkpoint_every and \
                    self.steps % args.checkpoint_every == 0:
                self.checkpoint()
            if args.sleep:
                time.sleep(args.sleep)
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
    ap.add_argument("--shm", action="store_true",
                    help="read batches from shared-memory rings (chute "
                         "stream --shm) instead of pipes; the same batches, "
                         "the same weights")
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
