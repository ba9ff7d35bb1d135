"""A live run: the stream's phases on each engine, measured, predicted and compared.

For each engine: first two calibration phases (:func:`calibration_phases`: the run's first
tuples round robin over the workers, all due at once, then at a quarter of the capacity) from
which the engine's per-tuple overhead (:func:`skewbench.live.predict.calibrate`) and transport
delay (due to start on an idle worker, median) are measured, once per run and engine, never per
strategy; then each strategy's phase (routed: its own decisions executed
exactly), and the engine's native routing where it has one (``flink`` on Flink: Flink's keyBy;
``spark-sql`` on Spark: ``repartition(p, key)``).  Every phase's records per worker must equal the
strategy's loads to the tuple (:class:`RoutingMismatch` otherwise: the run fails and shows both).

A row per (engine, strategy, routing): what was executed, the measured and predicted metrics
side by side with their ratios; Flink's per-subtask metrics as Flink's REST API reported them
while the job ran.  :func:`live_rows` returns them with the rank agreement of the strategies.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from skewbench.errors import SkewbenchError
from skewbench.live import decisions as dec
from skewbench.live.compare import agreement, ratio
from skewbench.live.config import NATIVE, LiveConfig
from skewbench.live.predict import Overheads, calibrate, predict, timing_metrics

CALIBRATION = "calibration"
CALIBRATION_IDLE = "calibration-idle"
#: the most tuples the calibration phase uses
CALIBRATION_TUPLES = 2000


class RoutingMismatch(SkewbenchError):
    """An engine ran a phase's tuples on other workers than the strategy decided."""


@dataclass
class LiveResult:
    rows: list[dict[str, Any]]
    agreement: list[dict[str, Any]]
    overheads: dict[str, dict[str, float]]
    stream: dict[str, Any]
    seconds: dict[str, float] = field(default_factory=dict)
    #: each strategy's routed phase (its decisions), by strategy name; not in :meth:`to_dict`
    phases: dict[str, dec.Phase] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "agreement": self.agreement, "overheads": self.overheads, "stream": self.stream,
                "seconds": self.seconds}


