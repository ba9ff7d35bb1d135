"""The engine's constants (:class:`skewbench.live.model.Constants`), measured on a stream of their
own, never on the tuples a run compares.

A calibration is up to three Flink jobs on a separate stream: uniform keys, round robin over the
workers, the run's costs (its own cost values, cycled), through the same job (sources, keyed
aggregation, the merge stage that round robin's split keys need), the fill job first when there
is one (its records also warm the job's code up for the other two):

* **idle** (``IDLE_S`` of stream at 25% of the workers' capacity; every tuple finds its worker
  idle or nearly): the transport delay (the median, over tuples, of a worker's start less the
  tuple's emission), the fire time per key (the mean gap between two partial aggregates a
  worker emits in one fire), and the merge stage's time per partial (the mean gap between
  partials a merge subtask takes back to back);
* **busy** (``BUSY_S`` at the run's own rate, in bursts: every ``BURST_S`` the burst's tuples are
  all due at once, so every worker is backlogged through most of each burst while the engine
  carries the run's load on average): the per-record overhead, the mean over every worker's
  back-to-back tuples (the next one had arrived before this one ended) of the time from one's
  start to the next one's start, less the first one's cost; and each worker's own;
* **fill** (``FILL_S`` at ``FILL_RATE`` tuples a second, every tuple to worker 0 at
  ``FILL_COST_MS``, four times what it takes; before the strategies only: a count does not
  drift): worker 0's channels fill as a hot worker's do, and each source blocks once its channel
  is full; the records it had emitted to worker 0 and worker 0 had not started when it first
  blocked (right after the emission before its first one over ``BLOCKED_MS`` late) are that
  channel's capacity; the median over the local channels (source and worker 0 in one
  TaskManager) and over the remote ones; and how worker 0 took its channels in turns while
  backlogged (:func:`turns`).  (A stall, a first tuple sleeping while the channels fill,
  measures less: 6,000 records on every channel here, where a gradual backlog reached 9,600 on
  remote ones without blocking: the receiver's buffers then hold full network buffers, not
  single records.)

The first ``WARMUP_S`` of every job is left out (a job's first records are slower), and a fresh
cluster is warmed up first (:func:`warm_up`, then a calibration whose numbers are discarded).
A calibration runs before the strategy phases and again after them; :func:`check` refuses
numbers a run cannot be measured with (:class:`ImplausibleCalibration`, one message naming them
and what to try): a per-record overhead over half the mean cost, workers' overheads more than 2x
apart, other processes keeping more than half a core busy while it ran (:class:`CpuWatch`), the
calibrations' median overheads before and after more than 25% apart (in the second and the last,
an overhead under a tenth of the cost counts as a tenth of it).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import psutil

from skewbench.errors import SkewbenchError
from skewbench.live.flink import EnginePhase, Recorded
from skewbench.live.model import Constants

IDLE_S, IDLE_LOAD = 4.0, 0.25
BUSY_S, BURST_S = 4.0, 0.5
FILL_S, FILL_RATE, FILL_COST_MS = 4.0, 20_000.0, 0.1
BLOCKED_MS = 200.0
WARMUP_S = 1.0
CAL_KEYS = 1000
#: implausible: an overhead over this share of the mean cost, workers' overheads further apart than
#: this ratio, the calibrations before and after the strategies further apart than this share
MAX_OVERHEAD_SHARE = 0.5
MAX_WORKER_RATIO = 2.0
MAX_DRIFT = 0.25
#: an overhead under this share of the mean cost counts as this share in the last two checks (a
#: few microseconds' difference between two small overheads changes no prediction)
SMALL_OVERHEAD = 0.1
#: implausible: other processes than the run's own kept more cores than this busy while it calibrated
MAX_OTHERS_CORES = 0.5


class ImplausibleCalibration(SkewbenchError):
    """The calibration says the engine cannot be measured now (a loaded machine, say)."""


@dataclass
class Calibration:
    """A calibration's result: the model's constants and what they were measured from."""

    overhead_ms: float
    overhead_per_worker_ms: list[float]
    transport_ms: float
    capacity: int
    capacity_remote: int
    capacity_per_source: list[int]
    capacity_local_sources: list[bool]
    chunk_records: int
    slice_ms: float
    fire_ms: float
    merge_ms: float
    merge_transport_ms: float
    watermark_ms: float
    tuples: dict[str, int]
    #: the median back-to-back overhead (the drift check's: the mean's tail moves with a JVM's
    #: warmth and a few long pauses, which the model's mean needs but a change of machine does not)
    overhead_median_ms: float = float("nan")
    #: cores that processes other than the run's own (this process, its engine and cluster) kept
    #: busy while the calibration ran (None: not measured, a remote cluster)
    others_cores: float | None = None

    def constants(self, bounded: bool = True) -> Constants:
        return Constants(self.overhead_ms, self.transport_ms, self.capacity if bounded else 0, self.fire_ms,
                         self.merge_ms, self.merge_transport_ms, self.watermark_ms,
                         self.capacity_remote if bounded else 0, self.chunk_records, self.slice_ms)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def phases(cost_ms: np.ndarray, *, rate: float, workers: int, sources: int, settings: dict[str, Any], seed: int,
           tag: str, fill: bool = True) -> list[EnginePhase]:
    """The calibration's jobs (fill unless ``fill`` is false, idle, busy), named
    ``<tag>-<which>``, for a run offering ``rate`` tuples per second of costs ``cost_ms``."""
    rng = np.random.default_rng(seed ^ 0x5EED)
    mean = float(np.mean(cost_ms))
    capacity = workers * 1000.0 / mean  # tuples per second the workers take together
    out = []
    if fill:  # first: its hundred thousand records warm the jobs' code up for the other two
        m = int(FILL_S * FILL_RATE)
        keys = rng.integers(0, CAL_KEYS, m).astype(np.int64)
        out.append(EnginePhase(f"{tag}-fill", "routed", "agg", workers, sources, 0, np.zeros(m, np.int32), keys, keys,
                               np.ones(m, np.int64), np.full(m, FILL_COST_MS), np.arange(m) * 1000.0 / FILL_RATE,
                               settings=dict(settings)))
    for which, seconds, r in (("idle", IDLE_S, IDLE_LOAD * capacity), ("busy", BUSY_S, rate)):
        m = max(workers * 4, int(round(r * seconds)))
        due = np.arange(m) * 1000.0 / r
        if which == "busy":  # every burst's tuples due at its start
            due = np.floor(due / (BURST_S * 1000.0)) * BURST_S * 1000.0
        cost = np.resize(np.asarray(cost_ms, dtype=np.float64), m)
        keys = rng.integers(0, CAL_KEYS, m).astype(np.int64)
        out.append(EnginePhase(f"{tag}-{which}", "routed", "agg", workers, sources, workers,
                               (np.arange(m) % workers).astype(np.int32), keys, keys, np.ones(m, np.int64), cost,
                               due, settings=dict(settings)))
    return out


WARM_TUPLES, WARM_RATE = 250_000, 50_000.0


def warm_up(*, workers: int, sources: int, settings: dict[str, Any], seed: int) -> EnginePhase:
    """A job that only warms the cluster's JVMs up (its code compiled, its buffers allocated):
    ``WARM_TUPLES`` tuples at no cost, round robin, through the same job; its records are discarded.
    A fresh cluster's first jobs run slower per record (measured here, calibrations one after another
    on a fresh cluster: 0.21, 0.14, 0.12, 0.11, 0.12 ms per record; after this job: 0.17, 0.12,
    0.13), so a calibration's numbers are discarded after it too."""
    rng = np.random.default_rng(seed ^ 0x3A3A)
    m = WARM_TUPLES
    keys = rng.integers(0, CAL_KEYS, m).astype(np.int64)
    return EnginePhase("warm-up", "routed", "agg", workers, sources, workers, (np.arange(m) % workers).astype(np.int32),
                       keys, keys, np.ones(m, np.int64), np.zeros(m), np.arange(m) * 1000.0 / WARM_RATE,
                       settings=dict(settings))


