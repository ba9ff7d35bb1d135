"""LAS (las.spec.md): the numba kernel equals the plain-Python reference, and the property tests
of las.spec.md section 7 that a simulator can check."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skewbench import registry
from skewbench.errors import SkewbenchError
from skewbench.shedding import las
from tests.reference import las_ref as ref

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TOL = 1e-9
#: the operator shedders (strategy names; the reference's kinds)
KINDS = ("ns", "bl", "sm", "fk", "las")


# --------------------------------------------------------------------------------------------
# helpers

def zipf_keys(rng, m, n, alpha):
    p = np.arange(1, n + 1, dtype=np.float64) ** (-alpha)
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    return np.minimum(np.searchsorted(cdf, rng.random(m), side="right"), n - 1).astype(np.int64)


def level_costs(rng, n, nw=64, lo=0.1, hi=6.4):
    vals = lo + np.arange(nw) * (hi - lo) / (nw - 1) if nw > 1 else np.full(1, lo)
    kc = np.empty(n)
    kc[rng.permutation(n)] = np.repeat(vals, -(-n // nw))[:n]
    return kc


def zipf_stream(seed, m=4096, n=4096, alpha=1.0, u=0.25, nw=64, warm=0):
    """Keys i.i.d. Zipf, durations from ``nw`` levels over 0.1..6.4 ms by a shuffled key->level
    mapping, evenly spaced arrivals with gap ``(1 - u) * Wbar``; plus an optional warm-up sample."""
    rng = np.random.default_rng(seed)
    kc = level_costs(rng, n, nw)
    keys = zipf_keys(rng, m, n, alpha)
    dur = kc[keys]
    wbar = float(dur.mean())
    arr = np.arange(m) * (1.0 - u) * wbar
    wk = zipf_keys(rng, warm, n, alpha) if warm else None
    return keys, arr, dur, wbar, (wk, kc[wk] if warm else None)


def shedder(kind):
    """The registered operator shedder ``kind`` with its default parameters (its rule's inputs
    come from the LASConfig each test passes)."""
    return registry.get("shedding", kind)()


def sim(kind, keys, arr, dur, cfg, seed=0, **kw):
    return las.simulate(shedder(kind), keys, arr, dur, cfg, seed, **kw)


def identity_hash(r):
    return np.ones(r, dtype=np.int64), np.zeros(r, dtype=np.int64)


def finish(tr, arr):
    return arr + tr.c


def nan_eq(a, b, tol=TOL):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all(np.isnan(a) == np.isnan(b))) and \
        bool(np.all(np.abs(np.nan_to_num(a) - np.nan_to_num(b)) <= tol))


@st.composite
def streams(draw, max_m=1200):
    """Small random streams with exact ties (dyadic gaps and durations) or float gaps."""
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    m = draw(st.integers(1, max_m))
    n = draw(st.integers(1, 60))
    alpha = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0]))
    nw = draw(st.sampled_from([1, 3, 8, 64]))
    u = draw(st.sampled_from([-0.5, -0.1, 0.0, 0.25, 0.5, 0.9]))
    arrival = draw(st.sampled_from(["even", "dyadic", "poisson"]))
    ranks = zipf_keys(rng, m, n, alpha)
    keys = ranks * draw(st.sampled_from([1, 7919, 1_000_003]))
    if arrival == "dyadic":   # durations and gaps multiples of 1/8: completions coincide with arrivals
        kc = rng.integers(1, 9, size=n) / 8.0
    else:
        kc = level_costs(rng, n, nw)
    dur = kc[ranks]
    wbar = float(dur.mean())
    gap = (1.0 - u) * wbar
    if arrival == "even":
        arr = 3.25 + np.arange(m) * gap
    elif arrival == "dyadic":
        arr = np.cumsum(rng.integers(0, 9, size=m) / 8.0)
    else:
        arr = 1.0 + np.cumsum(rng.exponential(gap, size=m))
    wlen = draw(st.sampled_from([0, 0, 5, 300]))
    idx = rng.integers(0, m, size=wlen)
    wk, wd = (keys[idx], dur[idx]) if wlen else (None, None)
    return dict(seed=seed, keys=keys, arr=arr, dur=dur, wbar=wbar, u=u, wk=wk, wd=wd)


@st.composite
def configs(draw):
    eps = draw(st.sampled_from([0.0, 0.05, 0.3, 0.7]))
    columns = draw(st.sampled_from([None, 1, 3, 16, 64])) if eps > 0 else draw(st.sampled_from([1, 3, 16, 64]))
    return dict(
        tau=draw(st.sampled_from([0.0, 0.5, 3.2, 6.4, 40.0, math.inf])),
        epsilon=eps, delta=draw(st.sampled_from([0.1, 0.25, 0.5])),
        window=draw(st.sampled_from([1, 2, 8, 16, 32, 64])),
        mu=draw(st.sampled_from([-1.0, 0.05, 0.3, math.inf])),
        inflation=draw(st.sampled_from([None, None, 0.0, 0.2])),
        literal_clock=draw(st.booleans()), literal_sync=draw(st.booleans()),
        goal=draw(st.sampled_from(["avg", "avg", "max"])), columns=columns,
    )


def run_both(kind, s, kw, use_warm=True):
    cfgkw = {k: v for k, v in kw.items() if k != "columns"}
    cfg = las.LASConfig(u=s["u"], wbar=s["wbar"], **cfgkw)
    r, _ = las.sketch_shape(cfg.epsilon, cfg.delta)
    ha, hb = las.hash_params(s["seed"], r)
    coins = las.bl_coins(s["seed"], len(s["keys"]))
    warm = dict(warm_keys=s["wk"], warm_durations=s["wd"]) if (use_warm and s["wk"] is not None) else {}
    tr = las.simulate(shedder(kind), s["keys"], s["arr"], s["dur"], cfg, s["seed"], coins=coins, columns=kw["columns"], **warm)
    rf = ref.simulate(kind, s["keys"], s["arr"], s["dur"], u=s["u"], wbar=s["wbar"], coins=coins, hash_a=ha,
                      hash_b=hb, columns=kw["columns"], **cfgkw, **warm)
    return tr, rf


# --------------------------------------------------------------------------------------------
# 17: parity with the reference (every kind, cold and warm, literal flags), determinism

@settings(max_examples=40, **SETTINGS)
@given(streams(), configs())
def test_kernel_equals_reference(s, kw):
    for kind in KINDS:
        tr, rf = run_both(kind, s, kw)
        assert np.array_equal(tr.dropped, np.array(rf["dropped"], dtype=bool)), kind
        assert nan_eq(tr.q, rf["q"]) and nan_eq(tr.c, rf["c"]) and nan_eq(tr.qhat, rf["qhat"]), kind
        assert tr.matrices == rf["matrices"] and tr.nop_tuples == rf["nop_tuples"], kind
        assert tr.warm_started == rf["warm_started"], kind
        assert nan_eq(tr.deltas, rf["deltas"]), kind
        assert nan_eq([tr.belief], [rf["belief"]]), kind


def test_parity_exercises_las_protocol():
    """The parity setting does reach RUN mode with several matrices, syncs and drops."""
    keys, arr, dur, wbar, (wk, wd) = zipf_stream(3, m=3000, n=50, u=0.5, warm=400)
    s = dict(seed=3, keys=keys, arr=arr, dur=dur, wbar=wbar, u=0.5, wk=wk, wd=wd)
    kw = dict(tau=3.2, epsilon=0.05, delta=0.1, window=16, mu=0.3, inflation=None, literal_clock=False,
              literal_sync=False, goal="avg", columns=None)
    for use_warm in (False, True):
        tr, rf = run_both("las", s, kw, use_warm)
        assert tr.matrices >= 3 and len(tr.deltas) >= 2 and 0 < tr.dropped.sum() < len(keys)
        assert np.array_equal(tr.dropped, np.array(rf["dropped"])) and nan_eq(tr.q, rf["q"])
        assert nan_eq(tr.deltas, rf["deltas"]) and tr.warm_started == use_warm
        assert (tr.nop_tuples == 0) == use_warm


def test_determinism():
    keys, arr, dur, wbar, (wk, wd) = zipf_stream(5, m=5000, n=300, warm=2000)
    cfg = las.LASConfig(tau=6.4, u=0.25, wbar=wbar, window=64)
    for kind in KINDS:
        a = sim(kind, keys, arr, dur, cfg, 11, warm_keys=wk, warm_durations=wd)
        b = sim(kind, keys, arr, dur, cfg, 11, warm_keys=wk, warm_durations=wd)
        for f in ("dropped", "q", "c", "qhat", "deltas"):
            assert getattr(a, f).tobytes() == getattr(b, f).tobytes(), (kind, f)
        assert (a.matrices, a.nop_tuples, a.warm_started) == (b.matrices, b.nop_tuples, b.warm_started)
    # the seed matters where it should: BL's coins
    assert not np.array_equal(sim("bl", keys, arr, dur, cfg, 1).dropped, sim("bl", keys, arr, dur, cfg, 2).dropped)


# --------------------------------------------------------------------------------------------
# 1, 2: bookkeeping and the queue model

@settings(max_examples=30, **SETTINGS)
@given(streams(max_m=3000), st.sampled_from(KINDS), st.sampled_from([0.0, 3.2, 6.4, math.inf]))
def test_bookkeeping(s, kind, tau):
    cfg = las.LASConfig(tau=tau, u=s["u"], wbar=s["wbar"], window=16, mu=0.3)
    tr = sim(kind, s["keys"], s["arr"], s["dur"], cfg, s["seed"], warm_keys=s["wk"], warm_durations=s["wd"])
    m = len(s["keys"])
    kept = ~tr.dropped
    assert tr.dropped.dtype == bool and len(tr.dropped) == len(tr.q) == len(tr.c) == len(tr.qhat) == m
    assert kept.sum() + tr.dropped.sum() == m
    assert np.all(np.isnan(tr.q) == tr.dropped) and np.all(np.isnan(tr.c) == tr.dropped)
    assert np.all(np.isnan(tr.qhat[tr.dropped]))
    q, c, a, w = tr.q[kept], tr.c[kept], s["arr"][kept], s["dur"][kept]
    assert np.all(q >= 0) and np.allclose(c, q + w, rtol=0, atol=TOL)
    start, fin = a + q, a + c
    assert np.all(start[1:] >= fin[:-1] - TOL)            # one tuple at a time, FIFO
    # union length of busy intervals equals the kept work
    busy, cur_s, cur_e = 0.0, None, None
    for s0, e0 in zip(start, fin):
        if cur_e is None or s0 > cur_e:
            busy += 0.0 if cur_e is None else cur_e - cur_s
            cur_s, cur_e = s0, e0
        else:
            cur_e = max(cur_e, e0)
    busy += 0.0 if cur_e is None else cur_e - cur_s
    assert abs(busy - w.sum()) <= 1e-7 * max(1.0, w.sum())
    if kind in ("ns", "bl"):
        assert np.all(np.isnan(tr.qhat)) and math.isnan(tr.belief)


@settings(max_examples=30, **SETTINGS)
@given(streams(max_m=3000))
def test_lindley_recursion(s):
    tr = sim("ns", s["keys"], s["arr"], s["dur"], las.LASConfig(tau=0.0))
    a, w = s["arr"], s["dur"]
    wq = np.zeros(len(a))
    for i in range(1, len(a)):
        wq[i] = max(0.0, wq[i - 1] + w[i - 1] - (a[i] - a[i - 1]))
    assert not tr.dropped.any()
    assert np.allclose(tr.q, wq, rtol=0, atol=1e-7)


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_md1_mean_wait(rho):
    rng = np.random.default_rng(int(rho * 100))
    m, s0 = 400_000, 1.0
    arr = np.cumsum(rng.exponential(s0 / rho, size=m))
    tr = sim("ns", np.zeros(m, dtype=np.int64), arr, np.full(m, s0), las.LASConfig(tau=0.0))
    batches = tr.q[m // 20:].reshape(40, -1).mean(axis=1)      # batch means after a burn-in
    se = batches.std(ddof=1) / math.sqrt(len(batches))
    expect = rho * s0 / (2 * (1 - rho))
    assert abs(batches.mean() - expect) <= 4 * se, (batches.mean(), expect, se)


# --------------------------------------------------------------------------------------------
# 3, 4, 16: unbounded tau, no overload, over-provisioned limit

@settings(max_examples=20, **SETTINGS)
@given(streams(max_m=3000))
def test_unbounded_tau_equals_no_shedding(s):
    cfg = las.LASConfig(tau=math.inf, u=s["u"], wbar=s["wbar"], window=8, mu=math.inf)
    ns = sim("ns", s["keys"], s["arr"], s["dur"], cfg)
    for kind in ("sm", "fk", "las"):
        for warm in ({}, dict(warm_keys=s["wk"], warm_durations=s["wd"])):
            tr = sim(kind, s["keys"], s["arr"], s["dur"], cfg, s["seed"], **warm)
            assert not tr.dropped.any() and nan_eq(tr.q, ns.q) and nan_eq(tr.c, ns.c), kind
    coins = las.bl_coins(s["seed"], len(s["keys"]))
    bl = sim("bl", s["keys"], s["arr"], s["dur"], cfg, s["seed"])
    assert np.array_equal(bl.dropped, coins < max(0.0, s["u"]))


@pytest.mark.parametrize("tau", [0.0, 0.5, math.inf])
@pytest.mark.parametrize("w0", [0.3, 1.0, 6.4])
def test_no_overload_no_drops(tau, w0):
    rng = np.random.default_rng(7)
    m = 3000
    keys = zipf_keys(rng, m, 50, 1.0)
    eps = 0.05
    arr = 10.0 + np.arange(m) * w0 * (1 + eps) * 1.001
    dur = np.full(m, w0)
    cfg = las.LASConfig(tau=tau, epsilon=eps, wbar=w0, window=16, mu=0.3)
    for kind in ("ns", "sm", "fk", "las"):
        for warm in ({}, dict(warm_keys=keys[:500], warm_durations=dur[:500])):
            tr = sim(kind, keys, arr, dur, cfg, 1, **warm)
            assert not tr.dropped.any() and np.all(tr.q == 0), kind
            if kind == "las":
                assert tr.matrices >= 5 and tr.nop_tuples < m // 2


def test_over_provisioned_limit():
    keys, arr, dur, wbar, (wk, wd) = zipf_stream(21, m=16384, n=4096, u=-0.5, warm=8192)
    cfg = las.LASConfig(tau=6.4, u=-0.5, wbar=wbar)
    qbar = {}
    drops = {}
    for kind in KINDS:
        tr = sim(kind, keys, arr, dur, cfg, 21, warm_keys=wk, warm_durations=wd)
        qbar[kind] = float(np.nanmean(tr.q))
        drops[kind] = int(tr.dropped.sum())
    assert drops["bl"] == 0 and drops["fk"] <= 0.001 * len(keys) and drops["las"] <= 0.001 * len(keys)
    for kind in KINDS:
        assert abs(qbar[kind] - qbar["ns"]) <= 0.05 * qbar["ns"] + 1e-3, qbar
    assert qbar["ns"] < 6.4


# --------------------------------------------------------------------------------------------
# 5: FK feasibility (Theorem 4.1), and the max goal

@settings(max_examples=30, **SETTINGS)
@given(streams(max_m=3000), st.sampled_from([0.0, 0.1, 1.0, 3.2, 6.4]), st.sampled_from([None, 0.99]))
def test_fk_feasibility(s, tau, u99):
    arr = s["arr"]
    if u99 is not None:        # extreme overload, rho = 100
        arr = np.arange(len(arr)) * (1 - u99) * s["wbar"]
    tr = sim("fk", s["keys"], arr, s["dur"], las.LASConfig(tau=tau))
    kept = ~tr.dropped
    assert np.allclose(tr.qhat[kept], tr.q[kept], rtol=0, atol=1e-7)
    share, pmax = las.prefix_violations(tr.q, tr.dropped, tau)
    assert share == 0.0 and pmax <= tau + 1e-9
    assert kept[0]
    if u99 is not None and len(arr) > 1000:
        assert tr.dropped.mean() > 0.5
    # goal "max": every kept tuple waits at most tau, and a drop means it would have waited longer
    mx = sim("fk", s["keys"], arr, s["dur"], las.LASConfig(tau=tau, goal="max"))
    assert np.all(mx.q[~mx.dropped] <= tau + 1e-7)


# --------------------------------------------------------------------------------------------
# 6, 7, 14: equal durations, exact sketch, sync correctness

@settings(max_examples=15, **SETTINGS)
@given(st.integers(0, 10_000), st.sampled_from([0.25, 0.5, 1.0, 2.0]), st.sampled_from([0.0, 0.25, 0.6]),
       st.sampled_from([0.5, 3.2, 6.4]), st.sampled_from([16, 64]))
def test_equal_durations_collapse(seed, w0, u, tau, N):
    rng = np.random.default_rng(seed)
    m = 3000
    keys = zipf_keys(rng, m, 500, 1.0)
    dur = np.full(m, w0)
    arr = np.arange(m) * (1 - u) * w0
    cfg = las.LASConfig(tau=tau, epsilon=0.0, wbar=w0, window=N, mu=0.05)
    sm = sim("sm", keys, arr, dur, cfg)
    fk = sim("fk", keys, arr, dur, cfg)
    assert np.array_equal(sm.dropped, fk.dropped) and nan_eq(sm.q, fk.q)
    wk = zipf_keys(rng, 4 * N, 500, 1.0)
    lz = sim("las", keys, arr, dur, cfg, seed, warm_keys=wk, warm_durations=np.full(len(wk), w0), columns=54)
    assert lz.warm_started and lz.matrices >= 2 and len(lz.deltas) >= 1
    assert np.array_equal(lz.dropped, fk.dropped) and nan_eq(lz.q, fk.q)
    assert np.all(np.abs(lz.deltas) <= 1e-9)
    if u > 0.2:
        assert fk.dropped.any()


@settings(max_examples=25, **SETTINGS)
@given(st.integers(0, 10_000), st.integers(1, 300), st.integers(1, 2000), st.sampled_from([0.1, 0.25, 0.5]))
def test_exact_sketch_estimates(seed, n, m, delta):
    rng = np.random.default_rng(seed)
    r, _ = las.sketch_shape(0.05, delta)
    keys = rng.integers(0, n, size=m)
    kc = rng.uniform(0.1, 6.4, size=n)
    ha, hb = identity_hash(r)
    F, W = las.sketch(keys, kc[keys], ha, hb, n)
    seen = np.unique(keys)
    est = las.estimate(F, W, seen, ha, hb)
    assert np.allclose(est, kc[seen], rtol=1e-12, atol=0)
    assert np.array_equal(F[0, seen], np.bincount(keys, minlength=n)[seen])


def small_exact_stream(seed, m=4000, u=0.4, n=8):
    rng = np.random.default_rng(seed)
    kc = rng.integers(1, 17, size=n) / 8.0                 # dyadic: sums and ratios are exact
    keys = rng.integers(0, n, size=m)
    dur = kc[keys]
    arr = np.arange(m) * (1 - u) * float(dur.mean())
    wk = np.concatenate([rng.permutation(n), rng.integers(0, n, size=600)])
    return keys, arr, dur, kc, wk


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("tau", [0.5, 3.2])
def test_exact_sketch_las_equals_fk(seed, tau):
    keys, arr, dur, kc, wk = small_exact_stream(seed)
    cfg = las.LASConfig(tau=tau, epsilon=0.0, window=64, mu=0.3)
    ha, hb = identity_hash(4)
    fk = sim("fk", keys, arr, dur, cfg)
    lz = sim("las", keys, arr, dur, cfg, seed, warm_keys=wk, warm_durations=kc[wk], hash_a=ha, hash_b=hb, columns=8)
    assert lz.warm_started and lz.matrices >= 3
    assert np.array_equal(lz.dropped, fk.dropped) and nan_eq(lz.q, fk.q) and nan_eq(lz.qhat, fk.qhat)
    assert np.all(np.abs(lz.deltas) <= 1e-9) and fk.dropped.any()
    # with the default (colliding, 54-column) hashes the estimates are no longer exact
    lz2 = sim("las", keys, arr, dur, las.LASConfig(tau=tau, epsilon=0.0, window=64, mu=0.3), seed,
              warm_keys=wk, warm_durations=kc[wk], columns=2)
    assert not nan_eq(lz2.qhat, fk.qhat)


@pytest.mark.parametrize("k", [0.5, 2.0, 3.0])
def test_sync_first_delta_after_scaling(k):
    keys, arr, dur, kc, wk = small_exact_stream(4)
    ha, hb = identity_hash(4)
    cfg = las.LASConfig(tau=3.2, epsilon=0.05, window=64, mu=0.3)
    tr = sim("las", keys, arr, k * dur, cfg, 4, warm_keys=wk, warm_durations=kc[wk], hash_a=ha, hash_b=hb,
             columns=16)
    assert tr.warm_started and not tr.dropped[0]
    expect = k * dur[0] - (1 + 0.05) * kc[keys[0]]        # actual minus estimated finish of tuple 0
    assert abs(tr.deltas[0] - expect) <= 1e-9


def test_sync_guard_with_outstanding_syncs():
    """rho = 4 against the warm-up's durations: a long queue, several syncs in flight at once."""
    keys, arr, dur, kc, wk = small_exact_stream(5, m=4000)
    arr = np.arange(len(keys)) * float(dur.mean()) / 2.0
    ha, hb = identity_hash(4)
    cfg = las.LASConfig(tau=math.inf, epsilon=0.0, window=32, mu=math.inf)
    kw = dict(warm_keys=wk, warm_durations=kc[wk], hash_a=ha, hash_b=hb, columns=8)
    g = sim("las", keys, arr, 2 * dur, cfg, 5, **kw)
    lit = sim("las", keys, arr, 2 * dur, las.LASConfig(tau=math.inf, epsilon=0.0, window=32, mu=math.inf,
                                                        literal_sync=True), 5, **kw)
    rf = ref.simulate("las", keys, arr, 2 * dur, tau=math.inf, epsilon=0.0, window=32, mu=math.inf, **kw)
    # several piggy-backs were sent before the first one after tuple 0 came back
    fin = arr + g.c
    piggy = rf["piggy"]
    assert len(piggy) >= 4 and fin[piggy[1]] > arr[piggy[3]]
    raw = np.array(rf["delta_raw"])
    assert abs(g.deltas[0] - dur[0]) <= 1e-9                # tuple 0: 2w - w
    assert raw[1] > 1.0 and abs(g.deltas[1] - raw[1]) <= 1e-9
    assert abs(raw[2] - raw[1]) <= 1e-9 and abs(raw[3] - raw[1]) <= 1e-9   # the same error reported again ...
    assert np.all(np.abs(g.deltas[2:]) <= 1e-9)             # ... is not applied again (A15)
    after = np.arange(len(keys)) > np.searchsorted(arr, fin[piggy[1]], side="left")
    assert np.allclose(g.qhat[after], g.q[after], rtol=0, atol=1e-7)
    # the literal rule applies it again: the shedder's view drifts away from the queue
    assert abs(lit.deltas[2] - raw[1]) <= 1e-9
    assert np.nanmax(np.abs(lit.qhat[after] - lit.q[after])) > 1.0


