#!/usr/bin/python3
"""train_ddp.py - data-parallel training on chute streams, one rank a process.

    torchrun --nproc_per_node 2 --redirects 2 --tee 2 scripts/train_ddp.py \\
        fm/train --chute build/chute --checkpoint ck.pt --checkpoint-every 10

(--redirects 2 --tee 2: Debian 12's torchrun, torch 1.13 on Python 3.11,
fails with its default 0 there, "'NoneType' object has no attribute
'get'"; elsewhere they can be left out.)

Each rank (torch.distributed with gloo: CPUs are enough) reads its own part
of every epoch through chute.Stream, which takes the rank and the world
size from torch.distributed: the ranks' samples are disjoint, together they
are the epoch, and every rank gets the same number of batches, so that
DistributedDataParallel's all-reduce never waits for a rank that has run
out.  The model is the MLP of train_fashion_mnist.py.

Checkpoints gather every rank's Stream.state_dict() and torch RNG state
(all_gather_object) and rank 0 writes them with the model and the optimizer,
atomically.  --resume-from FILE gives each rank back its own stream state:
a run killed anywhere and resumed ends with the weights of a run that was
never stopped.  Rank 0 prints "final weights sha256 HEX" at the end.

--log-keys DIR writes "EPOCH KEY" for every sample a rank trained on to
DIR/rank-R.keys (and the number of its batches to DIR/rank-R.batches),
for the test that checks the ranks are disjoint.

Exit status: 0 done, 1 chute stream failed, 2 usage error or a checkpoint
that cannot be read or written.
"""

import argparse
import datetime
import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import debian_python  # noqa: E402  (found next to this script)

debian_python.require("numpy", "torch")
debian_python.use_repo_package()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import chute  # noqa: E402

PROG = "train_ddp.py"
TRANSFORMS = {"img": "bytes u8 784", "cls": "int"}
CHECKPOINT_FORMAT = "train_ddp checkpoint 1"


def make_model():
    return nn.Sequential(
        nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(256, 128), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(128, 10))


def parse_args():
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    ap.add_argument("train", help="the training dataset (Fashion-MNIST, packed)")
    ap.add_argument("-b", "--batch-size", type=int, default=64,
                    help="batch size of each rank (default 64)")
    ap.add_argument("-e", "--epochs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--chute", default="chute", help="the chute binary")
    ap.add_argument("--checkpoint", metavar="FILE")
    ap.add_argument("--checkpoint-every", type=int, default=0, metavar="K",
                    help="a checkpoint every K batches (and at the end)")
    ap.add_argument("--resume-from", metavar="FILE")
    ap.add_argument("--log-keys", metavar="DIR")
    ap.add_argument("--sleep", type=float, default=0.0,
                    help="pause after each batch (for tests that interrupt a run)")
    return ap.parse_args()


class Run:
    def __init__(self, args):
        self.args = args
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        torch.manual_seed(args.seed)
        self.model = DistributedDataParallel(make_model())
        self.opt = torch.optim.Adam(self.model.parameters(), lr=args.lr)
        self.loss_fn = nn.CrossEntropyLoss()
        self.steps = 0
        # seeded per rank: each rank's dropout draws its own masks
        torch.manual_seed(args.seed * 1000 + 1 + self.rank)
        self.stream = chute.Stream(args.train, batch_size=args.batch_size,
                                   seed=args.seed, epochs=args.epochs,
                                   transforms=TRANSFORMS, chute=args.chute,
                                   as_torch=True, drop_last=False)
        self.keys = self.nbatches = None
        if args.log_keys:
            os.makedirs(args.log_keys, exist_ok=True)
            self.keys = open(os.path.join(args.log_keys, "rank-%d.keys" % self.rank), "a")
            self.nbatches = 0

    # -- checkpoints

    def save(self):
        """Every rank's stream state and RNG state, gathered; rank 0 writes."""
        mine = {"stream": self.stream.state_dict(), "rng": torch.get_rng_state()}
        every = [None] * self.world
        dist.all_gather_object(every, mine)
        if self.rank == 0:
            state = {"format": CHECKPOINT_FORMAT, "world_size": self.world,
                     "model": self.model.module.state_dict(),
                     "optimizer": self.opt.state_dict(), "steps": self.steps,
                     "ranks": every}
            tmp = self.args.checkpoint + ".tmp"
            with open(tmp, "wb") as f:
                torch.save(state, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.args.checkpoint)
            print("checkpoint after %d batches" % self.steps, flush=True)
        dist.barrier()

    def restore(self, path):
        state = torch.load(path)
        if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
            raise SystemExit("%s: '%s' is not a checkpoint of %s" % (PROG, path, PROG))
        if state["world_size"] != self.world:
            raise SystemExit("%s: '%s' was made by %d ranks, not %d"
                             % (PROG, path, state["world_size"], self.world))
        self.model.module.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        self.steps = state["steps"]
        mine = state["ranks"][self.rank]
        self.stream.load_state_dict(mine["stream"])
        torch.set_rng_state(mine["rng"])
        if self.rank == 0:
            print("resuming after %d batches" % self.steps, flush=True)

    # -- training

    def train(self):
        args = self.args
        self.model.train()
        # resumed after the last batch: the run is done
        done = self.stream.epoch >= self.stream.epochs
        for batch in () if done else self.stream:
            images = batch["img"].float().div_(255)
            self.opt.zero_grad()
            loss = self.loss_fn(self.model(images), batch["cls"])
            loss.backward()   # DDP: the gradients are all-reduced here
            self.opt.step()
            self.steps += 1
            if self.keys:
                self.keys.write("".join("%d %s\n" % (batch.epoch, k)
                                        for k in batch.keys))
                self.keys.flush()
                self.nbatches += 1
            if args.checkpoint and args.checkpoint_every and \
                    self.steps % args.checkpoint_every == 0:
                self.save()
            if args.sleep:
                time.sleep(args.sleep)
        if args.checkpoint:
            self.save()
        if self.keys:
            with open(os.path.join(args.log_keys, "rank-%d.batches" % self.rank), "w") as f:
                f.write("%d\n" % self.nbatches)

    def weights_sha256(self):
        h = hashlib.sha256()
        for p in self.model.module.parameters():
            h.update(p.detach().contiguous().numpy().tobytes())
        return h.hexdigest()


def main():
    args = parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    # a rank whose chute failed must not leave the others waiting for ever
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
    try:
        run = Run(args)
        if args.resume_from:
            run.restore(args.resume_from)
        run.train()
        if run.rank == 0:
            print("trained %d batches" % run.steps)
            print("final weights sha256 %s" % run.weights_sha256(), flush=True)
    except chute.StreamError as e:
        sys.stderr.write("%s: rank %d: %s\n" % (PROG, dist.get_rank(), e))
        return 1
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
