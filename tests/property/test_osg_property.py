"""OSG: the numba kernel equals the plain-Python reference, and the property tests of
osg.spec.md section 7 that a simulator can check."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skewbench.grouping.strategies import osg
from skewbench.grouping.base import Batch, WorkerModel
from tests.reference import osg_ref as ref

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------------------------
# helpers

def fifo(assign, ts, x, k):
    """Tiny FIFO: start, finish times and final free-at times of an assignment."""
    free = np.zeros(k)
    s = np.empty(len(ts))
    e = np.empty(len(ts))
    for t in range(len(ts)):
        o = assign[t]
        s[t] = max(ts[t], free[o])
        e[t] = s[t] + x[t]
        free[o] = e[t]
    return s, e, free


def mean_latency(assign, ts, x, k):
    _, e, _ = fifo(assign, ts, x, k)
    return float(np.mean(e - ts))


def batch(keys, ts, costs, seqs=None):
    n = len(keys)
    seqs = np.arange(n, dtype=np.int64) if seqs is None else np.asarray(seqs, dtype=np.int64)
    return Batch(seqs, np.asarray(keys, dtype=np.int64), np.asarray(ts, dtype=np.float64),
                 np.asarray(costs, dtype=np.float64))


def zipf_keys(rng, m, n, alpha):
    p = np.arange(1, n + 1, dtype=np.float64) ** (-alpha)
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    return np.minimum(np.searchsorted(cdf, rng.random(m), side="right"), n - 1).astype(np.int64)


def level_costs(rng, n, nw=64, lo=0.1, hi=6.4):
    vals = lo + np.arange(nw) * (hi - lo) / (nw - 1)
    kc = np.empty(n)
    kc[rng.permutation(n)] = np.repeat(vals, -(-n // nw))[:n]
    return kc


def arrivals(costs, k, P):
    """a_t = t * tau with tau = mean cost * P / (100 k) (spec 4.3)."""
    tau = float(np.mean(costs)) * P / (100.0 * k)
    return np.arange(len(costs)) * tau


def route_all(strat, b, splits=()):
    cuts = [0, *sorted(set(splits)), len(b)]
    parts = [strat.route(b.take(slice(lo, hi))) for lo, hi in zip(cuts[:-1], cuts[1:])]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def make(k, seed=0, wm=None, exact=False, **params):
    cls = osg.FullKnowledgeOSG if exact else osg.OSG
    return cls(k, 1, seed, wm, **params)


# --------------------------------------------------------------------------------------------
# kernel == reference

@st.composite
def cases(draw, busy=False):
    """Random small streams; ``busy`` ones ship and resynchronise many times."""
    k = draw(st.integers(1, 6))
    m = draw(st.integers(150, 400) if busy else st.integers(0, 400))
    nkeys = draw(st.integers(1, 10))
    rs = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(rs)
    keys = rng.integers(0, nkeys, m)
    if draw(st.booleans()):
        keys = keys * 1_000_000_007 + 3  # large ids: the hash reduces them mod p
    cost_kind = draw(st.sampled_from(["per_key_int", "per_key_float", "per_tuple", "same"]))
    if cost_kind == "per_key_int":
        costs = rng.integers(1, 9, 11).astype(float)[np.asarray(keys) % 11]
    elif cost_kind == "per_key_float":
        costs = rng.uniform(0.1, 7.0, 11)[np.asarray(keys) % 11]
    elif cost_kind == "per_tuple":
        costs = rng.uniform(0.05, 10.0, m)
    else:
        costs = np.full(m, 2.0)
    gap = draw(st.sampled_from(["tau", "tau_exp"] if busy else
                               ["zero", "int", "mixed", "tau", "tau", "tau_exp", "tau_exp"]))
    tau = float(np.mean(costs)) / k * draw(st.sampled_from([0.9, 1.0, 1.2, 2.0])) if m else 1.0
    if gap == "zero":
        gaps = np.zeros(m)
    elif gap == "int":
        gaps = rng.integers(0, 3, m).astype(float)
    elif gap == "mixed":
        gaps = rng.choice([0.0, 0.5, 1.0, 2.5], m)
    elif gap == "tau":
        gaps = np.full(m, tau)
    else:
        gaps = rng.exponential(tau, m)
    ts = np.cumsum(gaps)
    if draw(st.booleans()):
        wm = None
        breaks, factors = [0], None
    else:
        nper = draw(st.integers(1, 3))
        breaks = [0] + sorted(rng.choice(np.arange(1, max(m, 2) + 5), nper - 1, replace=False).tolist())
        factors = rng.choice([0.5, 1.0, 1.5, 2.0, 0.75], (nper, k)).tolist()
        wm = WorkerModel.periods(k, list(zip(breaks, factors)))
    params = dict(
        window=draw(st.integers(1, 4) if busy else st.one_of(st.integers(1, 6), st.integers(1, 16))),
        mu=draw(st.sampled_from([0.5, math.inf] if busy else [-1.0, 0.0, 0.02, 0.1, 0.5, math.inf])),
        rows=draw(st.integers(1, 4)),
        cols=draw(st.integers(1, 6)),
        latency=draw(st.sampled_from([0.0, 0.0, 0.7, 5.0, 40.0])),
        variant=draw(st.sampled_from(["wl", "literal"])),
        empty_cells=draw(st.sampled_from(["exclude", "include"])),
        stale_replies=draw(st.booleans()),
        resync_start=draw(st.sampled_from(["restart", "continue"])),
    )
    exact = draw(st.booleans())
    seed = draw(st.integers(0, 2**40))
    splits = draw(st.lists(st.integers(0, max(m, 0)), max_size=4))
    return k, keys, ts, np.asarray(costs, float), wm, breaks, factors, params, exact, seed, splits


def run_both(case, perturb=None):
    k, keys, ts, costs, wm, breaks, factors, params, exact, seed, splits = case
    b = batch(keys, ts, costs)
    s = make(k, seed, wm, exact, **params)
    got = route_all(s, b, splits)
    want, stats = ref.run_osg(list(range(len(keys))), [int(v) for v in keys], list(ts),
                              list(costs), k, seed=seed, breaks=breaks, factors=factors,
                              exact=exact, _perturb=perturb, **params)
    return s, got, want, stats


@settings(max_examples=300, **SETTINGS)
@given(cases())
def test_kernel_equals_reference(case):
    check_against_reference(case)


@settings(max_examples=150, **SETTINGS)
@given(cases(busy=True))
def test_kernel_equals_reference_busy(case):
    check_against_reference(case)


def check_against_reference(case):
    s, got, want, stats = run_both(case)
    assert got.tolist() == want
    summ = s.summary()
    for key in ("shipments", "replies", "epochs_completed", "epochs_abandoned", "run_index",
                "send_all_index"):
        assert summ[key] == stats[key], key
    dbg = s.debug_state()
    assert dbg["C_hat"].tolist() == stats["C"]
    assert dbg["free"].tolist() == stats["free"]
    assert dbg["C_act"].tolist() == stats["C_act"]
    assert osg.MODE_NAMES[dbg["mode"]] == stats["mode"]
    assert list(zip(dbg["ship_op"].tolist(), dbg["ship_executed"].tolist(),
                    dbg["ship_seq"].tolist())) == stats["ship_log"]


def test_kernel_equals_reference_long_stream():
    """A longer stream with many epochs, abandoned epochs and latency, fed in batches."""
    rng = np.random.default_rng(5)
    k, m, n = 4, 3000, 40
    keys = zipf_keys(rng, m, n, 1.0)
    kc = level_costs(rng, n, 8, 1.0, 8.0)
    costs = kc[keys]
    ts = arrivals(costs, k, 105)
    wm = WorkerModel.periods(k, [(0, [1.0, 1.0, 1.5, 0.5]), (1500, [0.5, 2.0, 1.0, 1.0])])
    for variant, resync in (("wl", "restart"), ("literal", "restart"), ("wl", "continue"),
                            ("literal", "continue")):
        params = dict(window=16, mu=0.3, rows=3, cols=7, latency=3.0, variant=variant,
                      empty_cells="exclude", stale_replies=variant == "literal",
                      resync_start=resync)
        case = (k, keys, ts, costs, wm, [0, 1500], [[1.0, 1.0, 1.5, 0.5], [0.5, 2.0, 1.0, 1.0]],
                params, False, 11, [1, 700, 701, 2500])
        s, got, want, stats = run_both(case)
        assert got.tolist() == want
        summ = s.summary()
        assert summ["epochs_completed"] > 3 and summ["epochs_abandoned"] > 3


def test_reference_comparison_can_fail():
    """Delivering tied messages after the tuple (a one-token change in the reference) is caught."""
    found = 0
    for rs in range(40):
        rng = np.random.default_rng(rs)
        k, m = 3, 200
        keys = rng.integers(0, 5, m)
        costs = rng.integers(1, 4, 8).astype(float)[keys % 8]
        ts = np.cumsum(rng.integers(0, 2, m).astype(float))
        params = dict(window=3, mu=math.inf, rows=2, cols=3, latency=0.0, variant="wl",
                      empty_cells="exclude", stale_replies=False)
        case = (k, keys, ts, costs, None, [0], None, params, False, rs, [])
        _, got, want, _ = run_both(case)
        assert got.tolist() == want
        _, got, want_bad, _ = run_both(case, perturb="ties_after")
        found += got.tolist() != want_bad
    assert found > 0
    # and a perturbed kernel parameter is caught as well
    _, got, want, _ = run_both((3, keys, ts, costs, None, [0], None, params, False, 1, []))
    s = make(3, 1, None, False, **{**params, "latency": 0.5})
    assert route_all(s, batch(keys, ts, costs)).tolist() != want


# --------------------------------------------------------------------------------------------
# 7.1 - 7.5: sketch and estimator

@settings(max_examples=40, **SETTINGS)
@given(st.integers(0, 2**31), st.integers(1, 4), st.integers(1, 4), st.integers(2, 30),
       st.sampled_from([0.0, 0.1, math.inf]))
def test_countmin_soundness(rs, k, rows, cols, mu):
    """7.1: min_i F[i, h_i(v)] >= true count since the last reset; row sums are exact."""
    rng = np.random.default_rng(rs)
    m, n = 600, 50
    keys = zipf_keys(rng, m, n, 1.2)
    costs = rng.integers(1, 17, n).astype(float)[keys] / 4.0  # dyadic: sums are exact
    ts = arrivals(costs, k, 100)
    s = make(k, rs, window=20, mu=mu, rows=rows, cols=cols)
    a = s.route(batch(keys, ts, costs))
    d = s.debug_state()
    for o in range(k):
        idx = np.flatnonzero(a == o)
        ships = d["ship_executed"][d["ship_op"] == o]
        since = idx[ships.max():] if len(ships) else idx
        assert np.all(d["F"][o].sum(axis=1) == len(since))
        assert np.all(d["W"][o].sum(axis=1) == costs[since].sum())
        if len(since):
            true = np.bincount(keys[since], minlength=n)
            cols_ = s.hash_columns(np.arange(n))
            est = np.min(d["F"][o][np.arange(rows)[:, None], cols_], axis=0)
            assert np.all(est >= true)


def test_ratio_bounds():
    """7.2: min w <= W/F <= max w for every non-empty cell and every estimate."""
    rng = np.random.default_rng(2)
    k, m, n = 4, 20000, 500
    keys = zipf_keys(rng, m, n, 1.0)
    kc = level_costs(rng, n)
    costs = kc[keys]
    s = make(k, 9, window=256, mu=0.1)
    s.route(batch(keys, arrivals(costs, k, 100), costs))
    d = s.debug_state()
    assert s.summary()["shipments_delivered"] > 0
    lo, hi = kc.min() * (1 - 1e-12), kc.max() * (1 + 1e-12)
    for F, W in ((d["F"], d["W"]), (d["store_F"], d["store_W"])):
        nz = F > 0
        ratio = W[nz] / F[nz]
        assert np.all(ratio >= lo) and np.all(ratio <= hi)
    for o in range(k):
        for src in ("store", "live"):
            e = s.estimates(np.arange(n), o, src)
            assert np.all(e >= lo) and np.all(e <= hi)


def test_injective_hash_gives_exact_estimates():
    """7.3: with h(v) = v and c >= n every stored estimate is the key's true cost; with few
    uniform keys OSG's whole trace equals FK-osg's."""
    rng = np.random.default_rng(3)
    k, n, m = 3, 16, 30000
    keys = rng.integers(0, n, m)
    kc = rng.integers(1, 9, n).astype(float)
    wm = WorkerModel.periods(k, [(0, [1.0, 1.5, 0.75])])
    costs = kc[keys]
    ts = arrivals(costs, k, 130)
    traces = []
    for exact in (False, True):
        s = make(k, 4, wm, exact, window=1024, cols=54)
        s.set_hash(np.ones(4), np.zeros(4))
        traces.append(s.route(batch(keys, ts, costs)))
        if not exact:
            assert s.summary()["epochs_completed"] > 0
            for o in range(k):
                present = np.flatnonzero(s.debug_state()["store_F"][o][0] > 0)
                assert len(present) == n
                assert np.array_equal(s.estimates(present, o), kc[present] * wm.factors[0, o])
    assert np.array_equal(traces[0], traces[1])


def test_single_column():
    """7.4: with c = 1 every estimate of an instance is its overall mean cost."""
    rng = np.random.default_rng(4)
    k, n, m = 3, 100, 20000
    keys = zipf_keys(rng, m, n, 1.0)
    costs = level_costs(rng, n)[keys]
    s = make(k, 1, window=200, cols=1, mu=0.2)
    s.route(batch(keys, arrivals(costs, k, 100), costs))
    d = s.debug_state()
    assert d["have"].all()
    for o in range(k):
        mean = d["store_W"][o][0, 0] / d["store_F"][o][0, 0]
        assert np.allclose(s.estimates(np.arange(n), o), mean, rtol=0, atol=0)


def test_theorem_4_3_monte_carlo():
    """7.5: r = 1, truly random hash, equal frequencies: E[W_v/F_v] matches Theorem 4.3 (with c
    in place of k) within 1%, and does not depend on m.

    Each hash draw is one instance of a single round-robin OSG run (mu < 0 never ships): tuple
    ``i*D + d`` goes to instance ``d`` and carries key ``d*n + u`` (u = the i-th key of draw d),
    and the explicit hash table sends those keys to independent uniform columns, so instance
    ``d``'s sketch is the sketch of draw ``d``."""
    rng = np.random.default_rng(7)
    n, c, draws, chunk, v = 64, 8, 20000, 2000, 0
    w = rng.uniform(0.1, 6.4, n)
    S = w.sum()
    expect = (S - w[v]) / (n - 1) - c * (S - n * w[v]) / (n * (n - 1)) * (1 - (1 - 1 / c) ** n)
    for f in (1, 10):
        acc = 0.0
        for _ in range(draws // chunk):
            seqk = np.repeat(np.arange(n), f)
            u = np.stack([rng.permutation(seqk) for _ in range(chunk)], axis=1)  # [n f, D]
            keys = (np.arange(chunk)[None, :] * n + u).reshape(-1)
            s = osg.OSG(chunk, mu=-1.0, rows=1, cols=c, window=10**9)
            table = rng.integers(0, c, (1, chunk * n))
            s.set_hash_table(table)
            a = s.route(batch(keys, np.zeros(len(keys)), w[keys % n]))
            assert np.array_equal(a, np.arange(len(keys)) % chunk)
            d = s.debug_state()
            col = table[0, np.arange(chunk) * n + v]
            F = d["F"][np.arange(chunk), 0, col]
            W = d["W"][np.arange(chunk), 0, col]
            assert np.all(F >= f)
            acc += float(np.sum(W / F))
        assert abs(acc / draws - expect) <= 0.01 * expect


# --------------------------------------------------------------------------------------------
# 7.6: stability detector

def test_stability_detector():
    rng = np.random.default_rng(6)
    k, n, m, N = 4, 300, 40000, 256
    keys = zipf_keys(rng, m, n, 1.0)
    costs = level_costs(rng, n)[keys]
    ts = arrivals(costs, k, 100)
    b = batch(keys, ts, costs)
    for mu in (0.05, 0.2):
        s = make(k, 2, window=N, mu=mu)
        s.route(b)
        d = s.debug_state()
        assert len(d["ship_op"]) > 0
        for o in range(k):
            ex = d["ship_executed"][d["ship_op"] == o]
            if len(ex):
                assert ex[0] % N == 0 and ex[0] >= 2 * N
                assert np.all(ex % N == 0) and np.all(np.diff(ex) >= 2 * N)
            assert len(ex) <= d["executed"][o] // (2 * N)
    s = make(k, 2, window=N, mu=math.inf)
    s.route(b)
    d = s.debug_state()
    for o in range(k):
        ex = d["ship_executed"][d["ship_op"] == o]
        assert ex.tolist() == [2 * N * (i + 1) for i in range(d["executed"][o] // (2 * N))]
    for variant in ("wl", "literal"):
        s = make(k, 2, window=N, mu=-0.001, variant=variant)
        a = s.route(b)
        assert s.summary()["shipments"] == 0
        assert np.array_equal(a, np.arange(m) % k)


# --------------------------------------------------------------------------------------------
# 7.7 - 7.10: scheduler

def fk(k, variant="ideal", semantics="wl", wm=None, seed=0):
    return osg.FK(k, 1, seed, wm, variant=variant, semantics=semantics)


def test_toy_example():
    """7.7: RR gives L = 29/3 s, FK (both semantics) 7 s."""
    ts = np.array([0.0, 1000.0, 2000.0])
    x = np.array([10000.0, 1000.0, 10000.0])
    b = batch([0, 1, 0], ts, x)
    assert mean_latency(np.arange(3) % 2, ts, x, 2) == pytest.approx(29000 / 3)
    for sem in ("wl", "literal"):
        a = fk(2, semantics=sem).route(b)
        assert a.tolist() == [0, 1, 1]
        assert mean_latency(a, ts, x, 2) == pytest.approx(7000.0)
        assert a.tolist() == ref.run_fk_ideal([0, 1, 2], ts.tolist(), x.tolist(), 2,
                                              semantics=sem)


@settings(max_examples=60, **SETTINGS)
@given(st.integers(1, 8), st.lists(st.floats(0.01, 100.0), min_size=1, max_size=60),
       st.sampled_from(["wl", "literal"]))
def test_greedy_bound(k, jobs, sem):
    """7.8: FK-ideal's makespan on a batch <= (2 - 1/k) max(sum/k, max)."""
    x = np.array(jobs)
    a = fk(k, semantics=sem).route(batch(np.zeros(len(x)), np.zeros(len(x)), x))
    assert a.tolist() == ref.run_fk_ideal(list(range(len(x))), [0.0] * len(x), jobs, k,
                                          semantics=sem)
    makespan = np.bincount(a, weights=x, minlength=k).max()
    assert makespan <= (2 - 1 / k) * max(x.sum() / k, x.max()) * (1 + 1e-12)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
def test_greedy_tight_instance(k):
    w = float(k)
    x = np.array([w / k] * (k * (k - 1)) + [w])
    for sem in ("wl", "literal"):
        a = fk(k, semantics=sem).route(batch(np.zeros(len(x)), np.zeros(len(x)), x))
        assert np.bincount(a, weights=x, minlength=k).max() == (2 - 1 / k) * w


def test_identical_costs_reduce_to_rr():
    """7.9: FK-ideal literal is t mod k; OSG and OSG-WL at P = 110% give |Λ - 1| < 0.01; every
    instance ships at exactly 2N and SEND_ALL starts right after about 2N k tuples."""
    k, m, N = 5, 60000, 1024
    x = np.full(m, 0.1)
    ts = arrivals(x, k, 110)
    b = batch(np.random.default_rng(0).integers(0, 4096, m), ts, x)
    assert np.array_equal(fk(k, semantics="literal").route(b), np.arange(m) % k)
    L_rr = mean_latency(np.arange(m) % k, ts, x, k)
    for variant in ("wl", "literal"):
        s = make(k, 1, window=N, variant=variant)
        a = s.route(b)
        assert abs(L_rr / mean_latency(a, ts, x, k) - 1) < 0.01
        d = s.debug_state()
        first = [d["ship_executed"][d["ship_op"] == o][0] for o in range(k)]
        assert first == [2 * N] * k
        assert 2 * N * k <= s.summary()["send_all_index"] <= 2 * N * k + 2 * k


def uniform_case(k, P, m=3000, w=2.0):
    """Identical costs ``w`` and deterministic arrivals ``a_t = t tau``, ``tau = w P / (100 k)``."""
    ts = np.arange(m) * (w * P / (100.0 * k))
    x = np.full(m, w)
    keys = np.random.default_rng(k * 1000 + P).integers(0, 300, m)
    return batch(keys, ts, x), ts, x


UNIFORM_GRID = [(k, P) for k in (2, 3, 5, 7) for P in (100, 110, 150)]


@pytest.mark.parametrize("k, P", UNIFORM_GRID)
def test_uniform_costs_wl_continue_is_round_robin(k, P):
    """OSG-WL with resync_start="continue", identical costs (exact estimates) and a_t = t tau:
    tuple t goes to t mod k and every completion time equals round robin's, through several
    shipments and epochs, as long as round robin's instance is the only idle one at each arrival
    ((k-1) tau < w, i.e. P < 100 k/(k-1)).  Otherwise (here P = 150% at k = 3, 5, 7) OSG-WL's
    lowest-index tie rule picks another idle instance: assignments differ from RR from then on
    (see the module docstring)."""
    N, m = 16, 3000
    b, ts, x = uniform_case(k, P, m)
    rr = np.arange(m) % k
    _, e_rr, _ = fifo(rr, ts, x, k)
    s = make(k, 3, window=N, mu=0.05, variant="wl", resync_start="continue")
    a = s.route(b)
    summ = s.summary()
    assert summ["shipments"] >= 2 * k and summ["epochs_completed"] >= 3
    assert s.debug_state()["rr_ptr"] == m
    tau = 2.0 * P / (100.0 * k)
    if (k - 1) * tau < 2.0:
        assert np.array_equal(a, rr)
        _, e, _ = fifo(a, ts, x, k)
        assert np.array_equal(e, e_rr)
        # FK-osg (exact estimates by construction) does the same
        fo = osg.FullKnowledgeOSG(k, 1, 0, window=N, variant="wl", resync_start="continue")
        assert np.array_equal(fo.route(b), rr)
    else:
        assert not np.array_equal(a, rr)
        t = int(np.flatnonzero(a != rr)[0])
        assert s.last_modes[t] in (osg.WAIT_ALL, osg.RUN)
        # a lower-index instance that round robin leaves idle at a_t won the tie
        _, _, free_before = fifo(rr[:t], ts[:t], x[:t], k)
        assert a[t] < rr[t] and free_before[a[t]] <= ts[t] and free_before[rr[t]] <= ts[t]


@pytest.mark.parametrize("k, P", UNIFORM_GRID)
def test_uniform_costs_literal_continue(k, P):
    """The literal variant with "continue" is not round robin: leaving ROUND_ROBIN zeroes C_hat
    (A18) and the k carriers make every C_hat equal, so the k tuples after the first SEND_ALL
    phase go to 0, 1, ..., k-1 (lowest index on ties); once the epoch's corrections make C_hat
    the true accumulated work, argmin with lowest-index ties is round robin again.  So exactly
    those k tuples differ, unless the phase began at a multiple of k."""
    N, m = 16, 3000
    b, ts, x = uniform_case(k, P, m)
    rr = np.arange(m) % k
    s = make(k, 3, window=N, mu=0.05, variant="literal", resync_start="continue")
    a = s.route(b)
    assert s.summary()["epochs_completed"] >= 3
    sa = s.summary()["send_all_index"]
    want = rr.copy()
    want[sa + k: sa + 2 * k] = np.arange(k)
    assert np.array_equal(a, want)
    assert np.count_nonzero(a != rr) == (k if sa % k else 0)


@pytest.mark.parametrize("k", [2, 3, 5, 7])
def test_uniform_costs_restart_deviates_at_critical_load(k):
    """With the paper's "restart" (A15) the SEND_ALL phases shift the rotation; at P = 100%
    the lost slack is never recovered, so OSG-WL is clearly worse than round robin."""
    N, m = 16, 3000
    b, ts, x = uniform_case(k, 100, m)
    rr = np.arange(m) % k
    for variant in ("wl", "literal"):
        a = make(k, 3, window=N, mu=0.05, variant=variant).route(b)
        assert not np.array_equal(a, rr)
        lam = mean_latency(rr, ts, x, k) / mean_latency(a, ts, x, k)
        assert lam < (0.8 if variant == "wl" else 0.9), (variant, lam)
    # the default is "restart"
    assert np.array_equal(make(k, 3, window=N, mu=0.05).route(b),
                          make(k, 3, window=N, mu=0.05, resync_start="restart").route(b))


def test_continue_carriers_follow_round_robin():
    """resync_start="continue" on a skewed stream: every SEND_ALL carrier goes to t mod k, a phase
    reaching WAIT_ALL has reached every instance once, batching does not matter."""
    rng = np.random.default_rng(21)
    k, n, m = 5, 200, 8000
    keys = zipf_keys(rng, m, n, 1.0)
    costs = level_costs(rng, n)[keys]
    b = batch(keys, arrivals(costs, k, 99), costs)
    for variant in ("wl", "literal"):
        s = make(k, 4, window=32, latency=2.0, variant=variant, resync_start="continue")
        a = s.route(b)
        modes = s.last_modes
        sa = np.flatnonzero(modes == osg.SEND_ALL)
        assert len(sa) >= 3 * k and np.array_equal(a[sa], sa % k)
        ends = np.flatnonzero((modes[1:] == osg.WAIT_ALL) & (modes[:-1] == osg.SEND_ALL)) + 1
        assert len(ends) > 0
        for t in ends:
            assert sorted(a[t - k:t].tolist()) == list(range(k))
        assert np.array_equal(route_all(make(k, 4, window=32, latency=2.0, variant=variant,
                                             resync_start="continue"), b, [1, 2999, 3000]), a)
        assert not np.array_equal(make(k, 4, window=32, latency=2.0, variant=variant).route(b), a)


def test_one_instance():
    """7.10: k = 1: every algorithm sends everything to instance 0, so Λ = 1."""
    rng = np.random.default_rng(10)
    m = 5000
    keys = zipf_keys(rng, m, 100, 1.0)
    costs = level_costs(rng, 100)[keys]
    b = batch(keys, arrivals(costs, 1, 100), costs)
    strats = [make(1, 0, window=64, variant=v) for v in ("wl", "literal")]
    strats += [fk(1, v, s_) for v in ("ideal", "osg") for s_ in ("wl", "literal")]
    for s in strats:
        assert np.all(s.route(b) == 0)
    assert strats[0].summary()["epochs_completed"] > 0


# --------------------------------------------------------------------------------------------
# 7.11: sync correctness

@pytest.mark.parametrize("variant", ["literal", "wl"])
def test_sync_correctness(variant):
    rng = np.random.default_rng(11)
    k, n, m, N = 3, 6, 4000, 24
    keys = rng.integers(0, n, m)
    kc = rng.integers(1, 9, n).astype(float)
    x = kc[keys]
    ts = arrivals(x, k, 95 if variant == "wl" else 100)
    s = make(k, 0, window=N, mu=0.0 if variant == "literal" else math.inf, cols=8,
             latency=7.0, variant=variant)
    s.set_hash(np.ones(4), np.zeros(4))
    s.set_estimate_scale(1.1)
    assign, modes, est, clamped = [], [], [], []
    checked = 0
    prev = s.debug_state()["C_hat"]
    prev_sum = s.summary()
    for t in range(m):
        op = int(s.route(batch([keys[t]], [ts[t]], [x[t]], [t]))[0])
        assign.append(op)
        modes.append(int(s.last_modes[0]))
        est.append(1.1 * kc[keys[t]])
        # did max(E, a) clamp on the scheduler's own (uncorrected) E for this tuple?
        clamped.append(bool(ts[t] > prev[op]))
        cur = s.debug_state()["C_hat"]
        summ = s.summary()
        if summ["epochs_completed"] > prev_sum["epochs_completed"]:
            # every instance's stored matrices contain every key: estimates are exact (and the
            # hook makes the scheduler use 1.1 w)
            for o in range(k):
                assert np.array_equal(s.estimates(np.arange(n), o), kc)
            A = np.array(assign)
            Mo = np.array(modes)
            _, e, _ = fifo(A, ts[:t + 1], x[:t + 1], k)
            for o in range(k):
                # the epoch completed before tuple t was scheduled (t may already be a
                # carrier of a newer epoch)
                carrier = np.flatnonzero((A[:t] == o) & (Mo[:t] == osg.SEND_ALL))[-1]
                after = np.flatnonzero((A == o) & (np.arange(t + 1) > carrier))
                if variant == "literal":
                    want = x[:carrier + 1][A[:carrier + 1] == o].sum() + sum(est[i] for i in after)
                else:
                    # exact only while the estimated queue never emptied after the carrier
                    # (before tuple t on the uncorrected E, at t on the corrected one)
                    want = e[carrier] + sum(est[i] for i in after if i < t)
                    if any(clamped[i] for i in after if i < t) or (op == o and ts[t] > want):
                        continue
                    if op == o:
                        want += est[t]
                assert cur[o] == pytest.approx(want, rel=1e-9)
                checked += 1
        elif prev_sum["mode"] != osg.ROUND_ROBIN:
            # no completed epoch: only this tuple's estimate moved C_hat (abandoned epochs'
            # replies never change it)
            want = prev.copy()
            want[op] = (max(want[op], ts[t]) if variant == "wl" else want[op]) + est[-1]
            assert np.allclose(cur, want, rtol=1e-12, atol=0)
        prev, prev_sum = cur, summ
    assert checked >= 3 * k
    assert prev_sum["epochs_abandoned"] > 0 and prev_sum["stale_replies_dropped"] > 0


# --------------------------------------------------------------------------------------------
# 7.12 - 7.17

def test_scheduling_and_round_robin_counts():
    """7.12 and 7.13: every tuple assigned once, work conserved, RR counts, one carrier per
    instance in every SEND_ALL phase."""
    rng = np.random.default_rng(12)
    k, n, m = 5, 400, 30000
    keys = zipf_keys(rng, m, n, 1.0)
    costs = level_costs(rng, n)[keys]
    ts = arrivals(costs, k, 99)
    wm = WorkerModel.periods(k, [(0, [1.0, 1.1, 0.9, 1.0, 1.2])])
    b = batch(keys, ts, costs)
    for variant in ("wl", "literal"):
        s = make(k, 5, wm, window=128, latency=2.0, variant=variant)
        a = s.route(b)
        modes = s.last_modes
        assert np.array_equal(route_all(make(k, 5, wm, window=128, latency=2.0, variant=variant),
                                        b, [1000, 17000]), a)
        x = wm.exec_times(np.arange(m), costs, a)
        assert a.shape == (m,) and a.min() >= 0 and a.max() < k
        _, e, free = fifo(a, ts, x, k)
        d = s.debug_state()
        assert np.allclose(d["free"], free, rtol=1e-12)
        assert np.isclose(d["C_act"].sum(), x.sum(), rtol=1e-12)
        assert np.all(e - ts >= x * (1 - 1e-12))
        rr = np.flatnonzero(modes == osg.ROUND_ROBIN)
        assert np.array_equal(rr, np.arange(len(rr))) and np.array_equal(a[rr], rr % k)
        # SEND_ALL phases: carriers 0, 1, ..., restarting at 0 on a new epoch; a phase that
        # reaches WAIT_ALL sent exactly one carrier to each instance
        assert np.count_nonzero(modes == osg.SEND_ALL) >= k
        run: list[int] = []
        phases = 0
        for t in range(m):
            if modes[t] == osg.SEND_ALL:
                if a[t] == 0:
                    run = []
                assert a[t] == len(run)
                run.append(int(a[t]))
            elif modes[t] == osg.WAIT_ALL and modes[t - 1] == osg.SEND_ALL:
                assert run == list(range(k))
                phases += 1
        assert phases > 0
    counts = np.bincount(np.arange(m) % k, minlength=k)
    assert counts.max() - counts.min() <= 1 and counts.min() == m // k


@pytest.mark.parametrize("lam", [2.0, 0.5, 0.25])
def test_scale_invariance(lam):
    """7.14: scaling every cost and tau by a power of two scales every latency exactly."""
    rng = np.random.default_rng(14)
    k, n, m = 5, 300, 20000
    keys = zipf_keys(rng, m, n, 1.0)
    costs = level_costs(rng, n)[keys]
    ts = arrivals(costs, k, 100)
    for mk in (lambda: make(k, 3, window=128), lambda: make(k, 3, window=128, variant="literal"),
               lambda: fk(k), lambda: fk(k, "osg", "literal")):
        a1 = mk().route(batch(keys, ts, costs))
        a2 = mk().route(batch(keys, ts * lam, costs * lam))
        assert np.array_equal(a1, a2)
        rr = np.arange(m) % k
        lam1 = mean_latency(rr, ts, costs, k) / mean_latency(a1, ts, costs, k)
        lam2 = mean_latency(rr, ts * lam, costs * lam, k) / mean_latency(a2, ts * lam, costs * lam, k)
        assert lam1 == pytest.approx(lam2, rel=1e-12)


def test_light_load():
    """7.15: tau >= max w gives l(t) = x_t for every algorithm; FK-WL never lets a tuple wait
    while an instance is idle; OSG-WL with exact estimates neither, once E is the true free-at
    vector, except for the carriers; throughput agrees within 1% at P >= 100%."""
    rng = np.random.default_rng(15)
    k, n, m = 4, 200, 6000
    keys = zipf_keys(rng, m, n, 1.0)
    kc = level_costs(rng, n)
    costs = kc[keys]
    b = batch(keys, np.arange(m) * kc.max(), costs)
    strats = [make(k, 1, window=64, variant=v) for v in ("wl", "literal")]
    strats += [fk(k, v, s_) for v in ("ideal", "osg") for s_ in ("wl", "literal")]
    for s in strats:
        a = s.route(b)
        st_, e, _ = fifo(a, b.ts, costs, k)
        assert np.array_equal(st_, b.ts) and np.allclose(e - b.ts, costs, rtol=0, atol=1e-9)
    # FK-WL at P = 101%
    ts = arrivals(costs, k, 101)
    a = fk(k).route(batch(keys, ts, costs))
    free = np.zeros(k)
    for t in range(m):
        if free[a[t]] > ts[t]:
            assert np.all(free > ts[t])
        free[a[t]] = max(free[a[t]], ts[t]) + costs[t]
    # FK-osg WL, tuple by tuple
    s = make(k, 2, None, True, window=32)
    free = np.zeros(k)
    checked = 0
    for t in range(3000):
        d = s.debug_state()
        op = int(s.route(batch([keys[t]], [ts[t]], [costs[t]], [t]))[0])
        mode = int(s.last_modes[0])
        if mode in (osg.WAIT_ALL, osg.RUN) and np.allclose(d["C_hat"], free, rtol=1e-12, atol=1e-9):
            if free[op] > ts[t] + 1e-9:
                assert np.all(free > ts[t] - 1e-9)
            checked += 1
        free[op] = max(free[op], ts[t]) + costs[t]
    assert checked > 1000
    # throughput at P = 105%
    ts = arrivals(costs, k, 105)
    bb = batch(keys, ts, costs)
    thr = []
    for a in (np.arange(m) % k, make(k, 1, window=64).route(bb), fk(k).route(bb)):
        _, e, _ = fifo(a, ts, costs, k)
        thr.append(m / (e.max() - ts.min()))
    assert max(thr) / min(thr) < 1.01


def test_heavy_load_grows_linearly():
    """7.16: at P = 90% the mean latency grows roughly linearly with m."""
    rng = np.random.default_rng(16)
    k, n = 5, 500
    kc = level_costs(rng, n)
    keys = zipf_keys(rng, 40000, n, 1.0)
    costs = kc[keys]
    tau = float(np.mean(costs)) * 90 / (100 * k)
    for mk in (lambda: make(k, 1, window=128), lambda: fk(k), lambda: None):
        L = []
        for m in (20000, 40000):
            ts = np.arange(m) * tau
            s = mk()
            a = np.arange(m) % k if s is None else s.route(batch(keys[:m], ts, costs[:m]))
            L.append(mean_latency(a, ts, costs[:m], k))
        assert 1.6 < L[1] / L[0] < 2.4


def test_determinism():
    """7.17: same seeds, same trace; another hash seed changes OSG but not RR-like runs."""
    rng = np.random.default_rng(17)
    k, n, m = 5, 1000, 30000
    keys = zipf_keys(rng, m, n, 1.0)
    costs = level_costs(rng, n)[keys]
    b = batch(keys, arrivals(costs, k, 100), costs)
    a1 = make(k, 123, window=256).route(b)
    a2 = route_all(make(k, 123, window=256), b, [5, 9999])
    a3 = make(k, 124, window=256).route(b)
    assert np.array_equal(a1, a2) and not np.array_equal(a1, a3)
    assert np.array_equal(make(k, 1, mu=-1.0).route(b), make(k, 2, mu=-1.0).route(b))
    assert np.array_equal(fk(k, seed=1).route(b), fk(k, seed=2).route(b))


# --------------------------------------------------------------------------------------------
# 7.18, 7.19

def test_adaptation_time_series():
    """7.18: with the 4.6 multipliers OSG sends instance 4 (x1.10) fewer tuples than instance 0
    (x0.90) in the second half, once post-switch sketches have arrived; under RR the mean l per
    2,000-tuple block rises over each half."""
    rng = np.random.default_rng(18)
    k, n, m, half = 5, 4096, 150000, 75000
    keys = zipf_keys(rng, m, n, 1.0)
    costs = level_costs(rng, n, 64, 1.0, 64.0)[keys]
    ts = arrivals(costs, k, 100)  # W from the base costs (4.6 choice)
    wm = WorkerModel.periods(k, [(0, [1.05, 1.025, 1.0, 0.975, 0.95]),
                                 (half, [0.90, 0.95, 1.0, 1.05, 1.10])])
    s = make(k, 8, wm)
    a = s.route(batch(keys, ts, costs))
    d = s.debug_state()
    post = d["ship_time"][d["ship_seq"] >= half]
    assert len(post) > 0
    after = (np.arange(m) >= half) & (ts > post.min())
    cnt = np.bincount(a[after], minlength=k)
    assert cnt[4] < cnt[0]
    rr = np.arange(m) % k
    _, e, _ = fifo(rr, ts, wm.exec_times(np.arange(m), costs, rr), k)
    blocks = (e - ts).reshape(-1, 2000).mean(axis=1)
    for h in (blocks[: half // 2000], blocks[-(half // 2000) + 1:]):
        assert h[-5:].mean() > h[:5].mean()


def test_skew_helps_the_estimator():
    """7.19: the frequency-weighted mean absolute estimation error is smaller under Zipf-2 than
    under Uniform (same c, r and number of tuples)."""
    n, m = 4096, 50000
    errs = {}
    for alpha in (0.0, 2.0):
        tot = 0.0
        for seed in range(3):
            rng = np.random.default_rng(100 + seed)
            keys = zipf_keys(rng, m, n, alpha)
            kc = level_costs(rng, n)
            s = make(1, seed, mu=-1.0)
            s.route(batch(keys, np.zeros(m), kc[keys]))
            f = np.bincount(keys, minlength=n)
            seen = np.flatnonzero(f)
            tot += np.sum(f[seen] * np.abs(s.estimates(seen, 0, "live") - kc[seen])) / m
        errs[alpha] = tot
    assert errs[2.0] < errs[0.0]
