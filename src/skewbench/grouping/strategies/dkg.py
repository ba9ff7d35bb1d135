"""DKG: Distribution-aware Key Grouping (Rivetti, Querzoni, Anceaume, Busnel, Sericola, DEBS 2015).

Follows ``practice.spec.md`` ("spec") section 2.6; "DL1"-"DL3" and "DB1"-"DB6" are the lines of
its learning and build pseudocode, "A10"-"A13" the entries of its section 6.

Model (spec 1.1, 2.6)
---------------------
Tuple ``seq`` belongs to source ``j = seq % sources``, and every source runs its own DKG
instance (in Storm every upstream task has its own grouping object).  Source ``j`` goes through
two phases:

* **learning** (its first ``L`` tuples, ``L = learn``): each tuple is offered to a SpaceSaving
  sketch of ``C = ceil(ef / theta)`` counters ``(count, err)`` and counted in its bucket
  ``hb(k)`` of ``NB = ceil(mu n)`` bucket counters (DL1-DL2); the tuple itself is routed with
  ``F_1(k) = hash_choice(k, hash_seeds(seed, 1)[0], n)``, i.e. where ``kg`` sends it (DL3, A10).
* **build**, right after the ``L``-th learning tuple (``m_L = L``): the heavy hitters ``HH = {x
  monitored : count_x - err_x >= ceil(theta L)}`` with weight ``count_x - err_x`` (DB1) are
  taken out of their buckets (DB2); the items, HH keys and all ``NB`` buckets (empty ones
  included), are sorted by weight, descending, ties: buckets before keys, buckets by decreasing
  index, keys by increasing value (DB4), and LPT gives each in turn to the worker with the
  smallest accumulated weight, ties to the lowest index (DB5).  The result is ``hhMap`` (key ->
  worker) and ``bucketMap`` (bucket -> worker) (DB6).
* **routing** (from tuple ``L + 1`` of the source on): ``hhMap[k]`` if ``k`` is a heavy hitter,
  else ``bucketMap[hb(k)]``.

All state is per source, so feeding the whole stream at once, in batches of any size, or each
source's tuples separately gives the same assignments.  After learning, a source's routing is
a pure function of the key; two sources may still map a key to different workers (their
samples differ), so a key may reach up to ``s`` workers (spec 2.6 code fact 3, A11).

Bucket hash (DL1): ``hb(k) = ((a x + b) mod p) mod NB`` with ``x = floorMod(k, p)`` and
``p = 10000019`` (spec code fact 2: ``floorMod`` keeps negative keys in range and equals the
published ``%`` for ``k >= 0``).  ``(a, b)`` is one seeded draw per cell, the same at every
source (A10: the Java generator seeded with 1000 cannot be reproduced):
``a = 1 + mix64(F_1's seed XOR 0x5851F42D4C957F2D) mod (p - 1)`` and ``b`` likewise with the
salt ``0x14057B7EF767814F``, both uniform in ``[1, p - 1]`` up to a bias below ``10^-11``.
``a x + b < p^2 + p`` fits in 64 bits.

Choices where the spec leaves room
----------------------------------
* SpaceSaving (DL2, A12): DKG's own variant with ``(count, err)`` per counter: a monitored key
  is incremented; a new key takes a free counter ``(1, 0)`` while fewer than ``C`` are used;
  otherwise it replaces the victim, the counter of smallest count and, among equal smallest
  counts, of the lowest key value (A12), and gets ``(c + 1, c)`` where ``c`` is the victim's
  count.  Kept as a binary min-heap on ``(count, key)`` over the counters plus an
  open-addressing table from key to counter (:mod:`skewbench.kernel.table`, the one D-Choices'
  sketch uses; O(log C) per learning tuple).
* ``C = ceil(ef / theta)`` and the HH threshold ``ceil(theta L)`` are computed in float64 (as
  ``math.ceil(ef / theta)`` and ``math.ceil(theta * L)``).  ``theta > 1`` makes the threshold
  exceed ``L >= count - err``, so no key is heavy and every item is a bucket (spec 7, item 18).
* LPT (DB5, A12 / code fact 1): the intended rule, the item's weight is added to the load of
  the worker that receives it.  The published code never updates the load and sends every item
  to worker 0; that is not reproduced (``tests/property/test_dkg_property.py`` fails on it).
* Learning tuples (A10): routed with ``F_1`` and counted by the metrics like any other tuple;
  ``summary()['learning_fraction']`` says how many there were.
* Defaults (A13): ``theta = 1/(5n)`` (D-Choices' head threshold, so the two head detectors are
  comparable), ``mu = 2``, ``L = 10^5`` tuples per source, ``ef = 2`` (the code's value).
* Variant SHARED (spec 2.6 code fact 3, A11; one mapping learned from the union of all
  sources' learning tuples) is **not implemented**: it needs the sources to pool their samples
  and agree on one mapping, which breaks the routing model (every source decides from its own
  state, and feeding each source's tuples separately must give the same result).

Parameters
----------
``theta`` (``None`` -> ``1/(5n)``): heavy-hitter threshold, a fraction of ``L``, ``> 0``.
``mu`` (``2``): bucket factor, ``NB = ceil(mu n)``, ``>= 1``.
``learn`` (``100000``): ``L``, learning tuples per source, an integer ``>= 1``.
``ef`` (``2.0``): SpaceSaving precision factor, ``epsilon = theta / ef``, ``>= 1``.

Statistics
----------
``summary()``: ``learned_sources`` (sources that finished learning), ``hh_size`` (mean ``|HH_j|``
over them), ``buckets`` (``NB``), ``lpt_makespan_ratio`` (mean over them of the largest LPT
worker weight over the mean one, ``L / n``; 1 is a perfect schedule), ``learning_fraction``
(tuples routed in a learning phase / tuples routed).  The averages are 0 while no source has
learned.  ``window_stats()``: ``learned_sources`` so far.  :meth:`DKG.sketch`,
:meth:`DKG.heavy_hitters`, :meth:`DKG.bucket_map`, :meth:`DKG.learned_weights` and
:meth:`DKG.bucket_counts` expose a source's state for tests and diagnostics; :func:`lpt` and
:func:`bucket_of` are the scheduler and the bucket hash on their own.

Implementation: the routing kernel runs over the batch without numba's reference counting (it
allocates nothing) and returns when a tuple completes a source's learning; the build then runs
(numpy for DB1-DB4, small kernels for LPT and the heavy-hitter table) and the routing kernel
resumes after that tuple, so a stream costs at most ``s`` extra calls.  A routing-phase tuple costs one probe of the source's
heavy-hitter table (skipped when it is empty) and, for other keys, the bucket hash.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from skewbench.jit import njit

from skewbench.errors import SkewbenchError
from skewbench.grouping.base import (
    Batch, Strategy, batch_arrays, check_number, hash_choice, hash_seeds,
)
from skewbench.hashing import mix64, mix64_py
from skewbench.kernel.sources import source_start, source_step
from skewbench.kernel.table import new_table, table_find, table_home, table_insert, table_remove

__all__ = ["DKG", "lpt", "bucket_of", "bucket_params", "PRIME"]

#: the prime of the bucket hash (DL1)
PRIME = 10000019
_SALT_A = 0x5851F42D4C957F2D
_SALT_B = 0x14057B7EF767814F
_TSALT = np.uint64(0x9FB21C651E98DF25)  # the key tables' own hash
#: memory guard: SpaceSaving counters and buckets per source
_MAX_CELLS = 1 << 22

# columns of the per-source integer state
_M = 0  # tuples seen (learning and routing)
_SIZE = 1  # SpaceSaving counters in use
_HH = 2  # |HH_j| after the build, 0 before
_LMAX = 3  # largest LPT worker weight after the build, 0 before
_NCOL = 4


# --------------------------------------------------------------------------------------------
# numba kernels

@njit(inline="always", cache=True)
def _bucket(k, a, b, nb):
    """``hb(k) = ((a x + b) mod p) mod NB``, ``x = floorMod(k, p)`` (DL1)."""
    x = k % PRIME
    if x < 0:
        x += PRIME
    return ((a * x + b) % PRIME) % nb


@njit(inline="always", cache=True)
def _less(j, x, y, sk, sc):
    """Counter ``x`` before ``y`` in the victim order ``(count, key)``."""
    return sc[j, x] < sc[j, y] or (sc[j, x] == sc[j, y] and sk[j, x] < sk[j, y])


@njit(inline="always", cache=True)
def _sift_down(j, i, size, heap, pos, sk, sc):
    x = heap[j, i]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and _less(j, heap[j, c + 1], heap[j, c], sk, sc):
            c += 1
        y = heap[j, c]
        if not _less(j, y, x, sk, sc):
            break
        heap[j, i] = y
        pos[j, y] = i
        i = c
    heap[j, i] = x
    pos[j, x] = i


@njit(inline="always", cache=True)
def _sift_up(j, i, heap, pos, sk, sc):
    x = heap[j, i]
    while i > 0 and _less(j, x, heap[j, (i - 1) >> 1], sk, sc):  # the parent moves down
        heap[j, i] = heap[j, (i - 1) >> 1]
        pos[j, heap[j, i]] = i
        i = (i - 1) >> 1
    heap[j, i] = x
    pos[j, x] = i


@njit(inline="always", cache=True)
def _ss_offer(j, k, cap, st, sk, sc, se, heap, pos, table, shift, mask):
    """DKG's SpaceSaving update (DL2, A12) of key ``k`` at source ``j``."""
    slot = table_find(table, j, sk, k, _TSALT, shift, mask)
    size = st[j, _SIZE]
    if slot >= 0:
        sc[j, slot] += 1
        _sift_down(j, pos[j, slot], size, heap, pos, sk, sc)
    elif size < cap:
        sk[j, size] = k
        sc[j, size] = 1
        se[j, size] = 0
        heap[j, size] = size
        pos[j, size] = size
        st[j, _SIZE] = size + 1
        table_insert(table, j, k, size, _TSALT, shift, mask)
        _sift_up(j, size, heap, pos, sk, sc)
    else:  # replace the victim: smallest count, then lowest key
        v = heap[j, 0]
        c = sc[j, v]
        table_remove(table, j, sk, sk[j, v], _TSALT, shift, mask)
        sk[j, v] = k
        sc[j, v] = c + 1
        se[j, v] = c
        table_insert(table, j, k, v, _TSALT, shift, mask)
        _sift_down(j, 0, size, heap, pos, sk, sc)


