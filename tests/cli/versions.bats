#!/usr/bin/env bats
# Versions: chute manifest, status, diff and log; parents recorded by pack
# and split; the folder's history (.chute/versions) and stat cache
# (.chute/stat).

load helper

# images DIR COUNT: COUNT samples in 3 class folders (c00/img0000000.jpg
# ...); the first N samples of a larger COUNT are the same files.
images() {
	"$PYTHON" "$REPO_ROOT/scripts/gen-data.py" images "$1" --count "$2" \
		--size 200 --classes 3 --seed 4 >/dev/null ||
		fail "scripts/gen-data.py images $1 failed"
}

# packed DS SRC [OPTION...]: SRC packed with classes into shards of 20
# samples.
packed() {
	chute pack -q --label-from dir -s 20s "${@:3}" -o "$1" "$2" >/dev/null ||
		fail "chute pack $2 -o $1 failed"
}

# mkfiles DIR NAME=CONTENT...: small files with known bytes.
mkfiles() {
	local dir=$1 spec
	shift
	for spec in "$@"; do
		mkdir -p "$dir/$(dirname "${spec%%=*}")"
		printf '%s' "${spec#*=}" >"$dir/${spec%%=*}"
	done
}

# id DS: the id in DS's manifest.
id() {
	mjson "$1" 'm["id"]'
}

# djson EXPR: a Python expression over the JSON document `d` in $output.
djson() {
	"$PYTHON" -c '
import json, sys
d = json.loads(sys.argv[1])
r = eval(sys.argv[2])
print(r if not isinstance(r, (list, dict)) else json.dumps(r, sort_keys=True))
' "$output" "$1"
}

# ---------------------------------------------------------------- manifest

@test "manifest: the first line is the version id, then a summary" {
	images src 60
	packed ds src
	run -0 chute manifest ds
	assert_line --index 0 "version $(id ds)"
	assert_line "id:        matches the content"
	assert_line "name:      ds"
	assert_line "parent:    none"
	assert_line "samples:   60"
	assert_line --regexp '^bytes: +[0-9.]+ [kMGT]?B raw, [0-9.]+ [kMGT]?B in 3 shards$'
	assert_line --regexp '^fields: +cls \(60 samples, 60 B\), jpg \(60 samples, [0-9.]+ [kMGT]?B\)$'
	assert_line "classes:   3 (c00, c01, c02)"
	assert_line "splits:    none"
	assert_line "sources:   src"
	assert_line --regexp '^options: +shard_bytes 0, shard_samples 20, .*label_from dir$'
}

@test "manifest: the summary gives the splits and the parent after chute split" {
	images src 60
	packed ds src
	local before
	before=$(id ds)
	chute split ds --val 0.2 --seed 3 >/dev/null
	run -0 chute manifest ds/manifest.json
	assert_line "parent:    $before"
	assert_line --regexp '^splits: +train [0-9]+ \([0-9.]+%, asked 0\.8\), val [0-9]+ \([0-9.]+%, asked 0\.2\); key-hash, seed 3$'
}

@test "manifest: --json prints the manifest's own bytes, from a folder or a file" {
	images src 30
	packed ds src
	chute split ds --val 0.3 >/dev/null
	chute manifest --json ds >out.json
	cmp out.json ds/manifest.json
	chute manifest --json ds/manifest.json >out2.json
	cmp out2.json ds/manifest.json
}

@test "manifest: a manifest edited by hand is shown, and said not to match" {
	images src 10
	packed ds src
	# the id covers the content, pack options included (not the name)
	sed -i 's/"level": 3/"level": 4/' ds/manifest.json
	run -0 chute manifest ds
	assert_line "id:        DOES NOT MATCH the content (edited?)"
	assert_line --partial ", level 4, "
}

@test "manifest: a folder without a manifest is a one-line error, exit 2" {
	mkdir empty
	run -2 chute manifest empty
	assert_one_line_error manifest
	run -2 chute manifest
	assert_one_line_error manifest
}

# ---------------------------------------------------------------- status

@test "status: a fresh pack is clean without hashing anything (exit 0)" {
	images src 60
	packed ds src
	assert_file_exists ds/.chute/stat
	run -0 chute status ds
	assert_output "clean: 3 shards, 0 split files, 0 hashed, version $(id ds)"
}