def _after_warmup(rec: Recorded) -> np.ndarray:
    return rec.work[rec.work[:, 1] >= WARMUP_S * 1000.0]


def transport(rec: Recorded, emit_of: np.ndarray) -> float:
    """The median of start less emission over the idle job's tuples after the warm-up."""
    w = _after_warmup(rec)
    return float(np.median(w[:, 2] - emit_of[w[:, 0].astype(np.int64)]))


def overheads(rec: Recorded, emit_of: np.ndarray, cost_ms: np.ndarray, workers: int, transport_ms: float
              ) -> tuple[float, list[float], int, float]:
    """The busy job's per-record overhead (the mean over all back-to-back pairs, and per worker),
    the pairs, and their median."""
    w = _after_warmup(rec)
    gaps, per = [], []
    for k in range(workers):
        r = w[w[:, 4] == k]
        r = r[np.argsort(r[:, 2], kind="stable")]
        if len(r) < 2:
            per.append(float("nan"))
            continue
        idx = r[:, 0].astype(np.int64)
        # back to back: the next tuple had reached the worker before this one ended
        b2b = emit_of[idx[1:]] + transport_ms <= r[:-1, 3]
        g = (np.diff(r[:, 2]) - cost_ms[idx[:-1]])[b2b]
        gaps.append(g)
        per.append(float(g.mean()) if g.size else float("nan"))
    allg = np.concatenate(gaps) if gaps else np.zeros(0)
    if allg.size == 0:
        raise ImplausibleCalibration("the busy calibration job left no worker backlogged: no per-record overhead "
                                     "could be measured (fewer --workers, or a quieter machine)")
    return float(allg.mean()), per, int(allg.size), float(np.median(allg))


