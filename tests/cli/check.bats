#!/usr/bin/env bats
# chute check: each rule finds the problem planted for it, names the sample
# (text and --json), and sets the exit status; a clean dataset passes; the
# rules file and the options change what fails.  Split stability and group
# integrity are chute split's, in split.bats.

load helper

# mkimages DIR COUNT [--flat] [--first I] [--classes K] [--png] [--block PX]:
# COUNT samples numbered from I, each a real image (a random 9x8 grey
# pattern blown up to blocks of PX pixels, 8 by default: 72x64, JPEG at
# quality 90, about 800 bytes), sample i in class i mod K (3 by default).
# By default DIR/cK/sNNNN.jpg, for `chute pack --label-from dir` (keys
# cK/sNNNN); with --flat DIR/sNNNN.jpg and DIR/sNNNN.cls holding K as text
# (keys sNNNN).  Sample i's picture depends on i alone.  Made once per
# test file for each set of arguments (`cached`), then copied.
mkimages() {
	cached _mkimages "$@"
}
_mkimages() {
	"$PYTHON" - "$@" <<'EOF' || fail "cannot make images in $1"
import argparse, os, random
from PIL import Image
ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("count", type=int)
ap.add_argument("--flat", action="store_true")
ap.add_argument("--png", action="store_true")
ap.add_argument("--first", type=int, default=0)
ap.add_argument("--classes", type=int, default=3)
ap.add_argument("--block", type=int, default=8)
a = ap.parse_args()
for i in range(a.first, a.first + a.count):
    k = i % a.classes
    rng = random.Random(i)
    im = Image.new("L", (9, 8))
    im.putdata([rng.randrange(256) for _ in range(72)])
    im = im.resize((9 * a.block, 8 * a.block), Image.NEAREST).convert("RGB")
    sub = a.dir if a.flat else os.path.join(a.dir, "c%d" % k)
    os.makedirs(sub, exist_ok=True)
    base = os.path.join(sub, "s%04d" % i)
    if a.png:
        im.save(base + ".png", "PNG")
    else:
        im.save(base + ".jpg", "JPEG", quality=90)
    if a.flat:
        with open(base + ".cls", "w") as f:
            f.write(str(k))
EOF
}

# pack_ds DS SRC [PACK OPTIONS...]: packs SRC into DS, 16 samples a shard.
pack_ds() {
	local ds=$1 src=$2
	shift 2
	chute pack -q -s 16s "$@" -o "$ds" "$src" >/dev/null || fail "chute pack $src failed"
}

# split_ds DS: train and val (a quarter of the samples), seed 0.
split_ds() {
	chute split "$1" --val 0.25 >/dev/null || fail "chute split $1 failed"
}

# clean_ds DS [COUNT]: COUNT (48) labelled images from src/ in 3 classes,
# split into train and val.
clean_ds() {
	mkimages src "${2:-48}"
	pack_ds "$1" src --label-from dir
	split_ds "$1"
}

# flat_ds DS [COUNT]: COUNT (48) images with cls files of their own (no
# class map) from src/ (keys sNNNN), split into train and val.
flat_ds() {
	mkimages src "${2:-48}" --flat
	pack_ds "$1" src
	split_ds "$1"
}

# repack DS [PACK OPTIONS...]: packs src/ into DS again and splits it the
# same way: keys, not contents, decide the splits, so every sample keeps
# its split.
repack() {
	local ds=$1
	shift
	pack_ds "$ds" src --force "$@" # the old splits go; split again below
	split_ds "$ds"
}

# keys_of DS SPLIT: the keys of split SPLIT, one a line; listed once per
# test for each content of DS's manifest (which names every shard and
# split file by its hash).
keys_of() {
	local sum at
	sum=$(cksum <"$1/manifest.json") || fail "cannot read $1/manifest.json"
	at="$BATS_TEST_TMPDIR/.keys_of/${1//\//_}.${sum%% *}.$2"
	if [ ! -f "$at" ]; then
		mkdir -p "${at%/*}" &&
			chute ls --split "$2" "$1" | cut -f1 >"$at.tmp" && mv "$at.tmp" "$at" ||
			fail "chute ls --split $2 $1 failed"
	fi
	cat "$at"
}

# pick DS SPLIT PREFIX [N]: the Nth (0-based) key of split SPLIT that starts
# with PREFIX.
pick() {
	local k
	k=$(keys_of "$1" "$2" | grep "^$3" | sed -n "$((${4:-0} + 1))p")
	[ -n "$k" ] || fail "no key ${4:-0} starting with '$3' in split $2 of $1"
	printf '%s\n' "$k"
}

# set_classes DS JSON: replaces the manifest's class map by JSON (a list)
# and records the id that matches the new content (chute-manifest(5), THE ID).
set_classes() {
	PYTHONPATH=$REPO_ROOT/python "$PYTHON" - "$@" <<'EOF' || fail "cannot set the classes of $1"
import json, sys
import chute
path = sys.argv[1] + "/manifest.json"
m = json.load(open(path))
m["classes"] = json.loads(sys.argv[2])
m["id"] = chute.manifest_id(m)
json.dump(m, open(path, "w"), indent=2, sort_keys=True)
EOF
}

# check STATUS ARGS...: runs chute check ARGS, expecting exit STATUS; stdout
# in $output, stderr in $stderr.
check() {
	local status=$1
	shift
	run "-$status" --separate-stderr chute check "$@"
}

# rule_lines RULE: RULE's status line in $output and the indented lines
# under it.
rule_lines() {
	printf '%s\n' "$output" | awk -v r="$1" '
		index($0, "PASS " r ":") == 1 || index($0, "WARN " r ":") == 1 ||
		index($0, "FAIL " r ":") == 1 { on = 1; print; next }
		/^[^ ]/ { on = 0 }
		on'
}

