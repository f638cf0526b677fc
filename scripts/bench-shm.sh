#!/bin/bash
# bench-shm.sh CHUTE_BINARY - `chute stream --shm` against a pipe, and the
# CPU that waiting costs on each side of the ring.
#
#  1. GB/s of batches of 256 samples of 150,528 bytes (224x224x3 uint8:
#     38.5 MB a frame) delivered to a numpy consumer that touches every
#     byte (an XOR over the samples' bytes seen as uint64): through a pipe
#     (scripts/chute_batch.py frames(), one read into a fresh buffer per
#     frame) and through the ring (shm_frames(), views of the slots).  The
#     two take turns within each of 3 rounds; medians; the ratio is
#     against the pipe measured in the same run.  Target: >= 3x.
#  2. CPU of an idle producer (the ring is full, the consumer sleeps
#     holding a frame) and of an idle consumer (the ring is empty, chute is
#     stopped with SIGSTOP), from /proc/PID/stat (utime + stime, all
#     threads) over 5 s.  Target: < 2 % of a core each.
#
# Data (built once, cached in ${BENCH_DIR:-/tmp/chute-bench}/shm): 512
# samples of seeded random bytes, 77 MB; the stream goes over it for many
# epochs out of chute's block cache, so the disk is not what is measured.
# Exit 0 unless a command fails; PASS/FAIL lines say how the targets fared.
set -euo pipefail

usage() { echo "usage: bench-shm.sh CHUTE_BINARY" >&2; exit 2; }
if [ $# -ne 1 ] || [ ! -x "$1" ]; then usage; fi
CHUTE=$(realpath "$1")
PYTHON=${PYTHON:-/usr/bin/python3}
HERE=$(realpath "$(dirname "$0")")
BENCH_DIR=${BENCH_DIR:-/tmp/chute-bench}
WORK=$BENCH_DIR/shm
SAMPLES=512 BATCH=256 SIZE=150528
EPOCHS=${EPOCHS:-40} # 80 frames, 3.1 GB a run
RUNS=3
RING="bench-shm-$$"
STREAM=(stream -b "$BATCH" -e "$EPOCHS" --shuffle none --cache 512M)

die() { echo "bench-shm: $*" >&2; exit 2; }
"$PYTHON" -c 'import numpy' 2>/dev/null || die "$PYTHON cannot import numpy"
# shellcheck source=scripts/bench-lib.sh
. "$HERE/bench-lib.sh"
mkdir -p "$WORK"
trap 'rm -f /dev/shm/chute-$RING' EXIT

make_data() {
	rm -rf "$WORK/src" "$WORK/ds"
	"$PYTHON" - "$WORK/src" "$SAMPLES" "$SIZE" <<'EOF'
import os, sys, numpy as np
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d)
rng = np.random.default_rng(5)
for i in range(n):
    rng.integers(0, 256, size, np.uint8).tofile("%s/s%04d.raw" % (d, i))
EOF
	"$CHUTE" pack -q "$WORK/src" -o "$WORK/ds"
}
cached "$WORK/stamp" "$SAMPLES $SIZE $($CHUTE --version)" make_data

# The consumer: frames from a pipe (stdin) or a ring; prints GB/s from the
# first frame to the last, and the XOR so that the work cannot be skipped.
cat >"$WORK/consume.py" <<'EOF'
import sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
import chute_batch
src = chute_batch.shm_frames(sys.argv[2]) if len(sys.argv) > 2 \
    else chute_batch.frames(sys.stdin.buffer)
acc, total, t0 = np.uint64(0), 0, None
for fr in src:
    if t0 is None:
        t0 = time.monotonic()
    values, offsets = fr.columns["raw"]
    acc ^= np.bitwise_xor.reduce(values.view(np.uint64))
    total += fr.size
    fr.release()
t = time.monotonic() - t0
print("%.3f %d %x" % (total / t / 1e9, total, int(acc)))
EOF

pipe_run() {
	"$CHUTE" "${STREAM[@]}" "$WORK/ds" | "$PYTHON" "$WORK/consume.py" "$HERE"
}

shm_run() {
	"$CHUTE" "${STREAM[@]}" --shm "$RING" "$WORK/ds" &
	local pid=$!
	"$PYTHON" "$WORK/consume.py" "$HERE" "$RING"
	wait "$pid"
}

echo "bench-shm: $($CHUTE --version), $(nproc) CPUs; batches of $BATCH x $SIZE bytes ($(calc "$BATCH * $SIZE / 1e6") MB), $((SAMPLES / BATCH * EPOCHS)) frames a run"
pipe=() shm=()
for r in $(seq "$RUNS"); do
	read -r p pbytes pxor <<<"$(pipe_run)"
	read -r s sbytes sxor <<<"$(shm_run)"
	[ "$pbytes $pxor" = "$sbytes $sxor" ] ||
		die "the pipe and the ring delivered different bytes ($pbytes $pxor, $sbytes $sxor)"
	echo "  round $r: pipe $p GB/s, shm $s GB/s"
	pipe+=("$p") shm+=("$s")
done
P=$(median "${pipe[@]}") S=$(median "${shm[@]}")
RATIO=$(calc "$S / $P")
printf '%-34s %8s GB/s\n' "pipe (chute_batch.frames)" "$P" "--shm (chute_batch.shm_frames)" "$S"
verdict() { awk "BEGIN { exit !($1) }" && echo PASS || echo FAIL; }
echo "shm / pipe: $(calc "$RATIO" | cut -c1-5)x (target >= 3x): $(verdict "$RATIO >= 3")"

# --- CPU of the idle sides ------------------------------------------------

TICK=$(getconf CLK_TCK)
WINDOW=5
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# idle_pct PID: share of a core PID used over WINDOW seconds
idle_pct() {
	local a b
	a=$(cpu_ticks "$1")
	sleep "$WINDOW"
	b=$(cpu_ticks "$1")
	calc "100 * ($b - $a) / $TICK / $WINDOW"
}

# producer: the consumer holds its first frame and sleeps; the ring fills
"$CHUTE" stream -b "$BATCH" -e 0 --shuffle none --cache 512M --shm "$RING" "$WORK/ds" &
prod=$!
"$PYTHON" -c '
import sys, time
sys.path.insert(0, sys.argv[1])
import chute_batch
for fr in chute_batch.shm_frames(sys.argv[2]):
    time.sleep(3 + float(sys.argv[3]))
    break' "$HERE" "$RING" "$WINDOW" &
cons=$!
sleep 2
PROD=$(idle_pct "$prod")
wait "$cons"
wait "$prod"

# consumer: chute is stopped, the ring runs dry
"$CHUTE" stream -b "$BATCH" -e 0 --shuffle none --cache 512M --shm "$RING" "$WORK/ds" &
prod=$!
while [ ! -e "/dev/shm/chute-$RING" ]; do sleep 0.05; done
kill -STOP "$prod"
"$PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch
try:
    for fr in chute_batch.shm_frames(sys.argv[2]):
        pass
except chute_batch.ShmError:
    pass' "$HERE" "$RING" &
cons=$!
sleep 2
CONS=$(idle_pct "$cons")
kill -TERM "$prod"
kill -CONT "$prod"
wait "$prod" || true
wait "$cons" || true

echo "idle producer (ring full):  $PROD % of a core (target < 2 %): $(verdict "$PROD < 2")"
echo "idle consumer (ring empty): $CONS % of a core (target < 2 %): $(verdict "$CONS < 2")"
