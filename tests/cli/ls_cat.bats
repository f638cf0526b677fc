#!/usr/bin/env bats
# chute ls and chute cat: list samples, extract one field.

load helper

setup() {
	chute_setup
	mkdir -p src/sub
	printf 'alpha' >src/a.txt
	printf 'JPEGDATA\0\1\2' >src/b.jpg
	printf '{"x": 1}\n' >src/b.json
	printf '\0\0\0\377' >src/b.seg.png
	"$PYTHON" -c 'import random; open("src/sub/c.bin", "wb").write(random.Random(2).randbytes(5000))'
	printf '\n\n' >src/d.txt
	# two samples a shard, so that #N crosses shards
	chute pack -q -s 2s src -o ds >/dev/null
}

@test "ls: lists every key with its field sizes, fields in name order" {
	run -0 chute ls ds
	assert_output "$(printf 'a\ttxt:5\nb\tjpg:11 json:9 seg.png:4\nd\ttxt:2\nsub/c\tbin:5000')"
}

@test "ls: a manifest file can be listed like its folder" {
	run -0 chute ls ds/manifest.json
	assert_equal "${#lines[@]}" 4
}

@test "ls: tabs, newlines, carriage returns and backslashes in keys are escaped" {
	mkdir odd
	"$PYTHON" -c '
for k in ("a\tb", "c\nd", "e\rf", "g\\h"):
    open("odd/" + k + ".txt", "w").write("x")'
	chute pack -q odd -o oddds >/dev/null
	run -0 chute ls oddds
	assert_equal "${#lines[@]}" 4
	assert_line 'a\tb	txt:1'
	assert_line 'c\nd	txt:1'
	assert_line 'e\rf	txt:1'
	assert_line 'g\\h	txt:1'
}

# no_raw_control_in TEXT: TEXT holds no control byte but newline and tab,
# and no C1 control (U+0080..U+009F).
no_raw_control_in() {
	"$PYTHON" -c '
import sys
data = sys.argv[1].encode("utf-8", "surrogateescape")
bad = [b for b in data if (b < 0x20 and b not in (9, 10)) or b == 0x7f]
bad += [c for c in data.decode("utf-8", "replace") if 0x80 <= ord(c) <= 0x9f]
sys.exit(1 if bad else 0)' "$1" || fail "a raw control byte in: $(printf %s "$1" | od -c | head)"
}

@test "escapes: a key holding ESC, BEL, C1 and a newline is escaped in ls, check, diff and errors" {
	"$PYTHON" - <<'PY'
import io, tarfile
with tarfile.open("t.tar", "w", format=tarfile.PAX_FORMAT) as t:
    for name, data in [("a\x1b[31mred\nx.txt", b"same"), ("b\x07\u009bc.txt", b"other"),
                       ("plain.txt", b"same")]:
        i = tarfile.TarInfo(name)
        i.size = len(data)
        t.addfile(i, io.BytesIO(data))
PY
	chute pack -q -o hostile t.tar >/dev/null
	run -0 chute ls hostile
	no_raw_control_in "$output"
	assert_line 'a\x1b[31mred\nx	txt:4'
	assert_line 'b\x07\xc2\x9bc	txt:5'
	# JSON output keeps JSON's own escaping: the key comes back whole
	run -0 chute ls --json hostile
	run -0 "$PYTHON" -c 'import json, sys; print(sorted(json.loads(l)["key"] for l in sys.stdin) == ["a\x1b[31mred\nx", "b\x07\x9bc", "plain"])' <<<"$output"
	assert_output True
	run -1 chute check --allow-no-eval hostile
	no_raw_control_in "$output"
	assert_line --partial 'plain (shards/hostile-000000.chs) = a\x1b[31mred\nx (shards/hostile-000000.chs)'
	run -1 chute diff ds hostile
	no_raw_control_in "$output"
	assert_line --partial 'added: a\x1b[31mred\nx b\x07\xc2\x9bc plain'
	run -2 chute cat -f nope hostile $'a\e[31mred\nx'
	no_raw_control_in "$output"
	assert_output "chute cat: sample 'a\x1b[31mred\nx' has no field 'nope'; its fields: txt"
	run -2 chute cat hostile $'no\e]0;title\a'
	no_raw_control_in "$output"
	assert_output --partial "'no\x1b]0;title\x07'"
}

