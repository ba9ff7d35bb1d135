"""What to pick (skewbench.picks): the rules on small hand-made summaries (ties, missing metrics, a
single strategy, the engine default already best, constraints excluding every strategy, goal max,
the baseline absent), the families' declarations against their schemas, and the picks of a real
small replay's summary.parquet written by the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from skewbench import families
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.errors import SkewbenchError
from skewbench.picks import Pick, Rule, night_picks, picks_for
from skewbench.results import schema

BIN = Path(sys.executable).parent / "skewbench"

RULE = Rule("imbalance", "min", ("workers",), where=(("replication", "<=", 2.0),), baseline="kg",
            costs=("replication",), text="lowest imbalance with replication <= 2")


def summary(rows):
    """A grouping-shaped summary: rows of (strategy, workers, seed, imbalance, replication[, sources])."""
    out = []
    for r in rows:
        st, n, seed, imb, rep, *rest = r
        out.append({"dataset": "zipf-1.0", "strategy": st, "workers": n, "sources": rest[0] if rest else 5,
                    "seed": seed, "params": "{}", "imbalance": imb, "replication": rep})
    return pd.DataFrame(out)


def one(picks):
    assert len(picks) == 1, [p.line() for p in picks]
    return picks[0]


def test_mean_over_seeds_decides_and_costs_are_shown_against_the_baseline():
    # pkg: mean 0.2 over its seeds (one seed alone, 0.1, would beat dc's 0.15)
    df = summary([("kg", 5, 0, 0.5, 1.0), ("kg", 5, 1, 0.7, 1.0),
                  ("pkg", 5, 0, 0.1, 1.2), ("pkg", 5, 1, 0.3, 1.4),
                  ("dc", 5, 0, 0.15, 1.8), ("dc", 5, 1, 0.15, 1.6)])
    p = one(picks_for(df, "grouping", "zipf-1.0", [RULE]))
    assert (p.strategy, p.value, p.baseline_value) == ("dc", 0.15, pytest.approx(0.6))
    assert p.costs == {"replication": (pytest.approx(1.7), 1.0)} and p.ties == () and p.note == ""
    assert p.coords == {"workers": 5} and p.tag() == ("skewbench.pick.zipf-1.0.n5", "dc")
    assert p.line() == ("grouping zipf-1.0 n=5: pick dc (imbalance 0.15 vs kg 0.6; replication 1.7 vs 1) "
                        "-- rule: lowest imbalance with replication <= 2")


def test_a_pick_per_value_of_the_rules_coordinates():
    df = summary([("kg", 5, 0, 0.5, 1.0), ("pkg", 5, 0, 0.1, 1.2), ("kg", 10, 0, 0.05, 1.0), ("pkg", 10, 0, 0.2, 1.1)])
    picks = picks_for(df, "grouping", "zipf-1.0", [RULE])
    assert [(p.coords, p.strategy) for p in picks] == [({"workers": 5}, "pkg"), ({"workers": 10}, "kg")]
    assert [p.tag()[0] for p in picks] == ["skewbench.pick.zipf-1.0.n5", "skewbench.pick.zipf-1.0.n10"]


def test_ties_are_listed_and_the_first_by_name_is_picked():
    df = summary([("kg", 5, 0, 0.5, 1.0), ("pkg", 5, 0, 0.1, 1.2), ("dc", 5, 0, 0.1 * (1 + 1e-12), 1.3),
                  ("wc", 5, 0, 0.1 * (1 + 1e-6), 1.3)])
    p = one(picks_for(df, "grouping", "zipf-1.0", [RULE]))
    assert p.strategy == "dc" and p.ties == ("pkg",), p.line()
    assert "tied with pkg" in p.line()


def test_the_engine_default_already_best_is_the_pick_also_when_tied():
    df = summary([("kg", 5, 0, 0.01, 1.0), ("pkg", 5, 0, 0.1, 1.2)])
    p = one(picks_for(df, "grouping", "zipf-1.0", [RULE]))
    assert (p.strategy, p.value, p.baseline_value) == ("kg", 0.01, 0.01)
    assert p.note == "the baseline kg is already best" and " vs " not in p.line(rule=False)
    # dc sorts before kg: the baseline wins the tie all the same
    tied = one(picks_for(summary([("dc", 5, 0, 0.01, 1.2), ("kg", 5, 0, 0.01, 1.0)]), "grouping", "zipf-1.0",
                         [RULE]))
    assert tied.strategy == "kg" and tied.ties == ("dc",) and "already best (tied)" in tied.note


def test_a_single_strategy_is_its_own_pick():
    p = one(picks_for(summary([("pkg", 5, 0, 0.1, 1.2), ("pkg", 5, 1, 0.2, 1.2)]), "grouping", "zipf-1.0", [RULE]))
    assert p.strategy == "pkg" and p.value == pytest.approx(0.15)
    assert "only one strategy ran" in p.note and "the baseline kg did not run" in p.note
    assert p.baseline_value is None and p.costs == {"replication": (1.2, None)}
    assert "vs kg -" in p.line() and "replication 1.2 vs -" in p.line()


def test_a_missing_metric_makes_a_strategy_ineligible_and_is_noted():
    nan = float("nan")
    df = summary([("kg", 5, 0, 0.5, 1.0), ("pkg", 5, 0, nan, 1.2), ("pkg", 5, 1, nan, 1.2), ("dc", 5, 0, 0.3, 1.5)])
    p = one(picks_for(df, "grouping", "zipf-1.0", [RULE]))
    assert p.strategy == "dc" and p.note == "no imbalance for pkg"
    # the baseline's metric missing: its value is None, its costs still shown
    df = summary([("kg", 5, 0, nan, 1.0), ("dc", 5, 0, 0.3, 1.5)])
    p = one(picks_for(df, "grouping", "zipf-1.0", [RULE]))
    assert p.strategy == "dc" and p.baseline_value is None and p.costs == {"replication": (1.5, 1.0)}
    assert p.note == "no imbalance for kg"


def test_a_metric_no_strategy_reports_gives_one_pick_without_strategy():
    rule = Rule("latency_p99", "min", ("workers",), baseline="kg")
    df = summary([("kg", 5, 0, 0.5, 1.0), ("pkg", 10, 0, 0.1, 1.2)]).assign(latency_p99=float("nan"))
    p = one(picks_for(df, "grouping", "zipf-1.0", [rule]))
    assert p.strategy is None and p.coords == {} and p.note == "no strategy reports latency p99 (ms)"
    assert p.tag() == ("skewbench.pick.zipf-1.0", "none") and "no pick" in p.line()


def test_a_rule_skips_the_cells_that_do_not_report_its_metric():
    """Another rule's cells (shedding: operator vs partition rows) get no pick from this rule."""
    nan = float("nan")
    df = summary([("kg", 5, 0, 0.5, 1.0), ("pkg", 5, 0, 0.1, 1.2), ("osg", 1, 0, nan, 1.0)])
    assert [p.coords for p in picks_for(df, "grouping", "zipf-1.0", [RULE])] == [{"workers": 5}]


