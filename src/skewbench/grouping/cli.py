"""``skewbench replay grouping``: replay a dataset through grouping strategies x workers x sources
x parameters x seeds (also ``spark_jobs/replay.py grouping ...``)."""

from __future__ import annotations

import click

from skewbench import clikit, registry
from skewbench.errors import SkewbenchError
from skewbench.grouping import DEFAULT_STRATEGIES


def _worker_speed(text: str | None) -> list[tuple[int, list[float]]] | None:
    if not text:
        return None
    periods = []
    try:
        for part in text.split(";"):
            start, _, factors = part.partition(":")
            periods.append((int(start), [float(f) for f in factors.split(",")]))
    except ValueError:
        raise SkewbenchError(f"--worker-speed takes START:F1,F2,...[;START:...], got '{text}'") from None
    return periods


def _window(window: str | None) -> tuple[int | None, float | None]:
    if not window:
        return None, None
    try:
        if window.endswith("s"):
            return None, float(window[:-1])
        return int(window), None
    except ValueError:
        raise SkewbenchError(f"--window takes N (tuples) or Ns (seconds), got '{window}'") from None


def _scaling(text: str, default: tuple[int, ...], worker_speed: bool) -> tuple[int, ...]:
    """--scaling: 'default' (none with --worker-speed, whose factors fit one n), 'none' or counts."""
    if text == "default":
        return () if worker_speed else default
    if text == "none":
        return ()
    return tuple(clikit.int_list("scaling", text))


def _rates(text: str | None) -> tuple[float, ...] | None:
    return None if text is None else tuple(clikit.float_list("rates", text))


#: the replays of every grouping strategy whose kernel calls ``python -m skewbench.aot`` compiles
#: ahead of time, before the strategies' own parameter settings: (dataset, further arguments);
#: "zipf" has no cost column, "costs" has one and Poisson arrivals, "numeric" is a trace of int64
#: keys (skewbench.aot builds the three); a small capacity sweep (its queues at a steady rate
#: with --objective-ms) where the cells' kernels take the same types, none on the largest
#: replay
AOT_BASE = (
    ("zipf", ("--workers", "5,50", "--sources", "1,5", "--scaling", "none")),
    ("numeric", ("--workers", "5", "--sources", "2", "--metrics", "balance", "--scaling", "1,8")),
    ("costs", ("--workers", "5", "--sources", "1", "--provisioning", "100", "--scaling", "2",
               "--rates", "100", "--objective-ms", "50")),
    ("costs", ("--workers", "5", "--sources", "2", "--window", "0.5s",
               "--worker-speed", "0:1.1,1,1,1,0.9;5000:0.9,1,1,1,1.1")),
)


def aot_replays() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """:data:`AOT_BASE`, each replay with the ``--param`` settings every strategy asks for on its
    dataset (:attr:`skewbench.grouping.base.Strategy.aot_params`: short learning phases and
    windows reach the kernels a strategy calls after them), strategies in the registry's order."""
    wanted = registry.per_strategy("grouping", "aot_params", {})
    out = []
    for dataset, args in AOT_BASE:
        params = [f"{name}.{setting}" for name, by_dataset in wanted.items() for setting in by_dataset.get(dataset, ())]
        out.append((dataset, args + tuple(a for p in params for a in ("--param", p))))
    return tuple(out)


def __getattr__(name: str) -> object:
    """``AOT_REPLAYS`` (what :mod:`skewbench.aot` reads of every family's ``cli``) is
    :func:`aot_replays`, derived when asked for: it loads every strategy class."""
    if name == "AOT_REPLAYS":
        return aot_replays()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@click.command("grouping")
@clikit.replay_options("grouping", ",".join(DEFAULT_STRATEGIES))
@click.option("--workers", default="5,10,50,100", show_default=True, help="Comma-separated worker counts n.")
@click.option("--sources", default="5", show_default=True,
              help="Comma-separated source counts s (single-scheduler strategies such as osg use 1).")
@click.option("--window", default=None, help="Metrics window: N tuples, or Ns seconds of dataset time "
              "(default: 100 equal windows).")
