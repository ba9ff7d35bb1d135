"""The grouping replay engine: route a dataset through a grid of cells, simulate worker queues,
and compute the metrics of the D-Choices and OSG papers (described once, in
:mod:`skewbench.grouping.schema`).

Family-independent pieces come from :mod:`skewbench.replay` (cells, grids, executors, the
results directory) and :mod:`skewbench.simulation` (worker speeds, FIFO queues, histograms).

Model
-----
* **Sources.** Tuple ``seq`` belongs to source ``seq % s`` (dchoices.spec.md 1.3); each source
  routes with its own state, which one strategy object per cell keeps for all its sources
  (:mod:`skewbench.grouping.base`).  A strategy with a single scheduler (OSG) runs with ``s = 1``.
* **Workers.** Each worker is a FIFO queue without preemption: a tuple arriving at ``a`` on a
  worker free at ``free`` starts at ``max(a, free)`` and completes at ``e = start + x``, where
  ``x`` is its execution time (the dataset's ``cost`` in ms, times the worker's speed factor;
  ``1.0`` ms when the dataset has no cost).  Completion time (OSG's ``l``) is ``e - a``.
* **Arrival times.** ``dataset``: the dataset's ``ts`` (seconds, converted to ms).
  ``provisioning = P`` (percent, osg.spec.md 4.3): deterministic arrivals ``a_t = t * tau`` with
  ``tau = W * P / (100 n)``, ``W`` the stream's empirical mean execution time; ``P = 100`` is
  critical load.

Execution
---------
A replay is a list of independent tasks and a pure combination of their results:

1. a pre-pass over the dataset: key counts (true head membership), the mean cost;
2. **replay tasks**, one per group of cells (:func:`task_groups`: as many as the executor runs
   at once, the costliest cells dealt first): one pass over the dataset in blocks of ``BATCH``
   tuples; each block is routed by each cell's strategy object (state carried across blocks, in
   stream order; cut at window ends to sample the strategy's statistics), counted per source,
   worker and window, and fed to the cell's worker queues (and, for one cell per worker count,
   to the round-robin baseline's).  Memory is bounded by a block and the per-cell state
   (counts, histograms, the per-key replica bit set), whatever the stream's length; each task
   returns per-source counts, per-window counts and strategy statistics, and the cell's queue
   state (latency sums, maxima and log-spaced histograms, overall and per window).  With
   ``ReplayConfig(latency=False)`` (``--metrics balance``) a task routes and counts only: no
   queues, no round-robin baseline, and no arrival times or costs read unless a strategy
   decides by them; every completion-time column is then null;
3. the driver combines the partial results, in a fixed order, into one summary row per cell and
   one series row per (cell, window).

Each cell's result depends only on the dataset and the cell (not on the other cells of its
task) and partial results are combined in cell, source and worker order, so the output is
bit-identical whether the tasks run in this process or as Spark tasks, with any number of
partitions or executors.

Metrics (per cell)
------------------
* ``imbalance``: ``max_w c_w / m - 1/n`` (dchoices.spec.md 1.2, 3.1), and ``imbalance_rel``
  ``(max - avg) / avg``; ``imbalance_avg``: the mean of the cumulative imbalance over windows
  (A2); per window, cumulative and per-window imbalance (3.2).
* Completion time mean, p50, p95, p99, max, and ``latency_cdf`` (the completion times at
  quantiles 0, 0.01, ..., 0.99, 1) (quantiles from log-spaced histograms with bins
  ``10^-4`` wide in relative terms, clamped to the exact minimum and maximum; per window
  ``10^-2``), the largest per-worker mean (dchoices.spec.md 3.6), mean queueing delay,
  throughput ``m / (last completion - first arrival)``.
* ``speedup_vs_rr``: ``sum l_RR / sum l`` against round robin (``t mod n``) on the same arrivals
  and costs (osg.spec.md 3.3), and ``gain_vs_rr = 1 - mean l / mean l_RR``.
* Memory (dchoices.spec.md 3.5): ``pairs`` (distinct (key, worker) pairs), ``replication``
  (pairs per distinct key), ``replicas_max``, ``replicas_head_mean`` over the true head
  (``f_k / m >= 1/(5n)``), and head/tail load per worker (3.3).
* Aggregation cost per window (practice.spec.md 3): ``merge_partials`` (the partial records a
  windowed aggregation downstream must merge: keys that reached two or more workers within the
  window, one record per worker; 0 for key grouping), ``window_replication`` ((key, worker) pairs
  per distinct key within a window) and ``cardinality_imbalance`` ((largest - mean) / mean of
  the distinct keys per worker in a window), averaged over the windows with tuples.
* The strategy's own statistics (``d``, head size, OSG's RUN index, a two-phase strategy's
  merge messages, ...), and the simulator's throughput.

Key values
----------
Strategies that hash what an engine would see (``Strategy.uses_key_values``: Kafka's, Flink's
and Spark's partitioners) are given the dataset's key values
(:meth:`~skewbench.datasets.contract.Dataset.key_values`: a trace's numeric ids, such as user or
job ids, read once by the driver and shipped to the tasks through the scratch directory); on a
dataset whose keys are not numbers, or a synthetic one, they hash the dense ids.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from skewbench.jit import njit

from skewbench import registry
from skewbench import replay as _replay
from skewbench.datasets.contract import Dataset, discard_dir, open_dataset
from skewbench.errors import SkewbenchError
from skewbench.grouping import capacity as _cap
from skewbench.grouping.optimum import best_max_load
from skewbench.grouping.base import Batch, WorkerModel
from skewbench.grouping.params import MAX_PROVISIONING, MAX_SOURCES, MAX_WORKERS
from skewbench.grouping.schema import LATENCY_SERIES, LATENCY_SUMMARY
from skewbench.replay import Cell, Executor, local_executor
from skewbench.simulation import (COARSE_LOG_R, FINE_LOG_R, QueueState, Sparse, new_queue_state, quantiles,
                                  round_robin_latency, simulate_queues)

FAMILY = "grouping"
BATCH = 1 << 20
#: cells replayed by one task at most: a cell's state (its latency histograms, about 7 MB at 100
#: windows, and its replica bit set) stays in memory for the whole pass
MAX_CELLS_PER_TASK = 32
DEFAULT_WINDOWS = 100
#: the most metrics windows a replay computes (--window): a cell keeps a completion-time histogram
#: of 4,397 bins (35 KB) for every window, and a task holds up to MAX_CELLS_PER_TASK cells (1,000
#: windows: about 1.1 GB of histograms per task)
MAX_WINDOWS = 1_000
#: windows x workers of one cell at most: a cell keeps three counts per window and worker (the
#: default 100 windows at the largest worker count, MAX_WORKERS)
MAX_WINDOW_WORKERS = DEFAULT_WINDOWS * MAX_WORKERS
#: keys x ceil(workers / 64) of one cell at most: a cell keeps two bit sets of a bit per (key,
#: worker), 16 bytes per key and 64 workers (2 GiB at this limit; the generators' largest key
#: space, 10^8 keys, fits up to 64 workers, the D-Choices paper's 10^6 keys up to 8,000)
MAX_KEY_WORKER_WORDS = 1 << 27
#: the capacity sweep's worker counts when a replay asks for the default (``--scaling``)
DEFAULT_SCALING = tuple(2 ** i for i in range(11))
#: the demand's default target rates: what this many perfectly balanced workers serve busy
#: DEMAND_UTILISATION of the time (Flink's autoscaler's default utilisation target)
DEMAND_WORKERS = (8, 64)
DEMAND_UTILISATION = 0.7


# --------------------------------------------------------------------------------------------
# configuration

def cell(strategy: str, workers: int, sources: int, seed: int, params: tuple[tuple[str, Any], ...] = ()) -> Cell:
    """A grouping cell: ``strategy`` with ``params`` at ``workers`` and ``sources``, seed ``seed``."""
    return Cell(strategy, (("workers", int(workers)), ("sources", int(sources))), int(seed), tuple(params))


def make_strategy(cell: Cell, worker_model: WorkerModel) -> Any:
    """A fresh strategy object for ``cell``."""
    cls = registry.get(FAMILY, cell.strategy)
    return cls(cell.workers, cell.sources, cell.seed, worker_model=worker_model, **cell.param_dict)


@dataclass
class ReplayConfig:
    """Everything except the cells that determines a replay's results."""

    window: int | None = None  # tuples per window (default: m / 100, at least 1)
    window_seconds: float | None = None  # or windows of dataset time
    provisioning: float | None = None  # percent; None = the dataset's arrival times
    worker_speed: list[tuple[int, list[float]]] | None = None  # periods (start seq, factors)
    #: False: route and count only (balance, memory and the strategies' statistics), without
    #: the queue simulation; the completion-time columns are then null (``metrics`` 'balance')
    latency: bool = True
    #: the capacity sweep's worker counts (with the cells' own n): every (strategy, sources,
    #: seed, parameters) of the grid is replayed at each, counting busy time only; empty: no
    #: sweep (the scaling, ceiling and demand columns are then empty or null)
    scaling: tuple[int, ...] = ()
    #: the demand's target rates, tuples/s (None: the rates DEMAND_WORKERS perfectly balanced
    #: workers serve DEMAND_UTILISATION busy at the stream's mean cost)
    rates: tuple[float, ...] | None = None
    #: the demand's p99 completion-time objective, ms (None: capacity alone)
    objective_ms: float | None = None

    def check(self) -> None:
        if self.window is not None and (not isinstance(self.window, int) or self.window < 1):
            raise SkewbenchError(f"window must be a number of tuples >= 1, got {self.window}")
        if self.window_seconds is not None and not self.window_seconds > 0:
            raise SkewbenchError(f"window must be > 0 seconds, got {self.window_seconds}")
        if self.provisioning is not None and not (0 < self.provisioning <= MAX_PROVISIONING):
            raise SkewbenchError(f"provisioning must be a percentage > 0 and at most {MAX_PROVISIONING:,}, "
                                 f"got {self.provisioning:g}")
        if not isinstance(self.latency, bool):
            raise SkewbenchError(f"latency must be true or false, got {self.latency!r}")
        bad = [n for n in self.scaling if not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_WORKERS]
        if bad:
            raise SkewbenchError(f"scaling takes worker counts from 1 to {MAX_WORKERS:,}, got {bad[0]}")
        if self.scaling and self.worker_speed:
            raise SkewbenchError("scaling: a capacity sweep cannot apply --worker-speed's per-worker factors to "
                                 "other worker counts; use --scaling none with --worker-speed")
        if self.rates is not None and not all(isinstance(r, (int, float)) and math.isfinite(r) and r > 0
                                              for r in self.rates):
            raise SkewbenchError(f"rates must be tuples per second > 0, got {list(self.rates)}")
        if self.objective_ms is not None and not (math.isfinite(self.objective_ms) and self.objective_ms > 0):
            raise SkewbenchError(f"objective must be a p99 completion time > 0 ms, got {self.objective_ms:g}")
        if (self.rates or self.objective_ms is not None) and not self.scaling:
            raise SkewbenchError("rates and objective need a capacity sweep (scaling): the demand is the fewest "
                                 "workers of its grid that reach a rate")


