"""Plain-Python reference of the D-Choices family (dchoices.spec.md 2.0-2.9), used only by tests.

One message at a time with dicts and lists, following the spec's pseudocode literally: the driver
D1-D4 (source ``t mod s``), K1-K3, S1-S3, P1-P3, SpaceSaving SS1-SS9, the generic head-aware
router A1-A15 and FindOptimalChoices F1-F14.  It shares nothing with
``skewbench.grouping.strategies.dchoices`` nor anything else of ``skewbench``: the hash family F_1..F_n is
written out here from its definition (:func:`mix64`, :func:`hash_seeds`, :func:`hash_choice`),
and tests/unit/test_hashing.py pins both this and the implementation's to the same known answers.

Two rules the spec leaves open are fixed here as in the implementation's docstring:
SpaceSaving evicts, among the entries with the minimum count, the one updated longest ago
(SS5); in authors' mode the head estimate of a key is ``(count + err) / m_j``.
"""

from __future__ import annotations

import math

MASK = (1 << 64) - 1


def mix64(x):
    """splitmix64's output function on the state x (Steele, Lea, Flood 2014; Vigna's splitmix64.c):
    x + 0x9E3779B97F4A7C15, then xor-shift 30 and multiply by 0xBF58476D1CE4E5B9, xor-shift 27 and
    multiply by 0x94D049BB133111EB, xor-shift 31; every step modulo 2^64."""
    z = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def hash_seeds(seed, count):
    """seed_i = mix64(mix64(seed mod 2^64) + 0x632BE59BD9B4E019 i), i = 1..count: one seed per F_i,
    the same at every source (spec 2.0 fixes them per i and leaves their derivation open; this is
    the one of skewbench.grouping.base.hash_seeds, pinned by known answers in test_hashing.py)."""
    base = mix64(seed & MASK)
    return [mix64((base + 0x632BE59BD9B4E019 * i) & MASK) for i in range(1, count + 1)]


def hash_choice(key, seed_i, n):
    """F_i(key) = fastrange(mix64(key XOR seed_i), n), fastrange(x, n) = (x_hi32 n) >> 32 (spec 2.0);
    a negative key is taken modulo 2^64 (its int64 bits)."""
    return ((mix64((key & MASK) ^ seed_i) >> 32) * n) >> 32


HEAD_STRATEGIES = ("dc", "wc", "rr", "fixed-d")
ALL_STRATEGIES = ("kg", "sg", "pkg") + HEAD_STRATEGIES


def resolve(name, n, params):
    """Parameters with the defaults filled in (theta None -> 1/(5n); capacity per A7)."""
    if name not in HEAD_STRATEGIES:
        return {}
    p = {"theta": None, "eps": 1e-4, "capacity": None, "refresh": 1000, "warmup": 0, "mode": "spec"}
    if name == "fixed-d":
        p["d"] = 2
    p.update(params)
    if p["theta"] is None:
        p["theta"] = 1.0 / (5 * n)
    if p["capacity"] is None:
        p["capacity"] = 100 if p["mode"] == "authors" else max(100, math.ceil(4.0 / p["theta"]))
    return p


class SpaceSaving:
    """SS1-SS9 with dicts; ``last`` orders ties among minimum counts (oldest update evicted)."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.count = {}
        self.err = {}
        self.last = {}

    def offer(self, x, now):
        if x in self.count:  # SS2
            self.count[x] += 1
        elif len(self.count) < self.capacity:  # SS3
            self.count[x] = 1
            self.err[x] = 0
        else:  # SS4-SS7
            y = min(self.count, key=lambda e: (self.count[e], self.last[e]))
            c = self.count[y]
            del self.count[y], self.err[y], self.last[y]
            self.count[x] = c + 1
            self.err[x] = c
        self.last[x] = now

    def estimate(self, x):  # SS8
        return self.count.get(x, 0)

    def lower(self, x):  # SS9
        return self.count[x] - self.err[x]


def find_optimal_choices(q, n, eps, authors=False):
    """F1-F14; ``q`` sorted descending.  Authors' variant: RHS b_h/n + eps, h in {1, H}."""
    H = len(q)
    if H == 0:  # F2
        return 2
    total = 0.0
    for x in q:
        total += x
    PH = min(1.0, total)  # F3
    PT = 1.0 - PH
    d = max(2, math.ceil(q[0] * n))  # F4
    while d < n:  # F5
        feasible = True  # F6
        Q = 0.0
        for h in range(1, H + 1):  # F7
            Q += q[h - 1]
            if authors and h not in (1, H):
                continue
            beta = 1.0 - (1.0 - 1.0 / n) ** (h * d)  # F8
            lhs = Q + beta ** d * (PH - Q) + beta * beta * PT  # F9
            rhs = beta + eps if authors else n * beta * (1.0 / n + eps)  # F10
            if lhs > rhs:  # F11
                feasible = False
                break
        if feasible:  # F12
            return d
        d += 1  # F13
    return n  # F14


