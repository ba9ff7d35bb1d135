"""OPT: the exact optimum of (QP), allocation.spec.md 1.4-1.5 and 2.5.

Three formulations, cross-checked on tiny instances (spec 7 item 10):

- :func:`solve_f2`: the configuration ILP (uniform costs, Eq. 1); node classes of equal capacity
  each get their own configurations, so identical nodes are the one-class case;
- :func:`solve_f1`: the task-level linearised MILP (any job: heterogeneous nodes, measured per-task
  costs and per-link rates), with symmetry breaking;
- :func:`solve_f3`: the count model in CP-SAT (uniform jobs), the independent cross-check.

OPT places every task: an instance on which no complete allocation fits returns status
"infeasible" with ``node=None``.  The returned ``gain`` is always :func:`model.gain` of the
returned ``node`` (so ``model.evaluate`` reproduces it); ``bound`` is the solver's upper bound.
"""

from __future__ import annotations

import atexit
import math
import os
import pickle
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from skewbench.allocation.model import TOL, Job, fits, gain
from skewbench.errors import SkewbenchError
from skewbench.solver import CSR, LIMITS, solve_lp_or_milp

#: enumeration / model-size caps beyond which a formulation answers "too_large"
MAX_CONFIGS = 200_000
MAX_F1_COLUMNS = 200_000
MAX_F3_PRODUCTS = 100_000


@dataclass
class Optimum:
    """The result of an exact solve: status "optimal", "time_limit", "infeasible", "too_large" or "error"."""

    node: np.ndarray | None
    gain: float | None
    bound: float | None
    gap: float | None
    status: str
    seconds: float
    method: str


def _prepare(job: Job, time_limit: float, method: str, uniform_only: str = "") -> tuple[float, Optimum | None]:
    """The start of every formulation: the clock, the checks of the job and of ``time_limit`` (and, when
    ``uniform_only`` says why, of a uniform job), and the answer "infeasible" when the job obviously
    has no complete allocation (None otherwise)."""
    t0 = time.perf_counter()
    job.validate()
    if not (time_limit > 0):
        raise SkewbenchError(f"time_limit must be > 0 seconds, got {time_limit}")
    if uniform_only and not job.uniform:
        raise SkewbenchError(uniform_only)
    return t0, (_result(job, None, "infeasible", None, None, t0, method) if _obviously_infeasible(job) else None)


def _obviously_infeasible(job: Job) -> bool:
    """No complete allocation: the total load exceeds the total capacity, or a task fits no node."""
    cap = job.capacity
    return (not fits(job.total_cost, float(cap.sum()))) or (not fits(float(job.costs.max()), float(cap.max())))


def _classes(job: Job) -> list[np.ndarray]:
    """Node indices grouped by equal capacity, in order of first index."""
    _, first, inv = np.unique(job.capacity, return_index=True, return_inverse=True)
    order = np.argsort(first)
    return [np.flatnonzero(inv == c) for c in order]


def _result(job: Job, node: np.ndarray | None, status: str, bound: float | None, gap: float | None,
            t0: float, method: str) -> Optimum:
    g = gain(job, node) if node is not None else None
    if status == "optimal":
        gap = 0.0
        bound = g if bound is None else bound
    return Optimum(node, g, bound, gap, status, time.perf_counter() - t0, method)


def _node_from_counts(job: Job, a: np.ndarray) -> np.ndarray:
    """Tasks of each group in index order onto nodes 0..K-1 by the counts a_{g,k} (G, K)."""
    node = np.full(job.m, -1, dtype=np.int64)
    off = job.offset
    for g in range(job.G):
        node[off[g]:off[g + 1]] = np.repeat(np.arange(job.K), a[g])
    return node


# ------------------------------------------------------------------------------------------------
# F2: configuration ILP


