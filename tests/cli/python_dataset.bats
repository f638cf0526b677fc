#!/usr/bin/env bats
# chute.Dataset (python/chute/dataset.py, python/chute/shard.py): random
# access to a local dataset from Python, reading manifest and shards
# itself, must give every sample exactly as `chute cat` and the source
# files do, check what man chute-shard(5) says to check, and work under a
# torch DataLoader with worker processes.

load helper

# pyds [ARG...] <<'EOF' ... EOF: runs a Python script with the package on
# the path; tests/cli is on it too, for shard_index.
pyds() {
	PYTHONPATH="$REPO_ROOT/python:$BATS_TEST_DIRNAME" "$PYTHON" - "$@"
}

# gen KIND DIR [N]: seeded fixtures:
#   small N   N small text samples with two fields (for --dict)
#   many N    N samples of 300-900 bytes: a txt field, a bin field for odd ones
#   two N     N samples of a .bin and a .txt field (an index of many pages)
#   classes   samples in folders cat/ and dog/ (for --label-from dir)
gen() {
	"$PYTHON" - "$@" <<'EOF' || fail "cannot generate $*"
import os, random, sys
kind, root = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 0
rng = random.Random("python_dataset:" + kind)
words = "alpha beta gamma delta shard block index key field sample".split()
def put(rel, data):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
def text(lo, hi):
    return " ".join(rng.choice(words) for _ in range(rng.randint(lo, hi))).encode() + b"\n"
if kind == "small":
    for i in range(n):
        key = "%02d/item%05d" % (i % 10, i)
        put(key + ".json", b'{"id": %d, "label": "%s"}\n' % (i, rng.choice(words).encode()))
        put(key + ".txt", text(3, 20))
elif kind == "many":
    for i in range(n):
        put("m/%04d.txt" % i, text(20, 60)[:rng.randint(300, 900)])
        if i % 2:
            put("m/%04d.bin" % i, rng.randbytes(rng.randint(300, 900)))
elif kind == "two":
    for i in range(n):
        put("k%04d.bin" % i, bytes([i % 251]) * 40)
        put("k%04d.txt" % i, b"t%d" % i)
elif kind == "classes":
    for i in range(12):
        put("%s/p%02d.txt" % (("cat", "dog", "emu")[i % 3], i), text(2, 9))
else:
    sys.exit("unknown kind " + kind)
EOF
}

