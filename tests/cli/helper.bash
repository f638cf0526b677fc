# helper.bash - shared setup for the chute CLI tests.
#
# Every .bats file does `load helper`.  Tests run in their own temporary
# folder ($BATS_TEST_TMPDIR) and call `chute` from $PATH, which starts with
# the folder of $CHUTE_BIN (build/chute unless the caller says otherwise, so
# that the sanitizer build can run the same suite).

bats_require_minimum_version 1.5.0

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'
load '/usr/lib/bats/bats-file/load'

REPO_ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"

CHUTE_BIN="${CHUTE_BIN:-$REPO_ROOT/build/chute}"
# A relative CHUTE_BIN means relative to where bats was started; make it
# absolute before the tests cd away.
case $CHUTE_BIN in
/*) ;;
*) CHUTE_BIN="$PWD/$CHUTE_BIN" ;;
esac
export CHUTE_BIN
PATH="$(dirname "$CHUTE_BIN"):$PATH"
export PATH

# Debian's python3 sees python3-numpy and python3-zstandard; the python3
# first on PATH may be another build that does not.
if [ -z "${PYTHON:-}" ]; then
	if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
		PYTHON=/usr/bin/python3
	else
		PYTHON=python3
	fi
fi
export PYTHON

# Called by each file's setup(): a fresh folder per test, and a clear
# failure when the binary is missing instead of 127 everywhere.
chute_setup() {
	if [ ! -x "$CHUTE_BIN" ]; then
		fail "chute binary not found at '$CHUTE_BIN' (run make first)"
	fi
	cd "$BATS_TEST_TMPDIR" || fail "cannot cd to $BATS_TEST_TMPDIR"
}

setup() {
	chute_setup
}

# mkfixture DIR: a small deterministic folder of samples (several keys,
# single- and multi-field samples, fields with dots, a subfolder).
mkfixture() {
	local dir=$1
	if [ -f "$REPO_ROOT/scripts/gen-data.py" ]; then
		"$PYTHON" "$REPO_ROOT/scripts/gen-data.py" mixed "$dir" --seed 1 >/dev/null ||
			fail "scripts/gen-data.py mixed $dir failed"
	else
		mkfixture_inline "$dir"
	fi
}

# The same kind of data, generated here (used until scripts/gen-data.py
# exists, and by tests that need to know the exact layout).
mkfixture_inline() {
	"$PYTHON" - "$1" <<'EOF' || fail "cannot generate fixture in $1"
import os, random, sys
root = sys.argv[1]
rng = random.Random(1)
def put(rel, data):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
for i in range(24):
    sub = ("cat", "dog", "fish")[i % 3]
    key = "%s/s%03d" % (sub, i)
    # binary, incompressible "image"
    put(key + ".jpg", bytes(rng.getrandbits(8) for _ in range(rng.randint(200, 3000))))
    # compressible text
    put(key + ".json", ('{"id": %d, "tags": [%s]}\n' % (i, ", ".join('"t%d"' % rng.randint(0, 9) for _ in range(rng.randint(1, 40))))).encode())
    if i % 4 == 0:
        put(key + ".seg.png", bytes(rng.getrandbits(2) for _ in range(rng.randint(50, 500))))
put("top.txt", b"a sample at the top level\n")
EOF
}

# flip_byte FILE OFFSET: xor one byte with 0x01 (OFFSET < 0 counts from the end).
flip_byte() {
	"$PYTHON" - "$1" "$2" <<'EOF' || fail "cannot flip byte $2 of $1"
import os, sys
path, off = sys.argv[1], int(sys.argv[2])
size = os.path.getsize(path)
if off < 0:
    off += size
assert 0 <= off < size, "offset %d outside %s (%d bytes)" % (off, path, size)
with open(path, "r+b") as f:
    f.seek(off)
    b = f.read(1)[0]
    f.seek(off)
    f.write(bytes([b ^ 1]))
EOF
}

# shard_of DS [N]: path of shard N (default the first) of dataset folder DS.
shard_of() {
	local n=${2:-0}
	local shards=("$1"/shards/*.chs)
	[ -e "${shards[$n]}" ] || fail "no shard $n in $1/shards"
	printf '%s\n' "${shards[$n]}"
}

# mjson DS EXPR: prints a Python expression over the parsed manifest `m`.
mjson() {
	"$PYTHON" -c '
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
r = eval(sys.argv[2])
print(r if not isinstance(r, (list, dict)) else json.dumps(r, sort_keys=True))
' "$1" "$2"
}

# sample_hashes DS: "KEY HASH" per sample, sorted, from `chute ls --json`.
sample_hashes() {
	chute ls --json "$1" | "$PYTHON" -c '
import json, sys
rows = sorted((o["key"], o["hash"]) for o in map(json.loads, sys.stdin))
for k, h in rows:
    print(k, h)
' || fail "chute ls --json $1 failed"
}

# content_hashes DS: the sorted per-sample hashes alone (keys may differ).
content_hashes() {
	chute ls --json "$1" | "$PYTHON" -c '
import json, sys
for h in sorted(json.loads(l)["hash"] for l in sys.stdin):
    print(h)
' || fail "chute ls --json $1 failed"
}

# shard_layout SHARD: prints, from the footer and the index (an independent
# reader of man/chute-shard.5), lines "index OFFSET SIZE" and
# "block B OFFSET STORED_SIZE".
shard_layout() {
	"$PYTHON" - "$1" <<'EOF' || fail "cannot read the layout of $1"
import struct, subprocess, sys
data = open(sys.argv[1], "rb").read()
foot = data[-64:]
ioff, isize, iraw, _ih, _n, nblocks, codec = struct.unpack_from("<QQQQQII", foot)
index = data[ioff:ioff + isize]
if codec == 1:
    try:
        import zstandard
        index = zstandard.ZstdDecompressor().decompress(index, max_output_size=iraw)
    except ImportError:
        index = subprocess.run(["zstd", "-dc"], input=index, stdout=subprocess.PIPE, check=True).stdout
print("index", ioff, isize)
for b in range(nblocks):
    off, stored = struct.unpack_from("<QQ", index, 64 + 40 * b)
    print("block", b, off, stored)
EOF
}

# block_offset SHARD B: byte offset of the middle of block B.
block_middle() {
	shard_layout "$1" | awk -v b="$2" '$1 == "block" && $2 == b { print $3 + int($4 / 2) }'
}

# assert_no_entries DIR: DIR exists and is empty (nothing half-written).
assert_no_entries() {
	local left
	left=$(ls -A "$1")
	[ -z "$left" ] || fail "expected '$1' to be empty, found: $left"
}

# assert_one_line_error CMD: the output of the last `run` is exactly one
# line starting with "chute CMD: ".
assert_one_line_error() {
	assert_equal "${#lines[@]}" 1
	assert_output --regexp "^chute $1: "
}