# assert_rule STATUS RULE KEY...: $output (text) has the line "STATUS RULE:
# ..." and each KEY in the example lines under it.
assert_rule() {
	local status=$1 rule=$2 block k
	shift 2
	assert_line --regexp "^$status $rule: "
	block=$(rule_lines "$rule" | tail -n +2)
	for k; do
		[[ $block == *"$k"* ]] || fail "$rule does not name '$k'; its examples: '$block'"
	done
}

# assert_summary RULES PASSED WARNED FAILED: the last line of $output.
assert_summary() {
	assert_line --index -1 "check: $1 rules, $2 passed, $3 warned, $4 failed"
}

# assert_text_shape: every line of $output is a rule's status line, an
# indented example, or the last line (a key or a field's content that holds
# a newline must not break a line).
assert_text_shape() {
	local bad
	bad=$(printf '%s\n' "$output" | grep -Ev '^((PASS|WARN|FAIL) [a-z-]+: |  |check: )') || true
	[ -z "$bad" ] || fail "lines that are no rule, example or summary: '$bad'"
}

# json_rule RULE STATUS [KEY...]: $output is one --json report in which rule
# RULE has status STATUS and names each KEY in its examples (as key or as
# other.key); the report's counts agree with its rules.
json_rule() {
	printf '%s\n' "$output" >report.json
	"$PYTHON" -S - "$@" <<'EOF' || fail "bad JSON report: $(cat report.json)"
import json, sys
rule, status, keys = sys.argv[1], sys.argv[2], sys.argv[3:]
r = json.load(open("report.json"))
by = {x["rule"]: x for x in r["rules"]}
assert len(by) == len(r["rules"]), "a rule twice: %s" % r["rules"]
assert rule in by, "no rule %s in %s" % (rule, sorted(by))
x = by[rule]
assert x["status"] == status, x
assert isinstance(x["count"], int) and isinstance(x["message"], str), x
named = set()
for e in x["examples"]:
    named.add(e.get("key"))
    if e.get("other"):
        named.add(e["other"].get("key"))
for k in keys:
    assert k in named, "%s not named by %s" % (k, x)
n = {s: sum(y["status"] == s for y in r["rules"]) for s in ("pass", "warn", "fail")}
assert (r["passed"], r["warned"], r["failed"]) == (n["pass"], n["warn"], n["fail"]), r
EOF
}

# jq_ok EXPR...: each Python expression EXPR over the --json report `r` in
# $output (and the manifest `m` of ds) is true; the first that is not is
# named.  One Python process for them all.
jq_ok() {
	local bad
	printf '%s\n' "$output" >report.json
	bad=$(
		"$PYTHON" -S - "$@" <<'EOF'
import json, os, sys
r = json.load(open("report.json"))
m = json.load(open("ds/manifest.json")) if os.path.exists("ds/manifest.json") else None
by = {x["rule"]: x for x in r["rules"]}
for e in sys.argv[1:]:
    try:
        ok = eval(e)
    except Exception as x:
        ok, e = False, "%s (%r)" % (e, x)
    if not ok:
        print(e)
        sys.exit(1)
EOF
	) || fail "'$bad' is false for $(cat report.json)"
}

DEFAULT_RULES="readable required-fields empty field-types duplicates leakage conflicting-labels eval-split labels size-outliers"
ALL_RULES="readable required-fields empty field-types duplicates leakage conflicting-labels near-duplicates eval-split labels size-outliers corruption"

# ------------------------------------------------------------ a clean dataset

@test "check: a clean dataset passes every rule, in the documented order" {
	clean_ds ds
	check 0 ds
	assert_equal "$(printf '%s\n' "$output" | grep -v '^ ' | sed '$d' | cut -d: -f1)" \
		"$(printf 'PASS %s\n' $DEFAULT_RULES)"
	refute_line --regexp '^(WARN|FAIL) '
	assert_text_shape
	assert_summary 10 10 0 0
}

@test "check: a clean dataset passes with --deep and --near-duplicates too" {
	clean_ds ds
	check 0 ds --deep --near-duplicates
	assert_equal "$(printf '%s\n' "$output" | grep -v '^ ' | sed '$d' | cut -d: -f1)" \
		"$(printf 'PASS %s\n' $ALL_RULES)"
	assert_summary 12 12 0 0
}

@test "check: --json on a clean dataset: one object with the dataset, every rule and the labels" {
	clean_ds ds
	check 0 ds --json
	assert_equal "${#lines[@]}" 1
	json_rule readable pass
	# the last four: labels of the whole dataset and of each split, by
	# class index
	jq_ok 'r["dataset"] == m["id"] and r["name"] == "ds"' \
		'r["samples"] == 48 and r["shards"] == 3' \
		'[x["rule"] for x in r["rules"]] == "'"$DEFAULT_RULES"'".split()' \
		'all(x["status"] == "pass" for x in r["rules"])' \
		'(r["passed"], r["warned"], r["failed"]) == (10, 0, 0)' \
		'r["labels"]["all"] == {"0": 16, "1": 16, "2": 16}' \
		'sorted(r["labels"]) == ["all", "train", "val"]' \
		'all(r["labels"]["train"].get(c, 0) + r["labels"]["val"].get(c, 0) == 16 for c in "012")' \
		'sum(r["labels"]["val"].values()) == m["splits"]["sets"]["val"]["samples"]'
}

# ------------------------------------------------------------ readable

@test "check: a missing shard fails readable (exit 1, not 2) and names it" {
	clean_ds ds
	s1=$(shard_of ds 1)
	rm "$s1"
	check 1 ds
	assert_rule FAIL readable "shards/${s1##*/}"
	check 1 ds --json
	json_rule readable fail
	# after the first: its 16 samples are missing from every rule that
	# looks at samples
	jq_ok 'any(e.get("shard") == "shards/'"${s1##*/}"'" for e in by["readable"]["examples"])' \
		'all(by[x]["unexamined"] == 16 and by[x]["status"] == "fail" for x in ("required-fields", "empty", "field-types", "duplicates", "leakage", "conflicting-labels", "labels"))' \
		'by["size-outliers"]["unexamined"] == 16 and by["size-outliers"]["status"] == "warn"' \
		'by["eval-split"]["unexamined"] == 0 and by["eval-split"]["status"] == "pass"'
}

