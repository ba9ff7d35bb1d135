"""Conformance of every registered strategy of every family, generated from the strategy tables.

The cases are every ``(family, strategy)`` pair that :func:`skewbench.families.families` and
:func:`skewbench.registry.names` list at collection time (ids ``family/strategy``), so a new row
in a family's ``STRATEGIES`` table, a strategy added through an entry point or a new family is
covered without editing this module.

How a family's strategies are exercised is stated in :data:`DRIVERS`: a
:class:`Driver` per built-in family, keyed by the family's name, with the module fixture that
holds the family's small dataset, the options of its ``skewbench replay <family>`` command and its
split check.  The parameter sets that reach more of a strategy's state than its defaults do on
that dataset are the strategy's own: its class attribute ``exercise`` (a list of parameter dicts;
none when the class has no such attribute), so a strategy's module holds them, not this test.  Any other family (one installed from outside, such as
``tests/plugins/toyfam``) gets :data:`GENERIC`: the Zipf stream and the command's own defaults.
The test functions look the driver up; only the grouping branch of check 1 and check 4, which
drive the grouping ``Strategy`` interface, name a family.  Checks:

1. the class is registered under its own ``name``, has a one-line ``description`` and constructs
   with only its required arguments (grouping: several ``(workers, sources)`` incl. one worker;
   a single-scheduler strategy with one source, and it refuses more);
2. ``param_docs`` describes exactly the ``defaults``, each with a sentence, and
   :func:`skewbench.registry.describe` lists them;
3. (a family with a driver) splits change nothing, as the family's model defines them:

   - grouping, a stream routed batch by batch: one batch or randomly sized batches (size-1 and
     empty ones included) give the same assignments, ``summary()`` and ``window_stats()``;
   - shedding, a stream the strategy sees whole: an operator shedder's ``simulate`` and a partition shedder's ``replay`` take the
     whole stream in one call, so there are no batches to feed.  What the interface promises is
     that it is online (``las``: a tuple's fate depends on it and the tuples before it; ``shedpart``:
     routing is in arrival order and a window is decided at its watermark), the condition under
     which feeding it in batches of any size would change nothing.  Checked: every prefix of the
     stream (cut at random points, at 1 and 2 tuples, and at the last) gives the whole stream's
     per-tuple trace (drops, latencies, estimates; corrections and the running average) or its
     complete windows (every field but the shedder's time, per-group details included), for the
     operator shedders at two provisioning levels and the partition shedders on 2 and 5 workers;
   - allocation, a set of instances: ``allocate(job, seed)`` is a pure function of (instance,
     seed), for two seeds: one object fed the instances in order (twice over), reversed or
     shuffled gives each instance what a fresh object gives it (nodes, stats, job), and leaves the
     instance unchanged; the strategy must place every task of at least one instance (else all
     this could hold of an allocation of nothing: add an instance it places to ``job_graphs``);
     and the engine's rows (without the reference optimum, the same for every strategy; check 6
     has it) do not depend on ``AllocConfig.chunk`` (1 or all) or on the instances' order in a
     chunk;

4. (grouping, multi-source strategies) feeding one object each source's tuples separately, the
   sources in any order, gives the same assignments as feeding the whole stream;
5. one replay of all the family's strategies through its real engine (its command, in this
   process) on the driver's dataset writes results that pass
   :func:`skewbench.validation.results.validate_results` (Great Expectations), validated once per
   family (``test_family_results_validate``); each strategy's case checks that its cells are there
   and, when the family's report fails, validates the strategy's own replay to say whether it is
   the one to blame;
6. determinism: the strategy replayed alone, twice with the same seeds (the second time with the
   driver's ``rerun_args``, allocation: ``--chunk 1`` against ``--chunk 4``, reference optimum
   included), writes bit-identical tables (timing metrics aside), equal to its rows in the
   family's replay of check 5 (the other cells of a grid change nothing).

Every family gets checks 1, 2, 5 and 6 (:data:`GENERIC` included: the toy family's run of this
module, in a process that finds it, is ``test_an_outside_family_gets_the_generic_driver``, marked
``slow`` for its 10-20 s); the built-in ones check 3 too.  Only a single strategy may be left out
of a check, with a reason that names it (today: osg and fk, single schedulers, in check 4).
Besides the defaults, checks 3 and 4 run the parameter sets of the strategy's ``exercise``; each
must behave differently from the defaults somewhere.
"""

