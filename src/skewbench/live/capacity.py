"""The live capacity search (issue 42): the largest rate a strategy's Flink job sustains with its
workers, found by probing rates, set beside the capacity its routing predicts.  Pure functions;
the engine side is :mod:`skewbench.live.capacity_run`.

**Sustained** (Theodolite's criterion, on our own per-tuple records rather than a consumer's
offsets): at time ``t`` of a phase the **lag** is the tuples due by ``t`` less the tuples whose work
ended by ``t``.  Over the phase's measurement window (after its warm-up, up to its last due time)
the lag is sampled every :data:`SAMPLE_MS`; a rate is sustained when the slope of the lag's
least-squares line (tuples per second) stays below :data:`LAG_SHARE` of the rate.  The lag counts
from the due time, not the emission: a source held back by full channels (back-pressure) delays
its emissions, not its due times, so a backlog shows whether it waits in the network buffers, in
a source or in a worker's queue.

**The search** (:class:`Search`, driven by :func:`search` with a ``measure(rate) -> sustained``
callable, or by several at once in lockstep): a lower rate that is sustained and an upper one that
is not are found first (the two starting rates, each moved away by their ratio while it is on the
wrong side, at most ``expand`` times), then the bracket is halved, ``steps`` times at most and
until its width is within ``width`` of its lower end.  Every probe lies inside the bracket known
so far, so the verdicts of one search are monotone in the rate by construction; the measured
capacity is the largest rate judged sustained.

**Predicted** capacity (:func:`predicted`): from the strategy's routing of the same tuples, each
worker is busy the cost of its tuples plus the calibrated per-record overhead for each
(:func:`skewbench.grouping.capacity.worker_busy_ms`), and the capacity is ``1000 x tuples / max
busy`` (:func:`skewbench.grouping.capacity.capacity`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from skewbench.errors import SkewbenchError

#: a rate is sustained while the lag grows by less than this share of the rate per second
LAG_SHARE = 0.01
#: the lag's sampling interval (ms) over the measurement window
SAMPLE_MS = 10.0
#: the search's defaults: starting rates (shares of the predicted capacity), halvings, width
LOW, HIGH, STEPS, WIDTH, EXPAND = 0.7, 1.3, 5, 0.05, 3
#: the issue's verdict: measured within this share of predicted, for every strategy
TOLERANCE = 0.15


def lag_series(due_ms: np.ndarray, end_ms: np.ndarray, window: tuple[float, float],
               step_ms: float = SAMPLE_MS) -> tuple[np.ndarray, np.ndarray]:
    """The lag over ``window`` (ms from the phase's start), sampled every ``step_ms`` from its
    start to its end (both included): the times and, at each, the tuples due by then less the
    tuples whose work ended by then (a tuple that never ended counts as not ended)."""
    t0, t1 = float(window[0]), float(window[1])
    if not (math.isfinite(t0) and math.isfinite(t1)) or t1 <= t0:
        raise SkewbenchError(f"the lag needs a window of positive length, got {t0:g}-{t1:g} ms")
    if step_ms <= 0:
        raise SkewbenchError(f"the lag's sampling interval must be positive, got {step_ms:g} ms")
    due = np.sort(np.asarray(due_ms, dtype=np.float64))
    end = np.asarray(end_ms, dtype=np.float64)
    end = np.sort(end[np.isfinite(end)])
    k = int(math.floor((t1 - t0) / step_ms + 1e-9))
    t = t0 + step_ms * np.arange(k + 1)
    if t[-1] < t1:
        t = np.append(t, t1)
    lag = np.searchsorted(due, t, side="right") - np.searchsorted(end, t, side="right")
    return t, lag.astype(np.float64)


def slope_per_s(t_ms: np.ndarray, y: np.ndarray) -> float:
    """The slope of the least-squares line through ``(t, y)``, per second (``t`` in ms)."""
    t = np.asarray(t_ms, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if t.size < 2 or t.size != y.size:
        raise SkewbenchError(f"a slope needs two points or more, of equal counts: {t.size} times, {y.size} values")
    tc = t - t.mean()
    den = float((tc * tc).sum())
    if den == 0.0:
        raise SkewbenchError("a slope needs two distinct times")
    return float((tc * (y - y.mean())).sum() / den) * 1000.0


def judge(due_ms: np.ndarray, end_ms: np.ndarray, window: tuple[float, float], rate: float,
          share: float = LAG_SHARE, step_ms: float = SAMPLE_MS) -> dict[str, Any]:
    """Whether the phase sustained ``rate``: its lag's slope over ``window`` below ``share`` of the
    rate.  Returns the slope, the limit, the verdict and the lag at the window's ends."""
    if not rate > 0:
        raise SkewbenchError(f"a rate to judge must be positive, got {rate!r}")
    t, lag = lag_series(due_ms, end_ms, window, step_ms)
    s = slope_per_s(t, lag)
    limit = share * rate
    return {"rate": float(rate), "slope": s, "limit": limit, "sustained": bool(s < limit),
            "lag_start": float(lag[0]), "lag_end": float(lag[-1]), "lag_max": float(lag.max()),
            "window_ms": [float(window[0]), float(window[1])]}


@dataclass
class Search:
    """One search for the largest sustained rate (module docstring): ask :meth:`next_rate`, probe
    it, tell :meth:`record`; until :meth:`next_rate` returns None."""

    low: float
    high: float
    steps: int = STEPS
    width: float = WIDTH
    expand: int = EXPAND
    #: every probe, in order: (rate, sustained)
    probes: list[tuple[float, bool]] = field(default_factory=list)
    #: the largest rate judged sustained, and the smallest judged not, so far
    lo: float | None = None
    hi: float | None = None
    halvings: int = 0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.low) and math.isfinite(self.high) and 0 < self.low < self.high):
            raise SkewbenchError(f"the search's starting rates must satisfy 0 < low < high, got {self.low:g} and "
                                 f"{self.high:g}")
        if not 0 <= self.steps <= 50:
            raise SkewbenchError(f"the search's halvings must be in [0, 50], got {self.steps}")
        if not 0 < self.width < 1:
            raise SkewbenchError(f"the search's relative width must be in (0, 1), got {self.width:g}")
        if not 0 <= self.expand <= 20:
            raise SkewbenchError(f"the search's expansions must be in [0, 20], got {self.expand}")
        self._factor = self.high / self.low
        self._down = self._up = 0

    @property
    def bracketed(self) -> bool:
        return self.lo is not None and self.hi is not None

    @property
    def capacity(self) -> float | None:
        """The largest rate judged sustained (None: none was)."""
        return self.lo

    @property
    def relative_width(self) -> float | None:
        return (self.hi - self.lo) / self.lo if self.bracketed else None

    def next_rate(self) -> float | None:
        """The next rate to probe, or None when the search is over."""
        if self.lo is None:
            if self.hi is None:
                return self.low
            if self._down >= self.expand:
                return None  # nothing sustained down to the lowest rate allowed
            return self.hi / self._factor
        if self.hi is None:
            if self.lo < self.high:
                return self.high
            if self._up >= self.expand:
                return None  # everything sustained up to the highest rate allowed
            return self.lo * self._factor
        if self.halvings >= self.steps or (self.hi - self.lo) <= self.width * self.lo:
            return None
        return 0.5 * (self.lo + self.hi)

    def record(self, rate: float, sustained: bool) -> None:
        """The verdict on a probed rate."""
        want = self.next_rate()
        if want is None or not math.isclose(rate, want, rel_tol=1e-9):
            raise SkewbenchError(f"the search asked for {want!r} tuples/s, not {rate!r}")
        if self.bracketed:
            self.halvings += 1
        elif self.lo is None and self.hi is not None:
            self._down += 1
        elif self.lo is not None and self.hi is None and self.lo >= self.high:
            self._up += 1
        self.probes.append((float(rate), bool(sustained)))
        if sustained:
            self.lo = rate
        else:
            self.hi = rate

    def to_dict(self) -> dict[str, Any]:
        return {"capacity": self.capacity, "bracket": [self.lo, self.hi], "relative_width": self.relative_width,
                "halvings": self.halvings, "probes": [{"rate": r, "sustained": s} for r, s in self.probes],
                "separated": separated(self.probes, self.low, self.high)}


