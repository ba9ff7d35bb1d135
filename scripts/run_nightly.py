"""Run the skewbench_nightly DAG once with `dag.test()` on the embedded defaults (`make run`).

The DAG's chatty log goes to $SKEWBENCH_STATE/logs/nightly-<time>.log; this prints which tasks
ran, then the run's summary table and where the results, the report and MLflow's store are.
Usage: python scripts/run_nightly.py [JSON_CONF]   (e.g. '{"workers": [5, 10]}')
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(conf: dict) -> None:
    import great_expectations  # noqa: F401  (before Airflow, or GE's logging floods)
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(str(ROOT / "dags"))
    if bag.import_errors:
        print("DAG import errors:", json.dumps({k: str(v) for k, v in bag.import_errors.items()}), flush=True)
        sys.exit(2)
    run = bag.get_dag("skewbench_nightly").test(run_conf=conf)
    states = {f"{ti.task_id}[{ti.map_index}]" if ti.map_index >= 0 else ti.task_id: str(ti.state)
              for ti in run.get_task_instances()}
    print("NIGHTLY " + json.dumps({"state": str(run.state), "run_id": run.run_id, "tasks": states}), flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(json.loads(sys.argv[2]))
        return
    conf = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    state = Path(os.environ.get("SKEWBENCH_STATE", ROOT / ".skewbench"))
    logs = state / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"nightly-{datetime.now():%Y%m%d-%H%M%S}.log"
    print(f"running skewbench_nightly (conf {json.dumps(conf)}); log: {log}", flush=True)
    t0 = time.monotonic()
    with open(log, "w") as f:
        proc = subprocess.Popen([sys.executable, __file__, "--child", json.dumps(conf)], stdout=f, stderr=subprocess.STDOUT)
        while proc.poll() is None:
            time.sleep(10)
            print(f"  ... {time.monotonic() - t0:5.0f} s", flush=True)
    text = log.read_text(errors="replace")
    line = next((ln for ln in text.splitlines() if ln.startswith("NIGHTLY ")), None)
    if line is None:
        print("\n".join(text.splitlines()[-40:]))
        sys.exit(f"the nightly run did not finish; see {log}")
    res = json.loads(line[len("NIGHTLY "):])
    print(f"\nskewbench_nightly {res['run_id']}: {res['state']} in {time.monotonic() - t0:.0f} s")
    for task, st in sorted(res["tasks"].items()):
        print(f"  {task:28s} {st}")
    summaries = sorted((state / "runs").rglob("SUMMARY.md"), key=lambda p: p.stat().st_mtime)
    if res["state"] != "success" or not summaries:
        sys.exit(f"the nightly run failed; see {log}")
    print()
    print(summaries[-1].read_text())
    print(f"MLflow store: {os.environ.get('SKEWBENCH_TRACKING_URI')} (browse with `make ui`)")


if __name__ == "__main__":
    main()
