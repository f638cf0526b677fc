"""slow_reader.py OUT CHUNK PAUSE [mark]: copies standard input to OUT as
a reader that lags: it waits half a second first (the pipe fills), then
reads CHUNK bytes at a time with PAUSE seconds between reads.  With mark,
it first marks the pipe as read with read(2) (its owner-execute bit, man
chute-batch(5)), as chute.frames does."""
import os
import stat
import sys
import time

out_path, chunk, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
if sys.argv[4:] == ["mark"]:
    os.fchmod(0, stat.S_IMODE(os.fstat(0).st_mode) | stat.S_IXUSR)
time.sleep(0.5)
with open(out_path, "wb") as out:
    while True:
        b = sys.stdin.buffer.raw.read(chunk)
        if not b:
            break
        out.write(b)
        time.sleep(pause)
