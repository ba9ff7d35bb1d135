"""A toy placement (tests/plugins/strategies/toyplace.py: one module, one class, added by one entry-point row in
tests/plugins/strategies/toystrategies-0.1.dist-info) runs through ``skewbench replay allocation`` and the results'
validation with no edit to skewbench.

The plug-in lives outside this process's import path: every step runs in a subprocess whose
PYTHONPATH holds tests/plugins/strategies, as a user's installed plug-in would be found."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from skewbench import registry

PLUGINS = Path(__file__).resolve().parents[1] / "plugins" / "strategies"


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(PLUGINS), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def _sb(*args: object) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "skewbench.cli", *map(str, args)], env=_env(), capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, f"skewbench {' '.join(map(str, args))}: exit {p.returncode}\n{p.stdout[-3000:]}\n" \
                              f"{p.stderr[-3000:]}"
    return p


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """Twelve E5 random graphs (17 tasks, 8 nodes of 100%) and the E3 task-count asymmetry set."""
    from skewbench.allocation import instances as inst
    from skewbench.allocation.store import write_jobs

    out = tmp_path_factory.mktemp("toyplace") / "jobs"
    write_jobs(out, [inst.random_graph(i, seed=3) for i in range(12)] + inst.asymmetry(),
               meta={"kind": "synthetic", "generator": "test", "params": {}, "seed": 3, "name": "toy-place-jobs"})
    return out


def test_the_plugin_stays_out_of_this_process():
    assert "toy-place" not in registry.names("allocation")


def test_a_toy_placement_replays_and_validates(jobs, tmp_path):
    listed = json.loads(_sb("strategies", "--family", "allocation", "--json").stdout)["allocation"]
    assert listed[-1]["name"] == "toy-place" and [p["name"] for p in listed[-1]["params"]] == ["start"]
    out = tmp_path / "r"
    _sb("replay", "allocation", "--dataset", jobs, "--strategies", "toy-place,td", "--param", "toy-place.start=0,3",
        "--min-time", "0", "--out", out)
    _sb("results", "validate", out)
    series = pq.read_table(out / "series.parquet").to_pylist()
    toy = [r for r in series if r["strategy"] == "toy-place"]
    assert len(toy) == 2 * 19 and {json.loads(r["stats"])["placed"] for r in toy} != {0}
    for r in toy:  # it never overloads a node, and the optimum is the same as the built-in's
        assert r["violations"] == 0 and r["opt_status"] == "optimal", r
        assert json.loads(r["stats"])["placed"] == r["tasks"] - r["unplaced"]
    assert sum(r["unplaced"] == 0 for r in toy) >= 19  # every task placed on most instances
    # it reads no rates, so a task pair lands together only by chance: less local traffic than TD's
    td = {r["instance"]: r["gain"] for r in series if r["strategy"] == "td"}
    assert np.mean([r["gain"] for r in toy]) < np.mean(list(td.values()))
    summary = pq.read_table(out / "summary.parquet").to_pylist()
    assert sorted(json.loads(r["params"])["start"] for r in summary if r["strategy"] == "toy-place") == [0, 3]
