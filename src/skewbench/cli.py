"""The ``skewbench`` command line.

User errors (a missing file, a bad option, a bad catalog, a corrupted dataset) print one line,
``error: ...``, on standard error and exit with status 2; validation failures exit with 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from skewbench import __version__, clikit
from skewbench.clikit import bar as _bar
from skewbench.clikit import echo_json as _echo_json
from skewbench.errors import SkewbenchError, ValidationFailed

_Group = clikit.Group


class _Main(clikit.Group):
    """The top-level group: its own commands, and the commands of modules above the strategy
    families (they import a family package, which this generic module never does), loaded by
    name when used, as the families' own commands are."""

    LAZY = {"advise": "skewbench.advise.cli:command", "live": "skewbench.live.cli:command",
            "live-windows": "skewbench.live.cli:windows_command"}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.LAZY))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        cmd = super().get_command(ctx, name)
        if cmd is not None or name not in self.LAZY:
            return cmd
        import importlib

        module, _, attr = self.LAZY[name].partition(":")
        return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="skewbench")
def main() -> None:
    """skewbench: benchmark load balancing (grouping, shedding, allocation) on skewed streams.

    Your own keys on Kafka, Flink or Spark: `skewbench advise KEYS --workers 8,32,100`.
    The benchmark: start with `skewbench datasets --help`, then `skewbench strategies` and
    `skewbench replay --help`.
    """


@main.group(cls=_Group)
def datasets() -> None:
    """Generate, ingest, validate and describe stream datasets.

    A dataset is a directory of Parquet parts (columns seq, ts, key and optionally cost, value)
    with metadata in _skewbench.json; see docs/datasets.md for the contract.
    """


class _Generate(clikit.Group):
    """``skewbench datasets generate``: the built-in commands, and one per family that has its own
    instance sets (a ``generate`` command in the family's ``cli`` module), loaded when used."""

    def _family_names(self) -> list[str]:
        from skewbench.families import families

        return [n for n, f in families().items() if getattr(f.module(), "GENERATES", False)]

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._family_names()))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        cmd = super().get_command(ctx, name)
        if cmd is not None or name not in self._family_names():
            return cmd
        from skewbench.families import get

        return get(name).attr("cli", "generate")


@datasets.group(cls=_Generate)
def generate() -> None:
    """Generate synthetic datasets (one Zipf stream, a family's instance sets, or the catalog's entries)."""


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
    from skewbench.materialize import materialize

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


_TRACE_FORMATS = ["slashdot", "google-cluster", "debs2015", "apache-log", "csv"]


def _family_formats() -> dict[str, str]:
    """Dataset formats the families ingest themselves (their package's ``INGEST``: format -> "module:function")."""
    from skewbench.families import families

    out: dict[str, str] = {}
    for f in families().values():
        out.update(getattr(f.module(), "INGEST", {}) or {})
    return out


class _Formats(click.Choice):
    """The trace formats and the families' own, read when the command runs (not at import)."""

    def __init__(self) -> None:
        super().__init__(_TRACE_FORMATS)

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        self.choices = [*_TRACE_FORMATS, *_family_formats()]
        return super().convert(value, param, ctx)


@datasets.command("ingest")
@click.argument("fmt", metavar="FORMAT", type=_Formats())
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
    """Ingest a real trace (INPUTS in order; gzip allowed) into the dataset contract.

    FORMAT is a trace format (slashdot, google-cluster, debs2015, apache-log, csv) or one a
    family reads (job-graph: a JSON job graph for the allocation family; see docs/datasets.md).
    """
    from skewbench.datasets.traces import ingest

    if fmt in (own := _family_formats()):
        import importlib

        module, _, func = own[fmt].partition(":")
        with _bar(None, f"ingest {fmt}") as update:
            meta = getattr(importlib.import_module(module), func)(list(inputs), out, name=name or Path(out).name, overwrite=overwrite,
                                         progress=update)
        click.echo(f"wrote {meta['tuples']:,} rows to {out} (fingerprint {meta['fingerprint']})")
        return
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
    from skewbench.validation.datasets import validate_dataset

    report = validate_dataset(directory, engine=engine)
    _verdict(report, as_json, f"{report.dataset}: valid ({report.engine})")


