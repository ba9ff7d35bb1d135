"""Live mode: a dataset's stream executed on a running engine, measured, and set beside what the
simulator predicts for the same stream, rate, costs and parallelism (``skewbench live``).

Modules:

``config``       what a live run executes (:class:`~skewbench.live.config.LiveConfig`), its limits
``decisions``    each strategy's per-tuple decisions on the stream (a worker, or dropped)
``flink``        the Flink engine: the Java job (``java/LiveJob.java``: sources, keyed windowed
                 aggregation, merge stage, sink), run by one client JVM, and what it recorded
``flinkcluster`` a local Flink standalone cluster (a JobManager and TaskManagers, separate processes)
``calibrate``    the engine's constants, measured on a stream of their own, and their plausibility
``model``        the model's prediction of a Flink phase (bounded channels, turns, watermarks, merge)
``measure``      the metrics of a phase's per-tuple timings, measured or predicted; Flink's own
``predict``      the FIFO model of a Spark stage and its metrics
``spark``        the Spark engine (one batch stage per phase, a partition per worker)
``run``          a live run: calibrations, every strategy repeated on every engine, the checks, rows
``compare``      measured against predicted: ratios and the strategies' rank agreement
``cli``          ``skewbench live``; ``windows`` ``skewbench live-windows``
``steps``        the live DAG's steps (``dags/skewbench_live.py``): check, prepare, run, log, report
``tracking``     MLflow: experiment ``skewbench-live``, a parent per DAG run, a nested run per row,
                 linked both ways with the simulated nightly cells
``routers``      the strategies' Java routers (``java/partition/``): their jar, and the conformance
                 driver that runs them over a stream
``partitioners`` the jar for a Flink user's own job (``make flink-partitioners``, docs/flink.md):
                 the routers, their Flink ``Partitioner`` and the merge step (``java/flink/``)

Light at import: the DAG reads only :mod:`skewbench.live.steps` and :mod:`skewbench.live.config`.
"""
