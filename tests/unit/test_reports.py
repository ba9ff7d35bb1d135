"""Reports: every plot writes a readable PNG of the documented size; the HTML report is
self-contained and names every strategy and the run's context; the text summary."""

from __future__ import annotations

import json
import re

import matplotlib.image as mpimg
import pandas as pd
import pyarrow as pa
import pytest

from skewbench.present import plotting, reports
from skewbench.grouping import report as figures
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.errors import SkewbenchError
from skewbench.grouping.engine import ReplayConfig, grid, replay_to_dir
from skewbench.results import read_results

STRATEGIES = ["kg", "pkg", "wc", "osg"]
PLOTS = [figures.plot_imbalance_vs_workers, figures.plot_imbalance_over_time, figures.plot_latency_cdf,
         figures.plot_worker_loads]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("reports")
    out = []
    for name, alpha in (("z12", 1.2), ("z08", 0.8)):
        generate(StreamSpec.zipf(alpha, 300, 6000, 1, cost={"model": "levels", "levels": 4, "low": 1, "high": 4}),
                 root / f"ds-{name}", name=name)
        replay_to_dir(root / f"ds-{name}", grid(STRATEGIES, [4, 8], [2], [0, 1]), root / f"res-{name}",
                      ReplayConfig(window=600))
        out.append(root / f"res-{name}")
    return out


@pytest.fixture(scope="module")
def tables(results):
    _, summary, series = read_results(results[0])
    return summary, series


def _png_shape(path):
    img = mpimg.imread(path)
    return img.shape[:2]


EXPECTED = (round(plotting.FIGSIZE[1] * plotting.DPI), round(plotting.FIGSIZE[0] * plotting.DPI))


@pytest.mark.parametrize("plot", PLOTS, ids=lambda f: f.__name__)
def test_each_plot_writes_a_readable_png_of_the_right_size(plot, tables, tmp_path):
    summary, series = tables
    paths = plot(summary, series, tmp_path)
    # osg runs with one source and joins the 2-source panel: one figure for the dataset
    assert len(paths) == 1
    p = paths[0]
    assert p.parent == tmp_path and p.suffix == ".png" and p.stat().st_size > 5000
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert _png_shape(p) == EXPECTED


def test_plots_take_dataframes_and_a_worker_count(tables, tmp_path):
    summary, series = (t.to_pandas() for t in tables)
    (p,) = figures.plot_worker_loads(summary, series, tmp_path, workers=4, seed=1)
    assert p.name == "worker_loads_z12_s2_n4.png" and _png_shape(p) == EXPECTED
    (p,) = figures.plot_imbalance_over_time(summary, series, tmp_path)
    assert p.name == "imbalance_over_time_z12_s2_n8.png"  # default: the largest worker count
    with pytest.raises(SkewbenchError, match="no cells with 3 workers"):
        figures.plot_latency_cdf(summary, series, tmp_path, workers=3)


def test_one_figure_per_dataset(results, tmp_path):
    loaded = [read_results(r) for r in results]
    summary = pd.concat([s.to_pandas() for _, s, _ in loaded], ignore_index=True)
    paths = figures.plot_imbalance_vs_workers(summary, None, tmp_path)
    assert sorted(p.name for p in paths) == ["imbalance_vs_workers_z08_s2.png", "imbalance_vs_workers_z12_s2.png"]
    # series carry no dataset column: with several datasets they must say which rows are which
    series = pd.concat([t.to_pandas() for _, _, t in loaded], ignore_index=True)
    with pytest.raises(SkewbenchError, match="several datasets"):
        figures.plot_imbalance_over_time(summary, series, tmp_path)
    series["dataset"] = [n for (_, _, t), n in zip(loaded, ["z12", "z08"]) for _ in range(t.num_rows)]
    assert len(figures.plot_imbalance_over_time(summary, series, tmp_path)) == 2


def test_zero_imbalance_is_drawn_at_the_floor(tables, tmp_path):
    summary, series = (t.to_pandas() for t in tables)
    summary["imbalance"] = 0.0
    series["imbalance_cum"] = 0.0
    assert len(figures.plot_imbalance_over_time(summary, series, tmp_path)) == 1


def test_summary_table_means_over_seeds_and_labels_varying_params(tables):
    summary = tables[0].to_pandas()
    table = reports.summary_table(summary, "grouping")
    # W-C's capacity and theta follow n: not part of its label
    assert list(dict.fromkeys(table["label"])) == STRATEGIES
    assert (table["seeds"] == 2).all() and len(table) == 8
    kg4 = summary[(summary.strategy == "kg") & (summary.workers == 4)]
    row = table[(table.label == "kg") & (table.workers == 4)].iloc[0]
    assert row["imbalance"] == pytest.approx(kg4["imbalance"].mean())
    assert row["latency_p99"] == pytest.approx(kg4["latency_p99"].mean())
    # a parameter with two values at the same (n, s, seed) tells the cells apart
    wc = summary[summary.strategy == "wc"].copy()
    wc["params"] = [json.dumps({**json.loads(p), "eps": 0.01}) for p in wc["params"]]
    labels = set(reports.summary_table(pd.concat([summary, wc]), "grouping")["label"])
    assert {"wc (eps=0.0001)", "wc (eps=0.01)"} <= labels and "wc" not in labels


def test_html_report_is_self_contained(results, tmp_path):
    context = {"run id": "scheduled__2026-01-02T00:00:00+00:00", "logical date": "2026-01-02T00:00:00+00:00",
               "git commit": "0123456789abcdef", "note": "<script>alert(1)</script>"}
    out = reports.render_report(results, tmp_path / "r" / "report.html", "Nightly <grouping>", context,
                                plots_dir=tmp_path / "plots")
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert 'src="http' not in text and "<link" not in text and "<script" not in text
    assert "Nightly &lt;grouping&gt;" in text and "&lt;script&gt;" in text
    assert text.count('src="data:image/png;base64,') == 8  # 4 figures x 2 datasets
    for value in context.values():
        if "<" not in value:
            assert value in text
    for _, m, _, _ in [(r, *read_results(r)) for r in results]:
        assert m["dataset"]["fingerprint"] in text
    for s in STRATEGIES:
        assert re.search(rf"<td>{s}</td>", text)
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["z08", "z12"]
    assert len(list((tmp_path / "plots" / "z12").glob("*.png"))) == 4


def test_markdown_summary(results, tables):
    text = reports.render_markdown_summary(results)
    assert text.count("### ") == 2 and "### z12 (grouping" in text
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    assert lines[0].split("|")[1].strip() == "strategy"
    assert len(lines) == 2 * (2 + 8)
    for s in STRATEGIES:
        assert f"| {s} " in text
    assert reports.render_markdown_summary(tables[0], "grouping").count("\n|") == 9
    assert isinstance(tables[0], pa.Table)


def test_results_names_are_unique():
    ms = [{"family": "grouping", "dataset": {"name": "a", "fingerprint": "f1"}},
          {"family": "shedding", "dataset": {"name": "a", "fingerprint": "f1"}},
          {"family": "grouping", "dataset": {"name": "b/c", "fingerprint": "f2"}},
          {"family": "grouping", "dataset": {"name": "b/c", "fingerprint": "f3"}}]
    assert reports.results_names(ms) == ["a-grouping", "a-shedding", "b_c-grouping-f2", "b_c-grouping-f3"]
