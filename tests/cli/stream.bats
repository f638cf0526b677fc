#!/usr/bin/env bats
# chute stream: batches for a trainer, the same bytes whatever the
# parallelism, resumable from any batch, cut between ranks without overlap.
#
# Frames are read here from man/chute-batch.5 alone (header, cursor, key
# field), an independent reader of what chute writes.

load helper

setup() {
	chute_setup
	# 23 samples (a prime: no world size of 2-5 divides it), 5 a shard
	mkdata src 23
	chute pack -q -s 5s src -o ds >/dev/null || fail "cannot pack src"
}

# mkdata DIR N [SIZE]: N samples sNNN, each a text field txt
# ("sample NNN\n") and a binary field bin of SIZE seeded bytes (default 24).
mkdata() {
	cached _mkdata "$@"
}
_mkdata() {
	"$PYTHON" - "$@" <<'EOF' || fail "cannot make $1"
import os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
size = int(sys.argv[3]) if len(sys.argv) > 3 else 24
os.makedirs(d, exist_ok=True)
for i in range(n):
    with open(os.path.join(d, "s%03d.txt" % i), "w") as f:
        f.write("sample %03d\n" % i)
    with open(os.path.join(d, "s%03d.bin" % i), "wb") as f:
        f.write(random.Random(i).randbytes(size))
EOF
}

# frames FILE: one line per frame of a batch stream,
#   EPOCH BATCH FLAGS NSAMPLES END CURSOR KEYS
# END the byte offset just past the frame, KEYS comma-separated ("-" for
# none).  Fails unless FILE is whole frames back to back.
frames() {
	"$PYTHON" -S - "$1" <<'EOF' || fail "cannot read the frames of $1"
import struct, sys
data = open(sys.argv[1], "rb").read()
at = 0
while at < len(data):
    assert data[at:at + 4] == b"CHB1", "no frame magic at byte %d" % at
    (flags, size, epoch, batch, ns, nf, csize, tsize,
     doff) = struct.unpack_from("<IQQQIIIIQ", data, at + 4)
    fr = data[at:at + size]
    assert size >= 64 and len(fr) == size, "frame at byte %d cut short" % at
    cursor = fr[64:64 + csize].decode()
    t = (64 + csize + 7) // 8 * 8
    name_size = struct.unpack_from("<I", fr, t + 12)[0]
    name = fr[t + 72:t + 72 + name_size].decode()
    assert name == "__key__", "first field is %r, not __key__" % name
    offs_at, data_at = struct.unpack_from("<QQ", fr, t + 48)
    offs = struct.unpack_from("<%dQ" % (ns + 1), fr, offs_at)
    keys = [fr[data_at + offs[i]:data_at + offs[i + 1]].decode()
            for i in range(ns)]
    at += size
    print(epoch, batch, flags, ns, at, cursor, ",".join(keys) or "-")
EOF
}

# keys_of FRAMES_TXT: the keys of every frame, one a line, in stream order.
keys_of() {
	awk '$7 != "-" { print $7 }' "$1" | tr , '\n'
}

# manifest_keys DS: the keys in manifest order.
manifest_keys() {
	chute ls "$1" | cut -f1
}

# ---------------------------------------------------------- determinism

@test "stream: the bytes do not depend on --workers or --prefetch, in every format" {
	mkfixture mixed
	chute pack -q -s 6s mixed -o mx >/dev/null
	local f w p
	for f in batch jsonl tar; do
		chute stream -f "$f" -b 3 -e 2 --seed 5 -w 1 -p 1 mx >"ref.$f" ||
			fail "chute stream -f $f failed"
		[ -s "ref.$f" ] || fail "empty $f stream"
		for w in 0 1 2 8; do
			for p in 1 3 16; do
				chute stream -f "$f" -b 3 -e 2 --seed 5 -w "$w" -p "$p" mx >out
				cmp "ref.$f" out ||
					fail "-f $f -w $w -p $p differs from -w 1 -p 1"
			done
		done
		chute stream -f "$f" -b 3 -e 2 --seed 5 mx >out
		cmp "ref.$f" out || fail "-f $f with auto workers/prefetch differs"
		run -0 chute stream -f "$f" -b 3 -e 2 --seed 5 -w 8 -o "file.$f" mx
		assert_output ""
		cmp "ref.$f" "file.$f" || fail "-o FILE differs from stdout (-f $f)"
	done
	for w in 1 0 3 8; do
		chute stream --shuffle window --window 2 -b 2 -e 2 --world-size 2 --rank 1 \
			-w "$w" -p 2 mx >"win.$w"
		cmp win.1 "win.$w" || fail "window mode, rank 1 of 2: -w $w differs"
	done
}

@test "stream: --workers 0 reads each batch in the writer: typed frames, --stats, the range" {
	mkdata fixed 50 96
	chute pack -q -s 2s fixed -o fx >/dev/null
	local t=(--transform 'bin: bytes u8 8x12' -b 8 -e 3 --seed 2)
	chute stream "${t[@]}" -w 2 fx >two
	run -0 chute stream "${t[@]}" -w 0 --stats -o none fx
	cmp two none || fail "-w 0 differs from -w 2"
	assert_output --partial "stream: 0 workers (the writer reads), prefetch"
	run -0 bash -c "chute stream ${t[*]@Q} -w 0 --stats-json s.json fx | cmp - two"
	run -0 "$PYTHON" -c 'import json, sys; print(json.load(open("s.json"))["workers"])'
	assert_output 0
	run -2 chute stream -w -1 fx
	assert_output --partial "--workers"
	run -2 chute stream -w 1025 fx
	run -2 chute stream -p 0 fx
	assert_output --partial "--prefetch"
	run -0 chute stream --help
	assert_output --partial "0: the writer reads"
}

