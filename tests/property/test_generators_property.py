"""Generators: the numpy implementation equals the plain-Python reference on random specs, and the
contract's invariants hold."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skewbench.datasets.generators import Plan, StreamSpec, zipf_cdf, zipf_pmf
from tests.reference import generators_ref as ref

alphas = st.sampled_from([0.0, 0.3, 0.5, 1.0, 1.4, 2.0, 3.0])


@st.composite
def costs(draw):
    model = draw(st.sampled_from([None, "constant", "uniform", "levels", "values"]))
    if model is None:
        return None
    noise = draw(st.sampled_from([0.0, 0.0, 0.02, 0.5]))
    if model == "constant":
        c = {"model": "constant", "value": draw(st.floats(0.01, 100))}
    elif model == "uniform":
        lo = draw(st.floats(0.01, 10))
        c = {"model": "uniform", "low": lo, "high": lo + draw(st.floats(0, 10))}
    elif model == "levels":
        lo = draw(st.floats(0.01, 10))
        c = {"model": "levels", "levels": draw(st.integers(1, 8)), "low": lo, "high": lo + draw(st.floats(0, 64))}
    else:
        c = {"model": "values", "values": draw(st.lists(st.floats(0.01, 50), min_size=1, max_size=5))}
    if noise:
        c["noise"] = noise
    return c


@st.composite
def specs(draw):
    n = draw(st.integers(1, 40))
    cost = draw(costs())
    perms = ["keep", "new", {"swap": [[1, n]]}, {"reshuffle_top": max(1, n // 2)}]
    if cost is not None:
        perms.append("swap_hot_costliest")
    phases = [{"tuples": draw(st.integers(1, 120)), "alpha": draw(alphas),
               "permutation": draw(st.sampled_from(perms)),
               "rate_factor": draw(st.sampled_from([0.5, 1.0, 3.0])),
               "cost_factor": draw(st.sampled_from([1.0, 2.0]))}
              for _ in range(draw(st.integers(1, 3)))]
    return StreamSpec.from_dict({
        "generator": "drifting" if len(phases) > 1 else "zipf", "n_keys": n, "seed": draw(st.integers(0, 2**40)),
        "phases": phases, "block_size": draw(st.integers(1, 64)),
        "arrivals": {"process": draw(st.sampled_from(["constant", "poisson"])),
                     "rate": draw(st.sampled_from([0.5, 10.0, 1000.0]))},
        "cost": cost})


def _all(plan: Plan) -> dict[str, np.ndarray]:
    blocks = [plan.block(b) for b in range(plan.n_blocks)]
    return {c: np.concatenate([b[c] for b in blocks]) for c in blocks[0]}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs())
def test_numpy_generator_equals_reference(spec):
    got = _all(Plan(spec))
    want = ref.generate(spec)
    assert len(got["seq"]) == len(want) == spec.tuples
    assert got["seq"].tolist() == [r[0] for r in want]
    assert got["key"].tolist() == [r[2] for r in want]
    np.testing.assert_array_equal(got["ts"], np.array([r[1] for r in want]))
    if spec.cost is not None:
        np.testing.assert_array_equal(got["cost"], np.array([r[3] for r in want]))
    else:
        assert "cost" not in got


@settings(max_examples=150, deadline=None)
@given(specs())
def test_contract_invariants(spec):
    cols = _all(Plan(spec))
    m = spec.tuples
    assert np.array_equal(cols["seq"], np.arange(m))
    assert np.all(np.diff(cols["ts"]) >= 0)
    assert np.all(cols["ts"] >= 0)
    assert cols["key"].min() >= 0 and cols["key"].max() < spec.n_keys
    if spec.cost is not None:
        assert np.all(cols["cost"] > 0)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 3000), st.floats(0, 4))
def test_pmf_matches_reference_and_is_a_finite_zipf(n, alpha):
    p = zipf_pmf(n, alpha)
    np.testing.assert_allclose(p, ref.pmf(n, alpha), rtol=1e-12, atol=0)
    assert math.isclose(p.sum(), 1.0, rel_tol=1e-12)
    assert np.all(np.diff(p) <= 0)
    k = np.arange(1, n + 1)
    # p_1 / p_k = k^alpha exactly (up to rounding)
    np.testing.assert_allclose(p[0] / p, k ** alpha, rtol=1e-9)
    if alpha == 0:
        np.testing.assert_allclose(p, 1.0 / n, rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(specs(), st.data())
def test_blocks_are_independent_of_generation_order(spec, data):
    """Blocks drawn in a random order (some twice) equal the blocks of a fresh plan drawn in
    stream order: no state carries from one block to the next (what lets Spark tasks generate
    any blocks in any order)."""
    in_order = Plan(StreamSpec.from_dict(spec.to_dict()))
    want = [in_order.block(b) for b in range(in_order.n_blocks)]
    plan = Plan(spec)
    order = data.draw(st.permutations(range(plan.n_blocks)))
    order = order + order[: data.draw(st.integers(0, len(order)))]
    for b in order:
        got = plan.block(b)
        assert set(got) == set(want[b])
        for col in got:
            np.testing.assert_array_equal(got[col], want[b][col])


def test_reference_catches_a_wrong_kernel():
    """The comparison above can fail: perturb the kernel's cdf and the reference disagrees."""
    spec = StreamSpec.zipf(1.0, 50, 2000, 3, block_size=512)
    plan = Plan(spec)
    plan.phases[0].cdf = zipf_cdf(zipf_pmf(50, 1.1))  # a subtly wrong distribution
    got = np.concatenate([plan.block(b)["key"] for b in range(plan.n_blocks)])
    want = [r[2] for r in ref.generate(spec)]
    assert got.tolist() != want
