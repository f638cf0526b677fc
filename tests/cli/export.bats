#!/usr/bin/env bats
# chute export: shards back to WebDataset tars.

load helper

setup() {
	chute_setup
	mkfixture src
	chute pack -q -s 8s src -o ds >/dev/null
}

@test "export: one tar per shard, and tar -x gives back the source files" {
	local nshards
	nshards=$(mjson ds 'len(m["shards"])')
	[ "$nshards" -gt 1 ] || fail "expected several shards"
	run -0 chute export ds -o out
	assert_output --regexp "^exported $nshards shards \\($(mjson ds 'm["samples"]') samples, [0-9.]+ [kMG]?B\\) into out\$"
	run -0 bash -c 'ls out | grep -c "^ds-[0-9]\{6\}\.tar$"'
	assert_output "$nshards"
	run -0 ls out/ds-000000.tar
	mkdir x
	local t
	for t in out/*.tar; do
		tar -C x -xf "$t"
	done
	run -0 diff -r src x
}

@test "export: the tars pack back to the same samples" {
	chute export ds -o out
	run -0 chute pack out/*.tar -o back
	assert_equal "$(sample_hashes back)" "$(sample_hashes ds)"
}

@test "export: members are KEY.FIELD in sample order with deterministic headers" {
	mkdir -p two/sub
	printf 1 >two/b.txt
	printf 22 >two/b.seg.png
	printf 333 >two/a.jpg
	printf 4444 >two/sub/c.json
	chute pack -q two -o ds2 >/dev/null
	chute export ds2 -o out
	run -0 tar -tf out/ds2-000000.tar
	assert_output "$(printf 'a.jpg\nb.seg.png\nb.txt\nsub/c.json')"
	run -0 "$PYTHON" - <<'EOF'
import tarfile
with tarfile.open("out/ds2-000000.tar") as t:
    for m in t.getmembers():
        assert m.isfile(), m.name
        assert (m.mtime, m.uid, m.gid, m.mode) == (0, 0, 0, 0o644), (m.name, m.mtime, m.uid, m.gid, oct(m.mode))
EOF
}

# One tar writer (stream/encode_tar.c) for export and stream --format tar:
# a shard exported and the same shard streamed in order are the same
# bytes, long names (pax headers) and all, and every tar reader at hand
# reads them.
@test "export: a shard exported and streamed in order give the same tar bytes, which GNU tar, libarchive and Python read" {
	local split unsplit
	split=d/$(printf 'a%.0s' {1..120})
	unsplit=$(printf 'l%.0s' {1..130})
	mkdir -p long/"$split"
	printf 1 >long/"$split"/x.txt
	printf 22 >long/"$unsplit".bin
	printf 333 >long/caf$'\xc3\xa9'.txt
	: >long/empty.txt
	chute pack -q long -o dl >/dev/null
	chute export dl -o out
	chute stream -q -f tar -b 3 --shuffle none dl >streamed.tar
	cmp out/dl-000000.tar streamed.tar
	run -0 tar -tf out/dl-000000.tar
	assert_output "$(printf '%s\n' caf$'\xc3\xa9'.txt "$split/x.txt" empty.txt "$unsplit.bin")"
	# the unsplittable name gets a pax header ('x'), not a GNU one ('L')
	run -0 "$PYTHON" - "$unsplit.bin" <<'EOF'
import sys, tarfile
data = open("out/dl-000000.tar", "rb").read()
types = [data[o + 156:o + 157] for o in range(0, len(data), 512)]
assert b"L" not in types and types.count(b"x") == 1, types
with tarfile.open("out/dl-000000.tar") as t:
    assert sys.argv[1] in t.getnames(), t.getnames()
EOF
	run -0 chute pack -q out/dl-000000.tar -o back
	assert_equal "$(sample_hashes back)" "$(sample_hashes dl)"
	if command -v bsdtar >/dev/null; then
		run -0 bsdtar -tf out/dl-000000.tar
		assert_line "$unsplit.bin"
	fi
}

@test "export: exporting twice gives identical tar bytes" {
	chute export ds -o one
	chute export ds -o two
	local t
	for t in one/*.tar; do
		cmp "$t" "two/${t#one/}"
	done
	run -0 diff -r one two
}

@test "export: leaves only finished tars in the output folder" {
	chute export ds -o out
	run -0 bash -c 'ls -A out | grep -v "^ds-[0-9]\{6\}\.tar$" || true'
	assert_output ""
}

@test "export: a single shard exports to its own tar" {
	local s1
	s1=$(shard_of ds 1)
	run -0 chute export "$s1" -o out
	run -0 ls out
	assert_output ds-000001.tar
	chute export ds -o all
	cmp out/ds-000001.tar all/ds-000001.tar
}

@test "export: a corrupt shard exits 1 and leaves no tar for it, finished or not" {
	local last
	last=$(shard_of ds $(($(mjson ds 'len(m["shards"])') - 1)))
	flip_byte "$last" "$(block_middle "$last" 0)"
	run -1 chute export ds -o out
	assert_line --regexp '^chute export: '
	local base=${last##*/}
	assert_file_not_exists "out/${base%.chs}.tar"
	run -0 bash -c 'ls -A out | grep -v "^ds-[0-9]\{6\}\.tar$" || true'
	assert_output ""
}

@test "export: a dataset that does not exist exits 2" {
	run -2 chute export nosuch -o out
	assert_output --regexp '^chute export: '
}

# A killed export leaves OUTDIR/.NAME.tar.tmp-PID unlocked.  `exec` gives
# chute the shell's PID, the case of PID 1 in every container.
@test "export: a dead run's temporary, even one named with this run's PID, is removed and does not block" {
	mkdir out
	echo left >out/.ds-000000.tar.tmp-1
	run -0 bash -c 'echo left >out/.ds-000000.tar.tmp-$$ &&
		exec chute export ds -o out'
	run -0 ls -A out
	refute_output --partial .tmp-
}

@test "export: a live run's locked temporary is left alone" {
	mkdir out
	echo live >out/.ds-000000.tar.tmp-77
	# one process holding the lock, so that killing it frees the lock
	(flock 9 && exec sleep 30) 9<out/.ds-000000.tar.tmp-77 3>&- &
	local holder=$!
	wait_locked out/.ds-000000.tar.tmp-77
	run -0 chute export ds -o out
	kill "$holder"
	wait "$holder" || true
	run -0 cat out/.ds-000000.tar.tmp-77
	assert_output live
	run -0 tar -tf out/ds-000000.tar
}

@test "export: a shard copied over another of the same size exits 1 naming it" {
	pack_swapped sw
	run -1 chute export sw -o out2
	assert_output --partial "chute export: 'shards/sw-000001.chs' is not the shard the manifest names: its seal is "
}
