"""Every Java router (``src/skewbench/live/java/partition``, :mod:`skewbench.live.routers`) against
its Python strategy class, tuple for tuple, in one JVM without Flink (issue 41, item 2).

The streams: the first 40,000 tuples of the catalog's ``zipf-1.5``, ``drift-hotswap`` and
``slashdot`` (the Slashdot sample in ../shared/data: a trace whose keys are integers, so the
engines' partitioners hash their values, as a real engine would); 2, 8 and 100 workers; 5 sources
(tuple ``i`` to source ``i mod 5``, each source its own router) and 1; each strategy's defaults and
its ``exercise`` parameter sets, and the engines' ``key_format="string"``; two hash seeds.  A
difference fails naming the first tuple, its key, its source and both workers.

The routers' table is read from the JVM, so a router added there is covered here; a strategy of
the Python table without one is listed in :data:`WITHOUT` until it has one (a router added for it
fails the check that keeps the list honest).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skewbench import registry
from skewbench.errors import SkewbenchError
from skewbench.grouping.base import Batch
from skewbench.live import routers

REPO = Path(__file__).resolve().parents[2]
TUPLES = 40_000
WORKERS = (2, 8, 100)
SOURCES = (5, 1)
SEEDS = (0, 12345)
DATASETS = ("zipf-1.5", "drift-hotswap", "slashdot")
#: the grouping strategies without a Java router: not yet (dkg, cm, am, cam: a live run routes them
#: from the replay's decisions) or by design (flink is Flink's own keyBy; osg and fk decide from the
#: workers' execution times, which only the replay has)
WITHOUT = {"dkg", "cm", "am", "cam", "osg", "fk", "flink"}


@pytest.fixture(scope="module")
def state(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("routers-state")


@pytest.fixture(scope="module")
def java_names(state) -> list[str]:
    return routers.names(state)


@pytest.fixture(scope="module")
def streams(tmp_path_factory, shared_data) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """Dataset -> (dense key ids, the keys' values or None), the first TUPLES tuples."""
    from skewbench.datasets.catalog import load_catalog
    from skewbench.datasets.contract import open_dataset
    from skewbench.materialize import materialize

    root = tmp_path_factory.mktemp("routers-data")
    out = {}
    for entry in load_catalog(REPO / "datasets" / "catalog.yaml", shared_data=shared_data).select(list(DATASETS)):
        status = materialize(entry, root, engine="local")
        ds = open_dataset(status["path"])
        out[entry.name] = (np.ascontiguousarray(ds.read_keys()[:TUPLES], dtype=np.int64), ds.key_values())
    assert set(out) == set(DATASETS), sorted(out)
    return out


def python_workers(name: str, keys: np.ndarray, values: np.ndarray | None, workers: int, sources: int, seed: int,
                   params: dict) -> np.ndarray:
    cls = registry.get("grouping", name)
    s = cls(workers, sources, seed, **params)
    if cls.uses_key_values:
        s.bind_key_values(values)
    n = keys.size
    return s.route(Batch(np.arange(n, dtype=np.int64), keys, np.zeros(n), np.ones(n)))


def first_difference(py: np.ndarray, java: np.ndarray, keys: np.ndarray, hashed: np.ndarray, sources: int) -> str:
    i = int(np.flatnonzero(py != java)[0])
    return (f"tuple {i} (key id {keys[i]}, hashed as {hashed[i]}, source {i % sources}): Python worker {py[i]}, "
            f"Java worker {java[i]}; {int((py != java).sum())} of {py.size} differ")


def param_sets(name: str) -> list[dict]:
    cls = registry.get("grouping", name)
    sets = [{}] + [dict(p) for p in getattr(cls, "exercise", [])]
    if "key_format" in cls.defaults:
        sets.append({"key_format": "string"})
    return sets


def test_every_strategy_without_a_router_is_listed(java_names):
    python_names = set(registry.names("grouping"))
    assert set(java_names) <= python_names, set(java_names) - python_names
    assert set(java_names) | WITHOUT == python_names, python_names - set(java_names) - WITHOUT
    assert not set(java_names) & WITHOUT, set(java_names) & WITHOUT  # a new router: take it off WITHOUT


@pytest.mark.parametrize("dataset", DATASETS)
def test_each_router_equals_its_python_class_tuple_for_tuple(dataset, streams, java_names, state, tmp_path):
    keys, values = streams[dataset]
    cases, expected = [], []
    for name in java_names:
        cls = registry.get("grouping", name)
        hashed = values[keys] if (cls.uses_key_values and values is not None) else keys
        for params in param_sets(name):
            for workers in WORKERS:
                for sources in SOURCES:
                    for seed in (SEEDS if cls.seeded else SEEDS[:1]):
                        cases.append(routers.Case(name, hashed, workers, sources, seed, params))
                        expected.append((python_workers(name, keys, values, workers, sources, seed, params), hashed))
    results = routers.route(cases, state, tmp_path)
    bad = []
    for c, r, (py, hashed) in zip(cases, results, expected):
        assert r.workers.size == keys.size
        if not np.array_equal(py, r.workers):
            bad.append(f"{c.strategy} {c.params or ''} n={c.workers} s={c.sources} seed={c.seed}: "
                       + first_difference(py, r.workers, keys, hashed, c.sources))
    assert not bad, f"{dataset}: " + "\n".join(bad)
    # the streams reach every worker (a router stuck on one would not be checked by much)
    assert all(np.unique(r.workers).size > 1 for r in results)


def test_a_deliberately_wrong_router_is_caught(streams, state, tmp_path):
    """The comparison can fail: PKG's decisions against KG's router differ, and the message names
    the first differing tuple."""
    keys, _ = streams["zipf-1.5"]
    py = python_workers("pkg", keys, None, 8, 5, 0, {})
    (r,) = routers.route([routers.Case("kg", keys, 8, 5, 0)], state, tmp_path)
    assert not np.array_equal(py, r.workers)
    assert first_difference(py, r.workers, keys, keys, 5).startswith("tuple ")


def test_bad_cases_are_one_clear_error(state, tmp_path):
    keys = np.arange(10, dtype=np.int64)
    with pytest.raises(SkewbenchError, match=r"no router for strategy 'nope'; routers: \[kg, sg, pkg"):
        routers.route([routers.Case("nope", keys, 4)], state, tmp_path)
    with pytest.raises(SkewbenchError, match=r"pkg: unknown parameter\(s\) \[theta\]; it takes none"):
        routers.route([routers.Case("pkg", keys, 4, params={"theta": 0.1})], state, tmp_path)
    with pytest.raises(SkewbenchError, match=r"kafka: key_format must be one of \[long, string\], got 'text'"):
        routers.route([routers.Case("kafka", keys, 4, params={"key_format": "text"})], state, tmp_path)
    with pytest.raises(SkewbenchError, match=r"kg: workers must be >= 1, got 0"):
        routers.route([routers.Case("kg", keys, 0)], state, tmp_path)
