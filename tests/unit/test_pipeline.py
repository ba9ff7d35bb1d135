"""materialize(): generate, keep what is up to date, regenerate on change, skip absent traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from skewbench.datasets.catalog import parse_catalog
from skewbench.materialize import materialize
from skewbench.errors import SkewbenchError


def _cat(tmp_path, alpha=1.0, extra=()):
    doc = {"version": 1, "datasets": [
        {"name": "z", "generator": "zipf", "keys": 50, "tuples": 3000, "alpha": alpha, "seed": 1},
        {"name": "t", "trace": "slashdot", "inputs": "{shared_data}/none.txt.gz", "optional": True},
        *extra]}
    return parse_catalog(doc, Path("c.yaml"), tmp_path / "shared")


def test_generate_then_keep_then_regenerate_on_change(tmp_path):
    root = tmp_path / "root"
    z = _cat(tmp_path).select(["z"])[0]
    first = materialize(z, root, engine="local", validate=True)
    assert first["status"] == "written" and first["validation"] == "valid"
    mtime = (root / "z" / "_skewbench.json").stat().st_mtime_ns
    again = materialize(z, root, engine="local")
    assert again["status"] == "up-to-date" and again["detail"] == first["detail"]
    assert (root / "z" / "_skewbench.json").stat().st_mtime_ns == mtime
    changed = materialize(_cat(tmp_path, alpha=1.2).select(["z"])[0], root, engine="local")
    assert changed["status"] == "written" and changed["detail"] != first["detail"]
    forced = materialize(z, root, engine="local", overwrite=True)
    assert forced["status"] == "written" and forced["detail"] == first["detail"]


def test_absent_optional_trace_is_skipped_and_required_one_is_an_error(tmp_path):
    cat = _cat(tmp_path, extra=[{"name": "r", "trace": "slashdot", "inputs": "/nonexistent/x.gz"}])
    assert materialize(cat.select(["t"])[0], tmp_path)["status"] == "skipped"
    with pytest.raises(SkewbenchError, match="does not exist"):
        materialize(cat.select(["r"])[0], tmp_path)


def test_trace_entry_is_kept_when_up_to_date_and_reingested_when_its_file_is_replaced(tmp_path, shared_data):
    import os
    import shutil

    src = tmp_path / "in" / "events.csv"
    src.parent.mkdir()
    shutil.copy(shared_data / "google-cluster" / "task_event_2_10000.csv", src)
    doc = {"version": 1, "datasets": [{"name": "g", "trace": "google-cluster", "inputs": str(src)}]}
    g = parse_catalog(doc, Path("c.yaml"), shared_data).entries[0]
    root = tmp_path / "root"
    first = materialize(g, root)
    assert first["status"] == "written"
    assert materialize(g, root)["status"] == "up-to-date"
    # the same path, other contents (the first 5,000 lines): ingested again, a new fingerprint
    lines = src.read_text().splitlines(keepends=True)
    src.write_text("".join(lines[:5000]))
    again = materialize(g, root)
    assert again["status"] == "written" and again["detail"] != first["detail"]
    # touched only (same size, later modification time): also re-read, to be safe
    st = src.stat()
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert materialize(g, root)["status"] == "written"
    assert materialize(g, root)["status"] == "up-to-date"


def test_foreign_directory_is_not_clobbered(tmp_path):
    (tmp_path / "z").mkdir()
    (tmp_path / "z" / "precious.txt").write_text("keep me")
    with pytest.raises(SkewbenchError, match="not a skewbench dataset"):
        materialize(_cat(tmp_path).select(["z"])[0], tmp_path, engine="local")
    assert (tmp_path / "z" / "precious.txt").read_text() == "keep me"
