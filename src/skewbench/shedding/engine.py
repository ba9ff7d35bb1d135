"""The shedding replay engine: one independent task per grid cell, on the shared executors.

Operator cells (las.spec.md 2.6, 3, 4)
--------------------------------------
The dataset's keys and costs (execution times in ms; 1 ms when it has none) replay through one
FIFO operator behind the cell's shedder.  Arrival times keep the dataset's shape (constant,
Poisson, or the phase rates of a drifting stream) but are rescaled so that, over the reference
segment (the first phase of a drifting dataset, else the whole stream), the operator's capacity
is ``provisioning`` percent of the arrival rate: the mean gap there becomes
``W * P / 100`` ms, where ``W`` is the segment's mean cost (las.spec.md A8).  Straw-Man's
average is that ``W``; Base Line drops with probability ``u = 1 - P/100``.  LAS's warm-up sample
(A5) is a bootstrap sample of the reference segment drawn from the cell's seed, which also draws
the Count-Min hash functions and Base Line's coins.  Every operator cell also runs Base Line on
the same stream and seed, for lambda.  Every operator cell is compared with the least drops any
shedder could achieve offline on the stream's first :data:`skewbench.shedding.optimum.WINDOW`
tuples under the same bound and the cell's goal (``drop_optimality``; the optimum depends only on
that prefix, tau and the goal, so a process computes it once for all strategies and seeds).

Partition cells (shedpart.spec.md 2, 3)
---------------------------------------
The dataset's ``ts`` (seconds), ``key`` (group) and ``value`` replay through the cell's
strategy's routing on ``workers`` workers, with ShedPart at every window's end or without it (the
baselines).  Window range and slide come from ``--range``/``--slide``, else from the dataset's
metadata (``shedpart_window``), else a tenth of the dataset's span with half of it as slide.

Results are the same whatever runs the tasks: each depends only on the dataset and its cell.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Sequence

import numpy as np

from skewbench import registry
from skewbench import replay as shared
from skewbench.datasets.contract import open_dataset
from skewbench.errors import SkewbenchError
from skewbench.replay import Cell, Replayed
from skewbench.shedding.params import MAX_ERROR, MAX_WORKERS

FAMILY = "shedding"
#: partition cells carry this (unused) provisioning coordinate; operator cells one worker
NO_PROVISIONING = 100
_WARM_TAG = 0x5A17
#: partition shedders: the most windows a replay computes (90,000 windows of 50 keys took 25 s and
#: 0.47 GB per cell here; the papers' streams have a few hundred)
MAX_WINDOWS = 100_000


@dataclass
class ShedConfig:
    """Replay settings shared by every cell (``skewbench replay shedding`` options)."""

    bound_ms: float = 6.4
    window: int = 4000
    range_s: float | None = None
    slide_s: float | None = None
    error: float = 0.1
    confidence: float = 0.95

    def check(self) -> None:
        if not self.bound_ms > 0:  # 0 would shed every tuple that waits at all, and Q/tau has no value
            raise SkewbenchError(f"--bound must be a latency in ms > 0 (inf: no bound), got {self.bound_ms:g}")
        if self.window < 1:
            raise SkewbenchError(f"--window must be a number of arrivals >= 1, got {self.window}")
        if self.range_s is not None and not self.range_s > 0:
            raise SkewbenchError(f"--range must be > 0 seconds, got {self.range_s}")
        if self.slide_s is not None and not self.slide_s > 0:
            raise SkewbenchError(f"--slide must be > 0 seconds, got {self.slide_s}")
        if self.range_s is not None and self.slide_s is not None and self.slide_s > self.range_s:
            raise SkewbenchError(f"--slide ({self.slide_s}) must not exceed --range ({self.range_s})")
        if not 0 <= self.error <= MAX_ERROR:
            raise SkewbenchError(f"--error must be in [0, {MAX_ERROR:g}], got {self.error}")
        if not 0 < self.confidence < 1:
            raise SkewbenchError(f"--confidence must be in (0, 1), got {self.confidence}")


def make(cell: Cell) -> Any:
    """The cell's strategy object (checks its parameters)."""
    return registry.get(FAMILY, cell.strategy)(**cell.param_dict)


