#!/bin/bash
# stream-digests.sh CHUTE_BINARY - the SHA-256 of a fixed set of packs and
# streams over seeded data (scripts/gen-data.py), one "DIGEST  NAME" line
# each.  tests/cli/golden/streams.sha256 holds them as they were: a change
# meant to keep every output byte (a faster decoder, another read path)
# must print the same lines.  A change that means to alter output bytes
# regenerates that file, and its commit says why:
#
#   scripts/stream-digests.sh build/chute >tests/cli/golden/streams.sha256
#
# The streams cover what a trainer reads: image batches through the train
# and eval transforms, text as jsonl and tar, window shuffle, a rank of
# several, raw blocks, a resume and a mix; each is streamed with 1 and 3
# workers, which must agree (else the script fails, exit 1).
set -euo pipefail

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
	echo "usage: stream-digests.sh CHUTE_BINARY" >&2
	exit 2
fi
CHUTE=$(realpath "$1")
PYTHON=${PYTHON:-/usr/bin/python3}
HERE=$(realpath "$(dirname "$0")")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/chute-digests.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

"$PYTHON" "$HERE/gen-data.py" images photos --count 48 --size 9000 \
	--classes 4 --seed 5 -q
"$PYTHON" "$HERE/gen-data.py" text words --count 400 --seed 6 >/dev/null 2>&1
"$CHUTE" pack -q --label-from dir -s 16s photos -o img >/dev/null
"$CHUTE" pack -q -s 100s words -o txt >/dev/null
"$CHUTE" pack -q -l 0 -s 100s words -o raw >/dev/null
"$CHUTE" pack -q -s 150s words -o txt2 >/dev/null

digest() { sha256sum | cut -d' ' -f1; }

# The packs: manifests and shards, byte for byte.
for ds in img txt raw; do
	echo "$(cat "$ds"/manifest.json "$ds"/shards/*.chs | digest)  pack $ds"
done

TRAIN=(--transform 'jpg: decode | random-resized-crop 64 | flip | layout chw'
	--transform 'cls: int')
EVAL=(--mode eval --transform 'jpg: decode | resize 72 | center-crop 64'
	--transform 'cls: int')
# name|args: each stream, one line; the dataset last.
STREAMS=(
	"images train|-b 8 -e 2 --seed 7 ${TRAIN[*]@Q} img"
	"images eval|-b 8 --shuffle none ${EVAL[*]@Q} img"
	"text jsonl|-b 16 -e 2 -f jsonl --seed 1 txt"
	"text tar|-b 16 -f tar --seed 2 txt"
	"text window|-b 16 --shuffle window --window 2 --seed 3 txt"
	"text rank 1 of 3|-b 16 --world-size 3 --rank 1 txt"
	"raw blocks|-b 16 --seed 4 raw"
	"mix|-b 16 -e 1 --seed 5 --mix txt=3,txt2=1 txt txt2"
)
for entry in "${STREAMS[@]}"; do
	name=${entry%%|*}
	eval "args=(${entry#*|})"
	one=$("$CHUTE" stream -q -w 1 "${args[@]}" | digest)
	three=$("$CHUTE" stream -q -w 3 "${args[@]}" | digest)
	if [ "$one" != "$three" ]; then
		echo "stream-digests: '$name' differs with 1 and 3 workers" >&2
		exit 1
	fi
	echo "$one  stream $name"
done

# A resume from the third batch's cursor gives the rest, the same bytes.
cursor=$("$CHUTE" stream -q -b 16 --seed 8 txt |
	"$PYTHON" "$HERE/chute_batch.py" --limit 3 | sed -n '3s/.* //p')
echo "$("$CHUTE" stream -q -b 16 --seed 8 --resume "$cursor" txt |
	digest)  stream resumed"
