"""Flink slot sharing, kube-scheduler NodeResourcesFit and Heron packing as allocation strategies.

Follows ``practice-allocation.spec.md`` ("spec"): sections 0-1 (mapping and model differences),
2.4 (FLINK), 2.5 (K8S), 2.6 (HERON), 2.7 (defaults), 3 (outcome codes and footprint) and the
recommendations of section 6 (A-F1..A-F4, A-K1..A-K5, A-H1, A-H2).  None of these strategies
reads an edge rate: they see the group sizes, the task costs and the node capacities only.

Strategies
----------
``flink-pack`` / ``flink-spread``
    Flink's default slot sharing with ``taskmanager.load-balance.mode`` NONE / SLOTS (spec 2.4).
    Every group is a job vertex of the one default slot-sharing group; with all-to-all edges the
    LocalInputPreferred builder gives the shared slots (ESSGs) in closed form,
    ``ESSG j = {(g, j) : n_g > j}``, ``j = 0 .. S-1``, ``S = max_g n_g`` (implemented as such; the
    literal builder lives in ``tests/reference/containers_ref.py`` and is tested against it, spec
    7.3).  Node ``m`` is a TaskManager with ``k_m = max(1, floor(mu_m / 100))`` slots (one per
    core, A-F1), or ``slots`` per TM when that parameter is set.  If ``S > sum k_m`` the outcome is
    FAIL-SLOTS and nothing is placed.  Otherwise ESSG ``j`` (in order) goes to a TM with a free
    slot: PACK the lowest index (A-F2: index order), SPREAD the least ``used_m / k_m``, ties the
    lowest index.  CPU is never checked (``respects_capacity = False``): an overload is reported
    as OK-OVERLOADED and kept (spec 1.2).
``flink-fg``
    Fine-grained resources (spec 2.4): every shared slot requests the slot-sharing group's
    profile ``D`` and TM ``m`` offers ``k_m = floor(mu_m / D)`` slots (inclusive with the
    capacity tolerance of spec 0).  The profile is the largest ESSG, ``D = max_j D_j`` with
    ``D_j`` the summed cost of ESSG ``j`` (A-F3's D_0): on uniform jobs this is ``D_0 = sum_g p_g``
    of the spec, and on measured jobs it is what keeps every node within capacity.  A-F3's
    variant ``D = sum P / S`` is not offered: it declares slots smaller than the shared slots that
    run in them, so it overloads nodes while the strategy is one that respects capacity (the
    results' validation holds every FLINK-FG run to its capacities).  ``mode = "pack"`` (NONE,
    the engine default) or ``"spread"`` (SLOTS: the least CPU share ``D * used_m / mu_m``, ties
    lowest index).
``k8s-least`` / ``k8s-most``
    kube-scheduler with the NodeResourcesFit scoring strategies LeastAllocated / MostAllocated,
    CPU the only scoring resource (A-K2), one pod per task (spec 2.5).  All arithmetic is on
    integer millicores.  Our costs are real numbers and a pod's request is a whole number of
    millicores, so a request is the cost ``x`` (percent of one core) rounded *up*,
    ``ceil(10 x)``, and a node's allocatable its capacity rounded *down*, ``floor(10 mu)`` (each
    within a relative 1e-12, so a float such as 0.1 * 3 is not pushed over a whole millicore);
    spec 2.5 rounds both to the nearest millicore, which lets requests that fit the allocatable
    add up to more than the node's capacity (three pods of 12.34% on a node of 37%: 3 x 123m =
    369m <= 370m, a load of 37.02%) and gives a pod below 0.05% a request of 0 that always fits.
    Rounding this way, what the filter admits is what the node holds, so K8S respects capacity
    (spec 1.2, 7.1); on costs and capacities in whole millicores (E1) both roundings agree.  A pod
    with request 0 (none here: costs are > 0) is scored as 100m.  A node with allocatable 0 has no scoring resource left and scores 0.  The
    filter is ``r <= A_k - R_k`` (and fewer than ``max_pods`` pods when that is set, A-K5).  A pod
    no node fits stays Pending (unplaced) and the next pod is scheduled (FAIL-CAPACITY at the
    end).  All K nodes are filtered and scored (A-K4, ``percentageOfNodesToScore = 100``).
    Pod order (A-K1): ``contiguous`` (group after group, the default), ``interleaved`` (one
    task of each group in turn) or ``random``.
``heron-rr``
    Heron's RoundRobinPacking (spec 2.6): task ``i`` of the global group-after-group order on
    container ``i mod C`` (groups in index order: all declared RAM is equal), CPU unchecked
    (``respects_capacity = False``).  ``C`` defaults to ``min(K, ceil(sum P / min mu))`` (A-H1);
    ``containers = "all"`` gives ``C = K`` and an integer fixes it (at most K).  This is
    :func:`~skewbench.allocation.strategies.stormrr.storm_rr` with an integer ``kuse = C`` (spec 7.7).
``heron-ffd``
    Heron's FirstFitDecreasingPacking (spec 2.6): groups by their declared per-instance CPU,
    descending, ties by group index; each group's tasks in index order on the lowest-index node
    with ``free_k >= p(t) + pad_k`` and fewer than ``max_instances`` tasks; the first task that
    fits nowhere stops the packing (Heron throws): FAIL-CAPACITY with the rest unplaced.  Defaults
    ``padding = 0`` and ``max_instances = 0`` (no limit) per A-H2; Heron's literal setting is
    ``padding = "literal"`` (``pad_k = max(100, 0.1 mu_k)``, one core or 10% of the container)
    with ``max_instances = 10``.  Nodes keep their own capacities (A-H1).

Choices where the spec leaves room
----------------------------------
* **Task costs.** ``p(t)`` is ``job.costs[t]`` (uniform jobs: ``p_g``).  The spec's per-group
  rules read one value per group; on a measured job: Flink's ``D_j`` sums the actual costs of
  ESSG ``j``; Heron's declared per-instance CPU of a group (its sort key) is the largest cost of
  its tasks (``p_g`` on uniform jobs, exactly, so ties between groups are the spec's), while the
  capacity check uses each task's own cost; K8s rounds every task's own cost.
* **Capacity tolerance** (spec 0): a task fits when ``need <= free_k + 1e-9 max(1, mu_k)``, with
  ``free_k`` kept by subtraction (PLACE).  FLINK-FG's ``k_m`` is the largest ``k`` with
  ``k D <= mu_m + 1e-9 max(1, mu_m)``.  An allocation is OK-OVERLOADED when a node's load fails
  :func:`skewbench.allocation.model.fits` (the same test as ``evaluate``'s violations).
* **HERON-RR's default C** counts ``sum P`` exactly (``math.fsum``) and takes the smallest ``c``
  with ``sum P <= c min mu (1 + 1e-9)``, at least 1 and at most K.
* **K8s randomness** (spec 1.5): ``rng = numpy.random.default_rng(seed)`` per call;
  ``u = rng.random(m)`` first (``u[i]`` belongs to the ``i``-th pod of the pod order, drawn for
  every pod, placed or Pending), then, for ``order = "random"``, the order
  ``rng.permutation(m)``.  Among the top-scoring feasible nodes ``T`` (index order) the pod goes
  to ``T[floor(u[i] |T|)]``.  The result is a pure function of (instance, seed).
* **Outcome codes** (spec 3.1): FAIL-SLOTS (FLINK, nothing placed), else FAIL-CAPACITY when a
  task is unplaced, else OK-OVERLOADED when a node is over capacity, else OK.

Stats (spec 3): ``outcome``, ``placed``, ``unplaced``, ``nodes_used``, the overload facts
``v_max`` (max load / mu), ``v_nodes`` (nodes over capacity) and ``v_excess`` (sum of the excess
over sum P); FLINK adds ``S``, ``slots_offered`` (sum k_m), ``slots_used``, ``tms_used`` and
``used_per_tm`` (used_m per TM, comma-separated), FLINK-FG also ``profile_demand`` (D); K8S
``order``; HERON-RR ``containers`` (C); HERON-FFD ``padding`` and ``max_instances``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from skewbench.allocation.model import FAIL_SLOTS, TOL, Job, evaluate
from skewbench.allocation.strategies.base import Outcome, Strategy
from skewbench.errors import SkewbenchError

#: kube-scheduler's non-zero CPU request used for scoring a pod that requests 0 (millicores)
DEFAULT_MILLI_CPU = 100
#: NodeResourcesFit's MaxNodeScore
MAX_NODE_SCORE = 100


def _slack(capacity: np.ndarray) -> np.ndarray:
    """The capacity tolerance 1e-9 max(1, mu) of every node (spec 0)."""
    return TOL * np.maximum(1.0, np.asarray(capacity, dtype=np.float64))


# ---------------------------------------------------------------------------------------------- shared facts
def footprint(job: Job, node: np.ndarray) -> dict[str, Any]:
    """Placement and overload facts of an allocation (spec 3.2, 3.4), from its evaluation."""
    node = np.asarray(node, dtype=np.int64)
    ev = evaluate(job, node)
    return {"placed": int(np.count_nonzero(node >= 0)), "unplaced": ev.unplaced,
            "nodes_used": int(len(np.unique(node[node >= 0]))), "v_max": ev.max_utilisation,
            "v_nodes": ev.violations, "v_excess": ev.overload_excess}


def outcome_code(job: Job, node: np.ndarray, slots_failed: bool = False) -> str:
    """Spec 3.1: FAIL-SLOTS, FAIL-CAPACITY (a task unplaced), OK-OVERLOADED (a node over capacity) or OK."""
    return FAIL_SLOTS if slots_failed else evaluate(job, node).outcome


# ---------------------------------------------------------------------------------------------- 2.4 FLINK
def essg(job: Job) -> np.ndarray:
    """The shared slot (ESSG) of every task: its index within its group (spec 2.4's closed form)."""
    return np.arange(job.m, dtype=np.int64) - np.repeat(job.offset[:-1], job.tasks)


def essg_demand(job: Job) -> np.ndarray:
    """``D_j``: the summed cost of the tasks of ESSG ``j``, j = 0 .. S-1 (added in group order)."""
    S = int(job.tasks.max())
    return np.bincount(essg(job), weights=job.costs, minlength=S).astype(np.float64)


def flink_slots(capacity: np.ndarray, slots: int = 0) -> np.ndarray:
    """Coarse-grained slots per TM: ``slots`` each, or ``max(1, floor(mu / 100))`` when 0 (A-F1)."""
    cap = np.asarray(capacity, dtype=np.float64)
    if slots:
        return np.full(cap.shape[0], int(slots), dtype=np.int64)
    return np.maximum(1, np.floor(cap / 100.0)).astype(np.int64)


def flink_fg_slots(capacity: np.ndarray, demand: float) -> np.ndarray:
    """Fine-grained slots per TM: the largest ``k`` with ``k D <= mu + tol`` (spec 2.4)."""
    cap = np.asarray(capacity, dtype=np.float64)
    room = cap + _slack(cap)
    k = np.floor(room / demand).astype(np.int64)
    k = np.where(k * demand > room, k - 1, k)  # a floor that rounded up
    return np.maximum(k, 0)


def flink_assign(k: np.ndarray, S: int, mode: str, share: np.ndarray | None = None) -> np.ndarray | None:
    """The TM of every ESSG j = 0 .. S-1 (spec 2.4 lines 1-7), or None if the slots are short.

    ``pack``: fill the TMs in index order.  ``spread``: the TM of least ``used_m / k_m`` (or, given
    ``share`` = D / mu_m per TM, the least ``D * used_m / mu_m``) among those with a free slot, ties
    the lowest index."""
    k = np.asarray(k, dtype=np.int64)
    if S > int(k.sum()):
        return None
    if mode == "pack":
        return np.searchsorted(np.cumsum(k), np.arange(S, dtype=np.int64), side="right").astype(np.int64)
    used = np.zeros(k.shape[0], dtype=np.int64)
    out = np.empty(S, dtype=np.int64)
    for j in range(S):
        util = used / np.maximum(k, 1) if share is None else share[0] * used / share[1]
        m = int(np.argmin(np.where(used < k, util, np.inf)))
        out[j] = m
        used[m] += 1
    return out


def _flink_result(job: Job, k: np.ndarray, tm: np.ndarray | None) -> tuple[np.ndarray, dict[str, Any]]:
    S = int(job.tasks.max())
    info: dict[str, Any] = {"S": S, "slots_offered": int(k.sum())}
    if tm is None:
        info.update(slots_failed=True, slots_used=0, tms_used=0, used_per_tm=",".join("0" for _ in k))
        return np.full(job.m, -1, dtype=np.int64), info
    used = np.bincount(tm, minlength=job.K)
    info.update(slots_failed=False, slots_used=int(used.sum()), tms_used=int(np.count_nonzero(used)),
                used_per_tm=",".join(str(int(u)) for u in used))
    return tm[essg(job)].astype(np.int64), info


def flink(job: Job, mode: str = "pack", slots: int = 0) -> tuple[np.ndarray, dict[str, Any]]:
    """FLINK-PACK / FLINK-SPREAD (spec 2.4): the node of every task (all -1 on FAIL-SLOTS) and facts."""
    if mode not in ("pack", "spread"):
        raise SkewbenchError(f"flink: mode must be 'pack' or 'spread', got {mode!r}")
    k = flink_slots(job.capacity, slots)
    return _flink_result(job, k, flink_assign(k, int(job.tasks.max()), mode))


def flink_fg(job: Job, mode: str = "pack") -> tuple[np.ndarray, dict[str, Any]]:
    """FLINK-FG (spec 2.4, A-F3): slots sized by the slot-sharing group's profile D, the largest ESSG."""
    if mode not in ("pack", "spread"):
        raise SkewbenchError(f"flink-fg: mode must be 'pack' or 'spread', got {mode!r}")
    S = int(job.tasks.max())
    D = float(essg_demand(job).max())
    k = flink_fg_slots(job.capacity, D)
    tm = flink_assign(k, S, mode, (D, job.capacity))
    node, info = _flink_result(job, k, tm)
    info["profile_demand"] = D
    return node, info


# ---------------------------------------------------------------------------------------------- 2.5 K8S
#: relative slack of the millicore roundings: absorbs float noise (0.1 * 3 = 0.30000000000000004)
_MILLI_EPS = 1e-12


def request_millicores(x: Any) -> np.ndarray:
    """A pod's CPU request: a cost in percent of one core rounded up to whole millicores, ``ceil(10 x)``."""
    v = 10.0 * np.asarray(x, dtype=np.float64)
    return np.ceil(v * (1.0 - _MILLI_EPS)).astype(np.int64)


def allocatable_millicores(x: Any) -> np.ndarray:
    """A node's allocatable CPU: a capacity in percent of one core rounded down, ``floor(10 mu)``."""
    v = 10.0 * np.asarray(x, dtype=np.float64)
    return np.floor(v * (1.0 + _MILLI_EPS)).astype(np.int64)


def pod_order(job: Job, order: str, rng: np.random.Generator | None = None) -> np.ndarray:
    """The task of every queue position (A-K1): contiguous, interleaved or random (needs ``rng``)."""
    if order == "contiguous":
        return np.arange(job.m, dtype=np.int64)
    if order == "interleaved":  # round j takes task j of every group that has one, groups in index order
        return np.lexsort((job.group_of, essg(job))).astype(np.int64)
    if order == "random":
        if rng is None:
            raise SkewbenchError("k8s: the random pod order needs a generator")
        return rng.permutation(job.m).astype(np.int64)
    raise SkewbenchError(f"k8s: order must be contiguous, interleaved or random, got {order!r}")


def k8s(job: Job, strategy: str = "least", order: str = "contiguous", seed: int = 0,
        max_pods: int = 0) -> tuple[np.ndarray, dict[str, Any]]:
    """K8S-LEAST / K8S-MOST (spec 2.5): one pod per task, Pending pods left unplaced (-1)."""
    if strategy not in ("least", "most"):
        raise SkewbenchError(f"k8s: strategy must be 'least' or 'most', got {strategy!r}")
    rng = np.random.default_rng(seed)
    u = rng.random(job.m)
    queue = pod_order(job, order, rng)
    A = allocatable_millicores(job.capacity)
    req = request_millicores(job.costs)
    score_req = np.where(req > 0, req, DEFAULT_MILLI_CPU)
    A1 = np.maximum(A, 1)
    R = np.zeros(job.K, dtype=np.int64)  # requested
    Z = np.zeros(job.K, dtype=np.int64)  # non-zero requested (scoring)
    cnt = np.zeros(job.K, dtype=np.int64)
    node = np.full(job.m, -1, dtype=np.int64)
    for i, t in enumerate(queue.tolist()):
        r = int(req[t])
        feasible = r <= A - R
        if max_pods:
            feasible &= cnt < max_pods
        if not feasible.any():
            continue  # Pending
        q = Z + int(score_req[t])
        if strategy == "least":
            s = np.where(q <= A, (A - q) * MAX_NODE_SCORE // A1, 0)
        else:
            s = np.minimum(q, A) * MAX_NODE_SCORE // A1
        s = np.where(A > 0, s, 0)
        s = np.where(feasible, s, -1)
        top = np.flatnonzero(s == s.max())
        k = int(top[int(math.floor(u[i] * top.size))])
        node[t] = k
        R[k] += r
        Z[k] += int(score_req[t])
        cnt[k] += 1
    return node, {"order": order}


# ---------------------------------------------------------------------------------------------- 2.6 HERON
def heron_containers(job: Job, containers: int | str = 0) -> int:
    """HERON-RR's C: 0 = ``min(K, ceil(sum P / min mu))`` (A-H1), ``"all"`` = K, or the given number."""
    if containers == "all":
        return job.K
    if containers == 0:
        x = math.fsum(job.costs.tolist()) / float(job.capacity.min())
        c = max(1, math.ceil(x))
        if c > 1 and x <= (c - 1) * (1.0 + TOL):
            c -= 1
        return min(job.K, c)
    if isinstance(containers, (int, np.integer)) and not isinstance(containers, bool) and 1 <= containers:
        if containers > job.K:
            raise SkewbenchError(f"heron-rr: parameter containers = {containers} exceeds the {job.K} nodes of "
                                 f"instance '{job.name}' (allowed: 0, 'all' or an integer in [1, {job.K}])")
        return int(containers)
    raise SkewbenchError(f"heron-rr: parameter containers must be 0, 'all' or an integer >= 1, got {containers!r}")


def heron_rr(job: Job, containers: int | str = 0) -> tuple[np.ndarray, dict[str, Any]]:
    """HERON-RR (spec 2.6): task i (group after group) on container i mod C; CPU unchecked."""
    C = heron_containers(job, containers)
    return np.arange(job.m, dtype=np.int64) % C, {"containers": C}


def heron_declared(job: Job) -> np.ndarray:
    """The declared per-instance CPU of every group: its largest task cost (p_g on uniform jobs)."""
    out = np.zeros(job.G, dtype=np.float64)
    np.maximum.at(out, job.group_of, job.costs)
    return out


def heron_ffd_order(job: Job) -> np.ndarray:
    """FFD's task order: groups by declared CPU desc, ties group index; tasks in index order."""
    declared = heron_declared(job).tolist()
    groups = sorted(range(job.G), key=lambda g: (-declared[g], g))
    off = job.offset
    return np.concatenate([np.arange(off[g], off[g + 1], dtype=np.int64) for g in groups])


def heron_padding(job: Job, padding: float | str = 0.0) -> np.ndarray:
    """pad_k per node: a number (percent of one core) or ``"literal"`` = max(100, 0.1 mu_k) (A-H2)."""
    if padding == "literal":
        return np.maximum(100.0, 0.1 * job.capacity)
    return np.full(job.K, float(padding), dtype=np.float64)


def heron_ffd(job: Job, padding: float | str = 0.0, max_instances: int = 0) -> tuple[np.ndarray, dict[str, Any]]:
    """HERON-FFD (spec 2.6): first fit over node index in FFD order; stops at the first task that fits nowhere."""
    pad = heron_padding(job, padding)
    free = job.capacity.astype(np.float64).copy()
    slack = _slack(job.capacity)
    cnt = np.zeros(job.K, dtype=np.int64)
    costs = job.costs
    node = np.full(job.m, -1, dtype=np.int64)
    for t in heron_ffd_order(job).tolist():
        ok = costs[t] + pad <= free + slack
        if max_instances:
            ok &= cnt + 1 <= max_instances
        if not ok.any():
            break  # Heron throws: the rest stays unplaced
        k = int(np.argmax(ok))
        node[t] = k
        free[k] -= costs[t]
        cnt[k] += 1
    return node, {"padding": padding if isinstance(padding, str) else float(padding),
                  "max_instances": int(max_instances)}


# ---------------------------------------------------------------------------------------------- strategies
class _Container(Strategy):
    """A thin shell: run the pure function of the subclass, add the outcome code and footprint facts."""

    def _run(self, job: Job, seed: int) -> tuple[np.ndarray, dict[str, Any]]:
        raise NotImplementedError

    def allocate(self, job: Job, seed: int) -> Outcome:
        node, info = self._run(job, seed)
        node = np.asarray(node, dtype=np.int64)
        slots_failed = bool(info.pop("slots_failed", False))
        stats = {"outcome": outcome_code(job, node, slots_failed), **footprint(job, node), **info}
        return Outcome(node, job, stats)


_SLOTS_DOC = "Task slots per TaskManager; 0 means one per core, max(1, floor(mu / 100)) (A-F1)."


class FlinkPack(_Container):
    name = "flink-pack"
    description = ("Flink default slot sharing, load-balance mode NONE: shared slots fill TaskManagers in order "
                   "(CPU unchecked)")
    respects_capacity = False
    defaults: ClassVar[dict[str, Any]] = {"slots": 0}
    param_docs: ClassVar[dict[str, str]] = {"slots": _SLOTS_DOC}
    mode: ClassVar[str] = "pack"

    def _check(self) -> None:
        self._number("slots", lo=0, integer=True)

    def _run(self, job: Job, seed: int) -> tuple[np.ndarray, dict[str, Any]]:
        return flink(job, self.mode, int(self.params["slots"]))


class FlinkSpread(FlinkPack):
    name = "flink-spread"
    description = ("Flink default slot sharing, load-balance mode SLOTS: each shared slot to the least used "
                   "TaskManager (CPU unchecked)")
    mode = "spread"


class FlinkFG(_Container):
    name = "flink-fg"
    description = ("Flink fine-grained resources: every shared slot requests the largest shared slot's CPU, "
                   "each TaskManager offers what fits")
    defaults: ClassVar[dict[str, Any]] = {"mode": "pack"}
    exercise = [{"mode": "spread"}]
    param_docs: ClassVar[dict[str, str]] = {
        "mode": "Slot placement: pack (load-balance mode NONE) or spread (SLOTS, least CPU share first).",
    }

    def _check(self) -> None:
        self._choice("mode", ("pack", "spread"))

    def _run(self, job: Job, seed: int) -> tuple[np.ndarray, dict[str, Any]]:
        return flink_fg(job, self.params["mode"])


class K8sLeast(_Container):
    name = "k8s-least"
    description = "kube-scheduler NodeResourcesFit LeastAllocated on CPU, one pod per task, random tie-break"
    defaults: ClassVar[dict[str, Any]] = {"order": "contiguous", "max_pods": 0}
    exercise = [{"order": "random"}]
    param_docs: ClassVar[dict[str, str]] = {
        "order": "Pod queue order: contiguous (group after group), interleaved (groups in turn) or random.",
        "max_pods": "Most pods per node (the kubelet default is 110); 0 means no limit (A-K5).",
    }
    strategy: ClassVar[str] = "least"

    def _check(self) -> None:
        self._choice("order", ("contiguous", "interleaved", "random"))
        self._number("max_pods", lo=0, integer=True)

    def _run(self, job: Job, seed: int) -> tuple[np.ndarray, dict[str, Any]]:
        return k8s(job, self.strategy, self.params["order"], seed, int(self.params["max_pods"]))


class K8sMost(K8sLeast):
    name = "k8s-most"
    description = "kube-scheduler NodeResourcesFit MostAllocated on CPU (bin packing), one pod per task"
    exercise = []  # K8S-LEAST's set runs the same code
    strategy = "most"


class HeronRR(_Container):
    name = "heron-rr"
    description = "Heron RoundRobinPacking: tasks dealt round robin over C containers (CPU unchecked)"
    respects_capacity = False
    defaults: ClassVar[dict[str, Any]] = {"containers": 0}
    param_docs: ClassVar[dict[str, str]] = {
        "containers": "Containers C: 0 means min(K, ceil(sum P / min mu)) (A-H1), all means K, or a number."}

    def _check(self) -> None:
        c = self.params["containers"]
        if c != "all" and not (isinstance(c, int) and not isinstance(c, bool) and c >= 0):
            raise SkewbenchError(f"{self.name}: parameter containers must be 'all' or an integer in [0, inf], "
                                 f"got {c!r}")

    def _run(self, job: Job, seed: int) -> tuple[np.ndarray, dict[str, Any]]:
        return heron_rr(job, self.params["containers"])


class HeronFFD(_Container):
    name = "heron-ffd"
    description = "Heron FirstFitDecreasingPacking: tasks by CPU descending, each on the first node that fits"
    defaults: ClassVar[dict[str, Any]] = {"padding": 0.0, "max_instances": 0}
    exercise = [{"padding": 10.0, "max_instances": 3}]
    param_docs: ClassVar[dict[str, str]] = {
        "padding": "CPU reserved per node (percent of one core), or literal for Heron's max(100, 0.1 mu) (A-H2).",
        "max_instances": "Most tasks per node; 0 means no limit, Heron's literal setting is 10 (A-H2).",
    }

    def _check(self) -> None:
        if self.params["padding"] != "literal":
            try:
                self._number("padding", lo=0)
            except SkewbenchError as exc:
                raise SkewbenchError(f"{exc} (or 'literal')") from None
        self._number("max_instances", lo=0, integer=True)

    def _run(self, job: Job, seed: int) -> tuple[np.ndarray, dict[str, Any]]:
        return heron_ffd(job, self.params["padding"], int(self.params["max_instances"]))
