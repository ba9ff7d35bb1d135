"""The live capacity search on Flink (``skewbench live DATASET --capacity-search``): for each
strategy, the largest rate its live job sustains with the run's workers, searched over rates
(:mod:`skewbench.live.capacity`), beside the capacity its routing of the same tuples predicts.

It runs what the live mode runs (:mod:`skewbench.live.run`): the same cluster (the local
standalone cluster, a running one, or one handed in), the same Java job and routing (each
strategy's Java router in the sources by default, checked against the replay tuple for tuple),
the same checks (every tuple once on its worker, every final aggregate exact), the same warm-up
and calibrations (before the probes and after them, refused when implausible or drifted).

* **The tuples.** Each strategy runs a fixed prefix of the stream at every probe, only its due
  times change with the rate (tuple ``i`` due ``i / rate`` s after the phase starts): the prefix
  that lasts ``duration_s`` at the strategy's predicted capacity.  The predicted capacity is that
  of the strategy's routing of those tuples, with the calibration's per-record overhead
  (:func:`skewbench.live.capacity.predicted`); a probe at 70% of it lasts ``duration_s / 0.7``.
* **A probe** is one phase at one rate, judged on its per-tuple records: the lag's slope over the
  measurement window (after ``warmup`` of the phase's due span) against 1% of the rate
  (:func:`skewbench.live.capacity.judge`).
* **The searches** (one per strategy and repetition, ``repeat`` of them) run in lockstep: each
  round submits the next probe of every search still going as one batch of jobs (one client JVM),
  the strategies' order rotated between rounds; a probe the engine restarted is probed again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from skewbench.errors import SkewbenchError
from skewbench.live import calibrate as cal
from skewbench.live import capacity as lcap
from skewbench.live import decisions as dec
from skewbench.live.config import MAX_TUPLES, LiveConfig

#: the strategies a capacity search runs by default
DEFAULT_STRATEGIES = ("kg", "pkg", "dc", "sg")
#: seconds of stream a probe runs at the strategy's predicted capacity, by default
DEFAULT_DURATION_S = 8.0
#: the probes so far, written in the work directory after every round
SEARCHES_FILE = "searches.json"


@dataclass
class SearchSettings:
    """How the rates are searched and judged (shares of the predicted capacity for the two
    starting rates)."""

    low: float = lcap.LOW
    high: float = lcap.HIGH
    steps: int = lcap.STEPS
    width: float = lcap.WIDTH
    expand: int = lcap.EXPAND
    share: float = lcap.LAG_SHARE
    tolerance: float = lcap.TOLERANCE

    def check(self) -> None:
        """One line per bad value (:class:`SkewbenchError`)."""
        if not (math.isfinite(self.low) and math.isfinite(self.high) and 0 < self.low < self.high <= 10):
            raise SkewbenchError(f"--search-rates is LOW,HIGH, shares of the predicted capacity with 0 < LOW < HIGH "
                                 f"<= 10, got {self.low:g},{self.high:g}")
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or not 0 <= self.steps <= 20:
            raise SkewbenchError(f"--search-steps is an integer in [0, 20], got {self.steps!r}")
        if not (math.isfinite(self.width) and 0 < self.width < 1):
            raise SkewbenchError(f"--search-width is a share of the bracket's lower rate in (0, 1), got {self.width!r}")
        if not (math.isfinite(self.share) and 0 < self.share < 1):
            raise SkewbenchError(f"--lag-share is a share of the rate in (0, 1), got {self.share!r}")
        if not (math.isfinite(self.tolerance) and 0 < self.tolerance < 1):
            raise SkewbenchError(f"--capacity-tolerance is a share in (0, 1), got {self.tolerance!r}")


def check_config(cfg: LiveConfig) -> None:
    """What a capacity search refuses of a live configuration (one line each)."""
    cfg.check()
    if tuple(cfg.engines) != ("flink",):
        raise SkewbenchError("--capacity-search runs on Flink only: --engines flink")
    if cfg.shedding:
        raise SkewbenchError("--capacity-search searches the grouping strategies' rates: no --shedders")
    if not cfg.grouping:
        raise SkewbenchError("--capacity-search needs grouping strategies (--strategies kg,pkg,...)")
    if cfg.kill_after_s:
        raise SkewbenchError("--capacity-search kills no TaskManager: no --kill-taskmanager")
    if not 1.0 <= cfg.duration_s <= 120.0:
        raise SkewbenchError(f"--duration with --capacity-search is a probe's seconds of stream at the predicted "
                             f"capacity in [1, 120], got {cfg.duration_s!r}")
    if cfg.rate is not None or cfg.tuples is not None:
        raise SkewbenchError("--capacity-search chooses each probe's rate and tuples itself: no --rate or --tuples "
                             "(--duration sets a probe's seconds of stream at the predicted capacity)")


def probe_prefix(stream: dec.Stream, m: int, rate: float) -> dec.Stream:
    """The stream's first ``m`` tuples due at ``rate``, each due time in whole microseconds (what
    the job takes: ``flink.write_phase``)."""
    due_s = np.rint(np.arange(m, dtype=np.float64) / rate * 1e6) / 1e6
    return dataclasses.replace(stream, keys=stream.keys[:m], cost_ms=stream.cost_ms[:m],
                               value=None if stream.value is None else stream.value[:m], due_s=due_s,
                               rate=float(rate))


def _read(dataset: str, cfg: LiveConfig, duration_s: float) -> dec.Stream:
    """Enough of the stream for the longest prefix a strategy can need: ``duration_s`` at the
    workers' capacity without any overhead (no routing predicts more)."""
    if cfg.cost == "dataset":
        probe = dec.read_stream(dataset, cfg, tuples=min(MAX_TUPLES, 100_000))
        mean = float(probe.cost_ms.mean()) if probe.tuples else 1.0
    else:
        mean = float(cfg.cost)
    want = int(math.ceil(duration_s * cfg.workers * 1000.0 / mean))
    if want > MAX_TUPLES:
        raise SkewbenchError(f"{duration_s:g} s at up to {cfg.workers * 1000.0 / mean:,.0f} tuples a second is "
                             f"{want:,} tuples a probe, more than {MAX_TUPLES:,}: a shorter --duration")
    stream = dec.read_stream(dataset, cfg, tuples=want)
    if stream.tuples == 0:
        raise SkewbenchError(f"{dataset}: no tuples to run")
    return stream


