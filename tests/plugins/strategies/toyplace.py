"""A toy placement for skewbench's allocation family, added by this one module and one entry point
(a row of ``toystrategies-0.1.dist-info/entry_points.txt``: ``allocation.toy-place = toyplace:ToyPlacement``) and
nothing else.

The rule: tasks in index order are dealt round robin over the nodes; each goes to the first node,
from the one after the node that took the previous task (node ``start`` for the first task), that
still has room for its cost.  A task no node has room for stays unplaced and the next one is dealt.
It reads no edge rate, so it keeps no traffic local on purpose; it never overloads a node.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from skewbench.allocation.model import Job, fits
from skewbench.allocation.strategies.base import Outcome, Strategy


class ToyPlacement(Strategy):
    name = "toy-place"
    description = "Toy plug-in placement: tasks dealt round robin over the nodes, each to the next node with room"
    defaults: ClassVar[dict[str, Any]] = {"start": 0}
    param_docs: ClassVar[dict[str, str]] = {
        "start": "The node the first task is offered to (an integer >= 0, taken modulo the number of nodes)."}

    def _check(self) -> None:
        self._number("start", lo=0, integer=True)

    def allocate(self, job: Job, seed: int) -> Outcome:
        cap = job.capacity.tolist()
        used = [0.0] * job.K
        node = np.full(job.m, -1, dtype=np.int64)
        nxt = int(self.params["start"]) % job.K
        for t, cost in enumerate(job.costs.tolist()):
            for step in range(job.K):
                k = (nxt + step) % job.K
                if fits(used[k] + cost, cap[k]):
                    node[t] = k
                    used[k] += cost
                    nxt = (k + 1) % job.K
                    break
        return Outcome(node, job, {"placed": int(np.count_nonzero(node >= 0))})
