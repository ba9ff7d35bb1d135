"""The live page's repetitions and seconds (skewbench.present.livepage), from hand-made rows (no
engine): each strategy's median with its repetitions' range, the pairs not separated named, a
figure per second of each Flink phase whose lines are the row's series, the table's new columns,
and a page that renders from rows without series (Spark's, and rows read back from MLflow)."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image

from skewbench.present import livepage

CAL = {"overhead_ms": 0.12, "transport_ms": 0.07, "capacity": 6002, "overhead_per_worker_ms": [0.11, 0.13],
       "tuples": {"idle": 12000}}


def _series(shift: float) -> dict:
    """One repetition of a 2-worker, 4-second phase (Flink's samples end at 0.7, 1.7, ... s)."""
    return {"engine": {"worker_throughput": [[10.0 + shift, 20.0, 30.0, 0.0], [5.0, 6.0 + shift, 7.0, 0.0]],
                       "source_blocked_ms": [0.0, 40.0 + shift, 10.0, 0.0]},
            "predicted": {"worker_throughput": [[11.0, 21.0, 31.0, 0.0], [4.0, 5.0, 6.0, 1.0]],
                          "source_blocked_ms": [0.0, 35.0, 12.0, 0.0]},
            "flink": {"t_s": [0.7, 1.7, 2.7, 3.7], "worker_records_in_per_s": [[9.0, 19, 29, 0], [4.0, 5, 6, 0]],
                      "worker_busy_ms_per_s": [[100.0, 200, 300, 0], [50.0, 60, 70, 0]],
                      "source_t_s": [0.7, 1.7, 2.7, 3.7], "source_backpressured_ms_per_s": [0.0, 55.0, 20.0, 0.0]}}


def _flink(strategy: str, routing: str, thr: tuple[float, float, float, float],
           lat: tuple[float, float, float, float]) -> dict:
    """A Flink row: (median, min, max, predicted) of the throughput and the p99 latency."""
    return {"engine": "flink", "strategy": strategy, "family": "grouping", "routing": routing, "workers": 2,
            "repeat": 2, "window_s": [0.5, 3.0], "calibration_before": CAL,
            "calibration_after": {**CAL, "overhead_ms": 0.1}, "overhead_ms": 0.12, "transport_ms": 0.07,
            "throughput_measured": thr[0], "throughput_measured_min": thr[1], "throughput_measured_max": thr[2],
            "throughput_predicted": thr[3], "throughput_ratio": thr[0] / thr[3],
            "latency_p99_measured_ms": lat[0], "latency_p99_measured_ms_min": lat[1],
            "latency_p99_measured_ms_max": lat[2], "latency_p99_predicted_ms": lat[3],
            "latency_p99_ratio": lat[0] / lat[3], "merge_records": 12.0, "source_backpressured_ms": 75.0,
            "source_backpressured_predicted_ms": 47.0, "dropped": 0, "subtask_records": [60, 18],
            "series": [_series(0.0), _series(1.0)]}


def _spark(strategy: str) -> dict:
    return {"engine": "spark", "strategy": strategy, "family": "grouping", "routing": "routed", "repeat": 2,
            "calibration_before": {"overhead_ms": 0.2, "tuples": 400}, "calibration_after": {"overhead_ms": 0.21},
            "throughput_measured": 900.0, "throughput_measured_min": 880.0, "throughput_measured_max": 910.0,
            "throughput_predicted": 950.0, "makespan_measured_s": 1.0, "makespan_measured_s_min": 0.98,
            "makespan_measured_s_max": 1.1, "makespan_predicted_s": 0.9, "subtask_records": [40, 38]}


ROWS = [_flink("kg", "routed", (300, 290, 310, 320), (900, 850, 950, 1000)),
        _flink("pkg", "routed", (305, 295, 312, 330), (30, 25, 40, 20)),
        _flink("flink", "native", (280, 280, 280, 290), (1200, 1100, 1300, 1250)), _spark("kg")]
RUN = {"dataset": "d", "rows": ROWS,
       "stream": {"tuples": 4000, "workers": 2, "rate": 1000.0, "cost_model": "fixed 1 ms", "work": "sleep", "repeat": 2},
       "agreement": [{"engine": "flink", "metric": "throughput", "strategies": 3, "kendall_tau": 0.0,
                      "kendall_tau_plain": 0.33, "not_separated": [["kg", "pkg"]]},
                     {"engine": "flink", "metric": "latency_p99_ms", "strategies": 3, "kendall_tau": 1.0,
                      "kendall_tau_plain": 1.0, "not_separated": []}],
       "calibrations": {"flink": {"before": CAL, "after": {**CAL, "overhead_ms": 0.1}},
                        "spark": {"before": {"overhead_ms": 0.2}, "after": {"overhead_ms": 0.21}}}}


def _png(data: bytes) -> Image.Image:
    img = Image.open(io.BytesIO(data))
    img.load()
    assert img.format == "PNG"
    return img


def test_each_strategy_is_its_median_with_a_bar_over_its_repetitions_range():
    fig = livepage.measured_figure(ROWS, "flink", "latency_p99", "t", tau=1.0, tau_plain=1.0)
    ax = fig.axes[0]
    bars = {ln.get_gid(): (list(ln.get_xdata()), list(ln.get_ydata())) for ln in ax.lines if ln.get_gid()}
    # at the predicted value, from the minimum to the maximum of the repetitions
    assert bars == {"range/kg": ([1000, 1000], [850, 950]), "range/pkg": ([20, 20], [25, 40]),
                    "range/flink (native)": ([1250, 1250], [1100, 1300])}
    # the axes hold every bar (the latencies span more than LOG_SPAN: logarithmic)
    assert ax.get_yscale() == "log" and ax.get_ylim()[0] < 20 and ax.get_ylim()[1] > 1300
    assert "medians alone: 1.00" in ax.get_title()
    # a strategy whose repetitions all measured the same has no bar
    thr = livepage.measured_figure(ROWS, "flink", "throughput", "t")
    assert sorted(ln.get_gid() for ln in thr.axes[0].lines if ln.get_gid()) == ["range/kg", "range/pkg"]
    assert _png(livepage.figure_png(ROWS, "spark", "makespan", "t")).size == (540, 460)


def test_a_flink_phase_second_by_second_draws_the_rows_series():
    row = ROWS[0]
    fig = livepage.series_figure(row, "t")
    top, bottom = fig.axes
    lines = {ln.get_gid(): ln for ln in top.lines + bottom.lines if ln.get_gid()}
    s = row["series"][0]  # the first repetition
    for w in range(2):
        # each second's tuples at the second's middle: measured solid, predicted dashed
        assert list(lines[f"measured/{w}"].get_xdata()) == [0.5, 1.5, 2.5, 3.5]
        assert list(lines[f"measured/{w}"].get_ydata()) == s["engine"]["worker_throughput"][w]
        assert lines[f"measured/{w}"].get_linestyle() == "-"
        assert list(lines[f"predicted/{w}"].get_ydata()) == s["predicted"]["worker_throughput"][w]
        assert lines[f"predicted/{w}"].get_linestyle() == "--"
        assert lines[f"measured/{w}"].get_color() == lines[f"predicted/{w}"].get_color()
    # the sources: Flink's back-pressure at its sampling intervals' middles, the blocking measured and modelled
    assert list(lines["sources/flink"].get_xdata()) == pytest.approx([0.2, 1.2, 2.2, 3.2])
    assert list(lines["sources/flink"].get_ydata()) == s["flink"]["source_backpressured_ms_per_s"]
    assert list(lines["sources/measured"].get_ydata()) == s["engine"]["source_blocked_ms"]
    assert list(lines["sources/predicted"].get_ydata()) == s["predicted"]["source_blocked_ms"]
    assert [t.get_text() for t in bottom.get_legend().get_texts()] == [
        "back-pressured (Flink)", "blocked (records)", "blocked (model)"]
    # the measurement window shaded in both panels
    assert all([(p.get_x(), p.get_width()) for p in a.patches] == [(0.5, 2.5)] for a in (top, bottom))
    # the second repetition, on request
    second = {ln.get_gid(): ln for ln in livepage.series_figure(row, "t", repetition=1).axes[0].lines}
    assert list(second["measured/0"].get_ydata()) == row["series"][1]["engine"]["worker_throughput"][0]
    assert _png(livepage.series_png(row, "t")).size == (540, 460)


@pytest.mark.parametrize("series", [None, [], [None], [{"engine": {}, "predicted": {}}], "[]"])
def test_a_row_without_series_has_no_figure_per_second(series):
    assert livepage.series_png({**ROWS[0], "series": series}, "t") is None
    assert livepage.series_png(ROWS[3], "t") is None  # Spark's rows have none


def test_the_page_notes_the_pairs_not_separated_and_tabulates_the_repetitions():
    html = livepage.page_html("t", [RUN])
    # 2 Flink figures, one per second per Flink strategy, 2 Spark figures
    assert html.count("<img ") == 2 + 3 + 2
    for label in ("kg", "pkg", "flink (native)"):
        assert f'alt="d flink {label} per second"' in html
    assert "d spark kg per second" not in html
    assert "not separated by the repetitions (their ranges overlap, a tie for the rank agreement): kg and pkg" in html
    assert html.count("not separated by the repetitions") == 1  # the latency separates them all
    # the calibrations of each engine, before and after
    assert "flink: calibration before the strategies: per-tuple overhead 0.12 ms, transport 0.07 ms, capacity " \
           "6,002 tuples/s; after the strategies: per-tuple overhead 0.1 ms" in html
    # the table: the median and the range, the runs, the window, the overheads, merge records, back-pressure
    assert '300<br><span class="range">290–310</span>' in html
    assert '900<br><span class="range">850–950</span>' in html
    assert "0.5–3.0" in html and "0.12 / 0.1" in html and "75 / 47" in html and ">12<" in html
    assert '1<br><span class="range">0.98–1.1</span>' in html  # Spark's makespan
    # a column no row has a value in is left out: a Spark run has no latency, window or back-pressure
    spark = livepage.page_html("t", [{"dataset": "s", "rows": [ROWS[3]]}])
    assert "makespan measured (s) (range)" in spark and "overhead before / after (ms)" in spark
    assert not any(h in spark for h in ("p99 measured", "window (s)", "back-pressured", "merge records"))
    assert all(h in html for h in ("p99 measured", "window (s)", "back-pressured", "merge records"))


def test_rows_read_back_from_mlflow_render_without_series():
    """As skewbench.present.site reads a live run back: params as strings, metrics flattened, the
    calibrations as the tags' JSON, no series, the agreement's pairs as the parent's tag (JSON)."""
    back = []
    for r in ROWS:
        row = {k: v for k, v in r.items() if k not in ("series", "window_s", "calibration_before", "calibration_after")}
        row.update({"workers": "2", "subtask_records": json.dumps(r["subtask_records"]),
                    "calibration_before": json.dumps(r["calibration_before"])})
        row.update({f"calibration_after.{k}": v for k, v in r["calibration_after"].items()
                    if not isinstance(v, (list, dict))})
        if "window_s" in r:
            row.update({"window_s.start": r["window_s"][0], "window_s.end": r["window_s"][1]})
        back.append(row)
    run = {**RUN, "rows": back, "calibrations": {}, "overheads": {"flink": {"overhead_ms": 0.12, "transport_ms": 0.07}},
           "agreement": [{**a, "not_separated": json.dumps(a["not_separated"])} for a in RUN["agreement"]]}
    html = "\n".join(livepage.run_sections(run, heading="h3", links=False))
    assert html.count("<img ") == 4 and "per second" not in html
    assert "kg and pkg" in html and "0.5–3.0" in html and "0.12 / 0.1" in html and "[60, 18]" in html
    assert "flink: per-tuple overhead 0.12 ms, transport 0.07 ms" in html  # an older run's overheads
    assert livepage.calibration(back[0], "before") == CAL
    assert livepage.calibration(back[0], "after") == {"overhead_ms": 0.1, "transport_ms": 0.07, "capacity": 6002}
    assert livepage.calibration({"engine": "spark"}, "before") == {}
