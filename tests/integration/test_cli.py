"""The skewbench command line, run as a user runs it (a subprocess), on real data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skewbench.datasets.generators import zipf_pmf

BIN = Path(sys.executable).parent / "skewbench"


def run(*args: str, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    p = subprocess.run([str(BIN), *args], capture_output=True, text=True,
                       env={**os.environ, **(env or {})}, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError(f"exit {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}")
    return p


@pytest.mark.spark
@pytest.mark.slow  # 20-40 s: make slow (which CI runs) keeps make test under its 12 minutes
def test_zipf_1e7_matches_exact_p1_and_is_partition_invariant(tmp_path):
    """Issue 2: alpha 1.0, 10^4 keys, 10^7 tuples, seed 1: p1 within 2% of the exact finite-Zipf
    p1, same fingerprint with --partitions 1 and 4."""
    fps = []
    for p in (1, 4):
        out = tmp_path / f"p{p}"
        run("datasets", "generate", "zipf", "--alpha", "1.0", "--keys", "10000", "--tuples", "10000000",
            "--seed", "1", "--out", str(out), "--partitions", str(p))
        d = json.loads(run("datasets", "describe", str(out), "--json").stdout)
        exact = float(zipf_pmf(10_000, 1.0)[0])
        assert abs(d["p1"] - exact) / exact < 0.02, (d["p1"], exact)
        assert d["tuples"] == 10_000_000 and d["keys"] == 10_000
        assert d["expected_p1"] == pytest.approx(exact)
        fps.append(d["fingerprint"])
    assert fps[0] == fps[1]


def test_describe_json_fields(tmp_path):
    out = tmp_path / "z"
    run("datasets", "generate", "zipf", "--alpha", "1.5", "--keys", "100", "--tuples", "20000", "--seed", "3",
        "--cost", "levels:4:1:4", "--out", str(out))
    d = json.loads(run("datasets", "describe", str(out), "--json").stdout)
    for f in ("tuples", "keys", "distinct_keys", "p1", "fingerprint", "entropy_bits", "top_keys"):
        assert f in d
    assert d["distinct_keys"] <= 100 and d["cost"]["min"] >= 1 and d["cost"]["max"] <= 4
    human = run("datasets", "describe", str(out)).stdout
    assert "p1" in human and d["fingerprint"] in human


@pytest.mark.parametrize("args,needle", [
    (["datasets", "describe", "/nonexistent/x"], "does not exist"),
    (["datasets", "generate", "zipf", "--alpha", "1", "--keys", "10", "--tuples", "10", "--seed", "1",
      "--cost", "gauss:1", "--out", "{tmp}/a"], "bad cost model"),
    (["datasets", "generate", "catalog", "nope", "--root", "{tmp}/r"], "unknown dataset"),
    (["datasets", "validate", "{tmp}"], "not a skewbench dataset"),
])
def test_user_errors_are_one_line_and_exit_2(tmp_path, args, needle):
    p = run(*[a.replace("{tmp}", str(tmp_path)) for a in args], check=False)
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], p.stderr
    assert "Traceback" not in p.stderr


def test_bad_option_exits_2(tmp_path):
    p = run("datasets", "generate", "zipf", "--alpha", "-1", "--keys", "10", "--tuples", "10", "--seed", "1",
            "--out", str(tmp_path / "a"), check=False)
    assert p.returncode == 2 and "alpha" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "a").exists()


def test_bad_catalog_is_a_clear_error(tmp_path):
    cat = tmp_path / "c.yaml"
    cat.write_text("version: 1\ndatasets:\n  - {name: a, generator: zipf, keys: 10, tuples: 10, alpha: 1, seed: 1, colour: red}\n")
    p = run("datasets", "catalog", "--catalog", str(cat), check=False)
    assert p.returncode == 2 and "colour" in p.stderr and "'a'" in p.stderr


def test_help_texts():
    for args in ([], ["datasets"], ["datasets", "generate"], ["datasets", "generate", "zipf"],
                 ["datasets", "ingest"], ["datasets", "validate"], ["datasets", "describe"]):
        p = run(*args, "--help")
        assert "Usage" in p.stdout and len(p.stdout.splitlines()) > 4
