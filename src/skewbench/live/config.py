"""What a live run executes, and the limits it checks before anything starts.

A live run takes a prefix of a dataset's stream and, for each engine and each strategy, executes
it on the engine with the strategy's decisions.  On Flink the tuples are due at a fixed ``rate``
(tuples per second; by default ``load`` percent of the workers' capacity, ``workers x 1000 /
mean cost``) for ``duration_s`` seconds (``tuples``, when given, fixes the prefix instead), and
the job is a keyed windowed aggregation (``job = "agg"``; ``"map"``: the stateless worker);
every phase runs ``repeat`` times.  On Spark, a batch stage on the first ``spark_tuples`` tuples.
Each tuple's work is its cost: the dataset's execution-time model (``cost = "dataset"``, the
``cost`` column, ms) or a fixed number of milliseconds, spent sleeping (``work = "sleep"``, the
default: a worker with a core of its own, right on a machine with fewer cores than workers) or
busy (``work = "cpu"``, for a cluster with a core per worker).  Shedders run in front of one
operator (worker 0) at ``provisioning`` percent of its capacity, with the latency bound
``bound_ms``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from skewbench.errors import SkewbenchError

ENGINES = ("flink", "spark")
WORK = ("sleep", "cpu")
JOBS = ("agg", "map")
#: how Flink routes a grouping strategy with a Java router (LiveConfig.routing)
ROUTINGS = ("replay", "engine")
STATE_BACKENDS = ("hashmap", "rocksdb")
#: where the Flink engine runs without --flink-address: a local standalone cluster (a JobManager
#: and TaskManagers, separate processes) or a mini-cluster inside the client's JVM
CLUSTERS = ("local", "mini")
#: the grouping strategies a live run executes by default: the papers' and the engine defaults
DEFAULT_GROUPING = ("kg", "pkg", "dc", "wc", "sg", "chwbl", "flink")
#: the shedders it executes when a run asks for shedding
DEFAULT_SHEDDING = ("las", "bl", "sm", "fk")
#: strategies whose engine has a routing of its own: executed natively too (the engine's own
#: partitioner, whose per-worker counts must equal the strategy's loads to the tuple)
NATIVE = {"flink": "flink", "spark-sql": "spark"}

# limits (a run sleeps through every tuple's cost on a real engine)
MAX_TUPLES = 5_000_000
MAX_WORKERS = 64
MAX_RATE = 200_000.0
MAX_COST_MS = 1_000.0
MAX_DURATION_S = 600.0
MAX_REPEAT = 20
#: at most this many seconds of work per strategy and engine (tuples x cost / workers)
MAX_SECONDS_PER_STRATEGY = 600.0
#: the default offered load: percent of the workers' aggregate capacity
DEFAULT_LOAD = 62.5
#: the window a Spark stage runs on (a batch: every tuple there when it starts)
SPARK_TUPLES = 4000


@dataclass
class LiveConfig:
    """One live run (see the module docstring)."""

    dataset: str
    workers: int = 8
    tuples: int | None = None
    rate: float | None = None
    load: float = DEFAULT_LOAD
    duration_s: float = 30.0
    warmup: float = 0.2
    repeat: int = 3
    job: str = "agg"
    window_ms: float = 1000.0
    watermark_ms: int = 20
    merge_parallelism: int = 0
    merge_cost_ms: float = 0.0
    state_backend: str = "hashmap"
    checkpoint_s: float = 0.0
    cluster: str = "local"
    taskmanagers: int = 2
    flink_options: dict[str, Any] = field(default_factory=dict)
    kill_after_s: float = 0.0
    spark_tuples: int = SPARK_TUPLES
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
    #: Flink's routing of the grouping strategies with a Java router (skewbench.live.routers):
    #: "engine" (the router decides in each source at run time, checked against the replay tuple
    #: for tuple) or "replay" (the replay's decisions, carried in each tuple); the strategies
    #: without a router are always routed by the replay's decisions
    routing: str = "engine"
    flink_address: str = ""
    params: dict[str, dict[str, Any]] = field(default_factory=dict)

    def check(self) -> None:
        """One line per bad value (:class:`SkewbenchError`), before anything starts."""
        _int("workers", self.workers, 1, MAX_WORKERS)
        if self.tuples is not None:
            _int("tuples", self.tuples, 1, MAX_TUPLES)
        _int("sources", self.sources, 1, 1000)
        if self.rate is not None:
            _num("rate", self.rate, 0.0, MAX_RATE, "tuples per second (0: as fast as the engine takes them)")
        _num("load", self.load, 0.0, 1000.0, "percent of the workers' capacity", low_open=True)
        _num("duration", self.duration_s, 1.0, MAX_DURATION_S, "seconds of stream per phase")
        _num("warmup", self.warmup, 0.0, 0.9, "the share of a phase left out of its measurement")
        _int("repeat", self.repeat, 1, MAX_REPEAT)
        _num("window", self.window_ms, 0.0, 3_600_000.0, "milliseconds", low_open=True)
        _int("watermark-interval", self.watermark_ms, 1, 10_000)
        _int("merge-parallelism", self.merge_parallelism, 0, MAX_WORKERS)
        _num("merge-cost", self.merge_cost_ms, 0.0, MAX_COST_MS, "milliseconds per partial aggregate")
        _num("checkpoint-interval", self.checkpoint_s, 0.0, 3600.0, "seconds (0: no checkpoints)")
        _int("taskmanagers", self.taskmanagers, 1, 16)
        _num("kill-taskmanager", self.kill_after_s, 0.0, MAX_DURATION_S, "seconds into a phase (0: none)")
        _int("spark-tuples", self.spark_tuples, 1, MAX_TUPLES)
        for name, v, allowed in (("job", self.job, JOBS), ("state-backend", self.state_backend, STATE_BACKENDS),
                                 ("cluster", self.cluster, CLUSTERS), ("routing", self.routing, ROUTINGS)):
            if v not in allowed:
                raise SkewbenchError(f"--{name} is one of {', '.join(allowed)}, got {v!r}")
        if "flink" in self.engines and self.rate == 0:
            raise SkewbenchError("--rate 0 (as fast as the engine takes them) has no steady state to measure on Flink: "
                                 "give a rate in tuples per second, or --load in percent of the workers' capacity")
        if self.kill_after_s and (self.flink_address or self.cluster != "local"):
            raise SkewbenchError("--kill-taskmanager kills a TaskManager of the local cluster (--cluster local, no "
                                 "--flink-address)")
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

    def rate_for(self, mean_cost_ms: float) -> float:
        """The offered rate: ``rate``, else ``load`` percent of the workers' capacity."""
        if self.rate is not None:
            return float(self.rate)
        return self.load / 100.0 * self.workers * 1000.0 / mean_cost_ms

    def tuples_for(self, mean_cost_ms: float) -> int:
        """The stream's prefix a Flink phase runs: ``tuples``, else ``duration_s`` at the rate."""
        if self.tuples is not None:
            return int(self.tuples)
        return max(1, int(round(self.duration_s * self.rate_for(mean_cost_ms))))

    def check_work(self, mean_cost_ms: float, tuples: int | None = None) -> None:
        """Refuse a run whose work per strategy would exceed :data:`MAX_SECONDS_PER_STRATEGY`:
        ``tuples`` of the stream (default the prefix a phase runs; fewer when the dataset is shorter)."""
        tuples = self.tuples_for(mean_cost_ms) if tuples is None else tuples
        rate = self.rate_for(mean_cost_ms)
        seconds = tuples * mean_cost_ms / 1000.0 / self.workers
        if rate > 0:
            seconds = max(seconds, tuples / rate)
        if seconds > MAX_SECONDS_PER_STRATEGY:
            raise SkewbenchError(f"{tuples:,} tuples of {mean_cost_ms:.3g} ms on {self.workers} workers"
                                 f"{f' at {self.rate:g}/s' if self.rate else ''} take at least {seconds:.0f} s per "
                                 f"strategy and engine; at most {MAX_SECONDS_PER_STRATEGY:.0f}: fewer --tuples")
        if tuples > MAX_TUPLES:
            raise SkewbenchError(f"{tuples:,} tuples a phase ({self.duration_s:g} s at {rate:,.0f} tuples a second), "
                                 f"more than the {MAX_TUPLES:,} a live phase runs: a shorter --duration or a lower "
                                 f"--rate or --load")


    def check_spark_work(self, mean_cost_ms: float, tuples: int) -> None:
        """Refuse a Spark stage of ``tuples`` whose work per strategy would exceed
        :data:`MAX_SECONDS_PER_STRATEGY`."""
        seconds = tuples * mean_cost_ms / 1000.0 / self.workers
        if seconds > MAX_SECONDS_PER_STRATEGY:
            raise SkewbenchError(f"{tuples:,} tuples of {mean_cost_ms:.3g} ms on {self.workers} workers take at least "
                                 f"{seconds:.0f} s per strategy on Spark; at most {MAX_SECONDS_PER_STRATEGY:.0f}: fewer "
                                 f"--spark-tuples or a lower cost")


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
