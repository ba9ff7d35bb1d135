"""ShedPart: the kernel equals the plain-Python reference, the golden worked example of
shedpart.spec.md section 6, and the property tests 1-19 of its section 7."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skewbench import registry
from skewbench.errors import SkewbenchError
from skewbench.shedding import shedpart as sp
from skewbench.shedding.strategies import partition as routing
from tests.reference import shedpart_ref as ref

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
Z2 = sp.z_value(0.95)


# --------------------------------------------------------------------------------------------
# helpers

def zipf_keys(rng, m, n, alpha):
    p = np.arange(1, n + 1, dtype=np.float64) ** (-alpha)
    return rng.choice(n, size=m, p=p / p.sum()).astype(np.int64)


def normal_values(rng, keys, mu, cv):
    return np.maximum(rng.normal(mu[keys], cv * mu[keys]), 0.01)


def uniform_stream(rng, per_unit, units, probs):
    """Keys with the given shares at ``per_unit`` tuples per second over ``[0, units]``."""
    n = int(per_unit * units)
    ts = np.sort(rng.uniform(0.0, units, n))
    ts[-1] = units
    keys = rng.choice(len(probs), size=n, p=np.asarray(probs) / np.sum(probs)).astype(np.int64)
    return ts, keys


#: the routings by the reference's names: each is its strategy's route method
ROUTING = {"fld": "fld", "pkg": "pkg-only", "shuffle": "shuffle-only"}
PARTITIONERS = tuple(ROUTING)


@dataclass(frozen=True)
class Setup:
    """One run's routing strategy and window configuration (reads through to the config)."""

    router: Any
    config: sp.ShedPartConfig

    def __getattr__(self, name):
        return getattr(self.config, name)


def cfg(partitioner="fld", **kw):
    base = dict(range_s=2.0, slide_s=1.0)
    base.update(kw)
    return Setup(registry.get("shedding", ROUTING[partitioner])(), sp.ShedPartConfig(**base))


def replay(ts, keys, values, c, seed=0, **kw):
    return sp.replay(c.router, ts, keys, values, c.config, seed, **kw)


def heavy_groups(d):
    """Alg. 1 input of one window from ``replay(..., details=True)`` (fld routing)."""
    h = np.flatnonzero(d["heavy"])
    return h


def fields_equal(a: sp.Windows, b: sp.Windows, skip=("t_sp_ns", "groups")):
    for name in a.__dataclass_fields__:
        if name in skip:
            continue
        x, y = getattr(a, name), getattr(b, name)
        assert np.array_equal(x, y), name


# --------------------------------------------------------------------------------------------
# kernel == reference

@st.composite
def streams(draw):
    n = draw(st.one_of(st.integers(0, 40), st.integers(40, 240)))
    nk = draw(st.integers(1, 6))
    big = draw(st.booleans())
    steps = draw(st.lists(st.sampled_from([0.0, 0.05, 0.1, 0.25, 0.5]), min_size=n, max_size=n))
    ts = np.cumsum(np.asarray(steps, dtype=np.float64)) + draw(st.sampled_from([0.0, 0.3]))
    ks = draw(st.lists(st.integers(0, nk - 1), min_size=n, max_size=n))
    keys = np.asarray(ks, dtype=np.int64) + (np.int64(1) << 33 if big else 0)
    noise = draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
    base = 10.0 + 7.0 * (keys % 5)
    const = draw(st.booleans())
    values = base + (0.0 if const else 0.5 * np.asarray(noise, dtype=np.float64))
    return ts, keys, values.astype(np.float64)


@st.composite
def configs(draw):
    r, s = draw(st.sampled_from([(1.0, 1.0), (2.0, 1.0), (1.5, 0.5), (1.0, 0.4)]))
    return dict(
        range_s=r, slide_s=s, workers=draw(st.integers(1, 4)),
        error=draw(st.sampled_from([0.0, 0.05, 0.3, 0.3, 1.0, 1.0])),
        confidence=draw(st.sampled_from([0.8, 0.95])),
        z_rule=draw(st.sampled_from(sp.Z_RULES)),
        threshold_g=draw(st.integers(1, 5)),
        precheck=draw(st.sampled_from([0.0, 5.0, 15.0, 100.0])),
        precheck_literal=draw(st.booleans()),
        mode=draw(st.sampled_from(sp.MODES)),
        early_exit=draw(st.booleans()),
        n_min=draw(st.sampled_from([1, 3])),
        partitioner=draw(st.sampled_from(PARTITIONERS)),
        shed=draw(st.booleans()),
        hash_seed=draw(st.integers(0, 3)),
    )


