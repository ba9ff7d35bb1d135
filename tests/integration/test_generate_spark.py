"""Generation on a real local Spark: identical output whatever the partitioning."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from skewbench.datasets.contract import open_dataset, recompute_fingerprint
from skewbench.datasets.generators import StreamSpec, generate, zipf_pmf
from skewbench.spark import generate_on_spark

pytestmark = pytest.mark.spark

DRIFT = {
    "generator": "drifting", "n_keys": 500, "seed": 77, "block_size": 4096,
    "arrivals": {"process": "poisson", "rate": 50.0},
    "cost": {"model": "levels", "levels": 8, "low": 0.5, "high": 4.0, "noise": 0.02},
    "phases": [{"tuples": 15_000, "alpha": 1.1},
               {"tuples": 10_000, "alpha": 0.7, "permutation": "swap_hot_costliest", "rate_factor": 2.0},
               {"tuples": 12_345, "alpha": 1.6, "permutation": {"reshuffle_top": 20}, "cost_factor": 1.5}],
}


def test_identical_for_any_partition_count(spark, tmp_path):
    spec = StreamSpec.from_dict(DRIFT)
    local = generate(spec, tmp_path / "local")
    tables = {"local": open_dataset(tmp_path / "local").read_table()}
    for p in (1, 3, 7):
        meta = generate_on_spark(spark, spec, tmp_path / f"p{p}", partitions=p)
        assert meta["fingerprint"] == local["fingerprint"]
        tables[p] = open_dataset(tmp_path / f"p{p}").read_table()
        assert tables[p].equals(tables["local"])
        meta_l = {k: v for k, v in local.items()}
        assert json.dumps(meta, sort_keys=True) == json.dumps(meta_l, sort_keys=True)
    assert recompute_fingerprint(open_dataset(tmp_path / "p3")) == local["fingerprint"]
    # a different seed gives a different fingerprint
    other = generate_on_spark(spark, StreamSpec.from_dict({**DRIFT, "seed": 78}), tmp_path / "o", partitions=3)
    assert other["fingerprint"] != local["fingerprint"]


def test_spark_failure_leaves_nothing(spark, tmp_path):
    bad = tmp_path / "ro"
    bad.mkdir()
    spec = StreamSpec.zipf(1.0, 10, 1000, 1, block_size=100)
    generate_on_spark(spark, spec, bad / "ok", partitions=2)
    with pytest.raises(Exception, match="already exists"):
        generate_on_spark(spark, spec, bad / "ok", partitions=2)
    assert sorted(p.name for p in bad.iterdir()) == ["ok"]
