"""chute.Stream in the loop shapes trainers write: a pass per epoch, len(),
set_epoch, a state that resumes wherever the data is, and a pass open
twice refused.  The reference is always `chute stream` itself."""

import io
import json
import os
import pickle
import shutil
import subprocess
import sys

import pytest

import chute
from chute import frames

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402


def cli_batches(chute_bin, ds, *args):
    """The keys of each batch of `chute stream ARGS DS` (jsonl)."""
    out = subprocess.run([chute_bin, "stream", "-f", "jsonl"] + list(args)
                         + ["--", ds], check=True, capture_output=True).stdout
    batches = {}
    for line in out.decode().splitlines():
        s = json.loads(line)
        batches.setdefault((s["epoch"], s["batch"]), []).append(s["key"])
    return [keys for _, keys in sorted(batches.items())]


def cli_cursors(chute_bin, ds, *args):
    """The cursor of each batch of `chute stream ARGS DS` (batch format)."""
    data = subprocess.run([chute_bin, "stream"] + list(args) + ["--", ds],
                          check=True, capture_output=True).stdout
    return [fr.cursor for fr in frames.frames(io.BytesIO(data))]


def seen(batches):
    return [(b.cursor, list(b.keys)) for b in batches]


@pytest.fixture
def ds(make_dataset):
    return make_dataset()  # 40 text samples in shards of 5


def make(ds, chute_bin, **kw):
    kw.setdefault("batch_size", 3)
    kw.setdefault("seed", 2)
    return chute.Stream(ds, chute=chute_bin, **kw)


def test_each_pass_streams_the_next_epoch_in_a_bare_loop_and_a_dataloader(ds, chute_bin):
    want = cli_cursors(chute_bin, ds, "-b", "3", "--seed", "2", "--epochs", "3")
    want_keys = cli_batches(chute_bin, ds, "-b", "3", "--seed", "2", "--epochs", "3")
    s = make(ds, chute_bin)
    bare = [seen(s) for _epoch in range(3)]
    s = make(ds, chute_bin)
    loader = DataLoader(s, batch_size=None, num_workers=0, collate_fn=lambda b: b)
    loaded = [seen(loader) for _epoch in range(3)]
    assert bare == loaded
    assert [c for p in bare for c, _ in p] == want
    assert [k for p in bare for _, k in p] == want_keys
    assert [len(p) for p in bare] == [len(s)] * 3
    # epochs=3: the same batches in one pass, as before
    assert [c for c, _ in seen(make(ds, chute_bin, epochs=3))] == want


def test_len_is_what_a_pass_yields_for_this_rank(ds, chute_bin):
    for kw in ({}, {"drop_last": True}, {"world_size": 3, "rank": 2},
               {"world_size": 3, "rank": 1, "drop_last": True},
               {"mode": "eval", "world_size": 3, "rank": 2},
               {"batch_size": 7}, {"epochs": 2}):
        s = make(ds, chute_bin, **kw)
        assert len(s) == len(list(s)), kw
    with pytest.raises(TypeError, match="for ever"):
        len(make(ds, chute_bin, epochs=0))


def test_set_epoch_starts_a_pass_at_that_epoch_as_a_sampler_does(ds, chute_bin):
    want = cli_cursors(chute_bin, ds, "-b", "3", "--seed", "2", "--epochs", "4")
    per = len(want) // 4
    s = make(ds, chute_bin)
    got = []
    for epoch in (2, 3, 0):
        s.set_epoch(epoch)
        got.append([b.cursor for b in s])
    assert got == [want[2 * per:3 * per], want[3 * per:], want[:per]]
    with pytest.raises(ValueError):
        make(ds, chute_bin, epochs=2).set_epoch(2)


