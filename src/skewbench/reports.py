"""Figures and reports of replay results (the results contract, :mod:`skewbench.results`).

Plot functions take one results directory's tables (a pyarrow ``Table`` or a pandas
``DataFrame`` each: ``summary``, ``series``), write PNG files into ``out_dir`` and return their
paths.  Each draws one figure per dataset and panel of sources (a single-scheduler strategy such
as OSG always runs with one source; it is drawn in every panel, labelled ``(1 source)``):

* :func:`plot_imbalance_vs_workers`  imbalance against the number of workers, one line per
  strategy (mean over seeds, min-max band), as in the D-Choices paper's figures;
* :func:`plot_imbalance_over_time`   cumulative imbalance along the stream, at one worker count;
* :func:`plot_latency_cdf`           the completion-time CDF of each strategy, at one worker count;
* :func:`plot_worker_loads`          per-worker load (head and tail part), one panel per strategy.

:func:`render_report` writes a self-contained HTML report of several results directories
(context header, a summary table and the figures of each, images inlined as base64);
:func:`render_markdown_summary` the same tables as plain text for a terminal.

Strategies are labelled by name, plus the parameters that vary between their cells (e.g.
``wc (eps=0.001)``).  Imbalance is ``max load - 1/n`` as a fraction of the stream's tuples
(``docs/results.md``); on log axes zero is drawn at :data:`IMBALANCE_FLOOR`.  Matplotlib is used
through its object API with the Agg canvas only: nothing is displayed and no global backend is
switched.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

from skewbench import __version__
from skewbench.errors import SkewbenchError

#: default figure size (inches) and resolution: PNGs are 900 x 540 pixels
FIGSIZE = (9.0, 5.4)
DPI = 100
#: zero imbalance is drawn at this value on log axes
IMBALANCE_FLOOR = 1e-7
#: completion times below this (ms) are drawn at it on log axes
LATENCY_FLOOR = 1e-3

IMBALANCE_LABEL = f"imbalance = max load − 1/n\n(fraction of tuples, log scale; 0 drawn at {IMBALANCE_FLOOR:g})"

TableLike = pa.Table | pd.DataFrame


# --------------------------------------------------------------------------------------------
# inputs


def _frame(t: TableLike | None) -> pd.DataFrame | None:
    if t is None:
        return None
    if isinstance(t, pa.Table):
        return t.to_pandas()
    if isinstance(t, pd.DataFrame):
        return t
    raise TypeError(f"expected a pyarrow Table or a pandas DataFrame, got {type(t).__name__}")


def _params(text: Any) -> dict[str, Any]:
    """A JSON object column value (params, stats) as a dict; anything else as {}."""
    from skewbench.tracking import json_dict

    return json_dict(text)


def _fmt_value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def _with_labels(summary: pd.DataFrame) -> pd.DataFrame:
    """``summary`` plus a ``label`` column: the strategy and the parameters that tell its cells
    apart (those with several values at the same workers, sources and seed; parameters that only
    follow the worker count, such as W-C's default ``theta = 1/(5n)``, are not shown)."""
    df = summary.copy()
    if "dataset" not in df.columns:
        df["dataset"] = ""
    params = [_params(p) for p in (df["params"] if "params" in df.columns else [None] * len(df))]
    labels = list(df["strategy"].astype(str))
    coords = list(zip(df["dataset"], df["workers"], df["sources"], df["seed"]))
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


def _panels(summary: pd.DataFrame) -> list[tuple[str, int, pd.DataFrame]]:
    """(dataset, sources, rows) for each figure: one per dataset and sources value of the
    multi-source strategies; single-source-only strategies join every panel at their s = 1."""
    df = _with_labels(summary)
    out = []
    for ds in pd.unique(df["dataset"]):
        d = df[df["dataset"] == ds]
        all_sources = set(int(s) for s in d["sources"])
        by_strategy = d.groupby("strategy", sort=False)["sources"].agg(lambda s: set(int(v) for v in s))
        fixed = {st for st, ss in by_strategy.items() if ss == {1} and len(all_sources) > 1}
        main = sorted(set(int(s) for s in d.loc[~d["strategy"].isin(fixed), "sources"])) or sorted(all_sources)
        for s in main:
            rows = d[((d["sources"] == s) & ~d["strategy"].isin(fixed)) | d["strategy"].isin(fixed)].copy()
            rows.loc[rows["sources"] != s, "label"] = rows["label"] + " (1 source)"
            out.append((str(ds), s, rows))
    return out


def _colors(labels: Iterable[str]) -> dict[str, tuple[str, str]]:
    """A (color, linestyle) per label, stable in the labels' order."""
    palette = [f"C{i}" for i in range(10)]
    styles = ["-", "--", ":", "-."]
    return {lab: (palette[i % 10], styles[(i // 10) % 4]) for i, lab in enumerate(dict.fromkeys(labels))}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("_") or "dataset"


def _pick_workers(rows: pd.DataFrame, workers: int | None) -> int | None:
    available = sorted(set(int(w) for w in rows["workers"]))
    if not available:
        return None
    if workers is None:
        return available[-1]
    if workers not in available:
        raise SkewbenchError(f"no cells with {workers} workers (available: {available})")
    return int(workers)


def _figure(figsize: tuple[float, float] = FIGSIZE, dpi: int = DPI) -> Figure:
    fig = Figure(figsize=figsize, dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, out_dir: str | os.PathLike, name: str) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    fig.savefig(path, format="png", dpi=fig.dpi)
    return path


def _log_y(ax) -> None:
    """Log y axis with a tick per decade and no minor ticks (cheaper to lay out, easier to read)."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, numticks=12))
    ax.yaxis.set_minor_locator(NullLocator())


def _readable_log_x(ax, lo: float, hi: float) -> None:
    """Plain-number ticks at 1, 2, 5 x 10^k on a log x axis spanning at most 3 decades."""
    if lo > 0 and hi > lo and np.log10(hi / lo) <= 3:
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(NullLocator())


def _sources_text(s: int) -> str:
    return f"{s} source" + ("" if s == 1 else "s")


# --------------------------------------------------------------------------------------------
# plots


def plot_imbalance_vs_workers(summary: TableLike, series: TableLike | None, out_dir: str | os.PathLike,
                              *, dpi: int = DPI) -> list[Path]:
    """Final imbalance against the number of workers, one line per strategy (mean over seeds,
    min-max band over seeds); one figure per dataset and sources."""
    paths = []
    for ds, s, rows in _panels(_frame(summary)):
        colors = _colors(rows["label"])
        fig = _figure(dpi=dpi)
        ax = fig.add_subplot()
        workers = sorted(set(int(w) for w in rows["workers"]))
        for label, g in rows.groupby("label", sort=False):
            agg = g.groupby("workers")["imbalance"].agg(["mean", "min", "max"]).sort_index()
            x = agg.index.to_numpy(dtype=float)
            c, ls = colors[label]
            ax.plot(x, np.maximum(agg["mean"], IMBALANCE_FLOOR), marker="o", color=c, linestyle=ls, label=label)
            if len(g) > len(agg):
                ax.fill_between(x, np.maximum(agg["min"], IMBALANCE_FLOOR), np.maximum(agg["max"], IMBALANCE_FLOOR),
                                color=c, alpha=0.15, linewidth=0)
        _log_y(ax)
        if len(workers) > 1 and workers[-1] / max(workers[0], 1) > 10:
            ax.set_xscale("log")
            ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(workers, [str(w) for w in workers])
        ax.set_xlabel("workers (n)")
        ax.set_ylabel(IMBALANCE_LABEL)
        ax.set_title(f"Imbalance vs workers — {ds}, {_sources_text(s)} (mean over seeds, band: min–max)")
        ax.grid(True, which="major", alpha=0.3)
        fig.legend(loc="outside right upper", fontsize="small")
        paths.append(_save(fig, out_dir, f"imbalance_vs_workers_{_slug(ds)}_s{s}.png"))
    return paths


def _series_with_labels(summary: pd.DataFrame, series: pd.DataFrame) -> pd.DataFrame:
    labels = summary[["dataset", "cell_id", "label"]]
    if "dataset" in series.columns:
        return series.merge(labels, on=["dataset", "cell_id"], how="inner")
    return series.merge(labels, on="cell_id", how="inner")


def plot_imbalance_over_time(summary: TableLike, series: TableLike, out_dir: str | os.PathLike,
                             *, workers: int | None = None, dpi: int = DPI) -> list[Path]:
    """Cumulative imbalance at the end of each window, one line per strategy (mean over seeds,
    min-max band), for ``workers`` (default: the largest worker count)."""
    ser, summ = _frame(series), _frame(summary)
    if ser is None:
        raise SkewbenchError("plot_imbalance_over_time needs the series table")
    if "dataset" not in ser.columns and "dataset" in summ.columns and summ["dataset"].nunique() > 1:
        raise SkewbenchError("series has no 'dataset' column but the summary holds several datasets: "
                             "add one, or plot one results directory at a time")
    paths = []
    for ds, s, rows in _panels(summ):
        n = _pick_workers(rows, workers)
        rows = rows[rows["workers"] == n]
        data = _series_with_labels(rows, ser)
        if data.empty:
            continue
        colors = _colors(rows["label"])
        fig = _figure(dpi=dpi)
        ax = fig.add_subplot()
        for label, g in data.groupby("label", sort=False):
            agg = g.groupby("window").agg(x=("seq_end", "max"), mean=("imbalance_cum", "mean"),
                                          lo=("imbalance_cum", "min"), hi=("imbalance_cum", "max")).sort_index()
            c, ls = colors[label]
            ax.plot(agg["x"], np.maximum(agg["mean"], IMBALANCE_FLOOR), color=c, linestyle=ls, label=label,
                    marker="." if len(agg) <= 30 else None)
            if g["seed"].nunique() > 1:
                ax.fill_between(agg["x"], np.maximum(agg["lo"], IMBALANCE_FLOOR),
                                np.maximum(agg["hi"], IMBALANCE_FLOOR), color=c, alpha=0.15, linewidth=0)
        _log_y(ax)
        ax.set_xlabel("tuples processed (end of window)")
        ax.set_ylabel(IMBALANCE_LABEL)
        ax.set_title(f"Cumulative imbalance along the stream — {ds}, n = {n}, {_sources_text(s)}")
        ax.grid(True, alpha=0.3)
        fig.legend(loc="outside right upper", fontsize="small")
        paths.append(_save(fig, out_dir, f"imbalance_over_time_{_slug(ds)}_s{s}_n{n}.png"))
    return paths


def plot_latency_cdf(summary: TableLike, series: TableLike | None, out_dir: str | os.PathLike,
                     *, workers: int | None = None, dpi: int = DPI) -> list[Path]:
    """Completion-time CDF of each strategy (from ``latency_cdf``: the completion times at
    quantiles 0, 0.01, ..., 1, averaged over seeds), for ``workers`` (default: the largest)."""
    q = np.linspace(0.0, 1.0, 101)
    paths = []
    for ds, s, rows in _panels(_frame(summary)):
        n = _pick_workers(rows, workers)
        rows = rows[rows["workers"] == n]
        if rows.empty:
            continue
        colors = _colors(rows["label"])
        fig = _figure(dpi=dpi)
        ax = fig.add_subplot()
        for label, g in rows.groupby("label", sort=False):
            curves = [np.asarray(v, dtype=float) for v in g["latency_cdf"] if v is not None and len(v) == len(q)]
            if not curves:
                continue
            x = np.maximum(np.mean(curves, axis=0), LATENCY_FLOOR)
            c, ls = colors[label]
            ax.plot(x, q, color=c, linestyle=ls, label=label, drawstyle="steps-post")
        ax.set_xscale("log")
        _readable_log_x(ax, *ax.get_xlim())
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("completion time (ms, log scale)")
        ax.set_ylabel("fraction of tuples completed within x")
        ax.set_title(f"Completion-time CDF — {ds}, n = {n}, {_sources_text(s)} (quantiles averaged over seeds)")
        ax.grid(True, which="both", alpha=0.3)
        fig.legend(loc="outside right upper", fontsize="small")
        paths.append(_save(fig, out_dir, f"latency_cdf_{_slug(ds)}_s{s}_n{n}.png"))
    return paths


def worker_loads_figsize(panels: int) -> tuple[float, float]:
    """Figure size (inches) of :func:`plot_worker_loads` with ``panels`` strategies."""
    ncols = min(4, max(panels, 1))
    nrows = -(-max(panels, 1) // ncols)
    return FIGSIZE[0], max(FIGSIZE[1], 2.6 * nrows + 1.0)


def plot_worker_loads(summary: TableLike, series: TableLike | None, out_dir: str | os.PathLike,
                      *, workers: int | None = None, seed: int | None = None, dpi: int = DPI) -> list[Path]:
    """Per-worker load (fraction of tuples; the true-head keys' part stacked under the tail's,
    workers sorted by load, a line at 1/n), one panel per strategy, for ``workers`` (default: the
    largest) and ``seed`` (default: the smallest)."""
    paths = []
    for ds, s, rows in _panels(_frame(summary)):
        n = _pick_workers(rows, workers)
        rows = rows[rows["workers"] == n]
        if rows.empty:
            continue
        sd = int(rows["seed"].min()) if seed is None else int(seed)
        rows = rows[rows["seed"] == sd]
        if rows.empty:
            raise SkewbenchError(f"no cells with seed {sd} and {n} workers")
        labels = list(dict.fromkeys(rows["label"]))
        ncols = min(4, len(labels))
        nrows = -(-len(labels) // ncols)
        fig = _figure(worker_loads_figsize(len(labels)), dpi=dpi)
        axes = fig.subplots(nrows, ncols, sharey=True, squeeze=False)
        for i, label in enumerate(labels):
            ax = axes[i // ncols][i % ncols]
            r = rows[rows["label"] == label].iloc[0]
            total = np.asarray(r["worker_tuples"], dtype=float)
            head = np.asarray(r["worker_head_tuples"] if r["worker_head_tuples"] is not None else np.zeros_like(total),
                              dtype=float)
            m = total.sum() or 1.0
            order = np.argsort(-total, kind="stable")
            # two filled step outlines, not 2n bar patches: drawing stays fast at n = 100s
            edges = np.arange(len(total) + 1) - 0.5
            ax.stairs(total[order] / m, edges, fill=True, color="C0", label="tail keys")
            ax.stairs(head[order] / m, edges, fill=True, color="C3", label="head keys")
            ax.axhline(1.0 / len(total), color="black", linestyle="--", linewidth=1, label="1/n")
            ax.set_title(f"{label}\nimbalance {_fmt(float(r['imbalance']))}", fontsize="medium")
            ax.set_xticks([])
            ax.set_xlabel("worker (sorted by load)")
            if i % ncols == 0:
                ax.set_ylabel("load (fraction of tuples)")
            ax.grid(True, axis="y", alpha=0.3)
        for j in range(len(labels), nrows * ncols):
            axes[j // ncols][j % ncols].set_visible(False)
        handles, names = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, names, loc="outside lower center", ncols=3, fontsize="small")
        fig.suptitle(f"Per-worker load — {ds}, n = {n}, {_sources_text(s)}, seed {sd}")
        paths.append(_save(fig, out_dir, f"worker_loads_{_slug(ds)}_s{s}_n{n}.png"))
    return paths


def plot_all(summary: TableLike, series: TableLike, out_dir: str | os.PathLike, *,
             workers: int | None = None, dpi: int = DPI) -> list[Path]:
    """Every figure of one results directory's tables."""
    s, t = _frame(summary), _frame(series)
    return (plot_imbalance_vs_workers(s, t, out_dir, dpi=dpi)
            + plot_imbalance_over_time(s, t, out_dir, workers=workers, dpi=dpi)
            + plot_latency_cdf(s, t, out_dir, workers=workers, dpi=dpi)
            + plot_worker_loads(s, t, out_dir, workers=workers, dpi=dpi))


# --------------------------------------------------------------------------------------------
# tables

#: summary table columns: (column, header, format: "g" 3 significant digits, "fN" N decimals)
TABLE_COLUMNS = (
    ("imbalance", "imbalance", "g"),
    ("latency_mean", "latency mean (ms)", "f2"),
    ("latency_p99", "latency p99 (ms)", "f2"),
    ("speedup_vs_rr", "speedup vs RR", "f3"),
    ("replication", "replication", "f2"),
)


def _fmt(x: Any, kind: str = "g") -> str:
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


def summary_table(summary: TableLike) -> pd.DataFrame:
    """One row per dataset, strategy label, workers and sources: the mean over seeds of the
    headline metrics (unformatted), with the number of seeds."""
    df = _with_labels(_frame(summary))
    df["_order"] = pd.factorize(df["label"])[0]
    cols = [c for c, _, _ in TABLE_COLUMNS if c in df.columns]
    g = df.groupby(["dataset", "_order", "label", "workers", "sources"], sort=True)
    out = g[cols].mean()
    out.insert(0, "seeds", g["seed"].nunique())
    return out.reset_index().drop(columns="_order")


def _formatted_rows(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    headers = ["strategy", "workers", "sources", "seeds"] + [h for c, h, _ in TABLE_COLUMNS if c in table.columns]
    rows = []
    for _, r in table.iterrows():
        rows.append([str(r["label"]), str(int(r["workers"])), str(int(r["sources"])), str(int(r["seeds"]))]
                    + [_fmt(r[c], kind) for c, _, kind in TABLE_COLUMNS if c in table.columns])
    return headers, rows


def _text_table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    numeric = [i >= 1 for i in range(len(headers))]

    def line(cells):
        return "| " + " | ".join(c.rjust(w) if num else c.ljust(w)
                                 for c, w, num in zip(cells, widths, numeric)) + " |"

    sep = "|" + "|".join(("-" * (w + 1) + ":") if num else ("-" * (w + 2)) for w, num in zip(widths, numeric)) + "|"
    return "\n".join([line(headers), sep] + [line(r) for r in rows])


# --------------------------------------------------------------------------------------------
# reports over results directories


def load_results(results_dirs: Sequence[str | os.PathLike] | str | os.PathLike
                 ) -> list[tuple[Path, dict, pa.Table, pa.Table]]:
    """(path, manifest, summary, series) of each results directory (one path or several)."""
    from skewbench.results import read_results

    if isinstance(results_dirs, (str, os.PathLike)):
        results_dirs = [results_dirs]
    out = []
    for d in results_dirs:
        m, s, t = read_results(d)
        out.append((Path(d), m, s, t))
    if not out:
        raise SkewbenchError("no results directories given")
    return out


def results_names(manifests: Sequence[Mapping[str, Any]]) -> list[str]:
    """A unique, path-safe name per results directory: the dataset's name, plus the family and
    then the fingerprint when needed to tell them apart (plots and artifacts go under it)."""
    def ds(m):
        return m.get("dataset") or {}

    names = [_slug(ds(m).get("name") or "dataset") for m in manifests]
    for extra in (lambda m: m.get("family", ""), lambda m: str(ds(m).get("fingerprint", ""))[:12]):
        dup = {n for n in names if names.count(n) > 1}
        names = [f"{n}-{_slug(extra(m))}" if n in dup else n for n, m in zip(names, manifests)]
    seen: dict[str, int] = {}
    unique = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        unique.append(n if seen[n] == 1 else f"{n}-{seen[n]}")
    return unique


def render_markdown_summary(results: Sequence[str | os.PathLike] | str | os.PathLike | TableLike) -> str:
    """The summary tables (mean over seeds) as Markdown text, one per results directory (or of
    one summary table)."""
    if isinstance(results, (pa.Table, pd.DataFrame)):
        blocks = [(None, _frame(results))]
    else:
        blocks = [(m, s.to_pandas()) for _, m, s, _ in load_results(results)]
    out = []
    for m, summary in blocks:
        if m is not None:
            d = m.get("dataset") or {}
            out.append(f"### {d.get('name', '?')} ({m.get('family', '?')}, "
                       f"fingerprint {str(d.get('fingerprint', '?'))[:12]}, {d.get('tuples', '?')} tuples)")
        if summary.empty:
            out.append("(no cells)")
        else:
            out.append(_text_table(*_formatted_rows(summary_table(summary))))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1100px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.3em; border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .8em 0; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; }
th { background: #f3f3f3; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.kv th { width: 14em; }
code { font-size: .95em; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
p.note { color: #666; font-size: .85em; }
"""


def _kv_table(items: Iterable[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td><code>{html.escape(str(v))}</code></td></tr>"
                   for k, v in items)
    return f'<table class="kv">{rows}</table>'


def _html_table(headers: list[str], rows: list[list[str]], numeric_from: int | None = 1) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(
        f'<td{" class=num" if numeric_from is not None and i >= numeric_from else ""}>{html.escape(c)}</td>'
        for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}">'
            f"</figure>")


def render_report(results_dirs: Sequence[str | os.PathLike], out_path: str | os.PathLike, title: str,
                  context: Mapping[str, Any] | None = None, *, plots_dir: str | os.PathLike | None = None,
                  workers: int | None = None) -> Path:
    """A self-contained HTML report of a run's results directories (datasets x families).

    ``context`` (run id, logical date, git commit, ...) is shown in the header with each
    dataset's fingerprint.  Figures are written under ``plots_dir/<name>/`` (see
    :func:`results_names`; default: a temporary directory, removed) and inlined as base64 PNG.
    """
    loaded = load_results(results_dirs)
    names = results_names([m for _, m, _, _ in loaded])
    out_path = Path(out_path)
    with tempfile.TemporaryDirectory(prefix="skewbench-report-") as tmp:
        plot_root = Path(plots_dir) if plots_dir is not None else Path(tmp)
        parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
                 f"<h1>{html.escape(title)}</h1>"]
        header = [(k, v) for k, v in (context or {}).items()]
        header.append(("skewbench", __version__))
        parts.append(_kv_table(header))
        ds_rows = []
        for (path, m, s, _), name in zip(loaded, names):
            d = m.get("dataset") or {}
            ds_rows.append([str(d.get("name", "?")), str(m.get("family", "?")), str(d.get("fingerprint", "?")),
                            str(d.get("tuples", "?")), str(s.num_rows), str(path)])
        parts.append("<h2>Datasets</h2>")
        parts.append(_html_table(["dataset", "family", "fingerprint", "tuples", "cells", "results"], ds_rows,
                                 numeric_from=None))
        parts.append(f'<p class="note">Imbalance: max load − 1/n as a fraction of the tuples (log axes draw 0 at '
                     f'{IMBALANCE_FLOOR:g}); completion time: queueing + execution, in ms; speedup vs RR: '
                     f'total completion time of round robin on the same arrivals over the strategy\'s; '
                     f'replication: (key, worker) pairs per key. Table values are means over seeds.</p>')
        for (path, m, summary, series), name in zip(loaded, names):
            d = m.get("dataset") or {}
            family = m.get("family", "?")
            parts.append(f"<h2>{html.escape(str(d.get('name', '?')))} — {html.escape(str(family))}</h2>")
            cfg = {k: v for k, v in (m.get("config") or {}).items() if v is not None}
            parts.append(f'<p class="note">fingerprint <code>{html.escape(str(d.get("fingerprint", "?")))}</code>'
                         f', {html.escape(str(d.get("tuples", "?")))} tuples, engine '
                         f'{html.escape(str(m.get("engine", "?")))}, configuration '
                         f'<code>{html.escape(json.dumps(cfg, sort_keys=True, default=str))}</code></p>')
            sdf = summary.to_pandas()
            if sdf.empty:
                parts.append("<p>No cells.</p>")
                continue
            if family != "grouping":
                parts.append(f"<p>No report layout for the family '{html.escape(str(family))}'.</p>")
                continue
            parts.append(_html_table(*_formatted_rows(summary_table(sdf))))
            for p in plot_all(sdf, series, plot_root / name, workers=workers):
                parts.append(_img(p))
        parts.append("</body></html>\n")
        out_path.parent.mkdir(parents=True, exist_ok=True)
        tmp_out = out_path.with_name(f".{out_path.name}.tmp")
        tmp_out.write_text("\n".join(parts), encoding="utf-8")
        os.replace(tmp_out, out_path)
    return out_path