def check_sizes(ds: Dataset, config: ReplayConfig, cells: Sequence[Cell]) -> None:
    """Refuse, from the dataset's length, key space and time span alone (two small reads), a
    replay whose ``window`` (tuples) or ``window_seconds`` cuts the dataset into more than
    :data:`MAX_WINDOWS` windows, or into more than :data:`MAX_WINDOW_WORKERS` / the grid's largest
    worker count, or into more series rows over the cells than
    :data:`skewbench.replay.MAX_SERIES_ROWS`; or whose (key, worker) bit sets would pass
    :data:`MAX_KEY_WORKER_WORDS` words."""
    workers = max((c.workers for c in cells), default=1)
    words = ds.n_keys * -(-workers // 64)
    if words > MAX_KEY_WORKER_WORDS:
        raise SkewbenchError(f"{ds.n_keys:,} keys x {workers:,} workers: a cell keeps two bit sets of a bit per "
                             f"(key, worker), {words:,} words of 64 bits; at most {MAX_KEY_WORKER_WORDS:,} "
                             "(fewer workers)")
    limit = min(MAX_WINDOWS, MAX_WINDOW_WORKERS // max(1, workers))
    option = "--window" if limit == MAX_WINDOWS else "--window, or fewer workers"
    if config.window is not None:
        _replay.refuse_windows(-(-ds.tuples // config.window), limit, step=f"a window of {config.window:,} tuples",
                               over=f"the dataset's {ds.tuples:,} tuples", option=option, cells=len(cells))
    elif config.window_seconds is not None and ds.tuples:
        span = ds.last_value("ts") - ds.first_value("ts")
        _replay.refuse_windows(span / config.window_seconds + 1, limit, step=f"a window of {config.window_seconds:g} s",
                               over=f"the dataset's {span:g} s", option=option, cells=len(cells))


def grid(strategies: Sequence[str], workers: Sequence[int], sources: Sequence[int], seeds: Sequence[int],
         params: dict[str, dict[str, list[Any]]] | None = None) -> list[Cell]:
    """The cartesian grid of cells (:func:`skewbench.replay.grid` over workers and sources);
    strategy parameters vary per strategy (``params[name][p]``).

    A single-scheduler strategy gets ``sources = 1`` once, whatever ``sources`` lists.
    """
    def adjust(cls: type, coords: dict[str, Any]) -> dict[str, Any]:
        return {**coords, "sources": 1} if cls.single_source else coords

    for what, values, top in (("workers", workers, MAX_WORKERS), ("sources", sources, MAX_SOURCES)):
        over = [v for v in values if isinstance(v, (int, np.integer)) and v > top]
        if over:
            raise SkewbenchError(f"{what} must be at most {top:,} (a cell keeps counts per source, window and "
                                 f"worker), got {over[0]:,}")
    cells = _replay.grid(FAMILY, strategies, {"workers": workers, "sources": sources}, seeds, params, adjust)
    # validate every parameter combination now (constructing is cheap), not inside a task
    for c in cells:
        make_strategy(c, WorkerModel.uniform(c.workers))
    return cells


# --------------------------------------------------------------------------------------------
# the pre-pass

@dataclass
class Prepass:
    """Stream-wide facts every task needs.  ``key_counts`` travels as a file in the scratch
    directory (it can be large), so the object shipped to Spark tasks stays small."""

    tuples: int
    n_keys: int
    key_counts: np.ndarray | None
    mean_cost: float
    has_cost: bool
    window_ends: np.ndarray  # int64: seq of the last tuple of each window (inclusive ends + 1)
    ts_first: float  # the first tuple's ts (dataset time mode)
    ts_last: float  # the last tuple's ts (windows of dataset time only)
    #: the keys' values (Dataset.key_values) are in the scratch directory, for the strategies
    #: that hash them (Strategy.uses_key_values); False: the dense ids are the values
    key_values: bool = False
    #: the hottest key by cost and its tuples' costs, ms (the key limit, skewbench.grouping.capacity)
    hot_key: int = 0
    hot_key_ms: float = 0.0
    #: the stream's mean cost, ms a tuple (1 without a cost column), whatever the time mode
    mean_exec: float = 1.0


def prepass(ds: Dataset, config: ReplayConfig) -> Prepass:
    """Key counts, and what the replay's time mode needs: the mean cost (provisioning), the
    first arrival (the dataset's times), the window edges (windows of dataset time); only the
    columns these need are read."""
    m = ds.tuples
    if m == 0:
        raise SkewbenchError(f"dataset {ds.name} is empty: nothing to replay")
    counts = np.zeros(ds.n_keys, dtype=np.int64)
    has_cost = "cost" in ds.columns
    need_cost = has_cost  # the mean cost (provisioning, the default rates) and the keys' costs (the key limit)
    key_ms = np.zeros(ds.n_keys, dtype=np.float64) if has_cost else None
    by_time = config.window_seconds is not None
    cost_sum = 0.0
    ts_first = ts_last = 0.0
    time_ends: list[int] = []
    next_edge = None
    cols = ["key"] + (["cost"] if need_cost else []) + (["seq", "ts"] if by_time else [])
    for b in ds.iter_batches(cols, BATCH):
        counts += np.bincount(b["key"], minlength=ds.n_keys)
        if need_cost:
            cost_sum += float(np.sum(b["cost"]))
            key_ms += np.bincount(b["key"], weights=b["cost"], minlength=ds.n_keys)
        if by_time:
            if b["seq"][0] == 0:
                ts_first = float(b["ts"][0])
            ts_last = float(b["ts"][-1])
            w = config.window_seconds
            if next_edge is None:
                next_edge = ts_first + w
            ts = b["ts"]
            while ts[-1] >= next_edge:
                idx = int(np.searchsorted(ts, next_edge, side="left"))
                time_ends.append(int(b["seq"][0]) + idx)
                next_edge += w
    if not by_time and config.provisioning is None:  # the first arrival, for the throughput
        ts_first = ds.first_value("ts")
    if by_time:
        ends = np.array(sorted(set(e for e in time_ends if 0 < e < m)) + [m], dtype=np.int64)
    else:
        w = config.window or max(1, -(-m // DEFAULT_WINDOWS))
        ends = np.minimum(np.arange(w, m + w, w, dtype=np.int64), m)
    mean_exec = cost_sum / m if need_cost else 1.0
    mean_cost = mean_exec if config.provisioning is not None else 1.0
    per_key = key_ms if key_ms is not None else counts.astype(np.float64)
    hot = int(np.argmax(per_key))
    return Prepass(m, ds.n_keys, counts, mean_cost, has_cost, ends, ts_first, ts_last, hot_key=hot,
                   hot_key_ms=float(per_key[hot]), mean_exec=mean_exec)


def block_windows(first: int, length: int, pre: Prepass) -> tuple[np.ndarray, np.ndarray]:
    """The metrics window of each tuple of the block of stream positions ``first ..
    first + length - 1`` (a block is contiguous: ``seq`` is the position, datasets/contract), and
    the block's segment bounds ``[0, c1, ..., length]``, a segment per window it touches."""
    ends = pre.window_ends  # one past each window's last position, increasing
    t0 = int(np.searchsorted(ends, first, side="right"))
    t1 = int(np.searchsorted(ends, first + length - 1, side="right"))
    cuts = np.concatenate([[0], ends[t0:t1] - first, [length]]).astype(np.int64)
    widx = np.empty(length, dtype=np.int64)
    for t, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:]), start=t0):
        widx[lo:hi] = t  # a fill per window (np.repeat took 4 ms per 2^20 tuples)
    return widx, cuts


def arrival_times(seq: np.ndarray, ts_seconds: np.ndarray, pre: Prepass, config: ReplayConfig,
                  workers: int) -> np.ndarray:
    """Arrival times in ms for a batch, per the replay's time mode."""
    if config.provisioning is None:
        return ts_seconds * 1000.0
    tau = pre.mean_cost * config.provisioning / (100.0 * workers)
    return seq.astype(np.float64) * tau


def _worker_model(config: ReplayConfig, workers: int) -> WorkerModel:
    if not config.worker_speed:
        return WorkerModel.uniform(workers)
    return WorkerModel.periods(workers, config.worker_speed)


# --------------------------------------------------------------------------------------------
# replay tasks: one read of the dataset routes and simulates every cell of the task

@dataclass
class RoutePartial:
    """A cell's routing: its per-source and per-worker counts and the strategy's statistics."""

    cell: int
    counts: np.ndarray  # int64[s, n]: tuples each source routed to each worker
    window_counts: np.ndarray  # int64[T, n]
    head_counts: np.ndarray  # int64[n]: tuples of true-head keys per worker
    pairs_file: str  # the cell's (key, worker) bit set
    agg_win: np.ndarray  # int64[T, 2]: per window, partial records to merge (keys on >= 2 workers), distinct keys
    keys_win: np.ndarray  # int64[T, n]: distinct keys each worker received in each window
    stats: dict[str, float]
    window_stats: list[dict[str, float]]  # at the end of each window
    route_seconds: float
    tuples: int
    busy: np.ndarray  # float64[n]: each worker's busy ms (execution times of its tuples)
    window_busy: np.ndarray  # float64[T, n]


def add_busy(busy: np.ndarray, window_busy: np.ndarray | None, workers: np.ndarray, exec_t: np.ndarray,
             widx: np.ndarray) -> None:
    """Add a block's execution times to each worker's busy time (and, given ``window_busy``, to
    each window's): one bincount per block, in stream order, so a cell and the capacity sweep's
    replay of it at the same n sum the same numbers in the same order."""
    n = busy.shape[0]
    busy += np.bincount(workers, weights=exec_t, minlength=n)
    if window_busy is not None:
        t0, t1 = int(widx[0]), int(widx[-1])
        window_busy[t0:t1 + 1] += np.bincount((widx - t0) * n + workers, weights=exec_t,
                                              minlength=(t1 - t0 + 1) * n).reshape(-1, n)


@dataclass
class QueuePartial:
    """A cell's worker queues (:class:`skewbench.simulation.QueueState`) with the histograms made
    sparse for the trip to the driver, and the round-robin baseline's completion-time sums when
    asked for."""

    cell: int
    state: QueueState  # hist and win_hist as Sparse
    rr_lat_sum: np.ndarray | None  # float64[n]: round robin on the same times (cell's baseline)


@njit(cache=True)
def _account(workers, keys, widx, seq0, s, head_mask, counts, wcounts, head_counts, bits, wbits, wlast, wreps,
             agg_win, keys_win):
    """Per-source and per-worker, per-window and true-head tuple counts, the (key, worker) bit
    set, and the aggregation cost of each window, of a block of routed tuples (one pass; the
    block starts at stream position ``seq0`` and tuple ``seq`` belongs to source ``seq % s``).

    ``wbits[k]`` holds key k's workers within window ``wlast[k]`` (a row is cleared when its key
    first appears in a later window) and ``wreps[k]`` their number: a key's first tuple of window
    t adds one to ``agg_win[t, 1]`` (distinct keys), a new (key, worker) pair of the window one to
    ``keys_win[t, w]`` and to ``agg_win[t, 0]`` the records it adds to the merge (2 when the key
    reaches its second worker, 1 for each further one)."""
    j = seq0 % s
    words = bits.shape[1]
    for i in range(keys.shape[0]):
        w = workers[i]
        k = keys[i]
        t = widx[i]
        counts[j, w] += 1
        wcounts[t, w] += 1
        head_counts[w] += np.int64(head_mask[k])  # no branch: head and tail keys interleave at random
        word = w >> 6
        bit = np.uint64(1) << np.uint64(w & 63)
        bits[k, word] |= bit
        if wlast[k] != t:
            wlast[k] = t
            wreps[k] = 0
            agg_win[t, 1] += 1
            for q in range(words):
                wbits[k, q] = np.uint64(0)
        if (wbits[k, word] & bit) == 0:
            wbits[k, word] |= bit
            r = wreps[k]
            wreps[k] = r + 1
            keys_win[t, w] += 1
            if r == 1:
                agg_win[t, 0] += 2
            elif r > 1:
                agg_win[t, 0] += 1
        j += 1
        if j == s:
            j = 0


@dataclass
class RouteCounts:
    """A replay's accounting of tuples routed in stream order (:func:`count_routes`)."""

    worker_tuples: np.ndarray  # int64[n]: tuples per worker
    replicas: np.ndarray  # int64[n_keys]: the workers each key reached (0 for keys without tuples)
    merge_partials: float  # partial records to merge per window, over the windows with tuples
    window: int  # tuples per window


def count_routes(workers: np.ndarray, keys: np.ndarray, n_keys: int, n: int, sources: int = 1,
                 window: int | None = None) -> RouteCounts:
    """What a replay's accounting (:func:`_account`, one pass) makes of the tuples at stream
    positions ``0 .. m-1`` with key ids ``keys`` routed to ``workers``, in windows of ``window``
    tuples (default ``ceil(m / 100)``, a replay's default windows): the summary's
    ``worker_tuples``, each key's replicas (``replication`` is their mean over the keys with
    tuples, ``replicas_max`` their maximum) and ``merge_partials``.  Refuses (one line) more
    than :data:`MAX_KEY_WORKER_WORDS` words of (key, worker) bits, as a replay does."""
    workers = np.ascontiguousarray(workers, dtype=np.int64)
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    m = keys.size
    words = -(-int(n) // 64)
    if n_keys * words > MAX_KEY_WORKER_WORDS:
        raise SkewbenchError(f"{n_keys:,} keys x {n:,} workers: {n_keys * words:,} words of (key, worker) bits; "
                             f"at most {MAX_KEY_WORKER_WORDS:,}")
    window = int(window or max(1, -(-m // DEFAULT_WINDOWS)))
    T = max(1, -(-m // window))
    widx = np.arange(m, dtype=np.int64) // window
    counts = np.zeros((sources, n), dtype=np.int64)
    bits = np.zeros((n_keys, words), dtype=np.uint64)
    agg = np.zeros((T, 2), dtype=np.int64)
    _account(workers, keys, widx, np.int64(0), np.int64(sources), np.zeros(n_keys, dtype=np.bool_), counts,
             np.zeros((T, n), dtype=np.int64), np.zeros(n, dtype=np.int64), bits, np.zeros_like(bits),
             np.full(n_keys, -1, dtype=np.int32), np.zeros(n_keys, dtype=np.int32), agg,
             np.zeros((T, n), dtype=np.int64))
    active = agg[:, 1] > 0
    merge = float(agg[active, 0].mean()) if active.any() else 0.0
    return RouteCounts(counts.sum(axis=0), _popcount_rows(bits), merge, window)


def _key_counts(pre: Prepass, scratch: str) -> np.ndarray:
    if pre.key_counts is not None:
        return pre.key_counts
    return np.load(os.path.join(scratch, "key_counts.npy"))


_FILLED: dict[float, np.ndarray] = {}


def _filled(value: float, length: int) -> np.ndarray:
    """A read-only array of ``length`` copies of ``value`` (placeholder times and costs), a view
    of one shared array that grows as needed."""
    a = _FILLED.get(value)
    if a is None or len(a) < length:
        a = np.full(max(length, BATCH), value)
        a.flags.writeable = False
        _FILLED[value] = a
    return a[:length]


class _CellRun:
    """One cell's state across the blocks of a replay task: its strategy object (which keeps
    every source's state, tuple ``seq`` belonging to source ``seq % s``; :mod:`base`), the counts,
    the (key, worker) bit set and, unless the replay counts only (``ReplayConfig.latency``
    False), the worker queues and, for the cell that carries it, the round-robin baseline."""

    def __init__(self, idx: int, cell: Cell, pre: Prepass, key_counts: np.ndarray, config: ReplayConfig,
                 with_rr: bool, key_values: np.ndarray | None = None):
        n, s = cell.workers, cell.sources
        self.idx, self.cell, self.n, self.s = idx, cell, n, s
        self.model = _worker_model(config, n)
        self.strat = make_strategy(cell, self.model)
        if type(self.strat).uses_key_values:
            self.strat.bind_key_values(key_values)
        self.timed = type(self.strat).uses_costs
        self.simulate = config.latency
        self.head_mask = key_counts >= pre.tuples / (5.0 * n)
        T = len(pre.window_ends)
        self.counts = np.zeros((s, n), dtype=np.int64)
        self.wcounts = np.zeros((T, n), dtype=np.int64)
        self.head_counts = np.zeros(n, dtype=np.int64)
        self.bits = np.zeros((pre.n_keys, (n + 63) // 64), dtype=np.uint64)
        self.wbits = np.zeros_like(self.bits)
        self.wlast = np.full(pre.n_keys, -1, dtype=np.int32)
        self.wreps = np.zeros(pre.n_keys, dtype=np.int32)
        self.agg_win = np.zeros((T, 2), dtype=np.int64)
        self.keys_win = np.zeros((T, n), dtype=np.int64)
        self.wstats: list[dict[str, float]] = []  # at the end of each window
        self.busy = np.zeros(n)
        self.wbusy = np.zeros((T, n))
        self.elapsed = 0.0
        self.routed = 0
        self.state = new_queue_state(n, T) if self.simulate else None
        self.all_workers = np.ones(n, dtype=np.bool_)
        with_rr = with_rr and self.simulate
        self.rr_free = np.full(n, -np.inf) if with_rr else None
        self.rr_sum = np.zeros(n) if with_rr else None

    def feed(self, seq: np.ndarray, key: np.ndarray, ts: np.ndarray, cost: np.ndarray, widx: np.ndarray,
             cuts: np.ndarray, pre: Prepass, config: ReplayConfig, shared: dict) -> None:
        """Route one block of the stream (contiguous ``seq``, cut at window ends by ``cuts``),
        count it, then simulate the queues on it.  ``shared`` caches the block's arrival times
        for the other cells of the task with as many workers."""
        n = self.n
        arrival = None
        if self.timed or self.simulate:
            if ("arrival", n) not in shared:
                shared["arrival", n] = arrival_times(seq, ts, pre, config, n)
            arrival = shared["arrival", n]
        # strategies blind to time and cost get placeholder arrays
        sts = arrival if self.timed else _filled(0.0, len(seq))
        scost = cost if self.timed and pre.has_cost else _filled(1.0, len(seq))
        batch = Batch(seq, key, sts, scost)
        workers = np.empty(len(seq), dtype=np.int64)
        strat = self.strat
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            t0 = time.perf_counter()
            workers[lo:hi] = strat.route(batch.take(slice(lo, hi)))
            self.elapsed += time.perf_counter() - t0
            t = int(widx[lo])
            if seq[hi - 1] + 1 >= pre.window_ends[t]:  # the block routed window t's last tuple
                while len(self.wstats) <= t:
                    self.wstats.append(strat.window_stats())
        _account(workers, key, widx, seq[0], self.s, self.head_mask, self.counts, self.wcounts,
                 self.head_counts, self.bits, self.wbits, self.wlast, self.wreps, self.agg_win, self.keys_win)
        self.routed += len(seq)
        exec_t = self.model.exec_times(seq, cost, workers)
        add_busy(self.busy, self.wbusy, workers, exec_t, widx)
        if not self.simulate:
            return
        simulate_queues(self.state, workers, arrival, exec_t, self.all_workers, widx)
        if self.rr_sum is not None:
            rr_w = seq % n
            round_robin_latency(seq, arrival, self.model.exec_times(seq, cost, rr_w), self.all_workers,
                                self.rr_free, self.rr_sum, n)

    def finish(self, pre: Prepass, scratch: str) -> tuple[RoutePartial, QueuePartial | None]:
        T = len(pre.window_ends)
        if self.routed != pre.tuples:
            raise RuntimeError(f"internal: routed {self.routed} tuples, expected {pre.tuples}")
        pairs_file = os.path.join(scratch, f"pairs-c{self.idx:05d}.npy")
        np.save(pairs_file, self.bits)
        while len(self.wstats) < T:
            self.wstats.append(self.strat.window_stats())
        part = RoutePartial(self.idx, self.counts, self.wcounts, self.head_counts, pairs_file, self.agg_win,
                            self.keys_win, self.strat.summary(),
                            self.wstats, self.elapsed, self.routed, self.busy, self.wbusy)
        if self.state is None:
            return part, None
        shipped = self.state._replace(hist=Sparse.of(self.state.hist), win_hist=Sparse.of(self.state.win_hist))
        return part, QueuePartial(self.idx, shipped, self.rr_sum)


def blocks(ds: Dataset, cols: Sequence[str], pre: Prepass):
    """The dataset's blocks of :data:`BATCH` tuples as a replay task reads them: ``(seq, key, ts,
    cost, widx, cuts)``, placeholder times (0) and costs (1 ms) where ``cols`` leaves them out, and
    each block's windows (:func:`block_windows`); empty blocks skipped."""
    for b in ds.iter_batches(list(cols), BATCH):
        seq = b["seq"]
        if len(seq) == 0:
            continue
        ts = b["ts"] if "ts" in b else _filled(0.0, len(seq))
        cost = b["cost"] if "cost" in b else _filled(1.0, len(seq))
        widx, cuts = block_windows(int(seq[0]), len(seq), pre)
        yield seq, b["key"], ts, cost, widx, cuts


def replay_task(ds_path: str, cells: Sequence[Cell], cell_idxs: Sequence[int], rr_cells: Sequence[int],
                pre: Prepass, config: ReplayConfig, scratch: str,
                on_block: Callable[[int], None] | None = None) -> list[tuple[RoutePartial, QueuePartial | None]]:
    """Replay the cells ``cell_idxs`` from one pass over the dataset: each block of tuples is
    routed through every cell's strategy in turn and fed to that cell's queues, so memory stays
    bounded by a block whatever the stream's length.  ``rr_cells`` also simulate the round-robin
    baseline.  Every cell's result depends only on the dataset and the cell (never on which
    other cells share the task), which is what makes any grouping of cells into tasks give the
    same bits.  ``on_block`` (in this process only) is told the tuples of each block done.

    Only the columns the cells need are read: ``seq`` and ``key``, the costs when the dataset has
    them (the workers' busy times), and arrival times when the queues are simulated or a
    strategy decides by them."""
    ds = open_dataset(ds_path)
    key_counts = _key_counts(pre, scratch)
    values = np.load(os.path.join(scratch, "key_values.npy")) if pre.key_values and any(
        registry.get(FAMILY, cells[i].strategy).uses_key_values for i in cell_idxs) else None
    runs = [_CellRun(i, cells[i], pre, key_counts, config, i in rr_cells, values) for i in cell_idxs]
    if not runs:
        return []
    timed = config.latency or any(r.timed for r in runs)
    cols = ["seq", "key"] + (["ts"] if timed and config.provisioning is None else []) \
        + (["cost"] if pre.has_cost else [])  # the costs make the busy times (capacity)
    for seq, key, ts, cost, widx, cuts in blocks(ds, cols, pre):
        shared: dict = {}
        for r in runs:
            r.feed(seq, key, ts, cost, widx, cuts, pre, config, shared)
        if on_block is not None:
            on_block(len(seq))
    return [r.finish(pre, scratch) for r in runs]


# --------------------------------------------------------------------------------------------
# the capacity sweep (issue 42): each (strategy, sources, seed, parameters) at every n of a grid

@dataclass
class Scaling:
    """A template's capacity curve and demand (:func:`sweep_task`)."""

    workers: list[int]  # the grid's n at which the strategy could be built, increasing
    capacity: list[float]  # its capacity at each, tuples/s
    demand: list[int]  # per target rate: the fewest workers that reach it (0: none)


def template_of(cell: Cell) -> tuple:
    """What a capacity curve is drawn for: the cell without its worker count."""
    return (cell.strategy, cell.sources, cell.seed, cell.params)


class _SweepRun:
    """One template at one worker count in a sweep: its strategy object, routed as a replay task
    routes a cell (blocks cut at window ends; the statistics a replay samples there are left out:
    reading them changes no strategy's state, which the sweep's conformance test checks for
    every strategy), and the workers' busy times; optionally worker queues fed at a steady rate
    (the demand's objective)."""

    def __init__(self, cell: Cell, pre: Prepass, config: ReplayConfig, values: np.ndarray | None,
                 rate: float | None = None):
        self.n = cell.workers
        self.model = WorkerModel.uniform(self.n)
        self.strat = make_strategy(cell, self.model)
        if type(self.strat).uses_key_values:
            self.strat.bind_key_values(values)
        self.timed = type(self.strat).uses_costs
        self.busy = np.zeros(self.n)
        self.rate = rate
        self.state = new_queue_state(self.n, 1) if rate is not None else None
        self.all_workers = np.ones(self.n, dtype=np.bool_)

    def feed(self, seq, key, ts, cost, widx, cuts, pre: Prepass, config: ReplayConfig) -> None:
        n = self.n
        if self.rate is not None:
            arrival = seq.astype(np.float64) * (1000.0 / self.rate)
        else:
            arrival = arrival_times(seq, ts, pre, config, n) if self.timed else None
        batch = Batch(seq, key, arrival if self.timed else _filled(0.0, len(seq)),
                      cost if self.timed and pre.has_cost else _filled(1.0, len(seq)))
        workers = np.empty(len(seq), dtype=np.int64)
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            workers[lo:hi] = self.strat.route(batch.take(slice(lo, hi)))
        exec_t = self.model.exec_times(seq, cost, workers)
        add_busy(self.busy, None, workers, exec_t, widx)
        if self.state is not None:
            simulate_queues(self.state, workers, arrival, exec_t, self.all_workers, np.zeros(len(seq), np.int64))

    def p99(self) -> float:
        st = self.state
        return quantiles(st.hist.dense() if isinstance(st.hist, Sparse) else st.hist, FINE_LOG_R, (0.99,),
                         float(st.lat_min.min()), float(st.lat_max.max()))[0]


def _sweep_pass(ds_path: str, runs: Sequence[_SweepRun], pre: Prepass, config: ReplayConfig) -> None:
    ds = open_dataset(ds_path)
    timed = any(r.timed for r in runs) and config.provisioning is None and any(r.rate is None for r in runs)
    cols = ["seq", "key"] + (["ts"] if timed else []) + (["cost"] if pre.has_cost else [])
    for seq, key, ts, cost, widx, cuts in blocks(ds, cols, pre):
        for r in runs:
            r.feed(seq, key, ts, cost, widx, cuts, pre, config)


def demand_rates(pre: Prepass, config: ReplayConfig) -> list[float]:
    """The demand's target rates: the configured ones, else what :data:`DEMAND_WORKERS`
    perfectly balanced workers serve at the stream's mean cost, busy :data:`DEMAND_UTILISATION`
    of the time."""
    if config.rates is not None:
        return [float(r) for r in config.rates]
    return [DEMAND_UTILISATION * 1000.0 * k / pre.mean_exec for k in DEMAND_WORKERS]


def sweep_task(ds_path: str, templates: Sequence[Cell], grid_n: Sequence[int], pre: Prepass, config: ReplayConfig,
               scratch: str, known: Sequence[dict[int, float]] | None = None) -> list[Scaling]:
    """The capacity curve of each template (a cell whose worker count is ignored) over
    ``grid_n``, from one pass over the dataset (the worker counts at which the strategy refuses
    to be built are left out; ``known[i]``: template i's capacities already replayed, by worker
    count, not routed again), and its demand for each target rate: the fewest workers of the
    curve whose capacity reaches the rate and, with an objective, whose p99 completion time at
    that rate (steady arrivals, a further pass per worker count tried) stays within it."""
    values = np.load(os.path.join(scratch, "key_values.npy")) if pre.key_values else None
    known = known or [{} for _ in templates]
    runs: list[tuple[int, int, _SweepRun]] = []
    for i, t in enumerate(templates):
        for n in grid_n:
            if n in known[i]:
                continue
            c = cell(t.strategy, n, t.sources, t.seed, t.params)
            try:
                runs.append((i, n, _SweepRun(c, pre, config, values)))
            except SkewbenchError:
                continue  # e.g. a strategy that needs more workers than n
    _sweep_pass(ds_path, [r for _, _, r in runs], pre, config)
    rates = demand_rates(pre, config)
    out = []
    for i, t in enumerate(templates):
        got = {**{n: _cap.capacity(r.busy, pre.tuples) for j, n, r in runs if j == i}, **known[i]}
        ns = sorted(got)
        caps = [got[n] for n in ns]
        dem = []
        for rate in rates:
            found = 0
            for n, c in zip(ns, caps):
                if c < rate:
                    continue
                if config.objective_ms is not None:
                    q = _SweepRun(cell(t.strategy, n, t.sources, t.seed, t.params), pre, config, values, rate)
                    _sweep_pass(ds_path, [q], pre, config)
                    if not q.p99() <= config.objective_ms:
                        continue
                found = n
                break
            dem.append(found)
        out.append(Scaling(ns, caps, dem))
    return out


def task_groups(cells: Sequence[Cell], slots: int) -> list[list[int]]:
    """Deal the cells over ``slots`` replay tasks (each reads the dataset once; more tasks when
    a task would hold over :data:`MAX_CELLS_PER_TASK` cells) so that the costliest task is as
    cheap as possible: the costliest cells first to the least loaded task, then single moves and
    swaps between the costliest task and the others while they lower its cost.  A cell's cost is
    its strategy's routing estimate (:attr:`Strategy.route_cost`) plus one for the rest of its
    replay.  With few cells (``slots ** cells <= 4096``) the best assignment is found exhaustively.
    Cells keep their order within a task."""
    slots = max(1, min(max(int(slots), -(-len(cells) // MAX_CELLS_PER_TASK)), len(cells)))
    cost = [registry.get(FAMILY, c.strategy).route_cost + 1.0 for c in cells]
    if slots > 1 and slots ** len(cells) <= 4096:  # few cells: the best assignment, exhaustively
        import itertools

        def makespan(assign: tuple[int, ...]) -> float:
            load = [0.0] * slots
            for i, g in enumerate(assign):
                load[g] += cost[i]
            return max(load)

        best = min((a for a in itertools.product(range(slots), repeat=len(cells)) if len(set(a)) == slots),
                   key=makespan)
        return [[i for i, g in enumerate(best) if g == k] for k in range(slots)]
    groups: list[list[int]] = [[] for _ in range(slots)]
    load = [0.0] * slots
    for i in sorted(range(len(cells)), key=lambda i: (-cost[i], i)):
        g = min(range(slots), key=lambda k: (load[k], k))
        groups[g].append(i)
        load[g] += cost[i]
    for _ in range(4 * len(cells)):  # local search; each step strictly lowers the costliest task
        top = max(range(slots), key=lambda k: (load[k], -k))
        best = None  # (new max of the pair, top's cell, other task, other's cell or None)
        for o in range(slots):
            if o == top:
                continue
            for i in groups[top]:
                if len(groups[top]) + (len(groups[o]) > 0) > 1 and len(groups[o]) < MAX_CELLS_PER_TASK:
                    cand = (max(load[top] - cost[i], load[o] + cost[i]), i, o, None)
                    best = min(best, cand, key=lambda c: c[0]) if best else cand
                for j in groups[o]:
                    d = cost[i] - cost[j]
                    cand = (max(load[top] - d, load[o] + d), i, o, j)
                    best = min(best, cand, key=lambda c: c[0]) if best else cand
        if best is None or best[0] >= load[top] - 1e-9:
            break
        _, i, o, j = best
        groups[top].remove(i)
        groups[o].append(i)
        load[top] -= cost[i]
        load[o] += cost[i]
        if j is not None:
            groups[o].remove(j)
            groups[top].append(j)
            load[top] += cost[j]
            load[o] -= cost[j]
    return [sorted(g) for g in groups if g]


# --------------------------------------------------------------------------------------------
# combining

def _imbalance(c: np.ndarray) -> float:
    tot = int(c.sum())
    return float(c.max() / tot - 1.0 / len(c)) if tot else 0.0


def _latency_summary(st: QueueState, counts: np.ndarray, rr_lat_sum: np.ndarray | None, pre: Prepass,
                     config: ReplayConfig, n: int) -> dict[str, Any]:
    """The summary's completion-time columns from a cell's queues (:data:`LATENCY_SUMMARY`)."""
    m = pre.tuples
    n_arr, lat_sum, lat_max, lat_min = st.n, st.lat_sum, st.lat_max, st.lat_min
    busy, wait_sum, last_end = st.busy, st.wait_sum, st.last_end
    if not np.array_equal(n_arr, counts):
        raise RuntimeError("internal: queue and route counts disagree")
    hist = st.hist.dense()
    total_lat = float(np.sum(lat_sum))  # summed in worker order: deterministic
    lo, hi = float(lat_min.min()), float(lat_max.max())
    p50, p95, p99 = quantiles(hist, FINE_LOG_R, (0.5, 0.95, 0.99), lo, hi)
    cdf = [lo] + quantiles(hist, FINE_LOG_R, [i / 100 for i in range(1, 100)], lo, hi) + [hi]
    first_arrival = float(arrival_times(np.array([0]), np.array([pre.ts_first]), pre, config, n)[0])
    span = float(last_end.max()) - first_arrival
    rr_total = float(np.sum(rr_lat_sum)) if rr_lat_sum is not None else float("nan")
    return {
        "latency_mean": total_lat / m,
        "latency_p50": p50,
        "latency_p95": p95,
        "latency_p99": p99,
        "latency_max": hi,
        "latency_min": lo,
        "latency_cdf": cdf,
        "latency_worker_mean_max": float(np.max(np.where(n_arr > 0, lat_sum / np.maximum(n_arr, 1), 0.0))),
        "exec_mean": float(np.sum(busy) / m),
        "queue_delay_mean": float(np.sum(wait_sum) / m),
        "throughput": float(m / (span / 1000.0)) if span > 0 else float("inf"),
        "latency_mean_rr": rr_total / m,
        "speedup_vs_rr": rr_total / total_lat if total_lat > 0 else float("nan"),
        "gain_vs_rr": 1.0 - total_lat / rr_total if rr_total > 0 else float("nan"),
    }


def combine_cell(cell: Cell, route: RoutePartial, queue: QueuePartial | None, rr_lat_sum: np.ndarray | None,
                 pre: Prepass, key_counts: np.ndarray, ds_meta: dict[str, Any], config: ReplayConfig,
                 wall_seconds: float, scaling: Scaling | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One summary row and the series rows of a cell, from its partial results (``rr_lat_sum``:
    the round-robin baseline on the same times, from the cell of its worker count that ran it;
    ``queue`` None: the replay counted only, and the completion-time columns are null;
    ``scaling``: the capacity sweep's curve and demand for the cell's template, None without a
    sweep)."""
    n = cell.workers
    m = pre.tuples
    counts = route.counts.sum(axis=0)
    wcounts = route.window_counts
    cum = np.cumsum(wcounts, axis=0)
    T = len(pre.window_ends)
    if queue is not None:
        lat = _latency_summary(queue.state, counts, rr_lat_sum, pre, config, n)
    else:
        lat = dict.fromkeys(LATENCY_SUMMARY)
    bits = np.load(route.pairs_file)
    replicas = _popcount_rows(bits)
    seen = key_counts > 0
    head = key_counts >= m / (5.0 * n)
    pairs = int(replicas.sum())
    best, basis = best_max_load(cell.strategy, key_counts, bits, n, cell.seed)
    agg, kwin = route.agg_win, route.keys_win
    active = agg[:, 1] > 0  # windows with tuples
    kmean = kwin.mean(axis=1)
    card = np.divide(kwin.max(axis=1) - kmean, kmean, out=np.zeros(T), where=active)
    row: dict[str, Any] = {
        "cell_id": cell.cell_id,
        "dataset": ds_meta.get("name"),
        "dataset_fingerprint": ds_meta["fingerprint"],
        "tuples": m,
        "keys": int(seen.sum()),
        "strategy": cell.strategy,
        "workers": n,
        "sources": cell.sources,
        "seed": cell.seed,
        "params": json.dumps(make_strategy(cell, WorkerModel.uniform(n)).describe_params(), sort_keys=True,
                             default=str),
        "time_mode": "dataset" if config.provisioning is None else "provisioning",
        "provisioning": float(config.provisioning or 0.0),
        "metrics": "all" if queue is not None else "balance",
        "imbalance": _imbalance(counts),
        "imbalance_rel": float(counts.max() * n / m - 1.0),
        "imbalance_abs": float(counts.max() - m / n),
        "imbalance_avg": float(np.mean([_imbalance(cum[t]) for t in range(T)])),
        "load_max": float(counts.max() / m),
        "load_min": float(counts.min() / m),
        "load_max_best": best,
        "balance_optimality": min(1.0, best / float(counts.max() / m)) if counts.max() > 0 else 1.0,
        "best_basis": basis,
        "worker_tuples": counts.astype(np.int64).tolist(),
        "source_worker_tuples": route.counts.reshape(-1).astype(np.int64).tolist(),
        "worker_head_tuples": route.head_counts.astype(np.int64).tolist(),
        **lat,
        "pairs": pairs,
        "replication": pairs / max(1, int(seen.sum())),
        "replicas_max": int(replicas.max()) if len(replicas) else 0,
        "replicas_head_mean": float(replicas[head].mean()) if head.any() else 0.0,
        "head_keys_true": int(head.sum()),
        "merge_partials": float(agg[active, 0].mean()) if active.any() else 0.0,
        "window_replication": float(np.mean(kwin[active].sum(axis=1) / agg[active, 1])) if active.any() else 1.0,
        "cardinality_imbalance": float(card[active].mean()) if active.any() else 0.0,
        "stats": json.dumps({k: float(v) for k, v in route.stats.items()}, sort_keys=True),
        **_capacity_columns(route, replicas, pre, config, scaling),
        "route_seconds": float(route.route_seconds),
        "sim_tuples_per_s": float(m / max(1e-9, route.route_seconds)),
        "wall_seconds": float(wall_seconds),
    }
    series = []
    win_hist = queue.state.win_hist.dense() if queue is not None else None
    prev = np.zeros(n, dtype=np.int64)
    start = 0
    for t in range(T):
        c = cum[t]
        wc = c - prev
        prev = c
        end = int(pre.window_ends[t])
        win = {
            "cell_id": cell.cell_id, "strategy": cell.strategy, "workers": n, "sources": cell.sources,
            "seed": cell.seed, "metrics": row["metrics"], "window": t, "seq_start": start, "seq_end": end,
            "tuples": int(wc.sum()), "imbalance_cum": _imbalance(c), "imbalance_win": _imbalance(wc),
            "worker_tuples_cum": c.astype(np.int64).tolist(), "worker_tuples_win": wc.astype(np.int64).tolist(),
            "merge_partials": int(agg[t, 0]), "cardinality_imbalance": float(card[t]) if active[t] else None,
            "capacity": _cap.capacity(route.window_busy[t], int(wc.sum())) if wc.sum() else None,
            **dict.fromkeys(LATENCY_SERIES),
            "stats": json.dumps({k: float(v) for k, v in route.window_stats[t].items()}, sort_keys=True),
        }
        if queue is not None:
            st = queue.state
            qn = int(st.win_n[t])
            q50, q95, q99 = quantiles(win_hist[t], COARSE_LOG_R, (0.5, 0.95, 0.99), 0.0,
                                      float(st.win_max[t])) if qn else (float("nan"),) * 3
            win.update({
                "latency_mean": float(np.sum(st.win_sum[t]) / qn) if qn else float("nan"),
                "latency_p50": q50, "latency_p95": q95, "latency_p99": q99,
                "latency_max": float(st.win_max[t]) if qn else float("nan"),
            })
        series.append(win)
        start = end
    return row, series


def _capacity_columns(route: RoutePartial, replicas: np.ndarray, pre: Prepass, config: ReplayConfig,
                      scaling: Scaling | None) -> dict[str, Any]:
    """The summary's capacity columns (:mod:`skewbench.grouping.schema`) of a cell."""
    m = pre.tuples
    wt = route.window_counts.sum(axis=1)
    windows = [_cap.capacity(route.window_busy[t], int(wt[t])) for t in range(len(wt)) if wt[t] > 0]
    whole = bool(replicas.size) and int(replicas.max()) == 1
    ceiling = _cap.skew_ceiling(scaling.workers, scaling.capacity) if scaling and len(scaling.workers) else None
    return {
        "busy_ms": route.busy.astype(np.float64).tolist(),
        "capacity": _cap.capacity(route.busy, m),
        "capacity_window": min(windows),
        "capacity_balanced": _cap.balanced_capacity(route.busy, m),
        "key_limit": (1000.0 * m / pre.hot_key_ms if pre.hot_key_ms > 0 else math.inf) if whole else None,
        "limit_key": pre.hot_key if whole else None,
        "scaling_workers": list(scaling.workers) if scaling else [],
        "scaling_capacity": list(scaling.capacity) if scaling else [],
        "ceiling_workers": ceiling[0] if ceiling else None,
        "ceiling_capacity": ceiling[1] if ceiling else None,
        "demand_rates": demand_rates(pre, config) if scaling else [],
        "demand": list(scaling.demand) if scaling else [],
        "demand_objective_ms": float(config.objective_ms or 0.0),
    }


def _popcount_rows(bits: np.ndarray) -> np.ndarray:
    v = bits.view(np.uint8).reshape(bits.shape[0], -1)
    return np.unpackbits(v, axis=1).sum(axis=1).astype(np.int64)


# --------------------------------------------------------------------------------------------
# running

@dataclass
class ReplayResult:
    summary: list[dict[str, Any]]
    series: list[dict[str, Any]]
    seconds: float


def replay(ds_path: str | os.PathLike, cells: Sequence[Cell], config: ReplayConfig | None = None,
           executor: Executor = local_executor, scratch: str | os.PathLike | None = None,
           progress: Callable[[str], None] | None = None) -> ReplayResult:
    """Replay a dataset through ``cells``; ``executor`` maps tasks (in process, or on Spark)."""
    config = config or ReplayConfig()
    config.check()
    if not cells:
        raise SkewbenchError("nothing to replay: the grid is empty")
    ds = open_dataset(ds_path)
    check_sizes(ds, config, cells)
    t_start = time.perf_counter()
    pre = prepass(ds, config)
    own_scratch = scratch is None
    scratch_dir = tempfile.mkdtemp(prefix="skewbench-replay-") if own_scratch else str(scratch)
    path = str(Path(ds_path).absolute())
    cells = list(cells)
    try:
        key_counts = pre.key_counts
        np.save(os.path.join(scratch_dir, "key_counts.npy"), key_counts)
        pre.key_counts = None  # tasks load it from the scratch directory
        if any(registry.get(FAMILY, c.strategy).uses_key_values for c in cells):
            values = ds.key_values()
            if values is not None:
                np.save(os.path.join(scratch_dir, "key_values.npy"), values)
                pre.key_values = True
        # RR baseline: once per distinct worker count, carried by the first cell with it
        rr_for: dict[int, int] = {}
        for i, c in enumerate(cells):
            rr_for.setdefault(c.workers, i)
        rr_cells = sorted(rr_for.values())
        groups = task_groups(cells, getattr(executor, "slots", 1))
        if progress:
            progress(f"replaying {len(cells)} cells in {len(groups)} task(s), one read of the dataset each")
        on_block = _block_progress(progress, pre.tuples * len(groups)) \
            if progress is not None and executor is local_executor else None
        done = executor(lambda g: replay_task(path, cells, g, rr_cells, pre, config, scratch_dir, on_block),
                        groups, "replay")
        routes = {r.cell: r for task in done for r, _ in task}
        queues = {r.cell: q for task in done for r, q in task}
        curves = _sweep(path, cells, routes, pre, config, scratch_dir, executor, progress)
        wall = time.perf_counter() - t_start
        summary, series = [], []
        for i, c in enumerate(cells):
            rr = queues[rr_for[c.workers]]
            row, ser = combine_cell(c, routes[i], queues[i], rr.rr_lat_sum if rr is not None else None, pre,
                                    key_counts, {**ds.meta, "name": ds.name}, config, wall,
                                    curves.get(template_of(c)))
            summary.append(row)
            series.extend(ser)
        return ReplayResult(summary, series, time.perf_counter() - t_start)
    finally:
        if own_scratch:
            discard_dir(scratch_dir)  # a failed job's other tasks may still be writing into it


def _sweep(path: str, cells: Sequence[Cell], routes: dict[int, RoutePartial], pre: Prepass, config: ReplayConfig,
           scratch: str, executor: Executor, progress: Callable[[str], None] | None) -> dict[tuple, Scaling]:
    """The capacity sweep (:func:`sweep_task`) of every template of ``cells``, over
    ``config.scaling`` and the cells' own worker counts (whose capacities the replay's
    ``routes`` already hold), as tasks of ``executor``."""
    if not config.scaling:
        return {}
    temps: dict[tuple, Cell] = {}
    have: dict[tuple, dict[int, float]] = {}
    for i, c in enumerate(cells):
        temps.setdefault(template_of(c), c)
        have.setdefault(template_of(c), {})[c.workers] = _cap.capacity(routes[i].busy, pre.tuples)
    reps = list(temps.values())
    grid_n = sorted(set(int(n) for n in config.scaling) | {c.workers for c in cells})
    groups = task_groups(reps, getattr(executor, "slots", 1))
    if progress:
        progress(f"capacity sweep: {len(reps)} strategy setting(s) x {len(grid_n)} worker counts "
                 f"({grid_n[0]}..{grid_n[-1]}) in {len(groups)} task(s)")
    known = [have[template_of(r)] for r in reps]
    done = executor(lambda g: sweep_task(path, [reps[i] for i in g], grid_n, pre, config, scratch,
                                         [known[i] for i in g]), groups, "capacity sweep")
    return {template_of(reps[i]): sc for g, res in zip(groups, done) for i, sc in zip(g, res)}


def _block_progress(progress: Callable[[str], None], total: int, every: float = 10.0) -> Callable[[int], None]:
    """A block callback that reports the share of the replay done at most every ``every`` seconds."""
    state = {"done": 0, "t0": time.monotonic(), "last": time.monotonic()}

    def on_block(tuples: int) -> None:
        state["done"] += tuples
        now = time.monotonic()
        if now - state["last"] >= every and state["done"] < total:
            state["last"] = now
            frac = state["done"] / total
            left = (now - state["t0"]) * (1 - frac) / frac
            progress(f"{100 * frac:.0f}% of the tuples through their tasks, about {left:.0f} s left")

    return on_block


def replay_to_dir(ds_path: str | os.PathLike, cells: Sequence[Cell], out_dir: str | os.PathLike,
                  config: ReplayConfig | None = None, executor: Executor = local_executor,
                  overwrite: bool = False, engine_name: str = "local",
                  progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Replay and write a results directory (:mod:`skewbench.results`); returns the manifest."""
    config = config or ReplayConfig()

    def run(scratch: Path) -> _replay.Replayed:
        res = replay(ds_path, cells, config, executor, scratch=scratch, progress=progress)
        return _replay.Replayed(res.summary, res.series, res.seconds)

    return _replay.replay_to_dir(FAMILY, ds_path, cells, out_dir, run, config, overwrite=overwrite,
                                 engine_name=engine_name)
