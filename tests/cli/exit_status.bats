#!/usr/bin/env bats
# One exit status per kind of problem, whichever command finds it
# (chute(1), EXIT STATUS): damaged or missing data that should be there
# exits 1, with a message naming the file; usage, I/O errors and no such
# dataset exit 2.  A table: setup_file makes each kind of damage once, and
# each test runs every command that reads what that kind damaged.

load helper

# The commands that read, @D standing for the dataset (a folder, a shard
# or a remote), @G for an undamaged one and @T for the test's folder (-g:
# bats sources this file inside a function).
declare -gA READS=(
	[ls]='ls @D'
	[cat]='cat @D #0'
	[stream]='stream -q -o out @D'
	[window]='stream -q --shuffle window -o out @D'
	[split-stream]='stream -q --split val -o out @D'
	[split-ls]='ls --split val @D'
	[export]='export @D -o exp'
	[verify]='verify @D'
	[check]='check @D'
	[status]='status @D'
	[diff]='diff @D @G'
	[bench]='bench -q @D'
	[push]='push -q @D file://@T/pushed'
	[pull]='pull -q @D pulled'
	[split]='split -q @D --val 0.5'
	[merge]='merge -q @D -o merged'
	[merge-there]='merge -q @D -o @D'
	[manifest]='manifest @D'
	[log]='log @D'
	[tags]='tags @D'
	[gc]='gc @D --grace 0 --yes'
)

S0=shards/good-000000.chs

# The fixtures, in the current folder: good, a dataset of two shards
# with a dictionary, packed as part 0 of 1 so that merge takes it; a
# folder per kind of damage; remote, good pushed there, and a copy of it
# per kind of damage to a remote.
make_fixtures() {
	"$PYTHON" - <<'EOF' || return 1
import os, random
rng = random.Random(7)
words = ["label", "width", "height", "bbox", "score", "person", "tree"]
os.makedirs("src")
for i in range(200):
    with open("src/s%03d.txt" % i, "w") as f:
        f.write(" ".join("%s %d" % (rng.choice(words), rng.randint(0, 999))
                         for _ in range(8)) + "\n")
EOF
	chute pack -q --dict -s 100s --part 0/1 src -o good >/dev/null || return 1
	local k
	for k in truncated magic header footer index dictionary block missing \
		swapped manifest-json edited field no-manifest; do
		cp -r good "$k"
	done
	truncate -s 4000 truncated/$S0
	flip_byte magic/$S0 0
	flip_byte header/$S0 20
	flip_byte footer/$S0 -20
	flip_byte index/$S0 -65 # the index's last byte, before the footer
	flip_byte dictionary/$S0 100
	flip_byte block/$S0 "$(block_middle good/$S0 0)"
	rm missing/$S0
	cp good/shards/good-000001.chs swapped/$S0
	truncate -s 100 manifest-json/manifest.json
	sed -i 's/"level": 3/"level": 4/' edited/manifest.json
	edit_manifest field 'f = m["schema"]["fields"]
f["text"] = f.pop("txt")
reid = True'
	rm no-manifest/manifest.json
	mkdir lone && cp good/$S0 lone/x.chs && flip_byte lone/x.chs 0
	cp -r good split && chute split -q split --val 0.5 >/dev/null || return 1
	cp -r split split-missing && rm split-missing/splits/val-*.ids
	cp -r split split-tampered && flip_byte split-tampered/splits/val-*.ids 0
	# a part moves no latest by itself: --tag names it
	chute push -q -t latest good "file://$PWD/remote" >/dev/null || return 1
	local object id
	object=$(mjson good 'm["shards"][0]["xxh3_128"]')
	object=cas/${object:0:2}/$object.chs
	id=$(mjson good 'm["id"]')
	# in its index, which even a reader of ranges reads
	cp -r remote remote-corrupt && flip_byte remote-corrupt/"$object" -65
	cp -r remote remote-missing && rm remote-missing/"$object"
	cp -r remote remote-manifest &&
		sed -i 's/"level": 3/"level": 4/' "remote-manifest/versions/$id.json"
}

setup_file() {
	export FX=$BATS_FILE_TMPDIR/fx
	mkdir -p "$FX" && cd "$FX" || fail "cannot make $FX"
	make_fixtures >"$FX/log" 2>&1 || fail "cannot make the fixtures: $(cat "$FX/log")"
}

setup() {
	chute_setup
	export XDG_CACHE_HOME=$BATS_TEST_TMPDIR/cache
}

