#!/usr/bin/env bats
# chute stream --transform against the reference a PyTorch user trusts:
# torchvision's transforms on PIL images (tests/ref/transforms_ref.py does
# the comparing and prints the figures, shown here as TAP comments).
#
# Needs torch, torchvision, PIL and numpy for $PYTHON (Debian:
# python3-torch python3-torchvision python3-pil python3-numpy) and skips
# without them.  The data (46 JPEGs: 40 from scripts/make-images, seed 1,
# and odd ones; 5 PNGs; hand-written labels) is made once for the file.

load helper

REF="$REPO_ROOT/tests/ref/transforms_ref.py"
DATA="$BATS_FILE_TMPDIR/data"

have_reference() {
	per_file have_reference "$PYTHON" -c 'import numpy, PIL, torch, torchvision' 2>/dev/null
}

# Each check runs forked from one Python that has imported torchvision
# (tests/cli/pyfork.py): the same script and arguments, without 2.4 s of
# CPU for the imports in each of the file's seven runs.
setup_file() {
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
	have_reference && [ -x "$CHUTE_BIN" ] || return 0
	pyfork_start numpy PIL.Image torch torchvision.transforms
	"${PYFORK[@]}" "$REF" data "$DATA" >"$BATS_FILE_TMPDIR/data.log" 2>&1 || true
}

teardown_file() {
	pyfork_stop
}

# need_reference: skips without torchvision; fails if setup_file could not
# make the data.
need_reference() {
	have_reference ||
		skip "numpy, PIL, torch or torchvision missing for $PYTHON (Debian: python3-torch python3-torchvision python3-pil)"
	[ -f "$DATA/ok" ] ||
		fail "setup_file could not make the data: $(cat "$BATS_FILE_TMPDIR/data.log")"
}

# reference CHECK [ARGS...]: runs one check; its lines become TAP comments,
# so that the figures show in every run, not only when one fails.
reference() {
	run "${PYFORK[@]}" "$REF" "$@"
	printf '# %s\n' "${lines[@]}" >&3
	if [ "$status" -ne 0 ]; then
		fail "transforms_ref.py $1 exited with status $status"
	fi
}

@test "transform ref: resize 256 | center-crop 224, WxH and gray within 2/255 a image of torchvision (JPEG, PNG)" {
	need_reference
	reference resize "$DATA"
}

@test "transform ref: shrinking 2x-10x (resize 128, 64x48) within 2/255 a image of torchvision" {
	need_reference
	reference resize-small "$DATA"
}

@test "transform ref: decode, center-crop and flip 1 equal PIL's byte for byte; flip draws half, never in eval" {
	need_reference
	reference exact "$DATA"
}

@test "transform ref: normalize imagenet and dtype f32/f16 equal ToTensor()+Normalize() (or within 1 ulp)" {
	need_reference
	reference normalize "$DATA"
}

@test "transform ref: cls: int gives the labels of the cls text and of the class folders, shape (B,)" {
	need_reference
	reference int "$DATA"
}

@test "transform ref: random-resized-crop boxes follow torchvision's distribution (KS, alpha 0.001) and fallback rate" {
	need_reference
	local tool
	tool="$(dirname "$CHUTE_BIN")/tests/test_transform"
	[ -x "$tool" ] || fail "$tool is missing (make $(basename "$(dirname "$CHUTE_BIN")")/tests/test_transform)"
	reference boxes "$tool"
}