@test "status: after chute split the split files are recorded too" {
	images src 60
	packed ds src
	chute split ds --val 0.2 >/dev/null
	run -0 chute status ds
	assert_output "clean: 3 shards, 2 split files, 0 hashed, version $(id ds)"
}

@test "status: a missing shard and a missing split file exit 1" {
	images src 60
	packed ds src
	chute split ds --val 0.2 >/dev/null
	local val
	val=$(mjson ds 'm["splits"]["sets"]["val"]["path"]')
	rm ds/shards/ds-000001.chs "ds/$val"
	run -1 chute status ds
	assert_line --index 0 "missing shards/ds-000001.chs"
	assert_line --index 1 "missing $val"
	assert_line --index 2 --regexp '^not clean: 2 missing, 0 modified, 0 unexpected; 3 shards, 2 split files'
}

@test "status: a shard of another size is modified" {
	images src 60
	packed ds src
	printf x >>ds/shards/ds-000002.chs
	run -1 chute status ds
	assert_line --index 0 --regexp '^modified shards/ds-000002.chs \(size [0-9]+, the manifest says [0-9]+\)$'
}

@test "status: same size, other bytes is modified (the new mtime makes it hashed)" {
	images src 60
	packed ds src
	flip_byte ds/shards/ds-000000.chs 100
	run -1 chute status ds
	assert_line --index 0 "modified shards/ds-000000.chs (content differs from the manifest's hash)"
	assert_line --index 1 --partial ", 1 hashed,"
}

@test "status: a touched shard is hashed once, found clean, and recorded again" {
	images src 60
	packed ds src
	touch -d '2001-01-01' ds/shards/ds-000001.chs
	run -0 chute status ds
	assert_output --regexp '^clean: 3 shards, 0 split files, 1 hashed, '
	run -0 chute status ds
	assert_output --regexp '^clean: 3 shards, 0 split files, 0 hashed, '
}

@test "status: the stat cache is trusted: an edit with size, mtime and inode restored needs --hash" {
	images src 60
	packed ds src
	touch -r ds/shards/ds-000000.chs stamp
	flip_byte ds/shards/ds-000000.chs 100
	touch -r stamp ds/shards/ds-000000.chs
	# the fast path did not read the file: proof that the cache is used
	run -0 chute status ds
	assert_output --partial ", 0 hashed,"
	run -1 chute status --hash ds
	assert_line --index 0 "modified shards/ds-000000.chs (content differs from the manifest's hash)"
	assert_line --index 1 --partial ", 3 hashed,"
	# a file found modified loses its record: no longer vouched for
	run -1 chute status ds
	assert_line --index 1 --partial ", 1 hashed,"
}

@test "status: --hash on a clean folder hashes every file and exits 0" {
	images src 60
	packed ds src
	chute split ds --val 0.2 >/dev/null
	run -0 chute status --hash ds
	assert_output --regexp '^clean: 3 shards, 2 split files, 5 hashed, '
}

@test "status: without a stat cache every file is hashed, then recorded" {
	images src 60
	packed ds src
	rm ds/.chute/stat
	run -0 chute status ds
	assert_output --partial ", 3 hashed,"
	run -0 chute status ds
	assert_output --partial ", 0 hashed,"
}

@test "status: unexpected files under shards/ and splits/, a .part one said to be a partial download" {
	images src 60
	packed ds src
	mkdir -p ds/splits ds/shards/sub
	printf x >ds/shards/ds-000009.chs.part
	printf y >ds/splits/old-0123456789abcdef.ids
	printf z >ds/shards/sub/stray
	printf w >ds/notes.txt # outside shards/ and splits/: none of ours
	run -1 chute status ds
	assert_line --index 0 "unexpected shards/ds-000009.chs.part (partial download)"
	assert_line --index 1 "unexpected shards/sub/stray"
	assert_line --index 2 "unexpected splits/old-0123456789abcdef.ids"
	assert_line --index 3 --regexp '^not clean: 0 missing, 0 modified, 3 unexpected; '
	assert_equal "${#lines[@]}" 4
}

@test "status: --json reports every problem" {
	images src 60
	packed ds src
	rm ds/shards/ds-000002.chs
	printf x >ds/shards/a.part
	run -1 chute status --json ds
	assert_equal "$(djson 'd["clean"]')" False
	assert_equal "$(djson 'd["id"]')" "$(id ds)"
	assert_equal "$(djson '[(p["kind"], p["path"], p["why"]) for p in d["problems"]]')" \
		'[["missing", "shards/ds-000002.chs", null], ["unexpected", "shards/a.part", "partial download"]]'
	touch ds/shards/ds-000002.chs
}

