"""MLflow as a tracking server (a real ``mlflow server`` process on loopback): unreachable, the
logging fails fast with one clear line and logs nothing; once the server is up the same call
(the task's retry) logs everything, and a further retry changes nothing."""

from __future__ import annotations

import time

import pytest

from skewbench import tracking
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.errors import SkewbenchError
from skewbench.grouping.engine import grid, replay_to_dir
from tests.integration.airflow_env import free_port
from tests.integration.mlflow_env import MlflowServer

KEY = "skewbench_nightly/manual__2026-11-25/grouping"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("server")
    generate(StreamSpec.zipf(1.2, 200, 4000, 1), root / "ds", name="z")
    replay_to_dir(root / "ds", grid(["kg", "pkg"], [5], [2], [0]), root / "res")
    from skewbench.validation.results import validate_results

    assert validate_results(root / "res").success  # only validated results are logged
    return root / "res"


@pytest.fixture
def server(tmp_path):
    s = MlflowServer(tmp_path / "mlflow.db", free_port(), tmp_path / "server.log", tmp_path / "artifacts")
    yield s
    s.stop()


@pytest.mark.slow  # about 30 s: make slow (CI runs it after make test, which must stay under 12 minutes)
def test_unreachable_fails_fast_then_the_retry_logs_once(results, server):
    t = time.monotonic()
    with pytest.raises(SkewbenchError, match=r"MLflow tracking server http://127\.0\.0\.1:\d+ is unreachable"):
        tracking.log_run([results], tracking_uri=server.uri, run_key=KEY, run_name="night", tags={})
    assert time.monotonic() - t < 60  # MLflow's client alone retries for about four minutes
    server.start()
    first = tracking.log_run([results], tracking_uri=server.uri, run_key=KEY, run_name="night", tags={})
    again = tracking.log_run([results], tracking_uri=server.uri, run_key=KEY, run_name="night", tags={})
    assert (again["parent_run_id"], again["children"]) == (first["parent_run_id"], first["children"])

    import mlflow

    client = mlflow.MlflowClient(server.uri)
    runs = client.search_runs([first["experiment_id"]], max_results=100)
    assert len(runs) == 1 + 2 and len(first["children"]) == 2
    assert {r.info.status for r in runs} == {"FINISHED"}
