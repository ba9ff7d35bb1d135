"""MLflow logging against a real SQLite tracking store: experiment per family, one parent run
per run key with one child per (dataset, cell), step metrics, artifacts, and idempotent
retries."""

from __future__ import annotations

import ast
import json
import math
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from skewbench import tracking
from skewbench.present import reports
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.errors import SkewbenchError
from skewbench.grouping.engine import ReplayConfig, grid, replay_to_dir
from skewbench.results import load_results, read_results, schema
TIMING_COLUMNS = schema("grouping").timing_columns
PARAM_COLUMNS = schema("grouping").param_columns

KEY = "skewbench_nightly/scheduled__2026-01-02T00:00:00+00:00/grouping"
TAGS = {"airflow.dag_id": "skewbench_nightly", "airflow.run_id": "scheduled__2026-01-02T00:00:00+00:00",
        "airflow.logical_date": "2026-01-02T00:00:00+00:00", "git.commit": "0123456789abcdef"}
CELLS = 16  # 4 strategies x 2 worker counts x 2 seeds
WINDOWS = 10


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("tracking")
    out = []
    for name, alpha in (("z12", 1.2), ("z08", 0.8)):
        generate(StreamSpec.zipf(alpha, 500, 20000, 1, cost={"model": "levels", "levels": 4, "low": 1, "high": 4}),
                 root / f"ds-{name}", name=name)
        replay_to_dir(root / f"ds-{name}", grid(["kg", "pkg", "wc", "osg"], [5, 10], [2], [0, 1]),
                      root / f"res-{name}", ReplayConfig(window=2000, scaling=(1, 4, 16)))
        validated(root / f"res-{name}")  # as the pipeline does: only validated results are logged
        out.append(root / f"res-{name}")
    return out


def validated(res: Path) -> Path:
    """Validate results (the real Great Expectations suite), which records the pass log_run requires."""
    from skewbench.validation.results import validate_results

    report = validate_results(res)
    assert report.success, report.message()
    return res


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("mlflow")
    return f"sqlite:///{d}/mlflow.db", d


@pytest.fixture(scope="module")
def logged(results, store, tmp_path_factory):
    """As the pipeline does it: open the parent run, render the report (reports, not tracking,
    draws it), then log the results with the report and its plots."""
    uri, _ = store
    _, pid = tracking.open_parent(uri, "grouping", KEY, "nightly 2026-01-02", TAGS)
    work = tmp_path_factory.mktemp("report")
    names = reports.results_names([m for _, m, _, _ in load_results(results)])
    report = reports.render_report(results, work / "report.html", "skewbench nightly", {**TAGS, "mlflow run": pid},
                                   plots_dir=work / "plots")
    return tracking.log_run(results, tracking_uri=uri, run_key=KEY, run_name="nightly 2026-01-02", tags=TAGS,
                            names=names, report=report, plots_dir=work / "plots")


@pytest.fixture(scope="module")
def client(store, logged):
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=store[0])


def _all_runs(client, experiment_id):
    from mlflow.entities import ViewType

    return client.search_runs([experiment_id], run_view_type=ViewType.ALL, max_results=5000)


def test_experiment_and_parent_run(results, store, logged, client):
    _, d = store
    exp = client.get_experiment_by_name("skewbench-grouping")
    assert exp is not None and exp.experiment_id == logged["experiment_id"]
    assert exp.artifact_location == (d / "artifacts" / "skewbench-grouping").as_uri()
    # MLflow's UI then opens it on the runs table and metric charts, not the GenAI views
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    parents = client.search_runs([exp.experiment_id], filter_string=f"tags.`skewbench.key` = '{KEY}'")
    assert [r.info.run_id for r in parents] == [logged["parent_run_id"]]
    parent = parents[0]
    assert parent.info.status == "FINISHED" and parent.info.run_name == "nightly 2026-01-02"
    tags = parent.data.tags
    for k, v in TAGS.items():
        assert tags[k] == v
    fps = [read_results(r)[0]["dataset"]["fingerprint"] for r in results]
    assert tags["skewbench.dataset_fingerprints"] == ",".join(fps)
    assert tags["skewbench.family"] == "grouping" and "mlflow.parentRunId" not in tags
    assert tracking.find_run(store[0], "grouping", KEY) == logged["parent_run_id"]
    assert tracking.find_run(store[0], "grouping", KEY + "-other") is None
    assert tracking.find_run(store[0], "shedding", KEY) is None
    assert tracking.find_parent(store[0], "grouping", KEY) == (exp.experiment_id, logged["parent_run_id"])


