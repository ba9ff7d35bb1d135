"""The live DAG (dags/skewbench_live.py) under a real Airflow (``dag.test()`` in a subprocess on
SQLite), real Spark (local), real Great Expectations, real MLflow on SQLite and a real headless
Chromium: it parses with its tags, docs, schedule and Params form; bad Params are refused before
any task runs; and one run on the Spark engine (no Flink environment needed) ends with a parent
run and a nested run per (dataset, engine, strategy, routing) in MLflow, linked both ways with the
simulated nightly cells of the same dataset, a ``live.html`` whose every image loads, the site's
live page, and the nightly's overview linking to it; run again (the same DAG run), it changes
nothing but the measured numbers.

The simulated night is logged as the nightly logs it (its run key, run name and tags, through
:func:`skewbench.tracking.log_run`) from a real replay of the dataset the live DAG materialises.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skewbench import nightly, tracking
from skewbench.present import livepage
from skewbench.live import steps
from skewbench.validation.results import validate_results  # GE before anything imports Airflow
from tests.integration import airflow_env as af

pytestmark = pytest.mark.airflow

CHROMIUM = "/usr/bin/chromium"
DAG = steps.DAG_ID
CATALOG = """
version: 1
datasets:
  - name: live-tiny-{alpha}
    sets: [live]
    families: [grouping]
    generator: zipf
    matrix: {alpha: [1.4, 2.0]}
    keys: 400
    tuples: 3000
    seed: 1
