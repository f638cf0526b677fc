#!/bin/bash
# bench-stream.sh CHUTE_BINARY - `chute stream` against what a trainer would
# otherwise use.  Warm page cache, median of 3 runs each; every ratio comes
# from figures measured in this run, the commands compared taking turns
# within each of the 3 rounds, so that load from elsewhere on the machine
# falls on all of them alike.  A benchmark reports, it does not judge:
# exit 0 unless a command fails.
#
#  1. small records, Fashion-MNIST's 60,000 training samples (KEY.img, 784
#     raw bytes, and KEY.cls): samples/s of `chute stream -b 256` read by a
#     Python consumer (scripts/chute_batch.py, then the batch's pixels
#     summed and labels converted) against a PyTorch DataLoader over the
#     same arrays in memory (one sample per __getitem__, batch 256,
#     shuffled; 0 and 2 workers, the better one is the baseline) and
#     against a numpy gather of shuffled rows in the same process (the
#     ceiling).  Every consumer touches a batch the same way.
#  2. large records, incompressible ~110 KB "jpg" files: MB/s of
#     `chute stream | cat >/dev/null` against `cat SHARDS | cat >/dev/null`.
#  3. memory and latency: peak RSS of one epoch over 1,000,000 and 100,000
#     tiny samples, and the time until the first bytes reach the reader.
#
# Data (built once, cached in ${BENCH_DIR:-/tmp/chute-bench}): fmnist/ from
# the Debian package dataset-fashion-mnist; stream/ the rest.  The images
# are bench-pack.sh's (data-full/images) when it has generated them, else
# 4,000 (0.44 GB) generated here.  About 1.3 GB of tar files and 0.5-0.9 GB
# of shards.
set -euo pipefail

