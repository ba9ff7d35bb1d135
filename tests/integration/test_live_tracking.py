"""The live mode in MLflow (skewbench.live.tracking, skewbench.live.steps) on a real SQLite store:
which simulated cell a live run links to and back, a retried run marked as such, idempotent
logging, and failures: a run that fails mid-run, or a logging step that fails half-way, ends the
parent FAILED with the reason and leaves no nested run complete.

The simulated nights are real replays of a real generated dataset, logged as the nightly logs
them; the live rows are written as :func:`skewbench.live.run.live_rows` writes them (the engines
themselves are the DAG test's and the live engine tests' subject)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow import MlflowClient

from skewbench import nightly, tracking
from skewbench.present import livepage
from skewbench.datasets.contract import open_dataset
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.errors import SkewbenchError
from skewbench.grouping.engine import ReplayConfig, grid, replay_to_dir
from skewbench.validation.results import validate_results
from skewbench.live import steps
from skewbench.live import tracking as lt

UI = "http://127.0.0.1:5998"
NIGHTS = ("2026-12-01T02:00:00+00:00", "2026-12-02T02:00:00+00:00")


def night_tags(run_id: str, night: str) -> dict[str, str]:
    """The tags the nightly gives its runs (its DAG id, run id and logical date)."""
    return {"skewbench.dag_id": "skewbench_nightly", "skewbench.run_id": run_id, "skewbench.logical_date": night}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A dataset, two simulated nights of it (kg, pkg at 2 and 4 workers), the store's settings;
    each test logs live runs of its own (its own DAG run ids)."""
    tmp_path = tmp_path_factory.mktemp("live-tracking")
    uri = f"sqlite:///{tmp_path}/mlflow/mlflow.db"
    with pytest.MonkeyPatch.context() as mp:
        for k, v in {"SKEWBENCH_TRACKING_URI": uri, "SKEWBENCH_MLFLOW_UI": UI,
                     "SKEWBENCH_STATE": str(tmp_path / "state")}.items():
            mp.setenv(k, v)
        yield _nights(tmp_path, uri)


def _nights(tmp_path: Path, uri: str) -> dict:
    ds = tmp_path / "tiny"
    generate(StreamSpec.zipf(1.4, 300, 2000, 1), ds, name="tiny")
    for night in NIGHTS:
        out = tmp_path / night[:10] / "grouping"
        replay_to_dir(ds, grid(["kg", "pkg"], [2, 4], [2], [0]), out, ReplayConfig(window=1000))
        assert validate_results(out).success  # as the nightly's validate step: only validated results are logged
        run_id = f"scheduled__{night}"
        tracking.log_run([out], tracking_uri=uri, run_key=nightly.run_key("skewbench_nightly", run_id, "grouping"),
                         run_name=run_id, tags=night_tags(run_id, night))
    return {"uri": uri, "ds": ds, "fp": open_dataset(ds).meta["fingerprint"], "root": tmp_path,
            "client": MlflowClient(uri)}


def _conf(root: Path, run_id: str) -> dict:
    conf = steps.check_params({"engines": ["spark"], "strategies": ["kg", "pkg", "dc"], "workers": 4, "tuples": 200})
    conf.update({"datasets": ["tiny"], "when": "2026-12-06T03:00:00+00:00", "out_root": str(root / "runs" / run_id)})
    return conf


def _row(fp: str, strategy: str, routing: str = "routed", thr: float = 900.0) -> dict:
    """A row as live_rows writes it (the numbers made up: what is logged is this test's subject)."""
    return {"engine": "spark", "strategy": strategy, "family": "grouping", "routing": routing, "workers": 4,
            "dataset": "tiny", "fingerprint": fp, "tuples_offered": 200, "tuples_executed": 200, "dropped": 0,
            "rate": 0.0, "work": "sleep", "cost_model": "fixed 1 ms", "params": {"d": 2} if strategy == "pkg" else {},
            "subtask_records": [50, 50, 60, 40], "decided_records": [50, 50, 60, 40], "routing_exact": True,
            "throughput_measured": thr, "throughput_predicted": 1000.0, "throughput_ratio": thr / 1000.0,
            "makespan_measured_s": 0.22, "makespan_predicted_s": 0.2, "makespan_ratio": 1.1,
            "latency_p99_measured_ms": None, "latency_p99_predicted_ms": None, "overhead_ms": 0.1, "transport_ms": 5.0}


def _result(conf: dict, fp: str, rows: list[dict], attempt: int = 1) -> None:
    doc = {"rows": rows, "agreement": [{"engine": "spark", "metric": "throughput", "strategies": 2, "kendall_tau": 1.0}],
           "overheads": {"spark": {"overhead_ms": 0.1, "transport_ms": 5.0}}, "seconds": {},
           "stream": {"dataset": "tiny", "fingerprint": fp, "tuples": 200, "cost_model": "fixed 1 ms", "rate": 0.0,
                      "workers": 4, "work": "sleep"},
           "dataset": "tiny", "attempt": attempt, "attempt_note": steps.attempt_note(attempt)}
    out = steps.dataset_dir(conf["out_root"], "tiny") / steps.RESULTS
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc))


def _children(client: MlflowClient, parent_id: str) -> list:
    exp = client.get_experiment_by_name("skewbench-live")
    return client.search_runs([exp.experiment_id], f"tags.`mlflow.parentRunId` = '{parent_id}'")


