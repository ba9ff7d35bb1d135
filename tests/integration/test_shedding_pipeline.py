"""`skewbench replay shedding` as a user runs it: the command line in process, the Spark job at
local[1] and local[2] (bit-identical), Great Expectations, the report and MLflow (SQLite), and
the errors a user meets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from skewbench.cli import main
from skewbench.datasets.contract import DatasetWriter
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.results import schema

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TIMING = list(schema("shedding").timing_columns)


@pytest.fixture(scope="module")
def las_ds(tmp_path_factory):
    d = tmp_path_factory.mktemp("ds") / "las"
    spec = StreamSpec.from_dict({"generator": "zipf", "n_keys": 512, "seed": 3,
                                 "phases": [{"tuples": 6000, "alpha": 1.0}],
                                 "cost": {"model": "levels", "levels": 64, "low": 0.1, "high": 6.4}})
    generate(spec, d, name="las-small")
    return d


@pytest.fixture(scope="module")
def part_ds(tmp_path_factory):
    """20 minutes of 4 groups (shares 0.6/0.25/0.13/0.02) with values, one tuple every 0.05 s."""
    d = tmp_path_factory.mktemp("ds") / "part"
    rng = np.random.default_rng(5)
    m = 24000
    keys = rng.choice(4, size=m, p=[0.6, 0.25, 0.13, 0.02]).astype(np.int64)
    mu = np.array([20.0, 50.0, 80.0, 35.0])
    values = np.maximum(rng.normal(mu[keys], 0.5 * mu[keys]), 0.01)
    with DatasetWriter(d, ["seq", "ts", "key", "value"]) as w:
        w.append({"ts": np.arange(m) * 0.05, "key": keys, "value": values})
        w.commit({"kind": "synthetic", "generator": "test", "params": {}, "seed": 5, "n_keys": 4, "name": "part-small",
                  "shedpart_window": {"range_s": 120.0, "slide_s": 60.0}})
    return d


@pytest.fixture(scope="module")
def both_ds(tmp_path_factory):
    """8,000 tuples with costs and values, 4 groups, one every 0.05 s."""
    d = tmp_path_factory.mktemp("ds") / "both"
    rng = np.random.default_rng(6)
    m = 8000
    keys = rng.choice(4, size=m, p=[0.6, 0.25, 0.13, 0.02]).astype(np.int64)
    with DatasetWriter(d, ["seq", "ts", "key", "cost", "value"]) as w:
        w.append({"ts": np.arange(m) * 0.05, "key": keys, "cost": 0.5 + keys * 1.5,
                  "value": np.maximum(rng.normal(20 + 10 * keys, 8), 0.01)})
        w.commit({"kind": "synthetic", "generator": "test", "params": {}, "seed": 6, "n_keys": 4, "name": "both",
                  "shedpart_window": {"range_s": 60.0, "slide_s": 30.0}})
    return d


def _replay(*args, code=0):
    r = CliRunner().invoke(main, ["replay", "shedding", *map(str, args)], catch_exceptions=False)
    assert r.exit_code == code, r.output
    return r


def _tables(d: Path):
    return pq.read_table(d / "summary.parquet"), pq.read_table(d / "series.parquet")


def _env(master: str, tmp: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable, "SKEWBENCH_SPARK_MASTER": master}


def test_operator_and_partition_replays(las_ds, part_ds, tmp_path):
    grid_op = ["--dataset", las_ds, "--strategies", "las,bl,sm,fk,ns", "--provisioning", "75,110", "--seeds", "2",
               "--param", "las.window=128", "--window", "1000"]
    _replay(*grid_op, "--out", tmp_path / "op")
    summary, series = _tables(tmp_path / "op")
    assert summary.num_rows == 5 * 2 * 2
    rows = summary.to_pandas()
    assert set(rows["kind"]) == {"operator"} and rows["imbalance_p50"].isna().all()
    # Full Knowledge never breaks the prefix constraint; no shedding never drops
    assert (rows.loc[rows["strategy"] == "fk", "prefix_violation_share"] == 0).all()
    assert (rows.loc[rows["strategy"] == "ns", "dropped"] == 0).all()
    over = rows[(rows["provisioning"] == 75)]
    assert (over.loc[over["strategy"] == "bl", "dropped_ratio"].between(0.2, 0.3)).all()
    assert series.num_rows == 20 * 6  # 6000 arrivals in windows of 1000

    grid_part = ["--dataset", part_ds, "--strategies", "shedpart,fld,shedpart-ee,shedpart-pkg,pkg-only",
                 "--workers", "2,4", "--seeds", "2"]
    _replay(*grid_part, "--out", tmp_path / "part")
    ps, pser = _tables(tmp_path / "part")
    p = ps.to_pandas()
    assert set(p["kind"]) == {"partition"} and p["dropped"].isna().all()
    assert (p["windows"] == 18).all()  # windows start at multiples of 60 s and end by the last tuple (1199.95 s)
    fld = p[(p["strategy"] == "fld") & (p["workers"] == 4)]
    sp = p[(p["strategy"] == "shedpart") & (p["workers"] == 4)]
    assert (fld["shed_fraction"] == 0).all() and (sp["shed_fraction"] > 0.5).all()
    assert (sp["imbalance_p50"].to_numpy() * 10 < fld["imbalance_p50"].to_numpy()).all()


@pytest.mark.slow  # about 50 s: make slow (make test keeps one standalone-cluster replay, test_cli_replay)
def test_spark_local_and_standalone_cluster_equal_the_process(both_ds, tmp_path, standalone_cluster):
    """One dataset with costs and values, both kinds of strategies: the Spark job at local[2] and on
    the standalone cluster (two 1-core workers) writes the same tables as the in-process replay
    (timings aside)."""
    grid = ["--dataset", both_ds, "--strategies", "las,bl,sm,fk,shedpart,fld,shedpart-pkg", "--provisioning",
            "60,90", "--workers", "2,4", "--seeds", "2", "--param", "las.window=128", "--window", "1000"]
    _replay(*grid, "--out", tmp_path / "local")
    a = _tables(tmp_path / "local")
    assert set(a[0].column("kind").to_pylist()) == {"operator", "partition"}
    for master, out in (("local[2]", "s2"), (standalone_cluster.master_url, "cluster")):
        p2 = subprocess.run([str(BIN / "spark-submit"), "--master", master, str(REPO / "spark_jobs" / "replay.py"),
                             "shedding", *map(str, grid), "--out", str(tmp_path / out)],
                            env=_env(master, tmp_path), capture_output=True, text=True, timeout=600)
        assert p2.returncode == 0, p2.stderr[-3000:]
        b = _tables(tmp_path / out)
        assert a[0].drop_columns(TIMING).equals(b[0].drop_columns(TIMING)), master
        assert a[1].equals(b[1]), master


def test_results_validate_report_and_log(las_ds, part_ds, tmp_path):
    from mlflow import MlflowClient

    from skewbench.present.reports import render_report
    from skewbench.tracking import log_run
    from skewbench.validation.results import validate_results

    _replay("--dataset", las_ds, "--strategies", "las,bl,sm,fk", "--provisioning", "50,75,100", "--param",
            "las.window=128", "--window", "1500", "--out", tmp_path / "op")
    _replay("--dataset", part_ds, "--strategies", "shedpart,fld", "--out", tmp_path / "part")
    for d in ("op", "part"):
        report = validate_results(tmp_path / d)
        assert report.success, report.message()
    html = render_report([tmp_path / "op", tmp_path / "part"], tmp_path / "r.html", "shedding test",
                         plots_dir=tmp_path / "plots")
    pngs = sorted(p.name for p in (tmp_path / "plots").rglob("*.png"))
    for name in ("queueing_vs_underprovisioning.png", "dropped_vs_underprovisioning.png",
                 "imbalance_per_window_V4.png", "error_vs_shed.png"):
        assert name in pngs, pngs
    assert any(n.startswith("queueing_series_P") for n in pngs)
    assert "surrogate" not in Path(html).read_text()  # nothing here claims to be a surrogate
    # two datasets with operator rows: the figure across datasets (the distributions of LAS's E2)
    other = tmp_path / "op2"
    _replay("--dataset", part_ds, "--strategies", "las,bl", "--param", "las.window=128", "--out", other)
    render_report([tmp_path / "op", other], tmp_path / "r2.html", "across", plots_dir=tmp_path / "plots2")
    assert (tmp_path / "plots2" / "shedding-across-datasets" / "queueing_per_dataset_P75.png").exists()

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    logged = log_run([tmp_path / "op", tmp_path / "part"], tracking_uri=uri, run_key="t/1/shedding",
                     run_name="shedding test", tags={}, report=html, plots_dir=tmp_path / "plots")
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment(logged["experiment_id"])
    assert exp.name == "skewbench-shedding"
    assert len(logged["children"]) == 4 * 3 + 2
    child = client.get_run(next(iter(logged["children"].values())))
    assert child.data.params["kind"] in ("operator", "partition")
    histories = {k for k in child.data.metrics if k.startswith("window.")}
    assert histories, child.data.metrics


def test_a_value_strategy_on_a_dataset_without_values(las_ds, tmp_path):
    r = _replay("--dataset", las_ds, "--strategies", "las,shedpart", "--out", tmp_path / "x", code=2)
    assert "value column" in r.output and "--skip-inapplicable" in r.output
    assert not (tmp_path / "x").exists()
    r = _replay("--dataset", las_ds, "--strategies", "las,shedpart", "--skip-inapplicable", "--param",
                "las.window=128", "--out", tmp_path / "y")
    assert "skipping shedpart" in r.output
    assert set(pq.read_table(tmp_path / "y" / "summary.parquet").column("strategy").to_pylist()) == {"las"}


@pytest.mark.parametrize("args,needle", [
    (["--provisioning", "33.5"], "whole percentages"),
    (["--param", "las.epsilon=-1"], "epsilon"),
    (["--param", "las.colour=1"], "unknown parameter"),
    (["--bound", "nan"], "--bound"),
    (["--strategies", "lass"], "lass"),
])
def test_bad_options_fail_with_one_line(las_ds, tmp_path, args, needle):
    r = _replay("--dataset", las_ds, "--out", tmp_path / "o", "--strategies", "las", *args, code=2)
    assert needle in r.output
    assert len([ln for ln in r.output.splitlines() if ln.startswith("error:")]) == 1
    assert not (tmp_path / "o").exists()


def test_json_output_carries_the_issue_columns(las_ds, tmp_path):
    """The --json rows are the results table's rows, and their numbers are right: Base Line's and
    LAS's drops and queueing latency against the plain-Python reference
    (tests/reference/shedding_engine_ref.py) on the same stream and random inputs."""
    from skewbench.datasets.contract import open_dataset
    from skewbench.shedding import las

    from tests.reference import shedding_engine_ref as ref

    r = _replay("--dataset", las_ds, "--strategies", "las,bl", "--param", "las.window=128", "--json",
                "--out", tmp_path / "j")
    doc = json.loads(r.stdout.strip().splitlines()[-1])
    table = {row["strategy"]: row for row in pq.read_table(tmp_path / "j" / "summary.parquet").to_pylist()}
    t = open_dataset(las_ds).read_table(["ts", "key", "cost"])
    ts, keys, cost = (t.column(c).to_pylist() for c in ("ts", "key", "cost"))
    assert sorted(row["strategy"] for row in doc["summary"]) == ["bl", "las"]
    for row in doc["summary"]:
        st = row["strategy"]
        for k in ("dropped", "dropped_ratio", "queueing_latency_mean", "q_over_bound", "provisioning", "seed"):
            assert row[k] == table[st][k], (st, k, row[k], table[st][k])
        ha, hb = las.hash_params(row["seed"], 4)
        warm = {}
        if st == "las":  # the engine's warm-up draw: a bootstrap of the stream (no phases: all of it)
            g = np.random.Generator(np.random.PCG64(np.random.SeedSequence(row["seed"], spawn_key=(0x5A17,))))
            idx = g.integers(0, len(keys), size=max(8 * 128, 4096))
            warm = {"warm_keys": [keys[i] for i in idx], "warm_durations": [cost[i] for i in idx]}
        want, _, _ = ref.operator_cell(st, ts, keys, cost, provisioning=row["provisioning"], tau=row["bound_ms"],
                                       window=4000, coins=las.bl_coins(row["seed"], len(keys)).tolist(),
                                       hash_a=ha.tolist(), hash_b=hb.tolist(),
                                       params={"window": 128} if st == "las" else {}, **warm)
        assert (row["dropped"], row["dropped_ratio"]) == (want["dropped"], want["dropped_ratio"]), st
        assert row["queueing_latency_mean"] == pytest.approx(want["queueing_latency_mean"], rel=1e-9), st
        assert row["q_over_bound"] == pytest.approx(want["q_over_bound"], rel=1e-9), st
    # Base Line drops at the under-provisioning rate u = 1 - 75/100, within 4 standard deviations
    bl = table["bl"]
    assert abs(bl["dropped_ratio"] - 0.25) <= 4 * (0.25 * 0.75 / bl["tuples"]) ** 0.5, bl["dropped_ratio"]


def test_csv_ingested_with_cost_and_value_columns(tmp_path):
    """A user's own CSV: --cost-column feeds the operator shedders, --value-column ShedPart."""
    rng = np.random.default_rng(8)
    n = 6000
    keys = rng.choice(6, size=n, p=[0.5, 0.2, 0.1, 0.1, 0.05, 0.05])
    lines = ["t,user,ms,amount"] + [f"{i * 0.1:.1f},u{k},{0.5 + k:.2f},{rng.normal(10 + k, 2):.3f}"
                                    for i, k in enumerate(keys)]
    (tmp_path / "events.csv").write_text("\n".join(lines) + "\n")
    r = CliRunner().invoke(main, ["datasets", "ingest", "csv", str(tmp_path / "events.csv"), "--key-column", "user",
                                  "--time-column", "t", "--cost-column", "ms", "--value-column", "amount", "--out",
                                  str(tmp_path / "ds")], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    _replay("--dataset", tmp_path / "ds", "--strategies", "las,fk,shedpart,fld", "--param", "las.window=64",
            "--range", "60", "--slide", "30", "--out", tmp_path / "out")
    rows = pq.read_table(tmp_path / "out" / "summary.parquet").to_pandas().set_index("strategy")
    assert rows.loc["fk", "prefix_violation_share"] == 0 and rows.loc["las", "dropped"] > 0
    assert rows.loc["shedpart", "windows"] == 18 and rows.loc["shedpart", "range_s"] == 60.0
    assert rows.loc["shedpart", "imbalance_p50"] < rows.loc["fld", "imbalance_p50"]
    assert rows.loc["fld", "data"] == "trace: csv"


def test_drop_optimality_reaches_validation_the_report_and_mlflow(las_ds, tmp_path):
    """Every operator strategy gets the offline optimum on the same prefix (skewbench.shedding.optimum):
    in the results, through Great Expectations, in the report's table and as MLflow metrics/params."""
    import pandas as pd
    from mlflow import MlflowClient

    from skewbench.present.reports import render_report
    from skewbench.shedding import optimum
    from skewbench.tracking import log_run
    from skewbench.validation.results import validate_results

    _replay("--dataset", las_ds, "--strategies", "las,bl,sm,fk,ns", "--param", "las.window=128", "--out", tmp_path / "op")
    assert validate_results(tmp_path / "op").success
    df = pq.read_table(tmp_path / "op" / "summary.parquet").to_pandas().set_index("strategy")
    assert set(df["opt_status"]) == {"optimal"} and set(df["opt_goal"]) == {"avg"}
    assert set(df["opt_window"]) == {optimum.WINDOW} and df["opt_dropped"].nunique() == 1  # one prefix for all
    opt = int(df["opt_dropped"].iloc[0])
    assert opt > 0 and df.loc["fk", "window_dropped"] >= opt and df.loc["ns", "window_dropped"] == 0
    assert pd.isna(df.loc["ns", "drop_optimality"])  # kept everything where the optimum drops some
    assert df.loc["fk", "drop_optimality"] == pytest.approx(opt / df.loc["fk", "window_dropped"])
    html = render_report([tmp_path / "op"], tmp_path / "r.html", "opt", plots_dir=tmp_path / "plots")
    assert "drop opt" in Path(html).read_text()
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    logged = log_run([tmp_path / "op"], tracking_uri=uri, run_key="t/2/shedding", run_name="opt", tags={},
                     report=html, plots_dir=tmp_path / "plots")
    client = MlflowClient(tracking_uri=uri)
    runs = [client.get_run(r) for r in logged["children"].values()]
    by = {r.data.params["strategy"]: r.data for r in runs}
    assert by["fk"].metrics["drop_optimality"] == pytest.approx(df.loc["fk", "drop_optimality"])
    assert by["las"].metrics["opt_dropped"] == opt and by["fk"].params["opt_status"] == "optimal"
    assert "drop_optimality" not in by["ns"].metrics  # null: not logged
