"""The family contract, tried from outside: a minimal family (tests/plugins/toyfam: one package,
one entry point) and a strategy from an installed package run through the command line, the Spark
job, Great Expectations, MLflow, the report and the nightly Params, with no edit to skewbench.

Both live outside the main test process's import path: every step runs in a subprocess whose
PYTHONPATH holds them, as a user's installed plug-in would be found."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from skewbench.datasets.generators import StreamSpec, generate
from skewbench.families import families

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "tests" / "plugins"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("ds") / "z"
    generate(StreamSpec.zipf(1.1, 300, 6000, 3), d, name="z")
    return d


def _env(tmp: Path, path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(path), "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "SKEWBENCH_TRACKING_URI": f"sqlite:///{tmp}/mlflow/mlflow.db", "MLFLOW_DISABLE_TELEMETRY": "true",
            "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


def _run(env: dict[str, str], *args: object, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([str(a) for a in args], env=env, capture_output=True, text=True, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError(f"{args} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def _sb(env: dict[str, str], *args: object, check: bool = True) -> subprocess.CompletedProcess:
    return _run(env, BIN / "skewbench", *args, check=check)


def _tables(d: Path) -> tuple[pa.Table, pa.Table]:
    return pq.read_table(d / "summary.parquet"), pq.read_table(d / "series.parquet")


def _mlflow(tmp: Path):
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=f"sqlite:///{tmp}/mlflow/mlflow.db")


def test_the_fixtures_stay_out_of_this_process():
    assert "toy" not in families()


@pytest.mark.slow  # about 35 s: make slow (CI runs it after make test, which must stay under 12 minutes)
def test_a_minimal_family_runs_through_the_whole_pipeline(dataset, tmp_path):
    env = _env(tmp_path, PLUGINS)
    listed = json.loads(_sb(env, "strategies", "--family", "toy", "--json").stdout)
    assert [s["name"] for s in listed["toy"]] == ["modulo", "hashed"]
    assert listed["toy"][0]["params"] == [{"name": "offset", "default": 0, "doc": listed["toy"][0]["params"][0]["doc"]}]

    # the command line (in process) and the Spark job give the same results
    grid = ["--dataset", dataset, "--workers", "2,5", "--param", "modulo.offset=0,1", "--seeds", "2"]
    _sb(env, "replay", "toy", *grid, "--out", tmp_path / "local")
    _run(env, BIN / "spark-submit", "--master", "local[2]", REPO / "spark_jobs" / "replay.py", "toy", *grid,
         "--out", tmp_path / "spark")
    local, spark = _tables(tmp_path / "local"), _tables(tmp_path / "spark")
    assert local[0].num_rows == (2 * 2 + 2) * 2  # modulo x 2 offsets + hashed, x 2 bin counts x 2 seeds
    assert local[0].equals(spark[0]) and local[1].equals(spark[1])
    manifest = json.loads((tmp_path / "spark" / "_manifest.json").read_text())
    assert manifest["family"] == "toy" and manifest["engine"] == "spark"

    # Great Expectations: the generic suite (schema, bounds) and the family's own expectation
    assert "all expectations met" in _sb(env, "results", "validate", tmp_path / "spark").stdout
    bad = tmp_path / "bad"
    shutil.copytree(tmp_path / "local", bad)
    s = local[0].to_pandas()
    s.loc[0, "max_share"] = 0.01  # below 1/bins: breaks the family's rule, not the METRICS bound
    pq.write_table(pa.Table.from_pandas(s, schema=local[0].schema, preserve_index=False), bad / "summary.parquet")
    p = _sb(env, "results", "validate", bad, check=False)
    assert p.returncode == 1 and "share_excess" in p.stderr, p.stderr

    # MLflow and the report: an experiment for the family, a run per cell, the windowed metric
    _sb(env, "results", "validate", tmp_path / "local")  # only validated results are logged
    _sb(env, "results", "log", tmp_path / "local", "--run-key", "test/toy")
    client = _mlflow(tmp_path)
    exp = client.get_experiment_by_name("skewbench-toy")
    runs = client.search_runs([exp.experiment_id], max_results=100)
    parent = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parent) == 1 and len(children) == local[0].num_rows
    c = children[0]
    assert {"strategy", "workers", "seed", "dataset"} <= set(c.data.params) and "max_share" in c.data.metrics
    assert len(client.get_metric_history(c.info.run_id, "window.window_max_share")) == 4
    arts = {a.path for a in client.list_artifacts(parent[0].info.run_id)}
    assert {"report.html", "results", "plots"} <= arts
    pngs = [a.path for a in client.list_artifacts(parent[0].info.run_id, "plots/z")]
    assert pngs == ["plots/z/max_share.png"]

    # the nightly pipeline's Params: a section for the family, its job's arguments
    code = ("import json; from skewbench import nightly; s = nightly.params_schema(); "
            "c = nightly.check_params({'families': ['toy'], 'toy_workers': [3], 'datasets': ['zipf-1.0']}); "
            "p = nightly.plan_replays(c, [{'name': 'z', 'path': '/d', 'fingerprint': 'f'}], '/r'); "
            "print(json.dumps([{k: v['section'] for k, v in s.items() if k.startswith('toy')}, p[0]]))")
    sections, plan = json.loads(_run(env, sys.executable, "-c", code).stdout)
    assert sections == {"toy_strategies": "toy family", "toy_workers": "toy family"}
    assert plan["application"].endswith("spark_jobs/replay.py")
    assert plan["application_args"][0] == "toy" and plan["application_args"][-2:] == ["--workers", "3"]
    code = "from skewbench import nightly; nightly.check_params({'families': ['toy'], 'toy_workers': [99]})"
    p = _run(env, sys.executable, "-c", code, check=False)
    assert p.returncode != 0 and "toy parameters: the toy family takes at most 64 bins" in p.stderr


SHIFTED = '''
"""Key grouping shifted by a constant: an outside strategy for skewbench's grouping family."""
from skewbench.grouping.strategies.dchoices import KG


