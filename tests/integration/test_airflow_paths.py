"""The DAGs' paths that only a real Airflow run shows (real Airflow ``dag.test()`` in a
subprocess on SQLite, real spark-submit on ``local[2]``, real Great Expectations, real MLflow on
SQLite), one throw-away environment for the module, the runs in this order:

1. ``skewbench_datasets`` end to end on a two-entry catalog: every entry materialised and
   validated, the catalog asset published with each dataset's fingerprint;
2. a nightly run, then the *same* DAG run again (``dag.test()`` with the same logical date and
   ``run_after``: Airflow deletes the finished run and runs every task of it again under the
   same run id, as a cleared run would), the second time two tasks at a time on Airflow's
   LocalExecutor as ``make run`` runs them (skewbench.dagrun): identical results, the same MLflow
   runs, nothing duplicated; its SUMMARY.md holds the numbers of the results files;
3. the previous night's logged result altered in MLflow, then the next night with
   ``fail_on_change``: the run ends failed in ``check_trend`` alone, with the changed cell named;
4. a replay whose results break an expectation (the Spark job's output corrupted after it is
   written, as an engine bug would): ``validate`` fails with GE's message, ``mark_failed`` marks
   the family's MLflow parent FAILED, and nothing downstream runs or logs.

Each step is a full DAG run (spark-submit, GE): slow, ``make slow``.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from skewbench.results import schema
from tests.integration import airflow_env as af

pytestmark = [pytest.mark.slow, pytest.mark.airflow]

CATALOG = """
version: 1
datasets:
  - name: tiny-zipf
    sets: [default]
    generator: zipf
    keys: 300
    tuples: 6000
    alpha: 1.2
    seed: 1
  - name: tiny-drift
    sets: [default]
    generator: drifting
    keys: 200
    seed: 2
    phases:
      - {tuples: 3000, alpha: 1.0}
      - {tuples: 3000, alpha: 1.0, permutation: new}
"""
DAG = "skewbench_nightly"
CONF = {"datasets": ["tiny-zipf"], "families": ["grouping"], "grouping_strategies": ["kg", "pkg"],
        "grouping_workers": [3], "grouping_sources": [2], "seeds": 1}
NIGHT1, NIGHT2, NIGHT3 = "2026-11-20T02:00:00+00:00", "2026-11-21T02:00:00+00:00", "2026-11-22T02:00:00+00:00"
TIMING = schema("grouping").timing_columns

#: dag.test() once per (conf, logical date); ``run_after`` = the logical date, so the run id
#: (``manual__<run_after>``) is the same each time a date is given again; through
#: skewbench.dagrun.run_once, SKEWBENCH_RUN_PARALLELISM tasks at once (default 1: dag.test() alone)
RUN = r'''
import json, os, sys
from datetime import datetime
from skewbench import dagrun
dagrun.prepare(int(os.environ.get("SKEWBENCH_RUN_PARALLELISM", "1")))  # before Airflow
import great_expectations  # before Airflow
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(sys.argv[1])
dag = bag.get_dag(sys.argv[2])
for conf, when in json.loads(sys.argv[3]):
    when = datetime.fromisoformat(when)
    run = dagrun.run_once(dag, conf, log_dir=os.environ["SKEWBENCH_STATE"], logical_date=when, run_after=when)
    tis = run.get_task_instances()
    print("RUNSTATE " + json.dumps({"state": str(run.state), "run_id": run.run_id,
                                    "tasks": {f"{ti.task_id}[{ti.map_index}]": [str(ti.state), ti.try_number]
                                              for ti in tis},
                                    "times": [[ti.start_date.timestamp(), ti.end_date.timestamp()] for ti in tis
                                              if ti.start_date and ti.end_date]}), flush=True)
'''

EVENTS = r'''
import json, sys
import great_expectations  # before Airflow
from airflow.models.asset import AssetEvent, AssetModel
from airflow.utils.session import create_session
from sqlalchemy import select
with create_session() as s:
    evs = s.scalars(select(AssetEvent).join(AssetModel, AssetEvent.asset_id == AssetModel.id)
                    .where(AssetModel.uri == sys.argv[1])).all()
    print("EVENTS " + json.dumps([{"extra": e.extra, "dag": e.source_dag_id, "task": e.source_task_id} for e in evs]))
'''

#: a spark_jobs/replay.py that runs the project's, then breaks its results: one cell's
#: per-worker loads no longer sum to the tuples replayed (what an engine bug would write)
CORRUPTING_JOB = r'''
import runpy, sys
from pathlib import Path
real = sys.argv[0] = REAL
try:
    runpy.run_path(real, run_name="__main__")
except SystemExit as e:
    if e.code not in (None, 0):
        raise
import pyarrow as pa, pyarrow.parquet as pq
out = Path(sys.argv[sys.argv.index("--out") + 1])
t = pq.read_table(out / "summary.parquet")
loads = t.column("worker_tuples").to_pylist()
loads[0][0] += 7
t = t.set_column(t.schema.get_field_index("worker_tuples"), "worker_tuples", pa.array(loads, type=pa.list_(pa.int64())))
pq.write_table(t, out / "summary.parquet")
print("corrupted", out / "summary.parquet")
'''


def run(env: dict[str, str], dag_id: str, runs: list[tuple[dict, str]]) -> tuple[list[dict], str]:
    p = subprocess.run([sys.executable, "-c", RUN, str(af.REPO / "dags"), dag_id, json.dumps(runs)], env=env,
                       capture_output=True, text=True, timeout=2400)
    log = p.stdout + p.stderr
    out = [json.loads(ln[9:]) for ln in p.stdout.splitlines() if ln.startswith("RUNSTATE ")]
    assert len(out) == len(runs), log[-8000:]
    return out, log


def mlflow_client(env):
    from mlflow import MlflowClient

    return MlflowClient(env["SKEWBENCH_TRACKING_URI"])


def mlflow_state(env: dict[str, str], run_id: str) -> dict:
    """This DAG run's grouping parent runs (id, status) and their child runs (key -> id, status,
    metrics but the timings, params, and each metric history's length)."""
    from mlflow.entities import ViewType

    client = mlflow_client(env)
    exp = client.get_experiment_by_name("skewbench-grouping")
    parents = client.search_runs([exp.experiment_id], f"tags.`skewbench.run_id` = '{run_id}' and "
                                 "tags.`skewbench.key` LIKE 'skewbench_nightly/%/grouping'",
                                 run_view_type=ViewType.ALL)
    parents = [p for p in parents if "mlflow.parentRunId" not in p.data.tags]
    out = {"parents": [(p.info.run_id, p.info.status) for p in parents], "children": {}}
    for p in parents:
        for c in client.search_runs([exp.experiment_id], f"tags.`mlflow.parentRunId` = '{p.info.run_id}'",
                                    run_view_type=ViewType.ALL, max_results=1000):
            out["children"].setdefault(c.data.tags["skewbench.key"], []).append({
                "id": c.info.run_id, "status": c.info.status, "params": dict(c.data.params),
                "metrics": {k: v for k, v in c.data.metrics.items() if not k.startswith("time.")},
                "history": {k: len(client.get_metric_history(c.info.run_id, k))
                            for k in ("imbalance", "window.imbalance_cum")}})
    return out


