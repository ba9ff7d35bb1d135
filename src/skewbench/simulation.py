"""Worker-queue simulation shared by the families: worker speeds, FIFO queues, latency histograms.

Each worker is a FIFO queue without preemption: a tuple arriving at ``a`` on a worker free at
``free`` starts at ``max(a, free)`` and completes at ``e = start + x``, where ``x`` is its
execution time; its completion time (latency) is ``e - a``.  Times are milliseconds.

* :class:`WorkerModel`: per-worker speed factors by stream period.
* :func:`new_queue_state` / :func:`simulate_queues`: run a batch of assigned tuples through the
  queues of a group of workers, accumulating per-worker sums, a fine latency histogram and
  per-window statistics in a :class:`QueueState` (a named tuple of arrays, so that the numba
  kernel takes one state argument and the caller keeps it across batches).
* :func:`round_robin_latency`: the round-robin baseline (``seq mod n``) on the same times.
* :func:`fifo_start`: the FIFO rule itself (numba, inlined), which these kernels and the
  shedding family's single-operator simulation (:mod:`skewbench.shedding.las`) all use.
* Histograms: bin ``i`` covers ``[HIST_L0 * R^i, HIST_L0 * R^(i+1))`` ms, with ``R = 1 + 10^-4``
  (fine, overall) or ``1 + 10^-2`` (coarse, per window); :func:`quantiles` reads them back, and
  :class:`Sparse` ships a mostly-zero histogram compactly.
"""

from __future__ import annotations

import functools
import math
from collections import namedtuple
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from skewbench.jit import njit

from skewbench.errors import SkewbenchError

HIST_L0 = 1e-6
FINE_LOG_R = math.log1p(1e-4)
COARSE_LOG_R = math.log1p(1e-2)
FINE_BINS = int(math.ceil(math.log(1e13 / HIST_L0) / FINE_LOG_R))
COARSE_BINS = int(math.ceil(math.log(1e13 / HIST_L0) / COARSE_LOG_R))


@dataclass
class WorkerModel:
    """Per-worker speed: tuple ``seq`` on worker ``w`` runs ``cost * factors[p, w]`` ms, where
    ``p`` is the last period with ``breaks[p] <= seq`` (``breaks[0] == 0``).

    Uniform workers are one period of ones.  OSG's time-series experiment (osg.spec.md 4.6)
    uses two periods switching at stream index 75,000.
    """

    breaks: np.ndarray  # int64[P]
    factors: np.ndarray  # float64[P, n]

    @staticmethod
    def uniform(workers: int) -> "WorkerModel":
        return WorkerModel(np.zeros(1, dtype=np.int64), np.ones((1, workers)))

    @staticmethod
    def periods(workers: int, periods: list[tuple[int, list[float]]]) -> "WorkerModel":
        breaks = np.array([p[0] for p in periods], dtype=np.int64)
        factors = np.array([p[1] for p in periods], dtype=np.float64)
        if len(periods) == 0 or breaks[0] != 0 or np.any(np.diff(breaks) <= 0):
            raise SkewbenchError("worker speed periods must start at 0 and increase")
        if factors.shape != (len(periods), workers) or np.any(factors <= 0):
            raise SkewbenchError(f"each worker speed period needs {workers} factors > 0")
        return WorkerModel(breaks, factors)

    def exec_times(self, seq: np.ndarray, cost: np.ndarray, worker: np.ndarray) -> np.ndarray:
        """True execution time of each tuple on its assigned worker (``cost`` itself, not a copy,
        when every factor is 1: ``cost * 1.0`` is ``cost``)."""
        if self._uniform:
            return cost
        if len(self.breaks) == 1:
            return cost * self.factors[0][worker]
        p = np.searchsorted(self.breaks, seq, side="right") - 1
        return cost * self.factors[p, worker]

    @functools.cached_property
    def _uniform(self) -> bool:
        return bool(np.all(self.factors == 1.0))

    @property
    def is_uniform(self) -> bool:
        return bool(np.all(self.factors == 1.0))


#: The state of a group of worker queues, kept across batches (``n`` workers, ``T`` windows).
QueueState = namedtuple("QueueState", [
    "free",      # float64[n]  when each worker is next free (ms; -inf before its first tuple)
    "n",         # int64[n]    tuples completed per worker
    "lat_sum",   # float64[n]  sum of completion times per worker
    "lat_max",   # float64[n]  largest completion time per worker (-inf: none yet)
    "lat_min",   # float64[n]  smallest completion time per worker (+inf: none yet)
    "busy",      # float64[n]  sum of execution times per worker
    "wait_sum",  # float64[n]  sum of queueing delays (start - arrival) per worker
    "last_end",  # float64[n]  completion time of each worker's last tuple (-inf: none)
    "hist",      # int64[FINE_BINS]        completion-time histogram, fine bins
    "win_n",     # int64[T]                tuples per window
    "win_sum",   # float64[T, n]           completion-time sums per window and worker
    "win_max",   # float64[T]              largest completion time per window
    "win_hist",  # int64[T, COARSE_BINS]   completion-time histogram per window, coarse bins
])


