"""The allocation family's instances: the paper's instance sets (allocation.spec.md section 4, E1-E8),
job graphs built from a grouping replay, and users' own job graphs (JSON).

Every generator returns a list of validated :class:`~skewbench.allocation.model.Job` s whose
``meta`` holds the parameters that identify the instance (plain JSON values, ``"set"`` first).
Randomised generators are deterministic for a seed (``numpy.random.default_rng``).  Units are
the spec's: processing cost (PC) and capacity in percent of one core, rates in MB/s.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Iterable, Sequence

import numpy as np

from skewbench.allocation.model import Job
from skewbench.errors import SkewbenchError

# ---------------------------------------------------------------------------------------------
# size limits (docs/datasets.md, "Job graphs"): every size a user controls, in a JSON job graph or
# a generator's parameters, is checked against these before anything of that size is allocated.
# The largest generated instances: E4's pipeline, 4 groups x 100 tasks (400 tasks, 30,000 task links;
# `make bench` goes to 300 per group: 1,200 tasks, 270,000 links) on 8 nodes; E6, 25 tasks on 100
# nodes; E5, 2,000 instances of 17 tasks on 8 nodes.

#: tasks of one instance, summed over its groups (METIS's repair holds a tasks x nodes matrix)
MAX_TASKS = 10_000
#: groups of one instance
MAX_GROUPS = 1_000
#: edges of one instance
MAX_EDGES = 10_000
#: task links of one instance, n_i x n_j summed over its edges (TL, METIS and the task-level optimum
#: hold entries per link; measured at this limit, 2 x 1,000 tasks on 1,000 nodes: METIS 0.48 GB and
#: 38 s, TL 0.24 GB and 10 s; at 10^7 links METIS took 3.1 GB and 103 s)
MAX_LINKS = 1_000_000
#: nodes of one instance (a node entry's count included)
MAX_NODES = 10_000
#: tasks x nodes of one instance (METIS's repair holds a float per task and node: 80 MB here; E6's
#: largest is 25 tasks x 100 nodes, E4's 400 x 8)
MAX_TASK_NODES = 10_000_000
#: instances of one dataset
MAX_INSTANCES = 10_000
#: tasks (rows) and nodes of one dataset, over all its instances
MAX_DATASET_TASKS = 10_000_000
MAX_DATASET_NODES = 1_000_000
#: a JSON job-graph file: its size and how deep its brackets nest
MAX_FILE_BYTES = 16 << 20
MAX_DEPTH = 64


def check_sizes(name: str, tasks: Sequence[int], edges: Sequence[tuple[int, int]], nodes: int) -> None:
    """Refuse an instance over the size limits (its groups' task counts, its edges as (src, dst)
    group pairs, its node count), from numbers only: nothing of those sizes is allocated."""
    where = f"instance '{name}'"
    if len(tasks) > MAX_GROUPS:
        raise SkewbenchError(f"{where}: {len(tasks):,} groups; at most {MAX_GROUPS:,}")
    m = sum(int(n) for n in tasks)
    if m > MAX_TASKS:
        raise SkewbenchError(f"{where}: {m:,} tasks; at most {MAX_TASKS:,} per instance")
    if len(edges) > MAX_EDGES:
        raise SkewbenchError(f"{where}: {len(edges):,} edges; at most {MAX_EDGES:,}")
    links = sum(int(tasks[i]) * int(tasks[j]) for i, j in edges)
    if links > MAX_LINKS:
        raise SkewbenchError(f"{where}: {links:,} task links (n_i x n_j over the edges); at most {MAX_LINKS:,}")
    if nodes > MAX_NODES:
        raise SkewbenchError(f"{where}: {nodes:,} nodes; at most {MAX_NODES:,}")
    if m * nodes > MAX_TASK_NODES:
        raise SkewbenchError(f"{where}: {m:,} tasks x {nodes:,} nodes = {m * nodes:,}; at most {MAX_TASK_NODES:,}")


def check_dataset_sizes(jobs: Sequence[Job]) -> None:
    """Refuse a dataset of more instances, tasks or nodes than the limits (numbers only)."""
    if len(jobs) > MAX_INSTANCES:
        raise SkewbenchError(f"{len(jobs):,} instances; a dataset holds at most {MAX_INSTANCES:,}")
    m = sum(j.m for j in jobs)
    if m > MAX_DATASET_TASKS:
        raise SkewbenchError(f"{m:,} tasks in all; a dataset holds at most {MAX_DATASET_TASKS:,}")
    k = sum(j.K for j in jobs)
    if k > MAX_DATASET_NODES:
        raise SkewbenchError(f"{k:,} nodes in all; a dataset holds at most {MAX_DATASET_NODES:,}")


# ---------------------------------------------------------------------------------------------
# helpers


def _job(name: str, groups: Sequence[str], tasks: Sequence[int], cost: Sequence[float],
         edges: Sequence[tuple[int, int, float]], capacity: Sequence[float], meta: dict[str, Any],
         **extra: Any) -> Job:
    check_sizes(name, tasks, [(e[0], e[1]) for e in edges], len(capacity))
    src = [e[0] for e in edges]
    dst = [e[1] for e in edges]
    rate = [float(e[2]) for e in edges]
    return Job(name=name, groups=list(groups), tasks=np.asarray(tasks, dtype=np.int64),
               cost=np.asarray(cost, dtype=np.float64), src=np.asarray(src, dtype=np.int64),
               dst=np.asarray(dst, dtype=np.int64), rate=np.asarray(rate, dtype=np.float64),
               capacity=np.asarray(capacity, dtype=np.float64), meta=meta, **extra).validate()


def _chain(n: int) -> list[tuple[int, int]]:
    return [(g, g + 1) for g in range(n - 1)]


def _positive_int(value: Any, what: str, minimum: int = 1, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < minimum:
        raise SkewbenchError(f"{what} must be an integer >= {minimum}, got {value!r}")
    if maximum is not None and int(value) > maximum:
        raise SkewbenchError(f"{what} must be at most {maximum:,}, got {int(value):,}")
    return int(value)


def _positive(value: Any, what: str, *, zero: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SkewbenchError(f"{what} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(v) or v < 0 or (v == 0 and not zero):
        raise SkewbenchError(f"{what} must be a finite number {'>=' if zero else '>'} 0, got {value!r}")
    return v


def _plain(x: float) -> float | int:
    """A float that is a whole number as an int (for names and meta), else the float."""
    x = float(x)
    return int(x) if x.is_integer() else x


# ---------------------------------------------------------------------------------------------
# E1-E4: the micro-benchmarks


def example2() -> list[Job]:
    """E1, the running example (Figure 2, Examples 1-2): v1..v4 with (10, 20, 10, 10) tasks, P = 40
    each, chain C = (100, 90, 10) MB/s, 4 nodes with 40% free."""
    return [_job("e1-example2", ["v1", "v2", "v3", "v4"], [10, 20, 10, 10], [40.0] * 4,
                 [(0, 1, 100.0), (1, 2, 90.0), (2, 3, 10.0)], [40.0] * 4, {"set": "e1"})]


#: E2's default sweep, f = 2.0, 1.9, ..., 1.0
PRIORITY_FS = tuple(round(2.0 - 0.1 * i, 1) for i in range(11))


def priority(fs: Iterable[float] = PRIORITY_FS) -> list[Job]:
    """E2, the priority policy (Figure 4a, A21): pipeline v1 -> v2 -> v3, n = (4, 4, 10),
    P = (40, 40, 100), 3 nodes of 100; c1 = 10 MB/s, c2 = c1 f.  One job per f."""
    jobs = []
    for f in fs:
        fv = _positive(f, "priority: f")
        jobs.append(_job(f"e2-f{fv:g}", ["v1", "v2", "v3"], [4, 4, 10], [40.0, 40.0, 100.0],
                         [(0, 1, 10.0), (1, 2, 10.0 * fv)], [100.0] * 3, {"set": "e2", "f": _plain(fv)}))
    return jobs


def asymmetry(fs: Iterable[float] = range(1, 8)) -> list[Job]:
    """E3, task-count asymmetry (Figure 4b, A22): one edge v1 -> v2 of 100 MB/s, n1 = 10,
    n2 = 10 f, P1 = P2 = 200, 6 nodes with 80% free.  One job per f (10 f must be whole)."""
    jobs = []
    for f in fs:
        fv = _positive(f, "asymmetry: f")
        if 10 * fv > MAX_TASKS:
            raise SkewbenchError(f"asymmetry: 10 f = {10 * fv:g} tasks; at most {MAX_TASKS:,} per instance")
        n2 = round(10 * fv)
        if abs(10 * fv - n2) > 1e-9:
            raise SkewbenchError(f"asymmetry: 10 f must be a whole number of tasks, got f = {f!r}")
        jobs.append(_job(f"e3-f{fv:g}", ["v1", "v2"], [10, n2], [200.0, 200.0], [(0, 1, 100.0)], [80.0] * 6,
                         {"set": "e3", "f": _plain(fv)}))
    return jobs


def pipeline(tasks_per_group: int = 100, groups: int = 4, nodes: int = 8, capacity: float = 100.0,
             noise: float = 0.0, seed: int = 0) -> list[Job]:
    """E4, the throughput pipeline (Figure 5, A20): ``groups`` groups of ``tasks_per_group`` tasks in a
    chain, P_g = 100, C_e = 100 (1 + U[-noise, noise]) (noise = 0.05 is the spec's "roughly equal"
    variant; noise = 0 draws nothing), ``nodes`` nodes of ``capacity``."""
    n = _positive_int(tasks_per_group, "pipeline: tasks_per_group", 1, MAX_TASKS)
    G = _positive_int(groups, "pipeline: groups", 2, MAX_GROUPS)
    K = _positive_int(nodes, "pipeline: nodes", 1, MAX_NODES)
    if n * G > MAX_TASKS:
        raise SkewbenchError(f"pipeline: tasks_per_group x groups = {n * G:,} tasks; at most {MAX_TASKS:,} per instance")
    mu = _positive(capacity, "pipeline: capacity")
    eps = _positive(noise, "pipeline: noise", zero=True)
    if eps >= 1:
        raise SkewbenchError(f"pipeline: noise must be < 1, got {noise!r}")
    rates = np.full(G - 1, 100.0)
    if eps > 0:
        rates = 100.0 * (1.0 + np.random.default_rng(int(seed)).uniform(-eps, eps, G - 1))
    name = f"e4-n{n}" + (f"-noise{eps:g}-s{int(seed)}" if eps > 0 else "")
    meta = {"set": "e4", "tasks_per_group": n, "groups": G, "nodes": K, "capacity": _plain(mu),
            "noise": _plain(eps), "seed": int(seed)}
    return [_job(name, [f"v{g + 1}" for g in range(G)], [n] * G, [100.0] * G,
                 [(i, j, float(r)) for (i, j), r in zip(_chain(G), rates)], [mu] * K, meta)]


# ---------------------------------------------------------------------------------------------
# E5: random graphs

#: the fan-out law of GEN line 4: P(f = 1, 2, 3)
FANOUT_P = (0.70, 0.25, 0.05)


def _gen(rng: np.random.Generator, m: int, total_pc: float, eta: float
         ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]], np.ndarray, list[int]]:
    """GEN of E5 (A18): task counts, costs, edges (sorted by (src, dst)), rates, and the fan-outs
    drawn at line 4 (after the cap; before the connectivity repair adds edges)."""
    G = int(rng.integers(3, min(7, m) + 1))                                       # 1
    cuts = np.sort(rng.choice(np.arange(1, m), size=G - 1, replace=False))        # 2
    n = np.diff(np.concatenate([[0], cuts, [m]])).astype(np.int64)
    u = rng.uniform(1.0 - eta, 1.0 + eta, G)                                      # 3
    w = n * u
    cost = total_pc * w / w.sum()
    edges: set[tuple[int, int]] = set()
    fanout = []
    for g in range(G - 1):                                                        # 4
        f = min(int(rng.choice(3, p=FANOUT_P)) + 1, G - 1 - g)
        fanout.append(f)
        for h in rng.choice(np.arange(g + 1, G), size=f, replace=False):
            edges.add((g, int(h)))
    for g in range(1, G):                                                         # 5
        if not any(j == g for _, j in edges):
            edges.add((int(rng.integers(0, g)), g))
    ordered = sorted(edges)
    rate = rng.uniform(5.0, 20.0, len(ordered))                                   # 6
    return n, cost, ordered, rate, fanout


def random_graph(index: int, tasks: int = 17, total_pc: float = 500.0, eta: float = 0.5, nodes: int = 8,
                 capacity: float = 100.0, seed: int = 0) -> Job:
    """Instance ``index`` of :func:`random_graphs` on its own (its generator is
    ``default_rng([seed, index])``)."""
    m = _positive_int(tasks, "random_graphs: tasks", 3, MAX_TASKS)
    pc = _positive(total_pc, "random_graphs: total_pc")
    e = _positive(eta, "random_graphs: eta", zero=True)
    if e >= 1:
        raise SkewbenchError(f"random_graphs: eta must be < 1 (costs must stay > 0), got {eta!r}")
    K = _positive_int(nodes, "random_graphs: nodes", 1, MAX_NODES)
    mu = _positive(capacity, "random_graphs: capacity")
    i = _positive_int(index, "random_graphs: index", 0)
    n, cost, edges, rate, _ = _gen(np.random.default_rng([int(seed), i]), m, pc, e)
    return _job(f"e5-{i:04d}", [f"v{g}" for g in range(len(n))], n, cost,
                [(a, b, float(r)) for (a, b), r in zip(edges, rate)], [mu] * K,
                {"set": "e5", "index": i, "eta": _plain(e)})


def random_graphs(count: int = 2000, tasks: int = 17, total_pc: float = 500.0, eta: float = 0.5, nodes: int = 8,
                  capacity: float = 100.0, seed: int = 0) -> list[Job]:
    """E5 (Section 7.3, A18): ``count`` random DAGs by the spec's GEN (17 tasks, 3-7 groups, total PC
    500, fan-out 1/2/3 with p = 0.70/0.25/0.05, connectivity repair, C_e ~ U[5, 20] MB/s) on
    ``nodes`` identical nodes.  Instance i uses ``default_rng([seed, i])``, so any subset can be
    regenerated alone (:func:`random_graph`).  With fewer than 7 tasks, G is drawn in [3, tasks]."""
    c = _positive_int(count, "random_graphs: count", 0, MAX_INSTANCES)
    m = _positive_int(tasks, "random_graphs: tasks", 3, MAX_TASKS)
    K = _positive_int(nodes, "random_graphs: nodes", 1, MAX_NODES)
    if c * m > MAX_DATASET_TASKS or c * K > MAX_DATASET_NODES:
        raise SkewbenchError(f"random_graphs: count x tasks = {c * m:,} tasks and count x nodes = {c * K:,} nodes; a "
                             f"dataset holds at most {MAX_DATASET_TASKS:,} tasks and {MAX_DATASET_NODES:,} nodes")
    return [random_graph(i, tasks, total_pc, eta, nodes, capacity, seed) for i in range(c)]


# ---------------------------------------------------------------------------------------------
# E6-E8: the real-workload proxies (placeholder annotations, A23)

#: (groups, tasks, P, edges (src, dst, C), sweep step); spec E6, placeholder values
TOPOLOGIES: dict[str, tuple[list[str], list[int], list[float], list[tuple[int, int, float]], float]] = {
    "twitter": (["SRC", "CNT", "RNK", "MRG"], [4, 12, 6, 1], [80.0, 360.0, 150.0, 20.0],
                [(0, 1, 90.0), (1, 2, 45.0), (2, 3, 8.0)], 25.0),
    "stock": (["TRD", "QTE", "VWAP", "JOIN", "FLT", "OUT"], [2, 2, 8, 8, 4, 1],
              [40.0, 60.0, 200.0, 240.0, 80.0, 10.0],
              [(0, 2, 150.0), (2, 3, 150.0), (1, 3, 300.0), (3, 4, 170.0), (4, 5, 20.0)], 50.0),
}


def capacity_sweep(topology: str, nodes: int = 100) -> list[float]:
    """E6's default sweep of mu: from the smallest multiple of 25 at which the largest task fits and
    sum P <= K mu, in the topology's steps (25 twitter, 50 stock), up to the first value >= sum P
    (everything fits on one node)."""
    _, tasks, cost, _, step = TOPOLOGIES[topology]
    K = _positive_int(nodes, f"{topology}: nodes", 1, MAX_NODES)
    largest = max(p / n for p, n in zip(cost, tasks))
    total = sum(cost)
    first = 25.0 * math.ceil(max(largest, total / K) / 25.0 - 1e-12)
    out = [first]
    while out[-1] < total:
        out.append(out[-1] + step)
    return out


def _topology(topology: str, capacities: Iterable[float] | None, nodes: int) -> list[Job]:
    groups, tasks, cost, edges, _ = TOPOLOGIES[topology]
    K = _positive_int(nodes, f"{topology}: nodes", 1, MAX_NODES)
    mus = capacity_sweep(topology, K) if capacities is None else list(capacities)
    if len(mus) > MAX_INSTANCES or len(mus) * K > MAX_DATASET_NODES:
        raise SkewbenchError(f"{topology}: {len(mus):,} capacities x {K:,} nodes; a dataset holds at most "
                             f"{MAX_INSTANCES:,} instances and {MAX_DATASET_NODES:,} nodes")
    jobs = []
    for mu in mus:
        v = _positive(mu, f"{topology}: capacity")
        jobs.append(_job(f"e6-{topology}-mu{v:g}", groups, tasks, cost, edges, [v] * K,
                         {"set": f"e6-{topology}", "mu": _plain(v), "nodes": K, "placeholder": True}))
    return jobs


def twitter(capacities: Iterable[float] | None = None, nodes: int = 100) -> list[Job]:
    """E6, Twitter top-k trending topics (placeholder annotations, A23): chain SRC -> CNT -> RNK -> MRG,
    tasks (4, 12, 6, 1), P = (80, 360, 150, 20), C = (90, 45, 8) MB/s (143 in all); one job per
    mu of ``capacities`` (default :func:`capacity_sweep`, steps of 25) on ``nodes`` nodes."""
    return _topology("twitter", capacities, nodes)


def stock(capacities: Iterable[float] | None = None, nodes: int = 100) -> list[Job]:
    """E6, stock bargain detection (placeholder annotations, A23): TRD -> VWAP -> JOIN <- QTE,
    JOIN -> FLT -> OUT, tasks (2, 2, 8, 8, 4, 1), P = (40, 60, 200, 240, 80, 10),
    C = (150, 150, 300, 170, 20) MB/s (790 in all); one job per mu (default sweep in steps of 50)."""
    return _topology("stock", capacities, nodes)


#: E8's recommended trace in minutes: (start, end, r); the first piece is the ignored warm-up
_SCHEDULE_MIN = ((0, 2, 1.0), (2, 5, 1.0), (5, 9, 0.5), (9, 13, 0.75), (13, 17, 0.3), (17, 21, 1.0),
                 (21, 25, 0.6))
WARMUP_S = 120.0


def rate_schedule() -> list[tuple[float, float, float]]:
    """E8's piecewise-constant input rate as ``[(start_s, end_s, r), ...]`` (r: fraction of the
    peak): 0-2 min warm-up (run at the peak, ignored), 2-5 min at 1.0, then 0.5, 0.75, 0.3, 1.0
    and 0.6 for four minutes each (25 minutes in all)."""
    return [(60.0 * a, 60.0 * b, float(r)) for a, b, r in _SCHEDULE_MIN]


def twitter_e8(mu: float = 400.0, nodes: int = 100) -> list[Job]:
    """E8's base job (one job, in a list like every generator): the Twitter topology at the peak rate
    (r = 1) with mu = 400 on every node; P_g(r) = r P_g and C_e(r) = r C_e.  ``meta["schedule"]``
    holds :func:`rate_schedule` (as lists), ``meta["warmup_s"]`` the ignored warm-up."""
    job = _topology("twitter", [mu], nodes)[0]
    job.name = f"e8-twitter-mu{float(job.capacity[0]):g}"
    job.meta = {"set": "e8", "mu": _plain(float(job.capacity[0])), "nodes": job.K, "placeholder": True,
                "warmup_s": WARMUP_S, "schedule": [list(p) for p in rate_schedule()]}
    return [job]


# ---------------------------------------------------------------------------------------------
# job graphs from a grouping replay

#: the share of the total capacity the default node count gives to the job's total PC
TARGET_UTILISATION = 0.7
#: when the tuple cost is derived, the busiest worker costs this share of one node's capacity
BUSIEST_WORKER_SHARE = 0.8
#: a worker that received no tuple still costs this much (percent of one core): costs must be > 0
IDLE_PC = 1e-3


def derived_tuple_cost_ms(max_worker_tuples: float, *, duration_s: float = 1.0, capacity: float = 100.0) -> float:
    """The tuple cost (ms) at which a worker with ``max_worker_tuples`` tuples costs
    :data:`BUSIEST_WORKER_SHARE` of a node of ``capacity``."""
    if max_worker_tuples <= 0:
        raise SkewbenchError("grouping replay: no worker received any tuple; give tuple_cost_ms or worker_cost")
    # PC (%) = tuples x cost_ms / duration_s / 10  (1 ms of work per second = 0.1% of one core)
    return BUSIEST_WORKER_SHARE * capacity * 10.0 * duration_s / float(max_worker_tuples)


def from_grouping(worker_tuples: Sequence[int], source_worker_tuples: Sequence[int], sources: int, workers: int, *,
                  name: str, duration_s: float = 1.0, tuple_cost_ms: float | None = None,
                  tuple_bytes: float = 100.0, source_pc: float = 10.0, nodes: int | None = None,
                  capacity: float = 100.0, worker_cost: Sequence[float] | None = None) -> Job:
    """A job graph from a grouping strategy's output: groups "sources" (s tasks) -> "workers" (n tasks),
    with measured per-task costs and per-link rates (spec 2.7.3).

    A worker's PC is its tuples x ``tuple_cost_ms`` / ``duration_s`` in percent of one core (1 ms of
    work per second = 0.1%; a worker without tuples costs :data:`IDLE_PC`), or ``worker_cost[j]``
    when given; each source costs ``source_pc``.  Link (i, j) carries source i's tuples to worker j x
    ``tuple_bytes`` / ``duration_s`` / 1e6 MB/s.  P_g and C_e are the sums.

    Defaults: ``tuple_cost_ms=None`` derives the cost so that the busiest worker costs 80% of a node
    (:func:`derived_tuple_cost_ms`), so every task fits; ``nodes=None`` gives enough nodes of
    ``capacity`` that the total PC is about 70% of the total capacity (``ceil(total / (0.7 mu))``).
    ``source_worker_tuples`` is the flat, row-major (sources x workers) list of the results table.
    """
    s = _positive_int(sources, "grouping replay: sources")
    n = _positive_int(workers, "grouping replay: workers")
    wt = np.asarray(list(worker_tuples), dtype=np.float64)
    swt = np.asarray(list(source_worker_tuples), dtype=np.float64)
    where = f"grouping replay '{name}'"
    if wt.shape != (n,):
        raise SkewbenchError(f"{where}: worker_tuples has {wt.size} entries for {n} workers")
    if swt.shape != (s * n,):
        raise SkewbenchError(f"{where}: source_worker_tuples has {swt.size} entries; expected sources x workers = "
                             f"{s} x {n} = {s * n}")
    if not (np.all(np.isfinite(wt)) and np.all(wt >= 0) and np.all(np.isfinite(swt)) and np.all(swt >= 0)):
        raise SkewbenchError(f"{where}: tuple counts must be finite numbers >= 0")
    mat = swt.reshape(s, n)
    if not np.allclose(mat.sum(axis=0), wt, rtol=1e-9, atol=0.5):
        raise SkewbenchError(f"{where}: source_worker_tuples summed over sources differ from worker_tuples")
    dur = _positive(duration_s, f"{where}: duration_s")
    mu = _positive(capacity, f"{where}: capacity")
    spc = _positive(source_pc, f"{where}: source_pc")
    tb = _positive(tuple_bytes, f"{where}: tuple_bytes", zero=True)
    if worker_cost is not None:
        wc = np.asarray(list(worker_cost), dtype=np.float64)
        if wc.shape != (n,) or not np.all(np.isfinite(wc)) or np.any(wc <= 0):
            raise SkewbenchError(f"{where}: worker_cost needs one finite cost > 0 per worker ({n})")
        cost_ms = None if tuple_cost_ms is None else _positive(tuple_cost_ms, f"{where}: tuple_cost_ms")
    else:
        cost_ms = (derived_tuple_cost_ms(float(wt.max()), duration_s=dur, capacity=mu) if tuple_cost_ms is None
                   else _positive(tuple_cost_ms, f"{where}: tuple_cost_ms"))
        wc = np.maximum(wt * cost_ms / dur / 10.0, IDLE_PC)
    links = mat * tb / dur / 1e6
    task_cost = np.concatenate([np.full(s, spc), wc])
    total = float(task_cost.sum())
    if nodes is None:
        need = total / (TARGET_UTILISATION * mu)
        if not need <= MAX_NODES:
            raise SkewbenchError(f"{where}: the total cost {total:g} needs {need:.3g} nodes of capacity {mu:g}; at "
                                 f"most {MAX_NODES:,} (give a larger capacity)")
        K = max(1, math.ceil(need - 1e-9))
    else:
        K = _positive_int(nodes, f"{where}: nodes", 1, MAX_NODES)
    meta = {"set": "grouping", "sources": s, "workers": n, "duration_s": _plain(dur),
            "tuple_cost_ms": cost_ms, "tuple_bytes": _plain(tb), "source_pc": _plain(spc),
            "measured_worker_cost": worker_cost is not None, "nodes": K, "capacity": _plain(mu)}
    return _job(name, ["sources", "workers"], [s, n], [s * spc, float(wc.sum())], [(0, 1, float(links.sum()))],
                [mu] * K, meta, task_cost=task_cost, link_rate={0: links})


_GROUPING_COLUMNS = ("strategy", "workers", "sources", "seed", "worker_tuples", "source_worker_tuples", "dataset")
_GROUPING_OPTIONS = ("duration_s", "tuple_cost_ms", "tuple_bytes", "source_pc", "nodes", "capacity")


def from_grouping_results(results_dir: str | os.PathLike | Sequence[str | os.PathLike],
                          strategies: Iterable[str] | None = None, **kw: Any) -> list[Job]:
    """One :func:`from_grouping` job per summary row of grouping results directories, named
    ``"<dataset>/<strategy> n=<workers> s=<sources> seed=<seed>"``; ``strategies`` keeps only
    those rows.  ``kw``: :func:`from_grouping`'s options.  When ``tuple_cost_ms`` is not given, one
    cost is derived per dataset (the busiest worker over all its rows costs 80% of a node), so that
    the same stream gives every strategy and worker count the same total work."""
    from skewbench.results import load_results

    bad = sorted(set(kw) - set(_GROUPING_OPTIONS))
    if bad:
        raise SkewbenchError(f"grouping replay: unknown option {', '.join(bad)}; options: "
                             f"{', '.join(_GROUPING_OPTIONS)}")
    keep = None if strategies is None else [str(x) for x in strategies]
    rows: list[dict[str, Any]] = []
    for path, manifest, summary, _ in load_results(results_dir):
        missing = [c for c in _GROUPING_COLUMNS if c not in summary.column_names]
        if missing:
            raise SkewbenchError(f"{path}: not grouping results (summary lacks {', '.join(missing)})")
        ds_name = (manifest.get("dataset") or {}).get("name") if isinstance(manifest.get("dataset"), dict) else None
        for r in summary.select(list(_GROUPING_COLUMNS)).to_pylist():
            r["dataset"] = r["dataset"] or ds_name or path.name
            if keep is None or r["strategy"] in keep:
                rows.append(r)
    if keep is not None:
        absent = [x for x in keep if not any(r["strategy"] == x for r in rows)]
        if absent:
            raise SkewbenchError(f"grouping replay: no results for strategy {', '.join(absent)}")
    if not rows:
        raise SkewbenchError("grouping replay: the results hold no summary row")
    costs: dict[str, float] = {}
    if kw.get("tuple_cost_ms") is None:
        dur = _positive(kw.get("duration_s", 1.0), "grouping replay: duration_s")
        mu = _positive(kw.get("capacity", 100.0), "grouping replay: capacity")
        for ds in dict.fromkeys(r["dataset"] for r in rows):
            busiest = max(max(r["worker_tuples"] or [0]) for r in rows if r["dataset"] == ds)
            costs[ds] = derived_tuple_cost_ms(float(busiest), duration_s=dur, capacity=mu)
    jobs = []
    for r in rows:
        opts = dict(kw)
        if r["dataset"] in costs:
            opts["tuple_cost_ms"] = costs[r["dataset"]]
        name = f"{r['dataset']}/{r['strategy']} n={r['workers']} s={r['sources']} seed={r['seed']}"
        job = from_grouping(r["worker_tuples"] or [], r["source_worker_tuples"] or [], r["sources"], r["workers"],
                            name=name, **opts)
        job.meta.update({"strategy": r["strategy"], "seed": r["seed"], "dataset": r["dataset"]})
        jobs.append(job)
    return jobs


# ---------------------------------------------------------------------------------------------
# users' job graphs (JSON)

_INSTANCE_FIELDS = ("name", "groups", "edges", "nodes", "meta")
_GROUP_FIELDS = ("name", "tasks", "cost", "task_costs")
_EDGE_FIELDS = ("from", "to", "rate")
_NODE_FIELDS = ("capacity", "count")


class _Bad(Exception):
    def __init__(self, path: str, msg: str) -> None:
        super().__init__(f"{path}: {msg}" if path else msg)


def _at(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _shown(v: Any) -> str:
    try:
        text = json.dumps(v, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _object(v: Any, path: str, fields: Sequence[str], required: Sequence[str]) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise _Bad(path, f"must be an object, got {_shown(v)}")
    for k in v:
        if k not in fields:
            raise _Bad(path, f"unknown field '{k}'; fields: {', '.join(fields)}")
    for k in required:
        if k not in v:
            raise _Bad(path, f"missing field '{k}'")
    return v


def _list(v: Any, path: str, *, nonempty: bool = True) -> list[Any]:
    if not isinstance(v, list):
        raise _Bad(path, f"must be a list, got {_shown(v)}")
    if nonempty and not v:
        raise _Bad(path, "must not be empty")
    return v


def _num(v: Any, path: str, *, zero: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Bad(path, f"must be a number, got {_shown(v)}")
    x = float(v)
    if not math.isfinite(x):
        raise _Bad(path, f"must be a finite number, got {_shown(v)}")
    if x < 0 or (x == 0 and not zero):
        raise _Bad(path, f"must be a number {'>=' if zero else '>'} 0, got {_shown(v)}")
    return x


def _int(v: Any, path: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise _Bad(path, f"must be an integer >= 1, got {_shown(v)}")
    return int(v)


def _name(v: Any, path: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise _Bad(path, f"must be a non-empty string, got {_shown(v)}")
    return v


class Totals:
    """Instances, tasks and nodes parsed so far into one dataset (over several files)."""

    def __init__(self) -> None:
        self.instances = self.tasks = self.nodes = 0


def _instance(obj: Any, path: str, index: int, totals: Totals) -> Job:
    d = _object(obj, path, _INSTANCE_FIELDS, ("groups", "nodes"))
    name = _name(d["name"], _at(path, "name")) if "name" in d else f"instance-{index}"
    names: list[str] = []
    tasks: list[int] = []
    cost: list[float] = []
    per_task: list[np.ndarray | None] = []
    seen: dict[str, int] = {}
    gpath = _at(path, "groups")
    glist = _list(d["groups"], gpath)
    if len(glist) > MAX_GROUPS:
        raise _Bad(gpath, f"{len(glist):,} groups; at most {MAX_GROUPS:,} per instance")
    m = 0
    for g, item in enumerate(glist):
        p = _at(gpath, g)
        gd = _object(item, p, _GROUP_FIELDS, ("name", "tasks"))
        gname = _name(gd["name"], _at(p, "name"))
        if gname in seen:
            raise _Bad(_at(p, "name"), f"duplicate group '{gname}' (also {_at(gpath, seen[gname])})")
        seen[gname] = g
        n = _int(gd["tasks"], _at(p, "tasks"))
        m += n
        if m > MAX_TASKS:
            raise _Bad(_at(p, "tasks"), f"{n:,} tasks" + (f" make the instance's {m:,}" if m > n else "")
                       + f"; at most {MAX_TASKS:,} per instance")
        if totals.tasks + m > MAX_DATASET_TASKS:
            raise _Bad(_at(p, "tasks"), f"the dataset's tasks reach {totals.tasks + m:,} here; at most "
                       f"{MAX_DATASET_TASKS:,}")
        c = _num(gd["cost"], _at(p, "cost")) if "cost" in gd else None
        tc = None
        if "task_costs" in gd:
            tp = _at(p, "task_costs")
            vals = _list(gd["task_costs"], tp)
            if len(vals) != n:
                raise _Bad(tp, f"needs one cost per task ({n}), got {len(vals)}")
            tc = np.array([_num(x, _at(tp, t)) for t, x in enumerate(vals)])
            total = float(tc.sum())
            if c is None:
                c = total
            elif abs(total - c) > 1e-9 * max(1.0, abs(c)):
                raise _Bad(tp, f"sum to {total:g} but cost is {c:g}; they must agree (or omit cost)")
        if c is None:
            raise _Bad(p, "missing field 'cost' (or give task_costs)")
        names.append(gname)
        tasks.append(n)
        cost.append(c)
        per_task.append(tc)
    edges: list[tuple[int, int, float]] = []
    pairs: dict[tuple[int, int], int] = {}
    epath = _at(path, "edges")
    elist = _list(d.get("edges", []), epath, nonempty=False)
    if len(elist) > MAX_EDGES:
        raise _Bad(epath, f"{len(elist):,} edges; at most {MAX_EDGES:,} per instance")
    links = 0
    for e, item in enumerate(elist):
        p = _at(epath, e)
        ed = _object(item, p, _EDGE_FIELDS, _EDGE_FIELDS)
        ends = []
        for k in ("from", "to"):
            v = ed[k]
            if not isinstance(v, str):
                raise _Bad(_at(p, k), f"must be a group name, got {_shown(v)}")
            if v not in seen:
                raise _Bad(_at(p, k), f"unknown group '{v}' (groups: {', '.join(names)})")
            ends.append(seen[v])
        i, j = ends
        if i == j:
            raise _Bad(p, f"self-loop: group '{names[i]}' cannot send to itself")
        if (i, j) in pairs:
            raise _Bad(p, f"duplicate edge {names[i]} -> {names[j]} (also {_at(epath, pairs[(i, j)])})")
        pairs[(i, j)] = e
        links += tasks[i] * tasks[j]
        if links > MAX_LINKS:
            raise _Bad(p, f"the instance's task links (n_i x n_j over its edges) reach {links:,} here; at most "
                       f"{MAX_LINKS:,}")
        edges.append((i, j, _num(ed["rate"], _at(p, "rate"), zero=True)))
    capacity: list[float] = []
    npath = _at(path, "nodes")
    nlist = _list(d["nodes"], npath)
    if len(nlist) > MAX_NODES:
        raise _Bad(npath, f"{len(nlist):,} node entries; at most {MAX_NODES:,} nodes per instance")
    for k, item in enumerate(nlist):
        p = _at(npath, k)
        nd = _object(item, p, _NODE_FIELDS, ("capacity",))
        mu = _num(nd["capacity"], _at(p, "capacity"))
        where, count = (_at(p, "count"), _int(nd["count"], _at(p, "count"))) if "count" in nd else (p, 1)
        if len(capacity) + count > MAX_NODES:
            raise _Bad(where, f"{count:,} nodes" + (f" make the instance's {len(capacity) + count:,}" if capacity
                                                     else "") + f"; at most {MAX_NODES:,} per instance")
        if m * (len(capacity) + count) > MAX_TASK_NODES:
            raise _Bad(where, f"{len(capacity) + count:,} nodes x the instance's {m:,} tasks = "
                       f"{m * (len(capacity) + count):,}; at most {MAX_TASK_NODES:,} (tasks x nodes)")
        if totals.nodes + len(capacity) + count > MAX_DATASET_NODES:
            raise _Bad(where, f"the dataset's nodes reach {totals.nodes + len(capacity) + count:,} here; at most "
                       f"{MAX_DATASET_NODES:,}")
        capacity += [mu] * count
    meta = d.get("meta", {})
    if not isinstance(meta, dict):
        raise _Bad(_at(path, "meta"), f"must be an object, got {_shown(meta)}")
    task_cost = None
    if any(t is not None for t in per_task):
        task_cost = np.concatenate([t if t is not None else np.full(n, c / n)
                                    for t, n, c in zip(per_task, tasks, cost)])
    try:
        return _job(name, names, tasks, cost, edges, capacity, dict(meta), task_cost=task_cost)
    except SkewbenchError as err:
        raise _Bad(path, str(err)) from None


def parse_job_graphs(obj: Any, source: str = "<json>", *, totals: Totals | None = None) -> list[Job]:
    """Users' job graphs from loaded JSON: one instance ``{"name"?, "groups": [{"name", "tasks",
    "cost"?, "task_costs"?}], "edges"?: [{"from", "to", "rate"}], "nodes": [{"capacity", "count"?}],
    "meta"?}``, a list of them, or ``{"instances": [...]}``.  Cost and capacity in percent of one
    core, rate in MB/s.  Unnamed instances are named ``instance-<i>``.  Every malformed field, and
    every size over its limit (:data:`MAX_TASKS` ...; checked before anything of that size is
    allocated), raises :class:`SkewbenchError` ``"SOURCE: json.path: problem"``.  ``totals``
    carries the dataset's counts from file to file (:func:`load_job_graphs`)."""
    totals = totals if totals is not None else Totals()
    try:
        if isinstance(obj, list):
            items = [(_at("", i), x) for i, x in enumerate(_list(obj, "", nonempty=True))]
        elif isinstance(obj, dict) and "instances" in obj:
            _object(obj, "", ("instances",), ())
            items = [(_at("instances", i), x) for i, x in enumerate(_list(obj["instances"], "instances"))]
        elif isinstance(obj, dict):
            items = [("", obj)]
        else:
            raise _Bad("", f"a job graph must be an object or a list of them, got {_shown(obj)}")
        if totals.instances + len(items) > MAX_INSTANCES:
            raise _Bad("instances" if isinstance(obj, dict) else "",
                       f"{len(items):,} instances" + (f" make the dataset's {totals.instances + len(items):,}"
                                                      if totals.instances else "") + f"; at most {MAX_INSTANCES:,}")
        jobs = []
        for i, (p, x) in enumerate(items):
            job = _instance(x, p, i, totals)
            totals.instances += 1
            totals.tasks += job.m
            totals.nodes += job.K
            jobs.append(job)
        first: dict[str, str] = {}
        for (p, _), j in zip(items, jobs):
            if j.name in first:
                raise _Bad(_at(p, "name"), f"duplicate instance name '{j.name}' (also {first[j.name] or 'the first'})")
            first[j.name] = p
        return jobs
    except _Bad as err:
        raise SkewbenchError(f"{source}: {err}") from None


