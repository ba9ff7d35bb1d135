#!/usr/bin/env python3
"""Check one CI stage's skipped tests against the reviewed list (.ci/allowed-skips.txt).

    python3 .ci/check_skips.py STAGE LOG [ALLOWED]

LOG is the stage's saved pytest output, with the section tests/skip_report.py prints (one
``SKIP <test> :: <reason>`` line per skipped test).  Every skip is listed with the rule that allows
it; the exit status is 1 when a skip matches no rule for STAGE, or when the count of skips in
pytest's final line differs from the lines listed (the section missing or cut), else 0.  Standard
library only: it runs before and without the project's environment.
"""

from __future__ import annotations

import fnmatch
import re
import sys
from pathlib import Path

PREFIX, SEP = "SKIP ", " :: "
TOTALS = re.compile(r"\b\d+ (?:passed|failed|errors?|xfailed|xpassed|deselected|skipped|warnings?)\b")


def read_rules(path: Path) -> list[tuple[str, re.Pattern, str]]:
    """(stage pattern, reason regex, why) of each rule line."""
    rules = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        body, _, why = line.partition("  # ")
        stage, _, pattern = body.strip().partition(" ")
        if not stage or not pattern.strip() or not why.strip():
            raise SystemExit(f"{path}:{n}: a rule is 'STAGE  REASON-REGEX  # why', got {line!r}")
        rules.append((stage, re.compile(pattern.strip()), why.strip()))
    return rules


def skips(log: str) -> tuple[list[tuple[str, str]], int | None]:
    """The (test, reason) lines of the sections, and the skip count of pytest's final lines, summed
    over the stage's pytest runs (None: no final line)."""
    found = []
    count = None
    for line in log.splitlines():
        if line.startswith(PREFIX) and SEP in line:
            test, _, reason = line[len(PREFIX):].partition(SEP)
            found.append((test.strip(), reason.strip()))
        elif TOTALS.search(line) and " in " in line:
            m = re.search(r"\b(\d+) skipped\b", line)  # a stage may run pytest more than once: summed
            count = (count or 0) + (int(m.group(1)) if m else 0)
    return found, count


def check(stage: str, log: str, rules: list[tuple[str, re.Pattern, str]]) -> tuple[list[str], bool]:
    """The report's lines and whether every skip is allowed."""
    found, count = skips(log)
    lines, ok = [f"{stage}: {len(found)} skipped test(s)"], True
    for test, reason in found:
        rule = next((r for r in rules if fnmatch.fnmatchcase(stage, r[0]) and r[1].fullmatch(reason)), None)
        if rule is None:
            ok = False
            lines.append(f"  NOT ALLOWED  {test} :: {reason}")
        else:
            lines.append(f"  allowed      {test} :: {reason}  ({rule[2]})")
    if count is not None and count != len(found):
        ok = False
        lines.append(f"  pytest counted {count} skipped but {len(found)} are listed: the skip section is missing or cut")
    if not ok:
        lines.append(f"{stage}: a skip not on .ci/allowed-skips.txt is a failure in CI (a missing JDK, browser, "
                     "Flink environment or data set included): fix the machine's set-up or the test")
    return lines, ok


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    stage, log = argv[1], Path(argv[2])
    allowed = Path(argv[3]) if len(argv) == 4 else Path(__file__).with_name("allowed-skips.txt")
    if not log.is_file():
        print(f"{stage}: no log at {log}", file=sys.stderr)
        return 2
    lines, ok = check(stage, log.read_text(errors="replace"), read_rules(allowed))
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
