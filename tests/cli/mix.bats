#!/usr/bin/env bats
# chute stream DATASET... --mix: several datasets in one stream, in stated
# proportions, by the rule of chute-stream(1) MIXING (recomputed here by
# mix_ref.py), with the guarantees of a single stream: the same bytes for
# any --workers, exact and elastic resume, run records and replay.

load helper

# Sources: a (11 samples, shards of 3), b (5, shards of 2), c (7, split
# train/val), d (4, a field "extra" the others lack).
setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	"$PYTHON" - <<'EOF' || return 1
import os
for name, n in (("a", 11), ("b", 5), ("c", 7), ("d", 4)):
    os.makedirs("src-" + name)
    for i in range(n):
        p = "src-%s/%s%02d." % (name, name, i)
        open(p + "txt", "w").write("%s %d\n" % (name, i))
        open(p + "cls", "w").write("%d\n" % (i % 3))
        if name == "d":
            open(p + "extra", "w").write("x")
EOF
	chute pack -q -s 3s src-a -o a >/dev/null &&
		chute pack -q -s 2s src-b -o b >/dev/null &&
		chute pack -q src-c -o c >/dev/null &&
		chute pack -q src-d -o d >/dev/null &&
		chute split -q c --val 0.3 >/dev/null
}

setup() {
	chute_setup
	cp -a "$BATS_FILE_TMPDIR"/{a,b,c,d} .
}

# keys ARGS...: "EPOCH KEY" of each sample of chute stream ARGS -f jsonl.
keys() {
	chute stream "$@" -f jsonl | "$PYTHON" -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    print(d["epoch"], d["key"])'
}

# ref SEED SHUFFLE EPOCHS RULE NAME=W...: the same, from the rule.
ref() {
	"$PYTHON" "$BATS_TEST_DIRNAME/mix_ref.py" "$@"
}

# cursors FILE: "SAMPLES CURSOR" of each frame of a batch stream, SAMPLES
# those of the frames up to this one.
cursors() {
	"$PYTHON" - "$1" <<'EOF'
import struct, sys
buf, at, total = open(sys.argv[1], "rb").read(), 0, 0
while at < len(buf):
    size, = struct.unpack_from("<Q", buf, at + 8)
    total += struct.unpack_from("<I", buf, at + 32)[0]
    n, = struct.unpack_from("<I", buf, at + 40)
    print(total, buf[at + 64:at + 64 + n].decode())
    at += size
EOF
}

@test "mix: the sequence is the documented rule, shuffled or not, for each epoch rule" {
	run -0 keys a b --mix 'a=0.7,b=0.3' --shuffle none -b 4 -e 2
	assert_output "$(ref 0 none 2 shortest a=0.7 b=0.3)"
	# the worked example of the page, its first batch
	assert_line -n 0 "0 a00"
	assert_line -n 1 "0 b00"
	run -0 keys a b c:train --mix 'a=2,b=1,c:train=1.5' --seed 9 -b 5 -e 2
	assert_output "$(ref 9 global 2 shortest a=2 b=1 c:train=1.5)"
	run -0 keys a b --mix 'a=1,b=3' --mix-epoch 30 --seed 3 -b 7 -e 2
	assert_output "$(ref 3 global 2 30 a=1 b=3)"
	run -0 keys a b --mix 'a=1,b=1' --mix-epoch a --shuffle window \
		--window 2 --seed 4 -b 4 -e 2
	assert_output "$(ref 4 window:2 2 a a=1 b=1)"
}

@test "mix: the proportions hold over an epoch, and --count says its length" {
	run -0 chute stream a b --mix 'a=1,b=3' --mix-epoch 1000 --count -b 10
	assert_output --partial '"samples":1000,"batches":100,'
	run -0 bash -c "chute stream a b --mix 'a=1,b=3' --mix-epoch 1000 \
		-b 10 -f jsonl | grep -c '\"key\":\"b'"
	assert_output 750
}

@test "mix: the same bytes for any --workers" {
	local w
	chute stream a b c:train --mix 'a=0.5,b=0.2,c:train=0.3' -b 3 -e 3 \
		--seed 2 -w 0 -o w0 || fail "w0"
	for w in 1 3; do
		chute stream a b c:train --mix 'a=0.5,b=0.2,c:train=0.3' -b 3 \
			-e 3 --seed 2 -w "$w" -o "w$w" || fail "w$w"
		cmp w0 "w$w" || fail "--workers $w differs"
	done
}

@test "mix: resuming from any cursor gives the rest, also on another world size" {
	local mix=(a b --mix 'a=0.6,b=0.4' --seed 6 -b 2 -e 2) c n r
	chute stream "${mix[@]}" -o full || fail "full"
	keys "${mix[@]}" >all
	cursors full >cur
	while read -r n c; do
		diff <(keys "${mix[@]}" --resume "$c") <(tail -n +$((n + 1)) all) ||
			fail "resume after sample $n"
	done <cur
	# one rank goes to the middle of epoch 0; three ranks finish it
	c=$(sed -n 2p cur | cut -d' ' -f2)
	for r in 0 1 2; do
		keys "${mix[@]}" -e 1 --resume "$c" --world-size 3 --rank "$r"
	done | sort >rest
	head -4 all >done
	sort done rest | uniq -d >twice
	assert_equal "$(wc -l <twice)" 0
	# ranks take the same number of batches
	for r in 0 1 2; do
		chute stream "${mix[@]}" --world-size 3 --rank "$r" --count
	done | sort -u >counts
	assert_equal "$(wc -l <counts)" 1
	# every position of epoch 0 once, within what ranks can share
	assert_equal "$(($(wc -l <rest) + 4))" "$(grep -c '^0 ' all)"
}

