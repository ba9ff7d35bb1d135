"""Batch plumbing the strategies share: :class:`Routed`, the common part of the strategies
that route with one compiled kernel call per batch and keep one local load vector per source
(KG, SG, PKG and the head-aware strategies of :mod:`~skewbench.grouping.strategies.dchoices`, the engines'
partitioners of :mod:`~skewbench.grouping.strategies.engines`), and :func:`route_in_steps`, for kernels
that stop when a table of theirs must grow first."""

from __future__ import annotations

import numpy as np

from typing import Callable

from skewbench.grouping.base import Batch, Strategy, batch_arrays

__all__ = ["Routed", "route_in_steps"]


def route_in_steps(batch: Batch, step: Callable[[np.ndarray, np.ndarray, int, np.ndarray], int],
                   grow: Callable[[], None]) -> np.ndarray:
    """The workers of a batch routed by ``step(seq, key, i, out)``, a kernel call that routes
    from tuple ``i`` on and returns the index of the first tuple it did not route (the batch's
    length when done): whenever it stops early, ``grow()`` makes room and the call resumes
    there."""
    seq, key = batch_arrays(batch)
    out = np.empty(seq.size, dtype=np.int64)
    i = 0
    while i < seq.size:
        i = int(step(seq, key, i, out))
        if i < seq.size:
            grow()
    return out


class Routed(Strategy):
    """Per-source local load vectors ``l_j`` (``sources x workers``) and the batch plumbing: a
    subclass implements :meth:`_kernel`, which routes the checked arrays of one batch into
    ``out`` and adds each tuple to its source's ``l_j``."""

    def _setup(self) -> None:
        self._load = np.zeros((self.sources, self.workers), dtype=np.int64)

    def local_loads(self) -> np.ndarray:
        """``l_j[w]`` for every source ``j`` (rows) and worker ``w`` (a copy)."""
        return self._load.copy()

    def route(self, batch: Batch) -> np.ndarray:
        seq, key = batch_arrays(batch)
        out = np.empty(seq.size, dtype=np.int64)
        if seq.size:
            self._kernel(seq, key, out)
        return out

    def _kernel(self, seq: np.ndarray, key: np.ndarray, out: np.ndarray) -> None:
        raise NotImplementedError
