"""Great Expectations validation of replay results (the results contract, :mod:`skewbench.results`).

A results directory is small (one summary row per grid cell, one series row per cell and
window), so both tables are validated as pandas frames, each with its own suite, in an ephemeral
GE context.  The suites have a generic part, the same for every family and read from its schema
(:func:`skewbench.results.schema`):

* the columns are the family's schema, in order, then the family's derived columns (a derived
  column is absent, and so reported, when its sources are missing or of the wrong type);
* summary: one row per manifest cell (row count, unique ``cell_id``, ``cell_id`` set equal to the
  manifest's); ``dataset_fingerprint`` is the manifest's dataset fingerprint;
* series: the ``cell_id`` set equals the manifest's, the family's series key is unique, the row
  count is the manifest's;
* no nulls, except in nullable columns and, for a metric with ``not_null_if``, outside rows
  meeting that condition;
* every bound of every Column and Metric of the family's schema;

and the family's part, from its ``expectations`` module: ``derive_summary(table, frame,
manifest)`` and ``derive_series(table, frame, summary, manifest)`` add derived columns (rules
that span several columns, rows or list elements turned into per-row checks; their names in
``SUMMARY_DERIVED`` / ``SERIES_DERIVED``), ``summary_expectations(manifest)`` and
``series_expectations(manifest)`` check them, ``SERIES_INDEX`` names the series key and
``READABLE_BOUNDS`` words tolerant bounds for people.

Failures are reported with :class:`skewbench.validation.core.ValidationReport` (this module's
:class:`ResultsValidationReport` words the message for a results directory and names the failing
cells).  An unreadable or incomplete results directory raises
:class:`~skewbench.errors.SkewbenchError` before any expectation runs.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from skewbench.validation.core import (ValidationReport, between, failures, fmt, jsonable, new_context,
                                       run_suite)
import great_expectations as gx  # noqa: E402  (core sets GE's environment first)
import great_expectations.expectations as gxe  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from skewbench import families as _families  # noqa: E402
from skewbench.errors import SkewbenchError  # noqa: E402
from skewbench.results import MANIFEST, TABLES, Column, Metric, read_results, schema, write_validation  # noqa: E402

__all__ = ["ResultsValidationReport", "build_series_suite", "build_summary_suite", "validate_results"]

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
            lines.append(f"  {line} in cell(s) {fmt(cells)}" if cells else f"  {line}")
        return "\n".join([head] + lines)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "results", **super().to_dict()}


# --------------------------------------------------------------------------------------------
# suites


def _columns_of(ex: Any) -> set[str]:
    cols = set()
    if getattr(ex, "column", None):
        cols.add(ex.column)
    if not isinstance(ex, gxe.ExpectTableColumnsToMatchOrderedList) and getattr(ex, "column_list", None):
        cols.update(ex.column_list)
    cond = getattr(ex, "row_condition", None)
    if cond:  # a pandas condition "<column> <op> <value>" (GE keeps it as a pass-through filter)
        text = getattr(cond, "pass_through_filter", None) or str(cond)
        cols.add(str(text).split()[0])
    return cols


def _suite(name: str, expectations: Sequence[Any], columns: Sequence[str]) -> gx.ExpectationSuite:
    """A suite of the expectations whose columns exist (missing ones are reported by the
    column-list expectation, not by one GE exception per expectation)."""
    have = set(columns)
    return gx.ExpectationSuite(name=name, expectations=[e for e in expectations if _columns_of(e) <= have])


def _field_expectations(fields: Sequence[Column | Metric]) -> list[Any]:
    """Not-null and bounds of each field, as the schema describes them."""
    ex: list[Any] = []
    for f in fields:
        cond = getattr(f, "not_null_if", None)
        if cond:
            ex.append(gxe.ExpectColumnValuesToNotBeNull(column=f.name, row_condition=cond, condition_parser="pandas"))
        elif not getattr(f, "nullable", False):
            ex.append(gxe.ExpectColumnValuesToNotBeNull(column=f.name))
    for f in fields:
        lo, hi = f.bounds
        if lo is not None or hi is not None:
            ex.append(between(f.name, lo, hi, strict_min=f.strict[0], strict_max=f.strict[1]))
    return ex


def _family_module(family: str) -> Any:
    return _families.get(family).module("expectations")


def _table_suite(family: str, table: str, columns: Sequence[str], name: str, head: Sequence[Any],
                 extra: Sequence[Any], manifest: Mapping[str, Any]) -> gx.ExpectationSuite:
    """The suite over one derived table: its columns in order, then ``head``, the schema's field
    expectations, ``extra`` and the family's own (``<table>_expectations``)."""
    s = schema(family)
    fam = _family_module(family)
    summary = table == "summary"
    order = s.summary_order if summary else s.series_order
    derived = fam.SUMMARY_DERIVED if summary else fam.SERIES_DERIVED
    ex: list[Any] = [gxe.ExpectTableColumnsToMatchOrderedList(column_list=list(order) + list(derived)), *head]
    ex += _field_expectations(s.fields(table))
    ex += extra
    ex += (fam.summary_expectations if summary else fam.series_expectations)(manifest)
    return _suite(name, ex, columns)


def build_summary_suite(family: str, columns: Sequence[str], cell_ids: Sequence[str],
                        manifest: Mapping[str, Any] | None = None,
                        name: str = "skewbench-results-summary") -> gx.ExpectationSuite:
    """The suite over the derived summary frame with ``columns`` (raw columns then derived)."""
    manifest = manifest or {}
    head = [gxe.ExpectTableRowCountToEqual(value=len(cell_ids)),
            gxe.ExpectColumnValuesToBeUnique(column="cell_id"),
            gxe.ExpectColumnDistinctValuesToEqualSet(column="cell_id", value_set=sorted(cell_ids))]
    ds = manifest.get("dataset") if isinstance(manifest.get("dataset"), dict) else {}
    extra = [] if ds.get("fingerprint") is None else [
        gxe.ExpectColumnValuesToBeInSet(column="dataset_fingerprint", value_set=[ds["fingerprint"]])]
    return _table_suite(family, "summary", columns, name, head, extra, manifest)


