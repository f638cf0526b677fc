#!/usr/bin/env bats
# chute split: deterministic train / val / test splits recorded in a new
# manifest version, split files checked by chute verify, and chute ls
# --split to read one back.

load helper

# images DIR COUNT: COUNT samples in 3 class folders (c00/img0000000.jpg
# ...); the first N samples of a larger COUNT are the same files.
images() {
	"$PYTHON" "$REPO_ROOT/scripts/gen-data.py" images "$1" --count "$2" \
		--size 200 --classes 3 --seed 4 >/dev/null ||
		fail "scripts/gen-data.py images $1 failed"
}

# packed DS COUNT: a dataset of COUNT labelled samples in shards of 40.
packed() {
	images "src-$1" "$2"
	chute pack -q --label-from dir -s 40s -o "$1" "src-$1" >/dev/null ||
		fail "chute pack $1 failed"
}

# split_file DS NAME: the path of split NAME's file, from the manifest.
split_file() {
	mjson "$1" "m['splits']['sets']['$2']['path']" | sed "s|^|$1/|"
}

# ids FILE: the sample numbers in a split file, one a line.
ids() {
	"$PYTHON" -c '
import struct, sys
d = open(sys.argv[1], "rb").read()
assert len(d) % 8 == 0, "size %d is not a multiple of 8" % len(d)
for n in struct.unpack("<%dQ" % (len(d) // 8), d):
    print(n)
' "$1" || fail "cannot read split file $1"
}

# membership DS: "KEY SPLIT" per sample, sorted by key, from chute ls --split.
membership() {
	local name
	for name in $(mjson "$1" "' '.join(sorted(m['splits']['sets']))"); do
		chute ls --split "$name" "$1" | cut -f1 | sed "s/\$/ $name/" ||
			fail "chute ls --split $name $1 failed"
	done | sort
}

# rewrite_split DS NAME EXPR: replaces the sample numbers of split NAME by
# the Python expression EXPR over n (its numbers) and train (train's), and
# records the file's new hash, name and size in the manifest, whose id then
# no longer matches its content.
rewrite_split() {
	"$PYTHON" - "$@" <<'EOF' || fail "cannot rewrite split $2 of $1"
import json, os, struct, subprocess, sys
ds, name, expr = sys.argv[1:4]
m = json.load(open(ds + "/manifest.json"))
sets = m["splits"]["sets"]
def numbers(s):
    d = open(ds + "/" + sets[s]["path"], "rb").read()
    return list(struct.unpack("<%dQ" % (len(d) // 8), d))
n, train = numbers(name), numbers("train")
nums = eval(expr)
data = struct.pack("<%dQ" % len(nums), *nums)
h = subprocess.run(["xxhsum", "-H2", "-"], input=data, stdout=subprocess.PIPE,
                   stderr=subprocess.DEVNULL, check=True).stdout.split()[0].decode()
os.remove(ds + "/" + sets[name]["path"])
path = "splits/%s-%s.ids" % (name, h[:16])
open(ds + "/" + path, "wb").write(data)
sets[name].update(path=path, hash=h, bytes=len(data), samples=len(nums))
json.dump(m, open(ds + "/manifest.json", "w"), indent=2, sort_keys=True)
EOF
}

# ---------------------------------------------------------------- summary

@test "split: the summary gives each split's samples, share and classes, and they add up" {
	packed ds 200
	run -0 chute split ds --val 0.1 --test 0.1
	assert_equal "${#lines[@]}" 4
	assert_line --index 0 --regexp $'^test\t[0-9]+\t[0-9.]+%\tc00:[0-9]+ c01:[0-9]+ c02:[0-9]+$'
	assert_line --index 1 --regexp $'^train\t[0-9]+\t'
	assert_line --index 2 --regexp $'^val\t[0-9]+\t'
	id=$(mjson ds "m['id']")
	assert_line --index 3 "split 200 samples into 3 splits, id $id"
	# splits add up to the dataset; classes add up to each split
	echo "$output" | head -3 | awk -F'\t' '
		{ total += $2; n = split($4, c, " "); s = 0
		  for (i = 1; i <= n; i++) { split(c[i], kv, ":"); s += kv[2] }
		  if (s != $2) { print "classes of " $1 " add up to " s; exit 1 } }
		END { if (total != 200) { print "splits add up to " total; exit 1 } }' ||
		fail "counts do not add up: $output"
	# the manifest and the files agree with the summary
	for name in test train val; do
		n=$(echo "$output" | awk -F'\t' -v s="$name" '$1 == s { print $2 }')
		assert_equal "$(mjson ds "m['splits']['sets']['$name']['samples']")" "$n"
		assert_equal "$(ids "$(split_file ds "$name")" | wc -l)" "$n"
	done
}

@test "split: a class name holding ESC is escaped in the summary" {
	mkdir -p cls/"$(printf 'c\033x')" cls/dog
	for i in 1 2 3 4 5 6; do
		echo "$i" >cls/"$(printf 'c\033x')"/"$i".txt
		echo "d$i" >cls/dog/"$i".txt
	done
	chute pack -q --label-from dir -o clsds cls >/dev/null
	run -0 chute split clsds --val 0.3
	assert_line --index 0 --regexp $'^train\t[0-9]+\t[0-9.]+%\tc\\\\x1bx:[0-9]+ dog:[0-9]+$'
	[[ $output != *$'\033'* ]] || fail "a raw ESC in the summary"
}

@test "split: --json prints the summary as one object" {
	packed ds 120
	run -0 chute split ds --val 0.25 --seed 9 --json
	assert_equal "${#lines[@]}" 1
	echo "$output" >summary.json
	run -0 "$PYTHON" -c '
import json
s = json.load(open("summary.json"))
m = json.load(open("ds/manifest.json"))
assert s["id"] == m["id"] and s["parent"] == m["parent"], s
assert s["seed"] == 9 and s["group"] is None and s["samples"] == 120, s
assert sorted(s["splits"]) == ["train", "val"], s
assert sum(v["samples"] for v in s["splits"].values()) == 120
for name, v in s["splits"].items():
    assert v["path"] == m["splits"]["sets"][name]["path"]
    assert sum(v["classes"].values()) == v["samples"], v
    assert abs(v["share"] - v["samples"] / 120) < 1e-12, v
assert s["splits"]["val"]["fraction"] == 0.25
assert s["splits"]["train"]["fraction"] == 0.75
print("ok")'
	assert_output "ok"
}

@test "split: the manifest records the rule, the files, and the old id as parent" {
	packed ds 80
	old=$(mjson ds "m['id']")
	run -0 chute split ds --val 0.05 --test 0.1 --seed 12 --group '^(c[0-9]+)/'
	assert_equal "$(mjson ds "m['parent']")" "$old"
	assert_equal "$(mjson ds "m['splits']['rule']")" \
		'{"group": "^(c[0-9]+)/", "method": "key-hash", "seed": 12}'
	assert_equal "$(mjson ds "m['splits']['sets']['val']['fraction']")" 0.05
	assert_equal "$(mjson ds "m['splits']['sets']['test']['fraction']")" 0.1
	assert_equal "$(mjson ds "m['splits']['sets']['train']['fraction']")" 0.85
	# each file: 8 bytes a sample, its hash in the manifest and its name
	for name in test train val; do
		f=$(split_file ds "$name")
		h=$(mjson ds "m['splits']['sets']['$name']['hash']")
		assert_equal "$(stat -c %s "$f")" \
			"$(mjson ds "m['splits']['sets']['$name']['bytes']")"
		assert_equal "$(xxhsum -H2 "$f" 2>/dev/null | cut -d' ' -f1)" "$h"
		assert_equal "$f" "ds/splits/$name-${h:0:16}.ids"
	done
	# shards untouched, manifest still valid
	run -0 chute verify ds
}

@test "split: split files list ascending sample numbers that together cover the dataset once" {
	packed ds 150
	chute split ds --val 0.2 --test 0.2 >/dev/null
	for name in test train val; do
		ids "$(split_file ds "$name")" >"$name.ids"
		sort -n -c "$name.ids" || fail "$name is not ascending"
		[ -z "$(uniq -d "$name.ids")" ] || fail "$name repeats a sample"
	done
	run -0 bash -c 'cat test.ids train.ids val.ids | sort -n | uniq -d'
	assert_output ""
	assert_equal "$(cat test.ids train.ids val.ids | sort -n)" "$(seq 0 149)"
}

@test "split: sample numbers in a split file are those chute ls gives its keys" {
	packed ds 90
	chute split ds --val 0.3 >/dev/null
	want=$(ids "$(split_file ds val)")
	run -0 chute ls --split val --json ds
	got=$(echo "$output" | "$PYTHON" -c '
import json, sys
for l in sys.stdin:
    print(json.loads(l)["sample"])')
	assert_equal "$got" "$want"
	# and --split keeps the plain listing's lines
	chute ls ds | "$PYTHON" -c '
import sys
lines = sys.stdin.read().splitlines()
for n in open(sys.argv[1]).read().split():
    print(lines[int(n)])' <(echo "$want") >expected
	run -0 chute ls --split val ds
	assert_output "$(cat expected)"
}

@test "split: a sample's split follows the documented hash of seed and key" {
	packed ds 100
	chute split ds --val 0.15 --test 0.1 --seed 77 >/dev/null
	membership ds >got
	chute ls ds | cut -f1 | "$PYTHON" -c '
import struct, sys, xxhash
seed, test, val = 77, 0.1, 0.15
for key in sys.stdin.read().split("\n")[:-1]:
    h = xxhash.xxh3_64_intdigest(struct.pack("<Q", seed) + key.encode())
    u = (h >> 11) * 2.0 ** -53
    print(key, "test" if u < test else "val" if u < test + val else "train")
' | sort >want
	run -0 diff want got
}

# ---------------------------------------------------------------- determinism

@test "split: the same seed gives the same split files, byte for byte" {
	packed ds 120
	cp -r ds copy
	chute split ds --val 0.1 --test 0.1 --seed 5 >/dev/null
	chute split copy --val 0.1 --test 0.1 --seed 5 >/dev/null
	for name in test train val; do
		cmp "$(split_file ds "$name")" "$(split_file copy "$name")" ||
			fail "$name differs"
	done
	assert_equal "$(mjson ds "m['id']")" "$(mjson copy "m['id']")"
	cmp ds/manifest.json copy/manifest.json
}

@test "split: another seed gives other splits" {
	packed ds 120
	cp -r ds other
	chute split ds --val 0.2 --seed 1 >/dev/null
	chute split other --val 0.2 --seed 2 >/dev/null
	run ! cmp -s "$(split_file ds val)" "$(split_file other val)"
	[ "$(mjson ds "m['id']")" != "$(mjson other "m['id']")" ] ||
		fail "same id for different seeds"
}

@test "split: adding samples never moves an existing sample to another split" {
	packed small 120
	packed big 300
	chute split small --val 0.1 --test 0.1 --seed 3 >/dev/null
	chute split big --val 0.1 --test 0.1 --seed 3 >/dev/null
	membership small >small.txt
	membership big >big.txt
	assert_equal "$(wc -l <small.txt)" 120
	assert_equal "$(wc -l <big.txt)" 300
	# every "KEY SPLIT" line of the small dataset is in the big one
	run -0 comm -23 small.txt big.txt
	assert_output ""
	# and the new samples did land in all three splits
	for name in test train val; do
		grep -q " $name\$" big.txt || fail "no sample in $name"
	done
}

@test "split: --val alone makes train and val; a new split replaces the old one" {
	packed ds 60
	chute split ds --val 0.1 --test 0.1 >/dev/null
	first=$(mjson ds "m['id']")
	run -0 chute split ds --val 0.2
	assert_equal "${#lines[@]}" 3
	assert_line --index 0 --regexp $'^train\t'
	assert_line --index 1 --regexp $'^val\t'
	assert_equal "$(mjson ds "sorted(m['splits']['sets'])")" '["train", "val"]'
	assert_equal "$(mjson ds "m['parent']")" "$first"
	# the old split files are gone, the new ones are all there is
	run -0 bash -c 'ls ds/splits | sort'
	assert_output "$(mjson ds "'\n'.join(sorted(p['path'][7:] for p in m['splits']['sets'].values()))")"
	run -0 chute verify ds
}

@test "split: --val 0 leaves one train split of every sample" {
	packed ds 30
	run -0 chute split ds --val 0
	assert_equal "$(mjson ds "sorted(m['splits']['sets'])")" '["train"]'
	assert_equal "$(mjson ds "m['splits']['sets']['train']['fraction']")" 1.0
	assert_equal "$(ids "$(split_file ds train)")" "$(seq 0 29)"
}

@test "split: a dataset without classes prints counts and shares only" {
	mkfixture src
	chute pack -q -o ds src >/dev/null
	run -0 chute split ds --val 0.3 --test 0.2 --seed 1
	assert_line --index 0 --regexp $'^test\t[0-9]+\t[0-9.]+%$'
	assert_line --index 3 --partial "split 20 samples into 3 splits, id "
}

# ---------------------------------------------------------------- groups

@test "split: --group keeps every sample of a group in one split" {
	local g i
	mkdir src
	for g in $(seq -w 1 40); do
		mkdir -p "src/v$g"
		for i in 1 2 3 4 5; do
			echo "v$g $i" >"src/v$g/frame$i.txt"
		done
	done
	chute pack -q -o ds src >/dev/null
	run -0 chute split ds --val 0.25 --test 0.25 --group '^(v[0-9]+)/'
	membership ds | sed 's|/frame[0-9]* | |' | sort -u >groups.txt
	assert_equal "$(wc -l <groups.txt)" 40
	run -0 bash -c "cut -d' ' -f1 groups.txt | uniq -d"
	assert_output ""
	# the groups did spread over the three splits
	for name in test train val; do
		grep -q " $name\$" groups.txt || fail "no group in $name"
	done
	# a group's split is the hash of its name, not of its keys
	"$PYTHON" -c '
import struct, sys, xxhash
for line in open("groups.txt"):
    g, split = line.split()
    u = (xxhash.xxh3_64_intdigest(struct.pack("<Q", 0) + g.encode()) >> 11) * 2.0 ** -53
    want = "test" if u < 0.25 else "val" if u < 0.5 else "train"
    assert split == want, (g, split, want)
' || fail "groups not where the rule puts them"
}

@test "split: a key the --group regex does not match is exit 1, names the key, writes nothing" {
	mkdir -p src/a
	echo 1 >src/a/x.txt
	echo 2 >src/loose.txt
	chute pack -q -o ds src >/dev/null
	cp ds/manifest.json before.json
	run -1 chute split ds --val 0.5 --group '^([a-z]+)/'
	assert_one_line_error split
	assert_output --partial "chute split: --group: key 'loose' does not match the group regex '^([a-z]+)/'"
	cmp before.json ds/manifest.json
	assert_not_exist ds/splits
}

# ---------------------------------------------------------------- verify

@test "split: verify passes on a split dataset" {
	packed ds 100
	chute split ds --val 0.1 --test 0.1 >/dev/null
	run -0 chute verify ds
	assert_output --regexp '^ok: 3 shards, '
	run -0 chute verify --deep ds
}

@test "split: verify fails naming a split file whose bytes changed" {
	packed ds 100
	chute split ds --val 0.1 --test 0.1 >/dev/null
	f=$(split_file ds val)
	flip_byte "$f" 0
	run -1 chute verify ds
	assert_line --partial "$f: file hash "
	assert_output --partial "FAILED: "
	run -1 chute verify --json ds
	assert_output --partial '"kind":"file_hash"'
	assert_output --partial "\"shard\":\"${f#ds/}\""
}

@test "split: verify fails naming a split file that is missing or cut short" {
	packed ds 100
	chute split ds --val 0.1 --test 0.1 >/dev/null
	f=$(split_file ds test)
	g=$(split_file ds train)
	rm "$f"
	truncate -s -8 "$g"
	run -1 chute verify ds
	assert_line --partial "$f: missing: "
	assert_line --partial "$g: size "
	assert_line "FAILED: 2 problems in 2 shards"
}

@test "split: verify reports a split file out of order, and a sample in two splits" {
	packed ds 50
	chute split ds --val 0.2 --test 0.2 >/dev/null
	rewrite_split ds test 'n[::-1]'
	rewrite_split ds val 'sorted(n[1:] + train[:1])'
	run -1 chute verify ds
	assert_output --partial "manifest id"
	assert_output --regexp "splits/test-[0-9a-f]{16}\.ids: at byte 8: sample number [0-9]+ is not above the previous one"
	assert_output --regexp "splits/val-[0-9a-f]{16}\.ids: 1 sample is also in another split \(the first: #"
	# coverage is not judged while a file is unusable
	refute_output --partial "in no split"
}

@test "split: verify finds a sample in no split when every file is well formed" {
	packed ds 50
	chute split ds --val 0.2 --test 0.2 >/dev/null
	rewrite_split ds val 'sorted(n[1:] + train[:1])'
	run -1 chute verify ds
	assert_output --partial "1 sample is in no split (the first: #"
	assert_output --partial "1 sample is also in another split"
}

@test "split: verify reports a sample number past the dataset's end" {
	packed ds 50
	chute split ds --val 0.2 >/dev/null
	rewrite_split ds val 'n[:-1] + [50]'
	run -1 chute verify ds
	assert_output --regexp "splits/val-[0-9a-f]{16}\.ids: at byte [0-9]+: sample number 50 is past the dataset's last sample"
}

# ---------------------------------------------------------------- mistakes

@test "split: bad options exit 2 with one line and write nothing" {
	packed ds 20
	cp ds/manifest.json before.json
	local args
	for args in "--val 1" "--val 1.5" "--val -0.1" "--val 0.00001" \
		"--val abc" "--val 0.5 --test 0.5" "--val 0.7 --test 0.4" \
		"--test 0.1" "--val 0.1 --group (" "--val 0.1 --group abc" \
		"--val 0.1 --seed -1" "--val 0.1 --seed 9223372036854775808" \
		"--val 0.1 --vla 0.1"; do
		# shellcheck disable=SC2086
		run -2 chute split ds $args
		assert_one_line_error split
	done
	cmp before.json ds/manifest.json
	assert_not_exist ds/splits
}

@test "split: the error messages say what is wrong" {
	packed ds 20
	run -2 chute split ds --val 0.00001
	assert_output "chute split: invalid value '0.00001' for --val: expected a fraction below 1 with at most 4 digits after the point (such as 0.05)"
	run -2 chute split ds --val 0.6 --test 0.4
	assert_output --partial "nothing would be left for train"
	run -2 chute split ds
	assert_output --partial "no --val given"
	run -2 chute split ds --val 0.1 --group '(a'
	assert_output --partial "chute split: --group: invalid group regex '(a'"
	run -2 chute split ds --val 0.1 --group 'c0'
	assert_output --partial "has no parenthesised group"
	run -2 chute split --val 0.1
	assert_output "chute split: nothing to split: name a dataset"
}

@test "split: a lone shard or a missing dataset is exit 2" {
	packed ds 20
	run -2 chute split "$(shard_of ds)" --val 0.1
	assert_one_line_error split
	assert_output --partial "lone shard"
	assert_not_exist ds/splits
	run -2 chute split nowhere --val 0.1
	assert_one_line_error split
}

@test "split: an edited manifest is refused with exit 1" {
	packed ds 20
	sed -i 's/"level": 3/"level": 4/' ds/manifest.json
	run -1 chute split ds --val 0.1
	assert_one_line_error split
	assert_output --partial "does not match its content"
	assert_not_exist ds/splits
}

@test "split: a manifest file works like its folder" {
	packed ds 20
	run -0 chute split ds/manifest.json --val 0.5
	assert_equal "$(mjson ds "sorted(m['splits']['sets'])")" '["train", "val"]'
	run -0 chute verify ds
}

@test "ls: --split of a dataset without that split names the splits it has" {
	packed ds 20
	run -2 chute ls --split val ds
	assert_output --partial "has no splits"
	chute split ds --val 0.5 >/dev/null
	run -2 chute ls --split test ds
	assert_output "chute ls: 'ds' has no split 'test'; its splits: train, val"
}

@test "ls: --split refuses a split file that does not match the manifest" {
	packed ds 40
	chute split ds --val 0.5 >/dev/null
	flip_byte "$(split_file ds val)" 0
	run -1 chute ls --split val ds
	assert_output --partial "does not match the manifest's hash"
	run -0 chute ls --split train ds
}

@test "split: a shard copied over another of the same size is refused with exit 1, naming it" {
	pack_swapped sw
	run -1 chute split sw --val 0.1
	assert_output --partial "'shards/sw-000001.chs' is not the shard the manifest names: its seal is "
	assert_not_exists sw/splits
}

@test "split: a shard that is damaged, missing or has a damaged block is exit 1" {
	packed ds 20
	cp -r ds orig
	flip_byte "$(shard_of ds)" 20
	run -1 chute split ds --val 0.5
	assert_one_line_error split
	assert_output --partial "header checksum mismatch"
	rm "$(shard_of ds)"
	run -1 chute split ds --val 0.5
	assert_output --partial "No such file or directory"
	rm -r ds
	cp -r orig ds
	flip_byte "$(shard_of ds)" "$(block_middle "$(shard_of ds)" 0)"
	run -1 chute split ds --val 0.5
	assert_one_line_error split
	assert_output --regexp "(checksum|hash) mismatch"
	assert_not_exist ds/splits
}
