"""OPT, the exact optimum as a registry class: the MILP (HiGHS; CP-SAT for ``f3``) of
:mod:`skewbench.allocation.opt` within a node and a time limit."""

from __future__ import annotations

import numpy as np

from skewbench.allocation.model import Job
from skewbench.allocation.opt import solve
from skewbench.allocation.strategies.base import Outcome, Strategy

__all__ = ["OPT"]


class OPT(Strategy):
    name = "opt"
    description = "OPT: the exact optimum (configuration or task-level MILP in HiGHS), within a node and a time limit"
    exact = True
    defaults = {"method": "auto", "time_limit": 60.0, "node_limit": 20000}
    param_docs = {"method": "auto (F2 for identical nodes and uniform costs, else F1), f1, f2 or f3 (CP-SAT).",
                  "time_limit": "Seconds per instance; the incumbent and its gap are kept when it is hit "
                                "(where it is hit depends on the machine: node_limit is the reproducible limit).",
                  "node_limit": "Branch-and-bound nodes per instance (HiGHS); the incumbent and its gap are kept "
                                "when it is hit, at the same point on every machine."}

    def _check(self) -> None:
        self._choice("method", ("auto", "f1", "f2", "f3"))
        self._positive("time_limit")
        self._positive("node_limit")

    def allocate(self, job: Job, seed: int) -> Outcome:
        o = solve(job, method=self.params["method"], time_limit=float(self.params["time_limit"]),
                  node_limit=int(self.params["node_limit"]))
        node = np.asarray(o.node, dtype=np.int64) if o.node is not None else np.full(job.m, -1, dtype=np.int64)
        return Outcome(node, job, {"status": o.status, "method": o.method,
                                   **({"gap": float(o.gap)} if o.gap is not None else {})})
