"""The recorded live runs of REPRODUCTION.md's "Live engine" section, in one command (50 minutes
on a 2-core machine with nothing else running):

    SKEWBENCH_FLINK_PYTHON=.venv-flink/bin/python .venv/bin/python scripts/record_live.py OUT_DIR

* ``grouping-<z>``: ``skewbench live DATASET --engines flink --workers 8 --repeat 3 --json`` (the
  command issue 40 accepts the live mode with: its defaults, a local cluster of a JobManager and
  two TaskManagers of its own, 30 s of stream a phase at 62.5% of the workers' capacity, 1 ms of
  sleep a tuple, 5 sources, the keyed windowed aggregation, KG, PKG, D-C, W-C, SG, CHWBL and
  Flink's keyBy) on a Zipf stream over 10^4 keys (seed 1) at z = 1.4 and 1.8;

then on one local cluster, the same settings otherwise:

* ``las``: the shedders LAS, BL, SM and FK in front of one operator at 75% provisioning on the
  first 2,000 tuples of ``las-e1`` (the dataset's costs);
* ``spark-1.8``: Spark's batch stage (the first 4,000 tuples, a partition per worker, 1 ms of sleep
  a tuple) for the same strategies at z = 1.8, Spark SQL's ``repartition`` in place of Flink's keyBy;
* ``kill``: SG at z = 1.4 with checkpoints every 2 s and a TaskManager killed 8 s into the phase
  (last: Flink's JobManager serves no fresh metrics once a TaskManager was lost, docs/live.md);

and on a cluster of 4 KB network buffers (``taskmanager.memory.segment-size: 4kb``):

* ``hol``: KG and SG at z = 1.4, 15 s of stream.

Each run's ``live.json`` goes to ``OUT_DIR/<name>/``, and ``OUT_DIR/summary.md`` holds the numbers
REPRODUCTION.md copies (every row's medians, ranges, predictions and ratios; the rank agreements;
the calibrations; the restart).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

P = 8
DURATION = 30.0
REPEAT = 3
GROUPING = ("kg", "pkg", "dc", "wc", "sg", "chwbl", "flink")


def dataset(root: Path, z: float) -> str:
    from skewbench.datasets.generators import StreamSpec, generate

    out = root / f"live-zipf-{z}"
    if not (out / "_skewbench.json").exists():
        generate(StreamSpec.zipf(z, 10_000, 400_000, seed=1), out, name=f"live-zipf-{z}")
    return str(out)


def las_dataset(root: Path) -> str:
    from skewbench.datasets.catalog import load_catalog
    from skewbench.materialize import materialize

    return str(materialize(load_catalog().select(["las-e1"])[0], root / "data", engine="local")["path"])


def save(out: Path, name: str, res) -> dict:
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    doc = res.to_dict()
    (d / "live.json").write_text(json.dumps(doc, default=float, indent=1))
    return doc


def fmt(v, f=".0f") -> str:
    return "-" if v is None else format(v, f)


def summary(docs: dict[str, dict]) -> str:
    lines = []
    for name, doc in docs.items():
        lines.append(f"## {name}\n")
        c = doc["calibrations"].get("flink") or doc["calibrations"].get("spark") or {}
        for when in ("before", "after"):
            k = c.get(when) or {}
            lines.append(f"- calibration {when}: overhead {fmt(k.get('overhead_ms'), '.3f')} ms (median "
                         f"{fmt(k.get('overhead_median_ms'), '.3f')}), other processes {fmt(k.get('others_cores'), '.2f')} "
                         f"cores, transport "
                         f"{fmt(k.get('transport_ms'), '.2f')} ms, channels {k.get('capacity')} / {k.get('capacity_remote')} "
                         f"records (local / remote), turns {k.get('chunk_records')} records / {fmt(k.get('slice_ms'), '.0f')} ms")
        lines.append("")
        lines.append("| strategy | thr measured (range) | thr pred | ratio | unbounded ratio | p99 ms measured (range) | p99 pred | ratio "
                     "| src bp ms | bp pred | bp pred unbounded | merge records |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in doc["rows"]:
            n = r["strategy"] + (" (native)" if r["routing"] == "native" else "")
            lines.append(
                f"| {n} | {fmt(r.get('throughput_measured'))} ({fmt(r.get('throughput_measured_min'))}-"
                f"{fmt(r.get('throughput_measured_max'))}) | {fmt(r.get('throughput_predicted'))} | "
                f"{fmt(r.get('throughput_ratio'), '.3f')} | {fmt(r.get('throughput_ratio_unbounded'), '.3f')} | "
                f"{fmt(r.get('latency_p99_measured_ms'))} ({fmt(r.get('latency_p99_measured_ms_min'))}-"
                f"{fmt(r.get('latency_p99_measured_ms_max'))}) | {fmt(r.get('latency_p99_predicted_ms'))} | "
                f"{fmt(r.get('latency_p99_ratio'), '.3f')} | {fmt(r.get('source_backpressured_ms'))} | "
                f"{fmt(r.get('source_backpressured_predicted_ms'))} | "
                f"{fmt(r.get('source_backpressured_predicted_unbounded_ms'))} | {fmt(r.get('merge_records'))} |")
            if r.get("engine") == "spark":
                lines.append(f"|  {n}: Spark stage makespan {fmt(r.get('makespan_measured_s'), '.3f')} s "
                             f"({fmt(r.get('makespan_measured_s_min'), '.3f')}-{fmt(r.get('makespan_measured_s_max'), '.3f')}), "
                             f"predicted {fmt(r.get('makespan_predicted_s'), '.3f')}, ratio {fmt(r.get('makespan_ratio'), '.3f')} |")
                continue
            busy = r.get("flink_work_busy_ms_per_s")
            lines.append(f"|  {n}: busiest worker, Flink's busy time {fmt(max(busy) / 1000 if busy else None, '.2f')} "
                         f"s/s; utilisation from the records {fmt(r.get('utilisation_max_measured'), '.2f')}, predicted "
                         f"{fmt(r.get('utilisation_max_predicted'), '.2f')}; merge stage predicted "
                         f"{fmt(r.get('merge_utilisation_max_predicted'), '.2f')}, measured "
                         f"{fmt(r.get('merge_utilisation_max_measured'), '.2f')} |")
            if r.get("q_over_bound_measured") is not None:
                lines.append(f"|  {n}: queueing / tau measured {r['q_over_bound_measured']:.2f}, predicted "
                             f"{r['q_over_bound_predicted']:.2f}, simulator {fmt(r.get('q_over_bound_simulator'), '.2f')} |")
        for a in doc["agreement"]:
            lines.append(f"\n- {a['metric']}: Kendall tau {fmt(a['kendall_tau'], '.3f')} (plain {fmt(a['kendall_tau_plain'], '.3f')}) "
                         f"over {a['strategies']}; not separated: {a.get('not_separated')}")
        for r in doc.get("restarts", []):
            lines.append(f"\n- restart: {json.dumps({k: v for k, v in r.items() if k not in ('states', 'failures')})}")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    from skewbench.live.config import LiveConfig
    from skewbench.live.flinkcluster import local_cluster
    from skewbench.live.run import live_rows
    from skewbench.settings import settings

    out = Path(sys.argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    data = out / "datasets"
    state = settings().state
    docs: dict[str, dict] = {}
    t0 = time.monotonic()
    progress = lambda m: print(f"[{(time.monotonic() - t0) / 60:5.1f} min] {m}", flush=True)  # noqa: E731
    for z in (1.4, 1.8):
        d = out / f"grouping-{z}"
        progress(f"grouping at z = {z}: skewbench live --engines flink --workers {P} --repeat {REPEAT}")
        subprocess.run([sys.executable, "-c", "from skewbench.cli import main; main()", "live", dataset(data, z),
                        "--engines", "flink", "--workers", str(P), "--repeat", str(REPEAT), "--json", "--out", str(d)],
                       check=True, stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        docs[f"grouping-{z}"] = json.loads((d / "live.json").read_text())
    with local_cluster(out / "cluster", parallelism=P, progress=progress) as cluster:
        cfg = LiveConfig(dataset="las-e1", workers=P, tuples=2000, cost="dataset", engines=("flink",), grouping=(),
                         shedding=("las", "bl", "sm", "fk"), provisioning=75.0, bound_ms=6.4, repeat=REPEAT)
        docs["las"] = save(out, "las", live_rows(las_dataset(data), cfg, out / "work-las", state=state,
                                                 progress=progress, cluster=cluster))
        cfg = LiveConfig(dataset="zipf-1.4", workers=P, duration_s=20.0, repeat=1, engines=("flink",), grouping=("sg",),
                         checkpoint_s=2.0, kill_after_s=8.0)
        docs["kill"] = save(out, "kill", live_rows(dataset(data, 1.4), cfg, out / "work-kill", state=state,
                                                   progress=progress, cluster=cluster))
    for z in (1.8,):  # Spark: a batch stage per strategy (its makespan), no rate; refused runs are reported, not fatal
        cfg = LiveConfig(dataset=f"zipf-{z}", workers=P, repeat=REPEAT, engines=("spark",),
                         grouping=GROUPING[:-1] + ("spark-sql",))
        try:
            docs[f"spark-{z}"] = save(out, f"spark-{z}", live_rows(dataset(data, z), cfg, out / f"work-spark-{z}",
                                                                   state=state, progress=progress))
        except Exception as e:  # noqa: BLE001 - the message is the record
            progress(f"spark at z = {z}: {e}")
    options = {"taskmanager.memory.segment-size": "4kb"}
    with local_cluster(out / "cluster-hol", parallelism=P, options=options, progress=progress) as cluster:
        cfg = LiveConfig(dataset="zipf-1.4", workers=P, duration_s=15.0, repeat=REPEAT, engines=("flink",),
                         grouping=("kg", "sg"), flink_options=options)
        docs["hol"] = save(out, "hol", live_rows(dataset(data, 1.4), cfg, out / "work-hol", state=state,
                                                 progress=progress, cluster=cluster))
    (out / "summary.md").write_text(summary(docs))
    print(summary(docs))
    progress(f"done; {out / 'summary.md'}")


if __name__ == "__main__":
    main()
