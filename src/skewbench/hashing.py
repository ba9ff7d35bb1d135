"""Seeded 64-bit hashing shared by the whole library.

``mix64`` is the splitmix64 finaliser (Steele, Lea, Flood 2014): a bijection on 64-bit integers
with good avalanche.  Everything that hashes (dataset fingerprints, the grouping strategies' hash
families) goes through it, so results never depend on Python's ``hash`` randomisation.
"""

from __future__ import annotations

import numpy as np
from skewbench.jit import njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)


@njit(inline="always", cache=True)
def mix64(x):
    """splitmix64 finaliser of a uint64 (wraps modulo 2**64)."""
    z = x + _GOLDEN
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


def mix64_py(x: int) -> int:
    """Plain-Python reference of :func:`mix64`, for tests."""
    mask = (1 << 64) - 1
    z = (x + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)