def test_the_library_does_not_import_airflow():
    for module in (tracking, reports):
        tree = ast.parse(Path(module.__file__).read_text())
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [n for n in names if n.split(".")[0] == "airflow"], module.__name__


def test_one_child_per_dataset_and_cell(results, logged, client):
    children = client.search_runs([logged["experiment_id"]],
                                  filter_string=f"tags.`mlflow.parentRunId` = '{logged['parent_run_id']}'",
                                  max_results=1000)
    assert len(children) == 2 * CELLS == len(logged["children"])
    by_key = {r.data.tags["skewbench.key"]: r for r in children}
    assert {k: r.info.run_id for k, r in by_key.items()} == logged["children"]
    for res in results:
        manifest, summary, _ = read_results(res)
        fp = manifest["dataset"]["fingerprint"]
        numeric = [f.name for f in summary.schema if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)]
        for row in summary.to_pylist():
            run = by_key[f"{KEY}/{fp[:12]}/{row['cell_id']}"]
            assert run.info.status == "FINISHED"
            p, m = run.data.params, run.data.metrics
            assert (p["strategy"], p["workers"], p["sources"], p["seed"]) == (
                row["strategy"], str(row["workers"]), str(row["sources"]), str(row["seed"]))
            assert p["dataset"] == manifest["dataset"]["name"] and p["dataset_fingerprint"] == fp
            assert p["time_mode"] == "dataset" and p["c.window"] == "2000"
            for k, v in json.loads(row["params"]).items():
                assert p[f"p.{k}"] == (v if isinstance(v, str) else json.dumps(v))
            # every metric of the run, and nothing else: each finite numeric summary column (timings
            # under time.), each finite statistic under s.; the cell's coordinates are params
            want = {}
            for c in numeric:
                v = row[c]
                if c not in PARAM_COLUMNS and v is not None and math.isfinite(v):
                    want[f"time.{c}" if c in TIMING_COLUMNS else c] = v
            for k, v in json.loads(row["stats"]).items():  # NaN (e.g. OSG's est_error before an epoch): skipped
                if math.isfinite(v):
                    want[f"s.{k}"] = v
            # window.* and curve.*: below
            assert sorted(k for k in m if not k.startswith(("window.", "curve."))) == sorted(want)
            assert all(m[k] == pytest.approx(v, rel=1e-12, abs=0) for k, v in want.items()), run.info.run_name
            assert {"imbalance", "imbalance_rel", "latency_mean", "latency_p99", "speedup_vs_rr", "replication",
                    "pairs", "throughput", "time.wall_seconds"} <= set(m)
            assert "worker_tuples" not in m and "workers" not in m
            assert run.data.tags["skewbench.cell_id"] == row["cell_id"]
            assert all(run.data.tags[k] == v for k, v in TAGS.items())


def test_series_are_step_metrics(results, logged, client):
    manifest, summary, series = read_results(results[0])
    fp = manifest["dataset"]["fingerprint"]
    rows = series.to_pylist()
    for cell in summary.to_pylist()[::3]:
        rid = logged["children"][f"{KEY}/{fp[:12]}/{cell['cell_id']}"]
        mine = sorted((r for r in rows if r["cell_id"] == cell["cell_id"]), key=lambda r: r["window"])
        assert len(mine) == WINDOWS
        hist = sorted(client.get_metric_history(rid, "window.imbalance_cum"), key=lambda m: m.step)
        assert len(hist) == WINDOWS
        assert [h.step for h in hist] == list(range(WINDOWS))
        assert [h.value for h in hist] == pytest.approx([r["imbalance_cum"] for r in mine])
        assert len(client.get_metric_history(rid, "window.latency_p99")) == WINDOWS
        assert len(client.get_metric_history(rid, "window.imbalance_win")) == WINDOWS
        if cell["strategy"] == "wc":
            assert len(client.get_metric_history(rid, "window.s.d_mean")) == WINDOWS
        # the capacity curve: one point per worker count, its step the count
        curve = sorted(client.get_metric_history(rid, "curve.scaling_capacity"), key=lambda m: m.step)
        assert [h.step for h in curve] == cell["scaling_workers"] == [1, 4, 5, 10, 16]  # and the grid's own n
        assert [h.value for h in curve] == cell["scaling_capacity"]
        assert "capacity" in client.get_run(rid).data.metrics


