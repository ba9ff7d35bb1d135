"""Paths and environment variables, read in one place (pydantic-settings).

Every location and endpoint the pipeline uses comes from :func:`settings`, which reads the
environment afresh on each call (tests and the Makefile change it between runs; building the
object costs microseconds).  Variables, with their defaults:

==============================  =====================================================  ===============
variable                        meaning                                                default
==============================  =====================================================  ===============
``SKEWBENCH_PROJECT``           the project checkout (holds ``datasets/``, ``spark_jobs/``)  this source tree, else the working directory
``SKEWBENCH_STATE``             the state directory (datasets, runs, MLflow, Airflow)  ``<project>/.skewbench``
``SKEWBENCH_DATA_ROOT``         generated and ingested datasets                        ``<state>/datasets``
``SKEWBENCH_RUNS_ROOT``         pipeline outputs ``<logical date>/<run id>/...``       ``<state>/runs``
``SKEWBENCH_CATALOG``           the dataset catalog file                               ``<project>/datasets/catalog.yaml``
``SKEWBENCH_SHARED_DATA``       what ``{shared_data}`` in the catalog points at        ``<project>/../shared/data``
``SKEWBENCH_TRACKING_URI``      MLflow tracking URI                                    ``sqlite:///<state>/mlflow/mlflow.db``
``SKEWBENCH_MLFLOW_UI``         the MLflow UI's address, for links                     ``http://127.0.0.1:5000``
``SKEWBENCH_SPARK_MASTER``      Spark master URL                                       ``local[*]``
``SKEWBENCH_SPARK_UI``          Spark's web UI on or off                               ``false``
``SKEWBENCH_SPARK_SHUFFLE_PARTITIONS``  ``spark.sql.shuffle.partitions``              ``16``
``SKEWBENCH_SPARK_DRIVER_MEMORY``       ``spark.driver.memory``                       ``4g``
``SKEWBENCH_RETRY_DELAY_SECONDS``       the DAGs' first retry delay (then doubling)   ``30``
``SKEWBENCH_KEEP_RUNS``         pipeline runs whose output directories are kept (the newest)  ``30``
``SKEWBENCH_FLINK_PYTHON``      the Flink environment's interpreter (PyFlink)          ``<project>/.venv-flink/bin/python`` when it exists
``SKEWBENCH_FLINK_ADDRESS``     a running Flink's REST endpoint (HOST:PORT) for the live mode  empty: a local Flink
==============================  =====================================================  ===============

The Flink environment (``make flink-env``, from ``requirements-flink.lock``) is a virtual
environment apart from the project's: PyFlink's pins cannot share the project's lock, so a Flink
job is a program run by that interpreter, never imported here.  :func:`flink_environment` finds
it, or says in one line how to install it.

This module imports pydantic (light; Airflow already does) and of the rest of skewbench only
:mod:`skewbench.errors`, so the DAGs may read it at parse time.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from skewbench.errors import SkewbenchError

_SOURCE_ROOT = Path(__file__).resolve().parents[2]
#: the Flink environment, relative to the project (the Makefile's FLINK_VENV)
FLINK_VENV = ".venv-flink"


def _default_project() -> Path:
    """This source checkout (``pyproject.toml`` two levels above ``src/skewbench``), or the
    working directory for an installed package."""
    return _SOURCE_ROOT if (_SOURCE_ROOT / "pyproject.toml").exists() else Path.cwd()


class Settings(BaseSettings):
    """The environment, resolved: unset locations derive from ``project`` and ``state``."""

    model_config = SettingsConfigDict(env_prefix="SKEWBENCH_", extra="ignore", frozen=True)

    project: Path | None = None
    state: Path | None = None
    data_root: Path | None = None
    runs_root: Path | None = None
    catalog: Path | None = None
    shared_data: Path | None = None
    tracking_uri: str = ""
    mlflow_ui: str = "http://127.0.0.1:5000"
    spark_master: str = "local[*]"
    spark_ui: str = "false"
    spark_shuffle_partitions: str = "16"
    spark_driver_memory: str = "4g"
    retry_delay_seconds: float = Field(30.0, ge=0)
    keep_runs: int = Field(30, ge=1)
    flink_python: Path | None = None
    flink_address: str = ""

    @model_validator(mode="before")
    @classmethod
    def _empty_is_unset(cls, values: dict) -> dict:
        return {k: v for k, v in values.items() if v not in ("", None)}

    @model_validator(mode="after")
    def _derive(self) -> "Settings":
        project = self.project or _default_project()
        state = self.state or project / ".skewbench"
        derived = {
            "project": project,
            "state": state,
            "data_root": self.data_root or state / "datasets",
            "runs_root": self.runs_root or state / "runs",
            "catalog": self.catalog or project / "datasets" / "catalog.yaml",
            "shared_data": self.shared_data or (project.parent / "shared" / "data").resolve(),
            "tracking_uri": self.tracking_uri or "sqlite:///" + str(state / "mlflow" / "mlflow.db"),
            "mlflow_ui": self.mlflow_ui.rstrip("/"),
            "flink_python": self.flink_python or _existing(project / FLINK_VENV / "bin" / "python"),
        }
        for k, v in derived.items():
            object.__setattr__(self, k, v)
        return self

    @property
    def spark_jobs(self) -> Path:
        """The spark-submit entry points (``<project>/spark_jobs``)."""
        return self.project / "spark_jobs"


def _existing(path: Path) -> Path | None:
    return path if path.exists() else None


def settings() -> Settings:
    """The current environment's settings (read anew on each call)."""
    return Settings()


