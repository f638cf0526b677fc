#!/usr/bin/env bats
# pack --level 0 stores every block raw, and a stream reads a local shard's
# raw blocks in place, through a mapping of the file (shard/reader.c
# ch_block_map): the batches must be byte for byte those of a compressed
# pack of the same files, whatever the workers and the cache size, and a
# mapped block is checked against its hash before any of it is used.

load helper

# mktext DIR N: N compressible text samples of 100 to 400 bytes.
mktext() {
	"$PYTHON" - "$1" "$2" <<'EOF2' || fail "cannot write $1"
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
os.makedirs(root)
for i in range(n):
    words = " ".join(str(i * 7 + k) for k in range(20 + i % 60))
    with open(os.path.join(root, "s%04d.txt" % i), "w") as f:
        f.write("sample %d: %s\n" % (i, words))
EOF2
}

# codecs DS: the codec of every block of DS's shards, one a line.
codecs() {
	PYTHONPATH="$REPO_ROOT/python" "$PYTHON" - "$1" <<'EOF2'
import glob, os, sys
from chute.shard import Shard
for path in sorted(glob.glob(os.path.join(sys.argv[1], "shards", "*.chs"))):
    for offset, stored, raw, h, codec in Shard(path).blocks:
        print(codec)
EOF2
}

setup() {
	cd "$BATS_TEST_TMPDIR"
}

@test "raw: pack --level 0 stores every block raw, the same samples as level 3" {
	mktext src 600
	run -0 chute pack -q -b 8K src -o z
	run -0 chute pack -q -l 0 -b 8K src -o raw
	assert_equal "$(sample_hashes raw)" "$(sample_hashes z)"
	run -0 chute verify --deep raw
	assert_equal "$(codecs raw | sort -u)" 0
	assert_equal "$(codecs z | sort -u | head -1)" 1
	# compressible text: raw takes more room
	[ "$(du -sb raw/shards | cut -f1)" -gt "$(du -sb z/shards | cut -f1)" ]
}

@test "raw: --level 0 with --dict is a usage error that writes nothing" {
	mktext src 50
	mkdir out
	run -2 chute pack -l 0 --dict src -o out/ds
	assert_output --partial 'level 0 stores blocks raw'
	run -2 chute pack -l -1 src -o out/ds
	assert_no_entries out
}

@test "raw: streams of a raw pack equal those of a compressed one, any workers and cache" {
	mktext src 600
	chute pack -q -b 8K src -o z
	chute pack -q -l 0 -b 8K src -o raw
	chute stream -q -e 3 -b 32 --seed 7 -f tar z >want.tar
	for opts in "-w 0" "-w 1" "-w 2" "-w 3 --cache 16K" "-w 2 --cache 1"; do
		# shellcheck disable=SC2086 # options, one a word
		chute stream -q -e 3 -b 32 --seed 7 -f tar $opts raw >got.tar ||
			fail "stream $opts failed"
		cmp want.tar got.tar || fail "stream $opts differs"
	done
	# read in place: the blocks go through the block cache, once each
	chute verify raw >verify.out
	blocks=$(sed -n 's/^ok: 1 shard, \([0-9]*\) blocks.*/\1/p' verify.out)
	[ "$blocks" -gt 5 ] || fail "only '$blocks' blocks: $(cat verify.out)"
	run -0 chute stream --stats -q -e 3 -b 32 -f tar raw -o /dev/null
	assert_output --regexp "block cache: [0-9]+ hits, $blocks misses; 0 samples read alone;"
	# (frames carry the dataset's id in their cursors: jsonl does not)
	chute stream -q -e 2 -b 32 --seed 7 --shuffle window -f jsonl z >want
	chute stream -q -e 2 -b 32 --seed 7 --shuffle window -f jsonl raw >got
	cmp want got
}

@test "raw: a flipped byte in a raw block fails the stream naming the sample, or skips just it" {
	mktext src 200
	chute pack -q -l 0 -b 8K src -o raw
	shard=$(ls raw/shards/*.chs)
	# the first block starts at byte 64; its first sample is s0000
	flip_byte "$shard" 70
	for w in 1 2; do
		run -1 chute stream -q -w "$w" -e 1 -b 16 -f tar raw
		assert_output --partial "content hash mismatch in sample 's0000' of block 0"
		assert_output --partial "$shard"
		refute_output --partial "(sample 's0000')"
	done
	# the sample alone is skipped, its place going to another one
	chute stream -q -e 1 -b 16 -f jsonl --on-error skip raw >out.jsonl 2>err
	assert_equal "$(cat err)" "chute stream: skipped 1 corrupt sample"
	assert_equal "$(wc -l <out.jsonl)" 200
	run grep -c '"key":"s0000"' out.jsonl
	assert_output 0
}

# mkbig DIR N MIN: N samples of MIN to MIN + 24K random letters (zstd
# takes about a third off).
mkbig() {
	"$PYTHON" - "$1" "$2" "$3" <<'EOF2' || fail "cannot write $1"
import os, random, sys
root, n, low = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = random.Random(n)
os.makedirs(root)
for i in range(n):
    with open(os.path.join(root, "b%03d.bin" % i), "wb") as f:
        n = low + r.randrange(24 * 1024)
        f.write(bytes(r.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(n)))
EOF2
}

@test "raw: samples of 16 KiB and more are read alone, not through a mapped block: the same batches, a flipped byte names the sample" {
	mkbig big 40 16384
	chute pack -q -l 0 -b 128K big -o raw
	chute pack -q -b 128K big -o z
	[ "$(codecs raw | sort -u)" = 0 ] || fail "not all raw: $(codecs raw)"
	codecs z | grep -qv '^0$' || fail "nothing compressed: $(codecs z)"
	for shuffle in global none; do
		chute stream -q -e 2 -b 8 --shuffle "$shuffle" -f tar z >want.tar
		for w in 0 1 3; do
			chute stream -q -e 2 -b 8 --shuffle "$shuffle" -w "$w" -f tar raw >got.tar
			cmp want.tar got.tar || fail "--shuffle $shuffle -w $w differs"
		done
	done
	# no block is hashed whole: none goes through the block cache
	run -0 chute stream --stats -q -e 2 -b 8 -f tar raw -o /dev/null
	assert_output --partial "block cache: 0 hits, 0 misses; 80 samples read alone;"
	chute stream -q -e 2 -b 8 -f tar --stats-json st.json raw >/dev/null
	run "$PYTHON" -c 'import json; d = json.load(open("st.json")); print(d["read_alone"], d["cache_misses"])'
	assert_output "80 0"
	# smaller samples in the same blocks still are
	mkbig mixed 40 1024
	chute pack -q -l 0 -b 128K mixed -o rawmixed
	run -0 chute stream --stats -q -e 1 -b 8 -f tar rawmixed -o /dev/null
	assert_output --regexp "block cache: [0-9]+ hits, [1-9][0-9]* misses"
	# a byte of b000 (the first sample, from byte 64 on) flipped
	flip_byte "$(ls raw/shards/*.chs)" 5000
	for w in 1 2; do
		run -1 chute stream -q -w "$w" -e 1 -b 8 -f tar raw
		assert_output --partial "content hash mismatch in sample 'b000' of block 0"
	done
	chute stream -q -e 1 -b 8 -f jsonl --on-error skip raw >out.jsonl 2>err
	assert_equal "$(cat err)" "chute stream: skipped 1 corrupt sample"
	assert_equal "$(wc -l <out.jsonl)" 40
}
