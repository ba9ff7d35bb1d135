"""The engines' default key partitioners: Kafka, Flink key groups, Spark RDD and Spark SQL.

Implements section 2.2-2.4 of ``practice.spec.md`` ("spec"): the partitioner a user of each
engine gets by default for a keyed stream, as a stateless pure function of the key's bytes.  They
are key grouping (every key on one worker) with the engines' own hash bits, so a replay shows
what each engine really does with a workload: Flink's key groups, Kafka's ``murmur2``, Spark RDD's
``hashCode`` on dense ids (spec 1.2).  "spec A4" is entry A4 of the spec's section 6.

Keys and their serialisations (spec 0, 1.3)
-------------------------------------------
A tuple's key is a dense id ``k`` (int64).  When the engine has bound the keys' values
(:meth:`~skewbench.grouping.base.Strategy.bind_key_values`, a trace of numeric ids), key ``k`` is
hashed as the value ``key_values[k]``; otherwise as ``k`` itself.  The value ``v`` is serialised
as the engines would see a Java key:

* ``key_format="long"`` (default): a Java ``long`` ``v``: ``Long.hashCode`` for Flink and Spark
  RDD, Kafka's ``LongSerializer`` (8 bytes, most significant first, two's complement), Spark
  SQL's ``LongType`` column (``Murmur3_x86_32.hashLong``);
* ``key_format="string"``: its decimal text ``DEC(v)`` (leading ``-`` for negatives, no ``+``, no
  leading zeros) as a Java ``String``: ``String.hashCode`` for Flink and Spark RDD, its UTF-8
  bytes (ASCII) for Kafka's ``StringSerializer`` and Spark SQL's ``StringType`` column.  The
  digits are produced inside the kernel from the int64; no Python string per tuple.

Keys that are any text (not an integer's) are hashed the same way by
:func:`engine_text_hashes` (``skewbench advise``): a Java ``String`` from its UTF-8 bytes, whose
``hashCode`` runs over its UTF-16 code units (a character beyond U+FFFF as its surrogate pair);
:func:`engine_workers` then gives each hash its worker as the strategies do.  The strategies
themselves hash integer key values only.

Strategies
----------
``kafka``
    ``(murmur2(bytes) AND 0x7fffffff) mod n`` (lines KA1-KA3): ``toPositive`` masks the sign bit,
    it is not ``abs`` (spec A6).  ``murmur2`` reads bytes unsigned, little-endian words, seed
    ``0x9747b28c``, the final multiply of the tail only when there is a tail.
``flink``
    ``KeyGroupStreamPartitioner`` (lines FL1-FL7): ``mh = murmurHash(hashCode)`` -- one full
    MurmurHash3 x86_32 block of the 4-byte code, seed 0 (``mixK1``, ``mixH1``, length 4,
    ``fmix``), then ``mh`` if ``mh >= 0``, ``-mh`` if ``mh != -2^31`` and ``0`` for ``-2^31``
    (spec A4) -- key group ``kg = mh mod P``, operator ``floor(kg n / P)``.  ``P`` is the max
    parallelism: ``max_parallelism = 0`` applies Flink's default rule for ``n``,
    ``min(max(roundUpPow2(n + n div 2), 128), 32768)``; an explicit value must satisfy
    ``n <= P <= 32768`` (spec 2.2 preconditions; a setting that the job would refuse is refused
    here).  A ``Long`` or ``String`` key; ``api`` says whose ``hashCode`` is hashed:

    * ``"datastream"`` (default): Java's DataStream ``keyBy``, the key's own (spec 2.2, A5);
    * ``"pyflink"``: PyFlink's ``key_by(selector, key_type=Types.LONG() or Types.STRING())``.
      PyFlink pairs each record with its key in a row and keys that stream by
      ``Types.ROW([key_type])`` (``pyflink/datastream/data_stream.py``, ``DataStream.key_by``);
      the Java key selector it uses (``KeyByKeySelector`` of ``flink-python``) returns a new
      one-field ``Row`` holding the key, so Flink hashes that row's ``hashCode``.  In Flink 2.3
      (``Row.hashCode`` and ``RowUtils.deepHashCodeRow`` of ``flink-core``, read from the
      jars' classes) that is ``31 * kind`` (``INSERT``: 0) plus the hash of the fields array,
      ``31 * 1 + h(field)``, where a field that is not itself a row, array, map or list counts
      as the one-element array holding it, ``h = 31 * 1 + hashCode``: in all ``62 + hashCode``
      of the ``Long`` or ``String`` (32-bit, wrapping), checked against Flink's JVM and a real
      PyFlink job in ``tests/integration/test_flink_engine.py``.  The key group and operator
      then follow as above.  PyFlink's default key type (no ``key_type``: pickled bytes) and
      Table API / SQL keys (binary rows) hash otherwise and are out of scope.
``spark-hash``
    Spark RDD's ``HashPartitioner`` (line SP1): ``nonNegativeMod(hashCode, n)`` of the boxed
    ``java.lang.Long`` (not Scala's ``##``, which differs for negatives that fit an int) or of the
    ``String``.  For ``0 <= v < 2^31`` it is ``v mod n``; ``0`` and ``-1`` collide (spec A7).
``spark-sql``
    Spark SQL's shuffle (``HashPartitioning``, lines SP2-SP4): ``pmod(Murmur3Hash(v, 42), n)``.
    ``LongType``: ``Murmur3_x86_32.hashLong`` (two 4-byte blocks, low word first, length 8);
    ``StringType``: Spark's legacy byte hash (``hashUnsafeBytes``): full little-endian words, then
    *each* remaining byte, sign-extended, as a block of its own, length = byte count (spec A7;
    the sign extension never matters for decimal text).  PySpark's own RDD hash is out of scope.

``nonNegativeMod`` (truncated remainder plus ``n`` when negative) and ``pmod`` are both the
non-negative remainder for ``n > 0``; the kernels compute it without signs as
``(h + c) mod n`` with ``c`` the least multiple of ``n`` that is ``>= 2^31``, the reference with
Java's truncated ``%`` as the spec writes it.  All 32-bit arithmetic wraps.

Choices
-------
* No hash seed: the engines have none, so the strategies are not ``seeded``; the cell's seed
  changes nothing (spec 1.2).
* No null keys (Spark's null -> partition 0) and no keyless records (Kafka's sticky partitioner):
  every tuple has a key (spec 2.3, 2.4).
* Spark SQL partitions on the one key column (with several columns the hash would fold, spec
  2.4); :func:`spark_murmur3_int` / :func:`spark_murmur3_bytes` with a running seed give the
  folded hash (the spec's ``hash('Spark', array(123), 2)`` vector).
* Bound key values are hashed once, when bound, into a table of workers indexed by key id, which
  routing then reads (a key's worker is a pure function of its value, so this changes nothing
  but the speed).  They must cover every key id routed (``0 <= k < len(key_values)``); a tuple
  outside raises :class:`~skewbench.errors.SkewbenchError` and the batch leaves no trace in the
  state.  Without bound values the kernel hashes every tuple's key.

State and statistics
--------------------
Routing is stateless; like every router the strategy keeps the local loads ``l_j[w]`` per source
(spec 2.0; :meth:`local_loads`).  ``flink``'s ``summary()`` reports ``max_parallelism`` (``P`` in
use) and ``key_groups_per_operator_min`` / ``_max`` (``floor(P/n)`` and ``ceil(P/n)``, counted
from the operator ranges); the others report nothing.  ``describe_params()`` gives ``flink``'s
resolved ``max_parallelism`` (and its ``api``).

Helpers for tests and figures (plain functions, the same compiled code as the strategies):
:func:`java_long_hash`, :func:`java_string_hash`, :func:`kafka_murmur2`, :func:`engine_hashes`,
:func:`engine_text_hashes` (text keys: a Java ``String``), :func:`engine_workers` (hashes to
workers), :func:`flink_murmur_hash`, :func:`flink_row_hash` (PyFlink's row key),
:func:`flink_default_max_parallelism`, :func:`flink_key_group`, :func:`flink_operator_index`,
:func:`spark_murmur3_int`, :func:`spark_murmur3_long`, :func:`spark_murmur3_bytes`.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np
from skewbench.jit import njit

from skewbench.errors import SkewbenchError
from skewbench.grouping.base import check_number
from skewbench.grouping.strategies.routed import Routed
from skewbench.kernel.sources import source_start, source_step

__all__ = [
    "Kafka", "Flink", "SparkHash", "SparkSQL", "KEY_FORMATS", "ENGINES", "FLINK_APIS",
    "java_long_hash", "java_string_hash", "kafka_murmur2", "engine_hashes", "engine_text_hashes",
    "engine_workers", "flink_murmur_hash", "flink_row_hash",
    "flink_default_max_parallelism", "flink_key_group", "flink_operator_index",
    "spark_murmur3_int", "spark_murmur3_long", "spark_murmur3_bytes",
]

#: the key serialisations, by ``key_format`` value (kernel code)
KEY_FORMATS = {"long": 0, "string": 1}
#: the engines, by strategy name (kernel code)
ENGINES = {"kafka": 0, "flink": 1, "spark-hash": 2, "spark-sql": 3}
_KAFKA, _FLINK, _RDD, _SQL = 0, 1, 2, 3
_FLINK_ROW = 4  # kernel code of flink with api "pyflink": the key's hashCode through a one-field Row's
_LONG, _STRING = 0, 1
#: Flink's key as the job sees it, by ``api`` value of the ``flink`` strategy (kernel engine code):
#: the key itself (DataStream ``keyBy`` in Java), or the key in a one-field ``Row`` (PyFlink ``key_by``)
FLINK_APIS = {"datastream": _FLINK, "pyflink": _FLINK_ROW}

FLINK_MIN_MAX_PARALLELISM = 1 << 7  # Flink's lower bound of the default max parallelism
FLINK_MAX_MAX_PARALLELISM = 1 << 15  # Flink's upper bound of any max parallelism
SPARK_SQL_SEED = 42  # Spark SQL's Murmur3Hash default seed

_DEC = 20  # bytes of the longest decimal text of an int64, "-9223372036854775808"

_M32 = np.uint64(0xFFFFFFFF)
_SIGN = np.int64(0x80000000)
_POS = np.uint64(0x7FFFFFFF)
_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U5 = np.uint64(5)
_U10 = np.uint64(10)
_U31 = np.uint64(31)
_ZERO_CH = np.uint64(48)  # '0'
_MINUS_CH = np.uint64(45)  # '-'
_C1 = np.uint64(0xCC9E2D51)  # MurmurHash3 x86_32 constants (spec 1.4)
_C2 = np.uint64(0x1B873593)
_C3 = np.uint64(0xE6546B64)
_F1 = np.uint64(0x85EBCA6B)
_F2 = np.uint64(0xC2B2AE35)
_KM = np.uint64(0x5BD1E995)  # Kafka murmur2 (spec 2.3)
_KSEED = np.uint64(0x9747B28C)
_B8 = np.uint64(8)
_B13 = np.uint64(13)
_B15 = np.uint64(15)
_B16 = np.uint64(16)
_B24 = np.uint64(24)
_B32 = np.uint64(32)
_BYTE = np.uint64(0xFF)
_SEXT = np.uint64(0xFFFFFF00)
_B6 = np.uint64(6)  # UTF-8 decoding into UTF-16 code units (Java String.hashCode of a text key)
_B10 = np.uint64(10)
_B12 = np.uint64(12)
_B18 = np.uint64(18)
_LOW3 = np.uint64(0x07)
_LOW4 = np.uint64(0x0F)
_LOW5 = np.uint64(0x1F)
_LOW6 = np.uint64(0x3F)
_LOW10 = np.uint64(0x3FF)
_UTF8_2 = np.uint64(0x80)  # a lead byte below this is ASCII, below 0xE0 starts 2 bytes, 0xF0 3
_UTF8_3 = np.uint64(0xE0)
_UTF8_4 = np.uint64(0xF0)
_PLANE1 = np.uint64(0x10000)
_HI_SURROGATE = np.uint64(0xD800)
_LO_SURROGATE = np.uint64(0xDC00)
# Row.hashCode of a row of kind INSERT (kind byte 0) with one field f: 31 * 0 + the fields' array
# hash 31 * 1 + h(f), where a field that is no row, array, map or list hashes as the one-element
# array [f], 31 * 1 + f.hashCode() (module docstring, "flink")
_ROW_INSERT = 0
_ROW_OFFSET = np.uint64((31 * _ROW_INSERT + 31 * 1 + 31 * 1) & 0xFFFFFFFF)  # 62


# --------------------------------------------------------------------------------------------
# numba kernels: 32-bit values are uint64 in [0, 2^32), masked after every operation that can
# carry out of 32 bits.  The one-line helpers are plain kernels, which LLVM inlines; the loops
# over bytes and the routing loop are inlined by numba (inline="always"), which LLVM would not
# always do: together about 1.5x faster than no numba inlining, and 6 s of compilation instead of
# 22 s with every helper inlined by numba.

@njit(cache=True)
def _i32(x):
    """The 32-bit value ``x`` read as two's complement (int64 in [-2^31, 2^31))."""
    return (np.int64(x) ^ _SIGN) - _SIGN


