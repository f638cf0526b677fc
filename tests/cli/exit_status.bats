#!/usr/bin/env bats
# One rule for every command that reads shards (chute(1), EXIT STATUS):
# data that fails a check (a bad magic, header, footer or index, a
# truncated shard, a checksum mismatch, a block that does not decode)
# exits 1, with a message naming the shard file and the byte where known;
# usage and I/O errors (a missing shard file) exit 2.

load helper

setup() {
	chute_setup
	mkdir src
	for i in 0 1 2 3 4 5 6 7; do
		printf 'sample %d: %s\n' "$i" "$(seq -s ' ' 1 $((i * 40)))" \
			>"src/s$i.txt"
	done
	chute pack -q src -o ds >/dev/null || fail "cannot pack src"
	SHARD=$(shard_of ds)
}

# reads_fail STATUS [dataset]: stream, cat, export, ls (of the dataset
# and, unless "dataset", of the shard alone) each exit STATUS with one
# line naming the shard file.
reads_fail() {
	local cmd lone="ls $SHARD"
	[ "${2:-}" != dataset ] || lone=
	for cmd in "stream -e 1 -o out ds" "cat ds #0" "export ds -o exp" \
		"ls ds" ${lone:+"$lone"}; do
		# shellcheck disable=SC2086 # cmd is words
		run -"$1" chute $cmd
		assert_one_line_error "${cmd%% *}"
		assert_output --partial "'$SHARD'"
	done
	assert_file_not_exists out
	assert_file_not_exists exp/ds-000000.tar
}

@test "exit status: a truncated shard exits 1 for stream, cat, export and ls" {
	truncate -s $(($(stat -c %s "$SHARD") / 2)) "$SHARD"
	reads_fail 1
	assert_output --regexp "bad footer magic: truncated or not a shard \('$SHARD', byte [0-9]+\)$"
}

@test "exit status: a damaged header exits 1 for stream, cat, export and ls" {
	flip_byte "$SHARD" 20
	reads_fail 1
	assert_output --regexp "header checksum mismatch \('$SHARD', byte 0\)$"
}

@test "exit status: a bad magic exits 1 for stream, cat, export and ls" {
	flip_byte "$SHARD" 0
	# a lone file without the magic is taken for a manifest
	reads_fail 1 dataset
	assert_output --regexp "not a chute shard: bad magic \('$SHARD', byte 0\)$"
}

@test "exit status: a damaged footer exits 1 for stream, cat, export and ls" {
	flip_byte "$SHARD" -20
	reads_fail 1
	assert_output --regexp "footer checksum mismatch \('$SHARD', byte [0-9]+\)$"
}

@test "exit status: a damaged index exits 1 for stream, cat, export and ls" {
	local off size
	read -r off size < <(shard_layout "$SHARD" | awk '$1 == "index" { print $2, $3 }')
	flip_byte "$SHARD" $((off + size - 1))
	reads_fail 1
	assert_output --regexp "index (page [0-9]+ )?checksum mismatch \('$SHARD', byte [0-9]+\)$"
}

@test "exit status: a damaged block exits 1 for stream, cat and export; ls reads no block" {
	flip_byte "$SHARD" "$(block_middle "$SHARD" 0)"
	local cmd
	for cmd in "stream -e 1 -o out ds" "cat ds #0" "export ds -o exp"; do
		# shellcheck disable=SC2086
		run -1 chute $cmd
		assert_one_line_error "${cmd%% *}"
		assert_output --regexp "(checksum|hash) mismatch .*block 0 \('$SHARD', byte [0-9]+\)"
	done
	assert_file_not_exists out
	run -0 chute ls ds
}

@test "exit status: a shard that does not decode exits 1" {
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

@test "exit status: diff of a version with a damaged shard exits 1" {
	cp -r ds orig
	flip_byte "$SHARD" 20
	run -1 chute diff ds orig
	assert_one_line_error diff
	assert_output --partial "header checksum mismatch ('$SHARD', byte 0)"
}

@test "exit status: a missing shard file exits 2 for stream, cat, export and ls" {
	rm "$SHARD"
	local cmd
	for cmd in "stream -e 1 -o out ds" "cat ds #0" "export ds -o exp" "ls ds"; do
		# shellcheck disable=SC2086
		run -2 chute $cmd
		assert_output "chute ${cmd%% *}: cannot open '$SHARD': No such file or directory"
	done
}

# The kind of an error, not the command, says 1 or 2; a lone shard given
# where a dataset folder is needed is the caller's mistake, so 2 even
# when it is also damaged.
@test "exit status: a damaged lone shard exits 1 where a shard is taken, 2 where a folder is needed" {
	cp "$SHARD" lone.chs
	flip_byte lone.chs 20
	local cmd
	for cmd in "ls lone.chs" "cat lone.chs #0" "export lone.chs -o exp" \
		"diff lone.chs ds" "stream lone.chs"; do
		# shellcheck disable=SC2086
		run -1 chute $cmd
		assert_output "chute ${cmd%% *}: header checksum mismatch ('lone.chs', byte 0)"
	done
	for cmd in "check lone.chs" "split lone.chs --val 0.5" \
		"status lone.chs" "push lone.chs file://$PWD/remote"; do
		# shellcheck disable=SC2086
		run -2 chute $cmd
		assert_output "chute ${cmd%% *}: header checksum mismatch ('lone.chs', byte 0)"
	done
	assert_not_exist remote
}

@test "exit status: usage, I/O and interrupted keep 2, 2 and 128 + the signal" {
	run -2 chute stream -b 0 -o out ds
	assert_one_line_error stream
	run -2 chute ls nowhere
	assert_output "chute ls: cannot open 'nowhere': No such file or directory"
	run -130 timeout --preserve-status -s INT 1 chute stream -e 0 -b 2 -o /dev/null ds
	run -143 timeout --preserve-status -s TERM 1 chute stream -e 0 -b 2 -o /dev/null ds
}