class ShiftedKG(KG):
    name = "shifted-kg"
    description = "key grouping, then SHIFT workers further (modulo n)"
    defaults = {"shift": 1}
    param_docs = {"shift": "How many workers to move every tuple by, an integer (default 1)."}

    def route(self, batch):
        return (super().route(batch) + int(self.params["shift"])) % self.workers
'''


def _wheel(tmp: Path) -> Path:
    """A real wheel of a one-module package with a ``skewbench.strategies`` entry point."""
    whl = tmp / "shiftkg-0.1-py3-none-any.whl"
    di = "shiftkg-0.1.dist-info"
    files = {
        "shiftkg.py": SHIFTED,
        f"{di}/METADATA": "Metadata-Version: 2.1\nName: shiftkg\nVersion: 0.1\n",
        f"{di}/WHEEL": "Wheel-Version: 1.0\nGenerator: skewbench-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{di}/entry_points.txt": "[skewbench.strategies]\ngrouping.shifted-kg = shiftkg:ShiftedKG\n",
    }
    with zipfile.ZipFile(whl, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
        z.writestr(f"{di}/RECORD", "".join(f"{n},,\n" for n in files) + f"{di}/RECORD,,\n")
    return whl


@pytest.mark.slow  # about 35 s (builds and installs a wheel): make slow; the minimal family above stays in make test
def test_an_installed_packages_strategy_replays_like_a_built_in_one(dataset, tmp_path):
    target = tmp_path / "site"
    _run(os.environ, sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--disable-pip-version-check", "--target", target, _wheel(tmp_path))
    env = _env(tmp_path, target)
    listed = json.loads(_sb(env, "strategies", "--family", "grouping", "--json").stdout)["grouping"]
    assert listed[-1]["name"] == "shifted-kg" and listed[-1]["params"][0]["name"] == "shift"
    grid = ["--dataset", dataset, "--strategies", "kg,shifted-kg", "--workers", "4", "--sources", "2"]
    _sb(env, "replay", "grouping", *grid, "--out", tmp_path / "r")
    _run(env, BIN / "spark-submit", "--master", "local[2]", REPO / "spark_jobs" / "replay.py", "grouping", *grid,
         "--out", tmp_path / "s")
    summary = pq.read_table(tmp_path / "r" / "summary.parquet").to_pylist()
    kg, shifted = summary
    assert shifted["strategy"] == "shifted-kg" and json.loads(shifted["params"]) == {"shift": 1}
    assert shifted["worker_tuples"] == kg["worker_tuples"][-1:] + kg["worker_tuples"][:-1]
    assert pq.read_table(tmp_path / "s" / "summary.parquet").drop_columns(
        ["route_seconds", "sim_tuples_per_s", "wall_seconds"]).equals(
        pq.read_table(tmp_path / "r" / "summary.parquet").drop_columns(
            ["route_seconds", "sim_tuples_per_s", "wall_seconds"]))
    _sb(env, "results", "validate", tmp_path / "r")
    _sb(env, "results", "log", tmp_path / "r", "--run-key", "test/shifted")
    client = _mlflow(tmp_path)
    exp = client.get_experiment_by_name("skewbench-grouping")
    strategies = {r.data.params.get("strategy") for r in client.search_runs([exp.experiment_id])}
    assert "shifted-kg" in strategies
    code = "from skewbench import nightly; print(nightly.params_schema()['grouping_strategies']['items']['enum'])"
    assert "shifted-kg" in _run(env, sys.executable, "-c", code).stdout
