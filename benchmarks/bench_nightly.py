"""The nightly's wall time against its critical path (issue 44): ``make run``'s nightly twice on a
fresh state (a new Airflow database, MLflow store, datasets and runs: the first night generates
the default catalog, the second finds it), its tasks two at a time (skewbench.dagrun) unless
``--parallelism`` says otherwise.

Per night: the script's wall time (Airflow's start and the API server's included), the DAG run's
span (its first task's start to its last task's end), the CPU time of the whole run (every process
under it, Spark's JVMs included: ``getrusage`` of the waited-for children), the sum of the tasks'
durations (what one task at a time would take, with nothing else changed), the critical path (the
longest chain of dependent task instances by their durations, :func:`skewbench.dagrun.critical_path`)
with its tasks, and the five slowest tasks. Targets: span / critical path <= 1.3, and the second
night's wall time no more than the first's.

    python benchmarks/bench_nightly.py [--nights 2] [--parallelism 2] [--keep DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from skewbench.dagrun import critical_path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TARGET = 1.3


def fresh_env(state: Path, parallelism: int) -> dict[str, str]:
    """make run's environment (the Makefile's exports) over a state directory of its own."""
    env = {**os.environ, "SKEWBENCH_STATE": str(state), "AIRFLOW_HOME": str(state / "airflow"),
           "SKEWBENCH_TRACKING_URI": f"sqlite:///{state}/mlflow/mlflow.db",
           "SKEWBENCH_MLFLOW_ARTIFACTS": str(state / "mlflow" / "artifacts"),
           "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"), "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "SKEWBENCH_RUN_PARALLELISM": str(parallelism),
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "GX_ANALYTICS_ENABLED": "false", "MLFLOW_DISABLE_TELEMETRY": "true",
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.setdefault("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[*]"}))
    return env


def night(env: dict[str, str]) -> dict:
    """One make run (after `airflow db migrate`, as the Makefile does): its figures."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    (Path(env["SKEWBENCH_STATE"]) / "mlflow").mkdir(parents=True, exist_ok=True)
    subprocess.run([str(BIN / "airflow"), "db", "migrate"], env=env, check=True, capture_output=True)
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "run_nightly.py")], env=env, capture_output=True,
                       text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    log = next((ln.rsplit("log: ", 1)[1] for ln in p.stdout.splitlines() if "; log: " in ln), None)
    text = Path(log).read_text(errors="replace") if log else ""
    line = next((ln for ln in text.splitlines() if ln.startswith("NIGHTLY ")), None)
    if p.returncode != 0 or line is None:
        sys.exit(f"the nightly failed (exit {p.returncode}); log {log}\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
    res = json.loads(line[len("NIGHTLY "):])
    times = res["times"]
    seconds = {k: e - s for k, (s, e) in times.items()}
    span = max(e for _, e in times.values()) - min(s for s, _ in times.values())
    crit, path = critical_path(seconds, res["upstream"])
    return {"wall_s": wall, "span_s": span, "cpu_s": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
            "tasks": len(times), "task_sum_s": sum(seconds.values()), "critical_path_s": crit, "critical_path": path,
            "span_over_critical": span / crit if crit else None, "parallelism": res.get("parallelism"),
            "slowest": sorted(seconds.items(), key=lambda kv: -kv[1])[:5], "log": log}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nights", type=int, default=2)
    ap.add_argument("--parallelism", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="the state directory (kept); default a temporary one, removed")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-nightly-") as tmp:
        state = a.keep.resolve() if a.keep else Path(tmp)
        env = fresh_env(state, a.parallelism)
        nights = []
        for i in range(a.nights):
            nights.append(night(env))
            n = nights[-1]
            if not a.json:
                print(f"night {i + 1}: wall {n['wall_s']:.0f} s, DAG run {n['span_s']:.0f} s over {n['tasks']} tasks "
                      f"({n['parallelism']} at once), critical path {n['critical_path_s']:.0f} s "
                      f"({n['span_over_critical']:.2f}x; target <= {TARGET}), tasks one at a time {n['task_sum_s']:.0f} s, "
                      f"CPU {n['cpu_s']:.0f} s", flush=True)
                print("  critical path: " + " -> ".join(n["critical_path"]))
                print("  slowest: " + ", ".join(f"{k} {v:.0f} s" for k, v in n["slowest"]), flush=True)
    ok = all(n["span_over_critical"] is not None and n["span_over_critical"] <= TARGET for n in nights) and \
        all(b["wall_s"] <= a_["wall_s"] for a_, b in zip(nights, nights[1:]))
    if a.json:
        print(json.dumps({"nights": nights, "target": TARGET, "met": ok}, indent=1))
    else:
        print(f"targets (span <= {TARGET}x the critical path; each night no slower than the one before): "
              f"{'met' if ok else 'NOT met'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
