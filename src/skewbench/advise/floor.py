"""The offline best balance with whole keys: the floor no keyed partitioner can go below.

A keyed partitioner sends every tuple of a key to one worker, so its busiest worker carries at
least the least possible maximum of P||Cmax on the key counts (every key whole on one of ``p``
workers).  :func:`floor_row` brackets it as :func:`skewbench.solver.best_whole_keys`
does, without its MILP (a second at most here, so that the command stays interactive):

* ``lower = max(c_1, ceil(m / p), c_p + c_(p+1))`` with ``c_1 >= c_2 >= ...`` the counts: the
  heaviest key, the mean rounded up (loads are whole tuples), and two of the ``p + 1`` heaviest
  keys sharing a worker;
* ``upper``: the largest load of longest-processing-time list scheduling (LPT: keys by count,
  heaviest first, each onto the least loaded worker, the lowest index on ties), an assignment
  that exists, computed by :func:`lpt_loads`.

The optimum lies in ``[lower, upper]``; when they meet it is exact.

:func:`lpt_loads` equals :func:`skewbench.solver.lpt` on the counts sorted descending, load
for load, but places each run of keys with the same count at once: ``c`` keys of count ``v``
take the ``c`` smallest of the levels ``l_j + t v`` (``t >= 0``) in the order ``(level, j)``,
which is the order one-at-a-time LPT visits them in, found by a binary search over the level.
Runs of at most :data:`SMALL_RUN` keys go one at a time through a heap, as in the solver.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from skewbench.advise.rows import load_fields

#: runs of equal counts up to this length are placed one key at a time (a heap), longer ones at once
SMALL_RUN = 16


def whole_key_floor(counts: np.ndarray, p: int) -> int:
    """The lower bound on the least possible busiest worker (tuples) with every key whole."""
    c = np.sort(np.asarray(counts, dtype=np.int64))[::-1]
    if c.size == 0:
        return 0
    lower = max(int(c[0]), -(-int(c.sum()) // p))
    if c.size > p:
        lower = max(lower, int(c[p - 1] + c[p]))
    return lower


def floor_row(counts: np.ndarray, p: int) -> dict[str, Any]:
    """The ``best-whole-keys`` row at ``p``: LPT's loads (an assignment that exists), the floor
    (``load_floor``) and whether they meet (``basis``)."""
    loads = lpt_loads(counts, p)
    tuples = int(np.asarray(counts).sum())
    lower, upper = whole_key_floor(counts, p), int(loads.max())
    basis = "optimum" if lower == upper else f"LPT within {(upper - lower) / upper:.2%} above the floor"
    return {"partitioner": "best-whole-keys", "kind": "bound", "workers": p, "label": "offline, every key whole",
            "load_floor": lower, "floor_over_mean": lower / (tuples / p), "basis": basis, **load_fields(loads, tuples)}


def lpt_loads(counts: np.ndarray, p: int) -> np.ndarray:
    """Each worker's load (int64[p]) under LPT list scheduling of the key counts (module docstring)."""
    values, runs = np.unique(np.asarray(counts, dtype=np.int64), return_counts=True)
    loads = np.zeros(p, dtype=np.int64)
    heap: list[tuple[int, int]] | None = None
    for v, c in zip(values[::-1].tolist(), runs[::-1].tolist()):
        if v <= 0:
            continue
        if c <= SMALL_RUN:
            if heap is None:
                heap = [(int(x), j) for j, x in enumerate(loads.tolist())]
                heapq.heapify(heap)
            for _ in range(c):
                level, j = heapq.heappop(heap)
                loads[j] = level + v
                heapq.heappush(heap, (level + v, j))
        else:
            heap = None  # the loads change in bulk: the heap is rebuilt when next needed
            _place_run(loads, v, c)
    return loads


def _taken(loads: np.ndarray, v: int, level: int) -> np.ndarray:
    """How many of the levels ``loads[j] + t v`` (``t >= 0``) of each worker are ``<= level``."""
    return np.where(loads <= level, (level - loads) // v + 1, 0)


def _place_run(loads: np.ndarray, v: int, c: int) -> None:
    """Place ``c`` keys of count ``v`` as LPT would one at a time (in place)."""
    lo = int(loads.min())
    hi = lo + (c - 1) * v  # the least loaded worker alone offers c levels up to here
    while lo < hi:  # the least level T with at least c levels <= T
        mid = (lo + hi) // 2
        if int(_taken(loads, v, mid).sum()) >= c:
            hi = mid
        else:
            lo = mid + 1
    below = _taken(loads, v, lo - 1)
    rest = c - int(below.sum())
    at = np.flatnonzero((loads <= lo) & ((lo - loads) % v == 0))  # workers with a level exactly lo
    below[at[:rest]] += 1
    loads += below * v
