"""A toy operator shedder from outside skewbench: one module and one entry-point row
(in ``toystrategies-0.1.dist-info/entry_points.txt``), with nothing in skewbench edited for it to run.

Its rule: a tuple whose execution time exceeds ``limit`` ms is dropped outright; every other
tuple goes through the simulator's bound check (SHED/CHECK) with ``limit`` as its estimated
execution time, a pessimistic one, so it keeps fewer tuples than Full Knowledge would.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from skewbench.shedding.las import OperatorPlan
from skewbench.shedding.strategies.base import OperatorStrategy


class ToyShedder(OperatorStrategy):
    name = "toy-shed"
    description = "Toy shedder: drop tuples longer than limit ms, check the rest with limit as their estimate"
    extension = True
    defaults: ClassVar[dict[str, Any]] = {"limit": 4.0}
    param_docs = {"limit": "The longest execution time (ms) a kept tuple may have, and every kept tuple's estimate."}

    def _check(self) -> None:
        self._number("limit", 0, None, open_lo=True)

    def plan(self, keys, arrivals, durations, config, seed, coins=None):
        limit = float(self.params["limit"])
        return OperatorPlan(drop=durations > limit, check=True, estimates=np.full(len(keys), limit))
