"""Plain-Python reference of the engines' partitioners (practice.spec.md 1.3, 1.4, 2.2-2.4), used
only by tests; and of the key PyFlink's ``key_by`` hands Flink, a one-field ``Row`` (not in the
spec: Flink 2.3's ``Row.hashCode``, written out here field by field as ``RowUtils`` composes it).

One tuple at a time with Python ints, every 32-bit result masked by hand (``& 0xFFFFFFFF``) and
read as two's complement where Java would; Java's truncated remainder ``tmod`` is written out.
The serialisations are built as real ``bytes``/``str``: ``BE8`` with ``int.to_bytes`` (big-endian,
signed), ``DEC`` with ``str(k)``.  It shares nothing with ``skewbench.grouping.strategies.engines``.
"""

from __future__ import annotations

M32 = 0xFFFFFFFF
ENGINES = ("kafka", "flink", "spark-hash", "spark-sql")
FORMATS = ("long", "string")
APIS = ("datastream", "pyflink")  # Flink's key: the key itself, or PyFlink's one-field Row holding it
ROW_KIND_INSERT = 0  # RowKind.INSERT.toByteValue()


def i32(x: int) -> int:
    """``x`` mod 2^32 read as two's complement."""
    x &= M32
    return x - (1 << 32) if x >= 1 << 31 else x


def tmod(a: int, b: int) -> int:
    """Java/Scala ``a % b``: the truncated remainder, with the sign of ``a``."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def rotl32(x: int, r: int) -> int:
    x &= M32
    return ((x << r) | (x >> (32 - r))) & M32


# ---- serialisations (spec 0)

def dec(k: int) -> str:
    return str(k)


def be8(k: int) -> bytes:
    return k.to_bytes(8, "big", signed=True)


def utf8_dec(k: int) -> bytes:
    return dec(k).encode("utf-8")


# ---- Java hashCodes (spec 1.3)

def long_hash_code(k: int) -> int:
    u = k & 0xFFFFFFFFFFFFFFFF
    return i32(u ^ (u >> 32))


def string_hash_code(s: str) -> int:
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & M32
    return i32(h)


def hash_code(k: int, key_format: str) -> int:
    return long_hash_code(k) if key_format == "long" else string_hash_code(dec(k))


def java_array_hash(element_hashes: list[int]) -> int:
    """``Arrays.hashCode`` / ``Arrays.deepHashCode`` of an array whose elements hash as given."""
    h = 1
    for e in element_hashes:
        h = (31 * h + e) & M32
    return i32(h)


def row_hash_code(field_hashes: list[int], kind: int = ROW_KIND_INSERT) -> int:
    """Flink 2.3 ``Row.hashCode`` (``RowUtils.deepHashCodeRow``) of a positional row of plain
    fields (no nested row, array, map or list): ``31 * kind`` plus the hash of its fields array,
    where each field counts as ``Arrays.deepHashCode`` of the one-element array holding it."""
    return i32(31 * kind + java_array_hash([java_array_hash([h]) for h in field_hashes]))


def flink_key_hash_code(k: int, key_format: str, api: str = "datastream") -> int:
    """The ``hashCode`` Flink's key-group assignment hashes: the key's (Java ``keyBy``), or that of
    PyFlink's ``key_by`` key, ``Row.of(key)``."""
    code = hash_code(k, key_format)
    return code if api == "datastream" else row_hash_code([code])


# ---- MurmurHash3 x86_32 steps (spec 1.4)

def mix_k1(x: int) -> int:
    x = (x * 0xCC9E2D51) & M32
    x = rotl32(x, 15)
    return (x * 0x1B873593) & M32


def mix_h1(h: int, x: int) -> int:
    h = rotl32((h ^ x) & M32, 13)
    return (h * 5 + 0xE6546B64) & M32


def fmix(h: int, length: int) -> int:
    h = (h ^ length) & M32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    h ^= h >> 16
    return h


def m3int(x: int, seed: int) -> int:
    return i32(fmix(mix_h1(seed & M32, mix_k1(x & M32)), 4))


def m3long(v: int, seed: int) -> int:
    u = v & 0xFFFFFFFFFFFFFFFF
    h = mix_h1(seed & M32, mix_k1(u & M32))
    h = mix_h1(h, mix_k1(u >> 32))
    return i32(fmix(h, 8))


def m3bytes_legacy(b: bytes, seed: int) -> int:
    h = seed & M32
    aligned = len(b) - len(b) % 4
    for o in range(0, aligned, 4):
        h = mix_h1(h, mix_k1(int.from_bytes(b[o:o + 4], "little")))
    for o in range(aligned, len(b)):
        byte = b[o] - 256 if b[o] >= 128 else b[o]  # Java byte, sign-extended
        h = mix_h1(h, mix_k1(byte & M32))
    return i32(fmix(h, len(b)))


# ---- Kafka (spec 2.3)

def murmur2(b: bytes) -> int:
    m = 0x5BD1E995
    length = len(b)
    h = (0x9747B28C ^ length) & M32
    for o in range(0, length - length % 4, 4):
        x = b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)
        x = (x * m) & M32
        x ^= x >> 24
        x = (x * m) & M32
        h = (h * m) & M32
        h ^= x
    o = length - length % 4
    r = length % 4
    if r == 3:
        h ^= b[o + 2] << 16
    if r >= 2:
        h ^= b[o + 1] << 8
    if r >= 1:
        h ^= b[o]
        h = (h * m) & M32
    h ^= h >> 13
    h = (h * m) & M32
    h ^= h >> 15
    return i32(h)


