"""The replay engine against its plain-Python reference, and its determinism on Spark."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest

from skewbench.datasets.contract import open_dataset
from skewbench.datasets.generators import StreamSpec, generate
from skewbench import registry
from skewbench.grouping.engine import cell, ReplayConfig, grid, replay, replay_to_dir
from skewbench.grouping import engine
from skewbench.errors import SkewbenchError
from skewbench.results import read_results, schema
TIMING_COLUMNS = schema("grouping").timing_columns
from tests.reference.engine_ref import replay_ref

M = 6000


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("engine") / "z"
    spec = StreamSpec.zipf(1.2, 300, M, seed=5, rate=900.0, arrivals="poisson", block_size=2500,
                           cost={"model": "levels", "levels": 8, "low": 0.5, "high": 4.0})
    generate(spec, out, name="engine-test")
    return out


def _rows(path):
    t = open_dataset(path).read_table().to_pydict()
    return list(zip(t["seq"], t["ts"], t["key"], t["cost"]))


def engine_cases() -> list[tuple[str, int, int, dict]]:
    """(strategy, workers, sources, parameters) of every grouping strategy: its ``engine_case``
    (:attr:`skewbench.grouping.base.Strategy.engine_case`), one source for a single scheduler."""
    out = []
    for name, (n, s, params) in registry.per_strategy("grouping", "engine_case").items():
        out.append((name, n, 1 if registry.get("grouping", name).single_source else s, params))
    return out


CASES = engine_cases()


@pytest.mark.parametrize("strategy,n,s,params", CASES)
@pytest.mark.parametrize("provisioning", [None, 100.0])
def test_engine_equals_reference(dataset, strategy, n, s, params, provisioning):
    one = cell(strategy, n, s, 3, tuple(sorted(params.items())))
    config = ReplayConfig(window=700, provisioning=provisioning)
    res = replay(dataset, [one], config)
    row = res.summary[0]
    rows = _rows(dataset)
    mean_cost = sum(r[3] for r in rows) / len(rows)
    cls = registry.get("grouping", strategy)
    ref = replay_ref(rows, lambda: cls(n, s, 3, **params), n, s, 700, provisioning, mean_cost)
    assert row["worker_tuples"] == ref["counts"]
    assert row["imbalance"] == pytest.approx(ref["imbalance"], abs=1e-15)
    assert [x["imbalance_cum"] for x in res.series] == pytest.approx(ref["imbalance_cum"], abs=1e-15)
    assert row["imbalance_avg"] == pytest.approx(ref["imbalance_avg"], rel=1e-12)
    assert row["latency_mean"] == pytest.approx(ref["latency_mean"], rel=1e-12)
    assert row["latency_max"] == pytest.approx(ref["latency_max"], rel=1e-12)
    for q in ("latency_p50", "latency_p95", "latency_p99"):
        assert row[q] == pytest.approx(ref[q], rel=1.1e-4), q
    assert row["speedup_vs_rr"] == pytest.approx(ref["speedup_vs_rr"], rel=1e-12)
    assert row["pairs"] == ref["pairs"] and row["replication"] == pytest.approx(ref["replication"])
    assert [x["merge_partials"] for x in res.series] == ref["merge_series"]
    assert row["merge_partials"] == pytest.approx(ref["merge_partials"], rel=1e-12)
    assert row["window_replication"] == pytest.approx(ref["window_replication"], rel=1e-12)
    assert [x["cardinality_imbalance"] for x in res.series] == pytest.approx(ref["cardinality_series"], rel=1e-12)
    assert row["cardinality_imbalance"] == pytest.approx(ref["cardinality_imbalance"], rel=1e-12)
    assert sum(row["worker_tuples"]) == M
    assert row["latency_p50"] <= row["latency_p95"] <= row["latency_p99"] <= row["latency_max"]
    cdf = row["latency_cdf"]
    assert len(cdf) == 101 and cdf[0] == row["latency_min"] and cdf[-1] == row["latency_max"]
    assert cdf == sorted(cdf) and cdf[50] == row["latency_p50"] and cdf[95] == row["latency_p95"]
    assert row["latency_min"] >= 0.5 - 1e-12  # completion >= execution >= the smallest cost


def test_worker_speed_periods_match_reference(dataset):
    speed = [(0, [1.05, 1.025, 1.0, 0.975, 0.95]), (3000, [0.9, 0.95, 1.0, 1.05, 1.1])]
    config = ReplayConfig(window=1000, provisioning=100.0, worker_speed=speed)
    res = replay(dataset, [cell("pkg", 5, 2, 1), cell("osg", 5, 1, 1, (("window", 64),))], config)
    rows = _rows(dataset)
    mean_cost = sum(r[3] for r in rows) / len(rows)
    for row, (name, s, p) in zip(res.summary, [("pkg", 2, {}), ("osg", 1, {"window": 64})]):
        cls = registry.get("grouping", name)
        from skewbench.grouping.base import WorkerModel
        wm = WorkerModel.periods(5, speed)
        ref = replay_ref(rows, lambda: cls(5, s, 1, worker_model=wm, **p), 5, s, 1000, 100.0, mean_cost, speed)
        assert row["worker_tuples"] == ref["counts"]
        assert row["latency_mean"] == pytest.approx(ref["latency_mean"], rel=1e-12)
        assert row["speedup_vs_rr"] == pytest.approx(ref["speedup_vs_rr"], rel=1e-12)


def _executor(slots):
    def execute(fn, items, description=""):
        return [fn(x) for x in items]

    execute.slots = slots
    return execute


def test_task_grouping_and_batching_do_not_change_results(dataset, monkeypatch):
    """The cells dealt over 1, 3 or 12 replay tasks, and the stream read in blocks of 777
    tuples instead of 2^20: the same bits (each cell's state is carried across blocks)."""
    cells = grid(["pkg", "dc", "osg", "kg"], [4, 9], [3], [0, 1])
    a = replay(dataset, cells, ReplayConfig(window=500))
    b = replay(dataset, cells, ReplayConfig(window=500), _executor(3))
    c = replay(dataset, cells, ReplayConfig(window=500), _executor(12))
    monkeypatch.setattr(engine, "BATCH", 777)
    d = replay(dataset, cells, ReplayConfig(window=500), _executor(2))
    strip = lambda rows: [{k: v for k, v in r.items() if k not in TIMING_COLUMNS} for r in rows]  # noqa: E731
    for other in (b, c, d):
        assert strip(a.summary) == strip(other.summary)
        assert a.series == other.series


def test_balance_only_replay_counts_exactly_as_the_full_one(dataset, monkeypatch):
    """``latency=False`` (``--metrics balance``) skips the queues: every other column, and every
    series column but the completion times, has the full replay's bits; the completion-time
    columns are null; and a task reads no arrival times unless a strategy decides by them (OSG
    does), and the costs, which make the workers' busy times (the capacity)."""
    from skewbench.grouping.schema import LATENCY_SERIES, LATENCY_SUMMARY

    cells = grid(sorted(registry.names("grouping")), [4, 9], [3], [0])
    full = replay(dataset, cells, ReplayConfig(window=500))
    read: list[tuple[str, ...]] = []
    real = engine.Dataset.iter_batches

    def spy(self, columns=None, batch_size=1 << 20):
        read.append(tuple(columns or ()))
        return real(self, columns, batch_size)

    monkeypatch.setattr(engine.Dataset, "iter_batches", spy)
    counted = replay(dataset, cells, ReplayConfig(window=500, latency=False), _executor(len(cells)))
    skip = set(TIMING_COLUMNS) | set(LATENCY_SUMMARY) | {"metrics"}
    for a, b in zip(full.summary, counted.summary):
        assert (a["metrics"], b["metrics"]) == ("all", "balance")
        assert {k: v for k, v in a.items() if k not in skip} == {k: v for k, v in b.items() if k not in skip}
        assert all(b[k] is None for k in LATENCY_SUMMARY)
    assert len(full.series) == len(counted.series)
    for a, b in zip(full.series, counted.series):
        assert {k: v for k, v in a.items() if k not in set(LATENCY_SERIES) | {"metrics"}} == \
            {k: v for k, v in b.items() if k not in set(LATENCY_SERIES) | {"metrics"}}
        assert all(b[k] is None for k in LATENCY_SERIES)
    tasks = sorted(cols for cols in read if "seq" in cols)  # not the pre-pass's reads; one task per cell
    timed = {c.strategy for c in cells if registry.get("grouping", c.strategy).uses_costs}
    assert timed == {"osg", "fk"}
    assert tasks == sorted(("seq", "key", "ts", "cost") if c.strategy in timed else ("seq", "key", "cost")
                           for c in cells)


def test_task_groups_deal_every_cell_once_costliest_first():
    cells = grid(["kg", "sg", "pkg", "dc", "wc", "rr", "osg"], [5], [5], [0])
    assert engine.task_groups(cells, 1) == [list(range(len(cells)))]
    groups = engine.task_groups(cells, 2)
    assert sorted(i for g in groups for i in g) == list(range(len(cells)))
    cost = lambda g, cs=cells: sum(registry.get("grouping", cs[i].strategy).route_cost + 1 for i in g)  # noqa: E731
    # the best of the 2^7 assignments: D-C, W-C and RR (2.05 each) against the others
    assert [[cells[i].strategy for i in g] for g in groups] == [["kg", "sg", "pkg", "osg"], ["dc", "wc", "rr"]]
    assert cost(groups[1]) == pytest.approx(6.15)
    big = grid(["kg", "sg", "pkg", "dc", "wc", "rr", "osg"], [5, 10, 20], [5], [0])  # LPT and local search
    loads = sorted(cost(g, big) for g in engine.task_groups(big, 2))
    assert loads[1] - loads[0] <= 0.1 + 1e-9
    assert len(engine.task_groups(cells, 50)) == len(cells)
    many = grid(["kg", "pkg"], [2, 3, 4, 5], [1], list(range(10)))  # 80 cells
    groups = engine.task_groups(many, 1)
    assert len(groups) == 3 and max(map(len, groups)) <= engine.MAX_CELLS_PER_TASK


@pytest.mark.parametrize("provisioning", [100.0, 110.0])
def test_uniform_costs_make_osg_equal_round_robin(tmp_path, provisioning):
    """osg.spec.md 7.9: with identical costs FK (literal, lowest-index ties) is round robin
    exactly; OSG and OSG-WL differ only through SEND_ALL restarting at instance 0, |speed-up - 1|
    < 0.01 at P = 110%.  At P = 100% (critical load) such a deviation never drains, so only FK is
    checked there."""
    spec = StreamSpec.zipf(1.0, 4096, 30_000, seed=2, cost={"model": "constant", "value": 2.0})
    generate(spec, tmp_path / "u")
    cells = grid(["osg", "fk", "sg"], [5], [1], [0], {"osg": {"variant": ["wl", "literal"]},
                                                     "fk": {"semantics": ["literal", "wl"]}})
    res = replay(tmp_path / "u", cells, ReplayConfig(provisioning=provisioning))
    rows = {(r["strategy"], json.loads(r["params"]).get("variant"), json.loads(r["params"]).get("semantics")): r
            for r in res.summary}
    rr = rows[("sg", None, None)]
    assert rr["speedup_vs_rr"] == 1.0
    assert rows[("fk", "ideal", "literal")]["worker_tuples"] == rr["worker_tuples"]
    assert rows[("fk", "ideal", "literal")]["latency_mean"] == rr["latency_mean"]
    if provisioning > 100:
        assert rows[("fk", "ideal", "wl")]["speedup_vs_rr"] == 1.0
        for variant in ("wl", "literal"):
            assert abs(rows[("osg", variant, None)]["speedup_vs_rr"] - 1) < 0.01


@pytest.mark.parametrize("provisioning", [100.0, 110.0])
def test_uniform_costs_osg_with_continued_rotation_is_round_robin_exactly(tmp_path, provisioning):
    """With resync_start=continue (the resync carriers keep the round-robin rotation) OSG-WL's
    exact estimates reproduce round robin tuple for tuple; the paper's restart at instance 0
    (osg.spec.md A15) shifts the rotation, which at critical load never drains."""
    spec = StreamSpec.zipf(1.0, 4096, 30_000, seed=2, cost={"model": "constant", "value": 2.0})
    generate(spec, tmp_path / "u")
    cells = grid(["osg", "sg"], [5], [1], [0], {"osg": {"resync_start": ["continue", "restart"]}})
    res = replay(tmp_path / "u", cells, ReplayConfig(provisioning=provisioning, window=3000))
    rows = {(r["strategy"], json.loads(r["params"]).get("resync_start")): r for r in res.summary}
    rr, cont = rows[("sg", None)], rows[("osg", "continue")]
    assert json.loads(cont["stats"])["run_index"] > 0  # the protocol did leave round robin
    assert cont["worker_tuples"] == rr["worker_tuples"]
    assert cont["speedup_vs_rr"] == 1.0 and cont["latency_mean"] == rr["latency_mean"]
    by_cell = {}
    for w in res.series:
        by_cell.setdefault(w["cell_id"], []).append(w["worker_tuples_cum"])
    assert by_cell[cont["cell_id"]] == by_cell[rr["cell_id"]]
    if provisioning == 100.0:
        assert rows[("osg", "restart")]["speedup_vs_rr"] < 0.99


def test_grid_errors():
    with pytest.raises(SkewbenchError, match="unknown grouping strategy 'nope'"):
        grid(["kg", "nope"], [5], [1], [0])
    with pytest.raises(SkewbenchError, match="workers"):
        grid(["kg"], [0], [1], [0])
    with pytest.raises(SkewbenchError, match="unknown parameter"):
        grid(["dc"], [5], [1], [0], {"dc": {"colour": [1]}})
    cells = grid(["osg", "kg"], [5], [3, 5], [0])
    assert [(c.strategy, c.sources) for c in cells] == [("osg", 1), ("kg", 3), ("kg", 5)]


def test_results_directory(dataset, tmp_path):
    cells = grid(["kg", "pkg"], [5], [2], [0, 1])
    man = replay_to_dir(dataset, cells, tmp_path / "r", ReplayConfig(window=1000))
    manifest, summary, series = read_results(tmp_path / "r")
    assert manifest["summary_rows"] == 4 == summary.num_rows
    assert series.num_rows == 4 * 6
    assert len(set(summary.column("cell_id").to_pylist())) == 4
    with pytest.raises(SkewbenchError, match="already exists"):
        replay_to_dir(dataset, cells, tmp_path / "r")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


@pytest.mark.spark
def test_spark_replay_is_bit_identical(dataset, spark, tmp_path):
    """Every registered strategy, in process and on Spark with three partitionings; and the
    engines' partitioners on a trace of int64 keys, whose values travel to the Spark tasks."""
    from skewbench.datasets.traces import ingest
    from skewbench.replay import spark_executor

    keys = np.random.default_rng(3).integers(-2**62, 2**62, 400)
    (tmp_path / "k.csv").write_text("key\n" + "".join(f"{k}\n" for k in keys[np.arange(3000) % 400 // 3]))
    ingest("csv", [tmp_path / "k.csv"], tmp_path / "numeric", key_column="key")
    runs = [(dataset, grid(sorted(registry.names("grouping")), [5], [3], [0]), ReplayConfig(window=900,
                                                                                         provisioning=100.0)),
            (tmp_path / "numeric", grid(["kafka", "flink", "spark-hash", "spark-sql"], [5, 8], [2], [0],
                                        {s: {"key_format": ["long", "string"]} for s in ("kafka", "flink")}),
             ReplayConfig(latency=False))]
    for i, (data, cells, config) in enumerate(runs):
        replay_to_dir(data, cells, tmp_path / f"local{i}", config)
        for parts in (None, 3, 1000):  # default (one task per core), few, one cell per task
            replay_to_dir(data, cells, tmp_path / f"spark{i}-{parts}", config, spark_executor(spark, parts),
                          engine_name="spark")
            _, s1, t1 = read_results(tmp_path / f"local{i}")
            _, s2, t2 = read_results(tmp_path / f"spark{i}-{parts}")
            keep = [c for c in s1.column_names if c not in TIMING_COLUMNS]
            assert s1.select(keep).equals(s2.select(keep))
            assert t1.equals(t2)


def test_strategy_statistics_are_those_of_the_active_sources(dataset):
    """Route tasks feed one source each; the cell's statistics must match a whole-stream run's
    (averaged over sources), not be diluted by the task's idle sources."""
    from skewbench.grouping.base import Batch

    res = replay(dataset, [cell("dc", 10, 3, 0)], ReplayConfig())
    stats = json.loads(res.summary[0]["stats"])
    t = open_dataset(dataset).read_table()
    seq = t.column("seq").to_numpy()
    whole = registry.get("grouping", "dc")(10, 3, 0)
    whole.route(Batch(seq, t.column("key").to_numpy(), t.column("ts").to_numpy() * 1000, t.column("cost").to_numpy()))
    per_source = []
    for j in range(3):
        one = registry.get("grouping", "dc")(10, 3, 0)
        sel = seq % 3 == j
        one.route(Batch(seq[sel], t.column("key").to_numpy()[sel], t.column("ts").to_numpy()[sel] * 1000,
                        t.column("cost").to_numpy()[sel]))
        per_source.append(one.summary())
    assert stats["d_final"] == pytest.approx(whole.summary()["d_final"])
    assert stats["head_size_final"] == pytest.approx(np.mean([p["head_size_final"] for p in per_source]))
    assert stats["head_size_final"] == pytest.approx(whole.summary()["head_size_final"])


def test_block_progress_reports_the_share_done():
    msgs: list[str] = []
    cb = engine._block_progress(msgs.append, 10, every=0.0)
    cb(3)
    cb(7)  # the end: no message (the caller says when it is done)
    assert len(msgs) == 1 and msgs[0].startswith("30% of the tuples"), msgs


def test_in_process_replay_reports_progress(dataset, monkeypatch):
    msgs: list[str] = []
    monkeypatch.setattr(engine, "BATCH", 1000)
    real = engine._block_progress
    monkeypatch.setattr(engine, "_block_progress", lambda p, total: real(p, total, every=0.0))
    replay(dataset, [cell("pkg", 4, 2, 0)], ReplayConfig(), progress=msgs.append)
    shares = [int(m.split("%")[0]) for m in msgs if "% of the tuples" in m]
    assert shares and shares == sorted(shares) and 0 < shares[0] and shares[-1] < 100, msgs
