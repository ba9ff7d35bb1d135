"""Faults under Airflow's real scheduler (``make ui``'s processes: API server, scheduler, DAG
processor, triggerer, on free ports over a throw-away state), driven through the REST API as an
operator would:

* the replay task's process killed with SIGKILL mid-run (with its spark-submit children): the
  scheduler retries it, the run succeeds, the results are whole and valid, and MLflow holds one
  parent run with one child per cell;
* that run cleared and re-run through the API: the same results, bit for bit, and the same
  MLflow state (no second parent, no duplicate child, the same metrics);
* a run marked failed through the API while its replay runs: the replay is stopped and nothing
  of the run is logged as a result (no cell run in MLflow; the parent opened for the task links
  is never finished as a success);
* soak: three runs triggered back to back (the DAG runs one at a time, the others queue): all
  finish, none is left queued or running, each has one FINISHED MLflow parent with one run per
  cell, and the runs root keeps only the newest ``SKEWBENCH_KEEP_RUNS`` run directories.

Slow (several minutes): ``make slow`` and ``SKEWBENCH_SLOW=1`` run it.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.integration import airflow_env as af

pytestmark = [pytest.mark.slow, pytest.mark.airflow]

DAG = "skewbench_nightly"
CATALOG = af.one_dataset_catalog(200_000)  # the replay runs long enough to be killed mid-way
CONF = {"datasets": ["tiny-zipf"], "families": ["grouping"], "grouping_strategies": ["kg", "pkg"],
        "grouping_workers": [5], "seeds": 1}
REPLAY = "grouping.replay"
TIMING = ("route_seconds", "sim_tuples_per_s", "wall_seconds")
KEEP = 2  # SKEWBENCH_KEEP_RUNS: the retention of run output directories


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    u = af.Ui(tmp_path_factory.mktemp("faults"), CATALOG)
    u.env["SKEWBENCH_KEEP_RUNS"] = str(KEEP)
    u.start()
    try:
        u.api("PATCH", f"/api/v2/dags/{DAG}", {"is_paused": False})
        yield u
    finally:
        u.stop()


def trigger(ui: af.Ui, run_id: str) -> str:
    ui.api("POST", f"/api/v2/dags/{DAG}/dagRuns", {"dag_run_id": run_id, "logical_date": None, "conf": CONF})
    return run_id


def wait_task_running(ui: af.Ui, run_id: str, task_id: str, timeout: float = 600) -> dict:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        tis = [t for t in ui.tasks(DAG, run_id) if t["task_id"] == task_id]
        if tis and tis[0]["state"] == "running":
            return tis[0]
        assert not tis or tis[0]["state"] not in ("failed", "success"), tis
        time.sleep(1)
    raise AssertionError(f"{task_id} of {run_id} did not start in {timeout:.0f} s")


def task_processes(ti_id: str) -> list:
    """The task's process (``airflow worker -- <ti id>``) and every process under it (its
    spark-submit, Spark's JVM and the Python driver), found within 60 s."""
    import psutil

    t0 = time.monotonic()
    while time.monotonic() - t0 < 60:
        for p in psutil.process_iter(["cmdline"]):
            if f"airflow worker -- {ti_id}" in " ".join(p.info["cmdline"] or ()):
                kids = p.children(recursive=True)
                if any("java" in (k.name() or "") for k in kids):  # spark-submit has started the JVM
                    return [p, *kids]
        time.sleep(0.5)
    raise AssertionError(f"no process of task instance {ti_id} with a Spark JVM under it")


def mlflow_state(ui: af.Ui, run_id: str) -> dict:
    """This pipeline run's grouping parent runs in MLflow, and each one's cell runs with their
    metrics (timings left out)."""
    from mlflow.tracking import MlflowClient

    from skewbench.nightly import run_key
    from skewbench.tracking import KEY_TAG, experiment_name

    client = MlflowClient(tracking_uri=ui.env["SKEWBENCH_TRACKING_URI"])
    exp = client.get_experiment_by_name(experiment_name("grouping"))
    if exp is None:
        return {"parents": [], "cells": {}}
    key = run_key(DAG, run_id, "grouping")
    parents = client.search_runs([exp.experiment_id], f"tags.`{KEY_TAG}` = '{key}'")
    out: dict = {"parents": [(p.info.status) for p in parents], "cells": {}}
    for p in parents:
        for c in client.search_runs([exp.experiment_id], f"tags.mlflow.parentRunId = '{p.info.run_id}'"):
            out["cells"].setdefault(c.info.run_name, []).append(
                {k: v for k, v in c.data.metrics.items() if not k.startswith("time.")})
    return out


def out_root(ui: af.Ui, run_id: str) -> Path:
    """The run's output directory (check_params' conf, from its XCom)."""
    conf = ui.api("GET", f"/api/v2/dags/{DAG}/dagRuns/{run_id}/taskInstances/check_params/xcomEntries/return_value")
    value = conf["value"] if isinstance(conf["value"], dict) else json.loads(conf["value"])
    return Path(value["out_root"])


def results(ui: af.Ui, run_id: str) -> dict[str, list[dict]]:
    """The run's grouping summary tables (timings left out), by results directory, and every
    file under the run's output."""
    root = out_root(ui, run_id)
    tables = {}
    for f in sorted(root.rglob("summary.parquet")):
        rows = pq.read_table(f).to_pylist()
        tables[str(f.parent.relative_to(root))] = [{k: v for k, v in r.items() if k not in TIMING} for r in rows]
    return {"tables": tables, "files": sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())}


