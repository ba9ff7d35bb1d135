"""Great Expectations validation of replay results (see :mod:`skewbench.results`).

A results directory is small (one summary row per grid cell, one series row per cell and
window), so both tables are validated as pandas frames, each with its own suite, in an ephemeral
GE context.  As for datasets (:mod:`skewbench.validation`), rules that span several columns,
rows or list elements are turned into *derived columns* computed here, and the suites check
those with GE's built-in per-row expectations.

``summary`` (one row per cell), derived columns:

``load_sum_gap``
    ``sum(worker_tuples) - tuples``: the worker loads account for every replayed tuple (0).
``worker_tuples_count_gap``, ``worker_head_tuples_count_gap``
    valid (non-null) list entries minus ``workers`` (0).
``imbalance_excess``, ``imbalance_avg_excess``
    ``imbalance - (1 - 1/workers)``: never above the largest possible imbalance (<= 0).
``load_spread``
    ``load_max - load_min`` (>= 0).
``exec_to_latency``
    ``exec_mean / latency_mean``: completion time (queueing + execution) is never below
    execution time, so at most 1 (up to a relative float tolerance of 1e-9).
``latency_p50_minus_min``, ``latency_p95_minus_p50``, ``latency_p99_minus_p95``, ``latency_max_minus_p99``
    the quantiles are ordered (each >= 0).
``latency_cdf_points``, ``latency_cdf_min_step``
    finite points of ``latency_cdf`` (101) and its smallest step (>= 0: non-decreasing).

plus: the columns are the family's schema, in order, then every derived column (a derived
column is absent, and so reported, when its sources are missing or of the wrong type); one row
per manifest cell (row count, unique ``cell_id``, ``cell_id`` set equal to the manifest's); no
nulls (``dataset`` excepted: it is the dataset's optional catalog name, null for unnamed
datasets); ``tuples`` is the manifest's dataset size and ``dataset_fingerprint`` its
fingerprint; shares in [0, 1]; ``imbalance`` in [0, 1]; ``latency_min > 0``; ``replication >= 1``;
``speedup_vs_rr > 0``.

``series`` (one row per cell and window), derived columns (cells ordered by ``window``):

``window_index_gap``
    ``window`` minus the row's position within its cell: windows are 0, 1, 2, ... (0).
``window_range_gap``
    ``tuples - (seq_end - seq_start)`` (0).
``win_load_sum_gap``, ``cum_load_sum_gap``
    ``sum(worker_tuples_win) - tuples`` and ``sum(worker_tuples_cum)`` minus the cell's
    cumulative ``tuples`` up to the window (0).
``worker_tuples_cum_count_gap``, ``worker_tuples_win_count_gap``
    valid list entries minus ``workers`` (0).
``cell_tuples_gap``, ``cell_load_gap``
    on each cell's last window: the sum of the cell's window ``tuples``, and the sum of the last
    ``worker_tuples_cum``, minus the cell's summary ``tuples`` (the manifest's dataset size if
    the summary lacks the cell); 0 on every other row.
``imbalance_cum_excess``, ``imbalance_win_excess``
    as in the summary (<= 0).
``latency_p95_minus_p50``, ``latency_p99_minus_p95``, ``latency_max_minus_p99``
    ordered quantiles (>= 0).

plus: schema; the ``cell_id`` set equals the manifest's; ``(cell_id, window)`` unique; row count
as the manifest records; no nulls, except that the latency columns may be null (NaN) in windows
without tuples.

Failures are reported with :class:`skewbench.validation.ValidationReport` (this module's
:class:`ResultsValidationReport` only words the message for a results directory and names the
failing cells).  An unreadable or incomplete results directory raises
:class:`~skewbench.errors.SkewbenchError` before any expectation runs.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# skewbench.validation sets GX_ANALYTICS_ENABLED and quietens GE's loggers before importing GE
from skewbench.validation import ValidationReport, _failures, _fmt, _jsonable
import great_expectations as gx  # noqa: E402
import great_expectations.expectations as gxe  # noqa: E402

from skewbench.errors import SkewbenchError
from skewbench.results import MANIFEST, SCHEMAS, read_results

__all__ = ["CDF_POINTS", "FLOAT_TOL", "SERIES_DERIVED", "SUMMARY_DERIVED", "ResultsValidationReport",
           "build_series_suite", "build_summary_suite", "derive_series", "derive_summary",
           "validate_results"]

CDF_POINTS = 101
#: relative tolerance for float comparisons of values computed along different paths
FLOAT_TOL = 1e-9
#: absolute tolerance for the imbalance bound 1 - 1/n (imbalances are differences of shares)
IMBALANCE_TOL = 1e-12

SUMMARY_DERIVED = (
    "load_sum_gap", "worker_tuples_count_gap", "worker_head_tuples_count_gap",
    "imbalance_excess", "imbalance_avg_excess", "load_spread", "exec_to_latency",
    "latency_p50_minus_min", "latency_p95_minus_p50", "latency_p99_minus_p95", "latency_max_minus_p99",
    "latency_cdf_points", "latency_cdf_min_step",
)
SERIES_DERIVED = (
    "window_index_gap", "window_range_gap", "win_load_sum_gap", "cum_load_sum_gap",
    "worker_tuples_cum_count_gap", "worker_tuples_win_count_gap", "cell_tuples_gap", "cell_load_gap",
    "imbalance_cum_excess", "imbalance_win_excess",
    "latency_p95_minus_p50", "latency_p99_minus_p95", "latency_max_minus_p99",
)
#: series columns that are NaN in windows without tuples
SERIES_WINDOW_LATENCY = ("latency_mean", "latency_p50", "latency_p95", "latency_p99", "latency_max")
TABLES = ("summary", "series")

#: readable bounds of the checks with a float tolerance (GE's own kwargs hold the exact ones)
_TOLERANT = {"exec_to_latency": f"<= 1 (relative tolerance {FLOAT_TOL:g})",
             **{f"{c}_excess": f"<= 0 (tolerance {IMBALANCE_TOL:g})"
                for c in ("imbalance", "imbalance_avg", "imbalance_cum", "imbalance_win")}}
_COLUMN_LIST = "expect_table_columns_to_match_ordered_list"
_EQUAL_SET = "expect_column_distinct_values_to_equal_set"


# --------------------------------------------------------------------------------------------
# report

class ResultsValidationReport(ValidationReport):
    """A :class:`~skewbench.validation.ValidationReport` for a results directory.

    ``path`` is the results directory, ``dataset`` the replayed dataset's name, ``tuples`` its
    size, ``engine`` always ``pandas``; ``ge_results`` maps ``summary`` and ``series`` to GE's
    own results.  Each failure's ``details`` may carry ``cells``: the failing cells (series:
    ``cell_id@window``), at most 20 per expectation.
    """

    def message(self) -> str:
        if self.success:
            return f"results {self.path} (dataset {self.dataset}): all expectations met"
        head = (f"results {self.path} (dataset {self.dataset}) failed validation: "
                f"{len(self.failures)} expectation(s) not met")
        lines = []
        for line, f in zip(self.failure_lines(), self.failures):
            cells = (f.get("details") or {}).get("cells")
            lines.append(f"  {line} in cell(s) {_fmt(cells)}" if cells else f"  {line}")
        return "\n".join([head] + lines)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "results", **super().to_dict()}


# --------------------------------------------------------------------------------------------
# derived columns

def _list_stats(table: pa.Table, col: str) -> dict[str, np.ndarray] | None:
    """Per row of a list column: sum and count of its finite entries, smallest step between
    consecutive entries (NaN if a step involves a non-finite entry; +inf with fewer than two
    entries).  All NaN for null lists; ``None`` if the column is missing or not a numeric list."""
    if col not in table.column_names:
        return None
    arr = table.column(col).combine_chunks()
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        return None
    n = len(arr)
    try:
        vals = pc.list_flatten(arr).cast(pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowException, TypeError, ValueError):
        return None
    parent = pc.list_parent_indices(arr).to_numpy(zero_copy_only=False).astype(np.int64)
    ok = np.isfinite(vals)
    total = np.bincount(parent, weights=np.where(ok, vals, 0.0), minlength=n)[:n].astype(np.float64)
    count = np.bincount(parent, weights=ok.astype(np.float64), minlength=n)[:n].astype(np.float64)
    min_step = np.full(n, np.inf)
    if len(vals) > 1:
        same = parent[1:] == parent[:-1]
        np.minimum.at(min_step, parent[1:][same], np.diff(vals)[same])
    null = arr.is_null().to_numpy(zero_copy_only=False)
    for a in (total, count, min_step):
        a[null] = np.nan
    return {"sum": total, "count": count, "min_step": min_step}


def _num(df: pd.DataFrame, *cols: str) -> list[pd.Series] | None:
    if not all(c in df.columns for c in cols):
        return None
    try:
        return [pd.to_numeric(df[c]).astype(np.float64) for c in cols]
    except (TypeError, ValueError):
        return None


def _imbalance_bound(workers: pd.Series) -> pd.Series:
    return 1.0 - 1.0 / workers


def derive_summary(table: pa.Table, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (the summary as pandas) plus :data:`SUMMARY_DERIVED` (those computable)."""
    df = frame.copy()
    with np.errstate(all="ignore"):
        wt = _list_stats(table, "worker_tuples")
        if wt is not None and (c := _num(df, "tuples")):
            df["load_sum_gap"] = wt["sum"] - c[0].to_numpy()
        for col in ("worker_tuples", "worker_head_tuples"):
            st = wt if col == "worker_tuples" else _list_stats(table, col)
            if st is not None and (c := _num(df, "workers")):
                df[f"{col}_count_gap"] = st["count"] - c[0].to_numpy()
        for col in ("imbalance", "imbalance_avg"):
            if c := _num(df, col, "workers"):
                df[f"{col}_excess"] = c[0] - _imbalance_bound(c[1])
        if c := _num(df, "load_max", "load_min"):
            df["load_spread"] = c[0] - c[1]
        if c := _num(df, "exec_mean", "latency_mean"):
            df["exec_to_latency"] = c[0] / c[1]
        for hi, lo, name in (("latency_p50", "latency_min", "latency_p50_minus_min"),
                             ("latency_p95", "latency_p50", "latency_p95_minus_p50"),
                             ("latency_p99", "latency_p95", "latency_p99_minus_p95"),
                             ("latency_max", "latency_p99", "latency_max_minus_p99")):
            if c := _num(df, hi, lo):
                df[name] = c[0] - c[1]
        cdf = _list_stats(table, "latency_cdf")
        if cdf is not None:
            df["latency_cdf_points"] = cdf["count"]
            df["latency_cdf_min_step"] = cdf["min_step"]
    return df


