"""The group-based job model of allocation.spec.md section 1 and the evaluation of an allocation.

A :class:`Job` is one instance: groups of parallel tasks (a group's total processing cost P_g in
percent of one core, its task count n_g), all-to-all edges between groups (an edge's total rate
C_e in MB/s) and the nodes' initial capacities mu_k^init (percent of one core).  Tasks are
numbered globally group after group: group g's tasks are ``offset[g] .. offset[g] + n_g - 1``.

By default the costs are uniform (Eq. 1): every task of g costs ``P_g / n_g`` and every link of
edge e carries ``w_e = C_e / (n_i n_j)``.  A job may instead carry measured per-task costs
(``task_cost``) and measured per-link rates (``link_rate``, one ``n_i x n_j`` matrix per edge):
section 2.7's skew relaxation turns such a job into a uniform one.

An allocation is an array ``node`` of length m (the task's node, -1 if unplaced); :func:`evaluate`
computes every section-3 metric of it from the counts form of the objective.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from skewbench.errors import SkewbenchError

#: relative tolerance of capacity checks (spec 2.9)
TOL = 1e-9

#: outcome codes of an allocation (practice-allocation.spec.md 3): every task placed within
#: capacity; every task placed, some node over capacity; tasks left unplaced; a Flink job without
#: enough slots (nothing placed); a search that spent its state budget (Storm's RAS)
OK, OK_OVERLOADED, FAIL_CAPACITY, FAIL_SLOTS, FAIL_SEARCH = (
    "OK", "OK-OVERLOADED", "FAIL-CAPACITY", "FAIL-SLOTS", "FAIL-SEARCH")
OUTCOMES = (OK, OK_OVERLOADED, FAIL_CAPACITY, FAIL_SLOTS, FAIL_SEARCH)


def fits(load: float, capacity: float) -> bool:
    """``load <= capacity`` up to the relative tolerance :data:`TOL`."""
    return load <= capacity + TOL * max(1.0, abs(capacity))


@dataclass
class Job:
    """One allocation instance (allocation.spec.md 1.1-1.2)."""

    name: str
    groups: list[str]
    tasks: np.ndarray  # int64 (G,): n_g
    cost: np.ndarray  # float64 (G,): P_g, percent of one core
    src: np.ndarray  # int64 (E,): edge e = src[e] -> dst[e]
    dst: np.ndarray  # int64 (E,)
    rate: np.ndarray  # float64 (E,): C_e, MB/s
    capacity: np.ndarray  # float64 (K,): mu_k^init, percent of one core
    task_cost: np.ndarray | None = None  # float64 (m,): measured per-task PC; None = uniform
    link_rate: dict[int, np.ndarray] | None = None  # edge -> (n_i, n_j) measured per-link rates
    meta: dict[str, Any] = field(default_factory=dict)  # generator parameters (e.g. {"f": 3})

    def __post_init__(self) -> None:
        self.tasks = np.asarray(self.tasks, dtype=np.int64)
        self.cost = np.asarray(self.cost, dtype=np.float64)
        self.src = np.asarray(self.src, dtype=np.int64)
        self.dst = np.asarray(self.dst, dtype=np.int64)
        self.rate = np.asarray(self.rate, dtype=np.float64)
        self.capacity = np.asarray(self.capacity, dtype=np.float64)
        if self.task_cost is not None:
            self.task_cost = np.asarray(self.task_cost, dtype=np.float64)
        self.groups = [str(g) for g in self.groups]

    # ---- shape
    @property
    def G(self) -> int:
        return int(self.tasks.shape[0])

    @property
    def E(self) -> int:
        return int(self.src.shape[0])

    @property
    def K(self) -> int:
        return int(self.capacity.shape[0])

    @property
    def m(self) -> int:
        return int(self.tasks.sum())

    @property
    def offset(self) -> np.ndarray:
        """First global task index of each group (G + 1 entries; the last is m)."""
        return np.concatenate([[0], np.cumsum(self.tasks)]).astype(np.int64)

    @property
    def group_of(self) -> np.ndarray:
        """The group of every task (m,)."""
        return np.repeat(np.arange(self.G, dtype=np.int64), self.tasks)

    # ---- costs
    @property
    def uniform(self) -> bool:
        """True when Eq. 1 holds (no measured per-task costs or per-link rates)."""
        return self.task_cost is None and not self.link_rate

    @property
    def per_task(self) -> np.ndarray:
        """p_g = P_g / n_g (G,)."""
        return self.cost / np.maximum(self.tasks, 1)

    @property
    def costs(self) -> np.ndarray:
        """Every task's processing cost (m,)."""
        return self.task_cost if self.task_cost is not None else np.repeat(self.per_task, self.tasks)

    @property
    def per_link(self) -> np.ndarray:
        """w_e = C_e / (n_i n_j) (E,)."""
        return self.rate / np.maximum(self.tasks[self.src] * self.tasks[self.dst], 1)

    @property
    def rs(self) -> np.ndarray:
        """Relative significance RS(e) = C_e / (P_i + P_j) (Eq. 2)."""
        denom = self.cost[self.src] + self.cost[self.dst]
        return np.divide(self.rate, denom, out=np.full(self.E, np.inf), where=denom > 0)

    @property
    def total_cost(self) -> float:
        return float(self.costs.sum())

    @property
    def imc_total(self) -> float:
        """IMC_tot = sum of C_e (or of the measured link rates)."""
        if self.link_rate:
            return float(sum(float(self.link_rate[e].sum()) if e in self.link_rate else float(self.rate[e])
                             for e in range(self.E)))
        return float(self.rate.sum())

    @property
    def identical_nodes(self) -> bool:
        return bool(self.K > 0 and np.all(self.capacity == self.capacity[0]))

    def validate(self) -> "Job":
        """Raise :class:`SkewbenchError` naming the first malformed field; returns the job."""
        where = f"instance '{self.name}'"
        G, E = self.G, self.E
        if G == 0:
            raise SkewbenchError(f"{where}: no groups")
        if len(self.groups) != G or self.cost.shape != (G,):
            raise SkewbenchError(f"{where}: groups, tasks and cost must have one entry per group")
        if len(set(self.groups)) != G:
            raise SkewbenchError(f"{where}: group names must be unique")
        if np.any(self.tasks < 1):
            g = int(np.argmax(self.tasks < 1))
            raise SkewbenchError(f"{where}: group '{self.groups[g]}' has {int(self.tasks[g])} tasks; needs >= 1")
        if not np.all(np.isfinite(self.cost)) or np.any(self.cost <= 0):
            g = int(np.argmax(~np.isfinite(self.cost) | (self.cost <= 0)))
            raise SkewbenchError(f"{where}: group '{self.groups[g]}' has cost {self.cost[g]}; needs a finite "
                                 "number > 0 (percent of one core)")
        if self.dst.shape != (E,) or self.rate.shape != (E,):
            raise SkewbenchError(f"{where}: edges need a source, a destination and a rate each")
        for e in range(E):
            i, j = int(self.src[e]), int(self.dst[e])
            if not (0 <= i < G and 0 <= j < G):
                raise SkewbenchError(f"{where}: edge {e} joins unknown groups ({i}, {j})")
            if i == j:
                raise SkewbenchError(f"{where}: edge {e} joins group '{self.groups[i]}' to itself")
        if len({(int(a), int(b)) for a, b in zip(self.src, self.dst)}) != E:
            raise SkewbenchError(f"{where}: duplicate edge")
        if not np.all(np.isfinite(self.rate)) or np.any(self.rate < 0):
            raise SkewbenchError(f"{where}: edge rates must be finite numbers >= 0 (MB/s)")
        if self.K == 0:
            raise SkewbenchError(f"{where}: no nodes")
        if not np.all(np.isfinite(self.capacity)) or np.any(self.capacity <= 0):
            raise SkewbenchError(f"{where}: node capacities must be finite numbers > 0 (percent of one core)")
        if self.task_cost is not None:
            tc = self.task_cost
            if tc.shape != (self.m,) or not np.all(np.isfinite(tc)) or np.any(tc <= 0):
                raise SkewbenchError(f"{where}: task_cost needs one finite cost > 0 per task ({self.m})")
        for e, mat in (self.link_rate or {}).items():
            i, j = int(self.src[e]), int(self.dst[e])
            if np.shape(mat) != (int(self.tasks[i]), int(self.tasks[j])) or not np.all(np.isfinite(mat)) \
                    or np.any(np.asarray(mat) < 0):
                raise SkewbenchError(f"{where}: link rates of edge {e} must be a {int(self.tasks[i])} x "
                                     f"{int(self.tasks[j])} matrix of finite numbers >= 0")
        return self


