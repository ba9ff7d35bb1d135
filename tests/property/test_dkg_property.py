"""DKG: the numba kernel equals the plain-Python reference (whole stream, random batch splits,
per-source feeding), and the invariants of practice.spec.md section 7 (items 1, 17-20) hold."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skewbench import registry
from skewbench.errors import SkewbenchError
from skewbench.grouping.strategies import dkg
from skewbench.grouping.base import Batch, hash_choice_py, hash_seeds
from tests.reference import dkg_ref as ref

DKG = registry.get("grouping", "dkg")
N_IDS = 40
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def make_batch(seq, keys) -> Batch:
    seq = np.asarray(seq, dtype=np.int64)
    return Batch(seq, np.asarray(keys, dtype=np.int64), np.zeros(len(seq)), np.ones(len(seq)))


def run(n, s, seed, seq, keys, **params):
    obj = DKG(n, s, seed, **params)
    return obj, obj.route(make_batch(seq, keys))


def skewed_ids(rng: np.random.Generator, m: int, z: float, n_ids: int = N_IDS) -> np.ndarray:
    p = np.arange(1, n_ids + 1, dtype=float) ** -z
    return rng.permutation(n_ids)[rng.choice(n_ids, size=m, p=p / p.sum())].astype(np.int64)


@st.composite
def dkg_params(draw):
    p = {
        "theta": draw(st.sampled_from([None, 0.01, 0.05, 0.1, 0.2, 0.5, 2.0])),
        "mu": draw(st.sampled_from([1, 1.5, 2, 3.7])),
        "learn": draw(st.sampled_from([1, 2, 5, 17, 40, 90])),
        "ef": draw(st.sampled_from([1.0, 2.0, 3.5])),
    }
    return {k: v for k, v in p.items() if v is not None or draw(st.booleans())}


@st.composite
def cases(draw, max_m=300):
    n = draw(st.integers(1, 9))
    s = draw(st.integers(1, 4))
    m = draw(st.integers(0, max_m))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    keys = skewed_ids(rng, m, draw(st.sampled_from([0.0, 0.8, 1.2, 2.0])))
    kind = draw(st.integers(0, 3))
    if kind == 1:  # negative and large int64 values, incl. the extremes
        values = rng.integers(I64_MIN, I64_MAX, size=N_IDS, endpoint=True)
        values[:4] = [I64_MIN, I64_MAX, -1, -dkg.PRIME]
        keys = values[keys]
    elif kind == 2:
        keys = keys * 1_000_000_007 - 2**40
    elif kind == 3:
        keys = -keys
    if draw(st.booleans()):
        seq = np.arange(m, dtype=np.int64) + draw(st.integers(0, 1000))
    else:  # gaps: another consumer owns the missing positions
        seq = np.cumsum(rng.integers(1, 4, size=m)).astype(np.int64)
    return n, s, draw(st.integers(0, 2**31)), seq, keys, draw(dkg_params())


# --------------------------------------------------------------------------------------------
# kernel == reference

@settings(max_examples=400, deadline=None)
@given(cases())
def test_kernel_equals_reference(case):
    n, s, seed, seq, keys, params = case
    obj, out = run(n, s, seed, seq, keys, **params)
    r = ref.Reference(n, s, seed, **params)
    expected = r.route(seq.tolist(), keys.tolist())
    assert out.dtype == np.int64
    assert out.tolist() == expected
    assert obj.messages().tolist() == [src.m for src in r.src]
    for j, src in enumerate(r.src):
        assert obj.sketch(j) == {k: (c, src.ss.err[k]) for k, c in src.ss.count.items()}
        assert obj.bucket_counts(j).tolist() == src.bcount
        if src.hh is None:
            assert obj.heavy_hitters(j) == {} and obj.bucket_map(j) is None and obj.learned_weights(j) is None
        else:
            assert obj.heavy_hitters(j) == src.hh
            assert obj.bucket_map(j).tolist() == src.bmap
            assert obj.learned_weights(j).tolist() == src.weights
    summ, want = obj.summary(), r.summary()
    assert set(summ) == set(want)
    for k in want:
        assert summ[k] == pytest.approx(want[k]), k
    assert obj.window_stats() == {"learned_sources": want["learned_sources"]}


@settings(max_examples=80, deadline=None)
@given(cases(), st.data())
def test_batch_splits_keep_state(case, data):
    n, s, seed, seq, keys, params = case
    whole_obj, whole = run(n, s, seed, seq, keys, **params)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(seq)), max_size=6)))
    obj = DKG(n, s, seed, **params)
    parts = [obj.route(make_batch(seq[a:b], keys[a:b])) for a, b in zip([0] + cuts, cuts + [len(seq)])]
    assert np.concatenate(parts).tolist() == whole.tolist()
    assert obj.summary() == whole_obj.summary()
    assert obj.window_stats() == whole_obj.window_stats()


@settings(max_examples=80, deadline=None)
@given(cases(), st.randoms(use_true_random=False))
def test_per_source_feeding(case, rnd):
    n, s, seed, seq, keys, params = case
    whole_obj, whole = run(n, s, seed, seq, keys, **params)
    order = list(range(s))
    rnd.shuffle(order)
    obj = DKG(n, s, seed, **params)  # one object, sources fed one after the other
    out = np.full(len(seq), -1, dtype=np.int64)
    for j in order:
        mine = seq % s == j
        out[mine] = obj.route(make_batch(seq[mine], keys[mine]))
        # a separate object per source routes that source alike
        assert run(n, s, seed, seq[mine], keys[mine], **params)[1].tolist() == whole[mine].tolist()
    assert out.tolist() == whole.tolist()
    assert obj.summary() == whole_obj.summary()


def test_a_perturbed_reference_is_detected(monkeypatch):
    """The comparison has teeth: breaking the SpaceSaving victim tie (A12) or DB4's tie order in
    the reference makes it disagree with the kernel on a fixed stream."""
    rng = np.random.default_rng(3)
    keys = skewed_ids(rng, 600, 0.6)
    seq = np.arange(600)
    params = {"theta": 0.1, "ef": 1.0, "learn": 120, "mu": 1}  # 10 counters for 40 keys

    def agrees():
        obj, out = run(4, 2, 9, seq, keys, **params)
        r = ref.Reference(4, 2, 9, **params)
        same = out.tolist() == r.route(seq.tolist(), keys.tolist())
        return same and all(obj.sketch(j) == {k: (c, src.ss.err[k]) for k, c in src.ss.count.items()}
                            for j, src in enumerate(r.src))

    assert agrees()

    def highest_victim(self, x):
        if x in self.count:
            self.count[x] += 1
        elif len(self.count) < self.capacity:
            self.count[x], self.err[x] = 1, 0
        else:
            y = min(self.count, key=lambda e: (self.count[e], -e))
            c = self.count.pop(y)
            del self.err[y]
            self.count[x], self.err[x] = c + 1, c

    with monkeypatch.context() as mp:
        mp.setattr(ref.SpaceSaving, "offer", highest_victim)
        assert not agrees()

    # DB4 ties: keys before buckets (on a stream where a heavy key ties with a bucket)
    orig = ref.Reference.build

    def keys_first(self, src):
        orig(self, src)
        hh = src.hh_weight
        items = [(wgt, 0, x) for x, wgt in hh.items()] + [(src.bcount[b], 1, -b) for b in range(self.nb)]
        items.sort(key=lambda it: (-it[0], it[1], it[2]))
        assign, loads = ref.lpt_in_order([it[0] for it in items], self.n)
        src.hh, src.bmap = {}, [None] * self.nb
        for (wgt, kind, ident), w in zip(items, assign):
            if kind == 0:
                src.hh[ident] = w
            else:
                src.bmap[-ident] = w

    tie_keys = np.array([7] * 6 + [1, 2, 3, 4, 5, 6] * 2 + [1, 2, 3, 4, 5, 6, 7] * 5, dtype=np.int64)
    tie_seq = np.arange(len(tie_keys))
    tp = {"theta": 0.25, "learn": 18, "mu": 1}

    def agrees_tie():
        out = run(2, 1, 0, tie_seq, tie_keys, **tp)[1]
        return out.tolist() == ref.Reference(2, 1, 0, **tp).route(tie_seq.tolist(), tie_keys.tolist())

    r = ref.Reference(2, 1, 0, **tp)
    r.route(tie_seq[:18].tolist(), tie_keys[:18].tolist())
    src = r.src[0]
    assert src.hh_weight == {7: 6} and sorted(src.bcount) == [6, 6]  # a real tie of 6, 6, 6
    assert agrees_tie()
    with monkeypatch.context() as mp:
        mp.setattr(ref.Reference, "build", keys_first)
        assert not agrees_tie()


# --------------------------------------------------------------------------------------------
# spec 7, item 1: range, conservation, determinism, seeds

@settings(max_examples=60, deadline=None)
@given(cases())
def test_range_and_determinism(case):
    n, s, seed, seq, keys, params = case
    _, out = run(n, s, seed, seq, keys, **params)
    c = np.bincount(out, minlength=n)
    assert len(c) == n and c.sum() == len(seq)
    assert run(n, s, seed, seq, keys, **params)[1].tolist() == out.tolist()


def test_seed_sensitivity_and_bucket_draw():
    rng = np.random.default_rng(1)
    keys = skewed_ids(rng, 6000, 1.0, n_ids=500)
    seq = np.arange(len(keys))
    a = run(10, 3, 5, seq, keys, learn=300)[1]
    assert a.tolist() == run(10, 3, 5, seq, keys, learn=300)[1].tolist()
    assert a.tolist() != run(10, 3, 6, seq, keys, learn=300)[1].tolist()
    draws = {dkg.bucket_params(seed) for seed in range(200)}
    assert len(draws) == 200
    assert all(1 <= x <= dkg.PRIME - 1 for pair in draws for x in pair)
    assert dkg.bucket_params(4) == ref.ab(4)


# --------------------------------------------------------------------------------------------
# spec 7, item 17: learning goes to F_1, then routing is a function of the key per source,
# and every HH key goes to its LPT worker

@settings(max_examples=80, deadline=None)
@given(cases())
def test_routing_is_a_function_of_the_key(case):
    n, s, seed, seq, keys, params = case
    obj, out = run(n, s, seed, seq, keys, **params)
    L = obj.params["learn"]
    f1 = int(hash_seeds(seed, 1)[0])
    a, b = dkg.bucket_params(seed)
    nb = math.ceil(obj.params["mu"] * n)
    seen = [0] * s
    mapping = [dict() for _ in range(s)]
    for t, k, w in zip(seq.tolist(), keys.tolist(), out.tolist()):
        j = t % s
        if seen[j] < L:
            assert w == hash_choice_py(k, f1, n)  # A10: where kg sends it
        else:
            assert mapping[j].setdefault(k, w) == w
            hh = obj.heavy_hitters(j)
            want = hh[k] if k in hh else int(obj.bucket_map(j)[ref.bucket(k, a, b, nb)])
            assert w == want
        seen[j] += 1
    for j in range(s):
        if seen[j] < L:
            continue
        # every HH key to its LPT worker: LPT (dkg.lpt) over the items of DB3 in DB4's order,
        # from the source's own sketch and bucket counts
        hh = obj.heavy_hitters(j)
        weights = _hh_weights(obj, j)
        counts = obj.bucket_counts(j)
        items = sorted([(int(counts[bk]), 0, -bk) for bk in range(nb)] + [(w, 1, k) for k, w in weights.items()],
                       key=lambda it: (-it[0], it[1], it[2]))
        assign, loads = dkg.lpt([it[0] for it in items], n)
        assert loads.tolist() == obj.learned_weights(j).tolist()
        for (wgt, kind, ident), w in zip(items, assign.tolist()):
            if kind == 1:
                assert hh[ident] == w
                assert mapping[j].get(ident, w) == w
            else:
                assert obj.bucket_map(j)[-ident] == w


def test_learning_longer_than_the_stream_is_kg():
    rng = np.random.default_rng(2)
    keys = skewed_ids(rng, 3000, 1.1) - 20
    seq = np.arange(len(keys))
    kg = registry.get("grouping", "kg")(7, 3, 4).route(make_batch(seq, keys))
    obj, out = run(7, 3, 4, seq, keys, learn=1001)
    assert out.tolist() == kg.tolist()
    assert obj.summary()["learned_sources"] == 0.0 and obj.summary()["learning_fraction"] == 1.0
    obj, out = run(7, 3, 4, seq, keys, learn=999)  # 3000 = 3 x 1000: every source learned
    assert obj.summary()["learned_sources"] == 3.0 and obj.summary()["learning_fraction"] == pytest.approx(0.999)


# --------------------------------------------------------------------------------------------
# spec 7, item 18: theta > 1 gives only buckets; the list scheduling bound; LPT vs brute force

def draw_theta(seed: int) -> float:
    """A theta > 1 (no key can be heavy)."""
    return [1.0000001, 1.5, 7.0, 1e300][seed % 4]


@settings(max_examples=60, deadline=None)
@given(cases())
def test_no_heavy_hitters_above_one(case):
    n, s, seed, seq, keys, params = case
    params = {**params, "theta": draw_theta(seed)}
    obj, out = run(n, s, seed, seq, keys, **params)
    nb = math.ceil(obj.params["mu"] * n)
    for j in range(s):
        assert obj.heavy_hitters(j) == {}
        if obj.learned()[j]:
            # every item a bucket: the learned weights are the bucket counts' LPT schedule
            counts = obj.bucket_counts(j)
            assert len(counts) == nb and counts.sum() == obj.params["learn"]
            _, loads = dkg.lpt(counts[::-1], n)  # equal weights: decreasing bucket index first
            assert obj.learned_weights(j).tolist() == loads.tolist()
    if any(obj.learned()):
        assert obj.summary()["hh_size"] == 0.0


@settings(max_examples=80, deadline=None)
@given(cases())
def test_learned_weights_list_scheduling_bound(case):
    n, s, seed, seq, keys, params = case
    obj, _ = run(n, s, seed, seq, keys, **params)
    L = obj.params["learn"]
    for j in range(s):
        lw = obj.learned_weights(j)
        if lw is None:
            continue
        counts = obj.bucket_counts(j)
        items = list(counts) + list(_hh_weights(obj, j).values())
        assert lw.sum() == L == sum(items)
        assert lw.max() <= L / n + max(items) + 1e-9
        assert obj.summary()["lpt_makespan_ratio"] >= 1.0 - 1e-12


def _hh_weights(obj, j) -> dict[int, int]:
    sk = obj.sketch(j)
    return {k: sk[k][0] - sk[k][1] for k in obj.heavy_hitters(j)}


@settings(max_examples=120, deadline=None)
@given(st.integers(1, 3), st.lists(st.integers(0, 40), max_size=8))
def test_lpt_within_graham_of_brute_force(n, weights):
    assign, loads = dkg.lpt(weights, n)
    assert loads.sum() == sum(weights)
    assert [sum(w for w, a in zip(weights, assign) if a == x) for x in range(n)] == loads.tolist()
    best = sum(weights)
    for choice in itertools.product(range(n), repeat=max(0, len(weights) - 1)):
        lw = [0] * n
        for w, x in zip(weights, (0,) + choice):  # the first item on worker 0 (symmetry)
            lw[x] += w
        best = min(best, max(lw))
    if weights:
        assert loads.max() <= (4 / 3 - 1 / (3 * n)) * best + 1e-9
        assert loads.max() <= sum(weights) / n + max(weights)
    # equal to the reference's DB5 on the stably sorted items
    order = sorted(range(len(weights)), key=lambda i: -weights[i])
    r_assign, r_loads = ref.lpt_in_order([weights[i] for i in order], n)
    assert r_loads == loads.tolist()
    assert [assign[i] for i in order] == r_assign


def test_lpt_is_not_the_published_worker_zero_bug():
    """Code fact 1: the published LPT never updates a load, so every item lands on worker 0."""
    assign, loads = dkg.lpt([5, 4, 3, 3, 2, 2], 2)
    assert assign.tolist() == [0, 1, 1, 0, 1, 0] and loads.tolist() == [10, 9]
    assign, loads = dkg.lpt([1] * 7, 3)
    assert assign.tolist() == [0, 1, 2, 0, 1, 2, 0] and loads.tolist() == [3, 2, 2]
    # the strategy itself: uniform keys, 5 workers, all of them used after learning
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 1000, size=20_000)
    obj, out = run(5, 2, 0, np.arange(len(keys)), keys, learn=2000)
    for j in range(2):
        lw = obj.learned_weights(j)
        assert lw.min() > 0 and lw.max() <= 2000 / 5 + obj.bucket_counts(j).max()
        assert len(set(obj.bucket_map(j).tolist())) == 5
    assert np.bincount(out[4000:], minlength=5).min() > 0.1 * len(out[4000:]) / 5


# --------------------------------------------------------------------------------------------
# spec 7, item 19: SpaceSaving capacity and guarantees

@settings(max_examples=80, deadline=None)
@given(cases(max_m=400))
def test_space_saving_guarantees(case):
    n, s, seed, seq, keys, params = case
    obj, _ = run(n, s, seed, seq, keys, **params)
    theta, ef, L = obj.params["theta"], obj.params["ef"], obj.params["learn"]
    cap = math.ceil(ef / theta)
    for j in range(s):
        mine = keys[seq % s == j][:L].tolist()
        true = Counter(mine)
        sk = obj.sketch(j)
        assert len(sk) <= cap
        assert sum(c for c, _ in sk.values()) == len(mine)
        for k, (c, e) in sk.items():
            assert 0 <= e and c - e <= true[k] <= c
        if len(mine) == L:
            for k, f in true.items():
                if f > L * theta / ef:
                    assert k in sk
            for k, w in _hh_weights(obj, j).items():  # reported weights are lower bounds
                assert math.ceil(theta * L) <= w <= true[k]
        if cap >= len(true):
            assert sk == {k: (f, 0) for k, f in true.items()}


# --------------------------------------------------------------------------------------------
# spec 7, item 20: negative keys never give an out-of-range bucket

@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(I64_MIN, I64_MAX), min_size=1, max_size=50), st.integers(1, 1000),
       st.integers(0, 2**31))
def test_buckets_in_range(keys, nb, seed):
    a, b = dkg.bucket_params(seed)
    keys = keys + [I64_MIN, I64_MAX, -1, 0, -dkg.PRIME, dkg.PRIME - 1]
    got = dkg.bucket_of(keys, a, b, nb)
    assert got.tolist() == [ref.bucket(k, a, b, nb) for k in keys]
    assert got.min() >= 0 and got.max() < nb
    # for k >= 0 the floorMod equals the published code's truncated remainders (code fact 2);
    # for negative keys the published index can be negative
    assert all(ref.bucket(k, a, b, nb) == java_bucket(k, a, b, nb) for k in keys if k >= 0)
    if nb > 1:
        assert java_bucket(-1, 1, 0, nb) == -1


def tmod(x: int, y: int) -> int:
    """Java's ``%`` (truncated remainder, the sign of ``x``)."""
    r = abs(x) % y
    return r if x >= 0 else -r


