"""Storm's default scheduler, round robin over the nodes the load needs (allocation.spec.md section
2.4), and its registry class.  Heron's RoundRobinPacking (:mod:`.containers`) is the same rule with a
fixed number of containers."""

from __future__ import annotations


import numpy as np

from skewbench.allocation.model import TOL, Job, loads
from skewbench.allocation.steps import Allocation
from skewbench.allocation.strategies.base import Heuristic
from skewbench.errors import SkewbenchError

__all__ = ["storm_rr", "StormRR"]


def storm_rr(job: Job, kuse: str | int = "load") -> Allocation:
    """STORM-RR (spec 2.4): task i (global order) on node i mod Kuse.

    ``kuse``: ``load`` = the fewest nodes (in index order) whose capacity covers sum P, grown until no
    node is over capacity or Kuse = K (A16); ``all`` = K; an integer (at most K).  It places every task;
    ``info["overloaded"]`` flags a node over capacity, and then ``success`` is False.
    """
    K = job.K
    cap = np.cumsum(job.capacity)
    total = job.total_cost
    if kuse == "load":
        ok = total <= cap + TOL * np.maximum(1.0, cap)
        k = int(np.argmax(ok)) + 1 if ok.any() else K
    elif kuse == "all":
        k = K
    elif isinstance(kuse, (int, np.integer)) and not isinstance(kuse, bool) and kuse >= 1:
        if kuse > K:
            raise SkewbenchError(f"storm: kuse={kuse} exceeds the {K} nodes of job '{job.name}'")
        k = int(kuse)
    else:
        raise SkewbenchError(f"storm: kuse must be 'load', 'all' or an integer >= 1, got {kuse!r}")
    idx = np.arange(job.m, dtype=np.int64)
    mu_tol = job.capacity + TOL * np.maximum(1.0, job.capacity)
    while True:
        node = idx % k
        over = int(np.count_nonzero(loads(job, node) > mu_tol))
        if over == 0 or k == K or kuse != "load":
            break
        k += 1
    return Allocation(node, over == 0, {"kuse": k, "overloaded": over > 0, "violations": over})


class StormRR(Heuristic):
    name = "storm"
    description = "Storm's default scheduler: round robin over the nodes the load needs (may overload a node)"
    respects_capacity = False
    defaults = {**Heuristic.defaults, "kuse": "load"}
    exercise = [{"kuse": "all"}]
    param_docs = {**Heuristic.param_docs,
                  "kuse": "Nodes used: load (ceil(sum P / mu), grown until the loads fit; A16), all (every node), "
                          "or a whole number."}

    def _check(self) -> None:
        super()._check()
        k = self.params["kuse"]
        if k not in ("load", "all") and not (isinstance(k, int) and not isinstance(k, bool) and k >= 1):
            raise SkewbenchError(f"{self.name}: parameter kuse must be load, all or an integer >= 1, got {k!r}")

    def run(self, job: Job, seed: int) -> Allocation:
        return storm_rr(job, kuse=self.params["kuse"])
