"""The results contract: what a replay writes, and every later stage (validation, MLflow, reports)
reads.

A results directory::

    OUT/
      _manifest.json     family, dataset (path, name, fingerprint), grid, configuration,
                         skewbench version, row counts; present only once the results are complete
      summary.parquet    one row per grid cell (strategy x coordinates x parameters x seed)
      series.parquet     one row per grid cell and metrics window

Both tables are written to a staging directory beside ``OUT`` and renamed into place, so a
failed or retried replay never leaves half a result.

A family describes its tables once, in its ``schema`` module: ``COORDINATES`` (the grid's axes
besides strategy and seed, e.g. ``("workers", "sources")``), ``COLUMNS`` (:class:`Column`: every
column that is not a metric), ``METRICS`` (:class:`Metric`: name, meaning, unit, direction,
bounds, windowed, log axis, ...) and the column order of each table (``SUMMARY``, ``SERIES``).
From that description come the Arrow schemas (:func:`schemas`), the Great Expectations bounds,
the report's labels, MLflow's series and ``docs/results.md`` (:func:`render_docs`).
``cell_id`` (16 hex digits) is a hash of the cell's strategy, coordinates, seed and parameters:
it names the cell across runs.

This module asks the families registry for a family's schema module by name; it imports no
family package.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from skewbench import __version__
from skewbench import families as _families
from skewbench.datasets.contract import read_parquet, replace_dir
from skewbench.errors import SkewbenchError

RESULTS_VERSION = 1
MANIFEST = "_manifest.json"
TABLES = ("summary", "series")
#: the validation's record in a results directory (:func:`write_validation`): whether the results
#: suite passed, for which content (:func:`results_digest`); logging reads it (:func:`check_validated`)
VALIDATION = "_validation.json"

_TYPES: dict[str, pa.DataType] = {
    "int64": pa.int64(), "float64": pa.float64(), "string": pa.string(),
    "list<int64>": pa.list_(pa.int64()), "list<float64>": pa.list_(pa.float64()),
}


@dataclass(frozen=True)
class Column:
    """A results column that is not a metric (a coordinate, a parameter, a list, JSON text)."""

    name: str
    dtype: str
    meaning: str
    table: str = "summary"  # "summary", "series" or "both"
    #: bounds checked by validation (None: unbounded), open when ``strict``
    bounds: tuple[float | None, float | None] = (None, None)
    strict: tuple[bool, bool] = (False, False)
    nullable: bool = False
    #: logged to MLflow as a param of the cell's run (not a metric)
    param: bool = False
    #: a pandas row condition under which the value may not be null (None: as ``nullable`` says)
    not_null_if: str | None = None
    #: a numeric list logged to MLflow as a step metric, its steps the entries of this other list
    #: column of the same row (a curve: e.g. capacity against workers)
    steps: str | None = None


@dataclass(frozen=True)
class Metric:
    """A measured quantity of a cell (summary) or of a cell's window (series).

    ``label`` is the short name of tables and axes, ``meaning`` one sentence; ``unit`` is shown
    after the label when not empty.  ``higher_is_better`` is None for descriptive quantities.
    ``bounds`` (``strict``: open) are checked by validation.  ``windowed`` series metrics are
    logged to MLflow per window (step = window index).  ``log_axis``: plot on a log scale.
    ``timing``: varies between runs on the same inputs (logged as ``time.<name>``, excluded from
    determinism checks).  ``headline``: a column of the report's summary table, formatted by
    ``fmt`` (``g``: 3 significant digits, ``fN``: N decimals).  ``not_null_if``: a pandas row
    condition under which the value may not be null (None: never null).  ``trend_tolerance``:
    (relative, absolute) tolerance of the nightly trend (:mod:`skewbench.trend`) for a summary
    metric that is deterministic but not bit-exact between runs (None: exact).  ``nullable``:
    the value may be null in any row.
    """

    name: str
    meaning: str
    unit: str = ""
    higher_is_better: bool | None = None
    bounds: tuple[float | None, float | None] = (None, None)
    strict: tuple[bool, bool] = (False, False)
    windowed: bool = False
    log_axis: bool = False
    table: str = "summary"
    dtype: str = "float64"
    label: str = ""
    timing: bool = False
    headline: bool = False
    fmt: str = "g"
    not_null_if: str | None = None
    trend_tolerance: tuple[float, float] | None = None
    #: may be null in any row (a value not always defined, e.g. a skew ceiling not reached)
    nullable: bool = False

    @property
    def header(self) -> str:
        label = self.label or self.name
        return f"{label} ({self.unit})" if self.unit else label


#: columns every family's summary carries (a family lists them in its own order)
COMMON_COLUMNS = (
    Column("cell_id", "string", "the cell's id: a hash of strategy, coordinates, seed and parameters", "both"),
    Column("dataset", "string", "the dataset's name (null for unnamed datasets)", nullable=True, param=True),
    Column("dataset_fingerprint", "string", "the replayed dataset's fingerprint", param=True),
    Column("strategy", "string", "the strategy's name in its family's table", "both"),
    Column("seed", "int64", "the hash seed of the cell", "both", bounds=(0, None)),
    Column("params", "string", "every strategy parameter as used (JSON object)"),
)


@dataclass(frozen=True)
class Schema:
    """A family's results description (from its ``schema`` module)."""

    family: str
    coordinates: tuple[str, ...]
    columns: dict[str, Column]
    metrics: dict[str, Metric]
    summary_order: tuple[str, ...]
    series_order: tuple[str, ...]
    run_name: str = ""

    def field(self, table: str, name: str) -> Column | Metric:
        m = self.metrics.get(f"{table}:{name}")
        return m if m is not None else self.columns[name]

    def order(self, table: str) -> tuple[str, ...]:
        return self.summary_order if table == "summary" else self.series_order

    def arrow(self, table: str) -> pa.Schema:
        return pa.schema([(n, _TYPES[self.field(table, n).dtype]) for n in self.order(table)])

    def table_metrics(self, table: str) -> list[Metric]:
        return [self.metrics[f"{table}:{n}"] for n in self.order(table) if f"{table}:{n}" in self.metrics]

    def fields(self, table: str) -> list[Column | Metric]:
        return [self.field(table, n) for n in self.order(table)]

    @property
    def timing_columns(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.table_metrics("summary") if m.timing)

    @property
    def windowed(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.table_metrics("series") if m.windowed)

    @property
    def curves(self) -> tuple[tuple[str, str], ...]:
        """(list column, its steps' list column) of the summary's curves (:attr:`Column.steps`)."""
        return tuple((n, self.columns[n].steps) for n in self.summary_order
                     if n in self.columns and self.columns[n].steps)

    @property
    def param_columns(self) -> tuple[str, ...]:
        """Summary columns logged as MLflow params: the cell's coordinates and descriptive columns."""
        fixed = ("strategy", *self.coordinates, "seed", "dataset", "dataset_fingerprint")
        extra = tuple(n for n in self.summary_order if n in self.columns and self.columns[n].param and n not in fixed)
        return fixed + extra

    def cell_name(self, row: Mapping[str, Any]) -> str:
        """A readable name of a cell's summary row (MLflow run names)."""
        fmt = self.run_name or ("{strategy} " + " ".join(f"{c}={{{c}}}" for c in self.coordinates) + " seed={seed}")
        return fmt.format(**row)

    @property
    def headline(self) -> list[Metric]:
        return [m for m in self.table_metrics("summary") if m.headline]


