#!/usr/bin/env bats
# chute stream --transform: flip, center-crop, random-crop and pad on the
# H x W (x C) arrays that bytes makes, against numpy
# (tests/ref/arrays_ref.py, with a copy of chute's random generator); the
# errors of ops given what they cannot take; "did you mean" for ops and
# fields.

load helper

REF="$REPO_ROOT/tests/ref/arrays_ref.py"
FM='img: bytes u8 28x28 | pad 4 | random-crop 28 | flip'
RGB='rgb: bytes u8 8x6x3 | pad 2 7 | random-crop 5x4 | flip 0.5'
F32='f: bytes f32 5x7 | pad 1 -1.5 | center-crop 6x5 | flip 1'

# ds: 40 samples train/NNNNN (seeded): img, 784 bytes (Fashion-MNIST's
# 28x28 u8); rgb, 8x6x3 u8; f, 5x7 f32; cls, a text label.
setup_file() {
	cd "$BATS_FILE_TMPDIR" || exit 1
	"$PYTHON" - <<'EOF' || exit 1
import os, numpy as np
os.makedirs("src/train")
rng = np.random.default_rng(11)
for i in range(40):
    p = "src/train/%05d" % i
    open(p + ".img", "wb").write(rng.integers(0, 256, 784, np.uint8).tobytes())
    open(p + ".rgb", "wb").write(rng.integers(0, 256, 144, np.uint8).tobytes())
    open(p + ".f", "wb").write(rng.normal(0, 1, 35).astype("<f4").tobytes())
    open(p + ".cls", "w").write("%d\n" % (i % 10))
EOF
	chute pack -q src -o ds >/dev/null || exit 1
}

need_xxhash() {
	"$PYTHON" -c 'import numpy, xxhash' 2>/dev/null ||
		skip "numpy or xxhash missing for $PYTHON (Debian: python3-numpy python3-xxhash)"
}

@test "arrays: pad 4 | random-crop 28 | flip of a raw 28x28 u8 image equals numpy's, offsets from the seeded generator" {
	need_xxhash
	run -0 chute stream "$BATS_FILE_TMPDIR/ds" -b 8 -e 2 --seed 7 \
		--transform "$FM" --transform 'cls: int' -o out
	run -0 "$PYTHON" "$REF" out "$BATS_FILE_TMPDIR/src" 7 train "$FM"
	# every one of the 9 x 9 offsets may be drawn; about half flip
	assert_output "img: 80 samples equal; 55 crop offsets (top 0-8, left 0-8); 35 flips"
}

@test "arrays: H x W x C u8 and f32 arrays, a pad value, WxH windows and center-crop equal numpy's" {
	need_xxhash
	run -0 chute stream "$BATS_FILE_TMPDIR/ds" -b 8 -e 2 --seed 7 \
		--transform "$RGB" --transform "$F32" -o out
	run -0 "$PYTHON" "$REF" out "$BATS_FILE_TMPDIR/src" 7 train "$RGB" "$F32"
	assert_line --index 0 "rgb: 80 samples equal; 42 crop offsets (top 0-8, left 0-5); 35 flips"
	assert_line --index 1 "f: 80 samples equal; 0 crop offsets (top ---, left ---); 80 flips"
	# the shapes the batch declares: (batch, H, W[, C])
	run -0 "$PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch
fr = next(chute_batch.frames(open("out", "rb")))
for k in ("rgb", "f"):
    print(k, fr.fields[k].dtype, fr.fields[k].shape)' "$REPO_ROOT/scripts"
	assert_output "rgb uint8 (8, 4, 5, 3)
f float32 (8, 5, 6)"
}

@test "arrays: eval mode crops the centre and flips nothing" {
	need_xxhash
	run -0 chute stream "$BATS_FILE_TMPDIR/ds" -b 8 --mode eval \
		--transform "$FM" --transform "$RGB" --transform "$F32" -o out
	run -0 "$PYTHON" "$REF" out "$BATS_FILE_TMPDIR/src" 0 eval "$FM" "$RGB" "$F32"
	assert_line --index 0 "img: 40 samples equal; 0 crop offsets (top ---, left ---); 0 flips"
	assert_line --index 2 "f: 40 samples equal; 0 crop offsets (top ---, left ---); 0 flips"
}

@test "arrays: same bytes whatever the workers" {
	local tx=(--transform "$FM" --transform "$RGB" --transform "$F32")
	chute stream "$BATS_FILE_TMPDIR/ds" -b 6 -e 2 -w 1 --seed 3 "${tx[@]}" -o w1
	chute stream "$BATS_FILE_TMPDIR/ds" -b 6 -e 2 -w 2 --seed 3 "${tx[@]}" -o w2
	chute stream "$BATS_FILE_TMPDIR/ds" -b 6 -e 2 -w 3 -p 5 --seed 3 "${tx[@]}" -o w3
	cmp w1 w2
	cmp w1 w3
	# and the seed matters
	chute stream "$BATS_FILE_TMPDIR/ds" -b 6 -e 2 -w 2 --seed 4 "${tx[@]}" -o s4
	run -1 cmp -s w1 s4
}

