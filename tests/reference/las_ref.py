"""Plain-Python reference of the LAS simulator (las.spec.md 2.1-2.6, A1-A5, A15, A18), used only
by tests.

One tuple at a time, lists of lists for the Count-Min matrices, a ``collections.deque`` of dicts for
the operator's pending completions, strings for modes and phases, and the spec's listings followed
line by line (OP_EXECUTED, ON_MATRICES, ON_DELTA, SHED, CHECK).  It shares nothing with
:mod:`skewbench.shedding.las` but its inputs (the hash parameters and coins are passed in).

Besides the trace it logs what the property tests look at: ``qhat_all`` (the q^ each CHECK saw,
kept or dropped), ``belief_after`` (Qsum / l after each CHECK), ``matrix_at`` (the executed counts
at which the operator shipped), ``piggy`` (indices of the tuples that carried a piggy-back) and
``delta_raw`` (the Delta values the operator returned, before the guard).
"""

from __future__ import annotations

import math
from collections import deque

P = 2**31 - 1


def sketch_shape(epsilon, delta):
    r = math.ceil(math.log2(1 / delta) - 1e-12)
    c = 1 << 16 if epsilon == 0 else min(1 << 16, int(math.floor(math.e / epsilon + 0.5)))
    return max(r, 1), max(c, 1)


def h(a, b, c, x):
    return ((int(a) * int(x) + int(b)) % P) % c


class Sketch:
    def __init__(self, ha, hb, c):
        self.ha, self.hb, self.c = [int(v) for v in ha], [int(v) for v in hb], c
        self.F = [[0.0] * c for _ in self.ha]
        self.W = [[0.0] * c for _ in self.ha]

    def clear(self):
        self.F = [[0.0] * self.c for _ in self.ha]
        self.W = [[0.0] * self.c for _ in self.ha]

    def add(self, key, dur):
        for i in range(len(self.ha)):
            j = h(self.ha[i], self.hb[i], self.c, key)
            self.F[i][j] += 1.0
            self.W[i][j] += dur

    def ratios(self):
        return [[(w / f if f > 0 else 0.0) for f, w in zip(fr, wr)] for fr, wr in zip(self.F, self.W)]


def est(F, W, ha, hb, c, key):
    best_row = 0
    cols = [h(ha[i], hb[i], c, key) for i in range(len(ha))]
    for i in range(1, len(ha)):
        if F[i][cols[i]] < F[best_row][cols[best_row]]:
            best_row = i
    f = F[best_row][cols[best_row]]
    if f > 0:
        return W[best_row][cols[best_row]] / f
    sf = 0.0
    sw = 0.0
    for j in range(c):
        sf += F[0][j]
        sw += W[0][j]
    return sw / sf if sf > 0 else 0.0


class Operator:
    def __init__(self, ha, hb, c, N, mu, t0, literal_clock):
        self.sk = Sketch(ha, hb, c)
        self.S = [[0.0] * c for _ in ha]
        self.phase = "START"
        self.k = 0
        self.C = 0.0
        self.N, self.mu, self.t0, self.literal_clock = N, mu, t0, literal_clock

    def executed(self, key, dur, finish, piggy):
        """OP_EXECUTED; returns (delta message or None, matrices message or None)."""
        self.k += 1
        if self.literal_clock:
            self.C = self.C + dur
        else:
            self.C = finish - self.t0
        delta_msg = None
        if piggy is not None:
            delta_msg = (self.C - piggy[0], piggy[1])
        mat_msg = None
        if self.k % self.N == 0:
            R = self.sk.ratios()
            if self.phase == "START":
                self.S = R
                self.phase = "STABILIZING"
            else:
                num = 0.0
                den = 0.0
                for i in range(len(R)):
                    for j in range(len(R[i])):
                        num += abs(self.S[i][j] - R[i][j])
                        den += self.S[i][j]
                eta = num / den if den > 0 else math.inf
                if eta <= self.mu:
                    mat_msg = ([row[:] for row in self.sk.F], [row[:] for row in self.sk.W], self.k)
                    self.sk.clear()
                    self.phase = "START"
                else:
                    self.S = R
        self.sk.add(key, dur)
        return delta_msg, mat_msg


