"""The live mode in MLflow: experiment ``skewbench-live``, through :mod:`skewbench.tracking`.

* A **parent run per DAG run**, found again by its tag ``skewbench.key = <dag id>/<run id>``
  (a retried or re-run task updates the same run): the run's configuration as params, the tags
  of the DAG run, the datasets and their fingerprints, the rank agreement of each dataset, engine
  and metric as metrics (``kendall_tau/<dataset>/<engine>/<metric>``), and as artifacts each
  dataset's ``live.json`` (``live/<dataset>/``) and the page ``live.html``.  It stays RUNNING
  until the page is logged (:func:`finish`); a failed step ends it FAILED with the reason in
  ``skewbench.failure`` (:func:`fail`), and a DAG run that ended without either is ended FAILED
  by the next run (:func:`open_parent`).
* A **nested run per (dataset, engine, strategy, routing)**, key ``<parent key>/<fingerprint[:12]>/
  <engine>/<strategy>/<routing>``: what was executed as params (engine, strategy, its family and
  parameters, routing, workers, dataset, fingerprint, tuples, rate, work, cost model), every
  measured and predicted number and their ratios as metrics, tags ``skewbench.engine``,
  ``skewbench.routing``, ``skewbench.dataset_fingerprint``, ``skewbench.strategy``, the records
  per worker, and ``skewbench.attempt`` (a retried run says so).  The children are ended
  FINISHED only once every one of them is logged: a failure half-way leaves none complete.
* **Links both ways**: a child names the latest simulated run (the nightly's grouping or
  shedding experiment) of the same dataset fingerprint and strategy, preferring a cell with the
  same worker count, in ``skewbench.simulated_run`` (its MLflow UI URL); that simulated run gets
  ``skewbench.live_run`` (the URL of the live run on the run's first engine) and
  ``skewbench.live_run.<engine>`` per engine.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from skewbench.present import livepage
from skewbench import tracking as tr
from skewbench.errors import SkewbenchError

FAMILY = livepage.EXPERIMENT
#: the columns of a live row logged as params (what was executed; never changes on a rerun)
PARAM_COLUMNS = ("engine", "strategy", "family", "routing", "workers", "dataset", "fingerprint", "tuples_offered",
                 "rate", "work", "cost_model")
ATTEMPT_TAG = "skewbench.attempt"


def run_key(dag_id: str, run_id: str) -> str:
    return f"{dag_id}/{run_id}"


def child_key(parent_key: str, row: Mapping[str, Any]) -> str:
    return f"{parent_key}/{str(row['fingerprint'])[:12]}/{row['engine']}/{row['strategy']}/{row['routing']}"


def _uri() -> str:
    return tr.default_tracking_uri()


def _ui() -> str:
    from skewbench.settings import settings

    return settings().mlflow_ui


def run_params(conf: Mapping[str, Any]) -> dict[str, Any]:
    """A live DAG run's configuration, as its parent run's params."""
    keys = ("engines", "strategies", "shedders", "workers", "tuples", "rate", "cost", "work", "native", "flink_address")
    return {k: conf[k] for k in keys if k in conf}


def open_parent(conf: Mapping[str, Any], dag_id: str, run_id: str) -> tuple[str, str]:
    """Find or create this DAG run's parent run (RUNNING), after ending FAILED the parents an
    earlier run of the DAG left RUNNING (the DAG runs one run at a time: such a run is over)."""
    uri, key = _uri(), run_key(dag_id, run_id)
    ended = tr.fail_stale_parents(uri, FAMILY, f"{dag_id}/", key,
                                  f"its live DAG run ended before finishing it (found by run {run_id})")
    if ended:
        print(f"ended {len(ended)} live parent run(s) an earlier DAG run left RUNNING: {', '.join(ended)}")
    tags = {"skewbench.dag_id": dag_id, "skewbench.run_id": run_id, tr.LOGICAL_DATE_TAG: str(conf["when"]),
            "skewbench.engines": ",".join(conf["engines"]), livepage.DATASETS_TAG: ",".join(conf["datasets"])}
    eid, pid = tr.open_parent(uri, FAMILY, key, f"live {str(conf['when'])[:10]} {run_id}", tags)
    tr.update_run(uri, pid, params=run_params(conf))
    return eid, pid


def fail(dag_id: str, run_id: str, reason: str) -> str | None:
    """End this DAG run's parent FAILED with ``reason``, and every child still RUNNING with it
    (nothing of a failed run counts as a complete result).  Returns the parent's id."""
    uri = _uri()
    found = tr.find_parent(uri, FAMILY, run_key(dag_id, run_id))
    if found is None:
        return None
    for r in tr.search_runs(uri, FAMILY, f"tags.`{tr.PARENT_TAG}` = '{found[1]}' and attributes.status = 'RUNNING'"):
        tr.end_run(uri, r.info.run_id, "FAILED", f"the live DAG run failed: {reason}")
    tr.end_run(uri, found[1], "FAILED", reason)
    return found[1]


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def child_fields(row: Mapping[str, Any], attempt: str) -> tuple[dict[str, Any], dict[str, float], dict[str, str]]:
    """(params, metrics, tags) of a row's child run: what was executed, every number measured or
    predicted, and the tags to find and read it by."""
    params: dict[str, Any] = {k: row[k] for k in PARAM_COLUMNS if row.get(k) is not None}
    params.update({f"{tr.PARAM_PREFIX}{k}": v for k, v in sorted((row.get("params") or {}).items())})
    metrics = {k: f for k, v in row.items() if k not in PARAM_COLUMNS and (f := _number(v)) is not None}
    tags = {"skewbench.engine": str(row["engine"]), "skewbench.routing": str(row["routing"]),
            "skewbench.dataset_fingerprint": str(row["fingerprint"]), "skewbench.dataset": str(row["dataset"]),
            "skewbench.strategy": str(row["strategy"]), "skewbench.strategy_family": str(row["family"]),
            "skewbench.subtask_records": json.dumps(row.get("subtask_records")),
            "skewbench.routing_exact": str(bool(row.get("routing_exact"))), ATTEMPT_TAG: attempt}
    return params, metrics, tags