def fire_and_merge(rec: Recorded) -> tuple[float, float]:
    """The idle job's mean gap between consecutive partials of one fire, and between partials a
    merge subtask took back to back (its end to the next start under 0.05 ms)."""
    f = rec.fires
    fire = []
    for key in np.unique(f[:, 4] * 1_000_000 + f[:, 0]):
        r = f[(f[:, 4] * 1_000_000 + f[:, 0]) == key]
        if len(r) > 1:
            s = np.sort(r[:, 2])
            fire.append(np.diff(s))
    fire_ms = float(np.concatenate(fire).mean()) if fire else 0.0
    mg = rec.merge
    gaps = []
    for t in np.unique(mg[:, 4]):
        r = mg[mg[:, 4] == t]
        r = r[np.argsort(r[:, 2], kind="stable")]
        nxt = r[1:, 2] - r[:-1, 3] < 0.05
        gaps.append((r[1:, 2] - r[:-1, 2])[nxt])
    allg = np.concatenate(gaps) if gaps else np.zeros(0)
    merge_ms = float(allg.mean()) if allg.size else float(np.mean(mg[:, 3] - mg[:, 2])) if len(mg) else 0.0
    return fire_ms, merge_ms


def turns(rec: Recorded, ep: EnginePhase, kinds: list[bool], t0: float, t1: float) -> tuple[int, float]:
    """How worker 0 of the fill job took its channels' records while backlogged (started between
    ``t0`` and ``t1``): the median records of a turn on a local channel (a full buffer), and the
    median records of a turn on a remote channel over the channel's arrival rate (the time one
    network buffer gathers), in ms; each kind the other's when one is missing."""
    w = rec.work[(rec.work[:, 2] >= t0) & (rec.work[:, 2] <= t1)]
    w = w[np.argsort(w[:, 2], kind="stable")]
    src = w[:, 0].astype(np.int64) % ep.sources
    if src.size < 2:
        return 0, 0.0
    cut = np.flatnonzero(np.diff(src) != 0) + 1
    first = np.concatenate([[0], cut])
    runs = np.diff(np.concatenate([first, [src.size]]))
    kind = np.array(kinds)[src[first]]
    # the first and last turns of the span are cut short by its ends
    runs, kind = runs[1:-1], kind[1:-1]
    rate = FILL_RATE / ep.sources / 1000.0  # a channel's records per ms
    loc = runs[kind]
    rem = runs[~kind]
    chunk = int(np.median(loc)) if loc.size else int(np.median(rem)) if rem.size else 0
    slice_ms = float(np.median(rem)) / rate if rem.size else float(np.median(loc)) / rate if loc.size else 0.0
    return chunk, slice_ms


