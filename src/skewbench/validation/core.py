"""The validation runner shared by the dataset and results suites: an ephemeral Great
Expectations context, running a suite on a pandas or Spark frame, and the report.

:class:`ValidationReport` holds the failed expectations, one dict each (``expectation``,
``column``, ``observed``, ``details``), extracted from GE's results by :func:`failures`; its
:meth:`~ValidationReport.raise_for_failure` raises :class:`~skewbench.errors.ValidationFailed`
with one line per failed expectation.  :func:`between` and :func:`zero` build the per-row bound
expectations every suite uses.
"""

from __future__ import annotations

import logging
import math
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")

import great_expectations as gx  # noqa: E402  (after the environment is set)
import great_expectations.expectations as gxe  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

from skewbench.errors import ValidationFailed  # noqa: E402

__all__ = ["DEFAULT_Z", "MAX_EXAMPLES", "ValidationReport", "between", "failures", "fmt", "jsonable",
           "list_stats", "new_context", "numeric", "run_suite", "zero"]

#: width of the Zipf frequency band of the dataset suite, in binomial standard deviations
DEFAULT_Z = 5.0
MAX_EXAMPLES = 10

for _name in ("great_expectations", "py4j"):
    logging.getLogger(_name).setLevel(logging.WARNING)


@dataclass
class ValidationReport:
    """The outcome of :func:`validate_dataset`.

    ``failures`` holds one dict per failed expectation: ``expectation`` (its type),
    ``column`` (or ``None``), ``observed`` (the observed value, or examples of unexpected
    values) and ``details`` (counts, expected bounds, exception text, suite name).
    """

    dataset: str
    success: bool
    engine: str
    failures: list[dict[str, Any]] = field(default_factory=list)
    path: str = ""
    tuples: int | None = None
    ge_results: dict[str, Any] = field(default_factory=dict)

    def failure_lines(self) -> list[str]:
        lines = []
        for f in self.failures:
            where = f"(column={f['column']})" if f.get("column") else ""
            det = f.get("details") or {}
            extra = []
            if isinstance(det, Mapping):
                if "unexpected_count" in det:
                    extra.append(f"{det['unexpected_count']} unexpected of {det.get('element_count')} rows")
                if "expected" in det:
                    extra.append(f"expected {det['expected']}")
                if det.get("positions"):
                    extra.append(f"at stream position(s) {fmt(det['positions'])}")
                if "exception" in det:
                    extra.append(f"error: {det['exception']}")
            tail = f" ({'; '.join(extra)})" if extra else ""
            suite = det.get("suite") if isinstance(det, Mapping) else None
            pre = f"[{suite}] " if suite and suite != "contract" else ""
            observed = f.get("observed")
            if suite == "zipf" and f.get("column") == "z" and isinstance(observed, list):
                observed = "; ".join(
                    f"key {r['key']} (rank {r['rank']}) frequency {r['observed']:.6g}, "
                    f"expected {r['p']:.6g} +- {r['tol']:.3g}" for r in observed)
                tail = (f" ({det.get('unexpected_count')} of {det.get('element_count')} top keys "
                        f"outside the {det.get('z', DEFAULT_Z):g}-sigma binomial band)")
            else:
                observed = fmt(observed)
            lines.append(f"{pre}{f['expectation']}{where}: observed {observed}{tail}")
        return lines

    def message(self) -> str:
        if self.success:
            return f"dataset {self.dataset}: all expectations met ({self.engine})"
        head = (f"dataset {self.dataset} ({self.path}) failed validation on {self.engine}: "
                f"{len(self.failures)} expectation(s) not met")
        return "\n".join([head] + ["  " + line for line in self.failure_lines()])

    def raise_for_failure(self) -> None:
        """Raise :class:`ValidationFailed` (one line per failed expectation) unless successful."""
        if not self.success:
            raise ValidationFailed(self.message())

    def to_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "path": self.path, "success": self.success,
                "engine": self.engine, "tuples": self.tuples,
                "failures": jsonable(self.failures), "ge_result": self.ge_results}


# --------------------------------------------------------------------------------------------
# failures


def fmt(v: Any) -> str:
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, tuple)) and len(v) > MAX_EXAMPLES:
        return "[" + ", ".join(fmt(x) for x in v[:MAX_EXAMPLES]) + f", ... ({len(v)} in all)]"
    return str(v)


