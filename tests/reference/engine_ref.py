"""Plain-Python reference of the replay engine's model and metrics, used only by tests.

Routes tuple by tuple (each source's tuples fed one at a time to that source's own strategy
object), simulates each worker's FIFO queue with a loop, and computes every metric exactly
(nearest-rank quantiles, sets of (key, worker) pairs).
"""

from __future__ import annotations

import math

import numpy as np

from skewbench.grouping.base import Batch


def replay_ref(rows, make_strategy, n, s, window, provisioning=None, mean_cost=None, speed=None):
    """rows: list of (seq, ts_seconds, key, cost_ms). Returns a dict of metrics."""
    m = len(rows)
    strategies = [make_strategy() for _ in range(s)]
    if provisioning is None:
        arrival = [r[1] * 1000.0 for r in rows]
    else:
        tau = mean_cost * provisioning / (100.0 * n)
        arrival = [r[0] * tau for r in rows]
    assign = []
    for i, (seq, _, key, cost) in enumerate(rows):
        strat = strategies[seq % s]
        b = Batch(np.array([seq], dtype=np.int64), np.array([key], dtype=np.int64),
                  np.array([arrival[i]]), np.array([cost]))
        assign.append(int(strat.route(b)[0]))

    def factor(seq, w):
        if not speed:
            return 1.0
        p = max(j for j, (start, _) in enumerate(speed) if start <= seq)
        return speed[p][1][w]

    def fifo(workers):
        free = [-math.inf] * n
        lat = []
        for i, (seq, _, key, cost) in enumerate(rows):
            w = workers[i]
            x = cost * factor(seq, w)
            start = max(arrival[i], free[w])
            free[w] = start + x
            lat.append(free[w] - arrival[i])
        return lat

    lat = fifo(assign)
    lat_rr = fifo([r[0] % n for r in rows])
    counts = [0] * n
    for w in assign:
        counts[w] += 1
    ends = list(range(window, m, window)) + [m]
    cum, series = [0] * n, []
    for t, end in enumerate(ends):
        lo = 0 if t == 0 else ends[t - 1]
        for w in assign[lo:end]:
            cum[w] += 1
        series.append(max(cum) / sum(cum) - 1.0 / n)
    pairs = {(rows[i][2], assign[i]) for i in range(m)}
    keys = {r[2] for r in rows}
    # aggregation cost per window, from scratch: each key's set of workers within the window
    merge, wrep, card = [], [], []
    for t, end in enumerate(ends):
        lo = 0 if t == 0 else ends[t - 1]
        workers_of: dict[int, set[int]] = {}
        for i in range(lo, end):
            workers_of.setdefault(rows[i][2], set()).add(assign[i])
        merge.append(sum(len(ws) for ws in workers_of.values() if len(ws) >= 2))
        per_worker = [sum(1 for ws in workers_of.values() if w in ws) for w in range(n)]
        mean = sum(per_worker) / n
        wrep.append(sum(per_worker) / len(workers_of))
        card.append((max(per_worker) - mean) / mean)

    def q(p):
        srt = sorted(lat)
        return srt[max(1, math.ceil(p * m)) - 1]

    return {
        "assign": assign, "counts": counts,
        "imbalance": max(counts) / m - 1.0 / n,
        "imbalance_cum": series,
        "imbalance_avg": sum(series) / len(series),
        "latency_mean": math.fsum(lat) / m, "latency_max": max(lat), "latency_min": min(lat),
        "latency_p50": q(0.5), "latency_p95": q(0.95), "latency_p99": q(0.99),
        "speedup_vs_rr": math.fsum(lat_rr) / math.fsum(lat),
        "pairs": len(pairs), "replication": len(pairs) / len(keys),
        "merge_series": merge, "merge_partials": sum(merge) / len(merge),
        "window_replication": sum(wrep) / len(wrep), "cardinality_series": card,
        "cardinality_imbalance": sum(card) / len(card),
    }
