"""The per-tuple source loop: tuple ``seq`` of a stream belongs to source ``seq % sources``.

A strategy kernel that keeps state per source walks a batch as::

    t, j = source_start()
    for i in range(start, seq.shape[0]):
        t, j = source_step(seq, i, t, j, sources)
        ...  # t = seq[i], j its source

(it may start anywhere in the batch).  The previous tuple's position stays in a register (a
version reading ``seq[i - 1]`` instead ran the simplest routers three to four times slower).
"""

from __future__ import annotations

import numpy as np

from skewbench.jit import njit

__all__ = ["source_start", "source_step"]


@njit(inline="always", cache=True)
def source_start():
    """``(t, j)`` before a loop's first tuple: no previous position (``-2`` never precedes a
    position ``>= 0``) and source 0."""
    return np.int64(-2), np.int64(0)


@njit(inline="always", cache=True)
def source_step(seq, i, t, j, sources):
    """``(seq[i], its source seq[i] % sources)``, given ``(t, j)`` of the tuple the loop saw
    before it: when ``seq[i]`` follows ``t`` in the stream (the common, whole-stream case) the
    source is the one after ``j``, found without a division."""
    nxt = seq[i]
    if nxt == t + 1:
        j += 1
        return nxt, (0 if j == sources else j)
    return nxt, nxt % sources
