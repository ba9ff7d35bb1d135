"""Known-answer vectors for the project's hash functions, independent of the implementation.

Every hash in the library goes through ``skewbench.hashing.mix64`` (the splitmix64 output function)
and the grouping family's seeded family F_1..F_n (``skewbench.grouping.base.hash_seeds`` and
``hash_choice``).  A change to any of them silently changes every routing, every dataset
fingerprint and every logged result, and the plain-Python ``*_py`` versions could drift with the
kernels unnoticed; so each is pinned here by literal integers that do not come from skewbench:

- ``SPLITMIX64_1477776061723855037``: the first five outputs of splitmix64 seeded with
  1477776061723855037, as published in the ``reference`` test of rand_xoshiro's splitmix64.rs
  (rust-random/rngs), whose values were produced with Vigna's splitmix64.c.  The generator adds
  0x9E3779B97F4A7C15 to its state and returns the state's finalised value, so its k-th output is
  ``mix64(seed + (k - 1) * 0x9E3779B97F4A7C15 mod 2^64)``.
- every other literal was computed for this file by a C program written from the definitions
  (uint64_t arithmetic, which wraps modulo 2^64 as the definitions ask; gcc, -O0)::

      uint64_t mix(uint64_t x) { uint64_t z = x + 0x9E3779B97F4A7C15ULL;
          z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL; z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
          return z ^ (z >> 31); }
      uint64_t seed_i(uint64_t seed, uint64_t i) { return mix(mix(seed) + 0x632BE59BD9B4E019ULL * i); }
      uint64_t choice(uint64_t key, uint64_t s, uint64_t n) { return ((mix(key ^ s) >> 32) * n) >> 32; }

  (the same program printed the five published splitmix64 outputs above, and ``mix(0)`` is
  0xE220A8397B1DCDAF, splitmix64's well-known first output from the seed 0).

The plain-Python hash of tests/reference/dchoices_ref.py, written from the same definitions, is
pinned to the same answers, so the reference and the implementation cannot share a wrong hash.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from skewbench.grouping.base import Batch, hash_choice, hash_choice_py, hash_seeds
from skewbench.grouping.strategies.dchoices import KG
from skewbench.hashing import mix64, mix64_py
from tests.reference import dchoices_ref as ref

PHI = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1
SPLITMIX64_SEED = 1477776061723855037
SPLITMIX64_1477776061723855037 = [1985237415132408290, 2979275885539914483, 13511426838097143398,
                                  8488337342461049707, 15141737807933549159]

MIX64 = {  # x -> mix64(x), from the C program
    0: 16294208416658607535,  # 0xE220A8397B1DCDAF
    1: 10451216379200822465,
    2: 10905525725756348110,
    42: 13679457532755275413,
    2**63: 5196802822362493915,
    2**64 - 1: 16490336266968443936,
}

HASH_SEEDS = {  # seed -> (seed_1, seed_2, seed_3), from the C program; -1 is 2^64 - 1 there
    0: [14228822900027221235, 16293952122373210328, 6552901548179249039],
    1: [16770649637359676443, 7339617480477319475, 15384824692806140521],
    7: [17124481894498452251, 17785252024808182916, 12095068734070745223],
    -1: [16593162106161111200, 17684434254958579980, 11466222164394148186],
}

KEYS = [0, 1, 12345, -1, 2**63 - 1]  # -1 as an int64 key: its bits, 2^64 - 1, in the C program
NS = [1, 2, 10, 100, 2**32 - 1]
CHOICE_SEED0_F1 = {  # n -> F_1(key) for KEYS under the cell seed 0, from the C program
    1: [0, 0, 0, 0, 0],
    2: [1, 1, 1, 1, 1],
    10: [8, 8, 6, 6, 5],
    100: [84, 84, 67, 65, 53],
    2**32 - 1: [3612850271, 3631285404, 2903344111, 2806618806, 2300028114],
}
CHOICE_SEED7_F2_N10 = [6, 9, 9, 6, 4]  # F_2(key) for KEYS under the cell seed 7, n = 10


def test_mix64_is_splitmix64_published_outputs():
    for k, want in enumerate(SPLITMIX64_1477776061723855037):
        x = (SPLITMIX64_SEED + k * PHI) & MASK
        assert mix64_py(x) == want, k
        assert int(mix64(np.uint64(x))) == want, k
        assert ref.mix64(x) == want, k


def test_mix64_known_answers():
    for x, want in MIX64.items():
        assert mix64_py(x) == want, x
        assert int(mix64(np.uint64(x))) == want, x
        assert ref.mix64(x) == want, x


def test_hash_seeds_known_answers():
    for seed, want in HASH_SEEDS.items():
        got = hash_seeds(seed, 3)
        assert got.dtype == np.uint64 and [int(v) for v in got] == want, seed
        assert ref.hash_seeds(seed, 3) == want, seed
        # F_1..F_i do not depend on how many functions are drawn
        assert [int(v) for v in hash_seeds(seed, 1)] == want[:1]
    assert hash_seeds(0, 0).size == 0 and ref.hash_seeds(0, 0) == []


def test_hash_choice_known_answers():
    s1 = HASH_SEEDS[0][0]
    for n, want in CHOICE_SEED0_F1.items():
        assert [hash_choice_py(k, s1, n) for k in KEYS] == want, n
        assert [int(hash_choice(np.int64(k), np.uint64(s1), np.int64(n))) for k in KEYS] == want, n
        assert [ref.hash_choice(k, s1, n) for k in KEYS] == want, n
    s2 = HASH_SEEDS[7][1]
    assert [hash_choice_py(k, s2, 10) for k in KEYS] == CHOICE_SEED7_F2_N10
    assert [int(hash_choice(np.int64(k), np.uint64(s2), np.int64(10))) for k in KEYS] == CHOICE_SEED7_F2_N10
    assert [ref.hash_choice(k, s2, 10) for k in KEYS] == CHOICE_SEED7_F2_N10


def test_key_grouping_routes_by_the_known_f1():
    """The hash as compiled into a routing kernel (KG sends every key to F_1(key), spec 2.1)."""
    keys = np.array(KEYS, dtype=np.int64)
    b = Batch(np.arange(keys.size, dtype=np.int64), keys, np.zeros(keys.size), np.ones(keys.size))
    for n in (10, 100):
        assert KG(n, 1, 0).route(b).tolist() == CHOICE_SEED0_F1[n], n


@settings(max_examples=200)
@given(st.integers(-2**63, 2**63 - 1), st.integers(0, 2**64 - 1), st.integers(1, 2**32 - 1),
       st.integers(0, 2**40))
def test_the_reference_hash_agrees_with_the_implementation(key, seed_i, n, seed):
    """Beyond the vectors: the reference's hash and the implementation's on arbitrary inputs (both
    pinned above, so agreement here is not one copy checked against itself)."""
    assert ref.mix64(seed_i) == mix64_py(seed_i)
    assert ref.hash_choice(key, seed_i, n) == hash_choice_py(key, seed_i, n)
    assert 0 <= ref.hash_choice(key, seed_i, n) < n
    assert ref.hash_seeds(seed, 2) == [int(v) for v in hash_seeds(seed, 2)]
