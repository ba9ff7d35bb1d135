"""The Airflow DAGs: integrity (parse, tags, retries, docs, graph, parse time), triggering with
bad Params, and the nightly pipeline end to end with dag.test() (real Airflow on SQLite, real
Spark via spark-submit to a standalone cluster on loopback, real GE, real MLflow on SQLite)."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import pytest

from tests.integration import airflow_env as af

pytestmark = pytest.mark.airflow


@pytest.fixture(scope="module")
def env(tmp_path_factory, standalone_cluster):
    # the nightly's replays go to the standalone cluster (as SKEWBENCH_SPARK_MASTER=spark://... in
    # `make run` does)
    root = tmp_path_factory.mktemp("airflow")
    e = af.make_env(root, standalone_cluster.master_url)
    af.migrate(e)
    return e


@pytest.fixture(scope="module")
def dags_info(env):
    return af.probe(env)


def test_dags_import_cleanly_with_tags_retries_and_docs(dags_info):
    info = dags_info
    assert info["errors"] == {}
    assert {"skewbench_nightly", "skewbench_datasets"} <= set(info["dags"])
    for dag_id, d in info["dags"].items():
        assert "skewbench" in d["tags"], dag_id
        assert len(d["doc_md"]) > 200, dag_id
        assert d["max_active_runs"] == 1, dag_id
        for task_id, t in d["tasks"].items():
            assert t["retries"] >= 1, (dag_id, task_id)
    # nothing heavy at parse time: parsing imports none of the engines' libraries (a wall-clock
    # bound would depend on the machine)
    heavy = {"pyspark", "mlflow", "numba", "pandas", "matplotlib", "highspy", "great_expectations", "pyarrow"}
    assert not heavy & set(info["parse_imports"]), sorted(heavy & set(info["parse_imports"]))


def test_nightly_task_graph(dags_info):
    """One task group per family: its validation waits only for its own replays."""
    t = dags_info["dags"]["skewbench_nightly"]["tasks"]
    fams = ("allocation", "grouping", "shedding")
    assert t["check_params"]["downstream"] == sorted(
        ["check_trend", "dataset_names", "open_tracking", "prune_runs", "report", *[f"{f}.{k}" for f in fams
                                                       for k in ("log_to_mlflow", "mark_failed", "plan")]])
    assert t["open_tracking"]["downstream"] == [f"{f}.replay" for f in fams]
    assert t["dataset_names"]["downstream"] == ["prepare_dataset"]
    assert t["prepare_dataset"]["downstream"] == ["allocation.plan", "grouping.plan", "report", "shedding.plan"]
    for fam in fams:
        assert set(t[f"{fam}.plan"]["downstream"]) == {f"{fam}.spark_kwargs", f"{fam}.validate",
                                                       f"{fam}.log_to_mlflow"}
        assert t[f"{fam}.spark_kwargs"]["downstream"] == [f"{fam}.replay"]
        assert t[f"{fam}.replay"]["type"] == "SparkSubmitOperator"
        assert t[f"{fam}.replay"]["downstream"] == [f"{fam}.mark_failed", f"{fam}.validate"]
        assert t[f"{fam}.validate"]["downstream"] == [f"{fam}.log_to_mlflow", f"{fam}.mark_failed"]
        assert t[f"{fam}.log_to_mlflow"]["downstream"] == ["check_trend", "report"]
    assert t["check_trend"]["downstream"] == []
    assert t["report"]["downstream"] == ["prune_runs", "site"] and t["prune_runs"]["downstream"] == []
    assert t["site"]["downstream"] == []
    assert set(dags_info["dags"]["skewbench_nightly"]["params"]) == {
        "datasets", "catalog_set", "families", "seeds", "fail_on_change",
        "grouping_strategies", "grouping_workers", "grouping_sources", "grouping_provisioning",
        "grouping_scaling", "grouping_rates", "grouping_objective_ms", "shedding_strategies", "shedding_provisioning", "shedding_bound_ms", "shedding_workers", "shedding_error",
        "shedding_confidence", "allocation_strategies", "allocation_optimum", "allocation_opt_time_limit",
        "allocation_opt_node_limit", "allocation_opt_max_tasks"}


#: refused by the trigger's Params schema (a select offers only these choices)
BAD_CHOICES = [({"catalog_set": "huge"}, "catalog_set")]
#: accepted by the form (its number inputs would clamp them silently, and it refused lists
#: breaking item rules without a message) and refused by check_params with a sentence
BAD_RANGES = [({"grouping_workers": [0]}, "parameter 'grouping_workers' item 1: 0 is out of range; allowed: 1 to 10,000"),
              ({"grouping_strategies": ["nope"]}, "parameter 'grouping_strategies' item 1: 'nope' is not one of kg,"),
              ({"grouping_workers": []}, "parameter 'grouping_workers': [] should be non-empty"),
              ({"seeds": 0}, "parameter 'seeds': 0 is out of range; allowed: 1 to 100"),
              ({"grouping_provisioning": -5},
               "parameter 'grouping_provisioning': -5 is out of range; allowed: above 0 and at most 100,000"),
              ({"grouping_rates": [1000, 0]}, "parameter 'grouping_rates' item 2: 0 is out of range; allowed: above 0")]


@pytest.mark.slow  # about 30 s: make slow (CI runs it after make test, which must stay under 12 minutes)
def test_invalid_params_are_refused_before_any_task(env):
    """A value outside the form's choices is refused at trigger; an out-of-range number or an
    unknown dataset fails the run in check_params alone, with one sentence, before any dataset
    or Spark task runs (nothing clamped, nothing retried)."""
    from skewbench import nightly

    # every Param given (defaults but the bad one): dag.test() in one process carries a conf's
    # values over to the next run's Params
    defaults = {k: v["default"] for k, v in nightly.params_schema().items()}
    confs = [c for c, _ in BAD_CHOICES] + [c for c, _ in BAD_RANGES] + [{"datasets": ["no-such-dataset"]}]
    results, log = af.run_dags(env, "skewbench_nightly", [{**defaults, **c} for c in confs])
    for (conf, needle), result in zip(BAD_CHOICES, results):
        assert isinstance(result, str) and "ParamValidationError" in result and needle in result, (conf, log[-3000:])
    for (conf, message), result in zip(BAD_RANGES + [({}, "unknown dataset 'no-such-dataset'")],
                                       results[len(BAD_CHOICES):]):
        assert isinstance(result, dict) and result["state"] == "failed", (conf, log[-3000:])
        # one failed task, nothing crashed, the clean-up tasks skipped (nothing was started)
        assert [k for k, v in result["tasks"].items() if v == "failed"] == ["check_params[-1]"], result["tasks"]
        assert all(v == "skipped" for k, v in result["tasks"].items() if ".mark_failed" in k), result["tasks"]
        assert all(state in ("None", "upstream_failed") for k, state in result["tasks"].items()
                   if k.startswith(("grouping.replay", "prepare_dataset"))), result["tasks"]
        assert message in log, (conf, log[-3000:])
    assert not list((Path(env["SKEWBENCH_STATE"]) / "runs").rglob("summary.parquet"))


def _mlflow(env):
    import mlflow

    return mlflow.MlflowClient(env["SKEWBENCH_TRACKING_URI"])


@pytest.mark.slow  # about 2 min: make slow (CI runs it after make test, which must stay under 12 minutes)
def test_nightly_end_to_end(env):
    from datetime import datetime, timezone

    # both families; the dataset has no value column, so the default partition shedders are left
    # out with a note (--skip-inapplicable) and shedding replays its operator shedders
    # allocation replays the job graphs (tiny-jobs) only; the stream families only the stream
    conf = {"datasets": ["tiny-zipf", "tiny-jobs"], "grouping_strategies": ["kg", "pkg", "osg"],
            "grouping_workers": [3, 5], "grouping_sources": [2], "seeds": 1,
            "shedding_strategies": ["las", "fk", "shedpart"], "allocation_strategies": ["td", "opt"]}
    when = datetime(2026, 11, 20, 2, 0, tzinfo=timezone.utc).isoformat()
    run_conf = {**conf}
    # one task at a time: this run shares make slow's two cores with a neighbour that may be
    # measuring (the live DAG's calibrations); make run's two at a time is test_airflow_paths' rerun
    result, log = af.run_dag(env | {"SKEWBENCH_TEST_LOGICAL_DATE": when}, "skewbench_nightly", run_conf)
    assert isinstance(result, dict) and result["state"] == "success", log[-8000:]
    client = _mlflow(env)
    exp = client.get_experiment_by_name("skewbench-grouping")
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1
    p = parents[0]
    assert p.data.tags["skewbench.dag_id"] == "skewbench_nightly"
    assert p.data.tags["skewbench.run_id"] == result["run_id"]
    assert p.data.tags["skewbench.git_commit"]
    # kg, pkg: 2 workers x 1 source; osg: 2 workers (one scheduler) = 6 grid cells
    assert len(children) == 6
    assert all(c.data.tags["mlflow.parentRunId"] == p.info.run_id for c in children)
    c = children[0]
    for m in ("imbalance", "latency_mean", "latency_p99", "speedup_vs_rr", "replication"):
        assert m in c.data.metrics, m
    for prm in ("strategy", "workers", "sources", "dataset", "dataset_fingerprint"):
        assert prm in c.data.params, prm
    # the default time model: steady arrivals at 100% of the workers' capacity
    assert c.data.params["time_mode"] == "provisioning" and float(c.data.params["provisioning"]) == 100.0
    hist = client.get_metric_history(c.info.run_id, "window.imbalance_cum")
    assert len(hist) >= 10 and sorted(h.step for h in hist) == list(range(len(hist)))
    # the replay task's "MLflow run" extra link, as the UI gets it, opens the experiment's runs
    # table in the model-training view, filtered to this run's runs of the replay's dataset
    links = af.extra_links(env, "skewbench_nightly", "grouping.replay", result["run_id"])
    assert set(links) == {"0"}, links
    url = urllib.parse.urlsplit(links["0"]["MLflow run"])
    assert (url.scheme, url.netloc, url.path) == ("http", "127.0.0.1:5000", "/")
    route, _, query = url.fragment.partition("?")
    assert route == f"/experiments/{exp.experiment_id}/runs"
    query = dict(urllib.parse.parse_qsl(query))
    assert query["workflowType"] == "machine_learning"
    shown = client.search_runs([exp.experiment_id], query["searchFilter"])
    assert sorted(r.info.run_id for r in shown) == sorted(c.info.run_id for c in children)
    assert {r.data.tags["skewbench.dataset"] for r in shown} == {"tiny-zipf"}
    arts = {a.path for a in client.list_artifacts(p.info.run_id)}
    assert "report.html" in arts and {"results", "plots"} <= arts
    run_dir = Path(env["SKEWBENCH_STATE"]) / "runs"
    summaries = sorted(run_dir.rglob("summary.parquet"))
    assert len(summaries) == 3  # one per family
    alloc = client.get_experiment_by_name("skewbench-allocation")
    aruns = client.search_runs([alloc.experiment_id], max_results=1000)
    achildren = [r for r in aruns if "mlflow.parentRunId" in r.data.tags]
    assert len(aruns) - len(achildren) == 1 and sorted(c.data.params["strategy"] for c in achildren) == ["opt", "td"]
    assert all(c.data.params["dataset"] == "tiny-jobs" for c in achildren)
    assert len(client.get_metric_history(achildren[0].info.run_id, "window.gain")) == 7  # E3's seven instances
    shed = client.get_experiment_by_name("skewbench-shedding")
    sruns = client.search_runs([shed.experiment_id], max_results=1000)
    sparent = [r for r in sruns if "mlflow.parentRunId" not in r.data.tags]
    schildren = [r for r in sruns if "mlflow.parentRunId" in r.data.tags]
    assert len(sparent) == 1 and sorted(c.data.params["strategy"] for c in schildren) == ["fk", "las"]
    assert client.get_metric_history(schildren[0].info.run_id, "window.dropped_ratio")
    for c in schildren:  # the offline optimum beside each operator shedder's drops (issue 25)
        assert c.data.params["opt_status"] in ("optimal", "node_limit", "time_limit"), c.data.params
        assert c.data.metrics["drop_optimality"] >= 0 and "opt_dropped" in c.data.metrics, c.data.metrics
    assert len(achildren) == 2 and len(schildren) == 2
    # an Airflow rerun of this same DAG run (same run id, every task again, spark-submit
    # included) is test_airflow_paths.py's test_an_airflow_rerun_of_the_same_dag_run_changes_nothing
    # (slow: a second full DAG run); log_run's idempotence alone is test_tracking.py's


@pytest.mark.slow  # about 40 s (two retries of spark-submit): make slow, with the scheduler fault tests
def test_a_failed_replay_marks_the_run_failed_and_logs_nothing(env):
    """The real DAG's failure path: the Spark job cannot start (an unknown master), the replay
    task fails after its retries, mark_failed marks the family's MLflow parent run FAILED and
    log_to_mlflow never runs, so nothing of the run counts as a result."""
    nowhere = "nosuch://nowhere"
    bad = env | {"AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": nowhere}),
                 "SKEWBENCH_RETRY_DELAY_SECONDS": "1",  # the two retries after 1 s and 2 s, not 30 s and 60 s
                 "SKEWBENCH_SPARK_MASTER": nowhere}
    conf = {"datasets": ["tiny-zipf"], "families": ["grouping"], "grouping_strategies": ["kg"],
            "grouping_workers": [3], "grouping_sources": [2], "seeds": 1}
    result, log = af.run_dag(bad, "skewbench_nightly", conf)
    assert isinstance(result, dict) and result["state"] == "failed", log[-6000:]
    t = result["tasks"]
    assert log.count(f"Spark-Submit cmd: spark-submit --master {nowhere}") == 3  # the first try and 2 retries
    assert log.count("new_state=up_for_retry") == 2
    assert t["grouping.replay[0]"] == "failed" and t["grouping.mark_failed[-1]"] == "success", t
    assert t["grouping.log_to_mlflow[-1]"] == "upstream_failed", t
    assert not [k for k, v in t.items() if k.startswith("grouping.validate") and v not in ("upstream_failed", "None")], t
    client = _mlflow(env)
    exp = client.get_experiment_by_name("skewbench-grouping")
    runs = client.search_runs([exp.experiment_id], f"tags.`skewbench.run_id` = '{result['run_id']}'", max_results=100)
    assert len(runs) == 1, [r.data.tags for r in runs]
    parent = runs[0]
    assert parent.info.status == "FAILED" and "mlflow.parentRunId" not in parent.data.tags
    assert parent.data.tags["skewbench.failure"] == "a replay or its validation failed"
    assert not parent.data.metrics
    children = client.search_runs([exp.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert children == []
