#!/usr/bin/env bats
# The Python package's Stream (python/chute/stream.py): the batches of
# `chute stream` in a Python loop, failures that raise instead of ending an
# epoch early, a child that is always reaped, and state_dict() resumption.
# The package is imported from python/ through PYTHONPATH, as an installed
# one would be; `make install` and `pip install ./python` are tested last
# (pip into venvs, and the wheel of `make wheel`: python_install.bats).

load helper

# each py forks from a process that has imported the package and torch
# (which chute.stream no longer imports itself: the tests use it)
setup_file() {
	export PYTHONPATH="$REPO_ROOT/python"
	pyfork_start chute chute.stream torch
}

teardown_file() {
	pyfork_stop
}

setup() {
	chute_setup
	export PYTHONPATH="$REPO_ROOT/python"
	# 40 samples, txt and cls (a digit), in shards of 5
	"$PYTHON" "$REPO_ROOT/scripts/gen-data.py" text src --count 40 -q ||
		fail "gen-data.py text failed"
	chute pack -q -s 5s -o ds src >/dev/null || fail "cannot pack the fixture"
}

# py CODE...: runs Python with the package, chute and a few helpers:
# children() lists this process's children (zombies too), cursors(ds, **kw)
# the cursors of `chute stream` for the same options.
py() {
	timeout 120 "${PYFORK[@]}" -c "
import os, subprocess, sys
import chute
CHUTE = os.environ['CHUTE_BIN']
def children():
    out = []
    for t in os.listdir('/proc/self/task'):
        try:
            with open('/proc/self/task/%s/children' % t) as f:
                out += f.read().split()
        except FileNotFoundError:
            pass  # a thread that ended since the listing (its children go to another)
    return out
def stream(ds='ds', **kw):
    kw.setdefault('batch_size', 3)
    return chute.Stream(ds, chute=CHUTE, **kw)
$1"
}

@test "Stream: the batches are chute stream's, as numpy arrays or torch tensors" {
	chute stream -b 3 -e 2 --seed 5 --transform 'cls: int' ds |
		"$PYTHON" "$REPO_ROOT/scripts/chute_batch.py" | cut -d' ' -f5 >want
	run -0 py "
got = [b.cursor for b in stream(epochs=2, seed=5, transforms={'cls': 'int'})]
print('\n'.join(got))"
	assert_output "$(cat want)"
	run -0 py "
b = next(iter(stream(transforms=['cls: int'])))
print(type(b['cls']).__name__, b['cls'].dtype, b.nsamples, len(b.keys), b.epoch, b.batch)
print(sorted(b.to_dict()))
import torch
t = next(iter(stream(transforms={'cls': 'int'}, as_torch=True)))
print(type(t['cls']).__name__, t['cls'].dtype)"
	assert_line --index 0 "ndarray int64 3 3 0 0"
	assert_line --index 2 "Tensor torch.int64"
}

@test "Stream: shm=True and workers=0 give the same batches as the pipe, and leave no ring" {
	run -0 py "
a = [(b.cursor, b.keys) for b in stream(epochs=2)]
c = [(b.cursor, b.keys) for b in stream(epochs=2, shm=True)]
assert a == c, (a, c)
c = [(b.cursor, b.keys) for b in stream(epochs=2, shm=True, workers=0)]
assert a == c, (a, c)
print(len(a), 'batches')"
	assert_output --regexp '^[0-9]+ batches$'
	run ls /dev/shm
	refute_output --partial "chute-py-"
}

@test "Stream: shm=True opens the ring when chute lets its standard output go, and finds it without that too" {
	# a chute whose standard output a sleeping child keeps open, as one
	# from before it let it go: the ring is looked for every 50 ms
	printf '#!/bin/sh\nsleep 30 &\nexec "%s" "$@"\n' "$CHUTE_BIN" >old-chute
	chmod +x old-chute
	run -0 py "
import time
t0 = time.monotonic()
a = [(b.cursor, b.keys) for b in stream(epochs=2, shm=True)]
assert time.monotonic() - t0 < 20
c = [(b.cursor, b.keys) for b in chute.Stream('ds', chute='./old-chute',
                                              batch_size=3, epochs=2,
                                              shm=True)]
assert a == c, (a, c)
print(len(a), 'batches')"
	assert_output --regexp '^[0-9]+ batches$'
	pkill -f "sleep 30" || true
}

