"""The live mode in MLflow (skewbench.live.tracking, skewbench.live.steps) on a real SQLite store:
which simulated cell a live run links to and back, a retried run marked as such, idempotent
logging, what a Flink row logs (its medians with their ranges, calibrations, window, and its
per-second series as step metrics equal to the row's, logged once), what the site reads back of
it, and failures: a run that fails mid-run, or a logging step that fails half-way, ends the
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
    """A Spark row as live_rows writes it (the numbers made up: what is logged is this test's subject)."""
    cal = {"overhead_ms": 0.1, "overhead_per_worker_ms": [0.1, 0.1, 0.11, 0.09], "tuples": 200}
    return {"engine": "spark", "strategy": strategy, "family": "grouping", "routing": routing, "job": "batch stage",
            "workers": 4, "dataset": "tiny", "fingerprint": fp, "tuples_offered": 200, "tuples_executed": 200,
            "dropped": 0, "rate": None, "work": "sleep", "cost_model": "fixed 1 ms",
            "params": {"d": 2} if strategy == "pkg" else {}, "repeat": 2,
            "subtask_records": [50, 50, 60, 40], "decided_records": [50, 50, 60, 40], "routing_exact": True,
            "calibration_before": cal, "calibration_after": {**cal, "overhead_ms": 0.105}, "overhead_ms": 0.1,
            "transport_ms": 0.0, "task_seconds": [0.05, 0.05, 0.06, 0.04],
            "throughput_measured": thr, "throughput_measured_min": thr - 10, "throughput_measured_max": thr + 10,
            "throughput_predicted": 1000.0, "throughput_ratio": thr / 1000.0,
            "makespan_measured_s": 0.22, "makespan_measured_s_min": 0.21, "makespan_measured_s_max": 0.23,
            "makespan_predicted_s": 0.2, "makespan_ratio": 1.1,
            "latency_p99_measured_ms": None, "latency_p99_predicted_ms": None, "latency_p99_ratio": None}


#: a Flink run's calibration (as skewbench.live.calibrate's Calibration.to_dict writes it, shortened)
FLINK_CAL = {"overhead_ms": 0.12, "overhead_per_worker_ms": [0.11, 0.12, 0.13], "transport_ms": 0.07,
             "capacity": 6002, "capacity_per_source": [6002, 8667], "capacity_local_sources": [True, False],
             "slice_ms": 57.75, "tuples": {"idle": 12000, "busy": 30000, "fill": 80000}}


def _flink_row(fp: str, strategy: str, routing: str = "routed", shift: float = 0.0) -> dict:
    """A Flink row as live_rows writes it: 3 workers, 2 repetitions of a 5-second phase (the
    numbers made up; ``shift`` moves every series value)."""
    def rep(r: int) -> dict:
        worker = [[100.0 * (w + 1) + 10 * r + i + shift for i in range(5)] for w in range(3)]
        return {"engine": {"worker_throughput": worker, "source_blocked_ms": [5.0 * i + r + shift for i in range(5)]},
                "predicted": {"worker_throughput": [[v + 1.5 for v in vals] for vals in worker],
                              "source_blocked_ms": [0.0, 1.0, 2.0, 3.0 + shift, 0.0]},
                "flink": {"t_s": [0.73, 1.72, 2.74, 3.71, 4.75],
                          "worker_records_in_per_s": [[90.0 * (w + 1) + i + shift for i in range(5)] for w in range(3)],
                          "worker_busy_ms_per_s": [[300.0 * (w + 1) + i + r + shift for i in range(5)]
                                                   for w in range(3)],
                          "source_t_s": [0.73, 1.72, 2.74, 3.71, 4.75],
                          "source_backpressured_ms_per_s": [0.0, 12.5 + r, 30.0 + shift, 4.0, 0.0]}}

    row = {"engine": "flink", "strategy": strategy, "family": "grouping", "routing": routing, "job": "agg",
           "workers": 3, "sources": 2, "merge_parallelism": 0, "dataset": "tiny", "fingerprint": fp,
           "tuples_offered": 2500, "tuples_executed": 2500, "dropped": 0, "rate": 500.0, "work": "sleep",
           "cost_model": "fixed 1 ms", "params": {}, "repeat": 2, "window_ms": 1000.0, "window_s": [1.0, 4.0],
           "duration_s": 5.0, "warmup": 0.2, "state_backend": "hashmap", "cluster": "local",
           "subtask_records": [800, 900, 800], "decided_records": [800, 900, 800], "routing_exact": True,
           "aggregates_exact": True, "calibration_before": FLINK_CAL,
           "calibration_after": {**FLINK_CAL, "overhead_ms": 0.11, "transport_ms": 0.06},
           "overhead_ms": 0.12, "transport_ms": 0.07,
           "throughput_measured": 495.0, "throughput_measured_min": 490.0, "throughput_measured_max": 500.0,
           "throughput_predicted": 498.0, "throughput_predicted_unbounded": 499.0,
           "latency_p99_measured_ms": 40.0, "latency_p99_measured_ms_min": 35.0, "latency_p99_measured_ms_max": 45.0,
           "latency_p99_predicted_ms": 38.0, "latency_p99_predicted_unbounded_ms": 30.0,
           "merge_utilisation_max_measured": None, "source_blocked_measured_ms": 20.0,
           "source_blocked_measured_ms_min": 15.0, "source_blocked_measured_ms_max": 25.0,
           "source_backpressured_ms": 47.5, "source_backpressured_ms_min": 45.0, "source_backpressured_ms_max": 50.0,
           "source_backpressured_predicted_ms": 6.0, "merge_records": 0.0,
           "utilisation_measured": [0.3, 0.6, 0.3], "utilisation_predicted": [0.31, 0.62, 0.3],
           "flink_work_busy_ms_per_s": [300.0, 600.0, 300.0], "flink_merge_busy_ms_per_s": None,
           "throughput_ratio": 495.0 / 498.0, "latency_p99_ratio": 40.0 / 38.0, "latency_p99_ratio_unbounded": 40 / 30,
           "makespan_measured_s": None, "makespan_ratio": None,
           "repetitions": [{"throughput": 490.0, "latency_p99_ms": 45.0, "merge_utilisation_max": None},
                           {"throughput": 500.0, "latency_p99_ms": 35.0, "merge_utilisation_max": None}],
           "series": [rep(0), rep(1)]}
    return row


def _result(conf: dict, fp: str, rows: list[dict], attempt: int = 1, agreement: list | None = None) -> None:
    engines = list(dict.fromkeys(r["engine"] for r in rows))
    doc = {"rows": rows,
           "agreement": agreement or [{"engine": "spark", "metric": "throughput", "strategies": 2, "kendall_tau": 1.0,
                                       "kendall_tau_plain": 1.0, "not_separated": []}],
           "calibrations": {e: {"before": next(r for r in rows if r["engine"] == e)["calibration_before"],
                                "after": next(r for r in rows if r["engine"] == e)["calibration_after"]}
                            for e in engines}, "seconds": {}, "restarts": [],
           "stream": {"dataset": "tiny", "fingerprint": fp, "tuples": 200, "cost_model": "fixed 1 ms", "rate": 0.0,
                      "workers": 4, "work": "sleep", "repeat": 2},
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


def _history(client: MlflowClient, run_id: str, key: str, since_ms: int = 0) -> list[tuple[int, float]]:
    """A metric's (step, value) points from ``since_ms`` on, in step order."""
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, key) if m.timestamp >= since_ms)


