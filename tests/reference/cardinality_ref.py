"""Plain-Python reference of CM, AM and cAM (practice.spec.md 2.7), used only by tests.

One tuple at a time with lists of sets and counters, following the spec's lines CA1-CA10
literally: source ``t mod s``, candidates ``c1 = F_1(k)``, ``c2 = F_2(k)``, ties to ``c2``, and
per-source tumbling windows of ``window`` tuples after whose last tuple ``cnt`` and ``K`` are
reset.  It shares nothing with ``skewbench.grouping.strategies.cardinality``; only the hash family
(``hash_seeds``, ``hash_choice_py``) comes from ``skewbench.grouping.base``.

:func:`pkg_c2` is the limiting case of spec 7 item 23: PKG over the same candidates on the
window's tuple counts, ties to ``c2``.
"""

from __future__ import annotations

from skewbench.grouping.base import hash_choice_py, hash_seeds

STRATEGIES = ("cm", "am", "cam")


class Source:
    def __init__(self, n):
        self.n = n
        self.t = 0  # tuples routed
        self.done = 0  # windows completed
        self.hits = 0  # tuples whose key was already in the set of the worker they went to
        self.partials_done = 0  # sum over completed windows of sum_w |K[w]|
        self.reset()

    def reset(self):
        self.tw = 0
        self.cnt = [0] * self.n
        self.K = [set() for _ in range(self.n)]


class Reference:
    """Route a stream tuple by tuple; state per source as in spec 2.7."""

    def __init__(self, name, n, s, seed, window=100_000):
        self.name, self.n, self.s, self.window = name, n, s, window
        self.seeds = [int(x) for x in hash_seeds(seed, 2)]
        self.src = [Source(n) for _ in range(s)]

    def candidates(self, k):
        return hash_choice_py(k, self.seeds[0], self.n), hash_choice_py(k, self.seeds[1], self.n)

    def route_one(self, t, k):
        src = self.src[t % self.s]
        c1, c2 = self.candidates(k)
        K, cnt = src.K, src.cnt
        hit_before = {x for x in (c1, c2) if k in K[x]}
        if self.name == "cm":  # CA1-CA3
            w = c1 if len(K[c1]) < len(K[c2]) else c2
            K[w].add(k)
        elif k in K[c1]:  # CA5
            w = c1
        elif k in K[c2]:  # CA6
            w = c2
        else:
            if self.name == "am":  # CA7
                w = c1 if len(K[c1]) < len(K[c2]) else c2
            else:  # CA10
                w = c1 if cnt[c1] < cnt[c2] else c2
            K[w].add(k)
        if w in hit_before:
            src.hits += 1  # k was already in K[w] (for AM and cAM: routed by affinity)
        cnt[w] += 1
        src.t += 1
        src.tw += 1
        if src.tw == self.window:
            src.partials_done += sum(len(x) for x in K)
            src.done += 1
            src.reset()
        return w

    def route(self, seqs, keys):
        return [self.route_one(int(t), int(k)) for t, k in zip(seqs, keys)]

    def summary(self):
        tuples = sum(src.t for src in self.src)
        hits = sum(src.hits for src in self.src)
        windows = sum(src.done + (1 if src.tw else 0) for src in self.src)
        partials = sum(src.partials_done + sum(len(x) for x in src.K) for src in self.src)
        return {
            "affinity_hit_fraction": hits / tuples if tuples else 0.0,
            "keys_per_worker": partials / (self.n * windows) if windows else 0.0,
            "windows_completed": float(sum(src.done for src in self.src)),
        }

    def window_stats(self):
        active = [src for src in self.src if src.t] or self.src
        kpw, card, count = [], [], []
        for src in active:
            sizes = [len(x) for x in src.K]
            kpw.append(sum(sizes) / self.n)
            card.append(max(sizes) - sum(sizes) / self.n)
            count.append(max(src.cnt) - sum(src.cnt) / self.n)
        return {"keys_per_worker": sum(kpw) / len(active), "card_imbalance": sum(card) / len(active),
                "count_imbalance": sum(count) / len(active)}


def route(name, keys, n, s, seed=0, seqs=None, window=100_000):
    """Workers for ``keys`` (positions ``seqs``, default ``0..len-1``) routed from scratch."""
    ref = Reference(name, n, s, seed, window)
    return ref.route(range(len(keys)) if seqs is None else seqs, keys)


def pkg_c2(keys, n, s, seed=0, seqs=None, window=100_000):
    """PKG on per-source window tuple counts with ties to ``c2`` (spec 7 item 23)."""
    seeds = [int(x) for x in hash_seeds(seed, 2)]
    seqs = range(len(keys)) if seqs is None else seqs
    cnt = [[0] * n for _ in range(s)]
    tw = [0] * s
    out = []
    for t, k in zip(seqs, keys):
        j = int(t) % s
        c1, c2 = hash_choice_py(int(k), seeds[0], n), hash_choice_py(int(k), seeds[1], n)
        w = c1 if cnt[j][c1] < cnt[j][c2] else c2
        cnt[j][w] += 1
        out.append(w)
        tw[j] += 1
        if tw[j] == window:
            tw[j] = 0
            cnt[j] = [0] * n
    return out
