#!/usr/bin/env bats
# chute stream --shm NAME: the frames of --format batch through a ring of
# slots in /dev/shm (chute-batch(5), SHARED-MEMORY RING), read by
# scripts/chute_batch.py (shm_frames) and by a C consumer built on
# include/chute_shm.h.  Every test checks that no segment is left behind.

load helper

READER="$REPO_ROOT/scripts/chute_batch.py"
export READER

setup() {
	chute_setup
	RING="bats-$$-$BATS_TEST_NUMBER"
	SEG="/dev/shm/chute-$RING"
	mkfixture src
	chute pack -q src -o ds
}

teardown() {
	rm -f "$SEG"
}

# consume [ARGS...]: chute_batch.py on the ring, frames copied to shm.out
consume() {
	timeout 30 "$PYTHON" "$READER" --shm "$RING" --timeout 20 \
		--copy-to shm.out "$@"
}

# py_consumer SCRIPT: Python with chute_batch importable and $RING set.
py_consumer() {
	RING=$RING PYTHONPATH="$REPO_ROOT/scripts" timeout 30 "$PYTHON" -c "$1"
}

# wait_chute STATUS PID: chute (started with 2>chute.err) exits STATUS.
wait_chute() {
	local rc=0
	wait "$2" || rc=$?
	[ "$rc" = "$1" ] ||
		fail "chute exited $rc, expected $1: $(cat chute.err 2>/dev/null)"
}

assert_no_segment() {
	[ ! -e "$SEG" ] || fail "$SEG was left behind"
}

# mkimages: 12 JPEGs of 40x30 to 51x52 with labels in img/, packed as
# imgds.
mkimages() {
	mkdir img
	"$PYTHON" - <<'EOF' || fail "cannot make images"
import random
from PIL import Image
random.seed(3)
for i in range(12):
    im = Image.new("RGB", (40 + i, 30 + 2 * i))
    im.putdata([tuple(random.randrange(256) for _ in range(3))
                for _ in range(im.width * im.height)])
    im.save("img/s%02d.jpg" % i, quality=90)
    open("img/s%02d.cls" % i, "w").write(str(i % 3))
EOF
	chute pack -q img -o imgds
}

@test "shm: the frames equal the pipe's byte for byte, ring of 1 slot and of 16" {
	chute stream -b 3 -e 2 ds >pipe.out
	for slots in 1 16; do
		chute stream -b 3 -e 2 --shm "$RING" --slots "$slots" ds &
		local pid=$!
		run -0 consume
		wait_chute 0 "$pid"
		cmp pipe.out shm.out || fail "--slots $slots: frames differ"
		assert_no_segment
	done
}

@test "shm: the same frames with transforms on" {
	chute stream --help | grep -q -- --transform ||
		skip "chute stream has no --transform yet"
	"$PYTHON" -c 'import PIL' 2>/dev/null || skip "no PIL for $PYTHON"
	mkimages
	local t='jpg: decode | random-resized-crop 24 | flip'
	chute stream -b 5 --seed 4 --transform "$t" imgds >pipe.out
	chute stream -b 5 --seed 4 --transform "$t" --shm "$RING" imgds &
	local pid=$!
	run -0 consume
	wait_chute 0 "$pid"
	cmp pipe.out shm.out || fail "frames differ with transforms"
	assert_no_segment
}

@test "shm: workers encode frames in the slots ahead: the same bytes, to a consumer that lags too" {
	"$PYTHON" -c 'import PIL' 2>/dev/null || skip "no PIL for $PYTHON"
	mkimages
	local t=(-b 2 -e 10 --seed 4 -p 6
		--transform 'jpg: decode | random-resized-crop 24 | flip')
	chute stream "${t[@]}" -w 1 imgds >pipe.out
	local w slots
	for w in 2 3; do
		for slots in 2 4; do
			chute stream "${t[@]}" -w "$w" --shm "$RING" --slots "$slots" imgds &
			local pid=$!
			run -0 py_consumer 'import os, time, chute_batch
with open("shm.out", "wb") as out:
    for fr in chute_batch.shm_frames(os.environ["RING"], 20):
        time.sleep(0.003)  # the workers run ahead of a slow reader
        out.write(fr.buffer)'
			wait_chute 0 "$pid"
			cmp pipe.out shm.out ||
				fail "-w $w --slots $slots: frames differ"
			assert_no_segment
		done
	done
}