from __future__ import annotations

import copy
import inspect
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from click.testing import CliRunner

from skewbench import registry
from skewbench.datasets.contract import DatasetWriter, open_dataset
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.errors import SkewbenchError
from skewbench.families import families

REPO = Path(__file__).resolve().parents[2]
GROUPING = "grouping"
M = 6000  # tuples of the test stream
#: (workers, sources) of checks 1 and 3; a single-scheduler strategy runs them with sources = 1
SETTINGS = [(1, 1), (2, 1), (3, 2), (8, 4)]
#: (workers, sources) of check 4 (several sources each)
MULTI_SOURCE = [(3, 2), (5, 3), (8, 4)]
#: the hash seeds of every replay in checks 5 and 6 (``--seeds 2``)
SEEDS = 2


def _pairs(*only: str) -> list[Any]:
    return [pytest.param(f, s, id=f"{f}/{s}") for f in families() if not only or f in only
            for s in registry.names(f)]


PAIRS = _pairs()


def _settings(cls: type, settings: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n, s in settings:
        ns = (n, 1 if cls.single_source else s)
        if ns not in out:
            out.append(ns)
    return out


# --------------------------------------------------------------------------------------------
# the datasets (one small one per family, module-scoped)

@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """The Zipf stream of the grouping family and of :data:`GENERIC`."""
    out = tmp_path_factory.mktemp("conformance") / "z"
    spec = StreamSpec.zipf(1.2, 300, M, seed=11, rate=900.0, arrivals="poisson", block_size=2500,
                           cost={"model": "levels", "levels": 8, "low": 0.5, "high": 4.0})
    generate(spec, out, name="conformance")
    return out


@lru_cache(maxsize=4)
def _stream_arrays(path: Path) -> tuple[np.ndarray, ...]:
    """The dataset as the grouping family's arrays: seq, key, ts (ms), cost (ms)."""
    t = open_dataset(path).read_table()
    seq = t.column("seq").to_numpy().astype(np.int64)
    key = t.column("key").to_numpy().astype(np.int64)
    ts = t.column("ts").to_numpy().astype(np.float64) * 1000.0
    cost = t.column("cost").to_numpy().astype(np.float64)
    assert len(seq) == M and np.array_equal(seq, np.arange(M))
    assert len(np.unique(key)) > 50 and cost.min() > 0 and np.all(np.diff(ts) >= 0)
    return seq, key, ts, cost


@pytest.fixture(scope="module")
def stream(dataset):
    return _stream_arrays(dataset)


SHED_M = 4000  # tuples of the shedding stream
SHED_WINDOW = {"range_s": 20.0, "slide_s": 10.0}  # its ShedPart query window (18 complete windows)


@pytest.fixture(scope="module")
def shedding_stream(tmp_path_factory):
    """A stream every shedding strategy accepts: ts, key, cost (ms, per-key classes) and value
    (per-key means), 60 Zipf(1.1) keys, Poisson arrivals over 200 s, with its ShedPart window."""
    out = tmp_path_factory.mktemp("conformance") / "shed"
    rng = np.random.default_rng(8)
    p = 1.0 / np.arange(1, 61) ** 1.1
    keys = rng.choice(60, size=SHED_M, p=p / p.sum()).astype(np.int64)
    ts = np.cumsum(rng.exponential(0.05, size=SHED_M))
    ts -= ts[0]
    cost = (0.5 + (keys % 8) * 0.5) * rng.uniform(0.9, 1.1, size=SHED_M)
    mu = 10.0 + 5.0 * (keys % 7)
    value = np.maximum(rng.normal(mu, 0.2 * mu), 0.01)
    with DatasetWriter(out, ["seq", "ts", "key", "cost", "value"]) as w:
        w.append({"ts": ts, "key": keys, "cost": cost, "value": value})
        w.commit({"kind": "synthetic", "generator": "test", "params": {}, "seed": 8, "n_keys": 60,
                  "name": "conformance-shed", "shedpart_window": SHED_WINDOW})
    return out


@pytest.fixture(scope="module")
def job_graphs(tmp_path_factory):
    """Seven job graphs: four E5 random graphs (one on 6 nodes, tight), one with measured per-task
    costs and per-link rates (a grouping replay's, spec 2.7.3), the E3 instance with f = 3 and a
    lightly loaded E5 graph (250% in all, three groups: Flink's fine-grained slots fit)."""
    from skewbench.allocation import instances as inst
    from skewbench.allocation.store import write_jobs

    out = tmp_path_factory.mktemp("conformance") / "jobs"
    jobs = [inst.random_graph(i, seed=7) for i in range(3)] + [inst.random_graph(3, nodes=6, seed=7)]
    jobs.append(inst.from_grouping([500, 300, 120, 80], [300, 100, 60, 40, 200, 200, 60, 40], 2, 4,
                                   name="grouping-measured"))
    jobs.append(inst.asymmetry([3])[0])
    jobs.append(inst.random_graph(7, total_pc=250.0, seed=7))
    assert [j.uniform for j in jobs] == [True, True, True, True, False, True, True]
    write_jobs(out, jobs, meta={"kind": "synthetic", "generator": "test", "params": {}, "seed": 7,
                                "name": "conformance-jobs"})
    return out


# --------------------------------------------------------------------------------------------
# comparing results

def _same(a: Any, b: Any) -> bool:
    """Bit-identical, NaN equal to NaN (lists of arrays, arrays, scalars, dicts)."""
    try:
        np.testing.assert_equal(a, b)
    except AssertionError:
        return False
    return True


def _first_diff(a: np.ndarray, b: np.ndarray) -> str:
    d = np.flatnonzero(a != b)
    return f"{len(d)} of {len(a)} tuples differ, first at seq {d[0]}" if len(d) else "equal"


def _timing(family: str, table: str) -> list[str]:
    """The columns of a results table that measure time (the schema's ``timing`` metrics)."""
    from skewbench.results import schema

    return [m.name for m in schema(family).table_metrics(table) if m.timing]


def _tables(family: str, out: Path, strategy: str | None = None) -> dict[str, pa.Table]:
    """A results directory's tables without their timing columns (one strategy's rows, or all)."""
    from skewbench.results import read_results

    _, summary, series = read_results(out)
    got = {}
    for label, t in (("summary", summary), ("series", series)):
        t = t.drop_columns(_timing(family, label))
        if strategy is not None:
            t = t.filter(pc.equal(t.column("strategy"), strategy))
        got[label] = t
    return got


def _assert_same_tables(a: dict[str, pa.Table], b: dict[str, pa.Table], what: str) -> None:
    for label in ("summary", "series"):
        x, y = a[label], b[label]
        assert x.column_names == y.column_names, f"{what}: {label} columns {x.column_names} vs {y.column_names}"
        assert x.num_rows == y.num_rows, f"{what}: {label} has {x.num_rows} vs {y.num_rows} rows"
        assert x.num_rows > 0, f"{what}: no {label} rows"
        for name in x.column_names:
            u, v = x.column(name).to_pylist(), y.column(name).to_pylist()
            if not _same(u, v):
                i = next(i for i, (p, q) in enumerate(zip(u, v)) if not _same(p, q))
                raise AssertionError(f"{what}: {label} column {name!r} differs first in row {i} "
                                     f"(cell {x.column('cell_id')[i]}): {u[i]!r} vs {v[i]!r}")


# --------------------------------------------------------------------------------------------
# 3. split checks, one per driver: each returns what it computed (compared across parameter sets)

def _batch(stream, index) -> Any:
    from skewbench.grouping.base import Batch

    seq, key, ts, cost = stream
    return Batch(seq[index], key[index], ts[index], cost[index])


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


def _grouping_batches(name: str, params: dict[str, Any], dataset: Path) -> list[Any]:
    """Grouping: batch-size invariance of ``route`` (and of ``summary()``, ``window_stats()``)."""
    stream = _stream_arrays(dataset)
    cls = registry.get(GROUPING, name)
    rng = np.random.default_rng(2024)
    checkpoints = [M // 4, M // 2, 3 * M // 4]
    out = []
    for n, s in _settings(cls, SETTINGS):
        where = f"{name} {params} workers={n} sources={s}"
        whole, summ, wstats, _ = _run(cls, n, s, params, stream, [0, M], [])
        out.append(whole)
        assert whole.shape == (M,) and whole.dtype == np.int64, where
        assert whole.min() >= 0 and whole.max() < n, where
        if n > 1:
            assert len(np.unique(whole)) > 1, f"{where}: everything on one worker"
        # the same stream cut only at the checkpoints: the reference for intermediate stats
        at, at_summ, at_wstats, ref_points = _run(cls, n, s, params, stream, [0] + checkpoints + [M], checkpoints)
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
    return out


SHED_SEED = 3
SHED_TAU = 6.4  # ms, the command's default --bound


def _prefix_cuts(m: int) -> list[int]:
    rng = np.random.default_rng(99)
    return sorted({1, 2, m // 2, m - 1, *rng.integers(3, m - 1, size=8).tolist()})


def _shedding_prefixes(name: str, params: dict[str, Any], dataset: Path) -> list[Any]:
    """Shedding: every prefix of the stream gives the whole stream's results on it (the module
    docstring says why this is the batch check of a whole-stream interface)."""
    from skewbench.shedding import engine

    strat = registry.get("shedding", name)(**params)
    ds = open_dataset(dataset)
    t = ds.read_table()
    keys = t.column("key").to_numpy().astype(np.int64)
    ts = t.column("ts").to_numpy().astype(np.float64)
    m = len(keys)
    cuts = _prefix_cuts(m)
    out: list[Any] = []
    if strat.kind == "operator":  # the shedder's simulate over (keys, arrivals, durations), as engine.simulate_operator
        cost = t.column("cost").to_numpy().astype(np.float64)
        d = engine.operator_data(keys, cost, ts)
        warm = {}
        if strat.warm:  # a warm-up sample (A5), the same for every run
            idx = np.random.default_rng(1).integers(0, m, size=4096)
            warm = {"warm_keys": keys[idx], "warm_durations": cost[idx]}
        for P in (75, 110):
            arr, wbar = engine.arrivals_ms(d, P)
            cfg = strat.config(SHED_TAU, 1.0 - P / 100.0, wbar)
            where = f"{name} {params} provisioning={P}"
            whole = strat.simulate(keys, arr, cost, cfg, SHED_SEED, **warm)
            if strat.name != "ns" and P == 75:  # under-provisioned: a shedder must drop, and not all
                assert 0 < whole.dropped.sum() < m, f"{where}: drops {whole.dropped.sum()} of {m}"
            again = strat.simulate(keys, arr, cost, cfg, SHED_SEED, **warm)
            for f in ("dropped", "q", "c", "qhat", "deltas", "matrices", "nop_tuples", "belief", "warm_started"):
                np.testing.assert_equal(getattr(again, f), getattr(whole, f), err_msg=f"{where}: run twice, {f}")
            for c in cuts:
                part = strat.simulate(keys[:c], arr[:c], cost[:c], cfg, SHED_SEED, **warm)
                msg = f"{where}: the first {c} tuples alone"
                for f in ("dropped", "q", "c", "qhat"):
                    np.testing.assert_array_equal(getattr(part, f), getattr(whole, f)[:c], err_msg=f"{msg}: {f}")
                nd = len(part.deltas)
                np.testing.assert_array_equal(part.deltas, whole.deltas[:nd], err_msg=f"{msg}: corrections")
                assert part.matrices <= whole.matrices and part.nop_tuples <= whole.nop_tuples, msg
                assert part.warm_started == whole.warm_started, msg
                qsum, ell = 0.0, 0  # the running average over the estimated tuples, summed in order
                for v in whole.qhat[:c]:
                    if not np.isnan(v):
                        qsum += float(v)
                        ell += 1
                np.testing.assert_equal(part.belief, qsum / ell if ell else np.nan, err_msg=f"{msg}: belief")
            out += [whole.dropped, whole.q, whole.qhat]
        return out
    value = t.column("value").to_numpy().astype(np.float64)
    fields = ("start", "end", "size", "n_groups", "n_heavy", "loads", "loads_after", "ran", "precheck", "n_trimmed",
              "n_blacklisted", "shed_tuples", "err_mean", "err_max", "trimmed_pairs", "covered_pairs")
    for V in (2, 5):
        cfg = strat.config(SHED_WINDOW["range_s"], SHED_WINDOW["slide_s"], V, 0.1, 0.95)
        where = f"{name} {params} workers={V}"
        whole = strat.replay(ts, keys, value, cfg, SHED_SEED, details=True)
        assert len(whole) == 18, f"{where}: {len(whole)} windows"
        if strat.shed and not params:  # the defaults trim on this stream
            assert whole.ran.any() and whole.shed_tuples.sum() > 0, f"{where}: ShedPart never trims"
        for c in cuts:
            part = strat.replay(ts[:c], keys[:c], value[:c], cfg, SHED_SEED, details=True)
            sel = np.flatnonzero(whole.end <= ts[c - 1])  # the windows complete in the prefix
            msg = f"{where}: the first {c} tuples (to t = {ts[c - 1]:.2f} s) alone"
            np.testing.assert_array_equal(part.window_id, whole.window_id[sel], err_msg=f"{msg}: windows")
            for f in fields:
                np.testing.assert_array_equal(getattr(part, f), getattr(whole, f)[sel], err_msg=f"{msg}: {f}")
            for k, w in enumerate(sel):
                np.testing.assert_equal(part.groups[k], whole.groups[w], err_msg=f"{msg}: groups of window {w}")
        out += [whole.loads_after, whole.shed_tuples, whole.ran, whole.err_mean]
    return out


ALLOC_SEEDS = (0, 5)


def _job_state(job: Any) -> list[Any]:
    """Every field of an allocation instance, for equality."""
    links = sorted((job.link_rate or {}).items())
    return [job.name, job.groups, job.tasks, job.cost, job.src, job.dst, job.rate, job.capacity, job.task_cost,
            [e for e, _ in links], [r for _, r in links], job.meta]


def _allocation_instances(name: str, params: dict[str, Any], dataset: Path) -> list[Any]:
    """Allocation: a pure function of (instance, seed); the engine's rows independent of the
    chunking and of the order of the instances."""
    from skewbench.allocation import engine
    from skewbench.allocation.store import read_jobs

    cls = registry.get("allocation", name)
    jobs0 = read_jobs(dataset)
    n = len(jobs0)
    assert n == int(open_dataset(dataset).meta["job_graph"]["instances"])
    perm = np.random.default_rng(4).permutation(n).tolist()
    out: list[Any] = []
    for seed in ALLOC_SEEDS:
        # a fresh object and a fresh copy of each instance: the reference
        ref = [cls(**params).allocate(job, seed) for job in copy.deepcopy(jobs0)]
        if seed == ALLOC_SEEDS[0]:  # else every check below could pass on an allocation of nothing
            assert any(np.all(o.node >= 0) for o in ref), \
                f"{name} {params}: places every task of none of the {n} instances; add one it places to job_graphs"
        for label, order, passes in (("in order", list(range(n)), 2), ("reversed", list(range(n))[::-1], 1),
                                     ("shuffled", perm, 1)):
            obj = cls(**params)  # one object for all the instances, each pass after the last
            jobs = copy.deepcopy(jobs0)
            before = [_job_state(j) for j in jobs]
            for rnd in range(1, passes + 1):
                for i in order:
                    o = obj.allocate(jobs[i], seed)
                    where = f"{name} {params} seed={seed}, instance {jobs[i].name} fed {label} (pass {rnd})"
                    assert isinstance(o.node, np.ndarray) and o.node.shape == (o.job.m,), where
                    np.testing.assert_array_equal(o.node, ref[i].node, err_msg=f"{where}: node of each task")
                    np.testing.assert_equal(o.stats, ref[i].stats, err_msg=f"{where}: stats")
                    np.testing.assert_equal(_job_state(o.job), _job_state(ref[i].job), err_msg=f"{where}: job")
            for j, b in zip(jobs, before):
                np.testing.assert_equal(_job_state(j), b, err_msg=f"{name} {params}: allocate changed instance {j.name}")
        out += [o.node for o in ref]
    # the engine: its rows do not depend on the chunks (AllocConfig.chunk) or on the order of the
    # instances.  No reference optimum here (it is the same for every strategy): check 6 replays
    # each strategy with it, once with --chunk 4 and once with --chunk 1.
    cells = engine.grid([name], list(ALLOC_SEEDS), {name: {k: [v] for k, v in params.items()}} if params else None)
    timing = set(_timing("allocation", "summary")) | set(_timing("allocation", "series")) | {"_wall"}

    def untimed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k not in timing} for r in rows]

    by_chunk = {}
    for chunk in (n, 1):
        r = engine.replay(str(dataset), cells, engine.AllocConfig(optimum="off", min_time=0.0, chunk=chunk),
                          lambda fn, items, desc="": [fn(x) for x in items])
        by_chunk[chunk] = (untimed(r.summary), untimed(r.series))
        assert [(x["cell_id"], x["window"]) for x in r.series] == [(c.cell_id, w) for c in cells for w in range(n)]
        np.testing.assert_equal(by_chunk[chunk], by_chunk[n], err_msg=f"{name} {params}: engine.replay with "
                                                                       f"chunk={chunk} vs chunk={n}")
    shuffled = engine.run_chunk(str(dataset), cells, perm, engine.AllocConfig(optimum="off", min_time=0.0))
    got = {(r["cell_id"], r["window"]): r for rows in shuffled for r in untimed(rows)}
    np.testing.assert_equal(got, {(r["cell_id"], r["window"]): r for r in by_chunk[n][1]},
                            err_msg=f"{name} {params}: the instances in the order {perm}")
    return out


# --------------------------------------------------------------------------------------------
# the drivers

@dataclass(frozen=True)
class Driver:
    """How this test exercises one family's strategies."""

    #: the module fixture holding the family's small dataset
    dataset: str = "dataset"
    #: the family's own options of ``skewbench replay <family>`` (besides dataset, strategies, seeds, out)
    replay_args: tuple[str, ...] = ()
    #: check 3: ``splits(name, params, dataset path)`` asserts; returns what it computed
    splits: Callable[[str, dict[str, Any], Path], list[Any]] | None = None
    #: what every summary row of a replay of the dataset holds: column -> value
    rows: dict[str, Any] = field(default_factory=dict)
    #: check 6: options of the second of the two replays of a strategy alone (they override
    #: ``replay_args``; a setting that must not change the results, such as how work is dealt)
    rerun_args: tuple[str, ...] = ()


DRIVERS: dict[str, Driver] = {
    "grouping": Driver(
        "dataset", ("--workers", "3,8", "--sources", "2", "--window", "500", "--provisioning", "100"),
        _grouping_batches, {"tuples": M}),
    "shedding": Driver(
        "shedding_stream", ("--provisioning", "75,110", "--workers", "2,5", "--window", "500"),
        _shedding_prefixes, {"tuples": SHED_M}),
    "allocation": Driver(
        "job_graphs", ("--min-time", "0", "--chunk", "4"),
        _allocation_instances, {"instances": 7}, ("--chunk", "1")),
}
#: any other family: its command's defaults on the Zipf stream, checks 1, 2, 5 and 6
GENERIC = Driver()


def _driver(family: str) -> Driver:
    return DRIVERS.get(family, GENERIC)


def param_sets(family: str, name: str) -> list[dict[str, Any]]:
    """The defaults, then the strategy's own ``exercise`` sets (see the module docstring)."""
    return [{}] + list(getattr(registry.get(family, name), "exercise", []))


def _replay(family: str, dataset: Path, names: list[str], out: Path, *extra: str) -> Path:
    """``skewbench replay <family>`` (the family's command, in this process)."""
    cmd = families()[family].module("cli").command
    args = ["--dataset", str(dataset), "--strategies", ",".join(names), "--seeds", str(SEEDS), "--out", str(out),
            *_driver(family).replay_args, *extra]
    r = CliRunner().invoke(cmd, args, catch_exceptions=False)
    assert r.exit_code == 0, f"skewbench replay {family} {' '.join(args)}: exit {r.exit_code}\n{r.output[-3000:]}"
    return out


@dataclass
class _FamilyRun:
    out: Path
    report: Any


@pytest.fixture(scope="module")
def family_runs(tmp_path_factory):
    """One replay of all a family's strategies and its validation report, made on first use."""
    from skewbench.validation.results import validate_results

    root = tmp_path_factory.mktemp("family-runs")
    done: dict[str, _FamilyRun] = {}

    def get(family: str, dataset: Path) -> _FamilyRun:
        if family not in done:
            out = _replay(family, dataset, registry.names(family), root / family)
            done[family] = _FamilyRun(out, validate_results(out))
        return done[family]

    return get


# --------------------------------------------------------------------------------------------
# 1. constructs with defaults

def _required(cls: type) -> list[str]:
    sig = inspect.signature(cls.__init__)
    return [p.name for p in list(sig.parameters.values())[1:]
            if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD,
                                                                   p.KEYWORD_ONLY)]


@pytest.mark.parametrize("family,name", PAIRS)
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
            pytest.skip(f"{family}/{name}: cannot supply required argument(s) {required}")
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
        with pytest.raises(SkewbenchError, match=rf"^{re.escape(name)} has a single scheduler: sources must be 1$"):
            cls(3, 2)


# --------------------------------------------------------------------------------------------
# 2. parameters described

def _is_sentence(text: Any) -> bool:
    """A sentence of prose: one line, no padding, at least three words (a final full stop is not
    required; the toy family of tests/plugins ends its one with a parenthesis)."""
    return (isinstance(text, str) and text == text.strip() and "\n" not in text
            and len([w for w in text.split() if any(ch.isalpha() for ch in w)]) >= 3)


@pytest.mark.parametrize("family,name", PAIRS)
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
# 3. splits change nothing (the family's driver)

@pytest.mark.parametrize("family,name", _pairs(*[f for f, d in DRIVERS.items() if d.splits is not None]))
def test_split_invariance(family, name, request):
    driver = _driver(family)
    dataset = request.getfixturevalue(driver.dataset)
    base = None
    for params in param_sets(family, name):
        got = driver.splits(name, params, dataset)
        assert got, f"{family}/{name} {params}: the split check computed nothing"
        if not params:
            base = got
        else:  # an exercise set must behave differently from the defaults somewhere, or it adds nothing
            assert not _same(got, base), f"{family}/{name}: exercise parameters {params} behave exactly as the defaults"


# --------------------------------------------------------------------------------------------
# 4. per-source feeding equals whole-stream feeding (grouping: tuple seq belongs to source seq % s)

@pytest.mark.parametrize("family,name", _pairs(GROUPING))
def test_per_source_feeding(family, name, stream):
    cls = registry.get(family, name)
    if cls.single_source:
        pytest.skip(f"{name} has a single scheduler (single_source): it always runs with one source")
    seq = stream[0]
    rng = np.random.default_rng(77)
    for params in param_sets(family, name):
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
# 5. results validate (one replay per family through its engine, validated once)

@pytest.mark.parametrize("family", list(families()))
def test_family_results_validate(family, request, family_runs):
    run = family_runs(family, request.getfixturevalue(_driver(family).dataset))
    assert run.report.success, run.report.message()


@pytest.mark.parametrize("family,name", PAIRS)
def test_results_validate(family, name, request, family_runs, tmp_path):
    from skewbench.results import read_results
    from skewbench.validation.results import validate_results

    driver = _driver(family)
    dataset = request.getfixturevalue(driver.dataset)
    run = family_runs(family, dataset)
    manifest, summary, _ = read_results(run.out)
    mine = [c["cell_id"] for c in manifest["cells"] if c["strategy"] == name]
    rows = [r for r in summary.to_pylist() if r["strategy"] == name]
    assert mine and [r["cell_id"] for r in rows] == mine, f"{family}/{name}: cells {mine}, summary rows {rows}"
    assert sorted({r["seed"] for r in rows}) == list(range(SEEDS))
    for col, value in driver.rows.items():
        assert [r[col] for r in rows] == [value] * len(rows), f"{family}/{name}: {col}"
    if not run.report.success:  # whose failure is it? this strategy's results alone
        own = validate_results(_replay(family, dataset, [name], tmp_path / "alone"))
        assert own.success, own.message()


# --------------------------------------------------------------------------------------------
# 6. determinism: alone twice, and alone as within the family's grid

@pytest.mark.parametrize("family,name", PAIRS)
def test_replay_deterministic(family, name, request, family_runs, tmp_path):
    dataset = request.getfixturevalue(_driver(family).dataset)
    rerun = _driver(family).rerun_args
    a = _tables(family, _replay(family, dataset, [name], tmp_path / "a"))
    b = _tables(family, _replay(family, dataset, [name], tmp_path / "b", *rerun))
    _assert_same_tables(a, b, f"{family}/{name} replayed twice" + (f", the second time with {' '.join(rerun)}"
                                                                   if rerun else ""))
    within = _tables(family, family_runs(family, dataset).out, strategy=name)
    _assert_same_tables(a, within, f"{family}/{name} replayed alone vs within all of {family}'s strategies")


# --------------------------------------------------------------------------------------------
# GENERIC on an outside family: the toy family (tests/plugins/toyfam), in a process that finds it

@pytest.mark.slow  # a second pytest process that imports Great Expectations: 10-20 s
def test_an_outside_family_gets_the_generic_driver(tmp_path):
    assert "toy" not in families()  # the toy family stays out of this process (test_family_contract)
    report = tmp_path / "junit.xml"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests" / "plugins"),
                                                       os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k", "toy",
                        f"--junitxml={report}"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    cases = {}
    for tc in ET.parse(report).getroot().iter("testcase"):
        outcome = "passed" if not list(tc) else tc[0].tag
        cases[tc.get("name")] = outcome
    expected = {f"{t}[toy/{s}]" for t in ("test_constructs_with_defaults", "test_parameters_described",
                                          "test_results_validate", "test_replay_deterministic")
                for s in ("modulo", "hashed")} | {"test_family_results_validate[toy]"}
    assert cases == {c: "passed" for c in expected}, cases