# --------------------------------------------------------------------------------------------
# 8, 9: Count-Min bounds and the expected cell ratio

@settings(max_examples=40, **SETTINGS)
@given(st.integers(0, 2**31), st.integers(1, 500), st.integers(1, 3000), st.sampled_from([0.01, 0.05, 0.3, 0.7]),
       st.sampled_from([0.1, 0.25, 0.5]))
def test_count_min_bounds(seed, n, m, eps, delta):
    rng = np.random.default_rng(seed)
    universe = rng.choice(2**31 - 1, size=n, replace=False)
    keys = universe[rng.integers(0, n, size=m)]
    wk = dict(zip(universe.tolist(), rng.uniform(0.1, 6.4, size=n).tolist()))
    dur = np.array([wk[k] for k in keys.tolist()])
    r, c = las.sketch_shape(eps, delta)
    ha, hb = las.hash_params(seed, r)
    cols = las.hash_columns(keys, ha, hb, c)
    assert cols.shape == (r, m) and cols.min() >= 0 and cols.max() < c
    assert all(cols[i, t] == ref.h(ha[i], hb[i], c, keys[t]) for i in range(r) for t in range(min(m, 50)))
    F, W = las.sketch(keys, dur, ha, hb, c)
    assert F.sum() == r * m
    seen, f = np.unique(keys, return_counts=True)
    scols = las.hash_columns(seen, ha, hb, c)
    for i in range(r):
        assert np.all(F[i, scols[i]] >= f)
    est = las.estimate(F, W, seen, ha, hb)
    lo, hi = dur.min(), dur.max()
    assert np.all(est >= lo - 1e-12) and np.all(est <= hi + 1e-12)


