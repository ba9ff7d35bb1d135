"""Generation on a real local Spark: identical output whatever the partitioning."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from skewbench.datasets.contract import open_dataset, recompute_fingerprint
from skewbench.datasets.generators import StreamSpec, generate, zipf_pmf
from skewbench.errors import SkewbenchError
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


def test_a_refused_target_leaves_nothing(spark, tmp_path):
    bad = tmp_path / "ro"
    bad.mkdir()
    spec = StreamSpec.zipf(1.0, 10, 1000, 1, block_size=100)
    generate_on_spark(spark, spec, bad / "ok", partitions=2)
    with pytest.raises(SkewbenchError, match="already exists"):
        generate_on_spark(spark, spec, bad / "ok", partitions=2)
    assert sorted(p.name for p in bad.iterdir()) == ["ok"]


def _spark_python_workers() -> list:
    """The Python worker processes Spark forked from its daemon (not the daemon itself)."""
    import psutil

    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if "pyspark.daemon" in " ".join(p.info["cmdline"] or []) and \
                    "pyspark.daemon" in " ".join(p.parent().cmdline()):
                out.append(p)
        except (psutil.Error, AttributeError):
            pass
    return out


def test_a_task_killed_mid_generation_fails_the_job_and_leaves_nothing(spark, tmp_path):
    """A Spark task's Python worker is killed (SIGKILL) while it writes its blocks: local mode
    does not retry, so the job fails, and the staged parts are removed: no dataset, no staging
    directory.  The same generation then succeeds."""
    import signal
    import threading
    import time

    spec = StreamSpec.zipf(1.0, 1000, 60_000_000, 1)
    out = tmp_path / "killed"
    result: dict = {}

    def run() -> None:
        try:
            generate_on_spark(spark, spec, out, partitions=2)
        except BaseException as e:  # noqa: BLE001 - the job's failure is the point
            result["error"] = e

    before = {p.pid for p in _spark_python_workers()}
    th = threading.Thread(target=run)
    th.start()
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and th.is_alive() and time.monotonic() < deadline:
        busy = [p for p in _spark_python_workers() if p.pid not in before or p.cpu_percent(0.2) > 50]
        staged = [d for d in tmp_path.iterdir() if d.name.startswith(".killed.tmp-")]
        if busy and staged and any(p.name.startswith("part-") for p in staged[0].iterdir()):  # a part is written
            busy[0].send_signal(signal.SIGKILL)
            killed = busy[0].pid
        time.sleep(0.05)
    th.join(600)
    assert killed is not None, "no busy Spark worker found to kill"
    assert "error" in result, "the job succeeded although a task's worker was killed"
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    small = StreamSpec.zipf(1.0, 1000, 100_000, 1)
    assert generate_on_spark(spark, small, out, partitions=2)["tuples"] == 100_000
