"""The nightly trend against a real MLflow store (SQLite): three "nights" of a small grouping
replay logged as the nightly does it (nightly.log_family: report, MLflow runs, saved summary).
Night 1 is new, night 2 (replayed again on unchanged inputs) shows no change in any cell, night 3
(fixed-d's d altered) flags exactly the fixed-d cell; check_trend fails on it only when asked."""

from __future__ import annotations

import json

import pytest

from skewbench import nightly, tracking
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.errors import SkewbenchError
from skewbench.grouping.engine import ReplayConfig, grid, replay_to_dir
from skewbench.validation.results import validate_results

DAG = "skewbench_nightly"
STRATEGIES = ["kg", "pkg", "fixed-d"]
NIGHTS = {1: "2026-01-01T02:00:00+00:00", 2: "2026-01-02T02:00:00+00:00", 3: "2026-01-03T02:00:00+00:00"}


def _run_id(n: int) -> str:
    return f"scheduled__{NIGHTS[n]}"


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    """Replay and log the three nights; returns {night: (logged, out_root)} and the store."""
    root = tmp_path_factory.mktemp("trend")
    generate(StreamSpec.zipf(1.2, 500, 20000, 1, cost={"model": "levels", "levels": 4, "low": 1, "high": 4}),
             root / "ds", name="z12")
    uri = f"sqlite:///{root}/mlflow/mlflow.db"
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKEWBENCH_TRACKING_URI", uri)
        for n in (1, 2, 3):
            params = {"fixed-d": {"d": [3]}} if n == 3 else None
            res = root / f"night{n}" / "z12" / "grouping"
            # every night replays again (its timing metrics differ; nothing else may)
            replay_to_dir(root / "ds", grid(STRATEGIES, [5], [2], [0], params), res, ReplayConfig(window=2000))
            assert validate_results(res).success  # as the pipeline's validate step: only validated results are logged
            out_root = root / f"night{n}"
            logged = nightly.log_family([{"family": "grouping", "out": str(res)}], "grouping", DAG, _run_id(n),
                                        NIGHTS[n], str(out_root))
            out[n] = (logged, out_root)
        # the same night logged again (a retried task; without the report, to keep the test short)
        # compares with the night before, not with itself
        again = tracking.log_run([root / "night2" / "z12" / "grouping"], tracking_uri=uri,
                                 run_key=nightly.run_key(DAG, _run_id(2), "grouping"), run_name="night 2 again",
                                 tags={"skewbench.logical_date": NIGHTS[2]})
    return out, again, uri


@pytest.fixture(scope="module")
def client(nights):
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=nights[2])


def _by_strategy(logged):
    return {v["strategy"]: v for v in logged["trend"]}


def test_first_night_is_new(nights, client):
    logged, _ = nights[0][1]
    assert [v["status"] for v in logged["trend"]] == ["new"] * 3
    assert logged["trend_summary"]["new"] == 3 and logged["trend_summary"]["text"] == "3 new cells (no previous night)"
    for v in logged["trend"]:
        run = client.get_run(v["run_id"])
        assert run.data.tags["skewbench.trend"] == "new" and run.data.tags["skewbench.trend_previous_run"] == ""
        assert run.data.tags["skewbench.trend_key"] == v["trend_key"]
        assert "trend.png" not in {a.path for a in client.list_artifacts(v["run_id"])}  # one night: no figure


def test_unchanged_inputs_show_no_change_in_every_cell(nights, client):
    out, again, _ = nights
    first, second = _by_strategy(out[1][0]), _by_strategy(out[2][0])
    assert {s: v["status"] for s, v in second.items()} == {s: "no change" for s in STRATEGIES}
    assert out[2][0]["trend_summary"]["text"] == "no change in 3 cells"
    for s, v in second.items():
        assert v["previous_run"] == first[s]["run_id"] and v["trend_key"] == first[s]["trend_key"]
        run = client.get_run(v["run_id"])
        assert run.data.tags["skewbench.trend"] == "no change"
        assert run.data.tags["skewbench.trend_previous_run"] == first[s]["run_id"]
        # the timing metrics did differ (a new replay), and were not compared
        assert any(k.startswith("time.") for k in run.data.metrics)
        assert "trend.png" in {a.path for a in client.list_artifacts(v["run_id"])}
    # the retried night: the same runs, still against night 1
    assert {v["run_id"]: (v["status"], v["previous_run"]) for v in again["trend"]} == {
        v["run_id"]: ("no change", first[s]["run_id"]) for s, v in second.items()}


def test_an_altered_parameter_flags_exactly_its_cells(nights, client):
    out, _, _ = nights
    second, third = _by_strategy(out[2][0]), _by_strategy(out[3][0])
    assert {s: v["status"] for s, v in third.items()} == {"kg": "no change", "pkg": "no change", "fixed-d": "changed"}
    fd = third["fixed-d"]
    assert fd["previous_run"] == second["fixed-d"]["run_id"] and fd["trend_key"] == second["fixed-d"]["trend_key"]
    assert fd["params"] == [["p.d", "2", "3"]]
    moved = {m[0] for m in fd["metrics"]}
    assert "imbalance" in moved and not any(m.startswith(("time.", "window.")) for m in moved)
    tag = client.get_run(fd["run_id"]).data.tags["skewbench.trend"]
    assert tag.startswith("changed: ") and "imbalance" in tag and tag.endswith("params: p.d")
    summary = out[3][0]["trend_summary"]
    assert (summary["changed"], summary["no change"], summary["new"]) == (1, 2, 0)
    assert [c["strategy"] for c in summary["changed_cells"]] == ["fixed-d"]
    # the report's section, the saved summary, the run's SUMMARY lines
    report = out[3][0]["report"]
    html = open(report, encoding="utf-8").read()
    assert "Trend vs previous night" in html and "p.d: 2 → 3" in html and "fixed-d" in html
    assert "No change in 3 cells." in open(out[2][0]["report"], encoding="utf-8").read()
    saved = json.loads((out[3][1] / "mlflow-grouping.json").read_text())
    assert saved["trend_summary"]["changed_cells"][0]["strategy"] == "fixed-d" and "trend" not in saved


def test_check_trend_fails_on_a_change_only_when_asked(nights):
    out, _, _ = nights
    changed_root, same_root = str(out[3][1]), str(out[2][1])
    with pytest.raises(SkewbenchError, match=r"1 cell\(s\) changed .*grouping z12 fixed-d"):
        nightly.check_trend(changed_root, True)
    assert "1 of 3 cells changed" in nightly.check_trend(changed_root, False)
    assert nightly.check_trend(same_root, True) == "grouping: no change in 3 cells"
    assert nightly.check_trend(str(out[1][1]), True) == "grouping: 3 new cells (no previous night)"


def test_trend_reads_without_writing(nights, tmp_path):
    out, _, uri = nights
    res = out[3][1] / "z12" / "grouping"
    # night 3's results under a new key dated after it: compared with night 3 itself, no change
    later = tracking.trend([res], tracking_uri=uri, run_key="x/y/grouping",
                           tags={"skewbench.logical_date": "2026-01-04T02:00:00+00:00"})
    assert {v["status"] for v in later} == {"no change"}
    assert tracking.find_run(uri, "grouping", "x/y/grouping") is None
    # an empty store: everything is new, and no database is created
    fresh = tracking.trend([res], tracking_uri=f"sqlite:///{tmp_path}/none.db", run_key="k")
    assert {v["status"] for v in fresh} == {"new"} and not (tmp_path / "none.db").exists()
