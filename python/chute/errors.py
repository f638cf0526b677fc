"""Every exception the chute package raises on purpose: one base class,
one class per kind of failure, all importable from `chute` itself.

    Error                 anything chute raises on purpose
      DataError           the data failed a check (chute's exit status 1)
        FrameError        a malformed or truncated frame (also a ValueError)
      NotFoundError       no dataset at a path (also a FileNotFoundError)
      StateError          a state_dict that does not fit the stream
      StreamError         `chute stream` failed or ended early
        ShmError          the shared-memory ring failed (also a RuntimeError)
      MissingDependency   a module or the chute binary is not there (also
                          an ImportError)
    CacheWarning          a warning (a RuntimeWarning): chute.Dataset reads
                          at random through a cache too small for it
"""

import errno as _errno

__all__ = ["CacheWarning", "DataError", "Error", "FrameError", "MissingDependency",
           "NotFoundError", "ShmError", "StateError", "StreamError"]


class Error(Exception):
    """Anything the chute package raises on purpose."""


class DataError(Error):
    """The data failed a check: a hash, a size, a format rule (chute's exit
    status 1).  The message names the file and the byte offset."""


class FrameError(DataError, ValueError):
    """A malformed or truncated frame; the message names the byte offset."""


class NotFoundError(Error, FileNotFoundError):
    """No dataset at the path given: it does not exist, or it is a folder
    without manifest.json.  Both a chute.Error and a FileNotFoundError
    (errno ENOENT, filename the path)."""

    def __init__(self, message, path):
        super().__init__(_errno.ENOENT, message, path)
        self.message = message

    def __str__(self):
        return self.message

    def __reduce__(self):
        return (type(self), (self.message, self.filename))


class StreamError(Error):
    """`chute stream` failed or ended early.  `status` is its exit status
    (None when it was still running or died without one), `stderr` the last
    of what it printed."""

    def __init__(self, message, status=None, stderr=""):
        super().__init__(message)
        self.status = status
        self.stderr = stderr

    def __reduce__(self):
        return (type(self), (str(self), self.status, self.stderr))


class ShmError(StreamError, RuntimeError):
    """chute stream failed or died, the ring is taken or corrupt."""


class StateError(Error):
    """A state_dict that does not belong to this stream (another dataset,
    other options) or that is not a chute state at all."""


class MissingDependency(Error, ImportError):
    """Something chute needs is not installed: a Python module (torch,
    zstandard) or the chute binary.  The message says what to install;
    `name` is the missing module or program."""

    def __init__(self, message, name=None):
        ImportError.__init__(self, message, name=name)

    def __reduce__(self):
        return (type(self), (self.msg, self.name))


class CacheWarning(RuntimeWarning):
    """chute.Dataset reads at random through a cache too small for the
    dataset: each read decodes blocks again (see cache_bytes)."""
