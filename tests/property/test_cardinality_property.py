"""CM, AM and cAM: the numba kernel equals the plain-Python reference (whole stream, random batch
splits, per-source feeding), and the invariants and limiting cases of practice.spec.md section 7
(items 1, 21-24) hold."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skewbench import registry
from skewbench.errors import SkewbenchError
from skewbench.grouping.strategies import cardinality
from skewbench.grouping.base import Batch, hash_choice_py, hash_seeds
from tests.reference import cardinality_ref as ref

NAMES = ref.STRATEGIES
STICKY = ("am", "cam")
N_IDS = 60
# int64 values a key may take besides small ids: the extremes, -1, 0 and large ones of both signs
EXTREMES = [-2**63, 2**63 - 1, -1, 0, 1, -2**40, 2**62 + 12345, -(2**62) - 7]


def make_batch(seq, keys) -> Batch:
    seq = np.asarray(seq, dtype=np.int64)
    return Batch(seq, np.asarray(keys, dtype=np.int64), np.zeros(len(seq)), np.ones(len(seq)))


def run(name, n, s, seed, seq, keys, **params):
    obj = registry.get("grouping", name)(n, s, seed, **params)
    return obj, obj.route(make_batch(seq, keys))


def candidates(seed, n):
    s1, s2 = (int(x) for x in hash_seeds(seed, 2))
    return lambda k: (hash_choice_py(k, s1, n), hash_choice_py(k, s2, n))


def local_index(seq, s):
    """Per tuple: its source and how many earlier tuples of the stream that source had."""
    seen = defaultdict(int)
    src, idx = [], []
    for t in np.asarray(seq).tolist():
        j = t % s
        src.append(j)
        idx.append(seen[j])
        seen[j] += 1
    return src, idx


@st.composite
def key_streams(draw, m):
    """``m`` int64 keys: Zipf-skewed over N_IDS ids, mapped to small ids, to wide negative and
    large values, or to a table that includes the int64 extremes."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    z = draw(st.sampled_from([0.0, 0.7, 1.2, 2.0]))
    p = np.arange(1, N_IDS + 1, dtype=float) ** -z
    ids = rng.choice(N_IDS, size=m, p=p / p.sum())
    form = draw(st.integers(0, 3))
    if form == 0:
        values = np.arange(N_IDS, dtype=np.int64)
    elif form == 1:
        values = np.arange(N_IDS, dtype=np.int64) * 1_000_000_007 - 2**40
    else:
        values = np.unique(np.concatenate([rng.integers(-2**63, 2**63 - 1, size=N_IDS, dtype=np.int64),
                                           np.array(EXTREMES, dtype=np.int64)]))[:N_IDS]
        values = values[rng.permutation(len(values))]
    return values[ids].astype(np.int64)


@st.composite
def cases(draw, names=NAMES):
    name = draw(st.sampled_from(names))
    n = draw(st.integers(1, 12))
    s = draw(st.integers(1, 5))
    m = draw(st.integers(0, 300))
    keys = draw(key_streams(m))
    if draw(st.booleans()):
        seq = np.arange(m, dtype=np.int64) + draw(st.integers(0, 1000))
    else:  # gaps: another consumer owns the missing positions
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        seq = np.cumsum(rng.integers(1, 4, size=m)).astype(np.int64)
    window = draw(st.sampled_from([1, 2, 3, 5, 8, 20, 64, 100_000]))
    return name, n, s, draw(st.integers(0, 2**31)), seq, keys, {"window": window}


def assert_same_state(obj, r):
    assert obj.window_counts().tolist() == [src.cnt for src in r.src]
    assert obj.key_set_sizes().tolist() == [[len(x) for x in src.K] for src in r.src]
    for j, src in enumerate(r.src):
        assert obj.key_sets(j) == src.K
    assert obj.summary() == pytest.approx(r.summary(), rel=1e-12, abs=0)
    assert obj.window_stats() == pytest.approx(r.window_stats(), rel=1e-12, abs=1e-12)


# --------------------------------------------------------------------------------------------
# kernel == reference