@njit(inline="always", cache=True)
def _lpt_assign(weights, n, assign, loads):
    """DB5: item ``i`` (in the given order) to the worker of smallest load, ties to the lowest
    index; its weight is added to that worker's load."""
    for i in range(weights.shape[0]):
        best = 0
        for w in range(1, n):
            if loads[w] < loads[best]:
                best = w
        assign[i] = best
        loads[best] += weights[i]


@njit(cache=True)
def _lpt_kernel(weights, n, assign, loads):
    _lpt_assign(weights, n, assign, loads)


@njit(cache=True)
def _hh_insert(j, keys, workers, hkey, hwk, shift):
    """DB6 for the heavy hitters: ``hhMap[keys[i]] = workers[i]`` at source ``j``."""
    mask = hkey.shape[1] - 1
    for i in range(keys.shape[0]):
        h = table_home(keys[i], _TSALT, shift)
        while hwk[j, h] >= 0:
            h = (h + 1) & mask
        hkey[j, h] = keys[i]
        hwk[j, h] = workers[i]


@njit(cache=True, _nrt=False)
def _route_dkg(seq, key, start, sources, n, seed1, a, b, nb, learn, cap, st, sk, sc, se, heap, pos, table,
               shift, bcount, bmap, hkey, hwk, out):
    """Route ``seq[start:]``; stop after a tuple that completes a source's learning and return
    its index (the caller then builds that source's mapping and resumes), or -1 at the end."""
    mask = table.shape[1] - 1
    t, j = source_start()
    for i in range(start, seq.shape[0]):
        t, j = source_step(seq, i, t, j, sources)
        k = key[i]
        m = st[j, _M]
        st[j, _M] = m + 1
        if m >= learn:  # routing phase
            w = np.int64(-1)
            if st[j, _HH] > 0:
                h = table_home(k, _TSALT, shift)
                while True:
                    ww = hwk[j, h]
                    if ww < 0:
                        break
                    if hkey[j, h] == k:
                        w = ww
                        break
                    h = (h + 1) & mask
            if w < 0:
                w = bmap[j, _bucket(k, a, b, nb)]
            out[i] = w
        else:  # learning phase (DL2-DL3)
            _ss_offer(j, k, cap, st, sk, sc, se, heap, pos, table, shift, mask)
            bcount[j, _bucket(k, a, b, nb)] += 1
            out[i] = hash_choice(k, seed1, n)
            if m + 1 == learn:
                return i
    return -1