def find_simulated(uri: str, row: Mapping[str, Any]):
    """The latest finished simulated run (a nested run of the family's experiment) of the row's
    dataset fingerprint and strategy; on its night, one with the row's worker count when there
    is one.  None when the strategy was never simulated on that dataset."""
    fp, strategy = str(row["fingerprint"]), str(row["strategy"])
    if not fp or any(ch in fp + strategy for ch in "'\\"):
        return None
    runs = [r for r in tr.search_runs(uri, str(row["family"]),
                                      f"tags.`skewbench.dataset_fingerprint` = '{fp}' and "
                                      f"tags.`skewbench.strategy` = '{strategy}' and attributes.status = 'FINISHED'")
            if tr.PARENT_TAG in r.data.tags]
    if not runs:
        return None

    def rank(r) -> tuple[float, bool, int]:
        same_workers = r.data.params.get("workers") == str(row.get("workers"))
        return tr.night_of(r.data.tags, r.info.start_time)[0], same_workers, r.info.start_time

    return max(runs, key=rank)


def _link(uri: str, ui: str, live_eid: str, rows_runs: Sequence[tuple[Mapping[str, Any], str]]) -> dict[str, str]:
    """Tag each live child with its simulated run and each simulated run with its live runs;
    returns strategy -> the simulated run's URL (for the page)."""
    simulated: dict[str, str] = {}
    back: dict[str, dict[str, str]] = {}  # simulated run id -> its tags
    for row, rid in rows_runs:
        sim = find_simulated(uri, row)
        if sim is None:
            tr.update_run(uri, rid, tags={livepage.SIMULATED_TAG: "none: no simulated run of this dataset and "
                                                                   "strategy in MLflow"})
            continue
        url = tr.mlflow_run_url(ui, sim.info.experiment_id, sim.info.run_id)
        simulated[str(row["strategy"])] = url
        tr.update_run(uri, rid, tags={livepage.SIMULATED_TAG: url, "skewbench.simulated_run_id": sim.info.run_id})
        if row["routing"] != "routed":
            continue
        live_url = tr.mlflow_run_url(ui, live_eid, rid)
        tags = back.setdefault(sim.info.run_id, {})
        tags.setdefault(livepage.LIVE_TAG, live_url)  # the run's first engine
        tags[f"{livepage.LIVE_TAG}.{row['engine']}"] = live_url
    for sim_id, tags in back.items():
        tr.update_run(uri, sim_id, tags=tags)
    return simulated


