"""A static results site across nights, built from MLflow (the store of record).

:func:`build_site` reads every family's experiment through :class:`mlflow.MlflowClient` only
(an embedded SQLite store or a tracking server alike) and writes a directory of self-contained
HTML pages (figures inline as base64 PNG, one small stylesheet inline, relative links):

* ``index.html``: the nights, newest first (a night is the parent runs of one DAG run, found by
  their tags ``skewbench.dag_id`` and ``skewbench.run_id``, dated by ``skewbench.logical_date``),
  each family's parent status and cell count; links to every dataset and strategy page;
* ``dataset-<name>.html``: per family that replayed it, the trade-off plots of its latest night
  (the family's ``report.TRADEOFFS``: x, y, title) with the Pareto front drawn, the headline
  table, and the trend of each strategy's headline metric (``report.LEADERBOARD``: metric and
  coordinate) over the nights, one line per strategy; for a family that logs capacity curves
  (the step metric ``curve.<capacity column>`` of :data:`skewbench.present.plotting.CURVE_COLUMNS`,
  one step per worker count), each strategy's curve of the latest night (its first setting: read
  back from MLflow, one call per strategy and dataset) with its skew ceiling and the hottest key's
  limit, and its capacity at the skew ceiling over the nights (at the curve's largest n on a
  night it still grows there);
* ``strategy-<family>-<name>.html``: a strategy across datasets (its headline metric on each
  dataset's latest night and its rank there);
* ``live.html`` (when the store holds live runs, experiment ``skewbench-live``): the live runs,
  newest first, and the "simulated vs measured" figures of the newest finished ones
  (:mod:`skewbench.present.livepage`, read back from their nested runs).

What is plotted is also embedded in each page as JSON (``<script type="application/json"
id="skewbench-data">``).  A strategy keeps one colour (and marker) in every figure of the site
(:func:`skewbench.present.plotting.colors` over its family's labels).  The site is built in a temporary
directory beside ``out_dir`` and then moved into place; an existing ``out_dir`` is replaced only
when it is a site (it holds :data:`MARKER`).
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from skewbench import families as _families
from skewbench.errors import SkewbenchError
from skewbench.present.plotting import (CEILING_COLUMNS, CURVE_COLUMNS, KEY_LIMIT, WORKERS, Curve, colors,
                                        draw_capacity, figure, fmt_number, log_y, plain_figure, settings_text,
                                        with_labels)
from skewbench.results import Metric, schema, slug
from skewbench.present.overview import pareto_front

#: the file that marks a directory as a site (an existing directory without it is not replaced)
MARKER = ".skewbench-site"
DAG_TAG, RUN_TAG = "skewbench.dag_id", "skewbench.run_id"
#: coordinate values drawn as panels at most (the others are listed in the page's data only)
MAX_PANELS = 6
_MARKERS = {"-": "o", "--": "s", ":": "^", "-.": "D"}

_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 1.5em auto; max-width: 1100px;
       color: #222; padding: 0 1em; }
nav { font-size: .9em; margin-bottom: 1em; } nav a { margin-right: 1em; }
h1 { font-size: 1.5em; }
h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 1.8em; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
table { border-collapse: collapse; margin: .8em 0; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; } th { background: #f3f3f3; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.FINISHED { color: #1a7f37; } .FAILED { color: #cf222e; } .RUNNING, .SCHEDULED { color: #9a6700; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figure.live { display: inline-block; vertical-align: top; margin: 1em 1% 1em 0; width: 48%; }
figcaption { color: #666; font-size: .85em; }
p.note { color: #666; font-size: .85em; } ul.cols { columns: 3; }
"""


# --------------------------------------------------------------------------------------------
# what the site shows, read from MLflow


@dataclass
class Night:
    """One DAG run: its families' parent runs (family -> (run id, status))."""

    dag_id: str
    run_id: str
    when: float
    label: str
    parents: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass
class SiteData:
    """The nights (oldest first) and, per family, one row per child run of a finished parent:
    ``night`` (index into ``nights``), ``dataset``, ``strategy``, ``label``, ``seed``, the
    family's coordinates and every final metric as logged (``time.<name>`` for timing ones)."""

    tracking_uri: str
    nights: list[Night]
    cells: dict[str, pd.DataFrame]
    colors: dict[str, dict[str, tuple[str, str]]]  # family -> label -> (colour, line style)
    live: list[dict[str, Any]] = field(default_factory=list)  # the live runs, newest first (collect_live)
    #: family -> dataset -> each label's capacity curve on the dataset's latest night (collect_curves)
    curves: dict[str, dict[str, list[Curve]]] = field(default_factory=dict)


def headline(family: str) -> tuple[str, str]:
    """(metric, coordinate or "") of the family's headline: its ``report.LEADERBOARD``, else its
    schema's first headline metric at its first coordinate."""
    lb = _families.get(family).attr("report", "LEADERBOARD", None)
    if lb:
        return str(lb[0]), str(lb[1] or "")
    sch = schema(family)
    first = next((m.name for m in sch.headline if not m.timing), None) or sch.headline[0].name
    return first, (sch.coordinates[0] if sch.coordinates else "")


def tradeoffs(family: str) -> list[tuple[str, str, str]]:
    """(x, y, title) of the family's trade-off plots: its ``report.TRADEOFFS``, else its first
    two headline metrics."""
    declared = _families.get(family).attr("report", "TRADEOFFS", None)
    if declared is not None:
        return [(str(x), str(y), str(t)) for x, y, t in declared]
    names = [m.name for m in schema(family).headline if not m.timing][:2]
    return [(names[1], names[0], f"{names[0]} vs {names[1]}")] if len(names) == 2 else []


def _metric(family: str, name: str) -> Metric | None:
    return schema(family).metrics.get(f"summary:{name}")


def column(family: str, name: str) -> str:
    """The MLflow metric key of a summary column (``time.<name>`` for timing metrics)."""
    from skewbench.tracking import TIME_PREFIX

    m = _metric(family, name)
    return f"{TIME_PREFIX}{name}" if m is not None and m.timing else name


def _header(family: str, name: str) -> str:
    m = _metric(family, name)
    return m.header if m is not None else name


def _maximise(family: str, name: str) -> bool:
    m = _metric(family, name)
    return bool(m is not None and m.higher_is_better)


