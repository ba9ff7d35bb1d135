"""Consistent hashing with bounded loads (CHWBL).

Implements practice.spec.md ("spec") section 2.1 (CHBL; Mirrokni, Thorup, Zadimoghaddam, SODA
2018, as deployed in HAProxy's ``hash-balance-factor``): a key goes to the first worker, walking
clockwise on a consistent-hashing ring from the key's position, whose load is below a cap of
``F`` percent of the average load.  "Line C4" refers to the spec's pseudocode C1-C6, "A2" to
entry A2 of the spec's section 6.

Ring (spec 2.1)
---------------
Two seeds ``seed_ring, seed_key = hash_seeds(seed, 2)`` (the project's hash family,
:mod:`skewbench.grouping.base`).  Worker ``w`` owns ``V`` virtual nodes at
``pos(w, v) = mix64(seed_ring XOR (w * 2^32 + v))``, ``v in [0, V)`` (unsigned 64-bit); the
``n V`` nodes are sorted by ``(pos, w, v)``.  A key ``k`` (int64, read as its two's-complement
unsigned value) sits at ``mix64(seed_key XOR k)``; ``succ(k)`` is the first node with
``pos >= pos(k)``, wrapping to node 0, and the walk order ``omega(k)`` lists the workers met
clockwise from ``succ(k)``, first occurrences only (all ``n`` of them).  The ring is read-only
and shared by the sources.

Decision (lines C1-C6)
----------------------
With ``T`` the source's current total (see the accountings) and ``F`` the balance factor as an
integer percentage, ``cap = ((T+1) F + 100 n - 1) div (100 n)`` (integers, spec A3: no
floating point); the tuple goes to the first worker of ``omega(k)`` whose load is ``< cap``.
Such a worker exists because the loads sum to ``T < n cap``.  Every ``F >= 100 n`` gives
``cap >= T + 1`` (above every load), so the kernels use ``min(F, 100 n)``, identical decisions
without overflow: a huge ``F`` (e.g. ``10**9``) is plain consistent hashing, every tuple on
``omega_1(k)``.

Accountings (spec 2.1 and A1)
-----------------------------
State is per source ``j`` (tuple ``seq`` belongs to ``j = seq % sources``), so any batch split
or per-source feeding gives the same assignments and statistics.

``"request"`` (P, default)
    ``load_j[w]`` = tuples ``j`` sent to ``w`` since the start, ``T = t_j``.  After every
    decision ``max_w l_j[w] <= ceil(t_j F / (100 n))``.  ``window`` is unused.
``"window"`` (Wn)
    ``load_j[w]`` counts only the last ``W - 1`` decisions of ``j`` (a ring buffer of ``W - 1``
    decisions: the new decision enters it after it is made, and the oldest one leaves when it
    is full), ``T`` = decisions held.  Every ``W`` consecutive decisions of a source then put at
    most ``ceil(W F / (100 n))`` tuples on a worker.  ``window = 0`` means ``W = 100 n`` (the
    spec's [R]); ``W = 1`` keeps no history (``T = 0``: plain consistent hashing).
``"key"`` (K)
    Sticky per key: source ``j`` keeps ``map_j: key -> worker``; a known key goes to its worker
    with no check; a new key is placed by C2-C5 with ``load_j[w]`` = keys mapped to ``w`` and
    ``T = |map_j|``.  ``window = 0``: no expiry; ``window = W > 0``: tumbling windows of ``W``
    tuples of the source, and at each window's end the keys not seen in it are removed (their
    worker's key count decremented) before the next tuple is routed.  Without expiry a placed
    key's worker holds ``<= ceil(|map_j| F / (100 n))`` keys at all times.

Choices
-------
* spec A1: the three accountings above, (P) by default.
* spec 2.1 (Wn) is inconsistent: dropping the oldest decision *before* routing when the buffer
  holds ``W - 1`` leaves only ``W - 2`` earlier decisions in the load, and then two consecutive
  decisions can both go to one worker with ``W = 2`` (above ``ceil(2 F / (100 n)) = 1`` for
  ``F < 100 n / 2``), against its stated window guarantee.  We keep what the spec states twice,
  the load of the last ``W - 1`` decisions at decision time and the guarantee over every ``W``
  consecutive decisions: the oldest decision leaves *after* routing.
* spec A2: the lookup takes the successor and one cap (the paper's and Google blog's "next bin
  clockwise").  The HAProxy-compat switches of spec 2.1 (closest node instead of the
  successor, per-server integer slots, 16 virtual nodes per weight unit placed by HAProxy's own
  32-bit hash, ``F = 0`` as "off") are **not implemented**; use a huge ``factor`` for no bound.
* spec A3: ``factor`` is the integer percentage ``F`` (``>= 100``); ``c = 1.25`` is
  ``factor=125``.
* Walk length = the number of distinct workers inspected by a decision (1 when ``omega_1(k)``
  is eligible).  Under ``"key"`` only the placements of new keys walk; a known key's lookup
  inspects none and is left out of the walk statistics (but counts in the displaced fraction).

Parameters
----------
``factor`` (``125``) balance factor ``F`` in percent, an integer in ``[100, 10**18]``.
``vnodes`` (``100``) virtual nodes per worker ``V``, an integer in ``[1, 10**4]``.
``accounting`` (``"request"``) ``"request"``, ``"window"`` or ``"key"``.
``window`` (``0``) ``W`` in tuples of a source, an integer in ``[0, 10**7]``: ``0`` -> ``100 n``
for ``"window"`` (resolved in ``describe_params()``) and no expiry for ``"key"``; unused by
``"request"``.

Statistics
----------
``summary()``: ``walk_mean``, ``walk_p99`` (the smallest ``L`` with at least 99% of the walks
of length ``<= L``, exact, from a per-source histogram of walk lengths), ``walk_max`` (all 0
when nothing walked), ``displaced_fraction`` (tuples not sent to ``omega_1(k)`` / tuples),
``placement_fraction`` (decisions that walked / tuples: 1 except under ``"key"``) and
``keys_mapped`` (entries of all sources' key maps, 0 except under ``"key"``).
``window_stats()``: ``displaced_fraction``, ``walk_mean`` and ``keys_mapped`` so far.  All are
sums over sources, so any batch split gives the same numbers.

Implementation
--------------
One numba kernel per accounting, called once per batch, with the state in numpy arrays.
(P) and (Wn) keep ``cap`` and the remainder of its division up to date as ``T`` grows (with
``F <= 100 n`` it rises by at most one per tuple), so no tuple pays for a division.  The
successor is found in expected O(1) through a table of the first node of each of ``2**b``
equal slices of the 64-bit circle (``b = bits(nV) + 1``) and a short scan, which gives exactly
the binary search's node.  ``omega_1(k)`` is the successor's worker; the next ranks come from a
precomputed table of the first ``D`` distinct workers after every node (``D = n`` unless the
table would exceed 2**20 entries); a longer walk continues node by node, skipping workers
already inspected (A2: the result is the same).  ``"key"`` keeps one open-addressing table per
source (linear probing, grown between tuples by the Python shell) and per-worker key counts of
the current and previous tumbling window, so an expiry costs O(n) and removed keys are only
purged from the table when it is rebuilt.  None of this changes an assignment.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from skewbench.jit import njit

from skewbench.errors import SkewbenchError
from skewbench.grouping.base import Batch, Strategy, batch_arrays, check_number, hash_seeds
from skewbench.hashing import mix64, mix64_py
from skewbench.kernel.sources import source_start, source_step

__all__ = ["CHWBL", "ACCOUNTINGS"]

ACCOUNTINGS = ("request", "window", "key")
_REQUEST, _WINDOW, _KEY = 0, 1, 2

# columns of the per-source integer state
_T = 0  # the accounting's total T: t_j (P), decisions held (Wn), live keys |map_j| (K)
_N = 1  # tuples routed t_j
_DISP = 2  # tuples not sent to omega_1(k)
_HEAD = 3  # (Wn) ring buffer: index of the oldest decision
_USED = 4  # (K) occupied slots of the key table (live and expired keys)
_CAP = 5  # (P, Wn) cap(T) = ((T+1) F + 100 n - 1) div (100 n), kept up to date with T
_REM = 6  # (P, Wn) ((T+1) F + 100 n - 1) mod (100 n)
_NCOL = 7

_TABLE_SALT = np.uint64(0x5851F42D4C957F2D)
_WALK_CELLS = 1 << 20  # budget of the precomputed walk table (entries)
_MIN_SLOTS = 16


# --------------------------------------------------------------------------------------------
# the ring

@njit(cache=True)
def _node_positions(seed_ring, n, vnodes, pos, wk, vk):
    i = 0
    for w in range(n):
        for v in range(vnodes):
            pos[i] = mix64(seed_ring ^ ((np.uint64(w) << np.uint64(32)) + np.uint64(v)))
            wk[i] = w
            vk[i] = v
            i += 1


@njit(cache=True)
def _build_walks(wk, pre, after, mark):
    """``pre[i, :]``: the first ``D`` distinct workers clockwise from node ``i``; ``after[i]``:
    the node after the one where the ``D``-th of them first appears (where a longer walk goes on)."""
    N = wk.shape[0]
    D = pre.shape[1]
    for i in range(N):
        e = i + 1
        cnt = 0
        node = i
        while cnt < D:
            w = wk[node]
            if mark[w] != e:
                mark[w] = e
                pre[i, cnt] = w
                cnt += 1
            node += 1
            if node == N:
                node = 0
        after[i] = node


@njit(inline="always", cache=True)
def _succ(kp, pos, bstart, bshift):
    """Index of the first node with ``pos >= kp``, wrapping to 0 (a binary search's answer)."""
    b = np.int64(kp >> bshift)
    i = bstart[b]
    end = bstart[b + 1]
    while i < end and pos[i] < kp:
        i += 1
    if i == pos.shape[0]:
        i = 0
    return i


@njit(cache=True, _nrt=False)
def _walk_on(i, acc, j, cap, wk, pre, after, mark):
    """Lines C4-C5 from node ``i`` when ``omega_1``, the node's own worker, is not eligible:
    (first worker of the walk with ``acc[j, w] < cap``, number of distinct workers inspected)."""
    D = pre.shape[1]
    for r in range(1, D):
        w = pre[i, r]
        if acc[j, w] < cap:
            return np.int64(w), np.int64(r + 1)
    # longer than the table: go on node by node, skipping workers already inspected
    n = mark.shape[0] - 1
    e = mark[n] + 1
    mark[n] = e
    for r in range(D):
        mark[pre[i, r]] = e
    cnt = np.int64(D)
    node = after[i]
    N = wk.shape[0]
    for _ in range(N):  # one turn meets every worker
        w = wk[node]
        if mark[w] != e:
            mark[w] = e
            cnt += 1
            if acc[j, w] < cap:
                return np.int64(w), cnt
        node += 1
        if node == N:
            node = 0
    return np.int64(wk[i]), cnt  # not reached: the loads sum to T < n cap (bounded, never a hang)


# --------------------------------------------------------------------------------------------
# the routers, one per accounting (_nrt=False: they allocate nothing, as dchoices' head router)

@njit(inline="always", cache=True)
def _cap_up(st, j, F, div):
    """T += 1 in ``cap = num div div`` with ``num = (T+1) F + div - 1 = cap div + rem``: the
    cap rises by at most one because ``F <= div`` (no division per tuple)."""
    r = st[j, _REM] + F
    if r >= div:
        r -= div
        st[j, _CAP] += 1
    st[j, _REM] = r


@njit(inline="always", cache=True)
def _bounded(k, seed_key, pos, bstart, bshift, wk, pre, after, mark, acc, j, cap):
    """Lines C1-C5 for key ``k`` at source ``j``: the worker of the key's successor node on the
    ring, or, when that worker's ``acc[j, w]`` has reached ``cap``, the walk's first worker
    below it; ``(worker, number of distinct workers inspected)``."""
    node = _succ(mix64(np.uint64(k) ^ seed_key), pos, bstart, bshift)
    w = np.int64(wk[node])
    if acc[j, w] < cap:
        return w, np.int64(1)
    return _walk_on(node, acc, j, cap, wk, pre, after, mark)


@njit(inline="always", cache=True)
def _count_walk(st, hist, j, L):
    """Count a placement that inspected ``L`` workers (``L > 1``: the key was displaced)."""
    hist[j, L] += 1
    if L > 1:
        st[j, _DISP] += 1


@njit(cache=True, _nrt=False)
def _route_request(seq, key, sources, n, F, seed_key, pos, bstart, bshift, wk, pre, after, mark,
                   st, load, hist, out):
    div = 100 * n
    t, j = source_start()
    for i in range(seq.shape[0]):
        t, j = source_step(seq, i, t, j, sources)
        w, L = _bounded(key[i], seed_key, pos, bstart, bshift, wk, pre, after, mark, load, j, st[j, _CAP])
        load[j, w] += 1
        st[j, _T] += 1
        _cap_up(st, j, F, div)
        st[j, _N] += 1
        _count_walk(st, hist, j, L)
        out[i] = w


@njit(cache=True, _nrt=False)
def _route_window(seq, key, sources, n, F, seed_key, pos, bstart, bshift, wk, pre, after, mark,
                  held, st, load, acc, hist, buf, out):
    div = 100 * n
    t, j = source_start()
    for i in range(seq.shape[0]):
        t, j = source_step(seq, i, t, j, sources)
        T = st[j, _T]
        w, L = _bounded(key[i], seed_key, pos, bstart, bshift, wk, pre, after, mark, acc, j, st[j, _CAP])
        head = st[j, _HEAD]
        if held > 0:
            acc[j, w] += 1
            if T == held:  # full: the oldest decision leaves, this one takes its place
                acc[j, buf[j, head]] -= 1
                buf[j, head] = w
                head += 1
                if head == held:
                    head = 0
            else:
                buf[j, T] = w  # head is 0 until the buffer is full
                T += 1
                _cap_up(st, j, F, div)
        st[j, _T] = T
        st[j, _HEAD] = head
        load[j, w] += 1
        st[j, _N] += 1
        _count_walk(st, hist, j, L)
        out[i] = w


@njit(cache=True, _nrt=False)
def _route_key(seq, key, first, sources, n, F, seed_key, pos, bstart, bshift, wk, pre, after,
               mark, W, st, load, acc, hist, cntw, tkey, tw, tlast, tdisp, tshift, out):
    """Route from tuple ``first`` on; returns the index of the first tuple not routed (the whole
    batch, or a tuple whose source's key table must grow first: nothing of it is done yet)."""
    div = 100 * n
    mask = tkey.shape[1] - 1
    half = tkey.shape[1] // 2
    t, j = source_start()
    for i in range(first, seq.shape[0]):
        t, j = source_step(seq, i, t, j, sources)
        if st[j, _USED] + 1 > half:
            return i
        tj = st[j, _N]
        cur = np.int64(0)
        if W > 0:
            cur = tj // W
            if tj > 0 and tj - cur * W == 0:  # window cur starts: keys last seen in cur - 2 expire
                par = cur & 1
                gone = np.int64(0)
                for x in range(n):
                    c = cntw[j, par, x]
                    acc[j, x] -= c
                    gone += c
                    cntw[j, par, x] = 0
                st[j, _T] -= gone
        k = key[i]
        slot = np.int64(mix64(np.uint64(k) ^ _TABLE_SALT) >> tshift)
        while tw[j, slot] >= 0 and tkey[j, slot] != k:
            slot = (slot + 1) & mask
        if tw[j, slot] >= 0 and (W == 0 or tlast[j, slot] >= cur - 1):  # a known, live key
            w = np.int64(tw[j, slot])
            if W > 0 and tlast[j, slot] != cur:
                cntw[j, tlast[j, slot] & 1, w] -= 1
                cntw[j, cur & 1, w] += 1
                tlast[j, slot] = cur
            if tdisp[j, slot]:
                st[j, _DISP] += 1
        else:  # place a new key (or one that expired)
            T = st[j, _T]
            cap = ((T + 1) * F + div - 1) // div
            w, L = _bounded(k, seed_key, pos, bstart, bshift, wk, pre, after, mark, acc, j, cap)
            acc[j, w] += 1
            st[j, _T] = T + 1
            hist[j, L] += 1
            if W > 0:
                cntw[j, cur & 1, w] += 1
            if tw[j, slot] < 0:
                st[j, _USED] += 1
                tkey[j, slot] = k
            tw[j, slot] = w
            tlast[j, slot] = cur
            tdisp[j, slot] = L > 1
            if L > 1:
                st[j, _DISP] += 1
        load[j, w] += 1
        st[j, _N] = tj + 1
        out[i] = w
    return seq.shape[0]


@njit(inline="always", cache=True)
def _oldest_live(tj, W):
    """After ``tj`` tuples of a source (expiry window ``W > 0``), its live keys are those last
    seen in the window of its last tuple or the one before (the next boundary's expiry is done
    when its next tuple arrives)."""
    return (tj - 1) // W - 1 if tj > 0 else np.int64(0)


@njit(cache=True)
def _rehash(W, st, tkey, tw, tlast, tdisp, nkey, nw, nlast, ndisp, nshift):
    """Copy the live keys of every source into the new (empty) tables; drops expired ones."""
    mask = nkey.shape[1] - 1
    for j in range(tkey.shape[0]):
        oldest = _oldest_live(st[j, _N], W) if W > 0 else np.int64(0)
        used = np.int64(0)
        for s in range(tkey.shape[1]):
            if tw[j, s] < 0 or (W > 0 and tlast[j, s] < oldest):
                continue
            k = tkey[j, s]
            slot = np.int64(mix64(np.uint64(k) ^ _TABLE_SALT) >> nshift)
            while nw[j, slot] >= 0:
                slot = (slot + 1) & mask
            nkey[j, slot] = k
            nw[j, slot] = tw[j, s]
            nlast[j, slot] = tlast[j, s]
            ndisp[j, slot] = tdisp[j, s]
            used += 1
        st[j, _USED] = used


# --------------------------------------------------------------------------------------------
# the strategy

def _bits(x: int) -> int:
    return max(1, int(x).bit_length())


#: the most virtual nodes a ring holds (vnodes x workers): the default 100 at 10,000 workers
MAX_RING = 1_000_000


class CHWBL(Strategy):
    name = "chwbl"
    description = ("consistent hashing with bounded loads: first worker clockwise on the ring "
                   "whose local load is below factor% of the average")
    defaults: dict[str, Any] = {"factor": 125, "vnodes": 100, "accounting": "request", "window": 0}
    param_docs = {
        "factor": ("Balance factor F as an integer percentage of the average load, at least 100: "
                   "a worker is eligible while its load is below ceil((T+1) F / (100 n)); 125 "
                   "means c = 1.25, 100 keeps the counts within one, and a huge value such as "
                   "10**9 is plain consistent hashing (spec 2.1, A3)."),
        "vnodes": ("Virtual nodes per worker on the hash ring, an integer from 1 to 10**4; more "
                   "nodes spread the keys' successors more evenly (default 100, spec 2.1)."),
        "accounting": ("What a source counts as a worker's load: 'request' (default) its "
                       "cumulative tuples, 'window' its last W-1 decisions, or 'key' the keys it "
                       "has mapped there, each key then staying on its worker (spec 2.1, A1)."),
        "window": ("Window W in tuples of a source, an integer from 0 to 10**7: the sliding window "
                   "of 'window' (0 means 100 n) or the tumbling key expiry window of 'key' (0 "
                   "means no expiry); it is unused by 'request'."),
    }
    exercise = [{"accounting": "window", "window": 50}, {"accounting": "key", "window": 200},
                {"factor": 100, "vnodes": 3}]
    bench_target = 10
    engine_case = (6, 3, {})
    aot_params = {"zipf": ("accounting=request,window,key",)}
    relaxation = "any"
    seeded = True
    route_cost = 0.4

    def _setup(self) -> None:
        p, n, s, who = self.params, self.workers, self.sources, self.name
        check_number(f"{who}: factor", p["factor"], 100, 10**18, integer=True)
        check_number(f"{who}: vnodes", p["vnodes"], 1, 10**4, integer=True)
        if int(p["vnodes"]) * n > MAX_RING:
            raise SkewbenchError(f"{who}: vnodes x workers must be at most {MAX_RING:,} ring nodes (about 100 bytes "
                                 f"each), got {int(p['vnodes'])} x {n} = {int(p['vnodes']) * n:,}")
        if p["accounting"] not in ACCOUNTINGS:
            raise SkewbenchError(f"{who}: accounting must be one of {', '.join(map(repr, ACCOUNTINGS))}, "
                                 f"got {p['accounting']!r}")
        check_number(f"{who}: window", p["window"], 0, 10**7, integer=True)
        p["factor"], p["vnodes"], p["window"] = int(p["factor"]), int(p["vnodes"]), int(p["window"])
        if p["accounting"] == "window" and p["window"] == 0:
            p["window"] = 100 * n
        self._mode = ACCOUNTINGS.index(p["accounting"])
        self._F = np.int64(min(p["factor"], 100 * n))  # F >= 100 n: cap > T, no bound (docstring)
        seeds = hash_seeds(self.seed, 2)
        self._seed_ring, self._seed_key = seeds[0], seeds[1]
        self._build_ring(n, p["vnodes"])
        self._alloc_walks(min(n, max(1, _WALK_CELLS // len(self._pos))))
        self._st = np.zeros((s, _NCOL), dtype=np.int64)
        div = 100 * n  # cap(0) for the incremental caps of "request" and "window"
        self._st[:, _CAP] = (int(self._F) + div - 1) // div
        self._st[:, _REM] = (int(self._F) + div - 1) % div
        self._load = np.zeros((s, n), dtype=np.int64)
        self._acc = self._load if self._mode == _REQUEST else np.zeros((s, n), dtype=np.int64)
        self._hist = np.zeros((s, n + 1), dtype=np.int64)
        W = p["window"]
        self._held = np.int64(max(W - 1, 0))
        self._buf = np.zeros((s, max(W - 1, 1) if self._mode == _WINDOW else 1), dtype=np.int32)
        self._cntw = np.zeros((s, 2, n), dtype=np.int64)
        self._alloc_table(_MIN_SLOTS)

    # ---- ring and walk table
    def _build_ring(self, n: int, vnodes: int) -> None:
        N = n * vnodes
        pos = np.empty(N, dtype=np.uint64)
        wk = np.empty(N, dtype=np.int32)
        vk = np.empty(N, dtype=np.int32)
        _node_positions(self._seed_ring, np.int64(n), np.int64(vnodes), pos, wk, vk)
        order = np.lexsort((vk, wk, pos))  # by (pos, w, v)
        self._pos = np.ascontiguousarray(pos[order])
        self._wk = np.ascontiguousarray(wk[order])
        b = _bits(N) + 1
        self._bshift = np.uint64(64 - b)
        bounds = np.arange(1 << b, dtype=np.uint64) << np.uint64(64 - b)
        self._bstart = np.append(np.searchsorted(self._pos, bounds, side="left"), N).astype(np.int64)

    def _alloc_walks(self, width: int) -> None:
        """(Re)build the table of the first ``width`` distinct workers after every node (tests
        use a narrow one to exercise the node-by-node walk; it changes nothing)."""
        n, N = self.workers, len(self._pos)
        self._pre = np.zeros((N, width), dtype=np.int32)
        self._after = np.zeros(N, dtype=np.int64)
        _build_walks(self._wk, self._pre, self._after, np.zeros(n, dtype=np.int64))
        self._mark = np.zeros(n + 1, dtype=np.int64)

    def _alloc_table(self, slots: int) -> None:
        s = self.sources
        slots = slots if self._mode == _KEY else 1
        self._tshift = np.uint64(64 - _bits(slots - 1)) if slots > 1 else np.uint64(63)
        self._tkey = np.zeros((s, slots), dtype=np.int64)
        self._tw = np.full((s, slots), -1, dtype=np.int32)
        self._tlast = np.zeros((s, slots), dtype=np.int64)
        self._tdisp = np.zeros((s, slots), dtype=np.bool_)

    def _grow_table(self) -> None:
        old = (self._tkey, self._tw, self._tlast, self._tdisp)
        used = int(self._st[:, _USED].max())  # occupied slots: at least the live keys they keep
        slots = _MIN_SLOTS
        while slots < 4 * (used + 1):
            slots *= 2
        self._alloc_table(slots)
        _rehash(np.int64(self.params["window"]), self._st, *old, self._tkey, self._tw, self._tlast,
                self._tdisp, self._tshift)

    def walk_order(self, key: int) -> list[int]:
        """``omega(key)``: every worker in the order a decision for ``key`` inspects them."""
        kp = mix64_py((int(key) & 0xFFFFFFFFFFFFFFFF) ^ int(self._seed_key))
        i = int(np.searchsorted(self._pos, np.uint64(kp), side="left")) % len(self._pos)
        out: list[int] = []
        N = len(self._wk)
        for step in range(N):
            w = int(self._wk[(i + step) % N])
            if w not in out:
                out.append(w)
        return out

    def walk_positions(self, keys) -> np.ndarray:
        """``pos[i, w]``: the place (1 to n) of worker ``w`` in ``omega(keys[i])``, :meth:`walk_order`
        for many keys at once (a tuple of ``keys[i]`` routed to ``w`` walked ``pos[i, w]`` workers)."""
        ks = np.asarray(keys, dtype=np.int64)
        n, N = self.workers, len(self._wk)
        first = np.empty((N, n), dtype=np.int64)  # first[j, w]: the first node at or after j that is w's (cyclic)
        last = np.zeros(n, dtype=np.int64)
        for j in range(2 * N - 1, -1, -1):
            last[self._wk[j % N]] = j
            if j < N:
                first[j] = last
        order = np.argsort(first - np.arange(N)[:, None], axis=1, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(1, n + 1)[None, :].repeat(N, axis=0), axis=1)
        kp = np.array([mix64_py((int(k) & 0xFFFFFFFFFFFFFFFF) ^ int(self._seed_key)) for k in ks], dtype=np.uint64)
        start = np.searchsorted(self._pos, kp, side="left") % N
        return rank[start]

    # ---- routing
    def route(self, batch: Batch) -> np.ndarray:
        seq, key = batch_arrays(batch)
        out = np.empty(seq.size, dtype=np.int64)
        if not seq.size:
            return out
        ring = (np.int64(self.sources), np.int64(self.workers), self._F, self._seed_key, self._pos,
                self._bstart, self._bshift, self._wk, self._pre, self._after, self._mark)
        if self._mode == _REQUEST:
            _route_request(seq, key, *ring, self._st, self._load, self._hist, out)
        elif self._mode == _WINDOW:
            _route_window(seq, key, *ring, self._held, self._st, self._load, self._acc, self._hist,
                          self._buf, out)
        else:
            done = 0
            while True:
                done = _route_key(seq, key, np.int64(done), *ring, np.int64(self.params["window"]),
                                  self._st, self._load, self._acc, self._hist, self._cntw, self._tkey,
                                  self._tw, self._tlast, self._tdisp, self._tshift, out)
                if done == seq.size:
                    break
                self._grow_table()
        return out

    # ---- state and statistics
    def local_loads(self) -> np.ndarray:
        """``l_j[w]``: tuples source ``j`` (rows) sent to worker ``w`` since the start (a copy)."""
        return self._load.copy()

    def accounted_loads(self) -> np.ndarray:
        """The accounting's ``load_j[w]``: cumulative tuples, window counts or key counts (a copy)."""
        return self._acc.copy()

    def key_maps(self) -> list[dict[int, int]]:
        """(``"key"``) every source's live ``map_j``: key -> worker (empty dicts otherwise)."""
        W = self.params["window"]
        out: list[dict[int, int]] = []
        for j in range(self.sources):
            live = self._tw[j] >= 0
            if self._mode != _KEY:
                live[:] = False
            elif W > 0:
                t = int(self._st[j, _N])
                live &= self._tlast[j] >= ((t - 1) // W - 1 if t > 0 else 0)
            out.append({int(k): int(w) for k, w in zip(self._tkey[j][live], self._tw[j][live])})
        return out

    def _walk_stats(self) -> tuple[int, float, float, float]:
        h = self._hist.sum(axis=0)
        count = int(h.sum())
        if not count:
            return 0, 0.0, 0.0, 0.0
        lengths = np.arange(len(h))
        mean = float((h * lengths).sum()) / count
        cum = np.cumsum(h)
        p99 = int(np.argmax(100 * cum >= 99 * count))
        return count, mean, float(p99), float(np.flatnonzero(h)[-1])

    def summary(self) -> dict[str, float]:
        tuples = int(self._st[:, _N].sum())
        walked, mean, p99, wmax = self._walk_stats()
        return {
            "walk_mean": mean,
            "walk_p99": p99,
            "walk_max": wmax,
            "displaced_fraction": float(self._st[:, _DISP].sum()) / tuples if tuples else 0.0,
            "placement_fraction": walked / tuples if tuples else 0.0,
            "keys_mapped": float(self._st[:, _T].sum()) if self._mode == _KEY else 0.0,
        }

    def window_stats(self) -> dict[str, float]:
        s = self.summary()
        return {k: s[k] for k in ("displaced_fraction", "walk_mean", "keys_mapped")}
