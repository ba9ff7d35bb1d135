"""A corrupted results file fails validation, and what mark_failed calls leaves only a FAILED
parent run (real GE and real MLflow on SQLite).  That the DAG calls it when a replay fails, and
never logs the results, is tested on the real DAG in test_dags.py
(test_a_failed_replay_marks_the_run_failed_and_logs_nothing)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from skewbench import nightly
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.errors import ValidationFailed
from skewbench.grouping.engine import ReplayConfig, grid, replay_to_dir


def test_corrupted_results_fail_validation_and_are_not_logged(tmp_path, monkeypatch):
    monkeypatch.setenv("SKEWBENCH_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    generate(StreamSpec.zipf(1.2, 300, 10_000, 1), tmp_path / "ds", name="ds")
    out = tmp_path / "run" / "ds" / "grouping"
    replay_to_dir(tmp_path / "ds", grid(["kg", "pkg"], [4], [2], [0]), out, ReplayConfig(window=2000))
    item = {"family": "grouping", "out": str(out), "dataset": "ds"}
    assert nightly.validate_replay(item)["valid"]

    # corrupt: one cell's per-worker loads no longer sum to the tuples replayed
    t = pq.read_table(out / "summary.parquet")
    loads = t.column("worker_tuples").to_pylist()
    loads[0][0] += 7
    t = t.set_column(t.schema.get_field_index("worker_tuples"), "worker_tuples",
                     pa.array(loads, type=pa.list_(pa.int64())))
    pq.write_table(t, out / "summary.parquet")

    nightly.open_tracking(["grouping"], "skewbench_nightly", "manual__x", "2026-11-20")
    with pytest.raises(ValidationFailed) as err:
        nightly.validate_replay(item)
    assert "load_sum_gap" in str(err.value) and str(out) in str(err.value)
    assert (out.parent / "grouping-validation" / "validation-summary.json").exists()  # GE's result kept
    # what the DAG's mark_failed task does when validation fails; log_to_mlflow never runs
    nightly.fail_tracking(["grouping"], "skewbench_nightly", "manual__x", "validation failed")

    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("skewbench-grouping")
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 1 and runs[0].info.status == "FAILED"  # only the parent, marked failed
    assert runs[0].data.tags["skewbench.failure"] == "validation failed"
    assert not runs[0].data.metrics and not client.list_artifacts(runs[0].info.run_id)