# fails STATUS KIND FILE CMD...: each command CMD (a key of READS) run on
# the fixture KIND exits STATUS with a message that names FILE (an
# extended regex), and leaves no output behind.
fails() {
	local want=$1 kind=$2 file=$3 cmd words d left
	shift 3
	case $kind in
	remote*) cp -r "$FX/$kind" remote && d=file://$PWD/remote ;;
	lone) cp "$FX/lone/x.chs" x.chs && d=x.chs ;;
	nowhere) d=nowhere ;;
	*) cp -r "$FX/$kind" data && d=data ;;
	esac
	for cmd in "$@"; do
		[ -n "${READS[$cmd]:-}" ] || fail "no command '$cmd' in READS"
		words=${READS[$cmd]//@D/$d}
		words=${words//@G/$FX/good}
		words=${words//@T/$PWD}
		# shellcheck disable=SC2086 # words are words
		run chute $words
		[ "$status" = "$want" ] ||
			fail "chute $words: exit $status, not $want: $output"
		[[ $output =~ $file ]] ||
			fail "chute $words: the message does not name $file: $output"
		for left in out exp/good-000000.tar merged pulled/manifest.json \
			pushed/versions; do
			[ ! -e "$left" ] || fail "chute $words left $left behind"
		done
	done
}

# Every command that reads a shard's header, footer and index (stream's
# window shuffle opens shards as its global one does: only a remote
# dataset is read otherwise).
OPENS=(ls cat stream export verify check status diff bench push split merge)

@test "exit status: a truncated shard is 1 for every command that reads it" {
	fails 1 truncated "good-000000.chs" "${OPENS[@]}"
}

@test "exit status: a shard with a bad magic is 1 for every command that reads it" {
	fails 1 magic "good-000000.chs" "${OPENS[@]}"
	run -1 chute ls data
	assert_output "chute ls: not a chute shard: bad magic ('data/$S0', byte 0)"
}

@test "exit status: a damaged header is 1 for every command that reads it" {
	fails 1 header "good-000000.chs" "${OPENS[@]}"
}

@test "exit status: a damaged footer is 1 for every command that reads it" {
	fails 1 footer "good-000000.chs" "${OPENS[@]}"
}

@test "exit status: a damaged index is 1 for every command that reads it" {
	fails 1 index "good-000000.chs" "${OPENS[@]}"
}

@test "exit status: a damaged dictionary is 1 for every command that reads it" {
	fails 1 dictionary "good-000000.chs" "${OPENS[@]}"
}

@test "exit status: a damaged block is 1 for every command that reads blocks" {
	fails 1 block "block 0.*good-000000.chs|good-000000.chs.*block 0" \
		cat stream export verify bench
	# hashed whole
	fails 1 block "good-000000.chs" status push
}

@test "exit status: a missing shard the manifest names is 1 for every command" {
	fails 1 missing "good-000000.chs" "${OPENS[@]}"
}

@test "exit status: a shard other than the one the manifest names is 1" {
	fails 1 swapped "good-000000.chs" "${OPENS[@]}"
}

@test "exit status: a missing split file is 1 for every command that reads it" {
	fails 1 split-missing "val-[0-9a-f]+\.ids" \
		split-stream split-ls verify check status diff push
}

@test "exit status: a tampered split file is 1 for every command that reads it" {
	fails 1 split-tampered "val-[0-9a-f]+\.ids" \
		split-stream split-ls verify check status diff push
}

@test "exit status: a manifest that is not JSON is 1 for every command" {
	fails 1 manifest-json "invalid JSON: .*data/manifest\.json" \
		"${OPENS[@]}" manifest log
}

@test "exit status: a manifest edited by hand is 1 where its id is checked" {
	fails 1 edited "data|manifest\.json" verify status push merge
}

@test "exit status: a shard holding a field the schema lacks is 1" {
	# status and push compare files with the manifest's hashes: they
	# open no shard
	fails 1 field "good-00000[01]\.chs.*'txt'" ls cat stream export verify \
		check diff bench split merge
	# chute verify says it of each shard (issue 37: it exited 0)
	run -1 chute verify data
	assert_line "data/$S0: holds field 'txt', which the manifest's schema does not list"
	assert_line "FAILED: 4 problems in 2 shards" # and text's two totals
}

@test "exit status: a lone .chs with a bad magic is 1, not a manifest that is not JSON" {
	fails 1 lone "not a chute shard: bad magic \('x.chs', byte 0\)" \
		ls cat stream export verify diff bench
	# chute-verify(1): S counts a lone shard that does not open, whatever
	# part of it is damaged
	local k
	for k in magic header footer index dictionary; do
		cp "$FX/$k/$S0" "$k.chs"
		run -1 chute verify "$k.chs"
		assert_line "FAILED: 1 problem in 1 shard"
	done
	run -1 chute verify --json header.chs
	assert_output --partial '"problems":[{"kind":"structure","path":"header.chs","shard":"header.chs",'
}

@test "exit status: a corrupt object on a remote is 1 for every command that reads it" {
	local object
	object=$(mjson "$FX/good" 'm["shards"][0]["xxh3_128"]')
	fails 1 remote-corrupt "$object|good-000000.chs" \
		stream window diff bench pull merge-there
}

@test "exit status: a missing object on a remote is 1 for every command that reads it" {
	local object
	object=$(mjson "$FX/good" 'm["shards"][0]["xxh3_128"]')
	fails 1 remote-missing "$object" stream window diff bench pull merge-there
}

@test "exit status: a damaged version on a remote is 1 for every command that reads it" {
	fails 1 remote-manifest "versions/[0-9a-f]{32}\.json" \
		stream window diff bench pull merge-there manifest log tags gc
}

@test "exit status: a folder without a manifest, or no such path, is 2" {
	fails 2 no-manifest "data/manifest.json" "${OPENS[@]}" manifest log
	fails 2 nowhere "'nowhere'" "${OPENS[@]}" manifest log
}

# The dataset of the tests below: eight text samples of growing size in
# one shard without a dictionary.
small_dataset() {
	mkdir src
	for i in 0 1 2 3 4 5 6 7; do
		printf 'sample %d: %s\n' "$i" "$(seq -s ' ' 1 $((i * 40)))" \
			>"src/s$i.txt"
	done
	chute pack -q src -o ds >/dev/null || fail "cannot pack src"
	SHARD=$(shard_of ds)
}

@test "exit status: a shard that does not decode exits 1" {
	small_dataset
	# a block whose checksum matches but whose zstd frame is not one:
	# the stored block rewritten, its hash in the index fixed up
	PYTHONPATH="$BATS_TEST_DIRNAME" "$PYTHON" - "$SHARD" <<'EOF' || fail "cannot rewrite block 0"
import struct, sys, xxhash, zstandard
from shard_index import footer, decoded_index
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
ioff, isize, raw, _h, _n, _b, codec = footer(data)
index = bytearray(decoded_index(data))
off, stored, rawb, h, c = struct.unpack_from("<QQQQI", index, 64)
assert c != 0, "block 0 is stored raw"
data[off:off + stored] = b"\x28\xb5\x2f\xfd" + b"\xff" * (stored - 4)
struct.pack_into("<Q", index, 64 + 24,
                 xxhash.xxh3_64_intdigest(bytes(data[off:off + stored])))
# the index, stored again as one zstd frame (codec 1), with its hash
frame = zstandard.ZstdCompressor().compress(bytes(index))
tail = bytearray(data[ioff + isize:])
struct.pack_into("<QQQQ", tail, 0, ioff, len(frame), len(index),
                 xxhash.xxh3_64_intdigest(frame))
struct.pack_into("<I", tail, 44, 1)
struct.pack_into("<Q", tail, 48, xxhash.xxh3_64_intdigest(bytes(tail[:48])))
open(path, "wb").write(bytes(data[:ioff]) + frame + bytes(tail))
EOF
	# the manifest vouches for the rewritten shard: only decoding fails
	vouch_shard ds 0
	run -0 chute ls ds
	for cmd in "cat ds #0" "export ds -o exp" "stream -e 1 -o out ds"; do
		# shellcheck disable=SC2086
		run -1 chute $cmd
		assert_one_line_error "${cmd%% *}"
		assert_output --partial "cannot decode block 0 ('$SHARD', byte 64)"
	done
}

@test "exit status: usage, I/O and interrupted keep 2, 2 and 128 + the signal" {
	small_dataset
	run -2 chute stream -b 0 -o out ds
	assert_one_line_error stream
	run -2 chute ls nowhere
	assert_output "chute ls: cannot open 'nowhere': No such file or directory"
	run -130 timeout --preserve-status -s INT 1 chute stream -e 0 -b 2 -o /dev/null ds
	run -143 timeout --preserve-status -s TERM 1 chute stream -e 0 -b 2 -o /dev/null ds
}
