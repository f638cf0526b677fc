#!/bin/bash
# bench-transform.sh CHUTE_BINARY - `chute stream --transform` on JPEGs
# against what a PyTorch trainer would otherwise run, and against decoding
# every image whole.  Warm page cache, median of ${BENCH_RUNS:-5} runs
# each (an epoch of the demo images is half a second: with 3, one row's
# median ranged 0.82 to 1.03 of the full decode from one invocation to
# the next on a shared machine; BENCH_RUNS sets it), the commands
# compared taking turns within each round so that load from elsewhere on
# the machine falls on all of them alike; every ratio comes from figures
# measured in this run.  A benchmark reports, it does not judge: exit 0
# unless a command fails.
#
#  1. training: chute stream -w 2 -b 64, 'jpg: decode | random-resized-crop
#     224 | flip | layout chw' and 'cls: int', read by a Python consumer
#     (scripts/chute_batch.py frames(), touching nothing: it marks the
#     pipe as read, so chute lends it its frames' pages once the reader has
#     started; and again through a --shm ring read by shm_frames()), against
#       - a PyTorch DataLoader over the same files: ImageFolder,
#         RandomResizedCrop(224), RandomHorizontalFlip(), PILToTensor(),
#         num_workers 2, batch 64, shuffled (target: chute >= 4x);
#       - tests/bench/full_decode.c: every JPEG decoded whole to RGB by
#         TurboJPEG on 2 threads, from memory, nothing else (target: chute
#         >= 1x: cropping before decoding must pay for the rest).
#     The same through chute.Stream (python/chute), whose own pipe chute
#     lends its frames' pages (--vmsplice), and through chute.Stream(
#     shm=True), against both.
#  2. evaluation: 'jpg: decode | resize 256 | center-crop 224 | layout chw'
#     in --mode eval, through the pipe and through a --shm ring, against
#     the full decode (target: >= 1x); and through chute.Stream, its pipe
#     and its ring.
#  1 and 2 run on two sets of JPEGs: photos (below) and the README's demo
#  images, small noise JPEGs that random-resized-crop enlarges.
#  3. JPEG decoding on one thread through ch_image_decode, chute's entropy
#     decoder (lib/image/jpeg_huff.c) against libjpeg-turbo's, on 1,000 of the
#     JPEGs (tests/bench/entropy_decode.c, for information): whole images,
#     only each image's last row (the rows above entropy-decoded), and
#     random-resized-crop regions.
#  Then chute's --stats of the last run of each: where the time went
#  (transform time: decode, resize/crop, other).  Each ratio is printed
#  against its target: "met" or "NOT met".
#
# Data (built once, cached in ${BENCH_DIR:-/tmp/chute-bench}/transform):
# ${BENCH_IMAGES:-5000} JPEGs from scripts/make-images (about 500x375,
# quality 90, ~3.5 bits/pixel like real photos; 10 classes, seed 1), about
# 0.4 GB with the dataset packed from them by --label-from dir; and
# ${BENCH_DEMO_IMAGES:-5000} of the README's demo images (scripts/gen-data.py
# images --size 20000 --classes 4, as the README makes 200 of them: noise
# JPEGs of about 180x135, 20 KB).
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
RUNS=${BENCH_RUNS:-5}
N=${BENCH_IMAGES:-5000}
N_DEMO=${BENCH_DEMO_IMAGES:-5000}
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
DEMO_IMG=$WORK/demo-images
DEMO_DS=$WORK/demo-ds
DEMO_ID=$(sha256sum "$HERE/gen-data.py" | cut -c1-16)
DEMO_PARAMS="gen-data.py images $N_DEMO --size 20000 --classes 4 ($DEMO_ID)"
gen_demo() {
	echo "bench-transform: generating $N_DEMO demo JPEGs in $DEMO_IMG (once)"
	rm -rf "$DEMO_IMG"
	"$PYTHON" "$HERE/gen-data.py" images "$DEMO_IMG" --count "$N_DEMO" \
		--size 20000 --classes 4
}
cached "$DEMO_IMG.ok" "$DEMO_PARAMS" gen_demo
pack_demo() {
	echo "bench-transform: packing $DEMO_IMG (once)"
	rm -rf "$DEMO_DS"
	"$CHUTE" pack -q --label-from dir "$DEMO_IMG" -o "$DEMO_DS" -n demo
}
cached "$DEMO_DS.ok" "$VERSION, $DEMO_PARAMS" pack_demo

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
# list_jpegs DIR COUNT: DIR's JPEGs, sorted, into DIR.list.
list_jpegs() {
	find "$1" -name '*.jpg' | sort >"$1.list"
	[ "$(wc -l <"$1.list")" -eq "$2" ] ||
		die "$1 holds $(wc -l <"$1.list") JPEGs, expected $2"
}
list_jpegs "$IMG" "$N"
list_jpegs "$DEMO_IMG" "$N_DEMO"
jpeg_bytes=$(xargs cat <"$WORK/images.list" | wc -c)
shard_bytes=$(sum_sizes "$DS"/shards/*.chs)

# --- helpers --------------------------------------------------------------

FMT='%-34s %10s %26s %7s %8s  %s\n'
# row WHAT CHUTE REFERENCE RATIO OP TARGET: one line of the table; OP and
# TARGET empty for a line that only informs.
row() {
	local verdict=info
	if [ -n "$5" ]; then
		verdict=$(calc "($4 $5 $6) ? \"met\" : \"NOT met\"")
	fi
	# shellcheck disable=SC2059 # FMT is the table's one format
	printf "$FMT" "$1" "$2" "$3" "$4" "${5:+$5 $6}" "$verdict"
}
# vs WHAT RATE REFERENCE REF_RATE TARGET: the row of WHAT's rate against
# the reference's, held to >= TARGET.
vs() {
	row "$1" "$(int "$2")" "$3 $(int "$4")" "$(ratio "$2" "$4")" ">=" "$5"
}

# --- the commands compared ------------------------------------------------

# chute_stream MODE SPEC: one epoch of the dataset with SPEC on jpg; its
# --stats (a line every 5 s, the summary at exit) replace
# $RUNS_DIR/MODE.stats (MODE-shm.stats with STATS_SUFFIX=-shm).
chute_stream() {
	local shuffle=()
	if [ "$1" = eval ]; then shuffle=(--shuffle none); fi
	"$CHUTE" stream "$SET_DS" --mode "$1" "${shuffle[@]}" -w "$WORKERS" \
		-b "$BATCH" -e 1 --stats --transform "$2" --transform "$LABELS" \
		"${@:3}" 2>"$RUNS_DIR/$1${STATS_SUFFIX:-}.stats"
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
# The Python package's way: chute.Stream over the same dataset, the same
# options, the pipe it owns (so --vmsplice: its reader copies the frames
# out of chute's pages), each batch's count read and nothing touched;
# prints SAMPLES SECONDS timed as the reader is.  MODE: train or eval;
# SHM: 1 for chute.Stream(shm=True), its batches views of the ring.
py_stream() {
	"$PYTHON" - "$ROOT/python" "$CHUTE" "$SET_DS" "$1" "$2" "$LABELS" \
		"$BATCH" "$WORKERS" "${3:-0}" <<'EOF'
import sys, time
sys.path.insert(0, sys.argv[1])
import chute
binary, ds, mode, spec, labels = sys.argv[2:7]
batch, workers, shm = int(sys.argv[7]), int(sys.argv[8]), sys.argv[9] == "1"
stream = chute.Stream(ds, chute=binary, mode=mode, batch_size=batch,
                      workers=workers, epochs=1, transforms=[spec, labels],
                      shm=shm,
                      shuffle="none" if mode == "eval" else "global")
t0, n = time.perf_counter(), 0
for b in stream:
    n += b.nsamples
print(n, "%.6f" % (time.perf_counter() - t0))
EOF
}
# The DataLoader, in one process; prints SAMPLES SECONDS of one epoch
# (from the first iter() to the last batch: the interpreter's and torch's
# start-up are not counted).
train_dl() {
	"$PYTHON" - "$SET_IMG" "$BATCH" "$WORKERS" <<'EOF'
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
# shm_run MODE SPEC: one epoch of MODE through a shared-memory ring.
shm_run() {
	local ring="bench-transform-$$" pid
	STATS_SUFFIX=-shm chute_stream "$1" "$2" --shm "$ring" &
	pid=$!
	reader "$ring"
	wait "$pid"
}
train_shm() { shm_run train "$TRAIN"; }
eval_shm() { shm_run eval "$EVAL"; }
train_py() { py_stream train "$TRAIN"; }
eval_py() { py_stream eval "$EVAL"; }
train_pyshm() { py_stream train "$TRAIN" 1; }
eval_pyshm() { py_stream eval "$EVAL" 1; }
decode_all() { "$FULL_DECODE" -t "$WORKERS" "$SET_IMG.list"; }
eval_chute() { chute_stream eval "$EVAL" | reader; }

# last_stats FILE: the summary --stats printed at exit (from the last
# "stream: N batches" line on), indented.
last_stats() {
	awk '/^stream: [0-9]+ batches/ { n = 0 } { b[n++] = $0 }
		END { for (i = 0; i < n; i++) print "    " b[i] }' "$1"
}

# --- the runs -------------------------------------------------------------

# run_set TAG IMG DS COUNT: the rounds on one set of JPEGs (IMG, packed as
# DS), their outputs in $WORK/runs/TAG; sets R[TAG.what] to each rate.
declare -A R
run_set() {
	local f
	SET_IMG=$2 SET_DS=$3 RUNS_DIR=$WORK/runs/$1
	mkdir -p "$RUNS_DIR"
	cat "$SET_DS"/shards/*.chs >/dev/null
	xargs cat <"$SET_IMG.list" >/dev/null
	echo "bench-transform: $1, $4 JPEGs; chute, DataLoader, full decode;" \
		"$RUNS rounds"
	local compared=(train_chute train_shm train_py train_pyshm train_dl
		decode_all eval_chute eval_shm eval_py eval_pyshm)
	rounds "${compared[@]}"
	for f in "${compared[@]}"; do
		expect_samples "$f" "$4"
		R[$1.$f]=$(rate_of "$f" 1 2)
	done
	# shellcheck disable=SC2046 # one rate a word
	R[$1.mp]=$(median $(awk '{ printf "%f\n", $3 / $2 }' \
		"$RUNS_DIR/decode_all.out"))
}

load_before=$(cut -d' ' -f1 /proc/loadavg)
run_set photos "$IMG" "$DS" "$N"
run_set demo "$DEMO_IMG" "$DEMO_DS" "$N_DEMO"
# 3. the entropy decoders, on 1,000 of the photos, one thread
if [ -n "$ENTROPY_DECODE" ]; then
	echo "bench-transform: chute's and libjpeg-turbo's entropy decoders"
	head -n 1000 "$WORK/images.list" >"$WORK/images-1000.list"
	"$ENTROPY_DECODE" -r "$RUNS" "$WORK/images-1000.list" \
		>"$WORK/runs/entropy.out" || die "entropy_decode failed"
fi
load_after=$(cut -d' ' -f1 /proc/loadavg)

# --- report ---------------------------------------------------------------

# report_set TAG: sections 1 and 2 of the table for one set.
report_set() {
	local dl="DataLoader w$WORKERS" dec="full decode $WORKERS thr"
	local pipe="stream | chute_batch.py reader"
	local shm="stream --shm | shm_frames reader"
	local py="chute.Stream (its pipe, vmsplice)"
	local pyshm="chute.Stream(shm=True)"
	local dl_rate=${R[$1.train_dl]} dec_rate=${R[$1.decode_all]}
	echo "1. training, $WORKERS workers, batch $BATCH: '$TRAIN'"
	vs "$pipe" "${R[$1.train_chute]}" "$dl" "$dl_rate" 4.00
	vs "$pipe" "${R[$1.train_chute]}" "$dec" "$dec_rate" 1.00
	vs "$shm" "${R[$1.train_shm]}" "$dl" "$dl_rate" 4.00
	vs "$shm" "${R[$1.train_shm]}" "$dec" "$dec_rate" 1.00
	vs "$py" "${R[$1.train_py]}" "$dl" "$dl_rate" 4.00
	vs "$py" "${R[$1.train_py]}" "$dec" "$dec_rate" 1.00
	vs "$pyshm" "${R[$1.train_pyshm]}" "$dl" "$dl_rate" 4.00
	vs "$pyshm" "${R[$1.train_pyshm]}" "$dec" "$dec_rate" 1.00
	row "  full decode, MP/s" "" "$(int "${R[$1.mp]}")" "" "" ""
	echo "2. evaluation, --mode eval: '$EVAL'"
	vs "$pipe" "${R[$1.eval_chute]}" "$dec" "$dec_rate" 1.00
	vs "$shm" "${R[$1.eval_shm]}" "$dec" "$dec_rate" 1.00
	vs "$py" "${R[$1.eval_py]}" "$dec" "$dec_rate" 1.00
	vs "$pyshm" "${R[$1.eval_pyshm]}" "$dec" "$dec_rate" 1.00
}

echo
echo "$VERSION, $(nproc) cores; median of $RUNS, warm cache; load average" \
	"$load_before before, $load_after after"
echo
echo "A. photos: $(sed 's/^make-images: //' "$WORK/images.summary" 2>/dev/null ||
	echo "$N JPEGs")"
echo "   $(calc "sprintf(\"%.0f\", $jpeg_bytes / 1e6)") MB of JPEGs," \
	"$(calc "sprintf(\"%.0f\", $shard_bytes / 1e6)") MB of shards"
# shellcheck disable=SC2059
printf "$FMT" "images/s" chute reference ratio target result
report_set photos
if [ -n "$ENTROPY_DECODE" ]; then
	echo "3. JPEG decoding on 1 thread, chute's entropy decoder against" \
		"libjpeg-turbo's (the same pixels)"
	while read -r way n t_chute t_lib; do
		row "  $way" "$(int "$(calc "$n * $RUNS / $t_chute")")" \
			"libjpeg-turbo $(int "$(calc "$n * $RUNS / $t_lib")")" \
			"$(ratio "$t_lib" "$t_chute")" "" ""
	done <"$WORK/runs/entropy.out"
	echo "  (whole: every image to RGB; entropy: only each image's last" \
		"row, every row above"
	echo "  it entropy-decoded and skipped; crop: a random-resized-crop" \
		"region, the rows above"
	echo "  and the columns beside it entropy-decoded and skipped)"
fi
echo
echo "B. the README's demo images: $N_DEMO from gen-data.py images --size" \
	"20000 --classes 4"
echo "   (noise JPEGs of about 180x135, $(calc "sprintf(\"%.0f\", \
$(xargs cat <"$DEMO_IMG.list" | wc -c) / 1e6)") MB: random-resized-crop" \
	"enlarges them)"
# shellcheck disable=SC2059
printf "$FMT" "images/s" chute reference ratio target result
report_set demo
echo
echo "chute's figures are timed by its Python reader, from after its imports"
echo "to the last batch: chute.Stream starts chute then, so its start-up and first"
echo "batches are in; 'stream |' and 'stream --shm' start with the reader's"
echo "interpreter, and batches made during its ~0.2 s of imports are not; the"
echo "DataLoader's inside its process, from iter() to the last batch; the full"
echo "decode's from the first image to the last, the files already in memory."
echo "All share the machine's $(nproc) cores with their consumer."
echo
echo "Where the time went, chute's --stats at the end of the last pipe run of each:"
for t in photos demo; do
	echo "  $t, 1. training:"
	last_stats "$WORK/runs/$t/train.stats"
	echo "  $t, 2. evaluation:"
	last_stats "$WORK/runs/$t/eval.stats"
done
