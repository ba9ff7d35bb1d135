"""``skewbench live`` on a real Flink: the keyed windowed aggregation on a standalone cluster of a
JobManager and two TaskManagers (separate processes from the Flink environment's distribution,
``make flink-env``; the Java job ``skewbench/live/java/LiveJob.java``), shared with the other
timing tests (the ``flink_cluster`` fixture).

Most tests read the timing part's grouping run (tests/conftest.py ``live_grouping_run``, which
also serves the R15/R16 reproduction in tests/reproduction/test_live_repro.py, where the
measured-against-predicted bands are asserted): 5 s of a Zipf stream (z = 1.8, 10^4 keys) at
62.5% of 8 workers' capacity (1 ms of sleep a tuple), 5 sources, every phase twice; KG, PKG,
D-C and SG (each routed by its Java router in the sources, the default) and ``flink`` (Flink's
own ``keyBy`` on Long keys); checkpoints every 2 s, and a TaskManager killed 3 s into the last
phase (the routers' state restored from the checkpoint; the shedders on Flink: test_live_repro's
LAS run):

* every tuple ran once, on the worker decided (the run checks it; here also against the
  replay's loads), and every final aggregate equals the exact count and sum of its key and
  window (the run checks it; a row says so);
* the killed phase recovered from its checkpoint with exact aggregates, said how long it took to
  resume, and ran again (its row is the second run's); the replacement TaskManager was warmed up
  before anything else was measured;
* the rows' repetitions, calibrations, window and series;
* Flink's REST metrics sampled while each job ran, and the per-second series;
* Flink's keyBy on String keys (``key_format="string"``) in a job of its own;
* a failing job is one line naming the log; through the command line (a corrupt job jar, on a
  mini-cluster) nothing reaches ``--out``.

Marked ``slow`` and ``timing``: make reproduce runs them alone, after the other checks.
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
from skewbench.live.flinkcluster import METRICS_FETCHER_MS
from skewbench.live.run import engine_phase, engine_settings, live_rows, native_phases
from tests.live_common import LIVE_RUN, replay_loads, rows_by, zipf_dataset

pytestmark = [pytest.mark.slow, pytest.mark.timing]

P = LIVE_RUN["workers"]
#: the strategies of this file's own short jobs
GROUPING = ("kg", "sg", "flink")


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("live-flink")


@pytest.fixture(scope="module")
def dataset(root):
    """The stream of this file's own short jobs (6 s at 5,000 tuples a second)."""
    return zipf_dataset(root / "zipf", 1.4, 1000, 30_000, seed=1)


def config(**change) -> LiveConfig:
    return LiveConfig(**{"dataset": "zipf", "workers": P, "duration_s": 6.0, "repeat": 1, "cost": 1.0,
                         "engines": ("flink",), "grouping": GROUPING, "shedding": (), "checkpoint_s": 2.0,
                         "kill_after_s": 3.0, **change})


@pytest.fixture(scope="module")
def run(live_grouping_run):
    return live_grouping_run[1]


@pytest.fixture(scope="module")
def run_dataset(live_grouping_run) -> Path:
    return live_grouping_run[0]


def test_every_tuple_ran_on_its_worker_and_every_aggregate_is_exact(run, run_dataset):
    assert run.stream["tuples"] == LIVE_RUN["tuples"]
    # the grouping strategies routed by their Java routers in the sources (the default), keyBy natively
    routed, native = rows_by(run.rows, "flink", "engine"), rows_by(run.rows, "flink", "native")
    assert sorted(routed) == ["dc", "kg", "pkg", "sg"] and sorted(native) == ["flink"]
    for name, r in routed.items():
        assert r["subtask_records"] == replay_loads(run_dataset, name, P), name
        # the routers' own time in the sources, and its share of a source at the run's rate
        assert 0 < r["router_ns_per_tuple"] < 1e6, r["router_ns_per_tuple"]
        assert r["router_source_share"] == pytest.approx(r["router_ns_per_tuple"] * 1e-9 * r["rate"] / r["sources"])
        assert r["router_source_share"] < 0.05, r["router_source_share"]
    assert native["flink"]["router_ns_per_tuple"] is None and native["flink"]["router_source_share"] is None
    assert native["flink"]["subtask_records"] == replay_loads(run_dataset, "flink", P)
    for r in run.rows:
        assert r["routing_exact"] and r["aggregates_exact"], r["strategy"]
    # the strategies that split keys went through the merge stage, the others did not
    for name in ("pkg", "dc", "sg"):
        assert routed[name]["merge_parallelism"] == P and routed[name]["merge_records"] > 0, name
    assert routed["kg"]["merge_parallelism"] == 0 and routed["kg"]["merge_records"] == 0


def test_the_killed_phase_recovered_exactly_and_ran_again(run):
    assert len(run.restarts) == 1, run.restarts
    r = run.restarts[0]
    first = r["phase"]
    assert r["aggregates_exact"] and r["attempts"] >= 2 and r["replacement"].startswith("taskmanager-")
    assert r["killed_ms"] is not None and 0 < r["killed_ms"] < 6000
    assert r["restart_s"] is not None and 0 < r["restart_s"] < 60, r
    assert r["failures"], r  # Flink's exception history names the lost TaskManager's tasks
    # the phase's row is its second run's: a measurement, checked like every other
    name = first.split("#")[0].replace(" (native)", "")
    row = next(x for x in run.rows if x["strategy"] == name)
    assert row["routing_exact"] and row["aggregates_exact"]


