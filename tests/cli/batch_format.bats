#!/usr/bin/env bats
# What chute stream writes, byte for byte: the batch frames of
# man/chute-batch.5 (checked here by an independent reader and by
# scripts/chute_batch.py), JSON lines, and a WebDataset tar stream.  Every
# sample's bytes are compared with what chute cat gives.

load helper

setup() {
	chute_setup
	mkfixture src
	chute pack -q -s 8s src -o ds >/dev/null || fail "cannot pack src"
}

# with_reader: runs the Python script on stdin with scripts/ on its path
# (import chute_batch) and the sample table of dataset ds loaded:
#   LS[key] = {field: size}, in the order chute ls --json gives,
#   cat(key, field) = the bytes chute cat writes (cached).
with_reader() {
	"$PYTHON" -c '
import json, subprocess, sys
sys.path.insert(0, sys.argv[1])
import chute_batch

def run(*args):
    return subprocess.run(args, stdout=subprocess.PIPE, check=True).stdout

LS = {}
for line in run("chute", "ls", "--json", "ds").splitlines():
    o = json.loads(line)
    LS[o["key"]] = o["fields"]
CAT = {}

def cat(key, field):
    if (key, field) not in CAT:
        CAT[key, field] = run("chute", "cat", "-f", field, "ds",
                              key.encode("utf-8", "surrogateescape"))
    return CAT[key, field]

exec(sys.stdin.read())
' "$REPO_ROOT/scripts" "$@"
}

@test "batch format: chute_batch.py reads every frame, keys and fields equal to chute cat" {
	chute stream -b 7 -e 2 ds >s.chb
	run -0 with_reader <<'EOF'
seen = []
with open("s.chb", "rb") as f:
    for fr in chute_batch.frames(f):
        assert fr.nsamples == len(fr.keys)
        # the union of the batch's fields, in name order
        names = sorted({n for k in fr.keys for n in LS[k]})
        assert list(fr.fields) == names, (list(fr.fields), names)
        for name, values in fr.fields.items():
            assert len(values) == fr.nsamples
            for key, v in zip(fr.keys, values):
                assert v.obj is fr.buffer, "a copy, not a view of the frame"
                want = cat(key, name) if name in LS[key] else b""
                assert bytes(v) == want, (key, name, len(v), len(want))
        seen.append((fr.epoch, fr.batch, fr.nsamples, fr.flags, fr.partial,
                     fr.last, fr.keys))
assert [s[:6] for s in seen] == [
    (0, 0, 7, 0, False, False), (0, 1, 7, 0, False, False),
    (0, 2, 6, 3, True, True),
    (1, 0, 7, 0, False, False), (1, 1, 7, 0, False, False),
    (1, 2, 6, 3, True, True)], seen
for epoch in (0, 1):
    keys = [k for s in seen if s[0] == epoch for k in s[6]]
    assert sorted(keys) == sorted(LS), "epoch %d is not every sample once" % epoch
print("ok")
EOF
	assert_output ok
}

@test "batch format: frames follow the layout of chute-batch.5, every region 64-byte aligned" {
	chute stream -b 6 -e 2 ds >s.chb
	# an independent reader of the page: sizes, alignment, order of the
	# regions, and zero bytes everywhere the page says padding
	run -0 "$PYTHON" - <<'EOF'
import struct
a8 = lambda x: (x + 7) // 8 * 8
a64 = lambda x: (x + 63) // 64 * 64
data = open("s.chb", "rb").read()
at = frames = 0
while at < len(data):
    (magic, flags, size, epoch, batch, ns, nf, cs, ts, doff,
     reserved) = struct.unpack_from("<4sIQQQIIIIQQ", data, at)
    fr = data[at:at + size]
    assert magic == b"CHB1" and reserved == 0, at
    assert size % 64 == 0 and len(fr) == size, (at, size)
    assert flags in (0, 1, 2, 3), flags
    table = a8(64 + cs)
    assert doff == a64(table + ts), (doff, table, ts)
    used = bytearray(size)          # 1 where a byte carries meaning
    def mark(start, n):
        assert start + n <= size, (at, start, n)
        used[start:start + n] = b"\1" * n
    mark(0, 64 + cs)
    e, region, names = table, doff, []
    for i in range(nf):
        esize, dtype, ndim, nsize = struct.unpack_from("<4I", fr, e)
        shape = struct.unpack_from("<4Q", fr, e + 16)
        oat, dat, dsize = struct.unpack_from("<3Q", fr, e + 48)
        names.append(fr[e + 72:e + 72 + nsize])
        assert esize == a8(72 + nsize) and dtype == 0 and ndim == 0
        assert shape == (0, 0, 0, 0)
        mark(e, 72 + nsize)
        assert oat % 64 == 0 and dat % 64 == 0, (oat, dat)
        assert oat == region and dat == a64(oat + 8 * (ns + 1))
        offs = struct.unpack_from("<%dQ" % (ns + 1), fr, oat)
        assert offs[0] == 0 and offs[-1] == dsize
        assert all(x <= y for x, y in zip(offs, offs[1:]))
        mark(oat, 8 * (ns + 1))
        mark(dat, dsize)
        region = a64(dat + dsize)
        e += esize
    assert names[0] == b"__key__" and names[1:] == sorted(names[1:])
    assert e == table + ts and size == region, (e, table + ts, size, region)
    pad = [i for i in range(size) if not used[i] and fr[i]]
    assert not pad, "padding not zero at %s" % pad[:4]
    at += size
    frames += 1
assert at == len(data) and frames == 8, (at, len(data), frames)
print("ok")
EOF
	assert_output ok
}

