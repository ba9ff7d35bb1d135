"""The shedding family's report figures (called by :func:`skewbench.present.reports.render_report` with
one results directory's summary, as pandas, and series, as Arrow).

Operator cells (LAS and its baselines):

* ``queueing_vs_underprovisioning.png``: mean queueing latency against u = 1 - P/100, one line
  per strategy (mean over seeds, min-max bars), with the bound tau (las.spec.md E1, Fig. 4);
  with a single provisioning, a bar per strategy instead;
* ``dropped_vs_underprovisioning.png``: the dropped ratio, same axes, with the line DR = u;
* ``queueing_series.png``: windowed mean queueing latency along the stream (mean over seeds),
  with tau and the dataset's phases labelled A, B, ... (E3, Fig. 6), above the windowed drops.

Across datasets (:func:`combined_figures`, when two or more datasets have operator rows):

* ``queueing_per_dataset_P<P>.png``: mean queueing latency per dataset (e.g. the key
  distributions of E2, Fig. 5a), one bar per strategy, with tau;

Partition cells (ShedPart and Storm):

* ``imbalance_per_window.png``: each window's imbalance, one line per strategy (log y; the
  paper's Fig. 3 shape), above the largest worker load;
* ``error_vs_shed.png``: each window's mean relative error of the group averages against its
  shed fraction, for the strategies that shed, with the error budget.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from skewbench.present.picks import Rule
from skewbench.shedding.strategies import LAS
from skewbench.present.plotting import colors, figure, frame, log_y, save, with_labels

NOTE = ("Operator rows: Q = mean queueing latency of the kept tuples (ms), tau = the bound on its running "
        "average, dropped = share of tuples dropped, P = capacity as a percentage of the arrival rate "
        "(u = 1 - P/100), drop opt = the least drops any shedder could achieve offline under the same bound "
        "on the stream's first opt_window tuples over the strategy's drops there (1: optimal; above 1 only "
        "when the strategy broke the bound; a lower bound where the optimum is not proven, its status then naming "
        "the solver's limit that stopped it, node_limit or time_limit; skewbench.shedding.optimum). Partition rows: imbalance = max worker load - mean load per window (tuples, after "
        "trimming), shed = share of window tuples left out, coverage = share of trimmed group averages within "
        "the error budget. Table values are means over seeds; '-' marks metrics of the other kind.")

#: LAS's epsilon (its default): LAS over-estimates every cost by 1 + epsilon to stay under tau, and sits
#: within that margin of the bound by design (over it at 5 of 10 under-provisionings in the LAS paper's
#: E1, REPRODUCTION.md T3), so the operator pick allows the same tolerance
LAS_EPSILON = LAS.defaults["epsilon"]
#: "What to pick" (skewbench.present.picks).  Operator cells: the fewest drops among shedders that keep the
#: mean queueing latency within the bound with LAS's own tolerance (Q/tau <= 1 + epsilon), per
#: provisioning; the baseline is ``bl`` (Base Line: drop at random at the known under-provisioning
#: rate), the nightly's plain shedder and the comparison the LAS paper makes.  FK is fed every tuple's
#: true execution time (a reference, not deployable) and is never picked.  On a "no pick" the line
#: names the shedder nearest to the bound with its Q/tau and drops.  Partition cells: the lowest median
#: window imbalance, per worker count, among the strategies whose mean error of the group averages is
#: within the cell's error budget (``error``, 10% by default) and that keep some tuples (shed fraction
#: < 1: one that sheds everything answers nothing, however balanced), against ``fld`` (Storm's fields
#: grouping without shedding, what Storm runs), with what shedding costs in tuples left out and in error.
PICK_RULES = (
    Rule("dropped_ratio", "min", ("provisioning",), where=(("q_over_bound", "<=", 1.0 + LAS_EPSILON),),
         baseline="bl", costs=("q_over_bound",), exclude=("fk",), kind="shedding operator",
         text=f"fewest tuples dropped among shedders with mean queueing latency within the bound up to LAS's own "
              f"tolerance (Q/tau <= 1 + epsilon, epsilon = {LAS_EPSILON:g}), per provisioning; vs bl, random drops "
              f"at the under-provisioning rate"),
    Rule("imbalance_p50", "min", ("workers",), where=(("error_mean", "<=", "error"), ("shed_fraction", "<", 1.0)),
         baseline="fld", costs=("shed_fraction", "error_mean"), kind="windowed aggregation",
         text="lowest median window imbalance of the windowed aggregation among strategies within the error "
              "budget that keep some tuples, per worker count; vs fld, Storm's fields grouping without shedding"),
)
#: trade-off plots with the Pareto front (x column, y column, title)
TRADEOFFS = (("q_over_bound", "dropped_ratio", "dropped ratio vs Q/tau"),)
#: the overview's leaderboard: Q/tau (the bound kept or not), no coordinate
LEADERBOARD = ("q_over_bound", "")

COORDS = ("provisioning", "workers")
LAT_FLOOR = 1e-3
IMB_FLOOR = 0.5


def _phase_starts(summary: pd.DataFrame) -> list[int]:
    for s in summary.get("stats", pd.Series(dtype=object)):
        try:
            starts = json.loads(s).get("phase_starts")
        except (TypeError, ValueError):
            continue
        if starts:
            return [int(x) for x in starts]
    return []


def _operator_figures(op: pd.DataFrame, series: pd.DataFrame, out_dir: Path) -> list[Path]:
    paths = []
    tau = float(op["bound_ms"].iloc[0])
    lab = with_labels(op, COORDS)
    labels = list(dict.fromkeys(lab["label"]))
    col = colors(labels)
    us = sorted(set(lab["underprovisioning"].round(6)))
    for metric, name, ylabel in (("queueing_latency_mean", "queueing_vs_underprovisioning.png",
                                  "mean queueing latency Q (ms, log)"),
                                 ("dropped_ratio", "dropped_vs_underprovisioning.png", "dropped ratio")):
        fig = figure()
        ax = fig.add_subplot()
        if len(us) > 1:
            for label in labels:
                d = lab[lab["label"] == label].groupby(lab["underprovisioning"].round(6))[metric]
                m, lo, hi = d.mean(), d.min(), d.max()
                x = np.array(m.index) * 100
                y = m.to_numpy(dtype=float)
                if metric == "queueing_latency_mean":
                    y, lo, hi = np.maximum(y, LAT_FLOOR), np.maximum(lo, LAT_FLOOR), np.maximum(hi, LAT_FLOOR)
                ax.errorbar(x, y, yerr=[y - np.asarray(lo, float), np.asarray(hi, float) - y], label=label,
                            color=col[label][0], linestyle=col[label][1], marker="o", ms=3, capsize=2)
            ax.set_xlabel("under-provisioning u (%)")
            if metric == "dropped_ratio":
                xs = np.array(us) * 100
                ax.plot(xs, np.clip(np.array(us), 0, 1), color="0.5", linestyle=":", label="DR = u")
        else:
            g = lab.groupby("label", sort=False)[metric]
            m = g.mean().reindex(labels)
            ax.bar(range(len(labels)), np.maximum(m.to_numpy(dtype=float), LAT_FLOOR if "latency" in metric else 0),
                   color=[col[lb][0] for lb in labels])
            ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right")
            ax.set_xlabel(f"strategy (u = {us[0] * 100:g}%)")
        if metric == "queueing_latency_mean":
            log_y(ax)
            if 0 < tau < 1e300:
                ax.axhline(tau, color="black", linestyle="--", linewidth=1, label=f"tau = {tau:g} ms")
        ax.set_ylabel(ylabel)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
        ax.set_title(f"{op['dataset'].iloc[0]}: {'Q' if 'latency' in metric else 'drops'} vs under-provisioning")
        paths.append(save(fig, out_dir, name))
    s = series[series["kind"] == "operator"] if not series.empty else series
    if not s.empty:
        for prov in sorted(set(s["provisioning"])):
            sp = s[s["provisioning"] == prov]
            fig = figure(figsize=(8, 6))
            ax1, ax2 = fig.add_subplot(2, 1, 1), fig.add_subplot(2, 1, 2)
            slabels = with_labels(op[op["provisioning"] == prov], COORDS).set_index("cell_id")["label"]
            sp = sp.assign(label=sp["cell_id"].map(slabels))
            for label in dict.fromkeys(sp["label"].dropna()):
                d = sp[sp["label"] == label].groupby("window")
                x = d["start"].first().to_numpy()
                q = d["queueing_latency_mean"].mean().to_numpy(dtype=float)
                ax1.plot(x, np.maximum(q, LAT_FLOOR), label=label, color=col.get(label, ("k", "-"))[0])
                ax2.plot(x, d["dropped_ratio"].mean().to_numpy(dtype=float), label=label,
                         color=col.get(label, ("k", "-"))[0])
            log_y(ax1)
            if 0 < tau < 1e300:
                ax1.axhline(tau, color="black", linestyle="--", linewidth=1, label=f"tau = {tau:g} ms")
            for i, start in enumerate(_phase_starts(op)):
                for ax in (ax1, ax2):
                    ax.axvline(start, color="0.7", linewidth=0.8)
                ax1.text(start, ax1.get_ylim()[1], f" {chr(65 + i)}", va="top", fontsize=8)
            ax1.set_ylabel("window mean Q (ms, log)")
            ax2.set_ylabel("window dropped ratio")
            ax2.set_xlabel("arrival index")
            ax1.legend(fontsize=7)
            ax1.set_title(f"{op['dataset'].iloc[0]}: per window, P = {prov}% (u = {100 - prov}%)")
            paths.append(save(fig, out_dir, f"queueing_series_P{prov}.png"))
    return paths


def _partition_figures(pt: pd.DataFrame, series: pd.DataFrame, out_dir: Path) -> list[Path]:
    paths = []
    s = series[series["kind"] == "partition"] if not series.empty else series
    if s.empty:
        return paths
    lab = with_labels(pt, COORDS).set_index("cell_id")["label"]
    s = s.assign(label=s["cell_id"].map(lab))
    labels = list(dict.fromkeys(s["label"].dropna()))
    col = colors(labels)
    for workers in sorted(set(s["workers"])):
        sw = s[s["workers"] == workers]
        fig = figure(figsize=(8, 6))
        ax1, ax2 = fig.add_subplot(2, 1, 1), fig.add_subplot(2, 1, 2)
        for label in labels:
            d = sw[sw["label"] == label].groupby("window")
            if not len(d):
                continue
            x = np.array(list(d.groups))
            ax1.plot(x, np.maximum(d["imbalance"].mean().to_numpy(dtype=float), IMB_FLOOR), label=label,
                     color=col[label][0], linestyle=col[label][1])
            ax2.plot(x, d["load_max"].mean().to_numpy(dtype=float), label=label, color=col[label][0],
                     linestyle=col[label][1])
        log_y(ax1)
        log_y(ax2)
        ax1.set_ylabel(f"imbalance (tuples, log;\n0 drawn at {IMB_FLOOR:g})")
        ax2.set_ylabel("max worker load (tuples, log)")
        ax2.set_xlabel("window")
        ax1.legend(fontsize=7)
        ax1.set_title(f"{pt['dataset'].iloc[0]}: per window, V = {workers}")
        paths.append(save(fig, out_dir, f"imbalance_per_window_V{workers}.png"))
    shed = s[s["shed_fraction"].notna()]
    if not shed.empty and (shed.groupby("label")["shed_fraction"].max() > 0).any():
        fig = figure()
        ax = fig.add_subplot()
        for label in labels:
            d = shed[shed["label"] == label]
            if d.empty or d["shed_fraction"].max() <= 0:
                continue
            ax.scatter(d["shed_fraction"], d["error_mean"], s=8, label=label, color=col[label][0])
            ax.scatter(d["shed_fraction"], d["error_max"], s=8, marker="x", color=col[label][0])
        err = float(pt["error"].iloc[0])
        ax.axhline(err, color="black", linestyle="--", linewidth=1, label=f"error budget {err:g}")
        ax.set_xlabel("shed fraction of the window")
        ax.set_ylabel("relative error of group averages (o: mean, x: max)")
        ax.legend(fontsize=7)
        ax.set_title(f"{pt['dataset'].iloc[0]}: accuracy vs shedding, per window")
        paths.append(save(fig, out_dir, "error_vs_shed.png"))
    return paths


def figures(summary: Any, series: Any, out_dir: str | Path, **options: Any) -> list[Path]:
    df = frame(summary)
    ser = frame(series)
    if ser is None:
        ser = pd.DataFrame()
    out = Path(out_dir)
    paths: list[Path] = []
    op = df[df["kind"] == "operator"]
    if not op.empty:
        paths += _operator_figures(op, ser, out)
    pt = df[df["kind"] == "partition"]
    if not pt.empty:
        paths += _partition_figures(pt, ser, out)
    return paths


def combined_figures(tables: list[tuple[str, Any]], out_dir: str | Path, **options: Any) -> list[Path]:
    """Mean queueing latency per dataset and strategy (one figure per provisioning), with tau."""
    frames = []
    for name, summary in tables:
        df = frame(summary)
        if df is not None and not df.empty:
            frames.append(df[df["kind"] == "operator"].assign(_ds=name))
    frames = [f for f in frames if not f.empty]
    if len({f["_ds"].iloc[0] for f in frames}) < 2:
        return []
    df = pd.concat(frames, ignore_index=True)
    lab = with_labels(df, COORDS)
    paths = []
    out = Path(out_dir)
    for prov in sorted(set(lab["provisioning"])):
        d = lab[lab["provisioning"] == prov]
        datasets = list(dict.fromkeys(d["_ds"]))
        labels = list(dict.fromkeys(d["label"]))
        col = colors(labels)
        fig = figure(figsize=(max(6.0, 1.2 * len(datasets) + 2), 4.5))
        ax = fig.add_subplot()
        width = 0.8 / max(1, len(labels))
        for i, label in enumerate(labels):
            g = d[d["label"] == label].groupby("_ds")["queueing_latency_mean"]
            m, lo, hi = g.mean().reindex(datasets), g.min().reindex(datasets), g.max().reindex(datasets)
            x = np.arange(len(datasets)) + (i - (len(labels) - 1) / 2) * width
            y = np.maximum(m.to_numpy(dtype=float), LAT_FLOOR)
            ax.bar(x, y, width, label=label, color=col[label][0],
                   yerr=[np.maximum(y - lo.to_numpy(dtype=float), 0), np.maximum(hi.to_numpy(dtype=float) - y, 0)],
                   capsize=2)
        tau = float(d["bound_ms"].iloc[0])
        log_y(ax)
        if 0 < tau < 1e300:
            ax.axhline(tau, color="black", linestyle="--", linewidth=1, label=f"tau = {tau:g} ms")
        ax.set_xticks(range(len(datasets)), datasets, rotation=20, ha="right")
        ax.set_ylabel("mean queueing latency Q (ms, log)")
        ax.set_title(f"Q per dataset at P = {prov}% (u = {100 - prov}%)")
        ax.legend(fontsize=7)
        paths.append(save(fig, out, f"queueing_per_dataset_P{prov}.png"))
    return paths