@test "status: an edited manifest is reported" {
	images src 10
	packed ds src
	sed -i 's/"level": 3/"level": 4/' ds/manifest.json
	run -1 chute status ds
	assert_line --index 0 "manifest manifest.json (its id does not match its content (edited?))"
}

@test "status: no dataset, a lone shard or a bad option exit 2" {
	images src 10
	packed ds src
	run -2 chute status nowhere
	assert_one_line_error status
	run -2 chute status ds/shards/ds-000000.chs
	assert_one_line_error status
	assert_output --partial "lone shard"
	run -2 chute status --hsah ds
	assert_output "chute status: unknown option '--hsah'; did you mean '--hash'?"
}

# ---------------------------------------------------------------- diff

@test "diff: a version against itself, or a repack elsewhere, is equal (exit 0)" {
	images src 60
	packed a src
	run -0 chute diff a a
	assert_line --index 2 "samples: 0 added, 0 removed, 0 changed, 60 unchanged"
	assert_line --index 3 "equal: same samples, splits and schema"
	# other shard sizes: other ids, same samples
	chute pack -q --label-from dir -s 7s -o b src >/dev/null
	run -0 chute diff a b
	assert_line "equal: same samples, splits and schema"
}

@test "diff: samples added, removed and changed are listed by key, with exit 1" {
	mkfiles one a.txt=1 b.txt=2 c.txt=3 d.txt=4
	mkfiles two a.txt=1 b.txt=22 d.txt=4 e.txt=5 f.txt=6
	chute pack -q one -o A >/dev/null
	chute pack -q two -o B >/dev/null
	run -1 chute diff A B
	assert_line --index 0 "A $(id A) (4 samples)"
	assert_line --index 1 "B $(id B) (5 samples)"
	assert_line --index 2 "samples: 2 added, 1 removed, 1 changed, 2 unchanged"
	assert_line --index 3 "  added: e f"
	assert_line --index 4 "  removed: c"
	assert_line --index 5 "  changed: b"
	assert_line --index 6 "different"
	run -1 chute diff B A
	assert_line --index 2 "samples: 1 added, 2 removed, 1 changed, 2 unchanged"
}

@test "diff: --limit bounds the example keys, --json lists them all" {
	mkfiles one a.txt=1
	mkdir two
	for i in 1 2 3 4 5; do printf "$i" >"two/k$i.txt"; done
	chute pack -q one -o A >/dev/null
	chute pack -q two -o B >/dev/null
	run -1 chute diff --limit 2 A B
	assert_line "  added: k1 k2 ... and 3 more"
	run -1 chute diff --limit 0 A B
	refute_line --partial "added:"
	run -1 chute diff --json --limit 1 A B
	assert_equal "$(djson 'd["added"]')" '["k1", "k2", "k3", "k4", "k5"]'
	assert_equal "$(djson 'd["removed"]')" '["a"]'
	assert_equal "$(djson 'd["equal"]')" False
	assert_equal "$(djson 'd["a"]["id"]')" "$(id A)"
}

@test "diff: per split, keys that joined, left and moved between splits" {
	images src 60
	packed a src
	cp -a a b
	chute split a --val 0.2 --seed 1 >/dev/null
	chute split b --val 0.2 --seed 2 >/dev/null
	run -1 chute diff --json a b
	assert_equal "$(djson '[d["added"], d["removed"], d["changed"], d["unchanged"]]')" '[[], [], [], 60]'
	# what the split files say, computed independently from chute ls --split
	chute ls --split val a | cut -f1 | sort >val_a
	chute ls --split val b | cut -f1 | sort >val_b
	assert_equal "$(djson '"\n".join(d["splits"]["val"]["added"])')" "$(comm -13 val_a val_b)"
	assert_equal "$(djson '"\n".join(d["splits"]["val"]["removed"])')" "$(comm -23 val_a val_b)"
	assert_equal "$(djson '"\n".join(d["splits"]["train"]["added"])')" "$(comm -23 val_a val_b)"
	assert_equal "$(djson 'len(d["moved"])')" "$(comm -3 val_a val_b | wc -l)"
	assert_equal "$(djson 'sorted(set((m["from"], m["to"]) for m in d["moved"]))')" \
		'[["train", "val"], ["val", "train"]]'
	run -1 chute diff a b
	assert_line --regexp '^split val: [0-9]+ added, [0-9]+ removed, 0 changed \(12 -> [0-9]+ samples\)$'
	assert_line --regexp '^moved between splits: [0-9]+$'
}

