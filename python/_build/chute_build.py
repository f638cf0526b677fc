"""chute_build - the chute package's own PEP 517 build backend.

pip builds the package with this file alone (pyproject.toml names it with
backend-path and requires nothing), so that `pip install ./python` works
offline in a plain venv: no setuptools, no `wheel` package, no index.

    build_wheel      chute-VERSION-py3-none-any.whl: chute/*.py, py.typed
    build_editable   a wheel whose .pth file puts python/ on sys.path (PEP 660)
    build_sdist      chute-VERSION.tar.gz
    prepare_metadata_for_build_wheel, get_requires_for_build_*

Run as a script it builds the platform wheel that carries the chute
binary (`make wheel`), as chute-VERSION.data/scripts/chute (pip puts it in
the environment's bin/) and the man pages under share/man:

    python3 python/_build/chute_build.py --binary build/chute --man man -o dist

pip passes the same as --config-settings binary=PATH --config-settings man=DIR.
The metadata comes from pyproject.toml's [project] table, the version from
chute/__init__.py, and the man pages' .TH lines get it.
"""

import ast
import base64
import gzip
import hashlib
import io
import os
import re
import stat
import sys
import sysconfig
import tarfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
PACKAGE = "chute"


def _mini_toml(text):
    """The TOML this pyproject.toml uses, for Pythons without tomllib
    (before 3.11): [tables], key = "string" | [strings] | {key = "string"},
    whole-line comments, arrays over several lines."""
    doc, table, pending = {}, None, ""
    for line in text.splitlines():
        s = (pending + " " + line.strip()).strip()
        if not s or s.startswith("#"):
            continue
        if s.count("[") > s.count("]"):
            pending = s
            continue
        pending = ""
        if s.startswith("["):
            table = doc
            for part in s.strip("[]").split("."):
                table = table.setdefault(part.strip(), {})
            continue
        key, _, value = s.partition("=")
        value = value.strip()
        if value.startswith("{"):
            value = re.sub(r'([\w-]+)\s*=', r'"\1":', value)
        table[key.strip().strip('"')] = ast.literal_eval(value)
    return doc


