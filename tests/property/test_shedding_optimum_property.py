"""The offline shedding optimum (skewbench.shedding.optimum) against a brute force over every
keep-subset (tests/reference/shedding_optimum_ref.py), and against the shedders the engine runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skewbench.errors import SkewbenchError
from skewbench.shedding import engine, optimum
from tests.reference import shedding_optimum_ref as ref

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def streams(draw, max_n=9, min_cost=0):
    """Integer arrival gaps and costs, tau = k + 0.37: a prefix sum of integer latencies is never
    within 0.04 of tau * j for j <= 12, so no float tie decides the answer."""
    n = draw(st.integers(1, max_n))
    gaps = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    costs = draw(st.lists(st.integers(min_cost, 6), min_size=n, max_size=n))
    tau = draw(st.integers(0, 5)) + 0.37
    return np.cumsum(gaps).astype(np.float64), np.array(costs, dtype=np.float64), tau


@settings(max_examples=80, **SETTINGS)
@given(streams(max_n=10))
def test_max_goal_programme_equals_brute_force(s):
    a, w, tau = s
    got = optimum.min_drops(a, w, tau, "max")
    assert got.status == "optimal" and got.gap == 0.0
    assert got.dropped == ref.min_drops(list(a), list(w), tau, "max")
    assert optimum.feasible(a, w, got.kept, tau, "max") and int((~got.kept).sum()) == got.dropped


@settings(max_examples=80, **SETTINGS)
@given(streams(max_n=10))
def test_avg_goal_programme_equals_brute_force(s):
    a, w, tau = s
    got = optimum.min_drops(a, w, tau, "avg")
    assert got.status == "optimal"
    assert got.dropped == ref.min_drops(list(a), list(w), tau, "avg")


@settings(max_examples=15, **SETTINGS)
@given(streams(max_n=8))
def test_avg_goal_milp_equals_brute_force(s):
    a, w, tau = s
    got = optimum.min_drops_avg(a, w, tau, method="milp")
    assert got.status == "optimal" and got.gap == 0.0
    assert got.dropped == ref.min_drops(list(a), list(w), tau, "avg")
    assert optimum.feasible(a, w, got.kept, tau, "avg")


@pytest.mark.slow  # about 20 s of HiGHS on the shared machine
def test_a_node_limited_milp_reports_a_lower_bound_and_the_incumbent():
    # 120 tuples the dominance programme solves in a blink; the MILP gets one node
    rng = np.random.default_rng(4)
    w = rng.choice(np.linspace(0.1, 6.4, 64), 120)
    a = np.arange(120) * w.mean() * 0.75
    exact = optimum.min_drops_avg(a, w, 6.4, method="dp")
    cut = optimum.min_drops_avg(a, w, 6.4, method="milp", node_limit=1)
    assert exact.status == "optimal" and exact.method == "pareto-dp"
    assert cut.status == "node_limit" and cut.gap > 0  # the node budget stopped it, and the status says so
    assert cut.dropped <= exact.dropped <= cut.upper  # the bound below, the incumbent above
    assert optimum.feasible(a, w, cut.kept, 6.4, "avg") and int((~cut.kept).sum()) == cut.upper


def test_a_state_cap_hands_over_to_the_milp_or_says_too_large():
    rng = np.random.default_rng(4)
    w = rng.choice(np.linspace(0.1, 6.4, 64), 60)
    a = np.arange(60) * w.mean() * 0.75
    exact = optimum.min_drops_avg(a, w, 6.4)
    assert optimum.min_drops_avg(a, w, 6.4, method="dp", max_states=3).status == "too_large"
    milp = optimum.min_drops_avg(a, w, 6.4, max_states=3)
    assert milp.method == "highs-milp" and milp.dropped == exact.dropped


@settings(max_examples=25, **SETTINGS)
@given(streams(max_n=10, min_cost=1), st.sampled_from(["avg", "max"]), st.integers(0, 3))
def test_no_shedder_that_meets_the_bound_drops_fewer(s, goal, seed):
    """Every operator shedder through the real engine: the optimum (computed by the engine on the
    engine's own arrivals) is the brute force's, never above Full Knowledge's drops, and never above
    any strategy's drops whose kept tuples meet the bound; drop_optimality is their ratio."""
    ts, w, tau = s
    d = engine.operator_data(np.arange(len(w)), w, ts)
    for strategy in ("fk", "las", "sm", "bl", "ns"):
        params = {"goal": goal} if strategy in ("fk", "las", "sm") else {}
        row, _, tr = engine.simulate_operator(strategy, params, d, 75, tau, seed, window=4)
        arr, _ = engine.arrivals_ms(d, 75)
        want_goal = goal if params else "avg"
        assert row["opt_goal"] == want_goal and row["opt_window"] == len(w)
        assert row["opt_dropped"] == ref.min_drops(list(arr), list(w), tau, want_goal)
        assert row["window_dropped"] == int(tr.dropped.sum())
        met = ref.meets(list(arr), list(w), list(~tr.dropped), tau, want_goal)
        if strategy == "fk":
            assert met
        if met:
            assert row["opt_dropped"] <= row["window_dropped"]
            assert row["drop_optimality"] is None or row["drop_optimality"] <= 1.0
        if row["window_dropped"]:
            assert row["drop_optimality"] == pytest.approx(row["opt_dropped"] / row["window_dropped"])


def test_the_engine_compares_on_the_same_prefix():
    rng = np.random.default_rng(2)
    w = rng.choice(np.linspace(0.1, 6.4, 64), 400)
    d = engine.operator_data(np.arange(400) % 50, w)
    row, _, tr = engine.simulate_operator("fk", {}, d, 75, 6.4, 0, opt_window=30)
    arr, _ = engine.arrivals_ms(d, 75)
    assert row["opt_window"] == 30 and row["window_dropped"] == int(tr.dropped[:30].sum())
    assert row["opt_dropped"] == optimum.min_drops(arr[:30], w[:30], 6.4, "avg").dropped


def test_limiting_cases():
    a = np.array([0.0, 0.0, 1.0, 1.0, 2.0])
    w = np.array([3.0, 2.0, 5.0, 1.0, 4.0])
    for goal in ("avg", "max"):
        assert optimum.min_drops(a, w, math.inf, goal).dropped == 0  # no bound: keep all
        assert optimum.min_drops(a, np.zeros(5), 0.0, goal).dropped == 0  # free work never waits
        assert optimum.min_drops(a[:1], w[:1], 0.0, goal).dropped == 0  # one tuple never waits
        assert optimum.min_drops(np.zeros(6), np.ones(6), 0.0, goal).dropped == 5  # all at once, tau 0
        assert optimum.min_drops(a[:0], w[:0], 1.0, goal).dropped == 0
    # avg lets a late tuple wait on the early ones' slack: tau 0.5, two at once of cost 1
    assert optimum.min_drops(np.zeros(2), np.ones(2), 0.5, "avg").dropped == 0
    assert optimum.min_drops(np.zeros(2), np.ones(2), 0.5, "max").dropped == 1


def test_moore_hodgson_is_not_exact_with_release_dates():
    """The module docstring's example: dropping the costliest kept tuple keeps one, the optimum two."""
    a, w = np.array([0.0, 5.0, 6.0]), np.array([5.0, 4.0, 1.0])
    assert ref.min_drops(list(a), list(w), 0.0, "max") == 1
    assert optimum.min_drops(a, w, 0.0, "max").dropped == 1
    assert list(optimum.min_drops(a, w, 0.0, "max").kept) == [True, False, True]


def test_drop_optimality():
    assert optimum.drop_optimality(25, 50) == 0.5
    assert optimum.drop_optimality(0, 0) == 1.0
    assert optimum.drop_optimality(3, 0) is None  # kept everything by breaking the bound
    assert optimum.drop_optimality(None, 7) is None
    assert optimum.drop_optimality(30, 20) == 1.5  # a strategy that broke the bound


@pytest.mark.parametrize(("args", "needle"), [
    ((np.array([1.0, 0.0]), np.ones(2), 1.0, "avg"), "non-decreasing"),
    ((np.zeros(2), np.array([1.0, -1.0]), 1.0, "max"), "costs finite and >= 0"),
    ((np.zeros(2), np.ones(3), 1.0, "avg"), "of one length"),
    ((np.zeros(2), np.ones(2), -1.0, "avg"), "tau must be >= 0"),
    ((np.zeros(2), np.ones(2), 1.0, "mean"), "goal must be 'avg' or 'max'"),
])
def test_bad_input(args, needle):
    with pytest.raises(SkewbenchError, match=needle):
        optimum.min_drops(*args)


def test_bad_method_and_brute_force_limit():
    with pytest.raises(SkewbenchError, match="method must be auto, dp or milp"):
        optimum.min_drops_avg(np.zeros(2), np.ones(2), 1.0, method="cplex")
    with pytest.raises(ValueError, match="at most 12 tuples"):
        ref.min_drops([0.0] * 13, [1.0] * 13, 1.0)