@test "Stream: chute failing mid-epoch raises StreamError with its message and status" {
	# a corrupt last shard: the epoch fails after some batches
	local shards=(ds/shards/*.chs)
	flip_byte "${shards[-1]}" 200
	run -0 py "
n = 0
try:
    for b in stream(shuffle='none'):
        n += 1
    print('ended quietly after', n)
except chute.StreamError as e:
    print('StreamError after', n, 'batches: status', e.status)
    print(e)
    assert 'chute stream' in e.stderr
assert not children(), children()"
	assert_line --index 0 --regexp '^StreamError after [0-9]+ batches: status 1$'
	assert_line --index 1 --regexp '^chute stream failed \(exit 1\): chute stream: .*(checksum|hash)'
}

@test "Stream: chute killed mid-stream raises StreamError; never a short epoch" {
	run -0 py "
import signal
s = stream(batch_size=1, epochs=0)
try:
    for i, b in enumerate(s):
        if i == 2:
            pid = int(children()[0])
            os.kill(pid, signal.SIGKILL)
    print('ended quietly')
except chute.StreamError as e:
    print('StreamError:', e, e.status)
assert not children(), children()"
	assert_output --partial "StreamError: chute stream was killed by signal 9"
}

@test "Stream: a stream that ends without its last batch raises StreamError" {
	chute stream -b 3 ds -o full.bin
	# a chute that writes the first two frames of the stream and exits 0
	"$PYTHON" - <<-'EOF'
		import struct
		data = open("full.bin", "rb").read()
		n = 0
		for _ in range(2):
		    n += struct.unpack_from("<Q", data, n + 8)[0]
		open("two.bin", "wb").write(data[:n])
	EOF
	printf '#!/bin/sh\ncat %s/two.bin\n' "$PWD" >fake-chute
	chmod +x fake-chute
	run -0 py "
try:
    n = sum(1 for b in chute.Stream('ds', batch_size=3, chute='./fake-chute'))
    print('ended quietly after', n)
except chute.StreamError as e:
    print('StreamError:', e)"
	assert_output --regexp "^StreamError: chute stream ended without its last batch \(after ch1\.[^)]*\)$"
	# and a frame cut in the middle
	head -c 100 full.bin >cut.bin
	printf '#!/bin/sh\ncat %s/cut.bin\n' "$PWD" >fake-chute
	run -0 py "
try:
    for b in chute.Stream('ds', batch_size=3, chute='./fake-chute'):
        pass
except chute.StreamError as e:
    print('StreamError:', e)"
	assert_output --regexp "^StreamError: truncated frame"
}

@test "Stream: break, an exception, KeyboardInterrupt and garbage collection stop and reap chute" {
	run py "
import gc
for how in ('break', 'exception', 'interrupt', 'gc', 'close'):
    for shm in (False, True):
        s = stream(batch_size=1, epochs=0, shm=shm)
        try:
            for i, b in enumerate(s):
                assert children(), 'no chute running'
                if how == 'break':
                    break
                if how == 'exception':
                    raise RuntimeError('x')
                if how == 'interrupt':
                    raise KeyboardInterrupt
                if how in ('gc', 'close'):
                    t = stream(batch_size=1, epochs=0, shm=shm)
                    it = iter(t)
                    next(it)
                    assert len(children()) == 2
                    if how == 'gc':
                        del it
                        gc.collect()
                    else:
                        t.close()
                    break
        except (RuntimeError, KeyboardInterrupt):
            pass
        if how == 'close':
            del s, t
            gc.collect()
        left = children()
        assert not left, (how, shm, left)
        print(how, shm, 'reaped')
"
	[ "$status" -eq 0 ] || fail "exit $status: $output"
	assert_line "break True reaped"
	assert_line "interrupt False reaped"
	assert_line "gc True reaped"
	assert_line "close True reaped"
	run ls /dev/shm
	refute_output --partial "chute-py-"
}

@test "Stream: state_dict() resumes the exact batch sequence, across epochs" {
	run -0 py "
import json, pickle
full = [b.cursor for b in stream(epochs=3, seed=2)]
for k in (0, 3, len(full) // 2, len(full) - 2, len(full) - 1):
    s = stream(epochs=3, seed=2)
    for i, b in enumerate(s):
        if i == k:
            break
    state = pickle.loads(pickle.dumps(json.loads(json.dumps(s.state_dict()))))
    r = stream(epochs=3, seed=2)
    r.load_state_dict(state)
    try:
        rest = [b.cursor for b in r]
    except chute.StreamError as e:  # after the last batch of the 3 epochs
        assert k == len(full) - 1 and 'all 3 epochs' in str(e), (k, e)
        continue
    assert rest == full[k + 1:], (k, rest, full)
    assert [b.cursor for b in stream(epochs=3, seed=2, resume=state)] == rest
print('resumed', len(full))"
	assert_output --regexp '^resumed [0-9]+$'
}

@test "Stream: a state of other options or another dataset is a clear error" {
	run -0 py "
s = stream(epochs=1, seed=2)
it = iter(s); next(it); it.close()
state = s.state_dict()
for kw in ({'seed': 3}, {'batch_size': 4}, {'split': 'train'}, {'rank': 1, 'world_size': 2}):
    opts = dict(epochs=1, seed=2)
    opts.update(kw)
    try:
        stream(**opts).load_state_dict(state)
        print('accepted', kw)
    except chute.StateError as e:
        print('StateError:', e)
try:
    stream().load_state_dict({'cursor': 'x'})
except chute.StateError as e:
    print('StateError:', e)
"
	assert_line --index 0 --regexp "^StateError: the state was made by a stream with other options \(seed\): seed 2, now 3$"
	assert_line --index 1 --partial "(batch_size): batch_size 3, now 4"
	assert_line --index 2 --partial "(split): split None, now 'train'"
	# a cursor is every rank's, and resumes on another world size
	assert_line --index 3 "accepted {'rank': 1, 'world_size': 2}"
	assert_line --index 4 --partial "not a chute.Stream state_dict"
	# the same options on another version of the data: refused, naming both
	cp -r ds ds2
	echo changed >src/new.txt
	chute pack -q -s 5s -o ds2 src >/dev/null
	run -0 py "
s = stream(seed=2)
it = iter(s); next(it); it.close()
try:
    stream('ds2', seed=2).load_state_dict(s.state_dict())
except chute.StateError as e:
    print('StateError:', e)"
	assert_output --regexp "^StateError: the state is of dataset version [0-9a-f]{32} \('ds'\); 'ds2' is version [0-9a-f]{32}"
}

@test "Stream: rank and world size from the arguments, torch.distributed or RANK/WORLD_SIZE; ranks are disjoint" {
	run -0 py "
a = [k for b in stream(rank=0, world_size=2) for k in b.keys]
b = [k for b in stream(rank=1, world_size=2) for k in b.keys]
allk = [k for x in stream() for k in x.keys]
assert not set(a) & set(b) and set(a) | set(b) == set(allk)
os.environ.update(RANK='1', WORLD_SIZE='2')
s = stream()
print(s.rank, s.world_size, [k for x in s for k in x.keys] == b)"
	assert_output "1 2 True"
	run -0 py "
import torch.distributed as dist
dist.init_process_group('gloo', init_method='tcp://127.0.0.1:%d' % (20000 + os.getpid() % 20000), rank=0, world_size=1)
os.environ.update(RANK='5', WORLD_SIZE='9')
s = stream()
print(s.rank, s.world_size)"
	assert_line "0 1"  # gloo may warn about the host name on stderr
}

@test "Stream: a torch DataLoader with num_workers=0 gets the batches; num_workers=2 is refused" {
	run -0 py "
from torch.utils.data import DataLoader, IterableDataset
s = stream(transforms={'cls': 'int'}, as_torch=True)
assert isinstance(s, IterableDataset)
got = [b.cursor for b in DataLoader(s, batch_size=None, num_workers=0, collate_fn=lambda b: b)]
assert got == [b.cursor for b in stream(transforms={'cls': 'int'})]
try:
    list(DataLoader(s, batch_size=None, num_workers=2, collate_fn=lambda b: b))
except Exception as e:
    print(type(e).__name__, str(e).splitlines()[-1] if 'Caught' in str(e) else e)
print(len(got), 'batches')"
	assert_output --partial "num_workers=2: each worker would stream the same batches"
	assert_output --partial "num_workers=0"
}

@test "Stream: bad input is an exception that carries chute's message, and nothing hangs" {
	run -0 py "
for kw in ({'ds': 'missing'}, {'transforms': {'txt': 'frobnicate 3'}}, {'split': 'nosuch'},
           {'chute_path': './no-such-chute'}):
    path = kw.pop('chute_path', CHUTE)
    ds = kw.pop('ds', 'ds')
    try:
        list(chute.Stream(ds, batch_size=2, chute=path, **kw))
        print('no error', kw)
    except chute.StreamError as e:
        print('StreamError', e.status, e)
    except chute.MissingDependency as e:
        print('MissingDependency', e)
assert not children()"
	assert_line --index 0 "StreamError 2 chute stream failed (exit 2): chute stream: cannot open 'missing': No such file or directory"
	assert_line --index 1 --regexp "^StreamError 2 chute stream failed \(exit 2\): chute stream: --transform: 'txt: frobnicate 3'"
	assert_line --index 2 "StreamError 2 chute stream failed (exit 2): chute stream: 'ds' has no splits: make them with chute split"
	assert_line --index 3 --regexp "^MissingDependency cannot run the chute binary './no-such-chute': No such file or directory; .*chute="
	run -0 py "
for bad in (dict(batch_size=0), dict(mode='test'), dict(shuffle='random'), dict(rank=2, world_size=2)):
    kw = dict(batch_size=2); kw.update(bad)
    try:
        stream(**kw)
    except ValueError as e:
        print('ValueError:', e)"
	assert_equal "${#lines[@]}" 4
}

@test "Stream: --state of a folder that does not exist fails before the first batch" {
	run -0 py "
n = 0
try:
    for b in stream(extra_args=['--state', 'no/such/state']):
        n += 1
except chute.StreamError as e:
    print('after', n, 'batches:', e)"
	assert_output --regexp "^after 0 batches: chute stream failed \(exit 2\): .*no/such/state"
}

@test "Stream: record= keeps a run record naming the data and the last cursor; --replay streams it again" {
	run -0 py "
import json
s = stream(seed=3, record='run.json')
cursors = [b.cursor for b in s]
rec = json.load(open('run.json'))
print(rec['status'], rec['cursor'] == cursors[-1] == s.state_dict()['cursor'],
      rec['dataset']['id'] == json.load(open('ds/manifest.json'))['id'])
print('\n'.join(cursors), file=open('want', 'w'))"
	assert_output "done True True"
	chute stream --replay run.json | "$PYTHON" "$REPO_ROOT/scripts/chute_batch.py" | cut -d' ' -f5 >got
	diff want got
}

@test "package: make install and pip install ./python put an importable chute in place" {
	make -s -C "$REPO_ROOT" install DESTDIR="$PWD/root" PREFIX=/usr/local \
		>/dev/null || fail "make install failed"
	local site
	site=$(echo "$PWD"/root/usr/local/lib/python3*/dist-packages)
	assert_file_exists "$site/chute/__init__.py"
	assert_file_exists "$site/chute/stream.py"
	assert_file_exists "$site/chute/py.typed"
	run -0 env PYTHONPATH="$site" "$PYTHON" -c 'import chute; print(chute.__file__); print(chute.Stream, chute.StreamError)'
	assert_line --index 0 "$site/chute/__init__.py"
	"$PYTHON" -m pip --version >/dev/null 2>&1 || skip "no pip for $PYTHON (Debian: python3-pip)"
	cp -r "$REPO_ROOT/python" src-py
	run -0 "$PYTHON" -m pip install --no-build-isolation --no-deps --no-index \
		--target pip-site ./src-py
	run -0 env PYTHONPATH="$PWD/pip-site" "$PYTHON" -c 'import chute; print(chute.__file__, chute.__version__)'
	assert_output "$PWD/pip-site/chute/__init__.py $(chute --version | cut -d' ' -f2)"
}
