"""The nightly pipeline's steps, as plain functions the Airflow DAGs call (no Airflow here).

Parameters (the DAG's Params, checked again here before any Spark job starts).  Common fields:

``datasets``
    catalog names; empty means the catalog set ``catalog_set``.
``catalog_set``
    ``default`` (small, minutes) or ``paper`` (the papers' sizes).
``families``
    strategy families to run (:func:`skewbench.families.families`).
``seeds``
    hash seeds per grid cell.
``fail_on_change``
    fail the run's ``check_trend`` step when any cell changed against the previous night
    (:mod:`skewbench.trend`; default False: changes are only reported).

and one section per family, fields named ``<family>_<name>``: ``<family>_strategies`` (empty:
the family's defaults) and the fields of the family's ``params.PARAMS``, validated by their JSON schema and the family's ``params.check``.

Locations come from :mod:`skewbench.settings` (``SKEWBENCH_STATE``, ``SKEWBENCH_DATA_ROOT``,
``SKEWBENCH_RUNS_ROOT`` = ``<logical date>/<run id>/<dataset>/<family>``,
``SKEWBENCH_TRACKING_URI``, ``SKEWBENCH_MLFLOW_UI``).

This module imports only light modules at import time: the DAGs read it at parse time.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from skewbench import families as _families
from skewbench.errors import SkewbenchError

SETS = ("default", "paper")
#: the asset the datasets DAG publishes and the nightly DAG is scheduled on
CATALOG_ASSET_URI = "skewbench://datasets/catalog"
#: the spark-submit entry point of every family's replay (its first argument names the family)
REPLAY_JOB = "replay.py"
COMMON = ("datasets", "catalog_set", "families", "seeds", "fail_on_change")
_NOT_SCHEMA = ("default", "description", "section")


def data_root() -> Path:
    from skewbench.settings import settings

    return settings().data_root


def runs_root() -> Path:
    from skewbench.settings import settings

    return settings().runs_root


def replay_job() -> Path:
    from skewbench.settings import settings

    return settings().spark_jobs / REPLAY_JOB


def section_field(family: str, name: str) -> str:
    """The Param name of a family's field: ``<family>_<name>``."""
    return f"{family}_{name}"


def _family_fields(family: str) -> dict[str, dict[str, Any]]:
    """A family's section: its strategies, then its params module's fields (name -> schema)."""
    from skewbench import registry

    fam = _families.get(family)
    names = registry.names(family)
    fields = {"strategies": {"type": "array", "items": {"type": "string", "enum": names}, "uniqueItems": True,
                             "default": [], "description": f"{family} strategies; empty = the family's defaults "
                                                           f"({', '.join(fam.default_strategies)})."}}
    for name, sch in fam.attr("params", "PARAMS", {}).items():
        if name in fields or name in COMMON:
            raise SkewbenchError(f"family '{family}': Param '{name}' clashes with a common field")
        fields[name] = dict(sch)
    return fields


def params_schema() -> dict[str, dict[str, Any]]:
    """JSON schema of every Param, with its default and its form section (``section``)."""
    fams = list(_families.families())
    out: dict[str, dict[str, Any]] = {
        "datasets": {"type": "array", "items": {"type": "string", "minLength": 1}, "default": [],
                     "description": "Catalog dataset names; empty = every entry of catalog_set.",
                     "section": "Datasets"},
        "catalog_set": {"type": "string", "enum": list(SETS), "default": "default", "section": "Datasets",
                        "description": "Scale: the catalog's default (small) or paper (papers' sizes) set."},
        "families": {"type": "array", "items": {"type": "string", "enum": fams}, "minItems": 1,
                     "uniqueItems": True, "default": list(_families.BUILTIN),
                     "description": "Strategy families to run (default: the built-in ones).", "section": "Families"},
        "seeds": {"type": "integer", "minimum": 1, "maximum": 100, "default": 1, "section": "Families",
                  "description": "Hash seeds per grid cell."},
        "fail_on_change": {"type": "boolean", "default": False, "section": "Trend",
                           "description": "Fail the check_trend task when any cell's results changed against the "
                                          "previous night's same cell (same dataset, strategy, coordinates and "
                                          "configuration; timings excluded); off: changes are only reported."},
    }
    for fam in fams:
        for name, sch in _family_fields(fam).items():
            out[section_field(fam, name)] = {**sch, "section": f"{fam} family"}
    return out