@test "escapes: bidi controls (U+202E and the isolates, marks) are escaped in ls, diff, manifest and errors" {
	"$PYTHON" - <<'PY'
import io, tarfile
with tarfile.open("t.tar", "w", format=tarfile.PAX_FORMAT) as t:
    for name in ["a\u202egpj", "b\u2066c\u2069d", "e\u200ff\u061cg"]:
        i = tarfile.TarInfo(name + ".txt")
        i.size = 1
        t.addfile(i, io.BytesIO(b"x"))
PY
	chute pack -q -n $'bidi\u202ex' -o bidi t.tar >/dev/null
	run -0 chute ls bidi
	assert_output $'a\\xe2\\x80\\xaegpj\ttxt:1\nb\\xe2\\x81\\xa6c\\xe2\\x81\\xa9d\ttxt:1\ne\\xe2\\x80\\x8ff\\xd8\\x9cg\ttxt:1'
	run -1 chute diff ds bidi
	assert_output --partial 'added: a\xe2\x80\xaegpj b\xe2\x81\xa6c'
	run -0 chute manifest bidi
	assert_output --partial 'bidi\xe2\x80\xaex'
	refute_output --partial $'\u202e'
	run -2 chute cat bidi $'no\u202eway'
	assert_output --partial "'no\\xe2\\x80\\xaeway'"
}

@test "ls: a single shard can be listed" {
	run -0 chute ls "$(shard_of ds 1)"
	assert_output "$(printf 'd\ttxt:2\nsub/c\tbin:5000')"
}

@test "ls: --json prints one parseable object per sample" {
	chute ls --json ds >ls.json
	run -0 "$PYTHON" - <<'EOF'
import json, re
rows = [json.loads(l) for l in open("ls.json")]
assert [r["key"] for r in rows] == ["a", "b", "d", "sub/c"], rows
assert [r["sample"] for r in rows] == [0, 1, 2, 3], rows
assert [r["shard"] for r in rows] == ["shards/ds-000000.chs"] * 2 + ["shards/ds-000001.chs"] * 2, rows
for r in rows:
    assert re.fullmatch(r"[0-9a-f]{16}", r["hash"]), r
assert rows[1]["fields"] == {"jpg": 11, "json": 9, "seg.png": 4}, rows[1]
assert len({r["hash"] for r in rows}) == 4, rows
EOF
}

@test "cat: KEY --field F returns the exact bytes" {
	local f
	for f in jpg json seg.png; do
		chute cat ds b --field "$f" >got
		cmp got "src/b.$f"
	done
	chute cat ds sub/c -f bin >got
	cmp got src/sub/c.bin
}

@test "cat: a field that is not text is not written to a terminal without --force; text is" {
	need_terminal
	run -2 on_terminal chute cat ds b -f jpg
	assert_output "chute cat: not writing binary data ('jpg' of sample 'b') to a terminal; pipe it, or redirect it to a file (--force writes anyway)"$'\r'
	# text, then a field that is not: nothing written
	run -2 on_terminal chute cat ds a sub/c
	assert_output --partial "('bin' of sample 'sub/c')"
	refute_output --partial alpha
	run -0 on_terminal chute cat ds b -f jpg --force
	assert_output --partial JPEGDATA
	run -0 on_terminal chute cat ds a
	assert_output alpha
	run -0 on_terminal chute cat ds b -f json
	assert_output --partial '{"x": 1}'
}

@test "cat: a single-field sample needs no --field" {
	chute cat ds d >got
	cmp got src/d.txt
	chute cat ds sub/c >got
	cmp got src/sub/c.bin
}

@test "cat: #N selects the dataset-wide sample N, across shards" {
	chute cat ds '#0' >got
	cmp got src/a.txt
	chute cat ds '#1' -f json >got
	cmp got src/b.json
	chute cat ds '#3' >got
	cmp got src/sub/c.bin
}

@test "cat: several samples write their fields one after another, in the order given" {
	# across shards, by key and by number, one sample twice
	chute cat ds d '#0' sub/c d >got
	cat src/d.txt src/a.txt src/sub/c.bin src/d.txt >want
	cmp got want
	chute cat -f json ds b '#1' >got
	cat src/b.json src/b.json >want
	cmp got want
}

@test "cat: an unknown key or field among several writes nothing" {
	run -2 --separate-stderr chute cat ds a d nosuchkey
	assert_output ""
	[[ $stderr == "chute cat: "*nosuchkey* ]] || fail "stderr: $stderr"
	# d's one field is txt; b has none
	run -2 --separate-stderr chute cat -f txt ds a d b
	assert_output ""
	[[ $stderr == "chute cat: "*"'b' has no field 'txt'"* ]] || fail "stderr: $stderr"
}

@test "cat: a multi-field sample without --field exits 2 listing the fields" {
	run -2 chute cat ds b
	assert_output --regexp '^chute cat: '
	assert_output --partial jpg
	assert_output --partial json
	assert_output --partial seg.png
}

@test "cat: an unknown key exits 2" {
	run -2 chute cat ds nosuchkey
	assert_output --regexp '^chute cat: '
	assert_output --partial nosuchkey
}

@test "cat: an unknown field exits 2" {
	run -2 chute cat ds b -f gif
	assert_output --regexp '^chute cat: '
	assert_output --partial gif
}

@test "cat: a sample in a corrupt block exits 1 and writes nothing" {
	local off
	off=$(block_middle "$(shard_of ds 1)" 0)
	flip_byte "$(shard_of ds 1)" "$off"
	local status=0
	chute cat ds sub/c >got 2>err || status=$?
	assert_equal "$status" 1
	assert_file_empty got
	run -0 cat err
	assert_output --regexp '^chute cat: '
	# the other shard still reads
	chute cat ds a >got
	cmp got src/a.txt
}

