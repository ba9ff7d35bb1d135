"""``skewbench live --engines spark`` on a real Spark: a 120-tuple Zipf stream (z = 1.4, 1,000
keys), 40 ms of sleep per tuple, 4 workers, grouping strategies KG, PKG, SG and Spark SQL's own
partitioner (``spark-sql``, which on Spark runs natively: ``repartition(4, key)``), every phase
a batch stage run three times between two calibration stages.

* every phase's records per worker equal the strategy's loads as the replay computes them
  (``skewbench.grouping.engine.replay`` on the same dataset: an account of the decisions apart
  from the live run's own), and Spark SQL's native repartition ran the ``spark-sql`` loads;
* the JSON output carries the documented fields: per row the medians over the repetitions with
  their minimum and maximum (``throughput_measured``, ``_min``, ``_max``; ``makespan_measured_s``,
  ...), ``repeat``, both calibrations; the prediction is the FIFO model's with the calibrated
  per-record overhead; ``--out`` holds the same object in ``live.json``, put in place by a rename
  (a new file, not the old one rewritten);
* measured against predicted (throughput and makespan): their ratios' median within
  :data:`MEDIAN_BAND`, each phase's within :data:`EACH_BAND`, and the repetitions' spread within
  :data:`SPREAD` (the bands: see there).

Why 40 ms a tuple: the run refuses a calibration whose per-record overhead moved by more than 25%
of the larger of itself and a tenth of the cost between before and after (Flink's rule; or whose
workers are more than 2x apart). Spark's overhead here is 0.1-0.25 ms (a sleeping task's
wake-up) and moves by up to 0.07 ms between two stages on a quiet machine, more on a busy one: a
neighbour on the other core moved it by 0.19 ms in CI (0.357 ms before, 0.165 after), which at
40 ms (1 ms of tolerance, 2.5% of the cost: no prediction moves more) passes. Under the earlier
rule of 1% of the cost, 8 ms a tuple was refused in 2 of 9 pairs of calibration stages with
nothing else running and in 10 of 11 beside another busy process. A run the calibration refuses
runs again (:func:`live_measured`, at most three runs in all): the refusal is the run's
documented answer to a busy machine (a pytest-xdist worker beside it), not what these tests check.

The run is a process of its own: the live engine needs ``local[4]`` (a task slot per worker) and a
process's SparkContext keeps the master it started with, while the session of
``tests/conftest.py`` is ``local[2]`` and shared by the other files of this pytest worker.  One
run (about 42 s here, a Spark start-up included) serves every test.
"""

from __future__ import annotations

import json

import pytest

from tests.live_common import (ROW_FIELDS, assert_ratios, live_json, live_measured, replay_loads, rows_by,
                               zipf_dataset)

#: all in make reproduce's timing part, alone: the run their fixture makes serves the timing check
#: and the loads' and fields' checks at once (in make test as well, it ran twice in CI: 72 s of
#: make test's work for checks the timing part's run makes anyway)
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timing]

P = 4
TUPLES = 120
COST_MS = 40
REPEAT = 3
STRATEGIES = ("kg", "pkg", "sg", "spark-sql")
#: measured over predicted, throughput and makespan: their median over the phases, each phase's,
#: and each phase's repetitions' range (max - min) over their median. Measured here (2 cores) in
#: 13 runs of this configuration, 8 with nothing else running and 5 beside the unit tests on the
#: other core: every ratio 0.9915-1.0086, medians 0.9973-1.0027, ranges at most 0.9%; and in 8 runs
#: at 30 ms on 160 tuples: ratios 0.9946-1.0054, ranges at most 3.0%. The bands leave about three
#: times the ratios' largest deviation (what a busier machine adds), while a prediction 3% off (a
#: calibration 1.2 ms a tuple wrong, a load off by one tuple in 30) fails them
MEDIAN_BAND = (0.98, 1.02)
EACH_BAND = (0.97, 1.03)
SPREAD = 0.05


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return zipf_dataset(tmp_path_factory.mktemp("live-spark") / "zipf", 1.4, 1000, TUPLES, seed=1)


@pytest.fixture(scope="module")
def spark_run(dataset, tmp_path_factory):
    """The run, with ``--out`` holding an earlier ``live.json``: (process, out, that file's inode,
    the calibration's refusals before it)."""
    out = tmp_path_factory.mktemp("live-spark-out")
    (out / "live.json").write_text('{"rows": []}')
    inode = (out / "live.json").stat().st_ino
    done, refusals = live_measured([dataset, "--engines", "spark", "--workers", P, "--spark-tuples", TUPLES,
                                    "--cost", COST_MS, "--repeat", REPEAT, "--strategies", ",".join(STRATEGIES),
                                    "--json", "--out", out],
                                   env={"SKEWBENCH_SPARK_MASTER": "local[*]"})  # local[P] for the run, whatever CI sets
    return done, out, inode, refusals


