#!/bin/bash
# bench-python.sh CHUTE_BINARY - the Python package (chute.Stream) against
# what a PyTorch trainer would otherwise use.  Each side runs in its own
# process (scripts/bench_python.py), the sides taking turns within each of
# 3 rounds, so that load from elsewhere falls on all alike; the figures are
# medians, and every ratio compares figures of this run.  Every consumer
# does the same and the least a trainer does: torch.from_numpy of the
# batch's images and labels (the DataLoader hands out tensors already).
# A benchmark reports, it does not judge: exit 0 unless a side fails.
#
#  1. Fashion-MNIST, 60,000 samples, batch 256, shuffled, 10 epochs:
#     chute.Stream (pipe; and shm=True) with `img: bytes u8 28x28` and
#     `cls: int`, over the dataset packed at zstd level 3 (the default) and
#     at level 0 (raw blocks, read in place; also with workers=0, the
#     writer reading alone), against a numpy gather in process (the
#     ceiling) and a
#     DataLoader over a per-sample Dataset of the same arrays in memory
#     (0 and 2 workers; the better is the baseline), and against the
#     script it replaces (chute stream | chute_batch.py, raw fields).
#     Steady state: the epochs after the first.  One epoch: the first,
#     from making the loader (after the imports) to its last batch; for
#     the sides over arrays in memory also with the arrays' loading
#     (np.load of the .npy files, from the page cache), which their
#     trainer pays at start-up too, while chute reads the dataset within
#     its first epoch.
#  2. Images: N JPEGs from scripts/make-images (default 2,000), training
#     transform decode, RandomResizedCrop(224), flip, CHW uint8, batch 64,
#     one epoch with start-up, 2 workers each: chute.Stream against a
#     DataLoader with PIL and torchvision.
#
# Data is made once under ${BENCH_DIR:-/tmp/chute-bench}/python.
set -euo pipefail

usage() { echo "usage: bench-python.sh CHUTE_BINARY [--images N]" >&2; exit 2; }
[ $# -ge 1 ] && [ -x "$1" ] || usage
CHUTE=$(realpath "$1")
shift
NIMG=2000
while [ $# -gt 0 ]; do
	case $1 in
	--images) NIMG=$2; shift 2 ;;
	*) usage ;;
	esac
done
PYTHON=${PYTHON:-/usr/bin/python3}
HERE=$(realpath "$(dirname "$0")")
SIDE=$HERE/bench_python.py
WORK=${BENCH_DIR:-/tmp/chute-bench}/python
RUNS=3
EPOCHS=10

die() { echo "bench-python: $*" >&2; exit 2; }
"$PYTHON" -c 'import numpy, torch, torchvision' 2>/dev/null ||
	die "$PYTHON cannot import numpy, torch and torchvision"
mkdir -p "$WORK"
# calc, median, int
# shellcheck source=scripts/bench-lib.sh
. "$HERE/bench-lib.sh"

# --- data -----------------------------------------------------------------

FM=$WORK/fm
if [ ! -d "$FM/train" ] || [ ! -s "$FM/train-labels.npy" ]; then
	echo "bench-python: packing Fashion-MNIST into $FM" >&2
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
fi
if [ ! -d "$FM/train-raw" ]; then
	"$PYTHON" "$HERE/fashion_mnist.py" "$FM" >/dev/null
	"$CHUTE" pack -q -l 0 "$FM/train.tar" -o "$FM/train-raw" >/dev/null
	rm -f "$FM/train.tar" "$FM/test.tar"
fi
IMG=$WORK/img-$NIMG
if [ ! -d "$IMG.ds" ]; then
	echo "bench-python: $NIMG JPEGs into $IMG" >&2
	rm -rf "$IMG" "$IMG.ds"
	"$PYTHON" "$HERE/make-images" "$IMG" "$NIMG" --seed 1 >/dev/null
	"$CHUTE" pack -q --label-from dir "$IMG" -o "$IMG.ds" >/dev/null
fi

# --- runs -----------------------------------------------------------------

declare -A OUT
# side NAME DATA ARGS...: runs one side, appends its line to OUT[NAME].
side() {
	local name=$1 data=$2 line
	shift 2
	line=$("$PYTHON" "$SIDE" "${name%%@*}" "$data" --chute "$CHUTE" "$@") ||
		die "side $name failed"
	OUT[$name]+="$line"$'\n'
}

# col NAME K: the median of field K of NAME's lines.
# shellcheck disable=SC2046 # one number a word
col() { median $(awk -v k="$2" 'NF { print $k }' <<<"${OUT[$1]}"); }
steady() { calc "$(col "$1" 3) / $(col "$1" 4)"; }
first() { calc "60000 / $(col "$1" 2)"; }
loaded() { calc "60000 / ($(col "$1" 2) + $(col "$1" 5))"; }

FM_SIDES=(gather dataloader@w0 dataloader@w2 stream stream-shm stream-raw
	stream-shm-raw stream-raw@w0 stream-shm-raw@w0 batch-py)
echo "bench-python: Fashion-MNIST 60,000 x $EPOCHS epochs, batch 256; $NIMG JPEGs; $RUNS rounds" >&2
for ((r = 1; r <= RUNS; r++)); do
	for s in "${FM_SIDES[@]}"; do
		case $s in
		*@w*) side "$s" "$FM" --epochs "$EPOCHS" --workers "${s#*@w}" ;;
		*) side "$s" "$FM" --epochs "$EPOCHS" ;;
		esac
	done
	side img-stream "$IMG" --epochs 1 --workers 2
	side img-dataloader "$IMG" --epochs 1 --workers 2
	echo "bench-python: round $r of $RUNS done" >&2
done

# --- report ---------------------------------------------------------------

