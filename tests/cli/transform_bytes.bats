#!/usr/bin/env bats
# chute stream --transform 'FIELD: bytes DTYPE [SHAPE]': raw fields of
# known size as stacked arrays of their own bytes.

load helper

# ds: 10 samples train/NNNNN of a raw 784-byte img and a 24-byte vec
# (seeded bytes); bad: the same with sample 3's img one byte short.
setup_file() {
	cd "$BATS_FILE_TMPDIR" || exit 1
	"$PYTHON" - <<'EOF' || exit 1
import os, random
for d in ("src/train", "bad-src/train"):
    os.makedirs(d)
for i in range(10):
    rng = random.Random(i)
    img, vec = rng.randbytes(784), rng.randbytes(24)
    for d in ("src/train", "bad-src/train"):
        cut = d.startswith("bad") and i == 3
        open("%s/%05d.img" % (d, i), "wb").write(img[:783] if cut else img)
        open("%s/%05d.vec" % (d, i), "wb").write(vec)
EOF
	chute pack -q src -o ds >/dev/null || exit 1
	chute pack -q bad-src -o bad >/dev/null || exit 1
}

# arrays FILE FIELD: per frame, "KEYS DTYPE SHAPE" of FIELD's array (KEYS
# the samples' last digits), and "same" when each sample's value, written
# little-endian, is the bytes of its file under src/, else "differ".
arrays() {
	"$PYTHON" - "$REPO_ROOT/scripts" "$BATS_FILE_TMPDIR/src" "$@" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch, numpy as np
src, path, field = sys.argv[2:5]
for fr in chute_batch.frames(open(path, "rb")):
    a = fr.fields[field]
    same = all(v.astype(v.dtype.newbyteorder("<")).tobytes() ==
               open("%s/%s.%s" % (src, k, field), "rb").read()
               for k, v in zip(fr.keys, a))
    print(",".join(k[-1] for k in fr.keys), a.dtype,
          "x".join(map(str, a.shape)), "same" if same else "differ")
EOF
}

@test "bytes: raw 784-byte images become one (batch, 28, 28) u8 array of their bytes" {
	run -0 chute stream "$BATS_FILE_TMPDIR/ds" -b 4 --shuffle none \
		--transform 'img: bytes u8 28x28' -o out
	run -0 arrays out img
	assert_output "0,1,2,3 uint8 4x28x28 same
4,5,6,7 uint8 4x28x28 same
8,9 uint8 2x28x28 same"
	chute stream "$BATS_FILE_TMPDIR/ds" -b 4 --shuffle none \
		--transform 'img: bytes u8 784' -o flat
	run -0 arrays flat img
	assert_line --index 0 "0,1,2,3 uint8 4x784 same"
}

@test "bytes: without a shape a 1-D array of size / item size, each dtype little-endian" {
	local t dtype want n
	for t in u8:uint8:24 i64:int64:3 f16:float16:12 f32:float32:6; do
		IFS=: read -r dtype want n <<<"$t"
		chute stream "$BATS_FILE_TMPDIR/ds" -b 5 --shuffle none \
			--transform "vec: bytes $dtype" -o "out.$dtype"
		run -0 arrays "out.$dtype" vec
		assert_output "0,1,2,3,4 $want 5x$n same
5,6,7,8,9 $want 5x$n same"
	done
	chute stream "$BATS_FILE_TMPDIR/ds" -b 5 --shuffle none \
		--transform 'vec: bytes i64 3x1' -o col
	run -0 arrays col vec
	assert_line --index 0 "0,1,2,3,4 int64 5x3x1 same"
}

@test "bytes: dtype, pad and random-crop may follow it" {
	chute stream "$BATS_FILE_TMPDIR/ds" -b 10 --shuffle none \
		--transform 'img: bytes u8 784 | dtype f32' \
		--transform 'vec: bytes u8 | pad 30 7 | random-crop 28' \
		--mode eval -o out
	run -0 "$PYTHON" - "$REPO_ROOT/scripts" "$BATS_FILE_TMPDIR/src" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch, numpy as np
fr = next(chute_batch.frames(open("out", "rb")))
img, vec = fr.fields["img"], fr.fields["vec"]
raw = np.frombuffer(open(sys.argv[2] + "/train/00004.img", "rb").read(),
                    np.uint8)
print(img.dtype, img.shape, vec.dtype, vec.shape)
print(np.array_equal(img[4], raw.astype(np.float32) / np.float32(255)))
print(vec[0, 24:].tolist())
EOF
	assert_output "float32 (10, 784) uint8 (10, 28)
True
[7, 7, 7, 7]"
}

