"""The allocation family's datasets: the paper's instance sets, job graphs from a grouping replay,
and users' own job graphs (JSON), each written as a job-graph dataset (:mod:`.store`).

Catalog ``workload:`` functions share one signature (``fn(out_dir, *, params, seed, inputs, name,
overwrite, progress, extra_meta)``) and return the dataset's metadata.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

from skewbench.allocation import instances as inst
from skewbench.allocation.model import Job
from skewbench.allocation.store import write_jobs
from skewbench.errors import SkewbenchError

#: the paper's instance sets (allocation.spec.md section 4): name -> (what, builder(params, seed))
SETS: dict[str, tuple[str, Callable[[dict[str, Any], int], list[Job]]]] = {
    "e1": ("Example 2: four groups, chain 100/90/10 MB/s, 4 nodes of 40%",
           lambda p, s: inst.example2()),
    "e2": ("the priority study: pipeline v1->v2->v3, c2 = c1 f for f = 2.0 .. 1.0",
           lambda p, s: inst.priority(**p)),
    "e3": ("the task-count asymmetry: one edge, n2 = 10 f for f = 1..7, 6 nodes of 80%",
           lambda p, s: inst.asymmetry(**p)),
    "e4": ("the throughput pipeline: 4 groups x 100 tasks, 8 nodes of 100%",
           lambda p, s: inst.pipeline(seed=s, **p)),
    "e5": ("random graphs: 17 tasks, 3-7 groups, total PC 500%, 8 single-core nodes",
           lambda p, s: inst.random_graphs(seed=s, **p)),
    "e6-twitter": ("the Twitter top-k topology (placeholder annotations) over a capacity sweep, 100 nodes",
                   lambda p, s: inst.twitter(**p)),
    "e6-stock": ("the stock bargain topology (placeholder annotations) over a capacity sweep, 100 nodes",
                 lambda p, s: inst.stock(**p)),
}


def build_set(set_name: str, params: dict[str, Any] | None = None, seed: int = 0) -> list[Job]:
    if set_name not in SETS:
        raise SkewbenchError(f"unknown instance set '{set_name}'; known: {', '.join(SETS)}")
    try:
        return SETS[set_name][1](dict(params or {}), int(seed))
    except TypeError as e:
        raise SkewbenchError(f"instance set '{set_name}': {e}") from None


def paper_set(out_dir: str | os.PathLike, *, params: dict[str, Any], seed: int | None = 0,
              inputs: Sequence[str] = (), name: str | None = None, overwrite: bool = False,
              progress: Callable[[int], Any] | None = None, extra_meta: dict[str, Any] | None = None
              ) -> dict[str, Any]:
    """A catalog workload: ``params = {"set": "e5", ...the set's generator parameters}``."""
    p = dict(params)
    set_name = str(p.pop("set", ""))
    jobs = build_set(set_name, p, int(seed or 0))
    inst.check_dataset_sizes(jobs)
    return write_jobs(out_dir, jobs, overwrite=overwrite, progress=progress,
                      meta={"kind": "synthetic", "generator": f"allocation:{set_name}", "params": dict(params),
                            "seed": seed, "name": name or Path(out_dir).name, **(extra_meta or {})})


def grouping_replay(out_dir: str | os.PathLike, *, params: dict[str, Any], seed: int | None = 0,
                    inputs: Sequence[str] = (), name: str | None = None, overwrite: bool = False,
                    progress: Callable[[int], Any] | None = None, extra_meta: dict[str, Any] | None = None
                    ) -> dict[str, Any]:
    """A catalog workload: job graphs built from a grouping replay on the same data.

    Generates the Zipf stream ``params["stream"]`` (alpha, keys, tuples), replays it with the
    ``grouping`` family's command (``strategies``, ``workers``, ``sources``), and turns each
    strategy's per-worker loads and per source-worker traffic into one job graph
    (:func:`skewbench.allocation.instances.from_grouping`, with ``job`` options)."""
    from skewbench.datasets.generators import StreamSpec, generate
    from skewbench.families import get

    p = dict(params)
    stream = dict(p.get("stream") or {"alpha": 1.4, "keys": 10000, "tuples": 200000})
    strategies = list(p.get("strategies") or ["kg", "sg", "pkg", "dc"])
    workers, sources = int(p.get("workers", 10)), int(p.get("sources", 5))
    family = str(p.get("family", "grouping"))
    job_opts = dict(p.get("job") or {})
    tmp = Path(tempfile.mkdtemp(prefix=".skewbench-alloc-", dir=Path(out_dir).absolute().parent
                                if Path(out_dir).absolute().parent.exists() else None))
    try:
        spec = StreamSpec.zipf(float(stream["alpha"]), int(stream["keys"]), int(stream["tuples"]), int(seed or 0))
        generate(spec, tmp / "stream", name="stream")
        cmd = get(family).attr("cli", "command")
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):  # its result table
            cmd.main(["--dataset", str(tmp / "stream"), "--out", str(tmp / "results"), "--strategies",
                      ",".join(strategies), "--workers", str(workers), "--sources", str(sources)],
                     standalone_mode=False)
        jobs = inst.from_grouping_results(tmp / "results", **job_opts)
        inst.check_dataset_sizes(jobs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return write_jobs(out_dir, jobs, overwrite=overwrite, progress=progress,
                      meta={"kind": "synthetic", "generator": "allocation:grouping-replay", "params": dict(params),
                            "seed": seed, "name": name or Path(out_dir).name, **(extra_meta or {})})


def ingest_job_graph(inputs: Sequence[str], out_dir: str | os.PathLike, *, name: str | None = None,
                     overwrite: bool = False, progress: Callable[[int], Any] | None = None,
                     extra_meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """``skewbench datasets ingest job-graph FILE.json [FILE2.json ...] --out DIR``: users' own job
    graphs (one instance per file, or a list of them) in one dataset."""
    jobs: list[Job] = []
    sources = []
    totals = inst.Totals()  # the size limits hold for the whole dataset
    for path in inputs:
        p = Path(path)
        if not p.is_file():
            raise SkewbenchError(f"{p}: no such file")
        got = inst.load_job_graphs(p, totals=totals)
        for j in got:
            if not j.name or j.name.startswith("instance-"):
                j.name = f"{p.stem}" if len(got) == 1 else f"{p.stem}/{j.name}"
        jobs.extend(got)
        sources.append(str(p.absolute()))
    return write_jobs(out_dir, jobs, overwrite=overwrite, progress=progress,
                      meta={"kind": "trace", "source": {"format": "job-graph", "inputs": sources}, "params": {},
                            "seed": None, "name": name or Path(out_dir).name, **(extra_meta or {})})
