"""The ``flink`` strategy against Flink itself (Flink 2.3, the Flink environment of
``make flink-env``), for both ``api`` values: Java's DataStream ``keyBy`` and PyFlink's ``key_by``.

* Flink's JVM: a small Java program, compiled at test time with ``javac`` against the Flink
  environment's jars (``pyflink/lib``, ``pyflink/opt``), reads 10^5 long keys and 10^5 string keys
  (decimal texts, as ``key_format="string"`` serialises, and some that are not ASCII) and writes,
  per key and per (parallelism, max parallelism), Flink's
  ``KeyGroupRangeAssignment.assignKeyToParallelOperator`` of the ``java.lang.Long`` or
  ``java.lang.String`` key, of ``Row.of(key)`` and of the key PyFlink's ``KeyByKeySelector``
  extracts from the row ``(key, value)`` that ``key_by`` builds; also the keys' and rows'
  ``hashCode`` and Flink's default max parallelism.  The strategy's routes (and the module's
  helpers) must equal them key by key.
* A real PyFlink job (``flink_keyby_job.py`` beside this file, run by the Flink environment's
  interpreter; one job for all cases, about 15 s): ``key_by`` on long and string keys at
  parallelism 8 with the default max parallelism 128, and at other settings; the records each
  subtask of the keyed operator counts equal the strategy's per-worker loads with
  ``api="pyflink"`` exactly, and differ from ``api="datastream"``'s.

Marked ``slow``: they run under ``make slow``, which builds the Flink environment first.
Without it they fail under ``SKEWBENCH_REPRODUCE=full`` and are skipped otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from skewbench.grouping.strategies import engines
from skewbench.grouping.base import Batch
from tests.reference import engines_ref as ref

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
JOB = HERE / "flink_keyby_job.py"
APIS = ("datastream", "pyflink")
M = 100_000
#: (parallelism, max parallelism), 0 = Flink's default rule for the parallelism
CONFIGS = [(1, 0), (2, 0), (3, 0), (5, 0), (8, 0), (10, 0), (85, 0), (86, 0), (100, 0), (171, 0), (172, 0),
           (1000, 0), (8, 8), (8, 1000), (5, 100), (3, 129), (7, 32768), (128, 128), (300, 4096)]
#: text keys that are no int64's decimal text (not ASCII, beyond the BMP, a sign, leading zeros, empty)
OTHER_TEXTS = ["é", "naïve", "ü-42", "Ωmega", "日本語", "키", "𝄞", "😀key", "a\u00a0b", "Ä" * 40, "-0", "+1", "007", ""]


def _full() -> bool:
    return os.environ.get("SKEWBENCH_REPRODUCE") == "full"


@pytest.fixture(scope="module")
def javac() -> tuple[str, str]:
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        if _full():
            pytest.fail("no javac/java on PATH: Flink's own key groups cannot be computed (make java installs a JDK)",
                        pytrace=False)
        pytest.skip("needs javac (make java)")
    return javac, java


def long_keys() -> np.ndarray:
    """10^5 int64 keys: the extremes, 0 and -1, values around +-2^31 and +-2^32, small values of
    both signs, and random int64s over the whole range."""
    rng = np.random.default_rng(33)
    code = ref.murmur_block_preimage(1 << 31)  # its murmurHash is -2^31, which Flink maps to 0
    special = [0, -1, 1, -2, 2**63 - 1, -2**63, -2**63 + 1, 2**63 - 2, 2**31 - 1, 2**31, -2**31, -2**31 - 1,
               2**32 - 1, 2**32, -2**32, code, code - 62, 2**31 - 62, 2**31 - 63, -62, -63]
    near = np.concatenate([b + np.arange(-300, 300) for b in (2**31, -2**31, 2**32, -2**32, 2**31 - 62)])
    small = rng.integers(-5000, 5000, 20_000)
    wide = rng.integers(-2**63, 2**63 - 1, M - len(special) - near.size - small.size, dtype=np.int64, endpoint=True)
    keys = np.concatenate([np.array(special, dtype=np.int64), near, small, wide]).astype(np.int64)
    assert keys.size == M
    return keys


def string_keys() -> tuple[np.ndarray, list[str]]:
    """10^5 - 14 int64 keys whose decimal texts are string keys, and the 14 other texts."""
    rng = np.random.default_rng(34)
    ints = np.concatenate([np.array([0, -1, 2**63 - 1, -2**63, 10, -10], dtype=np.int64),
                           rng.integers(-10**6, 10**6, 30_000),
                           rng.integers(-2**63, 2**63 - 1, M - len(OTHER_TEXTS) - 30_006, dtype=np.int64, endpoint=True)])
    return ints.astype(np.int64), list(OTHER_TEXTS)


JAVA_SOURCE = """
import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.api.functions.python.KeyByKeySelector;
import org.apache.flink.types.Row;