def _verdict(report: Any, as_json: bool, ok_text: str) -> None:
    """A validation report on stdout (JSON, or one line when valid); raises when it failed."""
    if as_json:
        d = report.to_dict()
        d.pop("ge_result", None)
        _echo_json(d)
    if not report.success:
        report.raise_for_failure()
    if not as_json:
        click.echo(ok_text)


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


class _Families(clikit.Group):
    """``skewbench replay <family>``: one subcommand per family, loaded when used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from skewbench.families import families

        return list(families())

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        from skewbench.families import get

        try:
            fam = get(name)
        except SkewbenchError:
            return None
        return fam.attr("cli", "command")


@main.group(cls=_Families)
def replay() -> None:
    """Replay a dataset through the strategies of a family and record their metrics.

    Each family is a subcommand (`skewbench replay FAMILY --help`); results go to a results
    directory (docs/results.md).
    """


@main.command("strategies")
@click.option("--family", "family", default=None, help="Only this family.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def strategies_cmd(family: str | None, as_json: bool) -> None:
    """List every strategy of every family with its parameters and their defaults."""
    from skewbench import registry
    from skewbench.families import families, get

    fams = [get(family)] if family else list(families().values())
    out = {f.name: [registry.describe(f.name, n) for n in registry.names(f.name)] for f in fams}
    if as_json:
        clikit.echo_json(out)
        return
    for fam, rows in out.items():
        click.echo(f"{fam}: {get(fam).description}")
        for d in rows:
            click.echo(f"  {d['name']:10s} {d['description']}")
            for p in d["params"]:
                doc = f"  {p['doc']}" if p["doc"] else ""
                click.echo(f"      {p['name']} = {p['default']!r}{doc}")
        click.echo("")


@main.group(cls=_Group)
def cluster() -> None:
    """A Spark standalone cluster on 127.0.0.1 (a master and workers) from the installed pyspark.

    `make cluster` starts it and prints the SKEWBENCH_SPARK_MASTER to export; `make cluster-stop`
    stops it. State and logs: <state>/cluster/.
    """


def _cluster_dir() -> Path:
    from skewbench.settings import settings

    return Path(settings().state) / "cluster"


@cluster.command("start")
@click.option("--workers", type=click.IntRange(min=1, max=64), default=2, show_default=True)
@click.option("--cores", type=click.IntRange(min=1, max=256), default=1, show_default=True,
              help="Cores per worker.")
@click.option("--memory", default="2g", show_default=True, help="Memory per worker (Spark's 512m, 2g, ...).")
@click.option("--port", type=click.IntRange(min=1, max=65535), default=7077, show_default=True,
              help="The master's port.")
@click.option("--webui-port", type=click.IntRange(min=1, max=65535), default=8088, show_default=True)
def cluster_start(workers: int, cores: int, memory: str, port: int, webui_port: int) -> None:
    """Start a master and WORKERS workers; return once all are registered."""
    from skewbench import cluster as _cluster

    cl = _cluster.start(_cluster_dir(), workers=workers, cores=cores, memory=memory, port=port,
                        webui_port=webui_port)
    click.echo(f"Spark master {cl.master_url} with {workers} worker(s) x {cores} core(s); web UI {cl.webui}")
    click.echo(f"logs: {_cluster_dir() / 'logs'}   use it with: export SKEWBENCH_SPARK_MASTER={cl.master_url}")


@cluster.command("stop")
def cluster_stop() -> None:
    """Stop the cluster started from this state directory (by process group)."""
    from skewbench import cluster as _cluster

    stopped = _cluster.stop(_cluster_dir())
    click.echo(f"stopped {', '.join(stopped)}" if stopped else "no cluster running from here")


@cluster.command("status")
@click.option("--json", "as_json", is_flag=True, help="The master's status as one JSON object.")
def cluster_status(as_json: bool) -> None:
    """The master URL and its alive workers, cores and applications."""
    from skewbench import cluster as _cluster

    cl = _cluster.load(_cluster_dir())
    if cl is None:
        raise SkewbenchError("no cluster started from here (make cluster starts one)")
    try:
        st = cl.status()
    except OSError as e:
        raise SkewbenchError(f"the master at {cl.webui} does not answer ({e}); make cluster-stop cleans up")
    if as_json:
        _echo_json(st)
        return
    click.echo(f"{cl.master_url}: {st.get('aliveworkers')} worker(s) alive, {st.get('cores')} core(s), "
               f"{len(st.get('activeapps', []))} application(s) running; web UI {cl.webui}")


@main.group(cls=_Group)
def results() -> None:
    """Validate, report, log to MLflow and document replay results (docs/results.md)."""


@results.command("validate")
@click.argument("directory", type=click.Path())
@click.option("--keep", "keep_dir", type=click.Path(file_okay=False), default=None,
              help="Write Great Expectations' own results (JSON) into this directory.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def results_validate(directory: str, keep_dir: str | None, as_json: bool) -> None:
    """Validate a results directory with its family's Great Expectations suite; exit 1 on failure."""
    from skewbench.validation.results import validate_results

    report = validate_results(directory, keep_dir=keep_dir)
    _verdict(report, as_json, report.message())


