"""Plain-Python reference of the live job's model (``skewbench.live.model``), used only by tests.

From the model's definitions, one event at a time, with a heap of events, a deque per channel,
dicts and sets; it shares nothing with the implementation (no flat arrays of channel items, no
offsets):

* events in time order, ties by kind (a worker free or woken, then a source's try, then a
  source's watermark) and then the order they were made;
* source ``j`` holds tuples ``j, j + s, ...``; it tries its next tuple when due (and not before
  its previous emission); it emits it unless one of its channels holds its capacity of records
  not yet started (a local channel ``capacity``, a remote one ``capacity_remote``, -1: the same;
  0: no limit), else it waits until a worker starts one of its records; the wait beyond the due
  time and its previous emission is the tuple's blocked time; a record reaches its channel
  ``transport`` after its emission;
* a source's watermark goes into every one of its channels, behind what it emitted before: for
  the windows before a tuple's, ``watermark_delay = interval x s / (s + 1)`` after that tuple's
  emission; for every window at once with its last tuple's emission, or at 0 for a source without
  tuples;
* a free worker serves its channels in turns, round robin from the one after the last it turned
  to: a turn takes, from one channel, records (and watermarks, which take no time) that are there,
  at most ``chunk_records`` records from a local channel, or those there by ``slice_ms`` after the
  turn's first item from a remote one (0: no limit); a record takes its cost plus ``overhead``;
  once every channel's watermark has passed a window, the worker fires it, ``fire`` per distinct
  key of the window it holds; a key's final aggregate, without a merge stage, is the end of its
  worker's fire;
* with a merge stage: a partial per (worker, window, key), arriving ``merge_transport`` after its
  worker's fire at the key's merge task, which serves partials (``merge`` each) and its own fires
  (``fire`` per key) in arrival order, a window's fire arriving with the last worker's fire end
  plus ``merge_transport`` and after the partials that arrive at the same time.
"""

from __future__ import annotations

import heapq
import math
from collections import deque