def build_schema(family: str, module: Any) -> Schema:
    """A :class:`Schema` from a family's ``schema`` module; checks that it is complete."""
    columns = {c.name: c for c in (*COMMON_COLUMNS, *getattr(module, "COLUMNS", ()))}
    metrics: dict[str, Metric] = {}
    for m in module.METRICS:
        key = f"{m.table}:{m.name}"
        if key in metrics:
            raise SkewbenchError(f"family '{family}': metric {key} described twice")
        metrics[key] = m
    summary, series = tuple(module.SUMMARY), tuple(module.SERIES)
    for table, order in (("summary", summary), ("series", series)):
        if len(set(order)) != len(order):
            raise SkewbenchError(f"family '{family}': a {table} column is listed twice")
        for n in order:
            if f"{table}:{n}" not in metrics and n not in columns:
                raise SkewbenchError(f"family '{family}': {table} column '{n}' is neither a Column nor a Metric")
    for key in metrics:
        table, _, n = key.partition(":")
        if n not in (summary if table == "summary" else series):
            raise SkewbenchError(f"family '{family}': metric {key} is not in its table's column order")
    coords = tuple(getattr(module, "COORDINATES", ()))
    for c in ("cell_id", "strategy", "seed", *coords):
        if c not in summary or c not in series:
            raise SkewbenchError(f"family '{family}': both tables need the column '{c}'")
    return Schema(family, coords, columns, metrics, summary, series, getattr(module, "RUN_NAME", ""))


