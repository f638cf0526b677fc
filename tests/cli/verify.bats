#!/usr/bin/env bats
# chute verify: every byte of a dataset is covered by a checksum.

load helper

setup() {
	chute_setup
	mkfixture src
	# five samples a shard and 1K blocks: several shards, several blocks each
	chute pack -q -s 5s -b 1K src -o ds >/dev/null
	NSHARDS=$(mjson ds 'len(m["shards"])')
	NSAMPLES=$(mjson ds 'm["samples"]')
	S0=$(shard_of ds 0)
	S1=$(shard_of ds 1)
}

@test "verify: a clean dataset exits 0 with an ok line" {
	run -0 chute verify ds
	assert_line --index -1 --regexp "^ok: $NSHARDS shards, [0-9]+ blocks, $NSAMPLES samples, [0-9.]+ [kMGT]?B\$"
	assert_equal "${#lines[@]}" 1
}

@test "verify: --deep on a clean dataset exits 0" {
	run -0 chute verify --deep ds
	assert_line --index -1 --regexp "^ok: $NSHARDS shards, "
}

@test "verify: a flipped bit in the header exits 1" {
	flip_byte "$S0" 40
	run -1 chute verify ds
	assert_output --partial "${S0##*/}"
	assert_output --partial header
	assert_line --index -1 --regexp '^FAILED: [0-9]+ problems? in 1 shard$'
}

@test "verify: a flipped bit in a block exits 1 and names the block" {
	local off
	off=$(block_middle "$S0" 1)
	[ -n "$off" ] || fail "shard $S0 has no block 1: $(shard_layout "$S0")"
	flip_byte "$S0" "$off"
	run -1 chute verify ds
	assert_output --regexp "${S0##*/}: block 1[ :]"
	refute_output --regexp 'block 0[ :]'
	assert_line --index -1 --regexp '^FAILED: [0-9]+ problems? in 1 shard$'
}

@test "verify: a flipped bit in the index exits 1" {
	local ioff
	ioff=$(shard_layout "$S0" | awk '$1 == "index" { print $2 }')
	flip_byte "$S0" $((ioff + 3))
	run -1 chute verify ds
	assert_output --partial "${S0##*/}"
	assert_output --partial index
}

@test "verify: a flipped bit in the footer exits 1" {
	flip_byte "$S0" -40
	run -1 chute verify ds
	assert_output --partial "${S0##*/}"
	assert_output --partial footer
}

@test "verify: a truncated shard exits 1" {
	truncate -s -100 "$S0"
	run -1 chute verify ds
	assert_output --partial "${S0##*/}"
	assert_line --index -1 --regexp '^FAILED: '
}

@test "verify: a missing shard exits 1 and names it" {
	rm "$S1"
	run -1 chute verify ds
	assert_output --partial "${S1##*/}"
	assert_output --regexp '(missing|not found|No such file)'
}

@test "verify: an unexpected .chs file in shards/ exits 1 and names it" {
	cp "$S0" ds/shards/stray.chs
	run -1 chute verify ds
	assert_output --partial stray.chs
	refute_output --partial "${S0##*/}:"
}

@test "verify: two shards swapped by renaming exit 1 naming both" {
	mv "$S0" tmp.chs
	mv "$S1" "$S0"
	mv tmp.chs "$S1"
	run -1 chute verify ds
	assert_output --partial "${S0##*/}"
	assert_output --partial "${S1##*/}"
}

@test "verify: a manifest whose sample count was edited exits 1" {
	# the last shard and the total, so that the manifest still parses
	"$PYTHON" - <<'EOF'
import json
m = json.load(open("ds/manifest.json"))
m["shards"][-1]["samples"] += 1
m["samples"] += 1
json.dump(m, open("ds/manifest.json", "w"), indent=2)
EOF
	local last
	last=$(shard_of ds $((NSHARDS - 1)))
	run -1 chute verify ds
	assert_output --partial "${last##*/}"
	assert_output --partial manifest
	assert_line --index -1 --regexp '^FAILED: '
}

# totals_edited STATEMENTS: a copy of ds, edited, its id recomputed (so
# that only the totals can tell), verified: exit 1, the output in $output.
totals_edited() {
	rm -rf ed && cp -a ds ed
	edit_manifest ed "$1
reid = True"
	run -1 chute verify ed
}

