"""The night's overview: one self-contained HTML page across every family of a run.

:func:`render_overview` reads the run's results directories (any families, any datasets) and
writes, top to bottom:

* a **status strip**: datasets, families, cells, failed tasks, and the trend verdicts against the
  previous night (the changed cells listed first);
* **what to pick**: computed from the numbers by :func:`skewbench.present.picks.night_picks` (each
  family's ``report.PICK_RULES``), one table per family (:func:`pick_table`): its rules said once
  above it, a row per dataset, a column per rule (kind of operator) and value of the rule's
  coordinates, in each cell the picked strategy and its metric's change against the engine
  default, the pick's sentence on hover; every sentence below the table, folded;
  below it, for a family whose results have capacity curves, the strategies whose skew ceiling
  lies below the night's largest worker count (:func:`ceiling_line`);
* **how many workers** (a family whose results have capacity curves,
  :data:`skewbench.present.plotting.CURVE_COLUMNS`): per dataset, each strategy's capacity
  against workers (its first setting; log-log, its skew ceiling ringed, the linear ideal and the
  hottest key's limit dashed) beside the workers it needs per target rate (:func:`capacity_figure`);
* per family, a **leaderboard** across datasets: a strategy x dataset heatmap of the family's
  ``report.LEADERBOARD`` metric (mean over seeds), one heatmap per value of its coordinate, the
  best cell of each dataset marked;
* per family and dataset, the **trade-off plots** of the family's ``report.TRADEOFFS`` (x, y,
  title): one point per strategy, its mean over seeds, in one panel per value of the
  coordinates the family's first pick rule makes a pick for (its ``per``; other coordinates are
  averaged with the seeds), with the Pareto front (:func:`pareto_front`) drawn.

A family that declares none of these gets defaults (its first headline metric as leaderboard,
no trade-off plot).  Colours follow :func:`skewbench.present.plotting.colors` over the family's strategy
table, so a strategy keeps its colour in every figure of the page and across nights; axes are
logarithmic where the values span more than two decades (or the metric says so), 0 drawn at the
floor with a note.  Images are inlined as base64 PNG; the page links only to its own anchors, and,
when a live run exists for the night's datasets, to its "simulated vs measured" page in MLflow.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from skewbench import __version__
from skewbench import families as _families
from skewbench.errors import SkewbenchError
from skewbench.present.plotting import (DPI, WORKERS, Curve, capacity_curves, colors, draw_capacity, draw_demand,
                                        fmt_number, has_curves, settings_text, with_labels)
from skewbench.results import load_results, schema, slug

__all__ = ["capacity_figure", "ceiling_line", "ceilings", "how_many_workers", "pareto_front", "pick_table",
           "render_overview", "what_to_pick"]

GOALS = ("min", "max")
#: a log axis when the positive values span more than this ratio
LOG_SPAN = 100.0
#: unchanged cells listed under the status strip (folded)
_TREND_ROWS = 300


# --------------------------------------------------------------------------------------------
# Pareto front


def pareto_front(points: Sequence[tuple[float, float]], x_goal: str = "min", y_goal: str = "min") -> list[int]:
    """Indices of the points no other point dominates, sorted by x then y.

    A point dominates another when it is at least as good on both axes and better on one
    (``x_goal``/``y_goal``: ``"min"`` or ``"max"``).  Equal points do not dominate each other:
    both are on the front.  Points with a missing or non-finite coordinate are left out."""
    for g in (x_goal, y_goal):
        if g not in GOALS:
            raise SkewbenchError(f"pareto_front: a goal is 'min' or 'max', got {g!r}")
    sx = 1.0 if x_goal == "min" else -1.0
    sy = 1.0 if y_goal == "min" else -1.0
    pts = []
    for i, (x, y) in enumerate(points):
        if _finite(x) and _finite(y):
            pts.append((i, sx * float(x), sy * float(y)))
    front = [i for i, x, y in pts
             if not any(x2 <= x and y2 <= y and (x2 < x or y2 < y) for j, x2, y2 in pts if j != i)]
    return sorted(front, key=lambda i: (float(points[i][0]), float(points[i][1]), i))


def _finite(v: Any) -> bool:
    try:
        return v is not None and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


# --------------------------------------------------------------------------------------------
# what the families declare


def _declared(family: str, name: str, default: Any) -> Any:
    if family not in _families.families():
        return default
    try:
        return _families.get(family).attr("report", name, default)
    except SkewbenchError:
        return default


def _metric(family: str, column: str):
    return schema(family).metrics.get(f"summary:{column}")


def _goal(family: str, column: str) -> str:
    m = _metric(family, column)
    return "max" if m is not None and m.higher_is_better else "min"


def _axis_label(family: str, column: str) -> str:
    m = _metric(family, column)
    return m.header if m is not None else column


def _leaderboard(family: str) -> tuple[str, str]:
    board = _declared(family, "LEADERBOARD", None)
    if board:
        return str(board[0]), str(board[1] or "")
    heads = [m.name for m in schema(family).headline if not m.timing]
    return (heads[0] if heads else ""), ""


def _per(family: str) -> tuple[str, ...]:
    """The coordinates the trade-off panels are split by: the first pick rule's ``per``, else
    none (every coordinate averaged with the seeds)."""
    rules = _declared(family, "PICK_RULES", ())
    coords = schema(family).coordinates
    if rules:
        return tuple(c for c in getattr(rules[0], "per", ()) if c in coords)
    return ()


#: a marker per :func:`skewbench.present.plotting.colors` line style (the 11th label on: another marker)
_MARKERS = {"-": "o", "--": "s", ":": "^", "-.": "D"}


def _strategy_colours(family: str, labels: Sequence[str]) -> dict[str, tuple[str, str]]:
    """One (colour, marker) per label of the family's night, in its strategy table's order (so
    a strategy keeps its colour in every figure of the page, and across nights that run the
    same strategies)."""
    try:
        from skewbench import registry

        order = {name: i for i, name in enumerate(registry.names(family))}
    except SkewbenchError:
        order = {}
    ranked = sorted(dict.fromkeys(labels), key=lambda lab: (order.get(lab.split(" ")[0], len(order)),
                                                           list(labels).index(lab)))
    return {lab: (c, _MARKERS.get(ls, "o")) for lab, (c, ls) in colors(ranked).items()}


# --------------------------------------------------------------------------------------------
# numbers


def _means(summary: pd.DataFrame, family: str, by: Sequence[str], columns: Sequence[str]) -> pd.DataFrame:
    """Mean over seeds (and the coordinates not in ``by``) per strategy label and ``by``."""
    coords = list(schema(family).coordinates)
    df = with_labels(summary, coords)
    df["_order"] = pd.factorize(df["label"])[0]
    by = list(dict.fromkeys(by))
    cols = [c for c in dict.fromkeys(columns) if c in df.columns and c not in by]
    for c in cols:
        df[c] = pd.to_numeric(df[c], errors="coerce")
    out = df.groupby(["_order", "label", *by], sort=True, dropna=False)[cols].mean().reset_index()
    return out.drop(columns="_order")


def _log_axis(values: Sequence[float], metric: Any) -> bool:
    pos = [float(v) for v in values if _finite(v) and float(v) > 0]
    if not pos or any(_finite(v) and float(v) < 0 for v in values):
        return False
    if metric is not None and getattr(metric, "log_axis", False):
        return True
    return max(pos) / min(pos) > LOG_SPAN


def _floor(values: Sequence[float]) -> float:
    pos = [float(v) for v in values if _finite(v) and float(v) > 0]
    return 10.0 ** math.floor(math.log10(min(pos)) - 1) if pos else 1e-9


# --------------------------------------------------------------------------------------------
# figures (PNG bytes)


def _figure(width: float, height: float):
    """A figure without a layout engine (margins set by hand: constrained layout doubled the
    drawing time of a page of small multiples)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def _plain_log(axis) -> None:
    """A log axis with a tick per decade and no minor ticks (cheaper to lay out)."""
    from matplotlib.ticker import LogLocator, NullLocator

    axis.set_major_locator(LogLocator(base=10, numticks=8))
    axis.set_minor_locator(NullLocator())