_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def allowed_range(sch: dict[str, Any]) -> str:
    """A number schema's bounds in words ("1 to 100", "above 0", ...); "" when unbounded."""
    def num(v: float) -> str:
        return f"{int(v):,}" if float(v).is_integer() else f"{v:g}"

    lo = (num(sch["minimum"]), False) if "minimum" in sch else \
        ((num(sch["exclusiveMinimum"]), True) if "exclusiveMinimum" in sch else None)
    hi = (num(sch["maximum"]), False) if "maximum" in sch else \
        ((num(sch["exclusiveMaximum"]), True) if "exclusiveMaximum" in sch else None)
    if lo and hi and not lo[1] and not hi[1]:
        return f"{lo[0]} to {hi[0]}"
    parts = ([f"above {lo[0]}" if lo[1] else f"at least {lo[0]}"] if lo else []) + \
        ([f"below {hi[0]}" if hi[1] else f"at most {hi[0]}"] if hi else [])
    return " and ".join(parts)


def form_params() -> dict[str, dict[str, Any]]:
    """The Params of the trigger form: :func:`params_schema` without the bounds of numbers (the
    form's number inputs clamp an out-of-range entry to the nearest bound without a word: seeds
    0 became 1, 500 became 100; the bounds go into the description) and without the rules on
    list items (the form refused a list that broke them, e.g. an empty worker list or an unknown
    strategy typed in its JSON editor, with no message at all): :func:`check_params` refuses
    all these with a sentence.  Lists of choices are multi-selects (``examples``)."""
    out = {}
    for name, spec in params_schema().items():
        spec = dict(spec)
        nums = spec if spec.get("type") in ("integer", "number") or spec.get("type") == ["number", "null"] else None
        if spec.get("type") == "array" and isinstance(spec.get("items"), dict):
            items = dict(spec["items"])
            if "enum" in items:
                spec["examples"] = list(items["enum"])
            elif items.get("type") in ("integer", "number"):
                nums = items
            spec["items"] = {"type": items["type"]} if "type" in items else {}
            spec.pop("minItems", None)
            spec.pop("uniqueItems", None)
        if nums is not None:
            words = allowed_range(nums)
            if words:
                spec["description"] = f"{spec.get('description', '').rstrip('.')} (allowed: {words})."
            for k in _BOUNDS:
                spec.pop(k, None)
        out[name] = spec
    return out


def _param_error(name: str, e: Any) -> str:
    """A JSON-schema error on one parameter as one sentence a person can act on."""
    where = f" item {e.path[0] + 1}" if e.path and isinstance(e.path[0], int) else ""
    if e.validator in _BOUNDS:
        return (f"parameter '{name}'{where}: {e.instance!r} is out of range; allowed: "
                f"{allowed_range(e.schema)}")
    if e.validator == "enum":
        return f"parameter '{name}'{where}: {e.instance!r} is not one of {', '.join(map(str, e.validator_value))}"
    return f"parameter '{name}'{where}: {e.message}"


