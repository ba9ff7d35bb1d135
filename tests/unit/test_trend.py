"""The nightly trend's pure pieces: tolerances, verdicts, trend keys, summaries, the report section."""

from __future__ import annotations

import hashlib

import pytest

from skewbench import trend
from skewbench.results import Metric
from skewbench.trend import CHANGED, NEW, SAME, Tolerance, compare

PARAMS = {"strategy": "fixed-d", "workers": "5", "sources": "2", "seed": "0", "dataset": "z",
          "dataset_fingerprint": "f" * 64, "p.d": "2", "p.theta": "null", "c.window": "2000"}
METRICS = {"imbalance": 0.0125, "latency_mean": 3.5, "pairs": 1234.0, "s.head": 7.0,
           "time.route_seconds": 0.25, "window.imbalance_cum": 0.5}


def night(metrics=None, params=None):
    m = {**METRICS, **(metrics or {})}
    return {"metrics": {k: v for k, v in m.items() if v is not None}, "params": {**PARAMS, **(params or {})}}


def test_no_previous_night_is_new():
    v = compare(None, night())
    assert v.status == NEW and v.text == "new" and not v.changed


def test_identical_nights_are_no_change():
    v = compare(night(), night())
    assert v.status == SAME and v.text == "no change" and v.metrics == [] and v.params == []
    assert v.compared == 4  # imbalance, latency_mean, pairs, s.head: not time.* nor window.*


def test_timing_and_window_metrics_are_ignored():
    v = compare(night(), night({"time.route_seconds": 9.0, "window.imbalance_cum": 0.9}))
    assert v.status == SAME
    # so is a curve (a step metric whose latest value MLflow holds): its summaries are compared
    v = compare(night({"curve.scaling_capacity": 1000.0}), night({"curve.scaling_capacity": 2000.0}))
    assert v.status == SAME and v.compared == 4
    # a timing metric present on one side only is not a change either
    v = compare(night({"time.route_seconds": None}), night({"time.extra": 1.0}))
    assert v.status == SAME


@pytest.mark.parametrize("old,new,same", [
    (1.0, 1.0 + 1e-10, True),             # within the relative 1e-9
    (1.0, 1.0 + 1e-8, False),             # beyond it
    (1e6, 1e6 * (1 + 5e-10), True),
    (0.0, 1e-13, True),                   # within the absolute 1e-12 near zero
    (0.0, 1e-11, False),
    (-2.0, 2.0, False),
    (float("nan"), float("nan"), True),
    (float("inf"), float("inf"), True),
    (float("inf"), 1e308, False),
    (None, None, True),
    (None, 0.0, False),
])
def test_exact_tolerance_edges(old, new, same):
    assert trend.EXACT.same(old, new) is same
    assert trend.EXACT.same(new, old) is same


def test_a_moved_metric_is_changed_with_old_and_new():
    v = compare(night(), night({"imbalance": 0.0126, "s.head": 8.0}))
    assert v.status == CHANGED
    assert v.metrics == [("imbalance", 0.0125, 0.0126), ("s.head", 7.0, 8.0)]
    assert v.text == "changed: imbalance, s.head"


def test_a_metric_that_appears_or_disappears_is_a_change():
    v = compare(night({"pairs": None}), night())
    assert v.changed and v.metrics == [("pairs", None, 1234.0)]
    v = compare(night(), night({"latency_mean": None}))
    assert v.changed and v.metrics == [("latency_mean", 3.5, None)]


def test_a_changed_strategy_parameter_is_reported():
    v = compare(night(), night({"imbalance": 0.02}, {"p.d": "3"}))
    assert v.changed and v.params == [("p.d", "2", "3")]
    assert v.text == "changed: imbalance; params: p.d"
    # a parameter change alone (the metrics did not move) is still a change
    v = compare(night(), night(params={"p.d": "3"}))
    assert v.changed and v.metrics == [] and v.text == "changed: params: p.d"


def test_a_family_may_loosen_a_metric_tolerance():
    metrics = [Metric("imbalance", "x", trend_tolerance=(1e-3, 0.0)), Metric("pairs", "y"),
               Metric("imbalance", "series", table="series", trend_tolerance=(1.0, 1.0))]
    tol = trend.tolerances(metrics)
    assert tol == {"imbalance": Tolerance(1e-3, 0.0)}
    assert compare(night(), night({"imbalance": 0.0125 * (1 + 5e-4)}), tol).status == SAME
    assert compare(night(), night({"imbalance": 0.0125 * (1 + 5e-3)}), tol).changed
    assert compare(night(), night({"pairs": 1235.0}), tol).changed


