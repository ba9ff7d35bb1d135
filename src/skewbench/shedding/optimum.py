"""The least drops any operator shedder could achieve offline, on the same stream, under the same bound.

The offline problem is the engine's model (las.spec.md 1.5-1.6, :mod:`skewbench.shedding.las`) with
the future known: tuples ``0..n-1`` arrive at ``a_i`` (ms, non-decreasing) and, if kept, run
``w_i`` ms on one FIFO operator without preemption, starting at ``s_i = max(a_i, finish of the
previous kept tuple)``; the queueing latency is ``q_i = s_i - a_i``.  A shedder may only drop
tuples (never reorder them).  It must keep, with the fewest drops:

* goal ``avg`` (the paper's AVG(tau), 1.6; LAS's, SM's and FK's default, and the bound the engine
  reports as ``prefix_violation_share``): every kept ``j`` has a prefix average
  ``sum_{i <= j kept} q_i / #kept(<= j) <= tau``;
* goal ``max`` (A18): every kept tuple has ``q_i <= tau``.

Ties count as within the bound up to ``TOL`` ms (the schema's ``q > tau + 1e-9``).

Goal ``max``: an exact dynamic programme (:func:`min_drops_max`)
------------------------------------------------------------------
After tuples ``0..i``, let ``f[k]`` be the earliest time the operator can be free having kept
exactly ``k`` of them within the bound.  For the same ``k``, an earlier finish dominates: every
later tuple's start ``max(a_j, finish)`` is no later, so whatever a schedule with the later finish
can keep afterwards, the earlier one can keep too.  Hence keeping ``f`` per ``k`` is enough:
``f'[k+1] = min(f[k+1], max(a_i, f[k]) + w_i)`` when ``max(a_i, f[k]) <= a_i + tau``, and the
optimum keeps the largest ``k`` with finite ``f[k]``.  ``O(n K)`` time (``K`` the kept count) in one
``@njit`` loop, ``O(n K)`` bits to recover the kept set.

Moore-Hodgson's rule (on a miss, drop the kept tuple with the largest cost) is *not* exact here:
the release dates ``a_i`` leave idle gaps, and dropping the costliest tuple before a gap frees
nothing.  With ``tau = 0``: tuples ``(a, w) = (0, 5), (5, 4), (6, 1)``; at the third tuple the rule
drops the first (cost 5), the second still ends at 9 > 6, so it keeps one tuple, while dropping the
second keeps two (``tests/property/test_shedding_optimum_property.py`` pins this example).

Goal ``avg``: a MILP (:func:`min_drops_avg`) on HiGHS (:func:`skewbench.solver.solve_lp_or_milp`)
-------------------------------------------------------------------------------------------------
No exact polynomial method is known to us for the running-average constraint (a kept tuple's
latency may be traded against later ones), so: binary ``x_i`` (kept), continuous ``B_i`` (the
operator busy until, after tuple ``i``), ``q_i`` (queueing latency) and ``S_i`` (the prefix sum of
``q - tau x``)::

    max sum x_i
    B_i >= B_{i-1} + w_i x_i,   B_i >= a_i + w_i x_i,   a_i <= B_i <= U_i
    q_i >= B_{i-1} - a_i - M_i (1 - x_i),   q_i >= 0
    S_i = S_{i-1} + q_i - tau x_i <= 0

with ``U_i`` the keep-everything schedule's finish after ``i`` and ``M_i = max(0, U_{i-1} - a_i)``.
``B`` and ``q`` may exceed the true values (idle time inserted), which only makes a selection
harder to accept, and the true schedule of any selection is a solution, so the MILP's optimum is
the true one.  (A dropped ``j`` needs no constraint of its own: its prefix sums equal those of the
last kept tuple before it.)  The best of two feasible selections starts HiGHS: the goal-``max``
optimum (``q_i <= tau`` for all kept implies every average ``<= tau``) and Full Knowledge's greedy
(it keeps a tuple when the exact prefix average allows it).  The solve has a deterministic node
budget (:data:`NODE_LIMIT`) and a time limit (:data:`TIME_LIMIT`) as a safety net.  When it is not
proven, ``status`` names the limit that stopped it, ``"node_limit"`` (the node budget, the usual one)
or ``"time_limit"`` (the clock), ``dropped`` is the *lower bound* ``n - floor(dual bound)``
(so ``drop_optimality`` computed from it is a lower bound on the true ratio, as allocation's
optimality against OPT's bound) and ``gap`` HiGHS's relative gap; ``upper`` is the incumbent's
drops.  Without a bound (HiGHS stopped before its root LP) ``dropped`` is None.

Size and which tuples
----------------------
The nightly's streams (32,768 to hundreds of thousands of tuples) are far beyond the MILP, so the
engine computes the optimum on the stream's first :data:`WINDOW` tuples (a prefix: a shedder's
decisions there do not depend on what follows, and a prefix of a stream that meets the bound meets
it too), the same window for every strategy, and compares each strategy's drops on that same
prefix.  Both goals use the same window, so the columns mean the same thing for every cell.  The
optimum depends only on the window's arrivals, costs, tau and goal (not on the strategy or the
seed), so one process computes it once per such stream (:data:`_CACHE`).
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass

import numpy as np

from skewbench.errors import SkewbenchError
from skewbench.jit import njit

#: tuples of the prefix the engine solves (module docstring, "Size and which tuples")
WINDOW = 200
#: the avg MILP's branch-and-bound nodes (deterministic: it binds first, about 13 s on debs-surrogate's
#: prefix here) and its time limit (a safety net only)
NODE_LIMIT = 200
TIME_LIMIT = 300.0
#: the largest stream the MILP takes (variables: 4 per tuple)
MAX_MILP_TUPLES = 5000
#: the dominance programme's largest state set (about 40,000 at 500 tuples of las-e1 at P = 75)
MAX_STATES = 200_000
#: latencies within ``tau + TOL`` ms meet the bound (the schema's ``q > tau + 1e-9``)
TOL = 1e-9
GOALS = ("avg", "max")
STATUSES = ("optimal", "node_limit", "time_limit", "too_large", "error")
#: the statuses of a solve its limits stopped before the proof
LIMITS = ("node_limit", "time_limit")


@dataclass(frozen=True)
class Optimum:
    """The least drops on a stream: ``dropped`` (proven, or a lower bound when ``status`` is
    ``"node_limit"`` or ``"time_limit"``; None without one), ``upper`` (the drops of the best selection found),
    ``gap`` (0 when proven), ``status``, ``method`` and ``seconds``; ``kept`` is the best
    selection found (bool per tuple, None without one)."""

    tuples: int
    goal: str
    status: str
    dropped: int | None
    upper: int | None
    gap: float | None
    method: str
    seconds: float
    kept: np.ndarray | None


def _check(arrivals, costs, tau: float, goal: str) -> tuple[np.ndarray, np.ndarray]:
    a = np.ascontiguousarray(arrivals, dtype=np.float64)
    w = np.ascontiguousarray(costs, dtype=np.float64)
    if a.ndim != 1 or w.ndim != 1 or len(a) != len(w):
        raise SkewbenchError(f"shedding optimum: arrivals and costs must be 1-D of one length, got shapes "
                             f"{a.shape} and {w.shape}")
    if len(a) and not (np.all(np.isfinite(a)) and np.all(np.isfinite(w)) and np.all(w >= 0)):
        raise SkewbenchError("shedding optimum: arrivals must be finite and costs finite and >= 0")
    if len(a) > 1 and np.any(np.diff(a) < 0):
        raise SkewbenchError("shedding optimum: arrivals must be non-decreasing")
    if math.isnan(tau) or tau < 0:
        raise SkewbenchError(f"shedding optimum: tau must be >= 0 (inf allowed), got {tau!r}")
    if goal not in GOALS:
        raise SkewbenchError(f"shedding optimum: goal must be 'avg' or 'max', got {goal!r}")
    return a, w


@njit(cache=True)
def fifo_latencies(a, w, kept):
    """Queueing latency of each kept tuple on the FIFO operator (NaN where dropped)."""
    n = a.shape[0]
    q = np.full(n, np.nan)
    busy = -np.inf
    for i in range(n):
        if kept[i]:
            s = a[i] if a[i] >= busy else busy
            q[i] = s - a[i]
            busy = s + w[i]
    return q


def feasible(arrivals, costs, kept, tau: float, goal: str) -> bool:
    """True when the kept tuples meet the bound (goal ``avg`` or ``max``) on the FIFO operator."""
    a, w = _check(arrivals, costs, tau, goal)
    k = np.asarray(kept, dtype=np.bool_)
    q = fifo_latencies(a, w, k)[k]
    if goal == "max":
        return bool(np.all(q <= tau + TOL))
    return bool(np.all(np.cumsum(q) <= tau * np.arange(1, len(q) + 1) + TOL * np.arange(1, len(q) + 1)))


@njit(cache=True)
def _dp_max(a, w, tau, tol, choice):
    n = a.shape[0]
    f = np.full(n + 1, np.inf)
    f[0] = -np.inf
    top = 0
    for i in range(n):
        lim = a[i] + tau + tol
        for k in range(top, -1, -1):
            fk = f[k]
            if fk == np.inf:
                continue
            s = a[i] if a[i] >= fk else fk
            if s <= lim:
                cand = s + w[i]
                if cand < f[k + 1]:
                    f[k + 1] = cand
                    choice[i, k + 1] = True
                    if k + 1 > top:
                        top = k + 1
    kept = np.zeros(n, dtype=np.bool_)
    k = top
    for i in range(n - 1, -1, -1):
        if k > 0 and choice[i, k]:
            kept[i] = True
            k -= 1
    return kept


def min_drops_max(arrivals, costs, tau: float) -> Optimum:
    """The exact optimum for goal ``max`` (module docstring): every kept ``q_i <= tau``."""
    t0 = time.perf_counter()
    a, w = _check(arrivals, costs, tau, "max")
    n = len(a)
    if n > MAX_MILP_TUPLES * 4:
        raise SkewbenchError(f"shedding optimum: at most {MAX_MILP_TUPLES * 4:,} tuples for the exact programme "
                             f"(O(n^2) bits), got {n:,}")
    kept = _dp_max(a, w, float(tau), TOL, np.zeros((n, n + 1), dtype=np.bool_)) if n else np.zeros(0, bool)
    d = int(n - kept.sum())
    return Optimum(n, "max", "optimal", d, d, 0.0, "dp", time.perf_counter() - t0, kept)


@njit(cache=True)
def fk_greedy(a, w, tau, tol):
    """Full Knowledge's rule with exact latencies: keep a tuple when the prefix average allows it."""
    n = a.shape[0]
    kept = np.zeros(n, dtype=np.bool_)
    busy = -np.inf
    qsum = 0.0
    ell = 0
    for i in range(n):
        s = a[i] if a[i] >= busy else busy
        q = s - a[i]
        if qsum + q <= tau * (ell + 1) + tol * (ell + 1):
            kept[i] = True
            qsum += q
            ell += 1
            busy = s + w[i]
    return kept


