#!/usr/bin/env bats
# --json on the commands that write (pack, merge, push, pull, split,
# export): one JSON object on stdout that a CI job can read, whose ids,
# counts and bytes are those of what was written; and the text output of
# every command: sizes with a unit, words that agree with their count.

load helper

# files DIR N SIZE: N files DIR/sNNN.bin of SIZE bytes each (byte i of
# file k is (i + k) mod 251: not all alike, so shards differ).
files() {
	"$PYTHON" - "$@" <<'EOF' || fail "files $* failed"
import os, sys
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
for k in range(n):
    open(os.path.join(d, "s%03d.bin" % k), "wb").write(
        bytes((i + k) % 251 for i in range(size)))
EOF
}

# json FILE EXPR: EXPR over d, the one JSON document FILE holds (which
# must be one line: the whole of stdout), printed as JSON.
json() {
	"$PYTHON" - "$@" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
assert text.count("\n") == 1 and text.endswith("\n"), "not one line: %r" % text
d = json.loads(text)
print(json.dumps(eval(sys.argv[2])))
EOF
}

# man DS EXPR: EXPR over m, what `chute manifest --json DS` prints.
man() {
	chute manifest --json "$1" >man.json || fail "chute manifest $1 failed"
	"$PYTHON" -c 'import json,sys; m = json.load(open("man.json")); print(json.dumps(eval(sys.argv[1])))' "$2"
}

# parses FILE: FILE is one JSON object, as json.load reads it.
parses() {
	"$PYTHON" -c 'import json,sys; d = json.load(sys.stdin); assert isinstance(d, dict)' <"$1" ||
		fail "$1 is not one JSON object: $(cat "$1")"
}

# same_keys FILE DS KEY...: each KEY of FILE's document equals the
# manifest's.
same_keys() {
	local file=$1 ds=$2 k
	shift 2
	for k in "$@"; do
		assert_equal "$(json "$file" "d['$k']")" "$(man "$ds" "m.get('$k')")"
	done
}

@test "json: pack --json prints one object with the manifest's id, counts and bytes, and no text" {
	files src 12 1000
	run -0 chute pack --json -s 5s -o ds src
	printf '%s\n' "$output" >pack.json
	parses pack.json
	same_keys pack.json ds id parent samples bytes shard_bytes
	assert_equal "$(json pack.json 'd["shards"]')" "$(man ds 'len(m["shards"])')"
	assert_equal "$(json pack.json 'd["shards"]')" 3
	assert_equal "$(json pack.json 'd["bytes"]')" 12000
	assert_equal "$(json pack.json '[d["dataset"], d["name"], d["part"], d["parts"]]')" '["ds", "ds", null, null]'
	assert_equal "$(json pack.json '[d["replaced"], d["unchanged"], d["changes"]]')" '[null, false, null]'
	assert_equal "$(json pack.json 'type(d["seconds"]) in (int, float) and d["seconds"] >= 0')" true
	refute_output --partial "packed"
}

@test "json: pack --json over a version says what it replaced, or that nothing changed" {
	files src 3 100
	chute pack -q -o ds src >/dev/null
	local first
	first=$(man ds 'm["id"]')
	chute pack --json -o ds src >same.json 2>same.err
	parses same.json
	assert_equal "$(json same.json '[d["id"], d["replaced"], d["unchanged"], d["changes"]]')" "[$first, $first, true, \"same content\"]"
	assert_equal "$(cat same.err)" ""
	files src 4 100
	chute pack --json -o ds src >new.json
	same_keys new.json ds id parent samples
	assert_equal "$(json new.json '[d["parent"], d["replaced"], d["unchanged"]]')" "[$first, $first, false]"
	assert_equal "$(json new.json 'd["changes"].split(", ")[0]')" '"+1 sample"'
}

@test "json: push --json names the version, the remote and what was sent; a second push sends no file" {
	files src 12 1000
	chute pack -q -s 5s -o ds src >/dev/null
	chute push --json -t v1 ds rem >push.json 2>push.err
	parses push.json
	same_keys push.json ds id parent samples
	assert_equal "$(json push.json 'd["shards"]')" 3
	assert_equal "$(json push.json '[d["dataset"], d["remote"], d["tags"]]')" '["ds", "rem", ["latest", "v1"]]'
	assert_equal "$(json push.json '[d["files"], d["uploaded"], d["present"], d["manifests"]]')" '[3, 3, 0, 1]'
	local shard_bytes
	shard_bytes=$(man ds 'sum(s["bytes"] for s in m["shards"])')
	assert_equal "$(json push.json '[d["bytes"], d["uploaded_bytes"]]')" "[$shard_bytes, $shard_bytes]"
	assert_equal "$(cat push.err)" ""

	chute push --json ds rem >again.json
	assert_equal "$(json again.json '[d["files"], d["uploaded"], d["present"], d["bytes"], d["uploaded_bytes"]]')" "[3, 0, 3, $shard_bytes, 0]"
	assert_equal "$(json again.json 'd["tags"]')" '["latest"]'
}