def to_json(jobs: Sequence[Job] | Job) -> dict[str, Any]:
    """``{"instances": [...]}`` in :func:`parse_job_graphs`'s format (its inverse): consecutive equal
    node capacities are written once with a ``count``; measured task costs as ``task_costs``.
    Measured per-link rates have no JSON form here and raise :class:`SkewbenchError`."""
    out = []
    for j in [jobs] if isinstance(jobs, Job) else jobs:
        if j.link_rate:
            raise SkewbenchError(f"instance '{j.name}': measured per-link rates cannot be written as a JSON job graph")
        groups: list[dict[str, Any]] = []
        off = j.offset
        for g in range(j.G):
            gd: dict[str, Any] = {"name": j.groups[g], "tasks": int(j.tasks[g]), "cost": float(j.cost[g])}
            if j.task_cost is not None:
                gd["task_costs"] = [float(x) for x in j.task_cost[off[g]:off[g + 1]]]
            groups.append(gd)
        edges = [{"from": j.groups[int(a)], "to": j.groups[int(b)], "rate": float(r)}
                 for a, b, r in zip(j.src, j.dst, j.rate)]
        nodes: list[dict[str, Any]] = []
        for mu in j.capacity.tolist():
            if nodes and nodes[-1]["capacity"] == mu:
                nodes[-1]["count"] = nodes[-1].get("count", 1) + 1
            else:
                nodes.append({"capacity": float(mu)})
        inst: dict[str, Any] = {"name": j.name, "groups": groups, "edges": edges, "nodes": nodes}
        if j.meta:
            inst["meta"] = json.loads(json.dumps(j.meta))
        out.append(inst)
    return {"instances": out}


