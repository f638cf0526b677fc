#!/bin/bash
# bench-verify.sh CHUTE_BINARY - `chute verify` against `cat` of the same
# shards into /dev/null (issue 33: verify at most 1.25x cat), for one large
# shard and for many small ones; `verify --deep` stated against `zstd -d`
# of the same samples as one tar.zst (no target).  Then what else reads
# shards, stated against a baseline run in the same rounds (no target):
# `chute export` of the large shard against `cat` of it into a file that
# is then synced (both write and sync the same bytes); `chute cat` of
# CAT_SAMPLES random samples (each read alone from its raw block, checked
# by its own hash) against `chute cat` of one, their difference per
# sample; verify and `verify --deep` of the large shard on all cores
# against --jobs 1 (the file hash is one XXH3 stream: one core).
# BEFORE=OTHER_CHUTE runs export and cat of that binary too (before and
# after a change).  Warm page cache, median of RUNS rounds, the commands
# taking turns within each round.  A benchmark reports, it does not judge:
# exit 0 unless a command fails.
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
CAT_SAMPLES=${CAT_SAMPLES:-200}
BEFORE=${BEFORE:+$(realpath "$BEFORE")}

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

# the readers: export, cat of random samples, one shard on all cores
export_large() {
	rm -rf exported
	"${1:-$CHUTE}" export -q large -o exported >/dev/null || die "export"
}
export_before() { export_large "$BEFORE"; }
cat_to_file() {
	rm -rf exported && mkdir exported
	{ cat large/shards/*.chs >exported/large.tmp &&
		sync exported/large.tmp; } || die "cat to a file"
}
KEYS=$("$PYTHON" -c 'import random, sys
r = random.Random(7)
print(" ".join("s%07d" % r.randrange(int(sys.argv[1])) for _ in range(int(sys.argv[2]))))' "$N" "$CAT_SAMPLES")
cat_many() {
	# shellcheck disable=SC2086 # one key a word
	"${1:-$CHUTE}" cat large $KEYS >/dev/null || die "cat samples"
}
cat_many_before() { cat_many "$BEFORE"; }
cat_one() { "$CHUTE" cat large s0000000 >/dev/null || die "cat one"; }
verify_one_job() { "$CHUTE" verify -q -j 1 large >/dev/null || die "verify -j 1"; }
deep_one_job() { "$CHUTE" verify -q -j 1 --deep large >/dev/null || die "deep -j 1"; }

cat large/shards/*.chs small/shards/*.chs data.tar.zst >/dev/null # warm
rounds verify_large cat_large verify_small cat_small deep_large zstd_d \
	export_large cat_to_file cat_many cat_one verify_one_job deep_one_job \
	${BEFORE:+export_before cat_many_before}
rm -rf exported

goal() {
	local r
	r=$(ratio "$1" "$2")
	printf '  %-24s %6.2fx (target <= 1.25: %s)\n' "$3" "$r" \
		"$(calc "$r <= 1.25 ? \"met\" : \"not met\"")"
}
ms() { printf '  %-24s %7.1f ms\n' "$1" "$(calc "$2 * 1000")"; }
stated() { printf '  %-24s %6.2fx (stated)\n' "$1" "$(ratio "$2" "$3")"; }
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
ms "export, large" "${T[export_large]}"
ms "cat > file; sync" "${T[cat_to_file]}"
stated "export / cat > file" "${T[export_large]}" "${T[cat_to_file]}"
ms "cat, $CAT_SAMPLES samples" "${T[cat_many]}"
ms "cat, 1 sample" "${T[cat_one]}"
printf '  %-24s %7.1f us a sample (%d samples of 110,000 bytes)\n' "cat, the difference" \
	"$(calc "(${T[cat_many]} - ${T[cat_one]}) * 1e6 / ($CAT_SAMPLES - 1)")" \
	"$CAT_SAMPLES"
if [ -n "$BEFORE" ]; then
	ms "export, BEFORE" "${T[export_before]}"
	stated "export / BEFORE's" "${T[export_large]}" "${T[export_before]}"
	ms "cat, samples, BEFORE" "${T[cat_many_before]}"
	stated "cat / BEFORE's" "${T[cat_many]}" "${T[cat_many_before]}"
fi
ms "verify, large, -j 1" "${T[verify_one_job]}"
stated "verify -j $(nproc) / -j 1" "${T[verify_large]}" "${T[verify_one_job]}"
ms "verify --deep, -j 1" "${T[deep_one_job]}"
stated "--deep -j $(nproc) / -j 1" "${T[deep_large]}" "${T[deep_one_job]}"
