"""Great Expectations validation of replay results (:mod:`skewbench.validation.results`).

Real results are made once per module: a 20k-tuple Zipf dataset with costs, replayed through
four strategies x two worker counts x two seeds (16 cells, 10 windows each).  Each test copies
them and corrupts the copy by rewriting ``summary.parquet`` / ``series.parquet`` with pyarrow.

A GE run costs a few seconds (about a hundred expectations), so the corruptions that stay
inside one cell are all applied to one copy, each to a cell of its own, and validated in a single
run: every corruption must be reported with its expectation and column *and* attributed to its
own cell (the report names the failing cells), so none can hide behind another.  Table-level
corruptions (a duplicated or missing cell row, a wrong schema) each get their own run.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from skewbench.datasets.generators import StreamSpec, generate
from skewbench.errors import SkewbenchError, ValidationFailed
from skewbench.grouping.engine import ReplayConfig, grid, replay_to_dir
from skewbench.grouping.schema import LATENCY_SERIES, LATENCY_SUMMARY
from skewbench.results import MANIFEST, schemas

GROUPING_SUMMARY, GROUPING_SERIES = schemas("grouping")
from skewbench.validation.results import validate_results
from skewbench.validation import ValidationReport

BETWEEN = "expect_column_values_to_be_between"
NOT_NULL = "expect_column_values_to_not_be_null"
ROW_COUNT = "expect_table_row_count_to_equal"
UNIQUE = "expect_column_values_to_be_unique"
EQUAL_SET = "expect_column_distinct_values_to_equal_set"
COLUMNS = "expect_table_columns_to_match_ordered_list"
BE_NULL = "expect_column_values_to_be_null"
IN_SET = "expect_column_values_to_be_in_set"

N_CELLS = 16
WINDOWS = 10


# --------------------------------------------------------------------------------------------
# results and their corruption

@pytest.fixture(scope="module")
def base_results(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("results-validation")
    ds, res = root / "ds", root / "res"
    generate(StreamSpec.zipf(1.2, 500, 20000, 1, cost={"model": "levels", "levels": 4, "low": 1, "high": 4}), ds)
    replay_to_dir(ds, grid(["kg", "pkg", "wc", "osg"], [5, 10], [2], [0, 1]), res, ReplayConfig(window=2000))
    return res


@pytest.fixture
def results(base_results, tmp_path) -> Path:
    out = tmp_path / "res"
    shutil.copytree(base_results, out)
    return out


def read_rows(res: Path, table: str) -> list[dict[str, Any]]:
    return pq.read_table(res / f"{table}.parquet").to_pylist()


def write_rows(res: Path, table: str, rows: list[dict[str, Any]], schema: pa.Schema | None = None) -> None:
    schema = schema or (GROUPING_SUMMARY if table == "summary" else GROUPING_SERIES)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), res / f"{table}.parquet")


class Corruptor:
    """Edits rows of a results copy in memory, one cell per corruption, then writes them back."""

    def __init__(self, res: Path):
        self.res = res
        self.summary = read_rows(res, "summary")
        self.series = read_rows(res, "series")

    def windows(self, cell: int) -> list[dict[str, Any]]:
        cid = self.summary[cell]["cell_id"]
        return sorted((r for r in self.series if r["cell_id"] == cid), key=lambda r: r["window"])

    def write(self) -> None:
        write_rows(self.res, "summary", self.summary)
        write_rows(self.res, "series", self.series)


# Each corruption edits cell ``i`` and returns
# {(table, expectation, column): (substring of the observed value, cells named by the report)}.
# Series cells are named ``cell_id@window``.

def null_metric(c: Corruptor, i: int) -> dict:
    c.summary[i]["latency_p95"] = None
    return {("summary", NOT_NULL, "latency_p95"): ("1 null value(s)", [c.summary[i]["cell_id"]])}


def loads_not_summing(c: Corruptor, i: int) -> dict:
    c.summary[i]["worker_tuples"][1] += 3
    return {("summary", BETWEEN, "load_sum_gap"): ("[3.0]", [c.summary[i]["cell_id"]])}


def imbalance_above_bound(c: Corruptor, i: int) -> dict:
    row = c.summary[i]
    bound = 1.0 - 1.0 / row["workers"]
    row["imbalance"] = bound + 0.05  # still below 1: only the 1 - 1/n bound catches it
    assert row["imbalance"] < 1.0
    return {("summary", BETWEEN, "imbalance_excess"): (repr(row["imbalance"] - bound), [row["cell_id"]])}


def negative_imbalance(c: Corruptor, i: int) -> dict:
    c.summary[i]["imbalance"] = -0.01
    return {("summary", BETWEEN, "imbalance"): ("[-0.01]", [c.summary[i]["cell_id"]])}


def p95_above_p99(c: Corruptor, i: int) -> dict:
    row = c.summary[i]
    row["latency_p95"] = row["latency_p99"] + 1.5
    return {("summary", BETWEEN, "latency_p99_minus_p95"):
            (repr(row["latency_p99"] - row["latency_p95"]), [row["cell_id"]])}


def latency_below_exec(c: Corruptor, i: int) -> dict:
    row = c.summary[i]
    row["exec_mean"] = row["latency_mean"] * 1.25
    return {("summary", BETWEEN, "exec_to_latency"):
            (repr(row["exec_mean"] / row["latency_mean"]), [row["cell_id"]])}


def load_max_above_one(c: Corruptor, i: int) -> dict:
    c.summary[i]["load_max"] = 1.2
    return {("summary", BETWEEN, "load_max"): ("[1.2]", [c.summary[i]["cell_id"]])}


def cdf_not_monotone(c: Corruptor, i: int) -> dict:
    cdf = c.summary[i]["latency_cdf"]
    k = next(k for k in range(50, 100) if cdf[k + 1] > cdf[k])
    cdf[k], cdf[k + 1] = cdf[k + 1], cdf[k]
    return {("summary", BETWEEN, "latency_cdf_min_step"): (repr(cdf[k + 1] - cdf[k]), [c.summary[i]["cell_id"]])}


def cdf_short(c: Corruptor, i: int) -> dict:
    c.summary[i]["latency_cdf"].pop()
    return {("summary", BETWEEN, "latency_cdf_points"): ("[100.0]", [c.summary[i]["cell_id"]])}


def series_windows_not_summing(c: Corruptor, i: int) -> dict:
    ws = c.windows(i)
    ws[3]["tuples"] += 7
    cid = ws[0]["cell_id"]
    return {
        # the cell's windows no longer add up to the summary's tuples (reported on its last window)
        ("series", BETWEEN, "cell_tuples_gap"): ("[7.0]", [f"{cid}@{WINDOWS - 1}"]),
        # and the window disagrees with its seq range, its own loads and the cumulative loads after it
        ("series", BETWEEN, "window_range_gap"): ("[7.0]", [f"{cid}@3"]),
        ("series", BETWEEN, "win_load_sum_gap"): ("[-7.0]", [f"{cid}@3"]),
        ("series", BETWEEN, "cum_load_sum_gap"): ("[-7.0, -7.0", [f"{cid}@{w}" for w in range(3, WINDOWS)]),
    }


def series_last_loads_not_summing(c: Corruptor, i: int) -> dict:
    ws = c.windows(i)
    ws[-1]["worker_tuples_cum"][0] -= 2
    cid = ws[0]["cell_id"]
    last = f"{cid}@{WINDOWS - 1}"
    return {("series", BETWEEN, "cell_load_gap"): ("[-2.0]", [last]),
            ("series", BETWEEN, "cum_load_sum_gap"): ("-2.0]", [last])}


def series_nan_latency(c: Corruptor, i: int) -> dict:
    ws = c.windows(i)
    ws[5]["latency_p50"] = math.nan  # NaN, not null, in a window with tuples
    assert ws[5]["tuples"] > 0
    return {("series", NOT_NULL, "latency_p50"): ("1 null value(s)", [f"{ws[0]['cell_id']}@5"])}


def balance_row_with_latency(c: Corruptor, i: int) -> dict:
    row = c.summary[i]
    row["metrics"] = "balance"  # counted only: no completion times, but one is left
    for col in LATENCY_SUMMARY:
        if col != "latency_mean":
            row[col] = None
    return {("summary", BE_NULL, "latency_mean"): (f"[{row['latency_mean']!r}]", [row["cell_id"]])}


def series_balance_window_with_latency(c: Corruptor, i: int) -> dict:
    ws = c.windows(i)
    for w in ws:
        w["metrics"] = "balance"
        for col in LATENCY_SERIES:
            if not (w["window"] == 3 and col == "latency_max"):
                w[col] = None
    return {("series", BE_NULL, "latency_max"): (f"[{ws[3]['latency_max']!r}]", [f"{ws[0]['cell_id']}@3"])}


def unknown_metrics_value(c: Corruptor, i: int) -> dict:
    c.summary[i]["metrics"] = "latency"
    return {("summary", IN_SET, "metrics"): ("['latency']", [c.summary[i]["cell_id"]])}


CELL_CORRUPTIONS: list[Callable[[Corruptor, int], dict]] = [
    null_metric, loads_not_summing, imbalance_above_bound, negative_imbalance, p95_above_p99,
    latency_below_exec, load_max_above_one, cdf_not_monotone, cdf_short, series_windows_not_summing,
    series_last_loads_not_summing, series_nan_latency, balance_row_with_latency,
    series_balance_window_with_latency, unknown_metrics_value,
]


# --------------------------------------------------------------------------------------------
# checks

def failure_map(report) -> dict:
    return {((f.get("details") or {}).get("suite"), f["expectation"], f["column"]): f for f in report.failures}


def failure_line(msg: str, table: str, expectation: str, column: str | None) -> str:
    lines = [ln for ln in msg.splitlines()[1:]
             if f"[{table}] {expectation}" in ln and (column is None or f"(column={column})" in ln)]
    assert len(lines) == 1, msg
    return lines[0]


def check_failed(report, res: Path, expected: dict) -> str:
    """``expected``: {(table, expectation, column): (observed substring(s), cells or None)}."""
    assert isinstance(report, ValidationReport)
    assert report.success is False
    assert report.path == str(res.absolute())
    got = failure_map(report)
    assert set(got) == set(expected), report.message()
    head = (rf"^results {re.escape(str(res.absolute()))} \(dataset {re.escape(report.dataset)}\) failed validation: "
            rf"{len(expected)} expectation\(s\) not met\n")
    with pytest.raises(ValidationFailed, match=head) as exc:
        report.raise_for_failure()
    msg = str(exc.value)
    for key, (observed, cells) in expected.items():
        line = failure_line(msg, *key)
        for obs in (observed,) if isinstance(observed, str) else observed:
            assert obs in line, (obs, line)
        if cells is not None:
            assert got[key]["details"].get("cells") == cells, (key, got[key])
            assert cells[0] in line
    d = report.to_dict()
    json.dumps(d)  # JSON-able, GE's results included
    assert set(d["ge_result"]) == {"summary", "series"}
    return msg


# --------------------------------------------------------------------------------------------
# tests

def test_clean_results_pass_and_keep_ge_json(base_results, tmp_path):
    keep = tmp_path / "keep" / "validation"
    report = validate_results(base_results, keep_dir=keep)
    assert isinstance(report, ValidationReport)
    assert report.success, report.message()
    assert report.failures == []
    report.raise_for_failure()  # no exception
    assert report.tuples == 20000
    assert str(base_results.absolute()) in report.message()
    for table, rows in (("summary", N_CELLS), ("series", N_CELLS * WINDOWS)):
        ge = json.loads((keep / f"validation-{table}.json").read_text())
        assert ge["success"] is True
        assert ge["statistics"]["unsuccessful_expectations"] == 0
        assert ge["statistics"]["evaluated_expectations"] > 30
        types = {r["expectation_config"]["type"] for r in ge["results"]}
        assert {NOT_NULL, BETWEEN, COLUMNS} <= types
        assert ge == report.to_dict()["ge_result"][table]
    json.dumps(report.to_dict())


def test_cell_corruptions_each_caught_in_its_own_cell(results):
    c = Corruptor(results)
    expected: dict = {}
    for i, corrupt in enumerate(CELL_CORRUPTIONS):
        for key, (observed, cells) in corrupt(c, i).items():
            # two corruptions may fail the same expectation: each in its own cell (in row order)
            old_observed, old_cells = expected.get(key, ((), []))
            expected[key] = (old_observed + (observed,), old_cells + cells)
    c.write()
    report = validate_results(results)
    msg = check_failed(report, results, expected)
    assert "in cell(s) " in msg


def test_duplicated_cell_row(results):
    rows = read_rows(results, "summary")
    write_rows(results, "summary", rows + [dict(rows[2])])
    cid = rows[2]["cell_id"]
    check_failed(validate_results(results), results, {
        ("summary", ROW_COUNT, None): (f"observed {N_CELLS + 1}", None),
        ("summary", UNIQUE, "cell_id"): (f"['{cid}', '{cid}']", [cid]),
    })


def test_missing_cell_row(results):
    rows = read_rows(results, "summary")
    cid = rows[5]["cell_id"]
    write_rows(results, "summary", rows[:5] + rows[6:])
    check_failed(validate_results(results), results, {
        ("summary", ROW_COUNT, None): (f"observed {N_CELLS - 1}", None),
        ("summary", EQUAL_SET, "cell_id"): (f"'missing': ['{cid}']", None),
    })


def test_schema_mismatch(results):
    t = pq.read_table(results / "series.parquet")
    t = t.drop_columns(["stats"]).append_column("extra", pa.array([1] * t.num_rows, pa.int64()))
    pq.write_table(t, results / "series.parquet")
    check_failed(validate_results(results), results, {
        ("series", COLUMNS, None): ("{'missing': ['stats'], 'unexpected': ['extra']}", None),
    })


def test_truncated_parquet_is_a_clear_error(results):
    f = results / "summary.parquet"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    head = f"results {results.absolute()}: cannot read summary.parquet: corrupted or truncated Parquet file ("
    with pytest.raises(SkewbenchError, match=f"^{re.escape(head)}") as exc:
        validate_results(results)
    msg = str(exc.value)
    assert str(results.absolute()) in msg and "summary.parquet" in msg
    assert "corrupted or truncated" in msg
    assert "\n" not in msg


@pytest.mark.parametrize("damage", ["no_dir", "no_manifest", "no_series", "bad_manifest"])
def test_missing_or_incomplete_results_are_clear_errors(results, tmp_path, damage):
    path = results
    if damage == "no_dir":
        path = tmp_path / "nowhere"
        want = f"results {path.absolute()}: no such directory"
    elif damage == "no_manifest":
        (results / MANIFEST).unlink()
        want = f"{results.absolute()} is not a complete skewbench results directory (no {MANIFEST})"
    elif damage == "no_series":
        (results / "series.parquet").unlink()
        want = f"results {results.absolute()}: series.parquet is missing (incomplete results directory)"
    else:
        (results / MANIFEST).write_text('{"family": "grouping"')
        want = f"results {results.absolute()}: {MANIFEST} is unreadable or not JSON (Expecting ',' delimiter: line 1"
    with pytest.raises(SkewbenchError, match=f"^{re.escape(want)}") as exc:
        validate_results(path)
    assert "\n" not in str(exc.value)
    assert not isinstance(exc.value, ValidationFailed)
