"""Run the skewbench_nightly DAG once with `dag.test()` on the embedded defaults (`make run`).

The DAG's chatty log goes to $SKEWBENCH_STATE/logs/nightly-<time>.log; this prints which tasks
ran, then the run's summary table and where the results, the report and MLflow's store are.
Usage: python scripts/run_nightly.py [JSON_CONF]   (e.g. '{"grouping_workers": [5, 10]}')
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


class _Progress:
    """Echo each task's start and end from dag.test()'s log, with the elapsed time."""

    PATTERN = re.compile(r"\[DAG TEST\] (starting|end task) task_id=(\S+) map_index=(-?\d+)")

    def __init__(self, log: Path, t0: float) -> None:
        self.log, self.t0, self.pos, self.started = log, t0, 0, {}

    def poll(self) -> None:
        with open(self.log, "rb") as f:
            f.seek(self.pos)
            chunk = f.read()
        # only whole lines; a partial last line is read again next time
        cut = chunk.rfind(b"\n") + 1
        self.pos += cut
        for line in chunk[:cut].decode(errors="replace").splitlines():
            m = self.PATTERN.search(line)
            if not m:
                continue
            what, task, idx = m.groups()
            name = task if idx == "-1" else f"{task}[{idx}]"
            try:  # the log line's own time stamp
                stamp = datetime.fromisoformat(line.split()[0]).timestamp()
            except (ValueError, IndexError):
                stamp = time.time()
            if what == "starting":
                self.started[name] = stamp
            else:
                took = stamp - self.started.pop(name, stamp)
                print(f"  {time.monotonic() - self.t0:5.0f} s  {name:28s} took {took:5.1f} s", flush=True)


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
        follow = _Progress(log, t0)
        while proc.poll() is None:
            time.sleep(2)
            follow.poll()
        follow.poll()
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
