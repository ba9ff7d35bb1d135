"""LAS, Load-Aware Shedding (las.spec.md): CHECK with the simulator's online estimator, a
Count-Min sketch of execution times per key that the operator measures and ships back
(:mod:`skewbench.shedding.las`), over-estimated by ``1 + inflation``."""

from __future__ import annotations

from typing import Any, ClassVar

from skewbench.errors import SkewbenchError
from skewbench.shedding.strategies.base import GOAL_DOC, OperatorStrategy

#: LAS's window N at most (the warm-up sample holds 8 N tuples; the paper's N is 1,024)
MAX_LAS_WINDOW = 1_000_000


class LAS(OperatorStrategy):
    name = "las"
    description = "Load-Aware Shedding: Count-Min estimates of execution times, drops to keep the average wait <= tau"
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
        "goal": GOAL_DOC,
    }
    # matrices shipped every few dozen executions, a cold start in NOP; the ablations
    exercise: ClassVar[list[dict[str, Any]]] = [{"window": 64, "warm": False},
                                                {"window": 128, "literal_sync": True, "goal": "max"}]
    bench_target: ClassVar[float | None] = 20

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

    def plan(self, keys, arrivals, durations, config, seed, coins=None):
        """Every tuple through CHECK with the online Count-Min estimate, inflated by
        ``config.inflation`` (``config.epsilon`` when None, A25)."""
        from skewbench.shedding.las import OperatorPlan

        infl = config.epsilon if config.inflation is None else float(config.inflation)
        return OperatorPlan(check=True, online=True, inflation=float(infl))