def log_results(results: Sequence[Mapping[str, Any]], dag_id: str, run_id: str) -> dict[str, Any]:
    """Log every dataset's live result (``live.json`` as :func:`skewbench.live.steps.run_dataset`
    wrote it, with its ``path``) under this DAG run's parent run, link each child with its
    simulated run both ways, and end the children FINISHED once all are logged.  The parent stays
    RUNNING (:func:`finish` ends it with the page).  Idempotent: a rerun updates the same runs."""
    uri, ui, key = _uri(), _ui(), run_key(dag_id, run_id)
    found = tr.find_parent(uri, FAMILY, key)
    if found is None:
        raise SkewbenchError(f"no live parent run {key} in MLflow: the open_tracking step did not run")
    eid, pid = found
    children: dict[str, str] = {}
    simulated: dict[str, dict[str, str]] = {}
    taus: dict[str, float] = {}
    for res in results:
        attempt = res.get("attempt_note") or f"{res.get('attempt', 1)}: the run's first attempt"
        rows_runs = []
        for row in res["rows"]:
            ck = child_key(key, row)
            name = f"{row['dataset']} {row['engine']} {livepage.point_label(row)}"
            params, metrics, tags = child_fields(row, attempt)
            rid, _ = tr.keyed_child(uri, FAMILY, pid, ck, name, tags)
            tr.update_run(uri, rid, params=params, metrics=metrics, tags=tags)
            children[ck] = rid
            rows_runs.append((row, rid))
        simulated[res["dataset"]] = _link(uri, ui, eid, rows_runs)
        for a in res.get("agreement") or ():
            if a.get("kendall_tau") is not None:
                taus[livepage.tau_metric(res["dataset"], a["engine"], a["metric"])] = a["kendall_tau"]
        tr.log_files(uri, pid, [res["path"]], f"live/{res['dataset']}")
    retried = [f"{r['dataset']} (attempt {r['attempt']})" for r in results if int(r.get("attempt", 1)) > 1]
    fps = [str(r["stream"]["fingerprint"]) for r in results]
    tr.update_run(uri, pid, metrics=taus, tags={
        livepage.FINGERPRINTS_TAG: ",".join(fps), livepage.DATASETS_TAG: ",".join(r["dataset"] for r in results),
        ATTEMPT_TAG: ("retried: " + ", ".join(retried)) if retried else "every dataset on its first attempt"})
    for rid in children.values():
        tr.end_run(uri, rid, "FINISHED")
    return {"experiment_id": eid, "parent_run_id": pid, "children": children, "simulated": simulated,
            "url": tr.mlflow_run_url(ui, eid, pid)}


def finish(dag_id: str, run_id: str, page: Path) -> str:
    """Log the run's page to its parent run, tag it, and end the parent FINISHED; its MLflow URL."""
    uri, key = _uri(), run_key(dag_id, run_id)
    found = tr.find_parent(uri, FAMILY, key)
    if found is None:
        raise SkewbenchError(f"no live parent run {key} in MLflow: the open_tracking step did not run")
    tr.log_files(uri, found[1], [page])
    tr.update_run(uri, found[1], tags={livepage.PAGE_TAG: page.name})
    tr.end_run(uri, found[1], "FINISHED")
    return tr.overview_url(_ui(), found[0], found[1], page.name)
