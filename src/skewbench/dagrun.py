"""Run an Airflow DAG once from a script, its tasks on both cores (``make run``; the tests' runs).

``dag.test()`` runs the ready tasks one after another in the calling process. With
``use_executor=True`` it hands each ready task to the configured executor instead: Airflow's
LocalExecutor runs up to ``parallelism`` of them at once, each in a process of its own, which
report to an API server's Execution API (Airflow 3: a task never writes to the metadata database
itself). :func:`run_once` starts that API server for the run on a free loopback port (one worker
process, its log beside the run's), points the executor at it, runs the DAG and stops the server
by its process group; the DAG run, its tasks and what they write are those of a serial
``dag.test()``, only their order in time differs.

While the run goes, ``on_states`` gets every second the task instances' states (``task_id`` or
``task_id[map_index]`` -> state), read from the metadata database by a thread of its own.
This module imports Airflow only inside its functions.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from skewbench.errors import SkewbenchError

#: tasks at once under make run: the machine's two cores
DEFAULT_PARALLELISM = 2
#: seconds the API server may take to answer (its start imports Airflow's web stack)
START_TIMEOUT_S = 180.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


@contextmanager
def api_server(log_path: str | os.PathLike, timeout_s: float = START_TIMEOUT_S) -> Iterator[str]:
    """An Airflow API server on a free loopback port for the block (one worker; its output in
    ``log_path``), its base URL yielded once it answers; stopped by its process group after.
    :class:`SkewbenchError` with the log's last lines when it exits or does not answer in time."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "AIRFLOW__API__HOST": "127.0.0.1", "AIRFLOW__API__PORT": str(port),
           "AIRFLOW__API__WORKERS": "1", "AIRFLOW__API__BASE_URL": url}
    airflow = Path(sys.executable).with_name("airflow")
    log = Path(log_path)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(airflow), "api-server", "--host", "127.0.0.1", "--port", str(port)], env=env,
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        t0 = time.monotonic()
        while not _answers(f"{url}/api/v2/version"):
            if proc.poll() is not None or time.monotonic() - t0 > timeout_s:
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
                what = f"exited with {proc.returncode}" if proc.poll() is not None else \
                    f"did not answer in {timeout_s:.0f} s"
                raise SkewbenchError(f"Airflow's API server for the run {what} (log {log}):\n{tail}")
            time.sleep(0.5)
        yield url
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group, 15 s to leave, then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=15)


def prepare(parallelism: int = DEFAULT_PARALLELISM) -> None:
    """Set this process up for :func:`run_once` with ``parallelism`` tasks at once: call it before
    anything imports Airflow (its executors take the parallelism when first imported);
    :class:`SkewbenchError` when they were imported with another one."""
    if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
        raise SkewbenchError(f"the parallelism of a run is a positive integer, got {parallelism!r}")
    os.environ["AIRFLOW__CORE__PARALLELISM"] = str(parallelism)
    os.environ["AIRFLOW__CORE__EXECUTOR"] = "LocalExecutor"
    loaded = sys.modules.get("airflow.executors.base_executor")
    if loaded is not None and loaded.PARALLELISM != parallelism:
        raise SkewbenchError(f"Airflow's executors were imported with a parallelism of {loaded.PARALLELISM}, not "
                             f"{parallelism}: call skewbench.dagrun.prepare before importing Airflow")


def parallelism() -> int:
    """The tasks at once a run of this process gets (:func:`prepare`; Airflow's own default else)."""
    from airflow.configuration import conf

    return conf.getint("core", "parallelism")


def _configure(url: str) -> None:
    """The executor's tasks report to the API server at ``url`` (the environment for the processes
    it starts, Airflow's configuration for this one)."""
    from airflow.configuration import conf

    values = {("core", "execution_api_server_url"): f"{url}/execution/", ("api", "base_url"): url}
    for (section, key), v in values.items():
        os.environ[f"AIRFLOW__{section.upper()}__{key.upper()}"] = v
        conf.set(section, key, v)


