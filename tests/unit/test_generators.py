"""Generators: statistical behaviour, cost models, drift, parameter errors."""

from __future__ import annotations

import numpy as np
import pytest

from skewbench.datasets.contract import open_dataset, recompute_fingerprint
from skewbench.datasets.generators import Plan, StreamSpec, generate, parse_cost, zipf_pmf
from skewbench.errors import SkewbenchError


def _keys(spec):
    plan = Plan(spec)
    return np.concatenate([plan.block(b)["key"] for b in range(plan.n_blocks)]), plan


def test_sampled_frequencies_follow_the_exact_pmf():
    n, m = 1000, 400_000
    keys, plan = _keys(StreamSpec.zipf(1.2, n, m, seed=11, block_size=100_000))
    counts = np.bincount(keys, minlength=n)
    p = zipf_pmf(n, 1.2)
    perm = plan.phases[0].perm
    observed = counts[perm] / m  # by rank
    sigma = np.sqrt(p * (1 - p) / m)
    assert np.all(np.abs(observed[:50] - p[:50]) < 5 * sigma[:50])
    # chi-square over the top 100 ranks, rest pooled
    exp = np.concatenate([p[:100], [p[100:].sum()]]) * m
    obs = np.concatenate([counts[perm][:100], [counts[perm][100:].sum()]])
    chi2 = ((obs - exp) ** 2 / exp).sum()
    assert chi2 < 100 + 5 * np.sqrt(200)


def test_key_ids_carry_no_rank_information():
    keys, plan = _keys(StreamSpec.zipf(1.0, 10_000, 10, seed=5))
    perm = plan.phases[0].perm
    assert sorted(perm.tolist()) == list(range(10_000))
    # the hottest ranks are not the smallest ids
    assert not np.array_equal(perm[:10], np.arange(10))
    assert abs(np.corrcoef(np.arange(10_000), perm)[0, 1]) < 0.05


def test_uniform_when_alpha_is_zero():
    keys, _ = _keys(StreamSpec.zipf(0.0, 20, 200_000, seed=2))
    counts = np.bincount(keys, minlength=20)
    assert np.all(np.abs(counts / 200_000 - 0.05) < 5 * np.sqrt(0.05 * 0.95 / 200_000))


def test_constant_and_poisson_arrivals():
    plan = Plan(StreamSpec.zipf(1.0, 10, 5000, seed=1, rate=250.0))
    ts = np.concatenate([plan.block(b)["ts"] for b in range(plan.n_blocks)])
    np.testing.assert_allclose(np.diff(ts), 1 / 250.0, rtol=1e-9)
    assert ts[0] == 0.0
    plan = Plan(StreamSpec.zipf(1.0, 10, 200_000, seed=1, rate=250.0, arrivals="poisson", block_size=30_000))
    ts = np.concatenate([plan.block(b)["ts"] for b in range(plan.n_blocks)])
    gaps = np.diff(np.concatenate([[0.0], ts]))
    assert abs(gaps.mean() * 250.0 - 1) < 0.01
    assert abs(gaps.std() / gaps.mean() - 1) < 0.02  # exponential: coefficient of variation 1
    # memorylessness across a block boundary: the gap there is not special
    assert np.all(gaps >= 0)


def test_levels_cost_model_groups_keys_evenly():
    plan = Plan(StreamSpec.zipf(1.0, 4096, 10, seed=3, cost={"model": "levels", "levels": 64, "low": 1, "high": 64}))
    table = plan.cost_table
    values, counts = np.unique(table, return_counts=True)
    np.testing.assert_allclose(values, np.arange(1, 65))
    assert np.all(counts == 64)


def test_phases_change_distribution_rate_and_costs():
    spec = StreamSpec.from_dict({
        "generator": "drifting", "n_keys": 100, "seed": 9,
        "arrivals": {"process": "constant", "rate": 100.0},
        "cost": {"model": "levels", "levels": 4, "low": 1, "high": 4},
        "phases": [{"tuples": 20_000, "alpha": 1.5},
                   {"tuples": 20_000, "alpha": 1.5, "permutation": {"swap": [[1, 2]]}, "rate_factor": 2.0},
                   {"tuples": 20_000, "alpha": 1.5, "permutation": "swap_hot_costliest", "cost_factor": 2.0}]})
    plan = Plan(spec)
    cols = {c: np.concatenate([plan.block(b)[c] for b in range(plan.n_blocks)]) for c in ("ts", "key", "cost")}
    hot = [np.bincount(cols["key"][i * 20_000:(i + 1) * 20_000], minlength=100).argmax() for i in range(3)]
    assert hot[1] == plan.phases[0].perm[1]  # ranks 1 and 2 swapped
    assert plan.cost_table[hot[2]] == plan.cost_table.max()  # the costliest key became the hottest
    np.testing.assert_allclose(np.diff(cols["ts"][20_000:40_000]), 1 / 200.0)
    np.testing.assert_allclose(cols["cost"][40_000:] / plan.cost_table[cols["key"][40_000:]], 2.0)
    meta = plan.metadata("d")
    assert [p["start"] for p in meta["phases"]] == [0, 20_000, 40_000]
    assert "expected_top" not in meta


