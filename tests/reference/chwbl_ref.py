"""Plain-Python reference of consistent hashing with bounded loads (practice.spec.md 2.1), used
only by tests.

One tuple at a time with lists and dicts, following the spec literally: the ring is a sorted list
of ``(pos, w, v)`` triples, ``succ`` is a ``bisect`` over it, the walk ``omega(k)`` goes clockwise
from ``succ(k)`` keeping first occurrences, and C1-C6 pick the first worker whose load is below
``cap = ((T+1) F + 100 n - 1) // (100 n)`` (Python integers: no clamping of ``F``).  The three
accountings: (P) cumulative per-source counts; (Wn) a list of the last ``W - 1`` decisions of the
source (the oldest leaves after a decision, as the implementation's docstring explains); (K) a dict ``key -> worker`` per source with key counts, and, when ``W > 0``, the set of
keys seen in the current tumbling window of ``W`` tuples of the source (at every window boundary
the keys not in that set are removed).  It shares nothing with ``skewbench.grouping.strategies.chwbl``; only
``hash_seeds`` (the seeds) and ``mix64_py`` (the mixer) come from the library.
"""

from __future__ import annotations

import bisect

from skewbench.grouping.base import hash_seeds
from skewbench.hashing import mix64_py

MASK = (1 << 64) - 1


class Ring:
    """The ring of ``n * V`` virtual nodes under ``seed``; ``omega(k)`` is the walk order."""

    def __init__(self, n, vnodes, seed):
        seeds = hash_seeds(seed, 2)
        self.seed_ring, self.seed_key = int(seeds[0]), int(seeds[1])
        self.n = n
        self.nodes = sorted((mix64_py(self.seed_ring ^ (w * 2**32 + v)), w, v)
                            for w in range(n) for v in range(vnodes))
        self.pos = [p for p, _, _ in self.nodes]
        self._omega = {}  # memo: the ring never changes

    def key_pos(self, k):
        return mix64_py(self.seed_key ^ (k & MASK))

    def succ(self, k):
        i = bisect.bisect_left(self.pos, self.key_pos(k))
        return 0 if i == len(self.pos) else i

    def omega(self, k):
        if k in self._omega:
            return self._omega[k]
        start = self.succ(k)
        out = self._omega[k] = []
        for step in range(len(self.nodes)):
            w = self.nodes[(start + step) % len(self.nodes)][1]
            if w not in out:
                out.append(w)
        return out


def cap(T, F, n):
    return ((T + 1) * F + 100 * n - 1) // (100 * n)


class Source:
    def __init__(self, n):
        self.load = [0] * n  # tuples sent to each worker (cumulative)
        self.acc = [0] * n  # the accounting's loads: tuples (P), window counts (Wn), keys (K)
        self.t = 0  # tuples routed so far
        self.buffer = []  # (Wn) the last W - 1 decisions, oldest first
        self.map = {}  # (K) key -> worker
        self.seen = set()  # (K) keys seen in the current tumbling window


class Reference:
    """Route tuple by tuple; ``walks`` records the walk length of every decision (0 for a
    known key under "key"), ``displaced`` whether the tuple left ``omega_1(k)``."""

    def __init__(self, n, s, seed, factor=125, vnodes=100, accounting="request", window=0):
        self.n, self.s, self.F = n, s, factor
        self.accounting = accounting
        if accounting == "window" and window == 0:
            window = 100 * n
        self.W = window
        self.ring = Ring(n, vnodes, seed)
        self.src = [Source(n) for _ in range(s)]
        self.walks = []
        self.displaced = []
        self.caps = []  # cap of every decision that walked (None for a known key)

    def walk(self, src, k):
        T = sum(src.acc)
        c = cap(T, self.F, self.n)
        omega = self.ring.omega(k)
        for rank, w in enumerate(omega, start=1):
            if src.acc[w] < c:
                self.caps.append(c)
                return w, rank
        raise AssertionError("no eligible worker")  # impossible: sum(acc) = T < n * cap

    def route_one(self, seq, k):
        src = self.src[seq % self.s]
        omega1 = self.ring.omega(k)[0]
        if self.accounting == "request":
            w, rank = self.walk(src, k)
            src.acc[w] += 1
        elif self.accounting == "window":
            w, rank = self.walk(src, k)  # acc: the last W - 1 decisions
            if self.W - 1 > 0:  # W = 1: the window holds no decision
                if len(src.buffer) == self.W - 1:
                    src.acc[src.buffer.pop(0)] -= 1
                src.buffer.append(w)
                src.acc[w] += 1
        else:
            if self.W > 0 and src.t > 0 and src.t % self.W == 0:  # a tumbling window ends
                for key in [x for x in src.map if x not in src.seen]:
                    src.acc[src.map.pop(key)] -= 1
                src.seen = set()
            if k in src.map:
                w, rank = src.map[k], 0
                self.caps.append(None)
            else:
                w, rank = self.walk(src, k)
                src.map[k] = w
                src.acc[w] += 1
            src.seen.add(k)
        src.load[w] += 1
        src.t += 1
        self.walks.append(rank)
        self.displaced.append(w != omega1)
        return w

    def route(self, seqs, keys):
        return [self.route_one(int(q), int(k)) for q, k in zip(seqs, keys)]

    def summary(self):
        walked = sorted(r for r in self.walks if r > 0)
        total = len(self.walks)
        if walked:
            need = -(-99 * len(walked) // 100)  # the smallest L with 100 * #(<= L) >= 99 * count
            p99 = walked[need - 1]
        else:
            p99 = 0
        return {
            "walk_mean": sum(walked) / len(walked) if walked else 0.0,
            "walk_p99": float(p99),
            "walk_max": float(max(walked)) if walked else 0.0,
            "displaced_fraction": sum(self.displaced) / total if total else 0.0,
            "placement_fraction": len(walked) / total if total else 0.0,
            "keys_mapped": float(sum(len(src.map) for src in self.src)),
        }
