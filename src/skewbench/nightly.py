"""The nightly pipeline's steps, as plain functions the Airflow DAGs call (no Airflow here).

Parameters (the DAG's Params, also checked again here before any Spark job starts):

``datasets``
    catalog names; empty means the catalog set ``catalog_set``.
``catalog_set``
    ``default`` (small, minutes) or ``paper`` (the papers' sizes).
``families``
    strategy families (:data:`skewbench.families.FAMILIES`).
``strategies``
    strategy names; empty means each family's defaults.  A name must belong to a chosen family.
``workers``, ``sources``, ``seeds``
    the grid's worker counts, source counts and number of hash seeds.
``provisioning``
    the replay's load: tuples arrive steadily at P percent of the workers' capacity (mean cost
    x rate / n; 100 = critical load, the OSG paper's default; above 100 = spare capacity), so
    latencies mean the same on every dataset and worker count.  ``null`` replays the datasets'
    own arrival times instead (whose rates were not chosen for any particular n).

Locations (environment variables, with defaults under one state directory):

``SKEWBENCH_STATE``         ``<project>/.skewbench``
``SKEWBENCH_DATA_ROOT``     ``$SKEWBENCH_STATE/datasets``
``SKEWBENCH_RUNS_ROOT``     ``$SKEWBENCH_STATE/runs``: ``<logical date>/<run id>/<dataset>/<family>``
``SKEWBENCH_TRACKING_URI``  MLflow tracking URI (see :mod:`skewbench.tracking`)
``SKEWBENCH_MLFLOW_UI``     the MLflow UI's address, for links (``http://127.0.0.1:5000``)
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from skewbench.errors import SkewbenchError
from skewbench.families import FAMILIES

SETS = ("default", "paper")


def project_root() -> Path:
    return Path(os.environ.get("SKEWBENCH_PROJECT", Path(__file__).resolve().parents[2]))


def state_dir() -> Path:
    return Path(os.environ.get("SKEWBENCH_STATE", project_root() / ".skewbench"))


def data_root() -> Path:
    return Path(os.environ.get("SKEWBENCH_DATA_ROOT", state_dir() / "datasets"))


def runs_root() -> Path:
    return Path(os.environ.get("SKEWBENCH_RUNS_ROOT", state_dir() / "runs"))


def all_strategies() -> list[str]:
    return sorted({s for f in FAMILIES.values() for s in f.strategies})


def params_schema() -> dict[str, dict[str, Any]]:
    """JSON schema of every Param, with its default (the DAG builds its Params from this)."""
    return {
        "datasets": {"type": "array", "items": {"type": "string", "minLength": 1}, "default": [],
                     "description": "Catalog dataset names; empty = every entry of catalog_set."},
        "catalog_set": {"type": "string", "enum": list(SETS), "default": "default",
                        "description": "Scale: the catalog's default (small) or paper (papers' sizes) set."},
        "families": {"type": "array", "items": {"type": "string", "enum": list(FAMILIES)}, "minItems": 1,
                     "uniqueItems": True, "default": ["grouping"], "description": "Strategy families."},
        "strategies": {"type": "array", "items": {"type": "string", "enum": all_strategies()}, "uniqueItems": True,
                       "default": [], "description": "Strategies; empty = each family's defaults."},
        "workers": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 10000}, "minItems": 1,
                    "uniqueItems": True, "default": [5, 10, 50, 100], "description": "Worker counts n."},
        "sources": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 1000}, "minItems": 1,
                    "uniqueItems": True, "default": [5], "description": "Source counts s."},
        "seeds": {"type": "integer", "minimum": 1, "maximum": 100, "default": 1,
                  "description": "Hash seeds per grid cell."},
        "provisioning": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 100000, "default": 100,
                         "description": "Arrival rate as a percentage of the workers' capacity (100 = critical "
                                        "load); empty = the datasets' own arrival times."},
    }


def check_params(params: dict[str, Any]) -> dict[str, Any]:
    """Validate the run's parameters (again, after the trigger form) and resolve defaults.

    Raises :class:`SkewbenchError` with one clear line; returns the resolved configuration.
    """
    import jsonschema

    schema = params_schema()
    known = set(schema)
    unknown = set(params) - known
    if unknown:
        raise SkewbenchError(f"unknown parameter(s) {sorted(unknown)}; known: {sorted(known)}")
    conf = {k: params.get(k, v["default"]) for k, v in schema.items()}
    for name, sch in schema.items():
        try:
            jsonschema.validate(conf[name], {k: v for k, v in sch.items() if k not in ("default", "description")})
        except jsonschema.ValidationError as e:
            raise SkewbenchError(f"parameter '{name}': {e.message}") from None
    from skewbench.datasets.catalog import load_catalog

    cat = load_catalog()
    entries = cat.select(conf["datasets"] or None, None if conf["datasets"] else conf["catalog_set"])
    conf["datasets"] = [e.name for e in entries if e.available]
    conf["skipped_datasets"] = [e.name for e in entries if not e.available]
    if not conf["datasets"]:
        raise SkewbenchError("no dataset to run: every selected dataset's input is absent")
    per_family = {}
    for fam in conf["families"]:
        f = FAMILIES[fam]
        chosen = [s for s in conf["strategies"] if s in f.strategies] if conf["strategies"] else list(f.default_strategies)
        per_family[fam] = chosen
    stray = [s for s in conf["strategies"] if not any(s in FAMILIES[f].strategies for f in conf["families"])]
    if stray:
        raise SkewbenchError(f"strateg{'y' if len(stray) == 1 else 'ies'} {stray} belong to none of the "
                             f"families {conf['families']}")
    empty = [f for f, s in per_family.items() if not s]
    if empty:
        raise SkewbenchError(f"no strategy selected for famil{'y' if len(empty) == 1 else 'ies'} {empty}")
    conf["strategies_by_family"] = per_family
    return conf


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "run"


def run_dir(logical_date: str, run_id: str) -> Path:
    """``<runs root>/<logical date>/<run id>``: a run's outputs, never shared with another run."""
    return runs_root() / _safe(str(logical_date)[:10]) / _safe(run_id)