# --------------------------------------------------------------------------------------------
# plain functions

def bucket_params(seed: int) -> tuple[int, int]:
    """``(a, b)`` of the bucket hash for the cell's ``seed``, each in ``[1, p - 1]`` (DL1, A10)."""
    s1 = int(hash_seeds(seed, 1)[0])
    return (1 + mix64_py(s1 ^ _SALT_A) % (PRIME - 1), 1 + mix64_py(s1 ^ _SALT_B) % (PRIME - 1))


def bucket_of(keys: Any, a: int, b: int, nb: int) -> np.ndarray:
    """``hb(k)`` of every key (int64 array), ``floorMod`` for negative keys (DL1)."""
    k = np.asarray(keys, dtype=np.int64)
    x = np.mod(k, PRIME)  # numpy's mod of a positive divisor is floorMod
    return (((np.int64(a) * x + np.int64(b)) % PRIME) % np.int64(nb)).astype(np.int64)


def lpt(weights: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """LPT (DB4-DB5) on items ``weights`` (integers >= 0) for ``n`` workers: the items sorted by
    weight, descending (equal weights in the given order), each to the worker of smallest load,
    ties to the lowest index.  Returns ``(worker of each item in the given order, loads)``."""
    check_number("n", n, low=1, integer=True)
    w = np.ascontiguousarray(weights, dtype=np.int64).ravel()
    order = np.argsort(-w, kind="stable")
    assign = np.empty(len(w), dtype=np.int64)
    loads = np.zeros(int(n), dtype=np.int64)
    if len(w):
        _lpt_kernel(w[order], np.int64(n), assign, loads)
    out = np.empty(len(w), dtype=np.int64)
    out[order] = assign
    return out, loads


# --------------------------------------------------------------------------------------------
# the strategy

class DKG(Strategy):
    name = "dkg"
    description = ("DKG: per source, learn heavy hitters and bucket weights on the first L tuples "
                   "(routed by F_1), then route by an LPT schedule of them")
    defaults: dict[str, Any] = {"theta": None, "mu": 2, "learn": 100000, "ef": 2.0}
    param_docs = {
        "theta": ("Heavy-hitter threshold as a fraction of the learning tuples, a number > 0: a "
                  "key is heavy when its SpaceSaving lower bound count - err reaches "
                  "ceil(theta * learn); the default None means 1/(5n) for n workers, and "
                  "theta > 1 makes every item a bucket (spec 2.6, A13)."),
        "mu": ("Bucket factor, a number >= 1: the light keys are hashed into ceil(mu * n) "
               "buckets that LPT schedules as items (default 2, spec 2.6, A13)."),
        "learn": ("Learning tuples per source (L), an integer >= 1: each source's first L tuples "
                  "are counted and routed like kg, and its mapping is built after the L-th "
                  "(default 100000, spec 2.6, A10, A13)."),
        "ef": ("SpaceSaving precision factor, a number >= 1: each source's learning sketch "
               "has ceil(ef / theta) counters, i.e. epsilon = theta / ef (default 2.0, the "
               "published code's value)."),
    }
    # the default learning phase (10^5 tuples) outlasts the conformance test's 6,000-tuple stream
    exercise = [{"learn": 300}, {"learn": 40, "theta": 0.05, "mu": 1, "ef": 1.0}]
    bench_target = 20
    engine_case = (5, 2, {"learn": 300})
    aot_params = {"zipf": ("learn=500",)}
    seeded = True
    relaxation = "whole"
    #: measured: 10^7 Zipf(1.0) tuples over 10^4 keys, n = s = 5, defaults, blocks of 2^20:
    #: 2.6x the numpy hash pass, 0.29x D-C and 4.7x KG in the same process (34 M tuples/s)
    route_cost = 0.4

    def _setup(self) -> None:
        p, n, who = self.params, self.workers, self.name
        if p["theta"] is None:
            p["theta"] = 1.0 / (5 * n)
        check_number(f"{who}: theta", p["theta"], low=0, low_open=True)
        check_number(f"{who}: mu", p["mu"], low=1)
        check_number(f"{who}: learn", p["learn"], low=1, high=2**62, integer=True)
        check_number(f"{who}: ef", p["ef"], low=1)
        p["theta"], p["mu"], p["ef"], p["learn"] = float(p["theta"]), float(p["mu"]), float(p["ef"]), int(p["learn"])
        cap = math.ceil(p["ef"] / p["theta"])
        if cap > _MAX_CELLS:
            raise SkewbenchError(f"{who}: ef / theta must be at most {_MAX_CELLS} (SpaceSaving "
                                 f"counters per source), got ef={p['ef']!r}, theta={p['theta']!r}")
        nb = math.ceil(p["mu"] * n)
        if nb > _MAX_CELLS:
            raise SkewbenchError(f"{who}: mu * workers must be at most {_MAX_CELLS} (buckets per "
                                 f"source), got mu={p['mu']!r} with {n} workers")
        learn = p["learn"]
        self._cap = int(cap)
        self._nb = int(nb)
        self._thr = int(min(math.ceil(p["theta"] * learn), learn + 1))  # > learn: no heavy key
        self._seed1 = hash_seeds(self.seed, 1)[0]
        self._a, self._b = bucket_params(self.seed)
        s = self.sources
        self._st = np.zeros((s, _NCOL), dtype=np.int64)
        self._sk = np.zeros((s, cap), dtype=np.int64)
        self._sc = np.zeros((s, cap), dtype=np.int64)
        self._se = np.zeros((s, cap), dtype=np.int64)
        self._heap = np.zeros((s, cap), dtype=np.int64)
        self._pos = np.zeros((s, cap), dtype=np.int64)
        self._table, self._shift = new_table(s, cap)
        self._bcount = np.zeros((s, nb), dtype=np.int64)
        self._bmap = np.zeros((s, nb), dtype=np.int64)
        self._hkey = np.zeros(self._table.shape, dtype=np.int64)
        self._hwk = np.full(self._table.shape, -1, dtype=np.int64)
        self._lw = np.zeros((s, n), dtype=np.int64)

    def route(self, batch: Batch) -> np.ndarray:
        seq, key = batch_arrays(batch)
        out = np.empty(seq.size, dtype=np.int64)
        start = 0
        while start < seq.size:
            done = _route_dkg(seq, key, np.int64(start), np.int64(self.sources), np.int64(self.workers),
                              self._seed1, np.int64(self._a), np.int64(self._b), np.int64(self._nb),
                              np.int64(self.params["learn"]), np.int64(self._cap), self._st, self._sk,
                              self._sc, self._se, self._heap, self._pos, self._table, self._shift,
                              self._bcount, self._bmap, self._hkey, self._hwk, out)
            if done < 0:
                break
            # the tuple at ``done`` completed its source's learning: build its mapping
            self._build(int(seq[done] % self.sources))
            start = int(done) + 1
        return out

    def _build(self, j: int) -> None:
        """DB1-DB6 for source ``j``."""
        size = int(self._st[j, _SIZE])
        wgt = self._sc[j, :size] - self._se[j, :size]
        heavy = wgt >= self._thr  # DB1
        keys, kw = self._sk[j, :size][heavy], wgt[heavy]
        bcount = self._bcount[j]
        np.subtract.at(bcount, bucket_of(keys, self._a, self._b, self._nb), kw)  # DB2
        nb, nh = self._nb, len(keys)
        weights = np.concatenate([bcount, kw])  # DB3: buckets 0..NB-1, then the keys
        # DB4: weight descending; ties: buckets first, buckets by decreasing index, keys by value
        kind = np.concatenate([np.zeros(nb, dtype=np.int64), np.ones(nh, dtype=np.int64)])
        tie = np.concatenate([-np.arange(nb, dtype=np.int64), keys])
        order = np.lexsort((tie, kind, -weights))
        assign = np.empty(nb + nh, dtype=np.int64)
        loads = np.zeros(self.workers, dtype=np.int64)
        _lpt_kernel(np.ascontiguousarray(weights[order]), np.int64(self.workers), assign, loads)  # DB5
        worker = np.empty(nb + nh, dtype=np.int64)
        worker[order] = assign
        self._bmap[j] = worker[:nb]  # DB6
        _hh_insert(np.int64(j), np.ascontiguousarray(keys), np.ascontiguousarray(worker[nb:]),
                   self._hkey, self._hwk, self._shift)
        self._lw[j] = loads
        self._st[j, _HH] = nh
        self._st[j, _LMAX] = loads.max()

    # ---- state, for tests and diagnostics
    def _source(self, source: int) -> int:
        if not isinstance(source, (int, np.integer)) or not 0 <= source < self.sources:
            raise SkewbenchError(f"{self.name}: source must be an integer in [0, {self.sources}), got {source!r}")
        return int(source)

    def learned(self) -> np.ndarray:
        """Per source: True when it has finished learning (its mapping is built)."""
        return self._st[:, _M] >= self.params["learn"]

    def messages(self) -> np.ndarray:
        """Tuples each source has seen."""
        return self._st[:, _M].copy()

    def sketch(self, source: int) -> dict[int, tuple[int, int]]:
        """The learning SpaceSaving of ``source``: ``{key: (count, err)}`` (frozen after the
        build)."""
        j = self._source(source)
        size = int(self._st[j, _SIZE])
        return {int(k): (int(c), int(e)) for k, c, e in
                zip(self._sk[j, :size], self._sc[j, :size], self._se[j, :size])}

    def bucket_counts(self, source: int) -> np.ndarray:
        """Bucket weights of ``source``: learning counts, minus the heavy hitters' weights once
        built (DB2)."""
        return self._bcount[self._source(source)].copy()

    def heavy_hitters(self, source: int) -> dict[int, int]:
        """``hhMap`` of ``source``: heavy key -> worker (empty before the build)."""
        j = self._source(source)
        used = self._hwk[j] >= 0
        return {int(k): int(w) for k, w in zip(self._hkey[j, used], self._hwk[j, used])}

    def bucket_map(self, source: int) -> np.ndarray | None:
        """``bucketMap`` of ``source`` (bucket -> worker), None before the build."""
        j = self._source(source)
        return self._bmap[j].copy() if self.learned()[j] else None

    def learned_weights(self, source: int) -> np.ndarray | None:
        """The LPT schedule's weight per worker of ``source``, None before the build."""
        j = self._source(source)
        return self._lw[j].copy() if self.learned()[j] else None

    # ---- statistics
    def summary(self) -> dict[str, float]:
        learned = self.learned()
        nl = int(learned.sum())
        seen = int(self._st[:, _M].sum())
        in_learning = int(np.minimum(self._st[:, _M], self.params["learn"]).sum())
        mean_w = self.params["learn"] / self.workers
        return {
            "learned_sources": float(nl),
            "hh_size": float(self._st[learned, _HH].mean()) if nl else 0.0,
            "buckets": float(self._nb),
            "lpt_makespan_ratio": float((self._st[learned, _LMAX] / mean_w).mean()) if nl else 0.0,
            "learning_fraction": in_learning / seen if seen else 0.0,
        }

    def window_stats(self) -> dict[str, float]:
        return {"learned_sources": float(self.learned().sum())}
