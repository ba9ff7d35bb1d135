"""skewbench.grouping.capacity: capacity, demand, the skew ceiling and Flink's autoscaler rule,
against plain-Python references and examples worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skewbench.errors import SkewbenchError
from skewbench.grouping import capacity as cp

# ---- plain-Python references (tests only) -----------------------------------------------------


def ref_busy(worker, cost, n):
    busy = [0.0] * n
    for w, c in zip(worker, cost):
        busy[w] += c
    return busy


def ref_capacity(busy, m):
    """The largest rate R at which R * b / m <= 1000 ms a second for every worker's b."""
    top = max(busy)
    return math.inf if top == 0 else 1000.0 * m / top


def ref_ceiling(ns, caps, growth=0.05):
    """Try every grid point from the first: the first from which every later step grows less."""
    for i in range(len(ns)):
        if i == len(ns) - 1:
            return None
        if all(caps[j + 1] < caps[j] * (1 + growth) ** math.log2(ns[j + 1] / ns[j]) for j in range(i, len(ns) - 1)):
            return ns[i], caps[i]
    return None


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.floats(0.0, 50.0, allow_subnormal=False)), min_size=1, max_size=60))))
def test_busy_and_capacity_equal_the_reference(case):
    n, tuples = case
    worker = np.array([w for w, _ in tuples])
    cost = np.array([c for _, c in tuples])
    busy = cp.worker_busy_ms(worker, cost, n)
    assert busy == pytest.approx(ref_busy(worker, cost, n))
    cap = cp.capacity(busy, len(tuples))
    assert cap == pytest.approx(ref_capacity(ref_busy(worker, cost, n), len(tuples)))
    if math.isfinite(cap):  # at the capacity the busiest worker is busy exactly the whole second
        assert max(cap * b / len(tuples) for b in busy) == pytest.approx(1000.0)
    # the even spread of the same work is never below the routing's own capacity
    assert cp.balanced_capacity(busy, len(tuples)) >= cap * (1 - 1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(1.0, 1e6), min_size=1, max_size=11), st.floats(1.0, 1e6))
def test_demand_and_ceiling_equal_the_reference(caps, rate):
    ns = [2 ** i for i in range(len(caps))]
    want = next((n for n, c in zip(ns, caps) if c >= rate), None)
    assert cp.demand(ns, caps, rate) == want
    got = cp.skew_ceiling(ns, caps)
    ref = ref_ceiling(ns, caps)
    assert got == (None if ref is None else (ref[0], pytest.approx(ref[1])))


def test_key_grouping_stops_at_the_hottest_keys_share():
    """Limiting case (issue 42): the hottest key, 30% of the tuples at 1 ms each, on one worker of
    any n: capacity 1000 / 0.3 = 3,333 tuples/s at most, reached once the other keys' share per
    worker falls below it; the ceiling is where capacity stops growing 5% per doubling."""
    m, h = 10_000, 0.3
    ns = [1, 2, 4, 8, 16, 32, 64]

    def hot_on_one(n):  # worker 0: the hot key and its share of the rest; the rest spread evenly
        rest = m * (1 - h) / n
        return np.array([m * h + rest] + [rest] * (n - 1))

    caps = [cp.capacity(hot_on_one(n), m) for n in ns]
    assert caps == pytest.approx([1000 / (h + (1 - h) / n) for n in ns])
    assert cp.key_limit(np.r_[np.zeros(3000, int), np.arange(1, 7001)], 1.0) == (0, pytest.approx(1000 / h))
    # capacity per doubling: 1000, 1538, 2105, 2581, 2909, 3107, 3216 tuples/s: the growth falls
    # under 5% from 32 to 64 (3.5%); from 16 to 32 it is 6.8%
    assert cp.skew_ceiling(ns, caps) == (32, pytest.approx(1000 / (0.3 + 0.7 / 32)))
    assert cp.demand(ns, caps, 2500.0) == 8 and cp.demand(ns, caps, 3400.0) is None


# ---- Flink's autoscaler: examples worked by hand ----------------------------------------------
# Defaults: utilisation target 0.7, boundary 0.3, restart 300 s caught up over 1800 s, so for a
# target rate of 1,000 tuples/s: no change while 1,000 <= TPR <= round(1000 / 0.4 + 1000 / 6) =
# 2,667; else the factor is round(1000 / 0.7 + 1000 / 6) = 1,595 over TPR.


def test_the_thresholds_and_the_target_capacity():
    a = cp.Autoscaler()
    assert a.target_capacity(1000.0, 1.0, False) == 1000.0
    assert a.target_capacity(1000.0, 0.4, True) == 2667.0
    assert a.target_capacity(1000.0, 0.7, True) == 1595.0
    assert a.target_capacity(1000.0, 0.0, True) == math.inf


def test_max_keeps_a_skewed_vertex_that_avg_scales_down():
    """4 workers busy 400, 200, 200, 200 ms for 1,000 tuples at 1,000 tuples/s. By the maximum
    TPR = 1e6 / 400 = 2,500: within [1,000, 2,667], no change. By the average TPR = 1e6 / 250 =
    4,000: over 2,667, factor 1,595 / 4,000 = 0.399, bounded to 1 - 0.6 = 0.4, ceil(1.6) = 2, which
    divides 128 key groups: 2 workers."""
    busy = np.array([400.0, 200.0, 200.0, 200.0])
    a_max, a_avg = cp.Autoscaler(), cp.Autoscaler(busy="avg")
    assert a_max.processing_rate(busy, 1000) == 2500.0 and a_avg.processing_rate(busy, 1000) == 4000.0
    assert a_max.step(4, 1000.0, 2500.0) == 4
    assert a_avg.step(4, 1000.0, 4000.0) == 2


