"""The LAS paper's comparison shedders (las.spec.md 2.5) and a no-shedding reference.

* :class:`BaseLine` drops each tuple with probability ``u``, the known under-provisioning
  (2.5.1, A11): its coins are drawn from the run seed.
* :class:`StrawMan` and :class:`FullKnowledge` run LAS's SHED/CHECK with a fixed estimate: the
  stream's average execution time for every tuple, or every tuple's exact one (A9, A10).
* :class:`NoShedding` keeps every tuple.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from skewbench.errors import SkewbenchError
from skewbench.shedding.strategies.base import OperatorStrategy, StaticEstimator


class BaseLine(OperatorStrategy):
    name = "bl"
    description = "Base Line: drop each tuple at random with probability u, the known under-provisioning"
    bench_target: ClassVar[float | None] = 20

    def plan(self, keys, arrivals, durations, config, seed, coins=None):
        from skewbench.shedding.las import OperatorPlan, bl_coins

        if math.isnan(config.u):
            raise SkewbenchError("las: u must be a number, got nan")
        if coins is None:
            coins = bl_coins(seed, len(keys))
        return OperatorPlan(drop=coins < max(0.0, float(config.u)))


class StrawMan(StaticEstimator):
    name = "sm"
    description = "Straw-Man: the LAS shedder with the stream's average execution time for every tuple"
    exercise: ClassVar[list[dict[str, Any]]] = [{"goal": "max"}]
    bench_target: ClassVar[float | None] = 20

    def estimates(self, keys, arrivals, durations, config) -> float:
        if not (config.wbar >= 0 and math.isfinite(config.wbar)):
            raise SkewbenchError(f"las: wbar must be finite and >= 0, got {config.wbar!r}")
        return float(config.wbar)


class FullKnowledge(StaticEstimator):
    name = "fk"
    description = ("Full Knowledge: the LAS shedder with every tuple's exact execution time (the best online greedy; "
                   "drop_optimality compares it with the offline optimum)")
    exercise: ClassVar[list[dict[str, Any]]] = [{"goal": "max"}]
    bench_target: ClassVar[float | None] = 20

    def estimates(self, keys, arrivals, durations, config) -> np.ndarray:
        return durations


class NoShedding(OperatorStrategy):
    name = "ns"
    description = "No shedding: keep every tuple (a diagnostic reference, not in the paper)"
    extension = True

    def plan(self, keys, arrivals, durations, config, seed, coins=None):
        from skewbench.shedding.las import OperatorPlan

        return OperatorPlan()
