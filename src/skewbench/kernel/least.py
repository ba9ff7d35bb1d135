"""The least loaded of ``k`` workers: the first index of the minimum of a load vector, the
scan of all workers behind W-Choices' head, OSG's greedy scheduler and Full Knowledge."""

from __future__ import annotations

from skewbench.jit import njit

__all__ = ["least", "least_from"]


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


@njit(inline="always", cache=True)
def least_from(values, k, floor):
    """The first ``o < k`` (``k >= 1``) with the smallest ``max(values[o], floor)``: with free-at
    times ``values``, the worker that can start a job arriving at ``floor`` soonest."""
    w = 0
    best = values[0] if values[0] > floor else floor
    for o in range(1, k):
        v = values[o] if values[o] > floor else floor
        if v < best:
            best = v
            w = o
    return w
