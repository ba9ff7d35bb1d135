"""Great Expectations validation of stream datasets, on pandas and on Spark.

A 200k-tuple Zipf dataset in four parts of unequal size is written once per module with the
contract's writer; each test copies it, corrupts the copy with pyarrow (or edits its metadata)
and checks that the right expectation fails with the observed value in the message.  Pandas
runs each corruption on its own; Spark (expensive per run) gets one dataset carrying all of
them at once and must report the same failures.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from skewbench.datasets.contract import METADATA_FILE
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.errors import DatasetError, ValidationFailed
from skewbench.validation import validate_dataset, zipf_table

M = 200_000
N_KEYS = 1000
ALPHA = 1.0
SEED = 20240611
N_PARTS = 4
NAME = "zipf-validation-test"

BETWEEN = "expect_column_values_to_be_between"
NOT_NULL = "expect_column_values_to_not_be_null"
TYPE = "expect_column_values_to_be_in_type_list"
ROW_COUNT = "expect_table_row_count_to_equal"


# --------------------------------------------------------------------------------------------
# dataset construction and corruption

def write_dataset(out: Path) -> dict:
    """A real dataset from the project's generator: four parts (60k, 60k, 60k, 20k tuples)."""
    spec = StreamSpec.zipf(ALPHA, N_KEYS, M, SEED, block_size=60_000,
                           cost={"model": "uniform", "low": 0.5, "high": 4.0})
    return generate(spec, out, name=NAME)


def part_path(ds: Path, index: int) -> Path:
    return ds / f"part-{index:06d}.parquet"


def read_part(ds: Path, index: int) -> dict[str, np.ndarray]:
    t = pq.read_table(part_path(ds, index))
    return {c: t.column(c).to_numpy().copy() for c in t.column_names}


def write_part(ds: Path, index: int, cols: dict[str, np.ndarray],
               null_mask: dict[str, np.ndarray] | None = None) -> None:
    """Rewrite a part; columns in ``null_mask`` get nulls (so their field is nullable)."""
    null_mask = null_mask or {}
    arrays = {c: pa.array(v, mask=null_mask.get(c)) for c, v in cols.items()}
    pq.write_table(pa.table(arrays), part_path(ds, index))
    # what a faulty writer would leave: bad rows, metadata consistent with the file (a file
    # changed behind the metadata's back is refused earlier, by open_dataset: test_bad_inputs)
    size = part_path(ds, index).stat().st_size
    edit_meta(ds, lambda m: [f.update(bytes=size) for f in m["files"] if f["name"] == part_path(ds, index).name])


def edit_part(ds: Path, index: int, fn) -> None:
    cols = read_part(ds, index)
    fn(cols)
    write_part(ds, index, cols)


def edit_meta(ds: Path, fn) -> None:
    meta = json.loads((ds / METADATA_FILE).read_text())
    fn(meta)
    (ds / METADATA_FILE).write_text(json.dumps(meta))


# Each corruption returns {(expectation, column): substring of the observed value in the
# report message} for the failures it must cause on pandas; Spark differs only where noted.

def null_key(ds: Path) -> dict:
    cols = read_part(ds, 1)
    mask = np.zeros(len(cols["key"]), dtype=bool)
    mask[5] = True
    write_part(ds, 1, cols, null_mask={"key": mask})
    # pandas turns an int64 column with nulls into float64; Spark keeps LongType
    return {(NOT_NULL, "key"): "1 null value(s)", (TYPE, "key"): "observed float64"}


def key_out_of_range(ds: Path) -> dict:
    edit_part(ds, 2, lambda c: c["key"].__setitem__(17, N_KEYS))
    return {(BETWEEN, "key"): str(N_KEYS)}


def seq_swap_in_part(ds: Path) -> dict:
    def fn(c):
        c["seq"][[10, 11]] = c["seq"][[11, 10]]
    edit_part(ds, 2, fn)
    return {(BETWEEN, "seq_gap"): "[1, -1]"}


def seq_swap_across_files(ds: Path) -> dict:
    a, b = read_part(ds, 0), read_part(ds, 1)
    a["seq"][-1], b["seq"][0] = b["seq"][0], a["seq"][-1]
    write_part(ds, 0, a)
    write_part(ds, 1, b)
    return {(BETWEEN, "seq_gap"): "[1, -1]"}


def negative_cost(ds: Path) -> dict:
    edit_part(ds, 3, lambda c: c["cost"].__setitem__(7, -1.5))
    return {(BETWEEN, "cost"): "-1.5"}


