"""Scaling curves of the grouping replay on Spark, each point a whole replay of one Zipf dataset
(alpha 1.0) through the 7 strategies of the Spark benchmark (KG, SG, PKG, D-C, W-C, RR, OSG) at
P = 100% provisioning, measured in one run on this machine:

* **tuples**: 10^6 .. 10^8 (n = 5, s = 5, 10^4 keys) on Spark ``local[2]``, with the in-process
  engine and the summed single-core kernel time of the 7 strategies on the same tuples;
* **workers**: n = 5 .. 100 at 10^7 tuples;
* **keys**: 10^3 .. 10^6 distinct keys at 10^7 tuples;
* **tasks**: the cells dealt over 1, 2, 4 and 7 replay tasks (``--partitions``) at 2 x 10^7 tuples;
* **cores**: strong scaling, Spark ``local[1]``, ``local[2]`` and ``local[4]`` on the same
  2 x 10^7 tuples (this machine has 2 cores: ``local[4]`` shows the cost of oversubscription).

Every replay is checked to give the same results as the first one of its dataset.  Writes a
JSON file and one PNG of the five curves (``--plot``); BENCHMARKS.md shows both.

    python benchmarks/bench_scaling.py [--max-tuples 100000000] [--plot docs/img/bench_scaling.png]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_grouping import SPARK_STRATEGIES, kernel_seconds  # noqa: E402

from skewbench.datasets.generators import StreamSpec  # noqa: E402

COST = {"model": "levels", "levels": 64, "low": 0.1, "high": 6.4}
TIMING = ("route_seconds", "sim_tuples_per_s", "wall_seconds")


def _summary(out: str):
    from skewbench.results import read_results

    _, s, t = read_results(out)
    keep = [c for c in s.column_names if c not in TIMING]
    return s.select(keep), t


class Runner:
    def __init__(self, work: str):
        self.work = work
        self.spark = None
        self.master = None
        self.refs: dict[str, tuple] = {}
        self.n = 0

    def session(self, master: str):
        from skewbench.spark import get_spark

        if self.master != master:
            if self.spark is not None:
                self.spark.stop()
            self.spark = get_spark(master, app_name="skewbench-scaling")
            self.master = master
        return self.spark

    def dataset(self, tuples: int, keys: int) -> str:
        from skewbench.spark import generate_on_spark

        path = f"{self.work}/d-{tuples}-{keys}"
        if not Path(path).exists():
            generate_on_spark(self.session(self.master or "local[2]"), StreamSpec.zipf(1.0, keys, tuples, seed=1, cost=COST), path)
        return path

    def replay(self, ds: str, workers: int = 5, master: str = "local[2]", partitions: int | None = None,
               engine: str = "spark") -> float:
        """Seconds of one replay (the session started and warmed up before); checks its results
        against the first replay of the same dataset and workers."""
        from skewbench.grouping.engine import ReplayConfig, grid, replay_to_dir
        from skewbench.replay import local_executor, spark_executor

        cells = grid(SPARK_STRATEGIES, [workers], [5], [0])
        config = ReplayConfig(provisioning=100.0)
        if engine == "spark":
            spark = self.session(master)
            warm = self.dataset(20_000, 10_000)
            replay_to_dir(warm, cells, f"{self.work}/warm", config, spark_executor(spark, partitions), overwrite=True)
            executor = spark_executor(spark, partitions)
        else:
            executor = local_executor
        self.n += 1
        out = f"{self.work}/r{self.n}"
        t = time.perf_counter()
        replay_to_dir(ds, cells, out, config, executor, engine_name=engine)
        el = time.perf_counter() - t
        got = _summary(out)
        ref = self.refs.setdefault((ds, workers), got)
        if not (ref[0].equals(got[0]) and ref[1].equals(got[1])):
            raise SystemExit(f"results differ for {ds} n={workers} {engine} {master} {partitions}")
        shutil.rmtree(out)
        return el

    def stop(self) -> None:
        if self.spark is not None:
            self.spark.stop()


def run(max_tuples: int, work: str, quick: bool = False) -> dict:
    """``quick``: every size divided by 10 (a smoke test of this script)."""
    r = Runner(work)
    q = 10 if quick else 1
    res: dict = {"strategies": SPARK_STRATEGIES, "tuples": [], "workers": [], "keys": [], "tasks": [], "cores": [],
                 "mid": 10_000_000 // q, "big": 20_000_000 // q}
    try:
        t = 1_000_000 // q
        while t <= max_tuples:
            ds = r.dataset(t, 10_000)
            point = {"tuples": t, "spark": r.replay(ds), "local": r.replay(ds, engine="local")}
            if t <= 100_000_000:
                point["kernels"] = sum(kernel_seconds(ds, SPARK_STRATEGIES, 5, 5, 100.0).values())
            res["tuples"].append(point)
            print(json.dumps(point), flush=True)
            t *= 10
        ds = r.dataset(10_000_000 // q, 10_000)
        for n in (5, 10, 20, 50, 100):
            res["workers"].append(p := {"workers": n, "spark": r.replay(ds, workers=n)})
            print(json.dumps(p), flush=True)
        for k in (1_000, 10_000, 100_000, 1_000_000):
            res["keys"].append(p := {"keys": k, "spark": r.replay(r.dataset(10_000_000 // q, k))})
            print(json.dumps(p), flush=True)
        ds = r.dataset(20_000_000 // q, 10_000)
        for parts in (1, 2, 4, 7):
            res["tasks"].append(p := {"tasks": parts, "spark": r.replay(ds, partitions=parts)})
            print(json.dumps(p), flush=True)
        for cores in (1, 2, 4):
            res["cores"].append(p := {"cores": cores, "spark": r.replay(ds, master=f"local[{cores}]")})
            print(json.dumps(p), flush=True)
    finally:
        r.stop()
    return res


def plot(res: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 5, figsize=(19, 3.8))
    ax = axes[0]
    xs = [p["tuples"] for p in res["tuples"]]
    ax.loglog(xs, [p["spark"] for p in res["tuples"]], "o-", label="Spark local[2]")
    ax.loglog(xs, [p["local"] for p in res["tuples"]], "s--", label="in process (1 core)")
    kp = [p for p in res["tuples"] if "kernels" in p]
    ax.loglog([p["tuples"] for p in kp], [p["kernels"] for p in kp], "^:", label="kernels alone, summed (1 core)")
    ax.set_xlabel("tuples")
    ax.set_ylabel("seconds (7 strategies)")
    ax.set_title("time vs stream length")
    ax.legend(fontsize=7)
    for ax, key, label, log in ((axes[1], "workers", "workers n", True), (axes[2], "keys", "distinct keys", True),
                                (axes[3], "tasks", "replay tasks (--partitions)", False),
                                (axes[4], "cores", "Spark cores (local[k]; 2 physical)", False)):
        pts = res[key]
        ax.plot([p[key] for p in pts], [p["spark"] for p in pts], "o-")
        if log:
            ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.set_ylim(bottom=0)
        mid, big = f"{res['mid']:.0e} tuples", f"{res['big']:.0e} tuples"
        ax.set_title({"workers": mid, "keys": mid, "tasks": f"{big}, local[2]",
                      "cores": f"{big} (strong scaling)"}[key])
    axes[1].set_ylabel("seconds (7 strategies)")
    fig.suptitle("skewbench grouping replay on Spark: Zipf 1.0, 7 strategies, s = 5, P = 100%", fontsize=10)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-tuples", type=int, default=100_000_000)
    ap.add_argument("--plot", default="docs/img/bench_scaling.png")
    ap.add_argument("--json-out", default="benchmarks/results/scaling.json")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--quick", action="store_true", help="every size / 10 (a smoke test; writes nothing by default)")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="skewbench-scaling-", dir=a.workdir)
    try:
        res = run(a.max_tuples, work, a.quick)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    res["date"] = time.strftime("%Y-%m-%d")
    res["quick"] = a.quick
    Path(a.json_out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json_out).write_text(json.dumps(res, indent=1) + "\n")
    plot(res, a.plot)
    print(f"wrote {a.json_out} and {a.plot}")


if __name__ == "__main__":
    main()
