"""Allocation benchmarks: TD vs TL throughput (allocation.spec.md E4, R5, R11), the exact optimum's
solve time and the METIS partitioner, each as a ratio against a baseline measured in the same run.

    python benchmarks/bench_allocation.py [--seconds S] [--plot PATH]

* **throughput** (E4): the pipeline of 4 groups x t tasks (P_g = 100, C_e = 100, 8 nodes of 100),
  t in 10, 30, 100, 300; each algorithm invoked repeatedly for S seconds on a fresh state (spec
  metric 7: successful invocations per second), the ratio TD / TL per t, and a log-log plot of
  allocations per second against tasks;
* **optimum**: OPT (F2 via HiGHS) on 200 of E5's 17-task graphs, against TD on the same graphs;
  F1 (task-level MILP) and F3 (CP-SAT) on 5 of them;
* **partitioner**: METIS on the E4 pipeline at 100 tasks per group, against TD.

Prints one JSON object; BENCHMARKS.md records the figures.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

from skewbench.allocation import instances as inst
from skewbench.allocation import opt
from skewbench.allocation.partition import metis
from skewbench.allocation.strategies.td import td
from skewbench.allocation.strategies.tl import tl


def rate(fn, seconds: float) -> tuple[float, float]:
    """(successful invocations per second, median seconds per call) over ``seconds``."""
    fn()  # warm-up
    times = []
    ok = 0
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end or len(times) < 3:
        t0 = time.perf_counter()
        a = fn()
        times.append(time.perf_counter() - t0)
        ok += int(bool(getattr(a, "success", True)))
    return ok / sum(times), float(np.median(times))


def bench_throughput(seconds: float) -> dict:
    out = {}
    for t in (10, 30, 100, 300):
        job = inst.pipeline(tasks_per_group=t)[0]
        td_rate, td_med = rate(lambda: td(job), seconds)
        tl_rate, tl_med = rate(lambda: tl(job, seed=0), seconds)
        out[t] = {"tasks": job.m, "td_per_s": td_rate, "tl_per_s": tl_rate, "td_median_s": td_med,
                  "tl_median_s": tl_med, "ratio_td_over_tl": td_rate / tl_rate}
        print(f"t={t}: TD {td_rate:,.0f}/s, TL {tl_rate:,.1f}/s, ratio {td_rate / tl_rate:,.0f}x", flush=True)
    return out


def bench_optimum() -> dict:
    jobs = inst.random_graphs(count=200, seed=0)
    t0 = time.perf_counter()
    res = [opt.solve_f2(j) for j in jobs]
    f2 = time.perf_counter() - t0
    t0 = time.perf_counter()
    for j in jobs:
        td(j)
    td = time.perf_counter() - t0
    few = jobs[:5]
    t0 = time.perf_counter()
    f1 = [opt.solve_f1(j, time_limit=60.0) for j in few]
    f1_s = time.perf_counter() - t0
    opt.solve_f3(few[0])  # start the CP-SAT helper process outside the timing
    t0 = time.perf_counter()
    f3 = [opt.solve_f3(j, time_limit=60.0) for j in few]
    f3_s = time.perf_counter() - t0
    agree = all(abs(a.gain - b.gain) < 1e-6 and abs(a.gain - c.gain) < 1e-6 for a, b, c in zip(res, f1, f3))
    return {"instances": len(jobs), "f2_seconds_per_instance": f2 / len(jobs), "td_seconds_per_instance": td / len(jobs),
            "f2_over_td": f2 / td, "proven": sum(r.status == "optimal" for r in res),
            "f1_seconds_per_instance": f1_s / len(few), "f3_seconds_per_instance": f3_s / len(few),
            "f1_f2_f3_agree_on_5": agree}


def bench_partitioner(seconds: float) -> dict:
    job = inst.pipeline(tasks_per_group=100)[0]
    m_rate, m_med = rate(lambda: metis(job, seed=0)[1], seconds)
    td_rate, td_med = rate(lambda: td(job), seconds)
    from skewbench.allocation.model import evaluate

    g_m = evaluate(job, metis(job, seed=0)[0]).gain
    g_td = evaluate(job, td(job).node).gain
    return {"metis_median_s": m_med, "td_median_s": td_med, "metis_over_td_time": m_med / td_med,
            "metis_gain": g_m, "td_gain": g_td, "imc_total": job.imc_total}


def plot(results: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=110)
    t = sorted(results)
    tasks = [results[k]["tasks"] for k in t]
    ax.plot(tasks, [results[k]["td_per_s"] for k in t], marker="o", label="TD (TD-RS)")
    ax.plot(tasks, [results[k]["tl_per_s"] for k in t], marker="s", label="TL (TL-IMC)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tasks in the job (4 groups; log)")
    ax.set_ylabel("allocations per second (log)")
    ax.set_title("E4 pipeline, 8 nodes: allocation throughput, pure Python both")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2.0, help="seconds per throughput measurement")
    ap.add_argument("--plot", default="docs/img/bench_allocation_throughput.png")
    a = ap.parse_args()
    thr = bench_throughput(a.seconds)
    out = {"machine": platform.processor() or platform.machine(), "throughput": thr, "optimum": bench_optimum(),
           "partitioner": bench_partitioner(a.seconds)}
    if a.plot:
        plot(thr, a.plot)
        out["plot"] = a.plot
    print(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
