"""Plain-Python reference of the offline shedding optimum (skewbench.shedding.optimum), used only by
tests: every keep-subset of a short stream (at most 12 tuples, 4,096 subsets) is scheduled on the FIFO
operator of las.spec.md 1.5 and checked against the bound of 1.6 (goal ``avg``: every kept prefix
average of the queueing latency within tau) or A18 (goal ``max``: every kept latency within tau).
Shares nothing with the implementation."""

from __future__ import annotations

import itertools

MAX_TUPLES = 12
TOL = 1e-9


def latencies(arrivals, costs, kept):
    """The queueing latencies of the kept tuples, in order (one FIFO server, no preemption)."""
    out = []
    free = None
    for a, w, k in zip(arrivals, costs, kept):
        if not k:
            continue
        start = a if free is None or free <= a else free
        out.append(start - a)
        free = start + w
    return out


def meets(arrivals, costs, kept, tau, goal):
    q = latencies(arrivals, costs, kept)
    if goal == "max":
        return all(x <= tau + TOL for x in q)
    total = 0.0
    for j, x in enumerate(q, start=1):
        total += x
        if total > tau * j + TOL * j:
            return False
    return True


def min_drops(arrivals, costs, tau, goal="avg"):
    """The least drops over every keep-subset that meets the bound (the empty set always does)."""
    n = len(arrivals)
    if n > MAX_TUPLES:
        raise ValueError(f"the brute force takes at most {MAX_TUPLES} tuples, got {n}")
    best = n
    for kept in itertools.product((True, False), repeat=n):
        d = kept.count(False)
        if d < best and meets(arrivals, costs, kept, tau, goal):
            best = d
    return best
