"""The grouping strategies as Java routers (``java/partition/``, package ``skewbench.partition``):
one source's strategy deciding at run time, as an engine's partitioner would, written from the
Python classes (the specification) and checked against them tuple for tuple
(``tests/integration/test_java_routers.py``).

The routers need no Flink: they compile with the JDK alone into ``<state>/live/routers-<digest>/
routers.jar`` (again only when a source changes), and :func:`route` runs streams through them in
one JVM (the ``Conform`` driver), without a cluster.  The table of the strategies that have one is
``Routers.java`` (one line a strategy); :func:`names` reads it from the JVM.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from skewbench.errors import SkewbenchError

SOURCES = Path(__file__).with_name("java") / "partition"
PACKAGE = "skewbench.partition"


def jdk_tool(name: str, what: str = "the Java routers compile") -> str:
    """The JDK's ``name`` (javac, jar, java), or one line saying what needs it and how to install it."""
    path = shutil.which(name)
    if path is None:
        raise SkewbenchError(f"{what} with the JDK's {name}, not found: install a JDK "
                             f"(make java installs openjdk-17-jdk-headless)")
    return path


def sources() -> list[Path]:
    return sorted(SOURCES.glob("*.java"))


def build_jar(srcs: list[Path], out: Path, name: str, *, classpath: list[Path] = (), release: str = "",
              what: str = "the routers", tool_what: str = "the Java routers compile") -> Path:
    """``out/name`` compiled from ``srcs`` (against ``classpath``), unless already there: built in a
    temporary directory beside ``out`` and renamed into place (a concurrent build leaves one)."""
    jar = out / name
    if jar.exists():
        return jar
    javac, jar_tool = jdk_tool("javac", tool_what), jdk_tool("jar", tool_what)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".build-") as tmp:
        classes = Path(tmp) / "classes"
        cmd = [javac, "-nowarn", "-encoding", "UTF-8", *(["--release", release] if release else []),
               *(["-cp", os.pathsep.join(map(str, classpath))] if classpath else []), "-d", str(classes),
               *map(str, srcs)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise SkewbenchError(f"javac failed on {what}: {' '.join((p.stderr or p.stdout).split())[:400]}")
        staged = Path(tmp) / "out"
        staged.mkdir()
        subprocess.run([jar_tool, "cf", str(staged / name), "-C", str(classes), "."], check=True, capture_output=True)
        try:
            staged.rename(out)
        except OSError:  # another process built it meanwhile
            pass
    return jar


def digest(srcs: list[Path]) -> str:
    """16 hex digits of the sources' names and contents: a jar's version."""
    return hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in srcs)).hexdigest()[:16]


def routers_jar(state: Path) -> Path:
    """The routers' jar (no Flink: the JDK alone), compiled once per version of their sources."""
    return build_jar(sources(), state / "live" / f"routers-{digest(sources())}", "routers.jar", release="11")


def _java(state: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    cmd = [jdk_tool("java", "the Java routers run"), "-cp", str(routers_jar(state)), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def names(state: Path) -> list[str]:
    """The strategies that have a Java router, in the table's order."""
    p = _java(state, f"{PACKAGE}.Conform", "--list")
    if p.returncode != 0:
        raise SkewbenchError(f"the routers' table could not be read: {p.stderr.strip()[-300:]}")
    return p.stdout.split()


@dataclass
class Case:
    """One stream through one strategy's routers: ``keys`` (int64, in stream order: the values the
    strategy hashes), ``sources`` routers of ``strategy`` over ``workers`` with ``seed`` and
    ``params`` (values as Python gives them: ``None`` is left out, the router's default)."""

    strategy: str
    keys: np.ndarray
    workers: int
    sources: int = 1
    seed: int = 0
    params: dict[str, Any] = field(default_factory=dict)


def param_text(params: dict[str, Any]) -> str:
    """A strategy's parameters as the routers read them: ``name=value,...`` (``None`` left out), or ``-``."""
    items = []
    for k, v in sorted(params.items()):
        if v is None:
            continue
        text = ("true" if v else "false") if isinstance(v, bool) else repr(v) if isinstance(v, float) else str(v)
        if any(c in text for c in ",=\t\n"):
            raise SkewbenchError(f"parameter {k}={text!r}: a router's parameter value has no ',', '=' or tab")
        items.append(f"{k}={text}")
    return ",".join(items) or "-"


@dataclass
class Routed:
    """A case's workers (int32, one per tuple) and the routers' time per tuple (ns, one JVM, warm
    after the cases before it)."""

    workers: np.ndarray
    ns_per_tuple: float


def route(cases: Sequence[Case], state: Path, work: Path | None = None) -> list[Routed]:
    """Every case through its Java routers, in one JVM; a bad case raises :class:`SkewbenchError`
    with the JVM's one line."""
    with tempfile.TemporaryDirectory(dir=work, prefix="routers-") as tmp:
        d = Path(tmp)
        lines, written = [], {}
        for i, c in enumerate(cases):
            keys = written.get(id(c.keys))  # one file per keys array, however many cases route it
            if keys is None:
                keys = written[id(c.keys)] = d / f"keys-{i}.i64"
                np.ascontiguousarray(c.keys, dtype="<i8").tofile(keys)
            lines.append("\t".join([str(keys), str(d / f"out-{i}.i32"), str(int(c.sources)), c.strategy,
                                    str(int(c.workers)), str(int(c.seed)), param_text(c.params)]))
        (d / "cases.tsv").write_text("\n".join(lines) + "\n")
        p = _java(state, f"{PACKAGE}.Conform", str(d / "cases.tsv"))
        if p.returncode != 0:
            raise SkewbenchError("the Java routers failed: " + (p.stderr.strip().splitlines() or ["no message"])[-1][:500])
        ns = {}
        for ln in p.stdout.splitlines():
            parts = ln.split()
            if parts[:1] == ["done"]:
                ns[parts[1]] = float(parts[2])
        return [Routed(np.fromfile(d / f"out-{i}.i32", dtype="<i4"), ns[str(d / f"out-{i}.i32")])
                for i in range(len(cases))]
