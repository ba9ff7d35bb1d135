"""Screenshots of the real Airflow and MLflow UIs for the README (docs/img/), and of a
`skewbench advise --html` page.

A maintainer's tool, not part of the pipeline: it needs `make run` done and `make ui` serving,
Debian's Chromium (`apt-get install chromium`) and Playwright for Python in any environment
(`pip install playwright`; no browser download: it drives /usr/bin/chromium).

    python scripts/screenshots.py [--out docs/img] [--airflow URL] [--mlflow URL]
    python scripts/screenshots.py --advise PAGE [--out docs/img]   # only docs/img/advise.png, no UI needed

It signs in to Airflow with the generated admin password ($AIRFLOW_HOME's
simple_auth_manager_passwords.json.generated) and shows one skewbench_nightly run (--run-id, or
the newest successful one) and its MLflow runs, found through the two servers' REST APIs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
DAG = "skewbench_nightly"


def settle(page, seconds: float = 2.5) -> None:
    """Let a single-page app fetch and draw (MLflow's UI polls, so it may never go idle)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_load_state("networkidle", timeout=15_000)
    except PlaywrightTimeout:
        pass
    time.sleep(seconds)


def click_if_any(page, locator, seconds: float) -> None:
    if locator.count():
        locator.first.click()
        settle(page, seconds)


def airflow_shots(page, base: str, password: str, out: Path, run_id: str | None) -> str:
    page.goto(base + "/")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/auth/login" not in url, timeout=60_000)
    if run_id is None:
        runs = page.request.get(f"{base}/api/v2/dags/{DAG}/dagRuns?order_by=-run_after&limit=1&state=success"
                                ).json()["dag_runs"]
        if not runs:
            sys.exit(f"no successful {DAG} run in Airflow: run `make run` first")
        run_id = runs[0]["dag_run_id"]
    run = urllib.parse.quote(run_id, safe="")
    page.goto(f"{base}/dags/{DAG}/runs/{run}")
    settle(page)
    page.screenshot(path=out / "airflow-nightly-run.png")
    page.goto(f"{base}/dags/{DAG}/runs/{run}/tasks/grouping.replay/mapped/0/details")
    settle(page)
    page.screenshot(path=out / "airflow-replay-mlflow-link.png")
    page.goto(f"{base}/dags/{DAG}")
    settle(page)
    page.get_by_role("button", name="Trigger").first.click()
    # the Params come in sections (the common fields, then one per family): open each
    page.get_by_role("button", name="grouping family").first.wait_for(timeout=30_000)
    for name in ("Datasets", "Families", "grouping family"):
        section = page.get_by_role("button", name=name).first
        if section.count() and section.get_attribute("aria-expanded") != "true":
            section.click()
    settle(page, 1.5)
    page.screenshot(path=out / "airflow-trigger-params.png")
    return run_id


#: browser state MLflow 3's UI keeps in localStorage: the model-training view, no assistant panel
MLFLOW_UI_STATE = """
localStorage.setItem('mlflow.workflowType_v1', '"machine_learning"');
localStorage.setItem('mlflow.assistant.panelOpen_v1', 'false');
localStorage.setItem('mlflow.assistant.fab.autoOpenedOnFirstLoad_v1', 'true');
localStorage.setItem('mlflow.detectIssues.guidanceShown_v1', 'true');
"""


def link_shot(browser, airflow_page, airflow: str, out: Path, run_id: str) -> None:
    """Where the replay task's "MLflow run" link lands, in a browser that never opened MLflow."""
    run = urllib.parse.quote(run_id, safe="")
    airflow_page.goto(f"{airflow}/dags/{DAG}/runs/{run}/tasks/grouping.replay/mapped/0/details")
    link = airflow_page.get_by_role("link", name="MLflow run").first
    link.wait_for(timeout=60_000)
    page = browser.new_context(viewport={"width": 1400, "height": 860}).new_page()
    page.goto(link.get_attribute("href"))
    settle(page, 4)
    page.screenshot(path=out / "mlflow-runs-from-link.png")


def mlflow_shots(page, base: str, out: Path, run_id: str, dataset: str, workers: int) -> None:
    api = f"{base}/api/2.0/mlflow"
    exp = page.request.get(f"{api}/experiments/get-by-name?experiment_name=skewbench-grouping").json()["experiment"]
    eid = exp["experiment_id"]
    found = page.request.post(f"{api}/runs/search", data=json.dumps({
        "experiment_ids": [eid], "max_results": 50, "order_by": ["attributes.start_time DESC"],
        "filter": f"tags.`skewbench.key` = '{DAG}/{run_id}/grouping'"}),
        headers={"Content-Type": "application/json"}).json().get("runs", [])
    if not found:
        sys.exit(f"no skewbench-grouping parent run of {run_id} in MLflow")
    pid = found[0]["info"]["run_id"]
    # the children of one dataset and worker count: every strategy's window series side by side
    query = (f"tags.`skewbench.run_id` = '{run_id}' and tags.`skewbench.dataset` = '{dataset}' "
             f"and params.workers = '{workers}'")
    page.goto(f"{base}/#/experiments/{eid}/runs?searchFilter={urllib.parse.quote(query)}&compareRunsMode=CHART")
    settle(page, 4)
    click_if_any(page, page.locator("button[data-component-id*=runnamecellrenderer]"), 3)  # expand the parent
    page.get_by_placeholder("Search metric charts").fill("window.")
    settle(page, 3)
    page.screenshot(path=out / "mlflow-compare-windows.png")
    page.goto(f"{base}/#/experiments/{eid}/runs/{pid}/artifacts")
    settle(page, 3)
    click_if_any(page, page.get_by_text("report.html"), 4)
    page.screenshot(path=out / "mlflow-report.png")


def advise_shot(browser, page_file: Path, out: Path) -> None:
    """The whole `skewbench advise --html` page, 1300 pixels wide."""
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    page.goto(page_file.resolve().as_uri(), wait_until="load")
    out.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=out / "advise.png", full_page=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "img"))
    ap.add_argument("--airflow", default=f"http://127.0.0.1:{os.environ.get('AIRFLOW_PORT', '8080')}")
    ap.add_argument("--mlflow", default=f"http://127.0.0.1:{os.environ.get('MLFLOW_PORT', '5000')}")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--run-id", default=None, help="the skewbench_nightly run (default: the newest successful)")
    ap.add_argument("--dataset", default="zipf-1.0", help="dataset of the MLflow comparison view")
    ap.add_argument("--workers", type=int, default=100, help="worker count of the MLflow comparison view")
    ap.add_argument("--advise", default=None, metavar="PAGE",
                    help="only screenshot this `skewbench advise --html` page (as advise.png)")
    args = ap.parse_args()
    if args.advise:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, headless=True, args=CHROMIUM_ARGS)
            try:
                advise_shot(browser, Path(args.advise), Path(args.out))
            finally:
                browser.close()
        print(Path(args.out) / "advise.png")
        return
    home = Path(os.environ.get("AIRFLOW_HOME", ROOT / ".skewbench" / "airflow"))
    pwfile = home / "simple_auth_manager_passwords.json.generated"
    if not pwfile.exists():
        sys.exit(f"{pwfile} not found: start the UIs with `make ui` first")
    password = json.loads(pwfile.read_text())["admin"]
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            run_id = airflow_shots(page, args.airflow.rstrip("/"), password, out, args.run_id)
            link_shot(browser, page, args.airflow.rstrip("/"), out, run_id)
            ml = browser.new_context(viewport={"width": 1400, "height": 860})
            ml.add_init_script(MLFLOW_UI_STATE)
            mlflow_shots(ml.new_page(), args.mlflow.rstrip("/"), out, run_id, args.dataset, args.workers)
        finally:
            browser.close()
    for f in sorted(out.glob("*.png")):
        print(f)


if __name__ == "__main__":
    main()