@settings(max_examples=200, **SETTINGS)
@given(streams(), configs())
def test_kernel_equals_reference(stream, kw):
    ts, keys, values = stream
    w = replay(ts, keys, values, cfg(**kw), seed=1, details=True)
    r = ref.run(ts, keys, values, **kw)
    assert len(w) == len(r)
    for i, rw in enumerate(r):
        assert w.window_id[i] == rw["window_id"]
        assert w.start[i] == rw["start"] and w.end[i] == rw["end"]
        assert w.size[i] == rw["size"]
        assert w.loads[i].tolist() == rw["loads"]
        assert w.loads_after[i].tolist() == rw["loads_after"]
        assert bool(w.ran[i]) == rw["ran"]
        assert w.precheck[i] == rw["precheck"]
        assert w.n_groups[i] == rw["n_groups"] and w.n_heavy[i] == rw["n_heavy"]
        d = w.groups[i]
        trim = {int(k): int(s) for k, s in zip(d["key"], d["s"]) if s >= 0}
        black = {int(k) for k, b in zip(d["key"], d["blacklisted"]) if b}
        assert trim == rw["trim_info"]
        assert black == rw["blacklisted"]
        assert w.n_trimmed[i] == len(trim) and w.n_blacklisted[i] == len(black)
        assert d["passes"] == rw["passes"]
        assert w.shed_tuples[i] == sum(rw["loads"]) - sum(rw["loads_after"])


# --------------------------------------------------------------------------------------------
# 7. golden worked example (spec section 6)

GOLDEN = [("A", (0,), 1000, 1000, 10.0, 2.0**2, (1000,)),
          ("B", (1,), 600, 600, 5.0, 5.0**2, (600,)),
          ("C", (1,), 300, 300, 1.0, 3.0**2, (300,)),
          ("D", (2,), 200, 200, 4.0, 2.0**2, (200,))]


def test_golden_worked_example():
    z = 1.959964
    assert sp.sample_size(1000, 1000, 10.0, 4.0, 0.1, z) == 16
    assert sp.sample_size(600, 600, 5.0, 25.0, 0.1, z) == 386
    assert sp.sample_size(300, 300, 1.0, 9.0, 0.1, z) == 3481
    assert sp.sample_size(200, 200, 4.0, 4.0, 0.1, z) == 97
    L = [1000, 900, 200]
    assert round(float(sp.imbalance(L)), 2) == 300.0
    trim, Lp, info = sp.shedpart_window(L, GOLDEN, 0.1, z)
    assert trim == {"A": 16, "B": 386}
    assert Lp.tolist() == [16, 686, 200]
    assert round(float(sp.imbalance(Lp)), 2) == 385.33
    assert info["blacklisted"] == {"C"}
    assert "D" not in info["examined"]
    assert info["examined"] == ["A", "B", "C"]
    assert info["jstar"] == [0, 1, 1] and info["passes"] == 3
    assert max(Lp) == 686 < 1000
    p = sp.precheck_value([g[2:6] for g in GOLDEN], 2100, 0.1, z)
    assert round(p, 2) == 61.95 and p >= 15.0
    # the reference agrees
    GI = {g[0]: g[2:6] for g in GOLDEN}
    R = {g[0]: g[1] for g in GOLDEN}
    rt, rL, rb, rp = ref.shedpart(L, R, GI, {}, 0.1, z, 1)
    assert rt == trim and rL == Lp.tolist() and rb == {"C"} and rp == 3
    # ShedPart-EE stops scanning w1 once it is below w2? (w1 = 686 > 200: B then C, same)
    trim_ee, Lp_ee, _ = sp.shedpart_window(L, GOLDEN, 0.1, z, early_exit=True)
    assert trim_ee == trim and Lp_ee.tolist() == [16, 686, 200]


# --------------------------------------------------------------------------------------------
# 1, 2. zero budget; pre-check off / forced

def _zipf_stream(seed, n=6000, nk=30, alpha=1.0, cv=0.3, units=6.0):
    rng = np.random.default_rng(seed)
    keys = zipf_keys(rng, n, nk, alpha)
    ts = np.sort(rng.uniform(0.0, units, n))
    mu = rng.uniform(10, 100, nk)
    return ts, keys, normal_values(rng, keys, mu, cv)


def test_zero_budget():
    ts, keys, vals = _zipf_stream(1)
    assert sp.sample_size(10**6, 10**6, 5.0, 1.0, 0.0, Z2) == math.inf
    w = replay(ts, keys, vals, cfg(error=0.0, precheck=0.0), details=True)
    assert len(w) > 0 and w.ran.all()
    assert (w.n_trimmed == 0).all() and np.array_equal(w.loads, w.loads_after)
    assert (w.err_max == 0).all() and (w.shed_tuples == 0).all()
    for d in w.groups:
        assert np.array_equal(d["approx"], d["exact"])