@njit(cache=True)
def _rotl32(x, r):
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & _M32


@njit(cache=True)
def _mix_k1(x):
    return (_rotl32((x * _C1) & _M32, 15) * _C2) & _M32


@njit(cache=True)
def _mix_h1(h, x):
    return (_rotl32(h ^ x, 13) * _U5 + _C3) & _M32


@njit(cache=True)
def _fmix(h, length):
    h ^= np.uint64(length)
    h ^= h >> _B16
    h = (h * _F1) & _M32
    h ^= h >> _B13
    h = (h * _F2) & _M32
    h ^= h >> _B16
    return h


@njit(cache=True)
def _long_hash(v):
    """Java ``Long.hashCode(v)``: low 32 bits of ``v XOR (v >>> 32)``."""
    u = np.uint64(v)
    return (u ^ (u >> _B32)) & _M32


@njit(cache=True)
def _magnitude(v):
    """``|v|`` as uint64 (exact for -2^63 too)."""
    return _U0 - np.uint64(v) if v < 0 else np.uint64(v)


@njit(inline="always", cache=True)
def _string_hash(v):
    """Java ``String.hashCode`` of ``DEC(v)``, summed from the last digit: ``sum c_i 31^(L-1-i)``."""
    mag = _magnitude(v)
    h = _U0
    p = _U1
    while True:
        h = (h + (_ZERO_CH + mag % _U10) * p) & _M32
        p = (p * _U31) & _M32
        mag = mag // _U10
        if mag == _U0:
            break
    if v < 0:
        h = (h + _MINUS_CH * p) & _M32
    return h