def test_estimate_unseen_key_and_ties():
    ha, hb = identity_hash(2)
    F = np.array([[2.0, 0.0, 1.0], [1.0, 3.0, 0.0]])
    W = np.array([[4.0, 0.0, 5.0], [7.0, 9.0, 0.0]])
    # key 0: rows give counts (2, 1) -> row 1; key 2: counts (1, 0) -> row 1 empty -> sketch mean 9/3
    est = las.estimate(F, W, np.array([0, 2]), ha, hb)
    assert est[0] == 7.0 and est[1] == 3.0
    assert las.estimate(np.zeros((2, 3)), np.zeros((2, 3)), np.array([1]), ha, hb)[0] == 0.0
    F2 = np.array([[1.0, 0.0], [1.0, 0.0]])
    W2 = np.array([[2.0, 0.0], [5.0, 0.0]])
    assert las.estimate(F2, W2, np.array([0]), ha, hb)[0] == 2.0    # tie -> lowest row


def test_expected_cell_ratio_monte_carlo():
    rng = np.random.default_rng(9)
    n, c, trials = 40, 12, 40_000
    w = rng.uniform(0.1, 6.4, size=n)
    cols = rng.integers(0, c, size=(trials, n))
    same = cols == cols[:, :1]
    ratio = (same * w).sum(axis=1) / same.sum(axis=1)     # key 0's cell, one occurrence per key
    T = w.sum()
    expect = (T - w[0]) / (n - 1) - c * (T - n * w[0]) / (n * (n - 1)) * (1 - (1 - 1 / c) ** n)
    se = ratio.std(ddof=1) / math.sqrt(trials)
    assert abs(ratio.mean() - expect) <= 3 * se, (ratio.mean(), expect, se)


