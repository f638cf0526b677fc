#!/bin/bash
# bench-scale.sh [OPTIONS] CHUTE_BINARY - how chute grows with the number
# of samples and of shards, every figure measured in the same run:
#
# samples: datasets of N tiny samples (scripts/gen-samples.py: one 16-byte
#   field, every 1000th sample a duplicate; shards of 10,000 samples; a val
#   split of 5 %), for N in --samples (default 10^5 and 10^6): one plain
#   `chute pack`, `chute manifest` (parsing the manifest), `verify`, `ls`,
#   `status`, the first batch of a global-shuffle `stream` and `check`;
#   and the same sources packed in 4 parts (`pack --part I/4`, the
#   slowest part: what a worker of 4 takes) and merged (`chute merge`),
#   against the one pack.  Every part reads all the sources (it decides
#   which samples are its own by their keys): with tiny samples reading
#   is most of the work, and parts gain little; they gain the encoding
#   and writing of large ones.
# shards: manifests of N shards whose files are all missing
#   (scripts/gen-manifest.py), for N in --shards (default 10^4 and 10^5):
#   `manifest`, `verify` and `status`, where the manifest is all there is.
#
# Each row gives wall and CPU seconds and peak RSS (/usr/bin/time), the
# median of --runs runs (default 3; `pack` runs once).  Then, from one
# size to the next: the growth of n, of CPU time and of peak RSS, what
# O(n) and O(n log n) would give, and the peak bytes a sample (or shard):
# the growth of peak RSS over that of n, which leaves out what the
# process takes whatever the size.  Each row names the growth it should
# have; none may grow faster than n log n.  CPU time (user + sys) is the
# figure to compare: wall time on a shared machine measures the
# neighbours, and figures under 0.1 s are mostly the start of a process.
# A benchmark reports, it does not judge: exit 0 unless a command fails
# (exit 1 is a verdict on the data: verify and status exit 1 on the
# manifests of missing shards, check on the planted duplicates).
#
# Options: --samples "N..." and --shards "N..." (sizes, ascending; "" for
# none), --runs K.  10^7 samples take about 10 minutes to build and
# measure on 2 cores, and about 1 GB of disk.
#
# Data: ${BENCH_DIR:-/tmp/chute-bench}/scale/, written once: N/ for the
# manifests of N shards, samples-N/ for N samples (N.tar.zst the source,
# ds/ the dataset).
set -euo pipefail

usage() {
	echo "usage: bench-scale.sh [--samples \"N...\"] [--shards \"N...\"] [--runs K] CHUTE_BINARY" >&2
	exit 2
}
SAMPLES="100000 1000000"
SHARDS="10000 100000"
RUNS=3
while [ $# -gt 1 ]; do
	case $1 in
	--samples) SAMPLES=$2 ;;
	--shards) SHARDS=$2 ;;
	--runs) RUNS=$2 ;;
	*) usage ;;
	esac
	shift 2
