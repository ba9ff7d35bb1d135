"""Plain-Python references for ``skewbench advise`` (``skewbench.advise``), used only by tests.

Lists, dicts and Python ints, one key at a time; the engines' hashes come from
``tests.reference.engines_ref`` (itself independent of the kernels).  Brute-force searches stand
behind every suggestion rule: they try every candidate in the rule's range.
"""

from __future__ import annotations

import math

from tests.reference import engines_ref as ref

FLINK_MAX = 32768
MAX_WORKERS = 10_000


# ---- reading

def lines(data: bytes) -> list[str]:
    """The non-blank lines of a text, each without its ``\\n`` and one trailing ``\\r``."""
    out = []
    for line in data.decode("utf-8").split("\n"):
        if line.endswith("\r"):
            line = line[:-1]
        if line:
            out.append(line)
    return out


def dictionary(stream: list[str]) -> tuple[list[str], list[int], list[int]]:
    """Keys by first appearance, their counts, and the stream as key ids."""
    ids: dict[str, int] = {}
    seq = []
    for k in stream:
        seq.append(ids.setdefault(k, len(ids)))
    counts = [0] * len(ids)
    for i in seq:
        counts[i] += 1
    return list(ids), counts, seq


# ---- the engines on text keys (a Java String)

def text_hash(engine: str, s: str) -> int:
    b = s.encode("utf-8")
    if engine == "kafka":
        return ref.murmur2(b)
    if engine == "spark-sql":
        return ref.m3bytes_legacy(b, 42)
    code = ref.string_hash_code(s)
    return ref.flink_murmur_hash(code & ref.M32) if engine == "flink" else code


def text_partition(engine: str, s: str, n: int, P: int = 0) -> int:
    h = text_hash(engine, s)
    if engine == "kafka":
        return ref.to_positive(h) % n
    if engine == "flink":
        P = P or ref.default_max_parallelism(n)
        return ref.operator_index(h % P, P, n)
    if engine == "spark-hash":
        return ref.non_negative_mod(h, n)
    return ref.pmod(h, n)


# ---- rows

def worker_loads(workers: list[int], counts: list[int], p: int) -> list[int]:
    loads = [0] * p
    for w, c in zip(workers, counts):
        loads[w] += c
    return loads


def busiest(loads: list[int]) -> int:
    best = 0
    for j, v in enumerate(loads):
        if v > loads[best]:
            best = j
    return best


def hottest_on(workers: list[int], counts: list[int], worker: int, top: int = 3) -> list[int]:
    mine = [k for k, w in enumerate(workers) if w == worker]
    mine.sort(key=lambda k: (-counts[k], k))
    return mine[:top]


# ---- the whole-key floor

def lpt_loads(counts: list[int], p: int) -> list[int]:
    """LPT one key at a time: heaviest first, onto the least loaded worker (lowest index on ties)."""
    loads = [0] * p
    for v in sorted(counts, reverse=True):
        j = min(range(p), key=lambda i: (loads[i], i))
        loads[j] += v
    return loads


def whole_key_floor(counts: list[int], p: int) -> int:
    c = sorted(counts, reverse=True)
    low = max(c[0], -(-sum(c) // p))
    if len(c) > p:
        low = max(low, c[p - 1] + c[p])
    return low


def best_whole_keys(counts: list[int], p: int) -> int:
    """The exact least busiest worker over every assignment of whole keys (tiny instances only)."""
    best = math.inf
    loads = [0] * p

    def place(i: int) -> None:
        nonlocal best
        if max(loads) >= best:
            return
        if i == len(counts):
            best = max(loads)
            return
        for j in range(p):
            loads[j] += counts[i]
            place(i + 1)
            loads[j] -= counts[i]
            if loads[j] == 0:
                break  # empty workers are interchangeable

    place(0)
    return int(best)


# ---- the rules, by brute force

def flink_groups_by_counting(P: int, p: int) -> list[int]:
    """Key groups per subtask, counted group by group with Flink's operator index."""
    owned = [0] * p
    for kg in range(P):
        owned[ref.operator_index(kg, P, p)] += 1
    return owned


def suggested_max_parallelism(p: int, current: int) -> int:
    """The least P in [current, 32768] that p divides; else the largest such P in [p, current)."""
    for P in range(current, FLINK_MAX + 1):
        if P % p == 0:
            return P
    for P in range(current - 1, p - 1, -1):
        if P % p == 0:
            return P
    raise AssertionError("p divides p")


def divisor_parallelism(P: int, p: int) -> int:
    best = None
    for d in range(1, min(P, MAX_WORKERS) + 1):
        if P % d == 0 and (best is None or (abs(d - p), -d) < (abs(best - p), -best)):
            best = d
    assert best is not None
    return best


def common_max_parallelism(ps: list[int]) -> int | None:
    low = max(ref.default_max_parallelism(p) for p in ps)
    for P in range(low, FLINK_MAX + 1):
        if all(P % p == 0 for p in ps):
            return P
    return None


def kafka_partitions(keys: list, counts: list[int], p: int, key_format: str = "long") -> tuple[int, int]:
    """The q in p, 2p, ..., 8p whose busiest consumer (RangeAssignor: partition r to r div (q/p))
    carries the fewest tuples, and that load; ties: fewer partitions."""
    best = None
    for c in range(1, 9):
        loads = [0] * p
        for k, n in zip(keys, counts):
            part = (text_partition("kafka", k, c * p) if isinstance(k, str)
                    else ref.kafka_partition(k, c * p, key_format))
            loads[part // c] += n
        if best is None or max(loads) < best[1]:
            best = (c * p, max(loads))
    assert best is not None
    return best
