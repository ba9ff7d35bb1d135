"""Ahead-of-time kernels (skewbench.jit, skewbench.aot) in real processes: a CLI replay starts
without numba, and every result is bit-identical to numba's just-in-time code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from skewbench import jit
from skewbench.results import schema

pytestmark = pytest.mark.skipif(not jit.TABLE_FILE.exists(),
                                reason="no ahead-of-time build: run `python -m skewbench.aot` (make install does)")
BIN = Path(sys.executable).parent / "skewbench"
PROBE = """
import json, sys
from skewbench.cli import main
from skewbench import jit
main(sys.argv[1:], standalone_mode=False)
print(json.dumps({"numba": "numba" in sys.modules, "fallbacks": sorted(jit.fallbacks()), "status": jit.aot_status()}),
      file=sys.stderr)
"""


def probe(*args, kernels="auto"):
    p = subprocess.run([sys.executable, "-c", PROBE, *map(str, args)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "SKEWBENCH_KERNELS": kernels})
    assert p.returncode == 0, p.stderr
    return json.loads(p.stderr.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("aot")
    out = {}
    for kernels in ("auto", "jit"):
        d = root / f"c-{kernels}"
        probe("datasets", "generate", "zipf", "--alpha", "1.1", "--keys", "3000", "--tuples", "40000", "--seed", "4",
              "--cost", "levels:8:1:8", "--arrivals", "poisson", "--rate", "3000", "--out", d, kernels=kernels)
        out[kernels] = d
    return out


def test_generation_is_identical(datasets):
    meta = [json.loads((d / "_skewbench.json").read_text()) for d in datasets.values()]
    assert meta[0]["fingerprint"] == meta[1]["fingerprint"]


def test_a_replay_of_every_grouping_strategy_never_imports_numba(datasets, tmp_path):
    from skewbench import registry

    r = probe("replay", "grouping", "--dataset", datasets["auto"], "--strategies", ",".join(registry.names("grouping")),
              "--workers", "5,50", "--sources", "1,5", "--out", tmp_path / "r")
    assert r["status"].startswith("kernels: ahead of time"), r
    assert r == {"numba": False, "fallbacks": [], "status": r["status"]}


@pytest.mark.parametrize("family,args", [
    ("grouping", ["--strategies", "kg,sg,pkg,dc,osg", "--workers", "5,50", "--sources", "1,5"]),
    ("grouping", ["--strategies", "kg,pkg,wc", "--workers", "5", "--sources", "2", "--provisioning", "90"]),
    ("grouping", ["--strategies", "pkg,rr", "--workers", "5", "--sources", "3", "--window", "2s",
                  "--worker-speed", "0:1.2,1,1,1,0.8;20000:0.8,1,1,1,1.2"]),
    ("shedding", ["--strategies", "las,bl,sm,fk", "--provisioning", "75,110"]),
])
def test_results_are_identical_to_numba_just_in_time(datasets, tmp_path, family, args):
    tables = {}
    for kernels in ("auto", "jit"):
        out = tmp_path / kernels
        r = probe("replay", family, "--dataset", datasets["auto"], *args, "--out", out, kernels=kernels)
        assert r["status"].startswith("kernels: ahead of time" if kernels == "auto" else "kernels: numba"), r
        assert r["fallbacks"] == []
        tables[kernels] = [pq.read_table(out / f).drop_columns(
            [c for c in schema(family).timing_columns if c in pq.read_schema(out / f).names])
            for f in ("summary.parquet", "series.parquet")]
    for a, b in zip(tables["auto"], tables["jit"]):
        assert a.num_rows > 0 and a.equals(b)


def test_advise_never_imports_numba_and_equals_numba_just_in_time(datasets, tmp_path):
    """``skewbench advise`` on a dataset (integer keys), a key file of text keys and key,count
    pairs: every kernel call it makes is compiled ahead of time, with numba's results (every
    row, timings aside)."""
    words = tmp_path / "words.txt"
    words.write_text("".join(f"k{i % 37}-é😀\n" for i in range(3000)), encoding="utf-8")
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("".join(f"p{i},{i % 11}\n" for i in range(500)))
    for keys in (datasets["auto"], words, pairs):
        out = {}
        for kernels in ("auto", "jit"):
            p = subprocess.run([sys.executable, "-c", PROBE, "advise", str(keys), "--workers", "5,64",
                                "--flink-max-parallelism", "1000", "--json"], capture_output=True, text=True,
                               timeout=600, env={**os.environ, "SKEWBENCH_KERNELS": kernels})
            assert p.returncode == 0, p.stderr
            r = json.loads(p.stderr.strip().splitlines()[-1])
            if kernels == "auto":
                assert r == {"numba": False, "fallbacks": [], "status": r["status"]}, (keys, r)
            out[kernels] = {k: v for k, v in json.loads(p.stdout).items() if k != "seconds"}
        assert out["auto"] == out["jit"] and out["auto"]["rows"], keys
