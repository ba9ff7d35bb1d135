"""skewbench_datasets: generate, ingest and validate the catalog's datasets; publish them as Assets.

Thin: each mapped task calls :func:`skewbench.nightly.prepare_dataset` (which keeps a dataset
whose parameters are unchanged, and validates it with Great Expectations).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import Asset, Param, dag, task
from airflow.sdk.exceptions import AirflowFailException

from skewbench import nightly
from skewbench.settings import settings

CATALOG_ASSET = Asset(nightly.CATALOG_ASSET_URI)

DOC = """
### skewbench datasets

Materialises the dataset catalog (`datasets/catalog.yaml`): one mapped task per entry of the
chosen set, generating synthetic streams (on Spark for large ones) or ingesting real traces,
skipping an entry whose directory already holds the same parameters, and validating each with
the Great Expectations suite of the stream dataset contract. When all succeed it updates the
`skewbench://datasets/catalog` asset, which triggers `skewbench_nightly`.
"""


@dag(
    dag_id="skewbench_datasets",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["skewbench", "datasets"],
    default_args={"retries": 2, "retry_delay": timedelta(seconds=settings().retry_delay_seconds), "retry_exponential_backoff": True},
    params={"catalog_set": Param("default", type="string", enum=list(nightly.SETS)),
            "datasets": Param([], type="array", items={"type": "string", "minLength": 1})},
    doc_md=DOC,
)
def skewbench_datasets():
    @task
    def entries(params=None) -> list[str]:
        from skewbench.errors import SkewbenchError

        try:
            conf = nightly.check_params({"datasets": list(params["datasets"]), "catalog_set": params["catalog_set"]})
        except SkewbenchError as e:
            raise AirflowFailException(f"invalid parameters: {e}") from None
        return conf["datasets"]

    @task(max_active_tis_per_dagrun=2)
    def materialize(name: str) -> dict:
        return nightly.prepare_dataset(name)

    @task(outlets=[CATALOG_ASSET])
    def publish(done: list[dict], outlet_events=None) -> list[dict]:
        done = list(done)
        outlet_events[CATALOG_ASSET].extra = {d["name"]: d["fingerprint"] for d in done}
        return done

    publish(materialize.expand(name=entries()))


skewbench_datasets()
