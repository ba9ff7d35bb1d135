"""The Flink engine: a live run's phases as Flink DataStream jobs, one after another, submitted by
one client JVM to a Flink cluster (the local standalone cluster of :mod:`skewbench.live.flinkcluster`,
a running cluster given by its REST address, or a mini-cluster inside the client's JVM).

The job is ``java/LiveJob.java`` (this package; its header describes the job graph), compiled
with ``javac`` against the Flink environment's own jars (``make flink-env``: PyFlink's
``lib/flink-dist``, Flink 2.3) into ``<state>/live/jar-<digest>/live.jar`` the first time, and
again only when its source changes.  It is Java, not PyFlink: a Python function between the
sources and the workers would send every record through Beam's harness to a Python process and
back, so what would be measured is that bridge, not the partitioning; PyFlink's own ``key_by``
is checked to the tuple elsewhere (``tests/integration/test_flink_engine.py``).

Inputs and outputs go through files in a work directory, one sub-directory per phase
(:func:`write_phase`, :func:`read_phase`); the cluster's processes read and write them, so the
work directory must be one they see (the compose stack's shared volume).  A phase's tuples are
due from its start, which the client fixes once every task of the job runs (the file ``go``):
the job's deployment is never inside a phase.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from skewbench.errors import SkewbenchError

SOURCE = Path(__file__).with_name("java") / "LiveJob.java"
MAIN = "skewbench.live.LiveJob"
LOG4J = """rootLogger.level = WARN
rootLogger.appenderRef.console.ref = console
appender.console.name = console
appender.console.type = CONSOLE
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss,SSS} %-5p %c{1} - %m%n
"""


@dataclass
class EnginePhase:
    """What one Flink job executes: the tuples in stream order (tuple ``i`` of source ``i mod
    sources``), each with its worker (routed) or the key Flink hashes (native), its dense key,
    value, cost and due time, and how the job is built."""

    name: str
    routing: str  # "routed" (the replay's decisions) | "engine" (the strategy's Java router) | "native"
    job: str  # "agg" | "map"
    workers: int
    sources: int
    merge: int  # the merge stage's parallelism (0: none)
    worker: np.ndarray  # int32, the decided worker (native: the strategy's model of the engine)
    key: np.ndarray  # int64, the value an engine hashes
    dense: np.ndarray  # int64, the key's dense id
    value: np.ndarray  # int64
    cost_ms: np.ndarray
    due_ms: np.ndarray  # from the phase's start, non-decreasing
    key_format: str = "long"  # native: Flink keys the Long or its decimal String
    max_parallelism: int = 0  # native: 0 = Flink's default rule
    settings: dict[str, Any] = field(default_factory=dict)  # window_ms, watermark_ms, ... (see spec())
    router: str = ""  # routing "engine": the strategy whose Java router decides (worker: the replay's decisions)
    router_params: str = "-"  # its parameters, name=value,... (skewbench.live.routers)
    router_seed: int = 0
    route_key: np.ndarray | None = None  # int64, the values the router hashes (dense ids or key values)

    @property
    def tuples(self) -> int:
        return int(self.worker.size)


def _tool(name: str) -> str:
    from skewbench.live.routers import jdk_tool

    return jdk_tool(name, "the Flink engine compiles its job")


def classpath() -> list[Path]:
    """Flink's jars, from the Flink environment (one line naming ``make flink-env`` when missing)."""
    from skewbench.settings import flink_environment

    return flink_environment().jars


def job_sources() -> list[Path]:
    """The job's source and the routers' (:mod:`skewbench.live.routers`), which its engine routing runs."""
    from skewbench.live.routers import sources

    return [SOURCE, *sources()]


