"""Live mode: a dataset's stream executed on a running engine, measured, and set beside what the
simulator predicts for the same stream, rate, costs and parallelism (``skewbench live``).

Modules:

``config``     what a live run executes (:class:`~skewbench.live.config.LiveConfig`), its limits
``decisions``  each strategy's per-tuple decisions on the stream (a worker, or dropped)
``predict``    the simulator's prediction: FIFO workers, the engine's measured per-tuple overhead
``measure``    metrics from the per-tuple timings an engine wrote
``flink``      the Flink engine (a Java DataStream job on Flink's own runtime, from the Flink
               environment's jars; ``java/LiveJob.java``)
``spark``      the Spark engine (one keyed stage per strategy, a partition per worker)
``run``        a live run: calibration, every strategy on every engine, the comparison rows
``compare``    measured against predicted: ratios and the strategies' rank agreement
``cli``        ``skewbench live``
``steps``      the live DAG's steps (``dags/skewbench_live.py``): check, prepare, run, log, report
``tracking``   MLflow: experiment ``skewbench-live``, a parent per DAG run, a nested run per row,
               linked both ways with the simulated nightly cells

Light at import: the DAG reads only :mod:`skewbench.live.steps` and :mod:`skewbench.live.config`.
"""
