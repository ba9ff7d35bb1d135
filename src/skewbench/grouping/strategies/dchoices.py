"""Key grouping, shuffle grouping, PKG, D-Choices, W-Choices, Round-Robin head and fixed-d.

Implements the partitioning schemes of Nasir, De Francisci Morales, Kourtellis, Serafini, "When
Two Choices Are not Enough: Balancing at Scale in Distributed Stream Processing" (ICDE 2016),
following ``dchoices.spec.md`` ("spec").  References: "spec A7" is entry A7 of the spec's
section 6 (ambiguities and choices); "line A5" / "lines F1-F14" / "SS5" are lines of the
pseudocode in spec section 2 (D driver, K/S/P baselines, SS SpaceSaving, A head-aware router
2.5, F FindOptimalChoices 2.6).

Model (spec 1.3, 2.0)
---------------------
Tuple ``seq`` belongs to source ``j = seq % sources`` (line D3; spec A4, round robin).  Every
source decides with its own state only, which the strategy object keeps for all sources across
calls to :meth:`~skewbench.grouping.base.Strategy.route`:

* ``l_j[0..n-1]``: messages source ``j`` has sent to each worker, head and tail together;
* ``m_j``: messages source ``j`` has seen;
* a SpaceSaving sketch ``SS_j`` of capacity ``C`` (head-aware strategies only; never merged);
* ``d_j``: D-C's cached number of choices (2 until first computed, as in Algorithm 1);
* ``rr_j``: the RR head pointer, and (``sg``) the shuffle pointer over all messages.

Because all state is per source, feeding the whole stream at once, in batches of any size, or
each source's tuples to a separate object gives the same assignments.

Hash family: ``F_i(k) = hash_choice(k, seeds[i-1], n)`` with ``seeds = hash_seeds(seed, ...)``
from :mod:`skewbench.grouping.base` -- splitmix64 of the dense key id XOR a per-``i`` seed, then
fastrange, identical at every source.  Values are drawn with replacement (two ``F_i`` may name
the same worker; no re-draw) and candidate sets are the nested prefixes ``F_1..F_d`` (spec 2.0
items 1-3), so the tail's two choices are the first two head choices and KG's worker is ``F_1``.

``MinLoad(candidates, l_j)``: the first candidate with the smallest local load -- ``F_1``
before ``F_2`` ...; a scan over all workers returns the lowest index among the minima.

Strategies
----------
``kg``
    Key grouping, ``w = F_1(k)`` (lines K1-K3).  No parameters.
``sg``
    Shuffle grouping, per-source round robin starting at worker 0 (lines S1-S3).  Not seeded.
``pkg``
    Partial key grouping, ``MinLoad([F_1(k), F_2(k)], l_j)`` (lines P1-P3).  No parameters.
``dc``
    D-Choices (lines A1-A8 and A15 with 2.6): tail -> PKG; head -> ``MinLoad(F_1..F_{d_j})``
    with ``d_j = FindOptimalChoices(head estimate of SS_j)``; ``d_j >= n`` -> the head message
    scans all workers (W-C fallback).
``wc``
    W-Choices (lines A9-A10, 2.7): tail -> PKG; head -> ``MinLoad(all workers)``.
``rr``
    Round-Robin head (lines A11-A12, 2.8): tail -> PKG on ``l_j`` (which includes the head's
    load); head -> ``rr_j``, then ``rr_j = (rr_j + 1) mod n``.
``fixed-d``
    Greedy-``d*`` on the head with the given ``d`` (lines A13-A14, 2.9) for the Min-d sweep:
    ``d >= n`` scans all workers (then identical to ``wc``); ``d = 1`` uses ``F_1`` only (head
    messages then go where ``kg`` sends them); ``d = 2`` is exactly ``pkg`` when ``n > 2`` (with
    ``n <= 2`` it is ``d >= n``, i.e. ``wc``).

Head test (lines A2-A3, 2.4)
----------------------------
Every message is first offered to ``SS_j`` (SS1-SS7) and ``m_j`` incremented; the key is then
monitored, and it is *head* when

* ``mode="spec"`` (default): ``count >= theta * m_j``;
* ``mode="authors"``: ``(count + err) / m_j > theta`` (strict);

and, when ``warmup > 0``, only once ``m_j > warmup``.  ``H_j`` is the set of all monitored keys
passing the same test (warm-up aside).

SpaceSaving (SS1-SS9)
---------------------
One sketch per source, as a *stream summary*: arrays ``key/count/err`` of size ``C``, an
open-addressing hash table from key to slot (linear probing, backward-shift deletion, at most
half full), and buckets of equal counts in ascending order, each a FIFO list of its entries.
Every update is O(1).  ``ESTIMATE(x) = count`` (an upper bound, SS8); with ``C >= |K|`` the
counts are exact.  The sketch and its head test are the shared kernel pieces of
:mod:`skewbench.kernel.spacesaving` (Salt's hot-key selector runs the same).

FindOptimalChoices (lines F1-F14)
---------------------------------
Input: the estimated frequencies ``q`` of ``H_j``, sorted descending.  ``|H| = 0 -> 2``;
``P_H = min(1, sum q)``; ``d`` starts at ``max(2, ceil(q_1 n))`` and grows until every checked
prefix ``h`` satisfies ``Q_h + beta^d (P_H - Q_h) + beta^2 (1 - P_H) <= RHS`` with
``beta = b_h/n = 1 - (1 - 1/n)^(h d)``; ``n`` ("use all workers") when no ``d < n`` is feasible.
``mode="spec"`` checks every prefix with ``RHS = b_h (1/n + eps)``; ``mode="authors"`` only
``h in {1, |H|}`` with ``RHS = b_h/n + eps`` (equal or larger ``d``; this reproduces the
parenthetical values under the oracle table of spec 5.2).

Choices where the paper is ambiguous
------------------------------------
* spec A4 (messages to sources): round robin, ``seq % sources``.
* spec A5 (hashes): the seeded splitmix64 family above, with collisions, nested prefixes; KG
  uses ``F_1`` (not the authors' separate seed).
* spec A6 (MinLoad ties): first minimum in candidate order; lowest index for all workers.
* spec A7 (sketch): capacity ``max(100, ceil(4/theta))``, membership ``count >= theta m_j``;
  head mass clamped to 1 (line F3).  ``mode="authors"`` gives the authors' simulator: ``C =
  100`` (unless ``capacity`` is given), ``(count + err) / m_j > theta``, and -- our reading, since
  the estimator is the only one that code had -- frequency estimates ``(count + err) / m_j`` for
  FindOptimalChoices as well; plus the FindOptimalChoices variant of spec A10.
* SS5 (which minimum is evicted, "any tie"): among the entries with the minimum count, the one
  whose count changed (insertion or increment) the longest ago -- the first entry of the first
  bucket of the stream summary.  Deterministic, so the plain-Python reference reproduces it
  with ``min`` over ``(count, last update)``.
* spec A8 (warm-up): none by default (faithful to Algorithm 1); ``warmup = w`` makes the first
  ``w`` messages of every source tail while still feeding the sketch (spec suggests
  ``ceil(1/theta)``).
* spec A9 (refresh of ``d``): ``d_j`` is recomputed on a head message when it was never computed
  or when at least ``refresh`` messages of source ``j`` (head or tail) arrived since the last
  computation.  Default ``refresh = 1000`` (A9's value for sweeps; the spec's parameter table
  calls ``1`` the paper's per-message semantics -- pass ``refresh=1`` for it, and compare the two
  on one configuration per figure as A9 asks).  The head *membership* test stays exact per
  message.  ``d_j`` is one value per source shared by all its head keys (A10(d)).
* spec A10 (FindOptimalChoices): start ``max(2, ceil(q_1 n))``, Eq. (3) RHS, all prefixes by
  default; the authors' RHS and prefix set under ``mode="authors"``.
* spec A11 (``d >= n``): FindOptimalChoices returns ``n`` and the head message scans all workers,
  not ``n`` hashed choices.  ``summary()['wc_fallback_fraction']`` reports how often.
* spec A12 (load compared): messages sent, one vector ``l_j`` for head and tail.
* spec A13 (RR pointer): per source, from worker 0, advancing on head messages only; SG has its
  own per-source pointer over all messages.

Parameters
----------
``kg``, ``sg`` and ``pkg`` take none.  ``dc``, ``wc``, ``rr`` and ``fixed-d`` accept the same
set, so one parameter set can be passed to all of them in a sweep (``eps`` and ``refresh`` only
affect ``dc``):

``theta`` (``None`` -> ``1/(5n)``)
    head threshold on the estimated frequency, ``> 0``.  ``theta > 1`` empties the head (in
    authors' mode ``theta >= 2``, since ``count + err`` can exceed ``m_j``): every message is then
    routed exactly as by ``pkg`` (spec 7, item 8).
``eps`` (``1e-4``)
    D-C's tolerance in FindOptimalChoices, ``>= 0``.
``capacity`` (``None`` -> ``max(100, ceil(4/theta))``; ``100`` with ``mode="authors"``)
    SpaceSaving counters per source, an integer ``>= 1``.
``refresh`` (``1000``)
    ``R_d``: recompute ``d_j`` at most once per this many messages of source ``j`` (integer
    ``>= 1``; ``1`` = the paper's rule).
``warmup`` (``0``)
    messages at the start of every source that are tail whatever their key (integer ``>= 0``).
``mode`` (``"spec"``)
    ``"spec"`` or ``"authors"``, see above.
``d`` (``fixed-d`` only, default ``2``)
    the fixed number of head choices ``d*``, an integer ``>= 1``.

Statistics
----------
``summary()`` of the head-aware strategies (numbers only): ``d_final`` (mean over sources of
the ``d`` in use at the end: ``min(d_j, n)`` for ``dc``, ``min(d, n)`` for ``fixed-d``, ``n`` for
``wc``/``rr``), ``d_max`` (the largest number of choices any source used for a head message,
``n`` for an all-worker scan or RR, 0 without head messages), ``head_size_final`` (mean over
sources of ``|H_j|`` at the end), ``head_fraction`` (head messages / messages),
``wc_fallback_fraction`` (head messages routed by scanning all workers / head messages:
``d_j >= n`` for ``dc``, 1 for ``wc``, 0 for ``rr``; 0 without head messages) and
``d_refreshes`` (computations of ``d`` per source).  ``window_stats()`` gives the current
``d_mean`` and ``head_size``.  ``local_loads()`` returns the ``s x n`` local load vectors.

``sketch(j)`` and ``messages()`` expose source ``j``'s SpaceSaving summary and the ``m_j``.

Helpers for the oracle ``d`` (spec 2.6 "offline variant", 5.2): :func:`head_probabilities`,
:func:`find_optimal_choices`, :func:`oracle_d`, and :func:`expected_distinct_workers` (``b_h``).

Implementation: one numba kernel call per batch over the whole batch, state in numpy arrays on
the object.  The head-aware kernel runs without numba's reference counting (it allocates
nothing), and for ``d > 4`` it reads a head key's distinct candidates from a small memo instead
of evaluating ``d`` hashes per message; neither changes any assignment.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np
from skewbench.jit import njit

from skewbench.errors import SkewbenchError
from skewbench.grouping.base import check_number, hash_choice, hash_seeds
from skewbench.grouping.strategies.routed import Routed
from skewbench.hashing import mix64
from skewbench.kernel.least import least
from skewbench.kernel.pkg import two_choices
from skewbench.kernel.sources import source_start, source_step
from skewbench.kernel.spacesaving import (
    CNT, ERR, SIZE, STATE_COLS, head_sizes, is_head, new_sketches, sketch_entries, ss_offer,
)

__all__ = [
    "KG", "SG", "PKG", "DC", "WC", "RR", "FixedD", "HeadAware",
    "find_optimal_choices", "head_probabilities", "oracle_d", "expected_distinct_workers",
]

# variants of the head-aware router
_DC, _WC, _RR, _FIXED = 0, 1, 2, 3

# columns of the per-source integer state, after the SpaceSaving sketch's own (its entries in use
# are column SIZE)
_M = STATE_COLS  # messages seen (m_j)
_RRP = STATE_COLS + 1  # RR head pointer
_D = STATE_COLS + 2  # cached d_j (D-C)
_LAST = STATE_COLS + 3  # m_j when d_j was last computed, -1 = never
_HEAD = STATE_COLS + 4  # head messages
_FALLBACK = STATE_COLS + 5  # head messages routed by scanning all workers
_DMAX = STATE_COLS + 6  # largest d used for a head message (n for a scan of all workers / RR)
_REFRESH = STATE_COLS + 7  # computations of d_j
_NCOL = STATE_COLS + 8

# Greedy-d with d > _DIRECT_D reads the candidates of a head key from a direct-mapped memo of
# 2**bits lines (shared by the sources: the hash family is the same everywhere) instead of
# evaluating d hashes per message; it changes nothing but the speed.  512 lines, fewer when n is
# so large that the memo would exceed about 2**20 candidates.
_DIRECT_D = 4
_MEMO_BITS = 9
_MEMO_CELLS = 1 << 20
_CACHE_SALT = np.uint64(0x8CB92BA72F3D8DD7)


# --------------------------------------------------------------------------------------------
# numba kernels: baselines

@njit(cache=True)
def _route_kg(seq, key, sources, seed1, n, load, out):
    t, j = source_start()
    for i in range(seq.shape[0]):
        t, j = source_step(seq, i, t, j, sources)
        w = hash_choice(key[i], seed1, n)
        load[j, w] += 1
        out[i] = w


@njit(cache=True)
def _route_sg(seq, sources, n, ptr, load, out):
    t, j = source_start()
    for i in range(seq.shape[0]):
        t, j = source_step(seq, i, t, j, sources)
        w = ptr[j]
        nxt = w + 1
        ptr[j] = 0 if nxt == n else nxt
        load[j, w] += 1
        out[i] = w


@njit(cache=True)
def _route_pkg(seq, key, sources, seed1, seed2, n, load, out):
    t, j = source_start()
    for i in range(seq.shape[0]):
        t, j = source_step(seq, i, t, j, sources)
        k = key[i]
        w = two_choices(load, j, hash_choice(k, seed1, n), hash_choice(k, seed2, n))
        load[j, w] += 1
        out[i] = w


# --------------------------------------------------------------------------------------------
# numba kernels: FindOptimalChoices and the head-aware router

@njit(cache=True)
def _foc(q, H, n, eps, authors):
    """F1-F14 on ``q[:H]`` (sorted descending); ``authors`` selects A10's code variant."""
    if H == 0:
        return np.int64(2)
    tot = 0.0
    for i in range(H):
        tot += q[i]
    ph = min(1.0, tot)
    pt = 1.0 - ph
    d = max(np.int64(2), np.int64(math.ceil(q[0] * n)))
    stay = 1.0 - 1.0 / n
    while d < n:
        feasible = True
        qh = 0.0
        for h in range(1, H + 1):
            qh += q[h - 1]
            if authors and h != 1 and h != H:
                continue
            beta = 1.0 - stay ** float(h * d)
            lhs = qh + beta ** float(d) * (ph - qh) + beta * beta * pt
            if authors:
                rhs = beta + eps
            else:
                rhs = n * beta * (1.0 / n + eps)
            if lhs > rhs:
                feasible = False
                break
        if feasible:
            return d
        d += 1
    return np.int64(n)