def _coord_value(text: Any) -> Any:
    try:
        f = float(text)
    except (TypeError, ValueError):
        return str(text)
    return int(f) if f.is_integer() else f


def _json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def collect(tracking_uri: str | None = None, progress: Callable[[str], None] | None = None) -> SiteData:
    """Every night and every finished night's cells from the store (nothing is written to it)."""
    from skewbench.tracking import (LOGICAL_DATE_TAG, PARAM_PREFIX, PARENT_TAG, client as mlflow_client,
                                    default_tracking_uri, experiment_name, night_of, search_all, sqlite_path)

    uri = tracking_uri or default_tracking_uri()
    say = progress or (lambda _m: None)
    db = sqlite_path(uri)
    if db is not None and not db.exists():
        raise SkewbenchError(f"no nights in the MLflow store {uri}: its database file does not exist "
                             "(run the nightly pipeline first, e.g. make run)")
    client = mlflow_client(uri)
    nights: dict[tuple[str, str], Night] = {}
    rows: dict[str, list[tuple[tuple[str, str], dict[str, Any]]]] = {}
    for family in _families.families():
        exp = client.get_experiment_by_name(experiment_name(family))
        if exp is None or exp.lifecycle_stage == "deleted":
            continue
        runs = search_all(client, exp.experiment_id, "")
        say(f"{family}: {len(runs)} run(s) in experiment {exp.name}")
        finished: dict[str, tuple[str, str]] = {}
        for r in runs:
            t = r.data.tags
            if PARENT_TAG in t or not t.get(DAG_TAG) or not t.get(RUN_TAG):
                continue
            key = (t[DAG_TAG], t[RUN_TAG])
            when, label = night_of({LOGICAL_DATE_TAG: t.get(LOGICAL_DATE_TAG, "")}, r.info.start_time)
            night = nights.setdefault(key, Night(key[0], key[1], when, label))
            night.parents[family] = (r.info.run_id, r.info.status)
            if r.info.status == "FINISHED":
                finished[r.info.run_id] = key
        sch = schema(family)
        fam_rows = rows.setdefault(family, [])
        for r in runs:
            key = finished.get(r.data.tags.get(PARENT_TAG, ""))
            if key is None:
                continue
            p = r.data.params
            row: dict[str, Any] = {"dataset": r.data.tags.get("skewbench.dataset") or p.get("dataset", "?"),
                                   "strategy": r.data.tags.get("skewbench.strategy") or p.get("strategy", "?"),
                                   "seed": _coord_value(p.get("seed", 0)), "run_id": r.info.run_id}
            for c in sch.coordinates:
                row[c] = _coord_value(p.get(c, ""))
            row["params"] = json.dumps({k[len(PARAM_PREFIX):]: _json_value(v) for k, v in sorted(p.items())
                                        if k.startswith(PARAM_PREFIX)}, sort_keys=True)
            row.update({k: float(v) for k, v in r.data.metrics.items() if not k.startswith("window.")})
            fam_rows.append((key, row))
    ordered = sorted(nights.values(), key=lambda n: (n.when, n.run_id))
    index = {(n.dag_id, n.run_id): i for i, n in enumerate(ordered)}
    cells, cmap = {}, {}
    for family, fam_rows in rows.items():
        if not fam_rows:
            continue
        df = pd.DataFrame([{**row, "night": index[key]} for key, row in fam_rows])
        coords = schema(family).coordinates
        # labels tell a strategy's variants apart within a night (not across nights)
        keyed = df.assign(dataset=df["night"].astype(str) + "|" + df["dataset"].astype(str))
        df["label"] = with_labels(keyed, coordinates=coords)["label"].to_numpy()
        cells[family] = df
        cmap[family] = colors(_label_order(family, df))
    data = SiteData(uri, ordered, cells, cmap, collect_live(uri, say))
    for family in cells:
        data.curves[family] = collect_curves(client, data, family)
    return data


def curve_key(family: str) -> str | None:
    """The MLflow step metric of the family's capacity curve (:data:`CURVE_COLUMNS` among its
    schema's curves, logged as ``curve.<column>`` with the worker count as step), None without one."""
    from skewbench.tracking import CURVE_PREFIX

    workers, capacity = CURVE_COLUMNS
    return f"{CURVE_PREFIX}{capacity}" if (capacity, workers) in schema(family).curves else None


def _first_setting(df: pd.DataFrame, family: str) -> pd.DataFrame:
    """Each label's first setting: its cell with the smallest coordinates other than the worker
    count, then seed, then worker count."""
    coords = [c for c in schema(family).coordinates if c != WORKERS and c in df.columns]
    by = [*coords, "seed", *([WORKERS] if WORKERS in df.columns else [])]
    return df.sort_values(by, kind="stable").drop_duplicates("label")


def _metric_value(row: Any, name: str) -> float | None:
    v = row.get(name) if hasattr(row, "get") else None
    return float(v) if v is not None and math.isfinite(float(v)) else None


def collect_curves(client, data: SiteData, family: str) -> dict[str, list[Curve]]:
    """Per dataset, each label's capacity curve on the dataset's latest night, read back from its
    first setting's run (the step metric :func:`curve_key`, one MLflow call per label), with the
    skew ceiling and the hottest key's limit its final metrics hold.  {} when the family logs no
    curve."""
    key = curve_key(family)
    df = data.cells.get(family)
    if key is None or df is None or key not in df.columns:
        return {}
    out: dict[str, list[Curve]] = {}
    for dataset in sorted(df["dataset"].unique()):
        night = _latest_night(data, family, dataset)
        at = df[(df["dataset"] == dataset) & (df["night"] == night)].dropna(subset=[key])
        curves = []
        for _, r in _first_setting(at, family).iterrows():
            points = {int(m.step): float(m.value) for m in sorted(client.get_metric_history(r["run_id"], key),
                                                                   key=lambda m: (m.step, m.timestamp))}
            n, cap = (_metric_value(r, column(family, c)) for c in CEILING_COLUMNS)
            curves.append(Curve(str(r["label"]), sorted(points), [points[w] for w in sorted(points)],
                                (int(n), cap) if n is not None and cap is not None else None,
                                _metric_value(r, column(family, KEY_LIMIT)),
                                setting=", ".join(f"{c}={r[c]}" for c in [*[c for c in schema(family).coordinates
                                                                              if c != WORKERS], "seed"])))
        order = list(data.colors.get(family, {}))
        out[dataset] = sorted(curves, key=lambda c: order.index(c.label) if c.label in order else len(order))
    return out


