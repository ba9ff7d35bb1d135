"""A windowed aggregation's parallel steps on a running engine: ShedPart against Storm's fields
grouping with their windows' processing time measured (shedpart.spec.md R5's runtime half, R7).

The shedding family's partition strategies (``fld``: Storm's fields grouping; ``shedpart``: ShedPart
on it) decide, for every complete window of a dataset's stream, how many of the window's tuples
each of ``V`` workers aggregates (:func:`skewbench.shedding.shedpart.replay`: its ``loads_after``,
after ShedPart's trimming), and ShedPart's own time deciding it (``t_sp_ns``, measured in this
process, where the shedder runs).  Each window is then one parallel step on Spark: one keyed stage
whose partition ``k`` spends the window's per-tuple cost on each of its ``loads_after[w][k]`` tuples
(the same task function as the live mode's phases, :mod:`skewbench.live.spark`), so a window's
processing time is its stage's span (first task start to last task end), as the paper's Storm
windows are.  The per-tuple overhead of the engine is measured once by a calibration stage (every
worker backlogged), never per strategy, and gives the predicted span of each window:
``max_k loads_after[w][k] * (cost + overhead)``.

Per window: the tuples in it, those processed, ShedPart's time ``T_sp``, the measured and
predicted processing time ``T_proc`` and ShedPart's share ``T_sp / (T_sp + T_proc)``.  The
records per partition are checked against the decision to the tuple, as every live phase is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from skewbench import registry
from skewbench.errors import SkewbenchError
from skewbench.live.decisions import Phase
from skewbench.live.predict import calibrate

#: the shedding family's partition strategies a windowed live run executes
STRATEGIES = ("fld", "shedpart")


@dataclass
class WindowDecisions:
    """One partition strategy's decisions on every complete window of a stream."""

    strategy: str
    workers: int
    loads: np.ndarray        # (windows, workers): each window's tuples per worker before shedding
    loads_after: np.ndarray  # (windows, workers): what each worker aggregates
    t_sp_s: np.ndarray       # ShedPart's own time per window (s; 0 for a strategy that sheds nothing)
    ran: np.ndarray          # 1 where ShedPart's Algorithm 1 ran (the pre-check did not skip the window)
    range_s: float
    slide_s: float
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def windows(self) -> int:
        return int(self.loads.shape[0])


def check_strategy(strategy: str) -> type:
    """The partition strategy's class; one line for an unknown name or an operator shedder."""
    cls = registry.get("shedding", strategy)
    if getattr(cls, "kind", None) != "partition":
        raise SkewbenchError(f"shedder {strategy} sheds in front of one operator; a windowed live run executes the "
                             f"partition strategies ({', '.join(STRATEGIES)}); `skewbench live` runs the operator "
                             f"shedders")
    return cls


def decide(dataset: str, strategy: str, workers: int, *, windows: int | None = None, seed: int = 0,
           error: float = 0.1, confidence: float = 0.95, params: dict[str, Any] | None = None) -> WindowDecisions:
    """``strategy``'s per-window loads on the dataset at ``dataset`` (its window range and slide
    from its metadata, as a replay has them), the first ``windows`` complete windows when given."""
    from skewbench.datasets.contract import open_dataset
    from skewbench.shedding.engine import ShedConfig, window_of

    cls = check_strategy(strategy)
    if windows is not None and windows < 1:
        raise SkewbenchError(f"windows must be at least 1, got {windows}")
    ds = open_dataset(dataset)
    if "value" not in ds.columns:
        raise SkewbenchError(f"{dataset}: a windowed aggregation needs a value column, which the dataset lacks")
    t = ds.read_table(["ts", "key", "value"])
    ts = t.column("ts").to_numpy().astype(np.float64)
    keys = t.column("key").to_numpy().astype(np.int64)
    values = t.column("value").to_numpy().astype(np.float64)
    strat = cls(**(params or {}))
    r, s = window_of(ds, ShedConfig(), float(ts[-1] - ts[0]) if len(ts) > 1 else 0.0)
    if windows is not None:  # the stream up to the end of the windows-th complete window
        # (a slide more than the last window's end: the first window may start a slide after ts[0], and a
        # window is complete when a tuple comes after it)
        stop = int(np.searchsorted(ts, ts[0] + (windows + 1) * s + r, side="left"))
        ts, keys, values = ts[:stop], keys[:stop], values[:stop]
    win = strat.replay(ts, keys, values, strat.config(r, s, workers, error, confidence), seed)
    k = len(win.size) if windows is None else min(windows, len(win.size))
    if k == 0:
        raise SkewbenchError(f"{dataset}: no complete window of {r:g} s in the stream")
    return WindowDecisions(strategy, workers, np.asarray(win.loads, np.int64)[:k],
                           np.asarray(win.loads_after, np.int64)[:k], np.asarray(win.t_sp_ns, np.float64)[:k] / 1e9,
                           np.asarray(win.ran, np.int64)[:k], r, s, dict(getattr(strat, "params", {}) or {}))