def prepare_dataset(name: str) -> dict[str, Any]:
    """Materialise one catalog dataset (kept when up to date) and validate it; fails on error."""
    from skewbench.datasets.catalog import load_catalog
    from skewbench.datasets.contract import open_dataset
    from skewbench.datasets.pipeline import materialize
    from skewbench.errors import ValidationFailed

    entry = load_catalog().select([name])[0]
    engine = "spark" if entry.spec is not None and entry.spec.tuples > 5_000_000 else "local"
    status = materialize(entry, data_root(), engine=engine, validate=True)
    if status["validation"] == "failed":
        raise ValidationFailed(status["detail"])
    meta = open_dataset(status["path"]).meta
    return {"name": name, "path": status["path"], "status": status["status"], "fingerprint": meta["fingerprint"],
            "tuples": meta["tuples"], "params": meta.get("catalog_params") or meta.get("params")}


def plan_replays(conf: dict[str, Any], datasets: list[dict[str, Any]], out_root: str) -> list[dict[str, Any]]:
    """One replay per (dataset, family): where it writes and the arguments of its Spark job."""
    plan = []
    for ds in sorted(datasets, key=lambda d: d["name"]):
        for fam in conf["families"]:
            f = FAMILIES[fam]
            out = str(Path(out_root) / _safe(ds["name"]) / fam)
            plan.append({
                "dataset": ds["name"], "dataset_path": ds["path"], "fingerprint": ds["fingerprint"], "family": fam,
                "out": out, "application": str(f.job_path),
                "application_args": f.replay_args(ds["path"], out, conf["strategies_by_family"][fam],
                                                  conf["workers"], conf["sources"], conf["seeds"],
                                                  conf["provisioning"]),
            })
    return plan


def validate_replay(item: dict[str, Any]) -> dict[str, Any]:
    """Validate one replay's results with its family's suite; GE's JSON is kept beside them."""
    import importlib

    mod, fn = FAMILIES[item["family"]].validator.split(":")
    validate = getattr(importlib.import_module(mod), fn)
    keep = Path(item["out"]).parent / f"{item['family']}-validation"
    report = validate(item["out"], keep_dir=keep)
    report.raise_for_failure()
    return {"out": item["out"], "valid": True, "validation_dir": str(keep)}


def run_key(dag_id: str, run_id: str, family: str) -> str:
    """The deterministic key that finds a pipeline run's MLflow parent run again on retry."""
    return f"{dag_id}/{run_id}/{family}"


def git_commit() -> str:
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=project_root(), capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _run_tags(dag_id: str, run_id: str, logical_date: str) -> dict[str, str]:
    return {"skewbench.dag_id": dag_id, "skewbench.run_id": run_id, "skewbench.logical_date": str(logical_date),
            "skewbench.git_commit": git_commit()}


def _run_name(family: str, run_id: str, logical_date: str) -> str:
    return f"{family} {str(logical_date)[:10]} {run_id}"


def open_tracking(families: list[str], dag_id: str, run_id: str, logical_date: str) -> dict[str, list[str]]:
    """Open (find or create) each family's MLflow parent run for this pipeline run."""
    from skewbench.tracking import default_tracking_uri, open_parent

    return {fam: list(open_parent(default_tracking_uri(), fam, run_key(dag_id, run_id, fam),
                                  _run_name(fam, run_id, logical_date), _run_tags(dag_id, run_id, logical_date)))
            for fam in families}


def fail_tracking(families: list[str], dag_id: str, run_id: str, reason: str) -> None:
    """Mark this run's MLflow parent runs FAILED: nothing of it counts as a good result."""
    from skewbench.tracking import default_tracking_uri, fail_parent

    for fam in families:
        fail_parent(default_tracking_uri(), fam, run_key(dag_id, run_id, fam), reason)


def log_family(plan: list[dict[str, Any]], family: str, dag_id: str, run_id: str, logical_date: str) -> dict[str, Any]:
    """Log one family's validated results of this run to MLflow (idempotent on retry)."""
    from skewbench.tracking import default_tracking_uri, log_run

    items = [p for p in plan if p["family"] == family]
    return log_run([p["out"] for p in items], tracking_uri=default_tracking_uri(),
                   run_key=run_key(dag_id, run_id, family), run_name=_run_name(family, run_id, logical_date),
                   tags=_run_tags(dag_id, run_id, logical_date), report_title=f"skewbench {family}: {run_id}")


def summarize(plan: list[dict[str, Any]], logged: list[dict[str, Any]], out_root: str) -> str:
    """A text summary of the run (printed in the task log and by ``make run``), also saved."""
    from skewbench.reports import render_markdown_summary

    text = render_markdown_summary([p["out"] for p in plan])
    lines = [text, "", f"results: {out_root}"]
    for entry in logged:
        if entry.get("report"):
            lines.append(f"report: {entry['report']}")
        lines.append(f"MLflow parent run: {entry.get('parent_run_id')} (experiment {entry.get('experiment_id')})")
    out = "\n".join(lines)
    Path(out_root).mkdir(parents=True, exist_ok=True)
    (Path(out_root) / "SUMMARY.md").write_text(out + "\n")
    return out


def mlflow_ui() -> str:
    return os.environ.get("SKEWBENCH_MLFLOW_UI", "http://127.0.0.1:5000").rstrip("/")


def dumps(obj: Any) -> str:
    return json.dumps(obj, default=str)