@test "diff: a split only one version has is added or removed" {
	images src 60
	packed a src
	cp -a a b
	chute split b --val 0.2 >/dev/null
	run -1 chute diff a b
	local val
	val=$(mjson b 'm["splits"]["sets"]["val"]["samples"]')
	assert_line "split train: added ($((60 - val)) samples)"
	assert_line "split val: added ($val samples)"
	run -1 chute diff b a
	assert_line "split val: removed ($val samples)"
}

@test "diff: per class counts and classes added to the schema" {
	images src 30
	cp -a src src2
	rm src2/c00/img0000000.jpg
	printf x >>src2/c01/img0000001.jpg
	mkdir src2/c03
	printf new >src2/c03/n.jpg
	packed a src
	packed b src2
	run -1 chute diff a b
	assert_line "samples: 1 added, 1 removed, 1 changed, 28 unchanged"
	assert_line "class c00: 0 added, 1 removed, 0 changed"
	assert_line "class c01: 0 added, 0 removed, 1 changed"
	assert_line "class c03: 1 added, 0 removed, 0 changed"
	refute_line --partial "class c02:"
	assert_line "schema: class added c03"
	run -1 chute diff --json a b
	assert_equal "$(djson 'd["schema"]["classes_added"]')" '["c03"]'
	assert_equal "$(djson 'd["classes"]["c00"]')" '{"added": 0, "changed": 0, "removed": 1}'
}

@test "diff: fields added and removed are schema changes" {
	mkfiles one a.txt=1 b.txt=2
	mkfiles two a.txt=1 b.txt=2 b.json=3
	chute pack -q one -o A >/dev/null
	chute pack -q two -o B >/dev/null
	run -1 chute diff A B
	assert_line "schema: field added json"
	assert_line "samples: 0 added, 0 removed, 1 changed, 1 unchanged"
	run -1 chute diff B A
	assert_line "schema: field removed json"
}

@test "diff: shards with the same hash are read from one version only" {
	images src 60
	packed a src
	cp -a src src2
	printf x >>src2/c02/img0000059.jpg # the last sample: the last shard only
	packed b src2
	run -1 chute diff --json a b
	assert_equal "$(djson 'd["shards_shared"]')" 2
	assert_equal "$(djson 'd["changed"]')" '["c02/img0000059"]'
	# b's shared shards are not even opened: remove them and it still works
	rm b/shards/b-000000.chs b/shards/b-000001.chs
	run -1 chute diff --json a b
	assert_equal "$(djson 'd["changed"]')" '["c02/img0000059"]'
}

@test "diff: usage errors and unreadable versions exit 2" {
	images src 10
	packed a src
	run -2 chute diff a
	assert_one_line_error diff
	run -2 chute diff a a a
	assert_one_line_error diff
	run -2 chute diff a nowhere
	assert_one_line_error diff
	run -2 chute diff --limit x a a
	assert_one_line_error diff
}

# ---------------------------------------------------------------- parents, history, log

@test "history: pack and split save every version, in the manifest's own bytes" {
	images src 30
	packed ds src
	cmp ds/manifest.json "ds/.chute/versions/$(id ds).json"
	chute split ds --val 0.2 >/dev/null
	cmp ds/manifest.json "ds/.chute/versions/$(id ds).json"
	run -0 ls ds/.chute/versions
	assert_equal "${#lines[@]}" 2
}

@test "parents: split records the version it replaces; so does a pack over a dataset" {
	images src 30
	packed ds src
	local v1 v2
	v1=$(id ds)
	assert_equal "$(mjson ds 'm["parent"]')" None
	chute split ds --val 0.2 >/dev/null
	v2=$(id ds)
	assert_equal "$(mjson ds 'm["parent"]')" "$v1"
	images src 40
	packed ds src --force # the splits go
	assert_equal "$(mjson ds 'm["parent"]')" "$v2"
	# the history came along with the repack
	assert_file_exists "ds/.chute/versions/$v1.json"
	assert_file_exists "ds/.chute/versions/$v2.json"
	run -0 chute status ds
}

