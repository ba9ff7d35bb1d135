"""OSG and FK: parameters, errors, summaries, variants, helpers, growth of the message buffers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skewbench.errors import SkewbenchError
from skewbench.grouping.strategies import osg
from skewbench.grouping.base import Batch, WorkerModel
from skewbench import registry as _registry

REGISTRY = {n: _registry.get("grouping", n) for n in _registry.names("grouping")}
from tests.reference import osg_ref as ref


def stream(m=4000, k=4, P=100.0, seed=0, n=200):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, n, m)
    kc = rng.choice(np.arange(1, 65) * 0.1, n)
    costs = kc[keys]
    ts = np.arange(m) * costs.mean() * P / (100 * k)
    return Batch(np.arange(m, dtype=np.int64), keys.astype(np.int64), ts, costs)


def test_registered():
    for name in ("osg", "fk"):
        cls = REGISTRY[name]
        assert cls.single_source and cls.uses_costs and cls.description
    assert REGISTRY["osg"] is osg.OSG and REGISTRY["fk"] is osg.FK
    assert "fk-osg" not in REGISTRY
    assert osg.OSG.defaults == {"window": 1024, "mu": 0.05, "rows": 4, "cols": 54, "eps": None,
                                "latency": 0.0, "variant": "wl", "empty_cells": "exclude",
                                "stale_replies": False, "resync_start": "restart"}
    # spec 2.6 / A9: a plain fk is FK-ideal with the literal accumulated-work rule
    assert osg.FK.defaults == {"variant": "ideal", "semantics": "literal",
                               "resync_start": "restart"}


@pytest.mark.parametrize("params, match", [
    ({"window": 0}, "window"),
    ({"window": 2.5}, "window"),
    ({"mu": float("nan")}, "mu"),
    ({"mu": "0.1"}, "mu"),
    ({"mu": True}, "mu"),
    ({"rows": 0}, "rows"),
    ({"cols": 0}, "cols"),
    ({"eps": 0.0}, "eps"),
    ({"eps": -1}, "eps"),
    ({"eps": 0.05, "cols": 54}, "cols or eps"),
    ({"latency": -1.0}, "latency"),
    ({"latency": math.inf}, "latency"),
    ({"variant": "fast"}, "variant"),
    ({"empty_cells": "zero"}, "empty_cells"),
    ({"stale_replies": "yes"}, "stale_replies"),
    ({"resync_start": "rr"}, "resync_start"),
    ({"resync_start": None}, "resync_start"),
    ({"semantics": "wl"}, "unknown parameter"),
])
def test_osg_parameter_errors(params, match):
    with pytest.raises(SkewbenchError, match=match):
        osg.OSG(3, **params)


def test_structural_errors():
    with pytest.raises(SkewbenchError, match="sources must be 1"):
        osg.OSG(3, sources=2)
    with pytest.raises(SkewbenchError, match="workers"):
        osg.OSG(0)
    with pytest.raises(SkewbenchError, match="variant"):
        osg.FK(3, variant="oracle")
    with pytest.raises(SkewbenchError, match="semantics"):
        osg.FK(3, semantics="jsq")
    with pytest.raises(SkewbenchError, match="resync_start"):
        osg.FK(3, resync_start="again")
    with pytest.raises(SkewbenchError, match="unknown parameter"):
        osg.FK(3, window=8)
    s = osg.OSG(3, rows=2, cols=5)
    with pytest.raises(SkewbenchError, match=r"^set_hash: a must be in \[1, p-1\] and b in \[0, p-1\]$"):
        s.set_hash([0, 1], [0, 0])
    with pytest.raises(SkewbenchError, match=r"^set_hash needs 2 values of a and of b$"):
        s.set_hash([1, 1, 1], [0, 0, 0])
    with pytest.raises(SkewbenchError, match=r"^set_hash_table: columns must lie in \[0, 5\)$"):
        s.set_hash_table(np.full((2, 4), 5))
    with pytest.raises(SkewbenchError, match=r"^scale must be a number in \(0\.0, inf\], got 0\.0$"):
        s.set_estimate_scale(0.0)
    with pytest.raises(SkewbenchError, match=r"^source must be 'store' or 'live'$"):
        s.estimates([1], 0, "cache")


def test_cm_dimensions():
    assert osg.cm_rows(0.1) == 4 and osg.cm_rows(0.25) == 2 and osg.cm_rows(0.5) == 1
    assert osg.cm_rows(0.125) == 3 and osg.cm_rows(0.01) == 7 and osg.cm_rows(1.0) == 1
    assert osg.cm_columns(0.05) == 54 and osg.cm_columns(0.001) == 2718
    assert osg.cm_columns(1.0) == 1 and osg.cm_columns(5.0) == 1 and osg.cm_columns(0.7) == 3
    assert osg.cm_columns(0.09) == 30
    with pytest.raises(SkewbenchError, match=r"^eps must be a number in \(0\.0, inf\], got 0$"):
        osg.cm_columns(0)
    with pytest.raises(SkewbenchError, match=r"^delta must be a number in \(0\.0, 1\.0\], got 1\.5$"):
        osg.cm_rows(1.5)
    assert osg.OSG(2, eps=0.001).describe_params()["cols"] == 2718
    assert osg.OSG(2, eps=1.0).cols == 1
    d = osg.OSG(2).describe_params()
    assert d["cols"] == 54 and d["rows"] == 4 and d["variant"] == "wl"


def test_draw_hash():
    a, b = osg.draw_hash(7, 4)
    a2, b2 = osg.draw_hash(7, 4)
    assert np.array_equal(a, a2) and np.array_equal(b, b2)
    assert a.dtype == np.int64 and np.all((a >= 1) & (a < osg.PRIME)) and np.all((b >= 0) & (b < osg.PRIME))
    assert not np.array_equal(osg.draw_hash(8, 4)[0], a)
    ra, rb = ref.draw_hash(7, 4)
    assert ra == a.tolist() and rb == b.tolist()
    s = osg.OSG(3, seed=7, cols=54)
    keys = np.array([0, 1, 5, 10**12, 2**40 + 3])
    cols = s.hash_columns(keys)
    for i in range(4):
        for j, v in enumerate(keys):
            assert cols[i, j] == ((int(a[i]) * (int(v) % osg.PRIME) + int(b[i])) % osg.PRIME) % 54
    osg.OSG(3, seed=-5)  # any integer seed works


def test_summary_and_window_stats():
    b = stream()
    keys = {"run_index", "send_all_index", "shipments", "replies", "control_messages",
            "shipments_delivered", "epochs_started", "epochs_completed", "epochs_abandoned",
            "stale_replies_dropped", "stale_replies_applied", "mode", "est_error"}
    s = osg.OSG(4, window=64)
    before = s.summary()
    assert set(before) == keys and before["run_index"] == -1 and math.isnan(before["est_error"])
    assert s.window_stats() == {"mode": 0.0, "shipments": 0.0}
    s.route(b)
    summ = s.summary()
    assert set(summ) == keys
    assert all(isinstance(v, (int, float)) for v in summ.values())
    assert summ["control_messages"] == summ["shipments"] + summ["replies"]
    assert 0 <= summ["send_all_index"] <= summ["run_index"] < len(b)
    assert summ["epochs_completed"] + summ["epochs_abandoned"] <= summ["epochs_started"]
    assert summ["est_error"] >= 0
    ws = s.window_stats()
    assert set(ws) == {"mode", "shipments"} and ws["shipments"] == summ["shipments"]
    for variant in ("ideal", "osg"):
        f = osg.FK(4, variant=variant)
        f.route(b)
        assert set(f.summary()) == keys and set(f.window_stats()) == {"mode", "shipments"}
    assert osg.FK(4).summary()["run_index"] == 0
    assert osg.FK(4).seeded is False and osg.FK(4, variant="osg").seeded is True


def test_empty_batch_and_dtypes():
    s = osg.OSG(3)
    out = s.route(Batch(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0)))
    assert out.dtype == np.int64 and out.shape == (0,)
    b = stream(500, 3)
    b32 = Batch(b.seq.astype(np.int32), b.key.astype(np.int32), b.ts.astype(np.float32),
                b.cost.astype(np.float32))
    assert osg.OSG(3, window=8).route(b32).dtype == np.int64


def test_variants_differ():
    b = stream(20000, 4, P=110)
    wl = osg.OSG(4, window=128).route(b)
    lit = osg.OSG(4, window=128, variant="literal").route(b)
    assert not np.array_equal(wl, lit)
    exc = osg.OSG(4, window=128, cols=500).route(b)
    inc = osg.OSG(4, window=128, cols=500, empty_cells="include").route(b)
    assert not np.array_equal(exc, inc)
    ideal = osg.FK(4).route(b)  # FK-ideal, literal semantics
    fko = osg.FK(4, variant="osg").route(b)
    assert not np.array_equal(ideal, fko)
    assert not np.array_equal(ideal, osg.FK(4, semantics="wl").route(b))
    cont = osg.OSG(4, window=128, resync_start="continue").route(b)
    assert not np.array_equal(wl, cont)
    assert np.array_equal(cont[:1000], wl[:1000])  # the warm-up is the same round robin
    # FK-osg is the OSG machine: its warm-up is round robin
    assert np.array_equal(fko[:1000], np.arange(1000) % 4)
    eng = osg.FK(4, variant="osg").engine
    assert isinstance(eng, osg.FullKnowledgeOSG) and eng.window == 1024
    assert eng.params["variant"] == "literal" and eng.params["resync_start"] == "restart"


def test_fk_default_is_ideal_literal():
    """spec 2.6 / A9: a plain fk is FK-ideal with the literal rule; "wl" is still available and
    resync_start reaches FK-osg's engine."""
    b = stream(6000, 4, P=105)
    f = osg.FK(4)
    assert f.describe_params() == {"variant": "ideal", "semantics": "literal",
                                   "resync_start": "restart"}
    assert f.engine is None and f.seeded is False
    a = f.route(b)
    assert a.tolist() == ref.run_fk_ideal(b.seq.tolist(), b.ts.tolist(), b.cost.tolist(), 4,
                                          semantics="literal")
    assert np.array_equal(a, osg.FK(4, semantics="literal").route(b))
    wl = osg.FK(4, semantics="wl").route(b)
    assert wl.tolist() == ref.run_fk_ideal(b.seq.tolist(), b.ts.tolist(), b.cost.tolist(), 4,
                                           semantics="wl")
    assert not np.array_equal(a, wl)
    # identical costs: the default FK is round robin t mod k (spec 7.9)
    m = 1000
    u = Batch(np.arange(m), np.zeros(m, np.int64), np.arange(m) * 0.5, np.full(m, 2.0))
    assert np.array_equal(osg.FK(4).route(u), np.arange(m) % 4)
    # resync_start passes through to FK-osg
    for rs in ("restart", "continue"):
        f = osg.FK(4, variant="osg", semantics="wl", resync_start=rs)
        assert f.engine.params["resync_start"] == rs
        g = osg.FullKnowledgeOSG(4, 1, 0, variant="wl", resync_start=rs)
        assert np.array_equal(f.route(b), g.route(b))


