"""Plotting helpers shared by the families' report figures (matplotlib's object API with the Agg
canvas only: nothing is displayed and no global backend is switched), and the labelling of a
summary's cells.

A strategy is labelled by its name plus the parameters that tell its cells apart (those with
several values at the same coordinates and seed, e.g. ``wc (eps=0.001)``).

Capacity curves (a summary with :data:`CURVE_COLUMNS`): :func:`capacity_curves` reads each
strategy's first setting as a :class:`Curve`; :func:`draw_capacity` and :func:`draw_demand` draw
capacity against workers and the workers needed per target rate into an axis, for the overview
and the site alike.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator

from skewbench.results import json_dict

#: default figure size (inches) and resolution: PNGs are 900 x 540 pixels
FIGSIZE = (9.0, 5.4)
DPI = 100

TableLike = pa.Table | pd.DataFrame


def frame(t: TableLike | None) -> pd.DataFrame | None:
    if t is None:
        return None
    if isinstance(t, pa.Table):
        return t.to_pandas()
    if isinstance(t, pd.DataFrame):
        return t
    raise TypeError(f"expected a pyarrow Table or a pandas DataFrame, got {type(t).__name__}")


def _fmt_value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def with_labels(summary: pd.DataFrame, coordinates: Sequence[str] = ("workers", "sources")) -> pd.DataFrame:
    """``summary`` plus a ``label`` column: the strategy and the parameters that tell its cells
    apart (those with several values at the same coordinates and seed; parameters that only
    follow the worker count, such as W-C's default ``theta = 1/(5n)``, are not shown)."""
    df = summary.copy()
    if "dataset" not in df.columns:
        df["dataset"] = ""
    params = [json_dict(p) for p in (df["params"] if "params" in df.columns else [None] * len(df))]
    labels = list(df["strategy"].astype(str))
    coords = list(zip(df["dataset"], *[df[c] for c in coordinates], df["seed"]))
    for strategy in pd.unique(df["strategy"]):
        idx = [i for i, s in enumerate(df["strategy"]) if s == strategy]
        keys = sorted({k for i in idx for k in params[i]})
        varying = []
        for k in keys:
            values: dict[Any, set[str]] = {}
            for i in idx:
                values.setdefault(coords[i], set()).add(json.dumps(params[i].get(k), sort_keys=True, default=str))
            if any(len(v) > 1 for v in values.values()):
                varying.append(k)
        if varying:
            for i in idx:
                labels[i] = f"{strategy} (" + ", ".join(f"{k}={_fmt_value(params[i].get(k))}"
                                                         for k in varying) + ")"
    df["label"] = labels
    return df


def colors(labels: Iterable[str]) -> dict[str, tuple[str, str]]:
    """A (color, linestyle) per label, stable in the labels' order."""
    palette = [f"C{i}" for i in range(10)]
    styles = ["-", "--", ":", "-."]
    return {lab: (palette[i % 10], styles[(i // 10) % 4]) for i, lab in enumerate(dict.fromkeys(labels))}


def figure(figsize: tuple[float, float] = FIGSIZE, dpi: int = DPI) -> Figure:
    fig = Figure(figsize=figsize, dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def plain_figure(width: float, height: float, dpi: int = DPI) -> Figure:
    """A figure without a layout engine, its margins set by hand (``subplots_adjust``): about half
    the drawing time of :func:`figure`'s constrained layout."""
    fig = Figure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def save(fig: Figure, out_dir: str | os.PathLike, name: str) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    fig.savefig(path, format="png", dpi=fig.dpi)
    return path


def log_y(ax) -> None:
    """Log y axis with a tick per decade and no minor ticks (cheaper to lay out, easier to read)."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, numticks=12))
    ax.yaxis.set_minor_locator(NullLocator())


def readable_log_x(ax, lo: float, hi: float) -> None:
    """Plain-number ticks at 1, 2, 5 x 10^k on a log x axis spanning at most 3 decades."""
    if lo > 0 and hi > lo and np.log10(hi / lo) <= 3:
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(NullLocator())


def fmt_number(x: Any, kind: str = "g") -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if not np.isfinite(v):
        return "–" if np.isnan(v) else ("∞" if v > 0 else "−∞")
    if v == 0:
        return "0"
    if kind.startswith("f"):
        digits = int(kind[1:] or 3)
        return f"{v:,.{digits}f}" if abs(v) >= 10 ** -digits else f"{v:.2e}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 1e-3:
        return f"{v:.3g}"
    return f"{v:.2e}"




# --------------------------------------------------------------------------------------------
# capacity against workers (a family whose summary has a capacity curve, e.g. a sweep of n)

#: the summary's capacity curve (its worker counts, the capacity at each), the skew ceiling (the n and
#: the capacity there), the hottest key's limit, and the demand (target rates, fewest workers reaching
#: each, 0 for none): a results table with the first two columns has curves
CURVE_COLUMNS = ("scaling_workers", "scaling_capacity")
CEILING_COLUMNS = ("ceiling_workers", "ceiling_capacity")
KEY_LIMIT = "key_limit"
DEMAND_COLUMNS = ("demand_rates", "demand")
#: the cell coordinate the curve's worker counts stand for
WORKERS = "workers"


@dataclass
class Curve:
    """A strategy's (label's) capacity against workers on one dataset, in one setting (``setting``:
    its other coordinates and seed, e.g. ``sources=5, seed=0``)."""

    label: str
    workers: list[int]
    capacity: list[float]
    ceiling: tuple[int, float] | None = None
    key_limit: float | None = None
    rates: list[float] = field(default_factory=list)
    demand: list[int] = field(default_factory=list)
    setting: str = ""

    def at(self, n: int) -> float | None:
        """The curve's capacity at ``n`` workers (None when the curve has no such point)."""
        return next((c for w, c in zip(self.workers, self.capacity) if w == n), None)


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if np.isfinite(f) else None


def _values(v: Any) -> list:
    return [] if v is None or (isinstance(v, float) and np.isnan(v)) else list(v)


def has_curves(summary: pd.DataFrame) -> bool:
    """Whether a summary holds capacity curves (:data:`CURVE_COLUMNS`, some cell's non-empty)."""
    return (all(c in summary.columns for c in CURVE_COLUMNS)
            and any(len(_values(v)) for v in summary[CURVE_COLUMNS[0]]))


def capacity_curves(summary: pd.DataFrame, coordinates: Sequence[str]) -> list[Curve]:
    """One :class:`Curve` per strategy label of ``summary`` (in its order), from its first setting:
    the cell with the smallest other coordinates (than :data:`WORKERS`) and seed that has a curve.
    The ceiling, key limit and demand when the summary has their columns and the cell a value."""
    if not has_curves(summary):
        return []
    df = with_labels(summary, coordinates)
    df = df[[len(_values(v)) > 0 for v in df[CURVE_COLUMNS[0]]]]
    others = [c for c in coordinates if c != WORKERS and c in df.columns]
    order = list(dict.fromkeys(df["label"]))
    first = df.sort_values([*others, "seed", *([WORKERS] if WORKERS in df.columns else [])], kind="stable")
    out = []
    for label in order:
        r = first[first["label"] == label].iloc[0]
        ceiling = None
        if all(c in df.columns for c in CEILING_COLUMNS):
            n, cap = _num(r[CEILING_COLUMNS[0]]), _num(r[CEILING_COLUMNS[1]])
            ceiling = (int(n), cap) if n is not None and cap is not None else None
        rates, demand = [], []
        if all(c in df.columns for c in DEMAND_COLUMNS):
            rates = [float(x) for x in _values(r[DEMAND_COLUMNS[0]])]
            demand = [int(x) for x in _values(r[DEMAND_COLUMNS[1]])]
        out.append(Curve(str(label), [int(w) for w in _values(r[CURVE_COLUMNS[0]])],
                         [float(c) for c in _values(r[CURVE_COLUMNS[1]])], ceiling,
                         _num(r[KEY_LIMIT]) if KEY_LIMIT in df.columns else None, rates, demand,
                         ", ".join(f"{c}={_fmt_value(_plain(r[c]))}" for c in [*others, "seed"])))
    return out


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def settings_text(curves: Sequence[Curve]) -> str:
    """The curves' settings in a few words: the common one, and the labels whose setting differs."""
    if not curves:
        return ""
    common = Counter(c.setting for c in curves).most_common(1)[0][0]
    odd = [f"{c.label}: {c.setting}" for c in curves if c.setting != common]
    return common + (f" ({'; '.join(odd)})" if odd else "")


def _pow2_axis(axis, lo: float, hi: float) -> None:
    """Plain-number ticks at powers of 2 (every other one beyond 7 ticks) on a log axis."""
    ks = list(range(int(np.floor(np.log2(max(lo, 1)))), int(np.ceil(np.log2(max(hi, 1)))) + 1))
    step = 2 if len(ks) > 7 else 1
    axis.set_major_locator(FixedLocator([2.0 ** k for k in ks[::step]]))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    axis.set_minor_locator(NullLocator())


def one_worker(curves: Sequence[Curve]) -> float | None:
    """The capacity of one worker: the curves' median value at n = 1 (None when no curve has one)."""
    ones = [c.at(1) for c in curves if c.at(1) is not None]
    return float(np.median(ones)) if ones else None


def key_limits(curves: Sequence[Curve]) -> dict[float, list[str]]:
    """The distinct hottest-key limits of the curves (equal within 1e-9), each with its labels."""
    out: dict[float, list[str]] = {}
    for c in curves:
        if c.key_limit is None:
            continue
        v = next((k for k in out if abs(k - c.key_limit) <= 1e-9 * max(abs(k), 1.0)), c.key_limit)
        out.setdefault(v, []).append(c.label)
    return out


def draw_capacity(ax, curves: Sequence[Curve], style: Mapping[str, tuple[str, str]],
                  largest: int | None = None) -> dict[str, Any]:
    """Capacity against workers on log-log axes: a line per curve in its (colour, marker) of
    ``style``, its skew ceiling ringed; the linear ideal (:func:`one_worker` x n, thin dashed
    grey), each distinct hottest-key limit a dashed horizontal line, ``largest`` (the largest n
    replayed) a dotted vertical line.  Returns the legend's handles by name (the curves' labels
    first)."""
    from matplotlib.lines import Line2D

    handles: dict[str, Any] = {}
    xs = sorted({w for c in curves for w in c.workers})
    ys = [v for c in curves for v in c.capacity if v > 0]
    for c in curves:
        colour, marker = style.get(c.label, ("C7", "o"))
        pts = [(w, v) for w, v in zip(c.workers, c.capacity) if v > 0]
        handles[c.label], = ax.plot([w for w, _ in pts], [v for _, v in pts], color=colour, marker=marker,
                                    markersize=3.5, linewidth=1.3, zorder=3)
        if c.ceiling is not None:
            ax.scatter([c.ceiling[0]], [c.ceiling[1]], s=150, facecolors="none", edgecolors=colour,
                       linewidths=1.8, zorder=4)
    one = one_worker(curves)
    if one is not None and xs:
        # above the curves: the strategies that scale linearly lie on it
        ax.plot(xs, [one * n for n in xs], color="0.3", linestyle=(0, (3, 3)), linewidth=0.8, zorder=5)
        handles["linear ideal (n x one worker)"] = Line2D([], [], color="0.3", linestyle=(0, (3, 3)), linewidth=0.8)
    limits = key_limits(curves)
    for v in limits:
        ax.axhline(v, color="0.15", linestyle=(0, (6, 3)), linewidth=1.0, zorder=2)
        ax.annotate(f"hottest key's limit {fmt_number(v)}", (1.0, v), xycoords=("axes fraction", "data"),
                    xytext=(-3, 3), textcoords="offset points", ha="right", va="bottom", fontsize=7, color="0.15")
    if limits:
        handles["hottest key's limit"] = Line2D([], [], color="0.15", linestyle=(0, (6, 3)), linewidth=1.0)
    if any(c.ceiling for c in curves):
        handles["skew ceiling (ring)"] = Line2D([], [], color="0.3", marker="o", markersize=9, linestyle="none",
                                                markerfacecolor="none")
    if largest:
        ax.axvline(largest, color="0.6", linestyle=":", linewidth=1.0, zorder=1)
        handles[f"largest n replayed ({largest:,})"] = Line2D([], [], color="0.6", linestyle=":", linewidth=1.0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    if xs:
        _pow2_axis(ax.xaxis, xs[0], xs[-1])
        ax.set_xlim(xs[0] / 1.25, xs[-1] * 1.25)
    if ys:
        top = max([*ys, *limits]) * 1.6
        ax.set_ylim(min([*ys, *limits]) / 1.6, top)
        ax.yaxis.set_major_locator(LogLocator(base=10, numticks=8))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_number(v)))
        ax.yaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("workers n (log)", fontsize=8)
    ax.set_ylabel("capacity, tuples/s (log)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    return handles


#: the dodge between the strategies' markers at one rate (a factor on the log rate axis)
DODGE = 10 ** 0.018


def draw_demand(ax, curves: Sequence[Curve], style: Mapping[str, tuple[str, str]]) -> str:
    """Workers needed against the target rate (Theodolite's demand): a marker per curve and rate,
    joined per curve, side by side at each rate (:data:`DODGE`); a rate a curve never reaches is an
    open marker on the top row ("none").  Returns a note naming those, "" when every rate is
    reached (or no curve has a demand)."""
    withd = [c for c in curves if c.rates and len(c.rates) == len(c.demand)]
    if not withd:
        ax.text(0.5, 0.5, "no demand", transform=ax.transAxes, ha="center", va="center", fontsize=8)
        ax.set_axis_off()
        return ""
    grid = max(w for c in curves for w in c.workers) if any(c.workers for c in curves) else 1
    reached = [d for c in withd for d in c.demand if d > 0]
    top = 2.0 ** (np.ceil(np.log2(max([grid, *reached]))) + 1)
    rates = sorted({r for c in withd for r in c.rates})
    never: dict[str, list[float]] = {}
    for i, c in enumerate(withd):
        colour, marker = style.get(c.label, ("C7", "o"))
        shift = DODGE ** (i - (len(withd) - 1) / 2)
        x = [r * shift for r in c.rates]
        y = [d if d > 0 else top for d in c.demand]
        ok = [k for k, d in enumerate(c.demand) if d > 0]
        if ok:
            ax.plot([x[k] for k in ok], [y[k] for k in ok], color=colour, marker=marker, markersize=5,
                    linewidth=0.9, zorder=3)
        miss = [k for k, d in enumerate(c.demand) if d <= 0]
        if miss:
            ax.scatter([x[k] for k in miss], [top] * len(miss), s=30, marker=marker, facecolors="none",
                       edgecolors=colour, linewidths=1.2, zorder=3)
            never[c.label] = [c.rates[k] for k in miss]
    ax.axhline(np.sqrt(top * top / 2), color="0.7", linewidth=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(rates)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_number(v)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(rates[0] / 1.6, rates[-1] * 1.6)
    ks = [2 ** k for k in range(0, int(np.log2(top)))]
    step = 2 if len(ks) > 7 else 1
    ax.set_yticks([*ks[::step], top])
    ax.set_yticklabels([f"{k:,}" for k in ks[::step]] + ["none"])
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_ylim(0.7, top * 1.5)
    ax.set_xlabel("target rate, tuples/s (log)", fontsize=8)
    ax.set_ylabel("workers needed (log)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    if not never:
        return ""
    return ("never reached with up to " + f"{grid:,} workers: "
            + ", ".join(f"{lab} ({' and '.join(fmt_number(r) for r in rs)} tuples/s)" for lab, rs in never.items()))
