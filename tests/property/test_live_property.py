"""Live mode (``skewbench.live``) without an engine: the prediction, the metrics, the calibration
and the rank agreement equal the plain-Python reference (``tests/reference/live_ref.py``), their
invariants and limiting cases hold, and each strategy's decisions on a live run's stream are the
ones the simulator makes (``grouping_phase``: the replay's loads; ``shedding_phase``: the tuples
the operator simulation keeps, with their arrival times).

Float tolerances.  The reference recurs tuple by tuple; ``predict.fifo`` unrolls the recurrence
into a cumulative sum and a cumulative maximum, so the two round differently: each of the at most
``2 m + 2`` operations on a worker's ``m`` tuples errs by at most one rounding (``eps = 2^-52``
relative) of a magnitude at most ``T`` (the last arrival plus every service time), hence
:func:`fifo_tol`.  The metrics compute the same sums in the same order (``np.bincount`` adds its
weights tuple by tuple) except the percentiles (numpy's position ``(n - 1) (q / 100)`` and its
interpolation from the upper value past one half) and the queueing mean (numpy's pairwise sum
against ``math.fsum``): a few roundings of the largest latency, :data:`REL` of it.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from skewbench.live import compare, decisions, predict
from skewbench.live.config import LiveConfig
from skewbench.live.predict import Overheads
from tests.live_common import write_dataset
from tests.reference import live_ref as ref
from tests.reference import shedding_engine_ref

EPS = 2.0 ** -52
REL = 1e-12
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fifo_tol(arrival, service) -> float:
    """The bound on the difference between the unrolled and the recurring FIFO (module docstring)."""
    m = len(arrival)
    return (2 * m + 2) * EPS * (max(arrival, default=0.0) + math.fsum(service) + 1e-300)


def close(got, want, scale: float) -> bool:
    """``got`` equals ``want`` (numbers, None, or lists of them) to ``REL`` of ``scale``."""
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(close(g, w, scale) for g, w in zip(got, want))
    if want is None or got is None:
        return got is None and want is None
    return abs(got - want) <= REL * max(scale, abs(want), 1e-300)


# --------------------------------------------------------------------------------------------
# drawn phases

costs = st.floats(0.001, 50.0)
gaps = st.one_of(st.just(0.0), st.floats(0.0, 0.05))  # seconds between two tuples' due times


@st.composite
def phases(draw, max_m: int = 60, min_m: int = 0):
    """(worker, due_s, cost_ms, workers): due times non-decreasing from 0, some tuples due at once."""
    workers = draw(st.integers(1, 6))
    m = draw(st.integers(min_m, max_m))
    worker = draw(st.lists(st.integers(0, workers - 1), min_size=m, max_size=m))
    due = list(itertools.accumulate(draw(st.lists(gaps, min_size=m, max_size=m)))) if m else []
    due = [d - due[0] for d in due] if m else []
    cost = draw(st.lists(costs, min_size=m, max_size=m))
    return worker, due, cost, workers


overheads = st.builds(Overheads, st.floats(0.0, 5.0), st.floats(0.0, 10.0))


def arrays(worker, due, cost):
    return np.asarray(worker, dtype=np.int32), np.asarray(due, dtype=np.float64), np.asarray(cost, dtype=np.float64)


def predicted(worker, due, cost, workers, o):
    w, d, c = arrays(worker, due, cost)
    return predict.predict(w, d, c, workers, o)


# --------------------------------------------------------------------------------------------
# implementation == reference

@settings(max_examples=300, **SETTINGS)
@given(st.lists(st.tuples(st.floats(0.0, 10.0), st.floats(0.0, 5.0)), max_size=80), st.booleans())
def test_fifo_is_the_recurrence(jobs, sort):
    """``fifo`` = ``end_k = max(end_{k-1}, a_k) + s_k`` (arrivals in order, or in any order: the
    recurrence serves in the given order either way)."""
    a = [x for x, _ in jobs]
    a = sorted(a) if sort else a
    s = [y for _, y in jobs]
    got = predict.fifo(np.asarray(a), np.asarray(s)).tolist()
    want = ref.fifo(a, s)
    tol = fifo_tol(a, s)
    assert len(got) == len(want)
    assert all(abs(g - w) <= tol for g, w in zip(got, want)), (got, want, tol)


@settings(max_examples=200, **SETTINGS)
@given(phases(), overheads)
def test_predict_is_a_fifo_per_worker(ph, o):
    worker, due, cost, workers = ph
    start, end = predicted(worker, due, cost, workers, o)
    rs, re_ = ref.predict(worker, due, cost, workers, o.overhead_ms, o.transport_ms)
    s = [(c + o.overhead_ms) / 1000.0 for c in cost]
    tol = fifo_tol([d + o.transport_ms / 1000.0 for d in due], s)
    assert np.allclose(end, re_, rtol=0, atol=tol) and np.allclose(start, rs, rtol=0, atol=2 * tol)


@settings(max_examples=200, **SETTINGS)
@given(phases(), overheads, st.floats(0.0, 0.3))
def test_timing_metrics_equal_the_reference(ph, o, jitter):
    """On predicted timings, and on timings where each tuple started later than its predecessor
    ended (the measured kind: gaps between tuples), the metrics equal the reference's."""
    worker, due, cost, workers = ph
    start, end = predicted(worker, due, cost, workers, o)
    shift = np.cumsum(np.full(len(worker), jitter / 1000.0))  # a growing delay, as an engine adds
    for s, e in ((start, end), (start + shift, end + shift)):
        w, d, _ = arrays(worker, due, cost)
        got = predict.timing_metrics(w, d, s, e, workers)
        want = ref.metrics(worker, due, s.tolist(), e.tolist(), workers)
        scale = max([abs(x) for x in (e - d).tolist()] + [1.0]) * 1000.0
        assert set(got) == set(want)
        for k in want:
            assert close(got[k], want[k], scale), (k, got[k], want[k])


