"""debian_python.py - run chute's scripts under a Python that has their packages.

The python3 first on PATH may be a build of its own (pyenv, conda, a
virtualenv) that does not see Debian's python3-numpy, python3-pil or
python3-torch, while /usr/bin/python3 does.  A script calls

    import debian_python
    debian_python.require("numpy", "PIL")

before importing them.  When the running interpreter lacks one of them and
the script runs as a program, it runs itself again, same arguments and same
standard streams, under /usr/bin/python3 (once: CHUTE_PYTHON_REEXEC marks
the second run).  When that one lacks it too, or when the caller is a
module imported by someone else's program (which must not be replaced),
it stops with a message naming the Debian package to install.
"""

import importlib.util
import os
import sys

# import name -> Debian package
PACKAGES = {
    "numpy": "python3-numpy",
    "PIL": "python3-pil",
    "torch": "python3-torch",
    "torchvision": "python3-torchvision",
    "zstandard": "python3-zstandard",
    "xxhash": "python3-xxhash",
}
DEBIAN_PYTHON = "/usr/bin/python3"
MARK = "CHUTE_PYTHON_REEXEC"


def missing(modules):
    """The modules of `modules` that this interpreter cannot import."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


def _same_interpreter(path):
    try:
        return os.path.samefile(os.path.realpath(sys.executable), path)
    except OSError:
        return False


def require(*modules, program=None):
    """Returns when every module of `modules` can be imported.

    Otherwise, for a script run as a program (`program` is its name, or
    sys.argv[0] when the caller's __name__ is "__main__"), runs it again
    under Debian's python3 if that is another interpreter; else exits with
    status 2 and a line naming the Debian packages.  For an imported module
    (program None and not __main__) raises ImportError with that line."""
    lack = missing(modules)
    if not lack:
        return
    caller = sys._getframe(1).f_globals.get("__name__")
    as_program = program is not None or caller == "__main__"
    if (as_program and not os.environ.get(MARK) and os.access(DEBIAN_PYTHON, os.X_OK)
            and not _same_interpreter(DEBIAN_PYTHON) and sys.argv and sys.argv[0]
            and os.path.exists(sys.argv[0])):
        os.environ[MARK] = sys.executable or "python3"
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON] + sys.argv)
    tried = [os.environ.get(MARK) or sys.executable or "python3"]
    if sys.executable and sys.executable not in tried:
        tried.append(sys.executable)
    name = program or (os.path.basename(sys.argv[0]) if as_program else caller)
    pkgs = " ".join(PACKAGES.get(m, "python3-" + m.lower()) for m in lack)
    who = ("%s cannot" % tried[0] if len(tried) == 1
           else "neither %s can" % " nor ".join(tried))
    msg = ("%s: needs the Python module%s %s, which %s import: "
           "apt-get install %s (Debian's /usr/bin/python3 sees it), or run it "
           "with a python3 that has %s" % (
               name, "s" if len(lack) > 1 else "", ", ".join(lack), who, pkgs,
               "them" if len(lack) > 1 else "it"))
    if as_program:
        print(msg, file=sys.stderr)
        sys.exit(2)
    raise ImportError(msg)


def use_repo_package():
    """Makes `import chute` work for a script run from the repository:
    the installed package (make install, pip install ./python) when there
    is one, else the one in python/ beside this scripts/ folder."""
    if importlib.util.find_spec("chute") is None:
        here = os.path.dirname(os.path.realpath(__file__))  # scripts/ may be a link
        sys.path.insert(0, os.path.join(os.path.dirname(here), "python"))