def _adjust(cls: type, coords: dict[str, int]) -> dict[str, int]:
    if cls.kind == "operator":
        return {**coords, "workers": 1}
    return {**coords, "provisioning": NO_PROVISIONING}


def grid(strategies: Sequence[str], provisioning: Sequence[int], workers: Sequence[int], seeds: Sequence[int],
         params: dict[str, dict[str, list[Any]]] | None = None) -> list[Cell]:
    """Cells: operator strategies x provisioning, partition strategies x workers, x seeds."""
    cells = shared.grid(FAMILY, strategies, {"provisioning": list(provisioning), "workers": list(workers)}, seeds,
                        params, _adjust)
    over = [c.workers for c in cells if c.workers > MAX_WORKERS]  # operator cells have one worker
    if over:
        raise SkewbenchError(f"workers must be at most {MAX_WORKERS:,} (a partition cell keeps a count per key and "
                             f"worker), got {over[0]:,}")
    for c in cells:
        make(c)  # bad parameter values fail before any work
    return cells


def inapplicable(strategy: str, columns: Sequence[str]) -> str | None:
    """Why ``strategy`` cannot replay a dataset with ``columns``, or None."""
    cls = registry.get(FAMILY, strategy)
    if cls.kind == "partition" and "value" not in columns:
        return (f"{strategy} aggregates a value column, which the dataset lacks (ingest a CSV with "
                "--value-column, or use a dataset that has one)")
    return None


def data_label(meta: dict[str, Any]) -> str:
    """Where a dataset came from, in a few words (a surrogate says so)."""
    if meta.get("surrogate_of"):
        return f"surrogate: {meta['surrogate_of']}"
    if meta.get("kind") == "trace":
        src = meta.get("source") or {}
        return f"trace: {src.get('format', '?')}"
    gen = str(meta.get("generator", "?"))
    return f"synthetic: {gen}"


# --------------------------------------------------------------------------------------------
# operator cells


@dataclass
class _OpData:
    keys: np.ndarray
    cost: np.ndarray
    ts: np.ndarray
    ref_end: int
    phase_starts: list[int]


def _operator_data(ds) -> _OpData:
    cols = [c for c in ("ts", "key", "cost") if c in ds.columns]
    t = ds.read_table(cols)
    keys = t.column("key").to_numpy().astype(np.int64)
    cost = t.column("cost").to_numpy().astype(np.float64) if "cost" in cols else np.ones(len(keys))
    ts = t.column("ts").to_numpy().astype(np.float64)
    phases = ds.meta.get("phases") or []
    ref_end = int(phases[0]["end"]) if phases and 0 < int(phases[0]["end"]) <= len(keys) else len(keys)
    if len(keys) and int(keys.max()) >= 2**31:
        raise SkewbenchError("operator shedders hash keys below 2^31; this dataset has larger key ids")
    return _OpData(keys, cost, ts, ref_end, [int(p["start"]) for p in phases])


def arrivals_ms(d: _OpData, provisioning: float) -> tuple[np.ndarray, float]:
    """Arrival times (ms from the first arrival) at ``provisioning`` percent, and the reference
    mean cost ``W``."""
    m = len(d.keys)
    wbar = float(d.cost[:d.ref_end].mean()) if d.ref_end else 1.0
    gap = wbar * provisioning / 100.0
    n_ref = d.ref_end
    span = float(d.ts[n_ref - 1] - d.ts[0]) if n_ref > 1 else 0.0
    if span > 0:
        return (d.ts - d.ts[0]) * (gap * (n_ref - 1) / span), wbar
    return np.arange(m, dtype=np.float64) * gap, wbar


def _quantile(x: np.ndarray, q: float) -> float | None:
    return float(np.quantile(x, q)) if len(x) else None


