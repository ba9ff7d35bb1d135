"""The per-tuple source loop: tuple ``seq`` of a stream belongs to source ``seq % sources``.

A strategy kernel that keeps state per source walks a batch as::

    j = np.int64(-1)
    for i in range(start, seq.shape[0]):
        j = source_step(seq, i, j, sources)
        ...

(``j = -1`` before the first tuple the kernel routes; it may start anywhere in the batch.)
"""

from __future__ import annotations

from skewbench.jit import njit

__all__ = ["source_step"]


@njit(inline="always", cache=True)
def source_step(seq, i, j, sources):
    """The source of the tuple at index ``i`` of a batch: ``seq[i] % sources``, found without a
    division by stepping from ``j``, the source of the tuple before it, when that tuple is the
    stream's previous one (the common, whole-stream case).  ``j < 0``: no tuple before it was
    routed by this loop (``seq[i - 1]`` is then not read)."""
    t = seq[i]
    if j >= 0 and t == seq[i - 1] + 1:
        j += 1
        return 0 if j == sources else j
    return t % sources