# --------------------------------------------------------------------------------------------
# 10, 11: key-blind decision, CHECK invariant

@settings(max_examples=30, **SETTINGS)
@given(streams(max_m=1500), st.sampled_from(KINDS), st.integers(0, 10**9), st.integers(0, 2**31 - 2))
def test_key_blind_decision(s, kind, where, other):
    m = len(s["keys"])
    j = where % m
    cfg = las.LASConfig(tau=2.0, u=s["u"], wbar=s["wbar"], window=8, mu=0.3)
    warm = dict(warm_keys=s["wk"], warm_durations=s["wd"])
    a = sim(kind, s["keys"], s["arr"], s["dur"], cfg, s["seed"], **warm)
    k2 = s["keys"].copy()
    k2[j] = other
    b = sim(kind, k2, s["arr"], s["dur"], cfg, s["seed"], **warm)
    assert np.array_equal(a.dropped[: j + 1], b.dropped[: j + 1])
    assert nan_eq(a.qhat[: j + 1], b.qhat[: j + 1]) and nan_eq(a.q[: j + 1], b.q[: j + 1])


@settings(max_examples=30, **SETTINGS)
@given(streams(max_m=1500), st.sampled_from(["sm", "fk", "las"]), st.sampled_from([0.0, 0.5, 3.2, 6.4]),
       st.booleans())