@test "check: a schema total edited, the id recomputed, fails readable naming the key, the value stated and the shards'" {
	clean_ds ds
	edit_manifest ds 'm["schema"]["fields"]["cls"]["count"] = 40
m["schema"]["fields"]["jpg"]["bytes"] += 1
m["bytes"] += 1
reid = True'
	check 1 ds
	assert_line "FAIL readable: 2 totals of the manifest differ from the shards'"
	assert_rule FAIL readable "manifest.json: the manifest's schema.fields.cls.count is 40, the shards hold 48"
	assert_rule FAIL readable "manifest.json: the manifest's schema.fields.jpg.bytes is "
	# the rules that read samples saw every one
	refute_output --partial "could not be examined"
}

@test "check: a flipped byte in a block fails readable, naming shard, block and offset; the rules that needed the block say how many samples they missed" {
	mkimages src 48
	pack_ds ds src --label-from dir -b 2K
	split_ds ds
	s0=$(shard_of ds 0)
	at=$(shard_layout "$s0" | awk '$1 == "block" && $2 == 1 { print $3 }')
	[ -n "$at" ] || fail "shard $s0 has no block 1: $(shard_layout "$s0")"
	flip_byte "$s0" "$(block_middle "$s0" 1)"
	check 1 ds
	assert_rule FAIL readable "shards/${s0##*/}" "block 1" "byte $at"
	assert_line --regexp '^FAIL readable: 1 block cannot be read$'
	# cls and jpg are read from the block (labels, field-types, and the
	# inputs of samples with a label field): none passes as if it had seen
	# every sample
	for r in field-types duplicates leakage conflicting-labels labels; do
		assert_line --regexp "^FAIL $r: .*; [0-9]+ samples? could not be examined\$"
	done
	# the index alone answers these
	for r in required-fields empty eval-split size-outliers; do
		assert_line --regexp "^PASS $r: "
	done
	check 1 ds --json
	json_rule readable fail
	# after the first: each sample is counted or said to be missed, none
	# vanishes
	jq_ok 'any(e["shard"] == "shards/'"${s0##*/}"'" and "block 1" in e["message"] and "byte '"$at"'" in e["message"] for e in by["readable"]["examples"])' \
		'by["labels"]["unexamined"] > 0 and sum(r["labels"]["all"].values()) + by["labels"]["unexamined"] == 48' \
		'all(by[x]["unexamined"] == by["labels"]["unexamined"] for x in ("field-types", "duplicates", "leakage", "conflicting-labels"))' \
		'all(by[x]["unexamined"] == 0 for x in ("readable", "required-fields", "empty", "eval-split", "size-outliers"))'
}

# ------------------------------------------------------------ duplicates, leakage

@test "check: two identical samples in one split fail duplicates and are both named" {
	clean_ds ds
	a=$(pick ds train c1/ 0)
	b=$(pick ds train c1/ 1)
	cp "src/$a.jpg" "src/$b.jpg"
	repack ds --label-from dir
	check 1 ds
	assert_rule FAIL duplicates "$a" "$b"
	assert_rule PASS leakage
	assert_summary 10 9 0 1
	check 1 ds --json
	json_rule duplicates fail "$a" "$b"
	jq_ok 'by["duplicates"]["count"] >= 1 and by["leakage"]["status"] == "pass"'
}

@test "check: without splits, duplicates are looked for in the whole dataset" {
	mkimages src 20 --flat
	cp src/s0003.jpg src/s0017.jpg
	cp src/s0003.cls src/s0017.cls
	pack_ds ds src
	check 1 ds --allow-no-eval
	assert_rule FAIL duplicates s0003 s0017
	assert_rule PASS leakage
	assert_line --regexp '^PASS leakage: .*no splits'
	check 1 ds --allow-no-eval --json
	json_rule duplicates fail s0003 s0017
}

@test "check: duplicates among 20000 samples are every one found, in order" {
	# scripts/gen-samples.py: samples 999, 1999, ... repeat sample 0
	"$PYTHON" "$REPO_ROOT/scripts/gen-samples.py" 20000 >src.tar
	chute pack -q -s 5000s src.tar -o ds >/dev/null
	check 1 ds --allow-no-eval
	assert_line --regexp '^FAIL duplicates: 20 samples have the inputs of an earlier sample of their dataset$'
	assert_line --index 1 --regexp '^  s000000999 .* = s000000000 '
	assert_line --index 5 --regexp '^  s000004999 .* = s000000000 '
}

@test "check: a val sample identical to a train sample fails leakage, naming both" {
	clean_ds ds
	v=$(pick ds val c2/)
	t=$(pick ds train c2/)
	cp "src/$t.jpg" "src/$v.jpg"
	repack ds --label-from dir
	check 1 ds
	assert_rule FAIL leakage "$v" "$t"
	# a pair across two splits is a leak, not a duplicate within a split
	assert_rule PASS duplicates
	assert_summary 10 9 0 1
	check 1 ds --json
	json_rule leakage fail "$v" "$t"
	jq_ok 'by["leakage"]["count"] == 1' \
		'{(e["key"], e["split"]) for e in by["leakage"]["examples"]} | {(e["other"]["key"], e["other"]["split"]) for e in by["leakage"]["examples"]} == {("'"$v"'", "val"), ("'"$t"'", "train")}' \
		'all(e["shard"].startswith("shards/ds-") and e["other"]["shard"].startswith("shards/ds-") for e in by["leakage"]["examples"])'
}

