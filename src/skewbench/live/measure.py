"""A phase's metrics from per-tuple timings: the same code for what the engine recorded and for
what the model predicts (:mod:`skewbench.live.model`).

A phase's stream is ``D`` seconds of due times; the **measurement window** is ``[warm-up, D]``
(the warm-up, default the first 20%, and the drain after the last due time excluded).  In it:

* **throughput**: the tuples whose work ended inside the window (their contribution is in the
  aggregation's state), over the window's length;
* **latency** p50, p95, p99 and p99.9 of the tuples due inside the window, from the due time to the
  arrival at the sink of the final aggregate of the tuple's key and window (through the merge
  stage when there is one); ``worker_latency`` the same to the end of the tuple's work;
* per worker its **utilisation** (time spent on tuples inside the window, over its length); the
  merge stage's records (the whole phase) and utilisation;
* the sources' **blocked** time inside the window (a source waiting for room in its channels);
* a **per-second series**: each worker's completed tuples and the sources' blocked milliseconds in
  every second of the phase.

Flink's own per-subtask metrics, sampled about every second over REST while the job ran, are set
beside these by :func:`flink_window` (their rates over the same window) and :func:`flink_series`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

PERCENTILES = (50.0, 95.0, 99.0, 99.9)
#: a recorded emission held up by less than this is the source's own pace (its per-record time,
#: about 0.1 ms here), not a wait for room: not counted as blocked
SOURCE_JITTER_MS = 1.0
LATENCY_KEYS = ("p50", "p95", "p99", "p999")


@dataclass
class Timings:
    """A phase's per-tuple timings in ms from its start (measured or predicted), stream order."""

    due: np.ndarray
    emit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    final: np.ndarray  # the tuple's key's final aggregate for its window, at the sink
    worker: np.ndarray
    source: np.ndarray  # the source that emitted each tuple
    blocked: np.ndarray  # how long the tuple's source waited for room before emitting it
    merge_start: np.ndarray  # per partial the merge stage took (empty: no merge stage)
    merge_end: np.ndarray
    merge_task: np.ndarray


def overlap(s: np.ndarray, e: np.ndarray, t0: float, t1: float) -> np.ndarray:
    """Each interval's time inside [t0, t1]."""
    return np.clip(np.minimum(e, t1) - np.maximum(s, t0), 0.0, None)


def busy_per_task(task: np.ndarray, s: np.ndarray, e: np.ndarray, tasks: int, t0: float, t1: float) -> np.ndarray:
    return np.bincount(task, weights=overlap(s, e, t0, t1), minlength=tasks)[:tasks]


def metrics(t: Timings, workers: int, merge: int, window: tuple[float, float]) -> dict[str, Any]:
    """The module docstring's metrics of one phase (times in ms, rates per second)."""
    t0, t1 = window
    length_s = (t1 - t0) / 1000.0
    due_in = (t.due >= t0) & (t.due <= t1)
    out: dict[str, Any] = {"window_s": [t0 / 1000.0, t1 / 1000.0],
                           "throughput": float(((t.end >= t0) & (t.end <= t1)).sum() / length_s)}
    lat = (t.final - t.due)[due_in]
    wl = (t.end - t.due)[due_in]
    for k, p in zip(LATENCY_KEYS, PERCENTILES):
        out[f"latency_{k}_ms"] = float(np.percentile(lat, p)) if lat.size else None
        out[f"worker_latency_{k}_ms"] = float(np.percentile(wl, p)) if wl.size else None
    out["emit_late_p99_ms"] = float(np.percentile((t.emit - t.due)[due_in], 99)) if due_in.any() else None
    w = t.worker.astype(np.int64)
    out["subtask_records"] = np.bincount(w, minlength=workers).astype(int).tolist()
    out["utilisation"] = (busy_per_task(w, t.start, t.end, workers, t0, t1) / (t1 - t0)).tolist()
    out["utilisation_max"] = max(out["utilisation"]) if workers else 0.0
    blocked_s = t.emit - t.blocked
    out["source_blocked_ms"] = float(overlap(blocked_s, t.emit, t0, t1).sum())
    out["merge_records"] = int(t.merge_start.size)
    if merge:
        mt = t.merge_task.astype(np.int64)
        out["merge_subtask_records"] = np.bincount(mt, minlength=merge).astype(int).tolist()
        out["merge_utilisation"] = (busy_per_task(mt, t.merge_start, t.merge_end, merge, t0, t1) / (t1 - t0)).tolist()
        out["merge_utilisation_max"] = max(out["merge_utilisation"])
    else:
        out["merge_subtask_records"], out["merge_utilisation"], out["merge_utilisation_max"] = [], [], None
    return out


