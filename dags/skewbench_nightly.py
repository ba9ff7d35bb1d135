"""skewbench_nightly: generate -> replay on Spark -> validate (GE) -> log (MLflow) -> report.

Thin: every step is a function of :mod:`skewbench.nightly` or a spark-submit job; this file only
wires them, with one task group per strategy family (from the families registry: a new family
gets its group, its Params section and its Spark job without an edit here).  Parsing it imports
Airflow and light skewbench modules (the families' tables and Params sections), nothing else.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, Param, TaskGroup, dag, task
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException
from airflow.timetables.assets import AssetOrTimeSchedule
from airflow.timetables.trigger import CronTriggerTimetable

from skewbench import nightly
from skewbench.settings import settings
from skewbench.families import families

CATALOG_ASSET = Asset(nightly.CATALOG_ASSET_URI)

DOC = """
### skewbench nightly benchmark

For every selected dataset and strategy family: make sure the dataset exists and is valid,
replay it through the family's strategies with a Spark job (`spark_jobs/replay.py <family>`,
`spark_default` connection; `local[*]` unless the connection names a cluster master; one Spark
application per family runs its datasets one after another), validate
the results with Great Expectations, log them and the family's report to MLflow (one experiment
per family, a parent run per DAG run, a nested run per grid cell), and print a summary.

Each family is a task group (plan, replay, validate, log); a family's validation waits only
for its own replays, and a family that is not selected is skipped.

Every cell is compared with the previous night's same cell (same dataset fingerprint, strategy,
coordinates and configuration): the MLflow tag `skewbench.trend` (`new`, `no change`,
`changed: <metrics>`), a `trend.png` per cell, the report's "Trend vs previous night" section.
`check_trend` fails on any change when the Param `fail_on_change` is set.

Runs every night at 02:00 UTC and whenever `skewbench_datasets` publishes the catalog asset.
Trigger it by hand with parameters: the common ones (datasets, catalog set, families, seeds)
and one section per family (its strategies and its own fields, e.g. grouping's workers, sources
and provisioning); lists of choices are picked in the form, and `check_params` refuses any
other bad value (out of range, unknown dataset) with one sentence before any Spark job starts.

