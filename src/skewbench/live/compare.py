"""Measured against predicted: each metric's ratio, and whether the strategies rank alike.

The rank agreement of a metric over a run's strategies is Kendall's tau-b between the measured and
the predicted values (1: the same order; -1: reversed; ties counted as tau-b counts them), with
the number of strategies it is computed over.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

#: (measured, predicted) pairs every row carries, and the ratio column of each
PAIRS = (("throughput", "throughput_measured", "throughput_predicted"),
         ("latency_p99_ms", "latency_p99_measured_ms", "latency_p99_predicted_ms"),
         ("latency_p50_ms", "latency_p50_measured_ms", "latency_p50_predicted_ms"),
         ("makespan_s", "makespan_measured_s", "makespan_predicted_s"))


def ratio(measured: Any, predicted: Any) -> float | None:
    """measured / predicted, None when either is missing or the prediction is 0."""
    if measured is None or predicted is None:
        return None
    m, p = float(measured), float(predicted)
    if not (math.isfinite(m) and math.isfinite(p)) or p == 0:
        return None
    return m / p


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two equally long sequences (None for fewer than two pairs or when one
    side is constant)."""
    pairs = [(a, b) for a, b in zip(x, y) if a is not None and b is not None]
    n = len(pairs)
    if n < 2:
        return None
    concordant = discordant = tx = ty = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pairs[i][0] - pairs[j][0]
            dy = pairs[i][1] - pairs[j][1]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tx += 1
            elif dy == 0:
                ty += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denom = math.sqrt((concordant + discordant + tx) * (concordant + discordant + ty))
    return (concordant - discordant) / denom if denom > 0 else None


def agreement(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per engine and metric, over the routed grouping strategies: Kendall's tau of measured vs
    predicted, and over how many strategies."""
    out = []
    for engine in sorted({r["engine"] for r in rows}):
        mine = [r for r in rows if r["engine"] == engine and r["routing"] == "routed" and r["family"] == "grouping"]
        for metric, m_col, p_col in PAIRS:
            xs = [r.get(m_col) for r in mine]
            ys = [r.get(p_col) for r in mine]
            used = sum(1 for a, b in zip(xs, ys) if a is not None and b is not None)
            if used >= 2:
                out.append({"engine": engine, "metric": metric, "strategies": used, "kendall_tau": kendall_tau(xs, ys)})
    return out
