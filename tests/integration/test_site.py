"""The results site across nights (`skewbench site build`), from a real MLflow SQLite store.

Two nights of a small real grouping replay (two datasets) are logged as the nightly logs them
(the nightly's run key, run name and tags, through :func:`skewbench.tracking.log_run`); on the
second night fixed-d runs with d=3, so its headline metric moves.  The site is built by the
command line; its pages are opened in a real headless Chromium (Debian's, driven by Playwright).
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from PIL import Image

from skewbench import nightly, tracking
from skewbench.present import site
from skewbench.present.overview import pareto_front
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.errors import SkewbenchError
from skewbench.grouping.engine import ReplayConfig, grid, replay_to_dir
from skewbench.results import load_results
from skewbench.validation.results import validate_results

BIN = Path(sys.executable).parent / "skewbench"
CHROMIUM = "/usr/bin/chromium"
DAG = "skewbench_nightly"
STRATEGIES = ["kg", "pkg", "fixed-d"]
DATASETS = {"z12": 1.2, "z08": 0.8}
NIGHTS = {1: "2026-02-01T02:00:00+00:00", 2: "2026-02-02T02:00:00+00:00"}
LABELS = {1: "2026-02-01 02:00", 2: "2026-02-02 02:00"}
#: the capacity sweep's worker counts (with the cells' own 5 and 10)
SCALING = (1, 2, 4, 8, 16, 32, 64)


def _run_id(n: int) -> str:
    return f"scheduled__{NIGHTS[n]}"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Two nights logged to a SQLite store: (uri, {night: {dataset: results dir}})."""
    root = tmp_path_factory.mktemp("site")
    for name, alpha in DATASETS.items():
        generate(StreamSpec.zipf(alpha, 500, 10000, 1, cost={"model": "levels", "levels": 4, "low": 1, "high": 4}),
                 root / f"ds-{name}", name=name)
    uri = f"sqlite:///{root}/mlflow/mlflow.db"
    results: dict[int, dict[str, Path]] = {}
    for n in NIGHTS:
        params = {"fixed-d": {"d": [3]}} if n == 2 else None
        results[n] = {}
        for name in DATASETS:
            out = root / f"night{n}" / name / "grouping"
            replay_to_dir(root / f"ds-{name}", grid(STRATEGIES, [5, 10], [2], [0], params), out,
                          ReplayConfig(window=2000, scaling=SCALING))
            assert validate_results(out).success  # only validated results are logged
            results[n][name] = out
        tracking.log_run(list(results[n].values()), tracking_uri=uri,
                         run_key=nightly.run_key(DAG, _run_id(n), "grouping"),
                         run_name=nightly._run_name("grouping", _run_id(n), NIGHTS[n]),
                         tags=nightly._run_tags(DAG, _run_id(n), NIGHTS[n]))
    return uri, results, root


