"""The Spark engine: every phase of a live run as one keyed stage on the Spark the replays use,
each partition a worker (what a Spark user sees as straggler tasks).

A phase's tuples ``(worker, index)`` are partitioned by the strategy's decision (routed:
``partitionBy(p, identity)``) or by Spark SQL itself (native, ``spark-sql``: a DataFrame of the
keys ``repartition(p, key)``, Spark's ``HashPartitioning``), and each partition spends every
tuple's cost (sleeping or busy) and records when each started and ended.  Spark is batch: every
tuple is there when the stage starts, so a phase measures the stage's makespan and each task's
run time, not latency at a rate.  Locally the session runs ``local[p]`` (a task slot per worker:
sleeping tasks need no core of their own); on a cluster it needs ``p`` cores.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from skewbench.errors import SkewbenchError
from skewbench.live.decisions import Phase


def _work(cost_ms: np.ndarray, cpu: bool):
    """The per-partition function: spend each tuple's cost, record (index, start, end)."""

    def run(pidx: int, it):
        import time as _t

        rows = []
        for rec in it:  # (worker, index) pairs, or Rows (key, i): the index is the second field
            i = int(rec[1])
            c = float(cost_ms[i]) / 1000.0
            s = _t.time()
            if cpu:
                deadline = _t.perf_counter() + c
                while _t.perf_counter() < deadline:
                    pass
            else:
                deadline = _t.perf_counter() + c
                left = c
                while left > 0:
                    _t.sleep(left)
                    left = deadline - _t.perf_counter()
            rows.append((i, pidx, s, _t.time()))
        return iter(rows)

    return run


def session(workers: int):
    """The SparkSession of the replays (``SKEWBENCH_SPARK_MASTER``), with a task slot per worker
    locally (``local[p]``); on a cluster, one line when it has fewer than ``p`` cores."""
    from skewbench.settings import settings
    from skewbench.spark import get_spark

    master = settings().spark_master
    if master.startswith("local"):
        master = f"local[{workers}]"
    spark = get_spark(master, app_name=f"skewbench-live-p{workers}")
    cores = spark.sparkContext.defaultParallelism
    if cores < workers:
        raise SkewbenchError(f"the Spark at {master} has {cores} task slots, fewer than the {workers} workers of the "
                             f"live run: every partition must run at once (fewer --workers, or a larger cluster)")
    return spark


def run_phase(spark, phase: Phase, cpu: bool) -> dict[str, Any]:
    """One phase as one stage: per executed tuple, the partition that ran it and when it started
    and ended (seconds), and when the stage's first task started (every tuple due then)."""
    p = phase.workers
    n = phase.executed
    cost = spark.sparkContext.broadcast(np.ascontiguousarray(phase.cost_ms))
    work = _work(cost.value, cpu)
    t0 = time.time()
    if phase.routing == "routed":
        pairs = spark.sparkContext.parallelize(list(zip(phase.worker.tolist(), range(n))), p)
        rows = pairs.partitionBy(p, lambda w: w).mapPartitionsWithIndex(work).collect()
    else:
        prev = spark.conf.get("spark.sql.adaptive.enabled")
        spark.conf.set("spark.sql.adaptive.enabled", "false")  # the p partitions as asked, none coalesced
        try:
            df = spark.createDataFrame([(int(k), i) for i, k in enumerate(phase.key.tolist())], "key long, i int")
            rows = df.repartition(p, "key").rdd.mapPartitionsWithIndex(work).collect()
        finally:
            spark.conf.set("spark.sql.adaptive.enabled", prev)
    cost.unpersist()
    arr = np.array(sorted(rows), dtype=np.float64).reshape(-1, 4)
    if arr.shape[0] != n:
        raise SkewbenchError(f"Spark ran {arr.shape[0]} of the phase's {n} tuples")
    first = float(arr[:, 2].min()) if n else t0
    # every tuple is there when the stage's tasks start: due at its first task's start (the job's
    # planning and, for native routing, the DataFrame's own shuffle before it are not the stage's)
    return {"worker": arr[:, 1].astype(np.int32), "due": np.full(n, first), "start": arr[:, 2], "end": arr[:, 3],
            "info": {"job_start": t0, "stage_start": first}}


def task_metrics(worker: np.ndarray, start: np.ndarray, end: np.ndarray, workers: int) -> dict[str, Any]:
    """Each task's run time (its first start to its last end; 0 for an empty partition), the
    stage's makespan and its largest task over the median."""
    runs = []
    for w in range(workers):
        idx = worker == w
        runs.append(float(end[idx].max() - start[idx].min()) if idx.any() else 0.0)
    med = float(np.median(runs))
    return {"task_seconds": runs, "makespan_s": max(runs),
            "largest_over_median_task": max(runs) / med if med > 0 else None}