@test "json: pull --json reports the files downloaded, then the files already there" {
	files src 12 1000
	chute pack -q -s 5s -o ds src >/dev/null
	chute split ds --val 0.25 >/dev/null
	chute push -t v1 ds rem >/dev/null
	chute pull --json rem@v1 got >pull.json 2>pull.err
	parses pull.json
	same_keys pull.json ds id parent samples
	assert_equal "$(json pull.json 'd["id"]')" "$(man got 'm["id"]')"
	assert_equal "$(json pull.json '[d["dataset"], d["at"], d["shards"]]')" '["got", "v1", 3]'
	assert_equal "$(json pull.json 'd["remote"]')" "\"file://$(pwd -P)/rem\""
	local nfiles all_bytes
	nfiles=$(man ds 'len(m["shards"]) + len(m["splits"]["sets"])')
	all_bytes=$(man ds 'sum(s["bytes"] for s in m["shards"]) + sum(s["bytes"] for s in m["splits"]["sets"].values())')
	assert_equal "$(json pull.json '[d["files"], d["downloaded"], d["resumed"], d["present"]]')" "[$nfiles, $nfiles, 0, 0]"
	assert_equal "$(json pull.json '[d["bytes"], d["downloaded_bytes"]]')" "[$all_bytes, $all_bytes]"
	assert_equal "$(cat pull.err)" ""

	chute pull --json rem got >again.json
	assert_equal "$(json again.json '[d["at"], d["downloaded"], d["present"], d["downloaded_bytes"]]')" "[\"latest\", 0, $nfiles, 0]"
}

