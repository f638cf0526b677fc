"""slow_reader.py OUT CHUNK PAUSE: copies standard input to OUT as a
reader that lags: it waits half a second first (the pipe fills), then
reads CHUNK bytes at a time with PAUSE seconds between reads."""
import sys
import time

out_path, chunk, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
time.sleep(0.5)
with open(out_path, "wb") as out:
    while True:
        b = sys.stdin.buffer.raw.read(chunk)
        if not b:
            break
        out.write(b)
        time.sleep(pause)
