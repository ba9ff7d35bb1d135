"""D-Choices family: the numba kernels equal the plain-Python reference (whole stream, random batch
splits, per-source feeding), and the invariants of dchoices.spec.md section 7 hold."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skewbench.grouping.strategies import dchoices
from skewbench.grouping.base import Batch, hash_choice_py, hash_seeds
from skewbench import registry as _registry

REGISTRY = {n: _registry.get("grouping", n) for n in _registry.names("grouping")}
from tests.reference import dchoices_ref as ref

ALL = ref.ALL_STRATEGIES
HEAD = ref.HEAD_STRATEGIES
N_IDS = 50


def make_batch(seq, keys) -> Batch:
    seq = np.asarray(seq, dtype=np.int64)
    return Batch(seq, np.asarray(keys, dtype=np.int64), np.zeros(len(seq)), np.ones(len(seq)))


def skewed_keys(rng: np.random.Generator, m: int, z: float, n_ids: int = N_IDS) -> np.ndarray:
    """``m`` keys over ids ``1..n_ids`` with Zipf(z) probabilities on a random rank order."""
    p = np.arange(1, n_ids + 1, dtype=float) ** -z
    ids = rng.permutation(n_ids) + 1
    return ids[rng.choice(n_ids, size=m, p=p / p.sum())].astype(np.int64)


def zipf_p(n_keys: int, z: float) -> np.ndarray:
    """Exact finite-Zipf probabilities ``p_k = k^-z / sum_x x^-z`` (spec 4.1)."""
    w = np.arange(1, n_keys + 1, dtype=float) ** -z
    return w / w.sum()


def run(name, n, s, seed, seq, keys, **params):
    obj = REGISTRY[name](n, s, seed, **params)
    return obj, obj.route(make_batch(seq, keys))


def imbalance(workers: np.ndarray, n: int) -> float:
    c = np.bincount(workers, minlength=n)
    return c.max() / c.sum() - 1.0 / n


@st.composite
def head_params(draw, name):
    p = {
        "theta": draw(st.sampled_from([None, 0.01, 0.05, 0.2, 0.5, 2.0])),
        "capacity": draw(st.sampled_from([None, 1, 2, 3, 7, 60])),
        "refresh": draw(st.sampled_from([1, 2, 7, 1000])),
        "warmup": draw(st.sampled_from([0, 0, 3, 20])),
        "mode": draw(st.sampled_from(["spec", "authors"])),
        "eps": draw(st.sampled_from([1e-4, 1e-4, 0.05])),
    }
    if name == "fixed-d":
        p["d"] = draw(st.integers(1, 14))
    return {k: v for k, v in p.items() if v is not None or draw(st.booleans())}


@st.composite
def cases(draw, names=ALL):
    name = draw(st.sampled_from(names))
    n = draw(st.integers(1, 12))
    s = draw(st.integers(1, 5))
    m = draw(st.integers(0, 300))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    keys = skewed_keys(rng, m, draw(st.sampled_from([0.0, 0.7, 1.2, 2.0, 3.0])))
    if draw(st.integers(0, 3)) == 0:  # ids are int64: large and negative ones hash the same way
        keys = keys * 1_000_000_007 - 2**40
    if draw(st.booleans()):
        seq = np.arange(m, dtype=np.int64) + draw(st.integers(0, 1000))
    else:  # gaps: another consumer owns the missing positions
        seq = np.cumsum(rng.integers(1, 4, size=m)).astype(np.int64)
    params = draw(head_params(name)) if name in HEAD else {}
    return name, n, s, draw(st.integers(0, 2**31)), seq, keys, params


# --------------------------------------------------------------------------------------------
# kernel == reference

@settings(max_examples=250, deadline=None)
@given(cases())
def test_kernel_equals_reference(case):
    name, n, s, seed, seq, keys, params = case
    obj, out = run(name, n, s, seed, seq, keys, **params)
    r = ref.Reference(name, n, s, seed, **params)
    expected = r.route(seq.tolist(), keys.tolist())
    assert out.dtype == np.int64
    assert out.tolist() == expected
    assert obj.local_loads().tolist() == [src.l for src in r.src]
    if name in HEAD:
        assert obj.messages().tolist() == [src.m for src in r.src]
        for j, src in enumerate(r.src):
            assert obj.sketch(j) == {k: (c, src.ss.err[k]) for k, c in src.ss.count.items()}
        summ = obj.summary()
        # statistics average over the sources that saw messages (all sources if none did)
        active = [j for j, src in enumerate(r.src) if src.m > 0] or list(range(s))
        assert summ["head_fraction"] == pytest.approx(r.head_msgs / len(seq) if len(seq) else 0.0)
        assert summ["head_size_final"] == pytest.approx(np.mean([r.head_sizes()[j] for j in active]))
        if name == "dc":
            assert summ["d_final"] == pytest.approx(np.mean([min(r.src[j].d, n) for j in active]))
            fb = r.fallback_msgs / r.head_msgs if r.head_msgs else 0.0
            assert summ["wc_fallback_fraction"] == pytest.approx(fb)


@settings(max_examples=120, deadline=None)
@given(cases(), st.data())
def test_batch_splits_keep_state(case, data):
    name, n, s, seed, seq, keys, params = case
    _, whole = run(name, n, s, seed, seq, keys, **params)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(seq)), max_size=6)))
    obj = REGISTRY[name](n, s, seed, **params)
    parts = [obj.route(make_batch(seq[a:b], keys[a:b])) for a, b in zip([0] + cuts, cuts + [len(seq)])]
    assert np.concatenate(parts).tolist() == whole.tolist()


@settings(max_examples=120, deadline=None)
@given(cases())
def test_per_source_feeding(case):
    name, n, s, seed, seq, keys, params = case
    _, whole = run(name, n, s, seed, seq, keys, **params)
    out = np.full(len(seq), -1, dtype=np.int64)
    for j in range(s):
        mine = seq % s == j
        out[mine] = run(name, n, s, seed, seq[mine], keys[mine], **params)[1]
    assert out.tolist() == whole.tolist()


@settings(max_examples=60, deadline=None)
@given(cases(names=("dc", "fixed-d")), st.sampled_from([5, 12, 40]))
def test_candidate_memo_changes_nothing(case, n):
    """Greedy-d with d > 4 reads candidates from a memo; with 2 lines it thrashes, same result."""
    name, _, s, seed, seq, keys, params = case
    if name == "fixed-d":
        params["d"] = min(params["d"] * 3, n + 1)
    _, whole = run(name, n, s, seed, seq, keys, **params)
    obj = REGISTRY[name](n, s, seed, **params)
    obj._alloc_memo(1)
    half = len(seq) // 2
    out = [obj.route(make_batch(seq[:half], keys[:half])), obj.route(make_batch(seq[half:], keys[half:]))]
    assert np.concatenate(out).tolist() == whole.tolist()
    if n == 40 and len(seq) <= 120:
        assert whole.tolist() == ref.Reference(name, n, s, seed, **params).route(seq.tolist(), keys.tolist())


def test_a_perturbed_reference_is_detected(monkeypatch):
    """The comparison has teeth: breaking MinLoad ties or SS5's eviction order in the reference
    makes it disagree with the kernel on a fixed stream."""
    rng = np.random.default_rng(7)
    keys = skewed_keys(rng, 400, 1.2)
    seq = np.arange(400)

    def agrees(name, **params):  # what test_kernel_equals_reference compares
        obj, out = run(name, 6, 2, 3, seq, keys, **params)
        r = ref.Reference(name, 6, 2, 3, **params)
        same = out.tolist() == r.route(seq.tolist(), keys.tolist())
        if name in HEAD:
            same = same and all(obj.sketch(j) == {k: (c, src.ss.err[k]) for k, c in src.ss.count.items()}
                                for j, src in enumerate(r.src))
        return same

    assert agrees("pkg") and agrees("wc", capacity=3, theta=0.05)

    def last_min(candidates, load):  # ties to the last candidate instead of the first
        best = candidates[0]
        for c in candidates[1:]:
            if load[c] <= load[best]:
                best = c
        return best

    with monkeypatch.context() as mp:
        mp.setattr(ref, "min_load", last_min)
        assert not agrees("pkg")

    def newest_victim(self, x, now):  # evict the most recently updated minimum
        if x not in self.count and len(self.count) >= self.capacity:
            y = min(self.count, key=lambda e: (self.count[e], -self.last[e]))
            c = self.count.pop(y)
            del self.err[y], self.last[y]
            self.count[x], self.err[x], self.last[x] = c + 1, c, now
        elif x in self.count:
            self.count[x] += 1
            self.last[x] = now
        else:
            self.count[x], self.err[x], self.last[x] = 1, 0, now

    with monkeypatch.context() as mp:
        mp.setattr(ref.SpaceSaving, "offer", newest_victim)
        assert not agrees("wc", capacity=3, theta=0.05)


# --------------------------------------------------------------------------------------------
# spec 7, routing invariants 1-7

@settings(max_examples=80, deadline=None)
@given(cases())
def test_conservation(case):  # 1
    name, n, s, seed, seq, keys, params = case
    obj, out = run(name, n, s, seed, seq, keys, **params)
    c = np.bincount(out, minlength=n)
    assert len(c) == n and c.sum() == len(seq)
    assert obj.local_loads().sum(axis=0).tolist() == c.tolist()
    if len(seq):
        assert 0.0 <= imbalance(out, n) <= 1.0 - 1.0 / n + 1e-12


def test_determinism_and_seed_sensitivity():  # 2
    rng = np.random.default_rng(1)
    keys = skewed_keys(rng, 3000, 1.0, n_ids=500)
    seq = np.arange(len(keys))
    for name in ALL:
        a = run(name, 10, 3, 5, seq, keys)[1]
        b = run(name, 10, 3, 5, seq, keys)[1]
        c = run(name, 10, 3, 6, seq, keys)[1]
        assert a.tolist() == b.tolist()
        if REGISTRY[name].seeded:
            assert a.tolist() != c.tolist(), name
        else:
            assert a.tolist() == c.tolist()


@settings(max_examples=60, deadline=None)
@given(cases(names=("kg",)))
def test_kg_is_f1(case):  # 3
    _, n, s, seed, seq, keys, _ = case
    out = run("kg", n, s, seed, seq, keys)[1]
    f1 = int(hash_seeds(seed, 1)[0])
    assert out.tolist() == [hash_choice_py(int(k), f1, n) for k in keys]
    if len(keys):
        p1 = np.unique(keys, return_counts=True)[1].max() / len(keys)
        assert imbalance(out, n) >= p1 - 1.0 / n - 1e-12


@settings(max_examples=60, deadline=None)
@given(cases(names=("pkg",)))
def test_pkg_two_choices_and_true_load(case):  # 4
    _, n, s, seed, seq, keys, _ = case
    out = run("pkg", n, s, seed, seq, keys)[1]
    f1, f2 = (int(x) for x in hash_seeds(seed, 2))
    for k, w in zip(keys.tolist(), out.tolist()):
        assert w in (hash_choice_py(k, f1, n), hash_choice_py(k, f2, n))
    # s = 1: every decision with two distinct candidates picks the smaller true load
    out = run("pkg", n, 1, seed, seq, keys)[1]
    load = [0] * n
    for k, w in zip(keys.tolist(), out.tolist()):
        a, b = hash_choice_py(k, f1, n), hash_choice_py(k, f2, n)
        if a != b:
            assert load[w] == min(load[a], load[b])
            assert w == (b if load[b] < load[a] else a)
        load[w] += 1


@settings(max_examples=60, deadline=None)
@given(cases(names=("sg",)))
def test_sg_spread(case):  # 5
    _, n, s, seed, seq, keys, _ = case
    out = run("sg", n, s, seed, seq, keys)[1]
    c = np.bincount(out, minlength=n)
    assert c.max() - c.min() <= s
    if len(seq):
        assert imbalance(out, n) <= s / len(seq) + 1e-12


@settings(max_examples=120, deadline=None)
@given(cases())
def test_replica_bounds_and_nesting(case):  # 6, 7
    name, n, s, seed, seq, keys, params = case
    obj, out = run(name, n, s, seed, seq, keys, **params)
    r = ref.Reference(name, n, s, seed, **params)
    r.route(seq.tolist(), keys.tolist())
    workers, ever_head = defaultdict(set), set()
    for k, w, h in zip(keys.tolist(), out.tolist(), r.flags):
        workers[k].add(w)
        if h:
            ever_head.add(k)
    seeds = [int(x) for x in hash_seeds(seed, max(2, n))]
    F = lambda i, k: hash_choice_py(k, seeds[i - 1], n)  # noqa: E731
    for k, ws in workers.items():
        assert len(ws) <= n
        if name == "kg":
            assert len(ws) == 1
        elif name in ("pkg",) or (name in HEAD and k not in ever_head):
            assert ws <= {F(1, k), F(2, k)}  # tail: the first two (head) choices
    if name in ("dc", "fixed-d"):
        dmax = int(obj.summary()["d_max"])
        for k in ever_head:
            assert len(workers[k]) <= max(2, dmax)
            if dmax < n:  # nesting: everything a head key used lies in F_1..F_dmax
                assert workers[k] <= {F(i, k) for i in range(1, max(2, dmax) + 1)}
    if name == "fixed-d" and params["d"] < n:
        d = max(2, params["d"])
        for k, w in zip(keys.tolist(), out.tolist()):
            assert w in {F(i, k) for i in range(1, d + 1)}


def test_candidate_sets_are_nested_prefixes():  # 7
    n = 17
    seeds = [int(x) for x in hash_seeds(11, n)]
    for k in range(1, 200):
        cands = [hash_choice_py(k, s_i, n) for s_i in seeds]
        for d in range(2, n):
            assert set(cands[:d]) <= set(cands[:d + 1])
    # the kernel's all-head fixed-d with d = 3 only ever uses F_1..F_3
    rng = np.random.default_rng(3)
    keys = skewed_keys(rng, 500, 1.0)
    out = run("fixed-d", n, 2, 11, np.arange(500), keys, d=3, theta=1e-9, capacity=N_IDS)[1]
    for k, w in zip(keys.tolist(), out.tolist()):
        assert w in {hash_choice_py(k, seeds[i], n) for i in range(3)}


# --------------------------------------------------------------------------------------------
# spec 7, limiting cases 8-11

@settings(max_examples=80, deadline=None)
@given(cases(names=HEAD))
def test_empty_head_is_pkg(case):  # 8
    name, n, s, seed, seq, keys, params = case
    # no key can pass count >= theta m_j with theta > 1; the authors' (count + err) / m_j stays < 2
    params = {**params, "theta": 2.0 if params.get("mode") == "authors" else 1.5}
    pkg = run("pkg", n, s, seed, seq, keys)[1]
    obj, out = run(name, n, s, seed, seq, keys, **params)
    assert out.tolist() == pkg.tolist()
    assert obj.summary()["head_fraction"] == 0.0


def test_near_uniform_keys_with_warmup_is_pkg():  # 8, with the optional warm-up of A8
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 10_000, size=20_000)
    seq = np.arange(len(keys))
    pkg = run("pkg", 5, 2, 1, seq, keys)[1]
    for name in HEAD:
        assert run(name, 5, 2, 1, seq, keys, warmup=200)[1].tolist() == pkg.tolist(), name


@settings(max_examples=80, deadline=None)
@given(cases(names=("fixed-d",)))
def test_fixed_d_limits(case):  # 9
    _, n, s, seed, seq, keys, params = case
    params.pop("d")
    pkg = run("pkg", n, s, seed, seq, keys)[1]
    wc = run("wc", n, s, seed, seq, keys, **params)[1]
    # d = 2 is PKG, except that with n <= 2 it is d >= n: all workers, i.e. W-C
    want = pkg if n > 2 else wc
    assert run("fixed-d", n, s, seed, seq, keys, d=2, **params)[1].tolist() == want.tolist()
    assert run("fixed-d", n, s, seed, seq, keys, d=n, **params)[1].tolist() == wc.tolist()
    assert run("fixed-d", n, s, seed, seq, keys, d=n + 3, **params)[1].tolist() == wc.tolist()
    # every message head (tiny theta, exact sketch): d = 1 is key grouping
    kg = run("kg", n, s, seed, seq, keys)[1]
    all_head = {"theta": 1e-12, "capacity": N_IDS, "warmup": 0}
    assert run("fixed-d", n, s, seed, seq, keys, d=1, **all_head)[1].tolist() == kg.tolist()


@settings(max_examples=60, deadline=None)
@given(cases(names=("dc",)))
def test_dc_equals_wc_when_d_is_n(case):  # 9: FindOptimalChoices returns n for every n <= 2
    _, _, s, seed, seq, keys, params = case
    for n in (1, 2):
        wc = run("wc", n, s, seed, seq, keys, **params)[1]
        assert run("dc", n, s, seed, seq, keys, **params)[1].tolist() == wc.tolist()


@settings(max_examples=80, deadline=None)
@given(cases(names=("wc",)))
def test_every_key_in_head(case):  # 10
    _, n, s, seed, seq, keys, _ = case
    all_head = {"theta": 1e-12, "capacity": N_IDS}
    obj, wc = run("wc", n, s, seed, seq, keys, **all_head)
    c = np.bincount(wc, minlength=n)
    assert c.max() - c.min() <= s
    if len(seq):
        assert obj.summary()["head_fraction"] == 1.0
    sg = run("sg", n, s, seed, seq, keys)[1]
    assert run("rr", n, s, seed, seq, keys, **all_head)[1].tolist() == sg.tolist()


@settings(max_examples=40, deadline=None)
@given(cases())
def test_single_source_local_is_true_load(case):  # 11
    name, n, _, seed, seq, keys, params = case
    seq, keys = seq[:60], keys[:60]
    obj = REGISTRY[name](n, 1, seed, **params)
    true = np.zeros(n, dtype=np.int64)
    for i in range(len(seq)):
        w = obj.route(make_batch(seq[i:i + 1], keys[i:i + 1]))[0]
        true[w] += 1
        assert obj.local_loads()[0].tolist() == true.tolist()


# --------------------------------------------------------------------------------------------
# spec 7, 12-13: statistical checks on larger Zipf streams (fixed seeds)

def zipf_stream(n_keys, z, m, seed):
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(zipf_p(n_keys, z))
    cdf[-1] = 1.0
    ranks = np.searchsorted(cdf, rng.random(m), side="right")
    return rng.permutation(n_keys)[ranks].astype(np.int64)


def test_near_uniform_keys():  # 12
    keys = zipf_stream(10_000, 0.1, 1_000_000, 1)
    seq = np.arange(len(keys))
    assert imbalance(run("pkg", 50, 5, 0, seq, keys)[1], 50) < 1e-4
    p = zipf_p(10_000, 0.1)
    for n in (5, 10, 20, 50, 100):
        assert len(dchoices.head_probabilities(p, 1 / (5 * n))) == 0


def test_large_skew_ordering():  # 13
    m, n, s = 1_000_000, 50, 5
    p1 = zipf_p(10_000, 2.0)[0]
    bound = p1 / 2 - 1 / n
    means = defaultdict(list)
    for rep in range(3):
        keys = zipf_stream(10_000, 2.0, m, 10 + rep)
        seq = np.arange(m)
        p1_hat = np.bincount(keys).max() / m
        res = {name: imbalance(run(name, n, s, rep, seq, keys)[1], n) for name in ("kg", "pkg", "dc", "wc")}
        assert res["pkg"] >= p1_hat / 2 - 1 / n - 1e-9  # the hot key's two workers
        assert abs(res["pkg"] - bound) <= 0.05 * bound
        assert res["wc"] < 1e-5
        for k, v in res.items():
            means[k].append(v)
    avg = {k: np.mean(v) for k, v in means.items()}
    assert avg["wc"] <= avg["dc"] <= avg["pkg"] <= avg["kg"]


# --------------------------------------------------------------------------------------------
# FindOptimalChoices and analysis (14-17)

@pytest.mark.parametrize("n,draws", [(5, 3), (10, 20), (50, 60), (100, 250), (100, 900)])
def test_b_h_monte_carlo(n, draws):  # 14
    rng = np.random.default_rng(n * 1000 + draws)
    trials = 4000
    hits = np.array([len(np.unique(rng.integers(0, n, size=draws))) for _ in range(trials)])
    expected = dchoices.expected_distinct_workers(draws, n)
    assert expected == pytest.approx(n - n * ((n - 1) / n) ** draws)
    assert abs(hits.mean() - expected) <= 5 * hits.std(ddof=1) / math.sqrt(trials) + 1e-9
    values = [dchoices.expected_distinct_workers(x, n) for x in range(0, 40 * n, 7)]
    assert all(a <= b <= n for a, b in zip(values, values[1:]))
    assert all(a < b for a, b in zip(values, values[1:]) if b < n - 1e-6)
    assert dchoices.expected_distinct_workers(100 * n, n) == pytest.approx(n)


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 100), st.lists(st.floats(0.0005, 1.0), max_size=30),
       st.sampled_from([1e-5, 1e-4, 1e-3, 1e-2]), st.sampled_from(["spec", "authors"]))
def test_find_optimal_choices_properties(n, q, eps, mode):  # 15
    d = dchoices.find_optimal_choices(q, n, eps, mode)
    assert 2 <= d <= n
    if q:
        assert d >= min(n, math.ceil(max(q) * n))
        assert dchoices.find_optimal_choices(q, n, eps / 10, mode) >= d  # smaller eps: larger d
        assert d == ref.find_optimal_choices(sorted(q, reverse=True), n, eps, mode == "authors")
    else:
        assert d == 2


def test_find_optimal_choices_single_hot_key():  # 16
    q = [0.5] + [0.5 / 2000] * 2000
    head = [x for x in q if x >= 1 / 50]
    assert dchoices.find_optimal_choices(head, 10, 1e-4) >= 5
    assert dchoices.find_optimal_choices([], 10, 1e-4) == 2


ORACLE = {  # spec 5.2: n -> d for z = 0.4, 0.6, 0.8, 0.9, ..., 2.0 (None: empty head, "W": d = n)
    5: [None, None, None, 2, 2, 2, 2, 4, "W", "W", "W", "W", "W", "W", "W"],
    10: [None, None, 2, 2, 2, 2, 3, 7, 8, 9, "W", "W", "W", "W", "W"],
    20: [None, 2, 2, 2, 3, 4, 7, 9, 10, 12, 13, 15, 17, 19, "W"],
    50: [None, 2, 2, 4, 6, 9, 13, 18, 22, 27, 31, 36, 40, 45, 49],
    100: [2, 2, 4, 7, 12, 18, 25, 34, 43, 52, 61, 69, 78, 87, 95],
}
ORACLE_Z = [0.4, 0.6, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0]


@pytest.mark.parametrize("n", sorted(ORACLE))
def test_oracle_d_table(n):  # 17
    """oracle_d itself against the spec 5.2 table, and against the plain-Python F1-F14 of the
    reference on the head written out here (p_k >= 1/(5n), sorted descending)."""
    for z, want in zip(ORACLE_Z, ORACLE[n]):
        p = zipf_p(10_000, z)
        d = dchoices.oracle_d(p, n)
        head = sorted((float(x) for x in p if x >= 1 / (5 * n)), reverse=True)
        assert d == ref.find_optimal_choices(head, n, 1e-4), (n, z)
        # the table's "-" is an empty head (d = 2, the spec's F2), "W" is d = n
        got = None if not head else ("W" if d == n else d)
        assert got == want, (n, z)
        if not head:
            assert d == 2


def test_oracle_d_authors_variant():
    """The values quoted under the spec 5.2 table for the authors' code variant."""
    def d(n, z):
        return dchoices.oracle_d(zipf_p(10_000, z), n, mode="authors")

    assert d(20, 1.2) == 11 and d(100, 2.0) == 97
    assert all(d(10, z) == 10 for z in (1.3, 1.6, 2.0)) and all(d(20, z) == 20 for z in (1.7, 2.0))
    for n in (5, 50, 100):
        for z in (0.8, 1.2, 1.6, 2.0):
            assert d(n, z) >= dchoices.oracle_d(zipf_p(10_000, z), n)