def test_resync_start_kernel_equals_reference():
    """Both resync_start values on a stream with several epochs, against the reference."""
    k, m = 3, 3000
    b = stream(m, k, P=100, seed=4, n=20)
    params = dict(window=8, mu=0.5, rows=2, cols=5, latency=1.0)
    traces = {}
    for variant in ("wl", "literal"):
        for rs in ("restart", "continue"):
            s = osg.OSG(k, seed=2, variant=variant, resync_start=rs, **params)
            a = s.route(b)
            want, stats = ref.run_osg(b.seq.tolist(), b.key.tolist(), b.ts.tolist(),
                                      b.cost.tolist(), k, seed=2, variant=variant,
                                      resync_start=rs, **params)
            assert a.tolist() == want
            assert s.summary()["epochs_completed"] == stats["epochs_completed"] > 2
            assert s.describe_params()["resync_start"] == rs
            assert s.debug_state()["rr_ptr"] == m
            traces[variant, rs] = a
        assert not np.array_equal(traces[variant, "restart"], traces[variant, "continue"])


def test_stale_replies_flag_applies_corrections():
    b = stream(6000, 4, P=97)
    s = osg.OSG(4, window=16, mu=math.inf, latency=30.0, variant="literal", stale_replies=True)
    s.route(b)
    assert s.summary()["stale_replies_applied"] > 0
    s2 = osg.OSG(4, window=16, mu=math.inf, latency=30.0, variant="literal")
    s2.route(b)
    assert s2.summary()["stale_replies_applied"] == 0 and s2.summary()["stale_replies_dropped"] > 0