@test "verify: every total the manifest states is held against the shards, its id recomputed" {
	run -0 chute verify ds
	# the schema: a field's count, its bytes (the sum kept), a field the
	# schema lacks, a field no shard holds
	totals_edited 'm["schema"]["fields"]["txt"]["count"] -= 1'
	assert_line --index 0 "ed: the manifest's schema.fields.txt.count is 7, the shards hold 8"
	assert_line --index -1 'FAILED: 1 problem in 0 shards'
	totals_edited 'm["schema"]["fields"]["jpg"]["bytes"] = 5
m["bytes"] += 5 - 20778'
	assert_line --index 0 "ed: the manifest's schema.fields.jpg.bytes is 5, the shards hold 20778"
	totals_edited 'f = m["schema"]["fields"].pop("seg.png")
m["bytes"] -= f["bytes"]'
	# (each shard holding it is the problem, named)
	assert_output --regexp "holds field 'seg.png', which the manifest's schema does not list"
	refute_output --partial "schema.fields has no seg.png"
	totals_edited 'm["schema"]["fields"]["npy"] = {"count": 2, "bytes": 0}'
	assert_line --index 0 "ed: the manifest's schema.fields.npy.count is 2, the shards hold 0"
	# the dataset's totals must add up from the entries, which are the
	# files': each edit is a problem that names what it edited
	totals_edited 'm["samples"] += 1'
	assert_output --partial "ed: samples: $((NSAMPLES + 1)), but the shards hold $NSAMPLES (ed/manifest.json)"
	totals_edited 'm["shard_bytes"] += 1'
	assert_output --regexp "^ed: shard_bytes: ([0-9]+), but the shards add up to [0-9]+ \(ed/manifest.json\)"
	totals_edited 'm["shards"][0]["bytes"] += 1
m["shard_bytes"] += 1'
	assert_output --regexp "${S0##*/}: size [0-9]+ differs from the manifest's"
	totals_edited 'm["shards"][0]["samples"] -= 1
m["samples"] -= 1
for s in m["shards"][1:]:
    s["first_sample"] -= 1'
	assert_output --partial "${S0##*/}: holds 5 samples, the manifest says 4"
}

