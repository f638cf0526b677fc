#!/bin/bash
# bench-dataset.sh CHUTE_BINARY - chute.Dataset's random access against a
# per-sample torch Dataset over arrays already in memory (the baseline).
# Both go through DataLoader(ds, batch_size=256, num_workers=0,
# sampler=RandomSampler(ds)) over Fashion-MNIST (60,000 samples): the
# baseline returns (images[i], labels[i]) and uses torch's default collate;
# chute.Dataset runs with its default options (cache_bytes 256 MiB) and
# chute.collate({"img": "bytes u8 28x28", "cls": "int"}, as_torch=True).
# Both loaders hand out tensors; the consumer does nothing beyond counting
# the labels.  Each side runs in its own process (scripts/bench_dataset.py),
# the two taking turns within each of 3 rounds so that load from elsewhere
# falls on both alike; figures are medians.  Steady: the epochs after the
# first (the goal: >= 0.5x the baseline); one epoch: the first, from making
# the dataset, in which chute.Dataset decodes and checks its blocks (no
# goal: the baseline's arrays were loaded before its clock started).
# A benchmark reports, it does not judge: exit 0 unless a side fails.
#
# Data is made once under ${BENCH_DIR:-/tmp/chute-bench}/dataset.
set -euo pipefail

usage() { echo "usage: bench-dataset.sh CHUTE_BINARY [--epochs E]" >&2; exit 2; }
[ $# -ge 1 ] && [ -x "$1" ] || usage
CHUTE=$(realpath "$1")
shift
EPOCHS=3
while [ $# -gt 0 ]; do
	case $1 in
	--epochs) EPOCHS=$2; shift 2 ;;
	*) usage ;;
	esac
done
PYTHON=${PYTHON:-/usr/bin/python3}
HERE=$(realpath "$(dirname "$0")")
SIDE=$HERE/bench_dataset.py
WORK=${BENCH_DIR:-/tmp/chute-bench}/dataset
RUNS=3
GOAL=0.5

die() { echo "bench-dataset: $*" >&2; exit 2; }
"$PYTHON" -c 'import numpy, torch, zstandard, xxhash' 2>/dev/null ||
	die "$PYTHON cannot import numpy, torch, zstandard and xxhash"
mkdir -p "$WORK"
# calc, median, int, cached, pack_version
# shellcheck source=scripts/bench-lib.sh
. "$HERE/bench-lib.sh"

# --- data -----------------------------------------------------------------

FM=$WORK/fm
make_fm() {
	echo "bench-dataset: packing Fashion-MNIST into $FM" >&2
	rm -rf "$FM" && mkdir -p "$FM"
	"$PYTHON" "$HERE/fashion_mnist.py" "$FM" >/dev/null
	"$CHUTE" pack -q "$FM/train.tar" -o "$FM/train" >/dev/null
	"$PYTHON" -c '
import os, sys
sys.path.insert(0, sys.argv[2])
import numpy as np
from bench_stream_reader import load_fmnist
images, labels = load_fmnist(sys.argv[3])
np.save(os.path.join(sys.argv[1], "train-images.npy"), images.reshape(-1, 28, 28))
np.save(os.path.join(sys.argv[1], "train-labels.npy"), labels.astype(np.int64))
' "$FM" "$HERE" "${FMNIST_DIR:-/usr/share/datasets/fashion-mnist}"
	rm -f "$FM/train.tar" "$FM/test.tar"
}
cached "$WORK/fm.stamp" "$(pack_version "$CHUTE")" make_fm

# --- runs -----------------------------------------------------------------

declare -A OUT
# side NAME: runs one side, appends its line to OUT[NAME].
side() {
	local line
	line=$("$PYTHON" "$SIDE" "$1" "$FM" --epochs "$EPOCHS") ||
		die "side $1 failed"
	OUT[$1]+="$line"$'\n'
}

# col NAME K: the median of field K of NAME's lines.
# shellcheck disable=SC2046 # one number a word
col() { median $(awk -v k="$2" 'NF { print $k }' <<<"${OUT[$1]}"); }
steady() { calc "$(col "$1" 3) / $(col "$1" 4)"; }
first() { calc "60000 / $(col "$1" 2)"; }

echo "bench-dataset: Fashion-MNIST 60,000 x $EPOCHS epochs, RandomSampler, batch 256, 0 workers; $RUNS rounds" >&2
for ((r = 1; r <= RUNS; r++)); do
	side arrays
	side dataset
	echo "bench-dataset: round $r of $RUNS done" >&2
done

# --- report ---------------------------------------------------------------

as=$(steady arrays) ds=$(steady dataset) af=$(first arrays) df=$(first dataset)
echo
echo "Fashion-MNIST through DataLoader(batch_size=256, num_workers=0, sampler=RandomSampler),"
echo "samples/s (median of $RUNS); consumer: nothing beyond the collate (both give tensors)"
row() { printf '%-52s %12s %12s\n' "$@"; }
row "" "steady" "one epoch"
row "per-sample Dataset over numpy arrays in memory" "$(int "$as")" "$(int "$af")"
row "chute.Dataset (defaults) + chute.collate" "$(int "$ds")" "$(int "$df")"
echo
target() { # LABEL RATIO GOAL
	printf '%-52s %6.2fx  (goal >= %sx) %s\n' "$1" "$2" "$3" \
		"$(awk -v r="$2" -v g="$3" 'BEGIN { print (r >= g ? "PASS" : "MISS") }')"
}
target "chute.Dataset steady / arrays steady" "$(calc "$ds / $as")" "$GOAL"
# no goal: the arrays were in memory before the clock started, while
# chute.Dataset decodes and checks the dataset within its first epoch
printf '%-52s %6.2fx  (first pass: decodes and checks 47 MB)\n' \
	"chute.Dataset one epoch / arrays one epoch" "$(calc "$df / $af")"
