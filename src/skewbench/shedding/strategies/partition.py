"""The routings of a keyed windowed aggregation (shedpart.spec.md 2.7, A15), each a partition
strategy without shedding; ShedPart's strategies (:mod:`.shedpart`) shed on top of them.

``fld``
    Storm fields grouping, ``floorMod(31 + javaHash(k), V)`` (:func:`fld_java`).  ``R(g) = {fld(g)}``.
``pkg``
    Partial key grouping: two candidates ``c_r(k) = mix64(k ^ mix64(2*hash_seed + r)) % V``
    (r = 0, 1), the one with fewer tuples routed so far in the whole stream, ties to ``c_0``
    (:func:`pkg_route`).  ``R(g) = {c_0, c_1}`` (one worker when they coincide).
``shuffle``
    Round robin by arrival index, ``i % V``.  ``R(g)`` = every worker.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from skewbench.errors import SkewbenchError
from skewbench.kernel.pkg import modulo_candidates, route_candidates
from skewbench.shedding.strategies.base import PartitionStrategy

_MASK32 = (1 << 32) - 1
_MASK64 = (1 << 64) - 1


def fld_java(keys: np.ndarray, workers: int) -> np.ndarray:
    """Storm fields grouping of int64 keys (spec 2.7, A15), as int64 worker indices.

    ``h = (int)(k ^ (k >>> 32))`` (Java ``Long.hashCode``), list hash ``31 * 1 + h`` in 32-bit
    int arithmetic, then ``floorMod(., workers)``.
    """
    if workers < 1:
        raise SkewbenchError(f"workers must be >= 1, got {workers}")
    k = np.asarray(keys).astype(np.int64).view(np.uint64)
    h = ((k ^ (k >> np.uint64(32))) & np.uint64(_MASK32)).astype(np.int64)
    h = np.where(h >= 1 << 31, h - (1 << 32), h)          # (int) cast
    t = h + 31                                              # 31 * 1 + h ...
    t = np.where(t >= 1 << 31, t - (1 << 32), t)            # ... in int32 arithmetic
    return np.mod(t, workers).astype(np.int64)              # floorMod (workers > 0)


def _to_int32(v: int) -> int:
    v &= _MASK32
    return v - (1 << 32) if v >= 1 << 31 else v


def fld_java_str(key: str, workers: int) -> int:
    """Storm fields grouping of a string key: Java ``String.hashCode`` (UTF-16 code units)."""
    if workers < 1:
        raise SkewbenchError(f"workers must be >= 1, got {workers}")
    b = key.encode("utf-16-le", "surrogatepass")
    h = 0
    for i in range(0, len(b), 2):
        h = _to_int32(31 * h + (b[i] | (b[i + 1] << 8)))
    return _to_int32(31 + h) % workers


def pkg_route(ukeys: np.ndarray, gid: np.ndarray, workers: int, hash_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """PKG over a stream in arrival order: each tuple's worker and each distinct key's two
    candidates (int64 ``[len(ukeys), 2]``)."""
    cand = modulo_candidates(ukeys, workers, int(hash_seed) & _MASK64)
    return route_candidates(gid, cand, workers), cand


class FieldsGrouping(PartitionStrategy):
    name = "fld"
    description = "Storm fields grouping (Java hash of the key), every tuple aggregated: the papers' baseline"
    partitioner = "fld"
    bench_target: ClassVar[float | None] = 50

    def route(self, ukeys, gid, workers, hash_seed):
        home = fld_java(ukeys, workers)
        return home[gid], [(int(w),) for w in home]


class PKGOnly(PartitionStrategy):
    name = "pkg-only"
    description = "Partial key grouping without shedding (extension)"
    extension = True
    partitioner = "pkg"

    def route(self, ukeys, gid, workers, hash_seed):
        wk, cand = pkg_route(ukeys, gid, workers, hash_seed)
        return wk, [tuple(sorted({int(c[0]), int(c[1])})) for c in cand]


class ShuffleOnly(PartitionStrategy):
    name = "shuffle-only"
    description = "Shuffle grouping without shedding (extension)"
    extension = True
    partitioner = "shuffle"

    def route(self, ukeys, gid, workers, hash_seed):
        return np.arange(gid.shape[0], dtype=np.int64) % workers, [tuple(range(workers))] * ukeys.shape[0]