def window_phase(d: WindowDecisions, w: int, cost_ms: float) -> Phase:
    """Window ``w`` of ``d`` as a phase: ``loads_after[w][k]`` tuples on worker ``k``, each ``cost_ms``."""
    worker = np.repeat(np.arange(d.workers, dtype=np.int32), d.loads_after[w])
    n = int(worker.size)
    return Phase("shedding", d.strategy, "routed", d.workers, worker, np.zeros(n, np.int64), np.full(n, float(cost_ms)),
                 np.zeros(n), int(d.loads[w].sum()), d.params)


def run(decisions: Sequence[WindowDecisions], cost_ms: float = 1.0, work: str = "sleep",
        progress: Callable[[str], None] = lambda m: None) -> dict[str, Any]:
    """Every window of every strategy as one Spark stage (the Spark of the replays, a task slot
    per worker locally), after a calibration stage; rows per (strategy, window) and the engine's
    measured per-tuple overhead."""
    from skewbench.live import spark as sp
    from skewbench.live.run import check_counts

    if not decisions:
        raise SkewbenchError("no strategy to run")
    if not cost_ms > 0:
        raise SkewbenchError(f"cost must be > 0 ms, got {cost_ms:g}")
    workers = decisions[0].workers
    if any(d.workers != workers for d in decisions):
        raise SkewbenchError("every strategy of a windowed live run has the same workers")
    cpu = work == "cpu"
    session = sp.session(workers)
    m = 2000
    cal = Phase("calibration", "calibration", "routed", workers, (np.arange(m) % workers).astype(np.int32),
                np.zeros(m, np.int64), np.full(m, float(cost_ms)), np.zeros(m), m)
    sp.run_phase(session, cal, cpu)  # warm-up: the first stage starts the Python workers
    tm = sp.run_phase(session, cal, cpu)
    overhead_ms = calibrate(tm["worker"], tm["due"], tm["start"], tm["end"], cal.cost_ms, workers).overhead_ms
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for d in decisions:
        for w in range(d.windows):
            ph = window_phase(d, w, cost_ms)
            tm = sp.run_phase(session, ph, cpu)
            records = np.bincount(tm["worker"], minlength=workers).astype(int).tolist()
            check_counts("spark", ph, records)
            span = float(tm["end"].max() - tm["start"].min()) if ph.executed else 0.0
            predicted = float(d.loads_after[w].max()) * (cost_ms + overhead_ms) / 1000.0
            t_sp = float(d.t_sp_s[w])
            rows.append({"strategy": d.strategy, "window": w, "workers": workers,
                         "tuples": int(d.loads[w].sum()), "processed": ph.executed,
                         "shed": int(d.loads[w].sum()) - ph.executed, "ran": int(d.ran[w]),
                         "load_max": int(d.loads_after[w].max()), "subtask_records": records,
                         "t_sp_s": t_sp, "t_proc_measured_s": span, "t_proc_predicted_s": predicted,
                         "t_win_measured_s": t_sp + span,
                         "sp_share": t_sp / (t_sp + span) if t_sp + span > 0 else None})
        progress(f"spark: {d.strategy} {d.windows} windows done")
    return {"rows": rows, "overhead_ms": overhead_ms, "cost_ms": float(cost_ms), "work": work, "workers": workers,
            "seconds": time.perf_counter() - t0}