def simulate(kind, keys, arrivals, durations, *, tau, epsilon=0.05, delta=0.1, window=1024, mu=0.05,
             inflation=None, literal_clock=False, literal_sync=False, goal="avg", u=0.0, wbar=1.0,
             coins=None, hash_a=None, hash_b=None, columns=None, warm_keys=None, warm_durations=None):
    keys = [int(k) for k in keys]
    arrivals = [float(a) for a in arrivals]
    durations = [float(d) for d in durations]
    m = len(keys)
    r, c = sketch_shape(epsilon, delta)
    if columns is not None:
        c = int(columns)
    ha = [int(v) for v in hash_a]
    hb = [int(v) for v in hash_b]
    assert len(ha) == r
    infl = (epsilon if inflation is None else inflation) if kind == "las" else 0.0
    t0 = arrivals[0]
    out = {"dropped": [False] * m, "q": [math.nan] * m, "c": [math.nan] * m, "qhat": [math.nan] * m,
           "qhat_all": [math.nan] * m, "belief_after": [math.nan] * m, "matrices": 0, "nop_tuples": 0,
           "deltas": [], "delta_raw": [], "matrix_at": [], "piggy": [], "warm_started": False}

    # shedder state
    ls = {"mode": "RUN", "F": None, "W": None, "Chat": 0.0, "Qsum": 0.0, "l": 0, "kappa": 0.0}
    if kind == "las":
        ls["mode"] = "NOP"
    op = Operator(ha, hb, c, window, mu, t0, literal_clock) if kind == "las" else None

    def on_matrices(F, W):
        ls["F"], ls["W"], ls["mode"] = F, W, "SEND"
        out["matrices"] += 1

    def on_delta(d, kappa_sent):
        corr = d if literal_sync else d - (ls["kappa"] - kappa_sent)
        ls["Chat"] += corr
        ls["kappa"] += corr
        out["deltas"].append(corr)
        out["delta_raw"].append(d)

    # warm start (A5)
    if kind == "las" and warm_keys is not None and len(warm_keys) > 0:
        wop = Operator(ha, hb, c, window, mu, 0.0, literal_clock)
        got = None
        for _ in range(64):
            for wk, wd in zip(warm_keys, warm_durations):
                _, mat = wop.executed(int(wk), float(wd), 0.0, None)
                if mat is not None:
                    got = mat
                    break
            if got is not None:
                break
        if got is not None:
            on_matrices(got[0], got[1])
            out["warm_started"] = True

    def check(qh):
        if goal == "max":
            bad = qh > tau
        else:
            bad = (ls["Qsum"] + qh) / (ls["l"] + 1) > tau
        if bad:
            return True
        ls["Qsum"] += qh
        ls["l"] += 1
        return False

    def estimate(i):
        if kind == "sm":
            return wbar
        if kind == "fk":
            return durations[i]
        return est(ls["F"], ls["W"], ha, hb, c, keys[i])

    pending = deque()
    busy_until = t0
    for i in range(m):
        a = arrivals[i]
        while pending and pending[0]["finish"] <= a:
            job = pending.popleft()
            dmsg, mmsg = op.executed(job["key"], job["dur"], job["finish"], job["piggy"])
            if dmsg is not None:
                on_delta(*dmsg)
            if mmsg is not None:
                out["matrix_at"].append(mmsg[2])
                on_matrices(mmsg[0], mmsg[1])
        # the decision
        piggy = None
        if kind == "ns":
            keep = True
        elif kind == "bl":
            keep = not (coins[i] < max(0.0, u))
        elif ls["mode"] == "NOP":
            keep = True
            out["nop_tuples"] += 1
        else:
            x = a - t0
            qh = ls["Chat"] - x if literal_clock else max(0.0, ls["Chat"] - x)
            out["qhat_all"][i] = qh
            keep = not check(qh)
            out["belief_after"][i] = ls["Qsum"] / ls["l"] if ls["l"] else math.nan
            if keep:
                out["qhat"][i] = qh
                base = ls["Chat"] if literal_clock else max(ls["Chat"], x)
                ls["Chat"] = base + (1.0 + infl) * estimate(i)
                if ls["mode"] == "SEND":
                    piggy = (ls["Chat"], ls["kappa"])
                    out["piggy"].append(i)
                    ls["mode"] = "RUN"
        if not keep:
            out["dropped"][i] = True
            continue
        start = max(a, busy_until)
        busy_until = start + durations[i]
        out["q"][i] = start - a
        out["c"][i] = busy_until - a
        if op is not None:
            pending.append({"finish": busy_until, "key": keys[i], "dur": durations[i], "piggy": piggy})
    out["belief"] = ls["Qsum"] / ls["l"] if ls["l"] else math.nan
    out["executed"] = op.k if op is not None else None
    return out
