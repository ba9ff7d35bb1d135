"""What a shedding strategy is: a class that holds and checks its parameters and carries its
decision rule, which the family's machinery runs.

A strategy is constructed with its parameters only (``Strategy(**params)``); unknown names and
bad values raise :class:`~skewbench.errors.SkewbenchError`.  ``kind`` is ``"operator"`` or
``"partition"``; ``extension = True`` marks a strategy that is not in the papers.

* An **operator shedder** (:class:`OperatorStrategy`, las.spec.md) decides per tuple in front of
  one FIFO operator.  Its rule is :meth:`OperatorStrategy.plan`, which returns a
  :class:`skewbench.shedding.las.OperatorPlan` for a stream: the tuples it drops outright,
  whether the others go through the SHED/CHECK bound test, and where CHECK's execution-time
  estimates come from (an array it computes, or the simulator's online Count-Min estimator).
* A **partition shedder** (:class:`PartitionStrategy`, shedpart.spec.md) routes a keyed,
  windowed aggregation over V workers; its rule is :meth:`PartitionStrategy.route`, and
  ``shed = True`` runs ShedPart's Algorithm 1 at each window's end.

Settings the benchmarks and the conformance test read: ``exercise`` (parameter sets that reach
more of the strategy's state than its defaults on the conformance stream) and ``bench_target``
(the kernel benchmark's target time ratio, None: not benchmarked).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from skewbench.registry import ParamStrategy

#: the CHECK goal's parameter documentation, shared by the shedders that check
GOAL_DOC = "The CHECK goal: avg (the running average AVG(tau), the paper's) or max (drop if the estimate exceeds tau)."


class Strategy(ParamStrategy):
    """A shedding strategy: parameters checked by :class:`skewbench.registry.ParamStrategy`."""

    kind: ClassVar[str] = ""
    #: parameter sets the conformance test runs besides the defaults
    exercise: ClassVar[list[dict[str, Any]]] = []
    #: the kernel benchmark's target time ratio against its numpy baseline (None: no row)
    bench_target: ClassVar[float | None] = None


class OperatorStrategy(Strategy):
    """An operator shedder (las.spec.md): a subclass implements :meth:`plan`."""

    kind = "operator"

    def _check(self) -> None:
        if "goal" in self.params:
            self._choice("goal", ("avg", "max"))

    def config(self, tau: float, u: float, wbar: float) -> Any:
        """The simulator's settings at bound ``tau`` (ms), under-provisioning ``u`` and mean cost ``wbar``."""
        from skewbench.shedding.las import LASConfig

        extra = {k: self.params[k] for k in ("goal",) if k in self.params}
        return LASConfig(tau=float(tau), u=float(u), wbar=float(wbar), **extra)

    @property
    def warm(self) -> bool:
        """Whether the shedder wants a warm-up sample (the online estimator's, las.spec.md A5)."""
        return False

    def plan(self, keys: np.ndarray, arrivals: np.ndarray, durations: np.ndarray, config: Any, seed: int,
             coins: np.ndarray | None = None) -> Any:
        """The shedder's decision inputs for one stream: a :class:`skewbench.shedding.las.OperatorPlan`.

        ``keys``, ``arrivals`` and ``durations`` are the checked stream, ``config`` its
        :class:`~skewbench.shedding.las.LASConfig`, ``seed`` the run seed and ``coins`` uniform
        draws given by the caller (a randomised rule draws its own from ``seed`` otherwise).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement plan()")

    def simulate(self, keys, arrivals, durations, config: Any, seed: int = 0, **options: Any) -> Any:
        """Run this shedder in front of the operator: :func:`skewbench.shedding.las.simulate`."""
        from skewbench.shedding import las

        return las.simulate(self, keys, arrivals, durations, config, seed, **options)


class StaticEstimator(OperatorStrategy):
    """An operator shedder that runs SHED/CHECK on every tuple with an execution-time estimate
    fixed before the run (las.spec.md 2.3 with A9, A10): a subclass implements :meth:`estimates`."""

    defaults: ClassVar[dict[str, Any]] = {"goal": "avg"}
    param_docs = {"goal": GOAL_DOC}

    def estimates(self, keys: np.ndarray, arrivals: np.ndarray, durations: np.ndarray,
                  config: Any) -> np.ndarray | float:
        """Each tuple's estimated execution time (ms, finite and >= 0), or one for every tuple."""
        raise NotImplementedError(f"{type(self).__name__} must implement estimates()")

    def plan(self, keys, arrivals, durations, config, seed, coins=None):
        from skewbench.shedding.las import OperatorPlan

        return OperatorPlan(check=True, estimates=self.estimates(keys, arrivals, durations, config))


class PartitionStrategy(Strategy):
    """A partition shedder (shedpart.spec.md): a subclass implements :meth:`route`."""

    kind = "partition"
    #: the routing's name, reported in a cell's stats
    partitioner: ClassVar[str] = ""
    #: whether ShedPart's Algorithm 1 runs at each window's end
    shed: ClassVar[bool] = False
    #: ShedPart-EE: stop a worker's scan once it is no longer the most loaded
    early_exit: ClassVar[bool] = False

    def config(self, range_s: float, slide_s: float, workers: int, error: float, confidence: float) -> Any:
        """The window machinery's settings: query window, V workers and the error budget."""
        from skewbench.shedding.shedpart import ShedPartConfig

        extra: dict[str, Any] = {}
        p = self.params
        if self.shed:
            extra = {"threshold_g": int(p["threshold_g"]), "precheck": float(p["precheck"]),
                     "precheck_literal": bool(p["precheck_literal"]), "mode": p["mode"], "z_rule": p["z_rule"],
                     "n_min": int(p["n_min"])}
        return ShedPartConfig(range_s=float(range_s), slide_s=float(slide_s), workers=int(workers),
                              error=float(error), confidence=float(confidence), shed=self.shed,
                              early_exit=self.early_exit, **extra)

    def route(self, ukeys: np.ndarray, gid: np.ndarray, workers: int,
              hash_seed: int) -> tuple[np.ndarray, list[tuple[int, ...]]]:
        """Route a stream in arrival order: ``ukeys`` are its distinct keys (sorted), ``gid[i]``
        tuple ``i``'s index among them.  Returns each tuple's worker (int64) and each distinct
        key's routing set ``R(g)`` (sorted worker tuples), which ShedPart trims over."""
        raise NotImplementedError(f"{type(self).__name__} must implement route()")

    def replay(self, ts, keys, values, config: Any, seed: int = 0, **options: Any) -> Any:
        """Run this strategy over a stream's windows: :func:`skewbench.shedding.shedpart.replay`."""
        from skewbench.shedding import shedpart

        return shedpart.replay(self, ts, keys, values, config, seed, **options)