def capacity(rec: Recorded, ep: EnginePhase) -> tuple[int, int, list[int], list[bool], int, float]:
    """The fill job's channel capacities: per source, the records in its channel to worker 0 when
    it first blocked; the median over the local channels and over the remote ones (each the
    other's when one kind is missing), every channel's, which were local, and how worker 0 took
    its channels in turns (:func:`turns`)."""
    from skewbench.live.flink import same_host

    start = np.full(ep.tuples, np.inf)
    start[rec.work[:, 0].astype(np.int64)] = rec.work[:, 2]
    emit = np.full(ep.tuples, np.nan)
    emit[rec.emit[:, 0].astype(np.int64)] = rec.emit[:, 1]
    per, first_block = [], []
    for j in range(ep.sources):
        mine = np.arange(j, ep.tuples, ep.sources)
        late = np.flatnonzero(emit[mine] - ep.due_ms[mine] > BLOCKED_MS)
        if late.size == 0:
            raise ImplausibleCalibration(f"the fill calibration's source {j} never blocked: its channel to worker 0 held "
                                         f"all {mine.size:,} of its records; no capacity could be measured")
        if late[0] == 0:
            raise ImplausibleCalibration(f"the fill calibration's source {j} was late from its first tuple: the job did "
                                         f"not start as it should (a loaded machine?)")
        t = emit[mine[late[0] - 1]]  # it blocked right after this emission
        before = mine[:late[0]]
        per.append(int((start[before] > t).sum()))
        first_block.append(t)
    local = same_host(rec, ep.sources, ep.workers)
    kinds = [bool(local[j, 0]) if local is not None else True for j in range(ep.sources)]
    loc = [c for c, k in zip(per, kinds) if k]
    rem = [c for c, k in zip(per, kinds) if not k]
    b_local = int(np.median(loc)) if loc else int(np.median(rem))
    b_remote = int(np.median(rem)) if rem else b_local
    # worker 0 is backlogged from about half way to the first block until the stream's end
    chunk, slice_ms = turns(rec, ep, kinds, 0.5 * min(first_block), float(ep.due_ms.max()))
    return b_local, b_remote, per, kinds, chunk, slice_ms


def emit_times(rec: Recorded, n: int) -> np.ndarray:
    out = np.full(n, np.nan)
    out[rec.emit[:, 0].astype(np.int64)] = rec.emit[:, 1]
    return out


def calibration(recs: list[Recorded], cals: list[EnginePhase], *, workers: int, sources: int,
                watermark_ms: float, capacities: "Calibration | None" = None) -> Calibration:
    """The constants from the jobs' records (:func:`phases`' order: fill when there is one, idle,
    busy); without a fill job, the channel capacities of ``capacities`` (the calibration before)."""
    fill_rec, fill_ep = None, None
    if len(recs) > 2:  # the fill job first
        fill_rec, fill_ep = recs[0], cals[0]
        recs, cals = recs[1:], cals[1:]
    idle, busy = recs[:2]
    e_idle = emit_times(idle, cals[0].tuples)
    e_busy = emit_times(busy, cals[1].tuples)
    tr = transport(idle, e_idle)
    o, per, pairs, o_med = overheads(busy, e_busy, cals[1].cost_ms, workers, tr)
    fire_ms, merge_ms = fire_and_merge(idle)
    if fill_ep is not None:
        b_local, b_remote, per_source, kinds, chunk, slice_ms = capacity(fill_rec, fill_ep)
    elif capacities is not None:
        b_local, b_remote = capacities.capacity, capacities.capacity_remote
        per_source, kinds = capacities.capacity_per_source, capacities.capacity_local_sources
        chunk, slice_ms = capacities.chunk_records, capacities.slice_ms
    else:
        raise ValueError("a calibration without a fill job needs the capacities of another")
    return Calibration(o, per, tr, b_local, b_remote, per_source, kinds, chunk, slice_ms, fire_ms, merge_ms, tr,
                       float(watermark_ms),
                       {"idle": cals[0].tuples, "busy": cals[1].tuples,
                        "fill": fill_ep.tuples if fill_ep is not None else 0, "busy_pairs": pairs}, o_med)


