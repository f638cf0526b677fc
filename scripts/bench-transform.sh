#!/bin/bash
# bench-transform.sh CHUTE_BINARY - `chute stream --transform` on JPEGs
# against what a PyTorch trainer would otherwise run, and against decoding
# every image whole.  Warm page cache, median of 3 runs each, the commands
# compared taking turns within each round so that load from elsewhere on
# the machine falls on all of them alike; every ratio comes from figures
# measured in this run.  A benchmark reports, it does not judge: exit 0
# unless a command fails.
#
#  1. training: chute stream -w 2 -b 64, 'jpg: decode | random-resized-crop
#     224 | flip | layout chw' and 'cls: int', read by a Python consumer
#     (scripts/chute_batch.py frames(), touching nothing; and again through
#     a --shm ring read by shm_frames()), against
#       - a PyTorch DataLoader over the same files: ImageFolder,
#         RandomResizedCrop(224), RandomHorizontalFlip(), PILToTensor(),
#         num_workers 2, batch 64, shuffled (target: chute >= 3x);
#       - tests/bench/full_decode.c: every JPEG decoded whole to RGB by
#         TurboJPEG on 2 threads, from memory, nothing else (target: chute
#         >= 1x: cropping before decoding must pay for the rest).
#  2. evaluation: 'jpg: decode | resize 256 | center-crop 224 | layout chw'
#     in --mode eval, against the full decode (for information).
#  3. JPEG decoding on one thread through ch_image_decode, chute's entropy
#     decoder (lib/image/jpeg_huff.c) against libjpeg-turbo's, on 1,000 of the
#     JPEGs (tests/bench/entropy_decode.c, for information): whole images,
#     and only each image's last row (the rows above entropy-decoded).
#  Then chute's --stats of the last run of each: where the time went
#  (transform time: decode, resize/crop, other).
#
# Data (built once, cached in ${BENCH_DIR:-/tmp/chute-bench}/transform):
# ${BENCH_IMAGES:-5000} JPEGs from scripts/make-images (about 500x375,
# quality 90, ~3.5 bits/pixel like real photos; 10 classes, seed 1), about
# 0.4 GB with the dataset packed from them by --label-from dir.
set -euo pipefail