def job_jar(state: Path) -> Path:
    """The job's jar (with the routers), compiled once per version of its sources."""
    from skewbench.live.routers import build_jar, digest

    srcs = job_sources()
    out = state / "live" / f"jar-{digest(srcs)}"
    if (out / "live.jar").exists():
        return out / "live.jar"
    return build_jar(srcs, out, "live.jar", classpath=classpath(), what=f"{SOURCE.name} and the routers",
                     tool_what="the Flink engine compiles its job")


def write_phase(ph: EnginePhase, d: Path) -> None:
    """A phase's inputs in ``d`` (little-endian arrays, one value per tuple)."""
    d.mkdir(parents=True, exist_ok=True)
    np.rint(np.asarray(ph.due_ms) * 1e3).astype("<i8").tofile(d / "due_us.i64")
    np.rint(np.asarray(ph.cost_ms) * 1e6).astype("<i8").tofile(d / "cost_ns.i64")
    np.asarray(ph.worker).astype("<i4").tofile(d / "worker.i32")
    np.asarray(ph.key).astype("<i8").tofile(d / "key.i64")
    np.asarray(ph.dense).astype("<i8").tofile(d / "dense.i64")
    np.asarray(ph.value).astype("<i8").tofile(d / "value.i64")
    if ph.route_key is not None:
        np.asarray(ph.route_key).astype("<i8").tofile(d / "route_key.i64")


def flink_key(params: dict[str, Any]) -> tuple[str, int]:
    """How Flink's own keyBy sees a native phase's keys: Java ``Long`` or ``String`` (the ``flink``
    strategy's ``key_format``), and the max parallelism (0: Flink's default rule)."""
    if params.get("api", "datastream") != "datastream":
        raise SkewbenchError("the Flink engine's native routing is Java's keyBy (the flink strategy's api=datastream)")
    return str(params.get("key_format", "long")), int(params.get("max_parallelism", 0))


def spec(ph: EnginePhase, d: Path) -> dict[str, Any]:
    """The phase's object in ``job.json`` (what ``LiveJob.Spec`` and ``environment`` read)."""
    s = ph.settings
    if ph.dense.size and int(ph.dense.max()) >= 2 ** 31:
        raise SkewbenchError(f"{ph.name}: the live job's keys are dense ids below 2^31, got {int(ph.dense.max())}")
    return {"name": ph.name, "dir": d.name, "routing": ph.routing, "job": ph.job, "n": ph.tuples,
            "sources": ph.sources, "workers": ph.workers, "merge": ph.merge, "key": ph.key_format,
            "max_parallelism": ph.max_parallelism, "work": s.get("work", "sleep"),
            "window_us": int(round(float(s.get("window_ms", 1000.0)) * 1000)),
            "merge_cost_ns": int(round(float(s.get("merge_cost_ms", 0.0)) * 1e6)),
            "watermark_ms": int(s.get("watermark_ms", 50)), "buffer_timeout_ms": int(s.get("buffer_timeout_ms", 0)),
            "lead_ms": int(s.get("lead_ms", 300)), "checkpoint_ms": int(s.get("checkpoint_ms", 0)),
            "state_backend": s.get("state_backend", "hashmap"), "restarts": int(s.get("restarts", 3)),
            "restart_delay_ms": int(s.get("restart_delay_ms", 1000)),
            **({"router": ph.router, "router_params": ph.router_params, "router_seed": int(ph.router_seed)}
               if ph.routing == "engine" else {})}


@dataclass
class Started:
    """A phase's job as the client reported it when its tuples began to be due."""

    name: str
    job_id: str
    start_us: int


