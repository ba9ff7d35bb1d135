"""The shedding family's Great Expectations rules, on top of the generic suite
(:mod:`skewbench.validation.results`: schema, cells, nulls by ``not_null_if``, and every METRICS
bound: ratios and shares in [0, 1], latencies and loads >= 0, coverage in [0, 1]).

``summary`` derived columns (null where they do not apply, which GE skips):

``kept``
    ``tuples - dropped`` (>= 0): shed never exceeds the total.
``dropped_ratio_gap``
    ``dropped_ratio - dropped / tuples`` (0, float tolerance).
``latency_order``
    ``completion_latency_mean - queueing_latency_mean`` (>= 0: completion adds execution).
``quantile_order``
    ``queueing_latency_max - queueing_latency_p99`` (>= 0).
``fk_prefix_violations``
    Full Knowledge's ``prefix_violation_share`` (0: it never breaks the prefix constraint,
    las.spec.md T16); null for the other strategies.
``opt_within``
    ``window_dropped - opt_dropped`` where the cell met its bound on the whole stream (goal avg:
    ``prefix_violation_share == 0``; goal max: ``over_bound_share == 0``) and the optimum is proven
    (>= 0: no shedder that meets the bound drops fewer than the offline optimum on the prefix);
    null elsewhere.
``opt_ratio_gap``
    ``drop_optimality - opt_dropped / window_dropped`` (0, float tolerance) where both are known.
``opt_status_known``
    1 when ``opt_status`` is one of the optimum's statuses (optimal, node_limit, time_limit, too_large, error)
    on an operator row, 0 otherwise; null on partition rows.
``imbalance_order``
    ``imbalance_max - imbalance_p50`` (>= 0).
``load_over_total``
    ``load_max - tuples`` (<= 0): no window's worker holds more than the stream.

``series`` derived columns:

``window_index_gap``
    ``window`` minus the row's position within its cell (0: windows are 0, 1, 2, ...).
``trim_gain``
    ``imbalance_before`` minus the largest possible post-trim imbalance is not checked (trimming
    may raise imbalance, shedpart.spec.md A8); instead ``load_max - tuples`` (<= 0).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa

from skewbench.validation.core import between, numeric, with_index_gap, zero

FLOAT_TOL = 1e-9

SUMMARY_DERIVED = ("kept", "dropped_ratio_gap", "latency_order", "quantile_order", "fk_prefix_violations",
                   "opt_within", "opt_ratio_gap", "opt_status_known", "imbalance_order", "load_over_total")
#: the offline optimum's statuses (skewbench.shedding.optimum.STATUSES, restated: GE checks the data)
OPT_STATUSES = ("optimal", "node_limit", "time_limit", "too_large", "error")
SERIES_DERIVED = ("window_index_gap", "trim_gain")
SERIES_INDEX = ("cell_id", "window")
READABLE_BOUNDS = {"dropped_ratio_gap": f"0 (tolerance {FLOAT_TOL:g})", "opt_ratio_gap": f"0 (tolerance {FLOAT_TOL:g})",
                   "opt_status_known": "1"}


def derive_summary(table: pa.Table, frame: pd.DataFrame, manifest: Mapping[str, Any]) -> pd.DataFrame:
    df = frame.copy()
    with np.errstate(all="ignore"):
        if c := numeric(df, "tuples", "dropped"):
            df["kept"] = c[0] - c[1]
            if d := numeric(df, "dropped_ratio"):
                df["dropped_ratio_gap"] = d[0] - c[1] / c[0]
        if c := numeric(df, "completion_latency_mean", "queueing_latency_mean"):
            df["latency_order"] = c[0] - c[1]
        if c := numeric(df, "queueing_latency_max", "queueing_latency_p99"):
            df["quantile_order"] = c[0] - c[1]
        if "strategy" in df.columns and (c := numeric(df, "prefix_violation_share")):
            df["fk_prefix_violations"] = c[0].where(df["strategy"] == "fk")
        if c := numeric(df, "window_dropped", "opt_dropped", "prefix_violation_share", "over_bound_share"):
            goal = df["opt_goal"] if "opt_goal" in df.columns else pd.Series("avg", index=df.index)
            met = ((goal == "avg") & (c[2] == 0)) | ((goal == "max") & (c[3] == 0))
            proven = df["opt_status"] == "optimal" if "opt_status" in df.columns else False
            df["opt_within"] = (c[0] - c[1]).where(met & proven)
            if d := numeric(df, "drop_optimality"):
                df["opt_ratio_gap"] = (d[0] - c[1] / c[0]).where(c[0] > 0)
        if "opt_status" in df.columns and "kind" in df.columns:
            df["opt_status_known"] = df["opt_status"].isin(OPT_STATUSES).astype(float).where(df["kind"] == "operator")
        if c := numeric(df, "imbalance_max", "imbalance_p50"):
            df["imbalance_order"] = c[0] - c[1]
        if c := numeric(df, "load_max", "tuples"):
            df["load_over_total"] = c[0] - c[1]
    return df


def derive_series(table: pa.Table, frame: pd.DataFrame, summary: pd.DataFrame,
                  manifest: Mapping[str, Any]) -> pd.DataFrame:
    df = with_index_gap(frame)
    if c := numeric(df, "load_max", "tuples"):
        df["trim_gain"] = c[0] - c[1]
    return df


def summary_expectations(manifest: Mapping[str, Any]) -> list[Any]:
    return [between("kept", 0), between("dropped_ratio_gap", -FLOAT_TOL, FLOAT_TOL),
            between("latency_order", -FLOAT_TOL), between("quantile_order", 0), zero("fk_prefix_violations"),
            between("opt_within", 0), between("opt_ratio_gap", -FLOAT_TOL, FLOAT_TOL), between("opt_status_known", 1, 1),
            between("imbalance_order", 0), between("load_over_total", None, 0)]


def series_expectations(manifest: Mapping[str, Any]) -> list[Any]:
    return [zero("window_index_gap"), between("trim_gain", None, 0)]
