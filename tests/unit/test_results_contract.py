"""The results contract: each family's METRICS table drives the Arrow schema, the GE bounds, the
report's labels, MLflow's series and docs/results.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from skewbench import results
from skewbench.errors import SkewbenchError
from skewbench.families import families
from skewbench.results import Column, Metric

REPO = Path(__file__).resolve().parents[2]


def test_docs_results_md_is_generated_from_the_schemas():
    assert (REPO / "docs" / "results.md").read_text() == results.render_docs(), \
        "docs/results.md is stale: run `make docs`"


@pytest.mark.parametrize("family", list(families()))
def test_every_column_is_described_once(family):
    s = results.schema(family)
    for table in results.TABLES:
        arrow = s.arrow(table)
        assert arrow.names == list(s.order(table))
        for f in s.fields(table):
            assert len(f.meaning.split()) >= 2, f  # a meaning, not a placeholder
    assert set(s.timing_columns) <= set(s.summary_order)
    assert all(f"series:{m}" in s.metrics for m in s.windowed)
    assert s.headline and all(m.table == "summary" for m in s.headline)


def test_grouping_drives_the_consumers():
    from skewbench import reports

    s = results.schema("grouping")
    assert s.windowed == ("imbalance_cum", "imbalance_win", "latency_mean", "latency_p99")
    assert s.timing_columns == ("route_seconds", "sim_tuples_per_s", "wall_seconds")
    assert [h for _, h, _ in reports._table_columns("grouping")] == [
        "imbalance", "vs best", "latency mean (ms)", "latency p99 (ms)", "speedup vs RR", "replication"]
    assert s.param_columns == ("strategy", "workers", "sources", "seed", "dataset", "dataset_fingerprint",
                               "time_mode", "provisioning")
    assert s.cell_name({"strategy": "kg", "workers": 5, "sources": 2, "seed": 0}) == "kg n=5 s=2 seed=0"


class _Mod:
    COORDINATES = ("workers",)
    COLUMNS = (Column("workers", "int64", "bins", "both"),)
    METRICS = (Metric("x", "a share", bounds=(0, 1)),)
    SUMMARY = ("cell_id", "strategy", "workers", "seed", "x")
    SERIES = ("cell_id", "strategy", "workers", "seed")


@pytest.mark.parametrize("change,needle", [
    ({"SUMMARY": ("cell_id", "strategy", "workers", "seed", "x", "y")}, "neither a Column nor a Metric"),
    ({"SUMMARY": ("cell_id", "strategy", "workers", "seed")}, "not in its table's column order"),
    ({"METRICS": (Metric("x", "a"), Metric("x", "b"))}, "described twice"),
    ({"SERIES": ("cell_id", "strategy", "seed")}, "both tables need the column 'workers'"),
])
def test_an_incomplete_schema_is_refused(change, needle):
    mod = type("M", (_Mod,), change)
    with pytest.raises(SkewbenchError, match=needle):
        results.build_schema("t", mod)
    assert results.build_schema("t", _Mod).arrow("summary").names == list(_Mod.SUMMARY)
