"""The live capacity search (``skewbench live DATASET --capacity-search``, issue 42).

The pure parts (``skewbench.live.capacity``) on hand-made timings: the lag series counted by hand,
its slope against a plain-Python least-squares line, the verdict on a server that keeps up and
one that does not, the bisection driver on a ``measure(rate)`` whose answer is known, the
predicted capacity counted by hand, and the command line's refusals (one line, exit 2). These run
in ``make test``.

Then a short real search on the session's local Flink cluster (tests/conftest.py
``flink_cluster``), run as the weekly live DAG runs it (its run_live step, then log_to_mlflow and
report): KG and SG on 4 workers, 4 s probes, two halvings, once: the searches' mechanics end to
end (the starting rates told apart, the verdicts monotone in the rate, the judged sustained rate
below the unsustained one, the result's fields), and what MLflow, the page and the report get. Marked ``slow`` and ``timing``
like the other live tests: make reproduce runs it alone, after the other checks.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from skewbench.errors import SkewbenchError
from skewbench.live import capacity as lcap

# ---- the lag and its slope -------------------------------------------------------------------


def reference_slope(ts: list[float], ys: list[float]) -> float:
    """Ordinary least squares in plain Python, per second (ts in ms)."""
    n = len(ts)
    mt = sum(ts) / n
    my = sum(ys) / n
    num = sum((t - mt) * (y - my) for t, y in zip(ts, ys))
    den = sum((t - mt) ** 2 for t in ts)
    return num / den * 1000.0


def test_the_slope_is_the_least_squares_line_of_a_plain_python_reference():
    rng = random.Random(7)
    for _ in range(50):
        n = rng.randint(2, 300)
        ts = sorted(rng.uniform(0, 10_000) for _ in range(n))
        if len(set(ts)) < 2:
            continue
        ys = [rng.uniform(-500, 5000) for _ in range(n)]
        assert lcap.slope_per_s(np.array(ts), np.array(ys)) == pytest.approx(reference_slope(ts, ys), rel=1e-9,
                                                                                abs=1e-9)
    # a straight line: its own slope, per second
    t = np.arange(0, 1000, 10.0)
    assert lcap.slope_per_s(t, 3.0 + 0.25 * t) == pytest.approx(250.0)


def test_the_slope_refuses_what_has_no_line():
    with pytest.raises(SkewbenchError, match="two points or more"):
        lcap.slope_per_s(np.array([1.0]), np.array([2.0]))
    with pytest.raises(SkewbenchError, match="two distinct times"):
        lcap.slope_per_s(np.array([5.0, 5.0, 5.0]), np.array([1.0, 2.0, 3.0]))


def test_the_lag_is_tuples_due_less_tuples_done_counted_by_hand():
    due = np.array([0.0, 10.0, 20.0, 30.0, 40.0])
    end = np.array([10.0, 35.0, 36.0, np.nan, 40.0])  # tuple 3 never ended; two end on a sample
    t, lag = lcap.lag_series(due, end, (0.0, 40.0), step_ms=10.0)
    assert t.tolist() == [0.0, 10.0, 20.0, 30.0, 40.0]
    # due by t (inclusive): 1, 2, 3, 4, 5; ended by t (inclusive): 0, 1, 1, 1, 4
    assert lag.tolist() == [1.0, 1.0, 2.0, 3.0, 1.0]
    # the window's end is sampled even off the grid
    t, lag = lcap.lag_series(due, end, (0.0, 45.0), step_ms=20.0)
    assert t.tolist() == [0.0, 20.0, 40.0, 45.0] and lag.tolist() == [1.0, 2.0, 1.0, 1.0]
    with pytest.raises(SkewbenchError, match="positive length"):
        lcap.lag_series(due, end, (10.0, 10.0))


def single_server(rate: float, service_ms: float, seconds: float) -> tuple[np.ndarray, np.ndarray]:
    """Tuples due at ``rate`` to one FIFO server taking ``service_ms`` each: due and end times."""
    due = np.arange(int(rate * seconds)) * 1000.0 / rate
    end = np.empty_like(due)
    free = 0.0
    for i, d in enumerate(due):
        free = max(free, d) + service_ms
        end[i] = free
    return due, end


def test_a_server_that_keeps_up_is_sustained_and_one_that_does_not_is_not():
    # 1 ms a tuple: 1,000 tuples/s at most
    due, end = single_server(700.0, 1.0, 10.0)
    ok = lcap.judge(due, end, (2000.0, 10_000.0), 700.0)
    assert ok["sustained"] and abs(ok["slope"]) < 1.0 and ok["limit"] == pytest.approx(7.0)
    due, end = single_server(1300.0, 1.0, 10.0)
    bad = lcap.judge(due, end, (2000.0, 10_000.0), 1300.0)
    # the backlog grows by the rate less the service rate: 300 tuples a second
    assert not bad["sustained"] and bad["slope"] == pytest.approx(300.0, rel=0.01)
    assert bad["lag_end"] > bad["lag_start"] + 2000
    # just over capacity, within the 1% the criterion allows: sustained
    due, end = single_server(1005.0, 1.0, 10.0)
    assert lcap.judge(due, end, (2000.0, 10_000.0), 1005.0)["sustained"]


def test_the_verdict_is_strict_at_the_limit():
    t = np.arange(0.0, 1001.0, 1.0)
    due = t  # one tuple due each ms: 1,000 a second
    # every 10th tuple never ends: the lag grows 100 tuples a second, 10% of the rate
    end = np.where(np.arange(t.size) % 10 == 0, np.nan, t + 0.5)
    j = lcap.judge(due, end, (0.0, 1000.0), 1000.0, share=0.1, step_ms=1.0)
    assert j["slope"] == pytest.approx(100.0, rel=0.02)
    assert lcap.judge(due, end, (0.0, 1000.0), 1000.0, share=0.11, step_ms=1.0)["sustained"]
    assert not lcap.judge(due, end, (0.0, 1000.0), 1000.0, share=0.09, step_ms=1.0)["sustained"]
    with pytest.raises(SkewbenchError, match="must be positive"):
        lcap.judge(due, end, (0.0, 1000.0), 0.0)


# ---- the search --------------------------------------------------------------------------------


def threshold(capacity: float, calls: list[float]):
    def measure(rate: float) -> bool:
        calls.append(rate)
        return rate <= capacity
    return measure


@pytest.mark.parametrize("capacity", [700.0, 731.0, 999.0, 1000.0, 1150.0, 1299.0])
def test_the_search_brackets_the_capacity_and_narrows_it(capacity):
    calls: list[float] = []
    s = lcap.search(threshold(capacity, calls), 700.0, 1300.0, steps=5, width=0.05)
    assert calls[:2] == [700.0, 1300.0]  # the starting rates first: the judge must tell them apart
    assert s.lo is not None and s.hi is not None and s.lo <= capacity < s.hi
    assert s.capacity == s.lo == max(r for r, ok in s.probes if ok)
    # five halvings at most, stopping once the bracket is within 5% of its lower end
    assert s.halvings <= 5 and len(calls) == 2 + s.halvings
    assert (s.hi - s.lo) <= 0.05 * s.lo or s.halvings == 5
    assert lcap.monotone(s.probes) and lcap.separated(s.probes, 700.0, 1300.0) == (capacity < 1300.0)
    d = s.to_dict()
    assert d["capacity"] == s.lo and d["bracket"] == [s.lo, s.hi] and len(d["probes"]) == len(calls)


def test_the_search_moves_its_bracket_when_a_starting_rate_is_on_the_wrong_side():
    calls: list[float] = []
    s = lcap.search(threshold(300.0, calls), 700.0, 1300.0, steps=3, width=0.05, expand=3)
    f = 1300.0 / 700.0
    assert calls[:3] == [700.0, pytest.approx(700.0 / f), pytest.approx(700.0 / f ** 2)]
    assert s.lo <= 300.0 < s.hi and not lcap.separated(s.probes, 700.0, 1300.0)
    calls = []
    s = lcap.search(threshold(3000.0, calls), 700.0, 1300.0, steps=3, width=0.05, expand=3)
    assert calls[:3] == [700.0, 1300.0, pytest.approx(1300.0 * f)]
    assert s.lo <= 3000.0 < s.hi
    # out of reach: nothing sustained, or everything, within the expansions allowed
    s = lcap.search(lambda r: False, 700.0, 1300.0, expand=2)
    assert s.capacity is None and len(s.probes) == 3
    s = lcap.search(lambda r: True, 700.0, 1300.0, expand=2)
    assert s.hi is None and s.capacity == pytest.approx(1300.0 * f ** 2) and len(s.probes) == 4


def test_the_search_takes_only_the_rate_it_asked_for():
    s = lcap.Search(700.0, 1300.0)
    with pytest.raises(SkewbenchError, match="asked for 700"):
        s.record(800.0, True)
    with pytest.raises(SkewbenchError, match="0 < low < high"):
        lcap.Search(1300.0, 700.0)


def test_pooled_verdicts_are_monotone_unless_a_sustained_rate_lies_above_an_unsustained_one():
    assert lcap.monotone([(700.0, True), (1300.0, False), (1000.0, True), (1150.0, False)])
    assert not lcap.monotone([(700.0, True), (1000.0, False), (1050.0, True)])
    assert lcap.monotone([(700.0, True), (1000.0, False), (1050.0, True)], slack=0.06)


# ---- the prediction and the comparison ---------------------------------------------------------


def test_the_predicted_capacity_counted_by_hand():
    # worker 0: costs 1 + 2 and two overheads of 0.5 = 4 ms; worker 1: 3 + 0.5 = 3.5 ms; worker 2: none
    p = lcap.predicted(np.array([0, 0, 1]), np.array([1.0, 2.0, 3.0]), 0.5, 3)
    assert p["busy_ms"] == [4.0, 3.5, 0.0] and p["busiest"] == 0
    assert p["capacity"] == pytest.approx(1000.0 * 3 / 4.0)
    with pytest.raises(SkewbenchError, match="non-negative number"):
        lcap.predicted(np.array([0]), np.array([1.0]), -0.1, 1)


def test_the_comparison_takes_the_median_and_the_band():
    c = lcap.compare(1000.0, [900.0, 1100.0, 870.0])
    assert (c["measured"], c["measured_min"], c["measured_max"]) == (900.0, 870.0, 1100.0)
    assert c["ratio"] == pytest.approx(0.9) and c["within"]
    assert not lcap.compare(1000.0, [840.0, 800.0, 900.0])["within"]  # ratio 0.84
    missing = lcap.compare(1000.0, [1000.0, None])
    assert missing["missing"] == 1 and not missing["within"] and missing["ratio"] is None


def test_a_probes_due_times_land_in_the_same_windows_as_the_jobs():
    """The job puts a tuple in its window from its due time rounded to whole microseconds; the
    exact aggregates are computed from the float due times. A search's arbitrary rates put some due
    time within half a microsecond below a window's end (a correct job failed the check at 5,859
    tuples/s): a probe's due times are whole microseconds, so both sides agree."""
    from skewbench.live.capacity_run import probe_prefix
    from skewbench.live.decisions import Stream
    from skewbench.live.model import windows_of

    m = 60_000
    stream = Stream("s", "f", np.zeros(m, np.int64), None, np.ones(m), np.zeros(m), "fixed 1 ms")
    rng = np.random.default_rng(5)
    raw_mismatch = floor_mismatch = 0
    for rate in rng.uniform(3000.0, 9000.0, 200):
        due_ms = probe_prefix(stream, m, float(rate)).due_s * 1000.0
        job = np.rint(due_ms * 1e3).astype(np.int64) // 1_000_000  # flink.write_phase, then the job's window
        assert (job == windows_of(due_ms, 1000.0)).all(), rate
        assert np.abs(due_ms - np.arange(m) / rate * 1000.0).max() <= 0.5e-3  # at most half a microsecond moved
        raw = np.arange(m) / rate * 1000.0
        # unrounded due times too: windows_of takes the job's rule (a float floor disagreed here)
        raw_mismatch += int((np.rint(raw * 1e3).astype(np.int64) // 1_000_000 != windows_of(raw, 1000.0)).sum())
        old = np.floor(raw / 1000.0 + 1e-9).astype(np.int64)
        floor_mismatch += int((np.rint(raw * 1e3).astype(np.int64) // 1_000_000 != old).sum())
    assert raw_mismatch == 0
    assert floor_mismatch > 0  # the old float floor disagreed with the job at some of these rates


# ---- the command line's refusals ---------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["--capacity-search", "--search-rates", "1.3,0.7"], "--search-rates is LOW,HIGH"),
    (["--capacity-search", "--search-rates", "fast"], "--search-rates is LOW,HIGH"),
    (["--capacity-search", "--search-steps", "-1"], "--search-steps is an integer in"),
    (["--capacity-search", "--search-width", "0"], "--search-width is a share"),
    (["--capacity-search", "--lag-share", "1.5"], "--lag-share is a share of the rate"),
    (["--capacity-search", "--capacity-tolerance", "0"], "--capacity-tolerance is a share"),
    (["--capacity-search", "--engines", "flink,spark"], "runs on Flink only"),
    (["--capacity-search", "--rate", "1000"], "no --rate or --tuples"),
    (["--capacity-search", "--shedders", "las"], "no --shedders"),
    (["--capacity-search", "--kill-taskmanager", "3"], "no --kill-taskmanager"),
    (["--capacity-search", "--spark-tuples", "100"], "--spark-tuples has no part"),
    (["--capacity-search", "--duration", "500"], "in \\[1, 120\\]"),
    (["--capacity-search", "--strategies", "kg,nope"], "unknown grouping strategy nope"),
    (["--lag-share", "0.02"], "--lag-share belongs to --capacity-search"),
])
def test_the_command_line_refuses_bad_options_in_one_line(args, message, tmp_path, monkeypatch):
    from skewbench.cli import main

    monkeypatch.setenv("SKEWBENCH_FLINK_PYTHON", "/nonexistent/python")  # nothing may start before the refusal
    res = CliRunner().invoke(main, ["live", str(tmp_path / "nothing"), *args])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    assert re_search(message, lines[0]), lines[0]


def re_search(pattern: str, text: str) -> bool:
    import re

    return re.search(pattern, text) is not None


# ---- a short real search on Flink --------------------------------------------------------------

SHORT = {"workers": 4, "duration_s": 4.0, "steps": 2, "strategies": ("kg", "sg"), "z": 1.4, "keys": 1000}


@pytest.fixture(scope="module")
def short_search(tmp_path_factory, flink_cluster):
    """The live DAG's run_live step (skewbench.live.steps.run_dataset) with the capacity search on,
    on the session's cluster: a one-phase live run of kg (1 s of stream), then the search of kg and
    sg; then its log_to_mlflow and report steps on a throw-away MLflow store. Returns (the search's
    capacity.json, its progress lines, the run's conf, what log_results returned, the report's text)."""
    from skewbench.live import steps
    from skewbench.live.calibrate import ImplausibleCalibration
    from tests.live_common import zipf_dataset

    root = tmp_path_factory.mktemp("live-capacity")
    data = zipf_dataset(root / "zipf", SHORT["z"], SHORT["keys"], 60_000, seed=3)
    dag_id, run_id = steps.DAG_ID, "manual__short-search"
    refusals = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKEWBENCH_STATE", str(root / "state"))
        mp.setenv("SKEWBENCH_TRACKING_URI", f"sqlite:///{root}/mlflow.db")
        mp.setenv("SKEWBENCH_MLFLOW_ARTIFACTS", str(root / "artifacts"))
        checked = steps.check_params({
            "datasets": ["live-zipf-1.4"], "engines": ["flink"], "strategies": ["kg"], "native": False,
            "workers": SHORT["workers"], "duration": 1.0, "repeat": 1, "cost": "1",
            "capacity_strategies": list(SHORT["strategies"]), "capacity_duration": SHORT["duration_s"],
            "capacity_steps": SHORT["steps"]})
        assert steps.searches(checked)
        # the Params checked on a catalog dataset, run on this test's own stream
        conf = {**checked, "datasets": ["zipf"], "when": "2026-12-06T03:00:00+00:00", "out_root": str(root / "out")}
        for attempt in range(1, 4):  # a calibration refused on a busy machine runs again (tests/live_common.py)
            lines: list[str] = []
            try:
                done = steps.run_dataset(conf, {"name": "zipf", "path": str(data)}, conf["out_root"], attempt=attempt,
                                         progress=lines.append, cluster=flink_cluster)
                break
            except ImplausibleCalibration as e:
                refusals.append(str(e))
        else:
            pytest.fail(f"the calibration refused the machine three times: {refusals}")
        assert done["capacity"] == str(steps.dataset_dir(conf["out_root"], "zipf") / steps.CAPACITY)
        res = json.loads(Path(done["capacity"]).read_text())
        steps.open_tracking(conf, dag_id, run_id)
        logged = steps.log_results(conf, dag_id, run_id)
        text = steps.report(conf, dag_id, run_id)
    return res, lines, conf, logged, text


@pytest.mark.slow
@pytest.mark.timing
def test_a_short_search_on_flink_tells_the_rates_apart_and_narrows_monotonely(short_search):
    res, lines, _, _, _ = short_search
    rows = {r["strategy"]: r for r in res["rows"]}
    assert sorted(rows) == sorted(SHORT["strategies"])
    for name, r in rows.items():
        (s,) = r["searches"]
        probes = [(p["rate"], p["sustained"]) for p in s["probes"]]
        # the judge told 70% of the predicted capacity from 130% before anything was narrowed
        assert r["separated"] and probes[0] == (pytest.approx(0.7 * r["predicted"]), True), (name, probes)
        assert probes[1] == (pytest.approx(1.3 * r["predicted"]), False), (name, probes)
        assert len(probes) == 2 + SHORT["steps"] and r["monotone"], (name, probes)
        lo, hi = s["bracket"]
        assert lo == r["measured"] == s["capacity"] and lo < hi, (name, s)
        assert max(p for p, ok in probes if ok) == lo and min(p for p, ok in probes if not ok) == hi
        # each verdict is the slope against 1% of the rate, and the slopes part the way the verdicts do
        for j in s["judged"]:
            assert j["sustained"] == (j["slope"] < 0.01 * j["rate"]) and j["limit"] == pytest.approx(0.01 * j["rate"])
        top = max(s["judged"], key=lambda j: j["rate"])
        assert top["slope"] > 0.05 * top["rate"], top  # 30% over capacity: the backlog grows fast
        assert r["ratio"] == pytest.approx(r["measured"] / r["predicted"])
        # the prefix lasts about --duration at the predicted capacity (chosen from a longer prefix's)
        assert r["tuples"] / r["predicted"] == pytest.approx(SHORT["duration_s"], rel=0.05)
    # KG keeps the hot key whole: its predicted capacity is the busiest worker's, far below SG's
    assert rows["kg"]["predicted"] < 0.8 * rows["sg"]["predicted"]
    # a progress line per probe: strategy, rate, slope, verdict
    probe_lines = [ln for ln in lines if ln.startswith("flink: capacity ")]
    assert len(probe_lines) == sum(len(r["searches"][0]["probes"]) for r in res["rows"])
    assert all(re_search(r"capacity (kg|sg) #1: [\d,]+/s .*lag slope [+-][\d,]+/s .*: (sustained|NOT sustained)", ln)
               for ln in probe_lines), probe_lines


@pytest.mark.slow
@pytest.mark.timing
def test_a_short_search_reports_its_fields_as_json(short_search):
    doc, _, _, _, _ = short_search
    for key in ("dataset", "workers", "repeat", "duration_s", "search", "overhead_ms", "calibrations", "rows",
                "verdict"):
        assert key in doc, key
    assert doc["workers"] == SHORT["workers"] and doc["search"]["steps"] == SHORT["steps"]
    assert doc["calibrations"]["before"]["overhead_ms"] > 0 and doc["calibrations"]["after"]["overhead_ms"] > 0
    for r in doc["rows"]:
        for key in ("strategy", "predicted", "predicted_busy_ms", "measured", "measured_min", "measured_max", "ratio",
                    "within", "separated", "monotone", "searches"):
            assert key in r, (r["strategy"], key)
        assert r["measured_min"] <= r["measured"] <= r["measured_max"]
        assert math.isfinite(r["predicted"]) and len(r["predicted_busy_ms"]) == SHORT["workers"]
        # the prediction is the busiest worker's: 1000 x tuples / its busy ms
        assert r["predicted"] == pytest.approx(1000.0 * r["tuples"] / max(r["predicted_busy_ms"]))
    assert doc["verdict"]["within"] == all(r["within"] for r in doc["rows"])


@pytest.mark.slow
@pytest.mark.timing
def test_the_weekly_live_run_logs_the_search_and_shows_it(short_search):
    """What the live DAG makes of its search: the parent run's capacity metrics equal capacity.json's
    rows, capacity.json is an artifact beside live.json, the page's capacity section and the report's
    table name every searched strategy with its numbers."""
    from mlflow import MlflowClient

    from skewbench.live import steps
    from skewbench.live.capacity_run import table
    from skewbench.present.plotting import fmt_number

    res, _, conf, logged, text = short_search
    uri = f"sqlite:///{Path(conf['out_root']).parent}/mlflow.db"
    client = MlflowClient(uri)
    parent = client.get_run(logged["parent_run_id"])
    assert parent.info.status == "FINISHED"
    for r in res["rows"]:
        got = {k.rsplit("/", 1)[1]: v for k, v in parent.data.metrics.items() if k.startswith(f"capacity/zipf/{r['strategy']}/")}
        assert got == {k: float(r[k]) for k in ("predicted", "measured", "measured_min", "measured_max", "ratio",
                                                "within", "separated") if r[k] is not None}, r["strategy"]
    assert parent.data.metrics["capacity/zipf/overhead_ms"] == res["overhead_ms"]
    assert sorted(a.path for a in client.list_artifacts(parent.info.run_id, "live/zipf")) == [
        "live/zipf/capacity.json", "live/zipf/live.json"]
    page = (Path(conf["out_root"]) / steps.PAGE).read_text()
    assert "zipf: capacity on Flink, measured against predicted" in page and 'alt="zipf flink capacity"' in page
    for r in res["rows"]:
        assert f"<tr><td>{r['strategy']}</td><td class=\"num\">{r['tuples']:,}</td>" in page
        assert f"<td class=\"num\">{fmt_number(r['predicted'])}</td>" in page
    assert "capacity on flink (4 workers, 1 search each):\n" + table(res) in text