def check(c: Calibration, mean_cost_ms: float, when: str) -> None:
    """Refuse a calibration the run cannot be measured with (one message, the numbers, what to try)."""
    hint = ("what to try: a quieter machine (nothing else running on its cores), fewer --workers, or a larger "
            "--cost")
    if not np.isfinite(c.overhead_ms) or c.overhead_ms > MAX_OVERHEAD_SHARE * mean_cost_ms:
        raise ImplausibleCalibration(
            f"implausible calibration {when} the strategies: a per-record overhead of {c.overhead_ms:.3f} ms is over "
            f"{MAX_OVERHEAD_SHARE:.0%} of the {mean_cost_ms:g} ms cost (transport {c.transport_ms:.2f} ms): the engine "
            f"is not what the run would measure; {hint}")
    if c.others_cores is not None and c.others_cores > MAX_OTHERS_CORES:
        raise ImplausibleCalibration(
            f"implausible calibration {when} the strategies: other processes kept {c.others_cores:.1f} of the "
            f"machine's {os.cpu_count()} cores busy while it ran (at most {MAX_OTHERS_CORES:g}; its per-record "
            f"overhead {c.overhead_ms:.3f} ms, transport {c.transport_ms:.2f} ms): the run would measure the other "
            f"load; {hint}")
    per = [v for v in c.overhead_per_worker_ms if np.isfinite(v)]
    floor = SMALL_OVERHEAD * mean_cost_ms
    if per and max(per) > MAX_WORKER_RATIO * max(min(per), floor):
        raise ImplausibleCalibration(
            f"implausible calibration {when} the strategies: the workers' per-record overheads are "
            f"{min(per):.3f}-{max(per):.3f} ms, more than {MAX_WORKER_RATIO:g}x apart; {hint}")


def drifted(before_ms: float, after_ms: float, mean_cost_ms: float) -> bool:
    """Two overheads more than 25% apart; overheads that are a small part of the cost change no
    prediction much, so they are compared as that part (``SMALL_OVERHEAD`` of the cost)."""
    return abs(before_ms - after_ms) > MAX_DRIFT * max(before_ms, after_ms, SMALL_OVERHEAD * mean_cost_ms)


def check_drift(before: Calibration, after: Calibration, mean_cost_ms: float) -> None:
    """Refuse a run whose calibrations before and after the strategies are over 25% apart."""
    check(after, mean_cost_ms, "after")
    a, b = before.overhead_median_ms, after.overhead_median_ms
    if not (np.isfinite(a) and np.isfinite(b)):  # a calibration without the pairs' median (Spark's)
        a, b = before.overhead_ms, after.overhead_ms
    if drifted(a, b, mean_cost_ms):
        raise ImplausibleCalibration(
            f"implausible calibration: the per-record overhead (median) was {a:.3f} ms before the strategies and "
            f"{b:.3f} ms after them, more than {MAX_DRIFT:.0%} apart (means {before.overhead_ms:.3f} and "
            f"{after.overhead_ms:.3f} ms, transport {before.transport_ms:.2f} and "
            f"{after.transport_ms:.2f} ms): the machine changed during the run; what to try: a quieter machine "
            f"(nothing else running on its cores), fewer --workers or --repeat")


class CpuWatch:
    """The cores other processes than this one and its descendants (the engine's client, a local
    cluster's JobManager and TaskManagers) kept busy between :meth:`start` and :meth:`others`,
    from the machine's CPU times (Linux ``/proc/stat`` through psutil)."""

    def __init__(self) -> None:
        self.t0 = self.busy0 = self.ours0 = 0.0

    @staticmethod
    def _busy() -> float:
        t = psutil.cpu_times()
        return t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0) + \
            getattr(t, "steal", 0.0)

    @staticmethod
    def _ours() -> float:
        me = psutil.Process()
        total = sum(me.cpu_times()[:4])  # user, system and the waited-for children's
        for c in me.children(recursive=True):
            try:
                total += sum(c.cpu_times()[:2])
            except psutil.Error:  # gone meanwhile: its time is in its parent's children times
                pass
        return total

    def start(self) -> "CpuWatch":
        self.t0, self.busy0, self.ours0 = time.monotonic(), self._busy(), self._ours()
        return self

    def others(self) -> float:
        """Cores (0 to the machine's count) the other processes used on average since :meth:`start`."""
        wall = max(time.monotonic() - self.t0, 1e-3)
        return max(0.0, ((self._busy() - self.busy0) - (self._ours() - self.ours0)) / wall)