def check_params(params: dict[str, Any]) -> dict[str, Any]:
    """Validate the run's parameters (again, after the trigger form) and resolve defaults.

    Raises :class:`SkewbenchError` with one clear line; returns the resolved configuration:
    the common fields, ``sections`` (family -> its fields without the prefix, strategies
    resolved) and ``strategies_by_family``.
    """
    import jsonschema

    schema = params_schema()
    unknown = set(params) - set(schema)
    if unknown:
        raise SkewbenchError(f"unknown parameter(s) {sorted(unknown)}; known: {sorted(schema)}")
    values = {k: params.get(k, v["default"]) for k, v in schema.items()}
    for name, sch in schema.items():
        try:
            jsonschema.validate(values[name], {k: v for k, v in sch.items() if k not in _NOT_SCHEMA})
        except jsonschema.ValidationError as e:
            raise SkewbenchError(_param_error(name, e)) from None
    conf = {k: values[k] for k in COMMON}
    from skewbench.datasets.catalog import load_catalog

    cat = load_catalog()
    entries = cat.select(conf["datasets"] or None, None if conf["datasets"] else conf["catalog_set"])
    conf["datasets"] = [e.name for e in entries if e.available]
    conf["skipped_datasets"] = [e.name for e in entries if not e.available]
    if not conf["datasets"]:
        raise SkewbenchError("no dataset to run: every selected dataset's input is absent")
    sections: dict[str, dict[str, Any]] = {}
    for fam in conf["families"]:
        family = _families.get(fam)
        section = {name: values[section_field(fam, name)] for name in _family_fields(fam)}
        section["strategies"] = list(section["strategies"]) or list(family.default_strategies)
        try:
            family.attr("params", "check", lambda s: None)(section)
        except SkewbenchError as e:
            raise SkewbenchError(f"{fam} parameters: {e}") from None
        sections[fam] = section
    stray = [section_field(f, "strategies") for f in _families.families() if f not in conf["families"]
             and params.get(section_field(f, "strategies"))]
    if stray:
        raise SkewbenchError(f"strategies are given for {', '.join(stray)}, a family that is not selected in "
                             f"'families' {conf['families']}")
    conf["sections"] = sections
    conf["strategies_by_family"] = {f: s["strategies"] for f, s in sections.items()}
    return conf


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "run"


def run_dir(logical_date: str, run_id: str) -> Path:
    """``<runs root>/<logical date>/<run id>``: a run's outputs, never shared with another run."""
    return runs_root() / _safe(str(logical_date)[:10]) / _safe(run_id)


def prune_runs(current: str | os.PathLike, keep: int | None = None) -> list[str]:
    """The retention policy of the runs root: keep the ``keep`` newest run directories
    (``SKEWBENCH_KEEP_RUNS``, by last change; ``current``, this run's, always) and delete the
    others, then empty date directories.  What a run logged stays in MLflow (its results,
    report and plots are artifacts there).  Returns the deleted directories."""
    import shutil

    from skewbench.settings import settings

    keep = settings().keep_runs if keep is None else keep
    if keep < 1:
        raise SkewbenchError(f"keep_runs must be >= 1, got {keep}")
    root = runs_root()
    current_dir = Path(current).resolve()
    runs = [r for d in root.iterdir() if d.is_dir() for r in d.iterdir() if r.is_dir()] if root.is_dir() else []
    runs.sort(key=lambda r: (r.resolve() == current_dir, r.stat().st_mtime, str(r)), reverse=True)
    deleted = []
    for r in runs[keep:]:  # the current run sorts first
        shutil.rmtree(r)
        deleted.append(str(r))
    for d in root.iterdir() if root.is_dir() else ():
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()
    return deleted


def prepare_dataset(name: str) -> dict[str, Any]:
    """Materialise one catalog dataset (kept when up to date) and validate it; fails on error."""
    from skewbench.datasets.catalog import load_catalog
    from skewbench.datasets.contract import open_dataset
    from skewbench.materialize import materialize
    from skewbench.errors import ValidationFailed

    entry = load_catalog().select([name])[0]
    engine = "spark" if entry.spec is not None and entry.spec.tuples > 5_000_000 else "local"
    status = materialize(entry, data_root(), engine=engine, validate=True)
    if status["validation"] == "failed":
        raise ValidationFailed(status["detail"])
    meta = open_dataset(status["path"]).meta
    return {"name": name, "path": status["path"], "status": status["status"], "fingerprint": meta["fingerprint"],
            "tuples": meta["tuples"], "params": meta.get("catalog_params") or meta.get("params"),
            "families": entry.families}