@njit(cache=True)
def _sort_descending(a, size):
    """In-place heapsort of ``a[:size]`` into descending order (no allocation)."""
    # build a min-heap, then repeatedly move the minimum to the end
    for start in range(size // 2 - 1, -1, -1):
        _sift_min(a, start, size)
    for end in range(size - 1, 0, -1):
        tmp = a[0]
        a[0] = a[end]
        a[end] = tmp
        _sift_min(a, 0, end)


@njit(cache=True)
def _sift_min(a, pos, size):
    x = a[pos]
    while True:
        c = 2 * pos + 1
        if c >= size:
            break
        if c + 1 < size and a[c + 1] < a[c]:
            c += 1
        if a[c] < x:
            a[pos] = a[c]
            pos = c
        else:
            break
    a[pos] = x


@njit(cache=True)
def _head_estimate(j, mj, theta, authors, st, ent, qbuf):
    """Sorted (descending) estimated frequencies of source ``j``'s head into ``qbuf``; returns |H|."""
    hcount = 0
    for sl in range(st[j, SIZE]):
        c = ent[j, sl, CNT]
        e = ent[j, sl, ERR]
        if is_head(c, e, mj, theta, authors):
            qbuf[hcount] = ((c + e) / mj) if authors else (c / mj)
            hcount += 1
    _sort_descending(qbuf, hcount)
    return hcount


# _nrt=False: no reference counting inside the router.  With it, numba's NRT increments and
# decrements the state arrays' reference counts (atomic operations) around the inlined
# SpaceSaving helpers on every message, which made the kernel 3-4 times slower.  The kernel
# allocates nothing, so it does not need the runtime.
@njit(cache=True, _nrt=False)
def _route_head(seq, key, sources, n, seeds, variant, fixed_d, theta, eps, authors, refresh,
                warmup, st, load, ent, bk, table, shift, qbuf, cbits, c_key, c_d, c_r, c_w, c_f,
                c_seen, out):
    seed1 = seeds[0]
    seed2 = seeds[1]
    t, j = source_start()
    for i in range(seq.shape[0]):
        t, j = source_step(seq, i, t, j, sources)
        k = key[i]
        # line A2: offer to SS_j, m_j += 1; line A3: the head test
        mj = st[j, _M] + 1
        slot = ss_offer(j, k, st, ent, bk, table, shift)
        st[j, _M] = mj
        head = mj > warmup and is_head(ent[j, slot, CNT], ent[j, slot, ERR], mj, theta, authors)
        if not head:
            # line A4: tail -> PKG
            w = two_choices(load, j, hash_choice(k, seed1, n), hash_choice(k, seed2, n))
        else:
            st[j, _HEAD] += 1
            if variant == _RR:  # lines A11-A12
                w = st[j, _RRP]
                nxt = w + 1
                st[j, _RRP] = 0 if nxt == n else nxt
                dused = n
            else:
                if variant == _WC:  # line A10
                    dj = n
                elif variant == _FIXED:
                    dj = fixed_d
                else:
                    # line A6, spec A9: refresh d_j when never computed or stale
                    if st[j, _LAST] < 0 or mj - st[j, _LAST] >= refresh:
                        hc = _head_estimate(j, mj, theta, authors, st, ent, qbuf)
                        st[j, _D] = _foc(qbuf, hc, n, eps, authors)
                        st[j, _LAST] = mj
                        st[j, _REFRESH] += 1
                    dj = st[j, _D]
                if dj >= n:
                    # lines A7, A10, A14: least loaded of all workers, lowest index on ties
                    w = least(load[j], n)
                    st[j, _FALLBACK] += 1
                    dused = n
                elif dj <= _DIRECT_D:
                    # lines A8, A14: MinLoad(F_1..F_d), first candidate on ties
                    w = hash_choice(k, seeds[0], n)
                    best = load[j, w]
                    for c in range(1, dj):
                        w2 = hash_choice(k, seeds[c], n)
                        if load[j, w2] < best:
                            best = load[j, w2]
                            w = w2
                    dused = dj
                else:
                    # the same MinLoad over the memoised distinct candidates (first occurrences
                    # in F order; a repeated worker can never win a strict comparison)
                    line = np.int64(mix64(np.uint64(k) ^ _CACHE_SALT) >> np.uint64(64 - cbits))
                    if c_d[line] == 0 or c_key[line] != k:
                        for c in range(c_r[line]):
                            c_seen[line, c_w[line, c]] = 0
                        c_key[line] = k
                        c_d[line] = 0
                        c_r[line] = 0
                    if c_d[line] < dj:
                        r = c_r[line]
                        for c in range(c_d[line], dj):
                            w2 = hash_choice(k, seeds[c], n)
                            if c_seen[line, w2] == 0:
                                c_seen[line, w2] = 1
                                c_w[line, r] = w2
                                c_f[line, r] = c
                                r += 1
                        c_r[line] = r
                        c_d[line] = dj
                    w = c_w[line, 0]
                    best = load[j, w]
                    for c in range(1, c_r[line]):
                        if c_f[line, c] >= dj:
                            break
                        w2 = c_w[line, c]
                        if load[j, w2] < best:
                            best = load[j, w2]
                            w = w2
                    dused = dj
            if dused > st[j, _DMAX]:
                st[j, _DMAX] = dused
        load[j, w] += 1
        out[i] = w


# --------------------------------------------------------------------------------------------
# pure helpers (oracle d, tests)

def find_optimal_choices(q: Iterable[float], n: int, eps: float = 1e-4, mode: str = "spec") -> int:
    """FindOptimalChoices (spec 2.6, F1-F14) on head frequencies ``q`` (any order) for ``n`` workers.

    Returns an integer in ``{2, ..., n}`` (2 for an empty head; ``n`` means "use all workers",
    the W-C fallback; for ``n < 2`` an empty head still gives 2).  ``mode="authors"`` uses the
    authors' code variant (spec A10: RHS ``b_h/n + eps``, prefixes ``h in {1, |H|}``).
    """
    check_number("n", n, low=1, integer=True)
    check_number("eps", eps, low=0)
    if mode not in ("spec", "authors"):
        raise SkewbenchError(f"mode must be 'spec' or 'authors', got {mode!r}")
    arr = np.asarray(list(q) if not isinstance(q, np.ndarray) else q, dtype=np.float64).ravel()
    if arr.size and (not np.all(np.isfinite(arr)) or np.any(arr < 0)):
        raise SkewbenchError("head frequencies must be finite and >= 0")
    arr = np.ascontiguousarray(np.sort(arr)[::-1])
    if arr.size == 0:
        arr = np.zeros(1)
        return int(_foc(arr, 0, int(n), float(eps), mode == "authors"))
    return int(_foc(arr, arr.size, int(n), float(eps), mode == "authors"))


def expected_distinct_workers(draws: int, n: int) -> float:
    """``b = n - n ((n-1)/n)^draws``: expected distinct workers hit by ``draws`` uniform hash
    values with replacement (spec 2.6, the paper's Appendix A); ``b_h`` uses ``draws = h d``."""
    check_number("draws", draws, low=0, integer=True)
    check_number("n", n, low=1, integer=True)
    return n - n * ((n - 1) / n) ** int(draws)


def head_probabilities(p: Iterable[float], theta: float) -> np.ndarray:
    """The head ``{p_k : p_k >= theta}`` of a known distribution, sorted descending (spec 1.4)."""
    check_number("theta", theta, low=0, low_open=True)
    arr = np.asarray(p, dtype=np.float64).ravel()
    return np.sort(arr[arr >= theta])[::-1].copy()


def oracle_d(p: Iterable[float], n: int, theta: float | None = None, eps: float = 1e-4,
             mode: str = "spec") -> int:
    """D-C's ``d`` for the true distribution ``p`` ("oracle d", spec 2.6 and 5.2).

    ``theta`` defaults to ``1/(5n)``.  An empty head gives 2 (the table's "-"); ``n`` means W.
    """
    check_number("n", n, low=1, integer=True)
    theta = 1.0 / (5 * int(n)) if theta is None else theta
    return find_optimal_choices(head_probabilities(p, theta), int(n), eps, mode)


# --------------------------------------------------------------------------------------------
# strategies

class KG(Routed):
    name = "kg"
    route_cost = 0.1
    relaxation = "whole"
    description = "key grouping: every key to F_1(key) (hashing)"
    defaults: dict[str, Any] = {}
    param_docs: dict[str, str] = {}
    bench_target = 3
    engine_case = (5, 3, {})

    def _setup(self) -> None:
        super()._setup()
        self._seeds = hash_seeds(self.seed, 1)

    def _kernel(self, seq, key, out):
        _route_kg(seq, key, np.int64(self.sources), self._seeds[0], np.int64(self.workers),
                  self._load, out)


class SG(Routed):
    name = "sg"
    route_cost = 0.05
    description = "shuffle grouping: per-source round robin over the workers, from worker 0"
    defaults: dict[str, Any] = {}
    param_docs: dict[str, str] = {}
    bench_target = 3
    engine_case = (4, 3, {})
    seeded = False

    def _setup(self) -> None:
        super()._setup()
        self._ptr = np.zeros(self.sources, dtype=np.int64)

    def _kernel(self, seq, key, out):
        _route_sg(seq, np.int64(self.sources), np.int64(self.workers), self._ptr, self._load, out)


class PKG(Routed):
    name = "pkg"
    route_cost = 0.15
    relaxation = "two"
    description = "partial key grouping: least locally loaded of F_1(key), F_2(key)"
    defaults: dict[str, Any] = {}
    param_docs: dict[str, str] = {}
    bench_target = 10
    engine_case = (7, 2, {})

    def _setup(self) -> None:
        super()._setup()
        self._seeds = hash_seeds(self.seed, 2)

    def _kernel(self, seq, key, out):
        _route_pkg(seq, key, np.int64(self.sources), self._seeds[0], self._seeds[1],
                   np.int64(self.workers), self._load, out)


_HEAD_DEFAULTS: dict[str, Any] = {
    "theta": None, "eps": 1e-4, "capacity": None, "refresh": 1000, "warmup": 0, "mode": "spec",
}

#: descriptions of the parameters every head-aware strategy takes (as D-Choices uses them)
_HEAD_DOCS: dict[str, str] = {
    "theta": ("Head threshold on a key's estimated frequency within its source, a number > 0: "
              "a monitored key is head when count >= theta * m_j (mode 'spec') or "
              "(count + err) / m_j > theta (mode 'authors'); the default None means 1/(5n) for "
              "n workers (spec 1.4, 2.11), and theta > 1 (theta >= 2 in authors' mode) leaves "
              "the head empty so that every message is routed as by pkg."),
    "eps": ("D-Choices' imbalance tolerance, the share of all messages a worker may carry "
            "above 1/n in FindOptimalChoices' necessary condition, a number >= 0 (larger "
            "values let it settle for fewer choices d); default 1e-4 (spec 2.6, 2.11)."),
    "capacity": ("Number of SpaceSaving counters in each source's sketch, an integer >= 1; "
                 "the default None means max(100, ceil(4/theta)) in mode 'spec' (spec A7) and "
                 "100, the authors' value, in mode 'authors'."),
    "refresh": ("R_d, the least number of messages of a source (head or tail) between two "
                "computations of its d_j, which are made on head messages only, an integer "
                ">= 1; the default 1000 is spec A9's value for sweeps and 1 recomputes on "
                "every head message as the paper does."),
    "warmup": ("How many of each source's first messages are routed as tail (by pkg's two "
               "choices) whatever their key, while still being counted by the sketch, an "
               "integer >= 0; the default 0 means no warm-up, as in Algorithm 1 (spec A8)."),
    "mode": ("'spec' (default) uses the spec's choices, while 'authors' mimics the authors' "
             "simulator: 100 counters unless capacity is given, the head test "
             "(count + err) / m_j > theta with those estimates also fed to FindOptimalChoices, "
             "and its A10 variant (right-hand side b_h/n + eps, prefixes 1 and |H| only) "
             "(spec A7, A10)."),
}

# eps, refresh and mode as the head-aware strategies that do not compute d see them
_NO_FOC_DOCS: dict[str, str] = {
    "eps": ("D-Choices' FindOptimalChoices tolerance, accepted so that one parameter set fits "
            "every head-aware strategy but unused here, since this strategy never computes d "
            "(a number >= 0, default 1e-4)."),
    "refresh": ("D-Choices' interval between computations of d, accepted so that one parameter "
                "set fits every head-aware strategy but unused here, since this strategy never "
                "computes d (an integer >= 1, default 1000)."),
    "mode": ("'spec' (default) uses the spec's sketch choices, while 'authors' mimics the "
             "authors' simulator with 100 counters unless capacity is given and the head test "
             "(count + err) / m_j > theta (spec A7)."),
}


class HeadAware(Routed):
    """Algorithm 1 (spec 2.5): a SpaceSaving head per source, PKG for the tail."""

    route_cost = 1.05
    relaxation = "two"  # the tail's two choices; a head key outside them may go anywhere

    defaults: dict[str, Any] = dict(_HEAD_DEFAULTS)
    param_docs: dict[str, str] = dict(_HEAD_DOCS)
    _variant = _DC

    def _setup(self) -> None:
        super()._setup()
        p, n, who = self.params, self.workers, self.name
        if p["theta"] is None:
            p["theta"] = 1.0 / (5 * n)
        check_number(f"{who}: theta", p["theta"], low=0, low_open=True)
        check_number(f"{who}: eps", p["eps"], low=0)
        check_number(f"{who}: refresh", p["refresh"], low=1, integer=True)
        check_number(f"{who}: warmup", p["warmup"], low=0, integer=True)
        if p["mode"] not in ("spec", "authors"):
            raise SkewbenchError(f"{who}: mode must be 'spec' or 'authors', got {p['mode']!r}")
        if p["capacity"] is None:
            p["capacity"] = 100 if p["mode"] == "authors" else max(100, math.ceil(4.0 / p["theta"]))
        check_number(f"{who}: capacity", p["capacity"], low=1, integer=True)
        if "d" in self.defaults:
            check_number(f"{who}: d", p["d"], low=1, integer=True)
            p["d"] = int(p["d"])
        p["theta"], p["eps"] = float(p["theta"]), float(p["eps"])
        p["capacity"], p["refresh"], p["warmup"] = int(p["capacity"]), int(p["refresh"]), int(p["warmup"])
        cap = p["capacity"]
        self._seeds = hash_seeds(self.seed, max(2, n))
        self._st, self._ent, self._bk, self._table, self._shift = new_sketches(self.sources, cap, _NCOL)
        self._st[:, _D] = 2
        self._st[:, _LAST] = -1
        self._qbuf = np.zeros(cap, dtype=np.float64)
        bits = _MEMO_BITS
        while bits > 1 and (n << bits) > _MEMO_CELLS:
            bits -= 1
        self._alloc_memo(bits)

    def _alloc_memo(self, bits: int) -> None:
        """(Re)allocate the empty candidate memo with ``2**bits`` lines."""
        n = self.workers
        lines = 1 << bits
        memo = n if self._variant in (_DC, _FIXED) and n > _DIRECT_D + 1 else 1
        self._cbits = np.int64(bits)
        self._c_key = np.zeros(lines, dtype=np.int64)
        self._c_d = np.zeros(lines, dtype=np.int64)
        self._c_r = np.zeros(lines, dtype=np.int64)
        self._c_w = np.zeros((lines, memo), dtype=np.int32)
        self._c_f = np.zeros((lines, memo), dtype=np.int32)
        self._c_seen = np.zeros((lines, memo), dtype=np.uint8)

    def _fixed_d(self) -> int:
        return 0

    def _kernel(self, seq, key, out):
        p = self.params
        _route_head(seq, key, np.int64(self.sources), np.int64(self.workers), self._seeds,
                    np.int64(self._variant), np.int64(self._fixed_d()), p["theta"], p["eps"],
                    p["mode"] == "authors", np.int64(p["refresh"]), np.int64(p["warmup"]),
                    self._st, self._load, self._ent, self._bk, self._table, self._shift,
                    self._qbuf, self._cbits, self._c_key, self._c_d, self._c_r, self._c_w, self._c_f,
                    self._c_seen, out)

    def sketch(self, source: int) -> dict[int, tuple[int, int]]:
        """SpaceSaving summary of ``source``: ``{key: (count, err)}`` (diagnostics and tests)."""
        if not 0 <= source < self.sources:
            raise SkewbenchError(f"{self.name}: source must be in [0, {self.sources}), got {source}")
        return sketch_entries(self._st, self._ent, source)

    def messages(self) -> np.ndarray:
        """``m_j`` for every source."""
        return self._st[:, _M].copy()

    # ---- statistics
    def _head_sizes(self) -> np.ndarray:
        """``|H_j|`` now: monitored keys passing the head test, per source."""
        return head_sizes(self._st, self._ent, self._st[:, _M], self.params["theta"], self.params["mode"] == "authors")

    def _d_now(self) -> np.ndarray:
        n = self.workers
        if self._variant == _DC:
            return np.minimum(self._st[:, _D], n).astype(np.float64)
        if self._variant == _FIXED:
            return np.full(self.sources, float(min(self._fixed_d(), n)))
        return np.full(self.sources, float(n))

    def _active(self) -> np.ndarray:
        """Sources that have seen messages (all, if none has): averages are over these, so a
        strategy object fed only some sources' tuples (one Spark task per source) reports the
        statistics of those sources, not of idle ones."""
        active = self._st[:, _M] > 0
        return active if active.any() else np.ones(len(active), dtype=bool)

    def summary(self) -> dict[str, float]:
        st = self._st[self._active()]
        msgs = int(st[:, _M].sum())
        head = int(st[:, _HEAD].sum())
        return {
            "d_final": float(self._d_now()[self._active()].mean()),
            "d_max": float(st[:, _DMAX].max()),
            "head_size_final": float(self._head_sizes()[self._active()].mean()),
            "head_fraction": head / msgs if msgs else 0.0,
            "wc_fallback_fraction": float(st[:, _FALLBACK].sum()) / head if head else 0.0,
            "d_refreshes": float(st[:, _REFRESH].mean()),
        }

    def window_stats(self) -> dict[str, float]:
        act = self._active()
        return {"d_mean": float(self._d_now()[act].mean()),
                "head_size": float(self._head_sizes()[act].mean())}


class DC(HeadAware):
    name = "dc"
    description = ("D-Choices: head keys (SpaceSaving) on the least loaded of F_1..F_d, "
                   "d from FindOptimalChoices; tail PKG")
    defaults = dict(_HEAD_DEFAULTS)
    param_docs = dict(_HEAD_DOCS)
    exercise = [{"refresh": 1}, {"mode": "authors", "warmup": 50, "capacity": 8}]
    bench_target = 20
    engine_case = (10, 2, {"refresh": 1})
    _variant = _DC


class WC(HeadAware):
    name = "wc"
    description = "W-Choices: head keys on the least locally loaded of all workers; tail PKG"
    defaults = dict(_HEAD_DEFAULTS)
    param_docs = {**_HEAD_DOCS, **_NO_FOC_DOCS}
    exercise = [{"capacity": 4, "theta": 0.01}]
    bench_target = 20
    engine_case = (6, 3, {})
    _variant = _WC


class RR(HeadAware):
    name = "rr"
    description = "Round-Robin head: head keys dealt round robin per source; tail PKG"
    defaults = dict(_HEAD_DEFAULTS)
    param_docs = {**_HEAD_DOCS, **_NO_FOC_DOCS}
    exercise = [{"theta": 0.02, "warmup": 10}]
    bench_target = 20
    engine_case = (5, 1, {})
    _variant = _RR


class FixedD(HeadAware):
    name = "fixed-d"
    description = "Greedy-d on the head with a fixed d (d >= n: all workers); tail PKG (Min-d sweep)"
    defaults = {**_HEAD_DEFAULTS, "d": 2}
    param_docs = {
        **_HEAD_DOCS, **_NO_FOC_DOCS,
        "d": ("The fixed number d* of hashed choices F_1..F_d* among which a head message goes "
              "to the least locally loaded worker, an integer >= 1: the default 2 routes like "
              "pkg when n > 2, 1 sends head keys where kg would, and d >= n scans all workers "
              "like wc (spec 2.9)."),
    }
    exercise = [{"d": 5, "refresh": 1}]
    bench_target = None  # no kernel row: the rows of dc, wc and rr time the head-aware kernel
    engine_case = (8, 3, {"d": 3})
    _variant = _FIXED

    def _fixed_d(self) -> int:
        return int(self.params["d"])