def test_check_invariant(s, kind, tau, literal_clock):
    cfg = dict(tau=tau, u=s["u"], wbar=s["wbar"], window=8, mu=0.3, literal_clock=literal_clock)
    tr = sim(kind, s["keys"], s["arr"], s["dur"], las.LASConfig(**cfg), s["seed"], warm_keys=s["wk"],
             warm_durations=s["wd"])
    est = tr.qhat[~np.isnan(tr.qhat)]
    if len(est):
        running = np.cumsum(est) / np.arange(1, len(est) + 1)
        assert np.all(running <= tau + 1e-9) and tr.belief <= tau + 1e-9
    r, _ = las.sketch_shape(0.05, 0.1)
    ha, hb = las.hash_params(s["seed"], r)
    rf = ref.simulate(kind, s["keys"], s["arr"], s["dur"], hash_a=ha, hash_b=hb, warm_keys=s["wk"],
                      warm_durations=s["wd"], **cfg)
    qsum, ell = 0.0, 0
    for i, qh in enumerate(rf["qhat_all"]):
        if math.isnan(qh):
            continue
        dropped = rf["dropped"][i]
        assert dropped == ((qsum + qh) / (ell + 1) > tau)       # the look-ahead test, nothing else
        if qh == 0.0 and (ell == 0 or qsum / ell <= tau):
            assert not dropped                                   # never stuck
        if not dropped:
            qsum += qh
            ell += 1
        if ell:
            assert rf["belief_after"][i] <= tau + 1e-9
    assert np.array_equal(tr.dropped, np.array(rf["dropped"]))