def zero_cost(ds: Path) -> dict:
    edit_part(ds, 0, lambda c: c["cost"].__setitem__(0, 0.0))
    return {(BETWEEN, "cost"): "[0.0]"}


def row_count_off(ds: Path) -> dict:
    edit_meta(ds, lambda m: m.__setitem__("tuples", M + 1))
    return {(ROW_COUNT, None): f"observed {M}"}


def ts_decreasing(ds: Path) -> dict:
    cols = read_part(ds, 2)
    cols["ts"][100] = cols["ts"][99] - 0.25
    write_part(ds, 2, cols)
    step = cols["ts"][100] - cols["ts"][99]
    return {(BETWEEN, "ts_step"): repr(float(step))}


def ts_decreasing_across_files(ds: Path) -> dict:
    a, b = read_part(ds, 0), read_part(ds, 1)
    b["ts"][0] = a["ts"][-1] - 0.5
    write_part(ds, 1, b)
    return {(BETWEEN, "ts_step"): repr(float(b["ts"][0] - a["ts"][-1]))}


def uniform_keys(ds: Path) -> dict:
    rng = np.random.default_rng(1)
    def fn(c):
        c["key"][:] = rng.integers(0, N_KEYS, len(c["key"]))
    for i in range(N_PARTS):
        edit_part(ds, i, fn)
    top = json.loads((ds / METADATA_FILE).read_text())["expected_top"]
    return {(BETWEEN, "z"): f"key {top[0]['key']} (rank 1) frequency "}


CORRUPTIONS = [null_key, key_out_of_range, seq_swap_in_part, seq_swap_across_files, negative_cost,
               zero_cost, row_count_off, ts_decreasing, ts_decreasing_across_files, uniform_keys]


# --------------------------------------------------------------------------------------------
# fixtures

