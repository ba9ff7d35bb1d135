"""The pieces every row of ``skewbench advise`` shares: worker loads and what they say.

A row's balance is ``busiest_over_mean = load_max / load_mean`` with ``load_mean = m / p`` (the
tuples over the workers), 1.0 when every worker carries the same.  The busiest worker is the
first one with the largest load (lowest index on ties).  Its hottest keys are the keys it owns
with the most tuples (ties: the key seen first), each with its share of that worker's load.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: how many of the busiest worker's hottest keys a row names
TOP_KEYS = 3


def worker_loads(workers: np.ndarray, counts: np.ndarray, p: int) -> np.ndarray:
    """Tuples per worker (int64[p]) when key id ``k`` (with ``counts[k]`` tuples) goes to
    ``workers[k]``."""
    return np.bincount(workers, weights=counts, minlength=p).astype(np.int64)


def load_fields(loads: np.ndarray, tuples: float, scale: float = 1.0) -> dict[str, Any]:
    """A row's load columns from its per-worker loads (``scale``: loads measured on a sample,
    multiplied by it to stand for the input's ``tuples``)."""
    p = int(loads.size)
    busiest = int(np.argmax(loads))
    load_max = float(loads[busiest]) * scale
    mean = float(tuples) / p
    return {
        "load_max": int(load_max) if scale == 1.0 else load_max,
        "load_mean": mean,
        "busiest_over_mean": load_max / mean if mean > 0 else 1.0,
        "busiest_worker": busiest,
        "idle_workers": int(np.count_nonzero(loads == 0)),
        "worker_loads": loads.astype(np.int64).tolist(),
    }


def hottest_on(workers: np.ndarray, counts: np.ndarray, worker: int, top: int = TOP_KEYS) -> np.ndarray:
    """The ids of the ``top`` keys with the most tuples among those sent to ``worker`` (by count,
    descending; ties: the lower id, i.e. the key seen first)."""
    ids = np.flatnonzero(workers == worker)
    if ids.size > top:  # a partial sort: keep the candidates whose count reaches the top-th largest
        kth = np.partition(counts[ids], ids.size - top)[ids.size - top]
        ids = ids[counts[ids] >= kth]
    order = np.lexsort((ids, -counts[ids]))
    return ids[order[:top]]


def hottest_fields(names: Any, workers: np.ndarray, counts: np.ndarray, worker: int, load: int) -> list[dict]:
    """The busiest worker's hottest keys: ``[{key, tuples, share_of_worker}]``."""
    out = []
    for k in hottest_on(workers, counts, worker):
        c = int(counts[k])
        out.append({"key": str(names[int(k)].as_py()), "tuples": c, "share_of_worker": c / load if load else 0.0})
    return out
