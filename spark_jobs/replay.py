"""spark-submit entry point: replay datasets through a grid of a family's strategies on Spark.

    spark-submit spark_jobs/replay.py grouping --dataset /data/zipf-1.4 \
        --strategies kg,sg,pkg,dc,wc,rr,osg --workers 10,50,100 --sources 5 --seeds 10 \
        --out /results/zipf-1.4-grouping

    spark-submit spark_jobs/replay.py grouping --replays '[["--dataset", "/data/a", "--out", "/r/a"],
                                                         ["--dataset", "/data/b", "--out", "/r/b"]]'

The first argument names the family; the rest are those of ``skewbench replay <family>`` (see
its --help), or ``--replays`` and a JSON list of such argument lists (without the family): the
replays then run one after another in this one Spark application (the nightly's jobs,
:func:`skewbench.nightly.replay_jobs`); each is written atomically, a failed one does not stop
the others, and the job exits with 1 naming every replay that failed.  The engine is always
Spark, on the session spark-submit created: the family's tasks run as Spark tasks that read and
write Parquet/NumPy files themselves, the driver only combines small partial results, and the
results are bit-identical to the in-process engine's.
"""

import sys
import traceback

from skewbench.cli import replay


def _run(family: str, args: list[str]) -> int:
    """One replay (``skewbench replay <family> ...`` on Spark); its exit status."""
    argv = [family, *args]
    if "--engine" not in argv:
        argv = [*argv, "--engine", "spark"]
    try:
        replay.main(args=argv, prog_name="replay.py")
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


def main(argv: list[str]) -> None:
    if not argv or argv[0].startswith("-"):
        print("usage: replay.py FAMILY [OPTIONS]  (see `skewbench replay --help`)", file=sys.stderr)
        sys.exit(2)
    from skewbench.errors import SkewbenchError
    from skewbench.nightly import job_replays

    try:
        family, replays = job_replays(argv)
    except (SkewbenchError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    if len(replays) == 1:
        sys.exit(_run(family, replays[0]))
    failed = []
    for i, args in enumerate(replays, 1):
        print(f"replay {i} of {len(replays)}: {family} {' '.join(args)}", flush=True)
        try:
            rc = _run(family, args)
        except Exception:  # noqa: BLE001 - the others still run; this one is named at the end
            traceback.print_exc()
            rc = 1
        if rc != 0:
            failed.append((args[args.index("--dataset") + 1] if "--dataset" in args[:-1] else f"replay {i}", rc))
    if failed:
        print(f"{len(failed)} of {len(replays)} replays failed: " + ", ".join(f"{d} (exit {rc})" for d, rc in failed),
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
