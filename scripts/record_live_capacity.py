"""The live capacity search's recorded measurement (docs/live.md, "The capacity search"), in one
command (about 25 minutes on a 2-core machine with nothing else running):

    SKEWBENCH_FLINK_PYTHON=.venv-flink/bin/python .venv/bin/python scripts/record_live_capacity.py OUT_DIR

What ``skewbench live DATASET --capacity-search --workers 8 --repeat 3`` runs (KG, PKG, D-C and SG,
each routed by its Java router in the sources; 1 ms of sleep a tuple; 5 sources; the keyed
windowed aggregation; starting rates 70% and 130% of the predicted capacity, five halvings at
most, down to 5%), on a Zipf stream over 10^4 keys (seed 1) at z = 1.2 and 1.8, both on one
local cluster of a JobManager and two TaskManagers (warmed up once; each stream between a
calibration before and one after). ``--duration`` (default 6) sets a probe's seconds of stream at
the predicted capacity.  A calibration refused because other processes kept the machine busy is
waited out (three minutes) and the stream's searches run again, up to ``--attempts`` times.

Each stream's result goes to ``OUT_DIR/capacity-<z>.json``; ``OUT_DIR/capacity.md`` holds the
table (strategy, skew, predicted, measured median [min-max], ratio, within 15%), printed at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

P = 8
REPEAT = 3
SKEWS = (1.2, 1.8)
STRATEGIES = ("kg", "pkg", "dc", "sg")


def dataset(root: Path, z: float) -> str:
    from skewbench.datasets.generators import StreamSpec, generate

    out = root / f"live-zipf-{z}"
    if not (out / "_skewbench.json").exists():
        generate(StreamSpec.zipf(z, 10_000, 400_000, seed=1), out, name=f"live-zipf-{z}")
    return str(out)


def fmt(v, f=",.0f") -> str:
    return "-" if v is None else format(v, f)


def markdown(docs: dict[float, dict]) -> str:
    lines = ["| strategy | skew | predicted (tuples/s) | measured median [min-max] | ratio | within 15% |",
             "|---|---|---|---|---|---|"]
    for z, doc in docs.items():
        for r in doc["rows"]:
            lines.append(f"| {r['strategy']} | {z} | {fmt(r['predicted'])} | {fmt(r['measured'])} "
                         f"[{fmt(r['measured_min'])}-{fmt(r['measured_max'])}] | {fmt(r['ratio'], '.3f')} | "
                         f"{'yes' if r['within'] else 'no'} |")
    lines.append("")
    for z, doc in docs.items():
        c = doc["calibrations"]
        lines.append(f"- z = {z}: per-record overhead {c['before']['overhead_ms']:.3f} ms before (median "
                     f"{c['before']['overhead_median_ms']:.3f}), {c['after']['overhead_ms']:.3f} ms after (median "
                     f"{c['after']['overhead_median_ms']:.3f}); other processes {fmt(c['before']['others_cores'], '.2f')} "
                     f"and {fmt(c['after']['others_cores'], '.2f')} cores; {doc['seconds'] / 60:.1f} min; verdict "
                     f"{'within' if doc['verdict']['within'] else 'outside: ' + ', '.join(doc['verdict']['outside'])}")
    return "\n".join(lines)


def main() -> None:
    from skewbench.live.calibrate import ImplausibleCalibration
    from skewbench.live.capacity_run import SEARCHES_FILE, SearchSettings, capacity_search
    from skewbench.live.config import LiveConfig
    from skewbench.live.flinkcluster import local_cluster
    from skewbench.settings import settings

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--duration", type=float, default=6.0, help="a probe's seconds of stream at the predicted capacity")
    ap.add_argument("--repeat", type=int, default=REPEAT)
    ap.add_argument("--skews", default=",".join(map(str, SKEWS)))
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--attempts", type=int, default=4, help="runs of a stream's searches while a calibration refuses")
    a = ap.parse_args()
    out = a.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    state = settings().state
    t0 = time.monotonic()
    progress = lambda m: print(f"[{(time.monotonic() - t0) / 60:5.1f} min] {m}", flush=True)  # noqa: E731
    docs: dict[float, dict] = {}
    skews = [float(z) for z in a.skews.split(",")]
    with local_cluster(out / "cluster", parallelism=P, progress=progress) as cluster:
        for z in skews:
            cfg = LiveConfig(dataset=f"live-zipf-{z}", workers=P, duration_s=a.duration, repeat=a.repeat, cost=1.0,
                             engines=("flink",), grouping=tuple(a.strategies.split(",")), shedding=())
            for attempt in range(a.attempts):
                progress(f"z = {z}: capacity search, attempt {attempt + 1}")
                try:
                    doc = capacity_search(dataset(out / "datasets", z), cfg, SearchSettings(), out / f"work-{z}",
                                          state=state, duration_s=a.duration, progress=progress, cluster=cluster)
                    break
                except ImplausibleCalibration as e:
                    partial = out / f"work-{z}" / SEARCHES_FILE
                    if partial.exists():  # refused after the searches: kept apart, not a result
                        partial.replace(out / f"capacity-{z}-refused-after.json")
                        progress(f"z = {z}: the calibration after the searches refused the run ({e}); its probes are in "
                                 f"capacity-{z}-refused-after.json, not a result")
                        break
                    progress(f"z = {z}: refused ({e}); waiting three minutes")
                    time.sleep(180)
            else:
                progress(f"z = {z}: every attempt refused; no result")
                continue
            if (out / f"capacity-{z}-refused-after.json").exists():
                continue
            doc["skew"] = z
            (out / f"capacity-{z}.json").write_text(json.dumps(doc, default=float, indent=1))
            docs[z] = doc
            (out / "capacity.md").write_text(markdown(docs))
    text = markdown(docs)
    (out / "capacity.md").write_text(text)
    print(text)
    progress(f"done; {out / 'capacity.md'}")


if __name__ == "__main__":
    main()
