"""spark-submit entry point: replay one dataset through a grid of a family's strategies on Spark.

    spark-submit spark_jobs/replay.py grouping --dataset /data/zipf-1.4 \
        --strategies kg,sg,pkg,dc,wc,rr,osg --workers 10,50,100 --sources 5 --seeds 10 \
        --out /results/zipf-1.4-grouping

The first argument names the family; the rest are those of ``skewbench replay <family>`` (see
its --help).  The engine is always Spark, on the session spark-submit created: the family's
tasks run as Spark tasks that read and write Parquet/NumPy files themselves, the driver only
combines small partial results, and the results are bit-identical to the in-process engine's.
"""

import sys

from skewbench.cli import replay


def main(argv: list[str]) -> None:
    if not argv or argv[0].startswith("-"):
        print("usage: replay.py FAMILY [OPTIONS]  (see `skewbench replay --help`)", file=sys.stderr)
        sys.exit(2)
    if "--engine" not in argv:
        argv = [*argv, "--engine", "spark"]
    replay.main(args=argv, prog_name="replay.py")


if __name__ == "__main__":
    main(sys.argv[1:])
