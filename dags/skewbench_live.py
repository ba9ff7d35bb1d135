"""skewbench_live: a dataset's stream executed on Flink and Spark with each strategy's decisions,
measured beside the simulator's prediction -> MLflow -> the "simulated vs measured" page.

Thin: every step is a function of :mod:`skewbench.live.steps`; this file only wires them.
Parsing it imports Airflow and light skewbench modules (the Params' schema), nothing else.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta

from airflow.sdk import Param, dag, task
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException
from airflow.timetables.trigger import CronTriggerTimetable

from skewbench.live import steps
from skewbench.settings import settings

DOC = """
### skewbench live: simulated vs measured

For every selected dataset (default: the catalog's `live` set), each strategy's own decisions
executed on a real engine, repeated, measured, and set beside what the model predicts for the
same stream, rate, costs and parallelism.

**Flink** (a local standalone cluster started for the run: a JobManager and `taskmanagers`
TaskManagers, each a process of its own; or the cluster at `flink_address`). A phase per
strategy is a keyed windowed aggregation (`job` = `agg`: count and sum per key and tumbling
`window` in Flink keyed state, and a merge stage when the decisions split a key; `map`: the
stateless worker) on the stream's prefix: `duration` seconds at `load` percent of the workers'
capacity (or at `rate` tuples per second; or the first `tuples` tuples), each tuple sleeping (or
spinning, `work`) its `cost`. Every tuple goes to the worker its strategy decided (a custom
partitioner); `flink` runs on Flink's own `keyBy` instead (`native`). Every phase runs `repeat`
times, the strategies' order rotated, between two calibrations on a stream of their own (the
cluster warmed up first, its numbers discarded): an implausible calibration, or one that drifted
during the run, stops the run. Every tuple must have run once on the worker decided and every
final aggregate must equal the exact count and sum of its key and window, else the run fails and
names the first difference.

**Spark**: one batch stage per phase on the first `spark_tuples` tuples, `repeat` times, between
two calibration stages; `spark-sql` on Spark SQL's own `repartition`. The records of every
partition must equal the strategy's loads to the tuple.

**Capacity search** (`capacity_search`, on by default when the engines include Flink): after the
phases, on a Flink cluster of its own, each of `capacity_strategies` is searched `repeat` times for
the largest rate its job sustains with `workers` workers (a probe: `capacity_duration` seconds of
stream at the predicted capacity, judged by the sources' lag trend; the bracket halved
`capacity_steps` times), set beside the capacity its routing of the same tuples predicts
(`capacity.json`, the page's capacity section, the parent run's `capacity/<dataset>/<strategy>/*`
metrics; docs/live.md).

Each strategy's row holds, per metric, the median over the repetitions with its minimum and
maximum, the prediction and their ratio: throughput, latency percentiles, source back-pressure
and merge records on Flink; the stage's makespan on Spark.

