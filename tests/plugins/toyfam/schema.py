"""Toy results: the largest bin's share, overall and per window."""

from skewbench.results import Column, Metric

COORDINATES = ("workers",)
COLUMNS = (
    Column("tuples", "int64", "tuples placed", bounds=(1, None)),
    Column("workers", "int64", "bins", "both", bounds=(1, None)),
    Column("window", "int64", "window index", "series", bounds=(0, None)),
)
METRICS = (
    Metric("max_share", "the largest bin's share of the tuples", "", False, (0, 1), headline=True, fmt="f3",
           label="max share"),
    Metric("window_max_share", "the largest bin's share of the window's tuples", "", False, (0, 1),
           windowed=True, table="series"),
)
SUMMARY = ("cell_id", "dataset", "dataset_fingerprint", "tuples", "strategy", "workers", "seed", "params",
           "max_share")
SERIES = ("cell_id", "strategy", "workers", "seed", "window", "window_max_share")