def _mean(x: np.ndarray) -> float | None:
    return float(x.mean()) if len(x) else None


def operator_data(keys: np.ndarray, cost: np.ndarray, ts: np.ndarray | None = None, ref_end: int | None = None,
                  phase_starts: Sequence[int] = ()) -> _OpData:
    """An in-memory stream for :func:`simulate_operator` (tests and reproduction scripts)."""
    keys = np.asarray(keys, dtype=np.int64)
    ts = np.arange(len(keys), dtype=np.float64) if ts is None else np.asarray(ts, dtype=np.float64)
    return _OpData(keys, np.asarray(cost, dtype=np.float64), ts, len(keys) if ref_end is None else int(ref_end),
                   list(phase_starts))


#: what simulate_operator(..., opt_window=0) reports for the optimum it did not compute
_NO_OPTIMUM = SimpleNamespace(status=None, dropped=None, gap=None)


def simulate_operator(strategy: str, params: dict[str, Any], d: _OpData, provisioning: float, tau: float,
                      seed: int, window: int = 4000, opt_window: int | None = None) -> tuple[dict, list[dict], Any]:
    """One operator cell on an in-memory stream: its summary values, series rows and the trace.
    ``opt_window`` is the prefix of the offline optimum (None: :data:`skewbench.shedding.optimum.WINDOW`;
    0: no optimum, its fields None: what a caller that reads none of them saves, 90% of a 32k-tuple
    cell's time at some loads)."""
    from skewbench.shedding import las, optimum
    from skewbench.shedding.strategies.baselines import BaseLine

    strat = registry.get(FAMILY, strategy)(**params)
    P = float(provisioning)
    u = 1.0 - P / 100.0
    arr, wbar = arrivals_ms(d, P)
    cfg = strat.config(float(tau), u, wbar)
    m = len(d.keys)
    warm = {}
    if strat.warm and d.ref_end > 0:
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(_WARM_TAG,))))
        idx = rng.integers(0, d.ref_end, size=max(8 * int(cfg.window), 4096))
        warm = {"warm_keys": d.keys[idx], "warm_durations": d.cost[idx]}
    t0 = time.perf_counter()
    tr = strat.simulate(d.keys, arr, d.cost, cfg, seed, **warm)
    seconds = time.perf_counter() - t0
    if isinstance(strat, BaseLine):
        bl_dropped = int(tr.dropped.sum())
    else:  # lambda compares every shedder with Base Line on the same stream and seed
        bl_dropped = int(BaseLine().simulate(d.keys, arr, d.cost, cfg, seed).dropped.sum())
    kept = ~tr.dropped
    q = tr.q[kept]
    c = tr.c[kept]
    dropped = int(tr.dropped.sum())
    share, pmax = las.prefix_violations(tr.q, tr.dropped, tau) if kept.any() else (None, None)
    qmean = _mean(q)
    span = float(arr[-1] - arr[0]) if m > 1 else 0.0
    goal = str(strat.params.get("goal", "avg"))  # NS and BL have no goal: the paper's AVG(tau)
    n_opt = min(m, optimum.WINDOW if opt_window is None else int(opt_window))
    t_opt = time.perf_counter()
    opt = optimum.window_optimum(arr, d.cost, float(tau), goal, n_opt) if n_opt > 0 else _NO_OPTIMUM
    opt_seconds = time.perf_counter() - t_opt
    window_dropped = int(tr.dropped[:n_opt].sum())
    row = {
        "tuples": m, "kind": "operator", "underprovisioning": u, "bound_ms": float(tau),
        "range_s": 0.0, "slide_s": 0.0, "error": 0.0, "confidence": 0.0,
        "dropped": dropped, "dropped_ratio": dropped / m if m else 0.0, "bl_dropped": bl_dropped,
        "shed_lambda": (dropped - bl_dropped) / bl_dropped if bl_dropped > 0 else None,
        "queueing_latency_mean": qmean, "queueing_latency_p50": _quantile(q, 0.5),
        "queueing_latency_p99": _quantile(q, 0.99), "queueing_latency_max": float(q.max()) if len(q) else None,
        "completion_latency_mean": _mean(c), "completion_latency_p99": _quantile(c, 0.99),
        "q_over_bound": qmean / tau if qmean is not None and 0 < tau < math.inf else None,
        "over_bound_share": float((q > tau + 1e-9).mean()) if len(q) else None,
        "prefix_violation_share": share, "prefix_max": pmax,
        "opt_goal": goal, "opt_status": opt.status, "opt_window": n_opt, "opt_dropped": opt.dropped,
        "opt_gap": opt.gap, "window_dropped": window_dropped,
        "drop_optimality": optimum.drop_optimality(opt.dropped, window_dropped),
        "effective_load": float(d.cost[kept].sum()) / span if span > 0 else None,
        "stats": json.dumps({"matrices": int(tr.matrices), "nop_tuples": int(tr.nop_tuples),
                             "corrections": int(len(tr.deltas)),
                             "correction_mean_abs": float(np.abs(tr.deltas).mean()) if len(tr.deltas) else 0.0,
                             "belief": None if not math.isfinite(tr.belief) else float(tr.belief),
                             "warm_started": bool(tr.warm_started), "wbar_ms": wbar,
                             "phase_starts": list(d.phase_starts)}, sort_keys=True),
        "shedder_seconds": seconds, "opt_seconds": opt_seconds,
    }
    series = []
    B = int(window)
    for w, lo in enumerate(range(0, m, B)):
        hi = min(m, lo + B)
        k = kept[lo:hi]
        qs, cs = tr.q[lo:hi][k], tr.c[lo:hi][k]
        series.append({"window": w, "start": float(lo), "end": float(hi), "tuples": hi - lo,
                       "dropped_ratio": float((~k).mean()), "queueing_latency_mean": _mean(qs),
                       "completion_latency_mean": _mean(cs),
                       "over_bound_share": float((qs > tau + 1e-9).mean()) if len(qs) else None})
    return row, series, tr


