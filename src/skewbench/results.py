"""The results contract: what a replay writes, and every later stage (validation, MLflow, reports)
reads.

A results directory::

    OUT/
      _manifest.json     family, dataset (path, name, fingerprint), grid, configuration,
                         skewbench version, row counts; present only once the results are complete
      summary.parquet    one row per grid cell (strategy x workers x sources x parameters x seed)
      series.parquet     one row per grid cell and metrics window

Both tables are written to a staging directory beside ``OUT`` and renamed into place, so a
failed or retried replay never leaves half a result.

The columns of each family are defined below (:data:`SCHEMAS`) and documented in
``docs/results.md``; the grouping family's metrics are defined in
:mod:`skewbench.grouping.engine`.  ``cell_id`` (16 hex digits) is a hash of the cell's strategy,
workers, sources, seed and parameters: it names the cell across runs.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from skewbench import __version__
from skewbench.datasets.contract import replace_dir
from skewbench.errors import SkewbenchError

RESULTS_VERSION = 1
MANIFEST = "_manifest.json"

_i64, _f64, _str = pa.int64(), pa.float64(), pa.string()
_list_i64 = pa.list_(pa.int64())

GROUPING_SUMMARY = pa.schema([
    ("cell_id", _str), ("dataset", _str), ("dataset_fingerprint", _str), ("tuples", _i64), ("keys", _i64),
    ("strategy", _str), ("workers", _i64), ("sources", _i64), ("seed", _i64), ("params", _str),
    ("time_mode", _str), ("provisioning", _f64),
    ("imbalance", _f64), ("imbalance_rel", _f64), ("imbalance_abs", _f64), ("imbalance_avg", _f64),
    ("load_max", _f64), ("load_min", _f64), ("worker_tuples", _list_i64), ("worker_head_tuples", _list_i64),
    ("latency_mean", _f64), ("latency_p50", _f64), ("latency_p95", _f64), ("latency_p99", _f64),
    ("latency_max", _f64), ("latency_min", _f64), ("latency_cdf", pa.list_(_f64)),
    ("latency_worker_mean_max", _f64), ("exec_mean", _f64),
    ("queue_delay_mean", _f64), ("throughput", _f64),
    ("latency_mean_rr", _f64), ("speedup_vs_rr", _f64), ("gain_vs_rr", _f64),
    ("pairs", _i64), ("replication", _f64), ("replicas_max", _i64), ("replicas_head_mean", _f64),
    ("head_keys_true", _i64), ("stats", _str),
    ("route_seconds", _f64), ("sim_tuples_per_s", _f64), ("wall_seconds", _f64),
])

GROUPING_SERIES = pa.schema([
    ("cell_id", _str), ("strategy", _str), ("workers", _i64), ("sources", _i64), ("seed", _i64),
    ("window", _i64), ("seq_start", _i64), ("seq_end", _i64), ("tuples", _i64),
    ("imbalance_cum", _f64), ("imbalance_win", _f64),
    ("worker_tuples_cum", _list_i64), ("worker_tuples_win", _list_i64),
    ("latency_mean", _f64), ("latency_p50", _f64), ("latency_p95", _f64), ("latency_p99", _f64),
    ("latency_max", _f64), ("stats", _str),
])

#: family -> (summary schema, series schema)
SCHEMAS: dict[str, tuple[pa.Schema, pa.Schema]] = {
    "grouping": (GROUPING_SUMMARY, GROUPING_SERIES),
}

#: columns that vary between runs on the same inputs (timings); everything else is deterministic
TIMING_COLUMNS = ("route_seconds", "sim_tuples_per_s", "wall_seconds")


def write_results(out_dir: str | os.PathLike, family: str, summary: Sequence[Mapping[str, Any]],
                  series: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any],
                  overwrite: bool = False) -> dict[str, Any]:
    """Write a results directory atomically; returns the manifest written."""
    if family not in SCHEMAS:
        raise SkewbenchError(f"unknown results family '{family}'")
    out = Path(out_dir).absolute()
    if out.exists() and not overwrite:
        raise SkewbenchError(f"{out} already exists; pass --overwrite to replace it")
    s_schema, t_schema = SCHEMAS[family]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:12]}"
    tmp.mkdir()
    try:
        pq.write_table(pa.Table.from_pylist(list(summary), schema=s_schema), tmp / "summary.parquet")
        pq.write_table(pa.Table.from_pylist(list(series), schema=t_schema), tmp / "series.parquet")
        full = {"results_version": RESULTS_VERSION, "family": family, "created_by": f"skewbench {__version__}",
                **manifest, "summary_rows": len(summary), "series_rows": len(series)}
        (tmp / MANIFEST).write_text(json.dumps(full, indent=2, default=str) + "\n")
        replace_dir(tmp, out)
        return full
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def read_results(path: str | os.PathLike) -> tuple[dict[str, Any], pa.Table, pa.Table]:
    """Manifest, summary and series of a results directory; :class:`SkewbenchError` if incomplete."""
    p = Path(path)
    mp = p / MANIFEST
    if not mp.exists():
        raise SkewbenchError(f"{p} is not a complete skewbench results directory (no {MANIFEST})")
    try:
        manifest = json.loads(mp.read_text())
        return manifest, pq.read_table(p / "summary.parquet"), pq.read_table(p / "series.parquet")
    except (OSError, ValueError, pa.ArrowException) as e:
        raise SkewbenchError(f"{p}: cannot read results: {e}") from None
