"""Toy expectations: the largest share is at least 1/bins."""

from typing import Any, Mapping

from skewbench.validation.core import between

SUMMARY_DERIVED = ("share_excess",)
SERIES_DERIVED = ()
SERIES_INDEX = ("cell_id", "window")


def derive_summary(table, frame, manifest: Mapping[str, Any]):
    df = frame.copy()
    if {"max_share", "workers"} <= set(df.columns):
        df["share_excess"] = df["max_share"] - 1.0 / df["workers"]
    return df


def derive_series(table, frame, summary, manifest: Mapping[str, Any]):
    return frame.copy()


def summary_expectations(manifest: Mapping[str, Any]) -> list[Any]:
    return [between("share_excess", 0)]


def series_expectations(manifest: Mapping[str, Any]) -> list[Any]:
    return []
