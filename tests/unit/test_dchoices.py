"""D-Choices family: registration, parameter validation, statistics, batch handling."""

from __future__ import annotations

import re

import numpy as np
import pytest

from skewbench.errors import SkewbenchError
from skewbench.grouping.strategies import dchoices
from skewbench.grouping.base import Batch
from skewbench import registry as _registry

REGISTRY = {n: _registry.get("grouping", n) for n in _registry.names("grouping")}

NAMES = ("kg", "sg", "pkg", "dc", "wc", "rr", "fixed-d")
HEAD = ("dc", "wc", "rr", "fixed-d")


def batch(keys, start=0) -> Batch:
    keys = np.asarray(keys, dtype=np.int64)
    seq = np.arange(start, start + len(keys), dtype=np.int64)
    return Batch(seq, keys, np.zeros(len(keys)), np.ones(len(keys)))


def zipf_keys(m=5000, z=1.5, n_keys=300, seed=0):
    rng = np.random.default_rng(seed)
    p = np.arange(1, n_keys + 1, dtype=float) ** -z
    return rng.choice(n_keys, size=m, p=p / p.sum())


def test_registered_with_expected_flags():
    assert {"kg": dchoices.KG, "sg": dchoices.SG, "pkg": dchoices.PKG, "dc": dchoices.DC,
            "wc": dchoices.WC, "rr": dchoices.RR, "fixed-d": dchoices.FixedD}.items() <= REGISTRY.items()
    for name in NAMES:
        cls = REGISTRY[name]
        assert cls.description and not cls.single_source and not cls.uses_costs
        assert cls.seeded == (name != "sg")
    for name in ("kg", "sg", "pkg"):
        assert REGISTRY[name].defaults == {}
    for name in HEAD:
        assert set(REGISTRY[name].defaults) >= {"theta", "eps", "capacity", "refresh", "warmup", "mode"}
    assert REGISTRY["fixed-d"].defaults["d"] == 2
    assert REGISTRY["dc"].defaults["refresh"] == 1000 and REGISTRY["dc"].defaults["warmup"] == 0


@pytest.mark.parametrize("name", HEAD)
@pytest.mark.parametrize("param,value", [
    ("theta", 0), ("theta", -0.1), ("theta", "x"), ("theta", float("nan")), ("theta", True),
    ("eps", -1e-4), ("eps", None), ("capacity", 0), ("capacity", 2.5), ("capacity", "100"),
    ("refresh", 0), ("refresh", 1.5), ("warmup", -1), ("warmup", 0.5), ("mode", "paper"),
    ("mode", None),
])
def test_bad_parameters_are_clear_errors(name, param, value):
    want = {"theta": "a number in (0, inf]", "eps": "a number in [0, inf]", "capacity": "an integer in [1, inf]",
            "refresh": "an integer in [1, inf]", "warmup": "an integer in [0, inf]",
            "mode": "'spec' or 'authors'"}[param]
    with pytest.raises(SkewbenchError, match=f"^{re.escape(f'{name}: {param} must be {want}, got {value!r}')}$"):
        REGISTRY[name](10, 2, 0, **{param: value})


@pytest.mark.parametrize("value", [0, -3, 2.5, "4", None])
def test_fixed_d_needs_a_positive_integer_d(value):
    with pytest.raises(SkewbenchError, match="fixed-d: d must be an integer"):
        dchoices.FixedD(10, 2, 0, d=value)


def test_unknown_parameters_and_bad_topology():
    with pytest.raises(SkewbenchError, match="unknown parameter"):
        dchoices.KG(10, 2, 0, theta=0.1)
    with pytest.raises(SkewbenchError, match="unknown parameter"):
        dchoices.WC(10, 2, 0, d=3)
    with pytest.raises(SkewbenchError, match="workers"):
        dchoices.DC(0, 2, 0)
    with pytest.raises(SkewbenchError, match="sources"):
        dchoices.PKG(4, 0, 0)


