"""spark-submit entry point: generate synthetic datasets on Spark.

    spark-submit spark_jobs/generate.py zipf --alpha 1.0 --keys 10000 --tuples 1000000000 \
        --seed 1 --out /data/zipf-1.0 --partitions 64
    spark-submit spark_jobs/generate.py catalog --set default --root /data

Arguments are those of ``skewbench datasets generate`` (see its --help); the engine is always
Spark, on the session spark-submit created.  Each task writes its own Parquet parts; the driver
only collects per-part counts and fingerprints, so 10^9 tuples never pass through it.
"""

import sys

from skewbench.cli import generate


def main(argv: list[str]) -> None:
    if argv and argv[0] in ("zipf", "catalog") and "--engine" not in argv:
        argv = [argv[0], "--engine", "spark", *argv[1:]]
    generate.main(args=argv, prog_name="generate.py")


if __name__ == "__main__":
    main(sys.argv[1:])
