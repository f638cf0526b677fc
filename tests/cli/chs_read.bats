#!/usr/bin/env bats
# scripts/chs_read.py, a reader written from man/chute-shard.5 alone, must
# read every byte chute writes exactly as chute does: a disagreement is a
# bug in the writer or in the page.

load helper

chs_read() {
	"$PYTHON" "$REPO_ROOT/scripts/chs_read.py" "$@"
}

# mksamples DIR KIND...: seeded fixtures, one KIND at a time:
#   mixed    random bytes, text, several fields, nested keys, dotted field
#            names, an empty field, keys whose order depends on unsigned
#            bytes and on prefixes
#   small N  N small text samples with two fields (for --dict)
#   large N  N incompressible samples of 1.5 MiB (raw blocks)
#   many N   N samples of 300-900 bytes, half text, half random
# Made once per test file for each KIND and N (`cached`), then copied.
mksamples() {
	cached _mksamples "$@"
}
_mksamples() {
	"$PYTHON" - "$@" <<'EOF' || fail "cannot generate $*"
import os, random, sys
root, kind = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 0
rng = random.Random("chs_read:" + kind)
words = "alpha beta gamma delta shard block index key field sample".split()
def put(rel, data):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
def text(lo, hi):
    return " ".join(rng.choice(words) for _ in range(rng.randint(lo, hi))).encode() + b"\n"
if kind == "mixed":
    for i in range(30):
        key = "%s/%s/s%02d" % (("cat", "dog")[i % 2], "abc"[i % 3], i)
        put(key + ".bin", rng.randbytes(rng.randint(1, 5000)))
        put(key + ".txt", text(1, 300))
        if i % 3 == 0:
            put(key + ".seg.png", bytes(rng.getrandbits(2) for _ in range(rng.randint(10, 800))))
        if i % 5 == 0:
            put(key + ".cls", b"%d" % (i % 7))
    put("empty.txt", b"")
    put("empty.bin", rng.randbytes(10))
    # unsigned byte order ("z" < "é") and shorter-first prefixes
    for k in ("z", "\u00e9t\u00e9", "a", "a-b", "a/b", "ab", "B"):
        put(k + ".txt", k.encode() + b"\n")
elif kind == "small":
    for i in range(n):
        key = "%02d/item%05d" % (i % 10, i)
        put(key + ".json", b'{"id": %d, "label": "%s", "score": %d}\n' % (i, rng.choice(words).encode(), rng.randint(0, 99)))
        put(key + ".txt", text(3, 20))
elif kind == "large":
    for i in range(n):
        put("big%02d.raw" % i, rng.randbytes(3 << 19))
elif kind == "many":
    for i in range(n):
        put("m/%04d.txt" % i, text(20, 60)[:rng.randint(300, 900)])
        if i % 2:
            put("m/%04d.bin" % i, rng.randbytes(rng.randint(300, 900)))
else:
    sys.exit("unknown kind " + kind)
EOF
}

