"""The pipeline's Airflow-free pieces: family entries, parameter checks, run directories, plans."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from skewbench import nightly, registry
from skewbench.errors import SkewbenchError
from skewbench.families import MODULES, families


def test_every_family_is_a_complete_package():
    assert "grouping" in families()
    assert nightly.replay_job().exists()
    for f in families().values():
        assert set(f.default_strategies) <= set(registry.names(f.name))
        for role in MODULES:
            f.module(role)  # every fixed module exists and imports
        assert f.attr("cli", "command").name == f.name


def test_dag_side_modules_import_nothing_heavy():
    code = ("import sys; import skewbench.nightly, skewbench.families; skewbench.nightly.params_schema(); "
            "print(sorted(m for m in ('numpy', 'numba', 'pyspark', 'mlflow', 'great_expectations', 'pandas') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_defaults_resolve_to_the_default_catalog_set():
    conf = nightly.check_params({})
    assert conf["families"] == ["grouping", "shedding", "allocation"] and conf["seeds"] == 1
    assert conf["fail_on_change"] is False
    assert "zipf-1.0" in conf["datasets"]
    assert conf["strategies_by_family"]["grouping"] == list(families()["grouping"].default_strategies)
    assert conf["sections"]["grouping"]["workers"] == [5, 10, 50, 100]
    assert conf["sections"]["shedding"]["provisioning"] == [75] and conf["sections"]["shedding"]["bound_ms"] == 6.4


def test_a_catalog_entry_limits_the_families_that_replay_it():
    conf = nightly.check_params({})
    datasets = [{"name": "a", "path": "/d/a", "fingerprint": "f", "families": ["shedding"]},
                {"name": "b", "path": "/d/b", "fingerprint": "g", "families": None}]
    datasets.append({"name": "c", "path": "/d/c", "fingerprint": "h", "families": ["allocation"]})
    plan = nightly.plan_replays(conf, datasets, "/out")
    # an entry without families is replayed by every family but allocation (job graphs only)
    assert [(p["dataset"], p["family"]) for p in plan] == [("a", "shedding"), ("b", "grouping"), ("b", "shedding"),
                                                          ("c", "allocation")]
    shed = [p for p in plan if p["family"] == "shedding"][0]["application_args"]
    assert shed[:2] == ["shedding", "--dataset"] and "--skip-inapplicable" in shed
    assert shed[shed.index("--provisioning") + 1] == "75"


def test_params_have_one_section_per_family():
    schema = nightly.params_schema()
    assert {k: v["section"] for k, v in schema.items() if k in nightly.COMMON} == {
        "datasets": "Datasets", "catalog_set": "Datasets", "families": "Families", "seeds": "Families",
        "fail_on_change": "Trend"}
    assert schema["fail_on_change"]["type"] == "boolean" and schema["fail_on_change"]["default"] is False
    assert [k for k, v in schema.items() if v["section"] == "grouping family"] == [
        "grouping_strategies", "grouping_workers", "grouping_sources", "grouping_provisioning", "grouping_scaling", "grouping_rates",
        "grouping_objective_ms"]
    assert schema["grouping_strategies"]["items"]["enum"] == registry.names("grouping")


@pytest.mark.parametrize("params,needle", [
    ({"grouping_workers": [0]}, "parameter 'grouping_workers'"),
    ({"grouping_workers": []}, "parameter 'grouping_workers'"),
    ({"seeds": 1000}, "parameter 'seeds'"),
    ({"families": ["juggling"]}, "parameter 'families'"),
    ({"families": []}, "parameter 'families'"),
    ({"grouping_strategies": ["nope"]}, "parameter 'grouping_strategies'"),
    ({"datasets": ["no-such"]}, "unknown dataset"),
    ({"catalog_set": "huge"}, "parameter 'catalog_set'"),
    ({"colour": "red"}, "unknown parameter"),
    ({"workers": [5]}, "unknown parameter"),
    ({"grouping_provisioning": 0}, "parameter 'grouping_provisioning'"),
    ({"grouping_provisioning": "lots"}, "parameter 'grouping_provisioning'"),
    ({"grouping_rates": [-1]}, "parameter 'grouping_rates' item 1"),
    ({"grouping_objective_ms": 0}, "parameter 'grouping_objective_ms'"),
])
def test_bad_params_are_clear_errors(params, needle):
    with pytest.raises(SkewbenchError, match=needle):
        nightly.check_params(params)


def test_the_form_carries_no_number_bounds_and_offers_choices_as_multi_selects():
    """The trigger form's number inputs clamp an out-of-range entry to the nearest bound without
    a word (seen in the browser: seeds 0 became 1, 500 became 100), and it refused lists that
    broke the item rules without a message; so the form's Params carry neither, the
    description says the range and check_params enforces it all."""
    full, form = nightly.params_schema(), nightly.form_params()
    assert list(form) == list(full)
    bounds = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
    for name, spec in form.items():
        assert not set(bounds) & set(spec) and not set(bounds) & set(spec.get("items") or {}), name
        assert not {"minItems", "uniqueItems"} & set(spec) and "enum" not in (spec.get("items") or {}), name
        assert spec["default"] == full[name]["default"] and spec["section"] == full[name]["section"]
        if set(bounds) & set(full[name]) or set(bounds) & set(full[name].get("items") or {}):
            assert "(allowed: " in spec["description"], name
        if "enum" in (full[name].get("items") or {}):
            assert spec["examples"] == full[name]["items"]["enum"], name
    assert form["seeds"]["description"].endswith("(allowed: 1 to 100).")
    assert "(allowed: above 0 and below 1)" in form["shedding_confidence"]["description"]


@pytest.mark.parametrize("params,message", [
    ({"seeds": 0}, "parameter 'seeds': 0 is out of range; allowed: 1 to 100"),
    ({"seeds": 500}, "parameter 'seeds': 500 is out of range; allowed: 1 to 100"),
    ({"grouping_workers": [5, -3]}, "parameter 'grouping_workers' item 2: -3 is out of range; allowed: 1 to 10,000"),
    ({"shedding_confidence": 1.0}, "parameter 'shedding_confidence': 1.0 is out of range; allowed: above 0 and below 1"),
    ({"families": ["grouping", "nope"]},
     "parameter 'families' item 2: 'nope' is not one of grouping, shedding, allocation"),
    ({"grouping_workers": []}, "parameter 'grouping_workers': [] should be non-empty"),
    ({"grouping_workers": [5, 5]}, "parameter 'grouping_workers': [5, 5] has non-unique elements"),
])
def test_out_of_range_params_are_refused_with_the_allowed_range(params, message):
    with pytest.raises(SkewbenchError, match=f"^{re.escape(message)}$"):
        nightly.check_params(params)


def test_run_dirs_are_per_run_and_plans_per_dataset_and_family(tmp_path, monkeypatch):
    monkeypatch.setenv("SKEWBENCH_RUNS_ROOT", str(tmp_path))
    a = nightly.run_dir("2026-11-20T02:00:00+00:00", "scheduled__2026-11-20T02:00:00+00:00")
    b = nightly.run_dir("2026-11-20T02:00:00+00:00", "manual__2026-11-20T09:13:00+00:00")
    assert a != b and a.parent == b.parent == tmp_path / "2026-11-20"
    conf = nightly.check_params({"grouping_strategies": ["kg", "osg"], "grouping_workers": [5],
                                 "datasets": ["zipf-1.0"], "families": ["grouping"]})
    plan = nightly.plan_replays(conf, [{"name": "zipf-1.0", "path": "/d/z", "fingerprint": "f"}], str(a))
    assert len(plan) == 1
    args = plan[0]["application_args"]
    assert args[0] == "grouping" and plan[0]["application"].endswith("spark_jobs/replay.py")
    assert nightly.family_of_job(args) == "grouping" and nightly.family_of_job(str(args)) == "grouping"
    assert nightly.dataset_of_job(args) == "z" and nightly.dataset_of_job(["grouping"]) is None
    assert args[args.index("--strategies") + 1] == "kg,osg" and "--overwrite" in args
    assert plan[0]["out"] == str(a / "zipf-1.0" / "grouping")
    assert args[args.index("--provisioning") + 1] == "100.0"  # the default: critical load


def test_a_familys_replays_are_one_spark_job_and_its_arguments_give_them_back():
    conf = nightly.check_params({"datasets": ["zipf-1.0", "zipf-1.5"], "families": ["grouping", "shedding"]})
    data = [{"name": n, "path": f"/d/{n}", "fingerprint": "f"} for n in ("zipf-1.0", "zipf-1.5", "las-e1")]
    items = nightly.plan_replays(conf, data, "/out")
    jobs = nightly.replay_jobs(items)
    assert [j["family"] for j in jobs] == ["grouping", "shedding"]
    for job in jobs:
        mine = [it for it in items if it["family"] == job["family"]]
        assert len(mine) == 3 and job["datasets"] == [it["dataset"] for it in mine]
        assert job["outs"] == [it["out"] for it in mine] and job["name"] == f"skewbench-{job['family']}-3-datasets"
        args = job["application_args"]
        assert args[:2] == [job["family"], "--replays"] and nightly.family_of_job(args) == job["family"]
        # the job's replays are exactly the items' arguments, in order
        assert nightly.job_replays(args) == (job["family"], [it["application_args"][1:] for it in mine])
        assert nightly.dataset_of_job(args) is None  # several datasets: the link names none
    # one replay: its own arguments, its dataset named
    (one,) = nightly.replay_jobs(items[:1])
    assert one["application_args"] == items[0]["application_args"] and one["name"] == "skewbench-grouping-las-e1"
    assert nightly.job_replays(one["application_args"]) == ("grouping", [items[0]["application_args"][1:]])
    assert nightly.dataset_of_job(one["application_args"]) == "las-e1"
    with pytest.raises(SkewbenchError, match="--replays takes a JSON list of argument lists"):
        nightly.job_replays(["grouping", "--replays", '{"a": 1}'])


def test_prune_runs_keeps_the_newest_and_the_current_run(tmp_path, monkeypatch):
    import os

    monkeypatch.setenv("SKEWBENCH_RUNS_ROOT", str(tmp_path))
    dirs = []
    for i, (day, run) in enumerate([("2026-11-20", "a"), ("2026-11-20", "b"), ("2026-11-21", "c"),
                                    ("2026-11-22", "d"), ("2026-11-23", "e")]):
        d = nightly.run_dir(day, run)
        (d / "x").mkdir(parents=True)
        os.utime(d, (1_000_000 + i, 1_000_000 + i))  # a is the oldest, e the newest
        dirs.append(d)
    # the current run is the oldest here (a retried old run): it is kept all the same
    deleted = nightly.prune_runs(dirs[0], keep=3)
    assert sorted(deleted) == [str(dirs[1]), str(dirs[2])]
    assert [d.exists() for d in dirs] == [True, False, False, True, True]
    assert not (tmp_path / "2026-11-21").exists() and (tmp_path / "2026-11-20").exists()  # emptied dates go
    assert nightly.prune_runs(dirs[4], keep=3) == []
    monkeypatch.setenv("SKEWBENCH_KEEP_RUNS", "1")
    assert nightly.prune_runs(dirs[4]) == [str(dirs[3]), str(dirs[0])]  # newest first, as sorted
    assert [d.exists() for d in dirs] == [False, False, False, False, True]


def test_provisioning_null_keeps_the_datasets_arrival_times():
    conf = nightly.check_params({"grouping_provisioning": None, "datasets": ["zipf-1.0"]})
    plan = nightly.plan_replays(conf, [{"name": "zipf-1.0", "path": "/d/z", "fingerprint": "f"}], "/r")
    assert "--provisioning" not in plan[0]["application_args"]


def test_check_trend_fails_only_when_asked_and_a_cell_changed(tmp_path):
    changed = {"family": "grouping", "trend_summary": {
        "text": "1 of 2 cells changed", "changed_cells": [{"dataset": "z", "cell": "fixed-d workers=5",
                                                           "text": "changed: imbalance"}]}}
    same = {"family": "shedding", "trend_summary": {"text": "no change in 4 cells", "changed_cells": []}}
    assert nightly.check_trend(str(tmp_path), False, [changed, same]) == (
        "grouping: 1 of 2 cells changed\nshedding: no change in 4 cells")
    assert nightly.check_trend(str(tmp_path), True, [same]) == "shedding: no change in 4 cells"
    with pytest.raises(SkewbenchError,
                       match=r"1 cell\(s\) changed .*grouping z fixed-d workers=5 \(changed: imbalance\)"):
        nightly.check_trend(str(tmp_path), True, [changed, same])
    assert nightly.check_trend(str(tmp_path), True) == "no family logged"  # nothing saved there
