"""Plain-Python brute force of OPT (allocation.spec.md 1.4), used only by tests.

Every one of the K^m assignments of a tiny job (m <= 8, K <= 3) is tried: the capacity check uses
the model's relative tolerance 1e-9, and the gain sums the rate of every directed task link whose
two tasks share a node (each link once, spec 1.3 / A2).  Lists and loops only.
"""

from __future__ import annotations

import itertools

TOL = 1e-9


def task_costs(job):
    """Every task's cost as a list (measured if given, else P_g / n_g)."""
    if job.task_cost is not None:
        return [float(v) for v in job.task_cost]
    out = []
    for g in range(len(job.tasks)):
        out += [float(job.cost[g]) / int(job.tasks[g])] * int(job.tasks[g])
    return out


def links(job):
    """All directed task links as (t, u, rate)."""
    first, pos = [], 0
    for g in range(len(job.tasks)):
        first.append(pos)
        pos += int(job.tasks[g])
    out = []
    for e in range(len(job.src)):
        i, j = int(job.src[e]), int(job.dst[e])
        ni, nj = int(job.tasks[i]), int(job.tasks[j])
        for a in range(ni):
            for b in range(nj):
                if job.link_rate and e in job.link_rate:
                    r = float(job.link_rate[e][a][b])
                else:
                    r = float(job.rate[e]) / (ni * nj)
                out.append((first[i] + a, first[j] + b, r))
    return out


def brute_force(job):
    """(best gain, one best assignment as a tuple) or (None, None) when nothing fits."""
    cost = task_costs(job)
    cap = [float(c) for c in job.capacity]
    lk = links(job)
    m, K = len(cost), len(cap)
    if m > 8 or K > 3:
        raise ValueError("brute force is for m <= 8 tasks and K <= 3 nodes")
    best, arg = None, None
    for assign in itertools.product(range(K), repeat=m):
        load = [0.0] * K
        for t in range(m):
            load[assign[t]] += cost[t]
        if any(load[k] > cap[k] + TOL * max(1.0, abs(cap[k])) for k in range(K)):
            continue
        g = 0.0
        for t, u, r in lk:
            if assign[t] == assign[u]:
                g += r
        if best is None or g > best:
            best, arg = g, assign
    return best, arg