def _avg_model(a: np.ndarray, w: np.ndarray, tau: float):
    from skewbench.solver import CSR

    n = len(a)
    U = np.maximum.accumulate(a)  # keep-everything finish times
    busy = -np.inf
    for i in range(n):
        busy = max(a[i], busy) + w[i]
        U[i] = busy
    M = np.maximum(0.0, np.concatenate([[0.0], U[:-1]]) - a)
    X, B, Q, S = 0, n, 2 * n, 3 * n  # column blocks
    rows, cols, vals, lo, hi = [], [], [], [], []
    r = 0
    idx = np.arange(n)
    prev = np.arange(1, n)
    # B_i - B_{i-1} - w_i x_i >= 0 (i >= 1)
    k = n - 1
    rr = r + np.arange(k)
    rows += [rr, rr, rr]
    cols += [B + prev, B + prev - 1, X + prev]
    vals += [np.ones(k), -np.ones(k), -w[1:]]
    lo.append(np.zeros(k))
    hi.append(np.full(k, np.inf))
    r += k
    # B_i - w_i x_i >= a_i
    rr = r + idx
    rows += [rr, rr]
    cols += [B + idx, X + idx]
    vals += [np.ones(n), -w]
    lo.append(a.copy())
    hi.append(np.full(n, np.inf))
    r += n
    # q_i - B_{i-1} - M_i x_i >= -a_i - M_i (i >= 1)
    rr = r + np.arange(k)
    rows += [rr, rr, rr]
    cols += [Q + prev, B + prev - 1, X + prev]
    vals += [np.ones(k), -np.ones(k), -M[1:]]
    lo.append(-a[1:] - M[1:])
    hi.append(np.full(k, np.inf))
    r += k
    # S_i - S_{i-1} - q_i + tau x_i = 0
    rr = r + idx
    rows += [rr, rr, rr, rr[1:]]
    cols += [S + idx, Q + idx, X + idx, S + prev - 1]
    vals += [np.ones(n), -np.ones(n), np.full(n, tau), -np.ones(k)]
    lo.append(np.zeros(n))
    hi.append(np.zeros(n))
    r += n
    A = CSR.from_triplets(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), (r, 4 * n))
    col_lo = np.concatenate([np.zeros(n), a, np.zeros(n), np.full(n, -np.inf)])
    col_hi = np.concatenate([np.ones(n), U, np.maximum(M, 0.0), np.full(n, TOL * np.arange(1, n + 1))])
    c = np.concatenate([np.ones(n), np.zeros(3 * n)])
    integ = np.concatenate([np.ones(n, dtype=bool), np.zeros(3 * n, dtype=bool)])
    return c, A, np.concatenate(lo), np.concatenate(hi), col_lo, col_hi, integ


