"""The package's own build backend (python/_build/chute_build.py): the
metadata of pyproject.toml, and wheels pip can trust (RECORD's hashes)."""

import base64
import hashlib
import os
import sys
import tarfile
import zipfile

import pytest

import chute

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(PYTHON_DIR, "_build"))
import chute_build  # noqa: E402


def check_record(whl):
    """Every file of the wheel is in RECORD with its sha256 and size, and
    nothing else is; returns the names."""
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        record = [n for n in names if n.endswith(".dist-info/RECORD")]
        assert len(record) == 1
        listed = {}
        for line in z.read(record[0]).decode().splitlines():
            path, digest, size = line.rsplit(",", 2)
            listed[path] = (digest, size)
        assert sorted(listed) == sorted(names)
        for name in names:
            if name == record[0]:
                assert listed[name] == ("", "")
                continue
            data = z.read(name)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
            assert listed[name] == ("sha256=" + want.rstrip(b"=").decode(),
                                    str(len(data))), name
    return names


def test_the_toml_reader_for_old_pythons_reads_pyproject_as_tomllib_does():
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(PYTHON_DIR, "pyproject.toml"), "rb") as f:
        text = f.read().decode()
    assert chute_build._mini_toml(text) == tomllib.loads(text)


def test_pyproject_and_the_package_give_the_same_version():
    assert chute_build._project()["version"] == chute.__version__


def test_the_pure_wheel_has_every_module_py_typed_and_the_metadata(tmp_path):
    name = chute_build.build_wheel(str(tmp_path))
    assert name == "chute-%s-py3-none-any.whl" % chute.__version__
    names = check_record(str(tmp_path / name))
    modules = sorted(f for f in os.listdir(os.path.join(PYTHON_DIR, "chute"))
                     if f.endswith(".py"))
    assert sorted(n[6:] for n in names if n.startswith("chute/")) == \
        sorted(modules + ["py.typed"])
    with zipfile.ZipFile(str(tmp_path / name)) as z:
        meta = z.read("chute-%s.dist-info/METADATA" % chute.__version__).decode()
        wheel = z.read("chute-%s.dist-info/WHEEL" % chute.__version__).decode()
    assert "\nRequires-Dist: numpy\n" in meta
    assert '\nRequires-Dist: zstandard; extra == "dataset"\n' in meta
    assert '\nRequires-Dist: torch; extra == "torch"\n' in meta
    assert "Root-Is-Purelib: true\nTag: py3-none-any\n" in wheel
    assert os.listdir(str(tmp_path)) == [name]  # no temporary file left


def test_the_platform_wheel_carries_the_binary_and_the_man_pages(tmp_path):
    binary = tmp_path / "chute-bin"
    binary.write_bytes(b"\x7fELF not really")
    man = tmp_path / "man"
    man.mkdir()
    (man / "chute.1").write_text('.TH CHUTE 1 2026-12-05 "chute" "chute manual"\n')
    (man / "chute-shard.5").write_text(".TH CHUTE-SHARD 5\n")
    out = tmp_path / "dist"
    out.mkdir()
    name = chute_build.build_wheel(str(out), {"binary": str(binary), "man": str(man)})
    assert name.startswith("chute-%s-py3-none-" % chute.__version__)
    assert not name.endswith("-any.whl")
    names = check_record(str(out / name))
    data = "chute-%s.data/" % chute.__version__
    assert data + "scripts/chute" in names
    assert data + "data/share/man/man1/chute.1" in names
    assert data + "data/share/man/man5/chute-shard.5" in names
    with zipfile.ZipFile(str(out / name)) as z:
        mode = z.getinfo(data + "scripts/chute").external_attr >> 16
        assert mode & 0o777 == 0o755
        # the version, which the pages in man/ leave out, put in .TH
        page = z.read(data + "data/share/man/man1/chute.1").decode()
        assert page == '.TH CHUTE 1 2026-12-05 "chute %s" "chute manual"\n' % (
            chute.__version__)


def test_the_sdist_holds_what_the_wheel_is_built_from(tmp_path):
    sdist = chute_build.build_sdist(str(tmp_path))
    with tarfile.open(str(tmp_path / sdist)) as t:
        names = t.getnames()
    base = "chute-%s/" % chute.__version__
    for want in ("PKG-INFO", "pyproject.toml", "README.md",
                 "_build/chute_build.py", "chute/__init__.py", "chute/py.typed"):
        assert base + want in names, want
