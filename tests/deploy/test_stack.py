"""make deploy-test: docker/compose.yaml started for real, the nightly run through it.

The images come from ``make images`` (``$SKEWBENCH_STATE/docker/images.env`` names them); the
stack is started with the commands of docs/deploy.md (docker-compose, project
``skewbench-deploy-test``, an env file of generated secrets and free loopback ports), then:

1. the nightly DAG is triggered through Airflow's REST API on a three-dataset catalog (grouping,
   shedding, allocation) and runs under the scheduler in its container, its replays submitted to
   the containerised Spark master; a Spark worker container is killed while a replay runs, and
   the run still succeeds without an Airflow retry;
2. its results (summary and series tables, timing columns aside) are bit-identical to the same
   catalog and parameters run in process by ``make run`` (started before the stack, it runs
   while the stack starts and makes its first run);
3. MLflow, on PostgreSQL with its artifacts in a volume, holds each family's parent run and its
   nested runs, reachable on 127.0.0.1 only;
4. both PostgreSQL containers are restarted, a second run succeeds with the same results, and the
   first run's records (Airflow's and MLflow's) are intact;
5. the live DAG (``skewbench_live``) runs once, short, with checkpoints, on the stack's Flink (a
   JobManager and two TaskManager containers, its jobs submitted over REST with their jar) and
   Spark cluster: every routing and every final aggregate exact, Flink's own keyBy equal to the
   ``flink`` strategy's loads, the runs in MLflow;
6. the reliability check, in that run: one TaskManager container's process killed (SIGKILL from
   the host) while its last Flink phase runs; Docker restarts the container, the job resumes from
   its checkpoint on the replacement, and the run succeeds with one restart in live.json, its
   aggregates exact; the restart's times are logged;
7. ``down -v`` leaves no container, network or volume of the project.

Slow (8 minutes with the images built, 11 from nothing) and needs a Docker daemon: ``make deploy-test``
only (``SKEWBENCH_DEPLOY_TEST=1``).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from base64 import urlsafe_b64encode
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from skewbench.results import schema
from tests.integration.airflow_env import free_port

pytestmark = pytest.mark.deploy

REPO = Path(__file__).resolve().parents[2]
STATE = Path(os.environ.get("SKEWBENCH_STATE", REPO / ".skewbench"))
PROJECT = "skewbench-deploy-test"
DAG = "skewbench_nightly"
CATALOG = """
version: 1
datasets:
  - name: tiny-zipf
    sets: [paper]
    generator: zipf
    keys: 300
    tuples: 6000
    alpha: 1.2
    seed: 1
    cost: {model: levels, levels: 4, low: 1, high: 4}
  - name: tiny-drift
    sets: [paper]
    generator: drifting
    keys: 200
    seed: 2
    phases:
      - {tuples: 3000, alpha: 1.0}
      - {tuples: 3000, alpha: 1.0, permutation: new}
  - name: tiny-jobs
    sets: [paper]
    families: [allocation]
    workload: skewbench.allocation.workloads:paper_set
    params: {set: e3}
    seed: 0
