"""A throw-away Airflow + MLflow + data environment for the DAG tests (real components, SQLite).

Airflow reads its configuration at import, so the DAGs run in a subprocess with this
environment; the test process inspects the results through MLflow's client and the files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

TINY_CATALOG = """
version: 1
datasets:
  - name: tiny-zipf
    sets: [default]
    generator: zipf
    keys: 500
    tuples: 20000
    alpha: 1.2
    seed: 1
    cost: {model: levels, levels: 4, low: 1, high: 4}
  - name: tiny-drift
    sets: [default]
    generator: drifting
    keys: 300
    seed: 2
    phases:
      - {tuples: 8000, alpha: 1.0}
      - {tuples: 8000, alpha: 1.0, permutation: new}
  - name: tiny-jobs
    sets: [default]
    families: [allocation]
    workload: skewbench.allocation.workloads:paper_set
    params: {set: e3}
    seed: 0
"""


def one_dataset_catalog(tuples: int) -> str:
    """A catalog of one Zipf dataset, ``tiny-zipf``, in the ``paper`` set only: the default set
    is empty, so the run that unpausing the nightly schedules fails in check_params at once
    ("no dataset to run") instead of replaying a catalog; the tests' runs name their dataset."""
    return f"""
version: 1
datasets:
  - name: tiny-zipf
    sets: [paper]
    generator: zipf
    keys: 500
    tuples: {tuples}
    alpha: 1.2
    seed: 1
"""


from skewbench.dagrun import free_port  # noqa: E402  (a TCP port free on 127.0.0.1 now, for a server a test starts)


def make_env(root: Path, master: str = "local[2]") -> dict[str, str]:
    """The environment of a throw-away Airflow whose ``spark_default`` connection points at
    ``master`` (``SKEWBENCH_SPARK_MASTER`` with it)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "catalog.yaml").write_text(TINY_CATALOG)
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ,
           "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
           "AIRFLOW_HOME": str(root / "airflow"),
           "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
           "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
           "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": master}),
           "SKEWBENCH_SPARK_MASTER": master,
           "SKEWBENCH_STATE": str(root / "state"),
           "SKEWBENCH_CATALOG": str(root / "catalog.yaml"),
           "SKEWBENCH_TRACKING_URI": f"sqlite:///{root / 'mlflow.db'}",
           "SKEWBENCH_MLFLOW_ARTIFACTS": str(root / "mlartifacts"),
           "SKEWBENCH_MLFLOW_UI": "http://127.0.0.1:5000",
           "PYSPARK_PYTHON": sys.executable,
           "GX_ANALYTICS_ENABLED": "false", "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1"}
    return env


def migrate(env: dict[str, str]) -> None:
    subprocess.run([str(Path(sys.executable).parent / "airflow"), "db", "migrate"], env=env, check=True,
                   capture_output=True, timeout=600)


PROBE = r'''
import json, sys, time
from airflow.dag_processing.dagbag import DagBag
before = set(sys.modules)
t0 = time.perf_counter()
bag = DagBag(sys.argv[1])
out = {"errors": {k: str(v) for k, v in bag.import_errors.items()}, "dags": {}}
for dag_id, dag in bag.dags.items():
    out["dags"][dag_id] = {
        "tags": sorted(dag.tags), "doc_md": dag.doc_md or "", "max_active_runs": dag.max_active_runs,
        "tasks": {t.task_id: {"retries": t.retries, "downstream": sorted(t.downstream_task_ids),
                              "type": getattr(t, "task_type", type(t).__name__)} for t in dag.tasks},
        "params": sorted(dag.params.keys()),
    }
out["seconds"] = time.perf_counter() - t0
out["parse_imports"] = sorted(m for m in set(sys.modules) - before if "." not in m)
print("PROBE" + json.dumps(out))
'''

RUN = r'''
import json, os, sys
from datetime import datetime
from skewbench import dagrun
dagrun.prepare(int(os.environ.get("SKEWBENCH_RUN_PARALLELISM", "1")))  # before Airflow
import great_expectations  # before Airflow
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(sys.argv[1])
dag = bag.get_dag(sys.argv[2])
when = os.environ.get("SKEWBENCH_TEST_LOGICAL_DATE")
for conf in json.loads(sys.argv[3]):
    try:
        run = dagrun.run_once(dag, conf, log_dir=os.environ["SKEWBENCH_STATE"],
                              **({"logical_date": datetime.fromisoformat(when)} if when else {}))
        tis = run.get_task_instances()
        print("RUNSTATE " + json.dumps({"state": str(run.state), "run_id": run.run_id,
                                        "tasks": {f"{ti.task_id}[{ti.map_index}]": str(ti.state) for ti in tis},
                                        "times": {f"{ti.task_id}[{ti.map_index}]": [ti.start_date.timestamp(),
                                                                                    ti.end_date.timestamp()]
                                                  for ti in tis if ti.start_date and ti.end_date}}), flush=True)
    except Exception as e:
        print("RUNERROR " + type(e).__name__ + ": " + str(e).splitlines()[0], flush=True)
'''



def probe(env: dict[str, str]) -> dict:
    p = subprocess.run([sys.executable, "-c", PROBE, str(REPO / "dags")], env=env, capture_output=True, text=True,
                       timeout=600)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("PROBE")), None)
    if line is None:
        raise AssertionError(f"probe failed:\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}")
    return json.loads(line[5:])


def run_dags(env: dict[str, str], dag_id: str, confs: list[dict]) -> tuple[list[dict | str], str]:
    """``dag.test()`` once per conf, in one subprocess: a dict (run state, run id, task states)
    per completed run, or the error's first line when the run was refused."""
    p = subprocess.run([sys.executable, "-c", RUN, str(REPO / "dags"), dag_id, json.dumps(confs)], env=env,
                       capture_output=True, text=True, timeout=1500)
    log = p.stdout + p.stderr
    out: list[dict | str] = []
    for ln in p.stdout.splitlines():
        if ln.startswith("RUNSTATE "):
            out.append(json.loads(ln[9:]))
        elif ln.startswith("RUNERROR "):
            out.append(ln[9:])
    if len(out) != len(confs):
        raise AssertionError(f"dag.test gave {len(out)} of {len(confs)} results:\n{log[-6000:]}")
    return out, log