def task_states(dag_id: str, after_id: int) -> tuple[int | None, dict[str, str]]:
    """The newest run of ``dag_id`` with a database id above ``after_id``: (its id, its task
    instances' states), or (None, {}) before it exists."""
    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        run = (session.query(DagRun.id, DagRun.run_id).filter(DagRun.dag_id == dag_id, DagRun.id > after_id)
               .order_by(DagRun.id.desc()).first())
        if run is None:
            return None, {}
        rows = session.query(TaskInstance.task_id, TaskInstance.map_index, TaskInstance.state).filter(
            TaskInstance.dag_id == dag_id, TaskInstance.run_id == run.run_id).all()
    return run.id, {(t if m < 0 else f"{t}[{m}]"): str(s.value if hasattr(s, "value") else s) for t, m, s in rows}


def _last_run_id(dag_id: str) -> int:
    from sqlalchemy import func

    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as session:
        return int(session.query(func.max(DagRun.id)).filter(DagRun.dag_id == dag_id).scalar() or 0)


def run_once(dag: Any, conf: Mapping[str, Any], *, log_dir: str | os.PathLike,
             on_states: Callable[[dict[str, str]], None] | None = None, **test_kwargs: Any) -> Any:
    """Run ``dag`` once with ``conf`` (its DagRun returned, as ``dag.test()``'s), up to
    :func:`parallelism` tasks at once (module docstring; :func:`prepare` sets it); a parallelism
    of 1 runs ``dag.test()`` as it is, in this process, without an API server. ``test_kwargs`` go
    to ``dag.test()`` (``logical_date``, say)."""
    tasks_at_once = parallelism()
    after = _last_run_id(dag.dag_id)
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(1.0):
            try:
                _, states = task_states(dag.dag_id, after)
            except Exception:  # noqa: BLE001 - a busy database: next second
                continue
            if states:
                on_states(states)

    watcher = threading.Thread(target=watch, name="skewbench-dagrun-states", daemon=True)
    if on_states is not None:
        watcher.start()
    try:
        if tasks_at_once == 1:
            return dag.test(run_conf=dict(conf), **test_kwargs)
        with api_server(Path(log_dir) / "api-server.log") as url:
            _configure(url)
            return dag.test(run_conf=dict(conf), use_executor=True, **test_kwargs)
    finally:
        stop.set()
        if watcher.is_alive():
            watcher.join(timeout=5)


def critical_path(seconds: Mapping[str, float], upstream: Mapping[str, list[str]]) -> tuple[float, list[str]]:
    """The longest chain of dependent task instances, by their durations: (its seconds, its task
    instances in order). ``seconds`` is each instance's duration (``task_id`` or
    ``task_id[map_index]``), ``upstream`` each task id's direct upstream task ids; an instance
    depends on every instance of its upstream tasks. Instances without a duration (never run)
    count 0 s; an unknown upstream task is ignored."""
    by_task: dict[str, list[str]] = {}
    for name in seconds:
        by_task.setdefault(name.split("[", 1)[0], []).append(name)
    memo: dict[str, tuple[float, list[str]]] = {}

    def longest(name: str, seen: frozenset[str]) -> tuple[float, list[str]]:
        if name in memo:
            return memo[name]
        if name in seen:
            raise SkewbenchError(f"the task graph has a cycle through {name}")
        best: tuple[float, list[str]] = (0.0, [])
        for up in upstream.get(name.split("[", 1)[0], ()):
            for inst in by_task.get(up, ()):
                cand = longest(inst, seen | {name})
                if cand[0] > best[0]:
                    best = cand
        memo[name] = (best[0] + float(seconds[name]), best[1] + [name])
        return memo[name]

    return max((longest(n, frozenset()) for n in seconds), key=lambda c: c[0], default=(0.0, []))
