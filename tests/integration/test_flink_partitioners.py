"""The strategies in a Flink user's own job (issue 41, item 5; docs/flink.md): the jar of
``make flink-partitioners`` (:mod:`skewbench.live.partitioners`: the Java routers, their Flink
``Partitioner`` ``skewbench.flink.StrategyPartitioner`` and the merge step ``KeySplitting``).

The word count of docs/flink.md is compiled and run from the page's own code block (so the page
cannot drift from what is checked), on a Flink mini-cluster inside its JVM, 4 subtasks, 300,000
words of a Zipf law of exponent 2 (``w0`` about 61% of them): its PKG and D-Choices counts must
equal ``keyBy``'s word for word, each word once, and both runs must have split ``w0`` over more
than one subtask (the partial records it prints), so the merge step is what made them equal.

The partitioner alone, in a small JVM without a cluster: its decisions on ``Long``, ``Integer``
and ``String`` keys equal the Python strategy classes' on the documented long of each key (the
value; ``stringKey``, computed here from the page's definition), a serialized copy (what Flink
gives each sending subtask) starts from empty state, and a bad strategy name or parameter fails in
the constructor naming the valid ones.  Needs the Flink environment: ``make slow``.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from skewbench import registry
from skewbench.grouping.base import Batch
from skewbench.hashing import mix64_py

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "flink.md"
WORDS = 300_000
HOT = "w0"
P = 4
STRATEGIES = ("pkg", "dc")
ROUTER_NAMES = "kg, sg, pkg, dc, wc, rr, fixed-d, chwbl, local-global, salt, kafka, spark-hash, spark-sql"

PROBE = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import skewbench.flink.StrategyPartitioner;

/**
 * Probe CASES: per line of CASES (NAME STRATEGY SEED PARAMS WORKERS KIND KEYFILE, tab-separated),
 * into NAME.out: the partitioner's worker for each key of KEYFILE (KIND long, int, or string: one
 * key a line, strings as hex of their UTF-8 bytes), the same keys through a copy made by Java
 * serialization after that use, and each key's long; or "error" and the exception's message.
 */
public class Probe {
    static byte[] serialize(Object o) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(b)) { out.writeObject(o); }
        return b.toByteArray();
    }

    @SuppressWarnings("unchecked")
    static String run(String[] a) throws Exception {
        Map<String, String> params = new HashMap<>();
        if (!a[3].equals("-")) for (String kv : a[3].split(",")) params.put(kv.split("=", 2)[0], kv.split("=", 2)[1]);
        StrategyPartitioner<Object> part;
        try {
            part = new StrategyPartitioner<>(a[1], Long.parseLong(a[2]), params);
        } catch (IllegalArgumentException e) {
            return "error " + e;
        }
        int n = Integer.parseInt(a[4]);
        List<Object> keys = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get(a[6]))) {
            if (a[5].equals("long")) keys.add(Long.parseLong(line));
            else if (a[5].equals("int")) keys.add(Integer.parseInt(line));
            else {
                byte[] b = new byte[line.length() / 2];
                for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
                keys.add(new String(b, StandardCharsets.UTF_8));
            }
        }
        StringBuilder first = new StringBuilder("first"), copy = new StringBuilder("copy");
        StringBuilder longs = new StringBuilder("keys");
        for (Object k : keys) first.append(' ').append(part.partition(k, n));
        StrategyPartitioner<Object> again;
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(serialize(part)))) {
            again = (StrategyPartitioner<Object>) in.readObject();
        }
        for (Object k : keys) copy.append(' ').append(again.partition(k, n));
        for (Object k : keys) longs.append(' ').append(StrategyPartitioner.keyOf(k));
        return first + "\n" + copy + "\n" + longs;
    }

    public static void main(String[] args) throws Exception {
        Path cases = Paths.get(args[0]);
        for (String line : Files.readAllLines(cases)) {
            String[] a = line.split("\t");
            Files.writeString(cases.resolveSibling(a[0] + ".out"), run(a));
        }
    }
}
"""

#: the probe's cases: name -> (strategy, seed, params, workers, key kind); the decision cases route
#: the 20,000 keys of IDS (or WORDS_OF_IDS), the error cases none
DECIDED = [("pkg", {}), ("dc", {"theta": 0.05, "warmup": 20, "refresh": 1}), ("chwbl", {})]
KINDS = ("long", "int", "string")
BAD = {"name": ("nope", {}), "unknown": ("dc", {"d": 3}), "theta": ("dc", {"theta": -1}),
       "warmup": ("dc", {"warmup": "soon"})}
CASES = {**{f"{s}-{k}": (s, 11, p, 8, k) for s, p in DECIDED for k in KINDS},
         **{f"bad-{n}": (s, 0, p, 4, "long") for n, (s, p) in BAD.items()}}


class JavaFailed(Exception):
    """A Java program exited non-zero; the message is its exception's line."""