@test "check: the same image in train and val under two labels fails leakage and conflicting-labels" {
	clean_ds ds
	v=$(pick ds val c1/)
	t=$(pick ds train c2/)
	# the picture of a train sample of class 2 as a val sample of class 1:
	# the inputs are the same, the samples are not (their cls differ)
	cp "src/$t.jpg" "src/$v.jpg"
	repack ds --label-from dir
	check 1 ds
	assert_rule FAIL leakage "$v" "$t"
	assert_rule FAIL conflicting-labels "$v" "$t"
	assert_rule PASS duplicates
	assert_summary 10 8 0 2
	check 1 ds --json
	json_rule leakage fail "$v" "$t"
	json_rule conflicting-labels fail "$v" "$t"
	# the second: keys sort c1/ before c2/, so the train sample comes
	# later, and is named with the earlier sample it conflicts with
	jq_ok 'by["leakage"]["count"] == 1 and by["conflicting-labels"]["count"] == 1' \
		'[(e["key"], e["split"], e["other"]["key"], e["other"]["split"]) for e in by["conflicting-labels"]["examples"]] == [("'"$t"'", "train", "'"$v"'", "val")]'
}

@test "check: the same image twice in one split under two labels fails duplicates and conflicting-labels" {
	clean_ds ds
	a=$(pick ds train c0/ 0)
	b=$(pick ds train c1/ 0)
	cp "src/$a.jpg" "src/$b.jpg"
	repack ds --label-from dir
	check 1 ds
	assert_rule FAIL duplicates "$a" "$b"
	assert_rule FAIL conflicting-labels "$a" "$b"
	assert_rule PASS leakage
	check 1 ds --json
	json_rule conflicting-labels fail "$a" "$b"
	jq_ok 'by["duplicates"]["count"] == 1 and by["conflicting-labels"]["count"] == 1'
}

@test "check: the rules file's label-fields are left out of a sample's inputs, as cls is" {
	mkimages src 24 --flat
	for i in $(seq -w 0 23); do printf 'caption %d' "$((10#$i))" >"src/s00$i.txt"; done
	# s0017: the picture and class of s0003, another caption
	cp src/s0003.jpg src/s0017.jpg
	cp src/s0003.cls src/s0017.cls
	repack ds
	# the caption is an input: the samples differ
	check 0 ds
	assert_rule PASS duplicates
	assert_rule PASS conflicting-labels
	# the caption is a label: the same inputs under two labels
	echo '{"label-fields": ["txt"]}' >rules.json
	check 1 ds --rules rules.json
	assert_rule FAIL duplicates s0003 s0017
	assert_rule FAIL conflicting-labels s0003 s0017
	check 1 ds --rules rules.json --json
	json_rule conflicting-labels fail s0003 s0017
	jq_ok 'by["conflicting-labels"]["count"] == 1'
	# the same caption as well: a duplicate, and no conflict
	cp src/s0003.txt src/s0017.txt
	repack ds
	check 1 ds --rules rules.json
	assert_rule FAIL duplicates s0003 s0017
	assert_rule PASS conflicting-labels
	echo '{"label-fields": "txt"}' >rules.json
	check 2 ds --rules rules.json
	[[ $stderr == *label-fields* ]] || fail "stderr does not name 'label-fields': $stderr"
}

