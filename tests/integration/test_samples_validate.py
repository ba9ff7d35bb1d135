"""Issue 2: every real sample in ../shared/data ingests and passes the Great Expectations suite."""

from __future__ import annotations

import pytest

from skewbench.datasets.catalog import load_catalog
from skewbench.materialize import materialize
from tests.conftest import REPO

SAMPLES = ["slashdot", "google-cluster", "debs2015-routes", "debs2015-medallions", "apache-log"]


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_ingests_and_validates(name, shared_data, tmp_path):
    entry = load_catalog(REPO / "datasets" / "catalog.yaml", shared_data=shared_data).select([name])[0]
    status = materialize(entry, tmp_path, validate=True)
    assert status["status"] == "written", status
    assert status["validation"] == "valid", status["detail"]


def test_slashdot_sample_has_948464_tuples(shared_data, tmp_path):
    from skewbench.datasets.contract import open_dataset

    entry = load_catalog(REPO / "datasets" / "catalog.yaml", shared_data=shared_data).select(["slashdot"])[0]
    materialize(entry, tmp_path)
    assert open_dataset(tmp_path / "slashdot").tuples == 948_464
