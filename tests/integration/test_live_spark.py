"""``skewbench live --engines spark`` on a real Spark: a 300-tuple Zipf stream (z = 1.4, 1,000
keys), 8 ms of sleep per tuple, 4 workers, grouping strategies KG, PKG, SG and Spark SQL's own
partitioner, the latter also natively (``repartition(4, key)``).

* every phase's records per worker equal the strategy's loads as the replay computes them
  (``skewbench.grouping.engine.replay`` on the same dataset: an account of the decisions apart
  from the live run's own), and Spark SQL's native repartition ran the ``spark-sql`` loads;
* the measured throughput against the predicted one: their ratios' median within
  :data:`THROUGHPUT_MEDIAN`, each phase's within :data:`THROUGHPUT_EACH`;
* the JSON output carries the documented columns, and ``--out`` holds the same object in
  ``live.json``, put in place by a rename (a new file, not the old one rewritten).

The run is a process of its own: the live engine needs ``local[4]`` (a task slot per worker) and a
process's SparkContext keeps the master it started with, while the session of
``tests/conftest.py`` is ``local[2]`` and shared by the other files of this pytest worker.  One
run (about 20 s here, a Spark start-up included) serves every test.
"""

from __future__ import annotations

import json

import pytest

from tests.live_common import (ROW_FIELDS, assert_ratios, live_json, live_subprocess, replay_loads, rows_by,
                               zipf_dataset)

pytestmark = pytest.mark.spark

P = 4
TUPLES = 300
COST_MS = 8
STRATEGIES = ("kg", "pkg", "sg", "spark-sql")
#: measured over predicted throughput: their median over the phases, and each phase's. Measured
#: here (2 cores, load 4-6 from other sessions' work) over 9 runs, 4 of them with a CPU burner on
#: one core: medians 0.95-1.06, phases 0.86-1.07 (the lowest: Spark's staggered task starts, the
#: native phase's shuffle before its tasks most of all; the highest: a calibration whose tasks
#: started 78 ms apart, a delay the prediction then adds to every phase). In one burner run the
#: calibration itself was disturbed (6 ms of overhead per tuple instead of 0.1) and every ratio was
#: 1.6-1.8: a prediction made from a wrong calibration, which these bands fail
THROUGHPUT_MEDIAN = (0.90, 1.10)
THROUGHPUT_EACH = (0.75, 1.15)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return zipf_dataset(tmp_path_factory.mktemp("live-spark") / "zipf", 1.4, 1000, TUPLES, seed=1)


@pytest.fixture(scope="module")
def spark_run(dataset, tmp_path_factory):
    """The run, with ``--out`` holding an earlier ``live.json``: (process, out, that file's inode)."""
    out = tmp_path_factory.mktemp("live-spark-out")
    (out / "live.json").write_text('{"rows": []}')
    inode = (out / "live.json").stat().st_ino
    done = live_subprocess([dataset, "--engines", "spark", "--workers", P, "--tuples", TUPLES, "--cost", COST_MS,
                            "--strategies", ",".join(STRATEGIES), "--json", "--out", out],
                           env={"SKEWBENCH_SPARK_MASTER": "local[*]"})  # local[P] for the run, whatever CI sets
    return done, out, inode


def test_every_phase_ran_the_strategys_loads(spark_run, dataset):
    result = live_json(spark_run[0])
    routed, native = rows_by(result, "spark"), rows_by(result, "spark", "native")
    assert sorted(routed) == sorted(STRATEGIES) and sorted(native) == ["spark-sql"]
    for name in STRATEGIES:
        want = replay_loads(dataset, name, P)
        assert routed[name]["subtask_records"] == want, name
        assert routed[name]["tuples_executed"] == TUPLES and routed[name]["routing_exact"] is True
    assert native["spark-sql"]["subtask_records"] == replay_loads(dataset, "spark-sql", P)
    assert len({tuple(r["subtask_records"]) for r in routed.values()}) == len(STRATEGIES)  # the loads tell them apart


@pytest.mark.slow  # timing: make reproduce runs it alone, with nothing beside it (the routing checks stay in make test)
@pytest.mark.timing
def test_measured_throughput_is_the_predicted(spark_run):
    result = live_json(spark_run[0])
    assert_ratios(result["rows"], "throughput_ratio", THROUGHPUT_MEDIAN, THROUGHPUT_EACH, result["overheads"])
    for r in result["rows"]:
        assert r["throughput_ratio"] == pytest.approx(r["throughput_measured"] / r["throughput_predicted"], rel=1e-12)


def test_the_json_output_has_the_documented_fields(spark_run):
    result = live_json(spark_run[0])
    assert set(result) == {"rows", "agreement", "overheads", "stream", "seconds"}
    for r in result["rows"]:
        assert set(ROW_FIELDS) <= set(r), set(ROW_FIELDS) - set(r)
        assert (r["engine"], r["workers"], r["family"]) == ("spark", P, "grouping")
        assert r["throughput_measured"] > 0 and r["throughput_predicted"] > 0
        # Spark is batch: every tuple is there when the stage starts, so no latency at a rate
        assert r["latency_p99_measured_ms"] is None and r["latency_p99_predicted_ms"] is None
        assert r["makespan_measured_s"] > 0 and len(r["task_seconds"]) == P
    assert result["stream"]["tuples"] == TUPLES and result["stream"]["cost_model"] == f"fixed {COST_MS} ms"
    assert set(result["overheads"]) == {"spark"}
    agreement = {a["metric"]: a for a in result["agreement"]}
    assert agreement["throughput"]["strategies"] == len(STRATEGIES)
    assert "latency_p99_ms" not in agreement


def test_out_holds_the_result_put_in_place_by_a_rename(spark_run):
    done, out, earlier_inode = spark_run
    result = live_json(done)
    assert sorted(p.name for p in out.iterdir()) == ["live.json"]  # no staged file left, no engine files
    assert json.loads((out / "live.json").read_text()) == result
    assert (out / "live.json").stat().st_ino != earlier_inode
