"""The allocation family's Great Expectations rules, on top of the generic suite
(:mod:`skewbench.validation.results`: schema, cells, nulls by ``not_null_if``, and every METRICS
bound: optimality ratios and shares in [0, 1], gains, times and counts >= 0).

``summary`` derived columns (null where they do not apply, which GE skips):

``gain_excess``
    ``gain_total - imc_total`` (<= 0: no allocation keeps more than all the traffic on-node).
``capacity_violations``
    ``violations`` of the strategies that respect capacity by design (every one but Storm's round
    robin): 0.  A strategy that cannot place a task leaves it unplaced, never overloads a node.

``series`` derived columns:

``window_index_gap``
    ``window`` minus the row's position within its cell (0: instances in dataset order).
``gain_over_opt``
    ``gain - opt_gain`` (<= 0 up to a float tolerance) where no node is overloaded: no feasible
    allocation beats the optimum (or OPT's bound when its time limit was hit).
``capacity_violations``
    as in the summary, per instance.
``opt_status``
    the reference optimum's status is recorded, one of optimal, time_limit, infeasible,
    too_large, off (its gap is checked by ``not_null_if``).
"""

from __future__ import annotations

from typing import Any, Mapping

import great_expectations.expectations as gxe
import numpy as np
import pandas as pd
import pyarrow as pa

from skewbench.validation.core import between, numeric, with_index_gap, zero

FLOAT_TOL = 1e-6
STATUSES = ["optimal", "time_limit", "infeasible", "too_large", "off", "error"]

SUMMARY_DERIVED = ("gain_excess", "capacity_violations")
SERIES_DERIVED = ("window_index_gap", "gain_over_opt", "capacity_violations")
SERIES_INDEX = ("cell_id", "window")
READABLE_BOUNDS = {"gain_over_opt": f"<= 0 (tolerance {FLOAT_TOL:g} relative)"}


def _respecting(df: pd.DataFrame) -> pd.Series:
    from skewbench import registry

    def ok(name: Any) -> bool:
        try:
            return bool(getattr(registry.get("allocation", str(name)), "respects_capacity", True))
        except Exception:  # an unknown strategy is reported by the generic suite
            return True

    return df["strategy"].map(ok).astype(bool)


def derive_summary(table: pa.Table, frame: pd.DataFrame, manifest: Mapping[str, Any]) -> pd.DataFrame:
    df = frame.copy()
    with np.errstate(all="ignore"):
        if c := numeric(df, "gain_total", "imc_total"):
            df["gain_excess"] = c[0] - c[1] * (1 + FLOAT_TOL)
        if "strategy" in df.columns and (c := numeric(df, "violations")):
            df["capacity_violations"] = c[0].where(_respecting(df))
    return df


def derive_series(table: pa.Table, frame: pd.DataFrame, summary: pd.DataFrame,
                  manifest: Mapping[str, Any]) -> pd.DataFrame:
    df = with_index_gap(frame)
    with np.errstate(all="ignore"):
        if c := numeric(df, "gain", "opt_gain", "violations"):  # an overloaded allocation may gain more
            df["gain_over_opt"] = (c[0] - c[1] - FLOAT_TOL * np.maximum(1.0, c[1].abs())).where(c[2] == 0)
        if "strategy" in df.columns and (c := numeric(df, "violations")):
            df["capacity_violations"] = c[0].where(_respecting(df))
    return df


def summary_expectations(manifest: Mapping[str, Any]) -> list[Any]:
    return [between("gain_excess", None, 0), zero("capacity_violations")]


def series_expectations(manifest: Mapping[str, Any]) -> list[Any]:
    return [zero("window_index_gap"), between("gain_over_opt", None, 0), zero("capacity_violations"),
            gxe.ExpectColumnValuesToBeInSet(column="opt_status", value_set=STATUSES)]
