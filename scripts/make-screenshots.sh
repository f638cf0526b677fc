#!/bin/bash
# make-screenshots.sh CHUTE_BINARY [DIR] - the README's pictures, from the demo's
# generated data (scripts/gen-data.py): docs/check-report.png, chromium's
# screenshot of `chute check --html` over photos with a duplicate, a
# leaked copy and a corrupt file planted, and docs/preview.png, `chute
# preview` of an augmented batch (into DIR instead when given: the tests
# make them there and hold them against those in docs/).  Needs chromium and PIL
# (scripts/install-deps.sh); works in a temporary folder removed at exit.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ] || [ ! -x "$1" ]; then
	echo "usage: make-screenshots.sh CHUTE_BINARY [DIR]  (e.g. build/chute)" >&2
	exit 2
fi
CHUTE=$(realpath "$1")
PYTHON=${PYTHON:-/usr/bin/python3}
HERE=$(realpath "$(dirname "$0")")
DOCS=$(realpath "${2:-$HERE/../docs}")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/chute-shots.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

"$PYTHON" "$HERE/gen-data.py" images photos --count 40 --size 20000 \
	--classes 4 --seed 1 -q
cp photos/c01/img0000001.jpg photos/c01/img0000101.jpg  # a duplicate
for i in 2 3 4 5; do                                   # copies that leak
	cp photos/c02/img0000002.jpg "photos/c02/img000020$i.jpg"
done
head -c 2000 photos/c03/img0000003.jpg >photos/c03/img0000103.jpg  # cut short
"$CHUTE" pack -q --label-from dir photos -o ds >/dev/null
"$CHUTE" split ds --val 0.25 >/dev/null
"$CHUTE" check ds --examples 2 --html report.html >/dev/null || true
mkdir -p "$DOCS"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
	--window-size=1000,1500 --screenshot="$WORK/report.png" \
	"file://$WORK/report.html" 2>/dev/null
"$CHUTE" preview ds -b 12 --columns 6 --seed 1 --on-error skip -o preview.png \
	--transform 'jpg: decode | random-resized-crop 80 | flip' \
	--transform 'cls: int' >/dev/null
# fewer colours, a fraction of the bytes: pictures for a README
"$PYTHON" - "$WORK/report.png" "$DOCS/check-report.png" \
	"$WORK/preview.png" "$DOCS/preview.png" <<'PY'
import sys
from PIL import Image
a = sys.argv[1:]
for src, dst in zip(a[::2], a[1::2]):
    Image.open(src).convert("RGB").quantize(256).save(dst, optimize=True)
PY
ls -l "$DOCS"/check-report.png "$DOCS"/preview.png
