"""The allocation family's strategies: small classes that hold and check a strategy's parameters
and run its algorithm on one :class:`~skewbench.allocation.model.Job`.

The heuristics (:mod:`skewbench.allocation.algorithms`) work on uniform jobs (Eq. 1); a job with
measured per-task costs or per-link rates is first split into skew subgroups (spec 2.7.3) and the
allocation mapped back to its tasks.  OPT (:mod:`skewbench.allocation.opt`) and the METIS
partitioner (:mod:`skewbench.allocation.partition`) take any job as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from skewbench.allocation.model import Job
from skewbench.errors import SkewbenchError
from skewbench.registry import ParamStrategy


@dataclass
class Outcome:
    """What a strategy returns: the node of every task of ``job`` (-1 = unplaced) and its facts."""

    node: np.ndarray
    job: Job
    stats: dict[str, Any] = field(default_factory=dict)


class Strategy(ParamStrategy):
    """An allocation strategy: parameters checked by :class:`skewbench.registry.ParamStrategy`."""

    #: False for strategies that may overload a node by design (Storm's round robin)
    respects_capacity: ClassVar[bool] = True
    #: True for the exact optimum (its own time limit; never repeated for timing)
    exact: ClassVar[bool] = False

    def _positive(self, key: str) -> None:
        self._number(key, lo=0, open_lo=True)

    def describe_params(self) -> dict[str, Any]:
        return dict(self.params)

    def allocate(self, job: Job, seed: int) -> Outcome:
        raise NotImplementedError


class Heuristic(Strategy):
    """A heuristic of section 2 run on the uniform job (or its skew subgroups)."""

    defaults: ClassVar[dict[str, Any]] = {"retry": False, "skew_eps": 0.1}
    param_docs: ClassVar[dict[str, str]] = {
        "retry": "On failure, retry once on the re-granularised job (spec 2.7.1).",
        "skew_eps": "Measured (non-uniform) jobs: the largest max/min cost ratio inside a subgroup is 1 + eps "
                    "(spec 2.7.3).",
    }

    def _check(self) -> None:
        if not isinstance(self.params["retry"], bool):
            raise SkewbenchError(f"{self.name}: parameter retry must be true or false, got {self.params['retry']!r}")
        self._positive("skew_eps")

    def run(self, job: Job, seed: int) -> Any:  # -> algorithms.Allocation
        raise NotImplementedError

    def allocate(self, job: Job, seed: int) -> Outcome:
        from skewbench.allocation import algorithms as alg

        work, origin = (job, None) if job.uniform else alg.split_skewed(job, float(self.params["skew_eps"]))
        if self.params["retry"]:
            a = alg.with_retry(lambda j: self.run(j, seed), work)
        else:
            a = self.run(work, seed)
        stats = {k: v for k, v in a.info.items() if isinstance(v, (bool, int, float, str))}
        if origin is not None:
            stats["subgroups"] = work.G
        if a.job is not None:  # re-granularised: the allocation is of another job
            return Outcome(np.asarray(a.node, dtype=np.int64), a.job, stats)
        node = np.asarray(a.node, dtype=np.int64)
        if origin is not None:
            mapped = np.full(job.m, -1, dtype=np.int64)
            mapped[origin] = node
            node = mapped
        return Outcome(node, job, stats)


class TD(Heuristic):
    name = "td"
    description = "TD: the top-down group-aware heuristic (collocates whole group pairs, splits proportionally)"
    defaults = {**Heuristic.defaults, "key": "rs", "k0": "shrink", "second": "all"}
    param_docs = {**Heuristic.param_docs,
                  "key": "Edge priority: rs (relative significance C_e/(P_i+P_j), the paper's TD) or imc (C_e).",
                  "k0": "When no balanced split fits: shrink (1 + r' tasks, the spec's fix A7) or push (the literal "
                        "algorithm: the rest to the singles).",
                  "second": "Mode second: all hosting nodes (A8) or first (the literal algorithm)."}

    def _check(self) -> None:
        super()._check()
        self._choice("key", ("rs", "imc"))
        self._choice("k0", ("shrink", "push"))
        self._choice("second", ("all", "first"))

    def run(self, job: Job, seed: int) -> Any:
        from skewbench.allocation.algorithms import td

        return td(job, key=self.params["key"], k0=self.params["k0"], second=self.params["second"])


class TDIMC(TD):
    name = "td-imc"
    description = "TD prioritised by the group-pair IMC C_e (the paper's TD-IMC of Fig. 8)"
    defaults = {**TD.defaults, "key": "imc"}


class TL(Heuristic):
    name = "tl"
    description = "TL: the task-level pair heuristic prioritised by the group-pair IMC C_e (the paper's TL)"
    defaults = {**Heuristic.defaults, "key": "imc"}
    param_docs = {**Heuristic.param_docs,
                  "key": "Pair priority: imc (C_e, the paper's TL), imct (the per-link w_e) or rs (RS(e))."}

    def _check(self) -> None:
        super()._check()
        self._choice("key", ("imc", "imct", "rs"))

    def run(self, job: Job, seed: int) -> Any:
        from skewbench.allocation.algorithms import tl

        return tl(job, key=self.params["key"], seed=seed)


class TLIMCt(TL):
    name = "tl-imct"
    description = "TL prioritised by the per-link IMC w_e (classic pair fusion)"
    defaults = {**TL.defaults, "key": "imct"}


class TLRS(TL):
    name = "tl-rs"
    description = "TL prioritised by the relative significance RS(e) of each pair's edge"
    defaults = {**TL.defaults, "key": "rs"}


class Naive(Heuristic):
    name = "naive"
    description = "NAIVE: fusion of task pairs by per-link IMC, first node that fits (spec 2.1)"

    def run(self, job: Job, seed: int) -> Any:
        from skewbench.allocation.algorithms import naive

        return naive(job, seed=seed)


class StormRR(Heuristic):
    name = "storm"
    description = "Storm's default scheduler: round robin over the nodes the load needs (may overload a node)"
    respects_capacity = False
    defaults = {**Heuristic.defaults, "kuse": "load"}
    param_docs = {**Heuristic.param_docs,
                  "kuse": "Nodes used: load (ceil(sum P / mu), grown until the loads fit; A16), all (every node), "
                          "or a whole number."}

    def _check(self) -> None:
        super()._check()
        k = self.params["kuse"]
        if k not in ("load", "all") and not (isinstance(k, int) and not isinstance(k, bool) and k >= 1):
            raise SkewbenchError(f"{self.name}: parameter kuse must be load, all or an integer >= 1, got {k!r}")

    def run(self, job: Job, seed: int) -> Any:
        from skewbench.allocation.algorithms import storm_rr

        return storm_rr(job, kuse=self.params["kuse"])


class RandomFit(Heuristic):
    name = "random"
    description = "Random fit: each task on a random node with room (a sanity baseline, spec 2.6)"
    extension = True

    def run(self, job: Job, seed: int) -> Any:
        from skewbench.allocation.algorithms import random_fit

        return random_fit(job, seed=seed)


class FFD(Heuristic):
    name = "ffd"
    description = "Worst-fit decreasing of all tasks, no communication awareness (the singles step alone; spec 2.6)"
    extension = True

    def run(self, job: Job, seed: int) -> Any:
        from skewbench.allocation.algorithms import ffd

        return ffd(job)


class OPT(Strategy):
    name = "opt"
    description = "OPT: the exact optimum (configuration or task-level MILP in HiGHS), within a node and a time limit"
    exact = True
    defaults = {"method": "auto", "time_limit": 60.0, "node_limit": 20000}
    param_docs = {"method": "auto (F2 for identical nodes and uniform costs, else F1), f1, f2 or f3 (CP-SAT).",
                  "time_limit": "Seconds per instance; the incumbent and its gap are kept when it is hit "
                                "(where it is hit depends on the machine: node_limit is the reproducible limit).",
                  "node_limit": "Branch-and-bound nodes per instance (HiGHS); the incumbent and its gap are kept "
                                "when it is hit, at the same point on every machine."}

    def _check(self) -> None:
        self._choice("method", ("auto", "f1", "f2", "f3"))
        self._positive("time_limit")
        self._positive("node_limit")

    def allocate(self, job: Job, seed: int) -> Outcome:
        from skewbench.allocation.opt import solve

        o = solve(job, method=self.params["method"], time_limit=float(self.params["time_limit"]),
                  node_limit=int(self.params["node_limit"]))
        node = np.asarray(o.node, dtype=np.int64) if o.node is not None else np.full(job.m, -1, dtype=np.int64)
        return Outcome(node, job, {"status": o.status, "method": o.method,
                                   **({"gap": float(o.gap)} if o.gap is not None else {})})


class Metis(Strategy):
    name = "metis"
    description = "METIS graph partitioning of the task graph into K parts by capacity, then a capacity repair"
    extension = True

    def allocate(self, job: Job, seed: int) -> Outcome:
        from skewbench.allocation.partition import metis

        node, info = metis(job, seed=seed)
        return Outcome(np.asarray(node, dtype=np.int64), job,
                       {k: v for k, v in info.items() if isinstance(v, (bool, int, float, str))})
