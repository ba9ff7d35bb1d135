"""``skewbench advise``: what each engine's default partitioner does with your own keys at a few
parallelisms, what the balancing strategies would do instead, and what to change.

One call, a plain process on the library's kernels (no Spark, Airflow or MLflow):

:mod:`~skewbench.advise.inputs`   reads the keys (a key file, CSV, Parquet, key,count pairs, a
                                  dataset or catalog name) into :class:`~skewbench.advise.keys.Keys`
:mod:`~skewbench.advise.defaults` the engines' defaults: Kafka, Flink, Spark RDD and SQL
:mod:`~skewbench.advise.alternatives`  PKG, D-C, W-C, CHWBL, salting, local-global, replayed
:mod:`~skewbench.advise.floor`    the best balance with every key whole (offline floor)
:mod:`~skewbench.advise.rules`    the rules behind the suggestions; :mod:`~skewbench.advise.advice`
                                  states them with their effect on the keys
:mod:`~skewbench.advise.core`     :func:`advise`, the table as a Python function
:mod:`~skewbench.advise.render`, :mod:`~skewbench.advise.page`, :mod:`~skewbench.advise.cli`
                                  the console, the HTML page, the command

It sits above the grouping family (it runs its strategies), beside ``nightly`` and ``site``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Advice", "advise"]


def __getattr__(name: str) -> Any:  # the command's help needs none of numpy, pyarrow or the kernels
    if name in __all__:
        from skewbench.advise import core

        return getattr(core, name)
    raise AttributeError(name)
