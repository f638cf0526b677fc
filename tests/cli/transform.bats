#!/usr/bin/env bats
# chute stream --transform: pipelines, determinism, resume, errors.
# (tests/cli/transform_ref.bats compares the pixels with torchvision.)

load helper

TRAIN='jpg: decode | random-resized-crop 32 | flip | layout chw'

# A dataset of 24 small JPEGs in 3 classes (cls from the folder), one PNG
# and one grey JPEG among them, and a copy with one JPEG corrupted.
setup_file() {
	cd "$BATS_FILE_TMPDIR" || exit 1
	"$PYTHON" - <<'EOF' || exit 1
import os, random
from PIL import Image
import numpy as np
rng = np.random.default_rng(3)
for i in range(24):
    d = "src/c%d" % (i % 3)
    os.makedirs(d, exist_ok=True)
    w, h = [(64, 48), (48, 64), (80, 45)][i % 3]
    x = np.linspace(0, 255, w)[None, :, None] + rng.normal(0, 20, (h, w, 3))
    im = Image.fromarray(np.clip(x, 0, 255).astype(np.uint8))
    if i == 5:
        im = im.convert("L")
    im.save("%s/%03d.jpg" % (d, i), quality=90)
EOF
	chute pack -q --label-from dir src -o ds >/dev/null || exit 1
	cp -r src bad-src
	head -c 700 bad-src/c1/004.jpg > cut && mv cut bad-src/c1/004.jpg
	chute pack -q --label-from dir bad-src -o bad >/dev/null || exit 1
}

# describe FILE: "batch nsamples field:dtype:shape ..." per frame.
describe() {
	"$PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch
for fr in chute_batch.frames(open(sys.argv[2], "rb")):
    print(fr.batch, fr.nsamples, " ".join(
        "%s:%s:%s" % (k, v.dtype, "x".join(map(str, v.shape)))
        for k, v in sorted(fr.fields.items()) if hasattr(v, "dtype")))
' "$REPO_ROOT/scripts" "$1"
}

@test "transform: images and labels become stacked arrays" {
	run -0 chute stream "$BATS_FILE_TMPDIR/ds" -b 10 \
		--transform "$TRAIN" --transform 'cls: int' -o out
	run -0 describe out
	assert_line --index 0 "0 10 cls:int64:10 jpg:uint8:10x3x32x32"
	assert_line --index 2 "2 4 cls:int64:4 jpg:uint8:4x3x32x32"
	# the labels are the folders' numbers, in stream order
	run -0 "$PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch
for fr in chute_batch.frames(open("out", "rb")):
    for k, c in zip(fr.keys, fr.fields["cls"]):
        assert int(k[1]) == c, (k, c)
print("ok")' "$REPO_ROOT/scripts"
	assert_output ok
}

@test "transform: same bytes whatever the workers" {
	chute stream "$BATS_FILE_TMPDIR/ds" -b 7 -e 2 -w 1 --seed 5 \
		--transform "$TRAIN" --transform 'cls: int' -o w1
	chute stream "$BATS_FILE_TMPDIR/ds" -b 7 -e 2 -w 3 -p 5 --seed 5 \
		--transform "$TRAIN" --transform 'cls: int' -o w3
	cmp w1 w3
	# and another seed augments differently
	chute stream "$BATS_FILE_TMPDIR/ds" -b 7 -e 2 -w 2 --seed 6 \
		--transform "$TRAIN" --transform 'cls: int' -o s6
	run ! cmp -s w1 s6
}

@test "transform: --vmsplice, the workers' frames made in the pipe's pages: the same bytes, to a lagging reader too" {
	local t=(-b 4 -e 12 --seed 5 --transform "$TRAIN" --transform 'cls: int')
	chute stream "$BATS_FILE_TMPDIR/ds" "${t[@]}" -w 1 -o ref
	local w
	for w in 2 3; do
		run -0 bash -c "set -o pipefail
			chute stream --vmsplice -w $w -p 6 ${t[*]@Q} \"\$BATS_FILE_TMPDIR/ds\" | cat >fast"
		cmp ref fast || fail "-w $w --vmsplice into cat differs"
		# the pipe full and every worker ahead: a page lent to the pipe
		# must not be encoded over before it is read
		run -0 bash -c "set -o pipefail
			chute stream --vmsplice -w $w -p 6 ${t[*]@Q} \"\$BATS_FILE_TMPDIR/ds\" |
			\"\$PYTHON\" \"$BATS_TEST_DIRNAME/slow_reader.py\" slow 1000 0.0005"
		cmp ref slow || fail "-w $w --vmsplice into a lagging reader differs"
	done
}

