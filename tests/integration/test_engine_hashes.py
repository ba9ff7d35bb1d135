"""Known answers from the engines themselves for ``skewbench.grouping.strategies.engines``.

* Kafka: the ``murmur2`` vectors of Kafka's own ``UtilsTest.testMurmur2``
  (``clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java``; practice.spec.md
  5.1 P4).  Kafka's jars are not installed here, so these facts are the engine's answer.
* Java: ``java.lang.Long.hashCode`` and ``String.hashCode`` of the keys, and the bytes of
  Kafka's serialisations (``ByteBuffer.putLong``, big-endian like ``LongSerializer``;
  ``String.getBytes(UTF_8)`` like ``StringSerializer``), computed by the real JVM: a small program
  written, compiled (``javac``) and run at test time.
* Spark (a real SparkSession): SQL ``hash()`` of ``LongType``, ``StringType`` and ``BinaryType``
  columns, ``pmod(hash(k), n)`` and the partition a real ``repartition(n, k)`` shuffle puts each
  row in, the spec's ``hash('Spark', array(123), 2)`` vector, RDD ``HashPartitioner.getPartition``
  of a real ``java.lang.Long``, and ``Murmur3_x86_32.hashInt(h, 0)``, the block Flink's
  ``MathUtils.murmurHash`` runs (same constants; Flink's jars are not installed here).

Each answer is compared with the kernels (the module's helpers and the strategies' routes) for
the same keys, and with the plain-Python reference.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from skewbench.grouping.strategies import engines
from skewbench.grouping.base import Batch
from tests.reference import engines_ref as ref

#: keys with negatives, values beyond 2^32 and the int64 extremes, plus random int64s
KEYS = [0, 1, -1, 2, -2, 9, 10, -10, 42, 99, 100, 999, 1000, 12345, -12345, 1000000007, 2**31 - 1, 2**31,
        -2**31, -2**31 - 1, 2**32 - 1, 2**32, 2**32 + 5, -2**32, -2**32 - 1, 2**40 + 3, -2**40, 10**18,
        -10**18, 2**63 - 1, -2**63, -2**63 + 1]
KEYS += np.random.default_rng(2024).integers(-2**63, 2**63 - 1, 24, dtype=np.int64, endpoint=True).tolist()
KEYS += np.random.default_rng(7).integers(-2**35, 2**35, 12).tolist()
PARTITIONS = (1, 5, 7, 10, 128)


def route(cls, n, keys, **params):
    keys = np.asarray(keys, dtype=np.int64)
    return cls(n, 1, 0, **params).route(Batch(np.arange(len(keys)), keys, np.zeros(len(keys)),
                                              np.ones(len(keys)))).tolist()


# --------------------------------------------------------------------------------------------
# Kafka's UtilsTest.testMurmur2

KAFKA_VECTORS = [
    (b"21", -973932308), (b"foobar", -790332482), (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971), (bytes([ord("a"), ord("b"), ord("c")]), 479470107),
]


@pytest.mark.parametrize("data,expected", KAFKA_VECTORS, ids=[v[0][:12].decode() for v in KAFKA_VECTORS])
def test_kafka_murmur2_vectors(data, expected):
    assert engines.kafka_murmur2(data) == expected
    assert ref.murmur2(data) == expected


def test_kafka_route_of_a_decimal_key_uses_the_vector():
    """Key 21 under key_format "string" is the bytes "21" of the first vector."""
    h = -973932308
    assert engines.engine_hashes("kafka", [21], "string").tolist() == [h]
    for n in PARTITIONS:
        assert route(engines.Kafka, n, [21], key_format="string") == [(h & 0x7FFFFFFF) % n]


# --------------------------------------------------------------------------------------------
# the JVM

JAVA_SOURCE = """
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

