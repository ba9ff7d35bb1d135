"""The simulator's prediction for a phase, and the metrics of a phase's per-tuple timings.

Prediction: each worker a FIFO queue that serves its tuples in stream order, tuple ``i`` arriving
``transport_ms`` after it is due and taking its cost plus the engine's per-tuple overhead
``overhead_ms`` (both measured once per run by the calibration phase, :mod:`skewbench.live.run`,
never per strategy).  For a worker's tuples with arrivals ``a`` and service times ``s`` the
completions are ``end_k = C_k + max_{j <= k} (a_j - C_{j-1})`` with ``C`` the running sum of
``s``: the FIFO recurrence ``end_k = max(end_{k-1}, a_k) + s_k`` unrolled, computed with one
cumulative maximum (:func:`fifo`).

Metrics (the same for a prediction and a measurement, :func:`timing_metrics`): per worker its
tuples, busy time (the sum of its service times), idle time (the phase's span less its busy
time) and the mean latency of its tuples; the span (first due to last end), the throughput
(tuples over the span), and the latency (end less due) p50, p95 and p99 pooled over tuples, and
the queueing latency (start less due).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Overheads:
    """What the engine adds to every tuple, measured by the calibration phase (ms)."""

    overhead_ms: float  # service time beyond the tuple's cost (including the gap to the next tuple)
    transport_ms: float  # from due to the worker, on an idle worker

    def to_dict(self) -> dict[str, float]:
        return {"overhead_ms": self.overhead_ms, "transport_ms": self.transport_ms}


def fifo(arrival: np.ndarray, service: np.ndarray) -> np.ndarray:
    """Completion times of one FIFO server for arrivals ``arrival`` (non-decreasing) served in
    order with service times ``service`` (same units)."""
    if arrival.size == 0:
        return np.zeros(0)
    c = np.cumsum(service)
    return c + np.maximum.accumulate(arrival - (c - service))


def predict(worker: np.ndarray, due_s: np.ndarray, cost_ms: np.ndarray, workers: int, o: Overheads
            ) -> tuple[np.ndarray, np.ndarray]:
    """Predicted (start, end) in seconds of every tuple of a phase."""
    s = (cost_ms + o.overhead_ms) / 1000.0
    a = due_s + o.transport_ms / 1000.0
    end = np.empty(worker.size)
    for w in range(workers):
        idx = np.flatnonzero(worker == w)
        end[idx] = fifo(a[idx], s[idx])
    return end - s, end


def timing_metrics(worker: np.ndarray, due_s: np.ndarray, start_s: np.ndarray, end_s: np.ndarray,
                   workers: int) -> dict[str, Any]:
    """A phase's metrics from its per-tuple timings (seconds; see the module docstring)."""
    n = int(worker.size)
    out: dict[str, Any] = {"tuples": n, "subtask_records": np.bincount(worker, minlength=workers).astype(int).tolist()}
    if n == 0:
        return out | {"span_s": 0.0, "throughput": None, "latency_p50_ms": None, "latency_p95_ms": None,
                      "latency_p99_ms": None, "queueing_mean_ms": None, "busy_s": [0.0] * workers,
                      "idle_s": [0.0] * workers, "subtask_latency_mean_ms": [None] * workers,
                      "latency_mean_max_ms": None}
    lat = (end_s - due_s) * 1000.0
    span = float(end_s.max() - due_s.min())
    busy = np.bincount(worker, weights=end_s - start_s, minlength=workers)
    lat_sum = np.bincount(worker, weights=lat, minlength=workers)
    cnt = np.bincount(worker, minlength=workers)
    mean_lat = [float(lat_sum[w] / cnt[w]) if cnt[w] else None for w in range(workers)]
    p50, p95, p99 = (float(x) for x in np.percentile(lat, [50, 95, 99]))
    return out | {"span_s": span, "throughput": n / span if span > 0 else None, "latency_p50_ms": p50,
                  "latency_p95_ms": p95, "latency_p99_ms": p99,
                  "queueing_mean_ms": float(((start_s - due_s) * 1000.0).mean()),
                  "busy_s": busy.tolist(), "idle_s": [max(0.0, span - b) for b in busy.tolist()],
                  "subtask_latency_mean_ms": mean_lat,
                  "latency_mean_max_ms": max(v for v in mean_lat if v is not None)}


def calibrate(worker: np.ndarray, due_s: np.ndarray, start_s: np.ndarray, end_s: np.ndarray, cost_ms: np.ndarray,
              workers: int) -> Overheads:
    """The engine's per-tuple overhead and transport delay from a calibration phase's timings:
    every worker backlogged (all tuples due at once), so consecutive tuples of a worker follow
    each other and the time from one's start to the next one's is its cost plus the overhead
    (the mean over all such gaps); the transport delay is the median, over the workers, of their
    first tuple's wait (the run uses a second, idle calibration phase for it on Flink)."""
    gaps, waits = [], []
    for w in range(workers):
        idx = np.flatnonzero(worker == w)
        if idx.size == 0:
            continue
        order = idx[np.argsort(start_s[idx], kind="stable")]
        st = start_s[order]
        if order.size > 1:
            gaps.append((np.diff(st) * 1000.0 - cost_ms[order[:-1]]))
        waits.append((start_s[order[0]] - due_s[order[0]]) * 1000.0)
    # the mean, not the median: a backlogged worker pays every gap, its rare long ones included
    overhead = float(np.mean(np.concatenate(gaps))) if gaps else 0.0
    return Overheads(max(0.0, overhead), max(0.0, float(np.median(waits))) if waits else 0.0)