def new_queue_state(workers: int, windows: int) -> QueueState:
    """Empty queues for ``workers`` workers and ``windows`` metrics windows."""
    n, T = workers, windows
    return QueueState(
        free=np.full(n, -np.inf), n=np.zeros(n, dtype=np.int64), lat_sum=np.zeros(n),
        lat_max=np.full(n, -np.inf), lat_min=np.full(n, np.inf), busy=np.zeros(n), wait_sum=np.zeros(n),
        last_end=np.full(n, -np.inf), hist=np.zeros(FINE_BINS, dtype=np.int64),
        win_n=np.zeros(T, dtype=np.int64), win_sum=np.zeros((T, n)), win_max=np.full(T, -np.inf),
        win_hist=np.zeros((T, COARSE_BINS), dtype=np.int64))


@njit(inline="always", cache=True)
def fifo_start(arrival, free):
    """When a tuple arriving at ``arrival`` starts on a FIFO server free at ``free``."""
    return arrival if arrival > free else free


@njit(cache=True)
def _queue_kernel(workers, arrival, exec_t, in_group, widx, st, l0, log_r_f, log_r_c):
    """FIFO queues of the workers with ``in_group[w]``: tuple ``i`` goes to ``workers[i]``,
    arrives at ``arrival[i]``, runs ``exec_t[i]`` ms and counts in window ``widx[i]``."""
    nf = st.hist.shape[0]
    nc = st.win_hist.shape[1]
    for i in range(workers.shape[0]):
        w = workers[i]
        if not in_group[w]:
            continue
        a = arrival[i]
        start = fifo_start(a, st.free[w])
        e = start + exec_t[i]
        st.free[w] = e
        lat = e - a
        st.n[w] += 1
        st.lat_sum[w] += lat
        if lat > st.lat_max[w]:
            st.lat_max[w] = lat
        if lat < st.lat_min[w]:
            st.lat_min[w] = lat
        st.busy[w] += exec_t[i]
        st.wait_sum[w] += start - a
        st.last_end[w] = e
        x = lat / l0
        lx = math.log(x) if x > 1.0 else 0.0  # once for both histograms
        b = int(lx / log_r_f) if x > 1.0 else 0
        if b >= nf:
            b = nf - 1
        st.hist[b] += 1
        k = widx[i]
        st.win_n[k] += 1
        st.win_sum[k, w] += lat
        if lat > st.win_max[k]:
            st.win_max[k] = lat
        bc = int(lx / log_r_c) if x > 1.0 else 0
        if bc >= nc:
            bc = nc - 1
        st.win_hist[k, bc] += 1


def simulate_queues(state: QueueState, workers: np.ndarray, arrival: np.ndarray, exec_t: np.ndarray,
                    in_group: np.ndarray, window: np.ndarray) -> None:
    """Feed one batch (in stream order) to the queues of the workers in ``in_group``."""
    _queue_kernel(workers, arrival, exec_t, in_group, window, state, HIST_L0, FINE_LOG_R, COARSE_LOG_R)


@njit(cache=True)
def _rr_kernel(seq, arrival, exec_t, in_group, free, lat_sum, n):
    for i in range(seq.shape[0]):
        w = seq[i] % n
        if not in_group[w]:
            continue
        a = arrival[i]
        start = fifo_start(a, free[w])
        e = start + exec_t[i]
        free[w] = e
        lat_sum[w] += e - a


def round_robin_latency(seq: np.ndarray, arrival: np.ndarray, exec_t: np.ndarray, in_group: np.ndarray,
                        free: np.ndarray, lat_sum: np.ndarray, workers: int) -> None:
    """Round robin (tuple ``seq`` to worker ``seq mod n``) on the same times: adds each worker's
    completion times to ``lat_sum``; ``free`` carries the queues across batches."""
    _rr_kernel(seq, arrival, exec_t, in_group, free, lat_sum, workers)


@dataclass
class Sparse:
    """A mostly-zero int64 array, stored as its non-zero entries (histograms sent to the driver)."""

    shape: tuple[int, ...]
    index: np.ndarray
    values: np.ndarray

    @staticmethod
    def of(a: np.ndarray) -> "Sparse":
        flat = a.ravel()
        idx = np.flatnonzero(flat)
        return Sparse(a.shape, idx, flat[idx])

    def dense(self) -> np.ndarray:
        out = np.zeros(int(np.prod(self.shape)), dtype=np.int64)
        out[self.index] = self.values
        return out.reshape(self.shape)


def quantiles(hist: np.ndarray, log_r: float, qs: Sequence[float], lo: float, hi: float) -> list[float]:
    """Quantiles ``qs`` of a histogram (bin midpoints), clamped to ``[lo, hi]``."""
    total = int(hist.sum())
    if total == 0:
        return [float("nan")] * len(qs)
    cum = np.cumsum(hist)
    out = []
    for q in qs:
        rank = max(1, int(math.ceil(q * total)))
        b = int(np.searchsorted(cum, rank, side="left"))
        mid = HIST_L0 * math.exp((b + 0.5) * log_r) if b > 0 else HIST_L0
        out.append(float(min(max(mid, lo), hi)))
    return out
