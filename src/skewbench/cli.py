"""The ``skewbench`` command line.

User errors (a missing file, a bad option, a bad catalog, a corrupted dataset) print one line,
``error: ...``, on standard error and exit with status 2; validation failures exit with 1.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import click

from skewbench import __version__
from skewbench.errors import SkewbenchError, ValidationFailed


@contextmanager
def _bar(total: int | None, desc: str, unit: str = "tuples") -> Iterator[Any]:
    """A progress bar on standard error (shown on terminals only); yields an ``update(n)``."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=True, file=sys.stderr, disable=None,
               leave=False, dynamic_ncols=True)
    try:
        yield bar.update
    finally:
        bar.close()


def _echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=None, default=str))


class _Group(click.Group):
    """Turns :class:`SkewbenchError` into one line on stderr and exit status 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ValidationFailed as e:
            click.echo(f"validation failed: {e}", err=True)
            ctx.exit(1)
        except SkewbenchError as e:
            click.echo(f"error: {e}", err=True)
            ctx.exit(2)
        except KeyboardInterrupt:
            click.echo("interrupted; nothing was left half-written", err=True)
            ctx.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="skewbench")
def main() -> None:
    """skewbench: benchmark load balancing (grouping, shedding, allocation) on skewed streams.

    Start with `skewbench datasets --help`.
    """


@main.group(cls=_Group)
def datasets() -> None:
    """Generate, ingest, validate and describe stream datasets.

    A dataset is a directory of Parquet parts (columns seq, ts, key and optionally cost, value)
    with metadata in _skewbench.json; see docs/datasets.md for the contract.
    """


@datasets.group(cls=_Group)
def generate() -> None:
    """Generate synthetic datasets (one Zipf stream, or the catalog's entries)."""


def _engine_option(f: Any) -> Any:
    f = click.option("--partitions", type=click.IntRange(min=1), default=None,
                     help="Spark tasks to spread the blocks over (implies --engine spark). "
                          "The output is identical for any value.")(f)
    f = click.option("--engine", type=click.Choice(["local", "spark"]), default=None,
                     help="local: this process; spark: a Spark job (master from "
                          "SKEWBENCH_SPARK_MASTER, default local[*]). Default: spark when "
                          "--partitions is given, else local.")(f)
    return f


@generate.command("zipf")
@click.option("--alpha", type=click.FloatRange(min=0), required=True, help="Zipf exponent (0 = uniform).")
@click.option("--keys", type=click.IntRange(min=1), required=True, help="Number of distinct keys n.")
@click.option("--tuples", type=click.IntRange(min=1), required=True, help="Stream length m.")
@click.option("--seed", type=click.IntRange(min=0, max=2**63 - 1), required=True, help="Random seed.")
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), default=1000.0, show_default=True,
              help="Arrival rate, tuples per second.")
@click.option("--arrivals", type=click.Choice(["constant", "poisson"]), default="constant", show_default=True)
@click.option("--cost", "cost", default=None, metavar="MODEL",
              help="Execution time per key in ms: constant:V, uniform:LO:HI, levels:N:LO:HI "
                   "(N evenly spaced values, random key groups; OSG uses levels:64:1:64) or values:V1,V2,...")
