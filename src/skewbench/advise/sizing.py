"""How many workers each partitioner needs at the user's rate (issue 42):
``skewbench advise KEYS --rate R --cost MS``.

For every engine default and every alternative, on the same keys as the rest of ``advise``: its
capacity (:mod:`skewbench.grouping.capacity`: the largest input rate at which its busiest worker
keeps up, every tuple costing ``cost_ms``) at each worker count of :data:`GRID` and of the user's
``--workers``; ``workers_needed``, the fewest of those whose capacity reaches the rate (null, with
the reason, when none does); the skew ceiling (``ceiling_workers``, ``ceiling_capacity``); and
where Flink's autoscaler settles when it starts from the user's ``--current`` parallelism at that
rate (``autoscaler_settles_at``: by the busiest subtask's busy time, its default, and
``autoscaler_settles_at_avg``: by their average; null when it never settles, with the cycle it
enters in ``autoscaler``).

Flink's keyBy runs at the max parallelism it starts with, kept across rescales: the user's
``--flink-max-parallelism``, else Flink's default for ``--current``; beyond it Flink refuses a
parallelism, so its capacity there is null, and its autoscaler aligns to those key groups.  The
alternatives would run in Flink through ``partitionCustom`` (docs/flink.md): no key groups to
align to; the same max parallelism caps them.  Kafka's and Spark's partitioners get no
autoscaler (Flink's sizes Flink's vertices).  ``local-global`` is sized by its second stage,
whose records are the local combiners' partial records.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from skewbench.advise.keys import Keys
from skewbench.advise.rows import worker_loads
from skewbench.errors import SkewbenchError
from skewbench.grouping import capacity as cap
from skewbench.grouping.strategies import engines

#: the worker counts sized besides the user's ``--workers``
GRID = tuple(2 ** i for i in range(11))


def check(rate: float | None, cost_ms: float | None, current: int | None) -> None:
    """``--rate`` and ``--cost`` together, both positive and finite; ``--current`` needs them."""
    if (rate is None) != (cost_ms is None):
        raise SkewbenchError("--rate and --cost go together: the input rate (tuples/s) and the cost of a tuple (ms)")
    if rate is None:
        if current is not None:
            raise SkewbenchError("--current needs --rate and --cost")
        return
    for name, v in (("--rate", rate), ("--cost", cost_ms)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v <= 0:
            raise SkewbenchError(f"{name} is a positive number, got {v!r}")


def _curve(loads_of: Callable[[int], np.ndarray | None], ns: list[int], tuples: float, cost_ms: float
           ) -> list[float | None]:
    out: list[float | None] = []
    for n in ns:
        loads = loads_of(n)
        out.append(None if loads is None else cap.capacity(loads * cost_ms, int(round(tuples))))
    return out


def _needed(ns: list[int], caps: list[float | None], rate: float) -> int | None:
    return next((n for n, c in zip(ns, caps) if c is not None and c >= rate), None)


def _ceiling(ns: list[int], caps: list[float | None]) -> tuple[int, float] | None:
    pts = [(n, c) for n, c in zip(ns, caps) if c is not None and n in GRID]
    return cap.skew_ceiling([n for n, _ in pts], [c for _, c in pts])


def _why_not(keys: Keys, whole: bool, ns: list[int], caps: list[float | None], rate: float, cost_ms: float) -> str:
    top = int(np.argmax(keys.counts))
    need = rate * float(keys.counts[top]) / keys.tuples * cost_ms
    if whole and need > 1000.0:
        return (f"never: key {keys.name(top)} alone needs {need:,.0f} ms of work per second "
                f"({keys.counts[top] / keys.tuples:.1%} of {rate:,.0f} tuples/s at {cost_ms:g} ms)")
    best = max(((c, n) for n, c in zip(ns, caps) if c is not None), default=None)
    if best is None:
        return "never: no parallelism allowed"
    return f"not within {ns[-1]:,} workers: at most {best[0]:,.0f} tuples/s (at {best[1]:,} workers)"


def _autoscale(loads_of: Callable[[int], np.ndarray | None], rule: cap.Autoscaler, current: int, rate: float,
               tuples: float, cost_ms: float) -> dict[str, Any]:
    def busy_of(p: int) -> np.ndarray:
        loads = loads_of(p)
        assert loads is not None  # the rule stays within the max parallelism
        return loads * cost_ms

    return rule.replay(current, rate, busy_of, int(round(tuples)))


def sizing(keys: Keys, hashes: dict[str, np.ndarray], workers: list[int], rate: float, cost_ms: float,
           current: int | None, flink_max_parallelism: int | None,
           alternatives: dict[str, Callable[[int], np.ndarray]]) -> dict[str, Any]:
    """The sizing table (module docstring).  ``alternatives``: name -> its loads at ``p`` workers
    (scaled to the input's tuples)."""
    ns = sorted(set(GRID) | set(workers))
    start = current if current is not None else workers[0]
    P = flink_max_parallelism or engines.flink_default_max_parallelism(start)
    if start > P:
        raise SkewbenchError(f"--current {start} is above Flink's max parallelism {P}")
    cache: dict[tuple[str, int], np.ndarray | None] = {}

    def cached(name: str, fn: Callable[[int], np.ndarray | None]) -> Callable[[int], np.ndarray | None]:
        def loads(p: int) -> np.ndarray | None:
            if (name, p) not in cache:
                cache[name, p] = fn(p)
            return cache[name, p]
        return loads

    def engine_loads(engine: str) -> Callable[[int], np.ndarray | None]:
        def loads(p: int) -> np.ndarray | None:
            if engine == "flink" and p > P:
                return None
            w = engines.engine_workers(engine, hashes[engine], p, P if engine == "flink" else 0)
            return worker_loads(w, keys.counts, p).astype(np.float64)
        return cached(engine, loads)

    parts: list[tuple[str, str, Callable[[int], np.ndarray | None], cap.Autoscaler | None, bool]] = [
        ("kafka", "engine", engine_loads("kafka"), None, True),
        ("flink", "engine", engine_loads("flink"), cap.Autoscaler(key_groups=P), True),
        ("spark-hash", "engine", engine_loads("spark-hash"), None, True),
        ("spark-sql", "engine", engine_loads("spark-sql"), None, True),
    ] + [(name, "alternative", cached(name, alternatives[name]), cap.Autoscaler(key_groups=P, alignment="off"), False)
         for name in alternatives]
    rows = []
    for name, kind, loads_of, rule, whole in parts:
        caps = _curve(loads_of, ns, keys.tuples, cost_ms)
        need = _needed(ns, caps, rate)
        ceil = _ceiling(ns, caps)
        row: dict[str, Any] = {"partitioner": name, "kind": kind, "capacity": caps, "workers_needed": need,
                               "why_not": None if need is not None else _why_not(keys, whole, ns, caps, rate, cost_ms),
                               "ceiling_workers": ceil[0] if ceil else None,
                               "ceiling_capacity": ceil[1] if ceil else None,
                               "autoscaler_settles_at": None, "autoscaler_settles_at_avg": None, "autoscaler": None}
        if rule is not None:
            by_max = _autoscale(loads_of, rule, start, rate, keys.tuples, cost_ms)
            by_avg = _autoscale(loads_of, cap.Autoscaler(key_groups=P, busy="avg", alignment=rule.alignment), start,
                                rate, keys.tuples, cost_ms)
            row.update(autoscaler_settles_at=by_max["settled"], autoscaler_settles_at_avg=by_avg["settled"],
                       autoscaler={"max": by_max, "avg": by_avg})
        rows.append(row)
    # the rate beyond which the hottest key alone outruns one worker (a whole-key partitioner's limit)
    key_limit = 1000.0 * keys.tuples / (float(keys.counts.max()) * cost_ms)
    return {"rate": rate, "cost_ms": cost_ms, "current": start, "max_parallelism": P, "workers": ns, "rows": rows,
            "key_limit": key_limit}
