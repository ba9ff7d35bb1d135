"""A generic LP/MILP layer over HiGHS, and two offline optima of the grouping family.

:func:`solve_lp_or_milp` passes one model (dense matrix or a :class:`CSR` built by hand) to
``highspy.Highs`` with a fixed seed and thread count, and maps HiGHS's model status onto the five
statuses of :class:`Solution`.  It knows nothing of any strategy family; the allocation optimum
(allocation.spec.md 1.5, :mod:`skewbench.allocation.opt`) builds its models on top of it.

The two optima answer "each strategy's maximum load against the best possible under the same
constraint, computed offline on the same stream":

- :func:`best_whole_keys`: every key goes whole to one of n workers (P||Cmax);
- :func:`best_split`: a key's load may be split fractionally over its own candidate workers.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass

import numpy as np

from skewbench.errors import SkewbenchError

STATUSES = ("optimal", "time_limit", "node_limit", "infeasible", "unbounded", "error")
#: the statuses of a solve stopped by a limit before its proof (the incumbent, bound and gap kept)
LIMITS = ("time_limit", "node_limit")


@dataclass
class Solution:
    """The outcome of one solve; ``gap`` is HiGHS's relative MIP gap |bound - objective| / |objective|
    (0.0 for an LP and for a MILP proven with ``mip_rel_gap = 0``; another "optimal" MILP's is at most
    ``max(mip_rel_gap, 1e-6)``)."""

    status: str  # one of STATUSES
    objective: float | None
    bound: float | None  # dual bound (the LP optimum for an LP)
    gap: float | None
    x: np.ndarray | None
    seconds: float
    method: str


@dataclass
class CSR:
    """A row-wise sparse matrix: row r holds ``indices[indptr[r]:indptr[r+1]]`` with ``data``."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]

    @classmethod
    def from_triplets(cls, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, shape: tuple[int, int]) -> "CSR":
        """Rows sorted from coordinate triplets; duplicates are summed."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        vals = np.asarray(vals, dtype=np.float64)
        order = np.lexsort((cols, rows))
        rows, cols, vals = rows[order], cols[order], vals[order]
        if rows.size:
            new = np.ones(rows.size, dtype=bool)
            new[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
            starts = np.flatnonzero(new)
            vals = np.add.reduceat(vals, starts)
            rows, cols = rows[starts], cols[starts]
        indptr = np.zeros(shape[0] + 1, dtype=np.int64)
        np.add.at(indptr, rows + 1, 1)
        return cls(np.cumsum(indptr), cols, vals, (int(shape[0]), int(shape[1])))


def _as_csr(A: np.ndarray | CSR, n_cols: int) -> CSR:
    if isinstance(A, CSR):
        if A.shape[1] != n_cols:
            raise SkewbenchError(f"constraint matrix has {A.shape[1]} columns for {n_cols} variables")
        return A
    dense = np.asarray(A, dtype=np.float64)
    if dense.ndim != 2 or (dense.size and dense.shape[1] != n_cols):
        raise SkewbenchError(f"constraint matrix must be 2-D with {n_cols} columns")
    r, c = np.nonzero(dense)
    return CSR.from_triplets(r, c, dense[r, c], (dense.shape[0], n_cols))


def _limit_hit(clock: bool, is_mip: bool, node_limit: int | None, nodes: int) -> str:
    """Which limit stopped a solve: the node budget when it was set and used up (HiGHS reports it as
    a solution limit), else the time limit."""
    if not clock and is_mip and node_limit is not None and nodes >= int(node_limit):
        return "node_limit"
    return "time_limit"


def solve_lp_or_milp(c: np.ndarray, A: np.ndarray | CSR, row_lower: np.ndarray, row_upper: np.ndarray,
                     col_lower: np.ndarray, col_upper: np.ndarray, integrality: np.ndarray | None,
                     maximize: bool, time_limit: float, threads: int = 1, mip_rel_gap: float = 0.0,
                     start: np.ndarray | None = None, node_limit: int | None = None) -> Solution:
    """Optimise ``c x`` subject to ``row_lower <= A x <= row_upper`` and the column bounds.

    ``node_limit`` caps the branch-and-bound nodes (HiGHS's ``mip_max_nodes``): unlike the time
    limit, a deterministic budget, so a single-threaded solve stops at the same point on any
    machine load.  The status names the limit that stopped the solve: "node_limit" when the
    branch-and-bound used its ``node_limit`` nodes, "time_limit" when the clock ran out.

    ``integrality`` is a boolean mask of integer columns (None or all False: an LP).  ``start`` is
    an optional feasible point handed to HiGHS as the first incumbent.  Infinite bounds are
    ``np.inf``.  The seed is fixed (``random_seed = 0``), so a solve is reproducible for a given
    ``threads``.  Statuses: "optimal" (proven to ``mip_rel_gap``, or 1e-6 when that is 0), "node_limit"
    or "time_limit" (objective, bound and gap of the incumbent, or all None without one; "time_limit"
    also when HiGHS stops on its absolute tolerances short of that gap, as on a tiny objective, and on
    its other limits, which skewbench never sets), "infeasible", "unbounded", "error".
    """
    import highspy

    t0 = time.perf_counter()
    c = np.asarray(c, dtype=np.float64).ravel()
    n = c.size
    if not (time_limit > 0):
        raise SkewbenchError(f"time_limit must be > 0 seconds, got {time_limit}")
    if threads < 1:
        raise SkewbenchError(f"threads must be >= 1, got {threads}")
    mat = _as_csr(A, n)
    nr = mat.shape[0]
    rl = np.broadcast_to(np.asarray(row_lower, dtype=np.float64), (nr,)).copy()
    ru = np.broadcast_to(np.asarray(row_upper, dtype=np.float64), (nr,)).copy()
    cl = np.broadcast_to(np.asarray(col_lower, dtype=np.float64), (n,)).copy()
    cu = np.broadcast_to(np.asarray(col_upper, dtype=np.float64), (n,)).copy()
    integer = np.zeros(n, dtype=bool) if integrality is None else np.asarray(integrality, dtype=bool).ravel()
    if integer.shape != (n,):
        raise SkewbenchError(f"integrality needs one flag per variable ({n})")
    is_mip = bool(integer.any())
    method = "highs-milp" if is_mip else "highs-lp"
    if n == 0:
        ok = bool(np.all(rl <= 0) and np.all(ru >= 0))
        return Solution("optimal" if ok else "infeasible", 0.0 if ok else None, 0.0 if ok else None,
                        0.0 if ok else None, np.zeros(0) if ok else None, time.perf_counter() - t0, method)

    inf = highspy.kHighsInf
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("random_seed", 0)
    h.setOptionValue("threads", int(threads))
    h.setOptionValue("time_limit", float(time_limit))
    if is_mip:
        h.setOptionValue("mip_rel_gap", float(mip_rel_gap))
        if node_limit is not None:
            h.setOptionValue("mip_max_nodes", int(node_limit))
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = nr
    lp.col_cost_ = c
    lp.col_lower_ = np.where(np.isneginf(cl), -inf, cl)
    lp.col_upper_ = np.where(np.isposinf(cu), inf, cu)
    lp.row_lower_ = np.where(np.isneginf(rl), -inf, rl)
    lp.row_upper_ = np.where(np.isposinf(ru), inf, ru)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = nr
    lp.a_matrix_.start_ = mat.indptr.astype(np.int32)
    lp.a_matrix_.index_ = mat.indices.astype(np.int32)
    lp.a_matrix_.value_ = mat.data.astype(np.float64)
    lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
    if is_mip:
        lp.integrality_ = [highspy.HighsVarType.kInteger if f else highspy.HighsVarType.kContinuous for f in integer]
    if h.passModel(lp) == highspy.HighsStatus.kError:
        return Solution("error", None, None, None, None, time.perf_counter() - t0, method)
    if start is not None and is_mip:
        sol = highspy.HighsSolution()
        sol.col_value = [float(v) for v in np.asarray(start, dtype=np.float64).ravel()]
        sol.value_valid = True
        h.setSolution(sol)
    h.run()
    status = h.getModelStatus()
    S = highspy.HighsModelStatus
    if status == S.kUnboundedOrInfeasible:
        # presolve could not tell the two apart: ask the simplex without presolve
        h.setOptionValue("presolve", "off")
        h.run()
        status = h.getModelStatus()
    info = h.getInfo()
    has_x = info.primal_solution_status == 2  # kSolutionStatusFeasible
    x = np.asarray(h.getSolution().col_value, dtype=np.float64) if has_x else None
    obj = float(info.objective_function_value) if has_x else None
    secs = time.perf_counter() - t0
    if status == S.kOptimal:
        if is_mip:
            gap, bound = float(info.mip_gap), float(info.mip_dual_bound)
            if not gap <= max(mip_rel_gap, 1e-6):
                # HiGHS also stops on absolute tolerances (1e-6): on a small objective that leaves a
                # relative gap it has not closed, so this is a limited solve, not a proven optimum
                return Solution("time_limit", obj, bound, gap, x, secs, method)
            if mip_rel_gap == 0.0:
                gap, bound = 0.0, obj
        else:
            gap, bound = 0.0, obj
        return Solution("optimal", obj, bound, gap, x, secs, method)
    if status in (S.kTimeLimit, S.kIterationLimit, S.kInterrupt, S.kSolutionLimit, S.kHighsInterrupt):
        limit = _limit_hit(status == S.kTimeLimit, is_mip, node_limit, int(getattr(info, "mip_node_count", -1)))
        if has_x and is_mip:
            return Solution(limit, obj, float(info.mip_dual_bound), float(info.mip_gap), x, secs, method)
        return Solution(limit, None, None, None, None, secs, method)
    if status in (S.kInfeasible, S.kUnboundedOrInfeasible):
        return Solution("infeasible", None, None, None, None, secs, method)
    if status == S.kUnbounded:
        return Solution("unbounded", None, None, None, None, secs, method)
    if status == S.kModelEmpty:
        return Solution("optimal", 0.0, 0.0, 0.0, np.zeros(n), secs, method)
    return Solution("error", obj, None, None, x, secs, method)


# ------------------------------------------------------------------------------------------------
# grouping: the best maximum worker load under the same constraint


@dataclass
class Bound:
    """An optimum or a bracket on it: ``lower <= optimum <= upper``; ``value`` is documented per function."""

    value: float
    lower: float
    upper: float
    status: str  # "optimal" (lower == upper, proven) or "bound"
    method: str


def _check_weights(weights: np.ndarray) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64).ravel()
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise SkewbenchError("key loads must be finite numbers >= 0")
    return w


def lpt(w_desc: np.ndarray, n: int, loads: np.ndarray | None = None) -> np.ndarray:
    """Longest-processing-time list scheduling of ``w_desc`` (already sorted) onto n workers."""
    heap = [(0.0 if loads is None else float(loads[j]), j) for j in range(n)]
    heapq.heapify(heap)
    out = np.zeros(n) if loads is None else np.asarray(loads, dtype=np.float64).copy()
    for v in w_desc:
        ld, j = heapq.heappop(heap)
        ld += float(v)
        out[j] = ld
        heapq.heappush(heap, (ld, j))
    return out


def _pcmax_milp(values: np.ndarray, mult: np.ndarray, n: int, lower: float, upper: float,
                time_limit: float, node_limit: int | None = None) -> Solution:
    """min T s.t. each distinct load value v (mult keys) is split in integer counts over n workers.

    Variables y[v, j] (count of keys of value v on worker j, integer) and T; rows: sum_j y = mult,
    sum_v v y[v, j] - T <= 0, and the symmetry breaking load_j >= load_{j+1} (identical workers)."""
    D = values.size
    nv = D * n + 1
    tcol = D * n
    rows, cols, vals = [], [], []
    r = 0
    for v in range(D):  # sum_j y[v, j] = mult[v]
        rows.append(np.full(n, r)); cols.append(v * n + np.arange(n)); vals.append(np.ones(n)); r += 1
    lo_rows = [*mult.astype(np.float64)]
    hi_rows = [*mult.astype(np.float64)]
    for j in range(n):  # load_j - T <= 0
        rows.append(np.full(D + 1, r)); cols.append(np.append(np.arange(D) * n + j, tcol))
        vals.append(np.append(values, -1.0)); r += 1
        lo_rows.append(-np.inf); hi_rows.append(0.0)
    for j in range(n - 1):  # load_j - load_{j+1} >= 0
        rows.append(np.full(2 * D, r))
        cols.append(np.concatenate([np.arange(D) * n + j, np.arange(D) * n + j + 1]))
        vals.append(np.concatenate([values, -values])); r += 1
        lo_rows.append(0.0); hi_rows.append(np.inf)
    A = CSR.from_triplets(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), (r, nv))
    c = np.zeros(nv); c[tcol] = 1.0
    col_lo = np.zeros(nv); col_lo[tcol] = lower
    col_hi = np.repeat(mult.astype(np.float64), n); col_hi = np.append(col_hi, upper)
    integ = np.ones(nv, dtype=bool); integ[tcol] = False
    return solve_lp_or_milp(c, A, np.array(lo_rows), np.array(hi_rows), col_lo, col_hi, integ, maximize=False,
                            time_limit=time_limit, node_limit=node_limit)


def best_whole_keys(weights: np.ndarray, n: int, time_limit: float = 10.0, max_vars: int = 200_000,
                    node_limit: int | None = None, gap_tol: float = 0.0) -> Bound:
    """The least possible maximum worker load when every key goes whole to one of n workers (P||Cmax).

    ``lower`` is the best of max(w), sum(w)/n, w_(n) + w_(n+1) (two of the n+1 largest keys share a
    worker) and, after a MILP, its dual bound; ``upper`` is the best of LPT and the MILP incumbent.
    Keys of equal load are merged exactly into integer counts, so the MILP has (distinct loads) x n
    integer variables.  When that exceeds ``max_vars`` only the heaviest keys (as many distinct loads
    as fit) go to the MILP: its optimum over those keys is still a valid lower bound (dropping keys
    cannot raise the optimum), and the light keys are then added greedily (LPT onto the MILP's
    schedule) for the upper bound; ``method`` then says ``"milp-heavy+greedy"``.

    ``value`` is the proven optimum when ``status == "optimal"`` (lower == upper up to 1e-9
    relative), otherwise the **lower bound**.  Empty input or all-zero loads give 0.  With
    ``gap_tol > 0`` no MILP runs when the closed-form bounds are already within that relative gap
    (status "bound", method "bounds").
    """
    w = _check_weights(weights)
    if int(n) < 1:
        raise SkewbenchError(f"need at least one worker, got n={n}")
    n = int(n)
    if w.size == 0 or w.max() == 0:
        return Bound(0.0, 0.0, 0.0, "optimal", "trivial")
    desc = np.sort(w)[::-1]
    lower = max(float(desc[0]), float(desc.sum()) / n)
    if desc.size > n:
        lower = max(lower, float(desc[n - 1] + desc[n]))
    upper = float(lpt(desc, n).max())

    def close(a: float, b: float) -> bool:
        return b - a <= 1e-9 * max(1.0, abs(b))

    if close(lower, upper) or n == 1:
        return Bound(upper, upper, upper, "optimal", "bounds")
    if upper - lower <= gap_tol * upper:
        return Bound(lower, lower, upper, "bound", "bounds")
    values, mult = np.unique(desc, return_counts=True)
    values, mult = values[::-1], mult[::-1]
    values, mult = values[values > 0], mult[values > 0]
    D = values.size
    fit = max(1, min(D, (max_vars - 1) // n))
    heavy = fit < D
    sol = _pcmax_milp(values[:fit], mult[:fit], n, lower if not heavy else max(float(desc[0]), 0.0),
                      upper, time_limit, node_limit)
    method = "milp-heavy+greedy" if heavy else "milp"
    if sol.x is not None or sol.bound is not None:
        if sol.bound is not None:
            lower = max(lower, float(sol.bound) if sol.status != "optimal" else float(sol.objective))
        if sol.x is not None:
            y = np.rint(sol.x[:-1]).reshape(fit, n)
            loads = values[:fit] @ y
            if heavy:
                light = np.repeat(values[fit:], mult[fit:])
                loads = lpt(light, n, loads)
            upper = min(upper, float(loads.max()))
    if sol.status == "infeasible":  # cannot happen for this model; keep the heuristic bracket
        method += "(infeasible?)"
    if np.all(desc == np.round(desc)):  # integer loads: the optimum is an integer (HiGHS's bound is within 1e-6)
        lower = max(lower, float(np.ceil(lower - 1e-6)))
    if close(lower, upper):
        return Bound(upper, upper, upper, "optimal", method)
    return Bound(lower, lower, upper, "bound", method)


def _normalise_sets(candidates: np.ndarray, n: int) -> np.ndarray:
    """Each row's candidate set in a canonical form: sorted, duplicates replaced by -1 (sorted first)."""
    cand = np.asarray(candidates)
    if cand.ndim != 2:
        raise SkewbenchError("candidates must be a (keys, d) array of worker ids")
    if cand.size and (not np.issubdtype(cand.dtype, np.integer) or cand.min() < 0 or cand.max() >= n):
        raise SkewbenchError(f"candidate worker ids must be integers in 0..{n - 1}")
    s = np.sort(cand.astype(np.int64), axis=1)
    if s.shape[1] > 1:
        dup = np.zeros_like(s, dtype=bool)
        dup[:, 1:] = s[:, 1:] == s[:, :-1]
        s = np.sort(np.where(dup, -1, s), axis=1)
    return s


def best_split(weights: np.ndarray, candidates: np.ndarray, n: int, method: str = "auto") -> float:
    """The least possible maximum worker load when key k's load may be split fractionally over the
    workers ``candidates[k]`` (duplicates allowed).

    Exact.  Keys with the same candidate set are aggregated first.  By max-flow/min-cut (Hall's
    condition), the optimum is max over worker subsets S of w(keys whose set lies inside S) / |S|:
    ``method="subsets"`` evaluates it over all 2^n subsets with a subset-sum transform (used by
    "auto" for n <= 20); ``method="lp"`` solves min T s.t. sum_{j in set s} x_{s,j} = W_s,
    sum_s x_{s,j} <= T with HiGHS (used by "auto" for larger n).
    """
    w = _check_weights(weights)
    n = int(n)
    if n < 1:
        raise SkewbenchError(f"need at least one worker, got n={n}")
    sets = _normalise_sets(candidates, n)
    if sets.shape[0] != w.size:
        raise SkewbenchError(f"{w.size} key loads but {sets.shape[0]} candidate rows")
    if sets.shape[1] == 0 and w.size:
        raise SkewbenchError("every key needs at least one candidate worker")
    keep = w > 0
    if not keep.any():
        return 0.0
    uniq, inv = np.unique(sets[keep], axis=0, return_inverse=True)
    W = np.bincount(inv.ravel(), weights=w[keep], minlength=uniq.shape[0])
    if method == "auto":
        method = "subsets" if n <= 20 else "lp"
    if method == "subsets":
        if n > 26:
            raise SkewbenchError("the subset method needs n <= 26 workers")
        bits = np.where(uniq >= 0, np.left_shift(np.int64(1), np.maximum(uniq, 0)), 0)
        masks = np.bitwise_or.reduce(bits, axis=1)
        f = np.zeros(1 << n, dtype=np.float64)
        np.add.at(f, masks, W)
        idx = np.arange(1 << n)
        for b in range(n):  # f(S) = sum over masks contained in S
            hi = (idx >> b) & 1 == 1
            f[hi] += f[idx[hi] ^ (1 << b)]
        size = np.zeros(1 << n, dtype=np.int64)
        for b in range(n):
            size += (idx >> b) & 1
        size[0] = 1
        return float(np.max(f / size))
    if method != "lp":
        raise SkewbenchError(f"unknown method '{method}' (auto, subsets, lp)")
    Sn = uniq.shape[0]
    r_idx, c_pos = np.nonzero(uniq >= 0)
    worker = uniq[r_idx, c_pos]
    nx = r_idx.size
    tcol = nx
    rows = np.concatenate([r_idx, Sn + worker, Sn + np.arange(n)])
    cols = np.concatenate([np.arange(nx), np.arange(nx), np.full(n, tcol)])
    vals = np.concatenate([np.ones(nx), np.ones(nx), -np.ones(n)])
    A = CSR.from_triplets(rows, cols, vals, (Sn + n, nx + 1))
    lo = np.concatenate([W, np.full(n, -np.inf)])
    hi = np.concatenate([W, np.zeros(n)])
    c = np.zeros(nx + 1); c[tcol] = 1.0
    sol = solve_lp_or_milp(c, A, lo, hi, np.zeros(nx + 1), np.full(nx + 1, np.inf), None, maximize=False,
                           time_limit=600.0)
    if sol.status != "optimal" or sol.objective is None:
        raise SkewbenchError(f"best_split LP ended with status {sol.status}")
    return float(sol.objective)