@test "batch format: jsonl is one compact object per sample that matches ls, cat and the frames" {
	chute stream -f jsonl -b 7 -e 2 --seed 3 ds >s.jsonl
	chute stream -b 7 -e 2 --seed 3 ds >s.chb
	run -0 with_reader <<'EOF'
order = []
for line in open("s.jsonl", "rb"):
    o = json.loads(line)
    assert list(o) == ["key", "epoch", "batch", "fields", "text"], line
    assert line == json.dumps(o, separators=(",", ":"),
                              ensure_ascii=False).encode() + b"\n", line
    key = o["key"]
    assert list(o["fields"].items()) == list(LS[key].items()), (key, o)
    text = {}
    for name in o["fields"]:
        b = cat(key, name)
        try:
            s = b.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if len(b) <= 256 and all(c in "\t\n" or ord(c) >= 32 and
                                 not 0x7f <= ord(c) <= 0x9f for c in s):
            text[name] = s
    assert o["text"] == text and list(o["text"]) == list(text), (key, o)
    order.append((o["epoch"], o["batch"], key))
with open("s.chb", "rb") as f:
    frames = [(fr.epoch, fr.batch, k) for fr in chute_batch.frames(f)
              for k in fr.keys]
assert order == frames
assert len(order) == 2 * len(LS)
assert any(o for line in open("s.jsonl") for o in [json.loads(line)["text"]])
print("ok")
EOF
	assert_output ok
}