def build_series_suite(family: str, columns: Sequence[str], cell_ids: Sequence[str],
                       manifest: Mapping[str, Any] | None = None,
                       name: str = "skewbench-results-series") -> gx.ExpectationSuite:
    """The suite over the derived series frame with ``columns`` (raw columns then derived)."""
    manifest = manifest or {}
    head = [gxe.ExpectColumnDistinctValuesToEqualSet(column="cell_id", value_set=sorted(cell_ids)),
            gxe.ExpectCompoundColumnsToBeUnique(column_list=list(_family_module(family).SERIES_INDEX))]
    rows = _count(manifest.get("series_rows"))
    if rows is not None:
        head.append(gxe.ExpectTableRowCountToEqual(value=int(rows)))
    return _table_suite(family, "series", columns, name, head, [], manifest)


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
    if family not in _families.families():
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
    items = [jsonable(x) for x in items]
    return items if len(items) <= n else items[:n] + [f"... ({len(items)} in all)"]


def _window_text(w: Any) -> str:
    """A window index as GE reports it (a string, or a float when the column has nulls) -> "3"."""
    try:
        f = float(w)
    except (TypeError, ValueError):
        return str(w)
    return str(int(f)) if math.isfinite(f) and f == int(f) else str(w)


def _report_failures(result: Any, table: str, frame: pd.DataFrame, family: str,
                     cell_ids: Sequence[str], index_columns: Sequence[str]) -> list[dict[str, Any]]:
    """The failures of one suite, with the failing cells and readable observations for the
    column list and the cell set."""
    fam = _family_module(family)
    order = list(schema(family).order(table))
    found = failures(result, table)
    failed = [r for r in result.results if not r.success]
    readable = getattr(fam, "READABLE_BOUNDS", {})
    for f, r in zip(found, failed):
        res = dict(r.result or {})
        cells = _cell_names(res.get("partial_unexpected_index_list"), index_columns)
        if cells:
            f["details"]["cells"] = cells
        if f["column"] in readable and "expected" in f["details"]:
            f["details"]["expected"] = readable[f["column"]]
        if f["expectation"] == _COLUMN_LIST:
            derived = fam.SUMMARY_DERIVED if table == "summary" else fam.SERIES_DERIVED
            raw = [c for c in frame.columns if c not in derived]
            missing = [c for c in order + list(derived) if c not in frame.columns]
            extra = [c for c in raw if c not in order]
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
    return found


def _count(v: Any) -> int | None:
    """A row or tuple count from the manifest, or ``None`` if absent or not a count."""
    return int(v) if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def validate_results(path: str | os.PathLike, *, keep_dir: str | os.PathLike | None = None
                     ) -> ResultsValidationReport:
    """Validate the results directory at ``path`` (see the module docstring for the rules).

    ``keep_dir``: write GE's own results there as ``validation-summary.json`` and
    ``validation-series.json`` (created if needed), whatever the outcome.  The outcome is recorded
    in the results directory (:data:`skewbench.results.VALIDATION`, with the content's digest):
    MLflow logging refuses results without a passed record of their present content.
    Raises :class:`SkewbenchError` if the directory is missing, incomplete or unreadable.
    """
    p = Path(path).absolute()
    manifest, summary_t, series_t = _read(p)
    family = manifest["family"]
    fam = _family_module(family)
    cell_ids = [str(c["cell_id"]) for c in manifest["cells"]]
    ds = manifest.get("dataset") if isinstance(manifest.get("dataset"), dict) else {}

    summary = fam.derive_summary(summary_t, _to_pandas(p, "summary", summary_t), manifest)
    series = fam.derive_series(series_t, _to_pandas(p, "series", series_t), summary, manifest)

    ctx = new_context()
    source = ctx.data_sources.add_pandas("skewbench-results")
    suites = {
        "summary": (summary, build_summary_suite(family, list(summary.columns), cell_ids, manifest), ["cell_id"]),
        "series": (series, build_series_suite(family, list(series.columns), cell_ids, manifest),
                   list(fam.SERIES_INDEX)),
    }
    results: dict[str, Any] = {}
    found: list[dict[str, Any]] = []
    for table, (frame, suite, index_cols) in suites.items():
        index_cols = [c for c in index_cols if c in frame.columns]
        fmt_: dict[str, Any] = {"result_format": "SUMMARY", "partial_unexpected_count": 20}
        if index_cols:
            fmt_["unexpected_index_column_names"] = list(index_cols)
        res = run_suite(ctx, source, suite, frame, table, fmt_)
        results[table] = jsonable(res.to_json_dict())
        found += _report_failures(res, table, frame, family, cell_ids, index_cols)

    if keep_dir is not None:
        kd = Path(keep_dir)
        kd.mkdir(parents=True, exist_ok=True)
        for table in TABLES:
            (kd / f"validation-{table}.json").write_text(json.dumps(results[table], indent=2) + "\n")

    write_validation(p, not found, len(found))  # what logging checks (skewbench.results.check_validated)
    return ResultsValidationReport(dataset=str(ds.get("name") or ""), success=not found, engine="pandas",
                                   failures=found, path=str(p), tuples=_count(ds.get("tuples")),
                                   ge_results=results)
