"""Fixtures of the chute package's tests (pytest), and a TAP report.

    chute_bin     the chute binary: $CHUTE_BIN, else build/chute
    make_dataset  make_dataset(kind="text", count=40, shards="5s", ...)
                  packs a seeded dataset (scripts/gen-data.py) into a
                  fresh folder and returns its path; made once per
                  session for the same arguments, copied for each test

The tests import the package from python/ (this file puts it first on
sys.path), as an installed one would be found.  With $CHUTE_TAP=FILE the
results are also written to FILE as TAP (scripts/run-tests.sh counts it).
"""

import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))


@pytest.fixture(scope="session")
def chute_bin():
    path = os.environ.get("CHUTE_BIN") or os.path.join(REPO, "build", "chute")
    if not os.access(path, os.X_OK):
        pytest.fail("chute binary not found at %r (run make first)" % path)
    return path


@pytest.fixture(scope="session")
def _dataset_cache(tmp_path_factory):
    return {}


@pytest.fixture
def make_dataset(chute_bin, tmp_path, tmp_path_factory, _dataset_cache):
    """make_dataset(kind="text", count=40, shards="5s", name="ds",
    gen_args=(), pack_args=()) -> the path of a packed dataset."""

    def make(kind="text", count=40, shards="5s", name="ds", gen_args=(),
             pack_args=()):
        key = (kind, count, shards, tuple(gen_args), tuple(pack_args))
        made = _dataset_cache.get(key)
        if made is None:
            base = tmp_path_factory.mktemp("fixture")
            src = str(base / "src")
            gen = [sys.executable, os.path.join(REPO, "scripts", "gen-data.py"),
                   kind, src]
            if kind != "mixed":
                gen += ["--count", str(count)]
            subprocess.run(gen + ["-q"] + list(gen_args), check=True)
            made = str(base / "ds")
            subprocess.run([chute_bin, "pack", "-q", "-s", shards, "-o", made]
                           + list(pack_args) + [src], check=True,
                           stdout=subprocess.DEVNULL)
            _dataset_cache[key] = made
        dest = str(tmp_path / name)
        shutil.copytree(made, dest)
        return dest

    return make


# -- TAP, for scripts/run-tests.sh

_tap = {"n": 0, "file": None}


def pytest_sessionstart(session):
    path = os.environ.get("CHUTE_TAP")
    if path:
        _tap["file"] = open(path, "w")


def pytest_runtest_logreport(report):
    f = _tap["file"]
    if f is None:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        _tap["n"] += 1
        if report.skipped:
            f.write("ok %d - %s # skip\n" % (_tap["n"], report.nodeid))
        else:
            f.write("%s %d - %s\n" % ("ok" if report.passed else "not ok",
                                       _tap["n"], report.nodeid))
        f.flush()
    elif report.when == "teardown" and report.failed:
        _tap["n"] += 1
        f.write("not ok %d - %s (teardown)\n" % (_tap["n"], report.nodeid))


def pytest_sessionfinish(session, exitstatus):
    f = _tap["file"]
    if f is not None:
        f.write("1..%d\n" % _tap["n"])
        f.close()
