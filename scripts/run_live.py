"""Run the skewbench_live DAG once with `dag.test()` (`make live`).

Without a conf it runs a short one, DEFAULT_CONF, made to finish in under 10 minutes on a
2-core machine with the Flink environment (`make flink-env`): the catalog's live-zipf-1.4 on
Flink and Spark, strategies kg, pkg, dc, sg, flink and spark-sql, 8 workers at 10 ms a tuple,
every phase twice, no capacity search (the weekly run's takes about 20 minutes a dataset).
On Flink a phase is 8 s of stream at 62.5% of the workers' capacity (500
tuples a second: 4,000 tuples), on Spark a batch stage of 1,000 tuples. About 7 minutes in all:
Flink's cluster, warm-up and two calibrations take about 1.8 min and its 12 phases about 3.5
(the skewed ones drain for up to 20 s), Spark about 1, Airflow, the dataset and MLflow the rest.
Why 10 ms: Spark's per-record overhead (0.1-0.3 ms, a sleeping task's wake-up) varies from one
calibration stage to the next by more than the run accepts at 1-5 ms a tuple (it refuses an
overhead that moved by over 25% of the larger of itself and 1% of the cost).
A conf given (JSON, `make live RUN_CONF='...'`) replaces DEFAULT_CONF: the Params it does not
name take the DAG's defaults (the weekly run's: every default strategy, 1 ms a tuple, 30 s phases,
3 runs each).

Its log goes to $SKEWBENCH_STATE/logs/live-<time>.log; meanwhile one line per finished task and
per finished phase, calibration and repetition the live runs report, then each dataset's table
of measured against predicted (skewbench.live.cli.table), the rank agreement, and where the page
and MLflow's store are.
Usage: python scripts/run_live.py [JSON_CONF]   (e.g. '{"engines": ["spark"], "repeat": 1}')
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DAG = "skewbench_live"
#: the short run `make live` does without a conf (module docstring)
DEFAULT_CONF = {"datasets": ["live-zipf-1.4"], "engines": ["flink", "spark"],
                "strategies": ["kg", "pkg", "dc", "sg", "flink", "spark-sql"], "workers": 8, "cost": "10",
                "duration": 8, "repeat": 2, "spark_tuples": 1000, "capacity_search": False}
#: the lines echoed while the run goes: Airflow's end of each task, and the live run's progress
#: (skewbench.live.run): "flink: a local cluster of 2 TaskManagers ... is up", "flink: 12 phases
#: (6 strategies x 2), about 3 min of stream and drain (predicted)", "flink: calibration
#: calibration-before-busy done (...)", "flink: phase kg#1 done (...)", "flink: calibration before:
#: overhead ...", "flink: engine done in 250 s", "spark: repetition 1/2 kg done"
SHOWN = re.compile(r"\[DAG TEST\] end task task_id=(\S+) map_index=(-?\d+)"
                   r"|^\s*(?:flink|spark): (?:phase|again|calibration|repetition) \S.* done\b"
                   r"|^\s*flink: (?:a local cluster of |\d+ phases \(|calibration (?:before|after):|engine done)")


def child(conf: dict) -> None:
    import great_expectations  # noqa: F401  (before Airflow, or GE's logging floods)
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(str(ROOT / "dags"))
    if bag.import_errors:
        print("DAG import errors:", json.dumps({k: str(v) for k, v in bag.import_errors.items()}), flush=True)
        sys.exit(2)
    run = bag.get_dag(DAG).test(run_conf=conf)
    states = {f"{ti.task_id}[{ti.map_index}]" if ti.map_index >= 0 else ti.task_id: str(ti.state)
              for ti in run.get_task_instances()}
    print("LIVERUN " + json.dumps({"state": str(run.state), "run_id": run.run_id, "tasks": states}), flush=True)


def results(run_id: str) -> list[Path]:
    """The run's live.json files (one per dataset), wherever the runs root put them."""
    from skewbench.settings import settings

    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", run_id).strip("_")
    return sorted(settings().runs_root.glob(f"*/live-{safe}/*/live.json"))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(json.loads(sys.argv[2]))
        return
    conf = json.loads(sys.argv[1]) if len(sys.argv) > 1 else dict(DEFAULT_CONF)
    state = Path(os.environ.get("SKEWBENCH_STATE", ROOT / ".skewbench"))
    (state / "logs").mkdir(parents=True, exist_ok=True)
    log = state / "logs" / f"live-{datetime.now():%Y%m%d-%H%M%S}.log"
    print(f"running {DAG} (conf {json.dumps(conf)}); log: {log}", flush=True)
    t0 = time.monotonic()
    with open(log, "w") as f:
        proc = subprocess.Popen([sys.executable, __file__, "--child", json.dumps(conf)], stdout=f, stderr=subprocess.STDOUT)
        pos = 0
        while proc.poll() is None:
            time.sleep(1)
            with open(log, "rb") as r:
                r.seek(pos)
                chunk = r.read()
            cut = chunk.rfind(b"\n") + 1
            pos += cut
            for line in chunk[:cut].decode(errors="replace").splitlines():
                m = SHOWN.search(line)
                if m:
                    what = f"task {m.group(1)}" + (f"[{m.group(2)}]" if m.group(2) not in (None, "-1") else "") \
                        if m.group(1) else line.strip()
                    print(f"  {time.monotonic() - t0:5.0f} s  {what}", flush=True)
    text = log.read_text(errors="replace")
    line = next((ln for ln in text.splitlines() if ln.startswith("LIVERUN ")), None)
    if line is None:
        print("\n".join(text.splitlines()[-20:]))
        print(f"{DAG} did not run; log: {log}")
        sys.exit(1)
    run = json.loads(line[8:])
    failed = [t for t, s in run["tasks"].items() if s == "failed"]
    print(f"\n{DAG} {run['run_id']}: {run['state']} in {time.monotonic() - t0:.0f} s"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    from skewbench.live.cli import table
    from skewbench.live.steps import describe

    for path in results(run["run_id"]):
        res = json.loads(path.read_text())
        print(f"\n{describe(res)}\n{table(res['rows'])}")
        for a in res["agreement"]:
            tau = "-" if a["kendall_tau"] is None else f"{a['kendall_tau']:.3f}"
            print(f"  {a['engine']}: {a['metric']} ranks {a['strategies']} strategies alike, Kendall tau {tau}")
    pages = sorted({p.parent.parent / "live.html" for p in results(run["run_id"])})
    for page in pages:
        if page.exists():
            print(f"\nsimulated against measured: {page}")
    print(f"\ntask log: {log}\nMLflow store: {os.environ.get('SKEWBENCH_TRACKING_URI', '(default)')} (browse with `make ui`)")
    sys.exit(0 if run["state"] == "success" else 1)


if __name__ == "__main__":
    main()
