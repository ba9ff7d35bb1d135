"""Plotting helpers shared by the families' report figures (matplotlib's object API with the Agg
canvas only: nothing is displayed and no global backend is switched), and the labelling of a
summary's cells.

A strategy is labelled by its name plus the parameters that tell its cells apart (those with
several values at the same coordinates and seed, e.g. ``wc (eps=0.001)``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

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