def derive_series(table: pa.Table, frame: pd.DataFrame, cell_tuples: Mapping[str, float],
                  default_tuples: float | None) -> pd.DataFrame:
    """``frame`` (the series as pandas) plus :data:`SERIES_DERIVED` (those computable).

    ``cell_tuples`` maps cell ids to their summary ``tuples``; cells not in it are compared with
    ``default_tuples`` (the manifest's dataset size).
    """
    df = frame.copy()
    n = len(df)
    with np.errstate(all="ignore"):
        cum = _list_stats(table, "worker_tuples_cum")
        win = _list_stats(table, "worker_tuples_win")
        t = _num(df, "tuples")
        tuples = t[0] if t else None
        ordered = None
        if {"cell_id", "window"} <= set(df.columns) and tuples is not None:
            o = pd.DataFrame({"cell_id": df["cell_id"].astype(object),
                              "window": pd.to_numeric(df["window"], errors="coerce"),
                              "tuples": tuples, "row": np.arange(n)})
            o = o.sort_values(["cell_id", "window", "row"], kind="stable", na_position="last")
            g = o.groupby("cell_id", sort=False, dropna=False)
            ordered = pd.DataFrame({
                "pos": g.cumcount(), "cum": g["tuples"].cumsum(), "total": g["tuples"].transform("sum"),
                "last": g.cumcount(ascending=False) == 0}, index=o.index).loc[df.index]
            df["window_index_gap"] = o.loc[df.index, "window"].to_numpy() - ordered["pos"].to_numpy()
        if (c := _num(df, "seq_start", "seq_end")) and tuples is not None:
            df["window_range_gap"] = tuples - (c[1] - c[0])
        if win is not None and tuples is not None:
            df["win_load_sum_gap"] = win["sum"] - tuples.to_numpy()
        if cum is not None and ordered is not None:
            df["cum_load_sum_gap"] = cum["sum"] - ordered["cum"].to_numpy()
        for col, st in (("worker_tuples_cum", cum), ("worker_tuples_win", win)):
            if st is not None and (c := _num(df, "workers")):
                df[f"{col}_count_gap"] = st["count"] - c[0].to_numpy()
        if ordered is not None:
            dflt = np.nan if default_tuples is None else float(default_tuples)
            ref = df["cell_id"].map(lambda x: cell_tuples.get(x, dflt)).astype(np.float64).to_numpy()
            last = ordered["last"].to_numpy()
            df["cell_tuples_gap"] = np.where(last, ordered["total"].to_numpy() - ref, 0.0)
            if cum is not None:
                df["cell_load_gap"] = np.where(last, cum["sum"] - ref, 0.0)
        for col in ("imbalance_cum", "imbalance_win"):
            if c := _num(df, col, "workers"):
                df[f"{col}_excess"] = c[0] - _imbalance_bound(c[1])
        for hi, lo, name in (("latency_p95", "latency_p50", "latency_p95_minus_p50"),
                             ("latency_p99", "latency_p95", "latency_p99_minus_p95"),
                             ("latency_max", "latency_p99", "latency_max_minus_p99")):
            if c := _num(df, hi, lo):
                df[name] = c[0] - c[1]
    return df


