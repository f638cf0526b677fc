"""Where the chute binary is (a stand-in until the wheel's binary lands)."""

import os
import shutil

from .errors import MissingDependency


def find_chute(explicit=None):
    """The chute binary: explicit (a path, or a name on PATH), else chute
    on PATH.  Raises MissingDependency naming the fixes."""
    name = explicit or "chute"
    if os.sep in name:
        if os.access(name, os.X_OK) and not os.path.isdir(name):
            return name
    else:
        found = shutil.which(name)
        if found:
            return found
    raise MissingDependency(
        "cannot find the chute binary %r: install chute (make install), or "
        "pass chute=\"/path/to/chute\"" % name, "chute")
