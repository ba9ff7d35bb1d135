"""The allocation family's report figures (called by :func:`skewbench.present.reports.render_report` with
one results directory's summary, as pandas, and series, as Arrow).

* ``optimality_distribution.png``: the per-instance ratio rho = gain / optimum of each strategy
  (a box per strategy with every instance's point; Omega, the ratio of sums, marked): the spread
  behind the paper's 93.1% / 85.9% (allocation.spec.md R6);
* ``time_vs_tasks.png``: one invocation's allocation time against the instance's tasks, log-log,
  one series per strategy (R5, R11's complexity);
* ``gain_vs_capacity.png``: for instances generated over a capacity sweep (``mu`` in their
  metadata, the real-workload proxies of E6), the gain against the node capacity, one line per
  strategy, with the total IMC (R7, R8, R12);
* ``gain_per_instance.png``: with few instances (at most 20; e.g. a job graph from a grouping
  replay, or E3's sweep), each instance's gain per strategy as grouped bars, with the optimum.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from skewbench.present.picks import Rule
from skewbench.present.plotting import colors, figure, frame, save

NOTE = ("Gains are MB/s kept on-node (each directed task link once); optimality is gain over the exact optimum "
        "(OPT's bound where its time limit was hit). The E6 topologies use placeholder annotations "
        "(allocation.spec.md A23), not the paper's figures.")


#: "What to pick" (skewbench.present.picks): the highest optimality (Omega, gain over the exact optimum)
#: among placements of outcome OK on every instance (every task placed, no node over capacity: a
#: placement that fails is not an option, and Omega counts only the instances it did not fail),
#: one pick per dataset.  The baseline is ``storm``, Storm's default scheduler (round robin; RAS
#: must be configured), what a practitioner gets without choosing.  OPT is the reference optimum
#: (a MILP under a time limit) and is never picked.
PICK_RULES = (
    Rule("optimality", "max", (), where=(("ok_rate", ">=", 1.0),), baseline="storm",
         costs=("seconds_median",), exclude=("opt",),
         text="highest optimality (gain over the optimum) among placements that place every task within "
              "capacity on every instance; vs storm, Storm's default scheduler"),
)
#: trade-off plots with the Pareto front (x column, y column, title; allocation time on a log axis)
TRADEOFFS = (("seconds_median", "optimality", "optimality vs allocation time (log)"),)
#: the overview's leaderboard: optimality, no coordinate
LEADERBOARD = ("optimality", "")

def _label(row: pd.Series) -> str:
    params = json.loads(row["params"]) if isinstance(row.get("params"), str) else {}
    shown = {k: v for k, v in params.items() if k not in ("retry", "skew_eps", "time_limit", "method")}
    base = str(row["strategy"])
    return base if not shown else f"{base} " + " ".join(f"{k}={v}" for k, v in sorted(shown.items()))


def _lines(ax: Any, frame: pd.DataFrame, order: list[str], col: dict[str, Any], by: str, value: str,
           how: str) -> None:
    """One line per strategy label of ``order``: ``value`` aggregated (``how``: median, mean) by ``by``."""
    for lb in order:
        g = frame[frame["label"] == lb].groupby(by)[value].agg(how)
        if len(g):
            ax.plot(g.index, g.to_numpy(float), marker="o", ms=3, color=col[lb][0], linestyle=col[lb][1], label=lb)


def figures(summary: Any, series: Any, out_dir: str | Path, **options: Any) -> list[Path]:
    summ = frame(summary)
    ser = frame(series)
    if summ is None or ser is None or summ.empty or ser.empty:
        return []
    out = Path(out_dir)
    labels = {r["cell_id"]: (_label(r) if summ["strategy"].duplicated(keep=False)[i] else str(r["strategy"]))
              for i, r in summ.iterrows()}
    ser = ser.assign(label=ser["cell_id"].map(labels))
    order = list(dict.fromkeys(labels.values()))
    col = colors(order)
    name = str(summ["dataset"].iloc[0]) if "dataset" in summ.columns else ""
    paths = []

    # optimality distribution
    with_opt = ser[ser["optimality"].notna()]
    if not with_opt.empty:
        fig = figure()
        ax = fig.add_subplot()
        present = [lb for lb in order if lb in set(with_opt["label"])]
        data = [with_opt.loc[with_opt["label"] == lb, "optimality"].to_numpy(float) for lb in present]
        ax.boxplot(data, showfliers=False)
        rng = np.random.default_rng(0)
        for i, (lb, d) in enumerate(zip(present, data)):
            ax.scatter(i + 1 + rng.uniform(-0.18, 0.18, len(d)), d, s=4, alpha=0.35, color=col[lb][0])
            omega = summ.loc[summ["cell_id"].map(labels) == lb, "optimality"].dropna()
            if len(omega):
                ax.scatter([i + 1], [float(omega.mean())], marker="D", color="black", s=18, zorder=3,
                           label="Omega (ratio of sums)" if i == 0 else None)
        ax.set_xticks(range(1, len(present) + 1), present, rotation=20, ha="right")
        ax.set_ylabel("gain / optimum per instance (rho)")
        ax.set_ylim(min(0.0, float(np.nanmin([d.min() for d in data if len(d)] or [0]))) - 0.02, 1.03)
        ax.legend(fontsize=7, loc="lower left")
        ax.set_title(f"{name}: optimality over {with_opt['window'].nunique()} instances")
        paths.append(save(fig, out, "optimality_distribution.png"))

    # allocation time vs tasks (log-log)
    timed = ser[(ser["seconds"] > 0)]
    if not timed.empty:
        fig = figure()
        ax = fig.add_subplot()
        _lines(ax, timed, order, col, "tasks", "seconds", "median")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("tasks in the instance (log)")
        ax.set_ylabel("seconds per allocation (median, log)")
        ax.legend(fontsize=7)
        ax.set_title(f"{name}: allocation time vs tasks")
        paths.append(save(fig, out, "time_vs_tasks.png"))

    # gain vs capacity (instances with mu in their metadata)
    mu = ser["instance_meta"].map(lambda t: json.loads(t).get("mu") if isinstance(t, str) and t else None)
    if mu.notna().sum() > 1 and mu.nunique() > 1:
        d = ser.assign(mu=mu.astype(float))
        fig = figure()
        ax = fig.add_subplot()
        _lines(ax, d, order, col, "mu", "gain", "mean")
        imc = d.groupby("mu")["imc_total"].first()
        ax.plot(imc.index, imc.to_numpy(float), color="0.5", linestyle=":", label="total IMC")
        ax.set_xlabel("node capacity mu (% of one core)")
        ax.set_ylabel("IMC gain (MB/s)")
        ax.legend(fontsize=7)
        ax.set_title(f"{name}: gain vs node capacity (placeholder annotations)")
        paths.append(save(fig, out, "gain_vs_capacity.png"))

    # per-instance gains when there are few instances
    n_inst = ser["window"].nunique()
    if 1 <= n_inst <= 20:
        fig = figure()
        ax = fig.add_subplot()
        insts = list(dict.fromkeys(ser.sort_values("window")["instance"]))
        width = 0.8 / max(1, len(order))
        for k, lb in enumerate(order):
            g = ser[ser["label"] == lb].groupby("instance")["gain"].mean().reindex(insts)
            ax.bar(np.arange(len(insts)) + k * width, g.to_numpy(float), width, color=col[lb][0], label=lb)
        opt = ser.groupby("instance")["opt_gain"].first().reindex(insts)
        if opt.notna().any():
            ax.scatter(np.arange(len(insts)) + 0.4 - width / 2, opt.to_numpy(float), marker="_", s=200,
                       color="black", label="optimum", zorder=3)
        ax.set_xticks(np.arange(len(insts)) + 0.4 - width / 2, [s[-28:] for s in insts], rotation=25, ha="right",
                      fontsize=6)
        ax.set_ylabel("IMC gain (MB/s)")
        ax.legend(fontsize=7)
        ax.set_title(f"{name}: gain per instance")
        paths.append(save(fig, out, "gain_per_instance.png"))
    return paths