def separated(probes: list[tuple[float, bool]], low: float, high: float) -> bool:
    """Whether the two starting rates were judged on their expected sides (``low`` sustained and
    ``high`` not): the judge told the two apart before the search narrowed anything."""
    got = {r: s for r, s in probes}
    return got.get(low) is True and got.get(high) is False


def search(measure: Callable[[float], bool], low: float, high: float, steps: int = STEPS, width: float = WIDTH,
           expand: int = EXPAND) -> Search:
    """A whole search with ``measure(rate) -> sustained``; the :class:`Search` it ended in."""
    s = Search(low, high, steps, width, expand)
    while (rate := s.next_rate()) is not None:
        s.record(rate, bool(measure(rate)))
    return s


def monotone(probes: list[tuple[float, bool]], slack: float = 0.0) -> bool:
    """Whether verdicts pooled from several probes are monotone in the rate: no rate judged
    sustained lies more than ``slack`` (a share) above a rate judged not sustained."""
    bad = [r for r, s in probes if not s]
    if not bad:
        return True
    return all(r <= min(bad) * (1.0 + slack) for r, s in probes if s)


def predicted(worker: np.ndarray, cost_ms: np.ndarray | float, overhead_ms: float, workers: int) -> dict[str, Any]:
    """The capacity a routing predicts: each worker busy the cost of its tuples plus the per-record
    overhead for each; ``1000 x tuples / max busy``; with each worker's busy time."""
    from skewbench.grouping.capacity import capacity, worker_busy_ms

    if not (math.isfinite(overhead_ms) and overhead_ms >= 0):
        raise SkewbenchError(f"a per-record overhead must be a non-negative number of ms, got {overhead_ms!r}")
    worker = np.asarray(worker)
    cost = np.asarray(cost_ms, dtype=np.float64)
    busy = worker_busy_ms(worker, cost + overhead_ms, workers)
    return {"capacity": capacity(busy, int(worker.size)), "busy_ms": busy.tolist(),
            "busiest": int(np.argmax(busy)) if busy.size else None, "tuples": int(worker.size)}


def compare(predicted_capacity: float, capacities: list[float | None], tolerance: float = TOLERANCE
            ) -> dict[str, Any]:
    """The repetitions' measured capacities against the prediction: their median, minimum and
    maximum, the median over the prediction, and whether it lies within ``tolerance`` of 1 (a
    repetition that found no sustained rate makes the comparison fail)."""
    got = [c for c in capacities if c is not None]
    if not got or len(got) < len(capacities):
        return {"measured": float(np.median(got)) if got else None, "measured_min": min(got, default=None),
                "measured_max": max(got, default=None), "ratio": None, "within": False,
                "missing": len(capacities) - len(got)}
    med = float(np.median(got))
    r = med / predicted_capacity if predicted_capacity and math.isfinite(predicted_capacity) else None
    return {"measured": med, "measured_min": float(min(got)), "measured_max": float(max(got)), "ratio": r,
            "within": r is not None and abs(r - 1.0) <= tolerance, "missing": 0}