public class EngineHashes {
    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(String.format("%02x", x & 0xff));
        return s.toString();
    }
    public static void main(String[] args) {
        for (String a : args) {
            long k = Long.parseLong(a);
            Long boxed = Long.valueOf(k);
            String dec = Long.toString(k);
            byte[] be8 = ByteBuffer.allocate(8).putLong(k).array();
            System.out.println(k + " " + boxed.hashCode() + " " + dec.hashCode() + " " + dec + " "
                + hex(be8) + " " + hex(dec.getBytes(StandardCharsets.UTF_8)));
        }
    }
}
"""


@pytest.fixture(scope="module")
def jvm(tmp_path_factory):
    """{key: (Long.hashCode, String.hashCode of its text, its text, BE8 bytes, UTF-8 bytes)}."""
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        pytest.skip("no javac/java on PATH: the JVM's own hash codes cannot be computed")
    d = tmp_path_factory.mktemp("java")
    (d / "EngineHashes.java").write_text(JAVA_SOURCE)
    subprocess.run([javac, "-d", str(d), str(d / "EngineHashes.java")], check=True, capture_output=True, timeout=120)
    done = subprocess.run([java, "-cp", str(d), "EngineHashes", *map(str, KEYS)], check=True, capture_output=True,
                          text=True, timeout=120)
    out = {}
    for line in done.stdout.splitlines():
        k, lh, sh, dec, be8, utf8 = line.split()
        out[int(k)] = (int(lh), int(sh), dec, bytes.fromhex(be8), bytes.fromhex(utf8))
    assert sorted(out) == sorted(set(KEYS))
    return out


def test_java_hash_codes(jvm):
    lh = [jvm[k][0] for k in KEYS]
    sh = [jvm[k][1] for k in KEYS]
    assert [engines.java_long_hash(k) for k in KEYS] == lh
    assert [engines.java_string_hash(k) for k in KEYS] == sh
    assert engines.engine_hashes("spark-hash", KEYS, "long").tolist() == lh
    assert engines.engine_hashes("spark-hash", KEYS, "string").tolist() == sh
    assert [ref.long_hash_code(k) for k in KEYS] == lh
    assert [ref.string_hash_code(ref.dec(k)) for k in KEYS] == sh
    for n in PARTITIONS:  # the RDD partition of the JVM's hash codes (nonNegativeMod)
        assert route(engines.SparkHash, n, KEYS) == [ref.non_negative_mod(h, n) for h in lh]
        assert route(engines.SparkHash, n, KEYS, key_format="string") == [ref.non_negative_mod(h, n) for h in sh]


def test_java_serialisations(jvm):
    """The kernels serialise keys as the JVM does: Kafka's murmur2 and Spark's byte hash of the
    JVM's own bytes equal the kernels' hashes computed from the int64."""
    assert [ref.dec(k) for k in KEYS] == [jvm[k][2] for k in KEYS]
    assert [ref.be8(k) for k in KEYS] == [jvm[k][3] for k in KEYS]
    assert [ref.utf8_dec(k) for k in KEYS] == [jvm[k][4] for k in KEYS]
    assert engines.engine_hashes("kafka", KEYS, "long").tolist() == [engines.kafka_murmur2(jvm[k][3]) for k in KEYS]
    assert engines.engine_hashes("kafka", KEYS, "string").tolist() == [engines.kafka_murmur2(jvm[k][4]) for k in KEYS]
    assert engines.engine_hashes("spark-sql", KEYS, "string").tolist() == \
        [engines.spark_murmur3_bytes(jvm[k][4], 42) for k in KEYS]


def test_flink_from_java_hash_codes(jvm):
    """Flink hashes key.hashCode(): the JVM's codes through murmurHash give the kernels' hashes."""
    for fmt, col in (("long", 0), ("string", 1)):
        codes = [jvm[k][col] for k in KEYS]
        assert engines.engine_hashes("flink", KEYS, fmt).tolist() == [ref.flink_murmur_hash(c) for c in codes]


# --------------------------------------------------------------------------------------------
# Spark

@pytest.fixture(scope="module")
def spark_answers(spark):
    """SQL hash() of the keys as LongType and StringType columns, pmod(hash, n), and each row's
    partition after a real repartition(n, column) shuffle."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType([StructField("k", LongType(), False), StructField("s", StringType(), False)])
    df = spark.createDataFrame([(k, str(k)) for k in KEYS], schema)
    cols = [F.col("k"), F.hash("k").alias("hk"), F.hash("s").alias("hs")]
    cols += [F.pmod(F.hash("k"), F.lit(n)).alias(f"pk{n}") for n in PARTITIONS]
    cols += [F.pmod(F.hash("s"), F.lit(n)).alias(f"ps{n}") for n in PARTITIONS]
    rows = {r["k"]: r.asDict() for r in df.select(*cols).collect()}
    adaptive = spark.conf.get("spark.sql.adaptive.enabled")
    spark.conf.set("spark.sql.adaptive.enabled", "false")  # keep the n shuffle partitions as they are
    try:
        shuffled = {}
        for c in ("k", "s"):
            part = df.repartition(7, c).select("k", F.spark_partition_id().alias("p")).collect()
            shuffled[c, 7] = {r["k"]: r["p"] for r in part}
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", adaptive)
    return rows, shuffled


