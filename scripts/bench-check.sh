#!/bin/bash
# bench-check.sh CHUTE_BINARY - `chute check` on 1,000,000 small samples,
# against `chute verify` (which reads only the indexes and hashes the
# files) and `cat SHARDS >/dev/null` (reading the bytes at all) on the same
# dataset, split with --val 0.05.  Seconds, samples/s, the ratios to the
# baselines, and peak RSS (/usr/bin/time -f %M).  `check --jobs 2` stands
# for the 2-core figure of issue 7 ("a few seconds"); `check --deep`
# against `verify --deep` shows what the other rules add to a deep read.
# Warm page cache, median of 3 runs each, the commands taking turns within
# each round so that load from elsewhere falls on all of them alike.  A
# benchmark reports, it does not judge: exit 0 unless a command fails
# (check's exit 1, a rule failing on this data, is a verdict, not a
# failure; what it printed is kept in the runs folder).
#
# Data (built once, cached in ${BENCH_DIR:-/tmp/chute-bench}/check; nothing
# else under BENCH_DIR is written): the samples of bench-stream.sh's
# stream/tiny-1000000.tar (one KEY.txt of 20-60 bytes each) when it has
# made it, else gen-data.py text (KEY.txt of 50-400 chars and KEY.cls, so
# that field-types and labels read every block); BENCH_CHECK_DATA=text
# forces the latter.  Shards of 65,536 samples, as bench-stream.sh packs.
set -euo pipefail