def test_head_sizes_table():  # spec 5.2, |H| from exact probabilities
    table = {(50, 2): [0, 0, 0, 0, 1, 2, 3, 3, 4, 4, 4, 3],
             (50, 0.2): [1, 4, 9, 16, 21, 25, 27, 26, 23, 18, 15, 12],
             (100, 2): [0, 0, 0, 2, 3, 5, 6, 7, 7, 6, 6, 5],
             (100, 0.2): [6, 15, 26, 38, 46, 51, 51, 48, 38, 29, 22, 17]}
    zs = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.4, 1.6, 1.8, 2.0]
    for (n, c), sizes in table.items():
        assert [len(dchoices.head_probabilities(zipf_p(10_000, z), c / n)) for z in zs] == sizes


# --------------------------------------------------------------------------------------------
# SpaceSaving (18)

@settings(max_examples=80, deadline=None)
@given(cases(names=("wc",)), st.sampled_from([1, 2, 5, 10, 60]))
def test_space_saving_guarantees(case, capacity):
    _, n, s, seed, seq, keys, _ = case
    obj, _ = run("wc", n, s, seed, seq, keys, capacity=capacity)
    for j in range(s):
        mine = keys[seq % s == j]
        true = defaultdict(int)
        for k in mine.tolist():
            true[k] += 1
        sk = obj.sketch(j)
        M = len(mine)
        assert len(sk) <= capacity
        assert sum(c for c, _ in sk.values()) == M
        for k, (c, e) in sk.items():
            assert c - e <= true[k] <= c
        for k, f in true.items():
            if f > M / capacity:
                assert k in sk
        if capacity >= len(true):
            assert sk == {k: (f, 0) for k, f in true.items()}
