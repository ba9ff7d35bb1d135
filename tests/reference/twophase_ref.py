"""Plain-Python reference of the two-phase routers (practice.spec.md 2.5), used only by tests.

One tuple at a time with sets, dicts and lists, following the pseudocode LG1-LG4 and SA1-SA4'
literally, with the merge of spec 2.5 as a set of ``(window, key, salt)`` triples.  It shares
nothing with ``skewbench.grouping.strategies.twophase``: the hash family (``hash_seeds``,
``hash_choice_py``) comes from ``skewbench.grouping.base``, ``mix64_py`` from
``skewbench.hashing``, and the SpaceSaving sketch (SS1-SS9, oldest minimum evicted) from the
D-Choices reference, ``tests.reference.dchoices_ref``.

The choices the spec leaves open are those of the implementation's docstring: ``F = F_1``;
seeds ``hash_seeds(seed, 3)`` = (F, HASHED salt, RANDOM salt); ``S = 1`` salts nothing; a
sub-key counts once per merge window over all sources; an open mini-batch / merge window is
counted as if flushed now.
"""

from __future__ import annotations

import math

from skewbench.grouping.base import hash_choice_py, hash_seeds
from skewbench.hashing import mix64_py
from tests.reference.dchoices_ref import SpaceSaving

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
SELECTORS = ("hh", "all", "none")
DRAWS = ("random", "rr", "hashed")
PLACES = ("hash", "offset")


def fastrange(h, r):
    return ((h >> 32) * r) >> 32


class LocalGlobalRef:
    """LG1-LG4 per source, plus the delivered load (emitting tuples per worker)."""

    def __init__(self, n, s, seed, batch=5000):
        self.n, self.s, self.B = n, s, batch
        self.seed_f = int(hash_seeds(seed, 1)[0])
        self.D = [set() for _ in range(s)]  # keys of the current mini-batch
        self.b = [0] * s  # tuples of the current mini-batch
        self.load = [[0] * n for _ in range(s)]
        self.delivered = [[0] * n for _ in range(s)]
        self.emits = []  # per routed tuple: did it open a partial record?

    def route_one(self, t, k):
        j = t % self.s
        w = hash_choice_py(k, self.seed_f, self.n)  # LG2
        emit = k not in self.D[j]
        self.D[j].add(k)
        self.b[j] += 1
        if self.b[j] == self.B:  # LG3
            self.D[j] = set()
            self.b[j] = 0
        self.load[j][w] += 1
        if emit:
            self.delivered[j][w] += 1
        self.emits.append(emit)
        return w

    def route(self, seqs, keys):
        return [self.route_one(int(t), int(k)) for t, k in zip(seqs, keys)]

    def summary(self):
        tuples = sum(map(sum, self.load))
        per_w = [sum(row[w] for row in self.delivered) for w in range(self.n)]
        total = sum(per_w)
        share = max(per_w) / total if total else 0.0
        return {
            "delivered": float(total),
            "delivered_fraction": total / tuples if tuples else 0.0,
            "delivered_load_max": share,
            "imbalance_delivered": share - 1.0 / self.n if total else 0.0,
        }


class SaltRef:
    """SA1-SA4' per source, plus the per-window merge of sub-keys over all sources."""

    def __init__(self, n, s, seed, salts=0, selector="hh", theta=None, draw="random",
                 place="hash", merge_window=100_000, beta=1.0):
        self.n, self.s = n, s
        self.S = n if salts == 0 else salts
        self.selector, self.draw, self.place = selector, draw, place
        self.theta = 1.0 / (5 * n) if theta is None else theta
        self.W, self.beta = merge_window, beta
        self.seed_f, self.seed_salt, self.seed_rand = (int(x) for x in hash_seeds(seed, 3))
        cap = max(100, math.ceil(4.0 / self.theta))
        self.ss = [SpaceSaving(cap) for _ in range(s)]
        self.m = [0] * s
        self.rr = [dict() for _ in range(s)]
        self.subkeys = set()  # (window, key, salt) active so far
        self.windows = set()  # merge windows holding a tuple
        self.l2 = [0] * n
        self.load = [[0] * n for _ in range(s)]
        self.salted = [0] * s
        self.salts = []  # per routed tuple: its salt, or None when not salted

    def wsub(self, k, sigma):
        h = mix64_py((k & MASK) ^ self.seed_f)
        return fastrange(mix64_py(h ^ (((sigma + 1) * GOLDEN) & MASK)), self.n)

    def route_one(self, t, k):
        j = t % self.s
        f = hash_choice_py(k, self.seed_f, self.n)
        self.m[j] += 1
        window = t // self.W
        self.windows.add(window)
        hot = False
        if self.selector == "hh":
            ss = self.ss[j]
            ss.offer(k, self.m[j])
            hot = k in ss.count and ss.count[k] >= self.theta * self.m[j]
        elif self.selector == "all":
            hot = True
        if self.S == 1:
            hot = False
        if not hot:  # SA2
            w = f
            self.salts.append(None)
        else:
            if self.draw == "random":  # SA3
                sigma = fastrange(mix64_py(t ^ self.seed_rand), self.S)
            elif self.draw == "hashed":  # SA3''
                sigma = fastrange(mix64_py(self.seed_salt ^ t), self.S)
            else:  # SA3'
                sigma = self.rr[j].get(k, 0)
                self.rr[j][k] = (sigma + 1) % self.S
            w = self.wsub(k, sigma) if self.place == "hash" else (f + sigma) % self.n  # SA4, SA4'
            self.salted[j] += 1
            if (window, k, sigma) not in self.subkeys:
                self.subkeys.add((window, k, sigma))
                self.l2[f] += 1
            self.salts.append(sigma)
        self.load[j][w] += 1
        return w

    def route(self, seqs, keys):
        return [self.route_one(int(t), int(k)) for t, k in zip(seqs, keys)]

    def head_sizes(self):
        return [sum(1 for k in ss.count if ss.count[k] >= self.theta * m) if m else 0
                for ss, m in zip(self.ss, self.m)]

    def summary(self):
        M = len(self.subkeys)
        tuples = sum(self.m)
        l1 = [sum(row[w] for row in self.load) for w in range(self.n)]
        total = [a + self.beta * b for a, b in zip(l1, self.l2)]
        tot = sum(total)
        active = [j for j in range(self.s) if self.m[j] > 0] or list(range(self.s))
        hs = self.head_sizes()
        return {
            "merge_messages": float(M),
            "merge_per_window": M / len(self.windows) if self.windows else 0.0,
            "salted_fraction": sum(self.salted) / tuples if tuples else 0.0,
            "phase2_load_max": max(self.l2) / M if M else 0.0,
            "imbalance_two_phase": max(total) / tot - 1.0 / self.n if tot > 0 else 0.0,
            "hot_keys_final": (sum(hs[j] for j in active) / len(active)) if self.selector == "hh" else 0.0,
        }

    def window_stats(self):
        summ = self.summary()
        return {"merge_messages": summ["merge_messages"], "salted_fraction": summ["salted_fraction"]}
