"""Each strategy's decisions on a live run's stream: per tuple, the worker it goes to, or dropped.

A :class:`Stream` is the first tuples of a dataset with their keys (dense ids and, for a trace of
numeric ids, the values an engine hashes), their costs (ms) and when each is due (s from the
start).  :func:`grouping_phase` routes it with a grouping strategy (its own class, ``sources``
upstream instances, as a replay routes it); :func:`shedding_phase` runs a shedder in front of
one operator (worker 0) at the run's provisioning and keeps the tuples it does not drop, due
when they arrive.  A :class:`Phase` is what an engine executes: the tuples it receives, in
order, each with its worker (routed) and key (native routing), cost and due time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from skewbench import registry
from skewbench.errors import SkewbenchError
from skewbench.live.config import LiveConfig, is_operator_shedder, operator_shedders


@dataclass
class Stream:
    """The tuples a live run executes (stream order)."""

    name: str
    fingerprint: str
    keys: np.ndarray  # int64 dense key ids
    key_table: np.ndarray | None  # int64 value of each dense id (a trace of numeric ids), or None: the ids
    cost_ms: np.ndarray  # float64 > 0
    due_s: np.ndarray  # float64, non-decreasing, from 0
    cost_model: str  # "dataset" or "fixed <x> ms"
    value: np.ndarray | None = None  # int64 per tuple: what the live job's aggregation sums
    rate: float = 0.0  # tuples per second the due times follow (0: all due at once)

    @property
    def tuples(self) -> int:
        return int(self.keys.size)

    @property
    def hashed(self) -> np.ndarray:
        """Each tuple's key as an engine sees it (int64): its value in a trace of numeric ids."""
        return self.keys if self.key_table is None else self.key_table[self.keys]


@dataclass
class Phase:
    """One strategy's tuples as an engine executes them."""

    family: str
    strategy: str
    routing: str  # "routed": worker[i] exactly; "engine": the strategy's Java router in the engine (worker: the
    # replay's decisions, which it must equal); "native": the engine's own partitioner on key[i]
    workers: int
    worker: np.ndarray  # int32 per executed tuple (routed; the strategy's decision also for native)
    key: np.ndarray  # int64 per executed tuple: the value the engine hashes
    cost_ms: np.ndarray
    due_s: np.ndarray
    offered: int  # tuples offered to the strategy (a shedder drops offered - executed)
    params: dict[str, Any] = field(default_factory=dict)
    dense: np.ndarray | None = None  # int64 per executed tuple: its key's dense id (None: ``key``)
    value: np.ndarray | None = None  # int64 per executed tuple: what the aggregation sums
    sources: int = 1  # the upstream instances that fed the strategy (tuple i: source i mod sources)

    @property
    def executed(self) -> int:
        return int(self.worker.size)

    @property
    def loads(self) -> np.ndarray:
        return np.bincount(self.worker, minlength=self.workers).astype(np.int64)

    @property
    def name(self) -> str:
        return f"{self.strategy} (native)" if self.routing == "native" else self.strategy