def test_buffers_grow():
    """Huge latency keeps every message pending: heap, payload pool and shipment log grow, and
    the result still equals the reference and a batch-by-batch run."""
    k, m = 3, 400
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 5, m)
    costs = rng.integers(1, 5, 5).astype(float)[keys]
    ts = np.arange(m) * 0.5
    b = Batch(np.arange(m, dtype=np.int64), keys, ts, costs)
    params = dict(window=2, mu=math.inf, rows=2, cols=3, latency=200.0)
    s = osg.OSG(k, seed=3, **params)
    a = s.route(b)
    want, stats = ref.run_osg(list(range(m)), keys.tolist(), ts.tolist(), costs.tolist(), k,
                              seed=3, **params)
    assert a.tolist() == want
    assert s.state.pool.shape[0] > 2 * k + 2 and s.state.hf.shape[1] > 4 * k + 16
    d = s.debug_state()
    assert len(d["ship_op"]) == s.summary()["shipments"] > 4 * k + 16
    s2 = osg.OSG(k, seed=3, **params)
    parts = [s2.route(b.take(slice(i, i + 37))) for i in range(0, m, 37)]
    assert np.array_equal(np.concatenate(parts), a)


def test_worker_model_shape_checked():
    wm = WorkerModel(np.zeros(1, np.int64), np.ones((1, 2)))
    with pytest.raises(SkewbenchError, match="worker model"):
        osg.OSG(3, worker_model=wm)
    with pytest.raises(SkewbenchError, match="worker model"):
        osg.FK(3, worker_model=wm)


def test_modes_and_debug_state():
    b = stream(8000, 4)
    s = osg.OSG(4, window=64)
    s.route(b)
    modes = s.last_modes
    assert modes.shape == (len(b),) and set(np.unique(modes)) <= {0, 1, 2, 3}
    assert modes[0] == osg.ROUND_ROBIN and s.mode == s.debug_state()["mode"]
    first = np.flatnonzero(modes == osg.SEND_ALL)[0]
    assert first == s.summary()["send_all_index"]
    d = s.debug_state()
    assert d["F"].shape == (4, 4, 54) and d["executed"].sum() == len(b)
    assert d["have"].all()
