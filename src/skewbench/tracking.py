"""Log replay results to MLflow (the client API; tracking store given by URI).

Layout
------
* One **experiment per family**: ``skewbench-<family>`` (created when missing; with a local
  SQLite store its artifacts go to ``artifacts/<experiment>/`` beside the database file).
* One **parent run per pipeline run**, found by its tag ``skewbench.key = run_key``: a retried
  task finds and updates the same run.  Tags: the caller's (DAG id, run id, logical date, git
  commit, ...), ``skewbench.family``, ``skewbench.dataset_fingerprints``, ``skewbench.datasets``.
  Artifacts: ``results/<name>/`` (``summary.parquet``, ``series.parquet``, ``_manifest.json``),
  and, when the caller hands them over, ``report.html`` and ``plots/<name>/*.png`` (rendered by
  the caller, e.g. with :func:`skewbench.present.reports.render_report`), where ``<name>`` is given by
  the caller per results directory (e.g. :func:`skewbench.present.reports.results_names`).
* One **nested child run per (dataset, grid cell)**, tag ``skewbench.key =
  <run_key>/<fingerprint[:12]>/<cell_id>``, found among the parent's children the same way.

  - Params: the family's param columns (:attr:`skewbench.results.Schema.param_columns`: strategy,
    coordinates, seed, dataset, fingerprint and the schema's ``param`` columns), every strategy
    parameter as used (``p.<name>``), and the replay configuration's non-null entries (``c.<name>``).  MLflow
    never changes a param's value: only params not already present are logged, and a different
    value already present (the same run key used for other results) raises
    :class:`SkewbenchError` before anything is written.
  - Final metrics (step 0): every numeric summary column but the params; the timing metrics as
    ``time.<column>``; the numeric entries of ``stats`` as ``s.<name>``.
  - Step metrics (step = window index): ``window.<name>`` for the family's *windowed* series
    METRICS and ``window.s.<name>`` for the numeric entries of the window's ``stats``; and
    ``curve.<name>`` for the summary's curves (:attr:`skewbench.results.Schema.curves`: a list
    column, each entry at the step its steps column gives, such as capacity against workers).

  - Trend (:mod:`skewbench.trend`): tag ``skewbench.trend_key`` (the cell across nights: dataset
    fingerprint, strategy, coordinates, seed and configuration, without the strategy's own
    parameters), ``skewbench.trend`` (``new``, ``no change`` or ``changed: <metrics>``, against
    the latest earlier child run with the same trend key under another parent run; "earlier" by
    the tag ``skewbench.logical_date``, else the start time) and ``skewbench.trend_previous_run``;
    artifact ``trend.png`` (the family's headline metrics across the nights) when there is a
    previous night.

  NaN and infinite values are skipped.  Deterministic metrics carry the run's start time as
  timestamp; timing metrics the current time (so the latest is the one shown).  Logging the
  same results again re-sends only the timing metrics when a run's latest values already match
  (see :func:`_complete`), and even a full re-send adds no history: MLflow's SQL store drops
  exact duplicates (same key, value, step and timestamp).

MLflow is imported inside the functions (it is slow to import) and its loggers are set to
WARNING.  What to log comes from the results contract (:mod:`skewbench.results`); this module
imports neither the reports nor Airflow.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

from skewbench import trend as _trend
from skewbench.errors import SkewbenchError
from skewbench.results import check_validated, json_dict, load_results, results_names, schema

EXPERIMENT_PREFIX = "skewbench-"
KEY_TAG = "skewbench.key"
PARENT_TAG = "mlflow.parentRunId"
#: MLflow 3's UI opens an experiment of this kind on its runs table and metric charts (model
#: training view) rather than on the GenAI traces view
EXPERIMENT_KIND_TAG, EXPERIMENT_KIND = "mlflow.experimentKind", "custom_model_development"
SERIES_PREFIX = "window."
CURVE_PREFIX = "curve."
STATS_PREFIX = "s."
TIME_PREFIX = "time."
PARAM_PREFIX = "p."
CONFIG_PREFIX = "c."
#: configuration entries that do not change results (not logged)
CONFIG_SKIP = ("queue_groups",)

_MAX_METRICS, _MAX_PARAMS_TAGS, _MAX_PARAM_LEN, _MAX_TAG_LEN = 1000, 100, 6000, 8000
#: the tag that dates a run (the pipeline's logical date); runs without it are dated by their start
LOGICAL_DATE_TAG = "skewbench.logical_date"
#: nights drawn in a cell's trend figure (the latest)
TREND_NIGHTS = 60


# --------------------------------------------------------------------------------------------
# configuration


def default_tracking_uri() -> str:
    """``$SKEWBENCH_TRACKING_URI``, else a SQLite store in ``<state>/mlflow/mlflow.db``
    (:mod:`skewbench.settings`)."""
    from skewbench.settings import settings

    return settings().tracking_uri


def _sqlite_path(tracking_uri: str) -> Path | None:
    if not tracking_uri.startswith("sqlite:///"):
        return None
    rest = tracking_uri[len("sqlite:///"):].split("?", 1)[0]
    if not rest or rest == ":memory:":
        return None
    return Path(unquote(rest)).resolve()


def default_artifact_location(tracking_uri: str, experiment_name: str) -> str | None:
    """Where a new experiment's artifacts go: ``artifacts/<experiment>`` beside a SQLite
    database file (a ``file://`` URI); ``None`` (the server's default) for other stores."""
    db = _sqlite_path(tracking_uri)
    if db is None:
        return None
    return (db.parent / "artifacts" / experiment_name).as_uri()


def experiment_name(family: str) -> str:
    return f"{EXPERIMENT_PREFIX}{family}"


def mlflow_run_url(tracking_ui_base: str, experiment_id: str, run_id: str) -> str:
    """The MLflow UI page of a run (e.g. for an Airflow extra link)."""
    return f"{tracking_ui_base.rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}"


def mlflow_runs_url(tracking_ui_base: str, experiment_id: str, search_filter: str = "") -> str:
    """The MLflow UI's runs table of an experiment, filtered by ``search_filter`` (MLflow's
    search syntax), in the model-training view: a new browser would otherwise open MLflow 3's
    GenAI view, whose pages do not list runs.  A filtered table is sorted by imbalance, the most
    balanced first: sorted by date (its default) the UI folds the matching runs under their
    collapsed parent."""
    from urllib.parse import urlencode

    query = {"searchFilter": search_filter, "orderByKey": "metrics.`imbalance`", "orderByAsc": "true"} \
        if search_filter else {}
    query["workflowType"] = "machine_learning"
    return f"{tracking_ui_base.rstrip('/')}/#/experiments/{experiment_id}/runs?{urlencode(query)}"


def experiment_urls(tracking_ui_base: str, tracking_uri: str | None = None) -> dict[str, str]:
    """Family -> the MLflow UI's runs table of its experiment (model-training view), for the
    families that have logged runs (what ``make ui`` prints)."""
    from skewbench.families import families

    uri = tracking_uri or default_tracking_uri()
    db = _sqlite_path(uri)
    if db is not None and not db.exists():
        return {}
    client = _client(uri)
    out = {}
    for family in families():
        exp = _experiment(client, family, uri, create=False)
        if exp is not None:
            out[family] = mlflow_runs_url(tracking_ui_base, exp.experiment_id)
    return out


def children_filter(parent_run_id: str, dataset: str | None = None) -> str:
    """MLflow search filter of a parent run's nested runs, of one dataset when given."""
    text = f"tags.`{PARENT_TAG}` = '{parent_run_id}'"
    if dataset:
        text += " and tags.`skewbench.dataset` = '" + dataset.replace("'", "\\'") + "'"
    return text


# --------------------------------------------------------------------------------------------
# MLflow helpers


def _quiet() -> None:
    for name in ("mlflow", "alembic"):
        logging.getLogger(name).setLevel(logging.WARNING)


def check_reachable(tracking_uri: str, timeout: float = 10.0) -> None:
    """For a tracking server (``http(s)://``), fail at once with one clear line when it does not
    answer its health check: MLflow's own client retries for about four minutes before giving
    up with a connection-pool traceback."""
    if not tracking_uri.startswith(("http://", "https://")):
        return
    import urllib.error
    import urllib.request

    url = tracking_uri.rstrip("/") + "/health"
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=max(1.0, deadline - time.monotonic())) as r:
                if r.status == 200:
                    return
                reason = f"HTTP {r.status}"
        except urllib.error.HTTPError as e:
            reason = f"HTTP {e.code}"
        except (urllib.error.URLError, OSError) as e:
            reason = str(getattr(e, "reason", e))
        if time.monotonic() >= deadline:
            raise SkewbenchError(f"MLflow tracking server {tracking_uri} is unreachable ({reason}); nothing was "
                                 "logged: start it (or fix SKEWBENCH_TRACKING_URI) and retry")
        time.sleep(1.0)


