"""Conformance of every registered strategy, generated from the strategy tables.

The cases are every ``(family, strategy)`` pair that :func:`skewbench.families.families` and
:func:`skewbench.registry.names` list at collection time (ids ``family/strategy``), so a new row
in a family's ``STRATEGIES`` table, a strategy added through an entry point or a new family is
covered without editing this module.  Checks:

1. the class is registered under its own ``name``, has a one-line ``description`` and constructs
   with only its required arguments (grouping: several ``(workers, sources)`` incl. one worker;
   a single-scheduler strategy with one source, and it refuses more);
2. ``param_docs`` describes exactly the ``defaults``, each with a sentence, and
   :func:`skewbench.registry.describe` lists them;
3. (grouping) one batch or randomly sized batches (size-1 and empty ones included) give the same
   assignments, ``summary()`` and ``window_stats()``;
4. (grouping, multi-source strategies) feeding one object each source's tuples separately, the
   sources in any order, gives the same assignments as feeding the whole stream;
5. (grouping) a small replay through the engine writes results that pass validation.

Checks 3-5 drive the grouping family's :class:`~skewbench.grouping.base.Strategy` interface;
for another family they are skipped with the reason.  Besides the defaults, checks 3 and 4 run
the parameter sets of :data:`EXERCISE` for strategies whose defaults leave most of their state
machine idle on a few thousand tuples (e.g. OSG's first sketch shipment needs ``2 * 1024``
executions of an instance); a name missing from the tables is ignored there.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

from skewbench import registry
from skewbench.datasets.contract import open_dataset
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.errors import SkewbenchError
from skewbench.families import families

GROUPING = "grouping"
M = 6000  # tuples of the test stream
#: (workers, sources) of checks 1 and 3; a single-scheduler strategy runs them with sources = 1
SETTINGS = [(1, 1), (2, 1), (3, 2), (8, 4)]
#: (workers, sources) of check 4 (several sources each)
MULTI_SOURCE = [(3, 2), (5, 3), (8, 4)]
#: parameter sets run besides the defaults in checks 3 and 4 (they exercise more state)
EXERCISE: dict[str, list[dict[str, Any]]] = {
    "osg": [{"window": 64}, {"window": 32, "mu": float("inf"), "latency": 3.0, "variant": "literal"}],
    "fk": [{"variant": "osg"}, {"semantics": "wl"}],
    "dc": [{"refresh": 1}, {"mode": "authors", "warmup": 50, "capacity": 8}],
    "wc": [{"capacity": 4, "theta": 0.01}],
    "rr": [{"theta": 0.02, "warmup": 10}],
    "fixed-d": [{"d": 5, "refresh": 1}],
    # the defaults' windows and learning phases (10^5 tuples) outlast the 6,000-tuple stream
    "dkg": [{"learn": 300}, {"learn": 40, "theta": 0.05, "mu": 1, "ef": 1.0}],
    "cm": [{"window": 64}],
    "am": [{"window": 64}],
    "cam": [{"window": 64}],
    "chwbl": [{"accounting": "window", "window": 50}, {"accounting": "key", "window": 200},
              {"factor": 100, "vnodes": 3}],
    "salt": [{"merge_window": 500, "draw": "rr", "place": "offset", "theta": 0.02},
             {"selector": "all", "salts": 3, "draw": "hashed", "merge_window": 64}],
}


def _pairs() -> list[Any]:
    return [pytest.param(f, s, id=f"{f}/{s}") for f in families() for s in registry.names(f)]


PAIRS = _pairs()
pytestmark = pytest.mark.parametrize("family,name", PAIRS)


def _grouping_only(family: str) -> None:
    if family != GROUPING:
        pytest.skip(f"family '{family}': this check drives the grouping Strategy interface "
                    "(route over Batch); there is no conformance driver for this family's strategies")


def _settings(cls: type, settings: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n, s in settings:
        ns = (n, 1 if cls.single_source else s)
        if ns not in out:
            out.append(ns)
    return out


def _param_sets(name: str) -> list[dict[str, Any]]:
    return [{}] + EXERCISE.get(name, [])


# --------------------------------------------------------------------------------------------
# the stream

@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("conformance") / "z"
    spec = StreamSpec.zipf(1.2, 300, M, seed=11, rate=900.0, arrivals="poisson", block_size=2500,
                           cost={"model": "levels", "levels": 8, "low": 0.5, "high": 4.0})
    generate(spec, out, name="conformance")
    return out


@pytest.fixture(scope="module")
def stream(dataset):
    """The dataset as the grouping family's arrays: seq, key, ts (ms), cost (ms)."""
    t = open_dataset(dataset).read_table()
    seq = t.column("seq").to_numpy().astype(np.int64)
    key = t.column("key").to_numpy().astype(np.int64)
    ts = t.column("ts").to_numpy().astype(np.float64) * 1000.0
    cost = t.column("cost").to_numpy().astype(np.float64)
    assert len(seq) == M and np.array_equal(seq, np.arange(M))
    assert len(np.unique(key)) > 50 and cost.min() > 0 and np.all(np.diff(ts) >= 0)
    return seq, key, ts, cost