@settings(max_examples=200, **SETTINGS)
@given(phases(), st.lists(st.floats(-0.002, 0.01), min_size=60, max_size=60), st.floats(0.0, 0.02))
def test_calibrate_equals_the_reference(ph, noise, wait):
    """Any timings (starts perturbed both ways, so gaps below the cost and negative waits occur:
    the clamping at 0 is exercised)."""
    worker, due, cost, workers = ph
    w, d, c = arrays(worker, due, cost)
    start, end = predict.predict(w, d, c, workers, Overheads(0.05, 0.0))
    start = start + np.asarray(noise[:len(worker)]) + wait
    end = end + np.asarray(noise[:len(worker)]) + wait
    got = predict.calibrate(w, d, start, end, c, workers)
    o, t = ref.calibrate(worker, due, start.tolist(), end.tolist(), cost, workers)
    scale = 1000.0 * (max(end.tolist(), default=0.0) + 1.0)
    assert close(got.overhead_ms, o, scale) and close(got.transport_ms, t, scale), (got, o, t)


values = st.one_of(st.none(), st.integers(-3, 3), st.floats(-2.0, 2.0))


@settings(max_examples=500, **SETTINGS)
@given(st.lists(st.tuples(values, values), max_size=12))
@example([(1, 1), (2, 2), (3, 3)])
@example([(1, 3), (2, 2), (3, 1)])
@example([(1, 1), (1, 2), (2, 2), (3, 1)])
@example([(5, 1), (5, 1)])
def test_kendall_tau_is_tau_b(pairs):
    x = [a for a, _ in pairs]
    y = [b for _, b in pairs]
    got, want = compare.kendall_tau(x, y), ref.kendall_tau_b(x, y)
    assert (got is None) == (want is None), (got, want)
    # (n0 - n1)(n0 - n2) is the implementation's (c + d + ties in x only)(c + d + ties in y only)
    # with the factors swapped: the same integer, so the same float
    assert got == want


# --------------------------------------------------------------------------------------------
# invariants

@settings(max_examples=200, **SETTINGS)
@given(phases(), overheads)
def test_fifo_invariants(ph, o):
    """Per worker: ends non-decreasing; every tuple ends no earlier than it arrives plus its
    service; no two of a worker's tuples are served at once; busy time fits in the span, so the
    throughput is at most the tuples over the busiest worker's time."""
    worker, due, cost, workers = ph
    start, end = predicted(worker, due, cost, workers, o)
    service = [(c + o.overhead_ms) / 1000.0 for c in cost]
    arrival = [d + o.transport_ms / 1000.0 for d in due]
    tol = fifo_tol(arrival, service)
    for w in range(workers):
        idx = [i for i in range(len(worker)) if worker[i] == w]
        ends = [end[i] for i in idx]
        assert ends == sorted(ends)
        for i in idx:
            assert end[i] >= arrival[i] + service[i] - tol
        for i, j in zip(idx, idx[1:]):
            assert start[j] >= end[i] - tol
    m = predict.timing_metrics(*arrays(worker, due, cost)[:2], start, end, workers)
    if worker:
        assert m["throughput"] == pytest.approx(len(worker) / m["span_s"], rel=1e-15)
        assert m["throughput"] * max(m["busy_s"]) <= len(worker) * (1 + 1e-9)
        assert all(i >= 0 for i in m["idle_s"])


