"""Where the chute binary is: find_chute().

    find_chute()                 the chute this Python should run
    find_chute("/opt/chute")     a path: returned as it is
    find_chute("chute-dev")      a name: the program of that name on PATH

Without an explicit chute, the binary that the platform wheel (`make
wheel`) installed beside this Python comes first, then `chute` on PATH.
"""

import functools
import os
import sys

from .errors import MissingDependency

__all__ = ["find_chute"]

FIXES = ("install it (`make install` in chute's repository), install the "
         "wheel that carries it (`make wheel`, then `pip install "
         "dist/chute-*.whl`), or pass its path: chute.Stream(..., "
         "chute=\"/path/to/chute\")")


@functools.lru_cache(maxsize=None)
def _wheel_dirs():
    """The folders where pip puts a wheel's scripts, this Python's first:
    the environment's scripts folder (a venv's bin/), the user's (pip
    install --user), the interpreter's own folder, and DIR/bin for pip
    install --target DIR (the package is then DIR/chute).  The same for
    the life of the process: worked out once (sysconfig takes a few ms to
    import, inside the first batch's wait)."""
    import sysconfig
    dirs = [sysconfig.get_path("scripts")]
    try:
        dirs.append(sysconfig.get_path("scripts", os.name + "_user"))
    except KeyError:
        pass
    dirs.append(os.path.dirname(sys.executable))
    here = os.path.dirname(os.path.abspath(__file__))
    dirs.append(os.path.join(os.path.dirname(here), "bin"))
    return tuple(d for i, d in enumerate(dirs) if d and d not in dirs[:i])


def _runnable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _which(name):
    """shutil.which(name) on POSIX, without importing shutil (which
    imports bz2 and lzma: 4 ms, inside the first batch's wait)."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder, name)
        if _runnable(path):
            return path
    return None


def find_chute(explicit=None):
    """The path of the chute binary to run.

    explicit: a path (it has a slash), returned as it is; or a program
    name, looked up on PATH.  None: the chute installed beside this Python
    by the platform wheel, else `chute` on PATH.  Raises
    chute.MissingDependency (an ImportError, name "chute") when there is
    none; its message says how to install one."""
    if explicit is not None:
        explicit = os.fspath(explicit)
        if os.sep in explicit or (os.altsep and os.altsep in explicit):
            return explicit
        found = _which(explicit)
        if found is None:
            raise MissingDependency("cannot find %r on PATH: %s" % (explicit, FIXES),
                                    explicit)
        return found
    for folder in _wheel_dirs():
        path = os.path.join(folder, "chute")
        if _runnable(path):
            return path
    found = _which("chute")
    if found is None:
        raise MissingDependency("cannot find the chute binary beside this "
                                "Python (%s) or on PATH: %s" % (sys.executable, FIXES),
                                "chute")
    return found