#: colours of the page's inline images: plots and heatmaps have few, so an 8-bit palette PNG keeps
#: them (no dithering) at about a third of the RGBA PNG's bytes, and the page appears within seconds
#: inside MLflow's artifact view (the night's overview went from 2.9 MB to about 1 MB)
PALETTE = 256


def _png(fig) -> bytes:
    """The figure as an 8-bit palette PNG (:data:`PALETTE` colours, deterministic)."""
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi)
    buf.seek(0)
    with Image.open(buf) as im:
        small = im.convert("RGB").quantize(colors=PALETTE, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    small.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _img(data: bytes, alt: str, cls: str, caption: str = "") -> str:
    b64 = base64.b64encode(data).decode("ascii")
    cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
    return (f'<figure class="{cls}"><img alt="{html.escape(alt)}" src="data:image/png;base64,{b64}">'
            f"{cap}</figure>")


def heatmap(table: pd.DataFrame, goal: str, title: str, value_label: str, log: bool) -> bytes:
    """A strategy (rows) x dataset (columns) heatmap of ``table``; each cell coloured by its place
    between its column's best (0) and worst (1) value (log scale when ``log``), the value written
    in it, the best of each column framed and starred."""
    from matplotlib.patches import Rectangle

    vals = table.to_numpy(dtype=float)
    rows, cols = vals.shape
    floor = _floor(vals.ravel())
    shown = np.where(np.isfinite(vals) & (vals <= 0), floor, vals) if log else vals
    score = np.full(vals.shape, np.nan)
    best_rows: list[list[int]] = []
    for j in range(cols):
        col = shown[:, j]
        ok = np.isfinite(col)
        if not ok.any():
            best_rows.append([])
            continue
        t = np.log10(col[ok]) if log else col[ok]
        best = t.min() if goal == "min" else t.max()
        worst = t.max() if goal == "min" else t.min()
        span = abs(worst - best)
        score[ok, j] = np.abs(t - best) / span if span > 0 else 0.0
        best_rows.append([i for i in range(rows) if ok[i] and score[i, j] == 0.0])
    width, height = max(5.0, 1.3 * cols + 2.8), max(2.6, 0.42 * rows + 1.7)
    fig = _figure(width, height)
    fig.subplots_adjust(left=min(0.4, 1.3 / width), right=0.86, top=1 - 0.45 / height, bottom=0.85 / height)
    ax = fig.add_subplot()
    im = ax.imshow(np.ma.masked_invalid(score), cmap="RdYlGn_r", vmin=0, vmax=1, aspect="auto")
    for i in range(rows):
        for j in range(cols):
            v = vals[i, j]
            dark = np.isfinite(score[i, j]) and (score[i, j] > 0.8 or score[i, j] < 0.1)
            ax.text(j, i, fmt_number(v) + (" ★" if i in best_rows[j] else ""), ha="center", va="center",
                    fontsize=8, fontweight="bold" if i in best_rows[j] else "normal",
                    color="white" if dark else "black")
        for j in range(cols):
            if i in best_rows[j]:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2))
    ax.set_xticks(range(cols))
    ax.set_xticklabels([str(c) for c in table.columns], rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(rows))
    ax.set_yticklabels([str(r) for r in table.index], fontsize=8)
    ax.set_title(title, fontsize=10)
    bar = fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02)
    bar.set_label(f"{value_label}: 0 = the dataset's best, 1 = its worst" + (" (log)" if log else ""), fontsize=7)
    if log and (np.isfinite(vals) & (vals <= 0)).any():
        fig.text(0.01, 0.01, f"log scale: 0 placed at {floor:g}", fontsize=7, color="0.4")
    bar.ax.tick_params(labelsize=7)
    return _png(fig)