def _client(tracking_uri: str):
    _quiet()
    check_reachable(tracking_uri)
    from mlflow import MlflowClient

    _quiet()
    db = _sqlite_path(tracking_uri)
    if db is not None:
        db.parent.mkdir(parents=True, exist_ok=True)
    return MlflowClient(tracking_uri=tracking_uri)


def _check_key(run_key: str) -> None:
    if not run_key or "'" in run_key or "\\" in run_key:
        raise SkewbenchError(f"run key must be non-empty without quotes or backslashes: {run_key!r}")


def _experiment(client, family: str, tracking_uri: str, create: bool = True):
    """The family's experiment (restored if deleted, created if missing and ``create``)."""
    from mlflow.exceptions import MlflowException

    name = experiment_name(family)
    exp = client.get_experiment_by_name(name)
    if exp is None and create:
        try:
            client.create_experiment(name, artifact_location=default_artifact_location(tracking_uri, name),
                                     tags={"skewbench.family": family, EXPERIMENT_KIND_TAG: EXPERIMENT_KIND})
        except MlflowException:
            pass  # created concurrently: read it below
        exp = client.get_experiment_by_name(name)
        if exp is None:
            raise SkewbenchError(f"cannot create MLflow experiment {name} at {tracking_uri}")
    if exp is not None and exp.lifecycle_stage == "deleted":
        if not create:
            return None
        client.restore_experiment(exp.experiment_id)
        exp = client.get_experiment(exp.experiment_id)
    if exp is not None and create and exp.tags.get(EXPERIMENT_KIND_TAG) != EXPERIMENT_KIND:
        client.set_experiment_tag(exp.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
    return exp


def _search_all(client, experiment_id: str, filter_string: str) -> list:
    """Every active run matching the filter, oldest first."""
    from mlflow.entities import ViewType

    runs, token = [], None
    while True:
        page = client.search_runs([experiment_id], filter_string=filter_string, run_view_type=ViewType.ACTIVE_ONLY,
                                  max_results=1000, order_by=["attributes.start_time ASC"], page_token=token)
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def _find_by_key(client, experiment_id: str, key: str):
    runs = _search_all(client, experiment_id, f"tags.`{KEY_TAG}` = '{key}'")
    return runs[0] if runs else None


def _chunks(items: list, n: int) -> Iterable[list]:
    for i in range(0, len(items), n):
        yield items[i:i + n]


def _log_batch(client, run_id: str, metrics: Sequence = (), params: Sequence = (), tags: Sequence = ()) -> None:
    for chunk in _chunks(list(params), _MAX_PARAMS_TAGS):
        client.log_batch(run_id, params=chunk, synchronous=True)
    for chunk in _chunks(list(tags), _MAX_PARAMS_TAGS):
        client.log_batch(run_id, tags=chunk, synchronous=True)
    for chunk in _chunks(list(metrics), _MAX_METRICS):
        client.log_batch(run_id, metrics=chunk, synchronous=True)


_KEY_BAD = re.compile(r"[^\w\-. :/]")


def _name(key: str) -> str:
    """A valid MLflow metric/param key (alphanumerics, _ - . space : /)."""
    return _KEY_BAD.sub("_", str(key))


def _py(v: Any) -> Any:
    """numpy scalars to Python."""
    return v.item() if hasattr(v, "item") and not isinstance(v, (list, dict, str)) else v


def _param_value(v: Any) -> str:
    v = _py(v)
    text = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)
    return text[:_MAX_PARAM_LEN]