def test_every_phase_ran_the_strategys_loads(spark_run, dataset):
    result = live_json(spark_run[0])
    routed, native = rows_by(result, "spark"), rows_by(result, "spark", "native")
    # spark-sql models Spark's own partitioner: on Spark it runs natively, not routed
    assert sorted(routed) == ["kg", "pkg", "sg"] and sorted(native) == ["spark-sql"]
    for name, row in [*routed.items(), *native.items()]:
        want = replay_loads(dataset, name, P)
        assert row["subtask_records"] == row["decided_records"] == want, name
        assert row["tuples_executed"] == TUPLES and row["routing_exact"] is True
    loads = [tuple(r["subtask_records"]) for r in result["rows"]]
    assert len(set(loads)) == len(STRATEGIES)  # the loads tell the strategies apart


def test_the_json_output_has_the_documented_fields(spark_run):
    result = live_json(spark_run[0])
    assert set(result) == {"rows", "agreement", "calibrations", "stream", "seconds", "restarts"}
    assert result["restarts"] == [] and set(result["seconds"]) == {"spark"}
    cal = result["calibrations"]
    assert set(cal) == {"spark"} and set(cal["spark"]) == {"before", "after"}
    for when in ("before", "after"):
        c = cal["spark"][when]
        assert len(c["overhead_per_worker_ms"]) == P and c["tuples"] >= 200
        assert 0 < c["overhead_ms"] < COST_MS / 2  # the calibration's own refusal: over half the cost
    assert len(result["rows"]) == len(STRATEGIES)
    for r in result["rows"]:
        assert set(ROW_FIELDS) <= set(r), set(ROW_FIELDS) - set(r)
        assert (r["engine"], r["workers"], r["family"], r["job"], r["repeat"]) == ("spark", P, "grouping",
                                                                                 "batch stage", REPEAT)
        assert r["calibration_before"] == cal["spark"]["before"] and r["calibration_after"] == cal["spark"]["after"]
        assert r["overhead_ms"] == cal["spark"]["before"]["overhead_ms"]
        # Spark is batch: every tuple is there when the stage starts, so no rate and no latency
        assert r["rate"] is None and r["latency_p99_measured_ms"] is None and r["latency_p99_predicted_ms"] is None
        assert len(r["task_seconds"]) == P and max(r["task_seconds"]) == pytest.approx(r["makespan_measured_s"],
                                                                                       rel=0.02)
        for col in ("throughput_measured", "makespan_measured_s"):
            assert 0 < r[f"{col}_min"] <= r[col] <= r[f"{col}_max"], (col, r)
        # medians of three: the median throughput is the tuples over the median makespan
        assert r["throughput_measured"] == pytest.approx(TUPLES / r["makespan_measured_s"], rel=1e-9)
        assert r["throughput_measured_min"] == pytest.approx(TUPLES / r["makespan_measured_s_max"], rel=1e-9)
        # the FIFO model: the largest load, each tuple its cost plus the calibrated overhead
        assert r["makespan_predicted_s"] == pytest.approx(max(r["decided_records"]) * (COST_MS + r["overhead_ms"])
                                                          / 1000.0, rel=1e-9)
        assert r["throughput_predicted"] == pytest.approx(TUPLES / r["makespan_predicted_s"], rel=1e-9)
        assert r["throughput_ratio"] == pytest.approx(r["throughput_measured"] / r["throughput_predicted"], rel=1e-12)
        assert r["makespan_ratio"] == pytest.approx(r["makespan_measured_s"] / r["makespan_predicted_s"], rel=1e-12)
    assert result["stream"]["cost_model"] == f"fixed {COST_MS} ms" and result["stream"]["workers"] == P
    agreement = {a["metric"]: a for a in result["agreement"]}
    assert set(agreement) == {"throughput", "makespan_s"}  # no latency on a batch stage
    assert all(a["engine"] == "spark" and a["strategies"] == len(STRATEGIES) for a in agreement.values())


def test_measured_is_the_predicted(spark_run):
    result = live_json(spark_run[0])
    context = {"calibrations": result["calibrations"], "refusals": spark_run[3]}
    assert_ratios(result["rows"], "throughput_ratio", MEDIAN_BAND, EACH_BAND, context)
    assert_ratios(result["rows"], "makespan_ratio", MEDIAN_BAND, EACH_BAND, context)
    for r in result["rows"]:
        for col in ("throughput_measured", "makespan_measured_s"):
            spread = (r[f"{col}_max"] - r[f"{col}_min"]) / r[col]
            assert spread <= SPREAD, (r["strategy"], col, spread, context)
    # both rank the strategies alike: the loads are far enough apart for 30 ms tuples
    assert {a["metric"]: a["kendall_tau"] for a in result["agreement"]} == {"throughput": 1.0, "makespan_s": 1.0}


def test_out_holds_the_result_put_in_place_by_a_rename(spark_run):
    done, out, earlier_inode, _ = spark_run
    result = live_json(done)
    assert sorted(p.name for p in out.iterdir()) == ["live.json"]  # no staged file left, no engine files
    assert json.loads((out / "live.json").read_text()) == result
    assert (out / "live.json").stat().st_ino != earlier_inode
