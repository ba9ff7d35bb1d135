"""The best balance a grouping strategy's constraint allows, computed offline on the same stream.

For every cell the engine reports ``load_max_best``: the least possible largest worker load (as
a fraction of the tuples) over all assignments that obey the strategy's constraint, given the
stream's key counts and the cell's own hash choices, and ``balance_optimality = load_max_best /
load_max`` (1: the strategy is as balanced as its choices allow).  ``best_basis`` says which
constraint and whether the number is an optimum or a bound:

The constraint is the strategy class's :attr:`~skewbench.grouping.base.Strategy.relaxation`:

* **whole keys** (``"whole"``: KG, the engines' hash partitioners): every key on one worker, any worker.  The exact optimum of P||Cmax when
  the closed-form bounds meet or the MILP (HiGHS, :func:`skewbench.solver.best_whole_keys`, a
  fixed node budget so the result does not depend on timing) proves it; otherwise its lower
  bound, with how far LPT's schedule is above it (the ratio is then an upper bound on the true
  one).  When the closed-form bound is within 0.1% of LPT no MILP runs.
* **split over own choices** (``"two"``: PKG, and the tail of D-Choices, W-Choices, RR, fixed-d): each key's
  tuples split freely over its candidate workers F_1(k), F_2(k) under the cell's hash seeds; a
  key the strategy actually sent outside its two choices (a head key) may go to any worker.  The
  exact LP / subset optimum of :func:`skewbench.solver.best_split`: a fractional split, so a
  lower bound on the best integral one (by less than one tuple per worker).
* **any split** (``"any"``, the default: SG, OSG, FK, ...): every tuple anywhere; the best is m/n.

The relaxation contains the strategy's own routing, so ``load_max_best <= load_max`` always
holds; a "whole" strategy that sent some key to several workers (a per-source mapping that
differs between sources) is measured against any split instead.
"""

from __future__ import annotations

import numpy as np
from skewbench.jit import njit

from skewbench.grouping.base import hash_choice, hash_seeds

#: the whole-key MILP: branch-and-bound nodes (a deterministic budget), the largest model (distinct
#: key loads x workers; beyond it the heaviest keys only, a valid lower bound), and the relative gap
#: between the closed-form lower bound and LPT below which no MILP runs
NODE_LIMIT = 200
MAX_VARS = 2000
GAP_TOL = 1e-3


@njit(cache=True)
def _choices(keys, s1, s2, n, out):
    for i in range(keys.shape[0]):
        out[i, 0] = hash_choice(keys[i], s1, n)
        out[i, 1] = hash_choice(keys[i], s2, n)


def _within_two(bits: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """True where a key's observed workers (bit rows) lie within its two candidates."""
    allowed = np.zeros_like(bits)
    rows = np.arange(bits.shape[0])
    for j in range(2):
        w = cand[:, j]
        np.bitwise_or.at(allowed, (rows, w >> 6), np.left_shift(np.uint64(1), (w & 63).astype(np.uint64)))
    return ~np.any(bits & ~allowed, axis=1)


def _split_any(bits: np.ndarray) -> bool:
    """True when some key's bit row has more than one worker."""
    single = np.zeros(len(bits), dtype=bool)
    for word in range(bits.shape[1]):
        row = bits[:, word]
        nz = row != 0
        one = nz & ((row & (row - np.uint64(1))) == 0)
        if np.any(nz & ~one) or np.any(nz & single):
            return True
        single |= nz
    return False


def best_max_load(strategy: str, key_counts: np.ndarray, bits: np.ndarray, n: int, seed: int
                  ) -> tuple[float, str]:
    """``(load_max_best as a fraction of the tuples, basis)`` for one cell (module docstring).

    ``key_counts`` are the stream's tuples per key, ``bits`` each key's set of workers as routed
    (one bit per worker, 64 per word), ``seed`` the cell's hash seed."""
    from skewbench import registry
    from skewbench.solver import best_split, best_whole_keys

    relaxation = registry.get("grouping", strategy).relaxation
    if relaxation not in ("whole", "two", "any"):
        raise ValueError(f"strategy {strategy}: relaxation must be whole, two or any, got {relaxation!r}")
    counts = np.asarray(key_counts, dtype=np.int64)
    m = int(counts.sum())
    if m == 0:
        return 0.0, "empty stream"
    seen = np.flatnonzero(counts > 0)
    if relaxation == "whole" and _split_any(np.asarray(bits)[seen]):
        relaxation = "any"
    if relaxation == "any" or n == 1:
        return 1.0 / n, "any split over all workers: m/n"
    w = counts[seen].astype(np.float64)
    if relaxation == "whole":
        b = best_whole_keys(w, n, time_limit=120.0, max_vars=MAX_VARS, node_limit=NODE_LIMIT, gap_tol=GAP_TOL)
        if b.status == "optimal":
            return float(b.value) / m, "whole keys: optimum"
        return float(b.value) / m, f"whole keys: lower bound (LPT within {(b.upper - b.lower) / b.upper:.2%})"
    s = hash_seeds(seed, 2)
    cand = np.empty((seen.size, 2), dtype=np.int64)
    _choices(seen.astype(np.int64), s[0], s[1], np.int64(n), cand)
    inside = _within_two(np.asarray(bits)[seen], cand)
    spread = int(np.count_nonzero(~inside))
    # keys with the same pair of choices merge exactly (each splits freely over the same workers),
    # and so do the keys that may go anywhere: a few thousand rows at most
    pairs, inv = np.unique(np.sort(cand[inside], axis=1), axis=0, return_inverse=True)
    pw = np.bincount(inv.ravel(), weights=w[inside], minlength=len(pairs))
    if spread:
        width = max(2, n)
        rows = np.repeat(pairs, [width // 2, width - width // 2], axis=1)
        cand = np.vstack([rows, np.arange(n, dtype=np.int64)[None, :width]])
        w = np.append(pw, w[~inside].sum())
    else:
        cand, w = pairs, pw
    best = best_split(w, cand, n)
    basis = "split over own 2 choices: LP optimum"
    if spread:
        basis += f" ({spread} head keys over any worker)"
    return float(best) / m, basis
