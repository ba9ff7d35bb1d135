"""The allocation heuristics of allocation.spec.md section 2: NAIVE, TL, TD, Storm's round robin,
random fit, FFD, and the relaxations of section 2.7.

Every heuristic takes a *uniform* :class:`~skewbench.allocation.model.Job` (Eq. 1) and returns an
:class:`Allocation`: ``node[t]`` is task t's node (-1 = unplaced).  ``success`` means every task is
placed and no node is over capacity; on failure some tasks stay -1 and the placed ones still respect
capacity (spec 7.1-7.2).  The one exception is Storm's round robin, which places every task and may
overload a node (``info["overloaded"]``, ``success=False``).

Conventions shared by every algorithm here (and by the test reference):

- a load ``need`` fits node k when ``need <= mu_k + TOL * max(1, mu_k^init)`` (spec 2.9, A30), and the
  number of tasks of cost c that fit is ``floor((mu_k + TOL * max(1, mu_k^init)) / c)``;
- the node heap orders nodes by free capacity, ties by lowest index (spec 2.0);
- tasks are numbered globally group after group, so "(group, task)" order is global index order.

:func:`allocate` is the single entry point: it splits a non-uniform job into skew subgroups (2.7.3),
runs the named heuristic and maps the node array back to the input job's tasks.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from skewbench.allocation.model import TOL, Job, loads
from skewbench.errors import SkewbenchError

__all__ = [
    "Allocation", "NodeHeap", "singles", "fuse", "link_orders", "naive", "tl", "td", "storm_rr", "random_fit",
    "ffd", "regranularise", "with_retry", "heterogeneous_capacities", "split_skewed", "allocate", "STRATEGIES",
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


def _check_uniform(job: Job, what: str) -> None:
    if not job.uniform:
        raise SkewbenchError(f"{what}: job '{job.name}' has measured per-task costs or link rates; split it with "
                             "split_skewed (spec 2.7.3) or use allocate()")


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


def _pairs(job: Job, edge_order: np.ndarray, orders: list[np.ndarray]) -> tuple[list[int], list[int], list[int]]:
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


def _edgeless_tasks(job: Job) -> np.ndarray:
    """Tasks of groups that belong to no edge (A12)."""
    linked = np.zeros(job.G, dtype=bool)
    linked[job.src] = True
    linked[job.dst] = True
    off = job.offset
    parts = [np.arange(off[g], off[g + 1]) for g in np.flatnonzero(~linked).tolist()]
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def _finish(job: Job, nodes: NodeHeap, node: np.ndarray, rest: Any, info: dict[str, Any]) -> Allocation:
    """Run SINGLES on ``rest`` and package the result."""
    ok = singles(nodes, rest, job.costs, node)
    info["heap_ops"] = nodes.ops
    return Allocation(node, bool(ok and np.all(node >= 0)), info)


# ---------------------------------------------------------------------------------------------- 2.1 NAIVE
def naive(job: Job, seed: int = 0) -> Allocation:
    """NAIVE (spec 2.1): task pairs by w_e desc (ties: edge index, then the seeded shuffle of
    :func:`link_orders`), each pair on the first node from a moving cursor that fits it; then SINGLES."""
    _check_uniform(job, "naive")
    w = job.per_link
    pairs_t, pairs_u, _ = _pairs(job, np.lexsort((np.arange(job.E), -w)), link_orders(job, seed))
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
    rest_arr = np.concatenate([np.asarray(rest, dtype=np.int64), _edgeless_tasks(job)])
    return _finish(job, nodes, np.asarray(node, dtype=np.int64), rest_arr, {"pairs": len(pairs_t)})


# ---------------------------------------------------------------------------------------------- 2.2 TL
def _edge_key(job: Job, key: str, choices: dict[str, Callable[[], np.ndarray]], what: str) -> np.ndarray:
    if key not in choices:
        raise SkewbenchError(f"{what}: key must be one of {sorted(choices)}, got {key!r}")
    return np.asarray(choices[key](), dtype=np.float64)


def tl(job: Job, key: str = "imc", seed: int = 0) -> Allocation:
    """TL (spec 2.2, Algorithms 1-2): the task-level pair heuristic.

    ``key``: ``imc`` (C_e, the paper's TL; A3), ``imct`` (w_e) or ``rs`` (RS(e)).  Pairs go by key desc,
    edge index, then the edge's seeded link order (:func:`link_orders`, A4); PICK keeps filling the last
    node of the same group pair while the pair fits, else takes the heap top; a pair whose tasks are
    both placed on different nodes calls FUSE(node(t), node(u)).  ``info``: ``pairs`` (= sum n_i n_j), ``fusions``,
    ``singles`` (|R| before SINGLES drops duplicates), ``heap_ops``.
    """
    _check_uniform(job, "tl")
    kv = _edge_key(job, key, {"imc": lambda: job.rate, "imct": lambda: job.per_link, "rs": lambda: job.rs}, "tl")
    pairs_t, pairs_u, pairs_e = _pairs(job, np.lexsort((np.arange(job.E), -kv)), link_orders(job, seed))
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
    rest_arr = np.concatenate([np.asarray(rest, dtype=np.int64), _edgeless_tasks(job)])
    info = {"pairs": len(pairs_t), "fusions": fusions, "singles": int(rest_arr.size)}
    return _finish(job, nodes, np.asarray(node, dtype=np.int64), rest_arr, info)


# ---------------------------------------------------------------------------------------------- 2.3 TD
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
    _check_uniform(job, "td")
    kv = _edge_key(job, key, {"rs": lambda: job.rs, "imc": lambda: job.rate}, "td")
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
    return _finish(job, nodes, node, np.concatenate(rest), info)


# ---------------------------------------------------------------------------------------------- 2.4, 2.6
def storm_rr(job: Job, kuse: str | int = "load") -> Allocation:
    """STORM-RR (spec 2.4): task i (global order) on node i mod Kuse.

    ``kuse``: ``load`` = the fewest nodes (in index order) whose capacity covers sum P, grown until no
    node is over capacity or Kuse = K (A16); ``all`` = K; an integer (at most K).  It places every task;
    ``info["overloaded"]`` flags a node over capacity, and then ``success`` is False.
    """
    K = job.K
    cap = np.cumsum(job.capacity)
    total = job.total_cost
    if kuse == "load":
        ok = total <= cap + TOL * np.maximum(1.0, cap)
        k = int(np.argmax(ok)) + 1 if ok.any() else K
    elif kuse == "all":
        k = K
    elif isinstance(kuse, (int, np.integer)) and not isinstance(kuse, bool) and kuse >= 1:
        if kuse > K:
            raise SkewbenchError(f"storm: kuse={kuse} exceeds the {K} nodes of job '{job.name}'")
        k = int(kuse)
    else:
        raise SkewbenchError(f"storm: kuse must be 'load', 'all' or an integer >= 1, got {kuse!r}")
    idx = np.arange(job.m, dtype=np.int64)
    mu_tol = job.capacity + TOL * np.maximum(1.0, job.capacity)
    while True:
        node = idx % k
        over = int(np.count_nonzero(loads(job, node) > mu_tol))
        if over == 0 or k == K or kuse != "load":
            break
        k += 1
    return Allocation(node, over == 0, {"kuse": k, "overloaded": over > 0, "violations": over})


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
    return _finish(job, nodes, np.full(job.m, -1, dtype=np.int64), np.arange(job.m), {})


# ---------------------------------------------------------------------------------------------- 2.7 relaxations
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


# ---------------------------------------------------------------------------------------------- entry point
#: strategy name -> (function, fixed parameters, takes a seed)
STRATEGIES: dict[str, tuple[Callable[..., Allocation], dict[str, Any], bool]] = {
    "naive": (naive, {}, True),
    "tl": (tl, {"key": "imc"}, True),
    "tl-imct": (tl, {"key": "imct"}, True),
    "tl-rs": (tl, {"key": "rs"}, True),
    "td": (td, {"key": "rs"}, False),
    "td-imc": (td, {"key": "imc"}, False),
    "td-push": (td, {"k0": "push"}, False),
    "td-first": (td, {"second": "first"}, False),
    "storm": (storm_rr, {"kuse": "load"}, False),
    "storm-all": (storm_rr, {"kuse": "all"}, False),
    "random": (random_fit, {}, True),
    "ffd": (ffd, {}, False),
}
_TUNABLE = {tl: {"key"}, td: {"key", "k0", "second"}, storm_rr: {"kuse"}}


def allocate(job: Job, strategy: str, seed: int = 0, *, retry: bool = False, skew_eps: float = 0.1,
             **params: Any) -> Allocation:
    """Run the heuristic named ``strategy`` (a key of :data:`STRATEGIES`) on ``job``.

    A non-uniform job is split into skew subgroups first (:func:`split_skewed`) and the node array
    mapped back to its tasks; ``success`` is then re-checked against the job's measured costs (a
    subgroup's tasks are costed at their mean, so a node may end up over capacity by up to about a
    factor 1 + eps: ``info["violations"]``).  ``retry=True`` adds the re-granularised retry
    (:func:`with_retry`); if it is used, the allocation refers to ``Allocation.job`` and is not mapped.
    """
    if strategy not in STRATEGIES:
        raise SkewbenchError(f"unknown allocation strategy {strategy!r}; choose from {sorted(STRATEGIES)}")
    fn, fixed, seeded = STRATEGIES[strategy]
    bad = set(params) - _TUNABLE.get(fn, set())
    if bad:
        raise SkewbenchError(f"{strategy}: unknown parameter(s) {sorted(bad)}")
    kw = {**fixed, **params, **({"seed": seed} if seeded else {})}
    work, origin = (job, None) if job.uniform else split_skewed(job, skew_eps)
    a = with_retry(fn, work, **kw) if retry else fn(work, **kw)
    if origin is None or a.job is not None:
        return a
    node = np.full(job.m, -1, dtype=np.int64)
    node[origin] = a.node
    mu_tol = job.capacity + TOL * np.maximum(1.0, job.capacity)
    over = int(np.count_nonzero(loads(job, node) > mu_tol))
    info = {**a.info, "subgroups": work.G, "violations": over}
    return Allocation(node, bool(np.all(node >= 0) and over == 0), info)