def _number(v: Any) -> float | None:
    """A finite float, else None (bools, strings, NaN and infinities are not metrics)."""
    v = _py(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _tag_value(v: Any) -> str:
    return str(_py(v))[:_MAX_TAG_LEN]


def _artifact_path(run, rel: str) -> str:
    """A local path for an artifact of ``run`` in a ``file:`` store, else its URI."""
    uri = f"{run.info.artifact_uri.rstrip('/')}/{rel}"
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return url2pathname(parsed.path)
    return uri


# --------------------------------------------------------------------------------------------
# what a cell logs


def cell_params(row: Mapping[str, Any], config: Mapping[str, Any],
                param_columns: Sequence[str]) -> dict[str, str]:
    """The params of a child run, from its summary row and the replay configuration."""
    params = {c: _param_value(row[c]) for c in param_columns if c in row}
    for k, v in sorted(json_dict(row.get("params")).items()):
        params[_name(PARAM_PREFIX + k)] = _param_value(v)
    for k, v in sorted((config or {}).items()):
        if v is not None and k not in CONFIG_SKIP:
            params[_name(CONFIG_PREFIX + k)] = _param_value(v)
    return params


def cell_metrics(row: Mapping[str, Any], numeric_columns: Sequence[str], timing_columns: Sequence[str],
                 param_columns: Sequence[str]) -> tuple[dict[str, float], dict[str, float]]:
    """(deterministic, timing) final metrics of a child run from its summary row."""
    det, timing = {}, {}
    for c in numeric_columns:
        if c in param_columns:
            continue
        v = _number(row.get(c))
        if v is None:
            continue
        if c in timing_columns:
            timing[_name(TIME_PREFIX + c)] = v
        else:
            det[_name(c)] = v
    for k, v in json_dict(row.get("stats")).items():
        f = _number(v)
        if f is not None:
            det[_name(STATS_PREFIX + k)] = f
    return det, timing


def series_metrics(rows: Iterable[Mapping[str, Any]], windowed: Sequence[str]) -> list[tuple[str, float, int]]:
    """(key, value, step) of a cell's windows: the ``windowed`` series metrics and ``stats``."""
    out = []
    for r in rows:
        step = int(r["window"])
        for c in windowed:
            v = _number(r.get(c))
            if v is not None:
                out.append((SERIES_PREFIX + c, v, step))
        for k, v in json_dict(r.get("stats")).items():
            f = _number(v)
            if f is not None:
                out.append((_name(SERIES_PREFIX + STATS_PREFIX + k), f, step))
    return out


def curve_metrics(row: Mapping[str, Any], curves: Sequence[tuple[str, str]]) -> list[tuple[str, float, int]]:
    """(key, value, step) of a summary row's curves: each entry of a list column at the step its
    steps column gives."""
    out = []
    for col, steps in curves:
        for step, v in zip(row.get(steps) or (), row.get(col) or ()):
            f = _number(v)
            if f is not None:
                out.append((_name(CURVE_PREFIX + col), f, int(step)))
    return out


def _complete(latest: Mapping[str, float], final: Mapping[str, float], steps: Sequence[tuple[str, float, int]]) -> bool:
    """Whether a run already holds these metrics: each key's latest value (MLflow's: that of
    the largest step) equals ours.  Metrics are logged in order (final ones, then the windows in
    order), so a run whose last values are all present was logged completely."""
    expected = dict(final)
    last: dict[str, tuple[int, float]] = {}
    for k, v, step in steps:
        if k not in last or step >= last[k][0]:
            last[k] = (step, v)
    expected.update({k: v for k, (_, v) in last.items()})
    return all(k in latest and latest[k] == v for k, v in expected.items())


def _cells(loaded: Sequence, run_key: str, family: str) -> list[dict[str, Any]]:
    """What each child run of these results holds (key, name, tags, params, metrics, series)."""
    import pyarrow as pa

    sch = schema(family)
    cells = []
    for _, manifest, summary, series in loaded:
        ds = manifest.get("dataset") or {}
        fp = str(ds.get("fingerprint", ""))
        config = manifest.get("config") or {}
        numeric = [f.name for f in summary.schema if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)]
        by_cell: dict[str, list[dict]] = {}
        for r in series.to_pylist():
            by_cell.setdefault(r["cell_id"], []).append(r)
        for row in summary.to_pylist():
            det, timing = cell_metrics(row, numeric, sch.timing_columns, sch.param_columns)
            cells.append({
                "key": f"{run_key}/{fp[:12]}/{row['cell_id']}",
                "name": f"{ds.get('name', '?')} {sch.cell_name(row)}", "cell": sch.cell_name(row),
                "dataset": str(ds.get("name", "")), "fingerprint": fp,
                "tags": {"skewbench.cell_id": row["cell_id"], "skewbench.dataset": str(ds.get("name", "")),
                         "skewbench.dataset_fingerprint": fp, "skewbench.strategy": str(row["strategy"])},
                "params": cell_params(row, config, sch.param_columns), "final": det, "timing": timing,
                "steps": series_metrics(by_cell.get(row["cell_id"], []), sch.windowed)
                + curve_metrics(row, sch.curves)})
    keys = [c["key"] for c in cells]
    if len(set(keys)) != len(keys):
        dup = sorted({k for k in keys if keys.count(k) > 1})
        raise SkewbenchError(f"log_run: the same dataset and cell appear twice (e.g. {dup[0]}): "
                             "log results of other configurations under another run key")
    for c, key in zip(cells, _trend.trend_keys(family, [c["params"] for c in cells])):
        c["trend_key"] = key
        c["tags"][_trend.KEY_TAG] = key
    return cells