def test_trend_key_leaves_out_strategy_parameters_and_the_dataset_name():
    a = trend.key_fields("grouping", PARAMS)
    assert "p.d" not in a and "dataset" not in a and a["family"] == "grouping" and a["c.window"] == "2000"
    same = trend.trend_keys("grouping", [PARAMS])[0]
    assert trend.trend_keys("grouping", [{**PARAMS, "p.d": "3", "dataset": "renamed"}])[0] == same
    # known answer: the first 16 hex digits of SHA-256 over the key's canonical JSON, written out
    # here (sorted keys, no spaces, "family" added, "p.*" and "dataset" left out); the digest is
    # from coreutils' sha256sum of that text.  A logged key that changes loses every cell's history.
    text = ('{"c.window":"2000","dataset_fingerprint":"' + "f" * 64 + '","family":"grouping","seed":"0",'
            '"sources":"2","strategy":"fixed-d","workers":"5"}')
    assert trend.key_hash(a) == same == "4067556c234cba82"
    assert hashlib.sha256(text.encode()).hexdigest()[:16] == same
    for k, v in (("workers", "10"), ("seed", "1"), ("dataset_fingerprint", "e" * 64), ("c.window", "1000"),
                 ("strategy", "pkg")):
        assert trend.trend_keys("grouping", [{**PARAMS, k: v}])[0] != same, k
    assert trend.trend_keys("shedding", [PARAMS])[0] != same


def test_a_param_added_later_at_its_implicit_value_keeps_the_cells_history():
    """Nights logged before the ``metrics`` column and the ``latency`` option existed had every
    metric: their cells keep their keys; a balance-only replay is another cell."""
    same = trend.trend_keys("grouping", [PARAMS])[0]
    assert trend.trend_keys("grouping", [{**PARAMS, "metrics": "all", "c.latency": "True"}])[0] == same
    for k, v in (("metrics", "balance"), ("c.latency", "False")):
        assert trend.trend_keys("grouping", [{**PARAMS, k: v}])[0] != same, k


def test_a_parameter_axis_keeps_its_cells_apart():
    cells = [{**PARAMS, "p.d": "2"}, {**PARAMS, "p.d": "3"}, {**PARAMS, "strategy": "pkg", "p.d": "x"}]
    keys = trend.trend_keys("grouping", cells)
    assert len(set(keys)) == 3
    # the single pkg cell keeps its plain key; the axis cells are stable from night to night
    assert keys[2] == trend.trend_keys("grouping", [cells[2]])[0]
    assert keys[:2] == trend.trend_keys("grouping", cells[:2])
    # known answers (sha256sum of the canonical JSON with the axis "p.d" added after "family"):
    # {"c.window":"2000","dataset_fingerprint":"ff..ff","family":"grouping","p.d":"2",...,"workers":"5"}
    assert keys[:2] == ["f8259130642a05f7", "2f629be8ff48eaed"]


def test_summary_and_description():
    verdicts = [{"dataset": "z", "cell": f"kg workers={n}", "status": SAME} for n in (5, 10)]
    assert trend.describe(trend.summarize(verdicts)) == "no change in 2 cells"
    verdicts.append({"dataset": "z", "cell": "fixed-d workers=5", "status": CHANGED, "text": "changed: imbalance"})
    verdicts.append({"dataset": "z", "cell": "pkg workers=5", "status": NEW})
    s = trend.summarize(verdicts)
    assert (s["cells"], s[NEW], s[SAME], s[CHANGED]) == (4, 1, 2, 1)
    assert [c["cell"] for c in s["changed_cells"]] == ["fixed-d workers=5"]
    assert trend.describe(s) == ("1 of 4 cells changed (2 no change, 1 new): "
                                 "z fixed-d workers=5: changed: imbalance")


def test_report_section():
    from skewbench.present.reports import trend_section

    same = [{"dataset": "z", "cell": "kg", "status": SAME}] * 3
    assert "No change in 3 cells." in trend_section(same)
    changed = [*same, {"dataset": "z", "cell": "fixed-d workers=5", "status": CHANGED,
                       "metrics": [["imbalance", 0.0125, 0.02], ["pairs", 1.0, 1.0 + 1e-12]],
                       "params": [["p.d", "2", "3"]], "previous_run": "abc"}]
    html = trend_section(changed)
    assert "Trend vs previous night" in html and "1 changed, 3 no change, 0 new" in html
    assert "imbalance: 0.0125 → 0.02" in html and "p.d: 2 → 3" in html and "abc" in html
    assert "pairs: 1.0 → 1.000000000001" in html  # too close for 6 digits: all of them


def test_figure(tmp_path):
    history = [("2026-01-01", {"imbalance": 0.1, "latency_mean": 2.0}), ("2026-01-02", {"imbalance": 0.1}),
               ("2026-01-03", {"imbalance": 0.2, "latency_mean": 2.5})]
    p = trend.figure(history, [("imbalance", "imbalance"), ("latency_mean", "latency mean"), ("nope", "nope")],
                     tmp_path / "t" / "trend.png", "a cell")
    assert p is not None and p.read_bytes()[:4] == b"\x89PNG"
    assert trend.figure(history, [("nope", "nope")], tmp_path / "x.png") is None
    # a metric that is 0 on the first night, one night only
    assert trend.figure([("n1", {"a": 0.0})], [("a", "a")], tmp_path / "y.png") is not None
