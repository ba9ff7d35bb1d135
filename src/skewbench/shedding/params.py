"""The shedding family's section of the nightly pipeline's Params (light: read at DAG parse time).

Shown as ``shedding_<name>`` in a "shedding family" section of the trigger form; :func:`job_args`
turns the section into the options of ``skewbench replay shedding``.  The nightly run replays
the family on every selected dataset whose catalog entry does not exclude it, running each
strategy where the dataset allows (partition shedders need a ``value`` column).
"""

from __future__ import annotations

from typing import Any

from skewbench.errors import SkewbenchError

#: partition shedders: the most aggregation workers (a cell keeps a count per key and worker)
MAX_WORKERS = 1024
#: the largest relative error budget
MAX_ERROR = 10.0

PARAMS: dict[str, dict[str, Any]] = {
    "provisioning": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 10000}, "minItems": 1,
                     "uniqueItems": True, "default": [75],
                     "description": "Operator shedders: the operator's capacity as a percentage of the arrival "
                                    "rate (under-provisioning u = 1 - P/100; 75 is the LAS paper's u = 25%)."},
    "bound_ms": {"type": "number", "exclusiveMinimum": 0, "default": 6.4,
                 "description": "Operator shedders: tau, the bound on the running average queueing latency (ms)."},
    "workers": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": MAX_WORKERS}, "minItems": 1,
                "uniqueItems": True, "default": [4],
                "description": "Partition shedders: aggregation workers V."},
    "error": {"type": "number", "minimum": 0, "maximum": MAX_ERROR, "default": 0.1,
              "description": "Partition shedders: the relative error budget of each group's average."},
    "confidence": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.95,
                   "description": "Partition shedders: the confidence of the error budget."},
}


def check(section: dict[str, Any]) -> None:
    """Rules beyond the JSON schema: none yet (the replay checks the rest per dataset)."""
    if section["bound_ms"] > 1e9:
        raise SkewbenchError(f"bound_ms {section['bound_ms']} is larger than any replay lasts")


def job_args(section: dict[str, Any]) -> list[str]:
    """Options of ``skewbench replay shedding`` for this section.  Each dataset's window range
    and slide come from its metadata (or a tenth of its span); strategies the dataset cannot
    run are left out with a note instead of failing the night."""
    return ["--provisioning", ",".join(map(str, section["provisioning"])), "--bound", repr(float(section["bound_ms"])),
            "--workers", ",".join(map(str, section["workers"])), "--error", repr(float(section["error"])),
            "--confidence", repr(float(section["confidence"])), "--skip-inapplicable"]