def test_rows_carry_the_repetitions_calibrations_window_and_series(run):
    for r in run.rows:
        for col in ("repeat", "throughput_measured_min", "throughput_measured_max", "latency_p99_measured_ms_min",
                    "latency_p99_measured_ms_max", "calibration_before", "calibration_after", "window_s",
                    "merge_records", "source_backpressured_ms", "source_backpressured_predicted_ms"):
            assert col in r, (r["strategy"], col)
        assert r["repeat"] == LIVE_RUN["repeat"] and len(r["series"]) == LIVE_RUN["repeat"], r["strategy"]
        assert r["throughput_measured_min"] <= r["throughput_measured"] <= r["throughput_measured_max"]
        assert r["latency_p50_measured_ms"] <= r["latency_p99_measured_ms"] <= r["latency_p999_measured_ms"]
        lo, hi = r["window_s"]
        assert lo == pytest.approx(0.2 * r["duration_s"]) and hi == pytest.approx(r["duration_s"])
        assert r["calibration_before"]["capacity"] > 0 and r["calibration_before"]["overhead_ms"] > 0
        for s in r["series"]:
            assert len(s["engine"]["worker_throughput"]) == P and len(s["predicted"]["worker_throughput"]) == P
            # every tuple completed in some second of the series
            assert sum(map(sum, s["engine"]["worker_throughput"])) == r["tuples_executed"]
            assert sum(map(sum, s["predicted"]["worker_throughput"])) == r["tuples_executed"]


def test_flinks_rest_metrics_were_sampled_over_the_window(run):
    """Per phase, the workers' busy milliseconds per second over the measurement window as Flink
    reported them (busy includes the sleeping cost), beside the records' own utilisation."""
    killed = run.restarts[0]["phase"].split("#")[0].replace(" (native)", "")
    for r in run.rows:
        busy = r["flink_work_busy_ms_per_s"]
        sampled = [bool(s.get("flink", {}).get("worker_busy_ms_per_s")) for s in r["series"]]
        if r["strategy"] == killed:
            # its run again after a TaskManager was lost: Flink served no metrics (docs/live.md);
            # the row's figures are its other repetitions'
            assert sampled.count(False) == 1, (r["strategy"], sampled)
        else:
            assert all(sampled), (r["strategy"], sampled)
        if busy is None:
            assert not any(sampled), r["strategy"]
            continue
        assert len(busy) == P, r["strategy"]
        # each end of the window reads counters up to the fetcher's interval old: a worker busy all
        # the time shows up to 1000 ms/s times (w + interval) / w (1101 seen at w = 4.8 s)
        # and Flink derives a subtask's accumulated busy time as its elapsed time less its idle and
        # back-pressured times (flink-runtime's TaskIOMetricGroup), so an idle period still open at a
        # sample counts as busy until it closes: the counter can fall back, and an idle worker's rate
        # dip below 0 (-15.8 ms/s seen at w = 4.4 s); the same interval's allowance below 0
        lo, hi = r["window_s"]
        most = 1000.0 * (hi - lo + METRICS_FETCHER_MS / 1000.0) / (hi - lo)
        least = -1000.0 * (METRICS_FETCHER_MS / 1000.0) / (hi - lo)
        for b, u in zip(busy, r["utilisation_measured"]):
            assert least <= b <= most and 0 <= u <= 1.01, (r["strategy"], b, least, most, u)


def test_flinks_keyby_on_string_keys_ran_the_flink_strategys_decisions(flink_cluster, dataset, root):
    """Flink's keyBy on the keys' decimal text: a job of its own, every tuple on the worker the
    ``flink`` strategy with ``key_format="string"`` decides (which differs from Long's here)."""
    cfg = config(grouping=("flink",), shedding=(), kill_after_s=0.0, checkpoint_s=0.0, duration_s=2.0,
                 params={"flink": {"key_format": "string"}})
    p = native_phases([dec.grouping_phase(dec.read_stream(str(dataset), cfg), "flink", cfg)], "flink")[0]
    ep = engine_phase(p, cfg, 1, engine_settings(cfg))
    assert ep.key_format == "string"
    [d] = flink.run([ep], root / "work-string", state=root / "state", address=flink_cluster.address)
    rec = flink.read_phase(d)
    ran = np.empty(ep.tuples, dtype=np.int64)
    ran[rec.work[:, 0].astype(np.int64)] = rec.work[:, 4]
    assert (ran == ep.worker).all()
    cfg_long = config(grouping=("flink",), shedding=(), duration_s=2.0)
    long_workers = dec.grouping_phase(dec.read_stream(str(dataset), cfg_long), "flink", cfg_long).worker
    assert (np.asarray(long_workers) != ep.worker).any()  # the key's type matters on this stream