@settings(max_examples=200, **SETTINGS)
@given(phases(), overheads, st.floats(0.0, 5.0), st.floats(0.0, 10.0))
def test_more_overhead_never_lowers_a_latency(ph, o, more, later):
    worker, due, cost, workers = ph
    _, e1 = predicted(worker, due, cost, workers, o)
    _, e2 = predicted(worker, due, cost, workers, Overheads(o.overhead_ms + more, o.transport_ms + later))
    tol = fifo_tol([d + (o.transport_ms + later) / 1000.0 for d in due],
                   [(c + o.overhead_ms + more) / 1000.0 for c in cost])
    assert np.all(e2 >= e1 - 2 * tol)


finite = st.floats(-1e6, 1e6)


@settings(max_examples=300, **SETTINGS)
@given(st.lists(st.tuples(finite, finite), min_size=2, max_size=12))
def test_kendall_tau_bounds_and_symmetries(pairs):
    x = [a for a, _ in pairs]
    y = [b for _, b in pairs]
    t = compare.kendall_tau(x, y)
    assert t is None or -1.0 - 1e-12 <= t <= 1.0 + 1e-12
    assert compare.kendall_tau(y, x) == t
    assume(len(set(x)) > 1)
    assert compare.kendall_tau(x, x) == pytest.approx(1.0, abs=1e-12)
    assert compare.kendall_tau(x, [-v for v in x]) == pytest.approx(-1.0, abs=1e-12)


# --------------------------------------------------------------------------------------------
# limiting cases

def test_one_tuple():
    o = Overheads(0.25, 3.0)
    start, end = predicted([2], [0.5], [4.0], 3, o)
    assert end[0] == pytest.approx(0.5 + 0.003 + 0.00425, abs=1e-15)
    assert start[0] == pytest.approx(0.503, abs=1e-15)
    m = predict.timing_metrics(np.array([2]), np.array([0.5]), start, end, 3)
    assert m["subtask_records"] == [0, 0, 1] and m["tuples"] == 1
    assert m["latency_p50_ms"] == m["latency_p99_ms"] == pytest.approx(7.25, abs=1e-9)
    assert m["throughput"] == pytest.approx(1 / 0.00725, rel=1e-9)
    assert m["idle_s"][:2] == [m["span_s"]] * 2 and m["subtask_latency_mean_ms"][:2] == [None, None]


def test_one_worker_all_due_at_once():
    """One worker, everything due at 0: served back to back, the span is the transport delay plus
    the sum of the services, the i-th tuple's latency the transport plus its prefix sum."""
    cost = [1.0, 2.0, 0.5, 4.0]
    o = Overheads(0.5, 2.0)
    start, end = predicted([0] * 4, [0.0] * 4, cost, 1, o)
    prefix = list(itertools.accumulate(c + 0.5 for c in cost))
    assert np.allclose(end * 1000.0, [2.0 + p for p in prefix], rtol=0, atol=1e-9)
    m = predict.timing_metrics(np.zeros(4, np.int32), np.zeros(4), start, end, 1)
    assert m["span_s"] == pytest.approx((2.0 + prefix[-1]) / 1000.0, rel=1e-12)
    assert m["busy_s"] == [pytest.approx(prefix[-1] / 1000.0, rel=1e-12)] and m["idle_s"] == [pytest.approx(0.002)]
    assert m["queueing_mean_ms"] == pytest.approx(2.0 + (0 + 1.5 + 4.0 + 5.0) / 4, rel=1e-12)


def test_all_due_at_once_span_is_the_busiest_worker():
    worker = [0, 1, 1, 2, 1, 0]
    cost = [3.0, 1.0, 1.0, 2.0, 1.0, 1.0]
    start, end = predicted(worker, [0.0] * 6, cost, 4, Overheads(0.0, 1.0))
    m = predict.timing_metrics(np.array(worker), np.zeros(6), start, end, 4)
    assert m["span_s"] == pytest.approx(0.001 + 0.004, rel=1e-12)  # worker 0: 3 + 1 ms; worker 1: 3 ms
    assert m["busy_s"] == pytest.approx([0.004, 0.003, 0.002, 0.0], rel=1e-12)
    assert m["idle_s"][3] == m["span_s"] and m["subtask_latency_mean_ms"][3] is None
    assert m["latency_mean_max_ms"] == pytest.approx((4.0 + 5.0) / 2, rel=1e-12)