/** args: KEYS_FILE long|string OUT_FILE p:P...; P = 0 is Flink's default for p. Writes the
 *  max parallelisms used, then per key: key.hashCode(), Row.of(key).hashCode(), and per setting
 *  the operator of the key, of Row.of(key) and of KeyByKeySelector's key of Row.of(key, "v"). */
public class FlinkKeyIndex {
    public static void main(String[] args) throws Exception {
        List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
        boolean isLong = args[1].equals("long");
        int c = args.length - 3;
        int[] p = new int[c], maxP = new int[c];
        for (int i = 0; i < c; i++) {
            String[] pq = args[3 + i].split(":");
            p[i] = Integer.parseInt(pq[0]);
            int given = Integer.parseInt(pq[1]);
            maxP[i] = given == 0 ? KeyGroupRangeAssignment.computeDefaultMaxParallelism(p[i]) : given;
        }
        KeyByKeySelector selector = new KeyByKeySelector();
        try (BufferedWriter w = Files.newBufferedWriter(Paths.get(args[2]), StandardCharsets.UTF_8)) {
            StringBuilder s = new StringBuilder();
            for (int i = 0; i < c; i++) s.append(i == 0 ? "" : " ").append(maxP[i]);
            w.write(s.append('\\n').toString());
            for (String line : lines) {
                Object key = isLong ? (Object) Long.valueOf(Long.parseLong(line)) : (Object) line;
                Row row = Row.of(key);
                Row selected = selector.getKey(Row.of(key, "v"));
                s.setLength(0);
                s.append(key.hashCode()).append(' ').append(row.hashCode());
                for (int i = 0; i < c; i++) {
                    s.append(' ').append(KeyGroupRangeAssignment.assignKeyToParallelOperator(key, maxP[i], p[i]))
                     .append(' ').append(KeyGroupRangeAssignment.assignKeyToParallelOperator(row, maxP[i], p[i]))
                     .append(' ').append(KeyGroupRangeAssignment.assignKeyToParallelOperator(selected, maxP[i], p[i]));
                }
                w.write(s.append('\\n').toString());
            }
        }
    }
}
"""


@pytest.fixture(scope="module")
def flink_jvm(flink_env, javac, tmp_path_factory):
    """Run the Java program on both key sets: {"long"/"string": (max parallelisms, int array of
    columns: hashCode, Row hashCode, then per setting the three operators)}."""
    jc, java = javac
    d = tmp_path_factory.mktemp("flink-jvm")
    cp = os.pathsep.join(str(j) for j in [*flink_env.jars, *sorted((flink_env.pyflink / "opt").glob("flink-python-*.jar"))])
    (d / "FlinkKeyIndex.java").write_text(JAVA_SOURCE)
    subprocess.run([jc, "-cp", cp, "-d", str(d), str(d / "FlinkKeyIndex.java")], check=True, capture_output=True,
                   timeout=300)
    settings = [f"{p}:{P}" for p, P in CONFIGS]
    ints, texts = string_keys()
    inputs = {"long": [str(k) for k in long_keys().tolist()], "string": [str(k) for k in ints.tolist()] + texts}
    out = {}
    for kind, lines in inputs.items():
        (d / f"{kind}.txt").write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
        done = subprocess.run([java, "-cp", f"{cp}{os.pathsep}{d}", "FlinkKeyIndex", str(d / f"{kind}.txt"), kind,
                               str(d / f"{kind}.out"), *settings], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        head, *rows = (d / f"{kind}.out").read_text(encoding="utf-8").splitlines()
        table = np.array([r.split() for r in rows], dtype=np.int64)
        assert table.shape == (M, 2 + 3 * len(CONFIGS))
        out[kind] = ([int(x) for x in head.split()], table)
    return out


def _route(keys: np.ndarray, n: int, P: int, fmt: str, api: str, bind: bool = False) -> np.ndarray:
    s = engines.Flink(n, 1, 0, key_format=fmt, max_parallelism=P, api=api)
    ids = keys
    if bind:  # the worker table of bound key values: key id i is the value keys[i]
        s.bind_key_values(keys)
        ids = np.arange(keys.size, dtype=np.int64)
    return s.route(Batch(np.arange(keys.size), ids, np.zeros(keys.size), np.ones(keys.size)))


def test_default_max_parallelism_is_flinks(flink_jvm):
    used, _ = flink_jvm["long"]
    for (p, P), flinks in zip(CONFIGS, used):
        assert (P or engines.flink_default_max_parallelism(p)) == flinks, (p, P)
        assert engines.Flink(p, 1, 0, max_parallelism=P).summary()["max_parallelism"] == flinks


@pytest.mark.parametrize("kind", ["long", "string"])
def test_hash_codes_are_flinks(flink_jvm, kind):
    """The key's hashCode, and Row.of(key).hashCode = 62 + it (wrapping), as the JVM computes them."""
    _, table = flink_jvm[kind]
    if kind == "long":
        ours = engines.engine_hashes("spark-hash", long_keys(), "long")  # Java's hashCode of the Long
    else:
        ints, texts = string_keys()
        ours = np.concatenate([engines.engine_hashes("spark-hash", ints, "string"),
                               engines.engine_text_hashes("spark-hash", texts)])
    np.testing.assert_array_equal(ours, table[:, 0])
    np.testing.assert_array_equal([engines.flink_row_hash(c) for c in ours[:2000].tolist()], table[:2000, 1])
    np.testing.assert_array_equal((ours + 62 + 2**31) % 2**32 - 2**31, table[:, 1])


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("kind", ["long", "string"])
def test_operator_of_every_key_is_flinks(flink_jvm, kind, api):
    """Per setting, the strategy's worker of each key equals Flink's assignKeyToParallelOperator
    of the Java key (api datastream) or of Row.of(key) and of KeyByKeySelector's key (pyflink);
    text keys that are not an integer's through engine_text_hashes and engine_workers."""
    _, table = flink_jvm[kind]
    col = {"datastream": 0, "pyflink": 1}[api]
    if kind == "long":
        keys, texts = long_keys(), []
    else:
        keys, texts = string_keys()
    for i, (p, P) in enumerate(CONFIGS):
        flink = table[:, 2 + 3 * i + col]
        if api == "pyflink":  # the row PyFlink's selector builds is Row.of(key)
            np.testing.assert_array_equal(table[:, 2 + 3 * i + 2], flink, err_msg=f"selector p={p} P={P}")
        got = _route(keys, p, P, kind, api)
        if texts:
            hashes = engines.engine_text_hashes("flink", texts, api=api)
            got = np.concatenate([got, engines.engine_workers("flink", hashes, p, P)])
        mismatch = np.flatnonzero(got != flink)
        assert mismatch.size == 0, (f"p={p} P={P} {kind} {api}: {mismatch.size} keys differ, first key index "
                                    f"{mismatch[:1].tolist()}: ours {got[mismatch[:3]].tolist()}, "
                                    f"Flink's {flink[mismatch[:3]].tolist()}")
    # the bound key values' worker table gives the same (p = 8, default P)
    i = CONFIGS.index((8, 0))
    np.testing.assert_array_equal(_route(keys, 8, 0, kind, api, bind=True), table[:keys.size, 2 + 3 * i + col])