@pytest.mark.parametrize("part", PARTITIONERS)
def test_precheck_forced_and_off(part):
    ts, keys, vals = _zipf_stream(2)
    storm = replay(ts, keys, vals, cfg(shed=False, partitioner=part))
    for thr in (100.0, 1000.0):
        w = replay(ts, keys, vals, cfg(precheck=thr, partitioner=part))
        assert not w.ran.any()
        fields_equal(w, storm)
    w0 = replay(ts, keys, vals, cfg(precheck=0.0, partitioner=part))
    assert np.array_equal(w0.ran, w0.size > 0) and w0.ran.all()
    assert (w0.n_trimmed > 0).any()
    # strict comparison: P_w == threshold runs Alg. 1, the next float above skips it
    p = float(w0.precheck[0])
    assert replay(ts, keys, vals, cfg(precheck=p, partitioner=part)).ran[0]
    assert not replay(ts, keys, vals, cfg(precheck=np.nextafter(p, np.inf),
                                             partitioner=part)).ran[0]


# --------------------------------------------------------------------------------------------
# 3. monotone loads; 4. trimmed vs blacklisted (on random replays)

@settings(max_examples=25, **SETTINGS)
@given(st.integers(0, 10**6), st.sampled_from(PARTITIONERS), st.sampled_from(sp.MODES),
       st.integers(1, 5), st.booleans(), st.sampled_from([0.0, 15.0]))
def test_monotone_loads_and_trim_sets(seed, part, mode, V, ee, thr):
    ts, keys, vals = _zipf_stream(seed, n=1500, nk=12, cv=0.4, units=4.0)
    c = cfg(workers=V, partitioner=part, mode=mode, early_exit=ee, precheck=thr)
    w = replay(ts, keys, vals, c, details=True)
    assert (w.loads_after <= w.loads).all() and (w.loads_after >= 0).all()
    assert (w.loads_after.max(1) <= w.loads.max(1)).all()
    assert (w.loads.sum(1) == w.size).all()
    for i, d in enumerate(w.groups):
        trimmed = d["s"] >= 0
        assert not (trimmed & d["blacklisted"]).any()
        assert d["heavy"][trimmed].all() and d["heavy"][d["blacklisted"]].all()
        assert (d["N"][d["heavy"]] >= c.threshold_g).all()
        for t in np.flatnonzero(trimmed | d["blacklisted"]):
            n = sp.sample_size(d["N_est"][t], d["n1"][t], d["mean"][t], d["var"][t],
                               c.error, Z2)
            if trimmed[t]:
                assert 1 <= d["s"][t] < d["N_est"][t] and d["s"][t] == n
            else:
                assert n >= d["N_est"][t]
        assert w.shed_tuples[i] == w.loads[i].sum() - w.loads_after[i].sum()


# --------------------------------------------------------------------------------------------
# 5. termination and structure; 6. order invariance (Alg. 1 on random group sets)

@st.composite
def group_sets(draw):
    V = draw(st.integers(1, 5))
    m = draw(st.integers(0, 12))
    multi = draw(st.booleans())
    groups = []
    for g in range(m):
        if multi:
            R = tuple(sorted(draw(st.sets(st.integers(0, V - 1), min_size=1, max_size=V))))
        else:
            R = (draw(st.integers(0, V - 1)),)
        counts = tuple(draw(st.integers(1, 400)) for _ in R)
        N = sum(counts)
        mean = draw(st.sampled_from([0.0, 1.0, 5.0, 20.0]))
        sd = draw(st.sampled_from([0.0, 0.5, 1.0, 3.0]))
        n1 = draw(st.sampled_from([1, N]))
        groups.append((g, R, N, n1, mean, sd * sd, counts))
    L = [0] * V
    for g in groups:
        for j, c in zip(g[1], g[6]):
            L[j] += c
    extra = draw(st.lists(st.integers(0, 300), min_size=V, max_size=V))
    return [a + b for a, b in zip(L, extra)], groups