def test_describe_params_resolves_derived_values():
    p = dchoices.DC(20, 3, 0).describe_params()
    assert p == {"theta": 1 / 100, "eps": 1e-4, "capacity": 400, "refresh": 1000, "warmup": 0, "mode": "spec"}
    assert dchoices.WC(5, 1, 0).describe_params()["capacity"] == 100  # max(100, ceil(4/theta)) = 100
    assert dchoices.WC(5, 1, 0, mode="authors").describe_params()["capacity"] == 100
    assert dchoices.WC(100, 1, 0, mode="authors").describe_params()["capacity"] == 100
    assert dchoices.WC(100, 1, 0).describe_params()["capacity"] == 2000
    assert dchoices.RR(10, 1, 0, theta=0.3, capacity=7.0).describe_params()["capacity"] == 7
    assert dchoices.FixedD(10, 1, 0, d=4.0).describe_params()["d"] == 4
    assert dchoices.KG(10, 1, 0).describe_params() == {}


@pytest.mark.parametrize("name", HEAD)
def test_summary_and_window_stats(name):
    n, s = 10, 3
    obj = REGISTRY[name](n, s, 1, **({"d": 4} if name == "fixed-d" else {}))
    assert obj.summary()["head_fraction"] == 0.0 and obj.window_stats()["head_size"] == 0.0
    obj.route(batch(zipf_keys()))
    summ = obj.summary()
    assert set(summ) == {"d_final", "d_max", "head_size_final", "head_fraction",
                         "wc_fallback_fraction", "d_refreshes"}
    assert all(isinstance(v, float) for v in summ.values())
    assert 0 < summ["head_fraction"] < 1 and 0 <= summ["wc_fallback_fraction"] <= 1
    assert summ["head_size_final"] >= 1
    stats = obj.window_stats()
    assert set(stats) == {"d_mean", "head_size"}
    assert stats["d_mean"] == summ["d_final"] and stats["head_size"] == summ["head_size_final"]
    want_d = {"wc": n, "rr": n, "fixed-d": 4}.get(name)
    if want_d is not None:
        assert summ["d_final"] == want_d
    else:
        assert 2 <= summ["d_final"] <= n and summ["d_refreshes"] >= 1
    if name != "dc":
        assert summ["wc_fallback_fraction"] == {"wc": 1.0, "rr": 0.0, "fixed-d": 0.0}[name]


def test_dc_d_follows_the_skew():
    low = dchoices.DC(50, 2, 0, refresh=1)
    low.route(batch(zipf_keys(20000, 0.6, 5000)))
    high = dchoices.DC(50, 2, 0, refresh=1)
    high.route(batch(zipf_keys(20000, 2.0, 5000)))
    assert low.summary()["d_final"] < high.summary()["d_final"]
    assert high.summary()["d_final"] > 10
    # near-uniform keys at a small n: no head at all, d never computed
    flat = dchoices.DC(5, 2, 0)
    flat.route(batch(np.random.default_rng(0).integers(0, 10**6, 20000)))
    assert flat.summary()["head_fraction"] < 0.01
    assert flat.summary()["head_size_final"] == 0.0


def test_kg_sg_pkg_have_no_summary():
    for name in ("kg", "sg", "pkg"):
        obj = REGISTRY[name](4, 2, 0)
        obj.route(batch([1, 2, 3]))
        assert obj.summary() == {} and obj.window_stats() == {}
        assert obj.local_loads().sum() == 3


def test_batches_are_validated():
    obj = dchoices.DC(4, 2, 0)
    assert obj.route(batch([])).tolist() == []
    with pytest.raises(SkewbenchError, match="same length"):
        obj.route(Batch(np.arange(3), np.arange(2), np.zeros(3), np.ones(3)))
    with pytest.raises(SkewbenchError, match=">= 0"):
        obj.route(Batch(np.array([-1, 0]), np.array([1, 2]), np.zeros(2), np.ones(2)))
    # int32 / list-like inputs are converted, the output is int64
    b32 = Batch(np.arange(3, dtype=np.int32), np.array([5, 6, 7], dtype=np.int32), np.zeros(3), np.ones(3))
    out = dchoices.PKG(4, 2, 0).route(b32)
    assert out.dtype == np.int64 and ((0 <= out) & (out < 4)).all()