# --------------------------------------------------------------------------------------------
# suites

def _between(column: str, lo: float | None = None, hi: float | None = None, strict_min: bool = False,
             strict_max: bool = False) -> Any:
    return gxe.ExpectColumnValuesToBeBetween(column=column, min_value=lo, max_value=hi,
                                             strict_min=strict_min, strict_max=strict_max)


def _zero(column: str) -> Any:
    return _between(column, 0, 0)


def _schema_names(family: str, table: str) -> list[str]:
    summary, series = SCHEMAS[family]
    return list((summary if table == "summary" else series).names)


def _columns_of(ex: Any) -> set[str]:
    cols = set()
    if getattr(ex, "column", None):
        cols.add(ex.column)
    if not isinstance(ex, gxe.ExpectTableColumnsToMatchOrderedList) and getattr(ex, "column_list", None):
        cols.update(ex.column_list)
    if getattr(ex, "row_condition", None):
        cols.add("tuples")
    return cols


def _suite(name: str, expectations: Sequence[Any], columns: Sequence[str]) -> gx.ExpectationSuite:
    """A suite of the expectations whose columns exist (missing ones are reported by the
    column-list expectation, not by one GE exception per expectation)."""
    have = set(columns)
    return gx.ExpectationSuite(name=name, expectations=[e for e in expectations if _columns_of(e) <= have])


