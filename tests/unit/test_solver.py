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
    assert lp.status == "optimal" and lp.objective == pytest.approx(4.5) and lp.method == "highs-lp"
    assert lp.x.sum() == pytest.approx(4.5) and np.all((lp.x >= -1e-9) & (lp.x <= 3 + 1e-9))
    mip = solve_lp_or_milp(c, CSR.from_triplets([0, 0], [0, 1], [1, 1], (1, 2)), [-np.inf], [4.5], [0, 0],
                           [3, 3], [True, True], maximize=True, time_limit=5)
    assert mip.status == "optimal" and mip.objective == pytest.approx(4.0) and mip.method == "highs-milp"
    assert np.array_equal(mip.x, np.round(mip.x)) and mip.x.sum() == 4.0 and np.all((mip.x >= 0) & (mip.x <= 3))
    inf = solve_lp_or_milp(c, A, [5.0], [np.inf], [0, 0], [1, 1], [True, False], maximize=True, time_limit=5)
    assert inf.status == "infeasible" and inf.x is None
    unb = solve_lp_or_milp(c, A, [-np.inf], [np.inf], [0, 0], [np.inf, np.inf], None, maximize=True, time_limit=5)
    assert unb.status == "unbounded"
    with pytest.raises(SkewbenchError, match=r"^time_limit must be > 0 seconds, got 0$"):
        solve_lp_or_milp(c, A, [0], [1], [0, 0], [1, 1], None, maximize=True, time_limit=0)


