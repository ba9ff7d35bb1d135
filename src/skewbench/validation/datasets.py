"""Great Expectations validation of stream datasets (see :mod:`skewbench.datasets.contract`).

One expectation suite, :func:`build_suite`, encodes the contract for a dataset given its
metadata.  It runs on a *derived frame*: the contract columns plus two columns that turn the
order-dependent rules into per-row checks, computed by engine-specific code:

``seq_gap``
    ``seq - position``, where ``position`` is the row's global position in stream order (parts
    sorted by file name, rows in file order).  All zero exactly when ``seq`` is ``0..m-1`` and
    strictly increasing in stream order.
``ts_step``
    ``ts`` minus the previous row's ``ts`` in stream order (``0`` for the first row).  Never
    negative exactly when ``ts`` is non-decreasing.

The suite is engine-agnostic (type expectations list both the pandas and the Spark type name),
so the same suite validates a pandas DataFrame (small datasets) or a Spark DataFrame (big ones).
On Spark, the GE data source persists the derived frame for the run (and it is unpersisted
afterwards).

Zipf datasets carry ``expected_top`` in their metadata: the ids and exact probabilities ``p_k``
of the most probable keys.  Their observed frequencies ``f_k = count_k / m`` are checked against
a binomial band: ``tol_k = Z * sqrt(p_k (1 - p_k) / m)`` with ``Z = 5`` by default, i.e. a
5-sigma band, which a correct generator leaves with probability below 1e-6 per key, while any
real distribution error of a few percent of ``p_k`` is caught once ``m`` is in the hundreds of
thousands.  The check is a second, small suite over a pandas table with one row per expected key
(``rank, key, p, observed, tol, z``) where ``z = |f_k - p_k| / tol_k`` must be at most 1.

:func:`validate_dataset` returns a :class:`ValidationReport`; its
:meth:`~ValidationReport.raise_for_failure` raises :class:`~skewbench.errors.ValidationFailed`
naming the dataset, each failed expectation and the observed value.  Unreadable datasets raise
:class:`~skewbench.errors.DatasetError` before any expectation runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from skewbench.validation.core import (DEFAULT_Z, ValidationReport, failures, jsonable, new_context,
                                       run_suite)
import great_expectations as gx  # noqa: E402  (core sets GE's environment first)
import great_expectations.expectations as gxe  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from skewbench.datasets.contract import COLUMN_TYPES, Dataset, open_dataset  # noqa: E402
from skewbench.errors import DatasetError  # noqa: E402

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame as SparkDataFrame
    from pyspark.sql import SparkSession

__all__ = ["DERIVED_COLUMNS", "DEFAULT_Z", "ValidationReport", "build_suite", "build_zipf_suite",
           "validate_dataset", "zipf_table", "derive_pandas", "derive_spark"]

DERIVED_COLUMNS = ("seq_gap", "ts_step")
ENGINES = ("auto", "pandas", "spark")

# Names accepted by expect_column_values_to_be_in_type_list: numpy dtype names for pandas,
# pyspark.sql.types class names for Spark (each engine ignores the names it does not know).
_TYPE_NAMES = {
    pa.int64(): ["int64", "LongType"],
    pa.float64(): ["float64", "DoubleType"],
}


# --------------------------------------------------------------------------------------------
# suites

def _column_types(meta: Mapping[str, Any]) -> dict[str, list[str]]:
    types = {c: _TYPE_NAMES[COLUMN_TYPES[c]] for c in meta["columns"]}
    types["seq_gap"] = _TYPE_NAMES[pa.int64()]
    types["ts_step"] = _TYPE_NAMES[pa.float64()]
    return types


def build_suite(meta: Mapping[str, Any], name: str = "skewbench-contract") -> gx.ExpectationSuite:
    """The contract suite for a dataset with metadata ``meta``, over its derived frame.

    The frame has the contract columns of ``meta["columns"]`` followed by ``seq_gap`` and
    ``ts_step`` (see the module docstring); the suite works for pandas and Spark frames alike.
    """
    columns = list(meta["columns"])
    n_keys = int(meta["n_keys"])
    ex: list[Any] = [
        gxe.ExpectTableColumnsToMatchOrderedList(column_list=columns + list(DERIVED_COLUMNS)),
        gxe.ExpectTableRowCountToEqual(value=int(meta["tuples"])),
    ]
    for col, names in _column_types(meta).items():
        ex.append(gxe.ExpectColumnValuesToBeInTypeList(column=col, type_list=names))
    for col in columns:
        ex.append(gxe.ExpectColumnValuesToNotBeNull(column=col))
    ex.append(gxe.ExpectColumnValuesToBeBetween(column="key", min_value=0, max_value=n_keys - 1))
    ex.append(gxe.ExpectColumnValuesToBeBetween(column="seq_gap", min_value=0, max_value=0))
    ex.append(gxe.ExpectColumnValuesToBeBetween(column="ts_step", min_value=0))
    if "cost" in columns:
        ex.append(gxe.ExpectColumnValuesToBeBetween(column="cost", min_value=0, strict_min=True))
    return gx.ExpectationSuite(name=name, expectations=ex)


def build_zipf_suite(n_expected: int, name: str = "skewbench-zipf-top") -> gx.ExpectationSuite:
    """The suite over :func:`zipf_table`: one row per expected key, every ``z <= 1``."""
    return gx.ExpectationSuite(name=name, expectations=[
        gxe.ExpectTableRowCountToEqual(value=int(n_expected)),
        gxe.ExpectColumnValuesToNotBeNull(column="z"),
        gxe.ExpectColumnValuesToBeBetween(column="z", max_value=1.0),
    ])


def zipf_table(expected_top: Sequence[Mapping[str, Any]], counts: Mapping[int, int], m: int,
               z: float = DEFAULT_Z) -> pd.DataFrame:
    """Observed vs. expected frequencies of the top keys, with their tolerance band.

    ``tol = z * sqrt(p (1 - p) / m)``; the ``z`` column is ``|observed - p| / tol`` (so 1 is the
    edge of the ``z``-sigma band).  ``m == 0`` gives infinite deviations.
    """
    keys = np.array([int(e["key"]) for e in expected_top], dtype=np.int64)
    p = np.array([float(e["p"]) for e in expected_top], dtype=np.float64)
    cnt = np.array([int(counts.get(int(k), 0)) for k in keys], dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        obs = cnt / m if m > 0 else np.full(len(keys), np.nan)
        tol = z * np.sqrt(p * (1.0 - p) / m) if m > 0 else np.zeros(len(keys))
        dev = np.abs(obs - p)
        zz = np.where(tol > 0, dev / tol, np.where(dev == 0, 0.0, np.inf))
    zz = np.where(np.isnan(zz), np.inf, zz)
    return pd.DataFrame({"rank": np.arange(1, len(keys) + 1, dtype=np.int64), "key": keys,
                         "p": p, "count": cnt, "observed": obs, "tol": tol, "z": zz})


# --------------------------------------------------------------------------------------------
# report

# --------------------------------------------------------------------------------------------
# derived frames

def _ordered_files(ds: Dataset) -> list[Path]:
    return sorted(ds.files, key=lambda p: p.name)


def _read_error(ds: Dataset, f: Path, e: BaseException) -> DatasetError:
    return DatasetError(f"dataset {ds.name} ({ds.path}): cannot read {f.name}: "
                        f"corrupted or truncated Parquet file ({e})")


def derive_pandas(ds: Dataset) -> pd.DataFrame:
    """The derived frame as pandas: all parts in stream order plus ``seq_gap`` and ``ts_step``."""
    tables = []
    for f in _ordered_files(ds):
        try:
            t = pq.read_table(f)
        except (pa.ArrowException, OSError) as e:
            raise _read_error(ds, f, e) from None
        # drop nullability flags so a part written with nullable fields still concatenates
        tables.append(t.cast(pa.schema([fld.with_nullable(True) for fld in t.schema])))
    if tables:
        try:
            table = pa.concat_tables(tables, promote_options="permissive")
        except (pa.ArrowException, ValueError) as e:
            raise DatasetError(f"dataset {ds.name} ({ds.path}): parts have incompatible "
                               f"schemas: {e}") from None
        df = table.to_pandas()
    else:
        df = pd.DataFrame({c: pd.Series([], dtype=COLUMN_TYPES[c].to_pandas_dtype())
                           for c in ds.columns})
    m = len(df)
    if "seq" in df.columns:
        df["seq_gap"] = df["seq"] - np.arange(m, dtype=np.int64)
    if "ts" in df.columns:
        step = df["ts"].diff()
        if m:
            step.iloc[0] = 0.0
        df["ts_step"] = step.astype(np.float64)
    return df


def _check_footers(ds: Dataset) -> dict[str, int]:
    """Read every part's Parquet footer (cheap), so truncated files fail early and clearly."""
    rows = {}
    for f in _ordered_files(ds):
        try:
            rows[f.name] = pq.read_metadata(f).num_rows
        except (pa.ArrowException, OSError) as e:
            raise _read_error(ds, f, e) from None
    return rows


