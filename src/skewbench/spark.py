"""The Spark shell around the library: sessions, and distributing dataset generation.

Spark distributes work and aggregates small results; it does not carry the tuples.  Moving rows
between the JVM and Python ran at about 2M rows/s here while numpy generates and pyarrow writes
tens of millions per second per core, so each Spark task generates its blocks and writes its
Parquet parts itself, and returns only a few numbers per part to the driver.

Environment (:mod:`skewbench.settings`): ``SKEWBENCH_SPARK_MASTER`` (default ``local[*]``),
``SKEWBENCH_SPARK_UI``, ``SKEWBENCH_SPARK_SHUFFLE_PARTITIONS``, ``SKEWBENCH_SPARK_DRIVER_MEMORY``;

``PYSPARK_PYTHON``
    The workers' Python; defaults to this interpreter so workers see the same packages.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Callable, Mapping, Sequence

from skewbench.datasets.contract import PartInfo, check_target, discard_dir, finalize, staging_dir
from skewbench.datasets.generators import Plan, StreamSpec, check_room, write_blocks


def get_spark(master: str | None = None, app_name: str = "skewbench", conf: Mapping[str, str] | None = None):
    """Return the active SparkSession or build one (quiet logs, this Python for the workers)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from skewbench.settings import settings

    cfg = settings()
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    builder = SparkSession.builder
    # under spark-submit (which hands its Python driver a gateway port) the master and the
    # application's name come from spark-submit's --master and --name (the nightly names each
    # replay skewbench-<family>-<dataset> for the cluster's UI): never override them
    if master is not None or "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master or cfg.spark_master).appName(app_name)
    builder = (builder
               .config("spark.ui.enabled", cfg.spark_ui)
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.shuffle.partitions", cfg.spark_shuffle_partitions)
               .config("spark.driver.memory", cfg.spark_driver_memory)
               .config("spark.python.worker.reuse", "true"))
    for k, v in (conf or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_tasks(spark, fn: Callable[[int], Any], n_tasks: int, description: str = "spark",
              progress: Callable[[int], None] | None = None, partitions: int | None = None) -> list[Any]:
    """Run ``fn(i)`` for ``i in range(n_tasks)`` on Spark and collect the results in order.

    By default each ``i`` is its own Spark task; ``partitions`` groups them into that many.
    ``progress`` is called with the number of newly finished Spark tasks while the job runs.
    """
    sc = spark.sparkContext
    group = f"skewbench-{os.getpid()}-{time.monotonic_ns()}"
    result: dict[str, Any] = {}

    def job() -> None:
        sc.setJobGroup(group, description)
        try:
            rdd = sc.parallelize(range(n_tasks), max(1, min(n_tasks, partitions or n_tasks)))
            result["value"] = rdd.mapPartitions(lambda it: [fn(i) for i in it]).collect()
        except BaseException as e:  # re-raised in the caller's thread
            result["error"] = e

    th = threading.Thread(target=job, daemon=True)
    th.start()
    done = 0
    tracker = sc.statusTracker()
    while th.is_alive():
        th.join(0.5)
        if progress is None:
            continue
        finished = 0
        for jid in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(jid)
            for sid in (info.stageIds if info else []):
                st = tracker.getStageInfo(sid)
                if st:
                    finished += st.numCompletedTasks
        if finished > done:
            progress(finished - done)
            done = finished
    if "error" in result:
        raise result["error"]
    n_spark = max(1, min(n_tasks, partitions or n_tasks))
    if progress is not None and n_spark > done:
        progress(n_spark - done)
    return result["value"]


def generate_on_spark(spark, spec: StreamSpec, out_dir: str | os.PathLike, partitions: int | None = None,
                      name: str | None = None, overwrite: bool = False,
                      progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Generate ``spec`` with Spark into ``out_dir``; identical output for any ``partitions``.

    Blocks are dealt to ``partitions`` tasks in contiguous runs; every task writes its own parts
    into a staging directory; the driver checks the parts, writes metadata and renames.
    ``progress`` receives finished task counts.
    """
    plan = Plan(spec)  # validates the spec on the driver before any task starts
    check_target(out_dir, overwrite)
    check_room(spec, out_dir)
    n_blocks = plan.n_blocks
    p = max(1, min(int(partitions or spark.sparkContext.defaultParallelism), n_blocks))
    bounds = [(i * n_blocks) // p for i in range(p + 1)]
    tmp = staging_dir(out_dir)
    spec_dict = spec.to_dict()
    tmp_s = str(tmp)

    def task(i: int) -> list[dict[str, Any]]:
        infos = write_blocks(spec_dict, tmp_s, range(bounds[i], bounds[i + 1]))
        return [x.to_dict() for x in infos]

    try:
        results = run_tasks(spark, task, p, f"generate {name or spec.generator}", progress)
        parts = [PartInfo.from_dict(d) for r in results for d in r]
        return finalize(tmp, out_dir, parts, {**plan.metadata(name), "columns": spec.columns}, overwrite)
    except BaseException:
        discard_dir(tmp)  # the failed job's other tasks may still be writing parts into it
        raise


__all__: Sequence[str] = ["get_spark", "run_tasks", "generate_on_spark"]