def run_operator(ds, cell: Cell, config: ShedConfig) -> tuple[dict, list[dict]]:
    t_wall = time.perf_counter()
    d = _operator_data(ds)
    row, series, _ = simulate_operator(cell.strategy, cell.param_dict, d, cell.provisioning, config.bound_ms,
                                       cell.seed, config.window)
    row["wall_seconds"] = time.perf_counter() - t_wall
    return row, series


# --------------------------------------------------------------------------------------------
# partition cells


def window_of(ds, config: ShedConfig, span: float) -> tuple[float, float]:
    """The (range, slide) in seconds for a dataset whose arrival times span ``span`` seconds: the
    options, its metadata, or a tenth of the span (slide: half the range)."""
    meta = ds.meta.get("shedpart_window") or {}
    r = config.range_s or meta.get("range_s")
    s = config.slide_s or (meta.get("slide_s") if config.range_s is None else None)
    if r is None:
        r = span / 10.0 if span > 0 else 1.0
    r = float(r)
    s = float(s) if s else r / 2.0
    if s > r:
        raise SkewbenchError(f"window slide {s} s exceeds its range {r} s")
    return r, s


def check_windows(ds, config: ShedConfig, cells: int = 1) -> tuple[float, float]:
    """The (range, slide) of a dataset's partition cells, refused when no complete window fits its
    span or when there would be more than :data:`MAX_WINDOWS` (or more series rows over ``cells``
    partition cells than :data:`skewbench.replay.MAX_SERIES_ROWS`)."""
    from skewbench.shedding.shedpart import window_range

    # arrival times never decrease: the first and the last are two small reads
    t0, t1 = (ds.first_value("ts"), ds.last_value("ts")) if ds.tuples else (0.0, 0.0)
    span = t1 - t0
    r, s = window_of(ds, config, span)
    if span <= 0:
        raise SkewbenchError("the dataset's tuples all have one timestamp: no time window fits (partition shedders "
                             "aggregate over windows of dataset time)")
    words = {"step": f"a slide of {s:g} s", "over": f"the dataset's {span:g} s", "option": "--slide"}
    # estimated first (one division): a tiny slide must not loop
    shared.refuse_windows((span - r) / s + 1, MAX_WINDOWS, slack=2, cells=cells, **words)
    k0, k1 = window_range(t0, t1, r, s)  # the windows the replay computes
    if k1 < k0:
        raise SkewbenchError(f"no complete window of range {r:g} s (slide {s:g} s) fits the dataset's {span:g} s "
                             "(use a shorter --range)")
    shared.refuse_windows(k1 - k0 + 1, MAX_WINDOWS, cells=cells, **words)
    return r, s


