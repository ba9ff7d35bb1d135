"""The grouping family's report figures (called by :func:`skewbench.present.reports.render_report`).

Each function takes one results directory's tables (a pyarrow ``Table`` or a pandas
``DataFrame`` each: ``summary``, ``series``), writes PNG files into ``out_dir`` and returns their
paths.  Each draws one figure per dataset and panel of sources (a single-scheduler strategy such
as OSG always runs with one source; it is drawn in every panel, labelled ``(1 source)``):

* :func:`plot_imbalance_vs_workers`  imbalance against the number of workers, one line per
  strategy (mean over seeds, min-max band), as in the D-Choices paper's figures;
* :func:`plot_imbalance_over_time`   cumulative imbalance along the stream, at one worker count;
* :func:`plot_latency_cdf`           the completion-time CDF of each strategy, at one worker count;
* :func:`plot_worker_loads`          per-worker load (head and tail part), one panel per strategy.

Imbalance is ``max load - 1/n`` as a fraction of the stream's tuples (``docs/results.md``); on
log axes zero is drawn at :data:`IMBALANCE_FLOOR`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from skewbench.errors import SkewbenchError
from skewbench.grouping import STRATEGIES
from skewbench.present.picks import Rule
from skewbench.grouping.schema import COORDINATES
from skewbench.present.plotting import (DPI, FIGSIZE, TableLike, figure, fmt_number, frame, log_y, readable_log_x,
                                        save, with_labels)
from skewbench.results import slug
from skewbench.present import plotting
from matplotlib.ticker import NullFormatter, NullLocator

#: zero imbalance is drawn at this value on log axes
IMBALANCE_FLOOR = 1e-7
#: completion times below this (ms) are drawn at it on log axes
LATENCY_FLOOR = 1e-3

IMBALANCE_LABEL = f"imbalance = max load − 1/n\n(fraction of tuples, log scale; 0 drawn at {IMBALANCE_FLOOR:g})"

#: "What to pick" (skewbench.present.picks), one pick per kind of operator and worker count, each compared with
#: what the engine runs for that kind (FK, an offline reference fed the true execution times, is never
#: picked):
#:
#: * a keyed aggregation (per-key state: counts, sums, windows by key) needs every tuple of a key on a
#:   bounded set of workers, so the candidates are the strategies that route by key (:data:`KEYED`: KG,
#:   the engines' hash partitioners, PKG and the D-Choices family, CHWBL, DKG, the two-phase and
#:   cardinality-aware ones), with replication <= 2 (a key on at most two workers on average, what
#:   PKG's two choices cost); a split key's partial aggregates must be merged, so the merge cost
#:   (merge_partials, the partial records to merge per window) is shown beside the pick and decides
#:   among strategies tied on balance.  The baseline is ``flink``, Flink's keyBy (key groups, murmur
#:   hash) as the engine computes it, what a Flink user runs for a keyed aggregation today;
#: * a stateless operator (a map or filter: any tuple may go to any worker) gets the shuffle strategies
#:   (:data:`STATELESS`: SG, OSG), picked by the mean completion time (queueing + execution: what
#:   balancing a stateless operator is for; their tuple counts are all even).  The baseline is ``sg``,
#:   per-source round robin from worker 0: what Flink's rebalance() and Storm's shuffle grouping do.
#:
#: The two kinds are never mixed: a shuffle is not a candidate for a keyed aggregation (it cannot
#: hold per-key state without a merge step), nor a key-routing strategy for a stateless operator.
STATELESS = ("sg", "osg", "fk")
KEYED = tuple(s for s in STRATEGIES if s not in STATELESS)
PICK_RULES = (
    Rule("imbalance", "min", ("workers",), where=(("replication", "<=", 2.0),), baseline="flink",
         costs=("merge_partials", "replication", "latency_p99"), exclude=("fk",), kind="keyed aggregation",
         only=KEYED, among="the strategies that route by key", tiebreak=("merge_partials",),
         text="lowest imbalance among strategies that keep a key on at most 2 workers on average, the merge of "
              "split keys' partials (merge/window) shown and deciding ties, per worker count; vs flink, "
              "Flink's keyBy"),
    Rule("latency_mean", "min", ("workers",), baseline="sg", costs=("imbalance", "latency_p99"),
         exclude=("fk",), kind="stateless operator", only=STATELESS, among="the shuffle strategies (sg, osg)",
         text="lowest mean completion time among the shuffle strategies, per worker count; vs sg, per-source "
              "round robin (Flink's rebalance, Storm's shuffle grouping)"),
)
#: trade-off plots with the Pareto front (x column, y column, title): memory against balance and tail latency
TRADEOFFS = (
    ("replication", "imbalance", "imbalance vs replication (memory)"),
    ("replication", "latency_p99", "p99 completion time vs replication (memory)"),
)
#: the overview's leaderboard: imbalance at each worker count
LEADERBOARD = ("imbalance", "workers")

#: the report's note under the datasets table
NOTE = (f"Imbalance: max load − 1/n as a fraction of the tuples (log axes draw 0 at {IMBALANCE_FLOOR:g}); "
        "completion time: queueing + execution, in ms; speedup vs RR: total completion time of round robin "
        "on the same arrivals over the strategy's; replication: (key, worker) pairs per key. Table values are "
        "means over seeds.")


def _panels(summary: pd.DataFrame) -> list[tuple[str, int, pd.DataFrame]]:
    """(dataset, sources, rows) for each figure: one per dataset and sources value of the
    multi-source strategies; single-source-only strategies join every panel at their s = 1."""
    df = with_labels(summary, COORDINATES)
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


def _pick_workers(rows: pd.DataFrame, workers: int | None) -> int | None:
    available = sorted(set(int(w) for w in rows["workers"]))
    if not available:
        return None
    if workers is None:
        return available[-1]
    if workers not in available:
        raise SkewbenchError(f"no cells with {workers} workers (available: {available})")
    return int(workers)


def _sources_text(s: int) -> str:
    return f"{s} source" + ("" if s == 1 else "s")



# --------------------------------------------------------------------------------------------
# plots


def plot_imbalance_vs_workers(summary: TableLike, series: TableLike | None, out_dir: str | os.PathLike,
                              *, dpi: int = DPI) -> list[Path]:
    """Final imbalance against the number of workers, one line per strategy (mean over seeds,
    min-max band over seeds); one figure per dataset and sources."""
    paths = []
    for ds, s, rows in _panels(frame(summary)):
        colors = plotting.colors(rows["label"])
        fig = figure(dpi=dpi)
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
        log_y(ax)
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
        paths.append(save(fig, out_dir, f"imbalance_vs_workers_{slug(ds)}_s{s}.png"))
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
    ser, summ = frame(series), frame(summary)
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
        colors = plotting.colors(rows["label"])
        fig = figure(dpi=dpi)
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
        log_y(ax)
        ax.set_xlabel("tuples processed (end of window)")
        ax.set_ylabel(IMBALANCE_LABEL)
        ax.set_title(f"Cumulative imbalance along the stream — {ds}, n = {n}, {_sources_text(s)}")
        ax.grid(True, alpha=0.3)
        fig.legend(loc="outside right upper", fontsize="small")
        paths.append(save(fig, out_dir, f"imbalance_over_time_{slug(ds)}_s{s}_n{n}.png"))
    return paths


def plot_latency_cdf(summary: TableLike, series: TableLike | None, out_dir: str | os.PathLike,
                     *, workers: int | None = None, dpi: int = DPI) -> list[Path]:
    """Completion-time CDF of each strategy (from ``latency_cdf``: the completion times at
    quantiles 0, 0.01, ..., 1, averaged over seeds), for ``workers`` (default: the largest).
    Panels whose cells were replayed without the queue simulation (``metrics`` 'balance') have
    no CDF and no figure."""
    q = np.linspace(0.0, 1.0, 101)
    paths = []
    for ds, s, rows in _panels(frame(summary)):
        n = _pick_workers(rows, workers)
        rows = rows[rows["workers"] == n]
        if rows.empty or rows["latency_cdf"].isna().all():
            continue
        colors = plotting.colors(rows["label"])
        fig = figure(dpi=dpi)
        ax = fig.add_subplot()
        for label, g in rows.groupby("label", sort=False):
            curves = [np.asarray(v, dtype=float) for v in g["latency_cdf"] if v is not None and len(v) == len(q)]
            if not curves:
                continue
            x = np.maximum(np.mean(curves, axis=0), LATENCY_FLOOR)
            c, ls = colors[label]
            ax.plot(x, q, color=c, linestyle=ls, label=label, drawstyle="steps-post")
        ax.set_xscale("log")
        readable_log_x(ax, *ax.get_xlim())
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("completion time (ms, log scale)")
        ax.set_ylabel("fraction of tuples completed within x")
        ax.set_title(f"Completion-time CDF — {ds}, n = {n}, {_sources_text(s)} (quantiles averaged over seeds)")
        ax.grid(True, which="both", alpha=0.3)
        fig.legend(loc="outside right upper", fontsize="small")
        paths.append(save(fig, out_dir, f"latency_cdf_{slug(ds)}_s{s}_n{n}.png"))
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
    for ds, s, rows in _panels(frame(summary)):
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
        fig = figure(worker_loads_figsize(len(labels)), dpi=dpi)
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
            ax.set_title(f"{label}\nimbalance {fmt_number(float(r['imbalance']))}", fontsize="medium")
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
        paths.append(save(fig, out_dir, f"worker_loads_{slug(ds)}_s{s}_n{n}.png"))
    return paths


def plot_all(summary: TableLike, series: TableLike, out_dir: str | os.PathLike, *,
             workers: int | None = None, dpi: int = DPI) -> list[Path]:
    """Every figure of one results directory's tables."""
    s, t = frame(summary), frame(series)
    return (plot_imbalance_vs_workers(s, t, out_dir, dpi=dpi)
            + plot_imbalance_over_time(s, t, out_dir, workers=workers, dpi=dpi)
            + plot_latency_cdf(s, t, out_dir, workers=workers, dpi=dpi)
            + plot_worker_loads(s, t, out_dir, workers=workers, dpi=dpi))


def figures(summary: TableLike, series: TableLike, out_dir: str | os.PathLike, *,
            workers: int | None = None, dpi: int = DPI, **_: object) -> list[Path]:
    """Every figure of one results directory's tables (the report's entry point)."""
    return plot_all(summary, series, out_dir, workers=workers, dpi=dpi)
