"""PKG's two choices (partial key grouping, Nasir et al., ICDE 2015): a key has two candidate
workers and each tuple goes to the one its source has sent fewer tuples to so far, the first
candidate on ties.

:func:`two_choices` is the rule alone, for a kernel that draws the candidates from its own hash
family and keeps its own per-source loads (the grouping family's PKG and the tails of D-Choices
and W-Choices).  :func:`modulo_candidates` and :func:`route_candidates` route a whole sequence of
key ids at one sender whose candidates are drawn once per distinct key with ``mix64(key XOR
s_i) mod n`` (ShedPart's PKG partitioner, shedpart.spec.md).
"""

from __future__ import annotations

import numpy as np

from skewbench.hashing import mix64
from skewbench.jit import njit

__all__ = ["two_choices", "modulo_candidates", "route_candidates"]


@njit(inline="always", cache=True)
def two_choices(load, j, w1, w2):
    """``w2`` when row ``j`` of ``load`` is strictly smaller at ``w2`` than at ``w1``, else
    ``w1`` (``w1 == w2`` gives that worker)."""
    return w2 if load[j, w2] < load[j, w1] else w1


@njit(cache=True)
def modulo_candidates(keys, workers, hash_seed):
    """The two candidates of every key: ``mix64(key XOR s_i) mod workers`` with ``s_1 =
    mix64(2 hash_seed)``, ``s_2 = mix64(2 hash_seed + 1)`` (uint64 arithmetic); an
    ``(len(keys), 2)`` int64 array."""
    count = keys.shape[0]
    c = np.empty((count, 2), dtype=np.int64)
    v = np.uint64(workers)
    s0 = mix64(np.uint64(2) * np.uint64(hash_seed))
    s1 = mix64(np.uint64(2) * np.uint64(hash_seed) + np.uint64(1))
    for i in range(count):
        k = np.uint64(keys[i])
        c[i, 0] = np.int64(mix64(k ^ s0) % v)
        c[i, 1] = np.int64(mix64(k ^ s1) % v)
    return c


@njit(cache=True)
def route_candidates(gid, cand, workers):
    """Route tuples of key ids ``gid`` (rows of ``cand``) in order from one sender by
    :func:`two_choices` on the tuples it has routed so far; the workers, an int64 array."""
    count = gid.shape[0]
    out = np.empty(count, dtype=np.int64)
    routed = np.zeros((1, workers), dtype=np.int64)
    for i in range(count):
        w = two_choices(routed, 0, cand[gid[i], 0], cand[gid[i], 1])
        routed[0, w] += 1
        out[i] = w
    return out
