"""``skewbench live``: a dataset's stream executed on Flink and Spark with each strategy's own
decisions, measured, and set beside the simulator's prediction."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from skewbench.errors import SkewbenchError
from skewbench.live import config as lc

#: the file a live run writes in --out (the rows, the agreement, the overheads, the stream)
RESULTS_FILE = "live.json"
#: the file a capacity search writes in --out
CAPACITY_FILE = "live-capacity.json"


def _names(text: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    if text is None:
        return default
    return tuple(s.strip() for s in text.split(",") if s.strip())


def _cost(text: str) -> str | float:
    if text == "dataset":
        return text
    try:
        return float(text)
    except ValueError:
        raise SkewbenchError(f"--cost is milliseconds per tuple or 'dataset', got {text!r}") from None


def _dataset_path(dataset: str) -> str:
    """A dataset directory, or a catalog dataset's name (materialised under the data root)."""
    p = Path(dataset)
    if (p / "_skewbench.json").exists():
        return str(p)
    if p.exists():
        raise SkewbenchError(f"{dataset} is not a skewbench dataset (no _skewbench.json)")
    from skewbench.datasets.catalog import load_catalog
    from skewbench.materialize import materialize
    from skewbench.settings import settings

    try:
        entry = load_catalog().select([dataset])[0]
    except SkewbenchError as e:
        raise SkewbenchError(f"{dataset}: neither a dataset directory nor a catalog dataset ({e})") from None
    status = materialize(entry, settings().data_root, engine="local", validate=True)
    if status["validation"] == "failed":
        raise SkewbenchError(f"{dataset}: the catalog dataset fails validation: {status['detail']}")
    return str(status["path"])


def table(rows: list[dict[str, Any]]) -> str:
    """The console table: per engine and strategy, the medians over the repetitions (their range)
    measured against predicted."""
    from skewbench.present.livepage import ROUTING_LABELS

    def f(v: Any, fmt: str) -> str:
        return format("-", f">{fmt.split('.')[0]}") if v is None else format(v, fmt)

    def rng(r: dict[str, Any], col: str, fmt: str) -> str:
        lo, hi = r.get(f"{col}_min"), r.get(f"{col}_max")
        return "" if lo is None or hi is None or r.get("repeat", 1) < 2 else f" ({format(lo, fmt)}-{format(hi, fmt)})"

    head = (f"{'engine':6s} {'strategy':24s} {'throughput measured':>27s} {'pred':>7s} {'ratio':>6s} "
            f"{'p99 ms measured':>25s} {'pred':>7s} {'ratio':>6s} {'src bp ms':>9s} {'pred':>8s} {'merge':>7s}  "
            f"records per worker")
    lines = [head]
    for r in rows:
        name = r["strategy"] + ROUTING_LABELS.get(r["routing"], "")
        thr = f(r.get("throughput_measured"), ".0f") + rng(r, "throughput_measured", ".0f")
        p99 = f(r.get("latency_p99_measured_ms"), ".0f") + rng(r, "latency_p99_measured_ms", ".0f")
        lines.append(f"{r['engine']:6s} {name:24s} {thr:>27s} {f(r.get('throughput_predicted'), '7.0f')} "
                     f"{f(r.get('throughput_ratio'), '6.3f')} {p99:>25s} {f(r.get('latency_p99_predicted_ms'), '7.0f')} "
                     f"{f(r.get('latency_p99_ratio'), '6.3f')} {f(r.get('source_backpressured_ms'), '9.0f')} "
                     f"{f(r.get('source_backpressured_predicted_ms'), '8.0f')} {f(r.get('merge_records'), '7.0f')}  "
                     f"{r['subtask_records']}")
    lines.append("(engine): decided in Flink's sources by the strategy's Java router; (offline): decided by the "
                 "replay before the run, carried in each tuple; (native): the engine's own partitioner")
    return "\n".join(lines)


