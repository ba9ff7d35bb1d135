"""What to pick (skewbench.present.picks): the rules on small hand-made summaries (ties, missing metrics, a
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

from skewbench import families, registry
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.errors import SkewbenchError
from skewbench.present.picks import Pick, Rule, night_picks, picks_for
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
                        "-- rule: lowest imbalance with replication <= 2 (constraint: replication <= 2)")


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
    # the nearest candidate (kg misses replication <= 2 by 50%, sg by 150%) with its numbers
    assert p.nearest == ("kg", {"imbalance": 0.5, "replication": 3.0})
    assert p.line(rule=False).startswith("grouping zipf-1.0 n=5: no pick (imbalance: kg 0.5; nearest: kg imbalance "
                                         "0.5, replication 3)")
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
        cols = [*r.columns(), *r.per]
        assert set(cols) <= set(sch.summary_order), cols
        assert set(r.per) <= set(sch.coordinates) and r.text
        assert set(r.only) <= set(registry.names(name)), r.only
        assert "(constraint: " in r.describe() and r.describe().endswith(")")
        assert r.baseline in fam.default_strategies and not set(r.exclude) & {r.baseline}
        m = sch.metrics[f"summary:{r.metric}"]
        assert m.higher_is_better is (r.goal == "max")
    for x, y, title in fam.attr("report", "TRADEOFFS"):
        assert {x, y} <= set(sch.summary_order) and title
    metric, coord = fam.attr("report", "LEADERBOARD")
    assert metric in sch.summary_order and (coord == "" or coord in sch.coordinates)


# --------------------------------------------------------------------------------------------
# the families' rules: a case on each side of every constraint


def family_rule(family: str, kind: str) -> Rule:
    return next(r for r in families.get(family).attr("report", "PICK_RULES") if r.kind == kind)


def grouping_rows(rows):
    """(strategy, imbalance, replication, merge_partials, latency_mean) at n = 5, one seed."""
    return pd.DataFrame([{"dataset": "d", "strategy": st, "workers": 5, "sources": 5, "seed": 0, "params": "{}",
                          "imbalance": imb, "replication": rep, "merge_partials": merge, "latency_mean": lat,
                          "latency_p99": 2 * lat} for st, imb, rep, merge, lat in rows])


def test_keyed_aggregation_takes_key_routing_strategies_within_two_workers_a_key():
    rule = family_rule("grouping", "keyed aggregation")
    # sg balances perfectly and, with few hot keys, has a low mean replication: still no candidate (a shuffle)
    rows = [("flink", 0.3, 1.0, 0, 5.0), ("sg", 0.0, 1.5, 40, 1.0), ("pkg", 0.1, 2.0, 30, 2.0),
            ("wc", 0.05, 2.01, 60, 2.0)]
    p = one(picks_for(grouping_rows(rows), "grouping", "d", [rule]))
    # replication 2.0 is within the bound (pkg), 2.01 is not (wc, better balanced)
    assert (p.strategy, p.value, p.baseline_value) == ("pkg", 0.1, 0.3)
    assert "not for a keyed aggregation: sg" in p.note
    assert p.costs["merge_partials"] == (30.0, 0.0)
    assert p.line(rule=False).startswith("grouping d n=5 (keyed aggregation): pick pkg (imbalance 0.1 vs flink 0.3; "
                                         "merge/window (records) 30 vs 0; replication 2 vs 1;")
    assert p.line().endswith("(constraint: replication <= 2; among the strategies that route by key; never fk)")
    # the merge cost decides between strategies tied on balance, before the name order
    tied = [("flink", 0.3, 1.0, 0, 5.0), ("dc", 0.1, 1.6, 50, 2.0), ("pkg", 0.1, 1.9, 20, 2.0)]
    p = one(picks_for(grouping_rows(tied), "grouping", "d", [rule]))
    assert p.strategy == "pkg" and p.ties == ("dc",)
    # a tie on balance and merge: the engine's default wins it
    tied = [("flink", 0.1, 1.0, 0, 5.0), ("kg", 0.1, 1.0, 0, 2.0)]
    assert one(picks_for(grouping_rows(tied), "grouping", "d", [rule])).strategy == "flink"


def test_stateless_operator_takes_the_shuffles_by_completion_time():
    rule = family_rule("grouping", "stateless operator")
    # kg completes faster here (a toy), but a key-routing strategy is no candidate for a stateless operator
    rows = [("sg", 0.0, 5.0, 0, 3.0), ("osg", 0.01, 5.0, 0, 2.0), ("kg", 0.2, 1.0, 0, 1.0)]
    p = one(picks_for(grouping_rows(rows), "grouping", "d", [rule]))
    assert (p.strategy, p.value, p.baseline_value) == ("osg", 2.0, 3.0) and "not for a stateless operator: kg" in p.note
    assert p.line(rule=False).startswith("grouping d n=5 (stateless operator): pick osg (latency mean (ms) 2 vs sg 3")
    assert p.tag() == ("skewbench.pick.d.n5.stateless", "osg")
    # osg slower: the engine's rebalance (sg) stays
    rows = [("sg", 0.0, 5.0, 0, 2.0), ("osg", 0.01, 5.0, 0, 2.5)]
    assert one(picks_for(grouping_rows(rows), "grouping", "d", [rule])).strategy == "sg"


def operator_rows(rows):
    """(strategy, dropped_ratio, q_over_bound) at P = 75."""
    return pd.DataFrame([{"dataset": "s", "strategy": st, "provisioning": 75, "workers": 1, "seed": 0, "params": "{}",
                          "kind": "operator", "dropped_ratio": d, "q_over_bound": q} for st, d, q in rows])


def test_the_shedding_pick_allows_las_epsilon_over_the_bound_and_names_the_nearest():
    from skewbench.shedding.report import LAS_EPSILON

    rule = family_rule("shedding", "shedding operator")
    assert LAS_EPSILON == 0.05 and rule.where == (("q_over_bound", "<=", 1.05),)
    # within the tolerance: LAS at 1.05 tau is picked; bl keeps the bound, drops more; fk never
    p = one(picks_for(operator_rows([("bl", 0.30, 0.9), ("las", 0.26, 1.05), ("fk", 0.25, 0.99)]), "shedding", "s",
                      [rule]))
    assert (p.strategy, p.value, p.baseline_value) == ("las", 0.26, 0.30)
    assert p.line().endswith("(constraint: Q/tau <= 1.05; never fk)")
    # just over it: no pick, and the line shows the nearest candidate's numbers (LAS's Q/tau and drops)
    p = one(picks_for(operator_rows([("bl", 0.30, 12.0), ("las", 0.26, 1.08), ("sm", 0.0, 30.0)]), "shedding", "s",
                      [rule]))
    assert p.strategy is None and p.nearest == ("las", {"dropped_ratio": 0.26, "q_over_bound": 1.08})
    assert p.line(rule=False).startswith("shedding s P=75 (shedding operator): no pick (dropped: bl 0.3; nearest: "
                                         "las dropped 0.26, Q/tau 1.08)")


def partition_rows(rows):
    """(strategy, imbalance_p50, error_mean, shed_fraction) at V = 4, error budget 0.1."""
    return pd.DataFrame([{"dataset": "s", "strategy": st, "provisioning": 100, "workers": 4, "seed": 0,
                          "params": "{}", "kind": "partition", "error": 0.1, "imbalance_p50": imb, "error_mean": e,
                          "shed_fraction": f} for st, imb, e, f in rows])


def test_the_shedpart_pick_is_held_to_the_error_budget_and_keeps_tuples():
    rule = family_rule("shedding", "windowed aggregation")
    # at the budget (error 0.1) and keeping 0.1% of the tuples: eligible
    p = one(picks_for(partition_rows([("fld", 300.0, 0.0, 0.0), ("shedpart", 5.0, 0.1, 0.999)]), "shedding", "s",
                      [rule]))
    assert (p.strategy, p.value, p.baseline_value) == ("shedpart", 5.0, 300.0)
    assert p.costs == {"shed_fraction": (0.999, 0.0), "error_mean": (0.1, 0.0)}
    assert p.line().endswith("(constraint: error_mean <= the cell's error and shed < 1)")
    # over the error budget, or shedding everything (perfectly balanced, answering nothing): not eligible
    rows = [("fld", 300.0, 0.0, 0.0), ("shedpart", 5.0, 0.1001, 0.99), ("shedpart-ee", 0.0, 0.0, 1.0)]
    p = one(picks_for(partition_rows(rows), "shedding", "s", [rule]))
    assert p.strategy == "fld" and p.note == "the baseline fld is already best"
    # the budget is each cell's own: a 20% budget admits the same 10.01% error
    p = one(picks_for(partition_rows(rows).assign(error=0.2), "shedding", "s", [rule]))
    assert p.strategy == "shedpart"


def test_every_rule_is_printed_with_its_constraint(tmp_path):
    from skewbench.present.console import pick_lines

    picks = picks_for(grouping_rows([("flink", 0.3, 1.0, 0, 5.0), ("pkg", 0.1, 1.5, 30, 2.0), ("sg", 0.0, 5.0, 0, 1.0),
                                     ("osg", 0.0, 5.0, 0, 0.9)]), "grouping", "d")
    assert [p.strategy for p in picks] == ["pkg", "osg"]
    lines = pick_lines(picks)
    assert lines[0] == "grouping: " + picks[0].rule_text() and "(constraint: replication <= 2;" in lines[0]
    assert lines[2] == "grouping: " + picks[1].rule_text() and "(constraint: among the shuffle strategies" in lines[2]
    assert lines[0].startswith("grouping: keyed aggregation: ") and lines[2].startswith("grouping: stateless operator: ")


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
    """One pick per operator kind and worker count: the keyed aggregation's among the key-routing
    strategies with replication <= 2 (never sg), vs flink; the stateless operator's among the shuffles
    (only sg ran of them), vs sg itself."""
    from skewbench.grouping.report import KEYED

    df = pd.read_parquet(replay / "summary.parquet")
    picks = night_picks([replay])
    assert [(p.rule.kind, p.coords) for p in picks] == [("keyed aggregation", {"workers": 5}),
                                                         ("keyed aggregation", {"workers": 10}),
                                                         ("stateless operator", {"workers": 5}),
                                                         ("stateless operator", {"workers": 10})]
    means = df.groupby(["workers", "strategy"])[["imbalance", "replication", "latency_p99", "latency_mean",
                                                 "merge_partials"]].mean()
    for p in picks:
        assert isinstance(p, Pick) and (p.family, p.dataset) == ("grouping", "zipf-1.4")
        m = means.loc[p.coords["workers"]]
        n = p.coords["workers"]
        if p.rule.kind == "keyed aggregation":
            ok = m[(m["replication"] <= 2) & m.index.isin(KEYED)]
            assert "sg" not in ok.index and "sg" in m.index  # a shuffle is no candidate for keyed state
            assert p.strategy == ok["imbalance"].idxmin() and p.value == pytest.approx(ok["imbalance"].min())
            assert p.rule.baseline == "flink" and p.baseline_value == pytest.approx(m.loc["flink", "imbalance"])
            assert p.costs["merge_partials"] == (pytest.approx(m.loc[p.strategy, "merge_partials"]),
                                                 pytest.approx(m.loc["flink", "merge_partials"]))
            assert p.tag() == (f"skewbench.pick.zipf-1.4.n{n}.keyed", p.strategy)
            assert p.line().startswith(f"grouping zipf-1.4 n={n} (keyed aggregation): pick {p.strategy} (imbalance ")
            assert p.line().endswith("(constraint: replication <= 2; among the strategies that route by key; never fk)")
        else:
            assert p.strategy == "sg" and p.value == pytest.approx(m.loc["sg", "latency_mean"])
            assert "not for a stateless operator: kg, pkg, dc, flink" in p.note, p.note
            assert p.tag() == (f"skewbench.pick.zipf-1.4.n{n}.stateless", "sg")
            assert p.line().startswith(f"grouping zipf-1.4 n={n} (stateless operator): pick sg (latency mean (ms) ")
    assert json.loads(json.dumps([p.as_dict() for p in picks]))[0]["strategy"] == picks[0].strategy
    # a directory without results is skipped
    assert night_picks([replay.parent / "missing", replay]) == picks
