#!/usr/bin/env bats
# Data changed under chute's mappings (issue 38): a shard overwritten or
# truncated while chute stream reads its raw blocks in place, a --shm ring
# truncated or scribbled over by its consumer.  chute must end with exit 1
# or 2 and a message naming the file (cmd/fault.c turns SIGBUS into that),
# never a signal, and leave no ring in /dev/shm.  The many-runs loops are
# in sigbus_runs.py: about 15 s here, 40 s on the sanitizer build.

load helper

RUNS="$BATS_TEST_DIRNAME/sigbus_runs.py"

# _mkraw DIR [MIN]: DIR/ds, 64 samples of MIN to MIN + 3000 random bytes
# (default 2000: stored raw, read through a mapping) in one shard, and
# DIR/small, 16 of them (a smaller shard to copy over it).  Samples of
# 16 KiB and more are read alone (pread) instead.
_mkraw() (
	mkdir -p "$1" && cd "$1" && "$PYTHON" - "${2:-2000}" <<'EOF2' &&
import os, random, sys
low = int(sys.argv[1])
r = random.Random(3 if low == 2000 else 4)
os.makedirs("src"); os.makedirs("few")
for i in range(64):
    d = r.randbytes(low + r.randrange(3000))
    open("src/s%03d.bin" % i, "wb").write(d)
    if i < 16:
        open("few/s%03d.bin" % i, "wb").write(d)
EOF2
		chute pack -q src -o ds >/dev/null &&
		chute pack -q few -o small >/dev/null && rm -rf src few
)

setup() {
	chute_setup
	cached _mkraw . || fail "cannot make the datasets"
	RING="bats-sigbus-$$-$BATS_TEST_NUMBER"
	SEG="/dev/shm/chute-$RING"
}

teardown() {
	rm -f "$SEG"
}

assert_no_segment() {
	[ ! -e "$SEG" ] || fail "$SEG was left behind"
}

# hostile ACTION: chute streams into a ring of 1 slot, the consumer
# (Python, in the background) waits for frame 0, so that chute waits on
# a full ring, then does ACTION to the segment (fd, m: its descriptor and
# mapping) and sleeps until killed.  chute must exit 2 on its own with one
# line, the ring removed.
hostile() {
	timeout 20 chute stream -b 1 -e 0 --shm "$RING" --slots 1 ds \
		2>chute.err &
	local pid=$! rc=0
	SEG=$SEG timeout 30 "$PYTHON" -c '
import mmap, os, random, struct, sys, time
while True:
    try:
        fd = os.open(os.environ["SEG"], os.O_RDWR)
        if os.fstat(fd).st_size >= 4096 and os.pread(fd, 4, 0) == b"CHR1":
            break
        os.close(fd)
    except FileNotFoundError:
        pass
    time.sleep(0.01)
m = mmap.mmap(fd, 4096)
while struct.unpack_from("<I", m, 512)[0] != 1:
    time.sleep(0.01)
exec(sys.argv[1])
time.sleep(60)' "$1" &
	local consumer=$!
	wait "$pid" || rc=$?
	kill "$consumer" 2>/dev/null || true
	wait "$consumer" 2>/dev/null || true
	[ "$rc" = 2 ] || fail "chute exited $rc, expected 2: $(cat chute.err)"
	assert_no_segment
	run cat chute.err
	assert_one_line_error stream
}

@test "sigbus: 100 shards overwritten or truncated mid-stream: exit 1 naming the shard, never a signal" {
	run -0 timeout 120 "$PYTHON" "$RUNS" shards pipe 100 ds \
		small/shards/small-000000.chs 1
	assert_output --regexp "^pipe: 100 runs, exit status 1: 100 runs, 0 signals"
}

@test "sigbus: 100 shards of samples read alone (16 KB and more) changed mid-stream: exit 1 naming the shard" {
	_mkraw big 16384 || fail "cannot make the big datasets"
	cd big
	run -0 timeout 120 "$PYTHON" "$RUNS" shards pipe 100 ds \
		small/shards/small-000000.chs 4
	assert_output --regexp "^pipe: 100 runs, exit status 1: 100 runs, 0 signals"
}

