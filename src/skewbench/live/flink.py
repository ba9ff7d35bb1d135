"""The Flink engine: every phase of a live run as a Flink DataStream job, one after another in
one JVM (one start-up a run), on a local Flink (a mini-cluster per phase, inside that JVM) or on
a running Flink cluster given by its REST address.

The job is ``java/LiveJob.java`` (this package), compiled with ``javac`` against the Flink
environment's own jars (``make flink-env``: PyFlink's ``lib/flink-dist``, Flink 2.3) into
``<state>/live/jar-<digest>/live.jar`` the first time, and again only when its source changes.
It is Java, not PyFlink: a Python map between the source and the workers adds a per-record round
trip through Beam's harness (tens of records per ms at best) and bundles records before they
reach Python, so what would be measured is the bridge, not the partitioning; PyFlink's own
``key_by`` is checked to the tuple elsewhere (``tests/integration/test_flink_engine.py``).

Inputs and outputs go through files in a work directory (:func:`write_phase`,
:func:`read_timings`); each phase writes, per subtask, four int64 per tuple (index, due, start,
end; epoch microseconds) and ``phase.json`` (the job id, its net runtime, the per-subtask Flink
metrics sampled over REST while it ran: accumulated busy, idle and back-pressured time).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from skewbench.errors import SkewbenchError
from skewbench.live.decisions import Phase

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


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SkewbenchError(f"the Flink engine compiles its job with the JDK's {name}, not found: install a JDK "
                             f"(make java installs openjdk-17-jdk-headless)")
    return path


def classpath() -> list[Path]:
    """Flink's jars, from the Flink environment (one line naming ``make flink-env`` when missing)."""
    from skewbench.settings import flink_environment

    return flink_environment().jars


def job_jar(state: Path) -> Path:
    """The job's jar, compiled once per version of its source."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    out = state / "live" / f"jar-{digest}"
    jar = out / "live.jar"
    if jar.exists():
        return jar
    jars = classpath()
    javac, jar_tool = _tool("javac"), _tool("jar")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".build-") as tmp:
        classes = Path(tmp) / "classes"
        p = subprocess.run([javac, "-nowarn", "-encoding", "UTF-8", "-cp", os.pathsep.join(map(str, jars)), "-d",
                            str(classes), str(SOURCE)], capture_output=True, text=True)
        if p.returncode != 0:
            raise SkewbenchError(f"javac failed on {SOURCE.name}: {' '.join((p.stderr or p.stdout).split())[:400]}")
        built = Path(tmp) / "live.jar"
        subprocess.run([jar_tool, "cf", str(built), "-C", str(classes), "."], check=True, capture_output=True)
        staged = Path(tmp) / "out"
        staged.mkdir()
        built.rename(staged / "live.jar")
        try:
            staged.rename(out)
        except OSError:  # another process built it meanwhile
            pass
    return jar


def write_phase(phase: Phase, d: Path, native_key: str = "long") -> None:
    """A phase's inputs in ``d``: due times, costs, and the workers (routed) or keys (native)."""
    d.mkdir(parents=True, exist_ok=True)
    (np.rint(phase.due_s * 1e6)).astype("<i8").tofile(d / "due_us.i64")
    (np.rint(phase.cost_ms * 1e6)).astype("<i8").tofile(d / "cost_ns.i64")
    if phase.routing == "routed":
        phase.worker.astype("<i4").tofile(d / "worker.i32")
    elif native_key == "long":
        phase.key.astype("<i8").tofile(d / "key.i64")
    else:
        (d / "key.txt").write_text("".join(f"{int(k)}\n" for k in phase.key.tolist()), encoding="utf-8")


def read_timings(d: Path, workers: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """Per executed tuple, in the phase's order: the subtask that ran it, and when it was due, started
    and ended (seconds since the epoch); and the phase's ``phase.json``."""
    parts = []
    for w in range(workers):
        f = d / f"out-{w}.i64"
        rows = np.fromfile(f, dtype="<i8").reshape(-1, 4) if f.exists() else np.zeros((0, 4), dtype=np.int64)
        parts.append(np.column_stack([rows, np.full(len(rows), w, dtype=np.int64)]))
    allr = np.concatenate(parts) if parts else np.zeros((0, 5), dtype=np.int64)
    allr = allr[np.argsort(allr[:, 0], kind="stable")]
    info = json.loads((d / "phase.json").read_text()) if (d / "phase.json").exists() else {}
    return (allr[:, 4].astype(np.int32), allr[:, 1] / 1e6, allr[:, 2] / 1e6, allr[:, 3] / 1e6, info)


def flink_key(phase: Phase, params: dict[str, Any]) -> tuple[str, int]:
    """How Flink's own keyBy sees a native phase's keys: Java ``Long`` or ``String`` (the ``flink``
    strategy's ``key_format``), and the max parallelism (0: Flink's default rule)."""
    if params.get("api", "datastream") != "datastream":
        raise SkewbenchError("the Flink engine's native routing is Java's keyBy (the flink strategy's api=datastream)")
    return str(params.get("key_format", "long")), int(params.get("max_parallelism", 0))


def run(phases: list[Phase], work: Path, *, workers: int, work_mode: str, address: str = "", state: Path,
        timeout_s: float = 1800.0, progress=None) -> list[dict[str, Any]]:
    """Run ``phases`` on Flink (one JVM; a job per phase) and return, per phase, its timings."""
    from skewbench.settings import flink_environment

    env = flink_environment()
    jar = job_jar(state)
    java = _tool("java")
    spec = []
    for i, ph in enumerate(phases):
        d = work / f"phase-{i:03d}"
        key, maxp = flink_key(ph, ph.params) if ph.routing == "native" else ("long", 0)
        write_phase(ph, d, key)
        spec.append({"name": ph.name, "dir": d.name, "routing": ph.routing, "n": ph.executed, "key": key,
                     "max_parallelism": maxp})
    from skewbench.live.ports import free_port

    job = {"parallelism": workers, "work": work_mode, "lead_ms": 500, "remote": address, "jar": str(jar),
           "rest_port": 0 if address else free_port(), "phases": spec}
    (work / "job.json").write_text(json.dumps(job, indent=1))
    (work / "log4j2.properties").write_text(LOG4J)
    cp = os.pathsep.join([*map(str, env.jars), str(jar)])
    cmd = [java, f"-Dlog4j2.configurationFile={work / 'log4j2.properties'}", "-cp", cp, MAIN, str(work)]
    with open(work / "flink.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                if progress and line.startswith("phase "):
                    progress(f"flink: {line.strip()}")
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise SkewbenchError(f"the Flink job did not finish in {timeout_s:.0f} s (log: {work / 'flink.log'})") from None
    if rc != 0:
        lines = (work / "flink.log").read_text(errors="replace").strip().splitlines()
        # the root cause (a stack trace's last "Caused by:"), else the log's last lines
        causes = [ln.strip() for ln in lines if ln.startswith(("Caused by: ", "Exception in thread"))]
        what = causes[-1] if causes else " | ".join(ln.strip() for ln in lines[-3:])
        raise SkewbenchError(f"the Flink job failed (exit {rc}): {what[-500:]} (log: {work / 'flink.log'})")
    out = []
    for i, ph in enumerate(phases):
        worker, due, start, end, info = read_timings(work / f"phase-{i:03d}", workers)
        out.append({"worker": worker, "due": due, "start": start, "end": end, "info": info})
    return out
