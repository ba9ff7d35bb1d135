"""A live run: every strategy's decisions executed on each engine, repeated, measured, set beside
what the model predicts, and compared.

**Flink** (:func:`flink_rows`).  On the local standalone cluster (:mod:`skewbench.live.flinkcluster`:
a JobManager and two TaskManagers by default), a running cluster (``flink_address``) or a
mini-cluster: a warm-up job (discarded), a calibration on a stream of its own
(:mod:`skewbench.live.calibrate`; refused when implausible), every strategy's phase ``repeat``
times (the strategies' order rotated between repetitions), and a second calibration (refused
when it drifted from the first).  A phase is the live job of :mod:`skewbench.live.flink` on a
prefix of the stream: ``sources`` sources, the strategy's routing (its decisions, or the
engine's own ``keyBy`` for the strategy that models it), the keyed windowed aggregation and,
when the decisions split a key over workers, the merge stage.  Every phase is checked before
anything is reported: each tuple ran once, on the worker decided (:class:`RoutingMismatch`
names the first that did not), and every final aggregate equals the exact count and sum of its
key and window computed from the input (:class:`AggregateMismatch`).  A phase the engine
restarted (a TaskManager lost) is checked for exact aggregates, its restart time reported, its
timing marked as not a measurement, and it runs again.

**Spark** (:func:`spark_rows`): one batch stage per phase on the first ``spark_tuples`` tuples,
every tuple there when the stage starts; its makespan and task times, against the FIFO model
with the per-record overhead of a calibration stage (round robin, uniform keys) before and after.

A row per (engine, strategy, routing): what was executed; per metric the median over the
repetitions (``<metric>_measured``) with its minimum and maximum (``_min``, ``_max``), the
prediction (``_predicted``; on Flink also without bounded buffers, ``_predicted_unbounded``) and
their ratio; both calibrations; the measurement window; the per-second series.
:func:`skewbench.live.compare.agreement` ranks the strategies on the medians.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from skewbench.errors import SkewbenchError
from skewbench.live import calibrate as cal
from skewbench.live import decisions as dec
from skewbench.live import measure
from skewbench.live.compare import agreement, ratio
from skewbench.live.config import NATIVE, LiveConfig
from skewbench.live.flink import EnginePhase, Recorded
from skewbench.live.model import Constants, predict, windows_of

#: the metrics summarised over the repetitions (median, min, max), and their units' suffix
FLINK_METRICS = ("throughput", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "latency_p999_ms",
                 "worker_latency_p50_ms", "worker_latency_p99_ms", "utilisation_max", "merge_utilisation_max",
                 "source_blocked_ms", "merge_records", "queueing_mean_ms")
RATIOS = (("throughput", "throughput"), ("latency_p99", "latency_p99_ms"), ("latency_p50", "latency_p50_ms"),
          ("worker_latency_p99", "worker_latency_p99_ms"))


class RoutingMismatch(SkewbenchError):
    """An engine ran a phase's tuples on other workers than the strategy decided."""


class AggregateMismatch(SkewbenchError):
    """The job's final aggregates differ from the exact ones computed from the input."""


@dataclass
class LiveResult:
    rows: list[dict[str, Any]]
    agreement: list[dict[str, Any]]
    calibrations: dict[str, dict[str, Any]]
    stream: dict[str, Any]
    seconds: dict[str, float] = field(default_factory=dict)
    restarts: list[dict[str, Any]] = field(default_factory=list)
    #: each strategy's decisions, by strategy name; not in :meth:`to_dict`
    phases: dict[str, dec.Phase] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "agreement": self.agreement, "calibrations": self.calibrations,
                "stream": self.stream, "seconds": self.seconds, "restarts": self.restarts}


def phases(stream: dec.Stream, cfg: LiveConfig) -> tuple[list[dec.Phase], dict[str, dict[str, Any]]]:
    """Every strategy's decisions (routed), and the simulator's own rows of the shedders."""
    out = [dec.grouping_phase(stream, name, cfg) for name in cfg.grouping]
    sim: dict[str, dict[str, Any]] = {}
    for name in cfg.shedding:
        ph, row = dec.shedding_phase(stream, name, cfg)
        out.append(ph)
        sim[name] = row
    return out, sim


def with_routing(strategies: list[dec.Phase], engine: str, native: bool,
                 routers: frozenset[str] = frozenset()) -> list[dec.Phase]:
    """The phases an engine runs: each strategy routed by its decisions, except that a strategy
    modelling this engine's own partitioner runs natively instead when ``native`` (the engine
    routes; its assignment is checked against the decisions tuple for tuple), and a grouping
    strategy named in ``routers`` is routed by its Java router in the engine (routing
    ``"engine"``, checked the same way)."""
    out = []
    for p in strategies:
        if native and p.family == "grouping" and NATIVE.get(p.strategy) == engine:
            p = dec.Phase(p.family, p.strategy, "native", p.workers, p.worker, p.key, p.cost_ms, p.due_s, p.offered,
                          p.params, p.dense, p.value, p.sources)
        elif p.family == "grouping" and p.strategy in routers:
            p = dec.Phase(p.family, p.strategy, "engine", p.workers, p.worker, p.key, p.cost_ms, p.due_s, p.offered,
                          p.params, p.dense, p.value, p.sources)
        out.append(p)
    return out


def native_phases(strategies: list[dec.Phase], engine: str) -> list[dec.Phase]:
    """Only the engine's own routings of the strategies that model it."""
    return [p for p in with_routing(strategies, engine, True) if p.routing == "native"]