def results_state(out_root: Path) -> dict:
    """Every file under a run's output directory, and its results tables without the timings."""
    tables = {}
    for f in sorted(out_root.rglob("*.parquet")):
        t = pq.read_table(f)
        tables[str(f.relative_to(out_root))] = t.select([c for c in t.column_names if c not in TIMING]).to_pylist()
    return {"files": sorted(str(p.relative_to(out_root)) for p in out_root.rglob("*") if p.is_file()),
            "tables": tables}


def out_root(env: dict[str, str], when: str, run_id: str) -> Path:
    return Path(env["SKEWBENCH_STATE"]) / "runs" / when[:10] / re.sub(r"[^A-Za-z0-9._-]+", "_", run_id).strip("_")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("airflow-paths")
    e = af.make_env(root)  # spark-submit on local[2]
    (root / "catalog.yaml").write_text(CATALOG)
    e["SKEWBENCH_RETRY_DELAY_SECONDS"] = "1"
    af.migrate(e)
    return e


@pytest.fixture(scope="module")
def datasets_run(env):
    (result,), log = run(env, "skewbench_datasets", [({"catalog_set": "default", "datasets": []}, NIGHT1)])
    return result, log


@pytest.fixture(scope="module")
def night1(env, datasets_run):
    """The first night, then the same DAG run again; the state after each."""
    (first,), log1 = run(env, DAG, [(CONF, NIGHT1)])
    assert first["state"] == "success", log1[-8000:]
    root = out_root(env, NIGHT1, first["run_id"])
    before = {"results": results_state(root), "mlflow": mlflow_state(env, first["run_id"]),
              "summary": (root / "SUMMARY.md").read_text()}
    # again, its tasks two at a time, as make run runs them (skewbench.dagrun)
    (again,), log2 = run(env | {"SKEWBENCH_RUN_PARALLELISM": "2"}, DAG, [(CONF, NIGHT1)])
    after = {"results": results_state(root), "mlflow": mlflow_state(env, again["run_id"]),
             "summary": (root / "SUMMARY.md").read_text()}
    return {"first": first, "again": again, "before": before, "after": after, "root": root, "log": log1 + log2}