usage() { echo "usage: bench-transform.sh CHUTE_BINARY" >&2; exit 2; }
if [ $# -ne 1 ] || [ ! -x "$1" ]; then usage; fi
CHUTE=$(realpath "$1")
PYTHON=${PYTHON:-/usr/bin/python3}
HERE=$(realpath "$(dirname "$0")")
ROOT=$(dirname "$HERE")
BENCH_DIR=${BENCH_DIR:-/tmp/chute-bench}
WORK=$BENCH_DIR/transform
RUNS_DIR=$WORK/runs # what the timed runs printed, for a look afterwards
RUNS=3
N=${BENCH_IMAGES:-5000}
BATCH=64
WORKERS=2
TRAIN='jpg: decode | random-resized-crop 224 | flip | layout chw'
EVAL='jpg: decode | resize 256 | center-crop 224 | layout chw'
LABELS='cls: int'

die() { echo "bench-transform: $*" >&2; exit 2; }
"$PYTHON" -c 'import numpy, PIL, torch, torchvision' 2>/dev/null ||
	die "$PYTHON cannot import numpy, PIL, torch and torchvision" \
		"(python3-numpy python3-pil python3-torch python3-torchvision)"
command -v cc >/dev/null || die "no C compiler 'cc' (build-essential)"
"$CHUTE" stream --help | grep -q -- --transform ||
	die "$CHUTE stream has no --transform"
mkdir -p "$WORK" "$RUNS_DIR"

# calc, median, sum_sizes, cached, rounds, rate_of, expect_samples, int,
# ratio
# shellcheck source=scripts/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
VERSION=$(pack_version "$CHUTE")

# --- data, built once -----------------------------------------------------

IMG=$WORK/images
DS=$WORK/ds
GEN_ID=$(sha256sum "$HERE/make-images" | cut -c1-16)
IMG_PARAMS="make-images $N --seed 1 --classes 10 --quality 90 ($GEN_ID)"
gen_images() {
	echo "bench-transform: generating $N JPEGs in $IMG (once)"
	rm -rf "$IMG"
	"$PYTHON" "$HERE/make-images" "$IMG" "$N" --seed 1 --classes 10 \
		--quality 90 | tee "$WORK/images.summary"
}
cached "$IMG.ok" "$IMG_PARAMS" gen_images
pack() {
	echo "bench-transform: packing $IMG (once)"
	rm -rf "$DS"
	"$CHUTE" pack -q --label-from dir "$IMG" -o "$DS" -n images
}
cached "$DS.ok" "$VERSION, $IMG_PARAMS" pack

# the plain decoder, built each run (a second)
FULL_DECODE=$WORK/full_decode
# shellcheck disable=SC2046 # pkg-config's flags, one a word
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra \
	$(pkg-config --cflags libturbojpeg 2>/dev/null) \
	-o "$FULL_DECODE" "$ROOT/tests/bench/full_decode.c" -lturbojpeg -lpthread ||
	die "cannot build tests/bench/full_decode.c (libturbojpeg0-dev)"
# chute's entropy decoder against libjpeg-turbo's, through libchute.a
# (the build folder of CHUTE_BINARY has it; without it, no section 3)
ENTROPY_DECODE=$WORK/entropy_decode
LIBCHUTE=$(dirname "$CHUTE")/libchute.a
if [ -f "$LIBCHUTE" ]; then
	# shellcheck disable=SC2046 # pkg-config's flags, one a word
	cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -I"$ROOT/include" -I"$ROOT/lib" \
		$(pkg-config --cflags libjpeg libpng 2>/dev/null) \
		-o "$ENTROPY_DECODE" "$ROOT/tests/bench/entropy_decode.c" \
		"$LIBCHUTE" $(pkg-config --libs libzstd libxxhash jansson \
		libjpeg libpng) -lpthread -lm -ldl ||
		die "cannot build tests/bench/entropy_decode.c"
else
	ENTROPY_DECODE=
fi
find "$IMG" -name '*.jpg' | sort >"$WORK/images.list"
[ "$(wc -l <"$WORK/images.list")" -eq "$N" ] ||
	die "$IMG holds $(wc -l <"$WORK/images.list") JPEGs, expected $N"
jpeg_bytes=$(xargs cat <"$WORK/images.list" | wc -c)
shard_bytes=$(sum_sizes "$DS"/shards/*.chs)

# --- helpers --------------------------------------------------------------

FMT='%-34s %10s %26s %7s %8s  %s\n'
# row WHAT CHUTE REFERENCE RATIO OP TARGET: one line of the table; OP and
# TARGET empty for a line that only informs.
row() {
	local verdict=info
	if [ -n "$5" ]; then
		verdict=$(calc "($4 $5 $6) ? \"PASS\" : \"FAIL\"")
	fi
	# shellcheck disable=SC2059 # FMT is the table's one format
	printf "$FMT" "$1" "$2" "$3" "$4" "${5:+$5 $6}" "$verdict"
}

# --- the commands compared ------------------------------------------------

# chute_stream MODE SPEC: one epoch of the dataset with SPEC on jpg; its
# --stats (a line every 5 s, the summary at exit) replace
# $RUNS_DIR/MODE.stats.
chute_stream() {
	local shuffle=()
	if [ "$1" = eval ]; then shuffle=(--shuffle none); fi
	"$CHUTE" stream "$DS" --mode "$1" "${shuffle[@]}" -w "$WORKERS" \
		-b "$BATCH" -e 1 --stats --transform "$2" --transform "$LABELS" \
		"${@:3}" 2>"$RUNS_DIR/$1.stats"
}
# The consumer: frames read and parsed, nothing touched, from a pipe or
# (with a ring NAME) from chute stream --shm NAME; prints SAMPLES SECONDS,
# timed like the DataLoader from after the imports to the last batch
# (chute's start-up and first batch are in, the interpreter's are not).
reader() {
	"$PYTHON" -c 'import sys, time
sys.path.insert(0, sys.argv[1])
import chute_batch
t0, n = time.perf_counter(), 0
src = chute_batch.shm_frames(sys.argv[2]) if len(sys.argv) > 2 \
    else chute_batch.frames(sys.stdin.buffer)
for fr in src:
    n += fr.nsamples
print(n, "%.6f" % (time.perf_counter() - t0))' "$HERE" "$@"
}
# The DataLoader, in one process; prints SAMPLES SECONDS of one epoch
# (from the first iter() to the last batch: the interpreter's and torch's
# start-up are not counted).
train_dl() {
	"$PYTHON" - "$IMG" "$BATCH" "$WORKERS" <<'EOF'
import sys, time
import torch
import torchvision.transforms as T
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder
root, batch, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                T.PILToTensor()])
torch.manual_seed(1)
loader = DataLoader(ImageFolder(root, transform=tf), batch_size=batch,
                    shuffle=True, num_workers=workers)
n, t0 = 0, time.perf_counter()
for x, y in loader:
    n += len(x)
print(n, "%.6f" % (time.perf_counter() - t0))
EOF
}
train_chute() { chute_stream train "$TRAIN" | reader; }
# The same through a shared-memory ring: no pipe copies on either side.
train_shm() {
	local ring="bench-transform-$$" pid
	chute_stream train "$TRAIN" --shm "$ring" &
	pid=$!
	reader "$ring"
	wait "$pid"
}
decode_all() { "$FULL_DECODE" -t "$WORKERS" "$WORK/images.list"; }
eval_chute() { chute_stream eval "$EVAL" | reader; }

# last_stats FILE: the summary --stats printed at exit (from the last
# "stream: N batches" line on), indented.
last_stats() {
	awk '/^stream: [0-9]+ batches/ { n = 0 } { b[n++] = $0 }
		END { for (i = 0; i < n; i++) print "    " b[i] }' "$1"
}

# --- the runs -------------------------------------------------------------

load_before=$(cut -d' ' -f1 /proc/loadavg)
cat "$DS"/shards/*.chs >/dev/null
xargs cat <"$WORK/images.list" >/dev/null

echo "bench-transform: $N JPEGs; chute, DataLoader, full decode; $RUNS rounds"
rounds train_chute train_shm train_dl decode_all eval_chute
for f in train_chute train_shm train_dl decode_all eval_chute; do
	expect_samples "$f" "$N"
done
r_train=$(rate_of train_chute 1 2)
r_shm=$(rate_of train_shm 1 2)
r_eval=$(rate_of eval_chute 1 2)
r_dl=$(rate_of train_dl 1 2)
r_decode=$(rate_of decode_all 1 2)
# shellcheck disable=SC2046 # one rate a word
mp_decode=$(median $(awk '{ printf "%f\n", $3 / $2 }' "$RUNS_DIR/decode_all.out"))
# 3. the entropy decoders, on 1,000 of the JPEGs, one thread
if [ -n "$ENTROPY_DECODE" ]; then
	echo "bench-transform: chute's and libjpeg-turbo's entropy decoders"
	head -n 1000 "$WORK/images.list" >"$WORK/images-1000.list"
	"$ENTROPY_DECODE" -r "$RUNS" "$WORK/images-1000.list" \
		>"$RUNS_DIR/entropy.out" || die "entropy_decode failed"
fi
load_after=$(cut -d' ' -f1 /proc/loadavg)

# --- report ---------------------------------------------------------------

echo
echo "$VERSION, $(nproc) cores; median of $RUNS, warm cache; load average" \
	"$load_before before, $load_after after"
echo "data: $(sed 's/^make-images: //' "$WORK/images.summary" 2>/dev/null ||
	echo "$N JPEGs")"
echo "      $(calc "sprintf(\"%.0f\", $jpeg_bytes / 1e6)") MB of JPEGs," \
	"$(calc "sprintf(\"%.0f\", $shard_bytes / 1e6)") MB of shards"
echo
# shellcheck disable=SC2059
printf "$FMT" "images/s" chute reference ratio target result
echo "1. training, $WORKERS workers, batch $BATCH: '$TRAIN'"
row "stream | chute_batch.py reader" "$(int "$r_train")" "DataLoader w$WORKERS $(int "$r_dl")" \
	"$(ratio "$r_train" "$r_dl")" ">=" 3.00
row "stream | chute_batch.py reader" "$(int "$r_train")" "full decode $WORKERS thr $(int "$r_decode")" \
	"$(ratio "$r_train" "$r_decode")" ">=" 1.00
row "stream --shm | shm_frames reader" "$(int "$r_shm")" "DataLoader w$WORKERS $(int "$r_dl")" \
	"$(ratio "$r_shm" "$r_dl")" ">=" 3.00
row "stream --shm | shm_frames reader" "$(int "$r_shm")" "full decode $WORKERS thr $(int "$r_decode")" \
	"$(ratio "$r_shm" "$r_decode")" ">=" 1.00
row "  full decode, MP/s" "" "$(int "$mp_decode")" "" "" ""
echo "2. evaluation, --mode eval: '$EVAL'"
row "stream | chute_batch.py reader" "$(int "$r_eval")" "full decode $WORKERS thr $(int "$r_decode")" \
	"$(ratio "$r_eval" "$r_decode")" "" ""
if [ -n "$ENTROPY_DECODE" ]; then
	echo "3. JPEG decoding on 1 thread, chute's entropy decoder against" \
		"libjpeg-turbo's (the same pixels)"
	while read -r way n t_chute t_lib; do
		row "  $way" "$(int "$(calc "$n * $RUNS / $t_chute")")" \
			"libjpeg-turbo $(int "$(calc "$n * $RUNS / $t_lib")")" \
			"$(ratio "$t_lib" "$t_chute")" "" ""
	done <"$RUNS_DIR/entropy.out"
	echo "  (whole: every image to RGB; entropy: only each image's last" \
		"row, every row above"
	echo "  it entropy-decoded and skipped)"
fi
echo
echo "chute's figures are timed by its Python reader, from after its imports"
echo "to the last batch (chute's start-up and first batch included); the"
echo "DataLoader's inside its process, from iter() to the last batch; the full"
echo "decode's from the first image to the last, the files already in memory."
echo "All share the machine's $(nproc) cores with their consumer."
echo
echo "Where the time went, chute's --stats at the end of the last run of each:"
echo "  1. training:"
last_stats "$RUNS_DIR/train.stats"
echo "  2. evaluation:"
last_stats "$RUNS_DIR/eval.stats"