dl0s=$(steady dataloader@w0) dl2s=$(steady dataloader@w2)
dl0f=$(first dataloader@w0) dl2f=$(first dataloader@w2)
if awk -v a="$dl0s" -v b="$dl2s" 'BEGIN { exit !(a >= b) }'; then dls=$dl0s dlsn=w0; else dls=$dl2s dlsn=w2; fi
if awk -v a="$dl0f" -v b="$dl2f" 'BEGIN { exit !(a >= b) }'; then dlf=$dl0f dlfn=w0; else dlf=$dl2f dlfn=w2; fi
gs=$(steady gather) ss=$(steady stream) shs=$(steady stream-shm) bps=$(steady batch-py)
sf=$(first stream) shf=$(first stream-shm) bpf=$(first batch-py) gf=$(first gather)
srs=$(steady stream-raw) shrs=$(steady stream-shm-raw)
srf=$(first stream-raw) shrf=$(first stream-shm-raw)
s0s=$(steady stream-raw@w0) sh0s=$(steady stream-shm-raw@w0)
s0f=$(first stream-raw@w0) sh0f=$(first stream-shm-raw@w0)
dl0l=$(loaded dataloader@w0) dl2l=$(loaded dataloader@w2) gl=$(loaded gather)
if awk -v a="$dl0l" -v b="$dl2l" 'BEGIN { exit !(a >= b) }'; then dll=$dl0l dlln=w0; else dll=$dl2l dlln=w2; fi

echo
echo "1. Fashion-MNIST, samples/s (median of $RUNS); consumer: torch.from_numpy of images and labels"
row() { printf '%-34s %12s %12s %18s\n' "$@"; }
row "" "steady" "one epoch" "one epoch + load"
row "numpy gather (ceiling)" "$(int "$gs")" "$(int "$gf")" "$(int "$gl")"
row "DataLoader, 0 workers" "$(int "$dl0s")" "$(int "$dl0f")" "$(int "$dl0l")"
row "DataLoader, 2 workers" "$(int "$dl2s")" "$(int "$dl2f")" "$(int "$dl2l")"
row "chute stream | chute_batch.py" "$(int "$bps")" "$(int "$bpf")" "(reads the data)"
row "chute.Stream (pipe)" "$(int "$ss")" "$(int "$sf")" "(reads the data)"
row "chute.Stream (shm=True)" "$(int "$shs")" "$(int "$shf")" "(reads the data)"
row "chute.Stream (pipe), level 0" "$(int "$srs")" "$(int "$srf")" "(reads the data)"
row "chute.Stream (shm=True), level 0" "$(int "$shrs")" "$(int "$shrf")" "(reads the data)"
row "  the same two with workers=0:" "" "" ""
row "chute.Stream (pipe), level 0, w0" "$(int "$s0s")" "$(int "$s0f")" "(reads the data)"
row "chute.Stream (shm), level 0, w0" "$(int "$sh0s")" "$(int "$sh0f")" "(reads the data)"
echo
target() { # LABEL RATIO GOAL
	printf '%-58s %6.2fx  (target >= %sx) %s\n' "$1" "$2" "$3" \
		"$(awk -v r="$2" -v g="$3" 'BEGIN { print (r >= g ? "PASS" : "MISS") }')"
}
target "chute.Stream steady / numpy gather" "$(calc "$ss / $gs")" 0.5
target "chute.Stream shm steady / numpy gather" "$(calc "$shs / $gs")" 0.5
target "chute.Stream one epoch / DataLoader $dlfn one epoch" "$(calc "$sf / $dlf")" 3
target "chute.Stream shm one epoch / DataLoader $dlfn one epoch" "$(calc "$shf / $dlf")" 3
target "level 0: chute.Stream steady / numpy gather" "$(calc "$srs / $gs")" 0.5
target "level 0: chute.Stream shm steady / numpy gather" "$(calc "$shrs / $gs")" 0.5
target "level 0: chute.Stream one epoch / DataLoader $dlfn one epoch" "$(calc "$srf / $dlf")" 3
target "level 0: chute.Stream shm one epoch / DataLoader $dlfn one epoch" "$(calc "$shrf / $dlf")" 3
target "level 0, w0: chute.Stream steady / numpy gather" "$(calc "$s0s / $gs")" 0.5
target "level 0, w0: chute.Stream shm steady / numpy gather" "$(calc "$sh0s / $gs")" 0.5
target "level 0, w0: chute.Stream one epoch / DataLoader $dlfn" "$(calc "$s0f / $dlf")" 3
target "level 0, w0: chute.Stream shm one epoch / DataLoader $dlfn" "$(calc "$sh0f / $dlf")" 3
printf '%-58s %6.2fx\n' "chute.Stream one epoch / DataLoader $dlln one epoch + load" "$(calc "$sf / $dll")"
printf '%-58s %6.2fx\n' "chute.Stream shm one epoch / DataLoader $dlln one epoch + load" "$(calc "$shf / $dll")"
printf '%-58s %6.2fx\n' "chute.Stream steady / DataLoader $dlsn steady" "$(calc "$ss / $dls")"
printf '%-58s %6.2fx\n' "chute.Stream steady / chute_batch.py steady" "$(calc "$ss / $bps")"

ist=$(calc "$NIMG / $(col img-stream 2)") idl=$(calc "$NIMG / $(col img-dataloader 2)")
echo
echo "2. $NIMG JPEGs, decode + RandomResizedCrop(224) + flip, CHW u8, batch 64, one epoch with start-up, 2 workers"
printf '%-34s %12s images/s\n' "DataLoader (PIL, torchvision)" "$(int "$idl")"
printf '%-34s %12s images/s\n' "chute.Stream" "$(int "$ist")"
target "chute.Stream / DataLoader" "$(calc "$ist / $idl")" 2
