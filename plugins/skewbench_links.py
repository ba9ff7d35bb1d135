"""Airflow plugin: an "MLflow run" extra link on the replay (SparkSubmitOperator) tasks.

The link opens the MLflow parent run of this DAG run and family (found by its deterministic
``skewbench.key`` tag) in the MLflow UI (``SKEWBENCH_MLFLOW_UI``); before the run is logged it
opens the family's experiment.
"""

from __future__ import annotations

from pathlib import Path

from airflow.plugins_manager import AirflowPlugin
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import BaseOperatorLink


class MLflowRunLink(BaseOperatorLink):
    name = "MLflow run"
    operators = [SparkSubmitOperator]

    def get_link(self, operator, *, ti_key) -> str:
        from skewbench import nightly
        from skewbench.families import FAMILIES

        job = Path(str(getattr(operator, "application", "") or "")).name
        family = next((f for f in FAMILIES.values() if f.spark_job == job), None)
        if family is None:
            return nightly.mlflow_ui()
        from skewbench.tracking import default_tracking_uri, find_parent, mlflow_run_url

        key = nightly.run_key(ti_key.dag_id, ti_key.run_id, family.name)
        found = find_parent(default_tracking_uri(), family.name, key)
        if found is None:
            return nightly.mlflow_ui()
        experiment_id, run_id = found
        return mlflow_run_url(nightly.mlflow_ui(), experiment_id, run_id)


class SkewbenchLinksPlugin(AirflowPlugin):
    name = "skewbench_links"
    operator_extra_links = [MLflowRunLink()]
