"""The generic HiGHS layer and the grouping family's two offline optima (skewbench.solver)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from skewbench.errors import SkewbenchError
from skewbench.solver import CSR, best_split, best_whole_keys, solve_lp_or_milp


def brute_whole(w, n):
    best = np.inf
    for assign in itertools.product(range(n), repeat=len(w)):
        loads = np.zeros(n)
        np.add.at(loads, list(assign), w)
        best = min(best, loads.max())
    return float(best)


def subset_formula(w, cand, n):
    """max over worker subsets S of w(keys whose candidates lie in S) / |S| (Hall / min-cut)."""
    best = 0.0
    for r in range(1, n + 1):
        for S in itertools.combinations(range(n), r):
            s = set(S)
            tot = sum(float(wk) for wk, c in zip(w, cand) if set(int(x) for x in c) <= s)
            best = max(best, tot / r)
    return best


def test_lp_and_milp_statuses():
    # max x + y, x + y <= 4.5, x, y in [0, 3]
    c, A = np.array([1.0, 1.0]), np.array([[1.0, 1.0]])
    lp = solve_lp_or_milp(c, A, [-np.inf], [4.5], [0, 0], [3, 3], None, maximize=True, time_limit=5)
    assert lp.status == "optimal" and lp.objective == pytest.approx(4.5) and lp.gap == 0.0
    mip = solve_lp_or_milp(c, CSR.from_triplets([0, 0], [0, 1], [1, 1], (1, 2)), [-np.inf], [4.5], [0, 0],
                           [3, 3], [True, True], maximize=True, time_limit=5)
    assert mip.status == "optimal" and mip.objective == pytest.approx(4.0) and mip.bound == pytest.approx(4.0)
    inf = solve_lp_or_milp(c, A, [5.0], [np.inf], [0, 0], [1, 1], [True, False], maximize=True, time_limit=5)
    assert inf.status == "infeasible" and inf.x is None
    unb = solve_lp_or_milp(c, A, [-np.inf], [np.inf], [0, 0], [np.inf, np.inf], None, maximize=True, time_limit=5)
    assert unb.status == "unbounded"
    with pytest.raises(SkewbenchError):
        solve_lp_or_milp(c, A, [0], [1], [0, 0], [1, 1], None, maximize=True, time_limit=0)


def test_milp_time_limit_keeps_incumbent():
    """A 0/1 knapsack-like equal-partition instance with many items, cut off very early."""
    rng = np.random.default_rng(0)
    n = 60
    w = rng.integers(10**5, 10**6, n).astype(float)
    A = np.vstack([w])
    sol = solve_lp_or_milp(w, A, [-np.inf], [np.floor(w.sum() / 2) - 0.5], np.zeros(n), np.ones(n),
                           np.ones(n, dtype=bool), maximize=True, time_limit=0.05)
    assert sol.status in ("time_limit", "optimal")
    if sol.status == "time_limit" and sol.x is not None:
        assert sol.bound >= sol.objective and sol.gap >= 0


@pytest.mark.parametrize("seed", range(12))
def test_best_whole_keys_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    k, n = int(rng.integers(1, 8)), int(rng.integers(1, 4))
    w = rng.integers(1, 20, k).astype(float)
    b = best_whole_keys(w, n, time_limit=10)
    truth = brute_whole(w, n)
    assert b.lower <= truth + 1e-9 and truth <= b.upper + 1e-9
    assert b.status == "optimal" and b.value == pytest.approx(truth)


def test_best_whole_keys_heavy_light_split_brackets_the_truth():
    w = np.array([5, 5, 4, 4, 3, 3, 3, 1, 1, 1], dtype=float)  # LPT gives 11 > the lower bound 10
    truth = brute_whole(w, 3)
    b = best_whole_keys(w, 3, time_limit=10, max_vars=7)  # only two distinct loads go to the MILP
    assert b.method == "milp-heavy+greedy"
    assert b.lower <= truth + 1e-9 <= b.upper + 2e-9
    assert b.value == (b.upper if b.status == "optimal" else b.lower)


def test_best_whole_keys_edge_cases():
    assert best_whole_keys(np.array([]), 3).value == 0.0
    assert best_whole_keys(np.array([5.0, 1.0]), 1).value == 6.0
    assert best_whole_keys(np.array([4.0, 4.0, 4.0]), 3).status == "optimal"
    with pytest.raises(SkewbenchError):
        best_whole_keys(np.array([-1.0]), 2)
    with pytest.raises(SkewbenchError):
        best_whole_keys(np.array([1.0]), 0)


@pytest.mark.parametrize("seed", range(10))
def test_best_split_matches_subset_formula(seed):
    rng = np.random.default_rng(seed)
    n, d, k = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 15))
    w = rng.uniform(0, 10, k)
    cand = rng.integers(0, n, (k, d))
    truth = subset_formula(w, cand, n)
    assert best_split(w, cand, n, method="subsets") == pytest.approx(truth)
    assert best_split(w, cand, n, method="lp") == pytest.approx(truth, rel=1e-7)
    assert best_split(w, cand, n) == pytest.approx(truth)


def test_best_split_extremes_and_monotonicity():
    rng = np.random.default_rng(5)
    n, k = 6, 200
    w = rng.pareto(1.5, k) + 0.1
    everyone = np.tile(np.arange(n), (k, 1))
    assert best_split(w, everyone, n) == pytest.approx(w.sum() / n)  # d = n: perfectly spread
    one = rng.integers(0, n, (k, 1))
    per = np.bincount(one[:, 0], weights=w, minlength=n)
    assert best_split(w, one, n) == pytest.approx(per.max())  # d = 1: no choice at all
    two = np.hstack([one, rng.integers(0, n, (k, 1))])
    three = np.hstack([two, rng.integers(0, n, (k, 1))])
    a, b, c = best_split(w, one, n), best_split(w, two, n), best_split(w, three, n)
    assert a >= b - 1e-9 >= c - 2e-9  # more candidates never hurt
    assert best_split(w, two, n, method="lp") == pytest.approx(b, rel=1e-7)


def test_best_split_scales_to_a_million_keys():
    rng = np.random.default_rng(1)
    k, n = 1_000_000, 32
    w = rng.zipf(1.3, k).astype(float)
    cand = rng.integers(0, n, (k, 2))
    v = best_split(w, cand, n)  # speed: inside the replay's, in make bench
    assert w.sum() / n - 1e-6 <= v <= w.sum()
    assert v >= w.max() / 2 - 1e-6


def test_best_split_bad_input():
    with pytest.raises(SkewbenchError):
        best_split(np.ones(2), np.array([[0], [5]]), 3)
    with pytest.raises(SkewbenchError):
        best_split(np.ones(3), np.array([[0], [1]]), 3)