@test "shm: the C consumer of chute_shm.h reads the same frames" {
	command -v cc >/dev/null || skip "no C compiler"
	cat >consumer.c <<'EOF'
#include "chute_shm.h" /* first: it asks for POSIX under -std=c99 */
#include <stdio.h>
int main(int argc, char **argv)
{
	struct chute_shm r;
	struct chute_shm_frame f;
	int rc;
	FILE *out = fopen(argv[2], "wb");
	(void)argc;
	if (chute_shm_open(&r, argv[1], 20000) < 0) {
		fprintf(stderr, "%s\n", r.error);
		return 1;
	}
	while ((rc = chute_shm_next(&r, &f)) > 0) {
		fwrite(f.data, 1, f.size, out);
		chute_shm_release(&r, &f);
	}
	if (rc < 0)
		fprintf(stderr, "%s\n", r.error);
	chute_shm_close(&r);
	fclose(out);
	return rc < 0;
}
EOF
	cc -std=c99 -Wall -Wextra -Werror -I"$REPO_ROOT/include" consumer.c -o consumer
	chute stream -b 4 -e 3 ds >pipe.out
	chute stream -b 4 -e 3 --shm "$RING" --slots 2 ds 2>chute.err &
	local pid=$!
	run -0 timeout 30 ./consumer "$RING" c.out
	wait_chute 0 "$pid"
	cmp pipe.out c.out || fail "the C consumer's frames differ"
	assert_no_segment
}

# waits_ran_out OLD: a Python consumer of the ring, as of this package
# (OLD 0) or as a consumer from before the wait words (OLD 1: no
# announcement, consumer_waits never set, slots freed by FUTEX_WAKE_OP),
# writing the frames to shm.out; prints its futex waits and how many of
# them ran out (200 ms with no wake).
waits_ran_out() {
	OLD=$1 py_consumer '
import os, chute_batch
import chute.shm as shm
if os.environ["OLD"] == "1":
    shm.SHM_CONSUMER_WAITS = 0
    shm._W_CONSUMER_WAITS = 81  # a reserved word chute does not read
    shm._PLAIN_RELEASE = False
waits, ran_out = 0, 0
wait = shm._Futex.wait
def counted(self, addr, value):
    global waits, ran_out
    out = wait(self, addr, value)
    waits, ran_out = waits + 1, ran_out + bool(out)
    return out
shm._Futex.wait = counted
ring = chute_batch.ShmRing(os.environ["RING"], 20)
words = ring._words
flags, announced = int(words[3]), int(words[80])
with open("shm.out", "wb") as f:
    for fr in ring:
        f.write(bytes(fr.buffer))
ring.close()
print(waits, ran_out, flags, announced)'
}

@test "shm: each side wakes the other only when it waits, and a consumer from before still gets woken" {
	chute stream -b 1 -e 16 ds >pipe.out
	for old in 0 1; do
		# one slot: the consumer waits for many of the 320 frames, unless
		# the scheduler runs chute the moment the consumer frees the slot
		# (a busy machine): then a wait is rare, and the run is tried again
		local try
		for try in 1 2 3; do
			chute stream -b 1 -e 16 --shm "$RING" --slots 1 ds \
				2>chute.err &
			local pid=$!
			run -0 waits_ran_out "$old"
			wait_chute 0 "$pid"
			cmp pipe.out shm.out || fail "consumer $old: the frames differ"
			assert_no_segment
			read -r waits ran_out flags announced <<<"$output"
			[ "$waits" -lt 5 ] || break
		done
		# chute keeps producer_waits (flag 2); ours announces
		# consumer_waits (word 80), the old one does not
		[ $((flags & 2)) = 2 ] || fail "flags $flags: no flag 2"
		assert_equal "$announced" $((1 - old))
		[ "$waits" -ge 5 ] ||
			fail "$waits waits in each of 3 runs: the test tests nothing"
		# (one could run out on a machine that stalls chute 200 ms)
		[ "$ran_out" -le 1 ] ||
			fail "consumer $old: $ran_out of $waits waits ran out"
	done
}