def derive_spark(ds: Dataset, spark: "SparkSession") -> tuple["SparkDataFrame", int]:
    """The derived frame as a Spark DataFrame, and its row count.

    Stream positions come from Parquet's hidden ``_metadata.row_index`` plus per-file offsets;
    the previous ``ts`` from a window over each file (ordered by row index) and, for a file's
    first row, the previous file's last ``ts`` (a small per-file aggregation, broadcast back).
    The window is partitioned by file, so a partition holds whole files, never the whole stream.
    """
    from pyspark.errors import PySparkException
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    from py4j.protocol import Py4JError

    files = _ordered_files(ds)
    _check_footers(ds)
    if not files:
        fields = [T.StructField(c, T.LongType() if COLUMN_TYPES[c] == pa.int64() else T.DoubleType())
                  for c in ds.columns]
        fields += [T.StructField("seq_gap", T.LongType()), T.StructField("ts_step", T.DoubleType())]
        return spark.createDataFrame([], T.StructType(fields)), 0

    try:
        raw = spark.read.parquet(*[str(f.absolute()) for f in files])
        cols = list(raw.columns)
        raw = raw.select("*", F.col("_metadata.file_name").alias("_sb_file"),
                         F.col("_metadata.row_index").alias("_sb_row"))
        aggs = [F.count(F.lit(1)).alias("n")]
        if "ts" in cols:
            aggs.append(F.max_by("ts", "_sb_row").alias("last_ts"))
        per_file = {r["_sb_file"]: r for r in raw.groupBy("_sb_file").agg(*aggs).collect()}
    except (PySparkException, Py4JError) as e:
        raise DatasetError(f"dataset {ds.name} ({ds.path}): Spark cannot read the parts: "
                           f"{_spark_error_text(e)}") from None

    # per-file offset and the last ts of the preceding non-empty file, in stream order
    offsets = []
    offset, prev_ts, first = 0, None, True
    for f in files:
        r = per_file.get(f.name)
        offsets.append((f.name, offset, prev_ts, first))
        if r is not None and r["n"]:
            offset += int(r["n"])
            prev_ts = r["last_ts"] if "ts" in cols else None
            first = False
    m = offset
    off_schema = T.StructType([T.StructField("_sb_file", T.StringType()),
                               T.StructField("_sb_offset", T.LongType()),
                               T.StructField("_sb_prev_ts", T.DoubleType()),
                               T.StructField("_sb_first", T.BooleanType())])
    off_df = spark.createDataFrame(
        [(n, o, None if p is None else float(p), fi) for n, o, p, fi in offsets], off_schema)
    df = raw.join(F.broadcast(off_df), on="_sb_file", how="left")
    # Cluster by file once, with no more partitions than files: the window below then needs no
    # further exchange, and small datasets do not pay for 200 near-empty shuffle partitions.
    try:
        n_part = int(spark.conf.get("spark.sql.shuffle.partitions"))
    except (TypeError, ValueError):
        n_part = 200
    df = df.repartition(max(1, min(len(files), n_part)), "_sb_file")
    derived = []
    if "seq" in cols:
        derived.append((F.col("seq") - (F.col("_sb_offset") + F.col("_sb_row"))).alias("seq_gap"))
    if "ts" in cols:
        w = Window.partitionBy("_sb_file").orderBy("_sb_row")
        prev = F.when(F.col("_sb_row") == 0,
                      F.when(F.col("_sb_first"), F.col("ts")).otherwise(F.col("_sb_prev_ts"))) \
            .otherwise(F.lag("ts").over(w))
        derived.append((F.col("ts") - prev).cast("double").alias("ts_step"))
    return df.select(*[F.col(c) for c in cols], *derived), m


