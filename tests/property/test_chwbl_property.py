"""Consistent hashing with bounded loads (chwbl): the numba kernels equal the plain-Python
reference for the three accountings (whole stream, random batch splits, per-source feeding),
and the invariants, limiting cases and vectors of practice.spec.md 2.1, 5.1 (P2, P3), 5.2 and
7 (items 1-6) hold.

Item 3's last clause ("a key's workers form a prefix of omega(k)") holds for a key alone in its
source's stream (tested); with other keys it does not: a key first seen when ``omega_1`` and
``omega_2`` are full goes to ``omega_3`` and may never use ``omega_2``.  What holds for every
stream is the rest of item 3, tested on every decision.
"""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skewbench.errors import SkewbenchError
from skewbench.grouping.base import Batch
from skewbench.grouping.strategies import chwbl
from skewbench.grouping.strategies.chwbl import CHWBL
from tests.reference import chwbl_ref as ref

N_IDS = 40
HUGE = 10**9


def make_batch(seq, keys) -> Batch:
    seq = np.asarray(seq, dtype=np.int64)
    return Batch(seq, np.asarray(keys, dtype=np.int64), np.zeros(len(seq)), np.ones(len(seq)))


def skewed_keys(rng: np.random.Generator, m: int, z: float, n_ids: int = N_IDS) -> np.ndarray:
    p = np.arange(1, n_ids + 1, dtype=float) ** -z
    ids = rng.permutation(n_ids) + 1
    return ids[rng.choice(n_ids, size=m, p=p / p.sum())].astype(np.int64)


def run(n, s, seed, seq, keys, **params):
    obj = CHWBL(n, s, seed, **params)
    return obj, obj.route(make_batch(seq, keys))


def cap(T, F, n):
    return -(-(T + 1) * F // (100 * n))


@st.composite
def cases(draw, accountings=("request", "window", "key")):
    n = draw(st.integers(1, 12))
    s = draw(st.integers(1, 4))
    m = draw(st.integers(0, 250))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    keys = skewed_keys(rng, m, draw(st.sampled_from([0.0, 0.8, 1.2, 2.0, 3.0])))
    kind = draw(st.integers(0, 3))
    if kind == 1:  # int64 values: large and negative ones
        keys = keys * 1_000_000_007 - 2**40
    elif kind == 2:
        keys = np.where(keys % 2 == 0, -keys, keys * (2**62 // N_IDS))
    if draw(st.booleans()):
        seq = np.arange(m, dtype=np.int64) + draw(st.integers(0, 1000))
    else:  # gaps: another consumer owns the missing positions
        seq = np.cumsum(rng.integers(1, 4, size=m)).astype(np.int64)
    params = {
        "factor": draw(st.sampled_from([100, 101, 110, 125, 150, 300, HUGE])),
        "vnodes": draw(st.sampled_from([1, 2, 3, 10, 100])),
        "accounting": draw(st.sampled_from(accountings)),
        "window": draw(st.sampled_from([0, 1, 2, 5, 17, 60])),
    }
    params = {k: v for k, v in params.items() if k == "accounting" or draw(st.integers(0, 4))}
    return n, s, draw(st.integers(0, 2**31)), seq, keys, params


def reference(n, s, seed, seq, keys, **params):
    r = ref.Reference(n, s, seed, **params)
    return r, r.route(seq.tolist(), keys.tolist())


# --------------------------------------------------------------------------------------------
# kernel == reference

@settings(max_examples=150, deadline=None)
@given(cases())
def test_kernel_equals_reference(case):
    n, s, seed, seq, keys, params = case
    obj, out = run(n, s, seed, seq, keys, **params)
    r, expected = reference(n, s, seed, seq, keys, **params)
    assert out.dtype == np.int64
    assert out.tolist() == expected
    assert obj.local_loads().tolist() == [src.load for src in r.src]
    assert obj.accounted_loads().tolist() == [src.acc for src in r.src]
    assert obj.summary() == r.summary()
    assert obj.key_maps() == [src.map for src in r.src]
    assert obj.window_stats() == {k: r.summary()[k] for k in ("displaced_fraction", "walk_mean", "keys_mapped")}
    for k in set(keys[:5].tolist()):
        assert obj.walk_order(k) == r.ring.omega(k)


@settings(max_examples=60, deadline=None)
@given(cases(), st.data())
def test_batch_splits_keep_state(case, data):
    n, s, seed, seq, keys, params = case
    whole_obj, whole = run(n, s, seed, seq, keys, **params)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(seq)), max_size=8)))
    obj = CHWBL(n, s, seed, **params)
    parts = [obj.route(make_batch(seq[a:b], keys[a:b])) for a, b in zip([0] + cuts, cuts + [len(seq)])]
    assert np.concatenate(parts).tolist() == whole.tolist()
    assert obj.summary() == whole_obj.summary()
    assert obj.window_stats() == whole_obj.window_stats()
    assert obj.key_maps() == whole_obj.key_maps()