def build_summary_suite(family: str, columns: Sequence[str], cell_ids: Sequence[str],
                        tuples: int | None = None, fingerprint: str | None = None,
                        name: str = "skewbench-results-summary") -> gx.ExpectationSuite:
    """The suite over the derived summary frame with ``columns`` (raw columns then derived)."""
    schema = _schema_names(family, "summary")
    ex: list[Any] = [
        gxe.ExpectTableColumnsToMatchOrderedList(column_list=schema + list(SUMMARY_DERIVED)),
        gxe.ExpectTableRowCountToEqual(value=len(cell_ids)),
        gxe.ExpectColumnValuesToBeUnique(column="cell_id"),
        gxe.ExpectColumnDistinctValuesToEqualSet(column="cell_id", value_set=sorted(cell_ids)),
    ]
    ex += [gxe.ExpectColumnValuesToNotBeNull(column=c) for c in schema]
    if tuples is not None:
        ex.append(_between("tuples", tuples, tuples))
    if fingerprint is not None:
        ex.append(gxe.ExpectColumnValuesToBeInSet(column="dataset_fingerprint", value_set=[fingerprint]))
    ex += [_between("workers", 1), _between("sources", 1), _between("keys", 1)]
    # conservation of tuples
    ex += [_zero("load_sum_gap"), _zero("worker_tuples_count_gap"), _zero("worker_head_tuples_count_gap")]
    # imbalance in [0, 1 - 1/n]; shares in [0, 1]
    ex += [_between("imbalance", 0, 1), _between("imbalance_excess", hi=IMBALANCE_TOL),
           _between("imbalance_avg", 0, 1), _between("imbalance_avg_excess", hi=IMBALANCE_TOL),
           _between("load_max", 0, 1), _between("load_min", 0, 1), _between("load_spread", 0)]
    # completion time >= execution time > 0
    ex += [_between("latency_min", 0, strict_min=True), _between("latency_mean", 0, strict_min=True),
           _between("exec_mean", 0, strict_min=True), _between("queue_delay_mean", 0),
           _between("exec_to_latency", hi=1 + FLOAT_TOL)]
    # ordered quantiles, CDF
    ex += [_between(c, 0) for c in ("latency_p50_minus_min", "latency_p95_minus_p50",
                                    "latency_p99_minus_p95", "latency_max_minus_p99")]
    ex += [_between("latency_cdf_points", CDF_POINTS, CDF_POINTS), _between("latency_cdf_min_step", 0)]
    # baseline, memory, throughput
    ex += [_between("latency_mean_rr", 0, strict_min=True), _between("speedup_vs_rr", 0, strict_min=True),
           _between("gain_vs_rr", hi=1, strict_max=True), _between("throughput", 0, strict_min=True),
           _between("replication", 1), _between("replicas_max", 1)]
    return _suite(name, ex, columns)