_SCHEMAS: dict[str, Schema] = {}


def schema(family: str) -> Schema:
    """The results schema of ``family`` (from its ``schema`` module)."""
    if family not in _SCHEMAS:
        _SCHEMAS[family] = build_schema(family, _families.get(family).module("schema"))
    return _SCHEMAS[family]


def schemas(family: str) -> tuple[pa.Schema, pa.Schema]:
    """(summary, series) Arrow schemas of ``family``."""
    s = schema(family)
    return s.arrow("summary"), s.arrow("series")


def json_dict(text: Any) -> dict[str, Any]:
    """A JSON object column value (params, stats) as a dict; anything else, or malformed JSON, {}."""
    if isinstance(text, dict):
        return text
    if not isinstance(text, str) or not text:
        return {}
    try:
        v = json.loads(text)
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}


def _offsets(lengths: Sequence[int]) -> pa.Buffer:
    """Arrow's int32 offsets of variable-length values of these lengths."""
    import numpy as np

    out = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=out[1:])
    return pa.py_buffer(out)


def _column(values: Sequence[Any], type_: pa.DataType, name: str) -> pa.Array:
    """One column of rows as an Arrow array, built from buffers: ``pa.array`` and
    ``Table.from_pylist`` import pandas (0.35-0.5 s, most of what a short CLI replay spends
    writing its results).  Types: int64, double, string and lists of those, nulls allowed;
    an int64 column refuses a value that is not an integer, as ``from_pylist`` does."""
    import numpy as np

    n = len(values)
    valid = [v is not None for v in values]
    nulls = n - sum(valid)
    bitmap = None if nulls == 0 else pa.py_buffer(np.packbits(np.array(valid, dtype=np.bool_), bitorder="little"))
    if pa.types.is_list(type_):
        items = [list(v) if v is not None else [] for v in values]
        child = _column([x for v in items for x in v], type_.value_type, name)
        return pa.Array.from_buffers(type_, n, [bitmap, _offsets([len(v) for v in items])], null_count=nulls,
                                     children=[child])
    if pa.types.is_string(type_):
        data = [str(v).encode() if v is not None else b"" for v in values]
        return pa.Array.from_buffers(type_, n, [bitmap, _offsets([len(d) for d in data]), pa.py_buffer(b"".join(data))],
                                     null_count=nulls)
    if type_ == pa.int64():
        out = np.zeros(n, dtype=np.int64)
        for i, v in enumerate(values):
            if v is not None:
                if isinstance(v, str) or (isinstance(v, (float, np.floating)) and not float(v).is_integer()):
                    raise SkewbenchError(f"results column {name}: {v!r} is not an integer")
                out[i] = v
    elif type_ == pa.float64():
        out = np.array([0.0 if v is None else float(v) for v in values], dtype=np.float64)
    else:
        raise SkewbenchError(f"results column {name}: unsupported type {type_}")
    return pa.Array.from_buffers(type_, n, [bitmap, pa.py_buffer(out)], null_count=nulls)


def rows_table(rows: Sequence[Mapping[str, Any]], schema_: pa.Schema) -> pa.Table:
    """Rows (dicts; a missing key is a null) as a table of ``schema_``, without pandas."""
    return pa.Table.from_arrays([_column([r.get(f.name) for r in rows], f.type, f.name) for f in schema_],
                                schema=schema_)