def subset_sum_instance(n=24, seed=0):
    """max w x s.t. w x <= floor(sum w / 2) - 1/2, x binary: an equal-partition (subset-sum) MILP
    that HiGHS cannot close at the root (about 15 s to optimality), with its optimum by meet in the
    middle (exact: every sum is an integer below 2^53)."""
    w = np.random.default_rng(seed).integers(10**5, 10**6, n).astype(float)
    cap = float(np.floor(w.sum() / 2) - 0.5)

    def sums(v):
        out = np.zeros(1)
        for x in v:
            out = np.concatenate([out, out + x])
        return out

    left, right = sums(w[: n // 2]), np.sort(sums(w[n // 2:]))
    i = np.searchsorted(right, cap - left, side="right") - 1
    truth = float(np.max(left[i >= 0] + right[i[i >= 0]]))
    return w, cap, truth


def solve_subset_sum(w, cap, **kw):
    n = w.size
    return solve_lp_or_milp(w, np.vstack([w]), [-np.inf], [cap], np.zeros(n), np.ones(n), np.ones(n, dtype=bool),
                            maximize=True, time_limit=60, **kw)


def check_incumbent(sol, w, cap, truth):
    """A feasible 0/1 point whose objective is the one reported, below the optimum; the reported
    bound above it; the gap HiGHS's (bound - objective) / objective."""
    x = np.round(sol.x)
    assert np.all(np.abs(sol.x - x) <= 1e-6) and set(np.unique(x)) <= {0.0, 1.0}  # HiGHS's integrality tolerance
    assert w @ x <= cap and sol.objective == pytest.approx(w @ x, rel=1e-12)
    assert sol.objective <= truth <= sol.bound * (1 + 1e-12)  # the bound is 6828589.999999998 for 6828590
    assert sol.gap == pytest.approx((sol.bound - sol.objective) / sol.objective, rel=1e-9)


def test_milp_node_limit_keeps_incumbent_bound_and_gap():
    """One branch-and-bound node is not enough: the limit is reported with the incumbent, the dual
    bound and their gap, and it stops at the same point on every run (a deterministic budget, unlike
    the time limit, which a fast machine never reaches)."""
    w, cap, truth = subset_sum_instance()
    assert truth == 6828590.0  # floor(cap): a perfect split exists
    sol = solve_subset_sum(w, cap, node_limit=1)
    assert sol.status == "node_limit" and sol.method == "highs-milp"  # the limit that stopped it, by name
    check_incumbent(sol, w, cap, truth)
    assert sol.gap > 1e-3  # not proven: the incumbent is 0.24% below its bound
    again = solve_subset_sum(w, cap, node_limit=1)
    assert (again.objective, again.bound, again.gap) == (sol.objective, sol.bound, sol.gap)
    assert np.array_equal(again.x, sol.x)


def test_a_time_limited_milp_says_time_limit_not_node_limit():
    """The clock, not the node budget, stops this solve (a budget of 10^9 nodes is never used up in a
    millisecond): the status names the time limit."""
    w, cap, truth = subset_sum_instance(n=40, seed=1)
    n = w.size
    sol = solve_lp_or_milp(w, np.vstack([w]), [-np.inf], [cap], np.zeros(n), np.ones(n), np.ones(n, dtype=bool),
                           maximize=True, time_limit=1e-3, node_limit=10**9)
    assert sol.status == "time_limit", sol


def test_milp_relative_gap_reports_the_gap_it_stopped_at():
    """With mip_rel_gap = 1% the same instance stops "optimal" at the root with HiGHS's own bound
    and gap, not a gap of 0."""
    w, cap, truth = subset_sum_instance()
    sol = solve_subset_sum(w, cap, mip_rel_gap=0.01)
    assert sol.status == "optimal"
    check_incumbent(sol, w, cap, truth)
    assert 0 < sol.gap <= 0.01


def test_an_optimal_milp_is_the_optimum_at_any_objective_scale():
    """HiGHS stops on absolute tolerances (1e-6) as well as on the relative gap: on an objective a
    hundred million times smaller it ends "Optimal" with a 10% gap of its own.  The layer must not
    turn that into a proven optimum with gap 0: every status keeps objective <= optimum <= bound,
    and "optimal" only with the optimum."""
    rng = np.random.default_rng(3)
    n = 12
    for scale in (1.0, 1e-4, 1e-8):
        w = rng.integers(10, 100, n).astype(float)
        v = rng.integers(10, 100, n).astype(float)
        cap = w.sum() / 2.3
        truth = max(sum(v[i] for i in range(n) if m >> i & 1) for m in range(1 << n)
                    if sum(w[i] for i in range(n) if m >> i & 1) <= cap)
        sol = solve_lp_or_milp(v * scale, np.vstack([w]), [-np.inf], [cap], np.zeros(n), np.ones(n),
                               np.ones(n, dtype=bool), maximize=True, time_limit=10)
        x = np.round(sol.x)
        assert np.all(np.abs(sol.x - x) <= 1e-6) and sol.objective == pytest.approx(v @ x * scale, rel=1e-9)
        assert w @ x <= cap
        assert sol.objective / scale <= truth + 1e-6 and sol.bound / scale >= truth - 1e-6, scale
        assert sol.status != "optimal" or sol.objective / scale == pytest.approx(truth, rel=1e-9), (scale, sol)
        assert sol.status in ("optimal", "time_limit")
    assert sol.status == "time_limit" and sol.gap == pytest.approx((sol.bound - sol.objective) / sol.objective)


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
    with pytest.raises(SkewbenchError, match=r"^key loads must be finite numbers >= 0$"):
        best_whole_keys(np.array([-1.0]), 2)
    with pytest.raises(SkewbenchError, match=r"^need at least one worker, got n=0$"):
        best_whole_keys(np.array([1.0]), 0)


def three_worker_optimum(w):
    """The least makespan of w on 3 workers, by the set of reachable (load 1, load 2) pairs."""
    st = np.zeros((1, 2))
    for x in w:
        st = np.unique(np.vstack([st, st + [x, 0], st + [0, x]]), axis=0)
    return float(np.min(np.maximum(st.max(axis=1), w.sum() - st.sum(axis=1))))


def test_best_whole_keys_node_limit_brackets_the_optimum():
    """Ten keys on three workers need branching: one node leaves the MILP's incumbent above the
    optimum and its dual bound below it; the bracket comes back as such, and its value is the lower
    bound (the grouping optimum's node-limited reference)."""
    w = np.random.default_rng(1).integers(10**4, 10**5, 10).astype(float)
    truth = three_worker_optimum(w)
    b = best_whole_keys(w, 3, time_limit=60, node_limit=1)
    assert (b.status, b.method) == ("bound", "milp")
    assert b.lower < truth < b.upper and b.value == b.lower
    full = best_whole_keys(w, 3, time_limit=60)
    assert full.status == "optimal" and full.value == truth == 190919.0


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
    with pytest.raises(SkewbenchError, match=r"^candidate worker ids must be integers in 0\.\.2$"):
        best_split(np.ones(2), np.array([[0], [5]]), 3)
    with pytest.raises(SkewbenchError, match=r"^3 key loads but 2 candidate rows$"):
        best_split(np.ones(3), np.array([[0], [1]]), 3)
