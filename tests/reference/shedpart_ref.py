"""Plain-Python reference of ShedPart (shedpart.spec.md), used only by tests.

One tuple at a time: route it, then update the dict state of every open window that contains
it (spec 2.3, literally, with a list-of-lists Count-Min sketch in paper mode); at the end,
for every complete window (aligned to multiples of the slide, inside ``[ts[0], ts[-1]]``), the
pre-check and Algorithm 1 exactly as listed in spec 2.5 -- rescanning ``G_{j*}`` from the start
in every pass and skipping decided groups (no cursors).  Hashing (Java hash codes, splitmix64)
is reimplemented here.
"""

from __future__ import annotations

import math
from statistics import NormalDist

M64 = (1 << 64) - 1


def mix64(x):
    z = (x + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def int32(v):
    v &= 0xFFFFFFFF
    return v - 0x100000000 if v & 0x80000000 else v


def java_long_hash(k):
    u = k & M64
    return int32(u ^ (u >> 32))


def fld(k, V):
    return int32(31 * 1 + java_long_hash(k)) % V


def zval(conf, rule):
    return NormalDist().inv_cdf((1 + conf) / 2 if rule == "two-sided" else conf)


def nreq(n1, mean, var, eps, z, n_min):
    if eps <= 0 or n1 < 2 or abs(mean) < 1e-12:
        return math.inf
    if z == 0:
        return float(n_min)
    d = eps * abs(mean) / z
    n = (var / (d * d)) * (1 + 2 / n1)
    if math.isinf(n) or math.isnan(n):
        return math.inf
    return float(max(n_min, math.ceil(n)))


class Cms:
    def __init__(self, width=2719, depth=5, salt=0xC0FFEE5EED):
        self.w = width
        self.rows = [[0] * width for _ in range(depth)]
        self.salts = [mix64((salt + d) & M64) for d in range(depth)]

    def _cols(self, k):
        return [mix64((k & M64) ^ s) % self.w for s in self.salts]

    def estimate(self, k):
        return min(row[c] for row, c in zip(self.rows, self._cols(k)))

    def add(self, k):
        for row, c in zip(self.rows, self._cols(k)):
            row[c] += 1


def new_state(V, paper):
    return {"size": 0, "L": [0] * V, "C": {}, "cnt": {}, "H": {}, "cms": Cms() if paper else None}


def welford_add(rec, x):
    rec[0] += 1
    d = x - rec[1]
    rec[1] += d / rec[0]
    rec[2] += d * (x - rec[1])


def update_load(L, R, C, g, N, s):
    if len(R) == 1:
        L[R[0]] -= N - s
        return
    cs = [C.get((g, j), 0) for j in R]
    tot = sum(cs)
    q = [s * c // tot for c in cs]
    rem = [s * c % tot for c in cs]
    left = s - sum(q)
    idx = list(range(len(R)))
    idx.sort(key=lambda i: (-rem[i], i))
    for i in idx[:max(0, left)]:
        q[i] += 1
    for i in range(len(R)):
        if cs[i] > 0 and q[i] < 1:
            q[i] = 1
        if q[i] > cs[i]:
            q[i] = cs[i]
        L[R[i]] -= cs[i] - q[i]


def shedpart(L, R, GI, C, eps, z, n_min, early_exit=False):
    """Algorithm 1 as listed (A1 loop condition; A7 full scan or ShedPart-EE)."""
    L = list(L)
    V = len(L)
    trim, black = {}, set()
    Gj = [sorted([g for g in GI if j in R[g]], key=lambda g: (-GI[g][0], g)) for j in range(V)]
    passes = 0
    while True:
        passes += 1
        changed = False
        js = max(range(V), key=lambda j: (L[j], -j))
        if not Gj[js]:
            break
        for g in Gj[js]:
            if early_exit and V > 1 and L[js] < max(L[j] for j in range(V) if j != js):
                break
            if g in trim or g in black:
                continue
            N, n1, mean, var = GI[g]
            s = nreq(n1, mean, var, eps, z, n_min)
            if s < N:
                changed = True
                update_load(L, R[g], C, g, N, int(s))
                trim[g] = int(s)
            else:
                black.add(g)
        if not changed:
            break
    return trim, L, black, passes


def run(ts, keys, values, *, range_s, slide_s, workers=4, error=0.1, confidence=0.95,
        z_rule="two-sided", threshold_g=3, precheck=15.0, precheck_literal=False,
        mode="exact", early_exit=False, n_min=1, partitioner="fld", shed=True, hash_seed=0):
    ts = [float(t) for t in ts]
    keys = [int(k) for k in keys]
    values = [float(x) for x in values]
    V, r, s, Tg = workers, range_s, slide_s, threshold_g
    paper = mode == "paper"
    z = zval(confidence, z_rule)
    routed = [0] * V
    pseeds = [mix64((2 * hash_seed + i) & M64) for i in (0, 1)]

    def R(k):
        if partitioner == "fld":
            return (fld(k, V),)
        if partitioner == "pkg":
            return tuple(sorted({mix64(k ^ p) % V for p in pseeds}))
        return tuple(range(V))

    states = {}
    for i, (t, k, x) in enumerate(zip(ts, keys, values)):
        if partitioner == "fld":
            j = fld(k, V)
        elif partitioner == "pkg":
            a, b = (mix64(k ^ p) % V for p in pseeds)
            j = a if routed[a] <= routed[b] else b
        else:
            j = i % V
        routed[j] += 1
        base = math.floor(t / s)
        for w in range(base - math.ceil(r / s) - 2, base + 3):
            if not (w * s <= t < w * s + r):
                continue
            st = states.setdefault(w, new_state(V, paper))
            st["size"] += 1
            st["L"][j] += 1
            st["C"][(k, j)] = st["C"].get((k, j), 0) + 1
            st["cnt"][k] = st["cnt"].get(k, 0) + 1
            if paper:
                if k in st["H"]:
                    welford_add(st["H"][k], x)
                else:
                    c = st["cms"].estimate(k)
                    if c >= Tg - 1:
                        st["H"][k] = [0, 0.0, 0.0]
                        welford_add(st["H"][k], x)
                    else:
                        st["cms"].add(k)
            else:
                rec = st["H"].setdefault(k, [0, 0.0, 0.0])
                welford_add(rec, x)

    out = []
    if not ts:
        return out
    w = math.ceil(ts[0] / s) - 2
    while w * s + r <= ts[-1]:
        if w * s >= ts[0]:
            st = states.get(w, new_state(V, paper))
            GI = {}
            for k, (c, mean, m2) in st["H"].items():
                if paper:
                    GI[k] = (c + Tg - 1, c, mean, m2 / (c - 1) if c >= 2 else float("nan"))
                elif c >= Tg:
                    GI[k] = (c, c, mean, m2 / (c - 1) if c >= 2 else float("nan"))
            size = st["size"]
            D = sum(v[0] for v in GI.values())
            nh = {g: nreq(v[1], v[2], v[3], error, z, n_min) for g, v in GI.items()}
            if size == 0:
                P = 0.0
            elif precheck_literal:
                fin = sum(v for v in nh.values() if not math.isinf(v))
                P = math.inf if any(math.isinf(v) for v in nh.values()) else \
                    100.0 * abs(D - fin) / size
            else:
                Dh = sum(min(nh[g], GI[g][0]) for g in GI)
                P = 100.0 * (D - int(Dh)) / size
            ran = shed and size > 0 and not (P < precheck)
            if ran:
                trim, Lp, black, passes = shedpart(st["L"], {g: R(g) for g in GI}, GI, st["C"],
                                                   error, z, n_min, early_exit)
            else:
                trim, Lp, black, passes = {}, list(st["L"]), set(), 0
            out.append({"window_id": w, "start": w * s, "end": w * s + r, "size": size,
                        "loads": list(st["L"]), "loads_after": Lp, "ran": ran, "precheck": P,
                        "trim_info": trim, "blacklisted": black, "n_groups": len(st["cnt"]),
                        "n_heavy": len(GI), "passes": passes, "GI": GI})
        w += 1
    return out