@test "check: without cls or label fields, conflicting-labels passes and says why" {
	mkimages src 12 --flat
	rm src/*.cls
	repack ds
	check 0 ds
	assert_line --regexp '^PASS conflicting-labels: no cls or label field'
}

@test "check: the report is the same whatever --jobs" {
	clean_ds ds
	v=$(pick ds val c0/)
	t=$(pick ds train c0/)
	cp "src/$t.jpg" "src/$v.jpg"
	repack ds --label-from dir
	check 1 ds --json --jobs 1
	one=$output
	check 1 ds --json --jobs 4
	assert_equal "$output" "$one"
	check 1 ds --jobs 3
	text=$output
	check 1 ds --jobs 1
	assert_equal "$output" "$text"
}

@test "check: a dataset with every kind of problem gets the same bytes with --jobs 1, 2 and 4, text and --json" {
	mkimages src 64 --flat
	damage_jpegs src
	cp src/s0020.jpg src/s0021.jpg # the same image under two classes
	cp src/s0030.jpg src/s0033.jpg # the same image, the same class
	head -c 5000 /dev/urandom >src/s0040.txt
	pack_ds ds src -b 1K
	split_ds ds
	s2=$(shard_of ds 2)
	flip_byte "$s2" "$(block_middle "$s2" 1)"
	for j in 1 2 4; do
		check 1 ds --near-duplicates --jobs "$j"
		printf '%s\n' "$output" >"text-$j"
		check 1 ds --near-duplicates --jobs "$j" --json
		printf '%s\n' "$output" >"json-$j"
	done
	for j in 2 4; do
		cmp text-1 "text-$j" || fail "--jobs $j: $(diff text-1 "text-$j")"
		cmp json-1 "json-$j" || fail "--jobs $j: $(diff json-1 "json-$j")"
	done
	# what was planted is in the report
	output=$(cat text-1)
	for r in readable empty field-types duplicates conflicting-labels labels; do
		grep -q "^FAIL $r: " text-1 || fail "$r does not fail: $output"
	done
}

@test "check: the text report lists the rules that failed first, then those that warned, then those that passed" {
	mkimages src 24 --flat
	for i in $(seq -w 0 23); do printf 'text %d' "$((10#$i))" >"src/s00$i.txt"; done
	head -c 5000 /dev/zero | tr '\0' y >src/s0009.txt
	cp src/s0003.jpg src/s0017.jpg
	cp src/s0003.txt src/s0017.txt
	cp src/s0003.cls src/s0017.cls
	repack ds
	# a duplicate (fail) and a field over its median size (warn)
	check 1 ds
	assert_equal "$(printf '%s\n' "$output" | grep -v '^ ' | sed '$d' | cut -d: -f1)" \
		"$(printf '%s\n' 'FAIL duplicates' 'WARN size-outliers' 'PASS readable' \
			'PASS required-fields' 'PASS empty' 'PASS field-types' 'PASS leakage' \
			'PASS conflicting-labels' 'PASS eval-split' 'PASS labels')"
	# the examples stay under their rule
	assert_rule FAIL duplicates s0003 s0017
	assert_rule WARN size-outliers s0009
	assert_summary 10 8 1 1
	# --json keeps the rules' order
	check 1 ds --json
	jq_ok '[x["rule"] for x in r["rules"]] == "'"$DEFAULT_RULES"'".split()'
}

# ------------------------------------------------------------ field types

@test "check: a JPEG with a valid header and garbage after it fails field-types" {
	clean_ds ds
	k=$(pick ds train c1/ 2)
	j=$(pick ds train c2/ 2)
	# k: every segment up to and with the scan header (SOS), then bytes that
	# are no marker: the header and size read, the pixels are garbage (what
	# TurboJPEG reports as "Premature end of JPEG file").  j: the segments
	# before the scan header only: the image never comes.
	"$PYTHON" - "src/$k.jpg" "src/$j.jpg" <<'EOF' || fail "cannot damage $k and $j"
import random, struct, sys
rng = random.Random(7)
for path, with_sos in ((sys.argv[1], True), (sys.argv[2], False)):
    d = open(path, "rb").read()
    i = 2
    while d[i + 1] != 0xDA:
        assert d[i] == 0xFF, "not a marker at %d" % i
        i += 2 + struct.unpack(">H", d[i + 2:i + 4])[0]
    if with_sos:
        i += 2 + struct.unpack(">H", d[i + 2:i + 4])[0]
    open(path, "wb").write(d[:i] + bytes(rng.randrange(255) for _ in range(len(d) - i)))
EOF
	repack ds --label-from dir
	check 1 ds
	assert_rule FAIL field-types "$k" "$j"
	assert_summary 10 9 0 1
	check 1 ds --json
	json_rule field-types fail "$k" "$j"
	jq_ok 'by["field-types"]["count"] == 2'
}

# damage_jpegs DIR: breaks five of the JPEGs DIR/sNNNN.jpg (from mkimages
# --flat) in the ways a scrape or a copy does: s0002 cut in half, s0005 the
# start-of-image marker then 300 bytes that hold no marker, s0008 nothing
# but the start-of-image marker, s0011 a frame header that says 0 lines,
# s0014 its entropy-coded data overwritten (bad Huffman codes); s0017 is
# 0 bytes long.
damage_jpegs() {
	"$PYTHON" - "$1" <<'PY' || fail "cannot damage the JPEGs of $1"
import random, struct, sys
d = sys.argv[1]
rng = random.Random(11)
def path(i): return "%s/s%04d.jpg" % (d, i)
def read(i): return bytearray(open(path(i), "rb").read())
def write(i, b): open(path(i), "wb").write(bytes(b))
def segment(b, marker):
    i = 2
    while b[i + 1] != marker:
        assert b[i] == 0xFF, "not a marker at %d" % i
        i += 2 + struct.unpack(">H", b[i + 2:i + 4])[0]
    return i
b = read(2); write(2, b[:len(b) // 2])
write(5, b"\xff\xd8" + bytes(rng.randrange(255) for _ in range(300)))
write(8, b"\xff\xd8")
b = read(11); i = segment(b, 0xC0); b[i + 5:i + 7] = b"\0\0"; write(11, b)
b = read(14); i = segment(b, 0xDA); i += 2 + struct.unpack(">H", b[i + 2:i + 4])[0]
for k in range(i + 4, len(b) - 2, 5):
    b[k] = rng.randrange(255)
write(14, b)
write(17, b"")
PY
}

@test "check: corrupt JPEGs get the same report on every run, text and --json" {
	mkimages src 24 --flat
	damage_jpegs src
	# a block a sample: what the stack held before each JPEG's header was
	# read differed from block to block and from run to run
	pack_ds ds src -b 1K
	check 1 ds
	first=$output
	check 1 ds --json
	first_json=$output
	for i in 2 3 4 5 6; do
		check 1 ds
		assert_equal "$output" "$first"
		check 1 ds --json
		assert_equal "$output" "$first_json"
	done
	json_rule field-types fail s0002 s0005 s0008 s0011 s0014
	jq_ok 'by["field-types"]["count"] == 5'
	check 1 ds
	assert_rule FAIL field-types s0002 s0005 s0008 s0011 s0014
	assert_rule FAIL empty s0017
	assert_line '  s0005.jpg: not a JPEG: no image before the end of the data (shards/ds-000000.chs)'
	assert_line '  s0008.jpg: not a JPEG: no image before the end of the data (shards/ds-000000.chs)'
	refute_output --regexp 'size of|too large'
}

@test "check: a JPEG without quantization tables fails field-types after JPEGs that have them" {
	mkimages src 24 --flat
	# s0009 without its DQT segments: libjpeg would take the tables of the
	# JPEG decoded before it, so that it passed or not by what its thread
	# had read
	"$PYTHON" - src/s0009.jpg <<'PY' || fail "cannot strip the tables of s0009"
import struct, sys
b = open(sys.argv[1], "rb").read()
out, i = bytearray(b[:2]), 2
while b[i + 1] != 0xDA:
    n = 2 + struct.unpack(">H", b[i + 2:i + 4])[0]
    if b[i + 1] != 0xDB:
        out += b[i:i + n]
    i += n
open(sys.argv[1], "wb").write(bytes(out + b[i:]))
PY
	pack_ds ds src
	check 1 ds --allow-no-eval --jobs 1
	assert_rule FAIL field-types s0009
	assert_line --regexp '^  s0009.jpg: .*[Qq]uantization table'
	check 1 ds --allow-no-eval --jobs 1 --json
	jq_ok 'by["field-types"]["count"] == 1'
}

@test "check: a truncated PNG fails field-types" {
	mkimages src 24 --flat --png
	head -c 300 src/s0005.png >cut.png
	mv cut.png src/s0005.png
	repack ds
	check 1 ds
	assert_rule FAIL field-types s0005
	check 1 ds --json
	json_rule field-types fail s0005
	jq_ok 'by["field-types"]["count"] == 1'
}

@test "check: cls out of the class map's range fails field-types" {
	mkimages src 24
	# one sample in a fourth class, which the class map then forgets
	mkdir src/c3
	mv src/c0/s0000.jpg src/c3/
	repack ds --label-from dir
	set_classes ds '["c0", "c1", "c2"]'
	check 1 ds
	assert_rule FAIL field-types c3/s0000
	check 1 ds --json
	json_rule field-types fail c3/s0000
	jq_ok 'by["field-types"]["count"] == 1'
}

@test "check: a cls that is not a non-negative decimal integer fails field-types" {
	mkimages src 24 --flat
	printf '1.5' >src/s0005.cls
	printf 'abc' >src/s0006.cls
	printf -- '-1' >src/s0007.cls
	printf '17' >src/s0008.cls # no class map: any integer >= 0 will do
	repack ds
	check 1 ds
	assert_rule FAIL field-types s0005 s0006 s0007
	rule_lines field-types | grep -q s0008 && fail "s0008 (cls 17, no class map) was flagged"
	check 1 ds --json
	json_rule field-types fail s0005 s0006 s0007
	jq_ok 'by["field-types"]["count"] == 3'
}

@test "check: a json field that does not parse fails field-types" {
	mkimages src 24 --flat
	for i in $(seq -w 0 23); do printf '{"i": %d}' "$((10#$i))" >"src/s00$i.json"; done
	printf '{"i": 9' >src/s0009.json
	repack ds
	check 1 ds
	assert_rule FAIL field-types s0009
	check 1 ds --json
	json_rule field-types fail s0009
	jq_ok 'by["field-types"]["count"] == 1'
}

@test "check: a bad .npy header, or one whose shape does not match its size, fails field-types" {
	mkimages src 24 --flat
	"$PYTHON" - <<'EOF' || fail "cannot write npy files"
import io, numpy as np
for i in range(24):
    np.save("src/s%04d.npy" % i, np.arange(4, dtype="<f4") + i)
# s0003: the magic and version, then a header that is not a dictionary
hdr = b"not a header at all".ljust(118) + b"\n"
open("src/s0003.npy", "wb").write(b"\x93NUMPY\x01\x00" + len(hdr).to_bytes(2, "little") + hdr + bytes(16))
# s0004: a good header for 5 float32 values, and the data of 4
b = io.BytesIO()
np.save(b, np.arange(5, dtype="<f4"))
open("src/s0004.npy", "wb").write(b.getvalue()[:-4])
EOF
	repack ds
	check 1 ds
	assert_text_shape
	assert_rule FAIL field-types s0003 s0004
	check 1 ds --json
	json_rule field-types fail s0003 s0004
	jq_ok 'by["field-types"]["count"] == 2'
}

# ------------------------------------------------------------ schema

@test "check: a sample without a field most samples have fails required-fields" {
	mkimages src 24 --flat
	rm src/s0007.cls
	repack ds
	check 1 ds
	assert_rule FAIL required-fields s0007
	check 1 ds --json
	json_rule required-fields fail s0007
	jq_ok 'by["required-fields"]["count"] == 1'
}

@test "check: the rules file's required list decides which fields are required" {
	mkimages src 24 --flat
	printf 'one' >src/s0001.txt
	printf 'two' >src/s0002.txt
	repack ds
	# txt is in 2 samples of 24: not required by default
	check 0 ds
	assert_rule PASS required-fields
	echo '{"required": ["jpg", "cls", "txt"]}' >rules.json
	check 1 ds --rules rules.json --examples 1000
	assert_rule FAIL required-fields s0000 s0023
	rule_lines required-fields | tail -n +2 | grep -q 's000[12]' &&
		fail "s0001 and s0002 have txt"
	check 1 ds --rules rules.json --json
	json_rule required-fields fail
	jq_ok 'by["required-fields"]["count"] == 22'
	# a required list without the common fields: cls may then be missing
	rm src/s0007.cls
	repack ds
	echo '{"required": ["jpg"]}' >rules.json
	check 0 ds --rules rules.json
	assert_rule PASS required-fields
}

@test "check: a field of 0 bytes fails empty" {
	mkimages src 24 --flat
	: >src/s0002.txt
	printf 'hello' >src/s0003.txt
	repack ds
	check 1 ds
	assert_rule FAIL empty s0002
	rule_lines empty | grep -q s0003 && fail "s0003 is not empty"
	check 1 ds --json
	json_rule empty fail s0002
	jq_ok 'by["empty"]["count"] == 1'
}

# ------------------------------------------------------------ eval split

@test "check: no eval split fails; --allow-no-eval turns it into a warning" {
	mkimages src 24
	pack_ds ds src --label-from dir
	check 1 ds
	assert_rule FAIL eval-split
	# the library's words, and the command line that makes one
	assert_line "FAIL eval-split: no val, valid, validation, test or eval split: hold some samples out in one (chute split --val 0.05)"
	assert_summary 10 9 0 1
	check 1 ds --json
	json_rule eval-split fail
	jq_ok 'by["eval-split"]["message"].endswith("hold some samples out in one (chute split --val 0.05)")'
	check 0 ds --allow-no-eval
	assert_rule WARN eval-split
	assert_summary 10 9 1 0
	check 0 ds --allow-no-eval --json
	json_rule eval-split warn
	jq_ok 'r["labels"]["all"] == {"0": 8, "1": 8, "2": 8} and sorted(r["labels"]) == ["all"]'
}

@test "check: an eval split without samples is no eval split" {
	mkimages src 12
	pack_ds ds src --label-from dir
	chute split ds --val 0.0001 >/dev/null
	[ "$(mjson ds "m['splits']['sets']['val']['samples']")" = 0 ] ||
		skip "val of 12 samples at 0.0001 is not empty"
	check 1 ds
	assert_rule FAIL eval-split
}

# ------------------------------------------------------------ labels

# drift_pair: base/ (40 samples, classes 0 and 1 half each) and ds/ (40
# other samples, class 0 for 28, class 1 for 12): proportions 0.7/0.3
# against 0.5/0.5, a drift of 0.2.  No splits: the whole datasets compare.
drift_pair() {
	mkimages bsrc 40 --flat --classes 2
	pack_ds base bsrc
	mkimages src 40 --flat --classes 2 --first 100
	local i
	for i in 101 103 105 107 109 111 113 115; do printf 0 >"src/s0$i.cls"; done
	pack_ds ds src
}

@test "check: labels drifted beyond the threshold against --baseline fail" {
	drift_pair
	check 1 ds --allow-no-eval --baseline base
	assert_rule FAIL labels
	assert_summary 10 8 1 1
	check 1 ds --allow-no-eval --baseline base --json
	json_rule labels fail
	jq_ok 'r["labels"]["all"] == {"0": 28, "1": 12}'
	# the manifest of the baseline will do as well as its folder
	check 1 ds --allow-no-eval --baseline base/manifest.json
	assert_rule FAIL labels
}

@test "check: labels within the threshold pass; the rules file sets the threshold" {
	drift_pair
	check 0 base --allow-no-eval --baseline base
	assert_rule PASS labels
	echo '{"rules": {"labels": {"level": "fail", "drift": 0.25}}}' >rules.json
	check 0 ds --allow-no-eval --baseline base --rules rules.json
	assert_rule PASS labels
	check 0 ds --allow-no-eval --baseline base --rules rules.json --json
	json_rule labels pass
	echo '{"rules": {"labels": {"level": "fail", "drift": 0.15}}}' >rules.json
	check 1 ds --allow-no-eval --baseline base --rules rules.json
	assert_rule FAIL labels
	# --drift sets it on the command line, and wins over the file
	check 0 ds --allow-no-eval --baseline base --drift 0.25
	assert_rule PASS labels
	check 0 ds --allow-no-eval --baseline base --rules rules.json --drift 0.25
	assert_rule PASS labels
	check 1 ds --allow-no-eval --baseline base --drift 0.19
	assert_rule FAIL labels
	run -2 chute check ds --drift 1.5
	assert_output "chute check: invalid value '1.5' for --drift: expected a number from 0 to 1"
}

@test "check: without a cls field, labels pass and say why; the JSON labels are null" {
	mkimages src 12 --flat
	rm src/*.cls
	repack ds
	check 0 ds
	assert_rule PASS labels
	check 0 ds --json
	jq_ok 'r["labels"] is None'
}

# ------------------------------------------------------------ size outliers

@test "check: a field far over its median size warns size-outliers, exit 0" {
	mkimages src 24 --flat
	for i in $(seq -w 0 23); do head -c 50 /dev/zero | tr '\0' x >"src/s00$i.txt"; done
	head -c 5000 /dev/zero | tr '\0' y >src/s0009.txt
	repack ds
	check 0 ds
	assert_rule WARN size-outliers s0009
	assert_summary 10 9 1 0
	check 0 ds --json
	json_rule size-outliers warn s0009
	jq_ok 'by["size-outliers"]["count"] == 1'
	# a larger factor from the rules file: no outlier
	echo '{"rules": {"size-outliers": {"level": "warn", "factor": 200}}}' >rules.json
	check 0 ds --rules rules.json
	assert_rule PASS size-outliers
}

# ------------------------------------------------------------ corruption

@test "check: --deep finds a flipped byte in a block; without it blocks are not read" {
	# text fields only: no rule but corruption has a reason to read blocks
	mkdir src
	"$PYTHON" - <<'EOF' || fail "cannot write text samples"
import random
rng = random.Random(3)
for i in range(32):
    open("src/t%04d.txt" % i, "w").write("".join(rng.choice("abcdefgh ") for _ in range(400)))
EOF
	pack_ds ds src -b 1K
	split_ds ds
	s0=$(shard_of ds 0)
	off=$(block_middle "$s0" 1)
	[ -n "$off" ] || fail "shard $s0 has no block 1: $(shard_layout "$s0")"
	flip_byte "$s0" "$off"
	check 0 ds
	assert_summary 10 10 0 0
	refute_line --regexp 'corruption'
	check 1 ds --deep
	# the block is readable's to name; corruption could not hash its samples
	assert_rule FAIL readable "shards/${s0##*/}" "block 1"
	assert_line --regexp '^FAIL corruption: .*[0-9]+ samples? could not be examined$'
	assert_summary 11 9 0 2
	check 1 ds --deep --json
	json_rule readable fail
	json_rule corruption fail
	jq_ok 'any(e.get("shard") == "shards/'"${s0##*/}"'" for e in by["readable"]["examples"])' \
		'not any(e.get("shard") != "shards/'"${s0##*/}"'" for e in by["readable"]["examples"])' \
		'by["corruption"]["count"] == 0 and by["corruption"]["unexamined"] > 0'
}

