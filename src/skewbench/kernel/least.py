"""The least loaded of ``k`` workers: the first index of the minimum of a load vector (the scan
of all workers behind W-Choices' head and D-Choices' fallback).

OSG's and Full Knowledge's schedulers scan their instances the same way but keep their own loop:
inlined from this module into both OSG kernels, numba's ahead-of-time compiler (pycc, numba
0.68.1) failed type inference on the second signature it compiled."""

from __future__ import annotations

from skewbench.jit import njit

__all__ = ["least"]


@njit(inline="always", cache=True)
def least(values, k):
    """The first ``o < k`` (``k >= 1``) with the smallest ``values[o]``."""
    w = 0
    best = values[0]
    for o in range(1, k):
        if values[o] < best:
            best = values[o]
            w = o
    return w
