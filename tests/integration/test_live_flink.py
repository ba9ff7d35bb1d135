"""``skewbench live`` on a real Flink (Flink 2.3's runtime from the Flink environment's jars,
``make flink-env``; the Java DataStream job ``skewbench/live/java/LiveJob.java``).

One run serves most tests (``live_rows``, one JVM, a job per phase): a 600-tuple Zipf stream
(z = 1.4, 1,000 keys), 2 ms of sleep per tuple, 4 workers, due at 2,500 tuples/s (125% of the
workers' capacity: every grouping strategy's queues grow, so its p99 is queueing, not noise);
grouping strategies KG, PKG, SG and ``flink`` (also natively, Flink's own ``keyBy`` on Long keys)
and the shedders LAS and BL in front of one operator at 75% provisioning.

* routing: every phase's records per worker equal the strategy's loads as the replay computes
  them (``skewbench.grouping.engine.replay``), Flink's keyBy included; a shedder's on worker 0 only;
* Flink's keyBy on String keys (``key_format="string"``): a second, short JVM with that one native
  phase, whose counts equal the ``flink`` strategy's with that format (and differ from Long's);
* measured against predicted, throughput and p99: the ratios' median over the phases and each
  phase's within the bands below;
* Flink's REST metrics sampled while each job ran;
* a failing job (a phase's cost file cut short) is one line naming the log, which holds the
  cause, and the phases after it never ran; through the command line (a corrupt job jar) nothing
  reaches ``--out``, and without ``--out`` the log it names is kept.

Marked ``slow``: ``make reproduce`` builds the Flink environment and runs them (about a minute);
without it they fail under ``SKEWBENCH_REPRODUCE=full`` and are skipped otherwise.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from skewbench.errors import SkewbenchError
from skewbench.live import decisions as dec
from skewbench.live import flink
from skewbench.live.config import LiveConfig
from skewbench.live.run import live_rows, native_phases
from tests.live_common import assert_ratios, replay_loads, rows_by, zipf_dataset

# timing: measured against predicted throughput and p99; make reproduce runs these alone (beside the
# other pytest worker a calibration taken at a busy moment, 0.38 ms a tuple, put the median at 1.07)
pytestmark = [pytest.mark.slow, pytest.mark.timing]

P = 4
TUPLES = 600
COST_MS = 2.0
RATE = 1.25 * P * 1000.0 / COST_MS
GROUPING = ("kg", "pkg", "sg", "flink")
SHEDDING = ("las", "bl")
#: measured over predicted, their median over the phases and each phase's, from 6 runs of this
#: configuration here (2 cores, load 4-7 from other sessions' work), 3 with a CPU burner on one
#: core. Throughput: medians 0.95-1.00, phases 0.57-1.12 (the lowest, phases a loaded machine
#: stalled: the same phase is within 0.05 of 1 in the other runs). Below 1 as a rule: the
#: calibration takes the median gap between a worker's tuples as the per-tuple overhead (0.09-0.14
#: ms), while their mean, what a backlogged worker accumulates, is 0.2-0.47 ms
THROUGHPUT_MEDIAN = (0.90, 1.05)
THROUGHPUT_EACH = (0.50, 1.25)
#: p99 of the grouping strategies (queue-dominated at this rate) and of BL: medians 0.93-1.25,
#: phases 0.59-2.34 (the highest, a balanced strategy's short queue on a stalled machine). LAS is
#: left out: it keeps its queue at the bound (6.4 ms), a queue at full load whose p99 grows with
#: every per-tuple delay the model lacks (measured 1.2-8.6 x the prediction)
P99_MEDIAN = (0.85, 1.35)
P99_EACH = (0.50, 2.50)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("live-flink")


@pytest.fixture(scope="module")
def dataset(root):
    return zipf_dataset(root / "zipf", 1.4, 1000, TUPLES, seed=1)


@pytest.fixture(scope="module")
def state(root):
    """The module's state directory: the job's jar compiled into it once."""
    return root / "state"


def config(**change) -> LiveConfig:
    return LiveConfig(**{"dataset": "zipf", "workers": P, "tuples": TUPLES, "cost": COST_MS, "rate": RATE,
                         "engines": ("flink",), "grouping": GROUPING, "shedding": SHEDDING, **change})


@pytest.fixture(scope="module")
def run(flink_env, dataset, root, state):
    return live_rows(str(dataset), config(), root / "work", state=state)


def test_routing_is_exact_for_every_phase(run, dataset):
    routed, native = rows_by(run.rows, "flink"), rows_by(run.rows, "flink", "native")
    assert sorted(routed) == sorted(GROUPING + SHEDDING) and sorted(native) == ["flink"]
    for name in GROUPING:
        assert routed[name]["subtask_records"] == replay_loads(dataset, name, P), name
    for name in SHEDDING:
        r = routed[name]
        assert 0 < r["dropped"] < TUPLES and r["tuples_offered"] == TUPLES
        assert r["subtask_records"] == [TUPLES - r["dropped"]] + [0] * (P - 1), name
    assert len({tuple(routed[s]["subtask_records"]) for s in GROUPING}) == len(GROUPING)


def test_flinks_keyby_on_long_keys_ran_the_flink_strategys_loads(run, dataset):
    native = rows_by(run.rows, "flink", "native")["flink"]
    assert native["params"]["key_format"] == "long"
    assert native["subtask_records"] == replay_loads(dataset, "flink", P)


def test_flinks_keyby_on_string_keys_ran_the_flink_strategys_loads(run, dataset, root, state):
    """A second JVM with the one native phase (about 6 s)."""
    cfg = config(grouping=("flink",), shedding=(), params={"flink": {"key_format": "string"}})
    phase = dec.grouping_phase(dec.read_stream(str(dataset), cfg), "flink", cfg)
    done = flink.run(native_phases([phase], "flink"), root / "work-string", workers=P, work_mode="sleep", state=state)
    records = np.bincount(done[0]["worker"], minlength=P).tolist()
    assert records == replay_loads(dataset, "flink", P, key_format="string")
    assert records != replay_loads(dataset, "flink", P)  # the key's type matters on this stream


def test_measured_throughput_and_p99_are_the_predicted(run):
    assert_ratios(run.rows, "throughput_ratio", THROUGHPUT_MEDIAN, THROUGHPUT_EACH, run.overheads)
    assert_ratios([r for r in run.rows if r["strategy"] != "las"], "latency_p99_ratio", P99_MEDIAN, P99_EACH,
                  run.overheads)
    for r in run.rows:
        assert r["latency_p99_ratio"] == pytest.approx(r["latency_p99_measured_ms"] / r["latency_p99_predicted_ms"])
        assert r["latency_p50_measured_ms"] <= r["latency_p99_measured_ms"]


def test_flinks_rest_metrics_were_sampled(run):
    """Per phase, the work vertex's per-subtask busy, idle and back-pressured time and records in,
    as Flink last reported them while the job ran: never more records than the subtask ran.  A
    phase here lasts 0.3-0.6 s, two or three of Flink's 200 ms metric refreshes: on a loaded machine
    a phase's last sample may still show no record in (CI saw all four subtasks at 0 once), so
    records reported are required of the run, not of every phase."""
    reported = 0.0
    for r in run.rows:
        m = r["flink_metrics"]
        assert m["samples"] > 0, r["strategy"]
        assert set(m) == {"samples", "work", "source"}
        work = m["work"]
        assert all(len(work[k]) == P for k in ("busy_ms", "idle_ms", "backpressured_ms", "records_in"))
        assert all(v is not None and 0 <= v <= n for v, n in zip(work["records_in"], r["subtask_records"]))
        reported += sum(work["records_in"])
    assert reported > 0


def test_a_failed_job_is_one_line_naming_its_log(flink_env, dataset, root, state):
    """The second of three phases has a cost file ten tuples long (its Phase's costs cut short):
    its job fails on the eleventh tuple, the run stops there, one line names the log."""
    from skewbench.live.run import calibration_phases

    cfg = config(workers=2, tuples=60, rate=0.0, grouping=("kg", "sg"), shedding=())
    stream = dec.read_stream(str(dataset), cfg)
    kg, sg = (dec.grouping_phase(stream, s, cfg) for s in ("kg", "sg"))
    kg.cost_ms = kg.cost_ms[:10]
    work = root / "work-failing"
    log = work / "flink.log"
    with pytest.raises(SkewbenchError, match=rf"^the Flink job failed \(exit 1\): Caused by: "
                                             rf"java\.lang\.ArrayIndexOutOfBoundsException: Index \d+ out of bounds "
                                             rf"for length 10 \(log: {re.escape(str(log))}\)$"):
        flink.run([calibration_phases(stream, cfg)[0], kg, sg], work, workers=2, work_mode="sleep", state=state)
    assert "ArrayIndexOutOfBoundsException" in log.read_text()
    assert (work / "phase-000" / "phase.json").exists()  # the calibration ran
    assert not (work / "phase-001" / "phase.json").exists()  # kg failed
    assert not list((work / "phase-002").glob("out-*")) and not (work / "phase-002" / "phase.json").exists()


def test_a_failed_job_through_the_command_line(flink_env, dataset, root, state, monkeypatch):
    """A corrupt job jar (the JVM cannot load the job): exit 2, one line naming the log, nothing
    in ``--out``'s results; without ``--out`` the temporary work directory stays for the log."""
    from skewbench.cli import main

    broken = root / "state-broken"
    jar = flink.job_jar(state)
    shutil.copytree(jar.parent, broken / "live" / jar.parent.name)
    (broken / "live" / jar.parent.name / "live.jar").write_bytes(b"PK\x03\x04 not a jar")
    monkeypatch.setenv("SKEWBENCH_STATE", str(broken))
    args = ["live", str(dataset), "--engines", "flink", "--workers", "2", "--tuples", "20", "--strategies", "kg"]
    out = root / "out-broken"
    for extra in (["--out", str(out)], []):
        r = CliRunner().invoke(main, args + extra, catch_exceptions=False)
        assert r.exit_code == 2 and len(r.stderr.splitlines()) == 1, r.stderr
        found = re.fullmatch(r"error: the Flink job failed \(exit 1\): Caused by: java\.lang\.ClassNotFoundException: "
                             r"skewbench\.live\.LiveJob \(log: (.+/flink/flink\.log)\)\n", r.stderr)
        assert found, r.stderr
        assert Path(found[1]).is_file() and "ClassNotFoundException" in Path(found[1]).read_text()
    assert not (out / "live.json").exists()
    shutil.rmtree(Path(found[1]).parents[1])  # the kept temporary work directory