def build_series_suite(family: str, columns: Sequence[str], cell_ids: Sequence[str],
                       rows: int | None = None, name: str = "skewbench-results-series") -> gx.ExpectationSuite:
    """The suite over the derived series frame with ``columns`` (raw columns then derived)."""
    schema = _schema_names(family, "series")
    ex: list[Any] = [
        gxe.ExpectTableColumnsToMatchOrderedList(column_list=schema + list(SERIES_DERIVED)),
        gxe.ExpectColumnDistinctValuesToEqualSet(column="cell_id", value_set=sorted(cell_ids)),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["cell_id", "window"]),
    ]
    if rows is not None:
        ex.append(gxe.ExpectTableRowCountToEqual(value=int(rows)))
    for c in schema:
        if c in SERIES_WINDOW_LATENCY:
            ex.append(gxe.ExpectColumnValuesToNotBeNull(column=c, row_condition="tuples > 0",
                                                        condition_parser="pandas"))
        else:
            ex.append(gxe.ExpectColumnValuesToNotBeNull(column=c))
    ex += [_between("workers", 1), _between("sources", 1), _between("window", 0), _between("seq_start", 0),
           _between("tuples", 0)]
    ex += [_zero(c) for c in ("window_index_gap", "window_range_gap", "win_load_sum_gap", "cum_load_sum_gap",
                              "worker_tuples_cum_count_gap", "worker_tuples_win_count_gap",
                              "cell_tuples_gap", "cell_load_gap")]
    ex += [_between("imbalance_cum", 0, 1), _between("imbalance_cum_excess", hi=IMBALANCE_TOL),
           _between("imbalance_win", 0, 1), _between("imbalance_win_excess", hi=IMBALANCE_TOL)]
    ex += [_between("latency_mean", 0, strict_min=True), _between("latency_p50", 0)]
    ex += [_between(c, 0) for c in ("latency_p95_minus_p50", "latency_p99_minus_p95", "latency_max_minus_p99")]
    return _suite(name, ex, columns)


# --------------------------------------------------------------------------------------------
# reading

