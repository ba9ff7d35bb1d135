"""The live mode in MLflow: experiment ``skewbench-live``, through :mod:`skewbench.tracking`.

* A **parent run per DAG run**, found again by its tag ``skewbench.key = <dag id>/<run id>``
  (a retried or re-run task updates the same run): the run's configuration as params, the tags
  of the DAG run, the datasets and their fingerprints, the rank agreement of each dataset, engine
  and metric as metrics (``kendall_tau/<dataset>/<engine>/<metric>``, the tau-b that counts the
  pairs the repetitions do not separate as ties; ``kendall_tau_plain/...``, the tau-b of the
  medians alone; ``agreement_strategies/...``, over how many strategies) and the pairs not
  separated as a tag (``skewbench.not_separated/<dataset>/<engine>/<metric>``, JSON), each
  dataset's calibrations as metrics (``calibration/<dataset>/<engine>/before.overhead_ms``,
  ``.../after.transport_ms``, ...), and as artifacts each dataset's ``live.json``
  (``live/<dataset>/``) and the page ``live.html``.  It stays RUNNING
  until the page is logged (:func:`finish`); a failed step ends it FAILED with the reason in
  ``skewbench.failure`` (:func:`fail`), and a DAG run that ended without either is ended FAILED
  by the next run (:func:`open_parent`).
* A **nested run per (dataset, engine, strategy, routing)**, key ``<parent key>/<fingerprint[:12]>/
  <engine>/<strategy>/<routing>``: what was executed as params (engine, strategy, its family and
  parameters, routing, workers, dataset, fingerprint, tuples, rate, work, cost model, and the
  run's ``repeat``, ``job``, ``sources``, ``window_ms``, ``warmup``, ``state_backend``,
  ``cluster``); as metrics (step 0) every number of the row: each measured metric's median over
  the repetitions with its minimum and maximum (``throughput_measured``, ``throughput_measured_min``,
  ``throughput_measured_max``, ``latency_p99_measured_ms``, ...), the predictions (bounded and
  unbounded) and ratios, ``repeat``, the measurement window (``window_s.start``, ``window_s.end``,
  seconds from the phase's start), both calibrations flattened (``calibration_before.overhead_ms``,
  ``calibration_after.tuples.idle``, ``calibration_before.overhead_per_worker_ms/<i>``), and each
  per-worker list one metric a worker (``utilisation_measured/<w>``, ``flink_work_busy_ms_per_s/<w>``).
  Step metrics (:func:`step_metrics`): each repetition's values (``repetition/<metric>``, step =
  the repetition, from 1) and, per repetition ``r`` (from 1), the per-second series, step = the
  second of the phase: ``series/worker_throughput/<w>/rep<r>`` (tuples worker ``w`` completed in
  that second) and the model's ``series/worker_throughput_predicted/<w>/rep<r>``, the sources'
  blocked ms ``series/source_blocked_ms/rep<r>`` and ``series/source_blocked_ms_predicted/rep<r>``,
  and Flink's own metrics sampled about once a second (step: the second the sampling interval
  ending at ``t_s`` mostly covers, ``floor(t_s - 0.5)``): ``series/flink_busy_ms_per_s/<w>/rep<r>``,
  ``series/flink_records_in_per_s/<w>/rep<r>`` and ``series/source_backpressured_ms_per_s/rep<r>``.
  Tags ``skewbench.engine``, ``skewbench.routing``, ``skewbench.dataset_fingerprint``,
  ``skewbench.strategy``, the records per worker, both calibrations as JSON
  (``skewbench.calibration_before``, ``skewbench.calibration_after``), and ``skewbench.attempt``
  (a retried run says so).  The children are ended FINISHED only once every one of them is
  logged: a failure half-way leaves none complete.  The step metrics are logged once per row's
  data: a rerun of the same data logs nothing again (tag ``skewbench.series_logged``, the data's
  digest), one that stopped half-way logs the same points again (the store drops the duplicates:
  same key, step, value and timestamp, the timestamps counted from ``skewbench.series_t0``), and a
  retried attempt's new data is logged from a new ``skewbench.series_t0``, after the earlier
  data's last point (``skewbench.series_t_end``): the history keeps the earlier attempt's points,
  timestamped before it; a reader takes the points from it on.
* **Links both ways**: a child names the latest simulated run (the nightly's grouping or
  shedding experiment) of the same dataset fingerprint and strategy, preferring a cell with the
  same worker count, in ``skewbench.simulated_run`` (its MLflow UI URL); that simulated run gets
  ``skewbench.live_run`` (the URL of the live run on the run's first engine) and
  ``skewbench.live_run.<engine>`` per engine.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from skewbench.present import livepage
from skewbench import tracking as tr
from skewbench.errors import SkewbenchError

FAMILY = livepage.EXPERIMENT
#: the columns of a live row logged as params (what was executed; never changes on a rerun)
PARAM_COLUMNS = ("engine", "strategy", "family", "routing", "workers", "dataset", "fingerprint", "tuples_offered",
                 "rate", "work", "cost_model")
#: the run's configuration a row carries, logged as params too (the numbers among them also as metrics)
CONFIG_PARAMS = ("repeat", "job", "sources", "window_ms", "warmup", "state_backend", "cluster")
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


def flat_numbers(prefix: str, v: Any) -> dict[str, float]:
    """The finite numbers in ``v`` under ``prefix``: a number as itself, a dict's entries as
    ``prefix.<key>``, a list's as ``prefix/<index>`` (nested alike); anything else is left out."""
    if isinstance(v, Mapping):
        out: dict[str, float] = {}
        for k, x in v.items():
            out.update(flat_numbers(f"{prefix}.{k}", x))
        return out
    if isinstance(v, (list, tuple)):
        out = {}
        for i, x in enumerate(v):
            out.update(flat_numbers(f"{prefix}/{i}", x))
        return out
    f = _number(v)
    return {} if f is None else {prefix: f}