def _configurations(p: np.ndarray, n: np.ndarray, mu: float, cap: int) -> np.ndarray | None:
    """Every non-zero c with 0 <= c_g <= n_g and sum c_g p_g <= mu (tolerance); None beyond ``cap``."""
    G = p.size
    out: list[tuple[int, ...]] = []
    c = [0] * G
    limit = mu + TOL * max(1.0, abs(mu))

    def dfs(g: int, load: float) -> bool:
        if g == G:
            if any(c):
                out.append(tuple(c))
                if len(out) > cap:
                    return False
            return True
        k = 0
        while k <= n[g] and load + k * p[g] <= limit:
            c[g] = k
            if not dfs(g + 1, load + k * p[g]):
                return False
            k += 1
        c[g] = 0
        return True

    if not dfs(0, 0.0):
        return None
    return np.array(out, dtype=np.int64).reshape(-1, G)


def solve_f2(job: Job, time_limit: float = 10.0, max_configs: int = MAX_CONFIGS,
             node_limit: int | None = None) -> Optimum:
    """Configuration ILP (spec 1.5 F2): max sum_c gain(c) y_c, sum_c c_g y_c = n_g, sum_{c in class} y_c <= K_class.

    Uniform jobs only.  Configurations are enumerated per node class (equal capacity) by DFS; when
    their number exceeds ``max_configs`` the answer is "too_large" without solving.  The allocation
    puts the tasks of each group, in index order, onto the nodes of each class, in index order.
    """
    t0, infeasible = _prepare(job, time_limit, "f2",
                              "F2 needs uniform costs (Eq. 1); use F1 for measured task costs or link rates")
    if infeasible is not None:
        return infeasible
    p, n, w = job.per_task, job.tasks, job.per_link
    classes = _classes(job)
    confs, cls_of = [], []
    total = 0
    for ci, nodes in enumerate(classes):
        cf = _configurations(p, n, float(job.capacity[nodes[0]]), max_configs - total)
        if cf is None:
            return _result(job, None, "too_large", None, None, t0, "f2")
        total += cf.shape[0]
        confs.append(cf)
        cls_of.append(np.full(cf.shape[0], ci))
    C = np.concatenate(confs) if confs else np.zeros((0, job.G), dtype=np.int64)
    cls = np.concatenate(cls_of)
    N = C.shape[0]
    if N == 0:
        return _result(job, None, "infeasible", None, None, t0, "f2")
    gains = (C[:, job.src] * C[:, job.dst]).astype(np.float64) @ w if job.E else np.zeros(N)
    # rows: G demand equalities, then one count row per class
    nz = C.nonzero()
    rows = np.concatenate([nz[1], job.G + cls])
    cols = np.concatenate([nz[0], np.arange(N)])
    vals = np.concatenate([C[nz].astype(np.float64), np.ones(N)])
    A = CSR.from_triplets(rows, cols, vals, (job.G + len(classes), N))
    kcount = np.array([len(c) for c in classes], dtype=np.float64)
    lo = np.concatenate([n.astype(np.float64), np.zeros(len(classes))])
    hi = np.concatenate([n.astype(np.float64), kcount])
    with np.errstate(divide="ignore"):
        ub = np.min(np.where(C > 0, n[None, :] // np.maximum(C, 1), np.iinfo(np.int64).max), axis=1)
    ub = np.minimum(ub, kcount[cls]).astype(np.float64)
    sol = solve_lp_or_milp(gains, A, lo, hi, np.zeros(N), ub, np.ones(N, dtype=bool), maximize=True,
                           time_limit=time_limit, node_limit=node_limit)
    if sol.status in ("infeasible", "error", "unbounded") or sol.x is None:
        st = "time_limit" if sol.status in LIMITS else ("infeasible" if sol.status == "infeasible" else "error")
        return _result(job, None, st, sol.bound, sol.gap, t0, f"f2({N} configs)")
    y = np.rint(sol.x).astype(np.int64)
    a = np.zeros((job.G, job.K), dtype=np.int64)
    used = [0] * len(classes)
    for cidx in np.flatnonzero(y):
        ci = int(cls[cidx])
        for _ in range(int(y[cidx])):
            a[:, classes[ci][used[ci]]] = C[cidx]
            used[ci] += 1
    node = _node_from_counts(job, a)
    return _result(job, node, "time_limit" if sol.status in LIMITS else sol.status, sol.bound, sol.gap, t0,
                   f"f2({N} configs)")


# ------------------------------------------------------------------------------------------------
# F1: task-level linearised MILP


def _links(job: Job) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All directed task links with a positive rate: (t, u, rate)."""
    off = job.offset
    ts, us, ws = [], [], []
    w = job.per_link
    for e in range(job.E):
        i, j = int(job.src[e]), int(job.dst[e])
        ti = np.arange(off[i], off[i + 1])
        uj = np.arange(off[j], off[j + 1])
        if job.link_rate and e in job.link_rate:
            r = np.asarray(job.link_rate[e], dtype=np.float64)
        else:
            r = np.full((ti.size, uj.size), w[e])
        tt, uu = np.meshgrid(ti, uj, indexing="ij")
        keep = r > 0
        ts.append(tt[keep]); us.append(uu[keep]); ws.append(r[keep])
    if not ts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return np.concatenate(ts), np.concatenate(us), np.concatenate(ws)


def _interchangeable(job: Job) -> list[tuple[int, int]]:
    """Consecutive task pairs (t, t+1) of one group that are exact copies of each other (same cost,
    same measured link rates on every incident edge); ordering them loses no optimum."""
    off = job.offset
    costs = job.costs
    pairs = []
    for g in range(job.G):
        mats = []
        for e in range(job.E):
            if job.link_rate and e in job.link_rate:
                if int(job.src[e]) == g:
                    mats.append(np.asarray(job.link_rate[e]))
                if int(job.dst[e]) == g:
                    mats.append(np.asarray(job.link_rate[e]).T)
        for r in range(int(job.tasks[g]) - 1):
            t = int(off[g]) + r
            if costs[t] == costs[t + 1] and all(np.array_equal(mt[r], mt[r + 1]) for mt in mats):
                pairs.append((t, t + 1))
    return pairs


def solve_f1(job: Job, time_limit: float = 10.0, max_columns: int = MAX_F1_COLUMNS,
             node_limit: int | None = None) -> Optimum:
    """Task-level linearised MILP (spec 1.5 F1): x_{t,k} binary, z_{l,k} in [0, 1] with z <= x_t, z <= x_u.

    Works for every job.  Symmetry breaking, valid jointly: the nodes of each class of equal
    capacity are used in order of their first task (a task may open the class's i-th node only if an
    earlier task is on its (i-1)-th), and consecutive interchangeable tasks of a group take
    non-decreasing node indices.  Both hold at once: relabelling a class's nodes by first occurrence
    and sorting a run of copies each make the sequence node(0..m-1) lexicographically smaller, so
    repeating them ends at an equivalent allocation that satisfies both.  More than ``max_columns``
    columns: "too_large".
    """
    t0, infeasible = _prepare(job, time_limit, "f1")
    if infeasible is not None:
        return infeasible
    m, K = job.m, job.K
    lt, lu, lw = _links(job)
    L = lt.size
    nx = m * K
    ncol = nx + L * K
    if ncol > max_columns:
        return _result(job, None, "too_large", None, None, t0, f"f1({ncol} columns)")
    costs = job.costs
    kk = np.arange(K)
    rows, cols, vals, lo, hi = [], [], [], [], []
    r = 0

    def add(rr: np.ndarray, cc: np.ndarray, vv: np.ndarray) -> None:
        rows.append(rr); cols.append(cc); vals.append(vv)

    # sum_k x_{t,k} = 1
    add(np.repeat(np.arange(m), K), np.arange(nx), np.ones(nx)); r += m
    lo.append(np.ones(m)); hi.append(np.ones(m))
    # sum_t p_t x_{t,k} <= mu_k (+ tolerance)
    add(r + np.tile(kk, m), np.arange(nx), np.repeat(costs, K)); r += K
    lo.append(np.full(K, -np.inf)); hi.append(job.capacity + TOL * np.maximum(1.0, job.capacity))
    if L:
        zc = nx + np.arange(L * K)  # z_{l,k} at nx + l*K + k
        zl = np.repeat(np.arange(L), K)
        zk = np.tile(kk, L)
        for end in (lt, lu):  # z - x <= 0
            rr = r + np.arange(L * K)
            add(np.concatenate([rr, rr]), np.concatenate([zc, end[zl] * K + zk]),
                np.concatenate([np.ones(L * K), -np.ones(L * K)]))
            r += L * K
            lo.append(np.full(L * K, -np.inf)); hi.append(np.zeros(L * K))
    # identical nodes, first occurrence: task t may use the i-th node c_i of a class only if an
    # earlier task uses c_{i-1} (x_{t,c_i} <= sum_{s<t} x_{s,c_{i-1}}; t >= i follows)
    for nodes in _classes(job):
        for i in range(1, len(nodes)):
            a, b = int(nodes[i - 1]), int(nodes[i])
            for t_ in range(m):
                if t_ < i:
                    add(np.array([r]), np.array([t_ * K + b]), np.ones(1))
                    lo.append(np.zeros(1)); hi.append(np.zeros(1)); r += 1
                    continue
                prev = np.arange(t_) * K + a
                add(np.full(t_ + 1, r), np.append(prev, t_ * K + b), np.append(-np.ones(t_), 1.0))
                lo.append(np.full(1, -np.inf)); hi.append(np.zeros(1)); r += 1
    # interchangeable tasks t, t+1: node(t) <= node(t+1), as sum_{k'<=k} x_{t+1,k'} <= sum_{k'<=k} x_{t,k'}
    for t_, u_ in _interchangeable(job):
        for k in range(K - 1):
            ks = np.arange(k + 1)
            add(np.full(2 * (k + 1), r), np.concatenate([u_ * K + ks, t_ * K + ks]),
                np.concatenate([np.ones(k + 1), -np.ones(k + 1)]))
            lo.append(np.full(1, -np.inf)); hi.append(np.zeros(1)); r += 1
    A = CSR.from_triplets(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), (r, ncol))
    c = np.concatenate([np.zeros(nx), np.repeat(lw, K)])
    integ = np.zeros(ncol, dtype=bool); integ[:nx] = True
    sol = solve_lp_or_milp(c, A, np.concatenate(lo), np.concatenate(hi), np.zeros(ncol), np.ones(ncol), integ,
                           maximize=True, time_limit=time_limit, node_limit=node_limit)
    method = f"f1({ncol} columns)"
    if sol.x is None:
        st = "time_limit" if sol.status in LIMITS else (sol.status if sol.status == "infeasible" else "error")
        return _result(job, None, st, sol.bound, sol.gap, t0, method)
    node = np.argmax(sol.x[:nx].reshape(m, K), axis=1).astype(np.int64)
    return _result(job, node, "time_limit" if sol.status in LIMITS else sol.status, sol.bound, sol.gap, t0, method)


# ------------------------------------------------------------------------------------------------
# F3: CP-SAT count model


def _integer_scale(values: np.ndarray, max_int: float) -> tuple[float, bool]:
    """The smallest 2^s (s <= 62) making every value an integer no larger than ``max_int``; else the
    largest 2^s keeping ``max(values) * 2^s <= max_int`` (the values are then rounded: exact=False)."""
    top = float(np.max(np.abs(values))) if values.size else 0.0
    if top == 0.0:
        return 1.0, True
    for s in range(0, 63):
        scale = float(2 ** s)
        if top * scale > max_int:
            break
        scaled = values * scale
        if np.all(scaled == np.rint(scaled)):
            return scale, True
    s = math.floor(math.log2(max_int / top))
    return float(2.0 ** s), False


def _cpsat_counts(n: list[int], pi: list[int], capi: list[int], src: list[int], dst: list[int], wi: list[int],
                  classes: list[list[int]], time_limit: float) -> tuple[str, list[list[int]] | None, int | None]:
    """The CP-SAT count model on integer data (runs in the helper process, :class:`_CpSatWorker`)."""
    from ortools.sat.python import cp_model

    G, K = len(n), len(capi)
    md = cp_model.CpModel()
    a = [[md.NewIntVar(0, n[g], f"a{g}_{k}") for k in range(K)] for g in range(G)]
    for g in range(G):
        md.Add(sum(a[g]) == n[g])
    for k in range(K):
        md.Add(sum(pi[g] * a[g][k] for g in range(G)) <= capi[k])
    terms = []
    for e in range(len(src)):
        i, j = src[e], dst[e]
        for k in range(K):
            y = md.NewIntVar(0, n[i] * n[j], f"y{e}_{k}")
            md.AddMultiplicationEquality(y, [a[i][k], a[j][k]])
            terms.append(wi[e] * y)
    for nodes in classes:  # count columns lexicographically non-increasing within a class
        for k1, k2 in zip(nodes[:-1], nodes[1:]):
            eqs: list = []
            for g in range(G):
                md.Add(a[g][k1] >= a[g][k2]).OnlyEnforceIf(eqs)
                eq = md.NewBoolVar(f"eq{g}_{k1}")
                md.Add(a[g][k1] == a[g][k2]).OnlyEnforceIf(eq)
                md.Add(a[g][k1] != a[g][k2]).OnlyEnforceIf(eq.Not())
                eqs = eqs + [eq]
    if terms:
        md.Maximize(sum(terms))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_time_in_seconds = float(time_limit)
    st = solver.Solve(md)
    if st in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        counts = [[int(solver.Value(a[g][k])) for k in range(K)] for g in range(G)]
        bound = int(round(solver.BestObjectiveBound())) if terms else 0
        return ("optimal" if st == cp_model.OPTIMAL else "time_limit"), counts, bound
    if st == cp_model.INFEASIBLE:
        return "infeasible", None, None
    if st == cp_model.UNKNOWN:
        return "time_limit", None, None
    return "error", None, None


class _CpSatWorker:
    """One long-lived helper interpreter for CP-SAT, fed pickled calls over its stdin/stdout.

    The OR-Tools wheel bundles its own ``libhighs.so.1`` (another HiGHS version than highspy's):
    whichever of the two is imported second in a process fails with an undefined symbol.  F1/F2 use
    highspy in-process, so CP-SAT runs in a separate interpreter that never imports highspy.  (A
    ``multiprocessing`` spawn pool would re-run the caller's main script; a plain subprocess does not.)"""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        import skewbench

        root = os.path.dirname(os.path.dirname(os.path.abspath(skewbench.__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        code = "from skewbench.allocation.opt import serve_cp_sat; serve_cp_sat()"
        proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                env=env)
        atexit.register(self._stop, proc)
        return proc

    @staticmethod
    def _stop(proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            try:
                proc.stdin.close()
                proc.wait(timeout=5)
            except Exception:  # noqa: BLE001 - best effort at interpreter exit
                proc.kill()

    def call(self, *args: object) -> tuple:
        with self.lock:
            for attempt in (0, 1):
                if self.proc is None or self.proc.poll() is not None:
                    self.proc = self._start()
                try:
                    data = pickle.dumps(args)
                    self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
                    self.proc.stdin.flush()
                    head = self.proc.stdout.read(8)
                    if len(head) < 8:
                        raise EOFError("CP-SAT helper exited")
                    (size,) = struct.unpack("<Q", head)
                    return pickle.loads(self.proc.stdout.read(size))
                except (OSError, EOFError):
                    self.proc = None
                    if attempt:
                        raise
        raise AssertionError("unreachable")


def serve_cp_sat() -> None:
    """The CP-SAT helper process's entry point (:class:`_CpSatWorker` starts it): read (args), answer
    :func:`_cpsat_counts` (args); fd 1 is kept for the protocol."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything the solver prints goes to stderr, not into the protocol
    inp = sys.stdin.buffer
    while True:
        head = inp.read(8)
        if len(head) < 8:
            return
        (size,) = struct.unpack("<Q", head)
        args = pickle.loads(inp.read(size))
        try:
            reply: tuple = (True, _cpsat_counts(*args))
        except Exception as exc:  # noqa: BLE001 - handed back to the caller, who raises it
            reply = (False, f"{type(exc).__name__}: {exc}")
        data = pickle.dumps(reply)
        out.write(struct.pack("<Q", len(data)) + data)
        out.flush()


_WORKER = _CpSatWorker()


def solve_f3(job: Job, time_limit: float = 10.0, max_products: int = MAX_F3_PRODUCTS) -> Optimum:
    """Count model in CP-SAT (spec 1.5 F3): a_{g,k} in [0, n_g], y_{e,k} = a_{i,k} a_{j,k}
    (AddMultiplicationEquality), max sum_e w_e sum_k y_{e,k}; the count columns of equal-capacity nodes
    are ordered lexicographically (non-increasing).

    CP-SAT wants integers: per-task costs and capacities are scaled by one power of two, rates by
    another.  When every value is a multiple of 1/2^s the scaling is exact; otherwise (``method``
    then ends in "~") values are rounded at 2^40 (costs) / 2^30 (rates) resolution, so a load within
    ~m 2^-40 of the capacity tolerance or a gain within ~links 2^-30 x max rate of the optimum may be
    misjudged: compare at tolerance.  ``gain`` is always recomputed exactly from the allocation.
    Uniform jobs only; one search worker, fixed seed (deterministic); runs in a helper process
    (see :class:`_CpSatWorker`), whose start-up (about a second) the first call pays.
    """
    t0, infeasible = _prepare(job, time_limit, "f3", "F3 is a count model: it needs uniform costs (Eq. 1)")
    if infeasible is not None:
        return infeasible
    live = np.flatnonzero(job.per_link > 0)
    if live.size * job.K > max_products:
        return _result(job, None, "too_large", None, None, t0, "f3")
    p, n = job.per_task, job.tasks
    limit = job.capacity + TOL * np.maximum(1.0, job.capacity)
    cscale, cexact = _integer_scale(np.concatenate([p, job.capacity]), 2.0 ** 40)
    wscale, wexact = _integer_scale(job.per_link[live], 2.0 ** 30)
    pi = np.rint(p * cscale).astype(np.int64)
    capi = np.floor(limit * cscale).astype(np.int64)  # the capacity with the model's tolerance, scaled
    wi = np.rint(job.per_link[live] * wscale).astype(np.int64)
    args = ([int(v) for v in n], [int(v) for v in pi], [int(v) for v in capi],
            [int(job.src[e]) for e in live], [int(job.dst[e]) for e in live], [int(v) for v in wi],
            [[int(k) for k in c] for c in _classes(job)], float(time_limit))
    ok, reply = _WORKER.call(*args)
    if not ok:
        raise RuntimeError(f"CP-SAT helper failed: {reply}")
    status, counts, bound_i = reply
    method = "f3" + ("" if cexact and wexact else "~")
    if counts is None:
        return _result(job, None, status, None, None, t0, method)
    node = _node_from_counts(job, np.array(counts, dtype=np.int64).reshape(job.G, job.K))
    bound = float(bound_i) / wscale
    if status == "optimal":
        return _result(job, node, "optimal", bound, 0.0, t0, method)
    g_val = gain(job, node)
    gap = abs(bound - g_val) / max(abs(g_val), 1e-12) if g_val else (0.0 if bound == 0 else math.inf)
    return _result(job, node, "time_limit", bound, gap, t0, method)


# ------------------------------------------------------------------------------------------------


def solve(job: Job, method: str = "auto", time_limit: float = 10.0, node_limit: int | None = None) -> Optimum:
    """OPT (spec 2.5).  ``method``: "f1", "f2", "f3" or "auto" — F2 for uniform jobs (one
    configuration set per node class; F3 if F2's enumeration is too large), F1 otherwise.

    ``node_limit`` caps HiGHS's branch-and-bound nodes (F1, F2): unlike the time limit it stops at
    the same point on any machine and load, so a limited result is reproducible (status
    "time_limit" for either limit, as the allocation results contract says; the solver layer tells them
    apart; CP-SAT, F3, has only the time limit)."""
    if method == "f1":
        return solve_f1(job, time_limit, node_limit=node_limit)
    if method == "f2":
        return solve_f2(job, time_limit, node_limit=node_limit)
    if method == "f3":
        return solve_f3(job, time_limit)
    if method != "auto":
        raise SkewbenchError(f"unknown OPT method '{method}' (auto, f1, f2, f3)")
    job.validate()
    if job.uniform:
        res = solve_f2(job, time_limit, node_limit=node_limit)
        if res.status == "too_large":
            return solve_f3(job, time_limit)
        return res
    return solve_f1(job, time_limit, node_limit=node_limit)