def test_constraints_excluding_every_strategy_give_no_pick_and_say_so():
    df = summary([("kg", 5, 0, 0.5, 3.0), ("sg", 5, 0, 0.0, 5.0)])
    p = one(picks_for(df, "grouping", "zipf-1.0", [RULE]))
    assert p.strategy is None and p.value is None and p.baseline_value == 0.5
    assert "no strategy meets replication <= 2" in p.note and "the baseline kg does not meet" in p.note
    assert p.line(rule=False).startswith("grouping zipf-1.0 n=5: no pick (imbalance: kg 0.5)")
    # a constraint met within the tie tolerance counts as met; a missing constrained value does not
    df = summary([("kg", 5, 0, 0.5, 2.0 * (1 + 1e-12)), ("sg", 5, 0, 0.0, float("nan"))])
    assert one(picks_for(df, "grouping", "zipf-1.0", [RULE])).strategy == "kg"


def test_goal_max_and_excluded_references():
    rule = Rule("optimality", "max", (), where=(("ok_rate", ">=", 1.0),), baseline="storm",
                costs=("seconds_median",), exclude=("opt",), text="highest optimality")
    df = pd.DataFrame([
        {"dataset": "a", "strategy": s, "seed": 0, "params": "{}", "optimality": o, "ok_rate": ok, "seconds_median": t}
        for s, o, ok, t in (("opt", 1.0, 1.0, 3.0), ("td", 0.93, 1.0, 0.001), ("tl", 0.8, 1.0, 0.0005),
                            ("storm", 0.37, 0.9, 0.0001), ("flink-pack", 0.99, 0.1, 0.0002))])
    p = one(picks_for(df, "allocation", "a", [rule]))
    assert (p.strategy, p.value, p.baseline_value) == ("td", 0.93, 0.37)
    assert p.costs == {"seconds_median": (0.001, 0.0001)}
    assert p.note == "the baseline storm does not meet ok_rate >= 1" and p.tag() == ("skewbench.pick.a", "td")
    assert p.line(rule=False) == ("allocation a: pick td (Omega 0.93 vs storm 0.37; median s 0.001 vs 1.00e-04) "
                                  "[the baseline storm does not meet ok_rate >= 1]")


