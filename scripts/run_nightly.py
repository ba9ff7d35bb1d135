"""Run the skewbench_nightly DAG once with `dag.test()` on the embedded defaults (`make run`).

The DAG's tasks run two at a time (skewbench.dagrun: Airflow's LocalExecutor, with an API server
started for the run; SKEWBENCH_RUN_PARALLELISM=1 runs them one after another, as dag.test()
alone does). The chatty log goes to $SKEWBENCH_STATE/logs/nightly-<time>.log; while the run goes
this shows one progress line (a bar over the DAG's tasks, rewritten in place on a terminal, a line per
tenth of the tasks otherwise), then a short summary (skewbench.present.console): the task states as
counts with the failed tasks named, the "what to pick" line of each dataset and family
(skewbench.present.picks), and where the overview, the full tables (SUMMARY.md) and MLflow's store are.
Usage: python scripts/run_nightly.py [JSON_CONF]   (e.g. '{"grouping_workers": [5, 10]}')
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from skewbench.present.console import Progress, ceiling_lines, slowest_lines, summary_text
from skewbench.present.picks import night_picks

ROOT = Path(__file__).resolve().parents[1]


def child(conf: dict, log_dir: Path) -> None:
    from skewbench import dagrun

    dagrun.prepare(parallelism())  # before Airflow is imported
    import great_expectations  # noqa: F401  (before Airflow, or GE's logging floods)
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(str(ROOT / "dags"))
    if bag.import_errors:
        print("DAG import errors:", json.dumps({k: str(v) for k, v in bag.import_errors.items()}), flush=True)
        sys.exit(2)
    dag = bag.get_dag("skewbench_nightly")
    run = dagrun.run_once(dag, conf, log_dir=log_dir,
                          on_states=lambda st: print("TASKS " + json.dumps(st), flush=True))
    tis = run.get_task_instances()
    name = lambda ti: f"{ti.task_id}[{ti.map_index}]" if ti.map_index >= 0 else ti.task_id  # noqa: E731
    states = {name(ti): str(ti.state) for ti in tis}
    seconds = {name(ti): (ti.end_date - ti.start_date).total_seconds() for ti in tis
               if ti.start_date is not None and ti.end_date is not None}
    # when each task instance ran, and each task's upstream tasks: the critical path (benchmarks/bench_nightly.py)
    times = {name(ti): [ti.start_date.timestamp(), ti.end_date.timestamp()] for ti in tis
             if ti.start_date is not None and ti.end_date is not None}
    upstream = {t.task_id: sorted(t.upstream_task_ids) for t in dag.tasks}
    from skewbench import nightly

    # the run's output directory, as the DAG's check_params fixes it
    out_root = str(nightly.run_dir(str(run.logical_date or run.run_after), run.run_id))
    print("NIGHTLY " + json.dumps({"state": str(run.state), "run_id": run.run_id, "tasks": states,
                                   "seconds": seconds, "times": times, "upstream": upstream,
                                   "parallelism": dagrun.parallelism(), "out_root": out_root}), flush=True)


def expected_tasks(conf: dict) -> int | None:
    """How many task instances the run will have (the mapped ones counted per dataset), from the
    parameters and the catalog as the DAG resolves them; None when that fails."""
    try:
        from skewbench import nightly
        from skewbench.datasets.catalog import load_catalog

        resolved = nightly.check_params(dict(conf))
        entries = load_catalog().select(resolved["datasets"])
        items = nightly.plan_replays(resolved, [{"name": e.name, "path": "", "fingerprint": "",
                                                 "families": e.families} for e in entries], "/nonexistent")
    except Exception:  # the run itself reports a bad parameter; the bar then shows no total
        return None
    fams = len(resolved["families"])
    # check_params, dataset_names, open_tracking, report, check_trend, prune_runs, site; per family plan,
    # spark_kwargs, log_to_mlflow, mark_failed; prepare_dataset per dataset; replay per Spark job
    # (one per family that has replays); validate per item
    return 7 + 4 * fams + len(resolved["datasets"]) + len(nightly.replay_jobs(items)) + len(items)


def parallelism() -> int:
    """Tasks at once: SKEWBENCH_RUN_PARALLELISM, default 2 (the machine's two cores; 1 runs them
    one after another in one process, as dag.test() does by itself)."""
    text = os.environ.get("SKEWBENCH_RUN_PARALLELISM", "2")
    if not text.isdigit() or int(text) < 1:
        sys.exit(f"SKEWBENCH_RUN_PARALLELISM is a positive integer (tasks at once), got {text!r}")
    return int(text)


#: the task states after which a task instance does not run again in this run
FINISHED = {"success", "failed", "skipped", "upstream_failed", "removed"}


class Follow:
    """Follow the run's log: the tasks running and finished, from the states it prints every
    second (``TASKS {...}``, skewbench.dagrun.run_once's ``on_states``)."""

    def __init__(self, log: Path) -> None:
        self.log, self.pos, self.running, self.done = log, 0, {}, set()

    def poll(self) -> None:
        with open(self.log, "rb") as f:
            f.seek(self.pos)
            chunk = f.read()
        # only whole lines; a partial last line is read again next time
        cut = chunk.rfind(b"\n") + 1
        self.pos += cut
        for line in chunk[:cut].decode(errors="replace").splitlines():
            if not line.startswith("TASKS "):
                continue
            try:
                states = json.loads(line[len("TASKS "):])
            except ValueError:
                continue
            self.done = {name for name, st in states.items() if st in FINISHED}
            self.running = {name: None for name, st in states.items() if st == "running"}


def results_dirs(out_root: Path) -> list[Path]:
    """The run's results directories: <out root>/<dataset>/<family>/ with a manifest."""
    return sorted(p.parent for p in out_root.glob("*/*/_manifest.json"))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(json.loads(sys.argv[2]), Path(sys.argv[3]))
        return
    conf = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    state = Path(os.environ.get("SKEWBENCH_STATE", ROOT / ".skewbench"))
    logs = state / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"nightly-{datetime.now():%Y%m%d-%H%M%S}.log"
    tasks_at_once = parallelism()
    print(f"running skewbench_nightly (conf {json.dumps(conf)}), {tasks_at_once} task{'s' if tasks_at_once > 1 else ''} "
          f"at once; log: {log}", flush=True)
    t0 = time.monotonic()
    bar = Progress(sys.stdout, total=expected_tasks(conf))
    with open(log, "w") as f:
        proc = subprocess.Popen([sys.executable, __file__, "--child", json.dumps(conf), str(logs)], stdout=f,
                                stderr=subprocess.STDOUT)
        follow = Follow(log)
        bar.update(0)
        while proc.poll() is None:
            time.sleep(1)
            follow.poll()
            bar.update(len(follow.done), list(follow.running))
        follow.poll()
    text = log.read_text(errors="replace")
    line = next((ln for ln in text.splitlines() if ln.startswith("NIGHTLY ")), None)
    if line is None:
        bar.finish(len(follow.done))
        print("\n".join(text.splitlines()[-40:]))
        sys.exit(f"the nightly run did not finish; see {log}")
    res = json.loads(line[len("NIGHTLY "):])
    bar.finish(len(res["tasks"]), total=len(res["tasks"]))
    out_root = Path(res.get("out_root") or "")
    summary_md = out_root / "SUMMARY.md"
    if not summary_md.is_file():  # a run directory of an older layout: the newest summary
        found = sorted((state / "runs").rglob("SUMMARY.md"), key=lambda p: p.stat().st_mtime)
        summary_md = found[-1] if found else None
    picks = night_picks(results_dirs(summary_md.parent)) if summary_md is not None else []
    ceilings = ceiling_lines(results_dirs(summary_md.parent)) if summary_md is not None else []
    print()
    wall = time.monotonic() - t0
    print(summary_text(res["run_id"], res["state"], wall, res["tasks"], picks,
                       summary_md=summary_md, overview=summary_md.parent / "overview.html" if summary_md else None,
                       ceilings=ceilings, slowest=slowest_lines(res.get("seconds") or {}, wall),
                       extra=[f"task log: {log}",
                              f"MLflow store: {os.environ.get('SKEWBENCH_TRACKING_URI')} (browse with `make ui`)"]))
    if res["state"] != "success" or summary_md is None:
        sys.exit(f"the nightly run failed; see {log}")


if __name__ == "__main__":
    main()
