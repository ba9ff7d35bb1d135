"""Engine partitioners (Kafka, Flink, Spark RDD, Spark SQL): the numba kernels equal the
plain-Python reference (every hash, every route; whole stream, batch splits, per-source feeding,
bound key values; Flink with both ``api`` values, Java's ``keyBy`` and PyFlink's ``key_by``), and
practice.spec.md section 7 items 1 and 7-12 and the table of section 5.2 hold (items 8 and 9 for
PyFlink's row keys too).  The engines' own answers (Kafka's test vectors, the JVM, Spark) are
checked in ``tests/integration/test_engine_hashes.py``, Flink's own (its JVM classes and a real
PyFlink job) in ``tests/integration/test_flink_engine.py``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skewbench import registry
from skewbench.errors import SkewbenchError
from skewbench.grouping.strategies import engines
from skewbench.grouping.base import Batch
from tests.reference import engines_ref as ref

NAMES = ref.ENGINES
FORMATS = ref.FORMATS
APIS = ref.APIS
I64 = (-(1 << 63), (1 << 63) - 1)
#: values where the serialisations and the 32-bit folds change behaviour
EDGE = [0, 1, -1, 9, 10, 99, 100, -9, -10, -100, 999, 1000, 12345, 2**31 - 1, 2**31, -2**31, -2**31 - 1,
        2**32 - 1, 2**32, 2**32 + 5, -2**32, -2**32 - 1, 10**18, -10**18, 2**63 - 1, -2**63, -2**63 + 1,
        2**63 - 2, 1000000007]
int64s = st.one_of(st.integers(*I64), st.sampled_from(EDGE), st.integers(-2**34, 2**34), st.integers(-50, 50))


def make_batch(seq, keys) -> Batch:
    seq = np.asarray(seq, dtype=np.int64)
    return Batch(seq, np.asarray(keys, dtype=np.int64), np.zeros(len(seq)), np.ones(len(seq)))


def make(name, n, s=1, seed=0, values=None, **params):
    obj = registry.get("grouping", name)(n, s, seed, **params)
    if values is not None:
        obj.bind_key_values(np.asarray(values, dtype=np.int64))
    return obj


def run(name, n, s, seq, keys, values=None, **params):
    obj = make(name, n, s, 0, values, **params)
    return obj, obj.route(make_batch(seq, keys))


@st.composite
def cases(draw, names=NAMES):
    """(name, n, s, seq, keys, values or None, params); with values the keys are ids into them."""
    name = draw(st.sampled_from(names))
    n = draw(st.one_of(st.integers(1, 13), st.sampled_from([64, 100, 128, 1000, 32768])))
    s = draw(st.integers(1, 5))
    params = {"key_format": draw(st.sampled_from(FORMATS))}
    if name == "flink":
        params["max_parallelism"] = draw(st.sampled_from([0, 0, n, max(n, 128), max(n, 1000), 32768]))
        params["api"] = draw(st.sampled_from(APIS))
    m = draw(st.integers(0, 80))
    values = None
    if draw(st.booleans()):
        values = draw(st.lists(int64s, min_size=1, max_size=30))
        keys = draw(st.lists(st.integers(0, len(values) - 1), min_size=m, max_size=m))
    else:
        keys = draw(st.lists(int64s, min_size=m, max_size=m))
    start = draw(st.integers(0, 1000))
    if draw(st.booleans()):
        seq = list(range(start, start + m))
    else:  # gaps: another consumer owns the missing positions
        gaps = draw(st.lists(st.integers(1, 4), min_size=m, max_size=m))
        seq = np.cumsum([start] + gaps)[1:].tolist()
    return name, n, s, seq, keys, values, params


# --------------------------------------------------------------------------------------------
# kernel == reference

@settings(max_examples=300, deadline=None)
@given(cases())
def test_kernel_equals_reference(case):  # and spec 7 item 1 (range, conservation)
    name, n, s, seq, keys, values, params = case
    obj, out = run(name, n, s, seq, keys, values, **params)
    r = ref.Reference(name, n, s, key_values=values, **params)
    assert out.dtype == np.int64
    assert out.tolist() == r.route(seq, keys)
    assert obj.local_loads().tolist() == r.l
    assert ((out >= 0) & (out < n)).all()
    assert obj.local_loads().sum(axis=0).tolist() == np.bincount(out, minlength=n).tolist()


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(NAMES), st.sampled_from(FORMATS), st.lists(int64s, max_size=60))
def test_engine_hashes_equal_reference(name, fmt, keys):
    got = engines.engine_hashes(name, keys, fmt)
    assert got.dtype == np.int64
    assert got.tolist() == [ref.engine_hash(name, k, fmt) for k in keys]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(FORMATS), st.sampled_from(APIS), st.lists(int64s, max_size=60),
       st.lists(st.text(max_size=12), max_size=20), st.sampled_from([1, 5, 8, 100, 1000]), st.data())
def test_flink_apis_equal_reference(fmt, api, keys, texts, n, data):
    """Flink's two keys (the key itself, PyFlink's Row.of(key)) for integer keys of both formats
    and for any text (non-BMP characters included): hashes, key groups and workers; the texts of
    integers hash as key_format "string" does."""
    P = data.draw(st.sampled_from([0, n, max(n, 128), 32768]))
    got = engines.engine_hashes("flink", keys, fmt, api)
    assert got.tolist() == [ref.engine_hash("flink", k, fmt, api) for k in keys]
    Pk = P or engines.flink_default_max_parallelism(n)
    assert [engines.flink_key_group(k, Pk, fmt, api) for k in keys[:8]] == \
        [ref.key_group(k, Pk, fmt, api) for k in keys[:8]]
    workers = engines.engine_workers("flink", got, n, P)
    assert workers.tolist() == [ref.partition("flink", k, n, fmt, P, api) for k in keys]
    text_hashes = engines.engine_text_hashes("flink", texts, api=api)
    codes = [ref.string_hash_code(t) for t in texts]
    assert text_hashes.tolist() == [ref.flink_murmur_hash(c if api == "datastream" else ref.row_hash_code([c]))
                                    for c in codes]
    assert engines.engine_text_hashes("flink", [str(k) for k in keys], api=api).tolist() == \
        engines.engine_hashes("flink", keys, "string", api).tolist()


@settings(max_examples=60, deadline=None)
@given(st.integers(-2**31, 2**32 - 1))
def test_flink_row_hash_equals_reference(code):
    """Row.of(key).hashCode: the kernel's 62 + code (wrapping) equals the reference's composition
    (kind byte, the fields array, each field as a one-element array), for codes near the wrap too."""
    assert engines.flink_row_hash(code) == ref.row_hash_code([ref.i32(code)]) == ref.i32(code + 62)


@settings(max_examples=60, deadline=None)
@given(int64s, st.binary(max_size=40), st.integers(0, 2**32 - 1), st.integers(-2**31, 2**32 - 1))
def test_hash_wrappers_equal_reference(k, data, seed, code):
    assert engines.java_long_hash(k) == ref.long_hash_code(k)
    assert engines.java_string_hash(k) == ref.string_hash_code(ref.dec(k))
    assert engines.kafka_murmur2(data) == ref.murmur2(data)
    assert engines.kafka_murmur2(ref.be8(k)) == engines.engine_hashes("kafka", [k], "long")[0]
    assert engines.kafka_murmur2(ref.utf8_dec(k)) == engines.engine_hashes("kafka", [k], "string")[0]
    assert engines.spark_murmur3_bytes(data, seed) == ref.m3bytes_legacy(data, seed)  # bytes >= 0x80 too
    assert engines.spark_murmur3_int(code, seed) == ref.m3int(code, seed)
    assert engines.spark_murmur3_long(k, seed) == ref.m3long(k, seed)
    assert engines.flink_murmur_hash(code) == ref.flink_murmur_hash(code)
    assert engines.flink_key_group(k, 128, "string") == ref.key_group(k, 128, "string")


def test_a_perturbed_reference_is_detected(monkeypatch):
    """The comparison has teeth: abs() for Kafka's toPositive, or Spark SQL's standard Murmur3
    tail for the legacy byte hash, in the reference makes it disagree with the kernels."""
    keys = list(range(-40, 40)) + EDGE

    def agrees(name, fmt):
        return run(name, 10, 1, range(len(keys)), keys, key_format=fmt)[1].tolist() == \
            ref.Reference(name, 10, 1, fmt).route(list(range(len(keys))), keys)

    assert agrees("kafka", "long") and agrees("spark-sql", "string")
    with monkeypatch.context() as mp:
        mp.setattr(ref, "to_positive", abs)
        assert not agrees("kafka", "long")

    def standard_tail(b, seed):  # MurmurHash3's own tail: one block of the remaining bytes
        h = seed & ref.M32
        aligned = len(b) - len(b) % 4
        for o in range(0, aligned, 4):
            h = ref.mix_h1(h, ref.mix_k1(int.from_bytes(b[o:o + 4], "little")))
        if len(b) > aligned:
            h ^= ref.mix_k1(int.from_bytes(b[aligned:], "little"))
        return ref.i32(ref.fmix(h, len(b)))

    with monkeypatch.context() as mp:
        mp.setattr(ref, "m3bytes_legacy", standard_tail)
        assert not agrees("spark-sql", "string")


# --------------------------------------------------------------------------------------------
# feeding: batch splits, per-source, seeds

@settings(max_examples=80, deadline=None)
@given(cases(), st.data())
def test_batch_splits_keep_state(case, data):
    name, n, s, seq, keys, values, params = case
    whole_obj, whole = run(name, n, s, seq, keys, values, **params)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(seq)), max_size=6)))
    obj = make(name, n, s, 0, values, **params)
    parts = [obj.route(make_batch(seq[a:b], keys[a:b])) for a, b in zip([0] + cuts, cuts + [len(seq)])]
    assert np.concatenate(parts).tolist() == whole.tolist()
    assert obj.local_loads().tolist() == whole_obj.local_loads().tolist()
    assert obj.summary() == whole_obj.summary()


@settings(max_examples=80, deadline=None)
@given(cases())
def test_per_source_feeding(case):
    name, n, s, seq, keys, values, params = case
    _, whole = run(name, n, s, seq, keys, values, **params)
    seq_a, keys_a = np.asarray(seq, dtype=np.int64), np.asarray(keys, dtype=np.int64)
    obj = make(name, n, s, 0, values, **params)
    out = np.full(len(seq), -1, dtype=np.int64)
    for j in reversed(range(s)):
        mine = seq_a % s == j
        out[mine] = obj.route(make_batch(seq_a[mine], keys_a[mine]))
    assert out.tolist() == whole.tolist()


def test_not_seeded_and_deterministic():
    keys = np.random.default_rng(1).integers(-2**40, 2**40, 500)
    for name in NAMES:
        cls = registry.get("grouping", name)
        assert (cls.seeded, cls.relaxation, cls.uses_key_values) == (False, "whole", True)
        a = make(name, 7, 3, 0).route(make_batch(np.arange(500), keys))
        b = make(name, 7, 3, 12345).route(make_batch(np.arange(500), keys))
        assert a.tolist() == b.tolist()


# --------------------------------------------------------------------------------------------
# bound key values

@settings(max_examples=60, deadline=None)
@given(cases(), st.lists(int64s, min_size=1, max_size=20), st.data())
def test_bound_values_route_as_the_values(case, values, data):
    """With values bound, key id k routes exactly as the unbound value values[k] would (and the
    loads agree); ids with equal values share a worker; values = the ids change nothing; binding
    None goes back to the ids."""
    name, n, s, _, _, _, params = case
    m = data.draw(st.integers(0, 60))
    ids = data.draw(st.lists(st.integers(0, len(values) - 1), min_size=m, max_size=m))
    seq = list(range(m))
    bound, out = run(name, n, s, seq, ids, values, **params)
    plain, expect = run(name, n, s, seq, [values[k] for k in ids], **params)
    assert out.tolist() == expect.tolist()
    assert bound.local_loads().tolist() == plain.local_loads().tolist()
    by_value: dict[int, set[int]] = {}
    for k, w in zip(ids, out.tolist()):
        by_value.setdefault(values[k], set()).add(w)
    assert all(len(ws) == 1 for ws in by_value.values())
    identity = run(name, n, s, seq, ids, list(range(len(values))), **params)[1]
    assert identity.tolist() == run(name, n, s, seq, ids, **params)[1].tolist()
    obj = make(name, n, s, 0, values, **params)
    obj.bind_key_values(None)
    assert obj.key_values is None
    assert obj.route(make_batch(seq, ids)).tolist() == run(name, n, s, seq, ids, **params)[1].tolist()


@pytest.mark.parametrize("name", NAMES)
def test_key_ids_outside_the_bound_values_are_refused(name):
    values = np.array([5, -7, 2**40], dtype=np.int64)
    obj = make(name, 4, 2, 0, values)
    good = obj.route(make_batch([0, 1, 2], [0, 1, 2]))
    loads = obj.local_loads()
    for bad in (3, -1):
        with pytest.raises(SkewbenchError, match=rf"{name}: key id {bad} \(seq 5\) has no bound key value"):
            obj.route(make_batch([3, 4, 5, 6], [2, 0, bad, 1]))
        assert obj.local_loads().tolist() == loads.tolist()  # the failed batch left no trace
    again = obj.route(make_batch([3, 4, 5], [2, 0, 1]))
    assert np.concatenate([good, again]).tolist() == make(name, 4, 2, 0, values).route(
        make_batch(range(6), [0, 1, 2, 2, 0, 1])).tolist()
    with pytest.raises(SkewbenchError, match=f"{name}: key values must be a 1-d array"):
        obj.bind_key_values(np.zeros((2, 2), dtype=np.int64))


# --------------------------------------------------------------------------------------------
# parameters

@pytest.mark.parametrize("name", NAMES)
def test_parameter_errors(name):
    with pytest.raises(SkewbenchError, match=rf"{name}: key_format must be one of \['long', 'string'\], got 'text'"):
        make(name, 4, key_format="text")
    if name != "flink":
        with pytest.raises(SkewbenchError, match=rf"{name}: unknown parameter\(s\) \['max_parallelism'\]"):
            make(name, 4, max_parallelism=128)
        with pytest.raises(SkewbenchError, match=rf"{name}: unknown parameter\(s\) \['api'\]"):
            make(name, 4, api="pyflink")
        with pytest.raises(SkewbenchError, match=rf"^{name}: api applies to flink only, got 'pyflink'$"):
            engines.engine_hashes(name, [1], "long", "pyflink")
        with pytest.raises(SkewbenchError, match=rf"^{name}: api applies to flink only, got 'pyflink'$"):
            engines.engine_text_hashes(name, ["1"], api="pyflink")
    else:
        for bad in ("table", "DataStream", None):
            with pytest.raises(SkewbenchError, match=r"^flink: api must be one of \['datastream', 'pyflink'\], got "):
                make(name, 4, api=bad)
        with pytest.raises(SkewbenchError, match=r"^flink: api must be one of \['datastream', 'pyflink'\], got 'java'$"):
            engines.engine_hashes(name, [1], "long", "java")


def test_flink_max_parallelism_errors_and_resolution():
    for bad in (-1, 32769, 2.5, "128"):
        with pytest.raises(SkewbenchError, match=r"flink: max_parallelism must be an integer in \[0, 32768\], got"):
            make("flink", 4, max_parallelism=bad)
    with pytest.raises(SkewbenchError, match=r"flink: max_parallelism must be an integer in \[n, 32768\] = "
                                             r"\[200, 32768\] for n = 200 workers, got 128$"):
        make("flink", 200, max_parallelism=128)
    with pytest.raises(SkewbenchError, match=r"flink: n = 40000 workers exceed Flink's largest max parallelism 32768: "
                                             r"max_parallelism must be an integer in \[n, 32768\] or 0"):
        make("flink", 40000)
    assert make("flink", 100).describe_params() == {"key_format": "long", "max_parallelism": 256, "api": "datastream"}
    assert make("flink", 100, api="pyflink").describe_params()["api"] == "pyflink"
    assert make("flink", 100, max_parallelism=100).describe_params()["max_parallelism"] == 100
    assert make("flink", 32768).summary() == {"max_parallelism": 32768.0, "key_groups_per_operator_min": 1.0,
                                              "key_groups_per_operator_max": 1.0}


# --------------------------------------------------------------------------------------------
# spec 7, Flink (items 7-9)

def test_flink_default_max_parallelism():  # 7
    expect = {n: 128 for n in range(1, 86)} | {86: 256, 100: 256, 171: 256, 172: 512, 341: 512, 342: 1024,
                                               1000: 2048, 21845: 32768, 30000: 32768}
    for n, P in expect.items():
        assert engines.flink_default_max_parallelism(n) == P == ref.default_max_parallelism(n), n
        assert make("flink", n).summary()["max_parallelism"] == P
    for n in range(1, 3000):
        assert engines.flink_default_max_parallelism(n) == ref.default_max_parallelism(n)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 32768), st.data())
def test_flink_operator_ranges(P, data):  # 8
    n = data.draw(st.one_of(st.integers(1, min(P, 130)), st.integers(1, P)))
    op = engines.flink_operator_index(np.arange(P), P, n)
    assert (np.diff(op) >= 0).all() and op[0] == 0 and op[-1] == n - 1
    groups = np.bincount(op, minlength=n)
    for i in data.draw(st.lists(st.integers(0, n - 1), max_size=8)) + [0, n - 1]:
        first, last = ref.key_group_range(i, P, n)
        assert np.flatnonzero(op == i).tolist() == list(range(first, last + 1))
    assert set(groups.tolist()) <= {P // n, -(-P // n)}
    assert int((groups > P // n).sum()) == P % n
    summ = make("flink", n, max_parallelism=P).summary()
    assert (summ["key_groups_per_operator_min"], summ["key_groups_per_operator_max"]) == (groups.min(), groups.max())


def test_flink_operator_ranges_example():  # 8: P = 128, n = 10: eight own 13, two own 12
    groups = np.bincount(engines.flink_operator_index(np.arange(128), 128, 10), minlength=10)
    assert sorted(groups.tolist()) == [12, 12] + [13] * 8


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([1, 2, 10, 128, 1000, 32768]), st.sampled_from(FORMATS), st.sampled_from(APIS),
       st.lists(int64s, min_size=1, max_size=40))
def test_flink_n_equal_p_gives_the_key_group(P, fmt, api, keys):  # 9
    out = make("flink", P, max_parallelism=P, key_format=fmt, api=api).route(make_batch(range(len(keys)), keys))
    assert out.tolist() == [ref.key_group(k, P, fmt, api) for k in keys]
    assert out.tolist() == [engines.flink_key_group(k, P, fmt, api) for k in keys]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**31 - 63), min_size=1, max_size=60), st.integers(1, 300), st.data())
def test_pyflink_long_key_routes_as_the_java_key_62_above(keys, n, data):
    """PyFlink's key_by on a long k hashes Row.of(k), whose hashCode is Long.hashCode(k) + 62:
    for 0 <= k <= 2^31 - 63 (where Long.hashCode(k) = k), api "pyflink" routes k exactly as Java's
    keyBy routes k + 62, for any n and max parallelism; and both APIs give every operator the
    same key groups (the summary does not depend on the API)."""
    P = data.draw(st.sampled_from([0, n, max(n, 128), 32768]))
    seq = range(len(keys))
    py = make("flink", n, max_parallelism=P, api="pyflink")
    java = make("flink", n, max_parallelism=P)
    assert py.route(make_batch(seq, keys)).tolist() == java.route(make_batch(seq, [k + 62 for k in keys])).tolist()
    assert py.summary() == java.summary()


def test_the_apis_route_differently():
    """The row's 62 moves keys: on 10^4 dense keys at n = 8 most keys change operator, the
    per-worker loads differ, and each API keeps its total."""
    keys = np.arange(10_000)
    a = make("flink", 8).route(make_batch(keys, keys))
    b = make("flink", 8, api="pyflink").route(make_batch(keys, keys))
    assert (a != b).mean() > 0.8
    assert np.bincount(a, minlength=8).tolist() != np.bincount(b, minlength=8).tolist()
    assert np.bincount(b, minlength=8).sum() == 10_000


def test_flink_min_int_maps_to_zero():  # 9
    code = ref.murmur_block_preimage(1 << 31)
    assert ref.m3int(code, 0) == -(1 << 31)
    assert engines.flink_murmur_hash(code) == 0 == ref.flink_murmur_hash(code)
    k = code  # 0 <= code < 2^32, so Long.hashCode(k) = code
    assert engines.java_long_hash(k) == ref.i32(code)
    for n in (1, 7, 128):
        assert make("flink", n, max_parallelism=128).route(make_batch([0], [k])).tolist() == [0]
        # PyFlink's Row.of(k - 62) hashes to that code too; kg 0 is operator 0 whatever n
        assert make("flink", n, max_parallelism=128, api="pyflink").route(make_batch([0], [k - 62])).tolist() == [0]
    assert engines.engine_hashes("flink", [k - 62], "long", "pyflink").tolist() == [0]
    # the neighbours are ordinary negatives, negated
    for target in ((1 << 31) + 1, 0xFFFFFFFF):
        c = ref.murmur_block_preimage(target)
        assert engines.flink_murmur_hash(c) == (1 << 32) - target


@settings(max_examples=60, deadline=None)
@given(st.integers(-2**31, 2**32 - 1))
def test_flink_murmur_never_negative(code):  # 9
    mh = engines.flink_murmur_hash(code)
    assert 0 <= mh < 2**31 and mh == abs(ref.m3int(code, 0)) % 2**31


# --------------------------------------------------------------------------------------------
# spec 7, Kafka (item 10) and Spark (items 11-12)

def test_kafka_serialisation_is_big_endian():  # 10
    k = 0x0102030405060708
    assert engines.engine_hashes("kafka", [k])[0] == engines.kafka_murmur2(bytes([1, 2, 3, 4, 5, 6, 7, 8]))
    assert engines.engine_hashes("kafka", [k])[0] != engines.kafka_murmur2(bytes([8, 7, 6, 5, 4, 3, 2, 1]))
    assert engines.engine_hashes("kafka", [-2])[0] == engines.kafka_murmur2(b"\xff" * 7 + b"\xfe")


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(FORMATS), st.integers(1, 1000), st.lists(int64s, min_size=1, max_size=50))
def test_kafka_masks_the_sign_bit(fmt, n, keys):  # 10
    h = engines.engine_hashes("kafka", keys, fmt)
    out = make("kafka", n, key_format=fmt).route(make_batch(range(len(keys)), keys))
    assert out.tolist() == [(x & 0x7FFFFFFF) % n for x in h.tolist()]


def test_kafka_mask_differs_from_abs():  # 10
    h = engines.engine_hashes("kafka", [0])[0]  # -522759933 (spec 5.2)
    assert h < 0 and (h & 0x7FFFFFFF) % 10 == 5 != abs(h) % 10 == 3
    assert make("kafka", 10).route(make_batch([0], [0])).tolist() == [5]
    assert ref.to_positive(-1) == 2**31 - 1 and ref.to_positive(-2**31) == 0


def test_spark_hash_of_a_row():  # 11: SELECT hash('Spark', array(123), 2) = -1321691492
    h = engines.spark_murmur3_bytes(b"Spark", 42)
    h = engines.spark_murmur3_int(123, h)  # an array folds its elements
    h = engines.spark_murmur3_int(2, h)
    assert h == -1321691492
    assert ref.m3int(2, ref.m3int(123, ref.m3bytes_legacy(b"Spark", 42))) == -1321691492


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.one_of(st.integers(1, 300), st.integers(1, 10**6)))
def test_spark_rdd_long_is_k_mod_n(k, n):  # 12
    assert make("spark-hash", n).route(make_batch([0], [k])).tolist() == [k % n]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["spark-hash", "spark-sql"]), st.sampled_from(FORMATS),
       st.one_of(st.integers(1, 300), st.integers(1, 10**6)), st.integers(1, 2**31 - 1),
       st.lists(int64s, min_size=1, max_size=50))
def test_spark_non_negative_remainders(name, fmt, n, big_n, keys):  # 12
    h = engines.engine_hashes(name, keys, fmt).tolist()
    out = make(name, n, key_format=fmt).route(make_batch(range(len(keys)), keys)).tolist()
    assert out == [x % n for x in h] == [ref.non_negative_mod(x, n) for x in h] == [ref.pmod(x, n) for x in h]
    assert all(0 <= w < n for w in out)
    assert [ref.non_negative_mod(x, big_n) for x in h] == [ref.pmod(x, big_n) for x in h] == [x % big_n for x in h]


def test_spark_rdd_zero_and_minus_one_collide():  # 12
    for n in range(1, 60):
        assert make("spark-hash", n).route(make_batch([0, 1], [0, -1])).tolist() == [0, 0]
    assert ref.non_negative_mod(-7, 5) == 3 and ref.tmod(-7, 5) == -2 and ref.pmod(-2**31, 7) == (-2**31) % 7


# --------------------------------------------------------------------------------------------
# spec 5.2, the derived reference values

FLINK_TABLE = [  # n, P, groups/op (min, max), ops with max, ceil(P/n)/P - 1/n, relative
    (5, 128, 25, 26, 3, 0.003125, 0.016), (10, 128, 12, 13, 8, 0.0015625, 0.016),
    (20, 128, 6, 7, 8, 0.0046875, 0.094), (50, 128, 2, 3, 28, 0.0034375, 0.172),
    (100, 256, 2, 3, 56, 0.00171875, 0.172),
]


@pytest.mark.parametrize("n,P,lo,hi,at_max,excess,relative", FLINK_TABLE)
def test_flink_table(n, P, lo, hi, at_max, excess, relative):
    obj = make("flink", n)
    assert obj.summary() == {"max_parallelism": P, "key_groups_per_operator_min": lo, "key_groups_per_operator_max": hi}
    groups = np.bincount(engines.flink_operator_index(np.arange(P), P, n), minlength=n)
    assert int((groups == hi).sum()) == at_max
    assert groups.max() / P - 1 / n == pytest.approx(excess)
    assert round(n * excess, 3) == relative


# k | Long.hashCode | String.hashCode(DEC) | Flink murmurHash(LONG) | kg (P=128) | Flink w LONG, DEC |
# Kafka murmur2(BE8), w | Kafka murmur2(DEC), w | Spark RDD w LONG, DEC | SQL hashLong, w | SQL hash(DEC), w
ENGINE_TABLE = [
    (0, 0, 48, 593689054, 94, 7, 6, -522759933, 5, 971027396, 6, 0, 8, -1670924195, 5, 735846435, 5),
    (1, 1, 49, 68075478, 86, 6, 4, 2100486060, 0, -1993445489, 9, 1, 9, -1712319331, 9, 1625004744, 4),
    (-1, 0, 1444, 593689054, 94, 7, 4, 185950397, 7, 1531782027, 7, 0, 4, -939490007, 3, -2030830193, 7),
    (42, 42, 1662, 1134849565, 29, 2, 1, 506863552, 2, 417700972, 2, 2, 2, 1316951768, 8, -2140846185, 5),
    (1000000007, 1000000007, 1223331622, 62410208, 96, 7, 0, 275239672, 2, -998404006, 2, 7, 2, 1785468933, 3,
     -1849580908, 2),
]


@pytest.mark.parametrize("row", ENGINE_TABLE, ids=lambda r: f"k={r[0]}")
def test_engine_vectors_n10(row):
    (k, lh, sh, fmh, kg, fw_l, fw_d, ka_l, kw_l, ka_d, kw_d, rw_l, rw_d, sq_l, sw_l, sq_d, sw_d) = row
    # the module's wrappers and the reference
    for impl in (engines, None):
        if impl is None:
            got = (ref.long_hash_code(k), ref.string_hash_code(ref.dec(k)), ref.engine_hash("flink", k),
                   ref.key_group(k, 128), ref.murmur2(ref.be8(k)), ref.murmur2(ref.utf8_dec(k)),
                   ref.spark_sql_hash(k, "long"), ref.spark_sql_hash(k, "string"))
        else:
            got = (engines.java_long_hash(k), engines.java_string_hash(k), engines.flink_murmur_hash(lh),
                   engines.flink_key_group(k, 128), engines.engine_hashes("kafka", [k], "long")[0],
                   engines.engine_hashes("kafka", [k], "string")[0], engines.spark_murmur3_long(k, 42),
                   engines.engine_hashes("spark-sql", [k], "string")[0])
        assert tuple(int(x) for x in got) == (lh, sh, fmh, kg, ka_l, ka_d, sq_l, sq_d)
    # the strategies at n = 10, and the reference's routes
    expect = {"flink": (fw_l, fw_d), "kafka": (kw_l, kw_d), "spark-hash": (rw_l, rw_d), "spark-sql": (sw_l, sw_d)}
    for name, ws in expect.items():
        for fmt, w in zip(FORMATS, ws):
            assert make(name, 10, key_format=fmt).route(make_batch([0], [k])).tolist() == [w], (name, fmt)
            assert ref.partition(name, k, 10, fmt) == w


def test_other_reference_values():
    assert engines.kafka_murmur2(b"") == 275646681 == ref.murmur2(b"")
    for k in (2**31, -2**63, 2**63 - 1):
        assert engines.java_long_hash(k) == -2**31 == ref.long_hash_code(k)
        assert engines.engine_hashes("flink", [k])[0] == 1718298732
        assert engines.flink_key_group(k, 128) == 108 == ref.key_group(k, 128)
    assert engines.java_string_hash(-2**63) == ref.string_hash_code("-9223372036854775808")