usage() { echo "usage: bench-stream.sh CHUTE_BINARY" >&2; exit 2; }
if [ $# -ne 1 ] || [ ! -x "$1" ]; then usage; fi
CHUTE=$(realpath "$1")
PYTHON=${PYTHON:-/usr/bin/python3}
HERE=$(realpath "$(dirname "$0")")
HELPER=$HERE/bench_stream_reader.py
GEN=$HERE/gen-data.py
IDX=${FMNIST_DIR:-/usr/share/datasets/fashion-mnist}
BENCH_DIR=${BENCH_DIR:-/tmp/chute-bench}
WORK=$BENCH_DIR/stream
RUNS_DIR=$WORK/runs # what the timed runs printed, for a look afterwards
RUNS=3 FIRST_RUNS=5
BATCH=256
TARGET_S=1.5 # seconds of work a timed run should last, at least

die() { echo "bench-stream: $*" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || die "'/usr/bin/time' is missing: apt-get install time"
"$PYTHON" -c 'import numpy, torch' 2>/dev/null ||
	die "$PYTHON cannot import numpy and torch (python3-numpy, python3-torch)"
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz; do
	[ -r "$IDX/$f" ] || die "$IDX/$f is missing (dataset-fashion-mnist, or set FMNIST_DIR)"
done
mkdir -p "$WORK" "$RUNS_DIR"

# --- helpers --------------------------------------------------------------

# calc, median, sum_sizes, cached
# shellcheck source=scripts/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
VERSION=$(pack_version "$CHUTE")

# pack SRC DS NAME: a fresh dataset DS from SRC (a folder or an archive).
# pack SRC OUT NAME [OPTION...]
pack() {
	echo "bench-stream: packing $1 (once)"
	rm -rf "$2"
	"$CHUTE" pack -q "$1" -o "$2" -n "$3" "${@:4}"
}

# peak_rss CMD...: the largest peak RSS (KB) of CMD over RUNS runs.
peak_rss() {
	local i r
	RSS=0
	for ((i = 0; i < RUNS; i++)); do
		/usr/bin/time -v -o "$RUNS_DIR/time.txt" "$@" >/dev/null
		r=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$RUNS_DIR/time.txt")
		if ((r > RSS)); then RSS=$r; fi
	done
}

# epochs_for SECONDS_OF_ONE_EPOCH: epochs for TARGET_S seconds of work.
epochs_for() { calc "int($TARGET_S / $1) + 1"; }

# stats CMD...: CMD's standard error (chute's --stats lines), indented, for
# the notes under the table.
stats() { "$@" 2>&1 >/dev/null | sed 's/^/    /'; }

FMT='%-34s %14s %26s %7s %8s  %s\n'
# row WHAT CHUTE REFERENCE RATIO OP TARGET: one line of the table; OP and
# TARGET empty for a line that only informs.
row() {
	local verdict=info
	if [ -n "$5" ]; then
		verdict=$(calc "($4 $5 $6) ? \"PASS\" : \"MISS\"")
	fi
	# shellcheck disable=SC2059 # FMT is the table's one format
	printf "$FMT" "$1" "$2" "$3" "$4" "${5:+$5 $6}" "$verdict"
}

# --- data, built once -----------------------------------------------------

# 1. Fashion-MNIST, from the IDX files to a tar to a dataset.
FM=$BENCH_DIR/fmnist
FM_N=60000
mkdir -p "$FM"
# make_tar OUT.tar ARGS...: bench_stream_reader.py ARGS, writing OUT.tar.
make_tar() {
	echo "bench-stream: writing $1 (once)"
	"$PYTHON" "$HELPER" "${@:2}"
}
cached "$FM/fmnist.tar.ok" "$IDX train, $FM_N samples" \
	make_tar "$FM/fmnist.tar" fmnist-tar "$IDX" "$FM/fmnist.tar"
cached "$FM/ds.ok" "$VERSION, $(cat "$FM/fmnist.tar.ok")" \
	pack "$FM/fmnist.tar" "$FM/ds" fmnist

# 2. large records: bench-pack.sh's images when it has made them.
if [ -f "$BENCH_DIR/data-full.ok" ] && [ -d "$BENCH_DIR/data-full/images" ]; then
	IMG_SRC=$BENCH_DIR/data-full/images
	IMG_PARAMS="bench-pack's $(cat "$BENCH_DIR/data-full.ok")"
else
	IMG_SRC=$WORK/images-src
	IMG_PARAMS="images 4000 x 110000 in 8 classes, seed 1"
	gen_images() {
		echo "bench-stream: generating $IMG_PARAMS in $IMG_SRC (once)"
		rm -rf "$IMG_SRC"
		"$PYTHON" "$GEN" images "$IMG_SRC" --count 4000 --size 110000 \
			--classes 8 --with-cls --seed 1
	}
	cached "$IMG_SRC.ok" "$IMG_PARAMS" gen_images
fi
IMG_DS=$WORK/images-ds
cached "$IMG_DS.ok" "$VERSION, $IMG_SRC: $IMG_PARAMS" pack "$IMG_SRC" "$IMG_DS" images

# 3. tiny samples, 1,000,000 and 100,000 (the first of the same sequence).
for n in 1000000 100000; do
	cached "$WORK/tiny-$n.tar.ok" "tiny $n, seed 1" \
		make_tar "$WORK/tiny-$n.tar" tiny-tar "$WORK/tiny-$n.tar" --count "$n" --seed 1
	cached "$WORK/tiny-$n.ok" "$VERSION, 65536-sample shards, $(cat "$WORK/tiny-$n.tar.ok")" \
		pack "$WORK/tiny-$n.tar" "$WORK/tiny-$n" "tiny$n"
done
# the same million in 64 KiB blocks: a random sample costs less to decode
cached "$WORK/tiny-1000000-b64k.ok" "$(cat "$WORK/tiny-1000000.ok"), -b 64K" \
	pack "$WORK/tiny-1000000.tar" "$WORK/tiny-1000000-b64k" tiny1000000 -b 64K

# --- 1. small records -----------------------------------------------------

load_before=$(cut -d' ' -f1 /proc/loadavg)

FM_DS=$FM/ds
cat "$FM_DS"/shards/*.chs >/dev/null

# fm_stream EPOCHS: the stream the reader reads.
STATS=() # (--stats) for the last run of each part
fm_stream() { "$CHUTE" stream -b "$BATCH" -e "$1" "${STATS[@]}" "$FM_DS"; }
# The reader prints SAMPLES STEADY_SAMPLES STEADY_SECONDS (after batch 1).
fm_chute() { fm_stream "$FM_E" | "$PYTHON" "$HELPER" read; }
fm_chute_alone() { fm_stream "$FM_E" >/dev/null; }
fm_reader_alone() { "$PYTHON" "$HELPER" read <"$WORK/fmnist.frames"; }
# In one process: arrays loaded untimed, then epochs for TARGET_S seconds
# after a warm-up epoch; prints SAMPLES SECONDS.
inproc() { "$PYTHON" "$HELPER" "$@" "$IDX" --seconds "$TARGET_S" --runs 1; }
fm_dl0() { inproc dataloader --workers 0; }
fm_dl2() { inproc dataloader --workers 2; }
fm_gather() { inproc gather; }

# Enough epochs for TARGET_S seconds, from a timed run of 4.
t0=$(date +%s.%N)
fm_stream 4 | "$PYTHON" "$HELPER" read >/dev/null
t1=$(date +%s.%N)
FM_E=$(epochs_for "$(calc "($t1 - $t0) / 4")")
FM_SAMPLES=$((FM_N * FM_E))
fm_stream "$FM_E" >"$WORK/fmnist.frames"
sync "$WORK/fmnist.frames" # no writeback under the reader's runs

echo "bench-stream: Fashion-MNIST: chute stream | reader, DataLoader, numpy;" \
	"$RUNS rounds"
rounds fm_chute fm_chute_alone fm_reader_alone fm_dl0 fm_dl2 fm_gather
rm -f "$WORK/fmnist.frames"
expect_samples fm_chute "$FM_SAMPLES"
expect_samples fm_reader_alone "$FM_SAMPLES"
r_chute=$(calc "$FM_SAMPLES / ${T[fm_chute]}")
r_steady=$(rate_of fm_chute 2 3)
r_alone=$(calc "$FM_SAMPLES / ${T[fm_chute_alone]}")
r_reader=$(calc "$FM_SAMPLES / ${T[fm_reader_alone]}")
r_dl0=$(rate_of fm_dl0 1 2)
r_dl2=$(rate_of fm_dl2 1 2)
r_gather=$(rate_of fm_gather 1 2)
if (($(calc "($r_dl0 >= $r_dl2)"))); then
	r_dl=$r_dl0 dl_name="DataLoader w0"
else
	r_dl=$r_dl2 dl_name="DataLoader w2"
fi
STATS=(--stats)
fm_stats=$(stats fm_chute)
STATS=()

# --- 2. large records -----------------------------------------------------

shards=("$IMG_DS"/shards/*.chs)
shard_bytes=$(sum_sizes "${shards[@]}")
cat "${shards[@]}" >/dev/null
# Epochs (and copies of the shard list for cat) to move about 1 GB a run.
IMG_E=$(calc "int(1e9 / $shard_bytes) + 1")
cat_list=()
for ((i = 0; i < IMG_E; i++)); do cat_list+=("${shards[@]}"); done

img_stream() { "$CHUTE" stream -b "$BATCH" -e "$IMG_E" "${STATS[@]}" "$IMG_DS"; }
img_chute() { img_stream | cat >/dev/null; }
img_cat() { cat "${cat_list[@]}" | cat >/dev/null; }
# cat behind the 1 MiB pipe buffer that chute asks for (F_SETPIPE_SZ = 1031).
img_cat_1m() {
	"$PYTHON" -c 'import fcntl, os, sys
fcntl.fcntl(1, 1031, 1 << 20)
os.execvp("cat", ["cat"] + sys.argv[1:])' "${cat_list[@]}" | cat >/dev/null
}
pipe_default=$("$PYTHON" -c 'import fcntl, os
print(fcntl.fcntl(os.pipe()[1], 1032) // 1024)') # F_GETPIPE_SZ, KiB
out_bytes=$(img_stream | wc -c)

echo "bench-stream: large records, $IMG_E epoch(s) of ${#shards[@]} shards:" \
	"chute stream | cat, cat | cat; $RUNS rounds"
rounds img_chute img_cat img_cat_1m
m_chute=$(calc "$out_bytes / ${T[img_chute]} / 1e6")
m_cat=$(calc "$shard_bytes * $IMG_E / ${T[img_cat]} / 1e6")
m_cat1m=$(calc "$shard_bytes * $IMG_E / ${T[img_cat_1m]} / 1e6")
STATS=(--stats)
img_stats=$(stats img_chute)
STATS=()

# --- 3. memory and first batch --------------------------------------------

echo "bench-stream: peak RSS and first batch, 1,000,000 and 100,000 samples"
declare -A rss rss_small first first_window epoch_s
SMALL="--shuffle window --window 1 --index-memory 8M --cache 4M"
for n in 1000000 100000; do
	ds=$WORK/tiny-$n
	cat "$ds"/shards/*.chs >/dev/null
	peak_rss "$CHUTE" stream -b "$BATCH" "$ds"
	rss[$n]=$RSS
	# memory bounded by small options: a window of 2 shards at a time
	# shellcheck disable=SC2086
	peak_rss "$CHUTE" stream -b "$BATCH" $SMALL "$ds"
	rss_small[$n]=$RSS
	tiny_epoch() { "$CHUTE" stream -b "$BATCH" "$ds" >/dev/null; }
	rounds tiny_epoch
	epoch_s[$n]=${T[tiny_epoch]}
	# milliseconds to the first bytes, as the reading end of the pipe sees them
	first_batch() { "$PYTHON" "$HELPER" first-byte "$CHUTE" stream -b "$BATCH" "$ds"; }
	first_window() {
		"$PYTHON" "$HELPER" first-byte "$CHUTE" stream -b "$BATCH" --shuffle window "$ds"
	}
	RUNS=$FIRST_RUNS rounds first_batch first_window
	# shellcheck disable=SC2046 # one figure a line
	first[$n]=$(median $(cat "$RUNS_DIR/first_batch.out"))
	# shellcheck disable=SC2046
	first_window[$n]=$(median $(cat "$RUNS_DIR/first_window.out"))
done
first_b64k() {
	"$PYTHON" "$HELPER" first-byte "$CHUTE" stream -b "$BATCH" "$WORK/tiny-1000000-b64k"
}
RUNS=$FIRST_RUNS rounds first_b64k
# shellcheck disable=SC2046
first_b64k=$(median $(cat "$RUNS_DIR/first_b64k.out"))

# bytes of peak RSS per sample added between 100,000 and 1,000,000 samples
per_sample() { calc "sprintf(\"%.0f\", ($1 - $2) * 1024 / 900000)"; }
growth=$(per_sample "${rss[1000000]}" "${rss[100000]}")
load_after=$(cut -d' ' -f1 /proc/loadavg)

# --- report ---------------------------------------------------------------

echo
echo "$VERSION, $(nproc) cores (chute's workers share them with the consumer);" \
	"median of $RUNS, warm cache; load average $load_before before, $load_after after"
echo
# shellcheck disable=SC2059
printf "$FMT" measure chute reference ratio target result
echo "1. Fashion-MNIST, $FM_N samples x $FM_E epochs, batch $BATCH, samples/s"
row "stream | chute_batch.py reader" "$(int "$r_chute")" "$dl_name $(int "$r_dl")" \
	"$(ratio "$r_chute" "$r_dl")" ">=" 5.00
row "stream | chute_batch.py reader" "$(int "$r_chute")" "numpy gather $(int "$r_gather")" \
	"$(ratio "$r_chute" "$r_gather")" ">=" 0.50
row "  after the first batch (steady)" "$(int "$r_steady")" "" "" "" ""
row "  DataLoader, 0 workers" "" "$(int "$r_dl0")" "" "" ""
row "  DataLoader, 2 workers" "" "$(int "$r_dl2")" "" "" ""
row "  chute stream >/dev/null" "$(int "$r_alone")" "" "" "" ""
row "  reader alone, from a file" "$(int "$r_reader")" "" "" "" ""
echo "2. ~110 KB incompressible records, $IMG_E epoch(s), MB/s through a pipe to cat"
row "stream | cat" "$(int "$m_chute")" "cat|cat ${pipe_default}K pipe $(int "$m_cat")" \
	"$(ratio "$m_chute" "$m_cat")" ">=" 0.70
row "stream | cat" "$(int "$m_chute")" "cat|cat 1M pipe $(int "$m_cat1m")" \
	"$(ratio "$m_chute" "$m_cat1m")" "" ""
echo "3. tiny samples (20-60 bytes), one epoch to /dev/null"
row "peak RSS, 1,000,000 samples (KB)" "${rss[1000000]}" "100,000 samples ${rss[100000]}" \
	"$(ratio "${rss[1000000]}" "${rss[100000]}")" "" ""
row "  window 1, 8M index, 4M cache (KB)" "${rss_small[1000000]}" \
	"100,000 samples ${rss_small[100000]}" \
	"$(ratio "${rss_small[1000000]}" "${rss_small[100000]}")" "" ""
row "epoch, 1,000,000 samples (s)" "$(calc "sprintf(\"%.2f\", ${epoch_s[1000000]})")" \
	"100,000 samples $(calc "sprintf(\"%.2f\", ${epoch_s[100000]})")" "" "" ""
row "first batch, 1,000,000 (ms)" "$(int "${first[1000000]}")" \
	"100,000 samples $(int "${first[100000]}")" "" "" ""
row "  --shuffle window (ms)" "$(int "${first_window[1000000]}")" \
	"100,000 samples $(int "${first_window[100000]}")" "" "" ""
row "  packed with -b 64K (ms)" "$(int "$first_b64k")" "" "" "" ""
echo
echo "Memory is bounded by the options (chute-stream(1)): a global shuffle keeps every"
echo "shard's index open (at most about 64 bytes a sample, within --index-memory, default"
echo "256M) and the decoded blocks (--cache, default 256M): from 100,000 to 1,000,000"
echo "samples peak RSS grew by $growth bytes a sample.  With the small options of the"
echo "second row, the 100,000-sample set (2 shards, 6 MB of index) fits in them whole,"
echo "the 1,000,000-sample one does not: there the peak is the bound, 8M of index + 4M"
echo "of blocks + a 4 MB shard per worker reading + batches + the program (~10 MB)."
echo "A global shuffle's first batch decodes the index pages that hold its samples"
echo "(8 KiB each, a few per shard) and the blocks (1 MiB; 64 KiB with -b 64K) that"
echo "hold them, in every shard (16 here); a window's, the shards of one window.  First"
echo "batch: median of $FIRST_RUNS, from process start to the first bytes in the reader."
echo "The DataLoader is the better of 0 and 2 workers (persistent); the cat|cat"
echo "baseline of row 2 runs behind the system's default pipe buffer of ${pipe_default} KiB."
echo
echo "Where the time went, one more run of each with --stats:"
echo "  1. stream | reader:"
echo "$fm_stats"
echo "  2. stream | cat:"
echo "$img_stats"
