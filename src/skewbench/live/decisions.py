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
    routing: str  # "routed": worker[i] exactly; "native": the engine's own partitioner on key[i]
    workers: int
    worker: np.ndarray  # int32 per executed tuple (routed; the strategy's decision also for native)
    key: np.ndarray  # int64 per executed tuple: the value the engine hashes
    cost_ms: np.ndarray
    due_s: np.ndarray
    offered: int  # tuples offered to the strategy (a shedder drops offered - executed)
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def executed(self) -> int:
        return int(self.worker.size)

    @property
    def loads(self) -> np.ndarray:
        return np.bincount(self.worker, minlength=self.workers).astype(np.int64)

    @property
    def name(self) -> str:
        return self.strategy if self.routing == "routed" else f"{self.strategy} (native)"


def read_stream(path: str, cfg: LiveConfig) -> Stream:
    """The first ``cfg.tuples`` tuples of the dataset at ``path``; due at ``cfg.rate`` (all at 0
    when the rate is 0); cost from the dataset's column or fixed."""
    from skewbench.datasets.contract import open_dataset

    ds = open_dataset(path)
    m = min(cfg.tuples, ds.tuples)
    cols = ["key"] + (["cost"] if "cost" in ds.columns else [])
    keys_parts, cost_parts, got = [], [], 0
    for b in ds.iter_batches(cols, 1 << 16):
        take = min(m - got, len(b["key"]))
        keys_parts.append(np.asarray(b["key"][:take], dtype=np.int64))
        if "cost" in b:
            cost_parts.append(np.asarray(b["cost"][:take], dtype=np.float64))
        got += take
        if got >= m:
            break
    keys = np.concatenate(keys_parts) if keys_parts else np.zeros(0, np.int64)
    if cfg.cost == "dataset":
        if not cost_parts:
            raise SkewbenchError(f"{path}: --cost dataset, but the dataset has no cost column; give a cost in ms")
        cost, model = np.concatenate(cost_parts), "dataset"
    else:
        cost, model = np.full(keys.size, float(cfg.cost)), f"fixed {float(cfg.cost):g} ms"
    values = ds.key_values()
    due = np.arange(keys.size, dtype=np.float64) / cfg.rate if cfg.rate > 0 else np.zeros(keys.size)
    return Stream(ds.name, ds.meta["fingerprint"], keys, values, cost, due, model)


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
                 stream.cost_ms, stream.due_s, m, strat.describe_params())


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
                  stream.hashed[kept],
                  stream.cost_ms[kept], arr[kept] / 1000.0, stream.tuples, params)
    return phase, row