def min_load(candidates, load):
    """The first candidate with the smallest load."""
    best = candidates[0]
    for c in candidates[1:]:
        if load[c] < load[best]:
            best = c
    return best


class Source:
    def __init__(self, n, capacity):
        self.l = [0] * n
        self.m = 0
        self.ss = SpaceSaving(capacity) if capacity else None
        self.rr = 0  # RR head pointer (A13)
        self.sg = 0  # SG pointer
        self.d = 2
        self.last_d = None


class Reference:
    """Route a stream message by message; state per source as in spec 2.0."""

    def __init__(self, name, n, s, seed, **params):
        self.name, self.n, self.s = name, n, s
        self.p = resolve(name, n, params)
        self.F = hash_seeds(seed, max(2, n))
        self.src = [Source(n, self.p.get("capacity")) for _ in range(s)]
        self.head_msgs = 0
        self.fallback_msgs = 0
        self.flags = []  # per routed message: True when it was routed as head

    def f(self, i, k):
        """F_i(k), i = 1..n."""
        return hash_choice(k, self.F[i - 1], self.n)

    def is_head(self, src, k):
        ss, theta = src.ss, self.p["theta"]
        if k not in ss.count:
            return False
        if self.p["mode"] == "authors":
            return (ss.count[k] + ss.err[k]) / src.m > theta
        return ss.estimate(k) >= theta * src.m

    def head_estimate(self, src):
        q = []
        for k in src.ss.count:
            if self.is_head(src, k):
                if self.p["mode"] == "authors":
                    q.append((src.ss.count[k] + src.ss.err[k]) / src.m)
                else:
                    q.append(src.ss.estimate(k) / src.m)
        q.sort(reverse=True)
        return q

    def route_one(self, t, k):
        j = t % self.s  # D3
        src = self.src[j]
        n = self.n
        if self.name == "kg":  # K1-K3
            w = self.f(1, k)
        elif self.name == "sg":  # S1-S3
            w = src.sg
            src.sg = (src.sg + 1) % n
        elif self.name == "pkg":  # P1-P3
            w = min_load([self.f(1, k), self.f(2, k)], src.l)
        if self.name in ("kg", "sg", "pkg"):
            self.flags.append(False)
        else:
            src.ss.offer(k, src.m + 1)  # A2
            src.m += 1
            head = src.m > self.p["warmup"] and self.is_head(src, k)
            self.flags.append(head)
            if not head:  # A3-A4
                w = min_load([self.f(1, k), self.f(2, k)], src.l)
            else:
                self.head_msgs += 1
                if self.name == "rr":  # A11-A12
                    w = src.rr
                    src.rr = (src.rr + 1) % n
                else:
                    if self.name == "wc":  # A9-A10
                        d = n
                    elif self.name == "fixed-d":  # A13-A14
                        d = self.p["d"]
                    else:  # A5-A8
                        if src.last_d is None or src.m - src.last_d >= self.p["refresh"]:
                            src.d = find_optimal_choices(self.head_estimate(src), n, self.p["eps"],
                                                         self.p["mode"] == "authors")
                            src.last_d = src.m
                        d = src.d
                    if d >= n:
                        w = min_load(list(range(n)), src.l)
                        self.fallback_msgs += 1
                    else:
                        w = min_load([self.f(i, k) for i in range(1, d + 1)], src.l)
        src.l[w] += 1  # A15
        return w

    def route(self, seqs, keys):
        return [self.route_one(int(t), int(k)) for t, k in zip(seqs, keys)]

    def head_sizes(self):
        return [sum(1 for k in src.ss.count if self.is_head(src, k)) if src.m else 0
                for src in self.src]


def route(name, keys, n, s, seed=0, seqs=None, **params):
    """Workers for ``keys`` (positions ``seqs``, default ``0..len-1``) routed from scratch."""
    ref = Reference(name, n, s, seed, **params)
    return ref.route(range(len(keys)) if seqs is None else seqs, keys)
