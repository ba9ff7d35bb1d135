"""`make ui`'s processes for real (scripts/ui.sh: the Airflow API server, scheduler, DAG
processor and triggerer, and the MLflow server), on free ports over a throw-away state.

* Every listening socket of those processes is on a loopback address, and the generated admin
  password is readable by its owner only.
* In a real browser (Playwright driving Debian's Chromium; skipped with a message when either
  is missing): sign in, trigger a run with an unknown dataset through the form, which fails in
  ``check_params`` alone within seconds with the close match; trigger a good run, then follow
  the replay task's "MLflow run" link, in a browser that has never opened MLflow, to the runs
  table of that nightly run and dataset.
"""

from __future__ import annotations

import json
import os
import stat
import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.integration import airflow_env as af

DAG = "skewbench_nightly"
CHROMIUM = "/usr/bin/chromium"
CATALOG = af.one_dataset_catalog(20000)


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    u = af.Ui(tmp_path_factory.mktemp("ui"), CATALOG).start()
    try:
        yield {"env": u.env, "root": u.root, "airflow": u.airflow, "mlflow": u.mlflow, "start": u.start_output,
               "client": u}
    finally:
        u.stop()


def _group_pids(state: Path) -> dict[int, str]:
    """Every process of the process groups ui.sh started: pid -> the group's name."""
    import psutil

    groups = {int(pgid): name for name, pgid in
              (line.split() for line in (state / "ui.pgids").read_text().splitlines() if line.strip())}
    out = {}
    for p in psutil.process_iter():
        try:
            pg = os.getpgid(p.pid)
        except (ProcessLookupError, PermissionError):
            continue
        if pg in groups:
            out[p.pid] = groups[pg]
    return out


@pytest.mark.slow  # about 40 s with make ui: make slow (CI runs it after make test, which must stay under 12 minutes)
def test_make_ui_listens_on_loopback_only_and_keeps_its_password_private(ui):
    import psutil

    state = Path(ui["env"]["SKEWBENCH_STATE"])
    pids = _group_pids(state)
    assert set(pids.values()) == {"mlflow", "airflow-api-server", "airflow-scheduler", "airflow-dag-processor",
                                  "airflow-triggerer"}, pids
    listening = [(pids[c.pid], c.laddr.ip, c.laddr.port) for c in psutil.net_connections(kind="inet")
                 if c.status == psutil.CONN_LISTEN and c.pid in pids]
    ports = {port for _, _, port in listening}
    assert {int(ui["airflow"].rsplit(":", 1)[1]), int(ui["mlflow"].rsplit(":", 1)[1])} <= ports, listening
    # Airflow's task log servers (8793, 8794) listened on every address under `airflow standalone`
    assert [x for x in listening if x[1] not in ("127.0.0.1", "::1")] == [], listening
    pwfile = Path(ui["env"]["AIRFLOW_HOME"]) / "simple_auth_manager_passwords.json.generated"
    assert stat.S_IMODE(pwfile.stat().st_mode) == 0o600
    assert json.loads(pwfile.read_text())["admin"] in ui["start"]


# ---------------------------------------------------------------------------------------------
# in a browser


def _browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no browser: {CHROMIUM} is missing (apt-get install chromium) - the UI test needs it")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (make install installs it)")
    return sync_playwright


