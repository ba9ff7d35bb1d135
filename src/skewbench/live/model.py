"""The simulator's model of the live job: what it predicts for a phase, tuple by tuple.

The engine (:mod:`skewbench.live.flink`) runs ``s`` sources, each emitting its slice of the
stream (tuple ``i`` belongs to source ``i mod s``) when due, ``p`` workers and, when a strategy
splits keys, a merge stage.  The model has what that job has, with the engine's constants
measured by a calibration on another stream (:mod:`skewbench.live.calibrate`):

* **Sources.**  Source ``j`` emits its tuples in order, each at the earliest time it is due, its
  previous tuple left, and every one of its channels has room: a channel ``(j, w)`` holds at
  most its capacity of records (emitted by ``j`` to ``w`` and not yet started by ``w``), and a
  source with one full channel emits nothing at all (Flink's output is unavailable while any
  subpartition is over its buffers: head-of-line blocking).  A channel within one TaskManager
  (local) holds the sender's buffers only; one between TaskManagers (remote) also the
  receiver's, so the two capacities differ (:meth:`Constants.capacities`).  Capacity 0:
  unbounded, a source never waits.  The time a source waits for room is its blocked time.
* **Workers.**  Each worker is a FIFO queue in arrival order: a record arrives ``transport``
  after it left its source and occupies the worker for its cost plus the engine's per-record
  ``overhead``.
* **Windows.**  Tumbling windows of event time (a tuple's due time): a source's watermark passes
  the end of window ``b`` ``watermark_delay`` after it emitted its first tuple of a later window,
  or when it has emitted its last tuple; ``watermark_delay = interval x s / (s + 1)``, the
  expected latest of ``s`` sources' periodic watermarks whose timers tick at independent phases
  of the interval (measured here with 5 sources at 50 ms: windows fired 47 ms after their end,
  median, where the mean of one source's delay, 25 ms, predicted far less); a worker fires
  window ``b`` once the watermark of every source has reached it (the fire is a queue item that
  arrives ``transport`` after the last source's watermark, behind the records that arrived
  before it) and spends ``fire`` per key of the window it holds, emitting that key's partial
  aggregate.  Without a merge stage a key's final aggregate is that partial, at the end of the
  fire.
* **Merge.**  With a merge stage, each partial reaches the merge subtask of its key
  ``merge_transport`` after its worker's fire and occupies it for ``merge``; the merge subtask
  fires window ``b`` once every worker's watermark (the end of its fire) has reached it, and
  spends ``fire`` per key it emits.  A key's final aggregate is at the end of that fire.

For every tuple the model gives when it left its source, started and ended on its worker, and
when its key's final aggregate for its window was emitted; :mod:`skewbench.live.measure`
computes the same metrics from these as from what the engine recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

import heapq

import numpy as np

from skewbench.jit import njit


@dataclass(frozen=True)
class Constants:
    """What the engine adds, in milliseconds (a calibration's result)."""

    overhead_ms: float  # a worker's time per record beyond its cost
    transport_ms: float  # from a source's emission to an idle worker's start
    capacity: int  # records a local channel holds before its source blocks (0: unbounded)
    fire_ms: float  # a worker's (or the merge's) time per key when a window fires
    merge_ms: float  # the merge stage's time per partial aggregate
    merge_transport_ms: float  # from a worker's fire to an idle merge subtask
    watermark_ms: float  # the sources' periodic watermark interval (configuration)
    capacity_remote: int = -1  # records a remote channel holds (-1: as a local one)
    chunk_records: int = 0  # records a worker takes from a local channel in one turn (0: all there)
    slice_ms: float = 0.0  # a remote channel's turn: the records that reached it within this of the first (0: all)

    def capacities(self, sources: int, workers: int, local: np.ndarray | None = None) -> np.ndarray:
        """Each channel's capacity (sources x workers): local where ``local`` (a channel within one
        TaskManager), remote elsewhere; every channel local when ``local`` is None."""
        remote = self.capacity if self.capacity_remote < 0 or self.capacity <= 0 else self.capacity_remote
        if local is None:
            return np.full((sources, workers), int(self.capacity), dtype=np.int64)
        return np.where(np.asarray(local, dtype=bool), int(self.capacity), int(remote)).astype(np.int64)


@dataclass
class Prediction:
    """Per tuple (stream order): emitted, started, ended (worker), final aggregate out (ms from
    the phase's start); per source its blocked time; the merge stage's partials."""

    emit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    final: np.ndarray
    blocked: np.ndarray  # per tuple: how long its source waited for room before emitting it
    merge_start: np.ndarray  # per partial aggregate (empty without a merge stage)
    merge_end: np.ndarray
    merge_task: np.ndarray


@njit(cache=True)
def _sources_and_workers(due, cost, worker, window, sources, workers, n_windows, overhead, transport, capacity,
                         local, chunk, slice_ms, wm_delay, nparts, fire):  # pragma: no cover - compiled
    """The event-driven simulation of sources, channels and workers (module docstring); events in
    time order, ties by kind (0 a worker free, 1 a source's try, 2 a source's watermark) and then
    the order they were made."""
    m = due.size
    emit = np.full(m, np.nan)
    start = np.empty(m)
    end = np.empty(m)
    blocked = np.zeros(m)
    fire_end = np.zeros((workers, n_windows))
    # each channel's queue of items (a record: kind 0 and its tuple; a watermark: kind 1 and the
    # number of windows it passes), with when it is there, in one flat array
    nchan = sources * workers
    size = np.zeros(nchan, dtype=np.int64)
    for i in range(m):
        size[(i % sources) * workers + worker[i]] += 1
    off = np.zeros(nchan + 1, dtype=np.int64)
    for c in range(nchan):
        off[c + 1] = off[c] + size[c] + n_windows + 2
    kind = np.zeros(off[nchan], dtype=np.int8)
    what = np.zeros(off[nchan], dtype=np.int64)
    avail = np.zeros(off[nchan])
    head = off[:nchan].copy()
    tail = off[:nchan].copy()
    occ = np.zeros(nchan, dtype=np.int64)
    wm = np.zeros(nchan, dtype=np.int64)
    nxt = np.arange(sources)
    prev = np.full(sources, -np.inf)
    passed = np.zeros(sources, dtype=np.int64)
    stuck = np.zeros(sources, dtype=np.bool_)
    fired = np.zeros(workers, dtype=np.int64)
    busy_until = np.zeros(workers)
    idle = np.ones(workers, dtype=np.bool_)
    turn = np.zeros(workers, dtype=np.int64)
    cur = np.full(workers, -1, dtype=np.int64)  # the channel (source) of the current turn, or -1
    left = np.zeros(workers, dtype=np.int64)  # local: records the turn may still take
    until = np.zeros(workers)  # remote: the turn takes records there by then
    seq = 0
    ev = [(0.0, 0, 0, 0, 0)]
    ev.pop()
    for j in range(sources):
        if j < m:
            seq += 1
            heapq.heappush(ev, (due[j], 1, seq, j, 0))
        else:  # a source without tuples: its watermark passes every window at once
            seq += 1
            heapq.heappush(ev, (0.0, 2, seq, j, n_windows))
    while len(ev) > 0:
        t, k, _, x, y = heapq.heappop(ev)
        if k == 0:  # a worker is free, or an item reaches an idle one
            w = x
            if t < busy_until[w] - 1e-12:
                continue
            busy_until[w] = t
            while True:
                j = cur[w]
                take = -1
                if j >= 0:
                    c = j * workers + w
                    if head[c] < tail[c] and avail[head[c]] <= t:
                        if (local[j, w] and left[w] > 0) or (not local[j, w] and avail[head[c]] <= until[w]):
                            take = j
                if take < 0:
                    cur[w] = -1
                    for step in range(sources):
                        jj = (turn[w] + step) % sources
                        c = jj * workers + w
                        if head[c] < tail[c] and avail[head[c]] <= t:
                            turn[w] = (jj + 1) % sources
                            cur[w] = jj
                            left[w] = chunk
                            until[w] = avail[head[c]] + slice_ms
                            take = jj
                            break
                if take < 0:  # nothing there: idle until the next item arrives
                    idle[w] = True
                    soon = np.inf
                    for jj in range(sources):
                        c = jj * workers + w
                        if head[c] < tail[c]:
                            soon = min(soon, avail[head[c]])
                    if soon < np.inf:
                        seq += 1
                        heapq.heappush(ev, (soon, 0, seq, w, 0))
                    break
                c = take * workers + w
                h = head[c]
                head[c] += 1
                if kind[h] == 0:  # a record: the worker starts it
                    i = what[h]
                    left[w] -= 1
                    start[i] = t
                    end[i] = t + cost[i] + overhead
                    occ[c] -= 1
                    if stuck[take]:
                        seq += 1
                        heapq.heappush(ev, (t, 1, seq, take, 0))
                    idle[w] = False
                    busy_until[w] = end[i]
                    seq += 1
                    heapq.heappush(ev, (end[i], 0, seq, w, 0))
                    break
                # a watermark: once every channel's has passed a window, the worker fires it
                wm[c] = max(wm[c], what[h])
                low = wm[w]
                for jj in range(sources):
                    low = min(low, wm[jj * workers + w])
                if low > fired[w]:
                    f = t
                    for b in range(fired[w], low):
                        f += nparts[w, b] * fire
                        fire_end[w, b] = f
                    fired[w] = low
                    if f > t:
                        idle[w] = False
                        busy_until[w] = f
                        seq += 1
                        heapq.heappush(ev, (f, 0, seq, w, 0))
                        break
        elif k == 1:  # a source tries to emit its next tuple
            j = x
            i = nxt[j]
            if i >= m or not np.isnan(emit[i]) or t < due[i] or t < prev[j]:
                continue
            full = False
            for w in range(workers):
                if capacity[j, w] > 0 and occ[j * workers + w] >= capacity[j, w]:
                    full = True
            if full:
                stuck[j] = True
                continue
            stuck[j] = False
            w = worker[i]
            c = j * workers + w
            ready = max(due[i], prev[j])
            emit[i] = t
            if t > ready:
                blocked[i] = t - ready
            prev[j] = t
            kind[tail[c]] = 0
            what[tail[c]] = i
            avail[tail[c]] = t + transport
            tail[c] += 1
            occ[c] += 1
            if idle[w]:
                seq += 1
                heapq.heappush(ev, (t + transport, 0, seq, w, 0))
            if window[i] > passed[j]:
                seq += 1
                heapq.heappush(ev, (t + wm_delay, 2, seq, j, window[i]))
                passed[j] = window[i]
            nxt[j] += sources
            seq += 1
            if nxt[j] >= m:  # its last tuple: the final watermark passes every window at once
                heapq.heappush(ev, (t, 2, seq, j, n_windows))
            else:
                heapq.heappush(ev, (max(t, due[nxt[j]]), 1, seq, j, 0))
        else:  # a source's watermark, in band on every one of its channels
            j = x
            for w in range(workers):
                c = j * workers + w
                kind[tail[c]] = 1
                what[tail[c]] = y
                avail[tail[c]] = t + transport
                tail[c] += 1
                if idle[w]:
                    seq += 1
                    heapq.heappush(ev, (t + transport, 0, seq, w, 0))
    return emit, start, end, blocked, fire_end


def fifo(arrival: np.ndarray, service: np.ndarray) -> np.ndarray:
    """Completion times of one FIFO server for arrivals ``arrival`` (non-decreasing) served in
    order with service times ``service`` (same units)."""
    if arrival.size == 0:
        return np.zeros(0)
    c = np.cumsum(service)
    return c + np.maximum.accumulate(arrival - (c - service))


def watermark_delay(interval_ms: float, sources: int) -> float:
    """How long after a source passes a window's end the window fires, for the latest of
    ``sources`` periodic watermarks (module docstring)."""
    return float(interval_ms) * sources / (sources + 1.0)


def windows_of(due_ms: np.ndarray, window_ms: float) -> np.ndarray:
    """Each tuple's tumbling window of event time (its due time), as the job computes it: from the
    due time in whole microseconds (``flink.write_phase`` rounds it) over the window's
    microseconds.  A float floor instead put a due time within half a microsecond below a window's
    end in the next window, against the job, and failed a correct phase's aggregate check (seen
    at 5,859 tuples/s)."""
    due_us = np.rint(np.asarray(due_ms, dtype=np.float64) * 1e3).astype(np.int64)
    return due_us // int(round(float(window_ms) * 1000))


def distinct_cells(a: np.ndarray, b: np.ndarray, c: np.ndarray, nb: int, nc: int) -> np.ndarray:
    """The distinct (a, b, c) triples (c the key), as codes ``(a * nb + b) * nc + c``, sorted."""
    return np.unique((a.astype(np.int64) * nb + b) * nc + c)


def predict(due_ms: np.ndarray, cost_ms: np.ndarray, worker: np.ndarray, key: np.ndarray, *, sources: int,
            workers: int, window_ms: float, k: Constants, merge_task: np.ndarray | None = None,
            merge_parallelism: int = 0, job: str = "agg", local: np.ndarray | None = None) -> Prediction:
    """The model's timings of one phase (module docstring): ``due_ms`` non-decreasing from 0,
    ``key`` dense ids, ``merge_task`` the merge subtask of every key id (a merge stage when given),
    ``local`` which channels stay within a TaskManager (:meth:`Constants.capacities`)."""
    due = np.ascontiguousarray(due_ms, dtype=np.float64)
    m = due.size
    worker = np.ascontiguousarray(worker, dtype=np.int32)
    key = np.asarray(key, dtype=np.int64)
    agg = job == "agg"
    win = windows_of(due, window_ms) if agg else np.zeros(m, dtype=np.int64)
    nw = int(win.max()) + 1 if (m and agg) else 0
    nkeys = int(key.max()) + 1 if m else 1
    cells = distinct_cells(worker, win, key, max(nw, 1), nkeys) if agg else np.zeros(0, np.int64)
    wb = cells // nkeys
    nparts = np.bincount(wb, minlength=workers * max(nw, 1)).reshape(workers, max(nw, 1)).astype(np.float64)[:, :nw]
    is_local = (np.ones((sources, workers), dtype=np.bool_) if local is None
                else np.ascontiguousarray(np.asarray(local, dtype=np.bool_).reshape(sources, workers)))
    emit, start, end, blocked, fire_end = _sources_and_workers(
        due, np.ascontiguousarray(cost_ms, dtype=np.float64), worker.astype(np.int64), win, int(sources), int(workers), nw,
        float(k.overhead_ms), float(k.transport_ms), k.capacities(int(sources), int(workers), local), is_local,
        int(k.chunk_records) if k.chunk_records > 0 else m + 1, float(k.slice_ms) if k.slice_ms > 0 else np.inf,
        watermark_delay(k.watermark_ms, sources), np.ascontiguousarray(nparts), float(k.fire_ms))
    empty = np.zeros(0)
    if not agg:
        return Prediction(emit, start, end, end.copy(), blocked, empty, empty, np.zeros(0, np.int32))
    if merge_task is None or merge_parallelism <= 0:
        return Prediction(emit, start, end, fire_end[worker, win], blocked, empty, empty, np.zeros(0, np.int32))
    # the merge stage: one partial per (worker, window, key), arriving after its worker's fire
    mt = np.asarray(merge_task, dtype=np.int64)
    p_w, p_b, p_k = wb // nw, wb % nw, cells % nkeys
    p_task = mt[p_k]
    p_arr = fire_end[p_w, p_b] + k.merge_transport_ms
    wm_arr = fire_end.max(axis=0) + k.merge_transport_ms  # every worker's watermark, per window
    finals = np.unique((p_task * nw + p_b) * nkeys + p_k) // nkeys  # a final per (task, window, key)
    nfin = np.bincount(finals, minlength=merge_parallelism * nw).reshape(merge_parallelism, nw)
    m_start = np.empty(p_task.size)
    m_end = np.empty(p_task.size)
    merge_fire = np.zeros((merge_parallelism, nw))
    for t in range(merge_parallelism):
        idx = np.flatnonzero(p_task == t)
        # events: the partials, and a fire per window (after the partials that arrive with it)
        arr = np.concatenate([p_arr[idx], wm_arr])
        kind = np.concatenate([np.zeros(idx.size, np.int8), np.ones(nw, np.int8)])
        svc = np.concatenate([np.full(idx.size, k.merge_ms), nfin[t] * k.fire_ms])
        order = np.lexsort((kind, arr))
        e = fifo(arr[order], svc[order])
        ends = np.empty_like(e)
        ends[order] = e
        m_end[idx] = ends[:idx.size]
        m_start[idx] = ends[:idx.size] - k.merge_ms
        merge_fire[t] = ends[idx.size:]
    final = merge_fire[mt[key], win]
    return Prediction(emit, start, end, final, blocked, m_start, m_end, p_task.astype(np.int32))
