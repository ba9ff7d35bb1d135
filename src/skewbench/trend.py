"""The nightly trend: each cell of a run against the same cell of the previous night.

Replays on the same inputs are deterministic, so a deterministic metric that moves between two
nights is a real change in the code or the data.  This module is pure (no MLflow); the lookup of
the previous nights is :func:`skewbench.tracking.trend`.

* The **trend key** of a cell names "the same cell" across nights: the family, the dataset's
  fingerprint, the strategy, the cell's coordinates and seed (the schema's param columns but the
  dataset's name) and the replay configuration (``c.*``), deliberately *without* the strategy's
  own parameters (``p.*``): a night whose strategy parameter changed is compared with the
  previous night's cell and reported as "changed" with the parameters and metrics that moved.
  Only when several cells of one run share that key (a strategy parameter with several values is
  a grid axis) are the parameters that tell them apart added to their keys.
* :func:`compare` judges two nights' metrics and params: every metric but the timing ones
  (``time.*``, which vary between runs) and the per-window series (``window.*``), each within its
  tolerance: exact (relative 1e-9, absolute 1e-12) unless the family's METRICS give the metric a
  ``trend_tolerance``.  Verdicts: ``new`` (no previous night), ``no change``, ``changed``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

NEW, SAME, CHANGED = "new", "no change", "changed"
#: MLflow tags of a cell's child run
KEY_TAG, VERDICT_TAG, PREVIOUS_TAG = "skewbench.trend_key", "skewbench.trend", "skewbench.trend_previous_run"
#: metrics that are not compared: timings vary between runs; window series and curves (capacity
#: against workers) are compared through their summaries (the final capacity, ceiling and the
#: rest), not through the value MLflow holds as a step metric's latest
IGNORED_PREFIXES = ("time.", "window.", "curve.")
#: params that are not part of the trend key: the strategy's parameters, the dataset's name
STRATEGY_PARAM_PREFIX = "p."
NOT_IN_KEY = ("dataset",)
#: params added after nights had been logged, at the value those nights implicitly had: left out
#: of the key at that value, so a cell keeps its history across the upgrade
IMPLICIT_PARAMS = {"metrics": "all", "c.latency": "true"}
_MAX_TAG = 4000


@dataclass(frozen=True)
class Tolerance:
    """Two values are the same when ``|a - b| <= max(abs, rel * max(|a|, |b|))``."""

    rel: float = 1e-9
    abs: float = 1e-12

    def same(self, a: float | None, b: float | None) -> bool:
        if a is None or b is None:
            return a is None and b is None
        a, b = float(a), float(b)
        if a == b or (math.isnan(a) and math.isnan(b)):
            return True
        if not (math.isfinite(a) and math.isfinite(b)):
            return False
        return abs(a - b) <= max(self.abs, self.rel * max(abs(a), abs(b)))


EXACT = Tolerance()


def tolerances(metrics: Iterable[Any]) -> dict[str, Tolerance]:
    """Per-metric tolerances from a family's METRICS (:class:`skewbench.results.Metric` with a
    ``trend_tolerance`` of (relative, absolute)); the others are exact."""
    out = {}
    for m in metrics:
        tol = getattr(m, "trend_tolerance", None)
        if tol is not None and getattr(m, "table", "summary") == "summary":
            out[m.name] = Tolerance(*tol)
    return out


# --------------------------------------------------------------------------------------------
# keys


def key_fields(family: str, params: Mapping[str, str]) -> dict[str, str]:
    """What identifies a cell across nights, from its logged params: every param but the
    strategy's own (``p.*``), the dataset's name and those at their :data:`IMPLICIT_PARAMS`
    value, plus the family."""
    out = {k: str(v) for k, v in params.items() if not k.startswith(STRATEGY_PARAM_PREFIX) and k not in NOT_IN_KEY
           and IMPLICIT_PARAMS.get(k) != str(v).lower()}
    out["family"] = family
    return dict(sorted(out.items()))


def key_hash(fields: Mapping[str, str]) -> str:
    """A short hash (16 hex digits) of a trend key's fields."""
    text = json.dumps(dict(sorted(fields.items())), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def trend_keys(family: str, cells: Sequence[Mapping[str, str]]) -> list[str]:
    """The trend key (hash) of each cell of one run, given each cell's params.  Cells sharing the
    key without their strategy parameters (a parameter axis) also get the parameters whose values
    differ among them."""
    base = [key_fields(family, p) for p in cells]
    groups: dict[str, list[int]] = {}
    for i, f in enumerate(base):
        groups.setdefault(key_hash(f), []).append(i)
    out = [key_hash(f) for f in base]
    for idx in groups.values():
        if len(idx) < 2:
            continue
        names = sorted({k for i in idx for k in cells[i] if k.startswith(STRATEGY_PARAM_PREFIX)})
        axes = [k for k in names if len({cells[i].get(k) for i in idx}) > 1]
        for i in idx:
            out[i] = key_hash({**base[i], **{k: str(cells[i].get(k)) for k in axes}})
    return out


# --------------------------------------------------------------------------------------------
# verdicts


@dataclass
class Verdict:
    """A cell against its previous night: ``status`` is :data:`NEW`, :data:`SAME` or :data:`CHANGED`;
    ``metrics`` and ``params`` list (name, previous, current) of what changed."""

    status: str
    metrics: list[tuple[str, float | None, float | None]] = field(default_factory=list)
    params: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    compared: int = 0

    @property
    def changed(self) -> bool:
        return self.status == CHANGED

    @property
    def text(self) -> str:
        """The ``skewbench.trend`` tag: ``new``, ``no change`` or ``changed: <metrics>[; params: <names>]``."""
        if self.status != CHANGED:
            return self.status
        parts = []
        if self.metrics:
            parts.append(", ".join(n for n, _, _ in self.metrics))
        if self.params:
            parts.append("params: " + ", ".join(n for n, _, _ in self.params))
        text = f"{CHANGED}: {'; '.join(parts)}"
        return text if len(text) <= _MAX_TAG else text[:_MAX_TAG - 3] + "..."

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "text": self.text, "compared": self.compared,
                "metrics": [list(m) for m in self.metrics], "params": [list(p) for p in self.params]}