def _trigger(page, ui, conf: dict | None = None, datasets: str | None = None, dag: str = DAG) -> None:
    """Open the trigger form and submit it: the datasets field typed in as a user would, or
    the whole configuration in the form's JSON editor."""
    page.goto(f"{ui['airflow']}/dags/{dag}")
    page.get_by_role("button", name="Trigger").first.click()
    dialog = page.locator("[role=dialog][data-state=open]")
    dialog.get_by_role("button", name="Datasets").first.wait_for(timeout=60_000)
    if datasets is not None:
        field = dialog.locator("[name=element_datasets]")
        if not field.is_visible():
            dialog.get_by_role("button", name="Datasets").first.click()
        field.fill(datasets)
        field.blur()  # as below: the form settles before the click on Trigger
    if conf is not None:
        dialog.get_by_role("button", name="Advanced Options").first.click()
        dialog.locator(".monaco-editor").last.click()  # "Configuration JSON"
        page.keyboard.press("Control+A")
        page.keyboard.press("Delete")
        page.keyboard.insert_text(json.dumps(conf))
        # Leaving the editor re-formats its JSON, which moves the Trigger button up 100-150 px (measured
        # here). Left by the click on Trigger, that happened between the mouse-down and the mouse-up,
        # the click fell beside the button and no run was created (2 of 4 runs here, and in CI).
        dialog.get_by_text("Configuration JSON").first.click()
    page.wait_for_timeout(500)
    dialog.get_by_role("button", name="Trigger").last.click()
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:  # the form closes once the run is created; open, it says why not
        dialog.wait_for(state="hidden", timeout=30_000)
    except PlaywrightTimeout as exc:
        text = dialog.inner_text() if dialog.count() else ""
        enabled = dialog.get_by_role("button", name="Trigger").last.is_enabled() if dialog.count() else None
        raise AssertionError(f"the trigger form of {dag} stayed open 30 s after Trigger (its button enabled: "
                             f"{enabled}): {text[-2000:]!r}") from exc
    page.wait_for_timeout(500)


def _newest_manual_run(ui, before: set[str], dag: str = DAG) -> str:
    for _ in range(60):
        runs = ui["client"].api("GET", f"/api/v2/dags/{dag}/dagRuns?limit=50")["dag_runs"]
        new = [r["dag_run_id"] for r in runs if r["run_type"] == "manual" and r["dag_run_id"] not in before]
        if new:
            return new[0]
        time.sleep(1)
    raise AssertionError("the form created no run")


@pytest.mark.slow  # 1-3 min in a real browser: make slow (the loopback and password checks stay in make test)
def test_a_first_time_user_triggers_runs_and_finds_the_mlflow_runs(ui, tmp_path):
    sync_playwright = _browser()
    password = json.loads((Path(ui["env"]["AIRFLOW_HOME"]) /
                           "simple_auth_manager_passwords.json.generated").read_text())["admin"]
    shots = tmp_path
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(ui["airflow"] + "/")
            page.fill("input[name=username]", "admin")
            page.fill("input[name=password]", password)
            page.click("button[type=submit]")
            page.wait_for_url(lambda url: "/auth/login" not in url, timeout=60_000)

            # 1. a typo in the dataset: the run fails in check_params alone, at once, nothing retried
            seen: set[str] = set()
            _trigger(page, ui, datasets="tiny-zipff")
            page.screenshot(path=str(shots / "1-bad-trigger.png"))
            bad = _newest_manual_run(ui, seen)
            seen.add(bad)
            run = ui["client"].wait_run(DAG, bad, 240)
            assert run["state"] == "failed"
            failed = [t for t in ui["client"].tasks(DAG, bad) if t["state"] == "failed"]
            assert [(t["task_id"], t["try_number"]) for t in failed] == [("check_params", 1)], failed
            log = (Path(ui["env"]["AIRFLOW_HOME"]) / "logs" / f"dag_id={DAG}" / f"run_id={bad}" /
                   "task_id=check_params" / "attempt=1.log").read_text()
            assert "unknown dataset 'tiny-zipff' (did you mean 'tiny-zipf'?)" in log, log[-2000:]
            started, ended = (datetime.fromisoformat(run[k].replace("Z", "+00:00")) for k in ("start_date", "end_date"))
            assert (ended - started).total_seconds() < 60, run

            # 2. a good run, then the replay task's link to MLflow
            _trigger(page, ui, conf={"datasets": ["tiny-zipf"], "families": ["grouping"],
                                     "grouping_strategies": ["kg", "pkg"], "grouping_workers": [5]})
            good = _newest_manual_run(ui, seen)
            run = ui["client"].wait_run(DAG, good, 900)
            assert run["state"] == "success", [(t["task_id"], t["state"]) for t in ui["client"].tasks(DAG, good)]
            page.goto(f"{ui['airflow']}/dags/{DAG}/runs/{good}/tasks/grouping.replay/mapped/0/details")
            link = page.get_by_role("link", name="MLflow run").first
            link.wait_for(timeout=60_000)
            page.screenshot(path=str(shots / "2-replay-task.png"))
            href = link.get_attribute("href")
            assert href and href.startswith(ui["mlflow"]), href

            # a browser that has never opened MLflow (no stored view) lands on the runs table
            fresh = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            fresh.goto(href)
            names = ["tiny-zipf kg n=5 s=5", "tiny-zipf pkg n=5 s=5"]
            for name in names:
                fresh.get_by_text(name, exact=False).first.wait_for(timeout=60_000)
            fresh.screenshot(path=str(shots / "3-mlflow-runs.png"))
        finally:
            browser.close()


