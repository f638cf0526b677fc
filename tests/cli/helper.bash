# helper.bash - shared setup for the chute CLI tests.
#
# Every .bats file does `load helper`.  Tests run in their own temporary
# folder ($BATS_TEST_TMPDIR) and call `chute` from $PATH, which starts with
# the folder of $CHUTE_BIN (build/chute unless the caller says otherwise, so
# that the sanitizer build can run the same suite).

bats_require_minimum_version 1.5.0

# What each library's load.bash sources, a `$(dirname ...)` per file
# (17 processes in all), sourced directly: bats sources this helper again
# for every test, and those processes were about half of an empty test's
# 0.4 s of CPU.  The files only define functions: their order is free.
for _lib in /usr/lib/bats/bats-support/src/*.bash \
	/usr/lib/bats/bats-assert/src/*.bash /usr/lib/bats/bats-file/src/*.bash; do
	# shellcheck disable=SC1090 # a library of bats
	source "$_lib"
done
unset _lib

case $BATS_TEST_DIRNAME in
/*/tests/cli) REPO_ROOT=${BATS_TEST_DIRNAME%/tests/cli} ;;
*) REPO_ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)" ;;
esac

CHUTE_BIN="${CHUTE_BIN:-$REPO_ROOT/build/chute}"
# A relative CHUTE_BIN means relative to where bats was started; make it
# absolute before the tests cd away.
case $CHUTE_BIN in
/*) ;;
*) CHUTE_BIN="$PWD/$CHUTE_BIN" ;;
esac
export CHUTE_BIN
PATH="${CHUTE_BIN%/*}:$PATH"
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
# A helper whose Python needs only the standard library runs `$PYTHON -S`:
# without the site module (Debian's dist-packages and their .pth files) a
# start costs ~45 ms of CPU instead of ~65, and the tests start thousands.

# chute pack packs one part when it runs in a Slurm array or a Kubernetes
# Indexed Job: tests run there too must see a plain machine.
unset SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_COUNT \
	SLURM_ARRAY_TASK_MAX SLURM_ARRAY_TASK_STEP JOB_COMPLETION_INDEX

# S3 tests see only the AWS configuration they set up, never the files,
# profile or container endpoint of whoever runs them.
export AWS_SHARED_CREDENTIALS_FILE=/nonexistent/aws/credentials \
	AWS_CONFIG_FILE=/nonexistent/aws/config
unset AWS_PROFILE AWS_CONTAINER_CREDENTIALS_FULL_URI \
	AWS_CONTAINER_CREDENTIALS_RELATIVE_URI \
	AWS_CONTAINER_AUTHORIZATION_TOKEN AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE

# Called by each file's setup(): a fresh folder per test, and a clear
# failure when the binary is missing instead of 127 everywhere.
chute_setup() {
	if [ ! -x "$CHUTE_BIN" ]; then
		fail "chute binary not found at '$CHUTE_BIN' (run make first)"
	fi
	cd "$BATS_TEST_TMPDIR" || fail "cannot cd to $BATS_TEST_TMPDIR"
	# the user's named remotes (chute remote --user) stay out of tests
	export XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/.config"
}

setup() {
	chute_setup
}

# cached MAKER DIR ARGS...: fills DIR as `MAKER DIR ARGS...` would, MAKER
# a deterministic fixture maker (its arguments alone decide what it
# writes): the first call of a test file with these arguments runs it into
# a folder of $BATS_FILE_TMPDIR, every call copies that.  A copy instead of
# a Python process for every test; each test still gets its own files.
cached() {
	local maker=$1 dir=$2
	shift 2
	local key="$maker $*"
	local made="$BATS_FILE_TMPDIR/cached/${key//[^A-Za-z0-9._-]/_}"
	if [ ! -d "$made" ]; then
		rm -rf "$made.tmp" && mkdir -p "$made.tmp" || return 1
		"$maker" "$made.tmp/d" "$@" || return 1
		mv "$made.tmp" "$made" || return 1
	fi
	mkdir -p "$dir" && cp -a "$made/d/." "$dir/"
}

# per_file NAME CMD...: whether CMD succeeds, CMD run only the first time
# a test file asks NAME (its setup_file included): for questions that cost
# seconds and whose answer cannot change meanwhile, such as whether Python
# imports torch (2 s of CPU).
per_file() {
	local answer="$BATS_FILE_TMPDIR/per-file-$1" status
	shift
	if [ ! -e "$answer" ]; then
		if "$@"; then echo 0; else echo 1; fi >"$answer"
	fi
	read -r status <"$answer"
	[ "$status" = 0 ]
}

# pyfork_start MODULE...: in setup_file, a server (tests/cli/pyfork.py)
# that imports each MODULE once, with the file's environment (PYTHONPATH
# included); "${PYFORK[@]}" ARGS... then runs `$PYTHON ARGS...` forked from
# it: 25 ms instead of importing torch again (2.4 s of CPU).  The same
# folder, environment, stdin, stdout, stderr and exit status as
# `$PYTHON ARGS...`, which runs instead when the server is not there or
# the PYTHON* variables changed.  pyfork_stop in teardown_file.
PYFORK=("$PYTHON" -I -S "$BATS_TEST_DIRNAME/pyfork.py" run
	"${BATS_FILE_TMPDIR:-/nonexistent}/pyfork.sock" "$PYTHON")
pyfork_start() {
	rm -f "$BATS_FILE_TMPDIR/pyfork.sock"
	"$PYTHON" "$BATS_TEST_DIRNAME/pyfork.py" serve \
		"$BATS_FILE_TMPDIR/pyfork.sock" "$@" </dev/null \
		>"$BATS_FILE_TMPDIR/pyfork.log" 2>&1 3>&- &
	echo $! >"$BATS_FILE_TMPDIR/pyfork.pid"
}
pyfork_stop() {
	local pid
	read -r pid <"$BATS_FILE_TMPDIR/pyfork.pid" && kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

# normal_pass_only WHERE: skips the rest of this test in the sanitizer pass
# of scripts/run-tests.sh (CHUTE_TEST_PASS=cli-san), for a test that
# repeats, with another remote, C that the sanitizer pass runs elsewhere:
# WHERE names the tests that run it.  The normal pass runs it whole.
normal_pass_only() {
	[ "${CHUTE_TEST_PASS:-}" != cli-san ] ||
		skip "in the sanitizer pass its C runs in $1"
}

# mkfixture DIR: a small deterministic folder of samples (20 samples of 1-3
# fields, nested folders, dotted field names), from scripts/gen-data.py.
mkfixture() {
	cached _mkfixture "$1"
}
_mkfixture() {
	"$PYTHON" "$REPO_ROOT/scripts/gen-data.py" mixed "$1" --seed 1 >/dev/null ||
		fail "scripts/gen-data.py mixed $1 failed"
}

# flip_byte FILE OFFSET: xor one byte with 0x01 (OFFSET < 0 counts from the end).
flip_byte() {
	"$PYTHON" -S - "$1" "$2" <<'EOF' || fail "cannot flip byte $2 of $1"
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

# random_files DIR N SIZE SEED: files DIR/s0.bin ... of SIZE seeded random
# bytes (incompressible: packed into raw blocks).
random_files() {
	mkdir -p "$1"
	"$PYTHON" - "$@" <<'EOF' || fail "cannot write random files in $1"
import random, sys
d, n, size, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
r = random.Random(seed)
for i in range(n):
    open("%s/s%d.bin" % (d, i), "wb").write(r.randbytes(size))
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
	"$PYTHON" -S -c '
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
r = eval(sys.argv[2])
print(r if not isinstance(r, (list, dict)) else json.dumps(r, sort_keys=True))
' "$1" "$2"
}

# sample_hashes DS: "KEY HASH" per sample, sorted, from `chute ls --json`.
sample_hashes() {
	chute ls --json "$1" | "$PYTHON" -S -c '
import json, sys
rows = sorted((o["key"], o["hash"]) for o in map(json.loads, sys.stdin))
for k, h in rows:
    print(k, h)
' || fail "chute ls --json $1 failed"
}

# content_hashes DS: the sorted per-sample hashes alone (keys may differ).
content_hashes() {
	chute ls --json "$1" | "$PYTHON" -S -c '
import json, sys
for h in sorted(json.loads(l)["hash"] for l in sys.stdin):
    print(h)
' || fail "chute ls --json $1 failed"
}

# shard_layout SHARD: prints, from the footer and the index (an independent
# reader of man/chute-shard.5), lines "index OFFSET SIZE", "page P OFFSET
# STORED_SIZE" for a paged index, and "block B OFFSET STORED_SIZE".
shard_layout() {
	PYTHONPATH="$BATS_TEST_DIRNAME" "$PYTHON" -S - "$1" <<'EOF' || fail "cannot read the layout of $1"
import struct, sys
from shard_index import footer, pages, decoded_index
data = open(sys.argv[1], "rb").read()
ioff, isize, _raw, _h, _n, nblocks, _codec = footer(data)
index = decoded_index(data)
print("index", ioff, isize)
for p, at, n in pages(data):
    print("page", p, at, n)
for b in range(nblocks):
    off, stored = struct.unpack_from("<QQ", index, 64 + 40 * b)
    print("block", b, off, stored)
EOF
}

# block_middle SHARD B: byte offset of the middle of block B.
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

# wait_locked PATH: until another process holds flock(PATH), as a
# background `flock PATH sleep 30 &` soon does.
wait_locked() {
	local i
	for i in $(seq 200); do
		flock -n "$1" true || return 0
		sleep 0.05
	done
	fail "nothing took the lock on $1"
}
# pack_swapped DS: DS/ packed from 200 samples of the same bytes (keys
# k000 to k199) in four shards of one size, then shard 0 copied over
# shard 1: a substitution that neither size nor sample count can tell.
pack_swapped() {
	local i s="$1/shards/$1"
	mkdir -p same
	for i in $(seq 0 199); do
		printf 'same\n' >"same/k$(printf %03d "$i").txt"
	done
	chute pack -q -s 50s -o "$1" same >/dev/null || fail "chute pack failed"
	[ "$(stat -c %s "$s-000000.chs")" = "$(stat -c %s "$s-000001.chs")" ] ||
		fail "the fixture's shards differ in size"
	cp "$s-000000.chs" "$s-000001.chs"
}

# edit_manifest DS STATEMENTS: runs Python STATEMENTS on `m`, the parsed
# DS/manifest.json, and writes it back; with `reid = True` among them the
# id is recomputed (an older chute's manifest), else kept (a hand edit).
edit_manifest() {
	PYTHONPATH="$REPO_ROOT/python" "$PYTHON" - "$1/manifest.json" "$2" <<'EOF' || fail "cannot edit $1/manifest.json"
import json, re, sys
import chute, xxhash
path = sys.argv[1]
m = json.load(open(path))
reid = False
exec(sys.argv[2])
if reid:
    m["id"] = chute.manifest_id(m)
with open(path, "w") as f:
    json.dump(m, f, indent=2, sort_keys=True)
    f.write("\n")
EOF
}

# vouch_shard DS I: DS's manifest made to vouch for shard I as it is now
# (size, hash, seal, id): a shard damaged so that only its samples' own
# checks can tell.
vouch_shard() {
	edit_manifest "$1" 's = m["shards"]['"$2"']
d = open(path.rsplit("/", 1)[0] + "/" + s["path"], "rb").read()
m["shard_bytes"] += len(d) - s["bytes"]
s["bytes"], s["xxh3_128"] = len(d), xxhash.xxh3_128_hexdigest(d)
s["seal"] = xxhash.xxh3_128_hexdigest(d[:64] + d[-64:])
reid = True'
}

# AS_VERSION1: edit_manifest statements that make a manifest of format
# version 1, as chute wrote before shards had seals.
AS_VERSION1='m["format_version"] = 1
for s in m["shards"]:
    del s["seal"]
reid = True'

# on_terminal CMD...: runs CMD with standard output and standard error on
# a terminal (a pty, from util-linux script), as typed at a shell; exits
# as CMD did, what the terminal showed on stdout ("\r\n" line ends).
on_terminal() {
	script -qec "$(printf '%q ' "$@")" /dev/null </dev/null
}

# need_terminal: skips the test where on_terminal cannot work: a root
# without /dev/pts mounted (a bare chroot) has no pseudo-terminal to lend,
# and script's failure would be taken for chute's.
need_terminal() {
	script -qec true /dev/null </dev/null >/dev/null 2>&1 ||
		skip "script(1) cannot open a pseudo-terminal here (/dev/pts)"
}
