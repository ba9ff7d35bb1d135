"""TD, the top-down group-aware heuristic (allocation.spec.md section 2.3), and its registry classes
TD and TD-IMC."""

from __future__ import annotations

from typing import Any

import numpy as np

from skewbench.allocation.model import Job
from skewbench.allocation.steps import Allocation, NodeHeap, check_uniform, edge_key, finish, fuse
from skewbench.allocation.strategies.base import Heuristic
from skewbench.errors import SkewbenchError

__all__ = ["td", "TD", "TDIMC"]


def td(job: Job, key: str = "rs", k0: str = "shrink", second: str = "all") -> Allocation:
    """TD (spec 2.3, Algorithms 4-5): the top-down group-aware heuristic; deterministic, no seed.

    Edges go by ``key`` desc (``rs``: RS(e), the paper's TD; ``imc``: C_e), ties by edge index.  Both
    groups unplaced: PAIR_BOTH (whole pair on the top node, else proportional slices of q balanced
    splits, A5/A6; ``k0="shrink"`` places 1 + as many of the larger group as fit when q = 0 (A7),
    ``k0="push"`` leaves the rest to SINGLES).  One group fully placed: PAIR_SECOND next to its hosts by
    expected gain (A9), all hosts (``second="all"``, A8) or the first only (``"first"``).  Both fully
    placed, each on one node: FUSE(host(j), host(i)) (A10/A11).  The rest goes to SINGLES.

    Groups are held as (node, count) segments, so the work per edge does not depend on the task
    counts; ``info``: ``slices`` (placements), ``fusions``, ``singles`` (|R|), ``heap_ops``.
    """
    check_uniform(job, "td")
    kv = edge_key(job, key, {"rs": lambda: job.rs, "imc": lambda: job.rate}, "td")
    if k0 not in ("shrink", "push"):
        raise SkewbenchError(f"td: k0 must be 'shrink' or 'push', got {k0!r}")
    if second not in ("all", "first"):
        raise SkewbenchError(f"td: second must be 'all' or 'first', got {second!r}")
    shrink, all_hosts = k0 == "shrink", second == "all"
    n = job.tasks.tolist()
    p = job.per_task.tolist()
    w = job.per_link.tolist()
    src, dst = job.src.tolist(), job.dst.tolist()
    nodes = NodeHeap(job.capacity)
    mu, tol = nodes.mu, nodes.tol
    un = list(n)
    segs: list[list[list[int]]] = [[] for _ in n]  # per group: [node, count] in placement order
    hosted: list[list[list[int]]] = [[] for _ in range(job.K)]  # per node: the segments it hosts
    slices = fusions = 0

    def place(g: int, k: int, x: int) -> None:
        seg = [k, x]
        segs[g].append(seg)
        hosted[k].append(seg)
        un[g] -= x

    for e in np.lexsort((np.arange(job.E), -kv)).tolist():
        i, j = src[e], dst[e]
        if un[i] > 0 and un[j] > 0:  # PAIR_BOTH as a loop
            while True:
                k = nodes.top()
                whole = un[i] * p[i] + un[j] * p[j]
                if whole <= mu[k] + tol[k]:
                    ui, uj = un[i], un[j]
                    place(i, k, ui)
                    place(j, k, uj)
                    nodes.take(k, whole)
                    slices += 1
                    break
                s, l_ = (i, j) if un[i] <= un[j] else (j, i)
                r = un[l_] // un[s]
                q = int((mu[k] + tol[k]) // (p[s] + r * p[l_]))
                if q >= 1:
                    xs, xl = min(q, un[s]), min(q * r, un[l_])
                elif shrink and p[s] + p[l_] <= mu[k] + tol[k]:
                    xs, xl = 1, min(int((mu[k] + tol[k] - p[s]) // p[l_]), un[l_])
                else:
                    break
                place(s, k, xs)
                place(l_, k, xl)
                nodes.take(k, xs * p[s] + xl * p[l_])
                slices += 1
                if un[s] == 0 or un[l_] == 0:
                    break
        elif un[i] > 0 or un[j] > 0:  # PAIR_SECOND
            f, q_ = (i, j) if un[i] == 0 else (j, i)
            a: dict[int, int] = {}
            for k, c in segs[f]:
                a[k] = a.get(k, 0) + c
            pq = p[q_]
            pos = w[e] > 0
            order = sorted(a, key=lambda k: (-(a[k] * min(un[q_], nodes.room(k, pq)) if pos else 0), -a[k], k))
            for k in order if all_hosts else order[:1]:
                x = min(un[q_], nodes.room(k, pq))
                if x > 0:
                    place(q_, k, x)
                    nodes.take(k, x * pq)
                    slices += 1
                if un[q_] == 0:
                    break
        else:  # both fully placed: fuse when each sits on one node (A10/A11)
            hi = {s_[0] for s_ in segs[i]}
            hj = {s_[0] for s_ in segs[j]}
            if len(hi) == 1 and len(hj) == 1 and hi != hj:
                res = fuse(nodes, hosted, next(iter(hj)), next(iter(hi)))
                if res is not None:
                    for seg in res[2]:
                        seg[0] = res[0]
                    fusions += 1
    off = job.offset.tolist()
    node = np.full(job.m, -1, dtype=np.int64)
    rest = []
    for g in range(job.G):
        pos = off[g]
        for k, c in segs[g]:
            node[pos:pos + c] = k
            pos += c
        if un[g]:
            rest.append(np.arange(pos, off[g + 1], dtype=np.int64))
    info: dict[str, Any] = {"slices": slices, "fusions": fusions, "singles": int(sum(un))}
    if not rest:
        info["heap_ops"] = nodes.ops
        return Allocation(node, True, info)
    return finish(job, nodes, node, np.concatenate(rest), info)


class TD(Heuristic):
    name = "td"
    description = "TD: the top-down group-aware heuristic (collocates whole group pairs, splits proportionally)"
    defaults = {**Heuristic.defaults, "key": "rs", "k0": "shrink", "second": "all"}
    #: the literal algorithm (spec 2.3 without A7 and A8), retried on the re-granularised job
    exercise = [{"k0": "push", "second": "first", "retry": True}]
    param_docs = {**Heuristic.param_docs,
                  "key": "Edge priority: rs (relative significance C_e/(P_i+P_j), the paper's TD) or imc (C_e).",
                  "k0": "When no balanced split fits: shrink (1 + r' tasks, the spec's fix A7) or push (the literal "
                        "algorithm: the rest to the singles).",
                  "second": "Mode second: all hosting nodes (A8) or first (the literal algorithm)."}

    def _check(self) -> None:
        super()._check()
        self._choice("key", ("rs", "imc"))
        self._choice("k0", ("shrink", "push"))
        self._choice("second", ("all", "first"))

    def run(self, job: Job, seed: int) -> Allocation:
        return td(job, key=self.params["key"], k0=self.params["k0"], second=self.params["second"])


class TDIMC(TD):
    name = "td-imc"
    description = "TD prioritised by the group-pair IMC C_e (the paper's TD-IMC of Fig. 8)"
    defaults = {**TD.defaults, "key": "imc"}
    exercise = []  # TD's set runs the same code