def _project():
    """pyproject.toml's [project] table, with the version (dynamic there)
    read from chute/__init__.py: it is written once for the package, and a
    test holds it to chute's CH_VERSION (README.md, "Releasing")."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        data = f.read()
    try:
        import tomllib
        project = tomllib.loads(data.decode("utf-8"))["project"]
    except ImportError:
        project = _mini_toml(data.decode("utf-8"))["project"]
    with open(os.path.join(ROOT, PACKAGE, "__init__.py"), encoding="utf-8") as f:
        found = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not found:
        raise RuntimeError("no __version__ in %s/__init__.py" % PACKAGE)
    project["version"] = found.group(1)
    return project


def _man_page(path, version):
    """A man page of man/ with the version put in its .TH line, where the
    source says "chute" alone so that the version lives in one place."""
    return re.sub(rb'^(\.TH .*)"chute"', lambda m: m.group(1) + b'"chute '
                  + version.encode() + b'"', _read(path), count=1, flags=re.M)


def _metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"],
             "Version: " + p["version"], "Summary: " + p["description"],
             "Requires-Python: " + p["requires-python"],
             "License: " + p["license"]["text"]]
    lines += ["Requires-Dist: " + d for d in p.get("dependencies", [])]
    for extra, deps in p.get("optional-dependencies", {}).items():
        lines.append("Provides-Extra: " + extra)
        lines += ['Requires-Dist: %s; extra == "%s"' % (d, extra) for d in deps]
    lines.append("Description-Content-Type: text/markdown")
    with open(os.path.join(ROOT, p["readme"]), encoding="utf-8") as f:
        return ("\n".join(lines) + "\n\n" + f.read()).encode("utf-8")


def _wheel_file(tag):
    return ("Wheel-Version: 1.0\nGenerator: chute_build\nRoot-Is-Purelib: %s\n"
            "Tag: %s\n" % ("true" if tag.endswith("-any") else "false", tag)).encode()


def _package_files():
    """(path in the wheel, path here) of the package: its .py files and
    the py.typed marker (PEP 561), never __pycache__."""
    out = []
    for folder, dirs, files in os.walk(os.path.join(ROOT, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py") or name == "py.typed":
                path = os.path.join(folder, name)
                out.append((os.path.relpath(path, ROOT).replace(os.sep, "/"), path))
    return out


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _epoch():
    """The date every archived file gets: SOURCE_DATE_EPOCH, else 1980
    (zip's first year)."""
    return max(int(os.environ.get("SOURCE_DATE_EPOCH") or 0), 315532800)


def _stamp():
    return time.gmtime(_epoch())[:6]


class _Wheel:
    """A wheel being written: a zip whose RECORD lists every file with its
    sha256 (urlsafe base64, no padding) and size."""

    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self.record = []

    def add(self, name, data, mode=0o644):
        info = zipfile.ZipInfo(name, _stamp())
        info.external_attr = (stat.S_IFREG | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
        self.record.append("%s,sha256=%s,%d" % (name, digest.rstrip(b"=").decode(),
                                                len(data)))

    def close(self, dist_info):
        self.record.append(dist_info + "/RECORD,,")
        info = zipfile.ZipInfo(dist_info + "/RECORD", _stamp())
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        self.zip.writestr(info, "\n".join(self.record) + "\n")
        self.zip.close()


def _build(outdir, binary=None, man=None, editable=False):
    p = _project()
    name, version = p["name"].replace("-", "_"), p["version"]
    tag = "py3-none-any"
    if binary:
        tag = "py3-none-" + re.sub(r"[-.]", "_", sysconfig.get_platform())
    whl = "%s-%s-%s.whl" % (name, version, tag)
    dist_info, data = "%s-%s.dist-info" % (name, version), "%s-%s.data" % (name, version)
    tmp = os.path.join(outdir, whl + ".tmp")  # nothing half-written under the name
    w = _Wheel(tmp)
    try:
        if editable:
            w.add("__editable__.%s.pth" % name, (ROOT + "\n").encode())
        else:
            for arcname, path in _package_files():
                w.add(arcname, _read(path))
        if binary:
            w.add(data + "/scripts/chute", _read(binary), 0o755)
        if man:
            for page in sorted(os.listdir(man)):
                section = page.rsplit(".", 1)[-1]
                if section.isdigit():
                    w.add("%s/data/share/man/man%s/%s" % (data, section, page),
                          _man_page(os.path.join(man, page), version))
        w.add(dist_info + "/METADATA", _metadata(p))
        w.add(dist_info + "/WHEEL", _wheel_file(tag))
        w.close(dist_info)
        os.replace(tmp, os.path.join(outdir, whl))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return whl


# -- PEP 517 and PEP 660 hooks

def get_requires_for_build_wheel(config_settings=None):
    return []


get_requires_for_build_sdist = get_requires_for_build_editable = \
    get_requires_for_build_wheel


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    p = _project()
    dist_info = "%s-%s.dist-info" % (p["name"].replace("-", "_"), p["version"])
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with open(os.path.join(metadata_directory, dist_info, "METADATA"), "wb") as f:
        f.write(_metadata(p))
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    cs = config_settings or {}
    return _build(wheel_directory, cs.get("binary"), cs.get("man"))


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _build(wheel_directory, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = "%s-%s" % (p["name"].replace("-", "_"), p["version"])
    files = [("PKG-INFO", _metadata(p))]
    for rel in ("pyproject.toml", p["readme"], "_build/chute_build.py"):
        files.append((rel, _read(os.path.join(ROOT, rel))))
    files += [(arcname, _read(path)) for arcname, path in _package_files()]
    tgz = base + ".tar.gz"
    with open(os.path.join(sdist_directory, tgz), "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel, data in files:
            info = tarfile.TarInfo(base + "/" + rel)
            info.size, info.mode = len(data), 0o644
            info.mtime = _epoch()
            tar.addfile(info, io.BytesIO(data))
    return tgz


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description="Build the chute wheel; with "
                                 "--binary, the platform wheel that carries it.")
    ap.add_argument("--binary", help="the chute binary to ship (bin/chute)")
    ap.add_argument("--man", help="a folder of man pages to ship (share/man)")
    ap.add_argument("-o", "--outdir", default="dist", help="where (default dist)")
    args = ap.parse_args(argv)
    os.makedirs(args.outdir, exist_ok=True)
    print(os.path.join(args.outdir, _build(args.outdir, args.binary, args.man)))


if __name__ == "__main__":
    sys.exit(main())
