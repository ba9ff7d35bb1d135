"""The METIS graph-partitioning baseline as a registry class: the partitioner and its capacity repair
are :mod:`skewbench.allocation.partition`."""

from __future__ import annotations

import numpy as np

from skewbench.allocation.model import Job
from skewbench.allocation.partition import metis
from skewbench.allocation.strategies.base import Outcome, Strategy, scalar_stats

__all__ = ["Metis"]


class Metis(Strategy):
    name = "metis"
    description = "METIS graph partitioning of the task graph into K parts by capacity, then a capacity repair"
    extension = True

    def allocate(self, job: Job, seed: int) -> Outcome:
        node, info = metis(job, seed=seed)
        return Outcome(np.asarray(node, dtype=np.int64), job, scalar_stats(info))
