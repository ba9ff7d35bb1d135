"""``skewbench replay shedding``: replay a dataset through shedding strategies x provisioning
(operator shedders) or workers (partition shedders) x parameters x seeds (also
``spark_jobs/replay.py shedding ...``)."""

from __future__ import annotations

import click

from skewbench import clikit
from skewbench.shedding import DEFAULT_STRATEGIES


def _provisioning(text: str) -> list[int]:
    from skewbench.errors import SkewbenchError
    from skewbench.shedding.params import PARAMS

    top = PARAMS["provisioning"]["items"]["maximum"]  # the nightly's bound, one source
    vals = clikit.float_list("provisioning", text)
    bad = [v for v in vals if not (1 <= v <= top and float(v).is_integer())]
    if bad:  # a capacity 10^300 times the arrival rate has no int, and no meaning
        raise SkewbenchError(f"--provisioning takes whole percentages in [1, {top:,}] (u = 1 - P/100), "
                             f"got {bad[0]:g}")
    return [int(v) for v in vals]


#: replays of every shedding strategy whose kernel calls ``python -m skewbench.aot`` compiles
#: ahead of time (see skewbench.grouping.cli.AOT_REPLAYS)
AOT_REPLAYS = (("costs", ("--skip-inapplicable",)),)


@click.command("shedding")
@clikit.replay_options("shedding", ",".join(DEFAULT_STRATEGIES))
@click.option("--provisioning", default="75", show_default=True,
              help="Operator shedders: the operator's capacity as a percentage of the arrival rate, comma-separated "
                   "(as grouping's --provisioning: 100 = critical load; under-provisioning u = 1 - P/100, so the "
                   "LAS paper's u = 25% is 75 and u = -10% is 110).")
@click.option("--bound", "bound", type=float, default=6.4, show_default=True,
              help="Operator shedders: tau, the bound on the running average queueing latency (ms).")
@click.option("--window", type=click.IntRange(min=1), default=4000, show_default=True,
              help="Operator shedders: arrivals per series window.")
@click.option("--workers", default="4", show_default=True, help="Partition shedders: worker counts V, comma-separated.")
@click.option("--range", "range_s", type=float, default=None,
              help="Partition shedders: window range in seconds of dataset time (default: the dataset's "
                   "metadata, else a tenth of its span).")
@click.option("--slide", "slide_s", type=float, default=None,
              help="Partition shedders: window slide in seconds (default: the dataset's, else half the range).")
@click.option("--error", type=float, default=0.1, show_default=True,
              help="Partition shedders: relative error budget of each group's average.")
@click.option("--confidence", type=float, default=0.95, show_default=True,
              help="Partition shedders: confidence of the error budget.")
@click.option("--skip-inapplicable", is_flag=True,
              help="Leave out, with a note, strategies the dataset cannot run (partition shedders need a value "
                   "column) instead of failing.")
def command(dataset: str, strategies: str, seeds: int, seed_base: int, param_items: tuple[str, ...], out: str,
            overwrite: bool, engine: str, partitions: int | None, as_json: bool, provisioning: str, bound: float,
            window: int, workers: str, range_s: float | None, slide_s: float | None, error: float, confidence: float,
            skip_inapplicable: bool) -> None:
    """Replay DATASET through shedding strategies: LAS and its baselines in front of one operator,
    ShedPart and Storm fields grouping on a windowed aggregation."""
    from skewbench import replay as shared
    from skewbench.datasets.contract import open_dataset
    from skewbench.errors import SkewbenchError
    from skewbench.shedding.engine import ShedConfig, check_series, check_windows, grid, inapplicable, replay

    names = clikit.name_list("strategies", strategies)
    ds = open_dataset(dataset)
    if ds.tuples == 0:
        raise SkewbenchError(f"dataset {dataset} is empty: nothing to replay")
    config = ShedConfig(bound_ms=bound, window=window, range_s=range_s, slide_s=slide_s, error=error,
                        confidence=confidence)
    config.check()
    from skewbench import registry

    for n in names:
        registry.get("shedding", n)
    reasons = {n: r for n in names if (r := inapplicable(n, ds.columns))}
    if reasons and not skip_inapplicable:
        first = next(iter(reasons.values()))
        raise SkewbenchError(f"dataset {ds.name or dataset}: {first} (or pass --skip-inapplicable)")
    for n, r in reasons.items():
        click.echo(f"note: skipping {r}", err=True)
    names = [n for n in names if n not in reasons]
    params = clikit.strategy_params(param_items)
    params = {k: v for k, v in params.items() if k not in reasons}
    cells = grid(names, _provisioning(provisioning), clikit.int_list("workers", workers),
                 list(range(seed_base, seed_base + seeds)), params)
    partition = sum(registry.get("shedding", c.strategy).kind == "partition" for c in cells)
    if partition:
        check_windows(ds, config, partition)  # a bad --range / --slide is refused before any work
    check_series(ds, config, len(cells) - partition)  # and a --window too short for the dataset
    executor = shared.executor_for(engine, partitions)
    if engine == "local":
        def executor(fn, items, description=""):  # noqa: F811 - the local executor with a progress bar
            out_items = []
            with clikit.bar(len(items), description, unit="cells") as update:
                for x in items:
                    out_items.append(fn(x))
                    update(1)
            return out_items
    click.echo(f"replaying {ds.name} ({ds.tuples:,} tuples) through {len(cells)} cells on {engine}", err=True)
    shared.replay_to_dir("shedding", dataset, cells, out, lambda scratch: replay(str(dataset), cells, config, executor),
                         config=config, overwrite=overwrite, engine_name=engine)
    clikit.print_results(out, ds.name, ds.meta["fingerprint"], as_json, "shedding")
