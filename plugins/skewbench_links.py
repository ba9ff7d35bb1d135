"""Airflow plugin: an "MLflow run" extra link on the replay (SparkSubmitOperator) tasks, and an
"Overview" link on the nightly's report task (:class:`OverviewLink`).

The link opens, in the MLflow UI (``SKEWBENCH_MLFLOW_UI``), the runs table of this DAG run's
family experiment filtered to the replay's dataset: one run per strategy and grid cell, nested
under the parent run found by its deterministic ``skewbench.key`` tag.  Before the run is logged
it opens the MLflow UI's start page.

The family is the replay job's first argument (``spark_jobs/replay.py <family> ...``).  Airflow
3's API server computes the link when the UI asks for it, with the *serialized* mapped operator,
which does not carry the expanded ``application_args``: they are then read from the task
instance's rendered template fields (what the UI's "Rendered Templates" tab shows).
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.standard.decorators.python import _PythonDecoratedOperator
from airflow.sdk import BaseOperatorLink


class MLflowRunLink(BaseOperatorLink):
    name = "MLflow run"
    operators = [SparkSubmitOperator]

    def get_link(self, operator, *, ti_key) -> str:
        from skewbench import nightly

        args = getattr(operator, "application_args", None) or _rendered_args(ti_key)
        family = nightly.family_of_job(args)
        if family is None:
            return nightly.mlflow_ui()
        from skewbench.tracking import children_filter, default_tracking_uri, find_parent, mlflow_runs_url

        key = nightly.run_key(ti_key.dag_id, ti_key.run_id, family)
        found = find_parent(default_tracking_uri(), family, key)
        if found is None:
            return nightly.mlflow_ui()
        experiment_id, run_id = found
        return mlflow_runs_url(nightly.mlflow_ui(), experiment_id, children_filter(run_id, nightly.dataset_of_job(args)))


def _rendered_args(ti_key):
    """The task instance's rendered ``application_args`` (None when Airflow did not record it)."""
    try:
        from airflow.models.renderedtifields import RenderedTaskInstanceFields

        fields = RenderedTaskInstanceFields.get_templated_fields(ti_key) or {}
    except Exception:  # noqa: BLE001 - no metadata database here (e.g. in a task): no link detail
        return None
    return fields.get("application_args")


class OverviewLink(BaseOperatorLink):
    """An "Overview" extra link on the nightly's ``report`` task: the night's overview.html in the
    MLflow UI (the artifact of this DAG run's family parent runs, which the report task logs).
    Airflow offers a plugin link per operator class, so it is declared for every ``@task`` and
    gives no URL for other tasks, nor before the overview is logged."""

    name = "Overview"
    operators = [_PythonDecoratedOperator]
    task_id = "report"

    def get_link(self, operator, *, ti_key) -> str:
        if ti_key.task_id != self.task_id:
            return ""
        from skewbench import nightly
        from skewbench.families import families
        from skewbench.tracking import default_tracking_uri, find_overview

        keys = {fam: nightly.run_key(ti_key.dag_id, ti_key.run_id, fam) for fam in families()}
        return find_overview(nightly.mlflow_ui(), default_tracking_uri(), keys) or ""


class SkewbenchLinksPlugin(AirflowPlugin):
    name = "skewbench_links"
    operator_extra_links = [MLflowRunLink(), OverviewLink()]
