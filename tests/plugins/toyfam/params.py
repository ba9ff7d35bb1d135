"""The toy family's Params section."""

from __future__ import annotations

from typing import Any

from skewbench.errors import SkewbenchError

PARAMS: dict[str, dict[str, Any]] = {
    "workers": {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1, "default": [2, 4],
                "description": "Bin counts."},
}


def check(section: dict[str, Any]) -> None:
    if max(section["workers"]) > 64:
        raise SkewbenchError("the toy family takes at most 64 bins")


def job_args(section: dict[str, Any]) -> list[str]:
    return ["--workers", ",".join(map(str, section["workers"]))]