def _options(items: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise SkewbenchError(f"--flink-option is KEY=VALUE (a Flink configuration option), got {item!r}")
        out[key.strip()] = value.strip()
    return out


@click.command("live")
@click.argument("dataset")
@click.option("--workers", type=int, default=8, show_default=True, help=f"Parallelism (1-{lc.MAX_WORKERS}).")
@click.option("--load", type=float, default=lc.DEFAULT_LOAD, show_default=True,
              help="Offered rate, in percent of the workers' capacity (workers x 1000 / mean cost), unless --rate.")
@click.option("--rate", type=float, default=None, help="Tuples per second, each stamped when due (overrides --load).")
@click.option("--duration", "duration_s", type=float, default=30.0, show_default=True,
              help="Seconds of stream per Flink phase (at the rate: the stream's prefix).")
@click.option("--tuples", type=int, default=None, help=f"The stream's first tuples instead of --duration (at most "
              f"{lc.MAX_TUPLES:,}).")
@click.option("--warmup", type=float, default=0.2, show_default=True,
              help="The share of a phase's stream left out of its measurement (the drain is left out too).")
@click.option("--repeat", type=int, default=3, show_default=True,
              help="Runs of every phase (the strategies' order rotated); medians with their minimum and maximum.")
@click.option("--cost", "cost", default="1", show_default=True,
              help="Work per tuple in ms, or 'dataset' (its cost column).")
@click.option("--work", type=click.Choice(lc.WORK), default="sleep", show_default=True,
              help="sleep: a worker with a core of its own; cpu: busy (a core per worker).")
@click.option("--job", type=click.Choice(lc.JOBS), default="agg", show_default=True,
              help="agg: a keyed windowed aggregation in Flink state, with the merge stage split keys need; "
                   "map: the stateless worker.")
@click.option("--window", "window_ms", type=float, default=1000.0, show_default=True,
              help="The aggregation's tumbling window, ms of event time (the due time).")
@click.option("--watermark-interval", "watermark_ms", type=int, default=20, show_default=True,
              help="The sources' periodic watermark interval (ms).")
@click.option("--merge-parallelism", type=int, default=0, show_default=True,
              help="The merge stage's parallelism (0: the workers').")
@click.option("--merge-cost", "merge_cost_ms", type=float, default=0.0, show_default=True,
              help="Work per partial aggregate in the merge stage (ms), besides the merge itself.")
@click.option("--state-backend", type=click.Choice(lc.STATE_BACKENDS), default="hashmap", show_default=True,
              help="Flink's keyed state: on the heap, or RocksDB (the Flink environment's own jars).")
@click.option("--checkpoint-interval", "checkpoint_s", type=float, default=0.0, show_default=True,
              help="Seconds between checkpoints (0: none; --kill-taskmanager uses 10).")
@click.option("--engines", default=",".join(lc.ENGINES), show_default=True, help="flink, spark or both.")
@click.option("--strategies", "grouping", default=None,
              help=f"Grouping strategies (default {','.join(lc.DEFAULT_GROUPING)}; 'none' for none).")
@click.option("--shedders", "shedding", default=None,
              help=f"Operator shedders in front of worker 0 (e.g. {','.join(lc.DEFAULT_SHEDDING)}).")
@click.option("--provisioning", type=float, default=75.0, show_default=True, help="Shedders: percent of capacity.")
@click.option("--bound", "bound_ms", type=float, default=6.4, show_default=True, help="Shedders: latency bound (ms).")
@click.option("--sources", type=int, default=5, show_default=True,
              help="Source subtasks (and upstream instances of the grouping strategies).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--no-native", is_flag=True, help="Route the strategies that model an engine's own partitioner "
              "(flink, spark-sql) by their decisions instead of the engine's keyBy / repartition.")
@click.option("--routing", type=click.Choice(lc.ROUTINGS), default=lc.LiveConfig.routing, show_default=True,
              help="On Flink, route the grouping strategies that have a Java router by that router, deciding in "
                   "each source at run time (engine; checked against the replay tuple for tuple, the row gives its "
                   "time a tuple), or by the replay's decisions carried in each tuple (replay).")
@click.option("--flink-address", default=None, help="HOST:PORT of a running Flink cluster's REST endpoint "
              "(default: SKEWBENCH_FLINK_ADDRESS, else --cluster).")
@click.option("--cluster", type=click.Choice(lc.CLUSTERS), default="local", show_default=True,
              help="Without --flink-address: a local standalone cluster (a JobManager and --taskmanagers "
                   "TaskManagers, separate processes on loopback), or a mini-cluster in one JVM.")
@click.option("--taskmanagers", type=int, default=2, show_default=True, help="TaskManagers of the local cluster.")
@click.option("--flink-option", "flink_options", multiple=True, metavar="KEY=VALUE",
              help="A Flink configuration option for the local cluster (repeatable), e.g. "
                   "taskmanager.memory.segment-size=4kb.")
@click.option("--kill-taskmanager", "kill_after_s", type=float, default=0.0,
              help="Kill a TaskManager of the local cluster this many seconds into the last phase, start a "
                   "replacement, check the job recovers exactly, and run that phase again.")
@click.option("--spark-tuples", type=int, default=lc.SPARK_TUPLES, show_default=True,
              help="The stream's first tuples a Spark stage runs (a batch).")
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help=f"Write {RESULTS_FILE} (and the engines' per-tuple timings) there.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
@click.option("--capacity-search", "capacity_search", is_flag=True,
              help="Search each strategy's capacity on Flink instead: the largest rate whose lag (tuples due less "
                   "tuples done) grows by less than --lag-share of the rate per second, by bisection between two "
                   "rates around the capacity its routing predicts; set beside that prediction (docs/live.md). "
                   "Defaults then: --strategies kg,pkg,dc,sg, --engines flink, --duration 8 (a probe's seconds "
                   "of stream at the predicted capacity).")
@click.option("--search-rates", default=None, metavar="LOW,HIGH",
              help="--capacity-search: the starting rates, shares of the predicted capacity [default: 0.7,1.3].")
@click.option("--search-steps", type=int, default=None,
              help="--capacity-search: at most this many halvings of the bracket [default: 5].")
@click.option("--search-width", type=float, default=None,
              help="--capacity-search: stop once the bracket is within this share of its lower rate [default: 0.05].")
@click.option("--lag-share", type=float, default=None,
              help="--capacity-search: a rate is sustained while its lag grows by less than this share of the rate "
                   "per second [default: 0.01].")
@click.option("--capacity-tolerance", type=float, default=None,
              help="--capacity-search: the verdict's band around the predicted capacity [default: 0.15].")
def command(dataset: str, workers: int, load: float, rate: float | None, duration_s: float, tuples: int | None,
            warmup: float, repeat: int, cost: str, work: str, job: str, window_ms: float, watermark_ms: int,
            merge_parallelism: int, merge_cost_ms: float, state_backend: str, checkpoint_s: float, engines: str,
            grouping: str | None, shedding: str | None, provisioning: float, bound_ms: float, sources: int, seed: int,
            no_native: bool, routing: str, flink_address: str | None, cluster: str, taskmanagers: int, flink_options: tuple[str, ...],
            kill_after_s: float, spark_tuples: int, out: str | None, as_json: bool, capacity_search: bool = False,
            search_rates: str | None = None, search_steps: int | None = None, search_width: float | None = None,
            lag_share: float | None = None, capacity_tolerance: float | None = None) -> None:
    """Execute DATASET's stream (a dataset directory or a catalog name) on a real engine with each
    strategy's own decisions, and set the measurement beside the simulator's prediction for the
    same stream, rate, costs and parallelism.

    On Flink each phase is a keyed windowed aggregation (sources, the strategy's routing, workers
    with keyed state, the merge stage split keys need) on a local standalone cluster, run
    --repeat times between two calibrations on a stream of their own. Every tuple is checked to
    have run on the worker decided, and every final aggregate to equal the exact one. Flink needs
    the Flink environment (`make flink-env`) and a JDK.
    """
    from skewbench.live.run import live_rows
    from skewbench.settings import settings

    search = {"--search-rates": search_rates, "--search-steps": search_steps, "--search-width": search_width,
              "--lag-share": lag_share, "--capacity-tolerance": capacity_tolerance}
    if capacity_search:
        from click.core import ParameterSource

        ctx = click.get_current_context()

        def given(name: str) -> bool:
            return ctx.get_parameter_source(name) != ParameterSource.DEFAULT

        return _capacity(dataset, search, given, workers=workers, load=load, rate=rate,
                         duration_s=duration_s if given("duration_s") else None, tuples=tuples, warmup=warmup,
                         repeat=repeat, cost=cost, work=work, job=job, window_ms=window_ms, watermark_ms=watermark_ms,
                         merge_parallelism=merge_parallelism, merge_cost_ms=merge_cost_ms,
                         state_backend=state_backend, checkpoint_s=checkpoint_s,
                         engines=engines if given("engines") else "flink", grouping=grouping, shedding=shedding,
                         sources=sources, seed=seed, no_native=no_native, routing=routing,
                         flink_address=flink_address, cluster=cluster, taskmanagers=taskmanagers,
                         flink_options=flink_options, kill_after_s=kill_after_s, out=out, as_json=as_json)
    extra = [k for k, v in search.items() if v is not None]
    if extra:
        raise SkewbenchError(f"{', '.join(extra)} belong{'s' if len(extra) == 1 else ''} to --capacity-search")
    g = _names(grouping, lc.DEFAULT_GROUPING)
    cfg = lc.LiveConfig(dataset=dataset, workers=workers, tuples=tuples, rate=rate, load=load, duration_s=duration_s,
                        warmup=warmup, repeat=repeat, job=job, window_ms=window_ms, watermark_ms=watermark_ms,
                        merge_parallelism=merge_parallelism, merge_cost_ms=merge_cost_ms, state_backend=state_backend,
                        checkpoint_s=checkpoint_s, cluster=cluster, taskmanagers=taskmanagers,
                        flink_options=_options(flink_options), kill_after_s=kill_after_s, spark_tuples=spark_tuples,
                        cost=_cost(cost), work=work, engines=_names(engines, lc.ENGINES),
                        grouping=() if g == ("none",) else g, shedding=_names(shedding, ()), sources=sources, seed=seed,
                        provisioning=provisioning, bound_ms=bound_ms, native=not no_native, routing=routing,
                        flink_address=settings().flink_address if flink_address is None else flink_address)
    cfg.check()
    if "flink" in cfg.engines:
        from skewbench.settings import flink_environment

        flink_environment()  # one line naming `make flink-env` before anything starts
    path = _dataset_path(dataset)
    echo = (lambda m: click.echo(m, err=True)) if as_json else click.echo
    # the engines write their inputs and logs under the work directory as they start (--out is
    # created only then: a run refused before that writes nothing); a failed run's temporary one
    # stays, with the log its message names
    res = _in_work_dir(out, "skewbench-live-", RESULTS_FILE,
                       lambda work_dir: live_rows(path, cfg, work_dir, state=settings().state, progress=echo),
                       lambda r: r.to_dict())
    if as_json:
        json.dump(res.to_dict(), sys.stdout, default=float)
        sys.stdout.write("\n")
        return
    click.echo(table(res.rows))
    for a in res.agreement:
        tau = "-" if a["kendall_tau"] is None else format(a["kendall_tau"], ".3f")
        apart = f"; not separated: {', '.join(' / '.join(p) for p in a['not_separated'])}" if a.get("not_separated") else ""
        click.echo(f"{a['engine']}: {a['metric']} ranks {a['strategies']} strategies alike, Kendall tau {tau}{apart}")
    for engine, c in res.calibrations.items():
        for when in ("before", "after"):
            k = c.get(when) or {}
            extra = (f", transport {k['transport_ms']:.2f} ms, {k['capacity']:,} records a channel"
                     if "capacity" in k else "")
            click.echo(f"{engine}: calibration {when}: per-record overhead {k.get('overhead_ms', float('nan')):.3f} ms"
                       f"{extra}")
    for r in res.restarts:
        click.echo(f"flink: {r['phase']} restarted ({r['attempts']} attempts), aggregates exact, resumed "
                   f"{'-' if r['restart_s'] is None else format(r['restart_s'], '.1f')} s after the failure; run again")


def _search_rates(text: str) -> tuple[float, float]:
    parts = [p.strip() for p in text.split(",")]
    try:
        low, high = (float(p) for p in parts)
    except ValueError:
        raise SkewbenchError(f"--search-rates is LOW,HIGH (two shares of the predicted capacity, e.g. 0.7,1.3), got "
                             f"{text!r}") from None
    return low, high


def _capacity(dataset: str, search: dict[str, Any], given: Any, *, workers: int, load: float, rate: float | None,
              duration_s: float | None, tuples: int | None, warmup: float, repeat: int, cost: str, work: str, job: str,
              window_ms: float, watermark_ms: int, merge_parallelism: int, merge_cost_ms: float, state_backend: str,
              checkpoint_s: float, engines: str, grouping: str | None, shedding: str | None, sources: int, seed: int,
              no_native: bool, routing: str, flink_address: str | None, cluster: str, taskmanagers: int,
              flink_options: tuple[str, ...], kill_after_s: float, out: str | None, as_json: bool) -> None:
    """``skewbench live DATASET --capacity-search``: each strategy's capacity searched on Flink
    (:mod:`skewbench.live.capacity_run`), its table or one JSON object."""
    from skewbench.live import capacity_run as cr
    from skewbench.settings import settings

    ss = cr.SearchSettings()
    if search["--search-rates"] is not None:
        ss.low, ss.high = _search_rates(search["--search-rates"])
    for opt, attr in (("--search-steps", "steps"), ("--search-width", "width"), ("--lag-share", "share"),
                      ("--capacity-tolerance", "tolerance")):
        if search[opt] is not None:
            setattr(ss, attr, search[opt])
    ss.check()
    for opt, name in (("--spark-tuples", "spark_tuples"), ("--provisioning", "provisioning"), ("--bound", "bound_ms")):
        if given(name):
            raise SkewbenchError(f"{opt} has no part in --capacity-search (Flink, grouping strategies)")
    g = _names(grouping, cr.DEFAULT_STRATEGIES)
    cfg = lc.LiveConfig(dataset=dataset, workers=workers, tuples=tuples, rate=rate, load=load,
                        duration_s=cr.DEFAULT_DURATION_S if duration_s is None else duration_s, warmup=warmup,
                        repeat=repeat, job=job, window_ms=window_ms, watermark_ms=watermark_ms,
                        merge_parallelism=merge_parallelism, merge_cost_ms=merge_cost_ms, state_backend=state_backend,
                        checkpoint_s=checkpoint_s, cluster=cluster, taskmanagers=taskmanagers,
                        flink_options=_options(flink_options), kill_after_s=kill_after_s, cost=_cost(cost), work=work,
                        engines=_names(engines, ("flink",)), grouping=() if g == ("none",) else g,
                        shedding=_names(shedding, ()), sources=sources, seed=seed, native=not no_native,
                        routing=routing,
                        flink_address=settings().flink_address if flink_address is None else flink_address)
    cr.check_config(cfg)
    from skewbench.settings import flink_environment

    flink_environment()  # one line naming `make flink-env` before anything starts
    path = _dataset_path(dataset)
    echo = (lambda m: click.echo(m, err=True)) if as_json else click.echo
    res = _in_work_dir(out, "skewbench-capacity-", CAPACITY_FILE,
                       lambda work_dir: cr.capacity_search(path, cfg, ss, work_dir, state=settings().state,
                                                           duration_s=cfg.duration_s, progress=echo),
                       lambda r: r)
    if as_json:
        json.dump(res, sys.stdout, default=float)
        sys.stdout.write("\n")
        return
    click.echo(cr.table(res))


def _in_work_dir(out: str | None, prefix: str, results_file: str, run: Any, as_dict: Any) -> Any:
    """``run(work_dir)`` in ``out``, or in a temporary directory removed afterwards (kept, with the
    log a failure names, when the run fails with files in it); with ``out``, the result as JSON in
    ``out/results_file``, written whole or not at all."""
    tmp = None if out else Path(tempfile.mkdtemp(prefix=prefix))
    work_dir = Path(out) if out else tmp
    try:
        res = run(work_dir)
    except BaseException as e:
        if tmp is not None and (not isinstance(e, SkewbenchError) or not any(tmp.iterdir())):
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)
    if out:
        work_dir.mkdir(parents=True, exist_ok=True)
        target = work_dir / results_file
        staged = target.with_suffix(".json.tmp")
        staged.write_text(json.dumps(as_dict(res), default=float, indent=1))
        os.replace(staged, target)
    return res


