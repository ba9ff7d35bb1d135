"""TL, the task-level pair heuristic (allocation.spec.md section 2.2), and its registry classes TL,
TL-IMCt and TL-RS (the three edge priorities)."""

from __future__ import annotations

import numpy as np

from skewbench.allocation.model import Job
from skewbench.allocation.steps import (Allocation, NodeHeap, check_uniform, edge_key, edgeless_tasks, finish, fuse,
                                        link_orders, pairs)
from skewbench.allocation.strategies.base import Heuristic

__all__ = ["tl", "TL", "TLIMCt", "TLRS"]


def tl(job: Job, key: str = "imc", seed: int = 0) -> Allocation:
    """TL (spec 2.2, Algorithms 1-2): the task-level pair heuristic.

    ``key``: ``imc`` (C_e, the paper's TL; A3), ``imct`` (w_e) or ``rs`` (RS(e)).  Pairs go by key desc,
    edge index, then the edge's seeded link order (:func:`link_orders`, A4); PICK keeps filling the last
    node of the same group pair while the pair fits, else takes the heap top; a pair whose tasks are
    both placed on different nodes calls FUSE(node(t), node(u)).  ``info``: ``pairs`` (= sum n_i n_j), ``fusions``,
    ``singles`` (|R| before SINGLES drops duplicates), ``heap_ops``.
    """
    check_uniform(job, "tl")
    kv = edge_key(job, key, {"imc": lambda: job.rate, "imct": lambda: job.per_link, "rs": lambda: job.rs}, "tl")
    pairs_t, pairs_u, pairs_e = pairs(job, np.lexsort((np.arange(job.E), -kv)), link_orders(job, seed))
    p = job.costs.tolist()
    nodes = NodeHeap(job.capacity)
    fits, top, take = nodes.fits, nodes.top, nodes.take
    node = [-1] * job.m
    hosted: list[list[int]] = [[] for _ in range(job.K)]
    rest: list[int] = []
    last_e, last_k = -1, -1
    fusions = 0
    for t, u, e in zip(pairs_t, pairs_u, pairs_e):
        nt, nu = node[t], node[u]
        if nt >= 0 and nu >= 0:
            if nt != nu:
                res = fuse(nodes, hosted, nt, nu)
                if res is not None:
                    x = res[0]
                    for v in res[2]:
                        node[v] = x
                    fusions += 1
            continue
        if nt >= 0:  # PICK (Algorithm 2)
            k = nt
        elif nu >= 0:
            k = nu
        elif e != last_e or last_k < 0 or not fits(p[t] + p[u], last_k):
            k = top()
        else:
            k = last_k
        last_e, last_k = e, k  # updated even when the placement fails (A28)
        if nt < 0 and nu < 0:
            need = p[t] + p[u]
            if fits(need, k):
                node[t] = node[u] = k
                hosted[k].append(t)
                hosted[k].append(u)
                take(k, need)
            else:
                rest.append(t)
                rest.append(u)
        else:
            v = t if nt < 0 else u
            if fits(p[v], k):
                node[v] = k
                hosted[k].append(v)
                take(k, p[v])
            else:
                rest.append(v)
    rest_arr = np.concatenate([np.asarray(rest, dtype=np.int64), edgeless_tasks(job)])
    info = {"pairs": len(pairs_t), "fusions": fusions, "singles": int(rest_arr.size)}
    return finish(job, nodes, np.asarray(node, dtype=np.int64), rest_arr, info)


class TL(Heuristic):
    name = "tl"
    description = "TL: the task-level pair heuristic prioritised by the group-pair IMC C_e (the paper's TL)"
    defaults = {**Heuristic.defaults, "key": "imc"}
    param_docs = {**Heuristic.param_docs,
                  "key": "Pair priority: imc (C_e, the paper's TL), imct (the per-link w_e) or rs (RS(e))."}

    def _check(self) -> None:
        super()._check()
        self._choice("key", ("imc", "imct", "rs"))

    def run(self, job: Job, seed: int) -> Allocation:
        return tl(job, key=self.params["key"], seed=seed)


class TLIMCt(TL):
    name = "tl-imct"
    description = "TL prioritised by the per-link IMC w_e (classic pair fusion)"
    defaults = {**TL.defaults, "key": "imct"}


class TLRS(TL):
    name = "tl-rs"
    description = "TL prioritised by the relative significance RS(e) of each pair's edge"
    defaults = {**TL.defaults, "key": "rs"}
