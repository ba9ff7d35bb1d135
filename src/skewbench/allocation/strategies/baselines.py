"""Two sanity baselines of allocation.spec.md section 2.6, blind to communication: random fit and
FFD (the SINGLES step alone), with their registry classes."""

from __future__ import annotations

import numpy as np

from skewbench.allocation.model import Job
from skewbench.allocation.steps import Allocation, NodeHeap, finish
from skewbench.allocation.strategies.base import Heuristic

__all__ = ["random_fit", "ffd", "RandomFit", "FFD"]


def random_fit(job: Job, seed: int = 0) -> Allocation:
    """RANDOM-FIT (spec 2.6): tasks in a seeded random order, each on a uniformly random node with room."""
    rng = np.random.default_rng(seed)
    costs = job.costs
    nodes = NodeHeap(job.capacity)
    mu = np.asarray(nodes.mu)
    tol = np.asarray(nodes.tol)
    node = np.full(job.m, -1, dtype=np.int64)
    for t in rng.permutation(job.m).tolist():
        cand = np.flatnonzero(costs[t] <= mu + tol)
        if cand.size == 0:
            return Allocation(node, False, {"unplaced": int(np.sum(node < 0))})
        k = int(cand[rng.integers(cand.size)])
        node[t] = k
        mu[k] -= costs[t]
    return Allocation(node, True, {})


def ffd(job: Job) -> Allocation:
    """FFD-only (spec 2.6): SINGLES on all tasks, no communication awareness."""
    nodes = NodeHeap(job.capacity)
    return finish(job, nodes, np.full(job.m, -1, dtype=np.int64), np.arange(job.m), {})


class RandomFit(Heuristic):
    name = "random"
    description = "Random fit: each task on a random node with room (a sanity baseline, spec 2.6)"
    extension = True

    def run(self, job: Job, seed: int) -> Allocation:
        return random_fit(job, seed=seed)


class FFD(Heuristic):
    name = "ffd"
    description = "Worst-fit decreasing of all tasks, no communication awareness (the singles step alone; spec 2.6)"
    extension = True

    def run(self, job: Job, seed: int) -> Allocation:
        return ffd(job)