@test "mix: a cursor of another mix is refused naming the source that changed" {
	chute stream a b --mix 'a=0.7,b=0.3' -b 4 --state st >/dev/null
	run -2 chute stream a b --mix 'a=0.7,b=0.4' -b 4 --resume "$(cat st)"
	assert_output --partial "source 2 ('b') had weight 0.3, now 0.4"
	run -2 chute stream a c --mix 'a=0.7,c=0.3' -b 4 --resume "$(cat st)"
	assert_output --partial "its source 2 was id"
	run -2 chute stream a -b 4 --resume "$(cat st)"
	assert_output --partial "is from a mix of 2 sources"
	run -2 chute stream a b --mix 'a=0.7,b=0.3' --mix-epoch 20 -b 4 \
		--resume "$(cat st)"
	assert_output --partial "another mix of these sources"
}

@test "mix: --record names every source and weight; --replay streams it again" {
	chute stream a b:train 2>/dev/null && fail "b has no split"
	chute stream a c:train --mix 'a=0.7,c:train=0.3' -b 4 -e 2 --seed 1 \
		--record run.json -o first || fail "record"
	run -0 "$PYTHON" -c '
import json
d = json.load(open("run.json"))["dataset"]
print(d["mix_epoch"], [(s["source"], s["split"], s["weight"],
       s["per_epoch"], len(s["id"])) for s in d["mix"]])'
	assert_output "shortest [('a', None, '0.7', 11, 32), ('c:train', 'train', '0.3', 5, 32)]"
	run -0 chute stream --replay run.json -o again
	cmp first again || fail "the replay differs"
	run -2 chute stream --replay run.json --mix 'a=1,c:train=1'
	assert_output --partial "--mix cannot go with --replay"
	# a source repacked since is refused, by name
	rm -rf a && chute pack -q -s 4s "$BATS_FILE_TMPDIR/src-a" -o a >/dev/null
	run -1 chute stream --replay run.json -o third
	assert_output --partial "(source 1 of the mix) is not the dataset of the run record"
	assert_file_not_exists third
}

@test "mix: sources with other fields are refused, unless --fields picks common ones" {
	run -2 chute stream a d --mix 'a=1,d=1' -f jsonl
	assert_output "chute stream: field 'extra' is in 'd' but not in 'a': pick fields every source has (--fields)"
	run -2 chute stream a d --mix 'a=1,d=1' --fields txt,extra
	assert_output "chute stream: --fields: fields chosen: 'a' has no field 'extra'"
	run -0 bash -c "chute stream a d --mix 'a=1,d=1' --fields cls,txt -f jsonl |
		grep -c '\"fields\":{\"cls\":2,\"txt\":[0-9]*},'"
	assert_output 8
	run -0 bash -c "chute stream a d --mix 'a=1,d=1' --fields txt \
		--source-field name -f jsonl --shuffle none | head -2 |
		cut -d, -f4-"
	assert_output "$(printf '%s\n' \
		'"fields":{"source":1,"txt":4},"text":{"source":"a","txt":"a 0\n"}}' \
		'"fields":{"source":1,"txt":4},"text":{"source":"d","txt":"d 0\n"}}')"
	run -0 bash -c "chute stream a b --mix 'a=1,b=1' --source-field index \
		-f jsonl --shuffle none | head -2 | grep -o '\"source\":\"[01]\"'"
	assert_output "$(printf '%s\n' '"source":"0"' '"source":"1"')"
	run -2 chute stream a --source-field index
	assert_output "chute stream: --source-field: a sample's source is named in a mix only: give several datasets and their proportions (--mix)"
}

@test "mix: bad weights, a source twice or alone exit 2 naming it, nothing written" {
	local bad
	for bad in 'a=x,b=1' 'a=-0.5,b=1' 'a=0,b=1' 'a=1,b=1,a=2' 'a=1' \
		'a=1,b=1,z=1' 'a=1.0000001,b=1'; do
		run -2 chute stream a b --mix "$bad" -o out
		assert_output --regexp "'[abz]'"
		assert_file_not_exists out
	done
	run -2 chute stream a a --mix 'a=1' -o out
	assert_output "chute stream: 'a' is given twice: each source once"
	run -2 chute stream a --mix 'a=1' -o out
	assert_output --partial "--mix with one dataset, 'a'"
	run -2 chute stream a b -o out
	assert_output --partial "to mix them, say in what proportions with --mix"
	run -2 chute stream a b --mix 'a=1,b=1' --mix-epoch zz -o out
	assert_output --partial "--mix-epoch 'zz'"
	assert_file_not_exists out
}

@test "mix: a remote source streams as a local one" {
	chute push -q b "file://$PWD/rem" --tag v1 >/dev/null || fail "push"
	keys a b --mix 'a=0.7,b=0.3' --seed 8 -b 4 >local
	run -0 keys a "file://$PWD/rem@v1" --mix "a=0.7,file://$PWD/rem@v1=0.3" \
		--remote-cache cache --seed 8 -b 4
	assert_output "$(cat local)"
}