@click.option("--provisioning", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Replace arrival times by deterministic arrivals for which the workers' capacity is P "
                   "percent of the arrival rate (over-provisioning, osg.spec.md 4.3: 100 = critical load, "
                   "below 100 overloaded, above 100 spare capacity). Default: the dataset's times.")
@click.option("--worker-speed", default=None, metavar="START:F1,...[;START:...]",
              help="Per-worker execution-time factors by stream index, e.g. "
                   "'0:1.05,1.025,1,0.975,0.95;75000:0.9,0.95,1,1.05,1.1'.")
@click.option("--metrics", "metrics", type=click.Choice(["all", "balance"]), default="all", show_default=True,
              help="'balance': route and count only (imbalance, memory, the strategies' statistics), without "
                   "simulating the worker queues; every completion-time column is then null.  Several times "
                   "faster for the cheap strategies; what the D-Choices authors' simulator computes.")
@click.option("--scaling", default="default", show_default=True, metavar="N1,N2,...|default|none",
              help="The capacity sweep's worker counts (with --workers'): every strategy setting is also replayed "
                   "at each, counting busy time only, for its capacity curve, skew ceiling and demand. 'default': "
                   "1, 2, 4, ..., 1024; 'none': no sweep.")
@click.option("--rates", default=None, metavar="R1,R2,...",
              help="The demand's target input rates, tuples/s (default: what 8 and 64 perfectly balanced workers "
                   "serve 70%% busy at the stream's mean cost).")
@click.option("--objective-ms", type=click.FloatRange(min=0, min_open=True), default=None,
              help="The demand's p99 completion-time objective, ms: the workers must also keep the p99 under it "
                   "at the rate (steady arrivals). Default: capacity alone.")
def command(dataset: str, strategies: str, seeds: int, seed_base: int, param_items: tuple[str, ...], out: str,
            overwrite: bool, engine: str, partitions: int | None, as_json: bool, workers: str, sources: str,
            window: str | None, provisioning: float | None, worker_speed: str | None, metrics: str, scaling: str,
            rates: str | None, objective_ms: float | None) -> None:
    """Replay DATASET through grouping strategies x workers x sources x parameters x seeds."""
    from skewbench.datasets.contract import open_dataset
    from skewbench.grouping.engine import DEFAULT_SCALING, ReplayConfig, check_sizes, grid, replay_to_dir
    from skewbench.replay import executor_for
    from skewbench.simulation import WorkerModel

    names = clikit.name_list("strategies", strategies)
    ds = open_dataset(dataset)
    if ds.tuples == 0:
        raise SkewbenchError(f"dataset {dataset} is empty: nothing to replay")
    w_tuples, w_seconds = _window(window)
    config = ReplayConfig(window=w_tuples, window_seconds=w_seconds, provisioning=provisioning,
                          worker_speed=_worker_speed(worker_speed), latency=metrics == "all",
                          scaling=_scaling(scaling, DEFAULT_SCALING, bool(worker_speed)), rates=_rates(rates),
                          objective_ms=objective_ms)
    config.check()
    check_sizes(ds, config, ())  # the windows alone, before the grid loads any strategy's kernels
    cells = grid(names, clikit.int_list("workers", workers), clikit.int_list("sources", sources),
                 list(range(seed_base, seed_base + seeds)), clikit.strategy_params(param_items))
    if config.worker_speed:
        for c in cells:
            WorkerModel.periods(c.workers, config.worker_speed)
    check_sizes(ds, config, cells)  # windows and per-key state, before any work
    executor = executor_for(engine, partitions)
    click.echo(f"replaying {ds.name} ({ds.tuples:,} tuples) through {len(cells)} cells on {engine}", err=True)
    replay_to_dir(dataset, cells, out, config, executor, overwrite=overwrite, engine_name=engine,
                  progress=lambda msg: click.echo(f"  {msg}", err=True))
    clikit.print_results(out, ds.name, ds.meta["fingerprint"], as_json, "grouping")