def calibration_phases(stream: dec.Stream, cfg: LiveConfig) -> list[dec.Phase]:
    """The run's first tuples round robin over the workers, twice: all due at once (every worker
    backlogged: the per-tuple overhead), then at a quarter of the workers' capacity (each tuple
    finds its worker idle: the transport delay from due to start)."""
    m = min(stream.tuples, CALIBRATION_TUPLES)
    w = (np.arange(m) % cfg.workers).astype(np.int32)
    k = min(m, CALIBRATION_TUPLES // 4)
    gap_s = 4.0 * float(stream.cost_ms[:k].mean()) / 1000.0 / cfg.workers
    return [dec.Phase("calibration", CALIBRATION, "routed", cfg.workers, w, stream.hashed[:m], stream.cost_ms[:m],
                      np.zeros(m), m),
            dec.Phase("calibration", CALIBRATION_IDLE, "routed", cfg.workers, w[:k], stream.hashed[:k],
                      stream.cost_ms[:k], np.arange(k) * gap_s, k)]


def phases(stream: dec.Stream, cfg: LiveConfig) -> tuple[list[dec.Phase], dict[str, dict[str, Any]]]:
    """Every strategy's phase (routed), and the simulator's own rows of the shedders."""
    out = [dec.grouping_phase(stream, name, cfg) for name in cfg.grouping]
    sim: dict[str, dict[str, Any]] = {}
    for name in cfg.shedding:
        ph, row = dec.shedding_phase(stream, name, cfg)
        out.append(ph)
        sim[name] = row
    return out, sim


def native_phases(strategies: list[dec.Phase], engine: str) -> list[dec.Phase]:
    """The engine's own routing of the strategies that model it (the same decisions to compare)."""
    return [dec.Phase(p.family, p.strategy, "native", p.workers, p.worker, p.key, p.cost_ms, p.due_s, p.offered, p.params)
            for p in strategies if p.family == "grouping" and NATIVE.get(p.strategy) == engine]


def check_routing(engine: str, phase: dec.Phase, records: list[int]) -> None:
    want = phase.loads.tolist()
    if records != want:
        diff = {w: (records[w], want[w]) for w in range(len(want)) if records[w] != want[w]}
        raise RoutingMismatch(f"{engine} ran {phase.name} on other workers than decided: worker: (ran, decided) "
                              f"{dict(list(diff.items())[:8])}{' ...' if len(diff) > 8 else ''}")


def _row(engine: str, ph: dec.Phase, t: dict[str, Any], o: Overheads, cfg: LiveConfig, stream: dec.Stream
         ) -> dict[str, Any]:
    """One phase's row: measured and predicted side by side."""
    due_rel = t["due"] - t["due"].min() if t["due"].size else t["due"]
    measured = timing_metrics(t["worker"], due_rel, t["start"] - t["due"].min(), t["end"] - t["due"].min(), ph.workers)
    if engine == "spark":
        pred_due = np.zeros(ph.executed)
    else:
        pred_due = ph.due_s - (ph.due_s.min() if ph.executed else 0.0)
    ps, pe = predict(ph.worker, pred_due, ph.cost_ms, ph.workers, o)
    predicted = timing_metrics(ph.worker, pred_due, ps, pe, ph.workers)
    row: dict[str, Any] = {
        "engine": engine, "strategy": ph.strategy, "family": ph.family, "routing": ph.routing, "workers": ph.workers,
        "dataset": stream.name, "fingerprint": stream.fingerprint, "tuples_offered": ph.offered,
        "tuples_executed": ph.executed, "dropped": ph.offered - ph.executed, "rate": cfg.rate, "work": cfg.work,
        "cost_model": stream.cost_model, "params": ph.params,
        "subtask_records": measured["subtask_records"], "decided_records": ph.loads.tolist(), "routing_exact": True,
        "throughput_measured": measured["throughput"], "throughput_predicted": predicted["throughput"],
        "busy_s": measured["busy_s"], "idle_s": measured["idle_s"],
        "busy_max_measured_s": max(measured["busy_s"]) if ph.executed else 0.0,
        "busy_max_predicted_s": max(predicted["busy_s"]) if ph.executed else 0.0,
        **o.to_dict(),
    }
    if engine == "spark":
        from skewbench.live.spark import task_metrics

        tm = task_metrics(t["worker"], t["start"], t["end"], ph.workers)
        tp = task_metrics(ph.worker, ps, pe, ph.workers)
        row.update({"task_seconds": tm["task_seconds"], "makespan_measured_s": tm["makespan_s"],
                    "makespan_predicted_s": tp["makespan_s"],
                    "largest_over_median_task": tm["largest_over_median_task"],
                    "largest_over_median_task_predicted": tp["largest_over_median_task"],
                    "latency_p50_measured_ms": None, "latency_p50_predicted_ms": None,
                    "latency_p99_measured_ms": None, "latency_p99_predicted_ms": None})
    else:
        row.update({f"{k}_measured{u}": measured[f"{k}{u}"] for k, u in (("latency_p50", "_ms"), ("latency_p95", "_ms"),
                                                                          ("latency_p99", "_ms"))})
        row.update({f"{k}_predicted{u}": predicted[f"{k}{u}"] for k, u in (("latency_p50", "_ms"), ("latency_p95", "_ms"),
                                                                           ("latency_p99", "_ms"))})
        row.update({"latency_mean_max_measured_ms": measured["latency_mean_max_ms"],
                    "latency_mean_max_predicted_ms": predicted["latency_mean_max_ms"],
                    "queueing_mean_measured_ms": measured["queueing_mean_ms"],
                    "queueing_mean_predicted_ms": predicted["queueing_mean_ms"],
                    "makespan_measured_s": measured["span_s"], "makespan_predicted_s": predicted["span_s"],
                    "flink_metrics": flink_subtask_metrics(t["info"])})
    for name, m_col, p_col in (("throughput", "throughput_measured", "throughput_predicted"),
                               ("latency_p99", "latency_p99_measured_ms", "latency_p99_predicted_ms"),
                               ("makespan", "makespan_measured_s", "makespan_predicted_s")):
        row[f"{name}_ratio"] = ratio(row.get(m_col), row.get(p_col))
    return row


def flink_subtask_metrics(info: dict[str, Any]) -> dict[str, Any]:
    """The work vertex's per-subtask busy, idle and back-pressured time and the pace vertex's
    back-pressured time, as Flink's REST API last reported them while the job ran."""
    metrics = info.get("metrics") or {}
    out: dict[str, Any] = {"samples": metrics.get("samples", 0)}
    for vid, v in metrics.items():
        if not isinstance(v, dict) or "name" not in v:
            continue
        role = "work" if v["name"].startswith("work") else "source" if "pace" in v["name"] else None
        if role is None:
            continue
        subs = [v.get(str(i), {}) for i in range(int(v.get("parallelism", 0)))]

        def col(name: str) -> list[float | None]:
            return [float(s[name]) if s.get(name) not in (None, "", "NaN") else None for s in subs]

        out[role] = {"busy_ms": col("accumulateBusyTimeMs"), "idle_ms": col("accumulateIdleTimeMs"),
                     "backpressured_ms": col("accumulateBackPressuredTimeMs"), "records_in": col("numRecordsIn")}
    return out


def _execute(engine: str, todo: list[dec.Phase], cfg: LiveConfig, work: Path, state: Path,
             progress: Callable[[str], None]) -> list[dict[str, Any]]:
    if engine == "flink":
        from skewbench.live import flink

        return flink.run(todo, work / "flink", workers=cfg.workers, work_mode=cfg.work, address=cfg.flink_address,
                         state=state, progress=progress)
    from skewbench.live import spark as sp

    session = sp.session(cfg.workers)
    sp.run_phase(session, todo[0], cfg.work == "cpu")  # warm-up: the first stage starts the Python workers
    out = []
    for ph in todo:
        out.append(sp.run_phase(session, ph, cfg.work == "cpu"))
        progress(f"spark: phase {ph.name} done")
    return out


def live_rows(dataset: str, cfg: LiveConfig, work: Path, *, state: Path,
              progress: Callable[[str], None] = lambda m: None) -> LiveResult:
    """Run ``cfg`` on the dataset at ``dataset``; every routing is checked to the tuple."""
    t = {"start": time.perf_counter()}
    cfg.check()
    stream = dec.read_stream(dataset, cfg)
    if stream.tuples == 0:
        raise SkewbenchError(f"{dataset}: no tuples to run")
    cfg.check_work(float(stream.cost_ms.mean()), stream.tuples)
    strategies, sim = phases(stream, cfg)
    t["decisions"] = time.perf_counter()
    rows: list[dict[str, Any]] = []
    overheads: dict[str, dict[str, float]] = {}
    for engine in cfg.engines:
        cals = calibration_phases(stream, cfg)
        todo = [*cals, *strategies, *(native_phases(strategies, engine) if cfg.native else [])]
        progress(f"{engine}: {len(todo)} phases ({len(todo) - len(cals)} strategies, {len(cals)} calibrations)")
        timings = _execute(engine, todo, cfg, work, state, progress)
        sat, idle = timings[0], timings[1]
        o = calibrate(sat["worker"], sat["due"], sat["start"], sat["end"], cals[0].cost_ms, cfg.workers)
        if engine != "spark":  # batch: every tuple is due when the stage starts; no idle worker to time
            o = Overheads(o.overhead_ms, float(np.median(idle["start"] - idle["due"])) * 1000.0)
        overheads[engine] = o.to_dict()
        for ph, tm in zip(todo, timings):
            check_routing(engine, ph, np.bincount(tm["worker"], minlength=cfg.workers).astype(int).tolist())
            if ph.family == "calibration":
                continue
            row = _row(engine, ph, tm, o, cfg, stream)
            if ph.family == "shedding":
                row.update(_shedding_fields(sim[ph.strategy], row, cfg))
            rows.append(row)
        t[engine] = time.perf_counter()
    names = list(t)
    return LiveResult(rows, agreement(rows), overheads,
                      {"dataset": stream.name, "fingerprint": stream.fingerprint, "tuples": stream.tuples,
                       "cost_model": stream.cost_model, "rate": cfg.rate, "workers": cfg.workers, "work": cfg.work},
                      {b: t[b] - t[a] for a, b in zip(names, names[1:])}, {p.strategy: p for p in strategies})


def _shedding_fields(sim: dict[str, Any], row: dict[str, Any], cfg: LiveConfig) -> dict[str, Any]:
    """A shedder's queueing latency against the bound, measured and as the simulator has it."""
    q_meas = row.get("queueing_mean_measured_ms")
    return {"bound_ms": cfg.bound_ms, "provisioning": cfg.provisioning,
            "q_over_bound_measured": q_meas / cfg.bound_ms if q_meas is not None else None,
            "q_over_bound_predicted": (row.get("queueing_mean_predicted_ms") or 0.0) / cfg.bound_ms,
            "q_over_bound_simulator": sim.get("q_over_bound"), "dropped_ratio": sim.get("dropped_ratio")}