def _too_deep(data: bytes, limit: int) -> str | None:
    """The JSON path of the first container of a JSON text nested deeper than ``limit`` (brackets
    inside strings do not count), or None; numpy passes over the bytes before any parsing, whose
    per-position work is over the quotes and brackets alone (16 MiB in well under a second)."""
    b = np.frombuffer(data, dtype=np.uint8)
    quotes = np.flatnonzero(b == 0x22)
    cand = quotes[quotes > 0]
    cand = cand[b[cand - 1] == 0x5C]
    if cand.size:  # a quote after an odd run of backslashes is escaped
        backslash = b == 0x5C
        starts = np.flatnonzero(backslash & ~np.concatenate(([False], backslash[:-1])))
        run = cand - starts[np.searchsorted(starts, cand - 1, side="right") - 1]
        quotes = np.setdiff1d(quotes, cand[run % 2 == 1], assume_unique=True)

    def outside(pos: np.ndarray) -> np.ndarray:  # an even number of string quotes before it
        return np.searchsorted(quotes, pos) % 2 == 0

    br = np.flatnonzero((b == 0x5B) | (b == 0x7B) | (b == 0x5D) | (b == 0x7D))
    br = br[outside(br)]
    opens = (b[br] == 0x5B) | (b[br] == 0x7B)
    depth = np.cumsum(np.where(opens, 1, -1), dtype=np.int64)  # after each bracket: an opener's own depth
    over = np.flatnonzero(depth > limit)
    if not over.size:
        return None
    first = int(over[0])  # an opener (only openers deepen)
    before = np.flatnonzero(opens[:first])[::-1]  # the openers before it, last first
    levels, at_rev = np.unique(depth[before], return_index=True)
    last = dict(zip(levels.tolist(), before[at_rev].tolist()))  # depth -> the last opener of that depth
    if any(d not in last for d in range(1, limit + 1)):  # brackets out of balance: JSON's parser words it
        return f"byte {int(br[first]):,}"
    at = [int(br[last[d]]) for d in range(1, limit + 1)] + [int(br[first])]  # the enclosing openers
    path = []
    for d in range(1, limit + 1):
        o, child = at[d - 1], at[d]  # consecutive: the slices below add up to the file at most once
        seps = np.flatnonzero(b[o + 1:child] == (0x2C if b[o] == 0x5B else 0x3A)) + o + 1
        seps = seps[outside(seps)]
        seps = seps[depth[np.searchsorted(br, seps) - 1] == d]  # at this container's own level
        if b[o] == 0x5B:
            path.append(f"[{seps.size}]")
        else:
            close = int(np.searchsorted(quotes, seps[-1])) - 1
            try:
                path.append("." + json.loads(data[quotes[close - 1]:quotes[close] + 1]))
            except (ValueError, IndexError):
                path.append(".?")
    text = "".join(path).lstrip(".")
    if len(path) > 6:
        text = "".join(path[:3]).lstrip(".") + "..." + "".join(path[-2:]).lstrip(".")
    return text


