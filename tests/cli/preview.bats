#!/usr/bin/env bats
# chute preview: one batch drawn as a contact sheet.  The PNG is the sheet
# that chute.grid draws from the frames chute stream writes for the same
# options (u8 HWC and float32 CHW arrays); the printed cursor draws the
# next batch; a corrupt file is a tile naming its error; bad input.

load helper

# mkpics DIR: 20 images in classes c0..c3 (72x64 random 9x8 patterns),
# and with --bad a JPEG cut short, c1/bad.
mkpics() {
	cached _mkpics "$@"
}
_mkpics() {
	"$PYTHON" - "$@" <<'EOF2' || fail "cannot make images in $1"
import io, os, random, sys
from PIL import Image
root = sys.argv[1]
for i in range(20):
    rng = random.Random(i)
    im = Image.new("RGB", (9, 8))
    im.putdata([tuple(rng.randrange(256) for _ in range(3)) for _ in range(72)])
    os.makedirs(os.path.join(root, "c%d" % (i % 4)), exist_ok=True)
    im.resize((72, 64), Image.NEAREST).save(
        os.path.join(root, "c%d" % (i % 4), "s%04d.jpg" % i), quality=90)
if "--bad" in sys.argv:
    b = io.BytesIO()
    im.save(b, "JPEG")
    open(os.path.join(root, "c1", "bad.jpg"), "wb").write(b.getvalue()[:200])
EOF2
}

pics_ds() {
	mkpics src "$@"
	chute pack -q -s 8s --label-from dir -o ds src >/dev/null || fail "chute pack failed"
}

# same_as_grid PNG FRAMES N [COLUMNS]: PNG holds chute.grid of frame N of
# the stream in FRAMES.
same_as_grid() {
	PYTHONPATH="$REPO_ROOT/python" "$PYTHON" - "$@" <<'EOF2' || fail "$1 is not chute.grid of frame $3 of $2"
import itertools, sys
import numpy as np
from PIL import Image
import chute
from chute.frames import frames
png, stream, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
columns = int(sys.argv[4]) if len(sys.argv) > 4 else None
fr = next(itertools.islice(frames(open(stream, "rb")), n, None))
want = chute.grid(fr, columns=columns)
got = np.asarray(Image.open(png).convert("RGB"))
assert got.shape == want.shape, (got.shape, want.shape)
bad = np.argwhere((got != want).any(axis=2))
assert len(bad) == 0, "%d pixels differ, the first at %s" % (len(bad), bad[0])
assert len(np.unique(want.reshape(-1, 3), axis=0)) > 50, "a blank sheet"
EOF2
}

@test "preview: the PNG is chute.grid of the stream's frame, and the printed cursor draws the next batch" {
	pics_ds
	local t=(--seed 3 -b 6 --transform 'jpg: decode | random-resized-crop 40 | flip' --transform 'cls: int')
	run -0 --separate-stderr chute preview ds "${t[@]}" -o one.png
	local cursor=$output
	[[ $cursor == ch1.*.0.0.6 ]] || fail "not a cursor: $cursor"
	chute stream ds "${t[@]}" -o frames.chb
	same_as_grid one.png frames.chb 0
	run -0 chute preview ds "${t[@]}" --resume "$cursor" -o two.png
	same_as_grid two.png frames.chb 1
	run -0 chute preview ds "${t[@]}" -o again.png
	cmp one.png again.png
	# -q: the same picture, no cursor printed
	run -0 chute preview -q ds "${t[@]}" -o quiet.png
	assert_output ""
	cmp one.png quiet.png
}

@test "preview: a float32 channels-first array is stretched as chute.grid stretches it" {
	pics_ds
	local t=(-b 5 --shuffle none --transform 'jpg: decode | resize 24 | normalize imagenet | layout chw')
	run -0 chute preview ds "${t[@]}" --columns 2 -o sheet.png
	chute stream ds "${t[@]}" -o frames.chb
	same_as_grid sheet.png frames.chb 0 2
}

@test "preview: a corrupt JPEG among files is a tile that names the error" {
	pics_ds --bad
	run -0 chute preview ds --shuffle none -b 21 -o sheet.png
	"$PYTHON" - <<'EOF2' || fail "no dark red placeholder tile"
import numpy as np
from PIL import Image
a = np.asarray(Image.open("sheet.png").convert("RGB"))
red = (a == (96, 24, 24)).all(axis=2)
assert red.sum() > 100 * 100, red.sum()
# its words, in white on it
ys, xs = np.nonzero(red)
box = a[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
assert (box == 255).all(axis=2).sum() > 200
EOF2
}

@test "preview: no -o, no picture, a missing field and an unwritable FILE are exit 2, leaving nothing" {
	pics_ds
	run -2 chute preview ds
	assert_output --partial "no output given"
	run -2 chute preview ds --field nosuch -o x.png
	assert_output "chute preview: no field 'nosuch' in the batch"
	run -2 chute preview ds --transform 'jpg: decode' --label jpg -o x.png
	assert_output --partial "holds no class"
	mkdir text && printf 'hello\n' >text/a.txt && printf 'world\n' >text/b.txt
	chute pack -q -o tds text >/dev/null
	run -2 chute preview tds -o x.png
	assert_output "chute preview: no picture in the batch: no u8 or f32 image array, no jpg, jpeg or png field: name the field to draw (--field)"
	touch afile
	run -2 chute preview ds -o afile/x.png
	assert_output --partial "cannot write 'afile/x.png'"
	run find . -name '*x.png*'
	assert_output ""
}
