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
    """The console table: per engine and strategy, measured against predicted."""
    def f(v: Any, fmt: str) -> str:
        return format("-", f">{fmt.split('.')[0]}") if v is None else format(v, fmt)

    head = (f"{'engine':6s} {'strategy':18s} {'thr meas':>9s} {'thr pred':>9s} {'ratio':>6s} {'p99 meas':>9s} "
            f"{'p99 pred':>9s} {'dropped':>7s}  records per worker")
    lines = [head]
    for r in rows:
        name = r["strategy"] + (" (native)" if r["routing"] == "native" else "")
        lines.append(f"{r['engine']:6s} {name:18s} {f(r['throughput_measured'], '9.1f')} {f(r['throughput_predicted'], '9.1f')} "
                     f"{f(r['throughput_ratio'], '6.3f')} {f(r['latency_p99_measured_ms'], '9.1f')} "
                     f"{f(r['latency_p99_predicted_ms'], '9.1f')} {r['dropped']:7d}  {r['subtask_records']}")
    return "\n".join(lines)


@click.command("live")
@click.argument("dataset")
@click.option("--workers", type=int, default=8, show_default=True, help=f"Parallelism (1-{lc.MAX_WORKERS}).")
@click.option("--tuples", type=int, default=4000, show_default=True,
              help=f"The stream's first tuples to execute (at most {lc.MAX_TUPLES:,}).")
@click.option("--rate", type=float, default=0.0, show_default=True,
              help="Tuples per second, each stamped when due (latency); 0: as fast as the engine takes them.")
@click.option("--cost", "cost", default="1", show_default=True,
              help="Work per tuple in ms, or 'dataset' (its cost column).")
@click.option("--work", type=click.Choice(lc.WORK), default="sleep", show_default=True,
              help="sleep: a worker with a core of its own; cpu: busy (a core per worker).")
@click.option("--engines", default=",".join(lc.ENGINES), show_default=True, help="flink, spark or both.")
@click.option("--strategies", "grouping", default=None,
              help=f"Grouping strategies (default {','.join(lc.DEFAULT_GROUPING)}; 'none' for none).")
@click.option("--shedders", "shedding", default=None,
              help=f"Operator shedders in front of worker 0 (e.g. {','.join(lc.DEFAULT_SHEDDING)}).")
@click.option("--provisioning", type=float, default=75.0, show_default=True, help="Shedders: percent of capacity.")
@click.option("--bound", "bound_ms", type=float, default=6.4, show_default=True, help="Shedders: latency bound (ms).")
@click.option("--sources", type=int, default=5, show_default=True, help="Upstream instances of the grouping strategies.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--no-native", is_flag=True, help="Skip the engines' own routing (Flink's keyBy, Spark SQL's repartition).")
@click.option("--flink-address", default=None, help="HOST:PORT of a running Flink cluster's REST endpoint "
              "(default: SKEWBENCH_FLINK_ADDRESS, else a local Flink per phase).")
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help=f"Write {RESULTS_FILE} (and the engines' per-tuple timings) there.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def command(dataset: str, workers: int, tuples: int, rate: float, cost: str, work: str, engines: str,
            grouping: str | None, shedding: str | None, provisioning: float, bound_ms: float, sources: int, seed: int,
            no_native: bool, flink_address: str | None, out: str | None, as_json: bool) -> None:
    """Execute DATASET's stream (a dataset directory or a catalog name) on a real engine with each
    strategy's own decisions, and set the measurement beside the simulator's prediction for the
    same stream, rate, costs and parallelism.

    Every routing is checked to the tuple: the records each worker ran equal the strategy's
    loads, also where the engine routes natively (Flink's keyBy for `flink`, Spark SQL's
    repartition for `spark-sql`). Flink needs the Flink environment (`make flink-env`) and a JDK.
    """
    from skewbench.live.run import live_rows
    from skewbench.settings import settings

    g = _names(grouping, lc.DEFAULT_GROUPING)
    cfg = lc.LiveConfig(dataset=dataset, workers=workers, tuples=tuples, rate=rate, cost=_cost(cost), work=work,
                        engines=_names(engines, lc.ENGINES), grouping=() if g == ("none",) else g,
                        shedding=_names(shedding, ()), sources=sources, seed=seed, provisioning=provisioning,
                        bound_ms=bound_ms, native=not no_native,
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
    tmp = None if out else Path(tempfile.mkdtemp(prefix="skewbench-live-"))
    work_dir = Path(out) if out else tmp
    try:
        res = live_rows(path, cfg, work_dir, state=settings().state, progress=echo)
    except BaseException as e:
        if tmp is not None and (not isinstance(e, SkewbenchError) or not any(tmp.iterdir())):
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)
    if out:
        work_dir.mkdir(parents=True, exist_ok=True)
        target = work_dir / RESULTS_FILE
        staged = target.with_suffix(".json.tmp")
        staged.write_text(json.dumps(res.to_dict(), default=float, indent=1))
        os.replace(staged, target)
    if as_json:
        json.dump(res.to_dict(), sys.stdout, default=float)
        sys.stdout.write("\n")
        return
    click.echo(table(res.rows))
    for a in res.agreement:
        click.echo(f"{a['engine']}: {a['metric']} ranks {a['strategies']} strategies alike, Kendall tau "
                   f"{'-' if a['kendall_tau'] is None else format(a['kendall_tau'], '.3f')}")
    for engine, o in res.overheads.items():
        click.echo(f"{engine}: per-tuple overhead {o['overhead_ms']:.3f} ms, transport {o['transport_ms']:.2f} ms "
                   f"(calibration phase)")


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
