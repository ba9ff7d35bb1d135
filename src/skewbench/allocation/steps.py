"""The shared steps of the allocation heuristics of allocation.spec.md section 2: the node state (2.0),
SINGLES, FUSE, the seeded link orders, and the result type every heuristic returns.

The heuristics themselves (NAIVE, TL, TD, Storm's round robin, random fit, FFD) live in
:mod:`skewbench.allocation.strategies`, each beside its registry class; the relaxations of section
2.7 (re-granularisation, skew subgroups) in :mod:`skewbench.allocation.relax`.

Every heuristic takes a *uniform* :class:`~skewbench.allocation.model.Job` (Eq. 1) and returns an
:class:`Allocation`: ``node[t]`` is task t's node (-1 = unplaced).  ``success`` means every task is
placed and no node is over capacity; on failure some tasks stay -1 and the placed ones still respect
capacity (spec 7.1-7.2).  The one exception is Storm's round robin, which places every task and may
overload a node (``info["overloaded"]``, ``success=False``).

Conventions shared by every heuristic (and by the test reference):

- a load ``need`` fits node k when ``need <= mu_k + TOL * max(1, mu_k^init)`` (spec 2.9, A30), and the
  number of tasks of cost c that fit is ``floor((mu_k + TOL * max(1, mu_k^init)) / c)``;
- the node heap orders nodes by free capacity, ties by lowest index (spec 2.0);
- tasks are numbered globally group after group, so "(group, task)" order is global index order.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from skewbench.allocation.model import TOL, Job
from skewbench.errors import SkewbenchError

__all__ = [
    "Allocation", "NodeHeap", "check_uniform", "singles", "fuse", "link_orders", "pairs", "edgeless_tasks",
    "finish", "edge_key",
]


@dataclass
class Allocation:
    """The result of one heuristic run: ``node`` (int64, -1 = unplaced), ``success`` and facts in ``info``.

    ``job`` is set only when the allocation refers to another job than the input (re-granularised, 2.7.1).
    """

    node: np.ndarray
    success: bool
    info: dict[str, Any] = field(default_factory=dict)
    job: Job | None = None


# ---------------------------------------------------------------------------------------------- 2.0 state
class NodeHeap:
    """Free capacities mu_k and a lazy max-heap on (mu_k desc, k asc) (spec 2.0).

    ``ops`` counts capacity updates (heap pushes); :meth:`top` drops stale entries.
    """

    __slots__ = ("init", "mu", "tol", "ops", "_heap", "_ver")

    def __init__(self, capacity: Any):
        self.init = [float(c) for c in capacity]
        self.mu = list(self.init)
        self.tol = [TOL * max(1.0, abs(c)) for c in self.init]
        self.ops = 0
        self._ver = [0] * len(self.init)
        self._heap = [(-c, k, 0) for k, c in enumerate(self.init)]
        heapq.heapify(self._heap)

    def top(self) -> int:
        """The node with the most free capacity (lowest index on ties)."""
        h, ver = self._heap, self._ver
        while True:
            _, k, v = h[0]
            if v == ver[k]:
                return k
            heapq.heappop(h)

    def set(self, k: int, mu: float) -> None:
        """Set node k's free capacity and update the heap."""
        self.mu[k] = mu
        self._ver[k] += 1
        self.ops += 1
        h = self._heap
        if len(h) > 4 * len(self.mu) + 64:  # compact the stale entries
            h[:] = [(-self.mu[j], j, self._ver[j]) for j in range(len(self.mu))]
            heapq.heapify(h)
        else:
            heapq.heappush(h, (-mu, k, self._ver[k]))

    def take(self, k: int, amount: float) -> None:
        """mu_k -= amount."""
        self.set(k, self.mu[k] - amount)

    def fits(self, need: float, k: int) -> bool:
        """Does a load ``need`` fit node k (with the capacity tolerance)?"""
        return need <= self.mu[k] + self.tol[k]

    def room(self, k: int, cost: float) -> int:
        """How many tasks of ``cost`` fit node k."""
        return max(0, int((self.mu[k] + self.tol[k]) // cost))


def check_uniform(job: Job, what: str) -> None:
    if not job.uniform:
        raise SkewbenchError(f"{what}: job '{job.name}' has measured per-task costs or link rates; split it with "
                             "split_skewed (spec 2.7.3) or allocate it with its strategy class")


def singles(nodes: NodeHeap, tasks: Any, costs: np.ndarray, node: np.ndarray) -> bool:
    """SINGLES (spec 2.0, Algorithm 3): worst-fit decreasing of the unplaced tasks among ``tasks``.

    Duplicates and placed tasks are dropped (A13); tasks go by cost desc, then global index.  Writes
    ``node`` in place and updates ``nodes``; returns False at the first task that does not fit the top
    node (it and all later tasks stay unplaced).  A run of equal-cost tasks is placed at once: greedy
    worst fit sends them to the highest "levels" mu_k - i c of all nodes, ties by lowest node index.
    """
    tasks = np.unique(np.asarray(tasks, dtype=np.int64))
    if tasks.size:
        tasks = tasks[node[tasks] < 0]
    if tasks.size == 0:
        return True
    c = np.asarray(costs, dtype=np.float64)[tasks]
    order = np.lexsort((tasks, -c))
    tasks, c = tasks[order], c[order]
    cuts = np.concatenate([[0], np.flatnonzero(np.diff(c)) + 1, [tasks.size]])
    K = len(nodes.mu)
    ks = np.arange(K)
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        p = float(c[a])
        n = b - a
        mu = np.asarray(nodes.mu)
        room = np.minimum(np.maximum(np.floor((mu + np.asarray(nodes.tol)) / p), 0), n).astype(np.int64)
        slot_node = np.repeat(ks, room)
        step = np.arange(slot_node.size) - np.repeat(np.cumsum(room) - room, room)
        level = mu[slot_node] - step * p
        chosen = slot_node[np.lexsort((slot_node, -level))[:n]]
        node[tasks[a:a + chosen.size]] = chosen
        for k, cnt in enumerate(np.bincount(chosen, minlength=K).tolist()):
            if cnt:
                nodes.take(k, cnt * p)
        if chosen.size < n:
            return False
    return True


def fuse(nodes: NodeHeap, hosted: list[list[Any]], x: int, y: int) -> tuple[int, int, list[Any]] | None:
    """FUSE(x, y) (spec 2.0): move everything hosted on the donor to the receiver if its load fits.

    The receiver is the node with the larger initial capacity (x on a tie).  ``hosted[k]`` lists what
    node k hosts (tasks or segments); returns ``(receiver, donor, moved)`` (the caller relabels the
    moved items) or None when the donor's load does not fit.  Never lowers phi; conserves the load.
    """
    if nodes.init[y] > nodes.init[x]:
        x, y = y, x
    load_y = nodes.init[y] - nodes.mu[y]
    if not nodes.fits(load_y, x):
        return None
    moved = hosted[y]
    hosted[x].extend(moved)
    hosted[y] = []
    nodes.set(x, nodes.mu[x] - load_y)
    nodes.set(y, nodes.init[y])
    return x, y, moved


def link_orders(job: Job, seed: int = 0) -> list[np.ndarray]:
    """The seeded order of every edge's links (A4): ``orders[e]`` is a permutation of ``0..n_i n_j - 1``,
    link ``l`` being task ``l // n_j`` of the source group and ``l % n_j`` of the destination group.

    One ``numpy.random.Generator(PCG64(seed))`` draws the permutations in edge-index order.
    """
    rng = np.random.default_rng(seed)
    n = job.tasks
    return [rng.permutation(int(n[i]) * int(n[j])) for i, j in zip(job.src.tolist(), job.dst.tolist())]


def pairs(job: Job, edge_order: np.ndarray, orders: list[np.ndarray]) -> tuple[list[int], list[int], list[int]]:
    """The task pairs (t, u, e) of the edges in ``edge_order``, each edge's links in ``orders[e]``."""
    off, n = job.offset, job.tasks
    ts, us, es = [], [], []
    for e in edge_order.tolist():
        i, j = int(job.src[e]), int(job.dst[e])
        lk = orders[e]
        nj = int(n[j])
        ts.append(off[i] + lk // nj)
        us.append(off[j] + lk % nj)
        es.append(np.full(lk.size, e, dtype=np.int64))
    if not ts:
        return [], [], []
    return np.concatenate(ts).tolist(), np.concatenate(us).tolist(), np.concatenate(es).tolist()


def edgeless_tasks(job: Job) -> np.ndarray:
    """Tasks of groups that belong to no edge (A12)."""
    linked = np.zeros(job.G, dtype=bool)
    linked[job.src] = True
    linked[job.dst] = True
    off = job.offset
    parts = [np.arange(off[g], off[g + 1]) for g in np.flatnonzero(~linked).tolist()]
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def finish(job: Job, nodes: NodeHeap, node: np.ndarray, rest: Any, info: dict[str, Any]) -> Allocation:
    """Run SINGLES on ``rest`` and package the result."""
    ok = singles(nodes, rest, job.costs, node)
    info["heap_ops"] = nodes.ops
    return Allocation(node, bool(ok and np.all(node >= 0)), info)


def edge_key(job: Job, key: str, choices: dict[str, Callable[[], np.ndarray]], what: str) -> np.ndarray:
    """The edge priority named ``key`` among ``choices`` (name -> a function of no arguments)."""
    if key not in choices:
        raise SkewbenchError(f"{what}: key must be one of {sorted(choices)}, got {key!r}")
    return np.asarray(choices[key](), dtype=np.float64)

