"""`skewbench replay grouping` as a user runs it, including Spark local mode and a standalone cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from skewbench.datasets.contract import DatasetWriter
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.results import schema
TIMING_COLUMNS = schema("grouping").timing_columns

BIN = Path(sys.executable).parent / "skewbench"
REPO = Path(__file__).resolve().parents[2]


def run(*args, env=None, check=True):
    p = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=900,
                       env={**os.environ, **(env or {})})
    if check and p.returncode != 0:
        raise AssertionError(f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "z"
    generate(StreamSpec.zipf(1.4, 1000, 20_000, 3, cost={"model": "levels", "levels": 4, "low": 1, "high": 4}), out)
    return out


def test_json_output_has_one_row_per_cell_and_seed(dataset, tmp_path):
    p = run("replay", "grouping", "--dataset", dataset, "--strategies", "kg,pkg,osg", "--workers", "5,10",
            "--sources", "3", "--seeds", "2", "--out", tmp_path / "r", "--json")
    d = json.loads(p.stdout)
    rows = d["summary"]
    # kg, pkg: 2 workers x 1 sources x 2 seeds; osg: 2 workers x 2 seeds (single scheduler)
    assert len(rows) == 12
    for r in rows:
        for f in ("strategy", "workers", "sources", "seed", "imbalance", "latency_mean", "latency_p99", "replication"):
            assert f in r
    assert {r["seed"] for r in rows} == {0, 1}
    assert {r["sources"] for r in rows if r["strategy"] == "osg"} == {1}


def test_balance_only_replay_prints_dashes_for_latency_and_validates(dataset, tmp_path):
    """``--metrics balance``: the table shows the balance columns and '-' where a completion time
    would be; the results pass their Great Expectations suites; the JSON rows hold nulls."""
    out = tmp_path / "r"
    p = run("replay", "grouping", "--dataset", dataset, "--strategies", "kg,dc", "--workers", "5",
            "--sources", "3", "--metrics", "balance", "--out", out)
    body = [ln.split() for ln in p.stdout.splitlines() if ln.startswith(("kg ", "dc "))]
    assert len(body) == 2 and all(row[-6:-3] == ["-", "-", "-"] for row in body), p.stdout
    run("results", "validate", out)
    rows = json.loads(run("replay", "grouping", "--dataset", dataset, "--strategies", "kg", "--workers", "5",
                          "--metrics", "balance", "--out", tmp_path / "j", "--json").stdout)["summary"]
    assert rows[0]["metrics"] == "balance" and rows[0]["latency_mean"] is None and rows[0]["imbalance"] > 0
    bad = run("replay", "grouping", "--dataset", dataset, "--metrics", "latency", "--out", tmp_path / "b",
              check=False)
    assert bad.returncode == 2 and "'latency' is not one of 'all', 'balance'" in bad.stderr


@pytest.mark.parametrize("args,needle", [
    (["--strategies", "kg,nope"], "unknown grouping strategy 'nope'"),
    (["--workers", "0"], "workers"),
    (["--workers", "five"], "--workers"),
    (["--param", "dc.theta"], "--param"),
    (["--param", "dc.colour=1", "--strategies", "dc"], "unknown parameter"),
    (["--window", "abc"], "--window"),
])
def test_bad_arguments_exit_2_with_one_line(dataset, tmp_path, args, needle):
    p = run("replay", "grouping", "--dataset", dataset, "--out", tmp_path / "r", *args, check=False)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and needle in lines[0], p.stderr
    assert not (tmp_path / "r").exists()


def test_empty_and_missing_datasets(tmp_path):
    with DatasetWriter(tmp_path / "empty", ["seq", "ts", "key"]) as w:
        w.commit({"kind": "synthetic", "n_keys": 1})
    p = run("replay", "grouping", "--dataset", tmp_path / "empty", "--out", tmp_path / "r", check=False)
    assert p.returncode == 2 and "empty" in p.stderr
    p = run("replay", "grouping", "--dataset", tmp_path / "nope", "--out", tmp_path / "r", check=False)
    assert p.returncode == 2 and "does not exist" in p.stderr


@pytest.mark.slow  # about 45 s with the cluster start: make slow (CI runs it after make test, which must stay under 12 minutes)
@pytest.mark.spark
def test_identical_on_the_standalone_cluster_local_mode_and_in_process(dataset, tmp_path, standalone_cluster):
    """Every grouping strategy: in this process, on Spark local[2] in one task, and submitted with
    spark-submit to the standalone cluster (two 1-core workers) with the cells dealt over 5
    tasks: the same results, bit for bit."""
    strategies = ",".join(s["name"] for s in json.loads(run("strategies", "--family", "grouping", "--json").stdout)["grouping"])
    grid = ["--dataset", dataset, "--strategies", strategies, "--workers", "4,7", "--sources", "3",
            "--provisioning", "100", "--window", "2500"]
    run("replay", "grouping", *grid, "--out", tmp_path / "local")
    run("replay", "grouping", *grid, "--engine", "spark", "--partitions", "1", "--out", tmp_path / "s1",
        env={"SKEWBENCH_SPARK_MASTER": "local[2]"})
    before = {a["id"] for a in standalone_cluster.status()["completedapps"]}
    p = subprocess.run([str(BIN.parent / "spark-submit"), "--master", standalone_cluster.master_url,
                        str(REPO / "spark_jobs" / "replay.py"), "grouping", *map(str, grid), "--partitions", "5",
                        "--out", str(tmp_path / "cluster")],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    apps = [a for a in standalone_cluster.status()["completedapps"] if a["id"] not in before]
    assert len(apps) == 1 and apps[0]["state"] == "FINISHED", apps  # it ran on the cluster's executors
    ref = pq.read_table(tmp_path / "local" / "summary.parquet")
    assert sorted(set(ref.column("strategy").to_pylist())) == sorted(strategies.split(","))
    keep = [c for c in ref.column_names if c not in TIMING_COLUMNS]
    for other in ("s1", "cluster"):
        t = pq.read_table(tmp_path / other / "summary.parquet")
        assert t.select(keep).equals(ref.select(keep)), other
        assert pq.read_table(tmp_path / other / "series.parquet").equals(pq.read_table(tmp_path / "local" / "series.parquet"))