@njit(inline="always", cache=True)
def _dec_bytes(v, buf):
    """Write ``DEC(v)`` (ASCII) at the end of ``buf`` (``_DEC`` bytes); return its first index."""
    mag = _magnitude(v)
    pos = _DEC
    while True:
        pos -= 1
        buf[pos] = np.uint8(_ZERO_CH + mag % _U10)
        mag = mag // _U10
        if mag == _U0:
            break
    if v < 0:
        pos -= 1
        buf[pos] = np.uint8(_MINUS_CH)
    return pos


@njit(cache=True)
def _word_le(buf, o):
    return (np.uint64(buf[o]) | (np.uint64(buf[o + 1]) << _B8) | (np.uint64(buf[o + 2]) << _B16)
            | (np.uint64(buf[o + 3]) << _B24))


@njit(cache=True)
def _murmur2_word(h, x):
    x = (x * _KM) & _M32
    x ^= x >> _B24
    x = (x * _KM) & _M32
    return ((h * _KM) & _M32) ^ x


@njit(cache=True)
def _murmur2_final(h):
    h ^= h >> _B13
    h = (h * _KM) & _M32
    return h ^ (h >> _B15)


@njit(inline="always", cache=True)
def _murmur2(buf, start, length):
    """Kafka's ``Utils.murmur2`` of ``buf[start:start + length]`` (32-bit value)."""
    h = _KSEED ^ np.uint64(length)
    words = length >> 2
    for i in range(words):
        h = _murmur2_word(h, _word_le(buf, start + 4 * i))
    o = start + 4 * words
    r = length & 3
    if r == 3:
        h ^= np.uint64(buf[o + 2]) << _B16
    if r >= 2:
        h ^= np.uint64(buf[o + 1]) << _B8
    if r >= 1:
        h ^= np.uint64(buf[o])
        h = (h * _KM) & _M32
    return _murmur2_final(h)


