"""The Spark shell around the library: sessions, and distributing dataset generation.

Spark distributes work and aggregates small results; it does not carry the tuples.  Moving rows
between the JVM and Python ran at about 2M rows/s here while numpy generates and pyarrow writes
tens of millions per second per core, so each Spark task generates its blocks and writes its
Parquet parts itself, and returns only a few numbers per part to the driver.

Environment:

``SKEWBENCH_SPARK_MASTER``
    Spark master URL (default ``local[*]``).
``PYSPARK_PYTHON``
    The workers' Python; defaults to this interpreter so workers see the same packages.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from typing import Any, Callable, Mapping, Sequence

from skewbench.datasets.contract import PartInfo, check_target, finalize, staging_dir
from skewbench.datasets.generators import Plan, StreamSpec, write_blocks


def get_spark(master: str | None = None, app_name: str = "skewbench", conf: Mapping[str, str] | None = None):
    """Return the active SparkSession or build one (quiet logs, this Python for the workers)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    builder = SparkSession.builder.appName(app_name)
    # under spark-submit (which hands its Python driver a gateway port) the master comes from
    # spark-submit's --master: never override it
    if master is not None or "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master or os.environ.get("SKEWBENCH_SPARK_MASTER", "local[*]"))
    builder = (builder
               .config("spark.ui.enabled", os.environ.get("SKEWBENCH_SPARK_UI", "false"))
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.shuffle.partitions", os.environ.get("SKEWBENCH_SPARK_SHUFFLE_PARTITIONS", "16"))
               .config("spark.driver.memory", os.environ.get("SKEWBENCH_SPARK_DRIVER_MEMORY", "4g"))
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


def spark_executor(spark, partitions: int | None = None, progress: Callable[[str], None] | None = None):
    """An executor for :func:`skewbench.grouping.engine.replay`: the items dealt to Spark tasks.

    Item ``i`` goes to task ``i mod P`` (so cells of every size are spread over the tasks), with
    ``P = partitions`` or, by default, twice the cluster's default parallelism: a Spark task costs
    tens of milliseconds to schedule, more than many small replay items.  Results come back in
    item order whatever ``P`` is.
    """

    def execute(fn: Callable[[Any], Any], items: Sequence[Any], description: str = "") -> list[Any]:
        items = list(items)
        if not items:
            return []
        p = max(1, min(len(items), partitions or 2 * spark.sparkContext.defaultParallelism))
        dealt = run_tasks(spark, lambda t: [fn(items[i]) for i in range(t, len(items), p)], p, description)
        return [dealt[i % p][i // p] for i in range(len(items))]

    return execute


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
        shutil.rmtree(tmp, ignore_errors=True)
        raise


__all__: Sequence[str] = ["get_spark", "run_tasks", "spark_executor", "generate_on_spark"]