def test_the_datasets_dag_materialises_validates_and_publishes_the_catalog(env, datasets_run):
    from skewbench.datasets.contract import open_dataset

    result, log = datasets_run
    assert result["state"] == "success", log[-8000:]
    assert {k: v[0] for k, v in result["tasks"].items()} == {
        "entries[-1]": "success", "materialize[0]": "success", "materialize[1]": "success",
        "publish[-1]": "success"}, result["tasks"]
    data = Path(env["SKEWBENCH_STATE"]) / "datasets"
    fps = {}
    for name, tuples in (("tiny-zipf", 6000), ("tiny-drift", 6000)):
        meta = json.loads((data / name / "_skewbench.json").read_text())
        assert meta["tuples"] == tuples and meta["fingerprint"] == open_dataset(data / name).meta["fingerprint"]
        assert sum(pq.read_metadata(f).num_rows for f in (data / name).glob("*.parquet")) == tuples
        fps[name] = meta["fingerprint"]
    p = subprocess.run([sys.executable, "-c", EVENTS, "skewbench://datasets/catalog"], env=env, capture_output=True,
                       text=True, timeout=600)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("EVENTS ")), None)
    assert line is not None, p.stdout[-3000:] + p.stderr[-3000:]
    # one event, from the publish task, naming each dataset with its fingerprint
    assert json.loads(line[7:]) == [{"extra": fps, "dag": "skewbench_datasets", "task": "publish"}]


def test_an_airflow_rerun_of_the_same_dag_run_changes_nothing(night1):
    """The rerun ran its tasks two at a time (make run's executor): the same results and MLflow runs."""
    first, again = night1["first"], night1["again"]
    assert again["state"] == "success" and again["run_id"] == first["run_id"], night1["log"][-6000:]
    # the first run one task at a time, the rerun two at once at some point and never more
    def at_once(times: list) -> int:
        return max(sum(1 for s, e in times if s <= t < e) for t, _ in times)

    assert (at_once(first["times"]), at_once(again["times"])) == (1, 2), (first["times"], again["times"])
    # Airflow ran every task again (a fresh task instance per task: try 1 of the new run)
    assert again["tasks"]["grouping.replay[0]"] == ["success", 1]
    assert again["tasks"]["grouping.log_to_mlflow[-1]"] == ["success", 1]
    before, after = night1["before"], night1["after"]
    assert after["results"] == before["results"]  # same files, same tables (timings aside)
    assert not [f for f in after["results"]["files"] if ".tmp" in f or "scratch" in f]
    b, a = before["mlflow"], after["mlflow"]
    assert len(b["parents"]) == 1 and b["parents"][0][1] == "FINISHED"
    assert a["parents"] == b["parents"]  # the same parent run, finished again
    assert len(b["children"]) == 2 and all(len(v) == 1 for v in b["children"].values())
    assert a["children"] == b["children"]  # same runs, same params and metrics, one point each
    assert all(v[0]["history"]["imbalance"] == 1 and v[0]["history"]["window.imbalance_cum"] >= 2
               for v in a["children"].values())


def _number(text: str) -> tuple[float, float]:
    """A printed number and half a unit of its last printed digit."""
    t = text.replace(",", "").replace("−", "-")
    if t in ("–",):
        return math.nan, 0.0
    mant, _, exp = t.lower().partition("e")
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    return float(t), 0.5 * 10.0 ** (-decimals) * (10.0 ** int(exp) if exp else 1.0)