Outputs: `$SKEWBENCH_RUNS_ROOT/<logical date>/<run id>/<dataset>/<family>/` (results Parquet,
written atomically), the GE results beside them, `SUMMARY.md`, and MLflow runs tagged
`skewbench.key = skewbench_nightly/<run id>/<family>` (a retry updates the same runs).
"""


def _params() -> dict[str, Param]:
    return {name: Param(spec["default"], **{k: v for k, v in spec.items() if k != "default"})
            for name, spec in nightly.form_params().items()}


@dag(
    dag_id="skewbench_nightly",
    schedule=AssetOrTimeSchedule(timetable=CronTriggerTimetable("0 2 * * *", timezone="UTC"),
                                 assets=[CATALOG_ASSET]),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["skewbench", "benchmark", "nightly"],
    default_args={"retries": 2, "retry_delay": timedelta(seconds=settings().retry_delay_seconds), "retry_exponential_backoff": True,
                  "max_retry_delay": timedelta(minutes=10)},
    params=_params(),
    doc_md=DOC,
)
def skewbench_nightly():
    @task
    def check_params(params=None, logical_date=None, dag_run=None, run_id=None) -> dict:
        """Validate the parameters again (clear message, before any Spark job) and fix the run dir.

        A bad parameter fails at once: retrying a user error would only delay the message.  A run
        triggered without a logical date (Airflow 3 allows it) is dated by when it was due."""
        from skewbench.errors import SkewbenchError

        try:
            conf = nightly.check_params(dict(params))
        except SkewbenchError as e:
            raise AirflowFailException(f"invalid parameters: {e}") from None
        conf["when"] = str(logical_date or dag_run.run_after)
        conf["out_root"] = str(nightly.run_dir(conf["when"], run_id))
        print(f"run directory: {conf['out_root']}")
        return conf

    @task
    def dataset_names(conf: dict) -> list[str]:
        return conf["datasets"]

    @task(max_active_tis_per_dagrun=2)
    def prepare_dataset(name: str) -> dict:
        """Generate or ingest the dataset unless up to date, and validate it (GE)."""
        return nightly.prepare_dataset(name)

    @task
    def open_tracking(conf: dict, dag=None, run_id=None) -> dict:
        """Open this run's MLflow parent runs, so the replay tasks' "MLflow run" links resolve."""
        return nightly.open_tracking(conf["families"], dag.dag_id, run_id, conf["when"])

    @task
    def plan(conf: dict, datasets: list[dict], family: str) -> list[dict]:
        """This family's replays (one per dataset); skipped when the family is not selected."""
        if family not in conf["families"]:
            raise AirflowSkipException(f"family {family} not selected")
        return nightly.plan_replays(conf, list(datasets), conf["out_root"], family)

    @task
    def spark_kwargs(items: list[dict]) -> list[dict]:
        """The family's Spark jobs: its replays in one Spark application (one start-up a night)."""
        return [{"application": job["application"], "application_args": job["application_args"], "name": job["name"]}
                for job in nightly.replay_jobs(list(items))]

    # two at a time: each loads Great Expectations (seconds of CPU); nine at once on two cores only thrash
    @task(max_active_tis_per_dagrun=2)
    def validate(item: dict) -> dict:
        """The results suite with the family's expectations; fails with the failed expectations,
        at once (no retry: the same results fail the same expectations)."""
        from skewbench.errors import ValidationFailed

        try:
            return nightly.validate_replay(item)
        except ValidationFailed as e:
            raise AirflowFailException(f"ValidationFailed: {e}") from None

    @task(trigger_rule="one_failed")
    def mark_failed(conf: dict | None, family: str, dag=None, run_id=None) -> None:
        """A replay or validation failed: mark the family's MLflow parent run FAILED.  Skipped when
        the run failed before planning (bad parameters): nothing was started, nothing to mark."""
        if not conf or family not in conf.get("families", ()):
            raise AirflowSkipException("the run failed before this family started: nothing to mark")
        nightly.fail_tracking([family], dag.dag_id, run_id, "a replay or its validation failed")

    @task
    def log_to_mlflow(items: list[dict], conf: dict, family: str, dag=None, run_id=None) -> dict:
        """Render the family's report and log it with the results to MLflow (idempotent)."""
        return nightly.log_family(list(items), family, dag.dag_id, run_id, conf["when"], conf["out_root"])

    @task(trigger_rule="none_failed")
    def check_trend(conf: dict) -> str:
        """Each cell against the previous night's same cell; with the Param fail_on_change, fail
        (no retry: the results will not change) when any cell changed."""
        from skewbench.errors import SkewbenchError

        try:
            text = nightly.check_trend(conf["out_root"], bool(conf.get("fail_on_change")))
        except SkewbenchError as e:
            raise AirflowFailException(str(e)) from None
        print(text)
        return text

    @task(trigger_rule="none_failed")
    def report(conf: dict, datasets: list[dict], dag=None, run_id=None) -> str:
        """The run's summary table (every selected family), also saved as SUMMARY.md, and its
        overview.html, logged with the picks to each family's MLflow parent run."""
        items = nightly.plan_replays(conf, list(datasets), conf["out_root"])
        text = nightly.summarize(items, None, conf["out_root"], dag.dag_id, run_id)
        print(text)
        return text

    @task(trigger_rule="none_failed")
    def prune_runs(conf: dict) -> list[str]:
        """The runs root's retention: keep the SKEWBENCH_KEEP_RUNS newest runs' output
        directories (this one always); what they logged stays in MLflow."""
        deleted = nightly.prune_runs(conf["out_root"])
        print(f"deleted {len(deleted)} older run director{'y' if len(deleted) == 1 else 'ies'}", *deleted, sep="\n")
        return deleted

    @task(trigger_rule="none_failed")
    def site() -> str:
        """The results site across every night in MLflow (skewbench site build), in
        $SKEWBENCH_STATE/site: an index of nights, a page per dataset and per strategy."""
        from skewbench.present.site import build_site

        path = build_site(settings().state / "site", progress=lambda m: print(m, file=sys.stderr))
        print(f"site: {path / 'index.html'}")
        return str(path)

    conf = check_params()
    datasets = prepare_dataset.expand(name=dataset_names(conf))
    opened = open_tracking(conf)
    logged_all = []
    for family in families():
        with TaskGroup(group_id=family, tooltip=f"the {family} family: plan, replay, validate, log"):
            items = plan(conf, datasets, family)
            replay = SparkSubmitOperator.partial(
                task_id="replay",
                conn_id="spark_default",
                # spark-submit is found on PATH (the environment's bin, which pyspark provides)
                env_vars={"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable},
                max_active_tis_per_dagrun=1,
            ).expand_kwargs(spark_kwargs(items))
            checked = validate.expand(item=items)
            opened >> replay >> checked
            logged = log_to_mlflow(items, conf, family)
            checked >> logged
            [replay, checked] >> mark_failed(conf, family)
            logged_all.append(logged)
    reported = report(conf, datasets)
    logged_all >> reported
    logged_all >> check_trend(conf)
    reported >> prune_runs(conf)
    reported >> site()


skewbench_nightly()