@test "sigbus: the same through --shm: exit 1 naming the shard, no ring left" {
	run -0 timeout 120 "$PYTHON" "$RUNS" shards shm 100 ds \
		small/shards/small-000000.chs 2
	assert_output --regexp "^shm: 100 runs, exit status 1: 100 runs, 0 signals"
}

@test "sigbus: one run says which shard changed, relative to where chute started" {
	cp ds/shards/ds-000000.chs pristine.chs
	chute stream -q -b 8 -e 0 ds >/dev/null 2>chute.err &
	local pid=$! rc=0
	sleep 0.2
	truncate -s 100000 ds/shards/ds-000000.chs
	wait "$pid" || rc=$?
	[ "$rc" = 1 ] || fail "chute exited $rc, expected 1: $(cat chute.err)"
	run cat chute.err
	assert_output --regexp "^chute stream: 'ds/shards/ds-000000.chs' changed while it was read \(truncated or overwritten\): its byte [0-9]+ is gone"
}

@test "sigbus: 99 consumers truncate the ring mid-stream (to 0, 4096, half): exit 2 naming the ring, ring removed" {
	run -0 timeout 120 "$PYTHON" "$RUNS" ring 99 ds 3
	assert_output --regexp "^ring: 99 runs, exit status 2: 99 runs, 0 signals"
}

@test "sigbus: a ring truncated to 0, 4096 or half while chute waits on it: exit 2 naming the ring, ring removed" {
	for size in 0 4096 'os.fstat(fd).st_size // 2'; do
		hostile "os.ftruncate(fd, $size)"
		assert_output --partial "ring '$RING'"
	done
}

@test "shm: random bytes over the header, closed set among them: exit 2 naming the magic, not a quiet exit 0" {
	for seed in 1 2 3; do
		hostile "r = random.Random($seed)
m[0:512] = r.randbytes(512)
struct.pack_into('<I', m, 44, 1)"
		assert_output "chute stream: the consumer of ring '$RING' overwrote its header (magic, byte 0): the stream stops"
	done
}

@test "shm: a bad magic alone, and closed with it: exit 2 naming the magic" {
	hostile "m[0:4] = b'XXXX'"
	assert_output "chute stream: the consumer of ring '$RING' overwrote its header (magic, byte 0): the stream stops"
	hostile "m[0:4] = b'CHR2'; struct.pack_into('<I', m, 44, 1)"
	assert_output "chute stream: the consumer of ring '$RING' overwrote its header (magic, byte 0): the stream stops"
}

@test "shm: slot_size rewritten with closed set: exit 2 naming slot_size" {
	hostile "struct.pack_into('<QI', m, 16, 1, 0); struct.pack_into('<I', m, 44, 7)"
	assert_output "chute stream: the consumer of ring '$RING' overwrote its header (slot_size, byte 16): the stream stops"
}

@test "sigbus: chute.Stream raises StreamError naming a shard overwritten mid-pass" {
	run -0 env PYTHONPATH="$REPO_ROOT/python" timeout 60 "$PYTHON" -c '
import shutil, sys
import chute
s = chute.Stream("ds", batch_size=4, epochs=0, chute=sys.argv[1])
try:
    for i, b in enumerate(s):
        if i == 2:  # what cp does: truncate, then write
            shutil.copyfile("small/shards/small-000000.chs",
                            "ds/shards/ds-000000.chs")
        if i > 100000:
            sys.exit("no error after %d batches" % i)
except chute.StreamError as e:
    print("status", e.status)
    print(e)
' "$CHUTE_BIN"
	assert_line "status 1"
	assert_line --regexp "^chute stream failed \(exit 1\): chute stream: 'ds/shards/ds-000000.chs' changed while it was read"
}
