"""LAS (las.spec.md): the numba simulation equals the plain-Python reference, and the property
tests of the spec's section 7 that a simulator can check."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skewbench.errors import SkewbenchError
from skewbench.shedding import las
from tests.reference import las_ref as ref

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=25)


def zipf_keys(rng, m, n, alpha):
    p = np.arange(1, n + 1, dtype=np.float64) ** (-alpha)
    cdf = np.cumsum(p) / p.sum()
    return np.minimum(np.searchsorted(cdf, rng.random(m), side="right"), n - 1).astype(np.int64)


def levels(rng, n, nw=64, lo=0.1, hi=6.4):
    vals = lo + np.arange(nw) * (hi - lo) / (nw - 1)
    t = np.empty(n)
    t[rng.permutation(n)] = vals[(np.arange(n) * nw) // n]
    return t


def workload(seed, m=2000, n=64, alpha=1.0, u=0.25):
    rng = np.random.default_rng(seed)
    keys = zipf_keys(rng, m, n, alpha)
    dur = levels(rng, n)[keys]
    wbar = dur.mean()
    arr = np.arange(m) * (1 - u) * wbar
    return keys, arr, dur, wbar


def run(kind, keys, arr, dur, seed=0, **kw):
    cfg_keys = {"tau", "epsilon", "delta", "window", "mu", "inflation", "literal_clock", "literal_sync", "goal", "u",
                "wbar"}
    cfg = las.LASConfig(**{k: v for k, v in kw.items() if k in cfg_keys})
    extra = {k: v for k, v in kw.items() if k not in cfg_keys}
    return las.simulate(kind, keys, arr, dur, cfg, seed, **extra)


def same(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and bool(np.all((np.isnan(a) & np.isnan(b)) | (np.abs(a - b) <= 1e-9)))


@settings(**SETTINGS)
@given(seed=st.integers(0, 10_000), kind=st.sampled_from(las.KINDS), u=st.sampled_from([-0.2, 0.0, 0.3, 0.7]),
       tau=st.sampled_from([0.0, 2.0, 6.4, 50.0]), N=st.sampled_from([8, 32, 64]),
       mu=st.sampled_from([0.05, 0.5, math.inf]), warm=st.booleans(), literal_clock=st.booleans(),
       literal_sync=st.booleans(), goal=st.sampled_from(["avg", "max"]), eps=st.sampled_from([0.05, 0.7]))
def test_kernel_equals_reference(seed, kind, u, tau, N, mu, warm, literal_clock, literal_sync, goal, eps):
    keys, arr, dur, wbar = workload(seed, m=1500, u=u)
    r, _ = las.sketch_shape(eps, 0.1)
    ha, hb = las.hash_params(seed, r)
    coins = np.random.default_rng(seed + 1).random(len(keys))
    wk = keys[::3] if warm else None
    wd = dur[::3] if warm else None
    got = run(kind, keys, arr, dur, seed, tau=tau, epsilon=eps, window=N, mu=mu, literal_clock=literal_clock,
              literal_sync=literal_sync, goal=goal, u=u, wbar=wbar, coins=coins, warm_keys=wk, warm_durations=wd)
    want = ref.simulate(kind, keys, arr, dur, tau=tau, eps=eps, N=N, mu=mu, literal_clock=literal_clock,
                        literal_sync=literal_sync, goal=goal, u=u, wbar=wbar, coins=coins, ha=ha, hb=hb,
                        warm_keys=wk, warm_durations=wd)
    assert list(got.dropped) == want["dropped"]
    assert same(got.q, want["q"]) and same(got.c, want["c"]) and same(got.qhat, want["qhat"])
    assert (got.matrices, got.nop_tuples, got.warm_started) == (want["matrices"], want["nop_tuples"],
                                                                 want["warm_started"])
    assert same(got.deltas, want["deltas"])


@settings(**SETTINGS)
@given(seed=st.integers(0, 10_000), kind=st.sampled_from(las.KINDS), u=st.sampled_from([-0.5, 0.0, 0.5, 0.9]))
def test_bookkeeping(seed, kind, u):
    keys, arr, dur, wbar = workload(seed, u=u)
    t = run(kind, keys, arr, dur, seed, tau=6.4, window=64, u=u, wbar=wbar, warm_keys=keys, warm_durations=dur)
    kept = ~t.dropped
    assert kept.sum() + t.dropped.sum() == len(keys)
    assert np.all(t.q[kept] >= 0) and np.allclose(t.c[kept], t.q[kept] + dur[kept], atol=1e-9)
    start, fin = arr[kept] + t.q[kept], arr[kept] + t.c[kept]
    assert np.all(start[1:] >= fin[:-1] - 1e-9)  # one tuple at a time
    assert math.isclose((fin - start).sum(), dur[kept].sum(), rel_tol=1e-9)


def test_no_shedding_follows_the_lindley_recursion():
    keys, arr, dur, _ = workload(3, m=5000, u=0.1)
    t = run("ns", keys, arr, dur, tau=6.4)
    w = np.zeros(len(keys))
    for i in range(1, len(keys)):
        w[i] = max(0.0, w[i - 1] + dur[i - 1] - (arr[i] - arr[i - 1]))
    assert np.allclose(t.q, w, atol=1e-9)


def test_md1_mean_wait():
    rng = np.random.default_rng(9)
    m, s, rho = 400_000, 1.0, 0.7
    arr = np.cumsum(rng.exponential(s / rho, m))
    t = run("ns", np.zeros(m, dtype=np.int64), arr, np.full(m, s), tau=1.0)
    expected = rho * s / (2 * (1 - rho))
    assert abs(t.q[m // 10:].mean() - expected) / expected < 0.05


@pytest.mark.parametrize("kind", ["sm", "fk", "las"])
def test_unbounded_tau_never_drops(kind):
    keys, arr, dur, wbar = workload(4, u=0.6)
    t = run(kind, keys, arr, dur, tau=math.inf, window=32, wbar=wbar, warm_keys=keys, warm_durations=dur)
    ns = run("ns", keys, arr, dur, tau=math.inf)
    assert not t.dropped.any() and same(t.q, ns.q)
    bl = run("bl", keys, arr, dur, tau=math.inf, u=0.6)
    assert 0.55 < bl.dropped.mean() < 0.65


@pytest.mark.parametrize("kind", ["sm", "fk", "las"])
@pytest.mark.parametrize("tau", [0.0, 1.0])
def test_no_overload_no_drops(kind, tau):
    m, w0 = 3000, 1.0
    keys = np.random.default_rng(1).integers(0, 50, m)
    arr = np.arange(m) * 1.2  # w0 (1 + eps) = 1.05 < 1.2
    t = run(kind, keys, arr, np.full(m, w0), tau=tau, window=32, wbar=w0, warm_keys=keys, warm_durations=np.full(m, w0))
    assert not t.dropped.any() and np.all(t.q == 0)


@settings(**SETTINGS)
@given(seed=st.integers(0, 10_000), u=st.sampled_from([0.0, 0.25, 0.5, 0.9, 0.99]), tau=st.floats(0.0, 100.0))
def test_full_knowledge_is_feasible(seed, u, tau):
    keys, arr, dur, _ = workload(seed, u=u)
    t = run("fk", keys, arr, dur, tau=tau)
    kept = ~t.dropped
    assert np.allclose(t.qhat[kept], t.q[kept], atol=1e-9)  # its estimate is the actual latency
    share, pmax = las.prefix_violations(t.q, t.dropped, tau)
    assert share == 0.0 and pmax <= tau + 1e-9


def test_equal_durations_collapse():
    rng = np.random.default_rng(2)
    m = 4000
    keys = rng.integers(0, 300, m)
    dur = np.full(m, 2.0)
    arr = np.arange(m) * 1.0
    sm = run("sm", keys, arr, dur, tau=6.4, wbar=2.0)
    fk = run("fk", keys, arr, dur, tau=6.4)
    assert np.array_equal(sm.dropped, fk.dropped)
    lz = run("las", keys, arr, dur, tau=6.4, inflation=0.0, window=64, mu=math.inf, warm_keys=keys,
             warm_durations=dur)
    assert lz.warm_started and np.array_equal(lz.dropped, fk.dropped)
    assert len(lz.deltas) > 0 and np.all(np.abs(lz.deltas) <= 1e-9)


def test_exact_sketch_las_equals_full_knowledge():
    rng = np.random.default_rng(5)
    m, n = 6000, 8
    keys = rng.integers(0, n, m)
    dur = (np.arange(n) + 1.0)[keys]
    arr = np.arange(m) * dur.mean() * 0.6
    r, _ = las.sketch_shape(0.05, 0.1)
    ident = dict(hash_a=np.ones(r, dtype=np.int64), hash_b=np.zeros(r, dtype=np.int64))
    lz = run("las", keys, arr, dur, tau=6.4, inflation=0.0, window=64, warm_keys=keys, warm_durations=dur, **ident)
    fk = run("fk", keys, arr, dur, tau=6.4)
    assert np.array_equal(lz.dropped, fk.dropped)
    assert np.all(np.abs(lz.deltas) <= 1e-9)


def test_count_min_bounds():
    rng = np.random.default_rng(6)
    keys = zipf_keys(rng, 5000, 500, 1.0)
    dur = levels(rng, 500)[keys]
    r, c = las.sketch_shape(0.05, 0.1)
    assert (r, c) == (4, 54) and las.sketch_shape(0.70, 0.25) == (2, 4)
    ha, hb = las.hash_params(0, r)
    sk = ref.Sketch(r, c, ha, hb)
    for k, d in zip(keys, dur):
        sk.add(int(k), float(d))
    f = np.bincount(keys, minlength=500)
    for k in np.unique(keys):
        assert all(sk.F[i][sk.col(i, int(k))] >= f[k] for i in range(r))
        e = las._estimate(np.array(sk.F), np.array(sk.W), int(k), ha, hb)
        assert dur.min() - 1e-9 <= e <= dur.max() + 1e-9
        assert math.isclose(e, sk.estimate(int(k)), rel_tol=1e-12)


@settings(**SETTINGS)
@given(seed=st.integers(0, 10_000), kind=st.sampled_from(["sm", "fk", "las"]))
def test_decisions_are_key_blind(seed, kind):
    keys, arr, dur, wbar = workload(seed)
    i = len(keys) // 2
    other = keys.copy()
    other[i] = (keys[i] + 17) % 64
    kw = dict(tau=6.4, window=32, wbar=wbar, warm_keys=keys, warm_durations=dur)
    a = run(kind, keys, arr, dur, seed, **kw)
    b = run(kind, other, arr, dur, seed, **kw)
    assert a.dropped[: i + 1].tolist() == b.dropped[: i + 1].tolist()


@settings(**SETTINGS)
@given(seed=st.integers(0, 10_000), kind=st.sampled_from(["sm", "fk", "las"]), tau=st.floats(0.5, 30.0))
def test_check_invariant(seed, kind, tau):
    keys, arr, dur, wbar = workload(seed, u=0.5)
    t = run(kind, keys, arr, dur, tau=tau, window=32, wbar=wbar, warm_keys=keys, warm_durations=dur)
    est = t.qhat[~np.isnan(t.qhat)]
    if len(est):
        assert np.all(np.cumsum(est) / np.arange(1, len(est) + 1) <= tau + 1e-9)
        assert t.belief <= tau + 1e-9


@pytest.mark.parametrize("u", [-0.3, 0.0, 0.1, 0.5, 0.9])
def test_base_line_statistics(u):
    m = 200_000
    t = run("bl", np.zeros(m, dtype=np.int64), np.arange(m, dtype=float), np.ones(m), 7, tau=1.0, u=u)
    p = max(0.0, u)
    if p == 0:
        assert not t.dropped.any()
    else:
        half = 3.29 * math.sqrt(p * (1 - p) / m)
        assert abs(t.dropped.mean() - p) <= half


def test_operator_protocol():
    keys, arr, dur, _ = workload(8, m=3000, u=-0.5)  # over-provisioned: everything kept and executed
    N = 50
    t = run("las", keys, arr, dur, tau=math.inf, window=N, mu=math.inf)
    executed = 2999  # the last tuple's completion comes after the last arrival
    assert t.matrices == executed // (2 * N) or t.matrices == (executed - 1) // (2 * N)
    assert len(t.deltas) in (t.matrices, t.matrices - 1)  # one sync per shipment (the last may be pending)
    never = run("las", keys, arr, dur, tau=0.0, window=N, mu=-1.0)
    ns = run("ns", keys, arr, dur, tau=0.0)
    assert never.matrices == 0 and never.nop_tuples == len(keys) and same(never.q, ns.q)


def test_guarded_sync_never_corrects_twice():
    """Durations scaled by 3 after a warm start: the shedder under-estimates, syncs overlap in a
    long queue; with the guard the corrected estimate tracks the truth, without it it overshoots."""
    rng = np.random.default_rng(11)
    m, n = 20000, 64
    keys = rng.integers(0, n, m)
    base = (np.arange(n) % 8 + 1.0)[keys]
    arr = np.arange(m) * base.mean() * 1.5
    kw = dict(tau=1e9, window=64, mu=math.inf, warm_keys=keys[:2000], warm_durations=base[:2000])
    guarded = run("las", keys, arr, base * 3, **kw)
    literal = run("las", keys, arr, base * 3, literal_sync=True, **kw)
    kept = ~guarded.dropped
    err_g = np.abs(guarded.qhat[kept] - guarded.q[kept])[-2000:].mean()
    err_l = np.abs(literal.qhat[kept] - literal.q[kept])[-2000:].mean()
    assert err_g < err_l


def test_determinism_and_bad_input():
    keys, arr, dur, wbar = workload(12)
    a = run("las", keys, arr, dur, 3, tau=6.4, window=32, warm_keys=keys, warm_durations=dur)
    b = run("las", keys, arr, dur, 3, tau=6.4, window=32, warm_keys=keys, warm_durations=dur)
    assert np.array_equal(a.dropped, b.dropped) and same(a.q, b.q)
    for bad, needle in ((dict(kind="xx"), "unknown"), (dict(dur=-dur), "durations"), (dict(keys=keys[:5]), "length"),
                        (dict(tau=-1.0), "tau")):
        with pytest.raises(SkewbenchError, match=needle):
            run(bad.get("kind", "las"), bad.get("keys", keys), arr, bad.get("dur", dur), tau=bad.get("tau", 6.4))