def _batch(stream, index) -> Any:
    from skewbench.grouping.base import Batch

    seq, key, ts, cost = stream
    return Batch(seq[index], key[index], ts[index], cost[index])


# --------------------------------------------------------------------------------------------
# 1. constructs with defaults

def _required(cls: type) -> list[str]:
    sig = inspect.signature(cls.__init__)
    return [p.name for p in list(sig.parameters.values())[1:]
            if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD,
                                                                   p.KEYWORD_ONLY)]


def test_constructs_with_defaults(family, name):
    cls = registry.get(family, name)
    assert inspect.isclass(cls)
    assert cls.name == name, f"{registry.table(family)[name]} names itself {cls.name!r}, registered as {name!r}"
    desc = getattr(cls, "description", None)
    assert isinstance(desc, str) and desc.strip(), f"{family}/{name}: empty description"
    assert "\n" not in desc.strip(), f"{family}/{name}: the description must be one line: {desc!r}"
    assert isinstance(cls.defaults, dict) and isinstance(cls.param_docs, dict)

    if family != GROUPING:  # only the arguments we can name: a number of workers
        required = _required(cls)
        if set(required) - {"workers"}:
            pytest.skip(f"family '{family}': cannot supply required argument(s) {required}")
        obj = cls(**{a: 3 for a in required})
        if hasattr(obj, "params"):
            assert set(obj.params) >= set(cls.defaults)
        return

    from skewbench.grouping.base import Batch, Strategy

    assert issubclass(cls, Strategy)
    assert _required(cls) == ["workers"], f"{name}: only workers may be required, got {_required(cls)}"
    rng = np.random.default_rng(4)
    keys = rng.integers(0, 40, size=60)
    for n, s in _settings(cls, SETTINGS):
        obj = cls(n) if s == 1 else cls(n, s)
        assert (obj.workers, obj.sources, obj.seed) == (n, s, 0)
        used = obj.describe_params()
        assert set(cls.defaults) <= set(used), f"{name}: describe_params() lacks {set(cls.defaults) - set(used)}"
        out = obj.route(Batch(np.arange(60, dtype=np.int64), keys, np.arange(60) * 2.0, np.full(60, 1.5)))
        assert isinstance(out, np.ndarray) and out.dtype == np.int64 and out.shape == (60,)
        assert out.min() >= 0 and out.max() < n, (n, s, out)
        assert isinstance(obj.summary(), dict) and isinstance(obj.window_stats(), dict)
    if cls.single_source:
        with pytest.raises(SkewbenchError, match="sources"):
            cls(3, 2)


# --------------------------------------------------------------------------------------------
# 2. parameters described

def _is_sentence(text: Any) -> bool:
    """A sentence of prose: one line, no padding, at least three words (a final full stop is not
    required; the toy family of tests/plugins ends its one with a parenthesis)."""
    return (isinstance(text, str) and text == text.strip() and "\n" not in text
            and len([w for w in text.split() if any(ch.isalpha() for ch in w)]) >= 3)