# ------------------------------------------------------------ near-duplicates

@test "check: --near-duplicates finds an altered copy of a train image in val, and only it" {
	clean_ds ds
	v=$(pick ds val c1/)
	t=$(pick ds train c1/)
	# the train picture with two pixels changed, saved at quality 40
	"$PYTHON" - "src/$t.jpg" "src/$v.jpg" <<'EOF' || fail "cannot alter $t"
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB")
im.putpixel((1, 1), (255, 0, 0))
im.putpixel((40, 30), (0, 0, 0))
im.save(sys.argv[2], "JPEG", quality=40)
EOF
	repack ds --label-from dir
	# not identical, so no leak; near-duplicates is opt-in
	check 0 ds
	assert_rule PASS leakage
	refute_line --regexp 'near-duplicates'
	check 1 ds --near-duplicates
	assert_rule FAIL near-duplicates "$v" "$t"
	assert_summary 11 10 0 1
	check 1 ds --near-duplicates --json
	json_rule near-duplicates fail "$v" "$t"
	# the 47 other pictures differ: the planted pair is the only one
	jq_ok 'by["near-duplicates"]["count"] == 1'
	# at distance 64 every pair of train and val images is near
	check 1 ds --near-duplicates --distance 64 --json
	jq_ok 'by["near-duplicates"]["count"] > 1'
}

