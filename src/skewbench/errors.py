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


#: a value longer than this (its text) is shown cut in an error message: its first and last
#: characters and its length (:func:`shown`)
MAX_SHOWN = 80
#: the command line's guard (:func:`short_message`) cuts only words longer than this: a path or a
#: URL a message names stays whole (a user needs it to act), a value repeated from a 100 KB input
#: does not
MAX_WORD = 400
_KEEP = 30


def shown(value: object, quote: bool = True) -> str:
    """A value as an error message shows it: its ``repr`` (``str`` with ``quote=False``), cut to its
    first and last characters and its length when longer than :data:`MAX_SHOWN`, e.g.
    ``'7777…7777' (100,002 characters)``: a 100 KB bad value gives a short line."""
    text = repr(value) if quote else str(value)
    if len(text) <= MAX_SHOWN:
        return text
    return f"{text[:_KEEP]}…{text[-_KEEP:]} ({len(text):,} characters)"


def short_message(message: str) -> str:
    """A message with every word (run without white space) longer than :data:`MAX_WORD` cut as
    :func:`shown` cuts a value: the command line's guard for values an error repeats from the
    user's input that no :func:`shown` cut."""
    import re

    return re.sub(r"\S{%d,}" % (MAX_WORD + 1), lambda m: shown(m.group(0), quote=False), str(message))