def _spark_error_text(e: BaseException) -> str:
    """The innermost Java cause of a Spark error, on one line (not the Py4J call site)."""
    jexc = getattr(e, "java_exception", None)
    try:
        while jexc is not None and jexc.getCause() is not None:
            jexc = jexc.getCause()
        if jexc is not None:
            return str(jexc.toString()).splitlines()[0]
    except Exception:  # pragma: no cover - the JVM may be gone
        pass
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


# --------------------------------------------------------------------------------------------
# running

def _spark() -> "SparkSession":
    from skewbench.spark import get_spark

    return get_spark()


def validate_dataset(path: str | os.PathLike, engine: str = "auto", spark: "SparkSession | None" = None,
                     z: float = DEFAULT_Z, pandas_max_rows: int = 20_000_000) -> ValidationReport:
    """Validate the dataset at ``path`` against the contract (and its Zipf top keys, if any).

    ``engine`` is ``pandas``, ``spark`` or ``auto`` (pandas up to ``pandas_max_rows`` tuples
    per the metadata, else Spark).  ``spark`` is the session to use (default: :func:`_spark`).
    ``z`` is the width of the Zipf frequency band in binomial standard deviations.
    Raises :class:`DatasetError` if the dataset cannot be opened or read.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
    if not z > 0:
        raise ValueError(f"z must be positive, not {z}")
    ds = open_dataset(path)
    meta = ds.meta
    if engine == "auto":
        engine = "pandas" if ds.tuples <= pandas_max_rows else "spark"

    if engine == "pandas":
        df = derive_pandas(ds)
        return _validate_frame(ds, df, len(df), "pandas", z)

    spark = spark or _spark()
    df = None
    try:
        df, m = derive_spark(ds, spark)
        return _validate_frame(ds, df, m, "spark", z)
    finally:
        if df is not None:
            try:
                df.unpersist()  # the GE Spark data source persisted it
            except Exception:  # pragma: no cover
                pass


def _validate_frame(ds: Dataset, df: Any, m: int, engine: str, z: float) -> ValidationReport:
    meta = ds.meta
    ctx = new_context()
    pandas_source = ctx.data_sources.add_pandas("skewbench-pandas")
    source = ctx.data_sources.add_spark("skewbench-spark") if engine == "spark" else pandas_source

    results: dict[str, Any] = {}
    res = run_suite(ctx, source, build_suite(meta), df, "stream")
    results["contract"] = res.to_json_dict()
    found = failures(res, "contract", positions=True)

    top = meta.get("expected_top")
    if top and "key" in list(df.columns):
        counts = _top_counts(ds, df, [int(e["key"]) for e in top], engine)
        table = zipf_table(top, counts, m, z=z)
        zres = run_suite(ctx, pandas_source, build_zipf_suite(len(top)), table, "expected_top")
        results["zipf"] = zres.to_json_dict()
        results["zipf"]["table"] = jsonable(table.to_dict(orient="records"))
        zf = failures(zres, "zipf")
        bad = table[~(table["z"] <= 1.0)]
        for f in zf:
            f["details"]["z"] = z
            if f["column"] == "z":
                f["observed"] = jsonable([
                    {"rank": int(r.rank), "key": int(r.key), "p": float(r.p),
                     "observed": float(r.observed), "tol": float(r.tol)}
                    for r in bad.itertuples()])
        found += zf
    return ValidationReport(dataset=ds.name, success=not found, engine=engine,
                            failures=found, path=str(ds.path), tuples=m, ge_results=results)


def _top_counts(ds: Dataset, df: Any, keys: list[int], engine: str) -> dict[int, int]:
    """How often each of ``keys`` occurs in the frame's ``key`` column."""
    if engine == "pandas":
        k = df["key"]
        vc = k[k.isin(keys)].value_counts()
        return {int(i): int(c) for i, c in vc.items()}
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F
    try:
        rows = df.filter(F.col("key").isin(keys)).groupBy("key").count().collect()
    except (PySparkException, Py4JError) as e:
        raise DatasetError(f"dataset {ds.name} ({ds.path}): Spark cannot read the parts: "
                           f"{_spark_error_text(e)}") from None
    return {int(r["key"]): int(r["count"]) for r in rows}
