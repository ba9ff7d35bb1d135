"""``skewbench replay allocation`` (every strategy on every instance of a job-graph dataset, against
the exact optimum) and ``skewbench datasets generate allocation`` (the paper's instance sets)."""

from __future__ import annotations

import json

import click

from skewbench import clikit
from skewbench.allocation import DEFAULT_STRATEGIES

_SETS = ("e1", "e2", "e3", "e4", "e5", "e6-twitter", "e6-stock", "grouping-replay")


@click.command("allocation")
@clikit.replay_options("allocation", ",".join(DEFAULT_STRATEGIES))
@click.option("--optimum", type=click.Choice(["auto", "off"]), default="auto", show_default=True,
              help="auto: solve every instance's exact optimum (up to --opt-max-tasks tasks) for the optimality "
                   "ratios; off: none.")
@click.option("--opt-time-limit", type=float, default=60.0, show_default=True,
              help="Seconds per instance for the reference optimum, a safety net (where it is hit depends on "
                   "the machine); when hit, its bound and gap are kept.")
@click.option("--opt-node-limit", type=click.IntRange(min=1), default=20000, show_default=True,
              help="HiGHS branch-and-bound nodes per instance for the reference optimum (reproducible on "
                   "any machine); when hit, its bound and gap are kept.")
@click.option("--opt-max-tasks", type=click.IntRange(min=1), default=200, show_default=True,
              help="Largest instance (tasks) whose optimum is solved.")
@click.option("--min-time", type=float, default=0.002, show_default=True,
              help="Repeat each heuristic's invocation for at least this many seconds to time one call.")
@click.option("--chunk", type=click.IntRange(min=1), default=50, show_default=True,
              help="Instances per task (Spark) or per progress step.")
def command(dataset: str, strategies: str, seeds: int, seed_base: int, param_items: tuple[str, ...], out: str,
            overwrite: bool, engine: str, partitions: int | None, as_json: bool, optimum: str,
            opt_time_limit: float, opt_node_limit: int, opt_max_tasks: int, min_time: float, chunk: int) -> None:
    """Allocate every job graph of DATASET with allocation strategies (TD, TL, Storm, OPT, METIS, ...)
    and compare each with the exact optimum."""
    from skewbench import replay as shared
    from skewbench.allocation.engine import AllocConfig, grid, replay
    from skewbench.allocation.store import read_jobs
    from skewbench.datasets.contract import open_dataset
    from skewbench.results import read_results

    names = clikit.name_list("strategies", strategies)
    ds = open_dataset(dataset)
    read_jobs(ds, [0])  # a stream dataset fails here, with what to do instead
    config = AllocConfig(optimum=optimum, opt_time_limit=opt_time_limit, opt_node_limit=opt_node_limit,
                         opt_max_tasks=opt_max_tasks,
                         min_time=min_time, chunk=chunk)
    config.check()
    cells = grid(names, list(range(seed_base, seed_base + seeds)), clikit.strategy_params(param_items))
    executor = shared.executor_for(engine, partitions)
    if engine == "local":
        def executor(fn, items, description=""):  # noqa: F811 - the local executor with a progress bar
            out_items = []
            with clikit.bar(sum(len(x) for x in items), description, unit="instances") as update:
                for x in items:
                    out_items.append(fn(x))
                    update(len(x))
            return out_items
    n = int(ds.meta["job_graph"]["instances"])
    shared.refuse_series(n, len(cells), f"{n:,} instances", "fewer strategies, parameter values or seeds")
    click.echo(f"allocating {ds.name} ({n:,} instances, {ds.tuples:,} tasks) with {len(cells)} cells on {engine}",
               err=True)
    shared.replay_to_dir("allocation", dataset, cells, out, lambda scratch: replay(str(dataset), cells, config, executor),
                         config=config, overwrite=overwrite, engine_name=engine)
    if as_json:
        _, summary, series = read_results(out)
        rows = [{k: r[k] for k in ("strategy", "seed", "instance", "gain", "optimality", "violations", "seconds",
                                   "opt_status", "local_fraction", "success", "cell_id")}
                for r in series.to_pylist()]
        clikit.echo_json({"dataset": ds.name, "fingerprint": ds.meta["fingerprint"], "out": str(out),
                          "summary": summary.to_pylist(), "instances": rows})
        return
    clikit.print_results(out, ds.name, ds.meta["fingerprint"], False, "allocation")


@click.command("allocation")
@click.argument("set_name", metavar="SET", type=click.Choice(_SETS))
@click.option("--out", "out", type=click.Path(file_okay=False), required=True, help="Output dataset directory.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Generator seed.")
@click.option("--param", "param_items", multiple=True, metavar="NAME=VALUE",
              help="A generator parameter (JSON value), e.g. count=200 or eta=0; repeatable.")
@click.option("--name", default=None, help="Dataset name recorded in the metadata.")
@click.option("--overwrite", is_flag=True, help="Replace an existing dataset at --out.")
def generate(set_name: str, out: str, seed: int, param_items: tuple[str, ...], name: str | None,
             overwrite: bool) -> None:
    """Generate one of the paper's allocation instance sets as a job-graph dataset.

    SET: e1 (Example 2), e2 (priority study), e3 (task-count asymmetry), e4 (throughput pipeline),
    e5 (2,000 random 17-task graphs), e6-twitter / e6-stock (real-workload proxies over a capacity
    sweep), grouping-replay (job graphs from a grouping replay of a Zipf stream).
    """
    from pathlib import Path

    from skewbench.allocation import workloads
    from skewbench.errors import SkewbenchError

    params: dict = {}
    for item in param_items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise SkewbenchError(f"--param takes NAME=VALUE, got {item!r}")
        try:
            params[key] = json.loads(text)
        except ValueError:
            params[key] = text
        except RecursionError:  # brackets nested thousands deep
            raise SkewbenchError(f"--param {key}: its JSON value nests too deeply") from None
    fn = workloads.grouping_replay if set_name == "grouping-replay" else workloads.paper_set
    if set_name != "grouping-replay":
        params = {"set": set_name, **params}
    with clikit.bar(None, f"generate {set_name}", unit="instances") as update:
        meta = fn(out, params=params, seed=seed, inputs=[], name=name or Path(out).name, overwrite=overwrite,
                  progress=update)
    click.echo(f"wrote {meta['job_graph']['instances']:,} instances ({meta['tuples']:,} tasks) to {out} "
               f"(fingerprint {meta['fingerprint']})")