# --------------------------------------------------------------------------------------------
# 12: Base Line statistics

@pytest.mark.parametrize("u", [-0.1, 0.0, 0.05, 0.25, 0.5, 0.9, 0.99])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_base_line_statistics(u, seed):
    keys, arr, dur, wbar, _ = zipf_stream(seed, m=20000, n=1000, u=max(u, 0.0))
    tr = sim("bl", keys, arr, dur, las.LASConfig(tau=6.4, u=u), seed)
    d = int(tr.dropped.sum())
    m = len(keys)
    if u <= 0:
        assert d == 0
    else:
        half = 3.2905 * math.sqrt(m * u * (1 - u))          # two-sided 99.9%
        assert abs(d - u * m) <= half + 1, (d, u * m, half)


# --------------------------------------------------------------------------------------------
# 13: the operator protocol

@pytest.mark.parametrize("N", [1, 4, 16, 50])
@pytest.mark.parametrize("warm", [False, True])
def test_protocol_mu_inf_ships_every_2N(N, warm):
    keys, arr, dur, wbar, (wk, wd) = zipf_stream(8, m=3000, n=64, u=0.25, warm=500)
    kw = dict(warm_keys=wk, warm_durations=wd) if warm else {}
    cfg = las.LASConfig(tau=math.inf, window=N, mu=math.inf)
    tr = sim("las", keys, arr, dur, cfg, 8, **kw)
    r, _ = las.sketch_shape(0.05, 0.1)
    ha, hb = las.hash_params(8, r)
    rf = ref.simulate("las", keys, arr, dur, tau=math.inf, window=N, mu=math.inf, hash_a=ha, hash_b=hb, **kw)
    fin = arr + tr.c
    executed = int(np.sum(fin[:-1] <= arr[-1]))
    assert executed == rf["executed"]
    assert rf["matrix_at"] == [2 * N * j for j in range(1, executed // (2 * N) + 1)]
    assert tr.matrices == executed // (2 * N) + int(warm) and tr.warm_started == warm
    # one piggy-back per SEND episode, one Delta per executed piggy-back
    # (two pairs can reach the shedder before one arrival when N is tiny: then one episode)
    assert 1 <= len(rf["piggy"]) <= tr.matrices
    if N >= 4:
        assert len(rf["piggy"]) == tr.matrices
    done = [p for p in rf["piggy"] if p < len(keys) - 1 and fin[p] <= arr[-1]]
    assert len(tr.deltas) == len(done) >= 1


@pytest.mark.parametrize("warm", [False, True])
def test_protocol_mu_negative_never_ships(warm):
    keys, arr, dur, wbar, (wk, wd) = zipf_stream(9, m=4000, n=64, u=0.5, warm=500)
    kw = dict(warm_keys=wk, warm_durations=wd) if warm else {}
    cfg = las.LASConfig(tau=0.5, window=4, mu=-1.0)
    tr = sim("las", keys, arr, dur, cfg, 9, **kw)
    ns = sim("ns", keys, arr, dur, cfg)
    assert tr.matrices == 0 and not tr.warm_started and tr.nop_tuples == len(keys)
    assert not tr.dropped.any() and nan_eq(tr.q, ns.q) and len(tr.deltas) == 0 and np.all(np.isnan(tr.qhat))


def test_warm_start_cycles_and_gives_up():
    keys, arr, dur, wbar, _ = zipf_stream(10, m=500, n=16, u=0.25)
    cfg = las.LASConfig(tau=6.4, window=16, mu=math.inf)
    # 10 tuples, first pair at 2N = 32 executions: four passes through the sample
    tr = sim("las", keys, arr, dur, cfg, 1, warm_keys=keys[:10], warm_durations=dur[:10])
    assert tr.warm_started and tr.nop_tuples == 0
    # one tuple and N = 200: 64 passes give 64 executions, fewer than 2N -> cold start in NOP
    tr = sim("las", keys, arr, dur, las.LASConfig(tau=6.4, window=200, mu=math.inf), 1,
             warm_keys=keys[:1], warm_durations=dur[:1])
    assert not tr.warm_started and tr.nop_tuples > 0
    # 2N = 128 = 64 passes of 2 tuples: the pair arrives on the very last execution of the cap
    tr = sim("las", keys, arr, dur, las.LASConfig(tau=6.4, window=64, mu=math.inf), 1,
             warm_keys=keys[:2], warm_durations=dur[:2])
    assert tr.warm_started
    tr = sim("las", keys, arr, dur, las.LASConfig(tau=6.4, window=65, mu=math.inf), 1,
             warm_keys=keys[:2], warm_durations=dur[:2])
    assert not tr.warm_started


# --------------------------------------------------------------------------------------------
# 15: monotonicity (statistical)

def test_monotonicity_statistical():
    seeds = range(6)
    m = 4096
    taus = [1.6, 3.2, 6.4, 12.8]
    us = [0.1, 0.25, 0.5, 0.75]

    def mean_drops(kind, tau, u):
        out = []
        for sd in seeds:
            keys, arr, dur, wbar, (wk, wd) = zipf_stream(100 + sd, m=m, n=512, u=u, warm=2048)
            tr = sim(kind, keys, arr, dur, las.LASConfig(tau=tau, window=128, u=u, wbar=wbar), sd,
                     warm_keys=wk, warm_durations=wd)
            out.append(tr.dropped.sum())
        return float(np.mean(out))

    for kind, slack in (("fk", 0.001 * m), ("las", 0.005 * m)):
        by_tau = [mean_drops(kind, t, 0.25) for t in taus]
        assert all(b <= a + slack for a, b in zip(by_tau, by_tau[1:])), (kind, by_tau)
        assert by_tau[0] > by_tau[-1]
        by_u = [mean_drops(kind, 6.4, u) for u in us]
        assert all(b >= a - slack for a, b in zip(by_u, by_u[1:])), (kind, by_u)
        assert by_u[-1] > by_u[0] + 0.5 * m


# --------------------------------------------------------------------------------------------
# sanity of the default operating point (las.spec.md 5, sanity expectations), API details

def test_default_point_sanity():
    keys, arr, dur, wbar, (wk, wd) = zipf_stream(0, m=32768, n=4096, u=0.25, warm=8192)
    cfg = las.LASConfig(tau=6.4, u=0.25, wbar=wbar)
    res = {k: sim(k, keys, arr, dur, cfg, 0, warm_keys=wk, warm_durations=wd) for k in KINDS}
    qbar = {k: float(np.nanmean(t.q)) for k, t in res.items()}
    dr = {k: float(t.dropped.mean()) for k, t in res.items()}
    assert qbar["bl"] > 30 and qbar["sm"] > 30 and qbar["ns"] > 1000
    assert 0.9 * 6.4 <= qbar["fk"] <= 6.4 + 1e-9 and 0.25 <= dr["fk"] <= 0.30
    assert res["las"].warm_started and res["las"].matrices >= 2
    assert abs(dr["las"] - (1 - 0.75 / 1.05)) <= 0.02 and qbar["las"] <= 3 * 6.4


def test_sketch_shape_and_hash_params():
    assert las.sketch_shape(0.05, 0.1) == (4, 54)
    assert las.sketch_shape(0.70, 0.25) == (2, 4)
    a, b = las.hash_params(3, 4)
    a2, _ = las.hash_params(3, 4)
    assert a.dtype == np.int64 and np.array_equal(a, a2) and np.all(a >= 1) and np.all(a < las.PRIME)
    assert np.all(b >= 0) and np.all(b < las.PRIME) and not np.array_equal(a, las.hash_params(4, 4)[0])


def test_prefix_violations():
    q = np.array([0.0, 10.0, np.nan, 2.0, 0.0])
    dropped = np.isnan(q)
    share, pmax = las.prefix_violations(q, dropped, 4.0)
    # prefix means 0, 5, 4, 3 -> one of four above 4
    assert share == 0.25 and pmax == 5.0


@pytest.mark.parametrize("kwargs, word", [
    (dict(kind=object()), "plan method"),
    (dict(keys=np.array([1, -2, 3])), "keys"),
    (dict(keys=np.array([1, 2**31, 3])), "keys"),
    (dict(durations=np.array([1.0, 0.0, 1.0])), "durations"),
    (dict(arrivals=np.array([0.0, 1.0])), "same length"),
    (dict(arrivals=np.array([0.0, 2.0, 1.0])), "non-decreasing"),
    (dict(config=las.LASConfig(tau=-1.0)), "tau"),
    (dict(config=las.LASConfig(tau=1.0, epsilon=-0.1)), "epsilon"),
    (dict(config=las.LASConfig(tau=1.0, delta=1.0)), "delta"),
    (dict(config=las.LASConfig(tau=1.0, delta=0.0)), "delta"),
    (dict(config=las.LASConfig(tau=1.0, window=0)), "window"),
    (dict(config=las.LASConfig(tau=1.0, goal="median")), "goal"),
    (dict(coins=np.zeros(2)), "coins"),
])
def test_validation(kwargs, word):
    base = dict(kind=shedder("las"), keys=np.array([1, 2, 3]), arrivals=np.array([0.0, 1.0, 2.0]),
                durations=np.array([1.0, 1.0, 1.0]), config=las.LASConfig(tau=1.0))
    base.update(kwargs)
    kind = base.pop("kind")
    with pytest.raises(SkewbenchError, match=word):
        las.simulate(kind, base.pop("keys"), base.pop("arrivals"), base.pop("durations"), base.pop("config"), 0,
                     **base)


class FixedPlan:
    """A shedder whose plan is given (what a plug-in's plan method might return)."""

    def __init__(self, plan):
        self._plan = plan

    def plan(self, keys, arrivals, durations, config, seed, coins=None):
        return self._plan


@pytest.mark.parametrize("plan, message", [
    ("drop nothing", "a shedder's plan must be an OperatorPlan, got str"),
    (las.OperatorPlan(drop=np.zeros(2, dtype=bool)), r"the plan's drop needs one entry per tuple \(3\), got shape \(2,\)"),
    (las.OperatorPlan(drop=np.zeros(3, dtype=bool), check=True), "a plan that checks needs estimates or the online"),
    (las.OperatorPlan(drop=np.zeros(3, dtype=bool), check=True, estimates=np.ones(4)),
     r"the plan's estimates need one entry per tuple \(3\) or one number, got shape \(4,\)"),
    (las.OperatorPlan(drop=np.zeros(3, dtype=bool), check=True, estimates=np.array([1.0, np.nan, 1.0])),
     "the plan's estimates must be finite and >= 0"),
    (las.OperatorPlan(drop=np.zeros(3, dtype=bool), inflation=-0.5), "the plan's inflation must be finite and >= 0"),
])
def test_bad_plans_are_refused(plan, message):
    with pytest.raises(SkewbenchError, match=f"^las: {message}"):
        las.simulate(FixedPlan(plan), np.array([1, 2, 3]), np.array([0.0, 1.0, 2.0]), np.ones(3),
                     las.LASConfig(tau=1.0))


def test_the_rules_own_checks():
    """Straw-Man needs a usable average, Base Line a drop probability."""
    args = (np.array([1, 2, 3]), np.array([0.0, 1.0, 2.0]), np.ones(3))
    with pytest.raises(SkewbenchError, match=r"^las: wbar must be finite and >= 0, got inf$"):
        sim("sm", *args, las.LASConfig(tau=1.0, wbar=math.inf))
    with pytest.raises(SkewbenchError, match="^las: u must be a number, got nan$"):
        sim("bl", *args, las.LASConfig(tau=1.0, u=math.nan))


def test_a_plan_is_the_rule():
    """The kernel runs what a plan says: a static plan with FK's estimates is FK; dropping a
    tuple outright before CHECK leaves it out of the bound's running average."""
    keys, arr, dur, wbar, _ = zipf_stream(4, m=2000)
    cfg = las.LASConfig(tau=6.4, u=0.25, wbar=wbar)
    fk = sim("fk", keys, arr, dur, cfg, 2)
    same = las.simulate(FixedPlan(las.OperatorPlan(drop=np.zeros(len(keys), bool), check=True, estimates=dur)),
                        keys, arr, dur, cfg, 2)
    for f in ("dropped", "q", "c", "qhat"):
        np.testing.assert_array_equal(getattr(same, f), getattr(fk, f))
    sm = sim("sm", keys, arr, dur, cfg, 2)  # one number for every tuple, or the same number per tuple
    every = las.simulate(FixedPlan(las.OperatorPlan(check=True, estimates=np.full(len(keys), wbar))),
                         keys, arr, dur, cfg, 2)
    for f in ("dropped", "q", "c", "qhat"):
        np.testing.assert_array_equal(getattr(every, f), getattr(sm, f))
    big = dur > np.quantile(dur, 0.9)
    both = las.simulate(FixedPlan(las.OperatorPlan(drop=big, check=True, estimates=dur)), keys, arr, dur, cfg, 2)
    assert both.dropped[big].all() and np.isnan(both.qhat[big]).all()
    assert both.dropped.sum() > big.sum() and both.dropped.sum() < fk.dropped.sum() + big.sum()