# check_dataset DS [SRC]: for every shard, chs_read.py must validate it,
# list what `chute ls` lists, hash it as xxhsum and the manifest do, and
# give, for every sample and field, the bytes chute gives (and, with SRC,
# the bytes of SRC/KEY.FIELD).
check_dataset() {
	local ds=$1 src=${2:-} shard n=0 h
	local -a shards=("$ds"/shards/*.chs)
	[ -e "${shards[0]}" ] || fail "no shard in $ds/shards"
	mkdir -p chs.list chs.dump
	run -0 chute export "$ds" -o chs.tar
	for shard in "${shards[@]}"; do
		run -0 chs_read "$shard"
		printf '%s\n' "$output" >"chs.list/$n"
		run -0 chute ls "$shard"
		printf '%s\n' "$output" >"chs.list/$n.chute"
		run -0 diff -u "chs.list/$n.chute" "chs.list/$n"
		run -0 chs_read "$shard" --dump "chs.dump/$n"
		h=$(chs_read "$shard" --hash)
		assert_equal "$h" "$(xxhsum -H2 "$shard" | cut -d' ' -f1)"
		grep -qF "\"$h\"" "$ds/manifest.json" ||
			fail "hash $h of $shard is not in $ds/manifest.json"
		mkdir -p "chs.tar/$n" && tar -xf "chs.tar/$(basename "$shard" .chs).tar" \
			-C "chs.tar/$n" || fail "cannot extract the export of $shard"
		n=$((n + 1))
	done
	chute ls "$ds" >all.chute
	cat $(seq -f 'chs.list/%g' 0 $((n - 1))) >all
	run -0 diff -u all.chute all
	for ((i = 0; i < n; i++)); do
		compare_fields "$ds" "chs.list/$i" "chs.dump/$i" "$src" "chs.tar/$i"
	done
}

# compare_fields DS LIST DUMP SRC [EXPORTED]: every KEY.FIELD of LIST (a
# chs_read.py listing) has the size LIST says and the same bytes in DUMP
# (chs_read.py's), EXPORTED (the shard's tar from `chute export`,
# extracted) and SRC; and `chute cat` reads the same bytes: every field of
# a small shard, 40 spread over a large one (the 1600 fields of a --dict
# shard took minutes under the sanitizers, which EXPORTED checks in one).
# One `chute cat` for the samples of each field name, each field's bytes
# then compared at its place in the output.
compare_fields() {
	local ds=$1 list=$2 dump=$3 src=$4 exported=${5:-} key name size off i
	"$PYTHON" - "$list" "$dump" "$src" "$exported" <<'EOF' || fail "$list: fields differ"
import os, sys
listing, dump, src, exported = sys.argv[1:]
def read(folder, rel):
    with open(os.path.join(folder, rel), "rb") as f:
        return f.read()
count = 0
for line in open(listing, "rb"):
    key, _, fields = line.rstrip(b"\n").partition(b"\t")
    for f in fields.split():
        name, _, size = f.rpartition(b":")
        rel = os.fsdecode(key + b"." + name)
        data = read(dump, rel)
        if len(data) != int(size):
            sys.exit("%s: listed %s bytes, read %d" % (rel, size.decode(), len(data)))
        for folder, what in ((exported, "chute export"), (src, "the source file")):
            if folder and read(folder, rel) != data:
                sys.exit("%s: chs_read.py and %s disagree" % (rel, what))
        count += 1
if count == 0:
    sys.exit("no field compared in " + listing)
if exported:
    n = sum(len(files) for _, _, files in os.walk(exported))
    if n != count:
        sys.exit("chute export wrote %d fields, chs_read.py listed %d" % (n, count))
EOF
	# KEY, FIELD and SIZE of each field, a line each
	awk -F'\t' '{ n = split($2, f, " "); for (i = 1; i <= n; i++) {
		size = f[i]; sub(/.*:/, "", size); sub(/:[0-9]+$/, "", f[i])
		print $1 "\t" f[i] "\t" size } }' "$list" >"$list.fields"
	awk -v every="$((($(wc -l <"$list.fields") + 39) / 40))" \
		'(NR - 1) % every == 0' "$list.fields" >"$list.cat"
	local -a keys=() names=() sizes=() group samples
	local -A seen=()
	while IFS=$'\t' read -r key name size; do
		keys+=("$key") names+=("$name") sizes+=("$size")
	done <"$list.cat"
	for name in "${names[@]}"; do
		[ -z "${seen[$name]:-}" ] || continue
		seen[$name]=1
		group=() samples=()
		for i in "${!keys[@]}"; do
			if [ "${names[$i]}" = "$name" ]; then
				group+=("$i") samples+=("${keys[$i]}")
			fi
		done
		chute cat "$ds" --field "$name" "${samples[@]}" >got ||
			fail "chute cat $ds --field $name (${#group[@]} samples) failed"
		off=0
		for i in "${group[@]}"; do
			key=${keys[$i]}
			cmp -i "$off:0" -n "${sizes[$i]}" got "$dump/$key.$name" ||
				fail "chute cat and chs_read.py disagree on $key.$name"
			off=$((off + sizes[i]))
		done
		size=$(stat -c %s got)
		[ "$size" = "$off" ] ||
			fail "chute cat wrote $size bytes of field $name, chs_read.py listed $off"
	done
}

# check_shard SHARD: chs_read.py and chute agree on a lone shard (listing
# and every field's bytes).
check_shard() {
	local shard=$1
	mkdir -p one
	run -0 chs_read "$shard"
	printf '%s\n' "$output" >one/list
	run -0 chute ls "$shard"
	printf '%s\n' "$output" >one/list.chute
	run -0 diff -u one/list.chute one/list
	run -0 chs_read "$shard" --dump one/dump
	compare_fields "$shard" one/list one/dump ""
}

# mutate SRC OUT CASE [paged]: OUT is SRC with one change the page allows
# or forbids, every checksum recomputed so that only the rule itself can
# catch it.  The index is rewritten raw (index_codec 0), as one zstd frame
# (1), or with "paged" in 8 KiB pages (2).
mutate() {
	mutate_each "$1" "${4:-whole}" "$2" "$3"
}

# mutate_each SRC paged|whole OUT CASE [OUT CASE]...: mutate for each
# case, in one Python process.
mutate_each() {
	PYTHONPATH="$BATS_TEST_DIRNAME" "$PYTHON" - "$@" <<'EOF2' || fail "cannot mutate $1 (${*:3})"
import struct, sys, xxhash, zstandard
from shard_index import decoded_index
h64 = xxhash.xxh3_64_intdigest
src, paged = sys.argv[1], sys.argv[2] == "paged"
def make(out, case):
    d = open(src, "rb").read()
    hdr, foot = bytearray(d[:64]), d[-64:]
    ioff, isz, iraw, _, ns, nb, codec = struct.unpack_from("<QQQQQII", foot)
    ix, body = bytearray(decoded_index(d)), bytearray(d[64:ioff])
    E, = struct.unpack_from("<Q", ix, 8)
    names_size, keys_size = struct.unpack_from("<QQ", ix, 24)
    ST = 64 + 40 * nb
    FE = ST + 32 * ns
    KO = FE + 16 * E
    NT = KO + 4 * ns
    KT = NT + names_size
    u16 = lambda off, v: struct.pack_into("<H", ix, off, v)
    u32 = lambda off, v: struct.pack_into("<I", ix, off, v)
    u64 = lambda off, v: struct.pack_into("<Q", ix, off, v)
    out_codec, trailer, gap, raw_size = 1, b"", b"", None
    if case == "raw-index": out_codec = 0
    elif case == "minor0": struct.pack_into("<H", hdr, 10, 0)
    elif case == "minor7": struct.pack_into("<H", hdr, 10, 7)
    elif case == "major2": struct.pack_into("<H", hdr, 8, 2)
    elif case == "flag2": hdr[12] |= 2
    elif case == "header-reserved": hdr[40] = 1
    elif case == "dict-hash-without-dict": struct.pack_into("<Q", hdr, 24, 1)
    elif case == "index-reserved": ix[50] = 1
    elif case == "block-reserved": u32(64 + 36, 1)
    elif case == "field-reserved": u32(FE + 12, 1)
    elif case == "key-order-unsorted":
        a, b = struct.unpack_from("<II", ix, KO); u32(KO, b); u32(KO + 4, a)
    elif case == "key-order-repeated": u32(KO + 4, struct.unpack_from("<I", ix, KO)[0])
    elif case == "fields-unsorted":
        for i in range(ns):
            n, f = struct.unpack_from("<HI", ix, ST + 32 * i + 26)
            if n >= 2:
                a = FE + 16 * f
                ix[a:a + 32] = ix[a + 16:a + 32] + ix[a:a + 16]
                break
        else:
            sys.exit("no sample with two fields")
    elif case == "name-repeated":
        names = bytes(ix[NT:KT]).split(b"\0")[:-1]
        names[1] = names[0]
        new = b"".join(n + b"\0" for n in names)
        ix[NT:KT] = new; u64(24, len(new))
    elif case == "key-with-nul": ix[KT] = 0
    elif case == "key-empty": u16(ST + 24, 0)
    elif case == "no-fields": u16(ST + 26, 0)
    elif case == "block-out-of-range": u32(ST + 16, nb)
    elif case == "name-id-out-of-range": u32(FE + 8, 1 << 30)
    elif case == "sample-past-block": u64(ST + 8, struct.unpack_from("<Q", ix, 64 + 16)[0])
    elif case == "bytes-after-index-frame": trailer = b"\0\1\2"
    elif case == "gap-before-index": gap = b"\0"
    elif case == "codec2-without-dict": u32(64 + 32, 2)
    elif case == "codec9": u32(64 + 32, 9)
    elif case == "raw-block-size-mismatch":
        for b in range(nb):
            if struct.unpack_from("<I", ix, 64 + 40 * b + 32)[0] == 0:
                u64(64 + 40 * b + 16, struct.unpack_from("<Q", ix, 64 + 40 * b + 16)[0] + 1)
                break
        else:
            sys.exit("no raw block")
    elif case == "sections-short": u64(32, keys_size - 1)
    elif case == "count-overflow":  # 36 * 2^62 wraps to 0 in 64 bits
        ns += 1 << 62; u64(0, ns)
    elif case == "entries-overflow": u64(8, E + (1 << 60))
    elif case == "sizes-overflow":
        u64(24, names_size + (1 << 63)); u64(32, keys_size + (1 << 63))
    elif case == "huge-raw-index": raw_size = 1 << 40
    else:
        sys.exit("unknown case " + case)
    struct.pack_into("<Q", hdr, 56, h64(bytes(hdr[:56])))
    stored = bytes(ix) if out_codec == 0 else zstandard.ZstdCompressor().compress(bytes(ix))
    hashed = stored
    if paged and out_codec == 1:
        P, out_codec = 8192, 2
        frames = [zstandard.ZstdCompressor().compress(bytes(ix[a:a + P]))
                  for a in range(0, len(ix), P)]
        hashed = struct.pack("<II", P, len(frames)) + b"".join(
            struct.pack("<IIQ", len(fr), 0, h64(fr)) for fr in frames)
        stored = hashed + b"".join(frames)
    stored += trailer
    f = bytearray(64)
    struct.pack_into("<QQQQQII", f, 0, 64 + len(body) + len(gap), len(stored),
                     raw_size or len(ix), h64(hashed), ns, nb, out_codec)
    struct.pack_into("<Q", f, 48, h64(bytes(f[:48])))
    f[56:] = b"CHSFOOT1"
    open(out, "wb").write(bytes(hdr) + bytes(body) + gap + stored + bytes(f))
for out, case in zip(sys.argv[3::2], sys.argv[4::2]):
    make(out, case)
EOF2
}

# chs_read_refuses SHARD...: chs_read.py exits 1 on each SHARD, as `run -1
# chs_read SHARD` checks, its main() run for each in one Python process
# (an exception it lets out counts as the exit 1 it would be).
chs_read_refuses() {
	"$PYTHON" - "$REPO_ROOT/scripts" "$@" <<'EOF' || fail "chs_read.py accepted a shard"
import contextlib, io, sys
sys.path.insert(0, sys.argv[1])
import chs_read
wrong = []
for shard in sys.argv[2:]:
    out = io.TextIOWrapper(io.BytesIO())
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            rc = chs_read.main([shard])
        except SystemExit as e:
            rc = e.code
        except Exception:
            rc = 1
    if rc != 1:
        wrong.append("%s (exit %s)" % (shard, rc))
if wrong:
    sys.exit("chs_read.py did not exit 1 on: " + ", ".join(wrong))
EOF
}

# info_of SHARD: `chs_read.py --info SHARD`, run once per test for each
# state of the file (its name, inode, size and modification time).
info_of() {
	local at
	at=$(stat -c '%i-%s-%.9Y' "$1") || return 1
	at="$BATS_TEST_TMPDIR/.info_of/${1//\//_}-$at"
	if [ ! -f "$at" ]; then
		mkdir -p "${at%/*}" && chs_read "$1" --info >"$at.tmp" &&
			mv "$at.tmp" "$at" || { cat "$at.tmp"; return 1; }
	fi
	cat "$at"
}

# info SHARD KEY: the value of one line of `chs_read.py --info`.
info() {
	info_of "$1" | awk -v k="$2" '$1 == k { $1 = ""; print substr($0, 2) }'
}

# block_codecs SHARD: the codec of each block, one a line.
block_codecs() {
	info_of "$1" | awk '$1 == "block" { print $6 }'
}

# ------------------------------------------------------------ agreement

@test "chs_read: a mixed folder reads the same as chute ls and chute cat" {
	mksamples src mixed
	run -0 chute pack src -o ds
	check_dataset ds src
	shard=$(shard_of ds)
	assert_equal "$(info "$shard" version)" "1.1"
	assert_equal "$(info "$shard" index | cut -d' ' -f4)" "paged"
	assert_equal "$(info "$shard" dict_size)" "0"
}

@test "chs_read: keys order as unsigned bytes, shorter first" {
	mksamples src mixed
	run -0 chute pack src -o ds
	run -0 chs_read "$(shard_of ds)"
	# samples are sorted by key unless --keep-order
	assert_equal "$(cut -f1 <<<"$output" | tr '\n' ' ')" \
		"$(cut -f1 <<<"$output" | LC_ALL=C sort | tr '\n' ' ')"
	run -0 bash -c "cut -f1 <<<\"\$1\" | grep -x -e a -e a-b -e a/b -e ab -e B -e z" _ "$output"
	assert_equal "$(tr '\n' ' ' <<<"$output")" "B a a-b a/b ab z "
	assert_equal "$(chs_read "$(shard_of ds)" | cut -f1 | tail -n 1)" "été"
}

@test "chs_read: --cat finds every kind of key by binary search" {
	mksamples src mixed
	run -0 chute pack src -o ds
	shard=$(shard_of ds)
	for key in a a-b a/b ab B z été empty cat/a/s00 dog/c/s29; do
		run -0 chs_read "$shard" --cat "$key" txt
		chute cat ds "$key" --field txt >want
		assert_equal "$output" "$(cat want)"
	done
	run -1 chs_read "$shard" --cat a/ txt
	assert_output --partial "no sample with key"
	run -1 chs_read "$shard" --cat cat/a/s00 nope
	assert_output --partial "has no field"
}

@test "chs_read: an empty field reads as zero bytes" {
	mksamples src mixed
	run -0 chute pack src -o ds
	run -0 chs_read "$(shard_of ds)"
	assert_line "$(printf 'empty\tbin:10 txt:0')"
	run -0 chs_read "$(shard_of ds)" --cat empty txt
	assert_output ""
}

@test "chs_read: --dict with many small samples uses the dictionary" {
	mksamples src small 800
	run -0 chute pack --dict -b 16K src -o ds
	check_dataset ds src
	shard=$(shard_of ds)
	[ "$(info "$shard" dict_size)" -gt 0 ] || fail "no dictionary written"
	assert_equal "$(info "$shard" flags)" "1"
	run -0 block_codecs "$shard"
	assert_line zstd-dict
}

@test "chs_read: large incompressible samples are stored in raw blocks" {
	mksamples src large 5
	run -0 chute pack src -o ds
	check_dataset ds src
	run -0 block_codecs "$(shard_of ds)"
	assert_line raw
	refute_line zstd-dict
}

@test "chs_read: a small --block-size makes many blocks, all read alike" {
	mksamples src many 300
	run -0 chute pack -b 4K src -o ds
	check_dataset ds src
	shard=$(shard_of ds)
	[ "$(info "$shard" blocks)" -ge 20 ] ||
		fail "only $(info "$shard" blocks) blocks"
	run -0 block_codecs "$shard"
	assert_line zstd
}

@test "chs_read: several shards and --keep-order (key order table not the identity)" {
	mksamples src many 60
	(cd src && find . -type f | LC_ALL=C sort -r | sed 's|^\./||') >list
	run -0 bash -c 'cd src && chute pack --keep-order -s 25s -b 2K - -o ../ds <../list'
	check_dataset ds
	local -a shards=(ds/shards/*.chs)
	[ "${#shards[@]}" -ge 2 ] || fail "expected several shards"
	assert_equal "$(info "${shards[0]}" key_order_identity)" "0"
	# and --cat goes through that table
	key=$(chs_read "${shards[0]}" | sed -n 3p | cut -f1)
	run -0 chs_read "${shards[0]}" --cat "$key" txt
	chute cat ds "$key" --field txt >want
	assert_equal "$output" "$(cat want)"
}

@test "chs_read: the smallest shard, a single sample of one empty field" {
	mkdir src
	: >src/only.txt
	run -0 chute pack src -o ds
	check_dataset ds src
	assert_equal "$(info "$(shard_of ds)" samples)" "1"
}

# ------------------------------------------------------------ refusals

@test "chs_read: a flipped byte in a block is refused, naming the block" {
	mksamples src many 40
	run -0 chute pack -b 4K src -o ds
	shard=$(shard_of ds)
	flip_byte "$shard" "$(block_middle "$shard" 1)"
	run -1 chs_read "$shard"
	assert_output --partial "block 1"
}

@test "chs_read: a truncated shard is refused" {
	mksamples src many 10
	run -0 chute pack src -o ds
	shard=$(shard_of ds)
	truncate -s -1 "$shard"
	run -1 chs_read "$shard"
	assert_output --regexp '^chs_read.py: '
}

@test "chs_read: major version 2 is refused even with a valid header hash" {
	mksamples src many 10
	run -0 chute pack src -o ds
	shard=$(shard_of ds)
	"$PYTHON" - "$shard" <<'EOF'
import struct, sys, xxhash
with open(sys.argv[1], "r+b") as f:
    h = bytearray(f.read(64))
    struct.pack_into("<H", h, 8, 2)
    struct.pack_into("<Q", h, 56, xxhash.xxh3_64_intdigest(bytes(h[:56])))
    f.seek(0)
    f.write(h)
EOF
	run -1 chs_read "$shard"
	assert_output --partial "version 2.1"
}

@test "chs_read: a file that is not a shard is refused" {
	head -c 500 /dev/zero >zero.chs
	run -1 chs_read zero.chs
	assert_output --partial "bad magic"
	run -1 chs_read missing.chs
	assert_output --partial "missing.chs"
}

# ------------------------------------------------------------ the page vs chute's reader

@test "chs_read: chute reads a shard whose index is stored raw (index_codec 0)" {
	mksamples src mixed
	run -0 chute pack -b 4K src -o ds
	mutate "$(shard_of ds)" raw.chs raw-index
	assert_equal "$(info raw.chs index | cut -d' ' -f4)" "raw"
	check_shard raw.chs
}

@test "chs_read: chute reads minor version 7 (only the major version gates)" {
	mksamples src mixed
	run -0 chute pack src -o ds
	mutate "$(shard_of ds)" minor.chs minor7
	assert_equal "$(info minor.chs version)" "1.7"
	check_shard minor.chs
}

@test "chs_read: chute reads a 1.0 shard, its index one zstd frame (index_codec 1)" {
	mksamples src mixed
	run -0 chute pack -b 4K src -o ds
	mutate "$(shard_of ds)" old.chs minor0
	assert_equal "$(info old.chs version)" "1.0"
	assert_equal "$(info old.chs index | cut -d' ' -f4)" "zstd"
	check_shard old.chs
	run -0 chute stream old.chs --format jsonl -e 1
	assert_equal "${#lines[@]}" "$(chs_read old.chs | wc -l)"
}

@test "chs_read: chute and chs_read.py refuse every shard VALIDATION refuses" {
	mksamples src mixed
	run -0 chute pack -b 4K src -o ds
	local c accepted="" cases=(major2 flag2 header-reserved
		dict-hash-without-dict index-reserved block-reserved field-reserved
		key-order-unsorted key-order-repeated fields-unsorted name-repeated
		key-with-nul key-empty no-fields block-out-of-range
		name-id-out-of-range sample-past-block bytes-after-index-frame
		gap-before-index codec2-without-dict codec9 raw-block-size-mismatch
		sections-short count-overflow entries-overflow sizes-overflow
		huge-raw-index)
	mutate_each "$(shard_of ds)" whole $(for c in "${cases[@]}"; do echo "$c.chs $c"; done)
	chs_read_refuses "${cases[@]/%/.chs}"
	for c in "${cases[@]}"; do
		run chute ls "$c.chs"
		# refused with a message (a data error), not crashed
		if [ "$status" -eq 0 ]; then
			accepted="$accepted $c"
		elif [ "$status" -ne 1 ]; then
			fail "chute ls $c.chs exited $status: $output"
		fi
	done
	[ -z "$accepted" ] || fail "chute ls accepted:$accepted"
}

# two_fields DIR N: N samples of a .bin and a .txt field, enough for an
# index of several pages.
two_fields() {
	"$PYTHON" - "$@" <<'EOF' || fail "cannot generate $*"
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
os.makedirs(root)
for i in range(n):
    for name, data in (("bin", bytes([i % 251]) * 40), ("txt", b"t%d" % i)):
        with open(os.path.join(root, "k%04d.%s" % (i, name)), "wb") as f:
            f.write(data)
EOF
}

@test "chs_read: a paged index checked page by page: stream refuses what it reads, ls all of it" {
	two_fields src 600
	run -0 chute pack -b 4K src -o ds
	shard=$(shard_of ds)
	assert_equal "$(info "$shard" index | cut -d' ' -f4)" "paged"
	local c cases=(field-reserved fields-unsorted key-with-nul key-empty
		no-fields block-out-of-range name-id-out-of-range sample-past-block)
	mutate_each "$shard" paged $(for c in "${cases[@]}"; do echo "$c.chs $c"; done)
	chs_read_refuses "${cases[@]/%/.chs}"
	for c in "${cases[@]}"; do
		run -1 chute ls "$c.chs"
		# a stream opens its shards lazily and checks each sample it
		# reads: the damage shows as a data error (exit 1) mid-stream
		mkdir "$c" && cp -r ds/. "$c"/ && cp "$c.chs" "$c/shards/${shard##*/}"
		# a manifest that vouches for the damaged shard (size, hash,
		# seal), so that only the sample checks can find the damage
		vouch_shard "$c" 0
		run -1 chute stream "$c" --format jsonl -e 1
		assert_output --partial "${shard##*/}"
		assert_output --regexp "sample [0-9]+ (has|points|runs)"
	done
}

