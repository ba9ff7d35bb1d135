"""The capacity sweep's cost (issue 42): ``skewbench replay grouping`` as a fresh process, with
the default sweep (every strategy setting also routed at n = 1, 2, 4, ..., 1024, busy time only)
against ``--scaling none``, measured in the same run.

Input (generated here, seed 1): 10^6 finite-Zipf tuples, alpha 1.2, 10^4 keys, no cost column;
the nightly's grid (the nine default strategies, n = 5, 10, 50, 100, s = 5), ``--metrics all``
and ``--metrics balance``; the sweep over a replay's default grid (every power of two to 1024)
and over the nightly's (every other one: ``skewbench.grouping.params.NIGHTLY_SCALING``).  Each
command runs once untimed, then ``--repeat`` times; the best time counts.  Target: the nightly's
sweep at most doubles a replay's wall time with every metric (``nightly / none <= 2``).

    python benchmarks/bench_sweep.py [--repeat 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from skewbench.grouping.params import NIGHTLY_SCALING

BIN = Path(sys.executable).parent
TARGET = 2.0


def _time(cmd: list[str], repeat: int) -> float:
    subprocess.run(cmd, check=True, capture_output=True)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    sk = str(BIN / "skewbench")
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as work:
        ds = f"{work}/z"
        subprocess.run([sk, "datasets", "generate", "zipf", "--alpha", "1.2", "--keys", "10000", "--tuples",
                        "1000000", "--seed", "1", "--out", ds], check=True, capture_output=True)
        rows = {}
        for mode in ("all", "balance"):
            base = [sk, "replay", "grouping", "--dataset", ds, "--workers", "5,10,50,100", "--sources", "5",
                    "--metrics", mode, "--out", f"{work}/r", "--overwrite"]
            none = _time(base + ["--scaling", "none"], a.repeat)
            sweep = _time(base, a.repeat)
            nightly = _time(base + ["--scaling", ",".join(map(str, NIGHTLY_SCALING))], a.repeat)
            rows[mode] = {"none_s": none, "sweep_s": sweep, "ratio": sweep / none, "nightly_s": nightly,
                          "nightly_ratio": nightly / none}
    ok = rows["all"]["nightly_ratio"] <= TARGET
    if a.json:
        print(json.dumps({"rows": rows, "target": TARGET, "ok": ok}, indent=2))
    else:
        print("| metrics | --scaling none | default sweep (ratio) | nightly's sweep (ratio) |\n|---|---|---|---|")
        for mode, r in rows.items():
            print(f"| {mode} | {r['none_s']:.2f} s | {r['sweep_s']:.2f} s ({r['ratio']:.2f}) | "
                  f"{r['nightly_s']:.2f} s ({r['nightly_ratio']:.2f}) |")
        print(f"target: the nightly's sweep <= {TARGET}x with every metric: {'met' if ok else 'MISSED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
