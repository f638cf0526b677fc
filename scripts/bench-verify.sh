#!/bin/bash
# bench-verify.sh CHUTE_BINARY - `chute verify` against `cat` of the same
# shards into /dev/null (issue 33: verify at most 1.25x cat), for one large
# shard and for many small ones; `verify --deep` stated against `zstd -d`
# of the same samples as one tar.zst (no target).  Warm page cache, median
# of RUNS rounds, the commands taking turns within each round.  A benchmark
# reports, it does not judge: exit 0 unless a command fails.
#
# Data (built once, in ${BENCH_DIR:-/tmp/chute-bench}/verify, about 800 MB):
# ${VERIFY_SAMPLES:-2400} incompressible 110,000-byte samples in one tar,
# packed as one shard (large) and as 2 MB shards (small, about 130).
set -euo pipefail

usage() { echo "usage: bench-verify.sh CHUTE_BINARY" >&2; exit 2; }
if [ $# -ne 1 ] || [ ! -x "$1" ]; then usage; fi
CHUTE=$(realpath "$1")
PYTHON=${PYTHON:-/usr/bin/python3}
N=${VERIFY_SAMPLES:-2400}
WORK=${BENCH_DIR:-/tmp/chute-bench}/verify
RUNS=${RUNS:-5}
RUNS_DIR=$WORK/runs

die() { echo "bench-verify: $*" >&2; exit 2; }
command -v zstd >/dev/null ||
	die "'zstd' is missing: run scripts/install-deps.sh"
# shellcheck source=scripts/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
mkdir -p "$WORK" "$RUNS_DIR"
cd "$WORK"

# --- data -----------------------------------------------------------------

make_data() {
	rm -rf large small data.tar data.tar.zst
	"$PYTHON" - "$N" <<'EOF' || die "cannot make the tar file"
import io, random, sys, tarfile
rng = random.Random(1)
with tarfile.open("data.tar", "w") as t:
    for i in range(int(sys.argv[1])):
        data = rng.randbytes(110000)
        info = tarfile.TarInfo("s%07d.bin" % i)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
EOF
	"$CHUTE" pack -q -s 1G data.tar -o large >/dev/null || die "pack large"
	"$CHUTE" pack -q -s 2M data.tar -o small >/dev/null || die "pack small"
	zstd -q -3 -T0 data.tar -o data.tar.zst || die "zstd"
	rm -f data.tar
}
cached made "$N $(pack_version "$CHUTE")" make_data

# --- timing ---------------------------------------------------------------

verify_large() { "$CHUTE" verify -q large >/dev/null || die "verify large"; }
cat_large() { cat large/shards/*.chs >/dev/null || die "cat large"; }
verify_small() { "$CHUTE" verify -q small >/dev/null || die "verify small"; }
cat_small() { cat small/shards/*.chs >/dev/null || die "cat small"; }
deep_large() { "$CHUTE" verify -q --deep large >/dev/null || die "deep"; }
zstd_d() { zstd -q -d -c data.tar.zst >/dev/null || die "zstd -d"; }

cat large/shards/*.chs small/shards/*.chs data.tar.zst >/dev/null # warm
rounds verify_large cat_large verify_small cat_small deep_large zstd_d

goal() {
	local r
	r=$(ratio "$1" "$2")
	printf '  %-24s %6.2fx (target <= 1.25: %s)\n' "$3" "$r" \
		"$(calc "$r <= 1.25 ? \"met\" : \"not met\"")"
}
ms() { printf '  %-24s %7.1f ms\n' "$1" "$(calc "$2 * 1000")"; }
printf 'bench-verify: %s, %d samples of 110,000 bytes, median of %d\n' \
	"$("$CHUTE" --version)" "$N" "$RUNS"
printf '  large: %d shard, %d MB; small: %d shards\n' \
	"$(find large/shards -name '*.chs' | wc -l)" \
	"$(($(sum_sizes large/shards/*.chs) / 1000000))" \
	"$(find small/shards -name '*.chs' | wc -l)"
ms "verify, one large shard" "${T[verify_large]}"
ms "cat, one large shard" "${T[cat_large]}"
goal "${T[verify_large]}" "${T[cat_large]}" "verify / cat, large"
ms "verify, small shards" "${T[verify_small]}"
ms "cat, small shards" "${T[cat_small]}"
goal "${T[verify_small]}" "${T[cat_small]}" "verify / cat, small"
ms "verify --deep, large" "${T[deep_large]}"
ms "zstd -d, same samples" "${T[zstd_d]}"
printf '  %-24s %6.2fx (stated)\n' "verify --deep / zstd -d" \
	"$(ratio "${T[deep_large]}" "${T[zstd_d]}")"
