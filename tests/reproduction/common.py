"""What the reproduction tests share."""

from __future__ import annotations

import json
import os


def record(name: str, **values) -> None:
    """Print a measured target's numbers as a ``REPRO {json}`` line (visible with ``-s``) and append
    it to ``$SKEWBENCH_REPRO_LOG`` when set; REPRODUCTION.md copies them."""
    line = json.dumps({"test": name, **values}, default=float)
    print("REPRO " + line)
    path = os.environ.get("SKEWBENCH_REPRO_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def rounds_to(x: float, value: float, step: float) -> bool:
    """``x`` equals ``value`` as REPRODUCTION.md writes it (rounded to a multiple of ``step``)."""
    return abs(x - value) <= step / 2 + 1e-9
