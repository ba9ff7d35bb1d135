"""Plain-Python reference of the live mode's arithmetic (``skewbench.live.predict`` and
``skewbench.live.compare``), used only by tests.

From the definitions, one tuple at a time, with lists and loops; it shares nothing with the
implementation (no numpy, no cumulative maximum, no bincount):

* a FIFO server per worker: its tuples in stream order, ``end_k = max(end_{k-1}, arrival_k) +
  service_k``, ``start_k = end_k - service_k``; tuple ``i`` arrives ``transport`` after it is due
  and takes its cost plus the per-tuple ``overhead`` (ms; times in seconds);
* a phase's metrics: tuples per worker; busy time (the sum of a worker's service times, end less
  start); idle time (the span less the busy time, at least 0); the span (the last end less the
  first due); throughput (tuples over the span, None when the span is 0); latency (end less due,
  ms) pooled over tuples at p50, p95 and p99 by linear interpolation between the order statistics
  at position ``q (n - 1)`` (numpy's default, written out below); per worker the mean latency of
  its tuples (None for a worker without any) and the largest of those means; the queueing latency
  (start less due) averaged over tuples;
* the calibration: per worker its tuples in order of start (ties: stream order), each gap
  between consecutive starts in ms less the earlier tuple's cost; the overhead is the mean of
  all gaps, the transport delay the median (the mean of the two middle values for an even count)
  over the workers of their first tuple's wait (start less due, ms); both at least 0, and 0 with
  nothing to measure;
* Kendall's tau-b: over the pairs where neither value is None, ``n0 = n (n - 1) / 2`` pairs,
  ``n1`` and ``n2`` the pairs tied in x and in y, ``nc`` and ``nd`` the concordant and discordant
  ones: ``(nc - nd) / sqrt((n0 - n1) (n0 - n2))``; None for fewer than two pairs or a zero
  denominator (one side constant).
"""

from __future__ import annotations

import math


def fifo(arrival, service):
    """Completion times of one FIFO server (``arrival`` and ``service`` in the same unit)."""
    end = []
    prev = -math.inf
    for a, s in zip(arrival, service):
        prev = max(prev, a) + s
        end.append(prev)
    return end


def predict(worker, due_s, cost_ms, workers, overhead_ms, transport_ms):
    """Predicted (start, end) of every tuple, in seconds, in the phase's order."""
    m = len(worker)
    start, end = [0.0] * m, [0.0] * m
    for w in range(workers):
        mine = [i for i in range(m) if worker[i] == w]
        service = [(cost_ms[i] + overhead_ms) / 1000.0 for i in mine]
        arrival = [due_s[i] + transport_ms / 1000.0 for i in mine]
        for i, s, e in zip(mine, service, fifo(arrival, service)):
            end[i] = e
            start[i] = e - s
    return start, end


def percentile(values, q):
    """numpy's default percentile (``method="linear"``): ``q`` in percent."""
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median(values):
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def metrics(worker, due_s, start_s, end_s, workers):
    """A phase's metrics from its per-tuple timings (seconds), keyed as ``timing_metrics``."""
    n = len(worker)
    count = [0] * workers
    busy = [0.0] * workers
    lat_sum = [0.0] * workers
    latencies, waits = [], []
    for i in range(n):
        w = worker[i]
        count[w] += 1
        busy[w] += end_s[i] - start_s[i]
        lat = (end_s[i] - due_s[i]) * 1000.0
        lat_sum[w] += lat
        latencies.append(lat)
        waits.append((start_s[i] - due_s[i]) * 1000.0)
    out = {"tuples": n, "subtask_records": count}
    if n == 0:
        return {**out, "span_s": 0.0, "throughput": None, "latency_p50_ms": None, "latency_p95_ms": None,
                "latency_p99_ms": None, "queueing_mean_ms": None, "busy_s": [0.0] * workers,
                "idle_s": [0.0] * workers, "subtask_latency_mean_ms": [None] * workers, "latency_mean_max_ms": None}
    span = max(end_s) - min(due_s)
    means = [lat_sum[w] / count[w] if count[w] else None for w in range(workers)]
    return {**out, "span_s": span, "throughput": n / span if span > 0 else None,
            "latency_p50_ms": percentile(latencies, 50), "latency_p95_ms": percentile(latencies, 95),
            "latency_p99_ms": percentile(latencies, 99), "queueing_mean_ms": math.fsum(waits) / n,
            "busy_s": busy, "idle_s": [max(0.0, span - b) for b in busy], "subtask_latency_mean_ms": means,
            "latency_mean_max_ms": max(v for v in means if v is not None)}


def calibrate(worker, due_s, start_s, end_s, cost_ms, workers):
    """(overhead_ms, transport_ms) of a calibration phase's timings."""
    gaps, waits = [], []
    for w in range(workers):
        mine = sorted((start_s[i], i) for i in range(len(worker)) if worker[i] == w)
        if not mine:
            continue
        for (s0, i0), (s1, _) in zip(mine, mine[1:]):
            gaps.append((s1 - s0) * 1000.0 - cost_ms[i0])
        first = mine[0][1]
        waits.append((start_s[first] - due_s[first]) * 1000.0)
    overhead = max(0.0, sum(gaps) / len(gaps)) if gaps else 0.0
    transport = max(0.0, median(waits)) if waits else 0.0
    return overhead, transport


def kendall_tau_b(x, y):
    pairs = [(a, b) for a, b in zip(x, y) if a is not None and b is not None]
    n = len(pairs)
    if n < 2:
        return None
    n0 = n * (n - 1) // 2
    n1 = n2 = nc = nd = 0
    for i in range(n):
        for j in range(i + 1, n):
            (xi, yi), (xj, yj) = pairs[i], pairs[j]
            if xi == xj:
                n1 += 1
            if yi == yj:
                n2 += 1
            if xi != xj and yi != yj:
                if (xi < xj) == (yi < yj):
                    nc += 1
                else:
                    nd += 1
    denom = (n0 - n1) * (n0 - n2)
    return (nc - nd) / math.sqrt(denom) if denom > 0 else None
