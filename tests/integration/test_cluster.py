"""The Spark standalone cluster on loopback (``skewbench.cluster``, ``make cluster``): it comes up
with its workers registered, refuses to start twice, and stops every daemon it started by process
group.  Replays on it: tests/integration/test_cli_replay.py (every grouping strategy via
spark-submit, identical to local mode and to the in-process engine) and the nightly DAG test
(tests/integration/test_dags.py), whose replays are submitted to it."""

from __future__ import annotations

import json

import pytest

from skewbench import cluster
from skewbench.errors import SkewbenchError

pytestmark = pytest.mark.spark


def test_the_cluster_has_two_alive_one_core_workers_on_loopback(standalone_cluster):
    st = standalone_cluster.status()
    assert st["status"] == "ALIVE" and st["aliveworkers"] == 2 and st["cores"] == 2
    assert standalone_cluster.master_url.startswith("spark://127.0.0.1:")
    assert all(w["host"] == "127.0.0.1" for w in st["workers"])


def test_start_refuses_a_second_cluster_and_stop_ends_every_daemon(tmp_path):
    cl = cluster.start(tmp_path, workers=1, cores=1, memory="512m")
    assert cl.status()["aliveworkers"] == 1
    with pytest.raises(SkewbenchError, match="already"):
        cluster.start(tmp_path, workers=1)
    assert json.loads((tmp_path / "cluster.json").read_text())["master_url"] == cl.master_url
    assert sorted(cluster.stop(tmp_path)) == ["master", "worker-1"]
    assert not any(cluster._alive(pg) for pg in cl.pgids.values())
    assert not (tmp_path / "cluster.json").exists() and cluster.stop(tmp_path) == []
