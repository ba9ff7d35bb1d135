"""The shedding family's workloads: valid, deterministic datasets with the documented shapes;
surrogates built from the real samples say so."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from skewbench.datasets.contract import open_dataset, recompute_fingerprint
from skewbench.errors import SkewbenchError
from skewbench.shedding import workloads as wl

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
GCM = [SHARED / "google-cluster" / f"task_event_{i}_10000.csv" for i in (1, 2, 3)]
DEBS = [SHARED / "debs2015" / "frequent_route_compact_ride_10000.csv"]
SMALL = {
    "las_tweets": ({"tuples": 200_000}, []),
    "syn_zipf": ({"tuples_per_window": 4000, "windows": 4}, []),
    "syn_burst": ({"tuples_per_window": 2000, "windows": 70}, []),
    "syn_debs_like": ({"windows": 3}, []),
    "gcm_surrogate": ({"hours": 36, "events_per_hour": 4000}, GCM),
    "debs_surrogate": ({"windows": 3}, DEBS),
}


def _make(name, tmp, seed=1, **over):
    params, inputs = SMALL[name]
    if not all(p.exists() for p in inputs):
        pytest.skip(f"real sample absent: {inputs[0]}")
    out = tmp / f"{name}-{seed}"
    meta = getattr(wl, name)(out, params={**params, **over}, seed=seed, inputs=inputs, name=name)
    return out, meta


@pytest.mark.parametrize("name", list(SMALL))
def test_valid_deterministic_and_strict(name, tmp_path):
    out, meta = _make(name, tmp_path)
    ds = open_dataset(out)
    assert recompute_fingerprint(ds) == meta["fingerprint"] and meta["generator"] == f"workload:{name}"
    ts = ds.read_table(["ts"]).column("ts").to_numpy()
    assert np.all(np.diff(ts) >= 0)
    again = _make(name, tmp_path / "again")[1]
    other = _make(name, tmp_path, seed=2)[1]
    assert again["fingerprint"] == meta["fingerprint"] != other["fingerprint"]
    with pytest.raises(SkewbenchError, match="colour"):
        getattr(wl, name)(tmp_path / "bad", params={"colour": 1}, seed=1, inputs=SMALL[name][1])
    assert not (tmp_path / "bad").exists()
    if name in ("gcm_surrogate", "debs_surrogate", "las_tweets"):
        assert "not the paper" in meta["surrogate_of"]


def test_las_tweets_calibration(tmp_path):
    _, meta = _make("las_tweets", tmp_path, seed=2)
    s = meta["source_stats"]
    # las.spec.md A24: mean 9.7 ms, P(w = 1) = 0.36, about 110 distinct costs, max about 152 ms
    assert abs(s["mean_cost"] - 9.7) <= 0.6 and abs(s["p_cost_1"] - 0.36) <= 0.03
    assert 80 <= s["distinct_costs"] <= 130 and 90 <= s["max_cost"] <= 200


def test_syn_burst_has_its_burst(tmp_path):
    out, _ = _make("syn_burst", tmp_path)
    t = open_dataset(out).read_table(["ts", "key"])
    ts, key = t.column("ts").to_numpy(), t.column("key").to_numpy()
    per_slide = np.bincount((ts[key == 0] // 1800).astype(int))
    assert per_slide[55] > 8 * per_slide[20]


def test_gcm_surrogate_follows_the_sample(tmp_path):
    out, meta = _make("gcm_surrogate", tmp_path)
    real = {}
    for p in GCM:
        for row in csv.reader(open(p)):
            if len(row) == 13 and row[9] and row[0] not in ("0", str(2**63 - 1)):
                real.setdefault(int(row[7]), set()).add(float(row[9]))
    t = open_dataset(out).read_table(["ts", "key", "value"])
    key, val, ts = (t.column(c).to_numpy() for c in ("key", "value", "ts"))
    assert set(np.unique(key)) <= {0, 1, 2, 3}
    for c in range(4):
        assert set(np.unique(val[key == c])) <= real[c]
    calm = (ts < 40 * 1800) | (ts >= 70 * 1800)
    shares = np.bincount(key[calm], minlength=4) / calm.sum()
    assert np.allclose(shares, meta["source_stats"]["class_shares"], atol=0.02)
    assert meta["shedpart_window"] == {"range_s": 3600.0, "slide_s": 1800.0}


def test_debs_surrogate_fares_vary_within_routes(tmp_path):
    out, meta = _make("debs_surrogate", tmp_path)
    t = open_dataset(out).read_table(["key", "value"])
    key, val = t.column("key").to_numpy(), t.column("value").to_numpy()
    top = np.bincount(key).argsort()[-10:]
    for k in top:
        assert np.std(val[key == k]) > 0
    assert meta["source_stats"]["routes"] > 1000 and meta["n_keys"] >= 10_000