def string_key(s: str) -> int:
    """docs/flink.md's ``stringKey``: h = len(UTF-8 bytes), then h = mix64(h XOR w) for each
    little-endian 8-byte word w of the bytes (the last one padded with zeros); as a signed long."""
    b = s.encode("utf-8")
    h = len(b)
    for o in range(0, len(b), 8):
        h = mix64_py(h ^ int.from_bytes(b[o:o + 8].ljust(8, b"\0"), "little"))
    return h - (1 << 64) if h >= 1 << 63 else h


def doc_java() -> str:
    """The Java code block(s) of docs/flink.md that make up ``class WordCount``."""
    blocks = [b for b in re.findall(r"^```java\n(.*?)^```", DOC.read_text(), re.S | re.M) if "WordCount" in b]
    assert blocks and any("public class WordCount" in b for b in blocks), \
        "docs/flink.md has no ```java block declaring public class WordCount"
    return "\n".join(blocks)


def javac(src: Path, classes: Path, cp: list[Path]) -> None:
    from skewbench.live.routers import jdk_tool

    classes.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([jdk_tool("javac"), "-nowarn", "-encoding", "UTF-8", "-cp", os.pathsep.join(map(str, cp)),
                        "-d", str(classes), str(src)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"javac {src.name} failed:\n{p.stderr[-3000:]}"


def java(cp: list[Path], main: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``main`` on ``cp``; :class:`JavaFailed` with the exception's line (then the end of
    stderr, where a Flink job's root cause is) when it fails."""
    from skewbench.live.routers import jdk_tool

    p = subprocess.run([jdk_tool("java"), "-cp", os.pathsep.join(map(str, cp)), main, *args],
                       capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        lines = [ln for ln in p.stderr.splitlines() if "Exception" in ln or "Error" in ln]
        raise JavaFailed("\n".join([lines[0] if lines else f"exit status {p.returncode}",
                                    *p.stderr.splitlines()[-40:]]))
    return p


@pytest.fixture(scope="module")
def classpath(flink_env, tmp_path_factory) -> list[Path]:
    """Flink's jars and the partitioners' jar, built by :func:`partitioners_jar` in a fresh state directory."""
    from skewbench.live.partitioners import partitioners_jar

    jar = partitioners_jar(tmp_path_factory.mktemp("partitioners") / "state")
    assert jar.name == "skewbench-partitioners.jar" and jar.parent.name == "flink"
    return [*flink_env.jars, jar]


@pytest.fixture(scope="module")
def probe(classpath, tmp_path_factory) -> list[Path]:
    d = tmp_path_factory.mktemp("probe")
    (d / "Probe.java").write_text(PROBE)
    javac(d / "Probe.java", d / "classes", classpath)
    return [*classpath, d / "classes"]


def read_counts(path: Path) -> tuple[dict[str, int], dict[str, list[int]]]:
    """A ``word TAB count`` file: the counts, and the words listed more than once with all their counts."""
    seen: dict[str, list[int]] = {}
    for line in path.read_text().splitlines():
        word, count = line.split("\t")
        seen.setdefault(word, []).append(int(count))
    return {w: c[0] for w, c in seen.items()}, {w: c for w, c in seen.items() if len(c) > 1}


@pytest.fixture(scope="module")
def wordcount(classpath, tmp_path_factory):
    """docs/flink.md's WordCount compiled and run: (its stdout, {run: (counts, repeated words)})."""
    d = tmp_path_factory.mktemp("wordcount")
    (d / "WordCount.java").write_text(doc_java())
    javac(d / "WordCount.java", d / "classes", classpath)
    out = d / "out"
    out.mkdir()
    p = java([*classpath, d / "classes"], "WordCount", str(WORDS), str(out), timeout=180)
    runs = {name: read_counts(out / f"{name}.tsv") for name in ("keyBy", *STRATEGIES)}
    return p.stdout, runs


def test_the_docs_word_count_with_keyby_counts_every_word(wordcount):
    _, runs = wordcount
    counts, repeated = runs["keyBy"]
    assert not repeated and sum(counts.values()) == WORDS
    assert max(counts, key=counts.get) == HOT and 0.55 < counts[HOT] / WORDS < 0.67


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_docs_word_count_with_a_splitting_strategy_equals_keyby(wordcount, strategy):
    _, runs = wordcount
    expected, _ = runs["keyBy"]
    counts, repeated = runs[strategy]
    assert not repeated, (f"{strategy}: {len(repeated)} words have more than one count, e.g. "
                          + ", ".join(f"{w!r} {c}" for w, c in sorted(repeated.items())[:3])
                          + " (partial counts that were not merged)")
    wrong = sorted(w for w in expected.keys() | counts.keys() if counts.get(w) != expected.get(w))
    assert not wrong, (f"{strategy}: {len(wrong)} of {len(expected)} words counted differently from keyBy, e.g. "
                       + ", ".join(f"{w!r} {counts.get(w)} (keyBy {expected.get(w)})" for w in wrong[:5]))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_splitting_strategies_put_the_hottest_word_on_several_subtasks(wordcount, strategy):
    stdout, runs = wordcount
    expected, _ = runs["keyBy"]
    partials = [(int(i), int(c)) for i, c in
                re.findall(rf"^{strategy} partial:(\d+)> \({HOT},(\d+)\)$", stdout, re.M)]
    subtasks = {i for i, _ in partials}
    assert len(subtasks) > 1, (f"{strategy}: {HOT!r} was counted on {len(subtasks)} subtask(s) "
                               f"({partials}): the merge step was not exercised\n{stdout[-2000:]}")
    assert len(partials) == len(subtasks) and subtasks <= set(range(1, P + 1)), partials
    assert sum(c for _, c in partials) == expected[HOT], (partials, expected[HOT])


def _zipf_ids(m: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = np.arange(1, 2001, dtype=float) ** -1.5
    return rng.choice(2000, size=m, p=p / p.sum()).astype(np.int64)


IDS = _zipf_ids(20_000, 7)
#: the string keys: words, some of them with non-ASCII letters and longer than 8 bytes
WORDS_OF_IDS = [f"w{i}" if i % 7 else f"wörd-{i}-{'x' * (i % 13)}" for i in IDS]


@pytest.fixture(scope="module")
def probed(probe, tmp_path_factory) -> dict[str, str]:
    """Every case of :data:`CASES` through the probe, in one JVM: {name: its output}."""
    d = tmp_path_factory.mktemp("cases")
    (d / "ids.txt").write_text("".join(f"{i}\n" for i in IDS))
    (d / "words.txt").write_text("".join(w.encode().hex() + "\n" for w in WORDS_OF_IDS))
    (d / "none.txt").write_text("")
    rows = []
    for name, (strategy, seed, params, n, kind) in CASES.items():
        keys = d / ("none.txt" if name.startswith("bad-") else "words.txt" if kind == "string" else "ids.txt")
        text = ",".join(f"{k}={v}" for k, v in params.items()) or "-"
        rows.append("\t".join([name, strategy, str(seed), text, str(n), kind, str(keys)]))
    (d / "cases.tsv").write_text("\n".join(rows) + "\n")
    java(probe, "Probe", str(d / "cases.tsv"))
    return {name: (d / f"{name}.out").read_text() for name in CASES}


def case(probed: dict[str, str], name: str) -> list[np.ndarray]:
    """A case's (first, copy, keys) arrays; :class:`JavaFailed` with the constructor's exception."""
    out = probed[name]
    if out.startswith("error "):
        raise JavaFailed(out[len("error "):])
    return [np.array(ln.split()[1:], dtype=np.int64) for ln in out.splitlines()]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("strategy,params", DECIDED)
def test_the_partitioner_decides_as_the_strategy_on_each_keys_long(probed, strategy, params, kind):
    """One sending subtask's decisions (a Python class with 1 source) on the long of each key; a
    copy serialized after use (as Flink ships one to each sending subtask) starts from empty state."""
    first, copy, longs = case(probed, f"{strategy}-{kind}")
    values = np.array([string_key(w) for w in WORDS_OF_IDS], dtype=np.int64) if kind == "string" else IDS
    np.testing.assert_array_equal(longs, values, err_msg="the keys' longs differ from docs/flink.md's definition")
    m = values.size
    want = registry.get("grouping", strategy)(8, 1, 11, **params).route(
        Batch(np.arange(m, dtype=np.int64), values, np.zeros(m), np.ones(m)))
    bad = np.flatnonzero(first != want)
    assert bad.size == 0, (f"{strategy} ({kind} keys): {bad.size} of {m} decisions differ from the Python class's; "
                           f"the first, tuple {bad[0]} (key {values[bad[0]]}): worker {first[bad[0]]}, "
                           f"the class {want[bad[0]]}")
    np.testing.assert_array_equal(copy, first, err_msg="a serialized copy did not start from empty state")
    assert len(set(first.tolist())) == 8


def test_a_bad_strategy_name_fails_in_the_constructor_naming_the_strategies(probed):
    with pytest.raises(JavaFailed, match=re.escape(
            f"java.lang.IllegalArgumentException: no router for strategy 'nope'; routers: [{ROUTER_NAMES}]")):
        case(probed, "bad-name")


@pytest.mark.parametrize("name,message", [
    ("unknown", "dc: unknown parameter(s) [d]; it takes [capacity, eps, mode, refresh, theta, warmup]"),
    ("theta", "dc: theta must be a finite number > 0.0, got -1"),
    ("warmup", "dc: warmup must be an integer, got 'soon'"),
])
def test_a_bad_parameter_fails_in_the_constructor_naming_it(probed, name, message):
    with pytest.raises(JavaFailed, match="^java.lang.IllegalArgumentException: " + re.escape(message) + "$"):
        case(probed, f"bad-{name}")


def test_without_the_flink_environment_the_jar_names_make_flink_env(tmp_path, monkeypatch):
    from skewbench.errors import SkewbenchError
    from skewbench.live.partitioners import partitioners_jar

    monkeypatch.setenv("SKEWBENCH_FLINK_PYTHON", str(tmp_path / "no-such-python"))
    with pytest.raises(SkewbenchError,
                       match=r"does not exist \(SKEWBENCH_FLINK_PYTHON\): install it with `make flink-env`"):
        partitioners_jar(tmp_path / "state")
    assert not (tmp_path / "state").exists()