def test_summary_md_holds_the_runs_numbers(env, night1):
    """Each row of the run's SUMMARY.md is the results file's cell: the strategy and coordinates,
    and every headline metric equal to the Parquet value at the printed precision; the heading
    names the dataset's fingerprint and size; the MLflow parent run is this run's."""
    root = night1["root"]
    text = night1["after"]["summary"]
    manifest = json.loads((root / "tiny-zipf" / "grouping" / "_manifest.json").read_text())
    rows = pq.read_table(root / "tiny-zipf" / "grouping" / "summary.parquet").to_pylist()
    ds = manifest["dataset"]
    assert f"### tiny-zipf (grouping, fingerprint {ds['fingerprint'][:12]}, {ds['tuples']} tuples)" in text
    lines = [ln for ln in text.splitlines() if ln.startswith("|") and not set(ln) <= set("|-: ")]
    headers = [c.strip() for c in lines[0].strip("|").split("|")]
    by_header = {m.header: m.name for m in schema("grouping").headline}
    assert headers[:4] == ["strategy", "workers", "sources", "seeds"]
    assert set(headers[4:]) <= set(by_header) and "imbalance" in headers and "latency p99 (ms)" in headers
    printed = {}
    for ln in lines[1:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        printed[(cells[0], int(cells[1]), int(cells[2]))] = dict(zip(headers[3:], cells[3:]))
    assert sorted(printed) == sorted((r["strategy"], r["workers"], r["sources"]) for r in rows)
    checked = 0
    for r in rows:
        got = printed[(r["strategy"], r["workers"], r["sources"])]
        assert got["seeds"] == "1"
        for h in headers[4:]:
            value, half = _number(got[h])
            want = r[by_header[h]]
            if want is None or (isinstance(want, float) and math.isnan(want)):
                assert math.isnan(value), (h, got[h], want)
                continue
            assert abs(value - want) <= half * 1.0000001 + 1e-12, (r["strategy"], h, got[h], want)
            checked += 1
    assert checked >= 2 * 5
    parent = night1["after"]["mlflow"]["parents"][0][0]
    assert f"MLflow parent run: {parent} " in text and f"results: {root}" in text


@pytest.fixture(scope="module")
def night2(env, night1):
    """Night 1's kg cell altered in MLflow (a later imbalance, as if night 1 had measured
    another value), then night 2 with fail_on_change."""
    from mlflow.entities import Metric

    client = mlflow_client(env)
    (kg,) = [v[0] for v in night1["after"]["mlflow"]["children"].values() if v[0]["params"]["strategy"] == "kg"]
    old = kg["metrics"]["imbalance"]
    import time

    client.log_batch(kg["id"], metrics=[Metric("imbalance", old * 1.5 + 1, int(time.time() * 1000), 0)],
                     synchronous=True)
    (result,), log = run(env, DAG, [({**CONF, "fail_on_change": True}, NIGHT2)])
    return result, log


def test_fail_on_change_fails_the_run_in_check_trend_with_the_changed_cell(env, night2):
    result, log = night2
    t = result["tasks"]
    assert result["state"] == "failed", log[-6000:]
    assert [k for k, v in t.items() if v[0] == "failed"] == ["check_trend[-1]"], t
    assert t["check_trend[-1]"][1] == 1  # failed at once, not retried
    assert t["grouping.log_to_mlflow[-1]"][0] == "success" and t["report[-1]"][0] == "success", t
    m = re.search(r"1 cell\(s\) changed against the previous night: grouping tiny-zipf (\S+[^;\n]*?) "
                  r"\(changed: ([^)\n]*)\)", log)
    assert m is not None, log[-6000:]
    assert "kg" in m.group(1) and "pkg" not in m.group(1) and "imbalance" in m.group(2)
    # the run's results are logged all the same (a change is reported, not hidden)
    state = mlflow_state(env, result["run_id"])
    assert [s for _, s in state["parents"]] == ["FINISHED"] and len(state["children"]) == 2


@pytest.fixture(scope="module")
def corrupted(env, tmp_path_factory):
    project = tmp_path_factory.mktemp("project")
    (project / "spark_jobs").mkdir()
    (project / "spark_jobs" / "replay.py").write_text(
        CORRUPTING_JOB.replace("REAL", repr(str(af.REPO / "spark_jobs" / "replay.py"))))
    (result,), log = run(env | {"SKEWBENCH_PROJECT": str(project)}, DAG, [(CONF, NIGHT3)])
    return result, log


def test_results_that_fail_validation_in_the_dag_fail_it_and_log_nothing(env, corrupted):
    result, log = corrupted
    t = result["tasks"]
    assert result["state"] == "failed", log[-6000:]
    assert "corrupted" in log and t["grouping.replay[0]"][0] == "success", t
    assert t["grouping.validate[0]"] == ["failed", 1], t  # at once: a retry cannot change the results
    assert t["grouping.mark_failed[-1]"][0] == "success", t
    for task in ("grouping.log_to_mlflow[-1]", "report[-1]", "check_trend[-1]", "prune_runs[-1]"):
        assert t[task][0] == "upstream_failed", (task, t)
    root = out_root(env, NIGHT3, result["run_id"])
    assert "ValidationFailed" in log and "load_sum_gap" in log and str(root / "tiny-zipf" / "grouping") in log
    assert (root / "tiny-zipf" / "grouping-validation" / "validation-summary.json").exists()  # GE's result kept
    assert not (root / "SUMMARY.md").exists() and not (root / "mlflow-grouping.json").exists()
    state = mlflow_state(env, result["run_id"])
    assert [s for _, s in state["parents"]] == ["FAILED"] and state["children"] == {}
    client = mlflow_client(env)
    parent = client.get_run(state["parents"][0][0])
    assert parent.data.tags["skewbench.failure"] == "a replay or its validation failed"
    assert not parent.data.metrics and not client.list_artifacts(parent.info.run_id)