@settings(max_examples=200, **SETTINGS)
@given(group_sets(), st.sampled_from([0.05, 0.1, 0.3]), st.booleans(), st.randoms())
def test_termination_structure_order(gs, eps, ee, rnd):
    L, groups = gs
    trim, Lp, info = sp.shedpart_window(L, groups, eps, Z2, early_exit=ee)
    assert info["passes"] <= len(groups) + 1
    assert (Lp <= np.asarray(L)).all()
    black = info["blacklisted"]
    assert not set(trim) & black
    assert set(info["examined"]) == set(trim) | black
    by = {g[0]: g for g in groups}
    for g, s in trim.items():
        assert 1 <= s < by[g][2] and s == sp.sample_size(*by[g][2:6], eps, Z2)
    for g in black:
        assert sp.sample_size(*by[g][2:6], eps, Z2) >= by[g][2]
    final = int(np.argmax(Lp))
    assert info["jstar"][-1] == final
    if not ee:
        on_final = [g[0] for g in groups if final in g[1]]
        assert all(g in trim or g in black for g in on_final)
        if all(len(g[1]) == 1 for g in groups):
            stars = set(info["jstar"])
            assert all(by[g][1][0] in stars for g in trim)
        # 6. order invariance of the literal algorithm
        perm = list(groups)
        rnd.shuffle(perm)
        t2, L2, i2 = sp.shedpart_window(L, perm, eps, Z2, order="given")
        assert t2 == trim and np.array_equal(L2, Lp) and i2["blacklisted"] == black
    # reference (rescanning, no cursors) agrees
    GI = {g[0]: g[2:6] for g in groups}
    R = {g[0]: g[1] for g in groups}
    C = {(g[0], j): c for g in groups for j, c in zip(g[1], g[6])}
    rt, rL, rb, rp = ref.shedpart(L, R, GI, C, eps, Z2, 1, ee)
    assert rt == trim and rL == Lp.tolist() and rb == black and rp == info["passes"]


def test_early_exit_can_differ():
    """ShedPart-EE stops on j* once it is below the runner-up (A7): less shed than literal."""
    groups = [(0, (0,), 1000, 1000, 10.0, 1.0, (1000,)),
              (1, (0,), 900, 900, 10.0, 1.0, (900,)),
              (2, (1,), 950, 950, 1.0, 100.0, (950,))]            # blacklisted
    L = [1900, 950]
    t_lit, L_lit, i_lit = sp.shedpart_window(L, groups, 0.1, Z2)
    t_ee, L_ee, i_ee = sp.shedpart_window(L, groups, 0.1, Z2, early_exit=True)
    assert set(t_lit) == {0, 1} and i_lit["blacklisted"] == {2}
    assert t_ee == {0: 4} and L_ee.tolist() == [904, 950] and i_ee["blacklisted"] == {2}
    assert L_lit.tolist() == [8, 950]


# --------------------------------------------------------------------------------------------
# 8. sample-size formula

def test_sample_size_numbers():
    assert abs(Z2 - 1.959964) < 1e-6
    assert sp.sample_size(10**9, 10**9, 10.0, 100.0, 0.1, Z2) == 385
    assert sp.sample_size(10**9, 100, 10.0, 100.0, 0.1, Z2) == math.ceil(384.146 * 1.02) == 392
    assert sp.sample_size(50, 50, 10.0, 0.0, 0.1, Z2) == 1
    assert sp.sample_size(50, 50, 10.0, 0.0, 0.1, Z2, n_min=30) == 30
    assert sp.sample_size(50, 50, 0.0, 1.0, 0.1, Z2) == math.inf
    assert sp.sample_size(50, 1, 10.0, 1.0, 0.1, Z2) == math.inf
    z1 = sp.z_value(0.95, "one-sided")
    assert abs(z1 - 1.644854) < 1e-6
    raw = lambda z: (1.0 / (0.1 / z) ** 2) * (1 + 2 / 10**9)  # noqa: E731  CV = 1
    assert abs(raw(z1) / raw(Z2) - 0.704) < 1e-3
    assert sp.sample_size(10**9, 10**9, 1.0, 1.0, 0.1, z1) == math.ceil(raw(z1))
    assert sp.sample_size(10**9, 10**9, 1.0, 0.25, 0.1, Z2) == 97
    with pytest.raises(SkewbenchError, match=r"^confidence must be in \(0, 1\), got 1\.0$"):
        sp.z_value(1.0)
    with pytest.raises(SkewbenchError,
                       match=r"^unknown z rule 'three-sided'; expected one of \('two-sided', 'one-sided'\)$"):
        sp.z_value(0.9, "three-sided")


# --------------------------------------------------------------------------------------------
# 9. constant groups; 10. V = 1; 11. shuffle limiting case

def test_constant_groups_trimmed_to_one():
    rng = np.random.default_rng(3)
    n = 3000
    keys = rng.integers(0, 4, n).astype(np.int64)
    ts = np.sort(rng.uniform(0, 5, n))
    vals = np.where(keys == 0, 7.25, 10.0 + rng.normal(0, 1, n))
    w = replay(ts, keys, vals, cfg(precheck=0.0, workers=1), details=True)
    for d in w.groups:
        t = int(np.flatnonzero(d["key"] == 0)[0])
        assert d["s"][t] == 1 and d["m"][t] == 1 and d["err"][t] == 0.0
        assert d["approx"][t] == 7.25


