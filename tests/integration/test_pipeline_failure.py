"""A corrupted results file fails validation with a message naming the failed expectation and
the results directory, and what the DAG's mark_failed task calls turns the run's open MLflow
parent FAILED with the reason (real GE and real MLflow on SQLite).

That the results of a failed validation are never logged is the DAG's wiring (log_to_mlflow runs
only after every validate succeeded; nothing in the logging path itself checks validity), so it
is tested on the real DAG: a replay whose results break an expectation, run through
``dag.test()``, fails its validate task and logs nothing
(test_airflow_paths.py::test_results_that_fail_validation_in_the_dag_fail_it_and_log_nothing,
slow), and a replay that cannot start marks the run failed and logs nothing
(test_dags.py::test_a_failed_replay_marks_the_run_failed_and_logs_nothing)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from skewbench import nightly
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.errors import ValidationFailed
from skewbench.grouping.engine import ReplayConfig, grid, replay_to_dir


def test_corrupted_results_fail_validation_and_mark_failed_ends_the_parent_failed(tmp_path, monkeypatch):
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

    opened = nightly.open_tracking(["grouping"], "skewbench_nightly", "manual__x", "2026-11-20")
    with pytest.raises(ValidationFailed, match="load_sum_gap") as err:
        nightly.validate_replay(item)
    assert str(out) in str(err.value)
    assert (out.parent / "grouping-validation" / "validation-summary.json").exists()  # GE's result kept
    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert client.get_run(opened["grouping"][1]).info.status == "RUNNING"  # opened before the replays
    # what the DAG's mark_failed task does when validation fails
    nightly.fail_tracking(["grouping"], "skewbench_nightly", "manual__x", "validation failed")
    exp = client.get_experiment_by_name("skewbench-grouping")
    runs = client.search_runs([exp.experiment_id])
    assert [r.info.run_id for r in runs] == [opened["grouping"][1]] and runs[0].info.status == "FAILED"
    assert runs[0].data.tags["skewbench.failure"] == "validation failed"
    assert not runs[0].data.metrics and not client.list_artifacts(runs[0].info.run_id)
