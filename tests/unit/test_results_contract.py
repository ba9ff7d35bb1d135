"""The results contract: each family's METRICS table drives the Arrow schema, the GE bounds, the
report's labels, MLflow's series and docs/results.md."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

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
    from skewbench.present import reports

    s = results.schema("grouping")
    assert s.windowed == ("imbalance_cum", "imbalance_win", "capacity", "latency_mean", "latency_p99")
    assert s.timing_columns == ("route_seconds", "sim_tuples_per_s", "wall_seconds")
    assert [h for _, h, _ in reports._table_columns("grouping")] == [
        "imbalance", "vs best", "latency mean (ms)", "latency p99 (ms)", "speedup vs RR", "replication",
        "merge/window (records)", "capacity (tuples/s)"]
    assert s.param_columns == ("strategy", "workers", "sources", "seed", "dataset", "dataset_fingerprint",
                               "time_mode", "provisioning", "metrics", "demand_objective_ms")
    assert s.curves == (("scaling_capacity", "scaling_workers"),)
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


# ---------------------------------------------------------------------------------------------
# results tables built without pandas (rows_table) equal pyarrow's own from_pylist

_ROWS_SCHEMA = pa.schema([("i", pa.int64()), ("f", pa.float64()), ("s", pa.string()),
                          ("li", pa.list_(pa.int64())), ("lf", pa.list_(pa.float64()))])


def _maybe(strategy):
    return st.one_of(st.none(), strategy)


_ints = st.integers(-2**63, 2**63 - 1)
_floats = st.floats(allow_nan=True, allow_infinity=True)
_row = st.fixed_dictionaries({}, optional={
    "i": _maybe(_ints), "f": _maybe(st.one_of(_floats, st.integers(-2**53, 2**53))), "s": _maybe(st.text()),
    "li": _maybe(st.lists(_maybe(_ints), max_size=4)), "lf": _maybe(st.lists(_maybe(_floats), max_size=4))})


@given(st.lists(_row, max_size=12))
def test_rows_table_equals_from_pylist(rows):
    from skewbench.results import rows_table

    mine = rows_table(rows, _ROWS_SCHEMA)
    ref = pa.Table.from_pylist(rows, schema=_ROWS_SCHEMA)
    mine.validate(full=True)
    assert mine.schema == ref.schema
    # equal including NaN payloads and nulls: compare the Parquet-visible values as Python objects
    assert repr(mine.to_pylist()) == repr(ref.to_pylist())
    assert [c.null_count for c in mine.columns] == [c.null_count for c in ref.columns]


def test_rows_table_refuses_a_fraction_in_an_integer_column():
    from skewbench.results import rows_table

    with pytest.raises(SkewbenchError, match="column i: 1.5 is not an integer"):
        rows_table([{"i": 1.5}], _ROWS_SCHEMA)
    assert rows_table([{"i": 2.0}], _ROWS_SCHEMA).column("i").to_pylist() == [2]


def test_writing_results_does_not_import_pandas(tmp_path):
    """pyarrow imports pandas for any pa.array call; a short CLI replay paid 0.35-0.5 s for it."""
    import subprocess
    import sys

    code = ("import sys; from skewbench.results import write_results; "
            f"write_results({str(tmp_path / 'r')!r}, 'grouping', [{{'strategy': 'kg', 'workers': 5}}], [], {{}}); "
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
