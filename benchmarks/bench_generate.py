"""Benchmark: generating Zipf tuples to Parquet with Spark local[2] vs a bare numpy sampling loop.

Both are measured in the same run on the same machine, and the figure that matters is their
ratio (the machine is shared and noisy).  The baseline is the least work that produces the same
samples: uniform draws and an inverse-CDF ``searchsorted`` over the finite-Zipf cumulative pmf,
in chunks, on one core, writing nothing.  The Spark job does all of generation (keys, rank-to-key
permutation, timestamps), the fingerprint and the Parquet write, on ``local[2]``.

    python benchmarks/bench_generate.py [--tuples 100000000] [--keys 10000] [--alpha 1.0] [--json]
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

from skewbench.datasets.generators import StreamSpec, generate, zipf_cdf, zipf_pmf


def bare_numpy(tuples: int, keys: int, alpha: float, chunk: int = 1 << 20) -> float:
    cdf = zipf_cdf(zipf_pmf(keys, alpha))
    rng = np.random.default_rng(1)
    t = time.perf_counter()
    done, sink = 0, 0
    while done < tuples:
        n = min(chunk, tuples - done)
        sink += int(np.searchsorted(cdf, rng.random(n), side="right")[-1])
        done += n
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tuples", type=int, default=100_000_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--local", action="store_true", help="also time the in-process generator (one core)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--workdir", default=None, help="where to write (default: a temp dir, removed after)")
    a = ap.parse_args()

    from skewbench.spark import generate_on_spark, get_spark

    work = tempfile.mkdtemp(prefix="skewbench-bench-", dir=a.workdir)
    try:
        spark = get_spark(a.master, app_name="skewbench-bench")
        par = spark.sparkContext.defaultParallelism
        # warm-up: JVM, Python workers, numba's cached kernels
        generate_on_spark(spark, StreamSpec.zipf(a.alpha, a.keys, 2_000_000, 1), f"{work}/warm", partitions=par)
        bare_numpy(2_000_000, a.keys, a.alpha)

        t_np = bare_numpy(a.tuples, a.keys, a.alpha)
        spec = StreamSpec.zipf(a.alpha, a.keys, a.tuples, 1)
        t = time.perf_counter()
        meta = generate_on_spark(spark, spec, f"{work}/spark", partitions=par)
        t_spark = time.perf_counter() - t
        size = sum(os.path.getsize(os.path.join(f"{work}/spark", f["name"])) for f in meta["files"])
        res = {
            "tuples": a.tuples, "keys": a.keys, "alpha": a.alpha, "master": a.master, "cores": os.cpu_count(),
            "bare_numpy_tuples_per_s": a.tuples / t_np,
            "spark_tuples_per_s": a.tuples / t_spark,
            "spark_seconds": t_spark, "bare_numpy_seconds": t_np,
            "ratio_spark_time_over_numpy": t_spark / t_np,
            "parquet_bytes_per_tuple": size / a.tuples,
        }
        if a.local:
            shutil.rmtree(f"{work}/spark")
            t = time.perf_counter()
            generate(spec, f"{work}/local")
            t_local = time.perf_counter() - t
            res["local_tuples_per_s"] = a.tuples / t_local
            res["ratio_local_time_over_numpy"] = t_local / t_np
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if a.json:
        print(json.dumps(res))
    else:
        print(f"generate {a.tuples:,} Zipf({a.alpha}) tuples over {a.keys:,} keys")
        print(f"  bare numpy sampling loop (1 core, no output): {res['bare_numpy_tuples_per_s'] / 1e6:8.2f} M tuples/s")
        print(f"  Spark {a.master} job to Parquet:             {res['spark_tuples_per_s'] / 1e6:8.2f} M tuples/s"
              f"   time ratio {res['ratio_spark_time_over_numpy']:.2f}x (target <= 3x)")
        if a.local:
            print(f"  in-process generator to Parquet (1 core):   {res['local_tuples_per_s'] / 1e6:8.2f} M tuples/s"
                  f"   time ratio {res['ratio_local_time_over_numpy']:.2f}x")
        print(f"  Parquet: {res['parquet_bytes_per_tuple']:.2f} bytes per tuple")
    sys.exit(0 if res["ratio_spark_time_over_numpy"] <= 3 else 1)


if __name__ == "__main__":
    main()