def _start(a: np.ndarray, w: np.ndarray, tau: float, kept: np.ndarray) -> np.ndarray:
    """The MILP point of a feasible selection (true busy times and latencies)."""
    n = len(a)
    B = np.empty(n)
    q = np.zeros(n)
    busy = -np.inf
    for i in range(n):
        if kept[i]:
            s = max(a[i], busy)
            q[i] = s - a[i]
            busy = s + w[i]
        B[i] = max(busy, a[i])
    S = np.cumsum(q - tau * kept)
    return np.concatenate([kept.astype(np.float64), B, q, S])


@njit(cache=True)
def _pareto_avg(a, w, tau, tol, max_states):
    """The goal-``avg`` optimum by dominance: returns (most kept, largest state count), or
    (-1, count) when the states outgrow ``max_states``."""
    n = a.shape[0]
    K = np.zeros(1, dtype=np.int64)
    B = np.full(1, -np.inf)
    L = np.zeros(1)
    most = 1
    for i in range(n):
        s_n = K.shape[0]
        K2 = np.empty(2 * s_n, dtype=np.int64)
        B2 = np.empty(2 * s_n)
        L2 = np.empty(2 * s_n)
        t = 0
        for j in range(s_n):  # drop tuple i: the state is unchanged
            K2[t] = K[j]
            B2[t] = B[j]
            L2[t] = L[j]
            t += 1
        for j in range(s_n):  # keep it where the prefix average stays within tau
            st = a[i] if a[i] >= B[j] else B[j]
            nl = L[j] + tau - (st - a[i])
            if nl >= -tol * (K[j] + 1):
                K2[t] = K[j] + 1
                B2[t] = st + w[i]
                L2[t] = nl
                t += 1
        K2, B2, L2 = K2[:t], B2[:t], L2[:t]
        # order: more kept first, then earlier finish (stable sorts)
        o1 = np.argsort(B2, kind="mergesort")
        o2 = np.argsort(-K2[o1], kind="mergesort")
        order = o1[o2]
        rank = np.empty(t, dtype=np.int64)
        r = 0
        for j in range(t):
            if j > 0 and B2[o1[j]] != B2[o1[j - 1]]:
                r += 1
            rank[o1[j]] = r
        m = r + 1
        fen = np.full(m + 1, -np.inf)  # Fenwick tree: the largest slack among accepted states by finish rank
        keep = np.zeros(t, dtype=np.bool_)
        kept_n = 0
        for u in range(t):
            j = order[u]
            x = rank[j] + 1
            best = -np.inf
            while x > 0:
                if fen[x] > best:
                    best = fen[x]
                x -= x & (-x)
            if best >= L2[j]:
                continue  # another state keeps as many, finishes no later and has no less slack
            keep[j] = True
            kept_n += 1
            x = rank[j] + 1
            while x <= m:
                if fen[x] < L2[j]:
                    fen[x] = L2[j]
                x += x & (-x)
        K, B, L = K2[keep], B2[keep], L2[keep]
        if kept_n > most:
            most = kept_n
        if kept_n > max_states:
            return -1, most
    return K.max(), most