def java_bucket(k, a, b, nb):
    return tmod(tmod(a * tmod(k, dkg.PRIME) + b, dkg.PRIME), nb)


def test_negative_keys_route_in_range():
    values = np.array([I64_MIN, I64_MAX, -1, -dkg.PRIME, -dkg.PRIME - 1, -123456789012345], dtype=np.int64)
    keys = values[np.random.default_rng(4).integers(0, len(values), size=3000)]
    obj, out = run(4, 2, 1, np.arange(len(keys)), keys, learn=100, mu=3)
    assert out.min() >= 0 and out.max() < 4
    for j in range(2):
        assert obj.bucket_counts(j).min() >= 0


# --------------------------------------------------------------------------------------------
# P8 (qualitative): after learning, DKG balances a skewed stream better than key grouping

def test_better_than_key_grouping_on_zipf():
    rng = np.random.default_rng(11)
    p = np.arange(1, 10_001, dtype=float) ** -1.0
    keys = rng.permutation(10_000)[rng.choice(10_000, size=300_000, p=p / p.sum())].astype(np.int64)
    seq = np.arange(len(keys))
    n, s, L = 5, 5, 10_000
    obj, out = run(n, s, 0, seq, keys, learn=L)
    kg = registry.get("grouping", "kg")(n, s, 0).route(make_batch(seq, keys))
    tail = slice(s * L, None)

    def imb(w):
        c = np.bincount(w, minlength=n)
        return c.max() / c.sum() - 1 / n

    assert obj.summary()["learning_fraction"] == pytest.approx(s * L / len(keys))
    assert imb(out[tail]) < 0.5 * imb(kg[tail])
    assert imb(out[tail]) < 0.035
    assert 2 <= obj.summary()["hh_size"] <= 4  # p_k >= 1/25: the two hottest keys, give or take
    ratio = obj.summary()["lpt_makespan_ratio"]
    assert 1.0 <= ratio < 1.25
    # finer buckets: a better learned schedule
    assert run(n, s, 0, seq[:s * L], keys[:s * L], learn=L, mu=10)[0].summary()["lpt_makespan_ratio"] < ratio