@njit(cache=True)
def _bswap32(x):
    return (((x & _BYTE) << _B24) | (((x >> _B8) & _BYTE) << _B16) | (((x >> _B16) & _BYTE) << _B8)
            | (x >> _B24))


@njit(cache=True)
def _murmur2_be8(v):
    """``murmur2`` of Kafka's ``LongSerializer`` bytes of ``v`` (big-endian: the little-endian
    words are the byte-swapped high and low halves)."""
    u = np.uint64(v)
    h = _KSEED ^ _B8
    h = _murmur2_word(h, _bswap32(u >> _B32))
    h = _murmur2_word(h, _bswap32(u & _M32))
    return _murmur2_final(h)


@njit(cache=True)
def _m3_int(x, seed):
    """Murmur3_x86_32 of one 4-byte block ``x`` (``hashInt``)."""
    return _fmix(_mix_h1(seed, _mix_k1(x)), 4)


@njit(cache=True)
def _m3_long(v, seed):
    """Murmur3_x86_32 ``hashLong``: the low word, then the high word, length 8."""
    u = np.uint64(v)
    h = _mix_h1(seed, _mix_k1(u & _M32))
    h = _mix_h1(h, _mix_k1(u >> _B32))
    return _fmix(h, 8)


@njit(inline="always", cache=True)
def _m3_bytes(buf, start, length, seed):
    """Spark's legacy ``hashUnsafeBytes``: little-endian words, then each remaining byte
    sign-extended as a block of its own."""
    h = seed
    words = length >> 2
    for i in range(words):
        h = _mix_h1(h, _mix_k1(_word_le(buf, start + 4 * i)))
    for o in range(start + 4 * words, start + length):
        b = np.uint64(buf[o])
        if b >= np.uint64(0x80):
            b |= _SEXT
        h = _mix_h1(h, _mix_k1(b))
    return _fmix(h, length)


@njit(cache=True)
def _flink_murmur(code):
    """Flink ``MathUtils.murmurHash(code)``: one block, seed 0, then the sign rule of spec A4."""
    mh = _i32(_m3_int(code, _U0))
    if mh >= 0:
        return mh
    if mh != -_SIGN:
        return -mh
    return np.int64(0)


@njit(cache=True)
def _row_hash(code):
    """``Row.hashCode`` of a one-field ``INSERT`` row whose field's ``hashCode`` is ``code``."""
    return (code + _ROW_OFFSET) & _M32


@njit(cache=True)
def _engine_hash(v, engine, fmt, buf):
    """The engine's hash of key value ``v`` (int64): Kafka ``murmur2`` and Spark's ``hashCode``
    and ``Murmur3Hash`` as signed 32-bit values, Flink's ``murmurHash`` (>= 0) of the key's
    ``hashCode`` (``_FLINK``) or of its one-field row's (``_FLINK_ROW``)."""
    if engine == _KAFKA:
        if fmt == _LONG:
            return _i32(_murmur2_be8(v))
        start = _dec_bytes(v, buf)
        return _i32(_murmur2(buf, start, _DEC - start))
    if engine == _SQL:
        if fmt == _LONG:
            return _i32(_m3_long(v, np.uint64(SPARK_SQL_SEED)))
        start = _dec_bytes(v, buf)
        return _i32(_m3_bytes(buf, start, _DEC - start, np.uint64(SPARK_SQL_SEED)))
    code = _long_hash(v) if fmt == _LONG else _string_hash(v)
    if engine == _FLINK:
        return _flink_murmur(code)
    if engine == _FLINK_ROW:
        return _flink_murmur(_row_hash(code))
    return _i32(code)


