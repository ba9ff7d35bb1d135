"""Shared fixtures: the real-trace samples in ../shared/data and one real local SparkSession."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
# no usage reporting from the MLflow client, server or UI started by tests (mlflow reads both)
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "true")

# Hypothesis: "ci" (the default) is derandomised, so a run's examples are the same on every
# machine and a failure reproduces; "deep" draws random examples, 1,000 where a test sets no
# count of its own, for local runs: HYPOTHESIS_PROFILE=deep make test.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deep", derandomize=False, deadline=None, max_examples=1000,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# every skipped test named with its full reason at the end of each run (.ci/check_skips.py reads it)
from tests.skip_report import pytest_terminal_summary  # noqa: E402,F401

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("SKEWBENCH_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the repository (CI puts it there); skip when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real trace samples not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def spark():
    """A real SparkSession on local[2], shared by the whole run and stopped at the end."""
    from skewbench.spark import get_spark

    session = get_spark("local[2]", app_name="skewbench-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def flink_env():
    """The Flink environment (:func:`skewbench.settings.flink_environment`: ``make flink-env``, or
    ``SKEWBENCH_FLINK_PYTHON``).  Missing, it fails the test under ``make reproduce`` and ``make slow``
    (SKEWBENCH_REPRODUCE=full, which builds it first) and skips it otherwise."""
    from skewbench.errors import SkewbenchError
    from skewbench.settings import flink_environment

    try:
        return flink_environment()
    except SkewbenchError as exc:
        if os.environ.get("SKEWBENCH_REPRODUCE") == "full":
            pytest.fail(str(exc), pytrace=False)
        pytest.skip("needs the Flink environment (make flink-env)")


@pytest.fixture(scope="session")
def flink_cluster(flink_env, tmp_path_factory):
    """A real Flink standalone cluster on loopback (``skewbench.live.flinkcluster``: a JobManager
    and two TaskManagers, each its own process from the Flink environment's distribution), with
    Flink's default network settings, shared by the run's live tests: its warm-up and channel
    measurement happen once, in the first live run on it. Stopped, nothing left, at the end."""
    from skewbench.live.flinkcluster import local_cluster

    with local_cluster(tmp_path_factory.mktemp("flink-cluster") / "cluster", parallelism=8) as cl:
        yield cl


@pytest.fixture(scope="session")
def live_grouping_run(tmp_path_factory, flink_cluster):
    """The timing part's one live run of the grouping strategies on the session's cluster, shared
    by the R15/R16 reproduction (tests/reproduction/test_live_repro.py: measured against predicted)
    and the live job's own checks (tests/integration/test_live_flink.py: routing and aggregates,
    the TaskManager kill, Flink's metrics): ``tests.live_common.LIVE_RUN``'s stream, exactly the
    run's tuples (so the replay of the whole dataset gives the loads each phase must have), 1 ms of
    sleep a tuple, 5 sources; KG, PKG, D-C and SG routed by their Java routers in the sources, Flink's own
    keyBy natively; checkpoints every 2 s and a TaskManager killed 3 s into the last phase, which
    runs again (its row is the second run's). One run for both: apart they took 218 s and 119 s.
    Returns ``(dataset, result)``."""
    from skewbench.live.config import LiveConfig
    from skewbench.live.run import live_rows
    from tests.live_common import LIVE_RUN, zipf_dataset

    c = LIVE_RUN
    root = tmp_path_factory.mktemp("live-grouping")
    data = zipf_dataset(root / f"live-zipf-{c['z']}", c["z"], c["keys"], c["tuples"], seed=1)
    cfg = LiveConfig(dataset=f"zipf-{c['z']}", workers=c["workers"], duration_s=c["duration_s"], repeat=c["repeat"],
                     cost=1.0, engines=("flink",), grouping=c["strategies"], shedding=(), checkpoint_s=2.0,
                     kill_after_s=3.0)
    res = live_rows(str(data), cfg, root / "work", state=root / "state", cluster=flink_cluster)
    assert res.stream["tuples"] == c["tuples"], res.stream  # every tuple of the dataset ran
    return data, res


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory):
    """A real Spark standalone cluster on loopback: a master and two 1-core workers started from
    the installed pyspark (``skewbench.cluster``), shared by the run and stopped by process group."""
    from skewbench import cluster

    workdir = tmp_path_factory.mktemp("spark-cluster")
    cl = cluster.start(workdir, workers=2, cores=1, memory="1g")
    yield cl
    cluster.stop(workdir)


#: Seconds each heavy test file took under make reproduce / make test on two workers (measured
#: 2026-11-28, xdist, this 2-core machine). Only the order of the run uses them: pytest-xdist
#: deals whole files to the two workers (--dist loadfile) in collection order
#: (--no-loadscope-reorder), and the longest first is what keeps the two workers' ends close.
#: A file missing here counts 0.2 s a test.
FILE_SECONDS = {
    "tests/integration/test_scheduler_faults.py": 450, "tests/reproduction/test_dchoices_repro.py": 200,
    "tests/integration/test_ui.py": 180, "tests/integration/test_airflow_paths.py": 175,
    "tests/integration/test_dags.py": 160, "tests/reproduction/test_osg_repro.py": 100,
    "tests/reproduction/test_shedpart_repro.py": 60, "tests/integration/test_family_contract.py": 60,
    "tests/integration/test_allocation_pipeline.py": 50, "tests/reproduction/test_las_repro.py": 45,
    "tests/reproduction/test_allocation_repro.py": 45, "tests/integration/test_shedding_pipeline.py": 45,
    "tests/integration/test_cluster.py": 40, "tests/integration/test_validation.py": 30,
    "tests/integration/test_engine_hashes.py": 25, "tests/integration/test_cli.py": 30,
    "tests/integration/test_cli_replay.py": 25, "tests/integration/test_tracking_server.py": 25,
    # the timing part of make reproduce, measured 2026-11-28 alone (19 tests, 13 min); the tests
    # of the grouping run with the TaskManager kill go last whatever their file (_heavy_first)
    "tests/reproduction/test_live_repro.py": 520,
    "tests/integration/test_flink_engine.py": 40, "tests/integration/test_live_flink.py": 180,
    "tests/integration/test_live_spark.py": 80, "tests/property/test_live_property.py": 12,
    "tests/property/test_live_model_property.py": 15,
    "tests/unit/test_live_config.py": 2,
    # measured 2026-11-29 (a busy machine): the live capacity search's two Flink tests and 31 fast ones
    "tests/integration/test_live_capacity.py": 160,
    # measured 2026-11-28 with SKEWBENCH_SLOW=1 (make test: its two fast tests, about 6 s)
    "tests/integration/test_live_dag.py": 115, "tests/integration/test_live_tracking.py": 5,
    "tests/unit/test_live_steps.py": 2,
    # measured 2026-11-28 (make test, two workers): a nightly through dag.test and a conformance run
    "tests/integration/test_toy_strategies.py": 90,
    # measured 2026-11-29 alone: three catalog datasets materialised, about 400 cases in one JVM
    "tests/integration/test_java_routers.py": 18,
    # measured 2026-11-29 alone (make slow): 39 phases on a Flink mini-cluster, 13 of them at 100 workers
    "tests/integration/test_live_engine_routing.py": 95,
    # measured 2026-11-29 alone: the word count of docs/flink.md, a probe JVM
    "tests/integration/test_flink_partitioners.py": 12,
}


def _heavy_first(items) -> None:
    """Order the items file by file, the heaviest file first (:data:`FILE_SECONDS`), keeping the
    order of the tests inside each file."""
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    order = sorted(files, key=lambda f: -FILE_SECONDS.get(f, 0.2 * len(files[f])))
    items[:] = [item for f in order for item in files[f]]
    # the grouping run with its TaskManager kill last on the session's Flink cluster: after a
    # TaskManager is lost, Flink serves no more metrics for the cluster's life (docs/live.md)
    last = [item for item in items if "live_grouping_run" in getattr(item, "fixturenames", ())]
    items[:] = [item for item in items if item not in last] + last


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` (the full reproduction grid, the long integration checks) run only with
    SKEWBENCH_REPRODUCE=full (``make reproduce``, ``make slow``) or SKEWBENCH_SLOW=1; ``make test``
    runs the fast subset. Tests marked
    ``deploy`` (the stack in Docker) run only under ``make deploy-test`` (SKEWBENCH_DEPLOY_TEST=1)."""
    _heavy_first(items)
    if os.environ.get("SKEWBENCH_DEPLOY_TEST") != "1":
        no_deploy = pytest.mark.skip(reason="deploy: run with make deploy-test (needs Docker, about 11 min)")
        for item in items:
            if "deploy" in item.keywords:
                item.add_marker(no_deploy)
    if os.environ.get("SKEWBENCH_REPRODUCE") == "full" or os.environ.get("SKEWBENCH_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: run with make slow (SKEWBENCH_REPRODUCE=full)")
    skip_timing = pytest.mark.skip(reason="slow: a timing check, run with make reproduce (SKEWBENCH_REPRODUCE=full)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_timing if "timing" in item.keywords else skip)
