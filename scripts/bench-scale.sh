#!/bin/bash
# bench-scale.sh CHUTE_BINARY - how manifest operations grow with the
# number of shards: for manifests of 10^4, 10^5 and 3x10^5 shards whose
# files are all missing (scripts/gen-manifest.py), the wall and CPU
# seconds and the peak RSS (/usr/bin/time) of loading the manifest
# (`chute manifest`), `chute verify` and `chute status`; then from one size
# to the next, the growth of CPU time next to what n log n would give, and
# the peak bytes a shard (the growth of peak RSS over that of n, which
# leaves out what the process takes whatever the size).  CPU time (user + sys) is the figure to compare:
# wall time on a shared machine measures the neighbours.  Median of 3
# runs.  A benchmark reports, it does not judge: exit 0 unless a command
# fails (verify and status exit 1 here, every shard being missing).
#
# Data: ${BENCH_DIR:-/tmp/chute-bench}/scale/N/manifest.json, written once.
set -euo pipefail

usage() { echo "usage: bench-scale.sh CHUTE_BINARY" >&2; exit 2; }
if [ $# -ne 1 ] || [ ! -x "$1" ]; then usage; fi
CHUTE=$(realpath "$1")
PYTHON=${PYTHON:-/usr/bin/python3}
GEN=$(realpath "$(dirname "$0")/gen-manifest.py")
WORK=${BENCH_DIR:-/tmp/chute-bench}/scale
SIZES=(10000 100000 300000)
RUNS=3

die() { echo "bench-scale: $*" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || die "'/usr/bin/time' is missing: apt-get install time"
mkdir -p "$WORK"

# run N WHAT CMD...: median "wall cpu peak_kb" of RUNS runs of CMD, whose
# exit status must be 0 or 1.
run() {
	local n=$1 what=$2 i rc
	shift 2
	for ((i = 0; i < RUNS; i++)); do
		rc=0
		/usr/bin/time -o "$WORK/time" -f '%e %U %S %M' "$@" \
			>/dev/null 2>"$WORK/err" || rc=$?
		[ "$rc" -le 1 ] || die "$what on $n shards failed ($rc): $(tail -3 "$WORK/err")"
		tail -1 "$WORK/time"
	done | awk '{ print $1, $2 + $3, $4 }' | sort -n -k2 | sed -n 2p
}

declare -A CPU KB
printf '%-9s %-8s %8s %8s %10s\n' what shards wall_s cpu_s peak_MB
for n in "${SIZES[@]}"; do
	d=$WORK/$n
	[ -f "$d/manifest.json" ] || "$PYTHON" "$GEN" "$n" "$d"
	for what in manifest verify status; do
		read -r wall cpu kb < <(run "$n" "$what" "$CHUTE" "$what" "$d")
		CPU[$what.$n]=$cpu
		KB[$what.$n]=$kb
		awk -v w="$what" -v n="$n" -v wall="$wall" -v cpu="$cpu" -v kb="$kb" \
			'BEGIN { printf "%-9s %-8d %8.2f %8.2f %10.1f\n",
				 w, n, wall, cpu, kb / 1024 }'
	done
done
echo
echo "between sizes: growth of CPU time (and what n log n would give), peak bytes a shard"
prev=
for n in "${SIZES[@]}"; do
	if [ -n "$prev" ]; then
		for what in manifest verify status; do
			awk -v w="$what" -v a="$prev" -v b="$n" \
				-v ca="${CPU[$what.$prev]}" -v cb="${CPU[$what.$n]}" \
				-v ka="${KB[$what.$prev]}" -v kb="${KB[$what.$n]}" \
				'BEGIN { printf "%-9s %7d -> %-7d cpu x%6.2f (n log n: x%.2f)  %5.0f B/shard\n",
					 w, a, b, (ca > 0 ? cb / ca : 0),
					 b * log(b) / (a * log(a)),
					 (kb - ka) * 1024 / (b - a) }'
		done
	fi
	prev=$n
done