def _night(tags: Mapping[str, str], start_ms: int | None) -> tuple[float, str]:
    """When a run's night was, (timestamp, label): its logical date tag, else its start time
    (else now)."""
    from datetime import datetime, timezone

    text = tags.get(LOGICAL_DATE_TAG)
    if text:
        try:
            dt = datetime.fromisoformat(str(text))
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=timezone.utc)
            return dt.timestamp(), str(text)[:16].replace("T", " ")
        except ValueError:
            pass
    ts = (start_ms if start_ms is not None else time.time() * 1000) / 1000
    return ts, datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M")


def _verdicts(client, experiment_id: str, cells: Sequence[dict], parent, tags: Mapping[str, str],
              family: str) -> tuple[list[dict[str, Any]], dict[str, list[tuple[tuple[float, str], Any]]]]:
    """Each cell against the latest earlier child run with its trend key under another parent
    run; also each trend key's earlier nights ((night, run), oldest first) for the figures."""
    parent_id = parent.info.run_id if parent is not None else None
    when = _night(tags, parent.info.start_time if parent is not None else None)
    keys = {c["trend_key"] for c in cells}
    history: dict[str, list[tuple[tuple[float, str], Any]]] = {}
    for fp in sorted({c["fingerprint"] for c in cells}):
        if not fp or "'" in fp or "\\" in fp:
            continue
        for r in _search_all(client, experiment_id, f"tags.`skewbench.dataset_fingerprint` = '{fp}'"):
            t = r.data.tags
            if (t.get(_trend.KEY_TAG) in keys and t.get(PARENT_TAG) not in (None, parent_id)
                    and r.info.status == "FINISHED"):
                night = _night(t, r.info.start_time)
                if night[0] <= when[0]:
                    history.setdefault(t[_trend.KEY_TAG], []).append((night, r))
    for runs in history.values():
        runs.sort(key=lambda nr: (nr[0][0], nr[1].info.start_time))
    tol = _trend.tolerances(schema(family).table_metrics("summary"))
    out = []
    for c in cells:
        earlier = history.get(c["trend_key"], [])
        prev = earlier[-1][1] if earlier else None
        v = _trend.compare(None if prev is None else {"metrics": prev.data.metrics, "params": prev.data.params},
                           {"metrics": c["final"], "params": c["params"]}, tol)
        out.append({"key": c["key"], "dataset": c["dataset"], "cell": c["cell"],
                    "cell_id": c["tags"]["skewbench.cell_id"], "strategy": c["tags"]["skewbench.strategy"],
                    "trend_key": c["trend_key"], "night": when[1], "run_id": None,
                    "previous_run": prev.info.run_id if prev is not None else None, **v.as_dict()})
    return out, history


def _trend_figure(cell: Mapping[str, Any], verdict: Mapping[str, Any], earlier: Sequence, family: str,
                  out_dir: Path) -> Path | None:
    """A cell's headline metrics over its earlier nights and this one (None: no earlier night)."""
    if not earlier:
        return None
    sch = schema(family)
    metrics = [(m.name, m.label or m.name) for m in sch.headline if not m.timing]
    nights = [(night[1], dict(r.data.metrics)) for night, r in earlier[-(TREND_NIGHTS - 1):]]
    nights.append((verdict["night"], dict(cell["final"])))
    return _trend.figure(nights, metrics, out_dir / "trend.png",
                         f"{cell['name']}: {verdict['text']}"[:120])