def windows_table(res: dict[str, Any]) -> str:
    """The console table of a windowed run: per strategy and window, ShedPart's time and the
    window's processing time measured against predicted."""
    lines = [f"{'strategy':9s} {'window':>6s} {'tuples':>7s} {'shed':>6s} {'max load':>8s} {'T_sp ms':>8s} "
             f"{'T_proc s':>8s} {'pred s':>7s} {'T_sp share':>10s}  records per worker"]
    for r in res["rows"]:
        share = "-" if r["sp_share"] is None else f"{r['sp_share']:.2e}"
        lines.append(f"{r['strategy']:9s} {r['window']:6d} {r['tuples']:7d} {r['shed']:6d} {r['load_max']:8d} "
                     f"{1e3 * r['t_sp_s']:8.3f} {r['t_proc_measured_s']:8.3f} {r['t_proc_predicted_s']:7.3f} "
                     f"{share:>10s}  {r['subtask_records']}")
    return "\n".join(lines)


@click.command("live-windows")
@click.argument("dataset")
@click.option("--strategies", default="fld,shedpart", show_default=True,
              help="The shedding family's partition strategies (Storm's fields grouping, ShedPart on it).")
@click.option("--workers", type=int, default=4, show_default=True, help=f"Workers (1-{lc.MAX_WORKERS}).")
@click.option("--windows", type=int, default=None, help="The first complete windows only (default: all).")
@click.option("--cost", type=float, default=1.0, show_default=True, help="Work per tuple in ms.")
@click.option("--work", type=click.Choice(lc.WORK), default="sleep", show_default=True,
              help="sleep: a worker with a core of its own; cpu: busy (a core per worker).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out", type=click.Path(file_okay=False), default=None, help="Write live-windows.json there.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def windows_command(dataset: str, strategies: str, workers: int, windows: int | None, cost: float, work: str,
                    seed: int, out: str | None, as_json: bool) -> None:
    """Execute the windows of DATASET's windowed aggregation (a dataset directory or a catalog name
    with a value column) on Spark, one stage per window (the paper's parallel step), with each
    partition strategy's per-window decisions: ShedPart's own time beside each window's measured
    processing time and its prediction (shedpart.spec.md R5, R6, R7). The records per worker are
    checked against the decisions to the tuple."""
    from skewbench.live import windows as lw

    names = _names(strategies, lw.STRATEGIES)
    if not names:
        raise SkewbenchError("no strategy to run: name the partition strategies (--strategies fld,shedpart)")
    if not 1 <= workers <= lc.MAX_WORKERS:
        raise SkewbenchError(f"--workers must be in [1, {lc.MAX_WORKERS}], got {workers}")
    if not 0 < cost <= 1000:
        raise SkewbenchError(f"--cost must be in (0, 1000] ms, got {cost:g}")
    if windows is not None and windows < 1:
        raise SkewbenchError(f"--windows must be at least 1, got {windows}")
    for name in names:
        lw.check_strategy(name)
    path = _dataset_path(dataset)
    decided = [lw.decide(path, s, workers, windows=windows, seed=seed) for s in names]
    echo = (lambda m: click.echo(m, err=True)) if as_json else click.echo
    tuples = sum(int(d.loads_after.sum()) for d in decided)
    echo(f"{len(decided)} strategies, {decided[0].windows} windows, {tuples:,} tuples to process at {cost:g} ms "
         f"on {workers} workers")
    res = lw.run(decided, cost_ms=cost, work=work, progress=echo)
    res["dataset"] = path
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        target = Path(out) / "live-windows.json"
        staged = target.with_suffix(".json.tmp")
        staged.write_text(json.dumps(res, default=float, indent=1))
        os.replace(staged, target)
    if as_json:
        json.dump(res, sys.stdout, default=float)
        sys.stdout.write("\n")
        return
    click.echo(windows_table(res))
    click.echo(f"spark: per-tuple overhead {res['overhead_ms']:.3f} ms (calibration stage)")