@test "transform: each epoch draws new crops of the same sample" {
	chute stream "$BATS_FILE_TMPDIR/ds" -b 24 -e 2 --shuffle none \
		--transform "$TRAIN" -o out
	run -0 "$PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch, numpy as np
a, b = [fr.fields["jpg"].copy() for fr in chute_batch.frames(open("out", "rb"))]
print(sum(not np.array_equal(x, y) for x, y in zip(a, b)))' "$REPO_ROOT/scripts"
	[ "$output" -ge 20 ]
}

@test "transform: resume is byte-exact, and other transforms are refused" {
	chute stream "$BATS_FILE_TMPDIR/ds" -b 5 -e 2 --seed 2 \
		--transform "$TRAIN" -o full
	chute stream "$BATS_FILE_TMPDIR/ds" -b 5 -e 2 --seed 2 \
		--transform "$TRAIN" -f jsonl -o lines
	cursor=$("$PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch
print(list(chute_batch.frames(open("full", "rb")))[3].cursor)' "$REPO_ROOT/scripts")
	chute stream "$BATS_FILE_TMPDIR/ds" -b 5 -e 2 --seed 2 \
		--transform "$TRAIN" --resume "$cursor" -o rest
	"$PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch
frames = list(chute_batch.frames(open("full", "rb")))
skip = sum(fr.size for fr in frames[:4])
sys.stdout.buffer.write(open("full", "rb").read()[skip:])' \
		"$REPO_ROOT/scripts" > want
	cmp want rest
	# spaces do not matter; another op does
	chute stream "$BATS_FILE_TMPDIR/ds" -b 5 -e 2 --seed 2 \
		--transform 'jpg:decode|random-resized-crop 32|flip|layout chw' \
		--resume "$cursor" -o same
	cmp want same
	run -2 chute stream "$BATS_FILE_TMPDIR/ds" -b 5 -e 2 --seed 2 \
		--transform 'jpg: decode | random-resized-crop 32 | layout chw' \
		--resume "$cursor" -o other
	assert_output --partial "options"
}

@test "transform: a cursor made with --transform, resumed without it, exits 2 naming --transform" {
	chute stream "$BATS_FILE_TMPDIR/ds" -b 5 --transform 'cls: int' -o full
	cursor=$("$PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch
print(next(chute_batch.frames(open("full", "rb"))).cursor)' "$REPO_ROOT/scripts")
	run -2 chute stream "$BATS_FILE_TMPDIR/ds" -b 5 --resume "$cursor" -o rest
	assert_one_line_error stream
	assert_output "chute stream: cursor '$cursor' was made with other stream options (--batch-size, --drop-last, --fields, --mode, --seed, --shuffle, --source-field, --split, --transform, --window)"
}

@test "transform: eval mode is deterministic and flips nothing" {
	chute stream "$BATS_FILE_TMPDIR/ds" --mode eval -b 8 --seed 1 \
		--transform 'jpg: decode | random-resized-crop 32 | flip' -o a
	chute stream "$BATS_FILE_TMPDIR/ds" --mode eval -b 8 --seed 9 \
		--transform 'jpg: decode | resize 37 | center-crop 32' -o b
	# the same pixels: eval's counterpart of the crop is resize 37
	# (32 * 256 / 224, rounded) and a centre crop; flip is a no-op
	run -0 "$PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch, numpy as np
a = [fr.fields["jpg"] for fr in chute_batch.frames(open("a", "rb"))]
b = [fr.fields["jpg"] for fr in chute_batch.frames(open("b", "rb"))]
print(all(np.array_equal(x, y) for x, y in zip(a, b)), len(a))' "$REPO_ROOT/scripts"
	assert_output "True 3"
}

@test "transform: normalize, gray, dtype and layout give the declared arrays" {
	chute stream "$BATS_FILE_TMPDIR/ds" --shuffle none -b 24 \
		--transform 'jpg: decode gray | resize 20x10 | normalize 0.5 0.25 | dtype f16 | layout chw' \
		-o out
	run -0 describe out
	assert_output "0 24 jpg:float16:24x1x10x20"
	run -0 "$PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch, numpy as np
a = next(chute_batch.frames(open("out", "rb"))).fields["jpg"].astype(np.float32)
print(a.min() >= -2.0 and a.max() <= 2.0, float(a.std()) > 0.1)' "$REPO_ROOT/scripts"
	assert_output "True True"
}

@test "transform: a corrupt image names the sample and shard; skip counts it" {
	run -1 chute stream "$BATS_FILE_TMPDIR/bad" -b 4 --transform "$TRAIN"
	assert_output --partial "sample 'c1/004'"
	assert_output --partial "shards/bad-000000.chs"
	assert_output --partial "field 'jpg': decode"
	run -0 chute stream "$BATS_FILE_TMPDIR/bad" -b 4 --mode eval \
		--on-error skip --transform "$TRAIN" -o out
	assert_output --partial "skipped 1 corrupt sample"
	run -0 describe out
	# 23 samples in eval: the corrupt one is dropped, its batch partial
	assert_line "5 4 jpg:uint8:4x3x32x32"
	n=$(describe out | awk '{ n += $2 } END { print n }')
	[ "$n" -eq 23 ]
}

@test "transform: a value of another shape is an error naming the sample" {
	run -1 chute stream "$BATS_FILE_TMPDIR/ds" -b 4 \
		--transform 'jpg: decode | center-crop 60'
	assert_output --partial "center-crop 60x60"
	assert_output --partial "resize first"
	assert_output --partial "sample '"
	# exact sizes differ per image without a crop: the batch refuses,
	# naming both shapes and the fix
	run -1 chute stream "$BATS_FILE_TMPDIR/ds" -b 24 --shuffle none \
		--transform 'jpg: decode'
	assert_one_line_error stream
	assert_output "chute stream: field 'jpg': sample 'c1/001' decodes to 64x48x3, the batch's first (sample 'c0/000') 48x64x3: add '| resize 256 | center-crop 224' or random-resized-crop to give every sample one shape"
	run -1 chute stream "$BATS_FILE_TMPDIR/ds" -b 24 --shuffle none \
		--transform 'jpg: decode | resize 32 | flip'
	assert_output "chute stream: field 'jpg': sample 'c1/001' becomes 42x32x3, the batch's first (sample 'c0/000') 32x42x3: add '| center-crop 32' after 'resize 32' (or resize WxH) to give every sample one shape"
}

@test "transform: bad specs are usage errors that say what is wrong" {
	run -2 chute stream "$BATS_FILE_TMPDIR/ds" --transform 'jpg: resize 8'
	assert_output --partial "resize: needs a decoded value: start with decode"
	run -2 chute stream "$BATS_FILE_TMPDIR/ds" --transform 'jpg: decode | sharpen'
	assert_output --partial "sharpen: no such op"
	run -2 chute stream "$BATS_FILE_TMPDIR/ds" --transform 'jpg decode'
	assert_output --partial "expected FIELD: op"
	run -2 chute stream "$BATS_FILE_TMPDIR/ds" --transform 'jpg: decode' \
		--transform 'jpg: decode gray'
	assert_output "chute stream: --transform: two transforms for field 'jpg'"
	# a field the dataset does not have: refused before a sample is read
	run -2 chute stream "$BATS_FILE_TMPDIR/ds" -b 4 --transform 'png: decode'
	assert_output "chute stream: --transform: no field 'png' in the dataset (fields: cls, jpg); did you mean 'jpg'?"
}

@test "transform: npy arrays are cropped, padded and stacked" {
	"$PYTHON" - <<'EOF'
import os, numpy as np
os.makedirs("arr", exist_ok=True)
for i in range(6):
    np.save("arr/s%d.tok.npy" % i, np.arange(i + 3, dtype=np.int32) + 100 * i)
    np.save("arr/s%d.emb.npy" % i, np.full((2, 3), i, dtype=np.float32))
EOF
	chute pack -q arr -o arrds >/dev/null
	chute stream arrds --shuffle none -b 6 --mode eval \
		--transform 'tok.npy: npy | pad 8 -1 | random-crop 4' \
		--transform 'emb.npy: npy 2x3' -o out
	run -0 "$PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch
fr = next(chute_batch.frames(open("out", "rb")))
t, e = fr.fields["tok.npy"], fr.fields["emb.npy"]
print(t.dtype, t.shape, e.dtype, e.shape)
print(t[0].tolist(), t[3].tolist())
print(e[5, 1].tolist())' "$REPO_ROOT/scripts"
	assert_line --index 0 "int64 (6, 4) float32 (6, 2, 3)"
	assert_line --index 1 "[0, 1, 2, -1] [300, 301, 302, 303]"
	assert_line --index 2 "[5.0, 5.0, 5.0]"
	run -1 chute stream arrds -b 6 --transform 'emb.npy: npy 3x2'
	assert_output --partial "not the declared one"
}

@test "transform: tar and jsonl carry the arrays' bytes and sizes" {
	chute stream "$BATS_FILE_TMPDIR/ds" --shuffle none -b 24 \
		--transform 'jpg: decode | center-crop 40' \
		--transform 'cls: int' -f tar -o out.tar
	run -0 tar -tvf out.tar
	assert_line --partial " 4800 1970-01-01 00:00 c0/000.jpg"
	assert_line --partial " 8 1970-01-01 00:00 c0/000.cls"
	run -0 chute stream "$BATS_FILE_TMPDIR/ds" --shuffle none -b 24 \
		--transform 'jpg: decode | center-crop 40' \
		--transform 'cls: int' -f jsonl
	assert_line --index 0 '{"key":"c0/000","epoch":0,"batch":0,"fields":{"cls":8,"jpg":4800},"text":{}}'
}

@test "transform: --stats splits the transforms' time" {
	run -0 chute stream "$BATS_FILE_TMPDIR/ds" -b 8 --stats \
		--transform "$TRAIN" -o /dev/null
	assert_output --partial "stream: transforms: decoding"
	run -0 chute bench "$BATS_FILE_TMPDIR/ds" -b 8 --transform "$TRAIN"
	assert_output --partial "transform: decode"
}

@test "transform: layout chw written by the resampler equals hwc transposed" {
	chute stream "$BATS_FILE_TMPDIR/ds" -b 24 --seed 4 \
		--transform 'jpg: decode | random-resized-crop 40 | flip | layout chw' -o chw
	chute stream "$BATS_FILE_TMPDIR/ds" -b 24 --seed 4 \
		--transform 'jpg: decode | random-resized-crop 40 | flip' -o hwc
	chute stream "$BATS_FILE_TMPDIR/ds" -b 24 --seed 4 \
		--transform 'jpg: decode | random-resized-crop 40 | flip | dtype f32 | layout chw' -o f32
	run -0 "$PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch, numpy as np
get = lambda f: next(chute_batch.frames(open(f, "rb"))).fields["jpg"]
a, b, c = get("chw"), get("hwc"), get("f32")
print(a.shape, np.array_equal(a, b.transpose(0, 3, 1, 2)),
      np.array_equal(c, a.astype(np.float32) / np.float32(255)))' "$REPO_ROOT/scripts"
	assert_output "(24, 3, 40, 40) True True"
}

@test "transform: --workers auto starts the workers for dear batches, and none for cheap ones" {
	# 1024x768 JPEGs: milliseconds each to decode, sanitized or not
	"$PYTHON" - <<'EOF' || fail "cannot make the JPEGs"
import os
import numpy as np
from PIL import Image
rng = np.random.default_rng(5)
os.makedirs("big/c0")
for i in range(12):
    x = rng.integers(0, 256, (768, 1024, 3), dtype=np.uint8)
    Image.fromarray(x).save("big/c0/%02d.jpg" % i, quality=90)
EOF
	chute pack -q --label-from dir big -o bigds >/dev/null
	# 12 batches, past the 8 that auto judges by
	run -0 chute stream --transform 'jpg: decode | random-resized-crop 32' \
		-b 2 -e 2 --stats --stats-json dear.json -o out bigds
	assert_output --regexp "stream: [0-9]+ workers? \(auto\), prefetch"
	run -0 "$PYTHON" -c 'import json; print(json.load(open("dear.json"))["workers"] > 0)'
	assert_output True
	# the labels alone: microseconds a batch; the writer reads them
	run -0 chute stream --transform 'cls: int' -b 1 -e 3 --stats \
		--stats-json cheap.json -o out2 "$BATS_FILE_TMPDIR/ds"
	assert_output --partial "stream: 0 workers (auto; the writer reads), prefetch"
	run -0 "$PYTHON" -c 'import json; print(json.load(open("cheap.json"))["workers"])'
	assert_output 0
}