def run(phases: list[EnginePhase], work: Path, *, state: Path, address: str = "", mini_cluster: dict | None = None,
        timeout_s: float | None = None, progress: Callable[[str], None] | None = None,
        on_started: Callable[[Started], None] | None = None, on_done: Callable[[str], None] | None = None) -> list[Path]:
    """Run ``phases`` one after another (one client JVM; a job per phase) on the cluster at
    ``address`` (HOST:PORT of its REST endpoint), or on a mini-cluster in the client's JVM when
    ``address`` is empty (``mini_cluster``: extra configuration for it); return each phase's
    directory under ``work``.  ``on_started`` is called when a phase's tuples begin to be due.
    ``timeout_s`` (default: the phases' stream time, two minutes a phase for start-up, drain and a
    restart, and five more) bounds the whole client: a job that cannot finish (a restart waiting for
    slots that never come) is cancelled and the run stops naming the log."""
    from skewbench.live.ports import free_port
    from skewbench.settings import flink_environment

    env = flink_environment()
    jar = job_jar(state)
    java = _tool("java")
    work.mkdir(parents=True, exist_ok=True)
    specs, dirs = [], []
    for ph in phases:
        d = work / f"phase-{len(list(work.glob('phase-*'))):03d}"
        write_phase(ph, d)
        specs.append(spec(ph, d))
        dirs.append(d)
    job = {"remote": address, "jar": str(jar), "rest_port": 0 if address else free_port(), "sample_ms": 1000,
           "mini_cluster": mini_cluster or {}, "phases": specs}
    name = f"job-{dirs[0].name}.json" if dirs else "job.json"
    (work / name).write_text(json.dumps(job, indent=1))
    (work / "log4j2.properties").write_text(LOG4J)
    cp = os.pathsep.join([*map(str, env.jars), str(jar)])
    log_path = work / "flink.log"
    cmd = [java, f"-Dlog4j2.configurationFile={work / 'log4j2.properties'}", "-cp", cp, MAIN, str(work), name]
    if timeout_s is None:
        timeout_s = sum(float(ph.due_ms.max(initial=0.0)) / 1000.0 + 120.0 for ph in phases) + 300.0
    jobs: list[str] = []
    with open(log_path, "a") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
        assert proc.stdout is not None
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            proc.kill()

        timer = threading.Timer(timeout_s, expire)
        timer.daemon = True
        timer.start()
        try:
            for line in proc.stdout:
                parts = line.split()
                if parts[:1] == ["started"] and len(parts) >= 4:
                    jobs.append(parts[-2])
                    if on_started:
                        on_started(Started(" ".join(parts[1:-2]), parts[-2], int(parts[-1])))
                elif parts[:1] == ["done"] and on_done:
                    on_done(" ".join(parts[1:-1]))
            rc = proc.wait()
            if expired.is_set():
                if address and jobs:
                    _cancel(address, jobs[-1])
                raise SkewbenchError(f"the Flink job did not finish in {timeout_s:.0f} s (log: {log_path})")
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            timer.cancel()
    if rc != 0:
        lines = log_path.read_text(errors="replace").strip().splitlines()
        # the root cause (a stack trace's last "Caused by:"), else the log's last lines
        causes = [ln.strip() for ln in lines if ln.startswith(("Caused by: ", "Exception in thread"))]
        what = causes[-1] if causes else " | ".join(ln.strip() for ln in lines[-3:])
        raise SkewbenchError(f"the Flink job failed (exit {rc}): {what[-500:]} (log: {log_path})")
    return dirs


def _cancel(address: str, job_id: str) -> None:
    """Cancel a job on the cluster at ``address`` (its client is gone; a restarting job would
    otherwise hold the cluster's slots); best effort: the cluster may be gone too."""
    req = urllib.request.Request(f"http://{address}/jobs/{job_id}?mode=cancel", method="PATCH")
    try:
        urllib.request.urlopen(req, timeout=10).close()
    except OSError:
        pass


def _rows(d: Path, prefix: str, width: int) -> np.ndarray:
    """The rows every subtask and attempt wrote (``<prefix>-<subtask>-<attempt>.i64``), with the
    subtask and the attempt as two more columns."""
    parts = []
    for f in sorted(d.glob(f"{prefix}-*-*.i64")):
        _, task, attempt = f.stem.rsplit("-", 2)
        a = np.fromfile(f, dtype="<i8").reshape(-1, width)
        parts.append(np.column_stack([a, np.full(len(a), int(task)), np.full(len(a), int(attempt))]))
    return np.concatenate(parts) if parts else np.zeros((0, width + 2), dtype=np.int64)


