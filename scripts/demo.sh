#!/bin/bash
# demo.sh CHUTE_BINARY - a two-minute tour on generated data: pack a folder of
# image-like files (classes from folder names) and one of small text samples,
# verify both, list, read one sample, export to tar and check the round trip,
# split off a held-out set and check the data, stream batches and resume,
# then stream real photographs decoded and augmented by --transform.
# Everything happens in a temporary folder removed at exit.  Exits non-zero
# if any step fails.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
	echo "usage: demo.sh CHUTE_BINARY  (e.g. scripts/demo.sh build/chute)" >&2
	exit 2
fi
CHUTE=$(realpath "$1")
PYTHON=${PYTHON:-python3}
GEN=$(realpath "$(dirname "$0")/gen-data.py")
HERE=$(realpath "$(dirname "$0")")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/chute-demo.XXXXXX")
cd "$WORK"

if [ -t 1 ]; then B=$'\e[1m' G=$'\e[32m' R=$'\e[31m' N=$'\e[0m'; else B='' G='' R='' N=''; fi
STEP=start
finish() {
	local rc=$?
	rm -rf "$WORK"
	if [ $rc -ne 0 ]; then echo "${R}demo: step \"$STEP\" failed (exit $rc)${N}" >&2; fi
	exit $rc
}
trap finish EXIT

chute() { "$CHUTE" "$@"; }
step() { STEP=$1; printf '\n%s== %s%s\n' "$B" "$1" "$N"; }
# Shows a command as the user would type it (quoting what needs it), then
# runs it.
show() {
	local a line='$'
	for a in "$@"; do
		if [[ $a =~ ^[][:alnum:]_./=:@%+,-]+$ ]]; then line+=" $a"; else line+=" '$a'"; fi
	done
	printf '%s\n' "$line"
	"$@"
}
shard_bytes() { stat -c %s "$1"/shards/*.chs | awk '{ s += $1 } END { print s }'; }

echo "${B}chute demo${N}: $(chute --version), working in $WORK"

step "generate a seeded dataset"
show "$PYTHON" "$GEN" images data/images --count 200 --size 20000 --classes 4 --seed 1
show "$PYTHON" "$GEN" text data/text --count 1000 --seed 1

step "pack"
show chute pack --label-from dir data/images -o images | tee pack-images.txt
show chute pack --dict data/text -o text | tee pack-text.txt

step "pack again with one job: same bytes, same id"
mkdir again
chute pack -q -j 1 --dict data/text -o again/text >/dev/null
show cmp text/manifest.json again/text/manifest.json
echo "identical manifest and id"

step "verify"
show chute verify images | tee verify-images.txt
show chute verify --deep text | tee verify-text.txt

step "list"
chute ls images >ls.txt
printf '$ chute ls images | head -n 4\n'
head -n 4 ls.txt
echo "... $(wc -l <ls.txt) samples"

step "read one sample"
show chute cat text '#0' --field txt
echo
printf '$ chute cat images c02/img0000002 --field cls   # class of folder c02: '
chute cat images c02/img0000002 --field cls
echo

step "export to WebDataset tar and check the round trip"
show chute export text -o text-tar
show chute export images -o images-tar
for ds in text images; do
	mkdir -p "back/$ds"
	for t in "$ds"-tar/*.tar; do tar -xf "$t" -C "back/$ds"; done
done
# Text comes back byte for byte; images come back with the cls field that
# --label-from dir added, which must hold the index of the class folder.
diff -r data/text back/text
diff -r -x '*.cls' data/images back/images
for f in back/images/c0*/*.cls; do
	dir=${f#back/images/c}
	[ "$(tr -d ' \n' <"$f")" = "$((10#${dir%%/*}))" ] ||
		{ echo "wrong class in $f" >&2; false; }
done
echo "all $(find back -type f | wc -l) files match the originals"

step "split off a held-out set, and check the data before training"
# by key hash: adding samples later never moves one to another split
show chute split text --val 0.1
show chute check text
show chute stream -b 64 --split val --mode eval -f jsonl text | head -n 3

step "stream shuffled batches, and resume from a cursor"
# Batches of 64 in a pipe, read as numpy views; then the same stream cut
# after its second batch and resumed from that batch's cursor.
chute stream -b 64 --seed 1 text >full.bin
echo '$ chute stream -b 64 --seed 1 text | python3 scripts/chute_batch.py'
"$PYTHON" "$HERE/chute_batch.py" <full.bin | head -n 3
cursor=$("$PYTHON" - "$HERE" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch
frames = list(chute_batch.frames(open("full.bin", "rb")))
print(frames[1].cursor)
PY
)
echo "\$ chute stream -b 64 --seed 1 --resume $cursor text >rest.bin"
chute stream -b 64 --seed 1 --resume "$cursor" text >rest.bin
"$PYTHON" - "$HERE" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import chute_batch
full = open("full.bin", "rb").read()
rest = open("rest.bin", "rb").read()
assert full.endswith(rest) and len(rest) < len(full), "resume differs"
n = sum(1 for _ in chute_batch.frames(open("rest.bin", "rb")))
print("resumed: %d batches, byte-identical to the end of the full stream" % n)
PY
show chute bench -b 64 text

step "summary"
printf '%-8s %8s %7s %12s %12s  %-32s  %s\n' dataset samples shards "raw bytes" "shard bytes" id verify
for ds in images text; do
	# packed N samples (B bytes) into S shards, id ID
	read -r _ n _ b _ _ s _ _ id < <(tail -n 1 "pack-$ds.txt")
	printf '%-8s %8s %7s %12s %12s  %-32s  %s\n' "$ds" "$n" "$s" "${b#(}" \
		"$(shard_bytes "$ds")" "$id" "$G$(tail -n 1 "verify-$ds.txt" | cut -d: -f1)$N"
done

step "decode and augment real photographs in the loader"
# ImageNet-like JPEGs cut from Debian's wallpapers, decoded and augmented in
# chute's worker threads; the trainer gets (64, 3, 224, 224) uint8 arrays.
show "$PYTHON" "$HERE/make-images" photos 640 --seed 1
show chute pack -q --label-from dir photos -o photos-ds
echo "\$ chute stream -b 64 --workers 2 photos-ds --transform 'jpg: decode | random-resized-crop 224 | flip | layout chw' --transform 'cls: int' | python3 shapes.py"
cat >shapes.py <<'PY'
import sys, time
sys.path.insert(0, sys.argv[1])
import chute_batch
t0, n = time.perf_counter(), 0
for fr in chute_batch.frames(sys.stdin.buffer):
    img, cls = fr.fields["jpg"], fr.fields["cls"]
    if fr.batch < 3:
        print("batch %d: jpg %s %s, cls %s %s, labels %s..."
              % (fr.batch, img.dtype, img.shape, cls.dtype, cls.shape,
                 cls[:6].tolist()))
    n += fr.nsamples
dt = time.perf_counter() - t0
print("%d images in %.2f s: %.0f images/s decoded, cropped, flipped"
      % (n, dt, n / dt))
PY
chute stream -b 64 --workers 2 photos-ds \
	--transform 'jpg: decode | random-resized-crop 224 | flip | layout chw' \
	--transform 'cls: int' | "$PYTHON" shapes.py "$HERE"