@test "arrays: 1-D arrays keep their random-crop and pad" {
	chute stream "$BATS_FILE_TMPDIR/ds" -b 40 --shuffle none --mode eval \
		--transform 'img: bytes u8 | pad 790 9 | random-crop 788' -o out
	run -0 "$PYTHON" - "$REPO_ROOT/scripts" "$BATS_FILE_TMPDIR/src" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch, numpy as np
a = next(chute_batch.frames(open("out", "rb"))).fields["img"]
raw = np.frombuffer(open(sys.argv[2] + "/train/00005.img", "rb").read(), np.uint8)
print(a.shape, np.array_equal(a[5], np.concatenate([raw, [9] * 4])))
EOF
	assert_output "(40, 788) True"
}

@test "arrays: an op given what it cannot take is a usage error saying what it got and what it takes" {
	local ds="$BATS_FILE_TMPDIR/ds"
	run -2 chute stream "$ds" --transform 'img: bytes u8 | flip'
	assert_output "chute stream: --transform: 'img: bytes u8 | flip': flip: takes an image or an H x W or H x W x C array, not a 1-D u8 array: give bytes or npy the array's shape, such as 28x28"
	run -2 chute stream "$ds" --transform 'img: bytes u8 784 | center-crop 20'
	assert_output "chute stream: --transform: 'img: bytes u8 784 | center-crop 20': center-crop: takes an image or an H x W or H x W x C array, not a 1-D array of 784 u8: give bytes or npy the array's shape, such as 28x28"
	run -2 chute stream "$ds" --transform 'img: bytes u8 28x28 | pad 1 | center-crop 31'
	assert_output "chute stream: --transform: 'img: bytes u8 28x28 | pad 1 | center-crop 31': center-crop: a 31x31 window does not fit in a 30x30 u8 array (pad first)"
	run -2 chute stream "$ds" --transform 'img: bytes u8 28x28 | random-crop 20x30'
	assert_output "chute stream: --transform: 'img: bytes u8 28x28 | random-crop 20x30': random-crop: a window 20 wide and 30 high does not fit in a 28x28 u8 array (pad first)"
	run -2 chute stream "$ds" --transform 'cls: int | pad 3'
	assert_output "chute stream: --transform: 'cls: int | pad 3': pad: takes a 1-D, H x W or H x W x C array, not a scalar (i64)"
	run -2 chute stream "$ds" --transform 'img: bytes u8 2x2x2x98 | flip'
	assert_output "chute stream: --transform: 'img: bytes u8 2x2x2x98 | flip': flip: takes an image or an H x W or H x W x C array, not a 2x2x2x98 (4-D) u8 array"
	run -2 chute stream "$ds" --transform 'img: bytes u8 784 | random-crop 28x28'
	assert_output "chute stream: --transform: 'img: bytes u8 784 | random-crop 28x28': random-crop: takes N, not WxH, on a 1-D array"
	run -2 chute stream "$ds" --transform 'img: bytes u8 28x28 | resize 14'
	assert_output "chute stream: --transform: 'img: bytes u8 28x28 | resize 14': resize: needs an image (from decode); of the geometric ops, arrays take flip, center-crop, random-crop and pad"
	run -2 chute stream "$ds" --transform 'img: decode | pad 4'
	assert_output "chute stream: --transform: 'img: decode | pad 4': pad: takes an array (from bytes, npy or int), not an image: images take center-crop and random-resized-crop"
}

@test "arrays: an npy array of a shape the op cannot take exits 1 naming the sample" {
	"$PYTHON" -c '
import numpy as np, os
os.makedirs("vec", exist_ok=True)
for i in range(3):
    np.save("vec/s%d.v.npy" % i, np.arange(6, dtype=np.float32))'
	chute pack -q vec -o vecds >/dev/null
	run -1 chute stream vecds -b 3 --shuffle none --transform 'v.npy: npy | flip'
	assert_output "chute stream: field 'v.npy': flip: takes an image or an H x W or H x W x C array, not a 1-D array of 6 f32 (sample 's0', shards/vecds-000000.chs)"
}

@test "arrays: a mistyped op or field is a usage error with 'did you mean'" {
	local ds="$BATS_FILE_TMPDIR/ds"
	run -2 chute stream "$ds" --transform 'img: bytes u8 28x28 | filp'
	assert_output "chute stream: --transform: 'img: bytes u8 28x28 | filp': filp: no such op; did you mean 'flip'?"
	run -2 chute stream "$ds" --transform 'img: decod'
	assert_output "chute stream: --transform: 'img: decod': decod: no such op; did you mean 'decode'?"
	run -2 chute stream "$ds" --transform 'img: sharpen'
	assert_output "chute stream: --transform: 'img: sharpen': sharpen: no such op (ops: decode, resize, center-crop, random-resized-crop, flip, normalize, layout, dtype, int, npy, bytes, random-crop, pad)"
	run -2 chute stream "$ds" --transform 'imgg: bytes u8 28x28'
	assert_output "chute stream: --transform: no field 'imgg' in the dataset (fields: cls, f, img, rgb); did you mean 'img'?"
	run -2 chute stream "$ds" --transform 'label: int'
	assert_output "chute stream: --transform: no field 'label' in the dataset (fields: cls, f, img, rgb)"
}