@dataclass
class Recorded:
    """What a phase's job recorded, in milliseconds from the phase's start."""

    info: dict[str, Any]  # phase.json: job id, start, status changes, placement, metric samples
    work: np.ndarray  # per processed tuple: index, due, start, end, worker, attempt
    emit: np.ndarray  # per emitted tuple: index, emitted, source slice, attempt
    fires: np.ndarray  # per partial a worker emitted: window, key, start, end, worker, attempt
    merge: np.ndarray  # per partial the merge stage took: window, key, start, end, merge task, attempt
    finals: np.ndarray  # per final aggregate at the sink: key, window, count, sum, arrived, sink task, attempt
    slices: np.ndarray  # per slice a source subtask emitted: slice, tuples, subtask, attempt
    route: np.ndarray | None = None  # routing "engine", per slice: slice, tuples, router ns, 0, subtask, attempt

    @property
    def router_ns_per_tuple(self) -> float | None:
        """The routers' nanoseconds a tuple over the phase (every attempt), None without routers."""
        if self.route is None or not self.route.size or self.route[:, 1].sum() == 0:
            return None
        return float(self.route[:, 2].sum()) / float(self.route[:, 1].sum())

    @property
    def start_us(self) -> int:
        return int(self.info["start_us"])

    @property
    def attempts(self) -> int:
        cols = [a[:, -1] for a in (self.work, self.emit, self.finals) if a.size]
        return 1 + max((int(c.max()) for c in cols), default=0)


def read_phase(d: Path) -> Recorded:
    """A finished phase's records (:class:`Recorded`)."""
    path = d / "phase.json"
    if not path.exists():
        raise SkewbenchError(f"the Flink phase in {d} wrote no phase.json: it did not finish")
    info = json.loads(path.read_text())
    t0 = int(info["start_us"])

    def ms(a: np.ndarray, cols: tuple[int, ...], base: int = t0) -> np.ndarray:
        out = a.astype(np.float64)
        for c in cols:
            out[:, c] = (a[:, c] - base) / 1000.0
        return out

    work = _rows(d, "out", 4).astype(np.float64)
    work[:, 1] /= 1000.0  # due is relative already (µs)
    work[:, 2] = (work[:, 2] - t0) / 1000.0
    work[:, 3] = (work[:, 3] - t0) / 1000.0
    return Recorded(info, work, ms(_rows(d, "emit", 2), (1,)), ms(_rows(d, "fires", 4), (2, 3)),
                    ms(_rows(d, "merge", 4), (2, 3)), ms(_rows(d, "agg", 5), (4,)), _rows(d, "slices", 2),
                    _rows(d, "route", 4) if (d / "route_key.i64").exists() else None)


def same_host(rec: Recorded, sources: int, workers: int) -> np.ndarray | None:
    """Which channels of a phase were local (its source slice and its worker in one TaskManager:
    records handed over in memory) rather than remote (through the network stack): a boolean
    matrix sources x workers, from the placement Flink reported; None when it is not known."""
    place = rec.info.get("placement") or {}
    src = next((v for k, v in place.items() if k.lower().startswith("source")), None)
    wrk = next((v for k, v in place.items() if k.lower().startswith("work")), None)
    if src is None or wrk is None or len(wrk) != workers:
        return None
    of_slice = {int(r[0]): int(r[2]) for r in rec.slices if int(r[3]) == 0}
    if len(of_slice) != sources or any(t >= len(src) for t in of_slice.values()):
        return None
    return np.array([[str(src[of_slice[j]]) == str(wrk[w]) for w in range(workers)] for j in range(sources)])