@pytest.mark.parametrize("bad,match", [
    ({"alpha": -1}, "alpha"), ({"n_keys": 0}, "keys"), ({"tuples": 0}, "tuples"),
    ({"rate": 0}, "rate"), ({"seed": -1}, "seed"),
])
def test_bad_parameters_are_clear_errors(bad, match):
    args = {"alpha": 1.0, "n_keys": 10, "tuples": 10, "seed": 1, "rate": 1.0} | bad
    with pytest.raises(SkewbenchError, match=match):
        StreamSpec.zipf(**args)


BAD_MODEL = r"': use constant:V, uniform:LO:HI, levels:N:LO:HI or values:V1,V2,\.\.\. \(milliseconds\)$"


@pytest.mark.parametrize("text,error", [
    ("constant:1", None), ("uniform:0.1:6.4", None), ("levels:64:1:64", None), ("values:1,2,3", None),
    ("levels:64:1", "^bad cost model 'levels:64:1" + BAD_MODEL),
    ("constant:-1", r"^cost values must be numbers > 0 ms, got -1\.0$"),
    ("uniform:5:1", r"^cost low 5\.0 > high 1\.0$"),
    ("gauss:1", "^bad cost model 'gauss:1" + BAD_MODEL),
    ("values:", "^bad cost model 'values:" + BAD_MODEL),
])
def test_parse_cost(text, error):
    if error is None:
        assert parse_cost(text)["model"] == text.split(":")[0]
    else:
        with pytest.raises(SkewbenchError, match=error):
            parse_cost(text)


def test_generate_writes_a_complete_dataset_and_refuses_to_clobber(tmp_path):
    spec = StreamSpec.zipf(1.0, 100, 5000, seed=4, block_size=1000, cost={"model": "constant", "value": 2.0})
    meta = generate(spec, tmp_path / "d", name="d")
    ds = open_dataset(tmp_path / "d")
    assert meta["tuples"] == 5000 and len(ds.files) == 5 and ds.columns == ["seq", "ts", "key", "cost"]
    assert recompute_fingerprint(ds) == meta["fingerprint"]
    assert meta["expected_top"][0]["p"] == pytest.approx(zipf_pmf(100, 1.0)[0])
    with pytest.raises(SkewbenchError, match="already exists"):
        generate(spec, tmp_path / "d")
    again = generate(spec, tmp_path / "d", overwrite=True)
    assert again["fingerprint"] == meta["fingerprint"]
    other = generate(StreamSpec.zipf(1.0, 100, 5000, seed=5, block_size=1000), tmp_path / "e")
    assert other["fingerprint"] != meta["fingerprint"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "e"]  # no staging leftovers


def test_failed_generation_leaves_nothing(tmp_path, monkeypatch):
    import skewbench.datasets.generators as g

    calls = {"n": 0}
    real = g.write_part

    def flaky(*a, **k):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("disk full")
        return real(*a, **k)

    monkeypatch.setattr(g, "write_part", flaky)
    with pytest.raises(OSError, match="^disk full$"):
        generate(StreamSpec.zipf(1.0, 10, 5000, seed=1, block_size=1000), tmp_path / "x")
    assert list(tmp_path.iterdir()) == []


def test_fingerprint_known_answers():
    """The fingerprint of two fixed five-tuple streams, pinned: a change of the lane hash, the
    lane seeds, the combination or the digest text changes every dataset's identity (and the
    nightly trend's cell keys), so it must show up here first.  Splitting the stream anywhere
    gives the same lanes."""
    from skewbench.datasets.contract import combine_partials, fingerprint_digest, fingerprint_partial

    cols = {"seq": np.arange(5, dtype=np.int64), "ts": np.array([0.0, 0.001, 0.002, 0.5, 1.25]),
            "key": np.array([3, 1, 4, 1, 5], dtype=np.int64)}
    lanes = fingerprint_partial(cols)
    assert lanes == (0x0F30173DF6AA8251, 0x3B75CACCA84FCB5F)
    for cut in range(6):
        parts = [fingerprint_partial({c: v[:cut] for c, v in cols.items()}),
                 fingerprint_partial({c: v[cut:] for c, v in cols.items()})]
        assert combine_partials(parts) == lanes
    assert fingerprint_digest(lanes, ["seq", "ts", "key"]) == "354d440c00616bcf82d11329740932c2"
    with_cost = {**cols, "cost": np.array([1.0, 2.0, 0.5, 6.4, 0.1])}
    assert fingerprint_digest(fingerprint_partial(with_cost), ["seq", "ts", "key", "cost"]) == \
        "4d1dd466d4fe8602736333c197f8933e"


def test_first_and_last_value_are_the_stream_ends(tmp_path):
    """Dataset.first_value / last_value (one small read each) equal the ends of a full read, over
    several parts; the shedding window check reads the time span this way."""
    generate(StreamSpec.zipf(1.0, 100, 4500, seed=2, block_size=1000), tmp_path / "d")
    ds = open_dataset(tmp_path / "d")
    assert len(ds.files) == 5
    for c in ("seq", "ts", "key"):
        full = ds.read_table([c]).column(c).to_numpy()
        assert (ds.first_value(c), ds.last_value(c)) == (float(full[0]), float(full[-1]))
    assert ds.last_value("seq") == 4499