def _expected_steps(row: dict) -> dict[str, list[tuple[int, float]]]:
    """What the row's series and repetitions must be in MLflow: key -> (step, value) points."""
    want: dict[str, list[tuple[int, float]]] = {}
    for k in ("throughput", "latency_p99_ms"):
        want[f"repetition/{k}"] = [(r, rep[k]) for r, rep in enumerate(row["repetitions"], start=1)]
    for r, s in enumerate(row["series"], start=1):
        for w in range(3):
            want[f"series/worker_throughput/{w}/rep{r}"] = list(enumerate(s["engine"]["worker_throughput"][w]))
            want[f"series/worker_throughput_predicted/{w}/rep{r}"] = list(
                enumerate(s["predicted"]["worker_throughput"][w]))
            # Flink's samples end at t_s = 0.73, 1.72, ... s: the seconds 0, 1, ... of the phase
            want[f"series/flink_busy_ms_per_s/{w}/rep{r}"] = list(enumerate(s["flink"]["worker_busy_ms_per_s"][w]))
            want[f"series/flink_records_in_per_s/{w}/rep{r}"] = list(
                enumerate(s["flink"]["worker_records_in_per_s"][w]))
        want[f"series/source_blocked_ms/rep{r}"] = list(enumerate(s["engine"]["source_blocked_ms"]))
        want[f"series/source_blocked_ms_predicted/rep{r}"] = list(enumerate(s["predicted"]["source_blocked_ms"]))
        want[f"series/source_backpressured_ms_per_s/rep{r}"] = list(
            enumerate(s["flink"]["source_backpressured_ms_per_s"]))
    return want


