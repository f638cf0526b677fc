"""splice_reader.py OUT: a reader that splices: moves standard input (a
pipe) into a pipe of its own with splice(2), as pv(1) and tee(1)-like
tools do, and holds what it moved there a moment before it copies it to
OUT.  The pages chute stream lends a pipe travel along, so this reader
sees any lent page that chute writes again before it was copied."""
import errno
import fcntl
import os
import sys
import time

F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)

r, w = os.pipe()
fcntl.fcntl(w, F_SETPIPE_SZ, 1 << 20)
with open(sys.argv[1], "wb") as out:
    done = False
    while not done:
        held = 0
        while True:  # move what there is, until this pipe is full
            try:
                n = os.splice(0, w, 1 << 20, flags=os.SPLICE_F_NONBLOCK)
            except BlockingIOError:
                if held:
                    break
                time.sleep(0.001)
                continue
            if n == 0:
                done = True
                break
            held += n
        time.sleep(0.02)  # chute goes on meanwhile
        while held:
            b = os.read(r, held)
            out.write(b)
            held -= len(b)
