"""The allocation family's replay engine: every cell (strategy x parameters x seed) allocates every
instance of a job-graph dataset, against a reference optimum per instance.

Work is dealt in *chunks* of consecutive instances (each an executor item: a Spark task reads its
instances from the dataset, solves their reference optimum once and runs every cell on them), and
the rows come back in instance order, so results do not depend on the executor or the number of
Spark partitions.  Everything but the times is deterministic: a reference optimum that hits its
node limit (``opt_node_limit``, the same point on every machine) is kept with its gap and its bound
used for the ratios, flagged by ``opt_status = time_limit``; only the time limit (a safety net,
``opt_time_limit``) stops at a point that depends on the machine's speed and load.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from skewbench import registry
from skewbench import replay as shared
from skewbench.allocation.model import OUTCOMES, Evaluation, Job, evaluate
from skewbench.errors import SkewbenchError
from skewbench.replay import Cell, Replayed

FAMILY = "allocation"
RHO_TOL = 1e-9


@dataclass(frozen=True)
class AllocConfig:
    """How a replay runs (not part of any cell)."""

    #: ``auto``: the reference optimum of every instance with at most ``opt_max_tasks`` tasks; ``off``: none
    optimum: str = "auto"
    opt_time_limit: float = 60.0
    #: HiGHS branch-and-bound nodes per reference optimum: the reproducible limit
    opt_node_limit: int = 20000
    opt_max_tasks: int = 200
    #: repeat a heuristic's invocation until this many seconds have passed, for its time per call
    min_time: float = 0.002
    #: instances per executor item
    chunk: int = 50

    def check(self) -> None:
        if self.optimum not in ("auto", "off"):
            raise SkewbenchError(f"--optimum must be auto or off, got {self.optimum!r}")
        if not self.opt_time_limit > 0:
            raise SkewbenchError(f"--opt-time-limit must be > 0 seconds, got {self.opt_time_limit}")
        if not (isinstance(self.opt_node_limit, int) and self.opt_node_limit >= 1):
            raise SkewbenchError(f"--opt-node-limit must be an integer >= 1, got {self.opt_node_limit}")
        if self.opt_max_tasks < 1:
            raise SkewbenchError(f"--opt-max-tasks must be >= 1, got {self.opt_max_tasks}")
        if not 0 <= self.min_time <= 10:
            raise SkewbenchError(f"--min-time must be in [0, 10] seconds, got {self.min_time}")
        if self.chunk < 1:
            raise SkewbenchError(f"--chunk must be >= 1, got {self.chunk}")


def grid(strategies: Sequence[str], seeds: Sequence[int], params: dict[str, dict[str, list[Any]]] | None = None
         ) -> list[Cell]:
    return shared.grid(FAMILY, strategies, {}, seeds, params)


def make(cell: Cell) -> Any:
    return registry.get(FAMILY, cell.strategy)(**cell.param_dict)


@dataclass
class _Reference:
    status: str
    gain: float | None
    gap: float | None


def _reference(job: Job, config: AllocConfig, cache: dict[tuple[str, float], Any]) -> _Reference:
    if config.optimum == "off":
        return _Reference("off", None, None)
    if job.m > config.opt_max_tasks:
        return _Reference("too_large", None, None)
    o = _solve(job, "auto", config.opt_time_limit, config.opt_node_limit, cache)
    if o.status == "optimal":
        return _Reference("optimal", float(o.gain), 0.0)
    if o.status == "time_limit" and o.bound is not None:
        return _Reference("time_limit", float(o.bound), float(o.gap) if o.gap is not None else None)
    return _Reference(o.status, None, None)


def _solve(job: Job, method: str, time_limit: float, node_limit: int, cache: dict[tuple, Any]) -> Any:
    from skewbench.allocation.opt import solve

    key = (method, float(time_limit), int(node_limit))
    if key not in cache:
        cache[key] = solve(job, method=method, time_limit=float(time_limit), node_limit=int(node_limit))
    return cache[key]


def _run(strategy: Any, job: Job, seed: int, config: AllocConfig, cache: dict) -> tuple[Any, float]:
    """The outcome of one invocation and its seconds per call (repeated up to ``min_time``)."""
    if strategy.exact:
        from skewbench.allocation.strategies.base import Outcome

        t0 = time.perf_counter()
        o = _solve(job, strategy.params["method"], float(strategy.params["time_limit"]),
                   int(strategy.params["node_limit"]), cache)
        sec = o.seconds if o.seconds is not None else time.perf_counter() - t0
        node = np.asarray(o.node, dtype=np.int64) if o.node is not None else np.full(job.m, -1, dtype=np.int64)
        stats = {"status": o.status, "method": o.method, **({"gap": float(o.gap)} if o.gap is not None else {})}
        return Outcome(node, job, stats), float(sec)
    t0 = time.perf_counter()
    out = strategy.allocate(job, seed)
    elapsed = time.perf_counter() - t0
    runs = 1
    while elapsed < config.min_time:
        strategy.allocate(job, seed)
        runs += 1
        elapsed = time.perf_counter() - t0
    return out, elapsed / runs


def outcome_code(ev: Evaluation, stats: dict[str, Any]) -> str:
    """The strategy's own outcome code (``stats["outcome"]``, one of :data:`~skewbench.allocation.
    model.OUTCOMES`: it tells FAIL-SLOTS and FAIL-SEARCH apart) when it reports one, else the one
    the allocation shows."""
    code = stats.get("outcome")
    if code is None:
        return ev.outcome
    if code not in OUTCOMES:
        raise RuntimeError(f"internal: outcome {code!r} is not one of {OUTCOMES}")
    return str(code)


def run_chunk(ds_path: str, cells: Sequence[Cell], instances: Sequence[int], config: AllocConfig
              ) -> list[list[dict[str, Any]]]:
    """Rows of every cell on the given instances: ``out[cell][k]`` for the k-th instance."""
    from skewbench.allocation.store import read_jobs

    jobs = read_jobs(ds_path, instances)
    strategies = [make(c) for c in cells]
    out: list[list[dict[str, Any]]] = [[] for _ in cells]
    for idx, job in zip(instances, jobs):
        cache: dict[tuple[str, float], Any] = {}
        t_ref = time.perf_counter()
        ref = _reference(job, config, cache)
        t_ref = time.perf_counter() - t_ref
        meta = json.dumps(job.meta, sort_keys=True, default=str)
        for ci, (cell, strategy) in enumerate(zip(cells, strategies)):
            t0 = time.perf_counter()
            outcome, sec = _run(strategy, job, cell.seed, config, cache)
            ev = evaluate(outcome.job, outcome.node)
            code = outcome_code(ev, outcome.stats)
            rho = None
            # only a complete allocation within capacity is compared with the optimum, which places
            # every task within capacity: an overloaded or partial one could keep more on-node
            if ref.gain is not None and code == "OK":
                rho = 1.0 if ref.gain <= 0 else ev.gain / ref.gain
                if rho > 1 + RHO_TOL:
                    raise RuntimeError(f"internal: {cell.strategy} gains {ev.gain} on instance {job.name}, more "
                                       f"than the optimum {ref.gain}")
                rho = min(rho, 1.0)
            out[ci].append({
                "cell_id": cell.cell_id, "strategy": cell.strategy, "seed": cell.seed, "window": int(idx),
                "instance": job.name, "instance_meta": meta, "tasks": job.m, "groups": job.G, "nodes": job.K,
                "measured": 0 if job.uniform else 1, "imc_total": ev.imc_total, "gain": ev.gain,
                "local_fraction": ev.local_fraction, "opt_status": ref.status, "opt_gain": ref.gain,
                "opt_gap": ref.gap, "optimality": rho, "success": int(ev.success), "unplaced": ev.unplaced,
                "violations": ev.violations, "max_utilisation": ev.max_utilisation, "nodes_used": ev.nodes_used,
                "outcome": code, "overload_excess": ev.overload_excess,
                "seconds": sec, "stats": json.dumps(outcome.stats, sort_keys=True, default=str),
                "_wall": time.perf_counter() - t0 + (t_ref if strategy.exact else 0.0),
            })
    return out


def _summary(cell: Cell, rows: list[dict[str, Any]], ds_meta: dict[str, Any], params: dict[str, Any]
             ) -> dict[str, Any]:
    gain = np.array([r["gain"] for r in rows])
    imc = np.array([r["imc_total"] for r in rows])
    sec = np.array([r["seconds"] for r in rows])
    with_ref = [r for r in rows if r["optimality"] is not None]
    rho = np.array([r["optimality"] for r in with_ref])
    opt_sum = float(sum(r["opt_gain"] for r in with_ref))
    g_ref = float(sum(r["gain"] for r in with_ref))
    opt_cut = float(sum(r["imc_total"] - r["opt_gain"] for r in with_ref))
    cut = float(sum(r["imc_total"] - r["gain"] for r in with_ref))
    full_ref = len(with_ref) == len(rows)  # every instance has a reference and a feasible allocation
    success = int(sum(r["success"] for r in rows))
    ok = int(sum(r["outcome"] == "OK" for r in rows))
    return {
        "cell_id": cell.cell_id, "dataset": ds_meta.get("name"), "dataset_fingerprint": ds_meta["fingerprint"],
        "strategy": cell.strategy, "seed": cell.seed, "params": json.dumps(params, sort_keys=True, default=str),
        "instances": len(rows), "instance": rows[0]["instance"] + ("..." if len(rows) > 1 else ""),
        "tasks": int(sum(r["tasks"] for r in rows)), "groups": int(sum(r["groups"] for r in rows)),
        "nodes": int(max(r["nodes"] for r in rows)),
        "gain_total": float(gain.sum()), "imc_total": float(imc.sum()),
        "local_fraction": float(gain.sum() / imc.sum()) if imc.sum() > 0 else 1.0,
        "opt_instances": int(sum(r["opt_gain"] is not None for r in rows)), "compared": len(with_ref),
        "opt_proven": int(sum(r["opt_status"] == "optimal" for r in rows)),
        "opt_gain_total": opt_sum if with_ref else None,
        "optimality": (min(1.0, g_ref / opt_sum) if opt_sum > 0 else 1.0) if with_ref else None,
        "optimality_mean": float(rho.mean()) if with_ref else None,
        "optimality_median": float(np.median(rho)) if with_ref else None,
        "optimality_min": float(rho.min()) if with_ref else None,
        "optimal_share": float(np.mean(rho >= 1 - RHO_TOL)) if with_ref else None,
        "cost_ratio": cut / opt_cut if full_ref and opt_cut > 1e-9 * max(1.0, float(imc.sum())) else None,
        "opt_gap_max": float(max((r["opt_gap"] or 0.0) for r in with_ref)) if with_ref else None,
        "success_rate": success / len(rows), "ok_rate": ok / len(rows),
        "unplaced": int(sum(r["unplaced"] for r in rows)),
        "overload_excess": float(np.mean([r["overload_excess"] for r in rows])),
        "violations": int(sum(r["violations"] for r in rows)),
        "max_utilisation": float(max(r["max_utilisation"] for r in rows)),
        "nodes_used_mean": float(np.mean([r["nodes_used"] for r in rows])),
        "seconds_total": float(sec.sum()), "seconds_median": float(np.median(sec)),
        "seconds_p95": float(np.percentile(sec, 95)),
        "allocations_per_s": success / float(sec.sum()) if sec.sum() > 0 else 0.0,
        "wall_seconds": float(sum(r["_wall"] for r in rows)),
    }


def replay(ds_path: str, cells: Sequence[Cell], config: AllocConfig, executor: shared.Executor) -> Replayed:
    """Run every cell on every instance of the dataset at ``ds_path``."""
    from skewbench.allocation.store import is_job_graph
    from skewbench.datasets.contract import open_dataset

    config.check()
    ds = open_dataset(ds_path)
    if not is_job_graph(ds.meta):
        from skewbench.allocation.store import read_jobs

        read_jobs(ds)  # raises the clear error
    n = int(ds.meta["job_graph"]["instances"])
    shared.refuse_series(n, len(cells), f"{n:,} instances", "fewer strategies, parameter values or seeds")
    chunks = [list(range(i, min(n, i + config.chunk))) for i in range(0, n, config.chunk)]
    t0 = time.perf_counter()
    results = executor(lambda ch: run_chunk(str(ds_path), cells, ch, config), chunks,
                       f"allocating {n} instances x {len(cells)} cells")
    seconds = time.perf_counter() - t0
    summary, series = [], []
    for ci, cell in enumerate(cells):
        rows = [r for chunk in results for r in chunk[ci]]
        summary.append(_summary(cell, rows, ds.meta, make(cell).describe_params()))
        series.extend({k: v for k, v in r.items() if not k.startswith("_")} for r in rows)
    return Replayed(summary=summary, series=series, seconds=seconds)


def replay_to_dir(ds_path: str, cells: Sequence[Cell], out_dir: str, config: AllocConfig | None = None,
                  executor: shared.Executor = shared.local_executor, overwrite: bool = False,
                  engine_name: str = "local") -> dict[str, Any]:
    config = config or AllocConfig()
    return shared.replay_to_dir(FAMILY, ds_path, cells, out_dir, lambda scratch: replay(str(ds_path), cells, config,
                                                                                            executor),
                                config=config, overwrite=overwrite, engine_name=engine_name)