LIVE = "skewbench_live"


@pytest.mark.slow  # a minute or two in a real browser: make slow
def test_the_live_dag_runs_from_the_airflow_ui(ui):
    """skewbench_live triggered through its form (the configuration in the form's JSON editor):
    the run succeeds under the scheduler, every routing exact, and its MLflow parent is finished.
    Spark alone: a batch stage of 400 tuples, 20 ms each (a cost the calibration's drift check can
    tell from a busy neighbour's noise, tests/integration/test_live_dag.py), once for a strategy
    that keeps keys whole and one that splits them (the live DAG's repetitions and every routing:
    test_live_dag.py)."""
    sync_playwright = _browser()
    password = json.loads((Path(ui["env"]["AIRFLOW_HOME"]) /
                           "simple_auth_manager_passwords.json.generated").read_text())["admin"]
    ui["client"].api("PATCH", f"/api/v2/dags/{LIVE}", {"is_paused": False})
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(ui["airflow"] + "/")
            page.fill("input[name=username]", "admin")
            page.fill("input[name=password]", password)
            page.click("button[type=submit]")
            page.wait_for_url(lambda url: "/auth/login" not in url, timeout=60_000)
            before = {r["dag_run_id"] for r in
                      ui["client"].api("GET", f"/api/v2/dags/{LIVE}/dagRuns?limit=50")["dag_runs"]}
            _trigger(page, ui, conf={"datasets": ["tiny-zipf"], "engines": ["spark"], "strategies": ["kg", "sg"],
                                     "workers": 2, "spark_tuples": 400, "cost": "20", "repeat": 1}, dag=LIVE)
            run_id = _newest_manual_run(ui, before, LIVE)
        finally:
            browser.close()
    run = ui["client"].wait_run(LIVE, run_id, 900)
    assert run["state"] == "success", [(t["task_id"], t["state"]) for t in ui["client"].tasks(LIVE, run_id)]
    found = list(Path(ui["env"]["SKEWBENCH_STATE"]).glob("runs/*/live-*/tiny-zipf/live.json"))
    assert len(found) == 1, found
    rows = json.loads(found[0].read_text())["rows"]
    assert {r["strategy"] for r in rows} == {"kg", "sg"}
    assert all(r["subtask_records"] == r["decided_records"] and r["tuples_executed"] == 400 for r in rows), rows
    from mlflow import MlflowClient

    client = MlflowClient(ui["env"]["SKEWBENCH_TRACKING_URI"])
    exp = client.get_experiment_by_name("skewbench-live")
    parents = client.search_runs([exp.experiment_id], f"tags.`skewbench.key` = '{LIVE}/{run_id}'")
    assert [p.info.status for p in parents] == ["FINISHED"], parents