def test_empty_phase():
    empty = np.zeros(0)
    start, end = predict.predict(np.zeros(0, np.int32), empty, empty, 3, Overheads(1.0, 1.0))
    assert start.size == end.size == 0
    m = predict.timing_metrics(np.zeros(0, np.int32), empty, empty, empty, 3)
    assert m == ref.metrics([], [], [], [], 3)
    assert m["throughput"] is None and m["subtask_records"] == [0, 0, 0] and m["busy_s"] == [0.0] * 3
    assert predict.calibrate(np.zeros(0, np.int32), empty, empty, empty, empty, 3) == Overheads(0.0, 0.0)
    assert predict.fifo(empty, empty).size == 0
    assert compare.kendall_tau([], []) is None and compare.kendall_tau([1.0], [2.0]) is None
    assert compare.kendall_tau([1.0, 2.0, None], [None, 1.0, 2.0]) is None  # one complete pair


def test_calibration_with_one_tuple_per_worker_has_no_gap():
    """No worker ran two tuples: no gap to measure, the overhead is 0; the transport delay is the
    median first wait (here 1, 3 and 5 ms)."""
    w = np.array([0, 1, 2], np.int32)
    start = np.array([0.001, 0.003, 0.005])
    got = predict.calibrate(w, np.zeros(3), start, start + 0.001, np.ones(3), 3)
    assert got.overhead_ms == 0.0 and got.transport_ms == pytest.approx(3.0, abs=1e-9)


def test_kendall_tau_constant_side_is_undefined():
    assert compare.kendall_tau([1, 1, 1], [1, 2, 3]) is None
    assert compare.kendall_tau([1, 2, 3], [7, 7, 7]) is None


# --------------------------------------------------------------------------------------------
# decisions: a live run executes exactly the simulator's decisions

#: grouping strategies whose decisions see neither time nor cost, and those that do, with the
#: parameters under which the times change them (OSG past its first window of 1,024 tuples, FK by
#: earliest free-at time); a replay's arrival times are the dataset's, so for the two to see the
#: same stream the live run's rate is the dataset's and its cost the dataset's
BLIND = ("kg", "pkg", "sg", "dc", "wc", "rr", "chwbl", "dkg", "cm", "am", "cam", "local-global", "salt",
         "fixed-d", "kafka", "flink", "spark-hash", "spark-sql")
TIMED = (("osg", {}), ("osg", {"window": 32}), ("fk", {}), ("fk", {"semantics": "wl"}))
DATASET_RATE = 1000.0  # write_dataset's arrival times: i / 1000 s


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    counter = itertools.count()
    root = tmp_path_factory.mktemp("live-decisions")
    return lambda: root / f"d{next(counter)}"


@st.composite
def streams(draw, min_m: int = 1):
    """(keys, costs, names or None, prefix): a Zipf-like stream over up to 40 keys, with numeric
    key names (a trace of ids: engines hash the values) half the time; a prefix of at least
    ``min_m`` tuples."""
    n = draw(st.integers(1, 40))
    m = draw(st.integers(min_m, 250))
    weights = [1.0 / (k + 1) ** 1.2 for k in range(n)]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    keys = rng.choice(n, size=m, p=np.asarray(weights) / sum(weights)).tolist()
    cost = rng.choice([0.5, 1.0, 2.0, 6.4], size=n)[keys].tolist()
    names = None
    if draw(st.booleans()):  # distinct int64 ids, their canonical decimal texts
        names = [str(v) for v in dict.fromkeys(rng.integers(-2**63, 2**63 - 1, size=n, endpoint=True).tolist())]
        assume(len(names) == n)
    prefix = draw(st.integers(min_m, m))
    return keys, cost, names, prefix


@settings(max_examples=40, **SETTINGS)
@given(streams(), st.sampled_from(BLIND), st.integers(1, 9), st.integers(1, 4), st.integers(0, 3))
def test_grouping_phase_is_the_replays_routing(scratch, stream, strategy, workers, sources, seed):
    """The records a live run assigns each worker equal the replay's loads on the same prefix
    (``skewbench.grouping.engine.replay``, balance metrics), and the phase carries the stream:
    the value an engine hashes (the key's name for a trace of ids), the cost, the due time."""
    check_grouping_phase(scratch, stream, strategy, workers, sources, seed)