def tuple_values(index: np.ndarray) -> np.ndarray:
    """The value the live job sums for tuples without a value column: 1 to 1,000, a fixed
    function of the tuple's position (a tuple counted twice or lost changes its key's sum)."""
    x = (np.asarray(index, dtype=np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
    return (x >> np.uint64(54)).astype(np.int64) % 1000 + 1


def read_stream(path: str, cfg: LiveConfig, tuples: int | None = None) -> Stream:
    """A prefix of the dataset at ``path``: ``tuples`` (default ``cfg.tuples``, else the prefix
    ``cfg.duration_s`` at the run's rate covers; fewer when the dataset is shorter), due at the
    rate (:meth:`LiveConfig.rate_for`; all at 0 when it is 0); cost from the dataset's column or
    fixed; the value the aggregation sums from the dataset's value column (in thousandths,
    rounded: integer sums are exact in any order) or :func:`tuple_values`."""
    from skewbench.datasets.contract import open_dataset
    from skewbench.live.config import MAX_TUPLES

    ds = open_dataset(path)
    if tuples is None:
        tuples = cfg.tuples if cfg.tuples is not None else (
            cfg.tuples_for(float(cfg.cost)) if cfg.cost != "dataset" else MAX_TUPLES)
    m = min(tuples, ds.tuples)
    cols = ["key"] + [c for c in ("cost", "value") if c in ds.columns]
    parts: dict[str, list[np.ndarray]] = {c: [] for c in cols}
    got = 0
    for b in ds.iter_batches(cols, 1 << 16):
        take = min(m - got, len(b["key"]))
        for c in cols:
            parts[c].append(np.asarray(b[c][:take]))
        got += take
        if got >= m:
            break
    keys = np.concatenate(parts["key"]).astype(np.int64) if parts["key"] else np.zeros(0, np.int64)
    if cfg.cost == "dataset":
        if "cost" not in parts:
            raise SkewbenchError(f"{path}: --cost dataset, but the dataset has no cost column; give a cost in ms")
        cost, model = np.concatenate(parts["cost"]).astype(np.float64), "dataset"
    else:
        cost, model = np.full(keys.size, float(cfg.cost)), f"fixed {float(cfg.cost):g} ms"
    if cfg.cost == "dataset" and cfg.tuples is None and keys.size:
        # the prefix the duration covers at the rate the costs give
        keep = min(keys.size, cfg.tuples_for(float(cost.mean())))
        keys, cost = keys[:keep], cost[:keep]
        for c in ("value",):
            if c in parts:
                parts[c] = [np.concatenate(parts[c])[:keep]]
    if "value" in parts:
        value = np.rint(np.concatenate(parts["value"])[:keys.size] * 1000.0).astype(np.int64)
    else:
        value = tuple_values(np.arange(keys.size))
    rate = cfg.rate_for(float(cost.mean())) if keys.size else 0.0
    due = np.arange(keys.size, dtype=np.float64) / rate if rate > 0 else np.zeros(keys.size)
    return Stream(ds.name, ds.meta["fingerprint"], keys, ds.key_values(), cost, due, model, value, rate)


def grouping_phase(stream: Stream, strategy: str, cfg: LiveConfig, routing: str = "routed") -> Phase:
    """The grouping strategy's worker for every tuple (its own class, as a replay routes it)."""
    from skewbench.grouping.base import Batch

    params = dict(cfg.params.get(strategy, {}))
    cls = registry.get("grouping", strategy)
    sources = 1 if getattr(cls, "single_source", False) else cfg.sources
    strat = cls(cfg.workers, sources, cfg.seed, **params)
    if getattr(strat, "uses_key_values", False):
        strat.bind_key_values(stream.key_table)
    m = stream.tuples
    worker = strat.route(Batch(np.arange(m, dtype=np.int64), stream.keys, stream.due_s * 1000.0, stream.cost_ms))
    return Phase("grouping", strategy, routing, cfg.workers, np.asarray(worker, dtype=np.int32), stream.hashed,
                 stream.cost_ms, stream.due_s, m, strat.describe_params(), stream.keys, _values(stream), sources)


def shedding_phase(stream: Stream, strategy: str, cfg: LiveConfig) -> tuple[Phase, dict[str, Any]]:
    """The shedder in front of one operator (worker 0) at ``cfg.provisioning`` percent: the tuples
    it keeps, due when they arrive; and the simulator's own row for it (queueing latency, drops)."""
    from skewbench.shedding.engine import arrivals_ms, operator_data, simulate_operator

    if not is_operator_shedder(strategy):
        raise SkewbenchError(f"shedder {strategy} partitions a windowed aggregation; the live mode runs the "
                             f"operator shedders ({', '.join(operator_shedders())})")
    params = dict(cfg.params.get(strategy, {}))
    d = operator_data(stream.keys, stream.cost_ms)
    row, _, tr = simulate_operator(strategy, params, d, cfg.provisioning, cfg.bound_ms, cfg.seed, opt_window=0)
    arr, _ = arrivals_ms(d, cfg.provisioning)
    kept = ~np.asarray(tr.dropped, dtype=bool)
    phase = Phase("shedding", strategy, "routed", cfg.workers, np.zeros(int(kept.sum()), dtype=np.int32),
                  stream.hashed[kept], stream.cost_ms[kept], arr[kept] / 1000.0, stream.tuples, params,
                  stream.keys[kept], _values(stream)[kept], 1)
    return phase, row


def _values(stream: Stream) -> np.ndarray:
    return stream.value if stream.value is not None else tuple_values(np.arange(stream.tuples))
