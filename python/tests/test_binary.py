"""chute._binary.find_chute: an explicit path or name, else the chute a
wheel installed beside this Python, else PATH, else MissingDependency."""

import os
import sys
import sysconfig

import pytest

import chute
from chute import _binary
from chute._binary import find_chute


def program(folder, name="chute", mode=0o755):
    """An executable file FOLDER/NAME (FOLDER made if need be)."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(path, mode)
    return path


@pytest.fixture
def nowhere(tmp_path, monkeypatch):
    """No wheel's folder and no PATH hold a chute; returns (wheel folder,
    PATH folder), both empty."""
    wheel, path = str(tmp_path / "wheel-bin"), str(tmp_path / "path-bin")
    os.makedirs(wheel)
    os.makedirs(path)
    monkeypatch.setattr(_binary, "_wheel_dirs", lambda: [wheel])
    monkeypatch.setenv("PATH", path)
    return wheel, path


def test_an_explicit_path_is_returned_as_it_is(nowhere):
    assert find_chute("/opt/chute/bin/chute") == "/opt/chute/bin/chute"
    assert find_chute("./build/chute") == "./build/chute"


def test_an_explicit_name_is_looked_up_on_path(nowhere):
    want = program(nowhere[1], "chute-dev")
    program(nowhere[0])  # a wheel's chute does not override the name given
    assert find_chute("chute-dev") == want
    with pytest.raises(chute.MissingDependency) as e:
        find_chute("chute-old")
    assert e.value.name == "chute-old"
    assert "'chute-old' on PATH" in str(e.value)


def test_the_wheels_chute_comes_before_path(nowhere):
    on_path = program(nowhere[1])
    assert find_chute() == on_path
    shipped = program(nowhere[0])
    assert find_chute() == shipped


def test_a_file_that_cannot_run_is_skipped(nowhere):
    program(nowhere[0], mode=0o644)
    os.makedirs(os.path.join(nowhere[0], "sub", "chute"))
    on_path = program(nowhere[1])
    assert find_chute() == on_path


def test_no_chute_anywhere_raises_and_names_the_fixes(nowhere):
    with pytest.raises(chute.MissingDependency) as e:
        find_chute()
    assert isinstance(e.value, ImportError) and e.value.name == "chute"
    for fix in ("make install", "make wheel", "pip install dist/chute-",
                'chute="/path/to/chute"', sys.executable):
        assert fix in str(e.value), fix


def test_the_wheel_folders_are_where_pip_puts_scripts():
    dirs = _binary._wheel_dirs()
    assert dirs[0] == sysconfig.get_path("scripts")  # a venv's bin/
    assert os.path.dirname(sys.executable) in dirs
    assert len(dirs) == len(set(dirs))
    # pip install --target DIR: the package is DIR/chute, scripts DIR/bin
    package = os.path.dirname(os.path.abspath(chute.__file__))
    assert os.path.join(os.path.dirname(package), "bin") == dirs[-1]