def _read(p: Path) -> tuple[dict[str, Any], pa.Table, pa.Table]:
    if not p.is_dir():
        raise SkewbenchError(f"results {p}: no such directory")
    try:
        manifest, summary, series = read_results(p)
    except SkewbenchError:
        # say which file is at fault
        try:
            json.loads((p / MANIFEST).read_text())
        except (OSError, ValueError) as e:
            if (p / MANIFEST).exists():
                raise SkewbenchError(f"results {p}: {MANIFEST} is unreadable or not JSON ({e})") from None
        for t in TABLES:
            f = p / f"{t}.parquet"
            if not f.exists():
                raise SkewbenchError(f"results {p}: {f.name} is missing (incomplete results directory)") from None
            try:
                pq.read_table(f)
            except (OSError, ValueError, pa.ArrowException) as e:
                raise SkewbenchError(f"results {p}: cannot read {f.name}: corrupted or truncated "
                                     f"Parquet file ({e})") from None
        raise
    if not isinstance(manifest, dict):
        raise SkewbenchError(f"results {p}: {MANIFEST} is not a JSON object")
    family = manifest.get("family")
    if family not in SCHEMAS:
        raise SkewbenchError(f"results {p}: unknown results family {family!r} in {MANIFEST}")
    cells = manifest.get("cells")
    if not isinstance(cells, list) or not all(isinstance(c, dict) and c.get("cell_id") for c in cells):
        raise SkewbenchError(f"results {p}: {MANIFEST} has no valid 'cells' list (one entry with a "
                             f"cell_id per grid cell)")
    return manifest, summary, series


def _to_pandas(p: Path, name: str, table: pa.Table) -> pd.DataFrame:
    try:
        return table.to_pandas()
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise SkewbenchError(f"results {p}: cannot convert {name}.parquet: {e}") from None


# --------------------------------------------------------------------------------------------
# running