def test_a_flink_row_logs_its_medians_ranges_calibrations_and_series(store):
    from skewbench.present import site

    conf = _conf(store["root"], "manual__f")
    conf["engines"] = ["flink"]
    steps.open_tracking(conf, steps.DAG_ID, "manual__f")
    rows = [_flink_row(store["fp"], "kg"), _flink_row(store["fp"], "pkg"), _flink_row(store["fp"], "flink", "native")]
    agreement = [{"engine": "flink", "metric": "throughput", "strategies": 3, "kendall_tau": 0.8,
                  "kendall_tau_plain": 0.9, "not_separated": [["kg", "pkg"]]},
                 {"engine": "flink", "metric": "latency_p99_ms", "strategies": 3, "kendall_tau": 0.5,
                  "kendall_tau_plain": 0.4, "not_separated": []}]
    _result(conf, store["fp"], rows, agreement=agreement)
    logged = steps.log_results(conf, steps.DAG_ID, "manual__f")
    client = store["client"]
    kids = {(c.data.tags["skewbench.strategy"], c.data.tags["skewbench.routing"]): c
            for c in _children(client, logged["parent_run_id"])}
    assert set(kids) == {("kg", "routed"), ("pkg", "routed"), ("flink", "native")}
    row, kg = rows[0], kids[("kg", "routed")]
    m, p, t = kg.data.metrics, kg.data.params, kg.data.tags
    # every number of the row, medians, minimum and maximum among them, as it is in the row
    for k, v in row.items():
        if k not in lt.PARAM_COLUMNS and isinstance(v, (int, float)) and not isinstance(v, bool):
            assert m[k] == pytest.approx(v), k
    assert (m["throughput_measured"], m["throughput_measured_min"], m["throughput_measured_max"]) == (495, 490, 500)
    assert (m["latency_p99_measured_ms"], m["latency_p99_measured_ms_min"], m["latency_p99_measured_ms_max"]) == \
        (40, 35, 45)
    assert (m["source_backpressured_ms_min"], m["source_backpressured_predicted_ms"]) == (45, 6)
    assert "merge_utilisation_max_measured" not in m and "makespan_measured_s" not in m  # None: not a metric
    # the calibrations, the window, the per-worker lists
    assert (m["calibration_before.overhead_ms"], m["calibration_after.overhead_ms"]) == (0.12, 0.11)
    assert (m["calibration_before.tuples.idle"], m["calibration_after.transport_ms"]) == (12000, 0.06)
    assert m["calibration_before.overhead_per_worker_ms/2"] == 0.13
    assert "calibration_before.capacity_local_sources/0" not in m  # a bool is not a number
    assert json.loads(t["skewbench.calibration_before"]) == FLINK_CAL
    assert (m["window_s.start"], m["window_s.end"], m["repeat"]) == (1.0, 4.0, 2)
    assert [m[f"utilisation_measured/{w}"] for w in range(3)] == [0.3, 0.6, 0.3]
    assert m["flink_work_busy_ms_per_s/1"] == 600.0
    assert (p["repeat"], p["job"], p["sources"], p["state_backend"], p["cluster"]) == \
        ("2", "agg", "2", "hashmap", "local")
    # the step metrics: each repetition's values and series, equal to the row's
    want = _expected_steps(row)
    for key, points in want.items():
        assert _history(client, kg.info.run_id, key) == points, key
    assert t[lt.SERIES_LOGGED_TAG] == t[lt.SERIES_DIGEST_TAG]
    # the parent: the agreements, the pairs not separated, the calibrations
    parent = client.get_run(logged["parent_run_id"])
    pm = parent.data.metrics
    assert (pm["kendall_tau/tiny/flink/throughput"], pm["kendall_tau_plain/tiny/flink/throughput"]) == (0.8, 0.9)
    assert (pm["kendall_tau_plain/tiny/flink/latency_p99_ms"], pm["agreement_strategies/tiny/flink/throughput"]) == \
        (0.4, 3)
    assert json.loads(parent.data.tags["skewbench.not_separated/tiny/flink/throughput"]) == [["kg", "pkg"]]
    assert (pm["calibration/tiny/flink/before.overhead_ms"], pm["calibration/tiny/flink/after.overhead_ms"]) == \
        (0.12, 0.11)
    assert pm["calibration/tiny/flink/before.tuples.busy"] == 30000

    # logged again (a retried log step): nothing logged twice
    steps.log_results(conf, steps.DAG_ID, "manual__f")
    for key, points in want.items():
        assert _history(client, kg.info.run_id, key) == points, key

    # the page: a figure per second of each strategy's phase, the not separated pair named
    steps.report(conf, steps.DAG_ID, "manual__f")
    page = (Path(conf["out_root"]) / "live.html").read_text()
    assert page.count('alt="tiny flink ') == 2 + 3 and 'alt="tiny flink flink (native) per second"' in page
    assert "not separated by the repetitions" in page and "kg and pkg" in page
    # the site reads the rows back without their series: the same figures but those, the same notes
    (live,) = [e for e in site.collect_live(store["uri"]) if e["run_id"] == logged["parent_run_id"]]
    (run,) = live["runs"]
    back = {(r["strategy"], r["routing"]): r for r in run["rows"]}
    assert not any(k.startswith(("series/", "repetition/")) for r in run["rows"] for k in r)
    assert back[("kg", "routed")]["throughput_measured_min"] == 490.0
    assert run["calibrations"]["flink"]["before"] == FLINK_CAL
    assert run["calibrations"]["flink"]["after"]["overhead_ms"] == 0.11
    assert {a["metric"]: (a["kendall_tau"], a["kendall_tau_plain"]) for a in run["agreement"]} == \
        {"throughput": (0.8, 0.9), "latency_p99_ms": (0.5, 0.4)}
    html = "\n".join(livepage.run_sections(run, heading="h3", links=False))
    assert html.count("<img ") == 2 and "kg and pkg" in html and "1.0–4.0" in html
    assert "calibration before the strategies: per-tuple overhead 0.12 ms" in html


