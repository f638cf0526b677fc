#!/bin/bash
# bench-pack.sh CHUTE_BINARY [--small] - pack and verify against the tools a
# user would otherwise reach for: `tar | zstd -3 -T0` for packing, `xxhsum
# -H2` and `cat` for reading the shards back.  Warm page cache, median of 3
# runs each.  A benchmark reports, it does not judge: exit 0 unless a
# command fails.
#
# Data (generated once, cached in ${BENCH_DIR:-/tmp/chute-bench}): about
# 1 GB, 8,000 incompressible ~110 KB "jpg" files in 8 classes plus 500,000
# small text samples (1.0M files).  --small divides the counts by 20.
set -euo pipefail

usage() { echo "usage: bench-pack.sh CHUTE_BINARY [--small]" >&2; exit 2; }
if [ $# -lt 1 ] || [ ! -x "$1" ]; then usage; fi
CHUTE=$(realpath "$1")
SCALE=1 TAG=full
case ${2-} in
"") ;;
--small) SCALE=20 TAG=small ;;
*) usage ;;
esac
PYTHON=${PYTHON:-python3}
GEN=$(realpath "$(dirname "$0")/gen-data.py")
BENCH_DIR=${BENCH_DIR:-/tmp/chute-bench}
RUNS=3
for tool in zstd xxhsum /usr/bin/time; do
	command -v "$tool" >/dev/null ||
		{ echo "bench-pack: '$tool' is missing: run scripts/install-deps.sh" >&2; exit 2; }
done

# --- data, generated once -------------------------------------------------

DATA=$BENCH_DIR/data-$TAG
OUT=$BENCH_DIR/out-$TAG
PARAMS="images $((8000 / SCALE)) x 110000 in 8 classes, text $((500000 / SCALE)), seed 1"
# The stamp is written last, so an interrupted generation is redone.
if [ "$(cat "$DATA.ok" 2>/dev/null)" != "$PARAMS" ]; then
	echo "bench-pack: generating $PARAMS in $DATA (once)"
	rm -rf "$DATA" "$DATA.ok"
	"$PYTHON" "$GEN" images "$DATA/images" --count $((8000 / SCALE)) --size 110000 \
		--classes 8 --with-cls --seed 1
	"$PYTHON" "$GEN" text "$DATA/text" --count $((500000 / SCALE)) --seed 1
	echo "$PARAMS" >"$DATA.ok"
fi
mkdir -p "$OUT"

# --- helpers --------------------------------------------------------------

# calc, median, sum_sizes, cached
# shellcheck source=scripts/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"

# timed SETUP CMD...: runs the function SETUP (untimed) then CMD, RUNS times;
# sets T (the median wall time in seconds) and RSS (the largest peak RSS in
# KB).  Setups sync so one run's writeback does not land in the next.
timed() {
	local setup=$1 times=() t0 t1 r i
	shift
	RSS=0
	for ((i = 0; i < RUNS; i++)); do
		"$setup"
		t0=$(date +%s.%N)
		/usr/bin/time -v -o "$OUT/time.txt" "$@" >/dev/null
		t1=$(date +%s.%N)
		times+=("$(calc "$t1 - $t0")")
		r=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$OUT/time.txt")
		if ((r > RSS)); then RSS=$r; fi
	done
	T=$(printf '%s\n' "${times[@]}" | sort -g | sed -n "$((RUNS / 2 + 1))p")
}

# row WHAT CHUTE REFERENCE RATIO OP TARGET: one line of the table; OP and
# TARGET empty for a line that only informs.
row() {
	local verdict=info
	if [ -n "$5" ]; then
		verdict=$(calc "($4 $5 $6) ? \"PASS\" : \"MISS\"")
	fi
	printf '%-28s %14s %22s %7s %8s  %s\n' "$1" "$2" "$3" "$4" "${5:+$5 $6}" "$verdict"
}

# --- measurements ---------------------------------------------------------

nfiles=$(find "$DATA" -type f | wc -l)
echo "bench-pack: warming the page cache ($nfiles files)"
find "$DATA" -type f -print0 | xargs -0 cat >/dev/null
data_bytes=$(find "$DATA" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%d", s }')

echo "bench-pack: pack, $RUNS runs each"
clean_ds() { rm -rf "$OUT/ds"; sync; }
clean_tar() { rm -f "$OUT/data.tar.zst"; sync; }
timed clean_ds "$CHUTE" pack -q "$DATA" -o "$OUT/ds"
t_pack=$T rss_pack=$RSS
# shellcheck disable=SC2016 # expanded by the inner bash
timed clean_tar bash -c \
	'tar -C "$1" -cf - "$2" | zstd -q -3 -T0 >"$3"' _ "$(dirname "$DATA")" "$(basename "$DATA")" \
	"$OUT/data.tar.zst"
t_tar=$T

shards=("$OUT"/ds/shards/*.chs)
chs_bytes=$(sum_sizes "${shards[@]}")
tar_bytes=$(sum_sizes "$OUT/data.tar.zst")

echo "bench-pack: verify, $RUNS runs each"
cat "${shards[@]}" >/dev/null
timed true "$CHUTE" verify "$OUT/ds"
t_verify=$T rss_verify=$RSS
timed true "$CHUTE" verify --deep "$OUT/ds"
t_deep=$T
timed true xxhsum -q -H2 "${shards[@]}" # -q: no progress line on stderr
t_xxh=$T
timed true cat "${shards[@]}"
t_cat=$T

gbps() { calc "$chs_bytes / $1 / 1e9"; }
g_verify=$(gbps "$t_verify") g_deep=$(gbps "$t_deep") g_xxh=$(gbps "$t_xxh") g_cat=$(gbps "$t_cat")

echo
echo "$($CHUTE --version), $(nproc) cores, $nfiles files, $data_bytes bytes ($TAG set)," \
	"${#shards[@]} shards; median of $RUNS, warm cache"
echo
printf '%-28s %14s %22s %7s %8s  %s\n' measure chute reference ratio target result
row "pack time (s)" "$(calc "sprintf(\"%.2f\", $t_pack)")" \
	"tar|zstd -3 $(calc "sprintf(\"%.2f\", $t_tar)")" \
	"$(calc "sprintf(\"%.2f\", $t_pack / $t_tar)")" "<=" 1.00
row "pack output (bytes)" "$chs_bytes" "tar.zst $tar_bytes" \
	"$(calc "sprintf(\"%.3f\", $chs_bytes / $tar_bytes)")" "<=" 1.02
row "verify (GB/s)" "$(calc "sprintf(\"%.2f\", $g_verify)")" \
	"cat $(calc "sprintf(\"%.2f\", $g_cat)")" \
	"$(calc "sprintf(\"%.2f\", $g_verify / $g_cat)")" ">=" 0.80
row "verify (GB/s)" "$(calc "sprintf(\"%.2f\", $g_verify)")" \
	"xxhsum -H2 $(calc "sprintf(\"%.2f\", $g_xxh)")" \
	"$(calc "sprintf(\"%.2f\", $g_verify / $g_xxh)")" "" ""
row "verify --deep (GB/s)" "$(calc "sprintf(\"%.2f\", $g_deep)")" \
	"cat $(calc "sprintf(\"%.2f\", $g_cat)")" \
	"$(calc "sprintf(\"%.2f\", $g_deep / $g_cat)")" "" ""
row "peak RSS pack (KB)" "$rss_pack" "" "" "" ""
row "peak RSS verify (KB)" "$rss_verify" "" "" "" ""