def _run(ctx: Any, source: Any, suite: gx.ExpectationSuite, df: pd.DataFrame, asset: str,
         index_columns: Sequence[str]) -> Any:
    ctx.suites.add(suite)
    batch = source.add_dataframe_asset(asset).add_batch_definition_whole_dataframe(asset)
    vd = gx.ValidationDefinition(data=batch, suite=suite, name=f"{asset}-validation")
    fmt: dict[str, Any] = {"result_format": "SUMMARY", "partial_unexpected_count": 20}
    if index_columns:
        fmt["unexpected_index_column_names"] = list(index_columns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return vd.run(batch_parameters={"dataframe": df}, result_format=fmt)


def _cell_names(index_list: Any, index_columns: Sequence[str]) -> list[str]:
    out: list[str] = []
    for row in index_list or []:
        if not isinstance(row, Mapping) or "cell_id" not in row:
            continue
        name = str(row["cell_id"])
        if "window" in index_columns and "window" in row:
            name += f"@{_window_text(row['window'])}"
        if name not in out:
            out.append(name)
    return out


def _head(items: Sequence[Any], n: int = 10) -> list[Any]:
    items = [_jsonable(x) for x in items]
    return items if len(items) <= n else items[:n] + [f"... ({len(items)} in all)"]


def _window_text(w: Any) -> str:
    """A window index as GE reports it (a string, or a float when the column has nulls) -> "3"."""
    try:
        f = float(w)
    except (TypeError, ValueError):
        return str(w)
    return str(int(f)) if math.isfinite(f) and f == int(f) else str(w)


def _report_failures(result: Any, table: str, frame: pd.DataFrame, schema: Sequence[str],
                     cell_ids: Sequence[str], index_columns: Sequence[str]) -> list[dict[str, Any]]:
    """The failures of one suite, as :mod:`skewbench.validation` extracts them, with the failing
    cells and readable observations for the column list and the cell set."""
    failures = _failures(result, table)
    failed = [r for r in result.results if not r.success]
    for f, r in zip(failures, failed):
        res = dict(r.result or {})
        cells = _cell_names(res.get("partial_unexpected_index_list"), index_columns)
        if cells:
            f["details"]["cells"] = cells
        if f["column"] in _TOLERANT and "expected" in f["details"]:
            f["details"]["expected"] = _TOLERANT[f["column"]]
        if f["expectation"] == _COLUMN_LIST:
            derived = SUMMARY_DERIVED if table == "summary" else SERIES_DERIVED
            raw = [c for c in frame.columns if c not in derived]
            missing = [c for c in list(schema) + list(derived) if c not in frame.columns]
            extra = [c for c in raw if c not in schema]
            f["observed"] = ({"missing": _head(missing), "unexpected": _head(extra)} if missing or extra
                             else {"order": raw})
            f["details"]["expected"] = (f"the {table} columns of the results schema, in order, then the "
                                        f"derived columns (missing if their sources are missing or mistyped)")
        elif f["expectation"] == _EQUAL_SET:
            present = set(frame["cell_id"].dropna().astype(str)) if "cell_id" in frame.columns else set()
            missing, extra = sorted(set(cell_ids) - present), sorted(present - set(cell_ids))
            f["observed"] = {"missing": _head(missing), "unexpected": _head(extra)}
            f["details"].update(expected=f"the {len(cell_ids)} cells of the manifest",
                                missing_cells=len(missing), unexpected_cells=len(extra))
            f["details"].pop("unexpected_count", None)  # GE's counts of a set comparison; observed says it
    return failures


def _count(v: Any) -> int | None:
    """A row or tuple count from the manifest, or ``None`` if absent or not a count."""
    return int(v) if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def validate_results(path: str | os.PathLike, *, keep_dir: str | os.PathLike | None = None
                     ) -> ResultsValidationReport:
    """Validate the results directory at ``path`` (see the module docstring for the rules).

    ``keep_dir``: write GE's own results there as ``validation-summary.json`` and
    ``validation-series.json`` (created if needed), whatever the outcome.
    Raises :class:`SkewbenchError` if the directory is missing, incomplete or unreadable.
    """
    p = Path(path).absolute()
    manifest, summary_t, series_t = _read(p)
    family = manifest["family"]
    cell_ids = [str(c["cell_id"]) for c in manifest["cells"]]
    ds = manifest.get("dataset") if isinstance(manifest.get("dataset"), dict) else {}
    m = _count(ds.get("tuples"))
    fingerprint = ds.get("fingerprint")

    summary = derive_summary(summary_t, _to_pandas(p, "summary", summary_t))
    cell_tuples: dict[str, float] = {}
    if {"cell_id", "tuples"} <= set(summary.columns):
        for cid, t in zip(summary["cell_id"], pd.to_numeric(summary["tuples"], errors="coerce")):
            cell_tuples.setdefault(cid, float(t))
    series = derive_series(series_t, _to_pandas(p, "series", series_t), cell_tuples, m)

    ctx = gx.get_context(mode="ephemeral")
    try:
        ctx.variables.progress_bars = {"globally": False, "metric_calculations": False}
    except Exception:  # pragma: no cover - cosmetic only
        pass
    source = ctx.data_sources.add_pandas("skewbench-results")
    suites = {
        "summary": (summary, build_summary_suite(family, list(summary.columns), cell_ids, m, fingerprint),
                    ["cell_id"]),
        "series": (series, build_series_suite(family, list(series.columns), cell_ids,
                                              _count(manifest.get("series_rows"))), ["cell_id", "window"]),
    }
    results: dict[str, Any] = {}
    failures: list[dict[str, Any]] = []
    for table, (frame, suite, index_cols) in suites.items():
        index_cols = [c for c in index_cols if c in frame.columns]
        res = _run(ctx, source, suite, frame, table, index_cols)
        results[table] = _jsonable(res.to_json_dict())
        failures += _report_failures(res, table, frame, _schema_names(family, table), cell_ids, index_cols)

    if keep_dir is not None:
        kd = Path(keep_dir)
        kd.mkdir(parents=True, exist_ok=True)
        for table in TABLES:
            (kd / f"validation-{table}.json").write_text(json.dumps(results[table], indent=2) + "\n")

    return ResultsValidationReport(dataset=str(ds.get("name") or ""), success=not failures, engine="pandas",
                                   failures=failures, path=str(p), tuples=m, ge_results=results)