def test_parameters_described(family, name):
    cls = registry.get(family, name)
    defaults, docs = dict(cls.defaults), dict(cls.param_docs)
    assert set(docs) == set(defaults), (f"{family}/{name}: undocumented {sorted(set(defaults) - set(docs))}, "
                                        f"documented but not a parameter {sorted(set(docs) - set(defaults))}")
    bad = {k: v for k, v in docs.items() if not _is_sentence(v)}
    assert not bad, f"{family}/{name}: parameter descriptions that are not a sentence: {bad}"
    d = registry.describe(family, name)
    assert (d["family"], d["name"], d["description"]) == (family, name, cls.description)
    assert d["target"] == registry.table(family)[name]
    assert [p["name"] for p in d["params"]] == list(defaults)
    for p in d["params"]:
        assert p["doc"] == docs[p["name"]], p["name"]
        np.testing.assert_equal(p["default"], defaults[p["name"]], err_msg=p["name"])


# --------------------------------------------------------------------------------------------
# 3. batch-size invariance

def _splits(m: int, rng: np.random.Generator, checkpoints: list[int]) -> dict[str, list[int]]:
    """Batch boundaries (0 ... m, non-decreasing; equal neighbours are an empty batch) per
    pattern; every pattern also cuts at ``checkpoints``."""
    pats: dict[str, list[int]] = {}
    pats["random"] = sorted(rng.choice(np.arange(1, m), size=30, replace=False).tolist())
    pats["geometric"] = np.cumsum(rng.geometric(0.04, size=m)).tolist()  # many small, a few large
    ones: list[int] = []
    for lo in (0, m // 2 - 30, m - 40):  # runs of size-1 batches: start, middle, end
        ones.extend(range(lo + 1, lo + 40))
    ones.extend(rng.integers(1, m, size=10).tolist())
    ones.extend([m // 3, m // 3])  # an empty batch
    pats["singles"] = sorted(ones)
    out = {}
    for k, cuts in pats.items():
        cuts = [c for c in cuts if 0 < c < m] + checkpoints
        out[k] = [0] + sorted(cuts) + [m]
    return out


def _run(cls, n, s, params, stream, bounds, checkpoints):
    obj = cls(n, s, 3, **params)
    parts, seen = [], {}
    for lo, hi in zip(bounds, bounds[1:]):
        parts.append(obj.route(_batch(stream, slice(lo, hi))))
        assert len(parts[-1]) == hi - lo
        if hi in checkpoints and hi not in seen:
            seen[hi] = (obj.summary(), obj.window_stats())
    return np.concatenate(parts), obj.summary(), obj.window_stats(), seen


def _first_diff(a: np.ndarray, b: np.ndarray) -> str:
    d = np.flatnonzero(a != b)
    return f"{len(d)} of {len(a)} tuples differ, first at seq {d[0]}" if len(d) else "equal"


def test_batch_size_invariance(family, name, stream):
    _grouping_only(family)
    cls = registry.get(family, name)
    rng = np.random.default_rng(2024)
    checkpoints = [M // 4, M // 2, 3 * M // 4]
    by_default: dict[tuple[int, int], np.ndarray] = {}
    for params in _param_sets(name):
        changed = False
        for n, s in _settings(cls, SETTINGS):
            where = f"{name} {params} workers={n} sources={s}"
            whole, summ, wstats, _ = _run(cls, n, s, params, stream, [0, M], [])
            if not params:
                by_default[n, s] = whole
            changed = changed or not np.array_equal(whole, by_default[n, s])
            assert whole.shape == (M,) and whole.dtype == np.int64, where
            assert whole.min() >= 0 and whole.max() < n, where
            if n > 1:
                assert len(np.unique(whole)) > 1, f"{where}: everything on one worker"
            # the same stream cut only at the checkpoints: the reference for intermediate stats
            at, at_summ, at_wstats, ref_points = _run(cls, n, s, params, stream, [0] + checkpoints + [M],
                                                      checkpoints)
            assert np.array_equal(at, whole), f"{where}, cut at {checkpoints}: {_first_diff(at, whole)}"
            np.testing.assert_equal(at_summ, summ, err_msg=where)
            np.testing.assert_equal(at_wstats, wstats, err_msg=where)
            for pattern, bounds in _splits(M, rng, checkpoints).items():
                got, g_summ, g_wstats, points = _run(cls, n, s, params, stream, bounds, checkpoints)
                msg = f"{where}, {pattern} batches ({len(bounds) - 1})"
                assert np.array_equal(got, whole), f"{msg}: {_first_diff(got, whole)}"
                np.testing.assert_equal(g_summ, summ, err_msg=f"{msg}: summary()")
                np.testing.assert_equal(g_wstats, wstats, err_msg=f"{msg}: window_stats()")
                assert sorted(points) == checkpoints
                for c in checkpoints:
                    np.testing.assert_equal(points[c], ref_points[c], err_msg=f"{msg}: (summary, window_stats) at {c}")
        # an EXERCISE set must route differently from the defaults somewhere, or it adds nothing
        if params:
            assert changed, f"{name}: EXERCISE parameters {params} route exactly as the defaults"


# --------------------------------------------------------------------------------------------
# 4. per-source feeding equals whole-stream feeding

def test_per_source_feeding(family, name, stream):
    _grouping_only(family)
    cls = registry.get(family, name)
    if cls.single_source:
        pytest.skip(f"{name} has a single scheduler (single_source): it always runs with one source")
    seq = stream[0]
    rng = np.random.default_rng(77)
    for params in _param_sets(name):
        for n, s in MULTI_SOURCE:
            whole = cls(n, s, 5, **params).route(_batch(stream, slice(0, M)))
            orders = {"ascending": list(range(s)), "descending": list(range(s))[::-1],
                      "shuffled": rng.permutation(s).tolist()}
            for label, order in orders.items():
                obj = cls(n, s, 5, **params)
                got = np.full(M, -1, dtype=np.int64)
                for j in order:
                    mine = np.flatnonzero(seq % s == j)
                    got[mine] = obj.route(_batch(stream, mine))
                assert np.array_equal(got, whole), \
                    f"{name} {params} workers={n} sources={s}, sources fed {label} {order}: {_first_diff(got, whole)}"
            # sources interleaved chunk by chunk (each source's chunks in stream order)
            obj = cls(n, s, 5, **params)
            got = np.full(M, -1, dtype=np.int64)
            pending = {j: np.array_split(np.flatnonzero(seq % s == j), 7) for j in range(s)}
            while any(pending.values()):  # a random source next, its next chunk
                j = int(rng.choice([j for j, cs in pending.items() if cs]))
                idx = pending[j].pop(0)
                got[idx] = obj.route(_batch(stream, idx))
            assert np.array_equal(got, whole), \
                f"{name} {params} workers={n} sources={s}, sources interleaved by chunks: {_first_diff(got, whole)}"


# --------------------------------------------------------------------------------------------
# 5. results validate

def test_results_validate(family, name, dataset, tmp_path):
    _grouping_only(family)
    from skewbench.grouping.engine import ReplayConfig, grid, replay_to_dir
    from skewbench.results import read_results
    from skewbench.validation.results import validate_results

    cells = grid([name], [3, 8], [2], [0])
    assert [c.workers for c in cells] == [3, 8]
    manifest = replay_to_dir(dataset, cells, tmp_path / "r", ReplayConfig(window=500, provisioning=100.0))
    _, summary, series = read_results(tmp_path / "r")
    assert manifest["summary_rows"] == summary.num_rows == len(cells)
    assert series.num_rows == len(cells) * (M // 500)
    assert summary.column("strategy").to_pylist() == [name] * len(cells)
    assert [sum(w) for w in summary.column("worker_tuples").to_pylist()] == [M] * len(cells)
    report = validate_results(tmp_path / "r")
    assert report.success, report.message()
