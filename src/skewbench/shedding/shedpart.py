"""ShedPart: load balance for keyed windowed aggregation through per-group shedding -- the
window machinery every partition shedder of :mod:`skewbench.shedding.strategies` runs on.

Implements Katsipoulakis, Labrinidis, Chrysanthis, "Improving Stream Load Balance through
Shedding", following ``shedpart.spec.md`` ("spec"; "A7" is entry A7 of the spec's section 6,
"2.5" a spec section).

Model
-----
A stream of tuples ``(tau, k, x)`` (event time in seconds, int64 group key >= 0, float64 value)
is routed tuple by tuple, in arrival order, to ``V`` workers by the strategy's own ``route``
method (:meth:`skewbench.shedding.strategies.PartitionStrategy.route`: Storm fields grouping,
PKG or shuffle grouping, :mod:`skewbench.shedding.strategies.partition`), which also gives each
group's routing set ``R(g)``, the workers ShedPart trims it over.

Windows (A12): window ``k`` (an integer, its ``window_id``) is ``[k*s, k*s + r)`` -- aligned to
multiples of the slide ``s`` -- and holds the tuples with ``k*s <= tau < k*s + r``.  A window is
*complete* when it lies inside the observed span: ``k*s >= span[0]`` and ``k*s + r <= span[1]``,
with ``span = (ts[0], ts[-1])`` by default (the watermark of window ``k`` is the first tuple with
``tau >= k*s + r``).  Only complete windows are reported, in increasing ``k``.  Each window has
its own state (counts, loads, per-(group, worker) counts, Welford records, Count-Min sketch and
the incrementally maintained pre-check sums ``D_sum``/``Dhat_sum``), updated by every tuple in
the window in arrival order (one njit pass per window over its contiguous tuple range).

Heavy hitters (2.3): ``mode="exact"`` keeps exact counts and Welford records for every group; a
group is heavy when its count reaches ``T_g`` and then ``N = n1 = count``.  ``mode="paper"``
counts cold groups in a Count-Min sketch (width 2719, depth 5, rows hashed with splitmix64 of
the key XOR a fixed per-row salt); a cold tuple whose estimate is ``>= T_g - 1`` promotes its
group (the promoting value is the first one kept, so without collisions the promotion happens on
the ``T_g``-th tuple), and ``N = count_H + T_g - 1`` (A10), ``n1 = count_H`` (A4).  (For
``T_g = 1`` the ``c = 0`` branch of the spec's line 10 would delay promotion to the second tuple;
testing ``c >= T_g - 1`` first promotes on the first tuple and is identical for ``T_g >= 2``.)

At each watermark (2.5): ``P_w = 100 * (D_sum - Dhat_sum) / |S^w|`` with
``Dhat_sum = sum_H min(n_hat_g, N_g)`` (A9; ``precheck_literal=True`` uses ``|D_sum - sum n_hat|``
unclipped, infinite when some ``n_hat`` is).  ``P_w < precheck`` (strict) skips Algorithm 1; an
empty window never runs it.  Otherwise :func:`shedpart_window` runs Algorithm 1 over the heavy
groups (terminating loop A1, literal full scan A7 or the early-exit variant ShedPart-EE,
UPDATE_LOAD with largest-remainder split for multi-worker routings A14).  ``SAMPLE_SIZE`` is
:func:`sample_size` (2.4 with A2-A5).

Worker side (2.6): for a trimmed group each worker ``j`` aggregates a simple random sample
without replacement of ``s_{g,j}`` of its ``C[g, j]`` tuples: tuple number ``p`` (arrival order
among the group's tuples on that worker in the window) gets the random key
``mix64(mix64(mix64(mix64(mix64(seed) ^ window_id) ^ key) ^ j) + p)`` and the ``s_{g,j}``
smallest keys are kept (A21).  AVG estimate ``sum_j C[g,j] * mean_j / N_g`` (stratified).

Everything but ``t_sp_ns`` is a deterministic function of the inputs and ``seed``; routing,
loads and imbalance do not depend on ``seed`` (only on the routing and ``hash_seed``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from skewbench.jit import njit

from skewbench.errors import SkewbenchError
from skewbench.hashing import mix64

__all__ = [
    "MODES", "Z_RULES", "CMS_WIDTH", "CMS_DEPTH",
    "z_value", "sample_size", "precheck_value", "shedpart_window",
    "ShedPartConfig", "Windows", "window_range", "replay", "count_min", "srs_positions", "imbalance",
]

MODES = ("exact", "paper")
Z_RULES = ("two-sided", "one-sided")
CMS_WIDTH = 2719
CMS_DEPTH = 5
_CMS_SALT = 0xC0FFEE5EED


# --------------------------------------------------------------------------------------------
# paper mode's Count-Min sketch

@njit(cache=True)
def _cms_salts(depth):
    out = np.empty(depth, dtype=np.uint64)
    for d in range(depth):
        out[d] = mix64(np.uint64(_CMS_SALT) + np.uint64(d))
    return out


@njit(cache=True)
def _cms_query(table, k, salts, width):
    """The Count-Min estimate of uint64 key ``k``: its smallest cell over the rows."""
    w = np.uint64(width)
    m = np.int64(1) << 62
    for d in range(salts.shape[0]):
        c = table[d * width + np.int64(mix64(k ^ salts[d]) % w)]
        if c < m:
            m = c
    return m


@njit(cache=True)
def _count_min(keys, width, depth):
    salts = _cms_salts(depth)
    table = np.zeros(depth * width, dtype=np.int64)
    w = np.uint64(width)
    for i in range(keys.shape[0]):
        k = np.uint64(keys[i])
        for d in range(depth):
            table[d * width + np.int64(mix64(k ^ salts[d]) % w)] += 1
    est = np.empty(keys.shape[0], dtype=np.int64)
    for i in range(keys.shape[0]):
        est[i] = _cms_query(table, np.uint64(keys[i]), salts, width)
    return est


def count_min(keys: np.ndarray, width: int = CMS_WIDTH, depth: int = CMS_DEPTH) -> np.ndarray:
    """Insert every key once into the window sketch used by paper mode; return each key's
    estimate (the true count plus collisions, never less)."""
    return _count_min(np.asarray(keys, dtype=np.int64), int(width), int(depth))


# --------------------------------------------------------------------------------------------
# sampling statistics

def z_value(confidence: float, rule: str = "two-sided") -> float:
    """Normal quantile for ``confidence``: ``Phi^-1((1+a)/2)`` (two-sided, A3) or ``Phi^-1(a)``."""
    if not 0.0 < confidence < 1.0:
        raise SkewbenchError(f"confidence must be in (0, 1), got {confidence}")
    if rule == "two-sided":
        return NormalDist().inv_cdf((1.0 + confidence) / 2.0)
    if rule == "one-sided":
        return NormalDist().inv_cdf(confidence)
    raise SkewbenchError(f"unknown z rule {rule!r}; expected one of {Z_RULES}")


@njit(cache=True)
def _nreq(n1, mean, var, error, z, n_min):
    """SAMPLE_SIZE of spec 2.4 (A2-A5), compiled: see :func:`sample_size`."""
    if error <= 0.0 or n1 < 2 or abs(mean) < 1e-12:
        return np.inf
    if z == 0.0:
        return float(n_min)
    t = error * abs(mean) / z
    n = (var / (t * t)) * (1.0 + 2.0 / n1)
    if not np.isfinite(n):
        return np.inf
    c = math.ceil(n)
    return float(n_min) if n_min > c else float(c)


def sample_size(N, n1, mean, var, error: float, z: float, n_min: int = 1) -> float:
    """SAMPLE_SIZE of spec 2.4 (A2-A5): ``math.inf`` (cannot certify) or an integer-valued float.

    ``N`` is accepted but unused (no finite-population correction, A4).  Runs the window
    kernel's rule as plain Python (exact integers for any size).
    """
    return float(_nreq.py_func(n1, mean, var, error, z, n_min))


def precheck_value(heavy, size: int, error: float, z: float, n_min: int = 1,
                   literal: bool = False) -> float:
    """Pre-check ``P_w`` in percent from scratch; ``heavy`` holds ``(N, n1, mean, var)`` of the
    heavy groups.  Clipped (A9) unless ``literal``; 0 for an empty window."""
    if size <= 0:
        return 0.0
    d = 0
    dh = 0
    fin = 0.0
    inf = False
    for N, n1, mean, var in heavy:
        nh = sample_size(N, n1, mean, var, error, z, n_min)
        d += int(N)
        dh += int(N) if nh >= N else int(nh)
        if math.isinf(nh):
            inf = True
        else:
            fin += nh
    if literal:
        return math.inf if inf else 100.0 * abs(d - fin) / size
    return 100.0 * (d - dh) / size


# --------------------------------------------------------------------------------------------
# Algorithm 1

def _split(s: int, counts) -> list[int]:
    """A14: ``s`` over the workers in proportion to ``counts`` (largest remainder, ties to the
    earlier worker), each share >= 1 where the count is > 0 and <= the count."""
    total = sum(counts)
    m = len(counts)
    if total <= 0:
        return [0] * m
    base = [s * c // total for c in counts]
    rem = [s * c % total for c in counts]
    left = s - sum(base)
    for i in sorted(range(m), key=lambda i: -rem[i])[:max(left, 0)]:
        base[i] += 1
    return [min(c, max(b, 1)) if c > 0 else 0 for b, c in zip(base, counts)]


def shedpart_window(loads, groups, error, z, n_min=1, early_exit=False, order="frequency"):
    """Algorithm 1 (spec 2.5) on one window.

    ``groups``: heavy groups as ``(key, workers, N, n1, mean, var, counts)`` with ``workers`` the
    routing set ``R(g)`` and ``counts`` the group's tuples on each of them (same order).
    ``order="frequency"`` sorts each worker's list by ``N`` descending then key (A6);
    ``order="given"`` keeps the order of ``groups`` (for the order-invariance test).

    Returns ``(trim_info, loads_after, info)``: ``trim_info`` maps key -> ``s_g``; ``info`` has
    ``passes`` (loop iterations, the final non-trimming one included), ``jstar`` (j* of each
    pass), ``blacklisted`` (set of keys), ``examined`` (keys in examination order) and
    ``shares`` (key -> {worker: s_gj}).  Each worker's list is scanned once (cursor), so the
    cost is ``O(sum_j |G_j|)`` after sorting.
    """
    L = np.array(loads, dtype=np.int64).copy()
    V = L.shape[0]
    lists: list[list[int]] = [[] for _ in range(V)]
    for idx, grp in enumerate(groups):
        for j in grp[1]:
            lists[j].append(idx)
    if order == "frequency":
        for lst in lists:
            lst.sort(key=lambda i: (-groups[i][2], groups[i][0]))
    elif order != "given":
        raise SkewbenchError(f"unknown order {order!r}")
    cursor = [0] * V
    decided = [False] * len(groups)
    trim: dict = {}
    shares: dict = {}
    black: set = set()
    examined: list = []
    jstars: list[int] = []
    while True:
        changed = False
        js = int(np.argmax(L))                       # ties -> smallest index
        jstars.append(js)
        lst = lists[js]
        if not lst:
            break
        while cursor[js] < len(lst):
            if early_exit and V > 1:
                other = max(int(L[j]) for j in range(V) if j != js)
                if L[js] < other:
                    break
            idx = lst[cursor[js]]
            cursor[js] += 1
            if decided[idx]:
                continue
            decided[idx] = True
            key, workers, N, n1, mean, var, counts = groups[idx]
            examined.append(key)
            s = sample_size(N, n1, mean, var, error, z, n_min)
            if s < N:
                changed = True
                s = int(s)
                if len(workers) == 1:
                    L[workers[0]] -= int(N) - s
                    shares[key] = {int(workers[0]): s}
                else:
                    sj = _split(s, [int(c) for c in counts])
                    for j, c, q in zip(workers, counts, sj):
                        L[j] -= int(c) - q
                    shares[key] = {int(j): q for j, q in zip(workers, sj)}
                trim[key] = s
            else:
                black.add(key)
        if not changed:
            break
    info = {"passes": len(jstars), "jstar": jstars, "blacklisted": black,
            "examined": examined, "shares": shares}
    return trim, L, info


def imbalance(loads) -> np.ndarray:
    """Eq. 1 per row: ``max_j L[j] - mean_j L[j]``."""
    a = np.asarray(loads, dtype=np.float64)
    return a.max(axis=-1) - a.mean(axis=-1)


# --------------------------------------------------------------------------------------------
# per-window accumulation kernel

@njit(cache=True)
def _window_stats(a, b, gid, wk, vals, keys, V, paper, tg, error, z, n_min,
                  cnt, gsum, hcnt, mean, m2, inh, cN, cH, cF, cI, C, touched, cms, salts, width):
    """One window: tuples ``a..b-1`` in arrival order (spec 2.3).  Workspace arrays are indexed
    by dense group id and are zero again on return."""
    L = np.zeros(V, dtype=np.int64)
    nt = 0
    d_sum = 0
    dh_sum = 0
    f_sum = 0.0
    n_inf = 0
    depth = salts.shape[0]
    uw = np.uint64(width)
    if paper:
        cms[:] = 0
    for i in range(a, b):
        g = gid[i]
        j = wk[i]
        x = vals[i]
        if cnt[g] == 0:
            touched[nt] = g
            nt += 1
        cnt[g] += 1
        gsum[g] += x
        C[g * V + j] += 1
        L[j] += 1
        if paper and not inh[g]:
            k = np.uint64(keys[i])
            est = _cms_query(cms, k, salts, width)
            if est >= tg - 1:
                inh[g] = True                      # promote; this value is the first kept
            else:
                for d in range(depth):
                    cms[d * width + np.int64(mix64(k ^ salts[d]) % uw)] += 1
                continue
        # Welford (exact mode: every tuple; paper mode: heavy hitters only)
        hcnt[g] += 1
        dl = x - mean[g]
        mean[g] += dl / hcnt[g]
        m2[g] += dl * (x - mean[g])
        if not paper:
            if hcnt[g] < tg:
                continue
            inh[g] = True
            N = hcnt[g]
        else:
            N = hcnt[g] + tg - 1
        n1 = hcnt[g]
        var = m2[g] / (n1 - 1) if n1 >= 2 else np.nan
        nh = _nreq(n1, mean[g], var, error, z, n_min)
        clip = N if nh >= N else np.int64(nh)
        # REFRESH_ESTIMATE: replace the group's old contribution
        d_sum += N - cN[g]
        dh_sum += clip - cH[g]
        cN[g] = N
        cH[g] = clip
        if np.isinf(nh):
            if not cI[g]:
                n_inf += 1
                f_sum -= cF[g]
                cF[g] = 0.0
                cI[g] = True
        else:
            if cI[g]:
                n_inf -= 1
                cI[g] = False
            f_sum += nh - cF[g]
            cF[g] = nh
    ids = np.sort(touched[:nt])
    o_cnt = np.empty(nt, dtype=np.int64)
    o_sum = np.empty(nt, dtype=np.float64)
    o_heavy = np.empty(nt, dtype=np.bool_)
    o_n = np.empty(nt, dtype=np.int64)
    o_n1 = np.empty(nt, dtype=np.int64)
    o_mean = np.empty(nt, dtype=np.float64)
    o_var = np.empty(nt, dtype=np.float64)
    o_c = np.empty((nt, V), dtype=np.int64)
    for t in range(nt):
        g = ids[t]
        o_cnt[t] = cnt[g]
        o_sum[t] = gsum[g]
        o_heavy[t] = inh[g]
        o_n[t] = cN[g]
        o_n1[t] = hcnt[g]
        o_mean[t] = mean[g] if hcnt[g] > 0 else np.nan
        o_var[t] = m2[g] / (hcnt[g] - 1) if hcnt[g] >= 2 else np.nan
        for j in range(V):
            o_c[t, j] = C[g * V + j]
            C[g * V + j] = 0
        cnt[g] = 0
        gsum[g] = 0.0
        hcnt[g] = 0
        mean[g] = 0.0
        m2[g] = 0.0
        inh[g] = False
        cN[g] = 0
        cH[g] = 0
        cF[g] = 0.0
        cI[g] = False
    return (ids, o_cnt, o_sum, o_heavy, o_n, o_n1, o_mean, o_var, o_c, L,
            d_sum, dh_sum, f_sum, n_inf)


@njit(cache=True)
def _rkey_base(seed, window_id, key, worker):
    h = mix64(np.uint64(seed))
    h = mix64(h ^ np.uint64(window_id))
    h = mix64(h ^ np.uint64(key))
    return mix64(h ^ np.uint64(worker))


@njit(cache=True)
def _srs(n, m, seed, window_id, key, worker):
    """Positions (sorted) of an SRS without replacement of ``m`` out of ``n``: the ``m``
    smallest random keys."""
    base = _rkey_base(seed, window_id, key, worker)
    rk = np.empty(n, dtype=np.uint64)
    for p in range(n):
        rk[p] = mix64(base + np.uint64(p))
    order = np.argsort(rk, kind="mergesort")
    return np.sort(order[:m])


def srs_positions(n: int, m: int, seed: int, window_id: int, key: int, worker: int = 0):
    """The arrival positions (0..n-1, sorted) kept when a worker samples ``m`` of the ``n``
    tuples of group ``key`` in window ``window_id`` (A21); exactly what :func:`replay` uses."""
    return _srs(int(n), int(min(m, n)), int(seed), int(window_id), int(key), int(worker))


@njit(cache=True)
def _sample_sums(a, b, gid, wk, vals, ukeys, V, share, seed, window_id):
    """For each trimmed (g, j) (``share[g*V+j] >= 0``): sum and size of the worker's sample.

    Returns flat arrays over g*V+j of the sample sum and count (count -1: not trimmed)."""
    # gather the trimmed tuples per (g, j) in arrival order
    n = b - a
    sel = np.empty(n, dtype=np.int64)
    ns = 0
    for i in range(a, b):
        if share[gid[i] * V + wk[i]] >= 0:
            sel[ns] = i
            ns += 1
    cells = np.empty(ns, dtype=np.int64)
    for t in range(ns):
        cells[t] = gid[sel[t]] * V + wk[sel[t]]
    order = np.argsort(cells, kind="mergesort")       # stable: arrival order inside a cell
    # flat arrays, not dicts: a numba typed dict costs seconds of compiling in every process
    out_sum = np.zeros(share.shape[0])
    out_cnt = np.full(share.shape[0], -1, dtype=np.int64)
    t = 0
    while t < ns:
        c = cells[order[t]]
        u = t
        while u < ns and cells[order[u]] == c:
            u += 1
        m = u - t
        g = c // V
        j = c % V
        keep = _srs(m, min(share[c], m), seed, window_id, ukeys[g], j)
        s = 0.0
        for q in range(keep.shape[0]):
            s += vals[sel[order[t + keep[q]]]]
        out_sum[c] = s
        out_cnt[c] = keep.shape[0]
        t = u
    return out_sum, out_cnt


# --------------------------------------------------------------------------------------------
# configuration and replay

@dataclass(frozen=True)
class ShedPartConfig:
    """Parameters of one ShedPart (or routing-only, ``shed=False``) run; defaults of spec 2.8.
    The routing is the strategy's (``hash_seed`` seeds PKG's hashes)."""

    range_s: float
    slide_s: float
    workers: int = 4
    error: float = 0.10
    confidence: float = 0.95
    z_rule: str = "two-sided"
    threshold_g: int = 3
    precheck: float = 15.0
    precheck_literal: bool = False
    mode: str = "exact"
    early_exit: bool = False
    n_min: int = 1
    shed: bool = True
    hash_seed: int = 0

    def __post_init__(self):
        def bad(msg):
            raise SkewbenchError(f"ShedPartConfig: {msg}")
        if not (math.isfinite(self.range_s) and self.range_s > 0):
            bad(f"range_s must be a positive number, got {self.range_s}")
        if not (math.isfinite(self.slide_s) and 0 < self.slide_s <= self.range_s):
            bad(f"slide_s must be in (0, range_s={self.range_s}], got {self.slide_s}")
        if int(self.workers) != self.workers or self.workers < 1:
            bad(f"workers must be an integer >= 1, got {self.workers}")
        if not (math.isfinite(self.error) and self.error >= 0):
            bad(f"error must be a number >= 0, got {self.error}")
        if not 0.0 < self.confidence < 1.0:
            bad(f"confidence must be in (0, 1), got {self.confidence}")
        if self.z_rule not in Z_RULES:
            bad(f"unknown z_rule {self.z_rule!r}; expected one of {Z_RULES}")
        if int(self.threshold_g) != self.threshold_g or self.threshold_g < 1:
            bad(f"threshold_g must be an integer >= 1, got {self.threshold_g}")
        if math.isnan(self.precheck):
            bad("precheck must be a number (percent)")
        if self.mode not in MODES:
            bad(f"unknown mode {self.mode!r}; expected one of {MODES}")
        if int(self.n_min) != self.n_min or self.n_min < 1:
            bad(f"n_min must be an integer >= 1, got {self.n_min}")


@dataclass
class Windows:
    """One entry per complete window, in window order (see the module docstring).

    ``window_id`` is ``k`` with ``start = k * slide_s``.  ``groups`` (only with
    ``replay(..., details=True)``) holds one dict per window: per-group arrays ``key``, ``N``
    (exact count), ``heavy``, ``N_est`` (Alg. 1's ``N``; 0 when cold), ``n1``, ``mean``,
    ``var`` (Welford over the tracked values), ``s`` (-1 if not trimmed), ``blacklisted``,
    ``m`` (tuples aggregated), ``exact``, ``approx``, ``err``; scalars ``d_sum``, ``dhat_sum``
    (incremental pre-check sums), ``passes``, ``examined``.
    """

    start: np.ndarray
    end: np.ndarray
    size: np.ndarray
    n_groups: np.ndarray
    n_heavy: np.ndarray
    loads: np.ndarray
    loads_after: np.ndarray
    ran: np.ndarray
    precheck: np.ndarray
    t_sp_ns: np.ndarray
    n_trimmed: np.ndarray
    n_blacklisted: np.ndarray
    shed_tuples: np.ndarray
    err_mean: np.ndarray
    err_max: np.ndarray
    trimmed_pairs: np.ndarray
    covered_pairs: np.ndarray
    window_id: np.ndarray
    groups: list | None = None

    def __len__(self) -> int:
        return int(self.size.shape[0])


def window_range(t0: float, t1: float, r: float, s: float) -> tuple[int, int]:
    """First and last k with ``k*s >= t0`` and ``k*s + r <= t1`` (floating point as used)."""
    k0 = math.ceil(t0 / s)
    while (k0 - 1) * s >= t0:
        k0 -= 1
    while k0 * s < t0:
        k0 += 1
    k1 = math.floor((t1 - r) / s)
    while (k1 + 1) * s + r <= t1:
        k1 += 1
    while k1 * s + r > t1:
        k1 -= 1
    return k0, k1


def _stream(ts, keys, values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The checked stream: float64 times, int64 keys >= 0 and finite float64 values."""
    ts = np.ascontiguousarray(ts, dtype=np.float64)
    keys = np.asarray(keys)
    values = np.ascontiguousarray(values, dtype=np.float64)
    if ts.ndim != 1 or keys.ndim != 1 or values.ndim != 1:
        raise SkewbenchError("replay: ts, keys and values must be 1-D arrays")
    if not (ts.shape[0] == keys.shape[0] == values.shape[0]):
        raise SkewbenchError(f"replay: ts, keys and values differ in length "
                             f"({ts.shape[0]}, {keys.shape[0]}, {values.shape[0]})")
    if keys.shape[0] and not np.issubdtype(keys.dtype, np.integer):
        raise SkewbenchError(f"replay: keys must be integers, got dtype {keys.dtype}")
    keys = keys.astype(np.int64)
    if keys.shape[0] and keys.min() < 0:
        raise SkewbenchError("replay: keys must be >= 0")
    if not np.all(np.isfinite(ts)):
        raise SkewbenchError("replay: ts must be finite")
    if ts.shape[0] > 1 and np.any(np.diff(ts) < 0):
        raise SkewbenchError("replay: ts must be non-decreasing (event-time order)")
    if not np.all(np.isfinite(values)):
        raise SkewbenchError("replay: values must be finite")
    return ts, keys, values


def _route(router, keys: np.ndarray, V: int, hash_seed: int):
    """Dense group ids, the distinct keys, each tuple's worker and each group's routing set."""
    if not callable(getattr(router, "route", None)):
        raise SkewbenchError(f"replay: the strategy must have a route method, got {type(router).__name__}")
    ukeys, gid = np.unique(keys, return_inverse=True)
    gid = gid.astype(np.int64).ravel()
    wk, rsets = router.route(ukeys, gid, V, hash_seed)
    wk = np.ascontiguousarray(wk, dtype=np.int64)
    if wk.shape != gid.shape or (wk.shape[0] and (wk.min() < 0 or wk.max() >= V)):
        raise SkewbenchError(f"replay: {type(router).__name__}.route must give each tuple a worker in [0, {V})")
    if len(rsets) != ukeys.shape[0]:
        raise SkewbenchError(f"replay: {type(router).__name__}.route must give each key a routing set")
    return ukeys, gid, wk, rsets


def _windows(ts: np.ndarray, span, r: float, s: float):
    """The complete windows: their ids ``k``, starts, ends and tuple ranges ``lo[w]:hi[w]``."""
    if ts.shape[0] == 0 and span is None:
        k0, k1 = 0, -1
    else:
        t0, t1 = (float(ts[0]), float(ts[-1])) if span is None else map(float, span)
        k0, k1 = window_range(t0, t1, r, s)
    kk = np.arange(k0, max(k1 + 1, k0), dtype=np.int64)
    starts = kk.astype(np.float64) * s
    ends = starts + r
    return kk, starts, ends, np.searchsorted(ts, starts, side="left"), np.searchsorted(ts, ends, side="left")


class _Workspace:
    """The per-group arrays :func:`_window_stats` updates (zero again after each window)."""

    def __init__(self, K: int, V: int, paper: bool):
        self.cnt = np.zeros(K, np.int64)
        self.gsum = np.zeros(K, np.float64)
        self.hcnt = np.zeros(K, np.int64)
        self.mean = np.zeros(K, np.float64)
        self.m2 = np.zeros(K, np.float64)
        self.inh = np.zeros(K, np.bool_)
        self.cN = np.zeros(K, np.int64)
        self.cH = np.zeros(K, np.int64)
        self.cF = np.zeros(K, np.float64)
        self.cI = np.zeros(K, np.bool_)
        self.C = np.zeros(K * V, np.int64)
        self.touched = np.zeros(K, np.int64)
        self.cms = np.zeros(CMS_DEPTH * CMS_WIDTH if paper else 1, np.int64)
        self.salts = _cms_salts(CMS_DEPTH)
        self.share = np.full(K * V, -1, np.int64)


def _precheck(cfg: ShedPartConfig, size: int, d_sum, dh_sum, f_sum, n_inf) -> float:
    """``P_w`` from the window's incremental sums (spec 2.5, A9)."""
    if size == 0:
        return 0.0
    if cfg.precheck_literal:
        return math.inf if n_inf > 0 else 100.0 * abs(d_sum - f_sum) / size
    return 100.0 * (d_sum - dh_sum) / size


def _heavy_groups(hidx, ids, rsets, g_n, g_n1, g_mean, g_var, g_c) -> list:
    """Algorithm 1's input: the window's heavy groups as :func:`shedpart_window` takes them."""
    grp = []
    for t in hidx.tolist():
        g = int(ids[t])
        R = rsets[g]
        grp.append((g, R, int(g_n[t]), int(g_n1[t]), float(g_mean[t]),
                    float(g_var[t]), tuple(int(g_c[t, j]) for j in R)))
    return grp


def _evaluate(st: dict, trim: dict, info: dict, span: tuple[int, int], arrays: tuple, V: int, seed: int,
              window_id: int, ws: _Workspace, err: float) -> dict:
    """Worker side of the trimmed groups (spec 2.6): each worker's sample of its tuples, the
    stratified AVG estimate and its relative error.  Returns the per-group estimate, error and
    tuples aggregated, and the window's error summary."""
    a, b = span
    gid, wk, values, ukeys = arrays
    share = ws.share
    for g, sh in info["shares"].items():
        for j, q in sh.items():
            share[g * V + j] = q
    ssum, scnt = _sample_sums(a, b, gid, wk, values, ukeys, V, share, int(seed), int(window_id))
    for g, sh in info["shares"].items():
        for j in sh:
            share[g * V + j] = -1
    t_of = {int(g): t for t, g in enumerate(st["ids"].tolist())} if len(trim) else {}
    errs = []
    covered = 0
    out: dict = {"e": {}, "approx": {}, "m": {}}
    for g in trim:
        t = t_of[g]
        Ng = int(st["cnt"][t])
        exact = st["sum"][t] / Ng
        est = 0.0
        mm = 0
        for j in range(V):
            c = int(st["c"][t, j])
            if c == 0:
                continue
            cell = g * V + j           # every worker holding g has a share >= 1
            est += c * (ssum[cell] / scnt[cell])
            mm += scnt[cell]
        est /= Ng
        out["approx"][g] = est
        out["m"][g] = mm
        if exact != 0.0:
            e = abs(est - exact) / abs(exact)
            out["e"][g] = e
            errs.append(e)
            covered += e <= err
    nz = int(np.count_nonzero(st["sum"] != 0.0))
    out["pairs"] = len(errs)
    out["covered"] = covered
    out["err_mean"] = float(np.sum(np.array(errs))) / nz if errs and nz else 0.0
    out["err_max"] = max(errs) if errs and nz else 0.0
    return out


def _details(st: dict, trim: dict, info: dict | None, ev: dict | None, ukeys: np.ndarray) -> dict:
    """One window's per-group details (``replay(..., details=True)``)."""
    ids, g_cnt = st["ids"], st["cnt"]
    G = ids.shape[0]
    sarr = np.full(G, -1, np.int64)
    barr = np.zeros(G, np.bool_)
    marr = g_cnt.copy()
    exact_arr = st["sum"] / g_cnt
    approx_arr = exact_arr.copy()
    earr = np.zeros(G, np.float64)
    bl = info["blacklisted"] if info else set()
    for t, g in enumerate(ids.tolist()):
        if g in trim:
            sarr[t] = trim[g]
            marr[t] = ev["m"][g]
            approx_arr[t] = ev["approx"][g]
            earr[t] = ev["e"].get(g, 0.0)
        barr[t] = g in bl
    return {
        "key": ukeys[ids], "N": g_cnt, "heavy": st["heavy"], "N_est": st["n"], "n1": st["n1"],
        "mean": st["mean"], "var": st["var"], "counts": st["c"], "s": sarr, "blacklisted": barr,
        "m": marr, "exact": exact_arr, "approx": approx_arr, "err": earr,
        "d_sum": int(st["d_sum"]), "dhat_sum": int(st["dh_sum"]),
        "passes": info["passes"] if info else 0,
        "examined": [int(ukeys[g]) for g in info["examined"]] if info else [],
    }


_STAT_NAMES = ("ids", "cnt", "sum", "heavy", "n", "n1", "mean", "var", "c", "L", "d_sum", "dh_sum", "f_sum", "n_inf")
_COUNTS = ("size", "n_groups", "n_heavy", "t_sp_ns", "n_trimmed", "n_blacklisted", "shed_tuples", "trimmed_pairs",
           "covered_pairs")


def replay(strategy, ts: np.ndarray, keys: np.ndarray, values: np.ndarray, config: ShedPartConfig,
           seed: int = 0, *, span: tuple[float, float] | None = None,
           details: bool = False) -> Windows:
    """Route the stream with ``strategy`` (its ``route`` method), run ShedPart at every complete
    window's watermark when ``config.shed`` and evaluate AVG.

    ``span`` overrides the observed span ``(ts[0], ts[-1])`` that decides completeness.
    """
    ts, keys, values = _stream(ts, keys, values)
    if not isinstance(config, ShedPartConfig):
        raise SkewbenchError("replay: config must be a ShedPartConfig")
    cfg = config
    V = int(cfg.workers)
    ukeys, gid, wk, rsets = _route(strategy, keys, V, int(cfg.hash_seed))  # independent of windows and seed
    kk, starts, ends, lo, hi = _windows(ts, span, float(cfg.range_s), float(cfg.slide_s))
    W = kk.shape[0]
    z = z_value(cfg.confidence, cfg.z_rule)
    paper = cfg.mode == "paper"
    err = float(cfg.error)
    ws = _Workspace(ukeys.shape[0], V, paper)
    out = {name: np.zeros(W, np.int64) for name in _COUNTS}
    loads = np.zeros((W, V), np.int64)
    loads_after = np.zeros((W, V), np.int64)
    ran = np.zeros(W, np.bool_)
    pre = np.zeros(W, np.float64)
    err_mean = np.zeros(W, np.float64)
    err_max = np.zeros(W, np.float64)
    glist = [] if details else None
    for w in range(W):
        a, b = int(lo[w]), int(hi[w])
        st = dict(zip(_STAT_NAMES, _window_stats(
            a, b, gid, wk, values, keys, V, paper, int(cfg.threshold_g), err, z, int(cfg.n_min), ws.cnt, ws.gsum,
            ws.hcnt, ws.mean, ws.m2, ws.inh, ws.cN, ws.cH, ws.cF, ws.cI, ws.C, ws.touched, ws.cms, ws.salts,
            CMS_WIDTH)))
        size = b - a
        L = st["L"]
        out["size"][w] = size
        out["n_groups"][w] = st["ids"].shape[0]
        hidx = np.flatnonzero(st["heavy"])
        out["n_heavy"][w] = hidx.shape[0]
        loads[w] = L
        t_start = time.perf_counter_ns()
        pre[w] = pw = _precheck(cfg, size, st["d_sum"], st["dh_sum"], st["f_sum"], st["n_inf"])
        trim: dict = {}
        info = None
        Lp = L
        if cfg.shed and size > 0 and not pw < cfg.precheck:
            grp = _heavy_groups(hidx, st["ids"], rsets, st["n"], st["n1"], st["mean"], st["var"], st["c"])
            trim, Lp, info = shedpart_window(L, grp, err, z, int(cfg.n_min), cfg.early_exit)
            ran[w] = True
        t_sp = time.perf_counter_ns() - t_start
        out["t_sp_ns"][w] = t_sp if cfg.shed else 0
        loads_after[w] = Lp
        out["n_trimmed"][w] = len(trim)
        out["n_blacklisted"][w] = len(info["blacklisted"]) if info else 0
        out["shed_tuples"][w] = int(L.sum() - Lp.sum())
        ev = None
        if trim:
            ev = _evaluate(st, trim, info, (a, b), (gid, wk, values, ukeys), V, seed, int(kk[w]), ws, err)
            out["trimmed_pairs"][w] = ev["pairs"]
            out["covered_pairs"][w] = ev["covered"]
            err_mean[w] = ev["err_mean"]
            err_max[w] = ev["err_max"]
        if details:
            glist.append(_details(st, trim, info, ev, ukeys))
    return Windows(start=starts, end=ends, size=out["size"], n_groups=out["n_groups"],
                   n_heavy=out["n_heavy"], loads=loads, loads_after=loads_after, ran=ran,
                   precheck=pre, t_sp_ns=out["t_sp_ns"], n_trimmed=out["n_trimmed"],
                   n_blacklisted=out["n_blacklisted"], shed_tuples=out["shed_tuples"],
                   err_mean=err_mean, err_max=err_max, trimmed_pairs=out["trimmed_pairs"],
                   covered_pairs=out["covered_pairs"], window_id=kk, groups=glist)