def tradeoff(panels: list[tuple[str, pd.DataFrame]], x: str, y: str, family: str, title: str,
             colour: Mapping[str, tuple[str, str]]) -> tuple[bytes, str]:
    """One scatter panel per (panel title, means with ``label``, x, y): a point per strategy,
    the Pareto front as a dashed step line through its points (ringed).  Returns the PNG and a
    note (0 drawn at the floor of a log axis)."""
    xg, yg = _goal(family, x), _goal(family, y)
    allx = [v for _, d in panels for v in d[x]]
    ally = [v for _, d in panels for v in d[y]]
    logx, logy = _log_axis(allx, _metric(family, x)), _log_axis(ally, _metric(family, y))
    fx, fy = _floor(allx), _floor(ally)
    notes = []
    if logx and any(_finite(v) and float(v) == 0 for v in allx):
        notes.append(f"{x} = 0 drawn at {fx:g}")
    if logy and any(_finite(v) and float(v) == 0 for v in ally):
        notes.append(f"{y} = 0 drawn at {fy:g}")
    n = len(panels)
    ncols = min(n, 4)
    nrows = math.ceil(n / ncols)
    width, height = max(7.5, 3.6 * ncols + 1.8), 3.2 * nrows + 0.9
    fig = _figure(width, height)
    fig.subplots_adjust(left=0.8 / width, right=1 - 1.6 / width, top=1 - 0.95 / height, bottom=0.6 / height,
                        wspace=0.3, hspace=0.45)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    shown: dict[str, Any] = {}
    for k, (ptitle, d) in enumerate(panels):
        ax = axes[k // ncols][k % ncols]
        d = d[[_finite(a) and _finite(b) for a, b in zip(d[x], d[y])]]
        xs = [max(float(v), fx) if logx else float(v) for v in d[x]]
        ys = [max(float(v), fy) if logy else float(v) for v in d[y]]
        for lab, xv, yv in zip(d["label"], xs, ys):
            c, marker = colour.get(lab, ("C0", "o"))
            shown[lab] = ax.scatter([xv], [yv], color=c, marker=marker, s=36, zorder=3, label=lab)
        front = pareto_front(list(zip(d[x], d[y])), xg, yg)
        if front:
            fxv, fyv = [xs[i] for i in front], [ys[i] for i in front]
            ax.plot(fxv, fyv, linestyle="--", color="0.35", linewidth=1, zorder=2,
                    drawstyle="steps-post" if (xg == "min") == (yg == "min") else "steps-pre")
            ax.scatter(fxv, fyv, s=120, facecolors="none", edgecolors="0.2", linewidths=1, zorder=4)
        if logx:
            ax.set_xscale("log")
            _plain_log(ax.xaxis)
        if logy:
            ax.set_yscale("log")
            _plain_log(ax.yaxis)
        ax.set_title(ptitle, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
        if k // ncols == nrows - 1:
            ax.set_xlabel(_axis_label(family, x) + ("  (log)" if logx else ""), fontsize=8)
        if k % ncols == 0:
            ax.set_ylabel(_axis_label(family, y) + ("  (log)" if logy else ""), fontsize=8)
        if not len(d):
            ax.text(0.5, 0.5, "no values", transform=ax.transAxes, ha="center", va="center", fontsize=8)
    for k in range(n, nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    better = f"better: {'lower' if xg == 'min' else 'higher'} x, {'lower' if yg == 'min' else 'higher'} y"
    fig.suptitle(f"{title}\n({better}; dashed: the Pareto front, its points ringed)", fontsize=10)
    if shown:
        fig.legend(list(shown.values()), list(shown), loc="upper right", bbox_to_anchor=(1.0, 1 - 0.9 / height),
                   fontsize=7, frameon=False)
    return _png(fig), "; ".join(notes)


def capacity_figure(curves: Sequence[Curve], colour: Mapping[str, tuple[str, str]], largest: int | None,
                    title: str) -> tuple[bytes, str]:
    """One dataset's curves: capacity against workers (:func:`skewbench.present.plotting.draw_capacity`)
    beside the workers needed per target rate (:func:`~skewbench.present.plotting.draw_demand`), one
    legend.  Returns the PNG and the demand's note (the rates some strategy never reaches)."""
    width, height = 11.5, 3.8
    fig = _figure(width, height)
    fig.subplots_adjust(left=0.75 / width, right=1 - 2.5 / width, top=1 - 0.6 / height, bottom=0.65 / height,
                        wspace=0.28)
    grid = fig.add_gridspec(1, 2, width_ratios=[1.7, 1])
    cap, dem = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    handles = draw_capacity(cap, curves, colour, largest)
    note = draw_demand(dem, curves, colour)
    cap.set_title("capacity against workers", fontsize=9)
    dem.set_title("workers needed per target rate", fontsize=9)
    fig.suptitle(title, fontsize=10)
    fig.legend(list(handles.values()), list(handles), loc="upper right", bbox_to_anchor=(1.0, 1 - 0.55 / height),
               fontsize=7, frameon=False)
    return _png(fig), note


# --------------------------------------------------------------------------------------------
# how many workers: capacity curves, demand and skew ceilings (a family whose results have curves)

#: (strategy, dataset) ceilings listed in the line itself; more are folded under a count per strategy
CEILINGS_INLINE = 4


def _capacity_curves(family: str, tables: Sequence[tuple[str, pd.DataFrame]]) -> dict[str, list[Curve]]:
    """Each dataset's curves (:func:`skewbench.present.plotting.capacity_curves`), datasets without any left out."""
    coords = schema(family).coordinates if family in _families.families() else ()
    out = {ds: capacity_curves(s, coords) for ds, s in tables if not s.empty and has_curves(s)}
    order = list(_strategy_colours(family, [c.label for cs in out.values() for c in cs]))
    return {ds: sorted(c, key=lambda c: order.index(c.label)) for ds, c in out.items() if c}


def _largest_n(tables: Sequence[tuple[str, pd.DataFrame]]) -> int | None:
    """The night's largest worker count: the largest :data:`~skewbench.present.plotting.WORKERS` of the results."""
    ns = [pd.to_numeric(s[WORKERS], errors="coerce").max() for _, s in tables if WORKERS in s.columns and len(s)]
    ns = [int(n) for n in ns if _finite(n)]
    return max(ns) if ns else None


def ceilings(family: str, tables: Sequence[tuple[str, pd.DataFrame]]) -> tuple[int | None, list[tuple[str, Curve]]]:
    """(the night's largest n, [(dataset, curve)]): every strategy (its first setting) whose skew
    ceiling is below that n, in the family's strategy order, then the datasets' order."""
    largest = _largest_n(tables)
    curves = _capacity_curves(family, tables)
    if largest is None or not curves:
        return largest, []
    order = list(_strategy_colours(family, [c.label for cs in curves.values() for c in cs]))
    hits = [(ds, c) for ds, cs in curves.items() for c in cs if c.ceiling is not None and c.ceiling[0] < largest]
    hits.sort(key=lambda h: order.index(h[1].label))  # stable: the datasets' order within a strategy
    return largest, hits


def _ceiling_text(label: str, hits: Sequence[tuple[str, Curve]]) -> str:
    def one(ds: str, c: Curve) -> str:
        limit = f"; the hottest key's limit {fmt_number(c.key_limit)}" if c.key_limit is not None else ""
        return f"at n={c.ceiling[0]:,} on {_esc(ds)} ({fmt_number(c.ceiling[1])} tuples/s{_esc(limit)})"

    return f"<b>{_esc(label)}</b> " + ", ".join(one(ds, c) for ds, c in hits)


def ceiling_line(family: str, tables: Sequence[tuple[str, pd.DataFrame]]) -> str:
    """A family's skew ceilings below the night's largest n (:func:`ceilings`) in one line
    (``.ceilings``): each strategy, the n of its ceiling on each dataset, the capacity there and
    the hottest key's limit when the strategy keeps keys whole.  Beyond :data:`CEILINGS_INLINE`
    ceilings, the line names the strategies and counts their datasets, the ceilings folded below
    it.  "" when no ceiling is below that n."""
    largest, hits = ceilings(family, tables)
    if not hits:
        return ""
    by_label: dict[str, list[tuple[str, Curve]]] = {}
    for ds, c in hits:
        by_label.setdefault(c.label, []).append((ds, c))
    m = _metric(family, "ceiling_workers")
    title = f' title="{_esc(m.meaning)}"' if m is not None else ""
    head = (f'<a href="#{_anchor("how-many-workers", family)}">skew ceilings</a> below n={largest:,}, the '
            "night's largest (each strategy's first setting)")
    if len(hits) <= CEILINGS_INLINE:
        return (f'<p class="ceilings"{title}>{head}: '
                + "; ".join(_ceiling_text(lab, h) for lab, h in by_label.items()) + "</p>")
    datasets = len(tables)
    counts = ", ".join(f"<b>{_esc(lab)}</b> on {len(h)} of {datasets} dataset{'s' if datasets > 1 else ''}"
                       for lab, h in by_label.items())
    items = "".join(f"<li>{_ceiling_text(lab, h)}</li>" for lab, h in by_label.items())
    return (f'<details class="ceilings"{title}><summary>{head}: {counts}</summary>'
            f'<ul class="picks">{items}</ul></details>')


def how_many_workers(by_family: Mapping[str, Sequence[tuple[str, pd.DataFrame]]]) -> str:
    """The section "How many workers" (``#how-many-workers``): per family whose results have
    capacity curves, per dataset, :func:`capacity_figure` of each strategy's first setting.  "" when
    no family has curves."""
    out = []
    for fam, tables in by_family.items():
        curves = _capacity_curves(fam, tables)
        if not curves:
            continue
        largest = _largest_n(tables)
        colour = _strategy_colours(fam, [c.label for cs in curves.values() for c in cs])
        out.append(f'<h3 id="{_anchor("how-many-workers", fam)}">{_esc(fam)}</h3>')
        for ds, cs in curves.items():
            png, note = capacity_figure(cs, colour, largest, f"{fam} on {ds}: capacity and demand")
            alt = f"{fam} {ds} capacity against workers and demand: " + ", ".join(c.label for c in cs)
            cap = (f"each strategy's first setting ({settings_text(cs)}); rings: skew ceilings (capacity grows by "
                   "little from there on); dashed: the linear ideal, and the hottest key's limit for the "
                   "strategies that keep keys whole; demand: markers side by side at each rate")
            out.append(_img(png, alt, "capacity", cap + (f"; {note}" if note else "")))
    if not out:
        return ""
    return ('<section id="how-many-workers"><h2>How many workers</h2><p class="note">Per dataset, each '
            "strategy's capacity (the largest input rate its busiest worker keeps up with) as workers are "
            "added, and the fewest workers that reach each target rate.</p>" + "".join(out) + "</section>")


# --------------------------------------------------------------------------------------------
# the page

_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 1.5em auto; max-width: 1250px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { font-size: 1.3em; border-bottom: 1px solid #ccc;
padding-bottom: .2em; margin-top: 1.8em; } h3 { font-size: 1.1em; margin-top: 1.4em; }
.strip { display: flex; flex-wrap: wrap; gap: .6em; margin: 1em 0; }
.stat { border: 1px solid #ddd; border-radius: 6px; padding: .4em .8em; background: #fafafa; }
.stat b { font-size: 1.3em; display: block; } .stat.bad { background: #fdecea; border-color: #e0a9a3; }
.stat.warn { background: #fff6e0; border-color: #e6cf8f; } .stat.ok { background: #eef7ee; border-color: #a9d4a9; }
table { border-collapse: collapse; margin: .6em 0; font-size: .88em; }
th, td { border: 1px solid #ddd; padding: .2em .5em; text-align: left; } th { background: #f3f3f3; }
ul.picks { padding-left: 1.2em; margin: .2em 0 .6em; } ul.picks li { margin: .15em 0; }
.rule { color: #555; font-size: .9em; } p.rule { margin: .3em 0 0; }
.pick { font-weight: bold; } figure { margin: .8em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption, p.note { color: #666; font-size: .85em; } nav { margin: .8em 0; } nav a { margin-right: .8em; }
figure.heatmap { display: inline-block; vertical-align: top; margin-right: 1em; max-width: 48%; }
table.pick-table th, table.pick-table td { white-space: nowrap; } table.pick-table th { text-align: center; }
table.pick-table tbody th { text-align: left; font-weight: normal; } table.pick-table td { cursor: help; }
.versus { font-weight: normal; color: #555; font-size: .9em; } .gain { color: #555; }
.gain.better { color: #1a7f37; } .gain.worse { color: #b3261e; } .tie { color: #777; font-size: .9em; }
td.none, td.missing { color: #999; text-align: center; }
p.ceilings, details.ceilings { margin: .3em 0 .8em; font-size: .92em; }
details.ceilings > summary { cursor: pointer; }
figure.capacity img { max-width: 100%; }
details.pick-sentences { margin: .2em 0 .8em; } details.pick-sentences > summary { cursor: pointer; color: #555;
font-size: .9em; }
"""


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _anchor(*parts: str) -> str:
    return "-".join(slug(p).lower() for p in parts)


def _picks(results_dirs: Sequence[str | os.PathLike]) -> tuple[list[Any], str]:
    """The night's picks (:func:`skewbench.present.picks.night_picks`) and a note when there are none."""
    try:
        from skewbench.present.picks import night_picks
    except ImportError:
        return [], "no picks: skewbench.present.picks is not installed"
    try:
        return list(night_picks(list(results_dirs))), ""
    except SkewbenchError as e:
        return [], f"no picks: {e}"


def _pick_html(p: Any, rule: bool = True) -> str:
    """A pick's line, the rule beside it (``rule``) or left to a heading."""
    line = p.line() if hasattr(p, "line") else str(p)
    main, sep, tail = line.partition(" -- rule: ")
    return (f'<li class="pick-line"><span class="pick">{_esc(main)}</span>'
            + (f' <span class="rule">— rule: {_esc(tail)}</span>' if sep and rule else "") + "</li>")


def _picks_by_rule(lines: Sequence[Any]) -> str:
    """Pick lines grouped under their rule (said once, above them)."""
    out = []
    for rule in dict.fromkeys(p.rule for p in lines):
        mine = [p for p in lines if p.rule == rule]
        # the rule with the kind of operator it answers for and its constraint
        text = mine[0].rule_text() if hasattr(mine[0], "rule_text") else (getattr(rule, "text", "") or
                                                                         getattr(rule, "metric", ""))
        out.append(f'<p class="rule">rule: {_esc(text)}</p><ul class="picks">'
                   + "".join(_pick_html(p, rule=False) for p in mine) + "</ul>")
    return "".join(out)


#: what a cell of the pick tables says (once, above them)
_PICK_LEGEND = ("A row per dataset, a column per kind of operator and value of its coordinate; in each cell the "
                "strategy picked and its metric against the engine default's (−38%: 38% lower; ÷40: 40 times "
                "lower; ×2.1: 2.1 times higher), \"default\" when the engine default is the pick, \"no pick\" when "
                "no strategy meets the rule, – when not run. Hover over a cell for its figures; every pick in "
                "words below each table.")


def _coords_key(coords: Mapping[str, Any]) -> tuple:
    """Orders coordinate values: numbers by value, before any text."""
    return tuple((0, float(v), "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0.0, str(v))
                 for v in coords.values())


def _direction(p: Any) -> str:
    """"better" or "worse" when the pick's metric beats or trails the engine default's (which happens
    when the default does not meet the rule's constraints), else ""."""
    v, b = getattr(p, "value", None), getattr(p, "baseline_value", None)
    if p.strategy is None or p.strategy == p.rule.baseline or not _finite(v) or not _finite(b) or v == b:
        return ""
    return "better" if (v < b if p.rule.goal == "min" else v > b) else "worse"


def _pick_cell(picks: Sequence[Any]) -> str:
    """A table cell: each pick's strategy and its change against the engine default, its sentence on hover."""
    if not picks:
        return '<td class="pick-cell missing">–</td>'
    parts = []
    for p in picks:
        if p.strategy is None:
            parts.append('<span class="no-pick">no pick</span>')
            continue
        text = f"<b>{_esc(p.strategy)}</b>"
        if p.strategy == p.rule.baseline:
            text += ' <span class="gain">default</span>'
        elif p.change():
            cls = " ".join(c for c in ("gain", _direction(p)) if c)
            text += f' <span class="{cls}">{_esc(p.change())}</span>'
        if p.ties:
            text += f' <span class="tie">(= {_esc(", ".join(p.ties))})</span>'
        parts.append(text)
    cls = "pick-cell none" if all(p.strategy is None for p in picks) else "pick-cell"
    title = "\n".join(p.line(rule=False) for p in picks)
    return f'<td class="{cls}" title="{_esc(title)}">' + "<br>".join(parts) + "</td>"


def pick_table(picks: Sequence[Any], link: bool = False) -> str:
    """One family's picks (:class:`skewbench.present.picks.Pick`) as one compact HTML table: a row per
    dataset (in the order of the picks), a column per rule (headed by its kind of operator, else its
    metric, and the engine default it is compared with) and value of the rule's coordinates (``n=5``;
    numbers in order), in each cell the picked strategy and its metric's change against the engine
    default (:meth:`Pick.change`), "default" when the engine default is the pick, "no pick" when no strategy
    meets the rule, "–" when the dataset has no pick there; the pick's sentence in the cell's ``title``.
    ``link``: the dataset names link to their sections of the page.  "" without picks."""
    if not picks:
        return ""
    rules = list(dict.fromkeys(p.rule for p in picks))
    columns: dict[Any, list[tuple]] = {}
    heads: dict[tuple, str] = {}
    cells: dict[tuple, list[Any]] = {}
    for rule in rules:
        keys: dict[tuple, Any] = {}
        for p in picks:
            if p.rule == rule:
                keys.setdefault(tuple(p.coords.items()), p)
                cells.setdefault((p.dataset, rule, tuple(p.coords.items())), []).append(p)
        columns[rule] = sorted(keys, key=lambda k: _coords_key(dict(k)))
        heads.update({(rule, k): keys[k].coords_text() for k in keys})
    two_rows = any(k for ks in columns.values() for k in ks)
    first = {rule: next(p for p in picks if p.rule == rule) for rule in rules}
    top = [f'<th rowspan="{2 if two_rows else 1}">dataset</th>']
    for rule in rules:
        p = first[rule]
        versus = p.metric_label() + (f" vs {rule.baseline}" if rule.baseline else "")
        name = (f'{_esc(rule.kind)}<br><span class="versus">{_esc(versus)}</span>' if rule.kind
                else _esc(versus))
        top.append(f'<th class="rule-head" colspan="{len(columns[rule])}" title="{_esc(p.rule_text())}">{name}</th>')
    rows = ["<tr>" + "".join(top) + "</tr>"]
    if two_rows:
        rows.append("<tr>" + "".join(f"<th>{_esc(heads[(rule, k)] or 'all')}</th>"
                                     for rule in rules for k in columns[rule]) + "</tr>")
    body = []
    for ds in dict.fromkeys(p.dataset for p in picks):
        fam = next(p.family for p in picks if p.dataset == ds)
        name = f'<a href="#{_anchor(fam, ds)}">{_esc(ds)}</a>' if link else _esc(ds)
        body.append(f'<tr><th scope="row">{name}</th>'
                    + "".join(_pick_cell(cells.get((ds, rule, k), [])) for rule in rules for k in columns[rule])
                    + "</tr>")
    family = picks[0].family
    return (f'<table class="pick-table" id="{_anchor("picks", str(family))}"><thead>{"".join(rows)}</thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def what_to_pick(family: str, picks: Sequence[Any], link: bool = False) -> str:
    """A family's part of "What to pick": its name, its rules (once), :func:`pick_table` and, folded
    below it, every pick in words under its rule (``li.pick-line``).  "" without picks."""
    if not picks:
        return ""
    rules = "".join(f'<p class="rule">rule: {_esc(next(p for p in picks if p.rule == r).rule_text())}</p>'
                    for r in dict.fromkeys(p.rule for p in picks))
    return (f"<h3>{_esc(family)}</h3>{rules}{pick_table(picks, link)}"
            f'<details class="pick-sentences"><summary>the {len(picks)} picks in words, with their figures'
            f"</summary>{_picks_by_rule(picks)}</details>")


def _status(loaded: list, failures: Sequence[str], verdicts: Sequence[Mapping[str, Any]] | None) -> str:
    datasets = sorted({str((m.get("dataset") or {}).get("name", "?")) for _, m, _, _ in loaded})
    known = list(_families.families())
    fams = sorted(dict.fromkeys(str(m.get("family")) for _, m, _, _ in loaded),
                  key=lambda f: known.index(f) if f in known else len(known))
    cells = sum(s.num_rows for _, _, s, _ in loaded)
    parts = ['<div class="strip" id="status">',
             f'<div class="stat"><b>{len(datasets)}</b>datasets</div>',
             f'<div class="stat"><b>{len(fams)}</b>families ({_esc(", ".join(fams))})</div>',
             f'<div class="stat"><b>{cells}</b>cells</div>',
             f'<div class="stat {"bad" if failures else "ok"}"><b>{len(failures)}</b>failures</div>']
    changed: list[Mapping[str, Any]] = []
    if verdicts is not None:
        from skewbench.trend import CHANGED, NEW, SAME

        counts = {s: sum(1 for v in verdicts if v.get("status") == s) for s in (CHANGED, SAME, NEW)}
        changed = [v for v in verdicts if v.get("status") == CHANGED]
        parts.append(f'<div class="stat {"warn" if changed else "ok"}"><b>{counts[CHANGED]} changed</b>'
                     f'{counts[SAME]} no change, {counts[NEW]} new (trend vs previous night)</div>')
    else:
        parts.append('<div class="stat"><b>–</b>trend not computed</div>')
    parts.append("</div>")
    if failures:
        parts.append("<p><b>Failed:</b> " + ", ".join(_esc(f) for f in failures) + "</p>")
    if verdicts:
        def rows(vs):
            return "".join(f"<tr><td>{_esc(v.get('family', ''))}</td><td>{_esc(v.get('dataset', ''))}</td>"
                           f"<td>{_esc(v.get('cell', ''))}</td><td>{_esc(v.get('text', v.get('status', '')))}</td>"
                           "</tr>" for v in vs)

        head = "<thead><tr><th>family</th><th>dataset</th><th>cell</th><th>trend</th></tr></thead>"
        if changed:
            parts.append(f'<table id="trend-changed">{head}<tbody>{rows(changed)}</tbody></table>')
        rest = [v for v in verdicts if v.get("status") != CHANGED]
        if rest:
            parts.append(f"<details><summary>the other {len(rest)} cells</summary>"
                         f'<table id="trend-other">{head}<tbody>{rows(rest[:_TREND_ROWS])}</tbody></table>'
                         + (f'<p class="note">and {len(rest) - _TREND_ROWS} more</p>' if len(rest) > _TREND_ROWS
                            else "") + "</details>")
    return "\n".join(parts)


def _live_section(live: Sequence[Mapping[str, Any]]) -> str:
    """Links to the latest live run of each of the night's datasets that has one (its page of
    simulated against measured numbers, in the MLflow UI)."""
    items = "".join(f'<li><a class="live-link" href="{_esc(x["url"])}">{_esc(x["dataset"])}</a>: live run of '
                    f'{_esc(x.get("night", ""))} on {_esc(x.get("engines") or "?")}</li>' for x in live)
    return ('<section id="simulated-vs-measured"><h2>Simulated vs measured</h2><p class="note">The latest live run '
            "of these datasets: each strategy executed on a real engine with its own decisions, its measured "
            "throughput and latency against what the simulator predicts (skewbench live).</p>"
            f'<ul class="picks">{items}</ul></section>')


def render_overview(results_dirs: Sequence[str | os.PathLike], out_path: str | os.PathLike,
                    title: str = "skewbench overview", verdicts: Sequence[Mapping[str, Any]] | None = None,
                    failures: Sequence[str] | None = None, live: Sequence[Mapping[str, Any]] | None = None) -> Path:
    """Write the night's overview of ``results_dirs`` (every family of a run) to ``out_path``.

    ``verdicts``: the cells' trend verdicts (dicts as :func:`skewbench.tracking.trend` returns
    them, optionally with ``family``); ``failures``: names of failed tasks or replays; ``live``:
    links to the live runs of the night's datasets (``dataset``, ``url``, ``night``, ``engines``,
    as :func:`skewbench.present.livepage.live_links` gives them), a section when there is any."""
    loaded = load_results(results_dirs)
    failures = list(failures or [])
    by_family: dict[str, list[tuple[str, pd.DataFrame]]] = {}
    for _, m, s, _ in loaded:
        fam = str(m.get("family"))
        by_family.setdefault(fam, []).append((str((m.get("dataset") or {}).get("name", "?")), s.to_pandas()))
    known = list(_families.families())  # families in their registry order, then others
    by_family = dict(sorted(by_family.items(), key=lambda kv: known.index(kv[0]) if kv[0] in known else len(known)))
    picks, picks_note = _picks([p for p, _, _, _ in loaded])
    picks_at: dict[tuple[str, str], list[Any]] = {}
    for p in picks:
        picks_at.setdefault((str(p.family), str(p.dataset)), []).append(p)

    body = [f"<h1>{_esc(title)}</h1>", _status(loaded, failures, verdicts)]
    nav = ['<nav id="contents"><a href="#what-to-pick">what to pick</a>']
    if live:
        nav.append('<a href="#simulated-vs-measured">simulated vs measured</a>')
    workers = how_many_workers({f: t for f, t in by_family.items() if f in _families.families()})
    if workers:
        nav.append('<a href="#how-many-workers">how many workers</a>')
    nav += [f'<a href="#{_anchor(f)}">{_esc(f)}</a>' for f in by_family]
    body.append(" ".join(nav) + "</nav>")

    body.append('<section id="what-to-pick"><h2>What to pick</h2>')
    if picks_note:
        body.append(f'<p class="note">{_esc(picks_note)}</p>')
    if picks:
        body.append(f'<p class="note">{_esc(_PICK_LEGEND)}</p>')
    for fam, tables in by_family.items():
        lines = [p for ds, _ in tables for p in picks_at.get((fam, ds), [])]
        ceiling = ceiling_line(fam, tables) if fam in _families.families() else ""
        if lines:
            body.append(what_to_pick(fam, lines, link=fam in _families.families()))
        elif ceiling:
            body.append(f"<h3>{_esc(fam)}</h3>")
        body.append(ceiling)
    body.append("</section>")
    if live:
        body.append(_live_section(live))
    body.append(workers)

    for fam, tables in by_family.items():
        body.append(f'<h2 id="{_anchor(fam)}">{_esc(fam)}</h2>')
        if fam not in _families.families():
            body.append(f"<p>No layout for the family '{_esc(fam)}'.</p>")
            continue
        body += _family_section(fam, tables, picks_at)

    page = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>'
            f"<style>{_CSS}</style></head><body>\n" + "\n".join(body)
            + f'\n<p class="note">skewbench {_esc(__version__)}</p></body></html>\n')
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, out)
    return out


def _family_section(fam: str, tables: list[tuple[str, pd.DataFrame]], picks_at: Mapping) -> list[str]:
    out: list[str] = []
    metric, coord = _leaderboard(fam)
    tradeoffs = tuple(_declared(fam, "TRADEOFFS", ()))
    per = _per(fam)
    columns = [metric, *[c for t in tradeoffs for c in t[:2]]]
    means = {ds: _means(s, fam, [c for c in (coord, *per) if c], columns) if not s.empty else pd.DataFrame()
             for ds, s in tables}
    labels = list(dict.fromkeys(lab for d in means.values() if not d.empty for lab in d["label"]))
    colour = _strategy_colours(fam, labels)

    # leaderboard
    out.append(f'<h3 id="{_anchor(fam, "leaderboard")}">Leaderboard: {_esc(_axis_label(fam, metric))}</h3>')
    frames = []
    for ds, s in tables:
        lead = _means(s, fam, [coord] if coord else [], [metric]) if metric and not s.empty else pd.DataFrame()
        if not lead.empty and metric in lead.columns:
            frames.append(lead.assign(_ds=ds))
    if not metric or not frames:
        out.append("<p>No values.</p>")
    else:
        allm = pd.concat(frames, ignore_index=True)
        goal = _goal(fam, metric)
        log = _log_axis(list(allm[metric]), _metric(fam, metric))
        values = sorted(allm[coord].dropna().unique()) if coord else [None]
        datasets = [ds for ds, _ in tables]
        for v in values:
            sub = allm if v is None else allm[allm[coord] == v]
            table = sub.pivot_table(index="label", columns="_ds", values=metric, aggfunc="mean", dropna=False)
            table = table.reindex(index=[lab for lab in labels if lab in table.index] or list(table.index),
                                  columns=[d for d in datasets if d in table.columns])
            where = f" at {coord} = {fmt_number(v)}" if v is not None else ""
            ttl = f"{fam}: {_axis_label(fam, metric)}{where} ({'lower' if goal == 'min' else 'higher'} is better)"
            avg = [c for c in schema(fam).coordinates if c != coord]
            out.append(_img(heatmap(table, goal, ttl, metric, log), f"{fam} leaderboard {metric}{where}", "heatmap",
                            "mean over seeds" + (f" and {', '.join(avg)}" if avg else "")
                            + "; ★ and frame: the best strategy of each dataset"))

    # per dataset: picks and trade-offs
    for ds, summary in tables:
        out.append(f'<h3 id="{_anchor(fam, ds)}">{_esc(ds)}</h3>')
        lines = picks_at.get((fam, ds), [])
        if lines:
            out.append('<ul class="picks beside">' + "".join(_pick_html(p) for p in lines) + "</ul>")
        d = means[ds]
        if d.empty:
            out.append("<p>No cells.</p>")
            continue
        for x, y, ttl in tradeoffs:
            if x not in d.columns or y not in d.columns:
                out.append(f'<p class="note">{_esc(ttl)}: no column {_esc(x if x not in d.columns else y)}.</p>')
                continue
            if per:
                keys = d[list(per)].drop_duplicates().sort_values(list(per))
                panels = []
                for _, k in keys.iterrows():
                    sel = np.logical_and.reduce([d[c] == k[c] for c in per])
                    panels.append((", ".join(f"{c} = {fmt_number(k[c])}" for c in per), d[sel]))
            else:
                panels = [(ds, d)]
            panels = [(t, p) for t, p in panels
                      if any(_finite(a) and _finite(b) for a, b in zip(p[x], p[y]))]
            if not panels:
                out.append(f'<p class="note">{_esc(ttl)}: no strategy has both values on this dataset.</p>')
                continue
            png, note = tradeoff(panels, x, y, fam, f"{ds}: {ttl}", colour)
            avg = [c for c in schema(fam).coordinates if c not in per]
            cap = "one point per strategy: mean over seeds" + (f" and {', '.join(avg)}" if avg else "")
            out.append(_img(png, f"{fam} {ds} pareto {x} vs {y}", "pareto", cap + (f"; {note}" if note else "")))
    return out
