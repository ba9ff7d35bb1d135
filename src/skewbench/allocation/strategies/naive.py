"""NAIVE, the pair-fusion heuristic (allocation.spec.md section 2.1), and its registry class."""

from __future__ import annotations

import numpy as np

from skewbench.allocation.model import Job
from skewbench.allocation.steps import Allocation, NodeHeap, check_uniform, edgeless_tasks, finish, link_orders, pairs
from skewbench.allocation.strategies.base import Heuristic

__all__ = ["naive", "Naive"]


def naive(job: Job, seed: int = 0) -> Allocation:
    """NAIVE (spec 2.1): task pairs by w_e desc (ties: edge index, then the seeded shuffle of
    :func:`link_orders`), each pair on the first node from a moving cursor that fits it; then SINGLES."""
    check_uniform(job, "naive")
    w = job.per_link
    pairs_t, pairs_u, _ = pairs(job, np.lexsort((np.arange(job.E), -w)), link_orders(job, seed))
    p = job.costs.tolist()
    nodes = NodeHeap(job.capacity)
    order = sorted(range(job.K), key=lambda k: (-nodes.init[k], k))
    node = [-1] * job.m
    rest: list[int] = []
    cur = 0
    for t, u in zip(pairs_t, pairs_u):
        nt, nu = node[t], node[u]
        if nt >= 0 and nu >= 0:
            continue
        if nt >= 0 or nu >= 0:
            k, other = (nt, u) if nt >= 0 else (nu, t)
            if nodes.fits(p[other], k):
                node[other] = k
                nodes.take(k, p[other])
            else:
                rest.append(other)
            continue
        need = p[t] + p[u]
        for j in range(cur, len(order)):
            if nodes.fits(need, order[j]):
                cur = j
                k = order[j]
                node[t] = node[u] = k
                nodes.take(k, need)
                break
        else:
            rest.extend((t, u))
    rest_arr = np.concatenate([np.asarray(rest, dtype=np.int64), edgeless_tasks(job)])
    return finish(job, nodes, np.asarray(node, dtype=np.int64), rest_arr, {"pairs": len(pairs_t)})


class Naive(Heuristic):
    name = "naive"
    description = "NAIVE: fusion of task pairs by per-link IMC, first node that fits (spec 2.1)"

    def run(self, job: Job, seed: int) -> Allocation:
        return naive(job, seed=seed)
