"""Family-independent replay machinery: cells, grids, executors, scratch space, the manifest.

A replay runs a dataset through a *grid* of :class:`Cell` s (a strategy with parameters, the
family's coordinates such as workers and sources, and a hash seed).  A family's engine turns the
grid into independent tasks and maps them with an :data:`Executor`: :func:`local_executor` (this
process) or :func:`spark_executor` (Spark tasks; results come back in item order, so a replay is
bit-identical on either).  :func:`replay_to_dir` gives the engine a scratch directory beside the
output, then writes the results directory (:func:`skewbench.results.write_results`) with the
manifest every later stage reads.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import operator
import os
import tempfile
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from skewbench import registry
from skewbench.errors import SkewbenchError, shown

Executor = Callable[[Callable[[Any], Any], Sequence[Any], str], list[Any]]

#: the most cells a grid holds (each cell is a task's state and a summary row, and its series rows)
MAX_CELLS = 10_000
#: the most series rows a replay keeps (cells x windows; a row is a few hundred bytes in memory)
MAX_SERIES_ROWS = 1_000_000


@dataclass(frozen=True)
class Cell:
    """One point of a grid: a strategy with its parameters at some coordinates, with one seed.

    ``coords`` are the family's coordinates in its order (e.g. ``(("workers", 5), ("sources",
    1))``); they are also attributes (``cell.workers``).
    """

    strategy: str
    coords: tuple[tuple[str, Any], ...]
    seed: int
    params: tuple[tuple[str, Any], ...] = ()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "coords":
            raise AttributeError(name)
        for k, v in self.coords:
            if k == name:
                return v
        raise AttributeError(f"cell has no coordinate {name!r}")

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def cell_id(self) -> str:
        """16 hex digits: a hash of strategy, coordinate values, seed and parameters."""
        text = json.dumps([self.strategy, *[v for _, v in self.coords], self.seed, list(self.params)],
                          sort_keys=True, default=str)
        return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {"cell_id": self.cell_id, "strategy": self.strategy, **dict(self.coords), "seed": self.seed,
                "params": dict(self.params)}


def grid(family: str, strategies: Sequence[str], axes: Mapping[str, Sequence[int]], seeds: Sequence[int],
         params: dict[str, dict[str, list[Any]]] | None = None,
         adjust: Callable[[type, dict[str, Any]], dict[str, Any]] | None = None) -> list[Cell]:
    """The cartesian grid: strategies x parameter combinations x axes (in order) x seeds.

    ``params[strategy][name]`` lists values of one strategy's parameter (each adds an axis for
    that strategy only).  ``adjust(cls, coords)`` may change a cell's coordinates (e.g. a
    single-scheduler strategy runs with one source); duplicate cells are dropped, order kept.
    Axis values must be integers >= 1.  A grid holds at most :data:`MAX_CELLS` cells.
    """
    params = params or {}
    for name in strategies:
        registry.get(family, name)  # unknown names fail here, before any work
    unknown = set(params) - set(strategies)
    if unknown:
        raise SkewbenchError(f"parameters given for strategies not in the grid: {sorted(unknown)}")
    for axis, values in axes.items():
        for v in values:
            if isinstance(v, bool) or not hasattr(v, "__index__") or operator.index(v) < 1:
                raise SkewbenchError(f"{axis} must be integers >= 1, got {v}")
    for s in seeds:  # the results' seed column is int64
        if isinstance(s, bool) or not hasattr(s, "__index__") or not 0 <= operator.index(s) < 2**63:
            raise SkewbenchError(f"seeds must be integers in [0, 2^63), got {s}")
    cells: list[Cell] = []
    seen: set[Cell] = set()
    names = list(axes)
    for name in strategies:
        cls = registry.get(family, name)
        p = params.get(name, {})
        defaults = getattr(cls, "defaults", {}) or {}
        bad = set(p) - set(defaults)
        if bad:
            raise SkewbenchError(f"{name}: unknown parameter(s) [{', '.join(shown(b) for b in sorted(bad))}]; it takes "
                                 f"{sorted(defaults) or 'none'}")
        pnames = sorted(p)
        for combo in itertools.product(*(p[a] for a in pnames)) if pnames else [()]:
            for values in itertools.product(*(axes[a] for a in names)):
                coords = {a: int(v) for a, v in zip(names, values)}
                if adjust is not None:
                    coords = adjust(cls, coords)
                for seed in seeds:
                    c = Cell(name, tuple(coords.items()), int(seed), tuple(zip(pnames, combo)))
                    if c not in seen:
                        seen.add(c)
                        cells.append(c)
                        if len(cells) > MAX_CELLS:
                            raise SkewbenchError(f"the grid has more than {MAX_CELLS:,} cells (strategies x parameter "
                                                 f"values x coordinates x seeds); at most {MAX_CELLS:,}")
    return cells


def refuse_series(per_cell: float, cells: int, what: str, fix: str) -> None:
    """Refuse a replay whose ``cells`` would keep more than :data:`MAX_SERIES_ROWS` series rows,
    ``per_cell`` each (``what``: "100 windows"; ``fix``: what to change)."""
    if per_cell * cells > MAX_SERIES_ROWS:
        raise SkewbenchError(f"{what} x {cells:,} cells make {per_cell * cells:,.0f} series rows; at most "
                             f"{MAX_SERIES_ROWS:,} ({fix})")


def refuse_windows(count: float, limit: int, *, step: str, over: str, option: str, slack: float = 1.0,
                   cells: int = 1) -> None:
    """Refuse a replay of more than ``limit`` windows per cell, or of more series rows over its
    ``cells`` than :data:`MAX_SERIES_ROWS`, before any window is counted one by one or allocated:
    ``count`` is their number, or an estimate from one division (span / step, so a step of
    1e-300 s is refused at once), which then passes up to ``slack`` x ``limit`` for an exact count
    to decide.  ``step``, ``over`` and ``option`` word the message ("a slide of 0.1 s", "the
    dataset's 300 s", "--slide")."""
    shown = f"{count:,}" if isinstance(count, int) else f"{count:.3g}"
    if not count <= limit * slack:
        raise SkewbenchError(f"{step} makes {shown} windows over {over}; at most {limit:,} (use a longer {option})")
    refuse_series(count / slack, cells, f"{shown} windows", f"use a longer {option}, or fewer cells")


# --------------------------------------------------------------------------------------------
# executors


def local_executor(fn: Callable[[Any], Any], items: Sequence[Any], description: str = "") -> list[Any]:
    """Run ``fn`` over ``items`` in this process, in order."""
    return [fn(x) for x in items]


#: how many items an executor runs at once (an engine that shares work between the cells of
#: an item, such as one read of the dataset, makes this many items)
local_executor.slots = 1  # type: ignore[attr-defined]


def spark_executor(spark, partitions: int | None = None) -> Executor:
    """An executor whose items are dealt to Spark tasks.

    Item ``i`` goes to task ``i mod P`` (so items of every size are spread over the tasks), with
    ``P = partitions`` or, by default, twice the cluster's default parallelism: a Spark task costs
    tens of milliseconds to schedule, more than many small replay items.  Results come back in
    item order whatever ``P`` is.  Its ``slots`` (the items worth making when each reads the
    dataset) is ``partitions`` or the default parallelism.
    """
    from skewbench.spark import run_tasks

    def execute(fn: Callable[[Any], Any], items: Sequence[Any], description: str = "") -> list[Any]:
        items = list(items)
        if not items:
            return []
        p = max(1, min(len(items), partitions or 2 * spark.sparkContext.defaultParallelism))
        dealt = run_tasks(spark, lambda t: [fn(items[i]) for i in range(t, len(items), p)], p, description)
        return [dealt[i % p][i // p] for i in range(len(items))]

    execute.slots = partitions or spark.sparkContext.defaultParallelism  # type: ignore[attr-defined]
    return execute


def executor_for(engine: str, partitions: int | None = None) -> Executor:
    """``local`` or ``spark`` (the session from :func:`skewbench.spark.get_spark`)."""
    if engine == "local":
        return local_executor
    if engine == "spark":
        from skewbench.spark import get_spark

        return spark_executor(get_spark(), partitions)
    raise SkewbenchError(f"unknown engine '{engine}' (local or spark)")


# --------------------------------------------------------------------------------------------
# running into a results directory


def scratch_dir(out_dir: str | os.PathLike | None = None) -> Path:
    """A new scratch directory beside ``out_dir``, whose parent must exist, or in the system's
    temporary directory when no ``out_dir`` is given.

    Beside the results, the scratch is on the storage the results go to, which on a cluster is
    the storage every executor reads (a shared volume): the driver's temporary directory is seen
    by executors on the driver's machine only."""
    parent = Path(out_dir).absolute().parent if out_dir is not None else None
    if parent is not None and not parent.is_dir():
        raise SkewbenchError(f"{parent} does not exist: the scratch directory goes beside the results")
    return Path(tempfile.mkdtemp(prefix=".skewbench-scratch-", dir=parent))


@dataclass
class Replayed:
    """What a family's engine returns to :func:`replay_to_dir`."""

    summary: list[dict[str, Any]]
    series: list[dict[str, Any]]
    seconds: float


def replay_to_dir(family: str, ds_path: str | os.PathLike, cells: Sequence[Cell], out_dir: str | os.PathLike,
                  run: Callable[[Path], Replayed], config: Any = None, overwrite: bool = False,
                  engine_name: str = "local") -> dict[str, Any]:
    """Run ``run(scratch)`` (the family's engine) and write its results directory; returns the
    manifest.  The scratch directory is removed whatever happens; nothing is written on error."""
    from skewbench.datasets.contract import discard_dir, open_dataset
    from skewbench.results import write_results

    out = Path(out_dir)
    if out.exists() and not overwrite:
        raise SkewbenchError(f"{out} already exists; pass --overwrite to replace it")
    ds = open_dataset(ds_path)
    # the results' parent directories, made now so that the scratch is on the results' storage
    # (shared with the executors on a cluster); those made here go again if the replay fails
    made = [p for p in [out.absolute(), *out.absolute().parents][1:] if not p.exists()]
    for p in reversed(made):
        p.mkdir(exist_ok=True)
    scratch = scratch_dir(out)
    try:
        res = run(scratch)
    except BaseException:
        discard_dir(scratch)  # a failed job's other tasks may still be writing into it
        for p in made:
            try:
                p.rmdir()
            except OSError:  # not empty: something else writes there too
                break
        raise
    discard_dir(scratch)
    manifest = {
        "dataset": {"path": str(Path(ds_path).absolute()), "name": ds.name, "fingerprint": ds.meta["fingerprint"],
                    "tuples": ds.tuples},
        "config": asdict(config) if is_dataclass(config) else dict(config or {}),
        "cells": [c.to_dict() for c in cells],
        "engine": engine_name,
        "seconds": res.seconds,
    }
    return write_results(out, family, res.summary, res.series, manifest, overwrite=overwrite)
