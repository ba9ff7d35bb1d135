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
``busy_ms_count_gap``
    valid ``busy_ms`` entries minus ``workers`` (0).
``capacity_gap``
    ``capacity`` over ``1000 * tuples / max(busy_ms)``, minus 1 (0 within 1e-9).
``capacity_window_excess``, ``capacity_balanced_excess``, ``key_limit_excess``
    ``capacity_window / capacity - 1`` (<= 0: no window's busiest worker keeps up with a faster
    rate than the whole stream's), ``capacity / capacity_balanced - 1`` (<= 0: an even spread
    is the best), and, for a strategy that kept every key whole on equal workers,
    ``capacity / key_limit - 1`` (<= 0: the worker holding the hottest key is at least as busy
    as that key); within 1e-9.
``scaling_faults``
    rows whose capacity curve is inconsistent (0): lists of unequal length, worker counts not
    increasing, the cell's own n missing from a non-empty curve or its capacity there not the
    cell's, a skew ceiling other than the curve's (capacity growing by less than 5% per doubling
    from it on, and not from the point before it), a demand list not as long as its rates, or a
    demand whose capacity is below its rate or, without a latency objective, not the first grid
    point that reaches it.

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

import math
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
    "busy_ms_count_gap", "capacity_gap", "capacity_window_excess", "capacity_balanced_excess", "key_limit_excess",
    "scaling_faults",
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
        busy = list_stats(table, "busy_ms")
        if busy is not None and (c := numeric(df, "workers")):
            df["busy_ms_count_gap"] = busy["count"] - c[0].to_numpy()
        if "busy_ms" in df.columns and (c := numeric(df, "capacity", "tuples")):
            top = np.array([np.max(b) if b is not None and len(b) else np.nan for b in df["busy_ms"]], dtype=float)
            df["capacity_gap"] = c[0] / (1000.0 * c[1] / top) - 1.0
        for col, num, den in (("capacity_window_excess", "capacity_window", "capacity"),
                              ("capacity_balanced_excess", "capacity", "capacity_balanced")):
            if c := numeric(df, num, den):
                df[col] = c[0] / c[1] - 1.0
        config = manifest.get("config") if isinstance(manifest.get("config"), dict) else {}
        if (c := numeric(df, "capacity", "key_limit")) and not config.get("worker_speed"):
            df["key_limit_excess"] = (c[0] / c[1] - 1.0).fillna(0.0)
        if {"workers", "capacity", "scaling_workers", "scaling_capacity", "ceiling_workers", "demand",
                "demand_rates", "demand_objective_ms"} <= set(df.columns):
            df["scaling_faults"] = [int(bool(scaling_faults(r))) for r in df.to_dict("records")]
    return df


def scaling_faults(row: Mapping[str, Any]) -> list[str]:
    """What is inconsistent in a summary row's capacity curve, skew ceiling and demand (empty:
    nothing), checked point by point."""
    ns = [int(n) for n in (row["scaling_workers"] if row["scaling_workers"] is not None else [])]
    caps = [float(c) for c in (row["scaling_capacity"] if row["scaling_capacity"] is not None else [])]
    rates = [float(r) for r in (row["demand_rates"] if row["demand_rates"] is not None else [])]
    dem = [int(d) for d in (row["demand"] if row["demand"] is not None else [])]
    if len(ns) != len(caps) or len(dem) != len(rates):
        return ["list lengths"]
    if not ns:
        return [] if row["ceiling_workers"] is None or pd.isna(row["ceiling_workers"]) else ["a ceiling without a curve"]
    out = []
    if any(b <= a for a, b in zip(ns, ns[1:])):
        out.append("worker counts not increasing")
    if int(row["workers"]) not in ns:
        out.append("the cell's n is not on the curve")
    elif caps[ns.index(int(row["workers"]))] != float(row["capacity"]):
        out.append("the curve's capacity at the cell's n is not the cell's")
    flat = [caps[i + 1] < caps[i] * 1.05 ** math.log2(ns[i + 1] / ns[i]) for i in range(len(ns) - 1)]
    first = None
    if flat and flat[-1]:
        first = len(flat)
        while first > 0 and flat[first - 1]:
            first -= 1
    want = ns[first] if first is not None else None
    got = None if row["ceiling_workers"] is None or pd.isna(row["ceiling_workers"]) else int(row["ceiling_workers"])
    if got != want:
        out.append(f"ceiling {got}, the curve's {want}")
    objective = float(row["demand_objective_ms"] or 0.0)
    for rate, d in zip(rates, dem):
        reach = [n for n, c in zip(ns, caps) if c >= rate]
        if d and (d not in ns or caps[ns.index(d)] < rate):
            out.append(f"demand {d} below its rate {rate:g}")
        elif not objective and d != (reach[0] if reach else 0):
            out.append(f"demand {d} for {rate:g}, the curve's {reach[0] if reach else 0}")
    return out


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
    # capacity (issue 42): from the busiest worker, bounded by the windows, the even spread and the hot key
    ex += [zero("busy_ms_count_gap"), between("capacity_gap", -FLOAT_TOL, FLOAT_TOL), zero("scaling_faults")]
    ex += [between(c, hi=FLOAT_TOL) for c in ("capacity_window_excess", "capacity_balanced_excess",
                                              "key_limit_excess")]
    return ex


def series_expectations(manifest: Mapping[str, Any]) -> list[Any]:
    """The family's series expectations beyond the generic ones."""
    ex = [zero(c) for c in ("window_index_gap", "window_range_gap", "win_load_sum_gap", "cum_load_sum_gap",
                            "worker_tuples_cum_count_gap", "worker_tuples_win_count_gap",
                            "cell_tuples_gap", "cell_load_gap")]
    ex += [between("imbalance_cum_excess", hi=IMBALANCE_TOL), between("imbalance_win_excess", hi=IMBALANCE_TOL)]
    ex += [between(c, 0) for c in ("latency_p95_minus_p50", "latency_p99_minus_p95", "latency_max_minus_p99")]
    return ex + _metrics_set(LATENCY_SERIES)