def jsonable(o: Any) -> Any:
    if isinstance(o, Mapping):
        return {str(k): jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [jsonable(v) for v in o]
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return jsonable(float(o))
    if isinstance(o, float) and not math.isfinite(o):
        return str(o)
    if isinstance(o, (str, int, float, bool)) or o is None:
        return o
    return str(o)


def failures(result: Any, suite: str, positions: bool = False) -> list[dict[str, Any]]:
    """Extract the failed expectations of a GE suite result."""
    out = []
    for r in result.results:
        if r.success:
            continue
        cfg = r.expectation_config
        kwargs = dict(cfg.kwargs)
        res = dict(r.result or {})
        details: dict[str, Any] = {"suite": suite}
        expected = _expected_text(kwargs)
        if expected:
            details["expected"] = expected
        for k in ("element_count", "unexpected_count", "unexpected_percent", "missing_count",
                  "details"):
            if res.get(k) is not None:
                details[k] = res[k]
        if positions and res.get("partial_unexpected_index_list"):
            # pandas: the frame's index is the stream position
            details["positions"] = list(res["partial_unexpected_index_list"])
        if "observed_value" in res:
            observed = res["observed_value"]
        elif cfg.type == "expect_column_values_to_not_be_null":
            observed = f"{res.get('unexpected_count', '?')} null value(s)"
        else:
            observed = list(res.get("partial_unexpected_list") or [])
        exc = _exception_text(r.exception_info)
        if exc:
            details["exception"] = exc
        out.append({"expectation": cfg.type, "column": kwargs.get("column"),
                    "observed": jsonable(observed), "details": jsonable(details)})
    return out


def _expected_text(kw: Mapping[str, Any]) -> str | None:
    if "column_list" in kw:
        return f"columns {list(kw['column_list'])}"
    if "type_list" in kw:
        return f"type in {list(kw['type_list'])}"
    if "value" in kw:
        return f"{kw['value']}"
    lo, hi = kw.get("min_value"), kw.get("max_value")
    if lo is None and hi is None:
        return None
    parts = []
    if lo is not None:
        parts.append(f"{'>' if kw.get('strict_min') else '>='} {lo:g}")
    if hi is not None:
        parts.append(f"{'<' if kw.get('strict_max') else '<='} {hi:g}")
    return " and ".join(parts)


def _exception_text(info: Any) -> str | None:
    if not info:
        return None
    items = [info] if isinstance(info, Mapping) and "raised_exception" in info else \
        (list(info.values()) if isinstance(info, Mapping) else [])
    msgs = []
    for it in items:
        if isinstance(it, Mapping) and it.get("raised_exception"):
            msg = str(it.get("exception_message") or "").strip().splitlines()
            msgs.append(msg[0][:500] if msg else "exception")
    return "; ".join(dict.fromkeys(msgs)) or None


# --------------------------------------------------------------------------------------------
# running


def new_context() -> Any:
    """An ephemeral GE context without progress bars."""
    ctx = gx.get_context(mode="ephemeral")
    try:
        ctx.variables.progress_bars = {"globally": False, "metric_calculations": False}
    except Exception:  # pragma: no cover - cosmetic only
        pass
    return ctx


def run_suite(ctx: Any, source: Any, suite: gx.ExpectationSuite, df: Any, asset: str,
              result_format: Mapping[str, Any] | None = None) -> Any:
    """Run ``suite`` on the frame ``df`` (pandas or Spark, per ``source``) as asset ``asset``."""
    ctx.suites.add(suite)
    batch = source.add_dataframe_asset(asset).add_batch_definition_whole_dataframe(asset)
    vd = gx.ValidationDefinition(data=batch, suite=suite, name=f"{asset}-validation")
    fmt_ = dict(result_format or {"result_format": "SUMMARY", "partial_unexpected_count": 20})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return vd.run(batch_parameters={"dataframe": df}, result_format=fmt_)


def between(column: str, lo: float | None = None, hi: float | None = None, strict_min: bool = False,
            strict_max: bool = False, **kwargs: Any) -> Any:
    """Every value of ``column`` in ``[lo, hi]`` (open ends when strict; None: unbounded)."""
    return gxe.ExpectColumnValuesToBeBetween(column=column, min_value=lo, max_value=hi,
                                             strict_min=strict_min, strict_max=strict_max, **kwargs)


def zero(column: str) -> Any:
    """Every value of ``column`` is 0."""
    return between(column, 0, 0)


# --------------------------------------------------------------------------------------------
# derived columns


def list_stats(table: pa.Table, col: str) -> dict[str, np.ndarray] | None:
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


def numeric(df: pd.DataFrame, *cols: str) -> list[pd.Series] | None:
    if not all(c in df.columns for c in cols):
        return None
    try:
        return [pd.to_numeric(df[c]).astype(np.float64) for c in cols]
    except (TypeError, ValueError):
        return None


def index_gap(df: pd.DataFrame, group: str = "cell_id", index: str = "window") -> pd.Series | None:
    """``index`` minus the row's position within its ``group`` (0 when every group's rows are
    numbered 0, 1, 2, ... in order); None when the columns are absent."""
    if not {group, index} <= set(df.columns):
        return None
    c = numeric(df, index)
    return None if c is None else c[0] - df.groupby(group, sort=False).cumcount()


def with_index_gap(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of a series frame with its ``window_index_gap`` column (:func:`index_gap`; absent when
    the frame lacks ``cell_id`` or ``window``): the first step of a family's ``derive_series``."""
    df = frame.copy()
    if (gap := index_gap(df)) is not None:
        df["window_index_gap"] = gap
    return df
