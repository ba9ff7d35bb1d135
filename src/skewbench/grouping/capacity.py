"""How many workers a grouping strategy needs (issue 42): capacity, demand and the skew ceiling
of a routing, and Flink's autoscaler rule replayed on them.  Pure functions over numpy arrays.

**Capacity** (Theodolite's metric, for one keyed operator whose workers are its bottleneck): a
stream of ``m`` tuples is routed so that worker ``w`` receives tuples whose costs sum to ``B_w``
ms.  Offered at ``R`` tuples a second, worker ``w`` is busy ``R * B_w / m`` ms each second, so every
worker keeps up while ``R <= 1000 * m / max_w B_w``: that rate is the capacity.  A strategy that
keeps a key whole (key grouping) can never pass ``1000 * m / C_k`` for the hottest key ``k``, whose
tuples cost ``C_k`` ms in all, whatever ``n``: the key's limit.

**Demand**: the fewest workers, on a grid of worker counts, whose capacity reaches a rate.

**Skew ceiling**: on a grid of worker counts, the first ``n`` from which on capacity grows by
less than 5% per doubling of the workers, with the capacity there.

**Flink's autoscaler** (the Kubernetes operator's ``flink-autoscaler`` module, read at commit
6e9caeb of 2026-07-20; :class:`Autoscaler` names each option and its default): per keyed vertex it
takes the true processing rate ``TPR = input rate / (busy ms per s / 1000)``, the busy time of
its subtasks aggregated by their maximum (the default since FLINK-30652, which found that the
average overstates the rate under skew) or by their average; it leaves the parallelism alone
while ``TPR`` lies within ``[target / (u + b), target / (u - b) + r]`` (``u`` the utilisation
target, ``b`` its boundary, ``r = target * restart time / catch-up duration`` the rate that catches
up a restart's backlog), and otherwise scales by ``f = (target / u + r) / TPR``, ``f`` bounded below by
``1 - scale-down max factor`` and above by ``1 + scale-up max factor``, to ``ceil(f * p)`` within
the vertex's bounds and the key groups; then, for a keyed vertex, aligns it to the key groups
``N`` (FLINK-34504's alignment; the default, *balanced*: the first ``p'`` from the target on, up
to ``N`` when scaling up and up to the current ``p`` when scaling down, that divides ``N`` or gives
each subtask fewer key groups than the target does; none: the target).  At a steady state the
target rate is the offered rate.  The rule seen from a routing:

* busy by the maximum: below the capacity the busiest worker is ``R * max B / m`` ms busy a
  second, so ``TPR = 1000 m / max_w B_w``, the capacity; above it the vertex is back-pressured to
  its capacity and its busiest worker busy the whole second: ``TPR`` is the capacity again;
* busy by the average: ``TPR = 1000 m / mean_w B_w``, the capacity of a perfectly balanced
  routing, which a skewed routing never reaches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from skewbench.errors import SkewbenchError

#: capacity growing by less than this per doubling of the workers marks the skew ceiling
CEILING_GROWTH = 0.05


def worker_busy_ms(worker: np.ndarray, cost_ms: np.ndarray | float, workers: int) -> np.ndarray:
    """Each worker's busy time, ms: the costs of the tuples routed to it (``cost_ms`` per tuple, or
    one cost for every tuple)."""
    worker = np.asarray(worker, dtype=np.int64)
    if worker.size and (worker.min() < 0 or worker.max() >= workers):
        raise SkewbenchError(f"a worker id outside 0..{workers - 1}")
    if np.ndim(cost_ms) == 0:
        return np.bincount(worker, minlength=workers).astype(np.float64) * float(cost_ms)
    cost = np.asarray(cost_ms, dtype=np.float64)
    if cost.shape != worker.shape:
        raise SkewbenchError(f"{cost.size} costs for {worker.size} tuples")
    return np.bincount(worker, weights=cost, minlength=workers)


def capacity(busy_ms: np.ndarray, tuples: int) -> float:
    """The largest input rate (tuples per second) at which every worker keeps up: ``1000 * tuples
    / max busy``; infinite when no worker has any work."""
    busy = np.asarray(busy_ms, dtype=np.float64)
    top = float(busy.max()) if busy.size else 0.0
    return math.inf if top <= 0.0 else 1000.0 * tuples / top


def balanced_capacity(busy_ms: np.ndarray, tuples: int) -> float:
    """The capacity of the same work spread evenly over the same workers: ``1000 * tuples / mean
    busy`` (what a rate estimated from the workers' average busy time claims)."""
    busy = np.asarray(busy_ms, dtype=np.float64)
    mean = float(busy.mean()) if busy.size else 0.0
    return math.inf if mean <= 0.0 else 1000.0 * tuples / mean


def key_limit(keys: np.ndarray, cost_ms: np.ndarray | float) -> tuple[int, float]:
    """The hottest key by cost and the rate (tuples per second) beyond which the one worker holding
    it whole cannot keep up: ``(key, 1000 * m / C_k)``."""
    keys = np.asarray(keys)
    if keys.size == 0:
        raise SkewbenchError("no tuples: no key limits the rate")
    uniq, inv = np.unique(keys, return_inverse=True)
    weights = None if np.ndim(cost_ms) == 0 else np.asarray(cost_ms, dtype=np.float64)
    per_key = np.bincount(inv, weights=weights).astype(np.float64)
    if weights is None:
        per_key *= float(cost_ms)
    k = int(np.argmax(per_key))
    top = float(per_key[k])
    return uniq[k].item(), (math.inf if top <= 0.0 else 1000.0 * keys.size / top)


def _grid(ns: Sequence[int], caps: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    n = np.asarray(ns, dtype=np.int64)
    c = np.asarray(caps, dtype=np.float64)
    if n.shape != c.shape or n.size == 0:
        raise SkewbenchError(f"{n.size} worker counts for {c.size} capacities")
    if (n < 1).any() or (np.diff(n) <= 0).any():
        raise SkewbenchError(f"worker counts must be positive and increasing: {n.tolist()}")
    return n, c


def demand(ns: Sequence[int], caps: Sequence[float], rate: float) -> int | None:
    """The fewest workers of the grid whose capacity reaches ``rate``; None when none does."""
    n, c = _grid(ns, caps)
    hit = np.nonzero(c >= rate)[0]
    return int(n[hit[0]]) if hit.size else None


def skew_ceiling(ns: Sequence[int], caps: Sequence[float], growth: float = CEILING_GROWTH
                 ) -> tuple[int, float] | None:
    """The first worker count of the grid from which on capacity grows by less than ``growth`` per
    doubling (between each grid point and the next, ``(1 + growth) ** log2(n' / n)``), and the
    capacity there; None when it still grows at the grid's end."""
    n, c = _grid(ns, caps)
    if n.size < 2:
        return None
    ok = c[1:] < c[:-1] * (1.0 + growth) ** np.log2(n[1:] / n[:-1])
    if not ok[-1]:
        return None
    i = len(ok)
    while i > 0 and ok[i - 1]:
        i -= 1
    return int(n[i]), float(c[i])


@dataclass(frozen=True)
class Autoscaler:
    """Flink's autoscaler rule for one keyed vertex, with the operator's option defaults
    (``job.autoscaler.*``)."""

    #: utilization.target: the busy fraction it sizes for
    utilization_target: float = 0.7
    #: target.utilization.boundary: no change while the utilisation stays within the target +- this
    boundary: float = 0.3
    #: scale-down.max-factor: one step shrinks by at most this fraction
    max_scale_down: float = 0.6
    #: scale-up.max-factor: one step grows by at most 1 + this
    max_scale_up: float = 100000.0
    #: vertex.min-parallelism and vertex.max-parallelism
    min_parallelism: int = 1
    max_parallelism: int = 200
    #: the vertex's key groups (Flink's max parallelism: 128 by default up to 85 subtasks)
    key_groups: int = 128
    #: metrics.busy-time.aggregator: "max" (the default) or "avg"
    busy: str = "max"
    #: scaling.parallelism-alignment.mode: "balanced" (the default), "evenly-spread" or "off"
    alignment: str = "balanced"
    #: restart.time and catch-up.duration (s): a rescale's restart backlog, caught up over the latter
    restart_s: float = 300.0
    catch_up_s: float = 1800.0

    def __post_init__(self) -> None:
        if self.busy not in ("max", "avg"):
            raise SkewbenchError(f"busy aggregator must be max or avg, not {self.busy!r}")
        if self.alignment not in ("balanced", "evenly-spread", "off"):
            raise SkewbenchError(f"alignment must be balanced, evenly-spread or off, not {self.alignment!r}")
        if not 0.0 < self.utilization_target <= 1.0 or not 0.0 <= self.boundary:
            raise SkewbenchError("the utilisation target must be in (0, 1] and its boundary not negative")
        if not 1 <= self.min_parallelism <= self.max_parallelism or self.key_groups < 1:
            raise SkewbenchError("parallelism bounds must satisfy 1 <= min <= max, key groups >= 1")

    def processing_rate(self, busy_ms: np.ndarray, tuples: int) -> float:
        """The true processing rate the rule computes for a routing (module docstring)."""
        return capacity(busy_ms, tuples) if self.busy == "max" else balanced_capacity(busy_ms, tuples)

    def target_capacity(self, rate: float, utilization: float, restart: bool) -> float:
        """The processing rate the rule asks of the vertex at ``utilization``: ``rate /
        utilization``, plus, with ``restart``, the rate that catches up the restart's backlog
        (``rate * restart time / catch-up duration``), rounded; the lag's own catch-up is nil at a
        steady state."""
        util = min(1.0, max(0.0, utilization))
        if util == 0.0:
            return math.inf
        extra = rate * self.restart_s / self.catch_up_s if restart and self.catch_up_s > 0 else 0.0
        return float(math.floor(rate / util + extra + 0.5))

    def step(self, p: int, rate: float, tpr: float) -> int:
        """The parallelism the rule sets from ``p`` for a target ``rate`` and a true processing
        rate ``tpr``."""
        u, b = self.utilization_target, self.boundary
        if self.target_capacity(rate, u + b, False) <= tpr <= self.target_capacity(rate, u - b, True):
            return p
        f = self.target_capacity(rate, u, True) / tpr if tpr > 0.0 else math.inf
        f = min(max(f, 1.0 - self.max_scale_down), 1.0 + self.max_scale_up)
        lo, hi = min(p, self.min_parallelism), min(max(p, self.max_parallelism), self.key_groups)
        target = int(min(max(lo, math.ceil(f * p)), hi))
        if target == p or self.alignment == "off":
            return target
        n = self.key_groups
        end = min(n, max(p, self.max_parallelism)) if target > p else min(p, n)
        for q in range(target, end + 1):
            if n % q == 0 or (self.alignment == "balanced" and n // q < n // target):
                return q
        return target

    def replay(self, start: int, rate: float, busy_of: Callable[[int], np.ndarray], tuples: int,
               steps: int = 50) -> dict:
        """The rule applied step after step from ``start`` workers, each step on the routing's busy
        times at the current parallelism (``busy_of(p)``): the parallelisms visited, and where it
        settled (the rule changes nothing) or the cycle it oscillates in."""
        seen, path = {}, [start]
        p = start
        for _ in range(steps):
            seen[p] = len(path) - 1
            q = self.step(p, rate, self.processing_rate(busy_of(p), tuples))
            path.append(q)
            if q == p:
                return {"path": path, "settled": p, "cycle": None}
            if q in seen:
                return {"path": path, "settled": None, "cycle": path[seen[q]:-1]}
            p = q
        return {"path": path, "settled": None, "cycle": None}
