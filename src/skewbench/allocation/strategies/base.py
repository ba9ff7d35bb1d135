"""What every allocation strategy is: a small class that holds and checks its parameters and
allocates one :class:`~skewbench.allocation.model.Job` (:class:`Strategy`), and the shell shared by
the heuristics of section 2 (:class:`Heuristic`).

A heuristic (:mod:`.td`, :mod:`.tl`, :mod:`.naive`, :mod:`.stormrr`, :mod:`.baselines`) works on a
uniform job (Eq. 1); :meth:`Heuristic.allocate` first splits a job with measured per-task costs or
per-link rates into skew subgroups (spec 2.7.3), runs the heuristic (once more on the
re-granularised job when ``retry`` is set and it fails, spec 2.7.1) and maps the allocation back
to the job's tasks.  The other strategies (the optimum, METIS, the engines' placements) take any
job as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from skewbench.allocation.model import Job
from skewbench.allocation.relax import split_skewed, with_retry
from skewbench.allocation.steps import Allocation
from skewbench.errors import SkewbenchError
from skewbench.registry import ParamStrategy

__all__ = ["Outcome", "Strategy", "Heuristic", "scalar_stats"]


@dataclass
class Outcome:
    """What a strategy returns: the node of every task of ``job`` (-1 = unplaced) and its facts."""

    node: np.ndarray
    job: Job
    stats: dict[str, Any] = field(default_factory=dict)


def scalar_stats(info: dict[str, Any]) -> dict[str, Any]:
    """The facts of ``info`` that are plain scalars (what the ``stats`` column holds)."""
    return {k: v for k, v in info.items() if isinstance(v, (bool, int, float, str))}


class Strategy(ParamStrategy):
    """An allocation strategy: parameters checked by :class:`skewbench.registry.ParamStrategy`."""

    #: False for strategies that may overload a node by design (Storm's round robin)
    respects_capacity: ClassVar[bool] = True
    #: True for the exact optimum (its own time limit; never repeated for timing)
    exact: ClassVar[bool] = False
    #: parameter sets the conformance test runs besides the defaults (they exercise more state)
    exercise: ClassVar[list[dict[str, Any]]] = []

    def _positive(self, key: str) -> None:
        self._number(key, lo=0, open_lo=True)

    def describe_params(self) -> dict[str, Any]:
        return dict(self.params)

    def allocate(self, job: Job, seed: int) -> Outcome:
        raise NotImplementedError


class Heuristic(Strategy):
    """A heuristic of section 2 run on the uniform job (or its skew subgroups): subclasses define
    :meth:`run` on a uniform job; :meth:`allocate` adds the split, the retry and the map-back."""

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

    def run(self, job: Job, seed: int) -> Allocation:
        """The heuristic on a uniform job."""
        raise NotImplementedError

    def allocate(self, job: Job, seed: int) -> Outcome:
        """The heuristic on ``job``: split into skew subgroups when it is measured, retried on the
        re-granularised job when ``retry`` is set, the node array mapped back to ``job``'s tasks (a
        retried allocation refers to the re-granularised job: ``Outcome.job``)."""
        work, origin = (job, None) if job.uniform else split_skewed(job, float(self.params["skew_eps"]))
        if self.params["retry"]:
            a = with_retry(lambda j: self.run(j, seed), work)
        else:
            a = self.run(work, seed)
        stats = scalar_stats(a.info)
        if origin is not None:
            stats["subgroups"] = work.G
        node = np.asarray(a.node, dtype=np.int64)
        if a.job is not None:  # re-granularised: the allocation is of another job
            return Outcome(node, a.job, stats)
        if origin is not None:
            mapped = np.full(job.m, -1, dtype=np.int64)
            mapped[origin] = node
            node = mapped
        return Outcome(node, job, stats)