@pytest.fixture(scope="module")
def base_dataset(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("validation") / "zipf"
    write_dataset(out)
    return out


@pytest.fixture
def dataset(base_dataset, tmp_path) -> Path:
    out = tmp_path / "zipf"
    shutil.copytree(base_dataset, out)
    return out



def failure_map(report) -> dict:
    return {(f["expectation"], f["column"]): f for f in report.failures}


def check_report(report, expected: dict) -> None:
    assert report.success is False
    assert report.dataset == NAME
    assert set(failure_map(report)) == set(expected), report.message()
    head = (rf"^dataset {re.escape(NAME)} \({re.escape(report.path)}\) failed validation on {report.engine}: "
            rf"{len(expected)} expectation\(s\) not met\n")
    with pytest.raises(ValidationFailed, match=head) as exc:
        report.raise_for_failure()
    msg = str(exc.value)
    lines = msg.splitlines()[1:]
    for (expectation, column), observed in expected.items():
        line = [ln for ln in lines if expectation in ln and
                (column is None or f"(column={column})" in ln)]
        assert line, msg
        assert observed in line[0], msg
    json.dumps(report.to_dict())  # JSON-able, GE results included


# --------------------------------------------------------------------------------------------
# pandas

def test_clean_dataset_passes_on_pandas(base_dataset):
    report = validate_dataset(base_dataset, engine="pandas")
    assert report.success, report.message()
    assert report.engine == "pandas" and report.failures == [] and report.tuples == M
    report.raise_for_failure()  # no exception
    d = json.loads(json.dumps(report.to_dict()))
    assert d["success"] is True and d["dataset"] == NAME
    assert d["ge_result"]["contract"]["success"] is True
    table = d["ge_result"]["zipf"]["table"]
    assert len(table) == 10 and all(row["z"] <= 1 for row in table)


def test_auto_engine_picks_pandas_for_small_datasets(base_dataset):
    assert validate_dataset(base_dataset).engine == "pandas"


@pytest.mark.parametrize("corrupt", CORRUPTIONS, ids=lambda f: f.__name__)
def test_corruption_is_caught_on_pandas(dataset, corrupt):
    expected = corrupt(dataset)
    report = validate_dataset(dataset, engine="pandas")
    check_report(report, expected)


def test_failure_reports_stream_positions_on_pandas(dataset):
    seq_swap_across_files(dataset)
    f = failure_map(validate_dataset(dataset, engine="pandas"))[(BETWEEN, "seq_gap")]
    assert f["details"]["unexpected_count"] == 2
    assert sorted(f["details"]["positions"]) == [60_000 - 1, 60_000]  # the first part boundary


def test_zipf_tolerance_is_a_parameter(dataset):
    uniform_keys(dataset)
    # the top key is ~174 binomial sigmas off, so only an absurdly wide band accepts it
    assert validate_dataset(dataset, engine="pandas", z=1000.0).success
    assert not validate_dataset(dataset, engine="pandas", z=100.0).success


def test_zipf_table_tolerance():
    top = [{"key": 7, "p": 0.25}, {"key": 3, "p": 0.01}]
    m = 10_000
    t = zipf_table(top, {7: 2600, 3: 100}, m, z=5.0)
    tol = 5.0 * np.sqrt(np.array([0.25 * 0.75, 0.01 * 0.99]) / m)
    np.testing.assert_allclose(t["tol"], tol)
    np.testing.assert_allclose(t["z"], [0.01 / tol[0], 0.0], atol=1e-12)
    assert list(t["rank"]) == [1, 2]
    assert np.isinf(zipf_table(top, {}, 0)["z"]).all()


def test_truncated_part_is_a_dataset_error(dataset):
    p = part_path(dataset, 2)
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    want = (f"{dataset}: data file part-000002.parquet is {len(data) // 2:,} bytes, {len(data):,} when the dataset "
            "was written: corrupted or truncated, or changed after its fingerprint was taken (regenerate or re-ingest it)")
    with pytest.raises(DatasetError, match=f"^{re.escape(want)}$") as exc:
        validate_dataset(dataset, engine="pandas")
    msg = str(exc.value)
    assert "part-000002.parquet" in msg and "corrupted or truncated" in msg
    assert "\n" not in msg.strip()


def test_missing_or_incomplete_dataset_is_a_dataset_error(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        validate_dataset(tmp_path / "nope", engine="pandas")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="not a skewbench dataset"):
        validate_dataset(tmp_path / "empty", engine="pandas")


def test_bad_engine_is_rejected(base_dataset):
    with pytest.raises(ValueError, match=r"^engine must be one of \('auto', 'pandas', 'spark'\), not 'dask'$"):
        validate_dataset(base_dataset, engine="dask")


# --------------------------------------------------------------------------------------------
# Spark

# null_key last: the others read parts back as numpy, which would turn a null key into NaN
ALL_AT_ONCE = [uniform_keys, key_out_of_range, seq_swap_in_part, seq_swap_across_files,
               negative_cost, row_count_off, ts_decreasing, ts_decreasing_across_files, null_key]


def corrupt_all(ds: Path) -> None:
    for fn in ALL_AT_ONCE:
        fn(ds)


@pytest.mark.spark
def test_clean_dataset_passes_on_spark(base_dataset, spark):
    report = validate_dataset(base_dataset, engine="auto", spark=spark, pandas_max_rows=M - 1)
    assert report.engine == "spark"
    assert report.success, report.message()
    assert report.tuples == M


@pytest.mark.spark
def test_corruptions_are_caught_on_spark_as_on_pandas(dataset, spark):
    corrupt_all(dataset)
    on_spark = validate_dataset(dataset, engine="spark", spark=spark)
    on_pandas = validate_dataset(dataset, engine="pandas")
    expected = {
        (NOT_NULL, "key"): "1 null value(s)",
        (BETWEEN, "key"): str(N_KEYS),
        (BETWEEN, "cost"): "-1.5",
        (ROW_COUNT, None): f"observed {M}",
        (BETWEEN, "seq_gap"): "4 unexpected",
        (BETWEEN, "ts_step"): "2 unexpected",
        (BETWEEN, "z"): "(rank 1) frequency ",
    }
    check_report(on_spark, expected)
    check_report(on_pandas, {**expected, (TYPE, "key"): "observed float64"})
    fs, fp = failure_map(on_spark), failure_map(on_pandas)
    for k in expected:
        assert fs[k]["details"].get("unexpected_count") == fp[k]["details"].get("unexpected_count")
    assert sorted(fs[(BETWEEN, "seq_gap")]["observed"]) == [-1, -1, 1, 1]
    assert sorted(fs[(BETWEEN, "ts_step")]["observed"]) == sorted(fp[(BETWEEN, "ts_step")]["observed"])
    assert fs[(BETWEEN, "z")]["observed"] == fp[(BETWEEN, "z")]["observed"]


@pytest.mark.spark
def test_truncated_part_is_a_dataset_error_on_spark(dataset, spark):
    p = part_path(dataset, 1)
    p.write_bytes(p.read_bytes()[:100])
    with pytest.raises(DatasetError, match="part-000001.parquet"):
        validate_dataset(dataset, engine="spark", spark=spark)