@settings(max_examples=60, deadline=None)
@given(cases(), st.randoms(use_true_random=False))
def test_per_source_feeding(case, rnd):
    n, s, seed, seq, keys, params = case
    whole_obj, whole = run(n, s, seed, seq, keys, **params)
    obj = CHWBL(n, s, seed, **params)
    out = np.full(len(seq), -1, dtype=np.int64)
    order = list(range(s))
    rnd.shuffle(order)
    for j in order:
        mine = seq % s == j
        out[mine] = obj.route(make_batch(seq[mine], keys[mine]))
    assert out.tolist() == whole.tolist()
    assert obj.summary() == whole_obj.summary()
    assert obj.window_stats() == whole_obj.window_stats()


@settings(max_examples=40, deadline=None)
@given(cases(), st.sampled_from([1, 2, 3]))
def test_narrow_walk_table_changes_nothing(case, width):
    """Walks longer than the precomputed table go on node by node: same result."""
    n, s, seed, seq, keys, params = case
    if params.get("factor", HUGE) == HUGE:  # a tight bound makes long walks
        params = {**params, "factor": 100}
    whole_obj, whole = run(n, s, seed, seq, keys, **params)
    obj = CHWBL(n, s, seed, **params)
    obj._alloc_walks(min(width, n))
    half = len(seq) // 2
    out = [obj.route(make_batch(seq[:half], keys[:half])), obj.route(make_batch(seq[half:], keys[half:]))]
    assert np.concatenate(out).tolist() == whole.tolist()
    assert obj.summary() == whole_obj.summary()


def test_key_table_growth_and_expiry_changes_nothing():
    """Many distinct keys (the key tables grow several times) and expiry (expired keys are
    purged at a growth): equal to the reference, including negative and huge keys."""
    rng = np.random.default_rng(9)
    keys = np.concatenate([rng.integers(-2**63, 2**63 - 1, size=700, dtype=np.int64),
                           skewed_keys(rng, 700, 1.0, n_ids=300)])
    rng.shuffle(keys)
    seq = np.arange(len(keys))
    for window in (0, 50, 333):
        obj, out = run(7, 3, 2, seq, keys, accounting="key", window=window, vnodes=20)
        r, expected = reference(7, 3, 2, seq, keys, accounting="key", window=window, vnodes=20)
        assert out.tolist() == expected
        assert obj.key_maps() == [src.map for src in r.src]
        assert obj.summary() == r.summary()
        assert obj._tkey.shape[1] >= 512  # it grew
        assert obj.summary()["keys_mapped"] == sum(len(src.map) for src in r.src)