def test_links_go_to_the_latest_night_at_the_same_workers_and_back(store):
    conf = _conf(store["root"], "manual__a")
    steps.open_tracking(conf, steps.DAG_ID, "manual__a")
    _result(conf, store["fp"], [_row(store["fp"], "kg"), _row(store["fp"], "pkg"), _row(store["fp"], "dc"),
                                _row(store["fp"], "kg", "native")], attempt=2)
    logged = steps.log_results(conf, steps.DAG_ID, "manual__a")
    client = store["client"]
    kids = {(c.data.tags["skewbench.strategy"], c.data.tags["skewbench.routing"]): c
            for c in _children(client, logged["parent_run_id"])}
    assert set(kids) == {("kg", "routed"), ("pkg", "routed"), ("dc", "routed"), ("kg", "native")}
    for (strategy, routing), c in kids.items():
        assert c.info.status == "FINISHED" and c.data.tags["skewbench.attempt"] == steps.attempt_note(2)
        if strategy == "dc":  # never simulated on this dataset
            assert c.data.tags[livepage.SIMULATED_TAG].startswith("none: no simulated run")
            continue
        sim = client.get_run(c.data.tags["skewbench.simulated_run_id"])
        assert c.data.tags[livepage.SIMULATED_TAG] == tracking.mlflow_run_url(UI, sim.info.experiment_id,
                                                                             sim.info.run_id)
        # the later night's cell of the same strategy at the live run's 4 workers
        assert sim.data.tags["skewbench.logical_date"] == NIGHTS[1] and sim.data.params["workers"] == "4"
        assert sim.data.tags["skewbench.strategy"] == strategy
        if routing == "routed":
            assert sim.data.tags[livepage.LIVE_TAG] == tracking.mlflow_run_url(
                UI, logged["experiment_id"], c.info.run_id)
    parent = client.get_run(logged["parent_run_id"])
    assert parent.info.status == "RUNNING"  # until the report logs the page
    assert parent.data.tags["skewbench.attempt"] == "retried: tiny (attempt 2)"
    assert parent.data.metrics["kendall_tau/tiny/spark/throughput"] == 1.0
    # logged again (a retried log step, or the DAG run run again): the same runs, nothing duplicated
    again = steps.log_results(conf, steps.DAG_ID, "manual__a")
    assert again["parent_run_id"] == logged["parent_run_id"]
    assert sorted(c.info.run_id for c in _children(client, logged["parent_run_id"])) == \
        sorted(c.info.run_id for c in kids.values())
    text = steps.report(conf, steps.DAG_ID, "manual__a")
    assert client.get_run(logged["parent_run_id"]).info.status == "FINISHED"
    assert "retried after a failed attempt" in text and "page: " in text
    assert "Retried: attempt 2: retried" in (Path(conf["out_root"]) / "live.html").read_text()


def test_a_run_that_fails_mid_run_ends_the_parent_failed_with_its_reason(store):
    conf = _conf(store["root"], "manual__b")
    conf["cost"] = "dataset"  # the dataset has no cost column: the run fails after it started
    opened = steps.open_tracking(conf, steps.DAG_ID, "manual__b")
    said: list[str] = []
    with pytest.raises(SkewbenchError, match=r"--cost dataset, but the dataset has no cost column"):
        steps.run_dataset(conf, {"name": "tiny", "path": str(store["ds"])}, conf["out_root"], attempt=2,
                          progress=said.append)
    assert said[0].startswith("attempt 2: retried after a failed attempt")
    out = steps.dataset_dir(conf["out_root"], "tiny")
    assert not (out / steps.RESULTS).exists() and (out / steps.FAILURE).is_file()
    reason = steps.fail_tracking(conf, steps.DAG_ID, "manual__b", "a step of the live run failed")
    assert reason.startswith("tiny (attempt 2): SkewbenchError: ") and "no cost column" in reason
    parent = store["client"].get_run(opened["parent_run_id"])
    assert parent.info.status == "FAILED" and parent.data.tags["skewbench.failure"] == reason
    assert _children(store["client"], opened["parent_run_id"]) == []
    with pytest.raises(SkewbenchError, match=r"^tiny: no live\.json in .*: its live run did not complete$"):
        steps.log_results(conf, steps.DAG_ID, "manual__b")


def test_a_logging_step_that_fails_half_way_leaves_nothing_complete(store):
    conf = _conf(store["root"], "manual__c")
    opened = steps.open_tracking(conf, steps.DAG_ID, "manual__c")
    broken = _row(store["fp"], "pkg")
    del broken["routing"]  # a row without its routing: logging stops after the first row
    _result(conf, store["fp"], [_row(store["fp"], "kg"), broken])
    with pytest.raises(KeyError, match="routing"):
        steps.log_results(conf, steps.DAG_ID, "manual__c")
    kids = _children(store["client"], opened["parent_run_id"])
    assert [c.info.status for c in kids] == ["RUNNING"]  # logged, not ended: not a complete result
    steps.fail_tracking(conf, steps.DAG_ID, "manual__c", "log_to_mlflow failed")
    kids = _children(store["client"], opened["parent_run_id"])
    assert [c.info.status for c in kids] == ["FAILED"]
    assert kids[0].data.tags["skewbench.failure"] == "the live DAG run failed: log_to_mlflow failed"
    assert store["client"].get_run(opened["parent_run_id"]).info.status == "FAILED"


def test_a_parent_left_running_by_an_earlier_dag_run_is_ended_failed(store):
    first = steps.open_tracking(_conf(store["root"], "manual__d"), steps.DAG_ID, "manual__d")
    steps.open_tracking(_conf(store["root"], "manual__e"), steps.DAG_ID, "manual__e")
    old = store["client"].get_run(first["parent_run_id"])
    assert old.info.status == "FAILED" and "ended before finishing it" in old.data.tags["skewbench.failure"]
    assert lt.run_key(steps.DAG_ID, "manual__e") == "skewbench_live/manual__e"