def test_sketch_accessor():
    obj = dchoices.WC(4, 2, 0, capacity=3)
    obj.route(batch([1, 1, 2, 2, 3, 3, 4, 4]))  # source 0 sees 1, 2, 3, 4 and source 1 the same
    assert obj.messages().tolist() == [4, 4]
    assert sum(c for c, _ in obj.sketch(0).values()) == 4 and len(obj.sketch(0)) == 3
    with pytest.raises(SkewbenchError, match="source"):
        obj.sketch(2)


def test_find_optimal_choices_validation_and_helpers():
    assert dchoices.find_optimal_choices([], 10) == 2
    assert dchoices.find_optimal_choices(np.array([0.3, 0.6]), 10) == dchoices.find_optimal_choices([0.6, 0.3], 10)
    assert dchoices.find_optimal_choices([0.9], 10) == 10  # W-C fallback
    with pytest.raises(SkewbenchError, match="mode"):
        dchoices.find_optimal_choices([0.1], 10, mode="x")
    with pytest.raises(SkewbenchError, match="n must be"):
        dchoices.find_optimal_choices([0.1], 0)
    with pytest.raises(SkewbenchError, match="eps must be"):
        dchoices.find_optimal_choices([0.1], 10, eps=-1)
    with pytest.raises(SkewbenchError, match="frequencies"):
        dchoices.find_optimal_choices([0.1, float("nan")], 10)
    assert dchoices.head_probabilities([0.5, 0.1, 0.3, 0.1], 0.1).tolist() == [0.5, 0.3, 0.1, 0.1]
    # known answers worked out by hand from spec 2.6 F1-F14 (b_h = 1 - (1 - 1/n)^(h d), RHS n b (1/n + eps)):
    # two keys of 0.5 on n = 10: at h = 2 the LHS is P_H = 1 and needs 1 <= 1.001 (1 - 0.9^(2d)),
    # i.e. 2d >= ln(1 - 1/1.001) / ln(0.9) = 65.57, d >= 33 > n: W (d = n = 10)
    assert dchoices.oracle_d([0.5, 0.5], 10) == 10
    # one head key of 0.05 on n = 100 (the tail, 0.95 / 1000 each, is below theta = 1/500): F4 starts at
    # d = 5; F9 <= F10 reads 0.05 + 0.95 b^2 <= 1.01 b: d = 5, b = 0.04901: 0.05228 > 0.04950; d = 6,
    # b = 0.05852: 0.05325 <= 0.05911, so d = 6
    assert dchoices.oracle_d([0.05] + [0.95 / 1000] * 1000, 100) == 6
    # two head keys of 0.1 on n = 50 (theta = 1/250; tail 0.8 in keys of 0.0008): P_H = 0.2, P_T = 0.8,
    # F4 starts at d = 5, RHS = 1.005 b_h; h = 1: 0.1 + 0.1 b^d + 0.8 b^2, h = 2: 0.2 + 0.8 b^2 with
    # b_2 = 1 - 0.98^(2d).  d = 7: h = 2 gives 0.24855 > 0.24759; d = 8: h = 1 0.11782 <= 0.14998 and
    # h = 2 0.26103 <= 0.27758, so d = 8 (b_h from h d draws, the tail term and eps all matter here)
    assert dchoices.oracle_d([0.1, 0.1] + [0.0008] * 1000, 50) == 8
    assert dchoices.oracle_d([0.001] * 1000, 10) == 2  # empty head at theta = 1/50
    assert dchoices.expected_distinct_workers(0, 10) == 0.0
    assert dchoices.expected_distinct_workers(1, 10) == pytest.approx(1.0)
