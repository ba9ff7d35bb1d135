"""The shedding engine's operator metrics against a plain-Python reference
(tests/reference/shedding_engine_ref.py): small streams replayed through the real engine
(``skewbench.shedding.engine.replay`` on datasets written to disk, the local executor), every
summary metric and series value compared with the reference computed one tuple at a time.

Exact where both sides do the same arithmetic (counts, shares, lambda, the largest wait);
``rel = 1e-12`` where the order of a float sum differs (numpy's pairwise sums and interpolation
formula against ``math.fsum`` and the textbook interpolation).  Costs and timestamps are dyadic
rationals, so the mean cost W, the arrival scale and every wait are exact on both sides and
no shed decision can flip on a rounding difference.  Columns the engine adds later are ignored.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from skewbench import replay as shared
from skewbench.datasets.contract import DatasetWriter
from skewbench.shedding import engine, las
from tests.reference import shedding_engine_ref as ref

REL = 1e-12
EXACT = ("tuples", "dropped", "dropped_ratio", "bl_dropped", "shed_lambda", "over_bound_share",
         "prefix_violation_share", "queueing_latency_max", "underprovisioning", "bound_ms")
CLOSE = ("queueing_latency_mean", "queueing_latency_p50", "queueing_latency_p99", "completion_latency_mean",
         "completion_latency_p99", "q_over_bound", "prefix_max", "effective_load")
SERIES_EXACT = ("window", "start", "end", "tuples", "dropped_ratio", "over_bound_share")
SERIES_CLOSE = ("queueing_latency_mean", "completion_latency_mean")
LAS_WINDOW = 128
STRATEGIES = ("las", "bl", "sm", "fk", "ns")


def _stream(seed: int, m: int, phases: bool):
    """Zipf-like keys over 40 keys, each with a dyadic cost in [0.25, 4] ms; Poisson arrivals on
    a 1/256 s grid (steady), or a constant 1/64 s gap with the costs doubled after the middle
    (two phases; the first is the reference segment)."""
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, 41) ** 1.1
    keys = rng.choice(40, size=m, p=w / w.sum()).astype(np.int64)
    level = rng.integers(1, 17, size=40) * 0.25  # 0.25 .. 4.0 ms, exact binary fractions
    cost = level[keys]
    if phases:
        ts = np.arange(m) / 64.0
        cost = np.where(np.arange(m) >= m // 2, 2 * cost, cost)
    else:
        ts = np.cumsum(np.maximum(1, np.round(rng.exponential(4.0, size=m)))) / 256.0
        ts -= ts[0]
    return ts, keys, cost


def _write(path, ts, keys, cost, phases):
    meta = {"kind": "synthetic", "generator": "test", "params": {}, "seed": 0, "n_keys": 40, "name": path.name}
    if phases:
        meta["phases"] = [{"start": 0, "end": len(keys) // 2}, {"start": len(keys) // 2, "end": len(keys)}]
    with DatasetWriter(path, ["seq", "ts", "key", "cost"]) as w:
        w.append({"ts": ts, "key": keys, "cost": cost})
        w.commit(meta)
    return path


CASES = {
    # name: (seed, tuples, two phases, provisioning, tau, series window)
    "steady": (11, 2400, False, (75, 110), 6.4, 500),
    "drift": (12, 2000, True, (90,), 1.5, 300),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def replayed(request, tmp_path_factory):
    seed, m, phases, prov, tau, window = CASES[request.param]
    ts, keys, cost = _stream(seed, m, phases)
    ds = _write(tmp_path_factory.mktemp("shed") / request.param, ts, keys, cost, phases)
    cells = engine.grid(STRATEGIES, prov, [1], [0, 7], {"las": {"window": [LAS_WINDOW]}})
    config = engine.ShedConfig(bound_ms=tau, window=window)
    res = engine.replay(str(ds), cells, config, shared.local_executor)
    return dict(ts=ts.tolist(), keys=keys.tolist(), cost=cost.tolist(), ref_end=m // 2 if phases else None,
                tau=tau, window=window, cells=cells, res=res)


def _reference(r, cell):
    m = len(r["keys"])
    ha, hb = las.hash_params(cell.seed, 4)  # the default epsilon 0.05, delta 0.1: 4 rows
    warm = {}
    if cell.strategy == "las":  # the engine's warm-up draw: a bootstrap of the reference segment
        n_ref = r["ref_end"] or m
        g = np.random.Generator(np.random.PCG64(np.random.SeedSequence(cell.seed, spawn_key=(0x5A17,))))
        idx = g.integers(0, n_ref, size=max(8 * LAS_WINDOW, 4096))
        warm = {"warm_keys": [r["keys"][i] for i in idx], "warm_durations": [r["cost"][i] for i in idx]}
    return ref.operator_cell(cell.strategy, r["ts"], r["keys"], r["cost"], provisioning=cell.provisioning,
                             tau=r["tau"], window=r["window"], coins=las.bl_coins(cell.seed, m).tolist(),
                             hash_a=ha.tolist(), hash_b=hb.tolist(), params=cell.param_dict,
                             ref_end=r["ref_end"], **warm)


def _same(got, want, name, close):
    if want is None:
        assert got is None or (isinstance(got, float) and math.isnan(got)), f"{name}: {got} where null is expected"
        return
    assert got is not None, f"{name}: null where {want} is expected"
    if close:
        assert got == pytest.approx(want, rel=REL, abs=1e-12), f"{name}: engine {got!r}, reference {want!r}"
    else:
        assert got == want, f"{name}: engine {got!r}, reference {want!r}"


def test_every_operator_metric_equals_the_reference(replayed):
    res, cells = replayed["res"], replayed["cells"]
    assert len(res.summary) == len(cells)
    series_by_cell: dict[str, list[dict]] = {}
    for s in res.series:
        series_by_cell.setdefault(s["cell_id"], []).append(s)
    for cell, row in zip(cells, res.summary):
        assert row["cell_id"] == cell.cell_id and row["kind"] == "operator"
        want, want_series, _ = _reference(replayed, cell)
        where = f"{cell.strategy} P={cell.provisioning} seed={cell.seed}"
        for k in EXACT:
            _same(row[k], want[k], f"{where} {k}", close=False)
        for k in CLOSE:
            _same(row[k], want[k], f"{where} {k}", close=True)
        got_series = sorted(series_by_cell[cell.cell_id], key=lambda s: s["window"])
        assert len(got_series) == len(want_series), where
        for g, w in zip(got_series, want_series):
            for k in SERIES_EXACT:
                _same(g[k], w[k], f"{where} window {w['window']} {k}", close=False)
            for k in SERIES_CLOSE:
                _same(g[k], w[k], f"{where} window {w['window']} {k}", close=True)


def test_the_streams_exercise_every_branch(replayed):
    """The comparison above covers each metric's cases: drops and no drops, Base Line dropping and
    not (lambda null), waits over tau and under it, series windows with drops and without."""
    rows = replayed["res"].summary
    by = {(r["strategy"], r["provisioning"], r["seed"]): r for r in rows}
    assert any(r["dropped"] > 0 for r in rows) and any(r["dropped"] == 0 for r in rows)
    assert any(r["shed_lambda"] is not None and r["shed_lambda"] != 0 for r in rows)
    assert any(0 < r["over_bound_share"] < 1 for r in rows)
    assert any(r["q_over_bound"] > 1 for r in rows) and any(r["q_over_bound"] < 1 for r in rows)
    assert all(r["effective_load"] > 0 for r in rows)
    ser = replayed["res"].series
    assert any(0 < s["dropped_ratio"] < 1 for s in ser) and any(s["dropped_ratio"] == 0 for s in ser)
    if 110 in {c.provisioning for c in replayed["cells"]}:  # over-provisioned: Base Line drops nothing
        assert by[("las", 110, 0)]["bl_dropped"] == 0 and by[("las", 110, 0)]["shed_lambda"] is None