def series(t: Timings, workers: int, seconds: int) -> dict[str, Any]:
    """Per second of the phase: each worker's completed tuples, and the sources' blocked ms."""
    sec = np.clip(np.floor(t.end / 1000.0).astype(np.int64), 0, None)
    n = max(seconds, int(sec.max()) + 1 if sec.size else 0)
    done = np.zeros((workers, n))
    np.add.at(done, (t.worker.astype(np.int64), sec), 1.0)
    blocked = np.zeros(n)
    for k in range(n):
        blocked[k] = overlap(t.emit - t.blocked, t.emit, k * 1000.0, (k + 1) * 1000.0).sum()
    return {"worker_throughput": done.tolist(), "source_blocked_ms": blocked.tolist()}


def source_delays(emit: np.ndarray, due: np.ndarray, source: np.ndarray) -> np.ndarray:
    """How long each emission was held up beyond its due time and its source's previous
    emission: what a source spent blocked (or stalled) before emitting it (recorded emissions)."""
    out = np.zeros(emit.size)
    for j in np.unique(source):
        idx = np.flatnonzero(source == j)
        idx = idx[np.argsort(emit[idx], kind="stable")]
        prev = np.concatenate([[-np.inf], emit[idx][:-1]])
        out[idx] = np.clip(emit[idx] - np.maximum(due[idx], prev), 0.0, None)
    return out


# ---- Flink's own metrics, sampled over REST while the job ran ----------------------------------

FLINK_COUNTERS = ("numRecordsIn", "accumulateBusyTimeMs", "accumulateIdleTimeMs", "accumulateBackPressuredTimeMs")


def _role(name: str) -> str | None:
    low = name.lower()
    if low.startswith("source"):
        return "source"
    if low.startswith("work"):
        return "work"
    if low.startswith("merge"):
        return "merge"
    return None


def _counters(info: dict[str, Any], start_us: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per role: the samples' times (ms from the phase's start) and counters (samples x subtasks
    x counters), from samples where every subtask reported every counter."""
    out: dict[str, tuple[list, list]] = {}
    for s in info.get("samples", []):
        t = (int(s["us"]) - start_us) / 1000.0
        for name, subs in s.get("vertices", {}).items():
            role = _role(name)
            if role is None:
                continue
            try:
                row = [[float(x[c]) for c in FLINK_COUNTERS] for x in subs]
            except (KeyError, ValueError, TypeError):
                continue
            ts, rows = out.setdefault(role, ([], []))
            if rows and len(rows[0]) != len(row):
                continue
            ts.append(t)
            rows.append(row)
    return {r: (np.asarray(ts), np.asarray(rows)) for r, (ts, rows) in out.items() if len(ts) >= 2}


def _at(ts: np.ndarray, vals: np.ndarray, t: float) -> np.ndarray:
    """Counters at time t, linearly between the samples around it (clamped to the first/last)."""
    flat = vals.reshape(len(ts), -1)
    return np.array([np.interp(t, ts, flat[:, k]) for k in range(flat.shape[1])]).reshape(vals.shape[1:])


def flink_window(info: dict[str, Any], start_us: int, window: tuple[float, float]) -> dict[str, Any]:
    """Flink's per-subtask rates over the measurement window: busy, idle and back-pressured ms per
    second and records in per second, for the workers, the merge stage and the sources (None for
    a role with fewer than two complete samples), and the sources' back-pressured ms in all."""
    t0, t1 = window
    out: dict[str, Any] = {}
    for role, (ts, vals) in _counters(info, start_us).items():
        if ts[0] > t0 + 1500 or ts[-1] < t1 - 1500:  # the samples do not cover the window
            continue
        d = _at(ts, vals, t1) - _at(ts, vals, t0)
        sec = (t1 - t0) / 1000.0
        out[role] = {"records_in_per_s": (d[:, 0] / sec).tolist(), "busy_ms_per_s": (d[:, 1] / sec).tolist(),
                     "idle_ms_per_s": (d[:, 2] / sec).tolist(), "backpressured_ms_per_s": (d[:, 3] / sec).tolist()}
        if role == "source":
            out["source_backpressured_ms"] = float(d[:, 3].sum())
    return out


def flink_series(info: dict[str, Any], start_us: int) -> dict[str, Any]:
    """Per interval between two samples (about a second): its end (s from the phase's start), the
    workers' busy ms per second and records in per second, and the sources' back-pressured ms per
    second (summed over the sources)."""
    c = _counters(info, start_us)
    out: dict[str, Any] = {}
    if "work" in c:
        ts, vals = c["work"]
        dt = np.diff(ts)[:, None] / 1000.0
        dv = np.diff(vals, axis=0)
        out["t_s"] = (ts[1:] / 1000.0).tolist()
        out["worker_records_in_per_s"] = (dv[:, :, 0] / dt).T.tolist()
        out["worker_busy_ms_per_s"] = (dv[:, :, 1] / dt).T.tolist()
    if "source" in c:
        ts, vals = c["source"]
        dt = np.diff(ts) / 1000.0
        out["source_t_s"] = (ts[1:] / 1000.0).tolist()
        out["source_backpressured_ms_per_s"] = (np.diff(vals[:, :, 3], axis=0).sum(axis=1) / dt).tolist()
    return out