"""
# the catalog's default set is empty: the run the scheduler makes when the DAG is unpaused (its
# latest cron interval) fails in check_params at once; the runs checked here name the paper set
CONF = {"catalog_set": "paper", "seeds": 1,
        "grouping_strategies": ["kg", "pkg", "osg", "flink"], "grouping_workers": [3, 5], "grouping_sources": [2],
        "shedding_strategies": ["las", "fk", "bl"], "allocation_strategies": ["td", "tl", "opt", "rstorm"]}
FAMILIES = ("grouping", "shedding", "allocation")
STAGES: dict[str, float] = {}


def log(msg: str) -> None:
    print(f"[deploy-test {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sh(*cmd: str, timeout: float = 600, check: bool = True, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, cwd=REPO, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


class Stack:
    def __init__(self, work: Path) -> None:
        images = STATE / "docker" / "images.env"
        if not images.exists():
            pytest.fail(f"{images} is missing: run make images first (make deploy-test does)")
        self.work = work
        self.ports = {"AIRFLOW_PORT": free_port(), "MLFLOW_PORT": free_port(), "SPARK_UI_PORT": free_port(),
                      "FLINK_PORT": free_port()}
        fernet = urlsafe_b64encode(secrets.token_bytes(32)).decode()
        env = {"AIRFLOW_DB_PASSWORD": secrets.token_urlsafe(24), "MLFLOW_DB_PASSWORD": secrets.token_urlsafe(24),
               "AIRFLOW_FERNET_KEY": fernet, "AIRFLOW_JWT_SECRET": secrets.token_urlsafe(32),
               "SKEWBENCH_CATALOG": "/data/catalog.yaml", **{k: str(v) for k, v in self.ports.items()}}
        lines = images.read_text().splitlines() + [f"{k}={v}" for k, v in env.items()]
        self.env_file = work / "deploy.env"
        self.env_file.write_text("\n".join(lines) + "\n")
        self.env_file.chmod(0o600)
        self.token = None
        self.commands: set[str] = set()

    # the commands of docs/deploy.md, with this test's project name and env file
    def compose(self, *args: str, timeout: float = 900, check: bool = True) -> subprocess.CompletedProcess:
        self.commands.add(" ".join(a if " " not in a else f'"{a}"' for a in args))
        # compose prefers the shell's variables to the env file's: none of make's exports (make's
        # SKEWBENCH_TRACKING_URI is this checkout's SQLite store) may reach the containers
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SKEWBENCH_", "AIRFLOW", "PYSPARK", "MLFLOW"))}
        return sh("docker-compose", "-p", PROJECT, "-f", "docker/compose.yaml", "--env-file", str(self.env_file),
                  *args, timeout=timeout, check=check, env=env)

    def container(self, service: str) -> str:
        cid = self.compose("ps", "-q", service).stdout.strip()
        assert cid, f"no container for {service}"
        return cid

    def url(self, name: str, path: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}{path}"

    def http(self, method: str, url: str, body: dict | None = None, auth: bool = True, timeout: float = 30):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if auth and self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read() or b"null")

    def airflow(self, method: str, path: str, body: dict | None = None):
        return self.http(method, self.url("AIRFLOW_PORT", "/api/v2" + path), body)

    def wait(self, what: str, probe, timeout: float = 600, every: float = 3):
        t0, last = time.monotonic(), None
        while time.monotonic() - t0 < timeout:
            try:
                got = probe()
                if got:
                    return got
            except (OSError, urllib.error.URLError, ValueError, KeyError, AssertionError) as e:
                last = e
            time.sleep(every)
        raise AssertionError(f"{what}: not within {timeout:.0f} s (last error: {last!r})")

    def spark(self) -> dict:
        return self.http("GET", self.url("SPARK_UI_PORT", "/json/"), auth=False)

    def flink(self, path: str = "/overview") -> dict:
        return self.http("GET", self.url("FLINK_PORT", path), auth=False)

    def taskmanagers(self) -> set[str]:
        """The ids of the TaskManagers the JobManager knows (a lost one until its heartbeat times out)."""
        return {t["id"] for t in self.flink("/taskmanagers")["taskmanagers"]}

    def healthy(self) -> bool:
        h = self.http("GET", self.url("AIRFLOW_PORT", "/api/v2/monitor/health"), auth=False)
        ok = all(h.get(k, {}).get("status") == "healthy" for k in ("metadatabase", "scheduler", "dag_processor"))
        with urllib.request.urlopen(self.url("MLFLOW_PORT", "/health"), timeout=10) as r:
            ok = ok and r.status == 200
        fl = self.flink()
        return ok and self.spark().get("aliveworkers") == 2 and fl.get("taskmanagers") == 2 and fl.get("slots-total") == 8

    def login(self) -> None:
        pw = json.loads(self.compose("exec", "-T", "airflow-api-server", "cat", "/data/airflow/passwords.json").stdout)
        r = self.http("POST", self.url("AIRFLOW_PORT", "/auth/token"),
                      {"username": "admin", "password": pw["admin"]}, auth=False)
        self.token = r["access_token"]

    def trigger(self, dag: str = DAG, conf: dict | None = None) -> str:
        r = self.airflow("POST", f"/dags/{dag}/dagRuns", {"logical_date": None, "conf": CONF if conf is None else conf})
        return r["dag_run_id"]

    def run_state(self, run_id: str, dag: str = DAG) -> str:
        return self.airflow("GET", f"/dags/{dag}/dagRuns/{urllib.request.quote(run_id, safe='')}")["state"]

    def tasks(self, run_id: str, dag: str = DAG) -> list[dict]:
        q = urllib.request.quote(run_id, safe="")
        return self.airflow("GET", f"/dags/{dag}/dagRuns/{q}/taskInstances?limit=1000")["task_instances"]

    def finish(self, run_id: str, timeout: float = 1800, dag: str = DAG) -> str:
        return self.wait(f"DAG run {run_id} to finish",
                         lambda: (s := self.run_state(run_id, dag)) in ("success", "failed") and s,
                         timeout=timeout, every=5)

    def results(self, run_id: str) -> Path:
        """The run's output directory, copied out of the data volume."""
        dest = self.work / "runs" / run_id.replace(":", "_").replace("+", "_")
        dest.mkdir(parents=True)
        cid = self.container("airflow-scheduler")
        found = sh("docker", "exec", cid, "sh", "-c",
                   f"ls -d /data/state/runs/*/{run_id.replace(':', '_').replace('+', '_')}").stdout.split()
        assert len(found) == 1, found
        sh("docker", "cp", f"{cid}:{found[0]}/.", str(dest))
        return dest

    def psql(self, service: str, user: str, sql: str) -> str:
        return self.compose("exec", "-T", service, "psql", "-U", user, "-d", user, "-tAc", sql).stdout.strip()


