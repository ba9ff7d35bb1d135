"""A shedder from outside: tests/plugins/strategies/toyshed.py (one module) and its entry-point row
(tests/plugins/strategies/toystrategies-0.1.dist-info) run through ``skewbench replay shedding`` and the results'
validation, with no edit to skewbench.  The plug-in lives outside this process's import path: the
commands run in subprocesses whose PYTHONPATH holds it, as an installed plug-in would be found."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from skewbench import registry
from skewbench.datasets.contract import open_dataset
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.errors import SkewbenchError

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "tests" / "plugins" / "strategies"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("ds") / "costs"
    spec = StreamSpec.from_dict({"generator": "zipf", "n_keys": 300, "seed": 4,
                                 "phases": [{"tuples": 5000, "alpha": 1.0}],
                                 "cost": {"model": "levels", "levels": 64, "low": 0.1, "high": 6.4}})
    generate(spec, d, name="costs")
    return d


def _sb(*args: object, check: bool = True) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(PLUGINS), *filter(None, [os.environ.get("PYTHONPATH")])])
    p = subprocess.run([sys.executable, "-m", "skewbench.cli", *map(str, args)], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": path}, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError(f"{args} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def test_the_plug_in_stays_out_of_this_process():
    with pytest.raises(SkewbenchError, match="toy-shed"):
        registry.get("shedding", "toy-shed")


def test_a_toy_shedder_replays_and_validates(dataset, tmp_path):
    listed = json.loads(_sb("strategies", "--family", "shedding", "--json").stdout)["shedding"]
    toy = next(s for s in listed if s["name"] == "toy-shed")
    assert [p["name"] for p in toy["params"]] == ["limit"]

    out = tmp_path / "r"
    _sb("replay", "shedding", "--dataset", dataset, "--strategies", "toy-shed,ns,fk", "--provisioning", "75,110",
        "--param", "toy-shed.limit=4,6.4", "--out", out)
    assert "all expectations met" in _sb("results", "validate", out).stdout
    rows = pq.read_table(out / "summary.parquet").to_pylist()
    by = {(r["strategy"], json.loads(r["params"]).get("limit"), r["provisioning"]): r for r in rows}
    assert len(by) == 8
    cost = open_dataset(dataset).read_table(["cost"]).column("cost").to_numpy()
    for P in (75, 110):
        ns = by[("ns", None, P)]
        strict, loose = by[("toy-shed", 4.0, P)], by[("toy-shed", 6.4, P)]
        assert ns["dropped"] == 0 and strict["kind"] == loose["kind"] == "operator"
        # its own rule: every tuple longer than the limit is dropped, and the check drops more
        assert strict["dropped"] >= int((cost > 4.0).sum()) > 0
        assert strict["queueing_latency_mean"] < ns["queueing_latency_mean"]
    # no tuple is longer than 6.4 ms: what that limit drops, the check with its estimate drops
    assert by[("toy-shed", 6.4, 75)]["dropped"] > 0 and int((cost > 6.4).sum()) == 0
    assert by[("toy-shed", 6.4, 75)]["dropped"] != by[("fk", None, 75)]["dropped"]