@settings(max_examples=250, deadline=None)
@given(cases())
def test_kernel_equals_reference(case):
    name, n, s, seed, seq, keys, params = case
    obj, out = run(name, n, s, seed, seq, keys, **params)
    r = ref.Reference(name, n, s, seed, **params)
    assert out.dtype == np.int64
    assert out.tolist() == r.route(seq.tolist(), keys.tolist())
    assert_same_state(obj, r)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(NAMES), st.integers(1, 30), st.integers(1, 3), st.sampled_from([700, 1500, 100_000]),
       st.integers(0, 2**31))
def test_tables_grow_and_stay_bounded(name, n, s, window, seed):
    """Thousands of distinct int64 keys per window: the per-source tables double many times
    (from 64 slots) and never exceed the next power of two of 2 W_c."""
    rng = np.random.default_rng(seed)
    pool = rng.integers(-2**63, 2**63 - 1, size=2500, dtype=np.int64)
    keys = pool[rng.integers(0, len(pool), size=6000)]
    seq = np.arange(len(keys), dtype=np.int64)
    obj, out = run(name, n, s, seed, seq, keys, window=window)
    r = ref.Reference(name, n, s, seed, window=window)
    assert out.tolist() == r.route(seq.tolist(), keys.tolist())
    assert_same_state(obj, r)
    cap = obj._tab.shape[1]
    assert cap > 64
    assert cap <= 1 << (2 * window - 1).bit_length()


@settings(max_examples=120, deadline=None)
@given(cases(), st.data())
def test_batch_splits_keep_state(case, data):
    name, n, s, seed, seq, keys, params = case
    whole_obj, whole = run(name, n, s, seed, seq, keys, **params)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(seq)), max_size=8)))
    obj = registry.get("grouping", name)(n, s, seed, **params)
    parts = [obj.route(make_batch(seq[a:b], keys[a:b])) for a, b in zip([0] + cuts, cuts + [len(seq)])]
    assert np.concatenate(parts).tolist() == whole.tolist()
    assert obj.summary() == whole_obj.summary()
    assert obj.window_stats() == whole_obj.window_stats()


@settings(max_examples=100, deadline=None)
@given(cases(), st.randoms(use_true_random=False))
def test_per_source_feeding(case, rnd):
    name, n, s, seed, seq, keys, params = case
    whole_obj, whole = run(name, n, s, seed, seq, keys, **params)
    out = np.full(len(seq), -1, dtype=np.int64)
    for j in range(s):  # one object per source (a Spark task each)
        mine = seq % s == j
        out[mine] = run(name, n, s, seed, seq[mine], keys[mine], **params)[1]
    assert out.tolist() == whole.tolist()
    order = list(range(s))  # one object fed source after source, in any order
    rnd.shuffle(order)
    obj = registry.get("grouping", name)(n, s, seed, **params)
    out[:] = -1
    for j in order:
        mine = seq % s == j
        out[mine] = obj.route(make_batch(seq[mine], keys[mine]))
    assert out.tolist() == whole.tolist()
    assert obj.summary() == whole_obj.summary()
    assert obj.window_stats() == whole_obj.window_stats()


# --------------------------------------------------------------------------------------------
# spec 7 item 1 and the window bookkeeping