def tables(run_dir: Path) -> dict[str, object]:
    """Every results table of a run (summary and series), its timing columns dropped (the results
    contract marks them): {'<dataset>/<family>/<file>': table}."""
    out = {}
    for f in sorted(run_dir.glob("*/*/*.parquet")):
        family = f.parent.name
        t = pq.read_table(f)
        drop = [m.name for m in schema(family).table_metrics(f.stem) if m.timing and m.name in t.column_names]
        out[str(f.relative_to(run_dir))] = t.drop_columns(drop)
    return out


def assert_identical(got: Path, want: Path) -> int:
    a, b = tables(got), tables(want)
    assert a.keys() == b.keys(), (sorted(a), sorted(b))
    for k in a:
        assert a[k].schema == b[k].schema, k
        assert a[k].equals(b[k]), f"{k} differs from the in-process run"
    return len(a)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, in_process_job):
    work = tmp_path_factory.mktemp("deploy")
    (work / "seed").mkdir()
    (work / "seed" / "catalog.yaml").write_text(CATALOG)
    s = Stack(work)
    t0 = time.monotonic()
    try:
        # the data volume gets the catalog before anything reads it
        s.compose("run", "--rm", "-v", f"{work / 'seed'}:/seed:ro", "--entrypoint", "cp", "client",
                  "/seed/catalog.yaml", "/data/catalog.yaml")
        s.compose("up", "-d")
        s.wait("the stack to be healthy (Airflow, MLflow, Spark with 2 workers, Flink with 2 TaskManagers of 4 slots)",
               s.healthy, timeout=900)
        s.login()
        s.wait("the nightly DAG to be parsed", lambda: s.airflow("GET", f"/dags/{DAG}")["dag_id"], timeout=300)
        assert s.airflow("GET", "/importErrors")["total_entries"] == 0
        s.airflow("PATCH", f"/dags/{DAG}", {"is_paused": False})
        STAGES["stack up"] = time.monotonic() - t0
        log(f"stack up in {STAGES['stack up']:.0f} s; ports {s.ports}")
        yield s
    finally:
        t0 = time.monotonic()
        if os.environ.get("SKEWBENCH_DEPLOY_KEEP") != "1":
            logs = s.compose("logs", "--no-color", "--tail", "300", check=False, timeout=120)
            (work / "compose.log").write_text(logs.stdout + logs.stderr)
            log(f"the services' last log lines: {work / 'compose.log'}")
            s.compose("down", "-v", "--remove-orphans", timeout=600)
            label = f"label=com.docker.compose.project={PROJECT}"
            left = {kind: sh("docker", kind, "ls", *(["-a"] if kind == "container" else []), "-q", "--filter", label
                             ).stdout.split() for kind in ("container", "network", "volume")}
            STAGES["stack down"] = time.monotonic() - t0
            # docs/deploy.md gives these commands (its project name, env file and seed directory)
            docs = (REPO / "docs" / "deploy.md").read_text()
            base = "docker-compose -p skewbench -f docker/compose.yaml --env-file docker/.env "
            missing = [c for c in sorted(s.commands)
                       if not c.startswith(("ps ", "exec ", "logs ")) and
                       base + c.replace(f"-v {work / 'seed'}:", '-v "$PWD/seed:').replace("/seed:ro ", '/seed:ro" ') not in docs]
            log("stages: " + ", ".join(f"{k} {v:.0f} s" for k, v in STAGES.items()))
            assert not any(left.values()), f"left behind: {left}"
            assert not missing, f"commands run but not in docs/deploy.md: {missing}"