def counts(job: Job, node: np.ndarray) -> np.ndarray:
    """a_{g,k}: tasks of each group on each node (G, K); unplaced tasks are not counted."""
    node = np.asarray(node, dtype=np.int64)
    a = np.zeros((job.G, job.K), dtype=np.int64)
    placed = node >= 0
    np.add.at(a, (job.group_of[placed], node[placed]), 1)
    return a


def gain(job: Job, node: np.ndarray) -> float:
    """phi: the IMC kept on-node (MB/s), each directed link counted once (spec 1.3, A2)."""
    node = np.asarray(node, dtype=np.int64)
    if job.link_rate:
        off = job.offset
        total = 0.0
        a = None
        for e in range(job.E):
            i, j = int(job.src[e]), int(job.dst[e])
            if e in job.link_rate:
                ni, nj = node[off[i]:off[i + 1]], node[off[j]:off[j + 1]]
                same = (ni[:, None] == nj[None, :]) & (ni[:, None] >= 0)
                total += float(np.asarray(job.link_rate[e])[same].sum())
            else:
                a = counts(job, node) if a is None else a
                total += float(job.per_link[e] * float(a[i] @ a[j]))
        return total
    a = counts(job, node).astype(np.float64)
    return float(np.sum(job.per_link * np.einsum("ek,ek->e", a[job.src], a[job.dst])))


