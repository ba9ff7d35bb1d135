"""Two-phase aggregation: local-global pre-aggregation (LG-B) and key salting (SALT).

Implements the two-phase routers of ``practice.spec.md`` ("spec") section 2.5 -- Flink SQL's
local-global aggregation with mini-batches, and salting of hot keys (manual salting, and Flink's
split-distinct aggregation as the selector "all") -- with the parameters of section 2.8 and the
metrics of section 3 ("aggregation cost", "two-phase load").  "A8" / "A9" are entries of the
spec's section 6; "LG1-LG4" and "SA1-SA4'" are lines of the pseudocode in section 2.5.  The
SpaceSaving sketch and its head test are those of ``dchoices.spec.md`` section 2.4, run by the
shared kernel pieces of :mod:`skewbench.kernel.spacesaving`, as in D-Choices (one sketch per
source, never merged).

Model (spec 1.1, 2.0)
---------------------
Tuple ``seq`` belongs to source ``j = seq % sources`` and every source decides with its own
state only; the strategy object keeps that state for all sources between calls to
:meth:`~skewbench.grouping.base.Strategy.route`.  The base map is ``F(k) = F_1(k) =
hash_choice(k, hash_seeds(seed, 3)[0], n)`` -- key grouping's worker exactly (spec 2.5 [R]).
``hash_seeds(seed, 3)[1]`` seeds the HASHED salt and ``[2]`` the RANDOM salt.  Keys are any
int64 values.

``local-global`` (LG-B, lines LG1-LG4, spec A9)
-----------------------------------------------
Every tuple goes to ``F(k)``, so the *tuple* routing is KG's.  Per source ``j``, a mini-batch is
``B`` consecutive tuples of that source (tuples ``[c B, (c + 1) B)`` of its own sequence; a time
trigger is not modelled, A9).  A tuple *emits* (opens a partial record of the local combiner)
when its key was not yet seen in the source's current mini-batch; the partial is delivered to
``F(k)``.  The *delivered load* of worker ``w`` counts the emitting tuples routed to ``w`` -- one
partial record per (source, mini-batch, key).  The open mini-batch at any moment is counted as if
flushed then (end of stream flushes), so every statistic is defined at any point of the stream.
``B = 1`` delivers every tuple (KG).

Memory per source: the keys of its current mini-batch, at most ``min(B, distinct keys)``, in an
open-addressing table whose entries carry the mini-batch number (an entry of an older mini-batch
is free, so a flush costs nothing); the table doubles when half full.

Parameter: ``batch`` (``B``, integer ``>= 1``, default 5000, spec 2.8; sweep {1, 500, 5000,
50000}).

``summary()`` (numbers only): ``delivered`` (partial records in total), ``delivered_fraction``
(``delivered`` / tuples), ``delivered_load_max`` (``max_w delivered_w / delivered``, the delivered
load's largest share) and ``imbalance_delivered`` (that share minus ``1/n``); all 0 before the
first tuple.  ``window_stats()`` gives the same cumulative values.  The engine reports the
imbalance on tuples (spec 3: "for LG report it on delivered load and on tuples").

``salt`` (SALT(S, selector, salt), lines SA1-SA4', spec A8)
----------------------------------------------------------
A *hot* key's tuple gets a salt ``sigma`` in ``[0, S)`` and goes to its sub-key's worker; a cold
key's tuple goes to ``F(k)`` (SA2) and needs no merge.

* ``selector`` -- which keys are hot:

  - ``"hh"`` (default): every tuple is first offered to the source's SpaceSaving sketch (capacity
    ``max(100, ceil(4/theta))``, spec 2.5 and dchoices.spec.md A7) and ``m_j`` incremented; the key
    is hot when ``count >= theta * m_j`` -- the same head test as D-Choices' mode "spec" (no
    warm-up).  A key may switch between hot and cold, so its partial state may live on ``F(k)``
    and on up to ``S`` sub-key workers (spec 2.5).
  - ``"all"``: every key is hot (split-distinct; ``S = 1024``, ``draw = "hashed"`` is spec
    2.5(c)'s SPLIT-DISTINCT).
  - ``"none"``: no key is hot (the router is KG).
  - TOPK (spec 2.5) is **not implemented**: it needs an oracle list of the stream's ``K`` most
    frequent keys before the run, which a router fed batch by batch does not have.

* ``draw`` -- how ``sigma`` is drawn:

  - ``"random"`` (default, SA3): ``fastrange(mix64(t XOR seed_rand), S)`` for the tuple's stream
    position ``t``: a counter-based uniform draw, not a stateful RNG, so it does not depend on
    batch boundaries or on the order in which sources are fed.
  - ``"rr"`` (SA3'): a counter per (source, key), starting at 0, advanced by each of the key's
    salted tuples at that source and never reset (a key that turns cold and hot again continues
    where it stopped); its table keeps one counter per key ever salted at the source.
  - ``"hashed"`` (SA3''): ``fastrange(mix64(seed_salt XOR t), S)`` with the tuple seq ``t`` in
    place of the secondary attribute (A8).  With that stand-in it is the same formula as
    ``"random"`` under another seed: the two differ only on real attributes.

  ``fastrange(h, r) = ((h >> 32) * r) >> 32``, as in the project hash family.

* ``place`` -- where a sub-key goes:

  - ``"hash"`` (default, SA4): ``Wsub(k, sigma) = fastrange(mix64(mix64(k XOR seed_F) XOR
    (sigma + 1) * 0x9E3779B97F4A7C15), n)`` (``mix64(k XOR seed_F)`` is the hash behind
    ``F(k)``); two salts may share a worker.
  - ``"offset"`` (SA4'): ``(F(k) + sigma) mod n``: ``min(S, n)`` distinct workers.

* ``salts`` (``S``; default 0 meaning ``n``, spec 2.8).  ``S = 1`` salts nothing: a single salt
  does not split a key, and SA4 would only move it from ``F(k)`` to one other worker, so ``S = 1``
  is taken as "no salting" and the router is KG (spec 7 item 13: "SALT with S = 1 equals KG");
  the sketch still runs (``hot_keys_final``).

Merge, the second phase (spec 2.5, A8).  Tumbling merge windows of ``W_m`` global stream
positions: window ``seq // W_m``.  Every *active* sub-key ``(k, sigma)`` of a window -- at least
one salted tuple in that window, from any source -- sends one partial record to ``F(k)`` (Flink
semantics, counted per sub-key per window, A8; under OFFSET ``sigma = 0`` sits on ``F(k)`` and
its record still counts).  The partial state of ``(k, sigma)`` lives on one worker shared by
every source, so a sub-key fed by several sources in the same window sends one record.  The
count is a set of ``(window, k, sigma)`` triples over all sources: ``M`` (merge messages) is
its size and ``L2[F(k)]`` gains one per triple, so both depend only on which tuples were routed,
not on batch boundaries nor on the order in which the sources were fed.  A window still open
counts its active sub-keys as well (the end of the stream flushes), so ``summary()`` at any
point is what a flush at that point would send.  Memory: a triple is dropped once no source can
send another tuple into its window (every source has passed the window's end: its last seq
plus ``s`` is beyond it, and a source that has not sent yet could still start at its own
index), so a stream fed in order keeps only the open windows' triples.

``summary()`` (numbers only): ``merge_messages`` (``M``, summed over merge windows),
``merge_per_window`` (``M`` / merge windows begun, i.e. windows holding at least one routed
tuple; 0 before the first tuple), ``salted_fraction`` (salted tuples / tuples),
``phase2_load_max`` (``max_w L2[w] / M``, 0 when ``M = 0``), ``imbalance_two_phase``
(``max_w (L1_w + beta L2_w) / sum_w (L1_w + beta L2_w) - 1/n`` with ``L1`` the tuples routed;
0 when the sum is 0) and ``hot_keys_final`` (mean over the sources that routed tuples of the
sketch's head size, monitored keys with ``count >= theta m_j``, now; 0 without a sketch, i.e.
selectors "all" and "none").  ``window_stats()`` gives the cumulative ``merge_messages`` and
``salted_fraction``.  The engine's ``AGG_split`` (spec 3, A8) comes from the assignments.

Parameters: ``salts`` (0 = ``n``), ``selector`` ("hh"), ``theta`` (None = ``1/(5n)``;
``>= 1e-5`` so the sketch stays below 400 000 counters per source), ``draw`` ("random"),
``place`` ("hash"), ``merge_window`` (``W_m``, 100 000) and ``beta`` (1.0, weight of phase-2
load, ``>= 0``), the defaults of spec 2.5 and 2.8.

Implementation: one numba kernel call per batch.  The kernels stop before a tuple when one of
their open-addressing tables (LG's per-source mini-batch keys, SALT's merge triples and RR
counters) is half full; Python then compacts or doubles it and the kernel resumes at that tuple,
which changes nothing but memory.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from skewbench.jit import njit

from skewbench.errors import SkewbenchError
from skewbench.grouping.base import Batch, Strategy, check_number, hash_seeds
from skewbench.grouping.strategies.routed import route_in_steps
from skewbench.hashing import mix64
from skewbench.kernel.sources import source_start, source_step
from skewbench.kernel.spacesaving import (
    CNT, ERR, STATE_COLS, head_sizes, is_head, new_sketches, sketch_entries, ss_offer,
)

__all__ = ["LocalGlobal", "Salt"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_U32 = np.uint64(32)
# hash of the triple tables and of LG's mini-batch tables
_TA = np.uint64(0x9FB21C651E98DF25)
_TC = np.uint64(0xC2B2AE3D27D4EB4F)
# the third component of a free slot (merge triples use salts >= 0 and -1 for window markers, RR
# counters 0)
_EMPTY = np.int64(-2)

# selectors, draws, placements as kernel arguments
_SEL = {"hh": 0, "all": 1, "none": 2}
_DRAW = {"random": 0, "rr": 1, "hashed": 2}
_PLACE = {"hash": 0, "offset": 1}
_HH, _ALL = 0, 1
_RANDOM, _RRD, _HASHED = 0, 1, 2

# SALT per-source state: the SpaceSaving sketch's columns and, after them:
_M = STATE_COLS  # tuples seen (m_j)
_WIN = STATE_COLS + 1  # the source's current merge window
_WEND = STATE_COLS + 2  # first seq after that window (0 before the first tuple)
_LASTSEQ = STATE_COLS + 3  # the source's last seq
_SALTED = STATE_COLS + 4  # salted tuples
_SCOLS = STATE_COLS + 5

# SALT global counters
_MCOUNT = 0  # entries in the merge table (triples and window markers)
_MMSG = 1  # merge messages M
_MWIN = 2  # merge windows begun
_RCOUNT = 3  # entries in the RR counter table
_GCOLS = 4

# LG per-source state
_BCNT = 0  # tuples in the current mini-batch
_BID = 1  # mini-batch number
_DCNT = 2  # distinct keys in the current mini-batch
_LCOLS = 3

_MIN_BITS = 10  # smallest table: 1024 slots (tests lower it to exercise growth)


# --------------------------------------------------------------------------------------------
# numba kernels: open addressing over int64 triples

@njit(inline="always", cache=True)
def _fastrange(h, r):
    return np.int64(((h >> _U32) * np.uint64(r)) >> _U32)


@njit(inline="always", cache=True)
def _home3(a, b, c, shift):
    h = mix64((np.uint64(b) + np.uint64(a) * _TA) ^ (np.uint64(c) * _TC))
    return np.int64(h >> np.uint64(shift))


@njit(inline="always", cache=True)
def _add3(tk, a, b, c, shift, mask):
    """Slot of ``(a, b, c)`` (``c != _EMPTY``) in the table, inserted when absent;
    ``(slot, inserted)``."""
    i = _home3(a, b, c, shift)
    while tk[i, 2] != _EMPTY:
        if tk[i, 0] == a and tk[i, 1] == b and tk[i, 2] == c:
            return i, False
        i = (i + 1) & mask
    tk[i, 0] = a
    tk[i, 1] = b
    tk[i, 2] = c
    return i, True


@njit(cache=True)
def _rehash3(ok, ov, keep, nk, nv, shift):
    """Copy the entries with first component ``>= keep`` into the empty table ``nk/nv``."""
    mask = nk.shape[0] - 1
    cnt = 0
    for i in range(ok.shape[0]):
        if ok[i, 2] != _EMPTY and ok[i, 0] >= keep:
            slot, _ = _add3(nk, ok[i, 0], ok[i, 1], ok[i, 2], shift, mask)
            nv[slot] = ov[i]
            cnt += 1
    return cnt


# --------------------------------------------------------------------------------------------
# numba kernel: local-global

@njit(cache=True)
def _route_lg(seq, key, start, sources, seed, n, B, st, load, dl, lk, ls, out):
    """LG1-LG4 from ``start``; returns the index of the first tuple not routed (the length of
    the batch, or a tuple whose source's mini-batch table is half full)."""
    mask = lk.shape[1] - 1
    half = lk.shape[1] >> 1
    t, j = source_start()
    for i in range(start, seq.shape[0]):
        t, j = source_step(seq, i, t, j, sources)
        if st[j, _DCNT] >= half:
            return i
        k = key[i]
        h = mix64(np.uint64(k) ^ seed)
        w = _fastrange(h, n)
        stamp = st[j, _BID] + 1
        p = np.int64(h & np.uint64(mask))
        emit = False
        while True:
            if ls[j, p] != stamp:  # a slot of an older mini-batch is free
                lk[j, p] = k
                ls[j, p] = stamp
                emit = True
                break
            if lk[j, p] == k:
                break
            p = (p + 1) & mask
        if emit:
            dl[j, w] += 1
            st[j, _DCNT] += 1
        load[j, w] += 1
        b = st[j, _BCNT] + 1
        if b == B:  # LG3: flush
            st[j, _BCNT] = 0
            st[j, _BID] += 1
            st[j, _DCNT] = 0
        else:
            st[j, _BCNT] = b
        out[i] = w
    return seq.shape[0]


@njit(cache=True)
def _rehash_lg(st, ok, os_, nk, ns, seed):
    """Copy every source's current mini-batch keys into the larger empty table ``nk/ns``."""
    mask = nk.shape[1] - 1
    for j in range(ok.shape[0]):
        stamp = st[j, _BID] + 1
        for i in range(ok.shape[1]):
            if os_[j, i] == stamp:
                k = ok[j, i]
                p = np.int64(mix64(np.uint64(k) ^ seed) & np.uint64(mask))
                while ns[j, p] == stamp:
                    p = (p + 1) & mask
                nk[j, p] = k
                ns[j, p] = stamp


# --------------------------------------------------------------------------------------------
# numba kernel: salting

# _nrt=False: the kernel allocates nothing (as dchoices' head router; numba's reference counting
# around the inlined SpaceSaving helpers would cost on every tuple).
@njit(cache=True, _nrt=False)
def _route_salt(seq, key, start, sources, n, S, selector, draw, place, wm, theta, seed_f,
                seed_salt, seed_rand, st, load, ent, bk, table, shift, mk, mv, mshift,
                rk, rv, rshift, g, l2, out):
    """SA1-SA4' and the merge count from ``start``; returns the index of the first tuple not
    routed (the length of the batch, or a tuple for which a table lacks room)."""
    mmask = mk.shape[0] - 1
    mhalf = mk.shape[0] >> 1
    rmask = rk.shape[0] - 1
    rhalf = rk.shape[0] >> 1
    salting = S > 1 and selector != 2
    t, j = source_start()
    for i in range(start, seq.shape[0]):
        if g[_MCOUNT] + 2 > mhalf or (draw == _RRD and g[_RCOUNT] + 1 > rhalf):
            return i
        t, j = source_step(seq, i, t, j, sources)
        k = key[i]
        hf = mix64(np.uint64(k) ^ seed_f)
        f = _fastrange(hf, n)
        mj = st[j, _M] + 1
        st[j, _M] = mj
        st[j, _LASTSEQ] = t
        if t >= st[j, _WEND]:  # the source enters a new merge window (its seqs only increase)
            win = t // wm
            st[j, _WIN] = win
            st[j, _WEND] = (win + 1) * wm
            _, new = _add3(mk, win, np.int64(0), np.int64(-1), mshift, mmask)  # window marker
            if new:
                g[_MCOUNT] += 1
                g[_MWIN] += 1
        hot = False
        if selector == _HH:  # offer to SS_j, then the head test of dchoices.spec.md 2.4
            slot = ss_offer(j, k, st, ent, bk, table, shift)
            hot = is_head(ent[j, slot, CNT], ent[j, slot, ERR], mj, theta, False)
        elif selector == _ALL:
            hot = True
        if salting and hot:
            if draw == _RANDOM:  # SA3
                sigma = _fastrange(mix64(np.uint64(t) ^ seed_rand), S)
            elif draw == _HASHED:  # SA3''
                sigma = _fastrange(mix64(seed_salt ^ np.uint64(t)), S)
            else:  # SA3'
                r, new = _add3(rk, j, k, np.int64(0), rshift, rmask)
                if new:
                    rv[r] = 0
                    g[_RCOUNT] += 1
                sigma = rv[r]
                nxt = sigma + 1
                rv[r] = 0 if nxt == S else nxt
            if place == 0:  # SA4
                w = _fastrange(mix64(hf ^ ((np.uint64(sigma) + np.uint64(1)) * _GOLDEN)), n)
            else:  # SA4'
                w = (f + sigma) % n
            st[j, _SALTED] += 1
            _, new = _add3(mk, st[j, _WIN], k, sigma, mshift, mmask)
            if new:
                g[_MCOUNT] += 1
                g[_MMSG] += 1
                l2[f] += 1
        else:
            w = f
        load[j, w] += 1
        out[i] = w
    return seq.shape[0]


# --------------------------------------------------------------------------------------------
# strategies

def _bits_for(entries: int) -> int:
    """Table bits with room for ``entries`` at most a quarter full (at least ``_MIN_BITS``)."""
    return max(_MIN_BITS, int(max(1, 4 * entries - 1)).bit_length())


class LocalGlobal(Strategy):
    """LG-B: KG routing, one partial record per (source, mini-batch, key) delivered."""

    name = "local-global"
    description = "local-global aggregation: KG routing, one partial per key per source mini-batch delivered"
    defaults: dict[str, Any] = {"batch": 5000}
    param_docs = {
        "batch": ("B, the mini-batch size in tuples of one source (each source flushes its local "
                  "combiner every B of its tuples), an integer >= 1; the default 5000 is the "
                  "Flink docs' example, and B = 1 delivers every tuple as key grouping does."),
    }
    bench_target = 20
    engine_case = (5, 2, {"batch": 50})
    relaxation = "whole"
    route_cost = 0.3

    def _setup(self) -> None:
        p = self.params
        check_number(f"{self.name}: batch", p["batch"], low=1, high=2**62, integer=True)
        p["batch"] = int(p["batch"])
        s, n = self.sources, self.workers
        self._seed = hash_seeds(self.seed, 1)[0]
        self._st = np.zeros((s, _LCOLS), dtype=np.int64)
        self._load = np.zeros((s, n), dtype=np.int64)
        self._dl = np.zeros((s, n), dtype=np.int64)
        bits = min(_MIN_BITS, max(3, int(2 * p["batch"] - 1).bit_length()))
        self._lk = np.zeros((s, 1 << bits), dtype=np.int64)
        self._ls = np.zeros((s, 1 << bits), dtype=np.int64)

    def route(self, batch: Batch) -> np.ndarray:
        return route_in_steps(batch, self._step, self._grow)

    def _step(self, seq: np.ndarray, key: np.ndarray, i: int, out: np.ndarray) -> int:
        return _route_lg(seq, key, np.int64(i), np.int64(self.sources), self._seed, np.int64(self.workers),
                         np.int64(self.params["batch"]), self._st, self._load, self._dl, self._lk, self._ls, out)

    def _grow(self) -> None:
        """A mini-batch table is half full: double them."""
        cap = 2 * self._lk.shape[1]
        nk = np.zeros((self.sources, cap), dtype=np.int64)
        ns = np.zeros((self.sources, cap), dtype=np.int64)
        _rehash_lg(self._st, self._lk, self._ls, nk, ns, self._seed)
        self._lk, self._ls = nk, ns

    def local_loads(self) -> np.ndarray:
        """Tuples each source (rows) routed to each worker (a copy)."""
        return self._load.copy()

    def delivered_loads(self) -> np.ndarray:
        """Partial records each source (rows) delivered to each worker (a copy)."""
        return self._dl.copy()

    def _stats(self) -> dict[str, float]:
        tuples = int(self._load.sum())
        per_w = self._dl.sum(axis=0)
        total = int(per_w.sum())
        share = float(per_w.max()) / total if total else 0.0
        return {
            "delivered": float(total),
            "delivered_fraction": total / tuples if tuples else 0.0,
            "delivered_load_max": share,
            "imbalance_delivered": share - 1.0 / self.workers if total else 0.0,
        }

    def summary(self) -> dict[str, float]:
        return self._stats()

    def window_stats(self) -> dict[str, float]:
        return self._stats()


_SALT_DOCS = {
    "salts": ("S, the number of salts a hot key is split into, an integer >= 1 where the "
              "default 0 means S = n (spec 2.8); S = 1 salts nothing, so the router is key "
              "grouping."),
    "selector": ("Which keys are salted: 'hh' (default) the head of each source's SpaceSaving "
                 "sketch, count >= theta * m_j; 'all' every key (split-distinct); 'none' no key "
                 "(key grouping); the oracle TOPK selector is not implemented."),
    "theta": ("Heavy-hitter threshold of selector 'hh' on a key's estimated frequency within its "
              "source, a number >= 1e-5; the default None means 1/(5n), and the sketch holds "
              "max(100, ceil(4/theta)) counters per source."),
    "draw": ("How a hot tuple's salt is drawn: 'random' (default) a counter-based uniform draw "
             "from the salt seed and the tuple seq; 'rr' a per-source, per-key round robin "
             "from 0; 'hashed' a hash of the tuple seq."),
    "place": ("Where sub-key (k, sigma) goes: 'hash' (default) hashes the key's hash with "
              "sigma + 1 (SA4), 'offset' sends it to (F(k) + sigma) mod n for min(S, n) "
              "distinct workers (SA4')."),
    "merge_window": ("W_m, the length in global stream positions of the tumbling merge "
                     "windows at whose end each active sub-key sends one partial record to "
                     "F(k), an integer >= 1 (default 100000)."),
    "beta": ("Weight of a phase-2 partial record against a phase-1 tuple in the two-phase load "
             "L1 + beta L2, a number >= 0 (default 1.0)."),
}


class Salt(Strategy):
    """SALT(S, selector, salt) with the per-window merge of spec 2.5 (see the module docstring)."""

    name = "salt"
    description = "key salting: hot keys split over S hashed sub-keys, merged per window at F(key)"
    defaults: dict[str, Any] = {"salts": 0, "selector": "hh", "theta": None, "draw": "random",
                                "place": "hash", "merge_window": 100_000, "beta": 1.0}
    param_docs = dict(_SALT_DOCS)
    exercise = [{"merge_window": 500, "draw": "rr", "place": "offset", "theta": 0.02},
                {"selector": "all", "salts": 3, "draw": "hashed", "merge_window": 64}]
    bench_target = 20
    engine_case = (6, 3, {"merge_window": 500})
    aot_params = {"zipf": ("merge_window=1000",)}
    relaxation = "any"
    route_cost = 1.1

    def _setup(self) -> None:
        p, n, s, who = self.params, self.workers, self.sources, self.name
        check_number(f"{who}: salts", p["salts"], low=0, high=2**31, integer=True)
        p["salts"] = n if int(p["salts"]) == 0 else int(p["salts"])
        for name, allowed in (("selector", _SEL), ("draw", _DRAW), ("place", _PLACE)):
            if p[name] not in allowed:
                raise SkewbenchError(f"{who}: {name} must be one of {sorted(allowed)}, got {p[name]!r}")
        if p["theta"] is None:
            p["theta"] = 1.0 / (5 * n)
        check_number(f"{who}: theta", p["theta"], low=1e-5)
        check_number(f"{who}: merge_window", p["merge_window"], low=1, high=2**62, integer=True)
        check_number(f"{who}: beta", p["beta"], low=0)
        p["theta"], p["beta"], p["merge_window"] = float(p["theta"]), float(p["beta"]), int(p["merge_window"])
        seeds = hash_seeds(self.seed, 3)
        self._seed_f, self._seed_salt, self._seed_rand = seeds[0], seeds[1], seeds[2]
        cap = max(100, math.ceil(4.0 / p["theta"])) if p["selector"] == "hh" else 1
        self._cap = cap
        self._st, self._ent, self._bk, self._table, self._shift = new_sketches(s, cap, _SCOLS)
        self._load = np.zeros((s, n), dtype=np.int64)
        self._l2 = np.zeros(n, dtype=np.int64)
        self._g = np.zeros(_GCOLS, dtype=np.int64)
        self._merge = self._table3(_MIN_BITS)
        self._rr = self._table3(_MIN_BITS if p["draw"] == "rr" else 1)

    @staticmethod
    def _table3(bits: int) -> tuple[np.ndarray, np.ndarray, np.int64]:
        """An empty table of ``2**bits`` int64 triples (third component ``_EMPTY``) and values."""
        size = 1 << bits
        return (np.full((size, 3), _EMPTY, dtype=np.int64), np.zeros(size, dtype=np.int64),
                np.int64(64 - bits))

    def route(self, batch: Batch) -> np.ndarray:
        return route_in_steps(batch, self._step, self._make_room)

    def _step(self, seq: np.ndarray, key: np.ndarray, i: int, out: np.ndarray) -> int:
        p = self.params
        mk, mv, msh = self._merge
        rk, rv, rsh = self._rr
        return _route_salt(seq, key, np.int64(i), np.int64(self.sources), np.int64(self.workers),
                           np.int64(p["salts"]), np.int64(_SEL[p["selector"]]), np.int64(_DRAW[p["draw"]]),
                           np.int64(_PLACE[p["place"]]), np.int64(p["merge_window"]), p["theta"], self._seed_f,
                           self._seed_salt, self._seed_rand, self._st, self._load, self._ent, self._bk,
                           self._table, self._shift, mk, mv, msh, rk, rv, rsh, self._g, self._l2, out)

    def _frontier_window(self) -> int:
        """Windows below this one can receive no more tuples from any source."""
        s = self.sources
        st = self._st
        nxt = np.where(st[:, _M] > 0, st[:, _LASTSEQ] + s, np.arange(s))
        return int(nxt.min()) // self.params["merge_window"]

    def _make_room(self) -> None:
        mk, mv, _ = self._merge
        if self._g[_MCOUNT] + 2 > mk.shape[0] >> 1:  # drop closed windows, resize
            keep = self._frontier_window()
            live = int(np.count_nonzero((mk[:, 2] != _EMPTY) & (mk[:, 0] >= keep)))
            new = self._table3(_bits_for(live + 2))
            self._g[_MCOUNT] = _rehash3(mk, mv, np.int64(keep), *new)
            self._merge = new
        rk, rv, _ = self._rr
        if self.params["draw"] == "rr" and self._g[_RCOUNT] + 1 > rk.shape[0] >> 1:
            new = self._table3(int(rk.shape[0]).bit_length())  # double
            self._g[_RCOUNT] = _rehash3(rk, rv, np.int64(-1), *new)
            self._rr = new

    # ---- inspection (tests and diagnostics)
    def local_loads(self) -> np.ndarray:
        """Tuples (phase 1) each source (rows) routed to each worker (a copy)."""
        return self._load.copy()

    def phase2_loads(self) -> np.ndarray:
        """``L2[w]``: partial records merged at each worker so far (a copy)."""
        return self._l2.copy()

    def sketch(self, source: int) -> dict[int, tuple[int, int]]:
        """SpaceSaving summary of ``source`` (selector 'hh'): ``{key: (count, err)}``."""
        if not 0 <= source < self.sources:
            raise SkewbenchError(f"{self.name}: source must be in [0, {self.sources}), got {source}")
        if self.params["selector"] != "hh":
            return {}
        return sketch_entries(self._st, self._ent, source)

    def merge_table_size(self) -> int:
        """Entries the merge table holds now (triples of open windows and window markers)."""
        return int(self._g[_MCOUNT])

    # ---- statistics
    def _active(self) -> np.ndarray:
        active = self._st[:, _M] > 0
        return active if active.any() else np.ones(len(active), dtype=bool)

    def _hot_keys(self) -> float:
        if self.params["selector"] != "hh":
            return 0.0
        head = head_sizes(self._st, self._ent, self._st[:, _M], self.params["theta"], False)
        return float(head[self._active()].mean())

    def _salted_fraction(self) -> float:
        tuples = int(self._st[:, _M].sum())
        return int(self._st[:, _SALTED].sum()) / tuples if tuples else 0.0

    def summary(self) -> dict[str, float]:
        m, wins, n = int(self._g[_MMSG]), int(self._g[_MWIN]), self.workers
        total = self._load.sum(axis=0) + self.params["beta"] * self._l2
        tot = float(total.sum())
        return {
            "merge_messages": float(m),
            "merge_per_window": m / wins if wins else 0.0,
            "salted_fraction": self._salted_fraction(),
            "phase2_load_max": float(self._l2.max()) / m if m else 0.0,
            "imbalance_two_phase": float(total.max()) / tot - 1.0 / n if tot > 0 else 0.0,
            "hot_keys_final": self._hot_keys(),
        }

    def window_stats(self) -> dict[str, float]:
        return {"merge_messages": float(self._g[_MMSG]), "salted_fraction": self._salted_fraction()}
