"""The live job's model (``skewbench.live.model``) against its plain-Python reference
(``tests/reference/live_model_ref.py``), its invariants and its limiting cases; and the phase
metrics (``skewbench.live.measure``) against a reference written from their definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from skewbench.live import measure
from skewbench.live.model import Constants, predict, watermark_delay, windows_of
from skewbench.live.predict import fifo
from tests.reference import live_model_ref as ref
from tests.reference.live_ref import percentile

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def phases(draw, merge=None):
    m = draw(st.integers(1, 30))
    sources = draw(st.integers(1, 3))
    workers = draw(st.integers(1, 4))
    gaps = draw(st.lists(st.sampled_from([0.0, 0.0, 0.3, 1.0, 2.5]), min_size=m, max_size=m))
    due = np.cumsum(gaps) - gaps[0]
    cost = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0]), min_size=m, max_size=m)))
    worker = np.array(draw(st.lists(st.integers(0, workers - 1), min_size=m, max_size=m)), dtype=np.int32)
    key = np.array(draw(st.lists(st.integers(0, 4), min_size=m, max_size=m)), dtype=np.int64)
    window_ms = draw(st.sampled_from([1.0, 3.0, 50.0]))
    k = Constants(overhead_ms=draw(st.sampled_from([0.0, 0.1, 0.5])), transport_ms=draw(st.sampled_from([0.0, 0.2, 1.0])),
                  capacity=draw(st.sampled_from([0, 1, 2, 3, 5])), fire_ms=draw(st.sampled_from([0.0, 0.05, 0.3])),
                  merge_ms=draw(st.sampled_from([0.0, 0.1, 0.7])), merge_transport_ms=draw(st.sampled_from([0.0, 0.4])),
                  watermark_ms=draw(st.sampled_from([0.0, 1.0, 6.0])),
                  capacity_remote=draw(st.sampled_from([-1, 0, 1, 4])), chunk_records=draw(st.sampled_from([0, 1, 2, 5])),
                  slice_ms=draw(st.sampled_from([0.0, 0.5, 3.0])))
    local = (np.array(draw(st.lists(st.booleans(), min_size=sources * workers, max_size=sources * workers)))
             .reshape(sources, workers) if draw(st.booleans()) else None)
    use_merge = draw(st.booleans()) if merge is None else merge
    pm = draw(st.integers(1, 3)) if use_merge else 0
    mt = np.array(draw(st.lists(st.integers(0, pm - 1), min_size=5, max_size=5)), dtype=np.int64) if pm else None
    return dict(due=due, cost=cost, worker=worker, key=key, sources=sources, workers=workers, window_ms=window_ms, k=k,
                merge_task=mt, merge_parallelism=pm, local=local)


def run(ph, **change):
    p = {**ph, **change}
    return predict(p["due"], p["cost"], p["worker"], p["key"], sources=p["sources"], workers=p["workers"],
                   window_ms=p["window_ms"], k=p["k"], merge_task=p["merge_task"], merge_parallelism=p["merge_parallelism"],
                   local=p["local"])


def reference(ph):
    win = [int(math.floor(d / ph["window_ms"] + 1e-9)) for d in ph["due"]]
    mt = None if ph["merge_task"] is None else [int(x) for x in ph["merge_task"]]
    return ref.simulate(list(ph["due"]), list(ph["cost"]), [int(w) for w in ph["worker"]], [int(x) for x in ph["key"]],
                        win, ph["sources"], ph["workers"], ph["k"], mt, ph["merge_parallelism"],
                        None if ph["local"] is None else ph["local"].tolist())


@settings(max_examples=400, **SETTINGS)
@given(phases())
def test_the_model_equals_its_reference(ph):
    got = run(ph)
    emit, start, end, final, blocked, merges = reference(ph)
    np.testing.assert_allclose(got.emit, emit, atol=1e-9)
    np.testing.assert_allclose(got.start, start, atol=1e-9)
    np.testing.assert_allclose(got.end, end, atol=1e-9)
    np.testing.assert_allclose(got.blocked, blocked, atol=1e-9)
    np.testing.assert_allclose(got.final, final, atol=1e-9)
    assert len(got.merge_task) == len(merges)
    if merges:
        np.testing.assert_array_equal(got.merge_task, [t for t, _, _ in merges])
        np.testing.assert_allclose(got.merge_start, [s for _, s, _ in merges], atol=1e-9)
        np.testing.assert_allclose(got.merge_end, [e for _, _, e in merges], atol=1e-9)


@settings(max_examples=300, **SETTINGS)
@given(phases())
def test_unbounded_channels_are_capacity_zero_or_beyond_the_stream(ph):
    a = run(ph, k=Constants(**{**ph["k"].__dict__, "capacity": 0, "capacity_remote": 0}))
    b = run(ph, k=Constants(**{**ph["k"].__dict__, "capacity": len(ph["due"]), "capacity_remote": -1}))
    for x, y in ((a.emit, b.emit), (a.end, b.end), (a.final, b.final)):
        np.testing.assert_allclose(x, y)
    assert not a.blocked.any() and not b.blocked.any()
    np.testing.assert_allclose(a.emit, ph["due"])  # nothing holds a source up


@settings(max_examples=300, **SETTINGS)
@given(phases())
def test_bounded_channels_only_ever_delay(ph):
    """Every emission is at or after the one without limits (there: its due time), so a worker,
    serving whatever has arrived, ends its last tuple no sooner (one tuple can end sooner: a
    blocked source lets another's tuples ahead of its own; fires, which also take a worker's time,
    are left out: one can move past the last tuple)."""
    k = Constants(**{**ph["k"].__dict__, "fire_ms": 0.0})
    free = run(ph, k=Constants(**{**k.__dict__, "capacity": 0, "capacity_remote": 0}))
    got = run(ph, k=k)
    assert (got.blocked >= 0).all()
    assert (got.emit >= free.emit - 1e-9).all()
    for w in range(ph["workers"]):
        mine = ph["worker"] == w
        if mine.any():
            assert got.end[mine].max() >= free.end[mine].max() - 1e-9


@settings(max_examples=300, **SETTINGS)
@given(phases())
def test_sources_channels_workers_and_windows(ph):
    got = run(ph)
    m, s, k = len(ph["due"]), ph["sources"], ph["k"]
    assert (got.emit >= ph["due"] - 1e-9).all()
    for j in range(s):  # a source emits in order
        assert (np.diff(got.emit[j::s]) >= -1e-9).all()
    cap = k.capacities(s, ph["workers"], ph["local"])
    for i in range(m):  # a channel never holds more than its capacity
        j = i % s
        for w in range(ph["workers"]):
            if cap[j, w] > 0:
                same = [x for x in range(j, i, s) if ph["worker"][x] == w]
                waiting = sum(1 for x in same if got.start[x] > got.emit[i] + 1e-9)
                assert waiting < cap[j, w], (i, w, waiting)
    for w in range(ph["workers"]):  # a worker: one tuple at a time, none before it arrived
        mine = np.flatnonzero(ph["worker"] == w)
        order = mine[np.lexsort((got.end[mine], got.start[mine]))]
        assert (got.start[order][1:] >= got.end[order][:-1] - 1e-9).all()
        assert (got.start[mine] >= got.emit[mine] + k.transport_ms - 1e-9).all()
        for j in range(s):  # a channel is served in order
            ch = mine[mine % s == j]
            assert (np.diff(got.start[ch]) >= -1e-9).all()
    np.testing.assert_allclose(got.end - got.start, ph["cost"] + k.overhead_ms)
    assert (got.final >= got.end - 1e-9).all()  # a window closes after its tuples
    win = windows_of(ph["due"], ph["window_ms"])
    for i in range(m):  # tuples of one key and window share their final aggregate
        same = (ph["key"] == ph["key"][i]) & (win == win[i])
        if not ph["merge_parallelism"]:
            same &= ph["worker"] == ph["worker"][i]
        assert np.allclose(got.final[same], got.final[i])
    if ph["merge_parallelism"]:
        cells = {(int(ph["worker"][i]), int(win[i]), int(ph["key"][i])) for i in range(m)}
        assert len(got.merge_task) == len(cells)  # a partial per (worker, window, key)
        assert (got.merge_end - got.merge_start >= k.merge_ms - 1e-9).all()


@settings(max_examples=200, **SETTINGS)
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.5, 2.0]), st.sampled_from([0.5, 1.0, 3.0])), min_size=1, max_size=25),
       st.sampled_from([0.0, 0.3]), st.sampled_from([0.0, 0.2]))
def test_one_source_unbounded_is_the_fifo_recurrence(jobs, overhead, transport):
    """The limiting case: one source, one worker, no buffers' limit: the FIFO queue of the
    original live model (``predict.fifo``), arrivals ``transport`` after the due time (with one
    channel, turns are the channel's order)."""
    due = np.cumsum([g for g, _ in jobs])
    cost = np.array([c for _, c in jobs])
    k = Constants(overhead, transport, 0, 0.0, 0.0, 0.0, 0.0, 0, chunk_records=2, slice_ms=0.5)
    got = predict(due, cost, np.zeros(len(jobs), np.int32), np.zeros(len(jobs), np.int64), sources=1, workers=1,
                  window_ms=1e9, k=k)
    np.testing.assert_allclose(got.end, fifo(due + transport, cost + overhead))


def test_a_full_channel_blocks_its_source_for_every_worker():
    """Head-of-line blocking: one source, capacity 1, tuples for workers 0, 0, 1 all due at 0;
    worker 0's first tuple takes 10 ms: the second waits in the channel, so the third, bound for
    the idle worker 1, leaves only when worker 0 starts the second, at 10."""
    k = Constants(0.0, 0.0, 1, 0.0, 0.0, 0.0, 0.0)
    got = predict(np.zeros(3), np.array([10.0, 1.0, 1.0]), np.array([0, 0, 1], np.int32), np.zeros(3, np.int64),
                  sources=1, workers=2, window_ms=1e9, k=k)
    np.testing.assert_allclose(got.emit, [0.0, 0.0, 10.0])
    np.testing.assert_allclose(got.blocked, [0.0, 0.0, 10.0])
    np.testing.assert_allclose(got.end, [10.0, 11.0, 11.0])
    unbounded = predict(np.zeros(3), np.array([10.0, 1.0, 1.0]), np.array([0, 0, 1], np.int32), np.zeros(3, np.int64),
                        sources=1, workers=2, window_ms=1e9, k=Constants(0.0, 0.0, 0, 0.0, 0.0, 0.0, 0.0, 0))
    np.testing.assert_allclose(unbounded.end, [10.0, 11.0, 1.0])


def test_local_and_remote_channels_hold_what_their_capacity_says():
    """One source, worker 0 local (capacity 1), worker 1 remote (capacity 3); worker 0's first
    tuple takes 10 ms: with tuples for worker 0 the source blocks at its second, for worker 1
    at its fourth."""
    k = Constants(0.0, 0.0, 1, 0.0, 0.0, 0.0, 0.0, 3)
    local = np.array([[True, False]])
    for w, blocked_at in ((0, 2), (1, 4)):
        worker = np.full(6, w, np.int32)
        got = predict(np.zeros(6), np.array([10.0, 1, 1, 1, 1, 1]), worker, np.zeros(6, np.int64), sources=1, workers=2,
                      window_ms=1e9, k=k, local=local)
        assert (got.blocked[:blocked_at] == 0).all() and got.blocked[blocked_at] > 0, (w, got.blocked)


def test_a_worker_serves_its_channels_in_turns():
    """Two sources on one worker, everything due at 0, unit costs: a local chunk of 2 takes two
    records from a channel, then two from the other; a remote slice of 0.5 ms takes only what
    reached it together (here one tuple at a time, each source emitting one tuple per ms)."""
    k = Constants(0.0, 0.0, 0, 0.0, 0.0, 0.0, 0.0, 0, chunk_records=2)
    got = predict(np.zeros(8), np.ones(8), np.zeros(8, np.int32), np.zeros(8, np.int64), sources=2, workers=1,
                  window_ms=1e9, k=k)
    # source 0 holds tuples 0, 2, 4, 6 and source 1 tuples 1, 3, 5, 7
    np.testing.assert_allclose(got.start, [0, 2, 1, 3, 4, 6, 5, 7])
    spread = np.arange(8) // 2 * 1.0  # each source emits one tuple per ms
    k = Constants(0.0, 0.0, 0, 0.0, 0.0, 0.0, 0.0, 0, chunk_records=10, slice_ms=0.5)
    got = predict(spread, np.full(8, 0.25), np.zeros(8, np.int32), np.zeros(8, np.int64), sources=2, workers=1,
                  window_ms=1e9, k=k, local=np.array([[False], [False]]))
    np.testing.assert_allclose(got.start[:2], [0.0, 0.25])


def test_a_window_fires_when_the_last_source_passes_it():
    """Two sources, window 10 ms, watermark interval 3 ms (delay 2 ms for two sources): source 0
    passes the window's end at 10 (its tuple due at 10), source 1 at 20 (neither has ended: a source's
    last tuple would pass every window at once); the worker fires at
    20 + 2 + transport 1 = 23 and the key's final aggregate is out after one key's fire time."""
    k = Constants(0.0, 1.0, 0, 0.5, 0.0, 0.0, 3.0)
    assert watermark_delay(3.0, 2) == pytest.approx(2.0)
    due = np.array([0.0, 5.0, 10.0, 20.0, 30.0, 31.0])  # tuple i from source i % 2
    got = predict(due, np.ones(6), np.zeros(6, np.int32), np.array([7, 7, 8, 8, 9, 9]), sources=2, workers=1,
                  window_ms=10.0, k=k)
    assert got.final[0] == pytest.approx(23.5) and got.final[1] == pytest.approx(23.5)


# ---- the metrics -----------------------------------------------------------------------------


def metrics_ref(due, emit, start, end, final, worker, blocked, workers, t0, t1):
    n = len(due)
    inside = [i for i in range(n) if t0 <= due[i] <= t1]
    done = sum(1 for i in range(n) if t0 <= end[i] <= t1)
    out = {"throughput": done / ((t1 - t0) / 1000.0)}
    lat = [final[i] - due[i] for i in inside]
    out["latency_p99_ms"] = percentile(lat, 99) if lat else None
    busy = [0.0] * workers
    for i in range(n):
        busy[worker[i]] += max(0.0, min(end[i], t1) - max(start[i], t0))
    out["utilisation"] = [b / (t1 - t0) for b in busy]
    out["source_blocked_ms"] = sum(max(0.0, min(emit[i], t1) - max(emit[i] - blocked[i], t0)) for i in range(n))
    return out


@settings(max_examples=200, **SETTINGS)
@given(phases(), st.floats(0.0, 0.6))
def test_phase_metrics_equal_their_reference(ph, warm):
    got = run(ph)
    t1 = float(ph["due"].max()) if ph["due"].max() > 0 else 1.0
    t0 = warm * t1
    t = measure.Timings(ph["due"], got.emit, got.start, got.end, got.final, ph["worker"], np.arange(len(ph["due"])) %
                        ph["sources"], got.blocked, got.merge_start, got.merge_end, got.merge_task)
    m = measure.metrics(t, ph["workers"], ph["merge_parallelism"], (t0, t1))
    r = metrics_ref(*(list(x) for x in (ph["due"], got.emit, got.start, got.end, got.final)), list(ph["worker"]),
                    list(got.blocked), ph["workers"], t0, t1)
    assert m["throughput"] == pytest.approx(r["throughput"])
    if r["latency_p99_ms"] is None:
        assert m["latency_p99_ms"] is None
    else:
        assert m["latency_p99_ms"] == pytest.approx(r["latency_p99_ms"])
    np.testing.assert_allclose(m["utilisation"], r["utilisation"], atol=1e-9)
    assert m["source_blocked_ms"] == pytest.approx(r["source_blocked_ms"], abs=1e-9)
    assert m["subtask_records"] == np.bincount(ph["worker"], minlength=ph["workers"]).tolist()


@settings(max_examples=200, **SETTINGS)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from([0.0, 1.0, 2.0]), st.sampled_from([0.0, 0.5, 3.0])),
                min_size=1, max_size=30))
@example([(0, 0.0, 0.0), (0, 0.0, 5.0)])
def test_source_delays_are_what_held_each_emission_up(rows):
    """A recorded emission's delay: beyond its due time and its source's previous emission."""
    source = np.array([j for j, _, _ in rows])
    due = np.array([d for _, d, _ in rows])
    emit = due + np.array([x for _, _, x in rows])
    got = measure.source_delays(emit, due, source)
    for i in range(len(rows)):
        earlier = [emit[x] for x in range(len(rows)) if source[x] == source[i] and
                   (emit[x] < emit[i] or (emit[x] == emit[i] and x < i))]
        want = max(0.0, emit[i] - max([due[i], *earlier]))
        assert got[i] == pytest.approx(want)
