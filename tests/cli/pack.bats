#!/usr/bin/env bats
# chute pack: folders, lists and archives into shards and a manifest.

load helper

teardown() {
	# the full-disk test mounts a tmpfs; the temp folder cannot be removed
	# while it is mounted
	if mountpoint -q "$BATS_TEST_TMPDIR/disk" 2>/dev/null; then
		umount "$BATS_TEST_TMPDIR/disk"
	fi
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

# mkrandom DIR COUNT SIZE: COUNT incompressible files KEY.bin of SIZE bytes.
mkrandom() {
	"$PYTHON" - "$@" <<'EOF' || fail "cannot generate $1"
import os, random, sys
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
rng = random.Random(7)
for i in range(n):
    with open(os.path.join(d, "k%04d.bin" % i), "wb") as f:
        f.write(rng.randbytes(size))
EOF
}

# ---------------------------------------------------------------- basics

@test "pack: a folder becomes shards and a manifest, with a one-line summary" {
	mkfixture src
	run -0 chute pack src -o ds
	assert_equal "${#lines[@]}" 1
	assert_output --regexp '^packed [0-9]+ samples? \([0-9.]+ [kMGT]?B\) into [0-9]+ shards?, id [0-9a-f]{32}$'
	assert_file_exists ds/manifest.json
	assert_file_exists ds/shards/ds-000000.chs
	local id
	id=$(mjson ds 'm["id"]')
	assert_output --partial "id $id"
	run -0 chute verify ds
}

@test "pack: the summary counts every sample and byte" {
	mkfiles src a.jpg=1234 a.txt=56 b.jpg=789 c/d.jpg=0
	run -0 chute pack src -o ds
	assert_output --regexp '^packed 3 samples \(10 B\) into 1 shard, id '
}

@test "pack: --name sets the shard prefix, which defaults to the folder's name" {
	mkfiles src a.txt=x
	mkdir -p some/where
	run -0 chute pack src -o some/where/ds1
	assert_file_exists some/where/ds1/shards/ds1-000000.chs
	run -0 chute pack -n imagenet src -o ds2
	assert_file_exists ds2/shards/imagenet-000000.chs
	assert_equal "$(mjson ds2 'm["name"]')" imagenet
}

@test "pack: files KEY.FIELD group into samples; the field starts at the first dot of the file name" {
	mkfiles src a.jpg=A a.seg.png=BB b.json=CCC d.x/e.f.txt=DDDD
	run -0 chute pack src -o ds
	run -0 chute ls ds
	assert_output "$(printf 'a\tjpg:1 seg.png:2\nb\tjson:3\nd.x/e\tf.txt:4')"
}

@test "pack: without -o is a usage error" {
	mkfiles src a.txt=x
	run -2 chute pack src
	assert_output --regexp '^chute pack: '
}

# ---------------------------------------------------------------- sources

@test "pack: a newline-separated list on stdin packs like the folder" {
	mkfixture src
	chute pack src -o dir
	find src -type f | sort >list
	run -0 chute pack - -o ds <list
	assert_equal "$(content_hashes ds)" "$(content_hashes dir)"
	assert_equal "$(mjson ds 'm["samples"]')" "$(mjson dir 'm["samples"]')"
}

@test "pack: -0 reads a NUL-separated list, so names may hold newlines" {
	mkfiles src a.txt=first
	printf 'second' >"src/new
line.txt"
	printf 'src/a.txt\0src/new\nline.txt\0' >list
	run -0 chute pack -0 - -o ds <list
	assert_output --regexp '^packed 2 samples '
	chute ls --json ds >ls.json
	run -0 "$PYTHON" -c '
import json
keys = sorted(json.loads(l)["key"] for l in open("ls.json"))
assert any(k.endswith("new\nline") for k in keys), keys
'
}

@test "pack: without -0 a list line is one path" {
	mkfiles src a.txt=1 b.txt=2 c.txt=3
	printf 'src/a.txt\nsrc/b.txt\nsrc/c.txt\n' >list
	run -0 chute pack - -o ds <list
	assert_output --regexp '^packed 3 samples '
}

@test "pack: tar, tar.gz, tar.zst and zip archives pack to the same samples as the folder" {
	mkfixture src
	chute pack src -o dir
	(cd src && tar -cf ../a.tar -- *)
	(cd src && tar -czf ../a.tar.gz -- *)
	(cd src && tar -cf - -- * | zstd -q -o ../a.tar.zst)
	(cd src && zip -qr ../a.zip -- *)
	local want a
	want=$(sample_hashes dir)
	for a in a.tar a.tar.gz a.tar.zst a.zip; do
		run -0 chute pack "$a" -o "ds-$a"
		assert_equal "$(sample_hashes "ds-$a")" "$want"
	done
}

@test "pack: archives are recognised by their bytes, not their names" {
	mkfixture src
	chute pack src -o dir
	(cd src && tar -czf ../a.tar.gz -- *)
	mv a.tar.gz data.bin
	run -0 chute pack data.bin -o ds
	assert_equal "$(sample_hashes ds)" "$(sample_hashes dir)"
}

@test "pack: a tar made with 'tar -C DIR .' (members ./KEY.FIELD) packs like the folder" {
	mkfixture src
	chute pack src -o dir
	tar -C src -cf dot.tar .
	run -0 chute pack dot.tar -o ds
	assert_equal "$(sample_hashes ds)" "$(sample_hashes dir)"
}

@test "pack: several sources go into one dataset" {
	mkfiles one a.txt=1 b.txt=2
	mkfiles two c.txt=3
	tar -C two -cf two.tar c.txt
	run -0 chute pack one two.tar -o ds
	assert_output --regexp '^packed 3 samples '
	run -0 chute ls ds
	assert_output "$(printf 'a\ttxt:1\nb\ttxt:1\nc\ttxt:1')"
}

# ---------------------------------------------------------------- options

@test "pack: --label-from dir adds cls and stores the class map in the manifest" {
	mkfiles src cat/1.jpg=x cat/2.jpg=y dog/3.jpg=z ant/4.jpg=w
	run -0 chute pack --label-from dir src -o ds
	assert_equal "$(mjson ds 'm["classes"]')" '["ant", "cat", "dog"]'
	run -0 chute cat ds ant/4 -f cls
	assert_output 0
	run -0 chute cat ds cat/2 -f cls
	assert_output 1
	run -0 chute cat ds dog/3 -f cls
	assert_output 2
	run -0 chute ls ds
	assert_line --index 0 --regexp $'^ant/4\tcls:[0-9]+ jpg:1$'
}

@test "pack: output is byte-identical with --jobs 1 and --jobs 4" {
	mkfixture src
	mkdir j1 j4
	run -0 chute pack -j 1 -s 4K -b 1K src -o j1/ds
	run -0 chute pack -j 4 -s 4K -b 1K src -o j4/ds
	local files f
	# .chute/stat records inodes and mtimes: the one file that differs
	files=$(cd j1/ds && find . -type f ! -path ./.chute/stat | sort)
	assert_equal "$(cd j4/ds && find . -type f ! -path ./.chute/stat | sort)" "$files"
	[ "$(echo "$files" | grep -c '\.chs$')" -gt 1 ] || fail "expected several shards: $files"
	for f in $files; do
		cmp "j1/ds/$f" "j4/ds/$f" || fail "$f differs between --jobs 1 and --jobs 4"
	done
}

@test "pack: a file list larger than --memory is sorted on disk, to the same bytes" {
	"$PYTHON" "$REPO_ROOT/scripts/gen-data.py" text src --count 12000 --seed 3 -q
	mkdir small big
	# --memory 1M holds about 8,000 files: 24,000 make three sorted runs
	run -0 chute pack -m 1M -s 1M src -o small/ds
	run -0 chute pack src -s 1M -o big/ds
	run -0 diff -r -x stat small/ds big/ds
	[ "$(ls big/ds/shards | wc -l)" -gt 1 ] || fail "expected several shards"
	run -0 chute verify --deep small/ds
}

@test "pack: packing twice gives the same bytes and the same id" {
	mkfixture src
	mkdir a b
	chute pack src -o a/ds
	chute pack src -o b/ds
	# all but the stat cache (inodes, mtimes), history included
	run -0 diff -r -x stat a/ds b/ds
	assert_file_exists a/ds/.chute/stat
}

@test "pack: --shard-size 5s puts 5 samples in each shard" {
	mkrandom src 12 100
	run -0 chute pack -s 5s src -o ds
	assert_output --regexp '^packed 12 samples \(1\.20 kB\) into 3 shards'
	assert_equal "$(mjson ds '[s["samples"] for s in m["shards"]]')" '[5, 5, 2]'
	run -0 bash -c 'chute ls --json ds | '"$PYTHON"' -c "
import collections, json, sys
c = collections.Counter(json.loads(l)[\"shard\"] for l in sys.stdin)
print(sorted(c.values()))"'
	assert_output '[2, 5, 5]'
}

@test "pack: --shard-size 1K ends each shard before the sample that would pass 1K" {
	mkrandom src 20 300
	run -0 chute pack -s 1K src -o ds
	assert_output --regexp '^packed 20 samples \(6\.00 kB\) into 7 shards'
	assert_equal "$(mjson ds '[s["samples"] for s in m["shards"]]')" '[3, 3, 3, 3, 3, 3, 2]'
	run -0 chute verify ds
}

@test "pack: a sample larger than --shard-size gets a shard of its own" {
	mkrandom src 3 3000
	run -0 chute pack -s 1K src -o ds
	assert_output --regexp '^packed 3 samples \(9\.00 kB\) into 3 shards'
}

@test "pack: --block-size 1K ends each block before the sample that would pass 1K" {
	mkrandom src 20 300
	run -0 chute pack -b 1K src -o ds
	run -0 chute verify ds
	assert_output --regexp '^ok: 1 shard, 7 blocks, 20 samples, '
	chute pack src -o big
	run -0 chute verify big
	assert_output --regexp '^ok: 1 shard, 1 block, 20 samples, '
}

@test "pack: --level 1 and --level 19 both read back; levels outside 0..19 are refused" {
	mkfixture src
	run -0 chute pack -l 1 src -o l1
	run -0 chute pack -l 19 src -o l19
	assert_equal "$(sample_hashes l19)" "$(sample_hashes l1)"
	run -0 chute verify --deep l19
	mkdir out
	run -2 chute pack -l -1 src -o out/ds
	assert_output --regexp '^chute pack: '
	run -2 chute pack --level 20 src -o out/ds
	assert_output --regexp '^chute pack: '
	run -2 chute pack -j 0 src -o out/ds
	assert_output --regexp '^chute pack: '
	assert_no_entries out
}

@test "pack: samples are sorted by key, and --keep-order keeps the list's order" {
	mkfiles src c.txt=3 a.txt=1 b.txt=2
	printf 'src/c.txt\nsrc/a.txt\nsrc/b.txt\n' >list
	chute pack - -o sorted <list
	run -0 bash -c "chute ls sorted | cut -f1 | sed 's#.*/##' | tr '\n' ' '"
	assert_output 'a b c '
	chute pack --keep-order - -o kept <list
	run -0 bash -c "chute ls kept | cut -f1 | sed 's#.*/##' | tr '\n' ' '"
	assert_output 'c a b '
	run -0 chute cat kept '#0'
	assert_output 3
}

@test "pack: --dict trains a dictionary and the samples read back exactly" {
	"$PYTHON" - <<'EOF'
import os, random
rng = random.Random(3)
os.makedirs("src")
words = ["label", "width", "height", "bbox", "score", "class", "person", "car", "tree"]
for i in range(400):
    body = ", ".join('"%s": %d' % (rng.choice(words), rng.randint(0, 999)) for _ in range(12))
    with open("src/s%04d.json" % i, "w") as f:
        f.write("{%s}\n" % body)
EOF
	run -0 chute pack --dict -s 200s src -o ds
	local shard
	for shard in ds/shards/*.chs; do
		run -0 "$PYTHON" -c '
import struct, sys
flags, dict_size = struct.unpack_from("<IQ", open(sys.argv[1], "rb").read(64), 12)
assert flags & 1 and dict_size > 0, (flags, dict_size)' "$shard"
	done
	run -0 chute verify --deep ds
	local i
	for i in 0000 0017 0199 0200 0399; do
		chute cat ds "s$i" -f json >got
		cmp got "src/s$i.json" || fail "sample s$i does not read back"
	done
	# and without --dict there is none
	chute pack src -o nodict
	run -0 "$PYTHON" -c '
import struct, sys
assert struct.unpack_from("<I", open(sys.argv[1], "rb").read(64), 12)[0] & 1 == 0' "$(shard_of nodict)"
}

@test "pack: the manifest's xxh3_128 of each shard is what xxhsum -H2 says" {
	mkfixture src
	chute pack -s 8K src -o ds
	local n i path want size
	n=$(mjson ds 'len(m["shards"])')
	for ((i = 0; i < n; i++)); do
		path=$(mjson ds "m['shards'][$i]['path']")
		want=$(mjson ds "m['shards'][$i]['xxh3_128']")
		# (xxhsum writes a progress line to stderr: keep it out)
		assert_equal "$(xxhsum -H2 "ds/$path" 2>/dev/null)" "$want  ds/$path"
		size=$(stat -c %s "ds/$path")
		assert_equal "$(mjson ds "m['shards'][$i]['bytes']")" "$size"
	done
}

# ---------------------------------------------------------------- atomicity

@test "pack: a failed pack leaves an existing dataset untouched and no temporary folder" {
	mkfixture src
	mkdir out
	chute pack src -o out/ds
	cp -a out/ds saved
	(cd src && tar -czf ../good.tar.gz -- *)
	head -c "$(($(stat -c %s good.tar.gz) / 2))" good.tar.gz >bad.tar.gz
	mkfiles more z.txt=zzz
	run -2 chute pack more bad.tar.gz -o out/ds
	run -0 diff -r saved out/ds
	run -0 ls -A out
	assert_output ds
}

@test "pack: a sample over --max-sample-size is refused before anything is written, naming the file" {
	mkfiles src a.txt=small
	head -c 700 /dev/zero >src/b.bin
	head -c 700 /dev/zero >src/b.txt
	run -2 chute pack -q --max-sample-size 1K src -o ds
	assert_output "chute pack: --max-sample-size: sample 'b' is over the size limit of 1024 bytes with 'src/b.txt' (700 bytes)"
	assert_not_exist ds
	run -0 ls -A
	assert_output src
	run -2 chute pack -q --max-sample-size 17G src -o ds
	assert_output --partial "--max-sample-size: the sample size limit is over 17179869184 bytes"
	run -0 chute pack -q --max-sample-size 2K src -o ds
}

# A killed pack leaves OUT_PARENT/.OUT.tmp-PID unlocked.  `exec` gives chute
# the shell's PID, the case of PID 1 in every container: its own
# temporary's name is taken by a dead run's.
@test "pack: a dead run's temporary, even one named with this run's PID, is removed and does not block" {
	mkfixture src
	mkdir out out/.ds.tmp-1
	echo left >out/.ds.tmp-1/junk
	run -0 bash -c 'mkdir out/.ds.tmp-$$ && exec chute pack -q src -o out/ds'
	run -0 ls -A out
	assert_output ds
	chute verify out/ds
}

@test "pack: a live run's locked temporary is left alone and a second pack to its output exits 2" {
	mkfixture src
	mkdir out out/.ds.tmp-77
	# one process holding the lock, so that killing it frees the lock
	(flock 9 && exec sleep 30) 9<out/.ds.tmp-77 3>&- &
	local holder=$!
	wait_locked out/.ds.tmp-77
	run -2 chute pack -q src -o out/ds
	kill "$holder"
	wait "$holder" || true
	assert_output "chute pack: another chute pack is writing 'out/ds' (its temporary 'out/.ds.tmp-77' is locked)"
	run -0 ls -A out
	assert_output .ds.tmp-77
}

@test "pack: an existing folder that is not a dataset is refused and left alone" {
	mkfiles src a.txt=1
	mkfiles out/precious notes.txt=keep
	run -2 chute pack src -o out/precious
	assert_one_line_error pack
	assert_output --partial out/precious
	run -0 ls -A out/precious
	assert_output notes.txt
	run -0 ls -A out
	assert_output precious
}

@test "pack: an existing empty folder is filled" {
	mkfiles src a.txt=1
	mkdir -p out/ds
	run -0 chute pack src -o out/ds
	assert_file_exists out/ds/manifest.json
	run -0 ls -A out
	assert_output ds
}

@test "pack: a pack over an existing dataset replaces it" {
	mkfiles a x.txt=1 y.txt=2
	mkfiles b z.txt=3
	mkdir out
	chute pack a -o out/ds
	run -0 chute pack b -o out/ds
	run -0 chute ls out/ds
	assert_output "$(printf 'z\ttxt:1')"
	run -0 ls -A out
	assert_output ds
}

# interrupt_pack SIGNAL: starts a pack that takes seconds, sends SIGNAL once
# it is writing, and leaves its exit status in $status.
interrupt_pack() {
	mkdir big out
	# ~25 MB of base64 text: compressible, so zstd -19 on one worker takes
	# seconds while generating it takes a fraction of one
	local i
	for i in 0 1 2 3 4 5 6 7 8 9 10 11; do
		head -c 1500000 /dev/urandom | base64 -w 100 >"big/f$i.txt"
	done
	# background jobs of a non-interactive shell ignore SIGINT; start chute
	# with the default disposition, as a terminal would
	"$PYTHON" -c '
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' chute pack -q -j 1 -l 19 big -o out/ds 2>err &
	local pid=$!
	# wait until it has started writing beside out/ds (at most ~3 s)
	for i in $(seq 60); do
		[ -n "$(ls -A out)" ] && break
		sleep 0.05
	done
	sleep 0.2
	kill "-$1" "$pid" || fail "chute pack finished before it could be interrupted"
	status=0
	wait "$pid" || status=$?
}

@test "pack: SIGINT stops a pack with exit 130 and leaves nothing behind" {
	interrupt_pack INT
	assert_equal "$status" 130
	assert_no_entries out
}

@test "pack: SIGTERM stops a pack with exit 143 and leaves nothing behind" {
	interrupt_pack TERM
	assert_equal "$status" 143
	assert_no_entries out
}

# ---------------------------------------------------------------- bad input

@test "pack: an unreadable file is a one-line error and nothing is written" {
	if [ "$(id -u)" -eq 0 ]; then
		skip "root reads files whatever their mode (the dangling symlink test covers this path)"
	fi
	mkfiles src a.txt=1 b.txt=2
	chmod 000 src/b.txt
	mkdir out
	run -2 chute pack src -o out/ds
	assert_one_line_error pack
	assert_output --partial b.txt
	assert_no_entries out
}

@test "pack: a dangling symlink is a one-line error naming it, and nothing is written" {
	mkfiles src a.txt=1
	ln -s nowhere src/b.txt
	mkdir out
	run -2 chute pack src -o out/ds
	assert_one_line_error pack
	assert_output --partial b.txt
	assert_no_entries out
}

@test "pack: a listed file that does not exist is a one-line error" {
	mkfiles src a.txt=1
	mkdir out
	printf 'src/a.txt\nsrc/missing.txt\n' >list
	run -2 chute pack - -o out/ds <list
	assert_one_line_error pack
	assert_output --partial missing.txt
	assert_no_entries out
}

@test "pack: a source that does not exist is a one-line error" {
	mkdir out
	run -2 chute pack nosuchdir -o out/ds
	assert_one_line_error pack
	assert_output --partial nosuchdir
	assert_no_entries out
}

@test "pack: the same KEY.FIELD from two sources is an error naming both" {
	mkfiles one a.jpg=1 b.jpg=2
	mkfiles two a.jpg=3
	mkdir out
	run -2 chute pack one two -o out/ds
	assert_one_line_error pack
	assert_output --regexp 'one/a\.jpg.*two/a\.jpg|two/a\.jpg.*one/a\.jpg'
	assert_no_entries out
}

@test "pack: an empty folder is a one-line error" {
	mkdir empty out
	run -2 chute pack empty -o out/ds
	assert_one_line_error pack
	assert_no_entries out
}

@test "pack: an empty list on stdin is a one-line error" {
	mkdir out
	run -2 chute pack - -o out/ds </dev/null
	assert_one_line_error pack
	assert_no_entries out
}

@test "pack: a corrupt archive is a one-line error" {
	mkfixture src
	(cd src && tar -czf ../good.tar.gz -- *)
	head -c "$(($(stat -c %s good.tar.gz) / 2))" good.tar.gz >bad.tar.gz
	mkdir out
	run -2 chute pack bad.tar.gz -o out/ds
	assert_one_line_error pack
	assert_output --partial bad.tar.gz
	assert_no_entries out
}

# mktar NAME MEMBER: a tar holding good.txt and MEMBER (written by Python,
# since GNU tar strips leading / and ../).
mktar() {
	"$PYTHON" - "$1" "$2" <<'EOF' || fail "cannot write $1"
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for name in ("good.txt", sys.argv[2]):
        ti = tarfile.TarInfo(name)
        ti.size = 1
        t.addfile(ti, io.BytesIO(b"y"))
EOF
}

@test "pack: an archive member '../evil' is refused" {
	mktar dotdot.tar ../evil.txt
	mkdir out
	run -2 chute pack dotdot.tar -o out/ds
	assert_one_line_error pack
	assert_output --partial ../evil.txt
	assert_no_entries out
	assert_file_not_exists ../evil.txt
}

@test "pack: an archive member with an absolute path is refused" {
	mktar abs.tar /abs.txt
	mkdir out
	run -2 chute pack abs.tar -o out/ds
	assert_one_line_error pack
	assert_output --partial /abs.txt
	assert_no_entries out
}

@test "pack: a full disk is a one-line error and the dataset there is untouched" {
	mkdir disk
	mount -t tmpfs -o size=1m tmpfs disk 2>mount.err ||
		skip "cannot mount a 1 MiB tmpfs (needs root): $(cat mount.err)"
	mkfiles small a.txt=1 b.txt=2
	chute pack small -o disk/ds
	cp -a disk/ds saved
	# incompressible, so shards need more than the 1 MiB there is
	mkrandom big 8 262144
	run -2 chute pack big -o disk/ds
	assert_one_line_error pack
	assert_output --partial "No space left on device"
	run -0 diff -r saved disk/ds
	run -0 ls -A disk
	assert_output ds
}

@test "pack: a shard ends at 65536 samples unless --shard-size gives a count" {
	"$PYTHON" - <<'EOF' || fail "cannot make tiny.tar"
import io, tarfile
with tarfile.open("tiny.tar", "w") as t:
    for i in range(65537):
        ti = tarfile.TarInfo("k%06d.txt" % i)
        ti.size = 1
        t.addfile(ti, io.BytesIO(b"x"))
EOF
	run -0 chute pack -q tiny.tar -o capped
	assert_output --partial "packed 65537 samples"
	assert_output --partial "into 2 shards"
	run -0 chute pack -q -s 1G tiny.tar -o capped1g
	assert_output --partial "into 2 shards"
	run -0 chute pack -q -s 70000s tiny.tar -o one
	assert_output --partial "into 1 shard,"
}

# ---------------------------------------------------------------- --part

# keys_of DS: the keys of dataset DS, sorted.
keys_of() {
	chute ls "$1" | cut -f1 | LC_ALL=C sort
}

# part_rule N: each key on stdin and its part, XXH3-64 of KEY mod N, as chute-pack(1) says, in Python.
part_rule() {
	"$PYTHON" -c 'import sys, xxhash
n = int(sys.argv[1])
for key in sys.stdin.read().split():
    print(key, xxhash.xxh3_64_intdigest(key.encode()) % n)' "$1"
}

@test "pack: --part I/N splits the samples into disjoint parts that cover them all, by the documented rule" {
	mkfixture src
	local part # not i: bats' run sets its own
	for part in 0 1 2; do
		run -0 chute pack -q --part "$part/3" src -o "p$part"
		assert_output --regexp "^part $part of 3: packed [0-9]+ samples"
		keys_of "p$part" >"keys$part"
		run -0 chute verify "p$part"
		run -0 grep -A3 '"part"' "p$part/manifest.json"
		assert_output --partial "\"index\": $part"
		assert_output --partial '"count": 3'
	done
	chute pack -q src -o whole >/dev/null
	keys_of whole >all
	run -0 bash -c 'LC_ALL=C sort keys0 keys1 keys2 | uniq -d'
	assert_output ""
	run -0 bash -c 'LC_ALL=C sort keys0 keys1 keys2 | cmp - all'
	for part in 0 1 2; do
		part_rule 3 <"keys$part" >"rule$part"
		run -0 awk -v i="$part" '$2 != i' "rule$part"
		assert_output ""
	done
	run -0 chute manifest p1
	assert_output --partial ", part 1 of 3"
}

@test "pack: --part takes its default from a Slurm array, counted from its first task" {
	mkfixture src
	chute pack -q --part 2/4 src -o explicit >/dev/null
	SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_COUNT=4 \
		run -0 chute pack -q src -o slurm
	assert_output --regexp "^part 2 of 4: "
	SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=4 \
		run -0 chute pack -q src -o slurm1
	assert_output --regexp "^part 2 of 4: "
	run -0 diff <(keys_of explicit) <(keys_of slurm)
	run -0 diff <(keys_of explicit) <(keys_of slurm1)
	# an explicit --part wins, and none packs everything
	SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_COUNT=4 \
		run -0 chute pack -q --part 0/2 src -o over
	assert_output --regexp "^part 0 of 2: "
	SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_COUNT=4 \
		run -0 chute pack -q --part none src -o all
	assert_output --regexp "^packed 20 samples"
	# an id alone, without a count, is no array
	SLURM_ARRAY_TASK_ID=2 run -0 chute pack -q src -o plain
	assert_output --regexp "^packed 20 samples"
}

@test "pack: a Slurm array with a step or gaps is refused before anything is read" {
	mkfixture src
	SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_MAX=14 \
		SLURM_ARRAY_TASK_STEP=2 SLURM_ARRAY_TASK_COUNT=8 \
		run -2 chute pack -q src -o ds
	assert_output "chute pack: a Slurm array with a step (SLURM_ARRAY_TASK_STEP=2) leaves parts without a task: use --array=FIRST-LAST with no step, or give --part I/N"
	SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_MAX=9 \
		SLURM_ARRAY_TASK_STEP=1 SLURM_ARRAY_TASK_COUNT=3 \
		run -2 chute pack -q --parts 3 src -o ds
	assert_output "chute pack: a Slurm array with gaps (3 tasks from 0 to 9) leaves parts without a task: use --array=FIRST-LAST, or give --part I/N"
	assert_file_not_exists ds
	# a contiguous array, as Slurm describes it, packs its part
	SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=4 \
		SLURM_ARRAY_TASK_STEP=1 SLURM_ARRAY_TASK_COUNT=4 \
		run -0 chute pack -q src -o ds
	assert_output --regexp "^part 2 of 4: "
	# and --part I/N is taken whatever the array
	SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_STEP=2 SLURM_ARRAY_TASK_COUNT=8 \
		run -0 chute pack -q --part 1/8 src -o explicit
	assert_output --regexp "^part 1 of 8: "
}

@test "pack: --parts N takes the index from JOB_COMPLETION_INDEX" {
	mkfixture src
	chute pack -q --part 1/3 src -o explicit >/dev/null
	JOB_COMPLETION_INDEX=1 run -0 chute pack -q --parts 3 src -o k8s
	assert_output --regexp "^part 1 of 3: "
	run -0 diff <(keys_of explicit) <(keys_of k8s)
	# without --parts the index says nothing
	JOB_COMPLETION_INDEX=1 run -0 chute pack -q src -o plain
	assert_output --regexp "^packed 20 samples"
	JOB_COMPLETION_INDEX=1 run -0 chute pack -q --part 0/2 src -o over
	assert_output --regexp "^part 0 of 2: "
}

@test "pack: bad --part and --parts values exit 2 before anything is read" {
	mkfixture src
	local bad
	for bad in 0/0 3/2 2/2 junk 1/ /2 -1/2 1/2x 1/1048577 " 1/2"; do
		run -2 chute pack -q --part "$bad" src -o ds
		assert_output "chute pack: invalid value '$bad' for --part: expected I/N, part I from 0 to N-1 of N parts (N from 1 to 1048576), or none"
	done
	run -2 chute pack -q --parts 3 src -o ds
	assert_output "chute pack: --parts 3 needs the index of the part: set \$JOB_COMPLETION_INDEX, or give --part I/N"
	JOB_COMPLETION_INDEX=3 run -2 chute pack -q --parts 3 src -o ds
	assert_output "chute pack: part 3 of 3: parts are numbered from 0 to 2"
	JOB_COMPLETION_INDEX=x run -2 chute pack -q --parts 3 src -o ds
	assert_output --partial "JOB_COMPLETION_INDEX"
	run -2 chute pack -q --part 1/2 --parts 2 src -o ds
	assert_output "chute pack: give either --part I/N or --parts N, not both"
	run -2 chute pack -q --parts 0 src -o ds
	SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_COUNT=4 run -2 chute pack -q src -o ds
	assert_output "chute pack: part 5 of 4: parts are numbered from 0 to 3"
	assert_file_not_exists ds
}
