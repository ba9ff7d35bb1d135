"""ShedPart (shedpart.spec.md): at each window's end, down-sample heavy groups of the most loaded
workers within a relative error budget (Algorithm 1 in :mod:`skewbench.shedding.shedpart`), on
each routing of :mod:`.partition`: Storm fields grouping (the paper's), PKG and shuffle grouping
(extensions), and the early-exit variant."""

from __future__ import annotations

from typing import Any, ClassVar

from skewbench.errors import SkewbenchError
from skewbench.shedding.strategies.base import PartitionStrategy
from skewbench.shedding.strategies.partition import FieldsGrouping, PKGOnly, ShuffleOnly


class ShedPartRule(PartitionStrategy):
    """ShedPart's parameters and checks, mixed into a routing class (``ShedPart(ShedPartRule, FieldsGrouping)``)."""

    shed = True
    defaults: ClassVar[dict[str, Any]] = {"threshold_g": 3, "precheck": 15.0, "precheck_literal": False,
                                          "mode": "exact", "z_rule": "two-sided", "n_min": 1}
    param_docs = {
        "threshold_g": "T_g, the window frequency from which a group is a heavy hitter (a trimming candidate).",
        "precheck": "The pre-check threshold in percent of the window: Algorithm 1 runs only when the potential saving reaches it.",
        "precheck_literal": "An ablation: the paper's unclipped pre-check |D - D'| instead of the clipped one (A9).",
        "mode": "exact (exact counts and statistics for every group) or paper (Count-Min counts, promotion at T_g).",
        "z_rule": "two-sided (z = 1.96 at 95%, needed for a bound on |error|) or one-sided (the paper's literal 1.645).",
        "n_min": "The smallest sample size a trimmed group keeps.",
    }
    # some windows skipped by the pre-check; Count-Min counts
    exercise: ClassVar[list[dict[str, Any]]] = [{"precheck": 37.0}, {"mode": "paper", "threshold_g": 5}]
    bench_target: ClassVar[float | None] = None

    def _check(self) -> None:
        self._number("threshold_g", 1, None, integer=True)
        self._number("precheck", 0, 100)
        self._number("n_min", 1, None, integer=True)
        self._choice("mode", ("exact", "paper"))
        self._choice("z_rule", ("two-sided", "one-sided"))
        if not isinstance(self.params["precheck_literal"], bool) and self.params["precheck_literal"] not in (0, 1):
            raise SkewbenchError(f"{self.name}: parameter precheck_literal must be true or false")


class ShedPart(ShedPartRule, FieldsGrouping):
    name = "shedpart"
    description = "ShedPart on Storm fields grouping: trims heavy groups of the most loaded workers per window"
    bench_target: ClassVar[float | None] = 50


class ShedPartEE(ShedPart):
    name = "shedpart-ee"
    description = "ShedPart with early exit: stops a worker's scan once it is no longer the most loaded (extension)"
    extension = True
    early_exit = True
    bench_target: ClassVar[float | None] = None


class ShedPartPKG(ShedPartRule, PKGOnly):
    name = "shedpart-pkg"
    description = "ShedPart on partial key grouping, each group on two workers (extension)"


class ShedPartShuffle(ShedPartRule, ShuffleOnly):
    name = "shedpart-shuffle"
    description = "ShedPart on shuffle grouping, where it is plain load shedding (extension, a limiting case)"