@test "stream: every frame's cursor names the dataset, the options, the epoch, the batch and the position" {
	local id
	id=$(mjson ds 'm["id"][:16]')
	chute stream -b 4 -e 2 ds >full
	run -0 frames full
	assert_equal "${#lines[@]}" 12
	local e b fl ns end cursor keys pos
	while read -r e b fl ns end cursor keys; do
		pos=$(((b + 1) * 4 > 23 ? 23 : (b + 1) * 4))
		[[ $cursor =~ ^ch1\.$id\.[0-9a-f]{8}\.$e\.$b\.$pos$ ]] ||
			fail "frame $e/$b: cursor '$cursor', expected ch1.$id.OPTIONS.$e.$b.$pos"
	done <<<"$output"
	# scripts/chute_batch.py reads the same frames
	run -0 "$PYTHON" "$REPO_ROOT/scripts/chute_batch.py" full
	assert_output "$(frames full | awk '{ print $1, $2, $4, $3, $6 }')"
	# with two ranks every batch but an epoch's last consumes 2 x 4 positions
	chute stream -b 4 --world-size 2 --rank 1 ds >r1
	run -0 frames r1
	assert_line --index 0 --regexp "^0 0 0 4 [0-9]+ ch1\.$id\.[0-9a-f]{8}\.0\.0\.8 "
	assert_line --index 1 --regexp "^0 1 0 4 [0-9]+ ch1\.$id\.[0-9a-f]{8}\.0\.1\.16 "
}

# ---------------------------------------------------------------- resume

@test "stream: resuming from the cursor of any batch gives the rest of the stream, byte for byte" {
	local w r line e b fl ns end cursor keys
	local -a all
	for w in 1 2; do
		for ((r = 0; r < w; r++)); do
			chute stream -b 4 -e 2 --seed 3 --world-size "$w" --rank "$r" ds >full
			mapfile -t all < <(frames full)
			[ "${#all[@]}" -ge 6 ] || fail "only ${#all[@]} frames for rank $r of $w"
			for line in "${all[@]}"; do
				read -r e b fl ns end cursor keys <<<"$line"
				run -0 chute stream -b 4 -e 2 --seed 3 --world-size "$w" --rank "$r" \
					--resume "$cursor" -o rest ds
				assert_output ""
				tail -c +$((end + 1)) full | cmp - rest ||
					fail "rank $r of $w: resume after $cursor is not the rest of the stream"
			done
		done
	done
}

@test "stream: --start-epoch E streams epoch E of the full stream, byte for byte, for every rank" {
	local r e
	for r in 0 1; do
		chute stream -b 4 -e 3 --seed 3 --world-size 2 --rank "$r" ds >full
		frames full >all
		for e in 1 2; do
			run -0 chute stream -b 4 -e 3 --seed 3 --world-size 2 --rank "$r" \
				--start-epoch "$e" -o part ds
			# the bytes from epoch E's first frame on
			local first
			first=$(awk -v e="$e" '$1 < e { end = $5 } END { print end + 0 }' all)
			tail -c +$((first + 1)) full | cmp - part ||
				fail "rank $r: --start-epoch $e is not the stream from epoch $e"
		done
	done
	chute stream -b 4 -e 3 --seed 3 --start-epoch 2 -o two ds
	chute stream -b 4 -e 3 --seed 3 --start-epoch 2 -w 2 -o two-w2 ds
	cmp two two-w2 || fail "--start-epoch output depends on the workers"
}

@test "stream: --start-epoch beside --resume, or not below --epochs, is refused" {
	run -2 chute stream --start-epoch 3 -e 3 ds
	assert_output "chute stream: --start-epoch 3 is not below --epochs 3 (epochs count from 0: --epochs is where the stream ends)"
	chute stream -b 4 -o full ds
	cursor=$(frames full | head -n 1 | cut -d' ' -f6)
	run -2 chute stream -b 4 --start-epoch 1 --resume "$cursor" ds
	assert_output --partial "--start-epoch and --resume both say where to begin"
	# for ever from epoch 5
	run -0 bash -c "'$CHUTE_BIN' stream -b 4 -e 0 --start-epoch 5 -f jsonl ds | head -n 1"
	assert_output --regexp '"epoch":5'
}

@test "stream: --count prints an epoch's samples and batches for this rank, as a stream yields them" {
	local id w r dl n
	id=$(mjson ds 'm["id"]')
	for w in 1 2 3; do
		for ((r = 0; r < w; r++)); do
			for dl in --drop-last --no-drop-last "--mode eval"; do
				# shellcheck disable=SC2086 # dl may be two words
				run -0 chute stream --count -b 4 --world-size "$w" --rank "$r" $dl ds
				# shellcheck disable=SC2086
				chute stream -b 4 --world-size "$w" --rank "$r" $dl -o out ds
				n=$(frames out | wc -l)
				assert_output "{\"id\":\"$id\",\"samples\":23,\"batches\":$n,\"epoch\":0,\"batches_left\":$n}"
			done
		done
	done
	# after a cursor: what is left of its epoch; none after an epoch's last
	chute stream -b 4 -e 2 -o full ds
	frames full >all
	run -0 chute stream --count -b 4 -e 2 --resume "$(sed -n 2p all | cut -d' ' -f6)" ds
	assert_output --partial '"epoch":0,"batches_left":4}'
	run -0 chute stream --count -b 4 -e 2 --resume "$(sed -n 6p all | cut -d' ' -f6)" ds
	assert_output --partial '"epoch":0,"batches_left":0}'
	run -0 chute stream --count -b 4 --start-epoch 1 -e 2 ds
	assert_output --partial '"epoch":1,"batches_left":6}'
	# checked as a stream is: a cursor of other options, an output
	run -2 chute stream --count -b 5 --resume "$(sed -n 2p all | cut -d' ' -f6)" ds
	assert_output --partial "was made with other stream options"
	run -2 chute stream --count -o x ds
	assert_output --partial "--count prints one line and streams nothing"
	[ ! -e x ]
}

