"""Measured against predicted: each metric's ratio, and whether the strategies rank alike.

The rank agreement of a metric over a run's strategies is Kendall's tau-b between the measured
medians and the predicted values (1: the same order; -1: reversed), with the number of
strategies it is computed over.  Two strategies the run does not separate count as a tie, as
tau-b counts ties: measured, when the ranges (minimum to maximum) of their repetitions overlap;
predicted, when their predictions are within :data:`PREDICTED_TIE` of each other.  A pair tied
on both sides counts for neither; ``kendall_tau_plain`` is tau-b on the medians alone, and
``not_separated`` names the pairs the measurement does not separate.
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


#: predictions within this share of each other are a tie for the rank agreement
PREDICTED_TIE = 0.01


def kendall_tau(x: Sequence[float], y: Sequence[float], x_tied=None, y_tied=None) -> float | None:
    """Kendall's tau-b of two equally long sequences (None for fewer than two pairs or when one
    side is constant); ``x_tied(i, j)`` / ``y_tied(i, j)``: pairs to count as ties besides equal
    values (indices into the pairs with both values present)."""
    pairs = [(a, b) for a, b in zip(x, y) if a is not None and b is not None]
    n = len(pairs)
    if n < 2:
        return None
    concordant = discordant = tx = ty = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx = 0 if x_tied is not None and x_tied(i, j) else pairs[i][0] - pairs[j][0]
            dy = 0 if y_tied is not None and y_tied(i, j) else pairs[i][1] - pairs[j][1]
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


def _range(row: dict[str, Any], col: str) -> tuple[float, float] | None:
    """The repetitions' range of a measured column (``col_min`` to ``col_max``), if the row has one."""
    lo, hi = row.get(f"{col}_min"), row.get(f"{col}_max")
    return (float(lo), float(hi)) if lo is not None and hi is not None else None


def separated(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool:
    """Whether two repetitions' ranges do not overlap (no range: separated)."""
    if a is None or b is None:
        return True
    return a[1] < b[0] or b[1] < a[0]


def predicted_tie(a: float, b: float) -> bool:
    return abs(a - b) <= PREDICTED_TIE * max(abs(a), abs(b))


def label(row: dict[str, Any]) -> str:
    return str(row["strategy"]) + (" (native)" if row.get("routing") == "native" else "")


def agreement(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per engine and metric, over the grouping strategies (routed, and native where the engine
    routed them): Kendall's tau of the measured medians against the predictions (module
    docstring), over how many strategies, and the pairs the measurement does not separate."""
    out = []
    for engine in sorted({r["engine"] for r in rows}):
        mine = [r for r in rows if r["engine"] == engine and r["family"] == "grouping"]
        for metric, m_col, p_col in PAIRS:
            both = [r for r in mine if r.get(m_col) is not None and r.get(p_col) is not None]
            if len(both) < 2:
                continue
            xs = [float(r[m_col]) for r in both]
            ys = [float(r[p_col]) for r in both]
            ranges = [_range(r, m_col) for r in both]
            apart = [(label(both[i]), label(both[j])) for i in range(len(both)) for j in range(i + 1, len(both))
                     if not separated(ranges[i], ranges[j])]
            out.append({"engine": engine, "metric": metric, "strategies": len(both),
                        "kendall_tau": kendall_tau(xs, ys, lambda i, j: not separated(ranges[i], ranges[j]),
                                                   lambda i, j: predicted_tie(ys[i], ys[j])),
                        "kendall_tau_plain": kendall_tau(xs, ys), "not_separated": apart})
    return out
