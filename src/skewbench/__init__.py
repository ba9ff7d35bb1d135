"""skewbench: the reference benchmark for load balancing in distributed stream processing.

The library is the functional core (numpy/numba/pyarrow); Spark, Airflow and MLflow are the
imperative shell around it.  This package never imports Airflow.

Layout (import layers, lowest first; checked by import-linter in ``make test``):

* ``errors``, ``settings`` (paths and environment), ``hashing``, ``families`` (one light entry
  per strategy family), ``registry`` (the families' strategy tables, and entry points);
* ``datasets`` (the stream contract, generators, traces, catalog);
* ``results`` (the results contract: Column, Metric, schemas, read/write);
* ``simulation`` (worker queues), ``spark`` (sessions, tasks);
* ``replay`` (cells, grids, executors, results directories), ``plotting``;
* ``validation``, ``reports``, ``tracking``, ``clikit`` (generic: they ask the families);
* the family packages (``grouping``, ...), each with fixed module names, and ``materialize``;
* ``nightly`` (the pipeline's steps), then ``cli``.

``docs/extending.md`` says how to add a strategy, a family or a dataset.
"""

__version__ = "0.1.0"
