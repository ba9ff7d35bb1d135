"""A balanced graph-partitioning baseline: METIS (pymetis) on the task graph, then a capacity repair.

Not in the paper: it shows where a general-purpose partitioner stands between the heuristics
(allocation.spec.md 2.1-2.4) and the optimum (2.5).  METIS minimises the weighted edge cut (which
is Cut(X) = IMC_tot - phi(X), spec 1.3) under a balance constraint on vertex weights, but knows no
hard capacity, so a repair pass follows.
"""

from __future__ import annotations

import numpy as np

from skewbench.allocation.model import Job, fits, gain
from skewbench.errors import SkewbenchError
from skewbench.solver import CSR

#: integer resolution of METIS's vertex and edge weights (the largest weight maps to this)
WEIGHT_RESOLUTION = 10_000


def _links(job: Job) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every directed task link with a positive rate, as (t, u, rate)."""
    off = job.offset
    w = job.per_link
    ts, us, rs = [], [], []
    for e in range(job.E):
        i, j = int(job.src[e]), int(job.dst[e])
        if job.link_rate and e in job.link_rate:
            r = np.asarray(job.link_rate[e], dtype=np.float64)
        else:
            r = np.full((int(job.tasks[i]), int(job.tasks[j])), w[e])
        tt, uu = np.nonzero(r > 0)
        ts.append(tt + off[i]); us.append(uu + off[j]); rs.append(r[tt, uu])
    if not ts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return np.concatenate(ts).astype(np.int64), np.concatenate(us).astype(np.int64), np.concatenate(rs)


def _symmetric(m: int, t: np.ndarray, u: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR of the undirected task graph: both directions, parallel links (i->j and j->i) summed."""
    g = CSR.from_triplets(np.concatenate([t, u]), np.concatenate([u, t]), np.concatenate([r, r]), (m, m))
    return g.indptr, g.indices, g.data


def _to_int(x: np.ndarray) -> np.ndarray:
    """Positive weights scaled so the largest is WEIGHT_RESOLUTION, rounded, at least 1."""
    if x.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.maximum(1, np.rint(x * (WEIGHT_RESOLUTION / float(x.max())))).astype(np.int64)


def metis(job: Job, seed: int = 0) -> tuple[np.ndarray, dict]:
    """METIS on the task graph with part weights proportional to the capacities, then repair.

    Vertices are tasks (weights: their costs), edges the task links (weights: the per-link rates,
    a pair's two directions summed), both scaled to integers (largest = 10^4).  ``tpwgts`` is
    mu_k / sum mu; METIS's default imbalance (ufactor 30, i.e. 3 %) applies.  The repair then, while
    a node is over capacity, moves off it the task whose move loses least gain (own-node link rate
    minus the link rate to the best node with room; ties: larger cost, lower index) to the node
    with room where it keeps most rate (ties: most free capacity, lowest index); a task that fits
    nowhere is left unplaced (-1), the costliest first.  Unplaced tasks are retried at the end.
    Deterministic for a seed (METIS ``seed`` option).  Degenerate cases (K = 1, no links, fewer
    tasks than nodes) skip METIS: all tasks start on node 0 (K = 1) or on the largest node (m <= K),
    and a job without links starts from a cost-balanced placement.

    ``info``: ``cut_before_repair`` (IMC_tot - phi of METIS's partition, MB/s), ``moved`` (tasks
    moved by the repair), ``unplaced`` (tasks left at -1), ``metis`` (whether METIS ran).
    """
    job.validate()
    m, K = job.m, job.K
    costs = job.costs
    t, u, r = _links(job)
    xadj, adjncy, ew = _symmetric(m, t, u, r)
    ran = False
    if K == 1:
        part = np.zeros(m, dtype=np.int64)
    elif m <= K and adjncy.size:
        # at most one task per part: METIS has nothing to balance; all on the largest node, then repair
        part = np.full(m, int(np.argmax(job.capacity)), dtype=np.int64)
    elif adjncy.size == 0:
        # no graph to cut: largest cost first onto the relatively emptiest node
        part = np.zeros(m, dtype=np.int64)
        load = np.zeros(K)
        for v in sorted(range(m), key=lambda x: (-costs[x], x)):
            k = int(np.argmin(load / job.capacity))
            part[v] = k
            load[k] += costs[v]
    else:
        import pymetis

        opts = pymetis.Options(seed=int(seed))
        tp = (job.capacity / job.capacity.sum()).tolist()
        tp[-1] = 1.0 - sum(tp[:-1])
        _, parts = pymetis.part_graph(K, pymetis.CSRAdjacency(xadj.tolist(), adjncy.tolist()),
                                      vweights=_to_int(costs).tolist(), eweights=_to_int(ew).tolist(),
                                      tpwgts=tp, options=opts)
        part = np.asarray(parts, dtype=np.int64)
        ran = True
    if part.shape != (m,) or np.any(part < 0) or np.any(part >= K):
        raise SkewbenchError("METIS returned an invalid partition")
    cut_before = job.imc_total - gain(job, part)
    node, moved = _repair(job, part, xadj, adjncy, ew)
    return node, {"cut_before_repair": float(cut_before), "moved": int(moved),
                  "unplaced": int(np.sum(node < 0)), "metis": ran}


def _repair(job: Job, part: np.ndarray, xadj: np.ndarray, adjncy: np.ndarray, ew: np.ndarray
            ) -> tuple[np.ndarray, int]:
    """Move tasks off overloaded nodes; see :func:`metis`."""
    m, K = job.m, job.K
    costs = job.costs
    cap = job.capacity
    node = part.copy()
    load = np.zeros(K)
    np.add.at(load, node, costs)
    # aff[v, k]: total link rate between v and the tasks on node k
    aff = np.zeros((m, K))
    rows = np.repeat(np.arange(m), np.diff(xadj))
    np.add.at(aff, (rows, node[adjncy]), ew)
    moved = 0

    def relocate(v: int, src: int, dst: int) -> None:
        nb = adjncy[xadj[v]:xadj[v + 1]]
        wv = ew[xadj[v]:xadj[v + 1]]
        if src >= 0:
            np.subtract.at(aff, (nb, np.full(nb.size, src)), wv)
            load[src] -= costs[v]
        if dst >= 0:
            np.add.at(aff, (nb, np.full(nb.size, dst)), wv)
            load[dst] += costs[v]
        node[v] = dst

    def best_target(v: int, exclude: int) -> int:
        room = cap - load
        best, key = -1, None
        for k in range(K):
            if k == exclude or not fits(load[k] + costs[v], cap[k]):
                continue
            kk = (-aff[v, k], -room[k], k)
            if key is None or kk < key:
                best, key = k, kk
        return best

    for k in range(K):
        while not fits(load[k], cap[k]):
            on = np.flatnonzero(node == k)
            choice, ckey, cdst = -1, None, -1
            for v in on:
                dst = best_target(int(v), k)
                if dst < 0:
                    continue
                key = (aff[v, k] - aff[v, dst], -costs[v], int(v))
                if ckey is None or key < ckey:
                    choice, ckey, cdst = int(v), key, dst
            if choice >= 0:
                relocate(choice, k, cdst)
                moved += 1
            else:  # nothing on k fits elsewhere: unplace the costliest task
                v = int(min(on, key=lambda x: (-costs[x], int(x))))
                relocate(v, k, -1)
    for v in sorted(np.flatnonzero(node < 0).tolist(), key=lambda x: (-costs[x], x)):
        dst = best_target(v, -1)
        if dst >= 0:
            relocate(v, -1, dst)
            moved += 1
    return node, moved