def _load_one_family(results_dirs: Sequence[str | os.PathLike], run_key: str, caller: str,
                     validated: bool = False) -> tuple[list, str]:
    """The results directories, loaded, and their one family (an error for a bad key or mixed families;
    with ``validated``, also for results without a passed validation of their present content)."""
    _check_key(run_key)
    if validated:
        for d in [results_dirs] if isinstance(results_dirs, (str, os.PathLike)) else results_dirs:
            check_validated(d, caller)
    loaded = load_results(results_dirs)
    families = sorted({str(m.get("family")) for _, m, _, _ in loaded})
    if len(families) != 1:
        raise SkewbenchError(f"{caller}: one family per call (one experiment), got {families}")
    return loaded, families[0]


# --------------------------------------------------------------------------------------------
# public API


def find_parent(tracking_uri: str, family: str, run_key: str) -> tuple[str, str] | None:
    """(experiment id, run id) of the parent run tagged ``skewbench.key = run_key`` in the
    family's experiment, or None.  Creates nothing (a missing SQLite file is "no run")."""
    _check_key(run_key)
    db = _sqlite_path(tracking_uri)
    if db is not None and not db.exists():
        return None
    client = _client(tracking_uri)
    exp = _experiment(client, family, tracking_uri, create=False)
    if exp is None:
        return None
    run = _find_by_key(client, exp.experiment_id, run_key)
    return (exp.experiment_id, run.info.run_id) if run is not None else None


def find_run(tracking_uri: str, family: str, run_key: str) -> str | None:
    """The id of the parent run tagged ``skewbench.key = run_key`` in the family's experiment."""
    found = find_parent(tracking_uri, family, run_key)
    return found[1] if found is not None else None


