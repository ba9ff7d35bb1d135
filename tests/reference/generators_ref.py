"""Plain-Python reference of the stream generators, used only by tests.

It consumes the same seeded random streams as the numpy implementation (the random draws are
part of the specification) but does every transformation one tuple at a time in plain Python:
pmf, cumulative distribution, inverse-CDF lookup with bisect, permutations, cost groups,
arrival times.
"""

from __future__ import annotations

import bisect
import math

from skewbench.datasets.generators import _ARRIVALS, _COSTS, _KEYS, _NOISE, _PERM, _rng


def pmf(n, alpha):
    w = [k ** (-float(alpha)) for k in range(1, n + 1)]
    s = math.fsum(w)
    return [x / s for x in w]


def cdf(p):
    out, acc = [], 0.0
    for x in p:
        acc += x
        out.append(acc)
    last = out[-1]
    out = [x / last for x in out]
    out[-1] = 1.0
    return out


def cost_table(cost, n, seed):
    rng = _rng(seed, _COSTS)
    m = cost["model"]
    if m == "constant":
        return [float(cost["value"])] * n
    if m == "uniform":
        return [float(x) for x in rng.uniform(float(cost["low"]), float(cost["high"]), n)]
    if m == "levels":
        L, lo, hi = int(cost["levels"]), float(cost["low"]), float(cost["high"])
        values = [lo + j * (hi - lo) / (L - 1) for j in range(L)] if L > 1 else [lo]
    else:
        values = [float(v) for v in cost["values"]]
    order = [int(x) for x in rng.permutation(n)]
    table = [0.0] * n
    for pos, key in enumerate(order):
        table[key] = values[(pos * len(values)) // n]
    return table


def permutations(spec, table):
    perm = [int(x) for x in _rng(spec.seed, _PERM, 0).permutation(spec.n_keys)]
    out = []
    for i, ph in enumerate(spec.phases):
        ch = ph.permutation
        if ch == "keep" or (i == 0 and ch == "new"):
            pass
        else:
            rng = _rng(spec.seed, _PERM, i + 1)
            perm = list(perm)
            if ch == "new":
                perm = [int(x) for x in rng.permutation(spec.n_keys)]
            elif ch == "swap_hot_costliest":
                cmax = max(table)
                cand = [k for k in range(spec.n_keys) if table[k] == cmax and k != perm[0]]
                if cand:
                    other = int(rng.choice(cand))
                    pos = perm.index(other)
                    perm[0], perm[pos] = perm[pos], perm[0]
            elif "swap" in ch:
                for a, b in ch["swap"]:
                    perm[a - 1], perm[b - 1] = perm[b - 1], perm[a - 1]
            else:
                r = ch["reshuffle_top"]
                sh = [int(x) for x in rng.permutation(r)]
                top = perm[:r]
                perm[:r] = [top[j] for j in sh]
        out.append(perm)
    return out


def generate(spec):
    """The whole stream as a list of (seq, ts, key, cost-or-None) tuples."""
    n, m, B = spec.n_keys, spec.tuples, spec.block_size
    table = cost_table(spec.cost, n, spec.seed) if spec.cost is not None else None
    perms = permutations(spec, table)
    cdfs = [cdf(pmf(n, ph.alpha)) for ph in spec.phases]
    base = float(spec.arrivals.get("rate", 1000.0))
    poisson = spec.arrivals.get("process", "constant") == "poisson"
    bounds, s = [], 0
    for ph in spec.phases:
        bounds.append((s, s + ph.tuples))
        s += ph.tuples
    rows = []
    n_blocks = -(-m // B)
    t_poisson = 0.0
    for b in range(n_blocks):
        lo, hi = b * B, min((b + 1) * B, m)
        krng = _rng(spec.seed, _KEYS, b)
        block_rows = []
        for j, (ps, pe) in enumerate(bounds):
            s0, e0 = max(lo, ps), min(hi, pe)
            if s0 >= e0:
                continue
            ph = spec.phases[j]
            rate = base * ph.rate_factor
            us = krng.random(e0 - s0)
            if poisson:
                total = float(_rng(spec.seed, _ARRIVALS, b, j, 0).gamma(e0 - s0, 1.0 / rate))
                gaps = _rng(spec.seed, _ARRIVALS, b, j, 1).standard_exponential(e0 - s0)
                acc, cum = 0.0, []
                for g in gaps:
                    acc += float(g)
                    cum.append(acc)
            t_phase = 0.0
            for q in range(j):
                t_phase += spec.phases[q].tuples / (base * spec.phases[q].rate_factor)
            for i in range(e0 - s0):
                seq = s0 + i
                rank = bisect.bisect_right(cdfs[j], float(us[i]))
                key = perms[j][rank]
                if poisson:
                    ts = t_poisson + total * (cum[i] / cum[-1])
                else:
                    ts = t_phase + (seq - ps) / rate
                c = table[key] * ph.cost_factor if table is not None else None
                block_rows.append([seq, ts, key, c])
            if poisson:
                t_poisson += total
        if table is not None and float(spec.cost.get("noise", 0.0)) > 0:
            z = _rng(spec.seed, _NOISE, b).standard_normal(hi - lo)
            sigma = float(spec.cost["noise"])
            for r, zz in zip(block_rows, z):
                r[3] = r[3] * max(1.0 + sigma * float(zz), 1e-3)
        rows.extend(tuple(r) for r in block_rows)
    return rows