@test "bytes: same bytes whatever the workers" {
	local spec='vec: bytes u8 | pad 40 | random-crop 16'
	chute stream "$BATS_FILE_TMPDIR/ds" -b 3 -e 2 -w 1 --seed 5 \
		--transform 'img: bytes u8 28x28' --transform "$spec" -o w1
	chute stream "$BATS_FILE_TMPDIR/ds" -b 3 -e 2 -w 3 -p 5 --seed 5 \
		--transform 'img: bytes u8 28x28' --transform "$spec" -o w3
	cmp w1 w3
}

@test "bytes: a field of another size exits 1 naming the field, the sample and the shard" {
	run -1 chute stream "$BATS_FILE_TMPDIR/bad" -b 4 \
		--transform 'img: bytes u8 28x28' -o out
	assert_one_line_error stream
	assert_output --partial "field 'img': bytes: has 783 bytes; u8 28x28 needs 784 (sample 'train/00003', shards/bad-000000.chs)"
	run -1 chute stream "$BATS_FILE_TMPDIR/bad" -b 4 \
		--transform 'img: bytes f32' -o out
	assert_output --partial "field 'img': bytes: has 783 bytes; f32 needs a multiple of 4 (sample 'train/00003'"
	# as a corrupt sample: skipped and counted with --on-error skip
	run -0 chute stream "$BATS_FILE_TMPDIR/bad" -b 10 --mode eval \
		--on-error skip --transform 'img: bytes u8 28x28' -o out
	assert_output --partial "skipped 1 corrupt sample"
	# without a shape, sizes that differ within a batch: the batch refuses
	run -1 chute stream "$BATS_FILE_TMPDIR/bad" -b 10 --shuffle none \
		--transform 'img: bytes u8' -o out
	assert_output --partial "field 'img': sample 'train/00003' is 783 items, the batch's first (sample 'train/00000') 784 items: add '| pad N | random-crop N' to give every sample N items"
}

@test "bytes: bad specs are usage errors that say what is wrong" {
	local ds="$BATS_FILE_TMPDIR/ds" spec
	run -2 chute stream "$ds" --transform 'img: bytes u9 28x28'
	assert_output "chute stream: --transform: 'img: bytes u9 28x28': bytes: the dtype is u8, i64, f16 or f32"
	for spec in 'bytes u8 0' 'bytes u8 28x0' 'bytes u8 28x' 'bytes u8 x28' \
		'bytes u8 -784' 'bytes u8 1x2x3x4x5' 'bytes u8 28*28' \
		'bytes f32 4294967296x4294967296'; do
		run -2 chute stream "$ds" --transform "img: $spec"
		assert_output "chute stream: --transform: 'img: $spec': bytes: the shape is 1 to 4 sizes of at least 1 joined by x, such as 784 or 28x28"
	done
	for spec in 'bytes' 'bytes u8 28 28'; do
		run -2 chute stream "$ds" --transform "img: $spec"
		assert_output "chute stream: --transform: 'img: $spec': bytes: takes DTYPE [SHAPE], such as u8 28x28"
	done
	run -2 chute stream "$ds" --transform 'img: int | bytes u8'
	assert_output --partial "bytes: must come first"
	run -2 chute stream "$ds" --transform 'img: bytes u8 28x28 | resize 14'
	assert_output --partial "resize: needs an image"
	run -2 chute stream "$ds" --transform 'img: pad 8'
	assert_output --partial "start with decode, int, npy or bytes"
}

# The stream's bytes are pinned: digests of streams made by chute before
# the speed work of issue 16 (the permutation's rounds, the frame
# encoder's lookups, the copies a bytes field skips).  A change of any
# byte of the permutation, cursors or frames fails here.
@test "bytes: streams are the bytes they always were" {
	local tx=(--transform 'img: bytes u8 28x28' --transform 'vec: bytes u8 24')
	pinned() { # DIGEST ARGS...
		local want=$1 got
		shift
		got=$(chute stream -b 3 -e 2 "$@" "$BATS_FILE_TMPDIR/ds" | sha256sum)
		[ "${got%% *}" = "$want" ] || {
			echo "stream $* gives ${got%% *}, pinned $want" >&2
			return 1
		}
	}
	pinned 50ab89deac13ecdcf73bc27cd06bc49d986424a1615dc24add8cbd153e292612 -w 1 "${tx[@]}"
	pinned 50ab89deac13ecdcf73bc27cd06bc49d986424a1615dc24add8cbd153e292612 -w 3 "${tx[@]}"
	pinned 7e9526b889d396169436d97725a3980a29cfc1637f0718dd07299090667e2dd9 -w 2 --shuffle window --window 1 "${tx[@]}"
	pinned 970b21b02eb295ad90eae908a17e27ce9335565de57e06114be82fda9961f9ec -w 2 --shuffle none "${tx[@]}"
	pinned 9310078fa67bd5d3000f129c9a1e6049755f4558d1d10ef9d56d7317b3b4a03a -w 2 --seed 9 --drop-last "${tx[@]}"
	pinned 4abb9d571818a2603ed7c726c8566cc1f018b5b1154cf74697e8b5c11eeee4d7 -w 2
}
