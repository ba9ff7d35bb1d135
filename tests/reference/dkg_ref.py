"""Plain-Python reference of DKG (practice.spec.md 2.6), used only by tests.

One tuple at a time with dicts and lists, following the spec's lines literally: per source a
learning phase (DL1-DL3) over its first ``L`` tuples, the build (DB1-DB6) after the ``L``-th,
then routing by ``hhMap`` / ``bucketMap``.  It shares nothing with ``skewbench.grouping.strategies.dkg``;
only ``hash_seeds`` / ``hash_choice_py`` (``F_1``) and ``mix64_py`` (the seeded draw of
``(a, b)``, as documented in the implementation's docstring) come from the library.

Fixed as in the implementation's docstring: SpaceSaving evicts the smallest count, ties to the
lowest key value (A12); learning tuples go to ``F_1`` (A10); ``C = ceil(ef / theta)``, the HH
threshold ``ceil(theta L)``, both in floating point.
"""

from __future__ import annotations

import math

from skewbench.grouping.base import hash_choice_py, hash_seeds
from skewbench.hashing import mix64_py

P = 10000019
SALT_A = 0x5851F42D4C957F2D
SALT_B = 0x14057B7EF767814F


def resolve(n, params):
    p = {"theta": None, "mu": 2, "learn": 100000, "ef": 2.0}
    p.update(params)
    if p["theta"] is None:
        p["theta"] = 1.0 / (5 * n)
    return p


def ab(seed):
    s1 = int(hash_seeds(seed, 1)[0])
    return 1 + mix64_py(s1 ^ SALT_A) % (P - 1), 1 + mix64_py(s1 ^ SALT_B) % (P - 1)


def bucket(k, a, b, nb):
    """DL1; Python's % with a positive divisor is floorMod."""
    x = k % P
    return ((a * x + b) % P) % nb


class SpaceSaving:
    """(count, err) counters; the victim is the smallest count, then the lowest key (A12)."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.count = {}
        self.err = {}

    def offer(self, x):
        if x in self.count:
            self.count[x] += 1
        elif len(self.count) < self.capacity:
            self.count[x] = 1
            self.err[x] = 0
        else:
            y = min(self.count, key=lambda e: (self.count[e], e))
            c = self.count.pop(y)
            del self.err[y]
            self.count[x] = c + 1
            self.err[x] = c


def lpt_in_order(weights, n):
    """DB5 on items already in order: each to the least loaded worker, ties lowest index."""
    loads = [0] * n
    assign = []
    for wgt in weights:
        best = min(range(n), key=lambda w: (loads[w], w))
        assign.append(best)
        loads[best] += wgt
    return assign, loads


class Source:
    def __init__(self, capacity, nb):
        self.m = 0
        self.ss = SpaceSaving(capacity)
        self.bcount = [0] * nb
        self.hh = None  # hhMap after the build
        self.bmap = None
        self.weights = None  # LPT loads per worker
        self.hh_weight = None


class Reference:
    def __init__(self, n, s, seed, **params):
        self.n, self.s = n, s
        self.p = resolve(n, params)
        self.L = self.p["learn"]
        self.capacity = math.ceil(self.p["ef"] / self.p["theta"])
        self.nb = math.ceil(self.p["mu"] * n)
        self.thr = math.ceil(self.p["theta"] * self.L)
        self.f1 = int(hash_seeds(seed, 1)[0])
        self.a, self.b = ab(seed)
        self.src = [Source(self.capacity, self.nb) for _ in range(s)]
        self.learning_tuples = 0
        self.tuples = 0

    def hb(self, k):
        return bucket(k, self.a, self.b, self.nb)

    def build(self, src):
        hh = {x: c - src.ss.err[x] for x, c in src.ss.count.items() if c - src.ss.err[x] >= self.thr}  # DB1
        for x, wgt in hh.items():  # DB2
            src.bcount[self.hb(x)] -= wgt
        items = [(wgt, 1, x) for x, wgt in hh.items()] + [(src.bcount[b], 0, -b) for b in range(self.nb)]  # DB3
        items.sort(key=lambda it: (-it[0], it[1], it[2]))  # DB4
        assign, loads = lpt_in_order([it[0] for it in items], self.n)  # DB5
        src.hh, src.bmap = {}, [None] * self.nb
        for (wgt, kind, ident), w in zip(items, assign):  # DB6
            if kind == 1:
                src.hh[ident] = w
            else:
                src.bmap[-ident] = w
        src.weights = loads
        src.hh_weight = hh

    def route_one(self, t, k):
        src = self.src[t % self.s]
        self.tuples += 1
        if src.m < self.L:  # DL2-DL3
            src.ss.offer(k)
            src.bcount[self.hb(k)] += 1
            w = hash_choice_py(k, self.f1, self.n)
            src.m += 1
            self.learning_tuples += 1
            if src.m == self.L:
                self.build(src)
            return w
        src.m += 1
        if k in src.hh:
            return src.hh[k]
        return src.bmap[self.hb(k)]

    def route(self, seqs, keys):
        return [self.route_one(int(t), int(k)) for t, k in zip(seqs, keys)]

    def summary(self):
        done = [src for src in self.src if src.hh is not None]
        mean_w = self.L / self.n
        return {
            "learned_sources": float(len(done)),
            "hh_size": sum(len(src.hh) for src in done) / len(done) if done else 0.0,
            "buckets": float(self.nb),
            "lpt_makespan_ratio": sum(max(src.weights) / mean_w for src in done) / len(done) if done else 0.0,
            "learning_fraction": self.learning_tuples / self.tuples if self.tuples else 0.0,
        }


def route(keys, n, s, seed=0, seqs=None, **params):
    ref = Reference(n, s, seed, **params)
    return ref.route(range(len(keys)) if seqs is None else seqs, keys)