@test "shm: frames are views of the ring, released by with, release() or the next frame" {
	chute stream -b 2 -e 0 --shm "$RING" --slots 2 ds &
	local pid=$!
	run -0 py_consumer '
import os, numpy as np, chute_batch
ring = chute_batch.ShmRing(os.environ["RING"], 20)
lo, hi = ring.address, ring.address + ring.nbytes
it = iter(ring)
for n in range(6):
    fr = next(it)
    for values, offsets in fr.columns.values():
        assert lo <= values.ctypes.data < hi, "not a view of the ring"
    if n % 3 == 0:
        with fr:
            pass
    elif n % 3 == 1:
        fr.release()
print("ok")
it.close()
ring.close()'
	assert_output ok
	wait_chute 0 "$pid"
	assert_no_segment
}

@test "shm: a consumer that stops early ends chute quietly" {
	chute stream -b 1 -e 0 --shm "$RING" ds &
	local pid=$!
	run -0 consume --limit 7
	assert_equal "${#lines[@]}" 7
	run -0 timeout 10 tail --pid="$pid" -f /dev/null
	wait_chute 0 "$pid"
	assert_no_segment
}

@test "shm: a consumer killed mid-stream: chute exits 2 within seconds, ring removed" {
	chute stream -b 1 -e 0 --shm "$RING" ds 2>err &
	local pid=$!
	run -137 py_consumer '
import os, signal, chute_batch
for i, fr in enumerate(chute_batch.shm_frames(os.environ["RING"], 20)):
    if i == 5:
        os.kill(os.getpid(), signal.SIGKILL)'
	run -0 timeout 5 tail --pid="$pid" -f /dev/null
	wait_chute 2 "$pid"
	run cat err
	assert_output --regexp "^chute stream: the consumer of ring '$RING' \(pid [0-9]+\) died before the end of the stream$"
	assert_no_segment
}

# scribble CLAIM OFFSET VALUE [exit]: a hostile consumer in the
# background: it waits for frame 0 to be ready in slot 0, claims the ring
# with pid CLAIM ("self": its own), writes the u32 VALUE at OFFSET of the
# segment (chute-batch(5): nslots at 8, consumer_pid at 36, slot 0's state
# at 512), then exits with "exit", else sleeps until killed.  Its pid is
# in $SCRIBBLER.
scribble() {
	SEG=$SEG timeout 60 "$PYTHON" -c '
import mmap, os, struct, sys, time
claim, off, value = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
stay = sys.argv[4:] != ["exit"]
while True:
    try:
        fd = os.open(os.environ["SEG"], os.O_RDWR)
        if os.fstat(fd).st_size >= 4096 and os.pread(fd, 4, 0) == b"CHR1":
            break
        os.close(fd)
    except FileNotFoundError:
        pass
    time.sleep(0.02)
m = mmap.mmap(fd, 4096)
struct.pack_into("<I", m, 36, os.getpid() if claim == "self" else int(claim))
while struct.unpack_from("<I", m, 512)[0] != 1:
    time.sleep(0.01)
struct.pack_into("<I", m, off, value)
if stay:
    time.sleep(60)' "$@" &
	SCRIBBLER=$!
}

# hostile_stream CLAIM OFFSET VALUE [exit]: chute streams into a ring of 1 slot
# that scribble rewrites; chute must exit 2 on its own, the ring removed.
hostile_stream() {
	timeout 20 chute stream -b 1 -e 0 --shm "$RING" --slots 1 ds \
		2>chute.err &
	local pid=$!
	scribble "$@"
	wait_chute 2 "$pid"
	kill "$SCRIBBLER" 2>/dev/null || true
	wait "$SCRIBBLER" 2>/dev/null || true
	assert_no_segment
	run cat chute.err
	assert_one_line_error stream
}

@test "shm: a consumer that rewrites nslots ends its stream: exit 2, no crash, ring removed" {
	hostile_stream self 8 4294967295 exit
	assert_output "chute stream: the consumer of ring '$RING' overwrote its header (nslots, byte 8): the stream stops"
	hostile_stream self 8 4294967295
	assert_output "chute stream: the consumer of ring '$RING' overwrote its header (nslots, byte 8): the stream stops"
}

@test "shm: a consumer that rewrites slot_size or data_offset ends its stream: exit 2" {
	hostile_stream self 16 7
	assert_output --partial "overwrote its header (slot_size, byte 16)"
	hostile_stream self 28 1
	assert_output --partial "overwrote its header (data_offset, byte 24)"
}

@test "shm: a consumer that writes a slot state only chute sets ends its stream: exit 2" {
	hostile_stream self 512 7
	assert_output "chute stream: the consumer of ring '$RING' wrote state 7 into slot 0 (byte 512), which only chute sets: the stream stops"
}

