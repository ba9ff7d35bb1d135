"""What a live run executes, and the limits it checks before anything starts.

A live run takes the first ``tuples`` tuples of a dataset and, for each engine and each strategy,
executes them on the engine with the strategy's decisions.  Tuples are due at a fixed ``rate``
(tuples per second; each tuple stamped with when it was due, for latency), or all at once
(``rate = 0``: as fast as the engine takes them, saturated throughput).  Each tuple's work is its
cost: the dataset's execution-time model (``cost = "dataset"``, the ``cost`` column, ms) or a
fixed number of milliseconds, spent sleeping (``work = "sleep"``, the default: a worker with a
core of its own, right on a machine with fewer cores than workers) or busy (``work = "cpu"``, for a
cluster with a core per worker).  Shedders run in front of one operator (worker 0) at
``provisioning`` percent of its capacity, with the latency bound ``bound_ms``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from skewbench.errors import SkewbenchError

ENGINES = ("flink", "spark")
WORK = ("sleep", "cpu")
#: the grouping strategies a live run executes by default: the papers' and the engine defaults
DEFAULT_GROUPING = ("kg", "pkg", "dc", "wc", "sg", "flink", "kafka")
#: the shedders it executes when a run asks for shedding
DEFAULT_SHEDDING = ("las", "bl", "sm", "fk")
#: strategies whose engine has a routing of its own: executed natively too (the engine's own
#: partitioner, whose per-worker counts must equal the strategy's loads to the tuple)
NATIVE = {"flink": "flink", "spark-sql": "spark"}

# limits (a run is short by design: it sleeps through every tuple's cost on a real engine)
MAX_TUPLES = 200_000
MAX_WORKERS = 64
MAX_RATE = 200_000.0
MAX_COST_MS = 1_000.0
#: at most this many seconds of work per strategy and engine (tuples x cost / workers)
MAX_SECONDS_PER_STRATEGY = 120.0


@dataclass
class LiveConfig:
    """One live run (see the module docstring)."""

    dataset: str
    workers: int = 8
    tuples: int = 4000
    rate: float = 0.0
    cost: str | float = 1.0
    work: str = "sleep"
    engines: tuple[str, ...] = ENGINES
    grouping: tuple[str, ...] = DEFAULT_GROUPING
    shedding: tuple[str, ...] = ()
    sources: int = 5
    seed: int = 0
    provisioning: float = 75.0
    bound_ms: float = 6.4
    native: bool = True
    flink_address: str = ""
    params: dict[str, dict[str, Any]] = field(default_factory=dict)

    def check(self) -> None:
        """One line per bad value (:class:`SkewbenchError`), before anything starts."""
        _int("workers", self.workers, 1, MAX_WORKERS)
        _int("tuples", self.tuples, 1, MAX_TUPLES)
        _int("sources", self.sources, 1, 1000)
        _num("rate", self.rate, 0.0, MAX_RATE, "tuples per second (0: as fast as the engine takes them)")
        if self.cost != "dataset":
            _num("cost", self.cost, 0.0, MAX_COST_MS, "milliseconds per tuple, or 'dataset'", low_open=True)
        _num("provisioning", self.provisioning, 1.0, 1000.0, "percent")
        _num("bound", self.bound_ms, 0.0, 1e6, "milliseconds", low_open=True)
        if self.work not in WORK:
            raise SkewbenchError(f"--work is one of {', '.join(WORK)}, got {self.work!r}")
        bad = [e for e in self.engines if e not in ENGINES]
        if bad or not self.engines:
            raise SkewbenchError(f"--engines: choose from {', '.join(ENGINES)}, got {', '.join(self.engines) or 'none'}")
        if not self.grouping and not self.shedding:
            raise SkewbenchError("no strategy to run: name grouping strategies or shedders")
        from skewbench import registry

        for fam, names in (("grouping", self.grouping), ("shedding", self.shedding)):
            known = registry.names(fam)
            unknown = [n for n in names if n not in known]
            if unknown:
                raise SkewbenchError(f"unknown {fam} strateg{'y' if len(unknown) == 1 else 'ies'} "
                                     f"{', '.join(unknown)}; known: {', '.join(known)}")
        for name in self.shedding:
            if not is_operator_shedder(name):
                raise SkewbenchError(f"shedder {name} partitions a windowed aggregation; the live mode runs the "
                                     f"operator shedders ({', '.join(operator_shedders())}); `skewbench live-windows` "
                                     f"runs the partition strategies' windows on Spark")
        if self.flink_address:
            host, _, port = self.flink_address.rpartition(":")
            # the job splits HOST:PORT at its colon and prefixes http://: a bare host name or IPv4 address
            if not host or ":" in host or "/" in host or not port.isdigit() or not 0 < int(port) < 65536:
                raise SkewbenchError(f"--flink-address is HOST:PORT of a Flink REST endpoint, got {self.flink_address!r}")

    def check_work(self, mean_cost_ms: float, tuples: int | None = None) -> None:
        """Refuse a run whose work per strategy would exceed :data:`MAX_SECONDS_PER_STRATEGY`:
        ``tuples`` of the stream (default ``self.tuples``; fewer when the dataset is shorter)."""
        tuples = self.tuples if tuples is None else tuples
        seconds = tuples * mean_cost_ms / 1000.0 / self.workers
        if self.rate > 0:
            seconds = max(seconds, tuples / self.rate)
        if seconds > MAX_SECONDS_PER_STRATEGY:
            raise SkewbenchError(f"{tuples:,} tuples of {mean_cost_ms:.3g} ms on {self.workers} workers"
                                 f"{f' at {self.rate:g}/s' if self.rate else ''} take at least {seconds:.0f} s per "
                                 f"strategy and engine; at most {MAX_SECONDS_PER_STRATEGY:.0f}: fewer --tuples")


def operator_shedders() -> list[str]:
    """The shedders a live run can execute: those in front of one operator (not the ones that
    partition a windowed aggregation)."""
    from skewbench import registry

    return [n for n in registry.names("shedding") if is_operator_shedder(n)]


def is_operator_shedder(name: str) -> bool:
    """Whether the shedder ``name`` (a registered one) runs in front of one operator."""
    from skewbench import registry

    return getattr(registry.get("shedding", name), "kind", "operator") == "operator"


def _int(name: str, v: Any, lo: int, hi: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise SkewbenchError(f"--{name} is an integer in [{lo:,}, {hi:,}], got {v!r}")


def _num(name: str, v: Any, lo: float, hi: float, what: str, low_open: bool = False) -> None:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v <= hi and \
        (v > lo if low_open else v >= lo)
    if not ok:
        raise SkewbenchError(f"--{name} is {what} in {'(' if low_open else '['}{lo:g}, {hi:g}], got {v!r}")
