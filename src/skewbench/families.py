"""Strategy families as the pipeline sees them: one entry each.

A family names its spark-submit job, its default strategies and the function that validates its
results.  The nightly pipeline, its Params schema and the reports iterate over :data:`FAMILIES`,
so adding the shedding or allocation family is one module of strategies, one job and one entry
here.  This module imports nothing heavy: the Airflow DAGs read it at parse time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

SPARK_JOBS = Path(__file__).resolve().parents[2] / "spark_jobs"


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    #: the spark-submit entry point, relative to the project's spark_jobs/
    spark_job: str
    #: every strategy of the family (kept in step with the registry by a test)
    strategies: tuple[str, ...]
    #: what a nightly run replays when the trigger does not say
    default_strategies: tuple[str, ...]
    default_workers: tuple[int, ...] = (5, 10, 50, 100)
    default_sources: tuple[int, ...] = (5,)
    #: "module:function" validating a results directory (returns a ValidationReport)
    validator: str = "skewbench.results_validation:validate_results"
    extra_args: tuple[str, ...] = field(default=())

    @property
    def job_path(self) -> Path:
        return SPARK_JOBS / self.spark_job

    def replay_args(self, dataset: str, out: str, strategies: list[str], workers: list[int],
                    sources: list[int], seeds: int, provisioning: float | None = None) -> list[str]:
        """Arguments of the family's spark-submit job (also those of ``skewbench replay``).

        ``provisioning`` (percent of the workers' capacity) replaces the dataset's arrival times
        by a steady arrival rate at that load; None keeps the dataset's times."""
        args = ["--dataset", dataset, "--out", out, "--overwrite",
                "--strategies", ",".join(strategies), "--workers", ",".join(map(str, workers)),
                "--sources", ",".join(map(str, sources)), "--seeds", str(seeds)]
        if provisioning is not None:
            args += ["--provisioning", repr(float(provisioning))]
        return [*args, *self.extra_args]


FAMILIES: dict[str, Family] = {
    "grouping": Family(
        name="grouping",
        description="stream partitioning: KG, SG, PKG, D-Choices, W-Choices, RR heavy hitters, OSG, FK",
        spark_job="replay_grouping.py",
        strategies=("kg", "sg", "pkg", "dc", "wc", "rr", "fixed-d", "osg", "fk"),
        default_strategies=("kg", "sg", "pkg", "dc", "wc", "rr", "osg"),
    ),
}