#: columns of a row logged otherwise than as their numbers (or not at all): the per-second
#: series and the repetitions are step metrics, the window is two metrics
_NOT_FLAT = ("series", "repetitions", "params", "window_s")


def child_fields(row: Mapping[str, Any], attempt: str) -> tuple[dict[str, Any], dict[str, float], dict[str, str]]:
    """(params, metrics, tags) of a row's child run: what was executed, every number measured or
    predicted (medians, minimum and maximum over the repetitions, predictions, ratios, the
    calibrations and the per-worker lists flattened, the measurement window), and the tags to
    find and read it by."""
    params: dict[str, Any] = {k: row[k] for k in PARAM_COLUMNS + CONFIG_PARAMS if row.get(k) is not None}
    params.update({f"{tr.PARAM_PREFIX}{k}": v for k, v in sorted((row.get("params") or {}).items())})
    metrics: dict[str, float] = {}
    for k, v in row.items():
        if k not in PARAM_COLUMNS and k not in _NOT_FLAT:
            metrics.update(flat_numbers(k, v))
    window = row.get("window_s")
    if isinstance(window, (list, tuple)) and len(window) == 2:
        metrics.update({k: f for k, x in zip(("window_s.start", "window_s.end"), window)
                        if (f := _number(x)) is not None})
    tags = {"skewbench.engine": str(row["engine"]), "skewbench.routing": str(row["routing"]),
            "skewbench.dataset_fingerprint": str(row["fingerprint"]), "skewbench.dataset": str(row["dataset"]),
            "skewbench.strategy": str(row["strategy"]), "skewbench.strategy_family": str(row["family"]),
            "skewbench.subtask_records": json.dumps(row.get("subtask_records")),
            "skewbench.routing_exact": str(bool(row.get("routing_exact"))), ATTEMPT_TAG: attempt}
    for which in ("calibration_before", "calibration_after"):
        if isinstance(row.get(which), Mapping):
            tags[f"skewbench.{which}"] = json.dumps(row[which], sort_keys=True, default=str)
    return params, metrics, tags


def flink_step(t_s: float) -> int:
    """The second of the phase that Flink's sampling interval ending at ``t_s`` (seconds from the
    phase's start; about a second long) mostly covers."""
    return max(0, int(math.floor(float(t_s) - 0.5)))


def _offset_ms(t_s: float) -> int:
    """A Flink sample's time in the phase, in ms (a sample taken before the phase started: 0)."""
    return max(0, int(round(t_s * 1000)))