def test_series_logged_half_way_are_completed_and_a_retried_attempts_read_from_its_own_start(store):
    """Logging that stopped half-way logs the same points again (the store keeps each once); a
    DAG run run again with new data: the child's history keeps the earlier points, the new ones
    are those from its tag skewbench.series_t0 on."""
    conf = _conf(store["root"], "manual__g")
    steps.open_tracking(conf, steps.DAG_ID, "manual__g")
    _result(conf, store["fp"], [_flink_row(store["fp"], "kg")])
    logged = steps.log_results(conf, steps.DAG_ID, "manual__g")
    client = store["client"]
    (first,) = _children(client, logged["parent_run_id"])
    t0 = int(first.data.tags[lt.SERIES_T0_TAG])
    client.delete_tag(first.info.run_id, lt.SERIES_LOGGED_TAG)  # as if the step had stopped before its end
    steps.log_results(conf, steps.DAG_ID, "manual__g")
    run = client.get_run(first.info.run_id)
    assert int(run.data.tags[lt.SERIES_T0_TAG]) == t0 and lt.SERIES_LOGGED_TAG in run.data.tags
    for key, points in _expected_steps(_flink_row(store["fp"], "kg")).items():
        assert _history(client, first.info.run_id, key) == points, key
    again = _flink_row(store["fp"], "kg", shift=7.0)
    _result(conf, store["fp"], [again], attempt=2)
    steps.log_results(conf, steps.DAG_ID, "manual__g")
    run = client.get_run(first.info.run_id)
    t1 = int(run.data.tags[lt.SERIES_T0_TAG])
    assert t1 > t0 and run.data.tags[lt.SERIES_LOGGED_TAG] == run.data.tags[lt.SERIES_DIGEST_TAG]
    for key, points in _expected_steps(again).items():
        assert _history(client, first.info.run_id, key, since_ms=t1) == points, key
    old = _expected_steps(_flink_row(store["fp"], "kg"))["series/worker_throughput/0/rep1"]
    assert _history(client, first.info.run_id, "series/worker_throughput/0/rep1") == sorted(old + _expected_steps(
        again)["series/worker_throughput/0/rep1"])