@settings(max_examples=20, **SETTINGS)
@given(streams(min_m=150), st.sampled_from(TIMED), st.integers(2, 9), st.integers(0, 3))
def test_timed_grouping_phase_sees_the_streams_times_and_costs(scratch, stream, timed, workers, seed):
    """OSG and FK decide by costs and arrival times: at the dataset's rate, with its costs, the
    live run's decisions are the replay's (OSG past its first window, FK by earliest free-at
    time too: the variants whose decisions the times change)."""
    strategy, params = timed
    check_grouping_phase(scratch, stream, strategy, workers, 1, seed, params)


def check_grouping_phase(scratch, stream, strategy, workers, sources, seed, params=None):
    from skewbench import registry
    from skewbench.grouping.engine import ReplayConfig, cell, replay

    keys, cost, names, prefix = stream
    n_keys = len(names) if names is not None else max(keys) + 1  # the prefix's dataset over the same keys
    full = write_dataset(scratch(), keys, cost=cost, names=names, n_keys=n_keys)
    head = write_dataset(scratch(), keys[:prefix], cost=cost[:prefix], names=names, n_keys=n_keys)
    timed = params is not None
    cfg = LiveConfig(dataset="d", workers=workers, tuples=prefix, sources=sources, seed=seed,
                     rate=DATASET_RATE if timed else 0.0, cost="dataset", grouping=(strategy,),
                     params={strategy: params or {}})
    phase = decisions.grouping_phase(decisions.read_stream(str(full), cfg), strategy, cfg)
    single = registry.get("grouping", strategy).single_source
    c = cell(strategy, workers, 1 if single else sources, seed, tuple(sorted((params or {}).items())))
    summary = replay(head, [c], ReplayConfig(latency=False)).summary
    assert phase.loads.tolist() == summary[0]["worker_tuples"]
    assert phase.offered == phase.executed == prefix and phase.routing == "routed"
    hashed = [int(names[k]) for k in keys[:prefix]] if names is not None else keys[:prefix]
    assert phase.key.tolist() == hashed
    assert phase.cost_ms.tolist() == cost[:prefix]
    assert np.allclose(phase.due_s, np.arange(prefix) / DATASET_RATE if timed else 0.0, rtol=0, atol=1e-12)


@settings(max_examples=40, **SETTINGS)
@given(streams(), st.sampled_from(("las", "bl", "sm", "fk", "ns")), st.floats(20.0, 200.0),
       st.floats(0.5, 20.0), st.integers(0, 3))
def test_shedding_phase_keeps_what_the_simulator_keeps(scratch, stream, strategy, provisioning, bound, seed):
    """Exactly the tuples ``simulate_operator(..., opt_window=0)`` does not drop, in order, on
    worker 0, each due when it arrives (the reference's arrival times: the tuples evenly spaced
    at the mean cost times the provisioning); its row's drops are the offered less the executed."""
    from skewbench.shedding.engine import operator_data, simulate_operator

    keys, cost, names, prefix = stream
    path = write_dataset(scratch(), keys, cost=cost, names=names)
    cfg = LiveConfig(dataset="d", workers=3, tuples=prefix, seed=seed, cost="dataset", grouping=(),
                     shedding=(strategy,), provisioning=provisioning, bound_ms=bound)
    phase, row = decisions.shedding_phase(decisions.read_stream(str(path), cfg), strategy, cfg)
    _, _, trace = simulate_operator(strategy, {}, operator_data(np.asarray(keys[:prefix]), np.asarray(cost[:prefix])),
                                    provisioning, bound, seed, opt_window=0)
    kept = [i for i in range(prefix) if not trace.dropped[i]]
    arrival_ms, _ = shedding_engine_ref.arrivals(list(range(prefix)), cost[:prefix], provisioning)
    hashed = [int(names[k]) for k in keys] if names is not None else keys
    assert phase.key.tolist() == [hashed[i] for i in kept]
    assert phase.cost_ms.tolist() == [cost[i] for i in kept]
    assert np.allclose(phase.due_s, [arrival_ms[i] / 1000.0 for i in kept], rtol=1e-12, atol=0)
    assert phase.worker.tolist() == [0] * len(kept) and phase.loads[1:].sum() == 0
    assert phase.offered == prefix and row["dropped"] == prefix - phase.executed