@test "batch format: tar is one archive of several batches that extracts byte-identical to cat" {
	chute stream -f tar -b 3 ds >s.tar
	chute stream -f jsonl -b 3 ds >s.jsonl
	# GNU tar stops at an end marker: listing every member shows there is
	# one, at the end, not one per batch
	run -0 tar -tf s.tar
	local want
	want=$("$PYTHON" -c '
import json
for line in open("s.jsonl"):
    o = json.loads(line)
    for f in o["fields"]:
        print(o["key"] + "." + f)')
	assert_output "$want"
	run -0 "$PYTHON" - <<'EOF'
import tarfile
data = open("s.tar", "rb").read()
assert len(data) % 512 == 0 and data[-1024:] == bytes(1024)
with tarfile.open("s.tar") as t:
    for m in t.getmembers():
        assert m.isfile(), m.name
        assert (m.mtime, m.uid, m.gid, m.mode, m.uname, m.gname) == \
            (0, 0, 0, 0o644, "", ""), m.name
    end = t.offset
assert end == len(data) - 1024, (end, len(data))
print("ok")
EOF
	assert_output ok
	mkdir x
	tar -C x -xf s.tar
	local key field
	while IFS=$'\t' read -r key field; do
		chute cat -f "$field" ds "$key" >want
		cmp want "x/$key.$field" || fail "$key.$field differs from chute cat"
	done < <("$PYTHON" -c '
import json
for line in open("s.jsonl"):
    o = json.loads(line)
    for f in o["fields"]:
        print(o["key"] + "\t" + f)')
	run -0 bash -c 'find x -type f | wc -l'
	assert_output "$(echo "$want" | wc -l)"
}

@test "batch format: long and non-UTF-8 names survive tar, jsonl and frames" {
	"$PYTHON" - <<'EOF'
import os
deep = b"long/" + b"d" * 60 + b"/" + b"e" * 60     # ustar name + prefix
os.makedirs(deep)
open(deep + b"/" + b"k" * 30 + b".jpg", "wb").write(b"J" * 700)
os.makedirs(b"long/" + b"f" * 170)                   # prefix too long: pax
open(b"long/" + b"f" * 170 + b"/g.bin", "wb").write(bytes(range(256)))
open(b"long/" + b"x" * 120 + b".txt", "wb").write(b"no slash\n")  # pax
open(b"long/caf\xe9.txt", "wb").write(b"latin-1 name\n")
EOF
	chute pack -q long -o lds >/dev/null
	chute stream -f tar -b 2 lds >s.tar
	mkdir x
	run -0 tar -C x -xf s.tar
	assert_output ""
	run -0 diff -r long x
	run -0 chute stream -f jsonl lds
	assert_output --partial '{"key":"caf\udce9","epoch":0,'
	chute stream lds >s.chb
	run -0 "$PYTHON" - "$REPO_ROOT/scripts" <<'EOF'
import json, os, subprocess, sys, tarfile
sys.path.insert(0, sys.argv[1])
import chute_batch
files = sorted(os.path.relpath(os.path.join(d, f), b"long")
               for d, _, fs in os.walk(b"long") for f in fs)
with tarfile.open("s.tar", encoding="utf-8", errors="surrogateescape") as t:
    names = sorted(m.name.encode("utf-8", "surrogateescape") for m in t)
assert names == files, (names, files)
jsonl = subprocess.run(["chute", "stream", "-f", "jsonl", "lds"],
                       stdout=subprocess.PIPE, check=True).stdout
keys = [json.loads(l)["key"] for l in jsonl.splitlines()]
with open("s.chb", "rb") as f:
    (fr,) = chute_batch.frames(f)
assert fr.keys == keys, (fr.keys, keys)
want = sorted(f.rsplit(b".", 1)[0] for f in files)
assert sorted(k.encode("utf-8", "surrogateescape") for k in keys) == want
print("ok")
EOF
	assert_output ok
}

@test "batch format: chute_batch.py prints a line per frame; --check is silent on a good stream" {
	run -0 bash -c 'chute stream -b 7 ds | "$PYTHON" "$1"' _ "$REPO_ROOT/scripts/chute_batch.py"
	assert_equal "${#lines[@]}" 3
	assert_line --index 0 --regexp '^0 0 7 0 ch1\.[0-9a-f]{16}\.[0-9a-f]{8}\.0\.0\.7$'
	assert_line --index 2 --regexp '^0 2 6 3 ch1\.[0-9a-f]{16}\.[0-9a-f]{8}\.0\.2\.20$'
	chute stream -b 7 -e 3 ds >s.chb
	run -0 "$PYTHON" "$REPO_ROOT/scripts/chute_batch.py" --check s.chb
	assert_output ""
	run -0 "$PYTHON" "$REPO_ROOT/scripts/chute_batch.py" --check </dev/null
	assert_output ""
	# an endless stream and a reader that stops: everyone ends quietly
	run -0 bash -c 'chute stream -e 0 -b 1 ds | "$PYTHON" "$1" | head -2' _ \
		"$REPO_ROOT/scripts/chute_batch.py"
	assert_equal "${#lines[@]}" 2
}

@test "batch format: a truncated or corrupt stream makes chute_batch.py fail naming the byte offset" {
	chute stream -b 7 ds >s.chb
	local size first
	size=$(stat -c %s s.chb)
	first=$("$PYTHON" -c 'import struct; print(struct.unpack_from("<Q", open("s.chb", "rb").read(), 8)[0])')
	head -c $((size - 100)) s.chb >cut.chb
	run -1 "$PYTHON" "$REPO_ROOT/scripts/chute_batch.py" --check cut.chb
	assert_output --regexp "^chute_batch.py: truncated frame at byte $((size - 100)): .*\(frame at byte [0-9]+\)$"
	head -c $((first + 10)) s.chb >cut.chb
	run -1 "$PYTHON" "$REPO_ROOT/scripts/chute_batch.py" cut.chb
	assert_line --index 0 --regexp '^0 0 7 0 ch1\.'
	assert_line --index 1 "chute_batch.py: truncated frame header at byte $first: 10 of 64 bytes"
	cp s.chb bad.chb
	flip_byte bad.chb "$first"
	run -1 "$PYTHON" "$REPO_ROOT/scripts/chute_batch.py" --check bad.chb
	assert_output --regexp "^chute_batch.py: bad magic .* at byte $first "
	# data_offset (header bytes 48..55) past the end of the frame
	cp s.chb bad.chb
	flip_byte bad.chb $((first + 53))
	run -1 "$PYTHON" "$REPO_ROOT/scripts/chute_batch.py" --check bad.chb
	assert_output --partial "(frame at byte $first)"
}

@test "batch format: keys whose offsets go backwards fail when the keys are read, naming the byte" {
	chute stream -b 7 ds >s.chb
	run -0 env PYTHONPATH="$REPO_ROOT/python" "$PYTHON" - <<'EOF'
import io, struct
from chute.frames import ENTRY, FrameError, HEADER, frames
data = bytearray(open("s.chb", "rb").read())
table_at = (64 + HEADER.unpack_from(data)[7] + 7) // 8 * 8  # after the cursor
entry = ENTRY.unpack_from(data, table_at)  # field 0: the keys
offsets_at, size = entry[8], entry[10]
struct.pack_into("<Q", data, offsets_at + 8, size + 1)  # key 0 ends past all
fr = next(frames(io.BytesIO(bytes(data))))
assert fr.nsamples == 7 and "cls" in fr.fields  # read: the keys wait
try:
    fr.keys
    print("no error")
except FrameError as e:
    want = ("offsets of field '__key__' are not 0..%d ascending at byte %d "
            "(frame at byte 0)" % (size, offsets_at))
    print("ok" if str(e) == want else "%s, not %s" % (e, want))
EOF
	assert_output ok
}

@test "batch format: frames() fills a frame's buffer again only once nothing refers to it" {
	mkdir fixed
	local i
	for i in $(seq 10 49); do # 1 MB samples: 5 MB frames, cut from larger
		head -c 1000000 /dev/urandom >"fixed/f$i.bin"
	done
	chute pack -q fixed -o fixed-ds >/dev/null
	chute stream --shuffle none -b 5 fixed-ds >s.chb
	run -0 env PYTHONPATH="$REPO_ROOT/python" "$PYTHON" - <<'PY'
import io, weakref
from chute.frames import frames
data = open("s.chb", "rb").read()
alive, reused, kept, held = [], 0, [], set()
at = lambda a: a.__array_interface__["data"][0]  # alive while kept
for fr in frames(io.BytesIO(data)):
    reused += any(r() is fr.buffer for r in alive)
    alive.append(weakref.ref(fr.buffer))
    assert at(fr.buffer) not in held, "a kept frame filled again"
    # a trainer that keeps a batch's samples, or a numpy slice of one
    # (a view of the array the buffer was cut from, not of the buffer)
    if fr.batch in (1, 3):
        x = fr.fields["bin"] if fr.batch == 1 else fr.buffer[64:9000]
        kept.append((x, [bytes(v) for v in x] if fr.batch == 1
                     else bytes(x)))
        held.add(at(fr.buffer))
    assert len(fr.fields["bin"]) == 5
for x, want in kept:
    got = [bytes(v) for v in x] if isinstance(want, list) else bytes(x)
    assert got == want, "kept samples changed"
print("reused", reused > 0)
PY
	assert_output "reused True"
}

@test "batch format: frames() marks a pipe it reads, which chute then lends its pages; a FIFO's mode stays" {
	mkdir big
	local i
	for i in $(seq 10 29); do # 1 MB samples, 5 MB frames: most written
		head -c 1000000 /dev/urandom >"big/f$i.bin" # after the mark
	done
	chute pack -q big -o big-ds >/dev/null
	chute stream --shuffle none -b 5 -e 3 big-ds >want.chb
	cat >read_all.py <<'PY'
import hashlib, sys
from chute.frames import frames
h = hashlib.sha256()
for fr in frames(open(sys.argv[1], "rb") if sys.argv[1:] else sys.stdin.buffer):
    h.update(fr.buffer)
print(h.hexdigest())
PY
	export PYTHONPATH="$REPO_ROOT/python"
	run -0 "$PYTHON" read_all.py want.chb
	local want=$output
	run -0 bash -c "set -o pipefail
		chute stream --stats --shuffle none -b 5 -e 3 big-ds 2>err |
		\"\$PYTHON\" read_all.py"
	assert_output "$want"
	run -0 grep -E '^stream: pipe: [1-9][0-9]* of 12 frames lent to its reader \(the reader marked the pipe\)$' err
	mkfifo -m 600 fifo
	chute stream --shuffle none -b 5 -e 3 -o fifo big-ds &
	run -0 "$PYTHON" read_all.py fifo
	wait $!
	assert_output "$want"
	assert_equal "$(stat -c %a fifo)" 600
}

@test "batch format: the frame dumped in chute-batch.5 is the one chute writes" {
	command -v hexdump >/dev/null || skip "hexdump is not installed"
	mkdir page
	cd page
	mkdir src
	printf x >src/a.b
	chute pack -q src -o ds >/dev/null
	local want
	want=$(sed -n '/^\$ chute stream ds | hexdump \\-C$/,/^\.EE$/p' \
		"$REPO_ROOT/man/chute-batch.5" | sed '1d;$d')
	[ -n "$want" ] || fail "no hexdump example found in chute-batch.5"
	run -0 bash -c 'chute stream ds | hexdump -C'
	assert_output "$want"
}
