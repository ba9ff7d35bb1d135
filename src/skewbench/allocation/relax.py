"""The relaxations of allocation.spec.md section 2.7: re-granularisation and its retry (2.7.1),
heterogeneous capacities (2.7.2) and the skew subgroups of a measured job (2.7.3).

:class:`skewbench.allocation.strategies.base.Heuristic` applies them around every heuristic: a measured
job is split with :func:`split_skewed` and the allocation mapped back; ``retry`` adds :func:`with_retry`.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from skewbench.allocation.model import TOL, Job
from skewbench.allocation.steps import Allocation
from skewbench.errors import SkewbenchError

__all__ = ["regranularise", "with_retry", "heterogeneous_capacities", "split_skewed"]


def regranularise(job: Job) -> Job:
    """Re-granularisation (spec 2.7.1, A27): round P_g and mu_k to integer percent, d = their gcd, and give
    group g P_g / d tasks of cost d each (w_e then follows from Eq. 1).  The result is uniform."""
    cost = np.maximum(np.rint(job.cost), 1).astype(np.int64)
    cap = np.maximum(np.rint(job.capacity), 1).astype(np.int64)
    d = int(np.gcd.reduce(np.concatenate([cost, cap])))
    rate = np.array([float(job.link_rate[e].sum()) if job.link_rate and e in job.link_rate else float(job.rate[e])
                     for e in range(job.E)], dtype=np.float64)
    return Job(name=f"{job.name}/regranularised", groups=list(job.groups), tasks=cost // d,
               cost=cost.astype(np.float64), src=job.src.copy(), dst=job.dst.copy(), rate=rate,
               capacity=cap.astype(np.float64), meta={**job.meta, "regranularised_d": d})


def with_retry(fn: Callable[..., Allocation], job: Job, **kw: Any) -> Allocation:
    """Run ``fn(job, **kw)``; if it fails and sum P <= sum mu, retry once on :func:`regranularise` (job)
    (spec 2.7.1, A26).  The retry's allocation has ``job`` set and ``info["regranularised"] = True``."""
    a = fn(job, **kw)
    a.info.setdefault("regranularised", False)
    total, cap = job.total_cost, float(job.capacity.sum())
    if a.success or total > cap + TOL * max(1.0, cap):
        return a
    j2 = regranularise(job)
    b = fn(j2, **kw)
    b.job = j2
    b.info["regranularised"] = True
    return b


def heterogeneous_capacities(capability: Any, base: float = 100.0) -> np.ndarray:
    """mu_k = base * capability_k / min_h capability_h (spec 2.7.2)."""
    c = np.asarray(capability, dtype=np.float64)
    if c.ndim != 1 or c.size == 0 or not np.all(np.isfinite(c)) or np.any(c <= 0):
        raise SkewbenchError("heterogeneous_capacities: capabilities must be a non-empty list of numbers > 0")
    if not (math.isfinite(base) and base > 0):
        raise SkewbenchError(f"heterogeneous_capacities: base must be a number > 0, got {base!r}")
    return base * c / c.min()


def split_skewed(job: Job, eps: float = 0.1) -> tuple[Job, np.ndarray]:
    """Skew relaxation (spec 2.7.3): a uniform job of subgroups and ``origin`` (the original global task of
    every sub-task), so ``node_orig[origin] = node_sub`` maps an allocation back.

    Each group's tasks, sorted by measured cost (stable), are cut into maximal runs whose max/min ratio is
    at most 1 + eps, greedily from the cheapest.  A group that is one run keeps its name; otherwise its
    subgroups are "<name>#0", "<name>#1", ...  A subgroup's tasks are each priced at its largest task
    cost (at most 1 + eps times the smallest), so an allocation of the sub-job, mapped back, never overloads
    a node (a run of equal costs keeps their exact sum); subgroup
    pair (a, b) of edge (g -> h) carries the sum of the measured link rates, or else C_gh |a||b| / (|g||h|).
    """
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps >= 0):
        raise SkewbenchError(f"split_skewed: eps must be a number >= 0, got {eps!r}")
    off = job.offset
    costs = job.costs
    names: list[str] = []
    sub_tasks: list[int] = []
    sub_cost: list[float] = []
    origin: list[np.ndarray] = []
    members: list[list[np.ndarray]] = []  # per group: local task indices of each subgroup
    first: list[int] = []  # per group: index of its first subgroup
    for g in range(job.G):
        local = costs[off[g]:off[g + 1]]
        order = np.argsort(local, kind="stable")
        runs: list[np.ndarray] = []
        a = 0
        while a < order.size:
            lo = local[order[a]]
            b = a + 1
            while b < order.size and local[order[b]] <= lo * (1 + eps):
                b += 1
            runs.append(order[a:b])
            a = b
        first.append(len(names))
        members.append(runs)
        for r, run in enumerate(runs):
            names.append(job.groups[g] if len(runs) == 1 else f"{job.groups[g]}#{r}")
            sub_tasks.append(int(run.size))
            vals = local[run]
            sub_cost.append(float(vals.sum()) if vals.min() == vals.max() else float(vals.max()) * run.size)
            origin.append(off[g] + run)
    src, dst, rate = [], [], []
    n = job.tasks
    for e in range(job.E):
        g, h = int(job.src[e]), int(job.dst[e])
        mat = job.link_rate.get(e) if job.link_rate else None
        for a_, ra in enumerate(members[g]):
            for b_, rb in enumerate(members[h]):
                src.append(first[g] + a_)
                dst.append(first[h] + b_)
                if mat is not None:
                    rate.append(float(np.asarray(mat)[np.ix_(ra, rb)].sum()))
                else:
                    rate.append(float(job.rate[e]) * ra.size * rb.size / (int(n[g]) * int(n[h])))
    sub = Job(name=job.name, groups=names, tasks=np.asarray(sub_tasks, dtype=np.int64), cost=np.asarray(sub_cost),
              src=np.asarray(src, dtype=np.int64), dst=np.asarray(dst, dtype=np.int64),
              rate=np.asarray(rate, dtype=np.float64), capacity=job.capacity.copy(), meta=dict(job.meta))
    return sub, np.concatenate(origin).astype(np.int64)


