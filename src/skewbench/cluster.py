"""A Spark standalone cluster on loopback, from the installed pyspark: one master and N workers.

The pip distribution of pyspark has no ``sbin/start-*.sh`` scripts, so the daemons are started
with ``bin/spark-class``: ``org.apache.spark.deploy.master.Master --host 127.0.0.1 --port P``
and ``org.apache.spark.deploy.worker.Worker --cores C spark://127.0.0.1:P``.  Every daemon runs
in its own process group, recorded in ``<state>/cluster.json``; :func:`stop` ends exactly those
groups (never by name).  Everything listens on 127.0.0.1 only.

``make cluster`` / ``make cluster-stop`` (``skewbench cluster start|stop|status``) use this; so
does the test fixture that replays through the cluster.  Point the pipeline at it with
``SKEWBENCH_SPARK_MASTER=spark://127.0.0.1:<port>``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

from skewbench.errors import SkewbenchError

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


@dataclass
class Cluster:
    """A running cluster: its master URL, web UI and the process groups of its daemons."""

    master_url: str
    webui: str
    pgids: dict[str, int] = field(default_factory=dict)
    workdir: str = ""

    def status(self) -> dict:
        """The master's JSON status (``aliveworkers``, ``cores``, ``activeapps``, ...)."""
        with urllib.request.urlopen(f"{self.webui}/json/", timeout=5) as r:
            return json.load(r)


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _env(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.update(SPARK_LOCAL_IP="127.0.0.1", SPARK_HOME=str(spark_home()),
               SPARK_WORKER_DIR=str(workdir / "work"), SPARK_LOG_DIR=str(workdir / "logs"),
               # the daemons' own JVMs stay small; executors get spark.executor.memory
               SPARK_DAEMON_MEMORY=env.get("SPARK_DAEMON_MEMORY", "512m"))
    return env


def _spawn(args: list[str], log: Path, env: dict[str, str]) -> int:
    with open(log, "ab") as out:
        p = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], stdout=out,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                             start_new_session=True)
    return p.pid


def start(workdir: str | Path, workers: int = 2, cores: int = 1, memory: str = "2g",
          port: int | None = None, webui_port: int | None = None, timeout: float = 90.0) -> Cluster:
    """Start a master and ``workers`` workers of ``cores`` cores each; return once all are alive.

    State (logs, the workers' scratch directories, ``cluster.json``) goes under ``workdir``.
    Raises :class:`SkewbenchError` (after stopping what it started) if the cluster does not come up
    within ``timeout`` seconds.
    """
    workdir = Path(workdir).resolve()
    if (workdir / "cluster.json").exists():
        raise SkewbenchError(f"a cluster is already recorded in {workdir / 'cluster.json'}; "
                             "stop it first (make cluster-stop)")
    (workdir / "logs").mkdir(parents=True, exist_ok=True)
    env = _env(workdir)
    log = workdir / "logs" / "master.log"
    offset = log.stat().st_size if log.exists() else 0
    # port 0 lets the master bind a free port itself; a port picked here could be taken by another
    # process before the master binds it, and Spark then silently moves to the next port, where
    # something else's page answers (the addresses are read back from the master's log)
    cl = Cluster("", "", workdir=str(workdir))
    cl.pgids["master"] = _spawn([MASTER_CLASS, "--host", "127.0.0.1", "--port", str(port or 0),
                                 "--webui-port", str(webui_port or 0)], log, env)
    _record(cl)
    try:
        bound: dict[str, int] = {}
        master = cl.pgids["master"]
        _wait(lambda: _bound_ports(log, offset, bound) or _exited(master, log), timeout, "the master", log)
        cl.master_url = f"spark://127.0.0.1:{bound['sparkMaster']}"
        cl.webui = f"http://127.0.0.1:{bound['MasterUI']}"
        _record(cl)
        _wait(lambda: cl.status(), timeout, "the master", log)
        for i in range(workers):
            cl.pgids[f"worker-{i + 1}"] = _spawn(
                [WORKER_CLASS, "--host", "127.0.0.1", "--cores", str(cores), "--memory", memory,
                 "--webui-port", "0", "--work-dir", str(workdir / "work"), cl.master_url],
                workdir / "logs" / f"worker-{i + 1}.log", env)
            _record(cl)
        _wait(lambda: cl.status()["aliveworkers"] >= workers or None, timeout, f"{workers} workers",
              workdir / "logs" / "worker-1.log")
    except BaseException:
        stop(workdir)
        raise
    return cl


_STARTED = re.compile(r"Successfully started service '(sparkMaster|MasterUI)' on port (\d+)")


def _exited(pgid: int, log: Path) -> bool:
    if _alive(pgid):
        return False
    raise SkewbenchError(f"the Spark master exited while starting (log {log}{_last_line(log)})")


def _bound_ports(log: Path, offset: int, bound: dict[str, int]) -> bool:
    """Fill ``bound`` with the ports the master's log says it bound since ``offset``; True once
    both the master's and its web UI's are there."""
    if log.exists():
        with open(log, "rb") as f:
            f.seek(offset)
            for name, port in _STARTED.findall(f.read().decode(errors="replace")):
                bound[name] = int(port)
    return len(bound) == 2


def _record(cl: Cluster) -> None:
    path = Path(cl.workdir) / "cluster.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(cl), indent=1))
    tmp.replace(path)


def _wait(probe, timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if probe():
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise SkewbenchError(f"{what} did not come up within {timeout:g} s (log {log}{_last_line(log)})")


def _last_line(log: Path) -> str:
    """``": <the log's last line>"``, or nothing when there is none."""
    tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
    return f": {tail[0][:200]}" if tail else ""


def load(workdir: str | Path) -> Cluster | None:
    """The cluster recorded under ``workdir``, or None."""
    path = Path(workdir).resolve() / "cluster.json"
    if not path.exists():
        return None
    return Cluster(**json.loads(path.read_text()))


def _alive(pgid: int) -> bool:
    try:  # reap the leader if it is this process's child (a zombie still counts for killpg)
        os.waitpid(pgid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def stop(workdir: str | Path, grace: float = 10.0) -> list[str]:
    """Stop the daemons recorded under ``workdir`` (workers first), by process group; return
    the names of those that were running."""
    cl = load(workdir)
    if cl is None:
        return []
    stopped = []
    for name, pgid in sorted(cl.pgids.items(), key=lambda kv: kv[0] == "master"):
        if not _alive(pgid):
            continue
        os.killpg(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while _alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(pgid):
            os.killpg(pgid, signal.SIGKILL)
        stopped.append(name)
    (Path(cl.workdir) / "cluster.json").unlink(missing_ok=True)
    return stopped