@test "shm: a consumer that claims the ring with a pid no process has ends its stream: exit 2" {
	hostile_stream 4294967295 40 0
	assert_output "chute stream: the consumer of ring '$RING' wrote 4294967295 as its pid (byte 36), which is not a consumer's process id"
}

@test "shm: a hostile producer header: the Python consumer raises ShmError, no crash, no hang" {
	run -0 env RING="$RING" PYTHONPATH="$REPO_ROOT/python" timeout 30 \
		"$PYTHON" -c '
import os, struct, chute
from chute import shm
name = os.environ["RING"]
def ring(nslots=1, slot_size=4096, producer=1, state=0, seq=0, size=0):
    buf = bytearray(8192)
    struct.pack_into("<4sIIIQQIIIIQQ", buf, 0, b"CHR1", 1, nslots, 0,
                     slot_size, 4096, producer, 0, 0, 0, 0, 0)
    struct.pack_into("<IIQQ", buf, 512, state, 0, seq, size)
    with open(shm.ring_path(name), "wb") as f:
        f.write(buf)
for case in [dict(nslots=0), dict(nslots=2 ** 32 - 1),
             dict(slot_size=2 ** 63), dict(producer=0),
             dict(producer=2 ** 32 - 1), dict(state=9),
             dict(state=1, size=2 ** 63), dict(state=1, seq=5, size=64)]:
    ring(**case)
    try:
        with shm.ShmRing(name, 5) as r:
            r.next_frame()
        print("accepted", case)
    except chute.StreamError as e:
        pass
    os.unlink(shm.ring_path(name))'
	assert_output ""
}

@test "shm: chute killed: the consumer gets an error, not a hang, and removes the ring" {
	chute stream -b 1 -e 0 --shm "$RING" ds &
	local pid=$!
	run -1 py_consumer '
import os, signal, time, chute_batch
try:
    for i, fr in enumerate(chute_batch.shm_frames(os.environ["RING"], 20)):
        if i == 3:
            os.kill('"$pid"', signal.SIGKILL)
        time.sleep(0.01)
except chute_batch.ShmError as e:
    print(e)
    raise SystemExit(1)'
	assert_output --regexp "^ring '$RING': chute stream \(pid $pid\) died before the end of the stream$"
	wait_chute 137 "$pid"
	assert_no_segment
}

@test "shm: SIGINT and SIGTERM: chute exits 128+N, the consumer hears why, ring removed" {
	for sig in INT TERM; do
		# a background job starts with SIGINT ignored: restore it
		env --default-signal=INT chute stream -b 1 -e 0 --shm "$RING" ds &
		local pid=$!
		run -1 py_consumer '
import os, signal, time, chute_batch
try:
    for i, fr in enumerate(chute_batch.shm_frames(os.environ["RING"], 20)):
        if i == 3:
            os.kill('"$pid"', signal.SIG'"$sig"')
        time.sleep(0.01)
except chute_batch.ShmError as e:
    print(e)
    raise SystemExit(1)'
		assert_output "chute stream failed: interrupted"
		local want=143
		[ "$sig" = INT ] && want=130
		wait_chute "$want" "$pid"
		assert_no_segment
	done
}

@test "shm: chute lets its standard output go once the ring exists" {
	# no consumer: chute waits on the full ring while the pipe has ended
	chute stream -b 1 -e 0 --shm "$RING" ds 2>chute.err | {
		timeout 20 cat >/dev/null && [ -e "$SEG" ] && echo ended
	} >pipe.out &
	local i
	for i in $(seq 200); do [ -s pipe.out ] && break; sleep 0.05; done
	pkill -TERM -f -- "--shm $RING" || true
	wait
	assert_equal "$(cat pipe.out)" ended
	assert_no_segment
}

@test "shm: chute interrupted before any consumer came removes the ring" {
	chute stream -b 1 -e 0 --shm "$RING" ds 2>chute.err &
	local pid=$!
	for _ in $(seq 100); do [ -e "$SEG" ] && break; sleep 0.05; done
	assert_file_exists "$SEG"
	kill -TERM "$pid"
	wait_chute 143 "$pid"
	assert_no_segment
}

@test "shm: a frame larger than the slots is a clear error" {
	run -2 chute stream -b 20 --shm "$RING" --slot-size 4K ds
	assert_one_line_error stream
	assert_output --regexp "batch 0 of epoch 0 is [0-9]+ bytes, more than a slot of ring '$RING' \(4096 bytes\): give a larger --slot-size"
	assert_no_segment
}

