"""Benchmarks of the grouping family, each figure a ratio against a baseline from the same run.

1. ``kernels``: every strategy's routing kernel on one core, 10^7 Zipf tuples, against a bare
   numpy pass that hashes the same keys (splitmix64 and fastrange, vectorised).  OSG includes
   its queue simulation (it is part of its decision loop).  The shedding family's simulators
   (LAS, Base Line, Straw-Man, Full Knowledge; ShedPart and Storm fields grouping) run on the
   same keys in the same run, against the same baseline.
2. ``queues``: the shared worker-queue simulation (:func:`skewbench.simulation.simulate_queues`:
   per-worker sums, fine and per-window latency histograms) of 10^7 assigned tuples, against the
   bare FIFO loop of the round-robin baseline (:func:`~skewbench.simulation.round_robin_latency`)
   on the same tuples, one core.
3. ``spark``: the whole replay (pre-pass, reading, routing, queues, metrics) of one dataset
   through 7 strategies at 5 workers and 5 sources on Spark ``local[2]``, against the summed
   single-core kernel times of the 7 strategies on the same tuples (the target: at most 1.5x)
   and the in-process engine (identical results); generation time and peak memory (this process
   and its children) are reported.  Above 2 x 10^8 tuples only generation and the Spark replay
   run (the kernels would need the whole stream in memory).

    python benchmarks/bench_grouping.py kernels [--tuples 10000000]
    python benchmarks/bench_grouping.py queues [--tuples 10000000]
    python benchmarks/bench_grouping.py spark [--tuples 100000000]
    python benchmarks/bench_grouping.py all
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np

from skewbench.datasets.generators import StreamSpec, generate
from skewbench import registry
from skewbench.grouping.base import Batch

SPARK_TARGET = 1.5  # Spark replay / summed single-core kernel time (issue: scale)
QUEUE_TARGET = 15.0  # two logarithms per tuple (fine and per-window histogram bins) dominate


def kernel_rows() -> list[tuple[str, str, dict, float | None]]:
    """The kernel rows, (label, strategy, parameters, target), from the strategies' own settings:
    every grouping strategy with a ``bench_target`` (its defaults), each followed by its
    ``bench_variants`` (labelled ``"<name> (<variant>)"``, target None: reported, not checked)."""
    rows: list[tuple[str, str, dict, float | None]] = []
    for name, target in registry.per_strategy("grouping", "bench_target").items():
        if target is None:
            continue
        rows.append((name, name, {}, target))
        for variant, params in getattr(registry.get("grouping", name), "bench_variants", {}).items():
            rows.append((f"{name} ({variant})", name, dict(params), None))
    return rows


def shed_targets() -> dict[str, float]:
    """The shedding family's simulators' targets: every shedding strategy's ``bench_target``
    that is not None (a class without the attribute has none)."""
    return {name: t for name, t in registry.per_strategy("shedding", "bench_target").items() if t is not None}


def _mix64_np(x: np.ndarray) -> np.ndarray:
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def numpy_hash_pass(keys: np.ndarray, n: int, chunk: int = 1 << 20) -> float:
    """The baseline: hash every key to a worker with vectorised numpy, chunk by chunk."""
    seed = np.uint64(0x243F6A8885A308D3)
    t = time.perf_counter()
    sink = 0
    with np.errstate(over="ignore"):
        for lo in range(0, len(keys), chunk):
            h = _mix64_np(keys[lo:lo + chunk].astype(np.uint64) ^ seed)
            w = ((h >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32)
            sink += int(w[-1])
    return time.perf_counter() - t


def _best(f, repeat: int) -> float:
    return min(f() for _ in range(repeat))


def bench_kernels(tuples: int, keys: int, alpha: float, workers: int, sources: int, repeat: int) -> dict:
    spec = StreamSpec.zipf(alpha, keys, tuples, seed=1, cost={"model": "levels", "levels": 64, "low": 0.1, "high": 6.4})
    from skewbench.datasets.generators import Plan

    plan = Plan(spec)
    blocks = [plan.block(b) for b in range(plan.n_blocks)]
    cols = {c: np.concatenate([b[c] for b in blocks]) for c in blocks[0]}
    seq, key, cost = cols["seq"], cols["key"], cols["cost"]
    ts = seq * (cost.mean() / workers)  # P = 100%
    base = _best(lambda: numpy_hash_pass(key, workers), repeat)
    res = {"tuples": tuples, "keys": keys, "alpha": alpha, "workers": workers, "sources": sources,
           "numpy_tuples_per_s": tuples / base, "strategies": {}}
    for label, name, params, target in kernel_rows():
        cls = registry.get("grouping", name)
        s = 1 if cls.single_source else sources
        # warm the JIT on a small stream, then time whole-stream routing on a fresh object
        cls(workers, s, 0, **params).route(Batch(seq[:1000], key[:1000], ts[:1000], cost[:1000]))

        def run() -> float:
            strat = cls(workers, s, 0, **params)
            t = time.perf_counter()
            strat.route(Batch(seq, key, ts, cost))
            return time.perf_counter() - t

        el = _best(run, repeat)
        res["strategies"][label] = {"tuples_per_s": tuples / el, "time_ratio": el / base,
                                    "target": target}
    res["shedding"] = bench_shedding(key, cost, base, repeat)
    return res


def bench_shedding(key: np.ndarray, cost: np.ndarray, base: float, repeat: int) -> dict:
    """The shedding family's simulators on the same keys, against the same baseline: every
    shedding strategy with a ``bench_target``, with its default parameters.  Operator shedders in
    front of one operator at u = 25% (P = 75), tau = 6.4 ms; partition shedders on 4 workers over
    sliding windows of 10^6 tuples (slide 5 x 10^5), values drawn from the costs."""
    from skewbench.shedding import las

    m = len(key)
    k31 = key % (1 << 31)
    arr = np.arange(m, dtype=np.float64) * (cost.mean() * 0.75)
    ts = np.arange(m, dtype=np.float64) * 1e-3  # 1000 tuples per second: windows of 1000 s
    values = cost * (1.0 + 0.1 * np.sin(np.arange(m)))
    out: dict = {}
    for name, target in shed_targets().items():
        strat = registry.get("shedding", name)()
        if strat.kind == "operator":
            cfg = las.LASConfig(tau=6.4, u=0.25, wbar=float(cost.mean()))
            strat.simulate(k31[:5000], arr[:5000], cost[:5000], cfg, 0)  # JIT warm-up

            def call(strat=strat, cfg=cfg) -> None:
                strat.simulate(k31, arr, cost, cfg, 0)
        else:
            strat.replay(ts[:20000], key[:20000], values[:20000], strat.config(5.0, 2.5, 4, 0.10, 0.95), 0)
            cfg = strat.config(1000.0, 500.0, 4, 0.10, 0.95)

            def call(strat=strat, cfg=cfg) -> None:
                strat.replay(ts, key, values, cfg, 0)

        def run(call=call) -> float:
            t = time.perf_counter()
            call()
            return time.perf_counter() - t

        el = _best(run, repeat)
        out[name] = {"tuples_per_s": m / el, "time_ratio": el / base, "target": target}
    return out


def bench_queues(tuples: int, workers: int, repeat: int, windows: int = 100) -> dict:
    from skewbench.simulation import new_queue_state, round_robin_latency, simulate_queues

    rng = np.random.default_rng(1)
    seq = np.arange(tuples, dtype=np.int64)
    assigned = rng.integers(0, workers, tuples).astype(np.int64)
    cost = rng.uniform(0.1, 6.4, tuples)
    arrival = seq * (cost.mean() / workers)  # P = 100%
    window = (seq * windows // tuples).astype(np.int64)
    group = np.ones(workers, dtype=np.bool_)

    def fifo() -> float:
        free, lat = np.full(workers, -np.inf), np.zeros(workers)
        t = time.perf_counter()
        round_robin_latency(seq, arrival, cost, group, free, lat, workers)
        return time.perf_counter() - t

    def full() -> float:
        st = new_queue_state(workers, windows)
        t = time.perf_counter()
        simulate_queues(st, assigned, arrival, cost, group, window)
        return time.perf_counter() - t

    fifo(), full()  # JIT / cache warm-up
    base, el = _best(fifo, repeat), _best(full, repeat)
    return {"tuples": tuples, "workers": workers, "fifo_tuples_per_s": tuples / base,
            "queues_tuples_per_s": tuples / el, "time_ratio": el / base, "target": QUEUE_TARGET}


class PeakRSS:
    """The peak resident memory of this process and all its descendants (Spark's JVM and Python
    workers), sampled every ``period`` seconds in a thread while the ``with`` block runs."""

    def __init__(self, period: float = 0.2):
        import threading

        self.period, self.peak, self._stop = period, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> int:
        import psutil

        me = psutil.Process()
        total = 0
        for p in [me, *me.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._sample())
            self._stop.wait(self.period)

    def __enter__(self) -> "PeakRSS":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._sample())


SPARK_STRATEGIES = ["kg", "sg", "pkg", "dc", "wc", "rr", "osg"]


def kernel_seconds(ds_path: str, names: list[str], workers: int, sources: int, provisioning: float) -> dict:
    """Each strategy's single-core routing time over the dataset (one fresh object per strategy
    routing all its tuples, after a warm-up), the arrivals of the replay's provisioning: the sum
    of its ``route`` calls over the dataset's blocks of 2^20 tuples (the blocks are read and
    prepared outside the timed calls; the engine routes the same blocks)."""
    from skewbench.datasets.contract import open_dataset

    ds = open_dataset(ds_path)
    mean_cost = sum(float(np.sum(b["cost"])) for b in ds.iter_batches(["cost"])) / ds.tuples
    tau = mean_cost * provisioning / (100.0 * workers)
    out = {}
    for name in names:
        cls = registry.get("grouping", name)
        s = 1 if cls.single_source else sources
        for b in ds.iter_batches(["seq", "key", "cost"], 1000):  # warm-up: arrays of the same types
            cls(workers, s, 0).route(Batch(b["seq"], b["key"], b["seq"] * tau, b["cost"]))
            break
        strat = cls(workers, s, 0)
        el = 0.0
        for b in ds.iter_batches(["seq", "key", "cost"]):
            batch = Batch(b["seq"], b["key"], b["seq"] * tau, b["cost"])
            t0 = time.perf_counter()
            strat.route(batch)
            el += time.perf_counter() - t0
        out[name] = el
    return out


def bench_spark(tuples: int, keys: int, alpha: float, workdir: str | None, kernels: bool = True,
                local: bool = True, master: str = "local[2]") -> dict:
    """The whole replay of ``tuples`` through 7 strategies (n = 5, s = 5, P = 100%) on Spark,
    against the summed single-core kernel times of the same strategies on the same tuples and
    the in-process engine, all in this run; the Spark replay's wall time includes the pre-pass,
    reading, queues and metrics (the session is started and warmed up before)."""
    from skewbench.grouping.engine import ReplayConfig, grid, replay
    from skewbench.replay import spark_executor
    from skewbench.results import read_results
    from skewbench.spark import generate_on_spark, get_spark

    work = tempfile.mkdtemp(prefix="skewbench-bench-", dir=workdir)
    try:
        spark = get_spark(master, app_name="skewbench-bench")
        spec = StreamSpec.zipf(alpha, keys, tuples, seed=1, cost={"model": "levels", "levels": 64, "low": 0.1, "high": 6.4})
        t = time.perf_counter()
        with PeakRSS() as gen_rss:
            generate_on_spark(spark, spec, f"{work}/d")
        t_gen = time.perf_counter() - t
        cells = grid(SPARK_STRATEGIES, [5], [5], [0])
        config = ReplayConfig(provisioning=100.0)
        res: dict = {"tuples": tuples, "cells": len(cells), "master": master, "generate_seconds": t_gen,
                     "generate_peak_rss_gb": gen_rss.peak / 1e9}
        if kernels:
            res["kernel_seconds"] = kernel_seconds(f"{work}/d", SPARK_STRATEGIES, 5, 5, 100.0)
            res["kernel_sum_seconds"] = sum(res["kernel_seconds"].values())
        # warm-up on a small dataset: JIT caches, Python workers
        generate_on_spark(spark, StreamSpec.zipf(alpha, keys, 20_000, seed=2), f"{work}/w")
        replay(f"{work}/w", cells, config, spark_executor(spark))
        from skewbench.grouping.engine import replay_to_dir

        t = time.perf_counter()
        with PeakRSS() as rss:
            replay_to_dir(f"{work}/d", cells, f"{work}/spark", config, spark_executor(spark), engine_name="spark")
        res["spark_seconds"] = time.perf_counter() - t
        res["spark_peak_rss_gb"] = rss.peak / 1e9
        spark.stop()
        if kernels:
            res["time_ratio"] = res["spark_seconds"] / res["kernel_sum_seconds"]
            res["target"] = SPARK_TARGET
        if local:
            replay(f"{work}/w", cells, config)
            t = time.perf_counter()
            replay_to_dir(f"{work}/d", cells, f"{work}/local", config)
            res["local_seconds"] = time.perf_counter() - t
            _, s1, t1 = read_results(f"{work}/local")
            _, s2, t2 = read_results(f"{work}/spark")
            keep = [c for c in s1.column_names if c not in ("route_seconds", "sim_tuples_per_s", "wall_seconds")]
            res["identical_results"] = bool(s1.select(keep).equals(s2.select(keep)) and t1.equals(t2))
        res["tuple_cells_per_s_spark"] = tuples * len(cells) / res["spark_seconds"]
        return res
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["kernels", "queues", "spark", "all"], nargs="?", default="all")
    ap.add_argument("--tuples", type=int, default=None, help="default: 10^7 (kernels), 10^8 (spark)")
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--workers", type=int, default=5)
    ap.add_argument("--sources", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--master", default="local[2]", help="Spark master of the spark benchmark")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out: dict = {}
    ok = True
    if a.what in ("kernels", "all"):
        out["kernels"] = r = bench_kernels(a.tuples or 10_000_000, a.keys, a.alpha, a.workers, a.sources, a.repeat)
        if not a.json:
            print(f"kernels: {r['tuples']:,} Zipf({r['alpha']}) tuples, {r['keys']:,} keys, n={r['workers']}, "
                  f"s={r['sources']}, one core")
            print(f"  {'numpy hash pass':16s} {r['numpy_tuples_per_s'] / 1e6:8.1f} M tuples/s   (baseline)")
        for name, v in r["strategies"].items():
            good = v["target"] is None or v["time_ratio"] <= v["target"]
            ok &= good
            if not a.json:
                verdict = "(no target)" if v["target"] is None else \
                    f"(target <= {v['target']}x) {'ok' if good else 'MISSED'}"
                print(f"  {name:20s} {v['tuples_per_s'] / 1e6:8.1f} M tuples/s   {v['time_ratio']:6.2f}x {verdict}")
        for name, v in r["shedding"].items():
            good = v["target"] is None or v["time_ratio"] <= v["target"]
            ok &= good
            if not a.json:
                verdict = "(no target)" if v["target"] is None else \
                    f"(target <= {v['target']}x) {'ok' if good else 'MISSED'}"
                print(f"  shedding {name:7s} {v['tuples_per_s'] / 1e6:8.1f} M tuples/s   {v['time_ratio']:6.2f}x {verdict}")
    if a.what in ("queues", "all"):
        out["queues"] = r = bench_queues(a.tuples or 10_000_000, a.workers, a.repeat)
        good = r["time_ratio"] <= r["target"]
        ok &= good
        if not a.json:
            print(f"queues: {r['tuples']:,} tuples, n={r['workers']}, one core")
            print(f"  {'bare FIFO loop':16s} {r['fifo_tuples_per_s'] / 1e6:8.1f} M tuples/s   (baseline)")
            print(f"  {'queue simulation':16s} {r['queues_tuples_per_s'] / 1e6:8.1f} M tuples/s   "
                  f"{r['time_ratio']:6.2f}x (target <= {r['target']}x) {'ok' if good else 'MISSED'}")
    if a.what in ("spark", "all"):
        big = (a.tuples or 0) > 200_000_000  # no in-memory kernels or in-process replay at 10^9
        out["spark"] = r = bench_spark(a.tuples or 100_000_000, a.keys, a.alpha, a.workdir, kernels=not big,
                                       local=not big, master=a.master)
        good = (r.get("time_ratio", 0) <= r.get("target", 1)) and r.get("identical_results", True)
        ok &= good
        if not a.json:
            print(f"spark replay: {r['tuples']:,} tuples x {r['cells']} strategies, n=5, s=5, {r['master']}")
            print(f"  generation on Spark {r['generate_seconds']:8.1f} s   peak RSS {r['generate_peak_rss_gb']:.2f} GB")
            if "kernel_seconds" in r:
                ks = ", ".join(f"{k} {v:.1f}" for k, v in r["kernel_seconds"].items())
                print(f"  kernels, one core   {r['kernel_sum_seconds']:8.1f} s   ({ks})")
            print(f"  Spark replay        {r['spark_seconds']:8.1f} s   peak RSS {r['spark_peak_rss_gb']:.2f} GB"
                  + (f"   {r['time_ratio']:.2f}x the kernels (target <= {r['target']}x) "
                     f"{'ok' if good else 'MISSED'}" if "time_ratio" in r else ""))
            if "local_seconds" in r:
                print(f"  in-process engine   {r['local_seconds']:8.1f} s   identical results: {r['identical_results']}")
    if a.json:
        print(json.dumps(out))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
