#!/usr/bin/env bats
# chute check --html: one self-contained page beside the text or JSON
# report.  Opened in a real browser (chromium --headless): it renders,
# every thumbnail decodes, and its figures are those of --json; the same
# dataset gives the same bytes; a dataset without images, a corrupt image,
# an unreadable block and a page that cannot be written.

load helper

# mksrc DIR: 24 images in classes c0..c2 (keys cK/sNNNN, random 9x8
# patterns blown up to 72x64), six byte-for-byte copies of s0001 (c1/d0..5:
# duplicates within a split, leakage across), six of s0003 re-encoded
# (c0/n0..5: near-duplicates) and a JPEG cut short (c2/bad).
mksrc() {
	cached _mksrc "$@"
}
_mksrc() {
	"$PYTHON" - "$1" <<'EOF2' || fail "cannot make images in $1"
import io, os, random, sys
from PIL import Image
root = sys.argv[1]
def save(rel, data):
    os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
    open(os.path.join(root, rel), "wb").write(data)
def jpeg(im, q):
    b = io.BytesIO()
    im.save(b, "JPEG", quality=q)
    return b.getvalue()
ims = []
for i in range(24):
    rng = random.Random(i)
    im = Image.new("L", (9, 8))
    im.putdata([rng.randrange(256) for _ in range(72)])
    ims.append(im.resize((72, 64), Image.NEAREST).convert("RGB"))
    save("c%d/s%04d.jpg" % (i % 3, i), jpeg(ims[-1], 90))
for k in range(6):
    save("c1/d%d.jpg" % k, jpeg(ims[1], 90))
    save("c0/n%d.jpg" % k, jpeg(ims[3], 60 + k))
save("c2/bad.jpg", jpeg(ims[2], 90)[:300])
EOF2
}

# mktext DIR: samples of a text field and a binary one, no image: keys
# t00..t11, t05 and t07 holding the same bytes as t01.
mktext() {
	mkdir -p "$1"
	local i
	for i in 00 01 02 03 04 05 06 07 08 09 10 11; do
		printf 'line <%s> & more text of sample %s\n' "$i" "$i" >"$1/t$i.txt"
		printf '\001\377\000%s' "$i" >"$1/t$i.bin"
	done
	cp "$1/t01.txt" "$1/t05.txt"
	cp "$1/t01.bin" "$1/t05.bin"
	cp "$1/t01.txt" "$1/t07.txt"
	cp "$1/t01.bin" "$1/t07.bin"
}

# report_ds DS: the images above, 16 samples a shard, split.
report_ds() {
	mksrc src
	chute pack -q -s 16s --label-from dir -o "$1" src >/dev/null ||
		fail "chute pack failed"
	chute split "$1" --val 0.25 >/dev/null || fail "chute split failed"
}

# browse PAGE DOM: PAGE with a script that counts the images decoded,
# opened by chromium, which writes the document as it rendered to DOM.
browse() {
	command -v chromium >/dev/null ||
		fail "chromium is not installed (scripts/install-deps.sh installs it)"
	"$PYTHON" "$BATS_TEST_DIRNAME/html_report.py" probe "$1" probe.html ||
		fail "cannot write the probe page"
	chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=3000 \
		--dump-dom "file://$PWD/probe.html" >"$2" 2>chromium.log ||
		fail "chromium failed: $(tail -n 5 chromium.log)"
}

# html_matches PAGE JSON [ARGS...]: html_report.py check.
html_matches() {
	run "$PYTHON" "$BATS_TEST_DIRNAME/html_report.py" check "$@"
	assert_success
}