def keys_split(worker: np.ndarray, dense: np.ndarray) -> bool:
    """Whether some key reaches two workers (its partial aggregates then need the merge stage)."""
    if worker.size == 0:
        return False
    pairs = np.unique(dense.astype(np.int64) * (int(worker.max()) + 1) + worker)
    return np.unique(pairs // (int(worker.max()) + 1)).size < pairs.size


def merge_tasks(n_keys: int, parallelism: int) -> np.ndarray:
    """The merge subtask of every dense key: Flink's own keyBy on the Long key (its default max
    parallelism for the merge's parallelism)."""
    from skewbench.grouping.strategies.engines import engine_hashes, engine_workers

    keys = np.arange(max(n_keys, 1), dtype=np.int64)
    return engine_workers("flink", engine_hashes("flink", keys, "long"), parallelism).astype(np.int64)


def engine_settings(cfg: LiveConfig) -> dict[str, Any]:
    return {"work": cfg.work, "window_ms": cfg.window_ms, "watermark_ms": cfg.watermark_ms,
            "merge_cost_ms": cfg.merge_cost_ms, "state_backend": cfg.state_backend,
            "checkpoint_ms": int(round(cfg.checkpoint_s * 1000)), "buffer_timeout_ms": 0, "lead_ms": 300,
            # a restart waits for a lost TaskManager's replacement: up to a minute of attempts
            "restarts": 30, "restart_delay_ms": 2000}


def engine_phase(p: dec.Phase, cfg: LiveConfig, rep: int, settings: dict[str, Any]) -> EnginePhase:
    """What a Flink job executes for the decisions ``p`` in repetition ``rep``."""
    from skewbench.live.flink import flink_key

    dense = p.dense if p.dense is not None else p.key
    value = p.value if p.value is not None else dec.tuple_values(np.arange(p.executed))
    merge = (cfg.merge_parallelism or cfg.workers) if cfg.job == "agg" and keys_split(p.worker, dense) else 0
    key_format, maxp = flink_key(p.params) if p.routing == "native" else ("long", 0)
    ep = EnginePhase(f"{p.name}#{rep}", p.routing, cfg.job, p.workers, p.sources, merge, p.worker, p.key, dense,
                     value, p.cost_ms, p.due_s * 1000.0, key_format, maxp, dict(settings))
    if p.routing == "engine":
        from skewbench import registry
        from skewbench.live.routers import param_text

        hashes_values = getattr(registry.get("grouping", p.strategy), "uses_key_values", False)
        ep.router, ep.router_params, ep.router_seed = p.strategy, param_text(p.params), cfg.seed
        ep.route_key = np.asarray(p.key if hashes_values else dense, dtype=np.int64)
    return ep


# ---- checks --------------------------------------------------------------------------------


def check_routing(ep: EnginePhase, rec: Recorded) -> None:
    """Each tuple ran exactly once, on the worker decided (for a native phase: the engine's own
    assignment, which the strategy computes per key); names the first tuples that did not."""
    w = rec.work
    idx = w[:, 0].astype(np.int64)
    counts = np.bincount(idx, minlength=ep.tuples)[:ep.tuples] if idx.size else np.zeros(ep.tuples, np.int64)
    if idx.size and idx.max() >= ep.tuples:
        raise RoutingMismatch(f"flink ran {ep.name}: tuple {int(idx.max())} is not one of its {ep.tuples:,} tuples")
    bad = np.flatnonzero(counts != 1)
    if bad.size:
        i = int(bad[0])
        raise RoutingMismatch(f"flink ran {ep.name}: {bad.size:,} tuples did not run exactly once; the first, tuple "
                              f"{i} (key {int(ep.dense[i])}, source {i % ep.sources}), ran {int(counts[i])} times")
    ran = np.empty(ep.tuples, dtype=np.int64)
    ran[idx] = w[:, 4].astype(np.int64)
    diff = np.flatnonzero(ran != ep.worker)
    if diff.size and ep.routing == "engine":
        i = int(diff[0])
        raise RoutingMismatch(f"flink ran {ep.name}: its router in the engine decided other workers than the replay "
                              f"for {diff.size:,} of its {ep.tuples:,} tuples; the first, tuple {i} (key "
                              f"{int(ep.dense[i])}, hashed as {int(ep.route_key[i])}, source {i % ep.sources}): "
                              f"engine {int(ran[i])}, replay {int(ep.worker[i])}")
    if diff.size:
        first = ", ".join(f"tuple {i} (key {int(ep.dense[i])}, source {i % ep.sources}): ran on {int(ran[i])}, "
                          f"decided {int(ep.worker[i])}" for i in diff[:3].tolist())
        raise RoutingMismatch(f"flink ran {ep.name} on other workers than decided for {diff.size:,} of its "
                              f"{ep.tuples:,} tuples; the first: {first}")


def check_counts(engine: str, phase: dec.Phase, records: list[int]) -> None:
    """An engine that reports only which worker ran each tuple (Spark): the records per worker
    equal the decided loads, or :class:`RoutingMismatch` naming the workers that differ."""
    want = phase.loads.tolist()
    if records != want:
        diff = {w: (records[w], want[w]) for w in range(len(want)) if records[w] != want[w]}
        raise RoutingMismatch(f"{engine} ran {phase.name} on other workers than decided: worker: (ran, decided) "
                              f"{dict(list(diff.items())[:8])}{' ...' if len(diff) > 8 else ''}")


def exact_finals(ep: EnginePhase, rec: Recorded) -> tuple[np.ndarray, int]:
    """Every final aggregate against the exact count and sum of its key and window from the
    input; returns, per tuple, when its key's final aggregate for its window reached the sink,
    and how many finals arrived twice with equal values (a restart's replay)."""
    window_ms = float(ep.settings.get("window_ms", 1000.0))
    win = windows_of(ep.due_ms, window_ms)
    nw = int(win.max()) + 1 if win.size else 1
    code = ep.dense.astype(np.int64) * nw + win
    uniq, inv = np.unique(code, return_inverse=True)
    count = np.bincount(inv, minlength=uniq.size)
    exact_sum = np.zeros(uniq.size, dtype=np.int64)
    np.add.at(exact_sum, inv, ep.value.astype(np.int64))
    f = rec.finals
    fcode = f[:, 0].astype(np.int64) * nw + f[:, 1].astype(np.int64)
    order = np.lexsort((f[:, 4], fcode))
    f, fcode = f[order], fcode[order]
    first = np.ones(fcode.size, dtype=bool)
    first[1:] = fcode[1:] != fcode[:-1]
    dup = ~first
    if dup.any():  # a final twice: a restart's replay, which must carry the same numbers
        prev = np.flatnonzero(dup) - 1
        differ = (f[dup, 2] != f[prev, 2]) | (f[dup, 3] != f[prev, 3])
        if differ.any():
            k = np.flatnonzero(dup)[np.flatnonzero(differ)[0]]
            raise AggregateMismatch(f"flink ran {ep.name}: key {int(f[k, 0])} window {int(f[k, 1])} reached the sink "
                                    f"twice with different aggregates ({int(f[k - 1, 2])}, {int(f[k - 1, 3])}) and "
                                    f"({int(f[k, 2])}, {int(f[k, 3])})")
    fu, fc = f[first], fcode[first]
    pos = np.searchsorted(uniq, fc)
    known = (pos < uniq.size) & (uniq[np.minimum(pos, uniq.size - 1)] == fc)
    if not known.all():
        k = int(np.flatnonzero(~known)[0])
        raise AggregateMismatch(f"flink ran {ep.name}: a final aggregate for key {int(fu[k, 0])} window "
                                f"{int(fu[k, 1])}, which no tuple of the input has")
    missing = np.setdiff1d(np.arange(uniq.size), pos)
    if missing.size:
        k = int(missing[0])
        raise AggregateMismatch(f"flink ran {ep.name}: {missing.size:,} of {uniq.size:,} final aggregates never reached "
                                f"the sink; the first: key {int(uniq[k] // nw)} window {int(uniq[k] % nw)}")
    wrong = (fu[:, 2].astype(np.int64) != count[pos]) | (fu[:, 3].astype(np.int64) != exact_sum[pos])
    if wrong.any():
        k = int(np.flatnonzero(wrong)[0])
        raise AggregateMismatch(
            f"flink ran {ep.name}: {int(wrong.sum()):,} of {uniq.size:,} final aggregates differ from the exact ones; "
            f"the first: key {int(fu[k, 0])} window {int(fu[k, 1])}: count {int(fu[k, 2])} and sum {int(fu[k, 3])}, "
            f"exact {int(count[pos[k]])} and {int(exact_sum[pos[k]])}")
    arrived = np.empty(uniq.size)
    arrived[pos] = fu[:, 4]
    return arrived[inv], int(dup.sum())


def measured_timings(ep: EnginePhase, rec: Recorded, final: np.ndarray | None) -> measure.Timings:
    """The engine's record of a phase as :class:`measure.Timings` (stream order); ``final`` None
    (the stateless job): a tuple's end is its final."""
    n = ep.tuples
    idx = rec.work[:, 0].astype(np.int64)
    start, end, worker = np.empty(n), np.empty(n), np.empty(n, dtype=np.int64)
    start[idx], end[idx], worker[idx] = rec.work[:, 2], rec.work[:, 3], rec.work[:, 4]
    emit = np.full(n, np.nan)
    emit[rec.emit[:, 0].astype(np.int64)] = rec.emit[:, 1]
    source = np.arange(n) % ep.sources
    blocked = measure.source_delays(emit, ep.due_ms, source)
    blocked[blocked < measure.SOURCE_JITTER_MS] = 0.0  # a source's own pace, not a wait for room
    mg = rec.merge
    return measure.Timings(ep.due_ms, emit, start, end, end.copy() if final is None else final, worker, source,
                           blocked, mg[:, 2], mg[:, 3], mg[:, 4].astype(np.int64))


def predicted_timings(ep: EnginePhase, k: Constants, merge_task: np.ndarray | None,
                      local: np.ndarray | None = None) -> measure.Timings:
    """The model's timings of a phase; ``local``: which of its channels stayed in one TaskManager."""
    pr = predict(ep.due_ms, ep.cost_ms, ep.worker, ep.dense, sources=ep.sources, workers=ep.workers,
                 window_ms=float(ep.settings.get("window_ms", 1000.0)), k=k,
                 merge_task=merge_task if ep.merge else None, merge_parallelism=ep.merge, job=ep.job, local=local)
    return measure.Timings(ep.due_ms, pr.emit, pr.start, pr.end, pr.final, ep.worker, np.arange(ep.tuples) % ep.sources,
                           pr.blocked, pr.merge_start, pr.merge_end, pr.merge_task)


def window_of(ep: EnginePhase, warmup: float) -> tuple[float, float]:
    """The measurement window (ms from the phase's start): the stream's due span less the warm-up."""
    d = float(ep.due_ms.max()) if ep.tuples else 0.0
    return warmup * d, d


def phase_metrics(t: measure.Timings, ep: EnginePhase, window: tuple[float, float]) -> dict[str, Any]:
    m = measure.metrics(t, ep.workers, ep.merge, window)
    due_in = (t.due >= window[0]) & (t.due <= window[1])
    m["queueing_mean_ms"] = float((t.start - t.due)[due_in].mean()) if due_in.any() else None
    return m


def summarise(reps: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """A metric's median over the repetitions, with its minimum and maximum."""
    vals = [r.get(name) for r in reps if r.get(name) is not None]
    if not vals:
        return {"": None, "_min": None, "_max": None}
    return {"": float(np.median(vals)), "_min": float(min(vals)), "_max": float(max(vals))}


# ---- Flink ---------------------------------------------------------------------------------


@dataclass
class _Kill:
    """A TaskManager to kill once the phase ``target`` has run ``after_s`` (the reliability check:
    the run's last phase, since Flink 2.3's JobManager served no fresh REST metrics, its own
    included, once a TaskManager of its cluster was lost: every phase before it keeps its
    metrics)."""

    after_s: float
    cluster: Any
    target: str
    phase: str | None = None
    killed_at_us: int = 0
    replacement: str = ""
    done: threading.Event = field(default_factory=threading.Event)

    def started(self, s) -> None:
        if self.phase is not None or self.done.is_set() or s.name != self.target:
            return
        self.phase = s.name

        def kill() -> None:
            time.sleep(self.after_s)
            self.killed_at_us = time.time_ns() // 1000
            self.cluster.kill_taskmanager()
            self.replacement = self.cluster.start_taskmanager()
            self.done.set()

        threading.Thread(target=kill, daemon=True).start()


def flink_rows(stream: dec.Stream, decided: list[dec.Phase], sim: dict[str, dict[str, Any]], cfg: LiveConfig,
               work: Path, *, state: Path, progress: Callable[[str], None], cluster: Any = None
               ) -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    """Every strategy on Flink, ``cfg.repeat`` times, between two calibrations (module docstring);
    on ``cluster`` (a running :class:`~skewbench.live.flinkcluster.FlinkCluster`) when given,
    whose warm-up and channel measurement a run does once."""
    import contextlib

    from skewbench.live import flink
    from skewbench.live.flinkcluster import local_cluster

    settings = engine_settings(cfg)
    if cfg.kill_after_s and not settings["checkpoint_ms"]:
        settings["checkpoint_ms"] = 10_000
    if cfg.kill_after_s and cfg.kill_after_s * 1000.0 >= float(stream.due_s.max()) * 1000.0:
        raise SkewbenchError(f"--kill-taskmanager {cfg.kill_after_s:g} s is not inside the last phase's "
                             f"{float(stream.due_s.max()):.1f} s of stream: kill earlier or run longer phases")
    routers = frozenset()
    if cfg.routing == "engine":
        from skewbench.live.routers import names as router_names

        routers = frozenset(router_names(state))
    todo = with_routing(decided, "flink", cfg.native, routers)
    mean_cost = float(stream.cost_ms.mean())
    eps = {p.name: [engine_phase(p, cfg, r + 1, settings) for r in range(cfg.repeat)] for p in todo}
    order = [p.name for p in todo]
    runs = []
    for r in range(cfg.repeat):  # the strategies' order rotated by one each repetition
        k = r % len(order)
        runs += [eps[name][r] for name in order[k:] + order[:k]]
    parallelism = max([cfg.workers, max(p.sources for p in todo)] + [ep.merge for ep in runs])
    known = getattr(cluster, "channels", None)
    cals = {w: cal.phases(stream.cost_ms, rate=stream.rate, workers=cfg.workers, sources=cfg.sources,
                          settings=settings, seed=cfg.seed + i, tag=f"calibration-{w}",
                          fill=w == "before" and known is None)
            for i, w in enumerate(("before", "after"))}
    # the cluster's JVMs warmed up before anything is measured: records at no cost, then a
    # calibration whose numbers are discarded
    warm = [cal.warm_up(workers=cfg.workers, sources=cfg.sources, settings=settings, seed=cfg.seed),
            *cal.phases(stream.cost_ms, rate=stream.rate, workers=cfg.workers, sources=cfg.sources, settings=settings,
                        seed=cfg.seed + 7, tag="warm-up", fill=False)]
    t_run = time.monotonic()

    if cluster is not None:
        where = contextlib.nullcontext(cluster)
    elif cfg.flink_address:
        where = contextlib.nullcontext(None)
    elif cfg.cluster == "local":
        where = local_cluster(work / "cluster", parallelism=parallelism, taskmanagers=cfg.taskmanagers,
                              options=cfg.flink_options, progress=progress)
    else:
        where = contextlib.nullcontext(None)
    restarts: list[dict[str, Any]] = []
    with where as cluster:
        address = cfg.flink_address or (cluster.address if cluster is not None else "")
        mini = None if address else {**cfg.flink_options}

        def go(phs: list[EnginePhase], label: str, on_started=None, watch: cal.CpuWatch | None = None
               ) -> list[Recorded]:
            t0 = time.monotonic()
            if watch is not None:
                watch.start()

            def done(name: str) -> None:
                ep = next((e for e in phs if e.name == name), None)
                n = f"{ep.tuples:,} tuples, {ep.due_ms.max() / 1000:.0f} s of stream; " if ep is not None else ""
                progress(f"flink: {label} {name} done ({n}{time.monotonic() - t0:.0f} s so far)")

            dirs = flink.run(phs, work, state=state, address=address, mini_cluster=mini, progress=progress,
                             on_started=on_started, on_done=done)
            return [flink.read_phase(d) for d in dirs]

        if not getattr(cluster, "warm", False):
            progress(f"flink: warming the cluster up ({len(warm)} jobs), then a calibration "
                     f"({', '.join(p.name for p in cals['before'])})")
            go(warm, "warm-up")
            if cluster is not None:
                cluster.warm = True
        # the other processes' CPU is watched where the cluster is this run's (not a remote one)
        watch = cal.CpuWatch() if not cfg.flink_address else None
        recs_before = go(cals["before"], "calibration", watch=watch)
        before = cal.calibration(recs_before, cals["before"], workers=cfg.workers,
                                 sources=cfg.sources, watermark_ms=cfg.watermark_ms, capacities=known)
        before.others_cores = watch.others() if watch else None
        if cluster is not None and known is None:
            cluster.channels = before
        cal.check(before, mean_cost, "before")
        progress(f"flink: calibration before: overhead {before.overhead_ms:.3f} ms per record (median "
                 f"{before.overhead_median_ms:.3f}), other processes {before.others_cores or 0.0:.2f} cores, transport "
                 f"{before.transport_ms:.2f} ms, channels of {before.capacity:,} records (local) and "
                 f"{before.capacity_remote:,} (remote), turns of {before.chunk_records:,} records (local) and "
                 f"{before.slice_ms:.0f} ms (remote), fire {before.fire_ms * 1000:.1f} µs and merge "
                 f"{before.merge_ms * 1000:.1f} µs per key")
        expect = sum(_predicted_span_s(ep, before.constants()) for ep in runs)
        progress(f"flink: {len(runs)} phases ({len(todo)} strategies x {cfg.repeat}), about {expect / 60:.0f} min of "
                 f"stream and drain (predicted)")
        killer = _Kill(cfg.kill_after_s, cluster, runs[-1].name) if cfg.kill_after_s and cluster is not None else None
        recs = go(runs, "phase", on_started=killer.started if killer else None)
        if killer is not None and not killer.done.wait(timeout=600):
            raise SkewbenchError("the TaskManager killed for --kill-taskmanager was not replaced within 10 minutes")
        by_name = {ep.name: rec for ep, rec in zip(runs, recs)}
        again = []
        for ep, rec in zip(runs, recs):
            if restarted(rec):
                restarts.append(_restart_info(ep, rec, killer))
                again.append(ep)
        if again:
            # a TaskManager that replaced a lost one (ours, or a supervisor's) is cold: warm it up
            # before anything is measured again
            progress("flink: a phase restarted: warming the cluster up again")
            go(warm, "warm-up")
        if again:
            progress(f"flink: {len(again)} phase(s) restarted by the engine: their timing is not a measurement; "
                     f"running {', '.join(e.name for e in again)} again")
            for ep, rec in zip(again, go(again, "again")):
                if restarted(rec):
                    raise SkewbenchError(f"flink restarted {ep.name} again when it ran a second time: no measurement")
                by_name[ep.name] = rec
        watch = cal.CpuWatch() if not cfg.flink_address else None
        recs_after = go(cals["after"], "calibration", watch=watch)
        after = cal.calibration(recs_after, cals["after"], workers=cfg.workers,
                                sources=cfg.sources, watermark_ms=cfg.watermark_ms, capacities=before)
        after.others_cores = watch.others() if watch else None
        progress(f"flink: calibration after: overhead {after.overhead_ms:.3f} ms per record (median "
                 f"{after.overhead_median_ms:.3f}), other processes {after.others_cores or 0.0:.2f} cores, transport "
                 f"{after.transport_ms:.2f} ms")
        cal.check_drift(before, after, mean_cost)
    progress(f"flink: engine done in {time.monotonic() - t_run:.0f} s")
    rows = []
    nkeys = int(stream.keys.max()) + 1 if stream.tuples else 1
    for p in todo:
        reps = eps[p.name]
        mt = merge_tasks(nkeys, reps[0].merge) if reps[0].merge else None
        measured, series, fl, predicted = [], [], [], []
        for ep in reps:
            rec = by_name[ep.name]
            check_routing(ep, rec)
            t = measured_timings(ep, rec, exact_finals(ep, rec)[0] if ep.job == "agg" else None)
            win = window_of(ep, cfg.warmup)
            m = phase_metrics(t, ep, win)
            fw = measure.flink_window(rec.info, rec.start_us, win)
            m["source_backpressured_ms"] = fw.get("source_backpressured_ms")
            measured.append(m)
            fl.append(fw)
            seconds = int(np.ceil(max(t.end.max(), ep.due_ms.max()) / 1000.0)) + 1
            # the model with this repetition's placement (which channels stayed in one TaskManager)
            pt = predicted_timings(ep, before.constants(True), mt, flink.same_host(rec, ep.sources, ep.workers))
            predicted.append(phase_metrics(pt, ep, win))
            series.append({"engine": measure.series(t, ep.workers, seconds), "predicted": measure.series(pt, ep.workers,
                                                                                                          seconds),
                           "flink": measure.flink_series(rec.info, rec.start_us)})
        ep = reps[0]
        win = window_of(ep, cfg.warmup)
        pb = {k: summarise(predicted, k)[""] for k in FLINK_METRICS}
        for k in ("utilisation", "merge_utilisation"):
            pb[k] = np.median([p_[k] for p_ in predicted], axis=0).tolist() if predicted[0][k] else []
        pu = phase_metrics(predicted_timings(ep, before.constants(False), mt), ep, win)
        ns = [by_name[e.name].router_ns_per_tuple for e in reps]
        router_ns = float(np.median([x for x in ns if x is not None])) if any(x is not None for x in ns) else None
        rows.append(_flink_row(p, ep, measured, pb, pu, fl, series, before, after, cfg, stream, sim, router_ns))
    return rows, {"before": before.to_dict(), "after": after.to_dict()}, restarts


def _predicted_span_s(ep: EnginePhase, k: Constants) -> float:
    if ep.tuples == 0:
        return 0.0
    pr = predict(ep.due_ms, ep.cost_ms, ep.worker, ep.dense, sources=ep.sources, workers=ep.workers,
                 window_ms=float(ep.settings.get("window_ms", 1000.0)), k=k, job="map")
    return float(pr.end.max()) / 1000.0 + 3.0


def restarted(rec: Recorded) -> bool:
    """Whether the engine restarted some of the phase's tasks (Flink's region failover leaves the
    job RUNNING: a failure shows in its exception history and in the tasks' attempt numbers)."""
    states = [s.get("state") for s in rec.info.get("states", [])]
    return rec.attempts > 1 or bool(rec.info.get("failures")) or any(s in ("RESTARTING", "FAILING") for s in states)


def _restart_info(ep: EnginePhase, rec: Recorded, killer: _Kill | None) -> dict[str, Any]:
    """A restarted phase: every attempt's tuples on the decided workers (for routing "engine": its
    routers restored from the checkpoint decide as the replay did), exact aggregates (replayed
    finals equal), and how long it took to resume."""
    idx = rec.work[:, 0].astype(np.int64)
    off = np.flatnonzero(rec.work[:, 4].astype(np.int64) != ep.worker[idx])
    if off.size:
        r = rec.work[off[0]]
        i = int(r[0])
        raise RoutingMismatch(f"flink ran {ep.name}: after its restart {off.size:,} tuples ran on other workers than "
                              f"decided; the first, tuple {i} (key {int(ep.dense[i])}, source {i % ep.sources}) in "
                              f"attempt {int(r[5])}: ran on {int(r[4])}, decided {int(ep.worker[i])}")
    _, dups = exact_finals(ep, rec)
    states = rec.info.get("states", [])
    t0 = rec.start_us
    failures = rec.info.get("failures") or []
    failed = min(((int(f["us"]) - t0) / 1000.0 for f in failures), default=None)
    killed = (killer.killed_at_us - t0) / 1000.0 if killer is not None and killer.phase == ep.name else None
    later = rec.work[rec.work[:, 5] >= 1]
    resumed = float(later[:, 2].min()) if later.size else None
    since = killed if killed is not None else failed
    return {"phase": ep.name, "attempts": rec.attempts, "aggregates_exact": True, "finals_replayed": dups,
            "killed_ms": killed, "failed_ms": failed, "resumed_ms": resumed,
            "restart_s": (resumed - since) / 1000.0 if resumed is not None and since is not None else None,
            "replacement": killer.replacement if killer is not None and killer.phase == ep.name else None,
            "failures": failures, "states": states}


def _flink_row(p: dec.Phase, ep: EnginePhase, measured: list[dict[str, Any]], pb: dict[str, Any], pu: dict[str, Any],
               fl: list[dict[str, Any]], series: list[dict[str, Any]], before: cal.Calibration,
               after: cal.Calibration, cfg: LiveConfig, stream: dec.Stream,
               sim: dict[str, dict[str, Any]], router_ns: float | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "engine": "flink", "strategy": p.strategy, "family": p.family, "routing": p.routing, "job": ep.job,
        "workers": p.workers, "sources": ep.sources, "merge_parallelism": ep.merge, "dataset": stream.name,
        "fingerprint": stream.fingerprint, "tuples_offered": p.offered, "tuples_executed": p.executed,
        "dropped": p.offered - p.executed, "rate": stream.rate if p.family == "grouping" else None,
        "work": cfg.work, "cost_model": stream.cost_model, "params": p.params, "repeat": len(measured),
        "window_ms": cfg.window_ms, "window_s": measured[0]["window_s"], "duration_s": float(ep.due_ms.max()) / 1000.0,
        "warmup": cfg.warmup, "state_backend": cfg.state_backend, "cluster": cfg.flink_address or cfg.cluster,
        "subtask_records": measured[0]["subtask_records"], "decided_records": p.loads.tolist(),
        "routing_exact": True, "aggregates_exact": ep.job == "agg",
        # routing "engine": the routers' own time a tuple in the sources (median of the repetitions),
        # and the share of a source's time it takes at the run's rate (each source offers rate / sources)
        "router_ns_per_tuple": router_ns,
        "router_source_share": (router_ns * 1e-9 * stream.rate / ep.sources
                                if router_ns is not None and stream.rate else None),
        "calibration_before": before.to_dict(), "calibration_after": after.to_dict(),
        "overhead_ms": before.overhead_ms, "transport_ms": before.transport_ms,
    }
    for name in FLINK_METRICS:
        base, unit = (name[:-3], "_ms") if name.endswith("_ms") else (name, "")
        for suffix, v in summarise(measured, name).items():
            row[f"{base}_measured{unit}{suffix}"] = v
        row[f"{base}_predicted{unit}"] = pb.get(name)
        row[f"{base}_predicted_unbounded{unit}"] = pu.get(name)
    for suffix, v in summarise(measured, "source_backpressured_ms").items():
        row[f"source_backpressured_ms{suffix}"] = v
    row["source_backpressured_predicted_ms"] = pb.get("source_blocked_ms")
    row["source_backpressured_predicted_unbounded_ms"] = pu.get("source_blocked_ms")
    row["merge_records"] = row.get("merge_records_measured")
    row["utilisation_measured"] = np.median([m["utilisation"] for m in measured], axis=0).tolist()
    row["utilisation_predicted"] = pb["utilisation"]
    row["merge_utilisation_measured"] = (np.median([m["merge_utilisation"] for m in measured], axis=0).tolist()
                                         if ep.merge else [])
    row["merge_utilisation_predicted"] = pb["merge_utilisation"]
    for role in ("work", "merge", "source"):
        vals = [f[role]["busy_ms_per_s"] for f in fl if role in f]
        row[f"flink_{role}_busy_ms_per_s"] = np.median(vals, axis=0).tolist() if vals else None
        vals = [f[role]["backpressured_ms_per_s"] for f in fl if role in f]
        row[f"flink_{role}_backpressured_ms_per_s"] = np.median(vals, axis=0).tolist() if vals else None
    for name, col in RATIOS:
        base, unit = (col[:-3], "_ms") if col.endswith("_ms") else (col, "")
        row[f"{name}_ratio"] = ratio(row.get(f"{base}_measured{unit}"), row.get(f"{base}_predicted{unit}"))
        row[f"{name}_ratio_unbounded"] = ratio(row.get(f"{base}_measured{unit}"),
                                               row.get(f"{base}_predicted_unbounded{unit}"))
    row["makespan_measured_s"] = None
    row["makespan_predicted_s"] = None
    row["makespan_ratio"] = None
    row["repetitions"] = [{k: m.get(k) for k in (*FLINK_METRICS, "source_backpressured_ms", "emit_late_p99_ms")}
                          for m in measured]
    row["series"] = series
    if p.family == "shedding":
        row.update(_shedding_fields(sim[p.strategy], row, cfg))
    return row


def _shedding_fields(sim: dict[str, Any], row: dict[str, Any], cfg: LiveConfig) -> dict[str, Any]:
    """A shedder's queueing latency against the bound, measured and as the simulator has it."""
    q_meas = row.get("queueing_mean_measured_ms")
    return {"bound_ms": cfg.bound_ms, "provisioning": cfg.provisioning,
            "q_over_bound_measured": q_meas / cfg.bound_ms if q_meas is not None else None,
            "q_over_bound_predicted": (row.get("queueing_mean_predicted_ms") or 0.0) / cfg.bound_ms,
            "q_over_bound_simulator": sim.get("q_over_bound"), "dropped_ratio": sim.get("dropped_ratio")}


# ---- Spark ---------------------------------------------------------------------------------


#: a Spark calibration's tuples: at least this many a worker (each worker's mean over as many gaps:
#: Spark's Python workers are noisy), more up to SPARK_CAL_MAX in all while a worker's share stays
#: within SPARK_CAL_SECONDS of work
SPARK_CAL_PER_WORKER, SPARK_CAL_MAX, SPARK_CAL_SECONDS = 250, 2000, 5.0


def spark_calibration_tuples(workers: int, mean_cost_ms: float) -> int:
    """How many tuples a Spark calibration stage runs. The floor of 2,000 it had before cost a run
    at 40 ms a tuple on 4 workers 20 s per calibration. Measured here, four stages each, alternated,
    40 ms on 4 workers: 1,000 tuples gave 0.163-0.198 ms of overhead (per worker 0.144-0.210),
    2,000 gave 0.161-0.192 (0.155-0.199), both well inside the drift rule's 1 ms at that cost
    (:func:`skewbench.live.calibrate.drifted`); 1,000 take 10 s."""
    per = max(1.0, SPARK_CAL_SECONDS * 1000.0 / max(mean_cost_ms, 1e-9))
    return max(workers * SPARK_CAL_PER_WORKER, min(SPARK_CAL_MAX, workers * int(per)))


def _spark_calibration(session, stream: dec.Stream, cfg: LiveConfig, seed: int) -> dict[str, Any]:
    """One stage of a separate stream (uniform keys, round robin, the run's costs cycled, every
    worker backlogged; :func:`spark_calibration_tuples` of them): the per-record overhead, overall
    and per worker."""
    from skewbench.live import spark as sp
    from skewbench.live.predict import calibrate

    m = spark_calibration_tuples(cfg.workers, float(np.mean(stream.cost_ms)))
    rng = np.random.default_rng(seed ^ 0x5EED)
    keys = rng.integers(0, cal.CAL_KEYS, m).astype(np.int64)
    w = (np.arange(m) % cfg.workers).astype(np.int32)
    cost = np.resize(stream.cost_ms, m)
    ph = dec.Phase("calibration", "calibration", "routed", cfg.workers, w, keys, cost, np.zeros(m), m)
    t = sp.run_phase(session, ph, cfg.work == "cpu")
    o = calibrate(t["worker"], t["due"], t["start"], t["end"], cost, cfg.workers)
    per = []
    for k in range(cfg.workers):  # t's arrays are in the stage's tuple order
        i = np.flatnonzero(t["worker"] == k)
        per.append(calibrate(np.zeros(i.size, np.int32), t["due"][i], t["start"][i], t["end"][i], cost[i], 1).overhead_ms)
    return {"overhead_ms": o.overhead_ms, "overhead_per_worker_ms": per, "tuples": m}


def spark_rows(stream: dec.Stream, decided: list[dec.Phase], sim: dict[str, dict[str, Any]], cfg: LiveConfig,
               progress: Callable[[str], None]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every strategy as a Spark batch stage, ``cfg.repeat`` times, between two calibrations."""
    from skewbench.live import spark as sp
    from skewbench.live.predict import Overheads, predict as fifo_predict, timing_metrics

    session = sp.session(cfg.workers)
    todo = with_routing(decided, "spark", cfg.native)
    sp.run_phase(session, todo[0], cfg.work == "cpu")  # warm-up: the first stage starts the Python workers
    mean_cost = float(stream.cost_ms.mean())
    before = _spark_calibration(session, stream, cfg, cfg.seed)
    _check_spark(before, mean_cost, "before")
    reps: dict[str, list[dict[str, Any]]] = {p.name: [] for p in todo}
    order = [p.name for p in todo]
    by = {p.name: p for p in todo}
    for r in range(cfg.repeat):
        k = r % len(order)
        for name in order[k:] + order[:k]:
            reps[name].append(sp.run_phase(session, by[name], cfg.work == "cpu"))
            progress(f"spark: repetition {r + 1}/{cfg.repeat} {name} done")
    after = _spark_calibration(session, stream, cfg, cfg.seed + 1)
    _check_spark(after, mean_cost, "after")
    a, b = before["overhead_ms"], after["overhead_ms"]
    if cal.drifted(a, b, mean_cost):  # the rule Flink's calibrations are held to
        raise cal.ImplausibleCalibration(
            f"implausible calibration: Spark's per-record overhead was {a:.3f} ms before the strategies and {b:.3f} ms "
            f"after them, more than {cal.MAX_DRIFT:.0%} apart: the machine changed during the run; what to try: a "
            f"quieter machine (nothing else running on its cores), fewer --workers or --repeat")
    o = Overheads(before["overhead_ms"], 0.0)
    rows = []
    for p in todo:
        meas = []
        for t in reps[p.name]:
            check_counts("spark", p, np.bincount(t["worker"], minlength=p.workers).astype(int).tolist())
            tm = sp.task_metrics(t["worker"], t["start"], t["end"], p.workers)
            meas.append({"makespan_s": tm["makespan_s"], "throughput": p.executed / tm["makespan_s"]
                         if tm["makespan_s"] else None, "largest_over_median_task": tm["largest_over_median_task"],
                         "task_seconds": tm["task_seconds"]})
        ps, pe = fifo_predict(p.worker, np.zeros(p.executed), p.cost_ms, p.workers, o)
        tp = sp.task_metrics(p.worker, ps, pe, p.workers)
        pm = timing_metrics(p.worker, np.zeros(p.executed), ps, pe, p.workers)
        row: dict[str, Any] = {
            "engine": "spark", "strategy": p.strategy, "family": p.family, "routing": p.routing, "job": "batch stage",
            "workers": p.workers, "dataset": stream.name, "fingerprint": stream.fingerprint,
            "tuples_offered": p.offered, "tuples_executed": p.executed, "dropped": p.offered - p.executed,
            "rate": None, "work": cfg.work, "cost_model": stream.cost_model, "params": p.params,
            "repeat": len(meas), "subtask_records": p.loads.tolist(), "decided_records": p.loads.tolist(),
            "routing_exact": True, "calibration_before": before, "calibration_after": after,
            "overhead_ms": before["overhead_ms"], "transport_ms": 0.0,
            "task_seconds": np.median([m["task_seconds"] for m in meas], axis=0).tolist(),
            "largest_over_median_task": summarise(meas, "largest_over_median_task")[""],
            "largest_over_median_task_predicted": tp["largest_over_median_task"],
            "makespan_predicted_s": tp["makespan_s"], "throughput_predicted": pm["throughput"],
            "latency_p50_measured_ms": None, "latency_p50_predicted_ms": None,
            "latency_p99_measured_ms": None, "latency_p99_predicted_ms": None,
        }
        for suffix, v in summarise(meas, "makespan_s").items():
            row[f"makespan_measured_s{suffix}"] = v
        for suffix, v in summarise(meas, "throughput").items():
            row[f"throughput_measured{suffix}"] = v
        row["throughput_ratio"] = ratio(row["throughput_measured"], row["throughput_predicted"])
        row["makespan_ratio"] = ratio(row["makespan_measured_s"], row["makespan_predicted_s"])
        row["latency_p99_ratio"] = None
        if p.family == "shedding":
            row.update({"bound_ms": cfg.bound_ms, "provisioning": cfg.provisioning,
                        "dropped_ratio": sim[p.strategy].get("dropped_ratio")})
        rows.append(row)
    return rows, {"before": before, "after": after}


def _check_spark(c: dict[str, Any], mean_cost: float, when: str) -> None:
    cal.check(cal.Calibration(c["overhead_ms"], c["overhead_per_worker_ms"], 0.0, 0, 0, [], [], 0, 0.0, 0.0, 0.0, 0.0,
                              0.0, {}), mean_cost, when)


# ---- the run -------------------------------------------------------------------------------


def live_rows(dataset: str, cfg: LiveConfig, work: Path, *, state: Path,
              progress: Callable[[str], None] = lambda m: None, cluster: Any = None) -> LiveResult:
    """Run ``cfg`` on the dataset at ``dataset`` (module docstring); Flink on ``cluster`` when
    given (a running local cluster, kept running)."""
    t = {"start": time.perf_counter()}
    cfg.check()
    # the Flink phases' prefix (the duration at the rate), or the Spark stages' alone
    stream = dec.read_stream(dataset, cfg) if "flink" in cfg.engines else \
        dec.read_stream(dataset, cfg, tuples=cfg.spark_tuples)
    if stream.tuples == 0:
        raise SkewbenchError(f"{dataset}: no tuples to run")
    if "flink" in cfg.engines:
        cfg.check_work(float(stream.cost_ms.mean()), stream.tuples)
    rows: list[dict[str, Any]] = []
    calibrations: dict[str, dict[str, Any]] = {}
    restarts: list[dict[str, Any]] = []
    decided: dict[str, dec.Phase] = {}
    streams: dict[str, dict[str, Any]] = {}
    for engine in cfg.engines:
        if engine == "flink":
            strategies, sim = phases(stream, cfg)
            t["decisions"] = time.perf_counter()
            decided.update({p.strategy: p for p in strategies})
            progress(f"flink: {stream.tuples:,} tuples at {stream.rate:,.0f}/s ({stream.tuples / max(stream.rate, 1e-9):.0f} "
                     f"s of stream), {len(strategies)} strategies x {cfg.repeat} repetitions")
            r, c, rs = _execute("flink", stream, strategies, sim, cfg, work / "flink", state, progress, cluster)
            restarts += rs
            streams["flink"] = {"tuples": stream.tuples, "rate": stream.rate, "job": cfg.job,
                                "duration_s": stream.tuples / stream.rate if stream.rate else None}
        else:
            sstream = dec.read_stream(dataset, cfg, tuples=cfg.spark_tuples)
            cfg.check_spark_work(float(sstream.cost_ms.mean()), sstream.tuples)
            strategies, sim = phases(sstream, cfg)
            decided.update({p.strategy: p for p in strategies if p.strategy not in decided})
            r, c, _ = _execute("spark", sstream, strategies, sim, cfg, work / "spark", state, progress, cluster)
            streams["spark"] = {"tuples": sstream.tuples, "rate": None, "job": "batch stage"}
        rows += r
        calibrations[engine] = c
        t[engine] = time.perf_counter()
    names = list(t)
    first = streams[cfg.engines[0]]
    return LiveResult(rows, agreement(rows), calibrations,
                      {"dataset": stream.name, "fingerprint": stream.fingerprint, "tuples": first["tuples"],
                       "cost_model": stream.cost_model, "rate": first["rate"], "workers": cfg.workers, "work": cfg.work,
                       "job": first["job"], "repeat": cfg.repeat, "sources": cfg.sources, "window_ms": cfg.window_ms,
                       "engines": streams},
                      {b: t[b] - t[a] for a, b in zip(names, names[1:])}, restarts, decided)


def _execute(engine: str, stream: dec.Stream, strategies: list[dec.Phase], sim: dict[str, dict[str, Any]],
             cfg: LiveConfig, work: Path, state: Path, progress: Callable[[str], None], cluster: Any = None
             ) -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    """The one door to the engines."""
    if engine == "flink":
        return flink_rows(stream, strategies, sim, cfg, work, state=state, progress=progress, cluster=cluster)
    rows, c = spark_rows(stream, strategies, sim, cfg, progress)
    return rows, c, []