def min_drops_avg(arrivals, costs, tau: float, method: str = "auto", max_states: int | None = None,
                  node_limit: int | None = NODE_LIMIT, time_limit: float = TIME_LIMIT) -> Optimum:
    """The optimum for goal ``avg`` (module docstring): the dominance programme, or the MILP
    (``method="milp"``, or ``"auto"`` when the programme outgrows ``max_states``)."""
    from skewbench.solver import solve_lp_or_milp

    t0 = time.perf_counter()
    a, w = _check(arrivals, costs, tau, "avg")
    n = len(a)
    if method not in ("auto", "dp", "milp"):
        raise SkewbenchError(f"shedding optimum: method must be auto, dp or milp, got {method!r}")
    everything = np.ones(n, dtype=np.bool_)
    if not math.isfinite(tau) or feasible(a, w, everything, tau, "avg"):
        return Optimum(n, "avg", "optimal", 0, 0, 0.0, "keep-all", time.perf_counter() - t0, everything)
    if method != "milp":
        cap = MAX_STATES if max_states is None else int(max_states)
        most, _ = _pareto_avg(a, w, float(tau), TOL, cap)
        if most >= 0:
            d = int(n - most)
            return Optimum(n, "avg", "optimal", d, d, 0.0, "pareto-dp", time.perf_counter() - t0, None)
        if method == "dp":
            return Optimum(n, "avg", "too_large", None, None, None, "pareto-dp", time.perf_counter() - t0, None)
    if n > MAX_MILP_TUPLES:
        return Optimum(n, "avg", "too_large", None, None, None, "highs-milp", time.perf_counter() - t0, None)
    best = max((min_drops_max(a, w, tau).kept, fk_greedy(a, w, float(tau), TOL)), key=lambda k: int(k.sum()))
    model = _avg_model(a, w, float(tau))
    sol = solve_lp_or_milp(*model, maximize=True, time_limit=time_limit, start=_start(a, w, tau, best),
                           node_limit=node_limit)
    secs = time.perf_counter() - t0
    if sol.x is not None:
        x = sol.x[:n] > 0.5
        if int(x.sum()) > int(best.sum()) and feasible(a, w, x, tau, "avg"):
            best = x
    upper = int(n - best.sum())
    if sol.status == "optimal":
        if upper != int(round(n - sol.objective)):
            return Optimum(n, "avg", "error", None, upper, None, sol.method, secs, best)
        return Optimum(n, "avg", "optimal", upper, upper, 0.0, sol.method, secs, best)
    if sol.status in LIMITS and sol.bound is not None:
        lower = max(0, n - int(math.floor(sol.bound + 1e-6)))
        if lower >= upper:
            return Optimum(n, "avg", "optimal", upper, upper, 0.0, sol.method, secs, best)
        return Optimum(n, "avg", sol.status, lower, upper, (upper - lower) / max(1, n - lower), sol.method, secs,
                       best)
    status = sol.status if sol.status in LIMITS else "error"
    return Optimum(n, "avg", status, None, upper, None, sol.method, secs, best)