def check_series(ds, config: ShedConfig, cells: int) -> None:
    """Refuse an operator ``window`` (arrivals per series row) that makes more than
    :data:`MAX_WINDOWS` series rows per cell, or too many over ``cells`` operator cells."""
    if cells:
        shared.refuse_windows(-(-ds.tuples // config.window), MAX_WINDOWS, step=f"a window of {config.window:,} arrivals",
                              over=f"the dataset's {ds.tuples:,} tuples", option="--window", cells=cells)


def _pct(x: np.ndarray, q: float) -> float | None:
    return float(np.percentile(x, q)) if len(x) else None


def run_partition(ds, cell: Cell, config: ShedConfig) -> tuple[dict, list[dict]]:
    t_wall = time.perf_counter()
    t = ds.read_table(["ts", "key", "value"])
    ts = t.column("ts").to_numpy().astype(np.float64)
    keys = t.column("key").to_numpy().astype(np.int64)
    values = t.column("value").to_numpy().astype(np.float64)
    strat = make(cell)
    r, s = window_of(ds, config, float(ts[-1] - ts[0]) if len(ts) > 1 else 0.0)
    cfg = strat.config(r, s, cell.workers, config.error, config.confidence)
    win = strat.replay(ts, keys, values, cfg, cell.seed)
    L, Lp = np.asarray(win.loads, dtype=np.float64), np.asarray(win.loads_after, dtype=np.float64)
    nw = len(win.size)
    imb = (Lp.max(axis=1) - Lp.mean(axis=1)) if nw else np.zeros(0)
    imb_before = (L.max(axis=1) - L.mean(axis=1)) if nw else np.zeros(0)
    lmax = Lp.max(axis=1) if nw else np.zeros(0)
    size = np.asarray(win.size, dtype=np.int64)
    shed = np.asarray(win.shed_tuples, dtype=np.int64)
    trimmed = int(np.sum(win.trimmed_pairs))
    covered = int(np.sum(win.covered_pairs))
    has = nw > 0
    row = {
        "tuples": len(keys), "kind": "partition", "underprovisioning": 0.0, "bound_ms": 0.0,
        "range_s": r, "slide_s": s, "error": float(config.error), "confidence": float(config.confidence),
        "windows": nw,
        "imbalance_p50": _pct(imb, 50), "imbalance_p75": _pct(imb, 75), "imbalance_p99": _pct(imb, 99),
        "imbalance_max": float(imb.max()) if has else None,
        "load_max": float(lmax.max()) if has else None, "load_max_p50": _pct(lmax, 50),
        "shed_fraction": float(shed.sum() / size.sum()) if has and size.sum() > 0 else (0.0 if has else None),
        "skip_rate": float(1.0 - np.mean(win.ran)) if has else None,
        "groups_mean": float(np.mean(win.n_groups)) if has else None,
        "groups_max": int(np.max(win.n_groups)) if has else None,
        "error_mean": float(np.mean(win.err_mean)) if has else None,
        "error_max": float(np.max(win.err_max)) if has else None,
        "trimmed_pairs": trimmed if has else None,
        "coverage": covered / trimmed if trimmed > 0 else None,
        "stats": json.dumps({"precheck_mean": float(np.mean(win.precheck)) if has else None,
                             "trimmed_groups": int(np.sum(win.n_trimmed)) if has else 0,
                             "blacklisted_groups": int(np.sum(win.n_blacklisted)) if has else 0,
                             "partitioner": strat.partitioner}, sort_keys=True),
        "shedder_seconds": float(np.sum(win.t_sp_ns)) / 1e9,
    }
    series = []
    for w in range(nw):
        series.append({"window": w, "start": float(win.start[w]), "end": float(win.end[w]), "tuples": int(size[w]),
                       "imbalance": float(imb[w]), "imbalance_before": float(imb_before[w]), "load_max": float(lmax[w]),
                       "shed_fraction": float(shed[w] / size[w]) if size[w] else 0.0,
                       "groups": int(win.n_groups[w]), "precheck": float(min(100.0, max(0.0, win.precheck[w]))),
                       "ran": int(bool(win.ran[w])), "error_mean": float(win.err_mean[w]),
                       "error_max": float(win.err_max[w])})
    row["wall_seconds"] = time.perf_counter() - t_wall
    return row, series


# --------------------------------------------------------------------------------------------
# the replay


_OP_ONLY = ("dropped", "dropped_ratio", "bl_dropped", "shed_lambda", "queueing_latency_mean", "queueing_latency_p50",
            "queueing_latency_p99", "queueing_latency_max", "completion_latency_mean", "completion_latency_p99",
            "q_over_bound", "over_bound_share", "prefix_violation_share", "prefix_max", "effective_load", "opt_goal",
            "opt_status", "opt_window", "opt_dropped", "opt_gap", "window_dropped", "drop_optimality", "opt_seconds")
_PART_ONLY = ("windows", "imbalance_p50", "imbalance_p75", "imbalance_p99", "imbalance_max", "load_max",
              "load_max_p50", "shed_fraction", "skip_rate", "groups_mean", "groups_max", "error_mean", "error_max",
              "trimmed_pairs", "coverage")
_SERIES_OP = ("dropped_ratio", "queueing_latency_mean", "completion_latency_mean", "over_bound_share")
_SERIES_PART = ("imbalance", "imbalance_before", "load_max", "shed_fraction", "groups", "precheck", "ran",
                "error_mean", "error_max")


def run_cell(ds_path: str, cell: Cell, config: ShedConfig) -> tuple[dict, list[dict]]:
    """One cell's summary row and series rows (every column of the schema)."""
    ds = open_dataset(ds_path)
    kind = registry.get(FAMILY, cell.strategy).kind
    row, series = (run_operator if kind == "operator" else run_partition)(ds, cell, config)
    base = {"cell_id": cell.cell_id, "strategy": cell.strategy, "kind": kind, "provisioning": int(cell.provisioning),
            "workers": int(cell.workers), "seed": cell.seed}
    other = _PART_ONLY if kind == "operator" else _OP_ONLY
    row = {**base, "dataset": ds.name, "dataset_fingerprint": ds.meta["fingerprint"], "data": data_label(ds.meta),
           "params": json.dumps(make(cell).params, sort_keys=True, default=str), **{k: None for k in other}, **row}
    other_s = _SERIES_PART if kind == "operator" else _SERIES_OP
    series = [{**base, **{k: None for k in other_s}, **s} for s in series]
    return row, series


def replay(ds_path: str, cells: Sequence[Cell], config: ShedConfig, executor: shared.Executor) -> Replayed:
    t0 = time.perf_counter()
    config.check()
    partition = sum(registry.get(FAMILY, c.strategy).kind == "partition" for c in cells)
    ds = open_dataset(ds_path)
    if partition:
        check_windows(ds, config, partition)  # before any cell runs
    check_series(ds, config, len(cells) - partition)
    done = executor(lambda c: run_cell(str(ds_path), c, config), list(cells), "shedding cells")
    return Replayed([r for r, _ in done], [s for _, ser in done for s in ser], time.perf_counter() - t0)
