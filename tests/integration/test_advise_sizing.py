"""``skewbench advise KEYS --rate R --cost MS``: the workers each partitioner needs, its skew
ceiling and where Flink's autoscaler settles (issue 42; skewbench.advise.sizing), checked on
keys whose answers are known by hand and against the rows ``advise`` already computes."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from skewbench.advise import advise
from skewbench.advise.rows import worker_loads
from skewbench.cli import main
from skewbench.errors import SkewbenchError
from skewbench.grouping import capacity as cp
from skewbench.grouping.strategies import engines

ENGINES = ("kafka", "flink", "spark-hash", "spark-sql")


def one_hot(hot: int, rest: int) -> dict[int, int]:
    """Key 0 with ``hot`` tuples, keys 1..rest with one each."""
    return {0: hot, **{k: 1 for k in range(1, rest + 1)}}


def rows(a) -> dict[str, dict]:
    return {r["partitioner"]: r for r in a.sizing["rows"]}


def test_a_key_above_what_one_worker_does_is_never_enough_for_a_keyed_partitioner():
    """Key 0 holds half of the tuples: at 3,000 tuples/s and 1 ms it alone needs 1,500 ms of work a
    second, so no partitioner that keeps it whole reaches the rate at any n (the row says why);
    splitting it (PKG: two choices) does."""
    a = advise(one_hot(5000, 5000), [8, 32], rate=3000, cost_ms=1.0)
    r = rows(a)
    for e in ENGINES:
        assert r[e]["workers_needed"] is None, e
        assert r[e]["why_not"] == "never: key 0 alone needs 1,500 ms of work per second (50.0% of 3,000 tuples/s at 1 ms)"
        assert max(c for c in r[e]["capacity"] if c is not None) <= a.sizing["key_limit"] * (1 + 1e-12)
    assert a.sizing["key_limit"] == pytest.approx(2000.0)  # 1000 * 10,000 / (5,000 * 1 ms)
    assert r["pkg"]["workers_needed"] is not None and r["pkg"]["why_not"] is None


def test_capacity_is_the_tables_busiest_worker_at_the_users_parallelisms():
    """At each of --workers, an engine's capacity is 1000 / (cost x its busiest worker's share) of
    the table's own row for that parallelism (computed apart, by engine_row)."""
    keys = {k: int(1000 // (k + 1)) + 1 for k in range(3000)}
    a = advise(keys, [8, 32], rate=5000, cost_ms=0.5)
    s = a.sizing
    for e in ENGINES:
        caps = dict(zip(s["workers"], rows(a)[e]["capacity"]))
        for p in (8, 32):
            row = a.row(e, p)
            assert caps[p] == pytest.approx(1000.0 * a.keys["tuples"] / (row["load_max"] * 0.5)), (e, p)
    # the needed workers: the first of the grid with that capacity, and none before it
    for name, r in rows(a).items():
        ns, caps = s["workers"], r["capacity"]
        if r["workers_needed"] is not None:
            i = ns.index(r["workers_needed"])
            assert caps[i] >= 5000 and all(c is None or c < 5000 for c in caps[:i]), name


def test_flinks_autoscaler_by_the_average_settles_where_the_busiest_worker_cannot_keep_up():
    """A hot key of 25% at 2,000 tuples/s and 1 ms: reachable (the key alone needs 500 ms a
    second). By the busiest subtask (Flink's default) the rule settles where the capacity reaches
    the rate; by the average it settles earlier, where Flink's keyBy's busiest worker cannot keep
    up (FLINK-30652's point), both recomputed here from Flink's own key groups."""
    keys = one_hot(2500, 7500)
    a = advise(keys, [2], rate=2000, cost_ms=1.0, current=2)
    r = rows(a)["flink"]
    P = a.sizing["max_parallelism"]
    ids = np.array(sorted(keys))
    counts = np.array([keys[k] for k in ids], dtype=np.float64)
    hashes = engines.engine_hashes("flink", ids.astype(np.int64), "long")

    def capacity(p: int) -> float:
        return cp.capacity(worker_loads(engines.engine_workers("flink", hashes, p, P), counts, p) * 1.0,
                           int(counts.sum()))

    by_max, by_avg = r["autoscaler_settles_at"], r["autoscaler_settles_at_avg"]
    assert by_max is not None and by_avg is not None
    assert capacity(by_max) >= 2000 > capacity(by_avg), (by_max, by_avg, capacity(by_max), capacity(by_avg))
    assert r["autoscaler"]["max"]["path"][0] == 2 and r["autoscaler"]["max"]["path"][-1] == by_max


def test_the_command_line_prints_and_emits_the_sizing(tmp_path):
    keys = tmp_path / "keys.txt"
    keys.write_text("\n".join(str(k) for k, c in one_hot(3000, 7000).items() for _ in range(c)) + "\n")
    r = CliRunner().invoke(main, ["advise", str(keys), "--workers", "4,16", "--rate", "2500", "--cost", "1",
                                  "--json"], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    s = json.loads(r.stdout)["sizing"]
    assert (s["rate"], s["cost_ms"], s["current"]) == (2500.0, 1.0, 4)
    for row in s["rows"]:
        assert {"workers_needed", "why_not", "ceiling_workers", "autoscaler_settles_at"} <= set(row)
        assert len(row["capacity"]) == len(s["workers"])
    r = CliRunner().invoke(main, ["advise", str(keys), "--workers", "4,16", "--rate", "2500", "--cost", "1"],
                           catch_exceptions=False)
    assert r.exit_code == 0 and "workers needed for 2,500 tuples/s at 1 ms a tuple" in r.stdout
    plain = CliRunner().invoke(main, ["advise", str(keys), "--workers", "4,16", "--json"], catch_exceptions=False)
    assert "sizing" not in json.loads(plain.stdout)  # without a rate: the table as before


@pytest.mark.parametrize(("args", "message"), [
    (["--rate", "100"], r"^error: --rate and --cost go together: the input rate \(tuples/s\) and the cost of a tuple \(ms\)$"),
    (["--rate", "-5", "--cost", "1"], r"^error: --rate is a positive number, got -5$"),
    (["--rate", "fast", "--cost", "1"], r"^error: --rate takes a number, got 'fast'$"),
    (["--current", "4"], r"^error: --current needs --rate and --cost$"),
    (["--rate", "10", "--cost", "1", "--flink-max-parallelism", "256", "--current", "500"],
     r"^error: --current 500 is above Flink's max parallelism 256$"),
])
def test_bad_sizing_options_are_one_line_and_exit_2(tmp_path, args, message):
    keys = tmp_path / "keys.txt"
    keys.write_text("a\nb\na\n")
    r = CliRunner().invoke(main, ["advise", str(keys), "--workers", "4", *args], catch_exceptions=False)
    assert r.exit_code == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert re.match(message, r.stderr.strip()), r.stderr


def test_the_python_call_refuses_a_rate_without_a_cost():
    with pytest.raises(SkewbenchError, match=r"^--rate and --cost go together"):
        advise({"a": 2, "b": 1}, [2], rate=10.0)


def test_on_a_held_out_stream_the_average_rule_settles_below_the_demand():
    """Issue 42's question on a stream no check was tuned on: a Zipf(1.2) sample of 10^5 tuples
    over 10^4 keys (seed 4242), Flink's keyBy, 1 ms a tuple, at 60% of the rate the hottest key
    alone allows, Flink's autoscaler started from 2 subtasks. The demand is scanned over every
    parallelism up to the max parallelism (not the grid), with Flink's key groups recomputed.
    Found (2026-11-29): at 2,895 tuples/s the demand is 7 subtasks (capacity 3,679); by the
    average busy time the rule settles at 6 (2 -> 6), whose busiest subtask manages 2,660: below
    the rate; by the busiest (Flink's default) at 15 (2 -> 8 -> 15; 4,183), twice the demand, as
    it sizes for 70% utilisation and a restart's catch-up."""
    rng = np.random.default_rng(4242)
    w = 1.0 / np.arange(1, 10_001) ** 1.2
    sample = rng.choice(10_000, size=100_000, p=w / w.sum())
    ids, counts = np.unique(sample, return_counts=True)
    keys = {int(k): int(c) for k, c in zip(ids, counts)}
    limit = 1000.0 * counts.sum() / counts.max()
    rate = 0.6 * limit
    a = advise(keys, [2], rate=rate, cost_ms=1.0, current=2, alternatives=[])
    r = rows(a)["flink"]
    P = a.sizing["max_parallelism"]
    hashes = engines.engine_hashes("flink", ids.astype(np.int64), "long")

    def capacity(p: int) -> float:
        return cp.capacity(worker_loads(engines.engine_workers("flink", hashes, p, P), counts.astype(np.float64), p),
                           int(counts.sum()))

    demand = next(p for p in range(1, P + 1) if capacity(p) >= rate)
    by_max, by_avg = r["autoscaler_settles_at"], r["autoscaler_settles_at_avg"]
    assert capacity(by_max) >= rate and by_max >= demand
    assert by_avg < demand and capacity(by_avg) < rate
    assert (round(rate), demand, by_avg, by_max) == (2895, 7, 6, 15)
    assert (r["autoscaler"]["avg"]["path"], r["autoscaler"]["max"]["path"]) == ([2, 6, 6], [2, 8, 15, 15])


def test_the_page_draws_the_capacity_curves_in_a_browser(tmp_path):
    """``--html`` with a rate: every partitioner's curve, its points where its capacities put them
    (a curve reaches the rate's line exactly when the partitioner has a workers_needed), a ring
    per skew ceiling; checked on the page as Chromium lays it out."""
    from pathlib import Path

    chromium = "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.skip(f"no browser: {chromium} is missing (apt-get install chromium)")
    playwright = pytest.importorskip("playwright.sync_api")
    keys = tmp_path / "keys.txt"
    rng = np.random.default_rng(4242)
    keys.write_text("\n".join(str(k) for k in rng.zipf(1.3, 40_000) % 5_000) + "\n")
    out = tmp_path / "advise.html"
    r = CliRunner().invoke(main, ["advise", str(keys), "--workers", "8,32", "--rate", "20000", "--cost", "0.5",
                                  "--json", "--html", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    s = json.loads(r.stdout)["sizing"]
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            tab = browser.new_page(viewport={"width": 1300, "height": 1000})
            errors: list[str] = []
            tab.on("pageerror", lambda e: errors.append(str(e)))
            tab.goto(out.as_uri(), wait_until="load")
            got = tab.evaluate("""() => ({
                curves: Object.fromEntries([...document.querySelectorAll('svg.capacity-chart polyline.curve')].map(
                    c => [c.dataset.partitioner, [...c.points].map(q => [q.x, q.y])])),
                rings: [...document.querySelectorAll('svg.capacity-chart circle.ceiling')].map(c => c.dataset.partitioner),
                levels: [...document.querySelectorAll('svg.capacity-chart line.level')].map(l => +l.getAttribute('y1')),
                rows: [...document.querySelectorAll('table.sizing tr[data-partitioner]')].map(r => r.dataset.partitioner),
                width: document.querySelector('svg.capacity-chart').getBoundingClientRect().width})""")
        finally:
            browser.close()
    assert errors == [] and got["width"] >= 600
    names = [row["partitioner"] for row in s["rows"]]
    assert sorted(got["curves"]) == sorted(names) and got["rows"] == names
    assert sorted(got["rings"]) == sorted(row["partitioner"] for row in s["rows"] if row["ceiling_workers"])
    rate_y = got["levels"][0]  # the rate's line first, then the key's limit
    for row in s["rows"]:
        pts = got["curves"][row["partitioner"]]
        caps = [c for c in row["capacity"] if c is not None]
        assert len(pts) == len(caps)
        assert [x for x, _ in pts] == sorted(x for x, _ in pts)  # workers left to right
        # higher capacity is higher on the page (smaller y), point for point
        order = sorted(range(len(caps)), key=lambda i: caps[i])
        assert [pts[i][1] for i in order] == sorted((y for _, y in pts), reverse=True)
        reaches = min(y for _, y in pts) <= rate_y + 0.05
        assert reaches == (row["workers_needed"] is not None), row["partitioner"]