def simulate(due, cost, worker, key, window, sources, workers, k, merge_task=None, merge_parallelism=0, local=None):
    """Per tuple: (emit, start, end, final, blocked); per partial: (task, start, end), in the
    implementation's order (sorted by (worker, window, key))."""
    m = len(due)
    inf = math.inf
    wm_delay = k.watermark_ms * sources / (sources + 1.0)
    nw = (max(window) + 1) if m else 0
    remote = k.capacity if k.capacity_remote < 0 or k.capacity <= 0 else k.capacity_remote
    is_local = [[True if local is None else bool(local[j][w]) for w in range(workers)] for j in range(sources)]
    cap = [[k.capacity if is_local[j][w] else remote for w in range(workers)] for j in range(sources)]
    chunk = k.chunk_records if k.chunk_records > 0 else m + 1
    slice_ms = k.slice_ms if k.slice_ms > 0 else inf
    parts = {}
    for i in range(m):
        parts.setdefault((worker[i], window[i]), set()).add(key[i])
    queue = {(j, w): deque() for j in range(sources) for w in range(workers)}  # ("record", i, there) or ("wm", b, there)
    waiting = {(j, w): 0 for j in range(sources) for w in range(workers)}
    passed_wm = {(j, w): 0 for j in range(sources) for w in range(workers)}
    emit, start, end, blocked = [None] * m, [None] * m, [None] * m, [0.0] * m
    nxt = list(range(sources))
    prev = [-inf] * sources
    last_window = [0] * sources
    stuck = [False] * sources
    fired = [0] * workers
    fire_end = {}
    busy_until = [0.0] * workers
    idle = [True] * workers
    turn = [0] * workers
    current = [None] * workers  # [source, records left, remote deadline]
    events = []
    made = [0]

    def event(t, kind, a, b=0):  # kind: 0 a worker, 1 a source's try, 2 a source's watermark
        made[0] += 1
        heapq.heappush(events, (t, kind, made[0], a, b))

    def there(j, w, t):
        return bool(queue[(j, w)]) and queue[(j, w)][0][2] <= t

    for j in range(sources):
        if j < m:
            event(due[j], 1, j)
        else:
            event(0.0, 2, j, nw)
    while events:
        t, kind, _, a, b = heapq.heappop(events)
        if kind == 0:
            w = a
            if t < busy_until[w] - 1e-12:
                continue
            busy_until[w] = t
            while True:
                pick = None
                if current[w] is not None:
                    j, room, deadline = current[w]
                    if there(j, w, t) and ((is_local[j][w] and room > 0) or
                                           (not is_local[j][w] and queue[(j, w)][0][2] <= deadline)):
                        pick = j
                if pick is None:
                    current[w] = None
                    order = [(turn[w] + step) % sources for step in range(sources)]
                    for j in order:
                        if there(j, w, t):
                            turn[w] = (j + 1) % sources
                            current[w] = [j, chunk, queue[(j, w)][0][2] + slice_ms]
                            pick = j
                            break
                if pick is None:
                    idle[w] = True
                    heads = [queue[(j, w)][0][2] for j in range(sources) if queue[(j, w)]]
                    if heads:
                        event(min(heads), 0, w)
                    break
                what, x, _ = queue[(pick, w)].popleft()
                if what == "record":
                    current[w][1] -= 1
                    start[x], end[x] = t, t + cost[x] + k.overhead_ms
                    waiting[(pick, w)] -= 1
                    if stuck[pick]:
                        event(t, 1, pick)
                    idle[w] = False
                    busy_until[w] = end[x]
                    event(end[x], 0, w)
                    break
                passed_wm[(pick, w)] = max(passed_wm[(pick, w)], x)
                low = min(passed_wm[(j, w)] for j in range(sources))
                if low > fired[w]:
                    f = t
                    for bb in range(fired[w], low):
                        f += len(parts.get((w, bb), ())) * k.fire_ms
                        fire_end[(w, bb)] = f
                    fired[w] = low
                    if f > t:
                        idle[w] = False
                        busy_until[w] = f
                        event(f, 0, w)
                        break
        elif kind == 1:
            j = a
            i = nxt[j]
            if i >= m or emit[i] is not None or t < due[i] or t < prev[j]:
                continue
            if any(cap[j][w] > 0 and waiting[(j, w)] >= cap[j][w] for w in range(workers)):
                stuck[j] = True
                continue
            stuck[j] = False
            w = worker[i]
            low = max(due[i], prev[j])
            emit[i] = t
            blocked[i] = t - low if t > low else 0.0
            prev[j] = t
            queue[(j, w)].append(("record", i, t + k.transport_ms))
            waiting[(j, w)] += 1
            if idle[w]:
                event(t + k.transport_ms, 0, w)
            if window[i] > last_window[j]:
                event(t + wm_delay, 2, j, window[i])
                last_window[j] = window[i]
            nxt[j] += sources
            if nxt[j] >= m:
                event(t, 2, j, nw)
            else:
                event(max(t, due[nxt[j]]), 1, j)
        else:
            j = a
            for w in range(workers):
                queue[(j, w)].append(("wm", b, t + k.transport_ms))
                if idle[w]:
                    event(t + k.transport_ms, 0, w)
    if merge_task is None or merge_parallelism <= 0:
        final = [fire_end[(worker[i], window[i])] for i in range(m)]
        return emit, start, end, final, blocked, []
    cells = sorted({(worker[i], window[i], key[i]) for i in range(m)})
    items = []  # (arrival, kind 0 partial / 1 fire, order, task, payload)
    for n, (w, b, kk) in enumerate(cells):
        items.append((fire_end[(w, b)] + k.merge_transport_ms, 0, n, merge_task[kk], n))
    for b in range(nw):
        wm = max(fire_end[(w, b)] for w in range(workers)) + k.merge_transport_ms
        for t in range(merge_parallelism):
            nkeys = len({kk for (w, bb, kk) in cells if bb == b and merge_task[kk] == t})
            items.append((wm, 1, b, t, nkeys))
    mfree = [0.0] * merge_parallelism
    pstart, pend = [None] * len(cells), [None] * len(cells)
    mfire = {}
    for task in range(merge_parallelism):
        mine = sorted((it for it in items if it[3] == task), key=lambda it: (it[0], it[1]))
        for a, kind, order, _, payload in mine:
            s0 = max(a, mfree[task])
            if kind == 0:
                mfree[task] = s0 + k.merge_ms
                pstart[payload], pend[payload] = s0, mfree[task]
            else:
                mfree[task] = s0 + payload * k.fire_ms
                mfire[(task, order)] = mfree[task]
    final = [mfire[(merge_task[key[i]], window[i])] for i in range(m)]
    merges = [(merge_task[kk], pstart[n], pend[n]) for n, (w, b, kk) in enumerate(cells)]
    return emit, start, end, final, blocked, merges