@results.command("report")
@click.argument("directories", nargs=-1, required=True, type=click.Path())
@click.option("--out", "out", type=click.Path(dir_okay=False), required=True, help="The HTML report to write.")
@click.option("--title", default="skewbench results", show_default=True)
def results_report(directories: tuple[str, ...], out: str, title: str) -> None:
    """Write a self-contained HTML report (tables and each family's figures) of DIRECTORIES, and
    the overview across them (leaderboards, trade-off plots, what to pick) as overview.html
    beside it."""
    from skewbench.present.overview import render_overview
    from skewbench.present.reports import render_markdown_summary, render_report

    if Path(out).name == "overview.html":
        raise click.BadParameter("overview.html is the overview written beside the report: name the report "
                                 "otherwise", param_hint="--out")
    path = render_report(list(directories), out, title)
    overview = render_overview(list(directories), Path(out).with_name("overview.html"), f"{title}: overview")
    click.echo(render_markdown_summary(list(directories)))
    click.echo(f"report: {path}")
    click.echo(f"overview: {overview}")


@results.command("log")
@click.argument("directories", nargs=-1, required=True, type=click.Path())
@click.option("--run-key", required=True, help="Names the MLflow parent run; logging again with the same key "
              "updates the same runs.")
@click.option("--run-name", default=None, help="The parent run's name (default: the run key).")
def results_log(directories: tuple[str, ...], run_key: str, run_name: str | None) -> None:
    """Log results directories of one family, with their report, to MLflow ($SKEWBENCH_TRACKING_URI).
    Only results that passed `skewbench results validate` (as they are now) are logged."""
    from skewbench import nightly
    from skewbench.results import load_results

    fams = sorted({str(m.get("family")) for _, m, _, _ in load_results(list(directories))})
    if len(fams) != 1:
        raise SkewbenchError(f"log one family at a time (one MLflow experiment each); got {fams}")
    logged = nightly.log_results(list(directories), fams[0], run_key, run_name or run_key, {})
    click.echo(f"MLflow parent run {logged['parent_run_id']} (experiment {logged['experiment_id']}), "
               f"{len(logged['children'])} cell run(s); report: {logged['report']}")


@results.command("doc")
@click.option("--out", "out", type=click.Path(dir_okay=False), default=None,
              help="Write here (default: standard output).")
def results_doc(out: str | None) -> None:
    """Render docs/results.md (every family's results tables) from the families' schemas."""
    from skewbench.results import render_docs

    text = render_docs()
    if out:
        Path(out).write_text(text)
    else:
        click.echo(text, nl=False)


@main.group(cls=_Group)
def site() -> None:
    """A static results site across nights, built from MLflow (docs/site.md)."""


@site.command("build")
@click.option("--out", "out", type=click.Path(file_okay=False), required=True,
              help="The site's directory (replaced as a whole when it holds an earlier site).")
@click.option("--tracking-uri", default=None, help="The MLflow store to read (default: $SKEWBENCH_TRACKING_URI, "
              "else the state directory's SQLite store).")
def site_build(out: str, tracking_uri: str | None) -> None:
    """Write the index of nights, a page per dataset and a page per strategy to OUT."""
    from skewbench.present.site import build_site

    path = build_site(out, tracking_uri, progress=lambda m: click.echo(m, err=True))
    click.echo(f"site: {path / 'index.html'}")


if __name__ == "__main__":  # pragma: no cover
    main()