def test_single_worker_pure_shedding():
    ts, keys, vals = _zipf_stream(4, cv=0.2)
    w = replay(ts, keys, vals, cfg(workers=1, precheck=0.0), details=True)
    assert (sp.imbalance(w.loads) == 0).all() and (sp.imbalance(w.loads_after) == 0).all()
    for d in w.groups:
        for t in np.flatnonzero(d["heavy"]):
            n = sp.sample_size(d["N"][t], d["n1"][t], d["mean"][t], d["var"][t], 0.1, Z2)
            assert (d["s"][t] >= 0) == (n < d["N"][t])
    assert w.n_trimmed.sum() > 0


def test_shuffle_limiting_case():
    ts, keys, vals = _zipf_stream(5, cv=0.2)
    w1 = replay(ts, keys, vals, cfg(workers=1, precheck=0.0), details=True)
    for V in (2, 4, 7):
        ws = replay(ts, keys, vals, cfg(workers=V, partitioner="shuffle", precheck=0.0),
                       details=True)
        assert (ws.loads.max(1) - ws.loads.min(1) <= 1).all()
        for a, b in zip(ws.groups, w1.groups):
            assert a["passes"] <= 2
            assert np.array_equal(a["s"] >= 0, b["s"] >= 0) and np.array_equal(a["s"], b["s"])


# --------------------------------------------------------------------------------------------
# 12. statistical coverage

def _coverage(z_rule, seed=6):
    """SYN-Zipf-like, V = 1, tumbling: 16 groups CV 0.2 (n_req 16, N ~ 250) and 4 groups CV 1
    (n_req 386, N ~ 4000) per window, ~100 windows."""
    rng = np.random.default_rng(seed)
    nk = 20
    share = np.r_[np.full(16, 250.0), np.full(4, 4000.0)]
    cv = np.r_[np.full(16, 0.2), np.full(4, 1.0)]
    W = 105
    n = int(share.sum() * W)
    keys = rng.choice(nk, size=n, p=share / share.sum()).astype(np.int64)
    ts = np.sort(rng.uniform(0, W, n))
    mu = rng.uniform(10, 100, nk)
    vals = rng.normal(mu[keys], cv[keys] * mu[keys])
    w = replay(ts, keys, vals, cfg(range_s=1.0, slide_s=1.0, workers=1, precheck=0.0,
                                      z_rule=z_rule), seed=seed)
    return w.trimmed_pairs.sum(), w.covered_pairs.sum() / w.trimmed_pairs.sum(), w


def test_statistical_coverage():
    pairs, cov2, w = _coverage("two-sided")
    assert pairs >= 2000
    assert cov2 >= 0.95 - 0.02
    assert (w.err_mean <= 0.1).all()
    pairs1, cov1, _ = _coverage("one-sided")
    assert pairs1 >= 2000
    assert cov1 < cov2 - 0.02 and cov1 < 0.95 - 0.02


# --------------------------------------------------------------------------------------------
# 13. incremental statistics

@pytest.mark.parametrize("mode", sp.MODES)
def test_welford_and_precheck_sums(mode):
    rng = np.random.default_rng(7)
    n = 4000
    keys = zipf_keys(rng, n, 40, 1.0)
    ts = np.sort(rng.uniform(0, 6, n))
    vals = rng.lognormal(3.0, 0.8, n) + 1e6 * (keys == 1)      # one group with a large offset
    c = cfg(mode=mode, threshold_g=3, precheck=0.0)
    w = replay(ts, keys, vals, c, details=True)
    for i, d in enumerate(w.groups):
        sel = (ts >= w.start[i]) & (ts < w.end[i])
        heavy = []
        for t in np.flatnonzero(d["heavy"]):
            x = vals[sel][keys[sel] == d["key"][t]]
            assert len(x) == d["N"][t]
            x = x[len(x) - d["n1"][t]:]          # paper mode: values after promotion
            assert d["mean"][t] == pytest.approx(np.mean(x), rel=1e-9)
            if len(x) >= 2:
                assert d["var"][t] == pytest.approx(np.var(x, ddof=1), rel=1e-9)
            heavy.append((int(d["N_est"][t]), int(d["n1"][t]), d["mean"][t], d["var"][t]))
        D = sum(h[0] for h in heavy)
        Dh = sum(min(sp.sample_size(*h, 0.1, Z2), h[0]) for h in heavy)
        assert d["d_sum"] == D and d["dhat_sum"] == Dh
        assert w.precheck[i] == sp.precheck_value(heavy, int(w.size[i]), 0.1, Z2)
        assert 0.0 <= w.precheck[i] <= 100.0


