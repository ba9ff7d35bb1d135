"""The grouping family's section of the nightly pipeline's Params (light: read at DAG parse time).

The pipeline shows these fields under a "grouping" section of the trigger form, named
``grouping_<name>`` (the family's strategies, ``grouping_strategies``, are added by the pipeline
from the family's table), validates them with :data:`PARAMS` (JSON schema) and :func:`check`, and
turns them into the arguments of ``skewbench replay grouping`` with :func:`job_args`.
"""

from __future__ import annotations

from typing import Any

#: the largest worker and source counts a replay takes: a cell keeps per-window counts of
#: sources x windows x workers (400 MB at 10,000 workers, 5 sources, 100 windows)
MAX_WORKERS, MAX_SOURCES = 10_000, 1_000
#: over-provisioning, percent (1000x the arrival rate)
MAX_PROVISIONING = 100_000
#: the nightly's capacity sweep: every other power of two up to 1024 (the ceiling's 5% per doubling
#: compounds over any spacing), half the routing of a replay's default grid
NIGHTLY_SCALING = (1, 4, 16, 64, 256, 1024)

PARAMS: dict[str, dict[str, Any]] = {
    "workers": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": MAX_WORKERS}, "minItems": 1,
                "uniqueItems": True, "default": [5, 10, 50, 100], "description": "Worker counts n."},
    "sources": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": MAX_SOURCES}, "minItems": 1,
                "uniqueItems": True, "default": [5], "description": "Source counts s."},
    "provisioning": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": MAX_PROVISIONING, "default": 100,
                     "description": "Over-provisioning: the workers' capacity as a percentage of a steady "
                                    "arrival rate (100 = critical load, 75 = 33% more tuples than the "
                                    "workers can run); empty = the datasets' own arrival times."},
    "scaling": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": MAX_WORKERS},
                "uniqueItems": True, "default": list(NIGHTLY_SCALING),
                "description": "The capacity sweep's worker counts, besides the worker counts above: each strategy's "
                               "capacity curve, skew ceiling and demand (docs/capacity.md); empty = no sweep. "
                               "Every other power of two by default (a replay's own default is every power of "
                               "two from 1 to 1024, twice the routing)."},
    "rates": {"type": "array", "items": {"type": "number", "exclusiveMinimum": 0}, "default": [],
              "description": "The demand's target input rates, tuples/s: the fewest workers (n = 1, 2, 4, ..., "
                             "1024) each strategy needs for each; empty = what 8 and 64 perfectly balanced "
                             "workers serve 70% busy (docs/capacity.md)."},
    "objective_ms": {"type": ["number", "null"], "exclusiveMinimum": 0, "default": None,
                     "description": "The demand's p99 completion-time objective, ms (the worker-queue simulation "
                                    "at each rate); empty = capacity alone."},
}


def check(section: dict[str, Any]) -> None:
    """Rules beyond the JSON schema (raise :class:`skewbench.errors.SkewbenchError`): none."""


def job_args(section: dict[str, Any]) -> list[str]:
    """Arguments of ``skewbench replay grouping`` for this section (after the common ones).

    ``provisioning`` (percent of the workers' capacity) replaces the dataset's arrival times by
    a steady arrival rate at that load, so latencies mean the same on every dataset and worker
    count; None keeps the dataset's times.  ``rates`` and ``objective_ms``: the demand's target
    rates and p99 objective, and ``scaling`` the sweep's worker counts (docs/capacity.md)."""
    args = ["--workers", ",".join(map(str, section["workers"])),
            "--sources", ",".join(map(str, section["sources"]))]
    if section.get("provisioning") is not None:
        args += ["--provisioning", repr(float(section["provisioning"]))]
    scaling = section.get("scaling", list(NIGHTLY_SCALING))
    args += ["--scaling", ",".join(map(str, scaling)) if scaling else "none"]
    if section.get("rates"):
        args += ["--rates", ",".join(repr(float(r)) for r in section["rates"])]
    if section.get("objective_ms") is not None:
        args += ["--objective-ms", repr(float(section["objective_ms"]))]
    return args
