"""The overview's capacity curves and skew ceilings (skewbench.present.overview: "How many workers",
ceiling_line) on a real night: two tiny generated datasets replayed through the command line by the
grouping family with its default capacity sweep, at n = 5 and 64, the overview rendered and opened in a
real headless Chromium: a figure per dataset whose alt text names every strategy and whose caption names
the strategies that never reach a target rate, and, in "What to pick", the line of the skew ceilings
below n = 64 naming the right strategies with their numbers, all computed here from the results files."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from skewbench import registry
from skewbench.cli import main
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.present.overview import render_overview
from skewbench.results import load_results

CHROMIUM = "/usr/bin/chromium"
DATASETS = {"zipf-0.8": 0.8, "zipf-1.4": 1.4}
STRATEGIES = "kg,sg,pkg,dc"
LARGEST = 64


@pytest.fixture(scope="module")
def night(tmp_path_factory):
    root = tmp_path_factory.mktemp("capacity-overview")
    dirs = []
    for name, alpha in DATASETS.items():
        generate(StreamSpec.from_dict({"generator": "zipf", "n_keys": 500, "seed": 3,
                                       "phases": [{"tuples": 6000, "alpha": alpha}],
                                       "cost": {"model": "levels", "levels": 16, "low": 0.1, "high": 6.4}}),
                 root / "data" / name, name=name)
        out = root / "runs" / name / "grouping"
        r = CliRunner().invoke(main, ["replay", "grouping", "--dataset", str(root / "data" / name), "--strategies",
                                      STRATEGIES, "--workers", f"5,{LARGEST}", "--sources", "2", "--out", str(out)],
                               catch_exceptions=False)
        assert r.exit_code == 0, r.output
        dirs.append(out)
    page = render_overview(dirs, root / "overview.html")
    summaries = {m["dataset"]["name"]: s.to_pandas() for _, m, s, _ in load_results(dirs)}
    return {"page": page, "summaries": summaries}


@pytest.fixture(scope="module")
def seen(night):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no browser: {CHROMIUM} is missing (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (make install installs it)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            tab = browser.new_page(viewport={"width": 1300, "height": 1000})
            tab.goto(night["page"].as_uri(), wait_until="load")
            return tab.evaluate("""() => ({
                figures: [...document.querySelectorAll('#how-many-workers figure.capacity')].map(f => ({
                    alt: f.querySelector('img').alt, caption: f.querySelector('figcaption').innerText,
                    ok: f.querySelector('img').complete && f.querySelector('img').naturalWidth > 0})),
                ceilings: [...document.querySelectorAll('#what-to-pick .ceilings')].map(e => ({
                    tag: e.tagName, text: e.innerText, bold: [...e.querySelectorAll('b')].map(b => b.innerText),
                    visible: e.getBoundingClientRect().height > 0})),
                nav: [...document.querySelectorAll('nav a')].map(a => a.getAttribute('href')),
                ids: [...document.querySelectorAll('[id]')].map(e => e.id),
                links: [...document.querySelectorAll('#what-to-pick .ceilings a')].map(a => a.getAttribute('href')),
                heights: Object.fromEntries(['what-to-pick', 'how-many-workers'].map(
                    id => [id, document.getElementById(id).getBoundingClientRect().height])),
            })""")
        finally:
            browser.close()


def _order(labels):
    names = registry.names("grouping")
    return sorted(labels, key=names.index)


def _first_settings(summary):
    """Each strategy's first setting (fewest sources, then seed, then workers), as the results hold it."""
    return summary.sort_values(["sources", "seed", "workers"], kind="stable").drop_duplicates("strategy")


def _rate(v: float) -> str:
    return f"{v:,.0f}" if v >= 1000 else f"{v:.3g}"


def test_a_capacity_figure_per_dataset_naming_every_strategy_and_those_never_reaching_a_rate(seen, night):
    assert "#how-many-workers" in seen["nav"]
    assert [f["alt"] for f in seen["figures"]] == [
        f"grouping {ds} capacity against workers and demand: " + ", ".join(_order(STRATEGIES.split(",")))
        for ds in DATASETS]
    assert all(f["ok"] for f in seen["figures"])
    for f, ds in zip(seen["figures"], DATASETS, strict=True):
        first = _first_settings(night["summaries"][ds])
        never = {r.strategy: [rate for rate, d in zip(r.demand_rates, r.demand) if d == 0]
                 for r in first.itertuples() if 0 in list(r.demand)}
        assert never, "every strategy reaches every rate: the caption's note is not exercised"
        assert f["caption"].endswith("never reached with up to 1,024 workers: " + ", ".join(
            f"{s} ({' and '.join(_rate(x) for x in never[s])} tuples/s)" for s in _order(never))), f["caption"]


def test_the_ceiling_line_names_the_strategies_whose_ceiling_is_below_the_largest_n(seen, night):
    expected = []
    for ds in DATASETS:
        for r in _first_settings(night["summaries"][ds]).itertuples():
            if r.ceiling_workers == r.ceiling_workers and r.ceiling_workers < LARGEST:  # not null, below
                limit = (f"; the hottest key's limit {_rate(r.key_limit)}" if r.key_limit == r.key_limit else "")
                expected.append((r.strategy, f"at n={int(r.ceiling_workers)} on {ds} "
                                              f"({_rate(r.ceiling_capacity)} tuples/s{limit})"))
    # the night has ceilings below n = 64 and strategies without one (still growing, or above it)
    assert expected and {s for s, _ in expected} < set(STRATEGIES.split(","))
    (line,) = seen["ceilings"]
    assert line["visible"] and line["text"].startswith(f"skew ceilings below n={LARGEST}, the night's largest")
    names = _order(dict.fromkeys(s for s, _ in expected))
    assert line["bold"] == names
    if line["tag"] == "P":  # a few ceilings: every one in the line
        want = "; ".join(f"{s} " + ", ".join(t for s2, t in expected if s2 == s) for s in names)
        assert line["text"].endswith(f": {want}"), line["text"]
    else:
        assert all(t in line["text"] for _, t in expected)
    assert seen["links"] == ["#how-many-workers-grouping"] and "how-many-workers-grouping" in seen["ids"]
    print(f"\nsection heights: {seen['heights']}")
    assert seen["heights"]["what-to-pick"] < 1000 and seen["heights"]["how-many-workers"] < 1100, seen["heights"]


def test_no_section_and_no_line_without_a_sweep(night, tmp_path):
    """A replay without the capacity sweep (--scaling none: empty curve columns, no ceilings) shows
    neither the section "How many workers" nor its link, nor a line of ceilings."""
    ds = night["page"].parent / "data" / "zipf-1.4"
    r = CliRunner().invoke(main, ["replay", "grouping", "--dataset", str(ds), "--strategies", "kg,pkg", "--workers",
                                  f"5,{LARGEST}", "--sources", "2", "--metrics", "balance", "--scaling", "none",
                                  "--out", str(tmp_path / "r")], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    page = render_overview([tmp_path / "r"], tmp_path / "overview.html").read_text(encoding="utf-8")
    assert 'id="how-many-workers"' not in page and 'href="#how-many-workers' not in page
    assert 'class="ceilings"' not in page and 'class="pick-table"' in page