# --------------------------------------------------------------------------------------------
# 14. Count-Min and promotion

def test_count_min_and_promotion():
    rng = np.random.default_rng(8)
    keys = zipf_keys(rng, 5000, 3000, 0.7)
    for width, depth in ((sp.CMS_WIDTH, sp.CMS_DEPTH), (13, 2), (1, 1)):
        est = sp.count_min(keys, width, depth)
        true = np.bincount(keys)[keys]
        assert (est >= true).all()
        if width == 1:
            assert (est == len(keys)).all()
    # promotion on the T_g-th tuple (a handful of keys: no collisions in 2719 x 5)
    few = np.arange(6, dtype=np.int64) * 1009
    assert (sp.count_min(few) == 1).all()
    n = 3000
    keys = few[rng.integers(0, 6, n)]
    ts = np.sort(rng.uniform(0, 4, n))
    vals = rng.normal(50, 5, n)
    for tg in (1, 2, 3, 7):
        wp = replay(ts, keys, vals, cfg(mode="paper", threshold_g=tg, precheck=0.0),
                       details=True)
        we = replay(ts, keys, vals, cfg(mode="exact", threshold_g=tg, precheck=0.0),
                       details=True)
        for dp, de in zip(wp.groups, we.groups):
            assert np.array_equal(dp["heavy"], dp["N"] >= tg)
            h = dp["heavy"]
            assert np.array_equal(dp["n1"][h] + tg - 1, dp["N"][h])
            assert np.array_equal(dp["N_est"][h], dp["N"][h])
            assert np.array_equal(de["N_est"][h], de["N"][h])
    # T_g > max N: no heavy hitters, nothing shed
    w = replay(ts, keys, vals, cfg(mode="paper", threshold_g=n + 1, precheck=0.0))
    assert (w.n_heavy == 0).all() and (w.shed_tuples == 0).all()


def test_paper_mode_collisions_match_reference():
    """Thousands of keys per window: Count-Min collisions promote cold groups early, and the
    kernel's sketch (hashing, salts, promotion rule) matches the reference's."""
    rng = np.random.default_rng(14)
    n = 6000
    keys = rng.integers(0, 4000, n).astype(np.int64) * 7919
    ts = np.sort(rng.uniform(0, 3, n))
    ts[0], ts[-1] = 0.0, 3.0                               # windows [0, 2) and [1, 3)
    vals = rng.normal(30, 3, n)
    kw = dict(range_s=2.0, slide_s=1.0, mode="paper", threshold_g=2, precheck=0.0)
    w = replay(ts, keys, vals, cfg(**kw), details=True)
    r = ref.run(ts, keys, vals, **kw)
    assert len(w) == len(r) == 2
    for i, rw in enumerate(r):
        d = w.groups[i]
        assert w.n_heavy[i] == rw["n_heavy"] and w.precheck[i] == rw["precheck"]
        early = d["heavy"] & (d["N_est"] > d["N"])          # promoted by a collision
        assert early.sum() > 10
        assert d["d_sum"] == sum(v[0] for v in rw["GI"].values())
        assert w.loads_after[i].tolist() == rw["loads_after"]


def test_paper_mode_promotion_small():
    """Key 5 at positions 0..4 with T_g = 3: the first two values are not tracked."""
    ts = np.arange(6, dtype=np.float64) * 0.1
    keys = np.array([5, 5, 5, 5, 5, 9], dtype=np.int64)
    vals = np.array([100.0, 200.0, 1.0, 2.0, 3.0, 0.0])
    w = replay(ts, keys, vals, cfg(range_s=0.5, slide_s=0.5, mode="paper", precheck=0.0),
                  details=True)
    d = w.groups[0]
    t = int(np.flatnonzero(d["key"] == 5)[0])
    assert d["n1"][t] == 3 and d["N_est"][t] == 5 and d["mean"][t] == 2.0 and d["var"][t] == 1.0


# --------------------------------------------------------------------------------------------
# 15. sliding windows