class FlinkEnvironment(NamedTuple):
    """The Flink environment: its interpreter and its ``pyflink`` package, whose ``lib/`` holds
    Flink's jars (``flink-dist``: the runtime a job and :attr:`jars` run on)."""

    python: Path
    pyflink: Path

    @property
    def jars(self) -> list[Path]:
        """Flink's own jars (``pyflink/lib/*.jar``), the classpath of a JVM that runs Flink code."""
        return sorted((self.pyflink / "lib").glob("*.jar"))


_INSTALL = "install it with `make flink-env`"


def flink_environment(cfg: Settings | None = None) -> FlinkEnvironment:
    """The Flink environment of ``SKEWBENCH_FLINK_PYTHON`` (default ``<project>/.venv-flink``),
    or :class:`~skewbench.errors.SkewbenchError` in one line naming ``make flink-env`` when the
    interpreter is missing or its environment holds no PyFlink.  Checked cheaply, without
    starting it: the interpreter exists, and its environment (``<prefix>/lib*/python3*/site-packages``,
    ``<prefix>`` two levels above the interpreter, as in a virtual environment) holds
    ``pyflink/__init__.py`` and Flink's runtime jar ``pyflink/lib/flink-dist-*.jar``."""
    cfg = cfg or settings()
    python = cfg.flink_python
    if python is None:
        raise SkewbenchError(f"the Flink environment is not installed (no {cfg.project / FLINK_VENV / 'bin' / 'python'}, "
                             f"SKEWBENCH_FLINK_PYTHON unset): {_INSTALL}")
    python = Path(python)
    if not python.is_file():
        raise SkewbenchError(f"the Flink environment's interpreter {python} does not exist "
                             f"(SKEWBENCH_FLINK_PYTHON): {_INSTALL}")
    prefix = python.parent.parent  # not resolved: a virtual environment's python links to the base one
    for pyflink in sorted(prefix.glob("lib*/python3*/site-packages/pyflink")):
        if (pyflink / "__init__.py").is_file() and any((pyflink / "lib").glob("flink-dist-*.jar")):
            return FlinkEnvironment(python, pyflink)
    raise SkewbenchError(f"{python} cannot import pyflink (no pyflink with its lib/flink-dist jar under "
                         f"{prefix}/lib*/python3*/site-packages): {_INSTALL}")