def test_a_strategys_best_configuration_counts_and_is_named():
    """Coordinates the rule does not name (sources) and parameters are configurations of one strategy."""
    df = summary([("kg", 5, 0, 0.5, 1.0, 5), ("pkg", 5, 0, 0.2, 1.2, 5), ("pkg", 5, 0, 0.1, 1.9, 1),
                  ("pkg", 5, 0, 0.05, 2.5, 10)])
    p = one(picks_for(df, "grouping", "zipf-1.0", [RULE]))
    assert (p.strategy, p.value, p.costs["replication"][0]) == ("pkg", 0.1, 1.9)
    assert p.note == "pkg at sources=1" and p.coords == {"workers": 5}


def test_bad_rules_are_refused():
    with pytest.raises(SkewbenchError, match="goal must be 'min' or 'max'"):
        Rule("imbalance", "lowest", ())
    with pytest.raises(SkewbenchError, match="bad constraint"):
        Rule("imbalance", "min", (), where=(("replication", "=<", 2.0),))
    with pytest.raises(SkewbenchError, match="the summary has no column provisioning"):
        picks_for(summary([("kg", 5, 0, 0.5, 1.0)]), "grouping", "zipf-1.0",
                  [Rule("imbalance", "min", ("provisioning",))])


@pytest.mark.parametrize("name", ["grouping", "shedding", "allocation"])
def test_each_familys_declarations_name_its_real_columns(name):
    fam = families.get(name)
    sch = schema(name)
    rules = fam.attr("report", "PICK_RULES")
    assert rules and all(isinstance(r, Rule) for r in rules)
    for r in rules:
        cols = [r.metric, *r.per, *(c for c, _, _ in r.where), *r.costs]
        assert set(cols) <= set(sch.summary_order), cols
        assert set(r.per) <= set(sch.coordinates) and r.text
        assert r.baseline in fam.default_strategies and not set(r.exclude) & {r.baseline}
        m = sch.metrics[f"summary:{r.metric}"]
        assert m.higher_is_better is (r.goal == "max")
    for x, y, title in fam.attr("report", "TRADEOFFS"):
        assert {x, y} <= set(sch.summary_order) and title
    metric, coord = fam.attr("report", "LEADERBOARD")
    assert metric in sch.summary_order and (coord == "" or coord in sch.coordinates)


# --------------------------------------------------------------------------------------------
# a real replay through the command line


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    root = tmp_path_factory.mktemp("picks")
    generate(StreamSpec.zipf(1.4, 1000, 20_000, 3, cost={"model": "levels", "levels": 4, "low": 1, "high": 4}),
             root / "z", name="zipf-1.4")
    p = subprocess.run([str(BIN), "replay", "grouping", "--dataset", str(root / "z"), "--strategies",
                        "kg,sg,pkg,dc,flink", "--workers", "5,10", "--sources", "3", "--seeds", "2",
                        "--out", str(root / "r")], capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert p.returncode == 0, p.stderr
    return root / "r"


def test_the_picks_of_a_real_replay_follow_the_rule(replay):
    df = pd.read_parquet(replay / "summary.parquet")
    picks = night_picks([replay])
    assert [p.coords for p in picks] == [{"workers": 5}, {"workers": 10}]
    means = df.groupby(["workers", "strategy"])[["imbalance", "replication", "latency_p99"]].mean()
    for p in picks:
        assert isinstance(p, Pick) and (p.family, p.dataset) == ("grouping", "zipf-1.4")
        m = means.loc[p.coords["workers"]]
        ok = m[m["replication"] <= 2]
        assert "sg" not in ok.index  # shuffle spreads every key
        assert p.strategy == ok["imbalance"].idxmin() and p.value == pytest.approx(ok["imbalance"].min())
        assert p.rule.baseline == "flink" and p.baseline_value == pytest.approx(m.loc["flink", "imbalance"])
        assert p.costs["latency_p99"] == (pytest.approx(m.loc[p.strategy, "latency_p99"]),
                                          pytest.approx(m.loc["flink", "latency_p99"]))
        assert p.tag() == (f"skewbench.pick.zipf-1.4.n{p.coords['workers']}", p.strategy)
        assert p.line().startswith(f"grouping zipf-1.4 n={p.coords['workers']}: pick {p.strategy} (imbalance ")
    assert json.loads(json.dumps([p.as_dict() for p in picks]))[0]["strategy"] == picks[0].strategy
    # a directory without results is skipped
    assert night_picks([replay.parent / "missing", replay]) == picks