@test "stream: a lone shard's cursors name it by a content id and resume, byte for byte" {
	local sh e b fl ns end cursor keys id
	sh=$(shard_of ds 1)
	chute stream -b 2 -e 2 --seed 3 "$sh" >full
	mapfile -t all < <(frames full)
	[ "${#all[@]}" -ge 4 ] || fail "only ${#all[@]} frames"
	# the id: XXH3-128 of the shard's header and footer (chute-stream(1))
	id=$("$PYTHON" -c '
import sys, xxhash
d = open(sys.argv[1], "rb").read()
print(xxhash.xxh3_128_hexdigest(d[:64] + d[-64:])[:16])' "$sh")
	for line in "${all[@]}"; do
		read -r e b fl ns end cursor keys <<<"$line"
		[[ $cursor =~ ^ch1\.$id\.[0-9a-f]{8}\.$e\.$b\.[0-9]+$ ]] ||
			fail "frame $e/$b: cursor '$cursor', expected ch1.$id..."
		run -0 chute stream -b 2 -e 2 --seed 3 --resume "$cursor" -o rest "$sh"
		tail -c +$((end + 1)) full | cmp - rest ||
			fail "resume after $cursor is not the rest of the stream"
	done
	# another shard is another dataset
	read -r e b fl ns end cursor keys <<<"${all[0]}"
	run -2 chute stream -b 2 -e 2 --seed 3 --resume "$cursor" "$(shard_of ds 0)"
	assert_output --partial "is from another dataset"
}

@test "stream: a cursor resumed at another world size continues the epoch with no sample twice" {
	local k w2 r c
	chute stream -b 2 --seed 9 --world-size 2 --rank 0 ds >a0
	chute stream -b 2 --seed 9 --world-size 2 --rank 1 ds >a1
	frames a0 >f0
	frames a1 >f1
	# both ranks' batch k carry the same cursor
	cmp <(cut -d' ' -f6 f0) <(cut -d' ' -f6 f1) ||
		fail "ranks 0 and 1 of 2 carry different cursors"
	for k in 1 3 5; do
		c=$(sed -n "${k}p" f0 | cut -d' ' -f6)
		head -n "$k" f0 >seen
		head -n "$k" f1 >>seen
		for w2 in 3 1 4; do
			cp seen all
			for ((r = 0; r < w2; r++)); do
				chute stream -b 2 --seed 9 --world-size "$w2" --rank "$r" \
					--resume "$c" ds >b
				frames b >>all
			done
			run -0 "$PYTHON" - "$c" "$w2" <<'EOF'
import sys
cursor, w = sys.argv[1], int(sys.argv[2])
pos = int(cursor.split(".")[5])
keys = []
for line in open("all"):
    e, b, fl, ns, end, cur, ks = line.split()
    assert e == "0", "epoch %s after a one-epoch stream" % e
    keys += [] if ks == "-" else ks.split(",")
assert len(keys) == len(set(keys)), "samples seen twice: %s" % sorted(
    k for k in set(keys) if keys.count(k) > 1)
missing = 23 - len(keys)
assert missing == (23 - pos) % w, "%d samples missing, expected %d" % (
    missing, (23 - pos) % w)
print("ok")
EOF
			assert_output "ok"
		done
	done
}

@test "stream: --state holds the last cursor; resuming from it gives nothing after a complete stream" {
	mkdir state
	run -0 chute stream -b 4 -e 2 --state state/cursor -o full ds
	frames full >f
	assert_equal "$(cat state/cursor)" "$(tail -1 f | cut -d' ' -f6)"
	run -0 ls -A state
	assert_output "cursor"
	run -0 chute stream -b 4 -e 2 --resume "$(cat state/cursor)" ds
	assert_output ""
}

@test "stream: a --state or --stats-json in no folder exits 2 before the first batch" {
	run -2 chute stream -b 4 --state nosuch/dir/cursor -o out ds
	assert_one_line_error stream
	assert_output "chute stream: cannot write --state 'nosuch/dir/cursor': No such file or directory (its folder)"
	assert_file_not_exists out
	run -2 chute stream -b 4 --state nosuch/cursor ds
	assert_output "chute stream: cannot write --state 'nosuch/cursor': No such file or directory (its folder)"
	touch file
	run -2 chute stream -b 4 --stats-json file/st.json -o out ds
	assert_output "chute stream: cannot write --stats-json 'file/st.json': Not a directory (its folder)"
	assert_file_not_exists out
	mkdir adir
	run -2 chute stream -b 4 --state adir -o out ds
	assert_output "chute stream: cannot write --state 'adir': Is a directory"
	assert_file_not_exists out
}

# small_disk DIR: a 64 KiB tmpfs at DIR (unmounted by teardown), or skip
# where mounting is not permitted (not root, no CAP_SYS_ADMIN).
small_disk() {
	mkdir -p "$1"
	mount -t tmpfs -o size=64k tmpfs "$1" 2>/dev/null ||
		skip "cannot mount a small tmpfs here (needs root)"
	SMALL_DISK=$PWD/$1
}

teardown() {
	[ -z "${SMALL_DISK:-}" ] || umount "$SMALL_DISK" 2>/dev/null || true
}

@test "stream: -o FILE on a full disk exits 2 and leaves FILE as it was, no temporary" {
	small_disk small
	echo "the old file" >small/out
	run -2 chute stream -b 4 -e 0 -o small/out ds
	assert_one_line_error stream
	assert_output --regexp "^chute stream: cannot write 'small/out\.tmp-[0-9]+': No space left on device$"
	assert_equal "$(cat small/out)" "the old file"
	assert_equal "$(ls small)" "out"
	# a new FILE that cannot be finished is not made at all
	run -2 chute stream -b 4 -e 0 -o small/new ds
	assert_equal "$(ls small)" "out"
	# what fits is written whole and renamed into place
	run -0 chute stream -b 4 -o small/out ds
	chute stream -b 4 ds >ref
	cmp ref small/out || fail "-o FILE differs from stdout"
	assert_equal "$(ls small)" "out"
}

@test "stream: -o FILE of a failed stream leaves FILE as it was" {
	echo "the old file" >out
	flip_byte "$(shard_of ds 2)" 70
	run -1 chute stream -b 4 -o out ds
	assert_equal "$(cat out)" "the old file"
	assert_equal "$(ls)" "$(printf 'ds\nout\nsrc')"
}

@test "stream: a --stats-json FILE that cannot be written exits 2, the stream whole" {
	small_disk small
	# fill the disk: the folder may be written in, the file cannot
	dd if=/dev/zero of=small/fill bs=4k 2>/dev/null || true
	run -2 --separate-stderr chute stream -b 4 --stats-json small/st.json \
		-o out ds
	assert_regex "$stderr" "^chute stream: cannot write --stats-json 'small/st\.json': cannot write 'small/\.st\.json\.tmp-[0-9]+': No space left on device$"
	assert_file_not_exists small/st.json
	chute stream -b 4 ds >ref
	cmp ref out || fail "the stream is not whole"
}

@test "stream: --state after a reader stopped early resumes with the rest of the stream" {
	local c end
	mkdata big 200 2000
	chute pack -q -s 50s big -o bigds >/dev/null
	# 12 epochs of 400 kB: more than the 1 MiB pipe chute asks for holds,
	# so that chute cannot have written the whole stream when head leaves
	chute stream -b 8 -e 12 bigds >full
	frames full >f
	run -0 bash -c 'set -o pipefail
		chute stream -b 8 -e 12 --state st bigds | head -c 50000 >/dev/null'
	assert_output ""
	assert_file_exists st
	c=$(cat st)
	end=$(awk -v c="$c" '$6 == c { print $5 }' f)
	[ -n "$end" ] || fail "cursor '$c' of --state is no cursor of the stream"
	[ "$end" -lt "$(stat -c %s full)" ] || fail "the stream was not stopped early"
	chute stream -b 8 -e 12 --resume "$c" bigds >rest
	tail -c +$((end + 1)) full | cmp - rest ||
		fail "resume after $c is not the rest of the stream"
}

# ----------------------------------------------------------------- ranks

@test "stream: ranks 1 to 5 are disjoint, yield as many batches each, and cover the epoch" {
	local w r mode
	for mode in train eval; do
		for w in 1 2 3 4 5; do
			rm -f rank.*
			for ((r = 0; r < w; r++)); do
				chute stream -b 2 --mode "$mode" --world-size "$w" --rank "$r" ds >out
				frames out >"rank.$r"
			done
			run -0 "$PYTHON" - "$mode" "$w" <<'EOF'
import sys
mode, w = sys.argv[1], int(sys.argv[2])
n = 23
counts, seen = set(), []
for r in range(w):
    rows = [l.split() for l in open("rank.%d" % r)]
    counts.add(len(rows))
    for i, (e, b, fl, ns, end, cur, ks) in enumerate(rows):
        assert int(b) == i, "rank %d: batch %s at %d" % (r, b, i)
        last = i == len(rows) - 1
        assert (int(fl) & 2 != 0) == last, "rank %d batch %d flags %s" % (r, i, fl)
        assert (int(fl) & 1 != 0) == (int(ns) < 2), "rank %d batch %d: %s samples, flags %s" % (r, i, ns, fl)
        seen += [] if ks == "-" else ks.split(",")
assert len(counts) == 1, "batches per rank differ: %s" % counts
assert len(seen) == len(set(seen)), "ranks overlap"
want = n if mode == "eval" else n - n % w
assert len(seen) == want, "%d samples seen, expected %d" % (len(seen), want)
assert set(seen) <= {"s%03d" % i for i in range(n)}, "unknown keys"
print("ok")
EOF
			assert_output "ok"
		done
	done
}

@test "stream: RANK and WORLD_SIZE are used when --rank and --world-size are absent" {
	chute stream -b 4 --rank 1 --world-size 3 ds >opt
	RANK=1 WORLD_SIZE=3 chute stream -b 4 ds >env
	cmp opt env || fail "RANK=1 WORLD_SIZE=3 differs from --rank 1 --world-size 3"
	RANK=2 WORLD_SIZE=5 chute stream -b 4 --rank 1 --world-size 3 ds >both
	cmp opt both || fail "the options do not win over the environment"
	chute stream -b 4 --rank 0 --world-size 3 ds >r0
	run -1 cmp -s opt r0
	chute stream -b 4 ds >plain
	WORLD_SIZE=1 RANK=0 chute stream -b 4 ds >env1
	cmp plain env1
	run -2 env RANK=3 WORLD_SIZE=3 chute stream -b 4 ds
	assert_one_line_error stream
}

# ------------------------------------------------------------ eval, order

@test "stream: --mode eval yields every sample once in manifest order, the last batch flagged partial" {
	chute stream --mode eval -b 4 --seed 7 ds >out
	frames out >f
	run -0 keys_of f
	assert_output "$(manifest_keys ds)"
	run -0 cut -d' ' -f1-4 f
	assert_output "$(printf '0 %d 0 4\n' 0 1 2 3 4; echo '0 5 3 3')"
	# eval ignores the shuffle and the seed (the seed is still part of
	# the cursors' options hash, so compare the frames without them)
	chute stream --mode eval -b 4 --shuffle window --seed 1 ds >again
	frames again >g
	run -0 cut -d' ' -f1-4,7 g
	assert_output "$(cut -d' ' -f1-4,7 f)"
}

@test "stream: --shuffle none streams every epoch in manifest order" {
	chute stream --shuffle none -b 4 -e 2 ds >out
	frames out >f
	run -0 keys_of f
	assert_output "$(manifest_keys ds; manifest_keys ds)"
}

@test "stream: --shuffle global is a new permutation each epoch and seed, the same for the same seed" {
	chute stream -b 4 -e 2 --seed 1 ds >s1
	chute stream -b 4 -e 2 --seed 1 ds >s1again
	cmp s1 s1again
	chute stream -b 4 -e 2 --seed 2 ds >s2
	chute stream -b 4 -e 2 ds >s0
	chute stream -b 4 -e 2 --seed 0 --shuffle global ds >s0again
	cmp s0 s0again || fail "the default is not --shuffle global --seed 0"
	local s
	for s in s1 s2; do
		frames "$s" | awk '$1 == 0 { print $7 }' | tr , '\n' >"$s.e0"
		frames "$s" | awk '$1 == 1 { print $7 }' | tr , '\n' >"$s.e1"
		assert_equal "$(sort "$s.e0")" "$(manifest_keys ds | sort)"
		assert_equal "$(sort "$s.e1")" "$(manifest_keys ds | sort)"
		run -1 cmp -s "$s.e0" "$s.e1"
		[ "$(cat "$s.e0")" != "$(manifest_keys ds)" ] || fail "$s: epoch 0 is not shuffled"
	done
	run -1 cmp -s s1.e0 s2.e0
}

@test "stream: --shuffle window keeps the samples of each window within its shards" {
	# 24 samples in 6 shards of 4: a window of W shards is 4W samples,
	# so batches of 4 never straddle two windows
	mkdata w24 24
	chute pack -q -s 4s w24 -o wds >/dev/null
	local win
	for win in 2 3; do
		chute stream --shuffle window --window "$win" -b 4 -e 2 --seed 4 wds >out
		frames out >f
		manifest_keys wds >order
		run -0 "$PYTHON" - "$win" <<'EOF'
import sys
win = int(sys.argv[1])
shard = {k.strip(): i // 4 for i, k in enumerate(open("order"))}
rows = [l.split() for l in open("f")]
assert len(rows) == 12, "%d batches" % len(rows)
for epoch in ("0", "1"):
    keys = [k for r in rows if r[0] == epoch for k in r[6].split(",")]
    assert sorted(keys) == sorted(shard), "epoch %s is not the dataset" % epoch
    assert keys != list(shard), "epoch %s in manifest order" % epoch
    per = 4 * win
    groups = [keys[i:i + per] for i in range(0, 24, per)]
    for g in groups:
        shards = {shard[k] for k in g}
        assert len(shards) == win, "window %s spans shards %s" % (g, shards)
    # shuffled within windows: not each shard's samples in shard order
    assert any(keys[i:i + 4] != sorted(keys[i:i + 4]) for i in range(0, 24, 4)), \
        "epoch %s: samples not shuffled within windows" % epoch
print("ok")
EOF
		assert_output "ok"
	done
}

@test "stream: --epochs 3 gives three epochs numbered 0 to 2; --drop-last drops the partial batch" {
	local want="" e
	chute stream -b 4 -e 3 ds >out
	frames out >f
	for e in 0 1 2; do
		want+=$(printf "$e %d 0 4\\n" 0 1 2 3 4)$'\n'"$e 5 3 3"$'\n'
	done
	run -0 cut -d' ' -f1-4 f
	assert_output "${want%$'\n'}"
	chute stream -b 4 -e 3 --drop-last ds >dl
	frames dl >f
	want=""
	for e in 0 1 2; do
		want+=$(printf "$e %d 0 4\\n" 0 1 2 3)$'\n'"$e 4 2 4"$'\n'
	done
	run -0 cut -d' ' -f1-4 f
	assert_output "${want%$'\n'}"
}

# ----------------------------------------------------------- the formats

@test "stream: jsonl has one line per sample with its sizes and short text fields" {
	chute stream -b 4 -e 2 ds >batches
	frames batches >f
	chute stream -f jsonl -b 4 -e 2 ds >out.jsonl
	run -0 "$PYTHON" - <<'EOF'
import json
want = []
for line in open("f"):
    e, b, fl, ns, end, cur, ks = line.split()
    want += [(k, int(e), int(b)) for k in ks.split(",")]
rows = [json.loads(l) for l in open("out.jsonl")]
assert [(r["key"], r["epoch"], r["batch"]) for r in rows] == want, "jsonl order differs from the frames"
for r in rows:
    i = int(r["key"][1:])
    assert r["fields"] == {"bin": 24, "txt": 11}, r
    assert r["text"] == {"txt": "sample %03d\n" % i}, r
print("ok")
EOF
	assert_output "ok"
}

@test "stream: tar is one WebDataset archive of KEY.FIELD members in stream order" {
	chute stream -b 4 -e 2 ds >batches
	frames batches >f
	chute stream -f tar -b 4 -e 2 ds >out.tar
	run -0 "$PYTHON" - <<'EOF'
import tarfile
keys = [k for l in open("f") for k in l.split()[6].split(",")]
with tarfile.open("out.tar") as t:
    members = t.getmembers()
    names = [m.name for m in members]
    assert names == [k + "." + f for k in keys for f in ("bin", "txt")], names[:6]
    for m in members:
        assert (m.mtime, m.uid, m.gid, m.mode) == (0, 0, 0, 0o644), m.name
        assert t.extractfile(m).read() == open("src/" + m.name, "rb").read(), m.name
data = open("out.tar", "rb").read()
assert len(data) % 512 == 0 and data[-1024:] == bytes(1024), "no end marker"
print("ok")
EOF
	assert_output "ok"
}

# ---------------------------------------------------------- ending early

@test "stream: batch and tar frames are not written to a terminal without --force; jsonl is" {
	need_terminal
	local f
	for f in batch tar; do
		run -2 on_terminal chute stream -f "$f" ds
		assert_output --partial "chute stream: not writing "
		assert_output --partial " to a terminal; pipe it, or -o FILE (--force writes anyway)"
		assert_equal "${#lines[@]}" 1
	done
	run -0 on_terminal chute stream --force ds
	refute_output --partial "not writing"
	assert_output --partial "sample 000"
	run -0 on_terminal chute stream -f jsonl ds
	assert_equal "${#lines[@]}" 23
	# -o FILE from a terminal is a file
	chute stream --shuffle none ds >want
	run -0 on_terminal chute stream --shuffle none -o got ds
	cmp got want
}

@test "stream: a reader that closes the pipe ends chute quietly with exit 0" {
	local f
	for f in batch jsonl tar; do
		run -0 bash -c "set -o pipefail
			timeout 60 chute stream -f $f -e 0 -b 4 ds | head -c 100 | wc -c"
		assert_output "100"
	done
}

@test "stream: --vmsplice gives a reader the same bytes, a lagging one too, a file too; not with --shm" {
	chute stream -b 2 -e 40 --seed 3 ds >ref
	run -0 bash -c "set -o pipefail; chute stream --vmsplice -b 2 -e 40 --seed 3 ds | cat >fast"
	cmp ref fast || fail "--vmsplice into cat differs"
	# a reader that lets the pipe fill with more small frames than chute
	# has buffers (64) before it reads: none may be written over
	run -0 bash -c "set -o pipefail
		chute stream --vmsplice -b 2 -e 40 --seed 3 ds |
		\"\$PYTHON\" \"$BATS_TEST_DIRNAME/slow_reader.py\" slow 4096 0.0002"
	cmp ref slow || fail "--vmsplice into a lagging reader differs"
	run -0 chute stream --vmsplice -b 2 -e 40 --seed 3 -o file ds
	cmp ref file || fail "--vmsplice into a file differs"
	run -0 bash -c "set -o pipefail
		timeout 60 chute stream --vmsplice -e 0 -b 4 ds | head -c 100 | wc -c"
	assert_output "100"
	run -2 chute stream --vmsplice --shm x ds
	assert_output --partial "one or the other"
}

@test "stream: a reader that marks the pipe is lent the frames' pages: the same bytes, to a lagging reader too" {
	chute stream -b 2 -e 400 --seed 3 ds >ref
	# the pipe takes 1 MiB (1,365 frames) before the reader has started
	# and marked it; lent from then on
	run -0 bash -c "set -o pipefail
		chute stream --stats -b 2 -e 400 --seed 3 ds 2>err |
		\"\$PYTHON\" \"$BATS_TEST_DIRNAME/slow_reader.py\" slow 4096 0.0001 mark"
	cmp ref slow || fail "a marked pipe's lagging reader read other bytes"
	run -0 grep -E '^stream: pipe: [0-9]+ of 4800 frames lent to its reader \(the reader marked the pipe\)$' err
	local lent=${output#stream: pipe: }
	(( ${lent%% *} >= 2400 )) || fail "only ${lent%% *} of 4800 frames lent"
	# unmarked: copied, whatever reads it
	run -0 bash -c "set -o pipefail; chute stream --stats -b 2 -e 400 --seed 3 ds 2>err | cat >plain"
	cmp ref plain
	run -0 grep -Fx 'stream: pipe: 0 of 4800 frames lent to its reader (not marked by its reader: copied)' err
}

@test "stream: an unmarked pipe is not lent pages: a reader that splices it on gets the same bytes" {
	chute stream -b 2 -e 40 --seed 3 ds >ref
	# it holds what it splices a moment: lent pages written again by
	# then would show (they do with --vmsplice)
	run -0 bash -c "set -o pipefail
		chute stream -b 2 -e 40 --seed 3 ds |
		\"\$PYTHON\" \"$BATS_TEST_DIRNAME/splice_reader.py\" spliced"
	cmp ref spliced || fail "an unmarked pipe's pages were lent"
	# a FIFO in a folder is a file of the user's: its mode is no mark
	mkfifo -m 700 fifo
	chute stream --stats -b 2 -e 40 --seed 3 -o fifo ds 2>err &
	local pid=$!
	"$PYTHON" "$BATS_TEST_DIRNAME/splice_reader.py" fifo_spliced <fifo
	wait "$pid"
	cmp ref fifo_spliced || fail "a FIFO's pages were lent"
	run -0 grep -Fx 'stream: pipe: 0 of 480 frames lent to its reader (not marked by its reader: copied)' err
}

@test "stream: SIGTERM and SIGINT end an endless stream with 143 and 130" {
	run -143 timeout --preserve-status -s TERM 1 chute stream -e 0 -b 4 -o /dev/null ds
	run -130 timeout --preserve-status -s INT 1 chute stream -e 0 -b 4 -o /dev/null ds
}

@test "stream: --stats reports on stderr and ends with a verdict, the stream unchanged" {
	chute stream -b 4 -e 2 ds >plain
	run -0 --separate-stderr chute stream --stats -b 4 -e 2 -o out ds
	assert_output ""
	cmp plain out
	[[ $stderr == *"12 batches, 46 samples"* ]] || fail "stderr: $stderr"
	[[ ${stderr##*$'\n'} =~ ^stream:\ (input-bound:\ the\ consumer\ waited\ on\ chute\ [0-9]+\ %\ of\ the\ time|consumer-bound) ]] ||
		fail "no verdict at the end of: $stderr"
}

@test "stream: a corrupt block exits 1 naming the shard, the block and a key" {
	local shard off
	mkdata big 40 3000
	chute pack -q -s 10s big -o bad >/dev/null
	shard=$(shard_of bad 1)
	off=$(block_middle "$shard" 0)
	[ -n "$off" ] || fail "no block 0 in $shard"
	flip_byte "$shard" "$off"
	run -1 bash -c 'chute stream -b 4 bad 2>&1 >/dev/null'
	assert_one_line_error stream
	assert_output --partial "bad-000001.chs"
	assert_output --partial "block 0"
	assert_output --regexp "s01[0-9]"
}

# ---------------------------------------------------------- bad options

@test "stream: bad options each exit 2 with one clear line" {
	run -2 chute stream --batch-size 0 ds
	assert_one_line_error stream
	run -2 chute stream --rank 3 --world-size 3 ds
	assert_one_line_error stream
	run -2 chute stream --world-size 0 ds
	assert_one_line_error stream
	run -2 chute stream --format xml ds
	assert_one_line_error stream
	assert_output --partial "xml"
	run -2 chute stream --mode test ds
	assert_one_line_error stream
	assert_output --partial "test"
	run -2 chute stream --shuffle nope ds
	assert_one_line_error stream
	assert_output --partial "nope"
	run -2 chute stream
	run -2 chute stream no-such-dataset
	assert_one_line_error stream
}

@test "stream: a malformed cursor, or one of another dataset or other options, exits 2 saying why" {
	local c id rest
	run -2 chute stream --resume nonsense ds
	assert_one_line_error stream
	assert_output --partial "nonsense"
	run -2 chute stream --resume ch1.zz.1.2.3 ds
	assert_one_line_error stream

	chute stream -b 4 ds >out
	c=$(frames out | sed -n 2p | cut -d' ' -f6)
	run -0 chute stream -b 4 --resume "$c" -o /dev/null ds

	mkdata other 7
	chute pack -q other -o ods >/dev/null
	chute stream -b 4 ods >oout
	run -2 chute stream -b 4 --resume "$(frames oout | sed -n 1p | cut -d' ' -f6)" ds
	assert_one_line_error stream
	assert_output --partial "dataset"

	run -2 chute stream -b 4 --seed 1 --resume "$c" ds
	assert_one_line_error stream
	assert_output --partial "options"
	run -2 chute stream -b 5 --resume "$c" ds
	assert_one_line_error stream
	assert_output --partial "options"
	run -2 chute stream -b 4 --shuffle none --resume "$c" ds
	assert_one_line_error stream
	assert_output --partial "options"

	# a position past the end of the epoch
	rest=${c%.*}
	run -2 chute stream -b 4 --resume "$rest.999" ds
	assert_one_line_error stream
}

# ---------------------------------------------------------- --on-error skip

# corrupt_one_block DS: flips a byte in the middle of block 0 of shard 1.
corrupt_one_block() {
	local shard off
	shard=$(shard_of "$1" 1)
	off=$(block_middle "$shard" 0)
	[ -n "$off" ] || fail "no block 0 in $shard"
	flip_byte "$shard" "$off"
}

@test "stream: --on-error skip replaces corrupt samples, the same bytes whatever --workers, and counts them" {
	mkdata big 40 3000
	chute pack -q -s 10s big -o bad >/dev/null
	corrupt_one_block bad
	run -0 bash -c 'chute stream -b 4 -w 1 --on-error skip -f jsonl bad 2>err >one'
	run -0 bash -c 'chute stream -b 4 -w 8 -p 2 --on-error skip -f jsonl bad 2>err8 >eight'
	run -0 cmp one eight
	run -0 bash -c 'chute stream -b 4 -w 0 --on-error skip -f jsonl bad 2>err0 >none'
	run -0 cmp one none
	run -0 cat err
	assert_output --regexp "skipped [1-9][0-9]* corrupt samples?"
	# training keeps full batches: 40 samples, all slots filled
	assert_equal "$(wc -l <one)" 40
	# every sample delivered holds exactly the bytes it was packed from
	run -0 bash -c 'chute stream -b 4 --on-error skip bad 2>/dev/null >frames'
	run -0 "$PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch
n = 0
for fr in chute_batch.frames(open("frames", "rb")):
    for key, data in zip(fr.keys, fr.fields["bin"]):
        assert bytes(data) == open("big/%s.bin" % key, "rb").read(), key
        n += 1
assert n == 40, n
' "$REPO_ROOT/scripts"
}

@test "stream: in eval mode --on-error skip drops corrupt samples and keeps the rest once" {
	mkdata big 40 3000
	chute pack -q -s 10s big -o bad >/dev/null
	corrupt_one_block bad
	run -0 bash -c 'chute stream -b 4 --mode eval --on-error skip -f jsonl bad 2>err >out'
	local n
	n=$(wc -l <out)
	[ "$n" -lt 40 ] || fail "expected fewer than 40 samples, got $n"
	assert_equal "$(cut -d, -f1 out | sort | uniq -d | wc -l)" 0
	run -0 cat err
	assert_output --regexp "skipped $((40 - n)) corrupt samples?\$"
}

# ---------------------------------------------------------- statistics

@test "stream: --index-memory bounds the open shards: the same bytes, shards reopened, a global shuffle refused" {
	# ds: 5 shards of 5 samples; an open shard takes a few hundred bytes
	local mode
	for mode in window none; do
		chute stream --shuffle "$mode" --window 2 -b 3 -e 2 -w 2 ds >"ref.$mode"
		run -0 chute stream --shuffle "$mode" --window 2 -b 3 -e 2 -w 2 \
			--index-memory 1 --stats-json "st.$mode" -o "small.$mode" ds
		cmp "ref.$mode" "small.$mode" ||
			fail "--shuffle $mode: --index-memory 1 changes the stream"
		run -0 "$PYTHON" -c '
import json, sys
s = json.load(open(sys.argv[1]))
# every shard is closed as soon as it is unpinned: each read reopens one
assert s["shard_opens"] > 5, s
' "st.$mode"
	done
	run -0 chute stream --stats-json st.big -b 3 -e 2 ds
	run -0 "$PYTHON" -c '
import json
s = json.load(open("st.big"))
assert s["shard_opens"] == 5 and 0 < s["index_peak_bytes"] < 1e6, s
'
	run -2 chute stream --index-memory 1K ds
	assert_output --regexp "^chute stream: a global shuffle keeps every shard's index open: 0\.[0-9]M for this dataset, more than the index memory allowed \(0\.0M\); allow more, or shuffle by window, which holds only a window's shards \(--index-memory, --shuffle\)$"
	run -0 chute stream --mode eval --index-memory 1 -b 4 -o eval.out ds
	# a shard reopened at a closed one's address gets no stale block or
	# dictionary (zstd dictionaries are per shard)
	chute pack -q --dict -s 5s src -o dict >/dev/null
	chute stream --shuffle window --window 2 -b 3 -e 3 -w 1 -f jsonl dict >ref.dict
	run -0 chute stream --shuffle window --window 2 -b 3 -e 3 -w 1 -f jsonl \
		--index-memory 1 -o small.dict dict
	cmp ref.dict small.dict || fail "--index-memory 1 changes a --dict stream"
}

@test "stream: --split streams one split as a dataset: its samples only, eval covers it, cursors stay in it" {
	cp -r ds sp
	run -0 chute split sp --val 0.3 --seed 7
	chute stream --mode eval -f jsonl -b 4 --split val sp >val.jsonl
	chute stream --mode eval -f jsonl -b 4 --split train sp >train.jsonl
	keys() { "$PYTHON" -c 'import json,sys; [print(json.loads(l)["key"]) for l in open(sys.argv[1])]' "$1"; }
	keys val.jsonl | sort >val.keys
	keys train.jsonl | sort >train.keys
	[ -s val.keys ] && [ -s train.keys ] || fail "an empty split"
	[ -z "$(comm -12 val.keys train.keys)" ] || fail "a key in both splits"
	[ "$(sort -u val.keys train.keys | wc -l)" -eq 23 ] || fail "the splits do not cover the dataset"
	[ "$(sort -u val.keys | wc -l)" -eq "$(wc -l <val.keys)" ] || fail "a val sample twice"
	# a shuffled split: only its samples, the same bytes for any workers
	chute stream -f jsonl -b 2 -e 2 --seed 3 --split train -w 1 sp >t1
	chute stream -f jsonl -b 2 -e 2 --seed 3 --split train -w 3 sp >t3
	cmp t1 t3 || fail "--split train depends on --workers"
	keys t1 | sort -u >t1.keys
	cmp t1.keys train.keys || fail "a shuffled train epoch is not the train split"
	# resuming: within the split; a cursor of another split is refused
	chute stream -b 2 --seed 3 --split train sp >full
	frames full >full.frames
	cursor=$(sed -n 3p full.frames | cut -d' ' -f6)
	end=$(sed -n 3p full.frames | cut -d' ' -f5)
	chute stream -b 2 --seed 3 --split train --resume "$cursor" sp >rest
	cmp rest <(tail -c +$((end + 1)) full) ||
		fail "resuming a split's stream after batch 3 differs from the rest of it"
	run -2 chute stream -b 2 --seed 3 --split val --resume "$cursor" sp
	assert_output --partial "other stream options"
	run -2 chute stream --split test sp
	assert_output "chute stream: 'sp' has no split 'test'; its splits: train, val"
	run -2 chute stream --split val ds
	assert_output "chute stream: 'ds' has no splits: make them with chute split"
	# a damaged split file is a data error
	printf 'xxxxxxxx' >>sp/splits/val-*.ids
	run -1 chute stream --split val sp
	assert_output --partial "val-"
}

@test "stream: a compressed block is decoded once while it is cached, whatever the workers" {
	mkdir txt
	local i
	for i in $(seq 10 49); do
		# 180 KB: a block takes long enough to decode that workers
		# asking for it at once would each decode it
		yes "line of sample $i" | head -n 10000 >"txt/t$i.txt"
	done
	chute pack -q -s 20s txt -o tx >/dev/null
	misses() {
		chute stream -b 3 -e 3 -w "$1" --stats-json "st.$1" tx >/dev/null
		"$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["cache_misses"])' "st.$1"
	}
	local one
	one=$(misses 1)
	[ "$one" -gt 0 ] || fail "no compressed block was read"
	for i in 1 2 3 4 5; do
		[ "$(misses 8)" = "$one" ] || fail "8 workers decoded a block twice"
	done
}

@test "stream: --stats-json writes the statistics as one JSON object" {
	run -0 chute stream -b 4 --stats-json st.json ds
	run -0 "$PYTHON" -c '
import json
s = json.load(open("st.json"))
assert s["samples"] == 23 and s["batches"] == 6, s
for k in ("seconds", "samples_per_s", "read_busy_s", "wait_workers_s",
          "wait_consumer_s", "input_bound_percent", "workers", "prefetch"):
    assert k in s, k
'
}

@test "bench: streams into nothing and names the limiting stage" {
	# long enough to measure: 0.1 s and 10 batches at least
	run -0 chute bench -b 1 -e 5000 ds
	assert_line --index 0 --regexp "^chute bench: 115000 batches, 115000 samples, .* in [0-9.]+ m?s$"
	assert_output --partial "read + decompress"
	assert_output --regexp "limiting stage: (the writer|read|encode)"
	run -2 chute bench --output x ds
}

@test "bench: a run too short to measure names no stage, shows no inf, advises nothing" {
	local w
	for w in 0 2; do
		run -0 chute bench -w "$w" -b 4 ds
		assert_line --index 0 --regexp "^chute bench: 6 batches, 23 samples, .* in [0-9.]+ ms$"
		refute_output --partial "inf"
		refute_output --partial "0.00 s"
		refute_output --partial "add workers"
		assert_line --regexp "^limiting stage: not measured: 6 batches in [0-9.]+ ms is too short to tell \(0.1 s and 10 batches at least\)"
	done
}

# A FIFO waits in open() for a writer, past SIGTERM: SIGKILL after 20 s
# turns a regression into exit 137 instead of a hang.
@test "stream: a FIFO where a shard or the manifest should be exits 2 at once, naming it" {
	shard=ds/$(mjson ds 'm["shards"][0]["path"]')
	rm "$shard"
	mkfifo "$shard"
	run -2 timeout -s KILL 20 chute stream -f jsonl --mode eval ds
	assert_output --partial "'$shard': it is a FIFO, not a regular file"
	cp -r ds ds2
	rm ds2/manifest.json
	mkfifo ds2/manifest.json
	run -2 timeout -s KILL 20 chute stream -f jsonl ds2
	assert_output --partial "'ds2/manifest.json': it is a FIFO"
}

@test "stream: a shard copied over another of the same size exits 1 naming it, whatever the shuffle" {
	pack_swapped sw
	run -1 chute stream --format jsonl -o out sw
	assert_output --partial "chute stream: 'shards/sw-000001.chs' is not the shard the manifest names: its seal is "
	run -1 chute stream --format jsonl --shuffle none -o out sw
	assert_output --partial "'shards/sw-000001.chs' is not the shard the manifest names"
}
