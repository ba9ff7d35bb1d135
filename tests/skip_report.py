"""A pytest plugin: every skipped test, one line each with its full reason, at the end of the run.

pytest's ``-rs`` summary folds the skips of one place into one line (``SKIPPED [12] file:line:
reason``) and names no test; this section names each, untruncated, in a form ``.ci/check_skips.py``
reads from CI's saved output::

    ============ skipped tests (2), each with its reason ============
    SKIP tests/x.py::test_a[1] :: slow: run with make slow (SKEWBENCH_REPRODUCE=full)

``tests/conftest.py`` loads it for every run; ``python -m pytest -p tests.skip_report`` elsewhere.
"""

from __future__ import annotations

#: the section's title and each line's prefix (what .ci/check_skips.py parses)
TITLE = "skipped tests"
PREFIX = "SKIP "
SEP = " :: "


def skip_reason(report) -> str:
    """A skip report's reason, on one line, without pytest's "Skipped: " prefix."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    reason = " ".join(str(reason).split())
    return reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason


def pytest_terminal_summary(terminalreporter) -> None:
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    terminalreporter.section(f"{TITLE} ({len(skipped)}), each with its reason")
    for rep in sorted(skipped, key=lambda r: r.nodeid):
        terminalreporter.write_line(f"{PREFIX}{rep.nodeid}{SEP}{skip_reason(rep)}")