def log_run(results_dirs: Sequence[str | os.PathLike], *, tracking_uri: str, run_key: str, run_name: str,
            tags: Mapping[str, str], names: Sequence[str] | None = None,
            report: str | os.PathLike | Callable[[list[dict[str, Any]]], str | os.PathLike] | None = None,
            plots_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """Log one pipeline run's results directories (one family) to MLflow, idempotently.

    Only results that passed their validation are logged: each directory needs the record
    :func:`skewbench.validation.results.validate_results` leaves in it, passed and for its present
    content (:func:`skewbench.results.check_validated`); otherwise :class:`SkewbenchError` before
    anything is written to MLflow.

    ``names`` name each results directory's artifacts (default:
    :func:`skewbench.results.results_names`); ``report`` is a rendered HTML report logged as ``report.html``,
    or a function that renders it given the cells' trend verdicts (so that the report shows the
    same verdicts that are tagged, computed once);
    ``plots_dir/<name>/*.png`` are logged as ``plots/<name>/``.  Returns ``{"experiment_id",
    "parent_run_id", "children": {key: run_id}, "report": path}``; ``report`` is the local path of
    ``report.html`` in a ``file:`` artifact store, else its URI (None when none was given);
    ``trend`` is each cell's verdict against the previous night (:func:`trend`).
    """
    from mlflow.entities import Metric, Param, RunStatus, RunTag

    loaded, family = _load_one_family(results_dirs, run_key, "log_run", validated=True)
    names = list(names) if names is not None else results_names([m for _, m, _, _ in loaded])
    if len(names) != len(loaded) or len(set(names)) != len(names):
        raise SkewbenchError("log_run: one unique name per results directory")
    fingerprints = [str((m.get("dataset") or {}).get("fingerprint", "")) for _, m, _, _ in loaded]
    cells = _cells(loaded, run_key, family)

    client = _client(tracking_uri)
    exp = _experiment(client, family, tracking_uri)
    eid = exp.experiment_id
    parent = _find_by_key(client, eid, run_key)
    existing: dict[str, Any] = {}
    if parent is not None:
        for r in _search_all(client, eid, f"tags.`{PARENT_TAG}` = '{parent.info.run_id}'"):
            existing.setdefault(r.data.tags.get(KEY_TAG), r)  # oldest first
        for c in cells:
            run = existing.get(c["key"])
            have = dict(run.data.params) if run is not None else {}
            clash = {k: (have[k], v) for k, v in c["params"].items() if k in have and have[k] != v}
            if clash:
                raise SkewbenchError(
                    f"MLflow run {run.info.run_id} ({c['key']}) already has other values of params "
                    f"{clash} (existing, new): run key {run_key!r} was used for other results; use a new run key")
    # each cell against the previous night, before anything is written
    verdicts, history = _verdicts(client, eid, cells, parent, tags or {}, family)

    parent_tags = {str(k): _tag_value(v) for k, v in (tags or {}).items()}
    parent_tags.update({KEY_TAG: run_key, "skewbench.family": family,
                        "skewbench.dataset_fingerprints": ",".join(fingerprints),
                        "skewbench.datasets": ",".join(names)})
    if parent is None:
        parent = client.create_run(eid, tags=parent_tags, run_name=run_name)
    else:
        client.update_run(parent.info.run_id, status="RUNNING", name=run_name)
        _log_batch(client, parent.info.run_id, tags=[RunTag(k, v) for k, v in parent_tags.items()])
    pid = parent.info.run_id

    tmp_dir = tempfile.TemporaryDirectory(prefix="skewbench-trend-")
    try:
        children: dict[str, str] = {}
        for c, verdict in zip(cells, verdicts):
            key = c["key"]
            child_tags = {str(k): _tag_value(v) for k, v in (tags or {}).items()}
            child_tags.update({PARENT_TAG: pid, KEY_TAG: key, "skewbench.family": family, **c["tags"],
                               _trend.VERDICT_TAG: verdict["text"][:_MAX_TAG_LEN],
                               _trend.PREVIOUS_TAG: verdict["previous_run"] or ""})
            run = existing.get(key)
            created = run is None
            if created:
                run = client.create_run(eid, tags=child_tags, run_name=c["name"])
            rid = run.info.run_id
            have = dict(run.data.params)
            new_params = [Param(k, v) for k, v in c["params"].items() if k not in have]
            ts, now = int(run.info.start_time), int(time.time() * 1000)
            metrics = [Metric(k, v, now, 0) for k, v in c["timing"].items()]
            if created or not _complete(run.data.metrics, c["final"], c["steps"]):
                metrics += [Metric(k, v, ts, 0) for k, v in c["final"].items()]
                metrics += [Metric(k, v, ts, step) for k, v, step in c["steps"]]
            tag_list = [] if created else [RunTag(k, v) for k, v in child_tags.items()]
            _log_batch(client, rid, metrics=metrics, params=new_params, tags=tag_list)
            fig = _trend_figure(c, verdict, history.get(c["trend_key"], []), family,
                                Path(tmp_dir.name) / str(len(children)))
            if fig is not None:
                client.log_artifact(rid, str(fig))
            client.set_terminated(rid, RunStatus.to_string(RunStatus.FINISHED))
            children[key] = rid
            verdict["run_id"] = rid

        if callable(report):  # it draws the figures into plots_dir too
            report = report(verdicts)
        for (path, _, _, _), name in zip(loaded, names):
            for f in ("summary.parquet", "series.parquet", "_manifest.json"):
                client.log_artifact(pid, str(path / f), f"results/{name}")
            plots = Path(plots_dir) / name if plots_dir is not None else None
            if plots is not None and plots.is_dir() and any(plots.iterdir()):
                client.log_artifacts(pid, str(plots), f"plots/{name}")
        if report is not None:
            client.log_artifact(pid, str(report))
        client.set_terminated(pid, RunStatus.to_string(RunStatus.FINISHED))
    except BaseException:
        try:
            client.set_terminated(pid, RunStatus.to_string(RunStatus.FAILED))
        except Exception:  # noqa: BLE001 - keep the original error
            pass
        raise
    finally:
        tmp_dir.cleanup()
    return {"experiment_id": eid, "parent_run_id": pid, "children": children, "trend": verdicts,
            "report": _artifact_path(client.get_run(pid), Path(report).name) if report is not None else None}


def trend(results_dirs: Sequence[str | os.PathLike], *, tracking_uri: str, run_key: str,
          tags: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Each cell of these results (one family) against the previous night, without writing
    anything: what :func:`log_run` will tag (``tags`` as given to it: the logical date dates the
    night).  One dict per cell: ``key``, ``dataset``, ``cell`` (its name), ``cell_id``,
    ``strategy``, ``trend_key``, ``night``, ``previous_run`` (a run id or None), ``status`` (``new``,
    ``no change``, ``changed``), ``text`` (the tag), ``metrics`` and ``params`` ([name, previous,
    current] of what changed)."""
    loaded, family = _load_one_family(results_dirs, run_key, "trend")
    cells = _cells(loaded, run_key, family)
    db = _sqlite_path(tracking_uri)
    client = _client(tracking_uri) if db is None or db.exists() else None
    exp = _experiment(client, family, tracking_uri, create=False) if client is not None else None
    if exp is None:
        return [{**v, "night": _night(tags or {}, None)[1]} for v in _verdicts_new(cells)]
    parent = _find_by_key(client, exp.experiment_id, run_key)
    return _verdicts(client, exp.experiment_id, cells, parent, tags or {}, family)[0]


def _verdicts_new(cells: Sequence[dict]) -> list[dict[str, Any]]:
    return [{"key": c["key"], "dataset": c["dataset"], "cell": c["cell"], "cell_id": c["tags"]["skewbench.cell_id"],
             "strategy": c["tags"]["skewbench.strategy"], "trend_key": c["trend_key"], "run_id": None,
             "previous_run": None, **_trend.compare(None, {}).as_dict()} for c in cells]


def open_parent(tracking_uri: str, family: str, run_key: str, run_name: str,
                tags: Mapping[str, str]) -> tuple[str, str]:
    """Find or create a pipeline run's parent run before its results exist (status RUNNING).

    The pipeline opens it before replaying so that links (the Airflow "MLflow run" extra link)
    have a run to point at; :func:`log_run` later fills in the same run (found by ``run_key``).
    """
    _check_key(run_key)
    from mlflow.entities import RunTag

    client = _client(tracking_uri)
    eid = _experiment(client, family, tracking_uri).experiment_id
    parent = _find_by_key(client, eid, run_key)
    all_tags = {**{str(k): _tag_value(v) for k, v in tags.items()}, KEY_TAG: run_key, "skewbench.family": family}
    if parent is None:
        parent = client.create_run(eid, tags=all_tags, run_name=run_name)
    else:
        client.update_run(parent.info.run_id, status="RUNNING", name=run_name)
        _log_batch(client, parent.info.run_id, tags=[RunTag(k, v) for k, v in all_tags.items()])
    return eid, parent.info.run_id


def fail_stale_parents(tracking_uri: str, family: str, key_prefix: str, current_key: str, reason: str) -> list[str]:
    """Mark FAILED every parent run of ``family`` whose key starts with ``key_prefix`` and that is
    still RUNNING, but ``current_key``'s: a pipeline that runs one run at a time calls it as a run
    starts, so a run that ended without closing its parent (failed or marked failed from outside
    while a task was running) does not leave that parent RUNNING for ever.  Returns their ids."""
    _check_key(current_key)
    from mlflow.entities import RunTag

    client = _client(tracking_uri)
    exp = _experiment(client, family, tracking_uri, create=False)
    if exp is None:
        return []
    prefix = key_prefix.replace("'", "")
    stale = [r for r in _search_all(client, exp.experiment_id,
                                    f"tags.`{KEY_TAG}` LIKE '{prefix}%' and attributes.status = 'RUNNING'")
             if r.data.tags.get(KEY_TAG) != current_key]
    for r in stale:
        _log_batch(client, r.info.run_id, tags=[RunTag("skewbench.failure", reason[:4000])])
        client.set_terminated(r.info.run_id, status="FAILED")
    return [r.info.run_id for r in stale]


def fail_parent(tracking_uri: str, family: str, run_key: str, reason: str) -> str | None:
    """Mark a pipeline run's parent run FAILED (e.g. its results did not validate); no results
    are logged under it as good ones."""
    found = find_parent(tracking_uri, family, run_key)
    if found is None:
        return None
    from mlflow.entities import RunTag

    client = _client(tracking_uri)
    _log_batch(client, found[1], tags=[RunTag("skewbench.failure", reason[:4000])])
    client.set_terminated(found[1], status="FAILED")
    return found[1]


def annotate_parent(tracking_uri: str, family: str, run_key: str | None = None, *, run_id: str | None = None,
                    artifacts: Sequence[str | os.PathLike] = (), tags: Mapping[str, str] | None = None) -> str | None:
    """Add files (at the artifacts' root) and tags to a pipeline run's parent run, found by
    ``run_key`` in the family's experiment or given as ``run_id``; its status is left as it is
    (e.g. the run's overview and picks, added after every family has logged).  Returns the run
    id, None when there is no such run."""
    if run_id is None:
        if run_key is None:
            raise SkewbenchError("annotate_parent: give a run key or a run id")
        run_id = find_run(tracking_uri, family, run_key)
        if run_id is None:
            return None
    from mlflow.entities import RunTag

    client = _client(tracking_uri)
    if tags:
        _log_batch(client, run_id, tags=[RunTag(_name(k), _tag_value(v)) for k, v in tags.items()])
    for path in artifacts:
        client.log_artifact(run_id, str(path))
    return run_id


#: the parent run's tag naming its overview artifact (set when the run's overview is logged)
OVERVIEW_TAG = "skewbench.overview"


def overview_url(tracking_ui_base: str, experiment_id: str, run_id: str, artifact: str = "overview.html") -> str:
    """The MLflow UI page showing a run's HTML artifact (the run's artifacts tab, the file open), in
    the model-training view like :func:`mlflow_runs_url`'s links: a browser that never opened MLflow
    would otherwise get MLflow 3's GenAI view, its assistant panel over a quarter of the page."""
    from urllib.parse import urlencode

    query = urlencode({"workflowType": "machine_learning"})
    return f"{mlflow_run_url(tracking_ui_base, experiment_id, run_id)}/artifactPath/{artifact}?{query}"


def find_overview(tracking_ui_base: str, tracking_uri: str | None = None, run_keys: Mapping[str, str] | None = None
                  ) -> str | None:
    """The MLflow UI URL of a night's overview: of the first of the parent runs ``run_keys``
    (family -> run key) that carries one, else of the newest parent run of any family that does
    (what ``make ui`` prints); None when no such run has logged its overview."""
    from skewbench.families import families

    uri = tracking_uri or default_tracking_uri()
    db = _sqlite_path(uri)
    if db is not None and not db.exists():
        return None
    client = _client(uri)
    best = None
    for family in (run_keys or families()):
        exp = _experiment(client, family, uri, create=False)
        if exp is None:
            continue
        flt = f"tags.`{OVERVIEW_TAG}` != ''"
        if run_keys:
            _check_key(run_keys[family])
            flt += f" and tags.`{KEY_TAG}` = '{run_keys[family]}'"
        runs = client.search_runs([exp.experiment_id], filter_string=flt, max_results=1,
                                  order_by=["attributes.start_time DESC"])
        if runs and run_keys:  # one night: its first family's parent
            best = runs[0]
            break
        if runs and (best is None or runs[0].info.start_time > best.info.start_time):
            best = runs[0]
    if best is None:
        return None
    return overview_url(tracking_ui_base, best.info.experiment_id, best.info.run_id, best.data.tags[OVERVIEW_TAG])


# --------------------------------------------------------------------------------------------
# runs of other shapes (the live mode's measurements; the site reads them): the same store,
# experiment layout and keys, with params, metrics and tags given by the caller


def client(tracking_uri: str):
    """An :class:`mlflow.MlflowClient` on ``tracking_uri``: a tracking server is checked first
    (one line when it does not answer), a SQLite store's directory is created."""
    return _client(tracking_uri)


def sqlite_path(tracking_uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` tracking URI (None for other stores)."""
    return _sqlite_path(tracking_uri)


def search_all(mlflow_client, experiment_id: str, filter_string: str) -> list:
    """Every active run of the experiment matching the MLflow search filter, oldest first."""
    return _search_all(mlflow_client, experiment_id, filter_string)


def night_of(tags: Mapping[str, str], start_ms: int | None) -> tuple[float, str]:
    """When a run's night was, ``(timestamp, label)``: its logical date tag, else its start time."""
    return _night(tags, start_ms)


def experiment_id(tracking_uri: str, family: str, create: bool = False) -> str | None:
    """The id of the experiment ``skewbench-<family>`` (None when it does not exist and not
    ``create``; a missing SQLite file is "no experiment" and is not created)."""
    db = _sqlite_path(tracking_uri)
    if db is not None and not db.exists() and not create:
        return None
    exp = _experiment(_client(tracking_uri), family, tracking_uri, create=create)
    return exp.experiment_id if exp is not None else None


def search_runs(tracking_uri: str, family: str, filter_string: str = "") -> list:
    """Every active run of the experiment ``skewbench-<family>`` matching the filter, oldest
    first; [] when there is no such experiment (nothing is created)."""
    eid = experiment_id(tracking_uri, family)
    return [] if eid is None else _search_all(_client(tracking_uri), eid, filter_string)


def keyed_child(tracking_uri: str, family: str, parent_run_id: str, key: str, name: str,
                tags: Mapping[str, str] | None = None) -> tuple[str, bool]:
    """The nested run of ``parent_run_id`` tagged ``skewbench.key = key`` (the oldest when
    several), created RUNNING with ``tags`` when missing; ``(run id, created)``.  A run found
    again is set RUNNING and given ``tags``, so that a retry updates the same run."""
    _check_key(key)
    from mlflow.entities import RunTag

    c = _client(tracking_uri)
    eid = _experiment(c, family, tracking_uri).experiment_id
    found = _search_all(c, eid, f"tags.`{PARENT_TAG}` = '{parent_run_id}' and tags.`{KEY_TAG}` = '{key}'")
    all_tags = {**{_name(k): _tag_value(v) for k, v in (tags or {}).items()}, PARENT_TAG: parent_run_id,
                KEY_TAG: key, "skewbench.family": family}
    if not found:
        return c.create_run(eid, tags=all_tags, run_name=name).info.run_id, True
    rid = found[0].info.run_id
    c.update_run(rid, status="RUNNING", name=name)
    _log_batch(c, rid, tags=[RunTag(k, v) for k, v in all_tags.items()])
    return rid, False


def update_run(tracking_uri: str, run_id: str, *, params: Mapping[str, Any] | None = None,
               metrics: Mapping[str, Any] | None = None, tags: Mapping[str, Any] | None = None) -> None:
    """Log to a run: the params it does not hold yet (a different value already there raises
    :class:`SkewbenchError` before anything is written: MLflow never changes a param), the
    finite numeric metrics (step 0, timestamped now: the latest value is the one shown) and the
    tags (replaced)."""
    from mlflow.entities import Metric, Param, RunTag

    c = _client(tracking_uri)
    have = dict(c.get_run(run_id).data.params)
    new = {_name(k): _param_value(v) for k, v in (params or {}).items()}
    clash = {k: (have[k], v) for k, v in new.items() if k in have and have[k] != v}
    if clash:
        raise SkewbenchError(f"MLflow run {run_id} already has other values of params {clash} (existing, new): "
                             "its key was used for another configuration; use a new run key")
    now = int(time.time() * 1000)
    numbers = {_name(k): _number(v) for k, v in (metrics or {}).items()}
    _log_batch(c, run_id, params=[Param(k, v) for k, v in new.items() if k not in have],
               metrics=[Metric(k, v, now, 0) for k, v in numbers.items() if v is not None],
               tags=[RunTag(_name(k), _tag_value(v)) for k, v in (tags or {}).items()])


def end_run(tracking_uri: str, run_id: str, status: str = "FINISHED", reason: str | None = None) -> None:
    """End a run with ``status`` (``FINISHED`` or ``FAILED``); a reason goes to its tag
    ``skewbench.failure``."""
    from mlflow.entities import RunTag

    c = _client(tracking_uri)
    if reason:
        _log_batch(c, run_id, tags=[RunTag("skewbench.failure", reason[:4000])])
    c.set_terminated(run_id, status=status)


def log_files(tracking_uri: str, run_id: str, paths: Sequence[str | os.PathLike], artifact_path: str | None = None
              ) -> None:
    """Log files as artifacts of a run (under ``artifact_path`` when given)."""
    c = _client(tracking_uri)
    for path in paths:
        c.log_artifact(run_id, str(path), artifact_path)