def test_artifacts_on_the_parent(logged, client):
    pid = logged["parent_run_id"]
    assert sorted(a.path for a in client.list_artifacts(pid)) == ["plots", "report.html", "results"]
    for name in ("z12", "z08"):
        files = {Path(a.path).name for a in client.list_artifacts(pid, f"results/{name}")}
        assert files == {"summary.parquet", "series.parquet", "_manifest.json"}
        pngs = [a for a in client.list_artifacts(pid, f"plots/{name}") if a.path.endswith(".png")]
        assert len(pngs) == 4 and all(a.file_size > 0 for a in pngs)
    report = Path(logged["report"])
    assert report.is_file() and report.name == "report.html"
    text = report.read_text()
    assert "data:image/png;base64," in text and TAGS["git.commit"] in text and pid in text


def test_retry_updates_the_same_runs(results, store, logged, client):
    before = _all_runs(client, logged["experiment_id"])
    again = tracking.log_run(results, tracking_uri=store[0], run_key=KEY, run_name="nightly 2026-01-02",
                             tags=TAGS)
    assert again["parent_run_id"] == logged["parent_run_id"] and again["children"] == logged["children"]
    after = _all_runs(client, logged["experiment_id"])
    assert sorted(r.info.run_id for r in after) == sorted(r.info.run_id for r in before)
    # deterministic metrics are not duplicated in the history; the timings get a new point
    rid = next(iter(logged["children"].values()))
    assert len(client.get_metric_history(rid, "window.imbalance_cum")) == WINDOWS
    assert len(client.get_metric_history(rid, "imbalance")) == 1
    assert client.get_run(logged["parent_run_id"]).info.status == "FINISHED"