def replay_args(family: str, section: dict[str, Any], dataset: str, out: str, seeds: int) -> list[str]:
    """Arguments of ``spark_jobs/replay.py`` (also ``skewbench replay``) for one replay."""
    fam = _families.get(family)
    args = [family, "--dataset", dataset, "--out", out, "--overwrite",
            "--strategies", ",".join(section["strategies"]), "--seeds", str(seeds)]
    return [*args, *fam.attr("params", "job_args", lambda s: [])(section)]


def plan_replays(conf: dict[str, Any], datasets: list[dict[str, Any]], out_root: str,
                 family: str | None = None) -> list[dict[str, Any]]:
    """One replay per (dataset, family), or per dataset of ``family``: where it writes and the
    arguments of its Spark job.  A dataset whose catalog entry lists ``families`` is replayed by
    those families only; an entry without ``families`` by every family except those that replay
    listed entries only (``LISTED_ONLY`` in the family's package: their datasets are not streams)."""
    plan = []
    fams = [f for f in conf["families"] if family is None or f == family]
    # a family whose package sets LISTED_ONLY replays only the entries that name it (its datasets
    # are not streams, e.g. job graphs)
    listed_only = {f for f in fams if getattr(_families.get(f).module(), "LISTED_ONLY", False)}
    for ds in sorted(datasets, key=lambda d: d["name"]):
        for fam in fams:
            if ds.get("families") and fam not in ds["families"]:
                continue
            if not ds.get("families") and fam in listed_only:
                continue
            out = str(Path(out_root) / _safe(ds["name"]) / fam)
            plan.append({
                "dataset": ds["name"], "dataset_path": ds["path"], "fingerprint": ds["fingerprint"], "family": fam,
                "out": out, "application": str(replay_job()),
                "application_args": replay_args(fam, conf["sections"][fam], ds["path"], out, conf["seeds"]),
            })
    return plan


#: spark_jobs/replay.py's option for several replays of one family in one Spark application
REPLAYS_OPTION = "--replays"