def test_ring_matches_reference():
    for n, V, seed in [(1, 1, 0), (5, 100, 3), (12, 7, 99), (30, 3, 2**40)]:
        obj = CHWBL(n, 1, seed, vnodes=V)
        ring = ref.Ring(n, V, seed)
        assert obj._pos.tolist() == ring.pos
        assert obj._wk.tolist() == [w for _, w, _ in ring.nodes]
        for k in [0, 1, -1, 2**63 - 1, -2**63, 12345, -987654321]:
            om = obj.walk_order(k)
            assert om == ring.omega(k) and sorted(om) == list(range(n))
            assert om[0] == ring.nodes[ring.succ(k)][1]


# --------------------------------------------------------------------------------------------
# spec 7, item 1: range, conservation, determinism, seeds

@settings(max_examples=40, deadline=None)
@given(cases())
def test_conservation(case):
    n, s, seed, seq, keys, params = case
    obj, out = run(n, s, seed, seq, keys, **params)
    c = np.bincount(out, minlength=n)
    assert len(c) == n and c.sum() == len(seq)
    assert obj.local_loads().sum(axis=0).tolist() == c.tolist()
    again = run(n, s, seed, seq, keys, **params)[1]
    assert again.tolist() == out.tolist()


def test_seed_changes_ring():
    rng = np.random.default_rng(1)
    keys = skewed_keys(rng, 3000, 1.0, n_ids=500)
    seq = np.arange(len(keys))
    for acc in ("request", "window", "key"):
        a = run(10, 3, 5, seq, keys, accounting=acc)[1]
        assert a.tolist() != run(10, 3, 6, seq, keys, accounting=acc)[1].tolist()


# --------------------------------------------------------------------------------------------
# spec 7, item 2 (T1, per-request bound) and P2 (factor 150: no worker above 1.5x the average)