@test "parents: repacking the same files is idempotent (same manifest, same id, same parent)" {
	images src 30
	packed ds src
	cp ds/manifest.json first.json
	local v1
	v1=$(id ds)
	chute split ds --val 0.2 >/dev/null
	# without the splits the content is the first version's again: the
	# version is that one, parent and all, and the history does not loop
	packed ds src --force
	cmp first.json ds/manifest.json
	packed ds src
	cmp first.json ds/manifest.json
	run -0 ls ds/.chute/versions
	assert_equal "${#lines[@]}" 2
	run -0 chute log ds
	assert_output "$v1  30 samples, 2 shards, no splits: first version"
	# splitting again the same way gives the split version again
	chute split ds --val 0.2 >/dev/null
	run -0 chute log ds
	assert_equal "${#lines[@]}" 2
}

@test "ids name the content: the same files packed anywhere, under any name, from any path, get one id" {
	images src 20
	packed n1 src
	mkdir -p elsewhere && cp -r src elsewhere/photos
	packed n2 "$PWD/elsewhere/photos"
	assert_equal "$(id n1)" "$(id n2)"
	assert_equal "$(mjson n2 'm["name"]')" n2
	run -0 chute diff n1 n2
	assert_line "equal: same samples, splits and schema"
	# splits too: the split files' paths carry the name, their hashes the
	# content
	chute split n1 --val 0.25 >/dev/null
	chute split n2 --val 0.25 >/dev/null
	assert_equal "$(id n1)" "$(id n2)"
	# other options, other content
	chute pack -q --label-from dir -s 20s -l 9 -o n3 src >/dev/null
	[ "$(id n3)" != "$(id n1)" ]
}

@test "log: pack, split, repack with more samples: newest first, what changed each time" {
	images src 60
	packed ds src
	local v1 v2 v3
	v1=$(id ds)
	chute split ds --val 0.2 >/dev/null
	v2=$(id ds)
	images src 80
	packed ds src --force
	v3=$(id ds)
	run -0 chute log ds
	assert_equal "${#lines[@]}" 3
	assert_line --index 0 --regexp "^$v3  80 samples, 4 shards, no splits: \\+20 samples, \\+[0-9]+(/-[0-9]+)? shards?, split train/val removed$"
	assert_line --index 1 "$v2  60 samples, 3 shards, splits train/val: split train/val added"
	assert_line --index 2 "$v1  60 samples, 3 shards, no splits: first version"
}

@test "log: --json gives each version, its parent and changes" {
	images src 30
	packed ds src
	chute split ds --val 0.2 >/dev/null
	run -0 chute log --json ds
	assert_equal "$(djson '[v["id"] for v in d["versions"]]')" \
		"[\"$(id ds)\", \"$(mjson ds 'm["parent"]')\"]"
	assert_equal "$(djson 'd["versions"][0]["splits"]["val"] + d["versions"][0]["splits"]["train"]')" 30
	assert_equal "$(djson 'd["versions"][1]["parent"]')" None
	assert_equal "$(djson 'd["versions"][0]["changes"]')" '["split train/val added"]'
	assert_equal "$(djson 'd["continues_at"]')" None
}

@test "log: a parent that is not stored here ends the walk, saying where it continues" {
	images src 30
	packed ds src
	local v1
	v1=$(id ds)
	chute split ds --val 0.2 >/dev/null
	rm "ds/.chute/versions/$v1.json"
	run -0 chute log ds
	assert_line --index 0 --regexp "^$(id ds)  30 samples, 2 shards, splits train/val: parent not stored here$"
	assert_line --index 1 "history continues at $v1 (not stored here)"
	run -0 chute log --json ds
	assert_equal "$(djson 'd["continues_at"]')" "$v1"
}

@test "log: a dataset packed before there was history gets its old version saved by split" {
	images src 30
	packed ds src
	local v1
	v1=$(id ds)
	rm -r ds/.chute
	chute split ds --val 0.2 >/dev/null
	assert_file_exists "ds/.chute/versions/$v1.json"
	run -0 chute log ds
	assert_equal "${#lines[@]}" 2
}

@test "log: a stored version whose content has another id is damaged data (exit 1)" {
	images src 30
	packed ds src
	local v1
	v1=$(id ds)
	chute split ds --val 0.2 >/dev/null
	sed -i 's/"level": 3/"level": 4/' "ds/.chute/versions/$v1.json"
	run -1 chute log ds
	assert_line --partial "chute log: "
	assert_line --partial "another id"
}