def collocated_links(job: Job, node: np.ndarray) -> np.ndarray:
    """L_e = sum_k a_{i,k} a_{j,k}: collocated task links per edge (E,)."""
    a = counts(job, node)
    return np.einsum("ek,ek->e", a[job.src], a[job.dst]).astype(np.int64)


def loads(job: Job, node: np.ndarray) -> np.ndarray:
    """Each node's processing load (K,)."""
    node = np.asarray(node, dtype=np.int64)
    out = np.zeros(job.K, dtype=np.float64)
    placed = node >= 0
    np.add.at(out, node[placed], job.costs[placed])
    return out


@dataclass(frozen=True)
class Evaluation:
    """Section 3's metrics of one allocation."""

    gain: float  # phi, MB/s
    imc_total: float
    unplaced: int
    violations: int  # nodes whose load exceeds mu_k^init (beyond TOL)
    max_utilisation: float  # max_k load_k / mu_k^init
    nodes_used: int
    overload_excess: float = 0.0  # sum_k max(0, load_k - mu_k^init) / total load (V_excess)

    @property
    def cut(self) -> float:
        return self.imc_total - self.gain

    @property
    def local_fraction(self) -> float:
        return self.gain / self.imc_total if self.imc_total > 0 else 1.0

    @property
    def success(self) -> bool:
        return self.unplaced == 0

    @property
    def outcome(self) -> str:
        """The outcome code the allocation itself shows: FAIL-CAPACITY, OK-OVERLOADED or OK."""
        if self.unplaced:
            return FAIL_CAPACITY
        return OK_OVERLOADED if self.violations else OK


def evaluate(job: Job, node: np.ndarray) -> Evaluation:
    node = np.asarray(node, dtype=np.int64)
    if node.shape != (job.m,):
        raise ValueError(f"allocation has {node.shape} entries for {job.m} tasks")
    if np.any(node >= job.K) or np.any(node < -1):
        raise ValueError("allocation names a node that does not exist")
    ld = loads(job, node)
    over = int(sum(0 if fits(ld[k], job.capacity[k]) else 1 for k in range(job.K)))
    total = job.total_cost
    excess = float(np.maximum(0.0, ld - job.capacity).sum() / total) if over and total > 0 else 0.0
    return Evaluation(gain=gain(job, node), imc_total=job.imc_total, unplaced=int(np.sum(node < 0)),
                      violations=over, max_utilisation=float(np.max(ld / job.capacity)),
                      nodes_used=int(np.count_nonzero(ld > 0) or len(np.unique(node[node >= 0]))),
                      overload_excess=excess)