@settings(max_examples=60, deadline=None)
@given(cases(accountings=("request",)))
def test_per_request_bound_after_every_decision(case):
    n, s, seed, seq, keys, params = case
    F = params.get("factor", 125)
    out = run(n, s, seed, seq, keys, **params)[1]
    load = [[0] * n for _ in range(s)]
    t = [0] * s
    for q, w in zip(seq.tolist(), out.tolist()):
        j = q % s
        load[j][w] += 1
        t[j] += 1
        assert max(load[j]) <= -(-t[j] * F // (100 * n))  # ceil(t_j F / (100 n))
    m = len(seq)
    if m:  # I <= (F/100 - 1)/n + s/m, exactly
        c = np.bincount(out, minlength=n)
        imb = Fraction(int(c.max()), m) - Fraction(1, n)
        assert imb <= Fraction(F - 100, 100 * n) + Fraction(s, m)


@pytest.mark.parametrize("n,s", [(5, 5), (10, 5), (50, 5), (20, 1)])
def test_factor_150_zipf_global_bound(n, s):  # P2 on a larger skewed stream
    rng = np.random.default_rng(n)
    keys = skewed_keys(rng, 20_000, 1.4, n_ids=2000)
    seq = np.arange(len(keys))
    obj, out = run(n, s, 1, seq, keys, factor=150)
    loads = obj.local_loads()
    per_source = np.bincount(seq % s, minlength=s)
    assert np.all(loads.max(axis=1) <= -(-per_source * 150 // (100 * n)))  # <= ceil(1.5 t_j / n)
    c = np.bincount(out, minlength=n)
    assert c.max() <= 1.5 * len(seq) / n + s
    kg_like = run(n, s, 1, seq, keys, factor=HUGE)[1]
    assert np.bincount(kg_like, minlength=n).max() > 1.5 * len(seq) / n + s  # the bound does work


# --------------------------------------------------------------------------------------------
# spec 7, item 3: the chosen worker is the first eligible one of omega(k)

def accounting_replay(n, s, seq, keys, out, accounting, W, F, omega):
    """Replay the decisions from the output alone; yields (rank of the chosen worker in omega,
    loads before the decision, cap) for every decision that walked."""
    acc = [[0] * n for _ in range(s)]
    hist = [[] for _ in range(s)]
    maps = [{} for _ in range(s)]
    W = 100 * n if accounting == "window" and W == 0 else W
    for q, k, w in zip(seq.tolist(), keys.tolist(), out.tolist()):
        j = q % s
        if accounting == "key":
            if k in maps[j]:
                assert maps[j][k] == w
                continue
            maps[j][k] = w
        c = cap(sum(acc[j]), F, n)
        yield omega(k).index(w), list(acc[j]), c, omega(k)
        if accounting != "window" or W > 1:
            acc[j][w] += 1
            hist[j].append(w)
        if accounting == "window" and len(hist[j]) > W - 1:  # keep the last W - 1 decisions
            acc[j][hist[j].pop(0)] -= 1


@settings(max_examples=60, deadline=None)
@given(cases())
def test_first_eligible_in_walk_order(case):
    n, s, seed, seq, keys, params = case
    if params["accounting"] == "key":
        params = {**params, "window": 0}  # expiry is covered by the reference
    out = run(n, s, seed, seq, keys, **params)[1]
    ring = ref.Ring(n, params.get("vnodes", 100), seed)
    F = params.get("factor", 125)
    for rank, acc, c, om in accounting_replay(n, s, seq, keys, out, params["accounting"],
                                              params.get("window", 0), F, ring.omega):
        assert acc[om[rank]] < c
        assert all(acc[x] >= c for x in om[:rank])


@settings(max_examples=40, deadline=None)
@given(cases(), st.integers(0, 2**40))
def test_single_key_uses_a_prefix_of_omega(case, k):
    n, s, seed, seq, _, params = case
    keys = np.full(len(seq), k - 2**39, dtype=np.int64)
    obj, out = run(n, s, seed, seq, keys, **params)
    om = obj.walk_order(int(keys[0])) if len(seq) else []
    for j in range(s):
        used = set(out[seq % s == j].tolist())
        assert used == set(om[:len(used)])


# --------------------------------------------------------------------------------------------
# spec 7, item 4: limiting cases and the 5.2 single-key vectors

@settings(max_examples=40, deadline=None)
@given(cases())
def test_huge_factor_is_plain_consistent_hashing(case):
    n, s, seed, seq, keys, params = case
    params = {**params, "factor": HUGE}
    obj, out = run(n, s, seed, seq, keys, **params)
    assert out.tolist() == [obj.walk_order(k)[0] for k in keys.tolist()]
    summ = obj.summary()
    assert summ["displaced_fraction"] == 0.0 and summ["walk_max"] <= 1.0
    # every factor >= 100 n gives the same decisions (cap >= T + 1)
    assert run(n, s, seed, seq, keys, **{**params, "factor": 100 * n})[1].tolist() == out.tolist()
    # a sliding window of one decision holds no history: plain consistent hashing too
    w1 = run(n, s, seed, seq, keys, accounting="window", window=1, vnodes=params.get("vnodes", 100))[1]
    assert w1.tolist() == out.tolist()


@settings(max_examples=50, deadline=None)
@given(cases(accountings=("request",)))
def test_factor_100_keeps_counts_within_one(case):
    n, s, seed, seq, keys, params = case
    out = run(n, s, seed, seq, keys, **{**params, "factor": 100})[1]
    for j in range(s):
        c = [0] * n
        for i, w in enumerate(out[seq % s == j].tolist(), start=1):
            c[w] += 1
            assert max(c) - min(c) <= 1
            if i % n == 0:
                assert c == [i // n] * n


@pytest.mark.parametrize("n,F,m,want", [
    (4, 125, 1000, [313, 313, 312, 62]),
    (4, 100, 1000, [250, 250, 250, 250]),
    (10, 125, 1000, [125] * 8 + [0, 0]),
    (5, 150, 997, [300, 299, 299, 99, 0]),
])
@pytest.mark.parametrize("seed,key,vnodes", [(0, 7, 100), (3, -2**62, 1), (11, 123456789, 16)])
def test_single_key_vectors(n, F, m, want, seed, key, vnodes):  # spec 5.2
    obj, out = run(n, 1, seed, np.arange(m), np.full(m, key), factor=F, vnodes=vnodes)
    c = np.bincount(out, minlength=n)
    assert [int(c[w]) for w in obj.walk_order(key)] == want
    r, expected = reference(n, 1, seed, np.arange(m), np.full(m, key), factor=F, vnodes=vnodes)
    assert out.tolist() == expected


# --------------------------------------------------------------------------------------------
# spec 7, items 5 (Wn) and 6 (K)

@settings(max_examples=60, deadline=None)
@given(cases(accountings=("window",)))
def test_sliding_window_bound(case):
    n, s, seed, seq, keys, params = case
    obj, out = run(n, s, seed, seq, keys, **params)
    W = obj.describe_params()["window"]
    assert W == (params.get("window", 0) or 100 * n)
    bound = -(-W * params.get("factor", 125) // (100 * n))
    for j in range(s):
        mine = out[seq % s == j]
        for lo in range(max(1, len(mine) - W + 1)):
            assert np.bincount(mine[lo:lo + W], minlength=n).max(initial=0) <= bound
    # the accounted loads are the window's counts: the last W - 1 decisions of each source
    for j in range(s):
        last = out[seq % s == j][-(W - 1):] if W > 1 else out[:0]
        assert obj.accounted_loads()[j].tolist() == np.bincount(last, minlength=n).tolist()


@settings(max_examples=60, deadline=None)
@given(cases(accountings=("key",)))
def test_sticky_keys_bound_key_counts(case):
    n, s, seed, seq, keys, params = case
    F = params.get("factor", 125)
    obj, out = run(n, s, seed, seq, keys, **{**params, "window": 0})
    for j in range(s):
        mine = seq % s == j
        where, count = {}, [0] * n
        for k, w in zip(keys[mine].tolist(), out[mine].tolist()):
            if k in where:
                assert where[k] == w  # one worker per key and source
                continue
            where[k] = w
            count[w] += 1
            assert max(count) <= cap(len(where) - 1, F, n)  # ceil(|map_j| F / (100 n))
        assert obj.key_maps()[j] == where
        assert obj.accounted_loads()[j].tolist() == count
    # with expiry a key keeps its worker inside one tumbling window of its source
    W = params.get("window", 0) or 7
    out = run(n, s, seed, seq, keys, **{**params, "window": W})[1]
    for j in range(s):
        mine = np.flatnonzero(seq % s == j)
        for lo in range(0, len(mine), W):
            idx = mine[lo:lo + W]
            first = {}
            for k, w in zip(keys[idx].tolist(), out[idx].tolist()):
                assert first.setdefault(k, w) == w


# --------------------------------------------------------------------------------------------
# spec 5.1 P3 (cascaded overflow) and the statistics

def test_overflow_spills_onto_walk_successors():
    """P3: displaced tuples land mostly on the next workers of the walk, and a tighter bound
    displaces more (fixed Zipf stream)."""
    rng = np.random.default_rng(3)
    keys = skewed_keys(rng, 30_000, 1.2, n_ids=3000)
    seq = np.arange(len(keys))
    disp = {}
    for F in (105, 110, 125, 150, 200, HUGE):
        obj = run(20, 5, 4, seq, keys, factor=F)[0]
        disp[F] = obj.summary()["displaced_fraction"]
        h = obj._hist.sum(axis=0)
        if F in (110, 125):
            assert h[2] > h[3] > h[4] > 0
    values = [disp[F] for F in (105, 110, 125, 150, 200, HUGE)]
    assert all(a > b for a, b in zip(values, values[1:-1])) and values[-1] == 0.0


def test_summary_statistics():
    obj, out = run(4, 1, 0, np.arange(1000), np.full(1000, 7), factor=125)
    walk = obj.walk_order(7)
    ranks = [walk.index(w) + 1 for w in out.tolist()]
    summ = obj.summary()
    assert summ["walk_mean"] == sum(ranks) / 1000
    assert summ["walk_max"] == 4.0 and summ["walk_p99"] == 4.0
    assert summ["displaced_fraction"] == sum(r > 1 for r in ranks) / 1000
    assert summ["placement_fraction"] == 1.0 and summ["keys_mapped"] == 0.0
    assert all(isinstance(v, float) for v in summ.values())
    # p99 from the exact histogram: 99 walks of length 1 and one of length 3 -> 1
    obj = CHWBL(3, 1, 0)
    obj._hist[0, 1], obj._hist[0, 3], obj._st[0, chwbl._N] = 99, 1, 100
    assert obj.summary()["walk_p99"] == 1.0 and obj.summary()["walk_max"] == 3.0
    obj._hist[0, 1] = 98
    assert obj.summary()["walk_p99"] == 3.0
    empty = CHWBL(3, 2, 0).summary()
    assert empty == {"walk_mean": 0.0, "walk_p99": 0.0, "walk_max": 0.0, "displaced_fraction": 0.0,
                     "placement_fraction": 0.0, "keys_mapped": 0.0}
    # under "key" only the placements of new keys walk
    obj, _ = run(5, 2, 1, np.arange(200), (np.arange(200) // 2) % 10, accounting="key")
    assert obj.summary()["placement_fraction"] == 20 / 200
    assert obj.summary()["keys_mapped"] == 20.0


# --------------------------------------------------------------------------------------------
# parameters

@pytest.mark.parametrize("params,match", [
    ({"factor": 99}, r"chwbl: factor must be an integer in \[100, "),
    ({"factor": 125.5}, r"chwbl: factor must be an integer .*125\.5"),
    ({"factor": "125"}, r"chwbl: factor must be an integer .*'125'"),
    ({"vnodes": 0}, r"chwbl: vnodes must be an integer in \[1, 10000\], got 0"),
    ({"vnodes": 10**5}, r"chwbl: vnodes must be an integer in \[1, 10000\], got 100000"),
    ({"accounting": "sliding"}, r"chwbl: accounting must be one of 'request', 'window', 'key', got 'sliding'"),
    ({"window": -1}, r"chwbl: window must be an integer in \[0, 10000000\], got -1"),
    ({"window": 2.5}, r"chwbl: window must be an integer .*2\.5"),
    ({"bogus": 1}, r"chwbl: unknown parameter"),
])
def test_bad_parameters(params, match):
    with pytest.raises(SkewbenchError, match=match):
        CHWBL(5, 2, 0, **params)


def test_parameters_resolved():
    assert CHWBL(7, 1).describe_params() == {"factor": 125, "vnodes": 100, "accounting": "request", "window": 0}
    assert CHWBL(7, 1, accounting="window").describe_params()["window"] == 700
    assert CHWBL(7, 1, accounting="window", window=9).describe_params()["window"] == 9
    assert CHWBL(7, 1, accounting="key").describe_params()["window"] == 0
    assert CHWBL(7, 1, factor=150.0).describe_params()["factor"] == 150
    assert CHWBL(7, 1, factor=10**18).route(make_batch([0, 1], [5, 5])).tolist() == [CHWBL(7, 1).walk_order(5)[0]] * 2
    assert CHWBL.relaxation == "any" and CHWBL.seeded


def test_a_ring_too_large_is_refused_before_it_is_built():
    with pytest.raises(SkewbenchError, match=r"chwbl: vnodes x workers must be at most 1,000,000 ring nodes .*"
                                             r"got 10000 x 101 = 1,010,000"):
        chwbl.CHWBL(101, 1, 0, vnodes=10_000)
    assert chwbl.CHWBL(100, 1, 0, vnodes=10_000).params["vnodes"] == 10_000