@pytest.fixture(scope="module")
def built(store):
    """The site, built by the command line as a user builds it."""
    uri, _, root = store
    out = root / "www"
    out.mkdir()  # an earlier build: replaced as a whole
    (out / site.MARKER).write_text("an earlier build")
    (out / "stale.html").write_text("from an earlier build")
    p = subprocess.run([str(BIN), "site", "build", "--out", str(out), "--tracking-uri", uri],
                       capture_output=True, text=True, timeout=300, env={**os.environ, "MPLBACKEND": "Agg"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"site: {out / 'index.html'}"
    assert not (out / "stale.html").exists() and (out / "index.html").is_file()
    assert [q.name for q in root.iterdir() if q.name.startswith(".www.")] == []  # no temporary left
    assert "dataset page 2/2" in p.stderr and "site: 2 night(s), 2 dataset page(s), 3 strategy page(s)" in p.stderr
    return out


def _data(page: Path) -> dict:
    m = re.search(r'<script type="application/json" id="skewbench-data">(.*?)</script>',
                  page.read_text(encoding="utf-8"), re.S)
    assert m, page
    return json.loads(m.group(1).replace("<\\/", "</"))


def _expected(results: dict[int, dict[str, Path]], dataset: str, metric: str) -> dict[str, dict[int, dict]]:
    """From the results files: {workers=N: {strategy: {night: mean of metric}}}."""
    out: dict = {}
    for n, dirs in results.items():
        (_, _, summary, _), = load_results([dirs[dataset]])
        df = summary.to_pandas().groupby(["workers", "strategy"])[metric].mean()
        for (w, s), v in df.items():
            out.setdefault(f"workers={w}", {}).setdefault(s, {})[n] = float(v)
    return out


def test_the_index_lists_both_nights(built):
    data = _data(built / "index.html")
    assert [(n["label"], n["run_id"]) for n in data["nights"]] == [(LABELS[2], _run_id(2)), (LABELS[1], _run_id(1))]
    assert all(n["parents"]["grouping"]["status"] == "FINISHED" for n in data["nights"])
    table = (built / "index.html").read_text(encoding="utf-8").split('id="skewbench-data"')[0]
    rows = re.findall(r"<tr><td>([^<]*)</td><td><code>([^<]*)</code>", table)
    assert rows == [(LABELS[2], _run_id(2)), (LABELS[1], _run_id(1))]  # the page, newest first
    assert (built / site.MARKER).is_file()


def test_each_dataset_page_trends_both_nights_per_strategy(built, store):
    _, results, _ = store
    metric, coord = site.headline("grouping")
    for name in DATASETS:
        fam = _data(built / f"dataset-{name}.html")["families"]["grouping"]
        trend = fam["trend"]
        assert (trend["metric"], trend["coordinate"]) == (metric, coord)
        assert trend["nights"] == [LABELS[1], LABELS[2]]
        expected = _expected(results, name, metric)
        assert set(trend["panels"]) == set(expected) == {"workers=5", "workers=10"}
        for panel, lines in trend["panels"].items():
            assert set(lines) == set(STRATEGIES)  # one line per strategy
            for strategy, points in lines.items():
                assert [p[0] for p in points] == [LABELS[1], LABELS[2]]
                assert [p[1] for p in points] == pytest.approx(
                    [expected[panel][strategy][1], expected[panel][strategy][2]], rel=1e-12)
        # fixed-d's d changed on the second night (its imbalance on z12 too); kg's cells did not
        if name == "z12":
            fd = trend["panels"]["workers=5"]["fixed-d"]
            assert fd[0][1] != fd[1][1]
        assert trend["panels"]["workers=5"]["kg"][0][1] == trend["panels"]["workers=5"]["kg"][1][1]
        # the trade-offs of the latest night, with a Pareto front in every panel
        assert fam["night"] == LABELS[2] and fam["tradeoffs"]
        for t in fam["tradeoffs"]:
            assert set(t["panels"]) == {"workers=5", "workers=10"}
            for pts in t["panels"].values():
                assert sorted(p["label"] for p in pts) == sorted(STRATEGIES)
                assert any(p["front"] for p in pts)


def _first_settings(summary):
    """Each strategy's first setting (fewest sources, then seed, then workers), as the results hold it."""
    return summary.sort_values(["sources", "seed", "workers"], kind="stable").drop_duplicates("strategy")


def test_each_dataset_page_has_the_latest_curves_and_the_capacity_at_the_ceiling_over_both_nights(built, store):
    """The latest night's curve of each strategy, read back from MLflow's step metric, point by point as
    the results files hold it, with its ceiling and key limit; and per night the capacity at the
    ceiling (at the curve's largest n where it still grows), fixed-d's moving with its d."""
    _, results, _ = store
    moved, ceilings, growing = set(), 0, 0
    for name in DATASETS:
        fam = _data(built / f"dataset-{name}.html")["families"]["grouping"]
        latest = {}
        for n in NIGHTS:
            (_, _, summary, _), = load_results([results[n][name]])
            latest[n] = {r["strategy"]: r for r in _first_settings(summary.to_pandas()).to_dict("records")}
        assert [c["label"] for c in fam["curves"]] == ["kg", "pkg", "fixed-d"]  # the strategy table's order
        for c in fam["curves"]:
            r = latest[2][c["label"]]
            assert c["workers"] == sorted({*SCALING, 5, 10}) == list(r["scaling_workers"])
            assert c["capacity"] == list(r["scaling_capacity"])
            ceiling = r["ceiling_workers"]
            assert c["ceiling"] == (None if ceiling != ceiling else [int(ceiling), r["ceiling_capacity"]])
            assert c["key_limit"] == (None if r["key_limit"] != r["key_limit"] else r["key_limit"])
        ceilings += sum(1 for c in fam["curves"] if c["ceiling"])
        growing += sum(1 for c in fam["curves"] if not c["ceiling"])
        assert any(c["key_limit"] for c in fam["curves"])
        trend = fam["capacity_trend"]
        assert trend["nights"] == [LABELS[1], LABELS[2]]
        assert set(trend["lines"]) == set(STRATEGIES)  # (the page's JSON sorts its keys)
        for label, points in trend["lines"].items():
            want = []
            for n in NIGHTS:
                r = latest[n][label]
                grows = r["ceiling_workers"] != r["ceiling_workers"]
                want.append([LABELS[n], r["scaling_capacity"][-1] if grows else r["ceiling_capacity"],
                             None if grows else int(r["ceiling_workers"])])
            assert points == want, (name, label)
            if points[0][1:] != points[1][1:]:
                moved.add(label)
    assert moved == {"fixed-d"}  # only fixed-d's cells changed on the second night
    assert ceilings and growing  # both kinds of point drawn


def test_one_colour_per_strategy_across_the_pages(built):
    seen: dict[str, set[str]] = {}
    for page in sorted(built.glob("*.html")):
        if page.name == "index.html":
            continue
        d = _data(page)
        maps = [f["colors"] for f in d["families"].values()] if "families" in d else [d["colors"]]
        for m in maps:
            for label, color in m.items():
                seen.setdefault(label, set()).add(color)
    assert set(seen) == set(STRATEGIES)
    assert all(len(c) == 1 for c in seen.values()), seen
    assert len({next(iter(c)) for c in seen.values()}) == len(STRATEGIES)


def test_pareto_front():
    # minimise both: (1, 3) and (2, 1) are the front, (3, 3) and (2, 2) are dominated
    assert pareto_front(list(zip([1, 2, 3, 2], [3, 1, 3, 2])), "min", "min") == [0, 1]
    # maximise y: (1, 1) is dominated by (1, 2); (3, 3) by nothing
    assert pareto_front(list(zip([1, 1, 3], [1, 2, 3])), "min", "max") == [1, 2]
    assert pareto_front([(1, 2), (1, 2)], "min", "min") == [0, 1]  # ties: neither dominates


def test_an_empty_store_is_one_clear_error(tmp_path):
    from click.testing import CliRunner

    from skewbench.cli import main

    uri = f"sqlite:///{tmp_path}/none/mlflow.db"
    p = CliRunner().invoke(main, ["site", "build", "--out", str(tmp_path / "www"), "--tracking-uri", uri])
    assert p.exit_code == 2
    assert p.stderr.strip().splitlines() == [
        f"error: no nights in the MLflow store {uri}: its database file does not exist "
        "(run the nightly pipeline first, e.g. make run)"]
    assert not (tmp_path / "none").exists() and not (tmp_path / "www").exists()


def test_a_store_without_nights_and_a_foreign_directory_are_refused(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    # a parent run logged outside the nightly (no DAG run tags) is not a night
    tracking.open_parent(uri, "grouping", "by-hand", "by hand", {})
    with pytest.raises(SkewbenchError, match=r"^no nights in the MLflow store .*no parent run tagged"):
        site.build_site(tmp_path / "www", uri)
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(SkewbenchError, match=r"is not a skewbench site .*refusing to replace it"):
        site.build_site(foreign, uri)
    assert (foreign / "notes.txt").read_text() == "keep me"


def _browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no browser: {CHROMIUM} is missing (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (make install installs it)")
    return sync_playwright


def test_every_page_renders_in_chromium_with_no_broken_image_or_link(built):
    sync_playwright = _browser()
    pages = sorted(built.glob("*.html"))
    assert {p.name for p in pages} == {"index.html", "dataset-z08.html", "dataset-z12.html",
                                       *(f"strategy-grouping-{s}.html" for s in STRATEGIES)}
    linked: set[str] = set()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            page = browser.new_page()
            for f in pages:
                page.goto(f.as_uri())
                page.wait_for_load_state("load")
                images = page.eval_on_selector_all(
                    "img", "els => els.map(e => [e.complete, e.naturalWidth, e.src.slice(0, 22)])")
                assert all(c and w > 0 and s == "data:image/png;base64," for c, w, s in images), (f.name, images)
                # and every PNG is whole (a truncated one still has a width)
                for src in page.eval_on_selector_all("img", "els => els.map(e => e.src)"):
                    Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))).load()
                if f.name.startswith("dataset-"):
                    # two trade-off plots, the trend, the capacity curves and the capacity at the ceiling
                    assert len(images) == 5, f.name
                elif f.name.startswith("strategy-"):
                    assert len(images) == 1, f.name
                hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
                assert hrefs, f.name
                for h in hrefs:
                    u = urlparse(h)
                    assert u.scheme == "file", (f.name, h)
                    target = Path(unquote(u.path))
                    assert target.is_file() and target.parent == built, (f.name, h)
                    if u.fragment:
                        assert f'id="{u.fragment}"' in target.read_text(encoding="utf-8"), (f.name, h)
                    linked.add(target.name)
        finally:
            browser.close()
    assert linked == {p.name for p in pages}  # every page is reachable