def min_drops(arrivals, costs, tau: float, goal: str = "avg", **solve) -> Optimum:
    """The least drops for ``goal`` (``avg``: :func:`min_drops_avg`, ``max``: :func:`min_drops_max`)."""
    _check(arrivals, costs, tau, goal)
    if goal == "max":
        return min_drops_max(arrivals, costs, tau)
    return min_drops_avg(arrivals, costs, tau, **solve)


_CACHE: dict[tuple, Optimum] = {}
_CACHE_SIZE = 64


def window_optimum(arrivals, costs, tau: float, goal: str, window: int = WINDOW) -> Optimum:
    """:func:`min_drops` on the first ``window`` tuples, once per process for each distinct stream."""
    a = np.ascontiguousarray(np.asarray(arrivals, dtype=np.float64)[:window])
    w = np.ascontiguousarray(np.asarray(costs, dtype=np.float64)[:window])
    h = hashlib.blake2b(a.tobytes() + b"|" + w.tobytes(), digest_size=16).hexdigest()
    key = (h, float(tau), goal)
    if key not in _CACHE:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = min_drops(a, w, tau, goal)
    return _CACHE[key]


def drop_optimality(opt_dropped: int | None, dropped: int) -> float | None:
    """``opt_dropped / dropped``: 1 when the strategy drops no more than the optimum; 1 when both
    are 0; None when the optimum is unknown or the strategy dropped nothing where the optimum drops
    some (it kept everything by breaking the bound: the ratio would be infinite)."""
    if opt_dropped is None:
        return None
    if dropped == 0:
        return 1.0 if opt_dropped == 0 else None
    return opt_dropped / dropped
