"""The exceptions of the chute package: one base class, one per kind."""


class Error(Exception):
    """Anything the chute package raises on purpose."""


class DataError(Error):
    """The data failed a check: a hash, a size, a format rule (chute's exit
    status 1).  The message names the file and the byte offset."""


class StreamError(Error):
    """`chute stream` failed or ended early.  `status` is its exit status
    (None when it was still running or died without one), `stderr` the last
    of what it printed."""

    def __init__(self, message, status=None, stderr=""):
        super().__init__(message)
        self.status = status
        self.stderr = stderr


class StateError(Error):
    """A state_dict that does not belong to this stream (another dataset,
    other options) or that is not a chute state at all."""