Steps: `check_params` (one sentence per bad value before anything starts; the Flink engine needs
the Flink environment, `make flink-env`, and a JDK: its job's jar is compiled here) ->
`prepare_dataset` (materialise and validate, as the nightly) -> `open_tracking` -> `run_live`
(one dataset at a time: two runs at once would share the cores they measure) -> `log_to_mlflow`
-> `report` (the page `live.html`) -> `site`. `mark_failed` ends the MLflow parent FAILED with
the reason when a step fails.

MLflow: experiment `skewbench-live`, a parent run per DAG run (tag `skewbench.key =
skewbench_live/<run id>`: a retry or a re-run updates the same runs), a nested run per (dataset,
engine, strategy, routing) with measured, predicted and their ratios; each nested run links to
the latest simulated nightly run of the same dataset and strategy (`skewbench.simulated_run`),
which links back (`skewbench.live_run`).

Retries: a live run retried after a failure runs every phase again from the start; its log and
its MLflow runs say so (`skewbench.attempt`): a run's timing after a restart is not a measurement.
A routing or a final aggregate that differs from the decisions' fails at once, without retry.

Runs weekly (Sunday 03:00 UTC, after the nightly) with the defaults below: a long run (every
default strategy, three repetitions, 30 s phases where the dataset is that long, and the capacity
search of kg, pkg, dc and sg: about 20 minutes a dataset), and by hand with the Params. `make live` runs a short conf (one dataset, six strategies, 8 s phases).
Outputs: `$SKEWBENCH_RUNS_ROOT/<logical date>/live-<run id>/<dataset>/live.json` and `live.html`.
"""


def _params() -> dict[str, Param]:
    return {name: Param(spec["default"], **{k: v for k, v in spec.items() if k != "default"})
            for name, spec in steps.form_params().items()}


@dag(
    dag_id=steps.DAG_ID,
    schedule=CronTriggerTimetable("0 3 * * 0", timezone="UTC"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["skewbench", "benchmark", "live"],
    default_args={"retries": 2, "retry_delay": timedelta(seconds=settings().retry_delay_seconds),
                  "retry_exponential_backoff": True, "max_retry_delay": timedelta(minutes=10)},
    params=_params(),
    doc_md=DOC,
)
def skewbench_live():
    @task
    def check_params(params=None, logical_date=None, dag_run=None, run_id=None) -> dict:
        """Validate the parameters (no retry: a user error stays one) and fix the run directory."""
        from skewbench.errors import SkewbenchError

        try:
            conf = steps.check_params(dict(params))
        except SkewbenchError as e:
            raise AirflowFailException(f"invalid parameters: {e}") from None
        conf["when"] = str(logical_date or dag_run.run_after)
        conf["out_root"] = str(steps.run_dir(conf["when"], run_id))
        print(f"run directory: {conf['out_root']}")
        return conf

    @task
    def dataset_names(conf: dict) -> list[str]:
        return conf["datasets"]

    @task(max_active_tis_per_dagrun=2)
    def prepare_dataset(name: str, conf: dict) -> dict:
        """Generate the dataset unless up to date, and validate it (GE)."""
        return steps.prepare_dataset(name, conf)

    @task
    def open_tracking(conf: dict, dag=None, run_id=None) -> dict:
        """Open this run's MLflow parent run (ending those an earlier run left RUNNING)."""
        return steps.open_tracking(conf, dag.dag_id, run_id)

    @task(max_active_tis_per_dagrun=1, retries=1)
    def run_live(dataset: dict, conf: dict, ti=None) -> dict:
        """The dataset's stream on every engine, every strategy, repeated between two
        calibrations, then the capacity search when the run has one; a routing or a final
        aggregate that differs from the decisions' fails at once (the same decisions would differ
        again); anything else (an implausible calibration on a loaded machine, say) is retried
        once, from the start."""
        from skewbench.live.run import AggregateMismatch, RoutingMismatch

        try:
            return steps.run_dataset(conf, dataset, conf["out_root"], attempt=ti.try_number)
        except (RoutingMismatch, AggregateMismatch) as e:
            raise AirflowFailException(f"{type(e).__name__}: {e}") from None

    @task
    def log_to_mlflow(conf: dict, done: list[dict], dag=None, run_id=None) -> dict:
        """Every dataset's rows as nested runs, linked both ways with the simulated runs."""
        return steps.log_results(conf, dag.dag_id, run_id)

    @task
    def report(conf: dict, logged: dict, dag=None, run_id=None) -> str:
        """The page live.html (simulated vs measured), logged; the parent run ends FINISHED."""
        text = steps.report(conf, dag.dag_id, run_id)
        print(text)
        return text

    @task(trigger_rule="one_failed", retries=1)
    def mark_failed(conf: dict | None, dag=None, run_id=None) -> str:
        """A step failed: end the MLflow parent FAILED with the reason; skipped when the run
        failed in check_params (nothing was started)."""
        if not conf:
            raise AirflowSkipException("the run failed before anything started: nothing to mark")
        reason = steps.fail_tracking(conf, dag.dag_id, run_id, "a step of the live run failed")
        print(f"MLflow parent run ended FAILED: {reason}")
        return reason

    @task(trigger_rule="none_failed")
    def site() -> str:
        """The results site (skewbench site build), its live page included."""
        from skewbench.present.site import build_site

        path = build_site(settings().state / "site", progress=lambda m: print(m, file=sys.stderr))
        print(f"site: {path / 'index.html'}")
        return str(path)

    conf = check_params()
    prepared = prepare_dataset.partial(conf=conf).expand(name=dataset_names(conf))
    opened = open_tracking(conf)
    measured = run_live.partial(conf=conf).expand(dataset=prepared)
    opened >> measured
    logged = log_to_mlflow(conf, measured)
    reported = report(conf, logged)
    [prepared, measured, logged, reported] >> mark_failed(conf)
    reported >> site()


skewbench_live()