def write_results(out_dir: str | os.PathLike, family: str, summary: Sequence[Mapping[str, Any]],
                  series: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any],
                  overwrite: bool = False) -> dict[str, Any]:
    """Write a results directory atomically; returns the manifest written."""
    _families.get(family)  # unknown families fail here
    out = Path(out_dir).absolute()
    if out.exists() and not overwrite:
        raise SkewbenchError(f"{out} already exists; pass --overwrite to replace it")
    s_schema, t_schema = schemas(family)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:12]}"
    tmp.mkdir()
    try:
        pq.write_table(rows_table(summary, s_schema), tmp / "summary.parquet")
        pq.write_table(rows_table(series, t_schema), tmp / "series.parquet")
        full = {"results_version": RESULTS_VERSION, "family": family, "created_by": f"skewbench {__version__}",
                **manifest, "summary_rows": len(summary), "series_rows": len(series)}
        (tmp / MANIFEST).write_text(json.dumps(full, indent=2, default=str) + "\n")
        replace_dir(tmp, out)
        return full
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def read_results(path: str | os.PathLike) -> tuple[dict[str, Any], pa.Table, pa.Table]:
    """Manifest, summary and series of a results directory; :class:`SkewbenchError` if incomplete."""
    p = Path(path)
    mp = p / MANIFEST
    if not mp.exists():
        raise SkewbenchError(f"{p} is not a complete skewbench results directory (no {MANIFEST})")
    try:
        manifest = json.loads(mp.read_text())
        return manifest, read_parquet(p / "summary.parquet", verify=False), read_parquet(p / "series.parquet", verify=False)
    except (OSError, ValueError, pa.ArrowException) as e:
        raise SkewbenchError(f"{p}: cannot read results: {e}") from None