def test_a_pass_started_while_another_is_open_is_refused(ds, chute_bin):
    s = make(ds, chute_bin)
    first = iter(s)
    next(first)
    with pytest.raises(chute.StreamError, match="already open"):
        next(iter(s))
    with pytest.raises(chute.StreamError, match="open"):
        s.set_epoch(1)
    first.close()  # the first pass ends: the next one goes on after it
    rest = [b.cursor for b in s]
    assert rest == cli_cursors(chute_bin, ds, "-b", "3", "--seed", "2")[1:]


@pytest.mark.parametrize("epochs", [None, 3])
def test_a_state_taken_anywhere_resumes_with_exactly_the_next_batch(ds, chute_bin, epochs):
    want = cli_cursors(chute_bin, ds, "-b", "3", "--seed", "2", "--epochs", "3")
    per = len(want) // 3
    for k in (0, per - 1, per, per + 4, 2 * per - 1):  # mid-epoch and at its end
        s = make(ds, chute_bin, epochs=epochs)
        got = []
        for b in s if epochs else (b for _ in range(3) for b in s):
            got.append(b.cursor)
            if len(got) == k + 1:
                break
        state = s.state_dict()
        r = make(ds, chute_bin, epochs=epochs)
        r.load_state_dict(state)
        if epochs:
            rest = [b.cursor for b in r]
        else:
            rest = []
            while len(got) + len(rest) < len(want):
                rest += [b.cursor for b in r]
        assert got + rest == want, k


def test_a_state_after_the_last_epoch_of_epochs_e_is_an_error_not_an_empty_pass(ds, chute_bin):
    s = make(ds, chute_bin, epochs=2)
    list(s)
    with pytest.raises(chute.StreamError, match="all 2 epochs"):
        list(s)
    r = make(ds, chute_bin, epochs=2, resume=s.state_dict())
    with pytest.raises(chute.StreamError, match="set_epoch"):
        next(iter(r))


def test_a_bare_cursor_at_an_epoch_end_resumes_in_the_next_epoch(ds, chute_bin):
    want = cli_cursors(chute_bin, ds, "-b", "3", "--seed", "2", "--epochs", "2")
    per = len(want) // 2
    r = make(ds, chute_bin, resume=want[per - 1])
    assert r.epoch == 1
    assert [b.cursor for b in r] == want[per:]


def test_the_state_fits_the_data_not_the_path_that_names_it(ds, chute_bin, tmp_path, monkeypatch):
    s = make(ds, chute_bin)
    it = iter(s)
    for _ in range(4):
        next(it)
    it.close()
    state = s.state_dict()
    rest = [b.cursor for b in make(ds, chute_bin, resume=state)]
    copy = str(tmp_path / "elsewhere" / "copy")
    shutil.copytree(ds, copy)
    monkeypatch.chdir(tmp_path / "elsewhere")
    for spelling in (os.path.abspath(ds), "copy", "./copy/", os.path.abspath(copy)):
        r = make(spelling, chute_bin)
        r.load_state_dict(state)
        assert [b.cursor for b in r] == rest, spelling
    # another rank, another world size: the cursor is every rank's
    r = make(ds, chute_bin, rank=1, world_size=2)
    r.load_state_dict(state)


def test_a_state_of_another_version_is_refused_naming_both_ids(ds, chute_bin, tmp_path):
    s = make(ds, chute_bin)
    next(iter(s))
    state = s.state_dict()
    other = str(tmp_path / "other")
    src = str(tmp_path / "src")
    os.makedirs(src)
    with open(os.path.join(src, "a.txt"), "w") as f:
        f.write("another dataset\n")
    subprocess.run([chute_bin, "pack", "-q", "-o", other, src], check=True,
                   stdout=subprocess.DEVNULL)
    r = make(other, chute_bin)
    with pytest.raises(chute.StateError) as e:
        r.load_state_dict(state)
    assert s.dataset_id in str(e.value) and r.dataset_id in str(e.value)
    with pytest.raises(chute.StateError, match=r"other options \(seed\)"):
        make(ds, chute_bin, seed=3).load_state_dict(state)


