"""The best balance a grouping strategy's constraint allows (skewbench.grouping.optimum): known
answers against brute force, and on real replays of every strategy: never above what the
strategy reached (balance_optimality in (0, 1])."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from skewbench.datasets.generators import StreamSpec, generate
from skewbench.grouping import engine
from skewbench.grouping.optimum import _choices, best_max_load
from skewbench.grouping.base import hash_seeds


def _bits(n_keys: int, sets: list[set[int]]) -> np.ndarray:
    b = np.zeros((n_keys, 1), dtype=np.uint64)
    for k, s in enumerate(sets):
        for w in s:
            b[k, 0] |= np.uint64(1) << np.uint64(w)
    return b


def test_whole_keys_equals_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(20):
        c = rng.integers(1, 40, size=7)
        n = 3
        brute = min(max(np.bincount(a, weights=c, minlength=n)) for a in itertools.product(range(n), repeat=len(c)))
        val, basis = best_max_load("kg", c, _bits(7, [{0}] * 7), n, 0)
        assert basis == "whole keys: optimum" and val * c.sum() == pytest.approx(brute)


def test_split_over_own_choices_equals_the_subset_formula():
    """Fractional split over each key's two hash choices: the optimum is max over worker subsets S
    of (tuples of keys whose choices lie in S) / |S|."""
    rng = np.random.default_rng(4)
    for seed in range(10):
        n, k = 4, 9
        c = rng.integers(1, 50, size=k)
        s = hash_seeds(seed, 2)
        cand = np.empty((k, 2), dtype=np.int64)
        _choices(np.arange(k, dtype=np.int64), s[0], s[1], np.int64(n), cand)
        best = max(sum(c[i] for i in range(k) if set(cand[i]) <= set(S)) / len(S)
                   for r in range(1, n + 1) for S in itertools.combinations(range(n), r))
        val, basis = best_max_load("pkg", c, _bits(k, [set(x) for x in cand]), n, seed)
        assert basis == "split over own 2 choices: LP optimum" and val * c.sum() == pytest.approx(best)
        # a key sent outside its two choices may go anywhere: the bound can only fall
        spread, basis2 = best_max_load("dc", c, _bits(k, [set(range(n))] + [set(x) for x in cand[1:]]), n, seed)
        assert "1 head keys over any worker" in basis2 and spread <= val + 1e-12


def test_any_split_is_m_over_n():
    assert best_max_load("sg", np.array([5, 3]), _bits(2, [{0}, {1}]), 4, 0) == (0.25, "any split over all workers: m/n")


def test_every_strategy_at_or_under_its_best(tmp_path):
    d = tmp_path / "z"
    generate(StreamSpec.zipf(1.4, 2000, 30000, 7), d, name="z")
    cells = engine.grid(["kg", "sg", "pkg", "dc", "wc", "rr", "fixed-d", "osg"], [4, 20], [3], [0, 1])
    res = engine.replay(d, cells)
    for row in res.summary:
        assert 0 < row["balance_optimality"] <= 1, row["strategy"]
        assert row["load_max_best"] <= row["load_max"] + 1e-12
    kg = [r for r in res.summary if r["strategy"] == "kg"]
    assert all(r["best_basis"].startswith("whole keys") for r in kg)
    pkg = [r for r in res.summary if r["strategy"] == "pkg"]
    assert all(r["best_basis"] == "split over own 2 choices: LP optimum" for r in pkg)