def test_a_failed_job_is_one_line_naming_its_log(flink_cluster, dataset, root):
    """The second of two phases has a cost file ten tuples long: its job fails on the eleventh
    tuple, the run stops there, one line names the log, which holds the cause."""
    cfg = config(grouping=("kg", "sg"), shedding=(), duration_s=1.0, kill_after_s=0.0, checkpoint_s=0.0)
    stream = dec.read_stream(str(dataset), cfg)
    kg, sg = (engine_phase(dec.grouping_phase(stream, s, cfg), cfg, 1, engine_settings(cfg)) for s in ("kg", "sg"))
    sg.cost_ms = sg.cost_ms[:10]
    work = root / "work-failing"
    log = work / "flink.log"
    with pytest.raises(SkewbenchError, match=rf"^the Flink job failed \(exit 1\): Caused by: .*"
                                             rf"Index \d+ out of bounds for length 10.* \(log: {re.escape(str(log))}\)$"):
        flink.run([kg, sg], work, state=root / "state", address=flink_cluster.address)
    assert "ArrayIndexOutOfBoundsException" in log.read_text()
    assert (work / "phase-000" / "phase.json").exists()  # kg ran
    assert not (work / "phase-001" / "phase.json").exists()  # sg failed


def test_a_job_that_cannot_finish_is_cancelled_at_its_deadline(flink_cluster, dataset, root):
    """A phase of 6 s of stream given 5 s in all: the client is stopped at the deadline, the job is
    cancelled on the cluster (its slots free for the next test), and one line names the log."""
    import json
    import time
    import urllib.request

    cfg = config(grouping=("kg",), shedding=(), kill_after_s=0.0, checkpoint_s=0.0)
    ep = engine_phase(dec.grouping_phase(dec.read_stream(str(dataset), cfg), "kg", cfg), cfg, 1, engine_settings(cfg))
    work, started = root / "work-deadline", []
    with pytest.raises(SkewbenchError, match=rf"^the Flink job did not finish in 5 s \(log: {re.escape(str(work))}/flink.log\)$"):
        flink.run([ep], work, state=root / "state", address=flink_cluster.address, timeout_s=5.0,
                  on_started=started.append)

    def state() -> str:
        with urllib.request.urlopen(f"http://{flink_cluster.address}/jobs/{started[0].job_id}", timeout=10) as r:
            return json.load(r)["state"]

    assert len(started) == 1  # the job had started: the deadline stopped it running
    for _ in range(100):
        if state() == "CANCELED":
            break
        time.sleep(0.2)
    assert state() == "CANCELED"


def test_a_failed_job_through_the_command_line(flink_env, dataset, root, monkeypatch):
    """A corrupt job jar (the JVM cannot load the job), on a mini-cluster: exit 2, one line naming
    the log, nothing in ``--out``'s results; without ``--out`` the work directory stays for the log."""
    from skewbench.cli import main

    state = root / "state-cli"
    jar = flink.job_jar(state)
    jar.write_bytes(b"PK\x03\x04 not a jar")
    monkeypatch.setenv("SKEWBENCH_STATE", str(state))
    args = ["live", str(dataset), "--engines", "flink", "--workers", "2", "--duration", "1", "--strategies", "kg",
            "--repeat", "1", "--cluster", "mini"]
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


def test_a_loaded_machine_stops_the_run_with_the_calibrations_numbers(flink_cluster, dataset, root):
    """Two busy loops on each of the machine's cores (other processes than the run's) while it
    calibrates: the calibration before the strategies is implausible (the other processes kept
    the cores busy; sleeping workers alone hide it: their overhead moved from 0.10 to 0.14 ms), and
    the run stops with one message naming the numbers and what to try before any strategy ran."""
    import os
    import signal
    import subprocess
    import sys

    from skewbench.live.calibrate import ImplausibleCalibration

    # detached (their parent exits at once): other processes than the run's, as another job would be
    spawn = f"for i in $(seq {2 * (os.cpu_count() or 2)}); do {sys.executable} -c 'while True: pass' >/dev/null 2>&1 & echo $!; done"
    loops = [int(x) for x in subprocess.run(["sh", "-c", spawn], capture_output=True, text=True, check=True).stdout.split()]
    try:
        with pytest.raises(ImplausibleCalibration, match=r"^implausible calibration before the strategies: other "
                                                         r"processes kept \d\.\d of the machine's \d+ cores busy .*"
                                                         r"\d ms.* what to try: a quieter machine \(nothing else "
                                                         r"running on its cores\)"):
            live_rows(str(dataset), config(kill_after_s=0.0, checkpoint_s=0.0, grouping=("kg",), shedding=(),
                                           duration_s=2.0),
                      root / "work-loaded", state=root / "state", cluster=flink_cluster)
    finally:
        for pid in loops:
            os.kill(pid, signal.SIGKILL)
    import json

    ran = [ph["name"] for f in (root / "work-loaded" / "flink").glob("job-*.json")
           for ph in json.loads(f.read_text())["phases"]]
    assert ran and not [n for n in ran if n.startswith("kg#")], ran  # the calibration's jobs only