@pytest.mark.spark
def test_spark_sql_hash(spark_answers):
    rows, shuffled = spark_answers
    hk = [rows[k]["hk"] for k in KEYS]
    hs = [rows[k]["hs"] for k in KEYS]
    assert engines.engine_hashes("spark-sql", KEYS, "long").tolist() == hk
    assert engines.engine_hashes("spark-sql", KEYS, "string").tolist() == hs
    assert [engines.spark_murmur3_long(k, 42) for k in KEYS] == hk
    assert [ref.spark_sql_hash(k, "long") for k in KEYS] == hk
    assert [ref.spark_sql_hash(k, "string") for k in KEYS] == hs
    for n in PARTITIONS:
        assert route(engines.SparkSQL, n, KEYS) == [rows[k][f"pk{n}"] for k in KEYS]
        assert route(engines.SparkSQL, n, KEYS, key_format="string") == [rows[k][f"ps{n}"] for k in KEYS]
    for (c, n), part in shuffled.items():
        fmt = "long" if c == "k" else "string"
        assert route(engines.SparkSQL, n, KEYS, key_format=fmt) == [part[k] for k in KEYS], (c, n)


@pytest.mark.spark
def test_spark_sql_row_hash_vector(spark):
    (h,) = spark.sql("SELECT hash('Spark', array(123), 2) AS h").collect()[0]
    assert h == -1321691492
    assert engines.spark_murmur3_int(2, engines.spark_murmur3_int(123, engines.spark_murmur3_bytes(b"Spark"))) == h