# check_against DS SRC [ARGS]: chute.Dataset(DS) holds exactly the files of
# SRC, field for field, in the order and with the sizes of `chute ls`;
# chute gives the same bytes (all of them through `chute export`, about 20
# samples through `chute cat`, by key and by number); ARGS are Python
# keyword arguments.
check_against() {
	local ds=$1 src=$2 args=${3:-} key fields f name t n=0 every
	rm -rf py.dump export export.files
	pyds "$ds" "$src" "$args" >py.list <<'EOF' || fail "chute.Dataset($ds) failed"
import json, os, sys
import chute
ds_path, src, args = sys.argv[1:4]
ds = eval("chute.Dataset(ds_path%s)" % (", " + args if args else ""))
m = json.load(open(os.path.join(ds_path, "manifest.json")))
assert len(ds) == m["samples"], (len(ds), m["samples"])
seen = set()
for i, s in enumerate(ds):
    assert s.index == i and s.number == i, (s.index, s.number, i)
    assert list(s.fields) == sorted(s.fields, key=str.encode), s.fields
    for name, data in s.fields.items():
        assert isinstance(data, bytes)
        with open(os.path.join(src, s.key + "." + name), "rb") as f:
            assert f.read() == data, "%s.%s differs from the source" % (s.key, name)
        seen.add(s.key + "." + name)
        os.makedirs(os.path.dirname(os.path.join("py.dump", s.key)) or ".", exist_ok=True)
        with open(os.path.join("py.dump", s.key + "." + name), "wb") as f:
            f.write(data)
    print("%s\t%s" % (s.key, " ".join("%s:%d" % (n, len(d)) for n, d in s.fields.items())))
files = {os.path.relpath(os.path.join(d, f), src) for d, _, fs in os.walk(src) for f in fs}
assert files == seen, sorted(files ^ seen)[:5]
assert ds.keys() == [s.key for s in ds]
assert ds.id == m["id"] and ds.fields == sorted(m["schema"]["fields"])
EOF
	chute ls "$ds" >chute.list || fail "chute ls $ds failed"
	run -0 diff -u chute.list py.list
	run -0 chute export "$ds" -o export
	mkdir export.files
	for t in export/*.tar; do
		tar -xf "$t" -C export.files || fail "cannot extract $t"
	done
	run -0 diff -r export.files py.dump
	every=$(($(wc -l <py.list) / 20 + 1))
	while IFS=$'\t' read -r key fields; do
		if ((n++ % every == 0)); then
			for f in $fields; do
				name=${f%:*}
				chute cat "$ds" "$key" --field "$name" >got ||
					fail "chute cat $ds $key --field $name failed"
				cmp got "py.dump/$key.$name" ||
					fail "chute cat and chute.Dataset disagree on $key.$name"
				chute cat "$ds" "#$((n - 1))" --field "$name" >got ||
					fail "chute cat $ds #$((n - 1)) --field $name failed"
				cmp got "py.dump/$key.$name" ||
					fail "chute cat #$((n - 1)) is not ds[$((n - 1))] ($key.$name)"
			done
		fi
	done <py.list
	[ "$n" -gt 0 ] || fail "no sample in $ds"
}

# ------------------------------------------------------------ reading

@test "python dataset: every sample equals its source files, chute ls and chute cat" {
	mkfixture src
	run -0 chute pack src -o ds
	check_against ds src
	# the manifest file itself names the dataset too
	run -0 pyds ds/manifest.json <<'EOF'
import sys, chute
print(len(chute.Dataset(sys.argv[1])))
EOF
	assert_output "$(mjson ds 'm["samples"]')"
}

@test "python dataset: indexing, get, in, keys, classes, close and with" {
	gen classes src
	run -0 chute pack --label-from dir src -o ds
	run -0 pyds ds <<'EOF'
import sys, chute
with chute.Dataset(sys.argv[1]) as ds:
    n = len(ds)
    assert n == 12 and ds.classes == ["cat", "dog", "emu"], (n, ds.classes)
    keys = ds.keys()
    assert keys == sorted(keys, key=str.encode)
    assert ds[-1] == ds[n - 1] and ds[-n] == ds[0]
    for bad in (n, -n - 1, 10 ** 9):
        try:
            ds[bad]
        except IndexError as e:
            assert "out of range" in str(e), e
        else:
            raise AssertionError("ds[%d] did not raise" % bad)
    assert [s.key for s in ds[2:5]] == keys[2:5]
    assert [s.key for s in ds[::-4]] == keys[::-4]
    for i, k in enumerate(keys):
        s = ds.get(k)
        assert s.key == k and s.index == i and ds[i] == s
        assert ds.get(k.encode()) == s and k in ds and ds.index(k) == i
        # the label field: the class of the parent folder
        assert ds.classes[int(s["cls"])] == k.split("/")[0], (k, s["cls"])
    for k in ("nope", "cat", "cat/p0", "cat/p00/x", ""):
        assert k not in ds, k
        try:
            ds.get(k)
        except KeyError:
            pass
        else:
            raise AssertionError("get(%r) did not raise" % k)
    assert 3 not in ds and None not in ds
    ds.close()
    assert ds[1].key == keys[1]   # reopens what it needs
print("ok")
EOF
	assert_output "ok"
}

@test "python dataset: --dict, many shards and small blocks, read in any order with tiny caches" {
	gen small src 500
	run -0 chute pack --dict -b 16K src -o ds
	assert_equal "$(mjson ds 'm["options"]["dict"]')" "True"
	check_against ds src
	run -0 pyds ds <<'EOF'
import glob, sys
from chute.shard import Shard
sh = Shard(glob.glob(sys.argv[1] + "/shards/*.chs")[0])
assert sh.dict_size > 0, "no dictionary"
assert 2 in {b[4] for b in sh.blocks}, "no block of codec zstd-dict"
EOF

	rm -rf src ds
	gen many src 300
	run -0 chute pack -s 40s -b 2K src -o ds
	[ "$(mjson ds 'len(m["shards"])')" -ge 5 ] || fail "expected several shards"
	check_against ds src "cache_bytes=0, max_open=1, index_bytes=0"
	# random order, every sample against the sequential read
	run -0 pyds ds <<'EOF'
import random, sys, chute
ref = list(chute.Dataset(sys.argv[1]))
ds = chute.Dataset(sys.argv[1], cache_bytes=4096, max_open=2)
order = list(range(len(ds)))
random.Random(7).shuffle(order)
for i in order:
    assert ds[i] == ref[i], i
print(len(ds))
EOF
	assert_output "300"
}

@test "python dataset: a paged index of several pages is read page by page" {
	gen two src 600
	run -0 chute pack -b 4K src -o ds
	check_against ds src
	run -0 pyds ds <<'EOF'
import glob, sys, chute
from chute.shard import Shard
path = glob.glob(sys.argv[1] + "/shards/*.chs")[0]
sh = Shard(path)
assert (sh.major, sh.minor, sh.index_codec) == (1, 1, 2)
pages = -(-sh.index_raw_size // sh.index_page_size)
assert pages >= 3, pages
opened = sh.index_memory
e = sh.entry(599)
assert sh.index_memory < sh.index_raw_size, (sh.index_memory, sh.index_raw_size)
assert sh.index_memory > opened
assert dict(sh.sample_fields(e, sh.block(e.block)))[b"txt"] == b"t599"
assert sh.find(b"k0300") == 300 and sh.find(b"k9999") == -1
sh.release()
assert sh.index_memory == 0 and sh.entry(5).key == b"k0005"
ds = chute.Dataset(sys.argv[1])
assert ds.get("k0450").fields["txt"] == b"t450"
EOF
}

@test "python dataset: format 1.0 shards (index raw or one zstd frame) and a lone shard" {
	mkfixture src
	run -0 chute pack -b 4K src -o ds
	run -0 pyds "$(shard_of ds)" <<'EOF'
# rewrite the shard as format 1.0, its index stored raw (codec 0) and as
# one zstd frame (codec 1), every checksum recomputed
import struct, sys, xxhash, zstandard
from shard_index import decoded_index
h64 = xxhash.xxh3_64_intdigest
d = open(sys.argv[1], "rb").read()
ioff = struct.unpack_from("<Q", d, len(d) - 64)[0]
ix = decoded_index(d)
hdr = bytearray(d[:64])
struct.pack_into("<H", hdr, 10, 0)
struct.pack_into("<Q", hdr, 56, h64(bytes(hdr[:56])))
for codec, stored in ((0, ix), (1, zstandard.ZstdCompressor().compress(ix))):
    f = bytearray(d[-64:])
    struct.pack_into("<QQQQ", f, 0, ioff, len(stored), len(ix), h64(stored))
    struct.pack_into("<I", f, 44, codec)
    struct.pack_into("<Q", f, 48, h64(bytes(f[:48])))
    open("old%d.chs" % codec, "wb").write(bytes(hdr) + d[64:ioff] + stored + bytes(f))
EOF
	for c in 0 1; do
		run -0 pyds "old$c.chs" ds <<'EOF'
import sys, chute
from chute.shard import Shard
sh = Shard(sys.argv[1])
assert (sh.minor, sh.index_codec) == (0, int(sys.argv[1][3])), (sh.minor, sh.index_codec)
old, new = chute.Dataset(sys.argv[1]), chute.Dataset(sys.argv[2])
assert old.id is None and old.classes == [] and old.fields == new.fields
assert list(old) == list(new) and len(old) == len(new) > 0
assert old.get("s000") == new.get("s000")
try:
    chute.Dataset(sys.argv[1], split="train")
except chute.Error as e:
    assert "has no splits" in str(e), e
else:
    raise AssertionError("a lone shard has a split")
EOF
	done
}

# ------------------------------------------------------------ splits

@test "python dataset: split restricts to the samples of one split" {
	gen many src 200
	run -0 chute pack -s 60s src -o ds
	run -0 chute split ds --val 0.2 --test 0.1
	for s in train val test; do
		chute ls --split "$s" ds | cut -f1 >"want.$s" || fail "chute ls --split $s"
	done
	run -0 pyds ds <<'EOF'
import json, sys, chute
path = sys.argv[1]
m = json.load(open(path + "/manifest.json"))
full = chute.Dataset(path)
keys, seen = full.keys(), []
for name in ("train", "val", "test"):
    ds = chute.Dataset(path, split=name)
    assert ds.split == name and len(ds) == m["splits"]["sets"][name]["samples"] > 0
    got = ds.keys()
    with open("want." + name) as f:
        assert got == f.read().split("\n")[:-1], name
    numbers = [s.number for s in ds]
    assert numbers == sorted(numbers) and [s.index for s in ds] == list(range(len(ds)))
    for s in ds:
        assert full[s.number] == s._replace(index=s.number)
        assert ds.get(s.key) == s and s.key in ds
    other = next(k for k in keys if k not in set(got))
    assert other not in ds
    try:
        ds.get(other)
    except KeyError:
        pass
    else:
        raise AssertionError("get found %r outside split %s" % (other, name))
    seen += got
assert sorted(seen) == sorted(keys)
EOF
}

@test "python dataset: a wrong split name is refused, listing the splits" {
	gen many src 30
	run -0 chute pack src -o ds
	run -1 pyds ds <<'EOF'
import sys, chute
chute.Dataset(sys.argv[1], split="train")
EOF
	assert_output --partial "chute.errors.Error: 'ds' has no splits: make them with chute split"
	run -0 chute split ds --val 0.3
	run -1 pyds ds <<'EOF'
import sys, chute
chute.Dataset(sys.argv[1], split="valid")
EOF
	assert_output --partial "chute.errors.Error: 'ds' has no split 'valid'; its splits: train, val"
}

# ------------------------------------------------------------ refusals

@test "python dataset: a flipped byte in a block is a DataError naming the shard, offset and key" {
	gen many src 60
	run -0 chute pack -b 4K src -o ds
	shard=$(shard_of ds)
	read -r off size < <(shard_layout "$shard" | awk '$1 == "block" && $2 == 1 { print $3, $4 }')
	flip_byte "$shard" $((off + size / 2))
	run -0 pyds ds "$shard" "$off" <<'EOF'
import sys, chute
path, shard, off = sys.argv[1], sys.argv[2], int(sys.argv[3])
ds = chute.Dataset(path)
bad = []
for i in range(len(ds)):
    try:
        ds[i]
    except chute.DataError as e:
        msg = str(e)
        assert "block 1 hash mismatch" in msg, msg
        assert "(%s, offset %d, sample '" % (shard, off) in msg, msg
        assert e.path == shard and e.offset == off and e.key, vars(e)
        bad.append(i)
assert bad, "no sample refused"
# the other blocks still read, and verify=False does not hash
assert len(bad) < len(ds)
print(msg)
EOF
	assert_output --regexp "^block 1 hash mismatch: stored [0-9a-f]{16}, computed [0-9a-f]{16} \(ds/shards/ds-000000.chs, offset [0-9]+, sample 'm/[0-9]{4}'\)$"
}

@test "python dataset: a damaged index page is refused when first read, not at open" {
	gen two src 600
	run -0 chute pack -b 4K src -o ds
	shard=$(shard_of ds)
	# page 1 holds the entries of samples 250 to 500 alone (page 0 the
	# first ones, page 2 the first field entries, the last page the names
	# and keys)
	read -r off size < <(shard_layout "$shard" | awk '$1 == "page" && $2 == 1 { print $3, $4 }')
	flip_byte "$shard" $((off + size / 2))
	run -0 pyds ds "$shard" <<'EOF'
import sys, chute
ds = chute.Dataset(sys.argv[1])
assert ds[0].fields["txt"] == b"t0" and ds[599].fields["txt"] == b"t599"
try:
    list(ds)
except chute.DataError as e:
    print(e)
else:
    raise AssertionError("a damaged page was read")
EOF
	assert_output --regexp "^index page 1 hash mismatch: .* \(ds/shards/ds-000000.chs, offset [0-9]+\)$"
}

@test "python dataset: a sample whose content hash does not match is refused" {
	"$PYTHON" -c '
import os, random
rng = random.Random(5)
os.mkdir("src")
for i in range(5):
    open("src/r%d.bin" % i, "wb").write(rng.randbytes(500))
' || fail "cannot make src"
	run -0 chute pack src -o ds
	shard=$(shard_of ds)
	# one byte of a raw block changed and its block hash recomputed (the
	# index rewritten, the footer too): only the sample's content hash can
	# tell; the shard is read alone, its size no longer the manifest's
	run -0 pyds "$shard" <<'EOF'
import struct, sys, xxhash, zstandard
from shard_index import decoded_index
h64 = xxhash.xxh3_64_intdigest
path = sys.argv[1]
d = bytearray(open(path, "rb").read())
f = bytearray(d[-64:])
ioff, isz, iraw, _, ns, nb, codec = struct.unpack_from("<QQQQQII", f)
ix = bytearray(decoded_index(bytes(d)))
off, stored, raw, h, bcodec = struct.unpack_from("<QQQQI", ix, 64)
assert bcodec == 0, "block 0 is not raw"
d[off + 5] ^= 1
struct.pack_into("<Q", ix, 64 + 24, h64(bytes(d[off:off + stored])))
P = 8192
frames = [zstandard.ZstdCompressor().compress(bytes(ix[a:a + P])) for a in range(0, len(ix), P)]
table = struct.pack("<II", P, len(frames)) + b"".join(
    struct.pack("<IIQ", len(fr), 0, h64(fr)) for fr in frames)
stored_ix = table + b"".join(frames)
struct.pack_into("<QQQQ", f, 0, ioff, len(stored_ix), len(ix), h64(table))
struct.pack_into("<I", f, 44, 2)
struct.pack_into("<Q", f, 48, h64(bytes(f[:48])))
open(path, "wb").write(bytes(d[:ioff]) + stored_ix + bytes(f))
EOF
	run -0 pyds "$shard" <<'EOF'
import sys, chute
ds = chute.Dataset(sys.argv[1])
try:
    ds[0]
except chute.DataError as e:
    print(e)
else:
    raise AssertionError("content hash not checked")
# without verify the changed byte comes through
got = chute.Dataset(sys.argv[1], verify=False)[0].fields["bin"]
assert got != open("src/r0.bin", "rb").read() and len(got) == 500
EOF
	assert_output --regexp "^sample 0: content hash stored [0-9a-f]{16}, computed [0-9a-f]{16} \(block 0\) \(ds/shards/ds-000000.chs, offset 64, sample 'r0'\)$"
}

@test "python dataset: a shard of another size than the manifest says is refused at open" {
	gen many src 30
	run -0 chute pack src -o ds
	shard=$(shard_of ds)
	truncate -s -1 "$shard"
	run -1 pyds ds <<'EOF'
import sys, chute
chute.Dataset(sys.argv[1])
EOF
	assert_output --regexp "chute.errors.DataError: '$shard': [0-9]+ bytes, the manifest says [0-9]+: run chute verify"
	rm "$shard"
	run -1 pyds ds <<'EOF'
import sys, chute
chute.Dataset(sys.argv[1])
EOF
	assert_output --partial "chute.errors.DataError: '$shard': missing: shards[0] of ds/manifest.json lists it"
}

@test "python dataset: manifest counts that do not add up are refused" {
	gen many src 30
	run -0 chute pack -s 10s src -o ds
	run -0 pyds ds <<'EOF'
import json, sys, chute
path = sys.argv[1] + "/manifest.json"
good = open(path).read()
for edit, want in (
        (lambda m: m.update(samples=m["samples"] + 1), "samples: 31, but the shards hold 30"),
        (lambda m: m["shards"][1].update(first_sample=9), "shards[1].first_sample: expected 10, where the previous shard ends"),
        (lambda m: m["shards"][0].update(samples=11), "shards[1].first_sample: expected 11"),
        (lambda m: m["shards"][2].update(path="../x.chs"), "shards[2].path: '../x.chs' is not shards/NAME.chs"),
        (lambda m: m["shards"][2].update(path=".chute/stat"), "shards[2].path: '.chute/stat' is not shards/NAME.chs"),
        (lambda m: m.update(format_version=3), "format_version: unsupported version 3")):
    m = json.loads(good)
    edit(m)
    open(path, "w").write(json.dumps(m))
    try:
        chute.Dataset(sys.argv[1])
    except chute.DataError as e:
        assert want in str(e) and path in str(e), (want, str(e))
    else:
        raise AssertionError("accepted: " + want)
# a shard whose footer disagrees with the manifest's count
m = json.loads(good)
m["shards"][0]["samples"] -= 1
m["shards"][1]["samples"] += 1
m["shards"][1]["first_sample"] = 9
open(path, "w").write(json.dumps(m))
ds = chute.Dataset(sys.argv[1])
try:
    ds[0]
except chute.DataError as e:
    assert "the shard holds 10 samples, the manifest says 9" in str(e), e
else:
    raise AssertionError("sample counts not compared")
open(path, "w").write(good)
assert len(chute.Dataset(sys.argv[1])) == 30
EOF
}

@test "python dataset: a missing path is a chute.Error and a FileNotFoundError naming it" {
	mkdir empty
	run -0 pyds <<'EOF'
import chute
from chute.dataset import NotFoundError
for path, want in (("nope", "no chute dataset at 'nope'"),
                   ("empty", "'empty' is not a chute dataset: it has no manifest.json"),
                   ("nope/manifest.json", "no chute dataset at 'nope/manifest.json'")):
    for kind in (chute.Error, FileNotFoundError, NotFoundError):
        try:
            chute.Dataset(path)
        except kind as e:
            assert str(e).startswith(want), (str(e), want)
            assert e.filename.startswith(path)
        else:
            raise AssertionError(path)
print("ok")
EOF
	assert_output "ok"
}

# ------------------------------------------------------------ processes

@test "python dataset: a dataset pickles, open or not, and reads the same after" {
	gen many src 120
	run -0 chute pack -s 50s -b 2K src -o ds
	run -0 chute split ds --val 0.25
	run -0 pyds ds <<'EOF'
import pickle, sys, chute
ds = chute.Dataset(sys.argv[1], split="train")
fresh = pickle.loads(pickle.dumps(ds))
assert fresh[3] == ds[3] and len(fresh) == len(ds)
ds[0], ds[-1], ds.get(ds[5].key)           # open shards, fill caches
again = pickle.loads(pickle.dumps(ds))
assert list(again) == list(ds) and again.split == "train"
s = ds[7]
assert pickle.loads(pickle.dumps(s)) == s and type(pickle.loads(pickle.dumps(s))) is chute.Sample
print(len(ds))
EOF
	assert_output "$(mjson ds 'm["splits"]["sets"]["train"]["samples"]')"
}

@test "python dataset: a torch DataLoader with a RandomSampler and 2 workers reads every sample once" {
	"$PYTHON" -c 'import torch' 2>/dev/null || skip "no torch for $PYTHON"
	gen many src 150
	run -0 chute pack -s 40s -b 2K src -o ds
	# a file, not stdin: spawned workers import the main module again
	cat >loader.py <<'EOF'
import collections, hashlib, sys
import torch
from torch.utils.data import DataLoader, RandomSampler
import chute


def digest(s):
    return s.key, hashlib.sha256(b"".join(s.fields[n] for n in sorted(s.fields))).hexdigest()


def main(path):
    ds = chute.Dataset(path)
    want = sorted(digest(s) for s in ds)   # opens shards in the parent first
    for ctx in ("fork", "spawn"):
        gen = torch.Generator().manual_seed(1)
        loader = DataLoader(ds, batch_size=None, num_workers=2,
                            sampler=RandomSampler(ds, generator=gen),
                            multiprocessing_context=ctx)
        got = [digest(s) for s in loader]
        counts = collections.Counter(k for k, _ in got)
        assert len(got) == len(ds) and max(counts.values()) == 1, ctx
        assert sorted(got) == want, ctx
    # batches: a collate that keeps the samples as they are
    loader = DataLoader(ds, batch_size=16, num_workers=2,
                        sampler=RandomSampler(ds), collate_fn=list)
    keys = [s.key for batch in loader for s in batch]
    assert sorted(keys) == sorted(ds.keys())
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1])
EOF
	run -0 env PYTHONPATH="$REPO_ROOT/python" "$PYTHON" loader.py ds
	assert_output "ok"
}

@test "python dataset: chute.manifest_id computes THE ID of version 2 and version 1 manifests" {
	gen classes src
	chute pack -q --label-from dir src -o ds >/dev/null
	chute split ds --val 0.4 >/dev/null
	pyds ds <<'EOF2'
import json, sys
import chute
m = json.load(open(sys.argv[1] + "/manifest.json"))
assert m["format_version"] == 2
assert chute.manifest_id(m) == m["id"], (chute.manifest_id(m), m["id"])
# where it was written is not content: the same id under another name
other = dict(m, name="elsewhere", sources=["/abs/src"], parent=None)
other["shards"] = [dict(s, path="shards/elsewhere-%06d.chs" % i)
                   for i, s in enumerate(m["shards"])]
assert chute.manifest_id(other) == m["id"]
# a version 1 manifest: its id covers everything; chute.Dataset reads it
m["format_version"] = 1
for s in m["shards"]:
    del s["seal"]  # version 1 had none
m["id"] = chute.manifest_id(m)
assert chute.manifest_id(dict(m, name="x")) != m["id"]
json.dump(m, open(sys.argv[1] + "/manifest.json", "w"), indent=2, sort_keys=True)
ds = chute.Dataset(sys.argv[1], split="val")
assert ds.id == m["id"] and len(ds) > 0
# content changed by hand: another id
m["samples"] += 1
assert chute.manifest_id(m) != m["id"]
EOF2
	# chute agrees: the version 1 manifest verifies, id included
	run -0 chute verify ds
	run -0 chute manifest ds
	assert_line "id:        matches the content"
}

@test "python dataset: a shard copied over another of the same size raises DataError naming it and both seals" {
	pack_swapped sw
	run -1 pyds sw <<'EOF'
import sys, chute
ds = chute.Dataset(sys.argv[1])
assert ds[49].key == "k049"
ds[50]
EOF
	assert_output --regexp "chute.errors.DataError: not the shard the manifest names: its seal is [0-9a-f]{32}, the manifest says $(mjson sw 'm["shards"][1]["seal"]') \(run chute verify\) \(sw/shards/sw-000001.chs, offset 0\)"
}

@test "python dataset: a version 1 manifest is read; a schema that lacks a shard's field raises DataError" {
	pack_swapped sw
	edit_manifest sw "$AS_VERSION1"
	run -0 pyds sw <<'EOF'
import sys, chute
ds = chute.Dataset(sys.argv[1])
print(ds[50].key)
EOF
	# no seal: the substitution goes unseen, as documented
	assert_output k000
	edit_manifest sw 'm["schema"]["fields"]["text"] = m["schema"]["fields"].pop("txt")'
	run -1 pyds sw <<'EOF'
import sys, chute
chute.Dataset(sys.argv[1])[0]
EOF
	assert_output --partial "chute.errors.DataError: holds field 'txt', which the manifest's schema does not list (run chute verify) (sw/shards/sw-000000.chs)"
}