@test "chs_read: a damaged index page is refused when a stream first reads it" {
	two_fields src 600
	run -0 chute pack -b 4K src -o ds
	shard=$(shard_of ds)
	# page 2 holds sample entries, not read at open; flip a byte in it
	read -r off size < <(shard_layout "$shard" | awk '$1 == "page" && $2 == 2 { print $3, $4 }')
	flip_byte "$shard" $((off + size / 2))
	run -1 chute stream ds --format jsonl -e 1 --shuffle none
	assert_output --partial "index page"
	assert_output --partial "checksum mismatch"
	run -1 chute ls "$shard"
	assert_output --partial "index page"
	assert_output --partial "checksum mismatch"
}

@test "chs_read: a shuffled stream decodes the index whole at open, and a damaged page still fails it or skips its samples" {
	two_fields src 600
	run -0 chute pack -b 4K src -o ds
	run -0 chute stream ds --format jsonl -e 1 -b 16 --seed 3
	good=$(jq -r .key <<<"$output" | sort -u | wc -l)
	[ "$good" -eq 600 ]
	shard=$(shard_of ds)
	read -r off size < <(shard_layout "$shard" | awk '$1 == "page" && $2 == 2 { print $3, $4 }')
	flip_byte "$shard" $((off + size / 2))
	run -1 chute stream ds --format jsonl -e 1 -b 16 --seed 3
	assert_output --partial "index page"
	assert_output --partial "checksum mismatch"
	# the open's pass does not fail the stream: the samples of the page do
	run -0 --separate-stderr chute stream ds --format jsonl -e 1 -b 16 \
		--seed 3 --on-error skip
	seen=$(jq -r .key <<<"$output" | sort -u | wc -l)
	[ "$seen" -gt 0 ] && [ "$seen" -lt 600 ]
	# a batch of 256 meets more corrupt samples than a batch may skip
	run -1 chute stream ds --format jsonl -e 1 --seed 3 --on-error skip
	assert_output --partial "more than 64 corrupt samples in one batch"
}

@test "chs_read: --seal prints the manifest's seal; --manifest refuses a shard copied over another" {
	pack_swapped sw
	run -0 chs_read sw/shards/sw-000002.chs --seal
	assert_output "$(mjson sw 'm["shards"][2]["seal"]')"
	run -0 chs_read sw/shards/sw-000002.chs --manifest sw/manifest.json
	run -1 chs_read sw/shards/sw-000001.chs --manifest sw/manifest.json
	assert_output "chs_read.py: sw/shards/sw-000001.chs is not the shard sw/manifest.json's shards[1] names: it has seal $(chs_read sw/shards/sw-000000.chs --seal), the manifest says $(mjson sw 'm["shards"][1]["seal"]')"
}