def test_the_state_round_trips_through_torch_save_and_load(ds, chute_bin, tmp_path):
    s = make(ds, chute_bin)
    it = iter(s)
    next(it), next(it)
    it.close()
    path = str(tmp_path / "ckpt.pt")
    torch.save({"model": {}, "data": s.state_dict()}, path)
    try:
        loaded = torch.load(path, weights_only=True)
    except TypeError:  # torch before 1.13's weights_only
        loaded = torch.load(path)
    r = make(ds, chute_bin)
    r.load_state_dict(loaded["data"])
    assert [b.cursor for b in r] == [b.cursor for b in make(ds, chute_bin, resume=s.state_dict())]
    assert pickle.loads(pickle.dumps(s.state_dict())) == s.state_dict()


def test_a_missing_binary_is_a_missing_dependency_naming_the_chute_argument(ds, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    s = chute.Stream(ds, batch_size=3)
    with pytest.raises(chute.MissingDependency, match="chute=") as e:
        next(iter(s))
    assert isinstance(e.value, ImportError)
    with pytest.raises(chute.MissingDependency, match="chute="):
        len(s)


def test_a_remote_dataset_has_a_len_and_takes_a_local_copys_state(ds, chute_bin, tmp_path):
    remote = "file://%s" % (tmp_path / "remote")
    subprocess.run([chute_bin, "push", "-q", ds, remote, "--tag", "v1"],
                   check=True, capture_output=True)
    cache = str(tmp_path / "cache")
    r = make(remote + "@v1", chute_bin, extra_args=["--remote-cache", cache])
    local = make(ds, chute_bin)
    assert len(r) == len(local) and r.dataset_id == local.dataset_id
    # len() read the manifest alone: no shard is in the cache yet
    cached = [f for _, _, files in os.walk(cache) for f in files]
    assert not [f for f in cached if not f.endswith(".json")], cached
    it = iter(local)
    next(it), next(it)
    it.close()
    r.load_state_dict(local.state_dict())
    assert [b.cursor for b in r] == [b.cursor for b in local]


def run_python(code, *args):
    """code run by a fresh interpreter that finds the package as the tests
    do; its stdout."""
    path = os.path.join(os.path.dirname(os.path.abspath(chute.__file__)), "..")
    return subprocess.run([sys.executable, "-c", code] + list(args),
                          check=True, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=path)).stdout


def test_a_numpy_trainer_never_waits_for_torch_to_import(ds, chute_bin):
    # importing torch takes seconds, more than a small dataset's first epoch
    out = run_python(
        "import sys, chute\n"
        "s = chute.Stream(sys.argv[1], chute=sys.argv[2], batch_size=3)\n"
        "n = sum(len(b) for b in s)\n"
        "print(n, 'torch' in sys.modules, isinstance(s, chute.Stream))",
        ds, chute_bin)
    assert out.split() == ["40", "False", "True"]


def test_a_stream_made_after_torch_is_imported_is_an_iterable_dataset(ds, chute_bin):
    out = run_python(
        "import pickle, sys, chute\n"
        "early = chute.Stream(sys.argv[1], chute=sys.argv[2], batch_size=3)\n"
        "from torch.utils.data import DataLoader, IterableDataset\n"
        "s = chute.Stream(sys.argv[1], chute=sys.argv[2], batch_size=3)\n"
        "again = pickle.loads(pickle.dumps(s))\n"
        "print(isinstance(s, IterableDataset), isinstance(s, chute.Stream),\n"
        "      type(again) is type(s), isinstance(early, IterableDataset))\n"
        "loaded = DataLoader(s, batch_size=None, collate_fn=lambda b: b)\n"
        "print(sum(len(b) for b in loaded))\n"
        "try:\n"
        "    next(iter(DataLoader(early, batch_size=None)))\n"
        "except TypeError as e:\n"
        "    print(e)\n",
        ds, chute_bin)
    lines = out.splitlines()
    assert lines[0].split() == ["True", "True", "True", "False"]
    assert lines[1] == "40"
    assert "import torch before making the Stream" in lines[2]
