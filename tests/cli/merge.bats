#!/usr/bin/env bats
# chute merge: the parts chute pack --part I/N wrote, into one dataset
# that is the same bytes whatever the order, holds the samples of one
# pack, and is refused (exit 2, nothing written) for parts that do not
# belong together.  And the xargs recipe of chute-scale(7), as printed.

load helper
load parts

setup() {
	chute_setup
	gen_text src
}

# ---------------------------------------------------------------- merging

@test "merge: four parts make one dataset that verifies and streams every sample" {
	pack_parts parts 4
	run -0 chute merge parts/0 parts/1 parts/2 parts/3 -o ds
	assert_output --regexp '^merged 4 parts: 120 samples \([0-9.]+ [kMGT]?B\) in [0-9]+ shards?, id [0-9a-f]{32}$'
	run -0 chute verify ds
	run -0 --separate-stderr chute stream -f jsonl ds
	assert_equal "${#lines[@]}" 120
	run -0 chute split ds --val 0.1
	run -0 chute check ds
	run -0 chute manifest ds
	refute_output --partial "part"
	run -1 grep '"part"' ds/manifest.json
}

@test "merge: the shards are the parts' own files, linked, renamed in part order" {
	pack_parts parts 2
	run -0 chute merge parts/1 parts/0 -o ds
	local first=(parts/0/shards/*.chs) second=(parts/1/shards/*.chs)
	local all=("${first[@]}" "${second[@]}") merged=(ds/shards/*.chs) i
	assert_equal "${#merged[@]}" "${#all[@]}"
	for i in "${!all[@]}"; do
		assert_equal "$(stat -c %i "${merged[$i]}")" "$(stat -c %i "${all[$i]}")"
		assert_equal "${merged[$i]}" "$(printf 'ds/shards/ds-%06d.chs' "$i")"
	done
}

@test "merge: the same bytes whatever the order of the parts and whoever packed them" {
	pack_parts a 4 -j 1
	# other invocations, in another order, with other names and jobs
	local i
	for i in 3 1 0 2; do
		chute pack -q -s 20s -j 3 --part "$i/4" -n "w$i" -o "b/p$i" src >/dev/null
	done
	run -0 chute merge a/0 a/1 a/2 a/3 -o x/ds
	run -0 chute merge b/p2 b/p0 b/p3 b/p1 -o y/ds
	run -0 cmp x/ds/manifest.json y/ds/manifest.json
	run -0 diff <(cd x/ds && ls shards) <(cd y/ds && ls shards)
	local s
	for s in x/ds/shards/*.chs; do
		cmp "$s" "y/ds/shards/${s##*/}" || fail "$s differs"
	done	# names are no part of the id (chute-manifest(5), THE ID)
	local id
	id=$(chute manifest x/ds | sed -n 's/^version //p')
	run -0 chute merge -n other a/3 a/2 a/1 a/0 -o z
	assert_output --partial "id $id"
}

