"""spark-submit entry point: replay one dataset through a grid of grouping strategies on Spark.

    spark-submit spark_jobs/replay_grouping.py --dataset /data/zipf-1.4 \
        --strategies kg,sg,pkg,dc,wc,rr,osg --workers 10,50,100 --sources 5 --seeds 10 \
        --out /results/zipf-1.4-grouping

Arguments are those of ``skewbench replay grouping`` (see its --help); the engine is always
Spark.  Route tasks (one per cell and source) and queue tasks (one per cell and worker group) run
as Spark tasks that read and write Parquet/NumPy files themselves; the driver only combines
small partial results.  The results are bit-identical to the in-process engine's.
"""

import sys

from skewbench.cli import replay


def main(argv: list[str]) -> None:
    if "--engine" not in argv:
        argv = [*argv, "--engine", "spark"]
    replay.main(args=["grouping", *argv], prog_name="replay_grouping.py")


if __name__ == "__main__":
    main(sys.argv[1:])