@test "check: without images, near-duplicates passes and says why" {
	mkimages src 12 --flat
	rm src/*.jpg
	for i in $(seq -w 0 11); do printf 'text %d' "$((10#$i))" >"src/s00$i.txt"; done
	repack ds
	check 0 ds --near-duplicates
	assert_line --regexp '^PASS near-duplicates: .+'
	assert_summary 11 11 0 0
}

# ------------------------------------------------------------ rules file

# dup_ds: clean_ds with three pairs of identical samples in train.
dup_ds() {
	clean_ds ds
	local i a b
	for i in 0 1 2; do
		a=$(pick ds train "c$i/" 0)
		b=$(pick ds train "c$i/" 1)
		cp "src/$a.jpg" "src/$b.jpg"
	done
	repack ds --label-from dir
}

@test "check: a rules file can turn a failing rule into a warning" {
	dup_ds
	check 1 ds
	assert_rule FAIL duplicates
	echo '{"rules": {"duplicates": "warn"}}' >rules.json
	check 0 ds --rules rules.json
	assert_rule WARN duplicates
	assert_summary 10 9 1 0
	check 0 ds --rules rules.json --json
	json_rule duplicates warn
	echo '{"rules": {"duplicates": {"level": "warn"}}}' >rules.json
	check 0 ds --rules rules.json
	assert_rule WARN duplicates
}

@test "check: a rule turned off is neither run nor counted" {
	dup_ds
	echo '{"rules": {"duplicates": "off", "size-outliers": "off"}}' >rules.json
	check 0 ds --rules rules.json
	refute_line --regexp 'duplicates'
	refute_line --regexp 'size-outliers'
	assert_summary 8 8 0 0
	check 0 ds --rules rules.json --json
	jq_ok '"duplicates" not in by and "size-outliers" not in by and len(r["rules"]) == 8'
}

@test "check: the rules file sets an opt-in rule's level and parameter; the command line wins" {
	clean_ds ds
	# at distance 64 every train image is near every val image
	echo '{"rules": {"near-duplicates": {"level": "warn", "distance": 64}}}' >rules.json
	check 0 ds --near-duplicates --rules rules.json
	assert_rule WARN near-duplicates
	assert_summary 11 10 1 0
	check 0 ds --near-duplicates --rules rules.json --distance 4
	assert_rule PASS near-duplicates
	assert_summary 11 11 0 0
}

@test "check: an unknown rule, a bad level or a bad parameter in the rules file is exit 2, naming it" {
	clean_ds ds
	echo '{"rules": {"dupes": "fail"}}' >rules.json
	check 2 ds --rules rules.json
	assert_output ""
	[[ $stderr == "chute check: "*rules.json* ]] || fail "stderr: $stderr"
	[[ $stderr == *dupes* ]] || fail "stderr does not name 'dupes': $stderr"
	echo '{"rules": {"duplicates": "maybe"}}' >rules.json
	check 2 ds --rules rules.json
	# the key, and what was expected there
	[[ $stderr == *duplicates* && $stderr == *fail* ]] || fail "stderr: $stderr"
	echo '{"rules": {"labels": {"level": "fail", "drift": "much"}}}' >rules.json
	check 2 ds --rules rules.json
	[[ $stderr == *drift* ]] || fail "stderr does not name 'drift': $stderr"
	echo '{"rules": {"labels": {"level": "fail", "shift": 0.1}}}' >rules.json
	check 2 ds --rules rules.json
	[[ $stderr == *shift* ]] || fail "stderr does not name 'shift': $stderr"
	echo '{"requried": ["jpg"]}' >rules.json
	check 2 ds --rules rules.json
	[[ $stderr == *requried* ]] || fail "stderr does not name 'requried': $stderr"
	echo '{"rules": ' >rules.json
	check 2 ds --rules rules.json
	[[ $stderr == *rules.json* ]] || fail "stderr: $stderr"
	check 2 ds --rules no-such-rules.json
	[[ $stderr == *no-such-rules.json* ]] || fail "stderr: $stderr"
}

# ------------------------------------------------------------ examples

@test "check: --examples N lists N examples; the command line wins over the rules file" {
	dup_ds
	check 1 ds
	[ "$(rule_lines duplicates | tail -n +2 | wc -l)" -ge 3 ] || fail "fewer than 3 examples: $output"
	check 1 ds --examples 1
	assert_equal "$(rule_lines duplicates | tail -n +2 | wc -l)" 1
	check 1 ds --examples 1 --json
	jq_ok 'len(by["duplicates"]["examples"]) == 1 and by["duplicates"]["count"] >= 3'
	check 1 ds --examples 0
	assert_rule FAIL duplicates
	assert_equal "$(rule_lines duplicates | tail -n +2 | wc -l)" 0
	echo '{"examples": 2}' >rules.json
	check 1 ds --rules rules.json --json
	jq_ok 'len(by["duplicates"]["examples"]) == 2'
	check 1 ds --rules rules.json --examples 1 --json
	jq_ok 'len(by["duplicates"]["examples"]) == 1'
}

# ------------------------------------------------------------ usage

@test "check: bad options, a lone shard or a missing dataset are exit 2" {
	clean_ds ds
	check 2 ds --distance 65
	[[ $stderr == "chute check: "* ]] || fail "stderr: $stderr"
	check 2 ds --distance -1
	check 2 ds --examples 1001
	check 2 ds --jobs 0
	check 2 ds --frobnicate
	check 2
	check 2 "$(shard_of ds 0)"
	[[ $stderr == *"has no manifest"* ]] || fail "stderr: $stderr"
	check 2 no-such-dataset
	[[ $stderr == "chute check: "*no-such-dataset* ]] || fail "stderr: $stderr"
	check 2 ds --baseline no-such-baseline
	[[ $stderr == *no-such-baseline* ]] || fail "stderr: $stderr"
	assert_output ""
}

@test "check: --help prints the usage and exits 0" {
	run -0 chute check --help
	assert_line --index 0 --partial 'usage: chute check'
	assert_output --partial '--near-duplicates'
	assert_output --partial '--allow-no-eval'
}
