"""How error messages show long values: a value repeated from the user's input is cut to its ends and
its length; a path a message names stays whole (the user needs it to act)."""

from __future__ import annotations

from skewbench.errors import MAX_SHOWN, MAX_WORD, short_message, shown


def test_shown_cuts_a_long_value_to_its_ends_and_length():
    assert shown("abc") == "'abc'"
    v = "a" + "x" * 100_000 + "z"
    out = shown(v)
    assert out.startswith("'axx") and "xxz'" in out and "…" in out and out.endswith("(100,004 characters)")
    assert len(out) < 100
    assert shown("y" * (MAX_SHOWN - 2)) == repr("y" * (MAX_SHOWN - 2))  # at the limit: whole


def test_short_message_keeps_paths_and_cuts_only_huge_words():
    path = "/tmp/pytest-of-root/pytest-192/test_cli_refuses_a_missing_fli0/no-flink/bin/python"
    msg = f"the interpreter {path} does not exist"
    assert short_message(msg) == msg
    long_path = "/" + "d/" * (MAX_WORD // 2 - 1) + "x"  # MAX_WORD characters: whole
    assert len(long_path) == MAX_WORD and short_message(f"log: {long_path}") == f"log: {long_path}"
    huge = "v" * (MAX_WORD + 1)
    cut = short_message(f"got {huge} here")
    assert cut.startswith("got vvv") and cut.endswith(f"({MAX_WORD + 1:,} characters) here") and len(cut) < 100
