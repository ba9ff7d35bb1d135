"""User-facing errors.

Anything raised as :class:`SkewbenchError` is a problem with the user's input (a missing file, a
bad option, a malformed trace, a corrupted dataset).  The command line prints its message on one
line and exits with status 2; no traceback.  Everything else is a bug and keeps its traceback.
"""


class SkewbenchError(Exception):
    """An error caused by the user's input; its message is shown as is."""


class DatasetError(SkewbenchError):
    """A dataset directory is missing, incomplete, corrupted or violates the contract."""


class ValidationFailed(SkewbenchError):
    """A Great Expectations suite failed; the message names dataset, expectation and value."""