@settings(max_examples=80, deadline=None)
@given(cases())
def test_conservation_and_windows(case):  # 1
    name, n, s, seed, seq, keys, params = case
    W = params["window"]
    obj, out = run(name, n, s, seed, seq, keys, **params)
    assert out.tolist() == [] or (out.min() >= 0 and out.max() < n)
    assert np.bincount(out, minlength=n).sum() == len(seq)
    per_source = np.bincount(seq % s, minlength=s) if len(seq) else np.zeros(s, dtype=np.int64)
    # the current window of source j holds its last m_j mod W tuples
    assert obj.window_counts().sum(axis=1).tolist() == (per_source % W).tolist()
    assert obj.summary()["windows_completed"] == float((per_source // W).sum())
    assert obj.window_counts().shape == obj.key_set_sizes().shape == (s, n)
    assert run(name, n, s, seed, seq, keys, **params)[1].tolist() == out.tolist()


def test_determinism_and_seed_sensitivity():
    rng = np.random.default_rng(1)
    keys = rng.zipf(1.3, size=4000) % 500
    seq = np.arange(len(keys))
    for name in NAMES:
        cls = registry.get("grouping", name)
        assert cls.seeded and cls.relaxation == "two"
        a = run(name, 10, 3, 5, seq, keys, window=300)[1]
        assert run(name, 10, 3, 5, seq, keys, window=300)[1].tolist() == a.tolist()
        assert run(name, 10, 3, 6, seq, keys, window=300)[1].tolist() != a.tolist(), name


# --------------------------------------------------------------------------------------------
# spec 7 items 21-24

@settings(max_examples=120, deadline=None)
@given(cases())
def test_two_candidates_and_replication(case):  # 21
    name, n, s, seed, seq, keys, params = case
    out = run(name, n, s, seed, seq, keys, **params)[1]
    cand = candidates(seed, n)
    overall, by_source = defaultdict(set), defaultdict(set)
    for t, k, w in zip(seq.tolist(), keys.tolist(), out.tolist()):
        assert w in cand(k)
        overall[k].add(w)
        by_source[t % s, k].add(w)
    assert all(len(ws) <= 2 for ws in overall.values())
    assert all(len(ws) <= 2 for ws in by_source.values())


@settings(max_examples=120, deadline=None)
@given(cases())
def test_rules_on_the_kernel_output(case):  # 24 and lines CA2, CA5-CA7, CA10
    """Rebuild each source's window state from the kernel's own output alone and check that
    every decision follows its rule, ties going to c2."""
    name, n, s, seed, seq, keys, params = case
    W = params["window"]
    out = run(name, n, s, seed, seq, keys, **params)[1]
    cand = candidates(seed, n)
    src, idx = local_index(seq, s)
    K = [[set() for _ in range(n)] for _ in range(s)]
    cnt = [[0] * n for _ in range(s)]
    for j, u, k, w in zip(src, idx, keys.tolist(), out.tolist()):
        if u % W == 0:
            K[j] = [set() for _ in range(n)]
            cnt[j] = [0] * n
        c1, c2 = cand(k)
        Kj, cj = K[j], cnt[j]
        if name != "cm" and k in Kj[c1]:
            assert w == c1
        elif name != "cm" and k in Kj[c2]:
            assert w == c2
        else:
            a, b = (cj[c1], cj[c2]) if name == "cam" else (len(Kj[c1]), len(Kj[c2]))
            assert w == (c1 if a < b else c2)
        Kj[w].add(k)
        cj[w] += 1


@settings(max_examples=120, deadline=None)
@given(cases(names=STICKY))
def test_affinity_within_a_window(case):  # 22
    name, n, s, seed, seq, keys, params = case
    W = params["window"]
    obj, out = run(name, n, s, seed, seq, keys, **params)
    src, idx = local_index(seq, s)
    where = defaultdict(set)
    for j, u, k, w in zip(src, idx, keys.tolist(), out.tolist()):
        where[j, u // W, k].add(w)
    assert all(len(ws) == 1 for ws in where.values())
    # each key of a current window is in exactly one set: sum_w |K[w]| = distinct keys there
    last = defaultdict(set)
    per_source = np.bincount(seq % s, minlength=s) if len(seq) else np.zeros(s, dtype=np.int64)
    for j, u, k in zip(src, idx, keys.tolist()):
        if u // W == per_source[j] // W:
            last[j].add(k)
    assert obj.key_set_sizes().sum(axis=1).tolist() == [len(last[j]) for j in range(s)]


def zipf_keys(m, seed, n_ids=300, z=1.2):
    rng = np.random.default_rng(seed)
    p = np.arange(1, n_ids + 1, dtype=float) ** -z
    return rng.choice(n_ids, size=m, p=p / p.sum()).astype(np.int64)


def test_affinity_is_per_window_and_cm_splits():  # 22, the other side
    """Without a reset (W_c >= the stream) AM and cAM send each key to one worker per source;
    with resets the same stream moves some keys; CM splits keys even within a window."""
    keys = zipf_keys(6000, 3)
    seq = np.arange(len(keys))
    n, s = 8, 2

    def workers_per_key(out):
        ws = defaultdict(set)
        for t, k, w in zip(seq.tolist(), keys.tolist(), out.tolist()):
            ws[t % s, k].add(w)
        return max(len(x) for x in ws.values())

    for name in STICKY:
        assert workers_per_key(run(name, n, s, 4, seq, keys, window=len(keys))[1]) == 1
        assert workers_per_key(run(name, n, s, 4, seq, keys, window=200)[1]) == 2
    assert workers_per_key(run("cm", n, s, 4, seq, keys, window=len(keys))[1]) == 2


@st.composite
def once_per_window(draw):
    """Streams in which every key occurs at most once per source window (keys repeat across
    windows and sources), with contiguous positions."""
    n = draw(st.integers(1, 12))
    s = draw(st.integers(1, 4))
    W = draw(st.integers(1, 40))
    m = draw(st.integers(0, 400))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    tables = [rng.permutation(np.unique(np.concatenate([
        rng.integers(-2**63, 2**63 - 1, size=2 * W, dtype=np.int64), np.array(EXTREMES, dtype=np.int64)])))[:W]
        for _ in range(s)]
    if draw(st.booleans()):  # all sources draw from one table
        tables = [tables[0]] * s
    start = draw(st.integers(0, 50))
    seq = np.arange(start, start + m, dtype=np.int64)
    src, idx = local_index(seq, s)
    # a key's position in the window's permutation differs from window to window
    shift = [int(x) for x in rng.integers(0, max(W, 1), size=m // W + 2)]
    keys = np.array([tables[j][(u % W + shift[u // W]) % W] for j, u in zip(src, idx)], dtype=np.int64)
    return n, s, W, draw(st.integers(0, 2**31)), seq, keys


@settings(max_examples=150, deadline=None)
@given(once_per_window())
def test_keys_once_per_window_is_pkg_with_ties_to_c2(case):  # 23
    n, s, W, seed, seq, keys = case
    pkg = ref.pkg_c2(keys.tolist(), n, s, seed, seq.tolist(), window=W)
    for name in NAMES:
        obj, out = run(name, n, s, seed, seq, keys, window=W)
        assert out.tolist() == pkg, name
        summ = obj.summary()
        assert summ["affinity_hit_fraction"] == 0.0
        assert obj.key_set_sizes().tolist() == obj.window_counts().tolist()
        windows = sum(-(-c // W) for c in np.bincount(seq % s, minlength=s).tolist()) if len(seq) else 0
        if windows:
            assert summ["keys_per_worker"] == pytest.approx(len(seq) / (n * windows))
    # all keys distinct and one long window: PKG on cumulative counts with ties to c2 (the
    # registered pkg breaks ties to c1, so the comparison is with the reference)
    distinct = np.array([((t * 0x9E3779B97F4A7C15) % 2**64) - 2**63 for t in seq.tolist()], dtype=np.int64)
    pkg = ref.pkg_c2(distinct.tolist(), n, s, seed, seq.tolist(), window=10**9)
    for name in NAMES:
        assert run(name, n, s, seed, seq, distinct, window=10**9)[1].tolist() == pkg, name


def keys_with(seed, n, pairs):
    """For each wanted ``(c1, c2)`` the smallest non-negative int key with those candidates."""
    cand = candidates(seed, n)
    found, k = {}, 0
    while len(found) < len(set(pairs)):
        c = cand(k)
        if c in pairs and c not in found:
            found[c] = k
        k += 1
    return [found[p] for p in pairs]


def test_tie_vectors():  # 24
    """Hand-checked decisions, n = 2, s = 1, one window; a = (c1, c2) = (0, 1), b, d = (0, 1),
    e = (1, 0)."""
    a, e = keys_with(7, 2, [(0, 1), (1, 0)])
    cand = candidates(7, 2)
    b, d = [k for k in range(a + 1, 10_000) if cand(k) == (0, 1)][:2]
    # a single repeated key: CM sizes (0,0) tie -> c2, (0,1) -> c1, (1,1) tie -> c2 for ever
    one = [a] * 6
    assert run("cm", 2, 1, 7, np.arange(6), one)[1].tolist() == [1, 0, 1, 1, 1, 1]
    for name in STICKY:  # tie -> c2, then it sticks
        assert run(name, 2, 1, 7, np.arange(6), one)[1].tolist() == [1] * 6
    stream = [a, a, b, d, e]
    want = {
        # K sizes: a tie -> 1; (0,1) -> 0; b tie (1,1) -> 1; d 1 < 2 -> 0; e (2,2) tie -> c2 = 0
        "cm": [1, 0, 1, 0, 0],
        # a tie -> 1, sticks; b 0 < 1 -> 0; d tie (1,1) -> 1; e |K1| = 2 > |K0| = 1 -> c2 = 0
        "am": [1, 1, 0, 1, 0],
        # counts: a tie -> 1, sticks (cnt 0, 2); b 0 < 2 -> 0; d 1 < 2 -> 0; e cnt tie (2,2) -> c2 = 0
        # (AM's key-set sizes, |K1| = 1 < |K0| = 2, would send e to c1 = 1)
        "cam": [1, 1, 0, 0, 0],
    }
    for name, w in want.items():
        assert run(name, 2, 1, 7, np.arange(5), stream)[1].tolist() == w, name
        assert ref.route(name, stream, 2, 1, 7) == w, name
    # a window reset between the two a's: the second one is a first placement again (tie -> c2)
    assert run("cm", 2, 1, 7, np.arange(2), [a, a], window=1)[1].tolist() == [1, 1]


def test_equal_candidates():
    """c1 == c2: the choice is that worker, for every strategy and state."""
    n = 3
    cand = candidates(11, n)
    same = [k for k in range(2000) if cand(k)[0] == cand(k)[1]][:20]
    assert len(same) == 20
    keys = np.array(same * 5, dtype=np.int64)
    for name in NAMES:
        out = run(name, n, 2, 11, np.arange(len(keys)), keys, window=7)[1]
        assert out.tolist() == [cand(int(k))[0] for k in keys]


def test_single_worker():
    keys = zipf_keys(500, 1)
    for name in NAMES:
        obj, out = run(name, 1, 3, 0, np.arange(500), keys, window=50)
        assert out.tolist() == [0] * 500


# --------------------------------------------------------------------------------------------
# parameters and statistics

@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", [0, -3, 1.5, "10", None, True, float("inf")])
def test_bad_window_is_refused(name, bad):
    with pytest.raises(SkewbenchError, match=rf"{name}: window must be an integer in \[1, inf\], got"):
        registry.get("grouping", name)(4, 2, window=bad)


def test_unknown_parameter_and_source_are_refused():
    with pytest.raises(SkewbenchError, match=r"cam: unknown parameter\(s\) \['d'\]"):
        cardinality.CAM(4, d=5)
    with pytest.raises(SkewbenchError, match=r"am: source must be in \[0, 2\), got 2"):
        cardinality.AM(4, 2).key_sets(2)


def test_window_given_as_float_integer_and_defaults():
    obj = cardinality.CM(4, 2, window=50.0)
    assert obj.describe_params() == {"window": 50} and isinstance(obj.params["window"], int)
    assert cardinality.AM(4).params["window"] == 100_000
    empty = cardinality.CAM(4, 3)
    assert empty.summary() == {"affinity_hit_fraction": 0.0, "keys_per_worker": 0.0, "windows_completed": 0.0}
    assert empty.window_stats() == {"keys_per_worker": 0.0, "card_imbalance": 0.0, "count_imbalance": 0.0}
    assert empty.route(make_batch([], [])).tolist() == []


def test_statistics_on_a_zipf_stream():
    """AM and cAM merge fewer partials than CM (each key on one worker per window, so their
    mean key-set size is the distinct keys per window over n), and hit by affinity on repeats."""
    keys = zipf_keys(20_000, 5, n_ids=2000, z=1.0)
    seq = np.arange(len(keys))
    n, s, W = 10, 4, 1000
    src, idx = local_index(seq, s)
    distinct = defaultdict(set)
    for j, u, k in zip(src, idx, keys.tolist()):
        distinct[j, u // W].add(k)
    windows = len(distinct)
    partials = sum(len(x) for x in distinct.values())
    res = {name: run(name, n, s, 0, seq, keys, window=W)[0].summary() for name in NAMES}
    for name in STICKY:
        assert res[name]["keys_per_worker"] == pytest.approx(partials / (n * windows))
        assert res[name]["affinity_hit_fraction"] == pytest.approx(1 - partials / len(keys))
    assert res["cm"]["keys_per_worker"] > res["am"]["keys_per_worker"]
    # CM's repeats that add no new partial: fewer than AM's affinity hits, by the extra partials
    assert res["cm"]["affinity_hit_fraction"] < res["am"]["affinity_hit_fraction"]
    assert res["cm"]["affinity_hit_fraction"] == pytest.approx(1 - res["cm"]["keys_per_worker"] * n * windows / len(keys))
    assert all(r["windows_completed"] == len(keys) // W for r in res.values())