@pytest.mark.parametrize("r,s", [(2.0, 1.0), (3.0, 1.0), (1.0, 1.0), (0.9, 0.3)])
def test_sliding_windows(r, s):
    rng = np.random.default_rng(9)
    n = 2000
    ts = np.sort(rng.uniform(0.0, 10.0, n))
    keys = rng.integers(0, 5, n).astype(np.int64)
    vals = rng.normal(10, 1, n)
    w = replay(ts, keys, vals, cfg(range_s=r, slide_s=s))
    k = np.round(w.start / s)
    assert np.array_equal(w.start, w.window_id * s) and np.array_equal(k, w.window_id)
    assert (np.diff(w.window_id) == 1).all() and np.array_equal(w.end, w.start + r)
    assert w.start[0] >= ts[0] and w.start[0] - s < ts[0] and w.end[-1] <= ts[-1]
    assert w.end[-1] + s > ts[-1]
    for i in range(len(w)):
        assert w.size[i] == np.count_nonzero((ts >= w.start[i]) & (ts < w.end[i]))
    assert (w.loads.sum(1) == w.size).all()
    member = ((ts[:, None] >= w.start[None, :]) & (ts[:, None] < w.end[None, :])).sum(1)
    interior = (ts >= w.start[0] + r) & (ts < w.end[-1] - r)
    assert (member[interior] == math.ceil(r / s - 1e-9)).all()
    assert member.sum() == w.size.sum()


def test_validation_errors():
    ts = np.array([0.0, 1.0, 2.0])
    keys = np.array([1, 2, 3])
    vals = np.ones(3)
    for kw, msg in ((dict(range_s=0.0), "range_s must be a positive number, got 0.0"),
                    (dict(slide_s=0.0), "slide_s must be in (0, range_s=2.0], got 0.0"),
                    (dict(slide_s=3.0), "slide_s must be in (0, range_s=2.0], got 3.0"),
                    (dict(error=-0.1), "error must be a number >= 0, got -0.1"),
                    (dict(confidence=1.0), "confidence must be in (0, 1), got 1.0"),
                    (dict(z_rule="x"), "unknown z_rule 'x'; expected one of ('two-sided', 'one-sided')"),
                    (dict(mode="x"), "unknown mode 'x'; expected one of ('exact', 'paper')"),
                    (dict(workers=0), "workers must be an integer >= 1, got 0"),
                    (dict(threshold_g=0), "threshold_g must be an integer >= 1, got 0"),
                    (dict(n_min=0), "n_min must be an integer >= 1, got 0")):
        with pytest.raises(SkewbenchError, match=f"^{re.escape('ShedPartConfig: ' + msg)}$"):
            cfg(**kw)
    c = cfg()
    with pytest.raises(SkewbenchError, match=r"^replay: ts, keys and values differ in length \(3, 2, 3\)$"):
        replay(ts, keys[:2], vals, c)
    with pytest.raises(SkewbenchError, match=r"^replay: ts must be non-decreasing \(event-time order\)$"):
        replay(ts[::-1], keys, vals, c)
    with pytest.raises(SkewbenchError, match=r"^replay: keys must be >= 0$"):
        replay(ts, -keys, vals, c)
    assert len(replay(ts[:0], keys[:0], vals[:0], c)) == 0
    with pytest.raises(SkewbenchError, match=r"^replay: the strategy must have a route method, got object$"):
        sp.replay(object(), ts, keys, vals, c.config)


# --------------------------------------------------------------------------------------------
# 16. FLD emulation

def test_fld_java():
    assert sorted(routing.fld_java(np.arange(4), 4).tolist()) == [0, 1, 2, 3]
    assert sorted(routing.fld_java_str(str(k), 4) for k in range(4)) == [0, 1, 2, 3]
    # by hand: 31 + k for small k; Long.hashCode(2**32) = 1; Long.hashCode(2**31) = -2**31
    assert routing.fld_java(np.arange(4), 4).tolist() == [3, 0, 1, 2]
    assert [routing.fld_java_str(str(k), 4) for k in range(4)] == [3, 0, 1, 2]  # '0' = 48
    assert routing.fld_java(np.array([2**32]), 4)[0] == 32 % 4
    assert routing.fld_java(np.array([2**31]), 7)[0] == (31 - 2**31) % 7
    # Long.MAX_VALUE: 0x7fffffff_ffffffff ^ 0x7fffffff -> low word 0x80000000 = MIN_VALUE
    assert routing.fld_java(np.array([2**63 - 1]), 5)[0] == (31 - 2**31) % 5
    assert routing.fld_java_str("hello", 4) == (31 + 99162322) % 4          # "hello".hashCode()
    assert routing.fld_java_str("polygenelubricants", 7) == (31 - 2**31) % 7  # hashCode = MIN_VALUE
    assert routing.fld_java_str("", 3) == 31 % 3
    assert ref.fld(2**31, 7) == routing.fld_java(np.array([2**31]), 7)[0]


# --------------------------------------------------------------------------------------------
# 17. sampling