def to_positive(h: int) -> int:
    return h & 0x7FFFFFFF


def kafka_bytes(k: int, key_format: str) -> bytes:
    return be8(k) if key_format == "long" else utf8_dec(k)


def kafka_partition(k: int, n: int, key_format: str = "long") -> int:
    return to_positive(murmur2(kafka_bytes(k, key_format))) % n


# ---- Flink (spec 2.2)

def round_up_pow2(x: int) -> int:
    p = 1
    while p < x:
        p *= 2
    return p


def default_max_parallelism(n: int) -> int:
    return min(max(round_up_pow2(n + n // 2), 128), 32768)


def flink_murmur_hash(code: int) -> int:
    mh = m3int(code, 0)
    if mh >= 0:
        return mh
    if mh != -(1 << 31):
        return -mh
    return 0


def murmur_block_preimage(target: int) -> int:
    """The 32-bit code whose one-block MurmurHash3 (seed 0, length 4) is ``target``: every step
    is a bijection of 32-bit words, inverted here."""
    M = 1 << 32

    def unxorshift(h, r):
        x = h
        for _ in range(32 // r + 1):
            x = h ^ (x >> r)
        return x & M32

    h = target & M32
    h = unxorshift(h, 16)
    h = (h * pow(0xC2B2AE35, -1, M)) % M
    h = unxorshift(h, 13)
    h = (h * pow(0x85EBCA6B, -1, M)) % M
    h = unxorshift(h, 16)
    h ^= 4
    h = ((h - 0xE6546B64) * pow(5, -1, M)) % M
    h = rotl32(h, 32 - 13)  # mixH1 with h = 0: rotl13 of k1
    h = (h * pow(0x1B873593, -1, M)) % M
    h = rotl32(h, 32 - 15)
    return (h * pow(0xCC9E2D51, -1, M)) % M


def key_group(k: int, P: int, key_format: str = "long", api: str = "datastream") -> int:
    return flink_murmur_hash(flink_key_hash_code(k, key_format, api)) % P


def operator_index(kg: int, P: int, n: int) -> int:
    return kg * n // P


def key_group_range(i: int, P: int, n: int) -> tuple[int, int]:
    """Operator ``i``'s key groups, first and last (spec 2.2): ``[ceil(iP/n), floor(((i+1)P-1)/n)]``."""
    return (i * P + n - 1) // n, ((i + 1) * P - 1) // n


def flink_partition(k: int, n: int, P: int, key_format: str = "long", api: str = "datastream") -> int:
    return operator_index(key_group(k, P, key_format, api), P, n)


# ---- Spark (spec 2.4)

def non_negative_mod(x: int, mod: int) -> int:
    r = tmod(x, mod)
    return r + mod if r < 0 else r


def pmod(a: int, n: int) -> int:
    return tmod(tmod(a, n) + n, n)


def spark_rdd_partition(k: int, n: int, key_format: str = "long") -> int:
    return non_negative_mod(hash_code(k, key_format), n)


def spark_sql_hash(k: int, key_format: str = "long") -> int:
    return m3long(k, 42) if key_format == "long" else m3bytes_legacy(utf8_dec(k), 42)


def spark_sql_partition(k: int, n: int, key_format: str = "long") -> int:
    return pmod(spark_sql_hash(k, key_format), n)


def engine_hash(engine: str, k: int, key_format: str = "long", api: str = "datastream") -> int:
    """What ``engines.engine_hashes`` returns for one key value."""
    if engine == "kafka":
        return murmur2(kafka_bytes(k, key_format))
    if engine == "flink":
        return flink_murmur_hash(flink_key_hash_code(k, key_format, api))
    if engine == "spark-hash":
        return hash_code(k, key_format)
    return spark_sql_hash(k, key_format)


def partition(engine: str, k: int, n: int, key_format: str = "long", max_parallelism: int = 0,
              api: str = "datastream") -> int:
    if engine == "kafka":
        return kafka_partition(k, n, key_format)
    if engine == "flink":
        return flink_partition(k, n, max_parallelism or default_max_parallelism(n), key_format, api)
    if engine == "spark-hash":
        return spark_rdd_partition(k, n, key_format)
    return spark_sql_partition(k, n, key_format)


class Reference:
    """The routing driver: tuple ``seq`` at source ``seq % s``, which routes key ``k`` (the value
    ``key_values[k]`` when values are bound) with the engine's pure function and counts
    ``l[j][w]``."""

    def __init__(self, engine: str, n: int, s: int, key_format: str = "long", max_parallelism: int = 0,
                 key_values: list[int] | None = None, api: str = "datastream"):
        self.engine, self.n, self.s = engine, n, s
        self.key_format, self.P, self.api = key_format, max_parallelism, api
        self.key_values = key_values
        self.l = [[0] * n for _ in range(s)]

    def route(self, seq: list[int], keys: list[int]) -> list[int]:
        out = []
        for t, k in zip(seq, keys):
            j = t % self.s
            v = k if self.key_values is None else self.key_values[k]
            w = partition(self.engine, v, self.n, self.key_format, self.P, self.api)
            self.l[j][w] += 1
            out.append(w)
        return out
