"""Plain-Python reference of the LAS simulation (las.spec.md 2.2-2.6), one tuple at a time, with
lists and dicts; shares nothing with :mod:`skewbench.shedding.las` but the hash parameters."""

from __future__ import annotations

import math
from collections import deque

P = 2**31 - 1


def shape(eps: float, delta: float) -> tuple[int, int]:
    r = max(1, math.ceil(math.log2(1 / delta) - 1e-12))
    c = max(1, round(math.e / eps)) if eps > 0 else 1 << 16
    return r, c


class Sketch:
    def __init__(self, r, c, ha, hb):
        self.r, self.c, self.ha, self.hb = r, c, [int(x) for x in ha], [int(x) for x in hb]
        self.F = [[0.0] * c for _ in range(r)]
        self.W = [[0.0] * c for _ in range(r)]

    def col(self, i, key):
        return ((self.ha[i] * key + self.hb[i]) % P) % self.c

    def add(self, key, dur):
        for i in range(self.r):
            j = self.col(i, key)
            self.F[i][j] += 1
            self.W[i][j] += dur

    def ratios(self):
        return [[(self.W[i][j] / self.F[i][j]) if self.F[i][j] > 0 else 0.0 for j in range(self.c)]
                for i in range(self.r)]

    def copy(self):
        s = Sketch(self.r, self.c, self.ha, self.hb)
        s.F = [row[:] for row in self.F]
        s.W = [row[:] for row in self.W]
        return s

    def estimate(self, key):
        best, bf = None, None
        for i in range(self.r):
            f = self.F[i][self.col(i, key)]
            if best is None or f < bf:
                best, bf = i, f
        if bf > 0:
            return self.W[best][self.col(best, key)] / bf
        sf, sw = sum(self.F[0]), sum(self.W[0])
        return sw / sf if sf > 0 else 0.0


class Operator:
    def __init__(self, r, c, ha, hb, N, mu):
        self.r, self.c, self.ha, self.hb, self.N, self.mu = r, c, ha, hb, N, mu
        self.reset()

    def reset(self):
        self.sk = Sketch(self.r, self.c, self.ha, self.hb)
        self.S = None
        self.start = True
        self.k = 0

    def execute(self, key, dur):
        """Count one execution; returns a shipped sketch or None."""
        self.k += 1
        shipped = None
        if self.k % self.N == 0:
            R = self.sk.ratios()
            if self.start:
                self.S, self.start = R, False
            else:
                den = sum(map(sum, self.S))
                num = sum(abs(a - b) for ra, rb in zip(self.S, R) for a, b in zip(ra, rb))
                eta = num / den if den > 0 else math.inf
                if eta <= self.mu:
                    shipped = self.sk.copy()
                    self.sk = Sketch(self.r, self.c, self.ha, self.hb)
                    self.start = True
                else:
                    self.S = R
        self.sk.add(key, dur)
        return shipped


def simulate(kind, keys, arrivals, durations, *, tau, eps=0.05, delta=0.1, N=1024, mu=0.05, inflation=None,
             literal_clock=False, literal_sync=False, goal="avg", u=0.0, wbar=1.0, coins=None, ha=None, hb=None,
             warm_keys=None, warm_durations=None):
    m = len(keys)
    r, c = shape(eps, delta)
    infl = eps if inflation is None else inflation
    T0 = arrivals[0] if m else 0.0
    op = Operator(r, c, ha, hb, N, mu)
    mode, Fl, matrices, warm = "RUN", None, 0, False
    if kind == "las":
        mode = "NOP"
        if warm_keys is not None and len(warm_keys):
            done = False
            for _ in range(64):
                for k, d in zip(warm_keys, warm_durations):
                    s = op.execute(int(k), float(d))
                    if s is not None:
                        Fl, done = s, True
                        break
                if done:
                    break
            if done:
                mode, matrices, warm = "SEND", 1, True
            op.reset()
    chat = qsum = kappa = 0.0
    ell = nop = 0
    C = 0.0
    pending = deque()
    busy = -math.inf
    out = {"dropped": [], "q": [], "c": [], "qhat": [], "deltas": []}
    for i in range(m):
        a = float(arrivals[i])
        if kind == "las":
            while pending and pending[0][0] <= a:
                fin, k, d, piggy = pending.popleft()
                C = C + d if literal_clock else fin - T0
                if piggy is not None:
                    delta_ = C - piggy[0]
                    corr = delta_ if literal_sync else delta_ - (kappa - piggy[1])
                    chat += corr
                    kappa += corr
                    out["deltas"].append(delta_)
                shipped = op.execute(k, d)
                if shipped is not None:
                    Fl, mode = shipped, "SEND"
                    matrices += 1
        keep, qh, piggy = True, math.nan, None
        if kind == "bl":
            keep = not (coins[i] < max(0.0, u))
        elif kind in ("sm", "fk", "las"):
            if kind == "las" and mode == "NOP":
                nop += 1
            else:
                x = a - T0
                q_est = chat - x if literal_clock else max(0.0, chat - x)
                if goal == "max":
                    keep = not (q_est > tau)
                else:
                    keep = not ((qsum + q_est) / (ell + 1) > tau)
                if keep:
                    qsum += q_est
                    ell += 1
                    qh = q_est
                    base = chat if literal_clock else max(chat, x)
                    est = wbar if kind == "sm" else (float(durations[i]) if kind == "fk"
                                                    else Fl.estimate(int(keys[i])) * (1 + infl))
                    chat = base + est
                    if kind == "las" and mode == "SEND":
                        piggy = (chat, kappa)
                        mode = "RUN"
        if keep:
            s = max(a, busy)
            busy = s + float(durations[i])
            out["dropped"].append(False)
            out["q"].append(s - a)
            out["c"].append(busy - a)
            out["qhat"].append(qh)
            if kind == "las":
                pending.append((busy, int(keys[i]), float(durations[i]), piggy))
        else:
            out["dropped"].append(True)
            out["q"].append(math.nan)
            out["c"].append(math.nan)
            out["qhat"].append(math.nan)
    out.update(matrices=matrices, nop_tuples=nop, warm_started=warm,
               belief=qsum / ell if ell else math.nan)
    return out
