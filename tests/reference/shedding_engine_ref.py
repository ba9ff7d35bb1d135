"""Plain-Python reference of the shedding engine's operator cells (the metrics of
``skewbench.shedding.schema``, operator kind), used only by tests.

From the definitions, one tuple at a time, with lists and dicts:

* arrivals (the engine's docstring and las.spec.md A8): over the reference segment (the first
  phase of a drifting dataset, else the whole stream) the mean gap becomes ``W * P / 100`` ms,
  ``W`` the segment's mean cost; arrival ``i`` is ``(ts[i] - ts[0])`` scaled by
  ``gap * (n_ref - 1) / span_ref`` (or ``i * gap`` when the segment has no span);
* the shedder and the FIFO operator: :func:`tests.reference.las_ref.simulate` (its own plain-Python
  simulator, which shares nothing with the kernel but the random inputs passed in);
* every summary metric and series value from the schema's wording: dropped, dropped_ratio,
  bl_dropped, shed_lambda = (dropped - bl_dropped) / bl_dropped (null when Base Line drops
  nothing), the kept tuples' queueing and completion latency mean / p50 / p99 / max (percentiles
  by linear interpolation between order statistics: position ``q (n - 1)``), q_over_bound =
  Q mean / tau, over_bound_share = share of kept tuples whose own wait exceeds tau,
  prefix_violation_share and prefix_max over the prefix averages Q(j) of the kept tuples,
  effective_load = sum of kept durations / (last - first arrival), and per tumbling window of
  ``window`` arrivals: dropped_ratio, the kept tuples' queueing and completion latency means and
  over_bound_share.

Sums are exactly rounded (``math.fsum``).  "Exceeds tau" is ``> tau``; the engine compares with
``tau + 1e-9`` (a float guard), which differs only for a wait within 1e-9 ms above tau.
"""

from __future__ import annotations

import math

from tests.reference import las_ref

#: the operator shedders' kinds in the reference simulator (tests.reference.las_ref.simulate), by strategy name
LAS_KIND = {"las": "las", "bl": "bl", "sm": "sm", "fk": "fk", "ns": "ns"}
LAS_DEFAULTS = {"epsilon": 0.05, "delta": 0.1, "window": 1024, "mu": 0.05, "inflation": None,
                "literal_clock": False, "literal_sync": False, "goal": "avg"}


def arrivals(ts, cost, provisioning, ref_end=None):
    """Arrival times (ms) and the reference segment's mean cost W."""
    m = len(ts)
    n_ref = m if ref_end is None else int(ref_end)
    wbar = math.fsum(cost[:n_ref]) / n_ref if n_ref else 1.0
    gap = wbar * provisioning / 100.0
    span = ts[n_ref - 1] - ts[0] if n_ref > 1 else 0.0
    out = []
    if span > 0:
        scale = gap * (n_ref - 1) / span
        for i in range(m):
            out.append((ts[i] - ts[0]) * scale)
    else:
        for i in range(m):
            out.append(i * gap)
    return out, wbar


def percentile(values, q):
    """Linear interpolation between the order statistics at position ``q (n - 1)``."""
    if not values:
        return None
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    frac = pos - lo
    return s[lo] + (s[hi] - s[lo]) * frac


def mean(values):
    return math.fsum(values) / len(values) if values else None


def share_over(values, tau):
    if not values:
        return None
    over = 0
    for v in values:
        if v > tau:
            over += 1
    return over / len(values)


def operator_cell(strategy, ts, keys, cost, *, provisioning, tau, window, coins, hash_a, hash_b, params=None,
                  ref_end=None, warm_keys=None, warm_durations=None):
    """One operator cell: ``(summary dict, list of series dicts, the shedder's trace)``.

    ``coins`` (Base Line's uniforms, one per tuple), ``hash_a``/``hash_b`` (LAS's Count-Min hash
    parameters) and the warm-up sample are the random inputs the engine draws from the cell's
    seed; Base Line runs on the same coins for ``bl_dropped``."""
    p = dict(LAS_DEFAULTS)
    p.update(params or {})
    P = float(provisioning)
    u = 1.0 - P / 100.0
    arr, wbar = arrivals(ts, cost, P, ref_end)
    kind = LAS_KIND[strategy]
    common = dict(tau=tau, u=u, wbar=wbar, coins=coins, hash_a=hash_a, hash_b=hash_b)
    if kind == "las":
        tr = las_ref.simulate("las", keys, arr, cost, epsilon=p["epsilon"], delta=p["delta"], window=p["window"],
                              mu=p["mu"], inflation=p["inflation"], literal_clock=p["literal_clock"],
                              literal_sync=p["literal_sync"], goal=p["goal"], warm_keys=warm_keys,
                              warm_durations=warm_durations, **common)
    else:
        tr = las_ref.simulate(kind, keys, arr, cost, goal=p["goal"], **common)
    bl = tr if kind == "bl" else las_ref.simulate("bl", keys, arr, cost, **common)
    m = len(keys)
    dropped = 0
    bl_dropped = 0
    kept_q, kept_c, kept_cost = [], [], []
    for i in range(m):
        if bl["dropped"][i]:
            bl_dropped += 1
        if tr["dropped"][i]:
            dropped += 1
        else:
            kept_q.append(tr["q"][i])
            kept_c.append(tr["c"][i])
            kept_cost.append(cost[i])
    # prefix averages Q(j) of the kept tuples, in arrival order (a running sum, as in the spec)
    running = 0.0
    prefix_over = 0
    prefix_max = None
    for j, q in enumerate(kept_q, start=1):
        running += q
        avg = running / j
        if avg > tau:
            prefix_over += 1
        prefix_max = avg if prefix_max is None else max(prefix_max, avg)
    qmean = mean(kept_q)
    span = arr[-1] - arr[0] if m > 1 else 0.0
    row = {
        "tuples": m,
        "dropped": dropped,
        "dropped_ratio": dropped / m if m else 0.0,
        "bl_dropped": bl_dropped,
        "shed_lambda": (dropped - bl_dropped) / bl_dropped if bl_dropped > 0 else None,
        "queueing_latency_mean": qmean,
        "queueing_latency_p50": percentile(kept_q, 0.5),
        "queueing_latency_p99": percentile(kept_q, 0.99),
        "queueing_latency_max": max(kept_q) if kept_q else None,
        "completion_latency_mean": mean(kept_c),
        "completion_latency_p99": percentile(kept_c, 0.99),
        "q_over_bound": qmean / tau if qmean is not None and 0 < tau < math.inf else None,
        "over_bound_share": share_over(kept_q, tau),
        "prefix_violation_share": prefix_over / len(kept_q) if kept_q else None,
        "prefix_max": prefix_max,
        "effective_load": math.fsum(kept_cost) / span if span > 0 else None,
        "underprovisioning": u,
        "bound_ms": tau,
    }
    series = []
    w = 0
    lo = 0
    while lo < m:
        hi = min(m, lo + int(window))
        qs, cs, drops = [], [], 0
        for i in range(lo, hi):
            if tr["dropped"][i]:
                drops += 1
            else:
                qs.append(tr["q"][i])
                cs.append(tr["c"][i])
        series.append({"window": w, "start": float(lo), "end": float(hi), "tuples": hi - lo,
                       "dropped_ratio": drops / (hi - lo), "queueing_latency_mean": mean(qs),
                       "completion_latency_mean": mean(cs), "over_bound_share": share_over(qs, tau)})
        w += 1
        lo = hi
    return row, series, tr