"""
DATASET = "live-tiny-1.4"
STRATEGIES = ["kg", "pkg", "spark-sql"]
#: every Param given: dag.test() in one process carries a conf's values over to the next run.
#: Spark alone: a batch stage of the first 120 tuples per phase, twice, 40 ms a tuple: the
#: calibration refuses a run whose per-record overhead (0.1-0.25 ms on Spark, a sleeping task's
#: wake-up) moved by over 25% of a tenth of the cost between before and after, which at a few ms a
#: busy machine (this file's pytest-xdist neighbour) breaks often (tests/integration/test_live_spark.py)
CONF = {"datasets": [DATASET], "engines": ["spark"], "flink_address": "", "taskmanagers": 2, "native": True,
        "strategies": STRATEGIES, "routing": "replay", "shedders": [], "workers": 4, "duration": 30.0, "load": 62.5, "rate": None,
        "tuples": None, "cost": "40", "work": "sleep", "job": "agg", "window": 1000.0, "merge_parallelism": 0,
        "state_backend": "hashmap", "checkpoint_interval": 0.0, "repeat": 2, "spark_tuples": 120,
        "capacity_search": True, "capacity_strategies": ["kg", "pkg"], "capacity_duration": 8.0, "capacity_steps": 5}
#: what a run the calibration refused says (the machine was busy); Airflow retries run_live once
REFUSED = "ImplausibleCalibration: implausible calibration"
WHEN = "2026-12-06T03:00:00+00:00"
NIGHT = "2026-12-06T02:00:00+00:00"

#: the DAG's structure, Params and schedule as Airflow parsed them
PROBE = r'''
import json, sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(sys.argv[1])
dag = bag.get_dag(sys.argv[2])
out = {"errors": {k: str(v) for k, v in bag.import_errors.items()}}
if dag is not None:
    out.update({"tags": sorted(dag.tags), "doc_md": dag.doc_md or "", "max_active_runs": dag.max_active_runs,
                "schedule": getattr(dag.timetable, "_expression", None), "summary": dag.timetable.summary,
                "params": {k: dag.params.get_param(k).schema.get("section") for k in dag.params.keys()},
                "defaults": {k: dag.params.get_param(k).value for k in dag.params.keys()},
                "tasks": {t.task_id: {"retries": t.retries, "downstream": sorted(t.downstream_task_ids),
                                      "trigger_rule": getattr(t.trigger_rule, "value", str(t.trigger_rule))} for t in dag.tasks}})
print("PROBE" + json.dumps(out, default=str))
'''

#: dag.test() once per (conf, logical date) with run_after = the logical date: the same date gives
#: the same run id, and Airflow runs every task of that DAG run again
RUN = r'''
import json, sys
from datetime import datetime
import great_expectations  # before Airflow
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(sys.argv[1])
dag = bag.get_dag(sys.argv[2])
for conf, when in json.loads(sys.argv[3]):
    when = datetime.fromisoformat(when)
    try:
        run = dag.test(run_conf=conf, logical_date=when, run_after=when)
        print("RUNSTATE " + json.dumps({"state": str(run.state), "run_id": run.run_id,
                                        "tasks": {f"{ti.task_id}[{ti.map_index}]": [str(ti.state), ti.try_number]
                                                  for ti in run.get_task_instances()}}), flush=True)
    except Exception as e:
        print("RUNERROR " + type(e).__name__ + ": " + str(e).splitlines()[0], flush=True)
'''


def _run(env: dict[str, str], runs: list[tuple[dict, str]]) -> tuple[list[dict | str], str]:
    p = subprocess.run([sys.executable, "-c", RUN, str(af.REPO / "dags"), DAG, json.dumps(runs)], env=env,
                       capture_output=True, text=True, timeout=1500)
    log = p.stdout + p.stderr
    out: list[dict | str] = []
    for ln in p.stdout.splitlines():
        if ln.startswith("RUNSTATE "):
            out.append(json.loads(ln[9:]))
        elif ln.startswith("RUNERROR "):
            out.append(ln[9:])
    assert len(out) == len(runs), log[-8000:]
    return out, log


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("live-dag")
    e = af.make_env(root, "local[4]")
    (root / "catalog.yaml").write_text(CATALOG)
    e["SKEWBENCH_RETRY_DELAY_SECONDS"] = "1"
    e["SKEWBENCH_FLINK_PYTHON"] = str(root / "no-flink" / "bin" / "python")  # no Flink environment here
    af.migrate(e)
    return e


@pytest.fixture(scope="module")
def probed(env):
    p = subprocess.run([sys.executable, "-c", PROBE, str(af.REPO / "dags"), DAG], env=env, capture_output=True,
                       text=True, timeout=600)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("PROBE")), None)
    assert line is not None, p.stdout[-3000:] + p.stderr[-5000:]
    return json.loads(line[5:])


def test_the_live_dag_parses_with_tags_docs_schedule_and_a_params_form_in_sections(probed):
    assert probed["errors"] == {}
    assert {"skewbench", "live"} <= set(probed["tags"]) and probed["max_active_runs"] == 1
    doc = probed["doc_md"]
    assert "simulated vs measured" in doc and "skewbench.live_run" in doc
    assert "keyed windowed aggregation" in doc and "`spark_tuples`" in doc and "`make live`" in doc
    assert probed["schedule"] == "0 3 * * 0"  # weekly, Sunday 03:00 UTC (a manual trigger takes the Params)
    assert probed["params"] == {k: v["section"] for k, v in steps.params_schema().items()}
    assert set(CONF) == set(probed["params"])  # the conf gives every Param
    assert {probed["params"][k] for k in ("duration", "load", "rate", "tuples")} == {"Stream and work"}
    assert {probed["params"][k] for k in ("job", "window", "state_backend")} == {"Flink job"}
    assert (probed["params"]["repeat"], probed["params"]["spark_tuples"]) == ("Measurement", "Measurement")
    # the weekly run's defaults: both engines, the live set, 30 s at 62.5% of the capacity, three runs
    d = probed["defaults"]
    assert d["engines"] == ["flink", "spark"] and d["datasets"] == []
    assert (d["duration"], d["load"], d["rate"], d["tuples"], d["repeat"], d["job"]) == (30.0, 62.5, None, None, 3,
                                                                                        "agg")
    t = probed["tasks"]
    assert t["check_params"]["downstream"] == ["dataset_names", "log_to_mlflow", "mark_failed", "open_tracking",
                                               "prepare_dataset", "report", "run_live"]
    assert t["open_tracking"]["downstream"] == ["run_live"] and t["prepare_dataset"]["downstream"] == [
        "mark_failed", "run_live"]
    assert t["run_live"]["retries"] == 1 and t["run_live"]["downstream"] == ["log_to_mlflow", "mark_failed"]
    assert t["log_to_mlflow"]["downstream"] == ["mark_failed", "report"]
    assert t["report"]["downstream"] == ["mark_failed", "site"]
    assert t["mark_failed"]["trigger_rule"] == "one_failed" and t["site"]["trigger_rule"] == "none_failed"
    assert all(v["retries"] >= 1 for v in t.values()), t


def test_dag_side_module_imports_nothing_heavy():
    code = ("import sys; import skewbench.live.steps as s; s.params_schema(); "
            "print(sorted(m for m in ('numpy', 'numba', 'pyspark', 'mlflow', 'great_expectations', 'pandas', "
            "'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


#: refused at trigger by the Params' own schema (a select, a number field, a number or empty)
BAD_AT_TRIGGER = [({"work": "gpu"}, "work"), ({"workers": "eight"}, "workers"), ({"job": "join"}, "job"),
                  ({"rate": "fast"}, "rate")]
#: accepted by the form, refused by check_params alone, one sentence per bad value
BAD_IN_CHECK = [
    ({"workers": 0}, "parameter 'workers': 0 is out of range; allowed: 1 to 64."),
    ({"rate": -1, "tuples": 10**9}, "parameter 'rate': -1 is out of range; allowed: 0 to 200,000. "
                                    "parameter 'tuples': 1000000000 is out of range; allowed: 1 to 5,000,000."),
    ({"duration": 0, "window": 1, "repeat": 0}, "parameter 'duration': 0 is out of range; allowed: 1 to 600. "
                                                "parameter 'window': 1 is out of range; allowed: above 1 and at most "
                                                "3,600,000. parameter 'repeat': 0 is out of range; allowed: 1 to 20."),
    ({"cost": "much"}, "parameter 'cost' is milliseconds per tuple or 'dataset', got 'much'."),
    ({"engines": ["storm"]}, "parameter 'engines': 'storm' is not one of flink, spark."),
    ({"strategies": ["nope"], "shedders": ["shedpart"]}, "parameter 'strategies': 'nope' is not one of kg,"),
    ({"datasets": ["no-such"]}, "unknown dataset 'no-such'"),
    ({"spark_tuples": 2_000_000, "cost": "5"}, "parameter 'spark_tuples': 2,000,000 tuples of 5 ms on 4 workers "
                                               "take at least 2500 s per strategy on Spark; at most 600: fewer "
                                               "spark_tuples or a lower cost."),
    ({"engines": ["flink", "spark"], "rate": 0}, "parameter 'rate': 0 (every tuple due at once) has no steady state "
                                                 "to measure on Flink; leave it empty (from load) or give tuples per "
                                                 "second."),
    ({"engines": ["flink", "spark"]}, "the Flink environment's interpreter"),
]


@pytest.mark.slow  # about 45 s (an Airflow start and fourteen refused runs): make slow
def test_invalid_params_are_refused_before_any_task(env):
    confs = [c for c, _ in BAD_AT_TRIGGER] + [c for c, _ in BAD_IN_CHECK]
    results, log = _run(env, [({**CONF, **c}, WHEN) for c in confs])
    for (conf, needle), result in zip(BAD_AT_TRIGGER, results):
        assert isinstance(result, str) and "ParamValidationError" in result and needle in result, (conf, result)
    for (conf, message), result in zip(BAD_IN_CHECK, results[len(BAD_AT_TRIGGER):]):
        assert isinstance(result, dict) and result["state"] == "failed", (conf, log[-3000:])
        failed = [k for k, (state, _) in result["tasks"].items() if state == "failed"]
        assert failed == ["check_params[-1]"], (conf, result["tasks"])
        assert result["tasks"]["check_params[-1]"][1] == 1  # failed at once: no retry
        assert result["tasks"]["mark_failed[-1]"][0] == "skipped", result["tasks"]
        assert all(state in ("None", "upstream_failed") for k, (state, _) in result["tasks"].items()
                   if k.startswith(("prepare_dataset", "run_live", "open_tracking"))), result["tasks"]
        assert message in log, (conf, log[-3000:])
    assert "Flink environment's interpreter" in log and "install it with `make flink-env`" in log
    assert not list((Path(env["SKEWBENCH_STATE"]) / "runs").rglob("live.json"))
    assert not (Path(env["SKEWBENCH_STATE"]) / "datasets").exists()  # nothing was generated


# --------------------------------------------------------------------------------------------
# one live run end to end, and the same DAG run again


def _simulated_night(env: dict[str, str], root: Path) -> Path:
    """The live dataset materialised where the DAG finds it, replayed and logged as a nightly
    night (grouping, 2 and 4 workers): the simulated cells the live runs link to."""
    from skewbench.datasets.catalog import load_catalog
    from skewbench.grouping.engine import ReplayConfig, grid, replay_to_dir
    from skewbench.materialize import materialize

    entry = load_catalog(root / "catalog.yaml").select([DATASET])[0]
    status = materialize(entry, Path(env["SKEWBENCH_STATE"]) / "datasets", engine="local")
    out = root / "night" / DATASET / "grouping"
    replay_to_dir(status["path"], grid(STRATEGIES, [2, 4], [2], [0]), out, ReplayConfig(window=1000))
    assert validate_results(out).success  # as the nightly's validate step: only validated results are logged
    run_id = f"scheduled__{NIGHT}"
    tracking.log_run([out], tracking_uri=env["SKEWBENCH_TRACKING_URI"],
                     run_key=nightly.run_key("skewbench_nightly", run_id, "grouping"),
                     run_name=f"grouping {NIGHT[:10]} {run_id}", tags=night_tags(run_id, NIGHT))
    return out


def night_tags(run_id: str, night: str) -> dict[str, str]:
    """The tags the nightly gives its runs (its DAG id, run id and logical date)."""
    return {"skewbench.dag_id": "skewbench_nightly", "skewbench.run_id": run_id, "skewbench.logical_date": night}


def _mlflow_state(env: dict[str, str], run_id: str) -> dict:
    from mlflow import MlflowClient
    from mlflow.entities import ViewType

    client = MlflowClient(env["SKEWBENCH_TRACKING_URI"])
    exp = client.get_experiment_by_name("skewbench-live")
    runs = client.search_runs([exp.experiment_id], run_view_type=ViewType.ALL, max_results=1000)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    return {"experiment_id": exp.experiment_id, "parents": parents, "children": children,
            "history": {c.info.run_id: len(client.get_metric_history(c.info.run_id, "throughput_measured"))
                        for c in children}}


@pytest.fixture(scope="module")
def live_runs(env):
    root = Path(env["SKEWBENCH_CATALOG"]).parent
    sim_dir = _simulated_night(env, root)
    (first,), log1 = _run(env, [(CONF, WHEN)])
    assert isinstance(first, dict) and first["state"] == "success", log1[-8000:]
    state1 = _mlflow_state(env, first["run_id"])
    live1 = json.loads((_out_root(env, first["run_id"]) / DATASET / "live.json").read_text())
    (again,), log2 = _run(env, [(CONF, WHEN)])
    assert isinstance(again, dict) and again["state"] == "success", log2[-8000:]
    state2 = _mlflow_state(env, again["run_id"])
    return {"first": first, "again": again, "state1": state1, "state2": state2, "log": log1 + log2, "log1": log1,
            "log2": log2, "live1": live1,
            "sim_dir": sim_dir, "out_root": _out_root(env, first["run_id"])}


def _attempt(run: dict, log: str) -> int:
    """run_live's attempt that succeeded: the first, or the second when the calibration refused
    the first (the machine was busy: what Airflow's one retry is for), never for another reason."""
    attempt = run["tasks"]["run_live[0]"][1]
    assert attempt == 1 or (attempt == 2 and REFUSED in log), (attempt, log[-5000:])
    return attempt


def _out_root(env: dict[str, str], run_id: str) -> Path:
    import re

    return Path(env["SKEWBENCH_STATE"]) / "runs" / WHEN[:10] / ("live-" + re.sub(r"[^A-Za-z0-9._-]+", "_", run_id))


def _run_id_of(url: str) -> str:
    return url.rstrip("/").rsplit("/runs/", 1)[1].split("/")[0]


@pytest.mark.slow  # about 80 s (two full DAG runs: Spark, GE, MLflow, the site): make slow
def test_a_live_run_logs_a_parent_and_a_nested_run_per_engine_strategy_and_routing(live_runs):
    first, s = live_runs["first"], live_runs["state1"]
    assert {k: v[0] for k, v in first["tasks"].items()} == {
        "check_params[-1]": "success", "dataset_names[-1]": "success", "prepare_dataset[0]": "success",
        "open_tracking[-1]": "success", "run_live[0]": "success", "log_to_mlflow[-1]": "success",
        "report[-1]": "success", "mark_failed[-1]": "skipped", "site[-1]": "success"}
    (parent,) = s["parents"]
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["skewbench.key"] == f"{DAG}/{first['run_id']}"
    assert parent.data.tags[livepage.PAGE_TAG] == "live.html" and parent.data.tags["skewbench.datasets"] == DATASET
    assert parent.data.params["engines"] == '["spark"]' and parent.data.params["workers"] == "4"
    # one nested run per (dataset, engine, strategy, routing): each strategy routed, except spark-sql,
    # which models Spark's own partitioner and runs on it (natively) instead
    got = sorted((c.data.tags["skewbench.engine"], c.data.tags["skewbench.strategy"], c.data.tags["skewbench.routing"])
                 for c in s["children"])
    assert got == [("spark", "kg", "routed"), ("spark", "pkg", "routed"), ("spark", "spark-sql", "native")]
    live = live_runs["live1"]
    fp = live["stream"]["fingerprint"]
    attempt = _attempt(first, live_runs["log1"])
    assert live["attempt"] == attempt
    for c in s["children"]:
        assert c.info.status == "FINISHED" and c.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert c.data.tags["skewbench.dataset_fingerprint"] == fp and c.data.params["workers"] == "4"
        row = next(r for r in live["rows"] if (r["strategy"], r["routing"]) == (c.data.params["strategy"],
                                                                               c.data.params["routing"]))
        # a batch stage of spark_tuples, twice: the medians with their range, measured and predicted
        assert (row["tuples_executed"], row["repeat"], row["job"]) == (120, 2, "batch stage")
        for m in ("throughput_measured", "throughput_measured_min", "throughput_measured_max", "throughput_predicted",
                  "throughput_ratio", "makespan_measured_s", "makespan_measured_s_min", "makespan_measured_s_max",
                  "makespan_predicted_s", "makespan_ratio"):
            assert c.data.metrics[m] == pytest.approx(row[m], rel=1e-12), m
        assert json.loads(c.data.tags["skewbench.subtask_records"]) == row["decided_records"]
        assert c.data.tags["skewbench.attempt"] == steps.attempt_note(attempt)
    taus = {k for k in parent.data.metrics if k.startswith("kendall_tau/")}
    assert taus == {f"kendall_tau/{DATASET}/spark/throughput", f"kendall_tau/{DATASET}/spark/makespan_s"}


@pytest.mark.slow
def test_live_and_simulated_runs_link_both_ways(live_runs, env):
    from mlflow import MlflowClient

    client = MlflowClient(env["SKEWBENCH_TRACKING_URI"])
    s = live_runs["state1"]
    for c in s["children"]:
        url = c.data.tags[livepage.SIMULATED_TAG]
        assert url.startswith(env["SKEWBENCH_MLFLOW_UI"] + "/#/experiments/")
        sim = client.get_run(_run_id_of(url))
        # the simulated cell of the same dataset and strategy, at the live run's worker count
        assert sim.data.tags["skewbench.strategy"] == c.data.tags["skewbench.strategy"]
        assert sim.data.tags["skewbench.dataset_fingerprint"] == c.data.tags["skewbench.dataset_fingerprint"]
        assert sim.data.params["workers"] == "4" and sim.data.tags["skewbench.dag_id"] == "skewbench_nightly"
        if c.data.tags["skewbench.routing"] == "routed":
            back = sim.data.tags[livepage.LIVE_TAG]
            assert back == f"{env['SKEWBENCH_MLFLOW_UI']}/#/experiments/{s['experiment_id']}/runs/{c.info.run_id}"
            assert sim.data.tags[f"{livepage.LIVE_TAG}.spark"] == back
    # the cells at 2 workers are not this live run's: no link back
    exp = client.get_experiment_by_name("skewbench-grouping")
    for r in client.search_runs([exp.experiment_id], "params.workers = '2'"):
        assert livepage.LIVE_TAG not in r.data.tags


def _browse(path: Path) -> dict:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no browser: {CHROMIUM} is missing (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (make install installs it)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            tab = browser.new_page(viewport={"width": 1300, "height": 1000})
            failed: list[str] = []
            tab.on("requestfailed", lambda r: failed.append(r.url))
            tab.goto(path.as_uri(), wait_until="load")
            seen = tab.evaluate("""() => ({
                images: [...document.images].map(i => ({alt: i.alt, ok: i.complete && i.naturalWidth > 0})),
                links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
                ids: [...document.querySelectorAll('[id]')].map(e => e.id),
                rows: [...document.querySelectorAll('tbody tr')].map(r => r.innerText),
            })""")
        finally:
            browser.close()
    seen["failed"] = failed
    return seen


@pytest.mark.slow
def test_the_live_page_renders_in_chromium_with_every_image(live_runs, env):
    page_path = live_runs["out_root"] / "live.html"
    assert page_path.stat().st_size < 400_000  # images, not megabytes of inline data
    seen = _browse(page_path)
    assert seen["failed"] == [] and all(i["ok"] for i in seen["images"]), seen["images"]
    # Spark: throughput and the stage's makespan (a batch stage has no per-tuple latency)
    assert sorted(i["alt"] for i in seen["images"]) == [f"{DATASET} spark makespan", f"{DATASET} spark throughput"]
    assert len(seen["rows"]) == 3
    for href in seen["links"]:
        assert href.startswith("#") and href[1:] in seen["ids"] or href.startswith(env["SKEWBENCH_MLFLOW_UI"]), href
    # the same page is the parent run's artifact
    (parent,) = live_runs["state1"]["parents"]
    art = Path(parent.info.artifact_uri.removeprefix("file://")) / "live.html"
    assert art.read_bytes() == page_path.read_bytes()
    assert (Path(parent.info.artifact_uri.removeprefix("file://")) / "live" / DATASET / "live.json").is_file()


@pytest.mark.slow
def test_the_site_lists_the_live_run_with_its_figures(live_runs, env):
    site_dir = Path(env["SKEWBENCH_STATE"]) / "site"
    index = (site_dir / "index.html").read_text()
    assert 'href="live.html"' in index
    seen = _browse(site_dir / "live.html")
    assert seen["failed"] == [] and all(i["ok"] for i in seen["images"]), seen["images"]
    assert sorted(i["alt"] for i in seen["images"]) == [f"{DATASET} spark makespan", f"{DATASET} spark throughput"]
    assert any(live_runs["first"]["run_id"] in r for r in seen["rows"]), seen["rows"]


@pytest.mark.slow
def test_the_nightly_overview_links_to_the_live_page(live_runs, env, tmp_path, monkeypatch):
    for k in ("SKEWBENCH_TRACKING_URI", "SKEWBENCH_MLFLOW_UI", "SKEWBENCH_STATE", "SKEWBENCH_CATALOG"):
        monkeypatch.setenv(k, env[k])
    plan = [{"family": "grouping", "dataset": DATASET, "out": str(live_runs["sim_dir"])}]
    path, _ = nightly.write_overview(plan, [], str(tmp_path))
    seen = _browse(path)
    (parent,) = live_runs["state1"]["parents"]
    want = tracking.overview_url(env["SKEWBENCH_MLFLOW_UI"], live_runs["state1"]["experiment_id"],
                                 parent.info.run_id, "live.html")
    assert want in seen["links"] and "simulated-vs-measured" in seen["ids"]
    assert "#simulated-vs-measured" in seen["links"]


@pytest.mark.slow
def test_the_same_dag_run_again_updates_the_same_runs(live_runs):
    first, again = live_runs["first"], live_runs["again"]
    assert again["run_id"] == first["run_id"]
    # Airflow ran it again: try 1 of the new run (2 when the calibration refused the first)
    assert again["tasks"]["run_live[0]"][0] == "success" and _attempt(again, live_runs["log2"]) >= 1
    s1, s2 = live_runs["state1"], live_runs["state2"]
    assert [p.info.run_id for p in s2["parents"]] == [p.info.run_id for p in s1["parents"]]
    assert s2["parents"][0].info.status == "FINISHED"
    by_key = {c.data.tags["skewbench.key"]: c for c in s1["children"]}
    assert len(by_key) == len(s1["children"]) == len(s2["children"])  # nothing duplicated
    for c in s2["children"]:
        old = by_key[c.data.tags["skewbench.key"]]
        assert c.info.run_id == old.info.run_id and c.info.status == "FINISHED"
        assert c.data.params == old.data.params  # what was executed: unchanged
        assert s2["history"][c.info.run_id] == 2  # a measurement per run, the latest shown
