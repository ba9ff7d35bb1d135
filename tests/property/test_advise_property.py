"""``skewbench advise``'s own algorithms against their plain-Python references
(``tests/reference/advise_ref.py``): reading lines, the text keys' engine hashes, worker loads
and the busiest worker's hottest keys, the whole-key floor and LPT (also against the solver's
LPT and an exhaustive optimum), and every suggestion rule against a brute-force search; with
their limiting cases.  The rows against the engines' own replays are in
``tests/integration/test_advise.py``."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skewbench.advise import floor, rules
from skewbench.advise.keys import split_lines
from skewbench.advise.rows import hottest_on, load_fields, worker_loads
from skewbench.errors import SkewbenchError
from skewbench.grouping.strategies import engines
from skewbench.solver import lpt
from tests.reference import advise_ref as ref
from tests.property.reach import Reach

ENGINES = ("kafka", "flink", "spark-hash", "spark-sql")
# text with what UTF-8 and UTF-16 treat differently: 2-, 3- and 4-byte characters (surrogate pairs)
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
keyish = st.text(st.sampled_from("ab,é\t日😀\r x0-"), min_size=0, max_size=6)


# --------------------------------------------------------------------------------------------
# reading

def test_split_lines_equals_the_reference():
    reach = Reach("test_split_lines_equals_the_reference")

    @given(st.lists(st.tuples(keyish, st.sampled_from(["\n", "\r\n", "\n\n", "\r\n\r\n"])), max_size=30),
           st.booleans())
    def examples(parts, final_newline):
        reach.tried()
        text = "".join(k + nl for k, nl in parts)
        if not final_newline:
            text = text.rstrip("\n")
        data = text.encode("utf-8")
        expected = ref.lines(data)
        if not expected:
            with pytest.raises(SkewbenchError, match="^f: no keys$"):
                split_lines("f", data)
            return
        assert split_lines("f", data).to_pylist() == expected
        reach.reached()

    examples()
    reach.check(SPLIT_SHARE)


#: the share of test_split_lines_equals_the_reference's examples with keys to compare (96 of 100 derandomised)
SPLIT_SHARE = 0.5


def test_split_lines_keeps_all_but_one_carriage_return_and_skips_blank_lines():
    assert split_lines("f", b"a\r\r\n\r\n\nb\rc\n  \n\xc3\xa9").to_pylist() == ["a\r", "b\rc", "  ", "é"]


# --------------------------------------------------------------------------------------------
# the engines on text keys

@given(st.lists(texts, min_size=1, max_size=12))
@settings(max_examples=150)
def test_text_hashes_equal_the_reference(strings):
    for e in ENGINES:
        assert engines.engine_text_hashes(e, strings).tolist() == [ref.text_hash(e, s) for s in strings], e


@given(st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=12))
def test_text_hashes_of_decimal_text_equal_the_string_format(values):
    for e in ENGINES:
        assert engines.engine_text_hashes(e, [str(v) for v in values]).tolist() == \
            engines.engine_hashes(e, values, "string").tolist()


@given(st.lists(texts, min_size=1, max_size=10), st.integers(1, 300), st.sampled_from([0, 300, 1024, 32768]))
def test_engine_workers_of_text_keys_equal_the_reference(strings, n, P):
    for e in ENGINES:
        P_e = max(P, n) if (e == "flink" and P) else 0
        got = engines.engine_workers(e, engines.engine_text_hashes(e, strings), n, P_e).tolist()
        assert got == [ref.text_partition(e, s, n, P_e) for s in strings], e


def test_text_hashes_limiting_cases():
    assert engines.engine_text_hashes("kafka", [""]).tolist() == [275646681]  # Kafka's murmur2 of no bytes
    assert engines.engine_text_hashes("spark-hash", ["", "a", "😀"]).tolist() == [0, 97, 0xD83D * 31 + 0xDE00]
    data = np.frombuffer("xyz".encode(), dtype=np.uint8)
    assert engines.engine_text_hashes("kafka", (data, np.array([0, 1, 3]))).tolist() == \
        engines.engine_text_hashes("kafka", ["x", "yz"]).tolist()
    with pytest.raises(SkewbenchError, match="^text offsets must be non-decreasing positions within the data$"):
        engines.engine_text_hashes("kafka", (data, np.array([0, 4])))


# --------------------------------------------------------------------------------------------
# worker loads, the busiest worker and its hottest keys

@st.composite
def routed(draw):
    p = draw(st.integers(1, 9))
    k = draw(st.integers(1, 40))
    workers = draw(st.lists(st.integers(0, p - 1), min_size=k, max_size=k))
    counts = draw(st.lists(st.integers(1, 6), min_size=k, max_size=k))  # small counts: many ties
    return p, workers, counts


@given(routed(), st.integers(1, 5))
def test_loads_busiest_and_hottest_keys_equal_the_reference(case, top):
    p, workers, counts = case
    w, c = np.array(workers), np.array(counts)
    loads = worker_loads(w, c, p)
    assert loads.tolist() == ref.worker_loads(workers, counts, p)
    fields = load_fields(loads, sum(counts))
    b = ref.busiest(loads.tolist())
    assert fields["busiest_worker"] == b and fields["load_max"] == max(loads)
    assert Fraction(fields["busiest_over_mean"]).limit_denominator(10**9) == Fraction(max(loads) * p, sum(counts))
    for worker in range(p):
        assert hottest_on(w, c, worker, top).tolist() == ref.hottest_on(workers, counts, worker, top)


def test_hottest_keys_limiting_cases():
    w, c = np.array([0, 0, 1, 0]), np.array([5, 5, 9, 5])
    assert hottest_on(w, c, 0, 2).tolist() == [0, 1]  # ties: the key seen first
    assert hottest_on(w, c, 2).tolist() == []  # an idle worker
    assert hottest_on(w, c, 0, 10).tolist() == [0, 1, 3]
    assert load_fields(np.array([0, 7, 7]), 14)["busiest_worker"] == 1
    assert load_fields(np.array([3]), 3)["busiest_over_mean"] == 1.0


# --------------------------------------------------------------------------------------------
# the whole-key floor

counts_lists = st.lists(st.one_of(st.integers(1, 5), st.integers(1, 10**6)), min_size=1, max_size=300)


@given(counts_lists, st.integers(1, 40))
@settings(max_examples=200)
def test_lpt_equals_one_key_at_a_time_and_the_solvers_lpt(counts, p):
    got = floor.lpt_loads(np.array(counts), p)
    assert got.tolist() == ref.lpt_loads(counts, p)
    assert got.tolist() == lpt(np.sort(np.array(counts, dtype=np.float64))[::-1], p).astype(np.int64).tolist()


@given(st.lists(st.tuples(st.integers(1, 60), st.integers(1, 120)), min_size=1, max_size=12), st.integers(1, 64))
@settings(max_examples=80)
def test_lpt_with_long_runs_of_equal_counts(runs, p):
    """Runs longer than SMALL_RUN keys of one count are placed at once."""
    counts = [v for v, times in runs for _ in range(times)]
    assert any(times > floor.SMALL_RUN for _, times in runs) or len(counts) <= floor.SMALL_RUN * len(runs)
    assert floor.lpt_loads(np.array(counts), p).tolist() == ref.lpt_loads(counts, p)


@pytest.mark.parametrize("counts,p,loads", [
    ([1] * 17, 3, [6, 6, 5]),  # one run: the levels tie, the lower workers first
    ([5] + [2] * 20, 4, [11, 12, 12, 10]),  # a heavy key first, then twenty keys of 2
    ([7, 7] + [1] * 40, 5, [11, 11, 11, 11, 10]),
])
def test_lpt_runs_cases(counts, p, loads):
    assert floor.lpt_loads(np.array(counts), p).tolist() == loads == ref.lpt_loads(counts, p)


@given(st.lists(st.integers(1, 30), min_size=1, max_size=7), st.integers(1, 3))
def test_floor_and_lpt_bracket_the_exhaustive_optimum(counts, p):
    low = floor.whole_key_floor(np.array(counts), p)
    assert low == ref.whole_key_floor(counts, p)
    assert low <= ref.best_whole_keys(counts, p) <= int(floor.lpt_loads(np.array(counts), p).max())


def test_floor_limiting_cases():
    assert floor.whole_key_floor(np.array([10, 1, 1]), 2) == 10  # the heaviest key
    assert floor.whole_key_floor(np.array([3, 3, 3]), 2) == 6  # two of three keys share a worker
    assert floor.whole_key_floor(np.array([1] * 7), 3) == 3  # the mean, rounded up
    assert floor.lpt_loads(np.array([4]), 5).tolist() == [4, 0, 0, 0, 0]  # fewer keys than workers
    assert floor.lpt_loads(np.array([2] * 6), 3).tolist() == [4, 4, 4]
    row = floor.floor_row(np.array([5, 4, 3, 3, 3]), 2)
    assert (row["load_floor"], row["load_max"], row["basis"]) == (9, 10, "LPT within 10.00% above the floor")
    assert floor.floor_row(np.array([9, 1, 1]), 2)["basis"] == "optimum"


# --------------------------------------------------------------------------------------------
# the rules against brute force

parallelisms = st.one_of(st.integers(1, 300), st.integers(1, 10_000))


@given(parallelisms, st.data())
@settings(max_examples=300)
def test_suggested_max_parallelism_equals_brute_force(p, data):
    current = data.draw(st.one_of(st.just(engines.flink_default_max_parallelism(p)), st.integers(p, 32768)))
    P = rules.suggested_max_parallelism(p, current)
    assert P == ref.suggested_max_parallelism(p, current)
    assert P % p == 0 and p <= P <= 32768
    groups = ref.flink_groups_by_counting(P, p) if P <= 4096 else [P // p]
    assert min(groups) == max(groups) == P // p  # no rounding left


@pytest.mark.parametrize("p,current,expected", [
    (100, 256, 300), (8, 128, 128), (1, 128, 128), (10_000, 16384, 20000), (7000, 16384, 21000),
    (9999, 32768, 29997),  # no multiple of 9999 in [32768, 32768]: the largest below
    (32768, 32768, 32768),
])
def test_suggested_max_parallelism_cases(p, current, expected):
    assert rules.suggested_max_parallelism(p, current) == expected


@given(st.integers(1, 32768), st.integers(1, 10_000))
@settings(max_examples=150)
def test_divisor_parallelism_equals_brute_force(P, p):
    d = rules.divisor_parallelism(P, p)
    assert d == ref.divisor_parallelism(P, p)
    assert P % d == 0 and d <= 10_000


@pytest.mark.parametrize("P,p,d", [(128, 48, 64), (128, 96, 128), (256, 100, 128), (1000, 32, 25), (12, 5, 6),
                                   (32768, 10_000, 8192), (7, 3, 1)])
def test_divisor_parallelism_cases(P, p, d):
    assert rules.divisor_parallelism(P, p) == d == ref.divisor_parallelism(P, p)


@given(st.lists(st.integers(1, 400), min_size=1, max_size=4))
@settings(max_examples=150)
def test_common_max_parallelism_equals_brute_force(ps):
    assert rules.common_max_parallelism(ps) == ref.common_max_parallelism(ps)


def test_common_max_parallelism_cases():
    assert rules.common_max_parallelism([8, 32, 100]) == 800
    assert rules.common_max_parallelism([7, 11, 13, 17]) == 17017
    assert rules.common_max_parallelism([9973, 9967]) is None  # their lcm is beyond 32768


@given(st.integers(1, 2000), st.data())
def test_rounding_is_the_busiest_subtasks_key_groups_over_the_mean(p, data):
    P = data.draw(st.integers(p, 4096))
    owned = ref.flink_groups_by_counting(P, p)
    assert Fraction(rules.rounding(P, p)).limit_denominator(10**7) == Fraction(max(owned) * p, P)


@given(st.lists(st.integers(-2**40, 2**40), min_size=1, max_size=25, unique=True), st.integers(1, 12),
       st.sampled_from(["long", "string"]), st.data())
@settings(max_examples=60)
def test_kafka_partitions_equal_brute_force(values, p, fmt, data):
    counts = data.draw(st.lists(st.integers(1, 50), min_size=len(values), max_size=len(values)))
    got = rules.kafka_partitions(engines.engine_hashes("kafka", values, fmt), np.array(counts), p)
    assert got == ref.kafka_partitions(values, counts, p, fmt)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_kafka_partitions_over_many_keys_sum_per_residue(p):
    """More keys than residues lcm(1..8) p: the sums per residue give the brute force's answer."""
    rng = np.random.default_rng(p)
    values = rng.integers(-2**40, 2**40, 3000).tolist()
    counts = (rng.zipf(1.5, 3000) % 1000 + 1).tolist()
    assert len(values) > 840 * p
    got = rules.kafka_partitions(engines.engine_hashes("kafka", values, "long"), np.array(counts), p)
    assert got == ref.kafka_partitions(values, counts, p, "long")


@given(st.lists(texts, min_size=1, max_size=15, unique=True), st.integers(1, 9), st.data())
@settings(max_examples=40)
def test_kafka_partitions_of_text_keys_equal_brute_force(strings, p, data):
    counts = data.draw(st.lists(st.integers(1, 50), min_size=len(strings), max_size=len(strings)))
    got = rules.kafka_partitions(engines.engine_text_hashes("kafka", strings), np.array(counts), p)
    assert got == ref.kafka_partitions(strings, counts, p)


@given(st.integers(0, 10**6), st.integers(1, 10**6), st.integers(1, 10_000))
def test_hopeless_is_a_share_above_one_over_p(top, extra, p):
    tuples = top + extra
    assert rules.hopeless(top, tuples, p) == (Fraction(top, tuples) > Fraction(1, p))
    assert not rules.hopeless(1, p, p)  # exactly 1/p: the floor is the mean
