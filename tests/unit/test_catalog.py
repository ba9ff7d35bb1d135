"""The dataset catalog: the shipped file loads; bad catalogs are clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from skewbench.datasets.catalog import load_catalog, parse_catalog
from skewbench.datasets.generators import zipf_pmf
from skewbench.errors import SkewbenchError

REPO = Path(__file__).resolve().parents[2]


def test_shipped_catalog_loads_with_default_and_paper_sets():
    cat = load_catalog(REPO / "datasets" / "catalog.yaml")
    assert {"default", "paper"} <= set(cat.sets())
    default = cat.select(set_name="default")
    synthetic = [e for e in default if e.kind == "synthetic"]
    assert len({e.spec.phases[0].alpha for e in synthetic if e.spec.generator == "zipf"}) >= 3
    assert any(e.spec.generator == "drifting" for e in synthetic)
    assert {"slashdot", "google-cluster", "debs2015-routes", "debs2015-medallions", "apache-log"} <= {e.name for e in default}
    # small enough for the embedded run
    assert sum(e.spec.tuples for e in synthetic) <= 10_000_000


def test_paper_set_has_the_papers_sizes():
    cat = load_catalog(REPO / "datasets" / "catalog.yaml")
    paper = {e.name: e for e in cat.select(set_name="paper")}
    # dchoices.spec.md 4.1: ZF with m = 1e7 over 1e4, 1e5, 1e6 keys, z = 0.1..2.0
    zf = [e for n, e in paper.items() if n.startswith("dc-zf-")]
    assert len(zf) == 60 and all(e.spec.tuples == 10_000_000 for e in zf)
    assert {e.spec.n_keys for e in zf} == {10_000, 100_000, 1_000_000}
    # the WP surrogate's p1 matches the trace's 9.32% (dchoices.spec.md 4.1 surrogates)
    wp = paper["dc-wp-surrogate"].spec
    assert abs(zipf_pmf(wp.n_keys, wp.phases[0].alpha)[0] - 0.0932) < 0.002
    assert paper["osg-z1.0"].spec.tuples == 100_000 and paper["osg-z1.0"].spec.n_keys == 4096
    assert paper["las-z1.0"].spec.tuples == 32_768
    assert paper["las-fig6"].spec.tuples == 140_000 and len(paper["las-fig6"].spec.phases) == 7


def _doc(**entry):
    base = {"name": "a", "generator": "zipf", "keys": 10, "tuples": 100, "alpha": 1.0, "seed": 1}
    base.update(entry)
    return {"version": 1, "datasets": [{k: v for k, v in base.items() if v is not None}]}


@pytest.mark.parametrize("doc,needle", [
    (_doc(colour="red"), "colour"),
    (_doc(alpha=-1.0), "alpha"),
    (_doc(keys="many"), "keys"),
    (_doc(generator="pareto"), "generator"),
    (_doc(tuples=None), "tuples"),
    (_doc(cost={"model": "levels", "levels": 4}), "cost model levels"),
    (_doc(arrivals={"process": "bursty", "rate": 1}), "arrival process"),
    ({"version": 2, "datasets": []}, "version"),
    ({"version": 1, "datasets": [{"name": "a", "trace": "nope", "inputs": "x"}]}, "trace format"),
    ({"version": 1, "datasets": [{"name": "a", "trace": "slashdot", "inputs": "x", "sep": ","}]}, "sep"),
    ({"version": 1, "datasets": [_doc()["datasets"][0], _doc()["datasets"][0]]}, "duplicate"),
    ({"version": 1, "datasets": [{"name": "z", "generator": "zipf", "keys": 10, "tuples": 10, "seed": 1,
                                  "matrix": {"alpha": [1, 2]}}]}, "template"),
    # a name is a directory under the data root: none may leave it
    (_doc(name="../evil"), "'../evil' is not a plain name"),
    (_doc(name="/abs/evil"), "'/abs/evil' is not a plain name"),
    (_doc(name="a/b"), "'a/b' is not a plain name"),
    (_doc(name=".hidden"), "'.hidden' is not a plain name"),
    (_doc(name=".."), "'..' is not a plain name"),
    ({"version": 1, "datasets": [{"name": "z/{alpha}", "generator": "zipf", "keys": 10, "tuples": 10, "seed": 1,
                                  "matrix": {"alpha": [1]}}]}, "'z/1' is not a plain name"),
])
def test_bad_catalogs(tmp_path, doc, needle):
    with pytest.raises(SkewbenchError, match=needle):
        parse_catalog(doc, Path("c.yaml"), tmp_path)


def test_shared_data_placeholder_and_selection(tmp_path):
    doc = {"version": 1, "datasets": [
        {"name": "t", "trace": "slashdot", "inputs": "{shared_data}/x.txt.gz", "optional": True, "sets": ["s"]},
        {"name": "z{alpha}", "generator": "zipf", "keys": 10, "tuples": 10, "seed": 1, "matrix": {"alpha": [1, 2]}},
    ]}
    cat = parse_catalog(doc, Path("c.yaml"), tmp_path)
    assert cat.names() == ["t", "z1", "z2"]
    assert cat.entries[0].inputs == [tmp_path / "x.txt.gz"] and not cat.entries[0].available
    assert [e.name for e in cat.select(set_name="s")] == ["t"]
    with pytest.raises(SkewbenchError, match="unknown dataset set"):
        cat.select(set_name="nope")
    with pytest.raises(SkewbenchError, match="unknown dataset"):
        cat.select(["z3"])


def test_an_unknown_name_gets_its_close_matches_in_one_short_line():
    cat = load_catalog()
    with pytest.raises(SkewbenchError, match=r"^unknown dataset 'zipf-1\.2' \(did you mean 'zipf-1\.") as e:
        cat.select(["zipf-1.2"])
    msg = str(e.value)
    assert "\n" not in msg and len(msg) < 160 and "skewbench datasets catalog" in msg
    with pytest.raises(SkewbenchError,
                       match=r"^unknown dataset 'qqqqqqqq'; `skewbench datasets catalog` lists them all \(\d+\)$"):
        cat.select(["qqqqqqqq"])  # nothing close: no "did you mean"


def test_invalid_yaml(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("version: 1\ndatasets: [\n")
    with pytest.raises(SkewbenchError, match="not valid YAML"):
        load_catalog(p)


def _wl(**kw):
    item = {"name": "w", "sets": ["default"], "workload": "skewbench.shedding.workloads:syn_burst", "seed": 2,
            **kw}
    return {"version": 1, "datasets": [item]}


def test_workload_entries_and_families(tmp_path):
    cat = parse_catalog(_wl(params={"windows": 3}, families=["shedding"]), Path("c.yaml"), tmp_path)
    (e,) = cat.entries
    assert (e.kind, e.workload, e.seed, e.families, e.available) == (
        "workload", "skewbench.shedding.workloads:syn_burst", 2, ["shedding"], True)
    assert e.params() == {"workload": e.workload, "params": {"windows": 3}, "seed": 2, "inputs": []}
    assert callable(e.workload_function())
    assert "syn_burst" in e.describe()
    shipped = load_catalog()
    fams = {x.name: x.families for x in shipped.entries}
    assert fams["zipf-1.0"] == ["grouping"] and fams["las-e1"] == ["shedding"] and fams["debs2015-routes"] is None


@pytest.mark.parametrize("kw,needle", [
    ({"workload": "not a path"}, "package.module:function"),
    ({"params": [1]}, "'params' must be a mapping"),
    ({"seed": -1}, "'seed'"),
    ({"families": []}, "'families'"),
    ({"colour": 1}, "unknown field"),
])
def test_bad_workload_entries(tmp_path, kw, needle):
    with pytest.raises(SkewbenchError, match=needle):
        parse_catalog(_wl(**kw), Path("c.yaml"), tmp_path)


def test_a_workload_that_cannot_be_imported(tmp_path):
    (e,) = parse_catalog(_wl(workload="skewbench.nowhere:fn"), Path("c.yaml"), tmp_path).entries
    with pytest.raises(SkewbenchError, match="cannot be loaded"):
        e.workload_function()


def test_the_live_set_is_two_small_zipf_streams_apart_from_the_nightly_sets():
    cat = load_catalog(REPO / "datasets" / "catalog.yaml")
    live = {e.name: e for e in cat.select(set_name="live")}
    assert sorted(live) == ["live-zipf-1.4", "live-zipf-2.0"]
    assert sorted(e.spec.phases[0].alpha for e in live.values()) == [1.4, 2.0]
    for e in live.values():
        # a few thousand keys, enough tuples for the live run's 4,000-tuple prefix, no cost column (the run's
        # --cost is the work)
        assert e.spec.n_keys == 4000 and e.spec.tuples >= 4000 and e.spec.cost is None
        assert e.sets == ["live"]
    nightly_sets = {e.name for s in ("default", "paper") for e in cat.select(set_name=s)}
    assert not nightly_sets & set(live)