@test "json: export --json counts the tar files, their samples and their bytes" {
	files src 12 1000
	chute pack -q -s 5s -o ds src >/dev/null
	chute export --json ds -o out >export.json 2>export.err
	parses export.json
	same_keys export.json ds id parent samples
	local tar_bytes
	tar_bytes=$(cat out/*.tar | wc -c)
	assert_equal "$(json export.json '[d["dataset"], d["output"], d["format"], d["files"], d["bytes"]]')" "[\"ds\", \"out\", \"tar\", 3, $tar_bytes]"
	assert_equal "$(cat export.err)" ""
}

@test "json: split --json has the new version, its parent, the dataset and each split's size" {
	files src 40 100
	chute pack -q -o ds src >/dev/null
	local before
	before=$(man ds 'm["id"]')
	chute split --json ds --val 0.25 --test 0.25 >split.json
	parses split.json
	same_keys split.json ds id parent samples
	assert_equal "$(json split.json 'd["parent"]')" "$before"
	assert_equal "$(json split.json 'd["dataset"]')" '"ds"'
	assert_equal "$(json split.json '{k: v["samples"] for k, v in d["splits"].items()}')" \
		"$(man ds '{k: v["samples"] for k, v in m["splits"]["sets"].items()}')"
	assert_equal "$(json split.json 'sum(v["samples"] for v in d["splits"].values())')" 40
	assert_equal "$(json split.json 'd["seconds"] >= 0')" true
}

@test "json: split --json back to an earlier version: parent is that version's own, replaced the one split" {
	files src 12 100
	chute pack -q -o ds src >/dev/null
	local v0 v1 v2
	v0=$(man ds 'm["id"]')
	chute split --json ds --val 0.25 >one.json
	v1=$(man ds 'm["id"]')
	assert_equal "$(json one.json '[d["parent"], d["replaced"]]')" "[$v0, $v0]"
	chute split --json ds --val 0.5 >two.json
	v2=$(man ds 'm["id"]')
	assert_equal "$(json two.json '[d["parent"], d["replaced"]]')" "[$v1, $v1]"
	# the first split again: version v1 again, which keeps its parent
	chute split --json ds --val 0.25 >back.json
	same_keys back.json ds id parent
	assert_equal "$(json back.json '[d["id"], d["parent"], d["replaced"]]')" "[$v1, $v0, $v2]"
}

@test "json: merge --json has the merged version's id, parts and counts" {
	files src 12 100
	local i
	for i in 0 1 2; do
		chute pack -q --part "$i/3" -o "p$i" src >/dev/null
	done
	chute merge --json -o ds p0 p1 p2 >merge.json
	parses merge.json
	same_keys merge.json ds id parent samples bytes shard_bytes
	assert_equal "$(json merge.json '[d["dataset"], d["parts"], d["samples"], d["shards"]]')" \
		"[\"ds\", 3, 12, $(man ds 'len(m["shards"])')]"
	assert_equal "$(json merge.json '[d["replaced"], d["unchanged"]]')" '[null, false]'
}

@test "json: text output says 1 sample, 1 shard, 1 block, 1 file, 1 manifest, and sizes with a unit" {
	files src 1 2048
	run -0 chute pack -o ds src
	assert_output --regexp '^packed 1 sample \(2\.05 kB\) into 1 shard, id [0-9a-f]{32}$'
	run -0 chute verify ds
	assert_output --regexp '^ok: 1 shard, 1 block, 1 sample, [0-9.]+ [kM]?B$'
	run -0 chute push ds rem
	assert_output --regexp '^pushed [0-9a-f]{32} to rem: 1 of 1 file sent \([0-9.]+ [kM]?B of [0-9.]+ [kM]?B\), 1 manifest; tags latest$'
	run -0 chute pull rem got
	assert_output --regexp '^pulled [0-9a-f]{32} into got: 1 file, 1 downloaded \([0-9.]+ [kM]?B, 0 resumed\), 0 already there$'
	run -0 chute export ds -o out
	assert_output --regexp '^exported 1 shard \(1 sample, [0-9.]+ kB\) into out$'
	run -0 chute log ds
	assert_line --index 0 --regexp '^[0-9a-f]{32}  1 sample, 1 shard, '
	run -0 chute status ds
	assert_output --regexp '^clean: 1 shard, 0 split files, '
	run -0 chute manifest ds
	assert_line --regexp '^bytes: +2\.05 kB raw, [0-9.]+ [kM]?B in 1 shard$'
	assert_line --regexp '^fields: +bin \(1 sample, 2\.05 kB\)$'
}

@test "json: text output counts many in the plural, and a change of one sample in the singular" {
	files src 12 1000
	run -0 chute pack -s 5s -o ds src
	assert_output --regexp '^packed 12 samples \(12\.0 kB\) into 3 shards, id [0-9a-f]{32}$'
	run -0 chute verify ds
	assert_output --regexp '^ok: 3 shards, 3 blocks, 12 samples, [0-9.]+ kB$'
	run -0 chute push ds rem
	assert_output --regexp ': 3 of 3 files sent \([0-9.]+ kB of [0-9.]+ kB\), 1 manifest; tags latest$'
	run -0 chute export ds -o out
	assert_output --regexp '^exported 3 shards \(12 samples, [0-9.]+ kB\) into out$'
	files src 13 1000
	run -0 chute pack -s 5s -o ds src
	assert_line --index 1 --regexp '^replaced ds: [0-9a-f]{12} -> [0-9a-f]{12} \(\+1 sample, \+1/-1 shards\)$'
	run -0 chute push ds rem
	assert_output --regexp ': 1 of 3 files sent \([0-9]+ B of [0-9.]+ kB\), 1 manifest; tags latest$'
}

@test "json: a failed command prints no JSON, only its error on stderr" {
	run -2 --separate-stderr chute push --json nope rem
	assert_output ""
	[[ $stderr == "chute push: "* ]] || fail "stderr: $stderr"
}

@test "json: messages the library words agree with a count of one: check, split, a lost label" {
	mkdir -p src/c0
	echo hi >src/c0/a.txt
	chute pack -q --label-from dir -o ds src >/dev/null
	run -0 chute split ds --val 0
	assert_line --index 1 --regexp '^split 1 sample into 1 split, id [0-9a-f]{32}$'
	run -1 chute check ds
	assert_line "PASS readable: 1 shard, 1 sample"
	assert_line "PASS field-types: 1 field checked"
	assert_line "PASS labels: 1 class, 1 labelled sample"
	run -2 chute pack -q -o ds src
	assert_output --partial "would lose the labels (1 class), split train"
}