@test "verify: the schema's totals are problems of kind count in --json, and of part 0 alone" {
	edit_manifest ds 'm["schema"]["fields"]["cls"]["count"] = 3
reid = True'
	run -1 chute verify --json ds
	"$PYTHON" -c '
import json, sys
r = json.loads(sys.argv[1])
assert [(p["kind"], p["shard"], p["message"]) for p in r["problems"]] == [
    ("count", None, "the manifest'"'"'s schema.fields.cls.count is 3, the shards hold 9")], r
' "$output"
	# part 0 counts every shard's fields (hashing only its own), part 1
	# none: together what one verify says
	run -1 chute verify --part 0/2 ds
	assert_line --index 0 "ds: the manifest's schema.fields.cls.count is 3, the shards hold 9"
	assert_line --index -1 --regexp "^FAILED: 1 problem in 0 shards$"
	run -0 chute verify --part 1/2 ds
	# a shard missing leaves the totals unknown: the shard is reported,
	# not the schema
	rm "$S1"
	run -1 chute verify ds
	refute_output --partial "schema.fields"
	assert_output --partial "${S1##*/}: missing"
}

@test "verify: every problem is reported, not just the first" {
	flip_byte "$S0" "$(block_middle "$S0" 0)"
	flip_byte "$S1" "$(block_middle "$S1" 0)"
	run -1 chute verify ds
	assert_output --partial "${S0##*/}"
	assert_output --partial "${S1##*/}"
	assert_line --index -1 --regexp '^FAILED: [0-9]+ problems? in 2 shards$'
}

@test "verify: --jobs 1 and --jobs 4 find the same problems" {
	flip_byte "$S0" "$(block_middle "$S0" 0)"
	flip_byte "$S1" -40
	run -1 chute verify -j 1 ds
	local one=$output
	run -1 chute verify -j 4 ds
	assert_equal "$(sort <<<"$output")" "$(sort <<<"$one")"
}

@test "verify: --deep hashes files beside the blocks: the same problems for --jobs 1 and 4, file hashes and blocks alike" {
	flip_byte "$S0" "$(block_middle "$S0" 0)"
	flip_byte "$S1" -40
	run -1 chute verify --deep -j 1 ds
	local one=$output
	assert_output --partial "${S0##*/}: file hash"
	assert_output --regexp "${S0##*/}.*block 0"
	assert_output --partial "${S1##*/}"
	run -1 chute verify --deep -j 4 ds
	assert_equal "$(sort <<<"$output")" "$(sort <<<"$one")"
}

@test "verify: damage at the edges of a 256 KiB read is found in its blocks alone, alike for --jobs 1 and 2" {
	# shards are read 256 KiB at a time (common/read_range.c): byte 262144
	# begins the second read, byte 524287 ends it
	random_files big 8 100000 3
	chute pack -q -l 0 -b 64K big -o bigds >/dev/null
	local s b1 b2 one
	s=$(shard_of bigds 0)
	b1=$(shard_layout "$s" | awk '$1 == "block" && $3 <= 262144 && 262144 < $3 + $4 { print $2 }')
	b2=$(shard_layout "$s" | awk '$1 == "block" && $3 <= 524287 && 524287 < $3 + $4 { print $2 }')
	[ -n "$b1" ] && [ -n "$b2" ] && [ "$b1" != "$b2" ] ||
		fail "bytes 262144 and 524287 are not in two blocks: $(shard_layout "$s")"
	flip_byte "$s" 262144
	flip_byte "$s" 524287
	run -1 chute verify -j 1 bigds
	one=$output
	assert_output --partial "file hash"
	assert_output --regexp "block $b1[ :]"
	assert_output --regexp "block $b2[ :]"
	assert_equal "$(grep -c 'checksum mismatch' <<<"$output")" 2
	run -1 chute verify -j 2 bigds
	assert_equal "$(sort <<<"$output")" "$(sort <<<"$one")"
}

@test "verify: several arguments are all checked, even after one that cannot be" {
	flip_byte "$S1" "$(block_middle "$S1" 0)"
	run -2 chute verify "$S0" nosuch "$S1"
	assert_line --regexp '^chute verify: .*nosuch'
	assert_output --regexp "${S1##*/}: block 0[ :]"
}

@test "verify: --json is one valid JSON report, with the problems" {
	chute verify --json ds >clean.json
	run -0 "$PYTHON" -c 'import json; json.load(open("clean.json"))'
	flip_byte "$S0" "$(block_middle "$S0" 0)"
	local status=0
	chute verify --json ds >bad.json || status=$?
	assert_equal "$status" 1
	run -0 "$PYTHON" -c '
import json
r = json.load(open("bad.json"))
p = r["problems"]
assert isinstance(p, list) and len(p) >= 1, r
assert any("'"${S0##*/}"'" in json.dumps(x) for x in p), p
'
}

@test "verify: a single .chs path can be verified alone" {
	run -0 chute verify "$S0"
	assert_line --index -1 --regexp '^ok: 1 shard, [0-9]+ blocks?, 5 samples, '
	flip_byte "$S0" "$(block_middle "$S0" 0)"
	run -1 chute verify "$S0"
	assert_output --partial "block 0"
}

# forge_sample SHARD: changes one byte of sample 0's data in a raw block and
# recomputes the block hash, the index (stored raw), the index hash and the
# footer hash, so that only the sample's content hash is wrong.
forge_sample() {
	PYTHONPATH="$BATS_TEST_DIRNAME" "$PYTHON" - "$1" <<'EOF' || fail "cannot forge $1"
import struct, subprocess, sys
from shard_index import decoded_index
def xxh3_64(b):
    out = subprocess.run(["xxhsum", "-H3", "-"], input=b, stdout=subprocess.PIPE, check=True).stdout
    return int(out.split()[-1], 16)
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
foot = data[-64:]
ioff, isize, iraw, _ih, nsamples, nblocks, codec = struct.unpack_from("<QQQQQII", foot)
index = bytearray(decoded_index(data))
sample0 = 64 + 40 * nblocks
_h, soff, sblock = struct.unpack_from("<QQI", index, sample0)
bent = 64 + 40 * sblock
boff, bstored, braw, _bh, bcodec = struct.unpack_from("<QQQQI", index, bent)
assert bcodec == 0, "block %d is not raw (codec %d)" % (sblock, bcodec)
data[boff + soff] ^= 1
struct.pack_into("<Q", index, bent + 24, xxh3_64(bytes(data[boff:boff + bstored])))
footer = bytearray(struct.pack("<QQQQQII", ioff, len(index), len(index), xxh3_64(bytes(index)), nsamples, nblocks, 0))
footer += struct.pack("<Q", xxh3_64(bytes(footer))) + b"CHSFOOT1"
open(path, "wb").write(bytes(data[:ioff]) + bytes(index) + bytes(footer))
EOF
}

@test "verify: --deep finds a sample whose bytes changed under a recomputed block hash" {
	mkdir rnd
	"$PYTHON" -c '
import random
rng = random.Random(5)
for i in range(4):
    open("rnd/k%d.bin" % i, "wb").write(rng.randbytes(2000))'
	chute pack -q rnd -o rds >/dev/null
	cp "$(shard_of rds)" lone.chs
	forge_sample lone.chs
	run -0 chute verify lone.chs
	run -1 chute verify --deep lone.chs
	assert_output --partial k0
	assert_line --index -1 --regexp '^FAILED: 1 problem in 1 shard$'
}

@test "verify: garbage is a clean error (exit 1 or 2), never a crash" {
	: >empty.chs
	head -c 5000 /dev/urandom >random.chs
	{ printf '\211CHS\r\n\032\n'; head -c 200 /dev/zero; } >zeros.chs
	head -c 64 "$S0" >headeronly.chs
	{ head -c 64 "$S0"; tail -c 64 "$S0"; } >headfoot.chs
	mkdir badman && printf '{"shards": [' >badman/manifest.json
	mkdir notjson && printf 'hello' >notjson/manifest.json
	local g
	for g in empty.chs random.chs zeros.chs headeronly.chs headfoot.chs badman notjson; do
		run chute verify "$g"
		[ "$status" -eq 1 ] || [ "$status" -eq 2 ] ||
			fail "verify $g exited $status: $output"
		[ -n "$output" ] || fail "verify $g printed nothing"
	done
}

@test "verify: a path that does not exist exits 2" {
	run -2 chute verify nosuch
	assert_output --regexp '^chute verify: '
}

# A FIFO waits in open() for a writer, past SIGTERM: SIGKILL after 20 s
# turns a regression into exit 137 instead of a hang.
@test "verify: a FIFO where a shard or the manifest should be exits 2 at once, naming it" {
	rm "$S0"
	mkfifo "$S0"
	run -2 timeout -s KILL 20 chute verify ds
	assert_output --partial "'$S0'"
	assert_output --partial "not a regular file"
	run -2 timeout -s KILL 20 chute verify --deep "$S0"
	assert_output --partial "'$S0'"
	cp -r ds ds2
	rm ds2/manifest.json
	mkfifo ds2/manifest.json
	run -2 timeout -s KILL 20 chute verify ds2
	assert_output --partial "'ds2/manifest.json'"
}

# huge_shard.py makes a valid shard whose one sample declares SIZE bytes
# (zeros: a 8 GiB sample is a 256 KiB shard).  Under `ulimit -v` a reader
# that allocated first would fail on memory, not on the declared size.
@test "verify: a shard declaring a 1 TB sample is refused before anything is allocated, exit 1" {
	! grep -q __asan_init "$CHUTE_BIN" || skip "ASan needs more address space than ulimit -v leaves"
	"$PYTHON" "$BATS_TEST_DIRNAME/huge_shard.py" huge.chs $((1 << 40))
	run -1 bash -c 'ulimit -v 1000000; exec chute verify --deep huge.chs'
	assert_output --partial "block 0 declares 1099511627776 bytes decoded, more than a block may hold (17179869184) ('huge.chs')"
	# more than the format allows is corrupt data: exit 1 for every
	# reader, cat included
	run -1 bash -c 'ulimit -v 1000000; exec chute cat huge.chs big'
	assert_output --partial "block 0 declares 1099511627776 bytes decoded"
}

@test "verify: running out of memory for a sample is exit 2, not a verdict on the data" {
	! grep -q __asan_init "$CHUTE_BIN" || skip "ASan needs more address space than ulimit -v leaves"
	"$PYTHON" "$BATS_TEST_DIRNAME/huge_shard.py" huge.chs $((8 << 30))
	run -2 bash -c 'ulimit -v 1000000; exec chute verify --deep huge.chs'
	assert_output "chute verify: out of memory for block 0 of 'huge.chs' (8589934592 bytes decoded)"
	"$PYTHON" "$BATS_TEST_DIRNAME/huge_shard.py" small.chs 1000000 hash
	run -0 chute verify --deep small.chs
}

@test "verify: a manifest of 20000 shards, all missing, reports each once and counts them" {
	"$PYTHON" "$REPO_ROOT/scripts/gen-manifest.py" 20000 big || fail "gen-manifest.py failed"
	mkdir -p big/shards && touch big/shards/stray.chs
	run -0 chute manifest big
	assert_line --index 1 "id:        matches the content"
	run -1 chute verify big
	assert_line --index 0 "big/shards/stray.chs: shard not listed in the manifest"
	assert_line --index 1 "big/shards/big-000000.chs: missing: No such file or directory"
	assert_line --index -1 "FAILED: 20001 problems in 20001 shards"
	assert_equal "$(grep -c ': missing: ' <<<"$output")" 20000
	run -1 chute verify big big
	assert_line --index -1 "FAILED: 40002 problems in 20001 shards"
}

@test "verify: a shard whose seal differs from the manifest's (edited by hand) is a problem" {
	edit_manifest ds 'm["shards"][1]["seal"] = "0" * 32'
	run -1 chute verify ds
	assert_line --partial "seal "
	assert_line --partial "differs from the manifest's 00000000000000000000000000000000"
}

# part_shards N: the shards each part of N verifies, one count a line.
part_shards() {
	local i
	for ((i = 0; i < $1; i++)); do
		chute verify --json --part "$i/$1" ds >"part$i.json" ||
			fail "part $i/$1 of a clean dataset failed"
		"$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["shards"])' "part$i.json"
	done
}

@test "verify: --part I/N: the N parts together verify every shard once" {
	local n sum
	[ "$NSHARDS" -ge 3 ] || fail "the fixture has $NSHARDS shards"
	for n in 1 2 3 $((NSHARDS + 1)); do
		sum=$(part_shards "$n" | awk '{ s += $1 } END { print s }')
		assert_equal "$sum" "$NSHARDS"
	done
	# shard s is in part s mod N
	run -0 part_shards 2
	assert_output "$(printf '%s\n' $(((NSHARDS + 1) / 2)) $((NSHARDS / 2)))"
}

@test "verify: --part I/N: a damaged shard fails exactly one part, the one of its index" {
	local n i failed
	flip_byte "$S1" "$(block_middle "$S1" 0)"
	for n in 1 2 3 $((NSHARDS + 1)); do
		failed=
		for ((i = 0; i < n; i++)); do
			run chute verify --part "$i/$n" ds
			case $status in
			0) ;;
			1) failed+=" $i"
			   assert_output --partial "${S1##*/}" ;;
			*) fail "part $i/$n: exit $status: $output" ;;
			esac
		done
		assert_equal "$failed" " $((1 % n))"
	done
}

@test "verify: --part I/N: the manifest's own checks run in part 0 only" {
	# the id covers the pack options
	sed -i 's/"level": 3/"level": 4/' ds/manifest.json
	run -1 chute verify --part 0/2 ds
	assert_output --partial "manifest id"
	run -0 chute verify --part 1/2 ds
	cp "$S0" ds/shards/stray.chs
	run -0 chute verify --part 1/2 ds
	run -1 chute verify --part 0/2 ds
	assert_output --partial stray.chs
}

@test "verify: --part with --json reports the part's shards and problems" {
	flip_byte "$S0" "$(block_middle "$S0" 0)"
	chute verify --json --part 0/2 ds >p0.json && fail "part 0 passed"
	run -0 chute verify --json --part 1/2 ds
	"$PYTHON" - "$NSHARDS" <<'EOF'
import json, sys
n = int(sys.argv[1])
p0 = json.load(open("p0.json"))
assert p0["ok"] is False and p0["shards"] == (n + 1) // 2, p0
assert p0["problems"] and all(p["shard"].endswith("-000000.chs")
                              for p in p0["problems"]), p0["problems"]
EOF
	"$PYTHON" -c 'import json, sys; r = json.loads(sys.argv[1]); assert r["ok"] and r["shards"] == int(sys.argv[2]) // 2, r' "$output" "$NSHARDS"
}

@test "verify: a bad --part value exits 2 with one line" {
	local v
	for v in 2/2 3/2 -1/2 1/-2 0/0 1/ /2 x 1/2/3 ' 1/2' '1/2 ' 0/1048577 ''; do
		run -2 chute verify --part "$v" ds
		assert_one_line_error verify
		assert_output --partial "for --part"
	done
}