@click.option("--cost-noise", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Per-tuple multiplicative noise sigma on the cost.")
@click.option("--out", "out", type=click.Path(file_okay=False), required=True, help="Output dataset directory.")
@click.option("--name", default=None, help="Dataset name recorded in the metadata (default: directory name).")
@click.option("--overwrite", is_flag=True, help="Replace an existing dataset at --out.")
@_engine_option
def generate_zipf(alpha: float, keys: int, tuples: int, seed: int, rate: float, arrivals: str,
                  cost: str | None, cost_noise: float, out: str, name: str | None, overwrite: bool,
                  engine: str | None, partitions: int | None) -> None:
    """Generate a finite-Zipf stream: p_k proportional to 1/k^alpha over k = 1..n."""
    from skewbench.datasets.generators import StreamSpec, parse_cost

    if cost_noise and cost is None:
        raise SkewbenchError("--cost-noise needs --cost")
    spec = StreamSpec.zipf(alpha, keys, tuples, seed, rate=rate, arrivals=arrivals,
                           cost=parse_cost(cost, cost_noise))
    meta = _generate(spec, out, name or Path(out).name, overwrite, engine, partitions)
    click.echo(f"wrote {meta['tuples']:,} tuples to {out} (fingerprint {meta['fingerprint']})")


def _generate(spec: Any, out: str, name: str, overwrite: bool, engine: str | None,
              partitions: int | None) -> dict[str, Any]:
    from skewbench.datasets.generators import generate as generate_local

    engine = engine or ("spark" if partitions else "local")
    if engine == "local":
        if partitions:
            raise SkewbenchError("--partitions needs --engine spark")
        with _bar(spec.tuples, name) as update:
            return generate_local(spec, out, name=name, overwrite=overwrite, progress=update)
    from skewbench.spark import generate_on_spark, get_spark

    spark = get_spark()
    with _bar(None, f"{name} (spark tasks)", unit="tasks") as update:
        return generate_on_spark(spark, spec, out, partitions=partitions, name=name,
                                 overwrite=overwrite, progress=update)


@generate.command("catalog")
@click.argument("names", nargs=-1)
@click.option("--root", type=click.Path(file_okay=False), required=True, help="Directory for the datasets.")
@click.option("--set", "set_name", default=None, help="A named set of the catalog (default, paper, ...). "
              "Default: every entry when no NAMES are given.")
@click.option("--catalog", "catalog_path", type=click.Path(dir_okay=False), default=None,
              help="Catalog file (default: datasets/catalog.yaml, or $SKEWBENCH_CATALOG).")
@click.option("--overwrite", is_flag=True, help="Regenerate even datasets that are up to date.")
@click.option("--validate/--no-validate", default=False, show_default=True,
              help="Validate each dataset with Great Expectations after writing it.")
@_engine_option
def generate_catalog(names: tuple[str, ...], root: str, set_name: str | None, catalog_path: str | None,
                     overwrite: bool, validate: bool, engine: str | None, partitions: int | None) -> None:
    """Generate catalog datasets into ROOT/NAME (synthetic ones on Spark by default).

    A dataset whose directory already holds the same parameters is kept ("up to date"). Trace
    entries are ingested in this process; an optional trace whose input is absent is skipped.
    """
    from skewbench.datasets.catalog import load_catalog
    from skewbench.datasets.pipeline import materialize

    cat = load_catalog(catalog_path)
    entries = cat.select(list(names) or None, set_name)
    engine = engine or "spark"
    failures = 0
    for e in entries:
        status = materialize(e, Path(root), overwrite=overwrite, engine=engine, partitions=partitions,
                             validate=validate, bar=_bar)
        click.echo(f"{e.name:28s} {status['status']:10s} {status['validation'] or '':7s} {status['detail']}")
        failures += status["validation"] == "failed"
    if failures:
        raise ValidationFailed(f"{failures} dataset(s) failed validation")


@datasets.command("catalog")
@click.option("--catalog", "catalog_path", type=click.Path(dir_okay=False), default=None,
              help="Catalog file (default: datasets/catalog.yaml, or $SKEWBENCH_CATALOG).")
@click.option("--set", "set_name", default=None, help="Only this named set.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def catalog_list(catalog_path: str | None, set_name: str | None, as_json: bool) -> None:
    """List (and validate) the catalog's datasets."""
    from skewbench.datasets.catalog import load_catalog

    cat = load_catalog(catalog_path)
    entries = cat.select(None, set_name)
    if as_json:
        _echo_json({"catalog": str(cat.path), "datasets": [
            {"name": e.name, "kind": e.kind, "sets": e.sets, "available": e.available, "params": e.params()}
            for e in entries]})
        return
    for e in entries:
        avail = "" if e.available else "  [input absent]"
        click.echo(f"{e.name:28s} {','.join(e.sets):10s} {e.describe()}{avail}")


@datasets.command("ingest")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(["slashdot", "google-cluster", "debs2015", "apache-log", "csv"]))
@click.argument("inputs", nargs=-1, required=True, type=click.Path())
@click.option("--out", "out", type=click.Path(file_okay=False), required=True, help="Output dataset directory.")
@click.option("--key", "key", default=None, help="Which natural key: slashdot source|target; google-cluster "
              "job|scheduling-class; debs2015 route|medallion; apache-log path|client.")
@click.option("--key-column", default=None, help="csv/Parquet: the key column (required for csv).")
@click.option("--time-column", default=None, help="csv/Parquet: numeric time column (default: row order).")
@click.option("--time-unit", type=float, default=None, help="csv/Parquet: seconds per unit of --time-column.")
@click.option("--cost-column", default=None, help="csv/Parquet: execution time column (ms, > 0).")
@click.option("--value-column", default=None, help="csv/Parquet: numeric payload column.")
@click.option("--max-malformed", type=click.FloatRange(0, 1), default=0.001, show_default=True,
              help="Largest fraction of malformed lines tolerated; above it ingestion fails.")
@click.option("--name", default=None, help="Dataset name recorded in the metadata.")
@click.option("--overwrite", is_flag=True, help="Replace an existing dataset at --out.")
def ingest_cmd(fmt: str, inputs: tuple[str, ...], out: str, key: str | None, key_column: str | None,
               time_column: str | None, time_unit: float | None, cost_column: str | None,
               value_column: str | None, max_malformed: float, name: str | None, overwrite: bool) -> None:
    """Ingest a real trace (INPUTS in order; gzip allowed) into the dataset contract."""
    from skewbench.datasets.traces import ingest

    with _bar(None, f"ingest {fmt}", unit="B") as update:
        meta = ingest(fmt, list(inputs), out, key=key, key_column=key_column, time_column=time_column,
                      time_unit=time_unit, cost_column=cost_column, value_column=value_column,
                      max_malformed=max_malformed, overwrite=overwrite, name=name or Path(out).name,
                      progress=update)
    rep = meta.get("ingest", {})
    click.echo(f"wrote {meta['tuples']:,} tuples, {meta['n_keys']:,} keys to {out} "
               f"({rep.get('malformed', 0)} malformed lines; fingerprint {meta['fingerprint']})")


@datasets.command("validate")
@click.argument("directory", type=click.Path())
@click.option("--engine", type=click.Choice(["auto", "pandas", "spark"]), default="auto", show_default=True,
              help="auto: pandas up to 20M tuples, Spark above.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def validate_cmd(directory: str, engine: str, as_json: bool) -> None:
    """Validate a dataset against the contract with Great Expectations; exit 1 on failure."""
    from skewbench.validation import validate_dataset

    report = validate_dataset(directory, engine=engine)
    if as_json:
        d = report.to_dict()
        d.pop("ge_result", None)
        _echo_json(d)
    if not report.success:
        report.raise_for_failure()
    if not as_json:
        click.echo(f"{report.dataset}: valid ({report.engine})")


@datasets.command("describe")
@click.argument("directory", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout (tuples, keys, "
              "distinct_keys, p1, entropy_bits, top_keys, fingerprint, ...).")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="How many top keys.")
def describe_cmd(directory: str, as_json: bool, top: int) -> None:
    """Describe a dataset: size, skew (p1, entropy), top keys, time span, costs."""
    from skewbench.datasets.contract import open_dataset
    from skewbench.datasets.describe import describe, format_description

    ds = open_dataset(directory)
    with _bar(ds.tuples, f"describe {ds.name}") as update:
        d = describe(ds, top=top, progress=update)
    click.echo(json.dumps(d, default=str) if as_json else format_description(d))


def _int_list(name: str, text: str) -> list[int]:
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise SkewbenchError(f"--{name} takes comma-separated integers, got '{text}'") from None
    if not vals:
        raise SkewbenchError(f"--{name} needs at least one value")
    return vals


def _param_value(text: str) -> Any:
    t = text.strip()
    for conv in (int, float):
        try:
            return conv(t)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(t.lower(), t)


def _params(items: tuple[str, ...]) -> dict[str, dict[str, list[Any]]]:
    out: dict[str, dict[str, list[Any]]] = {}
    for item in items:
        name, eq, values = item.partition("=")
        strat, dot, param = name.partition(".")
        if not eq or not dot or not values:
            raise SkewbenchError(f"--param takes STRATEGY.PARAM=V1[,V2...], got '{item}'")
        out.setdefault(strat.strip(), {})[param.strip()] = [_param_value(v) for v in values.split(",")]
    return out


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


@main.group(cls=_Group)
def replay() -> None:
    """Replay a dataset through the strategies of a family and record their metrics."""


@replay.command("grouping")
@click.option("--dataset", "dataset", type=click.Path(), required=True, help="Dataset directory.")
@click.option("--strategies", default="kg,sg,pkg,dc,wc,rr,osg", show_default=True,
              help="Comma-separated strategy names (see `skewbench replay strategies`).")
@click.option("--workers", default="5,10,50,100", show_default=True, help="Comma-separated worker counts n.")
@click.option("--sources", default="5", show_default=True,
              help="Comma-separated source counts s (single-scheduler strategies such as osg use 1).")
@click.option("--seeds", type=click.IntRange(min=1), default=1, show_default=True,
              help="Replay each cell with this many independent hash seeds.")
@click.option("--seed-base", type=click.IntRange(min=0), default=0, show_default=True,
              help="First hash seed (seeds are BASE..BASE+K-1).")
@click.option("--param", "param_items", multiple=True, metavar="STRATEGY.PARAM=V1[,V2]",
              help="A strategy parameter (several values add a grid axis); repeatable.")
@click.option("--window", default=None, help="Metrics window: N tuples, or Ns seconds of dataset time "
              "(default: 100 equal windows).")
@click.option("--provisioning", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Replace arrival times by deterministic arrivals at P percent of capacity "
                   "(100 = critical load; osg.spec.md 4.3). Default: the dataset's times.")
@click.option("--worker-speed", default=None, metavar="START:F1,...[;START:...]",
              help="Per-worker execution-time factors by stream index, e.g. "
                   "'0:1.05,1.025,1,0.975,0.95;75000:0.9,0.95,1,1.05,1.1'.")
@click.option("--out", "out", type=click.Path(file_okay=False), required=True, help="Results directory.")
@click.option("--overwrite", is_flag=True, help="Replace existing results at --out.")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="local: in this process; spark: tasks on Spark (SKEWBENCH_SPARK_MASTER). Same results.")
@click.option("--partitions", type=click.IntRange(min=1), default=None,
              help="Spark tasks per stage (default: twice the default parallelism). Results do not depend on it.")
@click.option("--queue-groups", type=click.IntRange(min=1), default=1, show_default=True,
              help="Queue-simulation tasks per cell (workers split into groups).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary rows as one JSON object.")
def replay_grouping(dataset: str, strategies: str, workers: str, sources: str, seeds: int, seed_base: int,
                    param_items: tuple[str, ...], window: str | None, provisioning: float | None,
                    worker_speed: str | None, out: str, overwrite: bool, engine: str, partitions: int | None,
                    queue_groups: int, as_json: bool) -> None:
    """Replay DATASET through grouping strategies x workers x sources x parameters x seeds."""
    from skewbench.datasets.contract import open_dataset
    from skewbench.grouping.engine import ReplayConfig, grid, local_executor, replay_to_dir
    from skewbench.results import TIMING_COLUMNS, read_results

    names = [s.strip() for s in strategies.split(",") if s.strip()]
    if not names:
        raise SkewbenchError("--strategies needs at least one name")
    ds = open_dataset(dataset)
    if ds.tuples == 0:
        raise SkewbenchError(f"dataset {dataset} is empty: nothing to replay")
    w_seconds = w_tuples = None
    if window:
        try:
            if window.endswith("s"):
                w_seconds = float(window[:-1])
            else:
                w_tuples = int(window)
        except ValueError:
            raise SkewbenchError(f"--window takes N (tuples) or Ns (seconds), got '{window}'") from None
    config = ReplayConfig(window=w_tuples, window_seconds=w_seconds, provisioning=provisioning,
                          worker_speed=_worker_speed(worker_speed), queue_groups=queue_groups)
    config.check()
    cells = grid(names, _int_list("workers", workers), _int_list("sources", sources),
                 list(range(seed_base, seed_base + seeds)), _params(param_items))
    if config.worker_speed:
        for c in cells:
            from skewbench.grouping.base import WorkerModel

            WorkerModel.periods(c.workers, config.worker_speed)
    executor = local_executor
    if engine == "spark":
        from skewbench.spark import get_spark, spark_executor

        executor = spark_executor(get_spark(), partitions)
    click.echo(f"replaying {ds.name} ({ds.tuples:,} tuples) through {len(cells)} cells on {engine}", err=True)
    replay_to_dir(dataset, cells, out, config, executor, overwrite=overwrite, engine_name=engine,
                  progress=lambda msg: click.echo(f"  {msg}", err=True))
    manifest, summary, _ = read_results(out)
    rows = summary.to_pylist()
    if as_json:
        _echo_json({"dataset": ds.name, "fingerprint": ds.meta["fingerprint"], "out": str(out),
                    "summary": rows})
        return
    click.echo(f"{'strategy':10s} {'n':>4s} {'s':>3s} {'seed':>4s} {'imbalance':>11s} {'lat mean':>10s} "
               f"{'lat p99':>10s} {'speedup':>8s} {'replic.':>8s}")
    for r in rows:
        click.echo(f"{r['strategy']:10s} {r['workers']:4d} {r['sources']:3d} {r['seed']:4d} {r['imbalance']:11.3e} "
                   f"{r['latency_mean']:10.3f} {r['latency_p99']:10.3f} {r['speedup_vs_rr']:8.3f} "
                   f"{r['replication']:8.3f}")
    click.echo(f"results in {out} (summary.parquet, series.parquet)")


@replay.command("strategies")
def replay_strategies() -> None:
    """List the registered strategies and their parameters."""
    from skewbench.grouping import registry

    for name in registry.names():
        cls = registry.get(name)
        params = ", ".join(f"{k}={v}" for k, v in cls.defaults.items()) or "-"
        click.echo(f"{name:10s} {cls.description}  [{params}]")


if __name__ == "__main__":  # pragma: no cover
    main()
