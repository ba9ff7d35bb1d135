"""The shedding family's strategies: small classes that hold and check a strategy's parameters
and build the configuration of its simulator (:mod:`skewbench.shedding.las` for the operator
shedders, :mod:`skewbench.shedding.shedpart` for the partition shedders).

A strategy is constructed with its parameters only (``Strategy(**params)``); unknown names and
bad values raise :class:`~skewbench.errors.SkewbenchError`.  ``kind`` is ``"operator"`` or
``"partition"``; ``extension = True`` marks a strategy that is not in the papers.
"""

from __future__ import annotations

from typing import Any, ClassVar

from skewbench.errors import SkewbenchError
from skewbench.registry import ParamStrategy


class Strategy(ParamStrategy):
    """A shedding strategy: parameters checked by :class:`skewbench.registry.ParamStrategy`."""

    kind: ClassVar[str] = ""


# --------------------------------------------------------------------------------------------
# operator shedders (las.spec.md)

#: LAS's window N at most (the warm-up sample holds 8 N tuples; the paper's N is 1,024)
MAX_LAS_WINDOW = 1_000_000
_GOAL_DOC = "The CHECK goal: avg (the running average AVG(tau), the paper's) or max (drop if the estimate exceeds tau)."


class OperatorStrategy(Strategy):
    kind = "operator"
    #: the simulator's kind (skewbench.shedding.las.KINDS)
    las_kind: ClassVar[str] = ""

    def _check(self) -> None:
        if "goal" in self.params:
            self._choice("goal", ("avg", "max"))

    def config(self, tau: float, u: float, wbar: float) -> Any:
        from skewbench.shedding.las import LASConfig

        extra = {k: self.params[k] for k in ("goal",) if k in self.params}
        return LASConfig(tau=float(tau), u=float(u), wbar=float(wbar), **extra)

    @property
    def warm(self) -> bool:
        return False


class LAS(OperatorStrategy):
    name = "las"
    description = "Load-Aware Shedding: Count-Min estimates of execution times, drops to keep the average wait <= tau"
    las_kind = "las"
    defaults: ClassVar[dict[str, Any]] = {"epsilon": 0.05, "delta": 0.1, "window": 1024, "mu": 0.05,
                                          "inflation": None, "warm": True, "literal_clock": False,
                                          "literal_sync": False, "goal": "avg"}
    param_docs = {
        "epsilon": "Count-Min precision: c = round(e/epsilon) columns, and the (1+epsilon) over-estimate factor.",
        "delta": "Count-Min failure probability: r = ceil(log2(1/delta)) rows.",
        "window": "N, the executed tuples between two stability checks of the operator.",
        "mu": "The stability tolerance of the operator's snapshot test.",
        "inflation": "An ablation: the over-estimate factor's epsilon when it differs from the sketch's (none = epsilon).",
        "warm": "Start with a matrix pair from an untimed warm-up sample (las.spec.md A5) instead of cold in NOP mode.",
        "literal_clock": "An ablation: the paper's unclamped clock (estimates may go negative when the operator idles).",
        "literal_sync": "An ablation: apply every correction in full, without the guard against outstanding syncs.",
        "goal": _GOAL_DOC,
    }

    def _check(self) -> None:
        super()._check()
        self._number("epsilon", 0, None)
        self._number("delta", 0, 1, open_lo=True)
        if self.params["delta"] >= 1:
            raise SkewbenchError(f"las: parameter delta must be in (0, 1), got {self.params['delta']!r}")
        from skewbench.shedding.las import sketch_shape

        sketch_shape(float(self.params["epsilon"]), float(self.params["delta"]))  # its rows are bounded
        self._number("window", 1, MAX_LAS_WINDOW, integer=True)  # the warm-up sample holds 8 windows
        self._number("mu", None, None)
        if self.params["inflation"] is not None:
            self._number("inflation", 0, None)
        for k in ("warm", "literal_clock", "literal_sync"):
            if not isinstance(self.params[k], bool) and self.params[k] not in (0, 1):
                raise SkewbenchError(f"las: parameter {k} must be true or false, got {self.params[k]!r}")

    def config(self, tau: float, u: float, wbar: float) -> Any:
        from skewbench.shedding.las import LASConfig

        p = self.params
        return LASConfig(tau=float(tau), epsilon=float(p["epsilon"]), delta=float(p["delta"]), window=int(p["window"]),
                         mu=float(p["mu"]), inflation=None if p["inflation"] is None else float(p["inflation"]),
                         literal_clock=bool(p["literal_clock"]), literal_sync=bool(p["literal_sync"]), goal=p["goal"],
                         u=float(u), wbar=float(wbar))

    @property
    def warm(self) -> bool:
        return bool(self.params["warm"])