def collect_live(tracking_uri: str, progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """The live runs (parent runs of the experiment ``skewbench-live``, :mod:`skewbench.live`),
    newest first: ``run_id``, ``dag_run``, ``when``, ``night``, ``status``, ``datasets``,
    ``engines``, ``cells`` (nested runs), and, for a finished one, ``runs``: per dataset what
    :func:`skewbench.present.livepage.run_sections` draws, read back from its nested runs."""
    from skewbench.present.livepage import DATASETS_TAG, EXPERIMENT
    from skewbench.tracking import PARENT_TAG, night_of, search_runs

    runs = search_runs(tracking_uri, EXPERIMENT)
    children: dict[str, list] = {}
    for r in runs:
        if PARENT_TAG in r.data.tags:
            children.setdefault(r.data.tags[PARENT_TAG], []).append(r)
    out = []
    for p in runs:
        t = p.data.tags
        if PARENT_TAG in t:
            continue
        when, label = night_of(t, p.info.start_time)
        kids = children.get(p.info.run_id, [])
        out.append({"run_id": p.info.run_id, "dag_run": t.get(RUN_TAG, ""), "when": when, "night": label,
                    "status": p.info.status, "datasets": [d for d in t.get(DATASETS_TAG, "").split(",") if d],
                    "engines": t.get("skewbench.engines", ""), "cells": len(kids),
                    "runs": _live_datasets(p, kids, label) if p.info.status == "FINISHED" else []})
    out.sort(key=lambda e: (e["when"], e["run_id"]), reverse=True)
    if progress is not None and out:
        progress(f"live: {len(out)} run(s) in experiment skewbench-{EXPERIMENT}")
    return out


def _live_datasets(parent, kids: list, label: str) -> list[dict[str, Any]]:
    """A finished live run's datasets: its nested runs as rows (params, the latest value of each
    metric but the step metrics' (per-second series and repetitions: not drawn here), the records
    per worker and both calibrations), the rank agreements and the pairs not separated its parent
    holds, the stream, and each engine's calibrations before and after (an older run's rows,
    without them, give its overheads instead)."""
    from skewbench.present.livepage import NOT_SEPARATED_TAG, TAU_PLAIN_PREFIX, TAU_PREFIX, calibration

    by_dataset: dict[str, list[dict[str, Any]]] = {}
    attempts: dict[str, str] = {}
    for k in kids:
        if k.info.status != "FINISHED":
            continue
        p, t = k.data.params, k.data.tags
        metrics = {m: v for m, v in k.data.metrics.items() if not m.startswith(("series/", "repetition/"))}
        row = {**p, **metrics, "subtask_records": t.get("skewbench.subtask_records")}
        for which in ("calibration_before", "calibration_after"):
            if t.get(f"skewbench.{which}"):
                row[which] = t[f"skewbench.{which}"]
        by_dataset.setdefault(p.get("dataset", "?"), []).append(row)
        attempt = t.get("skewbench.attempt", "")
        if attempt and not attempt.startswith("1:"):
            attempts[p.get("dataset", "?")] = attempt
    found: dict[tuple[str, ...], dict[str, Any]] = {}  # (dataset, engine, metric) -> its agreement

    def note(name: str, kinds: tuple[str, ...], value: Any) -> None:
        parts = name.split("/")
        if len(parts) == 4 and parts[0] in kinds:
            a = found.setdefault(tuple(parts[1:]), {"engine": parts[2], "metric": parts[3]})
            a["not_separated" if parts[0] == NOT_SEPARATED_TAG else parts[0]] = value

    for name, v in parent.data.metrics.items():
        note(name, (TAU_PREFIX, TAU_PLAIN_PREFIX), v)
    for name, v in parent.data.tags.items():
        note(name, (NOT_SEPARATED_TAG,), v)
    agreement: dict[str, list[dict[str, Any]]] = {}
    for (ds, _, _), a in found.items():
        agreement.setdefault(ds, []).append(a)
    out = []
    for ds, rows in by_dataset.items():
        first = rows[0]
        calibrations: dict[str, dict[str, Any]] = {}
        for r in rows:
            cal = {w: calibration(r, w) for w in ("before", "after")}
            if any(cal.values()):
                calibrations.setdefault(str(r["engine"]), cal)
        out.append({"dataset": ds, "title": f"{ds}: live run of {label}",
                    "anchor": f"live-{slug(parent.info.run_id[:12])}-{slug(ds)}".lower(), "rows": rows,
                    "agreement": agreement.get(ds, []), "retry": attempts.get(ds), "calibrations": calibrations,
                    "overheads": {str(r["engine"]): {"overhead_ms": r.get("overhead_ms"),
                                                     "transport_ms": r.get("transport_ms")} for r in rows},
                    "stream": {"tuples": first.get("tuples_offered"), "workers": first.get("workers"),
                               "rate": first.get("rate"), "cost_model": first.get("cost_model"),
                               "work": first.get("work"), "repeat": first.get("repeat")}})
    return out


def _label_order(family: str, df: pd.DataFrame) -> list[str]:
    """A family's labels in its strategy table's order (stable from one build to the next)."""
    from skewbench import registry

    try:
        names = registry.names(family)
    except SkewbenchError:
        names = []
    rank = {n: i for i, n in enumerate(names)}
    pairs = set(zip(df["strategy"].astype(str), df["label"].astype(str)))
    return [lab for _, _, lab in sorted((rank.get(s, len(rank)), s, lab) for s, lab in pairs)]


def _style(data: SiteData, family: str, label: str) -> tuple[str, str, str]:
    color, line = data.colors.get(family, {}).get(label, ("C7", "-"))
    return color, line, _MARKERS.get(line, "o")


# --------------------------------------------------------------------------------------------
# the series a page plots


def _latest_night(data: SiteData, family: str, dataset: str) -> int | None:
    df = data.cells.get(family)
    if df is None:
        return None
    nights = df.loc[df["dataset"] == dataset, "night"]
    return int(nights.max()) if len(nights) else None


def _mean(df: pd.DataFrame, by: list[str], col: str) -> pd.DataFrame:
    if col not in df.columns:
        return pd.DataFrame(columns=[*by, col])
    return df.dropna(subset=[col]).groupby(by, sort=True, dropna=False)[col].mean().reset_index()


def trend_series(data: SiteData, family: str, dataset: str) -> dict[str, Any]:
    """The headline metric of each strategy (label) on ``dataset`` over the nights, mean over
    seeds and the other coordinates: ``{"metric", "coordinate", "nights": [label, ...],
    "panels": {coordinate value (a string, "all" without one): {label: [[night, value], ...]}}}``,
    nights oldest first."""
    metric, coord = headline(family)
    col = column(family, metric)
    df = data.cells[family]
    df = df[df["dataset"] == dataset]
    by = ["night", "label"] + ([coord] if coord and coord in df.columns else [])
    means = _mean(df, by, col)
    panels: dict[str, dict[str, list[list[Any]]]] = {}
    for _, r in means.iterrows():
        panel = f"{coord}={r[coord]}" if len(by) == 3 else "all"
        panels.setdefault(panel, {}).setdefault(str(r["label"]), []).append(
            [data.nights[int(r["night"])].label, float(r[col])])
    order = sorted(panels, key=lambda p: _coord_value(p.split("=", 1)[-1]) if len(by) == 3 else 0)
    nights = sorted({int(n) for n in df["night"]})
    return {"metric": metric, "column": col, "coordinate": coord, "nights": [data.nights[n].label for n in nights],
            "panels": {p: panels[p] for p in order}}


def capacity_trend(data: SiteData, family: str, dataset: str) -> dict[str, Any]:
    """Each label's capacity at its skew ceiling over the nights, or, on a night it still grows at
    the curve's end, at the curve's largest n (its first setting each night): ``{"nights": [label,
    ...], "lines": {label: [[night, capacity, ceiling n or None], ...]}}``, nights oldest first;
    ``lines`` empty when the family logs no curve."""
    key = curve_key(family)
    df = data.cells[family]
    df = df[df["dataset"] == dataset]
    nights = sorted({int(n) for n in df["night"]})
    lines: dict[str, list[list[Any]]] = {}
    if key is None or key not in df.columns:
        return {"nights": [data.nights[n].label for n in nights], "lines": lines}
    n_col, cap_col = (column(family, c) for c in CEILING_COLUMNS)
    for night in nights:
        at = df[df["night"] == night].dropna(subset=[key])
        for _, r in _first_setting(at, family).iterrows():
            n, cap = _metric_value(r, n_col), _metric_value(r, cap_col)
            value = cap if n is not None and cap is not None else float(r[key])
            lines.setdefault(str(r["label"]), []).append([data.nights[night].label, value,
                                                          int(n) if n is not None and cap is not None else None])
    order = list(data.colors.get(family, {}))
    lines = dict(sorted(lines.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))
    return {"nights": [data.nights[n].label for n in nights], "lines": lines}


def tradeoff_points(data: SiteData, family: str, dataset: str, night: int, x: str, y: str) -> dict[str, Any]:
    """One point per cell of the night (mean over seeds): ``{"panels": {panel: [{"label", "coords",
    "x", "y", "front"}]}}``, panels by the headline coordinate."""
    _, coord = headline(family)
    coords = list(schema(family).coordinates)
    cx, cy = column(family, x), column(family, y)
    df = data.cells[family]
    df = df[(df["dataset"] == dataset) & (df["night"] == night)]
    out: dict[str, list[dict[str, Any]]] = {}
    if cx not in df.columns or cy not in df.columns:
        return {"x": x, "y": y, "panels": {}}
    pts = df.dropna(subset=[cx, cy]).groupby(["label", *coords], sort=True, dropna=False)[[cx, cy]] \
        .mean().reset_index()
    split = bool(coord) and coord in pts.columns and pts[coord].nunique() > 1
    groups = pts.groupby(coord, sort=True) if split else [("all", pts)]
    for value, g in groups:
        panel = f"{coord}={value}" if split else "all"
        front = set(pareto_front(list(zip(g[cx], g[cy])), "max" if _maximise(family, x) else "min",
                                 "max" if _maximise(family, y) else "min"))
        out[panel] = [{"label": str(r["label"]), "coords": {c: _py(r[c]) for c in coords},
                       "x": float(r[cx]), "y": float(r[cy]), "front": i in front}
                      for i, (_, r) in enumerate(g.iterrows())]
    return {"x": x, "y": y, "panels": out}


def _py(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


# --------------------------------------------------------------------------------------------
# figures


def _scale(values: Sequence[float], metric: Metric | None) -> tuple[bool, float | None]:
    """(log axis?, the value zero is drawn at): log when the metric asks for it or its positive
    values span two decades or more, and no value is negative."""
    vals = [v for v in values if math.isfinite(v)]
    pos = [v for v in vals if v > 0]
    if not pos or any(v < 0 for v in vals):
        return False, None
    log = bool(metric is not None and metric.log_axis) or max(pos) / min(pos) >= 100
    if not log:
        return False, None
    floor = 10 ** math.floor(math.log10(min(pos)) - 1)
    return True, (floor if any(v == 0 for v in vals) else None)


def _decades(values: Sequence[float]) -> float:
    pos = [v for v in values if v > 0 and math.isfinite(v)]
    return math.log10(max(pos) / min(pos)) if pos else 0.0


def _log_axes(ax, logx: bool, xs: Sequence[float], logy: bool, ys: Sequence[float]) -> None:
    """Log axes: a tick per decade when the values span one or more, else matplotlib's own
    (which labels the ticks inside a decade)."""
    if logx:
        ax.set_xscale("log")
        if _decades(xs) >= 1:
            ax.xaxis.set_major_locator(LogLocator(base=10, numticks=12))
            ax.xaxis.set_minor_locator(NullLocator())
    if logy:
        if _decades(ys) >= 1:
            log_y(ax)
        else:
            ax.set_yscale("log")


def _axis_label(family: str, name: str, log: bool, floor: float | None) -> str:
    text = _header(family, name)
    if log:
        text += " (log scale" + (f"; 0 drawn at {floor:g})" if floor is not None else ")")
    return text


def _at_floor(values: Sequence[float], floor: float | None) -> list[float]:
    return [floor if floor is not None and v == 0 else v for v in values]


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _grid(n: int, height: float = 3.4):
    cols = min(n, 2)
    rows = math.ceil(n / cols)
    fig = figure(figsize=(10.0, 0.6 + height * rows))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def tradeoff_figure(data: SiteData, family: str, points: dict[str, Any], title: str) -> str | None:
    """The trade-off plot (base64 PNG): each cell a point in its strategy's colour and marker,
    the Pareto front a dashed black line through the ringed points.  None without points."""
    panels = {p: pts for p, pts in list(points["panels"].items())[:MAX_PANELS] if pts}
    if not panels:
        return None
    x, y = points["x"], points["y"]
    allx = [pt["x"] for pts in panels.values() for pt in pts]
    ally = [pt["y"] for pts in panels.values() for pt in pts]
    logx, fx = _scale(allx, _metric(family, x))
    logy, fy = _scale(ally, _metric(family, y))
    fig, axes = _grid(len(panels))
    seen: dict[str, Any] = {}
    for ax, (panel, pts) in zip(axes, panels.items()):
        for lab in dict.fromkeys(pt["label"] for pt in pts):
            mine = [pt for pt in pts if pt["label"] == lab]
            color, _, marker = _style(data, family, lab)
            h = ax.scatter(_at_floor([p["x"] for p in mine], fx), _at_floor([p["y"] for p in mine], fy),
                           color=color, marker=marker, s=36, zorder=3, label=lab)
            seen.setdefault(lab, h)
        front = [pt for pt in pts if pt["front"]]
        front.sort(key=lambda p: (p["x"], p["y"]))
        if front:
            fxs, fys = _at_floor([p["x"] for p in front], fx), _at_floor([p["y"] for p in front], fy)
            # the boundary of the region the front dominates
            steps = "steps-pre" if _maximise(family, x) else "steps-post"
            ax.plot(fxs, fys, color="black", linestyle="--", linewidth=1, drawstyle=steps, zorder=2)
            ax.scatter(fxs, fys, facecolors="none", edgecolors="black", s=110, linewidths=1, zorder=4)
        _log_axes(ax, logx, allx, logy, ally)
        ax.set_xlabel(_axis_label(family, x, logx, fx), fontsize=8)
        ax.set_ylabel(_axis_label(family, y, logy, fy), fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if panel != "all":
            ax.set_title(panel, fontsize=9)
    front_handle = fig.axes[0].plot([], [], color="black", linestyle="--", linewidth=1)[0]
    fig.legend([*seen.values(), front_handle], [*seen.keys(), "Pareto front"], loc="outside right upper",
               fontsize=7)
    fig.suptitle(title, fontsize=10)
    return _png(fig)


def trend_figure(data: SiteData, family: str, series: dict[str, Any]) -> str | None:
    """The headline metric over the nights (base64 PNG): one panel per coordinate value, one
    line per strategy in its colour.  None without values."""
    panels = {p: s for p, s in list(series["panels"].items())[:MAX_PANELS] if s}
    if not panels:
        return None
    nights = series["nights"]
    pos = {n: i for i, n in enumerate(nights)}
    values = [v for s in panels.values() for pts in s.values() for _, v in pts]
    logy, floor = _scale(values, _metric(family, series["metric"]))
    fig, axes = _grid(len(panels), 3.0)
    seen: dict[str, Any] = {}
    for ax, (panel, by_label) in zip(axes, panels.items()):
        for lab, pts in by_label.items():
            color, line, marker = _style(data, family, lab)
            h, = ax.plot([pos[n] for n, _ in pts], _at_floor([v for _, v in pts], floor), color=color,
                         linestyle=line, marker=marker, markersize=4, linewidth=1.2, label=lab)
            seen.setdefault(lab, h)
        step = max(1, math.ceil(len(nights) / 8))
        ax.set_xticks(range(0, len(nights), step))
        ax.set_xticklabels([nights[i][:10] for i in range(0, len(nights), step)], fontsize=7, rotation=20)
        ax.set_xlim(-0.3, max(len(nights) - 0.7, 0.3))
        _log_axes(ax, False, [], logy, values)
        ax.set_ylabel(_axis_label(family, series["metric"], logy, floor), fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(alpha=0.3)
        if panel != "all":
            ax.set_title(panel, fontsize=9)
    fig.legend(list(seen.values()), list(seen.keys()), loc="outside right upper", fontsize=7)
    fig.suptitle(f"{_header(family, series['metric'])} over the nights", fontsize=10)
    return _png(fig)


def curves_figure(data: SiteData, family: str, curves: Sequence[Curve], largest: int | None,
                  title: str) -> str | None:
    """The latest night's capacity against workers (base64 PNG): a line per strategy in its colour
    and marker, its skew ceiling ringed, the linear ideal and the hottest key's limit dashed
    (:func:`skewbench.present.plotting.draw_capacity`).  None without curves."""
    if not curves:
        return None
    width, height = 10.0, 4.2
    fig = plain_figure(width, height)
    fig.subplots_adjust(left=0.85 / width, right=1 - 2.4 / width, top=1 - 0.45 / height, bottom=0.55 / height)
    ax = fig.add_subplot(1, 1, 1)
    style = {c.label: (_style(data, family, c.label)[0], _style(data, family, c.label)[2]) for c in curves}
    handles = draw_capacity(ax, curves, style, largest)
    fig.legend(list(handles.values()), list(handles), loc="upper right", bbox_to_anchor=(1.0, 1 - 0.4 / height),
               fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=10)
    return _png(fig)


def capacity_trend_figure(data: SiteData, family: str, series: dict[str, Any]) -> str | None:
    """Each strategy's capacity at its skew ceiling over the nights (base64 PNG): a line per
    strategy, a filled marker on a night with a ceiling, an open one where the curve still grew
    at its largest n.  None without values."""
    from matplotlib.lines import Line2D

    lines = series["lines"]
    if not lines:
        return None
    nights = series["nights"]
    pos = {n: i for i, n in enumerate(nights)}
    values = [v for pts in lines.values() for _, v, _ in pts]
    logy, floor = _scale(values, None)
    width, height = 10.0, 3.2
    fig = plain_figure(width, height)
    fig.subplots_adjust(left=0.85 / width, right=1 - 2.8 / width, top=1 - 0.45 / height, bottom=0.65 / height)
    ax = fig.add_subplot(1, 1, 1)
    handles: dict[str, Any] = {}
    for lab, pts in lines.items():
        color, line, marker = _style(data, family, lab)
        xs, ys = [pos[n] for n, _, _ in pts], _at_floor([v for _, v, _ in pts], floor)
        handles[lab], = ax.plot(xs, ys, color=color, linestyle=line, marker=marker, markersize=5, linewidth=1.2)
        grows = [(x, y) for (x, y), (_, _, c) in zip(zip(xs, ys), pts) if c is None]
        if grows:
            ax.scatter([x for x, _ in grows], [y for _, y in grows], marker=marker, s=30, facecolors="white",
                       edgecolors=color, linewidths=1.2, zorder=4)
    handles["open: no ceiling (at the curve's largest n)"] = Line2D([], [], color="0.3", marker="o",
                                                                    markerfacecolor="white", linestyle="none")
    step = max(1, math.ceil(len(nights) / 8))
    ax.set_xticks(range(0, len(nights), step))
    ax.set_xticklabels([nights[i][:10] for i in range(0, len(nights), step)], fontsize=7, rotation=20)
    ax.set_xlim(-0.3, max(len(nights) - 0.7, 0.3))
    _log_axes(ax, False, [], logy, values)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_number(v)))
    ax.set_ylabel("capacity at the skew ceiling, tuples/s" + (" (log)" if logy else ""), fontsize=8)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(alpha=0.3)
    fig.legend(list(handles.values()), list(handles), loc="upper right", bbox_to_anchor=(1.0, 1 - 0.4 / height),
               fontsize=7, frameon=False)
    fig.suptitle("Capacity at the skew ceiling over the nights", fontsize=10)
    return _png(fig)


def strategy_figure(data: SiteData, family: str, rows: list[dict[str, Any]]) -> str | None:
    """A strategy's headline metric on each dataset's latest night (base64 PNG): a dot per
    dataset and coordinate value, in the strategy's colour."""
    metric, coord = headline(family)
    pts = [r for r in rows if r["value"] is not None]
    if not pts:
        return None
    datasets = list(dict.fromkeys(r["dataset"] for r in pts))
    logx, floor = _scale([r["value"] for r in pts], _metric(family, metric))
    fig = figure(figsize=(9.0, 1.2 + 0.35 * len(datasets)))
    ax = fig.add_subplot(1, 1, 1)
    values = list(dict.fromkeys(r["coord"] for r in pts))
    markers = ["o", "s", "^", "D", "v", "P", "X", "*"]
    handles = {}
    for r in pts:
        color, _, _ = _style(data, family, r["label"])
        k = values.index(r["coord"])
        name = r["label"] + (f", {coord}={r['coord']}" if coord else "")
        h = ax.scatter(_at_floor([r["value"]], floor), [datasets.index(r["dataset"])], color=color,
                       marker=markers[k % len(markers)], s=40, zorder=3)
        handles.setdefault(name, h)
    ax.set_yticks(range(len(datasets)))
    ax.set_yticklabels(datasets, fontsize=8)
    ax.invert_yaxis()
    _log_axes(ax, logx, [r["value"] for r in pts], False, [])
    ax.set_xlabel(_axis_label(family, metric, logx, floor), fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(list(handles.values()), list(handles.keys()), fontsize=7, loc="best")
    return _png(fig)


# --------------------------------------------------------------------------------------------
# pages


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _img(b64: str | None, alt: str) -> str:
    if b64 is None:
        return f'<p class="note">No values to plot for {_esc(alt)}.</p>'
    return f'<figure><img alt="{_esc(alt)}" src="data:image/png;base64,{b64}"></figure>'


def _page(title: str, body: list[str], payload: dict[str, Any] | None = None) -> str:
    nav = '<nav><a href="index.html">Nights</a><a href="index.html#datasets">Datasets</a>' \
          '<a href="index.html#strategies">Strategies</a><a href="index.html#live">Live runs</a></nav>'
    data = ""
    if payload is not None:
        text = json.dumps(payload, sort_keys=True, default=str).replace("</", "<\\/")
        data = f'<script type="application/json" id="skewbench-data">{text}</script>'
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>'
            f"<style>{_CSS}</style></head><body>{nav}<h1>{_esc(title)}</h1>\n" + "\n".join(body) +
            f"\n{data}</body></html>\n")


def _table(headers: list[str], rows: list[list[str]], raw: bool = False, numeric_from: int = 99) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(
        f'<td{" class=num" if i >= numeric_from else ""}>{c if raw else _esc(c)}</td>'
        for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class _Names:
    """Unique page file names per dataset and per (family, strategy)."""

    def __init__(self) -> None:
        self.pages: dict[tuple[str, ...], str] = {}

    def _unique(self, key: tuple[str, ...], stem: str) -> str:
        if key not in self.pages:
            taken = set(self.pages.values())
            name, i = f"{stem}.html", 2
            while name in taken:
                name, i = f"{stem}-{i}.html", i + 1
            self.pages[key] = name
        return self.pages[key]

    def dataset(self, name: str) -> str:
        return self._unique(("dataset", name), f"dataset-{slug(name)}")

    def strategy(self, family: str, name: str) -> str:
        return self._unique(("strategy", family, name), f"strategy-{slug(family)}-{slug(name)}")


def _rank(values: dict[str, float], maximise: bool) -> dict[str, int]:
    ordered = sorted(values.items(), key=lambda kv: -kv[1] if maximise else kv[1])
    out, prev, rank = {}, None, 0
    for i, (lab, v) in enumerate(ordered, 1):
        if v != prev:
            rank, prev = i, v
        out[lab] = rank
    return out


def _headline_latest(data: SiteData, family: str, dataset: str, night: int) -> pd.DataFrame:
    """Mean headline metric per label (and headline coordinate) on a dataset's night."""
    metric, coord = headline(family)
    df = data.cells[family]
    df = df[(df["dataset"] == dataset) & (df["night"] == night)]
    by = ["strategy", "label"] + ([coord] if coord and coord in df.columns else [])
    return _mean(df, by, column(family, metric))


def _dataset_page(data: SiteData, dataset: str, names: _Names) -> str:
    body, payload = [], {"dataset": dataset, "families": {}}
    for family, df in data.cells.items():
        night = _latest_night(data, family, dataset)
        if night is None:
            continue
        metric, coord = headline(family)
        col = column(family, metric)
        maximise = _maximise(family, metric)
        body.append(f"<h2>{_esc(family)}</h2>")
        body.append(f'<p class="note">Latest night: {_esc(data.nights[night].label)} (run '
                    f'<code>{_esc(data.nights[night].run_id)}</code>); headline: {_esc(_header(family, metric))}'
                    f'{" at each " + _esc(coord) if coord else ""}, {"higher" if maximise else "lower"} is better.</p>')
        fam_payload: dict[str, Any] = {"night": data.nights[night].label, "tradeoffs": [], "colors": {}}
        body.append("<h3>Trade-offs on the latest night</h3>")
        for x, y, title in tradeoffs(family):
            pts = tradeoff_points(data, family, dataset, night, x, y)
            fam_payload["tradeoffs"].append({"title": title, **pts})
            body.append(_img(tradeoff_figure(data, family, pts, f"{dataset}: {title}"), title))
        body.append('<p class="note">Each point is a cell (mean over seeds); the ringed points joined by the '
                    'dashed line are the Pareto front (no other cell is at least as good on both axes).</p>')
        latest = _headline_latest(data, family, dataset, night)
        if not latest.empty:
            coords = sorted(latest[coord].unique(), key=_coord_value) if coord in latest.columns else [None]
            rows = []
            ranks = {c: _rank({r["label"]: r[col] for _, r in latest.iterrows() if c is None or r[coord] == c},
                              maximise) for c in coords}
            for (strategy, lab), g in latest.groupby(["strategy", "label"], sort=False):
                link = f'<a href="{names.strategy(family, strategy)}">{_esc(lab)}</a>'
                cells = []
                for c in coords:
                    hit = g if c is None else g[g[coord] == c]
                    cells.append(f"{fmt_number(hit[col].iloc[0])} (#{ranks[c][lab]})" if len(hit) else "–")
                rows.append([link, *cells])
            rows.sort(key=lambda r: r[0])
            heads = [f"{coord}={c}" for c in coords] if coord in latest.columns else [_header(family, metric)]
            body.append(f"<h3>{_esc(_header(family, metric))} on the latest night (rank)</h3>")
            body.append(_table(["strategy", *heads], rows, raw=True, numeric_from=1))
        series = trend_series(data, family, dataset)
        fam_payload["trend"] = series
        fam_payload["colors"] = {lab: _style(data, family, lab)[0] for s in series["panels"].values() for lab in s}
        body.append(f"<h3>{_esc(_header(family, metric))} over the nights</h3>")
        body.append(_img(trend_figure(data, family, series), f"{dataset} {family} trend"))
        body += _capacity_part(data, family, dataset, night, fam_payload)
        payload["families"][family] = fam_payload
    return _page(f"Dataset {dataset}", body, payload)


def _capacity_part(data: SiteData, family: str, dataset: str, night: int, fam_payload: dict[str, Any]) -> list[str]:
    """A dataset page's capacity curves of its latest night and the capacity at the skew ceiling over
    the nights (``#capacity-<family>``), when the family logs curves; the plotted values in the
    payload (``curves``, ``capacity_trend``)."""
    curves = data.curves.get(family, {}).get(dataset, [])
    if not curves:
        return []
    df = data.cells[family]
    at = df[(df["dataset"] == dataset) & (df["night"] == night)]
    largest = int(at[WORKERS].max()) if WORKERS in at.columns and len(at) else None
    names = ", ".join(c.label for c in curves)
    fam_payload["curves"] = [{"label": c.label, "workers": c.workers, "capacity": c.capacity,
                              "ceiling": list(c.ceiling) if c.ceiling else None, "key_limit": c.key_limit,
                              "setting": c.setting} for c in curves]
    trend = capacity_trend(data, family, dataset)
    fam_payload["capacity_trend"] = trend
    for lab in trend["lines"]:
        fam_payload["colors"].setdefault(lab, _style(data, family, lab)[0])
    return [f'<h3 id="capacity-{_esc(slug(family).lower())}">Capacity against workers on the latest night</h3>',
            _img(curves_figure(data, family, curves, largest, f"{dataset}: capacity against workers"),
                 f"{dataset} {family} capacity against workers: {names}"),
            f'<p class="note">Each strategy\'s first setting ({_esc(settings_text(curves))}); rings: the skew '
            "ceilings (capacity grows by little from there on); dashed: the linear ideal (n times one worker's "
            "capacity) and the hottest key's limit for the strategies that keep keys whole.</p>",
            "<h3>Capacity at the skew ceiling over the nights</h3>",
            _img(capacity_trend_figure(data, family, trend), f"{dataset} {family} capacity trend: "
                 + ", ".join(trend["lines"]))]


def _strategy_page(data: SiteData, family: str, strategy: str, names: _Names) -> str:
    metric, coord = headline(family)
    col = column(family, metric)
    df = data.cells[family]
    rows, table = [], []
    for dataset in sorted(df.loc[df["strategy"] == strategy, "dataset"].unique()):
        night = _latest_night(data, family, dataset)
        latest = _headline_latest(data, family, dataset, night)
        coords = sorted(latest[coord].unique(), key=_coord_value) if coord in latest.columns else [None]
        for c in coords:
            at = latest if c is None else latest[latest[coord] == c]
            ranks = _rank({r["label"]: r[col] for _, r in at.iterrows()}, _maximise(family, metric))
            for _, r in at[at["strategy"] == strategy].iterrows():
                rows.append({"dataset": dataset, "label": r["label"], "coord": _py(c) if c is not None else "",
                             "value": float(r[col]), "rank": ranks[r["label"]], "of": len(ranks),
                             "night": data.nights[night].label})
                table.append([f'<a href="{names.dataset(dataset)}">{_esc(dataset)}</a>', _esc(r["label"]),
                              _esc(c if c is not None else ""), fmt_number(r[col]),
                              f"{ranks[r['label']]} of {len(ranks)}", _esc(data.nights[night].label)])
    body = [f'<p class="note">Family {_esc(family)}; headline: {_esc(_header(family, metric))}'
            f'{" at each " + _esc(coord) if coord else ""} ({"higher" if _maximise(family, metric) else "lower"} is '
            "better), on each dataset's latest night, mean over seeds.</p>",
            _img(strategy_figure(data, family, rows), f"{strategy} across datasets"),
            _table(["dataset", "strategy", coord or "", _header(family, metric), "rank", "night"], table, raw=True,
                   numeric_from=3)]
    return _page(f"Strategy {strategy} ({family})", body,
                 {"family": family, "strategy": strategy, "rows": rows,
                  "colors": {lab: _style(data, family, lab)[0] for lab in {r["label"] for r in rows}}})


def _index_page(data: SiteData, names: _Names) -> str:
    fams = list(_families.families())
    rows = []
    for i in range(len(data.nights) - 1, -1, -1):
        n = data.nights[i]
        cells = []
        for f in fams:
            if f not in n.parents:
                cells.append("–")
                continue
            status = n.parents[f][1]
            df = data.cells.get(f)
            count = int((df["night"] == i).sum()) if df is not None else 0
            cells.append(f'<span class="{_esc(status)}">{_esc(status.lower())}</span>, {count} cells')
        datasets = sorted({d for df in data.cells.values() for d in df.loc[df["night"] == i, "dataset"]})
        rows.append([_esc(n.label), f"<code>{_esc(n.run_id)}</code>", *cells, str(len(datasets))])
    body = [f'<p class="note">Built from the MLflow store <code>{_esc(data.tracking_uri)}</code>: '
            f"{len(data.nights)} night(s), newest first.</p>",
            '<h2 id="nights">Nights</h2>',
            _table(["night", "run id", *fams, "datasets"], rows, raw=True)]
    body.append('<h2 id="datasets">Datasets</h2><ul class="cols">')
    for d in sorted({d for df in data.cells.values() for d in df["dataset"]}):
        body.append(f'<li><a href="{names.dataset(d)}">{_esc(d)}</a></li>')
    body.append('</ul><h2 id="strategies">Strategies</h2>')
    for f, df in data.cells.items():
        body.append(f"<h3>{_esc(f)}</h3><ul class=\"cols\">")
        order = list(dict.fromkeys(s for lab in data.colors[f] for s in
                                   df.loc[df["label"] == lab, "strategy"].unique()))
        for s in order:
            body.append(f'<li><a href="{names.strategy(f, s)}">{_esc(s)}</a></li>')
        body.append("</ul>")
    body.append('<h2 id="live">Live runs</h2>')
    if data.live:
        body.append(f'<p>{len(data.live)} live run(s) on real engines, simulated against measured: '
                    f'<a href="{LIVE_PAGE}">the live runs</a>.</p>')
    else:
        body.append('<p class="note">No live runs yet (the skewbench_live DAG, or skewbench live).</p>')
    payload = {"nights": [{"label": n.label, "dag_id": n.dag_id, "run_id": n.run_id,
                           "parents": {f: {"run_id": r, "status": s} for f, (r, s) in n.parents.items()}}
                          for n in reversed(data.nights)]}
    return _page("skewbench results across nights", body, payload)


#: the site's page of live runs, and how many of the newest finished ones it draws (older ones are listed)
LIVE_PAGE, LIVE_DRAWN = "live.html", 5


def _live_page(data: SiteData) -> str:
    """The live runs, newest first, and the figures of the newest finished ones: measured against
    predicted per engine and metric (:mod:`skewbench.present.livepage`, the live DAG's own page)."""
    from skewbench.present.livepage import INTRO, run_sections

    rows = [[_esc(e["night"]), f"<code>{_esc(e['dag_run'] or e['run_id'])}</code>",
             f'<span class="{_esc(e["status"])}">{_esc(e["status"].lower())}</span>', _esc(", ".join(e["datasets"])),
             _esc(e["engines"]), str(e["cells"])] for e in data.live]
    body = [INTRO, _table(["night", "run id", "status", "datasets", "engines", "nested runs"], rows, raw=True,
                          numeric_from=5)]
    drawn = [e for e in data.live if e["runs"]][:LIVE_DRAWN]
    if len(drawn) < sum(1 for e in data.live if e["runs"]):
        body.append(f'<p class="note">The figures of the {LIVE_DRAWN} newest finished live runs.</p>')
    for e in drawn:
        body.append(f"<h2>Live run of {_esc(e['night'])} (<code>{_esc(e['dag_run'] or e['run_id'])}</code>)</h2>")
        for run in e["runs"]:
            body += run_sections(run, heading="h3", links=False)
    return _page("Live runs: simulated vs measured", body)


def _write(out: Path, name: str, text: str) -> None:
    (out / name).write_text(text, encoding="utf-8")


def _replace(tmp: Path, out: Path) -> None:
    """Move the built site ``tmp`` to ``out`` (a former site there is removed after the move)."""
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.replace(out, old / "site")
        try:
            os.replace(tmp, out)
        except BaseException:
            os.replace(old / "site", out)
            raise
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out)


def build_site(out_dir: str | os.PathLike, tracking_uri: str | None = None,
               progress: Callable[[str], None] | None = None) -> Path:
    """Write the site of every night in the MLflow store ``tracking_uri`` (default: the
    configured one, :func:`skewbench.tracking.default_tracking_uri`) to ``out_dir``; returns
    ``out_dir``.  Raises :class:`SkewbenchError` when the store holds no night, or when
    ``out_dir`` exists and is not a site."""
    out = Path(out_dir).resolve()
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MARKER).exists())):
        raise SkewbenchError(f"{out} exists and is not a skewbench site (no {MARKER}); refusing to replace it")
    say = progress or (lambda _m: None)
    data = collect(tracking_uri, say)
    if not data.nights and not data.live:
        raise SkewbenchError(f"no nights in the MLflow store {data.tracking_uri}: no parent run tagged "
                             f"{DAG_TAG} and {RUN_TAG} (run the nightly pipeline first, e.g. make run)")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        names = _Names()
        datasets = sorted({d for df in data.cells.values() for d in df["dataset"]})
        for i, d in enumerate(datasets, 1):
            say(f"dataset page {i}/{len(datasets)}: {d}")
            _write(tmp, names.dataset(d), _dataset_page(data, d, names))
        strategies = [(f, s) for f, df in data.cells.items() for s in sorted(df["strategy"].unique())]
        for i, (f, s) in enumerate(strategies, 1):
            say(f"strategy page {i}/{len(strategies)}: {f} {s}")
            _write(tmp, names.strategy(f, s), _strategy_page(data, f, s, names))
        if data.live:
            say(f"live page: {len(data.live)} live run(s)")
            _write(tmp, LIVE_PAGE, _live_page(data))
        _write(tmp, "index.html", _index_page(data, names))
        (tmp / MARKER).write_text(f"built from {data.tracking_uri}\n", encoding="utf-8")
        tmp.chmod(0o755)
        _replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    say(f"site: {len(data.nights)} night(s), {len(datasets)} dataset page(s), {len(strategies)} strategy page(s)")
    return out