done
if [ $# -ne 1 ] || [ ! -x "$1" ]; then usage; fi
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || usage
CHUTE=$(realpath "$1")
PYTHON=${PYTHON:-/usr/bin/python3}
HERE=$(realpath "$(dirname "$0")")
WORK=${BENCH_DIR:-/tmp/chute-bench}/scale

die() { echo "bench-scale: $*" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || die "'/usr/bin/time' is missing: apt-get install time"
command -v zstd >/dev/null || die "'zstd' is missing: apt-get install zstd"
mkdir -p "$WORK"

# run K N WHAT CMD...: median "wall cpu peak_kb" of K runs of CMD, whose
# exit status must be 0 or 1.
run() {
	local k=$1 n=$2 what=$3 i rc
	shift 3
	for ((i = 0; i < k; i++)); do
		rc=0
		/usr/bin/time -o "$WORK/time" -f '%e %U %S %M' "$@" \
			>/dev/null 2>"$WORK/err" || rc=$?
		[ "$rc" -le 1 ] || die "$what at $n failed ($rc): $(tail -3 "$WORK/err")"
		tail -1 "$WORK/time"
	done | awk '{ print $1, $2 + $3, $4 }' | sort -n -k2 |
		sed -n "$(((k + 1) / 2))p"
}

# Builds samples-N/ds once: N tiny samples, packed, split.
samples_data() {
	local n=$1 d=$WORK/samples-$1
	[ -f "$d/ds/manifest.json" ] && return
	mkdir -p "$d"
	[ -f "$d/$n.tar.zst" ] ||
		{ "$PYTHON" "$HERE/gen-samples.py" "$n" | zstd -q -1 -o "$d/tmp.tar.zst" &&
		  mv "$d/tmp.tar.zst" "$d/$n.tar.zst"; }
	rm -rf "$d/ds"
	"$CHUTE" pack -q -s 10000s -n ds -o "$d/ds" "$d/$n.tar.zst" >/dev/null
	"$CHUTE" split --val 0.05 "$d/ds" >/dev/null
}

declare -A CPU KB WALL
ROWS_SAMPLES="pack manifest verify ls status stream check"
ROWS_GROWTH="pack part/4 merge ${ROWS_SAMPLES#pack }"
ROWS_SHARDS="manifest verify status"
# The growth each row should have, n samples or shards (s = n / 10,000
# shards of the samples' datasets).
declare -A GROWS=(
	[samples.pack]="time O(n log n) (sort by key), memory bounded by --memory (spills)"
	[samples.part/4]="the slowest of 4 parts: every part scans all sources"
	[samples.merge]="time O(n) (keys from the indexes), memory O(s)"
	[samples.manifest]="time, memory O(s)"
	[samples.verify]="time O(n) (hash every byte), memory O(n) (open indexes)"
	[samples.ls]="time O(n), memory O(n) (open indexes)"
	[samples.status]="time, memory O(s)"
	[samples.stream]="time, memory O(n) (every index, permutation)"
	[samples.check]="time O(n log n) (sort by hash), memory O(n)"
	[shards.manifest]="time, memory O(n): at most ~200 B a shard"
	[shards.verify]="time, memory O(n)"
	[shards.status]="time, memory O(n)"
)

row() { # SET WHAT N WALL CPU KB
	WALL[$1.$2.$3]=$4
	CPU[$1.$2.$3]=$5
	KB[$1.$2.$3]=$6
	awk -v s="$1" -v w="$2" -v n="$3" -v wall="$4" -v cpu="$5" -v kb="$6" \
		'BEGIN { printf "%-8s %-9s %9d %8.2f %8.2f %9.1f\n",
			 s, w, n, wall, cpu, kb / 1024 }'
}

# parts_and_merge N DIR: pack --part I/4 for I in 0..3, one after the
# other (on 4 machines they run side by side: the slowest part is what a
# worker takes), then chute merge of the 4 parts.
parts_and_merge() {
	local n=$1 d=$2 i w c k wall=0 cpu=0 kb=0
	rm -rf "$d/parts" "$d/merged"
	mkdir -p "$d/parts"
	for i in 0 1 2 3; do
		read -r w c k < <(run 1 "$n" "pack --part $i/4" "$CHUTE" pack \
			-q -s 10000s --part "$i/4" -o "$d/parts/$i" "$d/$n.tar.zst")
		read -r wall cpu kb < <(awk -v a="$wall $cpu $kb" -v b="$w $c $k" \
			'BEGIN { split(a, x); split(b, y)
				 if (y[1] > x[1]) print b; else print a }')
	done
	row samples part/4 "$n" "$wall" "$cpu" "$kb"
	read -r wall cpu kb < <(run 1 "$n" merge "$CHUTE" merge -o \
		"$d/merged" "$d/parts/0" "$d/parts/1" "$d/parts/2" "$d/parts/3")
	row samples merge "$n" "$wall" "$cpu" "$kb"
	rm -rf "$d/parts" "$d/merged"
}

printf '%-8s %-9s %9s %8s %8s %9s\n' set what n wall_s cpu_s peak_MB
for n in $SAMPLES; do
	samples_data "$n"
	d=$WORK/samples-$n
	rm -rf "$d/repack"
	read -r wall cpu kb < <(run 1 "$n" pack "$CHUTE" pack -q -s 10000s \
		-o "$d/repack" "$d/$n.tar.zst")
	rm -rf "$d/repack"
	row samples pack "$n" "$wall" "$cpu" "$kb"
	parts_and_merge "$n" "$d"
	for what in ${ROWS_SAMPLES#pack }; do
		case $what in
		# the first batch of a global shuffle, which holds every
		# index (hence --index-memory): the stream ends (SIGPIPE,
		# 141) once head has its first byte
		stream) cmd=(bash -c 'set -o pipefail
			     "$0" stream --shuffle global --index-memory 16G \
				     -b 256 "$1" | head -c 1 >/dev/null
			     rc=$?; [ $rc -ne 141 ] || rc=0; exit $rc' \
			     "$CHUTE" "$d/ds") ;;
		*) cmd=("$CHUTE" "$what" "$d/ds") ;;
		esac
		read -r wall cpu kb < <(run "$RUNS" "$n" "$what" "${cmd[@]}")
		row samples "$what" "$n" "$wall" "$cpu" "$kb"
	done
done
for n in $SHARDS; do
	d=$WORK/$n
	[ -f "$d/manifest.json" ] || "$PYTHON" "$HERE/gen-manifest.py" "$n" "$d"
	for what in $ROWS_SHARDS; do
		read -r wall cpu kb < <(run "$RUNS" "$n" "$what" "$CHUTE" "$what" "$d")
		row shards "$what" "$n" "$wall" "$cpu" "$kb"
	done
done

# growth SET ROWS SIZES UNIT
growth() {
	local set=$1 rows=$2 unit=$4 prev= n what
	for n in $3; do
		if [ -n "$prev" ]; then
			for what in $rows; do
				awk -v w="$what" -v a="$prev" -v b="$n" -v u="$unit" \
					-v ca="${CPU[$set.$what.$prev]}" -v cb="${CPU[$set.$what.$n]}" \
					-v ka="${KB[$set.$what.$prev]}" -v kb="${KB[$set.$what.$n]}" \
					-v g="${GROWS[$set.$what]}" \
					'BEGIN { printf "%-8s %-9s %8d>%-8d x%-4.0f %6.2f %6.2f %6.1f %6.1f %6.0f  %s\n",
						 u, w, a, b, b / a, (ca > 0 ? cb / ca : 0),
						 (ka > 0 ? kb / ka : 0), b / a,
						 b * log(b) / (a * log(a)),
						 (kb - ka) * 1024 / (b - a), g }'
			done
		fi
		prev=$n
	done
}
echo
echo "growth between sizes in this run: of n, CPU time, peak RSS; what O(n) and"
echo "O(n log n) give; peak bytes a sample or shard (growth of peak over that of n)"
printf '%-8s %-9s %-17s %-5s %6s %6s %6s %6s %6s  %s\n' unit what sizes n cpu peak 'O(n)' nlogn 'B/unit' expected
growth samples "$ROWS_GROWTH" "$SAMPLES" sample
growth shards "$ROWS_SHARDS" "$SHARDS" shard
echo
echo "pack on 4 workers (the slowest part, then merge) against one pack, wall time:"
for n in $SAMPLES; do
	awk -v n="$n" -v one="${WALL[samples.pack.$n]}" \
		-v part="${WALL[samples.part/4.$n]}" -v merge="${WALL[samples.merge.$n]}" \
		'BEGIN { printf "  %9d samples: %.2f s + %.2f s against %.2f s: %.2fx\n",
			 n, part, merge, one, (part + merge) / one }'
done