@pytest.mark.parametrize(("alignment", "want"), [("balanced", 13), ("evenly-spread", 16), ("off", 12)])
def test_alignment_to_the_key_groups(alignment, want):
    """7 workers at TPR 999 for 1,000 tuples/s: factor 1,595 / 999 = 1.5966, ceil(11.18) = 12.
    128 key groups: 12 gives each subtask at most 10 of them (128 // 12); balanced takes the first
    from 12 up that divides 128 or gives fewer (13: 9), evenly-spread the first divisor (16), off 12."""
    assert cp.Autoscaler(alignment=alignment).step(7, 1000.0, 999.0) == want


def test_bounds_and_no_work():
    a = cp.Autoscaler(max_parallelism=10)
    assert a.step(8, 1000.0, 10.0) == 10  # factor 159.5 capped by the vertex's maximum
    assert cp.Autoscaler(max_parallelism=300).step(100, 1000.0, 10.0) == 128  # and by the key groups
    assert a.step(8, 1000.0, 0.0) == 10  # no busy time at all: as far up as it may
    assert a.processing_rate(np.zeros(3), 100) == math.inf


def test_replay_avg_settles_below_the_demand_and_max_on_it():
    """The hot key of 30% (test_key_grouping_stops_at_the_hottest_keys_share) at 2,500 tuples/s:
    capacity 1000 / (0.3 + 0.7 / p) reaches it at p = 7 (the demand). By the maximum from 2
    workers: TPR 1,538 < 2,500, factor round(2500 / 0.7 + 2500 / 6) = 3,988 over it = 2.592,
    ceil(5.18) = 6, aligned to 7 (128 // 7 = 18 < 21); at 7 TPR = 2,500, in the band: settled at 7.
    By the average: TPR = 1,000 p: from 2 (2,000), factor 1.994, ceil(3.99) = 4, a divisor; at 4
    TPR 4,000 is in [2,500, 6,667]: settled at 4, where the capacity is 2,105 < 2,500."""
    m, hot, others = 10_000, 3000.0, 7000.0  # ms at 1 ms a tuple

    def busy_of(p):
        return np.array([hot + others / p] + [others / p] * (p - 1))

    got_max = cp.Autoscaler().replay(2, 2500.0, busy_of, m)
    got_avg = cp.Autoscaler(busy="avg").replay(2, 2500.0, busy_of, m)
    assert got_max == {"path": [2, 7, 7], "settled": 7, "cycle": None}
    assert got_avg == {"path": [2, 4, 4], "settled": 4, "cycle": None}
    assert cp.capacity(busy_of(4), m) == pytest.approx(1000 / 0.475) and 1000 / 0.475 < 2500


def test_replay_names_a_cycle():
    """A routing whose rate flips with the parallelism's parity (odd p: 3,000 tuples/s, even: 900),
    no alignment, at 1,000 tuples/s: from 4, TPR 900 < 1,000, factor 1,595 / 900 = 1.772, ceil(7.09)
    = 8; at 8 ceil(14.18) = 15; at 15 TPR 3,000 > 2,667, factor 0.532, ceil(7.98) = 8 again: the run
    never settles and names the cycle it entered."""
    a = cp.Autoscaler(alignment="off", max_parallelism=64, key_groups=64)
    flip = {True: 3000.0, False: 900.0}

    def busy_of(p):  # one worker's busy time sets the rate: 1000 * m / busy
        return np.array([1000.0 * 100 / flip[p % 2 == 1]] + [0.0] * (p - 1))

    out = a.replay(4, 1000.0, busy_of, 100)
    assert out["path"][:4] == [4, 8, 15, 8] and out["settled"] is None and out["cycle"] == [8, 15]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"busy": "median"}, r"^busy aggregator must be max or avg, not 'median'$"),
    ({"alignment": "snap"}, r"^alignment must be balanced, evenly-spread or off, not 'snap'$"),
    ({"utilization_target": 0.0}, r"^the utilisation target must be in \(0, 1\] and its boundary not negative$"),
    ({"min_parallelism": 5, "max_parallelism": 4}, r"^parallelism bounds must satisfy 1 <= min <= max, key groups >= 1$"),
])
def test_bad_settings_are_one_clear_error(kwargs, message):
    with pytest.raises(SkewbenchError, match=message):
        cp.Autoscaler(**kwargs)


def test_bad_grids_and_routings_are_one_clear_error():
    with pytest.raises(SkewbenchError, match=r"^worker counts must be positive and increasing: \[2, 1\]$"):
        cp.demand([2, 1], [1.0, 2.0], 1.0)
    with pytest.raises(SkewbenchError, match=r"^2 worker counts for 1 capacities$"):
        cp.skew_ceiling([1, 2], [1.0])
    with pytest.raises(SkewbenchError, match=r"^a worker id outside 0\.\.1$"):
        cp.worker_busy_ms(np.array([0, 2]), 1.0, 2)
    with pytest.raises(SkewbenchError, match=r"^3 costs for 2 tuples$"):
        cp.worker_busy_ms(np.array([0, 1]), np.ones(3), 2)
    with pytest.raises(SkewbenchError, match=r"^no tuples: no key limits the rate$"):
        cp.key_limit(np.array([], int), 1.0)