def test_the_apis_differ_on_flinks_side_too(flink_jvm):
    """Flink's own operators for the key and for its row differ for most keys (so the tests above
    tell the two APIs apart)."""
    _, table = flink_jvm["long"]
    i = CONFIGS.index((8, 0))
    assert (table[:, 2 + 3 * i] != table[:, 2 + 3 * i + 1]).mean() > 0.8


# --------------------------------------------------------------------------------------------
# a real PyFlink job

def _zipf_stream(values: np.ndarray, m: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, values.size + 1)
    return values[rng.choice(values.size, size=m, p=w / w.sum())]


JOB_CASES = [  # name, key format, parallelism, max parallelism (0: Flink's default)
    ("long-p8", "long", 8, 0), ("string-p8", "string", 8, 0), ("long-p5-P1000", "long", 5, 1000),
    ("string-p3-P7", "string", 3, 7),
]


@pytest.fixture(scope="module")
def keyby_job(flink_env, tmp_path_factory):
    """One PyFlink job for all JOB_CASES, each a Zipf(1) stream of 40,000 records over 3,000
    keys (negatives, 0, -1, the int64 extremes among them): {case: (keys, records per subtask,
    the subtasks' runtime context)}."""
    d = tmp_path_factory.mktemp("flink-job")
    rng = np.random.default_rng(35)
    values = np.unique(np.concatenate([np.array([0, -1, 1, 2**63 - 1, -2**63, 2**31, -2**31], dtype=np.int64),
                                       rng.integers(-2000, 2000, 1500),
                                       rng.integers(-2**63, 2**63 - 1, 1500, dtype=np.int64, endpoint=True)]))
    rng.shuffle(values)
    cases = []
    streams = {}
    for j, (name, fmt, p, P) in enumerate(JOB_CASES):
        keys = _zipf_stream(values, 40_000, 100 + j)
        streams[name] = keys
        cases.append({"name": name, "key_format": fmt, "parallelism": p, "max_parallelism": P,
                      "keys": keys.tolist() if fmt == "long" else [str(k) for k in keys.tolist()]})
    (d / "spec.json").write_text(json.dumps({"cases": cases}))
    (d / "out").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYSPARK", "VIRTUAL_ENV"))}
    done = subprocess.run([str(flink_env.python), str(JOB), str(d / "spec.json"), str(d / "out")], capture_output=True,
                          text=True, timeout=900, env=env, cwd=d)
    assert done.returncode == 0, f"the PyFlink job failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    result = {}
    for name, fmt, p, P in JOB_CASES:
        reports = [json.loads(f.read_text()) for f in sorted((d / "out").glob(f"{name}-*.json"))]
        counts = [0] * p
        for r in reports:
            counts[r["subtask"]] = r["records"]
        result[name] = (streams[name], counts, reports)
    return result


@pytest.mark.parametrize("case", JOB_CASES, ids=[c[0] for c in JOB_CASES])
def test_pyflink_key_by_loads_every_subtask_as_the_strategy(keyby_job, case):
    name, fmt, p, P = case
    keys, counts, reports = keyby_job[name]
    assert sorted(r["subtask"] for r in reports) == list(range(p)), f"{name}: not every subtask reported"
    strategy = engines.Flink(p, 1, 0, key_format=fmt, max_parallelism=P, api="pyflink")
    assert {(r["parallelism"], r["max_parallelism"]) for r in reports} == {(p, strategy.summary()["max_parallelism"])}
    assert sum(counts) == keys.size
    loads = {api: np.bincount(_route(keys, p, P, fmt, api), minlength=p).tolist() for api in APIS}
    assert loads["pyflink"] == counts, f"{name}: Flink's subtasks {counts}, the strategy's workers {loads['pyflink']}"
    assert loads["datastream"] != counts, f"{name}: Java's keyBy would load the subtasks as PyFlink's key_by does"