def results_digest(path: str | os.PathLike) -> str:
    """SHA-256 of a results directory's content: its manifest and both tables, byte for byte."""
    import hashlib

    h = hashlib.sha256()
    for name in (MANIFEST, *(f"{t}.parquet" for t in TABLES)):
        try:
            data = (Path(path) / name).read_bytes()
        except OSError as e:
            raise SkewbenchError(f"{path}: cannot read results: {e}") from None
        h.update(name.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def write_validation(path: str | os.PathLike, success: bool, failures: int) -> None:
    """Record a validation's outcome in the results directory (atomically): passed or not, for the
    content it validated.  A directory that cannot be written keeps no record (and cannot be logged)."""
    p = Path(path)
    record = {"success": bool(success), "failures": int(failures), "digest": results_digest(p),
              "validated_by": f"skewbench {__version__}"}
    tmp = p / f".{VALIDATION}.tmp-{uuid.uuid4().hex[:12]}"
    try:
        tmp.write_text(json.dumps(record, indent=2) + "\n")
        os.replace(tmp, p / VALIDATION)
    except OSError:
        tmp.unlink(missing_ok=True)


def check_validated(path: str | os.PathLike, caller: str) -> None:
    """:class:`SkewbenchError` unless the results at ``path`` passed their validation, as they are now
    (the record's digest is the content's)."""
    p = Path(path)
    how = f"validate them first (skewbench results validate {p})"
    try:
        record = json.loads((p / VALIDATION).read_text())
    except FileNotFoundError:
        raise SkewbenchError(f"{caller}: {p} has not been validated: {how}") from None
    except (OSError, ValueError) as e:
        raise SkewbenchError(f"{caller}: {p}: unreadable validation record ({e}): {how}") from None
    if not isinstance(record, dict) or record.get("success") is not True:
        n = record.get("failures") if isinstance(record, dict) else None
        raise SkewbenchError(f"{caller}: {p} failed its validation ({n} failure(s)): it is not logged")
    if record.get("digest") != results_digest(p):
        raise SkewbenchError(f"{caller}: {p} changed after its validation passed: {how}")


def load_results(results_dirs: Sequence[str | os.PathLike] | str | os.PathLike
                 ) -> list[tuple[Path, dict, pa.Table, pa.Table]]:
    """(path, manifest, summary, series) of each results directory (one path or several)."""
    if isinstance(results_dirs, (str, os.PathLike)):
        results_dirs = [results_dirs]
    out = []
    for d in results_dirs:
        m, s, t = read_results(d)
        out.append((Path(d), m, s, t))
    if not out:
        raise SkewbenchError("no results directories given")
    return out


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("_") or "dataset"


def results_names(manifests: Sequence[Mapping[str, Any]]) -> list[str]:
    """A unique, path-safe name per results directory: the dataset's name, plus the family and
    then the fingerprint when needed to tell them apart (plots and artifacts go under it)."""
    def ds(m):
        return m.get("dataset") or {}

    names = [slug(ds(m).get("name") or "dataset") for m in manifests]
    for extra in (lambda m: m.get("family", ""), lambda m: str(ds(m).get("fingerprint", ""))[:12]):
        dup = {n for n in names if names.count(n) > 1}
        names = [f"{n}-{slug(extra(m))}" if n in dup else n for n, m in zip(names, manifests)]
    seen: dict[str, int] = {}
    unique = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        unique.append(n if seen[n] == 1 else f"{n}-{seen[n]}")
    return unique


# --------------------------------------------------------------------------------------------
# docs/results.md


def _bounds_text(f: Column | Metric) -> str:
    lo, hi = f.bounds
    if lo is None and hi is None:
        return ""
    left = "–∞" if lo is None else f"{lo:g}"
    right = "∞" if hi is None else f"{hi:g}"
    return f"{'(' if lo is None or f.strict[0] else '['}{left}, {right}{')' if hi is None or f.strict[1] else ']'}"


def render_docs(family_names: Sequence[str] | None = None) -> str:
    """``docs/results.md``: the results contract and every family's tables, from the schemas."""
    names = list(family_names or _families.families())
    out = ["# Results", "",
           "<!-- generated by `make docs` (`skewbench results doc`) from each family's schema module; do not edit -->", "",
           "A replay writes a results directory (`skewbench.results`):", "",
           "```", "OUT/",
           "  _manifest.json    family, dataset (path, name, fingerprint, tuples), grid cells, configuration,",
           "                    engine, skewbench version, row counts; written last (its presence = complete)",
           "  summary.parquet   one row per grid cell",
           "  series.parquet    one row per grid cell and metrics window", "```", "",
           "Both tables are written to a staging directory and renamed into place. `cell_id` is a hash of the "
           "cell's strategy, coordinates, seed and parameters, stable across runs. Columns marked *timing* vary "
           "between runs on the same inputs; every other value is bit-identical for the same dataset, grid and "
           "configuration, on any engine and parallelism. Bounds are checked by the Great Expectations suite "
           "of the results; *windowed* metrics are logged to MLflow per window (step = window index).", ""]
    for name in names:
        s = schema(name)
        fam = _families.get(name)
        notes = (fam.module("schema").__doc__ or "").strip()
        out += [f"## {name}", "", fam.description, "", *([notes, ""] if notes else []),
                f"Grid coordinates: strategy, {', '.join(s.coordinates) or '–'}, seed (and the strategy's "
                f"parameters).", ""]
        for table in TABLES:
            out += [f"### {table}.parquet", "",
                    "| column | type | meaning | unit | better | bounds | notes |",
                    "|---|---|---|---|---|---|---|"]
            for f in s.fields(table):
                if isinstance(f, Metric):
                    better = {True: "higher", False: "lower", None: ""}[f.higher_is_better]
                    notes = ", ".join(x for x, on in (("timing", f.timing), ("windowed", f.windowed),
                                                     ("log axis", f.log_axis), ("report table", f.headline)) if on)
                    out.append(f"| `{f.name}` | {f.dtype} | {f.meaning} | {f.unit} | {better} | "
                               f"{_bounds_text(f)} | {notes} |")
                else:
                    notes = "nullable" if f.nullable else ""
                    out.append(f"| `{f.name}` | {f.dtype} | {f.meaning} | | | {_bounds_text(f)} | {notes} |")
            out.append("")
    return "\n".join(out).rstrip() + "\n"