def test_sampling():
    n, m = 40, 7
    x = np.random.default_rng(10).lognormal(0, 1, n)
    a = sp.srs_positions(n, m, seed=3, window_id=5, key=11, worker=1)
    assert len(a) == m and len(set(a.tolist())) == m and a.min() >= 0 and a.max() < n
    assert np.array_equal(a, sp.srs_positions(n, m, seed=3, window_id=5, key=11, worker=1))
    assert not np.array_equal(a, sp.srs_positions(n, m, seed=4, window_id=5, key=11, worker=1))
    means = np.array([x[sp.srs_positions(n, m, s, 5, 11, 1)].mean() for s in range(2000)])
    sd = x.std(ddof=1) / math.sqrt(m) * math.sqrt(1 - m / n)
    assert abs(means.mean() - x.mean()) <= 3 * sd / math.sqrt(len(means))
    # inclusion frequencies are flat
    inc = np.zeros(n)
    for s in range(2000):
        inc[sp.srs_positions(n, m, s, 0, 0, 0)] += 1
    assert abs(inc.mean() - 2000 * m / n) < 1e-9 and inc.min() > 0.5 * 2000 * m / n
    # replay: each trimmed group aggregates exactly s_g tuples (sum of the worker shares)
    ts, keys, vals = _zipf_stream(11, cv=0.3)
    for part in ("fld", "pkg", "shuffle"):
        c = cfg(partitioner=part, precheck=0.0)
        w1 = replay(ts, keys, vals, c, seed=5, details=True)
        w2 = replay(ts, keys, vals, c, seed=5, details=True)
        w3 = replay(ts, keys, vals, c, seed=6, details=True)
        fields_equal(w1, w2)
        assert np.array_equal(w1.loads_after, w3.loads_after)
        for d1, d2, d3 in zip(w1.groups, w2.groups, w3.groups):
            assert np.array_equal(d1["approx"], d2["approx"])
            tr = d1["s"] >= 0
            assert tr.any()
            if part == "fld":
                assert np.array_equal(d1["m"][tr], d1["s"][tr])
            assert (d1["m"][tr] >= d1["s"][tr]).all() and (d1["m"][tr] < d1["N"][tr]).all()
            assert not np.array_equal(d1["approx"][tr], d3["approx"][tr])
        assert np.array_equal(w1.loads.sum(1) - w1.shed_tuples,
                              [d["m"].sum() for d in w1.groups])


# --------------------------------------------------------------------------------------------
# 18. DEBS-like skip; 19. burst removal

def test_debs_like_skip():
    rng = np.random.default_rng(12)
    per_unit, units = 7500, 8
    n = per_unit * units
    keys = zipf_keys(rng, n, 10_000, 0.8)
    ts = np.sort(rng.uniform(0, units, n))
    sigma = math.sqrt(math.log(2.0))                     # lognormal CV 1
    vals = rng.lognormal(2.0, sigma, n)
    storm = replay(ts, keys, vals, cfg(shed=False), span=(0.0, units))
    w = replay(ts, keys, vals, cfg(), span=(0.0, units))
    assert len(w) == units - 1 and (np.abs(w.size - 15_000) < 1000).all()
    assert (w.precheck < 15.0).all() and not w.ran.any()
    fields_equal(w, storm)
    assert np.array_equal(sp.imbalance(w.loads_after), sp.imbalance(storm.loads))
    w0 = replay(ts, keys, vals, cfg(precheck=0.0), span=(0.0, units))   # the algorithm would trim a few keys
    assert w0.ran.all() and (w0.shed_tuples < 0.03 * w0.size).all()


def test_burst_removal():
    rng = np.random.default_rng(13)
    shares = np.array([0.6, 0.25, 0.13, 0.02])
    units, per_unit = 80, 500
    ts, keys = uniform_stream(rng, per_unit, units, shares)
    bt = np.sort(rng.uniform(51.0, 66.0, int(per_unit * 0.6 * 9 * 15)))   # key 0 x10
    ts = np.r_[ts, bt]
    keys = np.r_[keys, np.zeros(len(bt), np.int64)]
    o = np.argsort(ts, kind="stable")
    ts, keys = ts[o], keys[o]
    mu = np.array([20.0, 35.0, 50.0, 80.0])
    vals = normal_values(rng, keys, mu, 0.5)
    storm = replay(ts, keys, vals, cfg(shed=False), span=(0.0, units))
    w = replay(ts, keys, vals, cfg(), span=(0.0, units))
    assert w.window_id[0] == 0 and len(w) == units - 1
    burst = (w.window_id >= 50) & (w.window_id <= 65)
    m_storm = storm.loads.max(1)
    assert m_storm[burst].min() > 3 * np.median(m_storm)
    m_sp = w.loads_after.max(1)
    assert (m_sp[burst] <= 2 * np.median(m_sp)).all()
    assert (m_sp <= m_storm).all() and w.ran.all()