@test "merge: chute diff finds the samples of a one-process pack, all equal" {
	pack_parts parts 3
	chute pack -q -s 20s -o whole src >/dev/null
	run -0 chute merge parts/* -o ds
	run -0 chute diff whole ds
	assert_line "samples: 0 added, 0 removed, 0 changed, 120 unchanged"
	assert_line --partial "equal: same samples"
}

@test "merge: the labels of --label-from are numbered alike in every part" {
	"$PYTHON" "$REPO_ROOT/scripts/gen-data.py" images img --count 40 \
		--size 800 --classes 5 --seed 1 >/dev/null
	local i
	for i in 0 1 2; do
		chute pack -q --label-from dir --part "$i/3" -o "p/$i" img >/dev/null
	done
	chute pack -q --label-from dir -o whole img >/dev/null
	run -0 chute merge p/0 p/1 p/2 -o ds
	run -0 chute diff whole ds
	assert_line --partial "equal: same samples"
}

@test "merge: a part with no sample is merged like the others" {
	mkdir few && cp src/0000/txt000000[01].* few/
	local i
	for i in 0 1 2 3 4 5 6 7; do
		chute pack -q --part "$i/8" -o "p/$i" few >/dev/null ||
			fail "pack of part $i failed"
	done
	run -0 chute merge p/* -o ds
	assert_output --partial "merged 8 parts: 2 samples"
	run -0 chute verify ds
}

@test "merge: into an existing dataset, its version becomes the parent" {
	chute pack -q -s 20s -o ds src >/dev/null
	local old
	old=$(chute manifest ds | sed -n 's/^version //p')
	pack_parts parts 2
	run -0 chute merge parts/0 parts/1 -o ds
	assert_line --index 1 --regexp "^replaced ds: ${old:0:12} -> [0-9a-f]{12} \("
	run -0 chute log ds
	assert_equal "${#lines[@]}" 2
	assert_line --index 1 --partial "$old"
	run -0 chute verify ds
}

# ---------------------------------------------------------------- refusals

# refused WHAT ARGS...: chute merge ARGS -o out exits 2 with one line
# that says WHAT, and out (an earlier dataset) keeps every byte.
refused() {
	local what=$1
	shift
	[ -d out ] || chute pack -q -o out src >/dev/null
	local before
	before=$(snapshot out)
	run -2 chute merge "$@" -o out
	assert_output --partial "$what"
	assert_equal "${#lines[@]}" 1
	assert_equal "$(snapshot out)" "$before"
	! ls -A | grep -q '^\.out\.tmp' || fail "a temporary was left"
}

@test "merge: a missing part is refused, naming the parts given" {
	pack_parts parts 4
	refused "part 2 of 4 is missing: 3 of 4 parts given ('parts/0', 'parts/1', 'parts/3')" \
		parts/0 parts/3 parts/1
}

@test "merge: a part given twice is refused" {
	pack_parts parts 3
	refused "'parts/1' and 'parts/1' are both part 1 of 3" \
		parts/0 parts/1 parts/1 parts/2
	cp -r parts/1 again
	refused "'again' and 'parts/1' are both part 1 of 3" \
		parts/0 parts/1 again parts/2
}

@test "merge: parts of different counts are refused" {
	pack_parts parts 2
	chute pack -q --part 1/3 -o three src >/dev/null
	refused "'parts/0' is part 0 of 2 but 'three' is part 1 of 3" \
		parts/0 parts/1 three
}

@test "merge: parts packed with other options are refused, naming the option" {
	pack_parts parts 2
	chute pack -q -s 20s -l 9 --part 1/2 -o other src >/dev/null
	refused "'parts/0' and 'other' were packed with different compression levels (chute pack --level)" \
		parts/0 other
	chute pack -q -s 30s --part 1/2 -o other src >/dev/null
	refused "different shard sizes (chute pack --shard-size)" parts/0 other
}

@test "merge: parts packed by another chute version or from other sources are refused" {
	pack_parts parts 2
	cp -r parts/1 old
	edit_manifest old 'm["chute_version"] = "0.0.9"; reid = True'
	refused "'parts/0' and 'old' were packed by different chute versions ($(chute --version | cut -d' ' -f2)" \
		parts/0 old
	mkdir src2 && cp -r src/. src2/
	chute pack -q -s 20s --part 1/2 -o elsewhere src2 >/dev/null
	refused "'parts/0' and 'elsewhere' were packed from different sources" \
		parts/0 elsewhere
}

@test "merge: overlapping parts are refused, naming the part and the key" {
	pack_parts parts 4
	cp -r parts/3 wrong
	edit_manifest wrong 'm["options"]["part"]["index"] = 2; reid = True'
	refused "'wrong' (part 2 of 4) holds key '" parts/0 parts/1 wrong parts/3
	assert_output --partial "which is in part 3: parts overlap"
}

@test "merge: a dataset that is not a part is refused, an edited part is damaged (1)" {
	pack_parts parts 2
	refused "'out' is not a part: it was packed whole (chute pack --part)" parts/0 out
	edit_manifest parts/1 'm["options"]["level"] = 4'
	local before
	before=$(snapshot out)
	run -1 chute merge parts/0 parts/1 -o out
	assert_output "chute merge: 'parts/1': its manifest's id does not match its content (edited?)"
	assert_equal "$(snapshot out)" "$before"
}

@test "merge: a damaged shard of a part exits 1 and writes nothing" {
	pack_parts parts 2
	chute pack -q -o out src >/dev/null
	local before
	before=$(snapshot out)
	flip_byte "$(shard_of parts/1)" -1
	run -1 chute merge parts/0 parts/1 -o out
	assert_output --partial "parts/1"
	assert_equal "$(snapshot out)" "$before"
}

@test "merge: a part whose totals its shards do not bear out exits 1, naming the part and the total" {
	pack_parts parts 2
	chute pack -q -o out src >/dev/null
	local before n
	before=$(snapshot out)
	# its last shard taken out of its manifest (left in shards/), the
	# counts cut to what parses, the bytes stale; the id recomputed
	cp -r parts/1 cut
	edit_manifest cut 's = m["shards"].pop()
m["samples"] -= s["samples"]
m["shard_bytes"] -= s["bytes"]
for f in m["schema"]["fields"].values():
    f["count"] = min(f["count"], m["samples"])
reid = True'
	run -1 chute merge parts/0 cut -o out
	assert_output --regexp "^chute merge: 'cut': the manifest's schema\.fields\.cls\.bytes is [0-9]+, the shards hold [0-9]+, and more totals differ \(edited\?\)$"
	assert_equal "$(snapshot out)" "$before"
	# a count edited
	n=$(mjson parts/1 'm["schema"]["fields"]["txt"]["count"]')
	edit_manifest parts/1 'm["schema"]["fields"]["txt"]["count"] -= 1
reid = True'
	run -1 chute merge parts/0 parts/1 -o out
	assert_output "chute merge: 'parts/1': the manifest's schema.fields.txt.count is $((n - 1)), the shards hold $n (edited?)"
	assert_equal "$(snapshot out)" "$before"
	! ls -A | grep -q '^\.out\.tmp' || fail "a temporary was left"
}

@test "merge: usage mistakes exit 2" {
	run -2 chute merge -o ds
	assert_output "chute merge: no part given: name the folders chute pack --part wrote"
	run -2 chute merge parts/0
	assert_output "chute merge: no output folder given: use -o DIR"
	run -2 chute merge nowhere -o ds
	assert_output --partial "nowhere"
	assert_file_not_exists ds
}

# ---------------------------------------------------------------- recipe

@test "merge: the xargs recipe of chute-scale(7) runs as printed" {
	run -0 man_example chute-scale.7 xargs
	assert_line --index 0 --partial "xargs -P 4"
	assert_line --partial "chute merge parts/* -o data/train"
	local recipe=$output
	"$PYTHON" "$REPO_ROOT/scripts/gen-data.py" images images --count 60 \
		--size 800 --classes 3 --seed 1 >/dev/null
	run -0 bash -e -o pipefail -c "$recipe"
	assert_line --regexp '^merged 4 parts: 60 samples'
	assert_line --regexp '^ok: '
	assert_equal "${lines[-1]}" 60
	chute pack -q -o whole images >/dev/null
	run -0 chute diff whole data/train
	assert_line --partial "equal: same samples"
}

@test "merge: a merge that would lose the splits of the dataset it replaces needs --force" {
	chute pack -q -s 20s -o ds src >/dev/null
	chute split ds --val 0.1 >/dev/null
	local before
	before=$(snapshot ds)
	pack_parts parts 2
	run -2 chute merge parts/0 parts/1 -o ds
	assert_output --partial "would lose split train, split val; force the merge to replace it anyway (--force)"
	assert_equal "$(snapshot ds)" "$before"
	run -0 chute merge --force parts/0 parts/1 -o ds
	run -0 chute log ds
	assert_equal "${#lines[@]}" 3
}