@test "cat: from a raw block only the sample is read: damage elsewhere in its block leaves it readable, at its first or last byte exits 1" {
	random_files raw 3 3000 5
	chute pack -q -l 0 raw -o rawds >/dev/null
	local s first last
	s=$(shard_of rawds 0)
	run -0 shard_layout "$s"
	[ "$(grep -c '^block' <<<"$output")" = 1 ] || fail "not one block: $output"
	# where s0 and s2 lie in the file (random bytes: found once)
	read -r first last < <("$PYTHON" -c 'import sys
d = open(sys.argv[1], "rb").read()
print(d.find(open("raw/s0.bin", "rb").read()),
      d.find(open("raw/s2.bin", "rb").read()) + 2999)' "$s")
	flip_byte "$s" "$first"
	flip_byte "$s" "$last"
	chute cat rawds s1 >got
	cmp got raw/s1.bin
	run -1 chute cat rawds s0
	assert_output "chute cat: content hash mismatch in sample 's0' of block 0 ('$s', byte $first)"
	run -1 chute cat rawds s2
	assert_output --regexp "^chute cat: content hash mismatch in sample 's2' of block 0 "
}

@test "cat: exits 0 when the reader stops early" {
	# bigger than a pipe holds, so that chute is still writing when head goes
	mkdir big
	head -c 4000000 /dev/zero >big/z.bin
	chute pack -q big -o bigds >/dev/null
	run -0 bash -c 'chute cat bigds z 2>err | head -c 10 >/dev/null; echo "status ${PIPESTATUS[0]}"'
	assert_output 'status 0'
	assert_file_empty err
}

@test "cat: #N past the last sample exits 2" {
	run -2 chute cat ds '#4'
	assert_output --regexp '^chute cat: '
}

@test "ls: 'chute ls DS | head -1' exits quietly" {
	# enough lines to fill the pipe long after head has gone
	"$PYTHON" - <<'EOF'
import io, tarfile
with tarfile.open("many.tar", "w") as t:
    for i in range(20000):
        ti = tarfile.TarInfo("sample_with_a_longish_name_%06d.txt" % i)
        ti.size = 1
        t.addfile(ti, io.BytesIO(b"x"))
EOF
	chute pack -q many.tar -o many >/dev/null
	run -0 bash -c 'chute ls many 2>err | head -1; echo "status ${PIPESTATUS[0]}"'
	assert_line --index 0 --regexp $'^sample_with_a_longish_name_000000\ttxt:1$'
	assert_line --index 1 'status 0'
	assert_file_empty err
}

@test "ls: a shard copied over another of the same size exits 1 naming it and both seals" {
	pack_swapped sw
	run -1 chute ls sw
	assert_output --partial "chute ls: 'shards/sw-000001.chs' is not the shard the manifest names: its seal is "
	assert_output --partial "the manifest says $(mjson sw 'm["shards"][1]["seal"]')"
	refute_output --partial "k050"
}

@test "cat: #N in a shard copied over another exits 1 instead of printing the other shard's sample" {
	pack_swapped sw
	run -1 chute cat sw '#50'
	assert_output --regexp "^chute cat: 'shards/sw-000001.chs' is not the shard the manifest names: its seal is [0-9a-f]{32}, the manifest says [0-9a-f]{32}"
	run -0 chute cat sw '#49'
	assert_output same
}

@test "cat: a manifest of format version 1 (no seals) is read, bound by size and sample count" {
	edit_manifest ds "$AS_VERSION1"
	run -0 chute verify ds
	run -0 chute cat ds '#3'
	# a shard of another size in its place
	cp "$(shard_of ds 0)" "$(shard_of ds 1)"
	run -1 chute cat ds '#3'
	assert_output --regexp "^chute cat: 'shards/ds-000001.chs' is not the shard the manifest names: it has size [0-9]+, the manifest says [0-9]+"
}

@test "ls: a hand-edited manifest whose shard counts disagree with the shards exits 1 naming the shard" {
	edit_manifest ds 'm["shards"][0]["samples"] -= 1
m["shards"][1]["samples"] += 1
m["shards"][1]["first_sample"] -= 1'
	run -1 chute ls ds
	assert_output "chute ls: 'shards/ds-000000.chs' is not the shard the manifest names: it has sample count 2, the manifest says 1 (run chute verify)"
}

@test "cat: a hand-edited manifest whose schema lacks a field of the shard exits 1 naming shard and field" {
	edit_manifest ds 'm["schema"]["fields"]["text"] = m["schema"]["fields"].pop("txt")'
	run -1 chute cat ds a
	assert_output "chute cat: 'shards/ds-000000.chs' holds field 'txt', which the manifest's schema does not list (run chute verify)"
}