@njit(cache=True)
def _engine_worker(h, engine, n, p, off):
    """The partition of hash ``h`` (from :func:`_engine_hash`) among ``n``; ``p``: Flink's P;
    ``off``: a multiple of ``n`` >= 2^31 (so ``h + off >= 0``).  Unsigned arithmetic only."""
    un = np.uint64(n)
    if engine == _KAFKA:
        return np.int64((np.uint64(h) & _POS) % un)  # toPositive, then mod
    if engine == _FLINK or engine == _FLINK_ROW:
        up = np.uint64(p)
        return np.int64((np.uint64(h) % up) * un // up)  # key group (h >= 0), then its operator
    # nonNegativeMod / pmod: the non-negative remainder, as (h + off) mod n
    return np.int64(np.uint64(h + off) % un)


@njit(cache=True)
def _offset(n):
    """The least multiple of ``n`` that is >= 2^31."""
    return (_SIGN + n - 1) // n * n


@njit(inline="always", cache=True)
def _route_loop(seq, key, sources, n, engine, fmt, p, load, out):
    buf = np.zeros(_DEC, dtype=np.uint8)
    off = _offset(n)
    t, j = source_start()
    for i in range(seq.shape[0]):
        t, j = source_step(seq, i, t, j, sources)
        w = _engine_worker(_engine_hash(key[i], engine, fmt, buf), engine, n, p, off)
        load[j, w] += 1
        out[i] = w


@njit(cache=True)
def _route_engine(seq, key, sources, n, engine, fmt, p, load, out):
    """Route a batch, hashing each key value.  One inlined copy of the loop per (engine, format)
    with both as constants, so that the compiler drops the other engines' branches (about 1.5x
    faster than one loop that tests them per tuple)."""
    if engine == _KAFKA:
        if fmt == _LONG:
            _route_loop(seq, key, sources, n, _KAFKA, _LONG, p, load, out)
        else:
            _route_loop(seq, key, sources, n, _KAFKA, _STRING, p, load, out)
    elif engine == _FLINK:
        if fmt == _LONG:
            _route_loop(seq, key, sources, n, _FLINK, _LONG, p, load, out)
        else:
            _route_loop(seq, key, sources, n, _FLINK, _STRING, p, load, out)
    elif engine == _FLINK_ROW:
        if fmt == _LONG:
            _route_loop(seq, key, sources, n, _FLINK_ROW, _LONG, p, load, out)
        else:
            _route_loop(seq, key, sources, n, _FLINK_ROW, _STRING, p, load, out)
    elif engine == _RDD:
        if fmt == _LONG:
            _route_loop(seq, key, sources, n, _RDD, _LONG, p, load, out)
        else:
            _route_loop(seq, key, sources, n, _RDD, _STRING, p, load, out)
    elif fmt == _LONG:
        _route_loop(seq, key, sources, n, _SQL, _LONG, p, load, out)
    else:
        _route_loop(seq, key, sources, n, _SQL, _STRING, p, load, out)


@njit(cache=True)
def _route_table(seq, key, table, sources, load, out):
    """Route a batch through the per-key-id worker table of the bound key values; return -1, or
    the index of the first key id outside the table (then the batch's load updates are undone)."""
    size = np.uint64(table.shape[0])
    t, j = source_start()
    for i in range(seq.shape[0]):
        k = key[i]
        if np.uint64(k) >= size:
            t, j = source_start()
            for q in range(i):
                t, j = source_step(seq, q, t, j, sources)
                load[j, out[q]] -= 1
            return np.int64(i)
        t, j = source_step(seq, i, t, j, sources)
        w = table[k]
        load[j, w] += 1
        out[i] = w
    return np.int64(-1)


@njit(cache=True)
def _worker_table(values, engine, fmt, n, p, out):
    """The worker of every key value (the table of :func:`_route_table`)."""
    buf = np.zeros(_DEC, dtype=np.uint8)
    off = _offset(n)
    for i in range(values.shape[0]):
        out[i] = _engine_worker(_engine_hash(values[i], engine, fmt, buf), engine, n, p, off)


@njit(cache=True)
def _hash_values(values, engine, fmt, out):
    buf = np.zeros(_DEC, dtype=np.uint8)
    for i in range(values.shape[0]):
        out[i] = _engine_hash(values[i], engine, fmt, buf)


@njit(cache=True)
def _workers_of(hashes, engine, n, p, out):
    off = _offset(n)
    for i in range(hashes.shape[0]):
        out[i] = _engine_worker(hashes[i], engine, n, p, off)


@njit(inline="always", cache=True)
def _java_text_hash(buf, start, length):
    """Java ``String.hashCode`` of the UTF-8 text ``buf[start:start + length]`` (valid UTF-8):
    ``h = 31 h + u`` over its UTF-16 code units ``u``, a code point above U+FFFF counting as its
    surrogate pair, as Java stores it (32-bit value)."""
    h = _U0
    o = start
    end = start + length
    while o < end:
        b = np.uint64(buf[o])
        if b < _UTF8_2:
            cp = b
            o += 1
        elif b < _UTF8_3:
            cp = ((b & _LOW5) << _B6) | (np.uint64(buf[o + 1]) & _LOW6)
            o += 2
        elif b < _UTF8_4:
            cp = ((b & _LOW4) << _B12) | ((np.uint64(buf[o + 1]) & _LOW6) << _B6) | (np.uint64(buf[o + 2]) & _LOW6)
            o += 3
        else:
            cp = (((b & _LOW3) << _B18) | ((np.uint64(buf[o + 1]) & _LOW6) << _B12)
                  | ((np.uint64(buf[o + 2]) & _LOW6) << _B6) | (np.uint64(buf[o + 3]) & _LOW6))
            o += 4
        if cp >= _PLANE1:
            cp -= _PLANE1
            h = (h * _U31 + (_HI_SURROGATE + (cp >> _B10))) & _M32
            cp = _LO_SURROGATE + (cp & _LOW10)
        h = (h * _U31 + cp) & _M32
    return h


@njit(cache=True)
def _hash_texts(data, offsets, engine, out):
    """The engine's hash (as :func:`_engine_hash`) of each text key ``data[offsets[i]:offsets[i + 1]]``
    (UTF-8): Kafka ``murmur2`` of the bytes (``StringSerializer``), Spark SQL's legacy byte hash
    (``StringType``), Java ``String.hashCode`` for Spark RDD and, through ``murmurHash``, Flink
    (through its one-field row's ``hashCode`` too for ``_FLINK_ROW``)."""
    for i in range(offsets.shape[0] - 1):
        start = offsets[i]
        length = offsets[i + 1] - start
        if engine == _KAFKA:
            out[i] = _i32(_murmur2(data, start, length))
        elif engine == _SQL:
            out[i] = _i32(_m3_bytes(data, start, length, np.uint64(SPARK_SQL_SEED)))
        elif engine == _FLINK:
            out[i] = _flink_murmur(_java_text_hash(data, start, length))
        elif engine == _FLINK_ROW:
            out[i] = _flink_murmur(_row_hash(_java_text_hash(data, start, length)))
        else:
            out[i] = _i32(_java_text_hash(data, start, length))


@njit(cache=True)
def _murmur2_of(buf):
    return _i32(_murmur2(buf, 0, buf.shape[0]))


@njit(cache=True)
def _m3_bytes_of(buf, seed):
    return _i32(_m3_bytes(buf, 0, buf.shape[0], np.uint64(seed) & _M32))


@njit(cache=True)
def _m3_int_of(x, seed):
    return _i32(_m3_int(np.uint64(x) & _M32, np.uint64(seed) & _M32))


@njit(cache=True)
def _m3_long_of(v, seed):
    return _i32(_m3_long(v, np.uint64(seed) & _M32))


@njit(cache=True)
def _flink_murmur_of(code):
    return _flink_murmur(np.uint64(code) & _M32)


@njit(cache=True)
def _row_hash_of(code):
    return _i32(_row_hash(np.uint64(code) & _M32))


# --------------------------------------------------------------------------------------------
# plain helpers (tests, figures): the same compiled functions as the strategies

def _int64_array(keys: Iterable[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(keys)
    if arr.dtype == object or (arr.size and arr.dtype.kind not in "iu"):
        raise SkewbenchError(f"keys must be integers within int64, got dtype {arr.dtype}")
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) >= 1 << 63:
        raise SkewbenchError("keys must be integers within int64, got values >= 2^63")
    return np.ascontiguousarray(arr, dtype=np.int64).reshape(-1)


def _key_format(who: str, fmt: Any) -> int:
    if fmt not in KEY_FORMATS:
        raise SkewbenchError(f"{who}: key_format must be one of {sorted(KEY_FORMATS)}, got {fmt!r}")
    return KEY_FORMATS[fmt]


def _flink_api(api: Any) -> int:
    if api not in FLINK_APIS:
        raise SkewbenchError(f"flink: api must be one of {sorted(FLINK_APIS)}, got {api!r}")
    return FLINK_APIS[api]


def _engine_code(engine: str, api: str) -> int:
    """The kernel's code of ``engine``; ``api`` (:data:`FLINK_APIS`) chooses Flink's key."""
    if engine not in ENGINES:
        raise SkewbenchError(f"engine must be one of {sorted(ENGINES)}, got {engine!r}")
    if engine == "flink":
        return _flink_api(api)
    if api != "datastream":
        raise SkewbenchError(f"{engine}: api applies to flink only, got {api!r}")
    return ENGINES[engine]


def engine_hashes(engine: str, keys: Iterable[int] | np.ndarray, key_format: str = "long",
                  api: str = "datastream") -> np.ndarray:
    """The hash ``engine`` (``"kafka"``, ``"flink"``, ``"spark-hash"``, ``"spark-sql"``) computes
    for each key value (int64 array): Kafka ``murmur2`` (before ``toPositive``), Flink
    ``murmurHash(hashCode)`` (>= 0), Spark RDD's Java ``hashCode``, Spark SQL's ``Murmur3Hash``
    (seed 42), each of the ``long`` or ``string`` serialisation.  Flink's ``api`` (the strategy's
    parameter): ``"datastream"`` hashes the key's ``hashCode``, ``"pyflink"`` its one-field
    ``Row``'s (:func:`flink_row_hash`); the other engines take ``"datastream"`` only."""
    code = _engine_code(engine, api)
    values = _int64_array(keys)
    out = np.empty(values.size, dtype=np.int64)
    _hash_values(values, np.int64(code), np.int64(_key_format(engine, key_format)), out)
    return out


def engine_text_hashes(engine: str, texts: Sequence[str] | tuple[np.ndarray, np.ndarray],
                       api: str = "datastream") -> np.ndarray:
    """The hash ``engine`` computes for each text key, a Java ``String`` (its UTF-8 bytes for
    Kafka's ``StringSerializer`` and a Spark SQL ``StringType`` column, its UTF-16 code units
    for ``String.hashCode``): the same values as :func:`engine_hashes` with
    ``key_format="string"`` where the text is an integer's decimal text.  ``texts``: strings, or
    their UTF-8 bytes concatenated (uint8) with ``offsets`` (int64, one more than the keys, key
    ``i`` at ``data[offsets[i]:offsets[i + 1]]``), which must be valid UTF-8.  ``api`` as for
    :func:`engine_hashes`."""
    code = _engine_code(engine, api)
    if isinstance(texts, tuple):
        data, offsets = (np.ascontiguousarray(a, dtype=t) for a, t in zip(texts, (np.uint8, np.int64)))
        if offsets.ndim != 1 or offsets.size < 1 or offsets[0] < 0 or np.any(np.diff(offsets) < 0) \
                or offsets[-1] > data.size:
            raise SkewbenchError("text offsets must be non-decreasing positions within the data")
    else:
        encoded = [str(t).encode("utf-8") for t in texts]
        data = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
    out = np.empty(offsets.size - 1, dtype=np.int64)
    _hash_texts(data, offsets, np.int64(code), out)
    return out


def engine_workers(engine: str, hashes: np.ndarray, n: int, max_parallelism: int = 0) -> np.ndarray:
    """The worker (of ``n``) each hash of :func:`engine_hashes` or :func:`engine_text_hashes`
    goes to: what the engine's strategy computes for those keys (Flink: key group ``h mod P``,
    then its operator; ``max_parallelism`` 0 is Flink's default rule for ``n``, otherwise it
    must lie in ``[n, 32768]``; the others ignore it)."""
    if engine not in ENGINES:
        raise SkewbenchError(f"engine must be one of {sorted(ENGINES)}, got {engine!r}")
    check_number(f"{engine}: workers", n, 1, None, integer=True)
    P = 1
    if engine == "flink":
        check_number("flink: max_parallelism", max_parallelism, 0, FLINK_MAX_MAX_PARALLELISM, integer=True)
        P = int(max_parallelism) or flink_default_max_parallelism(n)
        if not n <= P:
            raise SkewbenchError(f"flink: max_parallelism must be an integer in [n, {FLINK_MAX_MAX_PARALLELISM}] = "
                                 f"[{n}, {FLINK_MAX_MAX_PARALLELISM}] for n = {n} workers, got {P}")
    h = np.ascontiguousarray(hashes, dtype=np.int64).reshape(-1)
    out = np.empty(h.size, dtype=np.int64)
    _workers_of(h, np.int64(ENGINES[engine]), np.int64(n), np.int64(P), out)
    return out


def java_long_hash(k: int) -> int:
    """Java ``Long.hashCode(k)`` (signed 32-bit)."""
    return int(engine_hashes("spark-hash", [k], "long")[0])


def java_string_hash(k: int) -> int:
    """Java ``String.hashCode`` of the decimal text of ``k`` (signed 32-bit)."""
    return int(engine_hashes("spark-hash", [k], "string")[0])


def kafka_murmur2(data: bytes) -> int:
    """Kafka ``Utils.murmur2(data)`` (signed 32-bit)."""
    return int(_murmur2_of(np.frombuffer(bytes(data), dtype=np.uint8).copy()))


def flink_murmur_hash(code: int) -> int:
    """Flink ``MathUtils.murmurHash(code)`` of a 32-bit ``hashCode`` (a value in [0, 2^31))."""
    return int(_flink_murmur_of(np.int64(int(code) & 0xFFFFFFFF)))


def flink_row_hash(code: int) -> int:
    """Flink ``Row.hashCode`` of a one-field row of kind ``INSERT`` whose field's ``hashCode`` is
    the 32-bit ``code``: ``62 + code`` (signed 32-bit, wrapping), PyFlink's ``key_by`` key."""
    return int(_row_hash_of(np.int64(int(code) & 0xFFFFFFFF)))


def flink_default_max_parallelism(n: int) -> int:
    """Flink's default max parallelism for an operator of parallelism ``n`` (spec 2.2)."""
    check_number("flink: workers", n, 1, None, integer=True)
    x = int(n) + int(n) // 2
    pow2 = 1 << (x - 1).bit_length()
    return min(max(pow2, FLINK_MIN_MAX_PARALLELISM), FLINK_MAX_MAX_PARALLELISM)


def flink_key_group(k: int, max_parallelism: int, key_format: str = "long", api: str = "datastream") -> int:
    """The key group of key value ``k`` among ``max_parallelism`` groups (``api`` as for
    :func:`engine_hashes`)."""
    check_number("flink: max_parallelism", max_parallelism, 1, FLINK_MAX_MAX_PARALLELISM, integer=True)
    return int(engine_hashes("flink", [k], key_format, api)[0]) % int(max_parallelism)


def flink_operator_index(key_group: int | np.ndarray, max_parallelism: int, n: int) -> Any:
    """The operator (of ``n``) that owns ``key_group`` (of ``max_parallelism``): ``kg n // P``."""
    kg = np.asarray(key_group, dtype=np.int64)
    out = np.empty(kg.size, dtype=np.int64)
    _workers_of(kg.reshape(-1), np.int64(_FLINK), np.int64(n), np.int64(max_parallelism), out)
    return int(out[0]) if kg.ndim == 0 else out.reshape(kg.shape)


def spark_murmur3_int(x: int, seed: int = SPARK_SQL_SEED) -> int:
    """Spark ``Murmur3_x86_32.hashInt(x, seed)`` (signed 32-bit)."""
    return int(_m3_int_of(np.int64(int(x) & 0xFFFFFFFF), np.int64(int(seed) & 0xFFFFFFFF)))


def spark_murmur3_long(v: int, seed: int = SPARK_SQL_SEED) -> int:
    """Spark ``Murmur3_x86_32.hashLong(v, seed)`` (signed 32-bit)."""
    return int(_m3_long_of(np.int64(v), np.int64(int(seed) & 0xFFFFFFFF)))


def spark_murmur3_bytes(data: bytes, seed: int = SPARK_SQL_SEED) -> int:
    """Spark's legacy ``Murmur3_x86_32.hashUnsafeBytes`` of ``data`` (what SQL ``hash()`` gives a
    string column), signed 32-bit."""
    buf = np.frombuffer(bytes(data), dtype=np.uint8).copy()
    return int(_m3_bytes_of(buf, np.int64(int(seed) & 0xFFFFFFFF)))


# --------------------------------------------------------------------------------------------
# strategies
#
# route_cost: measured with benchmarks/bench_grouping.py's setting (10^7 Zipf(1.0) tuples over
# 10^4 keys, n = 5, s = 5, batches of 2^20, one core), scaled to KG's 0.1 by the time ratio to KG
# in the same process, for the default key_format "long" without bound values: Kafka 1.5x KG,
# Flink 2.2x, Spark RDD 0.9x, Spark SQL 1.9x.  key_format "string" costs 3-5.5x KG (the decimal
# digits); with bound key values every engine reads a table, 0.85x KG.

_FORMAT_DOC = ("How the key value is serialised before hashing: 'long' (default) hashes it as a "
               "Java long, 'string' as the UTF-8 bytes or Java String of its decimal text.")


class _Engine(Routed):
    """Common part: the key format, bound key values and the one routing kernel."""

    relaxation = "whole"
    seeded = False
    uses_key_values = True
    # every engine hashes a key as a long or as its text: both are timed and compiled ahead of time
    bench_variants = {"string": {"key_format": "string"}}
    aot_params = {"numeric": ("key_format=long,string",)}
    _engine = -1

    def _setup(self) -> None:
        super()._setup()
        self._fmt = np.int64(_key_format(self.name, self.params["key_format"]))
        self._p = np.int64(1)
        self._table: np.ndarray | None = None

    def bind_key_values(self, values: np.ndarray | None) -> None:
        """Hash tuple key ``k`` as ``values[k]``: every value is hashed here, once, into a
        worker table indexed by key id, which :meth:`route` then reads."""
        super().bind_key_values(values)
        self._table = None
        if self.key_values is not None:
            table = np.empty(self.key_values.size, dtype=np.int64)
            _worker_table(self.key_values, np.int64(self._engine), self._fmt, np.int64(self.workers),
                          self._p, table)
            self._table = table

    def _kernel(self, seq, key, out):
        if self._table is None:
            _route_engine(seq, key, np.int64(self.sources), np.int64(self.workers), np.int64(self._engine),
                          self._fmt, self._p, self._load, out)
            return
        bad = _route_table(seq, key, self._table, np.int64(self.sources), self._load, out)
        if bad >= 0:
            raise SkewbenchError(f"{self.name}: key id {int(key[bad])} (seq {int(seq[bad])}) has no bound "
                                 f"key value: the bound values cover ids [0, {self._table.size})")


class Kafka(_Engine):
    name = "kafka"
    description = "Kafka's default partitioner: toPositive(murmur2(serialised key)) mod n"
    defaults: dict[str, Any] = {"key_format": "long"}
    param_docs = {"key_format": _FORMAT_DOC}
    bench_target = 2
    engine_case = (5, 3, {})
    route_cost = 0.15
    _engine = _KAFKA


class Flink(_Engine):
    name = "flink"
    description = "Flink keyBy: murmurHash(hashCode) mod max parallelism gives a key group, ranges of groups per operator"
    defaults: dict[str, Any] = {"key_format": "long", "max_parallelism": 0, "api": "datastream"}
    param_docs = {
        "key_format": _FORMAT_DOC,
        "max_parallelism": ("Flink's max parallelism P, the number of key groups: 0 (default) "
                            "applies Flink's rule min(max(roundUpPow2(n + n // 2), 128), 32768) "
                            "for n workers, otherwise an integer with n <= P <= 32768."),
        "api": ("Which API keys the stream: 'datastream' (default) is Java's DataStream keyBy, hashing "
                "the key's own hashCode; 'pyflink' is PyFlink's key_by, which wraps the key in a "
                "one-field Row whose hashCode is 62 + the key's (32-bit)."),
    }
    # PyFlink's key_by (the key in a one-field Row), on a long and on a string key
    exercise = [{"api": "pyflink"}, {"api": "pyflink", "key_format": "string", "max_parallelism": 1000}]
    bench_target = 2
    engine_case = (7, 2, {"key_format": "string"})
    route_cost = 0.2
    _engine = _FLINK

    def _setup(self) -> None:
        super()._setup()
        p, n = self.params, self.workers
        self._engine = _flink_api(p["api"])
        check_number("flink: max_parallelism", p["max_parallelism"], 0, FLINK_MAX_MAX_PARALLELISM, integer=True)
        P = int(p["max_parallelism"]) or flink_default_max_parallelism(n)
        if n > P and int(p["max_parallelism"]):
            raise SkewbenchError(f"flink: max_parallelism must be an integer in [n, {FLINK_MAX_MAX_PARALLELISM}] = "
                                 f"[{n}, {FLINK_MAX_MAX_PARALLELISM}] for n = {n} workers, got {P}")
        if n > P:
            raise SkewbenchError(f"flink: n = {n} workers exceed Flink's largest max parallelism "
                                 f"{FLINK_MAX_MAX_PARALLELISM}: max_parallelism must be an integer in "
                                 f"[n, {FLINK_MAX_MAX_PARALLELISM}] or 0 (the default rule), got 0")
        p["max_parallelism"] = P
        self._p = np.int64(P)

    def summary(self) -> dict[str, float]:
        P, n = int(self._p), self.workers
        groups = np.bincount(flink_operator_index(np.arange(P), P, n), minlength=n)
        return {"max_parallelism": float(P), "key_groups_per_operator_min": float(groups.min()),
                "key_groups_per_operator_max": float(groups.max())}


class SparkHash(_Engine):
    name = "spark-hash"
    description = "Spark RDD HashPartitioner: nonNegativeMod(Java hashCode of the key, n)"
    defaults: dict[str, Any] = {"key_format": "long"}
    param_docs = {"key_format": _FORMAT_DOC}
    bench_target = 2
    engine_case = (5, 2, {})
    route_cost = 0.1
    _engine = _RDD


class SparkSQL(_Engine):
    name = "spark-sql"
    description = "Spark SQL shuffle: pmod(Murmur3 x86_32 hash of the key column with seed 42, n)"
    defaults: dict[str, Any] = {"key_format": "long"}
    param_docs = {"key_format": _FORMAT_DOC}
    bench_target = 2
    engine_case = (6, 3, {})
    route_cost = 0.2
    _engine = _SQL