def run_dag(env: dict[str, str], dag_id: str, conf: dict) -> tuple[dict | str, str]:
    results, log = run_dags(env, dag_id, [conf])
    return results[0], log


LINKS = r"""
import json, sys
import great_expectations  # before Airflow
from airflow.models.dagbag import DBDagBag
from airflow.models.taskinstance import TaskInstance
from airflow.utils.session import create_session
from sqlalchemy import select

dag_id, task_id, run_id = sys.argv[1:4]
with create_session() as session:
    # what the API server does for the UI's "Extra Links": the serialized (mapped) operator
    dag = DBDagBag().get_latest_version_of_dag(dag_id, session=session)
    task = dag.get_task(task_id)
    tis = session.scalars(select(TaskInstance).where(TaskInstance.dag_id == dag_id, TaskInstance.task_id == task_id,
                                                     TaskInstance.run_id == run_id)).all()
    links = {str(ti.map_index): {name: task.get_extra_links(ti, name) for name in task.extra_links} for ti in tis}
print("LINKS " + json.dumps(links))
"""


def extra_links(env: dict[str, str], dag_id: str, task_id: str, run_id: str) -> dict[str, dict[str, str]]:
    """The extra links of a task's instances in a DAG run, resolved as Airflow's API server does
    (from the serialized DAG in the metadata database, with the plugins loaded): map index ->
    {link name: URL}."""
    p = subprocess.run([sys.executable, "-c", LINKS, dag_id, task_id, run_id], env=env, capture_output=True,
                       text=True, timeout=600)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("LINKS ")), None)
    if line is None:
        raise AssertionError(f"extra links failed:\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}")
    return json.loads(line[6:])


# ---------------------------------------------------------------------------------------------
# make ui's processes (scripts/ui.sh) on free ports, and their REST API

class Ui:
    """``scripts/ui.sh`` started on free ports over ``root`` (a throw-away state with ``catalog``):
    the Airflow API server, scheduler, DAG processor and triggerer, and the MLflow server; a
    client of Airflow's REST API signed in as the generated admin."""

    def __init__(self, root: Path, catalog: str):
        self.root = root
        self.env = make_env(root)
        (root / "catalog.yaml").write_text(catalog)
        airflow_port, mlflow_port = free_port(), free_port()
        self.env.update({"AIRFLOW_PORT": str(airflow_port), "MLFLOW_PORT": str(mlflow_port),
                         "SKEWBENCH_MLFLOW_UI": f"http://127.0.0.1:{mlflow_port}",
                         "SKEWBENCH_RETRY_DELAY_SECONDS": "1"})
        self.airflow = f"http://127.0.0.1:{airflow_port}"
        self.mlflow = f"http://127.0.0.1:{mlflow_port}"
        self.start_output = ""
        self._token: str | None = None

    def start(self) -> "Ui":
        p = subprocess.run(["bash", str(REPO / "scripts" / "ui.sh"), "start"], env=self.env, capture_output=True,
                           text=True, timeout=600)
        self.start_output = p.stdout
        if p.returncode != 0:
            self.stop()
            raise AssertionError(p.stdout + p.stderr)
        return self

    def stop(self) -> None:
        subprocess.run(["bash", str(REPO / "scripts" / "ui.sh"), "stop"], env=self.env, capture_output=True,
                       timeout=120)

    @property
    def password(self) -> str:
        return json.loads((Path(self.env["AIRFLOW_HOME"]) /
                           "simple_auth_manager_passwords.json.generated").read_text())["admin"]

    def token(self) -> str:
        import urllib.request

        if self._token is None:
            req = urllib.request.Request(self.airflow + "/auth/token", method="POST",
                                         data=json.dumps({"username": "admin", "password": self.password}).encode(),
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=30) as r:
                self._token = json.loads(r.read())["access_token"]
        return self._token

    def api(self, method: str, path: str, body: dict | None = None) -> dict:
        import urllib.request

        req = urllib.request.Request(self.airflow + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {self.token()}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read() or b"{}")

    def wait_run(self, dag: str, run_id: str, timeout: float) -> dict:
        import time

        t0 = time.monotonic()
        while True:
            run = self.api("GET", f"/api/v2/dags/{dag}/dagRuns/{run_id}")
            if run["state"] in ("success", "failed"):
                return run
            if time.monotonic() - t0 > timeout:
                raise AssertionError(f"run {run_id} did not finish in {timeout:.0f} s: {run['state']}")
            time.sleep(2)

    def tasks(self, dag: str, run_id: str) -> list[dict]:
        return self.api("GET", f"/api/v2/dags/{dag}/dagRuns/{run_id}/taskInstances?limit=200")["task_instances"]