# --------------------------------------------------------------------------------------------
# parameters

@pytest.mark.parametrize("params,match", [
    ({"theta": 0}, r"dkg: theta must be a number in \(0, inf\], got 0"),
    ({"theta": -0.1}, r"dkg: theta must be a number in \(0, inf\]"),
    ({"mu": 0.5}, r"dkg: mu must be a number in \[1, inf\], got 0.5"),
    ({"learn": 0}, r"dkg: learn must be an integer in \[1, "),
    ({"learn": 2.5}, r"dkg: learn must be an integer in \[1, .*got 2.5"),
    ({"ef": 0.9}, r"dkg: ef must be a number in \[1, inf\], got 0.9"),
    ({"ef": float("nan")}, r"dkg: ef must be a number"),
    ({"theta": 1e-9}, r"dkg: ef / theta must be at most 4194304 .*theta=1e-09"),
    ({"mu": 1e8}, r"dkg: mu \* workers must be at most 4194304 .*mu=100000000.0"),
    ({"shared": True}, r"dkg: unknown parameter"),
])
def test_bad_parameters(params, match):
    with pytest.raises(SkewbenchError, match=match):
        DKG(5, 2, 0, **params)


def test_resolved_parameters_and_state_access():
    obj = DKG(4, 2, 0)
    assert obj.describe_params() == {"theta": 0.05, "mu": 2.0, "learn": 100000, "ef": 2.0}
    assert obj.summary() == {"learned_sources": 0.0, "hh_size": 0.0, "buckets": 8.0,
                             "lpt_makespan_ratio": 0.0, "learning_fraction": 0.0}
    with pytest.raises(SkewbenchError, match=r"dkg: source must be an integer in \[0, 2\), got 2"):
        obj.sketch(2)
    assert DKG.relaxation == "whole" and DKG.seeded
