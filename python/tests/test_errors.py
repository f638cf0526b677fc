"""Every exception class lives in chute.errors and is exported by chute."""

import inspect
import os
import pickle

import pytest

import chute
import chute.errors


def test_every_exception_class_is_in_chute_errors_and_all():
    classes = {n for n, v in vars(chute.errors).items()
               if inspect.isclass(v) and issubclass(v, BaseException)}
    assert classes == set(chute.errors.__all__)
    for name in classes:
        assert name in chute.__all__, name
        assert getattr(chute, name) is getattr(chute.errors, name)


def test_the_submodules_raise_the_same_classes():
    import chute.dataset
    import chute.frames
    import chute.shm
    assert chute.frames.FrameError is chute.FrameError
    assert chute.shm.ShmError is chute.ShmError
    assert chute.dataset.NotFoundError is chute.NotFoundError


def test_each_kind_is_also_the_builtin_a_caller_would_catch():
    assert issubclass(chute.FrameError, (chute.DataError, ValueError))
    assert issubclass(chute.NotFoundError, FileNotFoundError)
    assert issubclass(chute.ShmError, (chute.StreamError, RuntimeError))
    assert issubclass(chute.MissingDependency, ImportError)
    e = chute.MissingDependency("chute.Dataset needs zstandard", "zstandard")
    assert e.name == "zstandard" and str(e) == "chute.Dataset needs zstandard"


def test_the_exceptions_pickle_with_their_attributes():
    # a DataLoader worker's exception crosses to the main process pickled
    e = pickle.loads(pickle.dumps(chute.StreamError("failed", 1, "stderr")))
    assert (str(e), e.status, e.stderr) == ("failed", 1, "stderr")
    e = pickle.loads(pickle.dumps(chute.NotFoundError("no dataset", "/x")))
    assert (str(e), e.filename) == ("no dataset", "/x")
    e = pickle.loads(pickle.dumps(chute.MissingDependency("need it", "torch")))
    assert (str(e), e.name) == ("need it", "torch")


def test_a_kind_of_problem_is_the_class_of_chutes_exit_status(
        make_dataset, tmp_path):
    # as chute(1), EXIT STATUS: damaged or missing data is a DataError
    # (exit 1), no dataset a NotFoundError (exit 2)
    ds = make_dataset()
    shard = os.path.join(ds, "shards", "ds-000000.chs")
    lone = str(tmp_path / "x.chs")
    data = bytearray(open(shard, "rb").read())
    data[0] ^= 1
    open(lone, "wb").write(bytes(data))
    # a .chs file is a shard whatever its bytes, not a manifest
    with pytest.raises(chute.DataError, match="bad magic: not a chute shard"):
        chute.Dataset(lone)
    os.remove(shard)
    with pytest.raises(chute.DataError, match="ds-000000.chs"):
        chute.Dataset(ds)
    os.remove(os.path.join(ds, "manifest.json"))
    with pytest.raises(chute.NotFoundError):
        chute.Dataset(ds)