@pytest.fixture(scope="module")
def in_process_job(tmp_path_factory):
    """The same catalog and parameters, run in process by make run (dag.test(), local Spark,
    SQLite), started before the stack in a process group of its own: it runs while the stack
    starts and makes its first run (one after the other, they took 92 s + 61 s + 93 s)."""
    work = tmp_path_factory.mktemp("inproc")
    (work / "catalog.yaml").write_text(CATALOG)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SKEWBENCH_", "AIRFLOW", "MAKE", "MFLAGS", "DOCKER_HOST", "PYSPARK"))}
    env["SKEWBENCH_CATALOG"] = str(work / "catalog.yaml")
    out = (work / "make-run.log").open("w")
    t0 = time.monotonic()
    proc = subprocess.Popen(["make", "-s", "run", f"STATE={work / 'state'}", f"RUN_CONF={json.dumps(CONF)}"],
                            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield work, proc, t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        out.close()


def finished(in_process_job) -> Path:
    """make run's results directory, once it has finished."""
    work, proc, t0 = in_process_job
    try:
        rc = proc.wait(timeout=max(1.0, 1800 - (time.monotonic() - t0)))
    except subprocess.TimeoutExpired:
        rc = None
    text = (work / "make-run.log").read_text()
    assert rc == 0, f"make run exited {rc}:\n{text[-6000:]}"
    STAGES.setdefault("make run in process (beside the stack)", time.monotonic() - t0)
    runs = [p for p in (work / "state" / "runs").glob("*/*") if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


@pytest.fixture(scope="module")
def in_process(in_process_job) -> Path:
    return finished(in_process_job)


RUNS: dict[str, str] = {}


def test_nightly_on_the_cluster_with_a_worker_killed(stack, in_process_job):
    t0 = time.monotonic()
    run_id = stack.trigger()
    RUNS["first"] = run_id
    log(f"triggered {run_id}")
    # a replay is running on the cluster: its application holds an executor on each worker
    app = stack.wait("a replay to run on the Spark cluster",
                     lambda: next((a for a in stack.spark().get("activeapps", [])
                                   if a["name"].startswith("skewbench") and a.get("cores", 0) >= 2),
                                  None), timeout=1200, every=0.5)
    worker = stack.container("spark-worker-1")
    sh("docker", "kill", worker)
    log(f"killed spark-worker-1 while {app['name']} ({app['id']}) ran")
    assert stack.finish(run_id) == "success", stack.tasks(run_id)
    STAGES["nightly run 1 (worker killed)"] = time.monotonic() - t0
    tis = stack.tasks(run_id)
    assert tis and all(ti["state"] in ("success", "skipped") for ti in tis), \
        [(t["task_id"], t["map_index"], t["state"]) for t in tis if t["state"] not in ("success", "skipped")]
    replays = [t for t in tis if t["task_id"].endswith(".replay")]
    assert len(replays) >= 3 and all(t["state"] == "success" for t in replays)
    # the Spark job recovered by itself: no replay was retried by Airflow
    assert all(t["try_number"] == 1 for t in replays), [(t["task_id"], t["try_number"]) for t in replays]
    # run by the scheduler's LocalExecutor in its container (its hostname), not by dag.test()
    scheduler_host = sh("docker", "inspect", "-f", "{{.Config.Hostname}}", stack.container("airflow-scheduler")
                        ).stdout.strip()
    assert {t["hostname"] for t in tis if t["state"] == "success"} == {scheduler_host}
    assert stack.airflow("GET", f"/dags/{DAG}/dagRuns/{urllib.request.quote(run_id, safe='')}")["run_type"] == "manual"
    # every replay ran as an application of the containerised master, the one the kill hit included
    done = {a["id"]: a for a in stack.spark()["completedapps"] if a["name"].startswith("skewbench")}
    assert done[app["id"]]["state"] == "FINISHED", done[app["id"]]
    assert len(done) >= len(replays)
    # the kill hit a running replay: its Spark driver (in the scheduler container) saw the worker go
    logs = sh("docker", "exec", stack.container("airflow-scheduler"), "sh", "-c",
              f"cat '/data/airflow/logs/dag_id={DAG}/run_id={run_id}'/task_id=*.replay/*/attempt=1.log").stdout
    assert "Master removed worker" in logs or "Lost executor" in logs
    # a worker killed with docker stays down (restart: unless-stopped); started again, it rejoins
    sh("docker", "start", worker)
    stack.wait("spark-worker-1 to rejoin", lambda: stack.spark().get("aliveworkers") == 2, timeout=300)

    stats = sh("docker", "stats", "--no-stream", "--format", "{{.Name}} {{.MemUsage}}").stdout
    log("memory after run 1:\n" + stats)
    n = assert_identical(stack.results(run_id), finished(in_process_job))
    log(f"run 1: {len(tis)} task instances succeeded, {n} results tables identical to make run's")


def test_mlflow_on_postgresql_loopback_only(stack):
    import mlflow

    client = mlflow.MlflowClient(stack.url("MLFLOW_PORT", ""))
    run_id = RUNS["first"]
    parents = client.search_runs([e.experiment_id for e in client.search_experiments()],
                                 f"tags.`skewbench.run_id` = '{run_id}'")
    parents = [p for p in parents if "mlflow.parentRunId" not in p.data.tags]
    if not parents:  # say what the server holds
        for e in client.search_experiments():
            runs = client.search_runs([e.experiment_id], max_results=3)
            log(f"experiment {e.name}: {[(r.info.run_name, r.data.tags.get('skewbench.run_id')) for r in runs]}")
    assert sorted(p.info.run_name.split()[0] for p in parents) == sorted(FAMILIES)
    for p in parents:
        assert p.info.status == "FINISHED", p.info
        kids = client.search_runs([p.info.experiment_id], f"tags.`mlflow.parentRunId` = '{p.info.run_id}'")
        assert kids and all(k.info.status == "FINISHED" for k in kids), p.info.run_name
        assert client.list_artifacts(p.info.run_id), p.info.run_name
        # the artifacts are files in the mlflow-artifacts volume
        found = stack.compose("exec", "-T", "mlflow", "sh", "-c",
                              f"find /mlflow-artifacts -path '*{p.info.run_id}*' -type f | head -1").stdout.strip()
        assert found, p.info.run_name
    # the runs are rows of PostgreSQL's runs table
    n_rest = sum(len(client.search_runs([e.experiment_id], max_results=5000)) for e in client.search_experiments())
    assert int(stack.psql("mlflow-db", "mlflow", "select count(*) from runs where lifecycle_stage = 'active'")) == n_rest
    # published on loopback only: the host's other addresses refuse the ports
    for name in ("MLFLOW_PORT", "AIRFLOW_PORT", "SPARK_UI_PORT"):
        port = stack.ports[name]
        bindings = sh("docker", "port", stack.container({"MLFLOW_PORT": "mlflow", "AIRFLOW_PORT": "airflow-api-server",
                                                          "SPARK_UI_PORT": "spark-master"}[name])).stdout.split()
        assert all(b.startswith("127.0.0.1:") for b in bindings if ":" in b and b != "->"), bindings
        for addr in sh("hostname", "-I").stdout.split():
            if ":" in addr:
                continue
            with socket.socket() as sock, pytest.raises(ConnectionRefusedError, match="refused"):
                sock.settimeout(5)
                sock.connect((addr, port))


def test_postgresql_restarted_between_runs(stack, in_process):
    first = RUNS["first"]
    before_tis = sorted((t["task_id"], t["map_index"], t["state"]) for t in stack.tasks(first))
    import mlflow

    client = mlflow.MlflowClient(stack.url("MLFLOW_PORT", ""))
    exps = [e.experiment_id for e in client.search_experiments()]
    before_runs = {r.info.run_id: (r.info.status, r.data.metrics) for r in client.search_runs(exps, max_results=5000)}
    t0 = time.monotonic()
    stack.compose("restart", "airflow-db", "mlflow-db")
    for svc in ("airflow-db", "mlflow-db"):
        cid = stack.container(svc)
        stack.wait(f"{svc} healthy again", lambda: sh("docker", "inspect", "-f", "{{.State.Health.Status}}", cid
                                                       ).stdout.strip() == "healthy", timeout=300)
    stack.wait("the stack healthy again", stack.healthy, timeout=600)
    second = stack.trigger()
    RUNS["second"] = second
    assert stack.finish(second) == "success", stack.tasks(second)
    STAGES["PostgreSQL restart + nightly run 2"] = time.monotonic() - t0
    assert all(t["state"] in ("success", "skipped") for t in stack.tasks(second))
    n = assert_identical(stack.results(second), in_process)
    # the first run's records, Airflow's and MLflow's, are as they were
    assert stack.run_state(first) == "success"
    assert sorted((t["task_id"], t["map_index"], t["state"]) for t in stack.tasks(first)) == before_tis
    after = {r.info.run_id: (r.info.status, r.data.metrics) for r in client.search_runs(exps, max_results=5000)}
    assert {k: after.get(k) for k in before_runs} == before_runs
    assert len(after) > len(before_runs)
    log(f"run 2 after the PostgreSQL restart: success, {n} tables identical; run 1's "
        f"{len(before_tis)} task instances and {len(before_runs)} MLflow runs intact")


LIVE = "skewbench_live"
#: the live run on the stack, short: 10 s of stream a phase, once, both engines at parallelism 2 (the
#: Spark cluster has two one-core workers, a stage needs a task slot per worker); on each engine one
#: routed strategy (kg), the engine's own routing and the other engine's as a routed strategy (what
#: the stack adds is the same for every routed strategy; their agreement with the predictions is
#: the timing checks'); a cost of 5 ms, so that the calibration's plausibility checks (a per-record
#: overhead over half the cost, before and after more than 25% apart) are not tripped by the stack's
#: other services sharing the cores; checkpoints every 2 s, for the reliability check: one
#: TaskManager's process killed in the last Flink phase (after a TaskManager is lost, Flink's
#: REST metrics of the jobs after it are not refreshed; no other phase runs after it but its
#: second run). One run for both checks: two took 186 + 153 s; with pkg and sg as well, 245 s
LIVE_CONF = {"datasets": ["tiny-zipf"], "engines": ["flink", "spark"], "strategies": ["kg", "flink", "spark-sql"],
             "workers": 2, "duration": 10, "repeat": 1, "cost": "5", "spark_tuples": 600, "checkpoint_interval": 2,
             "capacity_search": False}
#: a Flink phase's tuples: duration seconds at the default load (62.5% of workers x 1000 / cost per second)
LIVE_TUPLES = round(10 * 0.625 * 2 * 1000 / 5)
#: the Flink phases run in the strategies' order: the last one is killed
KILLED_PHASE = "spark-sql#1"
KILLED = "flink-taskmanager-1"


def live_result(stack: Stack, run_id: str, dataset: str = "tiny-zipf") -> dict:
    """A live DAG run's live.json, read from the data volume."""
    cid = stack.container("airflow-scheduler")
    safe = run_id.replace(":", "_").replace("+", "_")
    found = sh("docker", "exec", cid, "sh", "-c", f"ls /data/state/runs/*/live-{safe}/{dataset}/live.json").stdout.split()
    assert len(found) == 1, found
    return json.loads(sh("docker", "exec", cid, "cat", found[0]).stdout)


def inspect(cid: str, fmt: str) -> str:
    return sh("docker", "inspect", "-f", fmt, cid).stdout.strip()


@pytest.fixture(scope="module")
def live_run(stack):
    """The live DAG through the scheduler, a TaskManager container's main process killed from the
    host in its last Flink phase (SIGKILL: the process dies as in a crash, so Docker restarts the
    container, which ``docker kill`` would not: that counts as a manual stop): the run's id, its
    live.json, its task instances, the host's times of the kill and the TaskManagers."""
    job_name = f"skewbench-live {KILLED_PHASE}"
    t0 = time.monotonic()
    stack.wait("the live DAG to be parsed", lambda: stack.airflow("GET", f"/dags/{LIVE}")["dag_id"], timeout=300)
    stack.airflow("PATCH", f"/dags/{LIVE}", {"is_paused": False})
    cid = stack.container(KILLED)
    before = stack.taskmanagers()
    assert len(before) == 2, before
    restarts_before = int(inspect(cid, "{{.RestartCount}}"))
    run_id = stack.trigger(LIVE, LIVE_CONF)
    log(f"triggered {run_id}: {job_name} with checkpoints every 2 s, {KILLED} to be killed in it")

    def running() -> dict | None:
        """The phase's job once it has run a few seconds and completed a checkpoint to resume from."""
        if stack.run_state(run_id, LIVE) in ("success", "failed"):
            pytest.fail(f"the live run ended before {job_name} ran: {stack.tasks(run_id, LIVE)}")
        job = next((j for j in stack.flink("/jobs/overview")["jobs"] if j["name"] == job_name and j["state"] == "RUNNING"),
                   None)
        if job is None or job["duration"] < 5000:
            return None
        done = stack.flink(f"/jobs/{job['jid']}/checkpoints")["counts"]["completed"]
        return {**job, "checkpoints": done} if done >= 1 else None

    job = stack.wait(f"{job_name} to run for 5 s with a checkpoint", running, timeout=1200, every=0.5)
    pid = int(inspect(cid, "{{.State.Pid}}"))
    assert pid > 0
    killed_us = time.time_ns() // 1000
    t_kill = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    log(f"killed {KILLED}'s main process (pid {pid} on the host) {job['duration'] / 1000:.1f} s into {job_name} "
        f"({job['checkpoints']} checkpoints completed)")
    stack.wait(f"Docker to restart {KILLED}", lambda: int(inspect(cid, "{{.RestartCount}}")) > restarts_before
               and inspect(cid, "{{.State.Running}}") == "true", timeout=120, every=0.2)
    t_container = time.monotonic() - t_kill
    # the JobManager has dropped the lost TaskManager and registered its replacement: two again
    replaced = stack.wait("the replacement TaskManager to register with the JobManager",
                          lambda: (ids := stack.taskmanagers()) != before and len(ids) == 2 and len(ids & before) == 1
                          and stack.flink().get("slots-total") == 8 and ids, timeout=300, every=0.5)
    t_registered = time.monotonic() - t_kill
    state = stack.finish(run_id, dag=LIVE)
    tis = stack.tasks(run_id, LIVE)
    assert state == "success", [(t["task_id"], t["state"], t["try_number"]) for t in tis]
    STAGES["live run (Flink and Spark), a TaskManager killed"] = time.monotonic() - t0
    return {"run_id": run_id, "result": live_result(stack, run_id), "tasks": tis, "killed_us": killed_us,
            "t_container": t_container, "t_registered": t_registered, "replaced": replaced, "cid": cid}


def test_live_dag_on_the_stacks_flink_and_spark(stack, live_run):
    """The live DAG through the scheduler: its Flink jobs on the stack's JobManager (submitted over
    REST with their jar; the TaskManagers read and write the run's files in the data volume),
    its Spark stages on the stack's cluster; every routing exact, every final aggregate exact,
    Flink's keyBy and Spark SQL's repartition equal to the strategies that model them; the runs in
    MLflow."""
    import mlflow

    run_id, res = live_run["run_id"], live_run["result"]
    rows = res["rows"]
    # on Flink kg and spark-sql routed by their Java routers in the sources (the default), flink natively;
    # on Spark kg and flink by the replay's decisions, spark-sql natively
    assert {(r["engine"], r["strategy"], r["routing"]) for r in rows} == {
        ("flink", "kg", "engine"), ("flink", "spark-sql", "engine"), ("flink", "flink", "native"),
        ("spark", "kg", "routed"), ("spark", "flink", "routed"), ("spark", "spark-sql", "native")}
    for r in rows:
        assert r["subtask_records"] == r["decided_records"] and r["routing_exact"], r
        assert r["tuples_executed"] == (LIVE_TUPLES if r["engine"] == "flink" else 600), r
        assert r["throughput_measured"] > 0 and r["repeat"] == 1, r
        if r["engine"] == "flink":  # the keyed windowed aggregation, its finals exact
            assert r["job"] == "agg" and r["aggregates_exact"] and r["cluster"] == "flink-jobmanager:8081", r
    native = {r["engine"]: r for r in rows if r["routing"] == "native"}
    assert native["flink"]["strategy"] == "flink" and native["spark"]["strategy"] == "spark-sql"
    assert [r["phase"] for r in res["restarts"]] == [KILLED_PHASE]  # the kill's, no other
    # the jobs ran on the stack's JobManager (its REST API lists them), not on a local Flink
    jobs = stack.flink("/jobs/overview")["jobs"]
    names = [j["name"] for j in jobs if j["state"] == "FINISHED"]
    assert {f"skewbench-live {n}#1" for n in ("kg", "flink (native)", "spark-sql")} <= set(names), names
    client = mlflow.MlflowClient(stack.url("MLFLOW_PORT", ""))
    exp = client.get_experiment_by_name("skewbench-live")
    parents = [p for p in client.search_runs([exp.experiment_id], f"tags.`skewbench.key` = '{LIVE}/{run_id}'")]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED", parents
    kids = client.search_runs([exp.experiment_id], f"tags.`mlflow.parentRunId` = '{parents[0].info.run_id}'")
    assert len(kids) == len(rows) and all(k.info.status == "FINISHED" for k in kids)
    log(f"live run: {len(rows)} phases, every routing and aggregate exact; {len(names)} Flink jobs on the stack's "
        f"JobManager")


def test_live_dag_outlives_a_taskmanager_killed(stack, live_run):
    """The reliability check on the stack, in the same run: the job restarts from its last
    checkpoint once the replacement has registered; the run notices (Flink's exception history),
    checks that the final aggregates stayed exact, records the restart in live.json, warms the
    cluster up and runs the phase again: the DAG run succeeds without an Airflow retry."""
    tis, res, cid = live_run["tasks"], live_run["result"], live_run["cid"]
    # no Airflow retry: the run itself handled the restart
    assert [t["try_number"] for t in tis if t["task_id"] == "run_live"] == [1], tis
    assert res["attempt"] == 1
    restarts = res["restarts"]
    assert len(restarts) == 1, restarts
    r = restarts[0]
    assert r["phase"] == KILLED_PHASE and r["aggregates_exact"] is True and r["attempts"] >= 2, r
    assert r["failures"] and r["restart_s"] is not None and r["restart_s"] > 0, r
    (row,) = [x for x in res["rows"] if x["strategy"] == KILLED_PHASE.split("#")[0] and x["engine"] == "flink"]
    assert row["routing_exact"] and row["aggregates_exact"], row
    assert row["subtask_records"] == row["decided_records"]
    # the stack is whole again: two TaskManagers, 8 slots, the killed one's container the same
    assert stack.taskmanagers() == live_run["replaced"] and stack.flink().get("slots-total") == 8
    assert stack.container(KILLED) == cid
    # the restart's times: the host's (kill, Docker's restart, the replacement's registration) and
    # the run's (Flink's failure, the first tuple a restarted task ran), on one clock
    start_us = min(int(f["us"]) for f in r["failures"]) - r["failed_ms"] * 1000
    kill_ms = (live_run["killed_us"] - start_us) / 1000
    resumed_after = (r["resumed_ms"] - kill_ms) / 1000
    log(f"restart: {KILLED} killed {kill_ms / 1000:.1f} s into the phase; Docker restarted its container after "
        f"{live_run['t_container']:.1f} s, the replacement registered after {live_run['t_registered']:.1f} s; Flink saw "
        f"the failure {(r['failed_ms'] - kill_ms) / 1000:.1f} s after the kill and the job resumed from its checkpoint "
        f"{resumed_after:.1f} s after it (restart_s {r['restart_s']:.1f} s from the failure, {r['attempts']} attempts, "
        f"{r['finals_replayed']} finals replayed with equal aggregates)")
    assert 0 < resumed_after < 300, (kill_ms, r)
