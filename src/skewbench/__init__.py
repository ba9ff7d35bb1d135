"""skewbench: the reference benchmark for load balancing in distributed stream processing.

The library is the functional core (numpy/numba/pyarrow); Spark, Airflow and MLflow are the
imperative shell around it. This package never imports Airflow.
"""

__version__ = "0.1.0"
