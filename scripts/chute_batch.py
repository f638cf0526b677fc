#!/usr/bin/python3
"""chute_batch.py - read the batch frames of `chute stream` (man chute-batch.5).

Python 3 standard library and numpy.  Each frame is read into one buffer (a
numpy uint8 array, filled by readinto: no copy after that) and its fields
are numpy views or memoryviews of it, so a batch costs one read whatever
its size; a buffer nothing refers to any more is filled again by a later
frame.

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
import os
import sys

try:
    import debian_python  # next to this file when run or imported from scripts/
    debian_python.require("numpy")
    debian_python.use_repo_package()
except ModuleNotFoundError:
    pass

# What this module was before it became a front for the chute package.
from chute.frames import (ALIGN, DTYPES, FLAG_LAST, FLAG_PARTIAL,  # noqa: E402,F401
                          HEADER_SIZE, MAGIC, BytesColumn, Frame, FrameError,
                          frames, shape_of)
from chute.shm import ShmError, ShmRing, shm_frames  # noqa: E402,F401


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
        out.flush()  # the frames before the bad one come first
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