def replay_jobs(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One Spark job per family for ``items`` (:func:`plan_replays`): the family's replays run one
    after another in one Spark application (``spark_jobs/replay.py <family> --replays <JSON>``, a
    list of each replay's arguments without the family), so a night pays one Spark start-up per
    family (6-7 s each on two cores), not one per dataset.  A job of one replay keeps that
    replay's own arguments.  Each job names its family, datasets and outputs."""
    by_family: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        by_family.setdefault(item["family"], []).append(item)
    jobs = []
    for fam, group in by_family.items():
        if len(group) == 1:
            args = group[0]["application_args"]
        else:
            args = [fam, REPLAYS_OPTION, json.dumps([it["application_args"][1:] for it in group])]
        names = [it["dataset"] for it in group]
        jobs.append({"family": fam, "datasets": names, "outs": [it["out"] for it in group],
                     "application": group[0]["application"], "application_args": args,
                     "name": f"skewbench-{fam}-{names[0]}" if len(names) == 1 else f"skewbench-{fam}-{len(names)}-datasets"})
    return jobs


def job_replays(application_args: list[str]) -> tuple[str, list[list[str]]]:
    """A replay job's family and its replays' arguments (each without the family): the inverse
    of :func:`replay_jobs`."""
    args = [str(a) for a in application_args]
    if len(args) == 3 and args[1] == REPLAYS_OPTION:
        batch = json.loads(args[2])
        if not isinstance(batch, list) or not all(isinstance(b, list) for b in batch):
            raise SkewbenchError(f"{REPLAYS_OPTION} takes a JSON list of argument lists")
        return args[0], [[str(a) for a in b] for b in batch]
    return args[0], [args[1:]]


def validate_replay(item: dict[str, Any]) -> dict[str, Any]:
    """Validate one replay's results with the results suite (its family's expectations); GE's
    JSON is kept beside them."""
    from skewbench.validation.results import validate_results

    keep = Path(item["out"]).parent / f"{item['family']}-validation"
    report = validate_results(item["out"], keep_dir=keep)
    report.raise_for_failure()
    return {"out": item["out"], "valid": True, "validation_dir": str(keep)}


def run_key(dag_id: str, run_id: str, family: str) -> str:
    """The deterministic key that finds a pipeline run's MLflow parent run again on retry."""
    return f"{dag_id}/{run_id}/{family}"


def git_commit() -> str:
    import subprocess

    from skewbench.settings import settings

    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=settings().project, capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _run_tags(dag_id: str, run_id: str, logical_date: str) -> dict[str, str]:
    return {"skewbench.dag_id": dag_id, "skewbench.run_id": run_id, "skewbench.logical_date": str(logical_date),
            "skewbench.git_commit": git_commit()}


def _run_name(family: str, run_id: str, logical_date: str) -> str:
    return f"{family} {str(logical_date)[:10]} {run_id}"


def open_tracking(families: list[str], dag_id: str, run_id: str, logical_date: str) -> dict[str, list[str]]:
    """Open (find or create) each family's MLflow parent run for this pipeline run, after ending
    FAILED the parents an earlier run of the DAG left RUNNING (the DAG runs one run at a time, so
    such a run is over: it failed, or was marked failed from outside, before it could close them)."""
    from skewbench.tracking import default_tracking_uri, fail_stale_parents, open_parent

    uri = default_tracking_uri()
    out = {}
    for fam in families:
        key = run_key(dag_id, run_id, fam)
        ended = fail_stale_parents(uri, fam, f"{dag_id}/", key,
                                   f"its pipeline run ended before logging it (found by run {run_id})")
        if ended:
            print(f"{fam}: ended {len(ended)} parent run(s) an earlier run left RUNNING: {', '.join(ended)}")
        out[fam] = list(open_parent(uri, fam, key, _run_name(fam, run_id, logical_date),
                                    _run_tags(dag_id, run_id, logical_date)))
    return out


def fail_tracking(families: list[str], dag_id: str, run_id: str, reason: str) -> None:
    """Mark this run's MLflow parent runs FAILED: nothing of it counts as a good result."""
    from skewbench.tracking import default_tracking_uri, fail_parent

    for fam in families:
        fail_parent(default_tracking_uri(), fam, run_key(dag_id, run_id, fam), reason)


def _logged_file(out_root: str, family: str) -> Path:
    return Path(out_root) / f"mlflow-{_safe(family)}.json"


def log_results(dirs: list[str], family: str, key: str, name: str, tags: dict[str, str],
                title: str | None = None) -> dict[str, Any]:
    """Render the report of one family's results directories and log both to MLflow under the
    parent run ``key`` (idempotent: the same key updates the same runs)."""
    import tempfile

    from skewbench.present.reports import render_report
    from skewbench.tracking import default_tracking_uri, find_parent, log_run

    uri = default_tracking_uri()
    context: dict[str, Any] = {**tags, "skewbench.key": key, "skewbench.family": family, "run name": name}
    found = find_parent(uri, family, key)
    if found is not None:
        context.update({"mlflow experiment": found[0], "mlflow run": found[1]})
    with tempfile.TemporaryDirectory(prefix="skewbench-report-") as tmp:
        # log_run computes each cell's verdict against the previous night once, tags it and
        # hands it to the report; artifacts and plots are both named by results.results_names
        def report(verdicts: list[dict[str, Any]]) -> Path:
            return render_report(dirs, Path(tmp) / "report.html", title or f"skewbench {family}: {name}", context,
                                 plots_dir=Path(tmp) / "plots", trend=verdicts)

        logged = log_run(dirs, tracking_uri=uri, run_key=key, run_name=name, tags=tags, report=report,
                         plots_dir=Path(tmp) / "plots")
    logged["trend_summary"] = trend_summary(logged["trend"])
    return logged


def trend_summary(verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts of new / no change / changed cells and the changed cells (:func:`skewbench.trend.summarize`)."""
    from skewbench.trend import describe, summarize

    out = summarize(verdicts)
    out["text"] = describe(out)
    return out


def log_family(plan: list[dict[str, Any]], family: str, dag_id: str, run_id: str, logical_date: str,
               out_root: str | None = None) -> dict[str, Any]:
    """Log one family's validated results of this run, with its report, to MLflow (idempotent
    on retry).  With ``out_root``, what was logged is also saved there for the run's summary."""
    dirs = [p["out"] for p in plan if p["family"] == family]
    logged = log_results(dirs, family, run_key(dag_id, run_id, family), _run_name(family, run_id, logical_date),
                         _run_tags(dag_id, run_id, logical_date), f"skewbench {family}: {run_id}")
    logged = {"family": family, **logged}
    if out_root is not None:
        Path(out_root).mkdir(parents=True, exist_ok=True)
        saved = {k: v for k, v in logged.items() if k not in ("children", "trend")}
        # each cell's verdict, compactly, for the run's overview (summarize)
        saved["trend_cells"] = [{k: v.get(k) for k in ("dataset", "cell", "strategy", "status", "text")}
                                for v in logged.get("trend") or []]
        _logged_file(out_root, family).write_text(json.dumps(saved, default=str) + "\n")
    return logged


def _logged(out_root: str) -> list[dict[str, Any]]:
    """What :func:`log_family` saved under ``out_root`` (one entry per logged family)."""
    return [json.loads(p.read_text()) for p in sorted(Path(out_root).glob("mlflow-*.json"))]


def check_trend(out_root: str, fail_on_change: bool, logged: list[dict[str, Any]] | None = None) -> str:
    """The run's trend against the previous night, one line per family (``logged``: what
    :func:`log_family` returned, default what it saved under ``out_root``).  Raises
    :class:`SkewbenchError` naming the changed cells when ``fail_on_change`` and any cell changed."""
    if logged is None:
        logged = _logged(out_root)
    lines, changed = [], []
    for entry in logged:
        summary = entry.get("trend_summary") or {}
        lines.append(f"{entry.get('family')}: {summary.get('text', 'no trend')}")
        changed += [f"{entry.get('family')} {c.get('dataset')} {c.get('cell')} ({c.get('text')})"
                    for c in summary.get("changed_cells") or []]
    text = "\n".join(lines) or "no family logged"
    if fail_on_change and changed:
        raise SkewbenchError(f"{len(changed)} cell(s) changed against the previous night: " + "; ".join(changed))
    return text


OVERVIEW = "overview.html"


def _has_results(out: str) -> bool:
    return (Path(out) / "_manifest.json").is_file()


def _live_links(dirs: list[str]) -> list[dict[str, Any]]:
    """The latest live run of each of these results' datasets (:func:`skewbench.present.livepage.live_links`);
    none when the store cannot be read (the overview is written all the same)."""
    from skewbench.present.livepage import live_links
    from skewbench.tracking import default_tracking_uri

    fps = []
    for d in dirs:
        manifest = json.loads((Path(d) / "_manifest.json").read_text())
        fps.append(str((manifest.get("dataset") or {}).get("fingerprint", "")))
    try:
        return live_links(default_tracking_uri(), mlflow_ui(), fps)
    except SkewbenchError as e:
        print(f"overview: no links to live runs ({e})")
        return []


def write_overview(plan: list[dict[str, Any]], logged: list[dict[str, Any]], out_root: str,
                   dag_id: str | None = None, run_id: str | None = None) -> tuple[Path | None, list[Any]]:
    """The run's ``overview.html`` in ``out_root`` (:func:`skewbench.present.overview.render_overview`:
    every family's results of the run, the trend verdicts of what was logged, the replays
    without results as failures), logged to each family's MLflow parent run with the night's
    picks as its tags (``skewbench.pick.<dataset>.<coords>[.<kind>]``).  The parent is found by
    :func:`run_key` when ``dag_id`` and ``run_id`` are given, else it is the one
    :func:`log_family` logged to.  Returns the overview's path (None: no results) and the picks."""
    from skewbench.present.overview import render_overview

    dirs = [p["out"] for p in plan if _has_results(p["out"])]
    failures = [f"{p['family']} {p['dataset']} (no results)" for p in plan if not _has_results(p["out"])]
    if not dirs:
        return None, []
    verdicts = [{**v, "family": e.get("family")} for e in logged for v in (e.get("trend") or e.get("trend_cells") or [])]
    title = f"skewbench overview: {run_id or Path(out_root).name}"
    path = render_overview(dirs, Path(out_root) / OVERVIEW, title, verdicts=verdicts if logged else None,
                           failures=failures, live=_live_links(dirs))
    try:
        from skewbench.present.picks import night_picks
    except ImportError:  # picks not available: the overview says so; no tags
        picks: list[Any] = []
    else:
        picks = list(night_picks(dirs))
    from skewbench.tracking import OVERVIEW_TAG, annotate_parent, default_tracking_uri

    uri = default_tracking_uri()
    for entry in logged:
        fam = str(entry.get("family"))
        tags = {**dict(p.tag() for p in picks if p.family == fam), OVERVIEW_TAG: OVERVIEW}
        if dag_id and run_id:
            annotate_parent(uri, fam, run_key(dag_id, run_id, fam), artifacts=[path], tags=tags)
        elif entry.get("parent_run_id"):
            annotate_parent(uri, fam, run_id=str(entry["parent_run_id"]), artifacts=[path], tags=tags)
    return path, picks


def summarize(plan: list[dict[str, Any]], logged: list[dict[str, Any]] | None, out_root: str,
              dag_id: str | None = None, run_id: str | None = None) -> str:
    """A text summary of the run (printed in the task log and by ``make run``), also saved as
    ``SUMMARY.md``; writes the run's overview beside it and logs it with the picks to the
    families' MLflow parent runs (:func:`write_overview`).

    ``logged`` (what :func:`log_family` returned) defaults to what it saved under ``out_root``."""
    from skewbench.present.reports import render_markdown_summary

    if logged is None:
        logged = _logged(out_root)
    overview, picks = write_overview(plan, logged, out_root, dag_id, run_id)
    text = render_markdown_summary([p["out"] for p in plan])
    lines = [text, "", f"results: {out_root}"]
    if overview is not None:
        lines.append(f"overview: {overview}")
    if picks:
        lines += ["", "What to pick:", *[f"  {p.line()}" for p in picks], ""]
    for entry in logged:
        if entry.get("report"):
            lines.append(f"report: {entry['report']}")
        lines.append(f"MLflow parent run: {entry.get('parent_run_id')} (experiment {entry.get('experiment_id')})")
        if entry.get("trend_summary"):
            lines.append(f"trend vs previous night ({entry.get('family')}): {entry['trend_summary'].get('text')}")
    out = "\n".join(lines)
    Path(out_root).mkdir(parents=True, exist_ok=True)
    (Path(out_root) / "SUMMARY.md").write_text(out + "\n")
    return out


def family_of_job(application_args: Any) -> str | None:
    """The family a replay job runs (its first argument), or None."""
    if isinstance(application_args, str):
        try:
            application_args = json.loads(application_args)
        except ValueError:
            import ast

            try:
                application_args = ast.literal_eval(application_args)
            except (ValueError, SyntaxError):
                return None
    if isinstance(application_args, (list, tuple)) and application_args:
        first = str(application_args[0])
        return first if first in _families.families() else None
    return None


def dataset_of_job(application_args: Any) -> str | None:
    """The dataset name a replay job's arguments name (``--dataset <data root>/<name>``); None
    for a job of several datasets (:func:`replay_jobs`)."""
    if isinstance(application_args, (list, tuple)) and application_args:
        try:
            _, replays = job_replays(list(application_args))
        except (SkewbenchError, ValueError):
            return None
        if len(replays) == 1 and "--dataset" in replays[0][:-1]:
            args = replays[0]
            return Path(args[args.index("--dataset") + 1]).name or None
    return None


def mlflow_ui() -> str:
    from skewbench.settings import settings

    return settings().mlflow_ui


def dumps(obj: Any) -> str:
    return json.dumps(obj, default=str)
