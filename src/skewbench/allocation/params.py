"""The allocation family's section of the nightly pipeline's Params (light: read at DAG parse time).

Shown as ``allocation_<name>`` in an "allocation family" section of the trigger form;
:func:`job_args` turns the section into the options of ``skewbench replay allocation``.  The
nightly run replays the family on the catalog's job-graph datasets (entries with
``families: [allocation]``).
"""

from __future__ import annotations

from typing import Any

PARAMS: dict[str, dict[str, Any]] = {
    "optimum": {"type": "string", "enum": ["auto", "off"], "default": "auto",
                "description": "auto: solve each instance's exact optimum (HiGHS) for the optimality ratios; off: none."},
    "opt_time_limit": {"type": "number", "exclusiveMinimum": 0, "maximum": 3600, "default": 60.0,
                       "description": "Seconds per instance for the exact optimum, a safety net (where it is hit "
                                      "depends on the machine); when hit, its bound and gap are kept and the "
                                      "ratios are lower bounds."},
    "opt_node_limit": {"type": "integer", "minimum": 1, "maximum": 10000000, "default": 20000,
                       "description": "Branch-and-bound nodes per instance for the exact optimum: the same "
                                      "result on every machine; when hit, its bound and gap are kept."},
    "opt_max_tasks": {"type": "integer", "minimum": 1, "maximum": 100000, "default": 200,
                      "description": "Largest instance (tasks) whose optimum is solved."},
}


def check(section: dict[str, Any]) -> None:
    """Rules beyond the JSON schema: none."""


def job_args(section: dict[str, Any]) -> list[str]:
    """Options of ``skewbench replay allocation`` for this section."""
    return ["--optimum", str(section["optimum"]), "--opt-time-limit", repr(float(section["opt_time_limit"])),
            "--opt-node-limit", str(int(section["opt_node_limit"])), "--opt-max-tasks", str(int(section["opt_max_tasks"]))]
