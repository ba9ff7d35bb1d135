"""One toy strategy in every family, each added by one module and one entry-point row and
nothing else (tests/plugins/strategies: ``toygroup.py``, ``toyshed.py``, ``toyplace.py`` and the
three rows of ``toystrategies-0.1.dist-info/entry_points.txt``; docs/extending.md's checklist).

In a process that finds that folder (PYTHONPATH), the toys pass the conformance driver
(tests/integration/test_conformance.py, unchanged), and the toy shedder and placement run in the
nightly's grid with the built-ins through the real DAG (``dag.test()``, Spark, Great
Expectations, MLflow) and appear in the night's overview.  This process never sees them (the registry stays the built-ins')."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.integration import airflow_env as af

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "tests" / "plugins" / "strategies"
#: family -> (toy, a built-in strategy run beside it)
TOYS = {"grouping": ("toy-group", "kg"), "shedding": ("toy-shed", "ns"), "allocation": ("toy-place", "td")}
#: the checks of the conformance driver every strategy of a family gets (the split check only
#: where the family's driver defines one: all three built-in families do)
CHECKS = ("test_constructs_with_defaults", "test_parameters_described", "test_split_invariance",
          "test_results_validate", "test_replay_deterministic")


def _with_plugins(env: dict[str, str]) -> dict[str, str]:
    path = os.pathsep.join([str(PLUGINS), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**env, "PYTHONPATH": path}


def test_the_toys_are_outside_this_process():
    from skewbench import registry

    for family, (toy, _) in TOYS.items():
        assert toy not in registry.names(family), (family, toy)


def test_each_toy_is_one_module_and_one_row():
    rows = (PLUGINS / "toystrategies-0.1.dist-info" / "entry_points.txt").read_text().split("\n")
    entries = [r for r in rows if "=" in r]
    assert rows[0] == "[skewbench.strategies]" and len(entries) == len(TOYS)
    for family, (toy, _) in TOYS.items():
        (row,) = [r for r in entries if r.startswith(f"{family}.{toy} ")]
        module = row.split("=")[1].strip().split(":")[0]
        assert (PLUGINS / f"{module}.py").is_file(), row
    assert sorted(p.name for p in PLUGINS.glob("*.py")) == sorted(
        r.split("=")[1].strip().split(":")[0] + ".py" for r in entries)


def test_the_toys_pass_the_conformance_driver(tmp_path):
    report = tmp_path / "junit.xml"
    expr = " or ".join(f"{f}/{toy}" for f, (toy, _) in TOYS.items())
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(REPO / "tests" / "integration" / "test_conformance.py"), "-k", expr,
                        f"--junitxml={report}"], cwd=REPO, env=_with_plugins(dict(os.environ)),
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    cases: dict[str, str] = {}
    for tc in ET.parse(report).getroot().iter("testcase"):
        cases[str(tc.get("name"))] = "passed" if not list(tc) else list(tc)[0].tag
    assert cases and set(cases.values()) == {"passed"}, cases
    for family, (toy, _) in TOYS.items():
        ran = {c.split("[")[0] for c in cases if f"[{family}/{toy}" in c}
        assert set(CHECKS) <= ran, (family, toy, sorted(ran))


@pytest.mark.airflow
@pytest.mark.slow  # a nightly of its own through dag.test (55 s of make test's 9 min): make slow
def test_the_toys_run_in_the_nightly_grid_and_appear_in_the_overview(tmp_path):
    env = _with_plugins(af.make_env(tmp_path / "airflow"))
    af.migrate(env)
    # the shedder and the placement (the toy grouping strategy's nightly path is the ShiftedKG
    # wheel's, test_family_contract.py): two families of the nightly, beside a built-in each
    night = {f: TOYS[f] for f in ("shedding", "allocation")}
    conf = {"datasets": ["tiny-zipf", "tiny-jobs"], "families": list(night), "seeds": 1,
            **{f"{family}_strategies": [builtin, toy] for family, (toy, builtin) in night.items()}}
    result, log = af.run_dag(env, "skewbench_nightly", conf)
    assert isinstance(result, dict) and result["state"] == "success", log[-8000:]
    import pyarrow.parquet as pq

    runs = Path(env["SKEWBENCH_STATE"]) / "runs"
    assert {s.parent.name for s in runs.rglob("summary.parquet")} == set(night)
    for family, (toy, builtin) in night.items():
        tables = [pq.read_table(s).to_pylist() for s in runs.rglob("summary.parquet") if family in s.parts]
        names = {row["strategy"] for t in tables for row in t}
        assert names == {toy, builtin}, (family, names)
    (overview,) = runs.rglob("overview.html")
    html = overview.read_text()
    for family, (toy, _) in night.items():
        assert toy in html, (family, toy)