class BaseLine(OperatorStrategy):
    name = "bl"
    description = "Base Line: drop each tuple at random with probability u, the known under-provisioning"
    las_kind = "bl"


class StrawMan(OperatorStrategy):
    name = "sm"
    description = "Straw-Man: the LAS shedder with the stream's average execution time for every tuple"
    las_kind = "sm"
    defaults: ClassVar[dict[str, Any]] = {"goal": "avg"}
    param_docs = {"goal": _GOAL_DOC}


class FullKnowledge(OperatorStrategy):
    name = "fk"
    description = "Full Knowledge: the LAS shedder with every tuple's exact execution time (the best online greedy; drop_optimality compares it with the offline optimum)"
    las_kind = "fk"
    defaults: ClassVar[dict[str, Any]] = {"goal": "avg"}
    param_docs = {"goal": _GOAL_DOC}


class NoShedding(OperatorStrategy):
    name = "ns"
    description = "No shedding: keep every tuple (a diagnostic reference, not in the paper)"
    las_kind = "ns"
    extension = True


# --------------------------------------------------------------------------------------------
# partition shedders (shedpart.spec.md)


class PartitionStrategy(Strategy):
    kind = "partition"
    partitioner: ClassVar[str] = "fld"
    shed: ClassVar[bool] = False
    early_exit: ClassVar[bool] = False

    def config(self, range_s: float, slide_s: float, workers: int, error: float, confidence: float) -> Any:
        from skewbench.shedding.shedpart import ShedPartConfig

        extra: dict[str, Any] = {}
        p = self.params
        if self.shed:
            extra = {"threshold_g": int(p["threshold_g"]), "precheck": float(p["precheck"]),
                     "precheck_literal": bool(p["precheck_literal"]), "mode": p["mode"], "z_rule": p["z_rule"],
                     "n_min": int(p["n_min"])}
        return ShedPartConfig(range_s=float(range_s), slide_s=float(slide_s), workers=int(workers),
                              error=float(error), confidence=float(confidence), partitioner=self.partitioner,
                              shed=self.shed, early_exit=self.early_exit, **extra)


class _ShedPartBase(PartitionStrategy):
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

    def _check(self) -> None:
        self._number("threshold_g", 1, None, integer=True)
        self._number("precheck", 0, 100)
        self._number("n_min", 1, None, integer=True)
        self._choice("mode", ("exact", "paper"))
        self._choice("z_rule", ("two-sided", "one-sided"))
        if not isinstance(self.params["precheck_literal"], bool) and self.params["precheck_literal"] not in (0, 1):
            raise SkewbenchError(f"{self.name}: parameter precheck_literal must be true or false")


class ShedPart(_ShedPartBase):
    name = "shedpart"
    description = "ShedPart on Storm fields grouping: trims heavy groups of the most loaded workers per window"


class ShedPartEE(_ShedPartBase):
    name = "shedpart-ee"
    description = "ShedPart with early exit: stops a worker's scan once it is no longer the most loaded (extension)"
    extension = True
    early_exit = True


class ShedPartPKG(_ShedPartBase):
    name = "shedpart-pkg"
    description = "ShedPart on partial key grouping, each group on two workers (extension)"
    extension = True
    partitioner = "pkg"


class ShedPartShuffle(_ShedPartBase):
    name = "shedpart-shuffle"
    description = "ShedPart on shuffle grouping, where it is plain load shedding (extension, a limiting case)"
    extension = True
    partitioner = "shuffle"


class FieldsGrouping(PartitionStrategy):
    name = "fld"
    description = "Storm fields grouping (Java hash of the key), every tuple aggregated: the papers' baseline"


class PKGOnly(PartitionStrategy):
    name = "pkg-only"
    description = "Partial key grouping without shedding (extension)"
    extension = True
    partitioner = "pkg"


class ShuffleOnly(PartitionStrategy):
    name = "shuffle-only"
    description = "Shuffle grouping without shedding (extension)"
    extension = True
    partitioner = "shuffle"