def step_metrics(row: Mapping[str, Any]) -> list[tuple[str, float, int, int]]:
    """``(key, value, step, offset_ms)`` of a row's step metrics (module docstring): each
    repetition's measured values, step = the repetition (from 1), and per repetition the
    per-second series, step = the second of the phase; ``offset_ms``: when in the phase (the
    repetitions': their number), for the points' timestamps.  [] for a row without either (Spark)."""
    out: list[tuple[str, float, int, int]] = []
    for r, rep in enumerate(row.get("repetitions") or (), start=1):
        for k, v in (rep or {}).items():
            if (f := _number(v)) is not None:
                out.append((f"repetition/{k}", f, r, r))
    for r, s in enumerate(row.get("series") or (), start=1):
        s = s or {}
        for side, suffix in (("engine", ""), ("predicted", "_predicted")):
            part = s.get(side) or {}
            for w, vals in enumerate(part.get("worker_throughput") or ()):
                out += [(f"series/worker_throughput{suffix}/{w}/rep{r}", f, i, i * 1000)
                        for i, v in enumerate(vals) if (f := _number(v)) is not None]
            out += [(f"series/source_blocked_ms{suffix}/rep{r}", f, i, i * 1000)
                    for i, v in enumerate(part.get("source_blocked_ms") or ()) if (f := _number(v)) is not None]
        fl = s.get("flink") or {}
        ts = [_number(t) for t in fl.get("t_s") or ()]
        for name, key in (("worker_busy_ms_per_s", "flink_busy_ms_per_s"),
                          ("worker_records_in_per_s", "flink_records_in_per_s")):
            for w, vals in enumerate(fl.get(name) or ()):
                out += [(f"series/{key}/{w}/rep{r}", f, flink_step(t), _offset_ms(t))
                        for t, v in zip(ts, vals) if t is not None and (f := _number(v)) is not None]
        sts = [_number(t) for t in fl.get("source_t_s") or ()]
        out += [(f"series/source_backpressured_ms_per_s/rep{r}", f, flink_step(t), _offset_ms(t))
                for t, v in zip(sts, fl.get("source_backpressured_ms_per_s") or ())
                if t is not None and (f := _number(v)) is not None]
    return out


#: the tags of a child's step metrics: the digest of the data logged, when its points' timestamps
#: start and end (epoch ms: the start plus each point's time in the phase), and the digest once
#: every point is logged
SERIES_DIGEST_TAG, SERIES_T0_TAG, SERIES_END_TAG, SERIES_LOGGED_TAG = (
    "skewbench.series_digest", "skewbench.series_t0", "skewbench.series_t_end", "skewbench.series_logged")
#: metrics per MlflowClient.log_batch call (MLflow's limit)
_BATCH = 1000


def log_steps(uri: str, run_id: str, row: Mapping[str, Any]) -> int:
    """Log a row's step metrics (:func:`step_metrics`) to its child run in batches; the number of
    points logged (0 when this data was logged already; module docstring)."""
    from mlflow.entities import Metric, RunTag

    points = step_metrics(row)
    if not points:
        return 0
    digest = hashlib.sha256(json.dumps([row.get("repetitions"), row.get("series")], sort_keys=True,
                                       default=str).encode()).hexdigest()[:16]
    client = tr.client(uri)
    have = client.get_run(run_id).data.tags
    if have.get(SERIES_LOGGED_TAG) == digest:
        return 0
    if have.get(SERIES_DIGEST_TAG) == digest and have.get(SERIES_T0_TAG, "").isdigit():
        t0 = int(have[SERIES_T0_TAG])  # the same points again: the store keeps those it has once
    else:  # after every point of earlier data
        end = have.get(SERIES_END_TAG, "")
        t0 = max(int(time.time() * 1000), int(end) + 1 if end.isdigit() else 0)
    client.log_batch(run_id, tags=[RunTag(SERIES_DIGEST_TAG, digest), RunTag(SERIES_T0_TAG, str(t0)),
                                   RunTag(SERIES_END_TAG, str(t0 + max(off for *_, off in points)))],
                     synchronous=True)
    metrics = [Metric(k, v, t0 + off, step) for k, v, step, off in points]
    for i in range(0, len(metrics), _BATCH):
        client.log_batch(run_id, metrics=metrics[i:i + _BATCH], synchronous=True)
    client.log_batch(run_id, tags=[RunTag(SERIES_LOGGED_TAG, digest)], synchronous=True)
    return len(metrics)