@pytest.mark.spark
def test_spark_legacy_byte_hash(spark):
    """SQL hash() of a BinaryType column is the legacy byte hash, tail bytes sign-extended."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    rng = np.random.default_rng(5)
    blobs = [bytes(rng.integers(0, 256, size=L, dtype=np.uint8)) for L in range(0, 24)] + [b"\x80", b"\xff\xfe\xfd"]
    df = spark.createDataFrame([(bytearray(b),) for b in blobs], StructType([StructField("b", BinaryType())]))
    got = [r[0] for r in df.selectExpr("hash(b)").collect()]
    assert [engines.spark_murmur3_bytes(b, 42) for b in blobs] == got
    assert [ref.m3bytes_legacy(b, 42) for b in blobs] == got


@pytest.mark.spark
def test_spark_hash_partitioner_with_java_longs(spark):
    """HashPartitioner(n).getPartition of a java.lang.Long: py4j would send a small Python int as
    an Integer (whose hashCode differs for negatives), so the Long is boxed in the JVM
    (LongStream.of(k).boxed().toArray()) and passed through reflection."""
    sc = spark.sparkContext
    jvm, gateway = sc._jvm, sc._gateway
    arg_types = gateway.new_array(jvm.java.lang.Class, 1)
    arg_types[0] = jvm.java.lang.Class.forName("java.lang.Object")
    get_partition = jvm.java.lang.Class.forName("org.apache.spark.HashPartitioner").getMethod("getPartition", arg_types)
    for n in PARTITIONS:
        partitioner = jvm.org.apache.spark.HashPartitioner(n)
        got = [get_partition.invoke(partitioner, jvm.java.util.stream.LongStream.of(k).boxed().toArray()) for k in KEYS]
        assert route(engines.SparkHash, n, KEYS) == got, n
        assert [ref.spark_rdd_partition(k, n) for k in KEYS] == got
        if n > 1:  # what an Integer -1 would have given: Integer.hashCode(-1) = -1
            assert partitioner.getPartition(-1) == n - 1 != got[KEYS.index(-1)] == 0


def spark_hash_int(spark):
    """Spark's ``Murmur3_x86_32.hashInt(int, int)``, called through reflection: after some Spark
    jobs in the same session, py4j's static member lookup on that class answered "does not exist"
    (seen in the full suite), while a Method from Class.forName keeps working."""
    jvm, gateway = spark.sparkContext._jvm, spark.sparkContext._gateway
    int_type = jvm.java.lang.Class.forName("java.lang.Integer").getField("TYPE").get(None)
    types = gateway.new_array(jvm.java.lang.Class, 2)
    types[0] = types[1] = int_type
    method = jvm.java.lang.Class.forName("org.apache.spark.unsafe.hash.Murmur3_x86_32").getMethod("hashInt", types)

    def hash_int(code: int, seed: int) -> int:
        args = gateway.new_array(jvm.java.lang.Object, 2)
        args[0], args[1] = int(code), int(seed)
        return method.invoke(None, args)

    return hash_int


@pytest.mark.spark
def test_flink_murmur_block_is_spark_hash_int(spark):
    """Flink's murmurHash(code) is Murmur3_x86_32.hashInt(code, 0) with negatives negated and
    -2^31 mapped to 0 (practice.spec.md A4)."""
    hash_int = spark_hash_int(spark)
    for fmt in ("long", "string"):
        codes = engines.engine_hashes("spark-hash", KEYS, fmt).tolist()  # the Java hashCodes
        block = [hash_int(c, 0) for c in codes]
        flink = [b if b >= 0 else (-b if b != -2**31 else 0) for b in block]
        assert engines.engine_hashes("flink", KEYS, fmt).tolist() == flink
        for n, P in ((5, 128), (10, 128), (100, 256), (7, 1000)):
            assert route(engines.Flink, n, KEYS, key_format=fmt, max_parallelism=P) == \
                [(h % P) * n // P for h in flink]


# --------------------------------------------------------------------------------------------
# end to end: `skewbench replay grouping` over a dataset of int64 keys routes as the engines do

@pytest.mark.spark
def test_a_replay_of_int64_keys_loads_every_worker_as_the_engines_do(spark, spark_answers, tmp_path):
    """A trace whose keys are int64 texts (negative ones, ones beyond 2^32, the extremes), each key
    repeated 1-7 times in a shuffled order, ingested and replayed through the four partitioners in
    both key formats by the command line: every cell's worker loads equal the loads computed
    independently, key by key, by the engines themselves where they run here (Spark's SQL hash
    and pmod, Spark's HashPartitioner on a java.lang.Long or String, Java's hashCode and Spark's
    Murmur3 block for Flink) and by the reference for Kafka (checked above against Kafka's own
    vectors)."""
    import json
    import os
    import sys
    from pathlib import Path

    rng = np.random.default_rng(11)
    reps = {k: 1 + i % 7 for i, k in enumerate(KEYS)}
    stream = [k for k, r in reps.items() for _ in range(r)]
    rng.shuffle(stream)
    (tmp_path / "keys.csv").write_text("key\n" + "".join(f"{k}\n" for k in stream))
    sk = str(Path(sys.executable).parent / "skewbench")

    def cli(*args):
        p = subprocess.run([sk, *map(str, args)], capture_output=True, text=True, timeout=900, env=dict(os.environ))
        assert p.returncode == 0, p.stderr
        return p.stdout

    cli("datasets", "ingest", "csv", tmp_path / "keys.csv", "--key-column", "key", "--out", tmp_path / "d")
    strategies = ["kafka", "flink", "spark-hash", "spark-sql"]
    params = [a for s in strategies for a in ("--param", f"{s}.key_format=long,string")]
    out = json.loads(cli("replay", "grouping", "--dataset", tmp_path / "d", "--strategies", ",".join(strategies),
                         *params, "--workers", "5,7", "--sources", "2", "--metrics", "balance",
                         "--out", tmp_path / "r", "--json"))

    rows, _ = spark_answers
    jvm = spark.sparkContext._jvm
    hash_int = spark_hash_int(spark)
    arg_types = spark.sparkContext._gateway.new_array(jvm.java.lang.Class, 1)
    arg_types[0] = jvm.java.lang.Class.forName("java.lang.Object")
    get_partition = jvm.java.lang.Class.forName("org.apache.spark.HashPartitioner").getMethod("getPartition",
                                                                                              arg_types)

    def java_object(k, fmt):  # the arguments array of one real java.lang.Long, or of a java.lang.String
        if fmt == "long":
            return jvm.java.util.stream.LongStream.of(k).boxed().toArray()
        args = spark.sparkContext._gateway.new_array(jvm.java.lang.Object, 1)
        args[0] = str(k)
        return args

    long_type = spark.sparkContext._gateway.new_array(jvm.java.lang.Class, 1)
    long_type[0] = jvm.java.lang.Class.forName("java.lang.Long").getField("TYPE").get(None)
    long_hash = jvm.java.lang.Class.forName("java.lang.Long").getMethod("hashCode", long_type)

    def worker(strategy, k, n, fmt):
        if strategy == "spark-sql":
            return rows[k][f"{'pk' if fmt == 'long' else 'ps'}{n}"]
        if strategy == "spark-hash":
            args = java_object(k, fmt)
            return get_partition.invoke(jvm.org.apache.spark.HashPartitioner(n), args)
        if strategy == "flink":
            code = long_hash.invoke(None, java_object(k, fmt)) if fmt == "long" else jvm.java.util.Objects.hashCode(str(k))
            b = hash_int(code, 0)
            kg = (b if b >= 0 else (-b if b != -2**31 else 0)) % 128  # P = 128 for n <= 85
            return kg * n // 128
        return (ref.murmur2(ref.kafka_bytes(k, fmt)) & 0x7FFFFFFF) % n

    cells = out["summary"]
    assert len(cells) == 4 * 2 * 2
    for row in cells:
        fmt = json.loads(row["params"])["key_format"]
        n = row["workers"]
        expected = [0] * n
        for k, r in reps.items():
            expected[worker(row["strategy"], k, n, fmt)] += r
        assert row["worker_tuples"] == expected, (row["strategy"], fmt, n)
    # the two formats and the four engines really route differently on these keys
    assert len({tuple(r["worker_tuples"]) for r in cells if r["workers"] == 7}) == 8