def load_job_graphs(path: str | os.PathLike, *, totals: Totals | None = None) -> list[Job]:
    """:func:`parse_job_graphs` of a JSON file (errors name the file); a file over
    :data:`MAX_FILE_BYTES` or nested deeper than :data:`MAX_DEPTH` is refused before parsing."""
    p = os.fspath(path)
    try:
        size = os.stat(p).st_size
        if size > MAX_FILE_BYTES:
            raise SkewbenchError(f"{p}: {size:,} bytes; a job-graph file has at most {MAX_FILE_BYTES:,}")
        with open(p, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SkewbenchError(f"{p}: cannot read: {e}") from None
    if len(data) > MAX_FILE_BYTES:  # grew since its size was read
        raise SkewbenchError(f"{p}: more than {MAX_FILE_BYTES:,} bytes; a job-graph file has at most {MAX_FILE_BYTES:,}")
    deep = _too_deep(data, MAX_DEPTH)
    if deep is not None:
        raise SkewbenchError(f"{p}: {deep}: nested more than {MAX_DEPTH} levels deep; at most {MAX_DEPTH}")
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise SkewbenchError(f"{p}: not valid JSON: {e}") from None
    return parse_job_graphs(obj, source=p, totals=totals)


__all__ = ["example2", "priority", "asymmetry", "pipeline", "random_graph", "random_graphs", "capacity_sweep",
           "twitter", "stock", "rate_schedule", "twitter_e8", "from_grouping", "from_grouping_results",
           "derived_tuple_cost_ms", "parse_job_graphs", "to_json", "load_job_graphs"]