def parent_metrics(res: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, str]]:
    """(metrics, tags) a dataset's result gives its parent run: the rank agreements (tau-b with
    and without the ties of the strategies not separated, and over how many), the pairs not
    separated, and the calibrations of each engine before and after the strategies."""
    ds = str(res["dataset"])
    metrics: dict[str, float] = {}
    tags: dict[str, str] = {}
    for a in res.get("agreement") or ():
        engine, metric = a["engine"], a["metric"]
        for k, prefix in (("kendall_tau", livepage.TAU_PREFIX), ("kendall_tau_plain", livepage.TAU_PLAIN_PREFIX),
                          ("strategies", "agreement_strategies")):
            if (f := _number(a.get(k))) is not None:
                metrics[livepage.tau_metric(ds, engine, metric, prefix)] = f
        if "not_separated" in a:
            tags[f"{livepage.NOT_SEPARATED_TAG}/{ds}/{engine}/{metric}"] = json.dumps(a["not_separated"])
    for engine, cals in (res.get("calibrations") or {}).items():
        for which in ("before", "after"):
            metrics.update(flat_numbers(f"calibration/{ds}/{engine}/{which}", (cals or {}).get(which)))
    metrics.update(capacity_metrics(res))
    return metrics, tags


#: what a capacity search's row gives its dataset's parent run, per strategy
CAPACITY_FIELDS = ("predicted", "measured", "measured_min", "measured_max", "ratio", "within", "separated")


def capacity_metrics(res: Mapping[str, Any]) -> dict[str, float]:
    """The capacity search's numbers (``res["capacity"]``, absent or None when none ran) as the
    parent run's metrics ``capacity/<dataset>/<strategy>/<field>`` (:data:`CAPACITY_FIELDS`:
    tuples per second, their ratio, and ``within`` and ``separated`` as 1 or 0), and the
    calibration's overhead ``capacity/<dataset>/overhead_ms``."""
    cap = res.get("capacity")
    if not cap:
        return {}
    ds = str(res["dataset"])
    out: dict[str, float] = {}
    if (f := _number(cap.get("overhead_ms"))) is not None:
        out[f"capacity/{ds}/overhead_ms"] = f
    for row in cap.get("rows") or ():
        for k in CAPACITY_FIELDS:
            v = row.get(k)
            f = float(v) if isinstance(v, bool) else _number(v)
            if f is not None:
                out[f"capacity/{ds}/{row['strategy']}/{k}"] = f
    return out


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
        if row["routing"] == "native":  # the engine's own partitioner: not the strategy's run
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
    parent_numbers: dict[str, float] = {}
    parent_tags: dict[str, str] = {}
    for res in results:
        attempt = res.get("attempt_note") or f"{res.get('attempt', 1)}: the run's first attempt"
        rows_runs = []
        for row in res["rows"]:
            ck = child_key(key, row)
            name = f"{row['dataset']} {row['engine']} {livepage.point_label(row)}"
            params, metrics, tags = child_fields(row, attempt)
            rid, _ = tr.keyed_child(uri, FAMILY, pid, ck, name, tags)
            tr.update_run(uri, rid, params=params, metrics=metrics, tags=tags)
            log_steps(uri, rid, row)
            children[ck] = rid
            rows_runs.append((row, rid))
        simulated[res["dataset"]] = _link(uri, ui, eid, rows_runs)
        m, t = parent_metrics(res)
        parent_numbers.update(m)
        parent_tags.update(t)
        tr.log_files(uri, pid, [res["path"]] + ([res["capacity"]["path"]] if res.get("capacity") else []),
                     f"live/{res['dataset']}")
    retried = [f"{r['dataset']} (attempt {r['attempt']})" for r in results if int(r.get("attempt", 1)) > 1]
    fps = [str(r["stream"]["fingerprint"]) for r in results]
    tr.update_run(uri, pid, metrics=parent_numbers, tags={
        **parent_tags, livepage.FINGERPRINTS_TAG: ",".join(fps),
        livepage.DATASETS_TAG: ",".join(r["dataset"] for r in results),
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