@dataclass
class _Target:
    strategy: str
    tuples: int
    predicted: dict[str, Any]
    reference: dec.Phase


def predictions(stream: dec.Stream, cfg: LiveConfig, overhead_ms: float, duration_s: float) -> list[_Target]:
    """Each strategy's prefix (``duration_s`` at its predicted capacity) and the capacity its
    routing of that prefix predicts."""
    out = []
    for name in cfg.grouping:
        ref_rate = cfg.workers * 1000.0 / float(stream.cost_ms.mean())
        first = dec.grouping_phase(probe_prefix(stream, stream.tuples, ref_rate), name, cfg)
        c0 = lcap.predicted(first.worker, first.cost_ms, overhead_ms, cfg.workers)["capacity"]
        m = max(cfg.workers * 10, min(stream.tuples, int(round(duration_s * c0))))
        p = dec.grouping_phase(probe_prefix(stream, m, c0), name, cfg)
        pred = lcap.predicted(p.worker, p.cost_ms, overhead_ms, cfg.workers)
        out.append(_Target(name, m, pred, p))
    return out


def capacity_search(dataset: str, cfg: LiveConfig, ss: SearchSettings, work: Path, *, state: Path,
                    duration_s: float = DEFAULT_DURATION_S, progress: Callable[[str], None] = lambda m: None,
                    cluster: Any = None) -> dict[str, Any]:
    """Search every strategy's capacity on Flink ``cfg.repeat`` times (module docstring); the
    result as one JSON-ready dict."""
    from skewbench.live import flink
    from skewbench.live.flinkcluster import local_cluster
    from skewbench.live.run import (restarted, check_routing, engine_phase, engine_settings, exact_finals,
                                    measured_timings, window_of, with_routing)

    cfg = dataclasses.replace(cfg, duration_s=duration_s)
    check_config(cfg)
    ss.check()
    t_start = time.monotonic()
    stream = _read(dataset, cfg, duration_s)
    mean_cost = float(stream.cost_ms.mean())
    cal_rate = cfg.rate_for(mean_cost)
    settings = engine_settings(cfg)
    routers: frozenset[str] = frozenset()
    if cfg.routing == "engine":
        from skewbench.live.routers import names as router_names

        routers = frozenset(router_names(state))
    known = getattr(cluster, "channels", None)
    cals = {w: cal.phases(stream.cost_ms, rate=cal_rate, workers=cfg.workers, sources=cfg.sources, settings=settings,
                          seed=cfg.seed + i, tag=f"calibration-{w}", fill=w == "before" and known is None)
            for i, w in enumerate(("before", "after"))}
    warm = [cal.warm_up(workers=cfg.workers, sources=cfg.sources, settings=settings, seed=cfg.seed),
            *cal.phases(stream.cost_ms, rate=cal_rate, workers=cfg.workers, sources=cfg.sources, settings=settings,
                        seed=cfg.seed + 7, tag="warm-up", fill=False)]
    if cluster is not None:
        where: Any = contextlib.nullcontext(cluster)
    elif cfg.flink_address or cfg.cluster != "local":
        where = contextlib.nullcontext(None)
    else:
        where = local_cluster(work / "cluster", parallelism=max(cfg.workers, cfg.sources), taskmanagers=cfg.taskmanagers,
                              options=cfg.flink_options, progress=progress)
    with where as cl:
        address = cfg.flink_address or (cl.address if cl is not None else "")
        mini = None if address else {**cfg.flink_options}

        def go(phs: list[flink.EnginePhase], sub: str) -> list[flink.Recorded]:
            d = work / sub
            dirs = flink.run(phs, d, state=state, address=address, mini_cluster=mini)
            return [flink.read_phase(x) for x in dirs]

        if not getattr(cl, "warm", False):
            progress(f"flink: warming the cluster up ({len(warm)} jobs)")
            go(warm, "warm-up")
            shutil.rmtree(work / "warm-up", ignore_errors=True)
            if cl is not None:
                cl.warm = True
        watch = cal.CpuWatch() if not cfg.flink_address else None
        if watch:
            watch.start()
        recs = go(cals["before"], "calibration-before")
        before = cal.calibration(recs, cals["before"], workers=cfg.workers, sources=cfg.sources,
                                 watermark_ms=cfg.watermark_ms, capacities=known)
        before.others_cores = watch.others() if watch else None
        if cl is not None and known is None:
            cl.channels = before
        cal.check(before, mean_cost, "before")
        progress(f"flink: calibration before: overhead {before.overhead_ms:.3f} ms per record (median "
                 f"{before.overhead_median_ms:.3f}), other processes {before.others_cores or 0.0:.2f} cores")

        targets = predictions(stream, cfg, before.overhead_ms, duration_s)
        searches: dict[tuple[str, int], lcap.Search] = {}
        probes: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for t in targets:
            c = t.predicted["capacity"]
            progress(f"flink: {t.strategy}: {t.tuples:,} tuples, predicted capacity {c:,.0f} tuples/s "
                     f"(busiest worker {t.predicted['busiest']})")
            for r in range(cfg.repeat):
                searches[(t.strategy, r + 1)] = lcap.Search(ss.low * c, ss.high * c, ss.steps, ss.width, ss.expand)
                probes[(t.strategy, r + 1)] = []
        by_name = {t.strategy: t for t in targets}
        order = [(t.strategy, r + 1) for r in range(cfg.repeat) for t in targets]
        rnd = 0
        while True:
            pending = [k for k in order if searches[k].next_rate() is not None]
            if not pending:
                break
            k0 = rnd % len(pending)
            pending = pending[k0:] + pending[:k0]
            eps, meta = [], []
            for key in pending:
                name, rep = key
                rate = searches[key].next_rate()
                t = by_name[name]
                p = dec.grouping_phase(probe_prefix(stream, t.tuples, rate), name, cfg)
                p = with_routing([p], "flink", cfg.native, routers)[0]
                ep = engine_phase(p, cfg, rep, settings)
                ep.name = f"{p.name}#{rep}@{rate:.0f}"
                eps.append(ep)
                meta.append((key, rate, p))
            watch = cal.CpuWatch() if not cfg.flink_address else None
            if watch:
                watch.start()
            sub = f"round-{rnd:02d}"
            recs = go(eps, sub)
            others = watch.others() if watch else None
            for ep, rec, (key, rate, p) in zip(eps, recs, meta):
                name, rep = key
                if restarted(rec):
                    progress(f"flink: {name} #{rep} at {rate:,.0f}/s: the engine restarted the phase, probed again")
                    continue
                check_routing(ep, rec)
                final = exact_finals(ep, rec)[0] if ep.job == "agg" else None
                tm = measured_timings(ep, rec, final)
                win = window_of(ep, cfg.warmup)
                j = lcap.judge(tm.due, tm.end, win, rate, ss.share)
                length_s = (win[1] - win[0]) / 1000.0
                j["throughput"] = float(((tm.end >= win[0]) & (tm.end <= win[1])).sum() / length_s)
                pred_here = lcap.predicted(p.worker, p.cost_ms, before.overhead_ms, cfg.workers)["capacity"]
                j.update({"round": rnd, "others_cores": others, "tuples": ep.tuples,
                          "duration_s": float(ep.due_ms.max()) / 1000.0,
                          "predicted_capacity_at_probe": pred_here,
                          "share_of_predicted": rate / by_name[name].predicted["capacity"]})
                probes[key].append(j)
                searches[key].record(rate, j["sustained"])
                progress(f"flink: capacity {name} #{rep}: {rate:,.0f}/s ({j['share_of_predicted']:.0%} of predicted), "
                         f"lag slope {j['slope']:+,.0f}/s (limit {j['limit']:,.0f}/s): "
                         f"{'sustained' if j['sustained'] else 'NOT sustained'}"
                         f"{'' if others is None else f'; other processes {others:.2f} cores'}")
            shutil.rmtree(work / sub, ignore_errors=True)
            rnd += 1
            # the probes so far, for a run stopped later (a refused calibration after them): on disk,
            # never reported as a result
            staged = work / f"{SEARCHES_FILE}.tmp"
            staged.write_text(json.dumps({"rounds": rnd, "before": before.to_dict(), "searches": {
                f"{k[0]}#{k[1]}": {**searches[k].to_dict(), "judged": probes[k]} for k in order}}, default=float))
            staged.replace(work / SEARCHES_FILE)
        watch = cal.CpuWatch() if not cfg.flink_address else None
        if watch:
            watch.start()
        recs = go(cals["after"], "calibration-after")
        after = cal.calibration(recs, cals["after"], workers=cfg.workers, sources=cfg.sources,
                                watermark_ms=cfg.watermark_ms, capacities=before)
        after.others_cores = watch.others() if watch else None
        progress(f"flink: calibration after: overhead {after.overhead_ms:.3f} ms per record (median "
                 f"{after.overhead_median_ms:.3f}), other processes {after.others_cores or 0.0:.2f} cores")
        cal.check_drift(before, after, mean_cost)
    rows = []
    for t in targets:
        reps = [searches[(t.strategy, r + 1)] for r in range(cfg.repeat)]
        cmp = lcap.compare(t.predicted["capacity"], [s.capacity for s in reps], ss.tolerance)
        pooled = [pr for s in reps for pr in s.probes]
        rows.append({
            "strategy": t.strategy, "routing": t.reference.routing if t.strategy not in routers else "engine",
            "workers": cfg.workers, "sources": cfg.sources, "tuples": t.tuples, "params": t.reference.params,
            "predicted": t.predicted["capacity"], "predicted_busy_ms": t.predicted["busy_ms"],
            "predicted_busiest": t.predicted["busiest"], **cmp,
            "separated": all(lcap.separated(s.probes, s.low, s.high) for s in reps),
            "monotone": lcap.monotone(pooled),
            "searches": [{**s.to_dict(), "repetition": i + 1, "judged": probes[(t.strategy, i + 1)]}
                         for i, s in enumerate(reps)],
        })
    return {
        "dataset": stream.name, "fingerprint": stream.fingerprint, "workers": cfg.workers, "sources": cfg.sources,
        "cost_model": stream.cost_model, "work": cfg.work, "job": cfg.job, "repeat": cfg.repeat,
        "duration_s": duration_s, "warmup": cfg.warmup,
        "search": dataclasses.asdict(ss), "overhead_ms": before.overhead_ms,
        "calibrations": {"before": before.to_dict(), "after": after.to_dict()},
        "rows": rows,
        "verdict": {"tolerance": ss.tolerance, "within": all(r["within"] for r in rows),
                    "outside": [r["strategy"] for r in rows if not r["within"]]},
        "seconds": time.monotonic() - t_start,
    }


def table(res: dict[str, Any]) -> str:
    """The console table: per strategy, predicted and measured capacity (median, range), ratio."""
    lines = [f"{'strategy':9s} {'tuples':>7s} {'predicted':>10s} {'measured':>10s} {'min-max':>15s} {'ratio':>6s} "
             f"{'within':>6s} {'separated':>9s}"]
    for r in res["rows"]:
        def f(v: Any) -> str:
            return "-" if v is None else f"{v:,.0f}"
        rng = f"{f(r['measured_min'])}-{f(r['measured_max'])}"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
        lines.append(f"{r['strategy']:9s} {r['tuples']:7,d} {f(r['predicted']):>10s} {f(r['measured']):>10s} "
                     f"{rng:>15s} {ratio:>6s} {'yes' if r['within'] else 'no':>6s} "
                     f"{'yes' if r['separated'] else 'no':>9s}")
    v = res["verdict"]
    lines.append(f"verdict: measured within {v['tolerance']:.0%} of predicted for every strategy: "
                 f"{'yes' if v['within'] else 'no (' + ', '.join(v['outside']) + ')'}")
    return "\n".join(lines)
