"""The rules behind ``skewbench advise``'s suggestions, as plain functions.

Flink (``KeyGroupRangeAssignment``; practice.spec.md 2.2): a key goes to key group
``kg = murmurHash(hashCode) mod P`` and key group ``kg`` to subtask ``kg p div P``, so each of
the ``p`` subtasks owns ``floor(P/p)`` or ``ceil(P/p)`` key groups and, before any skew, the
busiest carries ``ceil(P/p) / (P/p)`` times the mean (:func:`rounding`; FLINK-21695).  ``P``,
the max parallelism, defaults to ``min(max(roundUpPow2(p + p div 2), 128), 32768)``
(:func:`skewbench.grouping.strategies.engines.flink_default_max_parallelism`).  The rounding is gone when
``p`` divides ``P``:

* :func:`suggested_max_parallelism`: the least multiple of ``p`` that is at least the current
  ``P`` (keeping at least its room to scale up) and at most 32768; when there is none, the
  largest multiple of ``p`` up to 32768;
* :func:`divisor_parallelism`: keeping ``P``, the parallelism nearest ``p`` that divides it
  (ties: the larger), at most :data:`skewbench.grouping.params.MAX_WORKERS`;
* :func:`common_max_parallelism`: one ``P`` for several parallelisms (a job rescaled between
  them): the least common multiple of them all that is at least each one's default ``P``, up to
  32768 (None when there is none).

Kafka (``BuiltInPartitioner.partitionForKey``; practice.spec.md 2.3): a keyed record goes to
partition ``toPositive(murmur2(key bytes)) mod q``; ``p`` consumers under the default
``RangeAssignor`` read ``q/p`` adjacent partitions each when ``p`` divides ``q`` (partition
``r`` to consumer ``r div (q/p)``).  :func:`kafka_partitions` tries ``q = p, 2p, ...,
KAFKA_FACTORS p`` on the keys and keeps the one whose busiest consumer carries the least
(ties: fewer partitions).

Hot keys: a keyed partitioner sends a key's tuples to one worker, so a key with more than
``1/p`` of the tuples (:func:`hopeless`) makes its worker busier than the mean whatever the hash.
"""

from __future__ import annotations

import math

import numpy as np

from skewbench.grouping.strategies import engines
from skewbench.grouping.params import MAX_WORKERS

FLINK_MAX = engines.FLINK_MAX_MAX_PARALLELISM
#: Kafka partition counts tried: p, 2p, ..., KAFKA_FACTORS p
KAFKA_FACTORS = 8


def rounding(P: int, p: int) -> float:
    """Busiest over mean from Flink's key-group rounding alone: ``ceil(P/p) / (P/p)``."""
    return -(-P // p) * p / P


def suggested_max_parallelism(p: int, current: int) -> int:
    """The max parallelism with no rounding at parallelism ``p``, nearest above ``current``."""
    up = -(-current // p) * p
    return up if up <= FLINK_MAX else FLINK_MAX // p * p


def divisor_parallelism(P: int, p: int) -> int:
    """The parallelism nearest ``p`` (ties: the larger) that divides ``P``, at most MAX_WORKERS."""
    small = [d for d in range(1, math.isqrt(P) + 1) if P % d == 0]
    divisors = {d for d in small + [P // d for d in small] if d <= MAX_WORKERS}
    return min(divisors, key=lambda d: (abs(d - p), -d))


def common_max_parallelism(ps: list[int]) -> int | None:
    """One max parallelism without rounding at every parallelism of ``ps``, or None."""
    lcm = math.lcm(*ps)
    low = max(engines.flink_default_max_parallelism(p) for p in ps)
    P = -(-low // lcm) * lcm
    return P if P <= FLINK_MAX else None


def kafka_partitions(hashes: np.ndarray, counts: np.ndarray, p: int) -> tuple[int, int]:
    """``(q, busiest consumer's tuples)`` for the best partition count ``q`` among ``p .. 8p``.

    Every candidate divides ``L = lcm(1..8) p``, and ``x mod q = (x mod L) mod q`` when ``q``
    divides ``L``: with fewer such residues than keys, the keys' tuples are summed per residue
    ``toPositive(murmur2) mod L`` once (Kafka's own partition for ``L`` partitions) and each
    candidate reads those sums."""
    L = math.lcm(*range(1, KAFKA_FACTORS + 1)) * p
    if L < hashes.size:
        per = np.bincount(engines.engine_workers("kafka", hashes, L), weights=counts, minlength=L)
        residues = np.arange(L, dtype=np.int64)
    else:
        per, residues = counts, None
    best: tuple[int, int] | None = None
    for c in range(1, KAFKA_FACTORS + 1):
        part = residues % (c * p) if residues is not None else engines.engine_workers("kafka", hashes, c * p)
        top = int(np.bincount(part // c, weights=per, minlength=p).max())
        if best is None or top < best[1]:
            best = (c * p, top)
    assert best is not None
    return best


def hopeless(top_count: int, tuples: int, p: int) -> bool:
    """True when one key alone has more than ``1/p`` of the tuples."""
    return top_count * p > tuples
