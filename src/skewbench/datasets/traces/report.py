"""The ingest report: lines, tuples, malformed lines (with a few examples), dropped and blank
lines, per file; the check against ``--max-malformed`` and the early stop when a wrong
``--format`` makes every line malformed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from skewbench.datasets.traces.reading import Rows
from skewbench.errors import SkewbenchError

MAX_EXAMPLES = 5
EARLY_STOP_LINES = 100_000


@dataclass
class _FileStats:
    path: str
    lines: int = 0
    tuples: int = 0
    malformed: int = 0
    dropped: int = 0


@dataclass
class Report:
    paths: list[Path]
    max_malformed: float
    fmt: str
    lines: int = 0
    tuples: int = 0
    malformed: int = 0
    dropped: int = 0
    blank: int = 0
    comment: int = 0
    header: int = 0
    value_missing: int = 0
    reordered: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, _FileStats] = field(default_factory=dict)

    def add(self, rows: Rows) -> None:
        kept = len(rows.keys)
        self.lines += rows.lines
        self.tuples += kept
        self.malformed += len(rows.malformed)
        self.dropped += rows.dropped
        self.blank += rows.blank
        self.comment += rows.comment
        self.header += rows.header
        if rows.value is not None and kept:
            self.value_missing += int(np.isnan(rows.value).sum())
        fs = self.files.setdefault(str(rows.path), _FileStats(str(rows.path)))
        fs.lines += rows.lines
        fs.tuples += kept
        fs.malformed += len(rows.malformed)
        fs.dropped += rows.dropped
        for ln in rows.malformed[:MAX_EXAMPLES - len(self.examples)]:
            self.examples.append({"file": str(rows.path), "line": int(ln),
                                  "text": rows.example(int(ln))})
        if self.lines >= EARLY_STOP_LINES and self.malformed == self.lines:
            raise SkewbenchError(self._message(early=True))

    def check(self) -> None:
        if self.lines and self.malformed / self.lines > self.max_malformed:
            raise SkewbenchError(self._message())

    def _message(self, early: bool = False) -> str:
        where = str(self.paths[0]) if len(self.paths) == 1 else \
            f"{len(self.paths)} inputs ({self.paths[0]}, ...)"
        first = self.examples[0] if self.examples else None
        at = ""
        if first is not None:
            loc = f"line {first['line']}" if len(self.paths) == 1 else \
                f"{first['file']} line {first['line']}"
            at = f"; first at {loc}: {first['text']!r}"
        if early:
            return (f"{where}: all of the first {self.lines} lines are malformed; is "
                    f"--format {self.fmt} right?{at}")
        return (f"{where}: {self.malformed} of {self.lines} lines "
                f"({_pct(self.malformed / self.lines)}) are malformed, above --max-malformed "
                f"{_pct(self.max_malformed)}{at}")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "lines": self.lines,
            "tuples": self.tuples,
            "malformed": self.malformed,
            "malformed_examples": self.examples,
            "dropped": self.dropped,
        }
        if self.fmt == "google-cluster":
            d["dropped_out_of_trace"] = self.dropped
            d["value_missing"] = self.value_missing
        d.update({
            "reordered": self.reordered,
            "blank_lines": self.blank,
            "comment_lines": self.comment,
            "header_lines": self.header,
            "files": [vars(f) for f in self.files.values()],
        })
        return d


def _pct(x: float) -> str:
    return f"{x * 100:.4g}%"