usage() { echo "usage: bench-check.sh CHUTE_BINARY" >&2; exit 2; }
if [ $# -ne 1 ] || [ ! -x "$1" ]; then usage; fi
CHUTE=$(realpath "$1")
PYTHON=${PYTHON:-/usr/bin/python3}
GEN=$(realpath "$(dirname "$0")/gen-data.py")
BENCH_DIR=${BENCH_DIR:-/tmp/chute-bench}
WORK=$BENCH_DIR/check
RUNS_DIR=$WORK/runs # what the timed runs printed, for a look afterwards
RUNS=3
N=1000000

die() { echo "bench-check: $*" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || die "'/usr/bin/time' is missing: apt-get install time"
"$CHUTE" check --help >/dev/null 2>&1 || die "$CHUTE has no check command"
mkdir -p "$WORK" "$RUNS_DIR"

# --- helpers --------------------------------------------------------------

# calc, median, sum_sizes, cached
# shellcheck source=scripts/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
VERSION=$(pack_version "$CHUTE")

# --- data, built once -----------------------------------------------------

TINY=$BENCH_DIR/stream/tiny-$N.tar
if [ "${BENCH_CHECK_DATA:-}" != text ] && [ -f "$TINY" ] &&
	[ "$(cat "$TINY.ok" 2>/dev/null)" = "tiny $N, seed 1" ]; then
	SRC=$TINY
	TAG=tiny
	SRC_PARAMS="bench-stream's tiny $N, seed 1"
	WHAT="one txt field of 20-60 bytes"
else
	SRC=$WORK/text-src
	TAG=text
	SRC_PARAMS="gen-data.py text $N, seed 1"
	WHAT="txt (50-400 bytes) and cls"
	gen_text() {
		echo "bench-check: generating $SRC_PARAMS in $SRC (once)"
		rm -rf "$SRC"
		"$PYTHON" "$GEN" text "$SRC" --count "$N" --seed 1 >/dev/null
	}
	cached "$SRC.ok" "$SRC_PARAMS" gen_text
fi

DS=$WORK/ds-$TAG
build_ds() {
	echo "bench-check: packing and splitting $SRC (once)"
	rm -rf "$DS"
	"$CHUTE" pack -q -s 65536s "$SRC" -o "$DS" -n check >/dev/null
	"$CHUTE" split "$DS" --val 0.05 >/dev/null
}
cached "$DS.ok" "$VERSION, 65536-sample shards, val 0.05, $SRC_PARAMS" build_ds

shards=("$DS"/shards/*.chs)
samples=$(awk -F'[:,]' '$1 ~ /^  "samples"/ { gsub(/ /, "", $2); print $2; exit }' "$DS/manifest.json")
[ "$samples" = "$N" ] || die "$DS holds '$samples' samples, expected $N"
chs_bytes=$(sum_sizes "${shards[@]}")

# --- measurements ---------------------------------------------------------

# cmd FUNC: sets C to the command line of FUNC, one of the commands
# compared; the check_* ones may exit 1 (a rule failed on this data).
cmd() {
	case $1 in
	check_all) C=("$CHUTE" check "$DS") ;;
	check_2) C=("$CHUTE" check --jobs 2 "$DS") ;;
	check_deep) C=("$CHUTE" check --deep "$DS") ;;
	verify) C=("$CHUTE" verify "$DS") ;;
	verify_deep) C=("$CHUTE" verify --deep "$DS") ;;
	cat_shards) C=(cat "${shards[@]}") ;;
	*) die "no command $1" ;;
	esac
}

# rounds FUNC...: RUNS rounds, each running every FUNC's command once under
# /usr/bin/time.  Sets T[FUNC] (median wall seconds) and RSS[FUNC] (largest
# peak RSS, KB); the command's stdout goes to $RUNS_DIR/FUNC.out, and its
# exit status, when 1 for a check, to $RUNS_DIR/FUNC.rc.
declare -A T RSS
rounds() {
	local f r t0 t1 rc kb C
	local -A times=()
	for f; do
		: >"$RUNS_DIR/$f.out"
		rm -f "$RUNS_DIR/$f.rc"
		RSS[$f]=0
	done
	for ((r = 0; r < RUNS; r++)); do
		for f; do
			cmd "$f"
			rc=0
			t0=$(date +%s.%N)
			/usr/bin/time -f %M -o "$RUNS_DIR/$f.rss" "${C[@]}" \
				>>"$RUNS_DIR/$f.out" 2>"$RUNS_DIR/$f.err" || rc=$?
			t1=$(date +%s.%N)
			case $f:$rc in
			*:0) ;;
			check_*:1) echo "$rc" >"$RUNS_DIR/$f.rc" ;;
			*) die "${C[*]} exited $rc: $(tail -3 "$RUNS_DIR/$f.err")" ;;
			esac
			times[$f]+=" $(calc "$t1 - $t0")"
			# a command that exits non-zero makes time print a line first
			kb=$(tail -1 "$RUNS_DIR/$f.rss")
			if ((kb > RSS[$f])); then RSS[$f]=$kb; fi
		done
	done
	# shellcheck disable=SC2086 # one time a word
	for f; do T[$f]=$(median ${times[$f]}); done
}

echo "bench-check: warming the page cache (${#shards[@]} shards, $chs_bytes bytes)"
cat "${shards[@]}" >/dev/null
echo "bench-check: check, verify, cat: $RUNS rounds"
rounds check_all check_2 verify cat_shards
echo "bench-check: check --deep, verify --deep: $RUNS rounds"
rounds check_deep verify_deep

# --- report ---------------------------------------------------------------

FMT='%-24s %8s %11s %11s %9s %14s\n'
secs() { calc "sprintf(\"%.3f\", ${T[$1]})"; }
rate() { calc "sprintf(\"%d\", $samples / ${T[$1]} + 0.5)"; }
ratio() { calc "sprintf(\"%.2f\", ${T[$1]} / ${T[$2]})"; }
# row WHAT FUNC [VERIFY]: FUNC's figures, its time over VERIFY's (verify or
# verify_deep) and over cat's.
row() {
	# shellcheck disable=SC2059 # FMT is the table's one format
	printf "$FMT" "$1" "$(secs "$2")" "$(rate "$2")" "${3:+$(ratio "$2" "$3")}" \
		"$(ratio "$2" cat_shards)" "${RSS[$2]}"
}

echo
echo "$VERSION, $(nproc) cores, $samples samples ($WHAT), ${#shards[@]} shards," \
	"$chs_bytes bytes, val 0.05; median of $RUNS, warm cache"
echo
# shellcheck disable=SC2059 # FMT is the table's one format
printf "$FMT" command seconds samples/s "x verify" "x cat" "peak RSS (KB)"
row "chute check" check_all verify
row "chute check --jobs 2" check_2 verify
row "chute verify" verify verify
row "cat shards >/dev/null" cat_shards
row "chute check --deep" check_deep verify_deep
row "chute verify --deep" verify_deep verify_deep
echo "(x verify: time over chute verify's, or over verify --deep's for the --deep rows)"
echo "check's peak RSS over verify's: $(calc "sprintf(\"%.1f\", (${RSS[check_all]} - ${RSS[verify]}) * 1024 / $samples)")" \
	"bytes a sample (see chute-check(1), MEMORY)"
for f in check_all check_2 check_deep; do
	if [ -f "$RUNS_DIR/$f.rc" ]; then
		echo "note: $f exited 1 (a rule failed on this data):"
		grep -E '^(FAIL|WARN) ' "$RUNS_DIR/$f.out" | sort -u | sed 's/^/    /'
	fi
done
