"""The grouping family's Great Expectations rules (the generic suite is
:mod:`skewbench.validation.results`: schema, cells, nulls and every METRICS bound).

Rules that span several columns, rows or list elements are turned into *derived columns*
computed here, which the suites check with GE's built-in per-row expectations.

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
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa

import great_expectations.expectations as gxe

from skewbench.grouping.schema import LATENCY_SERIES, LATENCY_SUMMARY
from skewbench.validation.core import between, list_stats, numeric, zero

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
#: the series rows' key (unique), also how failing rows are named (``cell_id@window``)
SERIES_INDEX = ("cell_id", "window")

#: readable bounds of the checks with a float tolerance (GE's own kwargs hold the exact ones)
READABLE_BOUNDS = {"exec_to_latency": f"<= 1 (relative tolerance {FLOAT_TOL:g})",
                   **{f"{c}_excess": f"<= 0 (tolerance {IMBALANCE_TOL:g})"
                      for c in ("imbalance", "imbalance_avg", "imbalance_cum", "imbalance_win")}}


def _imbalance_bound(workers: pd.Series) -> pd.Series:
    return 1.0 - 1.0 / workers


def derive_summary(table: pa.Table, frame: pd.DataFrame, manifest: Mapping[str, Any]) -> pd.DataFrame:
    """``frame`` (the summary as pandas) plus :data:`SUMMARY_DERIVED` (those computable)."""
    df = frame.copy()
    with np.errstate(all="ignore"):
        wt = list_stats(table, "worker_tuples")
        if wt is not None and (c := numeric(df, "tuples")):
            df["load_sum_gap"] = wt["sum"] - c[0].to_numpy()
        for col in ("worker_tuples", "worker_head_tuples"):
            st = wt if col == "worker_tuples" else list_stats(table, col)
            if st is not None and (c := numeric(df, "workers")):
                df[f"{col}_count_gap"] = st["count"] - c[0].to_numpy()
        for col in ("imbalance", "imbalance_avg"):
            if c := numeric(df, col, "workers"):
                df[f"{col}_excess"] = c[0] - _imbalance_bound(c[1])
        if c := numeric(df, "load_max", "load_min"):
            df["load_spread"] = c[0] - c[1]
        if c := numeric(df, "exec_mean", "latency_mean"):
            df["exec_to_latency"] = c[0] / c[1]
        for hi, lo, name in (("latency_p50", "latency_min", "latency_p50_minus_min"),
                             ("latency_p95", "latency_p50", "latency_p95_minus_p50"),
                             ("latency_p99", "latency_p95", "latency_p99_minus_p95"),
                             ("latency_max", "latency_p99", "latency_max_minus_p99")):
            if c := numeric(df, hi, lo):
                df[name] = c[0] - c[1]
        cdf = list_stats(table, "latency_cdf")
        if cdf is not None:
            df["latency_cdf_points"] = cdf["count"]
            df["latency_cdf_min_step"] = cdf["min_step"]
    return df


def derive_series(table: pa.Table, frame: pd.DataFrame, summary: pd.DataFrame,
                  manifest: Mapping[str, Any]) -> pd.DataFrame:
    """``frame`` (the series as pandas) plus :data:`SERIES_DERIVED` (those computable).

    Each cell's windows are compared with the cell's summary ``tuples`` (``summary``); cells
    missing there with the manifest's dataset size.
    """
    cell_tuples: dict[str, float] = {}
    if {"cell_id", "tuples"} <= set(summary.columns):
        for cid, t in zip(summary["cell_id"], pd.to_numeric(summary["tuples"], errors="coerce")):
            cell_tuples.setdefault(cid, float(t))
    ds = manifest.get("dataset") if isinstance(manifest.get("dataset"), dict) else {}
    m = ds.get("tuples")
    default_tuples = float(m) if isinstance(m, int) and not isinstance(m, bool) and m >= 0 else None
    df = frame.copy()
    n = len(df)
    with np.errstate(all="ignore"):
        cum = list_stats(table, "worker_tuples_cum")
        win = list_stats(table, "worker_tuples_win")
        t = numeric(df, "tuples")
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
        if (c := numeric(df, "seq_start", "seq_end")) and tuples is not None:
            df["window_range_gap"] = tuples - (c[1] - c[0])
        if win is not None and tuples is not None:
            df["win_load_sum_gap"] = win["sum"] - tuples.to_numpy()
        if cum is not None and ordered is not None:
            df["cum_load_sum_gap"] = cum["sum"] - ordered["cum"].to_numpy()
        for col, st in (("worker_tuples_cum", cum), ("worker_tuples_win", win)):
            if st is not None and (c := numeric(df, "workers")):
                df[f"{col}_count_gap"] = st["count"] - c[0].to_numpy()
        if ordered is not None:
            dflt = np.nan if default_tuples is None else float(default_tuples)
            ref = df["cell_id"].map(lambda x: cell_tuples.get(x, dflt)).astype(np.float64).to_numpy()
            last = ordered["last"].to_numpy()
            df["cell_tuples_gap"] = np.where(last, ordered["total"].to_numpy() - ref, 0.0)
            if cum is not None:
                df["cell_load_gap"] = np.where(last, cum["sum"] - ref, 0.0)
        for col in ("imbalance_cum", "imbalance_win"):
            if c := numeric(df, col, "workers"):
                df[f"{col}_excess"] = c[0] - _imbalance_bound(c[1])
        for hi, lo, name in (("latency_p95", "latency_p50", "latency_p95_minus_p50"),
                             ("latency_p99", "latency_p95", "latency_p99_minus_p95"),
                             ("latency_max", "latency_p99", "latency_max_minus_p99")):
            if c := numeric(df, hi, lo):
                df[name] = c[0] - c[1]
    return df


def _metrics_set(columns: tuple[str, ...]) -> list[Any]:
    """``metrics`` is 'all' or 'balance'; a 'balance' row (no queue simulation) has no
    completion times."""
    return [gxe.ExpectColumnValuesToBeInSet(column="metrics", value_set=["all", "balance"])] + [
        gxe.ExpectColumnValuesToBeNull(column=c, row_condition="metrics == 'balance'", condition_parser="pandas")
        for c in columns]


def summary_expectations(manifest: Mapping[str, Any]) -> list[Any]:
    """The family's summary expectations beyond the generic ones."""
    ds = manifest.get("dataset") if isinstance(manifest.get("dataset"), dict) else {}
    m = ds.get("tuples")
    ex: list[Any] = _metrics_set(LATENCY_SUMMARY)
    if isinstance(m, int) and not isinstance(m, bool) and m >= 0:
        ex.append(between("tuples", m, m))
    # conservation of tuples
    ex += [zero("load_sum_gap"), zero("worker_tuples_count_gap"), zero("worker_head_tuples_count_gap")]
    # imbalance never above 1 - 1/n; loads ordered
    ex += [between("imbalance_excess", hi=IMBALANCE_TOL), between("imbalance_avg_excess", hi=IMBALANCE_TOL),
           between("load_spread", 0)]
    # completion time >= execution time
    ex += [between("exec_to_latency", hi=1 + FLOAT_TOL)]
    # ordered quantiles, CDF
    ex += [between(c, 0) for c in ("latency_p50_minus_min", "latency_p95_minus_p50",
                                   "latency_p99_minus_p95", "latency_max_minus_p99")]
    ex += [between("latency_cdf_points", CDF_POINTS, CDF_POINTS), between("latency_cdf_min_step", 0)]
    return ex


def series_expectations(manifest: Mapping[str, Any]) -> list[Any]:
    """The family's series expectations beyond the generic ones."""
    ex = [zero(c) for c in ("window_index_gap", "window_range_gap", "win_load_sum_gap", "cum_load_sum_gap",
                            "worker_tuples_cum_count_gap", "worker_tuples_win_count_gap",
                            "cell_tuples_gap", "cell_load_gap")]
    ex += [between("imbalance_cum_excess", hi=IMBALANCE_TOL), between("imbalance_win_excess", hi=IMBALANCE_TOL)]
    ex += [between(c, 0) for c in ("latency_p95_minus_p50", "latency_p99_minus_p95", "latency_max_minus_p99")]
    return ex + _metrics_set(LATENCY_SERIES)