@test "shm: a second consumer is refused with a message" {
	chute stream -b 1 -e 0 --shm "$RING" ds &
	local pid=$!
	run -0 py_consumer '
import os, subprocess, sys, chute_batch
ring = chute_batch.ShmRing(os.environ["RING"], 20)
second = subprocess.run([sys.executable, os.environ["READER"], "--shm",
                         os.environ["RING"], "--timeout", "5"],
                        capture_output=True, text=True)
print(second.returncode, second.stderr.strip())
ring.close()'
	assert_output --regexp "^1 chute_batch.py: ring '$RING' already has a consumer \(pid [0-9]+\): one consumer per ring$"
	wait_chute 0 "$pid"
	assert_no_segment
}

@test "shm: the ring of a chute that died is replaced; a live one is not" {
	chute stream -b 1 -e 0 --shm "$RING" ds &
	local pid=$!
	for _ in $(seq 100); do [ -e "$SEG" ] && break; sleep 0.05; done
	run -2 chute stream -b 1 --shm "$RING" ds
	assert_output --regexp "ring '$RING' .* is in use by chute stream pid $pid"
	kill -KILL "$pid"
	wait_chute 137 "$pid"
	assert_file_exists "$SEG"
	chute stream -b 3 --shm "$RING" ds &
	pid=$!
	run -0 consume
	wait_chute 0 "$pid"
	assert_no_segment
}

@test "shm: --pin locks the ring, or says RLIMIT_MEMLOCK forbids it" {
	chute stream -b 3 --shm "$RING" --pin ds &
	local pid=$!
	run -0 py_consumer '
import os, chute_batch
with chute_batch.ShmRing(os.environ["RING"], 20) as ring:
    print("pinned" if ring.pinned else "not pinned", sum(1 for _ in ring))'
	assert_output "pinned 7"
	wait_chute 0 "$pid"
	command -v capsh >/dev/null || skip "no capsh to drop CAP_IPC_LOCK"
	! grep -q __asan_init "$CHUTE_BIN" || skip "ASan makes mlock a no-op"
	run -2 capsh --drop=cap_ipc_lock -- -c \
		"ulimit -l 64; exec chute stream -b 3 --shm '$RING' --pin --slot-size 1M ds"
	assert_output --regexp "chute stream: --pin: cannot lock ring '$RING' in memory: its [0-9.]+ MB exceed RLIMIT_MEMLOCK \(64 KB"
	assert_no_segment
}

@test "shm: options that cannot go with --shm" {
	run -2 chute stream --shm "$RING" -o out ds
	assert_output --partial "--shm and --output"
	run -2 chute stream --shm "$RING" -f jsonl ds
	assert_output --partial "--shm carries batch frames: --format jsonl"
	run -2 chute stream --shm "a/b" ds
	assert_output --partial "invalid ring name 'a/b'"
	run -2 chute stream --slots 2 ds
	assert_output --partial "go with --shm NAME"
	run -2 chute stream --shm "$RING" --slots 0 ds
	assert_no_segment
}

@test "shm: the trainer reads --shm to the same weights as from a pipe" {
	"$PYTHON" -c 'import torch' 2>/dev/null || skip "no PyTorch for $PYTHON"
	local idx=/usr/share/datasets/fashion-mnist
	[ -r "$idx/train-images-idx3-ubyte.gz" ] || skip "no Fashion-MNIST in $idx"
	"$PYTHON" "$REPO_ROOT/scripts/fashion_mnist.py" fm --limit-train 600 \
		--limit-test 200 >/dev/null
	chute pack -q fm/train.tar -o train
	chute pack -q fm/test.tar -o test
	local args=(train test --batch-size 100 --epochs 2 --seed 3)
	run -0 "$PYTHON" "$REPO_ROOT/scripts/train_fashion_mnist.py" "${args[@]}"
	local pipe_out=$output
	run -0 "$PYTHON" "$REPO_ROOT/scripts/train_fashion_mnist.py" "${args[@]}" \
		--shm
	assert_equal "$(grep -v '^trained' <<<"$output")" \
		"$(grep -v '^trained' <<<"$pipe_out")"
	assert_output --partial "final weights sha256"
	# chute.Stream names its rings py-PID-N-RANDOM
	[ -z "$(ls /dev/shm | grep "chute-py-")" ] || fail "rings left behind"
}