def test_new_key_new_parent_and_conflicting_results(results, store, logged, client, tmp_path):
    key2 = KEY.replace("2026-01-02", "2026-01-03")
    before = len(_all_runs(client, logged["experiment_id"]))
    # one dataset only: a parent and its children
    other = tracking.log_run(results[:1], tracking_uri=store[0], run_key=key2, run_name="nightly 2026-01-03",
                             tags={**TAGS, "airflow.run_id": "x"})
    assert other["experiment_id"] == logged["experiment_id"]
    assert other["parent_run_id"] != logged["parent_run_id"]
    assert not set(other["children"].values()) & set(logged["children"].values())
    assert len(_all_runs(client, logged["experiment_id"])) == before + 1 + CELLS
    assert tracking.find_run(store[0], "grouping", key2) == other["parent_run_id"]
    # the same key for different results (another configuration): refused before any change
    changed = tmp_path / "changed"
    shutil.copytree(results[0], changed)
    manifest = json.loads((changed / "_manifest.json").read_text())
    manifest["config"]["window"] = 999
    (changed / "_manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(SkewbenchError, match=r"changed after its validation passed: validate them first"):
        tracking.log_run([changed], tracking_uri=store[0], run_key=key2, run_name="n", tags={})
    validated(changed)
    with pytest.raises(SkewbenchError, match="other values of params"):
        tracking.log_run([changed], tracking_uri=store[0], run_key=key2, run_name="n", tags={})
    parent = client.get_run(other["parent_run_id"])
    assert parent.info.status == "FINISHED" and parent.info.run_name == "nightly 2026-01-03"
    assert len(_all_runs(client, logged["experiment_id"])) == before + 1 + CELLS
    # the same dataset twice in one call cannot be told apart
    with pytest.raises(SkewbenchError, match="appear twice"):
        tracking.log_run([results[0], changed], tracking_uri=store[0], run_key="k3", run_name="n", tags={})


def test_defaults_and_urls(monkeypatch, tmp_path):
    monkeypatch.delenv("SKEWBENCH_TRACKING_URI", raising=False)
    uri = tracking.default_tracking_uri()
    assert uri.startswith("sqlite:///") and uri.endswith("/.skewbench/mlflow/mlflow.db")
    assert tracking.default_artifact_location(uri, "skewbench-grouping").endswith(
        "/.skewbench/mlflow/artifacts/skewbench-grouping")
    monkeypatch.setenv("SKEWBENCH_TRACKING_URI", "http://mlflow:5000")
    assert tracking.default_tracking_uri() == "http://mlflow:5000"
    assert tracking.default_artifact_location("http://mlflow:5000", "x") is None
    url = tracking.mlflow_run_url("http://localhost:5000/", "3", "abc")
    assert url == "http://localhost:5000/#/experiments/3/runs/abc"
    with pytest.raises(SkewbenchError, match="quotes"):
        tracking.find_run(f"sqlite:///{tmp_path}/x.db", "grouping", "a'b")
    # looking up creates no store
    assert tracking.find_run(f"sqlite:///{tmp_path}/none/mlflow.db", "grouping", "k") is None
    assert not (tmp_path / "none").exists()


def test_a_run_that_left_its_parent_running_is_ended_by_the_next_one(store):
    """A pipeline run failed (or marked failed) from outside while a task ran never closes its
    MLflow parent; the next run of the DAG ends it FAILED with the reason, and leaves alone its own
    parent, finished parents, and parents of other DAGs or keys."""
    from mlflow.tracking import MlflowClient

    uri, _ = store  # the allocation experiment: the other tests log grouping only
    client = MlflowClient(tracking_uri=uri)
    ids = {}
    for key in ("skewbench_nightly/dead/allocation", "skewbench_nightly/done/allocation", "other_dag/live/allocation",
                "skewbench_nightly/now/allocation"):
        ids[key] = tracking.open_parent(uri, "allocation", key, key, TAGS)[1]
    client.set_terminated(ids["skewbench_nightly/done/allocation"], status="FINISHED")
    ended = tracking.fail_stale_parents(uri, "allocation", "skewbench_nightly/", "skewbench_nightly/now/allocation",
                                        "its pipeline run ended before logging it (found by run now)")
    assert ended == [ids["skewbench_nightly/dead/allocation"]]
    status = {k: client.get_run(i).info.status for k, i in ids.items()}
    assert status == {"skewbench_nightly/dead/allocation": "FAILED", "skewbench_nightly/done/allocation": "FINISHED",
                      "other_dag/live/allocation": "RUNNING", "skewbench_nightly/now/allocation": "RUNNING"}
    dead = client.get_run(ids["skewbench_nightly/dead/allocation"])
    assert dead.data.tags["skewbench.failure"] == "its pipeline run ended before logging it (found by run now)"
    assert tracking.fail_stale_parents(uri, "allocation", "skewbench_nightly/", "skewbench_nightly/now/allocation",
                                       "again") == []  # nothing left to end
    assert tracking.fail_stale_parents(uri, "shedding", "skewbench_nightly/", "skewbench_nightly/now/shedding",
                                       "no experiment yet") == []


def _few_cells(src: Path, dst: Path, n: int) -> Path:
    """A copy of a results directory holding its first ``n`` cells only (fewer MLflow runs to
    write: the tests below are about which runs exist, not how many)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    shutil.copytree(src, dst)
    summary = pq.read_table(dst / "summary.parquet").slice(0, n)
    series = pq.read_table(dst / "series.parquet")
    series = series.filter(pc.is_in(series.column("cell_id"), summary.column("cell_id")))
    pq.write_table(summary, dst / "summary.parquet")
    pq.write_table(series, dst / "series.parquet")
    manifest = json.loads((dst / "_manifest.json").read_text())
    keep = set(summary.column("cell_id").to_pylist())
    manifest["cells"] = [c for c in manifest["cells"] if c["cell_id"] in keep]
    manifest.update(summary_rows=summary.num_rows, series_rows=series.num_rows)
    (dst / "_manifest.json").write_text(json.dumps(manifest))
    return validated(dst)


class _FailsAfter:
    """A tag value whose text fails after ``n`` uses: log_run turns each tag value into text once
    for the parent and once per child run, so ``n = 1 + k`` fails the run's logging after ``k``
    child runs are complete (a crash in the middle of the children, with the real MLflow store)."""

    def __init__(self, n: int):
        self.left = n

    def __str__(self) -> str:
        self.left -= 1
        if self.left < 0:
            raise RuntimeError("injected failure while logging a child run")
        return "bomb"


def _children(client, experiment_id: str, parent_id: str) -> list:
    from mlflow.entities import ViewType

    return client.search_runs([experiment_id], f"tags.`mlflow.parentRunId` = '{parent_id}'",
                              run_view_type=ViewType.ALL, max_results=1000)


def test_an_exception_while_logging_marks_the_parent_failed_and_a_rerun_completes_it(results, store, tmp_path):
    """log_run fails after 2 of the 5 child runs: the parent ends FAILED (not RUNNING, not
    FINISHED), the 2 are complete; logging again under the same key resumes the same parent,
    keeps the 2 (same run ids, no second point in any deterministic metric's history), adds the
    3 missing ones, and finishes the parent."""
    from mlflow import MlflowClient

    uri = store[0]  # its grouping experiment: the keys below are new
    key = "skewbench_nightly/partly-logged/grouping"
    res = [_few_cells(results[0], tmp_path / "res", 5)]
    manifest, summary, _ = read_results(res[0])
    fp = manifest["dataset"]["fingerprint"]
    with pytest.raises(RuntimeError, match="injected failure while logging a child run"):
        tracking.log_run(res, tracking_uri=uri, run_key=key, run_name="partly",
                         tags={**TAGS, "bomb": _FailsAfter(1 + 2)})
    client = MlflowClient(tracking_uri=uri)
    eid = client.get_experiment_by_name("skewbench-grouping").experiment_id
    (parent,) = client.search_runs([eid], f"tags.`skewbench.key` = '{key}'")
    assert parent.info.status == "FAILED"
    first = {r.data.tags["skewbench.key"]: r for r in _children(client, eid, parent.info.run_id)}
    assert len(first) == 2 and all(r.info.status == "FINISHED" for r in first.values())

    again = tracking.log_run(res, tracking_uri=uri, run_key=key, run_name="partly", tags=TAGS)
    assert again["parent_run_id"] == parent.info.run_id
    assert client.get_run(parent.info.run_id).info.status == "FINISHED"
    runs = _children(client, eid, parent.info.run_id)
    keys = [r.data.tags["skewbench.key"] for r in runs]
    assert sorted(keys) == sorted(f"{key}/{fp[:12]}/{c}" for c in summary.column("cell_id").to_pylist())  # once each
    assert len(client.search_runs([eid], f"tags.`skewbench.key` LIKE '{key}%'", max_results=1000)) == 1 + 5
    assert all(again["children"][k] == r.info.run_id for k, r in first.items())  # the 2 kept, not re-created
    rows = {f"{key}/{fp[:12]}/{r['cell_id']}": r for r in summary.to_pylist()}
    for r in runs:
        assert r.info.status == "FINISHED"
        assert r.data.metrics["imbalance"] == pytest.approx(rows[r.data.tags["skewbench.key"]]["imbalance"],
                                                            rel=1e-12, abs=0)
        assert len(client.get_metric_history(r.info.run_id, "imbalance")) == 1
        assert len(client.get_metric_history(r.info.run_id, "window.imbalance_cum")) == WINDOWS


def test_a_child_left_half_logged_by_a_killed_process_is_completed_once(results, store, tmp_path):
    """What a process killed inside log_run leaves: a child run with its key, RUNNING, holding
    only its first metrics.  The rerun finds it by its key, logs what it lacks (all of its final
    and window metrics, its params), finishes it, and creates no second run for that cell."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    uri = store[0]  # its grouping experiment: the keys below are new
    key = "skewbench_nightly/half-logged/grouping"
    res = [_few_cells(results[0], tmp_path / "res", 4)]
    manifest, summary, series = read_results(res[0])
    fp = manifest["dataset"]["fingerprint"]
    row = summary.to_pylist()[3]
    _, pid = tracking.open_parent(uri, "grouping", key, "half", TAGS)
    client = MlflowClient(tracking_uri=uri)
    eid = client.get_experiment_by_name("skewbench-grouping").experiment_id
    child_key = f"{key}/{fp[:12]}/{row['cell_id']}"
    half = client.create_run(eid, tags={"mlflow.parentRunId": pid, "skewbench.key": child_key}, run_name="half")
    client.log_batch(half.info.run_id, metrics=[Metric("imbalance", row["imbalance"], half.info.start_time, 0)],
                     synchronous=True)

    logged = tracking.log_run(res, tracking_uri=uri, run_key=key, run_name="half", tags=TAGS)
    assert logged["children"][child_key] == half.info.run_id
    runs = _children(client, eid, pid)
    assert len(runs) == 4 and sorted(r.data.tags["skewbench.key"] for r in runs) == sorted(logged["children"])
    done = client.get_run(half.info.run_id)
    assert done.info.status == "FINISHED"
    assert done.data.params["strategy"] == row["strategy"] and done.data.params["workers"] == str(row["workers"])
    assert done.data.metrics["imbalance"] == row["imbalance"]
    assert done.data.metrics["latency_p99"] == pytest.approx(row["latency_p99"], rel=1e-12, abs=0)
    assert len(client.get_metric_history(half.info.run_id, "imbalance")) == 1  # the same point, not a second
    mine = sorted((r for r in series.to_pylist() if r["cell_id"] == row["cell_id"]), key=lambda r: r["window"])
    hist = sorted(client.get_metric_history(half.info.run_id, "window.imbalance_cum"), key=lambda m: m.step)
    assert [h.value for h in hist] == pytest.approx([r["imbalance_cum"] for r in mine], rel=1e-12, abs=0)


def test_logging_refuses_results_without_a_passed_validation(results, store, logged, tmp_path, monkeypatch):
    """log_run and the pipeline's log_family log only results whose validation passed for their present
    content: never validated, failed, or changed after passing are refused before MLflow sees anything."""
    import pyarrow.parquet as pq
    from mlflow import MlflowClient

    from skewbench import nightly
    from skewbench.validation.results import validate_results

    uri = store[0]
    client = MlflowClient(tracking_uri=uri)
    eid = client.get_experiment_by_name("skewbench-grouping").experiment_id
    before = len(_all_runs(client, eid))
    never = tmp_path / "never"
    shutil.copytree(results[0], never)
    (never / "_validation.json").unlink()
    with pytest.raises(SkewbenchError, match=rf"^log_run: {never} has not been validated: validate them first "):
        tracking.log_run([never], tracking_uri=uri, run_key="k/never", run_name="n", tags={})
    # a failed validation: a negative imbalance in one cell
    failed = tmp_path / "failed"
    shutil.copytree(results[0], failed)
    rows = pq.read_table(failed / "summary.parquet")
    imb = rows.column("imbalance").to_pylist()
    imb[0] = -0.5
    pq.write_table(rows.set_column(rows.schema.get_field_index("imbalance"), "imbalance",
                                   pa.array(imb, type=rows.schema.field("imbalance").type)), failed / "summary.parquet")
    assert not validate_results(failed).success
    with pytest.raises(SkewbenchError, match=r"failed its validation \(\d+ failure\(s\)\): it is not logged$"):
        tracking.log_run([failed], tracking_uri=uri, run_key="k/failed", run_name="n", tags={})
    # one good directory beside a bad one: nothing of either is logged
    with pytest.raises(SkewbenchError, match="has not been validated"):
        tracking.log_run([results[0], never], tracking_uri=uri, run_key="k/mixed", run_name="n", tags={})
    # the pipeline's step, log_family, goes through the same check
    monkeypatch.setenv("SKEWBENCH_TRACKING_URI", uri)
    with pytest.raises(SkewbenchError, match="failed its validation"):
        nightly.log_family([{"family": "grouping", "out": str(failed)}], "grouping", "skewbench_nightly", "r1",
                           "2026-01-05T00:00:00+00:00")
    assert len(_all_runs(client, eid)) == before
    assert all(tracking.find_run(uri, "grouping", k) is None for k in ("k/never", "k/failed", "k/mixed"))