@test "check --html: the page renders in a browser, every thumbnail decodes, and its counts are the JSON report's" {
	report_ds ds
	run -1 --separate-stderr chute check ds --near-duplicates --json --html report.html
	printf '%s\n' "$output" >report.json
	run -1 --separate-stderr chute check ds --near-duplicates --json
	cmp report.json <(printf '%s\n' "$output") || fail "--html changed the JSON report"
	run "$PYTHON" -c '
import json, sys
r = {x["rule"]: x for x in json.load(open("report.json"))["rules"]}
print(" ".join(k for k in ("field-types", "duplicates", "leakage", "near-duplicates") if r[k]["status"] == "fail"))'
	assert_output "field-types duplicates leakage near-duplicates"
	browse report.html dom.html
	html_matches report.html report.json --dom dom.html --images 10
	# pairs side by side, the corrupt image as a placeholder naming why
	run grep -c '<div class="rel">=</div>' report.html
	assert_output 1 # one line
	grep -q '<small>distance [0-9]*</small>' report.html || fail "no distance shown"
	grep -q '<div class="broken" data-field="jpg">jpg: cannot decode JPEG: premature end' report.html ||
		fail "no placeholder for c2/bad's image"
	grep -q "id=\"version\">$(chute --version | awk '{ print $NF }')<" report.html ||
		fail "no chute version in the page"
}

@test "check --html: the same dataset and options give the same bytes, whatever --jobs" {
	report_ds ds
	run -1 chute check ds -j 1 --html one.html
	local text=$output
	run -1 chute check ds -j 3 --html three.html
	assert_equal "$output" "$text"
	cmp one.html three.html
	run -1 chute check ds
	assert_equal "$output" "$text"
}

@test "check --html: a dataset without images shows excerpts and sizes" {
	mktext src
	chute pack -q -o ds src >/dev/null
	chute split ds --val 0.25 >/dev/null
	run -1 --separate-stderr chute check ds --json --html report.html
	printf '%s\n' "$output" >report.json
	browse report.html dom.html
	html_matches report.html report.json --dom dom.html
	grep -q '<b>txt</b> <q>line &lt;01&gt; &amp; more text of sample 01 </q> 35 bytes' report.html ||
		fail "no excerpt of t01.txt"
	grep -q '<b>bin</b> 5 bytes</div>' report.html || fail "no size of t05.bin"
	run grep -c '<img' report.html
	assert_output 0
}

@test "check --html: an unreadable block is named with its shard and byte" {
	report_ds ds
	local shard at
	shard=$(shard_of ds 1)
	at=$(block_middle "$shard" 0)
	flip_byte "$shard" "$at"
	run -1 --separate-stderr chute check ds --json --html report.html
	printf '%s\n' "$output" >report.json
	html_matches report.html report.json
	grep -q "<code>shards/${shard##*/}</code>: .*block 0.* byte [0-9]" report.html ||
		fail "the page does not name the block: $(grep -o '<div class="broken"><code>[^<]*</code>[^<]*' report.html)"
}

@test "check --html: a page that cannot be written exits 2 before the check and leaves nothing" {
	report_ds ds
	touch afile
	run -2 --separate-stderr chute check ds --html afile/report.html
	assert_output ""
	[[ $stderr == "chute check: cannot write the report 'afile/report.html': "* ]] ||
		fail "stderr: $stderr"
	mkdir adir
	run -2 --separate-stderr chute check ds --html adir
	assert_no_entries adir
	run find . -name '*report*'
	assert_output ""
}

@test "check --html: the README's pictures are PNGs in the tree, made again by scripts/make-screenshots.sh from the demo's data" {
	local shown
	shown=$(grep -o '](docs/[^)]*\.png)' "$REPO_ROOT/README.md" | sed 's/^](//; s/)$//')
	[ "$(wc -l <<<"$shown")" -eq 2 ] || fail "README shows: $shown"
	for f in $shown; do
		run file -b "$REPO_ROOT/$f"
		assert_output --partial "PNG image data"
	done
	# made again here: the same pictures (the preview byte for byte, the
	# browser's screenshot of the report at its size)
	TMPDIR=$BATS_TEST_TMPDIR run -0 "$REPO_ROOT/scripts/make-screenshots.sh" \
		"$CHUTE_BIN" "$BATS_TEST_TMPDIR/shots"
	cmp "$BATS_TEST_TMPDIR/shots/preview.png" "$REPO_ROOT/docs/preview.png"
	run file -b "$BATS_TEST_TMPDIR/shots/check-report.png"
	assert_output --partial "PNG image data, 1000 x 1500"
	run file -b "$REPO_ROOT/docs/check-report.png"
	assert_output --partial "PNG image data, 1000 x 1500"
}
