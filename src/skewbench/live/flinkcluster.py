"""A Flink standalone cluster on loopback for a live run: one JobManager and ``taskmanagers``
TaskManagers, each a separate process started from the Flink environment's own distribution
(PyFlink 2.3's ``bin/jobmanager.sh`` and ``bin/taskmanager.sh start-foreground``), so that the
records between a job's sources and its workers cross Flink's network stack.

Everything listens on 127.0.0.1 (RPC, REST, blob and data ports); the configuration, logs and
temporary files live in one directory.  :func:`local_cluster` starts it, waits until every
TaskManager has registered, and stops it when the block ends, whatever happens: every process
group it started (the TaskManagers first), then a watchdog that would have killed them had this
process died first.  The directory is removed unless the block failed (its logs then stay for
the message that names them) or ``SKEWBENCH_KEEP_CLUSTER=1``.  :meth:`FlinkCluster.kill_taskmanager` kills one TaskManager (a
crash, SIGKILL) and :meth:`FlinkCluster.start_taskmanager` starts a replacement, as a
supervisor would.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from skewbench.errors import SkewbenchError
from skewbench.live.ports import free_port

#: the TaskManagers of the default local cluster
TASKMANAGERS = 2
JM_MEMORY = "1024m"
TM_MEMORY = "1280m"
#: how often Flink's REST API refreshes the metrics it serves (LiveJob.java sets the same for the
#: mini-cluster): a polled counter is up to this old, so a rate over a window of w seconds read
#: from two polls is within (w +- this) / w of the true one
METRICS_FETCHER_MS = 500
LOG4J = """rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
appender.file.name = file
appender.file.type = File
appender.file.fileName = ${sys:log.file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{HH:mm:ss,SSS} %-5p %c{1} - %m%n
logger.netty.name = org.apache.flink.shaded.netty4
logger.netty.level = WARN
logger.pekko.name = org.apache.pekko
logger.pekko.level = WARN
"""


@dataclass
class FlinkCluster:
    """A running local cluster: its REST address and the process groups of its daemons."""

    workdir: Path
    rest_port: int
    taskmanagers: int
    slots: int
    pgids: dict[str, int] = field(default_factory=dict)
    started_s: float = 0.0  # how long it took to come up
    warm: bool = False  # its JVMs have run the warm-up (a live run on it need not again)
    channels: Any = None  # the calibration that measured its channels (capacities do not drift)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.rest_port}"

    def rest(self, path: str, timeout: float = 5.0) -> Any:
        with urllib.request.urlopen(f"http://{self.address}{path}", timeout=timeout) as r:
            return json.load(r)

    def overview(self) -> dict[str, Any]:
        return self.rest("/overview")

    def _env(self) -> dict[str, str]:
        return {**os.environ, "FLINK_CONF_DIR": str(self.workdir / "conf"), "FLINK_LOG_DIR": str(self.workdir / "log"),
                "FLINK_PID_DIR": str(self.workdir / "pid")}

    def _spawn(self, name: str, script: str) -> None:
        from skewbench.settings import flink_environment

        bin_dir = flink_environment().pyflink / "bin"
        with open(self.workdir / "log" / f"{name}.out", "ab") as out:
            p = subprocess.Popen([str(bin_dir / script), "start-foreground"], stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env=self._env(), cwd=self.workdir, start_new_session=True)
        self.pgids[name] = p.pid
        self._record()

    def _record(self) -> None:
        tmp = self.workdir / "pgids.tmp"
        tmp.write_text(" ".join(str(g) for n, g in self.pgids.items() if n != "watchdog"))
        tmp.replace(self.workdir / "pgids")

    def _find_rest_port(self) -> int:
        """The REST port the JobManager bound (it picks a free one itself: a port picked here could
        be taken before it binds, by another local cluster whose REST would then answer for it)."""
        if not self.rest_port:
            for log in sorted((self.workdir / "log").glob("*standalonesession*.log")):
                m = _REST_LISTENING.search(log.read_text(errors="replace"))
                if m:
                    self.rest_port = int(m.group(1))
        return self.rest_port

    def registered(self) -> int:
        if not self._find_rest_port():
            return -1
        try:
            return int(self.overview().get("taskmanagers", 0))
        except (OSError, ValueError, urllib.error.URLError):
            return -1

    def wait_taskmanagers(self, n: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.registered() == n:
                return
            for name, pgid in self.pgids.items():
                if name != "watchdog" and not _alive(pgid):
                    raise SkewbenchError(f"the local Flink cluster's {name} exited while starting "
                                         f"(log: {self.workdir / 'log' / (name + '.out')})")
            time.sleep(0.25)
        raise SkewbenchError(f"the local Flink cluster did not register {n} TaskManagers within {timeout:g} s "
                             f"(logs: {self.workdir / 'log'})")

    def start_taskmanager(self, timeout: float = 120.0) -> str:
        """One more TaskManager (a replacement after :meth:`kill_taskmanager`); returns its name."""
        i = 1 + max((int(n.split("-")[1]) for n in self.pgids if n.startswith("taskmanager-")), default=0)
        name = f"taskmanager-{i}"
        before = self.taskmanager_ids()
        self._spawn(name, "taskmanager.sh")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.taskmanager_ids() - before:
                return name
            if not _alive(self.pgids[name]):
                raise SkewbenchError(f"the replacement {name} exited while starting "
                                     f"(log: {self.workdir / 'log' / (name + '.out')})")
            time.sleep(0.25)
        raise SkewbenchError(f"the replacement {name} did not register within {timeout:g} s (logs: {self.workdir / 'log'})")

    def taskmanager_ids(self) -> set[str]:
        """The ids of the TaskManagers the JobManager knows (a killed one until its heartbeat times out)."""
        try:
            return {t["id"] for t in self.rest("/taskmanagers").get("taskmanagers", [])}
        except (OSError, ValueError, urllib.error.URLError):
            return set()

    def kill_taskmanager(self, name: str | None = None) -> str:
        """SIGKILL a running TaskManager (the first by default): a crash, nothing flushed."""
        names = [n for n, g in self.pgids.items() if n.startswith("taskmanager-") and _alive(g)]
        if not names:
            raise SkewbenchError("no TaskManager of the local cluster is running")
        name = name or names[0]
        _killpg(self.pgids.pop(name), signal.SIGKILL)
        self._record()
        return name

    def stop(self, grace: float = 15.0) -> None:
        """Every process group this cluster started, TaskManagers first, the watchdog last."""
        order = sorted(self.pgids, key=lambda n: (n == "watchdog", n == "jobmanager"))
        for name in order:
            pgid = self.pgids[name]
            if _alive(pgid):
                _killpg(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for name in order:
            pgid = self.pgids[name]
            while _alive(pgid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if _alive(pgid):
                _killpg(pgid, signal.SIGKILL)
                while _alive(pgid):
                    time.sleep(0.05)
        self.pgids.clear()


def _alive(pgid: int) -> bool:
    try:
        os.waitpid(pgid, os.WNOHANG)  # reap it if it is this process's child
    except ChildProcessError:
        pass
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


_REST_LISTENING = re.compile(r"Rest endpoint listening at 127\.0\.0\.1:(\d+)")


def configuration(slots: int, workdir: Path, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The cluster's configuration (flat keys of Flink's config.yaml): loopback everywhere, fresh
    ports (REST and blob server bound by the JobManager itself), metrics refreshed every half
    second for the REST samples and job states every tenth of a second, failures noticed within
    seconds; ``options`` added last (a network buffer setting, say)."""
    conf: dict[str, Any] = {
        "jobmanager.rpc.address": "127.0.0.1", "jobmanager.rpc.port": free_port(), "jobmanager.bind-host": "127.0.0.1",
        "jobmanager.memory.process.size": JM_MEMORY,
        "rest.address": "127.0.0.1", "rest.bind-address": "127.0.0.1", "rest.bind-port": "0",
        "blob.server.port": "0",
        "taskmanager.host": "127.0.0.1", "taskmanager.bind-host": "127.0.0.1",
        "taskmanager.numberOfTaskSlots": slots, "taskmanager.memory.process.size": TM_MEMORY,
        "taskmanager.rpc.port": "0", "taskmanager.data.port": "0",
        # the REST API serves a job's state from a cache kept web.refresh-interval (3 s by default):
        # a job's start waited for it to show every task running, up to 3 s a phase (0.1 s here)
        "metrics.fetcher.update-interval": METRICS_FETCHER_MS, "web.refresh-interval": 100,
        "heartbeat.interval": 2000, "heartbeat.timeout": 10000,
        "io.tmp.dirs": str(workdir / "tmp"),
        "web.submit.enable": "false",
    }
    conf.update(options or {})
    return conf


@contextlib.contextmanager
def local_cluster(workdir: Path, *, parallelism: int, taskmanagers: int = TASKMANAGERS,
                  options: dict[str, Any] | None = None, timeout: float = 180.0,
                  progress=None) -> Iterator[FlinkCluster]:
    """A JobManager and ``taskmanagers`` TaskManagers with ``ceil(parallelism / taskmanagers)``
    slots each (every subtask of a job in a slot of its own stage, slots shared between stages),
    up for the block; stopped at its end, nothing left running."""
    if taskmanagers < 1:
        raise SkewbenchError(f"a local Flink cluster needs at least one TaskManager, got {taskmanagers}")
    from skewbench.settings import flink_environment

    pyflink = flink_environment().pyflink
    workdir = Path(workdir)
    if workdir.exists():
        shutil.rmtree(workdir)
    for sub in ("conf", "log", "tmp", "pid"):
        (workdir / sub).mkdir(parents=True)
    slots = max(1, math.ceil(parallelism / taskmanagers))
    cl = FlinkCluster(workdir, 0, taskmanagers, slots)  # its REST port is read from its log once bound
    conf = configuration(slots, workdir, options)
    (workdir / "conf" / "config.yaml").write_text("".join(f"{k}: {v}\n" for k, v in conf.items()))
    for name in ("log4j-console.properties", "log4j.properties"):
        (workdir / "conf" / name).write_text(LOG4J)
    for name in ("logback-console.xml", "logback.xml"):
        src = pyflink / "conf" / name
        if src.exists():
            shutil.copy(src, workdir / "conf" / name)
    t0 = time.monotonic()
    ok = False
    try:
        # a watchdog: should this process die without stopping the cluster, it kills every group
        watchdog = subprocess.Popen(
            ["sh", "-c", f'while kill -0 {os.getpid()} 2>/dev/null; do sleep 1; done; '
                         f'for g in $(cat "{workdir}/pgids" 2>/dev/null); do kill -9 -"$g" 2>/dev/null; done'],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        cl.pgids["watchdog"] = watchdog.pid
        cl._spawn("jobmanager", "jobmanager.sh")
        for i in range(taskmanagers):
            cl._spawn(f"taskmanager-{i + 1}", "taskmanager.sh")
        cl.wait_taskmanagers(taskmanagers, timeout)
        cl.started_s = time.monotonic() - t0
        if progress:
            progress(f"flink: a local cluster of {taskmanagers} TaskManagers x {slots} slots is up at {cl.address} "
                     f"({cl.started_s:.0f} s)")
        yield cl
        ok = True
    finally:
        cl.stop()
        if ok and os.environ.get("SKEWBENCH_KEEP_CLUSTER") != "1":  # kept for its logs when asked
            shutil.rmtree(workdir, ignore_errors=True)