def compared_metric(name: str) -> bool:
    return not name.startswith(IGNORED_PREFIXES)


def compare(previous: Mapping[str, Mapping[str, Any]] | None, current: Mapping[str, Mapping[str, Any]],
            tolerance: Mapping[str, Tolerance] | None = None) -> Verdict:
    """``current`` against ``previous`` (each ``{"metrics": {name: value}, "params": {name: text}}``;
    ``previous`` None: no previous night).  Timing (``time.*``), series (``window.*``) and curve
    (``curve.*``) metrics are ignored; a metric present on one side only is a change; so is any param that differs."""
    if previous is None:
        return Verdict(NEW)
    tolerance = tolerance or {}
    old_m = {k: v for k, v in (previous.get("metrics") or {}).items() if compared_metric(k)}
    new_m = {k: v for k, v in (current.get("metrics") or {}).items() if compared_metric(k)}
    moved = []
    for name in sorted(set(old_m) | set(new_m)):
        a, b = old_m.get(name), new_m.get(name)
        if not tolerance.get(name, EXACT).same(a, b):
            moved.append((name, None if a is None else float(a), None if b is None else float(b)))
    old_p, new_p = previous.get("params") or {}, current.get("params") or {}
    params = [(k, old_p.get(k), new_p.get(k)) for k in sorted(set(old_p) | set(new_p))
              if (None if old_p.get(k) is None else str(old_p.get(k))) != (None if new_p.get(k) is None
                                                                            else str(new_p.get(k)))]
    status = CHANGED if moved or params else SAME
    return Verdict(status, moved, params, len(set(old_m) | set(new_m)))


def summarize(verdicts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts per status and the changed cells (each verdict dict as :func:`skewbench.tracking.trend`
    returns them: dataset, cell, strategy, status, text, metrics, params)."""
    counts = {s: sum(1 for v in verdicts if v.get("status") == s) for s in (NEW, SAME, CHANGED)}
    changed = [{k: v.get(k) for k in ("dataset", "cell", "cell_id", "strategy", "text", "metrics", "params",
                                      "run_id", "previous_run")}
               for v in verdicts if v.get("status") == CHANGED]
    return {"cells": len(verdicts), **counts, "changed_cells": changed}


def describe(summary: Mapping[str, Any]) -> str:
    """One line: ``no change in N cells``, or the counts and the changed cells."""
    n, changed, new = summary.get("cells", 0), summary.get(CHANGED, 0), summary.get(NEW, 0)
    if not n:
        return "no cells"
    if not changed and not summary.get(SAME, 0):
        return f"{new} new cells (no previous night)"
    if not changed:
        return f"no change in {summary.get(SAME, 0)} cells" + (f" ({new} new)" if new else "")
    names = "; ".join(f"{c.get('dataset')} {c.get('cell')}: {c.get('text')}" for c in summary["changed_cells"])
    return f"{changed} of {n} cells changed ({summary.get(SAME, 0)} no change, {new} new): {names}"


# --------------------------------------------------------------------------------------------
# figure


def figure(history: Sequence[tuple[str, Mapping[str, float]]], metrics: Sequence[tuple[str, str]],
           out_path: str | os.PathLike, title: str = "") -> Path | None:
    """A small PNG of a cell's ``metrics`` ((name, label)) across nights, ``history`` being
    (night label, metrics) oldest first: one axes (cheap to draw: a nightly draws one per cell),
    each metric as a ratio to its value on the first night drawn (1 + the difference when that is
    0), its latest value in the legend.  None when no metric has a value."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    shown = [(n, lab) for n, lab in metrics if any(_finite(m.get(n)) for _, m in history)]
    if not shown:
        return None
    fig = Figure(figsize=(5.0, 3.0), dpi=72)
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=0.12, right=0.97, top=0.88, bottom=0.2)
    ax = fig.add_subplot(1, 1, 1)
    xs = list(range(len(history)))
    for name, label in shown:
        pts = [(x, float(m[name])) for x, (_, m) in zip(xs, history) if _finite(m.get(name))]
        base = pts[0][1]
        ys = [y / base if base != 0 else 1 + y - base for _, y in pts]
        ax.plot([x for x, _ in pts], ys, marker="o", markersize=3, linewidth=1, label=f"{label} ({pts[-1][1]:.4g})")
    step = max(1, math.ceil(len(xs) / 6))
    ax.set_xticks(xs[::step])
    ax.set_xticklabels([history[x][0] for x in xs[::step]], fontsize=6)
    ax.tick_params(axis="y", labelsize=6)
    ax.ticklabel_format(axis="y", useOffset=False)
    ax.set_ylabel(f"relative to {history[0][0]}", fontsize=7)
    ax.legend(fontsize=6, loc="best")
    if title:
        ax.set_title(title, fontsize=7)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png", dpi=fig.dpi)
    return out


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
