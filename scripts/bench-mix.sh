#!/bin/bash
# bench-mix.sh CHUTE_BINARY - what mixing costs: `chute stream A B C --mix`
# (3 datasets, equal weights) against `chute stream U`, U the union of the
# same samples packed as one dataset, both one epoch of the same samples,
# globally shuffled, into /dev/null.  The target (issue 35): the mix takes
# at most 1.1x the union's time.  Warm page cache, median of 3 rounds, the
# two taking turns within each round.  A benchmark reports, it does not
# judge: exit 0 unless a command fails.
#
# Data (built once, in ${BENCH_DIR:-/tmp/chute-bench}/mix): 3 x N small
# text samples (N=${MIX_SAMPLES:-200000}, about 60 bytes each, in tar
# files), packed as a, b, c and together as u.
set -euo pipefail

usage() { echo "usage: bench-mix.sh CHUTE_BINARY" >&2; exit 2; }
if [ $# -ne 1 ] || [ ! -x "$1" ]; then usage; fi
CHUTE=$(realpath "$1")
PYTHON=${PYTHON:-/usr/bin/python3}
N=${MIX_SAMPLES:-200000}
WORK=${BENCH_DIR:-/tmp/chute-bench}/mix
BATCH=256 RUNS=3

die() { echo "bench-mix: $*" >&2; exit 2; }
mkdir -p "$WORK"
cd "$WORK"

# --- data -----------------------------------------------------------------

if [ ! -f "made-$N" ]; then
	rm -rf a b c u ./*.tar made-*
	"$PYTHON" - "$N" <<'EOF' || die "cannot make the tar files"
import io, random, sys, tarfile
n = int(sys.argv[1])
for name in "abc":
    rng = random.Random(name)
    with tarfile.open(name + ".tar", "w") as t:
        for i in range(n):
            for field, data in (
                    ("txt", ("%s sample %d %s\n" % (name, i, "x" *
                             rng.randrange(20, 60))).encode()),
                    ("cls", b"%d\n" % rng.randrange(10))):
                info = tarfile.TarInfo("%s%07d.%s" % (name, i, field))
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
EOF
	for d in a b c; do
		"$CHUTE" pack -q "$d.tar" -o "$d" >/dev/null || die "pack $d"
	done
	"$CHUTE" pack -q a.tar b.tar c.tar -o u >/dev/null || die "pack u"
	touch "made-$N"
fi

# --- timing ---------------------------------------------------------------

# seconds CMD...: wall time of CMD, its output thrown away.
seconds() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null || die "failed: $*"
	t1=$(date +%s.%N)
	awk "BEGIN { printf \"%.3f\", $t1 - $t0 }"
}

mix=() union=()
for _ in $(seq "$RUNS"); do
	mix+=("$(seconds "$CHUTE" stream a b c --mix 'a=1,b=1,c=1' -b "$BATCH" \
		-q -o /dev/null)")
	union+=("$(seconds "$CHUTE" stream u -b "$BATCH" -q -o /dev/null)")
done
median() { printf '%s\n' "$@" | sort -g | sed -n "$(($# / 2 + 1))p"; }
m=$(median "${mix[@]}") u=$(median "${union[@]}")
samples=$((3 * N))
printf 'bench-mix: %s, %d samples a stream, batches of %d, median of %d\n' \
	"$("$CHUTE" --version)" "$samples" "$BATCH" "$RUNS"
printf '  union, one dataset     %6.3f s  (%s)\n' "$u" "${union[*]}"
printf '  mix of 3 datasets      %6.3f s  (%s)\n' "$m" "${mix[*]}"
awk "BEGIN { r = $m / $u; printf \"  mix / union            %6.2fx (target <= 1.10: %s)\n\", r, r <= 1.10 ? \"met\" : \"NOT met\" }"