def test_a_killed_replay_is_retried_by_the_scheduler_and_a_cleared_run_changes_nothing(ui):
    run_id = trigger(ui, "killed-replay")
    ti = wait_task_running(ui, run_id, REPLAY)
    assert ti["try_number"] == 1
    procs = task_processes(ti["id"])
    for p in procs:
        try:
            os.kill(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    run = ui.wait_run(DAG, run_id, 900)
    states = {(t["task_id"], t["map_index"]): (t["state"], t["try_number"]) for t in ui.tasks(DAG, run_id)}
    assert run["state"] == "success", states
    assert states[(REPLAY, 0)] == ("success", 2), states  # the killed try, then the scheduler's retry
    first = results(ui, run_id)
    assert len(first["tables"]) == 1 and len(next(iter(first["tables"].values()))) == 2, first
    assert not [f for f in first["files"] if ".tmp" in f or "scratch" in f], first["files"]
    logged = mlflow_state(ui, run_id)
    assert logged["parents"] == ["FINISHED"], logged
    assert [n.split()[:2] for n in sorted(logged["cells"])] == [["tiny-zipf", "kg"], ["tiny-zipf", "pkg"]], logged
    assert all(len(v) == 1 for v in logged["cells"].values()), logged  # no duplicate cell run

    # the same run cleared and run again from the API: same results, same MLflow state
    ui.api("POST", f"/api/v2/dags/{DAG}/dagRuns/{run_id}/clear", {"dry_run": False})
    t0 = time.monotonic()
    while ui.api("GET", f"/api/v2/dags/{DAG}/dagRuns/{run_id}")["state"] in ("success", "failed"):
        assert time.monotonic() - t0 < 60, "the cleared run did not restart"
        time.sleep(1)
    run = ui.wait_run(DAG, run_id, 900)
    assert run["state"] == "success"
    again = results(ui, run_id)
    assert again["tables"] == first["tables"]
    assert again["files"] == first["files"]
    assert mlflow_state(ui, run_id) == logged


def test_a_run_marked_failed_through_the_api_stops_and_logs_no_result(ui):
    run_id = trigger(ui, "marked-failed")
    ti = wait_task_running(ui, run_id, REPLAY)
    procs = task_processes(ti["id"])
    ui.api("PATCH", f"/api/v2/dags/{DAG}/dagRuns/{run_id}", {"state": "failed"})
    run = ui.wait_run(DAG, run_id, 60)
    assert run["state"] == "failed"
    # the replay's processes are stopped: Airflow ends the task whose run was failed
    t0 = time.monotonic()
    while any(p.is_running() and p.status() != "zombie" for p in procs):
        assert time.monotonic() - t0 < 120, [p.pid for p in procs if p.is_running()]
        time.sleep(1)
    time.sleep(10)  # what the scheduler would still start, it would have by now
    states = {t["task_id"]: t["state"] for t in ui.tasks(DAG, run_id)}
    assert states["grouping.log_to_mlflow"] != "success", states
    logged = mlflow_state(ui, run_id)
    assert logged["cells"] == {}, logged
    assert logged["parents"] == ["RUNNING"], logged  # opened before the replay; nothing of the run ends it
    # the next run of the DAG ends that parent FAILED, with the reason, and finishes its own
    nxt = trigger(ui, "after-marked-failed")
    assert ui.wait_run(DAG, nxt, 900)["state"] == "success"
    assert mlflow_state(ui, run_id)["parents"] == ["FAILED"]
    assert mlflow_state(ui, nxt)["parents"] == ["FINISHED"]
    from mlflow.tracking import MlflowClient

    from skewbench.nightly import run_key
    from skewbench.tracking import KEY_TAG, experiment_name

    client = MlflowClient(tracking_uri=ui.env["SKEWBENCH_TRACKING_URI"])
    exp = client.get_experiment_by_name(experiment_name("grouping"))
    (parent,) = client.search_runs([exp.experiment_id], f"tags.`{KEY_TAG}` = '{run_key(DAG, run_id, 'grouping')}'")
    assert parent.data.tags["skewbench.failure"] == \
        f"its pipeline run ended before logging it (found by run {nxt})"


def test_soak_back_to_back_triggers_all_finish_once_and_the_runs_root_stays_bounded(ui):
    ids = [trigger(ui, f"soak-{i}") for i in range(KEEP + 1)]  # one more than the runs root keeps
    for run_id in ids:
        assert ui.wait_run(DAG, run_id, 900)["state"] == "success", run_id
    runs = ui.api("GET", f"/api/v2/dags/{DAG}/dagRuns?limit=100")["dag_runs"]
    assert not [r["dag_run_id"] for r in runs if r["state"] in ("queued", "running")], runs
    for run_id in ids:
        logged = mlflow_state(ui, run_id)
        assert logged["parents"] == ["FINISHED"], (run_id, logged)
        assert len(logged["cells"]) == 2 and all(len(v) == 1 for v in logged["cells"].values()), (run_id, logged)
    root = Path(ui.env["SKEWBENCH_STATE"]) / "runs"
    left = sorted(str(r) for d in root.iterdir() for r in d.iterdir())
    assert left == sorted(str(out_root(ui, i)) for i in ids[-KEEP:]), left
