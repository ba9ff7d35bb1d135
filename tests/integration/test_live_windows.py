"""``skewbench live-windows``: a windowed aggregation's windows on Spark, one stage per window, with
the shedding family's partition strategies' decisions (skewbench.live.windows).

The decisions are checked against the family's own replay (run_cell's per-window series), the
engine's records per worker against the decisions, and the command's bad inputs are one line and
exit 2 before Spark starts.  The reproduction rows (R5's runtime half, R6's runtime, R7) are in
tests/reproduction/test_live_repro.py.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from skewbench.cli import main
from skewbench.errors import SkewbenchError
from skewbench.live import windows as lw
from skewbench.replay import Cell
from skewbench.shedding import workloads
from skewbench.shedding.engine import ShedConfig, run_cell

WORKERS = 2


@pytest.fixture(scope="module")
def burst(tmp_path_factory):
    """SYN-burst, small: 6 windows of 400 tuples over 4 keys (shares 0.6/0.25/0.13/0.02)."""
    out = tmp_path_factory.mktemp("live-windows") / "burst"
    workloads.syn_burst(out, params={"windows": 6, "tuples_per_window": 400, "burst": [2, 3]}, seed=1, inputs=[])
    return out


@pytest.mark.parametrize("strategy", lw.STRATEGIES)
def test_decisions_are_the_replays_windows(burst, strategy):
    """Per window, the tuples and the largest load after shedding equal the shedding family's own
    replay of the same cell (its series); fld sheds nothing and takes no shedder time."""
    d = lw.decide(str(burst), strategy, WORKERS)
    _, series = run_cell(str(burst), Cell(strategy, (("provisioning", 100), ("workers", WORKERS)), 0, ()), ShedConfig())
    assert d.windows == len(series) > 0
    assert d.loads.sum(axis=1).tolist() == [s["tuples"] for s in series]
    assert d.loads_after.max(axis=1).astype(float).tolist() == [s["load_max"] for s in series]
    assert ((d.loads_after <= d.loads) & (d.loads_after >= 0)).all()
    if strategy == "fld":
        assert (d.loads_after == d.loads).all() and not d.t_sp_s.any() and not d.ran.any()
    else:
        assert (d.loads_after < d.loads).any() and d.ran.all() and (d.t_sp_s > 0).all()
    first = lw.decide(str(burst), strategy, WORKERS, windows=2)
    assert first.windows == 2 and (first.loads == d.loads[:2]).all() and (first.loads_after == d.loads_after[:2]).all()


def test_each_window_is_a_stage_with_the_decided_records(burst, tmp_path):
    """On Spark (local, a task slot per worker): every window's records per worker are the
    decisions', its processing time measured and predicted, ShedPart's share computed from them;
    --json has a row per strategy and window and the file in --out is the same."""
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["live-windows", str(burst), "--workers", str(WORKERS), "--windows", "3",
                                  "--cost", "0.5", "--json", "--out", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res == json.loads((out / "live-windows.json").read_text())
    rows = res["rows"]
    assert [(x["strategy"], x["window"]) for x in rows] == [(s, w) for s in lw.STRATEGIES for w in range(3)]
    for s in lw.STRATEGIES:
        d = lw.decide(str(burst), s, WORKERS, windows=3)
        mine = [x for x in rows if x["strategy"] == s]
        assert [x["subtask_records"] for x in mine] == d.loads_after.tolist()
        assert [x["processed"] + x["shed"] for x in mine] == d.loads.sum(axis=1).tolist()
        for x in mine:
            assert x["t_proc_measured_s"] >= x["load_max"] * 0.5e-3  # the busiest worker slept its tuples
            assert x["t_win_measured_s"] == pytest.approx(x["t_sp_s"] + x["t_proc_measured_s"])
            assert x["sp_share"] == pytest.approx(x["t_sp_s"] / x["t_win_measured_s"])
            assert x["t_proc_predicted_s"] == pytest.approx(x["load_max"] * (0.5 + res["overhead_ms"]) / 1e3)
    assert res["overhead_ms"] >= 0 and res["workers"] == WORKERS and res["cost_ms"] == 0.5


@pytest.mark.parametrize("args,message", [
    (["--strategies", "las"], r"^error: shedder las sheds in front of one operator; a windowed live run executes "
                              r"the partition strategies \(fld, shedpart\); `skewbench live` runs the operator shedders$"),
    (["--strategies", "nope"], r"^error: unknown shedding strategy 'nope' \(known: "),
    (["--strategies", ","], r"^error: no strategy to run: name the partition strategies"),
    (["--windows", "0"], r"^error: --windows must be at least 1, got 0$"),
    (["--cost", "0"], r"^error: --cost must be in \(0, 1000\] ms, got 0$"),
    (["--workers", "0"], r"^error: --workers must be in \[1, 64\], got 0$"),
])
def test_bad_input_is_one_line_and_exit_2_before_spark(burst, tmp_path, args, message):
    import re

    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["live-windows", str(burst), "--out", str(out), *args], catch_exceptions=False)
    assert r.exit_code == 2 and len(r.stderr.splitlines()) == 1 and re.match(message, r.stderr), r.stderr
    assert not out.exists()


def test_a_stream_without_values_or_windows_is_refused(tmp_path):
    from skewbench.datasets.generators import StreamSpec, generate

    ds = tmp_path / "zipf"
    generate(StreamSpec.zipf(1.0, 100, 1000, 1), ds, name="zipf")
    with pytest.raises(SkewbenchError, match=r"a windowed aggregation needs a value column, which the dataset lacks$"):
        lw.decide(str(ds), "shedpart", 2)
    with pytest.raises(SkewbenchError, match=r"^windows must be at least 1, got 0$"):
        lw.decide(str(ds), "fld", 2, windows=0)
    assert np.array_equal(lw.window_phase(lw.WindowDecisions("fld", 2, np.array([[3, 1]]), np.array([[2, 1]]),
                                                             np.zeros(1), np.zeros(1), 1.0, 0.5), 0, 1.0).loads,
                          [2, 1])
